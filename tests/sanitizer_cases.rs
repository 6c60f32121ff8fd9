//! Compute-sanitizer coverage: every kernel the library can launch, at small
//! sizes, each result checked against the CPU reference.
//!
//! `scripts/gpu-sanitize.sh` runs every test binary under compute-sanitizer
//! (memcheck, racecheck, synccheck, initcheck; `--include-ignored`, one test
//! thread). The other GPU binaries are sized for coverage of *arguments*
//! (many lengths, repetitions, 2^24-element runs) and mostly too slow to
//! instrument in full. This binary is sized for coverage of *kernels*: its
//! tests launch every kernel of every primitive — every algorithm, scan and
//! compaction tuning variant, transpose and matvec variant, conv algorithm,
//! border, padding, filter size, block shape and strip tuning the library
//! can select, each for 4- and 8-byte elements (1-byte too for transpose)
//! and for integers and floats where the kernel has both — at the smallest
//! sizes that
//! still reach each kernel's code paths (partial tiles and partial warp
//! segments, three recursion levels, look-back across windows, the
//! look-back delays that switch on at 512 tiles, unaligned views that take
//! the scalar load paths, two-pass reductions, filters larger than the
//! image). Every output is poisoned before the run (`DeviceBuffer::poisoned`,
//! `Matrix::poisoned`), so an element a kernel skipped shows up, and
//! compared in full with the crate's CPU reference, exactly: integers wrap
//! the same way on both sides, and float inputs are small whole numbers, so
//! every sum and product is exact in any order.
//!
//! Run it alone with
//! `SANITIZE_BINARIES='^sanitizer_cases' bash scripts/gpu-sanitize.sh racecheck`
//! (after `scripts/gpu-bundle.sh`), or without a sanitizer with
//! `cargo test --release --test sanitizer_cases -- --include-ignored`.
//! Inputs come from fixed seeds (`PARPRIMS_SEED=<n>` changes them), so a
//! sanitizer report can be replayed.
//!
//! # Size budget
//!
//! Racecheck slows shared-memory kernels a hundredfold or more, and the
//! script gives each binary 150 s per tool (`SANITIZE_TIMEOUT`), compile time
//! included. So sizes are the least that reach a path, not round numbers:
//! 1k–300k elements per scan or compaction, matrices up to 1000 × 37 and
//! 257 × 129, images up to 130 × 70. Elements per test, about (input
//! elements summed over every launch; for conv2d, image plus output):
//!
//! | test | elements |
//! |---|---|
//! | `sanitizer_scan_teaching_variants` | 1.0 M |
//! | `sanitizer_scan_single_pass_and_reduce_then_scan` | 1.9 M |
//! | `sanitizer_scan_lookback_protocol_variants` | 1.1 M |
//! | `sanitizer_compact_single_pass` | 2.7 M |
//! | `sanitizer_compact_three_pass` | 1.4 M |
//! | `sanitizer_compact_tuned_candidates` | 0.8 M |
//! | `sanitizer_compact_tuned_many_tiles` | 39 M (132 SMs) |
//! | `sanitizer_transpose_every_algorithm_and_element_size` | 0.6 M |
//! | `sanitizer_matvec_every_algorithm` | 3.4 M |
//! | `sanitizer_conv2d_every_border_padding_and_k` | 1.8 M |
//! | `sanitizer_conv2d_block_sizes` | 1.2 M |
//! | `sanitizer_conv2d_strip_candidates` | 0.5 M |
//!
//! The one exception is `sanitizer_compact_tuned_many_tiles`: the single-pass
//! compaction's look-back delays (and, with `spin_ns = 0`, its growing
//! back-off) only switch on from 512 tiles, and a tuned candidate's tile is
//! 2k–6k items, so each candidate needs 2–3 M items (one entry point per
//! candidate, in rotation); a persistent candidate needs more tiles than
//! blocks can be resident (so that its blocks loop), ≈ 4.3 M on an H100. If
//! it is too slow under racecheck, leave it out with `-- --skip many_tiles`.
//! Without a sanitizer the whole binary should take a few seconds once the
//! kernels are in the disk cache; a cold cache adds the NVRTC compile of
//! about 90 modules, so warm the cache (one plain run) before a sanitizer
//! run.
//!
//! Not launched here: the three-pass compaction's `u64` marks (only past
//! u32::MAX items); the strip conv kernels for `f64` and `i32` (no tuning of
//! the library selects them); and the remaining element type × operator
//! instantiations of the same templates (scan: i32 / u64 sums, f32 max, u32
//! sums through the three-pass marks; compaction: i32, f64, and u64 through
//! the tuned candidates), which `tests/kernel_compile.rs` compiles.

mod support;

use support::{conv_options, gpu, same_bits, small_values};

use std::sync::OnceLock;

use compact::policy::{CompactPolicy, Schedule};
use compact::{CompactAlgorithm, CompactOptions, CustomPredicate, Predicate};
use gpu_core::{
    DeviceBuffer, DeviceType, DeviceView, DeviceViewMut, Element, Gpu, Max, Operator, Sum,
};
use linalg::conv::CONV_BLOCKS;
use linalg::policy::{ConvPolicy, MatvecPolicy, TransposePolicy, STRIP_CANDIDATES, STRIP_MAX_K};
use linalg::{
    Border, ConvAlgorithm, ConvElement, ConvOptions, Matrix, MatrixView, MatvecAlgorithm,
    MatvecElement, Padding, Transpose, TransposeAlgorithm,
};
use parprims_testkit::rng::{random_flags, SplitMix64};
use scan::policy::Policy;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

// ---------------------------------------------------------------------------
// Shared state and helpers.

/// The seed for the inputs named `label`: a fixed base (or
/// `PARPRIMS_SEED`), printed once, mixed with a hash of the label so every
/// case has its own inputs and a report can be replayed.
fn seed_for(label: &str) -> u64 {
    static BASE: OnceLock<u64> = OnceLock::new();
    let base = *BASE.get_or_init(|| {
        let base = std::env::var("PARPRIMS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5a17_12e5_c0de_0001);
        eprintln!("input seed {base} (PARPRIMS_SEED={base} replays it)");
        base
    });
    // FNV-1a of the label.
    let label_hash = label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3)
    });
    base ^ label_hash
}

/// Scan inputs: wide integers (so sums wrap, exactly as on the CPU), and
/// whole floats in -4 … 5 (300k of them sum to at most 1.5 M < 2^24: exact).
fn wide_values<T: Element>(n: usize, seed: u64) -> Vec<T> {
    support::wide_values(n, seed, -4.0, 5.0)
}

/// Random bit patterns of any device type from `seed`.
fn random_bits<T: DeviceType>(n: usize, seed: u64) -> Vec<T> {
    support::random_bits(&mut SplitMix64::new(seed), n)
}

/// Panics with the first differing element (and how many differ) unless
/// `got` equals `expected` element for element (`==`, or the same bits).
fn assert_same<T: DeviceType>(got: &[T], expected: &[T], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: length");
    let differ = |(a, b): &(&T, &T)| !same_bits(*a, *b);
    if let Some(first) = got.iter().zip(expected).position(|pair| differ(&pair)) {
        let wrong = got.iter().zip(expected).filter(differ).count();
        panic!(
            "{what}: element {first} of {} is {:?}, expected {:?} ({wrong} elements differ)",
            got.len(),
            got[first],
            expected[first]
        );
    }
}

/// Panics unless every element still holds the poison value (memory a
/// kernel must not write: past a compaction's count, guards around a view).
fn assert_poisoned<T: DeviceType>(values: &[T], what: &str) {
    let poison = T::poison();
    if let Some(i) = values.iter().position(|v| !same_bits(v, &poison)) {
        panic!(
            "{what}: element {i} of {} was written ({:?})",
            values.len(),
            values[i]
        );
    }
}

// ---------------------------------------------------------------------------
// Scan.

/// Which scan entry runs: the public API with options, or the look-back or
/// reduce-then-scan kernel with an explicit tuning.
#[derive(Clone, Copy, Debug)]
enum ScanRunner {
    Options(ScanOptions),
    Lookback(Policy),
    ReduceThenScan(Policy),
}

impl ScanRunner {
    /// Scans `input` into `output`, or `output` in place when `input` is
    /// `None`.
    fn run<T: Element, O: Operator<T>>(
        self,
        gpu: &Gpu,
        input: Option<DeviceView<'_, T>>,
        output: DeviceViewMut<'_, T>,
        op: &O,
        kind: ScanKind<T>,
    ) -> gpu_core::Result<()> {
        match self {
            ScanRunner::Options(options) => match input {
                Some(input) => scan::scan_into(gpu, input, output, op, kind, &options),
                None => scan::scan_in_place(gpu, output, op, kind, &options),
            },
            ScanRunner::Lookback(tuning) => ScanRunner::Options(
                ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(tuning),
            )
            .run(gpu, input, output, op, kind),
            ScanRunner::ReduceThenScan(tuning) => ScanRunner::Options(
                ScanOptions::new(ScanAlgorithm::ReduceThenScan).with_policy(tuning),
            )
            .run(gpu, input, output, op, kind),
        }
    }

    fn label(self) -> String {
        match self {
            ScanRunner::Options(options) => format!(
                "{} block {}",
                options.algorithm,
                options
                    .block_threads
                    .map_or_else(|| "default".to_owned(), |b| b.to_string())
            ),
            ScanRunner::Lookback(tuning) => format!("lookback {}", tuning.label()),
            ScanRunner::ReduceThenScan(tuning) => format!("reduce-then-scan {}", tuning.label()),
        }
    }
}

/// Where the scan reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// From an input buffer into a poisoned output buffer.
    OutOfPlace,
    /// In place.
    InPlace,
    /// From a view starting one element into its buffer into a poisoned
    /// output view starting three elements in (16-byte vector paths off),
    /// the guard elements around the output checked untouched.
    Misaligned,
}

/// Element offset of the misaligned output view (and the guards before it).
const OUTPUT_GUARD: usize = 3;

/// Runs one scan and checks every element against `scan::cpu::scan`.
fn check_scan<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    runner: ScanRunner,
    host: &[T],
    op: &O,
    kind: ScanKind<T>,
    placement: Placement,
) {
    let n = host.len();
    let what = format!(
        "scan {} {} n={n} {kind:?} {placement:?} {}",
        T::SUFFIX,
        op.name(),
        runner.label()
    );
    let expected = scan::cpu::scan(host, op, kind);
    let fail = |e: gpu_core::Error| panic!("{what}: {e}");
    match placement {
        Placement::OutOfPlace => {
            let input = DeviceBuffer::from_host(gpu, host).expect("scan input upload");
            let mut output = DeviceBuffer::<T>::poisoned(gpu, n).expect("poisoned scan output");
            runner
                .run(gpu, Some(input.view()), output.view_mut(), op, kind)
                .unwrap_or_else(fail);
            let got = output.to_host(gpu).expect("scan output download");
            assert_same(&got, &expected, &what);
        }
        Placement::InPlace => {
            let mut data = DeviceBuffer::from_host(gpu, host).expect("scan data upload");
            runner
                .run(gpu, None, data.view_mut(), op, kind)
                .unwrap_or_else(fail);
            let got = data.to_host(gpu).expect("scan data download");
            assert_same(&got, &expected, &what);
        }
        Placement::Misaligned => {
            let mut padded = Vec::with_capacity(n + 1);
            padded.push(T::poison());
            padded.extend_from_slice(host);
            let input = DeviceBuffer::from_host(gpu, &padded).expect("scan input upload");
            let mut output = DeviceBuffer::<T>::poisoned(gpu, OUTPUT_GUARD + n + 1)
                .expect("poisoned scan output");
            let input_view = input.slice(1..).expect("input view from element 1");
            let output_view = output
                .slice_mut(OUTPUT_GUARD..OUTPUT_GUARD + n)
                .expect("output view from element 3");
            runner
                .run(gpu, Some(input_view), output_view, op, kind)
                .unwrap_or_else(fail);
            let got = output.to_host(gpu).expect("scan output download");
            assert_same(&got[OUTPUT_GUARD..OUTPUT_GUARD + n], &expected, &what);
            assert_poisoned(&got[..OUTPUT_GUARD], &format!("{what}: guard before"));
            assert_poisoned(&got[OUTPUT_GUARD + n..], &format!("{what}: guard after"));
        }
    }
}

/// Initial values of the exclusive scans (any value: the CPU uses it too).
const I32_INITIAL: i32 = 9;
const U64_INITIAL: u64 = (1 << 40) | 3;
const F32_INITIAL: f32 = 2.0;

/// Inclusive and exclusive (from `initial`), out of place and in place, in
/// every pairing.
fn kind_placement_pairs<T: Element>(initial: T) -> [(ScanKind<T>, Placement); 4] {
    [
        (ScanKind::Inclusive, Placement::OutOfPlace),
        (ScanKind::Exclusive { initial }, Placement::InPlace),
        (ScanKind::Exclusive { initial }, Placement::OutOfPlace),
        (ScanKind::Inclusive, Placement::InPlace),
    ]
}

/// Inclusive and exclusive scans, out of place and in place, in every
/// pairing: i32 and u64 sums (wrapping) and f32 max (whole numbers), `n`
/// elements each.
fn scan_every_kind_and_placement(gpu: &Gpu, runner: ScanRunner, n: usize) {
    let label = format!("{} n={n}", runner.label());
    let i32s = wide_values::<i32>(n, seed_for(&format!("{label} i32")));
    for (kind, placement) in kind_placement_pairs(I32_INITIAL) {
        check_scan(gpu, runner, &i32s, &Sum, kind, placement);
    }
    let u64s = wide_values::<u64>(n, seed_for(&format!("{label} u64")));
    for (kind, placement) in kind_placement_pairs(U64_INITIAL) {
        check_scan(gpu, runner, &u64s, &Sum, kind, placement);
    }
    let f32s = wide_values::<f32>(n, seed_for(&format!("{label} f32")));
    for (kind, placement) in kind_placement_pairs(F32_INITIAL) {
        check_scan(gpu, runner, &f32s, &Max, kind, placement);
    }
}

/// The teaching variants (Hillis–Steele global and per block, Blelloch,
/// Blelloch padded): at block 32 (tiles of 32 elements for Hillis–Steele
/// global, 128 for the others) with 128² + 129 elements, at least three
/// recursion levels and a partial tile at each, every kind and placement
/// for i32 / u64 / f32; at the default block (256, tile 1024) with 70,001
/// elements (two levels, a partial tile), one case per type.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_scan_teaching_variants() {
    let gpu = gpu();
    for algorithm in ScanAlgorithm::TEACHING {
        let small_block = ScanRunner::Options(ScanOptions::new(algorithm).with_block_threads(32));
        scan_every_kind_and_placement(gpu, small_block, 128 * 128 + 129);

        let default_block = ScanRunner::Options(ScanOptions::new(algorithm));
        let n = 70_001;
        let label = format!("{algorithm} default block");
        let i32s = wide_values::<i32>(n, seed_for(&format!("{label} i32")));
        check_scan(
            gpu,
            default_block,
            &i32s,
            &Sum,
            ScanKind::Inclusive,
            Placement::OutOfPlace,
        );
        let u64s = wide_values::<u64>(n, seed_for(&format!("{label} u64")));
        check_scan(
            gpu,
            default_block,
            &u64s,
            &Sum,
            ScanKind::Exclusive {
                initial: U64_INITIAL,
            },
            Placement::InPlace,
        );
        let f32s = wide_values::<f32>(n, seed_for(&format!("{label} f32")));
        check_scan(
            gpu,
            default_block,
            &f32s,
            &Max,
            ScanKind::Exclusive {
                initial: F32_INITIAL,
            },
            Placement::OutOfPlace,
        );
    }
}

/// The decoupled look-back scan (and `Auto`, which is it) and
/// reduce-then-scan at their table tunings: 5 · 4096 + 3 elements (a few
/// tiles and a partial one) in every kind and placement plus misaligned
/// views (the element-wise load paths); 300,007 elements (49–147 tiles:
/// look-back across windows, two reduce-then-scan levels) for i32 and u64;
/// and reduce-then-scan with the protocol tests' 32 × 1 tiles at 32³ + 5
/// elements (four levels).
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_scan_single_pass_and_reduce_then_scan() {
    let gpu = gpu();
    for algorithm in [
        ScanAlgorithm::DecoupledLookback,
        ScanAlgorithm::ReduceThenScan,
    ] {
        let runner = ScanRunner::Options(ScanOptions::new(algorithm));
        let small = 5 * 4096 + 3;
        scan_every_kind_and_placement(gpu, runner, small);
        let label = format!("{algorithm} misaligned");
        let i32s = wide_values::<i32>(small, seed_for(&format!("{label} i32")));
        check_scan(
            gpu,
            runner,
            &i32s,
            &Sum,
            ScanKind::Exclusive {
                initial: I32_INITIAL,
            },
            Placement::Misaligned,
        );
        let u64s = wide_values::<u64>(small, seed_for(&format!("{label} u64")));
        check_scan(
            gpu,
            runner,
            &u64s,
            &Sum,
            ScanKind::Inclusive,
            Placement::Misaligned,
        );

        let large = 300_007;
        let label = format!("{algorithm} n={large}");
        let i32s = wide_values::<i32>(large, seed_for(&format!("{label} i32")));
        check_scan(
            gpu,
            runner,
            &i32s,
            &Sum,
            ScanKind::Inclusive,
            Placement::OutOfPlace,
        );
        let u64s = wide_values::<u64>(large, seed_for(&format!("{label} u64")));
        check_scan(
            gpu,
            runner,
            &u64s,
            &Sum,
            ScanKind::Exclusive {
                initial: U64_INITIAL,
            },
            Placement::InPlace,
        );
    }

    let auto = ScanRunner::Options(ScanOptions::new(ScanAlgorithm::Auto));
    let i32s = wide_values::<i32>(5 * 4096 + 3, seed_for("auto i32"));
    check_scan(
        gpu,
        auto,
        &i32s,
        &Sum,
        ScanKind::Inclusive,
        Placement::OutOfPlace,
    );

    let tiny_tiles = ScanRunner::ReduceThenScan(scan::policy::PROTOCOL_TEST_TUNING);
    let n = 32 * 32 * 32 + 5;
    let i32s = wide_values::<i32>(n, seed_for("reduce-then-scan tiny tiles i32"));
    check_scan(
        gpu,
        tiny_tiles,
        &i32s,
        &Sum,
        ScanKind::Inclusive,
        Placement::OutOfPlace,
    );
    let u64s = wide_values::<u64>(n, seed_for("reduce-then-scan tiny tiles u64"));
    check_scan(
        gpu,
        tiny_tiles,
        &u64s,
        &Sum,
        ScanKind::Exclusive {
            initial: U64_INITIAL,
        },
        Placement::InPlace,
    );
}

/// Tiles of a look-back protocol run: past the 512 tiles from which the
/// look-back delays apply, and past the widest window (8 × 32 tiles).
const PROTOCOL_TILES: usize = 600;

/// Every look-back protocol variant (`scan::policy::protocol_test_variants`: tile
/// layouts, window widths, 8-byte status encodings, back-off and start
/// delays, streaming hints) at 600 tiles and a partial one, for a 4-byte
/// (i32) and an 8-byte (u64) sum; the kind and placement rotate over the
/// variants.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_scan_lookback_protocol_variants() {
    let gpu = gpu();
    let placements = [
        Placement::OutOfPlace,
        Placement::InPlace,
        Placement::Misaligned,
    ];
    for (index, tuning) in scan::policy::protocol_test_variants()
        .into_iter()
        .enumerate()
    {
        let runner = ScanRunner::Lookback(tuning);
        let n = PROTOCOL_TILES * tuning.tile_items() as usize + 7;
        let label = format!("protocol {} n={n}", tuning.label());
        let i32s = wide_values::<i32>(n, seed_for(&format!("{label} i32")));
        let kind = if index % 2 == 0 {
            ScanKind::Inclusive
        } else {
            ScanKind::Exclusive {
                initial: I32_INITIAL,
            }
        };
        check_scan(
            gpu,
            runner,
            &i32s,
            &Sum,
            kind,
            placements[index % placements.len()],
        );
        let u64s = wide_values::<u64>(n, seed_for(&format!("{label} u64")));
        let kind = if index % 2 == 1 {
            ScanKind::Inclusive
        } else {
            ScanKind::Exclusive {
                initial: U64_INITIAL,
            }
        };
        check_scan(
            gpu,
            runner,
            &u64s,
            &Sum,
            kind,
            placements[(index + 1) % placements.len()],
        );
    }
}

// ---------------------------------------------------------------------------
// Compaction.

/// Items of the untuned single-pass runs: 17 tiles of 4096 and a partial
/// one (both default tunings have 4096-item tiles).
const COMPACT_LEN: usize = 70_001;

/// Items of the three-pass runs: 78 map/scatter blocks of 256 and a partial
/// one; 19 tiles of the teaching scans' default 1024 and a partial one.
const THREE_PASS_LEN: usize = 20_011;

/// Spare output elements after a select's worst case, checked untouched.
const OUTPUT_SLACK: usize = 5;

/// Compaction inputs: whole numbers in -8 … 8 (signed, floats) or 0 … 8
/// (unsigned).
fn compact_values<T: Element>(n: usize, label: &str) -> Vec<T> {
    small_values::<T>(n, seed_for(label), 8.0)
}

/// A built-in predicate keeping about half of [`compact_values`]' inputs.
fn keeps_half<T: Element>() -> Predicate<T> {
    let middle = if T::IS_SIGNED {
        T::zero()
    } else {
        T::from_f64(4.0)
    };
    Predicate::Lt(middle)
}

/// Built-in predicates keeping none, about half and all of
/// [`compact_values`]' inputs.
fn density_predicates<T: Element>() -> Vec<(&'static str, Predicate<T>)> {
    vec![
        ("keeps none", Predicate::Gt(T::highest())),
        ("keeps half", keeps_half()),
        ("keeps all", Predicate::Ge(T::lowest())),
    ]
}

/// A caller's predicate (its own module, compiled from CUDA C text).
fn custom_between<T: Element>() -> Predicate<T> {
    let (low, high) = (T::from_f64(2.0), T::from_f64(6.0));
    Predicate::Custom(
        CustomPredicate::new("sanitizer_between", "x > 2 && x < 6", move |x: T| {
            x > low && x < high
        })
        .expect("a valid custom predicate"),
    )
}

/// Runs a select into a poisoned output of `capacity` elements and a
/// poisoned count; checks the count, the kept items and that nothing past
/// the count was written.
fn check_select_into<T: Element>(
    gpu: &Gpu,
    capacity: usize,
    expected: &[T],
    what: &str,
    select: impl FnOnce(DeviceViewMut<'_, T>, DeviceViewMut<'_, u64>) -> gpu_core::Result<()>,
) {
    let mut output = DeviceBuffer::<T>::poisoned(gpu, capacity).expect("poisoned select output");
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("poisoned count");
    select(output.view_mut(), count.view_mut()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let kept = count.to_host(gpu).expect("count download")[0];
    assert_eq!(kept, expected.len() as u64, "{what}: count");
    let got = output.to_host(gpu).expect("select output download");
    let kept = expected.len();
    assert_same(&got[..kept], expected, what);
    assert_poisoned(&got[kept..], &format!("{what}: past the count"));
}

/// Runs a partition into a poisoned output of exactly `expected.len()`
/// elements and a poisoned count; checks both.
fn check_partition_into<T: Element>(
    gpu: &Gpu,
    expected: &[T],
    expected_count: usize,
    what: &str,
    partition: impl FnOnce(DeviceViewMut<'_, T>, DeviceViewMut<'_, u64>) -> gpu_core::Result<()>,
) {
    let mut output =
        DeviceBuffer::<T>::poisoned(gpu, expected.len()).expect("poisoned partition output");
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("poisoned count");
    partition(output.view_mut(), count.view_mut()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let kept = count.to_host(gpu).expect("count download")[0];
    assert_eq!(kept, expected_count as u64, "{what}: count");
    let got = output.to_host(gpu).expect("partition output download");
    assert_same(&got, expected, what);
}

/// Runs a count into a poisoned counter and checks it.
fn check_count_into(
    gpu: &Gpu,
    expected: usize,
    what: &str,
    count: impl FnOnce(DeviceViewMut<'_, u64>) -> gpu_core::Result<()>,
) {
    let mut counter = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("poisoned count");
    count(counter.view_mut()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = counter.to_host(gpu).expect("count download")[0];
    assert_eq!(got, expected as u64, "{what}: count");
}

/// The `_into` forms with `algorithm`: `select_flagged_into` at each flag
/// density, `select_if_into` and `partition_into` with each predicate.
/// `host` is what `input` holds.
fn compact_into_cases<T: Element>(
    gpu: &Gpu,
    algorithm: CompactAlgorithm,
    host: &[T],
    input: DeviceView<'_, T>,
    flag_densities: &[f64],
    predicates: &[(&str, Predicate<T>)],
) {
    let n = host.len();
    let label = format!("{} {algorithm} n={n}", T::SUFFIX);
    for &density in flag_densities {
        let what = format!("select_flagged_into {label} density {density}");
        let flags = random_flags(n, seed_for(&what), density);
        let expected = compact::cpu::select_flagged(host, &flags).expect("flags match the input");
        let device_flags = DeviceBuffer::from_host(gpu, &flags).expect("flags upload");
        check_select_into(gpu, n + OUTPUT_SLACK, &expected, &what, |output, count| {
            compact::select_flagged_into(gpu, input, device_flags.view(), output, count, algorithm)
        });
    }
    for (name, predicate) in predicates {
        let what = format!("select_if_into {label} {name}");
        let expected = compact::cpu::select_if(host, predicate);
        check_select_into(gpu, n + OUTPUT_SLACK, &expected, &what, |output, count| {
            compact::select_if_into(gpu, input, predicate, output, count, algorithm)
        });
        let what = format!("partition_into {label} {name}");
        let (expected, expected_count) = compact::cpu::partition(host, predicate);
        check_partition_into(gpu, &expected, expected_count, &what, |output, count| {
            compact::partition_into(gpu, input, predicate, output, count, algorithm)
        });
    }
}

/// The owned forms (which count first: the count kernels), and the counts.
fn compact_owned_cases<T: Element>(
    gpu: &Gpu,
    algorithm: CompactAlgorithm,
    host: &[T],
    input: DeviceView<'_, T>,
) {
    let n = host.len();
    let label = format!("{} {algorithm} n={n}", T::SUFFIX);
    let half = keeps_half::<T>();
    let custom = custom_between::<T>();

    let what = format!("select_flagged {label}");
    let flags = random_flags(n, seed_for(&what), 0.5);
    let expected = compact::cpu::select_flagged(host, &flags).expect("flags match the input");
    let device_flags = DeviceBuffer::from_host(gpu, &flags).expect("flags upload");
    let kept = compact::select_flagged(gpu, input, device_flags.view(), algorithm)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(kept.count, expected.len(), "{what}: count");
    let got = kept.items.to_host(gpu).expect("kept items download");
    assert_same(&got, &expected, &what);

    let what = format!("select_if custom {label}");
    let expected = compact::cpu::select_if(host, &custom);
    let kept = compact::select_if(gpu, input, &custom, algorithm)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(kept.count, expected.len(), "{what}: count");
    let got = kept.items.to_host(gpu).expect("kept items download");
    assert_same(&got, &expected, &what);

    let what = format!("partition {label}");
    let (expected, expected_count) = compact::cpu::partition(host, &half);
    let (items, count) =
        compact::partition(gpu, input, &half, algorithm).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(count, expected_count, "{what}: count");
    let got = items.to_host(gpu).expect("partition download");
    assert_same(&got, &expected, &what);

    let what = format!("count_if {label}");
    let count = compact::count_if(gpu, input, &half).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(count, compact::cpu::count_if(host, &half), "{what}");

    let what = format!("count_if_into custom {label}");
    check_count_into(
        gpu,
        compact::cpu::count_if(host, &custom),
        &what,
        |counter| compact::count_if_into(gpu, input, &custom, counter),
    );
}

/// The single-pass compaction (default tuning) for one element type: every
/// `_into` form at flag densities 0, ½, 1 and built-in predicates keeping
/// none, half and all (partial tile, look-back over 17 tiles), a custom
/// predicate, the owned forms and counts, and unaligned views (one element
/// in: the scalar load paths of the select and count kernels).
fn compact_single_pass_cases<T: Element>(gpu: &Gpu) {
    let algorithm = CompactAlgorithm::SinglePass;
    let n = COMPACT_LEN;
    let host = compact_values::<T>(n + 1, &format!("single pass {}", T::SUFFIX));
    let data = DeviceBuffer::from_host(gpu, &host).expect("compaction input upload");
    let aligned = data.slice(..n).expect("the first n elements");
    let mut predicates = density_predicates::<T>();
    predicates.push(("custom", custom_between::<T>()));
    compact_into_cases(
        gpu,
        algorithm,
        &host[..n],
        aligned,
        &[0.0, 0.5, 1.0],
        &predicates,
    );
    compact_owned_cases(gpu, algorithm, &host[..n], aligned);

    // One element in: 16-byte loads are off for the items and the flags.
    let unaligned_host = &host[1..];
    let unaligned = data.slice(1..).expect("the last n elements");
    let label = format!("{} {algorithm} unaligned n={n}", T::SUFFIX);
    let what = format!("select_flagged_into {label}");
    let flags = random_flags(n + 1, seed_for(&what), 0.5);
    let expected =
        compact::cpu::select_flagged(unaligned_host, &flags[1..]).expect("flags match the input");
    let device_flags = DeviceBuffer::from_host(gpu, &flags).expect("flags upload");
    let unaligned_flags = device_flags.slice(1..).expect("the last n flags");
    check_select_into(gpu, n + OUTPUT_SLACK, &expected, &what, |output, count| {
        compact::select_flagged_into(gpu, unaligned, unaligned_flags, output, count, algorithm)
    });
    let half = keeps_half::<T>();
    let what = format!("partition_into {label}");
    let (expected, expected_count) = compact::cpu::partition(unaligned_host, &half);
    check_partition_into(gpu, &expected, expected_count, &what, |output, count| {
        compact::partition_into(gpu, unaligned, &half, output, count, algorithm)
    });
    let what = format!("count_if_into {label}");
    check_count_into(
        gpu,
        compact::cpu::count_if(unaligned_host, &half),
        &what,
        |counter| compact::count_if_into(gpu, unaligned, &half, counter),
    );
}

/// `SinglePass` at its default tunings (one module each for i32 and f64;
/// u64's is covered by the tuned candidates): see
/// [`compact_single_pass_cases`].
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_compact_single_pass() {
    let gpu = gpu();
    compact_single_pass_cases::<i32>(gpu);
    compact_single_pass_cases::<f64>(gpu);
}

/// `ThreePass` with every scan algorithm it accepts (map, the scan of the
/// u32 marks, scatter), for i32 and f64: `select_flagged_into`,
/// `select_if_into` and `partition_into` with a built-in and a custom
/// predicate; the owned forms once (with reduce-then-scan).
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_compact_three_pass() {
    let gpu = gpu();
    three_pass_cases::<i32>(gpu);
    three_pass_cases::<f64>(gpu);
}

fn three_pass_cases<T: Element>(gpu: &Gpu) {
    let n = THREE_PASS_LEN;
    let host = compact_values::<T>(n, &format!("three pass {}", T::SUFFIX));
    let data = DeviceBuffer::from_host(gpu, &host).expect("compaction input upload");
    let predicates = [
        ("keeps half", keeps_half::<T>()),
        ("custom", custom_between::<T>()),
    ];
    let three_pass: Vec<CompactAlgorithm> = CompactAlgorithm::all()
        .into_iter()
        .filter(|algorithm| matches!(algorithm, CompactAlgorithm::ThreePass { .. }))
        .collect();
    assert!(
        !three_pass.is_empty(),
        "CompactAlgorithm::all has ThreePass"
    );
    for algorithm in three_pass {
        compact_into_cases(gpu, algorithm, &host, data.view(), &[0.5], &predicates);
    }
    let owned = CompactAlgorithm::ThreePass {
        scan: ScanAlgorithm::ReduceThenScan,
    };
    compact_owned_cases(gpu, owned, &host, data.view());
}

/// Every single-pass tuning candidate the tuning sweep can choose from, for
/// 4-byte (i32) and 8-byte (u64) items, through all three tuned entry
/// points, at 3 tiles, a warp segment and 5 items (a partial tile with a
/// partial segment), plus a select from an unaligned view.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_compact_tuned_candidates() {
    let gpu = gpu();
    tuned_candidate_cases::<i32>(gpu);
    tuned_candidate_cases::<u64>(gpu);
}

fn tuned_candidate_cases<T: Element>(gpu: &Gpu) {
    let candidates = compact::policy::candidates(T::BYTES);
    assert!(!candidates.is_empty(), "{}-byte candidates", T::BYTES);
    for tuning in candidates {
        let tile = tuning.tile_items() as usize;
        let segment = 32 * tuning.items_per_thread() as usize;
        let n = 3 * tile + segment + 5;
        let label = format!("{} tuned {} n={n}", T::SUFFIX, tuning.name());
        let host = compact_values::<T>(n + 1, &label);
        let data = DeviceBuffer::from_host(gpu, &host).expect("compaction input upload");
        let input = data.slice(..n).expect("the first n elements");
        let host_input = &host[..n];

        for entry in TunedEntry::ALL {
            check_tuned_entry(gpu, entry, tuning, input, host_input, &label);
        }
        let unaligned = data.slice(1..).expect("the last n elements");
        let label = format!("unaligned {label}");
        check_tuned_entry(
            gpu,
            TunedEntry::SelectIf,
            tuning,
            unaligned,
            &host[1..],
            &label,
        );
    }
}

/// The single-pass compaction entry points a tuned case runs.
#[derive(Clone, Copy)]
enum TunedEntry {
    SelectFlagged,
    SelectIf,
    Partition,
}

impl TunedEntry {
    const ALL: [TunedEntry; 3] = [
        TunedEntry::SelectFlagged,
        TunedEntry::SelectIf,
        TunedEntry::Partition,
    ];
}

/// Runs `entry` with `tuning` on `input` (the device copy of `host`):
/// select by random flags, or select or partition by [`keeps_half`], into
/// poisoned outputs; checks them against the CPU reference. The case is
/// named `{entry}_tuned {label}`, which also seeds the flags.
fn check_tuned_entry<T: Element>(
    gpu: &Gpu,
    entry: TunedEntry,
    tuning: &compact::policy::Policy,
    input: DeviceView<'_, T>,
    host: &[T],
    label: &str,
) {
    let n = host.len();
    let half = keeps_half::<T>();
    let options = CompactOptions::single_pass(*tuning);
    match entry {
        TunedEntry::SelectFlagged => {
            let what = format!("select_flagged_into_tuned {label}");
            let flags = random_flags(n, seed_for(&what), 0.5);
            let expected =
                compact::cpu::select_flagged(host, &flags).expect("flags match the input");
            let device_flags = DeviceBuffer::from_host(gpu, &flags).expect("flags upload");
            check_select_into(gpu, n + OUTPUT_SLACK, &expected, &what, |output, count| {
                compact::select_flagged_into(
                    gpu,
                    input,
                    device_flags.view(),
                    output,
                    count,
                    options,
                )
            });
        }
        TunedEntry::SelectIf => {
            let what = format!("select_if_into_tuned {label}");
            let expected = compact::cpu::select_if(host, &half);
            check_select_into(gpu, n + OUTPUT_SLACK, &expected, &what, |output, count| {
                compact::select_if_into(gpu, input, &half, output, count, options)
            });
        }
        TunedEntry::Partition => {
            let what = format!("partition_into_tuned {label}");
            let (expected, expected_count) = compact::cpu::partition(host, &half);
            check_partition_into(gpu, &expected, expected_count, &what, |output, count| {
                compact::partition_into(gpu, input, &half, output, count, options)
            });
        }
    }
}

/// Tiles of a many-tile tuned run: the single-pass look-back delays (and
/// the growing back-off of `spin_ns = 0`) apply from 512 tiles.
const DELAY_TILES: usize = 520;

/// Every single-pass tuning candidate, for i32 and u64, past the tile count
/// from which its look-back delays apply (520 tiles and a partial one); a
/// persistent candidate past the most blocks that can be resident at once
/// (SMs × threads per SM / block threads), so its blocks loop and prefetch.
/// One entry point per candidate, rotating (select by flags, select by
/// predicate, partition): the expensive test of this binary (see the
/// module docs; `--skip many_tiles` leaves it out).
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_compact_tuned_many_tiles() {
    let gpu = gpu();
    tuned_many_tile_cases::<i32>(gpu);
    tuned_many_tile_cases::<u64>(gpu);
}

fn tuned_many_tile_cases<T: Element>(gpu: &Gpu) {
    let info = gpu.info();
    for (index, tuning) in compact::policy::candidates(T::BYTES).iter().enumerate() {
        let tile = tuning.tile_items() as usize;
        let tiles = match tuning.schedule() {
            Schedule::TilePerBlock | Schedule::InBlockOrder => DELAY_TILES,
            Schedule::Persistent => {
                let blocks_per_sm = (info.max_threads_per_sm / tuning.block_threads()).max(1);
                let most_resident = info.sm_count as usize * blocks_per_sm as usize;
                most_resident.max(DELAY_TILES) + 1
            }
        };
        let n = tiles * tile + tile / 3 + 1;
        let label = format!("{} tuned {} n={n}", T::SUFFIX, tuning.name());
        let host = compact_values::<T>(n, &label);
        let data = DeviceBuffer::from_host(gpu, &host).expect("compaction input upload");
        let entry = TunedEntry::ALL[index % 3];
        check_tuned_entry(gpu, entry, tuning, data.view(), &host, &label);
    }
}

// ---------------------------------------------------------------------------
// Transpose.

/// Single elements, a row, a column, a partial 32 × 32 tile in both
/// directions, several full tiles with partial edges, and whole 16-byte
/// rows (the vector kernel of 1- and 2-byte elements) with partial tiles.
const TRANSPOSE_SHAPES: [(usize, usize); 6] =
    [(1, 1), (1, 70), (70, 1), (33, 65), (257, 129), (144, 272)];

/// Every transpose algorithm, and the tuned kernel at every compiled shape
/// in both tile orders, with and without vectors and the tall tile (which
/// the odd shapes take for 2- and 4-byte elements), for 1-, 2-, 4- and
/// 8-byte elements, into a poisoned output.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_transpose_every_algorithm_and_element_size() {
    let gpu = gpu();
    transpose_cases::<u8>(gpu);
    transpose_cases::<u16>(gpu);
    transpose_cases::<f32>(gpu);
    transpose_cases::<u64>(gpu);
}

fn transpose_cases<T: DeviceType>(gpu: &Gpu) {
    for (rows, cols) in TRANSPOSE_SHAPES {
        let label = format!("transpose {} {rows}×{cols}", T::SUFFIX);
        let host = random_bits::<T>(rows * cols, seed_for(&label));
        let expected = linalg::cpu::transpose(&host, rows, cols).expect("a valid shape");
        let input = Matrix::from_host(gpu, rows, cols, &host).expect("matrix upload");
        // Transposes into a poisoned output with `run` and checks it.
        let check = |what: String, run: &dyn Fn(&mut Matrix<T>) -> gpu_core::Result<()>| {
            let mut output =
                Matrix::<T>::poisoned(gpu, cols, rows).expect("poisoned transpose output");
            run(&mut output).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = output.to_host(gpu).expect("transpose download");
            assert_same(&got, &expected, &what);
        };
        for algorithm in TransposeAlgorithm::ALL {
            check(format!("{label} {algorithm}"), &|output| {
                linalg::transpose(gpu, input.view(), output.view_mut(), algorithm)
            });
        }
        for tuning in TransposePolicy::compiled() {
            if tuning == TransposePolicy::DEFAULT {
                continue; // TransposeAlgorithm::Tuned above.
            }
            check(format!("{label} tuned {tuning:?}"), &|output| {
                linalg::transpose_tuned_with(gpu, input.view(), output.view_mut(), &tuning)
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Matvec.

/// Shapes every algorithm runs: a single element, wide and tall (the tuned
/// Aᵀ·x splits 1000 rows into slabs: two passes), and a square-ish one with
/// partial tiles.
const MATVEC_SHAPES: [(usize, usize); 4] = [(1, 1), (37, 1000), (1000, 37), (257, 129)];

/// Shapes for the tuned kernels' other paths: groups of 128 threads per row
/// (shared-memory reduction across warps), rows that do not start 16-byte
/// aligned (peeled heads, scalar Aᵀ·x), and one row of 33,000 columns
/// (A·x split into column chunks, then a second pass).
const MATVEC_TUNED_SHAPES: [(usize, usize); 3] = [(3, 5000), (7, 1027), (1, 33_000)];

/// Shapes for the tuned variants (loads in flight, streaming hint): rows
/// aligned for 16-byte loads (300 columns) and not (37 columns); Aᵀ·x over
/// 300 rows takes three slabs.
const MATVEC_VARIANT_SHAPES: [(usize, usize); 2] = [(37, 300), (300, 37)];

#[derive(Clone, Copy, Debug)]
enum MatvecRun {
    Algorithm(MatvecAlgorithm),
    Tuned(MatvecPolicy),
}

/// `y = A·x` or `Aᵀ·x` for a `rows × cols` matrix of whole numbers in
/// -8 … 8 (at most 33,000 terms: every sum exact), with A, x and y starting
/// `offset` elements into their buffers, y poisoned with a guard element
/// after it; checks y and the guards.
fn check_matvec<T: MatvecElement>(
    gpu: &Gpu,
    (rows, cols): (usize, usize),
    op: Transpose,
    run: MatvecRun,
    offset: usize,
) {
    let what = format!(
        "matvec {} {rows}×{cols} {} {run:?} offset {offset}",
        T::SUFFIX,
        op.name()
    );
    let x_len = op.input_len(rows, cols);
    let y_len = op.output_len(rows, cols);
    let mut host_a = vec![T::zero(); offset];
    host_a.extend(small_values::<T>(rows * cols, seed_for(&what), 8.0));
    let mut host_x = vec![T::zero(); offset];
    host_x.extend(small_values::<T>(
        x_len,
        seed_for(&format!("{what} x")),
        8.0,
    ));
    let expected = linalg::cpu::matvec(&host_a[offset..], rows, cols, &host_x[offset..], op)
        .expect("a valid matvec shape");
    let a_buffer = DeviceBuffer::from_host(gpu, &host_a).expect("matrix upload");
    let x_buffer = DeviceBuffer::from_host(gpu, &host_x).expect("vector upload");
    let mut y_buffer =
        DeviceBuffer::<T>::poisoned(gpu, offset + y_len + 1).expect("poisoned matvec output");
    let a = MatrixView::new(
        rows,
        cols,
        a_buffer.slice(offset..).expect("matrix from the offset"),
    )
    .expect("a matrix view of rows × cols elements");
    let x = x_buffer.slice(offset..).expect("x from the offset");
    let y = y_buffer
        .slice_mut(offset..offset + y_len)
        .expect("y from the offset");
    match run {
        MatvecRun::Algorithm(algorithm) => linalg::matvec(gpu, a, x, y, op, algorithm),
        MatvecRun::Tuned(tuning) => linalg::matvec_tuned_with(gpu, a, x, y, op, &tuning),
    }
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = y_buffer.to_host(gpu).expect("matvec output download");
    assert_same(&got[offset..offset + y_len], &expected, &what);
    assert_poisoned(&got[..offset], &format!("{what}: guard before"));
    assert_poisoned(&got[offset + y_len..], &format!("{what}: guard after"));
}

/// Every matvec algorithm (Global, SharedTiled with tiles of 7 and 256
/// threads, Tuned) in both directions for f32, f64 and i32; the tuned
/// kernels' chunked, cross-warp and unaligned paths and views one element
/// into their buffers; and every compiled tuned variant (4 or 8 loads in
/// flight, with or without the streaming hint) through `matvec_tuned_with`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_matvec_every_algorithm() {
    let gpu = gpu();
    matvec_cases::<f32>(gpu);
    matvec_cases::<f64>(gpu);
    matvec_cases::<i32>(gpu);
}

fn matvec_cases<T: MatvecElement>(gpu: &Gpu) {
    let algorithms = [
        MatvecAlgorithm::Global,
        MatvecAlgorithm::SharedTiled { tile: 7 },
        MatvecAlgorithm::SharedTiled {
            tile: MatvecAlgorithm::DEFAULT_TILE,
        },
        MatvecAlgorithm::Tuned,
    ];
    let default = MatvecPolicy::DEFAULT;
    let variants: Vec<MatvecPolicy> = [(4, false), (4, true), (8, false), (8, true)]
        .into_iter()
        .map(|(loads, streaming)| MatvecPolicy {
            n_loads: loads,
            t_loads: loads,
            streaming,
            ..default
        })
        .filter(|variant| *variant != default)
        .collect();
    for op in [Transpose::No, Transpose::Yes] {
        for shape in MATVEC_SHAPES {
            for algorithm in algorithms {
                check_matvec::<T>(gpu, shape, op, MatvecRun::Algorithm(algorithm), 0);
            }
        }
        let tuned = MatvecRun::Algorithm(MatvecAlgorithm::Tuned);
        for shape in MATVEC_TUNED_SHAPES {
            check_matvec::<T>(gpu, shape, op, tuned, 0);
        }
        check_matvec::<T>(gpu, MATVEC_VARIANT_SHAPES[0], op, tuned, 1);
        for &variant in &variants {
            for shape in MATVEC_VARIANT_SHAPES {
                check_matvec::<T>(gpu, shape, op, MatvecRun::Tuned(variant), 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Conv2d.

/// A matrix on the host and its copy on the device.
struct Uploaded<T: DeviceType> {
    host: Vec<T>,
    device: Matrix<T>,
}

impl<T: DeviceType> Uploaded<T> {
    fn new(gpu: &Gpu, rows: usize, cols: usize, host: Vec<T>) -> Self {
        let device = Matrix::from_host(gpu, rows, cols, &host).expect("matrix upload");
        Uploaded { host, device }
    }
}

/// An image of whole numbers in -4 … 4 (with K ≤ 9 every output sums at
/// most 81 products of at most 16: exact).
fn conv_image<T: ConvElement>(gpu: &Gpu, h: usize, w: usize, label: &str) -> Uploaded<T> {
    Uploaded::new(gpu, h, w, small_values::<T>(h * w, seed_for(label), 4.0))
}

/// A `k × k` filter of whole numbers in -4 … 4.
fn conv_filter<T: ConvElement>(gpu: &Gpu, k: usize, label: &str) -> Uploaded<T> {
    let label = format!("{label} filter K={k}");
    Uploaded::new(gpu, k, k, small_values::<T>(k * k, seed_for(&label), 4.0))
}

/// Valid (which reads no padding), then Same and Full with every padding.
fn border_cases() -> Vec<(Border, Padding)> {
    let mut cases = vec![(Border::Valid, Padding::Zero)];
    for border in [Border::Same, Border::Full] {
        for padding in Padding::ALL {
            cases.push((border, padding));
        }
    }
    cases
}

/// Convolves into a poisoned output (with `tuning` when given, else the
/// table's) and checks every element against `conv_cpu::conv2d`.
fn check_conv<T: ConvElement>(
    gpu: &Gpu,
    image: &Uploaded<T>,
    filter: &Uploaded<T>,
    options: &ConvOptions,
    tuning: Option<(&str, &ConvPolicy)>,
) {
    let (h, w) = image.device.shape();
    let k = filter.device.rows();
    let what = format!(
        "conv2d {} {h}×{w} K={k} {options:?} tuning {}",
        T::SUFFIX,
        tuning.map_or("of the table", |(name, _)| name)
    );
    let expected = linalg::conv_cpu::conv2d(&image.host, h, w, &filter.host, k, options)
        .unwrap_or_else(|e| panic!("{what}: CPU reference: {e}"));
    let (out_rows, out_cols) = linalg::conv::output_shape(h, w, k, options.border)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut output = Matrix::<T>::poisoned(gpu, out_rows, out_cols).expect("poisoned conv output");
    let (image_view, filter_view) = (image.device.view(), filter.device.view());
    match tuning {
        None => linalg::conv2d(gpu, image_view, filter_view, output.view_mut(), options),
        Some((_, tuning)) => linalg::conv::conv2d_tuned_with(
            gpu,
            image_view,
            filter_view,
            output.view_mut(),
            options,
            tuning,
        ),
    }
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = output.to_host(gpu).expect("conv output download");
    assert_same(&got, &expected, &what);
}

/// The architecture whose measured `TiledHalo` table the cases start from
/// (the table is the same on every architecture today).
const MEASURED_ARCH: (u32, u32) = (9, 0);

/// The f32 `TiledHalo` tuning without strips: the block kernel for
/// K ≤ 7, which the table's f32 tuning sends to the strip kernel.
fn f32_block_kernel_tuning() -> ConvPolicy {
    ConvPolicy {
        strip: None,
        strip_wide: None,
        ..ConvPolicy::default_for::<f32>(MEASURED_ARCH)
    }
}

/// Filter sides for an algorithm: every compile-time K of `TiledHalo`
/// (1 … 7) and the run-time-K kernel (9); for the direct kernels (K is a
/// run-time argument) 1 and an even 4 (whose `Same` anchor depends on
/// `flip`).
fn conv_filter_sides(algorithm: ConvAlgorithm) -> &'static [usize] {
    match algorithm {
        ConvAlgorithm::TiledHalo => &[1, 2, 3, 4, 5, 6, 7, 9],
        _ => &[1, 4],
    }
}

/// For one element type on a 37 × 53 image: every algorithm × filter side ×
/// border and padding, `flip` alternating so each border and padding meets
/// both; then a 3 × 2 image under a 7 × 7 filter (padding reaching past
/// the image on every side) with Same and Full and every padding.
fn conv_border_cases<T: ConvElement>(gpu: &Gpu, tuning: Option<(&str, &ConvPolicy)>) {
    let algorithms: &[ConvAlgorithm] = match tuning {
        None => &ConvAlgorithm::ALL,
        Some(_) => &[ConvAlgorithm::TiledHalo],
    };
    let label = format!("conv borders {}", T::SUFFIX);
    let image = conv_image::<T>(gpu, 37, 53, &label);
    let small_image = conv_image::<T>(gpu, 3, 2, &format!("{label} small image"));
    let wide_filter = conv_filter::<T>(gpu, 7, &label);
    for &algorithm in algorithms {
        for &k in conv_filter_sides(algorithm) {
            if tuning.is_some() && k > STRIP_MAX_K {
                continue; // Past the strips: the table's block kernel, run above.
            }
            let filter = conv_filter::<T>(gpu, k, &label);
            for (index, case) in border_cases().into_iter().enumerate() {
                let flip = (index + k) % 2 == 1;
                let options = conv_options(algorithm, case, flip, linalg::conv::DEFAULT_BLOCK);
                check_conv(gpu, &image, &filter, &options, tuning);
            }
        }
        for (index, case) in border_cases().into_iter().enumerate().skip(1) {
            let options =
                conv_options(algorithm, case, index % 2 == 0, linalg::conv::DEFAULT_BLOCK);
            check_conv(gpu, &small_image, &wide_filter, &options, tuning);
        }
    }
}

/// Every conv algorithm, every border (Valid, Same, Full) and padding
/// (Zero, Clamp, Reflect, Wrap), flip on and off, K = 1 … 7 and 9 for
/// `TiledHalo` (every compile-time entry, the strip kernels of the f32
/// table, and the run-time-K kernel) and K = 1, 4 for the direct kernels,
/// for f32, i32 and f64, and the f32 block kernel for K ≤ 7 (through a
/// tuning without strips); plus a filter larger than the image.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_conv2d_every_border_padding_and_k() {
    let gpu = gpu();
    conv_border_cases::<f32>(gpu, None);
    conv_border_cases::<i32>(gpu, None);
    conv_border_cases::<f64>(gpu, None);
    let block_kernel = f32_block_kernel_tuning();
    conv_border_cases::<f32>(gpu, Some(("f32 block kernel", &block_kernel)));
}

/// Every selectable block shape (8 × 8, 16 × 16, 32 × 32 and the default
/// 32 × 8) for every algorithm and type on a 130 × 70 image: K = 5, Same,
/// Reflect, flipped; `TiledHalo` also K = 9, Full, Wrap (the run-time-K
/// block kernel) and, for f32, the block kernel at K = 5.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_conv2d_block_sizes() {
    let gpu = gpu();
    conv_block_cases::<f32>(gpu);
    conv_block_cases::<i32>(gpu);
    conv_block_cases::<f64>(gpu);
}

fn conv_block_cases<T: ConvElement>(gpu: &Gpu) {
    let label = format!("conv blocks {}", T::SUFFIX);
    let image = conv_image::<T>(gpu, 130, 70, &label);
    let filter5 = conv_filter::<T>(gpu, 5, &label);
    let filter9 = conv_filter::<T>(gpu, 9, &label);
    let block_kernel = f32_block_kernel_tuning();
    for block in CONV_BLOCKS {
        for algorithm in ConvAlgorithm::ALL {
            let options = conv_options(algorithm, (Border::Same, Padding::Reflect), true, block);
            check_conv(gpu, &image, &filter5, &options, None);
        }
        let tiled = ConvAlgorithm::TiledHalo;
        let options = conv_options(tiled, (Border::Full, Padding::Wrap), false, block);
        check_conv(gpu, &image, &filter9, &options, None);
        if T::SUFFIX == "f32" {
            let options = conv_options(tiled, (Border::Same, Padding::Clamp), false, block);
            check_conv(
                gpu,
                &image,
                &filter5,
                &options,
                Some(("f32 block kernel", &block_kernel)),
            );
        }
    }
}

/// Every strip tuning the conv tuning sweep compares (`STRIP_CANDIDATES`),
/// through `conv2d_tuned_with` on f32: K = 3 and 5 Valid and K = 5 Same
/// with Reflect, flipped, on a 40 × 128 image (rows aligned for vector
/// loads) and a 37 × 53 one (not aligned).
#[test]
#[ignore = "needs a CUDA GPU"]
fn sanitizer_conv2d_strip_candidates() {
    let gpu = gpu();
    let label = "conv strips f32";
    let images = [
        conv_image::<f32>(gpu, 40, 128, label),
        conv_image::<f32>(gpu, 37, 53, label),
    ];
    let filter3 = conv_filter::<f32>(gpu, 3, label);
    let filter5 = conv_filter::<f32>(gpu, 5, label);
    let tiled = ConvAlgorithm::TiledHalo;
    let block = linalg::conv::DEFAULT_BLOCK;
    let valid = conv_options(tiled, (Border::Valid, Padding::Zero), false, block);
    let same = conv_options(tiled, (Border::Same, Padding::Reflect), true, block);
    for (index, candidate) in STRIP_CANDIDATES.into_iter().enumerate() {
        let tuning = ConvPolicy {
            strip: Some(candidate),
            strip_wide: None,
            ..ConvPolicy::default_for::<f32>(MEASURED_ARCH)
        };
        let name = format!("strip candidate {index} {candidate:?}");
        for image in &images {
            check_conv(gpu, image, &filter3, &valid, Some((&name, &tuning)));
            check_conv(gpu, image, &filter5, &valid, Some((&name, &tuning)));
            check_conv(gpu, image, &filter5, &same, Some((&name, &tuning)));
        }
    }
}
