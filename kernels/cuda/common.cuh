// common.cuh — definitions shared by every parprims module.
//
// NVRTC compiles our modules without an include path and without the C/C++
// standard headers, so the few things we need are spelled out here.
#pragma once

typedef signed char        i8;
typedef unsigned char      u8;
typedef signed short       i16;
typedef unsigned short     u16;
typedef signed int         i32;
typedef unsigned int       u32;
typedef long long          i64;
typedef unsigned long long u64;
typedef float              f32;
typedef double             f64;

// The 16-bit floats (half::f16, IEEE binary16; half::bf16, bfloat16) as
// plain 2-byte structs holding the bits: cuda_fp16.h and cuda_bf16.h are not
// on NVRTC's (empty) include path, and the kernels need no 16-bit
// arithmetic, only conversions. Every sum or product of them is carried in
// f32 (`acc_t`, below) and rounded once, when a result is stored.
struct __align__(2) f16 { u16 bits; };
struct __align__(2) bf16 { u16 bits; };

// Literals (gpu_core::DeviceType::cuda_literal): the value's bits.
__device__ __forceinline__ f16 f16_from_bits(u16 bits) { f16 v; v.bits = bits; return v; }
__device__ __forceinline__ bf16 bf16_from_bits(u16 bits) { bf16 v; v.bits = bits; return v; }

// Exact widening to f32.
__device__ __forceinline__ f32 f16_to_f32(f16 v) {
    f32 r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(v.bits));
    return r;
}
__device__ __forceinline__ f32 bf16_to_f32(bf16 v) { return __uint_as_float((u32)v.bits << 16); }

// Rounding from f32, to nearest with ties to even, as half::f16::from_f32 and
// half::bf16::from_f32 do (the CPU references round the same way). bf16 is
// done in integer arithmetic, so it needs no sm_80 instruction; a NaN stays
// a NaN (quiet, its high payload bits kept).
__device__ __forceinline__ f16 f32_to_f16(f32 x) {
    f16 v;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v.bits) : "f"(x));
    return v;
}
__device__ __forceinline__ bf16 f32_to_bf16(f32 x) {
    const u32 bits = __float_as_uint(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return bf16_from_bits((u16)((bits >> 16) | 0x0040u));
    const u32 rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    return bf16_from_bits((u16)(rounded >> 16));
}

// The accumulator of each element type (gpu_core::Element::Acc): the type
// itself, except f32 for the 16-bit floats. Kernels that sum load with
// to_acc, add in acc_t<T> and store with from_acc<T>; for every other type
// both are the identity and compile to nothing.
template <typename T> struct acc_of { typedef T type; };
template <> struct acc_of<f16> { typedef f32 type; };
template <> struct acc_of<bf16> { typedef f32 type; };
template <typename T> using acc_t = typename acc_of<T>::type;

// Whether an element type accumulates in itself (no rounding on store).
template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };
template <typename T> constexpr bool acc_is_self = same_type<T, acc_t<T>>::value;

template <typename T> __device__ __forceinline__ acc_t<T> to_acc(T v) { return v; }
template <> __device__ __forceinline__ f32 to_acc<f16>(f16 v) { return f16_to_f32(v); }
template <> __device__ __forceinline__ f32 to_acc<bf16>(bf16 v) { return bf16_to_f32(v); }

template <typename T> __device__ __forceinline__ T from_acc(acc_t<T> v) { return v; }
template <> __device__ __forceinline__ f16 from_acc<f16>(f32 v) { return f32_to_f16(v); }
template <> __device__ __forceinline__ bf16 from_acc<bf16>(f32 v) { return f32_to_bf16(v); }

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
// CPU reference does with wrapping_add) goes through the unsigned type. The
// 8- and 16-bit types compute in u32 (C++ would promote them to int, whose
// 16-bit products can overflow) and keep the low bits.
__device__ __forceinline__ i8 wrapping_add(i8 a, i8 b) { return (i8)(u8)((u32)a + (u32)b); }
__device__ __forceinline__ u8 wrapping_add(u8 a, u8 b) { return (u8)((u32)a + (u32)b); }
__device__ __forceinline__ i16 wrapping_add(i16 a, i16 b) { return (i16)(u16)((u32)a + (u32)b); }
__device__ __forceinline__ u16 wrapping_add(u16 a, u16 b) { return (u16)((u32)a + (u32)b); }
__device__ __forceinline__ i8 wrapping_mul(i8 a, i8 b) { return (i8)(u8)((u32)a * (u32)b); }
__device__ __forceinline__ u8 wrapping_mul(u8 a, u8 b) { return (u8)((u32)a * (u32)b); }
__device__ __forceinline__ i16 wrapping_mul(i16 a, i16 b) { return (i16)(u16)((u32)a * (u32)b); }
__device__ __forceinline__ u16 wrapping_mul(u16 a, u16 b) { return (u16)((u32)a * (u32)b); }
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

// Widening a narrow element to the register type it is combined in, and
// back (gpu_core::op::register_type): i8, i16 -> i32 and u8, u16 -> u32
// (extended; narrowing keeps the low bits, two's complement truncation);
// f16, bf16 -> f32 (narrowing rounds to nearest even). Identity for the
// 4- and 8-byte types.
template <typename A, typename T>
__device__ __forceinline__ A widen(T v) {
    return (A)v;
}
template <>
__device__ __forceinline__ f32 widen<f32, f16>(f16 v) {
    return f16_to_f32(v);
}
template <>
__device__ __forceinline__ f32 widen<f32, bf16>(bf16 v) {
    return bf16_to_f32(v);
}
// Integers: the low bits (two's complement truncation, which is what CUDA
// does for a narrowing integer conversion).
template <typename T, typename A>
__device__ __forceinline__ T narrow(A v) {
    return (T)v;
}
template <>
__device__ __forceinline__ f16 narrow<f16, f32>(f32 v) {
    return f32_to_f16(v);
}
template <>
__device__ __forceinline__ bf16 narrow<bf16, f32>(f32 v) {
    return f32_to_bf16(v);
}

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
