// Sort keys: the order-preserving map of every key type to an unsigned
// integer of its width (the twin of `sort::key::SortKey::to_radix`).
//
//   unsigned        bits unchanged
//   signed          sign bit flipped
//   float, negative every bit flipped
//   float, positive sign bit flipped
//   float, NaN      all ones (every NaN, either sign: after +inf)
//
// Keys move as their own bits; kernels compute the image wherever they
// compare keys or extract a digit. A descending sort orders the complement
// (`radix_key<K>::ordered(k, true)`), which keeps it stable.

template <class K> struct radix_key;

#define PARPRIMS_UNSIGNED_KEY(K)                                                \
  template <> struct radix_key<K> {                                           \
    typedef K bits_t;                                                         \
    static __device__ __forceinline__ bits_t to_radix(K k) { return k; }      \
  };
PARPRIMS_UNSIGNED_KEY(u8)
PARPRIMS_UNSIGNED_KEY(u16)
PARPRIMS_UNSIGNED_KEY(u32)
PARPRIMS_UNSIGNED_KEY(u64)
#undef PARPRIMS_UNSIGNED_KEY

#define PARPRIMS_SIGNED_KEY(K, U, SIGN)                                          \
  template <> struct radix_key<K> {                                            \
    typedef U bits_t;                                                          \
    static __device__ __forceinline__ bits_t to_radix(K k) {                   \
      return (bits_t)((bits_t)k ^ (bits_t)SIGN);                               \
    }                                                                          \
  };
PARPRIMS_SIGNED_KEY(i8, u8, 0x80u)
PARPRIMS_SIGNED_KEY(i16, u16, 0x8000u)
PARPRIMS_SIGNED_KEY(i32, u32, 0x80000000u)
PARPRIMS_SIGNED_KEY(i64, u64, 0x8000000000000000ull)
#undef PARPRIMS_SIGNED_KEY

template <> struct radix_key<f32> {
  typedef u32 bits_t;
  static __device__ __forceinline__ bits_t to_radix(f32 k) {
    const u32 b = __float_as_uint(k);
    // Negative: every bit flipped; positive: the sign bit (one shift and
    // one three-input logic operation).
    const u32 image = b ^ ((u32)((int)b >> 31) | 0x80000000u);
    return (b & 0x7fffffffu) > 0x7f800000u ? 0xffffffffu : image;  // NaN: all ones
  }
};

template <> struct radix_key<f64> {
  typedef u64 bits_t;
  static __device__ __forceinline__ bits_t to_radix(f64 k) {
    const u64 b = (u64)__double_as_longlong(k);
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return ~0ull;  // NaN
    return (b & 0x8000000000000000ull) ? ~b : (b ^ 0x8000000000000000ull);
  }
};

// The image a sort orders ascending: to_radix, complemented when descending.
template <class K>
__device__ __forceinline__ typename radix_key<K>::bits_t ordered_radix(K k, bool descending) {
  typedef typename radix_key<K>::bits_t bits_t;
  const bits_t b = radix_key<K>::to_radix(k);
  return descending ? (bits_t)~b : b;
}

// Digit `shift .. shift + width` of the ordered image (width <= 8 here).
template <class K>
__device__ __forceinline__ u32 radix_digit(K k, bool descending, u32 shift, u32 width) {
  return (u32)(ordered_radix<K>(k, descending) >> shift) & ((1u << width) - 1u);
}
