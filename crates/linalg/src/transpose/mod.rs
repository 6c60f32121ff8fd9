//! Matrix transpose on the device: `out = inᵀ`.
//!
//! | algorithm | block | tile | global access | shared-memory banks |
//! |---|---|---|---|---|
//! | [`TransposeAlgorithm::Naive`] | 32 × 8 | — | reads coalesced, writes strided | — |
//! | [`TransposeAlgorithm::Tiled`] | 32 × 32 | 32 × 32 | both coalesced | 32-way conflicts on the column read (4-byte) |
//! | [`TransposeAlgorithm::TiledPadded`] | 32 × 32 | 32 × 33 | both coalesced | conflict-free for 4/8-byte, ≤ 2-way for 1- and 2-byte (the lab's gpu-sm) |
//! | [`TransposeAlgorithm::Tuned`] | 64 × 8 (default policy) | 64 × 65, 8 rows per thread, tiles down the columns; 1- and 2-byte elements: 16-byte vectors through a swizzled 128 × 128-byte tile, 256 threads; 2- and 4-byte matrices of 2^23+ elements with rows off 256-byte blocks: a 128 × 65 tile with stores rotated onto sectors | both coalesced (vectors: 16-byte accesses) | as TiledPadded; the vector tile's gathers conflict-free |
//!
//! Any `rows × cols` (1 × N and N × 1 included), element sizes 1, 2, 4
//! and 8 bytes (`i8`, `u8`; `i16`, `u16`, `f16`, `bf16`; `i32`, `u32`,
//! `f32`; `i64`, `u64`, `f64`: every element type): the kernels move bits,
//! so one module per element *size* serves every type of that size.
//! Bytes moved [`transpose_bytes_moved`] = 2·rows·cols·sizeof(T); one
//! launch; deterministic; not in place (the output must not overlap the
//! input).
//!
//! Layers: `algorithm` (what the caller picks, and the checks), `policy`
//! (the Tuned kernel's shape), `naive` / `tiled` / `tuned` (one algorithm
//! each: its grid), `module` (the kernel sources and their store lookup),
//! `dispatch` (options → entry, grid, launch).

mod algorithm;
mod dispatch;
mod module;
mod naive;
pub(crate) mod policy;
mod tiled;
mod tuned;

use gpu_core::{DeviceType, Gpu, Result};

use crate::matrix::{Matrix, MatrixView, MatrixViewMut};
pub use algorithm::{
    check_transpose_shapes, transpose_bytes_moved, TransposeAlgorithm, TransposeOptions,
};
pub(crate) use module::catalog;
use policy::TransposePolicy;

/// `output = inputᵀ`, enqueued on `gpu`'s stream. `input` is `rows × cols`,
/// `output` must be `cols × rows` and must not overlap `input`. Shape
/// errors, overlap and unsupported element sizes are typed errors, found
/// before anything is written.
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::{Matrix, TransposeAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let mut t = Matrix::<f32>::zeros(&gpu, 3, 2)?;
/// linalg::transpose(&gpu, a.view(), t.view_mut(), TransposeAlgorithm::TiledPadded)?;
/// assert_eq!(t.to_host(&gpu)?, linalg::cpu::transpose(&host, 2, 3)?); // [1, 4, 2, 5, 3, 6]
/// # Ok(()) }
/// ```
pub fn transpose<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    algorithm: TransposeAlgorithm,
) -> Result<()> {
    dispatch::transpose(gpu, input, output, &TransposeOptions::new(algorithm))
}

/// [`transpose`] with [`TransposeOptions`]: an algorithm and, for Tuned,
/// a [`crate::policy::TransposePolicy`] (a policy the kernels cannot run,
/// or one given to another algorithm, is a typed error). Same checks and
/// guarantees as [`transpose`].
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::policy::TransposePolicy;
/// use linalg::{Matrix, TransposeOptions};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host: Vec<u8> = (0..=255).collect(); // 16 × 16 bytes
/// let a = Matrix::from_host(&gpu, 16, 16, &host)?;
/// let mut t = Matrix::<u8>::zeros(&gpu, 16, 16)?;
/// let options = TransposeOptions::tuned(TransposePolicy::new(32, 16)?);
/// linalg::transpose_with(&gpu, a.view(), t.view_mut(), &options)?;
/// assert_eq!(t.to_host(&gpu)?, linalg::cpu::transpose(&host, 16, 16)?);
/// # Ok(()) }
/// ```
pub fn transpose_with<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    options: &TransposeOptions,
) -> Result<()> {
    dispatch::transpose(gpu, input, output, options)
}

/// [`TransposeAlgorithm::Tuned`] with `policy`, for tuning sweeps:
/// `transpose_with(…, &TransposeOptions::tuned(*policy))`.
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::policy::{TransposePolicy, TUNABLE_SHAPES};
/// use linalg::Matrix;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host: Vec<f64> = (0..12).map(f64::from).collect(); // 3 × 4
/// let a = Matrix::from_host(&gpu, 3, 4, &host)?;
/// let mut t = Matrix::<f64>::zeros(&gpu, 4, 3)?;
/// for (tile, block_rows) in TUNABLE_SHAPES {
///     linalg::transpose_tuned_with(&gpu, a.view(), t.view_mut(), &TransposePolicy::new(tile, block_rows)?)?;
///     assert_eq!(t.to_host(&gpu)?, linalg::cpu::transpose(&host, 3, 4)?);
/// }
/// # Ok(()) }
/// ```
pub fn transpose_tuned_with<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    policy: &TransposePolicy,
) -> Result<()> {
    dispatch::transpose(gpu, input, output, &TransposeOptions::tuned(*policy))
}

/// [`transpose`] into a new `cols × rows` matrix.
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::{Matrix, TransposeAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1i32, 2, 3, 4, 5, 6]; // 2 × 3
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let t = linalg::transpose_new(&gpu, a.view(), TransposeAlgorithm::Tuned)?;
/// assert_eq!(t.shape(), (3, 2));
/// assert_eq!(t.to_host(&gpu)?, linalg::cpu::transpose(&host, 2, 3)?); // [1, 4, 2, 5, 3, 6]
/// # Ok(()) }
/// ```
pub fn transpose_new<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    algorithm: TransposeAlgorithm,
) -> Result<Matrix<T>> {
    let (rows, cols) = input.shape();
    check_transpose_shapes((rows, cols), (cols, rows), T::BYTES)?;
    // SAFETY: the transpose writes every element of the output before
    // anything reads it; on error the buffer is dropped unread.
    let buffer = unsafe { gpu_core::DeviceBuffer::<T>::uninit(gpu, rows * cols)? };
    let mut output = Matrix::from_buffer(cols, rows, buffer)?;
    transpose(gpu, input, output.view_mut(), algorithm)?;
    Ok(output)
}
