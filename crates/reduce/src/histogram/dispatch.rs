//! Algorithm + bin count → mode, block shape, shared memory and grid; the
//! launch. Pure planning functions ([`plan`], [`grid_blocks`],
//! [`head_items`]) are tested without a GPU.

use gpu_core::launch::LaunchConfig;
use gpu_core::{DeviceView, DeviceViewMut, Error, Gpu, KernelArgs, Result};

use super::bins::{EvenBins, HistogramCount, HistogramInput};
use super::modules::{entry, module, module_key, unroll, Mode, SpecKind};
use super::{CountMode, HistogramAlgorithm};

/// Shared memory the u32 tier (`Auto`) gives its sub-histograms: 32 KiB,
/// which keeps 7 blocks of 256 threads resident on an H100.
pub const SUB_HISTOGRAM_BYTES: usize = 32 * 1024;
/// Boundaries of `ranges` are staged in shared memory up to this size.
pub const STAGE_LIMIT_BYTES: usize = 16 * 1024;
/// Most bins the u32 tier of `Auto` holds (one copy in 32 KiB).
pub const SHARED_TIER_BINS: usize = SUB_HISTOGRAM_BYTES / 4;

/// How one call runs: the mode, block shape, sub-histogram copies, stored
/// bins (bins, or the 256 values of VALUES), staged boundaries and the
/// dynamic shared memory of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The counting mode.
    pub mode: Mode,
    /// Threads per block.
    pub block_threads: u32,
    /// Sub-histograms per block (a power of two, 1 to 32).
    pub copies: u32,
    /// Counters per sub-histogram.
    pub stored_bins: u32,
    /// Boundaries staged in shared memory (0: read from global memory).
    pub stage: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
}

/// Chooses how to count `bins` bins of `element_bytes`-byte items;
/// `boundary_count` is `Some(bins + 1)` for `ranges`; `max_shared` is what
/// a block may opt in to (`DeviceInfo::shared_per_block_optin`).
///
/// `Auto`: 1-byte inputs count their 256 values (32 lane copies) and bin at
/// the merge; up to 8192 bins, u32 counts with as many copies (up to 32, one
/// per lane) as fit 32 KiB; past that, 16-bit packed counts (65 536 bins in
/// 128 KiB), or global atomics on a device that cannot give a block that
/// much. `SharedPrivatised` with bins that do not fit is refused. `Sort`
/// takes every bin count (its kernels keep no counts in shared memory).
///
/// ```
/// use reduce::histogram::policy::{plan, Mode};
/// use reduce::histogram::HistogramAlgorithm;
/// let h100 = 227 * 1024;
/// let p = plan(HistogramAlgorithm::Auto, 256, 4, None, h100).unwrap();
/// assert_eq!((p.mode, p.copies, p.shared_bytes), (Mode::Shared, 32, 32 * 1024));
/// assert_eq!(plan(HistogramAlgorithm::Auto, 65_536, 4, None, h100).unwrap().mode, Mode::Packed16);
/// assert!(plan(HistogramAlgorithm::SharedPrivatised, 65_536, 4, None, h100).is_err());
/// ```
pub fn plan(
    algorithm: HistogramAlgorithm,
    bins: usize,
    element_bytes: usize,
    boundary_count: Option<usize>,
    max_shared: usize,
) -> Result<LaunchPlan> {
    let stage_bytes = boundary_count.map_or(0, |b| b * element_bytes);
    // Staged boundaries follow the counts at a 16-byte boundary.
    let with_stage = |count_bytes: usize| -> (u32, usize) {
        let at = count_bytes.next_multiple_of(16);
        match boundary_count {
            Some(b) if stage_bytes <= STAGE_LIMIT_BYTES && at + stage_bytes <= max_shared => {
                (b as u32, at + stage_bytes)
            }
            _ => (0, count_bytes),
        }
    };
    let make = |mode: Mode, copies: u32, stored_bins: u32, count_bytes: usize| {
        let (stage, shared_bytes) = if mode == Mode::Values {
            // VALUES bins only at the merge (256 look-ups): nothing staged.
            (0, count_bytes)
        } else {
            with_stage(count_bytes)
        };
        LaunchPlan {
            mode,
            block_threads: mode.block_threads(),
            copies,
            stored_bins,
            stage,
            shared_bytes,
        }
    };
    let bins_u32 = bins as u32;
    match algorithm {
        HistogramAlgorithm::GlobalAtomic => Ok(make(Mode::Global, 1, bins_u32, 0)),
        // Bin indices in global memory: shared memory holds the staged
        // boundaries only.
        HistogramAlgorithm::Sort => Ok(make(Mode::Sort, 1, bins_u32, 0)),
        HistogramAlgorithm::SharedPrivatised => {
            if bins * 4 > max_shared {
                return Err(Error::invalid(
                    "algorithm",
                    format!(
                        "SharedPrivatised keeps {bins} u32 counts ({} bytes) in shared memory, \
                         more than the {max_shared} bytes a block may have: use Auto",
                        bins * 4
                    ),
                ));
            }
            Ok(make(Mode::Shared, 1, bins_u32, bins * 4))
        }
        HistogramAlgorithm::Auto => {
            if element_bytes == 1 {
                return Ok(make(Mode::Values, 32, 256, 256 * 32 * 4 + 512 * 4));
            }
            if bins <= SHARED_TIER_BINS {
                // One copy per lane when bins ≤ 256; fewer, as many as fit.
                let copies = (SHARED_TIER_BINS / bins).min(32);
                let copies = 1u32 << (usize::BITS - 1 - copies.leading_zeros());
                return Ok(make(
                    Mode::Shared,
                    copies,
                    bins_u32,
                    bins * copies as usize * 4,
                ));
            }
            let packed_bytes = bins.div_ceil(2) * 4;
            if packed_bytes <= max_shared {
                Ok(make(Mode::Packed16, 1, bins_u32, packed_bytes))
            } else {
                Ok(make(Mode::Global, 1, bins_u32, 0))
            }
        }
    }
}

/// Items before the first 16-byte boundary of the input at `ptr`, counted
/// one at a time (all `n` when `ptr` is not even aligned to the item).
///
/// ```
/// use reduce::histogram::policy::head_items;
/// assert_eq!(head_items(0x1000, 100, 4), 0);
/// assert_eq!(head_items(0x1004, 100, 4), 3); // 0x1004, 0x1008, 0x100c
/// assert_eq!(head_items(0x1001, 100, 1), 15);
/// assert_eq!(head_items(0x1002, 100, 4), 100); // misaligned: all scalar
/// assert_eq!(head_items(0x1004, 2, 4), 2);
/// ```
pub fn head_items(ptr: u64, n: usize, element_bytes: usize) -> usize {
    let bytes = element_bytes as u64;
    if !ptr.is_multiple_of(bytes) {
        return n;
    }
    let to_boundary = (16 - ptr % 16) % 16;
    ((to_boundary / bytes) as usize).min(n)
}

/// Blocks of the persistent grid: one per chunk of `block_threads` ×
/// `unroll` vectors, at most `resident_total` (what the device holds at
/// once), at least one, and at least ⌈n / 2^31⌉ so that no block counts
/// 2^32 items into one 32-bit shared counter.
///
/// ```
/// use reduce::histogram::policy::grid_blocks;
/// assert_eq!(grid_blocks(1 << 28, 4, 256, 4, 924), 924);
/// assert_eq!(grid_blocks(100, 4, 256, 4, 924), 1);
/// assert_eq!(grid_blocks(0, 4, 256, 4, 924), 1);
/// ```
pub fn grid_blocks(
    n: usize,
    element_bytes: usize,
    block_threads: u32,
    unroll: u32,
    resident_total: u64,
) -> u32 {
    let vectors = (n * element_bytes / 16) as u64;
    let chunks = vectors.div_ceil(block_threads as u64 * unroll as u64);
    let floor = (n as u64).div_ceil(1 << 31);
    chunks.min(resident_total).max(floor).max(1) as u32
}

/// The bins one launch counts into.
pub(crate) enum Spec<'a, T: HistogramInput> {
    Even(EvenBins<T>),
    /// Bin count and the boundaries, on the device.
    Ranges(usize, DeviceView<'a, T>),
}

impl<T: HistogramInput> Spec<'_, T> {
    /// The bin count, the specification's kind, and [`plan`] of
    /// `algorithm` for it on `gpu` (ranges stage their `bins + 1`
    /// boundaries).
    pub(crate) fn launch_plan(
        &self,
        gpu: &Gpu,
        algorithm: HistogramAlgorithm,
    ) -> Result<(usize, SpecKind, LaunchPlan)> {
        let (bins, kind, boundary_count) = match self {
            Spec::Even(even) => (even.bins(), SpecKind::Even, None),
            Spec::Ranges(bins, _) => (*bins, SpecKind::Ranges, Some(*bins + 1)),
        };
        let max_shared = gpu.info().shared_per_block_optin;
        let plan = plan(algorithm, bins, T::BYTES, boundary_count, max_shared)?;
        Ok((bins, kind, plan))
    }
}

/// The binner's arguments of a bin specification, as every kernel that
/// bins takes them: `T lower, T upper, u64 range, u64 magic, T scale, u32
/// shift` for even bins, `const T* boundaries, u32 stage` for ranges.
pub(crate) fn push_bin_spec<T: HistogramInput>(
    args: &mut KernelArgs,
    spec: &Spec<'_, T>,
    stage: u32,
) {
    match spec {
        Spec::Even(even) => {
            args.scalar(even.lower)
                .scalar(even.upper)
                .scalar(even.range)
                .scalar(even.magic())
                .scalar(even.scale)
                .scalar(even.shift());
        }
        Spec::Ranges(_, boundaries) => {
            args.input(boundaries).scalar(stage);
        }
    }
}

/// Counts the non-empty `input` into `counts` (validated, of `bins`
/// elements) with one of the counting modes, as `mode` says (zeroing the
/// counts first when overwriting), enqueued on `gpu`'s stream.
pub(crate) fn launch<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    input: &DeviceView<'_, T>,
    spec: &Spec<'_, T>,
    counts: &mut DeviceViewMut<'_, C>,
    mode: CountMode,
    algorithm: HistogramAlgorithm,
) -> Result<()> {
    if mode == CountMode::Overwrite {
        counts.fill(gpu, C::zero())?;
    }
    let n = input.len();
    let (bins, kind, plan) = spec.launch_plan(gpu, algorithm)?;
    let info = gpu.info();
    let kernel = gpu.stored_kernel(&module_key::<T>(), &entry::<T, C>(plan.mode, kind), || {
        module::<T>()
    })?;
    // A persistent grid sized to the device: as many blocks as are resident
    // at once (asked of the driver once per shape), striding over chunks.
    let resident = kernel
        .resident_blocks_per_sm(plan.block_threads, plan.shared_bytes)?
        .max(1) as u64;
    let blocks = grid_blocks(
        n,
        T::BYTES,
        plan.block_threads,
        unroll(plan.mode, T::BYTES),
        resident * info.sm_count as u64,
    );
    let config = LaunchConfig {
        grid: (blocks, 1, 1),
        block: (plan.block_threads, 1, 1),
        shared_bytes: plan.shared_bytes as u32,
    };
    let head = head_items(input.device_ptr(), n, T::BYTES);
    let mut args = KernelArgs::new();
    args.input(input)
        .scalar(n as u64)
        .scalar(head as u64)
        .output(counts)
        .scalar(bins as u32)
        .scalar(plan.stored_bins)
        .scalar(plan.copies);
    push_bin_spec(&mut args, spec, plan.stage);
    // SAFETY: the argument list matches histogram_{mode}_{spec}_{C}_{T}:
    // (const T* in, u64 n, u64 head, C* counts, u32 bins, u32 stored_bins,
    // u32 copies, then T lower, T upper, u64 range, u64 magic, T scale, u32
    // shift for even, or const T* boundaries, u32 stage for ranges). `in` holds n
    // items (the kernel reads below n only: whole vectors from the aligned
    // `head` on, the rest one at a time); `counts` holds `bins` counts
    // (validated) and every bin the binners return is below `bins`;
    // `boundaries` holds bins + 1 values; the dynamic shared memory is what
    // `plan` sized for this mode, copies, stored bins and stage.
    unsafe { gpu.launch(&kernel, config, &args) }
}
