//! The SpMV lab: `y = A·x` over CSR with every GPU method of
//! `linalg::spmv` (merge path, vector, scalar, segmented scan) on the
//! benchmark's generated matrices.
//!
//! **Matrices** (`linalg::spmv::generate`, reproducible outside Rust; the
//! recipe is in `docs/spmv.md` and the module docs): rows = cols = n (the
//! benchmark's n = 2^22), seed `linalg::spmv::generate::SEED`;
//! `uniform32`: every row 32 entries; `powerlaw`: Pareto(α = 1.5, x_m =
//! 32/3) row lengths (mean about 32). Columns are drawn by a counter hash of
//! the entry's position and sorted within each row, values and x are
//! `2·unit − 1` in [−1, 1). `i32` column indices, `u32` row offsets, α = 1,
//! β = 0. Shapes are written `{rows}x{cols}/{kind}`.
//!
//! **Bytes**: `linalg::spmv::spmv_bytes_moved`, for `f32`: 8·nnz +
//! 4·(rows + 1) + 4·rows + 4·cols (values and columns, offsets, y, x).
//!
//! **Check**: each row of y against the CPU sum in `f64`, within
//! 4·ε·√(len + 1)·Σ|a·x| of the row (any summation order is inside it; a
//! missing or doubled entry is not).

use gpu_core::{DeviceBuffer, Element, ElementType, Gpu, Result};
use linalg::spmv::generate::{generate, generate_x, RowLengths, SEED};
use linalg::spmv::{CsrMatrix, HostCsr, SpmvAlgorithm, SpmvElement};
use parprims_testkit::bench::Repetitions;

use crate::check::Check;
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The SpMV's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "spmv",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| SpmvPlan::from_selection(selection, &BENCH_ROWS));

/// The benchmark's rows (= columns): 2^22.
pub const BENCH_ROWS: [usize; 1] = [1 << 22];

/// The tour's rows.
pub const TOUR_ROWS: usize = 1 << 18;

/// The generated matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 32 entries in every row.
    Uniform32,
    /// Pareto(1.5) row lengths, mean about 32.
    PowerLaw,
    /// A band of half-width 16 (33 entries per row inside).
    Banded33,
}

impl Kind {
    /// The benchmark's kinds.
    pub const ALL: [Kind; 2] = [Kind::Uniform32, Kind::PowerLaw];
    /// The example's kinds: the benchmark's and the band.
    pub const EXAMPLE: [Kind; 3] = [Kind::Uniform32, Kind::PowerLaw, Kind::Banded33];

    /// `uniform32`, `powerlaw` (the shape's suffix).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Uniform32 => "uniform32",
            Kind::PowerLaw => "powerlaw",
            Kind::Banded33 => "banded33",
        }
    }

    /// The generator's row lengths.
    pub fn lengths(self) -> RowLengths {
        match self {
            Kind::Uniform32 => RowLengths::Uniform(32),
            Kind::PowerLaw => RowLengths::PowerLaw,
            Kind::Banded33 => RowLengths::Banded(16),
        }
    }
}

/// The shape as records write it: `4194304x4194304/uniform32`.
pub fn shape(rows: usize, kind: Kind) -> String {
    format!("{rows}x{rows}/{}", kind.name())
}

/// The GPU methods, the default first.
pub const METHODS: [SpmvAlgorithm; 4] = [
    SpmvAlgorithm::MergePath,
    SpmvAlgorithm::Vector,
    SpmvAlgorithm::Scalar,
    SpmvAlgorithm::SegmentedScan,
];

/// A method's name in tables and CSV (`MergePath`, …).
pub fn method_name(method: SpmvAlgorithm) -> String {
    format!("{method:?}")
}

/// What an SpMV run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct SpmvPlan {
    /// Rows (= columns) of each matrix.
    pub rows: Vec<usize>,
    /// Matrix kinds.
    pub kinds: Vec<Kind>,
    /// `f32`, `f64`.
    pub types: Vec<ElementType>,
    /// GPU methods.
    pub methods: Vec<SpmvAlgorithm>,
}

impl SpmvPlan {
    /// A plan from a selection (`--sizes` are row counts), validated
    /// without a GPU.
    pub fn from_selection(selection: &Selection, default_rows: &[usize]) -> Result<SpmvPlan> {
        let methods = selection.methods(&METHODS, |&m| method_name(m))?;
        let rows = selection.counts(default_rows)?;
        for &r in &rows {
            if r == 0 || r > linalg::spmv::MAX_COLS {
                return Err(gpu_core::Error::invalid(
                    "sizes",
                    format!(
                        "{r} rows: 1 to {} (columns are i32)",
                        linalg::spmv::MAX_COLS
                    ),
                ));
            }
        }
        Ok(SpmvPlan {
            rows,
            kinds: Kind::ALL.to_vec(),
            types: selection.types(&[ElementType::F32], &[ElementType::F32, ElementType::F64])?,
            methods,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.rows.len() * self.kinds.len() * self.types.len() * self.methods.len()) as u64
    }
}

/// Bytes an SpMV of `a` moves (u32 offsets below 2^31 non-zeros).
pub fn bytes<T: SpmvElement>(a: &HostCsr<T>) -> f64 {
    let offset_bytes = if (a.nnz() as u64) < linalg::spmv::OFFSETS_64_FROM {
        4
    } else {
        8
    };
    linalg::spmv::spmv_bytes_moved(a.rows, a.cols, a.nnz(), T::BYTES, offset_bytes) as f64
}

/// The reference: each row's sum in f64 and its bound (see the module).
pub struct Expected {
    sums: Vec<f64>,
    bounds: Vec<f64>,
}

/// The reference of `a · x`.
pub fn expected<T: SpmvElement>(a: &HostCsr<T>, x: &[T]) -> Expected {
    let epsilon = if T::BYTES == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let mut sums = Vec::with_capacity(a.rows);
    let mut bounds = Vec::with_capacity(a.rows);
    for r in 0..a.rows {
        let (begin, end) = (a.offsets[r] as usize, a.offsets[r + 1] as usize);
        let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
        for k in begin..end {
            let term = a.values[k].to_f64() * x[a.columns[k] as usize].to_f64();
            sum += term;
            magnitude += term.abs();
        }
        sums.push(sum);
        bounds.push(
            4.0 * epsilon * ((end - begin + 1) as f64).sqrt() * magnitude + f64::MIN_POSITIVE,
        );
    }
    Expected { sums, bounds }
}

/// Compares y with the reference, row by row.
pub fn check_rows<T: Element>(y: &[T], expected: &Expected) -> Check {
    if y.len() != expected.sums.len() {
        return Check::Fail(format!(
            "{} rows where the reference has {}",
            y.len(),
            expected.sums.len()
        ));
    }
    let bad: Vec<usize> = (0..y.len())
        .filter(|&r| {
            // A NaN difference fails too.
            let within = (y[r].to_f64() - expected.sums[r]).abs() <= expected.bounds[r];
            !within
        })
        .collect();
    match bad.first() {
        None => Check::Pass,
        Some(&r) => Check::Fail(format!(
            "{} of {} rows differ; first [{r}]: got {}, expected {} (bound {:.3e})",
            bad.len(),
            y.len(),
            y[r],
            expected.sums[r],
            expected.bounds[r]
        )),
    }
}

struct SpmvCase<'a, T: SpmvElement> {
    method: SpmvAlgorithm,
    a: &'a CsrMatrix<T>,
    x: &'a DeviceBuffer<T>,
    y: DeviceBuffer<T>,
    expected: &'a Expected,
}

impl<T: SpmvElement> GpuCase for SpmvCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.y.view_mut().fill(gpu, T::poison())
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        linalg::spmv::spmv_into(
            gpu,
            self.a,
            self.x.view(),
            T::one(),
            T::zero(),
            self.y.view_mut(),
            self.method,
        )
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(check_rows(&self.y.to_host(gpu)?, self.expected))
    }
}

/// Runs a plan.
pub fn run(lab: &Lab, plan: &SpmvPlan, progress: &Progress) -> Vec<Row> {
    let mut out = Vec::new();
    for &t in &plan.types {
        for &rows in &plan.rows {
            for &kind in &plan.kinds {
                out.extend(match t {
                    ElementType::F64 => run_matrix::<f64>(lab, plan, rows, kind, progress),
                    _ => run_matrix::<f32>(lab, plan, rows, kind, progress),
                });
            }
        }
    }
    out
}

fn run_matrix<T: SpmvElement>(
    lab: &Lab,
    plan: &SpmvPlan,
    rows: usize,
    kind: Kind,
    progress: &Progress,
) -> Vec<Row> {
    progress.start(&format!("spmv {} {}: matrix", T::SUFFIX, shape(rows, kind)));
    let host = generate::<T>(rows, rows, kind.lengths(), SEED);
    let x = generate_x::<T>(rows, SEED);
    run_host(lab, &shape(rows, kind), &host, &x, &plan.methods, progress)
}

/// Every method in `methods` on a host matrix `a` and vector `x` (a
/// user's matrix, or a generated one): uploads them, computes the
/// reference, and measures and checks each method (one progress step
/// each). Rows are labelled `shape`.
pub fn run_host<T: SpmvElement>(
    lab: &Lab,
    shape: &str,
    a: &HostCsr<T>,
    x: &[T],
    methods: &[SpmvAlgorithm],
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    progress.start(&format!("spmv {t} {shape}: CPU reference"));
    let expected = expected(a, x);
    let gpu = lab.gpu();
    let uploaded = a
        .upload(gpu)
        .and_then(|device| Ok((device, DeviceBuffer::from_host(gpu, x)?)));
    let mut out = Vec::new();
    let (device, x_device) = match uploaded {
        Ok(buffers) => buffers,
        Err(error) => {
            for &method in methods {
                progress.step();
                out.push(Spec::new("spmv", method_name(method), t, shape, 0.0).failed_row(&error));
            }
            return out;
        }
    };
    for &method in methods {
        progress.start(&format!("spmv {t} {shape}: {}", method_name(method)));
        let spec = Spec::new("spmv", method_name(method), t, shape, bytes(a));
        if !method.supports::<T>() {
            progress.step();
            continue;
        }
        let case = DeviceBuffer::<T>::poisoned(gpu, a.rows).map(|y| SpmvCase {
            method,
            a: &device,
            x: &x_device,
            y,
            expected: &expected,
        });
        out.push(measure_method(lab, &spec, case, false, progress));
    }
    out
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = SpmvPlan {
        rows: vec![lab.tour_len(TOUR_ROWS)],
        kinds: Kind::ALL.to_vec(),
        types: vec![ElementType::F32],
        methods: METHODS.to_vec(),
    };
    run(lab, &plan, progress)
}

/// The CPU reference at `rows` rows of each kind, timed, checked against
/// the f64 row sums.
pub fn cpu_rows(rows: usize, reps: Repetitions) -> Vec<Row> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        let a = generate::<f32>(rows, rows, kind.lengths(), SEED);
        let x = generate_x::<f32>(rows, SEED);
        let spec = Spec::new("spmv", "cpu", "f32", shape(rows, kind), bytes(&a));
        let mut y = vec![0.0f32; rows];
        let row = measure_cpu(&spec, reps, || a.spmv(&x, 1.0, 0.0, &mut y));
        let reference = expected(&a, &x);
        out.push(row.checked_by(|| check_rows(&y, &reference)));
    }
    out
}

fn cpu(_seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(1 << 16, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_names_and_checks() {
        let plan = SpmvPlan::from_selection(&Selection::default(), &BENCH_ROWS).unwrap();
        assert_eq!(plan.cases(), 2 * 4);
        assert_eq!(shape(1 << 22, Kind::PowerLaw), "4194304x4194304/powerlaw");
        assert_eq!(method_name(SpmvAlgorithm::MergePath), "MergePath");
        let one = Selection {
            algos: Some("mergepath".into()),
            sizes: Some("1000".into()),
            ..Selection::default()
        };
        let plan = SpmvPlan::from_selection(&one, &BENCH_ROWS).unwrap();
        assert_eq!(
            (plan.methods.clone(), plan.rows.clone()),
            (vec![SpmvAlgorithm::MergePath], vec![1000])
        );
        let zero = Selection {
            sizes: Some("0".into()),
            ..Selection::default()
        };
        assert!(SpmvPlan::from_selection(&zero, &BENCH_ROWS).is_err());

        let a = generate::<f32>(300, 300, RowLengths::PowerLaw, SEED);
        let x = generate_x::<f32>(300, SEED);
        let reference = expected(&a, &x);
        let mut y = vec![0.0f32; 300];
        a.spmv(&x, 1.0, 0.0, &mut y).unwrap();
        assert!(check_rows(&y, &reference).passed());
        y[7] += 0.01;
        assert!(check_rows(&y, &reference).failed());
        assert_eq!(
            bytes(&a),
            (8 * a.nnz() + 4 * 301 + 4 * 300 + 4 * 300) as f64
        );
    }

    #[test]
    fn cpu_rows_pass() {
        let rows = cpu_rows(
            1000,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.check.passed()), "{rows:?}");
    }
}
