// compact/count.cu — how many items a compaction keeps: count_if, the count
// pass of a stable partition, and the size of an exact-length result.
//
// What it computes
//   *count_out += the number of i < n with flags[i] != 0 (FLAGS) or pred(in[i]).
//   The caller zeroes *count_out first (a fill, stream-ordered).
//
// How
//   A persistent grid (about as many blocks as fit on the device at once)
//   walks the tiles with a grid stride; each thread builds the same u32 keep
//   mask as the single-pass kernel (16-byte vector loads) and accumulates
//   popc in a u64 register; one block reduction and ONE atomicAdd per block,
//   so the atomics on a single address stay in the hundreds, not one per tile.
//
// Cost (n items of s bytes)
//   work O(n), steps O(n / (grid·BLOCK) + log BLOCK);
//   global bytes: n (flags) or n·s (predicate) read, 8 written per block;
//   launches: 1 (after a fill of the counter);
//   shared memory per block: BLOCK/32·8 bytes (static), no bank conflicts.
//   Deterministic (integer sum).

template <typename T, int BLOCK, int ITEMS, bool FLAGS, typename Pred>
__device__ __forceinline__ void compact_count(const T* __restrict__ in, const u8* __restrict__ flags,
                                              Pred pred, u64 n, u64 num_tiles, u64* count_out) {
    constexpr u32 TILE = (u32)BLOCK * (u32)ITEMS;
    __shared__ u64 s_scratch[BLOCK / 32];
    const bool in_vector_ok = compact_aligned16(in);
    const bool flags_vector_ok = compact_aligned16(flags);
    u64 kept = 0;
    // The grid is 1-D and at most a few thousand blocks (sized on the host).
    for (u64 tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const u64 tile_start = tile * (u64)TILE;
        const u64 left = n - tile_start;
        const u32 tile_valid = left < (u64)TILE ? (u32)left : TILE;
        const u32 first = threadIdx.x * (u32)ITEMS;
        const u32 valid = compact_thread_valid<ITEMS>(first, tile_valid);
        const u64 base = tile_start + first;
        u32 mask;
        if (FLAGS) {
            mask = compact_flag_mask<ITEMS>(flags, base, valid, flags_vector_ok);
        } else {
            T items[ITEMS];
            compact_load_items<T, ITEMS>(in, base, valid, in_vector_ok, items);
            mask = compact_pred_mask<T, ITEMS>(pred, items, valid);
        }
        kept += (u64)__popc(mask);
    }
    const u64 block_kept = block_reduce_commutative<u64, sum_op<u64>, BLOCK>(kept, s_scratch);
    if (threadIdx.x == 0 && block_kept != 0ull) {
        atomicAdd((unsigned long long*)count_out, (unsigned long long)block_kept);
    }
}
