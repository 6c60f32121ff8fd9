// conv_register_tile.cu — TiledHalo's register-tile kernel: 2-D
// cross-correlation / convolution of an H × W image with a K × K filter
// (K = 1 … 7, compile-time), a tile in shared memory and a block of outputs
// in each thread's registers.
//
// The host (crates/linalg/src/conv/module.rs) prepends common.cuh, then
// `typedef <element> conv_t;` and `conv_acc_t` (4-byte types that accumulate
// in themselves: f32, i32), the tuning #defines (CONV_RT_ROWS,
// CONV_RT_GROUPS, CONV_RT_WARPS), then conv.cu (for conv_fetch, conv_mul_add
// and conv_filter_index; its own tuning #defines are set too), then this
// file, then the extern "C" entries. It computes exactly what conv.cu's
// kernels compute (same definition, anchor `pad`, padding modes, flip), and
// adds the products of every output in the same order (filter row u
// ascending, then column v, from zero), so its results equal the block
// kernel's and the strip kernel's bit for bit.
//
// Geometry. A block of 32 × WY threads (WY = CONV_RT_WARPS) computes a tile
// of TC = 128·G output columns (G = CONV_RT_GROUPS) × TR = WY·R output rows
// (R = CONV_RT_ROWS). Warp y owns rows y·R … y·R + R − 1 of the tile; lane t
// owns, in each of those rows, the G groups of 4 consecutive columns
// 4t + 128g … 4t + 128g + 3, so R·4·G accumulators per thread. Tiles start at
// input column col_base + tx·TC, where col_base = −(pad rounded up to a
// multiple of 4): every tile's first input column is a multiple of 4, and
// its first output column is col_base + pad + tx·TC (the ≤ 3 columns left of
// 0 in the first tile are computed and not stored).
//
// Staging. The block copies the tile's TR + K − 1 input rows × PITCH columns
// (PITCH = TC + (K − 1 rounded up to 4), a whole number of 16-byte vectors)
// into shared memory: one 16-byte load per vector where the rows are aligned
// (the host's `aligned`: W a multiple of 4 and a 16-byte-aligned base) and
// the vector lies inside the image, each thread issuing all these loads
// before its first shared store. A tile wholly inside the image with
// aligned rows (uniform across the block) takes them without tests; an edge
// tile then fills its other vectors in a second, rolled pass, four samples
// each through conv_fetch (padding applied; Valid reads zeros there,
// feeding only outputs that are not stored). The filter, rotated when
// flipping, goes to shared memory as K rows of 8 taps (zero past K).
//
// Walk. For each tile row m = 0 … R + K − 2 of its window, a thread reads its
// 4 + (K − 1 rounded up to 4) samples per group with 16-byte shared loads
// (lane t reads 16 bytes at 16·t within each instruction: conflict-free),
// then for every output row i whose window holds m (filter row u = m − i,
// 0 ≤ u < K) adds the K products of each of its 4·G outputs. The filter
// rows are read with 16-byte broadcast loads at addresses uniform across the
// warp, so the compiler keeps the taps in uniform registers and every
// multiply-add takes its tap from there: K² multiply-adds per output and,
// per thread, (R + K − 1)·G·(1 + ⌈(K−1)/4⌉) shared loads for R·4·G·K² of them
// (K = 7, R = 8, G = 1: 1 568 multiply-adds in about 1 700 instructions).
//
// Stores. A thread's 4 outputs of a group are consecutive. With
// CONV_RT_ALIGNED_STORES every row is written in whole 16-byte pieces: where
// a row's quads start on 16-byte boundaries each goes out as one 16-byte
// store; where they do not (an output width that is not a multiple of 4),
// each lane takes the first 1 … 3 outputs of the next lane's quad by
// shuffle and stores the aligned 16 bytes that start inside its own quad
// (split stores cost the L2 a second write request per sector). Without
// it, a 16-byte store where the quad's address allows, else two 8-byte
// stores, else four 4-byte ones: fewer instructions, for walks bound by
// issue. Element by element at the output's left and right edges.
//
// Work: K² multiply-adds per output (plus those of the ≤ 3 surplus columns at
// the left edge and of the last tile's columns and rows past the output,
// computed and not stored). Global memory: reads (TR + K − 1)·PITCH samples
// per tile (the halo rows and columns shared with neighbouring tiles mostly
// hit L2), writes each output once: DRAM traffic ≈ H·W + OH·OW elements plus
// the filter. Launches: 1. Shared memory per block: ((TR + K − 1)·PITCH + 8K)
// elements. Deterministic (fixed-order sums). Not in place.
#pragma once

#if !defined(CONV_RT_ROWS) || !defined(CONV_RT_GROUPS) || !defined(CONV_RT_WARPS) || \
    !defined(CONV_RT_ALIGNED_STORES)
#error "conv_register_tile.cu needs CONV_RT_ROWS, CONV_RT_GROUPS, CONV_RT_WARPS and CONV_RT_ALIGNED_STORES from the host"
#endif

static_assert(acc_is_self<conv_t> && sizeof(conv_t) == 4,
              "the register-tile kernel serves 4-byte types that accumulate in themselves");

// Four consecutive elements as one 16-byte word.
union conv_rt_quad {
    uint4 raw;
    conv_t e[4];
};

// One 16-byte store of four consecutive outputs at a 16-byte-aligned
// address.
__device__ __forceinline__ void conv_rt_store_quad(conv_t* dst, conv_t a, conv_t b, conv_t c,
                                                   conv_t d) {
    conv_rt_quad quad;
    quad.e[0] = a;
    quad.e[1] = b;
    quad.e[2] = c;
    quad.e[3] = d;
    *reinterpret_cast<uint4*>(dst) = quad.raw;
}

// A warp's outputs of one row whose lane quads start D elements before a
// 16-byte boundary (D = 1 … 3): each lane stores the aligned 4 elements
// from its own quad's element D on (its last 4 − D outputs, then the first
// D of the next lane's quad, taken by shuffle). Lane 31 takes the next
// group's lane 0, except in the last group, where it stores its own last
// 4 − D alone; lane 0 of the first group also stores its first D. Every
// column of the tile is stored once; columns outside [0, OW) are skipped.
template <int G, int D>
__device__ __forceinline__ void conv_rt_store_shifted(conv_t* __restrict__ row_out, i64 col0,
                                                      i64 OW, int lane,
                                                      const conv_t (&v)[G][4],
                                                      const conv_t (&next)[G][3]) {
    constexpr int P = 4 - D;  // the lane's own outputs in its aligned chunk
#pragma unroll
    for (int g = 0; g < G; ++g) {
        const i64 col = col0 + g * 128 + lane * 4;
        if (g == 0 && lane == 0) {
#pragma unroll
            for (int k = 0; k < D; ++k) {
                if (col + k >= 0 && col + k < OW) row_out[col + k] = v[0][k];
            }
        }
        const bool from_next_group = g + 1 < G && lane == 31;
        const bool has_next = lane < 31 || g + 1 < G;
        conv_t chunk[4];
#pragma unroll
        for (int k = 0; k < P; ++k) chunk[k] = v[g][D + k];
#pragma unroll
        for (int k = 0; k < D; ++k)
            chunk[P + k] = from_next_group ? next[g + 1 < G ? g + 1 : g][k] : next[g][k];
        const i64 start = col + D;  // a 16-byte boundary
        if (has_next && start >= 0 && start + 4 <= OW) {
            conv_rt_store_quad(row_out + start, chunk[0], chunk[1], chunk[2], chunk[3]);
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                if ((k < P || has_next) && start + k >= 0 && start + k < OW)
                    row_out[start + k] = chunk[k];
            }
        }
    }
}

// Stores a warp's 4·G outputs of one output row (row_out: the row's first
// element; lane quads at columns col0 + 128g + 4·lane) with 16-byte stores
// at 16-byte boundaries whatever the row's alignment: where the quads are
// not aligned, each lane takes the first three outputs of every group's
// quad from the next lane (three shuffles per group, whichever of them the
// phase uses) and stores realigned pieces (conv_rt_store_shifted). The
// row's phase is the same for every lane and group (quads lie 16 bytes
// apart), so the branch is uniform.
template <int G>
__device__ __forceinline__ void conv_rt_store_row(conv_t* __restrict__ row_out, i64 col0, i64 OW,
                                                  int lane, const conv_t (&v)[G][4]) {
    const int phase = (int)(((u64)row_out / sizeof(conv_t) + (u64)col0) & 3);
    if (phase == 0) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const i64 col = col0 + g * 128 + lane * 4;
            if (col >= 0 && col + 4 <= OW) {
                conv_rt_store_quad(row_out + col, v[g][0], v[g][1], v[g][2], v[g][3]);
            } else {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (col + k >= 0 && col + k < OW) row_out[col + k] = v[g][k];
                }
            }
        }
        return;
    }
    conv_t next[G][3];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int k = 0; k < 3; ++k) next[g][k] = __shfl_sync(0xffffffffu, v[g][k], (lane + 1) & 31);
    if (phase == 1) {
        conv_rt_store_shifted<G, 3>(row_out, col0, OW, lane, v, next);
    } else if (phase == 2) {
        conv_rt_store_shifted<G, 2>(row_out, col0, OW, lane, v, next);
    } else {
        conv_rt_store_shifted<G, 1>(row_out, col0, OW, lane, v, next);
    }
}

template <int KC>
__device__ __forceinline__ void conv_register_tile(const conv_t* __restrict__ img,
                                                   const conv_t* __restrict__ filt,
                                                   conv_t* __restrict__ out, i64 H, i64 W,
                                                   i64 OH, i64 OW, int pad, int padding,
                                                   int flip, i64 col_base, int aligned) {
    constexpr int R = CONV_RT_ROWS;
    constexpr int G = CONV_RT_GROUPS;
    constexpr int WY = CONV_RT_WARPS;
    constexpr int THREADS = 32 * WY;
    constexpr int TC = 128 * G;                 // output columns per tile
    constexpr int TR = WY * R;                  // output rows per tile
    constexpr int HALO = (KC - 1 + 3) / 4 * 4;  // K − 1 rounded up to whole vectors
    constexpr int PITCH = TC + HALO;            // tile row, elements (a multiple of 4)
    constexpr int QUADS = PITCH / 4;            // 16-byte vectors per tile row
    constexpr int IN_ROWS = TR + KC - 1;
    constexpr int VECTORS = IN_ROWS * QUADS;
    constexpr int PER_THREAD = (VECTORS + THREADS - 1) / THREADS;
    constexpr int WINDOW = 4 + HALO;            // samples a lane reads per group and row

    extern __shared__ __align__(16) unsigned char conv_rt_smem[];
    conv_t* tile = reinterpret_cast<conv_t*>(conv_rt_smem);
    conv_t* taps = tile + IN_ROWS * PITCH;  // KC rows of 8

    const int tid = threadIdx.y * 32 + threadIdx.x;
    const i64 out_row0 = (i64)block_row_2d() * TR;
    const i64 in_row0 = out_row0 - pad;
    const i64 in_col0 = col_base + (i64)blockIdx.x * TC;  // a multiple of 4
    const i64 out_col0 = in_col0 + pad;

    // (A loop: a block of one warp holds fewer threads than K = 5 … 7 has
    // padded taps.)
    for (int t = tid; t < KC * 8; t += THREADS) {
        const int u = t / 8, v = t % 8;
        taps[t] = v < KC ? filt[conv_filter_index(u, v, KC, flip)] : (conv_t)0;
    }

    // Stage the tile: vector idx is tile row idx / QUADS, columns
    // 4·(idx % QUADS) … + 3. Every load of a thread is issued before its
    // first shared store.
    const bool inside = aligned && in_row0 >= 0 && in_col0 >= 0 && in_row0 + IN_ROWS <= H &&
                        in_col0 + PITCH <= W;
    uint4 staged[PER_THREAD];
    if (inside) {
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const int idx = tid + j * THREADS;
            if (VECTORS % THREADS == 0 || idx < VECTORS) {
                const int r = idx / QUADS, q = idx % QUADS;
                staged[j] = __ldg(reinterpret_cast<const uint4*>(img + (in_row0 + r) * W +
                                                                 in_col0 + 4 * q));
            }
        }
    } else {
        // Edge tiles: the vectors inside the image (and aligned) as above;
        // the others are filled sample by sample below.
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const int idx = tid + j * THREADS;
            if (VECTORS % THREADS == 0 || idx < VECTORS) {
                const int r = idx / QUADS, q = idx % QUADS;
                const i64 row = in_row0 + r;
                const i64 col = in_col0 + 4 * q;
                staged[j] = make_uint4(0, 0, 0, 0);
                if (aligned && row >= 0 && row < H && col >= 0 && col + 4 <= W) {
                    staged[j] = __ldg(reinterpret_cast<const uint4*>(img + row * W + col));
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int idx = tid + j * THREADS;
        if (VECTORS % THREADS == 0 || idx < VECTORS) reinterpret_cast<uint4*>(tile)[idx] = staged[j];
    }
    if (!inside) {
        // The vectors of edge tiles that the loads above left out (outside
        // the image, or rows not aligned): through the padding, sample by
        // sample, each thread overwriting its own vectors.
#pragma unroll 1
        for (int idx = tid; idx < VECTORS; idx += THREADS) {
            const int r = idx / QUADS, q = idx % QUADS;
            const i64 row = in_row0 + r;
            const i64 col = in_col0 + 4 * q;
            if (!(aligned && row >= 0 && row < H && col >= 0 && col + 4 <= W)) {
                conv_rt_quad quad;
#pragma unroll
                for (int c = 0; c < 4; ++c) quad.e[c] = conv_fetch(img, H, W, row, col + c, padding);
                reinterpret_cast<uint4*>(tile)[idx] = quad.raw;
            }
        }
    }
    __syncthreads();

    const int lane = threadIdx.x;
    const int warp = threadIdx.y;
    const conv_t* window = tile + warp * R * PITCH + lane * 4;
    conv_t acc[R][G][4];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[i][g][c] = (conv_t)0;

#pragma unroll
    for (int m = 0; m < R + KC - 1; ++m) {
        conv_t x[G][WINDOW];
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int j = 0; j < WINDOW / 4; ++j) {
                conv_rt_quad quad;
                quad.raw = *reinterpret_cast<const uint4*>(window + m * PITCH + g * 128 + 4 * j);
#pragma unroll
                for (int c = 0; c < 4; ++c) x[g][4 * j + c] = quad.e[c];
            }
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int u = m - i;  // compile-time: the filter row row m meets for output row i
            if (u >= 0 && u < KC) {
                conv_t w[8];
#pragma unroll
                for (int j = 0; j < (KC + 3) / 4; ++j) {
                    conv_rt_quad quad;
                    quad.raw = *reinterpret_cast<const uint4*>(taps + u * 8 + 4 * j);
#pragma unroll
                    for (int c = 0; c < 4; ++c) w[4 * j + c] = quad.e[c];
                }
#pragma unroll
                for (int v = 0; v < KC; ++v)
#pragma unroll
                    for (int g = 0; g < G; ++g)
#pragma unroll
                        for (int c = 0; c < 4; ++c)
                            acc[i][g][c] = conv_mul_add(acc[i][g][c], x[g][c + v], w[v]);
            }
        }
    }

#pragma unroll
    for (int i = 0; i < R; ++i) {
        const i64 row = out_row0 + warp * R + i;
        if (row >= OH) break;  // rows grow with i (uniform across the warp)
#if CONV_RT_ALIGNED_STORES
        conv_rt_store_row<G>(out + row * OW, out_col0, OW, lane, acc[i]);
#else
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const i64 col = out_col0 + g * 128 + lane * 4;
            conv_t* dst = out + row * OW + col;
            if (col >= 0 && col + 4 <= OW) {
                const u64 address = (u64)dst;
                if ((address & 15) == 0) {
                    conv_rt_quad quad;
#pragma unroll
                    for (int c = 0; c < 4; ++c) quad.e[c] = acc[i][g][c];
                    *reinterpret_cast<uint4*>(dst) = quad.raw;
                } else if ((address & 7) == 0) {
                    union {
                        uint2 raw;
                        conv_t e[2];
                    } lo, hi;
                    lo.e[0] = acc[i][g][0];
                    lo.e[1] = acc[i][g][1];
                    hi.e[0] = acc[i][g][2];
                    hi.e[1] = acc[i][g][3];
                    reinterpret_cast<uint2*>(dst)[0] = lo.raw;
                    reinterpret_cast<uint2*>(dst)[1] = hi.raw;
                } else {
#pragma unroll
                    for (int c = 0; c < 4; ++c) dst[c] = acc[i][g][c];
                }
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    if (col + c >= 0 && col + c < OW) dst[c] = acc[i][g][c];
                }
            }
        }
#endif
    }
}
