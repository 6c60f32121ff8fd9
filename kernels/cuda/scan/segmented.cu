// scan/segmented.cu — segmented scan by head flags, on the decoupled
// look-back of single_pass/ (crate `scan`, segmented.rs).
//
// A segment starts at every item whose flag byte is non-zero (and at item
// 0). The scan runs over pairs (flag, value) with the segmented operator
//   (fa, va) ⊕ (fb, vb) = (fa | fb, fb ? vb : va ⊕ vb),
// associative whenever ⊕ is, and not commutative: the look-back, the block
// scan and the warp scans keep operands in index order, so they carry it
// unchanged. For 4-byte values the pair packs into one u64 (value bits low,
// flag at bit 32), so the pair travels through shuffles and the 8-byte
// packed tile status (one 128-bit word per tile) like any 8-byte value.
//
// Per tile: values and flags loaded blocked through shared memory
// (coalesced, 16-byte vectors when aligned and whole), packed, scanned by
// the block, the tile's aggregate pair published and the prefix pair found
// by look-back, then each item's value stored. Inclusive: the value of the
// inclusive pair. Exclusive: the operator's identity at a segment head,
// else the value of the exclusive pair.
//
// Work O(n); bytes n·s + n read, n·s written, plus 16 bytes of tile state
// per tile; one launch, no memset (epoch-tagged state). Shared memory: the
// padded value and flag exchanges and the block scan's warp totals.

template <typename T, typename Op>
struct segmented_op {
    static_assert(sizeof(T) == 4, "segmented pairs pack 4-byte values");
    typedef u64 value_type;
    static __device__ __forceinline__ u64 pack(T value, u32 head) {
        return ((u64)head << 32) | (u64)bits_of<T, u32>(value);
    }
    static __device__ __forceinline__ T value(u64 pair) { return from_bits<T, u32>((u32)pair); }
    static __device__ __forceinline__ u64 identity() { return pack(Op::identity(), 0u); }
    static __device__ __forceinline__ u64 combine(u64 a, u64 b) {
        if (b >> 32) return b;
        return pack(Op::combine(value(a), value(b)), (u32)(a >> 32));
    }
};

template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, int WIDTH, int SPIN_NS, int START_NS>
__device__ __forceinline__ void segmented_scan_tile(const T* in, const u8* heads, T* out, u64* state,
                                                    u32 epoch, u64 n, u64 num_tiles, u32 exclusive,
                                                    u32 vector_ok) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    typedef segmented_op<T, Op> S;
    typedef u64 A;
    typedef BlockScan<A, S, BLOCK_THREADS> Scan;
    typedef typename TileStatusFor<A, 1>::type Status;
    __shared__ T exchange[ExchangeSize<T, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ u8 head_exchange[ExchangeSize<u8, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ typename Scan::Storage scan_storage;
    __shared__ u64 tile_slot;
    __shared__ A tile_prefix_slot;

    lookback_prepare_next_call(state, epoch);
    if (linear_block_index() >= num_tiles) return;
    if (threadIdx.x == 0) tile_slot = lookback_next_tile(state, epoch);
    __syncthreads();
    const u64 tile = tile_slot;
    const u64 tile_base = tile * (u64)TILE;
    const u64 remaining = n - tile_base;
    const u32 valid = remaining < (u64)TILE ? (u32)remaining : TILE;

    T loaded[ITEMS];
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(in + tile_base, valid, (vector_ok & 1u) != 0u, exchange,
                                                loaded, Op::identity());
    u8 head[ITEMS];
    block_load_blocked<u8, BLOCK_THREADS, ITEMS>(heads + tile_base, valid, (vector_ok & 2u) != 0u,
                                                 head_exchange, head, (u8)0);
    A items[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) items[j] = S::pack(loaded[j], head[j] != 0 ? 1u : 0u);
    const A thread_total = thread_reduce<A, S, ITEMS>(items);
    A aggregate;
    const A thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    if (threadIdx.x < 32) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        const bool leader = threadIdx.x == 0;
        A tile_prefix = S::identity();
        if (tile == 0) {
            if (leader) status.publish(0, TILE_PREFIX, aggregate);
        } else {
            if (leader) status.publish(tile, TILE_AGGREGATE, aggregate);
            tile_prefix = warp_lookback<A, S, Status, WIDTH, SPIN_NS, START_NS>(
                status, tile, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
            if (leader) status.publish(tile, TILE_PREFIX, S::combine(tile_prefix, aggregate));
        }
        if (leader) tile_prefix_slot = tile_prefix;
    }
    __syncthreads();

    // As the exclusive scan of the look-back scan with the identity pair
    // for `initial`: tile 0 of an inclusive scan has no prefix.
    const bool has_tile_prefix = tile > 0 || exclusive != 0u;
    bool has_seed;
    const A seed = block_thread_seed<A, S>(tile_prefix_slot, has_tile_prefix, thread_prefix, has_seed);
    thread_scan_seeded<A, S, ITEMS>(items, seed, has_seed, exclusive != 0u);
    T stored[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
        stored[j] = (exclusive != 0u && head[j] != 0) ? Op::identity() : S::value(items[j]);
    block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, (vector_ok & 1u) != 0u, exchange,
                                                 stored);
}
