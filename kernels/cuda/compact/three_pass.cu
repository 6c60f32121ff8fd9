// compact/three_pass.cu — the lab's compaction: map, exclusive scan, scatter.
//
// What it computes (with the scan in between done by the scan crate)
//   map:     marks[i] = 1 if flags[i] != 0 (or pred(in[i])), else 0;
//   (scan):  positions = exclusive prefix sum of marks;
//   scatter: select:    out[positions[i]] = in[i] where marks[i] != 0, and
//                       *count_out = positions[n-1] + marks[n-1];
//            partition: as select, and the rejected in[i] go to
//                       out[count + (i - positions[i])], in input order.
//   C, the mark/position type, is u32 while n < 2^32 (half the traffic) and
//   u64 beyond, where a u32 prefix would wrap.
//
// Cost (n items of s bytes, k kept, c = sizeof(C))
//   map:     reads n (flags) or n·s, writes n·c;         1 launch, 1 item/thread
//   scan:    what the chosen scan algorithm moves over n·c bytes;
//   scatter: reads n·s + 2·n·c, writes k·s (partition n·s); 1 launch.
//   No shared memory, no bank conflicts. Writes of the scatter are not
//   coalesced where the kept items are sparse (each warp writes a scattered
//   subset of a contiguous run). Not in place. Deterministic.

template <typename C>
__device__ __forceinline__ void compact_map_flags(const u8* __restrict__ flags, C* __restrict__ marks, u64 n) {
    const u64 i = global_thread_index();
    if (i < n) marks[i] = flags[i] != 0 ? (C)1 : (C)0;
}

template <typename T, typename C, typename Pred>
__device__ __forceinline__ void compact_map_if(const T* __restrict__ in, Pred pred, C* __restrict__ marks, u64 n) {
    const u64 i = global_thread_index();
    if (i < n) marks[i] = pred(in[i]) ? (C)1 : (C)0;
}

template <typename T, typename C, bool PARTITION>
__device__ __forceinline__ void compact_scatter(const T* __restrict__ in, const C* __restrict__ marks,
                                                const C* __restrict__ positions, T* __restrict__ out,
                                                u64 n, u64* count_out) {
    const u64 i = global_thread_index();
    if (i >= n) return;
    // Every thread reads the same two words (cached), n > 0 is guaranteed by the host.
    const u64 total = (u64)positions[n - 1] + (u64)marks[n - 1];
    if (i == n - 1 && count_out != nullptr) *count_out = total;
    const u64 position = (u64)positions[i];
    if (marks[i] != (C)0) {
        out[position] = in[i];
    } else if (PARTITION) {
        out[total + (i - position)] = in[i];
    }
}
