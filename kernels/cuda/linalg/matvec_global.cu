// matvec_global.cu — y = A·x and y = Aᵀ·x straight from global memory (the
// lab's gpu-gm): one thread per output element, no shared memory.
//
// A is row-major rows × cols. Work rows·cols multiply-adds, step
// complexity cols (A·x) or rows (Aᵀ·x) per thread. Bytes: the matrix once,
// x once per thread (cached in L1/L2), y once.
//
// A·x: thread r walks row r. A warp's 32 threads read 32 different rows at
// the same column, 32 sectors per request (uncoalesced): this is the
// baseline the tiled and tuned kernels improve on.
// Aᵀ·x: thread c walks column c down the rows. A warp reads 32 consecutive
// columns of one row per step: coalesced.
// Sums in acc_t<T>, each output rounded once (matvec_common.cu).
// Deterministic (fixed summation order); not in place (y must not overlap).
#pragma once

template <typename T>
__device__ void matvec_global_n(const T* __restrict__ a, const T* __restrict__ x,
                                T* __restrict__ y, u64 rows, u64 cols) {
    const u64 row = global_thread_index();
    if (row >= rows) return;  // past the last row, or a surplus block of a spilled grid
    const T* arow = a + row * cols;
    acc_t<T> sum = acc_t<T>(0);
    for (u64 c = 0; c < cols; ++c) sum = mul_add(arow[c], x[c], sum);
    y[row] = from_acc<T>(sum);
}

template <typename T>
__device__ void matvec_global_t(const T* __restrict__ a, const T* __restrict__ x,
                                T* __restrict__ y, u64 rows, u64 cols) {
    const u64 col = global_thread_index();
    if (col >= cols) return;
    acc_t<T> sum = acc_t<T>(0);
    for (u64 r = 0; r < rows; ++r) sum = mul_add(a[r * cols + col], x[r], sum);
    y[col] = from_acc<T>(sum);
}
