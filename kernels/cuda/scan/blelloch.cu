// scan/blelloch.cu — work-efficient block scan (Blelloch 1990): an up-sweep
// (reduce) and a down-sweep over a balanced binary tree in shared memory, two
// elements per thread; the recursive driver (scan/recursive.cuh,
// crates/scan/src/recursive.rs) turns it into a scan of any length.
//
// One block of B threads (B a power of two, 32 … 1024) scans a tile of
// T = 2B elements; thread t owns the tree's leaf pair, positions 2t and 2t+1.
//   up-sweep:   for d = B, B/2, …, 1 (stride s = B / d): the first d
//               threads combine s[left] into s[right] of one tree node:
//               s[s·(2t+2) − 1] = s[s·(2t+1) − 1] ⊕ s[s·(2t+2) − 1];
//   the root (the tile's total) is saved, then replaced by the identity;
//   down-sweep: for d = 1, 2, …, B: each node passes its prefix to its left
//               child and prefix ⊕ (left subtree) to its right child.
// The result is the tile's exclusive scan; the inclusive one is exclusive ⊕
// the element's own input.
//
// The leaf level (d = B, stride 1) of both sweeps is the thread's own pair,
// so it runs in registers: the up-sweep stores x[2t] ⊕ x[2t+1] into slot
// 2t+1, and the down-sweep's last level reads back slot 2t+1 (the prefix of
// the pair) and finishes the pair itself. Every other level reads and writes
// odd slots only, so the even slots are never stored. The levels in between
// are the textbook's, in shared memory:
//   - while more than 32 threads work (d ≥ 64), a block barrier orders each
//     level after the one before;
//   - the levels with d ≤ 32 run inside warp 0 on what warp 0 wrote (the
//     first of them, d = 32, reads what d = 64 wrote in warps 0 and 1, and
//     is entered after a block barrier): a warp barrier orders them, and the
//     other warps skip them, going straight to the next block barrier.
//
// PADDED = true is BlellochPadded: shared index i is stored at
// i + (i >> LOG_NUM_BANKS) (CONFLICT_FREE_OFFSET). Without it the tree's
// strided accesses land in few banks: at stride s the active threads of a
// warp touch words 2s apart, a min(2s, 32)-way conflict. One padding word per
// 32 spreads them over different banks.
//
//   work O(T) combines per tile of T = 2B elements (≈ 2T), O(n) overall;
//   steps 2·log2(T) levels per tile, behind 2·max(log2 B − 6, 0) + 2 block
//     barriers (the others are the leaf level in registers and the warp-0
//     levels behind warp barriers): 8 for B = 512, against 2·log2 T = 20
//     with a block barrier at every level;
//   bytes moved: n elements read, n written, one total per tile written
//     (the uniform add then reads and writes n again: ≈ 4n in all);
//   shared memory per block: T·sizeof(A) (+ T/32 when padded), A the
//     accumulator (the element itself for 4- and 8-byte types, 4 bytes for 1 and 2);
//   in place: yes (thread t reads positions 2t and 2t+1 of its tile before
//     it writes them, no other thread touches them, and each tile belongs to
//     one block);
//   deterministic: yes (a fixed combination tree).
//
// Grid: persistent, with the pipelined tile loop of scan/recursive.cuh (each
// block loads its next tile's pair into registers before scanning the
// current one). Loads and stores: one two-element vector access per thread
// (coalesced: a warp covers 64 consecutive elements) when the array is
// aligned to two elements; element by element otherwise (a sub-view at an
// odd offset).

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

// Scans one tile whose pair (x0, x1) = (x[2t], x[2t+1]) thread t holds;
// returns the pair's exclusive prefix within the tile (identity for t = 0).
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

// Two consecutive elements, as one aligned vector access.
template <typename T>
struct alignas(2 * sizeof(T)) element_pair {
    T first;
    T second;
};

template <typename T>
__device__ __forceinline__ bool pair_aligned(const T* p) {
    return (reinterpret_cast<unsigned long long>(p) % (2 * sizeof(T))) == 0;
}

// Elements i and i+1 of `in` widened to the accumulator (identity past n);
// one vector load when the array is pair-aligned (i is always even) and
// both are in range.
template <typename T, typename Op>
__device__ __forceinline__ void load_pair(const T* in, u64 i, u64 n, bool aligned,
                                          typename Op::value_type& x0,
                                          typename Op::value_type& x1) {
    typedef typename Op::value_type A;
    if (aligned && i + 1 < n) {
        const element_pair<T> p = *reinterpret_cast<const element_pair<T>*>(in + i);
        x0 = widen<A>(p.first);
        x1 = widen<A>(p.second);
    } else {
        x0 = load_or_identity<T, Op>(in, i, n);
        x1 = load_or_identity<T, Op>(in, i + 1, n);
    }
}

template <typename T>
__device__ __forceinline__ void store_pair(T* out, u64 i, u64 n, bool aligned, T y0, T y1) {
    if (aligned && i + 1 < n) {
        element_pair<T> p;
        p.first = y0;
        p.second = y1;
        *reinterpret_cast<element_pair<T>*>(out + i) = p;
    } else {
        if (i < n) out[i] = y0;
        if (i + 1 < n) out[i + 1] = y1;
    }
}

// L, S: the loaded and stored types; the tree, the shared tile and the
// totals are in A = Op::value_type (scan/recursive.cuh has the rule), so
// shared memory holds T (+ T/32 padded) accumulators.
template <typename L, typename S, typename Op, bool PADDED, typename E>
__device__ __forceinline__ void blelloch_block(const L* in, S* out, typename Op::value_type* totals,
                                               u64 n, u32 exclusive, u32 has_seed, E seed) {
    typedef typename Op::value_type A;
    const u32 tile_items = 2 * blockDim.x;
    const u64 tiles = (n + tile_items - 1) / tile_items;
    u64 tile = blockIdx.x;
    if (tile >= tiles) return;  // more blocks than tiles: the whole block exits
    A* s = scan_shared_tile<A>();
    const u32 first = 2 * threadIdx.x;  // the pair's position in its tile
    const bool in_aligned = pair_aligned(in);
    const bool out_aligned = pair_aligned(out);
    const A seed_acc = widen<A>(seed);

    A next0, next1;
    load_pair<L, Op>(in, tile * tile_items + first, n, in_aligned, next0, next1);
    for (; tile < tiles; tile += gridDim.x) {
        const A x0 = next0;
        const A x1 = next1;
        const u64 following = tile + gridDim.x;
        if (following < tiles) {
            load_pair<L, Op>(in, following * tile_items + first, n, in_aligned, next0, next1);
        }
        const A prefix = blelloch_tile_prefix<A, Op, PADDED>(s, x0, x1, totals, tile);
        // Leaf level of the down-sweep, in registers: position 2t's
        // exclusive prefix is the pair's, 2t+1's is that ⊕ x0.
        const A incl0 = Op::combine(prefix, x0);
        const A incl1 = Op::combine(incl0, x1);
        const bool first_tile = tile == 0;
        const A y0 = scan_tile_output<A, Op>(prefix, incl0, first_tile, first, exclusive, has_seed,
                                             seed_acc);
        const A y1 = scan_tile_output<A, Op>(incl0, incl1, first_tile, first + 1, exclusive,
                                             has_seed, seed_acc);
        store_pair<S>(out, tile * tile_items + first, n, out_aligned, narrow<S>(y0), narrow<S>(y1));
    }
}
