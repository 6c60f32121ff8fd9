//! Distributed reduction: every rank folds its shard with the single-GPU
//! `reduce::reduce_into` into one element, then the partials are combined
//! across ranks.
//!
//! - **Sum, product, max, min** on a type NCCL reduces (`i8 u8 i32 u32 i64
//!   u64 f16 bf16 f32 f64`): one in-place `ncclAllReduce` of the one-element
//!   partials, the result on every rank's device.
//! - **Every other operator** (bit operators, custom operators, and the
//!   types NCCL has no arithmetic for, `i16 u16`): one `ncclAllGather` of the
//!   partials (as bytes), read back once and folded on the host in rank
//!   order (so a non-commutative associative operator gives the global
//!   fold), the value written back to every rank.
//!
//! **Bytes moved per rank:** m·s for the local reduction (a shard of m
//! items of s bytes), s (all-reduce) or world·s (all-gather) over NCCL.
//!
//! **Determinism.** Integers exact (sums and products wrapping, as on one
//! GPU). Float sums combine the partials in NCCL's order, which is fixed
//! for a given communicator and size, and differ from one GPU's sum by
//! rounding.

use gpu_core::{DeviceBuffer, Element, Operator, Sum};
use reduce::ReduceAlgorithm;

use crate::nccl::{grouped, nccl_op, nccl_type};
use crate::{Group, Replicated, Result, Sharded};

/// `op` folded over the whole array, left on every local rank's device
/// (one element each). Enqueued on every rank's stream; synchronises only
/// for an operator NCCL cannot reduce (the partials are folded on the host).
///
/// ```no_run
/// use gpu_core::Max;
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &[4i64, -9, 12, 3])?;
/// let top = dist::reduce_replicated(&group, &x, &Max)?;
/// assert_eq!(top.to_host(&group)?, [12]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn reduce_replicated<T: Element, O: Operator<T>>(
    group: &Group,
    input: &Sharded<T>,
    op: &O,
) -> Result<Replicated<T>> {
    input.check_group("input shards", group)?;
    let mut partials = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(input.views()) {
        // SAFETY: reduce_into writes the one element (the identity for an
        // empty shard) before anything reads it.
        let mut partial = unsafe { DeviceBuffer::<T>::uninit(&rank.gpu, 1)? };
        reduce::reduce_into(
            &rank.gpu,
            shard,
            op,
            partial.view_mut(),
            ReduceAlgorithm::default(),
        )?;
        partials.push(partial);
    }
    match (nccl_type::<T>(), nccl_op::<T, O>(op)) {
        (Some(dtype), Some(nccl_op)) => {
            grouped(|| {
                for (rank, partial) in group.ranks.iter().zip(&mut partials) {
                    let ptr = partial.view_mut().device_ptr();
                    // SAFETY: `partial` holds one T on this rank's device and
                    // is returned to the caller, so it outlives the operation;
                    // in place (send == recv) is allowed by NCCL.
                    unsafe {
                        rank.comm
                            .all_reduce(&rank.gpu, ptr, ptr, 1, dtype, nccl_op)?
                    };
                }
                Ok(())
            })?;
            Ok(Replicated::new(partials))
        }
        _ => {
            let value = fold_gathered(group, &partials, op)?;
            let copies = group
                .ranks
                .iter()
                .map(|rank| DeviceBuffer::from_host(&rank.gpu, &[value]))
                .collect::<gpu_core::Result<Vec<_>>>()?;
            Ok(Replicated::new(copies))
        }
    }
}

/// All-gathers the one-element `partials` and folds them on the host in
/// rank order.
fn fold_gathered<T: Element, O: Operator<T>>(
    group: &Group,
    partials: &[DeviceBuffer<T>],
    op: &O,
) -> Result<T> {
    let gathered = group.all_gather_one(partials)?;
    let first = &group.ranks[0];
    let values = gathered[0].to_host(&first.gpu)?;
    Ok(values
        .into_iter()
        .fold(op.identity(), |acc, value| op.combine(acc, value)))
}

/// `op` folded over the whole array, returned to the host (waits for every
/// rank). An empty array gives the identity.
///
/// ```no_run
/// use gpu_core::CustomOp;
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &[4i64, 0, 12, 3, 0])?;
/// // Associative, not commutative: the last non-zero item.
/// let last = CustomOp::<i64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| if b != 0 { b } else { a })?;
/// assert_eq!(dist::reduce(&group, &x, &last)?, 3);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn reduce<T: Element, O: Operator<T>>(group: &Group, input: &Sharded<T>, op: &O) -> Result<T> {
    let value = reduce_replicated(group, input, op)?.to_host(group)?;
    Ok(value[0])
}

/// The sum of the whole array (wrapping for integers), to the host.
///
/// ```no_run
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &vec![1u64; 1 << 20])?;
/// assert_eq!(dist::sum(&group, &x)?, 1 << 20);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn sum<T: Element>(group: &Group, input: &Sharded<T>) -> Result<T> {
    reduce(group, input, &Sum)
}

/// The element-wise all-reduce of equal-length shards, in place: after
/// the call every rank's shard holds `op` of all ranks' shards, element by
/// element (`ncclAllReduce`). For sum, product, max and min on a type NCCL
/// reduces (else `Unsupported`); every rank's shard must have the same
/// length (checked for the local ranks; NCCL requires it of all). Does not
/// synchronise. This is the collective the crate's bus-bandwidth benchmark
/// measures.
///
/// ```no_run
/// use gpu_core::Sum;
/// let group = dist::Group::all()?;
/// let world = group.world();
/// let mut x = dist::Sharded::scatter_from_host(&group, &vec![1.0f32; 1024 * world])?;
/// dist::all_reduce_in_place(&group, &mut x, &Sum)?;
/// assert!(x.gather_to_host(&group)?.iter().all(|&v| v == world as f32));
/// # Ok::<(), dist::Error>(())
/// ```
pub fn all_reduce_in_place<T: Element, O: Operator<T>>(
    group: &Group,
    data: &mut Sharded<T>,
    op: &O,
) -> Result<()> {
    data.check_group("shards", group)?;
    let len = data.lens().first().copied().unwrap_or(0);
    for &other in data.lens() {
        crate::Error::check_len("shard", len, other)?;
    }
    let (Some(dtype), Some(nccl_op)) = (nccl_type::<T>(), nccl_op::<T, O>(op)) else {
        return Err(gpu_core::Error::Unsupported(format!(
            "NCCL all-reduce of {} under {}: sum, product, max or min of i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64",
            T::SUFFIX,
            op.name()
        ))
        .into());
    };
    let mut shards = data.views_mut();
    grouped(|| {
        for (rank, shard) in group.ranks.iter().zip(&mut shards) {
            let ptr = shard.device_ptr();
            // SAFETY: `shard` holds `len` T's on this rank's device and
            // belongs to the caller's array, which outlives the operation
            // (its buffers are freed in stream order); in place is allowed.
            unsafe {
                rank.comm
                    .all_reduce(&rank.gpu, ptr, ptr, len, dtype, nccl_op)?
            };
        }
        Ok(())
    })
}
