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
//!    read of its shard (`splitter_counts`), on its side stream: the
//!    splitter's position in the rank's sorted shard, where the next
//!    bucket starts. One all-gather of the counts, on the side streams.
//! 3. Every rank sorts its shard with `sort::split`'s deferred forms
//!    (`sort_keys_split_deferred` / `sort_pairs_split_deferred`), which
//!    ask for the split table only once every pass but the last is
//!    enqueued. The ranks' sorts are enqueued one inside the other's table
//!    request, so every GPU is sorting (and counting beside it) before the
//!    host waits for anything. The innermost request reads the counts back
//!    (host synchronisation 2, on a side stream), plans the exchange
//!    ([`exchange_plan`]), allocates each rank's receive buffer at its
//!    bucket's length (the runs in rank order, as sort first's exchange
//!    places them), makes every main stream wait for every other (the
//!    buffers are stream-ordered allocations) and builds the tables, all
//!    while the earlier passes run. Each last digit pass then writes sorted
//!    position p of bucket t to rank t's receive buffer, at the bucket's
//!    place there, over NVLink for the other ranks. No exchange follows.
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
//! two H100s: the three methods side by side"). Counting and planning
//! beside the sort (steps 2 and 3) measured even with counting, reading
//! back and planning before it (35.36 against 35.44 ms on two H200s): the
//! host's waiting before the sort is not where that time goes.
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
    bounds_on_host, exchange_plan, join, join_all, merge_received, placed, sample_sort_kernel,
    uninit_shards, SortPlacement, Splitter, BLOCK_THREADS,
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
    let bits = options.bit_range::<K>()?;
    let descending = options.order.is_descending();

    // (1) splitters from samples of the unsorted shards.
    let (splitters, lengths) = sampled_splitters(group, keys, descending, &bits)?;

    // (2) every rank's count of keys before each splitter, on its side
    // stream, all-gathered there: the counts run beside the sorts.
    let gathered = gathered_counts_on_sides(group, keys, &splitters, descending, &bits)?;

    // (3) the split sorts; the innermost table request reads the counts
    // back, allocates the receive buffers and builds every table while
    // the GPUs run the earlier passes.
    let mut late = LateTables::<K, V> {
        group,
        gathered: &gathered,
        lengths: &lengths,
        with_values: values.is_some(),
        prepared: None,
    };
    let key_views = keys.views();
    let value_views = values.map(|v| v.views());
    split_sorts_from(
        group,
        &key_views,
        value_views.as_deref(),
        options,
        0,
        &mut late,
    )?;
    let Prepared {
        received_keys,
        received_values,
        plan,
        bucket_lengths,
        ..
    } = late
        .prepared
        .ok_or_else(|| crate::Error::invalid("peer scatter", "no rank asked for its table"))?;
    // The main streams own the input: they wait for the count kernels that
    // read it (long done: their counts were read back), and the gathered
    // counts are freed on the side streams.
    for rank in &group.ranks {
        join(&rank.gpu, &rank.side)?;
    }
    drop(gathered);

    // (4) each rank waits for every sort, then merges its runs.
    let gpus: Vec<&Gpu> = group.ranks.iter().map(|r| &r.gpu).collect();
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

/// Step 2 on every rank's side stream (after its main stream's work so
/// far, the sampling included): one read of the shard counting the keys
/// before each splitter (`splitter_counts`), then one all-gather of the
/// counts (`world − 1` per rank, on every rank's device). Nothing waits.
fn gathered_counts_on_sides<K: SortKey>(
    group: &Group,
    keys: &Sharded<K>,
    splitters: &[Option<Splitter>],
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<Vec<DeviceBuffer<u64>>> {
    let splitter_count = group.world() - 1;
    let mut counts = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(keys.views()) {
        let side = &rank.side;
        join(side, &rank.gpu)?;
        let mut below = DeviceBuffer::<u64>::zeros(side, splitter_count)?;
        if !shard.is_empty() {
            let work = DeviceBuffer::from_host(side, &bucket_work(rank.rank, splitters))?;
            let kernel =
                sample_sort_kernel::<K>(side, &format!("dist_splitter_counts_{}", K::SUFFIX))?;
            let (mut config, _) = grid_1d(shard.len() as u64, BLOCK_THREADS, 1, 0)?;
            let most = COUNT_BLOCKS_PER_SM * side.info().sm_count;
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
            // the argument list matches; a grid-stride loop reads keys[0, n)
            // (the side stream waits for the main stream's work on them
            // above, and the main stream for this kernel before it frees
            // or writes them); work holds 2·splitters words, splitters <
            // MAX_WORLD ≤ SPLIT_MAX_SPLITTERS + 1; below holds splitters
            // zeroed counts.
            unsafe { side.launch(&kernel, config, &args)? };
            drop(work); // stream-ordered free, after the kernel
        }
        counts.push(below);
    }
    let sides: Vec<&Gpu> = group.ranks.iter().map(|r| &r.side).collect();
    group.all_gather_on(&sides, &counts, splitter_count)
}

/// What the innermost table request finds out: the receive buffers, the
/// exchange plan, the bucket lengths and every rank's split table.
struct Prepared<K: SortKey, V: DeviceType> {
    received_keys: Sharded<K>,
    received_values: Option<Sharded<V>>,
    plan: Vec<Move>,
    bucket_lengths: Vec<usize>,
    tables: Vec<SplitTable>,
}

/// The state the split sorts' table requests share.
struct LateTables<'a, K: SortKey, V: DeviceType> {
    group: &'a Group,
    /// The all-gathered counts, on the side streams.
    gathered: &'a [DeviceBuffer<u64>],
    /// Every rank's shard length.
    lengths: &'a [usize],
    with_values: bool,
    prepared: Option<Prepared<K, V>>,
}

impl<K: SortKey, V: DeviceType> LateTables<'_, K, V> {
    /// Reads the counts back (waiting for rank 0's side stream only),
    /// plans the exchange, allocates every rank's receive buffers at their
    /// buckets' lengths on its main stream, makes every main stream wait
    /// for every other (the buffers are allocated stream-ordered there, and
    /// every rank's last pass writes into all of them) and builds the
    /// tables.
    fn prepare(&mut self) -> Result<()> {
        let group = self.group;
        let world = group.world();
        let bounds = bounds_on_host(&self.gathered[0], &group.ranks[0].side, world - 1)?;
        let (plan, bucket_lengths) = exchange_plan(self.lengths, &bounds)?;
        // SAFETY: the split sorts write every element (the plan's moves
        // tile each receive buffer).
        let (mut received_keys, mut received_values) =
            unsafe { uninit_shards::<K, V>(group, &bucket_lengths, self.with_values)? };
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
        let value_bytes = if self.with_values { V::BYTES } else { 0 };
        let mut tables = Vec::with_capacity(world);
        for rank in &group.ranks {
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
            tables.push(SplitTable::new(self.lengths[rank.rank], &own)?);
        }
        let gpus: Vec<&Gpu> = group.ranks.iter().map(|r| &r.gpu).collect();
        join_all(&gpus)?;
        self.prepared = Some(Prepared {
            received_keys,
            received_values,
            plan,
            bucket_lengths,
            tables,
        });
        Ok(())
    }

    /// Local rank `i`'s table, once [`LateTables::prepare`] has run.
    fn table(&self, i: usize) -> gpu_core::Result<SplitTable> {
        self.prepared
            .as_ref()
            .and_then(|p| p.tables.get(i).copied())
            .ok_or_else(|| {
                gpu_core::Error::invalid("peer scatter", "a split table asked for before planning")
            })
    }
}

/// Enqueues the split sorts of local ranks `i` onwards: rank i's passes but
/// the last; then, from inside its table request, the later ranks' (the
/// innermost request, past the last rank, prepares every table); then its
/// last pass. So every GPU is sorting before the host waits for the counts.
fn split_sorts_from<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &[gpu_core::DeviceView<'_, K>],
    values: Option<&[gpu_core::DeviceView<'_, V>]>,
    options: &SortOptions,
    i: usize,
    late: &mut LateTables<'_, K, V>,
) -> Result<()> {
    let Some(rank) = group.ranks.get(i) else {
        return late.prepare();
    };
    let mut later: Result<()> = Ok(());
    let table = || {
        later = split_sorts_from(group, keys, values, options, i + 1, late);
        match &later {
            Ok(()) => late.table(i),
            Err(_) => Err(gpu_core::Error::invalid(
                "peer scatter",
                "a later rank's sort or the planning failed",
            )),
        }
    };
    // SAFETY: every destination of the table is a range of a receive
    // buffer on some rank of this group, which the group's peer access lets
    // this rank write (checked by the caller), sized by the plan for
    // exactly this bucket; no two destinations overlap; the last pass is
    // enqueued after this stream waits for the buffers' allocation
    // (`prepare`), and every reader waits for this sort (`sort`, step 4).
    let sorted = unsafe {
        match values {
            Some(v) => ::sort::split::sort_pairs_split_deferred(
                &rank.gpu,
                keys[i],
                v[i],
                options.clone(),
                table,
            ),
            None => {
                ::sort::split::sort_keys_split_deferred(&rank.gpu, keys[i], options.clone(), table)
            }
        }
    };
    later?;
    sorted?;
    Ok(())
}
