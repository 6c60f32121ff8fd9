//! Top-k by radix select (`kernels/cuda/sort/top_k.cu`): the k largest or
//! smallest keys, sorted, with their input indices — without sorting the
//! input.
//!
//! - **Steps**: KEY_BITS / 8 rounds of a digit histogram over the keys
//!   whose higher digits match the prefix found so far plus a one-block
//!   choice of the digit holding the k-th key (all on the device, no
//!   synchronisation); one count per portion of the keys below and equal to
//!   the k-th; one ordered filter (a two-class compaction on the per-digit
//!   look-back) writing the k candidates in input order; then the default
//!   sort of the k candidates with their indices (stable: ties in input
//!   order).
//! - **Bytes moved** (KEY_BITS / 8 + 2) · n·s reads of the keys, plus the
//!   sort of k pairs.
//! - **Temporaries** from the handle's scratch arena (nothing allocated
//!   after the first call at a size, apart from `top_k`'s returned
//!   buffers): zeroed, 2048 bytes of histogram, 16 bytes of class counts
//!   and 4 of tile counter per portion (up to 2^28 keys), and 8 bytes of
//!   look-back state per filter tile; unzeroed, the 3 select words (set by
//!   two fills on the stream) and the k candidates with
//!   their u64 indices; the sort of the candidates takes its own from an
//!   arena nested in that one.
//! - NaN counts as the largest key (it sorts after +∞), so `largest = true`
//!   returns NaNs first.

use gpu_core::launch::LaunchConfig;
use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Error, Gpu, KernelArgs, Result};

use crate::key::SortKey;
use crate::modules::{
    kernel, Entry, FILTER_BLOCK_THREADS, FILTER_TILE, TOPK_BLOCK_THREADS, TOPK_ITEMS,
    TOPK_PORTION_KEYS, UPSWEEP_BLOCKS_PER_SM,
};
use crate::{check_disjoint, Order, SortOptions};

/// Words of the radix select's state (the chosen digits' prefix and mask,
/// and the ranks still to find), read and updated by every round.
const SELECT_WORDS: usize = 3;

/// The `k` largest (`largest = true`, largest first) or smallest (smallest
/// first) keys of `keys`, with their input indices; ties keep the lower
/// index first. Errors: k > n.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[4.0f32, 9.5, -1.0, 9.5, 0.0])?;
/// let (values, indices) = sort::top_k(&gpu, keys.view(), 3, true)?;
/// assert_eq!(values.to_host(&gpu)?, vec![9.5, 9.5, 4.0]);
/// assert_eq!(indices.to_host(&gpu)?, vec![1, 3, 0]);
/// # Ok(()) }
/// ```
pub fn top_k<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    k: usize,
    largest: bool,
) -> Result<(DeviceBuffer<K>, DeviceBuffer<u64>)> {
    check_k(k, keys.len())?;
    // SAFETY (both): top_k_into writes all k entries.
    let mut values = unsafe { DeviceBuffer::<K>::uninit(gpu, k)? };
    let mut indices = unsafe { DeviceBuffer::<u64>::uninit(gpu, k)? };
    top_k_into(gpu, keys, values.view_mut(), indices.view_mut(), largest)?;
    Ok((values, indices))
}

fn check_k(k: usize, n: usize) -> Result<()> {
    if k > n {
        return Err(Error::invalid("k", format!("{k} exceeds the {n} keys")));
    }
    Ok(())
}

/// [`top_k`] into a caller's buffers: k = `values_out.len()`, which
/// `indices_out` must match. Errors: k > n, lengths that differ, outputs
/// overlapping the keys or each other.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[7u16, 3, 5, 1])?;
/// let mut values = DeviceBuffer::<u16>::zeros(&gpu, 2)?;
/// let mut indices = DeviceBuffer::<u64>::zeros(&gpu, 2)?;
/// sort::top_k_into(&gpu, keys.view(), values.view_mut(), indices.view_mut(), false)?;
/// assert_eq!(values.to_host(&gpu)?, vec![1, 3]);
/// assert_eq!(indices.to_host(&gpu)?, vec![3, 1]);
/// # Ok(()) }
/// ```
pub fn top_k_into<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    mut values_out: DeviceViewMut<'_, K>,
    mut indices_out: DeviceViewMut<'_, u64>,
    largest: bool,
) -> Result<()> {
    let n = keys.len();
    let k = values_out.len();
    check_k(k, n)?;
    Error::check_len("indices_out", k, indices_out.len())?;
    let (ki, kib) = (keys.device_ptr(), keys.bytes());
    let (vo, vob) = (values_out.device_ptr(), values_out.bytes());
    let (io, iob) = (indices_out.device_ptr(), indices_out.bytes());
    check_disjoint("values_out", vo, vob, "keys", ki, kib)?;
    check_disjoint("indices_out", io, iob, "keys", ki, kib)?;
    check_disjoint("indices_out", io, iob, "values_out", vo, vob)?;
    if k == 0 {
        return Ok(());
    }
    let n64 = n as u64;
    let descending = u32::from(largest);
    let portions = n64.div_ceil(TOPK_PORTION_KEYS);
    let total_tiles: u64 = (0..portions)
        .map(|p| {
            (n64 - p * TOPK_PORTION_KEYS)
                .min(TOPK_PORTION_KEYS)
                .div_ceil(FILTER_TILE)
        })
        .sum();
    // Zeroed: histogram (256 u64), class counts (2 u64 per portion), tile
    // counters (1 u32 per portion), look-back rows (2 u32 per tile).
    let zeroed_u64 = 256 + 2 * portions + (portions + 2 * total_tiles).div_ceil(2);
    let zeroed_u64 = usize::try_from(zeroed_u64)
        .map_err(|_| Error::invalid("keys", format!("{n} keys: too much temporary storage")))?;
    let histogram = kernel::<K>(gpu, Entry::TopkHistogram, None)?;
    let choose = kernel::<K>(gpu, Entry::TopkSelect, None)?;
    let count = kernel::<K>(gpu, Entry::TopkCount, None)?;
    let filter = kernel::<K>(gpu, Entry::TopkFilter, None)?;
    let chunk = TOPK_BLOCK_THREADS as u64 * TOPK_ITEMS as u64;
    let max_blocks = UPSWEEP_BLOCKS_PER_SM * gpu.info().sm_count as u64;

    // Unzeroed scratch: the 3 select words, then the k candidates and their
    // k indices, each a whole number of words.
    let candidate_words = (k * K::BYTES).div_ceil(8);
    let words = SELECT_WORDS + candidate_words + k;
    let run = |scratch: DeviceViewMut<'_, u64>, nested: &Gpu| {
        let (mut select, rest) = scratch.split_at_mut(SELECT_WORDS)?;
        let (candidates, candidate_indices) = rest.split_at_mut(candidate_words)?;
        let candidates = candidates.into_elements::<K>()?.into_slice(..k)?;
        // The radix select starts from no digits chosen (prefix 0, mask 0) and
        // all k ranks to find: two fills on the stream, no host wait.
        select.slice_mut(..2)?.fill(nested, 0)?;
        select.slice_mut(2..)?.fill(nested, k as u64)?;
        let select_ptr = select.device_ptr();
        nested.with_zeroed_scratch(zeroed_u64, |zeroed| {
            let hist = zeroed.device_ptr();
            let counts = hist + 8 * 256;
            let counters = counts + 16 * portions;
            let states = counters + 4 * portions;

            let config = LaunchConfig {
                grid: (n64.div_ceil(chunk).clamp(1, max_blocks) as u32, 1, 1),
                block: (TOPK_BLOCK_THREADS, 1, 1),
                shared_bytes: 0,
            };
            let one_block = LaunchConfig {
                grid: (1, 1, 1),
                block: (256, 1, 1),
                shared_bytes: 0,
            };
            for shift in (0..K::KEY_BITS).step_by(8).rev() {
                let mut args = KernelArgs::new();
                args.scalar(ki)
                    .scalar(n64)
                    .scalar(descending)
                    .scalar(shift)
                    .scalar(select_ptr)
                    .scalar(hist);
                // SAFETY: topk_histogram_*(const void* keys, u64 n, u32
                // descending, u32 shift, const u64* select, u64* hist) matches;
                // it reads keys[0, n) and the 3 select words, adds into the 256
                // histogram words.
                unsafe { gpu.launch(&histogram, config, &args)? };
                let mut args = KernelArgs::new();
                args.scalar(hist).scalar(select_ptr).scalar(shift);
                // SAFETY: topk_select_*(u64* hist, u64* select, u32 shift)
                // matches; one block of 256 reads and clears the 256 counts and
                // updates the 3 select words.
                unsafe { gpu.launch(&choose, one_block, &args)? };
            }

            let config = LaunchConfig {
                grid: (
                    n64.min(TOPK_PORTION_KEYS)
                        .div_ceil(chunk)
                        .clamp(1, max_blocks) as u32,
                    portions as u32,
                    1,
                ),
                block: (TOPK_BLOCK_THREADS, 1, 1),
                shared_bytes: 0,
            };
            let mut args = KernelArgs::new();
            args.scalar(ki)
                .scalar(n64)
                .scalar(TOPK_PORTION_KEYS)
                .scalar(descending)
                .scalar(select_ptr)
                .scalar(counts);
            // SAFETY: topk_count_*(const void* keys, u64 n, u64 portion_keys,
            // u32 descending, const u64* select, u64* counts) matches; grid y =
            // portions, each adding into its 2 zeroed words.
            unsafe { gpu.launch(&count, config, &args)? };

            let mut state_row = 0u64;
            for portion in 0..portions {
                let first = portion * TOPK_PORTION_KEYS;
                let items = (n64 - first).min(TOPK_PORTION_KEYS);
                let tiles = items.div_ceil(FILTER_TILE);
                let config = LaunchConfig {
                    grid: (tiles as u32, 1, 1),
                    block: (FILTER_BLOCK_THREADS, 1, 1),
                    shared_bytes: 0,
                };
                let mut args = KernelArgs::new();
                args.scalar(ki + first * K::BYTES as u64)
                    .scalar(items)
                    .scalar(first)
                    .scalar(k as u64)
                    .scalar(descending)
                    .scalar(select_ptr)
                    .scalar(counts)
                    .scalar(portion as u32)
                    .scalar(candidates.device_ptr())
                    .scalar(candidate_indices.device_ptr())
                    .scalar(counters + 4 * portion)
                    .scalar(states + 8 * state_row);
                // SAFETY: topk_filter_*(const void* keys, u64 count, u64 first,
                // u64 k, u32 descending, const u64* select, const u64* counts,
                // u32 portion, void* out_keys, u64* out_indices, u32* counter,
                // u32* state) matches; it reads the portion's keys and writes
                // candidates at ranks below k only, uses its zeroed counter and
                // its `tiles` rows of 2 zeroed words.
                unsafe { gpu.launch(&filter, config, &args)? };
                state_row += tiles;
            }
            Ok(())
        })?;
        let order = if largest {
            Order::Descending
        } else {
            Order::Ascending
        };
        crate::sort_pairs(
            nested,
            candidates.as_view(),
            candidate_indices.as_view(),
            values_out.reborrow(),
            indices_out.reborrow(),
            SortOptions::from(order),
        )
    };
    // SAFETY: the select words are filled on the stream before any kernel
    // reads them; the filter writes all k candidates and their indices
    // (exactly k keys are below the k-th or among the first `remaining`
    // equal to it) before the sort reads them; all on this stream.
    unsafe { gpu.with_scratch_words(words, run) }
}
