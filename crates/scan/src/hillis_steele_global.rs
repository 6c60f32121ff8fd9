//! `ScanAlgorithm::HillisSteeleGlobal`: Hillis–Steele with one launch per
//! step, ping-ponging between two buffers in global memory.
//!
//! Inclusive scan: for d = 1, 2, 4, … < n, one launch computes
//! `out[i] = in[i − d] ⊕ in[i]` (i ≥ d; `out[i] = in[i]` below d) from one
//! buffer into the other. Exclusive scan with initial value v: the inclusive
//! scan of `[v, x[0], …, x[n−2]]`, built by one extra "shift" launch first.
//!
//! - work: O(n log n) combines; launches: ⌈log2 n⌉ (+1 shift when
//!   exclusive, +1 device copy when an in-place scan ends in the temporary);
//! - global bytes moved: per step n + (n − d) elements read and n written,
//!   ≈ 3n·⌈log2 n⌉ elements in all ([`bytes_moved`]);
//! - shared memory: none; temporary: one n-element device buffer (none for
//!   a single launch out of place);
//! - in place: yes, through the temporary (no launch ever reads and writes
//!   the same buffer: [`buffer_plan`]);
//! - deterministic: yes.
//!
//! Kernel: `kernels/cuda/scan_hillis_steele_global.cu`.

use gpu_core::launch::grid_1d;
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Gpu, KernelArgs, ModuleSource, Operator,
    Result,
};

use crate::kind::ScanKind;

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

fn step_entry<T: Element, O: Operator<T>>(op: &O) -> String {
    format!("hs_global_step_{}_{}", T::SUFFIX, op.name())
}

fn shift_entry<T: Element, O: Operator<T>>(op: &O) -> String {
    format!("hs_global_shift_{}_{}", T::SUFFIX, op.name())
}

/// The module for `T` and `op`: the step and the shift kernels.
pub(crate) fn module<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
    let t = T::CUDA_TYPE;
    ModuleSource::new(format!(
        "scan_hillis_steele_global_{}_{}",
        T::SUFFIX,
        op.name()
    ))
    .operator::<T, O>(op, "op_t")
    .source(parprims_kernels::SCAN_HILLIS_STEELE_GLOBAL)
    .entry(
        step_entry::<T, O>(op),
        &format!("const {t}* in, {t}* out, u64 n, u64 d"),
        &format!("hs_global_step<{t}, op_t>(in, out, n, d)"),
        Some(crate::policy::MAX_BLOCK_THREADS),
    )
    .entry(
        shift_entry::<T, O>(op),
        &format!("const {t}* in, {t}* out, u64 n, {t} initial"),
        &format!("hs_global_shift<{t}>(in, out, n, initial)"),
        Some(crate::policy::MAX_BLOCK_THREADS),
    )
}

/// Global-memory bytes for an inclusive scan of `n` elements: per step d,
/// n + (n − d) elements read and n written.
pub(crate) fn bytes_moved(n: u64, element_bytes: u64) -> u64 {
    step_distances(n)
        .into_iter()
        .map(|d| 3 * n - d)
        .sum::<u64>()
        * element_bytes
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
    let initial = match kind {
        ScanKind::Inclusive => None,
        ScanKind::Exclusive { initial } => Some(initial),
    };
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
    let step_kernel = gpu.stored_kernel(&key, &step_entry::<T, O>(op), || module::<T, O>(op))?;
    let shift_kernel = gpu.stored_kernel(&key, &shift_entry::<T, O>(op), || module::<T, O>(op))?;
    // One element per thread: ⌈n / block_threads⌉ blocks, spread over y
    // past 2^31 − 1 blocks (the kernels use global_thread_index()).
    let (config, _) = grid_1d(n, block_threads, 1, 0)?;
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
                // SAFETY: hs_global_shift(in, out, n, initial) matches the
                // arguments; src and dst each hold n elements and differ
                // (buffer_plan never writes what a launch reads); indices are
                // guarded against n.
                unsafe { gpu.launch(&shift_kernel, config, &args)? };
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

    #[test]
    fn bytes_grow_with_log_n() {
        assert_eq!(bytes_moved(1, 4), 0);
        assert_eq!(bytes_moved(2, 4), (3 * 2 - 1) * 4);
        let n = 1u64 << 20;
        let expected: u64 = (0..20).map(|k| 3 * n - (1u64 << k)).sum::<u64>() * 8;
        assert_eq!(bytes_moved(n, 8), expected);
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
        let blelloch = crate::blelloch::blelloch_module::<u64, _>("blelloch", false, &Sum);
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
