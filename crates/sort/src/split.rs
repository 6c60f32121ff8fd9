//! Sorts whose output is split between buffers, which may lie on other
//! GPUs: the distributed sort's scatter.
//!
//! - **Computes** the stable sort of [`crate::sort_keys`] /
//!   [`crate::sort_pairs`] (same order, same options), but sorted position
//!   p goes to destination j, element p − start\[j\], for start\[j\] ≤ p <
//!   start\[j + 1\] (up to [`MAX_DESTINATIONS`] destinations, given as
//!   device addresses in a [`SplitTable`]). With destinations in a peer
//!   GPU's memory, a sorted shard is cut and delivered by the sort itself:
//!   no copy, no exchange after it.
//! - **How**: the Onesweep passes as in [`crate::onesweep`], the last one
//!   in its split form (`sort_split_pass_*` in
//!   `kernels/cuda/sort/onesweep.cu`): each tile's thread d, which already
//!   knows the global position of the tile's first key of digit d, finds
//!   that position's destination once and keeps in shared memory the
//!   address the digit's slot 0 maps to there and how many slots that
//!   destination still takes; each key's store adds its slot to that
//!   address, and only the keys of a digit run that crosses into the next
//!   destination search the table again.
//! - **Work, steps, bytes moved**: those of the sort
//!   ([`crate::bytes_moved`]); the last pass's writes land wherever the
//!   destinations are (over NVLink for a peer's memory). Inputs of any
//!   length take the digit passes (never the one-launch sorts); the
//!   temporary storage is two key (and value) buffers of n from the
//!   handle's scratch arena (one for a sort of two passes, none for one).
//!   The table travels to the last pass as a kernel parameter: nothing is
//!   copied to the device and nothing waits for the stream.
//! - **Destinations known late**: [`sort_keys_split_deferred`] and
//!   [`sort_pairs_split_deferred`] ask for the table only once every pass
//!   but the last is enqueued, so a caller can learn where the buckets go
//!   (read back counts, reserve buffers) while the GPU sorts.

use gpu_core::{DeviceType, DeviceView, Error, Gpu, Result};

use crate::key::{PayloadWidth, SortKey};
use crate::onesweep::{self, Plan, Slot};
use crate::policy::OnesweepPolicy;
use crate::{modules, SortOptions};

/// The most destinations a [`SplitTable`] holds (`SORT_SPLIT_MAX`).
pub const MAX_DESTINATIONS: usize = onesweep::SPLIT_MAX_DESTINATIONS;

/// Words of the split pass's by-value table (`SortSplitTable`).
const TABLE_WORDS: usize = onesweep::SPLIT_TABLE_WORDS;

/// Where one range of sorted positions goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitDestination {
    /// The first sorted position it receives; it receives the positions up
    /// to the next destination's start (the last, up to n).
    pub start: usize,
    /// Device address of its keys (element 0 receives position `start`).
    pub keys: u64,
    /// Device address of its values (0 for a keys-only sort).
    pub values: u64,
}

/// Checks destinations for a sort of `n` keys: 1 to [`MAX_DESTINATIONS`]
/// of them, the first starting at 0, the starts non-decreasing and at
/// most n, and every destination that receives keys with a non-zero key
/// address (and value address, with `values`).
///
/// ```
/// use sort::split::{validate_destinations, SplitDestination};
/// let to = |start, keys| SplitDestination { start, keys, values: 0 };
/// assert!(validate_destinations(10, &[to(0, 0x1000), to(4, 0x2000)], false).is_ok());
/// assert!(validate_destinations(10, &[to(1, 0x1000)], false).is_err()); // must start at 0
/// assert!(validate_destinations(10, &[to(0, 0x1000), to(11, 0x2000)], false).is_err());
/// assert!(validate_destinations(10, &[to(0, 0x1000), to(4, 0x2000)], true).is_err()); // no values
/// assert!(validate_destinations(10, &[to(0, 0), to(0, 0x2000)], false).is_ok()); // empty: no address needed
/// ```
pub fn validate_destinations(
    n: usize,
    destinations: &[SplitDestination],
    values: bool,
) -> Result<()> {
    if destinations.is_empty() || destinations.len() > MAX_DESTINATIONS {
        return Err(Error::invalid(
            "destinations",
            format!(
                "{} destinations: a split sort takes 1 to {MAX_DESTINATIONS}",
                destinations.len()
            ),
        ));
    }
    if destinations[0].start != 0 {
        return Err(Error::invalid(
            "destinations",
            format!(
                "the first destination starts at {}, not 0",
                destinations[0].start
            ),
        ));
    }
    for (j, destination) in destinations.iter().enumerate() {
        let end = destinations.get(j + 1).map_or(n, |next| next.start);
        if end < destination.start || end > n {
            return Err(Error::invalid(
                "destinations",
                format!(
                    "destination {j} covers [{}, {end}) of {n} sorted positions: starts must \
                     not decrease and not pass n",
                    destination.start
                ),
            ));
        }
        if end > destination.start && (destination.keys == 0 || (values && destination.values == 0))
        {
            return Err(Error::invalid(
                "destinations",
                format!("destination {j} receives keys but has no address for them"),
            ));
        }
    }
    Ok(())
}

/// The destination of sorted position `position`: the last one whose start
/// is at most `position` (the kernel's `sort_split_destination`).
///
/// ```
/// use sort::split::{destination_of, SplitDestination};
/// let at = |start| SplitDestination { start, keys: 1, values: 0 };
/// let destinations = [at(0), at(4), at(4), at(9)];
/// let of: Vec<usize> = (0..10).map(|p| destination_of(&destinations, p)).collect();
/// assert_eq!(of, vec![0, 0, 0, 0, 2, 2, 2, 2, 2, 3]);
/// ```
pub fn destination_of(destinations: &[SplitDestination], position: usize) -> usize {
    let mut j = 0;
    for (t, destination) in destinations.iter().enumerate().skip(1) {
        if destination.start <= position {
            j = t;
        }
    }
    j
}

/// Validated destinations of a sort of `n` keys: the table the split pass
/// takes by value (a host value; making one touches no device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitTable {
    words: [u64; TABLE_WORDS],
    n: usize,
    values: bool,
}

impl SplitTable {
    /// Checks `destinations` ([`validate_destinations`], with values when
    /// any destination has a value address) for a sort of `n` keys.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// use sort::split::{SplitDestination, SplitTable};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let keys = DeviceBuffer::from_host(&gpu, &[5u32, 1, 4, 2])?;
    /// let low = DeviceBuffer::<u32>::zeros(&gpu, 2)?;
    /// let high = DeviceBuffer::<u32>::zeros(&gpu, 2)?;
    /// let to = |start, buffer: &DeviceBuffer<u32>| SplitDestination {
    ///     start, keys: buffer.view().device_ptr(), values: 0 };
    /// let table = SplitTable::new(4, &[to(0, &low), to(2, &high)])?;
    /// // SAFETY: both destinations are this device's, hold 2 keys each and
    /// // are used by nothing else until the sort is done.
    /// unsafe { sort::split::sort_keys_split(&gpu, keys.view(), &table, sort::Order::Ascending)? };
    /// assert_eq!((low.to_host(&gpu)?, high.to_host(&gpu)?), (vec![1, 2], vec![4, 5]));
    /// # Ok(()) }
    /// ```
    pub fn new(n: usize, destinations: &[SplitDestination]) -> Result<Self> {
        let values = destinations.iter().any(|d| d.values != 0);
        validate_destinations(n, destinations, values)?;
        let mut words = [0u64; TABLE_WORDS];
        words[0] = destinations.len() as u64;
        for (j, destination) in destinations.iter().enumerate() {
            words[1 + j] = destination.start as u64;
            words[1 + MAX_DESTINATIONS + j] = destination.keys;
            words[1 + 2 * MAX_DESTINATIONS + j] = destination.values;
        }
        Ok(Self { words, n, values })
    }

    /// The number of keys the table splits.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it splits no keys.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether the table has value addresses (the pair sorts need them).
    pub fn has_values(&self) -> bool {
        self.values
    }

    /// Errors unless the table splits `n` keys and, for a pair sort
    /// (`pairs`), has value addresses.
    fn check_for(&self, n: usize, pairs: bool) -> Result<()> {
        Error::check_len("split table", n, self.n)?;
        if pairs && !self.values && self.n > 0 {
            return Err(Error::invalid(
                "table",
                "a pair sort needs value addresses in its split table",
            ));
        }
        Ok(())
    }
}

/// [`crate::sort_keys`] of `keys_in` with the sorted keys written through
/// `table` (module docs). Errors, before any device work: a table made
/// for another length, a bad bit range.
///
/// # Safety
/// Each destination's key buffer must hold the keys it receives, be
/// writable by kernels on `gpu`'s context (its own memory, or a peer's with
/// peer access enabled and, for stream-ordered pool memory, the pool's
/// access granted to this device), not overlap `keys_in` or another
/// destination, and be used by no other work until this call's work on
/// `gpu`'s stream has finished (the caller orders other streams by
/// events).
pub unsafe fn sort_keys_split<K: SortKey>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    table: &SplitTable,
    options: impl Into<SortOptions>,
) -> Result<()> {
    table.check_for(keys_in.len(), false)?;
    // SAFETY: the caller's contract for the destinations.
    unsafe { sort_keys_split_deferred(gpu, keys_in, options, || Ok(*table)) }
}

/// [`crate::sort_pairs`] of `keys_in` and `values_in` with the sorted
/// keys and values written through `table`, whose destinations must all
/// have value addresses. Errors, before any device work: lengths that
/// differ, a table made for another length or without values, values of
/// a width the sort does not move, a bad bit range.
///
/// # Safety
/// As [`sort_keys_split`], for the value buffers too (not overlapping
/// `values_in` either).
pub unsafe fn sort_pairs_split<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    values_in: DeviceView<'_, V>,
    table: &SplitTable,
    options: impl Into<SortOptions>,
) -> Result<()> {
    table.check_for(keys_in.len(), true)?;
    // SAFETY: the caller's contract for the destinations.
    unsafe { sort_pairs_split_deferred(gpu, keys_in, values_in, options, || Ok(*table)) }
}

/// [`sort_keys_split`] with the table asked for late: `table` is called
/// exactly once, after every digit pass but the last is enqueued on
/// `gpu`'s stream and before the last one is (for n = 0, before
/// returning), so the GPU sorts while the caller finds out where the
/// buckets go. Errors before any device work: a bad bit range; an error
/// from `table`, or a table for another length, is returned with only the
/// earlier passes enqueued, which write nothing but the call's own
/// temporaries.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::split::{sort_keys_split_deferred, SplitDestination, SplitTable};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[5u32, 1, 4, 2])?;
/// let mut out = None;
/// // SAFETY: the destination is this device's, holds the 4 keys and is
/// // used by nothing else until the sort is done.
/// unsafe {
///     sort_keys_split_deferred(&gpu, keys.view(), sort::Order::Descending, || {
///         // Runs while the earlier passes are queued: allocate the output now.
///         let buffer = DeviceBuffer::<u32>::zeros(&gpu, 4)?;
///         let to = SplitDestination { start: 0, keys: buffer.view().device_ptr(), values: 0 };
///         let table = SplitTable::new(4, &[to]);
///         out = Some(buffer);
///         table
///     })?
/// };
/// assert_eq!(out.map(|b| b.to_host(&gpu)).transpose()?, Some(vec![5, 4, 2, 1]));
/// # Ok(()) }
/// ```
///
/// # Safety
/// As [`sort_keys_split`], for the destinations of the table `table`
/// returns.
pub unsafe fn sort_keys_split_deferred<K: SortKey>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    options: impl Into<SortOptions>,
    table: impl FnOnce() -> Result<SplitTable>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let source = Slot {
        keys: keys_in.device_ptr(),
        values: 0,
    };
    // SAFETY: the caller's contract for the destinations.
    unsafe { split_sort::<K>(gpu, keys_in.len(), source, None, table, &options, bits) }
}

/// [`sort_pairs_split`] with the table asked for late, as
/// [`sort_keys_split_deferred`]. Errors before any device work: lengths
/// that differ, values of a width the sort does not move, a bad bit
/// range; a table for another length or without value addresses is
/// returned as an error with only the earlier passes enqueued.
///
/// # Safety
/// As [`sort_pairs_split`], for the destinations of the table `table`
/// returns.
pub unsafe fn sort_pairs_split_deferred<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    values_in: DeviceView<'_, V>,
    options: impl Into<SortOptions>,
    table: impl FnOnce() -> Result<SplitTable>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let width = PayloadWidth::of_bytes(V::BYTES)?;
    Error::check_len("values_in", keys_in.len(), values_in.len())?;
    let source = Slot {
        keys: keys_in.device_ptr(),
        values: values_in.device_ptr(),
    };
    // SAFETY: the caller's contract for the destinations.
    unsafe {
        split_sort::<K>(
            gpu,
            keys_in.len(),
            source,
            Some(width),
            table,
            &options,
            bits,
        )
    }
}

/// The split sort of the n keys at `source` (arguments checked), through
/// the table `table` returns (called once, before the last pass).
///
/// # Safety
/// [`sort_keys_split`]'s contract.
unsafe fn split_sort<K: SortKey>(
    gpu: &Gpu,
    n: usize,
    source: Slot,
    payload: Option<PayloadWidth>,
    table: impl FnOnce() -> Result<SplitTable>,
    options: &SortOptions,
    bits: std::ops::Range<u32>,
) -> Result<()> {
    let mut table = Some(table);
    let mut words = || {
        let make = table.take().ok_or_else(|| {
            Error::invalid("table", "the split table was asked for twice in one sort")
        })?;
        let table = make()?;
        table.check_for(n, payload.is_some())?;
        Ok(table.words)
    };
    if n == 0 {
        return words().map(|_| ());
    }
    let policy = OnesweepPolicy::default_for::<K>(payload);
    let passes = modules::digit_passes(bits.start, bits.end);
    let key_bytes = (n * K::BYTES) as u64;
    let value_bytes = (n * payload.map_or(0, PayloadWidth::bytes)) as u64;
    // Pass i writes targets[(passes − 1 − i) mod 2]: the last (split) pass
    // would write target 0, the one before it target 1, the one before
    // that target 0 again.
    let (first, second) = (passes > 2, passes > 1);
    let temporaries = [
        if first { key_bytes } else { 0 },
        if second { key_bytes } else { 0 },
        if first { value_bytes } else { 0 },
        if second { value_bytes } else { 0 },
    ];
    let run = |[keys_a, keys_b, values_a, values_b]: [u64; 4], nested: &Gpu| {
        let plan = Plan {
            source,
            targets: [
                Slot {
                    keys: keys_a,
                    values: values_a,
                },
                Slot {
                    keys: keys_b,
                    values: values_b,
                },
            ],
            final_target: 0,
            one_launch: false,
        };
        onesweep::sort::<K>(
            nested,
            n,
            payload,
            options.order.is_descending(),
            bits.start,
            bits.end,
            plan,
            &policy,
            Some(&mut words),
        )
    };
    // SAFETY: every element of the temporaries is written by a pass before
    // the next pass reads it, on this stream; the destinations are the
    // caller's contract.
    unsafe { onesweep::with_temporaries(gpu, temporaries, run)? };
    Ok(())
}
