// block/merge_path.cuh — the merge-path partition of a segmented sequence, and
// the tile machinery every work-balanced primitive composes (CSR SpMV,
// segmented reduce by offsets).
//
// The two lists merged: A, the segment ends (segment s ends at item
// offsets[s + 1] − base), and B, the item indices 0, 1, …, items − 1. The
// merge takes a segment end before item j when end ≤ j, so the path of
// segments + items steps visits every segment's items and then its end.
// Diagonal d is the point after d steps, (s, j) with s + j = d: s segment
// ends and j items consumed. Cutting the path into equal diagonal ranges
// gives each block, and each thread within it, the same number of steps
// whatever the segment lengths: one segment of n items and n segments of
// one item cost the same.
//
// A partition pass (merge_path_partition, one thread per tile boundary)
// searches the segment coordinate of every tile's first diagonal. A tile
// (one block) is then TILE = BLOCK_THREADS · ITEMS steps:
//   1. the block's two coordinates, read from the partition;
//   2. its items loaded coalesced into shared memory through the caller's
//      Load functor (a value, or a product val·x[col] for SpMV), and the
//      ends of the segments that finish in the tile, relative to the tile's
//      first item;
//   3. each thread searches its own diagonal in shared memory and consumes
//      its ITEMS steps in order: an item is folded into the running value,
//      a segment end hands the value on (the thread's first completed
//      segment is held back, the later ones are stored at once);
//   4. a block-wide scan of the threads' carries (segment, partial value),
//      keyed by segment, gives each thread the fold of the threads before it
//      that ended in its first segment; that segment is then stored;
//   5. the block's own carry (the segment it ends in and its partial value)
//      is written for the fix-up pass, which folds the carries of every
//      block that ended in a segment into that segment's stored value
//      (fixup_carries, one block).
//
// Requirements: 1-D blocks, BLOCK_THREADS a multiple of 32 up to 1024; V a
// type __shfl_up_sync takes (i32 u32 i64 u64 f32 f64); Op a functor with
// static identity() and combine(a, b), associative (not necessarily
// commutative: every fold keeps index order).
//
// Robustness: offsets that decrease or pass n break the caller's contract
// and give meaningless values, but every global and shared access stays in
// bounds: items are clamped to [base, n) and every consumed step is checked
// against the thread's end coordinates.
#pragma once

// The segment coordinate of `diagonal` on the merge path: the number of
// segment ends the first `diagonal` steps consume (the item coordinate is
// diagonal minus it). `offsets` has segments + 1 entries; segment s ends at
// item min(offsets[s + 1] − base, items) (saturating). Binary search over
// the diagonal: O(log min(segments, diagonal)) loads.
template <typename Off>
__device__ __forceinline__ u64 segment_end_relative(const Off* offsets, u64 s, u64 base, u64 items) {
    const u64 end = (u64)offsets[s + 1];
    const u64 relative = end > base ? end - base : 0;
    return relative < items ? relative : items;
}

template <typename Off>
__device__ __forceinline__ u64 merge_path_search(u64 diagonal, const Off* offsets, u64 segments,
                                                 u64 items, u64 base) {
    u64 lo = diagonal > items ? diagonal - items : 0;
    u64 hi = diagonal < segments ? diagonal : segments;
    while (lo < hi) {
        const u64 mid = (lo + hi) >> 1;
        // Segment `mid` ends before item diagonal − mid − 1 is taken: the
        // path has consumed that end, so the coordinate is past mid.
        if (segment_end_relative(offsets, mid, base, items) <= diagonal - mid - 1) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The same search over a tile's segment ends held in shared memory
// (relative to the tile's first item).
__device__ __forceinline__ u32 merge_path_search_shared(u32 diagonal, const u32* ends, u32 segments,
                                                        u32 items) {
    u32 lo = diagonal > items ? diagonal - items : 0;
    u32 hi = diagonal < segments ? diagonal : segments;
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (ends[mid] <= diagonal - mid - 1) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Keyed carries. (k1, v1) ∘ (k2, v2) = (k2, k1 == k2 ? v1 ⊕ v2 : v2): for
// keys that never decrease along the sequence this is associative, and the
// fold of a prefix is the fold of its trailing run of equal keys.
template <typename V, typename Op>
__device__ __forceinline__ void keyed_fold(u64 left_key, V left, u64 right_key, V& right) {
    if (left_key == right_key) right = Op::combine(left, right);
}

// Block-wide exclusive scan of keyed carries, one per thread, keys
// non-decreasing with the thread index. Warp shuffles (Hillis–Steele: a
// partial's key is always its last item's key, so only the values move),
// warp totals through shared memory, each thread folding the totals of the
// warps before it. One __syncthreads; the caller syncs before reusing
// `storage`.
template <typename V, typename Op, int BLOCK_THREADS>
struct BlockKeyedScan {
    static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS >= 32 && BLOCK_THREADS <= 1024,
                  "BLOCK_THREADS must be a multiple of 32 from 32 to 1024");
    static constexpr int WARPS = BLOCK_THREADS / 32;

    struct Storage {
        u64 keys[WARPS];
        V values[WARPS];
    };

    // Sets (prefix_key, prefix) to the fold of threads [0, t) and returns
    // whether there is one (t > 0); (aggregate_key, aggregate) receive the
    // fold of the whole block in every thread.
    static __device__ __forceinline__ bool exclusive_scan(u64 key, V value, Storage& storage,
                                                          u64& prefix_key, V& prefix,
                                                          u64& aggregate_key, V& aggregate) {
        const int lane = (int)(threadIdx.x & 31u);
        const int warp = (int)(threadIdx.x >> 5);
        V inclusive = value;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const u64 lower_key = __shfl_up_sync(0xffffffffu, key, offset);
            const V lower = __shfl_up_sync(0xffffffffu, inclusive, offset);
            if (lane >= offset) keyed_fold<V, Op>(lower_key, lower, key, inclusive);
        }
        const u64 lane_prefix_key = __shfl_up_sync(0xffffffffu, key, 1);
        const V lane_prefix = __shfl_up_sync(0xffffffffu, inclusive, 1);
        if (lane == 31) {
            storage.keys[warp] = key;
            storage.values[warp] = inclusive;
        }
        __syncthreads();
        u64 running_key = storage.keys[0];
        V running = storage.values[0];
        u64 warp_prefix_key = running_key;
        V warp_prefix = running;
#pragma unroll
        for (int w = 1; w < WARPS; ++w) {
            if (w == warp) {
                warp_prefix_key = running_key;
                warp_prefix = running;
            }
            V next = storage.values[w];
            const u64 next_key = storage.keys[w];
            keyed_fold<V, Op>(running_key, running, next_key, next);
            running_key = next_key;
            running = next;
        }
        aggregate_key = running_key;
        aggregate = running;
        if (warp == 0) {
            prefix_key = lane_prefix_key;
            prefix = lane_prefix;
            return lane > 0;
        }
        if (lane == 0) {
            prefix_key = warp_prefix_key;
            prefix = warp_prefix;
        } else {
            prefix = lane_prefix;
            keyed_fold<V, Op>(warp_prefix_key, warp_prefix, lane_prefix_key, prefix);
            prefix_key = lane_prefix_key;
        }
        return true;
    }
};

// The items the path covers: [base, base + items) with base = offsets[0]
// and base + items = offsets[segments], both clamped to [0, n].
template <typename Off>
__device__ __forceinline__ void merge_path_items(const Off* offsets, u64 segments, u64 n, u64& base,
                                                 u64& items) {
    const u64 first = (u64)offsets[0];
    const u64 last = (u64)offsets[segments];
    base = first < n ? first : n;
    const u64 end = last < n ? last : n;
    items = end > base ? end - base : 0;
}

// The partition pass: coordinates[t] = the segment coordinate of diagonal
// min(t · tile_steps, segments + items), for t in [0, tiles]. One thread per
// tile boundary, every search independent, so the tiles need not search
// global memory one after another.
template <typename Off>
__device__ __forceinline__ void merge_path_partition(const Off* offsets, u64 segments, u64 n,
                                                     u64 tile_steps, u64* coordinates, u64 tiles) {
    const u64 t = global_thread_index();
    if (t > tiles) return;
    u64 base, items;
    merge_path_items(offsets, segments, n, base, items);
    const u64 total = segments + items;
    const u64 diagonal = t * tile_steps < total ? t * tile_steps : total;
    coordinates[t] = merge_path_search(diagonal, offsets, segments, items, base);
}

// Shared memory of one merge-path tile.
template <typename V, typename Op, int BLOCK_THREADS, int ITEMS>
struct MergePathTileStorage {
    static constexpr int TILE = BLOCK_THREADS * ITEMS;
    V items[TILE];
    u32 ends[TILE];
    typename BlockKeyedScan<V, Op, BLOCK_THREADS>::Storage scan;
};

// One merge-path tile: block `tile` of the path over `segments` segments
// (ends in `offsets`, segments + 1 entries) and the items [base, base +
// items) (merge_path_items), with its coordinates from the partition pass.
// `load(i)` returns item i (absolute index, base ≤ i < base + items);
// `store.complete(s, v)` receives the block's part of segment s for every
// segment that ends in the tile (the in-order fold of the items of s in this
// tile: earlier blocks' parts arrive in the fix-up), exactly once per
// segment over the grid. The block's carry goes to carry_keys /
// carry_values[tile] (key = segments when the path ends in the tile).
template <typename V, typename Op, int BLOCK_THREADS, int ITEMS, typename Off, typename Load,
          typename Store>
__device__ __forceinline__ void merge_path_tile(
    MergePathTileStorage<V, Op, BLOCK_THREADS, ITEMS>& smem, u64 tile, const u64* coordinates,
    const Off* offsets, u64 segments, u64 base, u64 items, const Load& load, Store& store,
    u64* carry_keys, V* carry_values) {
    constexpr int TILE = BLOCK_THREADS * ITEMS;
    const u64 total = segments + items;
    const u64 diagonal_first = tile * (u64)TILE < total ? tile * (u64)TILE : total;
    const u64 diagonal_end = diagonal_first + TILE < total ? diagonal_first + TILE : total;
    // 1. The tile's coordinates, from the partition pass.
    const u64 segment_begin = coordinates[tile];
    const u64 segment_end = coordinates[tile + 1];
    const u64 item_begin = diagonal_first - min(segment_begin, diagonal_first);
    const u64 item_end = diagonal_end - min(segment_end, diagonal_end);
    // Well-formed offsets give segment_end ≥ segment_begin and item_end ≥
    // item_begin; clamp so that broken ones cannot index outside the tile.
    const u32 tile_segments =
        segment_end > segment_begin ? (u32)min(segment_end - segment_begin, (u64)TILE) : 0u;
    const u32 tile_items =
        item_end > item_begin ? (u32)min(item_end - item_begin, (u64)(TILE - tile_segments)) : 0u;
    // 2. Stage the tile's items and segment ends: coalesced, ITEMS loads
    //    in flight per thread.
    V staged[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u32 i = (u32)k * BLOCK_THREADS + threadIdx.x;
        if (i < tile_items) staged[k] = load(base + item_begin + i);
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u32 i = (u32)k * BLOCK_THREADS + threadIdx.x;
        if (i < tile_items) smem.items[i] = staged[k];
    }
    // The ends too: every load issued before the first store.
    u64 staged_ends[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u32 i = (u32)k * BLOCK_THREADS + threadIdx.x;
        if (i < tile_segments) staged_ends[k] = (u64)offsets[segment_begin + i + 1];
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u32 i = (u32)k * BLOCK_THREADS + threadIdx.x;
        if (i < tile_segments) {
            // As segment_end_relative, then relative to the tile's first item.
            const u64 end = staged_ends[k];
            u64 relative = end > base ? end - base : 0;
            relative = relative < items ? relative : items;
            relative = relative > item_begin ? relative - item_begin : 0;
            smem.ends[i] = (u32)(relative < tile_items ? relative : tile_items);
        }
    }
    __syncthreads();
    // 3. This thread's share of the tile.
    const u32 tile_steps = tile_segments + tile_items;
    const u32 step_begin = min((u32)threadIdx.x * (u32)ITEMS, tile_steps);
    const u32 step_end = min(step_begin + (u32)ITEMS, tile_steps);
    u32 s = merge_path_search_shared(step_begin, smem.ends, tile_segments, tile_items);
    u32 j = step_begin - s;
    const u32 s_end = merge_path_search_shared(step_end, smem.ends, tile_segments, tile_items);
    const u32 j_end = step_end - s_end;
    const u32 first_segment = s;
    bool has_first = false;
    V first = Op::identity();
    V running = Op::identity();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (j < j_end && (s >= s_end || j < smem.ends[s])) {
            running = Op::combine(running, smem.items[j]);
            ++j;
        } else if (s < s_end) {
            if (!has_first) {
                has_first = true;
                first = running;
            } else {
                store.complete(segment_begin + s, running);
            }
            running = Op::identity();
            ++s;
        }
    }
    // 4. The carries of the threads before this one that ended in its first
    //    segment (thread t − 1 ends where thread t begins).
    u64 prefix_key = 0, aggregate_key = 0;
    V prefix = Op::identity(), aggregate = Op::identity();
    const bool has_prefix = BlockKeyedScan<V, Op, BLOCK_THREADS>::exclusive_scan(
        (u64)s, running, smem.scan, prefix_key, prefix, aggregate_key, aggregate);
    if (has_first) {
        if (has_prefix && prefix_key == (u64)first_segment) first = Op::combine(prefix, first);
        store.complete(segment_begin + first_segment, first);
    }
    // 5. The block's carry: the segment the tile ends in and its part.
    if (threadIdx.x == 0) {
        const u64 key = segment_begin + aggregate_key;
        carry_keys[tile] = key < segments ? key : segments;
        carry_values[tile] = aggregate;
    }
}

// The fix-up pass, one block: folds every run of equal carry keys (keys
// non-decreasing, `carries` of them) and hands each run with a key below
// `segments` to store.fixup(key, fold), once per key. Threads take ITEMS
// consecutive carries per round; runs that cross threads or rounds are
// joined by the keyed block scan and a carry between rounds.
template <typename V, typename Op, int BLOCK_THREADS, int ITEMS, typename Store>
__device__ __forceinline__ void fixup_carries(const u64* carry_keys, const V* carry_values,
                                              u64 carries, u64 segments, Store& store) {
    __shared__ typename BlockKeyedScan<V, Op, BLOCK_THREADS>::Storage scan_storage;
    constexpr u64 ROUND = (u64)BLOCK_THREADS * ITEMS;
    u64 round_key = ~0ull;  // nothing carried into the first round
    V round_value = Op::identity();
    for (u64 round_begin = 0; round_begin < carries; round_begin += ROUND) {
        const u64 first_index = round_begin + (u64)threadIdx.x * ITEMS;
        // Past the end: key ~0 (above every real key, so still sorted).
        u64 keys[ITEMS];
        V values[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u64 index = first_index + k;
            keys[k] = index < carries ? carry_keys[index] : ~0ull;
            values[k] = index < carries ? carry_values[index] : Op::identity();
        }
        // The thread's runs: the first may continue an earlier thread's
        // run, the inner ones are whole, the last continues into the next.
        u64 key = keys[0];
        V value = values[0];
        bool has_first = false;
        u64 first_key = key;
        V first = value;
#pragma unroll
        for (int k = 1; k < ITEMS; ++k) {
            if (keys[k] == key) {
                value = Op::combine(value, values[k]);
            } else {
                if (!has_first) {
                    has_first = true;
                    first_key = key;
                    first = value;
                } else if (key < segments) {
                    store.fixup(key, value);
                }
                key = keys[k];
                value = values[k];
            }
        }
        u64 prefix_key = 0, aggregate_key = 0;
        V prefix = Op::identity(), aggregate = Op::identity();
        const bool has_prefix = BlockKeyedScan<V, Op, BLOCK_THREADS>::exclusive_scan(
            key, value, scan_storage, prefix_key, prefix, aggregate_key, aggregate);
        __syncthreads();  // scan_storage is reused next round
        // The run before this thread (thread 0: the previous rounds' last).
        if (!has_prefix) {
            prefix_key = round_key;
            prefix = round_value;
        } else {
            keyed_fold<V, Op>(round_key, round_value, prefix_key, prefix);
        }
        if (prefix_key != keys[0]) {
            // That run ended just before this thread's first carry.
            if (prefix_key < segments) store.fixup(prefix_key, prefix);
        } else if (has_first) {
            first = Op::combine(prefix, first);
        }
        if (has_first && first_key < segments) store.fixup(first_key, first);
        keyed_fold<V, Op>(round_key, round_value, aggregate_key, aggregate);
        round_key = aggregate_key;
        round_value = aggregate;
    }
    // The last run: its segment ends after every carry.
    if (threadIdx.x == 0 && round_key < segments) store.fixup(round_key, round_value);
}
