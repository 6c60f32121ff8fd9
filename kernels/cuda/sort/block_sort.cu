// sort/block_sort.cu — the small-input paths, each one launch with no
// global traffic between digit passes (one read and one write of the data
// in all), 8-bit LSD passes with the same stable warp ranking as the
// Onesweep pass (sort/onesweep.cu):
//   - sort_block: ONE block sorts up to BLOCK·ITEMS keys (and values) in
//     shared memory (also one segment of the segmented sort);
//   - sort_cluster (sm_90 and newer): ONE cluster of CLUSTER blocks sorts
//     up to CLUSTER·BLOCK·ITEMS keys in its distributed shared memory.
//
// Per pass (block_rank_pass): keys sit in registers in warp-striped order
// (item j of lane L of warp w is position w·32·ITEMS + 32·j + L of the
// block's part of the current sequence); each is ranked by digit
// (warp_rank_digit, sort/warp_rank.cuh) and the 256 digit counts are
// scanned across warps.
//
// sort_block then scans the counts across digits, writes keys (then
// values) to their slots of the shared exchange and reads them back in the
// same striped order for the next pass. Dynamic shared memory:
// BlockSortStorage + BLOCK·ITEMS·max(key, value) bytes of exchange.
//
// sort_cluster (keys and values of 4 or 8 bytes): each block sends its 256
// digit counts to every block of the cluster (asynchronous stores into
// distributed shared memory, counted on the receiver's mbarrier) and waits
// for everyone's; thread d then knows digit d's keys in the whole cluster
// and in the blocks before its own. One scan across digits of both counts
// gives each digit's first slot in the block and its first position in
// the cluster's sequence. The block stages its keys (values) sorted by
// digit in its own shared memory, then sends them in staging order: runs
// of one digit go to consecutive positions of the block that holds them
// (position p lies in block p / (BLOCK·ITEMS)). Each block waits on its
// mbarrier for the bytes of its part, then reads it back in striped order.
// No cluster barrier between passes (see sort_cluster for why two of each
// table, area and mbarrier make that safe). Dynamic shared memory:
// ClusterSortStorage (at most STORAGE_BYTES), then a staging area and two
// receiving areas of BLOCK·ITEMS keys and values each.
//
// Needs COMMON, WARP, BLOCK, SORT_RADIX_KEY, SORT_WARP_RANK, SORT_ONESWEEP
// (sort_digit_of).

// Cluster primitives (sm_90 and newer; they trap elsewhere, where the host
// never launches a cluster).
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

// Initialises the mbarrier at `bar` for one arrival a phase, visible to
// the whole cluster after the next cluster barrier.
__device__ __forceinline__ void mbarrier_init_for_cluster(u64* bar) {
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
    __trap();
#endif
}

// The one arrival of the current phase of `bar`, which then also waits for
// `bytes` more bytes of asynchronous stores.
__device__ __forceinline__ void mbarrier_arrive_expecting(u64* bar, u32 bytes) {
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(shared_address(bar)), "r"(bytes)
                 : "memory");
#else
    __trap();
#endif
}

// Waits until the phase of `bar` with parity `parity` has completed; the
// asynchronous stores it counted (from any block of the cluster) are then
// visible to this thread.
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
#if __CUDA_ARCH__ >= 900
    const u32 addr = shared_address(bar);
    u32 done;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
#else
    __trap();
#endif
}

// Stores `value` (4 or 8 bytes) into cluster block `rank`'s copy of
// `local_slot` asynchronously; the store counts its bytes on that block's
// copy of the mbarrier `local_bar`.
template <typename T>
__device__ __forceinline__ void cluster_store_async(T* local_slot, u32 rank, T value,
                                                    u64* local_bar) {
#if __CUDA_ARCH__ >= 900
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "asynchronous stores of 4 or 8 bytes");
    const u32 slot = cluster_address(local_slot, rank);
    const u32 bar = cluster_address(local_bar, rank);
    if constexpr (sizeof(T) == 4) {
        u32 bits;
        memcpy(&bits, &value, 4);
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                     ::"r"(slot), "r"(bits), "r"(bar)
                     : "memory");
    } else {
        u64 bits;
        memcpy(&bits, &value, 8);
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];"
                     ::"r"(slot), "l"(bits), "r"(bar)
                     : "memory");
    }
#else
    __trap();
#endif
}

// Stores four words (16-byte aligned) into cluster block `rank`'s copy of
// `local_slot` asynchronously, counted on that block's copy of `local_bar`.
__device__ __forceinline__ void cluster_store4_async(u32* local_slot, u32 rank, uint4 value,
                                                     u64* local_bar) {
#if __CUDA_ARCH__ >= 900
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
        ::"r"(cluster_address(local_slot, rank)), "r"(value.x), "r"(value.y), "r"(value.z),
        "r"(value.w), "r"(cluster_address(local_bar, rank))
        : "memory");
#else
    __trap();
#endif
}

// One pass's ranking within the block: slot[j] = the rank of key j among
// the keys of its digit in its warp (warp-striped sequence order), and
// warp_counts[w·256 + d] = the block's keys of digit d in warps before w.
// Returns the block's count of digit d in thread d < 256 (0 elsewhere).
// The caller must __syncthreads() before reading warp_counts.
template <typename K, int BLOCK, int ITEMS>
__device__ __forceinline__ u32 block_rank_pass(const K (&key)[ITEMS], u32 count, u32 shift,
                                               u32 width, bool desc, u32* warp_counts,
                                               u32 (&slot)[ITEMS]) {
    static_assert(BLOCK >= SORT_RADIX && BLOCK % 32 == 0, "at least one thread per digit");
    constexpr int WARPS = BLOCK / 32;
    constexpr int WARP_ITEMS = 32 * ITEMS;
    const u32 tid = threadIdx.x;
    const u32 lane = tid & 31u;
    const u32 warp = tid >> 5;
    for (u32 i = tid; i < WARPS * SORT_RADIX; i += BLOCK) warp_counts[i] = 0u;
    __syncthreads();
    u32* my_counts = warp_counts + warp * SORT_RADIX;
    // Any row may have lanes without keys: every row ranks as a partial one.
    // The peers of every row first (independent of each other), then the
    // ranks row by row (through the warp's counters).
    u32 digit[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        digit[j] = idx < count ? sort_digit_of(ordered_radix<K>(key[j], desc), shift, width)
                               : (u32)SORT_RADIX;
        slot[j] = warp_digit_peers(digit[j], true);
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) slot[j] = warp_rank_from_peers(my_counts, digit[j], slot[j]);
    __syncthreads();
    u32 total = 0u;
    if (tid < SORT_RADIX) {
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const u32 c = warp_counts[w * SORT_RADIX + tid];
            warp_counts[w * SORT_RADIX + tid] = total;
            total += c;
        }
    }
    return total;
}

template <int BLOCK>
struct BlockSortStorage {
    static constexpr int WARPS = BLOCK / 32;
    u32 warp_counts[WARPS * SORT_RADIX];
    u32 tile_start[SORT_RADIX];
    typename BlockScan<u32, sum_op<u32>, BLOCK>::Storage scan;
};

template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS>
__device__ __forceinline__ void sort_block(const K* keys_in, K* keys_out,
                                           const V* values_in,
                                           V* values_out, u32 n, u32 begin_bit,
                                           u32 end_bit, u32 descending) {
    typedef BlockSortStorage<BLOCK> Storage;
    constexpr int WARP_ITEMS = 32 * ITEMS;
    extern __shared__ u64 block_sort_shared[];
    Storage& s = *reinterpret_cast<Storage*>(block_sort_shared);
    u64* exchange = block_sort_shared + (sizeof(Storage) + 7) / 8;
    K* exchange_keys = reinterpret_cast<K*>(exchange);
    V* exchange_values = reinterpret_cast<V*>(exchange);
    const u32 tid = threadIdx.x;
    const u32 lane = tid & 31u;
    const u32 warp = tid >> 5;
    const bool desc = descending != 0u;

    K key[ITEMS];
    V value[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        key[j] = idx < n ? keys_in[idx] : (K)0;
        if (HAS_VALUES && idx < n) value[j] = values_in[idx];
    }
    for (u32 shift = begin_bit; shift < end_bit; shift += 8u) {
        const u32 width = min(8u, end_bit - shift);
        u32 slot[ITEMS];
        const u32 total =
            block_rank_pass<K, BLOCK, ITEMS>(key, n, shift, width, desc, s.warp_counts, slot);
        u32 all;
        u32 start = BlockScan<u32, sum_op<u32>, BLOCK>::exclusive_scan(total, s.scan, all);
        if (tid == 0) start = 0u;
        if (tid < SORT_RADIX) s.tile_start[tid] = start;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < n) {
                const u32 digit = sort_digit_of(ordered_radix<K>(key[j], desc), shift, width);
                slot[j] += s.tile_start[digit] + s.warp_counts[warp * SORT_RADIX + digit];
                exchange_keys[slot[j]] = key[j];
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < n) key[j] = exchange_keys[idx];
        }
        if (HAS_VALUES) {
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
                if (idx < n) exchange_values[slot[j]] = value[j];
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
                if (idx < n) value[j] = exchange_values[idx];
            }
        }
        __syncthreads();  // the exchange and counters are reused by the next pass
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        if (idx < n) {
            keys_out[idx] = key[j];
            if (HAS_VALUES) values_out[idx] = value[j];
        }
    }
}

template <int BLOCK, int CLUSTER>
struct ClusterSortStorage {
    static constexpr int WARPS = BLOCK / 32;
    u64 counts_arrived[2];  // mbarriers: every block's counts, by pass parity
    u64 keys_arrived[2];    // mbarriers: this block's keys (values), by pass parity
    u32 warp_counts[WARPS * SORT_RADIX];
    u32 stage_start[SORT_RADIX];     // the digit's first staging slot in this block
    u32 position_delta[SORT_RADIX];  // cluster position − staging slot, mod 2^32
    alignas(16) u32 block_counts[SORT_RADIX];  // this block's count of each digit
    alignas(16) u32 counts[2][CLUSTER][SORT_RADIX];  // block b's count of each digit, by pass parity
    typename BlockScan<u64, sum_op<u64>, BLOCK>::Storage scan;
};

// Block b of the cluster holds positions [b·PART, (b + 1)·PART) of the
// sequence, PART = BLOCK·ITEMS; n ≤ CLUSTER·PART. Keys and values of 4 or
// 8 bytes. Each block loads its part before it sends anything and stores
// the same part after it has received everything, so in and out may be the
// same.
//
// No cluster barrier between passes: every exchange is an asynchronous
// store counted on the receiver's mbarrier, which the receiver waits for.
// Two of each (counts tables, receiving areas, mbarriers), by pass parity,
// make that safe: a block sends pass p's keys to block b only after it has
// b's counts of pass p, which b publishes after it has read back pass
// p − 1's keys — so b has long finished with the area and table of parity
// p (pass p − 2) and their mbarriers' previous phase has completed.
template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS, int CLUSTER,
          int STORAGE_BYTES>
__device__ __forceinline__ void sort_cluster(const K* keys_in, K* keys_out, const V* values_in,
                                             V* values_out, u32 n, u32 begin_bit, u32 end_bit,
                                             u32 descending) {
#if __CUDA_ARCH__ >= 900
    typedef ClusterSortStorage<BLOCK, CLUSTER> Storage;
    static_assert(sizeof(Storage) <= STORAGE_BYTES && STORAGE_BYTES % 16 == 0,
                  "the host's storage size holds the block's tables");
    static_assert(CLUSTER >= 2 && CLUSTER <= 16, "a cluster of 2 to 16 blocks");
    constexpr int WARP_ITEMS = 32 * ITEMS;
    constexpr u32 PART = (u32)(BLOCK * ITEMS);
    static_assert((PART & (PART - 1)) == 0, "a power-of-two part per block");
    constexpr u32 VALUE_BYTES = HAS_VALUES ? (u32)sizeof(V) : 0u;
    constexpr u32 ITEM_BYTES = (u32)sizeof(K) + VALUE_BYTES;
    extern __shared__ u64 cluster_sort_shared[];
    Storage& s = *reinterpret_cast<Storage*>(cluster_sort_shared);
    char* areas = reinterpret_cast<char*>(cluster_sort_shared) + STORAGE_BYTES;
    // Staging, then two receiving areas (by pass parity): keys, then
    // values, each.
    K* stage_keys = reinterpret_cast<K*>(areas);
    V* stage_values = reinterpret_cast<V*>(areas + PART * sizeof(K));
    const u32 tid = threadIdx.x;
    const u32 lane = tid & 31u;
    const u32 warp = tid >> 5;
    const bool desc = descending != 0u;
    const u32 rank = cluster_block_rank();
    const u32 first = rank * PART;
    const u32 count = n > first ? min(PART, n - first) : 0u;

    if (tid == 0) {
        mbarrier_init_for_cluster(&s.counts_arrived[0]);
        mbarrier_init_for_cluster(&s.counts_arrived[1]);
        mbarrier_init_for_cluster(&s.keys_arrived[0]);
        mbarrier_init_for_cluster(&s.keys_arrived[1]);
    }
    K key[ITEMS];
    V value[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        key[j] = idx < count ? keys_in[first + idx] : (K)0;
        if (HAS_VALUES && idx < count) value[j] = values_in[first + idx];
    }
    // Every block's mbarriers are initialised before anyone stores to them.
    cluster_barrier();
    u32 pass = 0u;
    for (u32 shift = begin_bit; shift < end_bit; shift += 8u, ++pass) {
        const u32 width = min(8u, end_bit - shift);
        const u32 q = pass & 1u;
        const u32 phase = (pass >> 1) & 1u;  // each mbarrier serves every other pass
        char* receive_area = areas + (1u + q) * PART * ITEM_BYTES;
        K* receive_keys = reinterpret_cast<K*>(receive_area);
        V* receive_values = reinterpret_cast<V*>(receive_area + PART * sizeof(K));
        u32 slot[ITEMS];
        const u32 total =
            block_rank_pass<K, BLOCK, ITEMS>(key, count, shift, width, desc, s.warp_counts, slot);
        if (tid == 0) {
            mbarrier_arrive_expecting(&s.counts_arrived[q], CLUSTER * SORT_RADIX * 4u);
            mbarrier_arrive_expecting(&s.keys_arrived[q], count * ITEM_BYTES);
        }
        if (tid < SORT_RADIX) s.block_counts[tid] = total;
        __syncthreads();
        // Every block gets this block's counts, four digits a store.
        for (u32 w = tid; w < CLUSTER * (SORT_RADIX / 4); w += BLOCK) {
            const u32 b = w / (SORT_RADIX / 4);
            const u32 d = 4u * (w % (SORT_RADIX / 4));
            cluster_store4_async(&s.counts[q][rank][d], b,
                                 *reinterpret_cast<const uint4*>(&s.block_counts[d]),
                                 &s.counts_arrived[q]);
        }
        mbarrier_wait(&s.counts_arrived[q], phase);
        u64 both = 0u;  // (the digit's keys in the cluster) << 32 | (in this block)
        u32 before = 0u;  // the digit's keys in the blocks before this one
        if (tid < SORT_RADIX) {
            u32 everywhere = 0u;
#pragma unroll
            for (int b = 0; b < CLUSTER; ++b) {
                const u32 c = s.counts[q][b][tid];
                before += (u32)b < rank ? c : 0u;
                everywhere += c;
            }
            both = ((u64)everywhere << 32) | total;
        }
        u64 all;
        u64 start = BlockScan<u64, sum_op<u64>, BLOCK>::exclusive_scan(both, s.scan, all);
        if (tid == 0) start = 0u;
        if (tid < SORT_RADIX) {
            const u32 staged = (u32)start;
            s.stage_start[tid] = staged;
            s.position_delta[tid] = (u32)(start >> 32) + before - staged;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < count) {
                const u32 digit = sort_digit_of(ordered_radix<K>(key[j], desc), shift, width);
                const u32 at =
                    slot[j] + s.stage_start[digit] + s.warp_counts[warp * SORT_RADIX + digit];
                stage_keys[at] = key[j];
                if (HAS_VALUES) stage_values[at] = value[j];
            }
        }
        __syncthreads();
        // Runs of one digit go to consecutive positions.
        for (u32 i = tid; i < count; i += BLOCK) {
            const K k = stage_keys[i];
            const u32 digit = sort_digit_of(ordered_radix<K>(k, desc), shift, width);
            const u32 position = i + s.position_delta[digit];
            const u32 owner = position / PART;
            const u32 at = position % PART;
            cluster_store_async(receive_keys + at, owner, k, &s.keys_arrived[q]);
            if constexpr (HAS_VALUES)
                cluster_store_async(receive_values + at, owner, stage_values[i],
                                    &s.keys_arrived[q]);
        }
        mbarrier_wait(&s.keys_arrived[q], phase);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
            if (idx < count) {
                key[j] = receive_keys[idx];
                if (HAS_VALUES) value[j] = receive_values[idx];
            }
        }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const u32 idx = warp * WARP_ITEMS + 32u * j + lane;
        if (idx < count) {
            keys_out[first + idx] = key[j];
            if (HAS_VALUES) values_out[first + idx] = value[j];
        }
    }
#else
    __trap();
#endif
}

// Segmented sort: block s (blockIdx.y · gridDim.x + blockIdx.x) sorts
// segment s < segments, keys [offsets[s], offsets[s+1]) (at most
// BLOCK·ITEMS of them, checked by the host), with sort_block.
template <typename K, typename V, bool HAS_VALUES, int BLOCK, int ITEMS>
__device__ __forceinline__ void sort_segments(const K* keys_in, K* keys_out, const V* values_in,
                                              V* values_out, const u64* __restrict__ offsets,
                                              u64 segments, u32 begin_bit, u32 end_bit,
                                              u32 descending) {
    const u64 segment = (u64)blockIdx.y * gridDim.x + blockIdx.x;
    if (segment >= segments) return;  // the whole block: the grid's spare blocks
    const u64 start = offsets[segment];
    const u32 n = (u32)(offsets[segment + 1] - start);
    sort_block<K, V, HAS_VALUES, BLOCK, ITEMS>(keys_in + start, keys_out + start,
                                               HAS_VALUES ? values_in + start : values_in,
                                               HAS_VALUES ? values_out + start : values_out, n,
                                               begin_bit, end_bit, descending);
}
