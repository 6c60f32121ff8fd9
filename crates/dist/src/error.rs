//! The crate's error: every `gpu_core::Error`, plus NCCL's own failures.

/// Everything a distributed operation can fail with.
///
/// Bad arguments (shard counts or lengths that disagree with the group, an
/// unsupported element type) are reported as [`Error::Gpu`] with
/// [`gpu_core::Error::InvalidArgument`], [`gpu_core::Error::LengthMismatch`]
/// or [`gpu_core::Error::Unsupported`] *before* anything is enqueued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA, NVRTC or argument error from the single-GPU layer.
    #[error(transparent)]
    Gpu(#[from] gpu_core::Error),
    /// libnccl could not be loaded.
    #[error(
        "no NCCL: could not load libnccl under the names cudarc looks for (libnccl.so, \
         libnccl.so.13, .12, .11, .10, .9, .1). The `libnccl-dev` package provides libnccl.so; \
         a pip-installed NCCL (`nvidia-nccl-cu12`/`-cu13`, also what PyTorch uses) ships only \
         libnccl.so.2: link libnccl.so to it in a directory on LD_LIBRARY_PATH \
         (`ln -s $NCCL_LIB/libnccl.so.2 $DIR/libnccl.so`)"
    )]
    NoNccl,
    /// An NCCL call returned an error code.
    #[error("NCCL error in {call}: {code}")]
    Nccl {
        /// The NCCL function that failed (`ncclAllReduce`).
        call: &'static str,
        /// NCCL's result code (`ncclInvalidUsage`, `ncclSystemError`, ...).
        code: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for an invalid argument ([`gpu_core::Error::InvalidArgument`]).
    ///
    /// ```
    /// let e = dist::Error::invalid("devices", "empty");
    /// assert!(matches!(e, dist::Error::Gpu(gpu_core::Error::InvalidArgument { name: "devices", .. })));
    /// ```
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::Gpu(gpu_core::Error::invalid(name, reason))
    }

    /// Checks `actual == expected`, else a [`gpu_core::Error::LengthMismatch`].
    ///
    /// ```
    /// assert!(dist::Error::check_len("shards", 2, 2).is_ok());
    /// assert!(dist::Error::check_len("shards", 2, 3).is_err());
    /// ```
    pub fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
        Ok(gpu_core::Error::check_len(what, expected, actual)?)
    }
}
