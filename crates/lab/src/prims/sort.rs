//! The sort benchmark: the `sort` crate's default (the Onesweep LSD radix
//! sort) on keys alone, on key–index pairs, as argsort and as top-k, on
//! uniform keys, keys drawn from 2^16 distinct values and already sorted
//! keys (the three inputs).
//!
//! Bytes moved are the sort's own declaration ([`sort::bytes_moved`]: the
//! upsweep's read of the keys, then one read and one write of keys and
//! values per 8-bit digit pass), so the copy-ceiling fraction says how
//! close each pass runs to a copy; keys per second are n / time (the
//! shape column is n). Top-k declares its reads of the keys (a histogram
//! per digit, the count and the filter).
//!
//! Checks are O(n) and exact: keys-only output must be ordered and the
//! same multiset as the input (count and a 64-bit hash of the bits);
//! pairs and argsort carry the input index, so output i must be
//! `keys[index[i]]` bit for bit, ordered, with indices increasing among
//! equal keys (stability).

use gpu_core::{DeviceBuffer, Error, Gpu, Result};
use parprims_testkit::bench::Repetitions;
use parprims_testkit::rng::SplitMix64;
use sort::{Order, SortKey};

use crate::check::Check;
use crate::inputs::derive_seed;
use crate::progress::Progress;
use crate::run::{GpuCase, Spec};
use crate::select::Selection;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The sort's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "sort",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| SortPlan::from_selection(selection));

/// Key types the benchmark offers.
pub const TYPES: [&str; 10] = [
    "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64",
];

/// The benchmark's default key types: the u32, f32 and u64.
pub const BENCH_TYPES: [&str; 3] = ["u32", "f32", "u64"];

/// The benchmark's default sizes: the one-block path, launch-bound sizes
/// and the headline 2^28.
pub const BENCH_SIZES: [usize; 6] = [1 << 13, 1 << 16, 1 << 20, 1 << 24, 1 << 27, 1 << 28];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 22;

/// Top-k's k in the benchmark.
pub const TOP_K: usize = 1024;

/// How the keys are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Uniform random bits.
    Uniform,
    /// Drawn from 2^16 distinct uniform values.
    Distinct16,
    /// Uniform, then sorted.
    Sorted,
}

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `sort_keys`.
    Keys,
    /// `sort_pairs` with `u32` input indices as values.
    Pairs,
    /// `argsort` into `u32` indices.
    Argsort,
    /// `top_k` (the [`TOP_K`] largest).
    TopK,
}

/// One GPU method of the table: an operation on an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method {
    /// The operation.
    pub operation: Operation,
    /// The input.
    pub input: Input,
}

impl Method {
    /// Every method: the three inputs for keys, then pairs, argsort and
    /// top-k on uniform keys.
    pub fn all() -> Vec<Method> {
        let m = |operation, input| Method { operation, input };
        vec![
            m(Operation::Keys, Input::Uniform),
            m(Operation::Keys, Input::Distinct16),
            m(Operation::Keys, Input::Sorted),
            m(Operation::Pairs, Input::Uniform),
            m(Operation::Argsort, Input::Uniform),
            m(Operation::TopK, Input::Uniform),
        ]
    }

    /// The name in tables and CSV: `onesweep`, `onesweep/distinct-2^16`,
    /// `onesweep/sorted`, `onesweep-pairs`, `argsort`, `top-k`.
    pub fn name(self) -> String {
        let base = match self.operation {
            Operation::Keys => "onesweep",
            Operation::Pairs => "onesweep-pairs",
            Operation::Argsort => "argsort",
            Operation::TopK => "top-k",
        };
        match self.input {
            Input::Uniform => base.to_owned(),
            Input::Distinct16 => format!("{base}/distinct-2^16"),
            Input::Sorted => format!("{base}/sorted"),
        }
    }

    /// Bytes the method declares for `n` keys of `key_bytes`.
    pub fn bytes(self, n: usize, key_bytes: usize) -> f64 {
        let passes = (key_bytes * 8).div_ceil(8) as u32;
        match self.operation {
            Operation::Keys => sort::bytes_moved(n, key_bytes, 0, passes) as f64,
            Operation::Pairs => sort::bytes_moved(n, key_bytes, 4, passes) as f64,
            // The index fill, then the pair sort.
            Operation::Argsort => {
                (4 * n) as f64 + sort::bytes_moved(n, key_bytes, 4, passes) as f64
            }
            Operation::TopK => ((passes as usize + 2) * n * key_bytes) as f64,
        }
    }
}

/// What a sort run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct SortPlan {
    /// Key counts.
    pub sizes: Vec<usize>,
    /// Key type names (from [`TYPES`]).
    pub types: Vec<&'static str>,
    /// GPU methods.
    pub methods: Vec<Method>,
}

impl SortPlan {
    /// A plan from a selection, validated without a GPU.
    pub fn from_selection(selection: &Selection) -> Result<SortPlan> {
        selection.refuse_block_threads("the sort's kernels size their own blocks")?;
        let methods = selection.methods(&Method::all(), |m| m.name())?;
        Ok(SortPlan {
            sizes: selection.counts(&BENCH_SIZES)?,
            types: super::reduce::parse_types(selection.types.as_deref(), &BENCH_TYPES).and_then(
                |types| {
                    types
                        .into_iter()
                        .map(|t| {
                            TYPES.iter().copied().find(|k| *k == t).ok_or_else(|| {
                                Error::invalid("types", format!("{t} is not a sort key type"))
                            })
                        })
                        .collect()
                },
            )?,
            methods,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.types.len() * self.methods.len()) as u64
    }
}

/// Calls `$f::<K>(args…)` with `K` the key type named `$t` (one of [`TYPES`]).
macro_rules! with_key_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            "u8" => $f::<u8>($($arg),*),
            "u16" => $f::<u16>($($arg),*),
            "u64" => $f::<u64>($($arg),*),
            "i8" => $f::<i8>($($arg),*),
            "i16" => $f::<i16>($($arg),*),
            "i32" => $f::<i32>($($arg),*),
            "i64" => $f::<i64>($($arg),*),
            "f32" => $f::<f32>($($arg),*),
            "f64" => $f::<f64>($($arg),*),
            _ => $f::<u32>($($arg),*),
        }
    };
}

/// `n` keys of `input`'s kind from `seed` (random bits; floats then include
/// NaNs and infinities, which sort by the crate's total order).
pub fn keys<K: SortKey>(input: Input, n: usize, seed: u64) -> Vec<K> {
    let mut rng = SplitMix64::new(seed);
    let draw = |rng: &mut SplitMix64| -> K {
        let word = rng.next_u64().to_le_bytes();
        bytemuck::pod_read_unaligned(&word[..K::BYTES])
    };
    match input {
        Input::Uniform => (0..n).map(|_| draw(&mut rng)).collect(),
        Input::Distinct16 => {
            let pool: Vec<K> = (0..1 << 16).map(|_| draw(&mut rng)).collect();
            (0..n)
                .map(|_| pool[(rng.next_u64() >> 48) as usize])
                .collect()
        }
        Input::Sorted => {
            let keys: Vec<K> = (0..n).map(|_| draw(&mut rng)).collect();
            sorted_by_radix_image(keys)
        }
    }
}

/// `keys` in ascending order of their radix images, by a host LSD radix
/// sort with 11-bit digits: O(n) per digit, a few seconds for 2^28 keys
/// where a comparison sort takes half a minute.
fn sorted_by_radix_image<K: SortKey>(mut keys: Vec<K>) -> Vec<K> {
    const DIGIT_BITS: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT_BITS;
    let image = |k: &K| -> u64 { k.to_radix().into() };
    let mut spare = keys.clone();
    let mut shift = 0;
    while shift < K::KEY_BITS {
        let digit = |k: &K| ((image(k) >> shift) as usize) & (BUCKETS - 1);
        let mut start = vec![0usize; BUCKETS];
        for k in &keys {
            start[digit(k)] += 1;
        }
        let mut sum = 0;
        for slot in &mut start {
            (*slot, sum) = (sum, sum + *slot);
        }
        for k in &keys {
            let d = digit(k);
            spare[start[d]] = *k;
            start[d] += 1;
        }
        std::mem::swap(&mut keys, &mut spare);
        shift += DIGIT_BITS;
    }
    keys
}

/// `work` over `0..len` cut into one contiguous range per host thread,
/// run in parallel, results in range order (the checks of 2^28-key outputs
/// take seconds, not minutes, on a many-core host).
fn over_ranges<R, F>(len: usize, work: F) -> Vec<R>
where
    R: Send,
    F: Fn(std::ops::Range<usize>) -> R + Sync,
{
    const MIN_PER_THREAD: usize = 1 << 16;
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(len.div_ceil(MIN_PER_THREAD))
        .max(1);
    if threads == 1 {
        return vec![work(0..len)];
    }
    let chunk = len.div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * chunk).min(len)..((t + 1) * chunk).min(len);
                scope.spawn(move || work(range))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The failure `check` reports at the lowest position of `0..len`, the
/// ranges checked in parallel.
fn first_failure<F>(len: usize, check: F) -> Option<String>
where
    F: Fn(std::ops::Range<usize>) -> Option<String> + Sync,
{
    over_ranges(len, check).into_iter().flatten().next()
}

/// An order-independent 64-bit hash of a multiset of keys' bits (a
/// wrapping sum of each key's mixed bits, so ranges hash in parallel).
fn multiset_hash<K: SortKey>(keys: &[K]) -> u64 {
    let sum_of = |part: &[K]| {
        part.iter().fold(0u64, |acc, k| {
            let mut word = [0u8; 8];
            word[..K::BYTES].copy_from_slice(bytemuck::bytes_of(k));
            acc.wrapping_add(SplitMix64::new(u64::from_le_bytes(word)).next_u64())
        })
    };
    over_ranges(keys.len(), |range| sum_of(&keys[range]))
        .into_iter()
        .fold(0, u64::wrapping_add)
}

/// Checks a keys-only result: ordered (ascending radix images) and the
/// input's multiset.
pub fn check_sorted_keys<K: SortKey>(got: &[K], input_hash: u64, n: usize) -> Check {
    if got.len() != n {
        return Check::Fail(format!("{} keys, expected {n}", got.len()));
    }
    let disorder = first_failure(n, |range| {
        let i = range
            .filter(|&i| i > 0)
            .find(|&i| got[i - 1].to_radix() > got[i].to_radix())?;
        Some(format!("out of order at {i}: {} > {}", got[i - 1], got[i]))
    });
    if let Some(message) = disorder {
        return Check::Fail(message);
    }
    if multiset_hash(got) != input_hash {
        return Check::Fail("not a permutation of the input".into());
    }
    Check::Pass
}

/// Checks keys and their input indices: `got[i]` is `input[index[i]]` bit
/// for bit, ordered (ascending, or descending when `descending`), indices
/// increasing among equal keys.
pub fn check_indexed<K: SortKey>(
    input: &[K],
    got: Option<&[K]>,
    index: &[u32],
    descending: bool,
) -> Check {
    let key_at = |i: usize| input[index[i] as usize];
    if let Some(i) = index.iter().position(|&j| j as usize >= input.len()) {
        return Check::Fail(format!("index {} at {i} is out of range", index[i]));
    }
    if got.is_some_and(|got| got.len() != index.len()) {
        return Check::Fail("keys and indices differ in length".into());
    }
    let failure = first_failure(index.len(), |range| {
        for i in range {
            if let Some(got) = got {
                if bytemuck::bytes_of(&got[i]) != bytemuck::bytes_of(&key_at(i)) {
                    return Some(format!("key {i} is not the input's key at its index"));
                }
            }
            if i == 0 {
                continue;
            }
            let (a, b) = (
                key_at(i - 1).ordered_radix(descending),
                key_at(i).ordered_radix(descending),
            );
            if a > b {
                return Some(format!("out of order at {i}"));
            }
            if a == b && index[i - 1] >= index[i] {
                return Some(format!("not stable at {i}"));
            }
        }
        None
    });
    failure.map_or(Check::Pass, Check::Fail)
}

/// Checks that `indices` (already checked ordered, largest first, stable)
/// are exactly the top k: every key larger than the last one is in, and the
/// keys equal to the last one are the first ones in input order. O(n).
pub fn check_top_k_set<K: SortKey>(input: &[K], indices: &[u32]) -> Check {
    let Some(&last) = indices.last() else {
        return Check::Pass;
    };
    let threshold = input[last as usize].ordered_radix(true);
    let better = input
        .iter()
        .filter(|k| k.ordered_radix(true) < threshold)
        .count();
    let in_result = indices
        .iter()
        .filter(|&&i| input[i as usize].ordered_radix(true) < threshold)
        .count();
    if better != in_result {
        return Check::Fail(format!(
            "{better} keys beat the k-th, {in_result} of them in the result"
        ));
    }
    // The equal keys taken must be the first ones in input order.
    let taken = indices.len() - better;
    let first_equal: Vec<u32> = (0..input.len() as u32)
        .filter(|&i| input[i as usize].ordered_radix(true) == threshold)
        .take(taken)
        .collect();
    let got_equal: Vec<u32> = indices[better..].to_vec();
    if first_equal != got_equal {
        return Check::Fail("ties with the k-th key are not the first in input order".into());
    }
    Check::Pass
}

/// One method on one uploaded input.
struct SortCase<'a, K: SortKey> {
    method: Method,
    host: &'a [K],
    input: &'a DeviceBuffer<K>,
    input_hash: u64,
    indices: &'a DeviceBuffer<u32>,
    keys_out: DeviceBuffer<K>,
    values_out: DeviceBuffer<u32>,
    top_values: DeviceBuffer<K>,
    top_indices: DeviceBuffer<u64>,
}

impl<K: SortKey> GpuCase for SortCase<'_, K> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.keys_out.view_mut().fill(gpu, K::poison())?;
        self.values_out.view_mut().fill(gpu, u32::MAX)
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        let input = self.input.view();
        match self.method.operation {
            Operation::Keys => {
                sort::sort_keys(gpu, input, self.keys_out.view_mut(), Order::Ascending)
            }
            Operation::Pairs => sort::sort_pairs(
                gpu,
                input,
                self.indices.view(),
                self.keys_out.view_mut(),
                self.values_out.view_mut(),
                Order::Ascending,
            ),
            Operation::Argsort => {
                sort::argsort(gpu, input, self.values_out.view_mut(), Order::Ascending)
            }
            Operation::TopK => sort::top_k_into(
                gpu,
                input,
                self.top_values.view_mut(),
                self.top_indices.view_mut(),
                true,
            ),
        }
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        let n = self.host.len();
        Ok(match self.method.operation {
            Operation::Keys => check_sorted_keys(&self.keys_out.to_host(gpu)?, self.input_hash, n),
            Operation::Pairs => check_indexed(
                self.host,
                Some(&self.keys_out.to_host(gpu)?),
                &self.values_out.to_host(gpu)?,
                false,
            ),
            Operation::Argsort => {
                check_indexed(self.host, None, &self.values_out.to_host(gpu)?, false)
            }
            Operation::TopK => {
                let values = self.top_values.to_host(gpu)?;
                let indices: Vec<u32> = self
                    .top_indices
                    .to_host(gpu)?
                    .into_iter()
                    .map(|i| i as u32)
                    .collect();
                check_indexed(self.host, Some(&values), &indices, true)
                    .and(check_top_k_set(self.host, &indices))
            }
        })
    }
}

/// Runs a plan: for each type, size and input, fresh keys, then every
/// method on them.
pub fn run(lab: &Lab, plan: &SortPlan, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stream = 0x5047_0000u64;
    for &t in &plan.types {
        for &n in &plan.sizes {
            stream += 1;
            rows.extend(with_key_type!(t, run_size(lab, plan, n, stream, progress)));
        }
    }
    rows
}

fn run_size<K: SortKey>(
    lab: &Lab,
    plan: &SortPlan,
    n: usize,
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let t = K::SUFFIX;
    for input_kind in [Input::Uniform, Input::Distinct16, Input::Sorted] {
        let methods: Vec<Method> = plan
            .methods
            .iter()
            .copied()
            .filter(|m| m.input == input_kind)
            .collect();
        if methods.is_empty() {
            continue;
        }
        progress.start(&format!("sort {t} {n}: inputs"));
        let host = keys::<K>(input_kind, n, derive_seed(lab.seed(), stream));
        let input_hash = multiset_hash(&host);
        let index: Vec<u32> = (0..n as u32).collect();
        let uploads = DeviceBuffer::from_host(lab.gpu(), &host)
            .and_then(|input| Ok((input, DeviceBuffer::from_host(lab.gpu(), &index)?)));
        let (input, indices) = match uploads {
            Ok(pair) => pair,
            Err(error) => {
                for method in &methods {
                    let spec = Spec::new("sort", method.name(), t, n.to_string(), 0.0);
                    rows.push(spec.failed_row(&error));
                    progress.step();
                }
                continue;
            }
        };
        for &method in &methods {
            let name = method.name();
            progress.start(&format!("sort {t} {n}: {name}"));
            let spec = Spec::new("sort", name, t, n.to_string(), method.bytes(n, K::BYTES));
            let gpu = lab.gpu();
            let k = TOP_K.min(n);
            let case = (|| {
                Ok(SortCase {
                    method,
                    host: &host,
                    input: &input,
                    input_hash,
                    indices: &indices,
                    keys_out: DeviceBuffer::<K>::poisoned(gpu, n)?,
                    values_out: DeviceBuffer::<u32>::zeros(gpu, n)?,
                    top_values: DeviceBuffer::<K>::poisoned(gpu, k)?,
                    top_indices: DeviceBuffer::<u64>::zeros(gpu, k)?,
                })
            })();
            rows.push(measure_method(lab, &spec, case, false, progress));
        }
    }
    rows
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = SortPlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        types: vec!["u32"],
        methods: Method::all(),
    };
    run(lab, &plan, progress)
}

/// The CPU reference (the standard library's stable sort by radix image)
/// at `n`, timed and checked.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let host = keys::<u32>(Input::Uniform, n, derive_seed(seed, 0x5047_0001));
    let spec = Spec::new(
        "sort",
        "cpu stable sort",
        "u32",
        n.to_string(),
        sort::bytes_moved(n, 4, 0, 4) as f64,
    );
    let mut sorted = Vec::new();
    let row = crate::run::measure_cpu(&spec, reps, || {
        sorted = sort::cpu::sort_keys(&host, false, &(0..32));
        Ok(())
    });
    let hash = multiset_hash(&host);
    vec![row.checked_by(|| check_sorted_keys(&sorted, hash, n))]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_names() {
        let plan = SortPlan::from_selection(&Selection::default()).unwrap();
        assert_eq!(plan.methods, Method::all());
        assert_eq!(plan.types, vec!["u32", "f32", "u64"]);
        assert_eq!(plan.cases(), (6 * 3 * 6) as u64);
        let names: Vec<String> = Method::all().iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "onesweep",
                "onesweep/distinct-2^16",
                "onesweep/sorted",
                "onesweep-pairs",
                "argsort",
                "top-k"
            ]
        );
        let chosen = Selection {
            algos: Some("onesweep,argsort".into()),
            types: Some("i32".into()),
            sizes: Some("2^20".into()),
            ..Selection::default()
        };
        let plan = SortPlan::from_selection(&chosen).unwrap();
        assert_eq!(plan.methods.len(), 2);
        assert_eq!(plan.types, vec!["i32"]);
        for bad in [
            Selection {
                types: Some("f16".into()),
                ..Selection::default()
            },
            Selection {
                block_threads: Some(256),
                ..Selection::default()
            },
        ] {
            assert!(SortPlan::from_selection(&bad).is_err());
        }
        // u32 keys, 4 passes: 4n + 4 · 8n bytes.
        assert_eq!(Method::all()[0].bytes(1 << 20, 4), (36u64 << 20) as f64);
    }

    #[test]
    fn checks_catch_disorder_loss_and_instability() {
        let host = keys::<f32>(Input::Distinct16, 5000, 3);
        let hash = multiset_hash(&host);
        let sorted = sort::cpu::sort_keys(&host, false, &(0..32));
        assert!(check_sorted_keys(&sorted, hash, 5000).passed());
        let mut swapped = sorted.clone();
        swapped.swap(10, 4000);
        assert!(check_sorted_keys(&swapped, hash, 5000).failed());
        let mut lost = sorted.clone();
        lost[7] = lost[8];
        assert!(check_sorted_keys(&lost, hash, 5000).failed() || lost == sorted);
        let order: Vec<u32> = sort::cpu::argsort(&host, false, &(0..32))
            .into_iter()
            .map(|i| i as u32)
            .collect();
        assert!(check_indexed(&host, Some(&sorted), &order, false).passed());
        let ties = keys::<u8>(Input::Uniform, 3000, 5);
        let mut order: Vec<u32> = sort::cpu::argsort(&ties, false, &(0..8))
            .into_iter()
            .map(|i| i as u32)
            .collect();
        assert!(check_indexed(&ties, None, &order, false).passed());
        // Swap two equal keys' indices: still ordered, no longer stable.
        let i = (1..order.len())
            .find(|&i| ties[order[i - 1] as usize] == ties[order[i] as usize])
            .unwrap();
        order.swap(i - 1, i);
        assert!(check_indexed(&ties, None, &order, false).failed());
    }

    #[test]
    fn host_radix_sort_orders_by_image() {
        for n in [0, 1, 2, 5000] {
            let floats = keys::<f32>(Input::Uniform, n, 11);
            let mut want = floats.clone();
            want.sort_by_key(|k| k.to_radix());
            let got = sorted_by_radix_image(floats);
            assert_eq!(
                bytemuck::cast_slice::<f32, u32>(&got),
                bytemuck::cast_slice::<f32, u32>(&want)
            );
            let wide = keys::<i64>(Input::Uniform, n, 12);
            let mut want = wide.clone();
            want.sort_by_key(|k| k.to_radix());
            assert_eq!(sorted_by_radix_image(wide), want);
        }
        let sorted = keys::<u16>(Input::Sorted, 70_000, 13);
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn parallel_checks_find_the_first_failure() {
        let n = 1 << 20;
        let host: Vec<u32> = (0..n as u32).collect();
        let hash = multiset_hash(&host);
        assert!(check_sorted_keys(&host, hash, n).passed());
        let mut late = host.clone();
        late.swap(n - 3, n - 2);
        assert!(check_sorted_keys(&late, hash, n).failed());
        let mut early = late.clone();
        early.swap(5, 6);
        match check_sorted_keys(&early, hash, n) {
            Check::Fail(message) => assert!(message.starts_with("out of order at 6"), "{message}"),
            other => panic!("{other:?}"),
        }
        let order: Vec<u32> = (0..n as u32).collect();
        assert!(check_indexed(&host, Some(&host), &order, false).passed());
        let mut unstable = order.clone();
        unstable[n / 2] = unstable[n / 2 - 1];
        assert!(check_indexed(&host, None, &unstable, false).failed());
        assert!(check_indexed(&host, Some(&host[1..]), &order, false).failed());
    }

    #[test]
    fn top_k_set_check() {
        let host = keys::<u8>(Input::Uniform, 4000, 9);
        for k in [1, 10, 500, 4000] {
            let (_, want) = sort::cpu::top_k(&host, k, true);
            let want: Vec<u32> = want.into_iter().map(|i| i as u32).collect();
            assert!(check_top_k_set(&host, &want).passed());
            assert!(check_indexed(&host, None, &want, true).passed());
        }
        let (_, want) = sort::cpu::top_k(&host, 300, true);
        let mut wrong: Vec<u32> = want.into_iter().map(|i| i as u32).collect();
        // Replace the last index by a later key equal to it.
        let last = *wrong.last().unwrap();
        let later = (last + 1..4000)
            .find(|&i| host[i as usize] == host[last as usize] && !wrong.contains(&i))
            .unwrap();
        *wrong.last_mut().unwrap() = later;
        assert!(check_top_k_set(&host, &wrong).failed());
    }

    #[test]
    fn cpu_rows_pass_their_self_check() {
        let once = Repetitions {
            warmup: 0,
            timed: 1,
        };
        let rows = cpu_rows(100_003, 1, once);
        assert!(rows[0].check.passed(), "{:?}", rows[0].check);
    }
}
