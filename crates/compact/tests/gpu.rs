//! GPU tests: every algorithm × element type against the CPU references, with
//! lengths biased to the edges (0, 1, warp ± 1, tile ± 1, many look-back
//! windows), keep densities 0 %, 1 %, 50 %, 99 %, 100 % and random, flags
//! with arbitrary non-zero bytes, NaN inputs, custom predicates, the `_into`
//! forms (count left on the device, the rest of the output untouched), and
//! bad arguments (typed error, nothing written).
//!
//! Run on a GPU machine with `cargo test -p parprims-compact -- --include-ignored`.

mod support;

use compact::{
    count_if, count_if_into, cpu, partition, partition_into, select_flagged, select_flagged_into,
    select_if, select_if_into, CompactAlgorithm, CustomPredicate, Predicate, ScanAlgorithm,
};
use gpu_core::{DeviceBuffer, Element, Error, Gpu};
use parprims_testkit::rng::{random_flags, random_vec, SplitMix64};
use support::{
    all_poison, bits, check_select_flagged_into, check_select_if_and_partition_into, fresh_seed,
    single_and_three_pass,
};

/// Tile of the single-pass kernel's 8-byte (and narrow) defaults
/// (256 threads × 16 items).
const TILE: usize = 4096;

/// Every length the full matrix runs (SinglePass); ThreePass runs a subset.
/// Lengths around both default tiles: 4-byte items take 512 × 16.
fn lengths_full() -> Vec<usize> {
    let tile_4 = compact::policy::default_policy_for(4).tile_items() as usize;
    let mut lengths = vec![
        0,
        1,
        2,
        31,
        32,
        33,
        255,
        256,
        257,
        TILE - 1,
        TILE,
        TILE + 1,
        2 * TILE + 17,
        33 * TILE + 5, // past one 32-tile look-back window
        (1 << 17) - 1,
        (1 << 20) + 3, // many windows
    ];
    for n in [tile_4 - 1, tile_4, tile_4 + 1, 33 * tile_4 + 5] {
        if !lengths.contains(&n) {
            lengths.push(n);
        }
    }
    lengths.sort_unstable();
    lengths
}

fn lengths_three_pass() -> Vec<usize> {
    vec![0, 1, 33, 1023, 1025, TILE + 1, (1 << 16) + 1, (1 << 20) - 1]
}

/// The lengths `algorithm` runs; at the quick scale (`parprims_testkit::testing`,
/// the sanitizer script) only those up to 2^17 + 1 (still past one
/// look-back window of tiles).
fn lengths_for(algorithm: CompactAlgorithm) -> Vec<usize> {
    let mut lengths = match algorithm {
        CompactAlgorithm::SinglePass => lengths_full(),
        CompactAlgorithm::ThreePass { .. } => lengths_three_pass(),
    };
    lengths.retain(|&n| n <= parprims_testkit::testing::scaled(usize::MAX, (1 << 17) + 1));
    lengths
}

/// 0 %, 1 %, 50 %, 99 %, 100 %, and a random one per call.
fn densities(rng: &mut SplitMix64) -> Vec<f64> {
    vec![0.0, 0.01, 0.5, 0.99, 1.0, rng.next_f64()]
}

fn check_flagged<T: Element>(
    gpu: &Gpu,
    algorithm: CompactAlgorithm,
    n: usize,
    density: f64,
    seed: u64,
) {
    let ctx = format!(
        "select_flagged {} {algorithm} n={n} density={density} seed={seed:#x}",
        T::SUFFIX
    );
    let input: Vec<T> = random_vec(n, seed, 0.0, 1000.0);
    let flags = random_flags(n, seed ^ 0x9e37, density);
    let expected = cpu::select_flagged(&input, &flags).expect("equal lengths");
    let d_input = DeviceBuffer::from_host(gpu, &input).expect(&ctx);
    let d_flags = DeviceBuffer::from_host(gpu, &flags).expect(&ctx);

    // The _into form: a longer output, poisoned; the count stays on the device.
    check_select_flagged_into(
        gpu,
        d_input.view(),
        d_flags.view(),
        &expected,
        5,
        algorithm,
        &ctx,
    );

    // The owned form: exactly `count` items.
    let owned = select_flagged(gpu, d_input.view(), d_flags.view(), algorithm).expect(&ctx);
    assert_eq!(owned.count, expected.len(), "{ctx}: owned count");
    assert_eq!(owned.items.len(), expected.len(), "{ctx}: owned length");
    let owned_host = owned.items.to_host(gpu).expect(&ctx);
    assert!(bits(&owned_host) == bits(&expected), "{ctx}: owned items");
}

fn check_predicate<T: Element>(
    gpu: &Gpu,
    algorithm: CompactAlgorithm,
    input: &[T],
    predicate: &Predicate<T>,
    ctx: &str,
) {
    let d_input = DeviceBuffer::from_host(gpu, input).expect(ctx);

    check_select_if_and_partition_into(gpu, d_input.view(), input, predicate, algorithm, ctx);

    // The owned forms.
    let expected = cpu::select_if(input, predicate);
    let owned = select_if(gpu, d_input.view(), predicate, algorithm).expect(ctx);
    assert_eq!(owned.count, expected.len(), "{ctx}: owned count");
    assert!(
        bits(&owned.items.to_host(gpu).expect(ctx)) == bits(&expected),
        "{ctx}: owned items"
    );
    let (expected_partition, expected_count) = cpu::partition(input, predicate);
    let (owned_partition, owned_count) =
        partition(gpu, d_input.view(), predicate, algorithm).expect(ctx);
    assert_eq!(owned_count, expected_count, "{ctx}: owned partition count");
    assert!(
        bits(&owned_partition.to_host(gpu).expect(ctx)) == bits(&expected_partition),
        "{ctx}: owned partition"
    );

    // count_if, both forms.
    let expected_count_if = cpu::count_if(input, predicate);
    assert_eq!(
        count_if(gpu, d_input.view(), predicate).expect(ctx),
        expected_count_if,
        "{ctx}: count_if"
    );
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect(ctx);
    count_if_into(gpu, d_input.view(), predicate, count.view_mut()).expect(ctx);
    assert_eq!(
        count.to_host(gpu).expect(ctx)[0] as usize,
        expected_count_if,
        "{ctx}: count_if_into"
    );
}

/// Lt(threshold) on values uniform in [0, 1000) keeps about `density` of them.
fn density_predicate<T: Element>(density: f64) -> Predicate<T> {
    Predicate::Lt(T::from_f64((density * 1000.0).round()))
}

fn matrix<T: Element>(algorithms: &[CompactAlgorithm]) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let mut rng = SplitMix64::new(seed);
    for &algorithm in algorithms {
        for n in lengths_for(algorithm) {
            for density in densities(&mut rng) {
                let case_seed = rng.next_u64() | 1;
                check_flagged::<T>(&gpu, algorithm, n, density, case_seed);
                let input: Vec<T> = random_vec(n, case_seed ^ 0x51, 0.0, 1000.0);
                let predicate = density_predicate::<T>(density);
                let ctx = format!(
                    "{} {algorithm} n={n} {predicate:?} seed={case_seed:#x}",
                    T::SUFFIX
                );
                check_predicate(&gpu, algorithm, &input, &predicate, &ctx);
            }
        }
    }
}

fn single_pass() -> Vec<CompactAlgorithm> {
    vec![CompactAlgorithm::SinglePass]
}

fn three_pass_all() -> Vec<CompactAlgorithm> {
    CompactAlgorithm::all()
        .into_iter()
        .filter(|a| matches!(a, CompactAlgorithm::ThreePass { .. }))
        .collect()
}

macro_rules! per_type {
    ($($t:ty => $single:ident, $three:ident;)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $single() {
            matrix::<$t>(&single_pass());
        }
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $three() {
            matrix::<$t>(&three_pass_all());
        }
    )*};
}

per_type! {
    i32 => single_pass_i32, three_pass_i32;
    u32 => single_pass_u32, three_pass_u32;
    i64 => single_pass_i64, three_pass_i64;
    u64 => single_pass_u64, three_pass_u64;
    f32 => single_pass_f32, three_pass_f32;
    f64 => single_pass_f64, three_pass_f64;
}

/// Every built-in predicate kind, on integers with repeats and extremes.
fn every_predicate_on<T: Element>(values: Vec<T>, a: T, b: T) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let predicates = vec![
        Predicate::NonZero,
        Predicate::Eq(a),
        Predicate::Ne(a),
        Predicate::Lt(a),
        Predicate::Le(a),
        Predicate::Gt(a),
        Predicate::Ge(a),
        Predicate::InRange { low: a, high: b },
        Predicate::InRange { low: b, high: a }, // empty range
    ];
    for algorithm in single_and_three_pass(ScanAlgorithm::DecoupledLookback) {
        for predicate in &predicates {
            let ctx = format!("{} {algorithm} {predicate:?}", T::SUFFIX);
            check_predicate(&gpu, algorithm, &values, predicate, &ctx);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_builtin_predicate_integers() {
    let seed = fresh_seed();
    let n = 3 * TILE + 77;
    let mut values: Vec<i32> = random_vec(n, seed, -20.0, 20.0);
    values[0] = i32::MIN;
    values[n - 1] = i32::MAX;
    every_predicate_on(values, -3i32, 7);
    let mut values: Vec<u64> = random_vec(n, seed ^ 3, 0.0, 40.0);
    values[5] = u64::MAX;
    every_predicate_on(values, 11u64, 29);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nan_compares_false_except_ne() {
    let seed = fresh_seed();
    let n = 2 * TILE + 333;
    let mut rng = SplitMix64::new(seed);
    let mut values: Vec<f32> = random_vec(n, seed, -10.0, 10.0);
    let mut values64: Vec<f64> = random_vec(n, seed ^ 5, -10.0, 10.0);
    for i in 0..n {
        match rng.below(8) {
            0 => {
                values[i] = f32::from_bits(0x7fc0_0000 | (i as u32 & 0xffff)); // NaN, varied payload
                values64[i] = f64::NAN;
            }
            1 => {
                values[i] = -0.0;
                values64[i] = 0.0;
            }
            2 => {
                values[i] = f32::INFINITY;
                values64[i] = f64::NEG_INFINITY;
            }
            _ => {}
        }
    }
    every_predicate_on(values, -1.5f32, 2.25);
    every_predicate_on(values64, 0.0f64, 3.5);
    // A NaN parameter: only Ne keeps anything.
    every_predicate_on(vec![1.0f32, f32::NAN, -2.0, 0.0], f32::NAN, 5.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_predicates() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let n = 5 * TILE + 3;
    let odd = Predicate::Custom(
        CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0).expect("valid"),
    );
    let ints: Vec<i32> = random_vec(n, seed, -1e6, 1e6);
    let near = Predicate::Custom(
        CustomPredicate::<f64>::new("near_origin", "square(x) < 2500.0", |x| x * x < 2500.0)
            .expect("valid")
            .with_support_code("__device__ double square(double v) { return v * v; }")
            .expect("valid"),
    );
    let floats: Vec<f64> = random_vec(n, seed ^ 9, -100.0, 100.0);
    for algorithm in CompactAlgorithm::all() {
        check_predicate(&gpu, algorithm, &ints, &odd, &format!("odd {algorithm}"));
        check_predicate(
            &gpu,
            algorithm,
            &floats,
            &near,
            &format!("near {algorithm}"),
        );
    }
    // Two predicates with the same name but different expressions are
    // different modules (modules are keyed by their source).
    let first = Predicate::Custom(
        CustomPredicate::<i32>::new("same", "x % 3 == 0", |x| x % 3 == 0).expect("valid"),
    );
    let second =
        Predicate::Custom(CustomPredicate::<i32>::new("same", "x < 0", |x| x < 0).expect("valid"));
    check_predicate(
        &gpu,
        CompactAlgorithm::SinglePass,
        &ints,
        &first,
        "same/first",
    );
    check_predicate(
        &gpu,
        CompactAlgorithm::SinglePass,
        &ints,
        &second,
        "same/second",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lookback_stress_many_tiles_repeated() {
    // 4097 tiles, 128 look-back windows: run repeatedly to give races a
    // chance. At the quick scale 257 tiles and two rounds.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let n = parprims_testkit::testing::scaled(1usize << 24, 1 << 20) + 5;
    for round in 0..parprims_testkit::testing::scaled(4u64, 2) {
        let density = [0.5, 0.001, 0.999, 0.3][round as usize];
        check_flagged::<i32>(&gpu, CompactAlgorithm::SinglePass, n, density, seed + round);
    }
    let input: Vec<f64> = random_vec(n, seed ^ 77, 0.0, 1000.0);
    check_predicate(
        &gpu,
        CompactAlgorithm::SinglePass,
        &input,
        &Predicate::InRange {
            low: 100.0,
            high: 700.0,
        },
        "stress f64 in_range",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unaligned_views_use_the_scalar_path() {
    // Sub-views starting 1 element in: 16-byte vector loads are not allowed,
    // the kernels must fall back to scalar loads and still be right.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let n = 3 * TILE + 10;
    let input: Vec<u32> = random_vec(n + 1, seed, 0.0, 1000.0);
    let flags = random_flags(n + 1, seed ^ 1, 0.5);
    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
    let d_flags = DeviceBuffer::from_host(&gpu, &flags).expect("upload");
    let in_view = d_input.slice(1..).expect("in range");
    let flags_view = d_flags.slice(1..).expect("in range");
    let expected = cpu::select_flagged(&input[1..], &flags[1..]).expect("lengths");
    for algorithm in single_and_three_pass(ScanAlgorithm::Blelloch) {
        let got = select_flagged(&gpu, in_view, flags_view, algorithm).expect("select");
        assert_eq!(got.items.to_host(&gpu).expect("download"), expected);
        let predicate = Predicate::Ge(500u32);
        let got = select_if(&gpu, in_view, &predicate, algorithm).expect("select_if");
        assert_eq!(
            got.items.to_host(&gpu).expect("download"),
            cpu::select_if(&input[1..], &predicate)
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn into_forms_do_not_synchronise_and_chain() {
    // Two compactions enqueued back to back on one stream, the second reading
    // the first's output, with no host read in between: the count of the
    // first stays on the device.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let n = 10 * TILE + 1;
    let input: Vec<i64> = random_vec(n, seed, 0.0, 1000.0);
    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
    let mut first = DeviceBuffer::<i64>::poisoned(&gpu, n).expect("alloc");
    let mut second = DeviceBuffer::<i64>::poisoned(&gpu, n).expect("alloc");
    let mut counts = DeviceBuffer::<u64>::poisoned(&gpu, 2).expect("alloc");
    let p1 = Predicate::Lt(600i64);
    let p2 = Predicate::Ge(200i64);
    {
        let (c1, c2) = counts.view_mut().split_at_mut(1).expect("split");
        select_if_into(
            &gpu,
            d_input.view(),
            &p1,
            first.view_mut(),
            c1,
            CompactAlgorithm::SinglePass,
        )
        .expect("first");
        // The second pass reads the first one's kept prefix; its length is
        // taken from the CPU reference so the host never reads the device.
        let kept_first = cpu::count_if(&input, &p1);
        select_if_into(
            &gpu,
            first.slice(..kept_first).expect("prefix"),
            &p2,
            second.view_mut(),
            c2,
            CompactAlgorithm::SinglePass,
        )
        .expect("second");
    }
    let expected_first = cpu::select_if(&input, &p1);
    let expected_second = cpu::select_if(&expected_first, &p2);
    let counts_host = counts.to_host(&gpu).expect("download");
    assert_eq!(counts_host[0] as usize, expected_first.len());
    assert_eq!(counts_host[1] as usize, expected_second.len());
    let second_host = second.to_host(&gpu).expect("download");
    assert_eq!(&second_host[..expected_second.len()], &expected_second[..]);
}

/// One `_into` call that must fail: by flags, by a predicate, or a partition.
enum IntoCall<'a> {
    Flagged(&'a DeviceBuffer<u8>),
    If(&'a Predicate<i32>),
    Partition(&'a Predicate<i32>),
}

impl IntoCall<'_> {
    /// The error the call returns on `input` with `algorithm`.
    fn error(
        &self,
        gpu: &Gpu,
        input: &DeviceBuffer<i32>,
        out: &mut DeviceBuffer<i32>,
        count: &mut DeviceBuffer<u64>,
        algorithm: CompactAlgorithm,
    ) -> Error {
        let (input, out, count) = (input.view(), out.view_mut(), count.view_mut());
        match *self {
            IntoCall::Flagged(flags) => {
                select_flagged_into(gpu, input, flags.view(), out, count, algorithm)
            }
            IntoCall::If(predicate) => select_if_into(gpu, input, predicate, out, count, algorithm),
            IntoCall::Partition(p) => partition_into(gpu, input, p, out, count, algorithm),
        }
        .unwrap_err()
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_typed_errors_and_write_nothing() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let n = 1000;
    let input: Vec<i32> = (0..n as i32).collect();
    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
    let d_flags = DeviceBuffer::from_host(&gpu, &vec![1u8; n - 1]).expect("upload");
    let d_flags_ok = DeviceBuffer::from_host(&gpu, &vec![1u8; n]).expect("upload");
    let mut out = DeviceBuffer::<i32>::poisoned(&gpu, n).expect("alloc");
    let mut short = DeviceBuffer::<i32>::poisoned(&gpu, n - 1).expect("alloc");
    let mut count = DeviceBuffer::<u64>::poisoned(&gpu, 1).expect("alloc");
    let mut count2 = DeviceBuffer::<u64>::poisoned(&gpu, 2).expect("alloc");
    let untouched = |gpu: &Gpu, out: &DeviceBuffer<i32>, count: &DeviceBuffer<u64>| {
        assert!(all_poison(&out.to_host(gpu).expect("download")));
        assert!(all_poison(&count.to_host(gpu).expect("download")));
    };
    // A custom predicate that does not compile.
    let broken = Predicate::Custom(
        CustomPredicate::<i32>::new("broken", "x >>> nonsense(", |_| true).expect("valid name"),
    );
    for algorithm in single_and_three_pass(ScanAlgorithm::Blelloch) {
        let fails = |call: IntoCall<'_>, out: &mut DeviceBuffer<i32>, count: &mut _| {
            call.error(&gpu, &d_input, out, count, algorithm)
        };
        // Flags and input of different lengths.
        let e = fails(IntoCall::Flagged(&d_flags), &mut out, &mut count);
        assert!(
            matches!(e, Error::LengthMismatch { what: "flags", .. }),
            "{e}"
        );
        assert!(matches!(
            select_flagged(&gpu, d_input.view(), d_flags.view(), algorithm).unwrap_err(),
            Error::LengthMismatch { .. }
        ));
        untouched(&gpu, &out, &count);
        // A caller's output too short.
        let e = fails(IntoCall::Flagged(&d_flags_ok), &mut short, &mut count);
        assert!(
            matches!(e, Error::InvalidArgument { name: "output", .. }),
            "{e}"
        );
        let e = fails(
            IntoCall::Partition(&Predicate::Gt(3)),
            &mut short,
            &mut count,
        );
        assert!(
            matches!(e, Error::LengthMismatch { what: "output", .. }),
            "{e}"
        );
        assert!(all_poison(&short.to_host(&gpu).expect("download")));
        // count_out of the wrong length.
        let e = fails(IntoCall::If(&Predicate::Gt(3)), &mut out, &mut count2);
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    what: "count_out",
                    ..
                }
            ),
            "{e}"
        );
        assert!(all_poison(&count2.to_host(&gpu).expect("download")));
        // The predicate that does not compile.
        let e = fails(IntoCall::If(&broken), &mut out, &mut count);
        assert!(matches!(e, Error::Compile { .. }), "{e}");
        let e = fails(IntoCall::Partition(&broken), &mut out, &mut count);
        assert!(matches!(e, Error::Compile { .. }), "{e}");
        assert!(matches!(
            select_if(&gpu, d_input.view(), &broken, algorithm).unwrap_err(),
            Error::Compile { .. }
        ));
        untouched(&gpu, &out, &count);
    }
    // Neighbouring halves of one buffer are disjoint and accepted (an
    // overlapping output cannot be built from safe views; the address check
    // is tested on the CPU, tests/cpu.rs).
    let mut both = DeviceBuffer::<i32>::from_host(&gpu, &[input.clone(), input.clone()].concat())
        .expect("upload");
    let (head, tail) = both.view_mut().split_at_mut(n).expect("split");
    select_if_into(
        &gpu,
        head.as_view(),
        &Predicate::Ge(500),
        tail,
        count.view_mut(),
        CompactAlgorithm::SinglePass,
    )
    .expect("disjoint halves");
    let both_host = both.to_host(&gpu).expect("download");
    assert_eq!(count.to_host(&gpu).expect("download"), vec![500]);
    assert_eq!(&both_host[n..n + 500], &input[500..]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_and_all_rejected_give_empty_results() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let empty = DeviceBuffer::<f32>::from_host(&gpu, &[]).expect("upload");
    let no_flags = DeviceBuffer::<u8>::from_host(&gpu, &[]).expect("upload");
    let values = DeviceBuffer::from_host(&gpu, &vec![1.0f32; 3 * TILE]).expect("upload");
    for algorithm in CompactAlgorithm::all() {
        let got = select_flagged(&gpu, empty.view(), no_flags.view(), algorithm).expect("empty");
        assert_eq!((got.count, got.items.len()), (0, 0));
        let got = select_if(&gpu, values.view(), &Predicate::Gt(1.0), algorithm).expect("none");
        assert_eq!((got.count, got.items.len()), (0, 0));
        let (items, count) =
            partition(&gpu, empty.view(), &Predicate::NonZero, algorithm).expect("empty partition");
        assert_eq!((items.len(), count), (0, 0));
        let mut count_out = DeviceBuffer::<u64>::poisoned(&gpu, 1).expect("alloc");
        let mut out = DeviceBuffer::<f32>::poisoned(&gpu, 0).expect("alloc");
        select_if_into(
            &gpu,
            empty.view(),
            &Predicate::NonZero,
            out.view_mut(),
            count_out.view_mut(),
            algorithm,
        )
        .expect("empty into");
        assert_eq!(count_out.to_host(&gpu).expect("download"), vec![0]);
    }
    assert_eq!(
        count_if(&gpu, empty.view(), &Predicate::NonZero).expect("count"),
        0
    );
}
