// transpose_vector.cu — out = inᵀ in 16-byte vectors, for 1- and 2-byte
// elements (TransposeAlgorithm::Tuned with TransposePolicy::vectors).
//
// One element per lane moves 32 or 64 bytes per warp instruction for bytes
// and halfwords: too few to keep the DRAM busy (the scalar kernel reaches
// under half the copy ceiling on u8). Here every global access is a 16-byte
// vector of V = 16 / sizeof(E) elements (16 bytes, 8 halfwords).
//
// A block of THREADS threads moves a TILE × TILE tile (u8: 128 × 128,
// u16: 64 × 64; VPR = TILE / V vectors per tile row):
//  1. read: vector q of the tile (q = i·THREADS + tid) is input row q / VPR,
//     vector q % VPR: consecutive lanes read consecutive 16 bytes of a row;
//     all ITEMS = TILE·VPR / THREADS loads of a thread are issued before the
//     first store to shared memory;
//  2. the vectors go into shared memory row by row, vector v of row r at
//     slot v ^ swizzle(r), swizzle(r) = (r / V) mod min(VPR, 8): the rows
//     one output vector gathers from land in different 16-byte bank groups;
//  3. barrier;
//  4. write: output vector (output row oc, vector ov) gathers element oc of
//     input rows ov·V … ov·V + V − 1 (V scalar shared reads) and stores
//     them as one vector. LANES_PER_ROW lanes cover one output row (8: each
//     warp writes four output rows of 128 contiguous bytes); with the
//     swizzle, the 32 lanes' scalar reads fall in distinct banks (u16) or
//     share words (u8: four output rows read the same word of a row).
// STREAMING uses evict-first loads and stores (__ldcs / __stcs): every
// byte is touched once. DOWN_COLUMNS orders the tiles as the scalar kernel
// does (transpose_tuned.cu): grid x over row tiles, so the blocks writing
// neighbouring pieces of the same output rows run together; otherwise grid
// x runs over column tiles.
//
// The host takes this kernel only when rows and cols are multiples of V
// and both buffers are 16-byte aligned, so every tile row starts on a
// vector; tiles cut by the matrix's edge (rows or cols not multiples of
// TILE) move element by element through the same swizzled layout, with
// bounds checks. Surplus blocks of a z-spilled grid exit before the
// barrier. Launched as 32 × THREADS / 32 threads, one block per tile.
//
// Work rows·cols copies. Bytes 2·rows·cols·sizeof(E). One launch, one
// barrier per block. Shared memory TILE²·sizeof(E) (16 KiB for u8,
// 8 KiB for u16). Deterministic; not in place.
#pragma once

template <typename E, u32 TILE, u32 THREADS, u32 LANES_PER_ROW, bool STREAMING, bool DOWN_COLUMNS>
__device__ void transpose_vector(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    constexpr u32 V = 16 / sizeof(E);
    constexpr u32 VPR = TILE / V;
    constexpr u32 SWIZZLE = VPR < 8 ? VPR : 8;
    constexpr u32 ITEMS = TILE * VPR / THREADS;
    static_assert(TILE % V == 0 && (TILE * VPR) % THREADS == 0, "whole vectors per thread");
    static_assert(VPR % LANES_PER_ROW == 0 && (VPR & (VPR - 1)) == 0, "swizzle within a row");
    __shared__ uint4 tile[TILE][VPR];
    E* const flat = reinterpret_cast<E*>(tile);
    // Element (r, c) of the tile in the swizzled layout.
    auto slot = [](u32 r, u32 c) -> u32 { return r * TILE + ((c / V) ^ ((r / V) % SWIZZLE)) * V + c % V; };
    const u64 tile_row = (DOWN_COLUMNS ? (u64)blockIdx.x : block_row_2d()) * TILE;
    const u64 tile_col = (DOWN_COLUMNS ? block_row_2d() : (u64)blockIdx.x) * TILE;
    if (tile_row >= rows || tile_col >= cols) return;  // surplus block of a z-spilled grid
    const u32 tid = threadIdx.y * 32 + threadIdx.x;
    const bool interior = tile_row + TILE <= rows && tile_col + TILE <= cols;
    if (interior) {
        uint4 held[ITEMS];
#pragma unroll
        for (u32 i = 0; i < ITEMS; ++i) {
            const u32 q = i * THREADS + tid, r = q / VPR, v = q % VPR;
            const uint4* p = reinterpret_cast<const uint4*>(in + (tile_row + r) * cols + tile_col + (u64)v * V);
            held[i] = STREAMING ? __ldcs(p) : *p;
        }
#pragma unroll
        for (u32 i = 0; i < ITEMS; ++i) {
            const u32 q = i * THREADS + tid, r = q / VPR, v = q % VPR;
            tile[r][v ^ ((r / V) % SWIZZLE)] = held[i];
        }
    } else {
        for (u32 q = tid; q < TILE * TILE; q += THREADS) {
            const u32 r = q / TILE, c = q % TILE;
            if (tile_row + r < rows && tile_col + c < cols) flat[slot(r, c)] = in[(tile_row + r) * cols + tile_col + c];
        }
    }
    __syncthreads();
    if (interior) {
#pragma unroll
        for (u32 i = 0; i < ITEMS; ++i) {
            const u32 q = i * THREADS + tid;
            const u32 oc = (q / LANES_PER_ROW) % TILE;
            const u32 ov = (q / (LANES_PER_ROW * TILE)) * LANES_PER_ROW + q % LANES_PER_ROW;
            union {
                uint4 vector;
                E element[V];
            } gathered;
#pragma unroll
            for (u32 k = 0; k < V; ++k) gathered.element[k] = flat[slot(ov * V + k, oc)];
            uint4* p = reinterpret_cast<uint4*>(out + (tile_col + oc) * rows + tile_row + (u64)ov * V);
            if (STREAMING) __stcs(p, gathered.vector); else *p = gathered.vector;
        }
    } else {
        for (u32 q = tid; q < TILE * TILE; q += THREADS) {
            const u32 oc = q / TILE, r = q % TILE;
            if (tile_col + oc < cols && tile_row + r < rows) out[(tile_col + oc) * rows + tile_row + r] = flat[slot(r, oc)];
        }
    }
}
