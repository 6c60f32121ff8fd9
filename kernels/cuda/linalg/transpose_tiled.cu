// transpose_tiled.cu — out = inᵀ through a 32 × 32 shared-memory tile, one
// element per thread, block (32, 32) = 1024 threads (the lab's gpu-sm).
// PAD = 0 is TransposeAlgorithm::Tiled (32 × 32, bank conflicts on the
// column read); PAD = 1 is TiledPadded (32 × 33, the lab's layout).
//
// Block (bx, row tile) copies the input tile rows [32·rt, +32), columns
// [32·bx, +32): thread (tx, ty) reads in[32·rt + ty][32·bx + tx] (a warp
// reads one 32-element row segment: coalesced) into tile[ty][tx]; barrier;
// then writes out[32·bx + ty][32·rt + tx] = tile[tx][ty] (a warp writes one
// 32-element output row segment: coalesced).
//
// Banks: the write phase reads a tile *column*: 32 lanes at addresses
// tx·(32 + PAD) + ty words. With PAD = 0 (4-byte elements) every lane hits
// the same bank: a 32-way conflict, 32 shared-memory transactions per warp.
// With PAD = 1 the row pitch is 33 words, lanes land in 32 distinct banks.
// 8-byte elements: a warp's 64-bit access is served per half-warp; with
// PAD = 1, pitch 66 words, lanes of a half-warp hit banks 2·tx + const,
// distinct. 1-byte elements: lane tx reads byte 33·tx + ty, word
// ⌊(33·tx + ty)/4⌋: at most 2 lanes per bank (2-way, for some ty); with
// PAD = 0 lane tx reads word 8·tx + ty/4: only 4 banks, 8-way conflicts.
// 2-byte elements: lane tx reads halfword 33·tx + ty, word
// ⌊(33·tx + ty)/2⌋: at most 2 lanes per bank; with PAD = 0 word
// 16·tx + ty/2: 2 banks, 16-way conflicts. Sub-word elements are read and
// written whole (16- and 8-bit shared and global accesses): no thread
// touches another's element.
//
// Edges: lanes outside the matrix skip their load and store (rows, cols
// need not be multiples of 32). Surplus blocks of a z-spilled grid exit
// before the barrier (uniformly per block).
//
// Work rows·cols copies. Bytes 2·rows·cols·sizeof(E), both directions
// coalesced. One launch. Shared memory 32·(32 + PAD)·sizeof(E) per block.
// Deterministic; not in place.
#pragma once

template <typename E, int PAD>
__device__ void transpose_tiled(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    __shared__ E tile[32][32 + PAD];
    const u64 tile_row = block_row_2d() * 32;
    const u64 tile_col = (u64)blockIdx.x * 32;
    if (tile_row >= rows) return;
    const u64 r = tile_row + threadIdx.y;
    const u64 c = tile_col + threadIdx.x;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = in[r * cols + c];
    __syncthreads();
    // Output row = input column, output column = input row.
    const u64 out_row = tile_col + threadIdx.y;
    const u64 out_col = tile_row + threadIdx.x;
    if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[threadIdx.x][threadIdx.y];
}
