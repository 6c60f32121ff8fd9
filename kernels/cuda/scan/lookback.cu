// scan/lookback.cu — single-pass inclusive/exclusive scan with decoupled
// look-back (Merrill & Garland 2016). Needs the single-pass headers: warp/warp_scan.cuh, block/block_scan.cuh,
// single_pass/tile_status.cuh, single_pass/lookback.cuh.
//
// Computes out[i] = x_0 ⊕ … ⊕ x_i (inclusive, kind 0),
// out[i] = initial ⊕ x_0 ⊕ … ⊕ x_{i-1} (exclusive, kind 1) or
// out[i] = initial ⊕ x_0 ⊕ … ⊕ x_i (inclusive from initial, kind 2) for any
// associative Op (initial always on the left). `kind` is uniform over the
// grid (crates/scan/src/kind.rs): non-zero seeds tile 0's prefix with
// initial, 1 alone shifts the outputs.
//
//   work        O(n) combines (about 2n + look-back), steps O(ITEMS + log BLOCK
//               + look-back depth);
//   bytes       2·n·sizeof(T) (each element read once, written once) plus the
//               tile state, sized by the accumulator A (below): one word per
//               tile for 4-byte A, two with the 16-byte stride; 2.5 for 8-byte
//               A split, 2 with the 128-bit status word);
//   launches    one (the tile state is epoch-tagged: no memset between calls);
//   shared mem  (TILE + TILE/(128/sizeof T))·sizeof(T) exchange + warp totals
//               of A (≈ 17 KB for 256 × 16 four-byte items);
//   banks       conflict-free exchange (padding every 128 bytes);
//   in place    yes: a block reads its whole tile before writing any of it and
//               tiles are disjoint;
//   determinism not for floats: a tile's prefix is either a predecessor's
//               inclusive prefix or a chain of aggregates folded onto an earlier
//               prefix, depending on timing, so rounding differs run to run.
//               Integers (wrapping) are exact either way.
//
// Variants (template parameters, one entry each; lookback.rs picks them from
// its tuning table): WIDTH = predecessors per lane per look-back round,
// STATUS8 = status encoding (8-byte A: 0 split, 1 packed 128-bit; 4-byte A:
// the packed 64-bit word at an 8- or 16-byte stride), SPIN_NS =
// back-off while predecessors are unpublished, START_NS = one sleep before
// the look-back's first read (both single_pass/lookback.cuh, large grids only), STREAM =
// evict-first cache hints on the data (striped layout only), IN_BLOCK_ORDER =
// where a block's tile index comes from (below); and two tile
// layouts: scan_lookback_tile (shared-memory exchange, below) and
// scan_lookback_tile_striped (registers only, further below).
//
// One block per tile. Block geometry: 1-D grid of num_tiles blocks, possibly
// spilling into gridDim.y (linear_block_index() only guards surplus blocks).
// The TILE INDEX comes from the atomic counter in the state, so tiles are
// handed out in the order blocks start, or with IN_BLOCK_ORDER it is the
// linear block index (single_pass/tile_status.cuh, lookback_block_tile).
//
// Tile flow (one block):
//   1. the tile index: thread 0 takes it from the counter, barrier; or the
//      block's index.
//   2. load the tile striped + coalesced (16-byte vectors when aligned),
//      exchange to blocked through shared memory; partial last tile padded
//      with the identity (those items are never stored).
//   3. each thread reduces its ITEMS items; block exclusive scan of the thread
//      totals gives thread prefixes and the tile aggregate.
//   4. warp 0: tile 0 publishes PREFIX at once (aggregate, or initial ⊕
//      aggregate for kinds 1 and 2); any
//      other tile publishes AGGREGATE, looks back (single_pass/lookback.cuh; on large
//      grids after a START_NS sleep, with SPIN_NS sleeps between re-reads), publishes
//      PREFIX = exclusive prefix ⊕ aggregate; the exclusive prefix goes to
//      shared memory; barrier.
//   5. each thread rescans its items seeded with tile prefix ⊕ thread prefix,
//      exchange back to striped, store (vectorised when aligned).

// Element type and accumulator. The kernels read and write T, and scan in
// A = Op::value_type: every item is widened to A once when loaded and
// narrowed to T once when stored; the block scan, the warp scans and the
// tile state (TileStatusFor<A>) all hold A. The host builds op_t on T
// itself for the 4- and 8-byte types (A = T: both conversions are the
// identity and compile to nothing) and on a 4-byte accumulator for the
// narrow ones (crates/scan/src/lookback.rs, scan_operator):
//   i8, i16 → i32 (sign-extended), u8, u16 → u32 (zero-extended): wrapping
//     sums, max, min, and, or, xor of the extended values, truncated to T,
//     are exactly T's own wrapping results (the low bits of a sum depend
//     only on the low bits of its operands; max and min of extended values
//     are extended values; the bit operators act bit by bit);
//   f16, bf16 → f32: every combine in f32, each output rounded once to
//     nearest even (PyTorch's rule for 16-bit cumulative sums).
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, int WIDTH = 1, int STATUS8 = 0,
          int SPIN_NS = 0, int START_NS = 0, bool IN_BLOCK_ORDER = false>
__device__ __forceinline__ void scan_lookback_tile(const T* in, T* out, u64* state, u32 epoch, u64 n,
                                                   u64 num_tiles, u32 kind, T initial,
                                                   u32 vector_ok) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    typedef typename Op::value_type A;
    typedef BlockScan<A, Op, BLOCK_THREADS> Scan;
    typedef typename TileStatusFor<A, STATUS8>::type Status;
    __shared__ T exchange[ExchangeSize<T, BLOCK_THREADS * ITEMS>::ITEMS];
    __shared__ typename Scan::Storage scan_storage;
    __shared__ u64 tile_slot;
    __shared__ A tile_prefix_slot;

    lookback_prepare_next_call(state, epoch);
    // Surplus blocks of a grid that spilled into y take no tile.
    if (linear_block_index() >= num_tiles) return;

    const u64 tile = lookback_block_tile<IN_BLOCK_ORDER>(state, epoch, &tile_slot);
    const A initial_acc = widen<A>(initial);
    const u64 tile_base = tile * (u64)TILE;
    const u64 remaining = n - tile_base;
    const u32 valid = remaining < (u64)TILE ? (u32)remaining : TILE;

    T loaded[ITEMS];
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(in + tile_base, valid, vector_ok != 0u, exchange,
                                                loaded, narrow<T>(Op::identity()));
    A items[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) items[j] = widen<A>(loaded[j]);
    const A thread_total = thread_reduce<A, Op, ITEMS>(items);
    A aggregate;
    const A thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    if (threadIdx.x < 32) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        const bool leader = threadIdx.x == 0;
        A tile_prefix = initial_acc;
        if (tile == 0) {
            if (leader)
                status.publish(0, TILE_PREFIX,
                               kind != 0u ? Op::combine(initial_acc, aggregate) : aggregate);
        } else {
            if (leader) status.publish(tile, TILE_AGGREGATE, aggregate);
            tile_prefix = warp_lookback<A, Op, Status, WIDTH, SPIN_NS, START_NS>(
                status, tile, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
            if (leader) status.publish(tile, TILE_PREFIX, Op::combine(tile_prefix, aggregate));
        }
        if (leader) tile_prefix_slot = tile_prefix;
    }
    __syncthreads();

    // Tile 0 of an unseeded inclusive scan has no prefix; every other case
    // has one (a seeded kind's tile 0 starts from `initial`).
    const bool has_tile_prefix = tile > 0 || kind != 0u;
    bool has_seed;
    const A seed = block_thread_seed<A, Op>(tile_prefix_slot, has_tile_prefix, thread_prefix,
                                            has_seed);
    thread_scan_seeded<A, Op, ITEMS>(items, seed, has_seed, kind == 1u);
    T stored[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) stored[j] = narrow<T>(items[j]);
    block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, vector_ok != 0u, exchange,
                                                 stored);
}

// ---------------------------------------------------------------------------
// scan_lookback_tile_striped — the same scan without the shared-memory
// exchange: "vectorised warp-striped" registers.
//
// Layout: warp w of the block owns the WARP_ITEMS = 32·ITEMS consecutive
// items [w·WARP_ITEMS, (w+1)·WARP_ITEMS) of the tile; within it, lane l holds
// GROUPS = ITEMS / VEC groups of VEC consecutive items, group k at warp
// offset (k·32 + l)·VEC (VEC = 16 / sizeof(T) when ITEMS is a multiple of it,
// else 1). So load k of a warp reads 32 consecutive 16-byte vectors (512
// contiguous bytes: perfectly coalesced) and no transposition is needed.
// Index order within the warp is (k, lane, c): groups of one k across the
// lanes, then the next k. The scan follows exactly that order:
//   * each lane reduces each of its groups (VEC − 1 combines);
//   * for k = 0 … GROUPS−1 a warp shuffle scan of the group sums gives
//     group k's prefix within the warp: carry_k (the warp's groups < k) ⊕
//     the lanes below l at k; the group is rescanned from it at once, so
//     the items hold warp-local scan values before anything waits on other
//     warps;
//   * warp totals through shared memory (one barrier) give each warp its
//     prefix and the tile aggregate, folded serially in warp order;
//   * warp 0 publishes and looks back; one barrier hands over the tile
//     prefix; every item is combined with tile prefix ⊕ warp prefix and
//     stored with the same 16-byte vectors.
// Operands stay in index order throughout (non-commutative Op is fine);
// absent prefixes are left out, never replaced by the identity.
//
//   work        O(n) combines (≈ 3n: group sums, rescan, final prefix) plus
//               GROUPS warp shuffle scans per thread;
//   bytes       2·n·sizeof(T) plus the tile state, as above;
//   shared mem  WARPS·sizeof(T) + 16 bytes (no exchange), so occupancy is set
//               by registers (ITEMS + ~25 per thread);
//   barriers    2 per tile (warp totals, tile prefix), 3 with the tile
//               index from the counter;
//   banks       no conflicts (one word per warp, broadcast reads);
//   in place    yes, as above; deterministic: as above (integers exact).
// A partial last tile or a misaligned view takes scalar loads/stores in the
// same layout (bounds-checked, the padding items are the identity and are
// never stored).
// 16-byte global accesses, plain or with the evict-first (.cs, "streaming")
// cache hint: the data is touched exactly once, so it need not displace the
// tile states from L2.
template <int STREAM>
__device__ __forceinline__ uint4 load_vector(const uint4* p) {
    if (STREAM == 0) return *p;
    uint4 v;
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
template <int STREAM>
__device__ __forceinline__ void store_vector(uint4* p, uint4 v) {
    if (STREAM == 0) {
        *p = v;
        return;
    }
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

// One tile of the striped scan, `tile` uniform in the block. Two barriers
// (A: warp totals, B: tile prefix); `warp_totals` (WARPS elements) and
// `tile_prefix_slot` are the caller's shared memory.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, int WIDTH, int STATUS8,
          int SPIN_NS, int STREAM, int START_NS>
__device__ __forceinline__ void striped_tile(const T* in, T* out, u64* state, u32 epoch, u64 n,
                                             u64 num_tiles, u32 kind, T initial,
                                             u32 vector_ok, u64 tile,
                                             typename Op::value_type* warp_totals,
                                             typename Op::value_type* tile_prefix_slot) {
    static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS >= 32 && BLOCK_THREADS <= 1024,
                  "BLOCK_THREADS must be a multiple of 32 from 32 to 1024");
    constexpr int WARPS = BLOCK_THREADS / 32;
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    constexpr u32 WARP_ITEMS = 32u * (u32)ITEMS;
    constexpr int VEC_WIDTH = 16 / (int)sizeof(T);
    constexpr int VEC = ITEMS % VEC_WIDTH == 0 ? VEC_WIDTH : 1;
    constexpr int GROUPS = ITEMS / VEC;
    typedef typename Op::value_type A;
    typedef typename TileStatusFor<A, STATUS8>::type Status;
    const A initial_acc = widen<A>(initial);

    const u64 tile_base = tile * (u64)TILE;
    const u64 remaining = n - tile_base;
    const u32 valid = remaining < (u64)TILE ? (u32)remaining : TILE;
    const int lane = warp_lane();
    const int warp = (int)(threadIdx.x >> 5);
    const u32 warp_base = (u32)warp * WARP_ITEMS;  // within the tile
    const bool vectors = VEC > 1 && vector_ok != 0u && valid == TILE;

    // 1. Load: group k of this lane is items [k·VEC, (k+1)·VEC).
    A items[ITEMS];
    if (vectors) {
        // 16-byte aligned: the tile (vector_ok) and the warp's part of it
        // (32·ITEMS·sizeof T is a multiple of 16) both start aligned.
        const uint4* source = reinterpret_cast<const uint4*>(in + tile_base + warp_base);
        Vec16<T> loaded[GROUPS];
#pragma unroll
        for (int k = 0; k < GROUPS; ++k) loaded[k].raw = load_vector<STREAM>(source + k * 32 + lane);
#pragma unroll
        for (int k = 0; k < GROUPS; ++k)
#pragma unroll
            for (int c = 0; c < VEC; ++c) items[k * VEC + c] = widen<A>(loaded[k].items[c]);
    } else {
#pragma unroll
        for (int k = 0; k < GROUPS; ++k)
#pragma unroll
            for (int c = 0; c < VEC; ++c) {
                const u32 e = warp_base + (u32)(k * 32 + lane) * (u32)VEC + (u32)c;
                items[k * VEC + c] = e < valid ? widen<A>(in[tile_base + e]) : Op::identity();
            }
    }

    // 2. Scan within the warp, in place. For each k a warp shuffle scan of
    //    the group sums gives group k's seed: everything of the warp before
    //    it (carry = the warp's groups < k, then the lanes below at k);
    //    absent only for k = 0 in lane 0. Each group is rescanned from its
    //    seed at once, so afterwards items[j] holds the warp-local inclusive
    //    (or exclusive) value and no seed stays live across the look-back.
    //    Exclusive: lane 0's first item has no local value (the warp prefix
    //    alone, handled in step 5).
    A carry = Op::identity();  // set at k = 0
#pragma unroll
    for (int k = 0; k < GROUPS; ++k) {
        A sum = items[k * VEC];
#pragma unroll
        for (int c = 1; c < VEC; ++c) sum = Op::combine(sum, items[k * VEC + c]);
        const A inclusive = warp_inclusive_scan<A, Op>(sum);
        const A lanes_below = __shfl_up_sync(PARPRIMS_FULL_WARP, inclusive, 1);
        const A total = __shfl_sync(PARPRIMS_FULL_WARP, inclusive, 31);
        const bool has_seed = k > 0 || lane > 0;
        A seed = lanes_below;  // k = 0 (meaningless in lane 0)
        if (k > 0) seed = lane == 0 ? carry : Op::combine(carry, lanes_below);
        carry = k == 0 ? total : Op::combine(carry, total);
        if (kind == 1u) {
            A run = seed;
#pragma unroll
            for (int c = 0; c < VEC; ++c) {
                const A x = items[k * VEC + c];
                items[k * VEC + c] = run;
                run = (c == 0 && !has_seed) ? x : Op::combine(run, x);
            }
        } else {
            A run = has_seed ? Op::combine(seed, items[k * VEC]) : items[k * VEC];
            items[k * VEC] = run;
#pragma unroll
            for (int c = 1; c < VEC; ++c) {
                run = Op::combine(run, items[k * VEC + c]);
                items[k * VEC + c] = run;
            }
        }
    }
    if (lane == 31) warp_totals[warp] = carry;
    __syncthreads();  // A

    // 3. The warp's prefix (warps before it) and the tile aggregate, folded
    //    serially in warp order from broadcast reads.
    A running = warp_totals[0];
    A warp_prefix = running;  // only meaningful for warp >= 1
#pragma unroll
    for (int w = 1; w < WARPS; ++w) {
        if (w == warp) warp_prefix = running;
        running = Op::combine(running, warp_totals[w]);
    }
    const A aggregate = running;

    // 4. Warp 0 publishes and looks back; the other warps wait at the
    //    barrier with their items already scanned.
    if (warp == 0) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        const bool leader = lane == 0;
        A tile_prefix = initial_acc;
        if (tile == 0) {
            if (leader)
                status.publish(0, TILE_PREFIX,
                               kind != 0u ? Op::combine(initial_acc, aggregate) : aggregate);
        } else {
            if (leader) status.publish(tile, TILE_AGGREGATE, aggregate);
            tile_prefix = warp_lookback<A, Op, Status, WIDTH, SPIN_NS, START_NS>(
                status, tile, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
            if (leader) status.publish(tile, TILE_PREFIX, Op::combine(tile_prefix, aggregate));
        }
        if (leader) *tile_prefix_slot = tile_prefix;
    }
    __syncthreads();  // B

    // 5. prefix = tile prefix ⊕ warp prefix (either may be absent: tile 0 of
    //    an unseeded inclusive scan has no tile prefix, warp 0 no warp
    //    prefix), folded onto every item; a seeded kind always has a tile
    //    prefix, and an exclusive scan's lane 0 first item is the prefix
    //    itself.
    const bool has_tile_prefix = tile > 0 || kind != 0u;
    const bool has_warp_prefix = warp > 0;
    A prefix = warp_prefix;
    if (has_tile_prefix)
        prefix = has_warp_prefix ? Op::combine(*tile_prefix_slot, warp_prefix) : *tile_prefix_slot;
    if (has_tile_prefix || has_warp_prefix) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) items[j] = Op::combine(prefix, items[j]);
    }
    if (kind == 1u && lane == 0) items[0] = prefix;
    if (vectors) {
        uint4* target = reinterpret_cast<uint4*>(out + tile_base + warp_base);
#pragma unroll
        for (int k = 0; k < GROUPS; ++k) {
            Vec16<T> v;
#pragma unroll
            for (int c = 0; c < VEC; ++c) v.items[c] = narrow<T>(items[k * VEC + c]);
            store_vector<STREAM>(target + k * 32 + lane, v.raw);
        }
    } else {
#pragma unroll
        for (int k = 0; k < GROUPS; ++k)
#pragma unroll
            for (int c = 0; c < VEC; ++c) {
                const u32 e = warp_base + (u32)(k * 32 + lane) * (u32)VEC + (u32)c;
                if (e < valid) out[tile_base + e] = narrow<T>(items[k * VEC + c]);
            }
    }
}

// One block per tile: the tile index (from the counter, or the block's index
// with IN_BLOCK_ORDER), then the tile.
template <typename T, typename Op, int BLOCK_THREADS, int ITEMS, int WIDTH = 1, int STATUS8 = 0,
          int SPIN_NS = 0, int STREAM = 0, int START_NS = 0, bool IN_BLOCK_ORDER = false>
__device__ __forceinline__ void scan_lookback_tile_striped(const T* in, T* out, u64* state, u32 epoch, u64 n,
                                                           u64 num_tiles, u32 kind,
                                                           T initial, u32 vector_ok) {
    typedef typename Op::value_type A;
    __shared__ A warp_totals[BLOCK_THREADS / 32];
    __shared__ u64 tile_slot;
    __shared__ A tile_prefix_slot;

    lookback_prepare_next_call(state, epoch);
    // Surplus blocks of a grid that spilled into y take no tile.
    if (linear_block_index() >= num_tiles) return;

    const u64 tile = lookback_block_tile<IN_BLOCK_ORDER>(state, epoch, &tile_slot);
    striped_tile<T, Op, BLOCK_THREADS, ITEMS, WIDTH, STATUS8, SPIN_NS, STREAM, START_NS>(
        in, out, state, epoch, n, num_tiles, kind, initial, vector_ok, tile, warp_totals,
        &tile_prefix_slot);
}
