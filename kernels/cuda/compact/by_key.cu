// compact/by_key.cu — runs of equal consecutive keys, in one kernel on the
// decoupled look-back of single_pass/ (crate `compact`, by_key.rs,
// run_length.rs, unique.rs).
//
// A run is a maximal stretch of consecutive equal keys (integer keys,
// compared with ==, i.e. bitwise). Item i is a HEAD when i == 0 or
// key[i] != key[i−1], a TAIL when i == n−1 or key[i+1] != key[i]. One
// kernel, three modes:
//
//   BY_KEY_REDUCE      out_keys[r] = the key of run r, out_values[r] = the
//                      fold (in index order) of the run's values under Op;
//   BY_KEY_RUN_LENGTH  the same with every value 1 (u32, Op = sum): the
//                      run lengths (run-length encoding);
//   BY_KEY_UNIQUE      out_keys[r] = the key of run r and, when values are
//                      given, out_values[r] = the value at the run's head.
//   *runs_out = the number of runs.
//
// REDUCE and RUN_LENGTH scan pairs (heads, value) with
//   (ha, va) ⊕ (hb, vb) = (ha +sat hb, hb > 0 ? vb : va ⊕ vb),
// the segmented scan's pair (scan/segmented.cu) with the flag part counting
// heads instead of OR-ing them (a 32-bit count that saturates at 2^32 − 1:
// still associative, and "hb > 0" stays exact): associative whenever ⊕ is,
// not commutative (the block scan, the shuffles and the look-back keep index
// order). A 4-byte value and the count pack into one u64 (value bits low,
// heads high), which rides the 8-byte packed tile status unchanged; an
// 8-byte value and the count travel as a HeadedValue
// (single_pass/headed_value.cuh), published in one 128-bit status word with
// the tag, and the head counts' look-back then reads its words with the
// headed state's plain reader (TileStatusHeadedPlain128). Within a
// tile the counts are exact: the inclusive pair at item i holds the fold of
// i's run up to i, and the heads of the tile up to i. The tile's run slots
// start at the number of heads before the tile, a u64 found by a second
// look-back over u64 head counts (compaction's), run by warp 1 while warp 0
// looks back over the pairs; the two statuses live in one tile state
// (pairs at tiles [0, num_tiles), counts after them). A TAIL writes its run
// at slot = heads before the tile + heads of the tile up to it − 1, so any
// length works (64-bit slots). UNIQUE needs only the head count: an
// exclusive scan of u64 head flags, a HEAD writing its key (and value) at
// slot = heads before it.
//
// Per tile (TILE = BLOCK·ITEMS items, tiles taken in order from the
// counter): keys (and values) loaded blocked through shared memory
// (coalesced, 16-byte vectors when aligned and whole); the loads' shared
// exchange, which holds the whole tile, gives every item its neighbours (the
// tile's first thread reads the key before the tile, its last thread the
// key after it, from global memory); head and tail bits; the thread totals
// scanned by the block; the tile's aggregates published, its prefixes found
// by look-back (single_pass_publish_aggregate, single_pass_prefix: warp 0
// the pairs or UNIQUE's counts, warp 1 the pair modes' u64 head counts);
// each thread's items scanned from their seed and the runs written where
// they end (or start).
//
// Work O(n); bytes n·k (+ n·v) read, runs·(k + v) written, plus 16 bytes
// of tile state per tile (32 for the pair modes); one launch, no memset
// (epoch-tagged state); barriers per tile: after the tile draw, the
// loads' (one per array), the block scan's, and one after the look-backs.
// Writes are scattered by slot; consecutive runs go to consecutive slots.

#define BY_KEY_REDUCE 0
#define BY_KEY_RUN_LENGTH 1
#define BY_KEY_UNIQUE 2

// The (heads, value) pair of REDUCE and RUN_LENGTH: packed in a u64 for
// 4-byte values, a HeadedValue for 8-byte ones. The head count saturates
// at 2^32 − 1 (associative).
__device__ __forceinline__ u32 run_heads_add(u32 a, u32 b) {
    const u32 sum = a + b;
    return sum < a ? 0xffffffffu : sum;
}
template <typename V, typename Op, int SIZE = (int)sizeof(V)>
struct run_pair_op;
template <typename V, typename Op>
struct run_pair_op<V, Op, 4> {
    typedef u64 value_type;
    static __device__ __forceinline__ u64 pack(V value, u32 heads) {
        return ((u64)heads << 32) | (u64)bits_of<V, u32>(value);
    }
    static __device__ __forceinline__ u32 heads(u64 pair) { return (u32)(pair >> 32); }
    static __device__ __forceinline__ V value(u64 pair) { return from_bits<V, u32>((u32)pair); }
    static __device__ __forceinline__ u64 identity() { return pack(Op::identity(), 0u); }
    static __device__ __forceinline__ u64 combine(u64 a, u64 b) {
        const u32 ha = heads(a);
        const u32 hb = heads(b);
        const u32 sum = ha + hb;
        const u32 h = sum < ha ? 0xffffffffu : sum;  // saturating: associative
        if (hb != 0u) return pack(value(b), h);
        return pack(Op::combine(value(a), value(b)), h);
    }
};
template <typename V, typename Op>
struct run_pair_op<V, Op, 8> {
    typedef HeadedValue<V> value_type;
    static __device__ __forceinline__ value_type pack(V value, u32 heads) { return headed_value<V>(value, heads); }
    static __device__ __forceinline__ u32 heads(value_type pair) { return pair.heads; }
    static __device__ __forceinline__ V value(value_type pair) { return pair.value; }
    static __device__ __forceinline__ value_type identity() { return pack(Op::identity(), 0u); }
    static __device__ __forceinline__ value_type combine(value_type a, value_type b) {
        const u32 h = run_heads_add(a.heads, b.heads);
        if (b.heads != 0u) return pack(b.value, h);
        return pack(Op::combine(a.value, b.value), h);
    }
};

// The status of the u64 head counts' look-back beside the pairs': the
// packed 128-bit word beside packed pairs, the headed state's plain reader
// beside headed pairs (their words share one state).
template <typename A>
struct by_key_count_status {
    typedef typename TileStatusFor<u64, 1>::type type;
};
template <typename V>
struct by_key_count_status<HeadedValue<V>> {
    typedef TileStatusHeadedPlain128<u64> type;
};

// Thread 0 of block (0, 0).
__device__ __forceinline__ bool by_key_first_thread_of_grid() {
    return threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0;
}

// The scanned operator of a mode: pairs, or u64 head counts for UNIQUE.
template <typename V, typename Op, int MODE>
struct by_key_scan_op {
    typedef run_pair_op<V, Op> type;
};
template <typename V, typename Op>
struct by_key_scan_op<V, Op, BY_KEY_UNIQUE> {
    typedef sum_op<u64> type;
};

// The head count of a pair (0 for UNIQUE, whose scan carries no pairs).
template <typename S, bool UNIQUE, typename A>
__device__ __forceinline__ u32 by_key_pair_heads(A pair) {
    if constexpr (UNIQUE) {
        return 0u;
    } else {
        return S::heads(pair);
    }
}

// All-zero bits of a 4- or 8-byte type (the fill of a partial tile's
// unused values; never written out).
template <typename T>
__device__ __forceinline__ T by_key_zero() {
    if constexpr (sizeof(T) == 4) {
        return from_bits<T, u32>(0u);
    } else {
        return from_bits<T, u64>(0ull);
    }
}

// keys: n keys; values: n values, or null (RUN_LENGTH, UNIQUE without
// values); keys_out, values_out: room for every run (values_out null when
// values is, except RUN_LENGTH, where it receives the u32 counts);
// runs_out: one u64. vector_ok bit 0: keys 16-byte aligned; bit 1: values.
template <typename K, typename V, typename Op, int MODE, bool HAS_VALUES, int BLOCK, int ITEMS, int WIDTH,
          int SPIN_NS, int START_NS>
__device__ __forceinline__ void by_key_tile(const K* __restrict__ keys, const V* __restrict__ values,
                                            K* __restrict__ keys_out, V* __restrict__ values_out,
                                            u64* runs_out, u64* state, u32 epoch, u64 n, u64 num_tiles,
                                            u32 vector_ok) {
    static_assert(ITEMS >= 1 && ITEMS <= 32, "head and tail bits live in a u32");
    static_assert(MODE != BY_KEY_RUN_LENGTH || !HAS_VALUES, "run lengths count implicit ones");
    constexpr u32 TILE = (u32)BLOCK * (u32)ITEMS;
    constexpr bool UNIQUE = MODE == BY_KEY_UNIQUE;
    typedef typename by_key_scan_op<V, Op, MODE>::type S;
    typedef typename S::value_type A;
    typedef BlockScan<A, S, BLOCK> Scan;
    typedef typename TileStatusFor<A, 1>::type Status;
    __shared__ K key_exchange[ExchangeSize<K, TILE>::ITEMS];
    __shared__ V value_exchange[HAS_VALUES ? ExchangeSize<V, TILE>::ITEMS : 1];
    __shared__ typename Scan::Storage scan_storage;
    __shared__ u64 s_tile;
    __shared__ A s_prefix;
    __shared__ u64 s_heads_before;  // pair modes: heads before the tile

    lookback_prepare_next_call(state, epoch);
    if (n == 0) {  // one block, no tile drawn: no runs
        if (by_key_first_thread_of_grid()) *runs_out = 0ull;
        return;
    }
    if (linear_block_index() >= num_tiles) return;
    if (threadIdx.x == 0) s_tile = lookback_next_tile(state, epoch);
    __syncthreads();
    const u64 tile = s_tile;
    const u64 tile_base = tile * (u64)TILE;
    const u32 valid = tile_valid_items(n, tile_base, TILE);
    const u32 tid = threadIdx.x;

    // The keys just outside the tile, issued first so that their latency
    // overlaps the tile's loads.
    K edge_before = (K)0;
    K edge_after = (K)0;
    if (tid == 0u && tile_base > 0) edge_before = keys[tile_base - 1];
    if (tid == (u32)BLOCK - 1u && tile_base + TILE < n) edge_after = keys[tile_base + TILE];

    K key[ITEMS];
    block_load_blocked<K, BLOCK, ITEMS>(keys + tile_base, valid, (vector_ok & 1u) != 0u, key_exchange, key,
                                        (K)0);
    V value[ITEMS];
    if constexpr (HAS_VALUES) {
        V fill;
        if constexpr (MODE == BY_KEY_REDUCE) {
            fill = Op::identity();
        } else {
            fill = by_key_zero<V>();
        }
        block_load_blocked<V, BLOCK, ITEMS>(values + tile_base, valid, (vector_ok & 2u) != 0u, value_exchange,
                                            value, fill);
    }

    // Neighbours: the key before this thread's first item and after its
    // last, read from the exchange, which still holds the whole tile
    // (block_load_blocked wrote all TILE entries, padding included, before
    // its barrier; nothing writes it again). Items past n are never heads
    // or tails (position checks below).
    const u64 first_index = tile_base + (u64)tid * ITEMS;  // index of key[0]
    // (Thread 0 of tile 0 has no key before: item 0 is a head by position.
    // The last thread of the last tile has none after: item n − 1 is a tail
    // by position.)
    const K before = tid > 0 ? key_exchange[exchange_index<K>(tid * (u32)ITEMS - 1u)] : edge_before;
    const K after =
        tid + 1u < (u32)BLOCK ? key_exchange[exchange_index<K>((tid + 1u) * (u32)ITEMS)] : edge_after;
    u32 head_bits = 0u;
    u32 tail_bits = 0u;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u64 p = first_index + (u64)j;
        if (p < n) {
            const K previous = j == 0 ? before : key[j - 1];
            const K next = j == ITEMS - 1 ? after : key[j + 1];
            if (p == 0 || previous != key[j]) head_bits |= 1u << j;
            if (p == n - 1 || next != key[j]) tail_bits |= 1u << j;
        }
    }

    A items[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 head = (head_bits >> j) & 1u;
        if constexpr (UNIQUE) {
            items[j] = (A)head;
        } else if constexpr (MODE == BY_KEY_RUN_LENGTH) {
            items[j] = S::pack((V)1u, head);
        } else {
            items[j] = S::pack(value[j], head);
        }
    }
    const A thread_total = thread_reduce<A, S, ITEMS>(items);
    A aggregate;
    const A thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    if (tid < 32u) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        // Successors may already be looking back at this tile: publish first.
        if (tid == 0u) single_pass_publish_aggregate<A, Status>(status, tile, aggregate);
        const A prefix = single_pass_prefix<A, S, Status, WIDTH, SPIN_NS, START_NS>(
            status, tile, aggregate, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
        if (tid == 0u) s_prefix = prefix;
    } else if (!UNIQUE && tid < 64u) {
        // The exact u64 head count before the tile (the tile's own count,
        // at most TILE, is exact in the pair).
        typedef typename by_key_count_status<A>::type CountStatus;
        CountStatus counts(lookback_status_region(state) + CountStatus::region_words(num_tiles), num_tiles,
                           epoch);
        const u64 tile_heads = (u64)by_key_pair_heads<S, UNIQUE>(aggregate);
        if (tid == 32u) single_pass_publish_aggregate<u64, CountStatus>(counts, tile, tile_heads);
        const u64 before = single_pass_prefix<u64, sum_op<u64>, CountStatus, WIDTH, SPIN_NS, START_NS>(
            counts, tile, tile_heads, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
        if (tid == 32u) s_heads_before = before;
    }
    __syncthreads();

    // UNIQUE: exclusive head counts (seeded with 0 in tile 0, exact).
    // Pairs: inclusive, tile 0 without a prefix (the identity is never folded).
    bool has_seed;
    const A seed = block_thread_seed<A, S>(s_prefix, tile > 0 || UNIQUE, thread_prefix, has_seed);
    // Pair modes: heads of the tile before this thread (exact, block-local;
    // the block scan's prefix is the identity, 0 heads, for thread 0).
    const u32 thread_heads = by_key_pair_heads<S, UNIQUE>(thread_prefix);
    thread_scan_seeded<A, S, ITEMS>(items, seed, has_seed, UNIQUE);

#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u64 p = first_index + (u64)j;
        if constexpr (UNIQUE) {
            if ((head_bits >> j) & 1u) {
                const u64 slot = items[j];
                keys_out[slot] = key[j];
                if constexpr (HAS_VALUES) values_out[slot] = value[j];
            }
            if (p == n - 1) *runs_out = items[j] + (u64)((head_bits >> j) & 1u);
        } else {
            if ((tail_bits >> j) & 1u) {
                // Heads before the tile, before this thread in the tile, and
                // among this thread's items up to j (all at least 1 in all).
                const u64 heads = s_heads_before + (u64)thread_heads +
                                  (u64)__popc(head_bits & (0xffffffffu >> (31 - j)));
                keys_out[heads - 1ull] = key[j];
                values_out[heads - 1ull] = S::value(items[j]);
            }
            if (p == n - 1)
                *runs_out = s_heads_before + (u64)thread_heads +
                            (u64)__popc(head_bits & (0xffffffffu >> (31 - j)));
        }
    }
}
