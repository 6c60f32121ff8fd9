//! Distributed scan: the inclusive, seeded inclusive or exclusive scan
//! (every `ScanKind`) of a [`Sharded`] array under any associative operator
//! the scan crate takes.
//!
//! **Steps.** (1) Every rank scans its own shard with the single-GPU scan
//! (`scan::scan_into`, the decoupled look-back): rank 0 with the caller's
//! kind (its initial value included), the others seeded with the
//! identity. (2) One thread per rank writes its shard total (the last
//! inclusive value; for an exclusive scan, the last output ⊕ the last
//! input). (3) One `ncclAllGather` of the totals (one element per rank).
//! (4) One thread per rank folds the totals before it, in rank order, into
//! its prefix. (5) Ranks after the first combine the prefix into every
//! output element (`prefix ⊕ out[i]`).
//!
//! **Bytes moved per rank** (shard of m items of s bytes): 2·m·s for the
//! local scan, 2·m·s for the prefix pass, s·world over NCCL. The prefix
//! pass doubles the traffic of ranks after the first, so
//! [`scan_local_into`] stops after step 4 and hands back each rank's prefix
//! on its device: a consumer that combines it into the values it reads
//! (the "next use") pays no extra pass, and the scan then costs 2·m·s per
//! rank, which is where a speed-up of nearly `world` comes from.
//!
//! **Determinism.** Integers are exact (bit for bit the single-GPU scan,
//! integer sums wrapping). Floats: the local scans are the single-GPU
//! scan's, and the prefix is folded in rank order, so a run is
//! reproducible for a given layout; results differ from one GPU's scan by
//! rounding, as any change of association does.
//!
//! **Types.** The 4- and 8-byte element types (`i32 u32 i64 u64 f32
//! f64`); the narrow ones are refused with `Unsupported`.

use gpu_core::launch::grid_1d;
use gpu_core::{
    DeviceBuffer, Element, Gpu, Kernel, KernelArgs, LaunchConfig, ModuleSource, Operator,
};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

pub use crate::scan_reduce_first::{reduce_first_local_kind, reduce_first_prefixes};
use crate::{Error, Group, Replicated, Result, Sharded};

/// The CUDA of the cross-shard kernels (`shard_total`, `shard_prefix`,
/// `apply_prefix`).
pub const SHARD_PREFIX_CU: &str = include_str!("../cuda/shard_prefix.cu");

/// Threads per block of the prefix pass.
pub const APPLY_BLOCK_THREADS: u32 = 256;
/// Items per thread of the prefix pass.
pub const APPLY_ITEMS_PER_THREAD: u32 = 8;

/// The entry names of the prefix module for `T` and `op`:
/// `(shard_total, shard_prefix, apply_prefix)`.
fn entries<T: Element, O: Operator<T>>(op: &O) -> [String; 3] {
    let suffix = format!("{}_{}", T::SUFFIX, op.name());
    [
        format!("dist_shard_total_{suffix}"),
        format!("dist_shard_prefix_{suffix}"),
        format!("dist_apply_prefix_{suffix}"),
    ]
}

/// The module of the cross-shard kernels for `T` and `op`.
///
/// ```
/// use gpu_core::Sum;
/// let module = dist::scan::prefix_module::<i32, _>(&Sum);
/// assert_eq!(module.entries().len(), 3);
/// assert!(module.entries().iter().all(|e| e.ends_with("_i32_sum")));
/// ```
pub fn prefix_module<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let [total, prefix, apply] = entries::<T, O>(op);
    ModuleSource::new(format!("dist_shard_prefix_{}_{}", T::SUFFIX, op.name()))
        .source(SHARD_PREFIX_CU)
        .operator::<T, O>(op, "op_t")
        .entry(
            total,
            &format!("const {t}* scanned, const {t}* input, {t}* total, u64 n, int exclusive, {t} empty_total"),
            &format!("shard_total<{t}, op_t>(scanned, input, total, n, exclusive, empty_total)"),
            Some(32),
        )
        .entry(
            prefix,
            &format!("const {t}* totals, {t}* prefix, u32 rank"),
            &format!("shard_prefix<{t}, op_t>(totals, prefix, rank)"),
            Some(32),
        )
        .entry(
            apply,
            &format!("{t}* data, const {t}* prefix, u64 n"),
            &format!("apply_prefix<{t}, op_t, {APPLY_ITEMS_PER_THREAD}>(data, prefix, n)"),
            Some(APPLY_BLOCK_THREADS),
        )
}

/// Kernel `entry` of the prefix module for `T` and `op`, from the
/// context's store (the key names the element type, the operator and the
/// fingerprint of its CUDA functor, so the source is built once per
/// context).
fn prefix_kernel<T: Element, O: Operator<T>>(gpu: &Gpu, op: &O, entry: &str) -> Result<Kernel> {
    let key = format!(
        "dist/shard_prefix/{}/{}/{}",
        T::SUFFIX,
        op.name(),
        gpu_core::kernel::fingerprint(&gpu_core::operator_prelude::<T, O>(op, "op_t"))
    );
    Ok(gpu.stored_kernel(&key, entry, || prefix_module::<T, O>(op))?)
}

/// Every module this crate can request, for the NVRTC compile test: the
/// prefix kernels for each scan element type under sum, max and min.
pub fn kernel_catalog() -> Vec<ModuleSource> {
    use gpu_core::{Max, Min, Sum};
    fn three<T: Element>() -> [ModuleSource; 3] {
        [
            prefix_module::<T, _>(&Sum),
            prefix_module::<T, _>(&Max),
            prefix_module::<T, _>(&Min),
        ]
    }
    let mut modules = Vec::new();
    modules.extend(three::<i32>());
    modules.extend(three::<u32>());
    modules.extend(three::<i64>());
    modules.extend(three::<u64>());
    modules.extend(three::<f32>());
    modules.extend(three::<f64>());
    modules
}

/// Checks a distributed scan's arguments without a GPU: 4- or 8-byte
/// elements, one output shard per input shard, equal lengths shard by
/// shard.
///
/// ```
/// assert!(dist::scan::validate::<i32>(&[3, 4], &[3, 4]).is_ok());
/// assert!(dist::scan::validate::<i32>(&[3, 4], &[3]).is_err());
/// assert!(dist::scan::validate::<i32>(&[3, 4], &[4, 3]).is_err());
/// assert!(dist::scan::validate::<u8>(&[3], &[3]).is_err()); // narrow types are not scanned across ranks
/// ```
pub fn validate<T: Element>(input_lens: &[usize], output_lens: &[usize]) -> Result<()> {
    if T::BYTES != 4 && T::BYTES != 8 {
        return Err(gpu_core::Error::Unsupported(format!(
            "the distributed scan takes 4- and 8-byte elements, not {}",
            T::SUFFIX
        ))
        .into());
    }
    Error::check_len("output shards", input_lens.len(), output_lens.len())?;
    for (&input, &output) in input_lens.iter().zip(output_lens) {
        Error::check_len("output shard", input, output)?;
    }
    Ok(())
}

/// What one rank's local scan is: its kind, whether its shard total is
/// the last output ⊕ the last input (exclusive scans) or the last output,
/// and the total of an empty shard. Rank 0 scans with the caller's kind
/// (its initial value included, so every later prefix carries it); every
/// other rank with the identity as its initial value (a plain inclusive
/// scan for either inclusive kind).
///
/// ```
/// use dist::scan::LocalScan;
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let first = LocalScan::for_rank(ScanKind::Exclusive { initial: 7 }, 0, &Sum);
/// assert_eq!((first.kind, first.exclusive, first.empty_total), (ScanKind::Exclusive { initial: 7 }, true, 7));
/// let later = LocalScan::for_rank(ScanKind::Exclusive { initial: 7 }, 3, &Sum);
/// assert_eq!((later.kind, later.empty_total), (ScanKind::Exclusive { initial: 0 }, 0));
/// let seeded = LocalScan::for_rank(ScanKind::InclusiveFrom { initial: 7 }, 0, &Sum);
/// assert_eq!((seeded.kind, seeded.exclusive, seeded.empty_total), (ScanKind::InclusiveFrom { initial: 7 }, false, 7));
/// let later = LocalScan::for_rank(ScanKind::InclusiveFrom { initial: 7 }, 2, &Sum);
/// assert_eq!((later.kind, later.empty_total), (ScanKind::Inclusive, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalScan<T: Element> {
    /// The kind the rank's shard is scanned with.
    pub kind: ScanKind<T>,
    /// The shard total is `out[n-1] ⊕ in[n-1]` (else `out[n-1]`).
    pub exclusive: bool,
    /// The total of an empty shard.
    pub empty_total: T,
}

impl<T: Element> LocalScan<T> {
    /// The local scan of global rank `rank` for a distributed scan of `kind`.
    pub fn for_rank<O: Operator<T>>(kind: ScanKind<T>, rank: usize, op: &O) -> Self {
        match kind {
            ScanKind::Inclusive => LocalScan {
                kind,
                exclusive: false,
                empty_total: op.identity(),
            },
            ScanKind::InclusiveFrom { initial } if rank == 0 => LocalScan {
                kind,
                exclusive: false,
                empty_total: initial,
            },
            ScanKind::InclusiveFrom { .. } => LocalScan {
                kind: ScanKind::Inclusive,
                exclusive: false,
                empty_total: op.identity(),
            },
            ScanKind::Exclusive { initial } if rank == 0 => LocalScan {
                kind,
                exclusive: true,
                empty_total: initial,
            },
            ScanKind::Exclusive { .. } => LocalScan {
                kind: ScanKind::Exclusive {
                    initial: op.identity(),
                },
                exclusive: true,
                empty_total: op.identity(),
            },
        }
    }
}

/// Steps 1–4: every rank's local scan into `output`, and each rank's
/// prefix (the ⊕ of every element of the ranks before it, a seeded kind's
/// initial value included; the identity on rank 0) on its device. The
/// global scan is `prefix ⊕ output[i]` on each rank: combine the prefix
/// into the values where they are next read, or call [`apply_prefixes`].
/// Enqueued on every rank's stream; does not synchronise.
///
/// ```no_run
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let group = dist::Group::all()?;
/// let data: Vec<u32> = (0..1000).collect();
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let mut y = dist::Sharded::scatter_from_host(&group, &vec![0u32; data.len()])?;
/// let prefixes = dist::scan_local_into(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
/// dist::apply_prefixes(&group, &prefixes, &mut y, &Sum)?; // or fuse the prefix into the next kernel
/// assert_eq!(y.gather_to_host(&group)?, scan::cpu::inclusive(&data, &Sum));
/// # Ok::<(), dist::Error>(())
/// ```
pub fn scan_local_into<T: Element, O: Operator<T>>(
    group: &Group,
    input: &Sharded<T>,
    output: &mut Sharded<T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<Replicated<T>> {
    input.check_group("input shards", group)?;
    output.check_group("output shards", group)?;
    validate::<T>(input.lens(), output.lens())?;
    scan::check_element::<T, O>(op, ScanAlgorithm::Auto)?;
    let [total_entry, prefix_entry, _] = entries::<T, O>(op);
    let one_thread = LaunchConfig {
        grid: (1, 1, 1),
        block: (32, 1, 1),
        shared_bytes: 0,
    };

    // (1) + (2): local scans and shard totals, rank by rank, all enqueued.
    let mut totals = Vec::with_capacity(group.local_count());
    let inputs = input.views();
    for ((rank, input), mut output) in group.ranks.iter().zip(inputs).zip(output.views_mut()) {
        let gpu = &rank.gpu;
        let local = LocalScan::for_rank(kind, rank.rank, op);
        let (local_kind, exclusive, empty_total) =
            (local.kind, i32::from(local.exclusive), local.empty_total);
        scan::scan_into(
            gpu,
            input,
            output.reborrow(),
            op,
            local_kind,
            &ScanOptions::default(),
        )?;
        // SAFETY: written by the shard_total launch below before it is read.
        let mut total = unsafe { DeviceBuffer::<T>::uninit(gpu, 1)? };
        let kernel = prefix_kernel::<T, O>(gpu, op, &total_entry)?;
        let mut args = KernelArgs::new();
        args.input(&output.as_view())
            .input(&input)
            .output(&mut total.view_mut())
            .scalar(input.len() as u64)
            .scalar(exclusive)
            .scalar(empty_total);
        // SAFETY: shard_total(const T* scanned, const T* input, T* total, u64 n,
        // int exclusive, T empty_total): the argument list matches; scanned and
        // input hold n elements (equal lengths validated), total one; it reads
        // index n - 1 only when n > 0.
        unsafe { gpu.launch(&kernel, one_thread, &args)? };
        totals.push(total);
    }

    // (3): one all-gather of the totals, every local rank in one NCCL group.
    let gathered = group.all_gather_one(&totals)?;

    // (4): each rank's prefix from the gathered totals.
    let mut prefixes = Vec::with_capacity(group.local_count());
    for (rank, all) in group.ranks.iter().zip(&gathered) {
        let gpu = &rank.gpu;
        // SAFETY: written by the shard_prefix launch below.
        let mut prefix = unsafe { DeviceBuffer::<T>::uninit(gpu, 1)? };
        let kernel = prefix_kernel::<T, O>(gpu, op, &prefix_entry)?;
        let mut args = KernelArgs::new();
        args.input(&all.view())
            .output(&mut prefix.view_mut())
            .scalar(rank.rank as u32);
        // SAFETY: shard_prefix(const T* totals, T* prefix, u32 rank): the
        // argument list matches; totals holds world > rank elements, prefix one.
        unsafe { gpu.launch(&kernel, one_thread, &args)? };
        prefixes.push(prefix);
    }
    Ok(Replicated::new(prefixes))
}

/// Step 5: combines each rank's prefix into its shard of `output`
/// (`prefix ⊕ out[i]`), on every rank after the first. `prefixes` is what
/// [`scan_local_into`] returned for this `output`. Does not synchronise.
///
/// ```no_run
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &[1i64; 4096])?;
/// let mut y = dist::Sharded::scatter_from_host(&group, &[0i64; 4096])?;
/// let prefixes = dist::scan_local_into(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
/// dist::apply_prefixes(&group, &prefixes, &mut y, &Sum)?;
/// assert_eq!(*y.gather_to_host(&group)?.last().unwrap(), 4096);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn apply_prefixes<T: Element, O: Operator<T>>(
    group: &Group,
    prefixes: &Replicated<T>,
    output: &mut Sharded<T>,
    op: &O,
) -> Result<()> {
    output.check_group("output shards", group)?;
    validate::<T>(output.lens(), output.lens())?;
    let [_, _, apply_entry] = entries::<T, O>(op);
    for (i, (rank, mut shard)) in group.ranks.iter().zip(output.views_mut()).enumerate() {
        let prefix = prefixes.copy(i)?;
        Error::check_len("prefix", 1, prefix.len())?;
        if rank.rank == 0 || shard.is_empty() {
            continue; // rank 0's prefix is the identity
        }
        let kernel = prefix_kernel::<T, O>(&rank.gpu, op, &apply_entry)?;
        launch_apply(&rank.gpu, &kernel, &mut shard, &prefix)?;
    }
    Ok(())
}

fn launch_apply<T: Element>(
    gpu: &Gpu,
    kernel: &Kernel,
    shard: &mut gpu_core::DeviceViewMut<'_, T>,
    prefix: &gpu_core::DeviceView<'_, T>,
) -> Result<()> {
    let (config, _blocks) = grid_1d(
        shard.len() as u64,
        APPLY_BLOCK_THREADS,
        APPLY_ITEMS_PER_THREAD,
        0,
    )?;
    let mut args = KernelArgs::new();
    args.output(shard).input(prefix).scalar(shard.len() as u64);
    // SAFETY: apply_prefix(T* data, const T* prefix, u64 n): the argument list
    // matches; data holds n elements, prefix one; the grid covers n with
    // APPLY_ITEMS_PER_THREAD items per thread, and every index is checked
    // against n.
    unsafe { gpu.launch(kernel, config, &args)? };
    Ok(())
}

/// The scan of `input` into `output` (same layout) over every rank:
/// [`scan_local_into`] then [`apply_prefixes`]. Does not synchronise.
///
/// ```no_run
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let group = dist::Group::all()?;
/// let data: Vec<i32> = (0..10_000).map(|i| i % 7 - 3).collect();
/// let x = dist::Sharded::scatter_from_host(&group, &data)?;
/// let mut y = dist::Sharded::scatter_from_host(&group, &vec![0; data.len()])?;
/// dist::scan_into(&group, &x, &mut y, &Sum, ScanKind::Exclusive { initial: 100 })?;
/// assert_eq!(y.gather_to_host(&group)?, scan::cpu::scan(&data, &Sum, ScanKind::Exclusive { initial: 100 }));
/// # Ok::<(), dist::Error>(())
/// ```
pub fn scan_into<T: Element, O: Operator<T>>(
    group: &Group,
    input: &Sharded<T>,
    output: &mut Sharded<T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<()> {
    let prefixes = scan_local_into(group, input, output, op, kind)?;
    apply_prefixes(group, &prefixes, output, op)
}

/// The scan of `input` into a new array of the same layout.
///
/// ```no_run
/// use gpu_core::Max;
/// use scan::ScanKind;
/// let group = dist::Group::all()?;
/// let x = dist::Sharded::scatter_from_host(&group, &[3.0f64, 1.0, 7.0, 2.0])?;
/// let running_max = dist::scan(&group, &x, &Max, ScanKind::Inclusive)?;
/// assert_eq!(running_max.gather_to_host(&group)?, [3.0, 3.0, 7.0, 7.0]);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn scan<T: Element, O: Operator<T>>(
    group: &Group,
    input: &Sharded<T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<Sharded<T>> {
    input.check_group("input shards", group)?;
    validate::<T>(input.lens(), input.lens())?;
    // SAFETY: the scan writes every element of every shard.
    let mut output = unsafe { Sharded::<T>::uninit(group, input.lens())? };
    scan_into(group, input, &mut output, op, kind)?;
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::{CustomOp, Max, Sum};
    use proptest::prelude::*;

    /// The distributed scan's steps on the host, with the CPU reference
    /// scan as the local scan: what the kernels compute, rank by rank.
    fn model<T: Element, O: Operator<T>>(
        data: &[T],
        lens: &[usize],
        op: &O,
        kind: ScanKind<T>,
    ) -> Vec<T> {
        let (starts, _) = crate::layout::offsets(lens);
        let mut locals = Vec::new();
        let mut totals = Vec::new();
        for (rank, (&start, &len)) in starts.iter().zip(lens).enumerate() {
            let input = &data[start..start + len];
            let local = LocalScan::for_rank(kind, rank, op);
            let out = scan::cpu::scan(input, op, local.kind);
            let total = match (len, local.exclusive) {
                (0, _) => local.empty_total,
                (_, true) => op.combine(out[len - 1], input[len - 1]),
                (_, false) => out[len - 1],
            };
            locals.push(out);
            totals.push(total);
        }
        let mut global = Vec::new();
        for (rank, out) in locals.into_iter().enumerate() {
            // As the kernel: folded from totals[0].
            let prefix = totals[..rank]
                .iter()
                .copied()
                .reduce(|a, t| op.combine(a, t))
                .unwrap_or(op.identity());
            global.extend(
                out.into_iter()
                    .map(|v| if rank == 0 { v } else { op.combine(prefix, v) }),
            );
        }
        global
    }

    proptest! {
        #[test]
        fn the_steps_give_the_global_scan(
            data in proptest::collection::vec(any::<i32>(), 0..300),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
            initial in any::<i32>(),
        ) {
            let lens = crate::layout::split_at_cuts(data.len(), &cuts);
            for kind in [
                ScanKind::Inclusive,
                ScanKind::Exclusive { initial },
                ScanKind::InclusiveFrom { initial },
            ] {
                prop_assert_eq!(model(&data, &lens, &Sum, kind), scan::cpu::scan(&data, &Sum, kind));
                prop_assert_eq!(model(&data, &lens, &Max, kind), scan::cpu::scan(&data, &Max, kind));
            }
            // Associative, not commutative (0 is its identity): the rank order matters.
            let last = CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| if b != 0 { b } else { a }).unwrap();
            for kind in [
                ScanKind::Inclusive,
                ScanKind::Exclusive { initial },
                ScanKind::InclusiveFrom { initial },
            ] {
                prop_assert_eq!(model(&data, &lens, &last, kind), scan::cpu::scan(&data, &last, kind));
            }
        }
    }
}
