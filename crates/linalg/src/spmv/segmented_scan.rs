//! `SpmvAlgorithm::SegmentedScan`: the lesson's SpMV by segmented scan
//! (`kernels/cuda/linalg/spmv_segmented_scan.cu` around
//! [`scan::segmented_scan_into`]).
//!
//! 1. products p[k] = vals[k]·x[cols[k]], one thread per non-zero;
//! 2. head flags: a zeroed byte per non-zero, 1 at the first non-zero of
//!    every non-empty row;
//! 3. the inclusive segmented scan of p by those heads (the scan crate's
//!    single look-back);
//! 4. gather: y[r] = α·(the scan at the row's last non-zero) + β·y[r], or
//!    β·y[r] for an empty row.
//!
//! - Work O(nnz + rows); balanced by non-zeros (the scan does not see rows).
//! - Bytes about 8·nnz + 4·nnz (products written) + 9·nnz (scan read) +
//!   4·nnz (scan written) + nnz (flags zeroed) + offsets twice + y: roughly
//!   three times [`super::spmv_bytes_moved`].
//! - `f32` only: the segmented scan takes 4-byte values.
//! - Float results depend on the look-back's combine order (timing), as
//!   the scan's do.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Gpu, KernelArgs, Result, Sum};
use scan::SegmentedKind;

use super::module::{kernel, SpmvOffset, ROW_BLOCK_THREADS};
use super::{CsrParts, SpmvElement};

pub(crate) fn launch<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    mut y: DeviceViewMut<'_, T>,
) -> Result<()> {
    let (rows, nnz) = (a.rows as u64, a.nnz as u64);
    // SAFETY: the products kernel writes every element before the scan reads it.
    let mut products = unsafe { DeviceBuffer::<T>::uninit(gpu, a.nnz)? };
    // SAFETY: the scan writes every element before the gather reads it.
    let mut scanned = unsafe { DeviceBuffer::<T>::uninit(gpu, a.nnz)? };
    let mut flags = DeviceBuffer::<u8>::zeros(gpu, a.nnz)?;
    if nnz > 0 {
        let products_kernel = kernel::<T, O>(gpu, "spmv_products")?;
        let (config, _) = grid_1d(nnz, ROW_BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&a.columns)
            .input(&a.values)
            .input(&x)
            .output(&mut products.view_mut())
            .scalar(nnz);
        // SAFETY: (const i32* cols, const T* vals, const T* x, T* products,
        // u64 nnz); cols, vals and products have nnz elements, every column
        // is below x's length (validated matrix).
        unsafe { gpu.launch(&products_kernel, config, &args)? };

        let heads = kernel::<T, O>(gpu, "spmv_row_heads")?;
        let (config, _) = grid_1d(rows, ROW_BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&a.offsets)
            .output(&mut flags.view_mut())
            .scalar(rows)
            .scalar(nnz);
        // SAFETY: (const O* offsets, u8* flags, u64 rows, u64 nnz); offsets
        // has rows + 1 entries, flags nnz bytes and the kernel writes only
        // below nnz.
        unsafe { gpu.launch(&heads, config, &args)? };

        scan::segmented_scan_into(
            gpu,
            products.view(),
            flags.view(),
            scanned.view_mut(),
            &Sum,
            SegmentedKind::Inclusive,
        )?;
    }
    let gather = kernel::<T, O>(gpu, "spmv_gather_rows")?;
    let (config, _) = grid_1d(rows, ROW_BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&a.offsets)
        .input(&scanned.view())
        .output(&mut y)
        .scalar(rows)
        .scalar(alpha)
        .scalar(beta);
    // SAFETY: (const O* offsets, const T* scanned, T* y, u64 rows, T alpha,
    // T beta); scanned has nnz elements and is read only at offsets[r + 1]
    // − 1 of non-empty rows (< nnz), y has rows elements.
    unsafe { gpu.launch(&gather, config, &args) }
}
