//! The reduction lab: the sum of the whole input with the CPU serial loop
//! and every GPU algorithm of the `reduce` crate (global-memory tree, one
//! kernel per level; shared-memory tree; the single pass at the bandwidth
//! limit, the default), then the default's other operations on the same
//! input: `argmax`, `minmax` and a fused map (`transform_reduce`, the sum
//! of squares).
//!
//! Bytes moved are the reduce crate's declaration ([`reduce::bytes_moved`]:
//! the input read once, `n · size`; the one-value result is not counted),
//! so GB/s compares each method with the copy ceiling on the same footing
//! as `torch.sum` in `bench/peers.py`. The tree methods move more (their
//! per-level partials), which their lower fraction of the ceiling shows.
//!
//! Types: `i32` and `f32` by default; every element type the crate takes
//! can be selected (`--types u8,f16,…`), the narrow ones included, which
//! the shared `--types` parser of the other labs does not offer.

use gpu_core::{bf16, f16, DeviceBuffer, Element, Error, Gpu, Max, Result, Sum};
use parprims_testkit::bench::Repetitions;
use reduce::{ArgExtreme, ReduceAlgorithm, Transform};

use crate::check::{compare, Check};
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The reduction's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "reduce",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| ReducePlan::from_selection(selection, &BENCH_SIZES, &BENCH_TYPES));

/// Every element type the lab offers, by name.
pub const TYPES: [&str; 12] = [
    "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64",
];

/// The benchmark's default types: the two.
pub const BENCH_TYPES: [&str; 2] = ["i32", "f32"];

/// The benchmark's default sizes: from L2-resident (launch-bound) to the
/// headline 2^28, and 5/8 of two of them.
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

/// One GPU method of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The sum with one algorithm.
    Sum(ReduceAlgorithm),
    /// `argmax` (value and first index of the maximum), the default algorithm.
    Argmax,
    /// `minmax` in one pass, the default algorithm.
    Minmax,
    /// `transform_reduce`: the sum of squares, the map fused into the loads.
    SumOfSquares,
}

impl Method {
    /// Every method, in the lab's order (the lesson's sums first, the
    /// default's other operations after).
    pub fn all() -> Vec<Method> {
        let mut all: Vec<Method> = ReduceAlgorithm::ALL
            .iter()
            .map(|&a| Method::Sum(a))
            .collect();
        all.extend([Method::Argmax, Method::Minmax, Method::SumOfSquares]);
        all
    }

    /// The name in tables and CSV: the algorithm's own name for the sums
    /// (`single-pass`), the operation's for the others (`argmax`).
    pub fn name(self) -> String {
        match self {
            Method::Sum(algorithm) => algorithm.name().to_owned(),
            Method::Argmax => "argmax".to_owned(),
            Method::Minmax => "minmax".to_owned(),
            Method::SumOfSquares => "sum-of-squares".to_owned(),
        }
    }

    /// Bytes the method moves on `n` items of `element_bytes`: the input
    /// read once, as the crate declares.
    pub fn bytes(self, n: usize, element_bytes: usize) -> f64 {
        reduce::bytes_moved(n, element_bytes) as f64
    }
}

/// What a reduction run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducePlan {
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Element type names (from [`TYPES`]).
    pub types: Vec<&'static str>,
    /// GPU methods.
    pub methods: Vec<Method>,
    /// Time the CPU serial sum as a row of its own.
    pub cpu_row: bool,
}

impl ReducePlan {
    /// A plan from a selection, validated without a GPU.
    pub fn from_selection(
        selection: &Selection,
        default_sizes: &[usize],
        default_types: &[&'static str],
    ) -> Result<ReducePlan> {
        selection.refuse_block_threads("the reduction's methods size their own blocks")?;
        let methods = selection.methods(&Method::all(), |m| m.name())?;
        Ok(ReducePlan {
            sizes: selection.counts(default_sizes)?,
            types: parse_types(selection.types.as_deref(), default_types)?,
            methods,
            cpu_row: false,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.types.len() * (self.methods.len() + usize::from(self.cpu_row)))
            as u64
    }
}

/// `--types` for this lab: any of [`TYPES`], else `default`.
pub fn parse_types(text: Option<&str>, default: &[&'static str]) -> Result<Vec<&'static str>> {
    let Some(text) = text else {
        return Ok(default.to_vec());
    };
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let lower = name.to_ascii_lowercase();
        let found = TYPES.iter().find(|t| **t == lower).ok_or_else(|| {
            Error::invalid(
                "types",
                format!("{name:?} is not one of {}", TYPES.join(" ")),
            )
        })?;
        if !out.contains(found) {
            out.push(*found);
        }
    }
    if out.is_empty() {
        return Err(Error::invalid("types", "no type given"));
    }
    Ok(out)
}

/// Calls `$f::<T>(args…)` with `T` the Rust type named `$t` (one of [`TYPES`]).
macro_rules! with_reduce_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            "i8" => $f::<i8>($($arg),*),
            "u8" => $f::<u8>($($arg),*),
            "i16" => $f::<i16>($($arg),*),
            "u16" => $f::<u16>($($arg),*),
            "u32" => $f::<u32>($($arg),*),
            "i64" => $f::<i64>($($arg),*),
            "u64" => $f::<u64>($($arg),*),
            "f16" => $f::<f16>($($arg),*),
            "bf16" => $f::<bf16>($($arg),*),
            "f32" => $f::<f32>($($arg),*),
            "f64" => $f::<f64>($($arg),*),
            _ => $f::<i32>($($arg),*),
        }
    };
}

/// Machine epsilon of the type a sum of `T` accumulates in: `f32` for the
/// 16-bit floats and `f32`, `f64` for `f64` (0 for integers: exact).
fn accumulator_epsilon<T: Element>() -> f64 {
    match (T::IS_FLOAT, T::BYTES) {
        (false, _) => 0.0,
        (true, 8) => f64::EPSILON,
        _ => f32::EPSILON as f64,
    }
}

/// Checks a GPU sum against the input: integers exactly (the wrapping CPU
/// fold), floats against the exact sum (in `f64`, exact for the lab's
/// whole-number inputs) within a bound derived from the input: one
/// rounding of the result into `T`, plus `ε_acc · ⌈log₂ n⌉ · Σ|x|` for the
/// accumulation in any tree order.
pub fn check_sum<T: Element>(got: T, host: &[T]) -> Check {
    if !T::IS_FLOAT {
        return compare(&[got], &[reduce::cpu::reduce(host, &Sum)], host.len());
    }
    let exact: f64 = host.iter().map(|x| x.to_f64()).sum();
    let magnitude: f64 = host.iter().map(|x| x.to_f64().abs()).sum();
    check_float_total(got, exact, magnitude, host.len())
}

/// A float total of `n` terms against its exact value (in `f64`), within
/// one rounding into `T` plus `ε_acc · ⌈log₂ n⌉ · magnitude`, the sum of
/// the terms' absolute values. (The CPU's own left-to-right fold in `T` is
/// no reference for floats: past 2^24 an `f32` running sum stops growing
/// by small terms.)
fn check_float_total<T: Element>(got: T, exact: f64, magnitude: f64, n: usize) -> Check {
    let levels = (n.max(2) as f64).log2().ceil();
    let rounded = T::from_f64(exact).to_f64();
    let allowed = 2.0 * T::EPSILON * exact.abs() + accumulator_epsilon::<T>() * levels * magnitude;
    let g = got.to_f64();
    let ok = if rounded.is_infinite() {
        g == rounded
    } else {
        (g - exact).abs() <= allowed
    };
    if ok {
        Check::Pass
    } else {
        Check::Fail(format!(
            "sum {got}, expected {exact} (allowed ±{allowed:.3e})"
        ))
    }
}

/// Checks an arg-reduction: the same index and value as the CPU's (first
/// index on ties, the first NaN if any).
pub fn check_arg<T: Element>(got: &ArgExtreme<T>, expected: Option<&ArgExtreme<T>>) -> Check {
    match expected {
        None => Check::Fail("the CPU found no maximum (empty input)".into()),
        Some(e) => {
            let same_value = got.value == e.value || (got.value.is_nan() && e.value.is_nan());
            if got.index == e.index && same_value {
                Check::Pass
            } else {
                Check::Fail(format!(
                    "[{}] = {}, expected [{}] = {}",
                    got.index, got.value, e.index, e.value
                ))
            }
        }
    }
}

/// The CPU results a size's GPU methods are checked against.
struct Expected<T: Element> {
    argmax: Option<ArgExtreme<T>>,
    minmax: (T, T),
    /// The sum of squares: the CPU fold (integers, wrapping) and, for
    /// floats, the exact value and the terms' magnitude (they are ≥ 0).
    squares: T,
    squares_exact: f64,
}

/// One method on one uploaded input. Every method writes its result into
/// device buffers with the crate's `*_into` calls, so nothing inside the
/// timed region waits for the host: the events measure the device work.
struct ReduceCase<'a, T: Element> {
    method: Method,
    host: &'a [T],
    expected: &'a Expected<T>,
    input: &'a DeviceBuffer<T>,
    /// The value (sums, argmax), or the minimum and maximum.
    out: DeviceBuffer<T>,
    /// Argmax's index.
    index: DeviceBuffer<u64>,
    square: Transform<T, T>,
}

impl<T: Element> GpuCase for ReduceCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.out.view_mut().fill(gpu, T::poison())?;
        self.index.view_mut().fill(gpu, u64::MAX)
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        let input = self.input.view();
        let default = ReduceAlgorithm::default();
        match self.method {
            Method::Sum(algorithm) => {
                reduce::reduce_into(gpu, input, &Sum, self.out.slice_mut(..1)?, algorithm)
            }
            Method::Argmax => reduce::argmax_into(
                gpu,
                input,
                self.out.slice_mut(..1)?,
                self.index.view_mut(),
                default,
            ),
            Method::Minmax => reduce::minmax_into(gpu, input, self.out.view_mut(), default),
            Method::SumOfSquares => reduce::transform_reduce_into(
                gpu,
                input,
                &self.square,
                &Sum,
                self.out.slice_mut(..1)?,
                default,
            ),
        }
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        let out = self.out.to_host(gpu)?;
        Ok(match self.method {
            Method::Sum(_) => check_sum(out[0], self.host),
            Method::Argmax => {
                let got = ArgExtreme {
                    value: out[0],
                    index: self.index.to_host(gpu)?[0],
                };
                check_arg(&got, self.expected.argmax.as_ref())
            }
            Method::Minmax => compare(&out, &[self.expected.minmax.0, self.expected.minmax.1], 1),
            Method::SumOfSquares if T::IS_FLOAT => {
                let exact = self.expected.squares_exact;
                check_float_total(out[0], exact, exact, self.host.len())
            }
            Method::SumOfSquares => compare(&out[..1], &[self.expected.squares], self.host.len()),
        })
    }
}

/// Runs a plan: for each type and size, fresh inputs, the CPU references
/// (the serial sum a row if asked), then every method.
pub fn run(lab: &Lab, plan: &ReducePlan, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stream = 0x7ed0_0000u64;
    for &t in &plan.types {
        for &n in &plan.sizes {
            stream += 1;
            rows.extend(with_reduce_type!(
                t,
                run_size(lab, plan, n, stream, progress)
            ));
        }
    }
    rows
}

fn run_size<T: Element>(
    lab: &Lab,
    plan: &ReducePlan,
    n: usize,
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let t = T::SUFFIX;
    progress.start(&format!("reduce {t} {n}: inputs and CPU references"));
    let host = values::<T>(n, derive_seed(lab.seed(), stream));
    if plan.cpu_row {
        rows.push(cpu_sum_row(&host, lab.cpu_reps()));
        progress.step();
    }
    let square = Transform::<T, T>::square();
    let expected = Expected {
        argmax: reduce::cpu::argmax(&host),
        minmax: reduce::cpu::minmax(&host),
        squares: reduce::cpu::transform_reduce(&host, &square, &Sum),
        squares_exact: host.iter().map(|x| x.to_f64() * x.to_f64()).sum(),
    };
    let input = match DeviceBuffer::from_host(lab.gpu(), &host) {
        Ok(input) => input,
        Err(error) => {
            for method in &plan.methods {
                let spec = Spec::new("reduce", method.name(), t, n.to_string(), 0.0);
                rows.push(spec.failed_row(&error));
                progress.step();
            }
            return rows;
        }
    };
    for &method in &plan.methods {
        let name = method.name();
        progress.start(&format!("reduce {t} {n}: {name}"));
        let spec = Spec::new("reduce", name, t, n.to_string(), method.bytes(n, T::BYTES));
        let case = DeviceBuffer::<T>::poisoned(lab.gpu(), 2).and_then(|out| {
            Ok(ReduceCase {
                method,
                host: &host,
                expected: &expected,
                input: &input,
                out,
                index: DeviceBuffer::<u64>::zeros(lab.gpu(), 1)?,
                square: square.clone(),
            })
        });
        rows.push(measure_method(lab, &spec, case, false, progress));
    }
    rows
}

/// The CPU serial sum of `host`, timed, checked against the exact sum.
fn cpu_sum_row<T: Element>(host: &[T], reps: Repetitions) -> Row {
    let n = host.len();
    let spec = Spec::new(
        "reduce",
        "cpu serial",
        T::SUFFIX,
        n.to_string(),
        reduce::bytes_moved(n, T::BYTES) as f64,
    );
    let mut total = T::zero();
    let row = measure_cpu(&spec, reps, || {
        total = reduce::cpu::reduce(host, &Sum);
        Ok(())
    });
    // A second route for the integers (a fold with the element's own
    // addition, in reverse); the float bound for the floats.
    let check = if T::IS_FLOAT {
        check_sum(total, host)
    } else {
        let reversed = host.iter().rev().fold(T::zero(), |acc, &x| acc.add(x));
        compare(&[total], &[reversed], n)
    };
    // The maximum through the operator trait agrees with the arg-reduction.
    let max = reduce::cpu::reduce(host, &Max);
    let agrees = match reduce::cpu::argmax(host) {
        Some(found) if found.value == max || T::IS_FLOAT => Check::Pass,
        None if host.is_empty() => Check::Pass,
        _ => Check::Fail("cpu argmax and the Max fold disagree".into()),
    };
    row.checked_by(|| check.and(agrees))
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = ReducePlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        types: vec!["i32"],
        methods: Method::all(),
        cpu_row: true,
    };
    run(lab, &plan, progress)
}

/// The CPU serial sum at `n`, timed and self-checked.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let host = values::<i32>(n, derive_seed(seed, 0x7ed0_0001));
    let spec = Spec::new(
        "reduce",
        "cpu serial",
        "i32",
        n.to_string(),
        reduce::bytes_moved(n, 4) as f64,
    );
    let mut total = 0i32;
    let row = measure_cpu(&spec, reps, || {
        total = reduce::cpu::reduce(&host, &Sum);
        Ok(())
    });
    let wide: i64 = host.iter().map(|&x| i64::from(x)).sum();
    vec![row.checked_by(|| compare(&[i64::from(total)], &[wide], n))]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::DeviceType;

    #[test]
    fn plans_from_selections() {
        let plan =
            ReducePlan::from_selection(&Selection::default(), &BENCH_SIZES, &BENCH_TYPES).unwrap();
        assert_eq!(plan.methods, Method::all());
        assert_eq!(plan.types, vec!["i32", "f32"]);
        assert_eq!(plan.cases(), (7 * 2 * Method::all().len()) as u64);
        let chosen = Selection {
            algos: Some("Single_Pass,argmax".into()),
            types: Some("u8,F16,u8".into()),
            sizes: Some("2^20".into()),
            ..Selection::default()
        };
        let plan = ReducePlan::from_selection(&chosen, &BENCH_SIZES, &BENCH_TYPES).unwrap();
        assert_eq!(
            plan.methods,
            vec![Method::Sum(ReduceAlgorithm::SinglePass), Method::Argmax]
        );
        assert_eq!(plan.types, vec!["u8", "f16"]);
        assert_eq!(plan.sizes, vec![1 << 20]);
        for bad in [
            Selection {
                types: Some("f128".into()),
                ..Selection::default()
            },
            Selection {
                algos: Some("two-pass".into()),
                ..Selection::default()
            },
            Selection {
                block_threads: Some(256),
                ..Selection::default()
            },
        ] {
            assert!(ReducePlan::from_selection(&bad, &BENCH_SIZES, &BENCH_TYPES).is_err());
        }
    }

    #[test]
    fn names_and_bytes() {
        let names: Vec<String> = Method::all().iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "global-tree",
                "shared-tree",
                "single-pass",
                "argmax",
                "minmax",
                "sum-of-squares"
            ]
        );
        // The bytes: the input read once, 4n for i32 and f32.
        let n = 1usize << 28;
        assert_eq!(Method::Argmax.bytes(n, 4), 4.0 * n as f64);
        assert_eq!(
            Method::Sum(ReduceAlgorithm::SinglePass).bytes(n, 1),
            n as f64
        );
    }

    #[test]
    fn sum_checks() {
        let host = values::<i32>(10_001, 4);
        let total = reduce::cpu::reduce(&host, &Sum);
        assert!(check_sum(total, &host).passed());
        assert!(check_sum(total.wrapping_add(1), &host).failed());
        let floats = values::<f32>(100_003, 4);
        let exact: f64 = floats.iter().map(|&x| f64::from(x)).sum();
        assert!(check_sum(exact as f32, &floats).passed());
        assert!(check_sum(f32::poison(), &floats).failed());
        assert!(check_sum(exact as f32 + 1e4, &floats).failed());
        // f16 accumulates in f32 and rounds once: checked against the exact sum.
        let halves = values::<f16>(4097, 9);
        let exact: f64 = halves.iter().map(|x| x.to_f64()).sum();
        assert!(check_sum(f16::from_f64(exact), &halves).passed());
        // A sum of squares past 2^24: the exact total, not the f32 fold
        // (which stalls), is the reference.
        let n = 1usize << 20;
        let exact = 24.0 * n as f64;
        assert!(check_float_total(exact as f32 + 40.0, exact, exact, n).passed());
        assert!(check_float_total(exact as f32 * 1.01, exact, exact, n).failed());
    }

    #[test]
    fn arg_checks() {
        let host = [1.0f32, 7.0, 7.0, -2.0];
        let expected = reduce::cpu::argmax(&host);
        let first = ArgExtreme {
            value: 7.0f32,
            index: 1,
        };
        let second = ArgExtreme {
            value: 7.0f32,
            index: 2,
        };
        assert!(check_arg(&first, expected.as_ref()).passed());
        assert!(check_arg(&second, expected.as_ref()).failed());
        assert!(check_arg(&first, None).failed());
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
        let once = Repetitions {
            warmup: 0,
            timed: 1,
        };
        for row in [
            cpu_sum_row(&values::<f32>(5000, 2), once),
            cpu_sum_row(&values::<u8>(5000, 2), once),
        ] {
            assert!(row.check.passed(), "{:?}", row.check);
        }
    }
}
