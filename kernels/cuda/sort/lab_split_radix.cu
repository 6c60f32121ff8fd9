// sort/lab_split_radix.cu — the lesson's LSD radix sort, one bit per pass,
// of (image, index) pairs (lab_common.cuh).
//
// A pass over bit b is the split: split_flags writes flag[i] = 1 where bit b
// of image[i] is 0; the scan crate's exclusive sum turns the flags into each
// zero's output position; split_scatter moves a zero to position scan[i]
// and a one to zeros + (i − scan[i]), zeros being scan[n−1] + flag[n−1]
// (read by every thread, so the host never waits for the count). Both
// groups keep their order, so each pass is stable and the sort is too.
//
// Work O(k·n) for k bits; steps O(k · log n) (the scan's). Launches per bit:
// flags, the scan's, scatter. Bytes per bit: n·s read and 4n written
// (flags), the scan's 8n or so, n·(s + 4 + 4) read and n·(s + 4) written
// (scatter), s the image size.

template <class I>
__device__ __forceinline__ void split_flags(const I* __restrict__ image, u32* __restrict__ flags, u64 n, u32 bit) {
    const u64 i = global_thread_index();
    if (i < n) flags[i] = (u32)((image[i] >> bit) & 1u) ^ 1u;
}

template <class I>
__device__ __forceinline__ void split_scatter(const I* __restrict__ src_image, const u32* __restrict__ src_index,
                                              const u32* __restrict__ zeros_before, I* __restrict__ dst_image,
                                              u32* __restrict__ dst_index, u64 n, u32 bit) {
    const u64 i = global_thread_index();
    if (i >= n) return;
    const u64 zeros = (u64)zeros_before[n - 1] + (u64)(((src_image[n - 1] >> bit) & 1u) ^ 1u);
    const I value = src_image[i];
    const u64 before = zeros_before[i];
    const u64 to = ((value >> bit) & 1u) ? zeros + (i - before) : before;
    dst_image[to] = value;
    dst_index[to] = src_index[i];
}
