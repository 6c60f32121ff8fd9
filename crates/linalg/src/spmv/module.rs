//! The SpMV kernel modules: one per (element type, offset type), holding
//! every method's entries; their tuning constants; and the lookup of their
//! kernels in the context's kernel store.

use gpu_core::{DeviceType, Gpu, Kernel, ModuleSource, Result};

use super::SpmvElement;

/// Threads per block of the one-thread-per-item kernels (scalar, products,
/// row heads, gather, partition).
pub(crate) const ROW_BLOCK_THREADS: u32 = 256;
/// Threads per block of the merge-path tiles.
pub(crate) const MERGE_BLOCK_THREADS: u32 = 256;
/// Merge steps (rows + non-zeros) per thread of a merge-path tile: odd, so
/// that the threads' strided reads of the staged products hit different
/// shared-memory banks.
pub(crate) const MERGE_ITEMS: u32 = 7;
/// Threads per block of the fix-up's chunks, and of its one-block fold.
pub(crate) const CHUNK_BLOCK_THREADS: u32 = gpu_core::merge_path::FIXUP_CHUNK_THREADS;
/// Carries per thread of a fix-up chunk, and per thread per round of the
/// one-block fold (one round for up to a chunk of carries or summaries).
pub(crate) const CHUNK_ITEMS: u32 = gpu_core::merge_path::FIXUP_CHUNK_ITEMS;

/// The row-offset types the kernels take.
pub trait SpmvOffset: DeviceType + Copy + Into<u64> {}
impl SpmvOffset for u32 {}
impl SpmvOffset for u64 {}

/// Entry name `{kernel}_{type}_{offset}`.
pub(crate) fn entry<T: SpmvElement, O: SpmvOffset>(kernel: &str) -> String {
    format!("{kernel}_{}_{}", T::SUFFIX, O::SUFFIX)
}

/// The module for values `T` and row offsets `O`.
pub(crate) fn module<T: SpmvElement, O: SpmvOffset>() -> ModuleSource {
    let t = T::CUDA_TYPE;
    let o = O::CUDA_TYPE;
    let csr = format!("const {o}* offsets, const i32* cols, const {t}* vals, const {t}* x, {t}* y");
    let rows_args = format!("u64 rows, {t} alpha, {t} beta");
    ModuleSource::new(format!("spmv_{}_{}", T::SUFFIX, O::SUFFIX))
        .define("SPMV_MERGE_BLOCK", MERGE_BLOCK_THREADS)
        .define("SPMV_MERGE_ITEMS", MERGE_ITEMS)
        .define("SPMV_FIXUP_BLOCK", CHUNK_BLOCK_THREADS)
        .define("SPMV_FIXUP_ITEMS", CHUNK_ITEMS)
        .define("SPMV_CHUNK_BLOCK", CHUNK_BLOCK_THREADS)
        .define("SPMV_CHUNK_ITEMS", CHUNK_ITEMS)
        .source(parprims_kernels::MERGE_PATH)
        .source(parprims_kernels::SPMV_COMMON)
        .source(parprims_kernels::SPMV_SCALAR)
        .source(parprims_kernels::SPMV_VECTOR)
        .source(parprims_kernels::SPMV_MERGE_PATH)
        .source(parprims_kernels::SPMV_SEGMENTED_SCAN)
        .entry(
            entry::<T, O>("spmv_scalar"),
            &format!("{csr}, {rows_args}"),
            &format!("spmv_scalar<{t}, {o}>(offsets, cols, vals, x, y, rows, alpha, beta)"),
            Some(ROW_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_vector"),
            &format!("{csr}, {rows_args}"),
            &format!("spmv_vector<{t}, {o}>(offsets, cols, vals, x, y, rows, alpha, beta)"),
            Some(ROW_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_merge_partition"),
            &format!("const {o}* offsets, u64 rows, u64 nnz, u64* coordinates, u64 tiles"),
            "spmv_merge_partition(offsets, rows, nnz, coordinates, tiles)",
            Some(ROW_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_merge_tiles"),
            &format!(
                "{csr}, const u64* coordinates, u64* carry_keys, {t}* carry_values, \
                 u64 rows, u64 nnz, u64 tiles, {t} alpha, {t} beta"
            ),
            &format!(
                "spmv_merge_tiles<{t}, {o}>(offsets, cols, vals, x, y, coordinates, carry_keys, \
                 carry_values, rows, nnz, tiles, alpha, beta)"
            ),
            Some(MERGE_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_merge_fixup_chunks"),
            &format!(
                "const u64* carry_keys, const {t}* carry_values, u64 tiles, {t}* y, u64 rows, \
                 {t} alpha, u64* summary_keys, {t}* summary_values"
            ),
            &format!(
                "spmv_merge_fixup_chunks<{t}>(carry_keys, carry_values, tiles, y, rows, alpha, \
                 summary_keys, summary_values)"
            ),
            Some(CHUNK_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_merge_fixup"),
            &format!(
                "const u64* carry_keys, const {t}* carry_values, u64 tiles, {t}* y, u64 rows, \
                 {t} alpha"
            ),
            &format!("spmv_merge_fixup<{t}>(carry_keys, carry_values, tiles, y, rows, alpha)"),
            Some(CHUNK_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_products"),
            &format!(
                "const i32* cols, const {t}* vals, const {t}* x, {t}* products, u8* flags, \
                 u64 nnz"
            ),
            &format!("spmv_products<{t}>(cols, vals, x, products, flags, nnz)"),
            Some(ROW_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_row_heads"),
            &format!("const {o}* offsets, u8* flags, u64 rows, u64 nnz"),
            "spmv_row_heads(offsets, flags, rows, nnz)",
            Some(ROW_BLOCK_THREADS),
        )
        .entry(
            entry::<T, O>("spmv_gather_rows"),
            &format!(
                "const {o}* offsets, const {t}* scanned, {t}* y, u64 rows, {t} alpha, {t} beta"
            ),
            &format!("spmv_gather_rows<{t}, {o}>(offsets, scanned, y, rows, alpha, beta)"),
            Some(ROW_BLOCK_THREADS),
        )
}

/// The kernel `name` of [`module`] on `gpu`'s context, from its store.
pub(crate) fn kernel<T: SpmvElement, O: SpmvOffset>(gpu: &Gpu, name: &str) -> Result<Kernel> {
    gpu.stored_kernel(
        &format!("linalg_spmv_{}_{}", T::SUFFIX, O::SUFFIX),
        &entry::<T, O>(name),
        module::<T, O>,
    )
}

/// Every SpMV module.
pub(crate) fn catalog() -> Vec<ModuleSource> {
    vec![
        module::<f32, u32>(),
        module::<f32, u64>(),
        module::<f64, u32>(),
        module::<f64, u64>(),
    ]
}
