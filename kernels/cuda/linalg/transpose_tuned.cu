// transpose_tuned.cu — out = inᵀ, the fast kernel (TransposeAlgorithm::Tuned).
//
// A block of TRANSPOSE_TILE × BLOCK_ROWS threads (32 × 8 by default; 32 × 4
// and 32 × 16 are instantiated for tuning sweeps) moves a TRANSPOSE_TILE²
// tile (32 × 32): each thread copies TILE / BLOCK_ROWS elements (4: rows
// ty, ty + 8, ty + 16, ty + 24), so several independent loads are in flight
// per thread and the block is small enough for eight of them per SM.
// The tile is padded to TILE + 1 columns: conflict-free column reads for
// 4- and 8-byte elements, at most 2-way for 1- and 2-byte elements (see
// transpose_tiled.cu).
// Tile origins and element indices are 64-bit (inputs past 2^31 elements).
//
// Interior tiles (the whole tile inside the matrix: all but the last row
// and column of tiles) take a branch-free path; edge tiles check every
// element. Both global phases are coalesced: a warp reads 32 consecutive
// elements of an input row and writes 32 consecutive elements of an output
// row.
//
// Work rows·cols copies. Bytes 2·rows·cols·sizeof(E). One launch. Shared
// memory TILE·(TILE + 1)·sizeof(E) (4.2 KB for 4-byte elements).
// Deterministic; not in place.
#pragma once

template <typename E, u32 BLOCK_ROWS>
__device__ void transpose_tuned(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    __shared__ E tile[TRANSPOSE_TILE][TRANSPOSE_TILE + 1];
    const u64 tile_row = block_row_2d() * TRANSPOSE_TILE;
    const u64 tile_col = (u64)blockIdx.x * TRANSPOSE_TILE;
    if (tile_row >= rows) return;  // surplus block of a z-spilled grid
    const u32 tx = threadIdx.x, ty = threadIdx.y;
    const bool interior = tile_row + TRANSPOSE_TILE <= rows && tile_col + TRANSPOSE_TILE <= cols;
    if (interior) {
        const E* src = in + (tile_row + ty) * cols + tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TRANSPOSE_TILE; j += BLOCK_ROWS)
            tile[ty + j][tx] = src[(u64)j * cols];
    } else {
        const u64 c = tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TRANSPOSE_TILE; j += BLOCK_ROWS) {
            const u64 r = tile_row + ty + j;
            if (r < rows && c < cols) tile[ty + j][tx] = in[r * cols + c];
        }
    }
    __syncthreads();
    if (interior) {
        E* dst = out + (tile_col + ty) * rows + tile_row + tx;
#pragma unroll
        for (u32 j = 0; j < TRANSPOSE_TILE; j += BLOCK_ROWS)
            dst[(u64)j * rows] = tile[tx][ty + j];
    } else {
        const u64 out_col = tile_row + tx;
#pragma unroll
        for (u32 j = 0; j < TRANSPOSE_TILE; j += BLOCK_ROWS) {
            const u64 out_row = tile_col + ty + j;
            if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[tx][ty + j];
        }
    }
}
