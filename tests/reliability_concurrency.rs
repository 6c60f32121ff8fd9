//! Reliability: concurrent use from many threads, and no device-memory leak.
//!
//! What this binary proves (issue 7):
//!
//! - `Gpu` and the values operations return are `Send + Sync` (a compile-time
//!   check, run in CI).
//! - `reliability_eight_threads_random_operations`: 8 threads, each with its
//!   own stream (`Gpu::with_new_stream`), each run 1,000 random operations
//!   over every primitive (scan: every algorithm, element type, operator,
//!   kind and entry point; compaction: select by flags or predicate,
//!   partition, count, the `_into` forms, both algorithms; transpose;
//!   matvec; conv2d), random sizes (mostly small: 0 … 100k elements,
//!   matrices up to 300 × 300), every result compared with the CPU reference.
//!   Inputs are chosen so that every comparison is exact (integers wrap the
//!   same way on both sides; float inputs are small whole numbers, whose sums
//!   and products are exact in any order).
//! - `reliability_device_memory_does_not_grow`: after a warm-up that loads
//!   every kernel a random operation can use, 8 streams run 10,000 random
//!   operations. Once every stream and the context are idle and the
//!   streams' scratch arenas are released, the device memory this process's
//!   pools hold in live buffers ([`Gpu::pool_memory`]: parprims' pool and
//!   the device's default pool) after all 10,000 is compared with the
//!   reading after the first 100: the growth may be at most
//!   [`LEAK_TOLERANCE`]; and the kernel store may hold at most
//!   [`LATE_MODULES`] more modules. The
//!   same measurement is then shown able to see a leak: 10,000 live 4 KiB
//!   buffers (40 MB) must move it by more than the tolerance. The device's
//!   free memory (`Gpu::memory_info`) is printed beside it, not asserted:
//!   it is device-wide, so other programs on the same GPU move it.
//!
//! The GPU tests take a process-wide lock, so they never run at the same
//! time as each other (the pools' counts cover the whole process: the
//! other test's live buffers would count as held).
//!
//! Run on a GPU: `cargo test --release --test reliability_concurrency --
//! --include-ignored`. `PARPRIMS_SEED=<n>` replays a run (the seed is
//! printed); `PARPRIMS_QUICK_TESTS=1` (set by `scripts/gpu-sanitize.sh`)
//! runs 20 operations per thread and 200 + 200 for the leak check without
//! the warm-up, and then only prints the leak figures (a sanitizer keeps its
//! own device allocations).

mod support;

use support::{conv_options, fresh_seed, gpu, random_bits, same_bits};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use compact::{CompactAlgorithm, Compacted, CustomPredicate, Predicate};
use gpu_core::{
    BitAnd, BitOr, BitXor, CustomOp, DeviceBuffer, DeviceType, Element, Gpu, IntElement, Max, Min,
    Operator, Sum,
};
use linalg::{
    Border, ConvAlgorithm, ConvElement, ConvOptions, Matrix, MatvecAlgorithm, MatvecElement,
    Padding, Transpose, TransposeAlgorithm,
};
use parprims_testkit::rng::{random_flags, SplitMix64};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// Threads (each with its own stream) in both GPU tests.
const THREADS: usize = 8;

/// Largest growth, bytes, of the device memory held in live buffers allowed
/// between the reading after the first 100 operations and the one after
/// 10,000. 16 MiB: below the 40 MB that 10,000 leaked 4 KiB buffers would
/// cost (the positive control checks that such a leak is seen).
const LEAK_TOLERANCE: u64 = 16 << 20;

/// Modules the kernel store may add between the two readings: a kernel that
/// only a rare random shape needs loads once, late; a module loaded again
/// for every call would add thousands.
const LATE_MODULES: usize = 16;

// ---------------------------------------------------------------------------
// Send + Sync (CI).

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn reliability_handles_and_results_are_send_and_sync() {
    assert_send_sync::<Gpu>();
    assert_send_sync::<gpu_core::Kernel>();
    assert_send_sync::<gpu_core::Module>();
    assert_send_sync::<DeviceBuffer<f64>>();
    assert_send_sync::<DeviceBuffer<u8>>();
    assert_send_sync::<Compacted<i32>>();
    assert_send_sync::<Matrix<f32>>();
    assert_send_sync::<Predicate<u64>>();
    assert_send_sync::<gpu_core::CustomOp<i32>>();
    assert_send_sync::<gpu_core::Error>();
    // A random-operation schedule is reproducible from its seed (the
    // property the failure messages rely on).
    let plan = |seed| {
        let mut rng = SplitMix64::new(seed);
        (0..64).map(|_| pick_kind(&mut rng)).collect::<Vec<_>>()
    };
    assert_eq!(plan(7), plan(7));
    assert_ne!(plan(7), plan(8));
    // Every primitive is drawn.
    let kinds = plan(11);
    for kind in PRIMITIVES {
        assert!(kinds.contains(&kind), "{kind} never drawn");
    }
}

/// The leak verdict: how much the bytes held in live buffers grew between
/// two readings, and whether that exceeds [`LEAK_TOLERANCE`].
fn leak_verdict(held_before: u64, held_after: u64) -> Result<u64, u64> {
    let grown = held_after.saturating_sub(held_before);
    if grown <= LEAK_TOLERANCE {
        Ok(grown)
    } else {
        Err(grown)
    }
}

#[test]
fn reliability_leak_verdict_catches_ten_thousand_small_buffers() {
    let held = 3u64 << 20;
    // 10,000 leaked 4 KiB buffers (40,960,000 B) are a leak.
    assert_eq!(leak_verdict(held, held + 10_000 * 4096), Err(40_960_000));
    // So is one 20 MiB buffer kept by mistake.
    assert!(leak_verdict(held, held + (20 << 20)).is_err());
    // A few MiB more are not; less held is not.
    assert_eq!(leak_verdict(held, held + (4 << 20)), Ok(4 << 20));
    assert_eq!(leak_verdict(held, 0), Ok(0));
    assert_eq!(leak_verdict(held, held), Ok(0));
}

// ---------------------------------------------------------------------------
// Shared test state.

fn device_lock() -> MutexGuard<'static, ()> {
    static DEVICE: Mutex<()> = Mutex::new(());
    DEVICE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn quick() -> bool {
    parprims_testkit::testing::quick_tests()
}

// ---------------------------------------------------------------------------
// Random operations.

const PRIMITIVES: [&str; 5] = ["scan", "compact", "transpose", "matvec", "conv"];

fn pick_kind(rng: &mut SplitMix64) -> &'static str {
    match rng.below(10) {
        0..=3 => "scan",
        4..=5 => "compact",
        6 => "transpose",
        7 => "matvec",
        _ => "conv",
    }
}

fn pick<T: Copy>(rng: &mut SplitMix64, items: &[T]) -> T {
    items[rng.below(items.len() as u64) as usize]
}

/// A length, mostly small: edges of warps, blocks and tiles, then uniform
/// up to 1k, 10k and 100k.
fn random_len(rng: &mut SplitMix64) -> usize {
    const EDGES: [usize; 16] = [
        0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 65_537,
    ];
    match rng.below(10) {
        0 => pick(rng, &EDGES),
        1..=5 => rng.below(1_001) as usize,
        6..=8 => rng.below(10_001) as usize,
        _ => rng.below(100_001) as usize,
    }
}

/// A matrix side 1 … `max`, edges of 32-wide tiles often.
fn random_side(rng: &mut SplitMix64, max: usize) -> usize {
    match rng.below(4) {
        0 => pick(rng, &[1, 2, 31, 32, 33, 63, 64, 65]).min(max),
        _ => 1 + rng.below(max as u64) as usize,
    }
}

/// Inputs for exact comparisons: small whole numbers for floats (every sum
/// and product of them below 2^24 is exact in any order), wide values for
/// integers (so sums wrap).
fn values<T: Element>(rng: &mut SplitMix64, n: usize, float_half_range: f64) -> Vec<T> {
    support::wide_values(n, rng.next_u64(), -float_half_range, float_half_range)
}

/// Small whole numbers for every type (matvec and conv inputs).
fn small_values<T: Element>(rng: &mut SplitMix64, n: usize, half_range: f64) -> Vec<T> {
    support::small_values(n, rng.next_u64(), half_range)
}

fn compare<T: DeviceType>(got: &[T], expected: &[T], what: &str) -> Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            expected.len()
        ));
    }
    match got.iter().zip(expected).position(|(a, b)| !same_bits(a, b)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {:?}, expected {:?}",
            got[i], expected[i]
        )),
    }
}

/// Runs one random operation (chosen from `rng`) on `gpu` and checks it
/// against the CPU. Returns the primitive's name.
fn run_random_op(gpu: &Gpu, rng: &mut SplitMix64) -> Result<&'static str, String> {
    let kind = pick_kind(rng);
    match kind {
        "scan" => scan_any(gpu, rng),
        "compact" => compact_any(gpu, rng),
        "transpose" => transpose_any(gpu, rng),
        "matvec" => matvec_any(gpu, rng),
        _ => conv_any(gpu, rng),
    }?;
    Ok(kind)
}

// --- scan ------------------------------------------------------------------

fn scan_any(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    let n = random_len(rng);
    match rng.below(6) {
        0 => scan_int::<i32>(gpu, rng, n),
        1 => scan_int::<u32>(gpu, rng, n),
        2 => scan_int::<i64>(gpu, rng, n),
        3 => scan_int::<u64>(gpu, rng, n),
        4 => scan_float::<f32>(gpu, rng, n),
        _ => scan_float::<f64>(gpu, rng, n),
    }
}

fn scan_int<T: IntElement>(gpu: &Gpu, rng: &mut SplitMix64, n: usize) -> Result<(), String> {
    let input = values::<T>(rng, n, 8.0);
    match rng.below(7) {
        0 => scan_case(gpu, rng, &Sum, input),
        1 => scan_case(gpu, rng, &Max, input),
        2 => scan_case(gpu, rng, &Min, input),
        3 => scan_case(gpu, rng, &BitAnd, input),
        4 => scan_case(gpu, rng, &BitOr, input),
        5 => scan_case(gpu, rng, &BitXor, input),
        _ => scan_case(gpu, rng, &custom_xor::<T>(), input),
    }
}

/// A caller's operator (compiled by NVRTC on first use, from whichever
/// thread gets there first).
fn custom_xor<T: IntElement>() -> CustomOp<T> {
    CustomOp::new("rel_xor", "(a ^ b)", T::zero(), |a: T, b: T| a.bit_xor(b))
        .expect("a valid custom operator")
}

/// A caller's predicate, for every element type.
fn custom_positive<T: Element>() -> Predicate<T> {
    Predicate::Custom(
        CustomPredicate::new("rel_positive", "x > 0", |x: T| x > T::zero())
            .expect("a valid custom predicate"),
    )
}

fn scan_float<T: Element>(gpu: &Gpu, rng: &mut SplitMix64, n: usize) -> Result<(), String> {
    let input = values::<T>(rng, n, 8.0);
    match rng.below(3) {
        0 => scan_case(gpu, rng, &Sum, input),
        1 => scan_case(gpu, rng, &Max, input),
        _ => scan_case(gpu, rng, &Min, input),
    }
}

fn random_scan_options(rng: &mut SplitMix64) -> ScanOptions {
    let algorithm = pick(rng, &ScanAlgorithm::ALL);
    let options = ScanOptions::new(algorithm);
    if !algorithm.takes_block_threads() || rng.below(2) == 0 {
        return options;
    }
    let block = if algorithm.needs_power_of_two_block() {
        pick(rng, &[32, 64, 128, 256, 512, 1024])
    } else {
        pick(rng, &[32, 64, 96, 128, 160, 256, 480, 512, 992, 1024])
    };
    options.with_block_threads(block)
}

fn scan_case<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    rng: &mut SplitMix64,
    op: &O,
    input: Vec<T>,
) -> Result<(), String> {
    let n = input.len();
    let options = random_scan_options(rng);
    let kind = if rng.below(2) == 0 {
        ScanKind::Inclusive
    } else {
        ScanKind::Exclusive {
            initial: values::<T>(rng, 1, 8.0)[0],
        }
    };
    let form = rng.below(3);
    let what = format!(
        "scan {} n={n} op={} {kind:?} {options:?} form={form}",
        T::SUFFIX,
        op.name()
    );
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    let expected = scan::cpu::scan(&input, op, kind);
    let mut data = DeviceBuffer::from_host(gpu, &input).map_err(fail)?;
    let got = match form {
        0 => scan::scan(gpu, data.view(), op, kind, &options)
            .and_then(|out| out.to_host(gpu))
            .map_err(fail)?,
        1 => {
            let mut out = DeviceBuffer::<T>::poisoned(gpu, n).map_err(fail)?;
            scan::scan_into(gpu, data.view(), out.view_mut(), op, kind, &options)
                .and_then(|()| out.to_host(gpu))
                .map_err(fail)?
        }
        _ => scan::scan_in_place(gpu, data.view_mut(), op, kind, &options)
            .and_then(|()| data.to_host(gpu))
            .map_err(fail)?,
    };
    compare(&got, &expected, &what)
}

// --- compaction ------------------------------------------------------------

fn compact_any(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    let n = random_len(rng);
    match rng.below(6) {
        0 => compact_case::<i32>(gpu, rng, n),
        1 => compact_case::<u32>(gpu, rng, n),
        2 => compact_case::<i64>(gpu, rng, n),
        3 => compact_case::<u64>(gpu, rng, n),
        4 => compact_case::<f32>(gpu, rng, n),
        _ => compact_case::<f64>(gpu, rng, n),
    }
}

fn random_predicate<T: Element>(rng: &mut SplitMix64, input: &[T]) -> Predicate<T> {
    let mut pivot = || {
        if input.is_empty() || rng.below(4) == 0 {
            values::<T>(rng, 1, 8.0)[0]
        } else {
            input[rng.below(input.len() as u64) as usize]
        }
    };
    let (a, b) = (pivot(), pivot());
    match rng.below(9) {
        8 => custom_positive(),
        0 => Predicate::NonZero,
        1 => Predicate::Eq(a),
        2 => Predicate::Ne(a),
        3 => Predicate::Lt(a),
        4 => Predicate::Le(a),
        5 => Predicate::Gt(a),
        6 => Predicate::Ge(a),
        _ => {
            let (low, high) = if a < b { (a, b) } else { (b, a) };
            Predicate::InRange { low, high }
        }
    }
}

fn compact_case<T: Element>(gpu: &Gpu, rng: &mut SplitMix64, n: usize) -> Result<(), String> {
    let input = values::<T>(rng, n, 8.0);
    let algorithm = pick(rng, &CompactAlgorithm::all());
    let predicate = random_predicate(rng, &input);
    let form = rng.below(7);
    let what = format!(
        "compact {} n={n} {algorithm} {predicate:?} form={form}",
        T::SUFFIX
    );
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    let data = DeviceBuffer::from_host(gpu, &input).map_err(fail)?;
    let owned = |result: gpu_core::Result<Compacted<T>>| -> Result<Vec<T>, String> {
        let kept = result.map_err(fail)?;
        if kept.count != kept.items.len() {
            return Err(format!(
                "{what}: count {} but {} items",
                kept.count,
                kept.items.len()
            ));
        }
        kept.items.to_host(gpu).map_err(fail)
    };
    match form {
        0 => {
            let density = pick(rng, &[0.0, 0.01, 0.5, 0.99, 1.0]);
            let flags = random_flags(n, rng.next_u64(), density);
            let expected = compact::cpu::select_flagged(&input, &flags).map_err(fail)?;
            let d_flags = DeviceBuffer::from_host(gpu, &flags).map_err(fail)?;
            let got = owned(compact::select_flagged(
                gpu,
                data.view(),
                d_flags.view(),
                algorithm,
            ))?;
            compare(&got, &expected, &what)
        }
        1 => {
            let expected = compact::cpu::select_if(&input, &predicate);
            let got = owned(compact::select_if(gpu, data.view(), &predicate, algorithm))?;
            compare(&got, &expected, &what)
        }
        2 => {
            let (expected, expected_count) = compact::cpu::partition(&input, &predicate);
            let (out, count) =
                compact::partition(gpu, data.view(), &predicate, algorithm).map_err(fail)?;
            if count != expected_count {
                return Err(format!("{what}: count {count}, expected {expected_count}"));
            }
            compare(&out.to_host(gpu).map_err(fail)?, &expected, &what)
        }
        3 => {
            let expected = compact::cpu::count_if(&input, &predicate);
            let count = compact::count_if(gpu, data.view(), &predicate).map_err(fail)?;
            if count == expected {
                Ok(())
            } else {
                Err(format!("{what}: count {count}, expected {expected}"))
            }
        }
        4 | 5 => {
            // select_if_into / select_flagged_into: output[count..] untouched.
            let extra = rng.below(3) as usize;
            let mut out = DeviceBuffer::<T>::poisoned(gpu, n + extra).map_err(fail)?;
            let mut count_out = DeviceBuffer::<u64>::poisoned(gpu, 1).map_err(fail)?;
            let expected = if form == 4 {
                compact::select_if_into(
                    gpu,
                    data.view(),
                    &predicate,
                    out.view_mut(),
                    count_out.view_mut(),
                    algorithm,
                )
                .map_err(fail)?;
                compact::cpu::select_if(&input, &predicate)
            } else {
                let flags = random_flags(n, rng.next_u64(), 0.5);
                let d_flags = DeviceBuffer::from_host(gpu, &flags).map_err(fail)?;
                compact::select_flagged_into(
                    gpu,
                    data.view(),
                    d_flags.view(),
                    out.view_mut(),
                    count_out.view_mut(),
                    algorithm,
                )
                .map_err(fail)?;
                compact::cpu::select_flagged(&input, &flags).map_err(fail)?
            };
            let count = count_out.to_host(gpu).map_err(fail)?[0] as usize;
            if count != expected.len() {
                return Err(format!(
                    "{what}: count {count}, expected {}",
                    expected.len()
                ));
            }
            let got = out.to_host(gpu).map_err(fail)?;
            compare(&got[..count], &expected, &what)?;
            compare(&got[count..], &vec![T::poison(); n + extra - count], &what)
                .map_err(|e| format!("{e} (past the count: must be untouched)"))
        }
        _ => {
            let mut out = DeviceBuffer::<T>::poisoned(gpu, n).map_err(fail)?;
            let mut count_out = DeviceBuffer::<u64>::poisoned(gpu, 1).map_err(fail)?;
            compact::partition_into(
                gpu,
                data.view(),
                &predicate,
                out.view_mut(),
                count_out.view_mut(),
                algorithm,
            )
            .map_err(fail)?;
            let (expected, expected_count) = compact::cpu::partition(&input, &predicate);
            let count = count_out.to_host(gpu).map_err(fail)?[0] as usize;
            if count != expected_count {
                return Err(format!("{what}: count {count}, expected {expected_count}"));
            }
            compare(&out.to_host(gpu).map_err(fail)?, &expected, &what)
        }
    }
}

// --- transpose -------------------------------------------------------------

fn transpose_any(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    match rng.below(7) {
        0 => transpose_case::<u8>(gpu, rng),
        1 => transpose_case::<i32>(gpu, rng),
        2 => transpose_case::<u32>(gpu, rng),
        3 => transpose_case::<f32>(gpu, rng),
        4 => transpose_case::<i64>(gpu, rng),
        5 => transpose_case::<u64>(gpu, rng),
        _ => transpose_case::<f64>(gpu, rng),
    }
}

fn transpose_case<T: DeviceType>(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    let (rows, cols) = (random_side(rng, 300), random_side(rng, 300));
    let algorithm = pick(rng, &TransposeAlgorithm::ALL);
    let into = rng.below(2) == 0;
    let what = format!(
        "transpose {} {rows}×{cols} {algorithm} into={into}",
        T::SUFFIX
    );
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    let host = random_bits::<T>(rng, rows * cols);
    let expected = linalg::cpu::transpose(&host, rows, cols).map_err(fail)?;
    let a = Matrix::from_host(gpu, rows, cols, &host).map_err(fail)?;
    let got = if into {
        let mut out = Matrix::<T>::poisoned(gpu, cols, rows).map_err(fail)?;
        linalg::transpose(gpu, a.view(), out.view_mut(), algorithm)
            .and_then(|()| out.to_host(gpu))
            .map_err(fail)?
    } else {
        linalg::transpose_new(gpu, a.view(), algorithm)
            .and_then(|m| m.to_host(gpu))
            .map_err(fail)?
    };
    compare(&got, &expected, &what)
}

// --- matvec ----------------------------------------------------------------

fn matvec_any(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    match rng.below(3) {
        0 => matvec_case::<f32>(gpu, rng),
        1 => matvec_case::<f64>(gpu, rng),
        _ => matvec_case::<i32>(gpu, rng),
    }
}

fn matvec_case<T: MatvecElement>(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    let (rows, cols) = (random_side(rng, 300), random_side(rng, 300));
    let op = pick(rng, &[Transpose::No, Transpose::Yes]);
    let algorithm = match rng.below(4) {
        0 => MatvecAlgorithm::Global,
        1 => MatvecAlgorithm::SharedTiled {
            tile: pick(rng, &[1, 7, 32, 100, 256, 1024]),
        },
        _ => MatvecAlgorithm::Tuned,
    };
    let into = rng.below(2) == 0;
    let what = format!(
        "matvec {} {rows}×{cols} {op:?} {algorithm} into={into}",
        T::SUFFIX
    );
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    // |a|, |x| ≤ 8 and at most 300 terms: every partial sum is exact.
    let host_a = small_values::<T>(rng, rows * cols, 8.0);
    let host_x = small_values::<T>(rng, op.input_len(rows, cols), 8.0);
    let expected = linalg::cpu::matvec(&host_a, rows, cols, &host_x, op).map_err(fail)?;
    let a = Matrix::from_host(gpu, rows, cols, &host_a).map_err(fail)?;
    let x = DeviceBuffer::from_host(gpu, &host_x).map_err(fail)?;
    let got = if into {
        let mut y = DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).map_err(fail)?;
        linalg::matvec(gpu, a.view(), x.view(), y.view_mut(), op, algorithm)
            .and_then(|()| y.to_host(gpu))
            .map_err(fail)?
    } else {
        linalg::matvec_new(gpu, a.view(), x.view(), op, algorithm)
            .and_then(|y| y.to_host(gpu))
            .map_err(fail)?
    };
    compare(&got, &expected, &what)
}

// --- conv2d ----------------------------------------------------------------

fn conv_any(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    match rng.below(3) {
        0 => conv_case::<f32>(gpu, rng),
        1 => conv_case::<f64>(gpu, rng),
        _ => conv_case::<i32>(gpu, rng),
    }
}

fn random_conv_options<T: ConvElement>(
    rng: &mut SplitMix64,
    h: usize,
    w: usize,
    k: usize,
) -> ConvOptions {
    // Drawn in this order (the random stream of a seed stays the same).
    let border = pick(rng, &Border::ALL);
    let padding = pick(rng, &Padding::ALL);
    let flip = rng.below(2) == 0;
    let algorithm = pick(rng, &ConvAlgorithm::ALL);
    let block = pick(rng, &linalg::conv::CONV_BLOCKS);
    let mut options = conv_options(algorithm, (border, padding), flip, block);
    if options.border == Border::Valid && (k > h || k > w) {
        options.border = Border::Same;
    }
    let shape = |o: &ConvOptions| linalg::conv::output_shape(h, w, k, o.border);
    let valid = |o: &ConvOptions| {
        shape(o)
            .and_then(|out| linalg::validate_conv::<T>((h, w), (k, k), out, o))
            .is_ok()
    };
    if !valid(&options) {
        // A block whose tile does not fit for this K: the default does.
        options.block = linalg::conv::DEFAULT_BLOCK;
    }
    options
}

fn conv_case<T: ConvElement>(gpu: &Gpu, rng: &mut SplitMix64) -> Result<(), String> {
    let k = if rng.below(5) == 0 {
        8 + rng.below(24) as usize
    } else {
        1 + rng.below(7) as usize
    };
    let max_side = if k <= 7 { 200 } else { 64 };
    let (h, w) = (random_side(rng, max_side), random_side(rng, max_side));
    let options = random_conv_options::<T>(rng, h, w, k);
    let into = rng.below(2) == 0;
    let what = format!("conv2d {} {h}×{w} K={k} {options:?} into={into}", T::SUFFIX);
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    // |x|, |f| ≤ 4 and at most 31² terms: every partial sum is exact.
    let host_image = small_values::<T>(rng, h * w, 4.0);
    let host_filter = small_values::<T>(rng, k * k, 4.0);
    let expected =
        linalg::conv_cpu::conv2d(&host_image, h, w, &host_filter, k, &options).map_err(fail)?;
    let image = Matrix::from_host(gpu, h, w, &host_image).map_err(fail)?;
    let filter = Matrix::from_host(gpu, k, k, &host_filter).map_err(fail)?;
    let got = if into {
        let (oh, ow) = linalg::conv::output_shape(h, w, k, options.border).map_err(fail)?;
        let mut out = Matrix::<T>::poisoned(gpu, oh, ow).map_err(fail)?;
        linalg::conv2d(gpu, image.view(), filter.view(), out.view_mut(), &options)
            .and_then(|()| out.to_host(gpu))
            .map_err(fail)?
    } else {
        linalg::conv2d_new(gpu, image.view(), filter.view(), &options)
            .and_then(|m| m.to_host(gpu))
            .map_err(fail)?
    };
    compare(&got, &expected, &what)
}

// ---------------------------------------------------------------------------
// Running many operations on many streams.

/// Runs random operations on `streams` (one thread each) until `counter`
/// reaches `until`; operation `i` uses the generator seeded with
/// `seed ^ i·φ`, so a failure message names everything needed to replay it.
/// Returns how often each primitive ran.
fn run_operations(
    streams: &[Gpu],
    counter: &AtomicUsize,
    until: usize,
    seed: u64,
) -> [usize; PRIMITIVES.len()] {
    let results: Vec<Result<[usize; PRIMITIVES.len()], String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .enumerate()
            .map(|(thread, gpu)| {
                scope.spawn(move || {
                    let mut ran = [0usize; PRIMITIVES.len()];
                    loop {
                        let i = counter.fetch_add(1, Ordering::Relaxed);
                        if i >= until {
                            counter.fetch_min(until, Ordering::Relaxed);
                            return Ok(ran);
                        }
                        let op_seed = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        let mut rng = SplitMix64::new(op_seed);
                        let kind = run_random_op(gpu, &mut rng).map_err(|e| {
                            format!("thread {thread}, operation {i} (seed {seed}): {e}")
                        })?;
                        let slot = PRIMITIVES
                            .iter()
                            .position(|&p| p == kind)
                            .expect("run_random_op returns one of PRIMITIVES");
                        ran[slot] += 1;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut total = [0usize; PRIMITIVES.len()];
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(ran) => total.iter_mut().zip(ran).for_each(|(t, r)| *t += r),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    total
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_eight_threads_random_operations() {
    let _device = device_lock();
    let base = gpu();
    let seed = fresh_seed();
    let per_thread = if quick() { 20 } else { 1000 };
    eprintln!("seed {seed} (PARPRIMS_SEED={seed} replays it): {THREADS} threads × {per_thread} operations");
    let streams: Vec<Gpu> = (0..THREADS)
        .map(|_| base.with_new_stream().expect("a new stream"))
        .collect();
    for (i, s) in streams.iter().enumerate() {
        assert!(!Arc::ptr_eq(s.cudarc_stream(), base.cudarc_stream()));
        for t in &streams[..i] {
            assert!(!Arc::ptr_eq(s.cudarc_stream(), t.cudarc_stream()));
        }
    }
    // Each thread runs exactly `per_thread` operations of its own schedule.
    let results: Vec<[usize; PRIMITIVES.len()]> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .enumerate()
            .map(|(thread, gpu)| {
                scope.spawn(move || {
                    let counter = AtomicUsize::new(0);
                    let thread_seed = seed ^ ((thread as u64 + 1) << 56);
                    run_operations(std::slice::from_ref(gpu), &counter, per_thread, thread_seed)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked (message above)"))
            .collect()
    });
    let mut total = [0usize; PRIMITIVES.len()];
    for ran in &results {
        assert_eq!(ran.iter().sum::<usize>(), per_thread);
        total.iter_mut().zip(ran).for_each(|(t, r)| *t += r);
    }
    eprintln!("operations per primitive: {PRIMITIVES:?} = {total:?}");
    assert!(total.iter().all(|&c| c > 0), "every primitive ran");
    for s in &streams {
        s.synchronize().expect("every stream drains without error");
    }
}

/// Runs one operation of every (primitive, type, operator, algorithm,
/// entry point) a random operation can draw, then 1,000 random ones (for
/// size-dependent paths: recursion levels, partial tiles), so every module
/// and kernel is loaded before memory is measured (with lazy loading a
/// kernel's code, and any growth of the context's local-memory reservation,
/// reaches the device at its first launch).
fn warm_up(gpu: &Gpu, seed: u64) {
    warm_scans_int::<i32>(gpu);
    warm_scans_int::<u32>(gpu);
    warm_scans_int::<i64>(gpu);
    warm_scans_int::<u64>(gpu);
    warm_scans::<f32, _>(gpu, &Sum);
    warm_scans::<f32, _>(gpu, &Max);
    warm_scans::<f32, _>(gpu, &Min);
    warm_scans::<f64, _>(gpu, &Sum);
    warm_scans::<f64, _>(gpu, &Max);
    warm_scans::<f64, _>(gpu, &Min);
    warm_compact::<i32>(gpu);
    warm_compact::<u32>(gpu);
    warm_compact::<i64>(gpu);
    warm_compact::<u64>(gpu);
    warm_compact::<f32>(gpu);
    warm_compact::<f64>(gpu);
    warm_transpose::<u8>(gpu);
    warm_transpose::<i32>(gpu);
    warm_transpose::<u32>(gpu);
    warm_transpose::<f32>(gpu);
    warm_transpose::<i64>(gpu);
    warm_transpose::<u64>(gpu);
    warm_transpose::<f64>(gpu);
    warm_matvec::<f32>(gpu);
    warm_matvec::<f64>(gpu);
    warm_matvec::<i32>(gpu);
    // Every conv entry (K 1 … 7 and the generic one), type and algorithm.
    for k in [1, 2, 3, 4, 5, 6, 7, 9] {
        for algorithm in ConvAlgorithm::ALL {
            warm_conv::<f32>(gpu, k, algorithm);
            warm_conv::<f64>(gpu, k, algorithm);
            warm_conv::<i32>(gpu, k, algorithm);
        }
    }
    let mut rng = SplitMix64::new(seed);
    for _ in 0..1000 {
        let op_seed = rng.next_u64();
        run_random_op(gpu, &mut SplitMix64::new(op_seed))
            .unwrap_or_else(|e| panic!("warm-up operation (seed {op_seed}): {e}"));
    }
    gpu.synchronize().expect("warm-up drains");
}

fn warm_scans_int<T: IntElement>(gpu: &Gpu) {
    warm_scans::<T, _>(gpu, &Sum);
    warm_scans::<T, _>(gpu, &Max);
    warm_scans::<T, _>(gpu, &Min);
    warm_scans::<T, _>(gpu, &BitAnd);
    warm_scans::<T, _>(gpu, &BitOr);
    warm_scans::<T, _>(gpu, &BitXor);
    warm_scans::<T, _>(gpu, &custom_xor::<T>());
}

fn warm_scans<T: Element, O: Operator<T>>(gpu: &Gpu, op: &O) {
    for n in [1000, 70_000] {
        let input = DeviceBuffer::<T>::filled(gpu, n, T::one()).expect("input");
        let mut data = DeviceBuffer::<T>::filled(gpu, n, T::one()).expect("data");
        for algorithm in ScanAlgorithm::ALL {
            let options = ScanOptions::new(algorithm);
            for kind in [
                ScanKind::Inclusive,
                ScanKind::Exclusive {
                    initial: op.identity(),
                },
            ] {
                scan::scan(gpu, input.view(), op, kind, &options).expect("warm-up scan");
                scan::scan_in_place(gpu, data.view_mut(), op, kind, &options)
                    .expect("warm-up scan");
            }
        }
    }
}

fn warm_compact<T: Element>(gpu: &Gpu) {
    let n = 5000;
    let input = DeviceBuffer::<T>::filled(gpu, n, T::one()).expect("input");
    let flags = DeviceBuffer::<u8>::filled(gpu, n, 1).expect("flags");
    let mut out = DeviceBuffer::<T>::poisoned(gpu, n).expect("out");
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("count");
    for predicate in [Predicate::Gt(T::zero()), custom_positive()] {
        warm_compact_with(gpu, &input, &flags, &mut out, &mut count, &predicate);
    }
}

fn warm_compact_with<T: Element>(
    gpu: &Gpu,
    input: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
    out: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
    predicate: &Predicate<T>,
) {
    compact::count_if(gpu, input.view(), predicate).expect("warm-up count");
    for algorithm in CompactAlgorithm::all() {
        compact::select_flagged(gpu, input.view(), flags.view(), algorithm)
            .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
        compact::select_if(gpu, input.view(), predicate, algorithm)
            .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
        compact::partition(gpu, input.view(), predicate, algorithm)
            .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
        compact::select_flagged_into(
            gpu,
            input.view(),
            flags.view(),
            out.view_mut(),
            count.view_mut(),
            algorithm,
        )
        .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
        compact::select_if_into(
            gpu,
            input.view(),
            predicate,
            out.view_mut(),
            count.view_mut(),
            algorithm,
        )
        .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
        compact::partition_into(
            gpu,
            input.view(),
            predicate,
            out.view_mut(),
            count.view_mut(),
            algorithm,
        )
        .unwrap_or_else(|e| panic!("warm-up {algorithm}: {e}"));
    }
}

fn warm_transpose<T: DeviceType>(gpu: &Gpu) {
    for (rows, cols) in [(1, 1), (40, 70), (300, 33)] {
        let a = Matrix::<T>::zeros(gpu, rows, cols).expect("matrix");
        for algorithm in TransposeAlgorithm::ALL {
            linalg::transpose_new(gpu, a.view(), algorithm).expect("warm-up transpose");
        }
    }
}

fn warm_matvec<T: MatvecElement>(gpu: &Gpu) {
    // Aligned and unaligned rows, tall (two-pass Aᵀ·x) and wide shapes.
    for (rows, cols) in [
        (1, 1),
        (300, 40),
        (300, 37),
        (40, 300),
        (37, 299),
        (300, 300),
    ] {
        let a = Matrix::<T>::zeros(gpu, rows, cols).expect("matrix");
        for op in [Transpose::No, Transpose::Yes] {
            let x = DeviceBuffer::<T>::zeros(gpu, op.input_len(rows, cols)).expect("x");
            for algorithm in MatvecAlgorithm::all() {
                linalg::matvec_new(gpu, a.view(), x.view(), op, algorithm).expect("warm-up matvec");
            }
        }
    }
}

fn warm_conv<T: ConvElement>(gpu: &Gpu, k: usize, algorithm: ConvAlgorithm) {
    let options = ConvOptions {
        algorithm,
        ..ConvOptions::default()
    };
    let image = Matrix::<T>::zeros(gpu, 40, 40).expect("image");
    let filter = Matrix::<T>::zeros(gpu, k, k).expect("filter");
    linalg::conv2d_new(gpu, image.view(), filter.view(), &options).expect("warm-up conv");
}

/// One reading of the device memory, taken once every stream and the
/// context are idle.
struct Settled {
    /// Bytes in live buffers of this process's pools (parprims' pool and
    /// the device's default pool), the streams' scratch arenas released.
    held: u64,
    /// Modules in the context's kernel store.
    modules: usize,
    /// The device's free memory (device-wide: other programs move it).
    free: usize,
}

fn settled(base: &Gpu, streams: &[Gpu]) -> Settled {
    for s in streams {
        s.synchronize().expect("stream drains");
    }
    base.synchronize().expect("stream drains");
    base.cudarc_context().synchronize().expect("context drains");
    // A stream's scratch arena keeps what its largest call needed so far:
    // reuse, not a leak. Release every arena, and give the memory the pool
    // keeps back to the driver so the free-memory figure counts it.
    for s in streams {
        s.trim_memory_pool().expect("stream's arena released");
    }
    base.trim_memory_pool().expect("pool trimmed");
    let pools = base.pool_memory().expect("pool memory");
    Settled {
        held: pools.used + pools.default_pool_used,
        modules: base.kernel_store().module_count(),
        free: base.memory_info().expect("memory info").0,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_device_memory_does_not_grow() {
    let _device = device_lock();
    let base = gpu();
    let seed = fresh_seed();
    let (first, total) = if quick() { (200, 400) } else { (100, 10_000) };
    eprintln!("seed {seed} (PARPRIMS_SEED={seed} replays it)");
    if quick() {
        // Under a sanitizer the figures are only printed: skip the long
        // warm-up (thousands of instrumented launches).
        eprintln!("quick mode: no warm-up");
    } else {
        warm_up(base, seed ^ 0xabcd);
    }
    let streams: Vec<Gpu> = (0..THREADS)
        .map(|_| base.with_new_stream().expect("a new stream"))
        .collect();
    let counter = AtomicUsize::new(0);
    run_operations(&streams, &counter, first, seed);
    let at_first = settled(base, &streams);
    let ran = run_operations(&streams, &counter, total, seed);
    let at_total = settled(base, &streams);
    let verdict = leak_verdict(at_first.held, at_total.held);
    let grown = verdict.unwrap_or_else(|grown| grown);
    let (_, device_total) = base.memory_info().expect("memory info");
    eprintln!(
        "held in live buffers after {first} operations: {} B; after {total}: {} B \
         (grown {grown} B, tolerance {LEAK_TOLERANCE} B); modules {} then {}; \
         device free memory {} B then {} B of {device_total} B; operations {PRIMITIVES:?} = {ran:?}",
        at_first.held, at_total.held, at_first.modules, at_total.modules, at_first.free, at_total.free
    );

    // Positive control: 10,000 live 4 KiB buffers must show up.
    let held: Vec<DeviceBuffer<u8>> = (0..10_000)
        .map(|_| DeviceBuffer::<u8>::zeros(base, 4096).expect("4 KiB"))
        .collect();
    let while_held = settled(base, &streams);
    let seen = while_held.held.saturating_sub(at_total.held);
    drop(held);
    let after_drop = settled(base, &streams);
    eprintln!(
        "positive control: 10,000 × 4 KiB held moved the bytes held by {seen} B \
         (device free memory by {} B); after dropping them {} B are held",
        at_total.free.saturating_sub(while_held.free),
        after_drop.held
    );
    if quick() {
        eprintln!("quick mode (sanitizer): leak figures printed, not asserted");
        return;
    }
    assert!(
        verdict.is_ok(),
        "the bytes held in live buffers grew by {grown} B over {} operations (tolerance {LEAK_TOLERANCE} B): a leak",
        total - first
    );
    assert!(
        at_total.modules <= at_first.modules + LATE_MODULES,
        "the kernel store grew from {} to {} modules over {} operations: modules loaded again",
        at_first.modules,
        at_total.modules,
        total - first
    );
    assert!(
        leak_verdict(at_total.held, while_held.held).is_err(),
        "the measurement cannot see 10,000 × 4 KiB buffers (moved by {seen} B)"
    );
    assert!(
        leak_verdict(at_total.held, after_drop.held).is_ok(),
        "dropping the control buffers gave their memory back"
    );
}
