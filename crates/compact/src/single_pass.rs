//! `SinglePass`: compaction in one kernel with decoupled look-back.
//!
//! Blocks take tiles of `block × items` items in order from an atomic
//! counter, build a keep mask in registers (flags and items read as 16-byte
//! vectors, blocked or warp-striped), rank the kept items with a block scan,
//! get the tile's output offset by decoupled look-back over per-tile counts
//! (the single-pass machinery shared with the scan: u64 counts in one
//! 128-bit {count, status} word per tile, windows of 32·width tiles;
//! `kernels/cuda/single_pass/`), stage the kept items compacted in shared memory and write
//! them out coalesced. With the persistent schedule each block loops over
//! tiles and issues the next tile's loads before this tile's look-back.
//! The shape is a [`Policy`]: the default from the table, or a catalogued
//! candidate given in `CompactOptions`. Kernel:
//! `kernels/cuda/compact/single_pass.cu`.
//!
//! | | |
//! |---|---|
//! | work | O(n) |
//! | steps | O(items per thread + log block) per tile, look-back windows of 32·width tiles |
//! | bytes (select by flags) | n·s + n + k·s, plus 16 per tile of status ([`status_bytes`]) |
//! | bytes (select by predicate) | n·s + k·s, plus 16 per tile |
//! | bytes (partition) | count pass n·s, then n·s + n·s |
//! | launches | 1, the tile state epoch-tagged with no memset (partition: + fill + count pass) |
//! | shared memory per block | block·items·s bytes of staging + block/8 + 24 bytes (static; [`Policy::shared_bytes`]) |
//! | bank conflicts | blocked: a few ways on the staging stores; striped: hardly any; none on staging loads |
//! | in place | no |
//! | deterministic | yes (integer offsets; the output is the same whatever the timing) |
//!
//! Partition is two kernels: the count pass (`count.rs`) gives the total
//! kept, then this kernel writes rejected items at `total + rejected prefix`,
//! keeping them in their original order. A one-kernel version would have to
//! write rejected items reversed from the end (CUB's choice) or to a
//! temporary.

use gpu_core::launch::{grid_1d, LaunchConfig};
use gpu_core::single_pass::{tile_state_words, with_tile_state};
use gpu_core::{DeviceViewMut, Element, Gpu, KernelArgs, Result};

use crate::count::count_into;
use crate::modules::{
    default_policy_for, entry, module_key, single_pass_module, Policy, PredicateSource, Schedule,
};
use crate::Selection;

/// Runs the select (`partition == false`) or the partition scatter with
/// `tuning` (the default, or a catalogued candidate: validated by the
/// caller). `n > 0`; arguments validated by the caller. Output capacity: at
/// least the count (select) or n (partition). Writes the count to
/// `count_out[0]`. Enqueued, no host synchronisation.
pub(crate) fn run<T: Element>(
    gpu: &Gpu,
    selection: &Selection<'_, T>,
    output: &mut DeviceViewMut<'_, T>,
    count_out: &mut DeviceViewMut<'_, u64>,
    partition: bool,
    tuning: &Policy,
) -> Result<()> {
    let n = selection.len();
    let num_tiles = tuning.tiles(n as u64);
    // Compile (or fetch) the kernel before writing anything: a custom
    // predicate that does not compile leaves every buffer untouched.
    let (predicate, entry_name) = match selection {
        Selection::Flags { .. } => (PredicateSource::Builtin, entry::select_flagged::<T>()),
        Selection::Predicate { predicate, .. } => (
            PredicateSource::of(predicate),
            if partition {
                entry::partition_if::<T>()
            } else {
                entry::select_if::<T>()
            },
        ),
    };
    let persistent = tuning.schedule() == Schedule::Persistent;
    let kernel = gpu.stored_kernel(&module_key::<T>(predicate, tuning), &entry_name, || {
        single_pass_module::<T>(predicate, tuning)
    })?;
    // Asked of the driver once per kernel and shape, then remembered.
    let resident = if persistent {
        kernel.resident_blocks_per_sm(tuning.block_threads(), 0)?
    } else {
        0
    };
    let config = match tuning.schedule() {
        // One block per tile. Blocks draw tile numbers from the counter in
        // the order they start (or take their linear index, in block
        // order), so a grid spilled into y (more than 2^31 − 1 tiles) works
        // the same; surplus blocks get numbers ≥ num_tiles and exit.
        Schedule::TilePerBlock | Schedule::InBlockOrder => {
            grid_1d(
                n as u64,
                tuning.block_threads(),
                tuning.items_per_thread(),
                0,
            )?
            .0
        }
        // As many blocks as fit on the device at once (never more than
        // there are tiles); each loops over tiles drawn from the counter.
        Schedule::Persistent => {
            let blocks = num_tiles
                .min(gpu.info().sm_count as u64 * resident.max(1) as u64)
                .max(1);
            LaunchConfig {
                grid: (blocks as u32, 1, 1),
                block: (tuning.block_threads(), 1, 1),
                shared_bytes: 0,
            }
        }
    };
    if partition {
        count_into(gpu, selection, count_out)?;
    }
    // The single-pass state (gpu_core::single_pass): the two tile counters,
    // then the statuses of u64 counts (one 128-bit word per tile with the
    // default encoding), from the arena, epoch-tagged (no memset); alignment
    // checked.
    with_tile_state(gpu, num_tiles, 8, tuning.status(), |mut state| {
        let mut args = KernelArgs::new();
        args.input(&selection.input());
        match selection {
            Selection::Flags { flags, .. } => {
                args.input(flags);
            }
            Selection::Predicate { predicate, .. } => {
                let (code, a, b) = predicate.kernel_arguments();
                args.scalar(code).scalar(a).scalar(b);
            }
        }
        args.output(output)
            .scalar(n as u64)
            .output(&mut state.words)
            .scalar(state.epoch)
            .scalar(num_tiles)
            .output(count_out);
        // SAFETY: the arguments match the entry's C parameters in order:
        // (const T* in, [const u8* flags | u32 code, T a, T b], T* out, u64 n,
        // u64* state, u32 epoch, u64 num_tiles, u64* count_out | const u64* total).
        // `in` (and `flags`) hold n elements; the kernel reads indices < n only.
        // `state` holds tile_state_words(num_tiles, 8, status) words of this
        // call's `epoch`, 16-byte aligned (checked), the layout
        // single_pass/tile_status.cuh reads.
        // Writes: out[i] for i < count (select; output holds ≥ n ≥ count, or exactly the count for
        // owned results) or i < n (partition; output holds n), count_out[0]
        // (length 1). For a partition, count_out already holds the total, written
        // by the count pass earlier on the same stream.
        unsafe { gpu.launch(&kernel, config, &args) }
    })
}

/// Global bytes of the tile statuses at the default policy (16 per tile,
/// written and read once): about 0.4 % of the data for 4-byte items, left out
/// of [`crate::bytes_moved`].
///
/// ```
/// let n = 1 << 24;
/// let status = compact::status_bytes(n, 4);
/// assert!(status > 0 && status < compact::bytes_moved(n, n, 4, true) / 100);
/// ```
pub fn status_bytes(n: usize, element_bytes: usize) -> u64 {
    let policy = default_policy_for(element_bytes);
    let words = tile_state_words(policy.tiles(n as u64), 8, policy.status());
    8 * (words - gpu_core::single_pass::STATE_HEADER_WORDS)
}
