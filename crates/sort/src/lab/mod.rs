//! The lesson's sorts, side by side with the default radix sort:
//! odd–even transposition, bitonic, merge path and the one-bit split radix
//! sort. Reached through [`crate::sort_in_place_with`] and
//! [`crate::SortAlgorithm`].
//!
//! | method | work | steps | launches |
//! |---|---|---|---|
//! | odd–even transposition | O(n²) | O(n) | 1 (n ≤ 2048) or n |
//! | bitonic (any n) | O(n log² n) | O(log² n) | O(log² (n / 2048)) |
//! | merge path | O(n log n) | O(log n · log 2048) | 1 + ⌈log2(n / 2048)⌉ |
//! | split radix, 1 bit per pass | O(k·n) | O(k log n) | 3 + the scan's, per bit |
//!
//! Each method sorts (radix image, index) pairs rather than the keys
//! (`pairs.rs`): the image is the key's radix image ([`crate::SortKey`]),
//! complemented for a descending sort and restricted to the bit range, so
//! one kernel per image width serves every key type, order and bit range;
//! the index carries the input position, which makes bitonic sort stable
//! and lets keys and values move once, as their own bits, at the end.
//! Every method is stable, in both orders. The lab carries 32-bit indices,
//! so it sorts at most 2^32 − 1 keys (`Error::Unsupported` beyond).

mod bitonic;
mod merge;
mod modules;
mod odd_even;
mod pairs;
mod split_radix;

use std::ops::Range;

use gpu_core::{DeviceViewMut, Gpu, Result};

use crate::key::{PayloadViewMut, SortKey};
use pairs::sort_with;

/// Odd–even transposition sort (the lab's quadratic method), in place.
pub(crate) fn odd_even_sort<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    sort_with::<K, odd_even::OddEven>(gpu, keys, values, descending, bits)
}

/// Bitonic sort for any n, stable through (image, index) comparisons, in
/// place.
pub(crate) fn bitonic_sort<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    sort_with::<K, bitonic::Bitonic>(gpu, keys, values, descending, bits)
}

/// Merge sort (block sort, then merge path between blocks), in place.
pub(crate) fn merge_sort<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    sort_with::<K, merge::MergePath>(gpu, keys, values, descending, bits)
}

/// The lesson's LSD radix sort, one bit per pass, by split, in place.
pub(crate) fn split_radix_sort<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    sort_with::<K, split_radix::SplitRadix>(gpu, keys, values, descending, bits)
}

/// The lab's kernel modules (for the kernel-compile test and the
/// ahead-of-time build). The split radix sort also requests the scan
/// crate's u32 sum, which `scan::kernel_catalog` lists.
pub(crate) fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    modules::LabModule::ALL
        .iter()
        .map(|module| module.source())
        .collect()
}
