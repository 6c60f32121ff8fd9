// block/block_scan.cuh — block-wide building blocks on top of warp/warp_scan.cuh, templated on
// T, Op and the block size. Used by the look-back scan, the deterministic
// reduce-then-scan and the single-pass compaction.
//
// Layout vocabulary (as in CUB):
//   * striped: item e of a tile is held by thread e mod BLOCK_THREADS — what
//     coalesced global loads and stores want;
//   * blocked: thread t holds items [t·ITEMS, (t+1)·ITEMS) — what a serial
//     per-thread scan wants.
// block_load_blocked / block_store_blocked convert between the two through
// shared memory padded against bank conflicts (see exchange_index).
//
// Requirements: 1-D blocks, BLOCK_THREADS a multiple of 32, at most 1024.
// Every function is called by every thread of the block (they contain
// __syncthreads).
#pragma once

// ---------------------------------------------------------------------------
// Thread level: items in registers, combined in index order.

// x_0 ⊕ … ⊕ x_{ITEMS-1}.
template <typename T, typename Op, int ITEMS>
__device__ __forceinline__ T thread_reduce(const T (&items)[ITEMS]) {
    T total = items[0];
#pragma unroll
    for (int j = 1; j < ITEMS; ++j) total = Op::combine(total, items[j]);
    return total;
}

// Scans the thread's items in place, seeded with `seed` when has_seed:
//   inclusive: items[j] = seed ⊕ x_0 ⊕ … ⊕ x_j
//   exclusive: items[j] = seed ⊕ x_0 ⊕ … ⊕ x_{j-1}   (items[0] = seed;
//              exclusive callers always have a seed).
// Without a seed the seed is simply left out (never replaced by the
// identity, so -0.0 and custom operators with inexact identities are exact).
template <typename T, typename Op, int ITEMS>
__device__ __forceinline__ void thread_scan_seeded(T (&items)[ITEMS], T seed, bool has_seed,
                                                   bool exclusive) {
    if (exclusive) {
        T running = seed;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const T x = items[j];
            items[j] = running;
            running = Op::combine(running, x);
        }
    } else {
        T running = has_seed ? Op::combine(seed, items[0]) : items[0];
        items[0] = running;
#pragma unroll
        for (int j = 1; j < ITEMS; ++j) {
            running = Op::combine(running, items[j]);
            items[j] = running;
        }
    }
}

// ---------------------------------------------------------------------------
// Block-wide exclusive scan of one value per thread.
//
//   Warp shuffle scans (warp/warp_scan.cuh), the warp totals through shared memory,
//   then every thread folds the totals of the warps before it serially (at
//   most 32 combines, broadcast reads, so no second barrier).
//   work O(BLOCK_THREADS + WARPS²) combines, O(log 32 + WARPS) steps,
//   one __syncthreads, WARPS·sizeof(T) bytes of shared memory, no bank
//   conflicts (lane 31 of each warp writes, all threads read the same word).
//   Deterministic: the combination order depends only on the block size.
template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScan {
    static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS >= 32 && BLOCK_THREADS <= 1024,
                  "BLOCK_THREADS must be a multiple of 32 from 32 to 1024");
    static constexpr int WARPS = BLOCK_THREADS / 32;

    struct Storage {
        T warp_totals[WARPS];
    };

    // Returns x_0 ⊕ … ⊕ x_{t-1} for thread t >= 1 and Op::identity() for
    // thread 0 (callers that must not fold the identity test threadIdx.x);
    // `aggregate` receives x_0 ⊕ … ⊕ x_{BLOCK_THREADS-1} in every thread.
    // The caller must __syncthreads() before reusing `storage`.
    static __device__ __forceinline__ T exclusive_scan(T x, Storage& storage, T& aggregate) {
        const int lane = warp_lane();
        const int warp = (int)(threadIdx.x >> 5);
        const T inclusive = warp_inclusive_scan<T, Op>(x);
        const T lane_exclusive = __shfl_up_sync(PARPRIMS_FULL_WARP, inclusive, 1);
        if (lane == 31) storage.warp_totals[warp] = inclusive;
        __syncthreads();
        T running = storage.warp_totals[0];
        T warp_prefix = running;  // only read for warp >= 1, then overwritten below
#pragma unroll
        for (int w = 1; w < WARPS; ++w) {
            if (w == warp) warp_prefix = running;  // totals of warps [0, w)
            running = Op::combine(running, storage.warp_totals[w]);
        }
        aggregate = running;
        if (warp == 0) return lane == 0 ? Op::identity() : lane_exclusive;
        return lane == 0 ? warp_prefix : Op::combine(warp_prefix, lane_exclusive);
    }
};

// ---------------------------------------------------------------------------
// Striped <-> blocked exchange through padded shared memory.
//
// One element of padding after every 128 bytes of elements (32 four-byte or
// 16 eight-byte elements). With that, both the striped accesses (consecutive
// lanes, consecutive elements or 16-byte groups) and the blocked accesses
// (lane t at t·ITEMS + j, ITEMS a power of two ≤ 32) land in distinct banks
// for the tunings of the table (e.g. 4-byte, ITEMS = 16: lane t hits bank
// (16t + j + t/2) mod 32, all 32 different).

template <typename T>
__device__ __forceinline__ u32 exchange_index(u32 i) {
    constexpr u32 PER_LINE = 128u / (u32)sizeof(T);
    return i + i / PER_LINE;
}

// Shared-memory elements a tile of TILE_ITEMS needs.
template <typename T, int TILE_ITEMS>
struct ExchangeSize {
    static constexpr u32 ITEMS = (u32)TILE_ITEMS + (u32)TILE_ITEMS / (128u / (u32)sizeof(T));
};

// 16-byte vector view of T values.
template <typename T>
union Vec16 {
    uint4 raw;
    T items[16 / sizeof(T)];
};

// Loads the tile starting at `tile_in` (`valid` items, the rest filled with
// `fill`) into blocked registers. Global reads are striped and coalesced:
// 16-byte vectors when `vector_ok` (tile_in 16-byte aligned, the tile full
// and ITEMS a multiple of the vector width), else one element per thread
// per step. All global loads are issued into registers (`items` doubles as
// the staging area) before anything is written to shared memory, so every
// thread has ITEMS elements' worth of loads in flight at once. `exchange`
// holds ExchangeSize<T, BLOCK_THREADS·ITEMS>::ITEMS elements. Ends with the
// blocked reads of `exchange` done by this thread but maybe not by others:
// the caller synchronises before writing it again (block_store_blocked
// does).
template <typename T, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void block_load_blocked(const T* tile_in, u32 valid, bool vector_ok,
                                                   T* exchange, T (&items)[ITEMS], T fill) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    constexpr int VEC = 16 / (int)sizeof(T);
    const u32 tid = threadIdx.x;
    bool done = false;
    if constexpr (ITEMS % VEC == 0) {
        if (vector_ok && valid == TILE) {
            // Vector k of this thread is vector k·BLOCK + tid of the tile.
            const uint4* vectors = reinterpret_cast<const uint4*>(tile_in);
#pragma unroll
            for (int k = 0; k < ITEMS / VEC; ++k) {
                Vec16<T> v;
                v.raw = vectors[(u32)k * BLOCK_THREADS + tid];
#pragma unroll
                for (int c = 0; c < VEC; ++c) items[k * VEC + c] = v.items[c];
            }
#pragma unroll
            for (int k = 0; k < ITEMS / VEC; ++k) {
                const u32 q = (u32)k * BLOCK_THREADS + tid;
#pragma unroll
                for (int c = 0; c < VEC; ++c)
                    exchange[exchange_index<T>(q * VEC + c)] = items[k * VEC + c];
            }
            done = true;
        }
    }
    if (!done) {
        // Element k of this thread is element k·BLOCK + tid of the tile.
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 e = (u32)k * BLOCK_THREADS + tid;
            items[k] = e < valid ? tile_in[e] : fill;
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            exchange[exchange_index<T>((u32)k * BLOCK_THREADS + tid)] = items[k];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) items[j] = exchange[exchange_index<T>(tid * ITEMS + j)];
}

// Stores blocked registers to the tile starting at `tile_out`, its first
// `valid` items only; striped, coalesced, 16-byte vectors under the same
// conditions as block_load_blocked. Starts with a barrier, so `exchange`
// may still be in use by a preceding block_load_blocked.
template <typename T, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void block_store_blocked(T* tile_out, u32 valid, bool vector_ok,
                                                    T* exchange, const T (&items)[ITEMS]) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    constexpr int VEC = 16 / (int)sizeof(T);
    const u32 tid = threadIdx.x;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) exchange[exchange_index<T>(tid * ITEMS + j)] = items[j];
    __syncthreads();
    bool done = false;
    if constexpr (ITEMS % VEC == 0) {
        if (vector_ok && valid == TILE) {
            uint4* vectors = reinterpret_cast<uint4*>(tile_out);
#pragma unroll
            for (int k = 0; k < ITEMS / VEC; ++k) {
                const u32 q = (u32)k * BLOCK_THREADS + tid;
                Vec16<T> v;
#pragma unroll
                for (int c = 0; c < VEC; ++c) v.items[c] = exchange[exchange_index<T>(q * VEC + c)];
                vectors[q] = v.raw;
            }
            done = true;
        }
    }
    if (!done) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 e = (u32)k * BLOCK_THREADS + tid;
            if (e < valid) tile_out[e] = exchange[exchange_index<T>(e)];
        }
    }
}

// Thread t's prefix seed inside a tile: tile_prefix ⊕ thread_prefix, where
// thread_prefix (from BlockScan::exclusive_scan) is meaningless for thread 0
// and tile_prefix is absent when !has_tile_prefix. Sets has_seed.
template <typename T, typename Op>
__device__ __forceinline__ T block_thread_seed(T tile_prefix, bool has_tile_prefix, T thread_prefix,
                                               bool& has_seed) {
    const bool first_thread = threadIdx.x == 0;
    if (has_tile_prefix) {
        has_seed = true;
        return first_thread ? tile_prefix : Op::combine(tile_prefix, thread_prefix);
    }
    has_seed = !first_thread;
    return thread_prefix;
}

// ---------------------------------------------------------------------------
// Tile level: one blocked tile of a block-wide scan, as the look-back scan
// and the reduce-then-scan both start it.

// How many of the tile_items items of the tile starting at `tile_base` lie
// below n: tile_items, or fewer for the last tile.
__device__ __forceinline__ u32 tile_valid_items(u64 n, u64 tile_base, u32 tile_items) {
    const u64 remaining = n - tile_base;
    return remaining < (u64)tile_items ? (u32)remaining : tile_items;
}

// Loads the tile starting at `tile_in` (`valid` items, padded with the
// identity) blocked into `items` (block_load_blocked, through `exchange`),
// reduces each thread's items and scans the thread totals across the block.
// Returns the thread's exclusive prefix (as BlockScan::exclusive_scan:
// meaningless for thread 0) and sets `aggregate` to the tile's total in
// every thread. `scan_storage` may be reused after a __syncthreads.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ T block_load_scan_totals(
    const T* tile_in, u32 valid, bool vector_ok, T* exchange,
    typename BlockScan<T, Op, BLOCK_THREADS>::Storage& scan_storage, T (&items)[ITEMS],
    T& aggregate) {
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(tile_in, valid, vector_ok, exchange, items,
                                                Op::identity());
    const T thread_total = thread_reduce<T, Op, ITEMS>(items);
    return BlockScan<T, Op, BLOCK_THREADS>::exclusive_scan(thread_total, scan_storage, aggregate);
}
