//! Start-up cost: the first call of each default primitive in a fresh
//! process, which loads its kernel modules, against the second call.
//!
//! Where the modules come from decides the first call's cost: compiled by
//! NVRTC (about a second each), read from the disk cache
//! (`PARPRIMS_CACHE_DIR`, filled by an earlier process or by
//! `parprims warm-cache`), or embedded in the program (the `aot` feature).
//! The table gives, per primitive, the host wall time of the first and the
//! second call (each ending with a synchronisation) and the modules the
//! first call loaded, with where they came from and the time spent loading.
//!
//! ```sh
//! cargo run --release --example startup                    # NVRTC or the disk cache
//! cargo run --release --features aot --example startup     # embedded kernels
//! PARPRIMS_CACHE_DIR= cargo run --release --example startup  # no disk cache
//! ```

use std::process::ExitCode;
use std::time::Instant;

use parprims::compact::{self, CompactOptions};
use parprims::gpu_core::{DeviceBuffer, Gpu, ModuleOrigin, Result, Sum};
use parprims::linalg::{self, ConvOptions, Matrix};
use parprims::scan::{self, ScanKind, ScanOptions};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("startup: {error}");
            ExitCode::from(2)
        }
    }
}

/// Loaded modules by origin: (embedded, disk, compiled) counts and the
/// milliseconds each kind took in all.
fn census(gpu: &Gpu) -> [(usize, f64); 3] {
    let mut kinds = [(0usize, 0f64); 3];
    for origin in gpu.kernel_store().module_origins() {
        let (slot, ms) = match origin {
            ModuleOrigin::Embedded { ms } => (0, ms),
            ModuleOrigin::DiskCache { ms } => (1, ms),
            ModuleOrigin::Compiled { ms } => (2, ms),
        };
        kinds[slot].0 += 1;
        kinds[slot].1 += ms;
    }
    kinds
}

fn run() -> Result<()> {
    let process_start = Instant::now();
    #[cfg(feature = "aot")]
    println!(
        "embedded kernel images installed: {}",
        parprims::aot::install()
    );
    #[cfg(not(feature = "aot"))]
    println!("built without the aot feature: kernels come from the disk cache or NVRTC");
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            println!("startup: no GPU ({error}); nothing to measure");
            return Ok(());
        }
    };
    println!(
        "{} — context ready {:.1} ms after start",
        gpu.info().summary(),
        process_start.elapsed().as_secs_f64() * 1e3
    );

    let n = 1 << 20;
    let values: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
    let flags: Vec<u8> = (0..n).map(|i| (i % 3 == 0) as u8).collect();
    let input = DeviceBuffer::from_host(&gpu, &values)?;
    let flag_buffer = DeviceBuffer::from_host(&gpu, &flags)?;
    let mut output = DeviceBuffer::<i32>::zeros(&gpu, n)?;
    let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
    let side = 1024;
    let floats: Vec<f32> = (0..side * side).map(|i| (i % 11) as f32).collect();
    let matrix = Matrix::from_host(&gpu, side, side, &floats)?;
    let vector = DeviceBuffer::from_host(&gpu, &floats[..side])?;
    let filter = Matrix::from_host(&gpu, 3, 3, &[1.0f32; 9])?;
    gpu.synchronize()?;

    type Call<'a> = Box<dyn FnMut() -> Result<()> + 'a>;
    let mut calls: Vec<(&str, Call<'_>)> = vec![
        (
            "scan_into i32",
            Box::new(|| {
                scan::scan_into(
                    &gpu,
                    input.view(),
                    output.view_mut(),
                    &Sum,
                    ScanKind::Inclusive,
                    &ScanOptions::default(),
                )
            }),
        ),
        (
            "select_flagged_into i32",
            Box::new(|| {
                let mut kept = DeviceBuffer::<i32>::zeros(&gpu, n)?;
                compact::select_flagged_into(
                    &gpu,
                    input.view(),
                    flag_buffer.view(),
                    kept.view_mut(),
                    count.view_mut(),
                    CompactOptions::default(),
                )
            }),
        ),
        (
            "transpose f32",
            Box::new(|| linalg::transpose_new(&gpu, matrix.view(), Default::default()).map(drop)),
        ),
        (
            "matvec f32",
            Box::new(|| {
                linalg::matvec_new(
                    &gpu,
                    matrix.view(),
                    vector.view(),
                    linalg::Transpose::No,
                    Default::default(),
                )
                .map(drop)
            }),
        ),
        (
            "conv2d f32 3x3",
            Box::new(|| {
                linalg::conv2d_new(&gpu, matrix.view(), filter.view(), &ConvOptions::default())
                    .map(drop)
            }),
        ),
    ];

    println!(
        "| primitive | first call ms | second call ms | modules loaded | embedded | disk cache | compiled | loading ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, call) in calls.iter_mut() {
        let before = census(&gpu);
        let started = Instant::now();
        call()?;
        gpu.synchronize()?;
        let first = started.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        call()?;
        gpu.synchronize()?;
        let second = started.elapsed().as_secs_f64() * 1e3;
        let after = census(&gpu);
        let delta: Vec<(usize, f64)> = (0..3)
            .map(|k| (after[k].0 - before[k].0, after[k].1 - before[k].1))
            .collect();
        let loaded: usize = delta.iter().map(|d| d.0).sum();
        let loading_ms: f64 = delta.iter().map(|d| d.1).sum();
        println!(
            "| {name} | {first:.2} | {second:.3} | {loaded} | {} | {} | {} | {loading_ms:.2} |",
            delta[0].0, delta[1].0, delta[2].0
        );
    }
    println!(
        "process total {:.1} ms",
        process_start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
