//! CPU references: the standard library's sorts by the radix image
//! ([`SortKey::to_radix`]), descending by its complement: a stable sort of
//! the keys or of the pairs, and for [`argsort`] a sort of (image, index)
//! pairs, which is the same order. Every GPU method is tested against
//! these, bit for bit (keys are compared as bits, so NaN payloads and the
//! sign of zero are checked too).

use std::ops::Range;

use crate::key::{RadixBits, SortKey};

/// The radix image of `key` restricted to bits `[bits.start, bits.end)`,
/// complemented for a descending sort: the value the sorts order by.
///
/// ```
/// // Only bits 4..8 take part: 0x1f and 0x13 are equal keys.
/// assert_eq!(sort::cpu::sort_value(0x1fu8, false, &(4..8)), sort::cpu::sort_value(0x13u8, false, &(4..8)));
/// ```
pub fn sort_value<K: SortKey>(key: K, descending: bool, bits: &Range<u32>) -> u64 {
    let image: u64 = key.ordered_radix(descending).into();
    let width = bits.end.saturating_sub(bits.start);
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (image >> bits.start.min(63)) & mask
}

/// The whole bit range of `K`: `0..K::KEY_BITS`.
///
/// ```
/// assert_eq!(sort::cpu::full_bits::<i16>(), 0..16);
/// ```
pub fn full_bits<K: SortKey>() -> Range<u32> {
    0..<K::Bits as RadixBits>::BITS
}

/// The stable permutation that sorts `keys`: `order[i]` is the input index
/// of the `i`-th output key. Sorts (sort value, index) pairs, which the
/// index makes distinct, so the order is the stable one and no comparison
/// reads the keys through the permutation.
///
/// ```
/// assert_eq!(sort::cpu::argsort(&[3u32, 1, 3, 0], false, &(0..32)), vec![3, 1, 0, 2]);
/// assert_eq!(sort::cpu::argsort(&[3u32, 1, 3, 0], true, &(0..32)), vec![0, 2, 1, 3]);
/// ```
pub fn argsort<K: SortKey>(keys: &[K], descending: bool, bits: &Range<u32>) -> Vec<usize> {
    let mut tagged: Vec<(u64, usize)> = keys
        .iter()
        .enumerate()
        .map(|(i, &key)| (sort_value(key, descending, bits), i))
        .collect();
    tagged.sort_unstable();
    tagged.into_iter().map(|(_, i)| i).collect()
}

/// `keys` sorted (stable; NaN after +∞ ascending, first descending): the
/// keys in [`argsort`]'s order, from a stable sort of a copy.
///
/// ```
/// let sorted = sort::cpu::sort_keys(&[2.0f32, f32::NAN, -0.0, 0.0, -1.0], false, &(0..32));
/// assert_eq!(sorted[..4], [-1.0, -0.0, 0.0, 2.0]);
/// assert!(sorted[3] == 2.0 && sorted[4].is_nan() && sorted[1].is_sign_negative());
/// ```
pub fn sort_keys<K: SortKey>(keys: &[K], descending: bool, bits: &Range<u32>) -> Vec<K> {
    let mut sorted = keys.to_vec();
    sorted.sort_by_key(|&key| sort_value(key, descending, bits));
    sorted
}

/// `keys` sorted with `values` carried along (stable): the pairs in
/// [`argsort`]'s order, from a stable sort of the pairs.
///
/// ```
/// let (k, v) = sort::cpu::sort_pairs(&[2i8, -1, 2], &['a', 'b', 'c'], false, &(0..8));
/// assert_eq!((k, v), (vec![-1, 2, 2], vec!['b', 'a', 'c']));
/// ```
pub fn sort_pairs<K: SortKey, V: Copy>(
    keys: &[K],
    values: &[V],
    descending: bool,
    bits: &Range<u32>,
) -> (Vec<K>, Vec<V>) {
    assert_eq!(keys.len(), values.len(), "one value per key");
    let mut pairs: Vec<(K, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|&(key, _)| sort_value(key, descending, bits));
    pairs.into_iter().unzip()
}

/// The `k` largest (`largest = true`) or smallest keys, sorted (largest
/// first, or smallest first), with their input indices; ties keep the lower
/// index first, NaN counts as the largest key.
///
/// ```
/// let (values, indices) = sort::cpu::top_k(&[5i32, 9, 1, 9], 2, true);
/// assert_eq!((values, indices), (vec![9, 9], vec![1, 3]));
/// ```
pub fn top_k<K: SortKey>(keys: &[K], k: usize, largest: bool) -> (Vec<K>, Vec<u64>) {
    let order = argsort(keys, largest, &full_bits::<K>());
    order
        .into_iter()
        .take(k)
        .map(|i| (keys[i], i as u64))
        .unzip()
}
