//! # sort
//!
//! Sorting on the GPU: an LSD radix sort in the Onesweep style as the
//! default, and the lesson's sorts side by side ([`SortAlgorithm`], module
//! [`lab`]).
//!
//! | operation | what it does |
//! |---|---|
//! | [`sort_keys`] | keys into a caller's output buffer |
//! | [`sort_pairs`] | keys and values (any element type of 1, 2, 4 or 8 bytes, moved as raw bits) |
//! | [`argsort`] | the stable permutation that sorts the keys (`u32` or `u64` indices) |
//! | [`sort_keys_in_place`], [`sort_pairs_in_place`] | through a [`DoubleBuffer`]: no buffer of keys taken, the result in [`DoubleBuffer::current`] |
//! | [`top_k`] | the k largest or smallest keys with their indices, by radix select |
//! | [`segmented_sort_keys`], [`segmented_sort_pairs`] | many arrays of up to 8192 keys in one call, by segment offsets (module [`segmented`]) |
//! | [`sort_in_place_with`] | any [`SortAlgorithm`], in place (the lab's table) |
//! | [`sort_keys_with_policy`], [`sort_pairs_with_policy`] | the default sort tuned by an [`OnesweepPolicy`] (module [`policy`], the tuning sweep) |
//!
//! **Keys** `u8 u16 u32 u64 i8 i16 i32 i64 f32 f64` ([`SortKey`]); floats in
//! total order: −∞ < … < −0 < +0 < … < +∞ < NaN (every NaN, either sign,
//! as NumPy and torch place them). Keys move as their own bits. **Stable**
//! in both orders: equal keys keep their input order ([`Order::Descending`]
//! orders the complement of the radix image, so NaN comes first).
//! **Bit range** ([`SortOptions::bits`]): only bits `[begin, end)` of the
//! radix image take part, one pass per 8 bits, for keys known to be narrow.
//! **Any length** (64-bit positions; inputs past 2^28 keys run each digit
//! pass in portions).
//!
//! **Errors** (typed, before any device work, nothing written): lengths
//! that differ, an empty or out-of-width bit range, k > n, outputs that
//! overlap inputs or each other, values wider than 8 bytes.
//!
//! | method | work | global bytes (n keys of k bytes, values of v bytes) |
//! |---|---|---|
//! | `Onesweep` (default) | O(n · ⌈bits / 8⌉) | n·k + ⌈bits / 8⌉ · 2n·(k + v) |
//! | the lab's methods | see [`lab`] | |
//!
//! ```no_run
//! use gpu_core::{DeviceBuffer, Gpu};
//! use sort::Order;
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let keys = DeviceBuffer::from_host(&gpu, &[3.5f32, -1.0, f32::NAN, -0.0, 0.0])?;
//! let mut sorted = DeviceBuffer::<f32>::zeros(&gpu, 5)?;
//! sort::sort_keys(&gpu, keys.view(), sorted.view_mut(), Order::Ascending)?;
//! let host = sorted.to_host(&gpu)?;
//! assert_eq!(host[..4], [-1.0, -0.0, 0.0, 3.5]);
//! assert!(host[4].is_nan());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod cpu;
mod double_buffer;
pub mod key;
pub mod lab;
pub mod modules;
pub mod onesweep;
pub mod policy;
pub mod segmented;
pub mod split;
mod top_k;

use std::ops::Range;

use gpu_core::{DeviceType, DeviceView, DeviceViewMut, Error, Gpu, Result};

pub use double_buffer::DoubleBuffer;
pub use key::{PayloadView, PayloadViewMut, PayloadWidth, SortKey};
pub use onesweep::bytes_moved;
pub use segmented::{segmented_sort_keys, segmented_sort_pairs};
pub use top_k::{top_k, top_k_into};

use onesweep::{Plan, Slot};
use policy::OnesweepPolicy;

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

/// How to sort: the order, and the bits of the radix image that take part.
///
/// An [`Order`] converts into options over every bit.
///
/// ```
/// use sort::{Order, SortOptions};
/// let narrow = SortOptions::from(Order::Descending).with_bits(0..12);
/// assert_eq!(narrow.bit_range::<u32>()?, 0..12);
/// assert_eq!(SortOptions::default().bit_range::<i16>()?, 0..16);
/// assert!(SortOptions::default().with_bits(8..40).bit_range::<u32>().is_err());
/// # Ok::<(), gpu_core::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SortOptions {
    /// Ascending or descending.
    pub order: Order,
    /// Bits `[begin, end)` of the radix image ([`SortKey::to_radix`]) that
    /// take part; `None` for all of them. Keys equal on these bits keep
    /// their input order.
    pub bits: Option<Range<u32>>,
}

impl SortOptions {
    /// These options restricted to bits `bits`.
    pub fn with_bits(mut self, bits: Range<u32>) -> Self {
        self.bits = Some(bits);
        self
    }

    /// The bit range for keys `K`, checked: `begin < end ≤ K::KEY_BITS`.
    pub fn bit_range<K: SortKey>(&self) -> Result<Range<u32>> {
        let bits = self.bits.clone().unwrap_or(0..K::KEY_BITS);
        if bits.start >= bits.end || bits.end > K::KEY_BITS {
            return Err(Error::invalid(
                "bits",
                format!(
                    "{}..{}: the range must be non-empty and within the {}-bit key",
                    bits.start,
                    bits.end,
                    K::KEY_BITS
                ),
            ));
        }
        Ok(bits)
    }
}

impl From<Order> for SortOptions {
    fn from(order: Order) -> Self {
        SortOptions { order, bits: None }
    }
}

/// Which method sorts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortAlgorithm {
    /// The default: LSD radix sort with 8-bit digits, one upsweep that
    /// histograms every digit, then one pass per digit that ranks keys in
    /// shared memory and finds each tile's offsets by decoupled look-back
    /// (module [`onesweep`]).
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

/// Refuses `what` (an output) overlapping `other` (`other_ptr`, bytes).
fn check_disjoint(
    what: &'static str,
    ptr: u64,
    bytes: usize,
    other: &str,
    other_ptr: u64,
    other_bytes: usize,
) -> Result<()> {
    let overlap = bytes > 0
        && other_bytes > 0
        && ptr < other_ptr + other_bytes as u64
        && other_ptr < ptr + bytes as u64;
    if overlap {
        return Err(Error::invalid(
            what,
            format!("overlaps {other}: outputs must not alias inputs or each other"),
        ));
    }
    Ok(())
}

/// The buffer checks of a key–value sort: values and outputs as long as
/// the keys, and no output overlapping an input or the other output.
fn check_pair_buffers<K: SortKey, V: DeviceType>(
    keys_in: &DeviceView<'_, K>,
    values_in: &DeviceView<'_, V>,
    keys_out: &DeviceViewMut<'_, K>,
    values_out: &DeviceViewMut<'_, V>,
) -> Result<()> {
    let n = keys_in.len();
    Error::check_len("values_in", n, values_in.len())?;
    Error::check_len("keys_out", n, keys_out.len())?;
    Error::check_len("values_out", n, values_out.len())?;
    let (ko, kob) = (keys_out.device_ptr(), keys_out.bytes());
    let (vo, vob) = (values_out.device_ptr(), values_out.bytes());
    let (ki, kib) = (keys_in.device_ptr(), keys_in.bytes());
    let (vi, vib) = (values_in.device_ptr(), values_in.bytes());
    check_disjoint("keys_out", ko, kob, "keys_in", ki, kib)?;
    check_disjoint("keys_out", ko, kob, "values_in", vi, vib)?;
    check_disjoint("values_out", vo, vob, "keys_in", ki, kib)?;
    check_disjoint("values_out", vo, vob, "values_in", vi, vib)?;
    check_disjoint("values_out", vo, vob, "keys_out", ko, kob)
}

/// Sorts `keys_in` into `keys_out` (stable; see the crate docs for the key
/// order). `options` is an [`Order`] or [`SortOptions`].
///
/// Temporary storage, all from the handle's scratch arena (nothing is
/// allocated after the first call at a size; see [`onesweep`]): n keys of
/// unzeroed words for the second buffer, the digit offsets and look-back
/// states. Errors: lengths that
/// differ, a bad bit range, `keys_out` overlapping `keys_in`.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::{Order, SortOptions};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[5u32, 1, 4, 1])?;
/// let mut out = DeviceBuffer::<u32>::zeros(&gpu, 4)?;
/// sort::sort_keys(&gpu, keys.view(), out.view_mut(), Order::Descending)?;
/// assert_eq!(out.to_host(&gpu)?, vec![5, 4, 1, 1]);
/// // Only the low 4 bits: 0x15 and 0x05 tie, and keep their order.
/// let keys = DeviceBuffer::from_host(&gpu, &[0x15u32, 0x03, 0x05])?;
/// let mut out = DeviceBuffer::<u32>::zeros(&gpu, 3)?;
/// sort::sort_keys(&gpu, keys.view(), out.view_mut(), SortOptions::default().with_bits(0..4))?;
/// assert_eq!(out.to_host(&gpu)?, vec![0x03, 0x15, 0x05]);
/// # Ok(()) }
/// ```
pub fn sort_keys<K: SortKey>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    keys_out: DeviceViewMut<'_, K>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let policy = OnesweepPolicy::default_for_len::<K>(None, keys_in.len());
    sort_keys_with_policy(gpu, keys_in, keys_out, options, &policy)
}

/// [`sort_keys`] with the Onesweep sort tuned by `policy` (module
/// [`policy`]: the tuning sweep's entry point). A policy that does not fit
/// the key width or the device is refused with a typed error before any
/// device work; inputs of at most [`modules::one_launch_max_keys`] keys
/// take the one-launch sorts (one block, or one cluster on sm_90 and
/// newer), which no policy tunes.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::policy::{OnesweepPolicy, RankMethod};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let policy = OnesweepPolicy::new(384, 16, RankMethod::MatchAny)?;
/// let keys = DeviceBuffer::from_host(&gpu, &(0..100_000u32).rev().collect::<Vec<_>>())?;
/// let mut out = DeviceBuffer::<u32>::zeros(&gpu, 100_000)?;
/// sort::sort_keys_with_policy(&gpu, keys.view(), out.view_mut(), Order::Ascending, &policy)?;
/// assert_eq!(out.to_host(&gpu)?[..3], [0, 1, 2]);
/// # Ok(()) }
/// ```
pub fn sort_keys_with_policy<K: SortKey>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    mut keys_out: DeviceViewMut<'_, K>,
    options: impl Into<SortOptions>,
    policy: &OnesweepPolicy,
) -> Result<()> {
    let options = options.into();
    policy.check_for::<K>(None)?;
    let bits = options.bit_range::<K>()?;
    Error::check_len("keys_out", keys_in.len(), keys_out.len())?;
    check_disjoint(
        "keys_out",
        keys_out.device_ptr(),
        keys_out.bytes(),
        "keys_in",
        keys_in.device_ptr(),
        keys_in.bytes(),
    )?;
    let n = keys_in.len();
    if n == 0 {
        return Ok(());
    }
    let out = Slot {
        keys: keys_out.device_ptr(),
        values: 0,
    };
    let passes = modules::digit_passes(bits.start, bits.end);
    let one_launch = n <= modules::one_launch_max_keys::<K>(gpu, None)?;
    let temp_bytes = if !one_launch && passes > 1 {
        (n * K::BYTES) as u64
    } else {
        0
    };
    let run = |[temp]: [u64; 1], nested: &Gpu| {
        let plan = Plan {
            source: Slot {
                keys: keys_in.device_ptr(),
                values: 0,
            },
            targets: [
                out,
                Slot {
                    keys: temp,
                    values: 0,
                },
            ],
            final_target: 0,
            one_launch,
        };
        onesweep::sort::<K>(
            nested,
            n,
            None,
            options.order.is_descending(),
            bits.start,
            bits.end,
            plan,
            policy,
            None,
        )
    };
    // SAFETY: every key of the temporary buffer is written by a pass
    // before the next pass reads it, on this stream.
    unsafe { onesweep::with_temporaries(gpu, [temp_bytes], run)? };
    let _ = keys_out.reborrow();
    Ok(())
}

/// Sorts `keys_in` into `keys_out` and moves `values_in` along into
/// `values_out` (stable). Values are any element type of 1, 2, 4 or 8
/// bytes, moved as raw bits.
///
/// Errors: lengths that differ, a bad bit range, values of another width,
/// outputs overlapping the inputs or each other.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[2i64, -7, 2, 0])?;
/// let values = DeviceBuffer::from_host(&gpu, &[0.5f32, 1.5, 2.5, 3.5])?;
/// let mut keys_out = DeviceBuffer::<i64>::zeros(&gpu, 4)?;
/// let mut values_out = DeviceBuffer::<f32>::zeros(&gpu, 4)?;
/// sort::sort_pairs(&gpu, keys.view(), values.view(), keys_out.view_mut(), values_out.view_mut(), Order::Ascending)?;
/// assert_eq!(keys_out.to_host(&gpu)?, vec![-7, 0, 2, 2]);
/// assert_eq!(values_out.to_host(&gpu)?, vec![1.5, 3.5, 0.5, 2.5]); // ties keep their order
/// # Ok(()) }
/// ```
pub fn sort_pairs<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    values_in: DeviceView<'_, V>,
    keys_out: DeviceViewMut<'_, K>,
    values_out: DeviceViewMut<'_, V>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let width = PayloadWidth::of_bytes(V::BYTES)?;
    let policy = OnesweepPolicy::default_for_len::<K>(Some(width), keys_in.len());
    sort_pairs_with_policy(
        gpu, keys_in, values_in, keys_out, values_out, options, &policy,
    )
}

/// [`sort_pairs`] with the Onesweep sort tuned by `policy` (module
/// [`policy`]). A policy that does not fit the key and value widths or the
/// device is refused with a typed error before any device work; inputs of
/// at most [`modules::one_launch_max_keys`] keys take the one-launch sorts
/// (one block, or one cluster on sm_90 and newer), which no policy tunes.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::policy::{OnesweepPolicy, RankMethod};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let policy = OnesweepPolicy::new(512, 12, RankMethod::Ballots)?;
/// let n = 50_000u32;
/// let keys = DeviceBuffer::from_host(&gpu, &(0..n).map(|i| i % 7).collect::<Vec<_>>())?;
/// let values = DeviceBuffer::from_host(&gpu, &(0..n).collect::<Vec<_>>())?;
/// let mut keys_out = DeviceBuffer::<u32>::zeros(&gpu, n as usize)?;
/// let mut values_out = DeviceBuffer::<u32>::zeros(&gpu, n as usize)?;
/// sort::sort_pairs_with_policy(&gpu, keys.view(), values.view(), keys_out.view_mut(),
///                              values_out.view_mut(), Order::Ascending, &policy)?;
/// assert_eq!(values_out.to_host(&gpu)?[..3], [0, 7, 14]); // stable
/// # Ok(()) }
/// ```
pub fn sort_pairs_with_policy<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    values_in: DeviceView<'_, V>,
    keys_out: DeviceViewMut<'_, K>,
    values_out: DeviceViewMut<'_, V>,
    options: impl Into<SortOptions>,
    policy: &OnesweepPolicy,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let width = PayloadWidth::of_bytes(V::BYTES)?;
    policy.check_for::<K>(Some(width))?;
    let n = keys_in.len();
    check_pair_buffers(&keys_in, &values_in, &keys_out, &values_out)?;
    let (ki, ko) = (keys_in.device_ptr(), keys_out.device_ptr());
    let (vi, vo) = (values_in.device_ptr(), values_out.device_ptr());
    if n == 0 {
        return Ok(());
    }
    let passes = modules::digit_passes(bits.start, bits.end);
    let one_launch = n <= modules::one_launch_max_keys::<K>(gpu, Some(width))?;
    let need_temp = !one_launch && passes > 1;
    let temp_bytes = if need_temp {
        [(n * K::BYTES) as u64, (n * V::BYTES) as u64]
    } else {
        [0, 0]
    };
    let run = |[temp_keys, temp_values]: [u64; 2], nested: &Gpu| {
        let plan = Plan {
            source: Slot {
                keys: ki,
                values: vi,
            },
            targets: [
                Slot {
                    keys: ko,
                    values: vo,
                },
                Slot {
                    keys: temp_keys,
                    values: temp_values,
                },
            ],
            final_target: 0,
            one_launch,
        };
        onesweep::sort::<K>(
            nested,
            n,
            Some(width),
            options.order.is_descending(),
            bits.start,
            bits.end,
            plan,
            policy,
            None,
        )
    };
    // SAFETY (both): every element of the temporary buffers is written by
    // a pass before the next pass reads it, on this stream.
    unsafe { onesweep::with_temporaries(gpu, temp_bytes, run)? };
    Ok(())
}

/// An index type of [`argsort`]: `u32` (up to 2^32 − 1 keys) or `u64`.
pub trait SortIndex: DeviceType + Copy {
    /// The largest number of keys it can index.
    const MAX_KEYS: u64;
    /// The module entry that fills `0, 1, …`.
    #[doc(hidden)]
    const IOTA: modules::IotaEntry;
}

impl SortIndex for u32 {
    const MAX_KEYS: u64 = u32::MAX as u64 + 1;
    const IOTA: modules::IotaEntry = modules::IotaEntry::U32;
}

impl SortIndex for u64 {
    const MAX_KEYS: u64 = u64::MAX;
    const IOTA: modules::IotaEntry = modules::IotaEntry::U64;
}

/// Writes into `indices_out` the stable permutation that sorts `keys`:
/// `indices_out[i]` is the input index of the i-th key in order. Indices
/// are `u32` (up to 2^32 keys) or `u64`.
///
/// Temporary storage, from the handle's scratch arena: n indices and n
/// keys (unzeroed words), and what the pair sort of them takes from the
/// arena nested in it.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[0.5f64, -2.0, 0.5, 9.0])?;
/// let mut order = DeviceBuffer::<u32>::zeros(&gpu, 4)?;
/// sort::argsort(&gpu, keys.view(), order.view_mut(), Order::Descending)?;
/// assert_eq!(order.to_host(&gpu)?, vec![3, 0, 2, 1]);
/// # Ok(()) }
/// ```
pub fn argsort<K: SortKey, I: SortIndex>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    mut indices_out: DeviceViewMut<'_, I>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let options = options.into();
    options.bit_range::<K>()?;
    let n = keys.len();
    Error::check_len("indices_out", n, indices_out.len())?;
    if n as u64 > I::MAX_KEYS {
        return Err(Error::invalid(
            "indices_out",
            format!("{n} keys do not fit 32-bit indices: use u64"),
        ));
    }
    check_disjoint(
        "indices_out",
        indices_out.device_ptr(),
        indices_out.bytes(),
        "keys",
        keys.device_ptr(),
        keys.bytes(),
    )?;
    if n == 0 {
        return Ok(());
    }
    // The indices first, then the keys, each a whole number of words.
    let index_words = (n * I::BYTES).div_ceil(8);
    let words = index_words + (n * K::BYTES).div_ceil(8);
    let run = |scratch: DeviceViewMut<'_, u64>, nested: &Gpu| {
        let (iota, sorted_keys) = scratch.split_at_mut(index_words)?;
        let mut iota = iota.into_elements::<I>()?.into_slice(..n)?;
        let mut sorted_keys = sorted_keys.into_elements::<K>()?.into_slice(..n)?;
        modules::fill_iota::<K, I>(nested, iota.reborrow())?;
        sort_pairs(
            nested,
            keys,
            iota.as_view(),
            sorted_keys.reborrow(),
            indices_out.reborrow(),
            options,
        )
    };
    // SAFETY: the iota kernel writes every index before the sort reads it;
    // the sort writes every sorted key (read by nothing after), all on this
    // stream.
    unsafe { gpu.with_scratch_words(words, run) }
}

/// Sorts the keys of `keys` in place through its two buffers; the result
/// is in [`DoubleBuffer::current`] afterwards (the selector may flip). No
/// buffer of keys is taken; the offsets and look-back states come from the
/// handle's scratch arena.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::{DoubleBuffer, Order};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut a = DeviceBuffer::from_host(&gpu, &[3i16, -1, 2])?;
/// let mut b = DeviceBuffer::<i16>::zeros(&gpu, 3)?;
/// let mut keys = DoubleBuffer::new(a.view_mut(), b.view_mut())?;
/// sort::sort_keys_in_place(&gpu, &mut keys, Order::Ascending)?;
/// assert_eq!(keys.current().to_host(&gpu)?, vec![-1, 2, 3]);
/// # Ok(()) }
/// ```
pub fn sort_keys_in_place<K: SortKey>(
    gpu: &Gpu,
    keys: &mut DoubleBuffer<'_, K>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let [current, alternate] = keys.addresses();
    let passes = modules::digit_passes(bits.start, bits.end);
    let plan = in_place_plan(
        n <= modules::one_launch_max_keys::<K>(gpu, None)?,
        passes,
        Slot {
            keys: current,
            values: 0,
        },
        Slot {
            keys: alternate,
            values: 0,
        },
    );
    let target = onesweep::sort::<K>(
        gpu,
        n,
        None,
        options.order.is_descending(),
        bits.start,
        bits.end,
        plan,
        &OnesweepPolicy::default_for_len::<K>(None, n),
        None,
    )?;
    if target == 1 {
        keys.flip();
    }
    Ok(())
}

/// Sorts `keys` in place with `values` carried along, both through their
/// double buffers; the results are in their [`DoubleBuffer::current`]
/// buffers afterwards (both selectors flip together).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::{DoubleBuffer, Order};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (mut k0, mut k1) = (DeviceBuffer::from_host(&gpu, &[2u8, 1, 2])?, DeviceBuffer::<u8>::zeros(&gpu, 3)?);
/// let (mut v0, mut v1) = (DeviceBuffer::from_host(&gpu, &[10u64, 20, 30])?, DeviceBuffer::<u64>::zeros(&gpu, 3)?);
/// let mut keys = DoubleBuffer::new(k0.view_mut(), k1.view_mut())?;
/// let mut values = DoubleBuffer::new(v0.view_mut(), v1.view_mut())?;
/// sort::sort_pairs_in_place(&gpu, &mut keys, &mut values, Order::Ascending)?;
/// assert_eq!(values.current().to_host(&gpu)?, vec![20, 10, 30]);
/// # Ok(()) }
/// ```
pub fn sort_pairs_in_place<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys: &mut DoubleBuffer<'_, K>,
    values: &mut DoubleBuffer<'_, V>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let width = PayloadWidth::of_bytes(V::BYTES)?;
    let n = keys.len();
    Error::check_len("values", n, values.len())?;
    let [kc, ka] = keys.addresses();
    let [vc, va] = values.addresses();
    let (kb, vb) = (n * K::BYTES, n * V::BYTES);
    for (what, p, other, q) in [
        ("values", vc, "keys", kc),
        ("values", vc, "keys", ka),
        ("values", va, "keys", kc),
        ("values", va, "keys", ka),
    ] {
        check_disjoint(what, p, vb, other, q, kb)?;
    }
    if n == 0 {
        return Ok(());
    }
    let passes = modules::digit_passes(bits.start, bits.end);
    let plan = in_place_plan(
        n <= modules::one_launch_max_keys::<K>(gpu, Some(width))?,
        passes,
        Slot {
            keys: kc,
            values: vc,
        },
        Slot {
            keys: ka,
            values: va,
        },
    );
    let target = onesweep::sort::<K>(
        gpu,
        n,
        Some(width),
        options.order.is_descending(),
        bits.start,
        bits.end,
        plan,
        &OnesweepPolicy::default_for_len::<K>(Some(width), n),
        None,
    )?;
    if target == 1 {
        keys.flip();
        values.flip();
    }
    Ok(())
}

/// The plan of an in-place sort from `current` through `alternate`:
/// targets `[current, alternate]`; the first pass must write `alternate`,
/// so the last writes target `passes mod 2`; the one-launch sorts
/// (`one_launch`: n at most `one_launch_max_keys`) sort `current` in place
/// (each block loads its part before it stores it).
fn in_place_plan(one_launch: bool, passes: u32, current: Slot, alternate: Slot) -> Plan {
    let final_target = if one_launch { 0 } else { (passes % 2) as usize };
    Plan {
        source: current,
        targets: [current, alternate],
        final_target,
        one_launch,
    }
}

/// Sorts `keys` (and `values`, when given) in place with `algorithm`,
/// ordering by bits `bits` of the radix image.
///
/// The entry point of the lab's side-by-side table. The default
/// ([`SortAlgorithm::Onesweep`]) takes one temporary buffer of keys (and
/// values) from the handle's scratch arena (unzeroed words, reused by the
/// next call).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::{Order, SortAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut keys = DeviceBuffer::from_host(&gpu, &[3u32, 1, 2])?;
/// sort::sort_in_place_with(&gpu, keys.view_mut(), None, Order::Ascending, 0..32, SortAlgorithm::Onesweep)?;
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
    SortOptions {
        order,
        bits: Some(bits.clone()),
    }
    .bit_range::<K>()?;
    if let Some(values) = &values {
        Error::check_len("values", keys.len(), values.len())?;
        check_disjoint(
            "values",
            values.device_ptr(),
            values.bytes(),
            "keys",
            keys.device_ptr(),
            keys.bytes(),
        )?;
    }
    match algorithm {
        SortAlgorithm::Onesweep => onesweep_in_place(gpu, keys, values, descending, bits),
        SortAlgorithm::OddEvenTransposition => {
            lab::odd_even_sort(gpu, keys, values, descending, bits)
        }
        SortAlgorithm::Bitonic => lab::bitonic_sort(gpu, keys, values, descending, bits),
        SortAlgorithm::MergePath => lab::merge_sort(gpu, keys, values, descending, bits),
        SortAlgorithm::SplitRadix => lab::split_radix_sort(gpu, keys, values, descending, bits),
    }
}

/// The default sort in place: through a temporary second buffer, the
/// result copied back when it lands there.
fn onesweep_in_place<K: SortKey>(
    gpu: &Gpu,
    mut keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let width = values.as_ref().map(|v| v.width());
    let current = Slot {
        keys: keys.device_ptr(),
        values: values.as_ref().map_or(0, |v| v.device_ptr()),
    };
    let passes = modules::digit_passes(bits.start, bits.end);
    let policy = OnesweepPolicy::default_for_len::<K>(width, n);
    let one_launch = n <= modules::one_launch_max_keys::<K>(gpu, width)?;
    // The one-launch sorts work in place and need no second buffer.
    let temp_bytes = if one_launch {
        [0, 0]
    } else {
        [
            (n * K::BYTES) as u64,
            width.map_or(0, |w| (n * w.bytes()) as u64),
        ]
    };
    let run = |[temp_keys, temp_values]: [u64; 2], nested: &Gpu| {
        let alternate = Slot {
            keys: temp_keys,
            values: temp_values,
        };
        let plan = in_place_plan(one_launch, passes, current, alternate);
        let target = onesweep::sort::<K>(
            nested, n, width, descending, bits.start, bits.end, plan, &policy, None,
        )?;
        if target == 1 {
            modules::copy_slot::<K>(
                nested,
                width,
                (alternate.keys, alternate.values),
                (current.keys, current.values),
                n as u64,
            )?;
        }
        Ok(())
    };
    // SAFETY (both): every element is written by a pass before it is read,
    // on this stream.
    unsafe { onesweep::with_temporaries(gpu, temp_bytes, run)? };
    let _ = keys.reborrow();
    Ok(())
}

/// Every kernel module this crate can request (the default sort and top-k
/// for every key type × payload, and the lab's), for the kernel-compile
/// test and the ahead-of-time build.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = modules::kernel_catalog();
    modules.extend(lab::kernel_catalog());
    modules
}
