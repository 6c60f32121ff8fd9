//! Counting kept items on the device (`count_if`, the count pass of a
//! partition, and the exact size of an owned result).
//!
//! Computes `*count_out = |{ i : flags[i] != 0 }|` or `|{ i : pred(in[i]) }|`.
//! Work O(n); one fill of the counter and one launch of a persistent grid
//! (blocks = min(tiles, SMs × resident blocks per SM)) with a grid stride
//! over 4096-item tiles; one atomic add per block. Global bytes: n (flags)
//! or n·s (predicate) read, 8 written. Shared memory 64 bytes per block.
//! Deterministic. Kernel: `kernels/cuda/compact/count.cu`.

use gpu_core::launch::LaunchConfig;
use gpu_core::{DeviceViewMut, Element, Gpu, KernelArgs, Result};

use crate::modules::{
    default_policy, entry, module, module_key, PredicateSource, COUNT_BLOCK_THREADS,
    COUNT_ITEMS_PER_THREAD,
};
use crate::Selection;

/// Global bytes the count pass moves for `n` items of `element_bytes`.
///
/// ```
/// // By flags one byte per item, by a predicate the items; plus the 8-byte count.
/// assert_eq!(compact::count_bytes_moved(1000, 4, true), 1008);
/// assert_eq!(compact::count_bytes_moved(1000, 4, false), 4008);
/// ```
pub fn count_bytes_moved(n: usize, element_bytes: usize, by_flags: bool) -> u64 {
    let per_item = if by_flags { 1 } else { element_bytes };
    (n * per_item) as u64 + 8
}

/// Writes the count of kept items into `count_out[0]` (enqueued, no host
/// synchronisation). `n > 0`; arguments validated by the caller.
pub(crate) fn count_into<T: Element>(
    gpu: &Gpu,
    selection: &Selection<'_, T>,
    count_out: &mut DeviceViewMut<'_, u64>,
) -> Result<()> {
    let n = selection.len();
    let tile_items = COUNT_BLOCK_THREADS as u64 * COUNT_ITEMS_PER_THREAD as u64;
    let num_tiles = (n as u64).div_ceil(tile_items);
    let mut args = KernelArgs::new();
    let default = default_policy::<T>();
    let (predicate, entry_name) = match selection {
        Selection::Flags { flags, .. } => {
            args.input(flags);
            (PredicateSource::Builtin, entry::count_flagged::<T>())
        }
        Selection::Predicate { input, predicate } => {
            let (code, a, b) = predicate.kernel_arguments();
            args.input(input).scalar(code).scalar(a).scalar(b);
            (PredicateSource::of(predicate), entry::count_if::<T>())
        }
    };
    // The count entries live in the main module (the default tuning's).
    let kernel = gpu.stored_kernel(&module_key::<T>(predicate, &default), &entry_name, || {
        module::<T>(predicate)
    })?;
    // Asked of the driver once per kernel and shape, then remembered.
    let resident = kernel.resident_blocks_per_sm(COUNT_BLOCK_THREADS, 0)?;
    // A persistent grid: as many blocks as are resident at once (never more
    // than there are tiles), each striding over tiles, so the single counter
    // sees one atomic add per block rather than one per tile.
    let resident = resident.max(1) as u64;
    let blocks = num_tiles.min(gpu.info().sm_count as u64 * resident).max(1);
    let config = LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (COUNT_BLOCK_THREADS, 1, 1),
        shared_bytes: 0,
    };
    args.scalar(n as u64).scalar(num_tiles);
    args.output(count_out);
    count_out.fill(gpu, 0)?;
    // SAFETY: the argument list matches compact_count_{flagged,if}_T:
    // (const u8* flags | const T* in, u32 code, T a, T b), u64 n, u64
    // num_tiles, u64* count_out. The kernel reads items/flags below n only
    // (bounds checked per thread; vector loads only for whole tiles) and
    // writes count_out[0], which has length 1 (validated).
    unsafe { gpu.launch(&kernel, config, &args) }
}
