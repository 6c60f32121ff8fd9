// spmv_vector.cu — CSR SpMV, one warp per row (SpmvAlgorithm::Vector).
//
// Lane l of the row's warp folds products l, l + 32, … (coalesced loads of
// vals and cols), the warp sums its lanes with shuffles, lane 0 stores
// α·sum + β·y[r]. Work nnz multiply-adds plus 31 adds per row; steps
// ⌈len / 32⌉ + 5. Rows much shorter than 32 leave lanes idle; one very long
// row still runs on one warp. One launch, no shared memory.
#pragma once

template <typename T, typename Off>
__device__ void spmv_vector(const Off* __restrict__ offsets, const i32* __restrict__ cols,
                            const T* __restrict__ vals, const T* __restrict__ x, T* y, u64 rows,
                            T alpha, T beta) {
    const u64 row = global_thread_index() >> 5;
    const u32 lane = threadIdx.x & 31u;
    // Whole warps leave together (the shuffles below need all 32 lanes).
    if (row >= rows) return;
    const u64 begin = (u64)offsets[row];
    const u64 end = (u64)offsets[row + 1];
    T sum = (T)0;
    for (u64 k = begin + lane; k < end; k += 32) sum += spmv_product(cols, vals, x, k);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) spmv_store_row(y, row, sum, alpha, beta);
}
