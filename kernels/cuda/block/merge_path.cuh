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
//      first item, in the same TILE slots after the items;
//   3. each thread searches its own first diagonal in shared memory (its
//      last is where the walk ends) and consumes its ITEMS steps in order:
//      an item is folded into the running value, a segment end hands the
//      value on (the thread's first completed segment is held back, the
//      later ones are stored at once); a warp none of whose steps is a
//      segment end folds its items with no per-step test;
//   4. a block-wide scan of the threads' carries (segment, partial value),
//      keyed by segment, gives each thread the fold of the threads before it
//      that ended in its first segment; that segment is then stored;
//   5. the block's own carry (the segment it ends in and its partial value)
//      is written for the fix-up, which folds the carries of every block
//      that ended in a segment into that segment's stored value: a grid of
//      chunks of carries (fixup_chunk), then one block over two summaries
//      per chunk (fixup_carries).
//
// Requirements: 1-D blocks, BLOCK_THREADS a multiple of 32 up to 1024; V a
// type __shfl_up_sync takes (i32 u32 i64 u64 f32 f64); Op a functor with
// static identity() and combine(a, b), associative (not necessarily
// commutative: every fold keeps index order).
//
// Robustness: offsets that decrease or pass n break the caller's contract
// and give meaningless values, but every global and shared access stays in
// bounds: items are clamped to [base, n), the ends to the tile's items, and
// a walk reads only slots below TILE (see merge_path_tile).
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
template <typename V, typename Op, typename K>
__device__ __forceinline__ void keyed_fold(K left_key, V left, K right_key, V& right) {
    if (left_key == right_key) right = Op::combine(left, right);
}

// Block-wide exclusive scan of keyed carries, one per thread, keys (K: u32
// or u64) non-decreasing with the thread index. Warp shuffles
// (Hillis–Steele: a partial's key is always its last item's key, so only
// the values move), warp totals through shared memory, each thread folding
// the totals of the warps before it. One __syncthreads; the caller syncs
// before reusing `storage`.
template <typename V, typename Op, int BLOCK_THREADS, typename K = u64>
struct BlockKeyedScan {
    static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS >= 32 && BLOCK_THREADS <= 1024,
                  "BLOCK_THREADS must be a multiple of 32 from 32 to 1024");
    static constexpr int WARPS = BLOCK_THREADS / 32;

    struct Storage {
        K keys[WARPS];
        V values[WARPS];
    };

    // Sets (prefix_key, prefix) to the fold of threads [0, t) and returns
    // whether there is one (t > 0); (aggregate_key, aggregate) receive the
    // fold of the whole block in every thread.
    static __device__ __forceinline__ bool exclusive_scan(K key, V value, Storage& storage,
                                                          K& prefix_key, V& prefix,
                                                          K& aggregate_key, V& aggregate) {
        const int lane = (int)(threadIdx.x & 31u);
        const int warp = (int)(threadIdx.x >> 5);
        V inclusive = value;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const K lower_key = __shfl_up_sync(0xffffffffu, key, offset);
            const V lower = __shfl_up_sync(0xffffffffu, inclusive, offset);
            if (lane >= offset) keyed_fold<V, Op>(lower_key, lower, key, inclusive);
        }
        const K lane_prefix_key = __shfl_up_sync(0xffffffffu, key, 1);
        const V lane_prefix = __shfl_up_sync(0xffffffffu, inclusive, 1);
        if (lane == 31) {
            storage.keys[warp] = key;
            storage.values[warp] = inclusive;
        }
        __syncthreads();
        K running_key = storage.keys[0];
        V running = storage.values[0];
        K warp_prefix_key = running_key;
        V warp_prefix = running;
#pragma unroll
        for (int w = 1; w < WARPS; ++w) {
            if (w == warp) {
                warp_prefix_key = running_key;
                warp_prefix = running;
            }
            V next = storage.values[w];
            const K next_key = storage.keys[w];
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

// Shared memory of one merge-path tile: its items and its segment ends
// share TILE slots (a tile's items + segments are at most TILE): the items
// in slots [0, tile_items), then the ends as u32 from slot tile_items on.
template <typename V, typename Op, int BLOCK_THREADS, int ITEMS>
struct MergePathTileStorage {
    static_assert(sizeof(V) % sizeof(u32) == 0, "a slot holds whole u32 ends");
    static constexpr int TILE = BLOCK_THREADS * ITEMS;
    V slots[TILE];
    typename BlockKeyedScan<V, Op, BLOCK_THREADS, u32>::Storage scan;
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
//
// A thread searches only where its steps begin: walking ITEMS steps from
// there reaches where the next thread's begin (the merge decides each step
// from the current segment's end alone). The end of the thread's current
// segment stays in a register; a thread none of whose ITEMS steps is a
// segment end (the common case when segments are longer than ITEMS) folds
// its items with no per-step test.
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
    // 2. Stage the tile's items and segment ends: coalesced, the items' and
    //    the first ends' loads issued before the first store. Item
    //    k·BLOCK_THREADS + t is in the tile when k·BLOCK_THREADS <
    //    tile_items − t. Every item slot is stored (the ones past the items
    //    with the identity), unpredicated, so the ends go in after a
    //    barrier. The ends are few when segments are long, up to TILE when
    //    they are short: ENDS_BATCH per thread first, then batches of
    //    ENDS_REST. Each is taken as
    //    segment_end_relative, then relative to the tile's first item and
    //    clamped to its items; every value fits Off (the ends are clamped
    //    to base + items, a value of Off).
    constexpr int ENDS_BATCH = 4;
    // 12 more 4-byte ends per thread per batch, 6 8-byte ones: the sizes
    // that keep the sm_90 tiles of segmented reduce (u32 offsets) and SpMV
    // within 32 registers.
    constexpr int ENDS_REST = sizeof(Off) == 4 ? 12 : 6;
    const V* const items_smem = smem.slots;
    u32* const ends_smem = reinterpret_cast<u32*>(smem.slots + tile_items);
    const int items_left = (int)tile_items - (int)threadIdx.x;
    const u64 thread_first_item = base + item_begin + threadIdx.x;
    V staged[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        staged[k] = Op::identity();
        if (k * BLOCK_THREADS < items_left) staged[k] = load(thread_first_item + k * BLOCK_THREADS);
    }
    const Off items_end = (Off)(base + items);
    const Off tile_first = (Off)(base + item_begin);
    const Off* const thread_ends = offsets + segment_begin + 1 + threadIdx.x;
    const int ends_left = (int)tile_segments - (int)threadIdx.x;
    Off ends[ENDS_BATCH];
#pragma unroll
    for (int k = 0; k < ENDS_BATCH; ++k) {
        if (k * BLOCK_THREADS < ends_left) ends[k] = thread_ends[k * BLOCK_THREADS];
    }
    V* const staged_items = smem.slots + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) staged_items[k * BLOCK_THREADS] = staged[k];
    if (tile_segments > 0) {  // the same for every thread
        __syncthreads();
        // The first batch, loaded with the items; the rest (short segments)
        // in batches of ENDS_REST, in the registers the items have left.
        const auto stage_end = [&](int i, Off raw) {
            const Off end = min(raw, items_end);
            ends_smem[i] = end > tile_first ? (u32)min(end - tile_first, (Off)tile_items) : 0u;
        };
#pragma unroll
        for (int k = 0; k < ENDS_BATCH; ++k) {
            if (k * BLOCK_THREADS < ends_left) stage_end(k * BLOCK_THREADS + threadIdx.x, ends[k]);
        }
        for (int batch = ENDS_BATCH * BLOCK_THREADS; batch < (int)tile_segments;
             batch += ENDS_REST * BLOCK_THREADS) {
            const int rest_left = ends_left - batch;
            Off rest[ENDS_REST];
#pragma unroll
            for (int k = 0; k < ENDS_REST; ++k) {
                if (k * BLOCK_THREADS < rest_left) rest[k] = thread_ends[batch + k * BLOCK_THREADS];
            }
#pragma unroll
            for (int k = 0; k < ENDS_REST; ++k) {
                if (k * BLOCK_THREADS < rest_left) {
                    stage_end(batch + k * BLOCK_THREADS + threadIdx.x, rest[k]);
                }
            }
        }
    }
    __syncthreads();
    // 3. This thread's share of the tile: `steps` steps from (s, j). Each
    //    step is an item when j is below the current segment's end (the
    //    tile's item count once its segments are all consumed), else that
    //    segment's end. Bounds: an item step has j < next_end ≤ tile_items;
    //    an end step has s < tile_segments, because with every segment
    //    consumed the steps left are at most the items left (s + j + steps
    //    ≤ tile_segments + tile_items).
    const u32 tile_steps = tile_segments + tile_items;
    const u32 step_begin = min((u32)threadIdx.x * (u32)ITEMS, tile_steps);
    const u32 steps = min((u32)ITEMS, tile_steps - step_begin);
    u32 s = merge_path_search_shared(step_begin, ends_smem, tile_segments, tile_items);
    u32 j = step_begin - s;
    const u32 first_segment = s;
    u32 next_end = s < tile_segments ? ends_smem[s] : tile_items;
    bool has_first = false;
    V first = Op::identity();
    V running = Op::identity();
    // One step of the walk. An end step hands the running value on: the
    // thread's first completed segment is held back for the block scan,
    // the later ones are stored at once. The item step is branch-free (the
    // load is in bounds either way: j ≤ tile_items, and j = tile_items =
    // TILE only with no segment ends in the tile); only the rare end step
    // branches.
    auto step = [&]() {
        const V item = items_smem[j];
        const bool take = j < next_end;
        if (!take) {
            if (has_first) {
                store.complete(segment_begin + s, running);
            } else {
                has_first = true;
                first = running;
            }
            running = Op::identity();
            ++s;
            next_end = s < tile_segments ? ends_smem[s] : tile_items;
        }
        const V folded = Op::combine(running, item);
        running = take ? folded : running;
        j += take ? 1u : 0u;
    };
    const bool full = steps == (u32)ITEMS;
    if (__all_sync(0xffffffffu, full && j + (u32)ITEMS <= next_end)) {
        // No segment ends in the warp's steps: ITEMS items per thread,
        // folded in order, every shared load independent.
        const V* const mine = items_smem + j;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) running = Op::combine(running, mine[k]);
    } else if (full) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) step();
    } else {
        // The path's last tile: fewer steps.
        for (u32 k = 0; k < steps; ++k) step();
    }
    // 4. The carries of the threads before this one that ended in its first
    //    segment (thread t − 1 ends where thread t begins). Keys are tile
    //    segment indices (u32).
    u32 prefix_key = 0, aggregate_key = 0;
    V prefix = Op::identity(), aggregate = Op::identity();
    const bool has_prefix = BlockKeyedScan<V, Op, BLOCK_THREADS, u32>::exclusive_scan(
        s, running, smem.scan, prefix_key, prefix, aggregate_key, aggregate);
    if (has_first) {
        if (has_prefix && prefix_key == first_segment) first = Op::combine(prefix, first);
        store.complete(segment_begin + first_segment, first);
    }
    // 5. The block's carry: the segment the tile ends in and its part.
    if (threadIdx.x == 0) {
        const u64 key = segment_begin + aggregate_key;
        carry_keys[tile] = key < segments ? key : segments;
        carry_values[tile] = aggregate;
    }
}

// The fix-up folds each run of equal carry keys (keys non-decreasing) in
// index order and hands it to the caller's store, once per key below
// `segments`: `store.fixup_load(key)` reads the segment's stored value and
// `store.fixup_store(key, fold, loaded)` writes the fold applied in front of
// it, so a thread can issue all its reads before its writes.
//
// Two passes. fixup_chunk (a grid, one block per CHUNK = BLOCK_THREADS ·
// ITEMS carries) applies every run that lies inside its chunk, with neither
// the chunk's first key nor its last, and writes two summary carries per
// chunk: the fold of the chunk's first run and of its last (the identity
// when one run fills the chunk), keys kept, so the summaries are again
// sorted carries. fixup_carries (one block) then folds the summaries: a
// run that crosses chunks (a segment spanning more than a chunk of tiles)
// is joined there, its parts in chunk order. A chunk's first or last run
// that does not cross is a run of one summary (or of one and an identity):
// applied once all the same.

// Fix-up pass 1, block `chunk` of ⌈carries / CHUNK⌉; thread t holds the
// ITEMS consecutive carries from chunk · CHUNK + t · ITEMS.
template <typename V, typename Op, int BLOCK_THREADS, int ITEMS, typename Store>
__device__ __forceinline__ void fixup_chunk(const u64* carry_keys, const V* carry_values,
                                            u64 carries, u64 segments, Store& store,
                                            u64* summary_keys, V* summary_values) {
    __shared__ typename BlockKeyedScan<V, Op, BLOCK_THREADS>::Storage scan_storage;
    constexpr u64 CHUNK = (u64)BLOCK_THREADS * ITEMS;
    const u64 chunk = linear_block_index();
    const u64 chunk_begin = chunk * CHUNK;
    if (chunk_begin >= carries) return;
    const u64 chunk_limit = chunk_begin + CHUNK < carries ? chunk_begin + CHUNK : carries;
    const u64 first_index = chunk_begin + (u64)threadIdx.x * ITEMS;
    // ITEMS carries and the key after them; past the chunk: key ~0 (above
    // every real key, so still sorted).
    u64 keys[ITEMS + 1];
    V values[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u64 index = first_index + k;
        keys[k] = index < chunk_limit ? carry_keys[index] : ~0ull;
        values[k] = index < chunk_limit ? carry_values[index] : Op::identity();
    }
    keys[ITEMS] = first_index + ITEMS < chunk_limit ? carry_keys[first_index + ITEMS] : ~0ull;
    const u64 first_key = carry_keys[chunk_begin];
    const u64 last_key = carry_keys[chunk_limit - 1];
    // Inclusive keyed scan: the thread's own part, then the block's prefix.
    V inclusive[ITEMS];
    inclusive[0] = values[0];
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) {
        inclusive[k] = values[k];
        keyed_fold<V, Op>(keys[k - 1], inclusive[k - 1], keys[k], inclusive[k]);
    }
    u64 prefix_key = 0, aggregate_key = 0;
    V prefix = Op::identity(), aggregate = Op::identity();
    const bool has_prefix = BlockKeyedScan<V, Op, BLOCK_THREADS>::exclusive_scan(
        keys[ITEMS - 1], inclusive[ITEMS - 1], scan_storage, prefix_key, prefix, aggregate_key,
        aggregate);
    if (has_prefix) {
        // Only the thread's first run can continue the prefix's run.
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (keys[k] == keys[0]) keyed_fold<V, Op>(prefix_key, prefix, keys[k], inclusive[k]);
        }
    }
    // The inner runs, each applied by the thread that holds its last carry:
    // every read first, then every write.
    bool apply[ITEMS];
    V loaded[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        apply[k] = first_index + k < chunk_limit && keys[k + 1] != keys[k] &&
                   keys[k] != first_key && keys[k] != last_key && keys[k] < segments;
        if (apply[k]) loaded[k] = store.fixup_load(keys[k]);
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (apply[k]) store.fixup_store(keys[k], inclusive[k], loaded[k]);
    }
    // The summaries: the first run ends where the key first changes (or at
    // the chunk's last carry); the last run ends at the chunk's last carry.
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u64 index = first_index + k;
        if (index < chunk_limit && keys[k] == first_key &&
            (index + 1 == chunk_limit || keys[k + 1] != first_key)) {
            summary_keys[2 * chunk] = first_key;
            summary_values[2 * chunk] = inclusive[k];
        }
        if (index + 1 == chunk_limit) {
            summary_keys[2 * chunk + 1] = last_key;
            summary_values[2 * chunk + 1] =
                last_key == first_key ? Op::identity() : inclusive[k];
        }
    }
}

// Fix-up pass 2 (and the whole fix-up when the carries fit one chunk), one
// block: folds every run of equal carry keys (keys non-decreasing,
// `carries` of them) and applies each run with a key below `segments`, once
// per key. Threads take ITEMS consecutive carries per round; runs that
// cross threads or rounds are joined by the keyed block scan and a carry
// between rounds.
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
                    store.fixup_store(key, value, store.fixup_load(key));
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
            if (prefix_key < segments) {
                store.fixup_store(prefix_key, prefix, store.fixup_load(prefix_key));
            }
        } else if (has_first) {
            first = Op::combine(prefix, first);
        }
        if (has_first && first_key < segments) {
            store.fixup_store(first_key, first, store.fixup_load(first_key));
        }
        keyed_fold<V, Op>(round_key, round_value, aggregate_key, aggregate);
        round_key = aggregate_key;
        round_value = aggregate;
    }
    // The last run: its segment ends after every carry.
    if (threadIdx.x == 0 && round_key < segments) {
        store.fixup_store(round_key, round_value, store.fixup_load(round_key));
    }
}
