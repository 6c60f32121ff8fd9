//! The keyed-runs lab: reduce by key (i32 keys, sum of values of each type
//! `--types` names, `f32` by default) and run-length encoding of sorted
//! i32 keys, runs of 1 to 31 items (about 16 on average), on the
//! single-pass by-key kernel of the compact crate.
//!
//! Bytes moved are the compact crate's declarations: reduce by key
//! n·(4 + v) read and runs·(4 + v) written for v-byte values
//! ([`compact::reduce_by_key_bytes_moved`]); run-length encoding 4n read
//! and 8·runs written ([`compact::run_length_bytes_moved`]), the issue's
//! 4n + 8·runs.

use gpu_core::{DeviceBuffer, Element, ElementType, Gpu, Result, Sum};
use parprims_testkit::bench::Repetitions;
use parprims_testkit::rng::SplitMix64;

use crate::check::{compare, compare_count, Check};
use crate::inputs::derive_seed;
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::with_element_type;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The keyed-runs entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "runs",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| RunsPlan::from_selection(selection, &BENCH_SIZES));

/// The benchmark's default sizes (the headline 2^28 among them).
pub const BENCH_SIZES: [usize; 3] = [1 << 20, 1 << 24, 1 << 28];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 22;

/// The longest run of the generated keys: runs of 1 to 31 items, 16 on
/// average.
pub const MAX_RUN: u64 = 31;

/// The value types of the reduce by key (`--types`): every 4- and 8-byte
/// type.
pub const VALUE_TYPES: [ElementType; 6] = ElementType::ALL;

/// The default value type: `f32`.
pub const DEFAULT_VALUE_TYPES: [ElementType; 1] = [ElementType::F32];

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `compact::reduce_by_key_into`, i32 keys, sum of the plan's values.
    ReduceByKey,
    /// `compact::run_length_encode_into`, sorted i32 keys.
    RunLengthEncode,
}

impl Method {
    /// Both, in table order.
    pub const ALL: [Method; 2] = [Method::ReduceByKey, Method::RunLengthEncode];

    /// The name `--algos` takes.
    pub fn name(self) -> &'static str {
        match self {
            Method::ReduceByKey => "reduce_by_key",
            Method::RunLengthEncode => "run_length_encode",
        }
    }

    /// The name in tables and CSV, the reduce by key's with its value type
    /// (`reduce_by_key/f32-sum`).
    pub fn row_name(self, value: &str) -> String {
        match self {
            Method::ReduceByKey => format!("reduce_by_key/{value}-sum"),
            Method::RunLengthEncode => "run_length_encode".to_owned(),
        }
    }
}

/// What a keyed-runs run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct RunsPlan {
    /// Item counts.
    pub sizes: Vec<usize>,
    /// The methods.
    pub methods: Vec<Method>,
    /// The reduce by key's value types (keys are always i32).
    pub value_types: Vec<ElementType>,
}

impl RunsPlan {
    /// A plan from a selection, validated without a GPU: keys are always
    /// i32, `--types` names the reduce by key's value types (`f32` by
    /// default).
    pub fn from_selection(selection: &Selection, default_sizes: &[usize]) -> Result<RunsPlan> {
        let value_types = selection.types(&DEFAULT_VALUE_TYPES, &VALUE_TYPES)?;
        let names: Vec<String> = Method::ALL.iter().map(|m| m.name().to_owned()).collect();
        let methods = selection
            .algos(&names, &[0, 1])?
            .into_iter()
            .map(|i| Method::ALL[i])
            .collect();
        Ok(RunsPlan {
            sizes: selection.counts(default_sizes)?,
            methods,
            value_types,
        })
    }

    /// Table rows a size makes: the reduce by key once per value type, the
    /// run-length encoding once.
    fn rows_per_size(&self) -> usize {
        self.methods
            .iter()
            .map(|m| match m {
                Method::ReduceByKey => self.value_types.len(),
                Method::RunLengthEncode => 1,
            })
            .sum()
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.rows_per_size()) as u64
    }
}

/// Sorted i32 keys in runs of 1 to [`MAX_RUN`] items, and the generator
/// left where the values start.
fn make_keys(n: usize, seed: u64) -> (Vec<i32>, SplitMix64) {
    let mut rng = SplitMix64::new(seed);
    let mut keys = Vec::with_capacity(n);
    let mut key = i32::MIN;
    while keys.len() < n {
        let run = (1 + rng.below(MAX_RUN)) as usize;
        keys.extend(std::iter::repeat_n(key, run.min(n - keys.len())));
        key = key.wrapping_add(1 + rng.below(3) as i32);
    }
    (keys, rng)
}

/// n values that are small integers, 0 to 7 (every sum exact, whatever the
/// order), drawn from `rng`.
fn small_values<T: Element>(n: usize, mut rng: SplitMix64) -> Vec<T> {
    (0..n).map(|_| T::from_f64(rng.below(8) as f64)).collect()
}

/// Sorted i32 keys in runs of 1 to [`MAX_RUN`] items, and values that are
/// small integers (every sum exact, whatever the order); the keys depend
/// on the seed only, not on `T`.
pub fn make_keys_values<T: Element>(n: usize, seed: u64) -> (Vec<i32>, Vec<T>) {
    let (keys, rng) = make_keys(n, seed);
    (keys, small_values(n, rng))
}

/// Bytes a method moves for `n` items in `runs` runs, the reduce by key's
/// values `value_bytes` wide.
pub fn bytes(method: Method, value_bytes: usize, n: usize, runs: usize) -> f64 {
    match method {
        Method::ReduceByKey => compact::reduce_by_key_bytes_moved(n, runs, 4, value_bytes) as f64,
        Method::RunLengthEncode => compact::run_length_bytes_moved(n, runs, 4) as f64,
    }
}

struct Expected<T> {
    keys: Vec<i32>,
    sums: Vec<T>,
    counts: Vec<u32>,
}

struct RunsCase<'a, T: Element> {
    method: Method,
    expected: &'a Expected<T>,
    keys: &'a DeviceBuffer<i32>,
    values: &'a DeviceBuffer<T>,
    keys_out: DeviceBuffer<i32>,
    sums_out: DeviceBuffer<T>,
    counts_out: DeviceBuffer<u32>,
    runs: DeviceBuffer<u64>,
}

impl<T: Element> GpuCase for RunsCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.keys_out.view_mut().fill(gpu, i32::MAX)?;
        self.runs.view_mut().fill(gpu, u64::MAX)
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        match self.method {
            Method::ReduceByKey => compact::reduce_by_key_into(
                gpu,
                self.keys.view(),
                self.values.view(),
                &Sum,
                self.keys_out.view_mut(),
                self.sums_out.view_mut(),
                self.runs.view_mut(),
            ),
            Method::RunLengthEncode => compact::run_length_encode_into(
                gpu,
                self.keys.view(),
                self.keys_out.view_mut(),
                self.counts_out.view_mut(),
                self.runs.view_mut(),
            ),
        }
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        let runs = self.runs.to_host(gpu)?[0] as usize;
        let counted = compare_count(runs, self.expected.keys.len());
        if counted.failed() {
            return Ok(counted);
        }
        let keys = self.keys_out.slice(..runs)?.to_host(gpu)?;
        let keyed = compare(&keys, &self.expected.keys, 1);
        Ok(match self.method {
            Method::ReduceByKey => {
                let sums = self.sums_out.slice(..runs)?.to_host(gpu)?;
                keyed.and(compare(&sums, &self.expected.sums, 1))
            }
            Method::RunLengthEncode => {
                let counts = self.counts_out.slice(..runs)?.to_host(gpu)?;
                keyed.and(compare(&counts, &self.expected.counts, 1))
            }
        })
    }
}

/// Runs a plan: for each size, fresh keys, then for each value type its
/// values, the CPU references and the reduce by key, then the run-length
/// encoding once (with the first type's case).
pub fn run(lab: &Lab, plan: &RunsPlan, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    for (stream, &n) in plan.sizes.iter().enumerate() {
        let seed = derive_seed(lab.seed(), 0x7e_0000 + stream as u64);
        for (i, &t) in plan.value_types.iter().enumerate() {
            // The run-length encoding does not read the values: it runs
            // once per size, with the first value type.
            let methods: Vec<Method> = plan
                .methods
                .iter()
                .copied()
                .filter(|&m| i == 0 || m == Method::ReduceByKey)
                .collect();
            if !methods.is_empty() {
                rows.extend(with_element_type!(
                    t,
                    run_size(lab, &methods, n, seed, progress)
                ));
            }
        }
    }
    rows
}

fn run_size<T: Element>(
    lab: &Lab,
    methods: &[Method],
    n: usize,
    seed: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    progress.start(&format!("runs i32/{t} {n}: inputs and CPU references"));
    let (keys, values) = make_keys_values::<T>(n, seed);
    let fail_all = |error: &gpu_core::Error| -> Vec<Row> {
        methods
            .iter()
            .map(|m| {
                progress.step();
                Spec::new("runs", m.row_name(t), "i32", n.to_string(), 0.0).failed_row(error)
            })
            .collect()
    };
    let expected = match compact::cpu_by_key::reduce_by_key(&keys, &values, &Sum) {
        Ok((unique, sums)) => Expected {
            keys: unique,
            sums,
            counts: compact::cpu_by_key::run_length_encode(&keys).1,
        },
        Err(error) => return fail_all(&error),
    };
    let gpu = lab.gpu();
    let uploaded = DeviceBuffer::from_host(gpu, &keys)
        .and_then(|k| Ok((k, DeviceBuffer::from_host(gpu, &values)?)));
    let (keys_buffer, values_buffer) = match uploaded {
        Ok(buffers) => buffers,
        Err(error) => return fail_all(&error),
    };
    let runs = expected.keys.len();
    let mut rows = Vec::new();
    for &method in methods {
        let name = method.row_name(t);
        progress.start(&format!("runs i32 {n}: {name}"));
        let spec = Spec::new(
            "runs",
            name,
            "i32",
            n.to_string(),
            bytes(method, T::BYTES, n, runs),
        );
        // Outputs hold n items (the run count is only known on the device);
        // the method that does not write one gets a single item.
        let case = (|| {
            let (sums_len, counts_len) = match method {
                Method::ReduceByKey => (n, 1),
                Method::RunLengthEncode => (1, n),
            };
            Ok(RunsCase {
                method,
                expected: &expected,
                keys: &keys_buffer,
                values: &values_buffer,
                keys_out: DeviceBuffer::<i32>::zeros(gpu, n)?,
                sums_out: DeviceBuffer::<T>::zeros(gpu, sums_len)?,
                counts_out: DeviceBuffer::<u32>::zeros(gpu, counts_len)?,
                runs: DeviceBuffer::<u64>::zeros(gpu, 1)?,
            })
        })();
        rows.push(measure_method(lab, &spec, case, false, progress));
    }
    rows
}

/// The tour: both methods at a modest size.
fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = RunsPlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        methods: Method::ALL.to_vec(),
        value_types: DEFAULT_VALUE_TYPES.to_vec(),
    };
    run(lab, &plan, progress)
}

/// The CPU references at `n`, timed; run-length encoding checked against
/// reduce by key with values 1 (two routes to the same counts).
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let (keys, values) = make_keys_values::<f32>(n, derive_seed(seed, 0x7e_0001));
    let mut sums = (Vec::new(), Vec::new());
    let spec = Spec::new(
        "runs",
        "reduce_by_key/cpu",
        "i32",
        n.to_string(),
        bytes(Method::ReduceByKey, 4, n, n / 16),
    );
    let reduce = measure_cpu(&spec, reps, || {
        sums = compact::cpu_by_key::reduce_by_key(&keys, &values, &Sum)?;
        Ok(())
    });
    let mut encoded = (Vec::new(), Vec::new());
    let spec = Spec::new(
        "runs",
        "run_length_encode/cpu",
        "i32",
        n.to_string(),
        bytes(Method::RunLengthEncode, 4, n, n / 16),
    );
    let rle = measure_cpu(&spec, reps, || {
        encoded = compact::cpu_by_key::run_length_encode(&keys);
        Ok(())
    });
    let ones = vec![1u32; n];
    let agree = match compact::cpu_by_key::reduce_by_key(&keys, &ones, &Sum) {
        Ok((k, c)) => compare(&encoded.1, &c, 1).and(compare(&encoded.0, &k, 1)),
        Err(error) => Check::Fail(error.to_string()),
    };
    let keyed = compare(&sums.0, &encoded.0, 1);
    vec![reduce.checked_by(|| keyed), rle.checked_by(|| agree)]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_in_runs_of_about_sixteen() {
        let n = 1 << 20;
        let (keys, values) = make_keys_values::<f32>(n, 9);
        assert_eq!((keys.len(), values.len()), (n, n));
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        let runs = compact::cpu_by_key::runs(&keys).len();
        let mean = n as f64 / runs as f64;
        assert!((14.0..18.0).contains(&mean), "mean run {mean}");
        // The keys do not depend on the value type; the values are the same
        // small integers in every type.
        let (wide_keys, wide_values) = make_keys_values::<i64>(n, 9);
        assert_eq!(wide_keys, keys);
        assert!(wide_values
            .iter()
            .zip(&values)
            .all(|(&w, &v)| w as f32 == v));
    }

    #[test]
    fn plans_and_bytes() {
        let plan = RunsPlan::from_selection(&Selection::default(), &BENCH_SIZES).unwrap();
        assert_eq!(plan.methods, Method::ALL);
        assert_eq!(plan.value_types, [ElementType::F32]);
        assert_eq!(plan.cases(), 6);
        assert_eq!(Method::ReduceByKey.row_name("f32"), "reduce_by_key/f32-sum");
        // Three value types: three reduce-by-key rows and one run-length
        // encoding per size.
        let wide = Selection {
            types: Some("f32,i64,f64".into()),
            ..Selection::default()
        };
        let plan = RunsPlan::from_selection(&wide, &BENCH_SIZES).unwrap();
        assert_eq!(
            plan.value_types,
            [ElementType::F32, ElementType::I64, ElementType::F64]
        );
        assert_eq!(plan.cases(), 3 * 4);
        let only_reduce = Selection {
            types: Some("u64".into()),
            algos: Some("reduce_by_key".into()),
            ..Selection::default()
        };
        let plan = RunsPlan::from_selection(&only_reduce, &[10]).unwrap();
        assert_eq!(
            (plan.methods.as_slice(), plan.cases()),
            (&[Method::ReduceByKey][..], 1)
        );
        let n = 1usize << 28;
        assert_eq!(
            bytes(Method::ReduceByKey, 4, n, n / 16),
            (8 * n + 8 * (n / 16)) as f64
        );
        // 8-byte values: n·(4 + 8) read, runs·(4 + 8) written.
        assert_eq!(
            bytes(Method::ReduceByKey, 8, n, n / 16),
            (12 * n + 12 * (n / 16)) as f64
        );
        assert_eq!(
            bytes(Method::RunLengthEncode, 4, n, n / 16),
            (4 * n + 8 * (n / 16)) as f64
        );
        let bad = Selection {
            algos: Some("sort".into()),
            ..Selection::default()
        };
        assert!(RunsPlan::from_selection(&bad, &[10]).is_err());
    }

    #[test]
    fn cpu_references_agree() {
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
