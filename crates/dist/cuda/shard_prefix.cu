// The cross-shard part of a distributed scan: each rank has scanned its own
// shard; these kernels turn the local scans into the global one.
//
//   shard_total   one thread: the rank's shard total (its last inclusive
//                 value; for an exclusive scan the last output combined with
//                 the last input), written to one element for the all-gather.
//   shard_prefix  one thread: the exclusive prefix of the gathered totals
//                 before this rank, totals[0] op ... op totals[rank-1], folded
//                 in rank order (the identity for rank 0, which never applies
//                 it), so non-commutative associative operators give the
//                 global scan.
//   apply_prefix  out[i] = prefix op out[i] for the whole shard: 2 * n * sizeof(T)
//                 bytes moved, ITEMS_PER_THREAD items per thread, block-
//                 strided so each load instruction of a warp is one
//                 contiguous segment.
//
// Templated on the value type T and an operator functor Op (identity(),
// combine(a, b)); the grid may spill into y (linear_block_index()).

template <typename T, typename Op>
__device__ __forceinline__ void shard_total(const T* scanned, const T* input, T* total,
                                            u64 n, int exclusive, T empty_total) {
    if (threadIdx.x != 0 || linear_block_index() != 0) {
        return;
    }
    if (n == 0) {
        *total = empty_total;
    } else if (exclusive) {
        *total = Op::combine(scanned[n - 1], input[n - 1]);
    } else {
        *total = scanned[n - 1];
    }
}

template <typename T, typename Op>
__device__ __forceinline__ void shard_prefix(const T* totals, T* prefix, u32 rank) {
    if (threadIdx.x != 0 || linear_block_index() != 0) {
        return;
    }
    // Folded from totals[0], not from the identity, so an operator whose
    // identity is only a right identity still gives the single-GPU result.
    T running = totals[0];
    for (u32 r = 1; r < rank; ++r) {
        running = Op::combine(running, totals[r]);
    }
    *prefix = rank == 0 ? Op::identity() : running;
}

template <typename T, typename Op, int ITEMS_PER_THREAD>
__device__ __forceinline__ void apply_prefix(T* data, const T* prefix, u64 n) {
    const T offset = *prefix;
    const u64 tile = (u64)blockDim.x * ITEMS_PER_THREAD;
    const u64 base = linear_block_index() * tile + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
        const u64 i = base + (u64)k * blockDim.x;
        if (i < n) {
            data[i] = Op::combine(offset, data[i]);
        }
    }
}
