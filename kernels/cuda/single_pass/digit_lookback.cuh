// single_pass/digit_lookback.cuh — the decoupled look-back of many counters
// at once: every tile publishes one 32-bit status word per digit (a radix
// sort's 256 digits, a top-k filter's two classes), and each thread of the
// tile looks back over ONE digit's words. The per-digit form of
// single_pass/lookback.cuh (which carries one value per tile), as the
// Onesweep radix sort uses it (Adinets & Merrill 2022).
//
// Status word of (tile, digit): (status << 30) | count, count < 2^30:
//   DIGIT_INVALID   (0)  nothing published yet (the state is zeroed before
//                        the call: the host zeroes it, or the previous
//                        launch on the other half of a double state did);
//   DIGIT_AGGREGATE (1)  count = the tile's own count of the digit;
//   DIGIT_PREFIX    (2)  count = the inclusive count of tiles 0 … tile.
// Status and count share one aligned 32-bit word, written with one
// st.relaxed.gpu and read with one ld.relaxed.gpu (single-copy atomic), so
// a reader sees a whole pair and no fence is needed: nothing else is
// published through it. Counts are at most 2^30 − 1: the host splits the
// input into portions of fewer keys and runs one look-back per portion.
//
// Tile indices come from an atomic counter (dynamic tile assignment), so
// every predecessor of a tile belongs to a block that started earlier and
// never waits on a later one: the look-back cannot deadlock.
//
// Needs TILE_STATUS (the relaxed gpu-scope accesses).
#pragma once

#define DIGIT_INVALID 0u
#define DIGIT_AGGREGATE 1u
#define DIGIT_PREFIX 2u
#define DIGIT_COUNT_MASK 0x3fffffffu

// The word of (tile, digit) in a state of DIGITS words per tile.
template <int DIGITS>
__device__ __forceinline__ u32* digit_status_word(u32* state, u64 tile, u32 digit) {
    return state + tile * (u64)DIGITS + digit;
}

// Publishes `count` for (tile, digit) with `status`.
template <int DIGITS>
__device__ __forceinline__ void digit_publish(u32* state, u64 tile, u32 digit, u32 status,
                                              u32 count) {
    st_relaxed_gpu_u32(digit_status_word<DIGITS>(state, tile, digit),
                       (status << 30) | (count & DIGIT_COUNT_MASK));
}

// The exclusive count of `digit` before `tile` (tiles 0 … tile − 1), by a
// walk back from tile − 1 in windows of WINDOW predecessors: the WINDOW
// status words are read at once (independent loads, one round trip for
// all of them), then taken in order: aggregates are added until an
// inclusive prefix ends the walk; at an unpublished word the walk stops
// and the next window starts there (after a __nanosleep(SPIN_NS) back-off
// when SPIN_NS > 0 and the window made no progress). Predecessors before
// tile 0 read as a prefix of 0. A walk over k aggregates costs ⌈k / WINDOW⌉
// dependent round trips to L2 instead of k; the words read past the
// prefix are wasted reads of L2 (WINDOW · 4 bytes per digit at most). Run
// by one thread per digit; tile 0 returns 0.
template <int DIGITS, int WINDOW = 4, int SPIN_NS = 0>
__device__ __forceinline__ u32 digit_lookback(u32* state, u64 tile, u32 digit) {
    static_assert(WINDOW >= 1 && WINDOW <= 32, "a window of 1 to 32 predecessors");
    u32 exclusive = 0;
    i64 next = (i64)tile - 1;  // the nearest predecessor not yet added
    while (next >= 0) {
        u32 word[WINDOW];
#pragma unroll
        for (int k = 0; k < WINDOW; ++k) {
            const i64 predecessor = next - k;
            word[k] = predecessor >= 0
                          ? ld_relaxed_gpu_u32(digit_status_word<DIGITS>(state, (u64)predecessor, digit))
                          : (DIGIT_PREFIX << 30);
        }
        bool stopped = false;  // an unpublished word or a prefix ended the window
        bool found_prefix = false;
        int taken = 0;
#pragma unroll
        for (int k = 0; k < WINDOW; ++k) {
            if (!stopped) {
                const u32 status = word[k] >> 30;
                if (status == DIGIT_INVALID) {
                    stopped = true;
                } else {
                    exclusive += word[k] & DIGIT_COUNT_MASK;
                    ++taken;
                    if (status == DIGIT_PREFIX) {
                        stopped = true;
                        found_prefix = true;
                    }
                }
            }
        }
        if (found_prefix) break;
        next -= taken;
        if (SPIN_NS > 0 && taken == 0) __nanosleep(SPIN_NS);
    }
    return exclusive;
}

// Zeroes, for the launch after this one, the rows of a state of DIGITS
// words per tile that this block owns: rows tile, tile + num_tiles,
// tile + 2·num_tiles, … below state_rows (so the blocks of a launch of
// num_tiles tiles clear every row of the other half of a double state,
// which the previous launch used and has finished with). Every thread of a
// block of BLOCK threads takes part.
template <int DIGITS, int BLOCK>
__device__ __forceinline__ void digit_state_clear_rows(u32* next_state, u64 tile, u64 num_tiles,
                                                       u64 state_rows) {
    for (u64 row = tile; row < state_rows; row += num_tiles) {
        for (u32 d = threadIdx.x; d < (u32)DIGITS; d += BLOCK) next_state[row * DIGITS + d] = 0u;
    }
}
