//! The scan lab: inclusive sum with the CPU serial loop and every GPU
//! algorithm of the `scan` crate, with and without host↔device copies.
//!
//! Bytes moved per algorithm are the scan crate's own declaration
//! ([`scan::bytes_moved`]: 2n·size for the single-pass look-back, more for
//! the recursive teaching variants, which read and write their block sums
//! too), so GB/s compares what each algorithm costs against the copy
//! ceiling.

use gpu_core::{DeviceBuffer, Element, ElementType, Error, Result, Sum};
use parprims_testkit::bench::Repetitions;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

use crate::check::{compare, Check};
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, Spec};
use crate::select::Selection;
use crate::with_element_type;
use crate::{Lab, Row};

use super::case::UploadedCase;
use super::{measure_method, rows_per_shape, Primitive};

/// The scan's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "scan",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| ScanPlan::from_selection(selection, &BENCH_SIZES, &BENCH_TYPES));

/// The GPU methods, in the lab's order (teaching variants first, the
/// default last). `Auto` is `DecoupledLookback` and is not listed twice.
pub const METHODS: [ScanAlgorithm; 6] = [
    ScanAlgorithm::HillisSteeleGlobal,
    ScanAlgorithm::HillisSteele,
    ScanAlgorithm::Blelloch,
    ScanAlgorithm::BlellochPadded,
    ScanAlgorithm::ReduceThenScan,
    ScanAlgorithm::DecoupledLookback,
];

/// Every element type the scan takes.
pub const TYPES: [ElementType; 6] = ElementType::ALL;

/// The benchmark's default types: the headline four.
pub const BENCH_TYPES: [ElementType; 4] = [
    ElementType::I32,
    ElementType::F32,
    ElementType::U64,
    ElementType::I64,
];

/// The benchmark's default sizes: powers of two up to the headline 2^28,
/// and 5/8 of three of them.
pub const BENCH_SIZES: [usize; 8] = [
    1 << 16,
    1 << 20,
    (1 << 20) / 8 * 5,
    1 << 24,
    (1 << 24) / 8 * 5,
    1 << 26,
    1 << 28,
    (1 << 28) / 8 * 5,
];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 24;

/// The name a method has in tables and CSV (`DecoupledLookback`).
pub fn method_name(algorithm: ScanAlgorithm) -> String {
    format!("{algorithm:?}")
}

/// What a scan run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanPlan {
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Element types.
    pub types: Vec<ElementType>,
    /// GPU algorithms.
    pub algorithms: Vec<ScanAlgorithm>,
    /// Threads per block for the teaching variants (`None`: their default).
    pub block_threads: Option<u32>,
    /// Time the CPU serial reference as a row of its own.
    pub cpu_row: bool,
    /// Also time each method with its host↔device copies.
    pub copies: bool,
}

impl ScanPlan {
    /// A plan from a selection, validated without a GPU.
    pub fn from_selection(
        selection: &Selection,
        default_sizes: &[usize],
        default_types: &[ElementType],
    ) -> Result<ScanPlan> {
        let algorithms = selection.methods(&METHODS, |a| method_name(*a))?;
        let plan = ScanPlan {
            sizes: selection.counts(default_sizes)?,
            types: selection.types(default_types, &TYPES)?,
            algorithms,
            block_threads: selection.block_threads,
            cpu_row: false,
            copies: false,
        };
        for &algorithm in &plan.algorithms {
            scan::validate(0, 0, &plan.options(algorithm))?;
        }
        if let Some(threads) = plan.block_threads {
            if !plan.algorithms.iter().any(|a| a.takes_block_threads()) {
                return Err(Error::invalid(
                    "block_threads",
                    format!("{threads}: none of the chosen algorithms takes a block size"),
                ));
            }
        }
        Ok(plan)
    }

    /// The options `algorithm` runs with: the plan's block size where the
    /// algorithm takes one.
    pub fn options(&self, algorithm: ScanAlgorithm) -> ScanOptions {
        let options = ScanOptions::new(algorithm);
        match self.block_threads {
            Some(threads) if algorithm.takes_block_threads() => options.with_block_threads(threads),
            _ => options,
        }
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.types.len() * (self.algorithms.len() + usize::from(self.cpu_row)))
            as u64
    }
}

/// Bytes an inclusive scan of `n` elements of `T` moves with `options`.
pub fn bytes<T: Element>(options: &ScanOptions, n: usize) -> f64 {
    scan::bytes_moved(
        options.algorithm,
        n as u64,
        T::BYTES as u64,
        options.effective_block_threads(),
    ) as f64
}

/// Checks a CPU inclusive scan against a second, independent route: the
/// exclusive reference shifted by one, and the last element against a fold.
fn cpu_self_check<T: Element>(host: &[T], inclusive: &[T]) -> Check {
    let exclusive = scan::cpu::exclusive(host, &Sum);
    let total = host.iter().fold(T::zero(), |acc, &x| acc.add(x));
    let shifted: Vec<T> = exclusive
        .iter()
        .zip(host)
        .map(|(&before, &x)| before.add(x))
        .collect();
    let check = compare(inclusive, &shifted, host.len());
    match inclusive.last() {
        Some(&last) if last != total && !T::IS_FLOAT => {
            check.and(Check::Fail(format!("last {last}, total {total}")))
        }
        _ => check,
    }
}

/// Runs a plan: for each type and size, fresh inputs, the CPU reference
/// (a row if asked), then every algorithm.
pub fn run(lab: &Lab, plan: &ScanPlan, progress: &Progress) -> Vec<Row> {
    rows_per_shape(&plan.types, &plan.sizes, 0x5ca0_0000, |t, n, stream| {
        with_element_type!(t, run_size(lab, plan, n, stream, progress))
    })
}

fn run_size<T: Element>(
    lab: &Lab,
    plan: &ScanPlan,
    n: usize,
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let t = T::SUFFIX;
    progress.start(&format!("scan {t} {n}: inputs and CPU reference"));
    let host = values::<T>(n, derive_seed(lab.seed(), stream));
    let mut expected = Vec::new();
    if plan.cpu_row {
        let spec = Spec::new(
            "scan",
            "cpu serial",
            t,
            n.to_string(),
            2.0 * (n * T::BYTES) as f64,
        );
        rows.push(measure_cpu(&spec, lab.cpu_reps(), || {
            expected = scan::cpu::inclusive(&host, &Sum);
            Ok(())
        }));
        progress.step();
    } else {
        expected = scan::cpu::inclusive(&host, &Sum);
    }
    let mut input = match DeviceBuffer::from_host(lab.gpu(), &host) {
        Ok(input) => input,
        Err(error) => {
            for &algorithm in &plan.algorithms {
                let spec = Spec::new("scan", method_name(algorithm), t, n.to_string(), 0.0);
                rows.push(spec.failed_row(&error));
                progress.step();
            }
            return rows;
        }
    };
    for &algorithm in &plan.algorithms {
        let options = plan.options(algorithm);
        let mut method = method_name(algorithm);
        if plan.block_threads.is_some() && algorithm.takes_block_threads() {
            method = format!("{method}/{}", options.effective_block_threads());
        }
        progress.start(&format!("scan {t} {n}: {method}"));
        let spec = Spec::new("scan", method, t, n.to_string(), bytes::<T>(&options, n));
        let case = DeviceBuffer::<T>::poisoned(lab.gpu(), n).map(|output| {
            UploadedCase::new(
                &host,
                &mut input,
                output,
                &expected,
                n,
                move |gpu, input, output| {
                    let (input, output) = (input.view(), output.view_mut());
                    scan::scan_into(gpu, input, output, &Sum, ScanKind::Inclusive, &options)
                },
            )
        });
        rows.push(measure_method(lab, &spec, case, plan.copies, progress));
    }
    rows
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = ScanPlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        types: vec![ElementType::I32],
        algorithms: METHODS.to_vec(),
        block_threads: None,
        cpu_row: true,
        copies: true,
    };
    run(lab, &plan, progress)
}

/// The CPU reference at the tour's size, timed and self-checked.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let host = values::<i32>(n, derive_seed(seed, 0x5ca0_0001));
    let mut result = Vec::new();
    let spec = Spec::new(
        "scan",
        "cpu serial",
        "i32",
        n.to_string(),
        2.0 * (n * 4) as f64,
    );
    let row = measure_cpu(&spec, reps, || {
        result = scan::cpu::inclusive(&host, &Sum);
        Ok(())
    });
    vec![row.checked_by(|| cpu_self_check(&host, &result))]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_from_selections() {
        let plan =
            ScanPlan::from_selection(&Selection::default(), &BENCH_SIZES, &BENCH_TYPES).unwrap();
        assert_eq!(plan.algorithms.len(), METHODS.len());
        assert_eq!(plan.cases(), (8 * 4 * 6) as u64);
        let chosen = Selection {
            algos: Some("blelloch-padded,DecoupledLookback".into()),
            block_threads: Some(256),
            ..Selection::default()
        };
        let plan = ScanPlan::from_selection(&chosen, &[100], &[ElementType::I32]).unwrap();
        assert_eq!(
            plan.algorithms,
            vec![
                ScanAlgorithm::BlellochPadded,
                ScanAlgorithm::DecoupledLookback
            ]
        );
        assert_eq!(
            plan.options(ScanAlgorithm::BlellochPadded).block_threads,
            Some(256)
        );
        assert_eq!(
            plan.options(ScanAlgorithm::DecoupledLookback).block_threads,
            None
        );
        // A block size Blelloch cannot take is refused before any GPU work.
        let odd = Selection {
            algos: Some("Blelloch".into()),
            block_threads: Some(96),
            ..Selection::default()
        };
        assert!(ScanPlan::from_selection(&odd, &[100], &[ElementType::I32]).is_err());
        let useless = Selection {
            algos: Some("DecoupledLookback".into()),
            block_threads: Some(256),
            ..Selection::default()
        };
        assert!(ScanPlan::from_selection(&useless, &[100], &[ElementType::I32]).is_err());
    }

    #[test]
    fn headline_bytes_are_8n_for_i32() {
        // 8n for the data, plus the look-back's tile statuses (well under 1 %).
        let n = 1usize << 28;
        let b = bytes::<i32>(&ScanOptions::new(ScanAlgorithm::DecoupledLookback), n);
        assert!(b >= 8.0 * n as f64 && b < 8.08 * n as f64, "{b}");
    }

    #[test]
    fn cpu_rows_pass_their_self_check() {
        let rows = cpu_rows(
            100_003,
            1,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(rows.len(), 1);
        assert!(rows[0].check.passed(), "{:?}", rows[0].check);
        // And the self-check does catch a wrong scan.
        let host = values::<i32>(1000, 3);
        let mut wrong = scan::cpu::inclusive(&host, &Sum);
        wrong[500] = wrong[500].wrapping_add(1);
        assert!(cpu_self_check(&host, &wrong).failed());
    }
}
