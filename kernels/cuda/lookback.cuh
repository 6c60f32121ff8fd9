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
// Two encodings, chosen by sizeof(T), both correct by construction under the
// PTX memory model:
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
//           words, num_tiles prefix words.
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

// 4-byte values: (status << 32) | value bits, one word per tile.
template <typename T>
struct TileStatusPacked {
    static_assert(sizeof(T) == 4, "TileStatusPacked holds 4-byte values");
    u64* words;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return num_tiles; }
    __device__ __forceinline__ TileStatusPacked(u64* region, u64 /*num_tiles*/) : words(region) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_u64(words + tile, ((u64)status << 32) | (u64)bits_of<T, u32>(value));
    }
    // Status and value of `tile`, read together.
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        const u64 word = ld_relaxed_gpu_u64(words + tile);
        value = from_bits<T, u32>((u32)word);
        return (u32)(word >> 32);
    }
    // Called after every lane's status is no longer INVALID: nothing more to
    // read, the value came with the status.
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
    __device__ __forceinline__ void finish_read(u64 tile, u32 status, T& value) const {
        fence_acq_rel_gpu();  // acquire: the status before the value
        const u64* slot = (status == TILE_PREFIX ? prefixes : aggregates) + tile;
        value = from_bits<T, u64>(ld_relaxed_gpu_u64(slot));
    }
};

// The encoding for T.
template <typename T, int SIZE = (int)sizeof(T)>
struct TileStatusFor;
template <typename T>
struct TileStatusFor<T, 4> {
    typedef TileStatusPacked<T> type;
};
template <typename T>
struct TileStatusFor<T, 8> {
    typedef TileStatusSplit<T> type;
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
// Window: lane L inspects predecessor (window_end − 31 + L), so lane 31 is
// the nearest. Lanes spin (re-reading only their own word) while any lane of
// the window is INVALID. Then __ballot_sync finds the nearest PREFIX; the
// window is folded from that lane to lane 31 in index order (a segmented
// shuffle scan: aggregates after the prefix, never reordered), and if no
// PREFIX was in the window the fold of all 32 aggregates is prepended to the
// running value and the window moves 32 tiles back. Predecessor indices
// below 0 read as PREFIX; they are never the nearest PREFIX once the window
// is complete, because tile 0 publishes PREFIX (never AGGREGATE) and sits
// above them.
//   Steps per window: 1 load per lane (+ spins), 1 ballot, 5 shuffles.
template <typename T, typename Op, typename Status>
__device__ __forceinline__ T warp_lookback(const Status& status, u64 tile) {
    const int lane = warp_lane();
    T running = Op::identity();  // replaced by the first window's fold
    bool have_running = false;
    i64 window_end = (i64)tile - 1;
    while (true) {
        const i64 predecessor = window_end - 31 + lane;
        T value = Op::identity();
        u32 state = TILE_PREFIX;
        if (predecessor >= 0) state = status.read((u64)predecessor, value);
        while (__any_sync(PARPRIMS_FULL_WARP, state == TILE_INVALID)) {
            if (state == TILE_INVALID) state = status.read((u64)predecessor, value);
        }
        if (predecessor >= 0) status.finish_read((u64)predecessor, state, value);
        const u32 prefix_lanes = __ballot_sync(PARPRIMS_FULL_WARP, state == TILE_PREFIX);
        const int first_lane = prefix_lanes != 0u ? 31 - __clz(prefix_lanes) : 0;
        const T folded = warp_inclusive_scan_from<T, Op>(value, first_lane);
        const T window_total = __shfl_sync(PARPRIMS_FULL_WARP, folded, 31);
        running = have_running ? Op::combine(window_total, running) : window_total;
        have_running = true;
        if (prefix_lanes != 0u) return running;
        window_end -= 32;
    }
}
