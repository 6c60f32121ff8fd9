//! Histograms on the GPU: `even(bins, lower, upper)` and `ranges(boundaries)`
//! bins, the lesson's methods side by side.
//!
//! | method | [`HistogramAlgorithm`] | how |
//! |---|---|---|
//! | CPU | [`cpu`] | one item at a time, the reference every test compares with |
//! | global atomics | `GlobalAtomic` | one global `atomicAdd` per counted item |
//! | shared privatisation | `SharedPrivatised` | one u32 histogram per block in shared memory, merged with one global atomic per non-zero bin per block |
//! | default | `Auto` | per bin count: sub-histograms per lane, 16-bit packed counts, or value counts for 1-byte inputs (see below) |
//! | sort | `Sort` | sort the bin indices with the sort crate, then each count is the distance between two run boundaries ([below](self#the-histogram-by-sort)) |
//!
//! **What is computed.** `counts[k]` = the number of items in bin k. Bins
//! are half-open; items outside every bin and NaN are counted nowhere
//! ([`EvenBins`] states the formula, which the GPU and [`cpu`] share; for
//! integer inputs it is exact integer arithmetic). Inputs `u8, i8, u16,
//! i16, u32, i32, f32, f64` ([`HistogramInput`]); counts `u32` (wrapping
//! past 2^32 − 1) or `u64` ([`HistogramCount`]); 2 to 65 536 bins. `ranges`
//! takes its boundaries as a host slice (as CUB takes its level arrays): it
//! is checked on the host (strictly increasing, no NaN) and copied to the
//! device with the call. Integer counts are deterministic.
//!
//! **Work and bytes** (the counting methods; `Sort` below). O(n) work, one
//! launch (plus a fill of the counts when overwriting); a persistent grid of `sm_count` × resident blocks,
//! each reading 16-byte vectors (four in flight per thread) from the first
//! 16-byte boundary of the input, the few items before it and after the
//! last whole vector one at a time. Global bytes: the input read once
//! (`n · sizeof(T)`, [`bytes_moved`]), plus the counts: one atomic per item
//! for `GlobalAtomic`, at most one per non-zero bin per block otherwise.
//!
//! **`Auto`, per bin count** (shared memory per block in brackets):
//! - *1-byte inputs* (any bins): each block counts the 256 byte values in
//!   32 sub-histograms laid out `hist[value · 32 + lane]`, so every lane has
//!   its own bank and no input (all items equal included) makes a warp's
//!   shared atomics conflict; no bin arithmetic per item, 3 instructions per
//!   item. Values are binned at the merge and each run of values with one
//!   bin costs one global atomic (34 KiB).
//! - *up to 8192 bins*: u32 counts, as many copies (1 to 32, one per lane
//!   at ≤ 256 bins) as fit 32 KiB, laid out `hist[bin · copies + lane %
//!   copies]`: at ≤ 256 bins conflict-free for any input, so all items in
//!   one bin runs at the speed of uniform input (32 KiB: 7 blocks per SM).
//! - *past 8192 bins* (65 536 u32 counts are 256 KiB, more than a block's
//!   227 KiB): two 16-bit counts per shared word, 65 536 bins in 128 KiB,
//!   one block of 1024 threads per SM. The thread whose increment takes a
//!   16-bit count to 0x8000 moves 0x8000 to the global count and subtracts
//!   it; a barrier every chunk (< 32 768 items per block) keeps every count
//!   below 0x10000, so no carry crosses into the neighbour. Chosen over
//!   warp-aggregated global atomics (`__match_any_sync` per item costs more
//!   than a shared atomic, and uniform input over 65 536 bins rarely has two
//!   equal bins in a warp, so nothing is aggregated: one L2 atomic per item
//!   remains) and over bin slices per block (the input read once per slice:
//!   ≥ 2 reads, at most 0.5 of the copy ceiling). On a device whose blocks
//!   cannot have 128 KiB, global atomics.
//!
//! # The histogram by sort
//!
//! `Sort` maps every item to its bin index (u32; items counted nowhere to
//! the sentinel `bins`), sorts the indices with [`sort::sort_keys_in_place`]
//! over the bit length of `bins` only (1 digit pass up to 255 bins, 2 up to
//! 65 535, 3 at 65 536), then writes `count[k] = lower_bound(k + 1) −
//! lower_bound(k)` from one thread per bin: no atomics, nothing zeroed.
//! Work O(n · passes); bytes [`sort_bytes_moved`]; two n-long u32
//! temporaries from the device pool. `Auto` never picks it (its byte model
//! is 7 to 25 times the input read once). Kernel:
//! `kernels/cuda/reduce/histogram_sort.cu`.
//!
//! # Validation
//!
//! `SharedPrivatised` with bins whose u32 counts do not fit a block's shared
//! memory is refused with a typed error. Every argument is validated before
//! anything touches the device (see [`validate_bins`], [`EvenBins::new`],
//! [`validate_boundaries`], [`validate_counts`]): on an error nothing has
//! been written. Kernels: `kernels/cuda/reduce/histogram.cu`,
//! `kernels/cuda/reduce/histogram_sort.cu`.

mod bins;
mod by_sort;
pub mod cpu;
mod dispatch;
mod modules;

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Error, Gpu, ModuleSource, Result};

pub use bins::{
    range_bin, validate_bins, validate_boundaries, EvenBins, HistogramCount, HistogramInput,
    MAX_BINS, MIN_BINS,
};
/// How a histogram call runs, for experts and tests: the method's plan
/// for a bin count (kernel mode, block shape, sub-histogram copies, shared
/// memory), the persistent grid and the scalar head of an unaligned view.
/// Pure functions, checkable without a GPU; nothing here is needed to call
/// the histograms.
pub mod policy {
    pub use super::by_sort::{key_bits, sort_passes};
    pub use super::dispatch::{
        grid_blocks, head_items, plan, LaunchPlan, SHARED_TIER_BINS, STAGE_LIMIT_BYTES,
        SUB_HISTOGRAM_BYTES,
    };
    pub use super::modules::Mode;
}

use dispatch::{plan, Spec};

/// How the GPU counts (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HistogramAlgorithm {
    /// One global `atomicAdd` per counted item: the lesson's first method;
    /// as fast as the L2's atomics on the hottest bin allow.
    GlobalAtomic,
    /// One u32 histogram per block in shared memory, merged into the global
    /// counts with one atomic per non-zero bin per block. Refused when the
    /// bins do not fit a block's shared memory (65 536 bins do not).
    SharedPrivatised,
    /// Picks per bin count and input width: lane sub-histograms, 16-bit
    /// packed counts, or value counts for 1-byte inputs. Never `Sort`.
    #[default]
    Auto,
    /// The lesson's third method: sort the items' bin indices, then each
    /// count is the distance between the start of its bin's run and the
    /// next (see [the histogram by sort](self#the-histogram-by-sort)). No
    /// atomics; several times the bytes of the other methods.
    Sort,
}

/// What a `_into` call does with the caller's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CountMode {
    /// Set the counts to this input's histogram.
    Overwrite,
    /// Add this input's histogram to the counts already there (wrapping).
    Accumulate,
}

/// Global bytes a histogram of `n` items of `element_bytes` moves, as the
/// benchmark counts them: the input read once (count updates are left out).
/// The counting methods move this; `Sort` moves [`sort_bytes_moved`].
///
/// ```
/// assert_eq!(reduce::histogram::bytes_moved(1 << 28, 4), 1 << 30);
/// ```
pub fn bytes_moved(n: usize, element_bytes: usize) -> u64 {
    n as u64 * element_bytes as u64
}

/// Global bytes the histogram by sort moves on `n` items of
/// `element_bytes` in `bins` bins: the input read once, the u32 bin
/// indices written, the sort's traffic on them ([`sort::bytes_moved`]: 4n
/// read by its digit histogram, 2 · 4n per digit pass), and the two binary
/// searches of every bin (`2⌈log2(n + 1)⌉` reads of 4 bytes); the counts
/// are left out, as in [`bytes_moved`].
///
/// ```
/// use reduce::histogram::sort_bytes_moved;
/// let n = 1usize << 20;
/// // i32, 256 bins: 4n + 4n + (4n + 2 passes · 8n) + 256 · 2 · 21 · 4.
/// assert_eq!(sort_bytes_moved(n, 4, 256), 28 * n as u64 + 256 * 2 * 21 * 4);
/// assert_eq!(sort_bytes_moved(0, 4, 256), 0);
/// ```
pub fn sort_bytes_moved(n: usize, element_bytes: usize, bins: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let n64 = n as u64;
    let searches = bins as u64 * 2 * u64::from(u64::BITS - n64.leading_zeros()) * 4;
    n64 * element_bytes as u64
        + 4 * n64
        + sort::bytes_moved(n, 4, 0, policy::sort_passes(bins))
        + searches
}

/// `counts` must hold one count per bin and must not overlap the input
/// (`(address, bytes)` of each).
///
/// ```
/// use reduce::histogram::validate_counts;
/// assert!(validate_counts(256, 256, (0x1000, 4096), (0x10000, 1024)).is_ok());
/// assert!(validate_counts(256, 255, (0x1000, 4096), (0x10000, 1020)).is_err());
/// assert!(validate_counts(256, 256, (0x1000, 4096), (0x1800, 1024)).is_err()); // overlaps
/// ```
pub fn validate_counts(
    bins: usize,
    counts_len: usize,
    input: (u64, usize),
    counts: (u64, usize),
) -> Result<()> {
    Error::check_len("counts", bins, counts_len)?;
    let (a, a_bytes) = input;
    let (b, b_bytes) = counts;
    if a_bytes > 0
        && b_bytes > 0
        && a < b.saturating_add(b_bytes as u64)
        && b < a.saturating_add(a_bytes as u64)
    {
        return Err(Error::invalid("counts", "overlaps the input"));
    }
    Ok(())
}

/// The histogram of `input` in `bins` even bins over `[lower, upper)`, in a
/// new buffer (see [`EvenBins`] for the bin formula). Enqueued on `gpu`'s
/// stream; reading the buffer synchronises.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::histogram::{cpu, histogram_even, HistogramAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let data = [1i32, 5, 5, 9, 12, -4];
/// let input = DeviceBuffer::from_host(&gpu, &data)?;
/// let counts = histogram_even::<i32, u32>(&gpu, input.view(), 4, 0, 12, HistogramAlgorithm::Auto)?;
/// assert_eq!(counts.to_host(&gpu)?, cpu::histogram_even::<i32, u32>(&data, 4, 0, 12)?); // [1, 2, 1, 0]
/// # Ok(()) }
/// ```
pub fn histogram_even<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    bins: usize,
    lower: T,
    upper: T,
    algorithm: HistogramAlgorithm,
) -> Result<DeviceBuffer<C>> {
    let spec = EvenBins::new(bins, lower, upper)?;
    // The method is checked whatever the input (an empty one included).
    plan(
        algorithm,
        bins,
        T::BYTES,
        None,
        gpu.info().shared_per_block_optin,
    )?;
    let mut counts = DeviceBuffer::<C>::zeros(gpu, bins)?;
    if !input.is_empty() {
        count_into(
            gpu,
            &input,
            &Spec::Even(spec),
            &mut counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )?;
    }
    Ok(counts)
}

/// [`histogram_even`] into a caller's `counts` (`bins` long, not
/// overlapping the input), overwritten or accumulated into as `mode` says.
/// **Does not synchronise.** On a bad argument nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::histogram::{histogram_even_into, CountMode, HistogramAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = DeviceBuffer::from_host(&gpu, &[0.25f32, 0.5, 0.75, f32::NAN])?;
/// let mut counts = DeviceBuffer::<u64>::zeros(&gpu, 2)?;
/// for _ in 0..3 {
///     histogram_even_into(&gpu, input.view(), 2, 0.0, 1.0, counts.view_mut(), CountMode::Accumulate, HistogramAlgorithm::Auto)?;
/// }
/// assert_eq!(counts.to_host(&gpu)?, [3, 6]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn histogram_even_into<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    bins: usize,
    lower: T,
    upper: T,
    mut counts: DeviceViewMut<'_, C>,
    mode: CountMode,
    algorithm: HistogramAlgorithm,
) -> Result<()> {
    let spec = EvenBins::new(bins, lower, upper)?;
    check_counts(&input, bins, &counts)?;
    plan(
        algorithm,
        bins,
        T::BYTES,
        None,
        gpu.info().shared_per_block_optin,
    )?;
    if input.is_empty() {
        return empty_input(gpu, &mut counts, mode);
    }
    count_into(gpu, &input, &Spec::Even(spec), &mut counts, mode, algorithm)
}

/// The histogram of `input` in the bins `[b[k], b[k+1])` of `boundaries`
/// (`bins + 1` strictly increasing values, checked on the host), in a new
/// buffer. Each item's bin is found by binary search; the boundaries are
/// staged in shared memory when they fit 16 KiB.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::histogram::{histogram_ranges, HistogramAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = DeviceBuffer::from_host(&gpu, &[1u8, 2, 3, 10, 200, 255])?;
/// let counts = histogram_ranges::<u8, u32>(&gpu, input.view(), &[0, 3, 100, 255], HistogramAlgorithm::Auto)?;
/// assert_eq!(counts.to_host(&gpu)?, [2, 2, 1]); // 255 is outside [0, 255)
/// # Ok(()) }
/// ```
pub fn histogram_ranges<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    boundaries: &[T],
    algorithm: HistogramAlgorithm,
) -> Result<DeviceBuffer<C>> {
    validate_boundaries(boundaries)?;
    let bins = boundaries.len() - 1;
    plan(
        algorithm,
        bins,
        T::BYTES,
        Some(bins + 1),
        gpu.info().shared_per_block_optin,
    )?;
    let mut counts = DeviceBuffer::<C>::zeros(gpu, bins)?;
    if !input.is_empty() {
        let staged = DeviceBuffer::from_host(gpu, boundaries)?;
        let spec = Spec::Ranges(bins, staged.view());
        count_into(
            gpu,
            &input,
            &spec,
            &mut counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )?;
    }
    Ok(counts)
}

/// [`histogram_ranges`] into a caller's `counts` (`boundaries.len() − 1`
/// long, not overlapping the input), overwritten or accumulated into as
/// `mode` says. Does not wait for the kernel (the boundaries are copied
/// from the host slice first). On a bad argument nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::histogram::{histogram_ranges_into, CountMode, HistogramAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = DeviceBuffer::from_host(&gpu, &[-5i32, 0, 7, 100])?;
/// let mut counts = DeviceBuffer::<u32>::filled(&gpu, 2, 99)?;
/// histogram_ranges_into(&gpu, input.view(), &[-10, 0, 10], counts.view_mut(), CountMode::Overwrite, HistogramAlgorithm::GlobalAtomic)?;
/// assert_eq!(counts.to_host(&gpu)?, [1, 2]);
/// # Ok(()) }
/// ```
pub fn histogram_ranges_into<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    boundaries: &[T],
    mut counts: DeviceViewMut<'_, C>,
    mode: CountMode,
    algorithm: HistogramAlgorithm,
) -> Result<()> {
    validate_boundaries(boundaries)?;
    let bins = boundaries.len() - 1;
    check_counts(&input, bins, &counts)?;
    plan(
        algorithm,
        bins,
        T::BYTES,
        Some(bins + 1),
        gpu.info().shared_per_block_optin,
    )?;
    if input.is_empty() {
        return empty_input(gpu, &mut counts, mode);
    }
    // Freed in stream order after the kernel that reads it.
    let staged = DeviceBuffer::from_host(gpu, boundaries)?;
    let spec = Spec::Ranges(bins, staged.view());
    count_into(gpu, &input, &spec, &mut counts, mode, algorithm)
}

/// Counts the non-empty `input` into `counts` (validated) as `mode` says:
/// the sort method writes every count itself, the counting methods add to
/// counts zeroed first when overwriting.
fn count_into<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: &DeviceView<'_, T>,
    spec: &Spec<'_, T>,
    counts: &mut DeviceViewMut<'_, C>,
    mode: CountMode,
    algorithm: HistogramAlgorithm,
) -> Result<()> {
    match algorithm {
        HistogramAlgorithm::Sort => by_sort::count(gpu, input, spec, counts, mode),
        _ => dispatch::launch(gpu, input, spec, counts, mode, algorithm),
    }
}

/// An empty input's histogram: zeros when overwriting, the counts left as
/// they are when accumulating.
fn empty_input<C: HistogramCount>(
    gpu: &Gpu,
    counts: &mut DeviceViewMut<'_, C>,
    mode: CountMode,
) -> Result<()> {
    match mode {
        CountMode::Overwrite => counts.fill(gpu, C::zero()),
        CountMode::Accumulate => Ok(()),
    }
}

fn check_counts<T: HistogramInput, C: HistogramCount>(
    input: &DeviceView<'_, T>,
    bins: usize,
    counts: &DeviceViewMut<'_, C>,
) -> Result<()> {
    validate_counts(
        bins,
        counts.len(),
        (input.device_ptr(), input.bytes()),
        (counts.device_ptr(), counts.bytes()),
    )
}

/// Every kernel module of the histogram methods: one per input type.
///
/// ```
/// let modules = reduce::histogram::kernel_catalog();
/// assert!(modules.iter().all(|m| !m.entries().is_empty()));
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    modules::catalog()
}
