// scan_lookback.cu — single-pass inclusive/exclusive scan with decoupled
// look-back (Merrill & Garland 2016). Needs warp.cuh, block.cuh, lookback.cuh.
//
// Computes out[i] = x_0 ⊕ … ⊕ x_i (inclusive) or
// out[i] = initial ⊕ x_0 ⊕ … ⊕ x_{i-1} (exclusive) for any associative Op.
//
//   work        O(n) combines (about 2n + look-back), steps O(ITEMS + log BLOCK
//               + look-back depth);
//   bytes       2·n·sizeof(T) (each element read once, written once) plus the
//               tile state (one word per tile for 4-byte T, 2.5 for 8-byte T);
//   launches    one (after a memset of the tile state, made by the host);
//   shared mem  (TILE + TILE/(128/sizeof T))·sizeof(T) exchange + warp totals
//               (≈ 17 KB for 256 × 16 four-byte items);
//   banks       conflict-free exchange (padding every 128 bytes);
//   in place    yes: a block reads its whole tile before writing any of it and
//               tiles are disjoint;
//   determinism not for floats: a tile's prefix is either a predecessor's
//               inclusive prefix or a chain of aggregates folded onto an earlier
//               prefix, depending on timing, so rounding differs run to run.
//               Integers (wrapping) are exact either way.
//
// One block per tile. Block geometry: 1-D grid of num_tiles blocks, possibly
// spilling into gridDim.y (linear_block_index() only guards surplus blocks);
// the TILE INDEX comes from the atomic counter in the state, not from
// blockIdx, so tiles are handed out in the order blocks start.
//
// Tile flow (one block):
//   1. thread 0 takes the tile index from the counter; barrier.
//   2. load the tile striped + coalesced (16-byte vectors when aligned),
//      exchange to blocked through shared memory; partial last tile padded
//      with the identity (those items are never stored).
//   3. each thread reduces its ITEMS items; block exclusive scan of the thread
//      totals gives thread prefixes and the tile aggregate.
//   4. warp 0: tile 0 publishes PREFIX at once ((initial ⊕) aggregate); any
//      other tile publishes AGGREGATE, looks back (lookback.cuh), publishes
//      PREFIX = exclusive prefix ⊕ aggregate; the exclusive prefix goes to
//      shared memory; barrier.
//   5. each thread rescans its items seeded with tile prefix ⊕ thread prefix,
//      exchange back to striped, store (vectorised when aligned).

template <typename T, typename Op, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ void scan_lookback_tile(const T* in, T* out, u64* state, u64 n,
                                                   u64 num_tiles, u32 exclusive, T initial,
                                                   u32 vector_ok) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    typedef BlockScan<T, Op, BLOCK_THREADS> Scan;
    typedef typename TileStatusFor<T>::type Status;
    __shared__ T exchange[ExchangeSize<T, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ typename Scan::Storage scan_storage;
    __shared__ u64 tile_slot;
    __shared__ T tile_prefix_slot;

    // Surplus blocks of a grid that spilled into y take no tile.
    if (linear_block_index() >= num_tiles) return;

    if (threadIdx.x == 0) tile_slot = lookback_next_tile(state);
    __syncthreads();
    const u64 tile = tile_slot;
    const u64 tile_base = tile * (u64)TILE;
    const u64 remaining = n - tile_base;
    const u32 valid = remaining < (u64)TILE ? (u32)remaining : TILE;

    T items[ITEMS];
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(in + tile_base, valid, vector_ok != 0u, exchange,
                                                items, Op::identity());
    const T thread_total = thread_reduce<T, Op, ITEMS>(items);
    T aggregate;
    const T thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    if (threadIdx.x < 32) {
        Status status(lookback_status_region(state), num_tiles);
        const bool leader = threadIdx.x == 0;
        T tile_prefix = initial;
        if (tile == 0) {
            if (leader)
                status.publish(0, TILE_PREFIX,
                               exclusive ? Op::combine(initial, aggregate) : aggregate);
        } else {
            if (leader) status.publish(tile, TILE_AGGREGATE, aggregate);
            tile_prefix = warp_lookback<T, Op, Status>(status, tile);
            if (leader) status.publish(tile, TILE_PREFIX, Op::combine(tile_prefix, aggregate));
        }
        if (leader) tile_prefix_slot = tile_prefix;
    }
    __syncthreads();

    // Tile 0 of an inclusive scan has no prefix; every other case has one
    // (an exclusive scan's tile 0 starts from `initial`).
    const bool has_tile_prefix = tile > 0 || exclusive != 0u;
    bool has_seed;
    const T seed = block_thread_seed<T, Op>(tile_prefix_slot, has_tile_prefix, thread_prefix,
                                            has_seed);
    thread_scan_seeded<T, Op, ITEMS>(items, seed, has_seed, exclusive != 0u);
    block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, vector_ok != 0u, exchange,
                                                 items);
}
