// lookback.cuh — the tile-status protocol of the single-pass decoupled
// look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", NVR-2016-002), for any associative Op, any element
// type of 4 or 8 bytes (scan values, u32/u64 counts for compaction).
//
// Tile t publishes its status and a value:
//   TILE_INVALID   (0)  nothing yet (the state memory is zeroed per call);
//   TILE_AGGREGATE (1)  value = the tile's own reduction;
//   TILE_PREFIX    (2)  value = the inclusive prefix x_0 ⊕ … ⊕ (end of tile t).
// A tile publishes AGGREGATE as soon as it has reduced its items, looks back
// over its predecessors, then publishes PREFIX. Tile indices come from an
// atomic counter (dynamic tile assignment), so tile t's predecessors all
// belong to blocks that started earlier, are resident, and never wait on a
// later tile: the look-back cannot deadlock.
//
// Three encodings, chosen by sizeof(T) (and STATUS8 for 8-byte T), each
// correct by construction under the PTX memory model:
//
// * 4-byte T — TileStatusPacked: ONE 64-bit word per tile, status in the
//   high 32 bits, the value's bits in the low 32, written with one
//   st.relaxed.gpu.u64 and read with one ld.relaxed.gpu.u64. An aligned
//   64-bit relaxed access is single-copy atomic ("morally strong" at gpu
//   scope), so a reader sees a whole (status, value) pair as some writer
//   stored it: no fence is needed, nothing else is published.
//
// * 8-byte T — TileStatusSplit: a u32 status array and two value arrays,
//   one for aggregates and one for inclusive prefixes (each slot written at
//   most once per call). Writer: st.relaxed value → fence.acq_rel.gpu →
//   st.relaxed status (a release pattern). Reader: ld.relaxed status →
//   fence.acq_rel.gpu → ld.relaxed of the slot the status names (an acquire
//   pattern). This is message passing with fences: if the reader observes
//   the status, the writer's release pattern synchronises with the reader's
//   acquire pattern, so the value store happens before the value load, and
//   as the slot is written once the load returns exactly that value. Separate slots per status matter: with one value
//   slot, a reader that saw AGGREGATE could read the later PREFIX value.
//   (CUB uses one 16-byte {status, value} vector access here; the PTX model
//   does not promise that vector accesses are single-copy atomic, so we do
//   not rely on it.) All value/status accesses are ld/st.relaxed.gpu, never
//   plain loads, so no stale L1 line can be read.
//
// State layout (u64 words; the host mirrors it in lookback.rs,
// `tile_state_words`): word 0 = the tile counter, word 1 = padding (keeps
// what follows 16-byte aligned), then the status region:
//   packed: num_tiles words;
//   split:  ⌈num_tiles / 2⌉ words of u32 statuses, num_tiles aggregate
//           words, num_tiles prefix words;
//   packed128: 2·num_tiles words (16-byte aligned: the region starts at
//           byte 16 of an allocation aligned to at least 256 bytes);
//   packed, 16-byte stride (4-byte values, STATUS8 = 1): 2·num_tiles words,
//           the tile's word first, the second unused.
//
// Using it (one block per tile, as scan_lookback.cu does):
//
//   u64* state = ...;                          // tile_state_words() zeroed u64s
//   typedef typename TileStatusFor<T>::type Status;
//   __shared__ u64 tile_slot;
//   if (threadIdx.x == 0) tile_slot = lookback_next_tile(state);
//   __syncthreads();
//   const u64 tile = tile_slot;
//   ... reduce the tile to `aggregate` (any associative Op) ...
//   if (threadIdx.x < 32) {                    // one whole warp
//       Status status(lookback_status_region(state), num_tiles);
//       T exclusive_prefix;
//       if (tile == 0) {
//           if (threadIdx.x == 0) status.publish(0, TILE_PREFIX, aggregate);
//       } else {
//           if (threadIdx.x == 0) status.publish(tile, TILE_AGGREGATE, aggregate);
//           exclusive_prefix = warp_lookback<T, Op, Status>(status, tile);
//           if (threadIdx.x == 0)
//               status.publish(tile, TILE_PREFIX, Op::combine(exclusive_prefix, aggregate));
//       }
//       ... hand exclusive_prefix to the block through shared memory ...
//   }
//
// * 8-byte T, alternative — TileStatusPacked128 (STATUS8 = 1): ONE 16-byte
//   word per tile, the value's bits in the low 8 bytes and the status in the
//   high 8, written with one st.relaxed.gpu.global.b128 and read with one
//   ld.relaxed.gpu.global.b128 (PTX ISA 8.3+, sm_70+). The memory-model
//   argument is the packed one above: .b128 is a scalar type (unlike the
//   .v2.u64 vector access CUB uses, which the model splits into two 8-byte
//   accesses in unspecified order), so an aligned relaxed .gpu access is one
//   morally strong operation and a reader sees a whole (status, value) pair
//   as one writer stored it. No fence on either side, one memory operation
//   per publish and per inspected predecessor (the split encoding needs
//   value store, fence, status store per publish and a fence per window).
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
//
// For compaction counts: T = u32 (packed word) or u64 (split), Op = a sum
// functor; any Op with combine/identity works.
#pragma once

#define TILE_INVALID 0u
#define TILE_AGGREGATE 1u
#define TILE_PREFIX 2u

// Relaxed gpu-scope accesses (sm_70+): atomic for aligned 32/64-bit words,
// never served from a stale L1 line.
__device__ __forceinline__ u64 ld_relaxed_gpu_u64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_gpu_u64(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u32 ld_relaxed_gpu_u32(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_gpu_u32(u32* p, u32 v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// 128-bit relaxed gpu-scope accesses (PTX ISA 8.3+, sm_70+): one scalar
// .b128 access each (single-copy atomic, see the header), split into or
// built from two 64-bit registers. `p` must be 16-byte aligned.
__device__ __forceinline__ void ld_relaxed_gpu_b128(const u64* p, u64& lo, u64& hi) {
    asm volatile(
        "{\n\t.reg .b128 word;\n\t"
        "ld.relaxed.gpu.global.b128 word, [%2];\n\t"
        "mov.b128 {%0, %1}, word;\n\t}"
        : "=l"(lo), "=l"(hi)
        : "l"(p)
        : "memory");
}
__device__ __forceinline__ void st_relaxed_gpu_b128(u64* p, u64 lo, u64 hi) {
    asm volatile(
        "{\n\t.reg .b128 word;\n\t"
        "mov.b128 word, {%1, %2};\n\t"
        "st.relaxed.gpu.global.b128 [%0], word;\n\t}" ::"l"(p),
        "l"(lo), "l"(hi)
        : "memory");
}
// fence.acq_rel.gpu: with a relaxed store after it, a release pattern; with
// a relaxed load before it, an acquire pattern (PTX ISA, memory consistency
// model). Lighter than __threadfence() (fence.sc.gpu), and all that message
// passing needs.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Bit casts between T and an unsigned word of the same size.
template <typename T, typename U>
__device__ __forceinline__ U bits_of(T value) {
    static_assert(sizeof(T) == sizeof(U), "bit cast between types of different sizes");
    union {
        T t;
        U u;
    } cast;
    cast.t = value;
    return cast.u;
}
template <typename T, typename U>
__device__ __forceinline__ T from_bits(U word) {
    static_assert(sizeof(T) == sizeof(U), "bit cast between types of different sizes");
    union {
        U u;
        T t;
    } cast;
    cast.u = word;
    return cast.t;
}

// 4-byte values: (status << 32) | value bits, one word per tile, every
// STRIDE-th word (STRIDE = 2: one tile per 16 bytes of state, a tuning
// option that halves the tiles sharing an L2 sector).
template <typename T, int STRIDE = 1>
struct TileStatusPacked {
    static_assert(sizeof(T) == 4, "TileStatusPacked holds 4-byte values");
    static_assert(STRIDE == 1 || STRIDE == 2, "STRIDE is 1 or 2 words");
    u64* words;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return STRIDE * num_tiles; }
    __device__ __forceinline__ TileStatusPacked(u64* region, u64 /*num_tiles*/) : words(region) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_u64(words + STRIDE * tile,
                           ((u64)status << 32) | (u64)bits_of<T, u32>(value));
    }
    // Status and value of `tile`, read together.
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        const u64 word = ld_relaxed_gpu_u64(words + STRIDE * tile);
        value = from_bits<T, u32>((u32)word);
        return (u32)(word >> 32);
    }
    // Called once after every inspected status is no longer INVALID, before
    // the finish_read calls: nothing to order, the value came with the status.
    __device__ __forceinline__ void acquire() const {}
    // Nothing more to read, the value came with the status.
    __device__ __forceinline__ void finish_read(u64 /*tile*/, u32 /*status*/, T& /*value*/) const {}
};

// 8-byte values: status array + write-once aggregate and prefix slots.
template <typename T>
struct TileStatusSplit {
    static_assert(sizeof(T) == 8, "TileStatusSplit holds 8-byte values");
    u32* statuses;
    u64* aggregates;
    u64* prefixes;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) {
        return (num_tiles + 1) / 2 + 2 * num_tiles;
    }
    __device__ __forceinline__ TileStatusSplit(u64* region, u64 num_tiles)
        : statuses(reinterpret_cast<u32*>(region)),
          aggregates(region + (num_tiles + 1) / 2),
          prefixes(region + (num_tiles + 1) / 2 + num_tiles) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        u64* slot = (status == TILE_PREFIX ? prefixes : aggregates) + tile;
        st_relaxed_gpu_u64(slot, bits_of<T, u64>(value));
        fence_acq_rel_gpu();  // release: the value before the status
        st_relaxed_gpu_u32(statuses + tile, status);
    }
    // The status only; the value is read by finish_read once it is known
    // to be published.
    __device__ __forceinline__ u32 read(u64 tile, T& /*value*/) const {
        return ld_relaxed_gpu_u32(statuses + tile);
    }
    // One fence for all the statuses the lane read (acquire: the status
    // loads before the value loads that follow).
    __device__ __forceinline__ void acquire() const { fence_acq_rel_gpu(); }
    __device__ __forceinline__ void finish_read(u64 tile, u32 status, T& value) const {
        const u64* slot = (status == TILE_PREFIX ? prefixes : aggregates) + tile;
        value = from_bits<T, u64>(ld_relaxed_gpu_u64(slot));
    }
};

// 8-byte values: one 16-byte {value, status} word per tile.
template <typename T>
struct TileStatusPacked128 {
    static_assert(sizeof(T) == 8, "TileStatusPacked128 holds 8-byte values");
    u64* words;  // 2 per tile: value bits, then status

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return 2 * num_tiles; }
    __device__ __forceinline__ TileStatusPacked128(u64* region, u64 /*num_tiles*/) : words(region) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_b128(words + 2 * tile, bits_of<T, u64>(value), (u64)status);
    }
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        u64 lo, hi;
        ld_relaxed_gpu_b128(words + 2 * tile, lo, hi);
        value = from_bits<T, u64>(lo);
        // Every bit of the word is used (hi's upper half is always 0, so
        // folding it in changes nothing): ptxas keeps a b128 load whose bits
        // all matter as one 128-bit access, but it split one whose value was
        // partly unused into two 32-bit loads on sm_90 (4-byte values
        // widened into this word, 2026-11-24: torn reads, wrong prefixes).
        // scan's `status_loads_stay_single_accesses` checks the SASS.
        return (u32)hi | (u32)(hi >> 32);
    }
    __device__ __forceinline__ void acquire() const {}
    __device__ __forceinline__ void finish_read(u64 /*tile*/, u32 /*status*/, T& /*value*/) const {}
};

// The encoding for T: 4-byte values packed in 64 bits, one word per tile
// (STATUS8 = 0) or one per 16 bytes (STATUS8 = 1); 8-byte values split
// (STATUS8 = 0) or packed in 128 bits (STATUS8 = 1).
template <typename T, int STATUS8 = 0, int SIZE = (int)sizeof(T)>
struct TileStatusFor;
template <typename T>
struct TileStatusFor<T, 0, 4> {
    typedef TileStatusPacked<T> type;
};
template <typename T>
struct TileStatusFor<T, 1, 4> {
    typedef TileStatusPacked<T, 2> type;
};
template <typename T>
struct TileStatusFor<T, 0, 8> {
    typedef TileStatusSplit<T> type;
};
template <typename T>
struct TileStatusFor<T, 1, 8> {
    typedef TileStatusPacked128<T> type;
};

// The tile counter: word 0 of the state.
__device__ __forceinline__ u64 lookback_next_tile(u64* state) {
    return (u64)atomicAdd(reinterpret_cast<unsigned long long*>(state), 1ull);
}
// The status region: from word 2 of the state.
__device__ __forceinline__ u64* lookback_status_region(u64* state) { return state + 2; }

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
