//! The histogram by sort, the lesson's third method
//! ([`HistogramAlgorithm::Sort`](super::HistogramAlgorithm::Sort)).
//!
//! **What it computes.** The same counts as every other method: `counts[k]`
//! = the number of items in bin k, by the one bin formula ([`EvenBins`],
//! [`range_bin`](super::range_bin)), stored (`Overwrite`) or added
//! (`Accumulate`) wrapping in the count type.
//!
//! **Steps.** Sorting brings equal bins together; a bin's count is then the
//! distance between the boundary where its run starts and the next one.
//! 1. *Bin indices*: one u32 per item, `bin(x)` by the binners of
//!    `histogram.cu` (the same device code the counting modes run), or
//!    `bins` for an item counted nowhere: a sentinel past the last bin, so
//!    those items sort to the end and fall in no run that is counted.
//! 2. *Sort*: [`sort::sort_keys_in_place`] over bits `[0, b)` with `b` the
//!    bit length of `bins` (`⌈log2(bins + 1)⌉`, [`key_bits`]): one 8-bit
//!    digit pass per started byte: 1 pass for 2 to 255 bins, 2 for 256 (the
//!    sentinel 256 needs a ninth bit) to 65 535, 3 for 65 536.
//! 3. *Counts*: one thread per bin, `count[k] = lower_bound(k + 1) −
//!    lower_bound(k)` by binary search in the sorted indices. Every count is
//!    written once, so nothing is zeroed first and no atomic is needed.
//!
//! **Work.** O(n) for the bin indices, O(n · passes) for the sort, O(bins ·
//! log n) for the searches: integer counts, deterministic.
//!
//! **Bytes moved** ([`sort_bytes_moved`](super::sort_bytes_moved)): the
//! input read once (`n · sizeof(T)`), the bin indices written (`4n`), the
//! sort's own traffic ([`sort::bytes_moved`] of u32 keys: `4n` read by its
//! digit histogram and `2 · 4n` per pass), and the searches' reads
//! (`bins · 2⌈log2(n + 1)⌉ · 4`); the counts are left out, as for the other
//! methods. By this model an i32 input moves 7× the bytes of the input
//! read once at 256 bins (28n against 4n) and 9× at 65 536 (36n), a u8
//! input 25× at 256 bins. What `Auto` picks reads the input once and
//! counts in shared memory without contention for any input (lane copies,
//! value counts) or with 16-bit packed counts, so the model gives the sort
//! no case to win and `Auto` never picks it. (Its work does not depend on
//! the values, so the model expects it to beat `GlobalAtomic` with every
//! item in one bin, where those atomics queue on one address; `Auto` never
//! counts that way. Not yet measured on the GPU.) The method is here to
//! teach how a sort turns grouping into counting.
//!
//! **Temporaries.** Two buffers of n u32 (the indices and the sort's other
//! half of a [`DoubleBuffer`]), stream-ordered from the device pool, which
//! keeps freed memory for the next call; the sort takes its look-back state
//! from the handle's scratch arena. (The arena hands out zeroed 64-bit
//! words only, memset on every call, and holds its lock while the work is
//! enqueued, so the sort nested inside would find it busy: the pool is the
//! allocation that costs nothing in the steady state.)

use gpu_core::launch::LaunchConfig;
use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Gpu, KernelArgs, Result};
use sort::{DoubleBuffer, SortOptions};

use super::bins::{HistogramCount, HistogramInput};
use super::dispatch::{push_bin_spec, Spec};
use super::modules::{module, module_key, sort_bins_entry, sort_counts_entry, SORT_BLOCK_THREADS};
use super::{CountMode, HistogramAlgorithm};

/// Bits of the radix image the sort looks at for `bins` bins: the bit
/// length of `bins`, so that every bin index and the sentinel `bins` fit.
///
/// ```
/// use reduce::histogram::policy::key_bits;
/// assert_eq!(key_bits(2), 2); // 0, 1 and the sentinel 2
/// assert_eq!(key_bits(255), 8);
/// assert_eq!(key_bits(256), 9);
/// assert_eq!(key_bits(65_536), 17);
/// ```
pub fn key_bits(bins: usize) -> u32 {
    usize::BITS - bins.leading_zeros()
}

/// Digit passes the sort makes for `bins` bins (8 bits per pass).
///
/// ```
/// use reduce::histogram::policy::sort_passes;
/// assert_eq!([sort_passes(2), sort_passes(255), sort_passes(256), sort_passes(65_536)], [1, 1, 2, 3]);
/// ```
pub fn sort_passes(bins: usize) -> u32 {
    sort::modules::digit_passes(0, key_bits(bins))
}

/// Counts the non-empty `input` into `counts` (validated, `bins` long) by
/// sorting its bin indices, enqueued on `gpu`'s stream.
pub(crate) fn count<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: &DeviceView<'_, T>,
    spec: &Spec<'_, T>,
    counts: &mut DeviceViewMut<'_, C>,
    mode: CountMode,
) -> Result<()> {
    let n = input.len();
    let (bins, kind, plan) = spec.launch_plan(gpu, HistogramAlgorithm::Sort)?;
    let info = gpu.info();
    let key = module_key::<T>();
    // SAFETY (both): the bin kernel writes every one of the n indices
    // before the sort reads them; the sort writes its other buffer before
    // it reads it.
    let mut indices = unsafe { DeviceBuffer::<u32>::uninit(gpu, n)? };
    let mut alternate = unsafe { DeviceBuffer::<u32>::uninit(gpu, n)? };

    // 1. Bin indices, a grid-stride loop over as many blocks as are resident.
    let bins_kernel = gpu.stored_kernel(&key, &sort_bins_entry::<T>(kind), || module::<T>())?;
    let resident = bins_kernel
        .resident_blocks_per_sm(plan.block_threads, plan.shared_bytes)?
        .max(1) as u64;
    let blocks = (n as u64)
        .div_ceil(plan.block_threads as u64)
        .min(resident * info.sm_count as u64)
        .max(1) as u32;
    let config = LaunchConfig {
        grid: (blocks, 1, 1),
        block: (plan.block_threads, 1, 1),
        shared_bytes: plan.shared_bytes as u32,
    };
    let mut args = KernelArgs::new();
    args.input(input)
        .scalar(n as u64)
        .output(&mut indices.view_mut())
        .scalar(bins as u32);
    push_bin_spec(&mut args, spec, plan.stage);
    // SAFETY: the argument list matches histogram_sort_bins_{spec}_{T}:
    // (const T* in, u64 n, u32* bin_of, u32 bins, then the even binner's
    // T lower, T upper, u64 range, u64 magic, T scale, u32 shift, or const
    // T* boundaries, u32 stage). `in` and `bin_of` hold n items and the
    // kernel touches indices below n only; `boundaries` holds bins + 1
    // values; the dynamic shared memory is the staged boundaries `plan`
    // sized (`stage` of them, 0 when they stay in global memory).
    unsafe { gpu.launch(&bins_kernel, config, &args) }?;

    // 2. Sort the indices by the bits that can be set.
    let mut keys = DoubleBuffer::new(indices.view_mut(), alternate.view_mut())?;
    sort::sort_keys_in_place(
        gpu,
        &mut keys,
        SortOptions::default().with_bits(0..key_bits(bins)),
    )?;

    // 3. Counts: one thread per bin.
    let counts_kernel = gpu.stored_kernel(&key, &sort_counts_entry::<T, C>(), || module::<T>())?;
    let config = LaunchConfig {
        grid: ((bins as u32).div_ceil(SORT_BLOCK_THREADS), 1, 1),
        block: (SORT_BLOCK_THREADS, 1, 1),
        shared_bytes: 0,
    };
    let sorted = keys.current();
    let mut args = KernelArgs::new();
    args.input(&sorted)
        .scalar(n as u64)
        .output(counts)
        .scalar(bins as u32)
        .scalar(u32::from(mode == CountMode::Accumulate));
    // SAFETY: the argument list matches histogram_sort_counts_{C}_{T}:
    // (const u32* sorted, u64 n, C* counts, u32 bins, u32 accumulate).
    // `sorted` holds n indices, `counts` holds `bins` counts (validated);
    // the grid covers `bins` threads and threads past it return at once.
    unsafe { gpu.launch(&counts_kernel, config, &args) }
}
