// single_pass/headed_value.cuh — an 8-byte value with a 32-bit head field,
// as the segmented scan (scan/segmented.cu) and the keyed runs
// (compact/by_key.cu) carry it through the block scan, the warp shuffles and
// the decoupled look-back of single_pass/ when the value is 8 bytes wide.
//
// A 4-byte value and its head field pack into one u64 and need nothing of
// this file. An 8-byte value and its heads take 12 bytes, so they travel as
// a struct: HeadedValue<V> {value, heads}. What the head field means is the
// operator's business (the segmented scan ORs flags, the keyed runs count
// heads); this file only moves the pair.
//
// * Shuffles: __shfl_up_sync and __shfl_sync overloads for HeadedValue<V>
//   (two shuffles, value and heads), so warp/warp_scan.cuh, BlockScan and
//   the look-back take the struct as any other T.
// * Tile status: TileStatusHeaded128<V>, the 8-byte packed encoding's word
//   (TileStatusPacked128, tile_status.cuh) with the heads in its high half:
//   ONE 16-byte word per tile, the value's bits in the low 8 bytes, the
//   status tag in bits 64..95 and the heads in bits 96..127, written with one
//   st.relaxed.gpu.global.b128 and read with one ld.relaxed.gpu.global.b128.
//   A reader sees the whole (status, value, heads) as one writer stored it:
//   no fence on either side. Every bit of the loaded word is used (value,
//   tag, heads), which keeps ptxas from splitting the load (see
//   TileStatusPacked128). Same region size and 16-byte alignment as
//   TileStatusPacked128 (2·num_tiles words), so the host sizes the state as
//   for 8-byte values (gpu_core::single_pass::with_tile_state(.., 8,
//   Packed128, ..)).
// * TileStatusFor<HeadedValue<V>, 1> names it, so kernels written against
//   TileStatusFor<A, 1> take either pair form unchanged.
// * TileStatusHeadedPlain128<T>: a plain 8-byte value (heads 0) in the same
//   word, for a second look-back that shares a state with headed words (the
//   keyed runs' u64 head counts). TileStatusPacked128's reader ORs the high
//   half into the tag, so a stale headed word (an older epoch, heads of any
//   value) could read as a status of this call there; this reader takes a
//   word with non-zero heads as unpublished instead (no word of this call
//   at a plain slot has heads), and so still uses every bit it loads.
//
// The host keeps states holding headed words apart from every other tile
// state: with_tile_state(.., 16, Packed128, ..), a layout of its own, the
// same 2 words per tile.
//
// Needs TILE_STATUS; comes after the SINGLE_PASS headers.
#pragma once

template <typename V>
struct HeadedValue {
    static_assert(sizeof(V) == 8, "HeadedValue carries 8-byte values");
    V value;
    u32 heads;
};

template <typename V>
__device__ __forceinline__ HeadedValue<V> headed_value(V value, u32 heads) {
    HeadedValue<V> pair;
    pair.value = value;
    pair.heads = heads;
    return pair;
}

template <typename V>
__device__ __forceinline__ HeadedValue<V> __shfl_up_sync(unsigned mask, HeadedValue<V> x, unsigned delta,
                                                        int width = 32) {
    return headed_value<V>(__shfl_up_sync(mask, x.value, delta, width),
                           __shfl_up_sync(mask, x.heads, delta, width));
}
template <typename V>
__device__ __forceinline__ HeadedValue<V> __shfl_sync(unsigned mask, HeadedValue<V> x, int lane,
                                                     int width = 32) {
    return headed_value<V>(__shfl_sync(mask, x.value, lane, width), __shfl_sync(mask, x.heads, lane, width));
}

template <typename V>
struct TileStatusHeaded128 {
    u64* words;  // 2 per tile: value bits, then (heads << 32) | status tag
    u32 epoch;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return 2 * num_tiles; }
    __device__ __forceinline__ TileStatusHeaded128(u64* region, u64 /*num_tiles*/, u32 call_epoch)
        : words(region), epoch(call_epoch) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, HeadedValue<V> pair) {
        st_relaxed_gpu_b128(words + 2 * tile, bits_of<V, u64>(pair.value),
                            ((u64)pair.heads << 32) | (u64)tile_status_tag(status, epoch));
    }
    __device__ __forceinline__ u32 read(u64 tile, HeadedValue<V>& pair) const {
        u64 lo, hi;
        ld_relaxed_gpu_b128(words + 2 * tile, lo, hi);
        pair.value = from_bits<V, u64>(lo);
        pair.heads = (u32)(hi >> 32);
        return tile_status_of((u32)hi, epoch);
    }
    __device__ __forceinline__ void acquire() const {}
    __device__ __forceinline__ void finish_read(u64 /*tile*/, u32 /*status*/, HeadedValue<V>& /*pair*/) const {}
};

template <typename T>
struct TileStatusHeadedPlain128 {
    static_assert(sizeof(T) == 8, "TileStatusHeadedPlain128 holds 8-byte values");
    u64* words;  // 2 per tile: value bits, then the status tag (heads 0)
    u32 epoch;

    static __device__ __forceinline__ u64 region_words(u64 num_tiles) { return 2 * num_tiles; }
    __device__ __forceinline__ TileStatusHeadedPlain128(u64* region, u64 /*num_tiles*/, u32 call_epoch)
        : words(region), epoch(call_epoch) {}

    __device__ __forceinline__ void publish(u64 tile, u32 status, T value) {
        st_relaxed_gpu_b128(words + 2 * tile, bits_of<T, u64>(value), (u64)tile_status_tag(status, epoch));
    }
    __device__ __forceinline__ u32 read(u64 tile, T& value) const {
        u64 lo, hi;
        ld_relaxed_gpu_b128(words + 2 * tile, lo, hi);
        value = from_bits<T, u64>(lo);
        return (hi >> 32) != 0u ? TILE_INVALID : tile_status_of((u32)hi, epoch);
    }
    __device__ __forceinline__ void acquire() const {}
    __device__ __forceinline__ void finish_read(u64 /*tile*/, u32 /*status*/, T& /*value*/) const {}
};

// (A HeadedValue is 16 bytes: 8 of value, 4 of heads, 4 of padding.)
template <typename V>
struct TileStatusFor<HeadedValue<V>, 1, 16> {
    static_assert(sizeof(HeadedValue<V>) == 16, "a headed value fills 16 bytes");
    typedef TileStatusHeaded128<V> type;
};
