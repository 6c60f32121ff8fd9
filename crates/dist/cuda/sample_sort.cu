// The device steps of the distributed sample sort besides the local sorts
// (needs sort/radix_key.cuh, and MERGE_THREADS, MERGE_ITEMS from the host).
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
//   merge_splits     thread t <= tiles: splits[t], how many of the outputs before tile t of
//                    merge_runs come from run A (a search on the merge path).
//   merge_runs       the stable merge of two sorted runs (below), for the
//                    merge rounds of both sample sorts.

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
// values carried along when out_values is not null. Launched with
// MERGE_THREADS threads per block, block t writing the tile of outputs
// [t·TILE, (t+1)·TILE), TILE = MERGE_THREADS·MERGE_ITEMS:
//   1. splits[t] and splits[t + 1], found beforehand by merge_splits (one
//      thread per tile boundary, all binary searches on the merge path in
//      global memory at once), say how many of the outputs before the tile's
//      first and after its last come from A: the tile merges A[a0..a1) with
//      B[b0..b1) (its a1 - a0 + b1 - b0 outputs);
//   2. the block loads both pieces into shared memory, coalesced;
//   3. each thread finds its own start on the merge path of the two pieces
//      (in shared memory) and merges MERGE_ITEMS outputs into registers;
//   4. the block writes them back through shared memory, coalesced.
// Global bytes: the a + b keys (and values) read once and written once,
// plus one search of about log2(a) reads per tile boundary.

// How many of the first `d` outputs of the merge come from A: the first i
// at which A[i] no longer precedes B[d - 1 - i] (A[i] precedes B[j] when its
// value is not greater). lo >= d - b keeps d - 1 - mid < b, hi <= d keeps it
// >= 0, hi <= a keeps mid < a.
template <class K, class I>
__device__ __forceinline__ I merge_path_split(const K* a_keys, I a, const K* b_keys, I b, I d,
                                              bool desc, u32 begin, u32 end) {
    I lo = d > b ? d - b : (I)0;
    I hi = d < a ? d : a;
    while (lo < hi) {
        const I mid = lo + (hi - lo) / (I)2;
        const u64 va = sample_sort_value<K>(a_keys[mid], desc, begin, end);
        const u64 vb = sample_sort_value<K>(b_keys[d - (I)1 - mid], desc, begin, end);
        if (va <= vb) {
            lo = mid + (I)1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

template <class K>
__device__ __forceinline__ void merge_splits(const K* __restrict__ a_keys, u64 a,
                                             const K* __restrict__ b_keys, u64 b, u64 tiles,
                                             u32 descending, u32 begin, u32 end,
                                             u64* __restrict__ splits) {
    constexpr u64 TILE = (u64)MERGE_THREADS * (u64)MERGE_ITEMS;
    const u64 t = global_thread_index();
    if (t > tiles) {
        return;
    }
    const u64 total = a + b;
    const u64 d = t * TILE < total ? t * TILE : total;
    splits[t] = merge_path_split<K, u64>(a_keys, a, b_keys, b, d, descending != 0u, begin, end);
}

template <class K, class V>
__device__ __forceinline__ void merge_runs(const K* __restrict__ a_keys,
                                           const V* __restrict__ a_values, u64 a,
                                           const K* __restrict__ b_keys,
                                           const V* __restrict__ b_values, u64 b,
                                           const u64* __restrict__ splits,
                                           K* __restrict__ out_keys, V* __restrict__ out_values,
                                           u32 descending, u32 begin, u32 end) {
    constexpr u32 TILE = MERGE_THREADS * MERGE_ITEMS;
    __shared__ K tile_keys[TILE];
    __shared__ V tile_values[TILE];
    const u64 total = a + b;
    const u64 tile = linear_block_index();
    const u64 tile_first = tile * (u64)TILE;
    if (tile_first >= total) {
        return;  // the whole block, before any barrier
    }
    const u64 tile_end = tile_first + (u64)TILE < total ? tile_first + (u64)TILE : total;
    const bool desc = descending != 0u;
    const bool with_values = out_values != nullptr;

    // (1) the tile's pieces of A and B.
    const u64 a0 = splits[tile];
    const u64 b0 = tile_first - a0;
    const u32 na = (u32)(splits[tile + 1ull] - a0);
    const u32 count = (u32)(tile_end - tile_first);
    const u32 nb = count - na;

    // (2) A's piece at [0, na), B's at [na, count) of the shared tile: every
    // load of a thread in flight at once, then the stores to shared memory.
    {
        K loaded[MERGE_ITEMS];
        V carried[MERGE_ITEMS];
#pragma unroll
        for (u32 k = 0; k < MERGE_ITEMS; ++k) {
            const u32 t = threadIdx.x + k * MERGE_THREADS;
            if (t < count) {
                const bool from_a = t < na;
                loaded[k] = from_a ? a_keys[a0 + t] : b_keys[b0 + (t - na)];
                if (with_values) {
                    carried[k] = from_a ? a_values[a0 + t] : b_values[b0 + (t - na)];
                }
            }
        }
#pragma unroll
        for (u32 k = 0; k < MERGE_ITEMS; ++k) {
            const u32 t = threadIdx.x + k * MERGE_THREADS;
            if (t < count) {
                tile_keys[t] = loaded[k];
                if (with_values) {
                    tile_values[t] = carried[k];
                }
            }
        }
    }
    __syncthreads();

    // (3) this thread's outputs [d, d + MERGE_ITEMS) of the tile.
    K keys[MERGE_ITEMS];
    V values[MERGE_ITEMS];
    const u32 d = threadIdx.x * MERGE_ITEMS;
    if (d < count) {
        u32 i = merge_path_split<K, u32>(tile_keys, na, tile_keys + na, nb, d, desc, begin, end);
        u32 j = d - i;
        // The next key of each run and its sort value stay in registers: one
        // shared load per output.
        K next_a = tile_keys[i < na ? i : 0u];
        K next_b = tile_keys[j < nb ? na + j : 0u];
        u64 value_a = sample_sort_value<K>(next_a, desc, begin, end);
        u64 value_b = sample_sort_value<K>(next_b, desc, begin, end);
#pragma unroll
        for (u32 k = 0; k < MERGE_ITEMS; ++k) {
            if (d + k < count) {
                const bool take_a = j >= nb || (i < na && value_a <= value_b);
                if (take_a) {
                    keys[k] = next_a;
                    if (with_values) {
                        values[k] = tile_values[i];
                    }
                    ++i;
                    next_a = tile_keys[i < na ? i : 0u];
                    value_a = sample_sort_value<K>(next_a, desc, begin, end);
                } else {
                    keys[k] = next_b;
                    if (with_values) {
                        values[k] = tile_values[na + j];
                    }
                    ++j;
                    next_b = tile_keys[j < nb ? na + j : 0u];
                    value_b = sample_sort_value<K>(next_b, desc, begin, end);
                }
            }
        }
    }
    __syncthreads();  // every read of the tile is done

    // (4) back through shared memory, then coalesced stores.
    if (d < count) {
#pragma unroll
        for (u32 k = 0; k < MERGE_ITEMS; ++k) {
            if (d + k < count) {
                tile_keys[d + k] = keys[k];
                if (with_values) {
                    tile_values[d + k] = values[k];
                }
            }
        }
    }
    __syncthreads();
    for (u32 t = threadIdx.x; t < count; t += MERGE_THREADS) {
        out_keys[tile_first + t] = tile_keys[t];
        if (with_values) {
            out_values[tile_first + t] = tile_values[t];
        }
    }
}
