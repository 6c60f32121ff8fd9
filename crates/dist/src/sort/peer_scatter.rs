//! The peer-scatter sample sort: every rank's local sort delivers each
//! bucket straight into the rank that keeps it, from its last digit pass,
//! by stores into the peer GPU's memory; then every rank merges the runs
//! it received.
//!
//! **Computes** the same result as the other methods of the parent module
//! (bit for bit the single-GPU stable sort of the concatenated shards,
//! read in rank order), ordering element i of rank r by the tuple (sort
//! value, r, i) with i its position in the input shard, as the
//! partition-first method does.
//!
//! **Steps.**
//! 1. Samples of the unsorted shards at jittered positions and the world −
//!    1 splitters, as in [`partition_first`](super::partition_first) (host
//!    synchronisation 1).
//! 2. Every rank counts its keys before each splitter (tuple order) in one
//!    read of its shard (`splitter_counts`): the splitter's position in the
//!    rank's sorted shard, where the next bucket starts. One all-gather of
//!    the counts, read back (host synchronisation 2): every process knows
//!    every bucket's size and the exchange plan
//!    ([`exchange_plan`]). Each rank's receive buffer (the runs in rank
//!    order, as sort first's exchange places them) is reserved while the
//!    count kernels run ([`reserve_capacity`](super::reserve_capacity))
//!    and cut to its bucket here.
//! 3. Every rank sorts its shard with `sort::split` (`sort_keys_split` /
//!    `sort_pairs_split`): its last digit pass writes sorted position p of
//!    bucket t to rank t's receive buffer, at the bucket's place there,
//!    over NVLink for the other ranks. No exchange follows.
//! 4. Each rank's stream waits for every rank's sort, then merges the
//!    `world` runs it holds ([`merge_round`](super::merge_round) rounds,
//!    ties to the earlier rank) and, with [`SortPlacement::Even`], the
//!    result is moved into even blocks.
//!
//! **Needs** a whole group (every rank in this process) of at most
//! [`MAX_WORLD`] ranks with peer access between every pair
//! ([`Group::peers_reach_all`]); [`SampleSortPolicy::method_for`]
//! gives sort first elsewhere.
//!
//! **Bytes moved per rank** (m keys of k bytes in, m′ out, values of v
//! bytes): step 1 s·k read; step 2 m·k read; step 3 one local sort of m
//! (`sort::bytes_moved`), of whose last pass's m·(k + v) writes about
//! (world − 1)/world cross the links; step 4 ⌈log2 world⌉ merge rounds of
//! m′·(k + v) read and written.
//!
//! **Cost against one GPU.** A rank's time is one read of its shard, one
//! local sort of it (its last pass writing over the links as fast as they
//! take the data), and one merge round on two GPUs: against sort first,
//! the exchange after the sort is gone. Measured on two H100s at 2^31
//! `u32` keys: 35.9–36.4 ms, 1.30× one GPU, even with sort first; the
//! links add 4.3 ms to the last pass, and sampling, counts, merge and
//! what is not yet traced another 9 ms (`docs/multi-gpu.md`, "Sort on
//! two H100s: the three methods side by side").
//!
//! **Work** O(n/world · passes) per rank plus O(log world) comparisons per
//! key in step 2; **steps**: a sample kernel, a count kernel, one local sort
//! and ⌈log2 world⌉ merge rounds, two NCCL all-gathers (three with `Even`),
//! two host synchronisations.
//!
//! [`SampleSortPolicy::method_for`]: super::SampleSortPolicy::method_for
//! [`SortPlacement::Even`]: super::SortPlacement::Even

use ::sort::split::{SplitDestination, SplitTable, MAX_DESTINATIONS};
use ::sort::{SortKey, SortOptions};
use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceType, Gpu, KernelArgs};

use super::partition_first::{bucket_work, sampled_splitters};
use super::{
    exchange_plan, fitted_pairs, gathered_bounds, join_all, merge_received, placed,
    reserved_shards, sample_sort_kernel, SortPlacement, BLOCK_THREADS,
};
use crate::layout::Move;
use crate::{Group, Result, Sharded};

/// The most ranks the peer-scatter sort takes: one split destination per
/// rank.
pub const MAX_WORLD: usize = MAX_DESTINATIONS;

/// Blocks per SM of the count kernel (a grid-stride loop).
const COUNT_BLOCKS_PER_SM: u32 = 8;

/// Rank `rank`'s split destinations from the exchange plan: bucket t of
/// its sorted shard (from `bounds[t − 1]`, 0 for t = 0) goes to rank t at
/// the plan's offset there, as byte addresses from `receive_keys(t)` and
/// `receive_values(t)` (element 0 of rank t's receive buffers) and the
/// element sizes. Buckets the plan leaves out (empty) get no address.
///
/// ```
/// use dist::sort::{exchange_plan, peer_scatter::destinations};
/// let (plan, _) = exchange_plan(&[3, 2], &[vec![1], vec![2]])?;
/// let d = destinations(&plan, 1, 2, &[2], |t| 1000 * (t as u64 + 1), |_| 0, 4, 0);
/// assert_eq!((d[0].start, d[0].keys), (0, 1000 + 4 * 1)); // after rank 0's run of 1
/// assert_eq!((d[1].start, d[1].keys), (2, 0)); // an empty bucket
/// # Ok::<(), dist::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn destinations(
    plan: &[Move],
    rank: usize,
    world: usize,
    bounds: &[usize],
    receive_keys: impl Fn(usize) -> u64,
    receive_values: impl Fn(usize) -> u64,
    key_bytes: usize,
    value_bytes: usize,
) -> Vec<SplitDestination> {
    let mut out: Vec<SplitDestination> = (0..world)
        .map(|t| SplitDestination {
            start: if t == 0 { 0 } else { bounds[t - 1] },
            keys: 0,
            values: 0,
        })
        .collect();
    for m in plan.iter().filter(|m| m.from_rank == rank && m.len > 0) {
        let destination = &mut out[m.to_rank];
        destination.keys = receive_keys(m.to_rank) + (m.to_offset * key_bytes) as u64;
        if value_bytes > 0 {
            destination.values = receive_values(m.to_rank) + (m.to_offset * value_bytes) as u64;
        }
    }
    out
}

/// Steps 1 to 4 on the device, arguments already checked; the caller has
/// checked that the group is whole, at most [`MAX_WORLD`] ranks, and that
/// peer access reaches every pair.
#[allow(clippy::type_complexity)]
pub(super) fn sort<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: Option<&Sharded<V>>,
    options: &SortOptions,
    placement: SortPlacement,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    let bits = options.bit_range::<K>()?;
    let descending = options.order.is_descending();

    // (1) splitters from samples of the unsorted shards.
    let (splitters, lengths) = sampled_splitters(group, keys, descending, &bits)?;

    // (2) every rank's count of keys before each splitter, all-gathered.
    let splitter_count = world - 1;
    let mut counts = Vec::with_capacity(world);
    for (rank, shard) in group.ranks.iter().zip(keys.views()) {
        let gpu = &rank.gpu;
        let mut below = DeviceBuffer::<u64>::zeros(gpu, splitter_count)?;
        if !shard.is_empty() {
            let work = DeviceBuffer::from_host(gpu, &bucket_work(rank.rank, &splitters))?;
            let kernel =
                sample_sort_kernel::<K>(gpu, &format!("dist_splitter_counts_{}", K::SUFFIX))?;
            let (mut config, _) = grid_1d(shard.len() as u64, BLOCK_THREADS, 1, 0)?;
            let most = COUNT_BLOCKS_PER_SM * gpu.info().sm_count;
            config.grid.0 = config.grid.0.min(most.max(1));
            let mut args = KernelArgs::new();
            args.input(&shard)
                .scalar(shard.len() as u64)
                .input(&work.view())
                .scalar(splitter_count as u32)
                .scalar(u32::from(descending))
                .scalar(bits.start)
                .scalar(bits.end)
                .output(&mut below.view_mut());
            // SAFETY: splitter_counts(const K* keys, u64 n, const u64* work,
            // u32 splitters, u32 descending, u32 begin, u32 end, u64* below):
            // the argument list matches; a grid-stride loop reads keys[0, n);
            // work holds 2·splitters words, splitters < MAX_WORLD ≤
            // SPLIT_MAX_SPLITTERS + 1; below holds splitters zeroed counts.
            unsafe { gpu.launch(&kernel, config, &args)? };
            drop(work); // stream-ordered free, after the kernel
        }
        counts.push(below);
    }
    // The receive buffers, reserved while the count kernels run.
    // SAFETY: cut to the buckets below, where the split sorts write every
    // element.
    let reserved = unsafe { reserved_shards::<K, V>(group, keys, values.is_some())? };
    let bounds = gathered_bounds(group, &counts, splitter_count)?;
    drop(counts);
    let (plan, bucket_lengths) = exchange_plan(&lengths, &bounds)?;

    // Receive buffers, then every rank's sort writes into all of them:
    // each sorting stream first waits for every receiving stream (the
    // buffers are allocated stream-ordered there).
    // SAFETY: the split sorts write every element (the plan's moves tile
    // each receive buffer).
    let (mut received_keys, mut received_values) =
        unsafe { fitted_pairs(group, reserved, &bucket_lengths)? };
    let key_addresses: Vec<u64> = received_keys
        .views_mut()
        .iter_mut()
        .map(|v| v.reborrow().device_ptr())
        .collect();
    let value_addresses: Vec<u64> = match received_values.as_mut() {
        Some(v) => v
            .views_mut()
            .iter_mut()
            .map(|v| v.reborrow().device_ptr())
            .collect(),
        None => vec![0; world],
    };
    let value_bytes = if values.is_some() { V::BYTES } else { 0 };
    let mut tables = Vec::with_capacity(world);
    for (rank, shard) in group.ranks.iter().zip(keys.views()) {
        let own = destinations(
            &plan,
            rank.rank,
            world,
            &bounds[rank.rank],
            |t| key_addresses[t],
            |t| value_addresses[t],
            K::BYTES,
            value_bytes,
        );
        tables.push(SplitTable::new(&rank.gpu, shard.len(), &own)?);
    }
    let gpus: Vec<&Gpu> = group.ranks.iter().map(|r| &r.gpu).collect();
    join_all(&gpus)?;

    // (3) the split sorts.
    let value_views = values.map(|v| v.views());
    for (i, (rank, shard)) in group.ranks.iter().zip(keys.views()).enumerate() {
        // SAFETY: every destination is a range of a receive buffer on some
        // rank of this group, which the group's peer access lets this rank
        // write (checked by the caller), sized by the plan for exactly this
        // bucket; no two destinations overlap; the sorting stream waits for
        // the buffers' allocation above, and every reader waits for this
        // sort below.
        unsafe {
            match &value_views {
                Some(v) => ::sort::split::sort_pairs_split(
                    &rank.gpu,
                    shard,
                    v[i],
                    &tables[i],
                    options.clone(),
                )?,
                None => {
                    ::sort::split::sort_keys_split(&rank.gpu, shard, &tables[i], options.clone())?
                }
            }
        }
    }
    drop(tables); // stream-ordered frees, after the sorts

    // (4) each rank waits for every sort, then merges its runs.
    join_all(&gpus)?;
    let merged = merge_received(
        group,
        received_keys,
        received_values,
        &plan,
        descending,
        &bits,
    )?;
    placed(group, merged, &bucket_lengths, placement)
}
