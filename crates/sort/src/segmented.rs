//! Segmented sort: many independent arrays in one call, each sorted on its
//! own (stable, the same key order and options as the whole-array sorts).
//!
//! - **How**: one block per segment sorts it in shared memory with the
//!   one-block radix sort (`kernels/cuda/sort/block_sort.cu`,
//!   `sort_segments`): one read and one write of the data, one launch.
//! - **Segments** are given by `offsets` (device memory, `segments + 1`
//!   entries: `0 = offsets[0] ≤ offsets[1] ≤ … ≤ offsets[segments] = n`);
//!   segment s is keys `[offsets[s], offsets[s + 1])`. A segment may be
//!   empty; one longer than [`MAX_SEGMENT_KEYS`] is
//!   [`Error::Unsupported`] (sort it with the whole-array sort).
//! - **Validation** reads the offsets back to the host (one small copy and
//!   a wait) before any kernel runs.

use gpu_core::launch::{spread_blocks, LaunchConfig};
use gpu_core::{DeviceType, DeviceView, DeviceViewMut, Error, Gpu, KernelArgs, Result};

use crate::key::{PayloadWidth, SortKey};
use crate::modules::{
    block_sort_shared_bytes, kernel, Entry, BLOCK_SORT_MAX_KEYS, BLOCK_SORT_THREADS,
};
use crate::{check_disjoint, check_pair_buffers, SortOptions};

/// The longest segment the segmented sort takes: what one block sorts in
/// shared memory.
pub const MAX_SEGMENT_KEYS: usize = BLOCK_SORT_MAX_KEYS;

/// Checks segment offsets (host copy) against `n` keys: non-empty, from 0
/// to n, non-decreasing, no segment longer than [`MAX_SEGMENT_KEYS`].
///
/// ```
/// use sort::segmented::check_offsets;
/// assert!(check_offsets(&[0, 3, 3, 10], 10).is_ok());
/// assert!(check_offsets(&[0, 5, 4, 10], 10).is_err()); // decreasing
/// assert!(check_offsets(&[0, 9], 10).is_err()); // does not end at n
/// assert!(matches!(check_offsets(&[0, 9000], 9000), Err(gpu_core::Error::Unsupported(_))));
/// ```
pub fn check_offsets(offsets: &[u64], n: usize) -> Result<()> {
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return Err(Error::invalid(
            "offsets",
            "needs segments + 1 entries, at least one",
        ));
    };
    if first != 0 || last != n as u64 {
        return Err(Error::invalid(
            "offsets",
            format!("must run from 0 to the {n} keys (got {first} … {last})"),
        ));
    }
    for (s, pair) in offsets.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return Err(Error::invalid(
                "offsets",
                format!(
                    "segment {s} ends ({}) before it starts ({})",
                    pair[1], pair[0]
                ),
            ));
        }
        if pair[1] - pair[0] > MAX_SEGMENT_KEYS as u64 {
            return Err(Error::Unsupported(format!(
                "segment {s} has {} keys; the segmented sort takes up to {MAX_SEGMENT_KEYS} per segment",
                pair[1] - pair[0]
            )));
        }
    }
    Ok(())
}

/// Sorts each segment of `keys_in` into the same positions of `keys_out`.
/// See the module for the offsets; `options` as for [`crate::sort_keys`].
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[3u32, 1, 2, 9, 8, 7])?;
/// let offsets = DeviceBuffer::from_host(&gpu, &[0u64, 3, 3, 6])?; // three segments, one empty
/// let mut out = DeviceBuffer::<u32>::zeros(&gpu, 6)?;
/// sort::segmented_sort_keys(&gpu, keys.view(), out.view_mut(), offsets.view(), Order::Ascending)?;
/// assert_eq!(out.to_host(&gpu)?, vec![1, 2, 3, 7, 8, 9]);
/// # Ok(()) }
/// ```
pub fn segmented_sort_keys<K: SortKey>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    keys_out: DeviceViewMut<'_, K>,
    offsets: DeviceView<'_, u64>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let n = keys_in.len();
    Error::check_len("keys_out", n, keys_out.len())?;
    check_disjoint(
        "keys_out",
        keys_out.device_ptr(),
        keys_out.bytes(),
        "keys_in",
        keys_in.device_ptr(),
        keys_in.bytes(),
    )?;
    let segments = checked_segments(gpu, &offsets, n)?;
    launch::<K>(
        gpu,
        None,
        [keys_in.device_ptr(), keys_out.device_ptr(), 0, 0],
        &offsets,
        segments,
        options.order.is_descending(),
        bits,
    )
}

/// Sorts each segment of `keys_in` into `keys_out` with `values_in`
/// carried along into `values_out` (values of 1, 2, 4 or 8 bytes).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::Order;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[2i32, 1, 5, 5])?;
/// let values = DeviceBuffer::from_host(&gpu, &[10u16, 11, 12, 13])?;
/// let offsets = DeviceBuffer::from_host(&gpu, &[0u64, 2, 4])?;
/// let mut ko = DeviceBuffer::<i32>::zeros(&gpu, 4)?;
/// let mut vo = DeviceBuffer::<u16>::zeros(&gpu, 4)?;
/// sort::segmented_sort_pairs(&gpu, keys.view(), values.view(), ko.view_mut(), vo.view_mut(), offsets.view(), Order::Descending)?;
/// assert_eq!(vo.to_host(&gpu)?, vec![10, 11, 12, 13]);
/// # Ok(()) }
/// ```
pub fn segmented_sort_pairs<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys_in: DeviceView<'_, K>,
    values_in: DeviceView<'_, V>,
    keys_out: DeviceViewMut<'_, K>,
    values_out: DeviceViewMut<'_, V>,
    offsets: DeviceView<'_, u64>,
    options: impl Into<SortOptions>,
) -> Result<()> {
    let options = options.into();
    let bits = options.bit_range::<K>()?;
    let width = PayloadWidth::of_bytes(V::BYTES)?;
    let n = keys_in.len();
    check_pair_buffers(&keys_in, &values_in, &keys_out, &values_out)?;
    let (ki, ko) = (keys_in.device_ptr(), keys_out.device_ptr());
    let (vi, vo) = (values_in.device_ptr(), values_out.device_ptr());
    let segments = checked_segments(gpu, &offsets, n)?;
    launch::<K>(
        gpu,
        Some(width),
        [ki, ko, vi, vo],
        &offsets,
        segments,
        options.order.is_descending(),
        bits,
    )
}

/// Reads the offsets back and checks them; the number of segments.
fn checked_segments(gpu: &Gpu, offsets: &DeviceView<'_, u64>, n: usize) -> Result<u64> {
    if offsets.is_empty() {
        return Err(Error::invalid(
            "offsets",
            "needs segments + 1 entries, at least one",
        ));
    }
    let host = offsets.to_host(gpu)?;
    check_offsets(&host, n)?;
    Ok(host.len() as u64 - 1)
}

fn launch<K: SortKey>(
    gpu: &Gpu,
    payload: Option<PayloadWidth>,
    [keys_in, keys_out, values_in, values_out]: [u64; 4],
    offsets: &DeviceView<'_, u64>,
    segments: u64,
    descending: bool,
    bits: std::ops::Range<u32>,
) -> Result<()> {
    if segments == 0 {
        return Ok(());
    }
    let kernel = kernel::<K>(gpu, Entry::Segments, payload)?;
    let config = LaunchConfig {
        grid: spread_blocks(segments)?,
        block: (BLOCK_SORT_THREADS, 1, 1),
        shared_bytes: block_sort_shared_bytes(K::BYTES, payload.map_or(0, PayloadWidth::bytes)),
    };
    let mut args = KernelArgs::new();
    args.scalar(keys_in)
        .scalar(keys_out)
        .scalar(values_in)
        .scalar(values_out)
        .input(offsets)
        .scalar(segments)
        .scalar(bits.start)
        .scalar(bits.end)
        .scalar(u32::from(descending));
    // SAFETY: sort_segments_*(const void* keys_in, void* keys_out, const
    // void* values_in, void* values_out, const u64* offsets, u64 segments,
    // u32 begin, u32 end, u32 descending) matches; the offsets were checked
    // (0 … n, non-decreasing, segments of at most MAX_SEGMENT_KEYS), so
    // block s reads and writes keys (values) [offsets[s], offsets[s+1]) of
    // buffers of n; spare blocks of the spread grid return at once.
    unsafe { gpu.launch(&kernel, config, &args) }
}
