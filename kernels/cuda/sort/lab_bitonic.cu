// sort/lab_bitonic.cu — bitonic sort of (image, index) pairs
// (lab_common.cuh) for any n.
//
// The network is the all-ascending form: to merge two sorted runs of h
// items into 2h, compare item i with its mirror (the "flip": i and
// 2h − 1 − i within each block of 2h), then half-clean with strides
// h/2, h/4, …, 1 (i with i + j); every comparator puts the smaller pair at
// the lower index. Padded logically to N = the next power of two with +∞
// sentinels, the sentinels sit at the top and never move (the comparator
// would leave them where they are), so every comparator whose upper index
// is ≥ n is simply skipped. Pairs compare as (image, index): all distinct,
// so the result is the stable order.
//
//   bitonic_tile (FULL): each block sorts a tile of BITONIC_TILE items in
//     shared memory (runs 1 → BITONIC_TILE), one thread per comparator.
//   bitonic_tile (!FULL): the half-cleaning steps of stride
//     BITONIC_TILE/2 … 1 of a long merge, in shared memory.
//   bitonic_global: one flip or half-cleaning step of stride ≥ BITONIC_TILE
//     in global memory, one thread per comparator.
//
// Work O(n log² n) comparators; steps O(log² n). Launches: 1, then for
// each run length h = BITONIC_TILE … N/2 one flip, log2(h / BITONIC_TILE)
// global half-cleaners and one tile launch. Bytes: each launch reads and
// writes every pair once, n·(s + 4) each way (s the image size).

template <class I>
__device__ __forceinline__ void bitonic_compare(I* image, u32* index, u64 lo, u64 hi) {
    const I a = image[lo];
    const I b = image[hi];
    const u32 index_a = index[lo];
    const u32 index_b = index[hi];
    if (lab_pair_less<I>(b, index_b, a, index_a)) {
        image[lo] = b;
        image[hi] = a;
        index[lo] = index_b;
        index[hi] = index_a;
    }
}

// Comparator c of a step of stride 2^log_stride: flip (mirror inside blocks
// of 2^(log_stride + 1)) or half-clean (i with i + 2^log_stride).
__device__ __forceinline__ void bitonic_pair(u64 c, u32 log_stride, bool flip, u64* lo, u64* hi) {
    const u64 stride = 1ull << log_stride;
    const u64 block_base = (c >> log_stride) << (log_stride + 1);
    const u64 offset = c & (stride - 1);
    *lo = block_base + offset;
    *hi = flip ? block_base + 2 * stride - 1 - offset : *lo + stride;
}

// One block of BITONIC_TILE / 2 threads per tile.
template <class I, bool FULL>
__device__ __forceinline__ void bitonic_tile(I* __restrict__ image, u32* __restrict__ index, u64 n) {
    __shared__ I s_image[BITONIC_TILE];
    __shared__ u32 s_index[BITONIC_TILE];
    const u64 base = linear_block_index() * (u64)BITONIC_TILE;
    if (base >= n) return;  // surplus blocks of a spilled grid (whole block: no barrier skipped)
    const u32 count = (u32)min((u64)BITONIC_TILE, n - base);
    for (u32 i = threadIdx.x; i < count; i += blockDim.x) {
        s_image[i] = image[base + i];
        s_index[i] = index[base + i];
    }
    __syncthreads();
    const u64 c = threadIdx.x;
    u64 lo, hi;
    if (FULL) {
        // Runs of 2^log_half items merge into 2^(log_half + 1), while a run
        // is shorter than the tile's items rounded up to a power of two.
        for (u32 log_half = 0; (1u << log_half) < count; ++log_half) {
            bitonic_pair(c, log_half, true, &lo, &hi);
            if (hi < count) bitonic_compare<I>(s_image, s_index, lo, hi);
            __syncthreads();
            for (u32 log_j = log_half; log_j-- > 0;) {
                bitonic_pair(c, log_j, false, &lo, &hi);
                if (hi < count) bitonic_compare<I>(s_image, s_index, lo, hi);
                __syncthreads();
            }
        }
    } else {
        for (u32 log_j = BITONIC_LOG_TILE; log_j-- > 0;) {
            bitonic_pair(c, log_j, false, &lo, &hi);
            if (hi < count) bitonic_compare<I>(s_image, s_index, lo, hi);
            __syncthreads();
        }
    }
    for (u32 i = threadIdx.x; i < count; i += blockDim.x) {
        image[base + i] = s_image[i];
        index[base + i] = s_index[i];
    }
}

// One step in global memory; `comparators` = N / 2 threads in all.
template <class I>
__device__ __forceinline__ void bitonic_global(I* __restrict__ image, u32* __restrict__ index, u64 n, u64 comparators,
                                               u32 log_stride, u32 flip) {
    const u64 c = global_thread_index();
    if (c >= comparators) return;
    u64 lo, hi;
    bitonic_pair(c, log_stride, flip != 0u, &lo, &hi);
    if (hi < n) bitonic_compare<I>(image, index, lo, hi);
}
