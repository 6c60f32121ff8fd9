// transpose_tall.cu — out = inᵀ element by element through a tall shared
// tile (TransposeAlgorithm::Tuned with TransposePolicy::tall_from_elements,
// for matrices of 2- and 4-byte elements, 2^23 of them or more by default,
// whose rows or columns are not whole 256-byte blocks; transpose_tuned.cu has the square tile, transpose_vector.cu the
// 16-byte one).
//
// A block of TILE × BLOCK_ROWS threads moves a tile of TILE_ROWS input rows
// by TILE input columns: it reads TILE consecutive elements of each of its
// TILE_ROWS input rows and writes TILE_ROWS consecutive elements of each of
// its TILE output rows. At 64 × 128 for 4-byte elements an output piece is
// 512 bytes against the square 64-tile's 256, so the 32-byte sectors an
// unaligned output row shares between two tiles are half as many per byte.
//
// Two things make the unaligned shapes cheap (rows·sizeof(E) or
// cols·sizeof(E) not a multiple of 32, e.g. f32 9973 × 10007), where a
// warp's 32 stores otherwise straddle one more sector than they fill:
// - Rotated stores: each output piece starts `rotate` elements before the
//   next sector boundary; the piece's first warp store covers the 32
//   elements from that boundary, each further store the next 32, and the
//   last also takes the `rotate` elements before the boundary. A piece of
//   n sectors' worth of elements then touches n + 1 sectors in all, where
//   unrotated stores touch one more per warp store. For aligned rows
//   `rotate` is 0 and nothing changes.
// - Loads ask L2 to fetch the 256-byte block around each address
//   (`ld.global.nc.L2::256B`, sm_80 and later): the neighbouring rows'
//   pieces of the next tile are in L2 when it comes.
// Measured on an H200 against the square 64-tile (docs/transpose.md): f32
// 9973 × 10007 0.72 → 0.87 of the copy ceiling, 10000² 0.89 → 0.91, u16
// 9973 × 10007 0.64 → 0.69; f32 8192² and 16384² (whole 256-byte rows)
// 0.01–0.02 slower, u8 and u64 slower, so those keep the square tile.
//
// Tile order (DOWN_COLUMNS) as in transpose_tuned.cu: grid x over row
// tiles down the columns, over column tiles across the rows; the other
// side spills from y into z.
//
// Interior tiles take a branch-free path; edge tiles check every element.
// Tile origins and element indices are 64-bit.
//
// Work rows·cols copies. Bytes 2·rows·cols·sizeof(E). One launch. Dynamic
// shared memory TILE_ROWS·(TILE + 1)·sizeof(E) (33 KiB for 64 × 128 4-byte
// elements, 66 KiB for 8-byte ones; the odd pitch keeps the column reads
// conflict-free for 4- and 8-byte elements).
// Deterministic; not in place (the loads go through the read-only path).
#pragma once

// One element of the input through the read-only path, asking L2 for the
// aligned 256 bytes around it (plain load before sm_80).
template <typename E>
__device__ __forceinline__ E transpose_load_l2_256(const E* p) {
#if __CUDA_ARCH__ >= 800
    if constexpr (sizeof(E) == 1) {
        u16 v;
        asm volatile("ld.global.nc.L2::256B.b8 %0, [%1];" : "=h"(v) : "l"(p));
        return (E)v;
    } else if constexpr (sizeof(E) == 2) {
        u16 v;
        asm volatile("ld.global.nc.L2::256B.b16 %0, [%1];" : "=h"(v) : "l"(p));
        return (E)v;
    } else if constexpr (sizeof(E) == 4) {
        u32 v;
        asm volatile("ld.global.nc.L2::256B.b32 %0, [%1];" : "=r"(v) : "l"(p));
        return (E)v;
    } else {
        u64 v;
        asm volatile("ld.global.nc.L2::256B.b64 %0, [%1];" : "=l"(v) : "l"(p));
        return (E)v;
    }
#else
    return *p;
#endif
}

template <typename E, u32 TILE, u32 TILE_ROWS, u32 BLOCK_ROWS, bool DOWN_COLUMNS>
__device__ void transpose_tall(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    constexpr u32 THREADS = TILE * BLOCK_ROWS;
    constexpr u32 PER_SECTOR = 32 / sizeof(E);
    static_assert(TILE_ROWS % BLOCK_ROWS == 0, "each thread reads TILE_ROWS / BLOCK_ROWS rows");
    static_assert(TILE_ROWS % 32 == 0 && (TILE * TILE_ROWS) % THREADS == 0,
                  "each warp store covers 32 elements of one output piece");
    extern __shared__ __align__(16) unsigned char transpose_tall_shared[];
    E(*tile)[TILE + 1] = reinterpret_cast<E(*)[TILE + 1]>(transpose_tall_shared);
    const u64 tile_row = (DOWN_COLUMNS ? (u64)blockIdx.x : block_row_2d()) * TILE_ROWS;
    const u64 tile_col = (DOWN_COLUMNS ? block_row_2d() : (u64)blockIdx.x) * TILE;
    if (tile_row >= rows || tile_col >= cols) return;  // surplus block of a z-spilled grid
    const u32 tx = threadIdx.x, ty = threadIdx.y, flat = ty * TILE + tx;
    const bool interior = tile_row + TILE_ROWS <= rows && tile_col + TILE <= cols;
    if (interior) {
        const E* src = in + (tile_row + ty) * cols + tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TILE_ROWS; j += BLOCK_ROWS)
            tile[ty + j][tx] = transpose_load_l2_256(src + (u64)j * cols);
    } else {
        const u64 c = tile_col + tx;
#pragma unroll
        for (u32 j = 0; j < TILE_ROWS; j += BLOCK_ROWS) {
            const u64 r = tile_row + ty + j;
            if (r < rows && c < cols) tile[ty + j][tx] = in[r * cols + c];
        }
    }
    __syncthreads();
#pragma unroll
    for (u32 k = 0; k < TILE * TILE_ROWS / THREADS; ++k) {
        // Piece `piece` of the tile (output row tile_col + piece), element
        // `along` of it; a warp's 32 lanes share the piece.
        const u32 q = k * THREADS + flat, piece = q / TILE_ROWS;
        const u64 out_row = tile_col + piece;
        // Elements from the piece's start to the next sector boundary.
        const u32 rotate = (0u - (u32)(out_row * rows + tile_row)) % PER_SECTOR;
        const u32 along = (q + rotate) % TILE_ROWS;
        const u64 out_col = tile_row + along;
        if (interior || (out_row < cols && out_col < rows)) out[out_row * rows + out_col] = tile[along][piece];
    }
}
