// reduce/single_pass.cu — the default reduction: one pass over the input,
// the partials combined on the device by the last block to finish.
//
// Even share: the grid's G·W warps each own one contiguous range of the
// input (units of one 16-byte vector when the input is 16-byte aligned,
// single items otherwise; the tail past the last whole vector belongs to
// the last warp). A warp walks its range 32·UNROLL units at a time, every
// lane issuing UNROLL independent 16-byte loads before it combines any, so
// each thread keeps UNROLL·16 bytes in flight.
//   Commutative reducers (the built-in operators, the arg-reductions,
//   minmax): each lane folds its own units, one ordered warp reduction at
//   the end.
//   Other reducers (custom operators): an ordered warp reduction per group
//   of 32 units, folded in order into lane 0's running value.
// Warp totals fold in warp order into the block's partial, which goes to
// partials[blockIdx.x]; then a ticket from the tile counter (gpu-core's
// with_ticket_state: counter epoch & 1 is zero when the grid starts, block
// 0 zeroes the other for the next call). The block that draws the last
// ticket reads the G partials (L2, past L1) and folds them in block order:
// each thread a contiguous run, then the warp and block reductions. So the
// combine order depends only on (n, the grid), and the grid only on n, the
// element type and the device: the same input gives the same bits on every
// run on the same GPU model.
//
// Work O(n); steps O(n / (G·W·32) + log 32 + G / BLOCK); global bytes n·s
// read, 16·G written and read back, the result written; one launch, no
// memset. Shared memory WARPS·sizeof(value) + a flag.
//
// The result goes through R::store to out0/out1: a caller's device buffer,
// or page-locked host memory mapped into the device, in which case
// `done_flag` (non-null) receives `seq` after a system-scope fence, and the
// host, polling it, returns without a copy or a stream synchronisation.
//
// Template arguments: R (the reducer, reduce.cuh), BLOCK_THREADS, UNROLL.

template <typename R, int BLOCK_THREADS, int UNROLL>
__device__ __forceinline__ void reduce_single_pass(const typename R::input_type* __restrict__ in, u64 n,
                                                   void* out0, void* out1, u64* state, u32 epoch,
                                                   u32 vector_ok, u64* done_flag, u64 seq) {
    typedef typename R::input_type In;
    typedef typename R::value_type V;
    constexpr int WARPS = BLOCK_THREADS / 32;
    constexpr int VEC = 16 / (int)sizeof(In);
    __shared__ V warp_totals[WARPS];
    __shared__ u32 last_block;

    lookback_prepare_next_call(state, epoch);
    V* partials = reinterpret_cast<V*>(state + 4);  // words 2, 3: the in-state result slot
    const u32 lane = threadIdx.x & 31u;
    const u64 total_warps = (u64)gridDim.x * WARPS;
    const u64 warp_id = (u64)blockIdx.x * WARPS + (threadIdx.x >> 5);

    const int unit = vector_ok ? VEC : 1;  // items per unit
    const u64 units = n / (u64)unit;
    const u64 share = (units + total_warps - 1) / total_warps;
    const u64 first = warp_id * share < units ? warp_id * share : units;
    const u64 last = first + share < units ? first + share : units;

    V acc = R::identity();
    if (vector_ok) {
        const uint4* vin = reinterpret_cast<const uint4*>(in);
        for (u64 base = first; base < last; base += 32u * UNROLL) {
            uint4 raw[UNROLL];
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                const u64 u = base + (u64)k * 32u + lane;
                if (u < last) raw[k] = vin[u];
            }
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                const u64 u = base + (u64)k * 32u + lane;
                if (R::commutative) {
                    // This lane's items arrive in index order: fold them in
                    // one by one (R::accumulate may rely on that order).
                    if (u < last) {
                        In items[VEC];
                        memcpy(items, &raw[k], 16);
#pragma unroll
                        for (int j = 0; j < VEC; ++j) acc = R::accumulate(acc, items[j], u * VEC + j);
                    }
                } else {
                    V v = R::identity();
                    if (u < last) {
                        In items[VEC];
                        memcpy(items, &raw[k], 16);
#pragma unroll
                        for (int j = 0; j < VEC; ++j) v = R::combine(v, R::map(items[j], u * VEC + j));
                    }
                    v = warp_reduce_ordered<R>(v);
                    acc = R::combine(acc, v);  // lane 0's is the one kept
                }
            }
        }
    } else {
        for (u64 base = first; base < last; base += 32u * UNROLL) {
            In raw[UNROLL];
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                const u64 u = base + (u64)k * 32u + lane;
                if (u < last) raw[k] = in[u];
            }
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                const u64 u = base + (u64)k * 32u + lane;
                if (R::commutative) {
                    if (u < last) acc = R::accumulate(acc, raw[k], u);
                } else {
                    V v = u < last ? R::map(raw[k], u) : R::identity();
                    v = warp_reduce_ordered<R>(v);
                    acc = R::combine(acc, v);
                }
            }
        }
    }
    // The tail past the last whole vector: at most VEC − 1 items, after
    // every unit, so the last warp takes them after its range.
    if (warp_id == total_warps - 1) {
        const u64 tail_start = units * (u64)unit;
        V v = R::identity();
        const u64 i = tail_start + lane;
        if (i < n) v = R::map(in[i], i);
        if (R::commutative) {
            acc = R::combine(acc, v);
        } else {
            v = warp_reduce_ordered<R>(v);
            acc = R::combine(acc, v);
        }
    }
    if (R::commutative) acc = warp_reduce_ordered<R>(acc);
    const V block_total = block_fold_warps<R, BLOCK_THREADS>(acc, warp_totals);

    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block_total;
        __threadfence();
        const u64 ticket = lookback_next_tile(state, epoch);
        last_block = ticket == (u64)gridDim.x - 1u ? 1u : 0u;
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();

    // The last block: partials in block order, each thread a contiguous run.
    const u64 blocks = gridDim.x;
    const u64 run = (blocks + BLOCK_THREADS - 1) / BLOCK_THREADS;
    const u64 begin = (u64)threadIdx.x * run;
    V folded = R::identity();
    for (u64 b = begin; b < begin + run && b < blocks; ++b) {
        V p;
        constexpr int WORDS = sizeof(V) / 4;
        u32 words[WORDS];
        const u32* src = reinterpret_cast<const u32*>(partials + b);
#pragma unroll
        for (int w = 0; w < WORDS; ++w) words[w] = __ldcg(src + w);
        memcpy(&p, words, sizeof(V));
        folded = R::combine(folded, p);
    }
    folded = warp_reduce_ordered<R>(folded);
    __syncthreads();  // warp_totals is reused
    const V result = block_fold_warps<R, BLOCK_THREADS>(folded, warp_totals);
    if (threadIdx.x == 0) {
        R::store(result, out0, out1);
        if (done_flag) {
            // The result is in host memory the caller polls (gpu-core's
            // with_mapped_result): the flag goes after it, system-wide.
            __threadfence_system();
            *reinterpret_cast<volatile u64*>(done_flag) = seq;
        }
    }
}
