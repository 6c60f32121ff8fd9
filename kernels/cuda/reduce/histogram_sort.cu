// reduce/histogram_sort.cu — the histogram by sort (crate `reduce`, module
// `histogram`, method `Sort`); needs histogram.cu (the binners).
//
// Computes counts[k] (+)= #{i : bin(in[i]) = k} in three steps, none of
// which needs an atomic or a zeroed count:
//   1. histogram_sort_bins: bin_of[i] = bin(in[i]) by the same binner the
//      counting modes use (even_binner / range_binner of histogram.cu), or
//      `bins` (a sentinel past the last bin) for items counted nowhere.
//   2. (host) the sort crate sorts bin_of by bits [0, bit length of bins):
//      equal bins become one run, the sentinels the last run.
//   3. histogram_sort_counts: one thread per bin k, count = lower_bound(k+1)
//      − lower_bound(k) by binary search in the sorted indices, stored
//      (Overwrite) or added (Accumulate) in C, wrapping like the atomics.
// Work O(n) for the map, O(n · passes) for the sort, O(bins · log n) for
// the counts. Global bytes: n·sizeof(T) read + 4n written here; the sort's
// passes; bins · 2⌈log2(n+1)⌉ · 4 read by the searches (mostly cached) and
// bins · sizeof(C) written (read too when accumulating).

// Bin indices of in[0, n): a grid-stride loop, one item per thread per
// step (the loads and the 4-byte stores coalesce). `stage` > 0: ranges
// only, that many boundaries copied to shared memory first.
template <typename T, typename Binner, u32 BLOCK>
__device__ __forceinline__ void histogram_sort_bins(const T* in, u64 n, u32* bin_of, Binner binner,
                                                    u32 bins, const T* boundaries, u32 stage) {
    extern __shared__ __align__(16) unsigned char hist_sort_smem[];
    if (stage > 0) {
        T* staged = (T*)hist_sort_smem;
        for (u32 i = threadIdx.x; i < stage; i += BLOCK) staged[i] = boundaries[i];
        binner_stage(binner, staged);
    }
    __syncthreads();
    const u64 stride = (u64)gridDim.x * BLOCK;
    for (u64 i = (u64)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) {
        const u32 bin = binner(__ldg(&in[i]));
        bin_of[i] = bin == HIST_NO_BIN ? bins : bin;
    }
}

// The first position of sorted[0, n) whose value is at least `key` (n if
// none).
__device__ __forceinline__ u64 hist_lower_bound(const u32* sorted, u64 n, u32 key) {
    u64 lo = 0, hi = n;  // sorted[..lo) < key <= sorted[hi..)
    while (lo < hi) {
        const u64 mid = lo + ((hi - lo) >> 1);
        if (__ldg(&sorted[mid]) < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// counts[k] for the sorted bin indices: the length of run k, the distance
// between its boundary and the next one's. One thread per bin; the grid
// covers `bins` (at most 65 536). The length is taken mod 2^32 for u32
// counts, as 32-bit atomics wrap.
template <typename C>
__device__ __forceinline__ void histogram_sort_counts(const u32* sorted, u64 n, C* counts, u32 bins,
                                                      u32 accumulate) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= bins) return;
    const u64 first = hist_lower_bound(sorted, n, k);
    const u64 end = hist_lower_bound(sorted, n, k + 1u);
    const C run = (C)(end - first);
    counts[k] = accumulate ? (C)(counts[k] + run) : run;
}
