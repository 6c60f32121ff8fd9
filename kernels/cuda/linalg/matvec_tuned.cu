// matvec_tuned.cu — the fast matvec kernels (MatvecAlgorithm::Tuned).
//
// Tuning constants come from the host as #defines (crates/linalg/src/
// matvec_tuned.rs, the TUNED table):
//   MATVEC_N_BLOCK   threads per block of the A·x kernel (a multiple of 32)
//   MATVEC_T_ROWS    block rows (warps) of the Aᵀ·x kernel; the block is 32 × MATVEC_T_ROWS
// and as template parameters of the entries (one entry per variant):
//   UNROLL           matrix loads each thread issues before using them (4 or 8)
//   STREAM           whether matrix loads carry the evict-first streaming hint
// Every variant sums in the same order, so all give the same bits.
//
// Sums run in acc_t<T> (f32 for f16 and bf16, matvec_common.cu): partial
// sums, shuffles and shared-memory folds stay in it, and each output is
// rounded once, when it is stored into y. The entries take y and a
// `partial` buffer of accumulators: a kernel whose grid has one part (one
// column chunk, one row slab) writes y and never touches `partial` (the
// host passes a null pointer); with more parts it writes `partial` only.
//
// ---------------------------------------------------------------------------
// y = A·x: matvec_tuned_n. A group of `tpr` = 2^tpr_log2 consecutive threads
// (1 to MATVEC_N_BLOCK; the host picks it from cols) owns one row; a block
// holds MATVEC_N_BLOCK / tpr groups, so rows are consecutive in a block.
// The row is read in 16-byte vectors (vec16<T>: 4 f32 or i32, 2 f64, 8 f16
// or bf16): the group's threads take vectors v, v + tpr, ... so a warp reads
// 512 contiguous bytes per step (coalesced). UNROLL vectors (4 or 8, a template parameter the
// host picks from the tuning) are loaded before they are used, so each
// thread keeps UNROLL independent 16-byte loads in flight. With STREAM the
// matrix loads carry the cache-streaming hint (ld.global.cs: evict first),
// so the 1 GiB stream of A does not evict x from L1/L2.
//
// Alignment: a row starts on a 16-byte boundary only if A's base and
// cols·sizeof(T) allow it. Each row therefore peels a head of at most
// lanes−1 elements up to the first 16-byte boundary, reads the body in
// vectors and finishes a tail of fewer than `lanes` elements with scalar
// loads. x is read in vectors when x + head is 16-byte aligned (a per-row,
// group-uniform test), else by scalar loads (`gather`; those hit L1).
//
// The group's partial sums combine with an xor butterfly of warp shuffles
// (all lanes end with the same bits); groups wider than a warp then add
// their warps' sums through shared memory in warp order. Deterministic.
//
// Short, wide matrices (too few rows to fill the GPU) are also split into
// column chunks (grid z): each chunk's partial row sums go to
// partial[chunk·rows + row] and matvec_tuned_t_reduce adds the chunks in
// order (as for Aᵀ·x below). With one chunk the kernel writes y directly.
//
// Work rows·cols multiply-adds; steps ⌈cols/tpr⌉ per thread plus log2(tpr).
// Bytes: A once (rows·cols·sizeof(T)), x once per row group (L1/L2 hits
// after the first), y once (plus 2·chunks·rows partials when split). One
// launch, two when split. Shared memory MATVEC_N_BLOCK/32 elements
// (static). No bank conflicts (one word per warp). Not in place.
//
// ---------------------------------------------------------------------------
// y = Aᵀ·x: matvec_tuned_t_partial + matvec_tuned_t_reduce, column-blocked.
// Block (32, MATVEC_T_ROWS) owns a strip of 32·L columns (L = vector lanes
// when every row start is 16-byte aligned, else 1) and a slab of
// `slab_rows` consecutive rows (grid x = strips, grid y = slabs). Thread
// (tx, ty) reads columns [32·L·strip + tx·L, +L) of rows ty, ty + ROWS, ...
// of the slab: each warp reads one row's 32·L contiguous elements per step
// (coalesced), UNROLL rows' loads in flight per thread, x[r] is a broadcast.
// Partial y stays in registers (L per
// thread); the block's MATVEC_T_ROWS partials fold through shared memory in
// row order, and the slab's result goes to partial[slab·cols + c].
//
// Combining slabs: atomicAdd into y would make float results depend on
// timing. Instead a second kernel sums the `slabs` partial rows of each
// column in slab order (deterministic). With one slab the first kernel
// writes y directly and the second is skipped.
//
// Work rows·cols multiply-adds. Bytes: A once, x once per strip (cached),
// partials slabs·cols·sizeof(T) written and read again (≈ 0.2 % of A at
// 16384², the host chooses slabs), y once. One or two launches. Shared memory
// MATVEC_T_ROWS·32·L elements: the fold's stores hit L-way bank conflicts
// (stride L words) once per block, negligible. Not in place.
#pragma once

template <typename T>
__device__ __forceinline__ T butterfly_sum(T v, u32 width) {  // T: an accumulator type
    for (u32 offset = width >> 1; offset > 0; offset >>= 1)
        v = wrapping_add(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Loads of the matrix: plain, or with the cache-streaming hint when STREAM
// (A is read exactly once; x is the data worth keeping in L1 and L2).
template <typename T, bool STREAM>
__device__ __forceinline__ typename vec16<T>::type load_matrix_vec(const T* p) {
    if constexpr (STREAM) return vec16<T>::load_streaming(p);
    else return vec16<T>::load(p);
}
template <typename T, bool STREAM>
__device__ __forceinline__ T load_matrix(const T* p) {
    if constexpr (STREAM) return load_streaming(p);
    else return *p;
}

// One thread's share of a row body's dot product with x: vectors v = lane,
// lane + tpr, ... of the 16-byte-aligned `abody` (`body` vectors), UNROLL
// matrix loads issued before the first is used. x is read in vectors when
// X_VECTOR (xbody 16-byte aligned), else gathered from scalars. The sum
// runs over v in increasing order whatever UNROLL and STREAM are, so every
// variant gives the same bits.
template <typename T, bool X_VECTOR, u32 UNROLL, bool STREAM>
__device__ __forceinline__ acc_t<T> body_dot(const T* __restrict__ abody,
                                             const T* __restrict__ xbody, u64 body, u32 lane,
                                             u32 tpr, acc_t<T> sum) {
    typedef vec16<T> V;
    constexpr u32 L = V::lanes;
    u64 v = lane;
    for (; v + (UNROLL - 1) * (u64)tpr < body; v += UNROLL * (u64)tpr) {
        typename V::type av[UNROLL];
        typename V::type xv[UNROLL];
#pragma unroll
        for (u32 k = 0; k < UNROLL; ++k) av[k] = load_matrix_vec<T, STREAM>(abody + (v + k * (u64)tpr) * L);
#pragma unroll
        for (u32 k = 0; k < UNROLL; ++k)
            xv[k] = X_VECTOR ? V::load(xbody + (v + k * (u64)tpr) * L) : V::gather(xbody + (v + k * (u64)tpr) * L);
#pragma unroll
        for (u32 k = 0; k < UNROLL; ++k) sum = V::dot(av[k], xv[k], sum);
    }
    for (; v < body; v += tpr) {
        const typename V::type a0 = load_matrix_vec<T, STREAM>(abody + v * L);
        const typename V::type x0 = X_VECTOR ? V::load(xbody + v * L) : V::gather(xbody + v * L);
        sum = V::dot(a0, x0, sum);
    }
    return sum;
}

template <typename T, u32 UNROLL, bool STREAM>
__device__ void matvec_tuned_n(const T* __restrict__ a, const T* __restrict__ x,
                               T* __restrict__ y, acc_t<T>* __restrict__ partial, u64 rows,
                               u64 cols, u32 tpr_log2, u64 chunk_cols) {
    typedef acc_t<T> A;
    constexpr u32 L = vec16<T>::lanes;
    __shared__ A warp_sums[MATVEC_N_BLOCK / 32];
    const u32 tpr = 1u << tpr_log2;
    const u32 lane = threadIdx.x & (tpr - 1);           // thread within its row group
    const u32 groups = MATVEC_N_BLOCK >> tpr_log2;      // rows per block
    const u64 row = linear_block_index() * groups + (threadIdx.x >> tpr_log2);
    // Column chunk blockIdx.z: columns [c_begin, c_end) of the row. With
    // one chunk (chunk_cols = cols) the row's result goes to y; else
    // partial[chunk·rows + row] holds the chunk's sum for the reduce kernel.
    const u64 chunk = blockIdx.z;
    const u64 chunks = gridDim.z;
    const u64 c_begin = chunk * chunk_cols;
    const u64 c_end = c_begin + chunk_cols < cols ? c_begin + chunk_cols : cols;
    A sum = A(0);
    // No early return: every lane must reach the shuffles and the barrier.
    if (row < rows && c_begin < c_end) {
        const u64 len = c_end - c_begin;
        const T* arow = a + row * cols + c_begin;
        const T* xs = x + c_begin;
        // Elements before the first 16-byte boundary (pointers are at least
        // sizeof(T)-aligned, so this is a whole number of elements).
        const u64 misalign = ((u64)arow & 15) / sizeof(T);
        const u64 head = misalign == 0 ? 0 : ((u64)L - misalign < len ? (u64)L - misalign : len);
        for (u64 c = lane; c < head; c += tpr) sum = mul_add(arow[c], xs[c], sum);
        const u64 body = (len - head) / L;
        const T* abody = arow + head;
        const T* xbody = xs + head;
        if (((u64)xbody & 15) == 0)
            sum = body_dot<T, true, UNROLL, STREAM>(abody, xbody, body, lane, tpr, sum);
        else
            sum = body_dot<T, false, UNROLL, STREAM>(abody, xbody, body, lane, tpr, sum);
        for (u64 c = head + body * L + lane; c < len; c += tpr) sum = mul_add(arow[c], xs[c], sum);
    }
    sum = butterfly_sum(sum, tpr < 32 ? tpr : 32u);
    if (tpr <= 32) {  // tpr is a kernel argument: uniform over the block
        if (lane == 0 && row < rows) matvec_store(y, partial, chunk, chunks, rows, row, sum);
        return;
    }
    const u32 warp = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (lane == 0 && row < rows) {
        // Lane 0 of a group is lane 0 of the group's first warp.
        A total = warp_sums[warp];
        for (u32 w = 1; w < (tpr >> 5); ++w) total = wrapping_add(total, warp_sums[warp + w]);
        matvec_store(y, partial, chunk, chunks, rows, row, total);
    }
}

template <typename T, bool VECTOR, u32 UNROLL, bool STREAM>
__device__ void matvec_tuned_t_partial(const T* __restrict__ a, const T* __restrict__ x,
                                       T* __restrict__ y, acc_t<T>* __restrict__ partial,
                                       u64 rows, u64 cols, u64 slab_rows) {
    typedef vec16<T> V;
    typedef acc_t<T> A;
    constexpr u32 L = VECTOR ? V::lanes : 1;
    constexpr u32 STRIP = 32 * L;                       // columns per block
    __shared__ A fold[MATVEC_T_ROWS][STRIP];
    const u64 strip_col = (u64)blockIdx.x * STRIP;
    const u64 slab = blockIdx.y;
    const u64 slabs = gridDim.y;
    const u64 c0 = strip_col + (u64)threadIdx.x * L;
    const u64 r_begin = slab * slab_rows;
    const u64 r_end = r_begin + slab_rows < rows ? r_begin + slab_rows : rows;
    A acc[L];
#pragma unroll
    for (u32 k = 0; k < L; ++k) acc[k] = A(0);
    // With VECTOR the host guarantees cols % L == 0 and 16-byte-aligned
    // rows, so c0 < cols means all L columns exist.
    if (c0 < cols) {
        const T* acol = a + c0;
        u64 r = r_begin + threadIdx.y;
        constexpr u32 STEP = MATVEC_T_ROWS;
        // UNROLL rows' loads in flight, then their multiply-adds in row
        // order (the same order, so the same bits, for every UNROLL).
        for (; r + (UNROLL - 1) * STEP < r_end; r += UNROLL * STEP) {
            if constexpr (VECTOR) {
                typename V::type av[UNROLL];
#pragma unroll
                for (u32 k = 0; k < UNROLL; ++k) av[k] = load_matrix_vec<T, STREAM>(acol + (r + k * STEP) * cols);
#pragma unroll
                for (u32 k = 0; k < UNROLL; ++k) V::axpy(av[k], x[r + k * STEP], acc);
            } else {
                T av[UNROLL];
#pragma unroll
                for (u32 k = 0; k < UNROLL; ++k) av[k] = load_matrix<T, STREAM>(acol + (r + k * STEP) * cols);
#pragma unroll
                for (u32 k = 0; k < UNROLL; ++k) acc[0] = mul_add(av[k], x[r + k * STEP], acc[0]);
            }
        }
        for (; r < r_end; r += STEP) {
            if constexpr (VECTOR) {
                V::axpy(load_matrix_vec<T, STREAM>(acol + r * cols), x[r], acc);
            } else {
                acc[0] = mul_add(load_matrix<T, STREAM>(acol + r * cols), x[r], acc[0]);
            }
        }
    }
#pragma unroll
    for (u32 k = 0; k < L; ++k) fold[threadIdx.y][threadIdx.x * L + k] = acc[k];
    __syncthreads();
    // Fold the block's MATVEC_T_ROWS partial rows, in row order.
    const u32 t = threadIdx.y * 32 + threadIdx.x;
    for (u32 j = t; j < STRIP; j += 32 * MATVEC_T_ROWS) {
        const u64 c = strip_col + j;
        if (c < cols) {
            A s = fold[0][j];
            for (u32 i = 1; i < MATVEC_T_ROWS; ++i) s = wrapping_add(s, fold[i][j]);
            matvec_store(y, partial, slab, slabs, cols, c, s);
        }
    }
}

template <typename T>
__device__ void matvec_tuned_t_reduce(const acc_t<T>* __restrict__ partial, T* __restrict__ y,
                                      u64 cols, u32 slabs) {
    const u64 c = global_thread_index();
    if (c >= cols) return;
    acc_t<T> s = partial[c];
    for (u32 k = 1; k < slabs; ++k) s = wrapping_add(s, partial[(u64)k * cols + c]);
    y[c] = from_acc<T>(s);
}
