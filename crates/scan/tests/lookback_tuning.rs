//! The look-back scan's tuning sweep at 2^28 elements: every candidate of
//! `scan::policy::lookback_candidates` (the table's entry first; tile shapes, the
//! warp-striped layout, wide look-back windows, register limits, the
//! 128-bit status word for 8-byte values) must give the exact CPU result
//! (the assertion), and each one's median time is printed with GB/s from
//! the headline byte count 2·n·size and as a fraction of the
//! device-to-device copy ceiling measured in the same process, so the
//! tuning table in `lookback.rs` can be chosen from one run
//! (`--nocapture`). A second test sweeps the mid-size shapes from 2^18 to
//! 2^27 against a same-size copy (`MID_INPUT_LOOKBACK_TUNING`). Both live
//! in their own binary so that nothing else runs on the GPU while they
//! time (run them with `--test-threads=1`); the benchmark proper is the
//! scan example.

mod lookback_support;
mod scan_support;

use std::cell::RefCell;

use gpu_core::{DeviceBuffer, Element, Gpu, Sum};
use lookback_support::*;
use parprims_testkit::bench::{copy_ceiling, time_device, Repetitions};
use scan::policy::{Policy, LOOKBACK_TUNING};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// One inclusive sum of `input` into `output` with `tuning`.
fn scan_with<T: Element>(
    gpu: &Gpu,
    input: &DeviceBuffer<T>,
    output: &RefCell<DeviceBuffer<T>>,
    tuning: Policy,
) -> gpu_core::Result<()>
where
    Sum: gpu_core::Operator<T>,
{
    scan::scan_into(
        gpu,
        input.view(),
        output.borrow_mut().view_mut(),
        &Sum,
        ScanKind::Inclusive,
        &ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(tuning),
    )
}

/// Scans once into the poisoned output with `tuning` (compiling its module
/// outside any timing) and asserts the exact result.
fn check_candidate<T: Element>(
    gpu: &Gpu,
    input: &DeviceBuffer<T>,
    output: &RefCell<DeviceBuffer<T>>,
    want: &[T],
    tuning: Policy,
    context: &str,
) where
    Sum: gpu_core::Operator<T>,
{
    output
        .borrow_mut()
        .view_mut()
        .fill(gpu, T::poison())
        .expect("poison");
    scan_with(gpu, input, output, tuning).unwrap_or_else(|e| panic!("{tuning:?}: {e}"));
    let got = output.borrow().to_host(gpu).expect("download");
    assert_same(&got, want, &format!("{context} {}", tuning.label()));
}

fn sweep<T: Element>(gpu: &Gpu, candidates: &[Policy], ceiling_gbps: f64)
where
    Sum: gpu_core::Operator<T>,
{
    let n = 1usize << 28;
    let host: Vec<T> = exact_input(n, fresh_seed(&format!("tuning {}", T::SUFFIX)));
    let want = scan::cpu::scan(&host, &Sum, ScanKind::Inclusive);
    let input = DeviceBuffer::from_host(gpu, &host).expect("upload");
    let output = RefCell::new(DeviceBuffer::<T>::poisoned(gpu, n).expect("output"));
    let table = LOOKBACK_TUNING
        .iter()
        .find(|(bytes, _)| *bytes == T::BYTES)
        .map(|(_, t)| *t);
    for &tuning in candidates {
        let poison = || output.borrow_mut().view_mut().fill(gpu, T::poison());
        let scan_once = || scan_with(gpu, &input, &output, tuning);
        check_candidate(gpu, &input, &output, &want, tuning, T::SUFFIX);
        // Registers and residency of the compiled kernel (already loaded).
        let (source, entry) = scan::policy::lookback_module::<T, _>(&Sum, tuning);
        let kernel = gpu.kernel(&source, &entry).expect("kernel");
        let registers = kernel.registers().unwrap_or(-1);
        let resident = kernel
            .resident_blocks_per_sm(tuning.block_threads(), 0)
            .unwrap_or(0);
        let timing = time_device(
            gpu,
            Repetitions {
                warmup: 3,
                timed: 25,
            },
            // Poison the output before every run, untimed.
            |_| poison(),
            |_| scan_once(),
        )
        .expect("timing");
        let gbps = timing.gbps((2 * n * T::BYTES) as f64);
        eprintln!(
            "lookback {} n=2^28 {:<24}{} {:.3} ms  {:.0} GB/s  {:.3} of copy ceiling  \
             ({} regs, {} blocks/SM)",
            T::SUFFIX,
            tuning.label(),
            if Some(tuning) == table {
                " (table)"
            } else {
                "        "
            },
            timing.median_ms,
            gbps,
            gbps / ceiling_gbps,
            registers,
            resident
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_candidate_is_exact_at_2_28_and_reports_its_speed() {
    let gpu = gpu();
    let ceiling = copy_ceiling(&gpu, 1 << 30, Repetitions::default()).expect("copy ceiling");
    eprintln!(
        "copy ceiling {:.0} GB/s (read + write) on {}",
        ceiling.gbps,
        gpu.info().summary()
    );
    let four_byte = scan::policy::lookback_candidates(4);
    let eight_byte = scan::policy::lookback_candidates(8);
    sweep::<i32>(&gpu, &four_byte, ceiling.gbps);
    // f32 and i64: the table and a few candidates (the same kernels as i32
    // and u64 up to the element type).
    let some = |all: &[Policy], labels: &[&str]| -> Vec<Policy> {
        all.iter()
            .enumerate()
            .filter(|(i, t)| *i == 0 || labels.contains(&t.label().as_str()))
            .map(|(_, t)| *t)
            .collect()
    };
    sweep::<f32>(
        &gpu,
        &some(
            &four_byte,
            &[
                "256x24 ws w4",
                "256x24 ws ns648 d1245",
                "128x24 ws ns1000 d2000",
                "128x24 ws ns648 d1245",
                "128x24 ws p128 ns648 d1245",
                "256x32 ws p128 ns648 d1245 cs",
                "256x32 ws p128 ns648 d1245",
            ],
        ),
        ceiling.gbps,
    );
    sweep::<u64>(&gpu, &eight_byte, ceiling.gbps);
    sweep::<i64>(
        &gpu,
        &some(
            &eight_byte,
            &[
                "512x8 p128",
                "224x24 ws w4 p128 ns632 d1290",
                "224x24 ws p128 ns632 d1290",
                "128x24 ws p128 ns632 d1290",
            ],
        ),
        ceiling.gbps,
    );
}

/// Mid-size candidates: the tile shapes a per-size policy picks between
/// 2^18 and 2^27 elements, where a few waves hold every tile and each
/// tile's latency, not bandwidth alone, sets the time. (A wider first
/// sweep, with 256 × 16, 256 × 24, 512 × 8, 512 × 16, 1024 × 8, other
/// delays and 2-wide windows, is recorded in docs/tuning.md.)
fn mid_size_candidates() -> Vec<Policy> {
    use scan::policy::{StatusEncoding::Packed128, TileLayout::WarpStriped};
    let striped = |block_threads, items| {
        Policy::shape(block_threads, items)
            .with_layout(WarpStriped)
            .with_status(Packed128)
            .with_delays(1245, 648)
    };
    let mid = scan::policy::lookback_policy_for_len(4, 1 << 22);
    let mut candidates = vec![
        scan::policy::lookback_policy(4),
        scan::policy::SMALL_INPUT_LOOKBACK_TUNING,
        mid,
        // The mid-size default with its tiles drawn from the counter.
        mid.with_schedule(scan::policy::Schedule::TilePerBlock),
    ];
    for (threads, items) in [(128, 24), (128, 32), (192, 32), (384, 24)] {
        candidates.push(striped(threads, items));
    }
    let mut distinct = Vec::new();
    for candidate in candidates {
        if !distinct.contains(&candidate) {
            distinct.push(candidate);
        }
    }
    distinct
}

/// Each mid-size candidate at 2^18 … 2^27 `i32` elements, checked against
/// the CPU and timed (median of 101 after 5 warm-ups, output poisoned
/// before each run) against a device-to-device copy of the same size
/// measured the same way just before it: the measure for these
/// sizes is the scan's time over the copy's. Every size is measured in two
/// rounds, so the spread between runs shows beside the differences.
#[test]
#[ignore = "needs a CUDA GPU"]
fn mid_size_candidates_against_the_same_size_copy() {
    let gpu = gpu();
    eprintln!("{}", gpu.info().summary());
    let candidates = mid_size_candidates();
    let reps = Repetitions {
        warmup: 5,
        timed: 101,
    };
    for log2 in 18u32..=27 {
        let n = 1usize << log2;
        let host: Vec<i32> = exact_input(n, fresh_seed(&format!("mid {log2}")));
        let want = scan::cpu::scan(&host, &Sum, ScanKind::Inclusive);
        let input = DeviceBuffer::from_host(&gpu, &host).expect("upload");
        let source = DeviceBuffer::from_host(&gpu, &host).expect("copy source");
        let output = RefCell::new(DeviceBuffer::<i32>::poisoned(&gpu, n).expect("output"));
        let poison = || {
            output
                .borrow_mut()
                .view_mut()
                .fill(&gpu, <i32 as gpu_core::DeviceType>::poison())
        };
        for round in 1..=2 {
            let copy = time_device(
                &gpu,
                reps,
                |_| poison(),
                |_| {
                    output
                        .borrow_mut()
                        .view_mut()
                        .copy_from(&gpu, &source.view())
                },
            )
            .expect("same-size copy");
            eprintln!(
                "mid n=2^{log2} round {round} copy {:.2} us",
                copy.median_ms * 1e3
            );
            for &tuning in &candidates {
                let scan_once = || scan_with(&gpu, &input, &output, tuning);
                check_candidate(&gpu, &input, &output, &want, tuning, &format!("2^{log2}"));
                let timing =
                    time_device(&gpu, reps, |_| poison(), |_| scan_once()).expect("timing");
                eprintln!(
                    "mid n=2^{log2} round {round} {:<28} {:.2} us  {:.3}x copy",
                    tuning.label(),
                    timing.median_ms * 1e3,
                    timing.median_ms / copy.median_ms
                );
            }
        }
    }
}
