//! The default sort: LSD radix sort with 8-bit digits in the Onesweep style
//! (Adinets & Merrill 2022), `kernels/cuda/sort/onesweep.cu`.
//!
//! - **Computes** a stable sort of n keys (and raw-bit values) by bits
//!   `[begin, end)` of their radix image, ascending or descending.
//! - **Work** O(n · passes), passes = ⌈(end − begin) / 8⌉ (4 for 32-bit
//!   keys); **steps** per pass O(items per thread + warps + look-back
//!   distance).
//! - **Steps on the device**: one memset of the counters and the first
//!   look-back state; the upsweep (one read of the keys: every pass's
//!   digit histogram at once; its last block to finish scans them into the
//!   digit offsets of each pass's first portion); then
//!   one launch per pass and portion of up to 2^28 keys: rank in shared
//!   memory, per-digit decoupled look-back
//!   (`kernels/cuda/single_pass/digit_lookback.cuh`), scatter through
//!   shared memory so each digit's run is written contiguously. A
//!   portion's last tile writes the next portion's digit offsets (its own
//!   plus the portion's count of each digit): a later pass's portion holds
//!   other keys than the input's positions there, so the upsweep cannot
//!   count them.
//! - **Bytes moved** n·k (upsweep) + passes · 2·n·(k + v), for keys of k
//!   bytes and values of v bytes ([`bytes_moved`]): one read and one write
//!   of the data per digit pass.
//! - **Small inputs** (n ≤ [`crate::modules::one_launch_max_keys`]): one
//!   launch, no temporaries (`kernels/cuda/sort/block_sort.cu`). Up to
//!   [`crate::modules::BLOCK_SORT_MAX_KEYS`] keys one block sorts them in
//!   shared memory. On sm_90 and newer, up to
//!   [`crate::modules::CLUSTER_SORT_MAX_KEYS`] keys of 4 or 8 bytes (with
//!   values of 4 or 8 bytes, at most 12 bytes an item), one cluster of
//!   [`crate::modules::CLUSTER_SORT_BLOCKS`] blocks sorts them in its
//!   distributed shared memory: each block ranks its part, learns every
//!   block's digit counts and sends each key to its slot in whichever
//!   block holds it, with asynchronous stores counted on the receiver's
//!   mbarrier.
//!
//! Tuning: block threads and keys per thread of the upsweep and the
//! passes and the warps' peer-mask method come from an
//! [`OnesweepPolicy`] (module [`crate::policy`]), which also computes every
//! derived size (tile, portion, look-back rows, the pass's dynamic shared
//! memory); the entry points take [`OnesweepPolicy::default_for`].
//!
//! Temporary storage, all from the handle's scratch arena (the stream's,
//! or the [`gpu_core::Workspace`] it was given), so that after the first
//! call at a given size a call allocates nothing. With L = passes ×
//! portions launches and T tiles (all portions) per pass:
//!
//! | temporary | bytes | handed out |
//! |---|---|---|
//! | digit histograms | 1024 · L | zeroed (the upsweep adds into them) |
//! | tile counters (read by passes that draw their tiles from the counter, `TileOrder::Counter`), the upsweep's done counter | 4 · (L + 1) | zeroed |
//! | first look-back state | 1024 · T (n / 4 for 4096-key tiles) | zeroed |
//! | digit offsets | 2048 · L | unzeroed: the upsweep writes each pass's first row, a portion's last tile the next row |
//! | second look-back state | 1024 · T | unzeroed: pass 0 zeroes each portion's rows before pass 1 reads them |
//! | the other half of the key (value) double buffer | n · (k + v) | unzeroed, only for the forms that are not given one (`sort_keys`, `sort_pairs`, `argsort`, `sort_in_place_with`) and only when a second pass writes it |
//!
//! The zeroed words are one memset per call (of a nested arena, since the
//! unzeroed words hold the arena's lock); the first look-back state is in
//! it because its status words (2 status bits and a 30-bit count) have no
//! room for an epoch tag, and its rows depend on n and the policy, so no
//! earlier call can be trusted to have left them clear. The one-launch
//! sorts (n ≤ [`crate::modules::one_launch_max_keys`]) take no
//! temporaries.

use gpu_core::launch::LaunchConfig;
use gpu_core::{Gpu, KernelArgs, Result};

use crate::key::{PayloadWidth, SortKey};
use crate::modules::{
    block_sort_shared_bytes, cluster_sort_shared_bytes, digit_passes, kernel, policy_kernel,
    upsweep_blocks_per_sm, Entry, BLOCK_SORT_MAX_KEYS, BLOCK_SORT_THREADS, CLUSTER_SORT_BLOCKS,
    CLUSTER_SORT_THREADS,
};
use crate::policy::OnesweepPolicy;

/// Global bytes a sort of `n` keys of `key_bytes` (values of `value_bytes`,
/// 0 for none) over `passes` digit passes moves: the upsweep's read of the
/// keys and one read and one write of keys and values per pass (the unit
/// of the copy-ceiling ratio in the benchmark).
///
/// ```
/// // 2^20 u32 keys, 4 passes: 4 MiB read once, then 4 × 8 MiB.
/// assert_eq!(sort::bytes_moved(1 << 20, 4, 0, 4), (4 << 20) + 4 * (8 << 20));
/// ```
pub fn bytes_moved(n: usize, key_bytes: usize, value_bytes: usize, passes: u32) -> u64 {
    let n = n as u64;
    n * key_bytes as u64 + passes as u64 * 2 * n * (key_bytes + value_bytes) as u64
}

/// Device addresses of one buffer of keys and, when sorting pairs, the
/// matching values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Keys.
    pub keys: u64,
    /// Values (0 without).
    pub values: u64,
}

/// A sort's data movement: read `source`, write the final order into
/// `targets[final_target]`, with `targets` as the two halves of the double
/// buffer (either may be `source` itself).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Where the keys (values) are read.
    pub source: Slot,
    /// The double buffer.
    pub targets: [Slot; 2],
    /// The target the last pass must write.
    pub final_target: usize,
    /// Whether n is at most [`crate::modules::one_launch_max_keys`] for
    /// the keys and payload (asked once, by the caller, which sizes its
    /// temporaries by it): the one-block or one-cluster sort then writes
    /// `targets[final_target]` in one launch, with no temporaries.
    pub one_launch: bool,
}

/// Launch geometry of the digit passes for `n` keys under
/// [`OnesweepPolicy::DEFAULT`] (4096-key tiles): (portions, tiles of all
/// portions together). A sort
/// sizes its launches and look-back state from the policy it runs,
/// [`OnesweepPolicy::pass_geometry`].
///
/// ```
/// // 2^28 keys: one portion of 65 536 tiles of 4096.
/// assert_eq!(sort::onesweep::pass_geometry(1 << 28), (1, 65_536));
/// assert_eq!(sort::onesweep::pass_geometry((1 << 28) + 1), (2, 65_537));
/// assert_eq!(sort::onesweep::pass_geometry(5000), (1, 2));
/// ```
pub fn pass_geometry(n: u64) -> (u64, u64) {
    OnesweepPolicy::DEFAULT.pass_geometry(n)
}

/// The most destinations the split pass's table holds (`SORT_SPLIT_MAX`).
pub(crate) const SPLIT_MAX_DESTINATIONS: usize = 8;

/// Words of the split pass's by-value `SortSplitTable` parameter: count,
/// then the starts, key addresses and value addresses of
/// [`SPLIT_MAX_DESTINATIONS`] destinations.
pub(crate) const SPLIT_TABLE_WORDS: usize = 1 + 3 * SPLIT_MAX_DESTINATIONS;

/// The words of a split table ([`crate::split`]).
pub(crate) type SplitWords = [u64; SPLIT_TABLE_WORDS];

/// Asked once for the split table, right before the last pass is enqueued
/// (the earlier passes are queued by then).
pub(crate) type SplitSource<'f> = &'f mut dyn FnMut() -> Result<SplitWords>;

/// Sorts per `plan` (arguments already validated; n ≥ 1, begin < end)
/// with `policy` (checked here for `K` and `payload`). Returns the target
/// holding the result (`plan.final_target`). With `split` (`plan.one_launch`
/// false) the last pass writes through the split table ([`crate::split`])
/// that `split` returns instead of the final target; `split` is called
/// exactly once, after every earlier pass is enqueued and before the last
/// one is, unless an error comes first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort<K: SortKey>(
    gpu: &Gpu,
    n: usize,
    payload: Option<PayloadWidth>,
    descending: bool,
    begin_bit: u32,
    end_bit: u32,
    plan: Plan,
    policy: &OnesweepPolicy,
    mut split: Option<SplitSource<'_>>,
) -> Result<usize> {
    policy.check_for::<K>(payload)?;
    debug_assert!(split.is_none() || !plan.one_launch);
    let value_bytes = payload.map_or(0, PayloadWidth::bytes);
    let pass_shared = policy.pass_shared_bytes(K::BYTES, value_bytes);
    let split_shared = policy.pass_split_shared_bytes(K::BYTES, value_bytes);
    let needed = if split.is_some() {
        split_shared
    } else {
        pass_shared
    };
    if needed as usize > gpu.info().shared_per_block_optin {
        return Err(gpu_core::Error::invalid(
            "policy",
            format!(
                "{}: the digit pass needs {needed} bytes of shared memory per block, this \
                 GPU allows {}",
                policy.name(),
                gpu.info().shared_per_block_optin
            ),
        ));
    }
    if plan.one_launch {
        let target = plan.targets[plan.final_target];
        let one_block = n <= BLOCK_SORT_MAX_KEYS;
        let (entry, blocks, threads, shared_bytes) = if one_block {
            (
                Entry::Block,
                1,
                BLOCK_SORT_THREADS,
                block_sort_shared_bytes(K::BYTES, value_bytes),
            )
        } else {
            (
                Entry::Cluster,
                CLUSTER_SORT_BLOCKS,
                CLUSTER_SORT_THREADS,
                cluster_sort_shared_bytes(K::BYTES, value_bytes),
            )
        };
        let kernel = kernel::<K>(gpu, entry, payload)?;
        let config = LaunchConfig {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            shared_bytes,
        };
        let mut args = KernelArgs::new();
        args.scalar(plan.source.keys)
            .scalar(target.keys)
            .scalar(plan.source.values)
            .scalar(target.values)
            .scalar(n as u32)
            .scalar(begin_bit)
            .scalar(end_bit)
            .scalar(u32::from(descending));
        // SAFETY: sort_block_* and sort_cluster_*(const void* keys_in, void*
        // keys_out, const void* values_in, void* values_out, u32 n, u32
        // begin, u32 end, u32 descending) match; the buffers hold n keys
        // (values) each, validated by the caller (values only read or
        // written when the payload is present); each block loads its part
        // before it writes any shared memory another block reads and stores
        // the same part after its last pass, so in and out may be the same.
        // The cluster entry exists for this key and payload, was compiled
        // with __cluster_dims__(CLUSTER_SORT_BLOCKS) and fits the device
        // (plan.one_launch: one_launch_max_keys checked all three and opted
        // the kernel in to the non-portable size and its shared memory); it
        // is launched as a grid of exactly one cluster, n ≤
        // CLUSTER_SORT_MAX_KEYS.
        unsafe { gpu.launch(&kernel, config, &args)? };
        return Ok(plan.final_target);
    }

    let n64 = n as u64;
    let passes = digit_passes(begin_bit, end_bit);
    let (portions, rows) = policy.pass_geometry(n64);
    let portion_keys = policy.portion_keys();
    let portion_rows = policy.portion_tiles();
    let tile = policy.tile();
    let launches = passes as u64 * portions;
    let hist_words = launches * 256; // u32
    let counter_words = launches + 1; // u32: a tile counter per launch, the upsweep's done counter
    let state_words = policy.lookback_state_words(n64); // u32 per half: every portion's rows
    debug_assert_eq!(state_words, rows * 256);
    // Zeroed: histogram, tile counters, the first look-back state (u32s).
    let zeroed_u32 = hist_words + counter_words + state_words;
    let zeroed_u64 = usize::try_from(zeroed_u32.div_ceil(2)).map_err(|_| too_large(n))?;
    // Unzeroed scratch: the offsets (u64) and the second state (u32s).
    let offsets_u64 = launches * 256;
    let upsweep = policy_kernel::<K>(gpu, Entry::Upsweep, payload, policy)?;
    let pass = policy_kernel::<K>(gpu, Entry::Pass, payload, policy)?;
    let split_pass = match split {
        Some(_) => Some(crate::modules::split_kernel::<K>(gpu, payload, policy)?),
        None => None,
    };
    let mut split_words: Option<SplitWords> = None;

    let temporaries = [8 * offsets_u64, 4 * state_words];
    // SAFETY: each pass's first row of offsets is written by the upsweep
    // and every other row by the launch of the portion before, each before
    // any launch reads it; the second state's rows of a portion are zeroed
    // by the first pass's launch for that portion before the second pass
    // reads them (a one-pass sort never reads the second state).
    let run = |[offsets, state_b]: [u64; 2], nested: &Gpu| {
        nested.with_zeroed_scratch(zeroed_u64, |zeroed| {
            let base = zeroed.device_ptr();
            let hist = base;
            let counters = hist + 4 * hist_words;
            let done_counter = counters + 4 * launches;
            let state_a = counters + 4 * counter_words;

            let chunk = policy.upsweep_chunk();
            let upsweep_shared = policy.upsweep_shared_bytes(K::BYTES, passes);
            let info = gpu.info();
            let blocks_per_sm =
                upsweep_blocks_per_sm(upsweep_shared.into(), info.shared_per_sm as u64);
            let blocks_x = n64
                .min(portion_keys)
                .div_ceil(chunk)
                .clamp(1, blocks_per_sm * info.sm_count as u64);
            let config = LaunchConfig {
                grid: (blocks_x as u32, portions as u32, 1),
                block: (policy.upsweep_threads(), 1, 1),
                shared_bytes: upsweep_shared,
            };
            let mut args = KernelArgs::new();
            args.scalar(plan.source.keys)
                .scalar(n64)
                .scalar(portion_keys)
                .scalar(begin_bit)
                .scalar(end_bit)
                .scalar(passes)
                .scalar(u32::from(descending))
                .scalar(hist)
                .scalar(offsets)
                .scalar(done_counter);
            // SAFETY: sort_upsweep_*(const void* keys, u64 n, u64 portion_keys,
            // u32 begin, u32 end, u32 passes, u32 descending, u32* hist, u64*
            // offsets, u32* done_counter) matches; it reads keys[0, n), adds
            // into the zeroed histogram of passes × portions × 256 counters
            // (grid y = portions), takes a ticket from the zeroed done counter,
            // and the last block writes each pass's first row of 256 offsets.
            unsafe { gpu.launch(&upsweep, config, &args)? };

            let states = [state_a, state_b];
            let mut source = plan.source;
            for p in 0..passes {
                let shift = begin_bit + 8 * p;
                let width = (end_bit - shift).min(8);
                // Pass p writes the target that leaves the last pass on
                // final_target.
                let target = plan.targets[(plan.final_target + (passes - 1 - p) as usize) % 2];
                if p + 1 == passes {
                    if let Some(source) = split.as_mut() {
                        split_words = Some(source()?);
                    }
                }
                for portion in 0..portions {
                    let first = portion * portion_keys;
                    let count = (n64 - first).min(portion_keys);
                    let tiles = count.div_ceil(tile);
                    let row = p as u64 * portions + portion;
                    // This portion's rows in each half of the double state:
                    // pass p uses half p mod 2 and clears the same rows of the
                    // other half, which pass p − 1 used for this portion (the
                    // same tiles: one row per block).
                    let state_offset = 4 * 256 * portion * portion_rows;
                    let split_here = match (&split_pass, &split_words) {
                        (Some(kernel), Some(table)) if p + 1 == passes => Some((kernel, table)),
                        _ => None,
                    };
                    let config = LaunchConfig {
                        grid: (tiles as u32, 1, 1),
                        block: (policy.pass_threads(), 1, 1),
                        shared_bytes: if split_here.is_some() {
                            split_shared
                        } else {
                            pass_shared
                        },
                    };
                    let mut args = KernelArgs::new();
                    args.scalar(source.keys + first * K::BYTES as u64);
                    if split_here.is_none() {
                        args.scalar(target.keys);
                    }
                    args.scalar(if payload.is_some() {
                        source.values + first * value_bytes as u64
                    } else {
                        0
                    });
                    if split_here.is_none() {
                        args.scalar(target.values);
                    }
                    args.scalar(count)
                        .scalar(shift)
                        .scalar(width)
                        .scalar(u32::from(descending))
                        .scalar(offsets + 8 * 256 * row)
                        .scalar(if portion + 1 < portions {
                            offsets + 8 * 256 * (row + 1)
                        } else {
                            0
                        })
                        .scalar(counters + 4 * row)
                        .scalar(states[(p % 2) as usize] + state_offset)
                        .scalar(states[((p + 1) % 2) as usize] + state_offset)
                        .scalar(tiles);
                    if let Some((_, table)) = split_here {
                        args.by_value(*table);
                    }
                    // SAFETY: sort_pass_*(const void* keys_in, void* keys_out,
                    // const void* values_in, void* values_out, u64 count, u32
                    // shift, u32 width, u32 descending, const u64* offsets, u64*
                    // next_portion_offsets, u32* counter, u32* state, u32*
                    // next_state, u64 rows) matches. It reads count keys
                    // (values) from the portion's start and this portion's 256
                    // offsets (the upsweep's for portion 0, the previous
                    // launch's for the others), writes the next portion's 256
                    // offsets (the row after, of this pass; null for the last
                    // portion), writes each key to its final position below n
                    // in the target (the offsets count every key once), uses
                    // this launch's zeroed counter and the portion's `tiles`
                    // zeroed state rows, and zeroes the same rows of the other
                    // half, which the previous pass used for this portion and
                    // has finished with (stream order) and the next pass uses.
                    // Source and target are different buffers (the plan
                    // alternates them). The block of policy.pass_threads()
                    // threads gets pass_shared bytes of dynamic shared memory:
                    // the policy's size of the kernel's storage, which the
                    // kernel checks at compile time (SHARED_BYTES), within the
                    // device's opt-in limit (checked above). The split form
                    // (sort_split_pass_*: the same arguments without keys_out
                    // and values_out, then the SortSplitTable by value) writes position
                    // p to the table's destination holding p instead (the
                    // caller of crate::split vouches for the table: its
                    // destinations cover [0, n) and are writable from this
                    // context), with split_shared bytes (its own storage
                    // after the pass's, checked likewise).
                    let kernel = split_here.map_or(&pass, |(kernel, _)| kernel);
                    unsafe { gpu.launch(kernel, config, &args)? };
                }
                source = target;
            }
            Ok(())
        })
    };
    // SAFETY: as above: every temporary word is written before it is read.
    unsafe { with_temporaries(gpu, temporaries, run)? };
    Ok(plan.final_target)
}

/// The plan's target for pass `p` of `passes` and the target of the last:
/// pass p writes `targets[(final + passes − 1 − p) mod 2]`.
///
/// ```
/// // Three passes ending in target 0: 0, 1, 0.
/// let writes: Vec<usize> = (0..3).map(|p| sort::onesweep::pass_target(p, 3, 0)).collect();
/// assert_eq!(writes, vec![0, 1, 0]);
/// ```
pub fn pass_target(pass: u32, passes: u32, final_target: usize) -> usize {
    (final_target + (passes - 1 - pass) as usize) % 2
}

/// Bytes by which [`with_temporaries`] aligns each area (a whole number of
/// 128-byte lines, so every area starts a coalesced line).
const TEMPORARY_ALIGN: u64 = 256;

/// Calls `enqueue` with the device addresses of one area per entry of
/// `bytes` (each aligned to [`TEMPORARY_ALIGN`]; 0 for an empty area),
/// carved from `gpu`'s unzeroed scratch words, and the handle whose
/// arena (nested in `gpu`'s) the calls made while holding them use. After
/// the first call at a given size nothing is allocated.
///
/// # Safety
/// The areas hold whatever an earlier call left: the work `enqueue`
/// enqueues must write every byte before it reads it, and only on `gpu`'s
/// stream.
pub(crate) unsafe fn with_temporaries<R, const N: usize>(
    gpu: &Gpu,
    bytes: [u64; N],
    enqueue: impl FnOnce([u64; N], &Gpu) -> Result<R>,
) -> Result<R> {
    let mut starts = [0u64; N];
    let mut total = 0u64;
    for (start, &size) in starts.iter_mut().zip(&bytes) {
        *start = total;
        total += size.div_ceil(TEMPORARY_ALIGN) * TEMPORARY_ALIGN;
    }
    let words = usize::try_from(total / 8).map_err(|_| {
        gpu_core::Error::invalid("keys", format!("{total} bytes of temporary storage"))
    })?;
    // SAFETY: the caller's contract: every byte is written before it is
    // read, on this stream.
    unsafe {
        gpu.with_scratch_words(words, |view, nested| {
            let base = view.device_ptr();
            let mut addresses = [0u64; N];
            for ((address, &start), &size) in addresses.iter_mut().zip(&starts).zip(&bytes) {
                if size > 0 {
                    *address = base + start;
                }
            }
            enqueue(addresses, nested)
        })
    }
}

fn too_large(n: usize) -> gpu_core::Error {
    gpu_core::Error::invalid("keys", format!("{n} keys need too much temporary storage"))
}
