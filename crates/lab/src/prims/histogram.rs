//! The histogram lab: even bins over integers with the CPU loop and every
//! GPU method of `reduce::histogram` (one global atomic per item; per-block
//! counts privatised in shared memory, merged at the end; the default,
//! which picks its layout per bin count; the lesson's third method, which
//! sorts the bin indices and counts each run by binary search), on the
//! issue's four inputs:
//!
//! | case | input | bins | shape |
//! |---|---|---|---|
//! | uniform | i32 uniform in [0, 256) | 256 over [0, 256) | `N/bins256` |
//! | bytes | u8 uniform in [0, 256) | 256 over [0, 255) (the widest `u8` range; 255 is counted nowhere) | `N/bins256` |
//! | one bin | i32, every item the same random value in [0, 256) | 256 over [0, 256) | `N/bins256-onebin` |
//! | many bins | i32 uniform in [0, 65 536) | 65 536 over [0, 65 536) | `N/bins65536` |
//!
//! (`u32` and `f32` selected with `--types` get the uniform and many-bins
//! cases; `f32` values are whole numbers.) Bytes moved are the crate's
//! declaration, per method ([`method_bytes`]): for the counting methods
//! ([`reduce::histogram::bytes_moved`]) the input read once, `n · size`
//! (4n for i32, n for u8), the counts left out, as `bench/peers.py` counts
//! `torch.histc` and `torch.bincount`; for `sort`
//! ([`reduce::histogram::sort_bytes_moved`]) also the bin indices written,
//! the radix sort's passes over them and the per-bin searches (28n for
//! i32 at 256 bins, 36n at 65 536, 25n for u8). Counts are
//! `u32`, overwritten by each run (the caller's buffer is poisoned before
//! every run, so a bin the method never wrote shows up).
//!
//! A method that refuses a case (shared privatisation of 65 536 bins, whose
//! counts do not fit a block's shared memory) gets a row saying so, not a
//! failure.

use gpu_core::{DeviceBuffer, Error, Gpu, Result};
use parprims_testkit::bench::Repetitions;
use parprims_testkit::rng::{random_vec, SplitMix64};
use reduce::histogram::{CountMode, HistogramAlgorithm, HistogramInput};

use crate::check::{compare, failed, Check};
use crate::inputs::derive_seed;
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::table::Timed;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The histogram's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "histogram",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| HistogramPlan::from_selection(selection, &BENCH_SIZES));

/// The GPU methods, in the lesson's order (the default last).
pub const METHODS: [HistogramAlgorithm; 4] = [
    HistogramAlgorithm::GlobalAtomic,
    HistogramAlgorithm::SharedPrivatised,
    HistogramAlgorithm::Sort,
    HistogramAlgorithm::Auto,
];

/// Input types the lab offers.
pub const TYPES: [&str; 4] = ["i32", "u8", "u32", "f32"];

/// The benchmark's default sizes, up to the headline 2^28.
pub const BENCH_SIZES: [usize; 5] = [1 << 16, 1 << 20, 1 << 24, 1 << 28, (1 << 28) / 8 * 5];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 24;

/// The name a method has in tables and CSV: `global-atomic`,
/// `shared-privatised`, `sort`, `auto`.
pub fn method_name(algorithm: HistogramAlgorithm) -> &'static str {
    match algorithm {
        HistogramAlgorithm::GlobalAtomic => "global-atomic",
        HistogramAlgorithm::SharedPrivatised => "shared-privatised",
        HistogramAlgorithm::Sort => "sort",
        HistogramAlgorithm::Auto => "auto",
    }
}

/// Bytes a method declares for `n` items of `element_bytes` in `bins`
/// bins: the input read once for the counting methods, the sort's whole
/// traffic for `sort`.
///
/// ```
/// use parprims_lab::prims::histogram::method_bytes;
/// use reduce::histogram::HistogramAlgorithm;
/// let n = 1usize << 24;
/// assert_eq!(method_bytes(HistogramAlgorithm::Auto, n, 4, 256), (4 * n) as f64);
/// assert!(method_bytes(HistogramAlgorithm::Sort, n, 4, 256) > (28 * n) as f64);
/// ```
pub fn method_bytes(
    algorithm: HistogramAlgorithm,
    n: usize,
    element_bytes: usize,
    bins: usize,
) -> f64 {
    match algorithm {
        HistogramAlgorithm::Sort => {
            reduce::histogram::sort_bytes_moved(n, element_bytes, bins) as f64
        }
        _ => reduce::histogram::bytes_moved(n, element_bytes) as f64,
    }
}

/// One input of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// Input type name (from [`TYPES`]).
    pub element_type: &'static str,
    /// Even bins over `[0, bins)` (`[0, 255)` for u8).
    pub bins: usize,
    /// Every item the same value.
    pub one_bin: bool,
}

impl Case {
    /// The shape as CSV records write it: `268435456/bins256`,
    /// `268435456/bins256-onebin`.
    pub fn shape(&self, n: usize) -> String {
        format!(
            "{n}/bins{}{}",
            self.bins,
            if self.one_bin { "-onebin" } else { "" }
        )
    }

    /// The issue's four inputs.
    pub fn defaults() -> Vec<Case> {
        vec![
            Case::uniform("i32", 256),
            Case::uniform("u8", 256),
            Case {
                one_bin: true,
                ..Case::uniform("i32", 256)
            },
            Case::uniform("i32", 65_536),
        ]
    }

    fn uniform(element_type: &'static str, bins: usize) -> Case {
        Case {
            element_type,
            bins,
            one_bin: false,
        }
    }
}

/// What a histogram run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramPlan {
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Inputs.
    pub cases: Vec<Case>,
    /// GPU methods.
    pub algorithms: Vec<HistogramAlgorithm>,
    /// Time the CPU reference as a row of its own.
    pub cpu_row: bool,
}

impl HistogramPlan {
    /// A plan from a selection, validated without a GPU. `--types` keeps
    /// the default cases of those types (`u32`, `f32`: uniform over 256
    /// and 65 536 bins).
    pub fn from_selection(selection: &Selection, default_sizes: &[usize]) -> Result<HistogramPlan> {
        selection.refuse_block_threads("the histogram methods size their own blocks")?;
        let algorithms = selection.methods(&METHODS, |a| method_name(*a).to_owned())?;
        let cases = match &selection.types {
            None => Case::defaults(),
            Some(text) => {
                let types = super::reduce::parse_types(Some(text), &[])?;
                let mut cases = Vec::new();
                for t in types {
                    let Some(&t) = TYPES.iter().find(|name| **name == t) else {
                        return Err(Error::invalid(
                            "types",
                            format!("{t} is not offered here; choose from {}", TYPES.join(", ")),
                        ));
                    };
                    let mut of_type: Vec<Case> = Case::defaults()
                        .into_iter()
                        .filter(|c| c.element_type == t)
                        .collect();
                    if of_type.is_empty() {
                        of_type = vec![Case::uniform(t, 256), Case::uniform(t, 65_536)];
                    }
                    cases.extend(of_type);
                }
                cases
            }
        };
        Ok(HistogramPlan {
            sizes: selection.counts(default_sizes)?,
            cases,
            algorithms,
            cpu_row: false,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.cases.len() * (self.algorithms.len() + usize::from(self.cpu_row)))
            as u64
    }
}

/// Calls `$f::<T>(args…)` with `T` the input type named `$t` (one of [`TYPES`]).
macro_rules! with_histogram_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            "u8" => $f::<u8>($($arg),*),
            "u32" => $f::<u32>($($arg),*),
            "f32" => $f::<f32>($($arg),*),
            _ => $f::<i32>($($arg),*),
        }
    };
}

/// The bounds of a case: `[0, bins)`, or `[0, 255)` for `u8` (its widest).
fn bounds<T: HistogramInput>(bins: usize) -> (T, T) {
    let upper = (bins as f64).min(T::highest().to_f64());
    (T::zero(), T::from_f64(upper))
}

/// `n` inputs of a case: whole numbers uniform in `[0, bins)` (`[0, 256)`
/// for u8), or `n` copies of one random value in `[0, bins)`.
pub fn case_values<T: HistogramInput>(case: &Case, n: usize, seed: u64) -> Vec<T> {
    let top = (case.bins as f64).min(T::highest().to_f64() + 1.0);
    if case.one_bin {
        let value = (SplitMix64::new(seed).next_f64() * top).floor();
        return vec![T::from_f64(value); n];
    }
    let mut values: Vec<T> = random_vec(n, seed, 0.0, top);
    if T::IS_FLOAT {
        for v in &mut values {
            *v = T::from_f64(v.to_f64().floor());
        }
    }
    values
}

/// Checks a CPU histogram by a second route: the counts add up to the
/// items inside `[lower, upper)`, and where the bins are one value wide,
/// each count is that value's tally.
fn cpu_self_check<T: HistogramInput>(host: &[T], bins: usize, counts: &[u32]) -> Check {
    let (lower, upper) = bounds::<T>(bins);
    let inside = host.iter().filter(|&&x| x >= lower && x < upper).count();
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if total != inside as u64 || counts.len() != bins {
        return Check::Fail(format!(
            "{} bins adding up to {total}, {inside} items inside",
            counts.len()
        ));
    }
    if upper.to_f64() - lower.to_f64() == bins as f64 {
        let mut tally = vec![0u32; bins];
        for &x in host.iter().filter(|&&x| x >= lower && x < upper) {
            tally[x.to_f64() as usize] += 1;
        }
        return compare(counts, &tally, 1);
    }
    Check::Pass
}

struct HistogramCase<'a, T: HistogramInput> {
    algorithm: HistogramAlgorithm,
    bins: usize,
    input: &'a DeviceBuffer<T>,
    counts: DeviceBuffer<u32>,
    expected: &'a [u32],
}

impl<T: HistogramInput> GpuCase for HistogramCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.counts
            .view_mut()
            .fill(gpu, <u32 as gpu_core::DeviceType>::poison())
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        let (lower, upper) = bounds::<T>(self.bins);
        reduce::histogram::histogram_even_into(
            gpu,
            self.input.view(),
            self.bins,
            lower,
            upper,
            self.counts.view_mut(),
            CountMode::Overwrite,
            self.algorithm,
        )
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.counts.to_host(gpu)?, self.expected, 1))
    }
}

/// Runs a plan: for each case and size, fresh inputs, the CPU reference
/// (a row if asked), then every method.
pub fn run(lab: &Lab, plan: &HistogramPlan, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stream = 0x4157_0000u64;
    for case in &plan.cases {
        for &n in &plan.sizes {
            stream += 1;
            rows.extend(with_histogram_type!(
                case.element_type,
                run_size(lab, plan, case, n, stream, progress)
            ));
        }
    }
    rows
}

fn run_size<T: HistogramInput>(
    lab: &Lab,
    plan: &HistogramPlan,
    case: &Case,
    n: usize,
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    let shape = case.shape(n);
    progress.start(&format!("histogram {t} {shape}: inputs and CPU reference"));
    let host = case_values::<T>(case, n, derive_seed(lab.seed(), stream));
    let mut rows = Vec::new();
    let expected = match cpu_reference(&host, case, &shape, plan.cpu_row.then(|| lab.cpu_reps())) {
        Ok((expected, row)) => {
            if let Some(row) = row {
                rows.push(row);
                progress.step();
            }
            expected
        }
        Err(error) => {
            return plan
                .algorithms
                .iter()
                .map(|&a| {
                    progress.step();
                    let bytes = method_bytes(a, n, T::BYTES, case.bins);
                    Spec::new("histogram", method_name(a), t, shape.clone(), bytes)
                        .failed_row(&error)
                })
                .collect();
        }
    };
    let gpu = lab.gpu();
    let input = match DeviceBuffer::from_host(gpu, &host) {
        Ok(input) => input,
        Err(error) => {
            for &algorithm in &plan.algorithms {
                let spec = Spec::new("histogram", method_name(algorithm), t, shape.clone(), 0.0);
                rows.push(spec.failed_row(&error));
                progress.step();
            }
            return rows;
        }
    };
    let shared = gpu.info().shared_per_block_optin;
    for &algorithm in &plan.algorithms {
        let name = method_name(algorithm);
        progress.start(&format!("histogram {t} {shape}: {name}"));
        let bytes = method_bytes(algorithm, n, T::BYTES, case.bins);
        let spec = Spec::new("histogram", name, t, shape.clone(), bytes);
        // A method that cannot take these bins on this device says so
        // before anything runs: a row that explains, not a failure.
        if let Err(error) =
            reduce::histogram::policy::plan(algorithm, case.bins, T::BYTES, None, shared)
        {
            rows.push(refused_row(&spec, &error));
            progress.step();
            continue;
        }
        let case = DeviceBuffer::<u32>::poisoned(gpu, case.bins).map(|counts| HistogramCase {
            algorithm,
            bins: case.bins,
            input: &input,
            counts,
            expected: &expected,
        });
        rows.push(measure_method(lab, &spec, case, false, progress));
    }
    rows
}

/// The row of a method that refused a case with a typed error.
fn refused_row(spec: &Spec, error: &Error) -> Row {
    let reason = match failed(error) {
        Check::Fail(text) => text,
        other => other.cell(),
    };
    Row {
        primitive: spec.primitive.clone(),
        method: spec.method.clone(),
        element_type: spec.element_type.clone(),
        shape: spec.shape.clone(),
        bytes: spec.bytes,
        timed: Timed::Device,
        ms: None,
        ms_with_copies: None,
        check: Check::NotChecked(format!("refused: {reason}")),
    }
}

/// The CPU histogram of `host`: the expected counts, and with `reps` its
/// timed, self-checked row.
fn cpu_reference<T: HistogramInput>(
    host: &[T],
    case: &Case,
    shape: &str,
    reps: Option<Repetitions>,
) -> Result<(Vec<u32>, Option<Row>)> {
    let (lower, upper) = bounds::<T>(case.bins);
    let compute =
        || reduce::histogram::cpu::histogram_even::<T, u32>(host, case.bins, lower, upper);
    let Some(reps) = reps else {
        return Ok((compute()?, None));
    };
    let spec = Spec::new(
        "histogram",
        "cpu",
        T::SUFFIX,
        shape,
        reduce::histogram::bytes_moved(host.len(), T::BYTES) as f64,
    );
    let mut counts = Vec::new();
    let row = measure_cpu(&spec, reps, || {
        counts = compute()?;
        Ok(())
    });
    let row = row.checked_by(|| cpu_self_check(host, case.bins, &counts));
    Ok((counts, Some(row)))
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = HistogramPlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        cases: vec![Case::uniform("i32", 256)],
        algorithms: METHODS.to_vec(),
        cpu_row: true,
    };
    run(lab, &plan, progress)
}

/// The CPU histogram of the uniform i32 case at `n`, timed and self-checked.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let case = Case::uniform("i32", 256);
    let host = case_values::<i32>(&case, n, derive_seed(seed, 0x4157_0001));
    match cpu_reference(&host, &case, &case.shape(n), Some(reps)) {
        Ok((_, row)) => row.into_iter().collect(),
        Err(error) => {
            vec![Spec::new("histogram", "cpu", "i32", case.shape(n), 0.0).failed_row(&error)]
        }
    }
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONCE: Repetitions = Repetitions {
        warmup: 0,
        timed: 1,
    };

    #[test]
    fn plans_from_selections() {
        let plan = HistogramPlan::from_selection(&Selection::default(), &BENCH_SIZES).unwrap();
        assert_eq!(plan.cases, Case::defaults());
        assert_eq!(plan.algorithms, METHODS.to_vec());
        assert_eq!(plan.cases(), (5 * 4 * 4) as u64);
        let chosen = Selection {
            algos: Some("Auto,global_atomic".into()),
            types: Some("u8,f32".into()),
            sizes: Some("2^20".into()),
            ..Selection::default()
        };
        let plan = HistogramPlan::from_selection(&chosen, &BENCH_SIZES).unwrap();
        assert_eq!(
            plan.algorithms,
            vec![HistogramAlgorithm::Auto, HistogramAlgorithm::GlobalAtomic]
        );
        assert_eq!(
            plan.cases,
            vec![
                Case::uniform("u8", 256),
                Case::uniform("f32", 256),
                Case::uniform("f32", 65_536)
            ]
        );
        for bad in ["f64", "i128"] {
            let selection = Selection {
                types: Some(bad.into()),
                ..Selection::default()
            };
            assert!(HistogramPlan::from_selection(&selection, &BENCH_SIZES).is_err());
        }
    }

    #[test]
    fn shapes_names_and_bytes() {
        let n = 1usize << 28;
        let shapes: Vec<String> = Case::defaults().iter().map(|c| c.shape(n)).collect();
        assert_eq!(
            shapes,
            [
                "268435456/bins256",
                "268435456/bins256",
                "268435456/bins256-onebin",
                "268435456/bins65536"
            ]
        );
        let names: Vec<&str> = METHODS.iter().map(|&a| method_name(a)).collect();
        assert_eq!(
            names,
            ["global-atomic", "shared-privatised", "sort", "auto"]
        );
        assert_eq!(
            crate::headline::HISTOGRAM_DEFAULT,
            method_name(HistogramAlgorithm::Auto)
        );
        // The issue's bytes: the input read once.
        assert_eq!(reduce::histogram::bytes_moved(n, 4), 4 * n as u64);
        assert_eq!(reduce::histogram::bytes_moved(n, 1), n as u64);
        // Every counting method declares the input read once; sort its passes too.
        for algorithm in METHODS {
            let declared = method_bytes(algorithm, n, 4, 256);
            if algorithm == HistogramAlgorithm::Sort {
                let searches = (256 * 2 * 29 * 4) as f64;
                assert_eq!(declared, (28 * n) as f64 + searches);
                let searches = (65_536 * 2 * 29 * 4) as f64;
                assert_eq!(
                    method_bytes(algorithm, n, 4, 65_536),
                    (36 * n) as f64 + searches
                );
                assert_eq!(
                    method_bytes(algorithm, n, 1, 256),
                    (25 * n) as f64 + (256 * 2 * 29 * 4) as f64
                );
            } else {
                assert_eq!(declared, (4 * n) as f64);
            }
        }
    }

    #[test]
    fn inputs_fill_their_range() {
        let values = case_values::<u8>(&Case::uniform("u8", 256), 100_000, 3);
        assert!(values.contains(&0) && values.contains(&255));
        let values = case_values::<i32>(&Case::uniform("i32", 65_536), 100_000, 3);
        assert!(values.iter().all(|&v| (0..65_536).contains(&v)));
        let one = case_values::<i32>(&Case::defaults()[2], 1000, 9);
        assert!(one.iter().all(|&v| v == one[0] && (0..256).contains(&v)));
        let floats = case_values::<f32>(&Case::uniform("f32", 256), 1000, 3);
        assert!(floats
            .iter()
            .all(|v| v.fract() == 0.0 && (0.0..256.0).contains(v)));
        assert_eq!(bounds::<u8>(256), (0, 255));
        assert_eq!(bounds::<i32>(65_536), (0, 65_536));
    }

    #[test]
    fn cpu_rows_pass_their_self_check() {
        let rows = cpu_rows(100_003, 1, ONCE);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].check.passed(), "{:?}", rows[0].check);
        for case in Case::defaults() {
            let rows = with_histogram_type!(case.element_type, self_checked_rows(&case));
            assert!(rows.check.passed(), "{case:?}: {:?}", rows.check);
        }
        // The self-check catches a miscount.
        let host = case_values::<i32>(&Case::uniform("i32", 256), 5000, 4);
        let mut counts =
            reduce::histogram::cpu::histogram_even::<i32, u32>(&host, 256, 0, 256).unwrap();
        counts[3] += 1;
        counts[4] -= 1;
        assert!(cpu_self_check(&host, 256, &counts).failed());
    }

    fn self_checked_rows<T: HistogramInput>(case: &Case) -> Row {
        let host = case_values::<T>(case, 20_000, 8);
        cpu_reference(&host, case, "x", Some(ONCE))
            .unwrap()
            .1
            .unwrap()
    }
}
