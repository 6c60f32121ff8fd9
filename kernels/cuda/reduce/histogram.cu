// reduce/histogram.cu — histogram kernels (crate `reduce`, module `histogram`).
//
// Computes counts[bin(x)] += 1 for every item x of `in` whose bin exists
// (values outside the bins and NaN are counted nowhere). Work O(n) plus
// O(bins) per block for the merge; one launch of a persistent grid, each
// block striding over chunks of BLOCK × UNROLL 16-byte vectors. Global bytes:
// n·sizeof(T) read once, plus the count updates (at most one atomic per
// non-zero stored bin per block for the privatised modes). Integer counts:
// deterministic.
//
// Bin functors (host computes their parameters, crates/reduce/src/histogram):
//   even_binner<T> integers: off = x − lower in 64 bits, q = ⌊off·bins/range⌋
//     exactly, by a 64-bit reciprocal (`magic` = ⌊(2^64−1)/range⌋, q off by
//     at most one, corrected with the remainder).
//   even_binner<T> floats: ⌊(x − lower) · scale⌋ in T with round-to-nearest
//     intrinsics (no contraction), clamped to bins − 1 (top-edge rounding).
//   range_binner<T>: binary search in bins + 1 strictly increasing
//     boundaries, staged in shared memory when the host says they fit.
//
// Modes (the MODE template argument):
//   0 GLOBAL    one global atomicAdd per counted item (the lesson's first).
//   1 SHARED    u32 counts in shared memory, `copies` sub-histograms laid out
//               hist[bin·copies + lane % copies]: with 32 copies every lane
//               owns a bank, so no input (all items in one bin included)
//               makes shared atomics of one warp conflict. Merged at the end.
//   2 PACKED16  two 16-bit counts per shared word (65 536 bins in 128 KiB).
//               A thread whose increment takes a half from 0x7fff to 0x8000
//               moves 0x8000 to the global count and subtracts it; chunks of
//               fewer than 32 768 items per block between barriers keep every
//               half below 0x10000, so no carry ever crosses halves.
//   3 VALUES    1-byte inputs: count the 256 values (32 copies, as SHARED),
//               bin them only at the merge, one run of equal bins per atomic.
//
// Shared memory per block: SHARED stored·copies·4, PACKED16 ⌈bins/2⌉·4,
// VALUES 256·32·4 + 2·256·4, plus staged boundaries for ranges; the host
// sizes it (dynamic shared memory, opted in past 48 KiB by gpu-core).

#define HIST_NO_BIN 0xffffffffu

template <typename T> struct hist_is_float { static constexpr bool value = false; };
template <> struct hist_is_float<f32> { static constexpr bool value = true; };
template <> struct hist_is_float<f64> { static constexpr bool value = true; };

__device__ __forceinline__ f32 hist_sub_rn(f32 a, f32 b) { return __fsub_rn(a, b); }
__device__ __forceinline__ f64 hist_sub_rn(f64 a, f64 b) { return __dsub_rn(a, b); }
__device__ __forceinline__ f32 hist_mul_rn(f32 a, f32 b) { return __fmul_rn(a, b); }
__device__ __forceinline__ f64 hist_mul_rn(f64 a, f64 b) { return __dmul_rn(a, b); }

__device__ __forceinline__ void hist_atomic_add(u32* p, u32 v) { atomicAdd(p, v); }
__device__ __forceinline__ void hist_atomic_add(u64* p, u64 v) { atomicAdd(p, v); }

template <typename T, bool IS_FLOAT = hist_is_float<T>::value> struct even_binner;

// Integers (at most 32 bits): exact floor((x − lower)·bins / range).
template <typename T> struct even_binner<T, false> {
    T lower, upper;
    u32 bins;
    u64 range, magic;
    u32 shift;  // log2 of the bin width when a power of two, else 0xff
    __device__ __forceinline__ even_binner(u32 bins_, T lower_, T upper_, u64 range_, u64 magic_, T, u32 shift_)
        : lower(lower_), upper(upper_), bins(bins_), range(range_), magic(magic_), shift(shift_) {}
    __device__ __forceinline__ u32 operator()(T x) const {
        if (!(x >= lower && x < upper)) return HIST_NO_BIN;
        if (shift != 0xffu) {
            // Bins a power of two wide: floor(off / width) is a shift, in
            // 32 bits (off < range ≤ 2^32).
            return (u32)((u32)((i64)x - (i64)lower) >> shift);
        }
        const u64 off = (u64)((i64)x - (i64)lower);  // < range ≤ 2^32
        const u64 num = off * (u64)bins;             // < 2^48
        u64 q = __umul64hi(num, magic);              // q or q − 1
        if (num - q * range >= range) q += 1;
        return (u32)q;
    }
};

// Floats: floor((x − lower) · scale) in T, clamped to the top bin.
template <typename T> struct even_binner<T, true> {
    T lower, upper, scale;
    u32 bins;
    __device__ __forceinline__ even_binner(u32 bins_, T lower_, T upper_, u64, u64, T scale_, u32)
        : lower(lower_), upper(upper_), scale(scale_), bins(bins_) {}
    __device__ __forceinline__ u32 operator()(T x) const {
        if (!(x >= lower && x < upper)) return HIST_NO_BIN;  // NaN fails both
        const u32 bin = (u32)hist_mul_rn(hist_sub_rn(x, lower), scale);
        return bin < bins ? bin : bins - 1;
    }
};

// Bin k = [b[k], b[k+1]) of bins + 1 strictly increasing boundaries.
template <typename T> struct range_binner {
    const T* b;
    u32 bins;
    __device__ __forceinline__ u32 operator()(T x) const {
        if (!(x >= b[0] && x < b[bins])) return HIST_NO_BIN;
        u32 lo = 0, hi = bins;  // b[lo] <= x < b[hi]
        while (hi - lo > 1) {
            const u32 mid = (lo + hi) >> 1;
            if (x >= b[mid]) lo = mid; else hi = mid;
        }
        return lo;
    }
};

// Points a binner at boundaries staged in shared memory (ranges only).
template <typename T, bool F> __device__ __forceinline__ void binner_stage(even_binner<T, F>&, const T*) {}
template <typename T> __device__ __forceinline__ void binner_stage(range_binner<T>& binner, const T* staged) {
    binner.b = staged;
}

// The value of a byte in a 1-byte input type.
template <typename T> __device__ __forceinline__ T hist_byte_value(u32 v) { return (T)(u8)v; }

// Per-item work of each mode. `sh` is the block's shared counts.
template <int MODE, typename T, typename C, typename Binner> struct hist_counter {
    C* counts;
    u32* sh;
    Binner binner;
    u32 slot;  // lane % copies (SHARED, VALUES)
    u32 copies;
    __device__ __forceinline__ void add(T x) const {
        if (MODE == 3) {
            // The byte itself: no binning per item.
            atomicAdd(&sh[(u32)(u8)x * 32u + slot], 1u);
            return;
        }
        const u32 bin = binner(x);
        if (bin == HIST_NO_BIN) return;
        if (MODE == 0) {
            hist_atomic_add(&counts[bin], (C)1);
        } else if (MODE == 1) {
            atomicAdd(&sh[bin * copies + slot], 1u);
        } else {
            const u32 shift = (bin & 1u) << 4;
            u32* word = &sh[bin >> 1];
            const u32 old = atomicAdd(word, 1u << shift);
            if (((old >> shift) & 0xffffu) == 0x7fffu) {
                // This increment made the half 0x8000: move it to global.
                atomicAdd(word, 0u - (0x8000u << shift));
                hist_atomic_add(&counts[bin], (C)0x8000u);
            }
        }
    }
};

// The histogram of in[0, n) into counts, one persistent block's share.
// `head` items before the first 16-byte boundary are scalar (head = n when
// the pointer is not even T-aligned); whole vectors follow; the tail is
// scalar. `stage` > 0: ranges only, copy that many boundaries to shared.
template <typename T, typename C, typename Binner, int MODE, u32 BLOCK, u32 UNROLL>
__device__ __forceinline__ void histogram_agent(const T* in, u64 n, u64 head, C* counts, Binner binner,
                                                u32 bins, u32 stored_bins, u32 copies,
                                                const T* boundaries, u32 stage) {
    constexpr u32 V = 16 / sizeof(T);
    static_assert(MODE != 2 || BLOCK * UNROLL * V < 32768u, "PACKED16 chunks must stay below 32768 items");
    extern __shared__ __align__(16) u32 hist_smem[];
    const u32 tid = threadIdx.x;
    // Shared words of the counts (VALUES adds 2 × 256 merge words).
    const u32 count_words = MODE == 0 ? 0u
                          : MODE == 2 ? (stored_bins + 1u) >> 1
                                      : stored_bins * copies;
    const u32 extra_words = MODE == 3 ? 512u : 0u;
    for (u32 i = tid; i < count_words + extra_words; i += BLOCK) hist_smem[i] = 0u;
    if (stage > 0) {
        // Boundaries after the counts, 16-byte aligned (the host sized it).
        T* staged = (T*)(hist_smem + ((count_words + extra_words + 3u) & ~3u));
        for (u32 i = tid; i < stage; i += BLOCK) staged[i] = boundaries[i];
        binner_stage(binner, staged);
    }
    __syncthreads();

    hist_counter<MODE, T, C, Binner> counter{counts, hist_smem, binner,
                                             (tid & 31u) & (copies - 1u), copies};
    const u64 body = n - head;
    const u64 num_vectors = body / V;
    const uint4* vectors = (const uint4*)(in + head);
    const u64 chunk_vectors = (u64)BLOCK * UNROLL;
    const u64 num_chunks = (num_vectors + chunk_vectors - 1) / chunk_vectors;
    for (u64 chunk = blockIdx.x; chunk < num_chunks; chunk += gridDim.x) {
        const u64 first = chunk * chunk_vectors + tid;
        uint4 loaded[UNROLL];
        #pragma unroll
        for (u32 u = 0; u < UNROLL; ++u) {
            const u64 v = first + (u64)u * BLOCK;
            if (v < num_vectors) loaded[u] = __ldg(&vectors[v]);
        }
        #pragma unroll
        for (u32 u = 0; u < UNROLL; ++u) {
            if (first + (u64)u * BLOCK < num_vectors) {
                union { uint4 vec; T items[V]; } cast;
                cast.vec = loaded[u];
                #pragma unroll
                for (u32 k = 0; k < V; ++k) counter.add(cast.items[k]);
            }
        }
        if (MODE == 2) __syncthreads();  // bounds a half's increments per chunk
    }
    // Scalar items: the head, then the tail after the last whole vector.
    const u64 tail_start = head + num_vectors * V;
    const u64 scalar_items = head + (n - tail_start);
    for (u64 i = (u64)blockIdx.x * BLOCK + tid; i < scalar_items; i += (u64)gridDim.x * BLOCK) {
        counter.add(in[i < head ? i : tail_start + (i - head)]);
    }
    if (MODE == 0) return;
    __syncthreads();

    // Merge: at most one global atomic per non-zero stored bin.
    if (MODE == 1) {
        for (u32 b = tid; b < stored_bins; b += BLOCK) {
            u32 sum = 0;
            // Rotated so that the threads of a warp read different banks.
            for (u32 c = 0; c < copies; ++c) sum += hist_smem[b * copies + ((c + b) & (copies - 1u))];
            if (sum != 0) hist_atomic_add(&counts[b], (C)sum);
        }
    } else if (MODE == 2) {
        for (u32 w = tid; w < count_words; w += BLOCK) {
            const u32 word = hist_smem[w];
            if ((word & 0xffffu) != 0) hist_atomic_add(&counts[2 * w], (C)(word & 0xffffu));
            if ((word >> 16) != 0) hist_atomic_add(&counts[2 * w + 1], (C)(word >> 16));
        }
    } else {
        // VALUES: value totals and their bins, then one atomic per run of
        // equal bins (bins are monotone in the value, so runs are long).
        u32* value_sum = hist_smem + count_words;
        u32* value_bin = value_sum + 256;
        for (u32 v = tid; v < 256u; v += BLOCK) {
            u32 sum = 0;
            for (u32 c = 0; c < 32u; ++c) sum += hist_smem[v * 32u + ((c + v) & 31u)];
            value_sum[v] = sum;
            value_bin[v] = binner(hist_byte_value<T>(v));
        }
        __syncthreads();
        for (u32 v = tid; v < 256u; v += BLOCK) {
            const u32 bin = value_bin[v];
            if (bin == HIST_NO_BIN || (v > 0 && value_bin[v - 1] == bin)) continue;
            u32 sum = 0;
            for (u32 u = v; u < 256u && value_bin[u] == bin; ++u) sum += value_sum[u];
            if (sum != 0) hist_atomic_add(&counts[bin], (C)sum);
        }
    }
}
