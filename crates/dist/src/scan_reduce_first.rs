//! The distributed scan by reduce first: the prefix of every rank is known
//! before its scan starts, so no pass over the output follows.
//!
//! **Steps.** (1) Every rank reduces its shard (`reduce::reduce_into`, one
//! element). (2) One `ncclAllGather` of the totals, read back once to the
//! host. (3) The host folds each rank's prefix (the initial value of a
//! seeded kind, then the totals before the rank, in rank order:
//! [`reduce_first_prefixes`]). (4) Every rank scans its whole shard into
//! its output shard (index for index), seeded with its prefix
//! ([`reduce_first_local_kind`]): an exclusive scan takes it as its initial
//! value, an inclusive one (plain or from an initial value) becomes the
//! inclusive scan from the prefix (`ScanKind::InclusiveFrom`), and rank 0
//! of a plain inclusive scan, which has no prefix, scans plainly. Input and
//! output shards start where the allocations do, so the single-GPU scan
//! keeps its 16-byte vector path and its table's tuning.
//!
//! **Bytes moved per rank** (shard of m items of s bytes): m·s for the
//! reduction, 2·m·s for the scan, so 3·m·s against the prefix pass's 4·m·s
//! on ranks after the first; s·world over NCCL. **Synchronises** the host
//! once: the gathered totals are read back before the scans are enqueued
//! (nothing of any shard is read to the host).
//!
//! Integers give the single-GPU scan bit for bit; floats differ by rounding
//! (each prefix comes from a reduction's association, not the scan's).

use gpu_core::{DeviceBuffer, Element, Operator};
use reduce::ReduceAlgorithm;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

use crate::{Group, Result, Sharded};

/// Each rank's prefix from the shard totals (rank order): for a seeded
/// kind (exclusive, or inclusive from `initial`)
/// `initial ⊕ totals[0] ⊕ … ⊕ totals[r-1]` (`initial` on rank 0); for a
/// plain inclusive scan `None` on rank 0 and `totals[0] ⊕ … ⊕ totals[r-1]`
/// after it.
///
/// ```
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let prefixes = dist::scan::reduce_first_prefixes(&[3, 4, 5], &Sum, ScanKind::Exclusive { initial: 10 });
/// assert_eq!(prefixes, [Some(10), Some(13), Some(17)]);
/// let prefixes = dist::scan::reduce_first_prefixes(&[3, 4, 5], &Sum, ScanKind::InclusiveFrom { initial: 10 });
/// assert_eq!(prefixes, [Some(10), Some(13), Some(17)]);
/// let prefixes = dist::scan::reduce_first_prefixes(&[3, 4, 5], &Sum, ScanKind::Inclusive);
/// assert_eq!(prefixes, [None, Some(3), Some(7)]);
/// ```
pub fn reduce_first_prefixes<T: Element, O: Operator<T>>(
    totals: &[T],
    op: &O,
    kind: ScanKind<T>,
) -> Vec<Option<T>> {
    let mut running = kind.initial();
    totals
        .iter()
        .map(|&total| {
            let prefix = running;
            running = Some(match running {
                None => total,
                Some(value) => op.combine(value, total),
            });
            prefix
        })
        .collect()
}

/// The kind a rank scans its whole shard with, given the global `kind` and
/// the rank's `prefix` ([`reduce_first_prefixes`]): an exclusive scan from
/// the prefix, an inclusive scan (plain or seeded) from the prefix, and a
/// plain inclusive scan where there is no prefix (rank 0 of a plain
/// inclusive scan).
///
/// ```
/// use scan::ScanKind;
/// use dist::scan::reduce_first_local_kind;
/// assert_eq!(reduce_first_local_kind(ScanKind::Inclusive, None), ScanKind::<i32>::Inclusive);
/// assert_eq!(reduce_first_local_kind(ScanKind::Inclusive, Some(7)), ScanKind::InclusiveFrom { initial: 7 });
/// assert_eq!(
///     reduce_first_local_kind(ScanKind::InclusiveFrom { initial: 1 }, Some(7)),
///     ScanKind::InclusiveFrom { initial: 7 }
/// );
/// assert_eq!(
///     reduce_first_local_kind(ScanKind::Exclusive { initial: 1 }, Some(7)),
///     ScanKind::Exclusive { initial: 7 }
/// );
/// ```
pub fn reduce_first_local_kind<T: Element>(kind: ScanKind<T>, prefix: Option<T>) -> ScanKind<T> {
    match (kind, prefix) {
        (ScanKind::Exclusive { .. }, Some(initial)) => ScanKind::Exclusive { initial },
        (_, Some(initial)) => ScanKind::InclusiveFrom { initial },
        // Only a plain inclusive scan's rank 0 has no prefix.
        (_, None) => kind,
    }
}

/// The scan of `input` into `output` (same layout) over every rank by
/// reduce first (see the module): 3·m·s bytes per rank instead of
/// [`scan_into`](crate::scan_into)'s 4·m·s on the ranks after the first,
/// at the price of one host synchronisation. Same arguments (every
/// [`ScanKind`]), same results.
///
/// ```no_run
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let group = dist::Group::all()?;
/// let data: Vec<i64> = (0..100_000).collect();
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let mut y = dist::scan(&group, &x, &Sum, ScanKind::Inclusive)?; // any array of the same layout
/// dist::scan_into_reduce_first(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
/// assert_eq!(y.gather_to_host(&group)?, scan::cpu::inclusive(&data, &Sum));
/// # Ok::<(), dist::Error>(())
/// ```
pub fn scan_into_reduce_first<T: Element, O: Operator<T>>(
    group: &Group,
    input: &Sharded<T>,
    output: &mut Sharded<T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<()> {
    input.check_group("input shards", group)?;
    output.check_group("output shards", group)?;
    crate::scan::validate::<T>(input.lens(), output.lens())?;
    scan::check_element::<T, O>(op, ScanAlgorithm::Auto)?;
    let inputs = input.views();
    // (1) the shard totals.
    let mut totals = Vec::with_capacity(inputs.len());
    for (rank, shard) in group.ranks.iter().zip(&inputs) {
        // SAFETY: reduce_into writes the element before it is read.
        let mut total = unsafe { DeviceBuffer::<T>::uninit(&rank.gpu, 1)? };
        reduce::reduce_into(
            &rank.gpu,
            *shard,
            op,
            total.view_mut(),
            ReduceAlgorithm::default(),
        )?;
        totals.push(total);
    }
    // (2) exchanged and read back once.
    let gathered = group.all_gather_one(&totals)?;
    let all_totals = gathered[0].to_host(&group.ranks[0].gpu)?;
    // (3) the prefixes, on the host.
    let prefixes = reduce_first_prefixes(&all_totals, op, kind);
    // (4) every whole shard scanned from its prefix.
    for ((rank, shard), out) in group.ranks.iter().zip(&inputs).zip(output.views_mut()) {
        let local = reduce_first_local_kind(kind, prefixes[rank.rank]);
        scan::scan_into(&rank.gpu, *shard, out, op, local, &ScanOptions::default())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::{CustomOp, Max, Sum};
    use proptest::prelude::*;

    /// The steps on the host with the CPU scan and fold.
    fn model<T: Element, O: Operator<T>>(
        data: &[T],
        lens: &[usize],
        op: &O,
        kind: ScanKind<T>,
    ) -> Vec<T> {
        let (starts, _) = crate::layout::offsets(lens);
        let shards: Vec<&[T]> = starts
            .iter()
            .zip(lens)
            .map(|(&s, &l)| &data[s..s + l])
            .collect();
        let totals: Vec<T> = shards
            .iter()
            .map(|shard| shard.iter().fold(op.identity(), |a, &b| op.combine(a, b)))
            .collect();
        let prefixes = reduce_first_prefixes(&totals, op, kind);
        shards
            .iter()
            .zip(prefixes)
            .flat_map(|(shard, prefix)| {
                scan::cpu::scan(shard, op, reduce_first_local_kind(kind, prefix))
            })
            .collect()
    }

    proptest! {
        #[test]
        fn reduce_first_gives_the_global_scan(
            data in proptest::collection::vec(any::<i32>(), 0..300),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
            initial in any::<i32>(),
        ) {
            let lens = crate::layout::split_at_cuts(data.len(), &cuts);
            let last = CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| if b != 0 { b } else { a }).unwrap();
            for kind in [
                ScanKind::Inclusive,
                ScanKind::Exclusive { initial },
                ScanKind::InclusiveFrom { initial },
            ] {
                prop_assert_eq!(model(&data, &lens, &Sum, kind), scan::cpu::scan(&data, &Sum, kind));
                prop_assert_eq!(model(&data, &lens, &Max, kind), scan::cpu::scan(&data, &Max, kind));
                prop_assert_eq!(model(&data, &lens, &last, kind), scan::cpu::scan(&data, &last, kind));
            }
        }
    }
}
