// scan/blelloch.cu — work-efficient block scan (Blelloch 1990): an up-sweep
// (reduce) and a down-sweep over a balanced binary tree, BLELLOCH_ITEMS
// elements per thread (a define, an even power of two: 4 by default, see
// crates/scan/src/policy.rs); the recursive driver (scan/recursive.cuh,
// crates/scan/src/recursive.rs) turns it into a scan of any length.
//
// One block of B threads (B a power of two, 32 … 1024) scans a tile of
// T = BLELLOCH_ITEMS·B elements; thread t owns the BLELLOCH_ITEMS consecutive
// positions from BLELLOCH_ITEMS·t. The tree over the tile is the textbook's:
//   up-sweep:   level by level, each node's right slot becomes
//               left ⊕ right (s[s·(2t+2) − 1] = s[s·(2t+1) − 1] ⊕ s[s·(2t+2) − 1]
//               at stride s);
//   the root (the tile's total) is saved, then replaced by the identity;
//   down-sweep: each node passes its prefix to its left child and
//               prefix ⊕ (left subtree) to its right child.
// The result is the tile's exclusive scan; the inclusive one is exclusive ⊕
// the element's own input.
//
// The levels of both sweeps that stay inside one thread's elements run in
// registers. Up: each half of the thread's elements folds to one value, so
// the tree in shared memory has 2B leaves, two per thread (the leaf pair of
// the lab's kernel, where each element was a leaf), and its first level
// (the pair, d = B, stride 1) runs in registers too: thread t stores
// leaf0 ⊕ leaf1 into slot 2t+1. Down: the last shared level reads back slot
// 2t+1 (the pair's prefix), and the thread finishes its elements itself.
// Every other level reads and writes odd slots only, so the even slots are
// never stored. The levels in between are the textbook's, in shared memory:
//   - while more than 32 threads work (d ≥ 64), a block barrier orders each
//     level after the one before;
//   - the levels with d ≤ 32 run inside warp 0 on what warp 0 wrote (the
//     first of them, d = 32, reads what d = 64 wrote in warps 0 and 1, and
//     is entered after a block barrier): a warp barrier orders them, and the
//     other warps skip them, going straight to the next block barrier.
// Four elements per thread halve the shared-memory traffic per element of
// two (the lab's form): the shared tree, its bank conflicts and its barriers
// cost the same per tile, and the tile is twice as long.
//
// PADDED = true is BlellochPadded: shared index i is stored at
// i + (i >> LOG_NUM_BANKS) (CONFLICT_FREE_OFFSET). Without it the tree's
// strided accesses land in few banks: at stride s the active threads of a
// warp touch words 2s apart, a min(2s, 32)-way conflict. One padding word per
// 32 spreads them over different banks.
//
//   work O(T) combines per tile (≈ 2T), O(n) overall;
//   steps 2·log2(T) levels per tile, behind 2·max(log2 B − 6, 0) + 2 block
//     barriers (the others are the levels in registers and the warp-0
//     levels behind warp barriers): 8 for B = 512;
//   bytes moved: n elements read, n written, one total per tile written
//     (the uniform add then reads and writes n again: ≈ 4n in all);
//   shared memory per block: 2B accumulators (+ 2B/32 when padded), A the
//     accumulator (the element itself for 4- and 8-byte types, 4 bytes for
//     1 and 2);
//   in place: yes (a thread reads its own positions of its tile before it
//     writes them, no other thread touches them, and each tile belongs to
//     one block);
//   deterministic: yes (a fixed combination order).
//
// Grid: persistent, with the pipelined tile loop of scan/recursive.cuh (each
// block loads its next tile's elements into registers before scanning the
// current one). Loads and stores: vector accesses of up to 16 bytes per
// thread (coalesced: a warp covers 32·BLELLOCH_ITEMS consecutive elements)
// when the array is aligned to them; element by element otherwise (a
// sub-view at an odd offset).

template <bool PADDED>
__device__ __forceinline__ u32 blelloch_slot(u32 i) {
    return PADDED ? i + (i >> LOG_NUM_BANKS) : i;
}

// One up-sweep node at stride `stride` (thread t's node spans
// [2t·stride, (2t+2)·stride)): its right slot becomes left ⊕ right.
template <typename T, typename Op, bool PADDED>
__device__ __forceinline__ void blelloch_up(T* s, u32 t, u32 stride) {
    const u32 right = (2 * t + 2) * stride - 1;
    const u32 r = blelloch_slot<PADDED>(right);
    s[r] = Op::combine(s[blelloch_slot<PADDED>(right - stride)], s[r]);
}

// One down-sweep node at stride `stride`: the left child gets the node's
// prefix, the right child prefix ⊕ (left subtree's total).
template <typename T, typename Op, bool PADDED>
__device__ __forceinline__ void blelloch_down(T* s, u32 t, u32 stride) {
    const u32 right_index = (2 * t + 2) * stride - 1;
    const u32 left = blelloch_slot<PADDED>(right_index - stride);
    const u32 right = blelloch_slot<PADDED>(right_index);
    const T left_total = s[left];
    const T prefix = s[right];
    s[left] = prefix;
    s[right] = Op::combine(prefix, left_total);
}

// Scans one tile whose leaf pair (x0, x1) thread t holds (the totals of
// the two halves of its elements); returns the pair's exclusive prefix
// within the tile (identity for t = 0).
// The tile's total goes to totals[tile] when totals is not null.
template <typename T, typename Op, bool PADDED>
__device__ __forceinline__ T blelloch_tile_prefix(T* s, T x0, T x1, T* totals, u64 tile) {
    const u32 threads = blockDim.x;
    const u32 t = threadIdx.x;
    const u32 pair_slot = blelloch_slot<PADDED>(2 * t + 1);
    // Leaf level of the up-sweep, in registers. Each thread last read only
    // this slot of the previous tile, so no barrier is needed before it.
    s[pair_slot] = Op::combine(x0, x1);

    // Up-sweep, d = B/2 … 64 active threads (stride 2 … B/64): block barriers.
    u32 stride = 2;
    for (u32 d = threads >> 1; d > 32; d >>= 1) {
        __syncthreads();
        if (t < d) blelloch_up<T, Op, PADDED>(s, t, stride);
        stride <<= 1;
    }
    __syncthreads();
    if (t < 32) {
        // Up-sweep, d = min(B/2, 32) … 1, inside warp 0.
        for (u32 d = min(threads >> 1, 32u); d > 0; d >>= 1) {
            if (t < d) blelloch_up<T, Op, PADDED>(s, t, stride);
            stride <<= 1;
            __syncwarp();
        }
        // Thread 0 wrote the root in the last level itself.
        if (t == 0) {
            const u32 root = blelloch_slot<PADDED>(2 * threads - 1);
            if (totals != nullptr) totals[tile] = s[root];
            s[root] = Op::identity();
        }
        __syncwarp();
        // Down-sweep, d = 1 … min(B/2, 32) (stride B … ), inside warp 0.
        stride = threads;
        for (u32 d = 1; d <= 32 && d < threads; d <<= 1) {
            if (t < d) blelloch_down<T, Op, PADDED>(s, t, stride);
            stride >>= 1;
            __syncwarp();
        }
    }
    // Down-sweep, d = 64 … B/2 (stride B/64 … 2): block barriers.
    stride = threads >> 6;
    for (u32 d = 64; d < threads; d <<= 1) {
        __syncthreads();
        if (t < d) blelloch_down<T, Op, PADDED>(s, t, stride);
        stride >>= 1;
    }
    __syncthreads();
    return s[pair_slot];
}

// A run of BLELLOCH_CHUNK consecutive elements, one aligned vector access
// of at most 16 bytes: a thread's BLELLOCH_ITEMS elements are read and
// written as BLELLOCH_ITEMS / chunk such accesses.
template <typename T>
struct blelloch_chunk_of {
    static constexpr u32 per_vector = 16 / sizeof(T);
    static constexpr u32 items = BLELLOCH_ITEMS < per_vector ? BLELLOCH_ITEMS : per_vector;
    struct alignas(items * sizeof(T)) type {
        T v[items];
    };
};

template <typename T>
__device__ __forceinline__ bool chunk_aligned(const T* p) {
    return (reinterpret_cast<unsigned long long>(p) % sizeof(typename blelloch_chunk_of<T>::type)) ==
           0;
}

// Elements i … i + BLELLOCH_ITEMS − 1 of `in` widened to the accumulator
// (identity past n); vector loads when the array is chunk-aligned (i is a
// multiple of BLELLOCH_ITEMS) and all of them are in range.
template <typename T, typename Op>
__device__ __forceinline__ void load_items(const T* in, u64 i, u64 n, bool aligned,
                                           typename Op::value_type (&x)[BLELLOCH_ITEMS]) {
    typedef typename Op::value_type A;
    typedef blelloch_chunk_of<T> chunk;
    if (aligned && i + BLELLOCH_ITEMS <= n) {
        const typename chunk::type* p = reinterpret_cast<const typename chunk::type*>(in + i);
#pragma unroll
        for (u32 c = 0; c < BLELLOCH_ITEMS / chunk::items; ++c) {
            const typename chunk::type v = p[c];
#pragma unroll
            for (u32 k = 0; k < chunk::items; ++k) x[c * chunk::items + k] = widen<A>(v.v[k]);
        }
    } else {
#pragma unroll
        for (u32 k = 0; k < BLELLOCH_ITEMS; ++k) x[k] = load_or_identity<T, Op>(in, i + k, n);
    }
}

template <typename T>
__device__ __forceinline__ void store_items(T* out, u64 i, u64 n, bool aligned,
                                            const T (&y)[BLELLOCH_ITEMS]) {
    typedef blelloch_chunk_of<T> chunk;
    if (aligned && i + BLELLOCH_ITEMS <= n) {
        typename chunk::type* p = reinterpret_cast<typename chunk::type*>(out + i);
#pragma unroll
        for (u32 c = 0; c < BLELLOCH_ITEMS / chunk::items; ++c) {
            typename chunk::type v;
#pragma unroll
            for (u32 k = 0; k < chunk::items; ++k) v.v[k] = y[c * chunk::items + k];
            p[c] = v;
        }
    } else {
#pragma unroll
        for (u32 k = 0; k < BLELLOCH_ITEMS; ++k) {
            if (i + k < n) out[i + k] = y[k];
        }
    }
}

// The combination of x[from … from + count − 1], in index order.
template <typename A, typename Op>
__device__ __forceinline__ A blelloch_fold(const A (&x)[BLELLOCH_ITEMS], u32 from, u32 count) {
    A total = x[from];
#pragma unroll
    for (u32 k = 1; k < count; ++k) total = Op::combine(total, x[from + k]);
    return total;
}

// L, S: the loaded and stored types; the tree, the shared tile and the
// totals are in A = Op::value_type (scan/recursive.cuh has the rule), so
// shared memory holds 2B (+ 2B/32 padded) accumulators.
template <typename L, typename S, typename Op, bool PADDED, typename E>
__device__ __forceinline__ void blelloch_block(const L* in, S* out, typename Op::value_type* totals,
                                               u64 n, u32 exclusive, u32 has_seed, E seed) {
    typedef typename Op::value_type A;
    constexpr u32 HALF = BLELLOCH_ITEMS / 2;  // elements under one leaf of the tree
    const u32 tile_items = BLELLOCH_ITEMS * blockDim.x;
    const u64 tiles = (n + tile_items - 1) / tile_items;
    u64 tile = blockIdx.x;
    if (tile >= tiles) return;  // more blocks than tiles: the whole block exits
    A* s = scan_shared_tile<A>();
    const u32 first = BLELLOCH_ITEMS * threadIdx.x;  // the thread's first position in its tile
    const bool in_aligned = chunk_aligned(in);
    const bool out_aligned = chunk_aligned(out);
    const A seed_acc = widen<A>(seed);

    A next[BLELLOCH_ITEMS];
    load_items<L, Op>(in, tile * tile_items + first, n, in_aligned, next);
    for (; tile < tiles; tile += gridDim.x) {
        A x[BLELLOCH_ITEMS];
#pragma unroll
        for (u32 k = 0; k < BLELLOCH_ITEMS; ++k) x[k] = next[k];
        const u64 following = tile + gridDim.x;
        if (following < tiles) {
            load_items<L, Op>(in, following * tile_items + first, n, in_aligned, next);
        }
        // Up-sweep levels below the leaves, in registers: each half of the
        // thread's elements folds to one leaf.
        const A leaf0 = blelloch_fold<A, Op>(x, 0, HALF);
        const A leaf1 = blelloch_fold<A, Op>(x, HALF, HALF);
        const A prefix = blelloch_tile_prefix<A, Op, PADDED>(s, leaf0, leaf1, totals, tile);
        // Down-sweep in registers: the leaf level (the second leaf's prefix
        // is prefix ⊕ leaf0), then each half's elements in order.
        const bool first_tile = tile == 0;
        S y[BLELLOCH_ITEMS];
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
            A running = h == 0 ? prefix : Op::combine(prefix, leaf0);
#pragma unroll
            for (u32 k = h * HALF; k < (h + 1) * HALF; ++k) {
                const A inclusive = Op::combine(running, x[k]);
                y[k] = narrow<S>(scan_tile_output<A, Op>(running, inclusive, first_tile, first + k,
                                                         exclusive, has_seed, seed_acc));
                running = inclusive;
            }
        }
        store_items<S>(out, tile * tile_items + first, n, out_aligned, y);
    }
}
