// The device steps of the partition-first sample sort (needs sort/radix_key.cuh,
// sample_sort.cu for sample_sort_value and the SEARCH_* words, and PART_THREADS,
// PART_ITEMS and PART_MAX_BUCKETS from the host).
//
//   gather_samples     thread j < count: samples[j] = keys[positions[j]] (positions
//                      chosen and checked on the host).
//   partition_counts   block t: how many keys of tile t fall in each bucket,
//                      counts[b·tiles + t] (bucket-major, so that one exclusive
//                      scan of the counts gives every tile's first output slot
//                      for every bucket).
//   splitter_counts    every rank's count of keys before each splitter (the
//                      peer-scatter sort's cuts), one read of the keys.
//   bucket_starts      thread b < buckets − 1: starts[b] = offsets[(b + 1)·tiles],
//                      where bucket b + 1 begins in the partitioned shard.
//   partition_scatter  block t: the keys (and values) of tile t written to
//                      offsets[b·tiles + t] + their rank among the tile's keys
//                      of bucket b, through shared memory so that each bucket's
//                      part of the tile is stored contiguously. Stable: keys of
//                      one bucket keep their input order.
//
// The bucket of key x at position i of this rank is the number of splitters at or
// before (sort value of x, this rank, i) in the order of a stable sort. Splitter t
// is described by work[t] (its sort value) and work[count + t]: SEARCH_LOWER for
// a splitter from an earlier rank (it is before x when its value is <= x's),
// SEARCH_UPPER for one from a later rank (before x when its value is < x's; a
// missing splitter is value 2^64 − 1 with SEARCH_UPPER, never before anything),
// else the splitter's own position on this rank (before x when its value is < x's,
// or equal with a position <= i).
//
// A tile is PART_THREADS · PART_ITEMS keys; warp w ranks the 32 · PART_ITEMS
// consecutive keys from tile_first + w · 32 · PART_ITEMS in PART_ITEMS rounds of
// 32 (coalesced loads), keeping per-bucket counts in registers (lane b counts
// bucket b): a key's rank in its warp's part is the count before the round plus
// the lanes of the same bucket below it (a ballot per bit of the bucket
// number). One block scan over (bucket, warp) pairs
// then places every warp's keys of every bucket in the tile. Global bytes: the
// counts pass reads the keys once, the scatter pass reads keys and values once
// and writes them once, plus 8·buckets bytes per tile of counts and offsets.

#define PART_WARPS (PART_THREADS / 32u)
#define PART_TILE (PART_THREADS * PART_ITEMS)
#define PART_WARP_SPAN (32u * PART_ITEMS)
#define PART_NO_BUCKET 0xffu

template <class K>
__device__ __forceinline__ void gather_samples(const K* __restrict__ keys,
                                               const u64* __restrict__ positions, u32 count,
                                               K* __restrict__ samples) {
    const u64 j = global_thread_index();
    if (j < (u64)count) {
        samples[j] = keys[positions[j]];
    }
}

// Splitters of one rank's partition, staged in shared memory as thresholds:
// splitter t comes before the key of value v at position i of this rank when
// (v, i) >= (value[t], position[t]) in lexicographic order. From the work
// words: an earlier rank's splitter (SEARCH_LOWER) is (target, 0); a later
// rank's (SEARCH_UPPER) is (target + 1, 0), or (2^64 − 1, 2^64 − 1), before
// nothing, when target is 2^64 − 1 (a missing splitter); this rank's is
// (target, its position).
struct PartitionSplitters {
    u64 value[PART_MAX_BUCKETS];
    u64 position[PART_MAX_BUCKETS];
};

__device__ __forceinline__ void load_splitters(PartitionSplitters& s, const u64* __restrict__ work,
                                               u32 count) {
    for (u32 t = threadIdx.x; t < count; t += PART_THREADS) {
        const u64 target = work[t];
        const u64 how = work[count + t];
        if (how == SEARCH_LOWER) {
            s.value[t] = target;
            s.position[t] = 0ull;
        } else if (how == SEARCH_UPPER) {
            const bool never = target == ~0ull;
            s.value[t] = never ? ~0ull : target + 1ull;
            s.position[t] = never ? ~0ull : 0ull;
        } else {
            s.value[t] = target;
            s.position[t] = how;
        }
    }
}

// The thresholds are non-decreasing in (value, position) order (the splitters are
// sorted in tuple order, and an earlier rank's, this rank's and a later rank's
// thresholds of one value follow each other in that order), so the bucket is
// found by a binary search over them, ⌈log2(count + 1)⌉ steps; a probe at or past
// `count` stands for a threshold after every key and is not read.
template <class K>
__device__ __forceinline__ u32 bucket_of(K key, u64 index, const PartitionSplitters& s, u32 count,
                                         bool desc, u32 begin, u32 end) {
    const u64 v = sample_sort_value<K>(key, desc, begin, end);
    u32 bucket = 0;
    // The smallest power of two above count: count + 1 buckets, searched in halves.
    for (u32 step = count == 0u ? 0u : 1u << (31u - __clz(count)); step != 0u; step >>= 1) {
        const u32 probe = bucket + step - 1u;
        if (probe < count) {
            const u64 value = s.value[probe];
            bucket += (v > value || (v == value && index >= s.position[probe])) ? step : 0u;
        }
    }
    return bucket;
}

// Ranks this warp's keys of the tile starting at tile_first: keys[k] (loaded),
// bucket[k] (PART_NO_BUCKET past n) and rank[k], the key's position among the
// warp's keys of its bucket. Returns, in lane b < buckets, the warp's count of
// bucket b. Everything stays in registers: per round of 32 keys, one ballot
// per bit of the bucket number (bucket_bits of them) and one for the lanes
// holding a key give each lane the lanes of its own bucket (its rank among
// them) and lane b the lanes of bucket b (the round's count of bucket b,
// added to its running total); the running total of a key's bucket comes
// from lane b by one shuffle.
template <class K>
__device__ __forceinline__ u32 rank_warp_part(const K* __restrict__ keys, u64 n, u64 tile_first,
                                              const PartitionSplitters& s, u32 count, bool desc,
                                              u32 begin, u32 end, K (&items)[PART_ITEMS],
                                              u32 (&bucket)[PART_ITEMS], u32 (&rank)[PART_ITEMS]) {
    const u32 lane = threadIdx.x & 31u;
    const u32 below = (1u << lane) - 1u;
    const u64 warp_first = tile_first + (u64)(threadIdx.x >> 5) * PART_WARP_SPAN;
    const u32 bucket_bits = 32u - __clz(count);  // buckets 0..count need this many bits
    // Every load first, so that PART_ITEMS of them are in flight at once.
#pragma unroll
    for (u32 k = 0; k < PART_ITEMS; ++k) {
        const u64 i = warp_first + (u64)k * 32u + lane;
        if (i < n) {
            items[k] = keys[i];
        }
    }
    u32 running = 0;  // lane b: keys of bucket b in the rounds so far
#pragma unroll
    for (u32 k = 0; k < PART_ITEMS; ++k) {
        const u64 i = warp_first + (u64)k * 32u + lane;
        const bool real = i < n;
        const u32 b = real ? bucket_of<K>(items[k], i, s, count, desc, begin, end) : 0u;
        const u32 with_key = __ballot_sync(0xffffffffu, real);
        u32 mine = with_key;     // the lanes whose key is in my key's bucket
        u32 lane_b = with_key;   // the lanes whose key is in bucket `lane`
        for (u32 bit = 0; bit < bucket_bits; ++bit) {
            const u32 lanes = __ballot_sync(0xffffffffu, ((b >> bit) & 1u) != 0u);
            mine &= ((b >> bit) & 1u) != 0u ? lanes : ~lanes;
            lane_b &= ((lane >> bit) & 1u) != 0u ? lanes : ~lanes;
        }
        const u32 before = __shfl_sync(0xffffffffu, running, b);
        bucket[k] = real ? b : PART_NO_BUCKET;
        rank[k] = before + __popc(mine & below);
        running += lane <= count ? __popc(lane_b) : 0u;
    }
    return running;
}

template <class K>
__device__ __forceinline__ void partition_counts(const K* __restrict__ keys, u64 n,
                                                 const u64* __restrict__ work, u32 splitters,
                                                 u32 descending, u32 begin, u32 end,
                                                 u64* __restrict__ counts, u64 tiles) {
    __shared__ PartitionSplitters s;
    __shared__ u32 hist[PART_WARPS][PART_MAX_BUCKETS];
    const u64 tile = linear_block_index();
    const u32 buckets = splitters + 1u;
    load_splitters(s, work, splitters);
    for (u32 j = threadIdx.x; j < PART_WARPS * PART_MAX_BUCKETS; j += PART_THREADS) {
        (&hist[0][0])[j] = 0u;
    }
    __syncthreads();
    K items[PART_ITEMS];
    u32 bucket[PART_ITEMS];
    u32 rank[PART_ITEMS];
    const u32 warp_count = rank_warp_part<K>(keys, n, tile * (u64)PART_TILE, s, splitters,
                                             descending != 0u, begin, end, items, bucket, rank);
    if ((threadIdx.x & 31u) < buckets) {
        hist[threadIdx.x >> 5][threadIdx.x & 31u] = warp_count;
    }
    __syncthreads();
    for (u32 b = threadIdx.x; b < buckets; b += PART_THREADS) {
        u32 total = 0;
#pragma unroll
        for (u32 w = 0; w < PART_WARPS; ++w) {
            total += hist[w][b];
        }
        counts[(u64)b * tiles + tile] = (u64)total;
    }
}

// splitter_counts: below[t] += the keys of this rank before splitter t, for
// t < splitters ≤ SPLIT_MAX_SPLITTERS (zeroed by the host): the position of
// splitter t in this rank's sorted shard, i.e. where bucket t + 1 starts
// there. Grid-stride over the keys (one read of them), a count per
// splitter in registers, summed by warp shuffles and added by each warp's
// lane 0 (u64 atomics).
#define SPLIT_MAX_SPLITTERS 7
template <class K>
__device__ __forceinline__ void splitter_counts(const K* __restrict__ keys, u64 n,
                                                const u64* __restrict__ work, u32 splitters,
                                                u32 descending, u32 begin, u32 end,
                                                u64* __restrict__ below) {
    __shared__ PartitionSplitters s;
    load_splitters(s, work, splitters);
    __syncthreads();
    u32 count[SPLIT_MAX_SPLITTERS];
#pragma unroll
    for (u32 t = 0; t < SPLIT_MAX_SPLITTERS; ++t) count[t] = 0u;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const bool desc = descending != 0u;
#pragma unroll 4
    for (u64 i = global_thread_index(); i < n; i += stride) {
        const u32 bucket = bucket_of<K>(keys[i], i, s, splitters, desc, begin, end);
#pragma unroll
        for (u32 t = 0; t < SPLIT_MAX_SPLITTERS; ++t) count[t] += bucket <= t ? 1u : 0u;
    }
#pragma unroll
    for (u32 t = 0; t < SPLIT_MAX_SPLITTERS; ++t) {
        if (t < splitters) {
            u32 sum = count[t];
#pragma unroll
            for (u32 offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
            if ((threadIdx.x & 31u) == 0u && sum != 0u) atomicAdd((unsigned long long*)&below[t], (unsigned long long)sum);
        }
    }
}

__device__ __forceinline__ void bucket_starts(const u64* __restrict__ offsets, u64 tiles,
                                              u32 splitters, u64* __restrict__ starts) {
    const u64 b = global_thread_index();
    if (b < (u64)splitters) {
        starts[b] = offsets[(b + 1ull) * tiles];
    }
}

template <class K, class V>
__device__ __forceinline__ void partition_scatter(const K* __restrict__ keys,
                                                  const V* __restrict__ values, u64 n,
                                                  const u64* __restrict__ work, u32 splitters,
                                                  u32 descending, u32 begin, u32 end,
                                                  const u64* __restrict__ offsets, u64 tiles,
                                                  K* __restrict__ out_keys,
                                                  V* __restrict__ out_values) {
    static_assert(PART_WARPS * PART_MAX_BUCKETS == PART_THREADS,
                  "one (bucket, warp) pair per thread in the placement scan");
    __shared__ PartitionSplitters s;
    __shared__ u32 hist[PART_WARPS][PART_MAX_BUCKETS];
    __shared__ u32 warp_totals[PART_WARPS];
    __shared__ u64 global_start[PART_MAX_BUCKETS];
    __shared__ K stage_keys[PART_TILE];
    __shared__ V stage_values[PART_TILE];
    __shared__ unsigned char stage_bucket[PART_TILE];
    const u64 tile = linear_block_index();
    const u64 tile_first = tile * (u64)PART_TILE;
    const u32 tile_count = (u32)(n - tile_first < (u64)PART_TILE ? n - tile_first : (u64)PART_TILE);
    const u32 buckets = splitters + 1u;
    const bool with_values = out_values != nullptr;
    const u32 lane = threadIdx.x & 31u;
    const u32 warp = threadIdx.x >> 5;
    load_splitters(s, work, splitters);
    for (u32 j = threadIdx.x; j < PART_WARPS * PART_MAX_BUCKETS; j += PART_THREADS) {
        (&hist[0][0])[j] = 0u;
    }
    for (u32 b = threadIdx.x; b < buckets; b += PART_THREADS) {
        global_start[b] = offsets[(u64)b * tiles + tile];
    }
    __syncthreads();
    K items[PART_ITEMS];
    u32 bucket[PART_ITEMS];
    u32 rank[PART_ITEMS];
    // The values' loads go out before the ranking, in the keys' order.
    const u64 warp_first = tile_first + (u64)warp * PART_WARP_SPAN;
    V carried[PART_ITEMS];
    if (with_values) {
#pragma unroll
        for (u32 k = 0; k < PART_ITEMS; ++k) {
            const u64 i = warp_first + (u64)k * 32u + lane;
            if (i < n) {
                carried[k] = values[i];
            }
        }
    }
    const u32 warp_count = rank_warp_part<K>(keys, n, tile_first, s, splitters, descending != 0u,
                                             begin, end, items, bucket, rank);
    if (lane < buckets) {
        hist[warp][lane] = warp_count;
    }
    __syncthreads();

    // Exclusive scan over the (bucket, warp) pairs in bucket-major order: pair
    // j = b·PART_WARPS + w starts warp w's keys of bucket b in the tile.
    const u32 pair_bucket = threadIdx.x / PART_WARPS;
    const u32 pair_warp = threadIdx.x % PART_WARPS;
    const u32 mine = hist[pair_warp][pair_bucket];
    u32 inclusive = mine;
#pragma unroll
    for (u32 d = 1; d < 32u; d <<= 1) {
        const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) {
            inclusive += up;
        }
    }
    if (lane == 31u) {
        warp_totals[warp] = inclusive;
    }
    __syncthreads();
    u32 before = 0;
    for (u32 w = 0; w < warp; ++w) {
        before += warp_totals[w];
    }
    const u32 pair_start = before + inclusive - mine;
    __syncthreads();  // every read of hist is done
    hist[pair_warp][pair_bucket] = pair_start;
    if (pair_warp == 0u && pair_bucket < buckets) {
        // Staging slot j of bucket b goes to global_start[b] + j - (b's first slot).
        global_start[pair_bucket] -= (u64)pair_start;
    }
    __syncthreads();

    // Stage the tile bucket by bucket.
#pragma unroll
    for (u32 k = 0; k < PART_ITEMS; ++k) {
        if (bucket[k] != PART_NO_BUCKET) {
            const u32 slot = hist[warp][bucket[k]] + rank[k];
            stage_keys[slot] = items[k];
            stage_bucket[slot] = (unsigned char)bucket[k];
            if (with_values) {
                stage_values[slot] = carried[k];
            }
        }
    }
    __syncthreads();
    for (u32 j = threadIdx.x; j < tile_count; j += PART_THREADS) {
        const u64 at = global_start[stage_bucket[j]] + (u64)j;
        out_keys[at] = stage_keys[j];
        if (with_values) {
            out_values[at] = stage_values[j];
        }
    }
}
