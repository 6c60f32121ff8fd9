// scan/hillis_steele_global.cu — Hillis–Steele scan with one launch per step,
// ping-ponging between two buffers in global memory (Hillis & Steele 1986).
//
// Inclusive scan of x[0 … n): for d = 1, 2, 4, … < n, one launch computes
//     out[i] = in[i − d] ⊕ in[i]   (i ≥ d),     out[i] = in[i]   (i < d)
// from the previous step's buffer into the other buffer. After step d every
// element holds the combination of the (up to) 2d inputs ending at it, so
// ⌈log2 n⌉ steps finish the scan. An exclusive scan with initial value v is
// the inclusive scan of [v, x[0], …, x[n−2]]: one `hs_global_shift` launch
// builds that array first. An inclusive scan from v is the inclusive scan of
// [v ⊕ x[0], x[1], …]: one `hs_global_seed` launch builds that one.
//
//   work O(n log n) combines; steps and launches ⌈log2 n⌉ (+1 for a seeded
//   kind);
//   bytes moved per step: n + (n − d) elements read, n written
//     (≈ 3n·⌈log2 n⌉ elements in all: the slowest method here by far);
//   no shared memory, so no bank conflicts; not in place within a step (a
//   thread would read in[i − d] while another thread overwrites it: hence the
//   two buffers); deterministic (a fixed combination tree).
//
// Geometry (host: hillis_steele_global.rs): 1-D, one element per thread,
// `block_threads` threads per block, ⌈n / block_threads⌉ blocks spread over
// (x, y) for more than 2^31 − 1 blocks. Indices are 64-bit.

// Element type and accumulator: each launch reads L and writes S and
// combines in A = Op::value_type (scan/recursive.cuh has the rule). The 4-
// and 8-byte types have L = S = A. A 1- or 2-byte type T ping-pongs in two
// accumulator arrays (hillis_steele_global.rs): the first launch reads T
// (L = T, S = A), the middle ones accumulators, the last writes T (L = A,
// S = T), so each output is narrowed once; a scan of a single launch reads
// and writes T.

template <typename L, typename S, typename Op>
__device__ __forceinline__ void hs_global_step(const L* in, S* out, u64 n, u64 d) {
    typedef typename Op::value_type A;
    const u64 i = global_thread_index();
    if (i >= n) return;
    const A x = widen<A>(in[i]);
    out[i] = narrow<S>((i >= d) ? Op::combine(widen<A>(in[i - d]), x) : x);
}

// out[0] = initial, out[i] = in[i − 1]: turns the exclusive scan into an
// inclusive one. `in` and `out` must be different buffers. S is T, or the
// accumulator the next launch reads (each value widened).
template <typename T, typename S>
__device__ __forceinline__ void hs_global_shift(const T* in, S* out, u64 n, T initial) {
    const u64 i = global_thread_index();
    if (i >= n) return;
    out[i] = widen<S>((i == 0) ? initial : in[i - 1]);
}

// out[0] = initial ⊕ in[0], out[i] = in[i]: turns the inclusive scan from
// `initial` into a plain inclusive one (`initial` on the left, so any
// associative Op). `in` and `out` are different buffers (buffer_plan). S is
// T, or the accumulator the next launch reads; the combine is in A, narrowed
// once when S is T.
template <typename T, typename S, typename Op>
__device__ __forceinline__ void hs_global_seed(const T* in, S* out, u64 n, T initial) {
    typedef typename Op::value_type A;
    const u64 i = global_thread_index();
    if (i >= n) return;
    const A x = widen<A>(in[i]);
    out[i] = narrow<S>((i == 0) ? Op::combine(widen<A>(initial), x) : x);
}
