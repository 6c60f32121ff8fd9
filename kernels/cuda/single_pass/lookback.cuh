// single_pass/lookback.cuh — the decoupled look-back over the tile state of
// single_pass/tile_status.cuh, for any associative Op and any Status
// encoding: written once, used by the scan (scan/lookback.cu), compaction
// (compact/single_pass.cu) and every later single-pass primitive.
//
// Window width: warp_lookback<..., WIDTH> inspects 32·WIDTH predecessors per
// round (WIDTH consecutive tiles per lane, loads independent), so a tile far
// from the nearest inclusive prefix needs WIDTH times fewer dependent rounds.
// Delays (the idea CUB's tuned "delay constructors" use on sm_80/sm_90):
// START_NS > 0 sleeps once, after the tile has published its AGGREGATE and
// before the first read of a predecessor, so that the nearest predecessors
// have had time to publish (ideally their PREFIX: one window, one round trip)
// instead of being polled while still loading; SPIN_NS > 0 sleeps
// __nanosleep(SPIN_NS) between re-reads of unpublished predecessors. Both
// cut the polling traffic that hundreds of resident look-back warps aim at
// the same few L2 lines, and both apply only when `delays` is true (the
// kernels pass num_tiles >= LOOKBACK_DELAY_MIN_TILES: a small grid has few
// tiles in flight, little contention, and would only lose latency).
#pragma once

// The look-back, run by all 32 lanes of ONE warp of the block that owns
// `tile` (tile >= 1). Returns, in every lane, the exclusive prefix of the
// tile: x_0 ⊕ … ⊕ (end of tile − 1), i.e. the combination of everything the
// predecessors published, in index order.
//
// Window: 32·WIDTH predecessors ending at window_end; lane L inspects the
// WIDTH consecutive predecessors window_end − 32·WIDTH + 1 + L·WIDTH + j,
// j = 0 … WIDTH−1, so lane 31's last one is the nearest. Lanes spin
// (re-reading only their own unpublished words, with an optional
// __nanosleep back-off) while any predecessor of the window is INVALID.
// Each lane then folds its WIDTH values from its nearest PREFIX (if any) to
// its end, in index order; __ballot_sync finds the nearest lane holding a
// PREFIX; the lanes are folded from that lane to lane 31 in index order (a
// segmented shuffle scan: aggregates after the prefix, never reordered), and
// if no PREFIX was in the window the fold of the whole window is prepended
// to the running value and the window moves 32·WIDTH tiles back.
// Predecessor indices below 0 read as PREFIX with the identity; they are
// never the nearest PREFIX once the window is complete, because tile 0
// publishes PREFIX (never AGGREGATE) and sits above them (a lane holding
// negative indices and real ones holds tile 0 too).
//   Steps per window: WIDTH independent loads per lane (+ spins),
//   WIDTH − 1 combines, 1 ballot, 5 shuffles.
template <typename T, typename Op, typename Status, int WIDTH = 1, int SPIN_NS = 0,
          int START_NS = 0>
__device__ __forceinline__ T warp_lookback(const Status& status, u64 tile, bool delays = true) {
    static_assert(WIDTH >= 1 && WIDTH <= 8, "WIDTH must be 1 to 8");
    const int lane = warp_lane();
    if (START_NS > 0 && delays) __nanosleep(START_NS);
    T running = Op::identity();  // replaced by the first window's fold
    bool have_running = false;
    i64 window_end = (i64)tile - 1;
    while (true) {
        const i64 first = window_end - 32 * WIDTH + 1 + (i64)lane * WIDTH;
        T value[WIDTH];
        u32 state[WIDTH];
        bool waiting = false;
#pragma unroll
        for (int j = 0; j < WIDTH; ++j) {
            value[j] = Op::identity();
            state[j] = TILE_PREFIX;
            if (first + j >= 0) state[j] = status.read((u64)(first + j), value[j]);
            waiting |= state[j] == TILE_INVALID;
        }
        while (__any_sync(PARPRIMS_FULL_WARP, waiting)) {
            if (SPIN_NS > 0 && delays) __nanosleep(SPIN_NS);
            waiting = false;
#pragma unroll
            for (int j = 0; j < WIDTH; ++j) {
                if (state[j] == TILE_INVALID) state[j] = status.read((u64)(first + j), value[j]);
                waiting |= state[j] == TILE_INVALID;
            }
        }
        status.acquire();
        // The lane's nearest PREFIX (highest j), or -1.
        int prefix_j = -1;
#pragma unroll
        for (int j = 0; j < WIDTH; ++j) {
            if (first + j >= 0) status.finish_read((u64)(first + j), state[j], value[j]);
            if (state[j] == TILE_PREFIX) prefix_j = j;
        }
        // Fold value[max(prefix_j, 0) .. WIDTH−1] in index order.
        T lane_value = value[0];
#pragma unroll
        for (int j = 1; j < WIDTH; ++j)
            lane_value = j <= prefix_j ? value[j] : Op::combine(lane_value, value[j]);
        const u32 prefix_lanes = __ballot_sync(PARPRIMS_FULL_WARP, prefix_j >= 0);
        const int first_lane = prefix_lanes != 0u ? 31 - __clz(prefix_lanes) : 0;
        const T folded = warp_inclusive_scan_from<T, Op>(lane_value, first_lane);
        const T window_total = __shfl_sync(PARPRIMS_FULL_WARP, folded, 31);
        running = have_running ? Op::combine(window_total, running) : window_total;
        have_running = true;
        if (prefix_lanes != 0u) return running;
        window_end -= 32 * WIDTH;
    }
}

// A tile's publication of its own reduction, as early as possible (its
// successors may be waiting): tile 0 publishes its inclusive PREFIX (its
// aggregate is its prefix), every other tile its AGGREGATE. One thread.
template <typename T, typename Status>
__device__ __forceinline__ void single_pass_publish_aggregate(Status& status, u64 tile, T aggregate) {
    status.publish(tile, tile == 0 ? TILE_PREFIX : TILE_AGGREGATE, aggregate);
}

// After single_pass_publish_aggregate: the look-back of `tile` and the
// publication of its inclusive PREFIX. Called by all 32 lanes of ONE warp;
// returns the tile's exclusive prefix in every lane (Op::identity() for
// tile 0, which has nothing to look back at and published its PREFIX with
// its aggregate).
template <typename T, typename Op, typename Status, int WIDTH = 1, int SPIN_NS = 0, int START_NS = 0>
__device__ __forceinline__ T single_pass_prefix(Status& status, u64 tile, T aggregate,
                                                bool delays = true) {
    if (tile == 0) return Op::identity();
    const T exclusive = warp_lookback<T, Op, Status, WIDTH, SPIN_NS, START_NS>(status, tile, delays);
    if (warp_lane() == 0) status.publish(tile, TILE_PREFIX, Op::combine(exclusive, aggregate));
    return exclusive;
}
