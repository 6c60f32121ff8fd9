//! # sort
//!
//! Sorting on the GPU: the lesson's sorts side by side (module [`lab`]'s
//! methods through [`SortAlgorithm`]) and an LSD radix sort in the Onesweep
//! style as the default.
//!
//! Keys: `u8 u16 u32 u64 i8 i16 i32 i64 f32 f64` ([`key::SortKey`]), floats
//! in total order (−0 before +0, NaN after +∞). Every sort is stable, in
//! both orders.
#![deny(missing_docs)]

pub mod cpu;
pub mod key;
pub mod lab;

use std::ops::Range;

use gpu_core::{DeviceViewMut, Error, Gpu, Result};

pub use key::{PayloadView, PayloadViewMut, PayloadWidth, SortKey};

/// Sort order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first (NaN last).
    #[default]
    Ascending,
    /// Largest first (NaN first). Still stable: equal keys keep their
    /// input order.
    Descending,
}

impl Order {
    /// True for [`Order::Descending`].
    ///
    /// ```
    /// assert!(sort::Order::Descending.is_descending());
    /// ```
    pub fn is_descending(self) -> bool {
        self == Order::Descending
    }
}

/// Which method sorts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortAlgorithm {
    /// The default: LSD radix sort with 8-bit digits, one upsweep that
    /// histograms every digit, then one pass per digit that ranks keys in
    /// shared memory and finds each tile's offsets by decoupled look-back.
    #[default]
    Onesweep,
    /// The lesson's odd–even transposition sort (quadratic work).
    OddEvenTransposition,
    /// Bitonic sort (n log² n work).
    Bitonic,
    /// Merge sort: block sorts, then merge path between blocks.
    MergePath,
    /// The lesson's LSD radix sort, one bit per pass, by split (scan and
    /// scatter).
    SplitRadix,
}

impl SortAlgorithm {
    /// Every method, the lesson's first, the default last.
    pub const ALL: [SortAlgorithm; 5] = [
        SortAlgorithm::OddEvenTransposition,
        SortAlgorithm::Bitonic,
        SortAlgorithm::MergePath,
        SortAlgorithm::SplitRadix,
        SortAlgorithm::Onesweep,
    ];

    /// The method's name in tables.
    ///
    /// ```
    /// assert_eq!(sort::SortAlgorithm::default().name(), "onesweep");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            SortAlgorithm::Onesweep => "onesweep",
            SortAlgorithm::OddEvenTransposition => "odd-even",
            SortAlgorithm::Bitonic => "bitonic",
            SortAlgorithm::MergePath => "merge-path",
            SortAlgorithm::SplitRadix => "split-radix",
        }
    }
}

/// Sorts `keys` (and `values`, when given) in place with `algorithm`,
/// ordering by bits `bits` of the radix image.
///
/// The entry point of the lab's side-by-side table.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::{Order, SortAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut keys = DeviceBuffer::from_host(&gpu, &[3u32, 1, 2])?;
/// sort::sort_in_place_with(&gpu, keys.view_mut(), None, Order::Ascending, 0..32, SortAlgorithm::Bitonic)?;
/// assert_eq!(keys.to_host(&gpu)?, vec![1, 2, 3]);
/// # Ok(()) }
/// ```
pub fn sort_in_place_with<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    order: Order,
    bits: Range<u32>,
    algorithm: SortAlgorithm,
) -> Result<()> {
    let descending = order.is_descending();
    match algorithm {
        SortAlgorithm::Onesweep => Err(Error::Unsupported("onesweep is not built".into())),
        SortAlgorithm::OddEvenTransposition => {
            lab::odd_even_sort(gpu, keys, values, descending, bits)
        }
        SortAlgorithm::Bitonic => lab::bitonic_sort(gpu, keys, values, descending, bits),
        SortAlgorithm::MergePath => lab::merge_sort(gpu, keys, values, descending, bits),
        SortAlgorithm::SplitRadix => lab::split_radix_sort(gpu, keys, values, descending, bits),
    }
}

/// Every kernel module this crate can request, for the kernel-compile test
/// and the ahead-of-time build.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    lab::kernel_catalog()
}
