//! Measuring one method: the loop every primitive shares.

use std::cell::RefCell;

use gpu_core::{Gpu, Result};
use parprims_testkit::bench::{time_device, time_host, Repetitions};

use super::check::{failed, Check};
use super::table::{Row, Timed};
use super::Lab;

/// What a row is about, before it is measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// `scan`, `compact`, ...
    pub primitive: String,
    /// Method name as the table and CSV show it.
    pub method: String,
    /// Element type name.
    pub element_type: String,
    /// Shape as CSV records write it.
    pub shape: String,
    /// Bytes the algorithm declares it moves per run.
    pub bytes: f64,
}

impl Spec {
    /// A spec from its parts.
    pub fn new(
        primitive: &str,
        method: impl Into<String>,
        element_type: &str,
        shape: impl Into<String>,
        bytes: f64,
    ) -> Spec {
        Spec {
            primitive: primitive.to_owned(),
            method: method.into(),
            element_type: element_type.to_owned(),
            shape: shape.into(),
            bytes,
        }
    }

    fn row(&self, timed: Timed, ms: Option<f64>, check: Check) -> Row {
        Row {
            primitive: self.primitive.clone(),
            method: self.method.clone(),
            element_type: self.element_type.clone(),
            shape: self.shape.clone(),
            bytes: self.bytes,
            timed,
            ms,
            ms_with_copies: None,
            check,
        }
    }

    /// The row of a method that failed before it could be timed.
    pub fn failed_row(&self, error: &gpu_core::Error) -> Row {
        self.row(Timed::Device, None, failed(error))
    }
}

/// Timed repetitions of a method with its host↔device copies, at most: the
/// copies (PCIe, pageable host memory) take hundreds of times longer than the
/// device work at the lab's sizes and vary little, so more repetitions only
/// lengthen the run (a 10k² conv table took minutes on them alone).
pub const COPIES_TIMED_REPS: usize = 5;

/// One GPU method on one input, with its buffers already on the device.
///
/// The runner calls, in order: `prepare` + `run` for every warm-up and
/// timed repetition (only `run` is timed), `check` once, then, if
/// `with_copies` is asked for, `run_with_copies` for one warm-up and at most
/// [`COPIES_TIMED_REPS`] timed repetitions (wall clock) and `check_copies`
/// once.
pub trait GpuCase {
    /// Untimed, before each run: poison the outputs.
    fn prepare(&mut self, gpu: &Gpu) -> Result<()>;
    /// The device work alone (enqueued; the runner's events bracket it).
    fn run(&mut self, gpu: &Gpu) -> Result<()>;
    /// Downloads the last run's output and compares it with the reference.
    fn check(&mut self, gpu: &Gpu) -> Result<Check>;
    /// Upload the inputs from the host, run, download the outputs, and wait:
    /// what a caller with host data pays. `None` when the lab did not
    /// measure it for this primitive.
    fn run_with_copies(&mut self, gpu: &Gpu) -> Option<Result<()>> {
        let _ = gpu;
        None
    }
    /// Compares the download of the last `run_with_copies`.
    fn check_copies(&mut self) -> Check {
        Check::NotChecked("no copies".into())
    }
}

/// Times `case` on the lab's GPU and checks it: one table row. Every
/// failure (an error or a wrong result) becomes the row's check; nothing
/// here panics or aborts the table.
pub fn measure_gpu(lab: &Lab, spec: &Spec, case: Result<impl GpuCase>, with_copies: bool) -> Row {
    measure_gpu_on(lab.gpu(), lab.reps(), spec, case, with_copies)
}

/// [`measure_gpu`] with an explicit device and repetitions.
pub fn measure_gpu_on(
    gpu: &Gpu,
    reps: Repetitions,
    spec: &Spec,
    case: Result<impl GpuCase>,
    with_copies: bool,
) -> Row {
    let case = match case {
        Ok(case) => RefCell::new(case),
        Err(error) => return spec.failed_row(&error),
    };
    let timing = time_device(
        gpu,
        reps,
        |_| case.borrow_mut().prepare(gpu),
        |_| case.borrow_mut().run(gpu),
    );
    let timing = match timing {
        Ok(timing) => timing,
        Err(error) => return spec.failed_row(&error),
    };
    let check = case.borrow_mut().check(gpu).unwrap_or_else(|e| failed(&e));
    let mut row = spec.row(Timed::Device, Some(timing.median_ms), check);
    if with_copies {
        let copies_reps = Repetitions {
            warmup: reps.warmup.min(1),
            timed: reps.timed.min(COPIES_TIMED_REPS),
        };
        let copies = time_host(copies_reps, |_| {
            case.borrow_mut()
                .run_with_copies(gpu)
                .unwrap_or_else(|| Err(gpu_core::Error::Unsupported("no copies".into())))
        });
        match copies {
            Ok(copies) => {
                row.ms_with_copies = Some(copies.median_ms);
                let copies_check = case.borrow_mut().check_copies();
                row.check = row.check.and(copies_check);
            }
            // A case without a copies path just has no such column entry.
            Err(gpu_core::Error::Unsupported(_)) => {}
            Err(error) => row.check = row.check.and(failed(&error)),
        }
    }
    row
}

/// Times a CPU reference (wall clock). The row's check says "the
/// reference"; a caller with a self-check replaces it
/// ([`Row::checked_by`]) once `run`'s borrows have ended.
pub fn measure_cpu(spec: &Spec, reps: Repetitions, mut run: impl FnMut() -> Result<()>) -> Row {
    match time_host(reps, |_| run()) {
        Ok(timing) => spec.row(
            Timed::Host,
            Some(timing.median_ms),
            Check::NotChecked("the reference".into()),
        ),
        Err(error) => spec.row(Timed::Host, None, failed(&error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_rows_are_timed_and_checked() {
        let spec = Spec::new("scan", "cpu serial", "i32", "1000", 8000.0);
        let mut calls = 0;
        let row = measure_cpu(
            &spec,
            Repetitions {
                warmup: 1,
                timed: 3,
            },
            || {
                calls += 1;
                Ok(())
            },
        )
        .checked_by(|| Check::Pass);
        assert_eq!(calls, 4);
        assert_eq!(row.timed, Timed::Host);
        assert!(row.ms.is_some());
        assert!(row.check.passed());
        let failing = measure_cpu(
            &spec,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
            || Err(gpu_core::Error::invalid("n", "bad")),
        )
        .checked_by(|| Check::Pass);
        assert!(failing.check.failed());
        assert_eq!(failing.ms, None);
    }
}
