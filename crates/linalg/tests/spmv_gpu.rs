//! GPU tests of CSR SpMV: every method against the CPU reference on random
//! matrices with empty rows, one dense row, duplicate columns, f32 and f64,
//! α and β; shapes around the merge-path tile; the benchmark's generated
//! kinds; more tiles than one fix-up chunk (a giant row's carries across
//! chunks); bad arguments (typed error, nothing written). One test past 2^31
//! non-zeros (64-bit offsets) is best run alone:
//! `cargo test --release -p parprims-linalg --test spmv_gpu past_2_31 -- --ignored`.
//!
//! Run on a GPU machine: `cargo test -p parprims-linalg --test spmv_gpu -- --include-ignored`.

use gpu_core::{DeviceBuffer, Error, Gpu};
use linalg::spmv::generate::{generate, generate_x, RowLengths, SEED};
use linalg::spmv::merge_path::{merge_tile_steps, MERGE_FIXUP_CHUNK};
use linalg::spmv::{CsrMatrix, CsrOffsets, HostCsr, SpmvAlgorithm, SpmvElement};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// A random CSR: a quarter of the rows empty, the others up to `max_len`
/// entries with repeated columns, and optionally one dense row.
fn random_csr<T: SpmvElement>(
    rows: usize,
    cols: usize,
    max_len: u64,
    dense_row: bool,
    seed: u64,
) -> HostCsr<T> {
    let mut rng = SplitMix64::new(seed);
    let dense = if dense_row {
        rng.below(rows as u64) as usize
    } else {
        usize::MAX
    };
    let mut offsets = vec![0u64];
    let (mut columns, mut values) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let len = if r == dense {
            cols + 3
        } else if rng.below(4) == 0 {
            0
        } else {
            rng.below(max_len + 1) as usize
        };
        for i in 0..len {
            let c = if r == dense && i < cols {
                i as u64
            } else {
                rng.below(cols as u64)
            };
            columns.push(c as i32);
            // Multiples of 1/16 in [-4, 4): sums of a few thousand are exact in f32.
            values.push(T::from_f64((rng.below(128) as f64 - 64.0) / 16.0));
        }
        offsets.push(columns.len() as u64);
    }
    HostCsr {
        rows,
        cols,
        offsets,
        columns,
        values,
    }
}

fn small_x<T: SpmvElement>(cols: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed ^ 0x77);
    (0..cols)
        .map(|_| T::from_f64((rng.below(16) as f64 - 8.0) / 4.0))
        .collect()
}

/// Every method on `a` with α, β against the CPU: exact when `exact`
/// (values chosen so that every partial sum is representable), else within
/// a rounding bound per row.
fn check_all<T: SpmvElement>(gpu: &Gpu, a: &HostCsr<T>, x: &[T], alpha: T, beta: T, exact: bool) {
    let device = a.upload(gpu).unwrap();
    let x_device = DeviceBuffer::from_host(gpu, x).unwrap();
    let y0: Vec<T> = (0..a.rows)
        .map(|r| T::from_f64((r % 7) as f64 - 3.0))
        .collect();
    let mut expected = y0.clone();
    a.spmv(x, alpha, beta, &mut expected).unwrap();
    for method in SpmvAlgorithm::all() {
        if !method.supports::<T>() {
            continue;
        }
        let mut y = DeviceBuffer::from_host(gpu, &y0).unwrap();
        if beta == T::zero() {
            y.view_mut().fill(gpu, T::poison()).unwrap(); // y must not be read
        }
        linalg::spmv::spmv_into(
            gpu,
            &device,
            x_device.view(),
            alpha,
            beta,
            y.view_mut(),
            method,
        )
        .unwrap();
        let got = y.to_host(gpu).unwrap();
        for r in 0..a.rows {
            let (g, e) = (got[r].to_f64(), expected[r].to_f64());
            let ok = if exact {
                g == e
            } else {
                let magnitude: f64 = (a.offsets[r]..a.offsets[r + 1])
                    .map(|k| {
                        (a.values[k as usize].to_f64() * x[a.columns[k as usize] as usize].to_f64())
                            .abs()
                    })
                    .sum();
                let len = (a.offsets[r + 1] - a.offsets[r]) as f64;
                let epsilon = if T::BYTES == 4 {
                    f32::EPSILON as f64
                } else {
                    f64::EPSILON
                };
                (g - e).abs()
                    <= 8.0
                        * epsilon
                        * ((len + 1.0).sqrt() + 2.0)
                        * (magnitude.abs() * alpha.to_f64().abs()
                            + (beta.to_f64() * y0[r].to_f64()).abs())
                        + 1e-30
            };
            assert!(
                ok,
                "{method:?} {}: row {r} of {}: got {g}, expected {e}",
                T::SUFFIX,
                a.rows
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn every_method_matches_the_cpu(rows in 1usize..3000, cols in 1usize..3000, max_len in prop::sample::select(vec![0u64, 1, 3, 40, 300]), dense_row in any::<bool>(), seed in any::<u64>(), beta_zero in any::<bool>()) {
        let gpu = gpu();
        let beta = if beta_zero { 0.0 } else { -0.5 };
        let a = random_csr::<f32>(rows, cols, max_len, dense_row, seed);
        check_all(&gpu, &a, &small_x::<f32>(cols, seed), 2.0f32, beta as f32, true);
        let a = random_csr::<f64>(rows, cols, max_len, dense_row, seed);
        check_all(&gpu, &a, &small_x::<f64>(cols, seed), 2.0f64, beta, true);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shapes_around_the_tile() {
    let gpu = gpu();
    let tile = merge_tile_steps() as usize;
    for (rows, per_row) in [
        (1, 0),
        (1, 1),
        (1, tile - 1),
        (1, tile),
        (1, 5 * tile + 3),
        (tile, 0),
        (tile - 1, 1),
        (tile + 1, 1),
        (3 * tile, 2),
        (tile / 2, 1),
    ] {
        let cols = per_row.max(1) + 7;
        let a = generate::<f32>(rows, cols, RowLengths::Uniform(per_row), SEED ^ rows as u64);
        let x = generate_x::<f32>(cols, SEED);
        check_all(&gpu, &a, &x, 1.0, 0.0, false);
    }
    // One giant row among empty ones, both ends.
    for giant in [0usize, 4999] {
        let mut offsets = vec![0u64; 5001];
        for offset in &mut offsets[giant + 1..] {
            *offset = 200_000;
        }
        let columns: Vec<i32> = (0..200_000i32).map(|k| k % 1000).collect();
        let values: Vec<f64> = (0..200_000).map(|k| ((k % 9) as f64 - 4.0) / 8.0).collect();
        let a = HostCsr {
            rows: 5000,
            cols: 1000,
            offsets,
            columns,
            values,
        };
        check_all(&gpu, &a, &small_x::<f64>(1000, 3), 1.0, 0.0, true);
    }
}

/// More merge-path tiles than one fix-up chunk holds, so that the chunks and
/// their summaries run: one giant row whose carries cross chunks, rows of
/// exactly one tile, millions of one-entry rows.
#[test]
#[ignore = "needs a CUDA GPU"]
fn carries_across_fixup_chunks() {
    let gpu = gpu();
    let tile = merge_tile_steps() as usize;
    let chunk_steps = MERGE_FIXUP_CHUNK as usize * tile;
    // One row of 1.5 chunks' steps among empty rows on both sides (f64,
    // exact: multiples of 1/8 times small x).
    let nnz = 3 * chunk_steps / 2;
    let rows = 3000;
    let mut offsets = vec![0u64; rows + 1];
    for offset in &mut offsets[1500..] {
        *offset = nnz as u64;
    }
    let columns: Vec<i32> = (0..nnz).map(|k| (k % 1000) as i32).collect();
    let values: Vec<f64> = (0..nnz).map(|k| ((k % 9) as f64 - 4.0) / 8.0).collect();
    let a = HostCsr {
        rows,
        cols: 1000,
        offsets,
        columns,
        values,
    };
    check_all(&gpu, &a, &small_x::<f64>(1000, 5), 1.0, 0.0, true);
    check_all(&gpu, &a, &small_x::<f64>(1000, 6), 2.0, -0.5, true);
    // Rows of exactly one tile (non-zeros + end), and rows of one entry.
    for (rows, per_row) in [(3000, tile - 1), (1 << 21, 1)] {
        let cols = 4096;
        let a = generate::<f32>(rows, cols, RowLengths::Uniform(per_row), SEED ^ rows as u64);
        let x = generate_x::<f32>(cols, SEED);
        check_all(&gpu, &a, &x, 1.0, 0.0, false);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_kinds() {
    let gpu = gpu();
    for lengths in [
        RowLengths::Uniform(32),
        RowLengths::PowerLaw,
        RowLengths::Banded(5),
    ] {
        let a = generate::<f32>(100_000, 100_000, lengths, SEED);
        let x = generate_x::<f32>(100_000, SEED);
        check_all(&gpu, &a, &x, 1.0, 0.0, false);
        check_all(&gpu, &a, &x, -1.5, 0.25, false);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn spmv_new_buffer_and_from_device() {
    let gpu = gpu();
    let offsets = CsrOffsets::U64(DeviceBuffer::from_host(&gpu, &[0u64, 1, 3, 3]).unwrap());
    let columns = DeviceBuffer::from_host(&gpu, &[1i32, 0, 1]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &[2.0f32, 3.0, 4.0]).unwrap();
    let a = CsrMatrix::from_device(&gpu, 3, 2, offsets, columns, values).unwrap();
    let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 10.0]).unwrap();
    for method in SpmvAlgorithm::all() {
        let y = linalg::spmv::spmv(&gpu, &a, x.view(), method).unwrap();
        assert_eq!(
            y.to_host(&gpu).unwrap(),
            vec![20.0, 43.0, 0.0],
            "{method:?}"
        );
    }
    // A broken device matrix is refused.
    let offsets = CsrOffsets::U32(DeviceBuffer::from_host(&gpu, &[0u32, 2, 1]).unwrap());
    let columns = DeviceBuffer::from_host(&gpu, &[0i32]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &[1.0f32]).unwrap();
    assert!(CsrMatrix::from_device(&gpu, 2, 2, offsets, columns, values).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_typed_errors_and_write_nothing() {
    let gpu = gpu();
    let a = CsrMatrix::from_host(&gpu, 2, 3, &[0u32, 1, 2], &[0, 2], &[1.0f64, 2.0]).unwrap();
    let x = DeviceBuffer::from_host(&gpu, &[1.0f64; 2]).unwrap(); // cols is 3
    let mut y = DeviceBuffer::from_host(&gpu, &[9.0f64; 2]).unwrap();
    let error = linalg::spmv::spmv_into(
        &gpu,
        &a,
        x.view(),
        1.0,
        0.0,
        y.view_mut(),
        SpmvAlgorithm::MergePath,
    );
    assert!(
        matches!(error, Err(Error::LengthMismatch { .. })),
        "{error:?}"
    );
    let x = DeviceBuffer::from_host(&gpu, &[1.0f64; 3]).unwrap();
    let error = linalg::spmv::spmv_into(
        &gpu,
        &a,
        x.view(),
        1.0,
        0.0,
        y.view_mut(),
        SpmvAlgorithm::SegmentedScan,
    );
    assert!(matches!(error, Err(Error::Unsupported(_))), "{error:?}");
    assert_eq!(y.to_host(&gpu).unwrap(), vec![9.0; 2]);
    assert!(CsrMatrix::from_host(&gpu, 2, 3, &[0u32, 1, 2], &[0, 3], &[1.0f64, 2.0]).is_err());
}

/// Past 2^31 non-zeros: 64-bit offsets. A pattern-like matrix (every value
/// 1, x all ones except x[0] = 2) whose rows sum to their length plus the
/// count of column-0 entries, checked exactly; rows of 2^20 and 2^21 + 1
/// entries. Needs about 17.2 GB of device memory and as much host memory.
#[test]
#[ignore = "needs a CUDA GPU; large: > 2^31 non-zeros"]
fn past_2_31_nonzeros() {
    let gpu = gpu();
    let rows = 2049usize;
    let cols = 1 << 16;
    let lengths: Vec<u64> = (0..rows as u64)
        .map(|r| if r % 2 == 0 { 1 << 20 } else { (1 << 21) + 1 })
        .collect();
    let mut offsets = vec![0u64];
    for l in &lengths {
        offsets.push(offsets.last().unwrap() + l);
    }
    let nnz = *offsets.last().unwrap();
    assert!(nnz > 1 << 31);
    let columns: Vec<i32> = (0..nnz)
        .map(|k| (k.wrapping_mul(2_654_435_761) % cols as u64) as i32)
        .collect();
    let values = vec![1.0f32; nnz as usize];
    let a = CsrMatrix::from_host(&gpu, rows, cols, &offsets, &columns, &values).unwrap();
    assert!(matches!(a.offsets(), CsrOffsets::U64(_)));
    drop(values);
    let mut x = vec![1.0f32; cols];
    x[0] = 2.0;
    let expected: Vec<f64> = (0..rows)
        .map(|r| {
            let zeros = columns[offsets[r] as usize..offsets[r + 1] as usize]
                .iter()
                .filter(|&&c| c == 0)
                .count();
            (lengths[r] + zeros as u64) as f64
        })
        .collect();
    let x = DeviceBuffer::from_host(&gpu, &x).unwrap();
    for method in [
        SpmvAlgorithm::MergePath,
        SpmvAlgorithm::Vector,
        SpmvAlgorithm::Scalar,
    ] {
        let y = linalg::spmv::spmv(&gpu, &a, x.view(), method)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        for r in 0..rows {
            // Sums of ones below 2^24 per partial are exact; a row's total
            // (≤ 2^22) is exact in f32.
            assert_eq!(y[r] as f64, expected[r], "{method:?} row {r}");
        }
    }
}
