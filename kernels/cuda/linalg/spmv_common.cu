// spmv_common.cu — pieces every CSR SpMV kernel shares: the sum functor the
// row folds use, and the store of a finished row, y[r] = α·v + β·y[r] (y is
// not read when β = 0, so an uninitialised y is fine then).
//
// CSR: row r holds the non-zeros [offsets[r], offsets[r + 1]) of `cols`
// (i32 column indices) and `vals`; Off is u32 or u64. Duplicated columns are
// summed like any other non-zero. Float multiply-adds may be contracted to
// FMA (NVRTC's default). x is read through the read-only data cache (__ldg);
// values and column indices, read once, with the streaming hint (__ldcs:
// evict first), so that they do not push x out of L2.
#pragma once

template <typename T>
struct spmv_sum {
    static __device__ __forceinline__ T identity() { return (T)0; }
    static __device__ __forceinline__ T combine(T a, T b) { return a + b; }
};

template <typename T>
__device__ __forceinline__ void spmv_store_row(T* y, u64 row, T value, T alpha, T beta) {
    y[row] = beta == (T)0 ? alpha * value : alpha * value + beta * y[row];
}

// vals[k] · x[cols[k]].
template <typename T>
__device__ __forceinline__ T spmv_product(const i32* __restrict__ cols, const T* __restrict__ vals,
                                          const T* __restrict__ x, u64 k) {
    return __ldcs(&vals[k]) * __ldg(&x[(u32)__ldcs(&cols[k])]);
}
