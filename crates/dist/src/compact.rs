//! Distributed compaction: keep the items of a [`Sharded`] array that pass
//! a predicate (or whose flag is set), in their global order.
//!
//! **Steps.** (1) Every rank compacts its own shard with the single-GPU
//! `compact::select_if_into` / `select_flagged_into` into a buffer of its
//! shard's length, the count on the device. (2) One `ncclAllGather` of the
//! counts (one u64 per rank), read back once: the output layout. (3) With
//! [`Placement::AsKept`] the kept items stay where they are (shard i
//! holds `counts[i]` items). With [`Placement::Even`] they are moved into
//! the even blocks of the total ([`rebalance_plan`]): a piece that stays on
//! its rank is a device copy, every other piece one `ncclSend`/`ncclRecv`
//! pair, all in one NCCL group.
//!
//! **Bytes moved per rank** (shard of m items of s bytes, k kept): what the
//! single-GPU compaction moves (about m·s + k·s), 8·world over NCCL for the
//! counts, and with `Even` at most k·s sent and the even share received.
//!
//! The output is the single-GPU compaction's, bit for bit, for every type.

use compact::{CompactAlgorithm, Predicate};
use gpu_core::{DeviceBuffer, Element};

use crate::layout::{even_lengths, rebalance_plan};
use crate::moves::run_moves;
use crate::{Error, Group, Result, Sharded};

/// Where the kept items of a distributed compaction end up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Each rank keeps what it selected (shard lengths are the per-rank
    /// counts; nothing moves between GPUs).
    #[default]
    AsKept,
    /// The kept items are rebalanced into even blocks of their total over
    /// the world, their global order kept.
    Even,
}

/// The items of `input` for which `predicate` holds, in order.
///
/// ```no_run
/// use compact::Predicate;
/// use dist::Placement;
/// let group = dist::Group::all()?;
/// let data: Vec<i32> = (0..1000).map(|i| i % 5 - 2).collect();
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let kept = dist::select_if(&group, &x, &Predicate::Gt(0), Placement::Even)?;
/// assert_eq!(kept.gather_to_host(&group)?, compact::cpu::select_if(&data, &Predicate::Gt(0)));
/// # Ok::<(), dist::Error>(())
/// ```
pub fn select_if<T: Element>(
    group: &Group,
    input: &Sharded<T>,
    predicate: &Predicate<T>,
    placement: Placement,
) -> Result<Sharded<T>> {
    input.check_group("input shards", group)?;
    let mut selected = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(input.views()) {
        let (mut output, mut count) = local_buffers::<T>(&rank.gpu, shard.len())?;
        compact::select_if_into(
            &rank.gpu,
            shard,
            predicate,
            output.view_mut(),
            count.view_mut(),
            CompactAlgorithm::default(),
        )?;
        selected.push((output, count));
    }
    place(group, selected, placement)
}

/// The items of `input` whose flag (`flags`, same layout, non-zero =
/// keep) is set, in order.
///
/// ```no_run
/// use dist::Placement;
/// let group = dist::Group::all()?;
/// let data = [5i32, -1, 7, 0, 3];
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let f = dist::Sharded::scatter_from_host(&group, &[1u8, 0, 1, 0, 1])?;
/// let kept = dist::select_flagged(&group, &x, &f, Placement::AsKept)?;
/// assert_eq!(kept.gather_to_host(&group)?, [5, 7, 3]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn select_flagged<T: Element>(
    group: &Group,
    input: &Sharded<T>,
    flags: &Sharded<u8>,
    placement: Placement,
) -> Result<Sharded<T>> {
    input.check_group("input shards", group)?;
    flags.check_group("flag shards", group)?;
    for (&items, &flag_count) in input.lens().iter().zip(flags.lens()) {
        Error::check_len("flag shard", items, flag_count)?;
    }
    let mut selected = Vec::with_capacity(group.local_count());
    for ((rank, shard), shard_flags) in group.ranks.iter().zip(input.views()).zip(flags.views()) {
        let (mut output, mut count) = local_buffers::<T>(&rank.gpu, shard.len())?;
        compact::select_flagged_into(
            &rank.gpu,
            shard,
            shard_flags,
            output.view_mut(),
            count.view_mut(),
            CompactAlgorithm::default(),
        )?;
        selected.push((output, count));
    }
    place(group, selected, placement)
}

/// A rank's output (room for every item) and its device count.
fn local_buffers<T: Element>(
    gpu: &gpu_core::Gpu,
    len: usize,
) -> Result<(DeviceBuffer<T>, DeviceBuffer<u64>)> {
    // SAFETY: only output[0..count) is ever read, and the compaction writes it.
    let output = unsafe { DeviceBuffer::<T>::uninit(gpu, len)? };
    let count = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    Ok((output, count))
}

/// Steps 2 and 3: the counts exchanged, then the items left or rebalanced.
fn place<T: Element>(
    group: &Group,
    selected: Vec<(DeviceBuffer<T>, DeviceBuffer<u64>)>,
    placement: Placement,
) -> Result<Sharded<T>> {
    let (buffers, counts): (Vec<_>, Vec<_>) = selected.into_iter().unzip();
    let gathered = group.all_gather_one(&counts)?;
    let counts: Vec<usize> = gathered[0]
        .to_host(&group.ranks[0].gpu)?
        .into_iter()
        .map(|c| c as usize)
        .collect();
    match placement {
        Placement::AsKept => {
            let lens = group.ranks.iter().map(|r| counts[r.rank]).collect();
            Ok(Sharded::from_parts(buffers, lens))
        }
        Placement::Even => rebalance(group, &buffers, &counts),
    }
}

/// Moves the kept items (`counts[r]` at the start of rank r's buffer) into
/// even blocks.
fn rebalance<T: Element>(
    group: &Group,
    sources: &[DeviceBuffer<T>],
    counts: &[usize],
) -> Result<Sharded<T>> {
    let total: usize = counts.iter().sum();
    let targets = even_lengths(total, group.world());
    let local_lens: Vec<usize> = group.ranks.iter().map(|r| targets[r.rank]).collect();
    // SAFETY: the plan covers every element of every target block
    // (`layout::rebalance_plan`'s contract, tested on the host).
    let mut output = unsafe { Sharded::<T>::uninit(group, &local_lens)? };
    let plan = rebalance_plan(counts);
    let source_views: Vec<_> = sources.iter().map(|b| b.view()).collect();
    let mut targets_mut = output.views_mut();
    run_moves(group, &source_views, &plan, &mut targets_mut)?;
    drop(targets_mut);
    Ok(output)
}
