// scan/segmented.cu — segmented scan on the decoupled look-back of
// single_pass/ (crate `scan`, segmented.rs), with the segments given three
// ways: head flags (a byte per item), segment offsets, or runs of equal keys.
//
// A segment starts at every head (and at item 0). The scan runs over pairs
// (flag, value) with the segmented operator
//   (fa, va) ⊕ (fb, vb) = (fa | fb, fb ? vb : va ⊕ vb),
// associative whenever ⊕ is, and not commutative: the look-back, the block
// scan and the warp scans keep operands in index order, so they carry it
// unchanged. For 4-byte values the pair packs into one u64 (value bits low,
// flag at bit 32), so it travels through shuffles and the 8-byte packed tile
// status (one 128-bit word per tile) like any 8-byte value. For 8-byte
// values the pair is a HeadedValue (single_pass/headed_value.cuh: value and
// a 32-bit flag), shuffled in two parts and published in one 128-bit status
// word with the status tag (TileStatusHeaded128), so the same look-back
// carries it.
//
// Only one pair per thread is ever formed: each thread keeps its ITEMS
// values as plain T and its heads as a bit mask, folds its items to one
// pair, the block scans the pairs, the tile publishes its aggregate pair and
// finds its prefix pair by look-back, and each thread then re-walks its own
// items from its seed, restarting at each head. So the per-item work is the
// plain scan's plus a bit test, and the registers hold values, not pairs.
//
// Heads, per tile, into each thread's mask (bit j: item tid·ITEMS + j):
//   FLAGS    the thread's ITEMS flag bytes, one 16-byte load when whole and
//            aligned (blocked: the thread's own bytes, so no exchange);
//   OFFSETS  the sorted segment starts inside the tile, offsets[first[tile]
//            .. first[tile+1]) (`first` from segmented_tile_first below):
//            each thread binary-searches them for its own items;
//   KEYS     key[i] != key[i−1] (compared as bits), the keys loaded blocked
//            like the values; a tile's first item compares with the last
//            item of the tile before.
//
// Work O(n); bytes n·s read, n·s written, plus the heads (n flag bytes;
// 8 per segment start and 16 per tile of offsets; n·k of keys) and 16 bytes
// of tile state per tile; one launch (offsets: two), no memset
// (epoch-tagged state).

#define SEGMENT_HEADS_FLAGS 0
#define SEGMENT_HEADS_OFFSETS 1
#define SEGMENT_HEADS_KEYS 2

// The unsigned word keys compare as (keys are equal when their bits are).
template <int BYTES> struct SegmentKeyWord;
template <> struct SegmentKeyWord<1> { typedef u8 type; };
template <> struct SegmentKeyWord<2> { typedef u16 type; };
template <> struct SegmentKeyWord<4> { typedef u32 type; };
template <> struct SegmentKeyWord<8> { typedef u64 type; };
template <typename K>
__device__ __forceinline__ bool same_key(K a, K b) {
    typedef typename SegmentKeyWord<sizeof(K)>::type W;
    return bits_of<K, W>(a) == bits_of<K, W>(b);
}

// The pair and its operator: for 4-byte T packed in a u64, for 8-byte T a
// HeadedValue<T> (single_pass/headed_value.cuh) with the flag in `heads`.
template <typename T, typename Op, int SIZE = (int)sizeof(T)>
struct segmented_op;
template <typename T, typename Op>
struct segmented_op<T, Op, 4> {
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
template <typename T, typename Op>
struct segmented_op<T, Op, 8> {
    typedef HeadedValue<T> value_type;
    static __device__ __forceinline__ value_type pack(T value, u32 head) { return headed_value<T>(value, head); }
    static __device__ __forceinline__ T value(value_type pair) { return pair.value; }
    static __device__ __forceinline__ value_type identity() { return pack(Op::identity(), 0u); }
    static __device__ __forceinline__ value_type combine(value_type a, value_type b) {
        if (b.heads != 0u) return b;
        return pack(Op::combine(a.value, b.value), a.heads);
    }
};

// Offsets: first[t] = the index of the first offset >= t·TILE, for t in
// 0 ..= num_tiles (so a tile's starts are offsets[first[t] .. first[t+1])),
// one thread per entry, a binary search each. The same grid checks the
// offsets (num_offsets = segments + 1 of them): offsets[0] == 0,
// offsets[segments] == n, non-decreasing; any violation sets *bad to 1, and
// the scan kernel then writes nothing.
extern "C" __global__ void segmented_tile_first(const u64* offsets, u64 num_offsets, u64 n, u64 tile_items,
                                                u64 num_tiles, u64* first, u32* bad) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t <= num_tiles; t += stride) {
        const u64 target = t * tile_items;
        u64 lo = 0, hi = num_offsets;
        while (lo < hi) {
            const u64 mid = lo + (hi - lo) / 2;
            if (offsets[mid] < target) lo = mid + 1;
            else hi = mid;
        }
        first[t] = lo;
    }
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < num_offsets; k += stride) {
        const u64 here = offsets[k];
        bool wrong = here > n;
        if (k == 0) wrong |= here != 0;
        if (k + 1 == num_offsets) wrong |= here != n;
        else wrong |= offsets[k + 1] < here;
        if (wrong) *bad = 1u;
    }
}

// The heads of this thread's items as a mask (bit j: item tid·ITEMS + j of
// the tile), from the source named by MODE. `heads` is the flag bytes, the
// offsets, or the keys (of type K); `aux` is `first` for OFFSETS. Item 0 of
// the input is always a head. KEYS ends with a barrier (its exchange free
// again); FLAGS and OFFSETS touch no shared memory.
template <int MODE, typename K, int BLOCK_THREADS, int ITEMS>
__device__ __forceinline__ u32 segmented_head_mask(const void* heads, const u64* aux, u64 tile, u64 tile_base,
                                                   u32 valid, bool vector_ok, K* key_exchange) {
    static_assert(ITEMS <= 32, "a thread's heads fit one 32-bit mask");
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    const u32 tid = threadIdx.x;
    const u32 first_item = tid * ITEMS;
    u32 mask = 0;
    if constexpr (MODE == SEGMENT_HEADS_FLAGS) {
        const u8* flags = (const u8*)heads + tile_base + first_item;
        if constexpr (ITEMS % 16 == 0) {
            if (vector_ok && valid == TILE) {
#pragma unroll
                for (int k = 0; k < ITEMS / 16; ++k) {
                    Vec16<u8> v;
                    v.raw = reinterpret_cast<const uint4*>(flags)[k];
#pragma unroll
                    for (int c = 0; c < 16; ++c) mask |= (v.items[c] != 0 ? 1u : 0u) << (k * 16 + c);
                }
                if (tile_base == 0 && tid == 0) mask |= 1u;
                return mask;
            }
        }
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            if (first_item + j < valid && flags[j] != 0) mask |= 1u << j;
    } else if constexpr (MODE == SEGMENT_HEADS_OFFSETS) {
        // The tile's starts are offsets[aux[tile] .. aux[tile + 1]); the
        // thread finds the first at or past its own first item (a binary
        // search over at most a tile's starts, cached) and sets the bits of
        // those that fall on its items. No shared memory, no atomics.
        const u64* offsets = (const u64*)heads;
        const u64 own = tile_base + first_item;
        u64 lo = aux[tile], hi = aux[tile + 1];
        const u64 end = hi;
        while (lo < hi) {
            const u64 mid = lo + (hi - lo) / 2;
            if (offsets[mid] < own) lo = mid + 1;
            else hi = mid;
        }
        for (u64 k = lo; k < end; ++k) {
            const u64 at = offsets[k] - own;
            if (at >= (u64)ITEMS) break;
            mask |= 1u << (u32)at;
        }
    } else {
        const K* keys = (const K*)heads + tile_base;
        K key[ITEMS];
        block_load_blocked<K, BLOCK_THREADS, ITEMS>(keys, valid, vector_ok, key_exchange, key, K());
        K before;
        if (tid > 0) before = key_exchange[exchange_index<K>(first_item - 1)];
        else if (tile_base > 0) before = keys[-1];
        else before = key[0];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const K previous = j == 0 ? before : key[j - 1];
            if (first_item + j < valid && !same_key<K>(key[j], previous)) mask |= 1u << j;
        }
        __syncthreads();  // the exchange's last readers are done
    }
    if (tile_base == 0 && tid == 0) mask |= 1u;
    return mask;
}

template <typename T, typename Op, int MODE, typename K, int BLOCK_THREADS, int ITEMS, int WIDTH, int SPIN_NS,
          int START_NS, bool IN_BLOCK_ORDER = false>
__device__ __forceinline__ void segmented_scan_tile(const T* in, const void* heads, const u64* aux, T* out,
                                                    u64* state, u32 epoch, u64 n, u64 num_tiles,
                                                    u32 exclusive, u32 vector_ok, const u32* bad) {
    constexpr u32 TILE = (u32)BLOCK_THREADS * (u32)ITEMS;
    typedef segmented_op<T, Op> S;
    typedef typename S::value_type A;
    typedef BlockScan<A, S, BLOCK_THREADS> Scan;
    typedef typename TileStatusFor<A, 1>::type Status;
    // The keys' exchange and then the values' share one buffer: the heads
    // are found (and the keys' exchange released) before the values load.
    constexpr u32 VALUE_BYTES = ExchangeSize<T, TILE>::ITEMS * (u32)sizeof(T);
    constexpr u32 KEY_BYTES = MODE == SEGMENT_HEADS_KEYS ? ExchangeSize<K, TILE>::ITEMS * (u32)sizeof(K) : 0u;
    __shared__ __align__(16) unsigned char exchange_bytes[VALUE_BYTES > KEY_BYTES ? VALUE_BYTES : KEY_BYTES];
    T* exchange = reinterpret_cast<T*>(exchange_bytes);
    K* key_exchange = reinterpret_cast<K*>(exchange_bytes);
    __shared__ typename Scan::Storage scan_storage;
    __shared__ u64 tile_slot;
    __shared__ A tile_prefix_slot;

    lookback_prepare_next_call(state, epoch);
    if (linear_block_index() >= num_tiles) return;
    // Rejected offsets: every block leaves before touching the output.
    if (bad != nullptr && *bad != 0u) return;
    const u64 tile = lookback_block_tile<IN_BLOCK_ORDER>(state, epoch, &tile_slot);
    const u64 tile_base = tile * (u64)TILE;
    const u32 valid = tile_valid_items(n, tile_base, TILE);

    const u32 mask = segmented_head_mask<MODE, K, BLOCK_THREADS, ITEMS>(
        heads, aux, tile, tile_base, valid, (vector_ok & 2u) != 0u, key_exchange);
    T x[ITEMS];
    block_load_blocked<T, BLOCK_THREADS, ITEMS>(in + tile_base, valid, (vector_ok & 1u) != 0u, exchange, x,
                                                Op::identity());

    // The thread's pair: any head among its items, and the fold since its
    // last head (of all its items if none).
    T fold = x[0];
#pragma unroll
    for (int j = 1; j < ITEMS; ++j) fold = ((mask >> j) & 1u) ? x[j] : Op::combine(fold, x[j]);
    const A thread_total = S::pack(fold, mask != 0u ? 1u : 0u);
    A aggregate;
    const A thread_prefix = Scan::exclusive_scan(thread_total, scan_storage, aggregate);

    if (threadIdx.x < 32) {
        Status status(lookback_status_region(state), num_tiles, epoch);
        if (threadIdx.x == 0) single_pass_publish_aggregate<A, Status>(status, tile, aggregate);
        const A tile_prefix = single_pass_prefix<A, S, Status, WIDTH, SPIN_NS, START_NS>(
            status, tile, aggregate, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
        if (threadIdx.x == 0) tile_prefix_slot = tile_prefix;
    }
    __syncthreads();

    // The thread's seed: the pair of everything before its first item
    // (none for the very first item of an inclusive scan).
    const bool has_tile_prefix = tile > 0 || exclusive != 0u;
    bool has_seed;
    const A seed = block_thread_seed<A, S>(tile_prefix_slot, has_tile_prefix, thread_prefix, has_seed);
    T running = has_seed ? S::value(seed) : Op::identity();
    if (exclusive != 0u) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const bool head = (mask >> j) & 1u;
            const T item = x[j];
            x[j] = head ? Op::identity() : running;
            running = head ? item : Op::combine(running, item);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const bool restart = ((mask >> j) & 1u) || (j == 0 && !has_seed);
            running = restart ? x[j] : Op::combine(running, x[j]);
            x[j] = running;
        }
    }
    block_store_blocked<T, BLOCK_THREADS, ITEMS>(out + tile_base, valid, (vector_ok & 1u) != 0u, exchange, x);
}
