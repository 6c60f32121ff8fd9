// sort/onesweep.cu — the default sort: LSD radix sort with 8-bit digits in
// the Onesweep style (Adinets & Merrill 2022, "Onesweep: A Faster Least
// Significant Digit Radix Sort for GPUs").
//
//   1. sort_upsweep: one read of the keys histograms EVERY digit pass at
//      once (per-block shared counters [passes][256], in per-lane copies
//      that keep a warp's increments out of each other's banks, then
//      atomics into the global table [passes][portions][256]); the last
//      block to finish
//   2. scans each pass's 256 digit totals into each digit's first output
//      position (sort_digit_offsets): the offsets of each pass's first
//      portion.
//   3. sort_onesweep_pass, once per digit pass (and portion): a block takes
//      a tile id (from an atomic counter, or its own index with
//      SORT_TILES_IN_BLOCK_ORDER), counts its keys by digit (shared
//      atomics, per warp with SORT_TILE_COUNTS BY_WARP) and publishes the
//      256 counts at once (or, FROM_RANKS, takes them from the ranking's
//      warp counters after it), ranks its keys by
//      digit in shared memory (sort/warp_rank.cuh: warp-private counters,
//      peer masks by ballots or match-any, the peer searches of all rows
//      first, then the counters row by row; or, SORT_RANK_BY_SHARED_MASKS,
//      each row's masks and counters at once through a shared table;
//      stable either way; BY_WARP starts each warp's
//      counters at its first slot of the digit in the tile), looks back over its
//      predecessors one digit per thread (threads 0 … 255 of
//      a block of BLOCK ≥ 256; single_pass/digit_lookback.cuh) for its
//      global offset per digit, and scatters keys (then values) through
//      shared memory so that the global writes of each digit run are
//      contiguous. One read and one write of the keys (and values) per pass.
//   4. The split form of the pass (SPLIT, the last pass of sort::split's
//      sorts): the same pass, storing each key (value) through a table of
//      up to SORT_SPLIT_MAX destinations, one range of sorted positions
//      each (another GPU's memory allowed), passed by value as a kernel
//      parameter (so the host fills it when it enqueues the pass, with no
//      copy to the device); thread d finds the destination of its digit's
//      first key of the tile once and keeps the address in shared memory
//      after the pass's storage.
//
// The tuning (block threads and items per thread of the upsweep and the
// pass, the peer-mask method) comes from the host's OnesweepPolicy as
// template arguments, SORT_RANK_BY_MATCH_ANY and SORT_RANK_BY_SHARED_MASKS
// (among the other defines below); the pass's shared storage
// is dynamic, its size computed by the policy on the host (checked here
// against the storage at compile time).
//
// Portions: look-back counts are 30 bits, so the host runs each pass over
// portions of portion_keys keys (OnesweepPolicy::portion_keys: the most
// whole tiles within 2^28), one launch each, each with its own look-back.
// Portion q of pass p covers positions [q·portion_keys, …) of that pass's
// SOURCE, which for p > 0 is the previous pass's output: the keys there are
// not the keys at those positions of the input, so the upsweep's histogram
// cannot say how many keys of each digit a portion holds. Only the first portion's offsets come
// from the upsweep (the per-digit totals are the same for every order of
// the keys); the last tile of portion q, which knows the portion's inclusive
// count of every digit from its look-back, writes portion q + 1's offsets:
// its own offset plus that count. Launches of one stream run in order, so
// portion q + 1 reads them after they are written.
//
// Stability: tile-local ranks order keys by (digit, warp, item, lane), and
// warp w holds tile items [w·32·ITEMS, (w+1)·32·ITEMS) with item j of lane
// L at w·32·ITEMS + 32·j + L, so equal digits keep their input order;
// tiles are placed in tile order by the look-back. Every pass is stable, so
// the LSD sort is.
//
// Needs COMMON, WARP, BLOCK, TILE_STATUS, SINGLE_PASS_DIGIT_LOOKBACK,
// SORT_RADIX_KEY, SORT_WARP_RANK (SORT_RADIX, the ranking).

// Predecessors a digit's look-back reads per round trip
// (single_pass/digit_lookback.cuh). Measured on the H100 with 2^28 u32
// keys: windows of 2, 3 and 4 sort within 1.5 % of each other (every
// default shape); with 256 × 16 passes a window of 8 is 5 % and 16 is 14 %
// slower than 4 (the reads past the prefix cost L2 bandwidth), and a
// serial walk (one predecessor per round trip) 11 % slower.
#ifndef SORT_LOOKBACK_WINDOW
#define SORT_LOOKBACK_WINDOW 4
#endif

// When and where a tile counts its keys by digit (the host's TileCounts):
//   EARLY       right after the load, one shared increment per key into the
//               tile's counters, published before the ranking (so that
//               later tiles looking back find the counts early); the
//               ranking's warp counters start at zero and each warp's first
//               slot of a digit is added to every key's rank afterwards;
//   FROM_RANKS  after the ranking, as the sum of the warps' counters of each
//               digit (no increments, published later);
//   BY_WARP     right after the load, one shared increment per key into the
//               warp's counters, published before the ranking; the block
//               scan and each warp's first slots come before the ranking
//               too, so a key's rank is its slot in the tile (no second
//               digit lookup per key), and the keys go into the exchange
//               while the look-back runs (as CUB's Onesweep ranks).
#define SORT_COUNTS_FROM_RANKS 0
#define SORT_COUNTS_EARLY 1
#define SORT_COUNTS_BY_WARP 2
#ifndef SORT_TILE_COUNTS
#define SORT_TILE_COUNTS SORT_COUNTS_EARLY
#endif

// How a pass's block finds its tile (OnesweepPolicy's TileOrder): 0, thread
// 0 draws it from the launch's zeroed counter (one atomic round trip and a
// barrier before the loads; any start order of the blocks is safe, since
// every tile a block waits for went to a block that started earlier); 1,
// the block's own index, as CUB's single-pass scan takes it (the loads
// start at once; the look-back relies on the GPU starting a grid's blocks
// in index order, as the scan's tiles in block order do).
#ifndef SORT_TILES_IN_BLOCK_ORDER
#define SORT_TILES_IN_BLOCK_ORDER 0
#endif

// Whether a pass's thread takes each key's digit once, right after the
// load, and keeps the digits four to a register (OnesweepPolicy's
// PassDigits): 0, the digit is computed from the key wherever the pass
// needs it (counting, peers, rank, slot: three or four times per key before
// the store takes it once more from the exchange); 1, computed once and
// unpacked by one byte permute at each of those uses. It pays most where
// the digit is dear: a float key's image costs a NaN test and a select
// besides the sign's flip (to_radix in sort/radix_key.cuh) each time.
#ifndef SORT_PACKED_DIGITS
#define SORT_PACKED_DIGITS 0
#endif

// How a pass's warp finds the lanes holding each key's digit
// (OnesweepPolicy's RankMethod): 0, by ballots or match-any
// (warp_digit_peers, SORT_RANK_BY_MATCH_ANY; the peers of all rows first,
// then the ranks); 1, through a warp-private table of 256 peer masks in
// shared memory (warp_rank_by_shared_masks, one row at a time), placed in
// the dynamic shared memory after the pass's storage (and the split
// storage), 1 KiB per warp.
#ifndef SORT_RANK_BY_SHARED_MASKS
#define SORT_RANK_BY_SHARED_MASKS 0
#endif

// Digit of a radix image for a pass starting at bit `shift`, `width` bits.
template <typename B>
__device__ __forceinline__ u32 sort_digit_of(B image, u32 shift, u32 width) {
    return (u32)(image >> shift) & ((1u << width) - 1u);
}

// One pass's digit of a key, with the sort's direction folded in: the
// digit of the complemented image is the image's digit XOR the digit mask
// (the bits shifted in from above are masked off either way), so a
// descending sort costs a third operand of the same three-input logic
// operation instead of a complement and a select each time the pass takes a
// key's digit (five times per key with EARLY tile counts, four with
// FROM_RANKS or BY_WARP).
// Measured on the H100 at 2^28 keys, the sort is 3 % faster for u32 and f32
// keys than with the complement.
template <typename K>
struct PassDigit {
    u32 shift;
    u32 mask;
    u32 flip;
    __device__ __forceinline__ PassDigit(u32 shift_, u32 width, bool descending)
        : shift(shift_), mask((1u << width) - 1u), flip(descending ? (1u << width) - 1u : 0u) {}
    __device__ __forceinline__ u32 of(K key) const {
        return ((u32)(radix_key<K>::to_radix(key) >> shift) & mask) ^ flip;
    }
    // The digit of a tile item, or SORT_RADIX for an item index past the
    // tile's `tile_count` keys (a lane without a key).
    __device__ __forceinline__ u32 of_item(K key, u32 idx, u32 tile_count) const {
        return idx < tile_count ? of(key) : (u32)SORT_RADIX;
    }
};

// A thread's digits of its ITEMS keys for one pass, four to a register
// (SORT_PACKED_DIGITS): byte j mod 4 of word j / 4 is the digit of item j
// (at most 8 bits; an item past the tile's keys holds a digit its uses never
// read). `set` and `get` take compile-time item indices (unrolled loops),
// so each is one byte permute.
template <int ITEMS>
struct PackedDigits {
    u32 word[(ITEMS + 3) / 4];
    __device__ __forceinline__ void set(int j, u32 digit) {
        // Byte 0 of `digit` into byte j mod 4, the word's other bytes kept
        // (byte j mod 4 = 0 starts the word: the digit's upper bytes are 0).
        const u32 at = 4u * (u32)(j & 3);
        const u32 insert = (0x3210u & ~(0xfu << at)) | (4u << at);
        word[j >> 2] = (j & 3) == 0 ? digit : __byte_perm(word[j >> 2], digit, insert);
    }
    __device__ __forceinline__ u32 get(int j) const {
        return __byte_perm(word[j >> 2], 0u, 0x4440u | (u32)(j & 3));
    }
};

// Digit offsets of one pass's first portion, by a block of BLOCK ≥ 256
// threads, thread d < 256: offsets[pass · portions · 256 + d] = the keys of
// digits < d (threads past 255 add nothing to the scan and write nothing)
// (u64: the histogram's u32 counters are per portion, below 2^28 each, and
// are summed here). The rows of later portions are written by the digit
// pass (the last tile of the portion before). The histogram is read with
// ld.global.cg (from L2, where the upsweep's atomics landed). Ends with a
// barrier, so `storage` may be reused at once.
template <int BLOCK>
__device__ __forceinline__ void sort_digit_offsets(const u32* hist, u64* __restrict__ offsets,
                                                   u32 portions, u32 pass,
                                                   typename BlockScan<u64, sum_op<u64>, BLOCK>::Storage& storage) {
    typedef BlockScan<u64, sum_op<u64>, BLOCK> Scan;
    const u32 d = threadIdx.x;
    const u64 row = (u64)pass * portions;
    u64 total = 0;
    const bool owns_digit = BLOCK == SORT_RADIX || d < SORT_RADIX;
    if (owns_digit) {
        for (u32 p = 0; p < portions; ++p) total += __ldcg(&hist[(row + p) * SORT_RADIX + d]);
    }
    u64 all;
    u64 running = Scan::exclusive_scan(total, storage, all);
    if (d == 0) running = 0;
    if (owns_digit) offsets[row * SORT_RADIX + d] = running;
    __syncthreads();
}

// Upsweep: grid (x blocks, portions); block (x, p) strides over portion p's
// chunks of BLOCK·ITEMS keys and adds its counts into
// hist[(pass · portions + p) · 256 + digit] (zeroed by the host).
// Counters: COPIES copies of each (pass, digit) counter in dynamic shared
// memory, passes · 256 · COPIES words (the host's
// OnesweepPolicy::upsweep_shared_bytes): counter (pass, digit) of lane L
// at word (pass · 256 + digit) · COPIES + L mod COPIES, in bank L mod
// COPIES for COPIES ≥ 16 (so a warp's increments of random digits meet
// in a bank only where lanes share a copy), summed when the block is done.
// COPIES = 1 is one set shared by every lane.
template <typename K, int BLOCK, int ITEMS, int COPIES>
__device__ __forceinline__ void sort_upsweep(const K* __restrict__ keys, u64 n, u64 portion_keys,
                                             u32 begin_bit, u32 end_bit, u32 passes,
                                             u32 descending, u32* hist, u64* __restrict__ offsets,
                                             u32* done_counter) {
    static_assert(BLOCK >= SORT_RADIX && BLOCK % 32 == 0,
                  "whole warps, and a thread per digit for the last block's scan");
    static_assert(COPIES >= 1 && COPIES <= 32 && (COPIES & (COPIES - 1)) == 0,
                  "a power of two of copies, at most one per lane");
    typedef typename radix_key<K>::bits_t bits_t;
    extern __shared__ u32 upsweep_counts[];
    const u32 counters = passes * SORT_RADIX;
    for (u32 i = threadIdx.x; i < counters * COPIES; i += BLOCK) upsweep_counts[i] = 0u;
    __syncthreads();
    u32* lane_counts = upsweep_counts + (threadIdx.x & (COPIES - 1));
    const u64 portion = blockIdx.y;
    const u64 start = portion * portion_keys;
    const u64 end = min(n, start + portion_keys);
    const u64 chunk = (u64)BLOCK * ITEMS;
    constexpr int MAX_PASSES = (int)sizeof(bits_t);
    // Every pass a whole byte of the key (the full sort, the common call)
    // with the portion's keys on a 16-byte boundary: the keys are read as
    // 16-byte vectors and each byte counted with a constant shift. A bit
    // range, or keys not so aligned, take the general loop below.
    const bool whole_bytes = begin_bit == 0u && end_bit == 8u * (u32)sizeof(bits_t) &&
                             passes == (u32)MAX_PASSES &&
                             (reinterpret_cast<unsigned long long>(keys + start) & 15ull) == 0ull;
    if (whole_bytes) {
        // One increment per byte of the key's image, pass p counting byte p.
        const auto count_bytes = [lane_counts](bits_t image) {
#pragma unroll
            for (int p = 0; p < MAX_PASSES; ++p)
                atomicAdd(&lane_counts[(p * SORT_RADIX + ((u32)(image >> (8 * p)) & 0xffu)) * COPIES], 1u);
        };
        constexpr int PER_VECTOR = 16 / (int)sizeof(K);
        constexpr int VECTORS = ITEMS / PER_VECTOR > 0 ? ITEMS / PER_VECTOR : 1;
        constexpr u64 VECTOR_CHUNK = (u64)BLOCK * VECTORS * PER_VECTOR;
        const bits_t flip = descending != 0u ? (bits_t)~(bits_t)0 : (bits_t)0;
        u64 base = start + (u64)blockIdx.x * VECTOR_CHUNK;
        for (; base + VECTOR_CHUNK <= end; base += (u64)gridDim.x * VECTOR_CHUNK) {
            const uint4* vectors = reinterpret_cast<const uint4*>(keys + base) + threadIdx.x;
            uint4 raw[VECTORS];
#pragma unroll
            for (int j = 0; j < VECTORS; ++j) raw[j] = vectors[j * BLOCK];
#pragma unroll
            for (int j = 0; j < VECTORS; ++j) {
                K items[PER_VECTOR];
                memcpy(items, &raw[j], 16);
#pragma unroll
                for (int e = 0; e < PER_VECTOR; ++e) count_bytes(radix_key<K>::to_radix(items[e]) ^ flip);
            }
        }
        // The one partial chunk (of the block whose turn it is), key by key.
        for (u64 i = base + threadIdx.x; i < end; i += BLOCK) count_bytes(radix_key<K>::to_radix(keys[i]) ^ flip);
    } else {
        // Each pass's shift and mask, in registers (a key type of B bytes
        // has at most B passes).
        u32 shift[MAX_PASSES], mask[MAX_PASSES];
#pragma unroll
        for (int p = 0; p < MAX_PASSES; ++p) {
            shift[p] = min(begin_bit + 8u * (u32)p, 8u * (u32)sizeof(bits_t) - 1u);
            const u32 width = (u32)p < passes ? min(8u, end_bit - (begin_bit + 8u * (u32)p)) : 0u;
            mask[p] = (1u << width) - 1u;
        }
        for (u64 base = start + (u64)blockIdx.x * chunk; base < end; base += (u64)gridDim.x * chunk) {
            const bool full_chunk = base + chunk <= end;
            bits_t image[ITEMS];
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const u64 i = base + (u64)j * BLOCK + threadIdx.x;
                image[j] = full_chunk || i < end ? ordered_radix<K>(keys[i], descending != 0u) : (bits_t)0;
            }
            // One shared increment per key and pass (an atomicAdd of 1
            // whose result is unused, which ptxas makes an ATOMS.POPC.INC).
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                if (full_chunk || base + (u64)j * BLOCK + threadIdx.x < end) {
#pragma unroll
                    for (int p = 0; p < MAX_PASSES; ++p) {
                        if ((u32)p < passes) {
                            const u32 digit = (u32)(image[j] >> shift[p]) & mask[p];
                            atomicAdd(&lane_counts[(p * SORT_RADIX + digit) * COPIES], 1u);
                        }
                    }
                }
            }
        }
    }
    __syncthreads();
    const u32 portions = gridDim.y;
    for (u32 i = threadIdx.x; i < counters; i += BLOCK) {
        // The copies of counter i, each thread starting at its own copy
        // (consecutive threads read different banks).
        u32 c = 0u;
#pragma unroll
        for (int l = 0; l < COPIES; ++l) c += upsweep_counts[i * COPIES + ((i + (u32)l) & (COPIES - 1))];
        if (c != 0u) {
            const u32 pass = i / SORT_RADIX;
            const u32 digit = i % SORT_RADIX;
            atomicAdd(&hist[((u64)pass * portions + portion) * SORT_RADIX + digit], c);
        }
    }
    // The last block to finish turns the histogram into the digit offsets:
    // every thread's atomics are made visible before its block takes a
    // ticket (the fence), and the block with the last ticket reads them.
    __shared__ u32 last_block;
    __shared__ typename BlockScan<u64, sum_op<u64>, BLOCK>::Storage scan_storage;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 blocks = gridDim.x * gridDim.y;
        last_block = atomicAdd(done_counter, 1u) == blocks - 1u ? 1u : 0u;
    }
    __syncthreads();
    if (last_block == 0u) return;
    __threadfence();
    for (u32 pass = 0; pass < passes; ++pass)
        sort_digit_offsets<BLOCK>(hist, offsets, portions, pass, scan_storage);
}

// The tile-local start of digit d (the tile's keys of lower digits), by a
// block scan of the digits' tile counts (`total`, thread d < 256; threads
// past 255 add zeros after every digit), and each warp's first slot of the
// digit, written by the digit's thread over the warps' counts of it in
// warp_counts (the start plus the digit's keys of the warps before).
template <int BLOCK, int WARPS>
__device__ __forceinline__ u32 sort_warp_first_slots(u32 total, u32* warp_counts,
                                                     typename BlockScan<u32, sum_op<u32>, BLOCK>::Storage& scan,
                                                     u32 d, bool owns_digit) {
    u32 all;
    u32 start = BlockScan<u32, sum_op<u32>, BLOCK>::exclusive_scan(total, scan, all);
    if (d == 0) start = 0u;
    if (owns_digit) {
        u32 first_slot = start;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const u32 c = warp_counts[w * SORT_RADIX + d];
            warp_counts[w * SORT_RADIX + d] = first_slot;
            first_slot += c;
        }
    }
    return start;
}

// Shared memory of the digit pass (dynamic: the host's
// OnesweepPolicy::pass_shared_bytes is its size, field by field in this
// order, each aligned to its type).
template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS>
struct OnesweepStorage {
    static constexpr int WARPS = BLOCK / 32;
    static constexpr int TILE = BLOCK * ITEMS;
    static constexpr int EXCHANGE_BYTES =
        (HAS_VALUES && sizeof(V) > sizeof(K)) ? (int)sizeof(V) : (int)sizeof(K);
    u32 warp_counts[WARPS * SORT_RADIX];  // per warp and digit: count, then the warp's first slot
    u32 tile_counts[SORT_RADIX];          // the tile's count of each digit (early counts)
    u64 scatter_base[SORT_RADIX];         // global position of slot 0 for each digit's keys
    u64 exchange[(TILE * EXCHANGE_BYTES + 7) / 8];  // keys, then values, in sorted slots
    u8 slot_digit[HAS_VALUES ? TILE : 1];           // digit of each slot (for the values)
    typename BlockScan<u32, sum_op<u32>, BLOCK>::Storage scan;
    u32 tile;
};

// A split pass's shared memory after the pass's (at the next 8-byte
// boundary): per digit, the byte address that slot 0 of the digit's keys
// (values) maps to in the destination holding the digit's first key of
// the tile, and the slots below which that destination holds them.
template <bool HAS_VALUES>
struct OnesweepSplitStorage {
    u64 keys[SORT_RADIX];
    u64 values[HAS_VALUES ? SORT_RADIX : 1];
    u32 limit[SORT_RADIX];
};

// A split pass's destinations (`sort::split`), a kernel parameter passed
// by value (`const __grid_constant__`, read in parameter space): the u64
// words [count, start[8], keys[8], values[8]]. Destination j (j < count ≤
// SORT_SPLIT_MAX) receives the sorted positions [start[j], start[j + 1])
// (start[0] = 0, the last to n), position p at element p − start[j] of the
// buffers at byte addresses keys[j] and values[j], which may be another
// device's memory (peer access).
#define SORT_SPLIT_MAX 8
struct SortSplitTable {
    u64 count;
    u64 start[SORT_SPLIT_MAX];
    u64 keys[SORT_SPLIT_MAX];
    u64 values[SORT_SPLIT_MAX];
};

// The destination holding sorted position `position`: the last j with
// start[j] ≤ position (start[0] = 0).
__device__ __forceinline__ u32 sort_split_destination(const SortSplitTable* __restrict__ split, u64 position) {
    const u32 count = (u32)split->count;
    u32 j = 0u;
#pragma unroll 1
    for (u32 t = 1u; t < count; ++t)
        if (split->start[t] <= position) j = t;
    return j;
}

// Stores `item` (a key or a value) of slot i of a digit through the split
// table: at the digit's precomputed address (slot_bases[digit]) while i is
// below its limit, else at its sorted position (scatter_bases[digit] + i)
// in the destination found again (a digit's keys of one tile that cross
// into the next destination).
template <typename T>
__device__ __forceinline__ void sort_split_store(const SortSplitTable* __restrict__ split, const u64* slot_bases,
                                                 const u32* limits, const u64* scatter_bases, u32 digit, u32 i,
                                                 T item, bool values) {
    if (i < limits[digit]) {
        *reinterpret_cast<T*>(slot_bases[digit] + (u64)i * sizeof(T)) = item;
    } else {
        const u64 position = scatter_bases[digit] + i;
        const u32 j = sort_split_destination(split, position);
        const u64 base = values ? split->values[j] : split->keys[j];
        *reinterpret_cast<T*>(base + (position - split->start[j]) * sizeof(T)) = item;
    }
}

// One digit pass over one portion of `count` keys (keys_in, values_in
// point at the portion's first key; keys_out, values_out at the whole
// output). digit_offsets: this pass's and portion's 256 first positions;
// next_portion_offsets: where the portion's last tile writes the next
// portion's 256 first positions (null for the last portion); tile_counter:
// zero before the launch (unread with SORT_TILES_IN_BLOCK_ORDER); state: this
// launch's look-back rows (zero); next_state: the other half of the double
// state, whose rows below state_rows this launch zeroes for the next one.
// Grid: one block per tile, ⌈count / (BLOCK·ITEMS)⌉ blocks of BLOCK ≥ 256
// threads (thread d < 256 owns digit d in the look-back), SHARED_BYTES ≥
// sizeof(Storage) of dynamic shared memory.
// SPLIT: the sort's last pass writing through a split table (`split`;
// keys_out and values_out unused) instead of keys_out and values_out.
template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS, int SHARED_BYTES, bool SPLIT = false>
__device__ __forceinline__ void sort_onesweep_pass(
    const K* __restrict__ keys_in, K* __restrict__ keys_out, const V* __restrict__ values_in,
    V* __restrict__ values_out, u64 count, u32 shift, u32 width, u32 descending,
    const u64* __restrict__ digit_offsets, u64* __restrict__ next_portion_offsets,
    u32* tile_counter, u32* state, u32* next_state, u64 state_rows,
    const SortSplitTable* __restrict__ split = nullptr) {
    static_assert(BLOCK >= SORT_RADIX && BLOCK % 32 == 0, "whole warps, a thread per digit");
    typedef OnesweepStorage<K, V, HAS_VALUES, BLOCK, ITEMS> Storage;
    typedef OnesweepSplitStorage<HAS_VALUES> SplitStorage;
    constexpr int STORAGE_WORDS = (int)((sizeof(Storage) + 7) / 8);
    constexpr int SPLIT_BYTES = SPLIT ? (int)sizeof(SplitStorage) : 0;
    constexpr int MASK_BYTES = SORT_RANK_BY_SHARED_MASKS ? 4 * Storage::WARPS * SORT_RADIX : 0;
    static_assert(8 * STORAGE_WORDS + SPLIT_BYTES + MASK_BYTES <= SHARED_BYTES,
                  "the host's pass_shared_bytes must cover the storage");
    static_assert(SPLIT_BYTES % 4 == 0, "the peer masks start on a word");
    constexpr int WARP_ITEMS = 32 * ITEMS;
    constexpr int TILE = Storage::TILE;
    extern __shared__ u64 onesweep_shared[];
    Storage& s = *reinterpret_cast<Storage*>(onesweep_shared);
    SplitStorage& sp = *reinterpret_cast<SplitStorage*>(onesweep_shared + STORAGE_WORDS);
    const u32 tid = threadIdx.x;
    const u32 lane = tid & 31u;
    const u32 warp = tid >> 5;
    const PassDigit<K> digit_of(shift, width, descending != 0u);

#if !SORT_TILES_IN_BLOCK_ORDER
    if (tid == 0) s.tile = atomicAdd(tile_counter, 1u);
#endif
    for (u32 i = tid; i < Storage::WARPS * SORT_RADIX; i += BLOCK) s.warp_counts[i] = 0u;
    if (tid < SORT_RADIX) s.tile_counts[tid] = 0u;
#if SORT_RANK_BY_SHARED_MASKS
    // The warps' peer masks, after the storage: zero before the ranking
    // (each row's peers clear their masks again).
    u32* const peer_masks =
        reinterpret_cast<u32*>(reinterpret_cast<unsigned char*>(onesweep_shared) + 8 * STORAGE_WORDS + SPLIT_BYTES);
    for (u32 i = tid; i < Storage::WARPS * SORT_RADIX; i += BLOCK) peer_masks[i] = 0u;
#endif
#if SORT_TILES_IN_BLOCK_ORDER
    // The loads below start before the barrier that publishes the zeroed
    // counters (after them).
    const u64 tile = blockIdx.x;
#else
    __syncthreads();
    const u64 tile = s.tile;
#endif
    const u64 num_tiles = (count + TILE - 1) / TILE;
    digit_state_clear_rows<SORT_RADIX, BLOCK>(next_state, tile, num_tiles, state_rows);
    const u64 tile_base = tile * (u64)TILE;
    const u32 tile_count = (u32)min((u64)TILE, count - tile_base);

    // Load: warp-striped (coalesced), item j of lane L of warp w is tile
    // item w·32·ITEMS + 32·j + L. Every tile but the last is full: its
    // loads and ranks skip the bounds.
    const bool full_tile = tile_count == (u32)TILE;
    K key[ITEMS];
    if (full_tile) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) key[j] = keys_in[tile_base + warp * WARP_ITEMS + 32u * j + lane];
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            key[j] = idx < tile_count ? keys_in[tile_base + idx] : (K)0;
        }
    }
#if SORT_TILES_IN_BLOCK_ORDER
    __syncthreads();  // the zeroed counters
#endif
    // item_digit(j): the digit of item j (its uses below read it only for
    // items below tile_count).
#if SORT_PACKED_DIGITS
    PackedDigits<ITEMS> digits;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) digits.set(j, digit_of.of(key[j]));
    const auto item_digit = [&](int j) { return digits.get(j); };
#else
    const auto item_digit = [&](int j) { return digit_of.of(key[j]); };
#endif

    const u32 d = tid;
    const bool owns_digit = BLOCK == SORT_RADIX || d < SORT_RADIX;
    u32* my_counts = s.warp_counts + warp * SORT_RADIX;
    // total: the tile's count of digit d; start: the tile's keys of digits
    // below d (thread d < 256).
    u32 total = 0u;
    u32 start = 0u;
#if SORT_TILE_COUNTS == SORT_COUNTS_EARLY || SORT_TILE_COUNTS == SORT_COUNTS_BY_WARP
    // The tile's count of each digit, published at once (before the
    // ranking), so that later tiles looking back find it early: one shared
    // increment per key, into the tile's counters (EARLY) or the warp's
    // (BY_WARP, summed over the warps by the digit's thread).
#if SORT_TILE_COUNTS == SORT_COUNTS_EARLY
    u32* count_of_digit = s.tile_counts;
#else
    u32* count_of_digit = my_counts;
#endif
    if (full_tile) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            atomicAdd(&count_of_digit[item_digit(j)], 1u);
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < tile_count)
                atomicAdd(&count_of_digit[item_digit(j)], 1u);
        }
    }
    __syncthreads();
    if (owns_digit) {
#if SORT_TILE_COUNTS == SORT_COUNTS_EARLY
        total = s.tile_counts[d];
#else
#pragma unroll
        for (int w = 0; w < Storage::WARPS; ++w) total += s.warp_counts[w * SORT_RADIX + d];
#endif
        digit_publish<SORT_RADIX>(state, tile, d, tile == 0 ? DIGIT_PREFIX : DIGIT_AGGREGATE, total);
    }
#endif
#if SORT_TILE_COUNTS == SORT_COUNTS_BY_WARP
    // Each warp's first slot of each digit before the ranking (the tile's
    // keys of lower digits, then the digit's keys of the warps before), so
    // the ranking's counters hand out tile slots directly.
    start = sort_warp_first_slots<BLOCK, Storage::WARPS>(total, s.warp_counts, s.scan, d, owns_digit);
    __syncthreads();
#endif

    // Rank within the warp (sort/warp_rank.cuh): first the peers of every
    // row (independent of each other), then the ranks row by row: slot[j]
    // is the rank of item j among the warp's keys of its digit (BY_WARP:
    // its slot in the tile). A full tile has a key in every lane: no
    // bounds, no lanes to leave out.
    u32 slot[ITEMS];
#if SORT_RANK_BY_SHARED_MASKS
    u32* my_masks = peer_masks + warp * SORT_RADIX;
    if (full_tile) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            slot[j] = warp_rank_by_shared_masks<true>(my_counts, my_masks, item_digit(j));
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            slot[j] = warp_rank_by_shared_masks(my_counts, my_masks, digit_of.of_item(key[j], idx, tile_count));
        }
    }
#else
    if (full_tile) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            slot[j] = warp_digit_peers(item_digit(j), false);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 digit = item_digit(j);
            slot[j] = warp_rank_from_peers<true>(my_counts, digit, slot[j]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            const u32 digit = digit_of.of_item(key[j], idx, tile_count);
            slot[j] = warp_digit_peers(digit, true);
        }
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            const u32 digit = digit_of.of_item(key[j], idx, tile_count);
            slot[j] = warp_rank_from_peers(my_counts, digit, slot[j]);
        }
    }
#endif

    K* exchange_keys = reinterpret_cast<K*>(s.exchange);
#if SORT_TILE_COUNTS == SORT_COUNTS_BY_WARP
    // Keys into their sorted slots at once (the look-back below reads and
    // writes no shared memory the exchange holds).
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        if (full_tile || idx < tile_count) exchange_keys[slot[j]] = key[j];
    }
#else
    __syncthreads();
    // Thread d < 256 owns digit d: the tile-local start and each warp's
    // first slot of the digit (the tile-local start plus the counts of the
    // warps before). Threads past 255 only add zeros to the block scan,
    // after every digit.
#if SORT_TILE_COUNTS == SORT_COUNTS_FROM_RANKS
    if (owns_digit) {
#pragma unroll
        for (int w = 0; w < Storage::WARPS; ++w) total += s.warp_counts[w * SORT_RADIX + d];
        digit_publish<SORT_RADIX>(state, tile, d, tile == 0 ? DIGIT_PREFIX : DIGIT_AGGREGATE, total);
    }
#endif
    start = sort_warp_first_slots<BLOCK, Storage::WARPS>(total, s.warp_counts, s.scan, d, owns_digit);
#endif

    // The look-back of digit d (thread d): the global base of the tile's
    // keys of each digit.
    if (owns_digit) {
        u32 before = 0u;
        if (tile > 0) {
            before = digit_lookback<SORT_RADIX, SORT_LOOKBACK_WINDOW>(state, tile, d);
            digit_publish<SORT_RADIX>(state, tile, d, DIGIT_PREFIX, before + total);
        }
        const u64 first_position = digit_offsets[d];
        s.scatter_base[d] = first_position + (u64)before - (u64)start;
        if constexpr (SPLIT) {
            // The destination of the digit's first key of the tile; slot i
            // of the digit goes there while its position is below the next
            // destination's start (modular address arithmetic: slot_base
            // may lie below the buffer, slot i ≥ start does not).
            const u64 first = first_position + (u64)before;
            const u32 j = sort_split_destination(split, first);
            const u64 next = j + 1u < (u32)split->count ? split->start[j + 1u] : ~0ull;
            const u64 slots = next - s.scatter_base[d];
            sp.limit[d] = slots > 0xffffffffull ? 0xffffffffu : (u32)slots;
            const u64 shifted = s.scatter_base[d] - split->start[j];
            sp.keys[d] = split->keys[j] + shifted * sizeof(K);
            if constexpr (HAS_VALUES) sp.values[d] = split->values[j] + shifted * sizeof(V);
        }
        // The last tile's inclusive count (before + total) is the portion's
        // count of digit d: the next portion's keys of digit d follow them.
        if (next_portion_offsets != nullptr && tile == num_tiles - 1)
            next_portion_offsets[d] = first_position + (u64)before + (u64)total;
    }
    __syncthreads();

#if SORT_TILE_COUNTS != SORT_COUNTS_BY_WARP
    // Keys into their sorted slots (each warp's first slot of the digit
    // plus the rank), then out: consecutive slots of one digit go to
    // consecutive global positions.
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        if (full_tile || idx < tile_count) {
            const u32 digit = item_digit(j);
            slot[j] += s.warp_counts[warp * SORT_RADIX + digit];
            exchange_keys[slot[j]] = key[j];
        }
    }
    __syncthreads();
#endif
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 i = tid + (u32)j * BLOCK;
        if (full_tile || i < tile_count) {
            const K k = exchange_keys[i];
            const u32 digit = digit_of.of(k);
            if (HAS_VALUES) s.slot_digit[HAS_VALUES ? i : 0] = (u8)digit;
            if constexpr (SPLIT) {
                sort_split_store<K>(split, sp.keys, sp.limit, s.scatter_base, digit, i, k, false);
            } else {
                keys_out[s.scatter_base[digit] + i] = k;
            }
        }
    }
    if (HAS_VALUES) {
        V value[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (full_tile || idx < tile_count) value[j] = values_in[tile_base + idx];
        }
        __syncthreads();  // every key is out of the exchange
        V* exchange_values = reinterpret_cast<V*>(s.exchange);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (full_tile || idx < tile_count) exchange_values[slot[j]] = value[j];
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 i = tid + (u32)j * BLOCK;
            if (full_tile || i < tile_count) {
                const u32 digit = s.slot_digit[HAS_VALUES ? i : 0];
                if constexpr (SPLIT) {
                    sort_split_store<V>(split, sp.values, sp.limit, s.scatter_base, digit, i,
                                        exchange_values[i], true);
                } else {
                    values_out[s.scatter_base[digit] + i] = exchange_values[i];
                }
            }
        }
    }
}

// out[i] = i for i < n (argsort's index payload); grid-stride.
template <typename I>
__device__ __forceinline__ void sort_iota(I* __restrict__ out, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = (I)i;
}

// Copies n keys (and values) from one buffer to another, grid-stride: the
// in-place sort's copy back when its last pass wrote the temporary buffer.
template <typename K, typename V, bool HAS_VALUES>
__device__ __forceinline__ void sort_copy(const K* __restrict__ keys_in, K* __restrict__ keys_out,
                                          const V* __restrict__ values_in,
                                          V* __restrict__ values_out, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        keys_out[i] = keys_in[i];
        if (HAS_VALUES) values_out[i] = values_in[i];
    }
}
