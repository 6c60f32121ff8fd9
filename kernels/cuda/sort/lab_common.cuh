// sort/lab_common.cuh — what the lesson's sorts share: every lab method
// sorts (image, index) pairs and moves the keys and values once at the end.
//
// 1. sort_lab_prepare: image[i] = the key's ordered radix image
//    (radix_key.cuh; complemented when descending) shifted down by
//    begin_bit and masked to the bit range's width; index[i] = i. Images
//    are u32 for keys of up to 4 bytes and u64 for 8-byte keys.
// 2. A method sorts the pairs by image. Equal images keep their index
//    order (odd-even, merge and split radix by construction, bitonic by
//    comparing (image, index)), so every method is stable.
// 3. sort_lab_gather: out[i] = in[index[i]] for the keys (their own bits:
//    NaN payloads and the sign of zero survive) and the values, into a
//    scratch buffer; sort_lab_copy copies it back in place.
//
// Bytes: prepare reads n·k and writes n·(s + 4) (k the key size, s the image
// size); gather and copy read n·4 + 2·n·k (+ 2·n·v for values) and write
// 2·n·k (+ 2·n·v). One thread per item, grids spilling into y past 2^31 − 1
// blocks; indices are u32 (the lab sorts at most 2^32 − 1 keys).

// The image type of a key of S bytes.
template <int S> struct lab_image_of { typedef u32 type; };
template <> struct lab_image_of<8> { typedef u64 type; };

template <class K>
__device__ __forceinline__ void sort_lab_prepare(const K* __restrict__ keys, u64 n, u32 begin_bit, u32 width,
                                                 u32 descending, typename lab_image_of<sizeof(K)>::type* __restrict__ image,
                                                 u32* __restrict__ index) {
    typedef typename lab_image_of<sizeof(K)>::type I;
    const u64 i = global_thread_index();
    if (i >= n) return;
    // In 64 bits, so that the complement and the shifts of the 1- and 2-byte
    // images are not promoted to int. begin_bit < 64 and width <= 64 (the
    // host checked the range against the key's width).
    u64 r = (u64)ordered_radix<K>(keys[i], descending != 0u);
    const u64 mask = width >= 64u ? ~0ull : ((1ull << width) - 1ull);
    image[i] = (I)((r >> begin_bit) & mask);
    index[i] = (u32)i;
}

// W: the raw word of the moved items (u8, u16, u32 or u64).
template <class W>
__device__ __forceinline__ void sort_lab_gather(const W* __restrict__ src, W* __restrict__ dst,
                                                const u32* __restrict__ index, u64 n) {
    const u64 i = global_thread_index();
    if (i < n) dst[i] = src[index[i]];
}

template <class W>
__device__ __forceinline__ void sort_lab_copy(const W* __restrict__ src, W* __restrict__ dst, u64 n) {
    const u64 i = global_thread_index();
    if (i < n) dst[i] = src[i];
}

// (image, index) order: the bitonic network's strict total order.
template <class I>
__device__ __forceinline__ bool lab_pair_less(I image_a, u32 index_a, I image_b, u32 index_b) {
    return image_a < image_b || (image_a == image_b && index_a < index_b);
}
