//! What a transpose caller chooses ([`TransposeAlgorithm`],
//! [`TransposeOptions`]) and the host-side checks on shapes and element
//! sizes, as pure functions.

use gpu_core::{Error, Result};

use super::policy::TransposePolicy;

/// How to transpose. See the module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TransposeAlgorithm {
    /// One thread per element; coalesced reads, strided writes.
    Naive,
    /// 32 × 32 shared tile without padding: coalesced both ways, but the
    /// column read from shared memory is a 32-way bank conflict (kept to
    /// show it).
    Tiled,
    /// 32 × 33 shared tile (the lab's gpu-sm): no bank conflicts for 4- and
    /// 8-byte elements (at most 2-way for bytes).
    TiledPadded,
    /// 64 × 8 threads per padded 64 × 64 tile, eight rows per thread,
    /// 16-byte vectors for 1- and 2-byte elements, and a tall 128 × 64 tile
    /// for large 2- and 4-byte matrices whose rows are not whole 256-byte
    /// blocks; branch-free interior tiles; shaped by a [`TransposePolicy`].
    #[default]
    Tuned,
}

impl TransposeAlgorithm {
    /// Every algorithm, slowest first.
    pub const ALL: [TransposeAlgorithm; 4] = [
        TransposeAlgorithm::Naive,
        TransposeAlgorithm::Tiled,
        TransposeAlgorithm::TiledPadded,
        TransposeAlgorithm::Tuned,
    ];

    /// A short name for tables and CSV rows.
    ///
    /// ```
    /// use linalg::TransposeAlgorithm;
    /// assert_eq!(TransposeAlgorithm::TiledPadded.name(), "tiled-padded");
    /// assert_eq!(TransposeAlgorithm::default().to_string(), "tuned");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            TransposeAlgorithm::Naive => "naive",
            TransposeAlgorithm::Tiled => "tiled",
            TransposeAlgorithm::TiledPadded => "tiled-padded",
            TransposeAlgorithm::Tuned => "tuned",
        }
    }
}

impl std::fmt::Display for TransposeAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of [`crate::transpose_with`]: an algorithm and, for
/// [`TransposeAlgorithm::Tuned`], optionally a policy (else the device's
/// default, [`TransposePolicy::for_device`]). A policy given with another
/// algorithm is refused, not ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TransposeOptions {
    /// Which kernel.
    pub algorithm: TransposeAlgorithm,
    /// The Tuned kernel's shape; `None`: the device's default.
    pub policy: Option<TransposePolicy>,
}

impl TransposeOptions {
    /// `algorithm` with the device's default policy.
    ///
    /// ```
    /// use linalg::{TransposeAlgorithm, TransposeOptions};
    /// let options = TransposeOptions::new(TransposeAlgorithm::Naive);
    /// assert_eq!(options.policy, None);
    /// assert!(options.validate().is_ok());
    /// ```
    pub fn new(algorithm: TransposeAlgorithm) -> Self {
        TransposeOptions {
            algorithm,
            policy: None,
        }
    }

    /// [`TransposeAlgorithm::Tuned`] with `policy`.
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// use linalg::{TransposeAlgorithm, TransposeOptions};
    /// let options = TransposeOptions::tuned(TransposePolicy::new(32, 4)?);
    /// assert_eq!(options.algorithm, TransposeAlgorithm::Tuned);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn tuned(policy: TransposePolicy) -> Self {
        TransposeOptions {
            algorithm: TransposeAlgorithm::Tuned,
            policy: Some(policy),
        }
    }

    /// Checks the policy, if one is given: only Tuned takes one, and it
    /// must be one the compiled kernels run ([`TransposePolicy::validate`]).
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// use linalg::{TransposeAlgorithm, TransposeOptions};
    /// assert!(TransposeOptions::tuned(TransposePolicy::DEFAULT).validate().is_ok());
    /// let tiled = TransposeOptions { policy: Some(TransposePolicy::DEFAULT), ..TransposeOptions::new(TransposeAlgorithm::Tiled) };
    /// assert!(tiled.validate().is_err()); // only Tuned takes a policy
    /// ```
    pub fn validate(&self) -> Result<()> {
        match (self.algorithm, self.policy) {
            (_, None) => Ok(()),
            (TransposeAlgorithm::Tuned, Some(policy)) => policy.validate(),
            (other, Some(_)) => Err(Error::invalid(
                "policy",
                format!("{other} has no policy: only Tuned takes a TransposePolicy"),
            )),
        }
    }
}

/// Global-memory bytes a transpose moves: every element read once and
/// written once, `2·rows·cols·elem_bytes`.
///
/// ```
/// // Every element read once and written once: 2 · 1000 · 500 · 8 bytes for f64.
/// assert_eq!(linalg::transpose_bytes_moved(1000, 500, 8), 8_000_000);
/// ```
pub fn transpose_bytes_moved(rows: usize, cols: usize, elem_bytes: usize) -> u64 {
    2 * rows as u64 * cols as u64 * elem_bytes as u64
}

/// Checks that `output_shape` is `input_shape` transposed, and that the
/// element size has a kernel (1, 2, 4 or 8 bytes). Pure, for CI.
///
/// ```
/// use linalg::check_transpose_shapes;
/// assert!(check_transpose_shapes((2, 3), (3, 2), 4).is_ok());
/// assert!(check_transpose_shapes((2, 3), (2, 3), 4).is_err()); // not transposed
/// assert!(check_transpose_shapes((2, 3), (3, 2), 3).is_err()); // no kernel for 3-byte elements
/// ```
pub fn check_transpose_shapes(
    input_shape: (usize, usize),
    output_shape: (usize, usize),
    elem_bytes: usize,
) -> Result<()> {
    let (rows, cols) = input_shape;
    if rows == 0 || cols == 0 {
        return Err(Error::Shape(format!(
            "transpose: input {rows}×{cols} has a zero dimension"
        )));
    }
    if output_shape != (cols, rows) {
        return Err(Error::Shape(format!(
            "transpose: a {rows}×{cols} input needs a {cols}×{rows} output, got {}×{}",
            output_shape.0, output_shape.1
        )));
    }
    storage_name(elem_bytes).map(|_| ())
}

/// The CUDA type the kernels copy for elements of `elem_bytes` bytes.
pub(crate) fn storage_name(elem_bytes: usize) -> Result<&'static str> {
    match elem_bytes {
        1 => Ok("u8"),
        2 => Ok("u16"),
        4 => Ok("u32"),
        8 => Ok("u64"),
        other => Err(Error::Unsupported(format!(
            "transpose of {other}-byte elements (kernels exist for 1, 2, 4 and 8 bytes)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_must_be_transposed() {
        assert!(check_transpose_shapes((3, 5), (5, 3), 4).is_ok());
        assert!(check_transpose_shapes((1, 1), (1, 1), 8).is_ok());
        assert!(check_transpose_shapes((1, 7), (7, 1), 1).is_ok());
        assert!(matches!(
            check_transpose_shapes((3, 5), (3, 5), 4),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            check_transpose_shapes((0, 5), (5, 0), 4),
            Err(Error::Shape(_))
        ));
        assert!(check_transpose_shapes((3, 5), (5, 3), 2).is_ok());
        for bytes in [3, 16] {
            assert!(matches!(
                check_transpose_shapes((3, 5), (5, 3), bytes),
                Err(Error::Unsupported(_))
            ));
        }
    }

    #[test]
    fn bytes_and_names() {
        assert_eq!(transpose_bytes_moved(16384, 16384, 4), 8 * 16384 * 16384);
        assert_eq!(TransposeAlgorithm::default(), TransposeAlgorithm::Tuned);
        let names: Vec<_> = TransposeAlgorithm::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["naive", "tiled", "tiled-padded", "tuned"]);
    }

    #[test]
    fn a_policy_is_used_or_refused() {
        assert!(TransposeOptions::default().validate().is_ok());
        assert!(TransposeOptions::tuned(TransposePolicy::DEFAULT)
            .validate()
            .is_ok());
        for algorithm in [
            TransposeAlgorithm::Naive,
            TransposeAlgorithm::Tiled,
            TransposeAlgorithm::TiledPadded,
        ] {
            assert!(TransposeOptions::new(algorithm).validate().is_ok());
            let given = TransposeOptions {
                algorithm,
                policy: Some(TransposePolicy::DEFAULT),
            };
            assert!(matches!(
                given.validate(),
                Err(Error::InvalidArgument { name: "policy", .. })
            ));
        }
        let bad = TransposeOptions::tuned(TransposePolicy {
            block_rows: 2,
            ..TransposePolicy::DEFAULT
        });
        assert!(matches!(
            bad.validate(),
            Err(Error::InvalidArgument { name: "tuning", .. })
        ));
    }
}
