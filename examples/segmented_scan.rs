//! Segmented scan by head flags at one size: the inclusive `i32` sum through
//! `scan::segmented_scan_into`, checked against the CPU reference, timed
//! with CUDA events (3 warm-ups, median of 20), and reported as GB/s and as
//! a fraction of the device-to-device copy ceiling measured in the same
//! process. Bytes: values and 1-byte flags read, values written (9n for
//! `i32`), as `scan::segmented_bytes_moved` counts them.
//!
//! ```sh
//! cargo run --release --example segmented_scan -- 268435456 1000   # n, mean segment length
//! ```

use std::process::ExitCode;

use parprims::gpu_core::{DeviceBuffer, Gpu, Result, Sum};
use parprims::scan::{self, SegmentedKind};
use parprims_testkit::bench::{copy_ceiling, gbps, time_device, Repetitions};
use parprims_testkit::rng::{random_vec, SplitMix64};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("segmented_scan: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 28);
    let mean_segment: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000)
        .max(1);
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    let seed = 0x5e9_2026;
    let values: Vec<i32> = random_vec(n, seed, -1000.0, 1000.0);
    let mut rng = SplitMix64::new(seed ^ 1);
    let heads: Vec<u8> = (0..n)
        .map(|_| u8::from(rng.below(mean_segment) == 0))
        .collect();
    let input = DeviceBuffer::from_host(&gpu, &values)?;
    let flags = DeviceBuffer::from_host(&gpu, &heads)?;
    let mut output = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let reps = Repetitions::default();
    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            scan::segmented_scan_into(
                &gpu,
                input.view(),
                flags.view(),
                output.view_mut(),
                &Sum,
                SegmentedKind::Inclusive,
            )
        },
    )?;
    let ok = output.to_host(&gpu)?
        == scan::cpu::segmented_scan(&values, &heads, &Sum, SegmentedKind::Inclusive);
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    let rate = gbps(scan::segmented_bytes_moved(n, 4) as f64, timing.median_ms);
    println!(
        "segmented scan i32, n = {n}, mean segment {mean_segment}: {:.4} ms, {rate:.1} GB/s, {:.3} of the copy ceiling ({:.1} GB/s), check {}",
        timing.median_ms,
        ceiling.fraction(rate),
        ceiling.gbps,
        if ok { "passed" } else { "FAILED" }
    );
    Ok(ok)
}
