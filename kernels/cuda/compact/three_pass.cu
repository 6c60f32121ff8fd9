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
// Each thread takes THREE_PASS_ITEMS (4) items. The map's are consecutive,
// i = 4·thread … 4·thread + 3: one vector access per array (4 flag bytes,
// 16 bytes of u32 marks or 4-byte items) where the four lie inside the
// array at an address aligned to them, else element by element (a
// sub-view at an odd offset, the last partial quad). The scatter's are
// warp-striped (below), so that its scattered writes stay as coalesced as
// with one item per thread. Either way a thread has four items' loads in
// flight at once, and a quarter of the threads' fixed work (index, bounds,
// the count's two broadcast reads in the scatter).
//
// Cost (n items of s bytes, k kept, c = sizeof(C))
//   map:     reads n (flags) or n·s, writes n·c;         1 launch
//   scan:    what the chosen scan algorithm moves over n·c bytes;
//   scatter: reads n·s + 2·n·c, writes k·s (partition n·s); 1 launch.
//   No shared memory, no bank conflicts. Writes of the scatter are not
//   coalesced where the kept items are sparse (each warp writes a scattered
//   subset of a contiguous run). Not in place. Deterministic.

#ifndef THREE_PASS_ITEMS
#error "three_pass.cu needs THREE_PASS_ITEMS from the host (crates/compact/src/modules.rs)"
#endif

// Four consecutive elements, as one aligned access.
template <typename T>
struct alignas(THREE_PASS_ITEMS * sizeof(T)) compact_quad {
    T v[THREE_PASS_ITEMS];
};

// Whether elements i … i + 3 of `p` (n elements) lie inside it at an
// address aligned to the four: one compact_quad access.
template <typename T>
__device__ __forceinline__ bool compact_quad_ok(const T* p, u64 i, u64 n) {
    return i + THREE_PASS_ITEMS <= n &&
           reinterpret_cast<unsigned long long>(p + i) % (THREE_PASS_ITEMS * sizeof(T)) == 0;
}

// Elements i … i + 3 of `p` into x (those at or past n are left as they are).
template <typename T>
__device__ __forceinline__ void compact_quad_load(const T* __restrict__ p, u64 i, u64 n,
                                                  T (&x)[THREE_PASS_ITEMS]) {
    if (compact_quad_ok(p, i, n)) {
        const compact_quad<T> q = *reinterpret_cast<const compact_quad<T>*>(p + i);
#pragma unroll
        for (int k = 0; k < THREE_PASS_ITEMS; ++k) x[k] = q.v[k];
    } else {
#pragma unroll
        for (int k = 0; k < THREE_PASS_ITEMS; ++k)
            if (i + k < n) x[k] = p[i + k];
    }
}

// x into elements i … i + 3 of `p` (those below n).
template <typename T>
__device__ __forceinline__ void compact_quad_store(T* __restrict__ p, u64 i, u64 n,
                                                   const T (&x)[THREE_PASS_ITEMS]) {
    if (compact_quad_ok(p, i, n)) {
        compact_quad<T> q;
#pragma unroll
        for (int k = 0; k < THREE_PASS_ITEMS; ++k) q.v[k] = x[k];
        *reinterpret_cast<compact_quad<T>*>(p + i) = q;
    } else {
#pragma unroll
        for (int k = 0; k < THREE_PASS_ITEMS; ++k)
            if (i + k < n) p[i + k] = x[k];
    }
}

template <typename C>
__device__ __forceinline__ void compact_map_flags(const u8* __restrict__ flags, C* __restrict__ marks, u64 n) {
    const u64 i = global_thread_index() * THREE_PASS_ITEMS;
    if (i >= n) return;
    u8 f[THREE_PASS_ITEMS] = {};
    compact_quad_load(flags, i, n, f);
    C m[THREE_PASS_ITEMS];
#pragma unroll
    for (int k = 0; k < THREE_PASS_ITEMS; ++k) m[k] = f[k] != 0 ? (C)1 : (C)0;
    compact_quad_store(marks, i, n, m);
}

template <typename T, typename C, typename Pred>
__device__ __forceinline__ void compact_map_if(const T* __restrict__ in, Pred pred, C* __restrict__ marks, u64 n) {
    const u64 i = global_thread_index() * THREE_PASS_ITEMS;
    if (i >= n) return;
    T x[THREE_PASS_ITEMS];
    compact_quad_load(in, i, n, x);
    C m[THREE_PASS_ITEMS];
#pragma unroll
    for (int k = 0; k < THREE_PASS_ITEMS; ++k) m[k] = i + k < n && pred(x[k]) ? (C)1 : (C)0;
    compact_quad_store(marks, i, n, m);
}

template <typename T, typename C, bool PARTITION>
__device__ __forceinline__ void compact_scatter(const T* __restrict__ in, const C* __restrict__ marks,
                                                const C* __restrict__ positions, T* __restrict__ out,
                                                u64 n, u64* count_out) {
    // Warp-striped: lane l of warp w takes items w·32·ITEMS + 32·k + l, so
    // each load and each store instruction of a warp covers 32 consecutive
    // items (the kept ones go to consecutive positions: coalesced writes).
    const u64 t = global_thread_index();
    const u64 first = (t / 32u) * (32u * THREE_PASS_ITEMS) + (t % 32u);
    if (first >= n) return;
    // Every thread reads the same two words (cached), n > 0 is guaranteed by the host.
    const u64 total = (u64)positions[n - 1] + (u64)marks[n - 1];
    T x[THREE_PASS_ITEMS];
    C m[THREE_PASS_ITEMS];
    C p[THREE_PASS_ITEMS];
#pragma unroll
    for (int k = 0; k < THREE_PASS_ITEMS; ++k) {
        const u64 i = first + 32u * (u64)k;
        if (i < n) {
            x[k] = in[i];
            m[k] = marks[i];
            p[k] = positions[i];
        }
    }
#pragma unroll
    for (int k = 0; k < THREE_PASS_ITEMS; ++k) {
        const u64 i = first + 32u * (u64)k;
        if (i >= n) break;
        if (i == n - 1 && count_out != nullptr) *count_out = total;
        const u64 position = (u64)p[k];
        if (m[k] != (C)0) {
            out[position] = x[k];
        } else if (PARTITION) {
            out[total + (i - position)] = x[k];
        }
    }
}
