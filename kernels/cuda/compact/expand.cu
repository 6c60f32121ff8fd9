// compact/expand.cu — allocation by scan: element i asks for counts[i]
// outputs and receives them at offsets[i] = counts[0] + … + counts[i−1]
// (crate `compact`, expand.rs).
//
//   expand_widen   offsets[i] = counts[i] as u64 (the exclusive scan of the
//                  scan crate then runs over offsets in place);
//   expand_total   *total = offsets[n−1] + counts[n−1] (0 for n = 0);
//   expand_tile    out[j] = values[i] for the i with
//                  offsets[i] <= j < offsets[i+1], for j < min(*total, out_len).
//
// expand_tile is balanced by outputs, not by elements: block b writes the
// TILE = BLOCK·ITEMS outputs [b·TILE, (b+1)·TILE). expand_partition first
// finds, one thread per tile boundary and all at once, owners[b] = the
// element owning output min(b·TILE, limit − 1) by binary search over the
// offsets (the last i with offsets[i] <= j: elements with a count of zero
// share their successor's offset and are skipped), so tile b's owners lie
// in [owners[b], owners[b+1]]. When those are at most TILE elements the
// block copies their offsets (and the end of the last) into shared memory;
// each thread then finds the owner of its first output by binary search
// there, walks on while outputs stay in the same element, and searches
// again (between the current element and the tile's last) when one ends,
// so a run of zero counts costs one search, not one step per element. A
// tile spanning more elements (long runs of zero counts) searches the
// offsets in global memory the same way. The outputs are staged blocked in
// shared memory and written striped (coalesced). One huge count or many
// zero counts cost what their outputs cost: O(total + tiles·log n) work,
// bytes n·s + … read (each element's value once per tile it touches),
// total·s written, + offsets read by the searches and the copies.

// The last index i in [lo, hi) with offsets[i] <= j, given offsets[lo] <= j.
__device__ __forceinline__ u64 expand_owner(const u64* offsets, u64 lo, u64 hi, u64 j) {
    u64 a = lo + 1ull;  // the first index in [lo + 1, hi) with offsets > j
    u64 b = hi;
    while (a < b) {
        const u64 mid = a + (b - a) / 2ull;
        if (offsets[mid] <= j) {
            a = mid + 1ull;
        } else {
            b = mid;
        }
    }
    return a - 1ull;
}

__device__ __forceinline__ void expand_widen(const u32* counts, u64* offsets, u64 n) {
    const u64 i = global_thread_index();
    if (i < n) offsets[i] = (u64)counts[i];
}

__device__ __forceinline__ void expand_total(const u32* counts, const u64* offsets, u64 n, u64* total) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)
        *total = n == 0 ? 0ull : offsets[n - 1] + (u64)counts[n - 1];
}

// The output limit: min(total, out_len).
__device__ __forceinline__ u64 expand_limit(const u64* total_in, u64 out_len) {
    const u64 total = *total_in;
    return total < out_len ? total : out_len;
}

// owners[b] for b in [0, tiles]: the element owning output
// min(b·TILE, limit − 1) (nothing written when limit is 0, when no tile has
// work). One thread per boundary.
template <int TILE>
__device__ __forceinline__ void expand_partition(const u64* __restrict__ offsets, u64 n, const u64* total_in,
                                                 u64 out_len, u64 tiles, u64* __restrict__ owners) {
    const u64 b = global_thread_index();
    const u64 limit = expand_limit(total_in, out_len);
    if (b > tiles || limit == 0) return;
    const u64 j = b * (u64)TILE < limit ? b * (u64)TILE : limit - 1ull;
    owners[b] = expand_owner(offsets, 0ull, n, j);
}

// The owner of output j within the tile's elements [lo, lo + count), whose
// offsets are s_offsets[0 … count − 1], given s_offsets[from] <= j.
__device__ __forceinline__ u32 expand_owner_shared(const u64* s_offsets, u32 from, u32 count, u64 j) {
    u32 a = from + 1u;
    u32 b = count;
    while (a < b) {
        const u32 mid = a + (b - a) / 2u;
        if (s_offsets[mid] <= j) {
            a = mid + 1u;
        } else {
            b = mid;
        }
    }
    return a - 1u;
}

template <typename T, int BLOCK, int ITEMS>
__device__ __forceinline__ void expand_tile(const T* __restrict__ values, const u64* __restrict__ offsets,
                                            u64 n, const u64* total_in, const u64* __restrict__ owners,
                                            T* __restrict__ out, u64 out_len) {
    constexpr u32 TILE = (u32)BLOCK * (u32)ITEMS;
    __shared__ T stage[TILE];
    __shared__ u64 s_offsets[TILE + 1];
    const u64 total = *total_in;
    const u64 limit = total < out_len ? total : out_len;
    const u64 b = linear_block_index();
    const u64 j0 = b * (u64)TILE;
    if (j0 >= limit) return;  // the same for every thread of the block
    const u32 valid = limit - j0 < (u64)TILE ? (u32)(limit - j0) : TILE;
    // Here n >= 1 (total > 0) and offsets[0] = 0 <= j0.
    const u64 lo = owners[b];
    const u64 hi_end = owners[b + 1] + 1ull;  // owners lie in [lo, hi_end), hi_end <= n
    const u32 first = threadIdx.x * (u32)ITEMS;
    if (hi_end - lo <= (u64)TILE) {
        // The tile's elements' offsets, and where the last one ends.
        const u32 count = (u32)(hi_end - lo);
        for (u32 e = threadIdx.x; e <= count; e += (u32)BLOCK)
            s_offsets[e] = lo + e < n ? offsets[lo + e] : total;
        __syncthreads();
        if (first < valid) {
            u32 i = expand_owner_shared(s_offsets, 0u, count, j0 + first);
            u64 next_start = s_offsets[i + 1u];
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const u32 p = first + (u32)k;
                if (p < valid) {
                    const u64 j = j0 + p;
                    if (j >= next_start) {  // offsets[i + 1] <= j: search on from i + 1
                        i = expand_owner_shared(s_offsets, i + 1u, count, j);
                        next_start = s_offsets[i + 1u];
                    }
                    stage[p] = values[lo + i];
                }
            }
        }
    } else if (first < valid) {
        u64 i = expand_owner(offsets, lo, hi_end, j0 + first);
        u64 next_start = i + 1ull < n ? offsets[i + 1] : total;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const u32 p = first + (u32)k;
            if (p < valid) {
                const u64 j = j0 + p;
                if (j >= next_start) {  // offsets[i + 1] <= j: search on from i + 1
                    i = expand_owner(offsets, i + 1ull, hi_end, j);
                    next_start = i + 1ull < n ? offsets[i + 1] : total;
                }
                stage[p] = values[i];
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const u32 e = (u32)k * (u32)BLOCK + threadIdx.x;
        if (e < valid) out[j0 + e] = stage[e];
    }
}
