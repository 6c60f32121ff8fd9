// single_pass/cluster_prefix.cuh — the one-cluster tile prefix: when the
// whole input fits one thread block cluster (sm_90 and newer, at most 16
// blocks, one tile each, the tile's index = the block's rank), the blocks
// find their exclusive prefixes through distributed shared memory instead
// of the decoupled look-back (single_pass/lookback.cuh): no tile counter,
// no tile state, no global-memory round trip between blocks. The hardware
// schedules a cluster's blocks together, so waiting on each other cannot
// deadlock.
//
// Protocol (every thread of every block of the cluster calls
// one_cluster_prefix once, then cluster_wait() once before its block
// exits):
//   1. thread 0 stores the block's aggregate in its shared `slot`;
//   2. a cluster barrier (release/acquire): every block's slot is visible
//      to every block;
//   3. warp 0, lane l < rank, reads block l's slot through distributed
//      shared memory; a shuffle scan folds the ≤ 31 aggregates in rank
//      order (operands never reordered: any associative Op), and lane 0
//      stores the block's exclusive prefix in `*prefix_slot`;
//   4. every thread arrives on the next cluster barrier (its remote reads
//      are done), then a block barrier hands the prefix to the block.
// The caller's closing cluster_wait() returns once every block has passed
// step 4, so no block's shared memory goes away while another reads it.
//   Steps: one cluster barrier, one remote read per lane of warp 0, one
//   warp scan, one block barrier; bytes: none in global memory.
#pragma once

// The largest cluster the one-cluster grids use (a non-portable size on
// sm_90: the host opts in and asks the driver whether it fits).
#define ONE_CLUSTER_MAX_BLOCKS 16

// Returns the fold of blocks 0 … rank − 1's aggregates in every thread
// (Op::identity() in block 0, which has none). See the header for the
// protocol; `slot` and `prefix_slot` are the caller's shared memory.
template <typename A, typename Op>
__device__ __forceinline__ A one_cluster_prefix(A aggregate, u32 rank, A* slot, A* prefix_slot) {
    if (threadIdx.x == 0) *slot = aggregate;
    cluster_barrier();
    if (threadIdx.x < 32) {
        const u32 lane = threadIdx.x;
        A value = Op::identity();
        if (lane < rank) value = cluster_load<A>(slot, lane);
        const A inclusive = warp_inclusive_scan<A, Op>(value);
        const A prefix = __shfl_sync(PARPRIMS_FULL_WARP, inclusive, rank > 0u ? (int)rank - 1 : 0);
        if (lane == 0u) *prefix_slot = rank > 0u ? prefix : Op::identity();
    }
    cluster_arrive();
    __syncthreads();
    return *prefix_slot;
}
