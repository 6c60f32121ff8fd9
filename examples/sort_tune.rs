//! The Onesweep sort's tuning sweep: every policy of
//! `sort::policy::sweep_grid` (digit passes of 256 × {16, 24},
//! 384 × {12, 16}, 512 × {12, 16} keys, ranked by ballots or by
//! match-any, tiles counted early; each case's default,
//! `OnesweepPolicy::default_for`, added where the grid lacks it) over u32 keys, u64 keys and u32 keys with u32 values, at 2^24
//! and 2^28 keys (2^27 for u64).
//!
//! Per case and size: uniformly random keys (every bit pattern), drawn once
//! on the host by every core (there is no device random fill); the
//! modules of every policy compiled first, in parallel, into the disk
//! cache; per policy warm-up runs, then the median of `--reps` CUDA-event
//! timings (`parprims_testkit::bench::time_device`) of an out-of-place
//! ascending sort; then one check of the output on the host in O(n) by
//! every core: keys in order and the same multiset as the input (two
//! independent 64-bit sums of hashed keys), and for pairs, whose values
//! are the input positions, each key equal to the input's key at its
//! value, ties in increasing value (stable) and the values the same
//! multiset as 0 … n − 1. One line per policy, fastest first, with its
//! time relative to the case's default; the exit status is 2 when any check
//! failed.
//!
//! ```sh
//! cargo run --release --example sort_tune                       # every case, both sizes
//! cargo run --release --example sort_tune -- --cases u32 --sizes 2^24 --reps 20
//! cargo run --release --example sort_tune -- --grid upsweep     # the upsweep's counters, both ways
//! cargo run --release --example sort_tune -- --grid counts --cases u32,f32,u64,u32-pairs,f32-pairs
//! cargo run --release --example sort_tune -- --grid order --cases u32,f32,u64,u32-pairs --sizes 2^18,2^24,2^28
//! cargo run --release --example sort_tune -- --grid digits --cases u32,f32,u64,u32-pairs,f32-pairs
//! cargo run --release --example sort_tune -- --grid rank --cases u32,f32,u64,u32-pairs
//! ```
//!
//! `--grid upsweep` runs the three cases' defaults each with the upsweep's
//! counters in per-lane copies (the default) and in one shared set
//! (`sort::policy::UpsweepCounters`); `--grid counts` runs the defaults
//! of u32, f32 and u64 keys and u32 and f32 keys with u32 values, each
//! with every way of the digit pass's tile counts
//! (`sort::policy::TileCounts`); `--grid order` runs the same defaults
//! and `OnesweepPolicy::SMALL_INPUT`, each with both ways of finding a
//! pass's tile (`sort::policy::TileOrder`); `--grid digits` runs the
//! defaults with every way of tile counts, each with the pass's digits
//! recomputed and packed (`sort::policy::PassDigits`); `--grid rank` runs
//! the defaults with every way of finding a key's peers
//! (`sort::policy::RankMethod`), and the shared masks of
//! `RankMethod::AtomicOr` with every way of tile counts. The `f32` cases
//! (keys of every bit pattern, NaNs included) are swept only when asked
//! for.

use std::process::ExitCode;

use clap::Parser;
use gpu_core::kernel::{warm_disk_cache, DiskCache};
use gpu_core::{DeviceBuffer, Error, Gpu, Result};
use parprims_lab::sizes::parse_counts;
use parprims_testkit::bench::{checked_exit, time_device, Repetitions};
use parprims_testkit::rng::SplitMix64;
use sort::key::{PayloadWidth, SortKey};
use sort::policy::{
    small_sweep_grid, sweep_grid, OnesweepPolicy, PassDigits, RankMethod, TileCounts, TileOrder,
    UpsweepCounters,
};
use sort::Order;

/// The Onesweep sort's policy sweep.
#[derive(Parser)]
struct Args {
    /// Cases, comma-separated: `u32` (keys), `f32` (keys), `u64` (keys),
    /// `u32-pairs` (u32 keys with u32 values), `f32-pairs`.
    #[arg(long, default_value = "u32,u64,u32-pairs")]
    cases: String,
    /// Key counts, comma-separated (`2^24`, `1000000`); default 2^24 and
    /// 2^28 (2^27 for u64 keys).
    #[arg(long)]
    sizes: Option<String>,
    /// Timed runs per policy (the median is reported; at least 10 is
    /// sound).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Untimed runs per policy first.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// The grid: `large` (`sweep_grid`), `small` (`small_sweep_grid`:
    /// few keys per thread, for inputs up to a few million keys),
    /// `upsweep` (each case's default with both kinds of upsweep counters)
    /// `counts` (each case's default with every way of tile counts) or
    /// `order` (each case's default and the small-input policy, with both
    /// ways of finding a pass's tile) or `digits` (each case's default with
    /// every way of tile counts, each with the pass's digits recomputed and
    /// packed) or `rank` (each case's default with every rank method, and
    /// with atomic-or ranking under every way of tile counts).
    #[arg(long, default_value = "large")]
    grid: String,
    /// Seed of the keys (default: the clock).
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    checked_exit("sort_tune", run(&args))
}

/// One swept case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    U32Keys,
    F32Keys,
    U64Keys,
    U32Pairs,
    F32Pairs,
}

impl Case {
    /// Every case, in the order `--grid counts` builds its grid.
    const ALL: [Case; 5] = [
        Case::U32Keys,
        Case::F32Keys,
        Case::U64Keys,
        Case::U32Pairs,
        Case::F32Pairs,
    ];

    /// The cases of the default `--cases` (the shape and upsweep sweeps').
    const SHAPE_SWEPT: [Case; 3] = [Case::U32Keys, Case::U64Keys, Case::U32Pairs];

    /// The sort's own policy for the case (`OnesweepPolicy::default_for`).
    fn default_policy(self) -> OnesweepPolicy {
        match self {
            Case::U32Keys | Case::U32Pairs => OnesweepPolicy::default_for::<u32>(self.payload()),
            Case::F32Keys | Case::F32Pairs => OnesweepPolicy::default_for::<f32>(self.payload()),
            Case::U64Keys => OnesweepPolicy::default_for::<u64>(self.payload()),
        }
    }

    fn parse(name: &str) -> Result<Case> {
        match name.trim() {
            "u32" => Ok(Case::U32Keys),
            "f32" => Ok(Case::F32Keys),
            "u64" => Ok(Case::U64Keys),
            "u32-pairs" => Ok(Case::U32Pairs),
            "f32-pairs" => Ok(Case::F32Pairs),
            other => Err(Error::invalid(
                "cases",
                format!("{other:?}: one of u32, f32, u64, u32-pairs, f32-pairs"),
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Case::U32Keys => "u32 keys",
            Case::F32Keys => "f32 keys",
            Case::U64Keys => "u64 keys",
            Case::U32Pairs => "u32 keys + u32 values",
            Case::F32Pairs => "f32 keys + u32 values",
        }
    }

    /// The default sizes: 2^24 and the largest that keeps every buffer
    /// (input, output, the sort's second buffer) near 1 GiB each.
    fn default_sizes(self) -> Vec<usize> {
        match self {
            Case::U64Keys => vec![1 << 24, 1 << 27],
            _ => vec![1 << 24, 1 << 28],
        }
    }

    fn payload(self) -> Option<PayloadWidth> {
        match self {
            Case::U32Pairs | Case::F32Pairs => Some(PayloadWidth::B4),
            _ => None,
        }
    }
}

/// Every core of the host.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn run(args: &Args) -> Result<bool> {
    if args.reps == 0 {
        return Err(Error::invalid("reps", "at least one timed run"));
    }
    let cases: Vec<Case> = args
        .cases
        .split(',')
        .filter(|c| !c.trim().is_empty())
        .map(Case::parse)
        .collect::<Result<_>>()?;
    let sizes = args.sizes.as_deref().map(parse_counts).transpose()?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    let started = std::time::Instant::now();
    let grid = match args.grid.as_str() {
        "large" => with_defaults(sweep_grid()),
        "small" => small_sweep_grid(),
        "upsweep" => upsweep_grid(),
        "counts" => counts_grid(),
        "order" => order_grid(),
        "digits" => digits_grid(),
        "rank" => rank_grid(),
        other => {
            return Err(Error::invalid(
                "grid",
                format!("{other:?}: one of large, small, upsweep, counts, order, digits, rank"),
            ))
        }
    };
    warm_modules(&gpu, &cases, &grid);
    println!(
        "seed {seed}; ascending, out of place; median of {} CUDA-event timings after {} \
         warm-up runs; G keys/s = n / time; check: O(n) on the host (order, multiset, \
         pairs by input position)",
        args.reps, args.warmup
    );
    let reps = Repetitions {
        warmup: args.warmup,
        timed: args.reps,
    };
    let mut all_ok = true;
    for case in cases {
        for &n in sizes.as_ref().unwrap_or(&case.default_sizes()) {
            all_ok &= match case {
                Case::U32Keys => sweep::<u32>(&gpu, case, n, seed, reps, &grid)?,
                Case::F32Keys | Case::F32Pairs => sweep::<f32>(&gpu, case, n, seed, reps, &grid)?,
                Case::U64Keys => sweep::<u64>(&gpu, case, n, seed, reps, &grid)?,
                Case::U32Pairs => sweep::<u32>(&gpu, case, n, seed, reps, &grid)?,
            };
        }
    }
    println!(
        "sweep took {:.0} s{}",
        started.elapsed().as_secs_f64(),
        if all_ok { "" } else { "; SOME CHECKS FAILED" }
    );
    Ok(all_ok)
}

/// Each policy once, in the order first met.
fn distinct(policies: impl IntoIterator<Item = OnesweepPolicy>) -> Vec<OnesweepPolicy> {
    let mut grid: Vec<OnesweepPolicy> = Vec::new();
    for policy in policies {
        if !grid.contains(&policy) {
            grid.push(policy);
        }
    }
    grid
}

/// The defaults of u32 keys, u64 keys and u32 keys with u32 values, each
/// with per-lane and with shared upsweep counters.
fn upsweep_grid() -> Vec<OnesweepPolicy> {
    distinct(Case::SHAPE_SWEPT.iter().flat_map(|case| {
        [UpsweepCounters::PerLane, UpsweepCounters::Shared]
            .map(|counters| case.default_policy().with_upsweep_counters(counters))
    }))
}

/// `grid` and, after it, each shape-swept case's default that it lacks
/// (the shape grid counts tiles early; some defaults count them by warp).
fn with_defaults(grid: Vec<OnesweepPolicy>) -> Vec<OnesweepPolicy> {
    distinct(
        grid.into_iter()
            .chain(Case::SHAPE_SWEPT.map(Case::default_policy)),
    )
}

/// The defaults of every case (u32, f32 and u64 keys, u32 and f32 keys
/// with u32 values), each with every way of tile counts.
fn counts_grid() -> Vec<OnesweepPolicy> {
    distinct(Case::ALL.iter().flat_map(|case| {
        TileCounts::ALL.map(|counts| case.default_policy().with_tile_counts(counts))
    }))
}

/// The defaults of every case (u32, f32 and u64 keys, u32 and f32 keys
/// with u32 values) with every way of tile counts, each with the pass's
/// digits recomputed and packed.
fn digits_grid() -> Vec<OnesweepPolicy> {
    distinct(Case::ALL.iter().flat_map(|case| {
        TileCounts::ALL.into_iter().flat_map(move |counts| {
            PassDigits::ALL.map(|digits| {
                case.default_policy()
                    .with_tile_counts(counts)
                    .with_pass_digits(digits)
            })
        })
    }))
}

/// The defaults of every case (u32, f32 and u64 keys, u32 and f32 keys
/// with u32 values) with every rank method, then with atomic-or ranking
/// under every way of tile counts.
fn rank_grid() -> Vec<OnesweepPolicy> {
    distinct(Case::ALL.iter().flat_map(|case| {
        let default = case.default_policy();
        RankMethod::ALL
            .map(|rank| default.with_rank_method(rank))
            .into_iter()
            .chain(TileCounts::ALL.map(|counts| {
                default
                    .with_rank_method(RankMethod::AtomicOr)
                    .with_tile_counts(counts)
            }))
    }))
}

/// The defaults of every case and the small-input policy, each with its
/// passes' tiles in block order and from the counter.
fn order_grid() -> Vec<OnesweepPolicy> {
    distinct(
        Case::ALL
            .map(Case::default_policy)
            .into_iter()
            .chain([OnesweepPolicy::SMALL_INPUT])
            .flat_map(|policy| TileOrder::ALL.map(|tiles| policy.with_tile_order(tiles))),
    )
}

/// Compiles every policy's module for the cases into the disk cache, in
/// parallel, so the sweep's first runs only load them. Without NVRTC or a
/// cache the modules compile (or load) on first use instead.
fn warm_modules(gpu: &Gpu, cases: &[Case], grid: &[OnesweepPolicy]) {
    let mut modules = Vec::new();
    for &case in cases {
        for policy in grid {
            let module = match case {
                Case::U64Keys => sort::modules::policy_module::<u64>(case.payload(), policy),
                Case::F32Keys | Case::F32Pairs => {
                    sort::modules::policy_module::<f32>(case.payload(), policy)
                }
                _ => sort::modules::policy_module::<u32>(case.payload(), policy),
            };
            modules.extend(module);
        }
    }
    let started = std::time::Instant::now();
    let arch = gpu.info().arch();
    match warm_disk_cache(&DiskCache::from_env(), &modules, &[&arch], threads()) {
        Ok(report) => println!(
            "{} modules for {arch}: {} compiled, {} already cached, {} failed ({:.1} s)",
            modules.len(),
            report.compiled,
            report.already_cached,
            report.failures.len(),
            started.elapsed().as_secs_f64()
        ),
        Err(e) => println!("modules not warmed ({e}): each compiles on first use"),
    }
}

/// Uniform keys, every bit pattern, drawn by every core (chunk c from its
/// own generator, so the keys depend on the seed only).
fn random_keys<K: SortKey>(n: usize, seed: u64) -> Vec<K> {
    let mut keys = vec![K::default(); n];
    let chunk = n.div_ceil(threads()).max(1 << 16);
    std::thread::scope(|scope| {
        for (c, part) in keys.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                let mut rng =
                    SplitMix64::new(seed ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                for k in part {
                    *k = bytemuck::pod_read_unaligned(&rng.next_u64().to_le_bytes()[..K::BYTES]);
                }
            });
        }
    });
    keys
}

/// A 64-bit mix of `x` (the SplitMix64 finaliser) with `salt`.
fn mix(x: u64, salt: u64) -> u64 {
    let mut z = x ^ salt;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Two independent sums of hashed values: equal for equal multisets, and
/// for different ones only by a 2^-128 chance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MultisetHash(u64, u64);

impl MultisetHash {
    fn add(&mut self, x: u64) {
        self.0 = self.0.wrapping_add(mix(x, 0x243f_6a88_85a3_08d3));
        self.1 = self.1.wrapping_add(mix(x, 0x1319_8a2e_0370_7344));
    }

    fn merge(self, other: MultisetHash) -> MultisetHash {
        MultisetHash(self.0.wrapping_add(other.0), self.1.wrapping_add(other.1))
    }
}

/// The multiset hash of `value(item)` over `items`, by every core.
fn hash_of<T: Copy + Sync>(items: &[T], value: impl Fn(T) -> u64 + Sync) -> MultisetHash {
    let chunk = items.len().div_ceil(threads()).max(1 << 16);
    let value = &value;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut h = MultisetHash::default();
                    part.iter().for_each(|&x| h.add(value(x)));
                    h
                })
            })
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().expect("hash thread"))
            .fold(MultisetHash::default(), MultisetHash::merge)
    })
}

/// The radix image of a key (the order the sort produces, ascending).
fn image<K: SortKey>(k: K) -> u64 {
    k.ordered_radix(false).into()
}

/// Checks a sorted output in O(n) by every core: ascending by radix image,
/// the same multiset of keys as the input (`input_hash`, of the images),
/// and with `values` (the input positions, and the hash of 0 … n − 1):
/// each key the input's at its value, equal keys in increasing value, the
/// values the multiset 0 … n − 1. The first problem found, as a message.
fn check_output<K: SortKey>(
    input: &[K],
    input_hash: MultisetHash,
    keys: &[K],
    values: Option<(&[u32], MultisetHash)>,
) -> std::result::Result<(), String> {
    let n = keys.len();
    let chunk = n.div_ceil(threads()).max(1 << 16);
    let starts: Vec<usize> = (0..n).step_by(chunk).collect();
    let results: Vec<(MultisetHash, MultisetHash, Option<String>)> = std::thread::scope(|scope| {
        let parts: Vec<_> = starts
            .iter()
            .map(|&start| {
                scope.spawn(move || {
                    let end = (start + chunk).min(n);
                    let mut key_hash = MultisetHash::default();
                    let mut value_hash = MultisetHash::default();
                    for i in start..end {
                        key_hash.add(image(keys[i]));
                        if i > 0 && image(keys[i - 1]) > image(keys[i]) {
                            return (key_hash, value_hash, Some(format!("out of order at {i}")));
                        }
                        if let Some((values, _)) = values {
                            let v = values[i];
                            value_hash.add(v.into());
                            let same = input
                                .get(v as usize)
                                .is_some_and(|&k| image(k) == image(keys[i]));
                            if !same {
                                return (
                                    key_hash,
                                    value_hash,
                                    Some(format!(
                                        "position {i}: value {v} is not the key's input position"
                                    )),
                                );
                            }
                            if i > 0 && image(keys[i - 1]) == image(keys[i]) && values[i - 1] >= v {
                                return (key_hash, value_hash, Some(format!("unstable at {i}")));
                            }
                        }
                    }
                    (key_hash, value_hash, None)
                })
            })
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().expect("check thread"))
            .collect()
    });
    let mut key_hash = MultisetHash::default();
    let mut value_hash = MultisetHash::default();
    for (k, v, problem) in results {
        if let Some(problem) = problem {
            return Err(problem);
        }
        key_hash = key_hash.merge(k);
        value_hash = value_hash.merge(v);
    }
    if key_hash != input_hash {
        return Err("the keys are not the input's".into());
    }
    if let Some((_, positions_hash)) = values {
        if value_hash != positions_hash {
            return Err("the values are not a permutation of the positions".into());
        }
    }
    Ok(())
}

/// One measured policy.
struct Row {
    policy: OnesweepPolicy,
    ms: f64,
    check: std::result::Result<(), String>,
}

/// Runs every grid policy on one case and size; prints the table; true
/// when every check passed.
fn sweep<K: SortKey>(
    gpu: &Gpu,
    case: Case,
    n: usize,
    seed: u64,
    reps: Repetitions,
    grid: &[OnesweepPolicy],
) -> Result<bool> {
    let pairs = case.payload().is_some();
    if pairs && n as u64 > u32::MAX as u64 {
        return Err(Error::invalid(
            "sizes",
            format!("{n}: pairs carry u32 positions"),
        ));
    }
    let keys: Vec<K> = random_keys(n, seed ^ n as u64);
    let input_hash = hash_of(&keys, image::<K>);
    let positions: Option<(Vec<u32>, MultisetHash)> = pairs.then(|| {
        let p: Vec<u32> = (0..n as u32).collect();
        let h = hash_of(&p, u64::from);
        (p, h)
    });
    let input = DeviceBuffer::from_host(gpu, &keys)?;
    let values_in = match &positions {
        Some((p, _)) => Some(DeviceBuffer::from_host(gpu, p)?),
        None => None,
    };
    let mut out = DeviceBuffer::<K>::zeros(gpu, n)?;
    let mut values_out = match pairs {
        true => Some(DeviceBuffer::<u32>::zeros(gpu, n)?),
        false => None,
    };
    let mut rows = Vec::new();
    for &policy in grid {
        if let Err(e) = policy.check_widths(K::BYTES, case.payload().map_or(0, |w| w.bytes())) {
            println!("  skip {}: {e}", policy.name());
            continue;
        }
        let timing = time_device(
            gpu,
            reps,
            |_| Ok(()),
            |_| match (&values_in, values_out.as_mut()) {
                (Some(vi), Some(vo)) => sort::sort_pairs_with_policy(
                    gpu,
                    input.view(),
                    vi.view(),
                    out.view_mut(),
                    vo.view_mut(),
                    Order::Ascending,
                    &policy,
                ),
                _ => sort::sort_keys_with_policy(
                    gpu,
                    input.view(),
                    out.view_mut(),
                    Order::Ascending,
                    &policy,
                ),
            },
        )?;
        let got = out.to_host(gpu)?;
        let got_values = match &values_out {
            Some(vo) => Some(vo.to_host(gpu)?),
            None => None,
        };
        let check = check_output(
            &keys,
            input_hash,
            &got,
            got_values
                .as_deref()
                .zip(positions.as_ref().map(|(_, h)| *h)),
        );
        rows.push(Row {
            policy,
            ms: timing.median_ms,
            check,
        });
    }
    rows.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let default_ms = rows
        .iter()
        .find(|r| r.policy == OnesweepPolicy::default_for::<K>(case.payload()))
        .map(|r| r.ms);
    println!();
    println!("{}, n = {n}", case.name());
    println!(
        "  {:<26} {:>10} {:>10} {:>11}  check",
        "policy", "ms", "G keys/s", "vs default"
    );
    let mut all_ok = true;
    for row in &rows {
        let is_default = row.policy == OnesweepPolicy::default_for::<K>(case.payload());
        let vs = default_ms.map_or(String::from("-"), |d| format!("{:.3}x", d / row.ms));
        let check = match &row.check {
            Ok(()) => "pass".to_string(),
            Err(e) => {
                all_ok = false;
                format!("FAIL: {e}")
            }
        };
        println!(
            "  {:<26} {:>10.4} {:>10.3} {:>11}  {check}{}",
            row.policy.name(),
            row.ms,
            n as f64 / (row.ms * 1e-3) / 1e9,
            vs,
            if is_default { "  (default)" } else { "" }
        );
    }
    Ok(all_ok)
}
