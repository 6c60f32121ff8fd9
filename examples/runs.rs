//! Keyed runs at one size: reduce by key (i32 keys, f32 values, sum),
//! run-length encoding and unique of sorted i32 keys in runs of 1 to
//! 2·mean − 1 items, and expand (the run lengths back into runs), each
//! checked against the CPU reference (`compact::cpu_by_key`), timed with
//! CUDA events (3 warm-ups, median of 20) and reported as GB/s and as a
//! fraction of the device-to-device copy ceiling measured in the same
//! process. Bytes as the compact crate counts them: reduce by key
//! 8n + 8·runs, run-length encoding 4n + 8·runs, unique 4n + 4·runs, expand
//! 4·runs + 4·runs + 8·runs + 4n.
//!
//! ```sh
//! cargo run --release --example runs -- 268435456 16   # n, mean run length
//! ```

use std::process::ExitCode;

use parprims::compact;
use parprims::gpu_core::{DeviceBuffer, Gpu, Result, Sum};
use parprims_testkit::bench::{checked_exit, copy_ceiling, gbps, time_device, Repetitions};
use parprims_testkit::rng::SplitMix64;

fn main() -> ExitCode {
    checked_exit("runs", run())
}

fn run() -> Result<bool> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 28);
    let mean_run: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(16)
        .max(1);
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    // Sorted keys, runs of 1 to 2·mean − 1 items; small-integer f32 values
    // (every sum exact, whatever the order).
    let mut rng = SplitMix64::new(0x2u64 << 40 | 2026);
    let mut keys = Vec::with_capacity(n);
    let mut key = i32::MIN;
    while keys.len() < n {
        let run = (1 + rng.below(2 * mean_run - 1)) as usize;
        keys.extend(std::iter::repeat_n(key, run.min(n - keys.len())));
        key = key.wrapping_add(1);
    }
    let values: Vec<f32> = (0..n).map(|_| rng.below(8) as f32).collect();
    let (want_keys, want_sums) = compact::cpu_by_key::reduce_by_key(&keys, &values, &Sum)?;
    let (_, want_counts) = compact::cpu_by_key::run_length_encode(&keys);
    let runs = want_keys.len();

    let keys_gpu = DeviceBuffer::from_host(&gpu, &keys)?;
    let values_gpu = DeviceBuffer::from_host(&gpu, &values)?;
    let mut keys_out = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let mut sums_out = DeviceBuffer::<f32>::poisoned(&gpu, n)?;
    let mut counts_out = DeviceBuffer::<u32>::poisoned(&gpu, n)?;
    let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
    let reps = Repetitions::default();
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    let report = |name: &str, bytes: u64, ms: f64, ok: bool| {
        let rate = gbps(bytes as f64, ms);
        println!(
            "{name}, n = {n}, {runs} runs (mean {:.1}): {ms:.4} ms, {rate:.1} GB/s, {:.3} of the copy ceiling ({:.1} GB/s), check {}",
            n as f64 / runs.max(1) as f64,
            ceiling.fraction(rate),
            ceiling.gbps,
            if ok { "passed" } else { "FAILED" }
        );
    };
    let mut all_ok = true;

    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            compact::reduce_by_key_into(
                &gpu,
                keys_gpu.view(),
                values_gpu.view(),
                &Sum,
                keys_out.view_mut(),
                sums_out.view_mut(),
                count.view_mut(),
            )
        },
    )?;
    let ok = count.to_host(&gpu)?[0] as usize == runs
        && keys_out.slice(..runs)?.to_host(&gpu)? == want_keys
        && sums_out.slice(..runs)?.to_host(&gpu)? == want_sums;
    all_ok &= ok;
    report(
        "reduce_by_key i32/f32 sum",
        compact::reduce_by_key_bytes_moved(n, runs, 4, 4),
        timing.median_ms,
        ok,
    );

    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            compact::run_length_encode_into(
                &gpu,
                keys_gpu.view(),
                keys_out.view_mut(),
                counts_out.view_mut(),
                count.view_mut(),
            )
        },
    )?;
    let ok = count.to_host(&gpu)?[0] as usize == runs
        && keys_out.slice(..runs)?.to_host(&gpu)? == want_keys
        && counts_out.slice(..runs)?.to_host(&gpu)? == want_counts;
    all_ok &= ok;
    report(
        "run_length_encode i32",
        compact::run_length_bytes_moved(n, runs, 4),
        timing.median_ms,
        ok,
    );

    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| compact::unique_into(&gpu, keys_gpu.view(), keys_out.view_mut(), count.view_mut()),
    )?;
    let ok = count.to_host(&gpu)?[0] as usize == runs
        && keys_out.slice(..runs)?.to_host(&gpu)? == want_keys;
    all_ok &= ok;
    report(
        "unique i32",
        compact::unique_bytes_moved(n, runs, 4, 0),
        timing.median_ms,
        ok,
    );

    // Expand: the unique keys, each repeated its run length, rebuild the keys.
    let unique_gpu = DeviceBuffer::from_host(&gpu, &want_keys)?;
    let counts_gpu = DeviceBuffer::from_host(&gpu, &want_counts)?;
    let mut offsets = DeviceBuffer::<u64>::zeros(&gpu, runs)?;
    let mut total = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
    let mut rebuilt = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            compact::expand_into(
                &gpu,
                unique_gpu.view(),
                counts_gpu.view(),
                offsets.view_mut(),
                rebuilt.view_mut(),
                total.view_mut(),
            )
        },
    )?;
    let ok = total.to_host(&gpu)?[0] as usize == n && rebuilt.to_host(&gpu)? == keys;
    all_ok &= ok;
    report(
        "expand i32 (run lengths back into runs)",
        compact::expand_bytes_moved(runs, n, 4),
        timing.median_ms,
        ok,
    );
    Ok(all_ok)
}
