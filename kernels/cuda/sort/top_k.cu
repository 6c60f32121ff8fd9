// sort/top_k.cu — the k largest (or smallest) keys by radix select, not a
// full sort.
//
//   1. From the top digit down, topk_histogram counts the 8-bit digit of
//      the keys whose higher digits match the prefix found so far, and
//      topk_select (one block) finds the digit where the k-th key lies,
//      appends it to the prefix and subtracts the keys below it from the
//      rank sought. After KEY_BITS / 8 rounds the prefix is the k-th key's
//      radix image `kth` and `remaining` says how many keys equal to it
//      belong to the result (the first ones in input order).
//   2. topk_count counts, per portion, the keys below kth and equal to it;
//      topk_filter then writes, in input order, every key below kth to
//      out[0, k − remaining) and the first `remaining` keys equal to kth to
//      out[k − remaining, k), with their indices: an ordered compaction of
//      two classes on the per-digit look-back
//      (single_pass/digit_lookback.cuh, two "digits").
// The host then sorts the k candidates by key (stable, so ties keep input
// order) with the default sort. Images are ordered for the request: the
// largest keys are the smallest images of the complement, so "below kth"
// always means "in the result".
//
// Select state (u64 words): [0] prefix image, [1] mask of the digits found,
// [2] rank still sought (1-based).
//
// Needs COMMON, WARP, BLOCK, TILE_STATUS, SINGLE_PASS_DIGIT_LOOKBACK,
// SORT_RADIX_KEY, SORT_ONESWEEP.

template <typename K, int BLOCK, int ITEMS>
__device__ __forceinline__ void topk_histogram(const K* __restrict__ keys, u64 n, u32 descending,
                                               u32 shift, const u64* __restrict__ select,
                                               unsigned long long* __restrict__ hist) {
    __shared__ u32 counts[SORT_RADIX];
    for (u32 i = threadIdx.x; i < SORT_RADIX; i += BLOCK) counts[i] = 0u;
    __syncthreads();
    const u64 prefix = select[0];
    const u64 mask = select[1];
    const u64 chunk = (u64)BLOCK * ITEMS;
    for (u64 base = (u64)blockIdx.x * chunk; base < n; base += (u64)gridDim.x * chunk) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u64 i = base + (u64)j * BLOCK + threadIdx.x;
            if (i < n) {
                const u64 image = (u64)ordered_radix<K>(keys[i], descending != 0u);
                if ((image & mask) == prefix) atomicAdd(&counts[(u32)(image >> shift) & 0xffu], 1u);
            }
        }
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < SORT_RADIX; i += BLOCK) {
        if (counts[i] != 0u) atomicAdd(&hist[i], (unsigned long long)counts[i]);
    }
}

// One block of 256 threads: picks the digit holding the sought rank, then
// clears the histogram for the next round.
__device__ __forceinline__ void topk_select(unsigned long long* hist, u64* select, u32 shift) {
    typedef BlockScan<u64, sum_op<u64>, SORT_RADIX> Scan;
    __shared__ typename Scan::Storage storage;
    const u32 d = threadIdx.x;
    const u64 c = hist[d];
    hist[d] = 0ull;
    const u64 remaining = select[2];
    u64 all;
    u64 below = Scan::exclusive_scan(c, storage, all);  // __syncthreads: every thread has read select
    if (d == 0) below = 0;
    if (below < remaining && remaining <= below + c) {
        select[0] |= (u64)d << shift;
        select[1] |= 0xffull << shift;
        select[2] = remaining - below;
    }
}

// Per portion (grid y): keys below kth and equal to it, added into
// counts[2·portion] and counts[2·portion + 1] (zeroed by the host).
template <typename K, int BLOCK, int ITEMS>
__device__ __forceinline__ void topk_count(const K* __restrict__ keys, u64 n, u64 portion_keys,
                                           u32 descending, const u64* __restrict__ select,
                                           unsigned long long* __restrict__ counts) {
    __shared__ u32 block_counts[2];
    if (threadIdx.x < 2) block_counts[threadIdx.x] = 0u;
    __syncthreads();
    const u64 kth = select[0];
    const u64 start = (u64)blockIdx.y * portion_keys;
    const u64 end = min(n, start + portion_keys);
    const u64 chunk = (u64)BLOCK * ITEMS;
    u32 below = 0u, equal = 0u;
    for (u64 base = start + (u64)blockIdx.x * chunk; base < end; base += (u64)gridDim.x * chunk) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u64 i = base + (u64)j * BLOCK + threadIdx.x;
            if (i < end) {
                const u64 image = (u64)ordered_radix<K>(keys[i], descending != 0u);
                below += image < kth ? 1u : 0u;
                equal += image == kth ? 1u : 0u;
            }
        }
    }
    below = warp_reduce_all<u32, sum_op<u32>>(below);
    equal = warp_reduce_all<u32, sum_op<u32>>(equal);
    if ((threadIdx.x & 31u) == 0u) {
        atomicAdd(&block_counts[0], below);
        atomicAdd(&block_counts[1], equal);
    }
    __syncthreads();
    if (threadIdx.x < 2 && block_counts[threadIdx.x] != 0u) {
        atomicAdd(&counts[2ull * blockIdx.y + threadIdx.x], (unsigned long long)block_counts[threadIdx.x]);
    }
}

// One portion of `count` keys starting at input index `first`; one block
// per tile of BLOCK·ITEMS keys (thread t holds items t·ITEMS + j, in input
// order). counts: the per-portion classes of topk_count; state: this
// portion's look-back rows (2 words per tile, zero); tile_counter: zero.
template <typename K, int BLOCK, int ITEMS>
__device__ __forceinline__ void topk_filter(const K* __restrict__ keys, u64 count, u64 first, u64 k,
                                            u32 descending, const u64* __restrict__ select,
                                            const unsigned long long* __restrict__ counts,
                                            u32 portion, K* __restrict__ out_keys,
                                            u64* __restrict__ out_indices, u32* tile_counter,
                                            u32* state) {
    static_assert(BLOCK * ITEMS < 65536, "tile counts are packed in 16 bits");
    typedef BlockScan<u32, sum_op<u32>, BLOCK> Scan;
    __shared__ typename Scan::Storage storage;
    __shared__ u32 tile_shared;
    __shared__ u64 base_shared[2];
    const u32 tid = threadIdx.x;
    if (tid == 0) tile_shared = atomicAdd(tile_counter, 1u);
    if (tid < 2) {
        u64 sum = 0;
        for (u32 q = 0; q < portion; ++q) sum += counts[2ull * q + tid];
        base_shared[tid] = sum;
    }
    __syncthreads();
    const u64 tile = tile_shared;
    const u64 kth = select[0];
    const u64 remaining = select[2];
    const u64 tile_base = tile * (u64)(BLOCK * ITEMS);
    const u64 tile_end = min(count, tile_base + (u64)(BLOCK * ITEMS));
    K key[ITEMS];
    u32 cls[ITEMS];  // 0 below kth, 1 equal, 2 neither
    u32 packed = 0u;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u64 i = tile_base + (u64)tid * ITEMS + j;
        cls[j] = 2u;
        if (i < tile_end) {
            key[j] = keys[i];
            const u64 image = (u64)ordered_radix<K>(key[j], descending != 0u);
            cls[j] = image < kth ? 0u : (image == kth ? 1u : 2u);
            packed += cls[j] == 0u ? 1u : (cls[j] == 1u ? 0x10000u : 0u);
        }
    }
    u32 all;
    u32 exclusive = Scan::exclusive_scan(packed, storage, all);
    if (tid == 0) exclusive = 0u;
    __shared__ u32 before_shared[2];
    if (tid < 2) {
        const u32 total = tid == 0 ? (all & 0xffffu) : (all >> 16);
        u32 before = 0u;
        if (tile == 0) {
            digit_publish<2>(state, 0, tid, DIGIT_PREFIX, total);
        } else {
            digit_publish<2>(state, tile, tid, DIGIT_AGGREGATE, total);
            before = digit_lookback<2>(state, tile, tid);
            digit_publish<2>(state, tile, tid, DIGIT_PREFIX, before + total);
        }
        before_shared[tid] = before;
    }
    __syncthreads();
    u64 rank_below = base_shared[0] + before_shared[0] + (exclusive & 0xffffu);
    u64 rank_equal = base_shared[1] + before_shared[1] + (exclusive >> 16);
    const u64 below_total = k - remaining;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u64 i = tile_base + (u64)tid * ITEMS + j;
        if (cls[j] == 0u) {
            out_keys[rank_below] = key[j];
            out_indices[rank_below] = first + i;
            ++rank_below;
        } else if (cls[j] == 1u) {
            if (rank_equal < remaining) {
                out_keys[below_total + rank_equal] = key[j];
                out_indices[below_total + rank_equal] = first + i;
            }
            ++rank_equal;
        }
    }
}
