// compact/single_pass.cu — stream compaction in one kernel: select by flag
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
// How (tiles of TILE = BLOCK·ITEMS items, taken in order from a counter)
//   1. thread 0 takes the next tile index from the tile counter of the
//      single-pass state (single_pass/tile_status.cuh), so tiles start in the order they are taken
//      and the look-back below always waits on running blocks (or, with
//      IN_BLOCK_ORDER, the tile is the block's index);
//   2. each thread loads its ITEMS items (16-byte vectors, blocked or
//      warp-striped, see compact_layout in compact/compact.cuh) and their flags, or
//      evaluates the predicate, into a u32 keep mask in registers;
//   3. a block scan of the kept counts (block/block_scan.cuh) gives each
//      item its rank in the tile (barrier A);
//   4. thread 0 publishes the tile's count at once; every thread writes its
//      kept items, compacted, to a shared staging array (partition: the
//      rejected ones after them); then warp 0 obtains the tile's global
//      offset by decoupled look-back over the per-tile counts (u64 values in
//      the single-pass tile state, STATUS8 = 1: one 128-bit {count, status}
//      word per tile; single_pass/lookback.cuh, windows of 32·WIDTH tiles)
//      while the other warps wait (barrier B);
//   5. the block copies the staged run to global memory with consecutive
//      threads writing consecutive addresses (coalesced).
//   START_NS, SPIN_NS: the look-back's delays (single_pass/lookback.cuh),
//   large grids only.
//   PERSISTENT = false: one tile per block, a grid of one block per tile;
//   its tile drawn from the counter, or with IN_BLOCK_ORDER the block's
//   own index (single_pass/tile_status.cuh, lookback_block_tile).
//   PERSISTENT = true: a grid of about as many blocks as are resident at
//   once; each block loops over tiles and pipelines them: the index of the
//   tile after next is claimed one iteration ahead (its atomic's latency is
//   hidden), and the next tile's loads are issued right after this tile's
//   items are staged, so they are in flight during the look-back, the
//   barrier and the write-out. Still deadlock-free: a block claims tiles in
//   increasing order and finishes its current (smaller) tile without waiting
//   on any tile it has claimed, so the smallest unfinished tile always
//   progresses. But not fast: measured on the H100 it is 3–12× slower than
//   one tile per block (compact_tuning, 2^28 items), because a tile claimed
//   ahead publishes nothing until its block has finished the tile before it,
//   so successors' look-backs stall on it and the blocks convoy. Kept as a
//   measured candidate; the defaults use one tile per block.
//
// Cost (n items of s bytes, k kept)
//   work O(n), steps O(ITEMS + log BLOCK) per tile plus the look-back (O(1)
//   amortised windows of 32·WIDTH tiles);
//   global bytes: select by flags  n·s + n + k·s; by predicate n·s + k·s;
//   partition scatter n·s + n·s; plus 16 bytes of status per tile.
//   launches: 1 (the tile state is epoch-tagged: no memset between calls);
//   barriers per tile: 2 (3 for the first tile of a block drawn from the
//   counter);
//   shared memory per block: BLOCK·ITEMS·s bytes of staging + BLOCK/32·4 +
//   24 bytes (static); blocked staging stores have bank conflicts of a few
//   ways (neighbouring threads' ranks are ~ITEMS/2 apart), striped ones
//   hardly any (a vector's kept items go to consecutive words); loads from
//   staging are conflict-free (consecutive words).
//   Not in place (output must not overlap input). Deterministic: the result
//   is fully defined by the input, whatever the tile order.

template <typename T, int BLOCK, int ITEMS, bool STRIPED, int WIDTH, bool PERSISTENT, bool FLAGS,
          bool PARTITION, typename Pred, int START_NS = 0, int SPIN_NS = 0, int STATUS8 = 1,
          bool IN_BLOCK_ORDER = false>
__device__ __forceinline__ void compact_single_pass(const T* __restrict__ in,
                                                    const u8* __restrict__ flags, Pred pred,
                                                    T* __restrict__ out, u64 n, u64* state, u32 epoch,
                                                    u64 num_tiles, u64* count_out,
                                                    const u64* partition_total) {
    typedef sum_op<u64> Count;
    typedef typename TileStatusFor<u64, STATUS8>::type Status;
    typedef compact_layout<T, ITEMS, STRIPED> L;
    typedef compact_ranks<T, BLOCK, ITEMS, STRIPED> R;
    constexpr u32 TILE = (u32)BLOCK * (u32)ITEMS;
    __shared__ u64 s_first_tile;
    __shared__ u64 s_tile;
    __shared__ u64 s_prefix;
    __shared__ u32 s_warp_totals[BLOCK / 32];
    __shared__ __align__(16) T s_stage[TILE];
    // The single-pass state: the tile counters, then the tile statuses,
    // tagged with this call's epoch (single_pass/tile_status.cuh).
    Status status(lookback_status_region(state), num_tiles, epoch);

    lookback_prepare_next_call(state, epoch);
    u64 claimed = 0;  // thread 0: the tile after next (PERSISTENT)
    u64 tile;
    if constexpr (PERSISTENT) {
        if (threadIdx.x == 0) {
            s_first_tile = lookback_next_tile(state, epoch);
            claimed = lookback_next_tile(state, epoch);
        }
        __syncthreads();
        // (Its own variable: thread 0 rewrites s_tile before barrier A,
        // possibly before a slower warp has read the first index.)
        tile = s_first_tile;
    } else {
        tile = lookback_block_tile<IN_BLOCK_ORDER>(state, epoch, &s_first_tile);
    }
    // Surplus blocks (a grid spilled into y, or more blocks than tiles) draw
    // numbers past the end.
    if (tile >= num_tiles) return;

    const bool in_vector_ok = compact_aligned16(in);
    const bool flags_vector_ok = FLAGS && compact_aligned16(flags);
    const u64 total = PARTITION ? *partition_total : 0ull;
    const u32 lane = threadIdx.x & 31u;

    T items[ITEMS];
    u32 flag_raw[L::FLAG_WORDS];
    {
        const u64 left = n - tile * (u64)TILE;
        compact_load_tile<T, ITEMS, STRIPED, FLAGS>(in, flags, tile * (u64)TILE,
                                                    left < (u64)TILE ? (u32)left : TILE, in_vector_ok,
                                                    flags_vector_ok, items, flag_raw);
    }

    while (true) {
        const u64 tile_start = tile * (u64)TILE;
        const u64 left = n - tile_start;
        const u32 tile_valid = left < (u64)TILE ? (u32)left : TILE;

        u32 mask;
        if (FLAGS) {
            mask = compact_mask_from_raw<L::FLAG_WORDS, L::FLAG_BYTES>(flag_raw);
        } else {
            mask = compact_pred_mask<T, ITEMS>(pred, items, (u32)ITEMS);
            if (!L::whole(tile_valid)) mask &= L::valid_mask(tile_valid);
        }

        // Hand the next tile's index (claimed an iteration ago) to the block
        // at barrier A, and claim the one after it.
        if (PERSISTENT && threadIdx.x == 0) {
            s_tile = claimed;
            claimed = lookback_next_tile(state, epoch);
        }
        u32 start[R::GROUPS];
        u32 tile_kept;
        R::rank(mask, s_warp_totals, start, &tile_kept);  // barrier A
        // Successors may already be looking back at this tile: publish first.
        if (threadIdx.x == 0) single_pass_publish_aggregate<u64, Status>(status, tile, (u64)tile_kept);

        // Stage this thread's items: kept ones at their rank; for a partition
        // the rejected ones after all kept ones of the tile, at their
        // rejected rank (items before minus kept items before).
#pragma unroll
        for (int g = 0; g < R::GROUPS; ++g) {
            u32 kept_before = start[g];
#pragma unroll
            for (int e = 0; e < R::GROUP_ITEMS; ++e) {
                const int j = g * R::GROUP_ITEMS + e;
                const u32 p = L::position(j);
                if (p < tile_valid) {
                    if ((mask >> j) & 1u) {
                        s_stage[kept_before++] = items[j];
                    } else if (PARTITION) {
                        s_stage[tile_kept + p - kept_before] = items[j];
                    }
                }
            }
        }

        // Prefetch: the next tile's loads go out now (the registers are free)
        // and land while this tile looks back and is written out.
        const u64 next = PERSISTENT ? s_tile : num_tiles;
        if (PERSISTENT && next < num_tiles) {
            const u64 next_start = next * (u64)TILE;
            const u64 next_left = n - next_start;
            compact_load_tile<T, ITEMS, STRIPED, FLAGS>(
                in, flags, next_start, next_left < (u64)TILE ? (u32)next_left : TILE, in_vector_ok,
                flags_vector_ok, items, flag_raw);
        }

        if (threadIdx.x < 32) {
            const u64 prefix = single_pass_prefix<u64, Count, Status, WIDTH, SPIN_NS, START_NS>(
                status, tile, (u64)tile_kept, num_tiles >= LOOKBACK_DELAY_MIN_TILES);
            if (lane == 0) s_prefix = prefix;
        }
        __syncthreads();  // barrier B
        const u64 prefix = s_prefix;

        if (!PARTITION) {
            for (u32 k = threadIdx.x; k < tile_kept; k += BLOCK) out[prefix + k] = s_stage[k];
            if (tile == num_tiles - 1 && threadIdx.x == 0) *count_out = prefix + (u64)tile_kept;
        } else {
            // Rejected items before this tile: tile_start - prefix.
            const u64 rejected_base = total + (tile_start - prefix) - (u64)tile_kept;
            for (u32 k = threadIdx.x; k < tile_valid; k += BLOCK) {
                const u64 dest = k < tile_kept ? prefix + k : rejected_base + k;
                out[dest] = s_stage[k];
            }
        }
        if (next >= num_tiles) return;
        // No barrier needed here. s_stage and s_prefix are next written
        // after barrier A of the next iteration, which no thread passes
        // before every thread has finished the reads above; s_tile and
        // s_warp_totals are next written before that barrier A, but after
        // barrier B of this iteration, and every read of them in this
        // iteration happens before barrier B.
        tile = next;
    }
}
