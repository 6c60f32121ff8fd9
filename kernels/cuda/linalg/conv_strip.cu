// conv_strip.cu — TiledHalo's strip kernel: 2-D cross-correlation /
// convolution of an H × W image with a K × K filter (K = 1 … 7, compile-time),
// one warp per vertical strip, a sliding window of rows in registers.
//
// The host (crates/linalg/src/conv/module.rs) prepends common.cuh, then
// `typedef <element> conv_t;` and `conv_acc_t`, the tuning #defines
// (CONV_STRIP_VEC, CONV_STRIP_PREFETCH, CONV_STRIP_STORES), then conv.cu (for conv_map_coord,
// conv_mul_add and conv_filter_index; its tuning #defines are set too), then
// this file, then the extern "C" entries. It computes exactly what conv.cu's
// kernels compute (same definition, anchor `pad`, padding modes, flip), and
// adds the products of every output in the same order (filter row u
// ascending, then column v), so its results equal TiledHalo's block kernel
// bit for bit.
//
// Geometry. A warp reads 32·VEC consecutive input columns (VEC =
// CONV_STRIP_VEC elements per lane, 16 bytes for 4-byte types) of each input
// row it walks down, and owns `strip_rows` (S) consecutive output rows. Lane
// t holds input columns c0 + t·VEC … c0 + t·VEC + VEC − 1 and computes the
// VEC outputs whose windows start at those columns: output columns
// c0 + pad + t·VEC + q. The K − 1 columns right of a lane's chunk come from
// the next NX = ⌈(K−1)/VEC⌉ lanes by shuffles, so the last NX lanes cannot
// finish their outputs: they only supply columns, and a strip's outputs are
// the first OUTW = (32 − NX)·VEC columns (strips overlap by NX chunks, which
// the neighbouring strip's warp reads too: mostly L2 hits). Strips start at
// input column col_base + s·OUTW, where col_base = −(pad rounded up to a
// multiple of VEC), so every lane's chunk is VEC-aligned in the row: when
// the image rows are aligned (W % VEC == 0 and a VEC-element-aligned base,
// the host's `aligned` flag) each chunk is one vector load.
//
// Walking down: input row m (0 ≤ m < rows + K − 1) adds its horizontal dot
// products with filter row u into the accumulator of output row m − u, for
// every u; output row m − K + 1 is then complete, is stored and its
// accumulator reset (a ring of K accumulator rows, indices fixed at compile
// time by unrolling the walk by K). So each image row is loaded once per
// strip (plus K − 1 halo rows per strip and the overlap chunks), and nothing
// goes through shared memory except, optionally, the outputs (below).
// CONV_STRIP_TRIM 1: the first K − 1 and last K − 1 input rows of a piece
// skip the filter rows whose output row lies outside the piece (uniform
// tests), so the walk does S·K²·VEC multiply-adds instead of
// (S + K − 1)·K²·VEC; 0: every row meets every filter row and the sums of
// rows outside the piece are discarded unstored.
// CONV_STRIP_PREFETCH (D) rows are loaded ahead of the one being used, so
// each lane keeps D vector loads in flight. A warp whose whole strip lies
// inside the image with aligned chunks takes the interior walk (plain vector
// loads through a pointer stepped down one row at a time, no edge logic);
// others take the edge walk, whose out-of-image and unaligned samples go
// through the out-of-line conv_strip_fetch. Lanes whose outputs lie inside
// the row store through a pointer stepped the same way.
//
// Stores (CONV_STRIP_STORES). Lane t's VEC outputs are consecutive, but
// output rows are generally not vector-aligned (Valid: OW = W − K + 1).
// 0 (direct): VEC scalar stores per lane at a stride of VEC elements (each
// warp store instruction touches VEC times as many sectors as it fills).
// 1 (vector): one VEC-wide store per lane where the outputs' address is
// aligned to it, else two half-width stores where aligned to half, else
// scalar stores; the alignment is the same for every lane of a row (their
// columns differ by multiples of VEC), so a whole row goes out in 1, 2 or
// VEC instructions per lane, fully using the sectors it touches. 2
// (staged): the warp writes its 32·VEC outputs to its own slice of shared
// memory (one vector store per lane) and stores them back in VEC fully
// coalesced rounds of 32 consecutive elements.
//
// Work: K² multiply-adds per output (plus those of the NX supplying lanes
// and of the ≤ VEC − 1 surplus outputs at a strip's left edge and the last
// strip's right edge, which are not stored: a fraction ≈ NX/32 more).
// Steps: (S + K − 1)·K²·VEC per warp (S·K²·VEC trimmed). Global memory: reads
// (S + K − 1)/S · 32/(32 − NX) · H·W image samples (the overlap chunks are
// read by two warps of one block at about the same time: L1/L2 hits; the
// K − 1 halo rows per strip may come from DRAM again), writes each output
// once: DRAM traffic ≈ (1 + (K−1)/S)·H·W + OH·OW elements, plus the filter
// (K² loads per warp, L1/L2 hits). Launches: 1. Shared memory per block: none, or with
// CONV_STRIP_STAGE 32·VEC elements per warp (one vector store per lane: the
// minimum number of wavefronts; the read-back is 32 consecutive words:
// conflict-free). Deterministic (fixed-order sums). Not in place.
//
// Warps are independent: no __syncthreads, and a warp with nothing to do
// leaves as a whole (every condition below that ends or skips work is
// uniform across the warp), so the shuffles always have all 32 lanes.
#pragma once

#if !defined(CONV_STRIP_VEC) || !defined(CONV_STRIP_PREFETCH) || !defined(CONV_STRIP_STORES) || \
    !defined(CONV_STRIP_TRIM)
#error "conv_strip.cu needs CONV_STRIP_VEC, _PREFETCH, _STORES and _TRIM from the host"
#endif
#define CONV_STRIP_STAGE (CONV_STRIP_STORES == 2)

// The strip kernel loads, shuffles and adds conv_t: it serves the element
// types that accumulate in themselves (conv_acc_t is conv_t), and the host
// refuses a strip policy for the others (f16, bf16).
static_assert(acc_is_self<conv_t>,
              "the strip kernel needs an element type that accumulates in itself");

// A VEC-element chunk as one register-sized load: 4, 8 or 16 bytes.
template <int BYTES> struct conv_strip_raw;
template <> struct conv_strip_raw<4> { typedef u32 type; };
template <> struct conv_strip_raw<8> { typedef uint2 type; };
template <> struct conv_strip_raw<16> { typedef uint4 type; };

template <int VEC> union conv_strip_chunk {
    typename conv_strip_raw<VEC * (int)sizeof(conv_t)>::type raw;
    conv_t e[VEC];
};

// image(row, col) with padding applied: the edge path, kept out of line so
// the unrolled walk stays small (it is taken only by chunks that overlap the
// image's edges or rows that are not vector-aligned).
__device__ __noinline__ conv_t conv_strip_fetch(const conv_t* __restrict__ img, i64 H, i64 W,
                                                i64 row, i64 col, int padding) {
    return conv_fetch(img, H, W, row, col, padding);
}

// Loads input row `row`, columns col … col + VEC − 1 into x. Interior
// walks (EDGE false) know the chunk lies inside the image and is aligned: one
// vector load. Edge walks map rows and columns by the padding mode (or read
// zeros), with one vector load where `vector_ok` (the columns inside the
// image, aligned) and the row is inside the image.
template <int VEC, bool EDGE>
__device__ __forceinline__ void conv_strip_load(const conv_t* __restrict__ img, i64 H, i64 W,
                                                i64 row, i64 col, int padding, bool vector_ok,
                                                conv_t (&x)[VEC]) {
    if (!EDGE || (vector_ok && row >= 0 && row < H)) {
        typedef typename conv_strip_raw<VEC * (int)sizeof(conv_t)>::type raw_t;
        conv_strip_chunk<VEC> chunk;
        chunk.raw = *reinterpret_cast<const raw_t*>(img + row * W + col);
#pragma unroll
        for (int q = 0; q < VEC; ++q) x[q] = chunk.e[q];
    } else {
#pragma unroll
        for (int q = 0; q < VEC; ++q) x[q] = conv_strip_fetch(img, H, W, row, col + q, padding);
    }
}

// Stores lane's VEC outputs y at dst[0 … VEC − 1], all inside the output row
// (the caller checked), with the widest stores dst's alignment allows
// (CONV_STRIP_STORES 1, see the file header).
template <int VEC>
__device__ __forceinline__ void conv_strip_store_whole(conv_t* __restrict__ dst,
                                                       const conv_t (&y)[VEC]) {
    constexpr int BYTES = VEC * (int)sizeof(conv_t);
    union {
        typename conv_strip_raw<BYTES>::type whole;
        uint2 half[BYTES >= 16 ? 2 : 1];
        conv_t e[VEC];
    } chunk;
    const unsigned addr = (unsigned)reinterpret_cast<size_t>(dst);  // the low bits suffice
    if (BYTES > (int)sizeof(conv_t) && addr % BYTES == 0) {
#pragma unroll
        for (int q = 0; q < VEC; ++q) chunk.e[q] = y[q];
        *reinterpret_cast<typename conv_strip_raw<BYTES>::type*>(dst) = chunk.whole;
        return;
    }
    if (BYTES == 16 && addr % 8 == 0) {
#pragma unroll
        for (int q = 0; q < VEC; ++q) chunk.e[q] = y[q];
        reinterpret_cast<uint2*>(dst)[0] = chunk.half[0];
        reinterpret_cast<uint2*>(dst)[BYTES >= 16 ? 1 : 0] = chunk.half[BYTES >= 16 ? 1 : 0];
        return;
    }
#pragma unroll
    for (int q = 0; q < VEC; ++q) dst[q] = y[q];
}

// Stores those of lane's VEC outputs y at out_row[out_col … out_col + VEC − 1]
// that lie inside 0 … OW − 1, one element at a time (a lane whose outputs
// cross the row's ends).
template <int VEC>
__device__ __forceinline__ void conv_strip_store_clipped(conv_t* __restrict__ out_row, i64 out_col,
                                                         i64 OW, const conv_t (&y)[VEC]) {
#pragma unroll
    for (int q = 0; q < VEC; ++q) {
        const i64 j = out_col + q;
        if (j >= 0 && j < OW) out_row[j] = y[q];
    }
}

// One warp's walk down its strip (see the file header). `in_row0`: the
// first input row, `in_rows` = output rows + K − 1; `strip_col`: the first
// input column of the strip; `col`: this lane's chunk.
template <int KC, bool EDGE>
__device__ __forceinline__ void conv_strip_walk(const conv_t* __restrict__ img,
                                                const conv_t (&w)[KC * KC],
                                                conv_t* __restrict__ out, i64 H, i64 W, i64 OW,
                                                int pad, int padding, i64 out_row0,
                                                i64 in_row0, int in_rows, i64 strip_col, i64 col,
                                                bool lane_vector) {
    constexpr int VEC = CONV_STRIP_VEC;
    constexpr int D = CONV_STRIP_PREFETCH;
    typedef typename conv_strip_raw<VEC * (int)sizeof(conv_t)>::type raw_t;
    constexpr int SW = 32 * VEC;                  // input columns a warp reads
    constexpr int NX = (KC - 1 + VEC - 1) / VEC;  // lanes that only supply columns
    constexpr int OUTW = (32 - NX) * VEC;         // output columns per strip
    constexpr int WIN = VEC + KC - 1;             // columns a lane's outputs read

    const int lane = threadIdx.x;
    const int out_rows = in_rows - (KC - 1);                // output rows of the piece
    const i64 out_col = strip_col + pad + (i64)lane * VEC;  // output column of x[0]'s window
    const bool lane_stores = lane < 32 - NX;
#if !CONV_STRIP_STAGE
    // A lane whose VEC outputs all lie inside the row stores them without
    // per-element tests, through a pointer stepped down one output row per
    // stored row (no 64-bit row products in the walk); lanes at the row's
    // ends clip element by element (a lane outside the row never
    // dereferences its pointer).
    const bool lane_whole = lane_stores && out_col >= 0 && out_col + VEC <= OW;
    conv_t* out_next = out + (out_row0 * OW + out_col);
#endif
    // Interior walks load through a pointer stepped down one input row per
    // row (edge walks map each row and column, conv_strip_load).
    const conv_t* in_next = EDGE ? img : img + (in_row0 + D) * W + col;

    // D rows in flight: pre[0] is the next row to use.
    conv_t pre[D][VEC];
#pragma unroll
    for (int p = 0; p < D; ++p) {
        if (p < in_rows) {
            conv_strip_load<VEC, EDGE>(img, H, W, in_row0 + p, col, padding, lane_vector, pre[p]);
        } else {
#pragma unroll
            for (int q = 0; q < VEC; ++q) pre[p][q] = (conv_t)0;
        }
    }

    conv_t acc[KC][VEC];
#pragma unroll
    for (int s = 0; s < KC; ++s)
#pragma unroll
        for (int q = 0; q < VEC; ++q) acc[s][q] = (conv_t)0;

#if CONV_STRIP_STAGE
    extern __shared__ __align__(16) unsigned char conv_strip_smem[];
    conv_t* stage = reinterpret_cast<conv_t*>(conv_strip_smem) + threadIdx.y * SW;
#endif

    // The walk, unrolled by K so that the accumulator ring's indices are
    // compile-time constants (m ≡ phase mod K).
    for (int m_base = 0; m_base < in_rows; m_base += KC) {
#pragma unroll
        for (int phase = 0; phase < KC; ++phase) {
            const int m = m_base + phase;
            if (m >= in_rows) break;  // uniform

            // Take row m, start loading row m + D.
            conv_t x[VEC];
#pragma unroll
            for (int q = 0; q < VEC; ++q) x[q] = pre[0][q];
#pragma unroll
            for (int p = 0; p + 1 < D; ++p) {
#pragma unroll
                for (int q = 0; q < VEC; ++q) pre[p][q] = pre[p + 1][q];
            }
            if (m + D < in_rows) {
                if (EDGE) {
                    conv_strip_load<VEC, true>(img, H, W, in_row0 + m + D, col, padding,
                                               lane_vector, pre[D - 1]);
                } else {
                    conv_strip_chunk<VEC> chunk;
                    chunk.raw = *reinterpret_cast<const raw_t*>(in_next);
                    in_next += W;
#pragma unroll
                    for (int q = 0; q < VEC; ++q) pre[D - 1][q] = chunk.e[q];
                }
            }

            // The window: x, then the K − 1 columns to its right. Column e
            // of the extension is element e % VEC of the chunk d = 1 + e / VEC
            // lanes to the right (d ≤ NX: the last NX lanes, which do not
            // store, get wrapped-around values).
            conv_t win[WIN];
#pragma unroll
            for (int q = 0; q < VEC; ++q) win[q] = x[q];
#pragma unroll
            for (int e = 0; e < KC - 1; ++e) {
                const int d = 1 + e / VEC;
                win[VEC + e] = __shfl_sync(0xffffffffu, x[e % VEC], (lane + d) & 31);
            }

            // Row m meets filter row u in output row m − u (ring slot
            // (phase − u) mod K). With CONV_STRIP_TRIM, output rows outside
            // the piece (m − u < 0 in the first K − 1 steps, m − u ≥
            // out_rows in the last K − 1) get no products: they are never stored, and at
            // K = 7 with pieces of 16 rows they are 27 % of the walk's
            // multiply-adds.
#pragma unroll
            for (int u = 0; u < KC; ++u) {
#if CONV_STRIP_TRIM
                if (m - u < 0 || m - u >= out_rows) continue;  // uniform
#endif
                const int slot = (phase - u + KC) % KC;
#pragma unroll
                for (int v = 0; v < KC; ++v) {
#pragma unroll
                    for (int q = 0; q < VEC; ++q)
                        acc[slot][q] = conv_mul_add(acc[slot][q], win[q + v], w[u * KC + v]);
                }
            }

            // Output row o = m − K + 1 is complete: store it (rows o < 0,
            // the first K − 1 steps, exist only as sums to discard). Its
            // slot then starts output row m + 1, which row m + 1 begins.
            const int o = m - (KC - 1);
            const int done = (phase + 1) % KC;  // compile-time once unrolled
            if (o >= 0) {  // uniform
#if CONV_STRIP_STAGE
                conv_t* out_row = out + (out_row0 + o) * OW;
                __syncwarp();  // the previous row's read-back is finished
                {
                    conv_strip_chunk<VEC> chunk;
#pragma unroll
                    for (int q = 0; q < VEC; ++q) chunk.e[q] = acc[done][q];
                    reinterpret_cast<raw_t*>(stage)[lane] = chunk.raw;
                }
                __syncwarp();
#pragma unroll
                for (int s = 0; s < VEC; ++s) {
                    const int idx = s * 32 + lane;
                    const i64 j = strip_col + pad + idx;
                    if (idx < OUTW && j >= 0 && j < OW) out_row[j] = stage[idx];
                }
#else
                if (lane_whole) {
#if CONV_STRIP_STORES == 1
                    conv_strip_store_whole<VEC>(out_next, acc[done]);
#else
#pragma unroll
                    for (int q = 0; q < VEC; ++q) out_next[q] = acc[done][q];
#endif
                } else if (lane_stores) {
                    conv_strip_store_clipped<VEC>(out + (out_row0 + o) * OW, out_col, OW,
                                                  acc[done]);
                }
                out_next += OW;
#endif
            }
#pragma unroll
            for (int q = 0; q < VEC; ++q) acc[done][q] = (conv_t)0;
        }
    }
}

// One piece: the strip starting at column strip `strip`, output rows
// out_row0 … out_row0 + strip_rows − 1 (clipped to OH). Uniform across the
// warp.
template <int KC>
__device__ __forceinline__ void conv_strip_piece(const conv_t* __restrict__ img,
                                                 const conv_t (&w)[KC * KC],
                                                 conv_t* __restrict__ out, i64 H, i64 W, i64 OH,
                                                 i64 OW, int pad, int padding, int strip_rows,
                                                 int aligned, i64 col_base, i64 strip,
                                                 i64 out_row0) {
    constexpr int VEC = CONV_STRIP_VEC;
    constexpr int NX = (KC - 1 + VEC - 1) / VEC;  // lanes that only supply columns
    constexpr int OUTW = (32 - NX) * VEC;         // output columns per strip

    const int lane = threadIdx.x;  // blockDim.x == 32
    const int rows = (int)min((i64)strip_rows, OH - out_row0);  // output rows of this piece
    const int in_rows = rows + KC - 1;                           // input rows it walks
    const i64 in_row0 = out_row0 - pad;

    const i64 strip_col = col_base + strip * OUTW;  // first input column of the strip
    const i64 col = strip_col + (i64)lane * VEC;     // this lane's chunk
    const bool lane_vector = aligned && col >= 0 && col + VEC <= W;
    // Interior pieces (every row inside the image, every lane's chunk inside
    // and aligned) take the walk without edge logic. Uniform across the warp.
    const bool interior =
        __all_sync(0xffffffffu, lane_vector) && in_row0 >= 0 && in_row0 + in_rows <= H;
    if (interior) {
        conv_strip_walk<KC, false>(img, w, out, H, W, OW, pad, padding, out_row0, in_row0,
                                   in_rows, strip_col, col, lane_vector);
    } else {
        conv_strip_walk<KC, true>(img, w, out, H, W, OW, pad, padding, out_row0, in_row0,
                                  in_rows, strip_col, col, lane_vector);
    }
}

// The entry's body. Pieces are `strip_rows` output rows of one strip.
// claimed 0: warp (blockIdx.x · warps + threadIdx.y) owns strip that, block
// row r (grid y, spilling into z) owns piece r of it: one piece per warp.
// claimed 1: the grid is as many warps as fit at once, and each warp claims
// pieces from the call's counter (single_pass/tile_status.cuh's
// epoch-tagged ticket state) until none is left: piece t is row band
// t / col_strips, strip t % col_strips, so the pieces in flight form a band
// of rows across the whole image (the halo rows a piece shares with the one
// above it are read at about the same time: L2 hits), and a slow piece (an
// edge, a busy memory channel) delays only its own warp's next claim.
template <int KC>
__device__ __forceinline__ void conv_strip(const conv_t* __restrict__ img,
                                           const conv_t* __restrict__ filt,
                                           conv_t* __restrict__ out, i64 H, i64 W, i64 OH, i64 OW,
                                           int pad, int padding, int flip, int strip_rows,
                                           int aligned, i64 col_base, i64 col_strips, int claimed,
                                           u64* state, u32 epoch) {
    lookback_prepare_next_call(state, epoch);
    const u64 pieces = (u64)((OH + strip_rows - 1) / strip_rows) * (u64)col_strips;
    i64 strip = (i64)blockIdx.x * blockDim.y + threadIdx.y;
    i64 out_row0 = (i64)block_row_2d() * strip_rows;
    // Whole warps leave (strip and out_row0 are uniform across the warp).
    if (!claimed && (strip >= col_strips || out_row0 >= OH)) return;

    // The filter, rotated when flipping, in registers once per warp (every
    // lane reads the same K² addresses: broadcasts from L1).
    conv_t w[KC * KC];
#pragma unroll
    for (int t = 0; t < KC * KC; ++t) w[t] = filt[conv_filter_index(t / KC, t % KC, KC, flip)];

    for (;;) {
        if (claimed) {  // uniform
            u64 t = 0;
            if (threadIdx.x == 0) t = lookback_next_tile(state, epoch);
            t = __shfl_sync(0xffffffffu, t, 0);
            if (t >= pieces) return;
            const u64 band = t / (u64)col_strips;
            strip = (i64)(t - band * (u64)col_strips);
            out_row0 = (i64)band * strip_rows;
        }
        conv_strip_piece<KC>(img, w, out, H, W, OH, OW, pad, padding, strip_rows, aligned,
                             col_base, strip, out_row0);
        if (!claimed) return;
    }
}
