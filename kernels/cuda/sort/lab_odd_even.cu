// sort/lab_odd_even.cu — the lesson's odd–even transposition ("brick")
// sort of (image, index) pairs (lab_common.cuh).
//
// Phase p compares the pairs (2t + p mod 2, 2t + p mod 2 + 1) and swaps a
// pair only when its right image is strictly smaller: equal images never
// pass each other, so the sort is stable. n phases sort any n items.
//
//   odd_even_block: n <= ODD_EVEN_BLOCK_ITEMS; one block of
//     ODD_EVEN_BLOCK_ITEMS / 2 threads runs all n phases on a shared-memory
//     copy, a __syncthreads between phases (one launch).
//   odd_even_phase: any n; one launch per phase, one thread per pair, in
//     global memory (n launches).
//
// Work O(n²) compare-exchanges; steps O(n). Bytes, per global phase: every
// pair read and, where swapped, written: about n·(s + 4) read and up to as
// much written (s the image size), n phases in all.

template <class I>
__device__ __forceinline__ void odd_even_phase(I* __restrict__ image, u32* __restrict__ index, u64 n, u32 parity) {
    const u64 left = 2ull * global_thread_index() + parity;
    if (left + 1 >= n) return;
    const I a = image[left];
    const I b = image[left + 1];
    if (b < a) {
        const u32 index_a = index[left];
        image[left] = b;
        image[left + 1] = a;
        index[left] = index[left + 1];
        index[left + 1] = index_a;
    }
}

// Launched with one block of ODD_EVEN_BLOCK_ITEMS / 2 threads; n <=
// ODD_EVEN_BLOCK_ITEMS.
template <class I>
__device__ __forceinline__ void odd_even_block(I* __restrict__ image, u32* __restrict__ index, u32 n) {
    __shared__ I s_image[ODD_EVEN_BLOCK_ITEMS];
    __shared__ u32 s_index[ODD_EVEN_BLOCK_ITEMS];
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
        s_image[i] = image[i];
        s_index[i] = index[i];
    }
    __syncthreads();
    for (u32 phase = 0; phase < n; ++phase) {
        const u32 left = 2u * threadIdx.x + (phase & 1u);
        if (left + 1u < n) {
            const I a = s_image[left];
            const I b = s_image[left + 1u];
            if (b < a) {
                const u32 index_a = s_index[left];
                s_image[left] = b;
                s_image[left + 1u] = a;
                s_index[left] = s_index[left + 1u];
                s_index[left + 1u] = index_a;
            }
        }
        __syncthreads();
    }
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
        image[i] = s_image[i];
        index[i] = s_index[i];
    }
}
