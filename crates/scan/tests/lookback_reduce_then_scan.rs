//! GPU tests of the deterministic reduce-then-scan: bitwise-identical float
//! results across 100 runs, exact results for every type against the CPU
//! reference, several recursion levels with tiny tiles, non-commutative
//! operators, exclusive with an initial value, in place, misaligned views.

mod lookback_support;
mod scan_support;

use gpu_core::{BitXor, Element, Max, Min, Operator, Sum};
use lookback_support::Placement::{InPlace, Offsets, OutOfPlace};
use lookback_support::*;
use parprims_testkit::rng::random_vec;
use parprims_testkit::testing::scaled;
use scan::policy::PROTOCOL_TEST_TUNING;
use scan::ScanAlgorithm;
use scan::ScanKind::{self, Exclusive, Inclusive};

const RTS: Runner = Runner::Public(ScanAlgorithm::ReduceThenScan);
const TINY: Runner = Runner::ReduceThenScan(PROTOCOL_TEST_TUNING);

/// Runs a scan `runs` times; every run must be bitwise equal to the first.
fn bitwise_repeatable<T: Element, O: Operator<T>>(
    checker: Checker<'_>,
    host: &[T],
    op: &O,
    kind: ScanKind<T>,
    runs: usize,
) -> Vec<T> {
    let mut first: Option<Vec<T>> = None;
    checker.each_run(host, op, kind, runs, |run, got| match &first {
        None => first = Some(got),
        Some(reference) => {
            let same =
                bytemuck::cast_slice::<T, u8>(&got) == bytemuck::cast_slice::<T, u8>(reference);
            if !same {
                let i = got
                    .iter()
                    .zip(reference)
                    .position(|(a, b)| bytemuck::bytes_of(a) != bytemuck::bytes_of(b))
                    .expect("a difference exists");
                panic!(
                    "run {run} differs from run 0 at {i}: {:?} vs {:?}",
                    got[i], reference[i]
                );
            }
        }
    });
    first.expect("at least one run")
}

/// Checks a float sum against an f64 reference: |got − exact| ≤
/// tolerance · Σ|x| so far (the error of any summation order is bounded by
/// (depth of its combination tree) · ε · Σ|x|).
fn assert_close_f32(got: &[f32], host: &[f32], tolerance: f64) {
    let mut exact = 0f64;
    let mut magnitude = 0f64;
    for (i, (&g, &x)) in got.iter().zip(host).enumerate() {
        exact += x as f64;
        magnitude += (x as f64).abs();
        let error = (g as f64 - exact).abs();
        assert!(
            error <= tolerance * magnitude + 1e-6,
            "element {i}: got {g}, exact {exact}, error {error}, bound {}",
            tolerance * magnitude
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_sum_is_bitwise_identical_across_100_runs_at_2_24() {
    let gpu = gpu();
    let rts = Checker::new(&gpu, RTS);
    // 2^20 at the quick scale (`parprims_testkit::testing`), with fewer runs.
    let n = scaled(1 << 24, 1 << 20);
    // Fractional values: the sums round, so the order matters.
    let host: Vec<f32> = random_vec(n, fresh_seed("rts f32 determinism"), -1.0, 1.0);
    let got = bitwise_repeatable(rts, &host, &Sum, Inclusive, scaled(100, 3));
    // Depth of the combination tree: 16 serial items + 8 shuffle levels +
    // 8 warp totals, then the same per level (3 levels) – and f32 ε ≈ 6e-8.
    assert_close_f32(&got, &host, 100.0 * 6e-8);
    // The exclusive form too, fewer runs.
    let exclusive = Exclusive { initial: 0.25 };
    let got = bitwise_repeatable(rts, &host, &Sum, exclusive, scaled(10, 2));
    assert_eq!(got[0], 0.25);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f64_and_tiny_tiles_are_repeatable_too() {
    let gpu = gpu();
    let n = scaled(1 << 22, 1 << 18) + 3;
    let host: Vec<f64> = random_vec(n, fresh_seed("rts f64 determinism"), -1.0, 1.0);
    bitwise_repeatable(
        Checker::new(&gpu, RTS),
        &host,
        &Sum,
        Inclusive,
        scaled(20, 2),
    );
    // Tiny tiles: 5 levels of recursion for 10^6 elements (4 for the
    // quick scale's 10^5).
    let tiny_n = scaled(1_000_003, 100_003);
    let host: Vec<f32> = random_vec(tiny_n, fresh_seed("rts tiny f32"), -1.0, 1.0);
    let got = bitwise_repeatable(
        Checker::new(&gpu, TINY),
        &host,
        &Sum,
        Inclusive,
        scaled(20, 2),
    );
    assert_close_f32(&got, &host, 200.0 * 6e-8);
}

/// Inclusive out of place and exclusive from `initial` in place, at the
/// edges of `tile`.
fn exact_cases<T: Element, O: Operator<T>>(
    checker: Checker<'_>,
    tile: usize,
    op: &O,
    initial: T,
    name: &str,
) {
    let cases = [(Inclusive, OutOfPlace), (Exclusive { initial }, InPlace)];
    for n in edge_lengths(tile) {
        let host: Vec<T> = exact_input(n, fresh_seed(name));
        checker.cases(&host, op, &cases, name);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_for_every_type_at_the_tile_edges() {
    let gpu = gpu();
    let rts = Checker::new(&gpu, RTS);
    exact_cases::<i32, _>(rts, 4096, &Sum, -7, "i32 sum");
    exact_cases::<u32, _>(rts, 4096, &BitXor, 0xff, "u32 xor");
    exact_cases::<f32, _>(rts, 4096, &Sum, 1.0, "f32 sum");
    exact_cases::<f32, _>(rts, 4096, &Max, -3.0, "f32 max");
    exact_cases::<i64, _>(rts, 2048, &Min, 0, "i64 min");
    exact_cases::<u64, _>(rts, 2048, &Sum, 1, "u64 sum");
    exact_cases::<f64, _>(rts, 2048, &Sum, 0.5, "f64 sum");
    // Beyond one level of totals: (4096)^2 + 1 elements → 3 levels.
    let host: Vec<i32> = exact_input(4096 * 4096 + 1, fresh_seed("rts 3 levels"));
    rts.case(&host, &Sum, Inclusive, OutOfPlace, "3 levels");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiny_tiles_recurse_through_many_levels() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, TINY);
    exact_cases::<u32, _>(tiny, 32, &Sum, 11, "tiny u32 sum");
    exact_cases::<f64, _>(tiny, 32, &Max, -1.0, "tiny f64 max");
    for n in [32 * 32 * 32 + 1, scaled(1_000_003, 100_003)] {
        let host: Vec<i64> = exact_input(n, fresh_seed("tiny i64"));
        tiny.case(&host, &Sum, Inclusive, InPlace, "tiny levels");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn non_commutative_operators_keep_their_order() {
    let gpu = gpu();
    let op32 = affine_u32();
    let op64 = affine_u64();
    let exclusive = Exclusive {
        initial: 0x0009_0003,
    };
    let cases32 = [(Inclusive, OutOfPlace), (exclusive, Offsets(1, 2))];
    for runner in [RTS, TINY] {
        let checker = Checker::new(&gpu, runner);
        for n in [1, 33, 4097, 2049 * 3, scaled(1_000_001, 100_001)] {
            let host = affine_input_u32(n, fresh_seed("rts affine16"));
            checker.cases(&host, &op32, &cases32, "affine16");
            let host = affine_input_u64(n, fresh_seed("rts affine32"));
            checker.case(&host, &op64, Inclusive, InPlace, "affine32");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views() {
    let gpu = gpu();
    let rts = Checker::new(&gpu, RTS);
    for (in_offset, out_offset) in [(1, 0), (3, 2), (0, 1)] {
        let placement = Offsets(in_offset, out_offset);
        for n in [5, 4097, 70_001] {
            let host: Vec<i32> = exact_input(n, fresh_seed("rts misaligned i32"));
            rts.case(&host, &Sum, Inclusive, placement, "i32");
            let host: Vec<f64> = exact_input(n, fresh_seed("rts misaligned f64"));
            rts.case(&host, &Sum, Exclusive { initial: 1.0 }, placement, "f64");
        }
    }
}
