//! Tile shapes of the look-back scan at 2^28 elements: every shape must give
//! the exact CPU result (the assertion), and each one's time is printed as a
//! fraction of the device-to-device copy ceiling, so the tuning table in
//! `lookback.rs` can be chosen from one run (`--nocapture`). It is a single
//! test in its own binary so that nothing else runs on the GPU while it
//! times; the benchmark proper is the scan example.

mod lookback_support;

use gpu_core::bench::{copy_ceiling, time_device, Repetitions};
use gpu_core::{DeviceBuffer, Element, Gpu, Sum};
use lookback_support::*;
use scan::{LookbackTuning, ScanKind, LOOKBACK_TUNING};

fn shape(block_threads: u32, items_per_thread: u32) -> LookbackTuning {
    LookbackTuning {
        block_threads,
        items_per_thread,
    }
}

fn sweep<T: Element>(gpu: &Gpu, shapes: &[LookbackTuning], ceiling_gbps: f64)
where
    Sum: gpu_core::Operator<T>,
{
    let n = 1usize << 28;
    let host: Vec<T> = exact_input(n, fresh_seed(&format!("tuning {}", T::SUFFIX)));
    let want = scan::cpu::scan(&host, &Sum, ScanKind::Inclusive);
    let input = DeviceBuffer::from_host(gpu, &host).expect("upload");
    let mut output = DeviceBuffer::<T>::poisoned(gpu, n).expect("output");
    let table = LOOKBACK_TUNING
        .iter()
        .find(|(bytes, _)| *bytes == T::BYTES)
        .map(|(_, t)| *t);
    for &tuning in shapes {
        output.view_mut().fill(gpu, T::poison()).expect("poison");
        let scan_once = |output: &mut DeviceBuffer<T>| {
            scan::scan_lookback_tuned(
                gpu,
                Some(input.view()),
                output.view_mut(),
                &Sum,
                ScanKind::Inclusive,
                tuning,
            )
        };
        scan_once(&mut output).unwrap_or_else(|e| panic!("{tuning:?}: {e}"));
        let got = output.to_host(gpu).expect("download");
        assert_same(&got, &want, &format!("{} {tuning:?}", T::SUFFIX));
        let timing = time_device(
            gpu,
            Repetitions {
                warmup: 3,
                timed: 15,
            },
            |_| Ok(()),
            |_| scan_once(&mut output),
        )
        .expect("timing");
        let gbps = timing.gbps((2 * n * T::BYTES) as f64);
        eprintln!(
            "lookback {} n=2^28 {:>4}x{:<2}{} {:.3} ms  {:.0} GB/s  {:.3} of copy ceiling",
            T::SUFFIX,
            tuning.block_threads,
            tuning.items_per_thread,
            if Some(tuning) == table {
                " (table)"
            } else {
                "        "
            },
            timing.median_ms,
            gbps,
            gbps / ceiling_gbps
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_shape_is_exact_at_2_28_and_reports_its_speed() {
    let gpu = gpu();
    let ceiling = copy_ceiling(&gpu, 1 << 30, Repetitions::default()).expect("copy ceiling");
    eprintln!(
        "copy ceiling {:.0} GB/s (read + write) on {}",
        ceiling.gbps,
        gpu.info().summary()
    );
    let four_byte = [
        shape(128, 16),
        shape(128, 32),
        shape(256, 8),
        shape(256, 12),
        shape(256, 16),
        shape(256, 24),
        shape(512, 8),
        shape(512, 16),
    ];
    let eight_byte = [
        shape(128, 8),
        shape(128, 16),
        shape(256, 4),
        shape(256, 8),
        shape(256, 12),
        shape(512, 4),
        shape(512, 8),
    ];
    sweep::<i32>(&gpu, &four_byte, ceiling.gbps);
    sweep::<f32>(&gpu, &[shape(256, 16), shape(512, 16)], ceiling.gbps);
    sweep::<u64>(&gpu, &eight_byte, ceiling.gbps);
    sweep::<f64>(&gpu, &[shape(256, 8), shape(512, 8)], ceiling.gbps);
}
