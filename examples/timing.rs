//! Timing a parprims call from your own program, and what each way of
//! timing it measures.
//!
//! A GPU call has two parts: host work (checking arguments, finding the
//! kernel, allocating the tile state, enqueueing) and device work. CUDA
//! events bracket what the *stream* does between them, so the same call
//! reads differently depending on whether the GPU was busy or idle when the
//! start event was recorded:
//!
//! | way | what the events bracket |
//! |---|---|
//! | `queued` | the call enqueued behind other work (a fill of the output): host work overlaps that work, the events see device work only |
//! | `idle` | the stream is idle at the start event (synchronised first): host work between the events shows as a gap before the kernel |
//! | `allocating` | as `idle`, through `scan::inclusive`, which also allocates the output |
//! | `back-to-back` | `--calls` calls between one pair of events, divided by the count: the steady rate of a pipeline |
//!
//! Each is reported as a fraction of the device-to-device copy ceiling
//! measured in the same run (bytes: the scan reads n and writes n
//! elements).
//!
//! ```sh
//! cargo run --release --example timing -- --n 268435456 --reps 20
//! ```

use std::cell::RefCell;
use std::process::ExitCode;

use clap::Parser;
use parprims::gpu_core::{DeviceBuffer, DeviceType, Error, Gpu, GpuTimer, Result, Sum};
use parprims::scan::{self, ScanKind, ScanOptions};
use parprims_testkit::bench::{copy_ceiling, time_device, Repetitions, Timing};
use parprims_testkit::rng::random_vec;

#[derive(Parser)]
struct Args {
    /// Elements to scan (i32).
    #[arg(long, default_value_t = 1 << 28)]
    n: usize,
    /// Timed repetitions per way (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Calls between one pair of events for `back-to-back`.
    #[arg(long, default_value_t = 10)]
    calls: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("timing: {error}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            println!("No GPU to time on ({error}).");
            return Ok(());
        }
    };
    let reps = Repetitions {
        warmup: 3,
        timed: args.reps.max(1),
    };
    let n = args.n.max(1);
    let bytes = 2.0 * (n * i32::BYTES) as f64;
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    println!("{}", gpu.info().summary());
    println!(
        "copy ceiling {:.1} GB/s; inclusive i32 sum scan of {n} elements, {} timed runs each\n",
        ceiling.gbps, reps.timed
    );

    let host = random_vec::<i32>(n, 0x7131_0001, -1000.0, 1000.0);
    let expected = scan::cpu::inclusive(&host, &Sum);
    let input = DeviceBuffer::from_host(&gpu, &host)?;
    let output = RefCell::new(DeviceBuffer::<i32>::poisoned(&gpu, n)?);
    let options = ScanOptions::default();
    let scan_into = |gpu: &Gpu| {
        scan::scan_into(
            gpu,
            input.view(),
            output.borrow_mut().view_mut(),
            &Sum,
            ScanKind::Inclusive,
            &options,
        )
    };

    let queued = time_device(
        &gpu,
        reps,
        |_| output.borrow_mut().view_mut().fill(&gpu, i32::poison()),
        |_| scan_into(&gpu),
    )?;
    check("queued", &output.borrow().to_host(&gpu)?, &expected)?;

    let idle = time_device(
        &gpu,
        reps,
        |_| {
            output.borrow_mut().view_mut().fill(&gpu, i32::poison())?;
            gpu.synchronize()
        },
        |_| scan_into(&gpu),
    )?;
    check("idle", &output.borrow().to_host(&gpu)?, &expected)?;

    let allocated = RefCell::new(None);
    let allocating = time_device(
        &gpu,
        reps,
        |_| {
            *allocated.borrow_mut() = None;
            gpu.synchronize()
        },
        |_| {
            *allocated.borrow_mut() = Some(scan::inclusive(&gpu, input.view(), &Sum)?);
            Ok(())
        },
    )?;
    if let Some(result) = allocated.borrow().as_ref() {
        check("allocating", &result.to_host(&gpu)?, &expected)?;
    }

    let calls = args.calls.max(1);
    let timer = GpuTimer::new(&gpu)?;
    let mut samples = Vec::with_capacity(reps.timed);
    for rep in 0..reps.warmup + reps.timed {
        gpu.synchronize()?;
        timer.start()?;
        for _ in 0..calls {
            scan_into(&gpu)?;
        }
        timer.stop()?;
        let ms = timer.elapsed_ms()?;
        if rep >= reps.warmup {
            samples.push(ms / calls as f64);
        }
    }
    let back_to_back = Timing::from_samples(samples)?;
    check("back-to-back", &output.borrow().to_host(&gpu)?, &expected)?;

    println!("| way | median ms | GB/s | × ceiling |");
    println!("|---|---|---|---|");
    for (way, timing) in [
        ("queued", &queued),
        ("idle", &idle),
        ("allocating", &allocating),
        ("back-to-back", &back_to_back),
    ] {
        let gbps = timing.gbps(bytes);
        println!(
            "| {way} | {:.4} | {:.1} | {:.3} |",
            timing.median_ms,
            gbps,
            ceiling.fraction(gbps)
        );
    }
    Ok(())
}

/// Every way's result is compared with the CPU reference; a mismatch ends
/// the run with an error.
fn check(way: &str, got: &[i32], expected: &[i32]) -> Result<()> {
    let wrong = match got.iter().zip(expected).position(|(a, b)| a != b) {
        None if got.len() == expected.len() => return Ok(()),
        None => format!("{} elements, expected {}", got.len(), expected.len()),
        Some(i) => format!("element {i} is {}, expected {}", got[i], expected[i]),
    };
    Err(Error::invalid("result", format!("{way}: {wrong}")))
}
