//! Matrix–vector multiply on the device: `y = A·x` and `y = Aᵀ·x`.
//!
//! | algorithm | A·x | Aᵀ·x | launches |
//! |---|---|---|---|
//! | [`MatvecAlgorithm::Global`] | thread per row (uncoalesced, the lab's gpu-gm) | thread per column (coalesced) | 1 |
//! | [`MatvecAlgorithm::SharedTiled`] | as Global, x staged in shared tiles (the lab's gpu-sm) | same, over rows | 1 |
//! | [`MatvecAlgorithm::Tuned`] | thread group per row, 16-byte loads, shuffle reduction | column-blocked strips × row slabs, two-pass | 1 (A·x), 1–2 (Aᵀ·x) |
//!
//! Every algorithm reads A once: [`matvec_bytes_moved`] is
//! `(rows·cols + rows + cols)·sizeof(T)` for both directions. Every
//! algorithm is deterministic (fixed summation order for a given shape and
//! device); float results differ between algorithms in the last bits.
//! Integers wrap, identically on GPU and CPU.
//!
//! Layers: `algorithm` (what the caller picks, and the checks), `policy`
//! (the Tuned kernels' constants), `global` / `tiled` / `tuned` (one
//! algorithm each: its grid and launches), `module` (the kernel sources and
//! their store lookup), `dispatch` (options → algorithm).

mod algorithm;
mod dispatch;
mod global;
mod module;
pub(crate) mod policy;
mod tiled;
pub(crate) mod tuned;

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Gpu, Result};

use crate::matrix::MatrixView;
pub use algorithm::{
    check_matvec_lengths, matvec_bytes_moved, MatvecAlgorithm, MatvecElement, MatvecOptions,
    Transpose,
};
pub(crate) use module::catalog;
use policy::MatvecPolicy;

/// `y = A·x` (`op = Transpose::No`) or `y = Aᵀ·x` (`op = Transpose::Yes`),
/// enqueued on `gpu`'s stream.
///
/// `a` is row-major `rows × cols`; x has `cols` (A·x) or `rows` (Aᵀ·x)
/// elements, y the other. Every argument is checked first: a shape or
/// length mismatch, an overlap of y with A or x, or a bad tile width is a
/// typed error and nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::{Matrix, MatvecAlgorithm, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1i32, 2, 3, 4, 5, 6]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, 0, -1])?;
/// let mut y = DeviceBuffer::<i32>::zeros(&gpu, 2)?;
/// linalg::matvec(&gpu, a.view(), x.view(), y.view_mut(), Transpose::No, MatvecAlgorithm::Global)?;
/// assert_eq!(y.to_host(&gpu)?, linalg::cpu::matvec(&host, 2, 3, &[1, 0, -1], Transpose::No)?); // [-2, -2]
/// # Ok(()) }
/// ```
pub fn matvec<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    op: Transpose,
    algorithm: MatvecAlgorithm,
) -> Result<()> {
    dispatch::matvec(gpu, a, x, y, &MatvecOptions::new(op, algorithm))
}

/// [`matvec`] with [`MatvecOptions`]: the direction, an algorithm and, for
/// Tuned, a [`crate::policy::MatvecPolicy`] (a policy the kernels cannot
/// run, or one given to another algorithm, is a typed error). Same checks
/// and guarantees as [`matvec`].
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::policy::MatvecPolicy;
/// use linalg::{Matrix, MatvecOptions, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1i32, 2, 3, 4, 5, 6]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, 1])?;
/// let mut y = DeviceBuffer::<i32>::zeros(&gpu, 3)?; // Aᵀ·x has cols elements
/// let options = MatvecOptions::tuned(Transpose::Yes, MatvecPolicy::new(8, 8, false)?);
/// linalg::matvec_with(&gpu, a.view(), x.view(), y.view_mut(), &options)?;
/// assert_eq!(y.to_host(&gpu)?, linalg::cpu::matvec(&host, 2, 3, &[1, 1], Transpose::Yes)?); // [5, 7, 9]
/// # Ok(()) }
/// ```
pub fn matvec_with<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    options: &MatvecOptions,
) -> Result<()> {
    dispatch::matvec(gpu, a, x, y, options)
}

/// [`MatvecAlgorithm::Tuned`] with `policy`, for tuning sweeps:
/// `matvec_with(…, &MatvecOptions::tuned(op, *policy))`. Only the run-time
/// constants and the compiled variants may differ from
/// [`MatvecPolicy::DEFAULT`] ([`MatvecPolicy::validate`]).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::policy::MatvecPolicy;
/// use linalg::{Matrix, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1i32, 2, 3, 4, 5, 6]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, 1, 1])?;
/// let mut y = DeviceBuffer::<i32>::zeros(&gpu, 2)?;
/// let policy = MatvecPolicy { n_waves: 4, ..MatvecPolicy::DEFAULT };
/// linalg::matvec_tuned_with(&gpu, a.view(), x.view(), y.view_mut(), Transpose::No, &policy)?;
/// assert_eq!(y.to_host(&gpu)?, linalg::cpu::matvec(&host, 2, 3, &[1, 1, 1], Transpose::No)?); // [6, 15]
/// # Ok(()) }
/// ```
pub fn matvec_tuned_with<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    op: Transpose,
    policy: &MatvecPolicy,
) -> Result<()> {
    dispatch::matvec(gpu, a, x, y, &MatvecOptions::tuned(op, *policy))
}

/// [`matvec`] into a new device vector.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::{Matrix, MatvecAlgorithm, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.0f64, 1.0, 1.0])?;
/// let y = linalg::matvec_new(&gpu, a.view(), x.view(), Transpose::No, MatvecAlgorithm::Tuned)?;
/// let expected = linalg::cpu::matvec(&host, 2, 3, &[1.0, 1.0, 1.0], Transpose::No)?; // [6, 15]
/// assert_eq!(y.to_host(&gpu)?, expected); // small integers: exact in any order
/// # Ok(()) }
/// ```
pub fn matvec_new<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    op: Transpose,
    algorithm: MatvecAlgorithm,
) -> Result<DeviceBuffer<T>> {
    let y_len = op.output_len(a.rows(), a.cols());
    check_matvec_lengths(a.rows(), a.cols(), x.len(), y_len, op)?;
    algorithm.validate()?;
    // SAFETY: matvec writes every element of y (one result per output) before
    // anything reads it; on error the buffer is dropped unread.
    let mut y = unsafe { DeviceBuffer::<T>::uninit(gpu, y_len)? };
    matvec(gpu, a, x, y.view_mut(), op, algorithm)?;
    Ok(y)
}
