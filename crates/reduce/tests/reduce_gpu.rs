//! GPU tests of the reductions: every algorithm × element type × operator
//! against the CPU references, lengths biased to the edges (0, 1, warp ± 1,
//! tree block ± 1, single-pass round ± 1, 2^k·5/8 − 1, several rounds per
//! block), unaligned views, the `_into` forms, custom operators that are
//! associative but not commutative, arg-reductions with ties and NaN,
//! minmax, transforms, bitwise determinism, no allocation in steady state,
//! and bad arguments (typed error, nothing written).
//!
//! Run on a GPU machine: `cargo test -p parprims-reduce -- --include-ignored`
//! (`sum_past_2_32_u8` needs 4.3 GB and is best run alone).

use gpu_core::{
    bf16, f16, BitAnd, BitOr, BitXor, CustomOp, DeviceBuffer, Element, Error, Gpu, IntElement, Max,
    Min, Operator, Product, Sum,
};
use parprims_testkit::rng::{random_vec, SplitMix64};
use proptest::prelude::*;
use reduce::{cpu, ReduceAlgorithm, Transform};

/// Items per block round of the single pass for 4-byte items.
const ROUND: usize = 4096;

fn lengths() -> Vec<usize> {
    vec![
        0,
        1,
        2,
        31,
        32,
        33,
        1023,
        1024,
        1025,
        ROUND - 1,
        ROUND,
        ROUND + 1,
        (1 << 16) * 5 / 8 - 1,
        1 << 16,
        (1 << 20) + 3,
        (1 << 22) * 5 / 8 - 1,
    ]
}

fn seed() -> u64 {
    parprims_testkit::testing::logged_seed()
}

/// Exact sum in f64 and the sum of magnitudes, for float tolerances.
fn exact_sum<T: Element>(values: &[T]) -> (f64, f64) {
    values.iter().fold((0.0, 0.0), |(s, a), &x| {
        (s + x.to_f64(), a + x.to_f64().abs())
    })
}

/// A float result within the rounding a reordered fold in the register
/// type (f32 or f64) and one final rounding to `T` can introduce.
fn assert_close<T: Element>(got: T, exact: f64, magnitude: f64, what: &str) {
    let register_eps = if T::BYTES == 8 { 1e-13 } else { 2e-6 };
    let tolerance = magnitude * register_eps + exact.abs() * T::EPSILON * 2.0 + T::EPSILON;
    let got = got.to_f64();
    assert!(
        (got - exact).abs() <= tolerance,
        "{what}: got {got}, exact {exact}, tolerance {tolerance}"
    );
}

fn check_int_ops<T: IntElement>(gpu: &Gpu, n: usize, seed: u64, algorithm: ReduceAlgorithm) {
    let host: Vec<T> = random_vec(n, seed, T::lowest().to_f64(), T::highest().to_f64());
    let x = DeviceBuffer::from_host(gpu, &host).unwrap();
    let what = format!("{} n={n} {}", T::SUFFIX, algorithm.name());
    fn one<T: Element, O: Operator<T>>(
        gpu: &Gpu,
        x: &DeviceBuffer<T>,
        host: &[T],
        op: &O,
        a: ReduceAlgorithm,
        what: &str,
    ) {
        let got = reduce::reduce(gpu, x.view(), op, a).unwrap();
        assert_eq!(got, cpu::reduce(host, op), "{what} {}", op.name());
    }
    one(gpu, &x, &host, &Sum, algorithm, &what);
    one(gpu, &x, &host, &Product, algorithm, &what);
    one(gpu, &x, &host, &Max, algorithm, &what);
    one(gpu, &x, &host, &Min, algorithm, &what);
    one(gpu, &x, &host, &BitAnd, algorithm, &what);
    one(gpu, &x, &host, &BitOr, algorithm, &what);
    one(gpu, &x, &host, &BitXor, algorithm, &what);
}

fn check_float_ops<T: Element>(gpu: &Gpu, n: usize, seed: u64, algorithm: ReduceAlgorithm) {
    let host: Vec<T> = random_vec(n, seed, -1.0, 1.0);
    let x = DeviceBuffer::from_host(gpu, &host).unwrap();
    let what = format!("{} n={n} {}", T::SUFFIX, algorithm.name());
    let (exact, magnitude) = exact_sum(&host);
    let got = reduce::reduce(gpu, x.view(), &Sum, algorithm).unwrap();
    assert_close(got, exact, magnitude, &format!("{what} sum"));
    assert_eq!(
        reduce::reduce(gpu, x.view(), &Max, algorithm).unwrap(),
        cpu::reduce(&host, &Max),
        "{what} max"
    );
    assert_eq!(
        reduce::reduce(gpu, x.view(), &Min, algorithm).unwrap(),
        cpu::reduce(&host, &Min),
        "{what} min"
    );
    // Products of values near 1 stay finite.
    let near_one: Vec<T> = random_vec(n.min(4096), seed ^ 1, 0.999, 1.001);
    let y = DeviceBuffer::from_host(gpu, &near_one).unwrap();
    let exact_product: f64 = near_one.iter().map(|v| v.to_f64()).product();
    let got = reduce::reduce(gpu, y.view(), &Product, algorithm).unwrap();
    assert_close(
        got,
        exact_product,
        exact_product * near_one.len() as f64,
        &format!("{what} product"),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_algorithm_type_and_builtin_operator_against_cpu() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    for algorithm in ReduceAlgorithm::ALL {
        for n in lengths() {
            check_int_ops::<i8>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<u8>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<i16>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<u16>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<i32>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<u32>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<i64>(&gpu, n, rng.next_u64(), algorithm);
            check_int_ops::<u64>(&gpu, n, rng.next_u64(), algorithm);
            check_float_ops::<f16>(&gpu, n, rng.next_u64(), algorithm);
            check_float_ops::<bf16>(&gpu, n, rng.next_u64(), algorithm);
            check_float_ops::<f32>(&gpu, n, rng.next_u64(), algorithm);
            check_float_ops::<f64>(&gpu, n, rng.next_u64(), algorithm);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unaligned_views_and_the_tail() {
    let gpu = Gpu::new(0).unwrap();
    let s = seed();
    let host: Vec<i32> = random_vec((1 << 20) + 77, s, -1000.0, 1000.0);
    let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
    for start in [1usize, 2, 3, 5] {
        for end in [host.len(), host.len() - 1, host.len() - 3] {
            let view = x.slice(start..end).unwrap();
            for algorithm in ReduceAlgorithm::ALL {
                let got = reduce::reduce(&gpu, view, &Sum, algorithm).unwrap();
                assert_eq!(
                    got,
                    cpu::reduce(&host[start..end], &Sum),
                    "[{start}, {end}) {algorithm:?}"
                );
            }
            let top = reduce::argmax(&gpu, view).unwrap();
            let want = cpu::argmax(&host[start..end]).unwrap();
            assert_eq!((top.value, top.index), (want.value, want.index));
        }
    }
    let bytes: Vec<u8> = random_vec(100_003, s ^ 7, 0.0, 255.0);
    let b = DeviceBuffer::from_host(&gpu, &bytes).unwrap();
    for start in 0..17 {
        let got = reduce::reduce(
            &gpu,
            b.slice(start..).unwrap(),
            &Sum,
            ReduceAlgorithm::SinglePass,
        )
        .unwrap();
        assert_eq!(got, cpu::reduce(&bytes[start..], &Sum), "u8 from {start}");
    }
}

/// Associative, not commutative: the last non-zero item, and the first.
#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_operators_keep_index_order() {
    let gpu = Gpu::new(0).unwrap();
    let last = CustomOp::<i64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .unwrap();
    let first = CustomOp::<u32>::new("first_nonzero", "(a != 0 ? a : b)", 0, |a, b| {
        if a != 0 {
            a
        } else {
            b
        }
    })
    .unwrap();
    let mut rng = SplitMix64::new(seed());
    for n in lengths() {
        // Sparse non-zeros, so the answer depends on the order.
        let host: Vec<i64> = (0..n)
            .map(|_| {
                if rng.below(50) == 0 {
                    rng.below(1000) as i64 + 1
                } else {
                    0
                }
            })
            .collect();
        let host_u: Vec<u32> = host.iter().map(|&v| v as u32).collect();
        let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
        let y = DeviceBuffer::from_host(&gpu, &host_u).unwrap();
        for algorithm in ReduceAlgorithm::ALL {
            assert_eq!(
                reduce::reduce(&gpu, x.view(), &last, algorithm).unwrap(),
                cpu::reduce(&host, &last),
                "last n={n} {algorithm:?}"
            );
            assert_eq!(
                reduce::reduce(&gpu, y.view(), &first, algorithm).unwrap(),
                cpu::reduce(&host_u, &first),
                "first n={n} {algorithm:?}"
            );
        }
    }
    // A custom operator on a narrow type is refused, and one that does not
    // compile is a compile error.
    let narrow = CustomOp::<u8>::new("add", "(a + b)", 0, |a, b| a.wrapping_add(b)).unwrap();
    let x = DeviceBuffer::from_host(&gpu, &[1u8, 2]).unwrap();
    assert!(matches!(
        reduce::reduce(&gpu, x.view(), &narrow, ReduceAlgorithm::default()),
        Err(Error::Unsupported(_))
    ));
    let broken = CustomOp::<i32>::new("broken", "a +* b", 0, |a, b| a + b).unwrap();
    let x = DeviceBuffer::from_host(&gpu, &[1i32, 2]).unwrap();
    assert!(matches!(
        reduce::reduce(&gpu, x.view(), &broken, ReduceAlgorithm::default()),
        Err(Error::Compile { .. })
    ));
}

fn check_arg<T: Element>(gpu: &Gpu, host: &[T], what: &str) {
    let x = DeviceBuffer::from_host(gpu, host).unwrap();
    for algorithm in ReduceAlgorithm::ALL {
        let top = reduce::argmax_with(gpu, x.view(), algorithm).unwrap();
        let want = cpu::argmax(host).unwrap();
        assert_eq!(top.index, want.index, "argmax {what} {algorithm:?}");
        assert_eq!(
            bytemuck::bytes_of(&top.value),
            bytemuck::bytes_of(&want.value),
            "argmax value {what}"
        );
        let low = reduce::argmin_with(gpu, x.view(), algorithm).unwrap();
        let want = cpu::argmin(host).unwrap();
        assert_eq!(low.index, want.index, "argmin {what} {algorithm:?}");
        let (lo, hi) = reduce::minmax(gpu, x.view(), algorithm).unwrap();
        let (want_lo, want_hi) = cpu::minmax(host);
        if !host.iter().any(|v| v.is_nan()) {
            assert_eq!((lo, hi), (want_lo, want_hi), "minmax {what} {algorithm:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arg_reductions_ties_nan_and_every_type() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    for n in lengths().into_iter().filter(|&n| n > 0) {
        // Few distinct values: many ties.
        let ties: Vec<i32> = (0..n).map(|_| rng.below(5) as i32 - 2).collect();
        check_arg(&gpu, &ties, &format!("i32 ties n={n}"));
        let f: Vec<f32> = random_vec(n, rng.next_u64(), -100.0, 100.0);
        check_arg(&gpu, &f, &format!("f32 n={n}"));
        let mut with_nan = f.clone();
        for _ in 0..3 {
            let at = rng.below(n as u64) as usize;
            with_nan[at] = f32::NAN;
        }
        check_arg(&gpu, &with_nan, &format!("f32 NaN n={n}"));
        check_arg::<u8>(
            &gpu,
            &random_vec(n, rng.next_u64(), 0.0, 255.0),
            &format!("u8 n={n}"),
        );
        check_arg::<i8>(
            &gpu,
            &random_vec(n, rng.next_u64(), -128.0, 127.0),
            &format!("i8 n={n}"),
        );
        check_arg::<u16>(
            &gpu,
            &random_vec(n, rng.next_u64(), 0.0, 65535.0),
            &format!("u16 n={n}"),
        );
        check_arg::<i16>(
            &gpu,
            &random_vec(n, rng.next_u64(), -3e4, 3e4),
            &format!("i16 n={n}"),
        );
        check_arg::<u32>(
            &gpu,
            &random_vec(n, rng.next_u64(), 0.0, 4e9),
            &format!("u32 n={n}"),
        );
        check_arg::<i64>(
            &gpu,
            &random_vec(n, rng.next_u64(), -1e18, 1e18),
            &format!("i64 n={n}"),
        );
        check_arg::<u64>(
            &gpu,
            &random_vec(n, rng.next_u64(), 0.0, 1e19),
            &format!("u64 n={n}"),
        );
        check_arg::<f16>(
            &gpu,
            &random_vec(n, rng.next_u64(), -10.0, 10.0),
            &format!("f16 n={n}"),
        );
        check_arg::<bf16>(
            &gpu,
            &random_vec(n, rng.next_u64(), -10.0, 10.0),
            &format!("bf16 n={n}"),
        );
        let mut d: Vec<f64> = random_vec(n, rng.next_u64(), -1.0, 1.0);
        d[n - 1] = f64::NAN;
        check_arg(&gpu, &d, &format!("f64 NaN last n={n}"));
    }
    // All equal: index 0. Infinities are values like any other.
    check_arg(&gpu, &vec![7i32; 100_000], "all equal");
    check_arg(&gpu, &[f32::NEG_INFINITY, f32::NEG_INFINITY], "-inf");
    // Empty: a typed error, nothing written.
    let empty = DeviceBuffer::<f32>::zeros(&gpu, 0).unwrap();
    assert!(matches!(
        reduce::argmax(&gpu, empty.view()),
        Err(Error::InvalidArgument { .. })
    ));
    let mut value = DeviceBuffer::<f32>::filled(&gpu, 1, 42.0).unwrap();
    let mut index = DeviceBuffer::<u64>::filled(&gpu, 1, 42).unwrap();
    assert!(reduce::argmin_into(
        &gpu,
        empty.view(),
        value.view_mut(),
        index.view_mut(),
        ReduceAlgorithm::default()
    )
    .is_err());
    assert_eq!(
        (
            value.to_host(&gpu).unwrap()[0],
            index.to_host(&gpu).unwrap()[0]
        ),
        (42.0, 42)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transforms_fused_into_the_loads() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    for n in lengths() {
        let ints: Vec<i32> = random_vec(n, rng.next_u64(), -50_000.0, 50_000.0);
        let x = DeviceBuffer::from_host(&gpu, &ints).unwrap();
        let floats: Vec<f32> = random_vec(n, rng.next_u64(), -2.0, 2.0);
        let f = DeviceBuffer::from_host(&gpu, &floats).unwrap();
        let halves: Vec<f16> = random_vec(n, rng.next_u64(), -2.0, 2.0);
        let h = DeviceBuffer::from_host(&gpu, &halves).unwrap();
        let positive = Transform::<i32, u64>::count_if("positive", "x > 0", |x| x > 0).unwrap();
        let weighted = Transform::<f32, f64>::new("weighted", "(f64)x * (f64)(i % 7)", |x, i| {
            x as f64 * (i % 7) as f64
        })
        .unwrap();
        let half_positive =
            Transform::<f16, u64>::count_if("positive", "x > 0.0f", |x| x > f16::ZERO).unwrap();
        for algorithm in ReduceAlgorithm::ALL {
            let what = format!("n={n} {algorithm:?}");
            let square = Transform::<i32, i32>::square();
            assert_eq!(
                reduce::transform_reduce(&gpu, x.view(), &square, &Sum, algorithm).unwrap(),
                cpu::transform_reduce(&ints, &square, &Sum),
                "square {what}"
            );
            let abs = Transform::<i32, i32>::abs();
            assert_eq!(
                reduce::transform_reduce(&gpu, x.view(), &abs, &Max, algorithm).unwrap(),
                cpu::transform_reduce(&ints, &abs, &Max),
                "abs max {what}"
            );
            assert_eq!(
                reduce::transform_reduce(&gpu, x.view(), &positive, &Sum, algorithm).unwrap(),
                cpu::transform_reduce(&ints, &positive, &Sum),
                "count {what}"
            );
            assert_eq!(
                reduce::transform_reduce(&gpu, h.view(), &half_positive, &Sum, algorithm).unwrap(),
                cpu::transform_reduce(&halves, &half_positive, &Sum),
                "f16 count {what}"
            );
            let got = reduce::transform_reduce(&gpu, f.view(), &weighted, &Sum, algorithm).unwrap();
            let exact: f64 = floats
                .iter()
                .enumerate()
                .map(|(i, &v)| v as f64 * (i % 7) as f64)
                .sum();
            let magnitude: f64 = floats
                .iter()
                .enumerate()
                .map(|(i, &v)| (v as f64 * (i % 7) as f64).abs())
                .sum();
            assert_close(got, exact, magnitude, &format!("weighted {what}"));
            let sq = Transform::<f32, f32>::square();
            let got = reduce::transform_reduce(&gpu, f.view(), &sq, &Sum, algorithm).unwrap();
            let exact: f64 = floats.iter().map(|&v| (v * v) as f64).sum();
            assert_close(got, exact, exact, &format!("f32 squares {what}"));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_sums_are_bitwise_repeatable() {
    let gpu = Gpu::new(0).unwrap();
    let host: Vec<f32> = random_vec((1 << 22) + 5, seed(), -1e3, 1e3);
    let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let other_stream = gpu.with_new_stream().unwrap();
    let workspace = gpu_core::Workspace::new();
    let own = gpu.with_workspace(&workspace);
    for algorithm in ReduceAlgorithm::ALL {
        let first = reduce::reduce(&gpu, x.view(), &Sum, algorithm)
            .unwrap()
            .to_bits();
        for _ in 0..5 {
            assert_eq!(
                reduce::reduce(&gpu, x.view(), &Sum, algorithm)
                    .unwrap()
                    .to_bits(),
                first
            );
            assert_eq!(
                reduce::reduce(&other_stream, x.view(), &Sum, algorithm)
                    .unwrap()
                    .to_bits(),
                first
            );
            assert_eq!(
                reduce::reduce(&own, x.view(), &Sum, algorithm)
                    .unwrap()
                    .to_bits(),
                first
            );
        }
        let mut out = DeviceBuffer::<f32>::zeros(&gpu, 1).unwrap();
        reduce::reduce_into(&gpu, x.view(), &Sum, out.view_mut(), algorithm).unwrap();
        assert_eq!(out.to_host(&gpu).unwrap()[0].to_bits(), first);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn into_forms_and_bad_arguments() {
    let gpu = Gpu::new(0).unwrap();
    let host: Vec<u32> = random_vec(100_000, seed(), 0.0, 1e6);
    let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let mut out = DeviceBuffer::<u32>::filled(&gpu, 3, 7).unwrap();
    // Wrong output length: typed error, nothing written.
    assert!(matches!(
        reduce::reduce_into(
            &gpu,
            x.view(),
            &Sum,
            out.view_mut(),
            ReduceAlgorithm::default()
        ),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(out.to_host(&gpu).unwrap(), vec![7, 7, 7]);
    for algorithm in ReduceAlgorithm::ALL {
        reduce::reduce_into(
            &gpu,
            x.view(),
            &Max,
            out.slice_mut(1..2).unwrap(),
            algorithm,
        )
        .unwrap();
        assert_eq!(
            out.to_host(&gpu).unwrap(),
            vec![7, cpu::reduce(&host, &Max), 7]
        );
        let mut range = DeviceBuffer::<u32>::filled(&gpu, 4, 9).unwrap();
        reduce::minmax_into(&gpu, x.view(), range.slice_mut(1..3).unwrap(), algorithm).unwrap();
        let (lo, hi) = cpu::minmax(&host);
        assert_eq!(range.to_host(&gpu).unwrap(), vec![9, lo, hi, 9]);
    }
    assert!(
        reduce::minmax_into(&gpu, x.view(), out.view_mut(), ReduceAlgorithm::default()).is_err()
    );
    // Empty input: the identity, into the buffer too.
    let empty = DeviceBuffer::<u32>::zeros(&gpu, 0).unwrap();
    for algorithm in ReduceAlgorithm::ALL {
        assert_eq!(
            reduce::reduce(&gpu, empty.view(), &Min, algorithm).unwrap(),
            u32::MAX
        );
        assert_eq!(
            reduce::reduce(&gpu, empty.view(), &Product, algorithm).unwrap(),
            1
        );
        reduce::reduce_into(
            &gpu,
            empty.view(),
            &Sum,
            out.slice_mut(0..1).unwrap(),
            algorithm,
        )
        .unwrap();
        assert_eq!(out.to_host(&gpu).unwrap()[0], 0);
        assert_eq!(
            reduce::minmax(&gpu, empty.view(), algorithm).unwrap(),
            (u32::MAX, 0)
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn steady_state_calls_allocate_nothing() {
    let gpu = Gpu::new(0).unwrap();
    let host: Vec<f32> = random_vec(1 << 22, seed(), -1.0, 1.0);
    let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let mut out = DeviceBuffer::<f32>::zeros(&gpu, 1).unwrap();
    reduce::reduce_into(
        &gpu,
        x.view(),
        &Sum,
        out.view_mut(),
        ReduceAlgorithm::SinglePass,
    )
    .unwrap();
    let _ = reduce::sum(&gpu, x.view()).unwrap();
    gpu.synchronize().unwrap();
    let before = gpu.scratch_stats();
    for _ in 0..20 {
        reduce::reduce_into(
            &gpu,
            x.view(),
            &Sum,
            out.view_mut(),
            ReduceAlgorithm::SinglePass,
        )
        .unwrap();
        let _ = reduce::sum(&gpu, x.view()).unwrap();
    }
    gpu.synchronize().unwrap();
    parprims_testkit::testing::assert_scratch_steady(before, gpu.scratch_stats());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_i64_sums_and_f64_argmax(n in 0usize..200_000, seed in any::<u64>(), start in 0usize..4) {
        let gpu = Gpu::new(0).unwrap();
        let host: Vec<i64> = random_vec(n + start, seed, -1e15, 1e15);
        let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
        let view = x.slice(start..).unwrap();
        for algorithm in ReduceAlgorithm::ALL {
            prop_assert_eq!(reduce::reduce(&gpu, view, &Sum, algorithm).unwrap(), cpu::reduce(&host[start..], &Sum));
        }
        if n > 0 {
            let f: Vec<f64> = random_vec(n, seed ^ 3, -1.0, 1.0);
            let y = DeviceBuffer::from_host(&gpu, &f).unwrap();
            prop_assert_eq!(reduce::argmax(&gpu, y.view()).unwrap().index, cpu::argmax(&f).unwrap().index);
        }
    }
}

/// n past 2^32: 64-bit indices through the grid shares and the trees.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sum_past_2_32_u8() {
    let gpu = Gpu::new(0).unwrap();
    let n = (1usize << 32) + 4099;
    // Values below 255 except the last item, so argmax must find an index
    // past 2^32.
    let mut host: Vec<u8> = (0..n)
        .map(|i| ((i.wrapping_mul(2654435761) >> 7) % 255) as u8)
        .collect();
    host[n - 1] = 255;
    let x = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let want_sum = cpu::reduce(&host, &Sum);
    let ones = Transform::<u8, u64>::count_if("one", "x == 1u", |x| x == 1).unwrap();
    let want_ones = cpu::transform_reduce(&host, &ones, &Sum);
    drop(host);
    for algorithm in [ReduceAlgorithm::SinglePass, ReduceAlgorithm::SharedTree] {
        assert_eq!(
            reduce::reduce(&gpu, x.view(), &Sum, algorithm).unwrap(),
            want_sum,
            "{algorithm:?}"
        );
    }
    let top = reduce::argmax(&gpu, x.view()).unwrap();
    assert_eq!((top.value, top.index), (255, n as u64 - 1));
    let got =
        reduce::transform_reduce(&gpu, x.view(), &ones, &Sum, ReduceAlgorithm::SinglePass).unwrap();
    assert_eq!(got, want_ones);
}
