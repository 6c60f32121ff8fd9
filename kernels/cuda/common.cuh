// common.cuh — definitions shared by every parprims module.
//
// NVRTC compiles our modules without an include path and without the C/C++
// standard headers, so the few things we need are spelled out here.
#pragma once

typedef unsigned char      u8;
typedef signed int         i32;
typedef unsigned int       u32;
typedef long long          i64;
typedef unsigned long long u64;
typedef float              f32;
typedef double             f64;

// Element counts and indices are 64-bit everywhere an array can exceed
// 2^31 elements. `global_thread_index` flattens a 1-D launch that may use the
// y dimension of the grid for more blocks than gridDim.x holds (see
// gpu_core::launch::Geometry1d): block b = blockIdx.y * gridDim.x + blockIdx.x.
__device__ __forceinline__ u64 linear_block_index() {
    return (u64)blockIdx.y * (u64)gridDim.x + (u64)blockIdx.x;
}
__device__ __forceinline__ u64 global_thread_index() {
    return linear_block_index() * (u64)blockDim.x + (u64)threadIdx.x;
}

// Signed integer overflow is undefined in C++; wrapping arithmetic (what the
// CPU reference does with wrapping_add) goes through the unsigned type.
__device__ __forceinline__ i32 wrapping_add(i32 a, i32 b) { return (i32)((u32)a + (u32)b); }
__device__ __forceinline__ u32 wrapping_add(u32 a, u32 b) { return a + b; }
__device__ __forceinline__ i64 wrapping_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ u64 wrapping_add(u64 a, u64 b) { return a + b; }
__device__ __forceinline__ f32 wrapping_add(f32 a, f32 b) { return a + b; }
__device__ __forceinline__ f64 wrapping_add(f64 a, f64 b) { return a + b; }
__device__ __forceinline__ i32 wrapping_mul(i32 a, i32 b) { return (i32)((u32)a * (u32)b); }
__device__ __forceinline__ u32 wrapping_mul(u32 a, u32 b) { return a * b; }
__device__ __forceinline__ i64 wrapping_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ u64 wrapping_mul(u64 a, u64 b) { return a * b; }
__device__ __forceinline__ f32 wrapping_mul(f32 a, f32 b) { return a * b; }
__device__ __forceinline__ f64 wrapping_mul(f64 a, f64 b) { return a * b; }

// Max and min as the CPU reference defines them: `a > b ? a : b` (no NaN
// special-casing, so GPU and CPU agree bit for bit on any input).
template <typename T> __device__ __forceinline__ T max_of(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T min_of(T a, T b) { return a < b ? a : b; }

// Infinity without <math.h> / <limits>.
__device__ __forceinline__ f32 f32_infinity() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ f64 f64_infinity() { return __longlong_as_double(0x7ff0000000000000LL); }

// Decoupled look-back (single_pass/lookback.cuh): grids of
// fewer tiles than this skip the look-back's start and spin delays. A small
// grid has few tiles in flight and little contention for the tile statuses,
// so sleeping would only add latency.
#define LOOKBACK_DELAY_MIN_TILES 512ull

// The sum as an operator functor, shaped like the ones the host generates
// (gpu_core::operator_prelude: static identity() and combine(a, b)), for
// kernels that combine counts and offsets (compaction's block scan of kept
// counts and its look-back over tile counts). Wrapping, like the CPU's.
template <typename T>
struct sum_op {
    typedef T value_type;
    static __device__ __forceinline__ T identity() { return (T)0; }
    static __device__ __forceinline__ T combine(T a, T b) { return wrapping_add(a, b); }
};

// Row-tile index of a 2-D launch whose row tiles spill from y into z
// (gpu_core::launch::grid_2d): tile = blockIdx.z * gridDim.y + blockIdx.y.
__device__ __forceinline__ u64 block_row_2d() {
    return (u64)blockIdx.z * (u64)gridDim.y + (u64)blockIdx.y;
}
