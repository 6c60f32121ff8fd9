//! Distributed histogram in even bins: every rank counts its shard with
//! `reduce::histogram::histogram_even_into`, then one in-place
//! `ncclAllReduce` (sum) of the counts leaves the global histogram on every
//! rank. Counts are integers, so the result is exactly the single-GPU
//! histogram of the whole array.
//!
//! **Bytes moved per rank:** m·s for the local pass (a shard of m items of
//! s bytes), bins·c over NCCL (c = 4 or 8 bytes per count).

use gpu_core::DeviceBuffer;
use reduce::histogram::{CountMode, HistogramAlgorithm, HistogramCount, HistogramInput};

use crate::nccl::{grouped, nccl_type};
use crate::{Error, Group, Replicated, Result, Sharded};

/// The histogram of the whole array in `bins` even bins over
/// `[lower, upper)` (the bin formula of `reduce::histogram::EvenBins`),
/// on every local rank's device. Does not synchronise.
///
/// ```no_run
/// let group = dist::Group::all()?;
/// let data = [1i32, 5, 5, 9, 12, -4];
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let counts = dist::histogram_even::<i32, u32>(&group, &x, 4, 0, 12)?;
/// assert_eq!(counts.to_host(&group)?, reduce::histogram::cpu::histogram_even::<i32, u32>(&data, 4, 0, 12)?);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn histogram_even<T: HistogramInput, C: HistogramCount>(
    group: &Group,
    input: &Sharded<T>,
    bins: usize,
    lower: T,
    upper: T,
) -> Result<Replicated<C>> {
    input.check_group("input shards", group)?;
    // Checked once on the host before any rank allocates.
    reduce::histogram::EvenBins::new(bins, lower, upper)?;
    let dtype = nccl_type::<C>().ok_or_else(|| Error::invalid("C", "a u32 or u64 count"))?;
    let mut counts = Vec::with_capacity(group.local_count());
    for (rank, shard) in group.ranks.iter().zip(input.views()) {
        let mut local = DeviceBuffer::<C>::zeros(&rank.gpu, bins)?;
        reduce::histogram::histogram_even_into(
            &rank.gpu,
            shard,
            bins,
            lower,
            upper,
            local.view_mut(),
            CountMode::Accumulate,
            HistogramAlgorithm::Auto,
        )?;
        counts.push(local);
    }
    grouped(|| {
        for (rank, local) in group.ranks.iter().zip(&mut counts) {
            let ptr = local.view_mut().device_ptr();
            // SAFETY: `local` holds `bins` counts on this rank's device and is
            // returned to the caller; in place is allowed by NCCL.
            unsafe {
                rank.comm.all_reduce(
                    &rank.gpu,
                    ptr,
                    ptr,
                    bins,
                    dtype,
                    cudarc::nccl::sys::ncclRedOp_t::ncclSum,
                )?
            };
        }
        Ok(())
    })?;
    Ok(Replicated::new(counts))
}
