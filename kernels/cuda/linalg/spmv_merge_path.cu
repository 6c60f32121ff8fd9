// spmv_merge_path.cu — CSR SpMV balanced by work: the merge path over rows
// and non-zeros (Merrill & Garland 2016), SpmvAlgorithm::MergePath.
//
// Three launches (four when the carries fill more than one chunk), all
// built on block/merge_path.cuh:
//   1. partition: one thread per tile boundary searches its diagonal;
//   2. tiles: each block stages its TILE = BLOCK · ITEMS steps (products
//      vals[k]·x[cols[k]], loaded coalesced, and row ends) in shared memory,
//      each thread consumes ITEMS steps, a keyed block scan joins rows that
//      cross threads, finished rows are stored as α·sum + β·y[r], and the
//      block's partial last row is its carry;
//   3. fix-up: each row that earlier blocks carried into gets y[r] +=
//      α·(their carries, folded in block order): a grid of chunks of
//      carries applies the rows inside each chunk and leaves two summary
//      carries per chunk, one block folds those (block/merge_path.cuh);
//      carries that fit one chunk go to the one block directly.
// Every block does the same rows + nnz share of work, whatever the row
// lengths. Bytes: 8·nnz (vals, cols) + sizeof(Off)·(rows + 1) + x (cached)
// + y once (β ≠ 0: read too), plus 16 bytes per tile of carries, 8 of
// coordinates and 2 · (8 + sizeof(T)) per chunk of summaries.
// Deterministic: the summation order depends only on the shape and the
// tile size.
#pragma once

template <typename T>
struct SpmvLoad {
    const i32* __restrict__ cols;
    const T* __restrict__ vals;
    const T* __restrict__ x;
    __device__ __forceinline__ T operator()(u64 k) const { return spmv_product(cols, vals, x, k); }
};

template <typename T>
struct SpmvStore {
    T* y;
    T alpha;
    T beta;
    __device__ __forceinline__ void complete(u64 row, T value) {
        spmv_store_row(y, row, value, alpha, beta);
    }
    __device__ __forceinline__ T fixup_load(u64 row) const { return y[row]; }
    __device__ __forceinline__ void fixup_store(u64 row, T carry, T stored) {
        y[row] = stored + alpha * carry;
    }
};

template <typename Off>
__device__ void spmv_merge_partition(const Off* __restrict__ offsets, u64 rows, u64 nnz,
                                     u64* coordinates, u64 tiles) {
    merge_path_partition(offsets, rows, nnz, (u64)SPMV_MERGE_BLOCK * SPMV_MERGE_ITEMS, coordinates,
                         tiles);
}

template <typename T, typename Off>
__device__ void spmv_merge_tiles(const Off* __restrict__ offsets, const i32* __restrict__ cols,
                                 const T* __restrict__ vals, const T* __restrict__ x, T* y,
                                 const u64* __restrict__ coordinates, u64* carry_keys,
                                 T* carry_values, u64 rows, u64 nnz, u64 tiles, T alpha, T beta) {
    __shared__ MergePathTileStorage<T, spmv_sum<T>, SPMV_MERGE_BLOCK, SPMV_MERGE_ITEMS> smem;
    const u64 tile = linear_block_index();
    if (tile >= tiles) return;
    u64 base, items;
    merge_path_items(offsets, rows, nnz, base, items);
    const SpmvLoad<T> load{cols, vals, x};
    SpmvStore<T> store{y, alpha, beta};
    merge_path_tile<T, spmv_sum<T>, SPMV_MERGE_BLOCK, SPMV_MERGE_ITEMS>(
        smem, tile, coordinates, offsets, rows, base, items, load, store, carry_keys, carry_values);
}

template <typename T>
__device__ void spmv_merge_fixup_chunks(const u64* __restrict__ carry_keys,
                                        const T* __restrict__ carry_values, u64 tiles, T* y,
                                        u64 rows, T alpha, u64* summary_keys,
                                        T* summary_values) {
    SpmvStore<T> store{y, alpha, (T)0};
    fixup_chunk<T, spmv_sum<T>, SPMV_CHUNK_BLOCK, SPMV_CHUNK_ITEMS>(
        carry_keys, carry_values, tiles, rows, store, summary_keys, summary_values);
}

template <typename T>
__device__ void spmv_merge_fixup(const u64* __restrict__ carry_keys,
                                 const T* __restrict__ carry_values, u64 tiles, T* y, u64 rows,
                                 T alpha) {
    SpmvStore<T> store{y, alpha, (T)0};
    fixup_carries<T, spmv_sum<T>, SPMV_FIXUP_BLOCK, SPMV_FIXUP_ITEMS>(carry_keys, carry_values,
                                                                      tiles, rows, store);
}
