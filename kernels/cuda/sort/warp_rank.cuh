// sort/warp_rank.cuh — the stable warp-level ranking by digit that the
// Onesweep digit pass (sort/onesweep.cu) and the one-block sort
// (sort/block_sort.cu) share.
//
// One item row of a warp is ranked in two steps, which a caller may run
// for all of its rows in turn (step 1 of every row, then step 2 of every
// row, so that the independent peer searches of the rows overlap):
//   1. warp_digit_peers: the lanes holding the same digit as this lane
//      (its peers), found with no memory traffic;
//   2. warp_rank_from_peers: this lane's rank = the warp-private counter
//      of its digit before the row plus its peers in lower lanes; every
//      peer then stores the counter plus the row's count of the digit
//      (the same value, so which store lands does not matter).
// Ranking rows 0, 1, … of a warp in order ranks the warp's keys of each
// digit by (row, lane): the stable order of a warp-striped layout.
//
// Peer masks: SORT_RANK_BY_MATCH_ANY = 1 uses __match_any_sync; 0 (the
// default) ANDs one ballot per digit bit, each taken as is where this
// lane's bit is set and inverted where it is clear (the Onesweep paper's
// warp-level multi-split; four instructions a bit). A digit is below 2^8,
// so its bits past the pass's width are zero in every lane and need no
// special case.
//
// warp_rank_by_shared_masks does both steps of a row at once with a third
// way of finding the peers (the digit pass's SORT_RANK_BY_SHARED_MASKS):
// every lane ORs its own bit into its digit's word of a warp-private table
// of SORT_RADIX masks in shared memory, and after the warp's sync reads the
// word back: its peers, in one shared atomic and one load instead of eight
// ballots (CUB's WARP_MATCH_ATOMIC_OR). The peers then clear the word for
// the next row.
//
// Needs COMMON (PARPRIMS_FULL_WARP).
#pragma once

#define SORT_RADIX 256

#ifndef SORT_RANK_BY_MATCH_ANY
#define SORT_RANK_BY_MATCH_ANY 0
#endif

// The ballot of bit `bit` of `digit` over the warp, inverted in lanes
// whose own bit is clear: the lanes that agree with this lane on the bit.
__device__ __forceinline__ u32 warp_agreeing_lanes(u32 digit, u32 bit) {
    u32 agree;
    asm("{\n\t.reg .pred p;\n\t.reg .b32 t;\n\t"
        "and.b32 t, %1, %2;\n\t"
        "setp.ne.u32 p, t, 0;\n\t"
        "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t"
        "@!p not.b32 %0, %0;\n\t}"
        : "=r"(agree)
        : "r"(digit), "r"(bit));
    return agree;
}

// The lanes of the warp whose digit equals this lane's. `digit` < 2^8 in
// a lane holding a key; SORT_RADIX in a lane without one, which only a
// row with such lanes may have, and then `partial` must be true (the
// lanes without keys are then each other's peers). Every lane of the warp
// calls it with the same `partial`.
__device__ __forceinline__ u32 warp_digit_peers(u32 digit, bool partial) {
#if SORT_RANK_BY_MATCH_ANY
    (void)partial;
    return __match_any_sync(PARPRIMS_FULL_WARP, digit);
#else
    u32 peers = warp_agreeing_lanes(digit, 1u);
#pragma unroll
    for (u32 b = 1; b < 8u; ++b) peers &= warp_agreeing_lanes(digit, 1u << b);
    if (partial) peers &= warp_agreeing_lanes(digit, (u32)SORT_RADIX);
    return peers;
#endif
}

// This lane's rank among the warp's keys of `digit` so far, from its
// `peers` (warp_digit_peers of the same row): the warp's counter of
// `digit` before this row (warp_counts[digit], SORT_RADIX counters private
// to the warp) plus the peers in lower lanes; the counter then grows by
// the row's count of `digit`. A lane without a key (digit == SORT_RADIX)
// touches no counter and gets a meaningless rank. Every lane of the warp
// calls it, rows in order. EVERY_LANE_HAS_KEY: the caller knows that no
// lane of the row is without a key (a full tile), so the check is left out.
template <bool EVERY_LANE_HAS_KEY = false>
__device__ __forceinline__ u32 warp_rank_from_peers(u32* warp_counts, u32 digit, u32 peers) {
    const u32 lane = threadIdx.x & 31u;
    const bool has_key = EVERY_LANE_HAS_KEY || digit < SORT_RADIX;
    const u32 before = has_key ? warp_counts[digit] : 0u;
    __syncwarp();  // every peer has read the counter before one writes it
    if (has_key) warp_counts[digit] = before + (u32)__popc(peers);
    __syncwarp();  // the next row reads the grown counters
    return before + (u32)__popc(peers & ((1u << lane) - 1u));
}

// Both steps for one row (callers that rank one row at a time).
__device__ __forceinline__ u32 warp_rank_digit(u32* warp_counts, u32 digit, bool partial) {
    return warp_rank_from_peers(warp_counts, digit, warp_digit_peers(digit, partial));
}

// One row ranked through a warp-private table of SORT_RADIX peer masks in
// shared memory (`warp_masks`, all zero on entry and again on return):
// each lane with a key ORs its bit into its digit's mask, reads the mask
// back after the warp's sync (its peers), then takes its rank from the
// digit's counter as warp_rank_from_peers does; the peers clear the mask
// and grow the counter after a second sync (every peer stores the same
// values). `digit` as for warp_digit_peers; EVERY_LANE_HAS_KEY as for
// warp_rank_from_peers. Every lane of the warp calls it, rows in order.
template <bool EVERY_LANE_HAS_KEY = false>
__device__ __forceinline__ u32 warp_rank_by_shared_masks(u32* warp_counts, u32* warp_masks, u32 digit) {
    const u32 lane = threadIdx.x & 31u;
    const bool has_key = EVERY_LANE_HAS_KEY || digit < SORT_RADIX;
    if (has_key) atomicOr(&warp_masks[digit], 1u << lane);
    __syncwarp();  // every lane's bit is in before one reads its mask
    u32 peers = 0u;
    u32 before = 0u;
    if (has_key) {
        peers = warp_masks[digit];
        before = warp_counts[digit];
    }
    __syncwarp();  // every peer has read the mask and counter before one writes them
    if (has_key) {
        warp_masks[digit] = 0u;
        warp_counts[digit] = before + (u32)__popc(peers);
    }
    __syncwarp();  // the next row ORs into cleared masks and reads grown counters
    return before + (u32)__popc(peers & ((1u << lane) - 1u));
}
