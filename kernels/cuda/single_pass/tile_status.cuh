// single_pass/tile_status.cuh — the tile state of every single-pass
// algorithm with decoupled look-back (Merrill & Garland, "Single-pass
// Parallel Prefix Scan with Decoupled Look-back", NVR-2016-002): the tile
// counter, the per-tile {status, value} words and how they are published
// and read. Templated on the value type T (4 or 8 bytes), so the same
// state carries a scan's running value, compaction's kept counts (u64),
// and later a (flag, value) pair or radix digit counts. The look-back that
// reads it is single_pass/lookback.cuh. (CUB's ScanTileState.)
//
// Tile t publishes its status and a value:
//   TILE_INVALID   (0)  nothing yet in this call;
//   TILE_AGGREGATE (1)  value = the tile's own reduction;
//   TILE_PREFIX    (2)  value = the inclusive prefix x_0 ⊕ … ⊕ (end of tile t).
//
// Epochs: the state is reused from call to call without being cleared. The
// host gives every call on a state an epoch (1 to 2^30 − 1, one more than
// the last call's; gpu_core::single_pass::with_tile_state) and a status is
// stored as the tag (epoch << 2) | status. A reader decodes a tag of another
// epoch, a previous call's or the zeroed memory's 0, as TILE_INVALID. When
// the epochs run out, or the state's layout changes, the host zeroes the
// state once and starts again at 1. Words 0 and 1 of the state are two tile
// counters: a call draws tiles from counter (epoch & 1) and one thread of
// its grid zeroes the other, which the previous call used (it has finished:
// calls on one state are stream-ordered) and the next call draws from.
// A tile publishes AGGREGATE as soon as it has reduced its items (tile 0
// publishes PREFIX at once), looks back over its predecessors, then
// publishes PREFIX. Tile indices come from an atomic counter (dynamic tile
// assignment), so tile t's predecessors all belong to blocks that started
// earlier, are resident, and never wait on a later tile: the look-back
// cannot deadlock.
//
// ONE status encoding per element width, the one the scan measured best
// (H100, 2^28 elements; figures in docs/tuning.md), selected by STATUS8 = 1
// (gpu_core::single_pass::StatusEncoding::Packed, every default policy):
//
// * 4-byte T — TileStatusPacked<T, 2>: ONE 64-bit word per tile, status in
//   the high 32 bits, the value's bits in the low 32, at a 16-byte stride
//   (one tile per 16 bytes of state: half as many tiles share an L2 sector
//   that successors poll as with an 8-byte stride), written with one
//   st.relaxed.gpu.u64 and read with one ld.relaxed.gpu.u64. An aligned
//   64-bit relaxed access is single-copy atomic ("morally strong" at gpu
//   scope), so a reader sees a whole (status, value) pair as some writer
//   stored it: no fence is needed, nothing else is published. (A 4-byte
//   value widened into a 128-bit word was tried first: ptxas split its load
//   into two 32-bit loads and the H100 returned torn pairs.)
//
// * 8-byte T — TileStatusPacked128: ONE 16-byte word per tile, the value's
//   bits in the low 8 bytes and the status in the high 8, written with one
//   st.relaxed.gpu.global.b128 and read with one ld.relaxed.gpu.global.b128
//   (PTX ISA 8.3+, sm_70+). .b128 is a scalar type (unlike the .v2.u64
//   vector access CUB uses, which the model splits into two 8-byte accesses
//   in unspecified order), so an aligned relaxed .gpu access is one morally
//   strong operation and a reader sees a whole (status, value) pair as one
//   writer stored it. No fence on either side.
//
// scan's and compaction's `status_loads_stay_single_accesses` tests read
// the sm_90 SASS and check that every status load stays one 64- or 128-bit
// access.
//
// The measured alternatives stay selectable for tuning sweeps and the
// protocol tests (STATUS8 = 0, StatusEncoding::Compact): 4-byte values in
// the 64-bit word at an 8-byte stride (TileStatusPacked<T, 1>), and 8-byte
// values split (TileStatusSplit): a u32 status array and two write-once
// value arrays (aggregates, inclusive prefixes). Writer: st.relaxed value →
// fence.acq_rel.gpu → st.relaxed status (a release pattern). Reader:
// ld.relaxed status → fence.acq_rel.gpu → ld.relaxed of the slot the status
// names (an acquire pattern): message passing with fences. Separate slots
// per status matter: with one value slot, a reader that saw AGGREGATE could
// read the later PREFIX value.
//
// State layout (u64 words; the host mirrors it in
// gpu_core::single_pass::tile_state_words): words 0 and 1 = the two tile
// counters (they keep what follows 16-byte aligned), then the status
// region:
//   4-byte, packed (16-byte stride): 2·num_tiles words, the tile's word
//           first, the second unused;
//   8-byte, packed128: 2·num_tiles words (16-byte aligned: the region
//           starts at byte 16 of an allocation aligned to at least 256
//           bytes; the host checks the alignment);
//   4-byte, 8-byte stride: num_tiles words;
//   8-byte, split: ⌈num_tiles / 2⌉ words of u32 statuses, num_tiles
//           aggregate words, num_tiles prefix words.
//
// Using it (one block per tile, as scan/lookback.cu does):
//
//   u64* state = ...; u32 epoch = ...;         // from with_tile_state()
//   typedef typename TileStatusFor<T, STATUS8>::type Status;
//   __shared__ u64 tile_slot;
//   lookback_prepare_next_call(state, epoch);
//   if (threadIdx.x == 0) tile_slot = lookback_next_tile(state, epoch);
//   __syncthreads();
//   const u64 tile = tile_slot;
//   ... reduce the tile to `aggregate` (any associative Op) ...
//   if (threadIdx.x < 32) {                    // one whole warp
//       Status status(lookback_status_region(state), num_tiles, epoch);
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
// Compaction (compact/single_pass.cu) publishes its aggregate early, from
// thread 0, and later calls single_pass_prefix (single_pass/lookback.cuh)
// from warp 0, which looks back and publishes the inclusive prefix.
#pragma once

#define TILE_INVALID 0u
#define TILE_AGGREGATE 1u
#define TILE_PREFIX 2u

// A status as stored: tagged with the call's epoch.
__device__ __forceinline__ u32 tile_status_tag(u32 status, u32 epoch) { return (epoch << 2) | status; }
// A stored tag as this call's status: TILE_INVALID unless it is this epoch's.
__device__ __forceinline__ u32 tile_status_of(u32 tag, u32 epoch) {
    return (tag >> 2) == epoch ? (tag & 3u) : TILE_INVALID;
}

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
    u32 epoch;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return STRIDE * num_tiles; }
    __device__ __forceinline__ TileStatusPacked(u64* region, u64 /*num_tiles*/, u32 call_epoch)
        : words(region), epoch(call_epoch) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_u64(words + STRIDE * tile, ((u64)tile_status_tag(status, epoch) << 32) |
                                                      (u64)bits_of<T, u32>(value));
    }
    // Status and value of `tile`, read together.
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        const u64 word = ld_relaxed_gpu_u64(words + STRIDE * tile);
        value = from_bits<T, u32>((u32)word);
        return tile_status_of((u32)(word >> 32), epoch);
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
    u32 epoch;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) {
        return (num_tiles + 1) / 2 + 2 * num_tiles;
    }
    __device__ __forceinline__ TileStatusSplit(u64* region, u64 num_tiles, u32 call_epoch)
        : statuses(reinterpret_cast<u32*>(region)),
          aggregates(region + (num_tiles + 1) / 2),
          prefixes(region + (num_tiles + 1) / 2 + num_tiles),
          epoch(call_epoch) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        u64* slot = (status == TILE_PREFIX ? prefixes : aggregates) + tile;
        st_relaxed_gpu_u64(slot, bits_of<T, u64>(value));
        fence_acq_rel_gpu();  // release: the value before the status
        st_relaxed_gpu_u32(statuses + tile, tile_status_tag(status, epoch));
    }
    // The status only; the value is read by finish_read once it is known
    // to be published.
    __device__ __forceinline__ u32 read(u64 tile, T& /*value*/) const {
        return tile_status_of(ld_relaxed_gpu_u32(statuses + tile), epoch);
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
    u64* words;  // 2 per tile: value bits, then the status tag
    u32 epoch;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return 2 * num_tiles; }
    __device__ __forceinline__ TileStatusPacked128(u64* region, u64 /*num_tiles*/, u32 call_epoch)
        : words(region), epoch(call_epoch) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_b128(words + 2 * tile, bits_of<T, u64>(value),
                            (u64)tile_status_tag(status, epoch));
    }
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        u64 lo, hi;
        ld_relaxed_gpu_b128(words + 2 * tile, lo, hi);
        value = from_bits<T, u64>(lo);
        // Every bit of the word is used (hi's upper half is always 0, so
        // folding it in changes nothing): ptxas keeps a b128 load whose bits
        // all matter as one 128-bit access, but it split one whose value was
        // partly unused into two 32-bit loads on sm_90 (4-byte values
        // widened into this word: torn reads, wrong prefixes).
        // scan's `status_loads_stay_single_accesses` checks the SASS.
        return tile_status_of((u32)hi | (u32)(hi >> 32), epoch);
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

// The next tile index of this call: from counter (epoch & 1), word 0 or 1.
__device__ __forceinline__ u64 lookback_next_tile(u64* state, u32 epoch) {
    return (u64)atomicAdd(reinterpret_cast<unsigned long long*>(state + (epoch & 1u)), 1ull);
}
// The tile of a block that runs one tile, the same for every thread of the
// block. From the call's counter (thread 0 draws it into `slot`, then one
// barrier): any start order of the blocks is safe, since a tile's
// predecessors went to blocks that had started. With IN_BLOCK_ORDER, the
// block's linear index, as CUB's single-pass scan takes it: no atomic round
// trip and no barrier before the loads, but the look-back then relies on
// the GPU starting a grid's blocks in index order (a waiting block's
// predecessors are running or done), which NVIDIA GPUs do.
template <bool IN_BLOCK_ORDER>
__device__ __forceinline__ u64 lookback_block_tile(u64* state, u32 epoch, u64* slot) {
    if constexpr (IN_BLOCK_ORDER) {
        return linear_block_index();
    } else {
        if (threadIdx.x == 0) *slot = lookback_next_tile(state, epoch);
        __syncthreads();
        return *slot;
    }
}
// Zeroes the counter of the next call (epoch + 1), which the previous call
// drew from and no block of this call touches. Every block calls it; thread
// 0 of block (0, 0) stores. Call it before a block can return early.
__device__ __forceinline__ void lookback_prepare_next_call(u64* state, u32 epoch) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) state[(epoch + 1u) & 1u] = 0ull;
}
// The status region: from word 2 of the state.
__device__ __forceinline__ u64* lookback_status_region(u64* state) { return state + 2; }

