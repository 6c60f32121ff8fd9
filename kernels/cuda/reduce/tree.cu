// reduce/tree.cu — the lesson's reductions: a tree per block, one launch
// per level (n → ⌈n / B⌉ → … → 1), in global or in shared memory.
//
// Each block folds B consecutive values with a binary tree and writes one
// partial; the next launch folds the partials, until one block is left,
// which stores the result. The tree pairs x[2·s·t] with x[2·s·t + s] for
// s = 1, 2, 4, …: the active threads stay contiguous (whole warps retire
// together) and every combine takes its left operand from lower indices,
// so a custom operator need only be associative. (The lesson's other form,
// x[t] with x[t + s] for s = B/2 … 1, is free of shared-memory bank
// conflicts but combines out of index order.)
//
// Global-memory tree: the first level copies its block's items (mapped to
// the reducer's value type) into a work array, the tree then runs on that
// array in global memory, a __syncthreads between levels; later levels run
// in place on the previous level's partials. Bytes: n·s read, n·v written
// and about 2·n·v read and written by the tree, plus the partials.
// Shared-memory tree: the same tree on a shared array of B values; bytes
// n·s read plus the partials. Work O(n) combines for both; steps
// O(log_B n · log B); ⌈log_B n⌉ launches.
//
// Template arguments: R (the reducer, reduce.cuh), BLOCK_THREADS (a power
// of two). Value arrays are passed as void* and cast to R::value_type.

template <typename R>
__device__ __forceinline__ void tree_finish(typename R::value_type total, void* partials, void* out0,
                                            void* out1) {
    if (threadIdx.x != 0) return;
    if (gridDim.x == 1)
        R::store(total, out0, out1);
    else
        reinterpret_cast<typename R::value_type*>(partials)[blockIdx.x] = total;
}

// Folds data[0, count) of one block in place (global memory), the total
// left in data[0]. Every thread of the block calls it.
template <typename R, int BLOCK_THREADS>
__device__ __forceinline__ void global_tree_fold(typename R::value_type* data, u32 count) {
    for (u32 s = 1; s < BLOCK_THREADS; s <<= 1) {
        const u32 left = 2u * s * threadIdx.x;
        if (left + s < count) data[left] = R::combine(data[left], data[left + s]);
        __syncthreads();
    }
}

template <typename R, int BLOCK_THREADS>
__device__ __forceinline__ void reduce_global_tree_first(const typename R::input_type* __restrict__ in, u64 n,
                                                         void* work, void* partials, void* out0, void* out1) {
    typedef typename R::value_type V;
    const u64 base = (u64)blockIdx.x * BLOCK_THREADS;
    const u64 i = base + threadIdx.x;
    V* data = reinterpret_cast<V*>(work) + base;
    const u32 count = n > base ? (u32)min((u64)BLOCK_THREADS, n - base) : 0u;
    if (i < n) data[threadIdx.x] = R::map(in[i], i);
    __syncthreads();
    global_tree_fold<R, BLOCK_THREADS>(data, count);
    tree_finish<R>(count ? data[0] : R::identity(), partials, out0, out1);
}

template <typename R, int BLOCK_THREADS>
__device__ __forceinline__ void reduce_global_tree_next(void* values, u64 n, void* partials, void* out0,
                                                        void* out1) {
    typedef typename R::value_type V;
    const u64 base = (u64)blockIdx.x * BLOCK_THREADS;
    V* data = reinterpret_cast<V*>(values) + base;
    const u32 count = (u32)min((u64)BLOCK_THREADS, n - base);
    global_tree_fold<R, BLOCK_THREADS>(data, count);
    tree_finish<R>(data[0], partials, out0, out1);
}

// FIRST: `in` holds input items (mapped on load); otherwise it holds the
// previous level's partials (R::value_type), passed through the same
// pointer type.
template <typename R, int BLOCK_THREADS, bool FIRST>
__device__ __forceinline__ void reduce_shared_tree(const typename R::input_type* __restrict__ in, u64 n,
                                                   void* partials, void* out0, void* out1) {
    typedef typename R::value_type V;
    __shared__ V data[BLOCK_THREADS];
    const u64 i = (u64)blockIdx.x * BLOCK_THREADS + threadIdx.x;
    V v = R::identity();
    if (i < n) {
        if (FIRST)
            v = R::map(in[i], i);
        else
            v = reinterpret_cast<const V*>(in)[i];
    }
    data[threadIdx.x] = v;
    __syncthreads();
    for (u32 s = 1; s < BLOCK_THREADS; s <<= 1) {
        const u32 left = 2u * s * threadIdx.x;
        if (left + s < BLOCK_THREADS) data[left] = R::combine(data[left], data[left + s]);
        __syncthreads();
    }
    tree_finish<R>(data[0], partials, out0, out1);
}
