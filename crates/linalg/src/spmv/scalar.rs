//! `SpmvAlgorithm::Scalar`: one thread per row
//! (`kernels/cuda/linalg/spmv_scalar.cu`).
//!
//! - Computes y[r] = α·Σ vals[k]·x[cols[k]] + β·y[r] over row r's entries.
//! - Work nnz multiply-adds; steps: the longest row.
//! - Bytes: [`super::spmv_bytes_moved`], but a warp's loads of vals and
//!   cols are spread over 32 rows, so sectors are fetched for a few useful
//!   bytes unless the rows are short; x through the read-only cache.
//! - One launch, blocks of 256, no shared memory. Deterministic.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceView, DeviceViewMut, Gpu, KernelArgs, Result};

use super::module::{kernel, SpmvOffset, ROW_BLOCK_THREADS};
use super::{CsrParts, SpmvElement};

pub(crate) fn launch<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    y: DeviceViewMut<'_, T>,
) -> Result<()> {
    launch_rows(gpu, a, x, alpha, beta, y, "spmv_scalar", a.rows as u64)
}

/// Launches a per-row entry (`spmv_scalar`, `spmv_vector`) over `threads`
/// threads, with the CSR arguments `(offsets, cols, vals, x, y, rows,
/// alpha, beta)`.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_rows<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    mut y: DeviceViewMut<'_, T>,
    name: &str,
    threads: u64,
) -> Result<()> {
    let kernel = kernel::<T, O>(gpu, name)?;
    let (config, _) = grid_1d(threads, ROW_BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&a.offsets)
        .input(&a.columns)
        .input(&a.values)
        .input(&x)
        .output(&mut y)
        .scalar(a.rows as u64)
        .scalar(alpha)
        .scalar(beta);
    // SAFETY: both entries take (const O* offsets, const i32* cols, const T*
    // vals, const T* x, T* y, u64 rows, T alpha, T beta); the matrix was
    // validated (offsets rows + 1 long, non-decreasing up to nnz = vals and
    // cols lengths, every column below cols = x's length), y has rows
    // elements, and threads past the rows return.
    unsafe { gpu.launch(&kernel, config, &args) }
}
