//! GPU against the CPU reference for every algorithm × element type ×
//! operator (and a non-commutative custom operator): inclusive, exclusive
//! and inclusive from a non-identity initial value, into a new buffer, into a poisoned
//! buffer and in place, over lengths biased to the edges (0, 1, 31, 32, 33,
//! tile ± 1, 2·tile ± 1, 2^k ± 1, two and three recursion levels) plus
//! proptest-drawn lengths, for the default and extreme block sizes.
//!
//! Needs a CUDA GPU: `cargo test -p parprims-scan --test scan_gpu -- --include-ignored`.

mod scan_support;

use gpu_core::{BitAnd, BitOr, BitXor, DeviceBuffer, Element, Max, Min, Operator, Sum};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};
use scan_support::*;

/// Largest length of the fixed edge cases (keeps each test quick). At the
/// quick scale (`parprims_testkit::testing`, the sanitizer script) 2^17 + 1: the
/// tile² + 1 lengths of the teaching variants' small blocks (three levels
/// of the recursive driver) and several look-back tiles stay in.
fn max_edge_length() -> usize {
    parprims_testkit::testing::scaled(1 << 21, (1 << 17) + 1)
}

/// Upper end of the proptest-drawn lengths (and of their edge picks).
fn max_drawn_length() -> usize {
    parprims_testkit::testing::scaled(300_000, 40_000)
}

fn initial_value<T: Element, O: Operator<T>>(op: &O, seed: u64) -> T {
    let mut rng = SplitMix64::new(seed ^ 0x1417);
    let value: T = random_value(&mut rng, op.name() == "sum");
    // Never the identity, so a dropped initial value shows.
    if value == op.identity() {
        op.combine(value, random_value(&mut rng, false))
    } else {
        value
    }
}

fn run_length<T: Element, O: Operator<T>>(options: &ScanOptions, op: &O, n: usize, seed: u64) {
    let input = random_input::<T, O>(n, seed, op);
    let device = DeviceBuffer::from_host(gpu(), &input).expect("upload");
    let kinds = [
        ScanKind::Inclusive,
        ScanKind::Exclusive {
            initial: initial_value(op, seed),
        },
        ScanKind::InclusiveFrom {
            initial: initial_value(op, seed ^ 0x5eed),
        },
    ];
    for kind in kinds {
        for mode in MODES {
            run_case(&device, &input, op, kind, options, mode);
        }
    }
}

/// The whole suite for one algorithm, type and operator.
fn suite<T: Element, O: Operator<T>>(algorithm: ScanAlgorithm, op: &O) {
    let seed = fresh_seed(&format!("{algorithm} {} {}", T::SUFFIX, op.name()));
    for options in block_options(algorithm) {
        let tiles = tiles_of(algorithm, options.effective_block_threads());
        for n in edge_lengths(&tiles, max_edge_length()) {
            run_length::<T, O>(&options, op, n, seed ^ n as u64);
        }
    }
    // proptest-drawn lengths (edge-biased) and seeds, default block size.
    let options = ScanOptions::new(algorithm);
    let edges = edge_lengths(
        &tiles_of(algorithm, options.effective_block_threads()),
        max_drawn_length(),
    );
    let max_power = max_drawn_length().ilog2();
    let lengths = prop_oneof![
        proptest::sample::select(edges),
        0usize..max_drawn_length(),
        (1u32..max_power + 1, -2i64..3).prop_map(|(k, d)| ((1i64 << k) + d).max(0) as usize),
    ];
    let mut runner = TestRunner::new(Config {
        cases: 4,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(lengths, any::<u64>()), |(n, case_seed)| {
            run_length::<T, O>(&options, op, n, case_seed);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{algorithm} {} {}: {e}", T::SUFFIX, op.name()));
}

/// `#[test]` functions running [`suite`] for `ALGORITHM` (a constant of the
/// calling module) on each type × operator.
macro_rules! cases {
    ($($name:ident: $t:ty, $op:expr;)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            suite::<$t, _>(ALGORITHM, &$op);
        }
    )*};
}

/// One `#[test]` per type × operator (and the custom operator) for the
/// algorithm `$alg`, in module `$module`.
macro_rules! algorithm_suite {
    ($module:ident, $alg:expr) => {
        mod $module {
            use super::*;
            const ALGORITHM: ScanAlgorithm = $alg;

            cases! {
                i32_sum: i32, Sum; i32_max: i32, Max; i32_min: i32, Min;
                i32_and: i32, BitAnd; i32_or: i32, BitOr; i32_xor: i32, BitXor;
                u32_sum: u32, Sum; u32_max: u32, Max; u32_min: u32, Min;
                u32_and: u32, BitAnd; u32_or: u32, BitOr; u32_xor: u32, BitXor;
                i64_sum: i64, Sum; i64_max: i64, Max; i64_min: i64, Min;
                i64_and: i64, BitAnd; i64_or: i64, BitOr; i64_xor: i64, BitXor;
                u64_sum: u64, Sum; u64_max: u64, Max; u64_min: u64, Min;
                u64_and: u64, BitAnd; u64_or: u64, BitOr; u64_xor: u64, BitXor;
                f32_sum: f32, Sum; f32_max: f32, Max; f32_min: f32, Min;
                f64_sum: f64, Sum; f64_max: f64, Max; f64_min: f64, Min;
                u32_custom_affine: u32, affine_op();
            }
        }
    };
}

algorithm_suite!(hillis_steele_global, ScanAlgorithm::HillisSteeleGlobal);
algorithm_suite!(hillis_steele, ScanAlgorithm::HillisSteele);
algorithm_suite!(blelloch, ScanAlgorithm::Blelloch);
algorithm_suite!(blelloch_padded, ScanAlgorithm::BlellochPadded);
algorithm_suite!(decoupled_lookback, ScanAlgorithm::DecoupledLookback);
algorithm_suite!(reduce_then_scan, ScanAlgorithm::ReduceThenScan);

/// The convenience functions use `Auto` (the look-back) and the identity.
#[test]
#[ignore = "needs a CUDA GPU"]
fn inclusive_and_exclusive_shorthands() {
    let gpu = gpu();
    let input: Vec<i64> = random_input(100_003, fresh_seed("shorthands"), &Sum);
    let device = DeviceBuffer::from_host(gpu, &input).unwrap();
    let inclusive = scan::inclusive(gpu, device.view(), &Sum).unwrap();
    check(
        "inclusive",
        &input,
        &inclusive.to_host(gpu).unwrap(),
        &Sum,
        ScanKind::Inclusive,
    );
    let exclusive = scan::exclusive(gpu, device.view(), &Max).unwrap();
    check(
        "exclusive",
        &input,
        &exclusive.to_host(gpu).unwrap(),
        &Max,
        ScanKind::Exclusive { initial: i64::MIN },
    );
    let empty = scan::inclusive(gpu, device.slice(0..0).unwrap(), &Sum).unwrap();
    assert!(empty.is_empty());
}

/// The default look-back policy changes with the length
/// (`scan::policy::lookback_policy_for_len`): each band's edges, and a
/// length past the mid band's start that ends a tile short of full, for a
/// 4-byte sum, a 1-byte sum (the 4-byte accumulator's vectors) and the
/// non-commutative affine maps, in every kind and calling mode.
#[test]
#[ignore = "needs a CUDA GPU"]
fn default_policy_bands_at_their_edges() {
    use scan::policy::{
        MID_INPUT_LOOKBACK_TUNING, MID_INPUT_MAX_ELEMENTS, MID_INPUT_MIN_ELEMENTS,
        SMALL_INPUT_MAX_ELEMENTS,
    };
    let mid_tile = MID_INPUT_LOOKBACK_TUNING.tile_items() as usize;
    let lengths = [
        SMALL_INPUT_MAX_ELEMENTS,
        SMALL_INPUT_MAX_ELEMENTS + 1,
        MID_INPUT_MIN_ELEMENTS,
        MID_INPUT_MIN_ELEMENTS + 1,
        MID_INPUT_MIN_ELEMENTS + 37 * mid_tile - 1,
        MID_INPUT_MAX_ELEMENTS,
        MID_INPUT_MAX_ELEMENTS + 1,
    ];
    let options = ScanOptions::default();
    for (i, &n) in lengths.iter().enumerate() {
        let seed = fresh_seed(&format!("bands {n}"));
        run_length::<i32, _>(&options, &Sum, n, seed);
        if i % 2 == 1 {
            run_length::<u8, _>(&options, &Sum, n, seed ^ 1);
            run_length::<u32, _>(&options, &affine_op(), n, seed ^ 2);
        }
    }
}

/// The inclusive scan from an initial value through every algorithm, for
/// a 4-byte sum, an 8-byte max, a float sum, the non-commutative affine
/// maps and a narrow type, at the lengths around each algorithm's tiles, in
/// every calling mode (the full suites above run it for every type and
/// operator too); then on sub-views at odd offsets.
#[test]
#[ignore = "needs a CUDA GPU"]
fn inclusive_from_every_algorithm() {
    fn lengths(algorithm: ScanAlgorithm) -> Vec<usize> {
        let tiles = tiles_of(algorithm, scan::policy::DEFAULT_BLOCK_THREADS);
        edge_lengths(&tiles, 1 << 18)
    }
    fn run<T: Element, O: Operator<T>>(algorithm: ScanAlgorithm, op: &O, seed: u64) {
        let options = ScanOptions::new(algorithm);
        for n in lengths(algorithm) {
            let input = random_input::<T, O>(n, seed ^ n as u64, op);
            let device = DeviceBuffer::from_host(gpu(), &input).expect("upload");
            let kind = ScanKind::InclusiveFrom {
                initial: initial_value(op, seed ^ n as u64),
            };
            for mode in MODES {
                run_case(&device, &input, op, kind, &options, mode);
            }
        }
    }
    let gpu = gpu();
    for algorithm in ScanAlgorithm::ALL {
        let seed = fresh_seed(&format!("inclusive from {algorithm}"));
        run::<i32, _>(algorithm, &Sum, seed);
        run::<u64, _>(algorithm, &Max, seed ^ 1);
        run::<f32, _>(algorithm, &Sum, seed ^ 2);
        run::<u32, _>(algorithm, &affine_op(), seed ^ 3);
        run::<i16, _>(algorithm, &Sum, seed ^ 4);
        run::<gpu_core::f16, _>(algorithm, &Max, seed ^ 5);
        for n in [1usize, 4097, 100_003] {
            let input: Vec<u32> = random_input(n + 5, seed ^ n as u64, &affine_op());
            let device = DeviceBuffer::from_host(gpu, &input).unwrap();
            let mut output = DeviceBuffer::<u32>::poisoned(gpu, n + 7).unwrap();
            let kind = ScanKind::InclusiveFrom {
                initial: 0x0003_0005,
            };
            scan::scan_into(
                gpu,
                device.slice(1..n + 1).unwrap(),
                output.slice_mut(3..n + 3).unwrap(),
                &affine_op(),
                kind,
                &ScanOptions::new(algorithm),
            )
            .unwrap();
            let got = output.to_host(gpu).unwrap();
            let what = format!("{algorithm} inclusive from, sub-view n={n}");
            check(&what, &input[1..n + 1], &got[3..n + 3], &affine_op(), kind);
            for i in (0..3).chain(n + 3..n + 7) {
                assert_eq!(
                    got[i], 0xDEAD_BEEF,
                    "{what}: element {i} outside the view was written"
                );
            }
        }
    }
}

/// Sub-views at odd offsets (unaligned for vector loads) scan correctly and
/// leave the elements around the output view untouched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sub_views_at_odd_offsets() {
    let gpu = gpu();
    let seed = fresh_seed("sub-views");
    for algorithm in ScanAlgorithm::ALL {
        for n in [1usize, 4097, 100_003] {
            let input: Vec<u32> = random_input(n + 5, seed ^ n as u64, &Sum);
            let device = DeviceBuffer::from_host(gpu, &input).unwrap();
            let mut output = DeviceBuffer::<u32>::poisoned(gpu, n + 7).unwrap();
            let kind = ScanKind::Exclusive { initial: 12345 };
            scan::scan_into(
                gpu,
                device.slice(1..n + 1).unwrap(),
                output.slice_mut(3..n + 3).unwrap(),
                &Sum,
                kind,
                &ScanOptions::new(algorithm),
            )
            .unwrap();
            let got = output.to_host(gpu).unwrap();
            let what = format!("{algorithm} sub-view n={n}");
            check(&what, &input[1..n + 1], &got[3..n + 3], &Sum, kind);
            for i in (0..3).chain(n + 3..n + 7) {
                assert_eq!(
                    got[i], 0xDEAD_BEEF,
                    "{what}: element {i} outside the view was written"
                );
            }
        }
    }
}

/// The deterministic algorithms give bit-identical float results run after
/// run; every algorithm does for integers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn repeatable_results() {
    let gpu = gpu();
    let n = parprims_testkit::testing::scaled(1 << 22, 1 << 18) + 3;
    let floats: Vec<f32> = random_input(n, fresh_seed("repeatable"), &Sum);
    let ints: Vec<i32> = random_input(n, fresh_seed("repeatable ints"), &Sum);
    let floats_device = DeviceBuffer::from_host(gpu, &floats).unwrap();
    let ints_device = DeviceBuffer::from_host(gpu, &ints).unwrap();
    for algorithm in ScanAlgorithm::ALL {
        let options = ScanOptions::new(algorithm);
        let runs = |_| {
            scan::scan(
                gpu,
                floats_device.view(),
                &Sum,
                ScanKind::Inclusive,
                &options,
            )
            .unwrap()
            .to_host(gpu)
            .unwrap()
        };
        if algorithm.deterministic_for_floats() {
            let first = runs(0);
            for run in 1..4 {
                let again = runs(run);
                let same = first
                    .iter()
                    .zip(&again)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{algorithm}: float results differ between runs");
            }
        }
        let first = scan::scan(gpu, ints_device.view(), &Sum, ScanKind::Inclusive, &options)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        check(
            &format!("{algorithm} ints"),
            &ints,
            &first,
            &Sum,
            ScanKind::Inclusive,
        );
        for _ in 0..3 {
            let again = scan::scan(gpu, ints_device.view(), &Sum, ScanKind::Inclusive, &options)
                .unwrap()
                .to_host(gpu)
                .unwrap();
            assert_eq!(
                first, again,
                "{algorithm}: integer results differ between runs"
            );
        }
    }
}

/// Every teaching variant at every power-of-two block size (and a few
/// multiples of 32 for Hillis–Steele), at lengths needing 1, 2 and 3 levels
/// (at the quick scale three levels only up to 128-thread blocks).
#[test]
#[ignore = "needs a CUDA GPU"]
fn block_size_sweep() {
    let seed = fresh_seed("block sweep");
    for algorithm in ScanAlgorithm::TEACHING {
        let mut blocks = vec![32u32, 64, 128, 256, 512, 1024];
        if !algorithm.needs_power_of_two_block() {
            blocks.extend([96, 160, 480, 992]);
        }
        for block in blocks {
            let options = ScanOptions::new(algorithm).with_block_threads(block);
            let tile = tiles_of(algorithm, block)[0];
            let three_levels = tile * tile + tile + 1;
            let mut lengths = vec![tile - 1, tile + 1, 300_007];
            if !parprims_testkit::testing::quick_tests() || three_levels < 100_000 {
                lengths.push(three_levels);
            }
            for n in lengths {
                let input: Vec<i32> = random_input(n, seed ^ n as u64, &Sum);
                let device = DeviceBuffer::from_host(gpu(), &input).unwrap();
                for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial: -77 }] {
                    run_case(&device, &input, &Sum, kind, &options, Mode::Into);
                }
                run_case(
                    &device,
                    &input,
                    &wrapping_sum_op(),
                    ScanKind::Inclusive,
                    &options,
                    Mode::InPlace,
                );
            }
        }
    }
}

/// i32 wrapping sum written as a custom operator (the same arithmetic
/// through the CustomOp path).
fn wrapping_sum_op() -> gpu_core::CustomOp<i32> {
    gpu_core::CustomOp::new("wrap_sum", "wrapping_add(a, b)", 0, |a: i32, b: i32| {
        a.wrapping_add(b)
    })
    .expect("a valid custom operator")
}

/// Small cases for compute-sanitizer (memcheck, racecheck, synccheck; see
/// docs/scan.md): every algorithm, inclusive and exclusive, out of place and
/// in place. The teaching variants run at lengths with three recursion
/// levels (tile² + tile + 1, for block 32 and for the default block), and
/// at lengths where Blelloch's persistent grid gives each block several
/// tiles, so the pipelined tile loop's prefetch runs under the tools:
/// 600 001 elements at block 32 (9 376 tiles; an H100 holds 132 × 32
/// blocks) and 2^21 + 3 at the default block (4 097 tiles of 512; it holds
/// 132 × 8). The single-pass ones run at several tiles.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_cases() {
    let seed = fresh_seed("sanitizer");
    for algorithm in ScanAlgorithm::ALL {
        let mut cases: Vec<(ScanOptions, usize)> = Vec::new();
        if algorithm.takes_block_threads() {
            for options in [
                ScanOptions::new(algorithm).with_block_threads(32),
                ScanOptions::new(algorithm),
            ] {
                let tile = tiles_of(algorithm, options.effective_block_threads())[0];
                cases.push((options, tile * tile + tile + 1));
            }
            cases.push((ScanOptions::new(algorithm).with_block_threads(32), 600_001));
            cases.push((ScanOptions::new(algorithm), (1 << 21) + 3));
        } else {
            cases.push((ScanOptions::new(algorithm), 5 * 4096 + 3));
            cases.push((ScanOptions::new(algorithm), 300_007));
        }
        for (options, n) in cases {
            let input: Vec<i32> = random_input(n, seed ^ n as u64, &Sum);
            let device = DeviceBuffer::from_host(gpu(), &input).unwrap();
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial: 9 }] {
                run_case(&device, &input, &Sum, kind, &options, Mode::Into);
                run_case(&device, &input, &Sum, kind, &options, Mode::InPlace);
            }
        }
    }
}
