//! `ThreePass`: the lab's compaction — map, exclusive scan, scatter.
//!
//! 1. map: `marks[i] = 1` if item i is kept, else 0 (four consecutive items
//!    per thread, one vector access per array where aligned);
//! 2. scan: `positions` = exclusive prefix sum of `marks`, by the chosen scan
//!    algorithm through the scan crate's public API;
//! 3. scatter: kept `in[i]` goes to `out[positions[i]]`; for a partition the
//!    rejected `in[i]` goes to `out[count + (i − positions[i])]`, keeping its
//!    order; the count is `positions[n−1] + marks[n−1]`, written to
//!    `count_out` by the last thread.
//!
//! Marks and positions are `u32` while n ≤ u32::MAX (positions never exceed
//! n − 1 and the count n, so nothing wraps) and `u64` beyond, where a `u32`
//! prefix would wrap: half the scan traffic in the common case, any length
//! past 2^32 still correct.
//!
//! | | |
//! |---|---|
//! | work | O(n) + the scan's |
//! | steps | 1 + the scan's + 1 |
//! | bytes (c = 4 or 8) | map n (flags) or n·s read, n·c written; scan ≈ its own (2n·c for look-back); scatter n·s + 2n·c read, k·s written (partition n·s) |
//! | launches | map + scan's + scatter (4 items per thread, [`THREE_PASS_ITEMS`](crate::policy::THREE_PASS_ITEMS)) |
//! | temporary memory | 2n·c bytes (marks, positions) |
//! | shared memory | none in map/scatter; the scan's own |
//! | in place | no |
//! | deterministic | yes (integer scan) |
//!
//! Kernels: `kernels/cuda/compact/three_pass.cu`.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, Element, Gpu, KernelArgs, Result};

use crate::scan_bridge::{exclusive_sum, ScanAlgorithm};

use crate::modules::{
    default_policy, entry, module, module_key, THREE_PASS_BLOCK_THREADS, THREE_PASS_ITEMS,
};
use crate::{Compaction, Selection};

/// Whether the marks and positions are `u64` for `n` items.
///
/// ```
/// assert!(!compact::uses_u64_marks(u32::MAX as usize));
/// assert!(compact::uses_u64_marks(u32::MAX as usize + 1));
/// ```
pub fn uses_u64_marks(n: usize) -> bool {
    n as u64 > u32::MAX as u64
}

/// Global bytes the map and scatter move (the scan's own traffic excluded:
/// see the scan crate's `bytes_moved` for n marks of 4 or 8 bytes).
///
/// ```
/// // 1000 i32 items by flags, 250 kept: map reads 1000 flag bytes and writes
/// // 4000 mark bytes; scatter reads marks (4000), positions (4000), items
/// // (4000) and writes 1000 item bytes.
/// assert_eq!(compact::map_scatter_bytes_moved(1000, 250, 4, true, false), 18_000);
/// ```
pub fn map_scatter_bytes_moved(
    n: usize,
    kept: usize,
    element_bytes: usize,
    by_flags: bool,
    partition: bool,
) -> u64 {
    let c = if uses_u64_marks(n) { 8 } else { 4 };
    let map_read = if by_flags { n } else { n * element_bytes };
    let written = if partition { n } else { kept };
    (map_read + n * c + n * element_bytes + 2 * n * c + written * element_bytes) as u64
}

/// Runs the three passes. `n > 0`; arguments validated by the caller.
/// Enqueued, no host synchronisation.
pub(crate) fn run<T: Element>(
    gpu: &Gpu,
    job: Compaction<'_, T>,
    scan_algorithm: ScanAlgorithm,
) -> Result<()> {
    let run_with = if uses_u64_marks(job.selection.len()) {
        run_with::<T, u64>
    } else {
        run_with::<T, u32>
    };
    run_with(gpu, job, scan_algorithm)
}

/// The three passes with marks and positions of type `C`.
fn run_with<T: Element, C: Element>(
    gpu: &Gpu,
    job: Compaction<'_, T>,
    scan_algorithm: ScanAlgorithm,
) -> Result<()> {
    let Compaction {
        selection,
        mut output,
        mut count_out,
        partition,
    } = job;
    let n = selection.len();
    // Compile (or fetch) both kernels before anything is written. They live
    // in the main module (the default tuning's).
    let predicate = selection.predicate_source();
    let default = default_policy::<T>();
    let map_entry = match selection {
        Selection::Flags { .. } => entry::map_flags::<T, C>(),
        Selection::Predicate { .. } => entry::map_if::<T, C>(),
    };
    let key = module_key::<T>(predicate, &default);
    let build = || module::<T>(predicate);
    let map_kernel = gpu.stored_kernel(&key, &map_entry, build)?;
    let scatter_entry = entry::scatter::<T, C>(partition);
    let scatter_kernel = gpu.stored_kernel(&key, &scatter_entry, build)?;

    // SAFETY: both are written in full (map writes every mark, the scan every
    // position) before anything reads them.
    let mut marks = unsafe { DeviceBuffer::<C>::uninit(gpu, n)? };
    let mut positions = unsafe { DeviceBuffer::<C>::uninit(gpu, n)? };

    // Four consecutive items per thread; a grid past 2^31 − 1 blocks spills
    // into y and the kernels flatten it with global_thread_index().
    let (config, _blocks) = grid_1d(n as u64, THREE_PASS_BLOCK_THREADS, THREE_PASS_ITEMS, 0)?;

    let mut map_args = KernelArgs::new();
    match &selection {
        Selection::Flags { flags, .. } => {
            map_args.input(flags);
        }
        Selection::Predicate { input, predicate } => {
            let (code, a, b) = predicate.kernel_arguments();
            map_args.input(input).scalar(code).scalar(a).scalar(b);
        }
    }
    map_args.output(&mut marks.view_mut()).scalar(n as u64);
    // SAFETY: matches compact_map_{flags,if}_C_T: ([const u8* flags] |
    // [const T* in, u32 code, T a, T b]), C* marks, u64 n. Reads and writes
    // indices < n of n-element buffers.
    unsafe { gpu.launch(&map_kernel, config, &map_args)? };

    exclusive_sum(gpu, marks.view(), positions.view_mut(), scan_algorithm)?;

    let mut scatter_args = KernelArgs::new();
    scatter_args
        .input(&selection.input())
        .input(&marks.view())
        .input(&positions.view())
        .output(&mut output)
        .scalar(n as u64)
        .output(&mut count_out);
    // SAFETY: matches compact_scatter_{select,partition}_C_T: (const T* in,
    // const C* marks, const C* positions, T* out, u64 n, u64* count_out).
    // Reads indices < n. Writes out[p] for p < count (select: output holds
    // ≥ count) or p < n (partition: output holds n), and count_out[0].
    unsafe { gpu.launch(&scatter_kernel, config, &scatter_args) }
}
