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
//           tile_inclusive[t − 1] (and `initial` for a seeded kind).
//
// `kind` (crates/scan/src/kind.rs): 0 inclusive, 1 exclusive from `initial`,
// 2 inclusive from `initial` (out[i] = initial ⊕ x_0 ⊕ … ⊕ x_i); non-zero
// seeds every tile's prefix with `initial` on the left, 1 alone shifts.
//
//   work        O(n) combines (≈ 3n); steps O(ITEMS + log BLOCK) per level,
//               ⌈log_TILE n⌉ levels;
//   bytes       ≈ 3·n·sizeof(T): pass 1 reads n, pass 3 reads n and writes n
//               (the totals add n/TILE per level);
//   launches    2 per level + 1 (3 for n ≤ TILE² ... 1 for n ≤ TILE);
//   shared mem  as scan_lookback.cu (exchange of T + warp totals of A), no
//               atomics;
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

// Element type and accumulator, as in scan/lookback.cu: the kernels read
// and write T and scan in A = Op::value_type; each item is widened once
// when loaded and narrowed once when stored, and the tile totals are A.
// The 4- and 8-byte types have A = T. For a 1- or 2-byte type the host
// (reduce_then_scan.rs) runs the first level on T and the totals' levels on
// accumulators (T = A there). `initial` is always the element type E,
// widened here.
//
// Passes 1 and 3 share a tile's start: block t loads tile t and scans its
// thread totals. RESCAN = false (pass 1) writes the tile total to
// tile_totals[t]; RESCAN = true (pass 3) rescans the items seeded with
// tile_inclusive[t − 1] (and `initial` for a seeded kind) and stores them.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, bool RESCAN, typename E>
__device__ __forceinline__ void rts_tile(const T* in, T* out, typename Op::value_type* tile_totals,
                                         const typename Op::value_type* tile_inclusive, u64 n,
                                         u64 num_tiles, u32 kind, E initial, u32 vector_ok) {
    typedef typename Op::value_type A;
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    __shared__ T exchange[ExchangeSize<T, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ typename BlockScan<A, Op, BLOCK_THREADS>::Storage scan_storage;

    const u64 tile = linear_block_index();
    if (tile >= num_tiles) return;
    const u64 tile_base = tile * (u64)TILE;
    const u32 valid = tile_valid_items(n, tile_base, TILE);

    T loaded[ITEMS];
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(in + tile_base, valid, vector_ok != 0u, exchange,
                                                loaded, narrow<T>(Op::identity()));
    A items[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) items[j] = widen<A>(loaded[j]);
    const A thread_total = thread_reduce<A, Op, ITEMS>(items);
    A aggregate;
    const A thread_prefix =
        BlockScan<A, Op, BLOCK_THREADS>::exclusive_scan(thread_total, scan_storage, aggregate);
    if constexpr (!RESCAN) {
        if (threadIdx.x == 0) tile_totals[tile] = aggregate;
    } else {
        const A initial_acc = widen<A>(initial);
        bool has_tile_prefix = tile > 0;
        A tile_prefix = has_tile_prefix ? tile_inclusive[tile - 1] : initial_acc;
        if (kind != 0u) {
            tile_prefix = has_tile_prefix ? Op::combine(initial_acc, tile_prefix) : initial_acc;
            has_tile_prefix = true;
        }
        bool has_seed;
        const A seed =
            block_thread_seed<A, Op>(tile_prefix, has_tile_prefix, thread_prefix, has_seed);
        thread_scan_seeded<A, Op, ITEMS>(items, seed, has_seed, kind == 1u);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) loaded[j] = narrow<T>(items[j]);
        block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, vector_ok != 0u,
                                                     exchange, loaded);
    }
}

// Pass 1.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void rts_reduce_tiles(const T* in, typename Op::value_type* tile_totals,
                                                 u64 n, u64 num_tiles, u32 vector_ok) {
    rts_tile<T, Op, BLOCK_THREADS, ITEMS, false>(in, nullptr, tile_totals, nullptr, n, num_tiles,
                                                 0u, narrow<T>(Op::identity()), vector_ok);
}

// Pass 3. tile_inclusive: inclusive scan of the tile totals (unused when
// num_tiles is 1, may then be null).
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, typename E>
__device__ __forceinline__ void rts_scan_tiles(const T* in, T* out,
                                               const typename Op::value_type* tile_inclusive, u64 n,
                                               u64 num_tiles, u32 kind, E initial,
                                               u32 vector_ok) {
    rts_tile<T, Op, BLOCK_THREADS, ITEMS, true>(in, out, nullptr, tile_inclusive, n, num_tiles,
                                                kind, initial, vector_ok);
}
