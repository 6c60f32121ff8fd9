//! The transpose lab: the CPU loop and every GPU algorithm of
//! `linalg::transpose` (naive, 32 × 32 tile, 32 × 33 padded tile, tuned).
//!
//! Bytes moved: every element read once and written once,
//! [`linalg::transpose_bytes_moved`] = 2·R·C·size (8·R·C for `f32`).

use gpu_core::{Element, ElementType, Result};
use linalg::{Matrix, TransposeAlgorithm};
use parprims_testkit::bench::Repetitions;

use crate::check::{compare, Check};
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, Spec};
use crate::select::Selection;
use crate::sizes::dims_shape;
use crate::with_element_type;
use crate::{Lab, Row};

use super::case::UploadedCase;
use super::{cpu_reference, measure_method, rows_per_shape, Primitive};

/// The transpose's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "transpose",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| TransposePlan::from_selection(selection, &BENCH_DIMS));

/// Element types with transpose kernels (4- and 8-byte).
pub const TYPES: [ElementType; 6] = ElementType::ALL;

/// The benchmark's default shapes: the lab's 1k and 10k, powers of two up to
/// the headline 16384².
pub const BENCH_DIMS: [(usize, usize); 5] = [
    (1024, 1024),
    (4096, 4096),
    (10_000, 10_000),
    (8192, 8192),
    (16_384, 16_384),
];

/// The lab's shapes (the examples' default).
pub const LAB_DIMS: [(usize, usize); 2] = [(1000, 1000), (10_000, 10_000)];

/// The tour's shape.
pub const TOUR_DIMS: (usize, usize) = (4096, 4096);

/// The name a method has in tables and CSV (`TiledPadded`).
pub fn method_name(algorithm: TransposeAlgorithm) -> String {
    format!("{algorithm:?}")
}

/// What a transpose run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposePlan {
    /// `(rows, cols)` of the input.
    pub dims: Vec<(usize, usize)>,
    /// Element types.
    pub types: Vec<ElementType>,
    /// GPU algorithms.
    pub algorithms: Vec<TransposeAlgorithm>,
    /// Time the CPU reference as a row.
    pub cpu_row: bool,
    /// Also time each method with its host↔device copies.
    pub copies: bool,
}

impl TransposePlan {
    /// A plan from a selection, validated without a GPU.
    pub fn from_selection(
        selection: &Selection,
        default_dims: &[(usize, usize)],
    ) -> Result<TransposePlan> {
        let names: Vec<String> = TransposeAlgorithm::ALL
            .iter()
            .map(|a| method_name(*a))
            .collect();
        let all: Vec<usize> = (0..names.len()).collect();
        let dims = selection.dims(default_dims)?;
        let types = selection.types(&[ElementType::F32], &TYPES)?;
        for &(rows, cols) in &dims {
            for t in &types {
                let bytes = if matches!(t, ElementType::I64 | ElementType::U64 | ElementType::F64) {
                    8
                } else {
                    4
                };
                linalg::check_transpose_shapes((rows, cols), (cols, rows), bytes)?;
            }
        }
        Ok(TransposePlan {
            dims,
            types,
            algorithms: selection
                .algos(&names, &all)?
                .into_iter()
                .map(|i| TransposeAlgorithm::ALL[i])
                .collect(),
            cpu_row: false,
            copies: false,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.dims.len() * self.types.len() * (self.algorithms.len() + usize::from(self.cpu_row)))
            as u64
    }
}

/// Bytes a transpose of `rows × cols` elements of `T` moves.
pub fn bytes<T: Element>(rows: usize, cols: usize) -> f64 {
    linalg::transpose_bytes_moved(rows, cols, T::BYTES) as f64
}

/// Runs a plan.
pub fn run(lab: &Lab, plan: &TransposePlan, progress: &Progress) -> Vec<Row> {
    rows_per_shape(&plan.types, &plan.dims, 0x7a_0000, |t, dims, stream| {
        with_element_type!(t, run_shape(lab, plan, dims, stream, progress))
    })
}

fn run_shape<T: Element>(
    lab: &Lab,
    plan: &TransposePlan,
    (rows, cols): (usize, usize),
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    let shape = dims_shape(rows, cols);
    progress.start(&format!("transpose {t} {shape}: inputs and CPU reference"));
    let host = values::<T>(rows * cols, derive_seed(lab.seed(), stream));
    let mut rows_out = Vec::new();
    let mut expected = Vec::new();
    let reference = Spec::new("transpose", "cpu", t, shape.clone(), bytes::<T>(rows, cols));
    rows_out.extend(cpu_reference(
        lab,
        &reference,
        plan.cpu_row,
        progress,
        || {
            expected = linalg::cpu::transpose(&host, rows, cols)?;
            Ok(())
        },
    ));
    let gpu = lab.gpu();
    let mut input = match Matrix::from_host(gpu, rows, cols, &host) {
        Ok(input) => input,
        Err(error) => {
            for &algorithm in &plan.algorithms {
                let spec = Spec::new("transpose", method_name(algorithm), t, shape.clone(), 0.0);
                rows_out.push(spec.failed_row(&error));
                progress.step();
            }
            return rows_out;
        }
    };
    for &algorithm in &plan.algorithms {
        let method = method_name(algorithm);
        progress.start(&format!("transpose {t} {shape}: {method}"));
        let spec = Spec::new(
            "transpose",
            method,
            t,
            shape.clone(),
            bytes::<T>(rows, cols),
        );
        let case = Matrix::<T>::poisoned(gpu, cols, rows).map(|output| {
            UploadedCase::new(
                &host,
                &mut input,
                output,
                &expected,
                1,
                move |gpu, input, output| {
                    linalg::transpose(gpu, input.view(), output.view_mut(), algorithm)
                },
            )
        });
        rows_out.push(measure_method(lab, &spec, case, plan.copies, progress));
    }
    rows_out
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = TransposePlan {
        dims: vec![lab.tour_dims(TOUR_DIMS)],
        types: vec![ElementType::F32],
        algorithms: TransposeAlgorithm::ALL.to_vec(),
        cpu_row: true,
        copies: true,
    };
    run(lab, &plan, progress)
}

/// The CPU reference at `rows × cols`, timed; checked by transposing back.
pub fn cpu_rows(rows: usize, cols: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let host = values::<f32>(rows * cols, derive_seed(seed, 0x7a_0001));
    let spec = Spec::new(
        "transpose",
        "cpu",
        "f32",
        dims_shape(rows, cols),
        bytes::<f32>(rows, cols),
    );
    let mut result = Vec::new();
    let row = measure_cpu(&spec, reps, || {
        result = linalg::cpu::transpose(&host, rows, cols)?;
        Ok(())
    });
    vec![
        row.checked_by(|| match linalg::cpu::transpose(&result, cols, rows) {
            Ok(back) => {
                let corner = if rows > 1 && cols > 1 {
                    // out[c][r] = in[r][c] at one off-diagonal spot.
                    if result[rows] == host[1] {
                        Check::Pass
                    } else {
                        Check::Fail("out[1][0] is not in[0][1]".into())
                    }
                } else {
                    Check::Pass
                };
                corner.and(compare(&back, &host, 1))
            }
            Err(error) => crate::check::failed(&error),
        }),
    ]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_DIMS.0, TOUR_DIMS.1, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_bytes() {
        let plan = TransposePlan::from_selection(&Selection::default(), &BENCH_DIMS).unwrap();
        assert_eq!(plan.algorithms.len(), 4);
        assert_eq!(plan.types, vec![ElementType::F32]);
        assert_eq!(bytes::<f32>(16_384, 16_384), 8.0 * 16_384.0 * 16_384.0);
        let odd = Selection {
            sizes: Some("1x7,33x65".into()),
            algos: Some("tiled-padded".into()),
            ..Selection::default()
        };
        let plan = TransposePlan::from_selection(&odd, &BENCH_DIMS).unwrap();
        assert_eq!(plan.dims, vec![(1, 7), (33, 65)]);
        assert_eq!(plan.algorithms, vec![TransposeAlgorithm::TiledPadded]);
    }

    #[test]
    fn cpu_reference_transposes_back() {
        let rows = cpu_rows(
            301,
            77,
            2,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert!(rows[0].check.passed(), "{:?}", rows[0].check);
    }
}
