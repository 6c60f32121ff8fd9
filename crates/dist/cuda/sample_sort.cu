// The device steps of the distributed sample sort besides the local sorts
// (needs sort/radix_key.cuh, and MERGE_ITEMS from the host).
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
//   merge_runs       the stable merge of two sorted runs (below), for the
//                    second step's merge rounds.

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

// merge_runs: out[0..a+b) = the stable merge of the sorted runs A[0..a) and
// B[0..b) by sort value, ties taking A (A's keys came from earlier ranks),
// values carried along when out_values is not null. Thread t writes outputs
// [t·MERGE_ITEMS, (t+1)·MERGE_ITEMS): it finds by binary search on the merge
// path how many of the outputs before its first come from A, then merges
// serially. Reads a + b keys (and values), writes as many.
// The search: i outputs before `first` come from A, first - i from B, where i
// is the first index at which A[i] no longer precedes B[first - 1 - i].
template <class K, class V>
__device__ __forceinline__ void merge_runs(const K* __restrict__ a_keys,
                                           const V* __restrict__ a_values, u64 a,
                                           const K* __restrict__ b_keys,
                                           const V* __restrict__ b_values, u64 b,
                                           K* __restrict__ out_keys, V* __restrict__ out_values,
                                           u32 descending, u32 begin, u32 end) {
    const u64 total = a + b;
    const u64 first = global_thread_index() * (u64)MERGE_ITEMS;
    if (first >= total) {
        return;
    }
    const bool desc = descending != 0u;
    // A[mid] precedes B[first - 1 - mid] when its value is not greater; the
    // predicate is true then false as mid grows. lo >= first - b keeps
    // first - 1 - mid < b, hi <= first keeps it >= 0, hi <= a keeps mid < a.
    u64 lo = first > b ? first - b : 0ull;
    u64 hi = first < a ? first : a;
    while (lo < hi) {
        const u64 mid = lo + (hi - lo) / 2ull;
        const u64 va = sample_sort_value<K>(a_keys[mid], desc, begin, end);
        const u64 vb = sample_sort_value<K>(b_keys[first - 1ull - mid], desc, begin, end);
        if (va <= vb) {
            lo = mid + 1ull;
        } else {
            hi = mid;
        }
    }
    u64 i = lo;
    u64 j = first - lo;
    const u64 last = first + (u64)MERGE_ITEMS < total ? first + (u64)MERGE_ITEMS : total;
    for (u64 o = first; o < last; ++o) {
        bool take_a;
        if (j >= b) {
            take_a = true;
        } else if (i >= a) {
            take_a = false;
        } else {
            take_a = sample_sort_value<K>(a_keys[i], desc, begin, end) <=
                     sample_sort_value<K>(b_keys[j], desc, begin, end);
        }
        if (take_a) {
            out_keys[o] = a_keys[i];
            if (out_values != nullptr) {
                out_values[o] = a_values[i];
            }
            ++i;
        } else {
            out_keys[o] = b_keys[j];
            if (out_values != nullptr) {
                out_values[o] = b_values[j];
            }
            ++j;
        }
    }
}
