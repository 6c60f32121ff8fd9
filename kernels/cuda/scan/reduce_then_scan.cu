// scan/reduce_then_scan.cu — the run-to-run deterministic scan: reduce, then
// scan, with a combination order fixed by the tile geometry alone. Needs
// warp/warp_scan.cuh and block/block_scan.cuh.
//
// Driver (scan crate, reduce_then_scan.rs), for n items in tiles of TILE:
//   pass 1  rts_reduce_tiles: tile t (= block t) reduces its items →
//           tile_totals[t];
//   pass 2  the tile totals are scanned inclusively in place by the same
//           method, recursively, until they fit in one tile;
//   pass 3  rts_scan_tiles: tile t rescans its items seeded with
//           tile_inclusive[t − 1] (and `initial` for an exclusive scan).
//
//   work        O(n) combines (≈ 3n); steps O(ITEMS + log BLOCK) per level,
//               ⌈log_TILE n⌉ levels;
//   bytes       ≈ 3·n·sizeof(T): pass 1 reads n, pass 3 reads n and writes n
//               (the totals add n/TILE per level);
//   launches    2 per level + 1 (3 for n ≤ TILE² ... 1 for n ≤ TILE);
//   shared mem  as scan_lookback.cu (exchange + warp totals), no atomics;
//   banks       conflict-free exchange;
//   in place    yes (each tile read whole before it is written; pass 1 reads
//               everything before pass 3 starts, stream order);
//   determinism yes, bitwise across runs on one device and build: every
//               combination (thread serial fold, warp shuffle tree, serial
//               warp-total fold, the same at every level) depends only on n
//               and the tuning, never on timing.
//
// Geometry: one block per tile, tile = linear_block_index() (grid may spill
// into y; surplus blocks return).

// Passes 1 and 3 share a tile's start: block t loads tile t and scans its
// thread totals. RESCAN = false (pass 1) writes the tile total to
// tile_totals[t]; RESCAN = true (pass 3) rescans the items seeded with
// tile_inclusive[t − 1] (and `initial` for an exclusive scan) and stores them.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, bool RESCAN>
__device__ __forceinline__ void rts_tile(const T* in, T* out, T* tile_totals,
                                         const T* tile_inclusive, u64 n, u64 num_tiles,
                                         u32 exclusive, T initial, u32 vector_ok) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    __shared__ T exchange[ExchangeSize<T, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ typename BlockScan<T, Op, BLOCK_THREADS>::Storage scan_storage;

    const u64 tile = linear_block_index();
    if (tile >= num_tiles) return;
    const u64 tile_base = tile * (u64)TILE;
    const u32 valid = tile_valid_items(n, tile_base, TILE);

    T items[ITEMS];
    T aggregate;
    const T thread_prefix = block_load_scan_totals<T, Op, BLOCK_THREADS, ITEMS>(
        in + tile_base, valid, vector_ok != 0u, exchange, scan_storage, items, aggregate);
    if constexpr (!RESCAN) {
        if (threadIdx.x == 0) tile_totals[tile] = aggregate;
    } else {
        bool has_tile_prefix = tile > 0;
        T tile_prefix = has_tile_prefix ? tile_inclusive[tile - 1] : initial;
        if (exclusive != 0u) {
            tile_prefix = has_tile_prefix ? Op::combine(initial, tile_prefix) : initial;
            has_tile_prefix = true;
        }
        bool has_seed;
        const T seed =
            block_thread_seed<T, Op>(tile_prefix, has_tile_prefix, thread_prefix, has_seed);
        thread_scan_seeded<T, Op, ITEMS>(items, seed, has_seed, exclusive != 0u);
        block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, vector_ok != 0u,
                                                     exchange, items);
    }
}

// Pass 1.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void rts_reduce_tiles(const T* in, T* tile_totals, u64 n,
                                                 u64 num_tiles, u32 vector_ok) {
    rts_tile<T, Op, BLOCK_THREADS, ITEMS, false>(in, nullptr, tile_totals, nullptr, n, num_tiles,
                                                 0u, Op::identity(), vector_ok);
}

// Pass 3. tile_inclusive: inclusive scan of the tile totals (unused when
// num_tiles is 1, may then be null).
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void rts_scan_tiles(const T* in, T* out, const T* tile_inclusive, u64 n,
                                               u64 num_tiles, u32 exclusive, T initial,
                                               u32 vector_ok) {
    rts_tile<T, Op, BLOCK_THREADS, ITEMS, true>(in, out, nullptr, tile_inclusive, n, num_tiles,
                                                exclusive, initial, vector_ok);
}
