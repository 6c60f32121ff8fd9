//! GPU tests of the deterministic reduce-then-scan: bitwise-identical float
//! results across 100 runs, exact results for every type against the CPU
//! reference, several recursion levels with tiny tiles, non-commutative
//! operators, exclusive with an initial value, in place, misaligned views.

mod lookback_support;

use gpu_core::{BitXor, DeviceBuffer, Element, Gpu, Max, Min, Operator, Sum};
use lookback_support::*;
use parprims_testkit::rng::random_vec;
use parprims_testkit::testing::scaled;
use scan::policy::PROTOCOL_TEST_TUNING;
use scan::{ScanAlgorithm, ScanKind};

const RTS: Runner = Runner::Public(ScanAlgorithm::ReduceThenScan);

/// Runs a scan `runs` times; every run must be bitwise equal to the first.
fn bitwise_repeatable<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    runner: Runner,
    host: &[T],
    op: &O,
    kind: ScanKind<T>,
    runs: usize,
) -> Vec<T> {
    let input = DeviceBuffer::from_host(gpu, host).expect("upload");
    let mut output = DeviceBuffer::<T>::poisoned(gpu, host.len()).expect("output");
    let mut first: Option<Vec<T>> = None;
    for run in 0..runs {
        output.view_mut().fill(gpu, T::poison()).expect("poison");
        runner
            .run(gpu, Some(input.view()), output.view_mut(), op, kind)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        let got = output.to_host(gpu).expect("download");
        match &first {
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
        }
    }
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
    // 2^20 at the quick scale (`parprims_testkit::testing`), with fewer runs.
    let n = scaled(1 << 24, 1 << 20);
    // Fractional values: the sums round, so the order matters.
    let host: Vec<f32> = random_vec(n, fresh_seed("rts f32 determinism"), -1.0, 1.0);
    let got = bitwise_repeatable(&gpu, RTS, &host, &Sum, ScanKind::Inclusive, scaled(100, 3));
    // Depth of the combination tree: 16 serial items + 8 shuffle levels +
    // 8 warp totals, then the same per level (3 levels) – and f32 ε ≈ 6e-8.
    assert_close_f32(&got, &host, 100.0 * 6e-8);
    // The exclusive form too, fewer runs.
    let got = bitwise_repeatable(
        &gpu,
        RTS,
        &host,
        &Sum,
        ScanKind::Exclusive { initial: 0.25 },
        scaled(10, 2),
    );
    assert_eq!(got[0], 0.25);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f64_and_tiny_tiles_are_repeatable_too() {
    let gpu = gpu();
    let n = scaled(1 << 22, 1 << 18) + 3;
    let host: Vec<f64> = random_vec(n, fresh_seed("rts f64 determinism"), -1.0, 1.0);
    bitwise_repeatable(&gpu, RTS, &host, &Sum, ScanKind::Inclusive, scaled(20, 2));
    // Tiny tiles: 5 levels of recursion for 10^6 elements (4 for the
    // quick scale's 10^5).
    let tiny_n = scaled(1_000_003, 100_003);
    let host: Vec<f32> = random_vec(tiny_n, fresh_seed("rts tiny f32"), -1.0, 1.0);
    let got = bitwise_repeatable(
        &gpu,
        Runner::ReduceThenScan(PROTOCOL_TEST_TUNING),
        &host,
        &Sum,
        ScanKind::Inclusive,
        scaled(20, 2),
    );
    assert_close_f32(&got, &host, 200.0 * 6e-8);
}

fn exact_cases<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    runner: Runner,
    tile: usize,
    op: &O,
    initial: T,
    name: &str,
) {
    for n in edge_lengths(tile) {
        let host: Vec<T> = exact_input(n, fresh_seed(name));
        check_case(
            gpu,
            runner,
            &host,
            op,
            ScanKind::Inclusive,
            Placement::OutOfPlace,
            name,
        );
        check_case(
            gpu,
            runner,
            &host,
            op,
            ScanKind::Exclusive { initial },
            Placement::InPlace,
            name,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_for_every_type_at_the_tile_edges() {
    let gpu = gpu();
    exact_cases::<i32, _>(&gpu, RTS, 4096, &Sum, -7, "i32 sum");
    exact_cases::<u32, _>(&gpu, RTS, 4096, &BitXor, 0xff, "u32 xor");
    exact_cases::<f32, _>(&gpu, RTS, 4096, &Sum, 1.0, "f32 sum");
    exact_cases::<f32, _>(&gpu, RTS, 4096, &Max, -3.0, "f32 max");
    exact_cases::<i64, _>(&gpu, RTS, 2048, &Min, 0, "i64 min");
    exact_cases::<u64, _>(&gpu, RTS, 2048, &Sum, 1, "u64 sum");
    exact_cases::<f64, _>(&gpu, RTS, 2048, &Sum, 0.5, "f64 sum");
    // Beyond one level of totals: (4096)^2 + 1 elements → 3 levels.
    let host: Vec<i32> = exact_input(4096 * 4096 + 1, fresh_seed("rts 3 levels"));
    check_case(
        &gpu,
        RTS,
        &host,
        &Sum,
        ScanKind::Inclusive,
        Placement::OutOfPlace,
        "3 levels",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiny_tiles_recurse_through_many_levels() {
    let gpu = gpu();
    let tiny = Runner::ReduceThenScan(PROTOCOL_TEST_TUNING);
    exact_cases::<u32, _>(&gpu, tiny, 32, &Sum, 11, "tiny u32 sum");
    exact_cases::<f64, _>(&gpu, tiny, 32, &Max, -1.0, "tiny f64 max");
    for n in [32 * 32 * 32 + 1, scaled(1_000_003, 100_003)] {
        let host: Vec<i64> = exact_input(n, fresh_seed("tiny i64"));
        check_case(
            &gpu,
            tiny,
            &host,
            &Sum,
            ScanKind::Inclusive,
            Placement::InPlace,
            "tiny levels",
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn non_commutative_operators_keep_their_order() {
    let gpu = gpu();
    let op32 = affine_u32();
    let op64 = affine_u64();
    for runner in [RTS, Runner::ReduceThenScan(PROTOCOL_TEST_TUNING)] {
        for n in [1, 33, 4097, 2049 * 3, scaled(1_000_001, 100_001)] {
            let host = affine_input_u32(n, fresh_seed("rts affine16"));
            check_case(
                &gpu,
                runner,
                &host,
                &op32,
                ScanKind::Inclusive,
                Placement::OutOfPlace,
                "affine16",
            );
            check_case(
                &gpu,
                runner,
                &host,
                &op32,
                ScanKind::Exclusive {
                    initial: 0x0009_0003,
                },
                Placement::Offsets(1, 2),
                "affine16",
            );
            let host = affine_input_u64(n, fresh_seed("rts affine32"));
            check_case(
                &gpu,
                runner,
                &host,
                &op64,
                ScanKind::Inclusive,
                Placement::InPlace,
                "affine32",
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views() {
    let gpu = gpu();
    for (in_offset, out_offset) in [(1, 0), (3, 2), (0, 1)] {
        let placement = Placement::Offsets(in_offset, out_offset);
        for n in [5, 4097, 70_001] {
            let host: Vec<i32> = exact_input(n, fresh_seed("rts misaligned i32"));
            check_case(
                &gpu,
                RTS,
                &host,
                &Sum,
                ScanKind::Inclusive,
                placement,
                "i32",
            );
            let host: Vec<f64> = exact_input(n, fresh_seed("rts misaligned f64"));
            check_case(
                &gpu,
                RTS,
                &host,
                &Sum,
                ScanKind::Exclusive { initial: 1.0 },
                placement,
                "f64",
            );
        }
    }
}
