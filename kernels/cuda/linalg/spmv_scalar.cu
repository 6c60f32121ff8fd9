// spmv_scalar.cu — CSR SpMV, one thread per row (SpmvAlgorithm::Scalar).
//
// Thread r folds its row's products in order and stores α·sum + β·y[r].
// Work nnz multiply-adds; steps: the longest row. Neighbouring threads read
// neighbouring rows, so a warp's loads of vals and cols are scattered over
// 32 rows (coalesced only when rows are very short), and one long row keeps
// its warp busy while the other 31 lanes idle. One launch, no shared memory.
#pragma once

template <typename T, typename Off>
__device__ void spmv_scalar(const Off* __restrict__ offsets, const i32* __restrict__ cols,
                            const T* __restrict__ vals, const T* __restrict__ x, T* y, u64 rows,
                            T alpha, T beta) {
    const u64 row = global_thread_index();
    if (row >= rows) return;
    const u64 begin = (u64)offsets[row];
    const u64 end = (u64)offsets[row + 1];
    T sum = (T)0;
    for (u64 k = begin; k < end; ++k) sum += spmv_product(cols, vals, x, k);
    spmv_store_row(y, row, sum, alpha, beta);
}
