// The two device steps of the distributed sample sort that touch a rank's
// sorted shard (needs sort/radix_key.cuh).
//
//   take_samples     thread j < count: samples[j] = sorted[(2j+1)·n / (2·count)],
//                    the midpoints of `count` equal slices of the shard (the host
//                    checks that 2·count·n fits in 64 bits and recomputes the
//                    positions from n). Nothing is written when n == 0.
//   splitter_bounds  thread i < count: where splitter i falls in the sorted shard.
//                    work[i] is the splitter's sort value (the ordered radix image
//                    restricted to bits [begin, end), `sort::cpu::sort_value`),
//                    work[count + i] what to do: a position below SEARCH_UPPER is
//                    the answer (the splitter was sampled from this rank: its own
//                    position), SEARCH_LOWER asks for the first key whose value is
//                    >= the splitter's (a splitter from an earlier rank: equal keys
//                    of this rank come after it, in the upper bucket), SEARCH_UPPER
//                    for the first key whose value is > the splitter's (a splitter
//                    from a later rank: equal keys here come before it). One binary
//                    search per thread: about log2(n) dependent reads.

#define SEARCH_LOWER 0xffffffffffffffffull
#define SEARCH_UPPER 0xfffffffffffffffeull

// The value a sort orders by: the ordered radix image, bits [begin, end).
template <class K>
__device__ __forceinline__ u64 sample_sort_value(K k, bool descending, u32 begin, u32 end) {
    const u64 image = (u64)ordered_radix<K>(k, descending);
    const u32 width = end - begin;
    const u64 mask = width >= 64u ? ~0ull : ((1ull << width) - 1ull);
    return (image >> begin) & mask;
}

template <class K>
__device__ __forceinline__ void take_samples(const K* __restrict__ sorted, u64 n, u32 count,
                                             K* __restrict__ samples) {
    const u64 j = global_thread_index();
    if (j >= (u64)count || n == 0) {
        return;
    }
    samples[j] = sorted[((2ull * j + 1ull) * n) / (2ull * (u64)count)];
}

template <class K>
__device__ __forceinline__ void splitter_bounds(const K* __restrict__ sorted, u64 n,
                                                const u64* __restrict__ work, u32 count,
                                                u32 descending, u32 begin, u32 end,
                                                u64* __restrict__ bounds) {
    const u64 i = global_thread_index();
    if (i >= (u64)count) {
        return;
    }
    const u64 how = work[(u64)count + i];
    if (how < SEARCH_UPPER) {
        bounds[i] = how;
        return;
    }
    const bool upper = how == SEARCH_UPPER;
    const u64 target = work[i];
    const bool desc = descending != 0u;
    u64 lo = 0;
    u64 hi = n;
    while (lo < hi) {
        const u64 mid = lo + (hi - lo) / 2ull;
        const u64 value = sample_sort_value<K>(sorted[mid], desc, begin, end);
        if (value < target || (upper && value == target)) {
            lo = mid + 1ull;
        } else {
            hi = mid;
        }
    }
    bounds[i] = lo;
}
