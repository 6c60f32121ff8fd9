//! SpMV without a GPU: CSR validation, the Matrix Market reader on small
//! inline files, the CPU reference against a dense product, and the
//! merge-path search against a step-by-step merge.

use linalg::spmv::merge_path::{merge_path_search, merge_tile_steps, merge_tiles};
use linalg::spmv::{
    dense_matvec, parse_matrix_market, validate_csr, HostCsr, MatrixMarketProblem, SpmvAlgorithm,
};
use proptest::prelude::*;

/// A random CSR: rows with 0..max_len entries (some empty), columns random
/// with repeats.
fn random_csr(rows: usize, cols: usize, max_len: usize, seed: u64) -> HostCsr<f64> {
    let mut rng = parprims_testkit::rng::SplitMix64::new(seed);
    let mut offsets = vec![0u64];
    let mut columns = Vec::new();
    let mut values = Vec::new();
    for _ in 0..rows {
        let len = if rng.below(4) == 0 {
            0
        } else {
            rng.below(max_len as u64 + 1) as usize
        };
        for _ in 0..len {
            columns.push(rng.below(cols as u64) as i32);
            values.push((rng.below(2001) as f64 - 1000.0) / 8.0);
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

proptest! {
    #[test]
    fn cpu_spmv_matches_dense(rows in 1usize..40, cols in 1usize..40, max_len in 0usize..12, seed in any::<u64>(), beta_zero in any::<bool>()) {
        let a = random_csr(rows, cols, max_len, seed);
        prop_assert!(a.validate().is_ok());
        let dense = a.to_dense().unwrap();
        let x: Vec<f64> = (0..cols).map(|c| c as f64 * 0.25 - 3.0).collect();
        let y0: Vec<f64> = (0..rows).map(|r| r as f64).collect();
        let (alpha, beta) = (1.5, if beta_zero { 0.0 } else { -2.0 });
        let (mut sparse, mut full) = (y0.clone(), y0.clone());
        a.spmv(&x, alpha, beta, &mut sparse).unwrap();
        dense_matvec(&dense, rows, cols, &x, alpha, beta, &mut full).unwrap();
        // Values are multiples of 1/8 and x of 1/4: every sum is exact.
        prop_assert_eq!(sparse, full);
    }

    #[test]
    fn merge_path_search_matches_a_step_by_step_merge(lengths in prop::collection::vec(0u64..6, 0..60)) {
        let mut offsets = vec![0u64];
        for l in &lengths { offsets.push(offsets.last().unwrap() + l); }
        let (rows, nnz) = (lengths.len() as u64, *offsets.last().unwrap());
        // Walk the merge: a row end before non-zero j when offsets[r + 1] <= j.
        let (mut r, mut j) = (0u64, 0u64);
        for diagonal in 0..=rows + nnz {
            prop_assert_eq!(merge_path_search(diagonal, &offsets), r, "diagonal {}", diagonal);
            if r < rows && offsets[r as usize + 1] <= j { r += 1 } else { j += 1 }
        }
    }
}

#[test]
fn merge_tiles_cover_rows_plus_nonzeros() {
    assert_eq!(merge_tiles(0, 0), 1);
    assert_eq!(
        merge_tiles(1 << 22, 32 << 22),
        (33u64 << 22).div_ceil(merge_tile_steps())
    );
}

#[test]
fn validation_names_the_problem() {
    // (offsets, columns, values, what the message names), rows 2, cols 3.
    let cases: [(&[u64], &[i32], usize, &str); 6] = [
        (&[0, 1], &[0], 1, "offsets"),
        (&[1, 1, 2], &[0, 1], 2, "offsets[0]"),
        (&[0, 2, 1], &[0, 1], 2, "row 1"),
        (&[0, 1, 3], &[0, 1], 2, "last offset"),
        (&[0, 1, 2], &[0, -1], 2, "columns[1]"),
        (&[0, 1, 2], &[0, 1], 3, "values"),
    ];
    for (offsets, columns, values, names) in cases {
        let e = validate_csr(2, 3, offsets, columns, values)
            .unwrap_err()
            .to_string();
        assert!(e.contains(names), "{e}");
    }
    assert!(validate_csr(1, (i32::MAX as usize) + 2, &[0u64, 0], &[], 0).is_err());
    assert!(validate_csr(0, 0, &[0u32], &[], 0).is_ok());
    // Duplicates are allowed.
    assert!(validate_csr(1, 2, &[0u32, 3], &[1, 1, 1], 3).is_ok());
}

#[test]
fn algorithms_and_types() {
    assert!(SpmvAlgorithm::all().iter().all(|a| a.supports::<f32>()));
    assert!(!SpmvAlgorithm::SegmentedScan.supports::<f64>());
    assert_eq!(SpmvAlgorithm::default(), SpmvAlgorithm::MergePath);
}

#[test]
fn matrix_market_general_real_with_comments_and_duplicates() {
    let text = "%%MatrixMarket matrix coordinate real general\n%comment\n\n% another\n3 4 5\n1 1 1.0\n3 4 2.5e0\n1 1 -0.5\n2 2 4\n3 1 1e-1\n";
    let a = parse_matrix_market::<f64>(text).unwrap();
    assert_eq!((a.rows, a.cols, a.nnz()), (3, 4, 5));
    assert_eq!(a.offsets, vec![0, 2, 3, 5]);
    assert_eq!(a.columns, vec![0, 0, 1, 3, 0]);
    assert_eq!(a.values, vec![1.0, -0.5, 4.0, 2.5, 0.1]);
}

#[test]
fn matrix_market_integer_pattern_symmetric_skew() {
    let a = parse_matrix_market::<f32>(
        "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 -3\n2 1 7\n",
    )
    .unwrap();
    assert_eq!(a.to_dense().unwrap(), vec![0.0, -3.0, 7.0, 0.0]);
    let a = parse_matrix_market::<f32>(
        "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n",
    )
    .unwrap();
    assert_eq!(a.to_dense().unwrap(), vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
    let a = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n3 1 5\n3 2 -1\n",
    )
    .unwrap();
    assert_eq!(
        a.to_dense().unwrap(),
        vec![2.0, 0.0, 5.0, 0.0, 0.0, -1.0, 5.0, -1.0, 0.0]
    );
    assert_eq!(a.nnz(), 5);
    let a = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n",
    )
    .unwrap();
    assert_eq!(a.to_dense().unwrap(), vec![0.0, -3.0, 3.0, 0.0]);
    // Upper-case keywords are accepted.
    assert!(
        parse_matrix_market::<f32>("%%MatrixMarket MATRIX Coordinate Real General\n1 1 0\n")
            .is_ok()
    );
}

#[test]
fn matrix_market_errors_carry_line_numbers() {
    let problem = |text: &str| {
        let e = parse_matrix_market::<f32>(text).unwrap_err();
        (e.line, e.problem)
    };
    assert!(matches!(
        problem("hello\n1 1 0\n"),
        (1, MatrixMarketProblem::BadHeader(_))
    ));
    assert!(matches!(
        problem(""),
        (0, MatrixMarketProblem::BadHeader(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix array real general\n1 1\n1\n"),
        (1, MatrixMarketProblem::Unsupported(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate complex general\n1 1 0\n"),
        (1, MatrixMarketProblem::Unsupported(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n"),
        (1, MatrixMarketProblem::Unsupported(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n% c\n2 x 1\n"),
        (3, MatrixMarketProblem::BadSize(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n1 z 2\n"),
        (4, MatrixMarketProblem::BadEntry(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n1 1\n"),
        (4, MatrixMarketProblem::BadEntry(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n"),
        (3, MatrixMarketProblem::IndexOutOfRange(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n"),
        (3, MatrixMarketProblem::IndexOutOfRange(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n"),
        (3, MatrixMarketProblem::NotLowerTriangle(_))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n"),
        (4, MatrixMarketProblem::TooManyEntries(1))
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n"),
        (
            4,
            MatrixMarketProblem::TooFewEntries {
                expected: 3,
                found: 1
            }
        )
    ));
    assert!(matches!(
        problem("%%MatrixMarket matrix coordinate real general\n% only a comment\n"),
        (3, MatrixMarketProblem::BadSize(_))
    ));
    let message =
        parse_matrix_market::<f32>("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n")
            .unwrap_err()
            .to_string();
    assert!(message.contains("line 3"), "{message}");
}

proptest! {
    #[test]
    fn matrix_market_round_trip(rows in 1usize..20, cols in 1usize..20, max_len in 0usize..6, seed in any::<u64>()) {
        let a = random_csr(rows, cols, max_len, seed);
        let mut text = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", a.nnz());
        for r in 0..rows {
            for k in a.offsets[r] as usize..a.offsets[r + 1] as usize {
                text.push_str(&format!("{} {} {}\n", r + 1, a.columns[k] + 1, a.values[k]));
            }
        }
        prop_assert_eq!(parse_matrix_market::<f64>(&text).unwrap(), a);
    }
}

/// The generator against an independent implementation of the recipe in
/// `docs/spmv.md` (Python, integers and doubles): row lengths, the first
/// sorted columns, the first values and x, bit for bit.
#[test]
fn generator_follows_the_documented_recipe() {
    use linalg::spmv::generate::{generate, generate_x, RowLengths, SEED};
    let a = generate::<f32>(12, 1000, RowLengths::PowerLaw, SEED);
    let lengths: Vec<u64> = a.offsets.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        lengths,
        vec![16, 36, 19, 11, 14, 11, 47, 103, 21, 20, 12, 11]
    );
    assert_eq!(&a.columns[..8], &[42, 91, 269, 300, 341, 405, 439, 510]);
    assert_eq!(
        a.values[..3]
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        vec![
            u32::from_le_bytes([0xff, 0xaf, 0xd2, 0x3d]),
            u32::from_le_bytes([0x7f, 0x42, 0x63, 0x3f]),
            u32::from_le_bytes([0xc3, 0xb7, 0x8a, 0xbe]),
        ]
    );
    let x = generate_x::<f32>(4, SEED);
    assert_eq!(x, vec![-0.057_413_15, -0.48323083, 0.48196083, 0.90970814]);
    let uniform = generate::<f64>(5, 7, RowLengths::Uniform(32), SEED);
    assert_eq!(uniform.nnz(), 160);
    assert!(uniform.validate().is_ok());
    let banded = generate::<f64>(5, 4, RowLengths::Banded(1), SEED);
    assert_eq!(banded.offsets, vec![0, 2, 5, 8, 10, 11]);
    assert_eq!(banded.columns, vec![0, 1, 0, 1, 2, 1, 2, 3, 2, 3, 3]);
}
