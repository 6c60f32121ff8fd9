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
// start at the number of heads before the tile: below 2^32 items the
// prefix pair's own count (exact: it cannot saturate); with WIDE_HEADS
// (2^32 items or more) a u64 found by a second look-back over u64 head
// counts (compaction's), run by warp 1 while warp 0 looks back over the
// pairs, the two statuses in one tile state (pairs at tiles [0, num_tiles),
// counts after them). Run r of the input is slot r (64-bit slots: any
// length works). UNIQUE needs only the head count: an exclusive scan of u64
// head counts, run r's key (and value) taken from its HEAD.
//
// Per tile (TILE = BLOCK·ITEMS items, tiles taken in order from the
// counter, or with IN_BLOCK_ORDER the block's own index: lookback_block_tile
// in single_pass/tile_status.cuh): keys (and values) loaded blocked through
// shared memory (coalesced, 16-byte vectors when aligned and whole); the loads' shared
// exchange, which holds the whole tile, gives every item its neighbours (the
// tile's first thread reads the key before the tile, its last thread the
// key after it, from global memory); head and tail bits (32-bit positions
// within the tile); the thread totals scanned by the block (run lengths
// fold (heads, items since the last head) from the bits alone, with no
// per-item pairs); the tile's aggregate published. The pair modes then
// stage every TAIL before the look-back returns: its position in the tile
// (u16) at its run's slot in the tile (the heads of the tile up to it; 0
// for the run carried in from the previous tile) and, for REDUCE, its fold
// from the block-local scan in the value exchange, which the loads no longer
// need. The prefix found (single_pass_publish_aggregate, single_pass_prefix:
// warp 0 the pairs or UNIQUE's counts, warp 1 the u64 head counts with
// WIDE_HEADS), the block writes the staged runs coalesced: the key from the
// key exchange at the staged position, the length as the distance from the
// previous tail (the first tail's adds what the prefix carries in) or the
// fold (the carried-in run's folded onto the prefix's). UNIQUE stages each
// HEAD's position at the tile's heads before it, and writes the heads'
// keys (and values, from the value exchange) coalesced after the prefix.
//
// Work O(n); bytes n·k (+ n·v) read, runs·(k + v) written, plus 16 bytes
// of tile state per tile (32 for the pair modes with WIDE_HEADS); one
// launch, no memset (epoch-tagged state); barriers per tile: after the tile
// draw (from the counter only), the loads' (one per array), the block
// scan's, and one after the look-backs. Consecutive runs go to consecutive
// slots.

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

// The head count a scanned value holds: a pair's count, or UNIQUE's u64
// count itself.
template <typename S, bool UNIQUE, typename A>
__device__ __forceinline__ u64 by_key_heads(A scanned) {
    if constexpr (UNIQUE) {
        return (u64)scanned;
    } else {
        return (u64)S::heads(scanned);
    }
}

// Stages the tile position of each item whose bit is set in `items` at
// slot_base + the head count up to and including the item: a tail's run
// slot (slot_base = heads before the thread), or a head's (slot_base =
// heads before the thread − 1, modulo 2^32).
__device__ __forceinline__ void by_key_stage_positions(u32 items, u32 head_bits, u32 slot_base, u32 first_local,
                                                       u16* positions) {
    for (u32 t = items; t != 0u; t &= t - 1u) {
        const u32 j = (u32)__ffs(t) - 1u;
        positions[slot_base + (u32)__popc(head_bits & (0xffffffffu >> (31u - j)))] = (u16)(first_local + j);
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
// WIDE_HEADS: n ≥ 2^32, the u64 head counts' second look-back.
template <typename K, typename V, typename Op, int MODE, bool HAS_VALUES, bool WIDE_HEADS, int BLOCK, int ITEMS,
          int WIDTH, int SPIN_NS, int START_NS, bool IN_BLOCK_ORDER = false>
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
    // Outputs are staged: each tail's position in the tile, by its run's
    // slot in the tile (slot 0: the run carried in from the previous tile;
    // UNIQUE: each head's, by the tile's heads before it), reduce's folds
    // in the value exchange (free once the values are in registers), and
    // whether the tile's first item is a head and its last valid item a
    // tail.
    constexpr bool RUN_LENGTH = MODE == BY_KEY_RUN_LENGTH;
    static_assert(TILE <= 65536, "tail positions are u16");
    static_assert(!HAS_VALUES || ExchangeSize<V, TILE>::ITEMS > TILE, "a fold per run slot");
    __shared__ u16 run_positions[TILE + 1];
    __shared__ u32 s_first_is_head;
    __shared__ u32 s_last_is_tail;

    lookback_prepare_next_call(state, epoch);
    if (n == 0) {  // one block, no tile drawn: no runs
        if (by_key_first_thread_of_grid()) *runs_out = 0ull;
        return;
    }
    if (linear_block_index() >= num_tiles) return;
    const u64 tile = lookback_block_tile<IN_BLOCK_ORDER>(state, epoch, &s_tile);
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
    // or tails (masked below).
    // Positions within the tile are 32-bit: item j of this thread is tile
    // item first_local + j, valid while below `valid`. Item 0 of the input
    // (tile 0, thread 0, j = 0) is a head by position; the tile's last
    // valid item is a tail by position when the tile is the input's last.
    const u32 first_local = tid * (u32)ITEMS;
    const bool last_tile = tile_base + (u64)valid == n;
    const K before = tid > 0 ? key_exchange[exchange_index<K>(first_local - 1u)] : edge_before;
    const K after =
        tid + 1u < (u32)BLOCK ? key_exchange[exchange_index<K>(first_local + (u32)ITEMS)] : edge_after;
    u32 head_bits = 0u;
    u32 tail_bits = 0u;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const K previous = j == 0 ? before : key[j - 1];
        const K next = j == ITEMS - 1 ? after : key[j + 1];
        head_bits |= (u32)(previous != key[j]) << j;
        tail_bits |= (u32)(next != key[j]) << j;
    }
    // Only items below `valid` count; the edges by position.
    const u32 valid_here = valid > first_local ? valid - first_local : 0u;
    const u32 valid_bits = valid_here >= 32u ? 0xffffffffu : (1u << valid_here) - 1u;
    if (tile == 0 && tid == 0u) head_bits |= 1u;
    const bool holds_last = last_tile && valid_here > 0u && valid_here <= (u32)ITEMS;
    if (holds_last) tail_bits |= 1u << (valid_here - 1u);
    head_bits &= valid_bits;
    tail_bits &= valid_bits;

    if constexpr (!UNIQUE) {
        if (tid == 0u) s_first_is_head = head_bits & 1u;
        if (valid_here > 0u && valid_here <= (u32)ITEMS) s_last_is_tail = (tail_bits >> (valid_here - 1u)) & 1u;
    }

    // The thread's total: the fold of its items' pairs (UNIQUE: its head
    // count). Run lengths need no per-item pairs: the fold of (head, 1)
    // over items 0 … j is (heads among them, items since the last of them).
    constexpr bool REDUCE = MODE == BY_KEY_REDUCE;
    A items[REDUCE ? ITEMS : 1];
    A thread_total;
    if constexpr (RUN_LENGTH) {
        const u32 since_last_head = head_bits ? (u32)ITEMS - (31u - (u32)__clz(head_bits)) : (u32)ITEMS;
        thread_total = S::pack(since_last_head, (u32)__popc(head_bits));
    } else if constexpr (UNIQUE) {
        thread_total = (A)__popc(head_bits);
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) items[j] = S::pack(value[j], (head_bits >> j) & 1u);
        thread_total = thread_reduce<A, S, ITEMS>(items);
    }
    A aggregate;
    const A thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    // Each tail's position goes to its run's slot in the tile: the heads of
    // the tile up to it (0 for the run carried in; UNIQUE: each head's, at
    // the tile's heads before it); reduce's fold with it,
    // from the block-local scan (the carried-in run's lacks the prefix, which
    // the writer adds). None of it needs the prefix, so it is done before
    // the look-back's barrier. The key exchange keeps the keys (its last
    // reads preceded the scan's barrier); the value exchange is free (its
    // last reads, the loads', did too).
    const u32 heads_before_thread = (u32)by_key_heads<S, UNIQUE>(thread_prefix);  // at most TILE
    if constexpr (RUN_LENGTH) {
        by_key_stage_positions(tail_bits, head_bits, heads_before_thread, first_local, run_positions);
    } else if constexpr (UNIQUE) {
        by_key_stage_positions(head_bits, head_bits, heads_before_thread - 1u, first_local, run_positions);
    } else {
        thread_scan_seeded<A, S, ITEMS>(items, thread_prefix, tid > 0u, false);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            if ((tail_bits >> j) & 1u) {
                const u32 slot = heads_before_thread + (u32)__popc(head_bits & (0xffffffffu >> (31 - j)));
                run_positions[slot] = (u16)(first_local + (u32)j);
                value_exchange[slot] = S::value(items[j]);
            }
        }
    }
    if (tid < 32u) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        // Successors may already be looking back at this tile: publish first.
        if (tid == 0u) single_pass_publish_aggregate<A, Status>(status, tile, aggregate);
        const A prefix = single_pass_prefix<A, S, Status, WIDTH, SPIN_NS, START_NS>(
            status, tile, aggregate, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
        if (tid == 0u) s_prefix = prefix;
    } else if (!UNIQUE && WIDE_HEADS && tid < 64u) {
        // The exact u64 head count before the tile (the tile's own count,
        // at most TILE, is exact in the pair).
        typedef typename by_key_count_status<A>::type CountStatus;
        CountStatus counts(lookback_status_region(state) + CountStatus::region_words(num_tiles), num_tiles,
                           epoch);
        const u64 tile_heads = by_key_heads<S, UNIQUE>(aggregate);
        if (tid == 32u) single_pass_publish_aggregate<u64, CountStatus>(counts, tile, tile_heads);
        const u64 before = single_pass_prefix<u64, sum_op<u64>, CountStatus, WIDTH, SPIN_NS, START_NS>(
            counts, tile, tile_heads, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
        if (tid == 32u) s_heads_before = before;
    }
    __syncthreads();
    // Heads before the tile: the u64 look-back's when the pair's u32 count
    // could saturate, else the prefix's own count (not read in tile 0).
    u64 heads_before = 0ull;
    if constexpr (WIDE_HEADS) {
        heads_before = s_heads_before;
    } else if (tile > 0) {
        heads_before = by_key_heads<S, UNIQUE>(s_prefix);
    }
    // Run slots before this thread's first item: heads before the tile and
    // before this thread in the tile.
    const u64 slots_before = heads_before + (u64)heads_before_thread;

    // The tile's staged slots lo … hi − 1, written coalesced as runs
    // slot_base + slot: UNIQUE's heads from slot 0; the pair modes' tails
    // from slot 1, or from slot 0 when the tile's first item ends the run
    // carried in from the previous tile (only past tile 0), which
    // continues the prefix: its length adds the items the prefix counts
    // since its last head, its fold starts from the prefix's.
    const u32 tile_heads = (u32)by_key_heads<S, UNIQUE>(aggregate);
    u32 lo = 0u;
    u32 hi = tile_heads;
    u64 slot_base = heads_before;
    if constexpr (!UNIQUE) {
        lo = s_first_is_head;
        hi += s_last_is_tail;
        slot_base -= 1ull;
    }
    for (u32 i = lo + tid; i < hi; i += (u32)BLOCK) {
        const u32 position = run_positions[i];
        const u64 slot = slot_base + (u64)i;
        keys_out[slot] = key_exchange[exchange_index<K>(position)];
        if constexpr (RUN_LENGTH) {
            // The distance from the tail before; the first tail's run began
            // at the tile's start or, carried in, earlier.
            const u32 carried = i == 0u ? S::value(s_prefix) : 0u;
            values_out[slot] = i == lo ? position + 1u + carried : position - (u32)run_positions[i - 1u];
        } else if constexpr (MODE == BY_KEY_REDUCE) {
            const V fold = value_exchange[i];
            values_out[slot] = i == 0u ? Op::combine(S::value(s_prefix), fold) : fold;
        } else if constexpr (HAS_VALUES) {
            values_out[slot] = value_exchange[exchange_index<V>(position)];  // the head's value
        }
    }
    // The run count, by the thread holding item n − 1.
    if (holds_last) *runs_out = slots_before + (u64)__popc(head_bits);
}
