// scan/recursive.cuh — pieces shared by the recursive ("scan, then propagate")
// multi-block scans: Hillis–Steele and Blelloch (plain and padded).
//
// The recursive method, for n elements and tiles of `tile_items` elements:
//   1. block scan: every block scans its own tile in shared memory, writes the
//      tile-local prefixes to `out` and the tile's total to `totals[tile]`;
//   2. the totals (⌈n / tile_items⌉ of them) are scanned by the same method,
//      recursively, until one tile holds them all;
//   3. uniform add: every element of tile t ≥ 1 is combined with the scanned
//      total of tiles 0 … t−1 (this file's `uniform_add`).
// Global memory traffic is about 4n elements (read + write in steps 1 and 3)
// plus a 1/tile_items fraction of that for the higher levels.
//
// Operands always stay in index order (`Op::combine(earlier, later)`), so any
// associative operator works, commutative or not.
//
// Element type and accumulator. Every block scan is templated on the type it
// loads (L), the type it stores (S) and the operator; it scans in
// A = Op::value_type, in registers and shared memory, widening each item to
// A once when loaded and narrowing once when stored; tile totals are A. The
// host builds op_t on the element type itself for the 4- and 8-byte types
// (L = S = A: the conversions are the identity and compile to nothing) and
// on a 4-byte accumulator for the 1- and 2-byte ones
// (gpu_core::op::register_operator_prelude: i32 for i8/i16, u32 for u8/u16,
// f32 for f16/bf16). For those the driver (recursive.rs) runs level 0 from
// the element type into an n-element accumulator array (L = T, S = A), the
// higher levels on accumulators (L = S = A), and folds the carries in with
// `uniform_add_narrow`, which narrows each output once; a single tile is
// scanned straight from T to T. The exclusive seed is always passed as the
// element type and widened in the kernel.

// Dynamic shared memory as an array of T. One byte array for every kernel of
// a module (extern __shared__ arrays of different types would clash), 16-byte
// aligned so that any element type can live in it.
template <typename T>
__device__ __forceinline__ T* scan_shared_tile() {
    extern __shared__ __align__(16) unsigned char scan_shared_bytes[];
    return reinterpret_cast<T*>(scan_shared_bytes);
}

// What a block scan writes for one element of its tile.
//   excl / incl: the tile-local exclusive and inclusive prefixes;
//   first_tile:  whether this is tile 0 of the array (the only tile that
//                folds in the seed: later tiles get it through the totals);
//   local:       the element's index within the tile;
//   exclusive, has_seed, seed: the scan's kind (see scan_tile_kernels below).
// For an exclusive scan the element at global position 0 is the seed itself
// (not seed ⊕ identity, which differs for -0.0 under floating-point sum).
template <typename T, typename Op>
__device__ __forceinline__ T scan_tile_output(T excl, T incl, bool first_tile, u32 local,
                                              u32 exclusive, u32 has_seed, T seed) {
    T value = exclusive ? excl : incl;
    if (first_tile && has_seed) {
        value = (exclusive && local == 0) ? seed : Op::combine(seed, value);
    }
    return value;
}

// Element i of `in` widened to the accumulator, or the identity past n (so
// a partial tile's total is still the combination of its real elements).
template <typename T, typename Op>
__device__ __forceinline__ typename Op::value_type load_or_identity(const T* in, u64 i, u64 n) {
    typedef typename Op::value_type A;
    return (i < n) ? widen<A>(in[i]) : Op::identity();
}

// Pipelined tile loop (the Blelloch block scans, scan/blelloch.cu). A block
// that scans one tile and exits has loads in flight only while it waits for
// them; during its barrier-bound tree in shared memory it keeps none. So the
// block-scan grid is persistent: G = min(tiles, resident blocks per SM × SMs)
// blocks (recursive.rs computes it from the occupancy the driver reports),
// block b scans tiles b, b + G, b + 2G, …, and before scanning a tile it
// issues the loads of its next one into registers. Those loads complete
// during the current tile's barriers; a barrier does not wait for them, only
// the first use of the registers does. Tiles stay disjoint between blocks,
// and every element is read and written by the same thread, read first, so
// the scan still works in place. (Hillis–Steele keeps one block per tile:
// on the H100 the persistent grid made it 4 % slower; its block scan is
// bound by instruction issue, not by waiting on loads.)

// uniform_add: data[i] = carry[t − 1] ⊕ data[i] for every element i of tile
// t ≥ 1, where tile t is elements [t·tile_items, (t+1)·tile_items) ∩ [0, n)
// and carry[t − 1] is the scanned total of tiles 0 … t−1 (seed included).
//
//   work O(n), steps O(1), one launch;
//   bytes moved: (n − tile_items) elements read and written, plus one carry
//   read per block (broadcast to the block's threads);
//   no shared memory; in place by design; deterministic.
//
// Geometry (host: recursive.rs): one block per tile t ≥ 1, so grid = tiles − 1
// blocks and block b handles tile b + 1; blockDim.x threads, each taking up to
// UNIFORM_ADD_MAX_ITEMS elements strided by blockDim.x (coalesced). The host
// guarantees blockDim.x · UNIFORM_ADD_MAX_ITEMS ≥ tile_items. All loads are
// issued before the first store, so each thread keeps several loads in flight.
template <typename T, typename Op>
__device__ void uniform_add(T* data, const T* carry, u64 n, u64 tile_items, u64 tiles) {
    const u64 tile = linear_block_index() + 1;
    if (tile >= tiles) return;  // surplus blocks of a grid spread over y
    const T c = carry[tile - 1];
    const u64 base = tile * tile_items;
    const u64 end = (base + tile_items < n) ? base + tile_items : n;
    T values[UNIFORM_ADD_MAX_ITEMS];
#pragma unroll
    for (u32 k = 0; k < UNIFORM_ADD_MAX_ITEMS; ++k) {
        const u64 i = base + (u64)k * blockDim.x + threadIdx.x;
        if (i < end) values[k] = data[i];
    }
#pragma unroll
    for (u32 k = 0; k < UNIFORM_ADD_MAX_ITEMS; ++k) {
        const u64 i = base + (u64)k * blockDim.x + threadIdx.x;
        if (i < end) data[i] = Op::combine(c, values[k]);
    }
}

// uniform_add_narrow: the last step of a 1- or 2-byte type's scan.
// out[i] = narrow(carry[t − 1] ⊕ work[i]) for every element i of tile
// t ≥ 1, and out[i] = narrow(work[i]) in tile 0 (whose block scan already
// folded in the seed), where `work` holds level 0's tile-local prefixes in
// the accumulator A = Op::value_type. So each output is narrowed once, after
// its last combine (a 16-bit float is rounded once).
//
//   work O(n), steps O(1), one launch;
//   bytes moved: n accumulators read, n elements written, one carry read
//   per block;
//   no shared memory; `work` and `out` are different arrays (in place for
//   the caller's array, which only the level-0 block scan read); deterministic.
//
// Geometry (host: recursive.rs): one block per tile, grid = tiles blocks
// (spread over y), the same threads per block as uniform_add.
template <typename T, typename Op>
__device__ void uniform_add_narrow(const typename Op::value_type* work, T* out,
                                   const typename Op::value_type* carry, u64 n, u64 tile_items,
                                   u64 tiles) {
    typedef typename Op::value_type A;
    const u64 tile = linear_block_index();
    if (tile >= tiles) return;  // surplus blocks of a grid spread over y
    const u64 base = tile * tile_items;
    const u64 end = (base + tile_items < n) ? base + tile_items : n;
    A values[UNIFORM_ADD_MAX_ITEMS];
#pragma unroll
    for (u32 k = 0; k < UNIFORM_ADD_MAX_ITEMS; ++k) {
        const u64 i = base + (u64)k * blockDim.x + threadIdx.x;
        if (i < end) values[k] = work[i];
    }
    if (tile == 0) {
#pragma unroll
        for (u32 k = 0; k < UNIFORM_ADD_MAX_ITEMS; ++k) {
            const u64 i = base + (u64)k * blockDim.x + threadIdx.x;
            if (i < end) out[i] = narrow<T>(values[k]);
        }
        return;
    }
    const A c = carry[tile - 1];
#pragma unroll
    for (u32 k = 0; k < UNIFORM_ADD_MAX_ITEMS; ++k) {
        const u64 i = base + (u64)k * blockDim.x + threadIdx.x;
        if (i < end) out[i] = narrow<T>(Op::combine(c, values[k]));
    }
}
