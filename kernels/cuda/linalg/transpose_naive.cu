// transpose_naive.cu — out = inᵀ with one thread per element, straight from
// global memory (the lab's gpu-gm).
//
// in is rows × cols, out is cols × rows, both row-major. Block (32, 8);
// grid x over column tiles of 32, grid y (spilling into z, see
// block_row_2d) over row tiles of 8. A warp reads 32 consecutive elements
// of one input row (coalesced) and writes them down one output column,
// `rows` elements apart: 32 separate sectors per store. That strided store
// is what the tiled kernels fix.
//
// Work rows·cols copies, one step. Bytes 2·rows·cols·sizeof(E) (each
// store sector is partly written, so DRAM moves more than that). No shared
// memory. Deterministic; not in place (out must not overlap in).
#pragma once

template <typename E>
__device__ void transpose_naive(const E* __restrict__ in, E* __restrict__ out, u64 rows, u64 cols) {
    const u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 r = block_row_2d() * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
