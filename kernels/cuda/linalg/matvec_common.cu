// matvec_common.cu — pieces shared by the matvec kernels (matvec_global.cu,
// matvec_tiled.cu, matvec_tuned.cu): the multiply-add each element type uses
// and 16-byte vector loads of f32, f64 and i32.
//
// Integer products and sums wrap (through the unsigned type, see common.cuh),
// exactly as the CPU reference's wrapping_mul / wrapping_add do. Float
// multiply-adds may be contracted to FMA by the compiler (NVRTC's default).
#pragma once

template <typename T>
__device__ __forceinline__ T mul_add(T a, T b, T acc) {
    return wrapping_add(acc, wrapping_mul(a, b));
}

// A 16-byte vector of T: `type` is the CUDA vector type, `lanes` how many T it
// holds. `load` reads it from a 16-byte-aligned address with one instruction;
// `gather` builds it from `lanes` scalar loads (any T-aligned address);
// `dot` accumulates the lane-by-lane products into `acc`, lane 0 first.
// `load_streaming` is `load` with the cache-streaming hint (`ld.global.cs`,
// evict-first in L1 and L2): for data read exactly once, such as the matrix
// of a matvec, so that it does not push reused data (x) out of the caches.
template <typename T> struct vec16;

template <> struct vec16<f32> {
    typedef float4 type;
    static constexpr u32 lanes = 4;
    static __device__ __forceinline__ type load(const f32* p) { return *reinterpret_cast<const float4*>(p); }
    static __device__ __forceinline__ type load_streaming(const f32* p) { return __ldcs(reinterpret_cast<const float4*>(p)); }
    static __device__ __forceinline__ type gather(const f32* p) { return make_float4(p[0], p[1], p[2], p[3]); }
    static __device__ __forceinline__ f32 dot(type a, type x, f32 acc) {
        acc = mul_add(a.x, x.x, acc);
        acc = mul_add(a.y, x.y, acc);
        acc = mul_add(a.z, x.z, acc);
        return mul_add(a.w, x.w, acc);
    }
    static __device__ __forceinline__ void axpy(type a, f32 s, f32* acc) {
        acc[0] = mul_add(a.x, s, acc[0]);
        acc[1] = mul_add(a.y, s, acc[1]);
        acc[2] = mul_add(a.z, s, acc[2]);
        acc[3] = mul_add(a.w, s, acc[3]);
    }
};

template <> struct vec16<i32> {
    typedef int4 type;
    static constexpr u32 lanes = 4;
    static __device__ __forceinline__ type load(const i32* p) { return *reinterpret_cast<const int4*>(p); }
    static __device__ __forceinline__ type load_streaming(const i32* p) { return __ldcs(reinterpret_cast<const int4*>(p)); }
    static __device__ __forceinline__ type gather(const i32* p) { return make_int4(p[0], p[1], p[2], p[3]); }
    static __device__ __forceinline__ i32 dot(type a, type x, i32 acc) {
        acc = mul_add(a.x, x.x, acc);
        acc = mul_add(a.y, x.y, acc);
        acc = mul_add(a.z, x.z, acc);
        return mul_add(a.w, x.w, acc);
    }
    static __device__ __forceinline__ void axpy(type a, i32 s, i32* acc) {
        acc[0] = mul_add(a.x, s, acc[0]);
        acc[1] = mul_add(a.y, s, acc[1]);
        acc[2] = mul_add(a.z, s, acc[2]);
        acc[3] = mul_add(a.w, s, acc[3]);
    }
};

template <> struct vec16<f64> {
    typedef double2 type;
    static constexpr u32 lanes = 2;
    static __device__ __forceinline__ type load(const f64* p) { return *reinterpret_cast<const double2*>(p); }
    static __device__ __forceinline__ type load_streaming(const f64* p) { return __ldcs(reinterpret_cast<const double2*>(p)); }
    static __device__ __forceinline__ type gather(const f64* p) { return make_double2(p[0], p[1]); }
    static __device__ __forceinline__ f64 dot(type a, type x, f64 acc) {
        acc = mul_add(a.x, x.x, acc);
        return mul_add(a.y, x.y, acc);
    }
    static __device__ __forceinline__ void axpy(type a, f64 s, f64* acc) {
        acc[0] = mul_add(a.x, s, acc[0]);
        acc[1] = mul_add(a.y, s, acc[1]);
    }
};

// Dynamic shared memory of the tiled kernels, as raw bytes (one declaration
// for every element type of the module), aligned for the widest type.
extern __shared__ __align__(16) unsigned char matvec_dynamic_smem[];
