// block/cluster.cuh — thread block clusters (sm_90 and newer): a block's
// rank in its cluster, the cluster barrier (whole, or split into its
// arrive and wait halves), and reads of another block's shared memory
// (distributed shared memory). Used by the one-cluster sort
// (sort/block_sort.cu) and the one-cluster tile prefix
// (single_pass/cluster_prefix.cuh).
//
// Elsewhere every function traps: the host launches a cluster only on
// sm_90 and newer, and only from an entry compiled with __cluster_dims__.
#pragma once

// This block's rank in its cluster (0 … cluster size − 1).
__device__ __forceinline__ u32 cluster_block_rank() {
#if __CUDA_ARCH__ >= 900
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
#else
    __trap();
    return 0u;
#endif
}

// Every thread of every block of the cluster arrives; shared-memory writes
// before it (local or remote) are visible to every block after it.
__device__ __forceinline__ void cluster_barrier() {
#if __CUDA_ARCH__ >= 900
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n\t"
        "barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
    __trap();
#endif
}

// The first half of a cluster barrier: this thread's memory accesses
// before it (its reads of other blocks' shared memory included) are done
// before any thread's cluster_wait() returns. Every thread of the block
// calls it once, then cluster_wait() once.
__device__ __forceinline__ void cluster_arrive() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#else
    __trap();
#endif
}

// The second half: returns once every thread of the cluster has arrived.
// A block whose shared memory others read waits here before it exits.
__device__ __forceinline__ void cluster_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
    __trap();
#endif
}

// The shared-window address of a pointer into this block's shared memory.
__device__ __forceinline__ u32 shared_address(const void* p) {
    u64 a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (u32)a;
}

// The shared::cluster address of `local` (in this block's shared memory)
// in cluster block `rank`'s shared memory.
__device__ __forceinline__ u32 cluster_address(const void* local, u32 rank) {
#if __CUDA_ARCH__ >= 900
    u32 remote;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(shared_address(local)), "r"(rank));
    return remote;
#else
    __trap();
    return 0u;
#endif
}

// Cluster block `rank`'s copy of `*local` (a 4-byte-aligned value of a
// multiple of 4 bytes), read word by word from its shared memory.
template <typename T>
__device__ __forceinline__ T cluster_load(const T* local, u32 rank) {
    static_assert(sizeof(T) % 4 == 0, "a value of whole 4-byte words");
    constexpr int WORDS = (int)(sizeof(T) / 4);
    u32 words[WORDS];
#if __CUDA_ARCH__ >= 900
    const u32 remote = cluster_address(local, rank);
#pragma unroll
    for (int i = 0; i < WORDS; ++i)
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(words[i]) : "r"(remote + 4u * (u32)i) : "memory");
#else
    __trap();
#pragma unroll
    for (int i = 0; i < WORDS; ++i) words[i] = 0u;
#endif
    T value;
    memcpy(&value, words, sizeof(T));
    return value;
}
