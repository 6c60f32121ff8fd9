// reduce/segmented.cu — segmented reduce by offsets: out[s] = the in-order
// fold of values[offsets[s] .. offsets[s + 1]) under op_t, the identity for
// an empty segment. Balanced by the merge path over segments and values
// (block/merge_path.cuh), so one segment of n and n segments of one cost
// what their items cost. Three launches (four when the carries fill more
// than one chunk):
//   1. partition: one thread per tile boundary searches its diagonal;
//   2. tiles: each block stages its values (coalesced) and segment ends,
//      each thread folds its share, and every segment that ends in the tile
//      is stored with this tile's part;
//   3. fix-up: for each segment that earlier blocks carried into, out[s] =
//      (their carries, in block order) ⊕ out[s]. When the carries fill more
//      than one chunk (SEGMENTED_CHUNK_BLOCK · SEGMENTED_CHUNK_ITEMS), a
//      grid of chunks applies the runs inside each chunk and leaves two
//      summary carries per chunk, which one block then folds and applies
//      (fixup_chunk, fixup_carries); otherwise the one block takes the
//      carries themselves.
// Bytes: n·s read, segments·s written, sizeof(Off)·(segments + 1) read, plus
// 8 + s per tile of carries (written once, read once), 8 of coordinates,
// and 2·(8 + s) per chunk of summaries. Deterministic: the fold
// order depends only on the offsets and the tile size. The offsets are the
// caller's contract (non-decreasing, at most n); broken ones give
// meaningless values but no access outside the buffers.
#pragma once

template <typename T>
struct SegmentedLoad {
    const T* __restrict__ values;
    __device__ __forceinline__ T operator()(u64 i) const { return values[i]; }
};

template <typename T, typename Op>
struct SegmentedStore {
    T* out;
    __device__ __forceinline__ void complete(u64 segment, T value) { out[segment] = value; }
    __device__ __forceinline__ T fixup_load(u64 segment) const { return out[segment]; }
    __device__ __forceinline__ void fixup_store(u64 segment, T carry, T stored) {
        out[segment] = Op::combine(carry, stored);
    }
};

template <typename Off>
__device__ void segmented_reduce_partition(const Off* __restrict__ offsets, u64 segments, u64 n,
                                           u64* coordinates, u64 tiles) {
    merge_path_partition(offsets, segments, n, (u64)SEGMENTED_BLOCK * SEGMENTED_ITEMS, coordinates,
                         tiles);
}

template <typename T, typename Op, typename Off>
__device__ void segmented_reduce_tiles(const T* __restrict__ values, const Off* __restrict__ offsets,
                                       T* out, const u64* __restrict__ coordinates,
                                       u64* carry_keys, T* carry_values, u64 segments, u64 n,
                                       u64 tiles) {
    __shared__ MergePathTileStorage<T, Op, SEGMENTED_BLOCK, SEGMENTED_ITEMS> smem;
    const u64 tile = linear_block_index();
    if (tile >= tiles) return;
    u64 base, items;
    merge_path_items(offsets, segments, n, base, items);
    const SegmentedLoad<T> load{values};
    SegmentedStore<T, Op> store{out};
    merge_path_tile<T, Op, SEGMENTED_BLOCK, SEGMENTED_ITEMS>(smem, tile, coordinates, offsets,
                                                             segments, base, items, load, store,
                                                             carry_keys, carry_values);
}

template <typename T, typename Op>
__device__ void segmented_reduce_fixup_chunks(const u64* __restrict__ carry_keys,
                                              const T* __restrict__ carry_values, u64 tiles,
                                              T* out, u64 segments, u64* summary_keys,
                                              T* summary_values) {
    SegmentedStore<T, Op> store{out};
    fixup_chunk<T, Op, SEGMENTED_CHUNK_BLOCK, SEGMENTED_CHUNK_ITEMS>(
        carry_keys, carry_values, tiles, segments, store, summary_keys, summary_values);
}

template <typename T, typename Op>
__device__ void segmented_reduce_fixup(const u64* __restrict__ carry_keys,
                                       const T* __restrict__ carry_values, u64 tiles, T* out,
                                       u64 segments) {
    SegmentedStore<T, Op> store{out};
    fixup_carries<T, Op, SEGMENTED_FIXUP_BLOCK, SEGMENTED_FIXUP_ITEMS>(carry_keys, carry_values,
                                                                       tiles, segments, store);
}
