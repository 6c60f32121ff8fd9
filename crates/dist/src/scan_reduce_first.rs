//! The distributed scan by reduce first: the prefix of every rank is known
//! before its scan starts, so no pass over the output follows.
//!
//! **Steps.** (1) Every rank reduces its shard (`reduce::reduce_into`, one
//! element). (2) One `ncclAllGather` of the totals, read back once to the
//! host. (3) The host folds each rank's prefix (the exclusive initial value,
//! then the totals before the rank, in rank order). (4) Every rank scans its
//! shard seeded with its prefix: an exclusive scan takes it as its initial
//! value; an inclusive scan of rank r > 0 is the exclusive scan of
//! `x[1..m]` seeded with `prefix ⊕ x[0]` written to `out[0..m-1]`, and
//! `out[m-1] = prefix ⊕ total` (both values known on the host). That scan
//! reads one element past the shard's aligned start and writes from it, so
//! it cannot use 16-byte vectors; it runs the blocked tile layout, whose
//! element-wise accesses stay coalesced ([`reduce_first_scan_options`]).
//!
//! **Bytes moved per rank** (shard of m items of s bytes): m·s for the
//! reduction, 2·m·s for the scan, so 3·m·s against the prefix pass's 4·m·s
//! on ranks after the first; s·world over NCCL. **Synchronises** the host
//! (the totals and each shard's first item are read back) before the scans
//! are enqueued.
//!
//! Integers give the single-GPU scan bit for bit; floats differ by rounding
//! (each prefix comes from a reduction's association, not the scan's, and
//! the inclusive form's ranks after the first scan with blocked tiles).

use gpu_core::{DeviceBuffer, Element, Operator};
use reduce::ReduceAlgorithm;
use scan::policy::{LookbackPolicy, Policy, StatusEncoding};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

use crate::{Group, Result, Sharded};

/// Each rank's prefix from the shard totals (rank order): for an
/// exclusive scan `initial ⊕ totals[0] ⊕ … ⊕ totals[r-1]` (`initial` on
/// rank 0); for an inclusive scan `None` on rank 0 and
/// `totals[0] ⊕ … ⊕ totals[r-1]` after it.
///
/// ```
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let prefixes = dist::scan::reduce_first_prefixes(&[3, 4, 5], &Sum, ScanKind::Exclusive { initial: 10 });
/// assert_eq!(prefixes, [Some(10), Some(13), Some(17)]);
/// let prefixes = dist::scan::reduce_first_prefixes(&[3, 4, 5], &Sum, ScanKind::Inclusive);
/// assert_eq!(prefixes, [None, Some(3), Some(7)]);
/// ```
pub fn reduce_first_prefixes<T: Element, O: Operator<T>>(
    totals: &[T],
    op: &O,
    kind: ScanKind<T>,
) -> Vec<Option<T>> {
    let mut running = match kind {
        ScanKind::Inclusive => None,
        ScanKind::Exclusive { initial } => Some(initial),
    };
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

/// The blocked-layout (shared-memory exchange) look-back policy the tuning
/// sweep measured fastest for `element_bytes`-byte elements
/// (`docs/tuning.md`): 512 × 16 with delays of 1245 / 648 ns for 4-byte
/// elements, 256 × 12 with the 128-bit status and delays of 1290 / 632 ns
/// for 8-byte ones.
///
/// ```
/// use scan::policy::{LookbackPolicy, TileLayout};
/// for bytes in [4, 8] {
///     let policy = dist::scan::blocked_scan_policy(bytes);
///     assert_eq!(policy.layout(), TileLayout::Blocked);
///     assert!(policy.validate_lookback(bytes).is_ok());
/// }
/// ```
pub fn blocked_scan_policy(element_bytes: usize) -> Policy {
    if element_bytes == 4 {
        Policy::shape(512, 16).with_delays(1245, 648)
    } else {
        Policy::shape(256, 12)
            .with_status(StatusEncoding::Packed128)
            .with_delays(1290, 632)
    }
}

/// The scan options for a scan reading `in_ptr` and writing `out_ptr`.
/// Both 16-byte aligned (a whole shard): the defaults, whose warp-striped
/// tiles move 16-byte vectors. Otherwise (the inclusive form's `x[1..m]`
/// sits one element past the shard's aligned start, and its output
/// `out[0..m-1]` at the start, so no offset aligns both) the single-GPU
/// scan cannot take its vector path and falls back to element-wise
/// accesses in the same layout, where the 32 lanes of a warp-striped load
/// or store touch items 16 bytes apart (a quarter of each sector they
/// fetch, four instructions for what one vector access moves). The
/// blocked layout's element-wise path instead reads and writes 32
/// consecutive items per warp instruction and regroups them through
/// shared memory, so the misaligned scan keeps whole sectors
/// ([`blocked_scan_policy`]). Integers give the same results in either
/// layout; floats round as the blocked tile associates.
///
/// ```
/// use scan::policy::TileLayout;
/// let aligned = dist::scan::reduce_first_scan_options(0x1000, 0x2000, 4);
/// assert!(aligned.policy.is_none()); // the defaults
/// let shifted = dist::scan::reduce_first_scan_options(0x1004, 0x2000, 4);
/// assert_eq!(shifted.policy.map(|p| p.layout()), Some(TileLayout::Blocked));
/// ```
pub fn reduce_first_scan_options(in_ptr: u64, out_ptr: u64, element_bytes: usize) -> ScanOptions {
    let options = ScanOptions::default();
    if in_ptr.is_multiple_of(16) && out_ptr.is_multiple_of(16) {
        return options;
    }
    let blocked = blocked_scan_policy(element_bytes);
    match blocked.validate_lookback(element_bytes) {
        Ok(()) => options.with_policy(blocked),
        // An element size the policy does not fit: the defaults,
        // element-wise (the scan refuses sizes dist does not take).
        Err(_) => options,
    }
}

/// The scan of `input` into `output` (same layout) over every rank by
/// reduce first (see the module): 3·m·s bytes per rank instead of
/// [`scan_into`](crate::scan_into)'s 4·m·s on the ranks after the first,
/// at the price of one host synchronisation. Same arguments, same results.
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
    // Each shard's first item, for the inclusive form (read while the
    // streams are idle).
    let mut firsts = Vec::with_capacity(inputs.len());
    for (rank, shard) in group.ranks.iter().zip(&inputs) {
        firsts.push(match (kind, shard.is_empty()) {
            (ScanKind::Inclusive, false) if rank.rank > 0 => {
                Some(shard.slice(0..1)?.to_host(&rank.gpu)?[0])
            }
            _ => None,
        });
    }
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
    // (4) the seeded scans.
    for (((rank, shard), mut out), first) in group
        .ranks
        .iter()
        .zip(&inputs)
        .zip(output.views_mut())
        .zip(firsts)
    {
        let gpu = &rank.gpu;
        let options = ScanOptions::default();
        match (kind, prefixes[rank.rank], first) {
            (ScanKind::Exclusive { .. }, Some(prefix), _) => {
                let seeded = ScanKind::Exclusive { initial: prefix };
                scan::scan_into(gpu, *shard, out, op, seeded, &options)?;
            }
            (ScanKind::Inclusive, Some(prefix), Some(first)) => {
                let m = shard.len();
                let last = op.combine(prefix, all_totals[rank.rank]);
                // The last item first: the host copy waits for the stream,
                // which is idle here, not for the scan enqueued after it.
                out.slice_mut(m - 1..m)?.copy_from_host(gpu, &[last])?;
                let seeded = ScanKind::Exclusive {
                    initial: op.combine(prefix, first),
                };
                let body = out.into_slice(0..m - 1)?;
                let tail = shard.slice(1..m)?;
                let options =
                    reduce_first_scan_options(tail.device_ptr(), body.device_ptr(), T::BYTES);
                scan::scan_into(gpu, tail, body, op, seeded, &options)?;
            }
            // Rank 0 of an inclusive scan, and empty shards.
            _ => scan::scan_into(gpu, *shard, out, op, kind, &options)?,
        }
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
        let mut global = Vec::new();
        for (rank, shard) in shards.iter().enumerate() {
            match (kind, prefixes[rank]) {
                (ScanKind::Exclusive { .. }, Some(prefix)) => global.extend(scan::cpu::scan(
                    shard,
                    op,
                    ScanKind::Exclusive { initial: prefix },
                )),
                (ScanKind::Inclusive, Some(prefix)) if !shard.is_empty() => {
                    let m = shard.len();
                    let seeded = ScanKind::Exclusive {
                        initial: op.combine(prefix, shard[0]),
                    };
                    global.extend(scan::cpu::scan(&shard[1..], op, seeded));
                    global.push(op.combine(prefix, totals[rank]));
                    assert_eq!(global.len(), starts[rank] + m);
                }
                _ => global.extend(scan::cpu::scan(shard, op, kind)),
            }
        }
        global
    }

    #[test]
    fn misaligned_views_get_the_blocked_policy() {
        use scan::policy::TileLayout;
        for bytes in [4usize, 8] {
            let aligned = reduce_first_scan_options(0x1000, 0x2000, bytes);
            assert_eq!(aligned, ScanOptions::default());
            for (in_ptr, out_ptr) in [(0x1000 + bytes as u64, 0x2000), (0x1000, 0x2008)] {
                let options = reduce_first_scan_options(in_ptr, out_ptr, bytes);
                let policy = options.policy.expect("a misaligned view gets a policy");
                assert_eq!(policy, blocked_scan_policy(bytes));
                assert_eq!(policy.layout(), TileLayout::Blocked);
                assert!(policy.validate_lookback(bytes).is_ok());
                assert!(scan::validate(1000, 1000, &options).is_ok());
            }
        }
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
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial }] {
                prop_assert_eq!(model(&data, &lens, &Sum, kind), scan::cpu::scan(&data, &Sum, kind));
                prop_assert_eq!(model(&data, &lens, &Max, kind), scan::cpu::scan(&data, &Max, kind));
                prop_assert_eq!(model(&data, &lens, &last, kind), scan::cpu::scan(&data, &last, kind));
            }
        }
    }
}
