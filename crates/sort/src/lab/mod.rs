//! The lesson's sorts, side by side with the default radix sort:
//! odd–even transposition, bitonic, merge path and the one-bit split radix
//! sort. Each sorts in place, keys with an optional raw-bit payload.

use std::ops::Range;

use gpu_core::{DeviceViewMut, Error, Gpu, Result};

use crate::key::{PayloadViewMut, SortKey};

/// Odd–even transposition sort (the lab's quadratic method).
pub(crate) fn odd_even_sort<K: SortKey>(
    _gpu: &Gpu,
    _keys: DeviceViewMut<'_, K>,
    _values: Option<PayloadViewMut<'_>>,
    _descending: bool,
    _bits: Range<u32>,
) -> Result<()> {
    Err(Error::Unsupported(
        "odd-even transposition sort is not built".into(),
    ))
}

/// Bitonic sort.
pub(crate) fn bitonic_sort<K: SortKey>(
    _gpu: &Gpu,
    _keys: DeviceViewMut<'_, K>,
    _values: Option<PayloadViewMut<'_>>,
    _descending: bool,
    _bits: Range<u32>,
) -> Result<()> {
    Err(Error::Unsupported("bitonic sort is not built".into()))
}

/// Merge sort (block sort, then merge path between blocks).
pub(crate) fn merge_sort<K: SortKey>(
    _gpu: &Gpu,
    _keys: DeviceViewMut<'_, K>,
    _values: Option<PayloadViewMut<'_>>,
    _descending: bool,
    _bits: Range<u32>,
) -> Result<()> {
    Err(Error::Unsupported("merge sort is not built".into()))
}

/// The lesson's LSD radix sort, one bit per pass, by split.
pub(crate) fn split_radix_sort<K: SortKey>(
    _gpu: &Gpu,
    _keys: DeviceViewMut<'_, K>,
    _values: Option<PayloadViewMut<'_>>,
    _descending: bool,
    _bits: Range<u32>,
) -> Result<()> {
    Err(Error::Unsupported("split radix sort is not built".into()))
}

/// The lab's kernel modules (for the kernel-compile test).
pub(crate) fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    Vec::new()
}
