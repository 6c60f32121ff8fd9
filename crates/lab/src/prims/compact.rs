//! The compaction lab: keep the items whose flag is non-zero (50 % random
//! byte flags), and keep the items a comparison predicate accepts (`x > 0`,
//! no flags array), with the CPU straight filter, the CPU map/scan/scatter
//! of the lab, three-pass on the GPU with each scan algorithm, and the
//! single-pass kernel; and the single-pass partition by the same predicate.
//!
//! Bytes moved are the compact crate's declaration
//! ([`compact::bytes_moved`]): n items read (plus n flag bytes by flags) and
//! `kept` items written, i.e. 5n + 4·kept and 4n + 4·kept for `i32`; a
//! partition counts first, then reads and writes every item
//! ([`compact::partition_bytes_moved`], 12n for `i32`).

use gpu_core::{DeviceBuffer, Element, ElementType, Gpu, Result};
use parprims_testkit::bench::Repetitions;

use compact::{CompactAlgorithm, Predicate};

use crate::check::{compare, compare_count, Check};
use crate::inputs::{derive_seed, flags, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::with_element_type;
use crate::{Lab, Row};

use super::{measure_method, rows_per_shape, Primitive};

/// The compaction's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "compact",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| {
    CompactPlan::from_selection(selection, &BENCH_SIZES, &[ElementType::I32])
});

/// Density of the random flags: the 50 %.
pub const KEEP: f64 = 0.5;

/// Every element type compaction takes.
pub const TYPES: [ElementType; 6] = ElementType::ALL;

/// The benchmark's default sizes (the headline 2^28 and 5/8 of it among them).
pub const BENCH_SIZES: [usize; 7] = [
    1 << 16,
    1 << 20,
    (1 << 20) / 8 * 5,
    1 << 24,
    (1 << 24) / 8 * 5,
    1 << 28,
    (1 << 28) / 8 * 5,
];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 24;

/// How items are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `select_flagged`: a byte flag per item.
    Flagged,
    /// `select_if(x > 0)`: a comparison in registers, no flags array.
    IfPositive,
    /// `partition(x > 0)`: the items the predicate accepts first, then the
    /// others, both in input order.
    PartitionPositive,
}

impl Mode {
    fn prefix(self) -> &'static str {
        match self {
            Mode::Flagged => "select_flagged",
            Mode::IfPositive => "select_if(x>0)",
            Mode::PartitionPositive => "partition(x>0)",
        }
    }
}

/// The GPU methods: `ThreePass` with each scan algorithm, then `SinglePass`.
pub fn methods() -> Vec<CompactAlgorithm> {
    CompactAlgorithm::all()
}

/// The name a method has in tables and CSV: `select_flagged/SinglePass`,
/// `select_if(x>0)/ThreePass/Blelloch`.
pub fn method_name(mode: Mode, algorithm: CompactAlgorithm) -> String {
    let algorithm = match algorithm {
        CompactAlgorithm::ThreePass { scan } => format!("ThreePass/{scan:?}"),
        CompactAlgorithm::SinglePass => "SinglePass".to_owned(),
    };
    format!("{}/{algorithm}", mode.prefix())
}

/// What a compaction run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactPlan {
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Element types.
    pub types: Vec<ElementType>,
    /// (mode, algorithm) pairs.
    pub methods: Vec<(Mode, CompactAlgorithm)>,
    /// Time the two CPU references as rows of their own.
    pub cpu_rows: bool,
}

impl CompactPlan {
    /// Every (mode, algorithm) pair, flags first, the single-pass
    /// partition last.
    pub fn all_methods() -> Vec<(Mode, CompactAlgorithm)> {
        let mut all: Vec<(Mode, CompactAlgorithm)> =
            methods().into_iter().map(|a| (Mode::Flagged, a)).collect();
        all.extend(methods().into_iter().map(|a| (Mode::IfPositive, a)));
        all.push((Mode::PartitionPositive, CompactAlgorithm::SinglePass));
        all
    }

    /// A plan from a selection, validated without a GPU. `--algos` takes
    /// full names (`select_flagged/SinglePass`) or algorithm names
    /// (`SinglePass`, `ThreePass/Blelloch`) for both modes.
    pub fn from_selection(
        selection: &Selection,
        default_sizes: &[usize],
        default_types: &[ElementType],
    ) -> Result<CompactPlan> {
        let all = Self::all_methods();
        let methods = match &selection.algos {
            None => all,
            Some(_) => {
                // Names with and without the mode prefix, each pointing at
                // the pairs it stands for.
                let mut names: Vec<String> = all.iter().map(|(m, a)| method_name(*m, *a)).collect();
                let short: Vec<String> = methods()
                    .iter()
                    .map(|a| {
                        method_name(Mode::Flagged, *a)
                            .trim_start_matches("select_flagged/")
                            .to_owned()
                    })
                    .collect();
                names.extend(short.iter().cloned());
                let indices: Vec<usize> = (0..names.len()).collect();
                let mut chosen = Vec::new();
                for index in selection.algos(&names, &indices)? {
                    let pairs: Vec<(Mode, CompactAlgorithm)> = if index < all.len() {
                        vec![all[index]]
                    } else {
                        let algorithm = methods()[index - all.len()];
                        vec![(Mode::Flagged, algorithm), (Mode::IfPositive, algorithm)]
                    };
                    for pair in pairs {
                        if !chosen.contains(&pair) {
                            chosen.push(pair);
                        }
                    }
                }
                chosen
            }
        };
        Ok(CompactPlan {
            sizes: selection.counts(default_sizes)?,
            types: selection.types(default_types, &TYPES)?,
            methods,
            cpu_rows: false,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        let cpu = if self.cpu_rows { 2 } else { 0 };
        (self.sizes.len() * self.types.len() * (self.methods.len() + cpu)) as u64
    }
}

/// Bytes a select of `n` items keeping `kept`, or a partition of them,
/// moves.
pub fn bytes<T: Element>(mode: Mode, n: usize, kept: usize) -> f64 {
    match mode {
        Mode::PartitionPositive => compact::partition_bytes_moved(n, T::BYTES) as f64,
        _ => compact::bytes_moved(n, kept, T::BYTES, mode == Mode::Flagged) as f64,
    }
}

/// The lab's inputs for one size: values, flags, and the expected outputs
/// (the partition's only when a plan runs it, else empty; its count is
/// `by_predicate`'s length).
struct Inputs<T: Element> {
    values: Vec<T>,
    flags: Vec<u8>,
    by_flags: Vec<T>,
    by_predicate: Vec<T>,
    partitioned: Vec<T>,
}

fn predicate<T: Element>() -> Predicate<T> {
    Predicate::Gt(T::zero())
}

/// `select_if_into` and `partition_into`: the same arguments.
type PredicateEntry<T> = fn(
    &Gpu,
    gpu_core::DeviceView<'_, T>,
    &Predicate<T>,
    gpu_core::DeviceViewMut<'_, T>,
    gpu_core::DeviceViewMut<'_, u64>,
    CompactAlgorithm,
) -> Result<()>;

struct CompactCase<'a, T: Element> {
    mode: Mode,
    algorithm: CompactAlgorithm,
    predicate: Predicate<T>,
    /// The expected output: the kept items, or the whole partition.
    expected: &'a [T],
    /// The expected count of kept items.
    expected_count: usize,
    n: usize,
    input: &'a DeviceBuffer<T>,
    flags: &'a DeviceBuffer<u8>,
    output: DeviceBuffer<T>,
    count: DeviceBuffer<u64>,
}

impl<T: Element> GpuCase for CompactCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.view_mut().fill(gpu, T::poison())?;
        self.count.view_mut().fill(gpu, u64::MAX)
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        match self.mode {
            Mode::Flagged => compact::select_flagged_into(
                gpu,
                self.input.view(),
                self.flags.view(),
                self.output.view_mut(),
                self.count.view_mut(),
                self.algorithm,
            ),
            Mode::IfPositive | Mode::PartitionPositive => {
                let entry: PredicateEntry<T> = if self.mode == Mode::IfPositive {
                    compact::select_if_into
                } else {
                    compact::partition_into
                };
                entry(
                    gpu,
                    self.input.view(),
                    &self.predicate,
                    self.output.view_mut(),
                    self.count.view_mut(),
                    self.algorithm,
                )
            }
        }
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        let count = self.count.to_host(gpu)?[0];
        let counted = compare_count(count as usize, self.expected_count);
        if counted.failed() || count as usize > self.n {
            return Ok(counted);
        }
        let written = self.output.slice(..self.expected.len())?.to_host(gpu)?;
        Ok(compare(&written, self.expected, 1))
    }
}

fn make_inputs<T: Element>(
    n: usize,
    seed: u64,
    stream: u64,
    with_partition: bool,
) -> Result<Inputs<T>> {
    let values = values::<T>(n, derive_seed(seed, stream));
    let flags = flags(n, derive_seed(seed, stream ^ 0xf1a9), KEEP);
    let by_flags = compact::cpu::select_flagged(&values, &flags)?;
    let by_predicate = compact::cpu::select_if(&values, &predicate::<T>());
    let partitioned = if with_partition {
        compact::cpu::partition(&values, &predicate::<T>()).0
    } else {
        Vec::new()
    };
    Ok(Inputs {
        values,
        flags,
        by_flags,
        by_predicate,
        partitioned,
    })
}

/// The two CPU methods of the lab on flags, timed; each checked against the
/// other (two independent routes to the same output).
fn cpu_method_rows<T: Element>(inputs: &Inputs<T>, reps: Repetitions) -> Vec<Row> {
    let n = inputs.values.len();
    let kept = inputs.by_flags.len();
    let shape = n.to_string();
    let mut filtered = Vec::new();
    let spec = Spec::new(
        "compact",
        "select_flagged/cpu filter",
        T::SUFFIX,
        shape.clone(),
        bytes::<T>(Mode::Flagged, n, kept),
    );
    let filter = measure_cpu(&spec, reps, || {
        filtered = compact::cpu::select_flagged(&inputs.values, &inputs.flags)?;
        Ok(())
    });
    let mut scattered = Vec::new();
    let spec = Spec::new(
        "compact",
        "select_flagged/cpu map-scan-scatter",
        T::SUFFIX,
        shape,
        bytes::<T>(Mode::Flagged, n, kept),
    );
    let with_scan = measure_cpu(&spec, reps, || {
        scattered = compact::cpu::map_scan_scatter_flagged(&inputs.values, &inputs.flags)?;
        Ok(())
    });
    let agree = compare(&scattered, &filtered, 1);
    let density = kept as f64 / n.max(1) as f64;
    let plausible = if n >= 10_000 && (density - KEEP).abs() > 0.05 {
        Check::Fail(format!("kept {density:.3} of the items, flags were {KEEP}"))
    } else {
        Check::Pass
    };
    vec![
        filter.checked_by(|| plausible.clone().and(agree.clone())),
        with_scan.checked_by(|| plausible.and(agree)),
    ]
}

/// Runs a plan: for each type and size, fresh values and flags, the CPU
/// references (rows if asked), then every method.
pub fn run(lab: &Lab, plan: &CompactPlan, progress: &Progress) -> Vec<Row> {
    rows_per_shape(&plan.types, &plan.sizes, 0xc0_0000, |t, n, stream| {
        with_element_type!(t, run_size(lab, plan, n, stream, progress))
    })
}

fn run_size<T: Element>(
    lab: &Lab,
    plan: &CompactPlan,
    n: usize,
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    progress.start(&format!("compact {t} {n}: inputs and CPU references"));
    let fail_all = |error: &gpu_core::Error| -> Vec<Row> {
        plan.methods
            .iter()
            .map(|(mode, algorithm)| {
                progress.step();
                Spec::new(
                    "compact",
                    method_name(*mode, *algorithm),
                    t,
                    n.to_string(),
                    0.0,
                )
                .failed_row(error)
            })
            .collect()
    };
    let with_partition = plan
        .methods
        .iter()
        .any(|(mode, _)| *mode == Mode::PartitionPositive);
    let inputs = match make_inputs::<T>(n, lab.seed(), stream, with_partition) {
        Ok(inputs) => inputs,
        Err(error) => return fail_all(&error),
    };
    let mut rows = Vec::new();
    if plan.cpu_rows {
        rows.extend(cpu_method_rows(&inputs, lab.cpu_reps()));
        progress.step();
        progress.step();
    }
    let gpu = lab.gpu();
    let uploaded = DeviceBuffer::from_host(gpu, &inputs.values)
        .and_then(|input| Ok((input, DeviceBuffer::from_host(gpu, &inputs.flags)?)));
    let (input, flags) = match uploaded {
        Ok(buffers) => buffers,
        Err(error) => {
            rows.extend(fail_all(&error));
            return rows;
        }
    };
    for &(mode, algorithm) in &plan.methods {
        let method = method_name(mode, algorithm);
        progress.start(&format!("compact {t} {n}: {method}"));
        let (expected, expected_count): (&[T], usize) = match mode {
            Mode::Flagged => (&inputs.by_flags, inputs.by_flags.len()),
            Mode::IfPositive => (&inputs.by_predicate, inputs.by_predicate.len()),
            Mode::PartitionPositive => (&inputs.partitioned, inputs.by_predicate.len()),
        };
        let spec = Spec::new(
            "compact",
            method,
            t,
            n.to_string(),
            bytes::<T>(mode, n, expected_count),
        );
        let case = DeviceBuffer::<T>::poisoned(gpu, n).and_then(|output| {
            Ok(CompactCase {
                mode,
                algorithm,
                predicate: predicate::<T>(),
                expected,
                expected_count,
                n,
                input: &input,
                flags: &flags,
                output,
                count: DeviceBuffer::<u64>::zeros(gpu, 1)?,
            })
        });
        rows.push(measure_method(lab, &spec, case, false, progress));
    }
    rows
}

/// The tour: both CPU methods, every algorithm on flags, and the default
/// (single-pass) and the lab's (three-pass, Blelloch) with the predicate.
fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let mut methods: Vec<(Mode, CompactAlgorithm)> =
        methods().into_iter().map(|a| (Mode::Flagged, a)).collect();
    methods.push((
        Mode::IfPositive,
        CompactAlgorithm::ThreePass {
            scan: scan::ScanAlgorithm::Blelloch,
        },
    ));
    methods.push((Mode::IfPositive, CompactAlgorithm::SinglePass));
    let plan = CompactPlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        types: vec![ElementType::I32],
        methods,
        cpu_rows: true,
    };
    run(lab, &plan, progress)
}

/// The two CPU methods at `n`, timed and checked against each other.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    match make_inputs::<i32>(n, seed, 0xc0_0001, false) {
        Ok(inputs) => cpu_method_rows(&inputs, reps),
        Err(error) => {
            vec![Spec::new("compact", "cpu", "i32", n.to_string(), 0.0).failed_row(&error)]
        }
    }
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_names() {
        let plan =
            CompactPlan::from_selection(&Selection::default(), &BENCH_SIZES, &[ElementType::I32])
                .unwrap();
        assert_eq!(plan.methods.len(), 2 * methods().len() + 1);
        assert_eq!(
            method_name(Mode::Flagged, CompactAlgorithm::SinglePass),
            "select_flagged/SinglePass"
        );
        assert_eq!(
            plan_for("partition(x>0)/SinglePass").unwrap().methods,
            vec![(Mode::PartitionPositive, CompactAlgorithm::SinglePass)]
        );
        // 12n for i32 whatever the count.
        assert_eq!(bytes::<i32>(Mode::PartitionPositive, 1000, 10), 12_000.0);
        assert_eq!(
            plan_for("SinglePass").unwrap().methods,
            vec![
                (Mode::Flagged, CompactAlgorithm::SinglePass),
                (Mode::IfPositive, CompactAlgorithm::SinglePass)
            ]
        );
        assert_eq!(
            plan_for("select_flagged/ThreePass/Blelloch")
                .unwrap()
                .methods
                .len(),
            1
        );
        assert!(plan_for("TwoPass").is_err());
    }

    /// The plan of `algos` for one small `i32` size.
    fn plan_for(algos: &str) -> Result<CompactPlan> {
        let selection = Selection {
            algos: Some(algos.into()),
            ..Selection::default()
        };
        CompactPlan::from_selection(&selection, &[10], &[ElementType::I32])
    }

    #[test]
    fn headline_bytes() {
        let n = 1usize << 28;
        assert_eq!(
            bytes::<i32>(Mode::Flagged, n, n / 2),
            (5 * n + 4 * (n / 2)) as f64
        );
        assert_eq!(
            bytes::<i32>(Mode::IfPositive, n, n / 2),
            (4 * n + 4 * (n / 2)) as f64
        );
    }

    #[test]
    fn cpu_methods_agree() {
        let rows = cpu_rows(
            100_003,
            5,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.check.passed()), "{rows:?}");
    }
}
