//! Distributed sort by sample sort: the keys of a [`Sharded`] array (and
//! values carried along) sorted over the whole group, shard r holding
//! keys ≤ shard r + 1's.
//!
//! **Computes** the stable sort of the global array (the shards
//! concatenated in rank order) in the single-GPU sort's order
//! ([`::sort::SortKey`]'s radix image: integers as usual, floats in total
//! order with NaN last, descending by the complement, optionally on a bit
//! range only). The result, read in rank order, is bit for bit the
//! single-GPU `sort::sort_keys` / `sort::sort_pairs` of the concatenation:
//! equal keys keep their global order (rank r's before rank r + 1's, and
//! within a rank their input order), so [`sort_pairs`] is stable across
//! ranks.
//!
//! **Order of the elements.** Element i of rank r is ordered by the tuple
//! (sort value, r, i): its sort value ([`::sort::cpu::sort_value`]) first,
//! then its global position. This is a total order on distinct elements
//! and the one a stable sort produces, so splitters drawn from it split
//! runs of equal keys too (an array of one repeated key is spread evenly).
//!
//! **Two methods** ([`SampleSortMethod`], through [`SampleSortPolicy`]):
//! sort first (the steps below, the default), or partition first
//! ([`partition_first`]: the unsorted shards split into buckets, the
//! exchange overlapping the sort of the bucket each rank keeps). Both use
//! the splitter choice and exchange plan below and the same merge kernel.
//!
//! **Steps** (sort first).
//! 1. Every rank sorts its shard locally (`sort::sort_keys` /
//!    `sort::sort_pairs`, stable), so position i of the sorted shard is the
//!    element's rank among its shard's elements in tuple order.
//! 2. Every rank takes s = [`OVERSAMPLING`]·world regular samples of its
//!    sorted shard (the midpoints of s equal slices, [`sample_positions`];
//!    a small kernel), and one NCCL group all-gathers the shard lengths
//!    (one u64 each) and the samples. Each process reads them back once
//!    (host synchronisation 1) and picks the same B − 1 splitters on the
//!    host ([`choose_bucket_splitters`]; B = world·c for c chunks, see
//!    step 4): the samples sorted by tuple, each weighted by the length of
//!    the shard it stands for, splitter j the first sample at weighted rank
//!    j/B, so every c-th splitter is a rank boundary ([`choose_splitters`]'s).
//! 3. Every rank finds its bucket bounds, the position of each splitter in
//!    its sorted shard ([`bucket_bounds`], a kernel of one binary search
//!    per splitter): a splitter sampled from this rank is its own position;
//!    from an earlier rank, the first key ≥ the splitter's value (equal
//!    keys here come after it); from a later rank, the first key > it.
//!    One all-gather of the bounds (B − 1 u64 per rank), read back
//!    (host synchronisation 2): every process knows every bucket's size.
//! 4. Bucket t of every rank goes to rank t ([`exchange_plan`]): one NCCL
//!    group of `ncclSend`/`ncclRecv` pairs (a device copy for the bucket
//!    that stays), the runs placed in rank order in one receive buffer.
//!    With merged runs and at least [`SampleSortPolicy::chunked_from`]
//!    keys per rank, in c = [`SampleSortPolicy::chunks`] chunks instead
//!    ([`chunk_plans`]): bucket q·c + j of every rank goes to rank q as
//!    part of its chunk j, one NCCL group per chunk on each rank's side
//!    stream (the device's highest priority), and step 5 merges chunk j on
//!    the main stream as soon as it has arrived, while chunk j + 1 travels.
//!    The receive buffer (and, for merged runs, the merge's second buffer)
//!    is reserved right after step 1 is enqueued, while the GPUs sort, at
//!    [`reserve_capacity`] of the mean local shard, and cut to the bucket
//!    once its size is known; a bucket that does not fit gets a new buffer.
//! 5. Every rank orders its `world` received runs ([`SampleSortPolicy`]):
//!    [`RunOrder::Merge`] (the default) merges them pairwise in
//!    ⌈log2 world⌉ rounds ([`merge_round`]) with the `merge_runs` kernel
//!    (merge path, ties to the earlier rank), between the receive buffer
//!    and one more; [`RunOrder::Resort`] sorts them again locally (stable,
//!    so equal keys stay in rank order). Both give the same result. With
//!    [`SortPlacement::Even`] it is then moved into even blocks
//!    (`layout::rebalance_plan`).
//!
//! A group of world 1 runs step 1 only.
//!
//! **Bytes moved per rank** (m keys of k bytes in, m′ out, values of v
//! bytes, n keys in all): step 1 one local sort of m (`sort::bytes_moved`:
//! about m·k + 4 passes·2m·(k + v) for 32-bit keys); step 2 s·k read and
//! s·k·world + 8·world over NCCL; step 3 (B − 1)·log2(m) key reads,
//! 8·world·(B − 1) over NCCL; step 4 at most m·(k + v) sent and
//! m′·(k + v) received, (world − 1)/world of the array crossing the links
//! on a balanced input; step 5 one local sort of m′ (`Resort`) or
//! ⌈log2 world⌉ rounds of m′·(k + v) read and written (`Merge`), and
//! with `Even` at most m′·(k + v) more over NCCL. Bucket sizes: regular
//! sampling keeps m′ near n/world (within a few times Σ ⌈m_r/s⌉ of it,
//! tested on the host).
//!
//! **Cost against one GPU.** With `Resort` a rank runs two local sorts of
//! about n/world keys and one exchange; one GPU sorts n keys once. Radix
//! sorts are linear, so the speed-up is at most world/2 (1× on two GPUs,
//! 4× on eight), less the exchange. `Merge` replaces the second sort (for
//! 32-bit keys about 9·m′·k bytes: an upsweep and four passes) by
//! ⌈log2 world⌉ rounds of 2·m′·k, which is what can beat world/2: on two
//! GPUs the time is one local sort of n/2, the exchange of about a quarter
//! of the keys each way, and one merge round, most of which the chunks
//! let overlap. `Merge` is the default (measured against `Resort`, and
//! the chunk counts against each other, in `docs/multi-gpu.md`).
//!
//! **Work** O(n/world · passes) per rank plus O(world² · s log) on the
//! host; **steps**: two local sorts (or one and ⌈log2 world⌉ merge rounds),
//! two small kernels, four NCCL groups (five with `Even`; one more per
//! chunk past the first, two with values), two host synchronisations.

use ::sort::cpu::sort_value;
use ::sort::key::PayloadWidth;
use ::sort::{SortKey, SortOptions};
use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceType, DeviceView, Gpu, Kernel, KernelArgs, ModuleSource};

pub mod partition_first;
pub mod peer_scatter;

use crate::layout::{rebalance_plan, Move};
use crate::moves::{run_moves, run_moves_on, LocalPieces};
use crate::{Error, Group, Result, Sharded};

/// The CUDA of the sample sort's kernels (`take_samples`,
/// `splitter_bounds`, `merge_runs`).
pub const SAMPLE_SORT_CU: &str = include_str!("../../cuda/sample_sort.cu");

/// The CUDA of the partition-first sort's kernels (`gather_samples`,
/// `partition_counts`, `bucket_starts`, `partition_scatter`).
pub const SAMPLE_PARTITION_CU: &str = include_str!("../../cuda/sample_partition.cu");

/// Samples per rank per rank of the world: each rank takes
/// `OVERSAMPLING · world` samples of its sorted shard.
pub const OVERSAMPLING: usize = 64;

/// The room the sample sorts reserve their receive buffers with, past the
/// mean local shard, as a divisor of it ([`reserve_capacity`]): 1/16, four
/// times the Σ m_r/s = n/([`OVERSAMPLING`]·world) by which regular
/// sampling (sort first) lets a bucket exceed n/world; partition first's
/// jittered samples keep its buckets of even shards within 5 % of it
/// (tested on the host). Peer scatter allocates its receive buffers once
/// the buckets are known, while the GPUs sort, and reserves nothing.
pub const RESERVE_SLACK_DIVISOR: usize = 16;

/// Threads per block of the kernels.
const BLOCK_THREADS: u32 = 256;
/// Outputs per thread of the merge kernel (a block of 256 threads merges
/// a tile of 2048 outputs through shared memory).
pub const MERGE_ITEMS: u32 = 8;

/// The `how` word of a bound found by a search for the first key ≥ the
/// splitter (a splitter from an earlier rank); the kernel's
/// `SEARCH_LOWER`.
pub const SEARCH_LOWER: u64 = u64::MAX;
/// The `how` word of a bound found by a search for the first key > the
/// splitter (a splitter from a later rank); the kernel's `SEARCH_UPPER`.
pub const SEARCH_UPPER: u64 = u64::MAX - 1;

/// Where the sorted keys end up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortPlacement {
    /// Rank t keeps bucket t (the keys between splitters t − 1 and t):
    /// shard lengths vary with the data, near n/world.
    #[default]
    Buckets,
    /// The sorted keys are moved into the even blocks of the total
    /// (`layout::even_blocks`), one more exchange.
    Even,
}

/// How step 5 orders the `world` sorted runs a rank receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunOrder {
    /// Sort the received keys again with the single-GPU sort (stable, so
    /// equal keys stay in rank order): one full local sort.
    Resort,
    /// Merge the runs pairwise, ⌈log2 world⌉ rounds of the `merge_runs`
    /// kernel (merge path, ties to the earlier rank): 2·m′·(k + v) bytes
    /// per round instead of a full sort. The default.
    #[default]
    Merge,
}

/// Which sample sort runs: the local sort before the exchange or after it.
/// Both give the same keys in rank order; on two H100s sort first with
/// merged runs was the faster (`docs/multi-gpu.md`), so it is the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SampleSortMethod {
    /// Steps 1 to 5 of this module: every shard sorted, cut at the
    /// splitters, the buckets exchanged and their runs ordered by
    /// [`SampleSortPolicy::run_order`]. The default.
    #[default]
    SortFirst,
    /// [`partition_first`]: every unsorted shard partitioned into buckets
    /// by splitters sampled from it, the buckets exchanged on a side stream
    /// while each rank sorts the bucket it keeps, then the received keys
    /// sorted and merged with it. Worlds up to [`partition_first::MAX_WORLD`]
    /// ranks; larger ones run [`SortFirst`](SampleSortMethod::SortFirst).
    PartitionFirst,
    /// [`peer_scatter`]: every rank's local sort writes each bucket from
    /// its last digit pass straight into the memory of the rank that keeps
    /// it (peer access), then every rank merges the runs it holds. Whole
    /// groups of at most [`peer_scatter::MAX_WORLD`] ranks with peer access
    /// between all ([`Group::peers_reach_all`]); elsewhere
    /// [`SortFirst`](SampleSortMethod::SortFirst) runs (in one chunk).
    PeerScatter,
}

/// The sample sort's tuning: which method, how the sort-first method
/// orders the runs it receives, and in how many chunks it exchanges and
/// merges them.
///
/// ```
/// use dist::sort::{RunOrder, SampleSortMethod, SampleSortPolicy};
/// let policy = SampleSortPolicy { run_order: RunOrder::Resort, ..Default::default() };
/// assert_ne!(policy, SampleSortPolicy::default());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleSortPolicy {
    /// Sort before the exchange or after it.
    pub method: SampleSortMethod,
    /// Step 5 of [`SampleSortMethod::SortFirst`]: a second sort or merge
    /// rounds.
    pub run_order: RunOrder,
    /// Steps 4 and 5 of [`SampleSortMethod::SortFirst`] with
    /// [`RunOrder::Merge`]: each rank's bucket is cut into this many value
    /// ranges ([`chunk_plans`]), sent one after another on a side stream,
    /// and each merged as soon as it has arrived, while the next one
    /// travels. 1: the whole exchange, then the merge.
    pub chunks: usize,
    /// The fewest keys per rank (n / world) for which [`chunks`](Self::chunks)
    /// apply; smaller sorts exchange and merge in one piece (see
    /// [`chunks_for`](Self::chunks_for)).
    pub chunked_from: usize,
}

/// [`SampleSortPolicy::chunks`] by default.
pub const DEFAULT_CHUNKS: usize = 4;

/// [`SampleSortPolicy::chunked_from`] by default: 2^30 keys per rank. On
/// two H100s, 4 chunks took 37.2–37.6 ms against 38.0 for one at 2^31
/// `u32` keys (2^30 per rank), but 6.21 against 5.38 ms at 2^28, where
/// each chunk's own NCCL group and merge launches weigh more than the
/// overlap gains.
pub const DEFAULT_CHUNKED_FROM: usize = 1 << 30;

/// The most chunks [`SampleSortPolicy::chunks_for`] gives.
pub const MAX_CHUNKS: usize = 64;

impl Default for SampleSortPolicy {
    fn default() -> Self {
        SampleSortPolicy {
            method: SampleSortMethod::default(),
            run_order: RunOrder::default(),
            chunks: DEFAULT_CHUNKS,
            chunked_from: DEFAULT_CHUNKED_FROM,
        }
    }
}

impl SampleSortPolicy {
    /// The method that runs for a world of `world` ranks: `method`, except
    /// that [`SampleSortMethod::PartitionFirst`] takes at most
    /// [`partition_first::MAX_WORLD`] ranks and
    /// [`SampleSortMethod::PeerScatter`] at most [`peer_scatter::MAX_WORLD`]
    /// (and, at run time, a group whose ranks reach each other's memory).
    ///
    /// ```
    /// use dist::sort::{SampleSortMethod, SampleSortPolicy};
    /// let partition = SampleSortPolicy { method: SampleSortMethod::PartitionFirst, ..Default::default() };
    /// assert_eq!(partition.method_for(2), SampleSortMethod::PartitionFirst);
    /// assert_eq!(partition.method_for(64), SampleSortMethod::SortFirst);
    /// let peer = SampleSortPolicy { method: SampleSortMethod::PeerScatter, ..Default::default() };
    /// assert_eq!(peer.method_for(8), SampleSortMethod::PeerScatter);
    /// assert_eq!(peer.method_for(9), SampleSortMethod::SortFirst);
    /// ```
    pub fn method_for(&self, world: usize) -> SampleSortMethod {
        match self.method {
            SampleSortMethod::PartitionFirst if world > partition_first::MAX_WORLD => {
                SampleSortMethod::SortFirst
            }
            SampleSortMethod::PeerScatter if world > peer_scatter::MAX_WORLD => {
                SampleSortMethod::SortFirst
            }
            method => method,
        }
    }

    /// The chunks a sort of `n` keys in all runs with on `world` ranks:
    /// [`chunks`](Self::chunks) within 1 ..= [`MAX_CHUNKS`] for sort first
    /// with merged runs on several ranks once n / world reaches
    /// [`chunked_from`](Self::chunked_from); 1 otherwise.
    ///
    /// ```
    /// use dist::sort::{RunOrder, SampleSortPolicy, MAX_CHUNKS};
    /// let policy = SampleSortPolicy { chunks: 8, ..Default::default() };
    /// assert_eq!(policy.chunks_for(2, 1 << 31), 8);
    /// assert_eq!(policy.chunks_for(2, 1 << 28), 1); // below chunked_from per rank
    /// assert_eq!(policy.chunks_for(1, 1 << 31), 1); // no exchange
    /// let always = SampleSortPolicy { chunked_from: 0, ..policy };
    /// assert_eq!(always.chunks_for(2, 10), 8);
    /// assert_eq!(SampleSortPolicy { chunks: 0, ..always }.chunks_for(2, 10), 1);
    /// assert_eq!(SampleSortPolicy { chunks: 1000, ..always }.chunks_for(2, 10), MAX_CHUNKS);
    /// assert_eq!(SampleSortPolicy { run_order: RunOrder::Resort, ..always }.chunks_for(2, 10), 1);
    /// ```
    pub fn chunks_for(&self, world: usize, n: usize) -> usize {
        let merged = self.method_for(world) == SampleSortMethod::SortFirst
            && self.run_order == RunOrder::Merge;
        if merged && world > 1 && n / world >= self.chunked_from {
            self.chunks.clamp(1, MAX_CHUNKS)
        } else {
            1
        }
    }
}

/// One merge of a round: the runs `[offset, offset + left)` and
/// `[offset + left, offset + left + right)` of a rank's buffer merged into
/// the same range of the other buffer; `right == 0` is a copy (the
/// unpaired last run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeStep {
    /// Where the pair starts.
    pub offset: usize,
    /// The length of the first run.
    pub left: usize,
    /// The length of the second run (0: a copy).
    pub right: usize,
}

/// One round of pairwise merges of runs of `lens` laid end to end: runs
/// 0 and 1, 2 and 3, …; an odd last run is copied. The next round's runs
/// are the steps' `left + right`. Rounds repeat while more than one run
/// is left: ⌈log2 runs⌉ of them.
///
/// ```
/// use dist::sort::{merge_round, MergeStep};
/// assert_eq!(merge_round(&[3, 0, 5]), vec![
///     MergeStep { offset: 0, left: 3, right: 0 },
///     MergeStep { offset: 3, left: 5, right: 0 },
/// ]);
/// ```
pub fn merge_round(lens: &[usize]) -> Vec<MergeStep> {
    let mut offset = 0;
    lens.chunks(2)
        .map(|pair| {
            let step = MergeStep {
                offset,
                left: pair[0],
                right: pair.get(1).copied().unwrap_or(0),
            };
            offset += step.left + step.right;
            step
        })
        .collect()
}

/// The exchange of `plan` on the host: every rank's new shard (lengths
/// `new_lengths`) with each slot written once, from `source(from_rank,
/// position)`. A plan that writes a slot twice or leaves one unwritten is
/// an `InvalidArgument`.
fn exchanged_on_host<T: Copy>(
    plan: &[Move],
    new_lengths: &[usize],
    source: impl Fn(usize, usize) -> T,
) -> Result<Vec<Vec<T>>> {
    let mut received: Vec<Vec<Option<T>>> = new_lengths.iter().map(|&l| vec![None; l]).collect();
    for m in plan {
        for i in 0..m.len {
            let slot = &mut received[m.to_rank][m.to_offset + i];
            if slot.is_some() {
                return Err(Error::invalid("exchange plan", "a slot written twice"));
            }
            *slot = Some(source(m.from_rank, m.from_offset + i));
        }
    }
    received
        .into_iter()
        .map(|shard| {
            shard
                .into_iter()
                .map(|p| p.ok_or_else(|| Error::invalid("exchange plan", "a slot left unwritten")))
                .collect()
        })
        .collect()
}

/// The sorted runs of lengths `runs`, laid end to end in `pairs`, merged
/// in the device path's rounds ([`merge_round`], ties to the earlier run).
fn merged_on_host<K: SortKey, V: Copy>(
    mut pairs: Vec<(K, V)>,
    mut runs: Vec<usize>,
    value_of: impl Fn(K) -> u64 + Copy,
) -> Vec<(K, V)> {
    while runs.len() > 1 {
        let round = merge_round(&runs);
        let mut next = Vec::with_capacity(pairs.len());
        for step in &round {
            let middle = step.offset + step.left;
            next.extend(merge_on_host(
                &pairs[step.offset..middle],
                &pairs[middle..middle + step.right],
                value_of,
            ));
        }
        pairs = next;
        runs = round.iter().map(|s| s.left + s.right).collect();
    }
    pairs
}

/// The stable merge of two sorted runs by sort value, ties taking `a`
/// (the host twin of the `merge_runs` kernel).
fn merge_on_host<K: SortKey, V: Copy>(
    a: &[(K, V)],
    b: &[(K, V)],
    value_of: impl Fn(K) -> u64,
) -> Vec<(K, V)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let take_a = j >= b.len() || (i < a.len() && value_of(a[i].0) <= value_of(b[j].0));
        if take_a {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out
}

/// The number of samples each rank takes: [`OVERSAMPLING`] · `world`.
///
/// ```
/// assert_eq!(dist::sort::samples_per_rank(2), 128);
/// ```
pub fn samples_per_rank(world: usize) -> usize {
    OVERSAMPLING.saturating_mul(world)
}

/// The positions of `count` regular samples of a sorted shard of `len`
/// keys: `(2j + 1)·len / (2·count)`, the midpoints of `count` equal slices
/// (repeated when `len < count`); none for an empty shard.
///
/// ```
/// assert_eq!(dist::sort::sample_positions(8, 4), vec![1, 3, 5, 7]);
/// assert_eq!(dist::sort::sample_positions(2, 4), vec![0, 0, 1, 1]);
/// assert!(dist::sort::sample_positions(0, 4).is_empty());
/// ```
pub fn sample_positions(len: usize, count: usize) -> Vec<usize> {
    if len == 0 || count == 0 {
        return Vec::new();
    }
    (0..count)
        .map(|j| ((2 * j as u128 + 1) * len as u128 / (2 * count as u128)) as usize)
        .collect()
}

/// A splitter: a sampled element, ordered by (sort value, rank, position
/// in its rank's sorted shard), the order of a stable sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Splitter {
    /// The key's sort value ([`::sort::cpu::sort_value`]).
    pub value: u64,
    /// The rank it was sampled from.
    pub rank: usize,
    /// Its position in that rank's sorted shard.
    pub position: usize,
}

/// The `world − 1` splitters from every rank's samples: `samples[r]` holds
/// the sort values of rank r's samples (at [`sample_positions`]`(lengths[r],
/// samples[r].len())`; ignored when `lengths[r] == 0`). The samples are
/// sorted by (value, rank, position), each weighs the length of the shard
/// it was drawn from (it stands for `lengths[r] / count` keys), and
/// splitter j is the first sample with at least j/world of the total
/// weight before it; `None` where no sample qualifies (the bucket bound is
/// then the shard's end on every rank).
///
/// ```
/// use dist::sort::{choose_splitters, Splitter};
/// // Two ranks of 4 keys, 2 samples each (values 10, 30 and 20, 40).
/// let splitters = choose_splitters(&[vec![10, 30], vec![20, 40]], &[4, 4]);
/// assert_eq!(splitters, vec![Some(Splitter { value: 30, rank: 0, position: 3 })]);
/// ```
pub fn choose_splitters(samples: &[Vec<u64>], lengths: &[usize]) -> Vec<Option<Splitter>> {
    choose_bucket_splitters(samples, lengths, lengths.len())
}

/// [`choose_splitters`] for `buckets` buckets instead of one per rank
/// (`buckets − 1` splitters, splitter j at weighted rank j/buckets): with
/// `buckets` = c·world, splitter c·j is [`choose_splitters`]'s splitter j.
///
/// ```
/// use dist::sort::{choose_bucket_splitters, choose_splitters};
/// let (samples, lengths) = ([vec![10, 30, 50, 70], vec![20, 40, 60, 80]], [8, 8]);
/// let four = choose_bucket_splitters(&samples, &lengths, 4);
/// assert_eq!(four.len(), 3);
/// assert_eq!(four[1], choose_splitters(&samples, &lengths)[0]);
/// ```
pub fn choose_bucket_splitters(
    samples: &[Vec<u64>],
    lengths: &[usize],
    buckets: usize,
) -> Vec<Option<Splitter>> {
    let positions: Vec<Vec<usize>> = samples
        .iter()
        .zip(lengths)
        .map(|(values, &len)| sample_positions(len, values.len()))
        .collect();
    choose_bucket_splitters_at(samples, &positions, lengths, buckets)
}

/// [`choose_splitters`] for samples taken at the given positions:
/// `positions[r][j]` is where `samples[r][j]` was taken in rank r's shard
/// (the splitter's `position`). Ranks of length 0 are skipped.
///
/// ```
/// use dist::sort::{choose_splitters_at, Splitter};
/// // Rank 0 (6 keys): 30 at position 0, 10 at 5; rank 1 (3 keys): 20 at 2.
/// // By weight (6, 3, 6 for 10, 20, 30), half the total lies before 30.
/// let splitters = choose_splitters_at(&[vec![30, 10], vec![20]], &[vec![0, 5], vec![2]], &[6, 3]);
/// assert_eq!(splitters, vec![Some(Splitter { value: 30, rank: 0, position: 0 })]);
/// ```
pub fn choose_splitters_at(
    samples: &[Vec<u64>],
    positions: &[Vec<usize>],
    lengths: &[usize],
) -> Vec<Option<Splitter>> {
    choose_bucket_splitters_at(samples, positions, lengths, lengths.len())
}

/// [`choose_splitters_at`] for `buckets` buckets: `buckets − 1` splitters,
/// splitter j the first sample with at least j/buckets of the total
/// weight before it.
///
/// ```
/// use dist::sort::choose_bucket_splitters_at;
/// let samples = [vec![10, 30, 50, 70], vec![20, 40, 60, 80]];
/// let positions = [vec![0, 1, 2, 3], vec![0, 1, 2, 3]];
/// let four = choose_bucket_splitters_at(&samples, &positions, &[8, 8], 4);
/// let values: Vec<u64> = four.iter().map(|s| s.unwrap().value).collect();
/// assert_eq!(values, vec![30, 50, 70]);
/// ```
pub fn choose_bucket_splitters_at(
    samples: &[Vec<u64>],
    positions: &[Vec<usize>],
    lengths: &[usize],
    buckets: usize,
) -> Vec<Option<Splitter>> {
    let mut weighted = Vec::new();
    let mut total: u128 = 0;
    for (rank, ((values, positions), &len)) in
        samples.iter().zip(positions).zip(lengths).enumerate()
    {
        if len == 0 {
            continue;
        }
        for (&value, &position) in values.iter().zip(positions) {
            weighted.push((
                Splitter {
                    value,
                    rank,
                    position,
                },
                len as u128,
            ));
            total += len as u128;
        }
    }
    weighted.sort_unstable();
    let mut splitters = Vec::with_capacity(buckets.saturating_sub(1));
    let mut before: u128 = 0;
    for &(sample, weight) in &weighted {
        while splitters.len() + 1 < buckets
            && before * buckets as u128 >= (splitters.len() as u128 + 1) * total
        {
            splitters.push(Some(sample));
        }
        before += weight;
    }
    splitters.resize(buckets.saturating_sub(1), None);
    splitters
}

/// What rank `rank`'s bound search does for each splitter, as the kernel
/// reads it: `world − 1` target values, then `world − 1` `how` words (a
/// position below [`SEARCH_UPPER`] is the answer; [`SEARCH_LOWER`] /
/// [`SEARCH_UPPER`] ask for the first key ≥ / > the target). A missing
/// splitter is the shard's end `len`.
///
/// ```
/// use dist::sort::{search_work, Splitter, SEARCH_LOWER, SEARCH_UPPER};
/// let s = |rank, position| Some(Splitter { value: 7, rank, position });
/// assert_eq!(search_work(1, 9, &[s(0, 2), s(1, 4), s(2, 0), None]),
///            vec![7, 7, 7, 0, SEARCH_LOWER, 4, SEARCH_UPPER, 9]);
/// ```
pub fn search_work(rank: usize, len: usize, splitters: &[Option<Splitter>]) -> Vec<u64> {
    let targets = splitters.iter().map(|s| s.map_or(0, |s| s.value));
    let hows = splitters.iter().map(|s| match s {
        None => len as u64,
        Some(s) if s.rank == rank => s.position as u64,
        Some(s) if s.rank < rank => SEARCH_LOWER,
        Some(_) => SEARCH_UPPER,
    });
    targets.chain(hows).collect()
}

/// The bucket bounds of rank `rank` (the CPU twin of the
/// `splitter_bounds` kernel): where each splitter falls in the rank's
/// sorted shard, given the sort values of that shard in order.
///
/// ```
/// use dist::sort::{bucket_bounds, Splitter};
/// let sorted = [1, 3, 3, 3, 8];
/// let s = |rank, position| Some(Splitter { value: 3, rank, position });
/// // From rank 0 (earlier): the 3s of rank 1 come after it. From rank 2: before it.
/// assert_eq!(bucket_bounds(&sorted, 1, &[s(0, 5), s(1, 2), s(2, 0)]), vec![1, 2, 4]);
/// ```
pub fn bucket_bounds(
    sorted_values: &[u64],
    rank: usize,
    splitters: &[Option<Splitter>],
) -> Vec<usize> {
    let count = splitters.len();
    let work = search_work(rank, sorted_values.len(), splitters);
    (0..count)
        .map(|i| {
            let (target, how) = (work[i], work[count + i]);
            match how {
                SEARCH_LOWER => sorted_values.partition_point(|&v| v < target),
                SEARCH_UPPER => sorted_values.partition_point(|&v| v <= target),
                position => position as usize,
            }
        })
        .collect()
}

/// The exchange of step 4 from every rank's shard length and bucket
/// bounds (`bounds[q]`: world − 1 non-decreasing positions ≤
/// `lengths[q]`): bucket t of rank q (`[bounds[q][t-1], bounds[q][t])`,
/// the shard's ends at either side) goes to rank t, after the buckets of
/// ranks before q. Returns the moves in (`from_rank`, `to_rank`) order
/// (empty ones left out, at most one per pair) and each rank's new
/// length. Bounds that are not a layout are an `InvalidArgument`.
///
/// ```
/// use dist::layout::Move;
/// let (moves, lens) = dist::sort::exchange_plan(&[3, 2], &[vec![1], vec![2]])?;
/// assert_eq!(lens, vec![3, 2]);
/// assert_eq!(moves, vec![
///     Move { from_rank: 0, from_offset: 0, to_rank: 0, to_offset: 0, len: 1 },
///     Move { from_rank: 0, from_offset: 1, to_rank: 1, to_offset: 0, len: 2 },
///     Move { from_rank: 1, from_offset: 0, to_rank: 0, to_offset: 1, len: 2 },
/// ]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn exchange_plan(lengths: &[usize], bounds: &[Vec<usize>]) -> Result<(Vec<Move>, Vec<usize>)> {
    let (mut plans, received) = chunk_plans(lengths, bounds, 1)?;
    Ok((plans.pop().map(|p| p.moves).unwrap_or_default(), received))
}

/// One step of a chunked exchange: the moves that gather chunk j of every
/// rank's bucket, and where that chunk lies in each rank's new shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Bucket q·c + j of every rank r to rank q, after the pieces of ranks
    /// before r; empty pieces left out, at most one move per pair of
    /// ranks, in (`from_rank`, `to_rank`) order.
    pub moves: Vec<Move>,
    /// `ranges[q]`: chunk j in rank q's new shard.
    pub ranges: Vec<std::ops::Range<usize>>,
}

/// The exchange of step 4 in `chunks` chunks, from every rank's shard
/// length and the starts of its world·`chunks` buckets after the first
/// (`bounds[r]`, non-decreasing, ≤ `lengths[r]`): bucket q·c + j goes to
/// rank q as part of its chunk j. Returns one [`ChunkPlan`] per chunk, in
/// order, and each rank's new length. Rank q's new shard holds its chunks
/// one after another, each the pieces of every rank in rank order; with
/// one chunk this is [`exchange_plan`]. No chunk, the wrong number of
/// bounds or bounds that are not a layout are an `InvalidArgument`.
///
/// ```
/// use dist::layout::Move;
/// use dist::sort::chunk_plans;
/// // Two ranks, two chunks each: four buckets per rank, of sizes
/// // 1, 1, 1, 1 on rank 0 and 0, 1, 0, 1 on rank 1.
/// let (plans, lens) = chunk_plans(&[4, 2], &[vec![1, 2, 3], vec![0, 1, 1]], 2)?;
/// assert_eq!(lens, vec![3, 3]);
/// assert_eq!(plans[0].ranges, vec![0..1, 0..1]);
/// assert_eq!(plans[1].ranges, vec![1..3, 1..3]); // chunk 1: buckets 1 and 3
/// assert_eq!(plans[1].moves, vec![
///     Move { from_rank: 0, from_offset: 1, to_rank: 0, to_offset: 1, len: 1 },
///     Move { from_rank: 0, from_offset: 3, to_rank: 1, to_offset: 1, len: 1 },
///     Move { from_rank: 1, from_offset: 0, to_rank: 0, to_offset: 2, len: 1 },
///     Move { from_rank: 1, from_offset: 1, to_rank: 1, to_offset: 2, len: 1 },
/// ]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn chunk_plans(
    lengths: &[usize],
    bounds: &[Vec<usize>],
    chunks: usize,
) -> Result<(Vec<ChunkPlan>, Vec<usize>)> {
    let world = lengths.len();
    let buckets = world
        .checked_mul(chunks)
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            Error::invalid(
                "chunks",
                format!("{chunks} chunks on {world} ranks: at least one of each"),
            )
        })?;
    Error::check_len("bucket bounds", world, bounds.len())?;
    // cuts[r]: the ends of rank r's buckets, 0 and its length included.
    let mut cuts = Vec::with_capacity(world);
    for (rank, (&len, inner)) in lengths.iter().zip(bounds).enumerate() {
        Error::check_len("bucket bounds of a rank", buckets - 1, inner.len())?;
        let mut ends = Vec::with_capacity(buckets + 1);
        ends.push(0);
        ends.extend_from_slice(inner);
        ends.push(len);
        if ends.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid(
                "bucket bounds",
                format!("rank {rank}: {inner:?} are not non-decreasing within 0..={len}"),
            ));
        }
        cuts.push(ends);
    }
    let mut filled = vec![0usize; world];
    let mut plans = Vec::with_capacity(chunks);
    for chunk in 0..chunks {
        let mut moves = Vec::new();
        let mut ranges = Vec::with_capacity(world);
        for (to_rank, end) in filled.iter_mut().enumerate() {
            let bucket = to_rank * chunks + chunk;
            let first = *end;
            for (from_rank, ends) in cuts.iter().enumerate() {
                let len = ends[bucket + 1] - ends[bucket];
                if len > 0 {
                    moves.push(Move {
                        from_rank,
                        from_offset: ends[bucket],
                        to_rank,
                        to_offset: *end,
                        len,
                    });
                    *end += len;
                }
            }
            ranges.push(first..*end);
        }
        moves.sort_by_key(|m| (m.from_rank, m.to_rank));
        plans.push(ChunkPlan { moves, ranges });
    }
    Ok((plans, filled))
}

/// The whole algorithm on the host, with values: `keys[r]` and
/// `values[r]` are rank r's shard. Every step is the device path's (the
/// same sample positions, splitters, bounds and exchange plan; the local
/// sorts are `sort::cpu::sort_pairs`); the result is each rank's shard
/// with [`SortPlacement::Buckets`]. Errors: no rank, shards of values
/// and keys of different lengths, a bad bit range.
///
/// ```
/// use sort::Order;
/// let keys = vec![vec![5u32, 1, 5], vec![5, 0]];
/// let values = vec![vec!['a', 'b', 'c'], vec!['d', 'e']];
/// let (k, v) = dist::sort::model_pairs(&keys, &values, &Order::Ascending.into())?;
/// assert_eq!(k.concat(), vec![0, 1, 5, 5, 5]);
/// assert_eq!(v.concat(), vec!['e', 'b', 'a', 'c', 'd']); // stable across ranks
/// # Ok::<(), dist::Error>(())
/// ```
#[allow(clippy::type_complexity)]
pub fn model_pairs<K: SortKey, V: Copy>(
    keys: &[Vec<K>],
    values: &[Vec<V>],
    options: &SortOptions,
) -> Result<(Vec<Vec<K>>, Vec<Vec<V>>)> {
    model_pairs_with(keys, values, options, &SampleSortPolicy::default())
}

/// [`model_pairs`] under `policy`: [`SampleSortMethod::PartitionFirst`]
/// and [`SampleSortMethod::PeerScatter`] (whose buckets are partition
/// first's: the model of a group whose ranks reach each other's memory)
/// run [`partition_first::model_pairs`]; with
/// [`SampleSortMethod::SortFirst`] and [`RunOrder::Merge`], steps 4 and 5
/// run chunk by chunk ([`SampleSortPolicy::chunks_for`], [`chunk_plans`])
/// and each chunk's runs are merged in the device path's rounds
/// ([`merge_round`]) with the kernel's tie rule. Every policy gives the
/// same keys in rank order; the bucket each rank ends with depends on the
/// method, not on the chunks.
///
/// ```
/// use dist::sort::{model_pairs_with, RunOrder, SampleSortMethod, SampleSortPolicy};
/// let keys = vec![vec![4u8, 4, 1], vec![4, 0], vec![2]];
/// let values = vec![vec![0, 1, 2], vec![3, 4], vec![5]];
/// let merge = SampleSortPolicy { method: SampleSortMethod::SortFirst, run_order: RunOrder::Merge, chunks: 2, chunked_from: 0 };
/// let (k, v) = model_pairs_with(&keys, &values, &sort::Order::Ascending.into(), &merge)?;
/// assert_eq!((k.concat(), v.concat()), (vec![0, 1, 2, 4, 4, 4], vec![4, 2, 5, 0, 1, 3]));
/// # Ok::<(), dist::Error>(())
/// ```
#[allow(clippy::type_complexity)]
pub fn model_pairs_with<K: SortKey, V: Copy>(
    keys: &[Vec<K>],
    values: &[Vec<V>],
    options: &SortOptions,
    policy: &SampleSortPolicy,
) -> Result<(Vec<Vec<K>>, Vec<Vec<V>>)> {
    let world = check_model_shards(keys, values)?;
    let bits = options.bit_range::<K>()?;
    // Peer scatter cuts the same buckets as partition first (the same
    // samples, splitters and tuple order); only the order of its steps
    // differs.
    if matches!(
        policy.method_for(world),
        SampleSortMethod::PartitionFirst | SampleSortMethod::PeerScatter
    ) {
        return partition_first::model_pairs(keys, values, options);
    }
    let descending = options.order.is_descending();
    let value_of = |k: K| sort_value(k, descending, &bits);
    // (1) local stable sorts.
    let sorted: Vec<(Vec<K>, Vec<V>)> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| ::sort::cpu::sort_pairs(k, v, descending, &bits))
        .collect();
    let lengths: Vec<usize> = keys.iter().map(Vec::len).collect();
    // (2) samples and splitters.
    let count = samples_per_rank(world);
    let samples: Vec<Vec<u64>> = sorted
        .iter()
        .map(|(k, _)| {
            sample_positions(k.len(), count)
                .into_iter()
                .map(|p| value_of(k[p]))
                .collect()
        })
        .collect();
    let chunks = policy.chunks_for(world, lengths.iter().sum());
    let splitters = choose_bucket_splitters(&samples, &lengths, world * chunks);
    // (3) bucket bounds.
    let bounds: Vec<Vec<usize>> = sorted
        .iter()
        .enumerate()
        .map(|(rank, (k, _))| {
            let image: Vec<u64> = k.iter().map(|&x| value_of(x)).collect();
            bucket_bounds(&image, rank, &splitters)
        })
        .collect();
    // (4) the exchange, chunk by chunk, every slot written once.
    let (plans, new_lengths) = chunk_plans(&lengths, &bounds, chunks)?;
    let moves: Vec<Move> = plans.iter().flat_map(|p| p.moves.iter().copied()).collect();
    let received = exchanged_on_host(&moves, &new_lengths, |rank, i| {
        (sorted[rank].0[i], sorted[rank].1[i])
    })?;
    // (5) the received runs sorted again, or each chunk's merged in rounds.
    let mut out_keys = Vec::with_capacity(world);
    let mut out_values = Vec::with_capacity(world);
    for (rank, pairs) in received.into_iter().enumerate() {
        let mut ordered = Vec::with_capacity(pairs.len());
        for plan in &plans {
            let chunk = pairs[plan.ranges[rank].clone()].to_vec();
            match policy.run_order {
                RunOrder::Resort => {
                    let (k, v): (Vec<K>, Vec<V>) = chunk.into_iter().unzip();
                    let (k, v) = ::sort::cpu::sort_pairs(&k, &v, descending, &bits);
                    ordered.extend(k.into_iter().zip(v));
                }
                RunOrder::Merge => ordered.extend(merged_on_host(
                    chunk,
                    run_lengths(&plan.moves, world, rank),
                    value_of,
                )),
            }
        }
        let (k, v): (Vec<K>, Vec<V>) = ordered.into_iter().unzip();
        out_keys.push(k);
        out_values.push(v);
    }
    Ok((out_keys, out_values))
}

/// The host models' checks of their shards: at least one rank, value
/// shards as long as the key shards. Returns the world.
fn check_model_shards<K, V>(keys: &[Vec<K>], values: &[Vec<V>]) -> Result<usize> {
    let world = keys.len();
    if world == 0 {
        return Err(Error::invalid("keys", "at least one rank"));
    }
    Error::check_len("value shards", world, values.len())?;
    for (k, v) in keys.iter().zip(values) {
        Error::check_len("value shard", k.len(), v.len())?;
    }
    Ok(world)
}

/// The lengths of the runs rank `rank` receives, in rank order (the
/// pieces of `plan` that go to it; 0 for a rank that sends nothing).
///
/// ```
/// let (plan, _) = dist::sort::exchange_plan(&[3, 2], &[vec![1], vec![2]])?;
/// assert_eq!(dist::sort::run_lengths(&plan, 2, 0), vec![1, 2]);
/// assert_eq!(dist::sort::run_lengths(&plan, 2, 1), vec![2, 0]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn run_lengths(plan: &[Move], world: usize, rank: usize) -> Vec<usize> {
    let mut runs = vec![0; world];
    for m in plan.iter().filter(|m| m.to_rank == rank) {
        runs[m.from_rank] += m.len;
    }
    runs
}

/// [`model_pairs`] without values.
///
/// ```
/// let shards = vec![vec![3i8, -1], vec![], vec![2, 2, -5]];
/// let sorted = dist::sort::model(&shards, &sort::Order::Descending.into())?;
/// assert_eq!(sorted.concat(), vec![3, 2, 2, -1, -5]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn model<K: SortKey>(keys: &[Vec<K>], options: &SortOptions) -> Result<Vec<Vec<K>>> {
    let units: Vec<Vec<()>> = keys.iter().map(|k| vec![(); k.len()]).collect();
    Ok(model_pairs(keys, &units, options)?.0)
}

/// The entry of the merge kernel for keys `K` and values of
/// `value_bytes` bytes (1 for keys alone, with null value pointers).
fn merge_entry<K: SortKey>(value_bytes: usize) -> String {
    format!("dist_merge_runs_{}_v{value_bytes}", K::SUFFIX)
}

/// The kernel module for keys `K`: the sort-first steps
/// (`dist_take_samples_{K}`, `dist_splitter_bounds_{K}`), the
/// partition-first steps (`dist_gather_samples_{K}`,
/// `dist_partition_counts_{K}`, `dist_bucket_starts_{K}`,
/// `dist_partition_scatter_{K}_v{1,2,4,8}`), the peer-scatter step
/// (`dist_splitter_counts_{K}`) and the merge of all three
/// (`dist_merge_splits_{K}`, `dist_merge_runs_{K}_v{1,2,4,8}`); values of 1 to 8 bytes are moved as
/// raw bits, and keys alone use the 1-byte entry with null value pointers.
///
/// ```
/// let module = dist::sort::sample_sort_module::<f32>();
/// let entries = module.entries();
/// assert_eq!(entries[..7], ["dist_take_samples_f32", "dist_splitter_bounds_f32",
///                           "dist_gather_samples_f32", "dist_partition_counts_f32",
///                           "dist_splitter_counts_f32", "dist_bucket_starts_f32",
///                           "dist_merge_splits_f32"]);
/// assert_eq!(entries[7..11], ["dist_partition_scatter_f32_v1", "dist_partition_scatter_f32_v2",
///                             "dist_partition_scatter_f32_v4", "dist_partition_scatter_f32_v8"]);
/// assert_eq!(entries[11..], ["dist_merge_runs_f32_v1", "dist_merge_runs_f32_v2",
///                           "dist_merge_runs_f32_v4", "dist_merge_runs_f32_v8"]);
/// ```
pub fn sample_sort_module<K: SortKey>() -> ModuleSource {
    let (k, s) = (K::CUDA_TYPE, K::SUFFIX);
    let mut module = ModuleSource::new(format!("dist_sample_sort_{s}"))
        .source(parprims_kernels::SORT_RADIX_KEY)
        .define("MERGE_THREADS", BLOCK_THREADS)
        .define("MERGE_ITEMS", MERGE_ITEMS)
        .define("PART_THREADS", partition_first::PART_THREADS)
        .define("PART_ITEMS", partition_first::PART_ITEMS)
        .define("PART_MAX_BUCKETS", partition_first::MAX_WORLD)
        .source(SAMPLE_SORT_CU)
        .source(SAMPLE_PARTITION_CU)
        .entry(
            format!("dist_take_samples_{s}"),
            &format!("const {k}* sorted, u64 n, u32 count, {k}* samples"),
            &format!("take_samples<{k}>(sorted, n, count, samples)"),
            Some(BLOCK_THREADS),
        )
        .entry(
            format!("dist_splitter_bounds_{s}"),
            &format!(
                "const {k}* sorted, u64 n, const u64* work, u32 count, u32 descending, \
                 u32 begin, u32 end, u64* bounds"
            ),
            &format!(
                "splitter_bounds<{k}>(sorted, n, work, count, descending, begin, end, bounds)"
            ),
            Some(BLOCK_THREADS),
        );
    module = module
        .entry(
            format!("dist_gather_samples_{s}"),
            &format!("const {k}* keys, const u64* positions, u32 count, {k}* samples"),
            &format!("gather_samples<{k}>(keys, positions, count, samples)"),
            Some(BLOCK_THREADS),
        )
        .entry(
            format!("dist_partition_counts_{s}"),
            &format!(
                "const {k}* keys, u64 n, const u64* work, u32 splitters, u32 descending, \
                 u32 begin, u32 end, u64* counts, u64 tiles"
            ),
            &format!(
                "partition_counts<{k}>(keys, n, work, splitters, descending, begin, end, counts, \
                 tiles)"
            ),
            Some(partition_first::PART_THREADS),
        )
        .entry(
            format!("dist_splitter_counts_{s}"),
            &format!(
                "const {k}* keys, u64 n, const u64* work, u32 splitters, u32 descending, \
                 u32 begin, u32 end, u64* below"
            ),
            &format!(
                "splitter_counts<{k}>(keys, n, work, splitters, descending, begin, end, below)"
            ),
            Some(BLOCK_THREADS),
        )
        .entry(
            format!("dist_bucket_starts_{s}"),
            "const u64* offsets, u64 tiles, u32 splitters, u64* starts",
            "bucket_starts(offsets, tiles, splitters, starts)",
            Some(BLOCK_THREADS),
        )
        .entry(
            format!("dist_merge_splits_{s}"),
            &format!(
                "const {k}* a_keys, u64 a, const {k}* b_keys, u64 b, u64 tiles, \
                 u32 descending, u32 begin, u32 end, u64* splits"
            ),
            &format!(
                "merge_splits<{k}>(a_keys, a, b_keys, b, tiles, descending, begin, end, splits)"
            ),
            Some(BLOCK_THREADS),
        );
    for width in PayloadWidth::ALL {
        let v = width.cuda_type();
        module = module.entry(
            partition_first::scatter_entry::<K>(width.bytes()),
            &format!(
                "const {k}* keys, const {v}* values, u64 n, const u64* work, u32 splitters, \
                 u32 descending, u32 begin, u32 end, const u64* offsets, u64 tiles, \
                 {k}* out_keys, {v}* out_values"
            ),
            &format!(
                "partition_scatter<{k}, {v}>(keys, values, n, work, splitters, descending, begin, \
                 end, offsets, tiles, out_keys, out_values)"
            ),
            Some(partition_first::PART_THREADS),
        );
    }
    for width in PayloadWidth::ALL {
        let v = width.cuda_type();
        module = module.entry(
            merge_entry::<K>(width.bytes()),
            &format!(
                "const {k}* a_keys, const {v}* a_values, u64 a, const {k}* b_keys, \
                 const {v}* b_values, u64 b, const u64* splits, {k}* out_keys, {v}* out_values, \
                 u32 descending, u32 begin, u32 end"
            ),
            &format!(
                "merge_runs<{k}, {v}>(a_keys, a_values, a, b_keys, b_values, b, splits, \
                 out_keys, out_values, descending, begin, end)"
            ),
            Some(BLOCK_THREADS),
        );
    }
    module
}

/// Every sample sort module: one per key type.
pub fn kernel_catalog() -> Vec<ModuleSource> {
    vec![
        sample_sort_module::<u8>(),
        sample_sort_module::<u16>(),
        sample_sort_module::<u32>(),
        sample_sort_module::<u64>(),
        sample_sort_module::<i8>(),
        sample_sort_module::<i16>(),
        sample_sort_module::<i32>(),
        sample_sort_module::<i64>(),
        sample_sort_module::<f32>(),
        sample_sort_module::<f64>(),
    ]
}

fn sample_sort_kernel<K: SortKey>(gpu: &Gpu, entry: &str) -> Result<Kernel> {
    let key = format!("dist/sample_sort/{}", K::SUFFIX);
    Ok(gpu.stored_kernel(&key, entry, sample_sort_module::<K>)?)
}

/// Checks a distributed sort's arguments without a GPU, from the global
/// world and the local shard lengths: a bit range within the key, the
/// sample count in 32 bits, and every shard short enough for the sample
/// kernel's 64-bit position arithmetic (2·s·len < 2^64). Returns the bit
/// range.
///
/// ```
/// use sort::SortOptions;
/// assert_eq!(dist::sort::validate::<u32>(2, &[10, 0], &SortOptions::default())?, 0..32);
/// assert!(dist::sort::validate::<u32>(2, &[10], &SortOptions::default().with_bits(0..40)).is_err());
/// assert!(dist::sort::validate::<u8>(4, &[usize::MAX / 2], &SortOptions::default()).is_err());
/// # Ok::<(), dist::Error>(())
/// ```
pub fn validate<K: SortKey>(
    world: usize,
    lens: &[usize],
    options: &SortOptions,
) -> Result<std::ops::Range<u32>> {
    let bits = options.bit_range::<K>()?;
    let count = samples_per_rank(world);
    if u32::try_from(count).is_err() || u32::try_from(world).is_err() {
        return Err(Error::invalid(
            "group",
            format!("a world of {world} takes {count} samples per rank: past 32 bits"),
        ));
    }
    for &len in lens {
        if (2 * count as u128) * len as u128 > u64::MAX as u128 {
            return Err(Error::invalid(
                "keys",
                format!("a shard of {len} keys: too long for {count} samples per rank"),
            ));
        }
    }
    Ok(bits)
}

/// Sorts the keys of `keys` over the group (stable; the single-GPU sort's
/// key order, see the module). `options` is a `sort::Order` or
/// `sort::SortOptions` (a bit range included). Returns new shards, each
/// sorted, shard r's keys ≤ shard r + 1's; their lengths vary with the
/// data ([`SortPlacement::Buckets`]) or are the even blocks
/// ([`SortPlacement::Even`]). The input is not changed. Synchronises the
/// host twice (the samples, the bucket sizes).
///
/// Errors (before any device work): shards that do not match the group,
/// a bad bit range.
///
/// ```no_run
/// use dist::SortPlacement;
/// use sort::Order;
/// let group = dist::Group::all()?;
/// let data: Vec<u32> = (0..1u32 << 20).map(|i| i.wrapping_mul(2654435761)).collect();
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let sorted = dist::sort_keys(&group, &x, Order::Ascending, SortPlacement::Buckets)?;
/// let mut expected = data.clone();
/// expected.sort_unstable();
/// assert_eq!(sorted.gather_to_host(&group)?, expected);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn sort_keys<K: SortKey>(
    group: &Group,
    keys: &Sharded<K>,
    options: impl Into<SortOptions>,
    placement: SortPlacement,
) -> Result<Sharded<K>> {
    sort_keys_with(
        group,
        keys,
        options,
        placement,
        &SampleSortPolicy::default(),
    )
}

/// [`sort_keys`] under `policy` (how the received runs are ordered).
///
/// ```no_run
/// use dist::sort::{RunOrder, SampleSortMethod, SampleSortPolicy};
/// use dist::SortPlacement;
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &[3.5f64, -1.0, 2.0])?;
/// let resort = SampleSortPolicy { run_order: RunOrder::Resort, ..Default::default() };
/// let sorted = dist::sort::sort_keys_with(&group, &x, sort::Order::Ascending, SortPlacement::Even, &resort)?;
/// assert_eq!(sorted.gather_to_host(&group)?, [-1.0, 2.0, 3.5]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn sort_keys_with<K: SortKey>(
    group: &Group,
    keys: &Sharded<K>,
    options: impl Into<SortOptions>,
    placement: SortPlacement,
    policy: &SampleSortPolicy,
) -> Result<Sharded<K>> {
    let options = options.into();
    keys.check_group("key shards", group)?;
    validate::<K>(group.world(), keys.lens(), &options)?;
    Ok(sample_sort::<K, u8>(group, keys, None, &options, placement, policy)?.0)
}

/// Sorts the keys of `keys` over the group and moves `values` along
/// (stable across ranks: equal keys keep their global order). Values are
/// any element type of 1, 2, 4 or 8 bytes, in the same layout as the
/// keys. Returns the sorted keys and values, in the same new layout (see
/// [`sort_keys`]).
///
/// Errors (before any device work): shards that do not match the group,
/// value shards of other lengths than the key shards, values of another
/// width, a bad bit range.
///
/// ```no_run
/// use dist::SortPlacement;
/// use sort::Order;
/// let group = dist::Group::all()?;
/// let keys = dist::Sharded::scatter_from_host(&group, &[2i64, -7, 2, 0])?;
/// let values = dist::Sharded::scatter_from_host(&group, &[0.5f32, 1.5, 2.5, 3.5])?;
/// let (k, v) = dist::sort_pairs(&group, &keys, &values, Order::Ascending, SortPlacement::Even)?;
/// assert_eq!(k.gather_to_host(&group)?, [-7, 0, 2, 2]);
/// assert_eq!(v.gather_to_host(&group)?, [1.5, 3.5, 0.5, 2.5]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn sort_pairs<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: &Sharded<V>,
    options: impl Into<SortOptions>,
    placement: SortPlacement,
) -> Result<(Sharded<K>, Sharded<V>)> {
    sort_pairs_with(
        group,
        keys,
        values,
        options,
        placement,
        &SampleSortPolicy::default(),
    )
}

/// [`sort_pairs`] under `policy` (how the received runs are ordered).
///
/// ```no_run
/// use dist::sort::{RunOrder, SampleSortMethod, SampleSortPolicy};
/// use dist::SortPlacement;
/// let group = dist::Group::all()?;
/// let keys = dist::Sharded::scatter_from_host(&group, &[2u16, 1, 2])?;
/// let values = dist::Sharded::scatter_from_host(&group, &[10u64, 20, 30])?;
/// let resort = SampleSortPolicy { run_order: RunOrder::Resort, ..Default::default() };
/// let (k, v) = dist::sort::sort_pairs_with(&group, &keys, &values, sort::Order::Ascending, SortPlacement::Buckets, &resort)?;
/// assert_eq!(v.gather_to_host(&group)?, [20, 10, 30]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn sort_pairs_with<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: &Sharded<V>,
    options: impl Into<SortOptions>,
    placement: SortPlacement,
    policy: &SampleSortPolicy,
) -> Result<(Sharded<K>, Sharded<V>)> {
    let options = options.into();
    keys.check_group("key shards", group)?;
    values.check_group("value shards", group)?;
    for (&k, &v) in keys.lens().iter().zip(values.lens()) {
        Error::check_len("value shard", k, v)?;
    }
    PayloadWidth::of_bytes(V::BYTES)?;
    validate::<K>(group.world(), keys.lens(), &options)?;
    let (k, v) = sample_sort(group, keys, Some(values), &options, placement, policy)?;
    let v = v.ok_or_else(|| Error::invalid("values", "lost on the way"))?;
    Ok((k, v))
}

/// Sorts every local shard of `keys` (and `values`) into new buffers.
fn local_sorts<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &[DeviceView<'_, K>],
    values: Option<&[DeviceView<'_, V>]>,
    options: &SortOptions,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    // SAFETY: the local sorts below write every element.
    let (mut out_keys, mut out_values) =
        unsafe { uninit_shards::<K, V>(group, &lens, values.is_some())? };
    let mut key_targets = out_keys.views_mut();
    let mut value_targets = out_values.as_mut().map(|v| v.views_mut());
    for (i, rank) in group.ranks.iter().enumerate() {
        let pair = match (values, value_targets.as_mut()) {
            (Some(values), Some(targets)) => Some((values[i], targets[i].reborrow())),
            _ => None,
        };
        sort_piece(&rank.gpu, keys[i], key_targets[i].reborrow(), pair, options)?;
    }
    drop((key_targets, value_targets));
    Ok((out_keys, out_values))
}

/// One local stable sort of `keys` into `target` (and the values along).
pub(super) fn sort_piece<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    target: gpu_core::DeviceViewMut<'_, K>,
    values: Option<(DeviceView<'_, V>, gpu_core::DeviceViewMut<'_, V>)>,
    options: &SortOptions,
) -> Result<()> {
    match values {
        Some((values, value_target)) => {
            ::sort::sort_pairs(gpu, keys, values, target, value_target, options.clone())?
        }
        None => ::sort::sort_keys(gpu, keys, target, options.clone())?,
    }
    Ok(())
}

/// Every rank's shard length and the sort values of its `count` samples:
/// the local ranks' `samples` and the lengths of their `shards`
/// all-gathered in one pass, read back once (a host synchronisation).
fn gathered_samples<K: SortKey>(
    group: &Group,
    shards: &Sharded<K>,
    samples: &[DeviceBuffer<K>],
    count: usize,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Vec<usize>, Vec<Vec<u64>>)> {
    let mut lengths = Vec::with_capacity(group.local_count());
    for (rank, &len) in group.ranks.iter().zip(shards.lens()) {
        lengths.push(DeviceBuffer::from_host(&rank.gpu, &[len as u64])?);
    }
    let all_lengths = group.all_gather_one(&lengths)?;
    let all_samples = group.all_gather(samples, count)?;
    let first = &group.ranks[0].gpu;
    let lengths = all_lengths[0]
        .to_host(first)?
        .into_iter()
        .map(|l| l as usize)
        .collect();
    let values = all_samples[0]
        .to_host(first)?
        .chunks(count)
        .map(|c| c.iter().map(|&k| sort_value(k, descending, bits)).collect())
        .collect();
    Ok((lengths, values))
}

/// Every rank's `count` bucket bounds: the local ranks' `bounds`
/// all-gathered and read back (a host synchronisation).
fn gathered_bounds(
    group: &Group,
    bounds: &[DeviceBuffer<u64>],
    count: usize,
) -> Result<Vec<Vec<usize>>> {
    let all = group.all_gather(bounds, count)?;
    bounds_on_host(&all[0], &group.ranks[0].gpu, count)
}

/// Gathered bounds, `count` per rank in rank order, read back through `gpu`
/// (a stream of the rank that holds `gathered`; a host synchronisation with
/// it) and split per rank. `count` ≥ 1.
fn bounds_on_host(
    gathered: &DeviceBuffer<u64>,
    gpu: &Gpu,
    count: usize,
) -> Result<Vec<Vec<usize>>> {
    Ok(gathered
        .to_host(gpu)?
        .chunks(count)
        .map(|c| c.iter().map(|&b| b as usize).collect())
        .collect())
}

/// New shards of local lengths `lens` for keys, and for values when
/// `with_values`, uninitialised.
///
/// # Safety
/// As `Sharded::uninit`: the caller writes every element before reading it.
#[allow(clippy::type_complexity)]
unsafe fn uninit_shards<K: SortKey, V: DeviceType>(
    group: &Group,
    lens: &[usize],
    with_values: bool,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    // SAFETY: passed on to the caller.
    let keys = unsafe { Sharded::<K>::uninit(group, lens)? };
    let values = if with_values {
        // SAFETY: passed on to the caller.
        Some(unsafe { Sharded::<V>::uninit(group, lens)? })
    } else {
        None
    };
    Ok((keys, values))
}

/// Moves `source` (shards of the global `lengths`) by `plan` into new
/// shards of the global `new_lengths`.
fn moved<T: DeviceType>(
    group: &Group,
    source: &Sharded<T>,
    plan: &[Move],
    new_lengths: &[usize],
) -> Result<Sharded<T>> {
    let local: Vec<usize> = group.ranks.iter().map(|r| new_lengths[r.rank]).collect();
    // SAFETY: the plan covers every element of every target shard
    // (`exchange_plan` and `rebalance_plan`, tested on the host).
    let target = unsafe { Sharded::<T>::uninit(group, &local)? };
    moved_into(group, source, plan, target)
}

/// Moves `source` by `plan` into `target`, whose shards the plan covers
/// (`exchange_plan` and `rebalance_plan`, tested on the host).
fn moved_into<T: DeviceType>(
    group: &Group,
    source: &Sharded<T>,
    plan: &[Move],
    mut target: Sharded<T>,
) -> Result<Sharded<T>> {
    let mut views = target.views_mut();
    run_moves(group, &source.views(), plan, &mut views)?;
    drop(views);
    Ok(target)
}

/// The length of the receive buffers sort first and partition first
/// reserve on a rank before the bucket sizes are known: the mean local shard `mean`
/// and 1/[`RESERVE_SLACK_DIVISOR`] of it more, plus 1024.
///
/// ```
/// assert_eq!(dist::sort::reserve_capacity(1 << 20), (1 << 20) + (1 << 16) + 1024);
/// ```
pub fn reserve_capacity(mean: usize) -> usize {
    mean.saturating_add(mean / RESERVE_SLACK_DIVISOR)
        .saturating_add(1024)
}

/// Uninitialised buffers of [`reserve_capacity`] of the mean local shard
/// of `keys` on every local rank, for keys (and values when
/// `with_values`): receive buffers allocated while the local sorts run,
/// so that the host does not allocate them, with the GPUs idle, after
/// the bucket sizes are read back. (A stream-ordered allocation of
/// several GiB can hold the host for 5 to 13 ms even when the pool holds
/// enough free memory.) [`fitted`] then cuts them to the buckets.
///
/// # Safety
/// As `Sharded::uninit`: the caller writes every element before reading it.
unsafe fn reserved_shards<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    with_values: bool,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let mean = keys.local_len() / group.local_count().max(1);
    let lens = vec![reserve_capacity(mean); group.local_count()];
    // SAFETY: passed on to the caller.
    unsafe { uninit_shards::<K, V>(group, &lens, with_values) }
}

/// `reserved`'s buffers as shards of the local lengths `lens`: a rank's
/// buffer is kept where it holds its shard and replaced by a new one
/// where it does not (freed stream-ordered).
///
/// # Safety
/// As `Sharded::uninit`: the caller writes every element before reading it.
unsafe fn fitted<T: DeviceType>(
    group: &Group,
    reserved: Sharded<T>,
    lens: &[usize],
) -> Result<Sharded<T>> {
    Error::check_len("lens", group.local_count(), lens.len())?;
    let mut buffers = Vec::with_capacity(lens.len());
    for ((buffer, rank), &len) in reserved
        .into_buffers()
        .into_iter()
        .zip(&group.ranks)
        .zip(lens)
    {
        if buffer.len() >= len {
            buffers.push(buffer);
        } else {
            drop(buffer);
            // SAFETY: passed on to the caller.
            buffers.push(unsafe { DeviceBuffer::<T>::uninit(&rank.gpu, len)? });
        }
    }
    Ok(Sharded::from_parts(buffers, lens.to_vec()))
}

/// [`fitted`] for keys and optional values.
///
/// # Safety
/// As `Sharded::uninit`: the caller writes every element before reading it.
#[allow(clippy::type_complexity)]
unsafe fn fitted_pairs<K: SortKey, V: DeviceType>(
    group: &Group,
    reserved: (Sharded<K>, Option<Sharded<V>>),
    lens: &[usize],
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    // SAFETY (both): passed on to the caller.
    let keys = unsafe { fitted(group, reserved.0, lens)? };
    let values = match reserved.1 {
        Some(values) => Some(unsafe { fitted(group, values, lens)? }),
        None => None,
    };
    Ok((keys, values))
}

/// Steps 1 to 5 (see the module), arguments already checked.
fn sample_sort<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: Option<&Sharded<V>>,
    options: &SortOptions,
    placement: SortPlacement,
    policy: &SampleSortPolicy,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    if world == 1 {
        // Every method is the local sort alone.
        let value_views = values.map(|v| v.views());
        return local_sorts(group, &keys.views(), value_views.as_deref(), options);
    }
    match policy.method_for(world) {
        SampleSortMethod::PartitionFirst => {
            return partition_first::sort(group, keys, values, options, placement);
        }
        SampleSortMethod::PeerScatter if group.peers_reach_all()? => {
            return peer_scatter::sort(group, keys, values, options, placement);
        }
        _ => {}
    }
    let bits = options.bit_range::<K>()?;
    let descending = options.order.is_descending();
    let value_views = values.map(|v| v.views());

    // (1) local sorts.
    let (sorted_keys, sorted_values) =
        local_sorts(group, &keys.views(), value_views.as_deref(), options)?;
    // The receive buffers (and, for merged runs, the merge's second
    // buffer), reserved while the local sorts run.
    // SAFETY (both): `fitted_pairs` cuts them to the buckets below; the
    // exchange writes every element of the received shards, every merge
    // round each element of the other buffer's range before reading it.
    let received_reserve = unsafe { reserved_shards::<K, V>(group, keys, values.is_some())? };
    let other_reserve = match policy.run_order {
        RunOrder::Merge => Some(unsafe { reserved_shards::<K, V>(group, keys, values.is_some())? }),
        RunOrder::Resort => None,
    };

    // (2) samples and shard lengths, all-gathered, read back once.
    let count = samples_per_rank(world);
    let mut samples = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(sorted_keys.views()) {
        let gpu = &rank.gpu;
        // Zeros: an empty shard sends defined bytes (ignored by the host).
        let mut part = DeviceBuffer::<K>::zeros(gpu, count)?;
        if !shard.is_empty() {
            let kernel = sample_sort_kernel::<K>(gpu, &format!("dist_take_samples_{}", K::SUFFIX))?;
            let (config, _) = grid_1d(count as u64, BLOCK_THREADS, 1, 0)?;
            let mut args = KernelArgs::new();
            args.input(&shard)
                .scalar(shard.len() as u64)
                .scalar(count as u32)
                .output(&mut part.view_mut());
            // SAFETY: take_samples(const K* sorted, u64 n, u32 count, K* samples):
            // the argument list matches; sorted holds n > 0 keys and every
            // position (2j+1)·n/(2·count) < n (2·count·n < 2^64, validated);
            // samples holds count keys, one thread each.
            unsafe { gpu.launch(&kernel, config, &args)? };
        }
        samples.push(part);
    }
    let (lengths, sample_values) =
        gathered_samples(group, &sorted_keys, &samples, count, descending, &bits)?;
    let chunks = policy.chunks_for(world, lengths.iter().sum());
    let splitters = choose_bucket_splitters(&sample_values, &lengths, world * chunks);

    // (3) bucket bounds on every rank, all-gathered, read back once.
    let bound_count = splitters.len();
    let mut bounds = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(sorted_keys.views()) {
        let gpu = &rank.gpu;
        let work = DeviceBuffer::from_host(gpu, &search_work(rank.rank, shard.len(), &splitters))?;
        // SAFETY: the splitter_bounds launch writes every bound.
        let mut local = unsafe { DeviceBuffer::<u64>::uninit(gpu, bound_count)? };
        let kernel = sample_sort_kernel::<K>(gpu, &format!("dist_splitter_bounds_{}", K::SUFFIX))?;
        let (config, _) = grid_1d(bound_count as u64, BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&shard)
            .scalar(shard.len() as u64)
            .input(&work.view())
            .scalar(bound_count as u32)
            .scalar(u32::from(descending))
            .scalar(bits.start)
            .scalar(bits.end)
            .output(&mut local.view_mut());
        // SAFETY: splitter_bounds(const K* sorted, u64 n, const u64* work,
        // u32 count, u32 descending, u32 begin, u32 end, u64* bounds): the
        // argument list matches; work holds 2·count words, bounds count;
        // the searches read sorted[0..n) only; begin < end ≤ the key width.
        unsafe { gpu.launch(&kernel, config, &args)? };
        drop(work); // stream-ordered free, after the kernel
        bounds.push(local);
    }
    let bounds = gathered_bounds(group, &bounds, bound_count)?;

    // (4) and (5): the buckets to their ranks, then their runs sorted
    // again, or each chunk's runs merged as soon as it has arrived.
    let (plans, bucket_lengths) = chunk_plans(&lengths, &bounds, chunks)?;
    let local: Vec<usize> = group.ranks.iter().map(|r| bucket_lengths[r.rank]).collect();
    // SAFETY (all three): as where they were reserved.
    let received = unsafe { fitted_pairs(group, received_reserve, &local)? };
    let other = match other_reserve {
        Some(reserve) => Some(unsafe { fitted_pairs(group, reserve, &local)? }),
        None => None,
    };
    let merge_buffer =
        || other.ok_or_else(|| Error::invalid("run order", "merged runs without a second buffer"));
    let (out_keys, out_values) = if chunks == 1 {
        // One chunk: one exchange on the main streams, then the runs
        // sorted again or merged.
        let plan = &plans[0].moves;
        let received_keys = moved_into(group, &sorted_keys, plan, received.0)?;
        let received_values = match (&sorted_values, received.1) {
            (Some(v), Some(target)) => Some(moved_into(group, v, plan, target)?),
            _ => None,
        };
        drop((sorted_keys, sorted_values));
        match policy.run_order {
            RunOrder::Resort => {
                let received_value_views = received_values.as_ref().map(|v| v.views());
                let sorted = local_sorts(
                    group,
                    &received_keys.views(),
                    received_value_views.as_deref(),
                    options,
                )?;
                drop(received_value_views);
                drop((received_keys, received_values));
                sorted
            }
            RunOrder::Merge => merge_rounds_on_ranks(
                group,
                (received_keys, received_values),
                merge_buffer()?,
                |rank| run_lengths(plan, world, rank),
                descending,
                &bits,
            )?,
        }
    } else {
        exchanged_and_merged(
            group,
            (sorted_keys, sorted_values),
            (received, merge_buffer()?),
            &plans,
            descending,
            &bits,
        )?
    };
    placed(group, (out_keys, out_values), &bucket_lengths, placement)
}

/// Steps 4 and 5 with merged runs: chunk by chunk, the pieces gathered
/// on every rank's side stream ([`run_moves_on`], the piece a rank keeps
/// copied there too), then, on its main stream once the chunk has
/// arrived, the chunk's runs merged in [`merge_round`] rounds between
/// two buffers, while the next chunk travels. Every chunk has `world`
/// runs (some empty), so every chunk's result lands in the same buffer.
///
/// `buffers` are the receive buffer and the merge's second buffer, with
/// the buckets' local lengths: the chunk plans write every element of
/// the received shards (tested on the host), and every merge round writes
/// each element of a chunk's range of the buffer it writes before that
/// range is read.
#[allow(clippy::type_complexity)]
fn exchanged_and_merged<K: SortKey, V: DeviceType>(
    group: &Group,
    sorted: (Sharded<K>, Option<Sharded<V>>),
    buffers: (
        (Sharded<K>, Option<Sharded<V>>),
        (Sharded<K>, Option<Sharded<V>>),
    ),
    plans: &[ChunkPlan],
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    let (sorted_keys, sorted_values) = sorted;
    let ((received_keys, received_values), (other_keys, other_values)) = buffers;
    let local = received_keys.lens().to_vec();
    let mut received = split_pairs(received_keys, received_values);
    let mut other = split_pairs(other_keys, other_values);
    // The side streams wait for the local sorts.
    for rank in &group.ranks {
        join(&rank.side, &rank.gpu)?;
    }
    let sides: Vec<&Gpu> = group.ranks.iter().map(|r| &r.side).collect();
    let mut result_in_other = false;
    for plan in plans {
        let mut targets: Vec<_> = received.iter_mut().map(|(k, _)| k.view_mut()).collect();
        run_moves_on(
            group,
            &sides,
            &sorted_keys.views(),
            &plan.moves,
            &mut targets,
            LocalPieces::Copy,
        )?;
        drop(targets);
        if let Some(source) = &sorted_values {
            let mut targets: Vec<_> = received
                .iter_mut()
                .filter_map(|(_, v)| v.as_mut().map(|v| v.view_mut()))
                .collect();
            run_moves_on(
                group,
                &sides,
                &source.views(),
                &plan.moves,
                &mut targets,
                LocalPieces::Copy,
            )?;
        }
        // The chunk's merges wait for its pieces only: later chunks are
        // queued on the side streams after this point.
        for ((rank, first), second) in group.ranks.iter().zip(&mut received).zip(&mut other) {
            join(&rank.gpu, &rank.side)?;
            let range = plan.ranges[rank.rank].clone();
            let runs = run_lengths(&plan.moves, world, rank.rank);
            result_in_other = merge_rounds_in(
                &rank.gpu,
                first,
                second,
                range.start,
                runs,
                descending,
                bits,
            )?;
        }
    }
    // Every main stream has joined its side stream after the last chunk:
    // the sorted shards are freed after the sends that read them.
    drop((sorted_keys, sorted_values));
    let (result, spare) = if result_in_other {
        (other, received)
    } else {
        (received, other)
    };
    drop(spare);
    joined_pairs(result, local)
}

/// A rank's key buffer beside its value buffer, when there are values.
type BufferPair<K, V> = (DeviceBuffer<K>, Option<DeviceBuffer<V>>);

/// Sharded keys and values as one (keys, values) buffer pair per local
/// rank.
fn split_pairs<K: SortKey, V: DeviceType>(
    keys: Sharded<K>,
    values: Option<Sharded<V>>,
) -> Vec<BufferPair<K, V>> {
    let keys = keys.into_buffers();
    match values {
        Some(v) => keys
            .into_iter()
            .zip(v.into_buffers().into_iter().map(Some))
            .collect(),
        None => keys.into_iter().map(|k| (k, None)).collect(),
    }
}

/// [`split_pairs`] undone: one (keys, values) buffer pair per local rank,
/// of local lengths `lens`, as sharded keys and values. Values on some
/// ranks only are an `InvalidArgument`.
#[allow(clippy::type_complexity)]
fn joined_pairs<K: SortKey, V: DeviceType>(
    pairs: Vec<BufferPair<K, V>>,
    lens: Vec<usize>,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let has_values = pairs.iter().any(|(_, v)| v.is_some());
    let (keys, values): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
    let values = if has_values {
        let buffers = values
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::invalid("values", "lost on the way"))?;
        Some(Sharded::from_parts(buffers, lens.clone()))
    } else {
        None
    };
    Ok((Sharded::from_parts(keys, lens), values))
}

/// Makes `waiter`'s stream wait for the work queued so far on `other`'s
/// (an event; the streams may be on different devices of this process).
pub(super) fn join(waiter: &Gpu, other: &Gpu) -> Result<()> {
    waiter
        .cudarc_stream()
        .join(other.cudarc_stream())
        .map_err(gpu_core::Error::from)?;
    Ok(())
}

/// Makes every stream of `gpus` wait for the work queued so far on every
/// other one.
pub(super) fn join_all(gpus: &[&Gpu]) -> Result<()> {
    for waiter in gpus {
        for other in gpus {
            if !std::ptr::eq(*waiter, *other) {
                join(waiter, other)?;
            }
        }
    }
    Ok(())
}

/// The sorted buckets (global lengths `bucket_lengths`) left where they
/// are or moved into even blocks.
#[allow(clippy::type_complexity)]
fn placed<K: SortKey, V: DeviceType>(
    group: &Group,
    sorted: (Sharded<K>, Option<Sharded<V>>),
    bucket_lengths: &[usize],
    placement: SortPlacement,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let (out_keys, out_values) = sorted;
    match placement {
        SortPlacement::Buckets => Ok((out_keys, out_values)),
        SortPlacement::Even => {
            let plan = rebalance_plan(bucket_lengths);
            let total: usize = bucket_lengths.iter().sum();
            let even = crate::layout::even_lengths(total, group.world());
            let keys = moved(group, &out_keys, &plan, &even)?;
            let values = match &out_values {
                Some(v) => Some(moved(group, v, &plan, &even)?),
                None => None,
            };
            Ok((keys, values))
        }
    }
}

/// Step 5 by merge rounds, in one chunk: each local rank merges the runs
/// it received ([`run_lengths`] of `plan`) pairwise ([`merge_round`])
/// between its receive buffer and one more buffer of the same length,
/// until one run is left. Every rank runs the same number of rounds.
fn merge_received<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: Sharded<K>,
    values: Option<Sharded<V>>,
    plan: &[Move],
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    let lens = keys.lens().to_vec();
    // SAFETY: every merge round writes each element of the other buffer
    // before it is read.
    let (other_keys, other_values) =
        unsafe { uninit_shards::<K, V>(group, &lens, values.is_some())? };
    merge_rounds_on_ranks(
        group,
        (keys, values),
        (other_keys, other_values),
        |rank| run_lengths(plan, world, rank),
        descending,
        bits,
    )
}

/// Merge rounds on every local rank: the sorted runs `runs(rank)` of
/// global rank `rank`, laid end to end in its shard of `current`, merged
/// pairwise ([`merge_round`]) between it and its shard of `other` (the
/// same lengths) until one run is left. Returns the shards that hold the
/// merged runs (`current`'s when there was at most one run) and drops the
/// others, stream-ordered.
#[allow(clippy::type_complexity)]
fn merge_rounds_on_ranks<K: SortKey, V: DeviceType>(
    group: &Group,
    current: (Sharded<K>, Option<Sharded<V>>),
    other: (Sharded<K>, Option<Sharded<V>>),
    runs: impl Fn(usize) -> Vec<usize>,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let lens = current.0.lens().to_vec();
    let currents = split_pairs(current.0, current.1);
    let others = split_pairs(other.0, other.1);
    let mut merged = Vec::with_capacity(lens.len());
    for ((rank, mut current), mut other) in group.ranks.iter().zip(currents).zip(others) {
        let in_other = merge_rounds_in(
            &rank.gpu,
            &mut current,
            &mut other,
            0,
            runs(rank.rank),
            descending,
            bits,
        )?;
        merged.push(if in_other { other } else { current });
    }
    joined_pairs(merged, lens)
}

/// Merges the sorted runs of lengths `runs`, laid end to end from
/// `offset` in `first`, pairwise ([`merge_round`]) between `first` and
/// `second` (each at least `offset` + the runs long) until one run is
/// left; returns whether it ended in `second` (an odd number of rounds).
#[allow(clippy::type_complexity)]
fn merge_rounds_in<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    first: &mut BufferPair<K, V>,
    second: &mut BufferPair<K, V>,
    offset: usize,
    mut runs: Vec<usize>,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<bool> {
    let (mut source, mut target) = (first, second);
    let mut in_second = false;
    while runs.len() > 1 {
        let round = merge_round(&runs);
        for step in &round {
            merge_step(
                gpu,
                (&source.0, source.1.as_ref()),
                (&mut target.0, target.1.as_mut()),
                &MergeStep {
                    offset: offset + step.offset,
                    ..*step
                },
                descending,
                bits,
            )?;
        }
        std::mem::swap(&mut source, &mut target);
        in_second = !in_second;
        runs = round.iter().map(|s| s.left + s.right).collect();
    }
    Ok(in_second)
}

/// One [`MergeStep`] on one rank: the pair merged by `merge_runs` from
/// `source` into the same range of `target`, or copied when it is a
/// single run.
fn merge_step<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    source: (&DeviceBuffer<K>, Option<&DeviceBuffer<V>>),
    target: (&mut DeviceBuffer<K>, Option<&mut DeviceBuffer<V>>),
    step: &MergeStep,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<()> {
    let (keys, values) = source;
    let (out_keys, out_values) = target;
    let total = step.left + step.right;
    let range = step.offset..step.offset + total;
    if total == 0 {
        return Ok(());
    }
    if step.right == 0 {
        out_keys
            .slice_mut(range.clone())?
            .copy_from(gpu, &keys.slice(range.clone())?)?;
        if let (Some(v), Some(out)) = (values, out_values) {
            out.slice_mut(range.clone())?
                .copy_from(gpu, &v.slice(range)?)?;
        }
        return Ok(());
    }
    let middle = step.offset + step.left;
    let (first, second) = (step.offset..middle, middle..middle + step.right);
    let (value_bytes, a_values, b_values, values_out) = match (values, out_values) {
        (Some(v), Some(out)) => (
            V::BYTES,
            v.slice(first.clone())?.device_ptr(),
            v.slice(second.clone())?.device_ptr(),
            out.slice_mut(range.clone())?.device_ptr(),
        ),
        _ => (1, 0, 0, 0),
    };
    let a = keys.slice(first)?;
    let b = keys.slice(second)?;
    let mut out = out_keys.slice_mut(range)?;
    let (config, tiles) = grid_1d(total as u64, BLOCK_THREADS, MERGE_ITEMS, 0)?;
    // SAFETY: merge_splits writes splits[0..=tiles].
    let mut splits = unsafe { DeviceBuffer::<u64>::uninit(gpu, tiles as usize + 1)? };
    let kernel = sample_sort_kernel::<K>(gpu, &format!("dist_merge_splits_{}", K::SUFFIX))?;
    let (split_config, _) = grid_1d(tiles + 1, BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&a)
        .scalar(step.left as u64)
        .input(&b)
        .scalar(step.right as u64)
        .scalar(tiles)
        .scalar(u32::from(descending))
        .scalar(bits.start)
        .scalar(bits.end)
        .output(&mut splits.view_mut());
    // SAFETY: merge_splits(const K* a_keys, u64 a, const K* b_keys, u64 b,
    // u64 tiles, u32 descending, u32 begin, u32 end, u64* splits): the
    // argument list matches; thread t <= tiles writes splits[t] (tiles + 1
    // of them) after a binary search over a and b's keys only.
    unsafe { gpu.launch(&kernel, split_config, &args)? };
    let kernel = sample_sort_kernel::<K>(gpu, &merge_entry::<K>(value_bytes))?;
    let mut args = KernelArgs::new();
    args.input(&a)
        .scalar(a_values)
        .scalar(step.left as u64)
        .input(&b)
        .scalar(b_values)
        .scalar(step.right as u64)
        .input(&splits.view())
        .output(&mut out)
        .scalar(values_out)
        .scalar(u32::from(descending))
        .scalar(bits.start)
        .scalar(bits.end);
    // SAFETY: merge_runs(const K* a_keys, const V* a_values, u64 a, const K*
    // b_keys, const V* b_values, u64 b, const u64* splits, K* out_keys, V*
    // out_values, u32 descending, u32 begin, u32 end): the argument list
    // matches, splits holds the tiles + 1 tile starts of the grid, V of
    // `value_bytes` bytes (the values' width, checked by sort_pairs; 1 with
    // null value pointers for keys alone). a and b hold step.left and
    // step.right keys (and values), out their sum, in disjoint buffers that
    // outlive the launch (freed stream-ordered); each thread writes outputs
    // below a + b only.
    unsafe { gpu.launch(&kernel, config, &args)? };
    Ok(())
}

#[cfg(test)]
mod reserve_tests {
    use super::*;

    #[test]
    fn the_reserve_has_room_past_regular_sampling() {
        // A bucket of even shards exceeds n/world by at most a few times
        // n/(OVERSAMPLING·world); the reserve keeps four times that.
        for mean in [0usize, 1, 1000, 1 << 20, 1 << 30] {
            let room = reserve_capacity(mean) - mean;
            assert!(room >= 4 * mean / OVERSAMPLING);
            assert!(room >= 1024);
        }
        assert_eq!(reserve_capacity(usize::MAX), usize::MAX);
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn fitted_keeps_a_buffer_that_holds_the_shard_and_replaces_one_that_does_not() {
        let group = Group::new(&[0]).unwrap();
        let gpu = group.gpu(0).unwrap();
        // SAFETY: nothing is read.
        let reserved = unsafe { Sharded::<u32>::uninit(&group, &[100]).unwrap() };
        let kept_ptr = reserved.views()[0].device_ptr();
        // SAFETY: nothing is read.
        let kept = unsafe { fitted(&group, reserved, &[60]).unwrap() };
        assert_eq!(kept.lens(), [60]);
        assert_eq!(kept.views()[0].len(), 60);
        assert_eq!(kept.views()[0].device_ptr(), kept_ptr);
        // SAFETY: nothing is read before the copy writes every element.
        let mut grown = unsafe { fitted(&group, kept, &[150]).unwrap() };
        assert_eq!(grown.lens(), [150]);
        let data: Vec<u32> = (0..150).collect();
        grown.views_mut()[0].copy_from_host(gpu, &data).unwrap();
        assert_eq!(grown.gather_to_host(&group).unwrap(), data);
    }
}
