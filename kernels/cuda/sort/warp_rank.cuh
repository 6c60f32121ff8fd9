// sort/warp_rank.cuh — the stable warp-level ranking by digit that the
// Onesweep digit pass (sort/onesweep.cu) and the one-block sort
// (sort/block_sort.cu) share.
//
// One call ranks one item row of a warp: the 32 lanes each hold one key's
// digit (or SORT_RADIX for a lane without a key). The lanes holding the
// same digit (its peers) are found, the lowest peer adds the group's size to
// the warp-private counter of that digit, and every lane's rank is the
// counter before the add plus its peers in lower lanes. Calling it for item
// rows 0, 1, … of a warp in order ranks the warp's keys of each digit by
// (row, lane): the stable order of a warp-striped layout.
//
// Peer masks: SORT_RANK_BY_MATCH_ANY = 1 uses __match_any_sync; 0 (the
// default) builds the mask from one ballot of the lanes holding keys and
// one ballot per digit bit (`width` of them), the Onesweep paper's
// warp-level multi-split.
//
// Needs COMMON (PARPRIMS_FULL_WARP).
#pragma once

#define SORT_RADIX 256

#ifndef SORT_RANK_BY_MATCH_ANY
#define SORT_RANK_BY_MATCH_ANY 0
#endif

// The lanes of the warp whose `digit` equals this lane's (digit < 2^width,
// or SORT_RADIX for a lane without a key, whose group is the lanes without
// keys). Every lane of the warp calls it with the same `width`.
__device__ __forceinline__ u32 warp_digit_peers(u32 digit, u32 width) {
#if SORT_RANK_BY_MATCH_ANY
    (void)width;
    return __match_any_sync(PARPRIMS_FULL_WARP, digit);
#else
    const u32 with_keys = __ballot_sync(PARPRIMS_FULL_WARP, digit < SORT_RADIX);
    u32 peers = digit < SORT_RADIX ? with_keys : ~with_keys;
#pragma unroll
    for (u32 b = 0; b < 8u; ++b) {
        if (b < width) {  // width is the same in every lane
            const u32 bit = (digit >> b) & 1u;
            const u32 ones = __ballot_sync(PARPRIMS_FULL_WARP, bit != 0u);
            peers &= bit ? ones : ~ones;
        }
    }
    return peers;
#endif
}

// This lane's rank among the warp's keys of `digit` so far: the warp's
// counter of `digit` before this row (warp_counts[digit], SORT_RADIX
// counters private to the warp) plus the lanes below holding the same
// digit; the row's lowest peer adds the row's count of `digit` to the
// counter. A lane without a key (digit == SORT_RADIX) takes part in the
// ballots and gets a meaningless rank. Every lane of the warp calls it;
// it ends with __syncwarp, so the next row sees the counters.
__device__ __forceinline__ u32 warp_rank_digit(u32* warp_counts, u32 digit, u32 width) {
    const u32 lane = threadIdx.x & 31u;
    const u32 peers = warp_digit_peers(digit, width);
    const u32 leader = (u32)__ffs(peers) - 1u;
    u32 before = 0u;
    if (lane == leader && digit < SORT_RADIX) {
        before = warp_counts[digit];
        warp_counts[digit] = before + (u32)__popc(peers);
    }
    before = __shfl_sync(PARPRIMS_FULL_WARP, before, (int)leader);
    const u32 rank = before + (u32)__popc(peers & ((1u << lane) - 1u));
    __syncwarp();
    return rank;
}
