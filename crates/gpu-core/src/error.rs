//! The workspace's one error type.

use cudarc::driver::DriverError;
use cudarc::nvrtc::result::NvrtcError;

/// Everything a parprims operation can fail with.
///
/// Bad arguments are reported as [`Error::InvalidArgument`],
/// [`Error::LengthMismatch`] or [`Error::Shape`] *before* anything touches the
/// device, so an operation that returns one of them has written nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library could not be loaded.
    #[error(
        "no CUDA driver: could not load libcuda (libcuda.so.1 on Linux, nvcuda.dll on Windows). \
         Install the NVIDIA driver, or add the directory that holds libcuda.so.1 to LD_LIBRARY_PATH"
    )]
    NoDriver,
    /// NVRTC (the run-time CUDA compiler) could not be loaded.
    #[error(
        "no NVRTC: could not load libnvrtc (libnvrtc.so.13 / libnvrtc.so). Install the CUDA toolkit, \
         or `pip install nvidia-cuda-nvrtc` and add its lib directory (site-packages/nvidia/cu13/lib) \
         to LD_LIBRARY_PATH"
    )]
    NoNvrtc,
    /// A kernel module is not in the disk cache and NVRTC is not available
    /// to compile it.
    #[error(
        "kernel module `{module}` for {arch} is not in the kernel cache ({cache}: {reason}), and \
         NVRTC, which would compile it, could not be loaded. Fill a cache on any machine with \
         NVRTC (no GPU needed): `parprims warm-cache --arch {arch} --out DIR`, ship DIR, and run \
         with PARPRIMS_CACHE_DIR=DIR; or install NVRTC (the CUDA toolkit, or \
         `pip install nvidia-cuda-nvrtc` with its lib directory on LD_LIBRARY_PATH)"
    )]
    KernelNotCached {
        /// The module's name.
        module: String,
        /// The device's architecture (`sm_90`).
        arch: String,
        /// The cache directory searched (or why there is none).
        cache: String,
        /// Why the cache could not serve it (no entry, a corrupt entry, a
        /// cubin the driver refused).
        reason: String,
    },
    /// The driver loaded but there is no device with this ordinal.
    #[error("no CUDA device with ordinal {ordinal}: this machine has {count} device(s)")]
    BadOrdinal {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// A device allocation failed for lack of memory. The context stays usable.
    #[error("out of device memory: asked for {bytes} bytes, {free} of {total} bytes free")]
    OutOfMemory {
        /// Bytes the failed allocation asked for.
        bytes: usize,
        /// Free device memory when it failed, as the driver reported it.
        free: usize,
        /// Total device memory.
        total: usize,
    },
    /// Any other CUDA driver error.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// NVRTC rejected a kernel module; the log says why.
    #[error(
        "NVRTC could not compile kernel module `{module}` for {arch}\noptions: {}\n--- NVRTC log ---\n{log}",
        options.join(" ")
    )]
    Compile {
        /// The module's name (family, element type, operator).
        module: String,
        /// The target architecture (`sm_90`).
        arch: String,
        /// The options NVRTC was called with.
        options: Vec<String>,
        /// NVRTC's program log.
        log: String,
    },
    /// Any other NVRTC error.
    #[error("NVRTC error: {0}")]
    Nvrtc(#[from] NvrtcError),
    /// A compiled module does not contain the entry point asked for.
    #[error("kernel entry `{entry}` is not in module `{module}`")]
    MissingEntry {
        /// The module searched.
        module: String,
        /// The entry point that was not there.
        entry: String,
    },
    /// Two lengths that must agree do not.
    #[error("length mismatch for {what}: expected {expected}, got {actual}")]
    LengthMismatch {
        /// Which argument.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        actual: usize,
    },
    /// An argument is outside what the operation accepts.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// Matrix or image shapes that do not fit together.
    #[error("shape error: {0}")]
    Shape(String),
    /// A sub-range outside the buffer.
    #[error("range {start}..{end} is out of bounds for a buffer of {len} elements")]
    OutOfBounds {
        /// Range start.
        start: usize,
        /// Range end (exclusive).
        end: usize,
        /// Buffer length.
        len: usize,
    },
    /// The operation needs something this device or build does not have.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Reading or writing a results file.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// `Result` with the workspace's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    ///
    /// ```
    /// use gpu_core::Error;
    /// let e = Error::invalid("tile", "must be 1 to 1024");
    /// assert!(matches!(e, Error::InvalidArgument { name: "tile", .. }));
    /// ```
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// Checks `actual == expected`, else [`Error::LengthMismatch`].
    ///
    /// ```
    /// use gpu_core::Error;
    /// assert!(Error::check_len("output", 10, 10).is_ok());
    /// assert!(matches!(
    ///     Error::check_len("output", 10, 9),
    ///     Err(Error::LengthMismatch { what: "output", expected: 10, actual: 9 })
    /// ));
    /// ```
    pub fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
        if expected == actual {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                what,
                expected,
                actual,
            })
        }
    }

    /// True for [`Error::OutOfMemory`] and for a raw driver out-of-memory code.
    ///
    /// ```
    /// use gpu_core::Error;
    /// assert!(Error::OutOfMemory { bytes: 1 << 40, free: 1 << 30, total: 80 << 30 }.is_out_of_memory());
    /// assert!(!Error::invalid("n", "too large").is_out_of_memory());
    /// ```
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Error::OutOfMemory { .. } => true,
            Error::Driver(e) => {
                e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY
            }
            _ => false,
        }
    }
}
