//! `ScanAlgorithm::HillisSteeleGlobal`: Hillis–Steele with one launch per
//! step, ping-ponging between two buffers in global memory.
//!
//! Inclusive scan: for d = 1, 2, 4, … < n, one launch computes
//! `out[i] = in[i − d] ⊕ in[i]` (i ≥ d; `out[i] = in[i]` below d) from one
//! buffer into the other. Exclusive scan with initial value v: the inclusive
//! scan of `[v, x[0], …, x[n−2]]`, built by one extra "shift" launch first.
//! Inclusive scan from v: the inclusive scan of `[v ⊕ x[0], x[1], …]`, built
//! by one extra "seed" launch first.
//!
//! - work: O(n log n) combines; launches: ⌈log2 n⌉ (+1 shift or seed for a
//!   seeded kind, +1 device copy when an in-place scan ends in the
//!   temporary);
//! - global bytes moved: per step n + (n − d) elements read and n written,
//!   ≈ 3n·⌈log2 n⌉ elements in all ([`bytes_moved`]);
//! - shared memory: none; temporary: one n-element device buffer (none for
//!   a single launch out of place);
//! - in place: yes, through the temporary (no launch ever reads and writes
//!   the same buffer: [`buffer_plan`]);
//! - deterministic: yes.
//!
//! The 1- and 2-byte types combine in a 4-byte accumulator
//! (`gpu_core::op::register_type`). A scan of two launches or more
//! ping-pongs through one or two n-element accumulator arrays instead of
//! the output ([`accumulator_plan`]): the first launch reads the elements,
//! the last writes them, so each output is narrowed once (a 16-bit float
//! rounded once). The temporary is then 4n or 8n bytes, and no copy back is
//! needed in place.
//!
//! Kernel: `kernels/cuda/scan_hillis_steele_global.cu`.

use gpu_core::launch::grid_1d;
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Gpu, KernelArgs, ModuleSource, Operator,
    Result,
};

use crate::kind::ScanKind;
use crate::recursive::{accumulator_buffer, accumulator_bytes, accumulator_type, is_narrow};

/// Where one launch writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The caller's output.
    Output,
    /// The n-element temporary.
    Temp,
}

/// The distances d = 1, 2, 4, … < n of the Hillis–Steele steps.
pub(crate) fn step_distances(n: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |&d| d.checked_mul(2))
        .take_while(|&d| d < n)
        .collect()
}

/// Which buffer each of `launches` launches writes (launch j reads what
/// launch j − 1 wrote; launch 0 reads the input), and whether the result
/// must be copied from the temporary to the output at the end.
///
/// Out of place, the targets alternate so that the last launch writes the
/// output. In place the input *is* the output, so launch 0 must write the
/// temporary; when the parity then leaves the result in the temporary, one
/// device copy brings it back.
pub(crate) fn buffer_plan(launches: usize, in_place: bool) -> (Vec<Target>, bool) {
    let alternate_from = |first: Target| -> Vec<Target> {
        (0..launches)
            .map(|j| match (first, j % 2) {
                (t, 0) => t,
                (Target::Output, _) => Target::Temp,
                (Target::Temp, _) => Target::Output,
            })
            .collect()
    };
    // Parity that ends in the output.
    let ending_in_output = if launches % 2 == 1 {
        Target::Output
    } else {
        Target::Temp
    };
    if in_place && ending_in_output == Target::Output {
        let plan = alternate_from(Target::Temp);
        let copy_back = plan.last() == Some(&Target::Temp);
        (plan, copy_back)
    } else {
        (alternate_from(ending_in_output), false)
    }
}

/// One side of a launch of a scan through accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The caller's array: the input (the output, in place) for the first
    /// launch, the output for the last.
    Caller,
    /// Accumulator array 0 or 1.
    Accumulator(usize),
}

/// `(reads, writes)` of each of `launches` ≥ 2 launches of a 1- or 2-byte
/// type's scan: the first reads the caller's array, the last writes it,
/// and the ones between ping-pong between two accumulator arrays (one when
/// there are only two launches). No launch reads what it writes, in place
/// or not.
pub(crate) fn accumulator_plan(launches: usize) -> Vec<(Side, Side)> {
    (0..launches)
        .map(|j| {
            let reads = if j == 0 {
                Side::Caller
            } else {
                Side::Accumulator((j - 1) % 2)
            };
            let writes = if j + 1 == launches {
                Side::Caller
            } else {
                Side::Accumulator(j % 2)
            };
            (reads, writes)
        })
        .collect()
}

/// The entry name of a step reading `from` and writing `to`
/// (element-to-element steps keep the plain name).
fn step_entry<T: Element, O: Operator<T>>(op: &O, suffix: &str) -> String {
    format!("hs_global_step_{}_{}{suffix}", T::SUFFIX, op.name())
}

fn shift_entry<T: Element, O: Operator<T>>(op: &O, suffix: &str) -> String {
    format!("hs_global_shift_{}_{}{suffix}", T::SUFFIX, op.name())
}

fn seed_entry<T: Element, O: Operator<T>>(op: &O, suffix: &str) -> String {
    format!("hs_global_seed_{}_{}{suffix}", T::SUFFIX, op.name())
}

/// The entry of a seeded kind's first launch: the shift (exclusive) or the
/// seed (inclusive from `initial`).
fn first_entry<T: Element, O: Operator<T>>(op: &O, exclusive: bool, suffix: &str) -> String {
    if exclusive {
        shift_entry::<T, O>(op, suffix)
    } else {
        seed_entry::<T, O>(op, suffix)
    }
}

/// Entry-name suffixes of the launches through accumulators: from the
/// elements, between accumulators, back to the elements.
const TO_ACC: &str = "_to_acc";
const ACC: &str = "_acc";
const FROM_ACC: &str = "_from_acc";

/// The module for `T` and `op`: the step, shift and seed kernels on `T`;
/// for the 1- and 2-byte types also the steps, the shift and the seed
/// through accumulators.
pub(crate) fn module<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let acc = accumulator_type::<T>();
    let step = |module: ModuleSource, suffix: &str, load: &str, store: &str| {
        module.entry(
            step_entry::<T, O>(op, suffix),
            &format!("const {load}* in, {store}* out, u64 n, u64 d"),
            &format!("hs_global_step<{load}, {store}, op_t>(in, out, n, d)"),
            Some(crate::policy::MAX_BLOCK_THREADS),
        )
    };
    let shift = |module: ModuleSource, suffix: &str, store: &str| {
        module.entry(
            shift_entry::<T, O>(op, suffix),
            &format!("const {t}* in, {store}* out, u64 n, {t} initial"),
            &format!("hs_global_shift<{t}, {store}>(in, out, n, initial)"),
            Some(crate::policy::MAX_BLOCK_THREADS),
        )
    };
    let seed = |module: ModuleSource, suffix: &str, store: &str| {
        module.entry(
            seed_entry::<T, O>(op, suffix),
            &format!("const {t}* in, {store}* out, u64 n, {t} initial"),
            &format!("hs_global_seed<{t}, {store}, op_t>(in, out, n, initial)"),
            Some(crate::policy::MAX_BLOCK_THREADS),
        )
    };
    let module = ModuleSource::new(format!(
        "scan_hillis_steele_global_{}_{}",
        T::SUFFIX,
        op.name()
    ))
    .source(&gpu_core::op::register_operator_prelude::<T, O>(op, "op_t"))
    .source(parprims_kernels::SCAN_HILLIS_STEELE_GLOBAL);
    let module = seed(shift(step(module, "", t, t), "", t), "", t);
    if !is_narrow::<T>() {
        return module;
    }
    let module = step(module, TO_ACC, t, acc);
    let module = step(module, ACC, acc, acc);
    let module = step(module, FROM_ACC, acc, t);
    seed(shift(module, TO_ACC, acc), TO_ACC, acc)
}

/// Global-memory bytes for a scan of `n` elements: per step d, n + (n − d)
/// values read and n written; a seeded kind (`seeded`: exclusive, or
/// inclusive from an initial value) adds its first launch, the shift or the
/// seed, n read and n written. A 1- or 2-byte type's launches between the
/// first and the last read and write 4-byte accumulators.
pub(crate) fn bytes_moved(n: u64, element_bytes: u64, seeded: bool) -> u64 {
    let first = (seeded && n > 0).then_some(n);
    // Values each launch reads, in launch order.
    let reads: Vec<u64> = first
        .into_iter()
        .chain(step_distances(n).iter().map(|&d| 2 * n - d))
        .collect();
    let acc = accumulator_bytes(element_bytes);
    let last = reads.len().saturating_sub(1);
    reads
        .iter()
        .enumerate()
        .map(|(j, &values)| {
            let read = if j == 0 { element_bytes } else { acc };
            let written = if j == last { element_bytes } else { acc };
            values * read + n * written
        })
        .sum()
}

/// Scans `output.len()` elements; `input` `None` scans `output` in place.
/// Arguments are validated by the caller (`block_threads` a multiple of 32).
pub(crate) fn scan<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    block_threads: u32,
    input: Option<DeviceView<'_, T>>,
    mut output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<()> {
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let output_ptr = output.device_ptr();
    let input = input.filter(|v| v.device_ptr() != output_ptr);
    let in_place = input.is_none();
    let steps = step_distances(n);
    let initial = kind.initial();
    let exclusive = kind.is_exclusive();
    let launches = steps.len() + usize::from(initial.is_some());
    if launches == 0 {
        // Inclusive scan of one element: a copy (nothing at all in place).
        if let Some(input) = input {
            output.copy_from(gpu, &input)?;
        }
        return Ok(());
    }

    // Everything fallible before the first launch.
    let key = format!(
        "scan/hillis_steele_global/{}",
        crate::operator_key::<T, O>(op)
    );
    let kernel = |entry: String| gpu.stored_kernel(&key, &entry, || module::<T, O>(op));
    // One element per thread: ⌈n / block_threads⌉ blocks, spread over y
    // past 2^31 − 1 blocks (the kernels use global_thread_index()).
    let (config, _) = grid_1d(n, block_threads, 1, 0)?;
    if is_narrow::<T>() && launches >= 2 {
        return scan_through_accumulators(
            gpu, config, input, output, op, initial, exclusive, &steps, kernel,
        );
    }
    let step_kernel = kernel(step_entry::<T, O>(op, ""))?;
    let first_kernel = kernel(first_entry::<T, O>(op, exclusive, ""))?;
    let (plan, copy_back) = buffer_plan(launches, in_place);
    let temp = if plan.contains(&Target::Temp) {
        // SAFETY: every launch that reads the temporary reads what the
        // previous launch wrote into all n elements.
        Some(unsafe { DeviceBuffer::<T>::uninit(gpu, n as usize)? })
    } else {
        None
    };
    let temp_ptr = temp.as_ref().map_or(0, |b| b.view().device_ptr());
    let ptr_of = |target: Target| match target {
        Target::Output => output_ptr,
        Target::Temp => temp_ptr,
    };

    let mut src = input.map_or(output_ptr, |v| v.device_ptr());
    let mut distances = steps.iter();
    for (j, &target) in plan.iter().enumerate() {
        let dst = ptr_of(target);
        let mut args = KernelArgs::new();
        args.scalar(src).scalar(dst).scalar(n);
        match (j, initial) {
            (0, Some(initial)) => {
                args.scalar(initial);
                // SAFETY: hs_global_shift or hs_global_seed (in, out, n,
                // initial) matches the arguments; src and dst each hold n
                // elements and differ (buffer_plan never writes what a launch
                // reads); indices are guarded against n.
                unsafe { gpu.launch(&first_kernel, config, &args)? };
            }
            _ => {
                let d = *distances
                    .next()
                    .expect("buffer_plan has one launch per step (plus the shift)");
                args.scalar(d);
                // SAFETY: hs_global_step(in, out, n, d) matches the
                // arguments; src and dst each hold n elements and differ;
                // indices (i and i − d, i ≥ d) are guarded against n.
                unsafe { gpu.launch(&step_kernel, config, &args)? };
            }
        }
        src = dst;
    }
    if copy_back {
        if let Some(temp) = &temp {
            output.copy_from(gpu, &temp.view())?;
        }
    }
    // `temp` drops here: a stream-ordered free after the launches above.
    drop(temp);
    Ok(())
}

/// A 1- or 2-byte type's scan of two launches or more, through accumulator
/// arrays ([`accumulator_plan`]). `kernel` loads an entry of [`module`].
#[allow(clippy::too_many_arguments)]
fn scan_through_accumulators<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    config: gpu_core::LaunchConfig,
    input: Option<DeviceView<'_, T>>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    initial: Option<T>,
    exclusive: bool,
    steps: &[u64],
    kernel: impl Fn(String) -> Result<gpu_core::Kernel>,
) -> Result<()> {
    let n = output.len();
    let launches = steps.len() + usize::from(initial.is_some());
    let plan = accumulator_plan(launches);
    // Everything fallible before the first launch: the kernel of each
    // launch, then the accumulator arrays.
    let kernels: Vec<gpu_core::Kernel> = (0..launches)
        .map(|j| {
            let suffix = match (j == 0, j + 1 == launches) {
                (true, _) => TO_ACC,
                (false, true) => FROM_ACC,
                (false, false) => ACC,
            };
            if j == 0 && initial.is_some() {
                kernel(first_entry::<T, O>(op, exclusive, TO_ACC))
            } else {
                kernel(step_entry::<T, O>(op, suffix))
            }
        })
        .collect::<Result<_>>()?;
    let arrays = if launches > 2 { 2 } else { 1 };
    let accumulators: Vec<DeviceBuffer<u32>> = (0..arrays)
        // SAFETY: launch j writes all n accumulators of the array that
        // launch j + 1 reads (accumulator_plan).
        .map(|_| unsafe { accumulator_buffer::<T>(gpu, n) })
        .collect::<Result<_>>()?;
    let output_ptr = output.device_ptr();
    let input_ptr = input.map_or(output_ptr, |v| v.device_ptr());
    let ptr_of = |side: Side, caller: u64| match side {
        Side::Caller => caller,
        Side::Accumulator(a) => accumulators[a].view().device_ptr(),
    };
    let mut distances = steps.iter();
    for (j, &(reads, writes)) in plan.iter().enumerate() {
        let mut args = KernelArgs::new();
        args.scalar(ptr_of(reads, input_ptr))
            .scalar(ptr_of(writes, output_ptr))
            .scalar(n as u64);
        match (j, initial) {
            (0, Some(initial)) => {
                args.scalar(initial);
            }
            _ => {
                let d = *distances
                    .next()
                    .expect("accumulator_plan has one launch per step (plus the shift)");
                args.scalar(d);
            }
        }
        // SAFETY: the arguments match the entry chosen above for launch j:
        // hs_global_shift or hs_global_seed (in: T, out: A, n, initial: T)
        // for a seeded kind's first launch, else hs_global_step(in, out, n, d) reading T
        // (first launch) or A, writing A or T (last launch). Each side holds
        // n values of its type (the caller's views, validated to the same
        // length, or an accumulator array of n); the first launch reads the
        // caller's array and writes an accumulator array, the last reads an
        // accumulator array and writes the output, the others go from one
        // accumulator array to the other, so no launch reads what it
        // writes; indices are guarded against n.
        unsafe { gpu.launch(&kernels[j], config, &args)? };
    }
    // The accumulators drop here: stream-ordered frees after the launches.
    drop(accumulators);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert!(step_distances(1).is_empty());
        assert_eq!(step_distances(2), vec![1]);
        assert_eq!(step_distances(5), vec![1, 2, 4]);
        assert_eq!(step_distances(8), vec![1, 2, 4]);
        assert_eq!(step_distances(9), vec![1, 2, 4, 8]);
        assert_eq!(step_distances((1 << 31) + 17).len(), 32);
    }

    /// Simulates a plan: no launch reads the buffer it writes, and the
    /// result ends in the output.
    #[test]
    fn plans_never_read_what_they_write() {
        #[derive(Clone, Copy, PartialEq, Debug)]
        enum Buf {
            Input,
            Output,
            Temp,
        }
        for launches in 1..12 {
            for in_place in [false, true] {
                let (plan, copy_back) = buffer_plan(launches, in_place);
                assert_eq!(plan.len(), launches);
                let mut src = if in_place { Buf::Output } else { Buf::Input };
                for target in &plan {
                    let dst = match target {
                        Target::Output => Buf::Output,
                        Target::Temp => Buf::Temp,
                    };
                    assert_ne!(src, dst, "launches {launches}, in place {in_place}");
                    src = dst;
                }
                let result = if copy_back { Buf::Output } else { src };
                assert_eq!(
                    result,
                    Buf::Output,
                    "launches {launches}, in place {in_place}"
                );
                assert_eq!(copy_back, src == Buf::Temp);
                if !in_place {
                    assert!(!copy_back);
                }
            }
        }
        // A single out-of-place launch needs no temporary.
        assert_eq!(buffer_plan(1, false).0, vec![Target::Output]);
    }

    /// A narrow type's launches through accumulators: no launch reads what
    /// it writes, the first reads and the last writes the caller's array,
    /// each launch reads what the previous one wrote, and at most two
    /// accumulator arrays are used (one for two launches).
    #[test]
    fn accumulator_plans_never_read_what_they_write() {
        for launches in 2..12 {
            let plan = accumulator_plan(launches);
            assert_eq!(plan.len(), launches);
            assert_eq!(plan[0].0, Side::Caller);
            assert_eq!(plan[launches - 1].1, Side::Caller);
            for (j, &(reads, writes)) in plan.iter().enumerate() {
                assert_ne!(reads, writes, "launches {launches}, launch {j}");
                if j > 0 {
                    assert_eq!(reads, plan[j - 1].1, "launches {launches}, launch {j}");
                    assert_ne!(reads, Side::Caller);
                }
                if let Side::Accumulator(a) = writes {
                    assert!(a < if launches > 2 { 2 } else { 1 });
                }
            }
        }
    }

    #[test]
    fn bytes_grow_with_log_n() {
        assert_eq!(bytes_moved(1, 4, false), 0);
        assert_eq!(bytes_moved(2, 4, false), (3 * 2 - 1) * 4);
        let n = 1u64 << 20;
        let expected: u64 = (0..20).map(|k| 3 * n - (1u64 << k)).sum::<u64>() * 8;
        assert_eq!(bytes_moved(n, 8, false), expected);
        // 2-byte elements: the first step reads them, the last writes them,
        // everything else is 4-byte accumulators.
        assert_eq!(bytes_moved(2, 2, false), (3 * 2 - 1) * 2);
        // n = 4: step d = 1 reads 7 elements, writes 4 accumulators; step
        // d = 2 reads 6 accumulators, writes 4 elements.
        let steps = 7 * 2 + 4 * 4 + 6 * 4 + 4 * 2;
        assert_eq!(bytes_moved(4, 2, false), steps);
    }

    #[test]
    fn a_seeded_kind_adds_its_first_launch() {
        // n = 1: the shift or seed alone, one element read and written.
        assert_eq!(bytes_moved(1, 4, true), 2 * 4);
        assert_eq!(bytes_moved(0, 4, true), 0);
        let n = 1u64 << 10;
        assert_eq!(
            bytes_moved(n, 8, true),
            bytes_moved(n, 8, false) + 2 * n * 8
        );
        // 2-byte elements, n = 2: the seed reads 2 elements and writes 2
        // accumulators; step d = 1 reads 3 accumulators, writes 2 elements.
        assert_eq!(bytes_moved(2, 2, true), 2 * 2 + 2 * 4 + 3 * 4 + 2 * 2);
    }

    /// Racecheck checks shared memory only, so it has nothing to check in
    /// this algorithm's kernels (docs/RELIABILITY.md). This keeps that true: the
    /// sm_90 SASS of this module, for every element type, operator family
    /// and a custom operator, reads and writes global memory and never
    /// shared memory, and never waits at a barrier.
    #[test]
    fn kernels_touch_no_shared_memory() {
        use gpu_core::{BitAnd, BitOr, BitXor, CustomOp, Max, Min, Sum};
        use parprims_testkit::testing::{sass_opcodes, sm90_sass};
        let last = CustomOp::<u32>::new("last", "b", 0, |_, b| b).unwrap();
        let modules = [
            module::<i32, _>(&Sum),
            module::<u32, _>(&BitAnd),
            module::<i64, _>(&BitXor),
            module::<u64, _>(&Max),
            module::<u64, _>(&Min),
            module::<u64, _>(&BitOr),
            module::<u64, _>(&Sum),
            module::<f32, _>(&Max),
            module::<f64, _>(&Sum),
            module::<u32, _>(&last),
        ];
        // Shared-memory loads, stores, atomics and matrix moves; barriers.
        let shared_or_barrier = ["LDS", "STS", "ATOMS", "LDSM", "STSM", "BAR", "LDGSTS"];
        let flagged = |opcodes: Vec<&str>| -> Vec<String> {
            opcodes
                .into_iter()
                .filter(|op| shared_or_barrier.contains(&op.split('.').next().unwrap_or_default()))
                .map(str::to_owned)
                .collect()
        };
        // The detector itself: the Blelloch block scan, which works in shared
        // memory between barriers, must be flagged.
        use crate::recursive::BlockScan;
        let blelloch = crate::blelloch::Blelloch::DEFAULT.module::<u64, _>(&Sum);
        let Some(sass) = sm90_sass(&blelloch) else {
            return; // NVRTC or nvdisasm missing (a panic in CI)
        };
        let seen = flagged(sass_opcodes(&sass));
        for family in ["LDS", "STS", "BAR"] {
            assert!(
                seen.iter().any(|op| op.starts_with(family)),
                "the Blelloch block scan shows no {family}: the opcode reading is broken"
            );
        }
        for module in &modules {
            let Some(sass) = sm90_sass(module) else {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            };
            let opcodes = sass_opcodes(&sass);
            assert!(
                opcodes.iter().any(|op| op.starts_with("LDG"))
                    && opcodes.iter().any(|op| op.starts_with("STG")),
                "{}: no global load or store found: the check would pass vacuously",
                module.name()
            );
            assert_eq!(
                flagged(opcodes),
                Vec::<String>::new(),
                "{}: these instructions touch shared memory or wait at a barrier",
                module.name()
            );
        }
    }
}
