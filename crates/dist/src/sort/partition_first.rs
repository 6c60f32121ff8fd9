//! The partition-first sample sort: split every unsorted shard into
//! buckets, send the buckets while each rank sorts the one it keeps, then
//! sort what arrived and merge.
//!
//! **Computes** the same result as the sort-first method of the parent
//! module (bit for bit the single-GPU stable sort of the concatenated
//! shards, read in rank order), ordering element i of rank r by the tuple
//! (sort value, r, i), with i now its position in the *input* shard.
//!
//! **Steps.**
//! 1. Every rank takes s = [`SAMPLES_PER_RANK_PER_RANK`]·world samples of
//!    its unsorted shard at [`jittered_sample_positions`] (one
//!    position drawn at random, by a hash of rank and index, in each of s
//!    equal slices; `gather_samples` kernel). One NCCL group all-gathers
//!    the shard lengths and the samples, read back once (host
//!    synchronisation 1); every process picks the same world − 1
//!    splitters ([`choose_splitters_at`]).
//! 2. Every rank partitions its shard into world buckets, stably: bucket
//!    t holds the elements between splitters t − 1 and t in tuple order
//!    ([`bucket_work`], [`bucket_of`]). Three kernels and one scan: per
//!    tile of [`PART_TILE`] keys the count of each bucket
//!    (`partition_counts`), one exclusive scan of those counts in bucket
//!    order (`scan::scan_into`) giving every tile its first slot in every
//!    bucket, the buckets' starts (`bucket_starts`), and the scatter
//!    (`partition_scatter`), which stages each tile bucket by bucket in
//!    shared memory and writes each bucket's part contiguously. The
//!    starts are all-gathered and read back (host synchronisation 2):
//!    every process knows every bucket's size and computes the same
//!    exchange plan ([`exchange_plan`]).
//! 3. On each rank's side stream, one NCCL group of sends and receives
//!    moves bucket t of every rank to rank t, the runs in rank order. On
//!    the main stream, meanwhile, the rank sorts the bucket it keeps
//!    (`sort::sort_keys` / `sort_pairs`) straight into its place in the
//!    output.
//! 4. When the exchange is done, the runs received from earlier ranks
//!    are sorted as one block, and those from later ranks as another
//!    (stable, so equal keys stay in rank order); the three sorted blocks
//!    (earlier, own, later) are merged ([`merge_round`](super::merge_round)
//!    rounds, ties to the earlier block): one round on two GPUs, two on
//!    more. With [`SortPlacement::Even`] the result is then moved into
//!    even blocks.
//!
//! **Bytes moved per rank** (m keys of k bytes in, m′ out, values of v
//! bytes, n keys in all): step 1 s·k read; step 2 m·k read for the counts,
//! m·(k + v) read and written by the scatter, 16·world·⌈m/[`PART_TILE`]⌉
//! for the counts and their scan; step 3 at most m·(k + v) sent and
//! m′·(k + v) received, (world − 1)/world of the array crossing the links
//! on a balanced input; steps 3 and 4 local sorts of m′ keys in all, in
//! up to three pieces; one or two merge rounds of m′·(k + v) read and
//! written.
//!
//! **Cost against one GPU.** Each rank sorts about n/world keys once,
//! against the sort-first method's local sort and merge rounds after the
//! exchange; the partition costs about one digit pass of the sort, and the
//! exchange overlaps the sort of the kept bucket, about 1/world of the
//! rank's keys. On two GPUs the time is about a one-GPU sort of n/2, one
//! partition pass, the part of the exchange that outlasts the kept
//! bucket's sort, and one merge round. Measured on two H100s at 2^31
//! `u32` keys: 1.12× one GPU, against 1.31–1.33× for the sort-first
//! default; the partition kernels are bound by instruction issue and take
//! about four copies' time, and the receive and output buffers, allocated
//! once the bucket sizes are known, hold the host about 5 ms while the
//! GPUs wait (`docs/multi-gpu.md`).
//!
//! **Work** O(n/world · passes) per rank, plus O(log world) comparisons
//! per key to find its bucket (a binary search of the splitters);
//! **steps**: four small kernels and a scan, up to three local sorts, one
//! or two merge rounds, three NCCL groups (four with `Even`), two host
//! synchronisations.

use ::sort::cpu::sort_value;
use ::sort::{SortKey, SortOptions};
use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceType, Gpu, KernelArgs, Sum};
use scan::{ScanKind, ScanOptions};
use std::ops::Range;

use super::{
    check_model_shards, choose_splitters_at, exchange_plan, exchanged_on_host, fitted_pairs,
    gathered_bounds, gathered_samples, join, merge_rounds_on_ranks, merged_on_host, placed,
    reserved_shards, run_lengths, sample_sort_kernel, sort_piece, uninit_shards, SortPlacement,
    Splitter, BLOCK_THREADS, SEARCH_LOWER, SEARCH_UPPER,
};
use crate::layout::Move;
use crate::moves::{run_moves_on, LocalPieces};
use crate::{Error, Group, Result, Sharded};

/// Threads per block of the partition kernels.
pub const PART_THREADS: u32 = 256;
/// Keys per thread of the partition kernels.
pub const PART_ITEMS: u32 = 8;
/// Keys per tile of the partition kernels: [`PART_THREADS`] ·
/// [`PART_ITEMS`].
pub const PART_TILE: usize = (PART_THREADS * PART_ITEMS) as usize;
/// The most ranks the partition-first sort takes: one bucket per rank,
/// and the scatter's placement scan has one thread per (bucket, warp)
/// pair of its block.
pub const MAX_WORLD: usize = (PART_THREADS / 32) as usize * 4;

/// Samples per rank per rank of the world: each rank takes
/// `SAMPLES_PER_RANK_PER_RANK · world` samples of its unsorted shard. Four
/// times the sort-first method's [`OVERSAMPLING`](super::OVERSAMPLING):
/// random samples split less evenly than regular samples of sorted shards.
/// On 2^20 hashed and Weyl-sequence keys the largest bucket lies 1.1–4.2 %
/// above n/world on 2, 4 and 8 ranks, against 1.5–8.2 % with
/// `OVERSAMPLING` (test `partition_first_buckets_are_near_even`).
pub const SAMPLES_PER_RANK_PER_RANK: usize = 4 * super::OVERSAMPLING;

/// The number of samples each rank takes: [`SAMPLES_PER_RANK_PER_RANK`] ·
/// `world`.
///
/// ```
/// assert_eq!(dist::sort::partition_first::samples_per_rank(2), 512);
/// ```
pub fn samples_per_rank(world: usize) -> usize {
    SAMPLES_PER_RANK_PER_RANK.saturating_mul(world)
}

/// The entry of the scatter kernel for keys `K` and values of
/// `value_bytes` bytes (1 for keys alone, with null value pointers).
pub(super) fn scatter_entry<K: SortKey>(value_bytes: usize) -> String {
    format!("dist_partition_scatter_{}_v{value_bytes}", K::SUFFIX)
}

/// One 64-bit mix of SplitMix64: the jitter of the sample positions.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The positions of `count` samples of rank `rank`'s unsorted shard of
/// `len` keys: one in each of `count` equal slices, at a place inside it
/// drawn from a hash of (rank, j), so that a periodic input cannot line up
/// with the samples. Non-decreasing, below `len`; none for an empty shard.
/// Every process computes the same positions.
///
/// ```
/// let p = dist::sort::partition_first::jittered_sample_positions(1000, 4, 1);
/// assert_eq!(p.len(), 4);
/// assert!(p.iter().enumerate().all(|(j, &x)| x >= j * 250 && x < (j + 1) * 250));
/// assert!(dist::sort::partition_first::jittered_sample_positions(0, 4, 0).is_empty());
/// ```
pub fn jittered_sample_positions(len: usize, count: usize, rank: usize) -> Vec<usize> {
    if len == 0 || count == 0 {
        return Vec::new();
    }
    (0..count)
        .map(|j| {
            let jitter = u128::from(mix(((rank as u64) << 32) ^ j as u64) >> 32);
            let point = ((j as u128) << 32) | jitter;
            (point * len as u128 / ((count as u128) << 32)) as usize
        })
        .collect()
}

/// What rank `rank`'s partition kernels compare each key with: the
/// `world − 1` splitters' sort values, then one `how` word each:
/// [`SEARCH_LOWER`] for a splitter from an earlier rank (it comes before
/// keys of equal value here), [`SEARCH_UPPER`] for one from a later rank
/// (after them), and the splitter's own position for one from this rank.
/// A missing splitter is the value `u64::MAX` with [`SEARCH_UPPER`]: before
/// no key, so its bucket and the ones after it stay empty.
///
/// ```
/// use dist::sort::{partition_first::bucket_work, Splitter, SEARCH_LOWER, SEARCH_UPPER};
/// let s = |rank, position| Some(Splitter { value: 7, rank, position });
/// assert_eq!(bucket_work(1, &[s(0, 2), s(1, 4), s(2, 0), None]),
///            vec![7, 7, 7, u64::MAX, SEARCH_LOWER, 4, SEARCH_UPPER, SEARCH_UPPER]);
/// ```
pub fn bucket_work(rank: usize, splitters: &[Option<Splitter>]) -> Vec<u64> {
    let targets = splitters.iter().map(|s| s.map_or(u64::MAX, |s| s.value));
    let hows = splitters.iter().map(|s| match s {
        None => SEARCH_UPPER,
        Some(s) if s.rank == rank => s.position as u64,
        Some(s) if s.rank < rank => SEARCH_LOWER,
        Some(_) => SEARCH_UPPER,
    });
    targets.chain(hows).collect()
}

/// The bucket of the key of sort value `value` at position `index` of its
/// rank's shard (the host twin of the kernels' `bucket_of`): how many
/// splitters of `work` ([`bucket_work`]) come before it in tuple order.
///
/// ```
/// use dist::sort::{partition_first::{bucket_of, bucket_work}, Splitter};
/// let work = bucket_work(0, &[Some(Splitter { value: 5, rank: 0, position: 3 })]);
/// assert_eq!(bucket_of(4, 9, &work), 0);
/// assert_eq!(bucket_of(5, 2, &work), 0); // equal value, before the splitter
/// assert_eq!(bucket_of(5, 3, &work), 1); // the splitter itself starts bucket 1
/// assert_eq!(bucket_of(6, 0, &work), 1);
/// ```
pub fn bucket_of(value: u64, index: usize, work: &[u64]) -> usize {
    let count = work.len() / 2;
    (0..count)
        .filter(|&t| {
            let (target, how) = (work[t], work[count + t]);
            match how {
                SEARCH_LOWER => target <= value,
                SEARCH_UPPER => target < value,
                position => target < value || (target == value && position <= index as u64),
            }
        })
        .count()
}

/// The whole partition-first algorithm on the host, with values: the
/// device path's sample positions, splitters, buckets, exchange plan, the
/// three sorted blocks and their merge (`sort::cpu::sort_pairs` for the
/// local sorts). Gives each rank's shard with [`SortPlacement::Buckets`].
/// Errors: no rank, shards of values and keys of different lengths, a bad
/// bit range.
///
/// ```
/// use sort::Order;
/// let keys = vec![vec![5u32, 1, 5], vec![5, 0]];
/// let values = vec![vec!['a', 'b', 'c'], vec!['d', 'e']];
/// let (k, v) = dist::sort::partition_first::model_pairs(&keys, &values, &Order::Ascending.into())?;
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
    let world = check_model_shards(keys, values)?;
    let bits = options.bit_range::<K>()?;
    let descending = options.order.is_descending();
    let value_of = |k: K| sort_value(k, descending, &bits);
    let sorted_block = |pairs: &[(K, V)]| -> Vec<(K, V)> {
        let (k, v): (Vec<K>, Vec<V>) = pairs.iter().copied().unzip();
        let (k, v) = ::sort::cpu::sort_pairs(&k, &v, descending, &bits);
        k.into_iter().zip(v).collect()
    };
    let lengths: Vec<usize> = keys.iter().map(Vec::len).collect();
    // (1) samples and splitters.
    let count = samples_per_rank(world);
    let positions: Vec<Vec<usize>> = lengths
        .iter()
        .enumerate()
        .map(|(rank, &len)| jittered_sample_positions(len, count, rank))
        .collect();
    let samples: Vec<Vec<u64>> = keys
        .iter()
        .zip(&positions)
        .map(|(k, p)| p.iter().map(|&i| value_of(k[i])).collect())
        .collect();
    let splitters = choose_splitters_at(&samples, &positions, &lengths);
    // (2) stable partitions and their bucket starts.
    let mut partitioned = Vec::with_capacity(world);
    let mut bounds = Vec::with_capacity(world);
    for (rank, (k, v)) in keys.iter().zip(values).enumerate() {
        let work = bucket_work(rank, &splitters);
        let buckets: Vec<usize> = k
            .iter()
            .enumerate()
            .map(|(i, &key)| bucket_of(value_of(key), i, &work))
            .collect();
        let mut shard = Vec::with_capacity(k.len());
        let mut starts = Vec::with_capacity(world - 1);
        for b in 0..world {
            if b > 0 {
                starts.push(shard.len());
            }
            shard.extend(
                (0..k.len())
                    .filter(|&i| buckets[i] == b)
                    .map(|i| (k[i], v[i])),
            );
        }
        partitioned.push(shard);
        bounds.push(starts);
    }
    // (3) the exchange, every slot written once.
    let (plan, new_lengths) = exchange_plan(&lengths, &bounds)?;
    let received = exchanged_on_host(&plan, &new_lengths, |rank, i| partitioned[rank][i])?;
    // (4) the three blocks sorted, then merged.
    let mut out_keys = Vec::with_capacity(world);
    let mut out_values = Vec::with_capacity(world);
    for (rank, pairs) in received.into_iter().enumerate() {
        let blocks = received_blocks(&run_lengths(&plan, world, rank), rank);
        let mut current = Vec::with_capacity(pairs.len());
        let mut offset = 0;
        for &len in &blocks {
            current.extend(sorted_block(&pairs[offset..offset + len]));
            offset += len;
        }
        let merged = merged_on_host(current, blocks, value_of);
        let (k, v): (Vec<K>, Vec<V>) = merged.into_iter().unzip();
        out_keys.push(k);
        out_values.push(v);
    }
    Ok((out_keys, out_values))
}

/// The sorted blocks of what rank `rank` holds after the exchange, from
/// the lengths of the runs it receives (`runs[q]` from rank q, its own
/// bucket at `rank`): the runs of earlier ranks as one block, its own, the
/// runs of later ranks as one block; empty blocks left out. The blocks
/// tile the rank's new shard in this order.
///
/// ```
/// use dist::sort::partition_first::received_blocks;
/// assert_eq!(received_blocks(&[3, 4, 0, 5], 1), vec![3, 4, 5]);
/// assert_eq!(received_blocks(&[3, 4, 0, 5], 0), vec![3, 9]);
/// assert_eq!(received_blocks(&[0, 0], 1), Vec::<usize>::new());
/// ```
pub fn received_blocks(runs: &[usize], rank: usize) -> Vec<usize> {
    let earlier: usize = runs[..rank].iter().sum();
    let later: usize = runs[rank + 1..].iter().sum();
    [earlier, runs[rank], later]
        .into_iter()
        .filter(|&len| len > 0)
        .collect()
}

/// Steps 1 to 4 (see the module) on the device, arguments already checked.
#[allow(clippy::type_complexity)]
pub(super) fn sort<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: Option<&Sharded<V>>,
    options: &SortOptions,
    placement: SortPlacement,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    if world > MAX_WORLD {
        return Err(Error::invalid(
            "group",
            format!("the partition-first sort takes at most {MAX_WORLD} ranks, not {world}"),
        ));
    }
    let bits = options.bit_range::<K>()?;
    let descending = options.order.is_descending();
    let (splitters, lengths) = sampled_splitters(group, keys, descending, &bits)?;
    let (partitioned_keys, partitioned_values, starts) =
        partition(group, keys, values, &splitters, descending, &bits)?;
    // The receive and output buffers, reserved while the partition runs.
    // SAFETY (both): `exchange_and_sort` cuts them to the buckets and
    // writes every element before reading it.
    let reserved = unsafe {
        (
            reserved_shards::<K, V>(group, keys, values.is_some())?,
            reserved_shards::<K, V>(group, keys, values.is_some())?,
        )
    };
    let bound_count = world - 1;
    let bounds = gathered_bounds(group, &starts, bound_count)?;
    let (plan, bucket_lengths) = exchange_plan(&lengths, &bounds)?;
    let sorted = exchange_and_sort(
        group,
        (partitioned_keys, partitioned_values),
        reserved,
        &plan,
        &bucket_lengths,
        options,
    )?;
    placed(group, sorted, &bucket_lengths, placement)
}

/// Step 1: samples at the jittered positions, all-gathered with the shard
/// lengths and read back; returns the splitters every process picks and
/// every rank's shard length.
pub(super) fn sampled_splitters<K: SortKey>(
    group: &Group,
    keys: &Sharded<K>,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Vec<Option<Splitter>>, Vec<usize>)> {
    let world = group.world();
    let count = samples_per_rank(world);
    let mut samples = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(keys.views()) {
        let gpu = &rank.gpu;
        // Zeros: an empty shard sends defined bytes (ignored by the host).
        let mut part = DeviceBuffer::<K>::zeros(gpu, count)?;
        let positions: Vec<u64> = jittered_sample_positions(shard.len(), count, rank.rank)
            .into_iter()
            .map(|p| p as u64)
            .collect();
        if !positions.is_empty() {
            let positions = DeviceBuffer::from_host(gpu, &positions)?;
            let kernel =
                sample_sort_kernel::<K>(gpu, &format!("dist_gather_samples_{}", K::SUFFIX))?;
            let (config, _) = grid_1d(count as u64, BLOCK_THREADS, 1, 0)?;
            let mut args = KernelArgs::new();
            args.input(&shard)
                .input(&positions.view())
                .scalar(count as u32)
                .output(&mut part.view_mut());
            // SAFETY: gather_samples(const K* keys, const u64* positions, u32
            // count, K* samples): the argument list matches; positions holds
            // count positions below the shard's length
            // (jittered_sample_positions), samples count keys.
            unsafe { gpu.launch(&kernel, config, &args)? };
        }
        samples.push(part);
    }
    // An empty shard's samples are ignored by choose_splitters_at.
    let (lengths, sample_values) =
        gathered_samples(group, keys, &samples, count, descending, bits)?;
    let positions: Vec<Vec<usize>> = lengths
        .iter()
        .enumerate()
        .map(|(rank, &len)| jittered_sample_positions(len, count, rank))
        .collect();
    Ok((
        choose_splitters_at(&sample_values, &positions, &lengths),
        lengths,
    ))
}

/// Step 2: every local shard partitioned into new buffers; returns them
/// and each rank's bucket starts (`world − 1` positions, on its device).
#[allow(clippy::type_complexity)]
fn partition<K: SortKey, V: DeviceType>(
    group: &Group,
    keys: &Sharded<K>,
    values: Option<&Sharded<V>>,
    splitters: &[Option<Splitter>],
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> Result<(Sharded<K>, Option<Sharded<V>>, Vec<DeviceBuffer<u64>>)> {
    let world = group.world();
    let splitter_count = world - 1;
    let lens = keys.lens().to_vec();
    let key_views = keys.views();
    let value_views = values.map(|v| v.views());
    // SAFETY: the scatter writes every element of every shard.
    let (mut out_keys, mut out_values) =
        unsafe { uninit_shards::<K, V>(group, &lens, values.is_some())? };
    let mut key_targets = out_keys.views_mut();
    let mut value_targets = out_values.as_mut().map(|v| v.views_mut());
    let value_bytes = if values.is_some() { V::BYTES } else { 1 };
    let mut all_starts = Vec::with_capacity(group.local_count());
    for (i, rank) in group.ranks.iter().enumerate() {
        let gpu = &rank.gpu;
        let shard = key_views[i];
        let len = shard.len();
        let mut starts = DeviceBuffer::<u64>::zeros(gpu, splitter_count)?;
        if len > 0 {
            let work = DeviceBuffer::from_host(gpu, &bucket_work(rank.rank, splitters))?;
            let tiles = len.div_ceil(PART_TILE);
            // SAFETY (both): the counts kernel writes every (bucket, tile)
            // cell, the scan every offset.
            let mut counts = unsafe { DeviceBuffer::<u64>::uninit(gpu, world * tiles)? };
            let mut offsets = unsafe { DeviceBuffer::<u64>::uninit(gpu, world * tiles)? };
            let (config, _) = grid_1d(len as u64, PART_THREADS, PART_ITEMS, 0)?;
            let kernel =
                sample_sort_kernel::<K>(gpu, &format!("dist_partition_counts_{}", K::SUFFIX))?;
            let mut args = KernelArgs::new();
            args.input(&shard)
                .scalar(len as u64)
                .input(&work.view())
                .scalar(splitter_count as u32)
                .scalar(u32::from(descending))
                .scalar(bits.start)
                .scalar(bits.end)
                .output(&mut counts.view_mut())
                .scalar(tiles as u64);
            // SAFETY: partition_counts(const K* keys, u64 n, const u64* work,
            // u32 splitters, u32 descending, u32 begin, u32 end, u64* counts,
            // u64 tiles): the argument list matches; one block per tile of
            // PART_TILE keys (grid_1d), work holds 2·splitters words with
            // splitters < MAX_WORLD, counts (splitters + 1)·tiles cells.
            unsafe { gpu.launch(&kernel, config, &args)? };
            scan::scan_into(
                gpu,
                counts.view(),
                offsets.view_mut(),
                &Sum,
                ScanKind::Exclusive { initial: 0 },
                &ScanOptions::default(),
            )?;
            drop(counts);
            let kernel =
                sample_sort_kernel::<K>(gpu, &format!("dist_bucket_starts_{}", K::SUFFIX))?;
            let (starts_config, _) = grid_1d(splitter_count as u64, BLOCK_THREADS, 1, 0)?;
            let mut args = KernelArgs::new();
            args.input(&offsets.view())
                .scalar(tiles as u64)
                .scalar(splitter_count as u32)
                .output(&mut starts.view_mut());
            // SAFETY: bucket_starts(const u64* offsets, u64 tiles, u32
            // splitters, u64* starts): the argument list matches; it reads
            // offsets[(b + 1)·tiles] for b < splitters, inside the world·tiles
            // offsets, and writes splitters starts.
            unsafe { gpu.launch(&kernel, starts_config, &args)? };
            let (values_in, values_out) = match (&value_views, value_targets.as_mut()) {
                (Some(v), Some(t)) => (v[i].device_ptr(), t[i].reborrow().device_ptr()),
                _ => (0, 0),
            };
            let kernel = sample_sort_kernel::<K>(gpu, &scatter_entry::<K>(value_bytes))?;
            let mut args = KernelArgs::new();
            args.input(&shard)
                .scalar(values_in)
                .scalar(len as u64)
                .input(&work.view())
                .scalar(splitter_count as u32)
                .scalar(u32::from(descending))
                .scalar(bits.start)
                .scalar(bits.end)
                .input(&offsets.view())
                .scalar(tiles as u64)
                .output(&mut key_targets[i])
                .scalar(values_out);
            // SAFETY: partition_scatter(const K* keys, const V* values, u64 n,
            // const u64* work, u32 splitters, u32 descending, u32 begin, u32
            // end, const u64* offsets, u64 tiles, K* out_keys, V* out_values):
            // the argument list matches, V of `value_bytes` bytes (the
            // values' width, checked by sort_pairs; 1 with null value
            // pointers for keys alone); the same grid as the counts, whose
            // scan gives every key a distinct slot below n; inputs and
            // outputs are distinct buffers of n elements.
            unsafe { gpu.launch(&kernel, config, &args)? };
            drop((work, offsets)); // stream-ordered frees, after the kernels
        }
        all_starts.push(starts);
    }
    drop((key_targets, value_targets));
    Ok((out_keys, out_values, all_starts))
}

/// Steps 3 and 4: the buckets sent on the side streams while each rank
/// sorts the one it keeps, then the received blocks sorted and merged.
#[allow(clippy::type_complexity)]
fn exchange_and_sort<K: SortKey, V: DeviceType>(
    group: &Group,
    partitioned: (Sharded<K>, Option<Sharded<V>>),
    reserved: (
        (Sharded<K>, Option<Sharded<V>>),
        (Sharded<K>, Option<Sharded<V>>),
    ),
    plan: &[Move],
    bucket_lengths: &[usize],
    options: &SortOptions,
) -> Result<(Sharded<K>, Option<Sharded<V>>)> {
    let world = group.world();
    let descending = options.order.is_descending();
    let bits = options.bit_range::<K>()?;
    let (part_keys, part_values) = partitioned;
    let local: Vec<usize> = group.ranks.iter().map(|r| bucket_lengths[r.rank]).collect();
    // SAFETY (both): the exchange writes every received run of `recv`
    // but the rank's own; the sorts of step 4 write every element of
    // `out`; the merge rounds write each element of the buffer they write
    // before it is read.
    let (mut recv_keys, mut recv_values) = unsafe { fitted_pairs(group, reserved.0, &local)? };
    let (mut out_keys, mut out_values) = unsafe { fitted_pairs(group, reserved.1, &local)? };

    // (3) the side streams wait for the partition, then exchange.
    for rank in &group.ranks {
        join(&rank.side, &rank.gpu)?;
    }
    let sides: Vec<&Gpu> = group.ranks.iter().map(|r| &r.side).collect();
    run_moves_on(
        group,
        &sides,
        &part_keys.views(),
        plan,
        &mut recv_keys.views_mut(),
        LocalPieces::Skip,
    )?;
    if let (Some(source), Some(target)) = (&part_values, recv_values.as_mut()) {
        run_moves_on(
            group,
            &sides,
            &source.views(),
            plan,
            &mut target.views_mut(),
            LocalPieces::Skip,
        )?;
    }
    // Meanwhile each rank sorts the bucket it keeps into its place.
    sort_pieces(
        group,
        (&part_keys, part_values.as_ref()),
        (&mut out_keys, out_values.as_mut()),
        |rank| {
            plan.iter()
                .filter(|m| m.from_rank == rank && m.to_rank == rank)
                .map(|m| {
                    (
                        m.from_offset..m.from_offset + m.len,
                        m.to_offset..m.to_offset + m.len,
                    )
                })
                .collect()
        },
        options,
    )?;
    // (4) the received blocks, once the exchange is done.
    for rank in &group.ranks {
        join(&rank.gpu, &rank.side)?;
    }
    drop((part_keys, part_values));
    sort_pieces(
        group,
        (&recv_keys, recv_values.as_ref()),
        (&mut out_keys, out_values.as_mut()),
        |rank| {
            let runs = run_lengths(plan, world, rank);
            let earlier: usize = runs[..rank].iter().sum();
            let own_end = earlier + runs[rank];
            [0..earlier, own_end..bucket_lengths[rank]]
                .into_iter()
                .filter(|range| !range.is_empty())
                .map(|range| (range.clone(), range))
                .collect()
        },
        options,
    )?;
    merge_rounds_on_ranks(
        group,
        (out_keys, out_values),
        (recv_keys, recv_values),
        |rank| received_blocks(&run_lengths(plan, world, rank), rank),
        descending,
        &bits,
    )
}

/// Stable local sorts of pieces of `sources` into pieces of `targets` on
/// every local rank's main stream: `pieces(rank)` lists the (source
/// range, target range) pairs of global rank `rank`.
#[allow(clippy::type_complexity)]
fn sort_pieces<K: SortKey, V: DeviceType>(
    group: &Group,
    sources: (&Sharded<K>, Option<&Sharded<V>>),
    targets: (&mut Sharded<K>, Option<&mut Sharded<V>>),
    pieces: impl Fn(usize) -> Vec<(Range<usize>, Range<usize>)>,
    options: &SortOptions,
) -> Result<()> {
    let key_sources = sources.0.views();
    let value_sources = sources.1.map(|v| v.views());
    let mut key_targets = targets.0.views_mut();
    let mut value_targets = targets.1.map(|v| v.views_mut());
    for (i, rank) in group.ranks.iter().enumerate() {
        for (from, to) in pieces(rank.rank) {
            let values = match (&value_sources, value_targets.as_mut()) {
                (Some(v), Some(t)) => {
                    Some((v[i].slice(from.clone())?, t[i].slice_mut(to.clone())?))
                }
                _ => None,
            };
            sort_piece(
                &rank.gpu,
                key_sources[i].slice(from)?,
                key_targets[i].slice_mut(to)?,
                values,
                options,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_placement_thread_per_bucket_and_warp() {
        assert_eq!(
            MAX_WORLD * (PART_THREADS as usize / 32),
            PART_THREADS as usize
        );
        assert_eq!(PART_TILE, 2048);
    }
}
