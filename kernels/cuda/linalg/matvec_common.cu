// matvec_common.cu — pieces shared by the matvec kernels (matvec_global.cu,
// matvec_tiled.cu, matvec_tuned.cu): the multiply-add each element type uses,
// 16-byte vector loads of every element type, and the store of a result or
// a partial sum.
//
// Sums run in the accumulator acc_t<T> (common.cuh): T itself, except f32
// for f16 and bf16, whose products and sums are carried in f32 and rounded
// once, when the output is stored (partial sums of split problems stay in
// f32). Integer products and sums wrap (through the unsigned type, see
// common.cuh), exactly as the CPU reference's wrapping_mul / wrapping_add
// do. Float multiply-adds may be contracted to FMA by the compiler (NVRTC's
// default).
#pragma once

// acc + a·b in the accumulator.
template <typename T>
__device__ __forceinline__ acc_t<T> mul_add(T a, T b, acc_t<T> acc) {
    return wrapping_add(acc, wrapping_mul(to_acc(a), to_acc(b)));
}

// A load with the cache-streaming hint (ld.global.cs: evict first). The
// 16-bit floats load their bits.
template <typename T> __device__ __forceinline__ T load_streaming(const T* p) { return __ldcs(p); }
__device__ __forceinline__ f16 load_streaming(const f16* p) {
    return f16_from_bits(__ldcs(reinterpret_cast<const u16*>(p)));
}
__device__ __forceinline__ bf16 load_streaming(const bf16* p) {
    return bf16_from_bits(__ldcs(reinterpret_cast<const u16*>(p)));
}

// A 16-byte vector of T: `lanes` elements. `load` reads it from a
// 16-byte-aligned address with one 16-byte instruction; `gather` builds it
// from `lanes` scalar loads (any T-aligned address); `dot` accumulates the
// lane-by-lane products into `acc`, lane 0 first; `axpy` adds a·s into
// `lanes` accumulators. `load_streaming` is `load` with the
// cache-streaming hint (`ld.global.cs`, evict-first in L1 and L2): for data
// read exactly once, such as the matrix of a matvec, so that it does not
// push reused data (x) out of the caches.
template <typename T> struct vec16_native { typedef uint4 type; };  // 2-byte types
template <> struct vec16_native<f32> { typedef float4 type; };
template <> struct vec16_native<i32> { typedef int4 type; };
template <> struct vec16_native<f64> { typedef double2 type; };

template <typename T>
struct vec16 {
    static constexpr u32 lanes = 16 / sizeof(T);
    // The CUDA vector type the 16 bytes load as, and its T lanes.
    typedef typename vec16_native<T>::type native;
    union type {
        native raw;
        T e[lanes];
    };
    static __device__ __forceinline__ type load(const T* p) {
        type v;
        v.raw = *reinterpret_cast<const native*>(p);
        return v;
    }
    static __device__ __forceinline__ type load_streaming(const T* p) {
        type v;
        v.raw = __ldcs(reinterpret_cast<const native*>(p));
        return v;
    }
    static __device__ __forceinline__ type gather(const T* p) {
        type v;
#pragma unroll
        for (u32 k = 0; k < lanes; ++k) v.e[k] = p[k];
        return v;
    }
    static __device__ __forceinline__ acc_t<T> dot(type a, type x, acc_t<T> acc) {
#pragma unroll
        for (u32 k = 0; k < lanes; ++k) acc = mul_add(a.e[k], x.e[k], acc);
        return acc;
    }
    static __device__ __forceinline__ void axpy(type a, T s, acc_t<T>* acc) {
#pragma unroll
        for (u32 k = 0; k < lanes; ++k) acc[k] = mul_add(a.e[k], s, acc[k]);
    }
};

// Stores output i of part `part` (of `parts`, each `len` outputs): with one
// part the result itself, rounded once into y; else the accumulator, into
// partial[part·len + i], for matvec_tuned_t_reduce to add up. A type that
// accumulates in itself picks the pointer with a select (part is 0 when
// there is one), so the store is the same instruction either way.
template <typename T>
__device__ __forceinline__ void matvec_store(T* __restrict__ y, acc_t<T>* __restrict__ partial,
                                             u64 part, u64 parts, u64 len, u64 i, acc_t<T> v) {
    if constexpr (acc_is_self<T>) {
        T* out = parts == 1 ? y : partial;
        out[part * len + i] = v;
    } else if (parts == 1) {
        y[i] = from_acc<T>(v);
    } else {
        partial[part * len + i] = v;
    }
}

// Dynamic shared memory of the tiled kernels, as raw bytes (one declaration
// for every element type of the module), aligned for the widest type.
extern __shared__ __align__(16) unsigned char matvec_dynamic_smem[];
