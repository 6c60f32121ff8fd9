// conv.cu — 2-D cross-correlation / convolution of an H × W image with a
// K × K filter (K = 1 … CONV_MAX_K), four algorithms.
//
// The host (crates/linalg/src/conv/module.rs) prepends common.cuh, then
// `typedef <element> conv_t;`, `typedef <its accumulator> conv_acc_t;` and
// the tuning #defines (CONV_ROWS_PER_THREAD, CONV_REG_FILTER_MAX_K,
// CONV_LOAD_BATCH), then this file, then the extern "C" entries.
//
// What every kernel computes, for output (i, j), 0 ≤ i < OH, 0 ≤ j < OW:
//
//     out[i][j] = Σ_{u,v < K} fw(u, v) · image(i + u − pad, j + v − pad)
//
// where fw(u, v) = filter[u][v] (cross-correlation), or filter[K−1−u][K−1−v]
// when `flip` is set (true convolution), `pad` is the anchor the host chose
// for the border mode (Valid 0, Full K−1, Same K/2, or (K−1)/2 with flip, as
// scipy.ndimage does), and image(r, c) outside the image is given by the
// padding mode (conv_map_coord). Arithmetic: in conv_acc_t (acc_t<conv_t>,
// common.cuh: conv_t itself, f32 for f16 and bf16), fused multiply-add for
// floats, wrapping for integers. Samples and taps are widened to conv_acc_t
// as they are read (the shared tiles and filters hold conv_acc_t), and each
// output is rounded to conv_t once, when it is stored.
//
// Parameters (the same list for every entry):
//   img   H × W row-major        filt  K × K row-major       out  OH × OW
//   H, W, OH, OW (64-bit)        K, pad, padding, flip       stride (TiledHalo
//   only: the shared tile's row pitch, in elements)
//
// Indices into the image and output are 64-bit (an image may exceed 2^31
// elements); block-local indices are 32-bit.
#pragma once

#define CONV_MAX_K 31

#if !defined(CONV_ROWS_PER_THREAD) || !defined(CONV_REG_FILTER_MAX_K) || !defined(CONV_LOAD_BATCH)
#error "conv.cu needs CONV_ROWS_PER_THREAD, CONV_REG_FILTER_MAX_K and CONV_LOAD_BATCH from the host"
#endif

// Padding modes: the discriminants of linalg::Padding.
#define CONV_PAD_ZERO    0
#define CONV_PAD_CLAMP   1
#define CONV_PAD_REFLECT 2
#define CONV_PAD_WRAP    3

// The filter for ConstantFilter: one per module (that is, per element type
// and context); the host copies the caller's filter here, stream-ordered, and
// serialises streams that use it (see conv.rs).
__constant__ conv_t conv_constant_filter[CONV_MAX_K * CONV_MAX_K];

// Maps coordinate x (any 64-bit value) onto [0, n) by the padding mode, or
// returns −1 for "this sample is zero". Reflect is SciPy's 'reflect'
// (d c b a | a b c d | d c b a: the edge sample repeated), which extends with
// period 2n however far x lies outside; Wrap is periodic with period n.
__device__ __forceinline__ i64 conv_map_coord(i64 x, i64 n, int padding) {
    if (x >= 0 && x < n) return x;
    // Within one image length of the edge (every K ≤ n + 1 halo sample): the
    // same mapping without the 64-bit remainder below.
    if (x >= -n && x < 2 * n) {
        switch (padding) {
        case CONV_PAD_CLAMP:
            return x < 0 ? 0 : n - 1;
        case CONV_PAD_REFLECT:
            return x < 0 ? -1 - x : 2 * n - 1 - x;
        case CONV_PAD_WRAP:
            return x < 0 ? x + n : x - n;
        default:
            return -1;
        }
    }
    switch (padding) {
    case CONV_PAD_CLAMP:
        return x < 0 ? 0 : n - 1;
    case CONV_PAD_REFLECT: {
        const i64 period = 2 * n;
        i64 m = x % period;
        if (m < 0) m += period;
        return m < n ? m : period - 1 - m;
    }
    case CONV_PAD_WRAP: {
        i64 m = x % n;
        if (m < 0) m += n;
        return m;
    }
    default:
        return -1;
    }
}

// image(r, c) with padding applied, widened to the accumulator.
__device__ __forceinline__ conv_acc_t conv_fetch(const conv_t* __restrict__ img, i64 H, i64 W,
                                                 i64 r, i64 c, int padding) {
    const i64 rr = conv_map_coord(r, H, padding);
    const i64 cc = conv_map_coord(c, W, padding);
    if (rr < 0 || cc < 0) return (conv_acc_t)0;
    return to_acc(img[rr * W + cc]);
}

// acc + x · w in the accumulator: one rounding for floats (FMA), wrapping
// for integers.
__device__ __forceinline__ f32 conv_mul_add(f32 acc, f32 x, f32 w) { return __fmaf_rn(x, w, acc); }
__device__ __forceinline__ f64 conv_mul_add(f64 acc, f64 x, f64 w) { return __fma_rn(x, w, acc); }
__device__ __forceinline__ i32 conv_mul_add(i32 acc, i32 x, i32 w) {
    return wrapping_add(acc, wrapping_mul(x, w));
}

// Index of fw(u, v) in the caller's row-major filter.
__device__ __forceinline__ int conv_filter_index(int u, int v, int K, int flip) {
    return flip ? (K - 1 - u) * K + (K - 1 - v) : u * K + v;
}

// ---------------------------------------------------------------------------
// Direct methods (Global, SharedFilter, ConstantFilter): one thread per
// output. Block (bx, by) covers bx output columns × by output rows; grid x
// runs over column tiles, grid y (spilling into z) over row tiles.
//
// Work K² multiply-adds per output; step K². Global reads: K² image samples
// per output (served mostly by L1/L2: neighbouring threads share K²−K of
// them), so DRAM traffic is near H·W + OH·OW elements. Shared memory:
// SharedFilter K² elements (read as broadcasts: no bank conflicts); the
// others none. Deterministic: each output is one thread's fixed-order sum.
// ---------------------------------------------------------------------------
#define CONV_FILTER_GLOBAL   0
#define CONV_FILTER_SHARED   1
#define CONV_FILTER_CONSTANT 2

template <int SOURCE>
__device__ __forceinline__ void conv_direct(const conv_t* __restrict__ img,
                                            const conv_t* __restrict__ filt,
                                            conv_t* __restrict__ out, i64 H, i64 W, i64 OH,
                                            i64 OW, int K, int pad, int padding, int flip) {
    extern __shared__ __align__(16) unsigned char conv_direct_smem[];
    conv_acc_t* filter_s = reinterpret_cast<conv_acc_t*>(conv_direct_smem);
    if (SOURCE == CONV_FILTER_SHARED) {
        // Every thread of the block helps stage the filter, already rotated
        // when flipping, before any thread may leave.
        const int threads = blockDim.x * blockDim.y;
        for (int t = threadIdx.y * blockDim.x + threadIdx.x; t < K * K; t += threads) {
            filter_s[t] = to_acc(filt[conv_filter_index(t / K, t % K, K, flip)]);
        }
        __syncthreads();
    }
    const i64 row = (i64)block_row_2d() * blockDim.y + threadIdx.y;
    const i64 col = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= OH || col >= OW) return;

    const i64 r0 = row - pad;
    const i64 c0 = col - pad;
    // A window wholly inside the image needs no padding logic.
    const bool inside = r0 >= 0 && c0 >= 0 && r0 + K <= H && c0 + K <= W;
    conv_acc_t acc = (conv_acc_t)0;
    for (int u = 0; u < K; ++u) {
        for (int v = 0; v < K; ++v) {
            const conv_acc_t x = inside ? to_acc(img[(r0 + u) * W + (c0 + v)])
                                        : conv_fetch(img, H, W, r0 + u, c0 + v, padding);
            conv_acc_t w;
            if (SOURCE == CONV_FILTER_SHARED) {
                w = filter_s[u * K + v];
            } else if (SOURCE == CONV_FILTER_CONSTANT) {
                w = to_acc(conv_constant_filter[conv_filter_index(u, v, K, flip)]);
            } else {
                w = to_acc(filt[conv_filter_index(u, v, K, flip)]);
            }
            acc = conv_mul_add(acc, x, w);
        }
    }
    out[row * OW + col] = from_acc<conv_t>(acc);
}

// ---------------------------------------------------------------------------
// TiledHalo: a block of (bx, by) threads computes a tile of bx output columns
// × by·R output rows (R = CONV_ROWS_PER_THREAD). It stages the input tile plus
// its halo, (by·R + K − 1) rows × (bx + K − 1) columns, in shared memory with
// coalesced loads (padding applied while loading), then each thread computes
// a column of R consecutive outputs: it reads each of the R + K − 1 tile rows
// it needs once (K values into registers) and adds them into every output
// whose window contains that row, so a thread does (R + K − 1)·K shared loads
// for R·K² multiply-adds.
//
// KC > 0: K is the compile-time constant KC; with KC ≤ CONV_REG_FILTER_MAX_K
// the filter lives in registers and all loops are unrolled, otherwise it is
// read from shared memory (broadcasts) and only the inner loops are unrolled.
// KC == 0: K at run time.
//
// Global memory: reads (by·R + K − 1)(bx + K − 1) image samples per tile (the
// halo overlap between tiles mostly hits L2), writes each output once; DRAM
// traffic ≈ H·W + OH·OW elements + the filter. Launches: 1.
// Shared memory per block: ((by·R + K − 1)·stride + K²) accumulators
// (conv_acc_t: samples are widened once, as they are staged). `stride` is
// chosen on the host (conv::tile_stride) so that the row groups of one warp
// (bx < 32) fall in distinct banks: conflict-free reads for 4-byte elements.
// Deterministic (fixed-order sums). Not in place.
// ---------------------------------------------------------------------------
// One tile row of a compile-time-K block kernel: the K values of `tile_row`
// into every output i of the thread's column whose window holds the row
// (filter row fu = u − i), taps from `w` (registers or shared memory; with
// every loop unrolled its indices are compile-time constants).
template <int KC, int R, typename Taps>
__device__ __forceinline__ void conv_tiled_add_row(conv_acc_t (&acc)[R],
                                                   const conv_acc_t* tile_row, int u,
                                                   const Taps& w) {
    conv_acc_t x[KC];
#pragma unroll
    for (int v = 0; v < KC; ++v) x[v] = tile_row[v];
#pragma unroll
    for (int i = 0; i < R; ++i) {
        const int fu = u - i;  // the filter row tile row u meets for output i
        if (fu >= 0 && fu < KC) {
#pragma unroll
            for (int v = 0; v < KC; ++v) acc[i] = conv_mul_add(acc[i], x[v], w[fu * KC + v]);
        }
    }
}

template <int KC>
__device__ __forceinline__ void conv_tiled(const conv_t* __restrict__ img,
                                           const conv_t* __restrict__ filt,
                                           conv_t* __restrict__ out, i64 H, i64 W, i64 OH, i64 OW,
                                           int K_runtime, int pad, int padding, int flip,
                                           int stride) {
    constexpr int R = CONV_ROWS_PER_THREAD;
    const int K = KC > 0 ? KC : K_runtime;
    const int bx = blockDim.x;
    const int by = blockDim.y;
    const int tile_cols = bx + K - 1;
    const int tile_rows = by * R + K - 1;
    const int threads = bx * by;
    const int tid = threadIdx.y * bx + threadIdx.x;

    extern __shared__ __align__(16) unsigned char conv_tiled_smem[];
    conv_acc_t* tile = reinterpret_cast<conv_acc_t*>(conv_tiled_smem);
    conv_acc_t* filter_s = tile + tile_rows * stride;

    const i64 out_row0 = (i64)block_row_2d() * (i64)(by * R);
    const i64 out_col0 = (i64)blockIdx.x * (i64)bx;
    const i64 in_row0 = out_row0 - pad;
    const i64 in_col0 = out_col0 - pad;

    // The filter (rotated when flipping) goes to shared memory too. Its first
    // `threads` taps are loaded now and stored after the tile loads have been
    // issued, so waiting for them does not hold the tile loads back.
    const int taps = K * K;
    conv_acc_t first_tap = (conv_acc_t)0;
    if (tid < taps) first_tap = to_acc(filt[conv_filter_index(tid / K, tid % K, K, flip)]);

    // Stage the tile. Thread tid loads elements tid, tid + threads, ... of the
    // tile in row-major order: consecutive threads read consecutive columns,
    // so loads coalesce. (r, c) advance incrementally (no division per
    // element), and each batch issues all its loads before its shared stores,
    // so a thread keeps CONV_LOAD_BATCH loads in flight.
    {
        const int total = tile_rows * tile_cols;
        const int step_r = threads / tile_cols;
        const int step_c = threads % tile_cols;
        int r = tid / tile_cols;
        int c = tid % tile_cols;
        const bool tile_inside = in_row0 >= 0 && in_col0 >= 0 && in_row0 + tile_rows <= H &&
                                 in_col0 + tile_cols <= W;
        for (int base = 0; base < total; base += CONV_LOAD_BATCH * threads) {
            conv_acc_t value[CONV_LOAD_BATCH];
            int slot[CONV_LOAD_BATCH];  // shared index, or −1 past the tile's end
#pragma unroll
            for (int j = 0; j < CONV_LOAD_BATCH; ++j) {
                slot[j] = -1;
                if (base + j * threads + tid < total) {
                    const i64 gr = in_row0 + r;
                    const i64 gc = in_col0 + c;
                    value[j] = tile_inside ? to_acc(img[gr * W + gc])
                                           : conv_fetch(img, H, W, gr, gc, padding);
                    slot[j] = r * stride + c;
                }
                c += step_c;
                r += step_r;
                if (c >= tile_cols) {
                    c -= tile_cols;
                    r += 1;
                }
            }
#pragma unroll
            for (int j = 0; j < CONV_LOAD_BATCH; ++j) {
                if (slot[j] >= 0) tile[slot[j]] = value[j];
            }
        }
    }
    if (tid < taps) filter_s[tid] = first_tap;
    for (int t = tid + threads; t < taps; t += threads) {  // K² > threads: 8 × 8 blocks, K ≥ 9
        filter_s[t] = to_acc(filt[conv_filter_index(t / K, t % K, K, flip)]);
    }
    __syncthreads();

    // Each thread: output column tx, output rows ty·R … ty·R + R − 1 of the tile.
    const int tx = threadIdx.x;
    const int row_base = threadIdx.y * R;
    const conv_acc_t* column = tile + row_base * stride + tx;
    conv_acc_t acc[R];
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = (conv_acc_t)0;

    if constexpr (KC > 0 && KC <= CONV_REG_FILTER_MAX_K) {
        // Filter in registers: everything unrolled, so every filter index
        // is a compile-time constant.
        conv_acc_t w[KC * KC];
#pragma unroll
        for (int t = 0; t < KC * KC; ++t) w[t] = filter_s[t];
#pragma unroll
        for (int u = 0; u < KC + R - 1; ++u) conv_tiled_add_row<KC, R>(acc, column + u * stride, u, w);
    } else if constexpr (KC > 0) {
        // Filter in shared memory (broadcast reads); the row loop is kept
        // rolled so the compiler does not hoist every row's loads at once
        // (register spills); the `fu` tests are uniform across the block.
#pragma unroll 1
        for (int u = 0; u < KC + R - 1; ++u) conv_tiled_add_row<KC, R>(acc, column + u * stride, u, filter_s);
    } else {
        // Run-time K (large filters): the same order of work, loops not
        // unrolled over K. The `fu` test is uniform across the block.
        for (int u = 0; u < K + R - 1; ++u) {
            const conv_acc_t* tile_row = column + u * stride;
            for (int v = 0; v < K; ++v) {
                const conv_acc_t x = tile_row[v];
#pragma unroll
                for (int i = 0; i < R; ++i) {
                    const int fu = u - i;
                    if (fu >= 0 && fu < K) acc[i] = conv_mul_add(acc[i], x, filter_s[fu * K + v]);
                }
            }
        }
    }

    const i64 col = out_col0 + tx;
    if (col < OW) {
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const i64 row = out_row0 + row_base + i;
            if (row < OH) out[row * OW + col] = from_acc<conv_t>(acc[i]);
        }
    }
}
