// matvec_tiled.cu — y = A·x and y = Aᵀ·x with the vector staged through shared
// memory in tiles (the lab's gpu-sm). The block has `tile` threads
// (blockDim.x, 1 to 1024) and `tile` elements of dynamic shared memory.
//
// Each thread owns one output element (a row of A for A·x, a column for
// Aᵀ·x). The block walks the reduction dimension tile by tile: every thread
// of the block stages one element of x (all threads load, including those
// whose row/column is past the end: otherwise the last, partial block would
// stage a partial tile — the lab's boundary rule), barrier, the threads with
// a real output accumulate the tile's min(tile, remaining) products, barrier
// (nobody overwrites the tile while another thread still reads it).
//
// The tile loop is unrolled by 4 (explicitly, so the host can rely on it):
// ptxas may merge the remainder's up-to-3 conditional reads of
// x_tile[4m..4m+3) into one wider read issued whatever the remainder is
// (compute-sanitizer memcheck saw a 12-byte read of a 4-byte tile on sm_90).
// The host therefore allocates the tile in whole groups of 4 elements
// (matvec_tiled.rs, TILE_GROUP); the padding is read at most, never used.
//
// Work rows·cols multiply-adds; 2·⌈len(x)/tile⌉ barriers per block. Bytes:
// A once, x once per block, y once. Shared memory: ⌈tile/4⌉·4·sizeof(T)
// per block.
// Bank conflicts: none (all threads read the same x_tile[k]: a broadcast).
// Global access: A·x reads A uncoalesced (a warp touches 32 rows), as in
// the lab; Aᵀ·x reads 32 consecutive columns of a row per warp (coalesced).
// Sums in acc_t<T>, each output rounded once (matvec_common.cu).
// Deterministic; not in place.
#pragma once

// The loop both directions share: the block stages x (`len` elements) tile
// by tile; a thread with an output (`active`) adds a_at(k)·x[k] for every k,
// in order, into its accumulator. `a_at(k)` is the thread's matrix element
// that multiplies x[k]: along its row (A·x) or down its column (Aᵀ·x).
template <typename T, typename MatrixAt>
__device__ __forceinline__ acc_t<T> matvec_tiled_dot(const T* __restrict__ x, u64 len,
                                                     bool active, MatrixAt a_at) {
    T* x_tile = reinterpret_cast<T*>(matvec_dynamic_smem);
    const u32 tile = blockDim.x;
    acc_t<T> sum = acc_t<T>(0);
    for (u64 base = 0; base < len; base += tile) {
        const u64 i = base + threadIdx.x;
        if (i < len) x_tile[threadIdx.x] = x[i];
        __syncthreads();
        const u64 left = len - base;
        const u32 width = left < tile ? (u32)left : tile;
        if (active) {
#pragma unroll 4
            for (u32 k = 0; k < width; ++k) sum = mul_add(a_at(base + k), x_tile[k], sum);
        }
        __syncthreads();
    }
    return sum;
}

template <typename T>
__device__ void matvec_tiled_n(const T* __restrict__ a, const T* __restrict__ x,
                               T* __restrict__ y, u64 rows, u64 cols) {
    const u64 row = global_thread_index();
    const bool has_row = row < rows;
    const T* arow = a + (has_row ? row : 0) * cols;
    const acc_t<T> sum = matvec_tiled_dot(x, cols, has_row, [&](u64 c) { return arow[c]; });
    if (has_row) y[row] = from_acc<T>(sum);
}

template <typename T>
__device__ void matvec_tiled_t(const T* __restrict__ a, const T* __restrict__ x,
                               T* __restrict__ y, u64 rows, u64 cols) {
    const u64 col = global_thread_index();
    const bool has_col = col < cols;
    const T* acol = a + (has_col ? col : 0);
    const acc_t<T> sum = matvec_tiled_dot(x, rows, has_col, [&](u64 r) { return acol[r * cols]; });
    if (has_col) y[col] = from_acc<T>(sum);
}
