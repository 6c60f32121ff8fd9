// scan/hillis_steele.cu — block scan by Hillis–Steele steps in a double
// buffer in shared memory; the recursive driver (scan/recursive.cuh,
// crates/scan/src/recursive.rs) turns it into a scan of any length.
//
// One block scans a tile of tile_items = blockDim.x · HS_ITEMS_PER_THREAD
// elements. Thread t owns tile positions p = t + k·blockDim.x (k <
// HS_ITEMS_PER_THREAD), so every global load and store is coalesced. The
// thread keeps its running values in registers; for d = 1, 2, 4, … < tile:
//     v[p] = buf[src][p − d] ⊕ v[p]   (p ≥ d);   buf[dst][p] = v[p]
// then swaps src and dst. Reading from one buffer while writing the other is
// what lets a single __syncthreads() per step suffice (with one buffer, a
// thread could overwrite buf[p − d] before its neighbour read it).
//
//   work O(T log T) combines per tile of T elements (O(n log n) overall);
//   steps ⌈log2 T⌉ + 1 barriers per tile;
//   bytes moved: n elements read, n written, one total per tile written
//     (the uniform add then reads and writes n again: ≈ 4n in all);
//   shared memory per block: 2 · tile_items · sizeof(A) (two buffers of the
//     accumulator: T itself for 4- and 8-byte types, 4 bytes for 1 and 2);
//   bank conflicts: none for 4-byte types (consecutive threads touch
//     consecutive words, reads at p − d are a shifted consecutive run); 8-byte
//     types take two wavefronts per access, the hardware minimum;
//   in place: yes (every read of `in` happens before the first barrier, every
//     write to `out` after the last, and a block touches only its own tile);
//   deterministic: yes (a fixed combination tree).
//
// Arguments: `in` may equal `out` (in place, when L = S); `totals` is null
// when the array is a single tile; exclusive/has_seed/seed as in
// scan_tile_output. L, S: the loaded and stored types; the scan, both
// buffers and the totals are in A = Op::value_type (recursive.cuh), so
// shared memory holds 2 · tile_items accumulators.

template <typename L, typename S, typename Op, typename E>
__device__ __forceinline__ void hillis_steele_block(const L* in, S* out,
                                                    typename Op::value_type* totals, u64 n,
                                                    u32 exclusive, u32 has_seed, E seed) {
    typedef typename Op::value_type A;
    const u32 threads = blockDim.x;
    const u32 tile_items = threads * HS_ITEMS_PER_THREAD;
    const u64 tile = linear_block_index();
    const u64 tiles = (n + tile_items - 1) / tile_items;
    if (tile >= tiles) return;  // surplus blocks of a grid spread over y: whole block exits
    const u64 base = tile * (u64)tile_items;
    A* buffers = scan_shared_tile<A>();  // [0, tile_items) and [tile_items, 2·tile_items)

    // Load (positions past n are padded with the identity, so the last
    // partial tile's total is still the combination of its real elements).
    A v[HS_ITEMS_PER_THREAD];
#pragma unroll
    for (u32 k = 0; k < HS_ITEMS_PER_THREAD; ++k) {
        const u32 p = threadIdx.x + k * threads;
        v[k] = load_or_identity<L, Op>(in, base + p, n);
        buffers[p] = v[k];
    }
    __syncthreads();

    u32 src = 0;
    for (u32 d = 1; d < tile_items; d <<= 1) {
        const A* from = buffers + src * tile_items;
        A* to = buffers + (src ^ 1u) * tile_items;
#pragma unroll
        for (u32 k = 0; k < HS_ITEMS_PER_THREAD; ++k) {
            const u32 p = threadIdx.x + k * threads;
            if (p >= d) v[k] = Op::combine(from[p - d], v[k]);
            to[p] = v[k];
        }
        src ^= 1u;
        __syncthreads();
    }

    // buffers + src·tile_items now holds the inclusive tile scan (the last
    // step's writes are ordered before these reads by its barrier).
    const A* scanned = buffers + src * tile_items;
    const A seed_acc = widen<A>(seed);
#pragma unroll
    for (u32 k = 0; k < HS_ITEMS_PER_THREAD; ++k) {
        const u32 p = threadIdx.x + k * threads;
        const A excl = (p == 0) ? Op::identity() : scanned[p - 1];
        const A value =
            scan_tile_output<A, Op>(excl, v[k], tile == 0, p, exclusive, has_seed, seed_acc);
        if (base + p < n) out[base + p] = narrow<S>(value);
    }
    // The thread owning the last position holds the tile's total.
    if (totals != nullptr && threadIdx.x == threads - 1) totals[tile] = v[HS_ITEMS_PER_THREAD - 1];
}
