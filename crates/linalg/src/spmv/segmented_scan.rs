//! `SpmvAlgorithm::SegmentedScan`: the lesson's SpMV by segmented scan
//! (`kernels/cuda/linalg/spmv_segmented_scan.cu` around
//! [`scan::segmented_scan_into`]).
//!
//! 1. products p[k] = vals[k]·x[cols[k]], one thread per non-zero;
//! 2. head flags: a byte per non-zero, written 0 by the products kernel,
//!    then 1 at the first non-zero of every non-empty row;
//! 3. the inclusive segmented scan of p by those heads (the scan crate's
//!    single look-back);
//! 4. gather: y[r] = α·(the scan at the row's last non-zero) + β·y[r], or
//!    β·y[r] for an empty row.
//!
//! - Work O(nnz + rows); balanced by non-zeros (the scan does not see rows).
//! - Bytes about 8·nnz + 4·nnz (products written) + nnz (flags written) +
//!   9·nnz (scan read) + 4·nnz (scan written) + offsets twice + y: roughly
//!   three times [`super::spmv_bytes_moved`].
//! - Temporaries: the products, the scan and the flags are words of the
//!   scratch arena ([`Gpu::with_scratch_words`],
//!   `segmented_scan_scratch_words` of them), written before they are
//!   read, and the scan's tile state comes from the arena nested in it:
//!   after the first call at a size, a call allocates nothing and enqueues
//!   no memset.
//! - `f32` only: the segmented scan takes 4-byte values.
//! - Float results depend on the look-back's combine order (timing), as
//!   the scan's do.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceView, DeviceViewMut, Error, Gpu, Kernel, KernelArgs, Result, Sum};
use scan::SegmentedKind;

use super::module::{kernel, SpmvOffset, ROW_BLOCK_THREADS};
use super::{CsrParts, SpmvElement};

/// Words of one array of `nnz` values of `value_bytes` in the scratch: a
/// whole number of 16-byte pairs, so that the next array starts 16-byte
/// aligned too (the scan's vector path needs it).
fn value_words(nnz: u64, value_bytes: usize) -> u64 {
    (nnz * value_bytes as u64).div_ceil(16) * 2
}

/// Scratch words of a call with `nnz` non-zeros of `value_bytes`: the
/// products and the scan (nnz values each, [`value_words`]) and the head
/// flags (nnz bytes, rounded up to whole words).
pub(crate) fn segmented_scan_scratch_words(nnz: u64, value_bytes: usize) -> u64 {
    2 * value_words(nnz, value_bytes) + nnz.div_ceil(8)
}

pub(crate) fn launch<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    y: DeviceViewMut<'_, T>,
) -> Result<()> {
    let words = usize::try_from(segmented_scan_scratch_words(a.nnz as u64, T::BYTES))
        .map_err(|_| Error::invalid("matrix", "too many non-zeros for the scratch arena"))?;
    // The kernels first: a first use compiles, and the arena stays free
    // meanwhile.
    let kernels = [
        kernel::<T, O>(gpu, "spmv_products")?,
        kernel::<T, O>(gpu, "spmv_row_heads")?,
        kernel::<T, O>(gpu, "spmv_gather_rows")?,
    ];
    // SAFETY: the products kernel writes every product and every flag (0)
    // before the heads kernel sets the heads and the scan reads both; the
    // scan writes every scanned value before the gather reads it (stream
    // order); nothing else is read.
    unsafe {
        gpu.with_scratch_words(words, |scratch, nested| {
            launch_on(gpu, nested, &kernels, a, x, alpha, beta, y, scratch)
        })
    }
}

/// The launches of `kernels` (products, row heads, gather) around the
/// scan, the temporaries carved from `scratch`
/// (`segmented_scan_scratch_words` words); the scan runs on `nested`
/// (the same stream, the arena nested in the one that holds `scratch`).
#[allow(clippy::too_many_arguments)]
fn launch_on<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    nested: &Gpu,
    [products_kernel, heads, gather]: &[Kernel; 3],
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    mut y: DeviceViewMut<'_, T>,
    scratch: DeviceViewMut<'_, u64>,
) -> Result<()> {
    let (rows, nnz) = (a.rows as u64, a.nnz as u64);
    // Fits usize: the whole scratch's word count did.
    let array_words = value_words(nnz, T::BYTES) as usize;
    let (products, rest) = scratch.split_at_mut(array_words)?;
    let (scanned, flags) = rest.split_at_mut(array_words)?;
    let mut products = products.into_elements::<T>()?.into_slice(..a.nnz)?;
    let mut scanned = scanned.into_elements::<T>()?.into_slice(..a.nnz)?;
    let mut flags = flags.into_elements::<u8>()?.into_slice(..a.nnz)?;
    if nnz > 0 {
        let (config, _) = grid_1d(nnz, ROW_BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&a.columns)
            .input(&a.values)
            .input(&x)
            .output(&mut products)
            .output(&mut flags)
            .scalar(nnz);
        // SAFETY: (const i32* cols, const T* vals, const T* x, T* products,
        // u8* flags, u64 nnz); cols, vals, products and flags have nnz
        // elements, every column is below x's length (validated matrix).
        unsafe { gpu.launch(products_kernel, config, &args)? };

        let (config, _) = grid_1d(rows, ROW_BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&a.offsets)
            .output(&mut flags)
            .scalar(rows)
            .scalar(nnz);
        // SAFETY: (const O* offsets, u8* flags, u64 rows, u64 nnz); offsets
        // has rows + 1 entries, flags nnz bytes and the kernel writes only
        // below nnz.
        unsafe { gpu.launch(heads, config, &args)? };

        scan::segmented_scan_into(
            nested,
            products.as_view(),
            flags.as_view(),
            scanned.reborrow(),
            &Sum,
            SegmentedKind::Inclusive,
        )?;
    }
    let (config, _) = grid_1d(rows, ROW_BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&a.offsets)
        .input(&scanned.as_view())
        .output(&mut y)
        .scalar(rows)
        .scalar(alpha)
        .scalar(beta);
    // SAFETY: (const O* offsets, const T* scanned, T* y, u64 rows, T alpha,
    // T beta); scanned has nnz elements and is read only at offsets[r + 1]
    // − 1 of non-empty rows (< nnz), y has rows elements.
    unsafe { gpu.launch(gather, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_holds_two_value_arrays_and_the_flags() {
        assert_eq!(segmented_scan_scratch_words(0, 4), 0);
        assert_eq!(segmented_scan_scratch_words(1, 4), 2 + 2 + 1);
        assert_eq!(segmented_scan_scratch_words(5, 4), 4 + 4 + 1);
        assert_eq!(segmented_scan_scratch_words(16, 4), 8 + 8 + 2);
        assert_eq!(segmented_scan_scratch_words(3, 8), 4 + 4 + 1);
        // Every array starts 16-byte aligned: an even number of words.
        for nnz in 0..40 {
            assert_eq!(value_words(nnz, 4) % 2, 0);
            assert!(value_words(nnz, 4) * 8 >= nnz * 4);
        }
    }
}
