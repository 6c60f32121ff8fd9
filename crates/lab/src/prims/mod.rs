//! One module per primitive: its lab methods, inputs, CPU reference and
//! GPU cases, driven by the shared runner ([`crate::run`]).
//!
//! Every primitive registers the same four entry points in [`registry`],
//! so the `parprims` command, `parprims bench` and the examples walk one
//! list.

use gpu_core::{ElementType, Result};
use parprims_testkit::bench::Repetitions;

use super::progress::Progress;
use super::run::{measure_cpu, measure_gpu, GpuCase, Spec};
use super::select::Selection;
use super::{Lab, Row};

/// Defines a primitive's [`Primitive::validate`] and [`Primitive::bench`]
/// over its plan: `$plan` builds the benchmark's plan from `$selection`
/// (validated without a GPU), the plan's `cases` counts its rows and the
/// module's `run` runs it.
macro_rules! bench_entry_points {
    (|$selection:ident| $plan:expr) => {
        fn validate($selection: &Selection) -> Result<u64> {
            Ok($plan?.cases())
        }

        fn bench(lab: &Lab, $selection: &Selection, progress: &Progress) -> Result<Vec<Row>> {
            Ok(run(lab, &$plan?, progress))
        }
    };
}

/// Calls `$f::<T>(args…)` with `T` the Rust type of the run-time
/// [`gpu_core::ElementType`] `$t`, one of the linear-algebra labs' types
/// (`f64`, `i32`, else `f32`: their plans hold no other).
macro_rules! with_linalg_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            gpu_core::ElementType::F64 => $f::<f64>($($arg),*),
            gpu_core::ElementType::I32 => $f::<i32>($($arg),*),
            _ => $f::<f32>($($arg),*),
        }
    };
}

mod case;
pub mod compact;
pub mod conv;
pub mod copy;
pub mod histogram;
pub mod matvec;
pub mod reduce;
pub mod runs;
pub mod scan;
pub mod segreduce;
pub mod sort;
pub mod spmv;
pub mod transpose;

/// A primitive's entry points.
#[derive(Clone, Copy)]
pub struct Primitive {
    /// `scan`, `compact`, `transpose`, `matvec`, `conv`, `reduce`,
    /// `histogram`, `copy`.
    pub name: &'static str,
    /// Checks a selection without a GPU; returns how many cases it makes
    /// (for the progress bar).
    pub validate: fn(&Selection) -> Result<u64>,
    /// The benchmark: every selected size × type × method, no CPU rows.
    pub bench: fn(&Lab, &Selection, &Progress) -> Result<Vec<Row>>,
    /// The short tour of `parprims` with no arguments: the default method
    /// and every lab method at a modest size.
    pub tour: fn(&Lab, &Progress) -> Vec<Row>,
    /// The CPU references at a modest size, timed and self-checked (the
    /// no-GPU path).
    pub cpu: fn(u64, parprims_testkit::bench::Repetitions) -> Vec<Row>,
}

/// Every primitive the runner drives, in table order.
pub fn registry() -> Vec<Primitive> {
    vec![
        scan::PRIMITIVE,
        compact::PRIMITIVE,
        transpose::PRIMITIVE,
        matvec::PRIMITIVE,
        conv::PRIMITIVE,
        reduce::PRIMITIVE,
        histogram::PRIMITIVE,
        sort::PRIMITIVE,
        runs::PRIMITIVE,
        spmv::PRIMITIVE,
        segreduce::PRIMITIVE,
        copy::PRIMITIVE,
    ]
}

/// The primitive called `name`.
pub fn find(name: &str) -> Option<Primitive> {
    registry().into_iter().find(|p| p.name == name)
}

/// The rows of a plan, types outermost: `run_one(type, shape, stream)` for
/// every type × shape, each pair drawing its inputs from its own seed
/// stream (`first_stream + 1`, `+ 2`, … in that order), so a row's inputs
/// do not depend on which methods the plan runs.
pub(crate) fn rows_per_shape<S: Copy>(
    types: &[ElementType],
    shapes: &[S],
    first_stream: u64,
    mut run_one: impl FnMut(ElementType, S, u64) -> Vec<Row>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stream = first_stream;
    for &t in types {
        for &shape in shapes {
            stream += 1;
            rows.extend(run_one(t, shape, stream));
        }
    }
    rows
}

/// Measures one GPU method of a shape ([`measure_gpu`]): its row, after
/// one progress step.
pub(crate) fn measure_method(
    lab: &Lab,
    spec: &Spec,
    case: Result<impl GpuCase>,
    copies: bool,
    progress: &Progress,
) -> Row {
    let row = measure_gpu(lab, spec, case, copies);
    progress.step();
    row
}

/// The CPU reference of a case: `compute` fills in the expected values.
/// With `as_row` it is timed with the lab's CPU repetitions and its row
/// returned (one progress step); otherwise it runs once and the row is
/// dropped (a failed reference then shows in the GPU rows' checks).
pub(crate) fn cpu_reference(
    lab: &Lab,
    spec: &Spec,
    as_row: bool,
    progress: &Progress,
    compute: impl FnMut() -> Result<()>,
) -> Option<Row> {
    let reps = if as_row {
        lab.cpu_reps()
    } else {
        Repetitions {
            warmup: 0,
            timed: 1,
        }
    };
    let row = measure_cpu(spec, reps, compute);
    as_row.then(|| {
        progress.step();
        row
    })
}

/// Calls `$f::<T>(args…)` with `T` the Rust type of the run-time
/// [`gpu_core::ElementType`] `$t`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_element_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            $crate::gpu_core::ElementType::I32 => $f::<i32>($($arg),*),
            $crate::gpu_core::ElementType::U32 => $f::<u32>($($arg),*),
            $crate::gpu_core::ElementType::I64 => $f::<i64>($($arg),*),
            $crate::gpu_core::ElementType::U64 => $f::<u64>($($arg),*),
            $crate::gpu_core::ElementType::F32 => $f::<f32>($($arg),*),
            $crate::gpu_core::ElementType::F64 => $f::<f64>($($arg),*),
        }
    };
}
