// sort/lab_merge.cu — merge sort of (image, index) pairs (lab_common.cuh):
// the block sort of lab_bitonic.cu's tiles (BITONIC_TILE items each, stable
// by (image, index)), then one merge pass per doubling of the run length,
// each partitioned by merge path.
//
// A pass merges runs A = [2mr, 2mr + r) and B = [2mr + r, 2mr + 2r) (r the
// run length, clipped at n) from `src` into `dst`. Each block writes one
// output tile of MERGE_TILE items; MERGE_TILE divides 2r, so a tile lies in
// one pair of runs. The block finds where its first and last output
// diagonal cross the merge path by binary search in global memory (ties
// take A first: A[i] goes before B[j] when image(A[i]) <= image(B[j])),
// loads the A and B items between them (MERGE_TILE in all) into shared
// memory, and every thread finds its own MERGE_ITEMS-output diagonal by the
// same search in shared memory, then merges serially. Every block merges
// the same number of outputs whatever the data. Stable: A's items came
// before B's in the input, and ties take A.
//
// Work O(n log n); steps O(log n · log MERGE_TILE). Launches: 1 + ⌈log2(⌈n
// / MERGE_TILE⌉)⌉. Bytes per pass: n·(s + 4) read and written (s the image
// size), plus the searches.

// The number of A items among the first `diagonal` outputs of merging
// a[0, a_len) and b[0, b_len) (ties take a first).
template <class I>
__device__ __forceinline__ u64 merge_path_search(const I* a, u64 a_len, const I* b, u64 b_len, u64 diagonal) {
    u64 lo = diagonal > b_len ? diagonal - b_len : 0;
    u64 hi = min(diagonal, a_len);
    while (lo < hi) {
        const u64 mid = (lo + hi) / 2;
        // lo <= mid < hi <= diagonal and mid >= diagonal - b_len, so
        // 0 <= diagonal - 1 - mid < b_len.
        if (a[mid] <= b[diagonal - 1 - mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// One block of MERGE_TILE / MERGE_ITEMS threads per output tile.
template <class I>
__device__ __forceinline__ void merge_pass(const I* __restrict__ src_image, const u32* __restrict__ src_index,
                                           I* __restrict__ dst_image, u32* __restrict__ dst_index, u64 n, u64 run) {
    __shared__ I s_image[MERGE_TILE];
    __shared__ u32 s_index[MERGE_TILE];
    __shared__ u64 s_split[2];
    const u64 out_begin = linear_block_index() * (u64)MERGE_TILE;
    if (out_begin >= n) return;  // surplus blocks of a spilled grid
    const u64 pair_begin = out_begin / (2 * run) * (2 * run);
    const u64 a_len = min(run, n - pair_begin);
    const u64 b_begin = pair_begin + a_len;
    const u64 b_len = b_begin < n ? min(run, n - b_begin) : 0;
    const I* a = src_image + pair_begin;
    const I* b = src_image + b_begin;
    const u64 diag_begin = out_begin - pair_begin;
    const u64 diag_end = min(diag_begin + MERGE_TILE, a_len + b_len);
    if (threadIdx.x == 0) s_split[0] = merge_path_search<I>(a, a_len, b, b_len, diag_begin);
    if (threadIdx.x == 32 || (blockDim.x <= 32 && threadIdx.x == 0))
        s_split[1] = merge_path_search<I>(a, a_len, b, b_len, diag_end);
    __syncthreads();
    const u64 a_lo = s_split[0];
    const u64 b_lo = diag_begin - a_lo;
    const u32 tile_a = (u32)(s_split[1] - a_lo);
    const u32 tile_b = (u32)((diag_end - s_split[1]) - b_lo);
    const u32 tile_items = tile_a + tile_b;  // = diag_end - diag_begin <= MERGE_TILE
    for (u32 i = threadIdx.x; i < tile_items; i += blockDim.x) {
        const u64 from = i < tile_a ? pair_begin + a_lo + i : b_begin + b_lo + (i - tile_a);
        s_image[i] = src_image[from];
        s_index[i] = src_index[from];
    }
    __syncthreads();
    const I* s_a = s_image;
    const I* s_b = s_image + tile_a;
    const u32 diagonal = min(threadIdx.x * (u32)MERGE_ITEMS, tile_items);
    u32 ai = (u32)merge_path_search<I>(s_a, tile_a, s_b, tile_b, diagonal);
    u32 bi = diagonal - ai;
    const u64 out = out_begin + diagonal;
    for (u32 k = 0; k < MERGE_ITEMS && diagonal + k < tile_items; ++k) {
        const bool take_a = bi >= tile_b || (ai < tile_a && s_a[ai] <= s_b[bi]);
        const u32 from = take_a ? ai : tile_a + bi;
        dst_image[out + k] = s_image[from];
        dst_index[out + k] = s_index[from];
        if (take_a)
            ++ai;
        else
            ++bi;
    }
}
