//! The distributed primitives against one GPU on the same machine, and
//! NCCL's all-reduce bus bandwidth.
//!
//! ```text
//! cargo run --release -p parprims-dist --example dist_bench -- [--log2 30,32] [--reps 10]
//!     [--ranks 1,2] [--sort-log2 28,29,30,31] [--chunks 1,4] [--busbw-min-log2 20]
//!     [--busbw-max-log2 30]
//! ```
//!
//! `--log2 none` and `--sort-log2 none` leave out those sizes.
//!
//! For each size 2^k of i32 items: the single-GPU scan (inclusive sum),
//! reduce (sum) and histogram (256 even bins) on device 0 with the
//! toolkit's single-GPU crates, then the same on groups of the listed rank
//! counts (devices 0..r): the full distributed scan (`scan_into`, local
//! scan then prefix pass), the same by reduce first
//! (`scan_into_reduce_first`), the scan with the prefixes left for the
//! next use (`scan_local_into`), the
//! reduction (`reduce_replicated`) and the histogram. Each time is the
//! median over `--reps` runs; a run's time is the slowest rank's, measured
//! with CUDA events on each rank's stream (every start recorded before
//! any work is enqueued). The speed-up is the single GPU's median over the
//! group's. The scans' results are checked at the shard boundaries and a
//! few other positions against a host prefix sum.
//!
//! Then, for each size 2^k of `--sort-log2`, u32 keys of a Weyl sequence
//! (the top 32 bits of i·0x9E3779B97F4A7C15: spread evenly over the 32-bit
//! range in no order, the values of one shard interleaved with every
//! other's):
//! the single-GPU sort (`sort::sort_keys`, ascending) on device 0, and the
//! distributed sample sort (`dist::sort::sort_keys_with`) on the same
//! groups: partition first and sort first with merged runs (the default
//! policy, then one row per count of `--chunks`, that many chunks whatever
//! the size: `SampleSortPolicy::chunks` with `chunked_from` 0), each
//! leaving each rank its bucket and rebalanced into even blocks, and sort
//! first with the runs sorted again (buckets). Before each group, one
//! GPU's sort of n/ranks keys: the local sorting each rank cannot avoid,
//! so the best speed-up any of them can reach. The time is
//! again the slowest rank's median (the sort's two host synchronisations
//! included); GB/s counts the keys once (n·4 bytes per time). Every
//! result is gathered and compared with the single-GPU sort, bit for bit.
//!
//! Then, on a group of every listed rank count above one, the in-place
//! all-reduce (sum, f32) of 2^min..2^max bytes, timed as nccl-tests does
//! (20 back-to-back operations between the events): algbw = bytes / time,
//! busbw = algbw · 2(n − 1)/n.

use std::time::Instant;

use dist::sort::{RunOrder, SampleSortMethod, SampleSortPolicy};
use dist::{Group, Sharded, SortPlacement};
use gpu_core::{DeviceBuffer, Gpu, GpuTimer, Sum};
use reduce::histogram::{CountMode, HistogramAlgorithm};
use scan::{ScanKind, ScanOptions};
use sort::Order;

type Failure = Box<dyn std::error::Error>;

struct Args {
    log2: Vec<u32>,
    reps: usize,
    ranks: Vec<usize>,
    sort_log2: Vec<u32>,
    chunks: Vec<usize>,
    busbw_min_log2: u32,
    busbw_max_log2: u32,
}

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, Failure> {
    if text == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|v| {
            v.trim()
                .parse::<T>()
                .map_err(|_| format!("{what}: cannot read {v:?}").into())
        })
        .collect()
}

fn parse_args(device_count: usize) -> Result<Args, Failure> {
    let mut args = Args {
        log2: vec![30, 32],
        reps: 10,
        ranks: (1..=device_count)
            .filter(|r| r.is_power_of_two() || *r == device_count)
            .collect(),
        sort_log2: vec![28, 29, 30, 31],
        chunks: Vec::new(),
        busbw_min_log2: 20,
        busbw_max_log2: 30,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--log2" => args.log2 = parse_list(&value, "--log2")?,
            "--reps" => args.reps = value.parse().map_err(|_| "--reps: a count")?,
            "--ranks" => args.ranks = parse_list(&value, "--ranks")?,
            "--sort-log2" => args.sort_log2 = parse_list(&value, "--sort-log2")?,
            "--chunks" => args.chunks = parse_list(&value, "--chunks")?,
            "--busbw-min-log2" => {
                args.busbw_min_log2 = value.parse().map_err(|_| "--busbw-min-log2")?
            }
            "--busbw-max-log2" => {
                args.busbw_max_log2 = value.parse().map_err(|_| "--busbw-max-log2")?
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if args.reps == 0 || args.ranks.iter().any(|&r| r == 0 || r > device_count) {
        return Err(
            format!("--reps must be positive and --ranks within 1..={device_count}").into(),
        );
    }
    Ok(args)
}

/// Median of `reps` runs of `run` (after two warm-up runs), each run's
/// time the slowest of the `gpus`' event timings.
fn time_ranks(
    gpus: &[&Gpu],
    reps: usize,
    mut run: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    let timers = gpus
        .iter()
        .map(|g| GpuTimer::new(g))
        .collect::<Result<Vec<_>, _>>()?;
    for _ in 0..2 {
        run()?;
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        for gpu in gpus {
            gpu.synchronize()?;
        }
        for timer in &timers {
            timer.start()?;
        }
        run()?;
        for timer in &timers {
            timer.stop()?;
        }
        let mut slowest = 0f64;
        for timer in &timers {
            slowest = slowest.max(timer.elapsed_ms()?);
        }
        samples.push(slowest);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// The input: a hash of the index in [0, 65536), made on all cores.
fn make_input(n: usize) -> Vec<i32> {
    let mut data = vec![0i32; n];
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (c, part) in data.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (k, value) in part.iter_mut().enumerate() {
                    let i = (c * chunk + k) as u64;
                    *value = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as i32;
                }
            });
        }
    });
    data
}

/// Positions whose inclusive sums are checked: both sides of every shard
/// boundary of every rank count, and a few more.
fn check_positions(n: usize, ranks: &[usize]) -> Vec<usize> {
    let mut positions = vec![0, n / 3, n / 2, n - 1];
    for &r in ranks {
        for block in dist::layout::even_blocks(n, r) {
            positions.extend([block.start, block.end.saturating_sub(1)]);
        }
    }
    positions.retain(|&p| p < n);
    positions.sort_unstable();
    positions.dedup();
    positions
}

fn expected_at(data: &[i32], positions: &[usize]) -> Vec<i32> {
    let mut expected = Vec::with_capacity(positions.len());
    let mut running = 0i32;
    let mut next = 0;
    for (i, &v) in data.iter().enumerate() {
        running = running.wrapping_add(v);
        while next < positions.len() && positions[next] == i {
            expected.push(running);
            next += 1;
        }
    }
    expected
}

fn check_scan(
    group: &Group,
    y: &Sharded<i32>,
    positions: &[usize],
    expected: &[i32],
) -> Result<(), Failure> {
    let (starts, _) = dist::layout::offsets(y.lens());
    for (&p, &want) in positions.iter().zip(expected) {
        let i = starts.partition_point(|&s| s <= p) - 1;
        let got = y
            .shard(i)?
            .slice(p - starts[i]..p - starts[i] + 1)?
            .to_host(group.gpu(i)?)?[0];
        if got != want {
            return Err(format!("scan check failed at {p}: {got} instead of {want}").into());
        }
    }
    Ok(())
}

fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes / ms / 1e6
}

struct Baseline {
    scan_ms: f64,
    reduce_ms: f64,
    histogram_ms: f64,
}

fn single_gpu(
    data: &[i32],
    positions: &[usize],
    expected: &[i32],
    reps: usize,
) -> Result<Baseline, Failure> {
    let gpu = Gpu::new(0)?;
    let n = data.len();
    let input = DeviceBuffer::from_host(&gpu, data)?;
    // SAFETY: every scan below writes the whole output before it is read.
    let mut output = unsafe { DeviceBuffer::<i32>::uninit(&gpu, n)? };
    let options = ScanOptions::default();
    let scan_ms = time_ranks(&[&gpu], reps, || {
        scan::scan_into(
            &gpu,
            input.view(),
            output.view_mut(),
            &Sum,
            ScanKind::Inclusive,
            &options,
        )?;
        Ok(())
    })?;
    for (&p, &want) in positions.iter().zip(expected) {
        let got = output.slice(p..p + 1)?.to_host(&gpu)?[0];
        if got != want {
            return Err(
                format!("single-GPU scan check failed at {p}: {got} instead of {want}").into(),
            );
        }
    }
    let mut total = DeviceBuffer::<i32>::zeros(&gpu, 1)?;
    let reduce_ms = time_ranks(&[&gpu], reps, || {
        reduce::reduce_into(
            &gpu,
            input.view(),
            &Sum,
            total.view_mut(),
            Default::default(),
        )?;
        Ok(())
    })?;
    let mut counts = DeviceBuffer::<u32>::zeros(&gpu, 256)?;
    let histogram_ms = time_ranks(&[&gpu], reps, || {
        reduce::histogram::histogram_even_into(
            &gpu,
            input.view(),
            256,
            0,
            65536,
            counts.view_mut(),
            CountMode::Overwrite,
            HistogramAlgorithm::Auto,
        )?;
        Ok(())
    })?;
    drop((input, output, total, counts));
    gpu.synchronize()?;
    gpu.trim_memory_pool()?;
    Ok(Baseline {
        scan_ms,
        reduce_ms,
        histogram_ms,
    })
}

fn group_run(
    ranks: usize,
    data: &[i32],
    positions: &[usize],
    expected: &[i32],
    reps: usize,
    baseline: &Baseline,
) -> Result<(), Failure> {
    let n = data.len();
    let group = Group::new(&(0..ranks).collect::<Vec<_>>())?;
    let gpus: Vec<&Gpu> = (0..ranks).map(|i| group.gpu(i)).collect::<Result<_, _>>()?;
    let x = Sharded::scatter_from_host(&group, data)?;
    let mut y = dist::scan(&group, &x, &Sum, ScanKind::Inclusive)?;
    let scan_ms = time_ranks(&gpus, reps, || {
        dist::scan_into(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
        Ok(())
    })?;
    check_scan(&group, &y, positions, expected)?;
    let reduce_first_ms = time_ranks(&gpus, reps, || {
        dist::scan_into_reduce_first(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
        Ok(())
    })?;
    check_scan(&group, &y, positions, expected)?;
    let deferred_ms = time_ranks(&gpus, reps, || {
        dist::scan_local_into(&group, &x, &mut y, &Sum, ScanKind::Inclusive)?;
        Ok(())
    })?;
    let reduce_ms = time_ranks(&gpus, reps, || {
        dist::reduce_replicated(&group, &x, &Sum)?;
        Ok(())
    })?;
    let histogram_ms = time_ranks(&gpus, reps, || {
        dist::histogram_even::<i32, u32>(&group, &x, 256, 0, 65536)?;
        Ok(())
    })?;
    let bytes = (n * 4) as f64;
    let line = |what: &str, ms: f64, base: f64, moved: f64| {
        println!(
            "  {ranks} GPU(s) {what:<30} {ms:>9.3} ms {:>8.0} GB/s  speed-up {:.2}x",
            gbps(moved, ms),
            base / ms
        );
    };
    line("scan (prefix pass)", scan_ms, baseline.scan_ms, 2.0 * bytes);
    line(
        "scan (reduce first)",
        reduce_first_ms,
        baseline.scan_ms,
        2.0 * bytes,
    );
    line(
        "scan (prefixes left)",
        deferred_ms,
        baseline.scan_ms,
        2.0 * bytes,
    );
    line("reduce sum", reduce_ms, baseline.reduce_ms, bytes);
    line(
        "histogram 256 bins",
        histogram_ms,
        baseline.histogram_ms,
        bytes,
    );
    Ok(())
}

/// The sort's keys: the top 32 bits of i·0x9E3779B97F4A7C15 (a Weyl
/// sequence), made on all cores.
fn make_keys(n: usize) -> Vec<u32> {
    let mut keys = vec![0u32; n];
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (c, part) in keys.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (k, key) in part.iter_mut().enumerate() {
                    let i = (c * chunk + k) as u64;
                    *key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
                }
            });
        }
    });
    keys
}

/// The single-GPU sort on device 0: its median time and its output.
fn single_gpu_sort(keys: &[u32], reps: usize) -> Result<(f64, Vec<u32>), Failure> {
    let gpu = Gpu::new(0)?;
    let input = DeviceBuffer::from_host(&gpu, keys)?;
    // SAFETY: every sort below writes the whole output before it is read.
    let mut output = unsafe { DeviceBuffer::<u32>::uninit(&gpu, keys.len())? };
    let ms = time_ranks(&[&gpu], reps, || {
        sort::sort_keys(&gpu, input.view(), output.view_mut(), Order::Ascending)?;
        Ok(())
    })?;
    let sorted = output.to_host(&gpu)?;
    if let Some(i) = sorted.windows(2).position(|w| w[0] > w[1]) {
        return Err(format!("single-GPU sort out of order at {i}").into());
    }
    drop((input, output));
    gpu.synchronize()?;
    gpu.trim_memory_pool()?;
    Ok((ms, sorted))
}

/// The sample sort on devices 0..ranks, both placements, against the
/// single-GPU sort's output.
fn group_sort(
    ranks: usize,
    chunks: &[usize],
    keys: &[u32],
    expected: &[u32],
    reps: usize,
    baseline_ms: f64,
) -> Result<(), Failure> {
    let group = Group::new(&(0..ranks).collect::<Vec<_>>())?;
    let gpus: Vec<&Gpu> = (0..ranks).map(|i| group.gpu(i)).collect::<Result<_, _>>()?;
    let x = Sharded::scatter_from_host(&group, keys)?;
    let bytes = (keys.len() * 4) as f64;
    let partition_first = SampleSortPolicy {
        method: SampleSortMethod::PartitionFirst,
        ..SampleSortPolicy::default()
    };
    let peer_scatter = SampleSortPolicy {
        method: SampleSortMethod::PeerScatter,
        ..SampleSortPolicy::default()
    };
    let peer_note = if group.peers_reach_all()? {
        ""
    } else {
        ", no peer access: sort first"
    };
    let mut rows = vec![
        (
            format!("peer scatter (buckets{peer_note})"),
            SortPlacement::Buckets,
            peer_scatter,
        ),
        (
            format!("peer scatter (even{peer_note})"),
            SortPlacement::Even,
            peer_scatter,
        ),
        (
            "partition first (buckets)".to_string(),
            SortPlacement::Buckets,
            partition_first,
        ),
        (
            "partition first (even)".to_string(),
            SortPlacement::Even,
            partition_first,
        ),
    ];
    // The default policy, then each --chunks count whatever the size.
    let default = SampleSortPolicy::default();
    let forced = chunks.iter().map(|&chunks| SampleSortPolicy {
        chunks,
        chunked_from: 0,
        ..default
    });
    for policy in std::iter::once(default).chain(forced) {
        let c = policy.chunks_for(ranks, keys.len());
        for (placement, name) in [
            (SortPlacement::Buckets, "buckets"),
            (SortPlacement::Even, "even"),
        ] {
            rows.push((
                format!("sort first, merge in {c} ({name})"),
                placement,
                policy,
            ));
        }
    }
    rows.push((
        "sort first, re-sort (buckets)".to_string(),
        SortPlacement::Buckets,
        SampleSortPolicy {
            run_order: RunOrder::Resort,
            ..default
        },
    ));
    for (what, placement, policy) in rows {
        let mut sorted = None;
        let ms = time_ranks(&gpus, reps, || {
            sorted = None; // the last run's shards go back to the pools first
            sorted = Some(dist::sort::sort_keys_with(
                &group,
                &x,
                Order::Ascending,
                placement,
                &policy,
            )?);
            Ok(())
        })?;
        let sorted = sorted.ok_or("no sort ran")?;
        let lens = sorted.lens().to_vec();
        if sorted.gather_to_host(&group)? != expected {
            return Err(format!("{what} on {ranks} GPU(s) differs from one GPU's sort").into());
        }
        drop(sorted);
        println!(
            "  {ranks} GPU(s) {what:<34} {ms:>9.3} ms {:>8.0} GB/s  speed-up {:.2}x  shards {}..{}",
            gbps(bytes, ms),
            baseline_ms / ms,
            lens.iter().min().unwrap_or(&0),
            lens.iter().max().unwrap_or(&0),
        );
    }
    Ok(())
}

fn sort_rows(args: &Args) {
    for &log2 in &args.sort_log2 {
        let n = 1usize << log2;
        let started = Instant::now();
        let keys = make_keys(n);
        println!(
            "\n2^{log2} u32 keys, sort ({:.1} GiB; keys made on the host in {:.1} s)",
            (n * 4) as f64 / (1u64 << 30) as f64,
            started.elapsed().as_secs_f64()
        );
        let (baseline_ms, expected) = match single_gpu_sort(&keys, args.reps) {
            Ok(b) => b,
            Err(e) => {
                println!("  one GPU: {e}; size skipped");
                continue;
            }
        };
        println!(
            "  1 GPU  single-GPU sort u32        {:>9.3} ms {:>8.0} GB/s",
            baseline_ms,
            gbps((n * 4) as f64, baseline_ms)
        );
        for &ranks in &args.ranks {
            if ranks > 1 {
                // What each rank's sorting alone costs: one GPU's sort of n / ranks.
                let share = &keys[..n / ranks];
                match single_gpu_sort(share, args.reps) {
                    Ok((ms, _)) => println!(
                        "  1 GPU  sort of n/{ranks} keys           {ms:>9.3} ms  (each rank's local sorting at {ranks} GPUs: {:.2}x at most)",
                        baseline_ms / ms
                    ),
                    Err(e) => println!("  1 GPU  sort of n/{ranks}: {e}"),
                }
            }
            if let Err(e) = group_sort(
                ranks,
                &args.chunks,
                &keys,
                &expected,
                args.reps,
                baseline_ms,
            ) {
                println!("  {ranks} GPU(s): {e}");
            }
        }
    }
}

fn bus_bandwidth(ranks: usize, min_log2: u32, max_log2: u32, reps: usize) -> Result<(), Failure> {
    let group = Group::new(&(0..ranks).collect::<Vec<_>>())?;
    let gpus: Vec<&Gpu> = (0..ranks).map(|i| group.gpu(i)).collect::<Result<_, _>>()?;
    println!(
        "\nall-reduce sum f32, in place, {ranks} GPUs (20 operations per sample, median of {reps})"
    );
    println!(
        "{:>14} {:>12} {:>12} {:>12}",
        "bytes", "time (us)", "algbw GB/s", "busbw GB/s"
    );
    for log2 in min_log2..=max_log2 {
        let bytes = 1usize << log2;
        let len = bytes / 4;
        let shards = gpus
            .iter()
            .map(|g| DeviceBuffer::filled(g, len, 1.0f32))
            .collect::<Result<Vec<_>, _>>()?;
        let mut data = Sharded::from_shards(&group, shards)?;
        const OPS: usize = 20;
        let ms = time_ranks(&gpus, reps, || {
            for _ in 0..OPS {
                dist::all_reduce_in_place(&group, &mut data, &Sum)?;
            }
            Ok(())
        })? / OPS as f64;
        let algbw = gbps(bytes as f64, ms);
        let busbw = algbw * 2.0 * (ranks as f64 - 1.0) / ranks as f64;
        println!("{bytes:>14} {:>12.1} {algbw:>12.1} {busbw:>12.1}", ms * 1e3);
    }
    Ok(())
}

fn main() -> Result<(), Failure> {
    let device_count = gpu_core::device_count()?;
    let args = parse_args(device_count)?;
    dist::nccl_available()?;
    println!(
        "{} CUDA device(s), NCCL {}; {} on device 0",
        device_count,
        dist::nccl_version()?,
        Gpu::new(0)?.info().summary()
    );
    for &log2 in &args.log2 {
        let n = 1usize << log2;
        let started = Instant::now();
        let data = make_input(n);
        let positions = check_positions(n, &args.ranks);
        let expected = expected_at(&data, &positions);
        println!(
            "\n2^{log2} i32 ({:.1} GiB; input made and checked on the host in {:.1} s)",
            (n * 4) as f64 / (1u64 << 30) as f64,
            started.elapsed().as_secs_f64()
        );
        let baseline = match single_gpu(&data, &positions, &expected, args.reps) {
            Ok(b) => b,
            Err(e) => {
                println!("  one GPU: {e}; size skipped");
                continue;
            }
        };
        let bytes = (n * 4) as f64;
        println!(
            "  1 GPU  single-GPU scan            {:>9.3} ms {:>8.0} GB/s",
            baseline.scan_ms,
            gbps(2.0 * bytes, baseline.scan_ms)
        );
        println!(
            "  1 GPU  single-GPU reduce sum      {:>9.3} ms {:>8.0} GB/s",
            baseline.reduce_ms,
            gbps(bytes, baseline.reduce_ms)
        );
        println!(
            "  1 GPU  single-GPU histogram       {:>9.3} ms {:>8.0} GB/s",
            baseline.histogram_ms,
            gbps(bytes, baseline.histogram_ms)
        );
        for &ranks in &args.ranks {
            if let Err(e) = group_run(ranks, &data, &positions, &expected, args.reps, &baseline) {
                println!("  {ranks} GPU(s): {e}");
            }
        }
    }
    sort_rows(&args);
    for &ranks in args.ranks.iter().filter(|&&r| r > 1) {
        bus_bandwidth(ranks, args.busbw_min_log2, args.busbw_max_log2, args.reps)?;
    }
    Ok(())
}
