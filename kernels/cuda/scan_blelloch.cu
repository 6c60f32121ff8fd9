// scan_blelloch.cu — work-efficient block scan (Blelloch 1990): an up-sweep
// (reduce) and a down-sweep over a balanced binary tree in shared memory, two
// elements per thread; the recursive driver (scan_recursive.cuh,
// crates/scan/src/recursive.rs) turns it into a scan of any length.
//
// One block of B threads (B a power of two) scans a tile of 2B elements.
//   up-sweep:   for d = B, B/2, …, 1 (stride s = 2B / 2d): the first d
//               threads combine s[left] into s[right] of one tree node:
//               s[s·(2t+2) − 1] = s[s·(2t+1) − 1] ⊕ s[s·(2t+2) − 1];
//   the root (the tile's total) is saved, then replaced by the identity;
//   down-sweep: for d = 1, 2, …, B: each node passes its prefix to its left
//               child and prefix ⊕ (left subtree) to its right child.
// The result is the tile's exclusive scan; the inclusive one is exclusive ⊕
// the element's own input, kept in a register.
//
// PADDED = true is BlellochPadded: shared index i is stored at
// i + (i >> LOG_NUM_BANKS) (CONFLICT_FREE_OFFSET). Without it the tree's
// strided accesses land in few banks: at stride s ≥ 32 words every active
// thread of a warp hits the same bank (up to 32-way conflicts). One padding
// word per 32 spreads them over different banks.
//
//   work O(T) combines per tile of T = 2B elements (≈ 2T), O(n) overall;
//   steps 2·log2(T) levels per tile, each behind a barrier: a block barrier
//     while more than one warp works (log2 T − 5 levels each way for
//     B ≥ 32), a warp barrier for the levels that run inside warp 0;
//   bytes moved: n elements read, n written, one total per tile written
//     (the uniform add then reads and writes n again: ≈ 4n in all);
//   shared memory per block: T·sizeof(T) (+ T/32 elements when padded);
//   in place: yes (thread t reads tile positions t and t + B before it
//     writes them, no other thread touches them, and a block touches only
//     its own tiles);
//   deterministic: yes (a fixed combination tree).
//
// Loads and stores are coalesced: thread t owns tile positions t and t + B,
// not 2t and 2t + 1.

template <bool PADDED>
__device__ __forceinline__ u32 blelloch_slot(u32 i) {
    return PADDED ? i + (i >> LOG_NUM_BANKS) : i;
}

template <typename T, typename Op, bool PADDED>
__device__ __forceinline__ void blelloch_tile(T* s, T xa, T xb, T* out, T* totals, u64 n, u64 tile,
                                              u32 exclusive, u32 has_seed, T seed) {
    const u32 threads = blockDim.x;
    const u32 tile_items = 2 * threads;
    const u64 base = tile * (u64)tile_items;
    const u32 pa = threadIdx.x;
    const u32 pb = threadIdx.x + threads;
    // Each thread reads back only its own two slots at the end of the
    // previous tile, so these writes need no barrier before them.
    s[blelloch_slot<PADDED>(pa)] = xa;
    s[blelloch_slot<PADDED>(pb)] = xb;

    // Up-sweep: after it, the last slot holds the tile's total. At d active
    // threads, d ≤ 16 means all of them are in warp 0 and read only what
    // warp 0 wrote one level before (d = 32 reads what d = 64 wrote in warps
    // 0 and 1, so it still takes the block barrier): a warp barrier orders
    // those levels. Every thread reaches the same barriers (d is uniform).
    u32 stride = 1;
    for (u32 d = threads; d > 0; d >>= 1) {
        if (d >= 32) {
            __syncthreads();
        } else {
            __syncwarp();
        }
        if (threadIdx.x < d) {
            const u32 left = stride * (2 * threadIdx.x + 1) - 1;
            const u32 right = stride * (2 * threadIdx.x + 2) - 1;
            s[blelloch_slot<PADDED>(right)] =
                Op::combine(s[blelloch_slot<PADDED>(left)], s[blelloch_slot<PADDED>(right)]);
        }
        stride <<= 1;
    }
    // Thread 0 wrote the root in the last up-sweep step itself: no barrier needed.
    if (threadIdx.x == 0) {
        const u32 root = blelloch_slot<PADDED>(tile_items - 1);
        if (totals != nullptr) totals[tile] = s[root];
        s[root] = Op::identity();
    }

    // Down-sweep: each node's slot holds the prefix of everything before its
    // subtree; the left child's slot holds the left subtree's total. Levels
    // with d ≤ 32 active threads run in warp 0 on what warp 0 wrote (the
    // root, the up-sweep's top levels, the down-sweep's own previous level):
    // a warp barrier; from d = 64 on, other warps read warp 0's writes.
    for (u32 d = 1; d < tile_items; d <<= 1) {
        stride >>= 1;
        if (d > 32) {
            __syncthreads();
        } else {
            __syncwarp();
        }
        if (threadIdx.x < d) {
            const u32 left = blelloch_slot<PADDED>(stride * (2 * threadIdx.x + 1) - 1);
            const u32 right = blelloch_slot<PADDED>(stride * (2 * threadIdx.x + 2) - 1);
            const T left_total = s[left];
            const T prefix = s[right];
            s[left] = prefix;
            s[right] = Op::combine(prefix, left_total);
        }
    }
    __syncthreads();

    const T ea = s[blelloch_slot<PADDED>(pa)];
    const T eb = s[blelloch_slot<PADDED>(pb)];
    const T va = scan_tile_output<T, Op>(ea, Op::combine(ea, xa), tile == 0, pa, exclusive, has_seed, seed);
    const T vb = scan_tile_output<T, Op>(eb, Op::combine(eb, xb), tile == 0, pb, exclusive, has_seed, seed);
    if (base + pa < n) out[base + pa] = va;
    if (base + pb < n) out[base + pb] = vb;
}

// The kernel: a persistent grid (scan_recursive.cuh, "pipelined tile loop");
// block b scans tiles b, b + G, b + 2G, … and loads the next tile's two
// elements per thread into registers before scanning the current one, so
// those loads are in flight during the current tile's 2·log2 T barriers.
template <typename T, typename Op, bool PADDED>
__device__ __forceinline__ void blelloch_block(const T* in, T* out, T* totals, u64 n,
                                               u32 exclusive, u32 has_seed, T seed) {
    const u32 threads = blockDim.x;
    const u32 tile_items = 2 * threads;
    const u64 tiles = (n + tile_items - 1) / tile_items;
    u64 tile = blockIdx.x;
    if (tile >= tiles) return;  // more blocks than tiles: the whole block exits
    T* s = scan_shared_tile<T>();
    const u32 pa = threadIdx.x;
    const u32 pb = threadIdx.x + threads;

    // Load (identity past n, so a partial tile's total is still right).
    T next_a = load_or_identity<T, Op>(in, tile * (u64)tile_items + pa, n);
    T next_b = load_or_identity<T, Op>(in, tile * (u64)tile_items + pb, n);
    for (; tile < tiles; tile += gridDim.x) {
        const T xa = next_a;
        const T xb = next_b;
        const u64 following = tile + gridDim.x;
        if (following < tiles) {
            next_a = load_or_identity<T, Op>(in, following * (u64)tile_items + pa, n);
            next_b = load_or_identity<T, Op>(in, following * (u64)tile_items + pb, n);
        }
        blelloch_tile<T, Op, PADDED>(s, xa, xb, out, totals, n, tile, exclusive, has_seed, seed);
    }
}
