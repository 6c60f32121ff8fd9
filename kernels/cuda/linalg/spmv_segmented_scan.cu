// spmv_segmented_scan.cu — the lesson's SpMV by segmented scan
// (SpmvAlgorithm::SegmentedScan), around scan::segmented_scan_into:
//   1. products: p[k] = vals[k]·x[cols[k]] and flags[k] = 0 (one thread per
//      non-zero; the flags are scratch memory, so they are cleared here
//      rather than by a memset);
//   2. heads: flags[offsets[r]] = 1 for every non-empty row (after step 1
//      in stream order; empty rows share their successor's offset and
//      write the same byte, so the race is benign);
//   3. the segmented inclusive scan of p by those heads (scan crate);
//   4. gather: y[r] = α·s[offsets[r + 1] − 1] + β·y[r], α·0 + β·y[r] for an
//      empty row.
// Bytes: 8·nnz + 4·nnz (products written) + nnz (flags) + the scan's 9·nnz
// read and 4·nnz written + offsets twice + y: about 3× the merge path's
// traffic.
#pragma once

template <typename T>
__device__ void spmv_products(const i32* __restrict__ cols, const T* __restrict__ vals,
                              const T* __restrict__ x, T* products, u8* flags, u64 nnz) {
    const u64 k = global_thread_index();
    if (k >= nnz) return;
    products[k] = spmv_product(cols, vals, x, k);
    flags[k] = 0;
}

template <typename Off>
__device__ void spmv_row_heads(const Off* __restrict__ offsets, u8* flags, u64 rows, u64 nnz) {
    const u64 row = global_thread_index();
    if (row >= rows) return;
    const u64 begin = (u64)offsets[row];
    if (begin < (u64)offsets[row + 1] && begin < nnz) flags[begin] = 1;
}

template <typename T, typename Off>
__device__ void spmv_gather_rows(const Off* __restrict__ offsets, const T* __restrict__ scanned,
                                 T* y, u64 rows, T alpha, T beta) {
    const u64 row = global_thread_index();
    if (row >= rows) return;
    const u64 begin = (u64)offsets[row];
    const u64 end = (u64)offsets[row + 1];
    const T sum = end > begin ? scanned[end - 1] : (T)0;
    spmv_store_row(y, row, sum, alpha, beta);
}
