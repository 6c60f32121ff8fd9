//! The look-back scan's tuning sweep at 2^28 elements: every candidate of
//! `scan::policy::lookback_candidates` (the table's entry first; tile shapes, the
//! warp-striped layout, wide look-back windows, register limits, the
//! 128-bit status word for 8-byte values) must give the exact CPU result
//! (the assertion), and each one's median time is printed with GB/s from
//! the headline byte count 2·n·size and as a fraction of the
//! device-to-device copy ceiling measured in the same process, so the
//! tuning table in `lookback.rs` can be chosen from one run
//! (`--nocapture`). It is a single test in its own binary so that nothing
//! else runs on the GPU while it times; the benchmark proper is the scan
//! example.

mod lookback_support;
mod scan_support;

use std::cell::RefCell;

use gpu_core::{DeviceBuffer, Element, Gpu, Sum};
use lookback_support::*;
use parprims_testkit::bench::{copy_ceiling, time_device, Repetitions};
use scan::policy::{Policy, LOOKBACK_TUNING};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

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
        let scan_once = || {
            scan::scan_into(
                gpu,
                input.view(),
                output.borrow_mut().view_mut(),
                &Sum,
                ScanKind::Inclusive,
                &ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(tuning),
            )
        };
        poison().expect("poison");
        scan_once().unwrap_or_else(|e| panic!("{tuning:?}: {e}"));
        let got = output.borrow().to_host(gpu).expect("download");
        assert_same(&got, &want, &format!("{} {}", T::SUFFIX, tuning.label()));
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
            ],
        ),
        ceiling.gbps,
    );
}
