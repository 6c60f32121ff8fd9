//! Reliability: bad input never panics, is a typed error, and writes nothing.
//!
//! GPU proptests (one per crate) draw random, mostly invalid arguments for
//! every public operation of `scan`, `compact` and `linalg`: lengths that
//! disagree, shapes that do not fit, filter sides 1 … 33 and non-square
//! filters, bad block sizes and tiles, bad tunings, every algorithm,
//! custom operators and predicates whose CUDA does not compile. For each
//! call (run under `catch_unwind`):
//!
//! - it must not panic;
//! - if the host-side validation function (`scan::validate`,
//!   `compact::validate::validate_*`, `linalg::check_*` / `validate_conv`) refuses the
//!   arguments, the call must return an error of the **same variant**; a
//!   custom operator or predicate that does not compile must give
//!   `Error::Compile`; otherwise the call must succeed;
//! - an error is never a raw driver, NVRTC-loader or missing-entry error
//!   (those would mean validation let something through to the device);
//! - on error, every output buffer (poisoned before the call) is
//!   downloaded and must still hold its poison (for an in-place scan: the
//!   input);
//! - on success, the result equals the CPU reference (inputs are small whole
//!   numbers, so float results are exact);
//! - afterwards the stream synchronises without error (no sticky fault).
//!
//! CPU proptests (run in CI) drive the pure validation functions with
//! arbitrary values, including `usize::MAX`-sized lengths and shapes: they
//! never panic, and agree with a straightforward statement of each rule.
//!
//! Buffers that overlap cannot be built from safe views, so overlap is
//! covered through the pure address checks (`scan::check_aliasing`,
//! `compact::validate::validate_disjoint` and the `_into` validators) here, on the CPU.
//!
//! Case counts come from proptest's default configuration, so
//! `PROPTEST_CASES` sets them (the sanitizer script uses 4).

use compact::{CompactAlgorithm, CustomPredicate, Predicate};
use gpu_core::{CustomOp, DeviceBuffer, DeviceType, Error, Gpu, Operator, Sum};
use linalg::policy::{MatvecPolicy, TransposePolicy, TUNABLE_SHAPES};
use linalg::{
    Border, ConvAlgorithm, ConvOptions, Matrix, MatrixView, MatrixViewMut, MatvecAlgorithm,
    Padding, Transpose, TransposeAlgorithm,
};
use proptest::prelude::*;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod support;
use support::gpu;

// ---------------------------------------------------------------------------
// Shared checks.

/// Same enum variant.
fn same_variant(a: &Error, b: &Error) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// An error a caller can act on: not a raw driver or loader failure.
fn is_typed(e: &Error) -> bool {
    matches!(
        e,
        Error::InvalidArgument { .. }
            | Error::LengthMismatch { .. }
            | Error::Shape(_)
            | Error::OutOfBounds { .. }
            | Error::Unsupported(_)
            | Error::Compile { .. }
            | Error::OutOfMemory { .. }
    )
}

/// Runs `call` under `catch_unwind`; a panic fails the case.
fn no_panic<R>(what: &str, call: impl FnOnce() -> R) -> Result<R, TestCaseError> {
    catch_unwind(AssertUnwindSafe(call))
        .map_err(|_| TestCaseError::fail(format!("{what}: panicked")))
}

/// The outcome rules shared by every operation: `prediction` is what the
/// pure validation says (`Some(error)` = refused), `compiles` whether the
/// custom code is valid CUDA.
fn check_outcome<R>(
    what: &str,
    result: &gpu_core::Result<R>,
    prediction: &Option<Error>,
    compiles: bool,
) -> Result<(), TestCaseError> {
    match (result, prediction) {
        (Err(e), _) if !is_typed(e) => {
            Err(TestCaseError::fail(format!("{what}: untyped error {e:?}")))
        }
        (Err(e), Some(expected)) => {
            prop_assert!(
                same_variant(e, expected),
                "{what}: got {e:?}, validation says {expected:?}"
            );
            Ok(())
        }
        (Err(e), None) => {
            prop_assert!(
                !compiles && matches!(e, Error::Compile { .. }),
                "{what}: valid arguments refused: {e:?}"
            );
            Ok(())
        }
        (Ok(_), Some(expected)) => Err(TestCaseError::fail(format!(
            "{what}: accepted, validation says {expected:?}"
        ))),
        // Accepted: the caller compares the result with the CPU. (Custom
        // code that does not compile can still succeed when the call has
        // nothing to launch, e.g. n = 0, or one element and a copy.)
        (Ok(_), None) => Ok(()),
    }
}

fn all_poison<T: DeviceType>(buffer: &DeviceBuffer<T>) -> bool {
    let host = buffer.to_host(gpu()).expect("download");
    host.iter()
        .all(|x| bytemuck::bytes_of(x) == bytemuck::bytes_of(&T::poison()))
}

fn stream_is_healthy(what: &str) -> Result<(), TestCaseError> {
    gpu()
        .synchronize()
        .map_err(|e| TestCaseError::fail(format!("{what}: stream fault afterwards: {e}")))
}

/// Lengths biased to edges and small sizes.
fn len() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=3, 30usize..=34, 1020usize..=1030, 0usize..5000]
}

/// Another length: usually `n`, else off by a little or anything.
fn other_len(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => Just(n),
        1 => (0usize..3).prop_map(move |d| n + d),
        1 => (1usize..3).prop_map(move |d| n.saturating_sub(d)),
        1 => len(),
    ]
}

/// Small whole numbers as `T`.
fn host_values<T: gpu_core::Element>(n: usize, salt: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_f64((((i * 37 + salt * 11) % 17) as f64) - 8.0))
        .collect()
}

/// CUDA operator bodies that do not compile.
const BAD_CUDA: [&str; 4] = [
    "a +* b",
    "undefined_function(a, b)",
    "a + b; } struct broken {",
    "(a + )",
];

// ---------------------------------------------------------------------------
// scan

#[derive(Clone, Debug)]
enum ScanOp {
    Sum,
    Custom(usize),
    Broken(usize),
}

fn scan_options() -> impl Strategy<Value = ScanOptions> {
    let block = prop_oneof![
        Just(None),
        prop::sample::select(vec![
            0u32,
            1,
            16,
            31,
            32,
            33,
            64,
            96,
            100,
            256,
            480,
            512,
            1000,
            1024,
            1025,
            2048,
            u32::MAX
        ])
        .prop_map(Some),
    ];
    (prop::sample::select(ScanAlgorithm::ALL.to_vec()), block).prop_map(|(algorithm, block)| {
        let mut options = ScanOptions::new(algorithm);
        options.block_threads = block;
        options
    })
}

fn scan_op() -> impl Strategy<Value = ScanOp> {
    prop_oneof![
        6 => Just(ScanOp::Sum),
        1 => (0usize..2).prop_map(ScanOp::Custom),
        1 => (0usize..BAD_CUDA.len()).prop_map(ScanOp::Broken),
    ]
}

fn scan_case<O: Operator<i32>>(
    entry: usize,
    n: usize,
    out_len: usize,
    op: &O,
    kind: ScanKind<i32>,
    options: &ScanOptions,
    compiles: bool,
) -> Result<(), TestCaseError> {
    let gpu = gpu();
    let host = host_values::<i32>(n, out_len);
    let input = DeviceBuffer::from_host(gpu, &host).expect("upload");
    let what = format!(
        "scan entry {entry} n={n} out={out_len} op={} {kind:?} {options:?}",
        op.name()
    );
    let expected = scan::cpu::scan(&host, op, kind);
    match entry {
        0 | 3 | 4 => {
            // scan / inclusive / exclusive: new buffers.
            let (kind, options) = match entry {
                3 => (ScanKind::Inclusive, ScanOptions::default()),
                4 => (
                    ScanKind::Exclusive {
                        initial: op.identity(),
                    },
                    ScanOptions::default(),
                ),
                _ => (kind, *options),
            };
            let expected = scan::cpu::scan(&host, op, kind);
            let prediction = scan::validate(n, n, &options).err();
            let result = no_panic(&what, || match entry {
                3 => scan::inclusive(gpu, input.view(), op),
                4 => scan::exclusive(gpu, input.view(), op),
                _ => scan::scan(gpu, input.view(), op, kind, &options),
            })?;
            check_outcome(&what, &result, &prediction, compiles)?;
            if let Ok(out) = result {
                prop_assert_eq!(out.to_host(gpu).expect("download"), expected, "{}", what);
            }
        }
        1 => {
            let mut out = DeviceBuffer::<i32>::poisoned(gpu, out_len).expect("output");
            let prediction = scan::validate(n, out_len, options).err();
            let result = no_panic(&what, || {
                scan::scan_into(gpu, input.view(), out.view_mut(), op, kind, options)
            })?;
            check_outcome(&what, &result, &prediction, compiles)?;
            if result.is_ok() {
                prop_assert_eq!(out.to_host(gpu).expect("download"), expected, "{}", what);
            } else {
                prop_assert!(all_poison(&out), "{}: output written on error", what);
            }
        }
        _ => {
            let mut data = DeviceBuffer::from_host(gpu, &host).expect("upload");
            let prediction = scan::validate(n, n, options).err();
            let result = no_panic(&what, || {
                scan::scan_in_place(gpu, data.view_mut(), op, kind, options)
            })?;
            check_outcome(&what, &result, &prediction, compiles)?;
            let after = data.to_host(gpu).expect("download");
            if result.is_ok() {
                prop_assert_eq!(after, expected, "{}", what);
            } else {
                prop_assert_eq!(after, host, "{}: data changed on error", what);
            }
        }
    }
    stream_is_healthy(&what)
}

proptest! {
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn reliability_scan_bad_input_is_typed_and_writes_nothing(
        entry in 0usize..5,
        (n, out_len) in len().prop_flat_map(|n| (Just(n), other_len(n))),
        op in scan_op(),
        exclusive in any::<bool>(),
        options in scan_options(),
    ) {
        let kind = if exclusive { ScanKind::Exclusive { initial: 3 } } else { ScanKind::Inclusive };
        match op {
            ScanOp::Sum => scan_case(entry, n, out_len, &Sum, kind, &options, true)?,
            ScanOp::Custom(i) => {
                let op = if i == 0 {
                    // Monoids on every i32 (identity included), so any
                    // combination order gives the CPU's answer.
                    CustomOp::<i32>::new("rel_xor", "(a ^ b)", 0, |a, b| a ^ b)
                } else {
                    CustomOp::<i32>::new("rel_max", "(a > b ? a : b)", i32::MIN, |a, b| a.max(b))
                }.expect("valid custom operator");
                scan_case(entry, n, out_len, &op, kind, &options, true)?
            }
            ScanOp::Broken(i) => {
                let op = CustomOp::<i32>::new(&format!("rel_broken{i}"), BAD_CUDA[i], 0, |a, b| a.wrapping_add(b))
                    .expect("the operator's text is only checked by NVRTC");
                // n = 0 launches nothing, so nothing is compiled: then the
                // call succeeds.
                let compiles = n == 0;
                scan_case(entry, n, out_len, &op, kind, &options, compiles)?
            }
        }
    }
}

// ---------------------------------------------------------------------------
// compact

fn compact_algorithm() -> impl Strategy<Value = CompactAlgorithm> {
    prop_oneof![
        Just(CompactAlgorithm::SinglePass),
        prop::sample::select(ScanAlgorithm::ALL.to_vec())
            .prop_map(|scan| CompactAlgorithm::ThreePass { scan }),
    ]
}

fn predicate() -> impl Strategy<Value = (Predicate<i32>, bool)> {
    prop_oneof![
        5 => (-9i32..9, 0usize..9).prop_map(|(v, which)| {
            let p = match which {
                0 => Predicate::NonZero,
                1 => Predicate::Eq(v),
                2 => Predicate::Ne(v),
                3 => Predicate::Lt(v),
                4 => Predicate::Le(v),
                5 => Predicate::Gt(v),
                6 => Predicate::Ge(v),
                7 => Predicate::InRange { low: v, high: v + 4 },
                // An empty (reversed) range: valid, keeps nothing.
                _ => Predicate::InRange { low: v + 4, high: v },
            };
            (p, true)
        }),
        1 => Just((
            Predicate::Custom(
                CustomPredicate::new("rel_odd", "(x & 1) != 0", |x: i32| x & 1 != 0)
                    .expect("valid predicate"),
            ),
            true,
        )),
        1 => (0usize..BAD_CUDA.len()).prop_map(|i| {
            (
                Predicate::Custom(
                    CustomPredicate::new(&format!("rel_broken{i}"), BAD_CUDA[i], |_: i32| true)
                        .expect("the text is only checked by NVRTC"),
                ),
                false,
            )
        }),
    ]
}

#[allow(clippy::too_many_arguments)]
fn compact_case(
    entry: usize,
    n: usize,
    flags_len: usize,
    out_len: usize,
    count_len: usize,
    algorithm: CompactAlgorithm,
    predicate: &Predicate<i32>,
    compiles: bool,
) -> Result<(), TestCaseError> {
    let gpu = gpu();
    let host = host_values::<i32>(n, flags_len);
    let flags: Vec<u8> = (0..flags_len).map(|i| (i % 3) as u8 * 70).collect();
    let input = DeviceBuffer::from_host(gpu, &host).expect("upload");
    let d_flags = DeviceBuffer::from_host(gpu, &flags).expect("upload");
    let mut out = DeviceBuffer::<i32>::poisoned(gpu, out_len).expect("output");
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, count_len).expect("count");
    let what = format!(
        "compact entry {entry} n={n} flags={flags_len} out={out_len} count={count_len} {algorithm} {}",
        predicate.name()
    );
    // Nothing is compiled for an empty input.
    let by_flags_entry = matches!(entry, 0 | 5);
    let compiles = compiles || n == 0 || by_flags_entry;
    let by_flags = matches!(entry, 0 | 5);
    let expected_items = if by_flags {
        compact::cpu::select_flagged(&host, &flags).ok()
    } else {
        Some(compact::cpu::select_if(&host, predicate))
    };
    let (expected_partition, expected_kept) = compact::cpu::partition(&host, predicate);
    // Address checks pass for distinct allocations; the length rules decide.
    let (ip, fp, op, cp) = (
        0x1000_0000u64,
        0x3000_0000u64,
        0x5000_0000u64,
        0x7000_0000u64,
    );
    match entry {
        0..=3 => {
            let prediction = match entry {
                0 => compact::validate::validate_flags(n, flags_len).err(),
                _ => None,
            };
            match entry {
                0 | 1 => {
                    let result = no_panic(&what, || {
                        if entry == 0 {
                            compact::select_flagged(gpu, input.view(), d_flags.view(), algorithm)
                        } else {
                            compact::select_if(gpu, input.view(), predicate, algorithm)
                        }
                    })?;
                    check_outcome(&what, &result, &prediction, compiles)?;
                    if let Ok(kept) = result {
                        let expected = expected_items.expect("valid lengths");
                        prop_assert_eq!(kept.count, expected.len(), "{}", what);
                        prop_assert_eq!(
                            kept.items.to_host(gpu).expect("download"),
                            expected,
                            "{}",
                            what
                        );
                    }
                }
                2 => {
                    let result = no_panic(&what, || {
                        compact::partition(gpu, input.view(), predicate, algorithm)
                    })?;
                    check_outcome(&what, &result, &prediction, compiles)?;
                    if let Ok((parted, kept)) = result {
                        prop_assert_eq!(kept, expected_kept, "{}", what);
                        prop_assert_eq!(
                            parted.to_host(gpu).expect("download"),
                            expected_partition,
                            "{}",
                            what
                        );
                    }
                }
                _ => {
                    let result =
                        no_panic(&what, || compact::count_if(gpu, input.view(), predicate))?;
                    check_outcome(&what, &result, &prediction, compiles)?;
                    if let Ok(kept) = result {
                        prop_assert_eq!(kept, expected_kept, "{}", what);
                    }
                }
            }
        }
        _ => {
            let prediction = match entry {
                4 => compact::validate::validate_count_out(count_len).err(),
                5 => compact::validate::validate_select_into(
                    (ip, n, 4),
                    Some((fp, flags_len)),
                    (op, out_len, 4),
                    (cp, count_len),
                )
                .err(),
                6 => compact::validate::validate_select_into(
                    (ip, n, 4),
                    None,
                    (op, out_len, 4),
                    (cp, count_len),
                )
                .err(),
                _ => compact::validate::validate_partition_into(
                    (ip, n, 4),
                    (op, out_len, 4),
                    (cp, count_len),
                )
                .err(),
            };
            let result = no_panic(&what, || match entry {
                4 => compact::count_if_into(gpu, input.view(), predicate, count.view_mut()),
                5 => compact::select_flagged_into(
                    gpu,
                    input.view(),
                    d_flags.view(),
                    out.view_mut(),
                    count.view_mut(),
                    algorithm,
                ),
                6 => compact::select_if_into(
                    gpu,
                    input.view(),
                    predicate,
                    out.view_mut(),
                    count.view_mut(),
                    algorithm,
                ),
                _ => compact::partition_into(
                    gpu,
                    input.view(),
                    predicate,
                    out.view_mut(),
                    count.view_mut(),
                    algorithm,
                ),
            })?;
            check_outcome(&what, &result, &prediction, compiles)?;
            if result.is_ok() {
                let got_count = count.to_host(gpu).expect("download")[0] as usize;
                let got = out.to_host(gpu).expect("download");
                match entry {
                    4 => prop_assert_eq!(got_count, expected_kept, "{}", what),
                    7 => {
                        prop_assert_eq!(got_count, expected_kept, "{}", what);
                        prop_assert_eq!(got, expected_partition, "{}", what);
                    }
                    _ => {
                        let expected = expected_items.expect("valid lengths");
                        prop_assert_eq!(got_count, expected.len(), "{}", what);
                        prop_assert_eq!(&got[..got_count], &expected[..], "{}", what);
                        prop_assert!(
                            got[got_count..].iter().all(|&x| x == i32::poison()),
                            "{}: past the count",
                            what
                        );
                    }
                }
            } else {
                prop_assert!(all_poison(&out), "{}: output written on error", what);
                prop_assert!(all_poison(&count), "{}: count written on error", what);
            }
        }
    }
    stream_is_healthy(&what)
}

proptest! {
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn reliability_compact_bad_input_is_typed_and_writes_nothing(
        entry in 0usize..8,
        (n, flags_len, out_len) in len().prop_flat_map(|n| (Just(n), other_len(n), other_len(n))),
        count_len in prop_oneof![4 => Just(1usize), 1 => 0usize..4],
        algorithm in compact_algorithm(),
        (predicate, compiles) in predicate(),
    ) {
        compact_case(entry, n, flags_len, out_len, count_len, algorithm, &predicate, compiles)?;
    }
}

// ---------------------------------------------------------------------------
// linalg

fn side() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..=3, 31usize..=34, 1usize..=70]
}

fn shape_like(rows: usize, cols: usize) -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        3 => Just((rows, cols)),
        1 => (side(), side()),
        1 => Just((rows + 1, cols)),
        1 => Just((rows, cols.saturating_sub(1).max(1))),
    ]
}

fn matvec_algorithm() -> impl Strategy<Value = MatvecAlgorithm> {
    prop_oneof![
        Just(MatvecAlgorithm::Global),
        Just(MatvecAlgorithm::Tuned),
        prop::sample::select(vec![0u32, 1, 7, 32, 256, 1024, 1025, u32::MAX])
            .prop_map(|tile| MatvecAlgorithm::SharedTiled { tile }),
    ]
}

fn matvec_tuning() -> impl Strategy<Value = MatvecPolicy> {
    let base = MatvecPolicy::DEFAULT;
    (
        prop::sample::select(vec![0u64, 1, 4, 16, 1 << 40]),
        prop::sample::select(vec![0u64, 1, 2, 8]),
        prop::sample::select(vec![0u64, 1, 2, 64]),
        prop::sample::select(vec![0u64, 1, 16, u64::MAX]),
        prop::sample::select(vec![base.n_block_threads, 128, 0]),
        prop::sample::select(vec![base.t_block_rows, 4, 0]),
    )
        .prop_map(
            move |(vectors, n_waves, t_waves, min_rows, n_block, t_rows)| {
                // Fields set one by one: fields added to the tuning later keep
                // their tuned values.
                let mut tuning = base;
                tuning.n_block_threads = n_block;
                tuning.n_vectors_per_thread = vectors;
                tuning.n_waves = n_waves;
                tuning.t_block_rows = t_rows;
                tuning.t_waves = t_waves;
                tuning.t_min_rows_per_thread = min_rows;
                tuning
            },
        )
}

fn conv_options() -> impl Strategy<Value = ConvOptions> {
    (
        prop::sample::select(Border::ALL.to_vec()),
        prop::sample::select(Padding::ALL.to_vec()),
        any::<bool>(),
        prop::sample::select(ConvAlgorithm::ALL.to_vec()),
        prop::sample::select(vec![
            (8u32, 8u32),
            (16, 16),
            (32, 32),
            (32, 8),
            (0, 0),
            (64, 64),
            (16, 8),
            (1024, 2),
        ]),
    )
        .prop_map(|(border, padding, flip, algorithm, block)| {
            support::conv_options(algorithm, (border, padding), flip, block)
        })
}

#[derive(Clone, Debug)]
struct LinalgCase {
    entry: usize,
    rows: usize,
    cols: usize,
    x_len: usize,
    y_len: usize,
    out_shape: (usize, usize),
    op: Transpose,
    matvec_algorithm: MatvecAlgorithm,
    matvec_tuning: MatvecPolicy,
    transpose_algorithm: TransposeAlgorithm,
    transpose_tuning: TransposePolicy,
    filter: (usize, usize),
    conv: ConvOptions,
}

fn linalg_case() -> impl Strategy<Value = LinalgCase> {
    (side(), side(), 0usize..8, any::<bool>()).prop_flat_map(|(rows, cols, entry, transposed)| {
        let op = if transposed {
            Transpose::Yes
        } else {
            Transpose::No
        };
        let k = prop_oneof![1usize..=7, 1usize..=33];
        (
            other_len(op.input_len(rows, cols)),
            other_len(op.output_len(rows, cols)),
            shape_like(cols, rows),
            matvec_algorithm(),
            matvec_tuning(),
            prop::sample::select(TransposeAlgorithm::ALL.to_vec()),
            (
                prop::sample::select(vec![32u32, 16, 0, 64]),
                prop::sample::select(vec![4u32, 8, 16, 3, 0, 32]),
            ),
            (k, prop_oneof![3 => Just(0usize), 1 => 1usize..3]),
            conv_options(),
        )
            .prop_map(
                move |(
                    x_len,
                    y_len,
                    out_shape,
                    ma,
                    mt,
                    ta,
                    (tile, block_rows),
                    (k, skew),
                    conv,
                )| LinalgCase {
                    entry,
                    rows,
                    cols,
                    x_len,
                    y_len,
                    out_shape,
                    op,
                    matvec_algorithm: ma,
                    matvec_tuning: mt,
                    transpose_algorithm: ta,
                    transpose_tuning: {
                        let mut tuning = TransposePolicy::DEFAULT;
                        tuning.tile = tile;
                        tuning.block_rows = block_rows;
                        tuning
                    },
                    filter: (k, k + skew),
                    conv,
                },
            )
    })
}

fn linalg_case_run(case: &LinalgCase) -> Result<(), TestCaseError> {
    let gpu = gpu();
    let (rows, cols) = (case.rows, case.cols);
    let what = format!("{case:?}");
    let host_a = host_values::<f32>(rows * cols, 1);
    let a = Matrix::from_host(gpu, rows, cols, &host_a).expect("matrix");
    match case.entry {
        0..=2 => {
            let host_x = host_values::<f32>(case.x_len, 2);
            let x = DeviceBuffer::from_host(gpu, &host_x).expect("x");
            let mut y = DeviceBuffer::<f32>::poisoned(gpu, case.y_len).expect("y");
            let lengths = linalg::check_matvec_lengths(rows, cols, case.x_len, case.y_len, case.op);
            let prediction = match case.entry {
                0 => lengths
                    .and_then(|()| case.matvec_algorithm.validate())
                    .err(),
                // matvec_new sizes y itself.
                1 => linalg::check_matvec_lengths(
                    rows,
                    cols,
                    case.x_len,
                    case.op.output_len(rows, cols),
                    case.op,
                )
                .and_then(|()| case.matvec_algorithm.validate())
                .err(),
                _ => lengths.err(),
            };
            let result = no_panic(&what, || match case.entry {
                0 => linalg::matvec(
                    gpu,
                    a.view(),
                    x.view(),
                    y.view_mut(),
                    case.op,
                    case.matvec_algorithm,
                )
                .map(|()| None),
                1 => linalg::matvec_new(gpu, a.view(), x.view(), case.op, case.matvec_algorithm)
                    .map(Some),
                _ => linalg::matvec_tuned_with(
                    gpu,
                    a.view(),
                    x.view(),
                    y.view_mut(),
                    case.op,
                    &case.matvec_tuning,
                )
                .map(|()| None),
            })?;
            if case.entry == 2 {
                // Tuning rules have no public pure check: any typed error
                // is fine when the lengths are right, nothing written.
                if let Err(e) = &result {
                    prop_assert!(is_typed(e), "{}: untyped {:?}", what, e);
                    if let Some(expected) = &prediction {
                        prop_assert!(
                            same_variant(e, expected),
                            "{}: {:?} vs {:?}",
                            what,
                            e,
                            expected
                        );
                    }
                } else {
                    prop_assert!(prediction.is_none(), "{}: accepted bad lengths", what);
                }
            } else {
                check_outcome(&what, &result, &prediction, true)?;
            }
            match result {
                Ok(new) => {
                    let expected =
                        linalg::cpu::matvec(&host_a, rows, cols, &host_x, case.op).expect("cpu");
                    let got = match new {
                        Some(buffer) => buffer.to_host(gpu).expect("download"),
                        None => y.to_host(gpu).expect("download"),
                    };
                    prop_assert_eq!(got, expected, "{}", what);
                }
                Err(_) => prop_assert!(all_poison(&y), "{}: y written on error", what),
            }
        }
        3..=5 => {
            let (out_rows, out_cols) = case.out_shape;
            let mut out = DeviceBuffer::<f32>::poisoned(gpu, out_rows * out_cols).expect("out");
            let shapes = linalg::check_transpose_shapes((rows, cols), case.out_shape, 4);
            let prediction = match case.entry {
                4 => None,
                5 if !TUNABLE_SHAPES
                    .contains(&(case.transpose_tuning.tile, case.transpose_tuning.block_rows)) =>
                {
                    Some(Error::invalid("tuning", "bad"))
                }
                _ => shapes.err(),
            };
            let result = no_panic(&what, || {
                let view = MatrixViewMut::new(out_rows, out_cols, out.view_mut())?;
                match case.entry {
                    3 => linalg::transpose(gpu, a.view(), view, case.transpose_algorithm)
                        .map(|()| None),
                    4 => linalg::transpose_new(gpu, a.view(), case.transpose_algorithm).map(Some),
                    _ => linalg::transpose_tuned_with(gpu, a.view(), view, &case.transpose_tuning)
                        .map(|()| None),
                }
            })?;
            check_outcome(&what, &result, &prediction, true)?;
            let expected = linalg::cpu::transpose(&host_a, rows, cols).expect("cpu");
            match result {
                Ok(Some(m)) => {
                    prop_assert_eq!(m.to_host(gpu).expect("download"), expected, "{}", what)
                }
                Ok(None) => {
                    prop_assert_eq!(out.to_host(gpu).expect("download"), expected, "{}", what)
                }
                Err(_) => prop_assert!(all_poison(&out), "{}: output written on error", what),
            }
        }
        _ => {
            let (fr, fc) = case.filter;
            let host_f = host_values::<f32>(fr * fc, 3);
            let filter = Matrix::from_host(gpu, fr, fc, &host_f).expect("filter");
            let expected_shape = linalg::conv::output_shape(rows, cols, fr, case.conv.border);
            // conv2d: the test's output shape (the right one half the time).
            let out_shape = match (&expected_shape, case.out_shape.0 % 2) {
                (Ok(shape), 0) => *shape,
                _ => case.out_shape,
            };
            let mut out =
                DeviceBuffer::<f32>::poisoned(gpu, out_shape.0 * out_shape.1).expect("out");
            let prediction = match case.entry {
                6 => linalg::validate_conv::<f32>((rows, cols), (fr, fc), out_shape, &case.conv)
                    .err(),
                _ => match &expected_shape {
                    Ok(shape) => {
                        linalg::validate_conv::<f32>((rows, cols), (fr, fc), *shape, &case.conv)
                            .err()
                    }
                    Err(_) => {
                        linalg::validate_conv::<f32>((rows, cols), (fr, fc), (0, 0), &case.conv)
                            .err()
                    }
                },
            };
            let result = no_panic(&what, || match case.entry {
                6 => {
                    let view = MatrixViewMut::new(out_shape.0, out_shape.1, out.view_mut())?;
                    linalg::conv2d(gpu, a.view(), filter.view(), view, &case.conv).map(|()| None)
                }
                _ => linalg::conv2d_new(gpu, a.view(), filter.view(), &case.conv).map(Some),
            })?;
            // The device's own shared-memory limit may refuse what the
            // portable check allows: Unsupported, also typed.
            let unsupported = matches!(result, Err(Error::Unsupported(_))) && prediction.is_none();
            if !unsupported {
                check_outcome(&what, &result, &prediction, true)?;
            }
            match result {
                Ok(new) => {
                    let expected =
                        linalg::conv_cpu::conv2d(&host_a, rows, cols, &host_f, fr, &case.conv)
                            .expect("cpu");
                    let got = match new {
                        Some(m) => m.to_host(gpu).expect("download"),
                        None => out.to_host(gpu).expect("download"),
                    };
                    prop_assert_eq!(got, expected, "{}", what);
                }
                Err(_) => prop_assert!(all_poison(&out), "{}: output written on error", what),
            }
        }
    }
    stream_is_healthy(&what)
}

proptest! {
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn reliability_linalg_bad_input_is_typed_and_writes_nothing(case in linalg_case()) {
        linalg_case_run(&case)?;
    }
}

// ---------------------------------------------------------------------------
// Views over random ranges.

/// A range bound pair drawn around `len`: inside, reversed, past the end,
/// or at `usize::MAX`.
fn range_around(len: usize) -> impl Strategy<Value = (usize, usize)> {
    let edge = move || {
        prop_oneof![
            4 => 0..=len,
            1 => Just(len + 1),
            1 => Just(usize::MAX),
        ]
    };
    (edge(), edge())
}

proptest! {
    /// Sub-views at any offset (so device pointers are not 16-byte aligned)
    /// work wherever whole buffers do; out-of-range or reversed ranges are
    /// `Error::OutOfBounds`, never a panic.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn reliability_views_over_random_ranges(
        (len, (start, end)) in len().prop_flat_map(|len| (Just(len), range_around(len))),
        out_offset in 0usize..5,
        algorithm in prop::sample::select(ScanAlgorithm::ALL.to_vec()),
        compact_algorithm in compact_algorithm(),
    ) {
        let gpu = gpu();
        let host = host_values::<i32>(len, start);
        let input = DeviceBuffer::from_host(gpu, &host).expect("upload");
        let what = format!("len {len} range {start}..{end} offset {out_offset} {algorithm} {compact_algorithm}");
        let view = no_panic(&what, || input.slice(start..end))?;
        let valid = start <= end && end <= len;
        prop_assert_eq!(view.is_ok(), valid, "{}: {:?}", what, view.as_ref().err());
        let view = match view {
            Ok(view) => view,
            Err(e) => {
                prop_assert!(matches!(e, Error::OutOfBounds { .. }), "{}: {:?}", what, e);
                return Ok(());
            }
        };
        let n = end - start;
        prop_assert_eq!(view.len(), n);
        // Scan into a window of a larger poisoned buffer.
        let mut out = DeviceBuffer::<i32>::poisoned(gpu, n + out_offset + 3).expect("output");
        let result = no_panic(&what, || {
            let window = out.slice_mut(out_offset..out_offset + n)?;
            scan::scan_into(gpu, view, window, &Sum, ScanKind::Inclusive, &ScanOptions::new(algorithm))
        })?;
        prop_assert!(result.is_ok(), "{}: {:?}", what, result);
        let got = out.to_host(gpu).expect("download");
        let expected = scan::cpu::inclusive(&host[start..end], &Sum);
        prop_assert_eq!(&got[out_offset..out_offset + n], &expected[..], "{}", what);
        prop_assert!(got[..out_offset].iter().chain(&got[out_offset + n..]).all(|&x| x == i32::poison()), "{}: wrote outside the window", what);
        // A compaction of the same sub-view into a window.
        let mut kept = DeviceBuffer::<i32>::poisoned(gpu, n + out_offset + 3).expect("output");
        let mut count = DeviceBuffer::<u64>::poisoned(gpu, 3).expect("count");
        let predicate = Predicate::Gt(0);
        let result = no_panic(&what, || {
            let window = kept.slice_mut(out_offset..out_offset + n)?;
            let count_window = count.slice_mut(1..2)?;
            compact::select_if_into(gpu, view, &predicate, window, count_window, compact_algorithm)
        })?;
        prop_assert!(result.is_ok(), "{}: {:?}", what, result);
        let expected = compact::cpu::select_if(&host[start..end], &predicate);
        let counts = count.to_host(gpu).expect("download");
        prop_assert_eq!(counts[1] as usize, expected.len(), "{}", what);
        prop_assert!(counts[0] == u64::poison() && counts[2] == u64::poison(), "{}: count neighbours written", what);
        let got = kept.to_host(gpu).expect("download");
        prop_assert_eq!(&got[out_offset..out_offset + expected.len()], &expected[..], "{}", what);
        prop_assert!(got[..out_offset].iter().chain(&got[out_offset + expected.len()..]).all(|&x| x == i32::poison()), "{}: wrote outside the kept items", what);
    }
}

/// Matrix views refuse data of the wrong length or a zero side.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_matrix_views_refuse_bad_shapes() {
    let gpu = gpu();
    let mut data = DeviceBuffer::<f32>::poisoned(gpu, 12).expect("buffer");
    for (rows, cols) in [(3, 4), (4, 3), (2, 6), (12, 1)] {
        assert!(MatrixView::new(rows, cols, data.view()).is_ok());
    }
    for (rows, cols) in [
        (0, 12),
        (12, 0),
        (5, 3),
        (3, 5),
        (usize::MAX, 2),
        (1 << 62, 8),
    ] {
        let read = MatrixView::new(rows, cols, data.view());
        assert!(
            matches!(
                read,
                Err(Error::Shape(_)) | Err(Error::LengthMismatch { .. })
            ),
            "{rows}×{cols}: {read:?}"
        );
        let write = MatrixViewMut::new(rows, cols, data.view_mut());
        assert!(write.is_err(), "{rows}×{cols}");
    }
    assert!(all_poison(&data));
}

/// A device ordinal that does not exist is `Error::BadOrdinal` (or, on a
/// machine without a driver, `Error::NoDriver`); never a panic. Runs in CI.
#[test]
fn reliability_bad_ordinals_are_typed() {
    match gpu_core::device_count() {
        Ok(count) => {
            for ordinal in [count, count + 1, 1 << 20, usize::MAX] {
                let result = catch_unwind(|| Gpu::new(ordinal)).expect("Gpu::new panicked");
                assert!(
                    matches!(result, Err(Error::BadOrdinal { ordinal: o, count: c }) if o == ordinal && c == count),
                    "ordinal {ordinal}: {result:?}"
                );
            }
        }
        Err(e) => {
            assert!(matches!(e, Error::NoDriver | Error::Driver(_)), "{e:?}");
            let result = catch_unwind(|| Gpu::new(0)).expect("Gpu::new panicked");
            assert!(
                matches!(result, Err(Error::NoDriver) | Err(Error::Driver(_))),
                "{result:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// The pure validation functions (CI).

fn huge() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..100,
        Just(usize::MAX),
        Just(usize::MAX / 2),
        Just(1usize << 32),
        (1usize << 31)..(1usize << 33),
        any::<usize>(),
    ]
}

/// Lengths a device view can have (its byte count fits in the address
/// space), edges included.
fn addressable() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..100,
        (1usize << 31)..(1usize << 33),
        Just(1usize << 56),
        0usize..(1usize << 56),
    ]
}

proptest! {
    #[test]
    fn reliability_scan_validation_never_panics_and_states_its_rules(
        input_len in huge(),
        output_len in huge(),
        options in scan_options(),
    ) {
        let result = no_panic("scan::validate", || scan::validate(input_len, output_len, &options))?;
        let block_ok = match options.block_threads {
            None => true,
            Some(b) => options.algorithm.takes_block_threads()
                && (32..=1024).contains(&b)
                && b % 32 == 0
                && (!options.algorithm.needs_power_of_two_block() || b.is_power_of_two()),
        };
        prop_assert_eq!(result.is_ok(), input_len == output_len && block_ok);
        if input_len != output_len {
            prop_assert!(matches!(result, Err(Error::LengthMismatch { .. })), "{:?}", result);
        }
    }

    #[test]
    fn reliability_scan_aliasing_check_never_panics(
        input_ptr in prop_oneof![2 => 0u64..(1 << 60), 1 => any::<u64>(), 1 => Just(u64::MAX), 1 => 0u64..4096],
        offset in prop_oneof![Just(0i64), -64i64..64, any::<i64>()],
        bytes in prop_oneof![2 => 0u64..256, 2 => 0u64..(1 << 56), 1 => Just(u64::MAX), 1 => any::<u64>()],
    ) {
        let output_ptr = input_ptr.wrapping_add_signed(offset);
        let result = no_panic("scan::check_aliasing", || scan::check_aliasing(input_ptr, output_ptr, bytes))?;
        // The rule is stated for ranges that exist: both end inside the
        // 64-bit address space.
        if input_ptr.checked_add(bytes).is_none() || output_ptr.checked_add(bytes).is_none() {
            return Ok(());
        }
        let same = bytes > 0 && input_ptr == output_ptr;
        let (lo, hi) = (input_ptr.min(output_ptr), input_ptr.max(output_ptr));
        let disjoint = bytes == 0 || hi - lo >= bytes;
        match result {
            Ok(true) => prop_assert!(same),
            Ok(false) => prop_assert!(!same && disjoint, "accepted overlapping ranges"),
            Err(ref e) => {
                prop_assert!(matches!(e, Error::InvalidArgument { .. }), "{:?}", e);
                prop_assert!(!same && !disjoint, "refused disjoint or identical ranges");
            }
        }
    }

    #[test]
    fn reliability_compact_validation_never_panics(
        n in addressable(),
        flags_len in addressable(),
        out_len in addressable(),
        count_len in prop_oneof![0usize..4, addressable()],
        ptrs in prop::array::uniform4(prop_oneof![any::<u64>(), 0u64..1 << 20]),
        element_bytes in prop::sample::select(vec![1usize, 4, 8]),
    ) {
        let [ip, fp, op, cp] = ptrs;
        let select = no_panic("validate_select_into", || {
            compact::validate::validate_select_into((ip, n, element_bytes), Some((fp, flags_len)), (op, out_len, element_bytes), (cp, count_len))
        })?;
        if flags_len != n || out_len < n || count_len != 1 {
            prop_assert!(select.is_err());
        }
        let partition = no_panic("validate_partition_into", || {
            compact::validate::validate_partition_into((ip, n, element_bytes), (op, out_len, element_bytes), (cp, count_len))
        })?;
        if out_len != n || count_len != 1 {
            prop_assert!(partition.is_err());
        }
        for result in [select, partition] {
            if let Err(e) = result {
                prop_assert!(is_typed(&e), "{:?}", e);
            }
        }
        prop_assert_eq!(compact::validate::validate_flags(n, flags_len).is_ok(), n == flags_len);
        prop_assert_eq!(compact::validate::validate_count_out(count_len).is_ok(), count_len == 1);
        prop_assert_eq!(compact::validate::validate_select_output(n, out_len).is_ok(), out_len >= n);
    }

    #[test]
    fn reliability_linalg_validation_never_panics(
        rows in huge(),
        cols in huge(),
        x_len in huge(),
        y_len in huge(),
        out in (huge(), huge()),
        k in prop_oneof![0usize..40, huge()],
        k2 in prop_oneof![0usize..40, huge()],
        options in conv_options(),
        transposed in any::<bool>(),
        elem_bytes in prop_oneof![prop::sample::select(vec![1usize, 2, 4, 8, 16]), huge()],
    ) {
        let op = if transposed { Transpose::Yes } else { Transpose::No };
        let matvec = no_panic("check_matvec_lengths", || linalg::check_matvec_lengths(rows, cols, x_len, y_len, op))?;
        prop_assert_eq!(
            matvec.is_ok(),
            rows > 0 && cols > 0 && x_len == op.input_len(rows, cols) && y_len == op.output_len(rows, cols)
        );
        let transpose = no_panic("check_transpose_shapes", || linalg::check_transpose_shapes((rows, cols), out, elem_bytes))?;
        prop_assert_eq!(
            transpose.is_ok(),
            rows > 0 && cols > 0 && out == (cols, rows) && [1, 2, 4, 8].contains(&elem_bytes)
        );
        let shape = no_panic("check_shape", || linalg::check_shape::<f64>("m", rows, cols))?;
        prop_assert_eq!(
            shape.is_ok(),
            rows > 0 && cols > 0 && rows.checked_mul(cols).and_then(|n| n.checked_mul(8)).is_some()
        );
        let conv = no_panic("validate_conv", || linalg::validate_conv::<f32>((rows, cols), (k, k2), out, &options))?;
        if conv.is_ok() {
            prop_assert!(k == k2 && (1..=31).contains(&k) && linalg::conv::CONV_BLOCKS.contains(&options.block));
            prop_assert_eq!(Some(out), linalg::conv::output_shape(rows, cols, k, options.border).ok());
        }
        let _ = no_panic("output_shape", || linalg::conv::output_shape(rows, cols, k, options.border))?;
        for result in [matvec, transpose, shape.map(|_| ()), conv.map(|_| ())] {
            if let Err(e) = result {
                prop_assert!(is_typed(&e), "{:?}", e);
            }
        }
    }
}
