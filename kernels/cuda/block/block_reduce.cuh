// block/block_reduce.cuh — block-wide reduction of one value per thread, for
// commutative operators (butterfly shuffles combine lanes out of index order).
//
//   Warp butterfly (5 shuffles), the warp results through shared memory,
//   thread 0 folds them: work O(BLOCK_THREADS) combines, O(log 32 + WARPS)
//   steps, one __syncthreads, WARPS·sizeof(T) bytes of shared memory
//   (`scratch`, BLOCK_THREADS / 32 entries), no bank conflicts.
//   The result is valid in thread 0 only. Every thread of the block calls it.
//   Used by compaction's count kernel (compact/count.cu, sum_op<u64>).
#pragma once

template <typename T, typename Op, int BLOCK_THREADS>
__device__ __forceinline__ T block_reduce_commutative(T value, T* scratch) {
    static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS >= 32 && BLOCK_THREADS <= 1024,
                  "BLOCK_THREADS must be a multiple of 32 from 32 to 1024");
    constexpr int WARPS = BLOCK_THREADS / 32;
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1)
        value = Op::combine(value, __shfl_xor_sync(PARPRIMS_FULL_WARP, value, delta));
    if ((threadIdx.x & 31u) == 0u) scratch[threadIdx.x >> 5] = value;
    __syncthreads();
    T total = Op::identity();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int w = 0; w < WARPS; ++w) total = Op::combine(total, scratch[w]);
    }
    return total;
}
