//! What a matvec caller chooses ([`MatvecAlgorithm`], [`Transpose`],
//! [`MatvecOptions`], the element type) and the host-side checks on
//! lengths and options, as pure functions.

use gpu_core::launch::MAX_BLOCK_THREADS;
use gpu_core::{DeviceView, DeviceViewMut, Element, Error, Result};

use super::policy::MatvecPolicy;
use crate::matrix::MatrixView;

/// Element types matvec supports: `f16` and `bf16` (products and sums in
/// `f32`, each output rounded once), `f32`, `f64`, and `i32` (wrapping).
/// Sums run in [`Element::Acc`]; tolerances use [`Element::EPSILON`].
pub trait MatvecElement: Element + crate::sealed::Arithmetic {}
impl MatvecElement for gpu_core::f16 {}
impl MatvecElement for gpu_core::bf16 {}
impl MatvecElement for f32 {}
impl MatvecElement for f64 {}
impl MatvecElement for i32 {}

/// Which product: `y = A·x` or `y = Aᵀ·x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transpose {
    /// `y = A·x`: x has `cols` elements, y has `rows`.
    #[default]
    No,
    /// `y = Aᵀ·x`: x has `rows` elements, y has `cols`.
    Yes,
}

impl Transpose {
    /// Length of x for a `rows × cols` matrix.
    ///
    /// ```
    /// use linalg::Transpose;
    /// assert_eq!(Transpose::No.input_len(2, 3), 3); // A·x: x has cols elements
    /// assert_eq!(Transpose::Yes.input_len(2, 3), 2);
    /// ```
    pub fn input_len(self, rows: usize, cols: usize) -> usize {
        match self {
            Transpose::No => cols,
            Transpose::Yes => rows,
        }
    }
    /// Length of y for a `rows × cols` matrix.
    ///
    /// ```
    /// use linalg::Transpose;
    /// assert_eq!(Transpose::No.output_len(2, 3), 2); // A·x: y has rows elements
    /// assert_eq!(Transpose::Yes.output_len(2, 3), 3);
    /// ```
    pub fn output_len(self, rows: usize, cols: usize) -> usize {
        match self {
            Transpose::No => rows,
            Transpose::Yes => cols,
        }
    }
    /// Index of y that element `(r, c)` of A contributes to.
    ///
    /// ```
    /// use linalg::Transpose;
    /// assert_eq!(Transpose::No.output_index(1, 2), 1); // A[1][2] adds to y[1]
    /// assert_eq!(Transpose::Yes.output_index(1, 2), 2);
    /// ```
    pub fn output_index(self, r: usize, c: usize) -> usize {
        match self {
            Transpose::No => r,
            Transpose::Yes => c,
        }
    }
    /// Index of x that element `(r, c)` of A is multiplied by.
    ///
    /// ```
    /// use linalg::Transpose;
    /// assert_eq!(Transpose::No.reduce_index(1, 2), 2); // A[1][2] · x[2]
    /// assert_eq!(Transpose::Yes.reduce_index(1, 2), 1);
    /// ```
    pub fn reduce_index(self, r: usize, c: usize) -> usize {
        match self {
            Transpose::No => c,
            Transpose::Yes => r,
        }
    }
    /// `"Ax"` or `"ATx"`, for tables.
    ///
    /// ```
    /// use linalg::Transpose;
    /// assert_eq!((Transpose::No.name(), Transpose::Yes.name()), ("Ax", "ATx"));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Transpose::No => "Ax",
            Transpose::Yes => "ATx",
        }
    }
}

/// How to compute the product. See the module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MatvecAlgorithm {
    /// One thread per output element, A and x straight from global memory
    /// (the lab's gpu-gm). A·x reads A uncoalesced.
    Global,
    /// One thread per output element, x staged through shared memory
    /// `tile` elements at a time by a block of `tile` threads (the lab's
    /// gpu-sm). `tile` is 1 to 1024.
    SharedTiled {
        /// Threads per block = x elements per shared tile.
        tile: u32,
    },
    /// The fast kernels: A·x by a power-of-two group of threads per row
    /// with 16-byte loads and a shuffle reduction; Aᵀ·x column-blocked
    /// with partial sums per row slab and a deterministic second pass.
    #[default]
    Tuned,
}

impl MatvecAlgorithm {
    /// The lab's shared-memory tile width (one block of 256 threads).
    pub const DEFAULT_TILE: u32 = 256;

    /// Every algorithm, with the default tile for `SharedTiled`.
    ///
    /// ```
    /// use linalg::MatvecAlgorithm;
    /// let all = MatvecAlgorithm::all();
    /// assert_eq!(all[1], MatvecAlgorithm::SharedTiled { tile: MatvecAlgorithm::DEFAULT_TILE });
    /// assert!(all.iter().all(|a| a.validate().is_ok()));
    /// ```
    pub fn all() -> [MatvecAlgorithm; 3] {
        [
            MatvecAlgorithm::Global,
            MatvecAlgorithm::SharedTiled {
                tile: Self::DEFAULT_TILE,
            },
            MatvecAlgorithm::Tuned,
        ]
    }

    /// A short name for tables and CSV rows (`global`, `shared-tiled-256`,
    /// `tuned`).
    ///
    /// ```
    /// use linalg::MatvecAlgorithm;
    /// assert_eq!(MatvecAlgorithm::SharedTiled { tile: 128 }.name(), "shared-tiled-128");
    /// assert_eq!(MatvecAlgorithm::Tuned.to_string(), "tuned");
    /// ```
    pub fn name(self) -> String {
        match self {
            MatvecAlgorithm::Global => "global".to_owned(),
            MatvecAlgorithm::SharedTiled { tile } => format!("shared-tiled-{tile}"),
            MatvecAlgorithm::Tuned => "tuned".to_owned(),
        }
    }

    /// Checks the algorithm's parameters (the tile width).
    ///
    /// ```
    /// use linalg::MatvecAlgorithm;
    /// assert!(MatvecAlgorithm::SharedTiled { tile: 1024 }.validate().is_ok());
    /// assert!(MatvecAlgorithm::SharedTiled { tile: 0 }.validate().is_err());
    /// ```
    pub fn validate(self) -> Result<()> {
        match self {
            MatvecAlgorithm::SharedTiled { tile } if tile == 0 || tile > MAX_BLOCK_THREADS => {
                Err(Error::invalid(
                    "tile",
                    format!("{tile}: the shared tile width must be 1 to {MAX_BLOCK_THREADS}"),
                ))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for MatvecAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Global-memory bytes every matvec algorithm must move: A once, x once, y
/// once: `(rows·cols + rows + cols)·elem_bytes`. The GB/s of the benchmark
/// are computed from this figure (extra traffic an algorithm makes, such as
/// Tuned Aᵀ·x's slab partials, is not counted).
///
/// ```
/// // f32, 1000 × 500: A once (500,000 elements), x (500) and y (1000) once.
/// assert_eq!(linalg::matvec_bytes_moved(1000, 500, 4), 4 * (500_000 + 1000 + 500));
/// ```
pub fn matvec_bytes_moved(rows: usize, cols: usize, elem_bytes: usize) -> u64 {
    (rows as u64 * cols as u64 + rows as u64 + cols as u64) * elem_bytes as u64
}

/// Checks the vector lengths against the matrix shape (pure; the shape
/// itself was checked when the matrix view was made).
///
/// ```
/// use linalg::{check_matvec_lengths, Transpose};
/// assert!(check_matvec_lengths(2, 3, 3, 2, Transpose::No).is_ok());
/// assert!(check_matvec_lengths(2, 3, 2, 3, Transpose::Yes).is_ok());
/// assert!(check_matvec_lengths(2, 3, 2, 3, Transpose::No).is_err());
/// assert!(check_matvec_lengths(0, 3, 3, 0, Transpose::No).is_err()); // zero dimension
/// ```
pub fn check_matvec_lengths(
    rows: usize,
    cols: usize,
    x_len: usize,
    y_len: usize,
    op: Transpose,
) -> Result<()> {
    if rows == 0 || cols == 0 {
        return Err(Error::Shape(format!(
            "matvec: {rows}×{cols} has a zero dimension"
        )));
    }
    Error::check_len("x (matvec input vector)", op.input_len(rows, cols), x_len)?;
    Error::check_len("y (matvec output vector)", op.output_len(rows, cols), y_len)
}

/// Options of [`crate::matvec_with`]: the direction, an algorithm and, for
/// [`MatvecAlgorithm::Tuned`], optionally a policy (else the device's
/// default, [`MatvecPolicy::for_device`]). A policy given with another
/// algorithm is refused, not ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatvecOptions {
    /// `y = A·x` or `y = Aᵀ·x`.
    pub op: Transpose,
    /// Which kernels.
    pub algorithm: MatvecAlgorithm,
    /// The Tuned kernels' constants; `None`: the device's default.
    pub policy: Option<MatvecPolicy>,
}

impl MatvecOptions {
    /// `op` by `algorithm`, with the device's default policy.
    ///
    /// ```
    /// use linalg::{MatvecAlgorithm, MatvecOptions, Transpose};
    /// let options = MatvecOptions::new(Transpose::Yes, MatvecAlgorithm::Global);
    /// assert_eq!(options.policy, None);
    /// assert!(options.validate().is_ok());
    /// ```
    pub fn new(op: Transpose, algorithm: MatvecAlgorithm) -> Self {
        MatvecOptions {
            op,
            algorithm,
            policy: None,
        }
    }

    /// `op` by [`MatvecAlgorithm::Tuned`] with `policy`.
    ///
    /// ```
    /// use linalg::policy::MatvecPolicy;
    /// use linalg::{MatvecAlgorithm, MatvecOptions, Transpose};
    /// let options = MatvecOptions::tuned(Transpose::No, MatvecPolicy::DEFAULT);
    /// assert_eq!(options.algorithm, MatvecAlgorithm::Tuned);
    /// assert!(options.validate().is_ok());
    /// ```
    pub fn tuned(op: Transpose, policy: MatvecPolicy) -> Self {
        MatvecOptions {
            op,
            algorithm: MatvecAlgorithm::Tuned,
            policy: Some(policy),
        }
    }

    /// Checks the algorithm's parameters ([`MatvecAlgorithm::validate`])
    /// and the policy, if one is given: only Tuned takes one, and it must
    /// be one the compiled kernels run ([`MatvecPolicy::validate`]).
    ///
    /// ```
    /// use linalg::policy::MatvecPolicy;
    /// use linalg::{MatvecAlgorithm, MatvecOptions, Transpose};
    /// let global = MatvecOptions::new(Transpose::No, MatvecAlgorithm::Global);
    /// assert!(global.validate().is_ok());
    /// let with_policy = MatvecOptions { policy: Some(MatvecPolicy::DEFAULT), ..global };
    /// assert!(with_policy.validate().is_err()); // only Tuned takes a policy
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.algorithm.validate()?;
        match (self.algorithm, self.policy) {
            (_, None) => Ok(()),
            (MatvecAlgorithm::Tuned, Some(policy)) => policy.validate(),
            (other, Some(_)) => Err(Error::invalid(
                "policy",
                format!("{other} has no policy: only Tuned takes a MatvecPolicy"),
            )),
        }
    }
}

/// Everything checked before `matvec` touches the device: shapes, lengths,
/// the algorithm's parameters, and that y overlaps neither A nor x.
pub(crate) fn validate<T: MatvecElement>(
    a: &MatrixView<'_, T>,
    x: &DeviceView<'_, T>,
    y: &DeviceViewMut<'_, T>,
    options: &MatvecOptions,
) -> Result<()> {
    check_matvec_lengths(a.rows(), a.cols(), x.len(), y.len(), options.op)?;
    options.validate()?;
    if a.data().overlaps(y.device_ptr(), y.bytes()) || x.overlaps(y.device_ptr(), y.bytes()) {
        return Err(Error::invalid(
            "y",
            "the output vector overlaps the matrix or the input vector (matvec is not in place)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_follow_the_direction() {
        assert!(check_matvec_lengths(3, 5, 5, 3, Transpose::No).is_ok());
        assert!(check_matvec_lengths(3, 5, 3, 5, Transpose::Yes).is_ok());
        assert!(matches!(
            check_matvec_lengths(3, 5, 3, 3, Transpose::No),
            Err(Error::LengthMismatch {
                expected: 5,
                actual: 3,
                ..
            })
        ));
        assert!(matches!(
            check_matvec_lengths(3, 5, 5, 5, Transpose::No),
            Err(Error::LengthMismatch {
                expected: 3,
                actual: 5,
                ..
            })
        ));
        assert!(check_matvec_lengths(3, 5, 5, 3, Transpose::Yes).is_err());
        assert!(matches!(
            check_matvec_lengths(0, 5, 5, 0, Transpose::No),
            Err(Error::Shape(_))
        ));
    }

    #[test]
    fn tile_widths_are_checked() {
        for tile in [1, 32, 33, 256, 1024] {
            assert!(MatvecAlgorithm::SharedTiled { tile }.validate().is_ok());
        }
        for tile in [0, 1025, u32::MAX] {
            assert!(matches!(
                MatvecAlgorithm::SharedTiled { tile }.validate(),
                Err(Error::InvalidArgument { name: "tile", .. })
            ));
        }
        assert!(MatvecAlgorithm::Global.validate().is_ok());
        assert_eq!(MatvecAlgorithm::default(), MatvecAlgorithm::Tuned);
    }

    #[test]
    fn bytes_moved_counts_matrix_and_both_vectors() {
        assert_eq!(
            matvec_bytes_moved(16384, 16384, 4),
            4 * (16384 * 16384 + 2 * 16384)
        );
        assert_eq!(matvec_bytes_moved(1, 1, 8), 24);
        // 64-bit arithmetic: no overflow past 2^32 elements.
        assert_eq!(
            matvec_bytes_moved(1 << 20, 1 << 20, 8),
            8 * ((1u64 << 40) + (2 << 20))
        );
    }

    #[test]
    fn direction_indices() {
        assert_eq!(Transpose::No.output_index(2, 7), 2);
        assert_eq!(Transpose::No.reduce_index(2, 7), 7);
        assert_eq!(Transpose::Yes.output_index(2, 7), 7);
        assert_eq!(Transpose::Yes.reduce_index(2, 7), 2);
    }

    #[test]
    fn a_policy_is_used_or_refused() {
        assert!(MatvecOptions::default().validate().is_ok());
        assert!(MatvecOptions::tuned(Transpose::Yes, MatvecPolicy::DEFAULT)
            .validate()
            .is_ok());
        for algorithm in [
            MatvecAlgorithm::Global,
            MatvecAlgorithm::SharedTiled { tile: 64 },
        ] {
            assert!(MatvecOptions::new(Transpose::No, algorithm)
                .validate()
                .is_ok());
            let given = MatvecOptions {
                policy: Some(MatvecPolicy::DEFAULT),
                ..MatvecOptions::new(Transpose::No, algorithm)
            };
            assert!(matches!(
                given.validate(),
                Err(Error::InvalidArgument { name: "policy", .. })
            ));
        }
        let bad_tile = MatvecOptions::new(Transpose::No, MatvecAlgorithm::SharedTiled { tile: 0 });
        assert!(matches!(
            bad_tile.validate(),
            Err(Error::InvalidArgument { name: "tile", .. })
        ));
        let bad_policy = MatvecOptions::tuned(
            Transpose::No,
            MatvecPolicy {
                n_waves: 0,
                ..MatvecPolicy::DEFAULT
            },
        );
        assert!(matches!(
            bad_policy.validate(),
            Err(Error::InvalidArgument { name: "tuning", .. })
        ));
    }
}
