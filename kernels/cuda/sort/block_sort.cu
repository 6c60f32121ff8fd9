// sort/block_sort.cu — the small-input path: ONE block sorts up to
// BLOCK·ITEMS keys (and values) entirely in shared memory, one 8-bit LSD
// pass after another, with the same stable warp ranking as the Onesweep
// pass (sort/onesweep.cu) and no global traffic between passes: one read
// and one write of the data in all, one launch.
//
// Per pass: keys sit in registers in warp-striped order (item j of lane L
// of warp w is position w·32·ITEMS + 32·j + L of the current sequence);
// each is ranked by digit (warp_rank_digit, sort/warp_rank.cuh), the
// 256 digit counts are scanned across warps and digits, keys (then values)
// are written to their slots of the shared exchange and read back in the
// same striped order for the next pass. Dynamic shared memory:
// BlockSortStorage + BLOCK·ITEMS·max(key, value) bytes of exchange.
//
// Needs COMMON, WARP, BLOCK, SORT_RADIX_KEY, SORT_WARP_RANK, SORT_ONESWEEP
// (sort_digit_of).

template <int BLOCK>
struct BlockSortStorage {
    static constexpr int WARPS = BLOCK / 32;
    u32 warp_counts[WARPS * SORT_RADIX];
    u32 tile_start[SORT_RADIX];
    typename BlockScan<u32, sum_op<u32>, BLOCK>::Storage scan;
};

template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS>
__device__ __forceinline__ void sort_block(const K* keys_in, K* keys_out,
                                           const V* values_in,
                                           V* values_out, u32 n, u32 begin_bit,
                                           u32 end_bit, u32 descending) {
    static_assert(BLOCK >= SORT_RADIX && BLOCK % 32 == 0, "at least one thread per digit");
    typedef BlockSortStorage<BLOCK> Storage;
    constexpr int WARP_ITEMS = 32 * ITEMS;
    extern __shared__ u64 block_sort_shared[];
    Storage& s = *reinterpret_cast<Storage*>(block_sort_shared);
    u64* exchange = block_sort_shared + (sizeof(Storage) + 7) / 8;
    K* exchange_keys = reinterpret_cast<K*>(exchange);
    V* exchange_values = reinterpret_cast<V*>(exchange);
    const u32 tid = threadIdx.x;
    const u32 lane = tid & 31u;
    const u32 warp = tid >> 5;
    const bool desc = descending != 0u;

    K key[ITEMS];
    V value[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        key[j] = idx < n ? keys_in[idx] : (K)0;
        if (HAS_VALUES && idx < n) value[j] = values_in[idx];
    }
    for (u32 shift = begin_bit; shift < end_bit; shift += 8u) {
        const u32 width = min(8u, end_bit - shift);
        for (u32 i = tid; i < Storage::WARPS * SORT_RADIX; i += BLOCK) s.warp_counts[i] = 0u;
        __syncthreads();
        u32* my_counts = s.warp_counts + warp * SORT_RADIX;
        // Any row may have lanes without keys: every row ranks as a partial
        // one.
        u32 slot[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            const u32 digit = idx < n ? sort_digit_of(ordered_radix<K>(key[j], desc), shift, width)
                                      : (u32)SORT_RADIX;
            slot[j] = warp_rank_digit(my_counts, digit, true);
        }
        __syncthreads();
        u32 total = 0u;
        if (tid < SORT_RADIX) {
#pragma unroll
            for (int w = 0; w < Storage::WARPS; ++w) {
                const u32 c = s.warp_counts[w * SORT_RADIX + tid];
                s.warp_counts[w * SORT_RADIX + tid] = total;
                total += c;
            }
        }
        u32 all;
        u32 start = BlockScan<u32, sum_op<u32>, BLOCK>::exclusive_scan(total, s.scan, all);
        if (tid == 0) start = 0u;
        if (tid < SORT_RADIX) s.tile_start[tid] = start;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < n) {
                const u32 digit = sort_digit_of(ordered_radix<K>(key[j], desc), shift, width);
                slot[j] += s.tile_start[digit] + s.warp_counts[warp * SORT_RADIX + digit];
                exchange_keys[slot[j]] = key[j];
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < n) key[j] = exchange_keys[idx];
        }
        if (HAS_VALUES) {
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
                if (idx < n) exchange_values[slot[j]] = value[j];
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
                if (idx < n) value[j] = exchange_values[idx];
            }
        }
        __syncthreads();  // the exchange and counters are reused by the next pass
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        if (idx < n) {
            keys_out[idx] = key[j];
            if (HAS_VALUES) values_out[idx] = value[j];
        }
    }
}

// Segmented sort: block s (blockIdx.y · gridDim.x + blockIdx.x) sorts
// segment s < segments, keys [offsets[s], offsets[s+1]) (at most
// BLOCK·ITEMS of them, checked by the host), with sort_block.
template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS>
__device__ __forceinline__ void sort_segments(const K* keys_in, K* keys_out, const V* values_in,
                                              V* values_out, const u64* __restrict__ offsets,
                                              u64 segments, u32 begin_bit, u32 end_bit,
                                              u32 descending) {
    const u64 segment = (u64)blockIdx.y * gridDim.x + blockIdx.x;
    if (segment >= segments) return;  // the whole block: the grid's spare blocks
    const u64 start = offsets[segment];
    const u32 n = (u32)(offsets[segment + 1] - start);
    sort_block<K, V, HAS_VALUES, BLOCK, ITEMS>(keys_in + start, keys_out + start,
                                               HAS_VALUES ? values_in + start : values_in,
                                               HAS_VALUES ? values_out + start : values_out, n,
                                               begin_bit, end_bit, descending);
}
