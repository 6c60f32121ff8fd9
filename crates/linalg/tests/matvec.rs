//! Matvec against the CPU reference: every algorithm × element type ×
//! direction on shapes biased to edges, caller views at unaligned offsets,
//! the Tuned kernels' every row-group width and slab count, determinism,
//! large and > 2^31-element matrices, and bad input leaving outputs
//! untouched.
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; run them with
//! `--include-ignored` on a GPU machine. The validation tests at the end run
//! everywhere.

mod support;

use gpu_core::{DeviceBuffer, DeviceType, Error, Gpu};
use linalg::policy::MatvecPolicy;
use linalg::{
    check_matvec_lengths, cpu, matvec, matvec_new, matvec_tuned_with, Matrix, MatrixView,
    MatvecAlgorithm, MatvecElement, Transpose,
};
use proptest::prelude::*;
use support::{each_type, gpu, gpu_cases, gpu_tests, same_bits, upload_past_2_pow_31};

/// At the quick scale (the sanitizer script, `parprims_testkit::testing`) the
/// edge-shape sweeps run fewer algorithm variants, so each binary fits its
/// time limit.
fn quick() -> bool {
    parprims_testkit::testing::quick_tests()
}

/// Input range: floats in [-1, 1); integers over the whole i32 range, so
/// products and sums wrap.
fn random_input<T: MatvecElement>(len: usize, seed: u64) -> Vec<T> {
    support::random_input(len, seed, (-2_147_483_648.0, 2_147_483_647.0))
}

/// Compares a GPU result with the CPU reference: integers exactly, floats
/// within `(terms + 2)·ε·Σ|a·x|` of the f64 product.
fn assert_matches_cpu<T: MatvecElement>(
    a: &[T],
    (rows, cols): (usize, usize),
    x: &[T],
    op: Transpose,
    got: &[T],
    context: &str,
) {
    if T::IS_FLOAT {
        let (exact, magnitude) = cpu::matvec_f64(a, rows, cols, x, op).unwrap();
        assert_eq!(got.len(), exact.len(), "{context}: length");
        let terms = op.input_len(rows, cols);
        for (i, (&g, (&e, &m))) in got.iter().zip(exact.iter().zip(&magnitude)).enumerate() {
            let tolerance = cpu::matvec_tolerance::<T>(terms, m);
            let error = (g.to_f64() - e).abs();
            assert!(
                error <= tolerance,
                "{context}: y[{i}] = {g}, reference {e}, error {error:e} > tolerance {tolerance:e}"
            );
        }
    } else {
        let expected = cpu::matvec(a, rows, cols, x, op).unwrap();
        if let Some(i) = (0..expected.len()).find(|&i| got[i] != expected[i]) {
            panic!(
                "{context}: y[{i}] = {}, expected {} ({} of {} differ)",
                got[i],
                expected[i],
                (0..expected.len())
                    .filter(|&i| got[i] != expected[i])
                    .count(),
                expected.len()
            );
        }
    }
}

/// Runs one case on fresh buffers (y poisoned first) and checks it.
fn check_case<T: MatvecElement>(
    rows: usize,
    cols: usize,
    op: Transpose,
    algorithm: MatvecAlgorithm,
    seed: u64,
) {
    let gpu = gpu();
    let a_host = random_input::<T>(rows * cols, seed);
    let x_host = random_input::<T>(op.input_len(rows, cols), seed ^ 0x5555);
    let a = Matrix::from_host(gpu, rows, cols, &a_host).unwrap();
    let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
    let mut y = DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).unwrap();
    matvec(gpu, a.view(), x.view(), y.view_mut(), op, algorithm).unwrap();
    let got = y.to_host(gpu).unwrap();
    let context = format!(
        "{} {rows}×{cols} {} {algorithm} seed {seed}",
        T::SUFFIX,
        op.name()
    );
    assert_matches_cpu(&a_host, (rows, cols), &x_host, op, &got, &context);
}

fn algorithms() -> Vec<MatvecAlgorithm> {
    let mut all = vec![MatvecAlgorithm::Global, MatvecAlgorithm::Tuned];
    let tiles: &[u32] = if quick() {
        &[1, 33, 1024]
    } else {
        &[1, 31, 32, 33, 256, 1024]
    };
    for &tile in tiles {
        all.push(MatvecAlgorithm::SharedTiled { tile });
    }
    all
}

const EDGE_SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 1000),
    (1000, 1),
    (3, 5),
    (31, 33),
    (32, 32),
    (33, 31),
    (255, 257),
    (256, 256),
    (257, 1025),
    (1021, 997),
    (7, 4099),
    (4099, 7),
];

fn every_algorithm_on_edge_shapes<T: MatvecElement>() {
    for (i, &(rows, cols)) in EDGE_SHAPES.iter().enumerate() {
        for op in [Transpose::No, Transpose::Yes] {
            for algorithm in algorithms() {
                check_case::<T>(rows, cols, op, algorithm, 1000 + i as u64);
            }
        }
    }
}

gpu_tests! {
    every_algorithm_f32 => every_algorithm_on_edge_shapes::<f32>();
    every_algorithm_f64 => every_algorithm_on_edge_shapes::<f64>();
    every_algorithm_i32_wraps_exactly => every_algorithm_on_edge_shapes::<i32>();
}

/// Tuned A·x picks 1, 2, 4, ..., 256 threads per row from cols: cover each
/// width, with cols ≡ 0..3 (mod 4) so heads, bodies and tails all occur.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_every_row_group_width() {
    for base in [4usize, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384] {
        for extra in 0..4 {
            let cols = base + extra;
            check_case::<f32>(37, cols, Transpose::No, MatvecAlgorithm::Tuned, cols as u64);
            check_case::<i32>(37, cols, Transpose::No, MatvecAlgorithm::Tuned, cols as u64);
            check_case::<f64>(19, cols, Transpose::No, MatvecAlgorithm::Tuned, cols as u64);
        }
    }
}

/// Short, wide A·x (too few rows to fill the GPU) is split into column
/// chunks with a second, ordered pass: dot products, a few long rows, chunk
/// edges that do not fall on vectors, unaligned views.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_short_wide_rows_split_into_chunks() {
    for &(rows, cols) in &[
        (1usize, 1usize << 20),
        (1, 999_999),
        (3, 200_003),
        (2, 65_539),
        (17, 100_000),
        (1, 16_385),
    ] {
        check_case::<f32>(rows, cols, Transpose::No, MatvecAlgorithm::Tuned, 21);
        check_case::<f64>(rows, cols, Transpose::No, MatvecAlgorithm::Tuned, 22);
        check_case::<i32>(rows, cols, Transpose::No, MatvecAlgorithm::Tuned, 23);
        check_case::<f32>(rows, cols, Transpose::Yes, MatvecAlgorithm::Tuned, 24);
    }
    // A view one element in: every chunk starts unaligned.
    let gpu = gpu();
    let (rows, cols) = (2usize, 300_001usize);
    let a_host = random_input::<f32>(rows * cols + 1, 25);
    let x_host = random_input::<f32>(cols + 1, 26);
    let a_buffer = DeviceBuffer::from_host(gpu, &a_host).unwrap();
    let x_buffer = DeviceBuffer::from_host(gpu, &x_host).unwrap();
    let a = MatrixView::new(rows, cols, a_buffer.slice(1..).unwrap()).unwrap();
    let (x, op) = (x_buffer.slice(1..).unwrap(), Transpose::No);
    let got = matvec_new(gpu, a, x, op, MatvecAlgorithm::Tuned)
        .unwrap()
        .to_host(gpu)
        .unwrap();
    let (a_host, x_host) = (&a_host[1..], &x_host[1..]);
    assert_matches_cpu(
        a_host,
        (rows, cols),
        x_host,
        op,
        &got,
        "chunked view at offset 1",
    );
}

/// The run-time tuning knobs (row-group width through vectors per thread,
/// slab count through waves and rows per thread) at extreme settings.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_with_every_setting() {
    let gpu = gpu();
    for &(rows, cols) in &[
        (1usize, 1usize),
        (33, 1021),
        (1000, 64),
        (300, 4099),
        (4097, 3),
    ] {
        for op in [Transpose::No, Transpose::Yes] {
            let a_host = random_input::<f32>(rows * cols, 5);
            let x_host = random_input::<f32>(op.input_len(rows, cols), 6);
            let a = Matrix::from_host(gpu, rows, cols, &a_host).unwrap();
            let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
            for vectors in [1u64, 4, 64, 1 << 20] {
                for (waves, min_rows) in [(1u64, 1u64), (64, 1), (2, 1 << 20)] {
                    let tuning = MatvecPolicy {
                        n_vectors_per_thread: vectors,
                        n_waves: waves,
                        t_waves: waves,
                        t_min_rows_per_thread: min_rows,
                        ..MatvecPolicy::DEFAULT
                    };
                    let mut y =
                        DeviceBuffer::<f32>::poisoned(gpu, op.output_len(rows, cols)).unwrap();
                    matvec_tuned_with(gpu, a.view(), x.view(), y.view_mut(), op, &tuning).unwrap();
                    let context = format!("{rows}×{cols} {} {tuning:?}", op.name());
                    let got = y.to_host(gpu).unwrap();
                    assert_matches_cpu(&a_host, (rows, cols), &x_host, op, &got, &context);
                }
            }
        }
    }
    // Block shapes are compiled in: changing them is refused.
    let a = Matrix::from_host(gpu, 2, 2, &[1.0f32; 4]).unwrap();
    let x = DeviceBuffer::from_host(gpu, &[1.0f32; 2]).unwrap();
    let mut y = DeviceBuffer::<f32>::poisoned(gpu, 2).unwrap();
    let recompiled = MatvecPolicy {
        n_block_threads: 1024,
        ..MatvecPolicy::DEFAULT
    };
    assert!(matvec_tuned_with(
        gpu,
        a.view(),
        x.view(),
        y.view_mut(),
        Transpose::No,
        &recompiled
    )
    .is_err());
    assert!(y.to_host(gpu).unwrap().iter().all(|v| v.is_nan()));
}

/// The Tuned variants a tuning can pick: loads in flight (4 or 8, both
/// directions) × the streaming hint on the matrix loads.
fn tuned_variants() -> Vec<MatvecPolicy> {
    let mut variants = Vec::new();
    for loads in [4u32, 8] {
        for streaming in [false, true] {
            let mut tuning = MatvecPolicy::DEFAULT;
            tuning.n_loads = loads;
            tuning.t_loads = loads;
            tuning.streaming = streaming;
            variants.push(tuning);
        }
    }
    variants
}

/// Every Tuned variant against the CPU and bit for bit against the first
/// (they sum in the same order): both directions, vector and scalar Aᵀ·x
/// strips, chunked A·x (16 × 2^16, 2 × 100 000), views at element offsets
/// 0 and 1 (unaligned rows and x).
fn tuned_variants_agree<T: MatvecElement>() {
    let gpu = gpu();
    let shapes: &[(usize, usize)] = &[
        (1, 1),
        (3, 5),
        (33, 31),
        (64, 64),
        (257, 1025),
        (1021, 997),
        (7, 4099),
        (4099, 7),
        (4097, 8),
        (300, 4100),
        (16, 1 << 16),
        (2, 100_000),
    ];
    for (i, &(rows, cols)) in shapes.iter().enumerate() {
        for op in [Transpose::No, Transpose::Yes] {
            let x_len = op.input_len(rows, cols);
            let a_host = random_input::<T>(rows * cols + 1, 7000 + i as u64);
            let x_host = random_input::<T>(x_len + 1, 8000 + i as u64);
            let a_buf = DeviceBuffer::from_host(gpu, &a_host).unwrap();
            let x_buf = DeviceBuffer::from_host(gpu, &x_host).unwrap();
            for offset in [0usize, 1] {
                let a = MatrixView::new(
                    rows,
                    cols,
                    a_buf.slice(offset..offset + rows * cols).unwrap(),
                )
                .unwrap();
                let x = x_buf.slice(offset..offset + x_len).unwrap();
                let mut first: Option<Vec<T>> = None;
                for tuning in tuned_variants() {
                    let mut y =
                        DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).unwrap();
                    matvec_tuned_with(gpu, a, x, y.view_mut(), op, &tuning).unwrap();
                    let got = y.to_host(gpu).unwrap();
                    let context = format!(
                        "{} {rows}×{cols} {} offset {offset} loads {}/{} streaming {}",
                        T::SUFFIX,
                        op.name(),
                        tuning.n_loads,
                        tuning.t_loads,
                        tuning.streaming
                    );
                    match &first {
                        None => {
                            let a_host = &a_host[offset..offset + rows * cols];
                            let x_host = &x_host[offset..offset + x_len];
                            assert_matches_cpu(a_host, (rows, cols), x_host, op, &got, &context);
                            first = Some(got);
                        }
                        Some(expected) => assert!(
                            same_bits(&got, expected),
                            "{context}: differs from the default variant's bits"
                        ),
                    }
                }
            }
        }
    }
}

gpu_tests! {
    tuned_variants_agree_f32 => tuned_variants_agree::<f32>();
    tuned_variants_agree_f64 => tuned_variants_agree::<f64>();
    tuned_variants_agree_i32_exactly => tuned_variants_agree::<i32>();
}

/// Every entry point on one handle's context, checked against the CPU.
fn every_entry_on<T: MatvecElement>(gpu: &Gpu, seed: u64) {
    // cols 68: every row 16-byte aligned (vector Aᵀ·x strips); 67: scalar
    // strips; 2 × 40 000: A·x split into column chunks (reduce kernel).
    for (rows, cols) in [(33usize, 68usize), (33, 67), (2, 40_000)] {
        for op in [Transpose::No, Transpose::Yes] {
            let a_host = random_input::<T>(rows * cols, seed);
            let x_host = random_input::<T>(op.input_len(rows, cols), seed + 1);
            let a = Matrix::from_host(gpu, rows, cols, &a_host).unwrap();
            let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
            let check = |y: &DeviceBuffer<T>, what: &str| {
                let context = format!("{} {rows}×{cols} {} {what}", T::SUFFIX, op.name());
                let got = y.to_host(gpu).unwrap();
                assert_matches_cpu(&a_host, (rows, cols), &x_host, op, &got, &context);
            };
            for algorithm in [
                MatvecAlgorithm::Global,
                MatvecAlgorithm::SharedTiled { tile: 32 },
            ] {
                let mut y = DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).unwrap();
                matvec(gpu, a.view(), x.view(), y.view_mut(), op, algorithm).unwrap();
                check(&y, &algorithm.name());
            }
            for tuning in tuned_variants() {
                let mut y = DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).unwrap();
                matvec_tuned_with(gpu, a.view(), x.view(), y.view_mut(), op, &tuning).unwrap();
                check(&y, &format!("{tuning:?}"));
            }
        }
    }
}

/// The crate keeps loaded kernels per context: handles with their own
/// contexts, used in turn (more entries than the store keeps, so it evicts),
/// and handles dropped and replaced, all get their own context's kernels
/// and right results.
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_are_kept_per_context() {
    let first = Gpu::new(0).expect("a CUDA GPU");
    for round in 0..3u64 {
        let second = Gpu::new(0).expect("a CUDA GPU");
        for (k, gpu) in [&first, &second, &first].into_iter().enumerate() {
            let seed = 9000 + 10 * round + k as u64;
            each_type!(every_entry_on(gpu, seed): f32, f64, i32);
        }
        // `second` is dropped here; the next round's handle is a new one.
    }
}

/// Tuned Aᵀ·x: one slab and many slabs, vector (cols·size % 16 == 0) and
/// scalar strips, partial last strips.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_transposed_slabs_and_strips() {
    for &(rows, cols) in &[
        (127, 128),
        (128, 129),
        (4096, 64),
        (4096, 65),
        (20000, 3),
        (20000, 4),
        (65536, 2),
        (3, 20000),
        (5000, 1000),
    ] {
        check_case::<f32>(rows, cols, Transpose::Yes, MatvecAlgorithm::Tuned, 7);
        check_case::<f64>(rows, cols, Transpose::Yes, MatvecAlgorithm::Tuned, 8);
        check_case::<i32>(rows, cols, Transpose::Yes, MatvecAlgorithm::Tuned, 9);
    }
}

/// A, x and y as views into larger caller buffers at offsets 0..4 elements:
/// rows start unaligned, x is unaligned relative to them; elements of y's
/// buffer outside the view stay poisoned.
fn views_at_offsets<T: MatvecElement>() {
    let gpu = gpu();
    for &(rows, cols) in &[(37usize, 1021usize), (64, 4096), (1000, 33), (5, 16387)] {
        for offset in 0..4usize {
            for op in [Transpose::No, Transpose::Yes] {
                for algorithm in [
                    MatvecAlgorithm::Tuned,
                    MatvecAlgorithm::Global,
                    MatvecAlgorithm::SharedTiled { tile: 128 },
                ] {
                    let len = rows * cols;
                    let (x_len, y_len) = (op.input_len(rows, cols), op.output_len(rows, cols));
                    let a_host = random_input::<T>(len + 8, offset as u64);
                    let x_host = random_input::<T>(x_len + 8, 99 + offset as u64);
                    let a_buffer = DeviceBuffer::from_host(gpu, &a_host).unwrap();
                    let x_buffer = DeviceBuffer::from_host(gpu, &x_host).unwrap();
                    let mut y_buffer = DeviceBuffer::<T>::poisoned(gpu, y_len + 8).unwrap();
                    let a_off = offset;
                    let x_off = (offset * 3 + 1) % 4;
                    let y_off = (offset + 2) % 4;
                    let a =
                        MatrixView::new(rows, cols, a_buffer.slice(a_off..a_off + len).unwrap())
                            .unwrap();
                    let x = x_buffer.slice(x_off..x_off + x_len).unwrap();
                    let y = y_buffer.slice_mut(y_off..y_off + y_len).unwrap();
                    matvec(gpu, a, x, y, op, algorithm).unwrap();
                    let got = y_buffer.to_host(gpu).unwrap();
                    let context = format!(
                        "{} view {rows}×{cols} offsets a {a_off} x {x_off} y {y_off} {} {algorithm}",
                        T::SUFFIX,
                        op.name()
                    );
                    let (a_host, x_host) =
                        (&a_host[a_off..a_off + len], &x_host[x_off..x_off + x_len]);
                    let y = &got[y_off..y_off + y_len];
                    assert_matches_cpu(a_host, (rows, cols), x_host, op, y, &context);
                    let poison = T::poison();
                    let untouched = got[..y_off]
                        .iter()
                        .chain(&got[y_off + y_len..])
                        .all(|v| bytemuck::bytes_of(v) == bytemuck::bytes_of(&poison));
                    assert!(untouched, "{context}: wrote outside y");
                }
            }
        }
    }
}

gpu_tests! {
    views_at_unaligned_offsets => each_type!(views_at_offsets(): f32, f64, i32);
}

/// The goal shape: 16384² f32, both directions, Tuned against the f64
/// reference; two runs give identical bits (deterministic); SharedTiled
/// checked too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_f32_16384_squared_tuned_is_accurate_and_deterministic() {
    let gpu = gpu();
    let n = 16384;
    let a_host = random_input::<f32>(n * n, 42);
    let x_host = random_input::<f32>(n, 43);
    let a = Matrix::from_host(gpu, n, n, &a_host).unwrap();
    let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
    for op in [Transpose::No, Transpose::Yes] {
        let (exact, magnitude) = cpu::matvec_f64(&a_host, n, n, &x_host, op).unwrap();
        let check = |got: &[f32], what: &str| {
            for (i, (&g, (&e, &m))) in got.iter().zip(exact.iter().zip(&magnitude)).enumerate() {
                let tolerance = cpu::matvec_tolerance::<f32>(n, m);
                assert!(
                    (g as f64 - e).abs() <= tolerance,
                    "16384² {what} {}: y[{i}] = {g}, reference {e}, tolerance {tolerance:e}",
                    op.name()
                );
            }
        };
        let first = matvec_new(gpu, a.view(), x.view(), op, MatvecAlgorithm::Tuned)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        let second = matvec_new(gpu, a.view(), x.view(), op, MatvecAlgorithm::Tuned)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        assert!(
            first
                .iter()
                .zip(&second)
                .all(|(p, q)| p.to_bits() == q.to_bits()),
            "Tuned {} is not deterministic",
            op.name()
        );
        check(&first, "tuned");
        let tiled = matvec_new(
            gpu,
            a.view(),
            x.view(),
            op,
            MatvecAlgorithm::SharedTiled { tile: 256 },
        )
        .unwrap()
        .to_host(gpu)
        .unwrap();
        check(&tiled, "shared-tiled");
    }
}

/// More than 2^31 elements (8.6 GB of i32): 64-bit indexing in the Tuned
/// and Global kernels, exact (wrapping) comparison.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_more_than_2_pow_31_elements() {
    let gpu = gpu();
    let (rows, cols) = (65_537usize, 32_771usize);
    let a_host = random_input::<i32>(rows * cols, 7);
    let Some(a) = upload_past_2_pow_31(gpu, rows, cols, &a_host) else {
        return;
    };
    for op in [Transpose::No, Transpose::Yes] {
        let x_host = random_input::<i32>(op.input_len(rows, cols), 8);
        let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
        let expected = cpu::matvec(&a_host, rows, cols, &x_host, op).unwrap();
        let mut algorithms = vec![MatvecAlgorithm::Tuned];
        if op == Transpose::Yes {
            algorithms.push(MatvecAlgorithm::Global); // coalesced, fast enough
        }
        for algorithm in algorithms {
            let got = matvec_new(gpu, a.view(), x.view(), op, algorithm)
                .unwrap()
                .to_host(gpu)
                .unwrap();
            assert!(
                got == expected,
                "> 2^31 elements, {} {algorithm}: {} outputs differ",
                op.name(),
                got.iter().zip(&expected).filter(|(g, e)| g != e).count()
            );
        }
    }
}

/// Bad arguments: typed errors, y untouched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    let gpu = gpu();
    let (rows, cols) = (5usize, 7usize);
    let a_host = random_input::<f32>(rows * cols, 1);
    let x_cols_host = random_input::<f32>(cols, 2);
    let x_rows_host = random_input::<f32>(rows, 3);
    let a = Matrix::from_host(gpu, rows, cols, &a_host).unwrap();
    let x_cols = DeviceBuffer::from_host(gpu, &x_cols_host).unwrap();
    let x_rows = DeviceBuffer::from_host(gpu, &x_rows_host).unwrap();
    let mut y = DeviceBuffer::<f32>::poisoned(gpu, rows.max(cols)).unwrap();
    let cases: Vec<(MatvecAlgorithm, Transpose, bool, usize)> = vec![
        // (algorithm, op, x has cols elements?, y length)
        (MatvecAlgorithm::Tuned, Transpose::No, false, rows), // x too short
        (MatvecAlgorithm::Tuned, Transpose::No, true, cols),  // y too long
        (MatvecAlgorithm::Global, Transpose::Yes, true, cols), // x wrong length
        (MatvecAlgorithm::Tuned, Transpose::Yes, false, rows), // y too short
        (
            MatvecAlgorithm::SharedTiled { tile: 0 },
            Transpose::No,
            true,
            rows,
        ),
        (
            MatvecAlgorithm::SharedTiled { tile: 1025 },
            Transpose::No,
            true,
            rows,
        ),
    ];
    for (algorithm, op, x_is_cols, y_len) in cases {
        let x = if x_is_cols {
            x_cols.view()
        } else {
            x_rows.view()
        };
        let result = matvec(
            gpu,
            a.view(),
            x,
            y.slice_mut(..y_len).unwrap(),
            op,
            algorithm,
        );
        assert!(
            matches!(
                result,
                Err(Error::LengthMismatch { .. }) | Err(Error::InvalidArgument { .. })
            ),
            "{algorithm} {}: {result:?}",
            op.name()
        );
        // matvec_new allocates its own y of the right length, so it fails
        // only when x or the algorithm is bad; otherwise it must succeed
        // (and leave the caller's y alone, checked below).
        let x_is_bad = x.len() != op.input_len(rows, cols);
        let algorithm_is_bad = algorithm.validate().is_err();
        let created = matvec_new(gpu, a.view(), x, op, algorithm);
        if x_is_bad || algorithm_is_bad {
            assert!(
                matches!(
                    created,
                    Err(Error::LengthMismatch { .. }) | Err(Error::InvalidArgument { .. })
                ),
                "matvec_new {algorithm} {}: {created:?}",
                op.name()
            );
        } else {
            let created = created.expect("matvec_new with a good x and algorithm");
            let x_host = if x_is_cols {
                &x_cols_host
            } else {
                &x_rows_host
            };
            let context = format!("matvec_new {algorithm} {}", op.name());
            let got = created.to_host(gpu).unwrap();
            assert_matches_cpu(&a_host, (rows, cols), x_host, op, &got, &context);
        }
    }
    let after = y.to_host(gpu).unwrap();
    assert!(
        after.iter().all(|v| v.to_bits() == f32::poison().to_bits()),
        "an output was written despite the error"
    );
    // Zero dimensions cannot even make a view.
    assert!(matches!(
        MatrixView::new(0, 7, x_cols.slice(0..0).unwrap()),
        Err(Error::Shape(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: gpu_cases(), ..ProptestConfig::default() })]

    /// Random shapes, biased to tile and warp edges, every algorithm and
    /// type against the CPU.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_shapes_match_cpu(
        rows in prop_oneof![1usize..4, 30usize..35, 250usize..260, 1usize..3000],
        cols in prop_oneof![1usize..4, 30usize..35, 1020usize..1030, 1usize..5000],
        transposed in any::<bool>(),
        pick in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let op = if transposed { Transpose::Yes } else { Transpose::No };
        let all = algorithms();
        let algorithm = all[pick % all.len()];
        check_case::<f32>(rows, cols, op, algorithm, seed);
        check_case::<f64>(rows, cols, op, algorithm, seed);
        check_case::<i32>(rows, cols, op, algorithm, seed);
    }
}

// ---- CPU-only tests (run in CI) ----

#[test]
fn validation_is_pure_and_typed() {
    assert!(check_matvec_lengths(4, 9, 9, 4, Transpose::No).is_ok());
    assert!(matches!(
        check_matvec_lengths(4, 9, 4, 4, Transpose::No),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        check_matvec_lengths(4, 9, 4, 4, Transpose::Yes),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        check_matvec_lengths(4, 0, 0, 4, Transpose::No),
        Err(Error::Shape(_))
    ));
    assert!(MatvecAlgorithm::SharedTiled { tile: 0 }.validate().is_err());
    assert!(MatvecAlgorithm::SharedTiled { tile: 1025 }
        .validate()
        .is_err());
    assert!(MatvecAlgorithm::SharedTiled { tile: 1024 }
        .validate()
        .is_ok());
}

proptest! {
    /// The CPU reference's A·x equals its Aᵀ·x on the explicitly transposed
    /// matrix (integers: exactly).
    #[test]
    fn cpu_transposed_product_agrees(rows in 1usize..40, cols in 1usize..40, seed in any::<u64>()) {
        let a = random_input::<i32>(rows * cols, seed);
        let x = random_input::<i32>(rows, seed ^ 1);
        let at = cpu::transpose(&a, rows, cols).unwrap();
        prop_assert_eq!(
            cpu::matvec(&a, rows, cols, &x, Transpose::Yes).unwrap(),
            cpu::matvec(&at, cols, rows, &x, Transpose::No).unwrap()
        );
    }

    /// The f32 reference lies within its own tolerance of the f64 one.
    #[test]
    fn cpu_float_reference_is_within_tolerance(rows in 1usize..20, cols in 1usize..300, seed in any::<u64>()) {
        let a = random_input::<f32>(rows * cols, seed);
        let x = random_input::<f32>(cols, seed ^ 1);
        let y = cpu::matvec(&a, rows, cols, &x, Transpose::No).unwrap();
        let (exact, magnitude) = cpu::matvec_f64(&a, rows, cols, &x, Transpose::No).unwrap();
        for i in 0..rows {
            prop_assert!((y[i] as f64 - exact[i]).abs() <= cpu::matvec_tolerance::<f32>(cols, magnitude[i]));
        }
    }
}

#[test]
fn poison_is_what_outputs_start_as() {
    // The untouched-output checks above rely on poison being a NaN.
    assert!(f32::poison().is_nan());
}
