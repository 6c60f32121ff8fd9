// transpose_tuned.cu — out = inᵀ element by element through a shared tile
// (TransposeAlgorithm::Tuned, the scalar kernel; transpose_vector.cu is the
// 16-byte one).
//
// A block of TILE × BLOCK_ROWS threads moves a TILE² tile: each thread
// copies TILE / BLOCK_ROWS elements (rows ty, ty + BLOCK_ROWS, …), so
// several independent loads are in flight per thread. TILE is 32 (one warp
// per tile row) or 64 (two warps per tile row: every tile reads 64
// consecutive elements of each of its input rows and writes 64 of each
// output row, twice the 32-wide tile's contiguous bytes). The
// compiled shapes are 32 × 4, 32 × 8, 32 × 16, 64 × 4 and 64 × 8.
// The tile is padded to TILE + 1 columns: conflict-free column reads for
// 4- and 8-byte elements, at most 2-way for 1- and 2-byte elements (see
// transpose_tiled.cu).
// Tile origins and element indices are 64-bit (inputs past 2^31 elements).
//
// Tile order: with DOWN_COLUMNS (TileOrder::DownColumns) consecutive blocks
// take consecutive row tiles of one column band, so the blocks writing
// neighbouring pieces of the same output rows run at the same time (where
// an output row does not start on a 32-byte sector, rows·sizeof(E) not a
// multiple of 32, two tiles share a sector of it; together, the sector is
// more likely completed in L2 before it is written back). Measured faster
// for 4-byte elements on every shape, for 8-byte elements on unaligned
// ones, and for the vector kernel (docs/transpose.md). Otherwise
// (TileOrder::AcrossRows) consecutive blocks take consecutive column tiles
// of one row band.
//
// Interior tiles (the whole tile inside the matrix: all but the last row
// and column of tiles) take a branch-free path; edge tiles check every
// element. Both global phases are coalesced: a warp reads 32 consecutive
// elements of an input row and writes 32 consecutive elements of an output
// row.
//
// Work rows·cols copies. Bytes 2·rows·cols·sizeof(E). One launch. Shared
// memory TILE·(TILE + 1)·sizeof(E) (4.2 KB for 32 × 32 4-byte elements,
// 16.6 KB for 64 × 64).
// Deterministic; not in place.
#pragma once

template <typename E, u32 TILE, u32 BLOCK_ROWS, bool DOWN_COLUMNS>
__device__ void transpose_tuned(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    static_assert(TILE % BLOCK_ROWS == 0, "each thread copies TILE / BLOCK_ROWS rows");
    __shared__ E tile[TILE][TILE + 1];
    // DOWN_COLUMNS: grid x over row tiles, y (spilling into z) over column
    // tiles; otherwise the other way round.
    const u64 tile_row = (DOWN_COLUMNS ? (u64)blockIdx.x : block_row_2d()) * TILE;
    const u64 tile_col = (DOWN_COLUMNS ? block_row_2d() : (u64)blockIdx.x) * TILE;
    if (tile_row >= rows || tile_col >= cols) return;  // surplus block of a z-spilled grid
    const u32 tx = threadIdx.x, ty = threadIdx.y;
    const bool interior = tile_row + TILE <= rows && tile_col + TILE <= cols;
    if (interior) {
        const E* src = in + (tile_row + ty) * cols + tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TILE; j += BLOCK_ROWS)
            tile[ty + j][tx] = src[(u64)j * cols];
    } else {
        const u64 c = tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TILE; j += BLOCK_ROWS) {
            const u64 r = tile_row + ty + j;
            if (r < rows && c < cols) tile[ty + j][tx] = in[r * cols + c];
        }
    }
    __syncthreads();
    if (interior) {
        E* dst = out + (tile_col + ty) * rows + tile_row + tx;
#pragma unroll
        for (u32 j = 0; j < TILE; j += BLOCK_ROWS)
            dst[(u64)j * rows] = tile[tx][ty + j];
    } else {
        const u64 out_col = tile_row + tx;
#pragma unroll
        for (u32 j = 0; j < TILE; j += BLOCK_ROWS) {
            const u64 out_row = tile_col + ty + j;
            if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[tx][ty + j];
        }
    }
}
