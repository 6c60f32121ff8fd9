//! The matrix–vector lab: `y = A·x` and `y = Aᵀ·x` with the CPU loop and
//! every GPU algorithm of `linalg::matvec` (global, shared-memory tiles,
//! tuned), plus cuBLAS `sgemv`/`dgemv` side by side when the `cublas`
//! feature is on.
//!
//! Bytes moved: A, x and y once each, [`linalg::matvec_bytes_moved`] =
//! (R·C + R + C)·size.

use gpu_core::{DeviceBuffer, ElementType, Gpu, Result};
use linalg::{Matrix, MatvecAlgorithm, MatvecElement, Transpose};
use parprims_testkit::bench::Repetitions;

use crate::check::compare;
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, Spec};
use crate::select::Selection;
use crate::sizes::dims_shape;
use crate::{Lab, Row};

use super::case::UploadedCase;
use super::{cpu_reference, measure_method, rows_per_shape, Primitive};

/// The matvec's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "matvec",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| MatvecPlan::from_selection(selection, &BENCH_DIMS));

/// Element types matvec takes.
pub const TYPES: [ElementType; 3] = [ElementType::F32, ElementType::F64, ElementType::I32];

/// The benchmark's default shapes, up to the headline 16384².
pub const BENCH_DIMS: [(usize, usize); 5] = [
    (1024, 1024),
    (4096, 4096),
    (8192, 8192),
    (10_000, 10_000),
    (16_384, 16_384),
];

/// The lab's shapes (the example's default).
pub const LAB_DIMS: [(usize, usize); 2] = [(1000, 1000), (10_000, 10_000)];

/// The tour's shape.
pub const TOUR_DIMS: (usize, usize) = (4096, 4096);

/// A GPU method: ours, or cuBLAS's gemv (built with the `cublas` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// A `linalg` algorithm.
    Ours(MatvecAlgorithm),
    /// `cublasSgemv` / `cublasDgemv` (floats only).
    Cublas,
}

/// Every method this build has, ours first.
pub fn methods() -> Vec<Method> {
    let mut all: Vec<Method> = MatvecAlgorithm::all()
        .into_iter()
        .map(Method::Ours)
        .collect();
    if cfg!(feature = "cublas") {
        all.push(Method::Cublas);
    }
    all
}

/// The name of a method (`Global`, `SharedTiled256`, `Tuned`, `cuBLAS`).
pub fn method_base_name(method: Method) -> String {
    match method {
        Method::Ours(MatvecAlgorithm::SharedTiled { tile }) => format!("SharedTiled{tile}"),
        Method::Ours(algorithm) => format!("{algorithm:?}"),
        Method::Cublas => "cuBLAS".to_owned(),
    }
}

/// The name a method has in tables and CSV: `Ax/Tuned`, `ATx/cuBLAS`.
pub fn method_name(op: Transpose, method: Method) -> String {
    format!("{}/{}", op.name(), method_base_name(method))
}

/// What a matvec run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct MatvecPlan {
    /// `(rows, cols)` of A.
    pub dims: Vec<(usize, usize)>,
    /// Element types.
    pub types: Vec<ElementType>,
    /// Products.
    pub ops: Vec<Transpose>,
    /// GPU methods.
    pub methods: Vec<Method>,
    /// Time the CPU reference as a row.
    pub cpu_row: bool,
    /// Also time each method with its host↔device copies.
    pub copies: bool,
}

impl MatvecPlan {
    /// A plan from a selection, validated without a GPU. `--algos` takes
    /// method names (`Tuned`, `SharedTiled256`, `cuBLAS`) for both products.
    pub fn from_selection(
        selection: &Selection,
        default_dims: &[(usize, usize)],
    ) -> Result<MatvecPlan> {
        let methods = selection.methods(&methods(), |m| method_base_name(*m))?;
        for method in &methods {
            if let Method::Ours(algorithm) = method {
                algorithm.validate()?;
            }
        }
        let dims = selection.dims(default_dims)?;
        for &(rows, cols) in &dims {
            linalg::check_matvec_lengths(rows, cols, cols, rows, Transpose::No)?;
        }
        Ok(MatvecPlan {
            dims,
            types: selection.types(&[ElementType::F32], &TYPES)?,
            ops: vec![Transpose::No, Transpose::Yes],
            methods,
            cpu_row: false,
            copies: false,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.dims.len()
            * self.types.len()
            * self.ops.len()
            * (self.methods.len() + usize::from(self.cpu_row))) as u64
    }
}

/// Bytes a matvec of a `rows × cols` matrix of `T` moves.
pub fn bytes<T: MatvecElement>(rows: usize, cols: usize) -> f64 {
    linalg::matvec_bytes_moved(rows, cols, T::BYTES) as f64
}

/// cuBLAS's gemv for the element types it has.
trait Gemv: MatvecElement {
    /// `cublasSgemv` or `cublasDgemv`; `None` for a type cuBLAS has no gemv
    /// for.
    #[cfg(feature = "cublas")]
    const GEMV: Option<GemvFn<Self>>;
}

/// The signature of [`linalg::cublas_baseline::sgemv`] and `dgemv`.
#[cfg(feature = "cublas")]
type GemvFn<T> = fn(
    &linalg::cublas_baseline::CublasHandle,
    linalg::MatrixView<'_, T>,
    gpu_core::DeviceView<'_, T>,
    gpu_core::DeviceViewMut<'_, T>,
    Transpose,
) -> Result<()>;

impl Gemv for f32 {
    #[cfg(feature = "cublas")]
    const GEMV: Option<GemvFn<f32>> = Some(linalg::cublas_baseline::sgemv);
}
impl Gemv for f64 {
    #[cfg(feature = "cublas")]
    const GEMV: Option<GemvFn<f64>> = Some(linalg::cublas_baseline::dgemv);
}
impl Gemv for i32 {
    #[cfg(feature = "cublas")]
    const GEMV: Option<GemvFn<i32>> = None;
}

/// One method's product `y = op(A)·x`, with A and y given at each run.
struct Product<'a, T: Gemv> {
    x: &'a DeviceBuffer<T>,
    op: Transpose,
    method: Method,
    #[cfg(feature = "cublas")]
    handle: Option<&'a linalg::cublas_baseline::CublasHandle>,
}

impl<T: Gemv> Product<'_, T> {
    fn multiply(&self, gpu: &Gpu, a: &Matrix<T>, y: &mut DeviceBuffer<T>) -> Result<()> {
        let (x, op) = (self.x.view(), self.op);
        match self.method {
            Method::Ours(algorithm) => {
                linalg::matvec(gpu, a.view(), x, y.view_mut(), op, algorithm)
            }
            #[cfg(feature = "cublas")]
            Method::Cublas => match (self.handle, T::GEMV) {
                (Some(handle), Some(gemv)) => gemv(handle, a.view(), x, y.view_mut(), op),
                (None, _) => Err(gpu_core::Error::Unsupported("no cuBLAS handle".into())),
                (_, None) => Err(gpu_core::Error::Unsupported(
                    "cuBLAS has no integer gemv".into(),
                )),
            },
            #[cfg(not(feature = "cublas"))]
            Method::Cublas => Err(gpu_core::Error::Unsupported(
                "built without the cublas feature".into(),
            )),
        }
    }
}

/// Runs a plan.
pub fn run(lab: &Lab, plan: &MatvecPlan, progress: &Progress) -> Vec<Row> {
    rows_per_shape(&plan.types, &plan.dims, 0x3a_0000, |t, dims, stream| {
        with_linalg_type!(t, run_shape(lab, plan, dims, stream, progress))
    })
}

fn run_shape<T: Gemv>(
    lab: &Lab,
    plan: &MatvecPlan,
    (rows, cols): (usize, usize),
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    let shape = dims_shape(rows, cols);
    let mut out = Vec::new();
    progress.start(&format!("matvec {t} {shape}: inputs"));
    let a_host = values::<T>(rows * cols, derive_seed(lab.seed(), stream));
    let gpu = lab.gpu();
    let mut a = match Matrix::from_host(gpu, rows, cols, &a_host) {
        Ok(a) => Some(a),
        Err(error) => {
            out.push(Spec::new("matvec", "upload A", t, shape.clone(), 0.0).failed_row(&error));
            None
        }
    };
    #[cfg(feature = "cublas")]
    let handle: Option<std::result::Result<_, String>> =
        if plan.methods.contains(&Method::Cublas) && T::IS_FLOAT {
            // The reason is kept: a machine without libcublas says so in the row.
            Some(linalg::cublas_baseline::CublasHandle::new(gpu).map_err(|e| e.to_string()))
        } else {
            None
        };
    for &op in &plan.ops {
        let x_len = op.input_len(rows, cols);
        let x_host = values::<T>(x_len, derive_seed(lab.seed(), stream ^ 0x7e));
        let mut expected = Vec::new();
        let reference = Spec::new(
            "matvec",
            format!("{}/cpu", op.name()),
            t,
            shape.clone(),
            bytes::<T>(rows, cols),
        );
        progress.start(&format!("matvec {t} {shape}: {} CPU reference", op.name()));
        out.extend(cpu_reference(
            lab,
            &reference,
            plan.cpu_row,
            progress,
            || {
                expected = linalg::cpu::matvec(&a_host, rows, cols, &x_host, op)?;
                Ok(())
            },
        ));
        let Some(a) = a.as_mut() else {
            continue;
        };
        let x = match DeviceBuffer::from_host(gpu, &x_host) {
            Ok(x) => x,
            Err(error) => {
                out.push(Spec::new("matvec", "upload x", t, shape.clone(), 0.0).failed_row(&error));
                continue;
            }
        };
        for &method in &plan.methods {
            let name = method_name(op, method);
            progress.start(&format!("matvec {t} {shape}: {name}"));
            let spec = Spec::new("matvec", name, t, shape.clone(), bytes::<T>(rows, cols));
            if method == Method::Cublas && !T::IS_FLOAT {
                progress.step();
                continue;
            }
            #[cfg(feature = "cublas")]
            let handle = match (method, &handle) {
                (Method::Cublas, Some(Err(reason))) => {
                    let error = gpu_core::Error::Unsupported(reason.clone());
                    out.push(spec.failed_row(&error));
                    progress.step();
                    continue;
                }
                (_, Some(Ok(handle))) => Some(handle),
                _ => None,
            };
            let product = Product {
                x: &x,
                op,
                method,
                #[cfg(feature = "cublas")]
                handle,
            };
            let case = DeviceBuffer::<T>::poisoned(gpu, op.output_len(rows, cols)).map(|y| {
                UploadedCase::new(&a_host, &mut *a, y, &expected, x_len, move |gpu, a, y| {
                    product.multiply(gpu, a, y)
                })
            });
            out.push(measure_method(lab, &spec, case, plan.copies, progress));
        }
    }
    out
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = MatvecPlan {
        dims: vec![lab.tour_dims(TOUR_DIMS)],
        types: vec![ElementType::F32],
        ops: vec![Transpose::No, Transpose::Yes],
        methods: methods(),
        cpu_row: true,
        copies: true,
    };
    run(lab, &plan, progress)
}

/// The CPU reference at `rows × cols` for both products, timed; checked
/// against each other (Aᵀ·x through the transposed matrix).
pub fn cpu_rows(rows: usize, cols: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let a = values::<f32>(rows * cols, derive_seed(seed, 0x3a_0001));
    let x_rows = values::<f32>(rows, derive_seed(seed, 0x3a_0002));
    let shape = dims_shape(rows, cols);
    let mut out = Vec::new();
    for op in [Transpose::No, Transpose::Yes] {
        let x: Vec<f32> = match op {
            Transpose::No => x_rows.iter().cycle().take(cols).copied().collect(),
            Transpose::Yes => x_rows.clone(),
        };
        let spec = Spec::new(
            "matvec",
            format!("{}/cpu", op.name()),
            "f32",
            shape.clone(),
            bytes::<f32>(rows, cols),
        );
        let mut y = Vec::new();
        let row = measure_cpu(&spec, reps, || {
            y = linalg::cpu::matvec(&a, rows, cols, &x, op)?;
            Ok(())
        });
        // Independent route: the other product on the transposed matrix.
        let other = linalg::cpu::transpose(&a, rows, cols).and_then(|at| {
            let flipped = match op {
                Transpose::No => Transpose::Yes,
                Transpose::Yes => Transpose::No,
            };
            linalg::cpu::matvec(&at, cols, rows, &x, flipped)
        });
        out.push(row.checked_by(|| match other {
            Ok(other) => compare(&y, &other, x.len()),
            Err(error) => crate::check::failed(&error),
        }));
    }
    out
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_DIMS.0, TOUR_DIMS.1, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_names() {
        let plan = MatvecPlan::from_selection(&Selection::default(), &BENCH_DIMS).unwrap();
        assert_eq!(plan.ops.len(), 2);
        assert_eq!(plan.methods.len(), methods().len());
        assert_eq!(
            method_name(Transpose::Yes, Method::Ours(MatvecAlgorithm::Tuned)),
            "ATx/Tuned"
        );
        assert_eq!(
            method_base_name(Method::Ours(MatvecAlgorithm::SharedTiled { tile: 256 })),
            "SharedTiled256"
        );
        let one = Selection {
            algos: Some("tuned".into()),
            types: Some("f64".into()),
            ..Selection::default()
        };
        let plan = MatvecPlan::from_selection(&one, &[(3, 5)]).unwrap();
        assert_eq!(plan.methods, vec![Method::Ours(MatvecAlgorithm::Tuned)]);
        assert_eq!(plan.cases(), 2);
        assert_eq!(bytes::<f32>(2, 3), 4.0 * (6 + 2 + 3) as f64);
        let bad_type = Selection {
            types: Some("u64".into()),
            ..Selection::default()
        };
        assert!(MatvecPlan::from_selection(&bad_type, &[(3, 5)]).is_err());
    }

    #[test]
    fn cpu_products_agree() {
        let rows = cpu_rows(
            123,
            77,
            4,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.check.passed()), "{rows:?}");
    }
}
