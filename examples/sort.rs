//! The sort lab: the lesson's sorts side by side with the default radix
//! sort over a size sweep. Each method (`sort::SortAlgorithm`: odd–even
//! transposition, bitonic, merge path, one-bit split radix, the Onesweep
//! default) sorts the same uniformly random keys (every bit pattern, so
//! floats include NaNs, ±0 and ±∞), timed with CUDA events (the input is
//! restored untimed before each run; median of `--reps`, 3 for runs over a
//! quarter second) and checked bit for bit against the CPU's stable sort
//! (`sort::cpu`). The table gives the time, keys per second, and the
//! check; the quadratic and n log² n methods stop at the cut-offs below,
//! and the table says so with the time the method would take, extrapolated
//! from its largest measured size.
//!
//! ```sh
//! cargo run --release --example sort                                  # u32 keys, 2^10 … 2^28
//! cargo run --release --example sort -- --types u32,f32,u64 --pairs   # with a u32 value per key
//! cargo run --release --example sort -- --sizes 2^20 --algos merge-path,onesweep --descending
//! cargo run --release --example sort -- --csv sort-sweep.csv --plot sort-lab
//! ```
//!
//! `--plot STEM` draws the rows as STEM-rate (keys/s against n, every
//! method), STEM-time and STEM-gbps, each as `.svg` and `.png`.

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use gpu_core::{DeviceBuffer, Error, Gpu, Result};
use parprims_lab::plot::{plot_element_rate, plot_records};
use parprims_lab::sizes::parse_counts;
use parprims_testkit::bench::{
    checked_exit, copy_ceiling, time_device, write_csv, Record, Repetitions,
};
use parprims_testkit::rng::SplitMix64;
use sort::key::{PayloadViewMut, SortKey};
use sort::{Order, SortAlgorithm};

/// Odd–even transposition sort stops here: O(n²) work and one launch per
/// phase (n launches past 2048 keys), so every 2× in n costs about 4× in
/// time; past 2^16 keys one sort takes seconds.
const ODD_EVEN_MAX_KEYS: usize = 1 << 16;
/// Bitonic sort stops here: O(n log² n) work in about ½·log2(n/2048)²
/// launches, each reading and writing every (image, index) pair; at 2^28
/// keys that is 171 launches, a fraction of a second on an H100, and past
/// 2^29 one sort takes seconds.
const BITONIC_MAX_KEYS: usize = 1 << 29;
/// Runs longer than this get 3 timed repetitions instead of `--reps`.
const SLOW_RUN_SECONDS: f64 = 0.25;

/// Sorting on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Key counts, comma-separated (`2^20`, `5*2^21`, `1000000`); default
    /// 2^10, 2^12, … 2^28.
    #[arg(long)]
    sizes: Option<String>,
    /// Methods, comma-separated (`odd-even`, `bitonic`, `merge-path`,
    /// `split-radix`, `onesweep`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Key types, comma-separated (u8 u16 u32 u64 i8 i16 i32 i64 f32 f64).
    #[arg(long, default_value = "u32")]
    types: String,
    /// Sort key–value pairs (a u32 value per key) instead of keys alone.
    #[arg(long)]
    pairs: bool,
    /// Largest first.
    #[arg(long)]
    descending: bool,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// CSV of the GPU rows (GB/s count one read and one write of the keys,
    /// and of the values with `--pairs`).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Plots of the GPU rows: STEM-rate (keys/s), STEM-time, STEM-gbps.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Seed of the keys (default: the clock).
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    checked_exit("sort", run(&args))
}

/// The methods named by `--algos`, in the lab's order.
fn methods(algos: Option<&str>) -> Result<Vec<SortAlgorithm>> {
    let Some(list) = algos else {
        return Ok(SortAlgorithm::ALL.to_vec());
    };
    list.split(',')
        .map(|name| {
            SortAlgorithm::ALL
                .into_iter()
                .find(|a| a.name() == name.trim())
                .ok_or_else(|| Error::invalid("algos", format!("unknown method {name:?}")))
        })
        .collect()
}

/// The largest n a method runs at in the sweep.
fn cut_off(algorithm: SortAlgorithm) -> Option<(usize, &'static str)> {
    match algorithm {
        SortAlgorithm::OddEvenTransposition => Some((ODD_EVEN_MAX_KEYS, "O(n²)")),
        SortAlgorithm::Bitonic => Some((BITONIC_MAX_KEYS, "O(n log² n)")),
        _ => None,
    }
}

/// The time at `n` extrapolated from `ms` measured at `measured_n` by the
/// method's work (n² or n log² n).
fn extrapolate_ms(algorithm: SortAlgorithm, measured_n: usize, ms: f64, n: usize) -> f64 {
    let work = |n: usize| -> f64 {
        let n = n as f64;
        match algorithm {
            SortAlgorithm::OddEvenTransposition => n * n,
            _ => n * n.log2() * n.log2(),
        }
    };
    ms * work(n) / work(measured_n)
}

/// One table row.
fn print_row(method: &str, key: &str, n: usize, ms: Option<f64>, note: &str) {
    match ms {
        Some(ms) => println!(
            "{method:<14} {key:<4} {n:>11} {ms:>12.4} {:>10.3} {note}",
            n as f64 / (ms * 1e-3) / 1e9
        ),
        None => println!(
            "{method:<14} {key:<4} {n:>11} {:>12} {:>10} {note}",
            "-", "-"
        ),
    }
}

fn run(args: &Args) -> Result<bool> {
    let sizes = match &args.sizes {
        Some(text) => parse_counts(text)?,
        None => (5..=14).map(|k| 1usize << (2 * k)).collect(),
    };
    let methods = methods(args.algos.as_deref())?;
    if args.reps == 0 {
        return Err(Error::invalid("reps", "at least one timed run"));
    }
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    let ceiling = copy_ceiling(&gpu, 1 << 30, Repetitions::default())?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let order = if args.descending {
        Order::Descending
    } else {
        Order::Ascending
    };
    println!(
        "seed {seed}, {}, {}; G keys/s = n / time; check: bit for bit against sort::cpu",
        if args.pairs {
            "keys with u32 values"
        } else {
            "keys only"
        },
        if args.descending {
            "descending"
        } else {
            "ascending"
        },
    );
    println!(
        "{:<14} {:<4} {:>11} {:>12} {:>10} check",
        "method", "key", "n", "time (ms)", "G keys/s"
    );
    let context = Context {
        gpu: &gpu,
        sizes: &sizes,
        methods: &methods,
        order,
        pairs: args.pairs,
        reps: args.reps,
        seed,
        ceiling_gbps: ceiling.gbps,
    };
    let mut records = Vec::new();
    let mut all_ok = true;
    for key in args.types.split(',') {
        all_ok &= match key.trim() {
            "u8" => sweep::<u8>(&context, &mut records)?,
            "u16" => sweep::<u16>(&context, &mut records)?,
            "u32" => sweep::<u32>(&context, &mut records)?,
            "u64" => sweep::<u64>(&context, &mut records)?,
            "i8" => sweep::<i8>(&context, &mut records)?,
            "i16" => sweep::<i16>(&context, &mut records)?,
            "i32" => sweep::<i32>(&context, &mut records)?,
            "i64" => sweep::<i64>(&context, &mut records)?,
            "f32" => sweep::<f32>(&context, &mut records)?,
            "f64" => sweep::<f64>(&context, &mut records)?,
            other => {
                return Err(Error::invalid(
                    "types",
                    format!("{other:?} is not a sort key type"),
                ))
            }
        };
    }
    if let Some(path) = &args.csv {
        write_csv(path, &records)?;
        println!("wrote {}", path.display());
    }
    if let Some(stem) = &args.plot {
        let mut written = plot_element_rate(stem, "sort", &records, "keys")?;
        written.extend(plot_records(stem, "sort", &records, Some(ceiling.gbps))?);
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(all_ok)
}

/// What every sweep shares.
struct Context<'a> {
    gpu: &'a Gpu,
    sizes: &'a [usize],
    methods: &'a [SortAlgorithm],
    order: Order,
    pairs: bool,
    reps: usize,
    seed: u64,
    ceiling_gbps: f64,
}

/// Uniform keys: every bit pattern equally likely.
fn random_keys<K: SortKey>(n: usize, seed: u64) -> Vec<K> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| bytemuck::pod_read_unaligned(&rng.next_u64().to_le_bytes()[..K::BYTES]))
        .collect()
}

fn sweep<K: SortKey>(context: &Context<'_>, records: &mut Vec<Record>) -> Result<bool> {
    let gpu = context.gpu;
    let descending = context.order.is_descending();
    let bits = sort::cpu::full_bits::<K>();
    let mut all_ok = true;
    // The largest size each method ran at, and its median time.
    let mut measured: Vec<Option<(usize, f64)>> = vec![None; context.methods.len()];
    for &n in context.sizes {
        let keys: Vec<K> = random_keys(n, context.seed ^ n as u64);
        let positions: Vec<u32> = (0..n as u32).collect();
        // The CPU reference (timed once, wall clock): `sort::cpu`'s order,
        // computed without its index indirection (slow at 2^28): the
        // (image, position) pairs are all distinct, so even an unstable
        // sort of them gives the stable order.
        let started = Instant::now();
        let mut order: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (sort::cpu::sort_value(k, descending, &bits), i as u32))
            .collect();
        order.sort_unstable();
        let want_keys: Vec<K> = order.iter().map(|&(_, i)| keys[i as usize]).collect();
        let want_values: Option<Vec<u32>> = context
            .pairs
            .then(|| order.iter().map(|&(_, i)| positions[i as usize]).collect());
        drop(order);
        let cpu_ms = started.elapsed().as_secs_f64() * 1e3;
        print_row(
            "cpu",
            K::SUFFIX,
            n,
            Some(cpu_ms),
            "reference: std sort of (image, index), one run",
        );

        let input_keys = DeviceBuffer::from_host(gpu, &keys)?;
        let input_values = DeviceBuffer::from_host(gpu, &positions)?;
        // Shared by the untimed restore and the timed sort.
        let work_keys = RefCell::new(DeviceBuffer::<K>::poisoned(gpu, n)?);
        let work_values = RefCell::new(DeviceBuffer::<u32>::poisoned(gpu, n)?);
        for (slot, &algorithm) in context.methods.iter().enumerate() {
            if let Some((max, work)) = cut_off(algorithm) {
                if n > max {
                    let note = match measured[slot] {
                        Some((at, ms)) => format!(
                            "skipped: {work} work, would take ~{:.1} s (from {at} keys)",
                            extrapolate_ms(algorithm, at, ms, n) / 1e3
                        ),
                        None => format!("skipped: {work} work, past the cut-off of {max} keys"),
                    };
                    print_row(algorithm.name(), K::SUFFIX, n, None, &note);
                    continue;
                }
            }
            let restore = || -> Result<()> {
                work_keys
                    .borrow_mut()
                    .view_mut()
                    .copy_from(gpu, &input_keys.view())?;
                if context.pairs {
                    work_values
                        .borrow_mut()
                        .view_mut()
                        .copy_from(gpu, &input_values.view())?;
                }
                Ok(())
            };
            let sort = || {
                sort_once(
                    gpu,
                    &mut work_keys.borrow_mut(),
                    &mut work_values.borrow_mut(),
                    context,
                    algorithm,
                )
            };
            // One untimed run: the check (and the kernels' first load).
            restore()?;
            let first = sort().and_then(|()| gpu.synchronize());
            if let Err(e) = first {
                all_ok &= matches!(e, Error::Unsupported(_));
                print_row(
                    algorithm.name(),
                    K::SUFFIX,
                    n,
                    None,
                    &format!("not run: {e}"),
                );
                continue;
            }
            let got_keys = work_keys.borrow().to_host(gpu)?;
            let mut ok = bytemuck::cast_slice::<K, u8>(&got_keys)
                == bytemuck::cast_slice::<K, u8>(&want_keys);
            if let Some(want_values) = &want_values {
                ok &= work_values.borrow().to_host(gpu)? == *want_values;
            }
            all_ok &= ok;
            // A second untimed run, on the wall clock, picks the repetitions.
            restore()?;
            gpu.synchronize()?;
            let started = Instant::now();
            sort()?;
            gpu.synchronize()?;
            let timed = if started.elapsed().as_secs_f64() > SLOW_RUN_SECONDS {
                3
            } else {
                context.reps
            };
            let reps = Repetitions { warmup: 0, timed };
            let timing = time_device(gpu, reps, |_| restore(), |_| sort())?;
            measured[slot] = Some((n, timing.median_ms));
            print_row(
                algorithm.name(),
                K::SUFFIX,
                n,
                Some(timing.median_ms),
                if ok { "passed" } else { "FAILED" },
            );
            let value_bytes = if context.pairs { 4 } else { 0 };
            let bytes = 2.0 * n as f64 * (K::BYTES + value_bytes) as f64;
            records.push(Record {
                primitive: "sort".into(),
                algorithm: format!(
                    "{}{}",
                    algorithm.name(),
                    if context.pairs { "/pairs" } else { "" }
                ),
                element_type: K::SUFFIX.into(),
                shape: n.to_string(),
                ms_median: timing.median_ms,
                gbps: timing.gbps(bytes),
                ceiling_gbps: context.ceiling_gbps,
                device: gpu.info().name.clone(),
            });
        }
    }
    Ok(all_ok)
}

/// One sort of the work buffers in place.
fn sort_once<K: SortKey>(
    gpu: &Gpu,
    keys: &mut DeviceBuffer<K>,
    values: &mut DeviceBuffer<u32>,
    context: &Context<'_>,
    algorithm: SortAlgorithm,
) -> Result<()> {
    let payload = if context.pairs {
        Some(PayloadViewMut::new(values.view_mut())?)
    } else {
        None
    };
    sort::sort_in_place_with(
        gpu,
        keys.view_mut(),
        payload,
        context.order,
        sort::cpu::full_bits::<K>(),
        algorithm,
    )
}
