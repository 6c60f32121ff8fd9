//! Segmented scan at one size, the segments given three ways (head flags,
//! offsets, runs of u32 keys): the inclusive `i32` sum through
//! `scan::segmented_scan_into`, `segmented_scan_by_offsets_into` and
//! `scan_by_key_into`, each checked against the CPU reference, timed with
//! CUDA events (3 warm-ups, median of 20), and reported as GB/s and as a
//! fraction of the device-to-device copy ceiling measured in the same
//! process. Bytes: values read and written plus the heads (flags: 9n for
//! `i32`, as `scan::segmented_bytes_moved` counts them).
//!
//! ```sh
//! cargo run --release --example segmented_scan -- 268435456 1000   # n, mean segment length
//! ```

use std::process::ExitCode;

use parprims::gpu_core::{DeviceBuffer, Gpu, Result, Sum};
use parprims::scan::{self, SegmentedKind};
use parprims_testkit::bench::{checked_exit, copy_ceiling, gbps, time_device, Repetitions};
use parprims_testkit::rng::{random_vec, SplitMix64};

fn main() -> ExitCode {
    checked_exit("segmented_scan", run())
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
    let offsets: Vec<u64> = std::iter::once(0)
        .chain((1..n).filter(|&i| heads[i] != 0).map(|i| i as u64))
        .chain(std::iter::once(n as u64))
        .collect();
    let keys = run_ids(&heads);
    let want = scan::cpu::segmented_scan(&values, &heads, &Sum, SegmentedKind::Inclusive);
    let input = DeviceBuffer::from_host(&gpu, &values)?;
    let flags = DeviceBuffer::from_host(&gpu, &heads)?;
    let offsets_gpu = DeviceBuffer::from_host(&gpu, &offsets)?;
    let keys_gpu = DeviceBuffer::from_host(&gpu, &keys)?;
    let mut output = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let reps = Repetitions::default();
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    let tiles = n.div_ceil(8192) as u64;
    // Bytes: values read and written, plus each form's heads (flags 1 per
    // item; offsets read twice, by the tile search-and-check and the scan,
    // and a tile start per tile; u32 keys 4 per item).
    let forms: [(&str, u64); 3] = [
        ("head flags (u8)", scan::segmented_bytes_moved(n, 4)),
        (
            "offsets (u64, checked)",
            8 * n as u64 + 16 * offsets.len() as u64 + 16 * tiles,
        ),
        ("by key (u32)", 12 * n as u64),
    ];
    let mut all_ok = true;
    for (form, (name, bytes)) in forms.iter().enumerate() {
        let timing = time_device(
            &gpu,
            reps,
            |_| Ok(()),
            |_| match form {
                0 => scan::segmented_scan_into(
                    &gpu,
                    input.view(),
                    flags.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
                1 => scan::segmented_scan_by_offsets_into(
                    &gpu,
                    input.view(),
                    offsets_gpu.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
                _ => scan::scan_by_key_into(
                    &gpu,
                    keys_gpu.view(),
                    input.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
            },
        )?;
        let ok = output.to_host(&gpu)? == want;
        all_ok &= ok;
        let rate = gbps(*bytes as f64, timing.median_ms);
        println!(
            "segmented scan i32 by {name}, n = {n}, mean segment {mean_segment}: {:.4} ms, {rate:.1} GB/s, {:.3} of the copy ceiling ({:.1} GB/s), check {}",
            timing.median_ms,
            ceiling.fraction(rate),
            ceiling.gbps,
            if ok { "passed" } else { "FAILED" }
        );
    }
    Ok(all_ok)
}

/// Keys whose runs are the segments: the segment number of each item.
fn run_ids(heads: &[u8]) -> Vec<u32> {
    let mut run = 0u32;
    heads
        .iter()
        .enumerate()
        .map(|(i, &flag)| {
            if i > 0 && flag != 0 {
                run = run.wrapping_add(1);
            }
            run
        })
        .collect()
}
