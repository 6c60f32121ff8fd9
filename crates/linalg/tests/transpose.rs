//! Transpose against the CPU reference: every algorithm × element size (1,
//! 2, 4, 8 bytes; every type) on shapes biased to tile edges, Tuned at every
//! compiled shape with and without vectors and the tall tile (the vector
//! kernel on whole-vector shapes, the tall tile on 2- and 4-byte rows off
//! 256-byte blocks, the scalar tile on the rest), 1 × N and N × 1 with grids
//! spilling into z, views of caller buffers, transpose twice is the
//! identity, a 16384² f32 and > 2^31-element cases, and bad input leaving
//! outputs untouched.
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; run them with
//! `--include-ignored` on a GPU machine.

mod support;

use gpu_core::{DeviceBuffer, DeviceType, Error, Gpu};
use linalg::policy::TransposePolicy;
use linalg::{
    check_transpose_shapes, cpu, transpose, transpose_new, transpose_tuned_with, Matrix,
    MatrixView, MatrixViewMut, TransposeAlgorithm,
};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use support::{all_poison, each_type, gpu, gpu_cases, gpu_tests, same_bits, upload_past_2_pow_31};

/// Random bit patterns (every value distinct with high probability, so a
/// misplaced element shows). Floats get finite values so `==` works.
fn random_bits<T: DeviceType>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let mut out = vec![T::default(); len];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    for chunk in bytes.chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
    // Clear the top exponent bit of every float-sized word so no NaN/inf
    // appears (harmless for integers: they are compared as bits anyway).
    if T::BYTES == 4 {
        for word in bytemuck::cast_slice_mut::<T, u32>(&mut out) {
            *word &= 0xbfff_ffff;
        }
    } else if T::BYTES == 8 {
        for word in bytemuck::cast_slice_mut::<T, u64>(&mut out) {
            *word &= 0xbfff_ffff_ffff_ffff;
        }
    }
    out
}

/// Transposes a random `rows × cols` matrix with `run` (`what` in
/// messages) into a poisoned output and compares it with the CPU, bit for
/// bit.
fn check_transpose<T: DeviceType>(
    rows: usize,
    cols: usize,
    seed: u64,
    what: &str,
    run: impl FnOnce(&Gpu, MatrixView<'_, T>, MatrixViewMut<'_, T>) -> gpu_core::Result<()>,
) {
    let gpu = gpu();
    let host = random_bits::<T>(rows * cols, seed);
    let input = Matrix::from_host(gpu, rows, cols, &host).unwrap();
    let mut output = Matrix::<T>::poisoned(gpu, cols, rows).unwrap();
    run(gpu, input.view(), output.view_mut()).unwrap();
    let got = output.to_host(gpu).unwrap();
    let expected = cpu::transpose(&host, rows, cols).unwrap();
    if !same_bits(&got, &expected) {
        let wrong = (0..got.len()).filter(|&i| got[i] != expected[i]).count();
        let first = (0..got.len()).find(|&i| got[i] != expected[i]).unwrap_or(0);
        panic!(
            "{} {rows}×{cols} {what}: {wrong} of {} elements wrong, first at out[{}][{}]",
            T::SUFFIX,
            got.len(),
            first / rows,
            first % rows
        );
    }
}

fn check_case<T: DeviceType>(rows: usize, cols: usize, algorithm: TransposeAlgorithm, seed: u64) {
    check_transpose::<T>(
        rows,
        cols,
        seed,
        &algorithm.to_string(),
        |gpu, input, output| transpose(gpu, input, output, algorithm),
    );
}

const EDGE_SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 1000),
    (1000, 1),
    (7, 9),
    (31, 31),
    (31, 33),
    (32, 32),
    (33, 31),
    (33, 33),
    (64, 96),
    (65, 95),
    (8, 24),
    (16, 16),
    (128, 128),
    (144, 272),
    (256, 16),
    (16, 4096),
    (8, 300),
    (300, 8),
    (1021, 997),
    (2, 70_001),
    (70_001, 2),
];

fn every_algorithm_on_edge_shapes<T: DeviceType>() {
    for (i, &(rows, cols)) in EDGE_SHAPES.iter().enumerate() {
        for algorithm in TransposeAlgorithm::ALL {
            check_case::<T>(rows, cols, algorithm, 500 + i as u64);
        }
        for tuning in TransposePolicy::compiled() {
            check_tuned_with::<T>(rows, cols, tuning, 700 + i as u64);
        }
    }
}

/// The Tuned kernel at another policy (tuning sweeps).
fn check_tuned_with<T: DeviceType>(rows: usize, cols: usize, tuning: TransposePolicy, seed: u64) {
    let what = format!("{tuning:?}");
    check_transpose::<T>(rows, cols, seed, &what, |gpu, input, output| {
        transpose_tuned_with(gpu, input, output, &tuning)
    });
}

gpu_tests! {
    every_algorithm_4_byte_types => each_type!(every_algorithm_on_edge_shapes(): f32, i32, u32);
    every_algorithm_8_byte_types => each_type!(every_algorithm_on_edge_shapes(): f64, i64, u64);
    every_algorithm_bytes => every_algorithm_on_edge_shapes::<u8>();
    every_algorithm_halfwords => each_type!(every_algorithm_on_edge_shapes(): u16, i16);
}

/// N × 1 with more row tiles than grid y holds (spills into z), and 1 × N
/// with many column tiles.
#[test]
#[ignore = "needs a CUDA GPU"]
fn vectors_spill_the_grid_into_z() {
    let n = 8_388_737; // > 65 535 · 128 rows: z > 1 for every algorithm and tile
    for algorithm in TransposeAlgorithm::ALL {
        check_case::<f32>(n, 1, algorithm, 1);
        check_case::<f32>(1, n, algorithm, 2);
        check_case::<u8>(n, 1, algorithm, 3);
        check_case::<f64>(2, n / 2, algorithm, 4);
        check_case::<f64>(n / 2, 2, algorithm, 5);
    }
    // Whole 16-byte rows: the vector kernel's 128-row tiles spill too.
    check_case::<u8>(65_537 * 128, 16, TransposeAlgorithm::Tuned, 6);
    check_case::<u16>(16, 65_537 * 64, TransposeAlgorithm::Tuned, 7);
    // f32 rows off 256-byte blocks (the tall tile) across the rows: its
    // 128-row tiles spill into z.
    let across = TransposePolicy {
        order: linalg::policy::TileOrder::AcrossRows,
        tall_from_elements: Some(0),
        ..TransposePolicy::DEFAULT
    };
    check_tuned_with::<f32>(65_537 * 128 + 3, 3, across, 8);
}

/// Input and output as views into larger caller buffers at odd offsets;
/// the output buffer outside the view stays poisoned.
#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_caller_buffers() {
    let gpu = gpu();
    for &(rows, cols) in &[(33usize, 65usize), (1, 77), (77, 1), (256, 256)] {
        for algorithm in TransposeAlgorithm::ALL {
            let len = rows * cols;
            let host = random_bits::<f32>(len + 10, 77);
            let input_buffer = DeviceBuffer::from_host(gpu, &host).unwrap();
            let mut output_buffer = DeviceBuffer::<f32>::poisoned(gpu, len + 10).unwrap();
            let (in_off, out_off) = (3usize, 5usize);
            let input = MatrixView::new(
                rows,
                cols,
                input_buffer.slice(in_off..in_off + len).unwrap(),
            )
            .unwrap();
            let output = MatrixViewMut::new(
                cols,
                rows,
                output_buffer.slice_mut(out_off..out_off + len).unwrap(),
            )
            .unwrap();
            transpose(gpu, input, output, algorithm).unwrap();
            let got = output_buffer.to_host(gpu).unwrap();
            let expected = cpu::transpose(&host[in_off..in_off + len], rows, cols).unwrap();
            assert!(
                same_bits(&got[out_off..out_off + len], &expected),
                "view {rows}×{cols} {algorithm}"
            );
            assert!(
                got[..out_off]
                    .iter()
                    .chain(&got[out_off + len..])
                    .all(|v| v.to_bits() == f32::poison().to_bits()),
                "view {rows}×{cols} {algorithm}: wrote outside the output view"
            );
        }
    }
}

/// The goal shape, 16384² f32: Tuned and TiledPadded against the CPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_f32_16384_squared() {
    let gpu = gpu();
    let n = 16384;
    let host = random_bits::<f32>(n * n, 11);
    let expected = cpu::transpose(&host, n, n).unwrap();
    let input = Matrix::from_host(gpu, n, n, &host).unwrap();
    for algorithm in [TransposeAlgorithm::Tuned, TransposeAlgorithm::TiledPadded] {
        let got = transpose_new(gpu, input.view(), algorithm)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        assert!(same_bits(&got, &expected), "16384² {algorithm}");
    }
}

/// A `rows × cols` matrix of more than 2^31 random elements transposed by
/// each of `algorithms` against the CPU; skipped (with a note) where the
/// device lacks the memory.
fn check_past_2_pow_31<T: DeviceType + PartialEq>(
    rows: usize,
    cols: usize,
    seed: u64,
    algorithms: &[TransposeAlgorithm],
    what: &str,
) {
    let gpu = gpu();
    let host = random_bits::<T>(rows * cols, seed);
    let Some(input) = upload_past_2_pow_31(gpu, rows, cols, &host) else {
        return;
    };
    let expected = cpu::transpose(&host, rows, cols).unwrap();
    for &algorithm in algorithms {
        let got = transpose_new(gpu, input.view(), algorithm)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        assert!(got == expected, "> 2^31 elements, {what}, {algorithm}");
    }
}

/// More than 2^31 elements (2.1 GB of bytes, 4.3 GB of halfwords): 64-bit
/// tile and element indices in each Tuned kernel.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_more_than_2_pow_31_elements() {
    let (tuned, naive) = (TransposeAlgorithm::Tuned, TransposeAlgorithm::Naive);
    check_past_2_pow_31::<u8>(46_349, 46_351, 12, &[tuned, naive], "odd sides");
    // Whole 16-byte vectors per row: the vector kernel.
    check_past_2_pow_31::<u8>(46_352, 46_336, 13, &[tuned], "vectors");
    // Halfwords on rows off 256-byte blocks: the tall tile.
    check_past_2_pow_31::<u16>(46_349, 46_351, 14, &[tuned], "tall tile");
}

/// A wrong output shape is a typed error; the output stays poisoned.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_shapes_are_typed_errors_and_write_nothing() {
    let gpu = gpu();
    let input = Matrix::from_host(gpu, 3, 5, &random_bits::<f32>(15, 1)).unwrap();
    for algorithm in TransposeAlgorithm::ALL {
        // Same element count, wrong shape (3×5 instead of 5×3), and a square.
        for (out_rows, out_cols) in [(3usize, 5usize), (15, 1), (1, 15)] {
            let mut output = Matrix::<f32>::poisoned(gpu, out_rows, out_cols).unwrap();
            let result = transpose(gpu, input.view(), output.view_mut(), algorithm);
            assert!(matches!(result, Err(Error::Shape(_))), "{result:?}");
            assert!(all_poison(&output.to_host(gpu).unwrap()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: gpu_cases(), ..ProptestConfig::default() })]

    /// Random shapes near tile edges: every algorithm matches the CPU, and
    /// transposing twice gives the input back.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn transpose_twice_is_identity(
        rows in prop_oneof![1usize..3, 30usize..35, 62usize..67, 1usize..2000],
        cols in prop_oneof![1usize..3, 30usize..35, 62usize..67, 1usize..2000],
        pick in 0usize..4,
        seed in any::<u64>(),
    ) {
        let gpu = gpu();
        let algorithm = TransposeAlgorithm::ALL[pick];
        let host = random_bits::<f64>(rows * cols, seed);
        let input = Matrix::from_host(gpu, rows, cols, &host).unwrap();
        let once = transpose_new(gpu, input.view(), algorithm).unwrap();
        prop_assert!(same_bits(&once.to_host(gpu).unwrap(), &cpu::transpose(&host, rows, cols).unwrap()));
        let twice = transpose_new(gpu, once.view(), algorithm).unwrap();
        prop_assert_eq!(twice.shape(), (rows, cols));
        prop_assert!(same_bits(&twice.to_host(gpu).unwrap(), &host));
        check_case::<u8>(rows, cols, algorithm, seed);
        check_case::<f32>(rows, cols, algorithm, seed);
    }
}

// ---- CPU-only tests (run in CI) ----

#[test]
fn shape_validation_is_pure_and_typed() {
    assert!(check_transpose_shapes((4, 9), (9, 4), 4).is_ok());
    assert!(matches!(
        check_transpose_shapes((4, 9), (4, 9), 4),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        check_transpose_shapes((4, 9), (9, 4), 3),
        Err(Error::Unsupported(_))
    ));
}

/// A block height that was not compiled in is refused before any device
/// work (the shape check would pass).
#[test]
#[ignore = "needs a CUDA GPU"]
fn untunable_settings_are_refused() {
    let gpu = gpu();
    let input = Matrix::from_host(gpu, 2, 3, &random_bits::<f32>(6, 1)).unwrap();
    let mut output = Matrix::<f32>::poisoned(gpu, 3, 2).unwrap();
    for tuning in [
        TransposePolicy {
            block_rows: 2,
            ..TransposePolicy::DEFAULT
        },
        TransposePolicy {
            tile: 64,
            block_rows: 16,
            ..TransposePolicy::DEFAULT
        },
        TransposePolicy {
            tile: 128,
            block_rows: 8,
            ..TransposePolicy::DEFAULT
        },
    ] {
        assert!(matches!(
            transpose_tuned_with(gpu, input.view(), output.view_mut(), &tuning),
            Err(Error::InvalidArgument { .. })
        ));
    }
    assert!(all_poison(&output.to_host(gpu).unwrap()));
}

proptest! {
    #[test]
    fn cpu_transpose_twice_is_identity(rows in 1usize..50, cols in 1usize..50, seed in any::<u64>()) {
        let a = random_bits::<u32>(rows * cols, seed);
        let t = cpu::transpose(&a, rows, cols).unwrap();
        for r in 0..rows {
            for c in 0..cols {
                prop_assert_eq!(t[c * rows + r], a[r * cols + c]);
            }
        }
        prop_assert_eq!(cpu::transpose(&t, cols, rows).unwrap(), a);
    }
}
