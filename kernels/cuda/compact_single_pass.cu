// compact_single_pass.cu — stream compaction in one kernel: select by flag
// bytes, select by predicate, and the scatter half of a stable partition.
//
// What it computes
//   select:    out[0 .. count) = the items in[i] whose flag byte is non-zero
//              (or whose predicate holds), in input order; *count_out = count.
//   partition: out[0 .. total) = the kept items in order, then
//              out[total .. n) = the rejected items, ALSO in input order
//              (CUB's DevicePartition writes them reversed). `total` is read
//              from device memory, written before by compact_count.cu.
//
// How (one tile of BLOCK·ITEMS items per block)
//   1. thread 0 takes the next tile index from an atomic counter (stored
//      after the tile statuses), so tiles start in launch order and the
//      look-back below always finds running predecessors;
//   2. each thread loads its ITEMS consecutive items (16-byte vectors) and
//      flags (one 16-byte vector), or evaluates the predicate, into a u32
//      keep mask in registers, and counts it with popc;
//   3. a block scan of those counts gives each thread its rank in the tile;
//   4. thread 0 publishes the tile's count at once; then warp 0 obtains the
//      tile's global offset by decoupled look-back over the per-tile counts
//      (compact.cuh) while the other warps wait;
//      meanwhile every thread writes its kept items, compacted, to a shared
//      staging array (partition: the rejected ones after them);
//   5. the block copies the staged run to global memory with consecutive
//      threads writing consecutive addresses (coalesced).
//
// Cost (n items of s bytes, k kept)
//   work O(n), steps O(ITEMS + log BLOCK) per tile plus the look-back (O(1)
//   amortised windows of 32 tiles);
//   global bytes: select by flags  n·s + n + k·s; by predicate n·s + k·s;
//   partition scatter n·s + n·s; plus 8 bytes of status per tile.
//   launches: 1 (after a memset of the tile statuses);
//   shared memory per block: BLOCK·ITEMS·s bytes of staging + BLOCK/32·4 +
//   16 bytes (static); staging stores have bank conflicts of a few ways when
//   neighbouring threads' ranks land on the same bank, loads from staging
//   are conflict-free (consecutive words).
//   Not in place (output must not overlap input). Deterministic: the result
//   is fully defined by the input, whatever the tile order.

template <typename T, int BLOCK, int ITEMS, bool FLAGS, bool PARTITION, typename Pred>
__device__ __forceinline__ void compact_single_pass(const T* __restrict__ in,
                                                    const u8* __restrict__ flags, Pred pred,
                                                    T* __restrict__ out, u64 n, u64* tile_status,
                                                    u64 num_tiles, u64* count_out,
                                                    const u64* partition_total) {
    constexpr u32 TILE = (u32)BLOCK * (u32)ITEMS;
    __shared__ u64 s_tile;
    __shared__ u64 s_prefix;
    __shared__ u32 s_warp_totals[BLOCK / 32];
    __shared__ __align__(16) T s_stage[TILE];

    if (threadIdx.x == 0) {
        // The counter lives just after the statuses (zeroed with them).
        s_tile = atomicAdd((unsigned long long*)(tile_status + num_tiles), 1ull);
    }
    __syncthreads();
    const u64 tile = s_tile;
    // Surplus blocks of a grid spilled into y draw numbers past the end.
    if (tile >= num_tiles) return;

    const u64 tile_start = tile * (u64)TILE;
    const u64 left = n - tile_start;
    const u32 tile_valid = left < (u64)TILE ? (u32)left : TILE;
    const u32 first = threadIdx.x * (u32)ITEMS;
    const u32 valid = compact_thread_valid<ITEMS>(first, tile_valid);
    const u64 base = tile_start + first;

    T items[ITEMS];
    compact_load_items<T, ITEMS>(in, base, valid, compact_aligned16(in), items);
    u32 mask;
    if (FLAGS) {
        mask = compact_flag_mask<ITEMS>(flags, base, valid, compact_aligned16(flags));
    } else {
        mask = compact_pred_mask<T, ITEMS>(pred, items, valid);
    }

    u32 tile_kept;
    const u32 rank = compact_block_exclusive_scan<BLOCK>((u32)__popc(mask), s_warp_totals, &tile_kept);
    // Successors may already be looking back at this tile: publish first.
    if (threadIdx.x == 0) compact_publish_aggregate(tile_status, tile, (u64)tile_kept);

    // Stage this thread's items: kept ones at their rank; for a partition the
    // rejected ones after all kept ones of the tile, at their rejected rank
    // (items before this thread minus kept items before this thread).
    u32 kept_slot = rank;
    u32 rejected_slot = tile_kept + (first < tile_valid ? first : tile_valid) - rank;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        if ((u32)j < valid) {
            if ((mask >> j) & 1u) {
                s_stage[kept_slot++] = items[j];
            } else if (PARTITION) {
                s_stage[rejected_slot++] = items[j];
            }
        }
    }

    if (threadIdx.x < 32) {
        const u64 prefix = compact_lookback(tile_status, tile, (u64)tile_kept);
        if (threadIdx.x == 0) s_prefix = prefix;
    }
    __syncthreads();
    const u64 prefix = s_prefix;

    if (!PARTITION) {
        for (u32 k = threadIdx.x; k < tile_kept; k += BLOCK) out[prefix + k] = s_stage[k];
        if (tile == num_tiles - 1 && threadIdx.x == 0) *count_out = prefix + (u64)tile_kept;
    } else {
        const u64 total = *partition_total;
        // Rejected items before this tile: tile_start - prefix.
        const u64 rejected_base = total + (tile_start - prefix) - (u64)tile_kept;
        for (u32 k = threadIdx.x; k < tile_valid; k += BLOCK) {
            const u64 dest = k < tile_kept ? prefix + k : rejected_base + k;
            out[dest] = s_stage[k];
        }
    }
}
