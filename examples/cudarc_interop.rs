//! parprims inside a cudarc program: the program keeps its own context,
//! stream and kernel, and hands its buffers to parprims on that stream;
//! nothing goes through the host until the results are read at the end.
//!
//! 1. The program compiles its own kernel (cudarc's NVRTC) and fills a
//!    buffer with it, on its own stream.
//! 2. `Gpu::from_cudarc(ctx, stream)`: parprims on the same stream.
//! 3. An inclusive prefix sum (`scan::scan_into`) and a compaction of the
//!    positive values (`compact::select_if_into`) into the program's own
//!    `CudaSlice`s, lent with `CudaRead` / `CudaWrite` so that cudarc's
//!    events record parprims' reads and writes (the program could read the
//!    results on another stream and still be ordered after them).
//! 4. An exclusive scan into a buffer parprims allocates, taken back as a
//!    `CudaSlice` without a copy (`DeviceBuffer::into_cudarc`).
//! 5. Everything read back once and checked against the CPU.
//!
//! ```sh
//! cargo run --release --example cudarc_interop
//! ```

use std::process::ExitCode;

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use parprims::compact::{self, CompactOptions, Predicate};
use parprims::gpu_core::{self, CudaRead, CudaWrite, Gpu, Sum};
use parprims::scan::{self, ScanKind, ScanOptions};

/// The program's own kernel: a deterministic pattern in [-100, 100].
const MAKE_VALUES: &str = r#"
extern "C" __global__ void make_values(int* out, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = (int)((i * 2654435761ull) % 201ull) - 100;
    }
}
"#;

fn make_value(i: u64) -> i32 {
    (i.wrapping_mul(2_654_435_761) % 201) as i32 - 100
}

fn main() -> ExitCode {
    if !matches!(gpu_core::device_count(), Ok(count) if count > 0) {
        println!("No CUDA GPU here: this example runs parprims inside a cudarc program on a GPU, so there is nothing to do.");
        return ExitCode::SUCCESS;
    }
    if gpu_core::kernel::nvrtc_available().is_err() {
        println!("No NVRTC here: this example compiles its own kernel with cudarc's NVRTC, so there is nothing to do.");
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cudarc_interop: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = 1_000_003;

    // 1. The cudarc program: its context (event tracking on, cudarc's
    //    default), its stream, its kernel, its buffer.
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let ptx = cudarc::nvrtc::compile_ptx(MAKE_VALUES)?;
    let make_values = ctx.load_module(ptx)?.load_function("make_values")?;
    let mut values = stream.alloc_zeros::<i32>(n)?;
    let n_u64 = n as u64;
    let mut launch = stream.launch_builder(&make_values);
    launch.arg(&mut values).arg(&n_u64);
    // SAFETY: make_values(int* out, unsigned long long n) matches the two
    // arguments; it writes out[i] only for i < n, and `values` holds n ints.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }?;

    // The program's own output buffers.
    let mut sums = stream.alloc_zeros::<i32>(n)?;
    let mut kept = stream.alloc_zeros::<i32>(n)?;
    let mut kept_count = stream.alloc_zeros::<u64>(1)?;

    // 2. parprims on the same context and stream.
    let gpu = Gpu::from_cudarc(ctx.clone(), stream.clone())?;

    // 3. The loans live until the end of each statement, after parprims
    //    has enqueued its work: then cudarc records the reads and writes.
    scan::scan_into(
        &gpu,
        CudaRead::new(&gpu, &values)?.view(),
        CudaWrite::new(&gpu, &mut sums)?.view_mut(),
        &Sum,
        ScanKind::Inclusive,
        &ScanOptions::default(),
    )?;
    compact::select_if_into(
        &gpu,
        CudaRead::new(&gpu, &values)?.view(),
        &Predicate::Gt(0),
        CudaWrite::new(&gpu, &mut kept)?.view_mut(),
        CudaWrite::new(&gpu, &mut kept_count)?.view_mut(),
        CompactOptions::default(),
    )?;

    // 4. An output parprims allocates, handed back as a CudaSlice.
    let exclusive = scan::exclusive(&gpu, CudaRead::new(&gpu, &values)?.view(), &Sum)?
        .into_cudarc()
        .expect("a non-empty output has an allocation");

    // 5. One read-back at the end (cudarc's copies wait on the stream).
    let sums = stream.clone_dtoh(&sums)?;
    let kept_count = stream.clone_dtoh(&kept_count)?[0] as usize;
    let kept = stream.clone_dtoh(&kept.slice(..kept_count))?;
    let exclusive = stream.clone_dtoh(&exclusive)?;

    let host: Vec<i32> = (0..n as u64).map(make_value).collect();
    let cpu_sums: Vec<i32> = host
        .iter()
        .scan(0i32, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    let cpu_kept: Vec<i32> = host.iter().copied().filter(|&x| x > 0).collect();
    let cpu_exclusive: Vec<i32> = std::iter::once(0)
        .chain(cpu_sums[..n - 1].iter().copied())
        .collect();
    let checks = [
        ("inclusive scan", sums == cpu_sums),
        ("compaction", kept == cpu_kept),
        ("exclusive scan", exclusive == cpu_exclusive),
    ];
    println!("{}", gpu.info().summary());
    println!(
        "{n} values from the program's own kernel: sum {}, {kept_count} positive values kept, \
         last exclusive prefix {}",
        sums[n - 1],
        exclusive[n - 1]
    );
    for (what, ok) in checks {
        println!(
            "{what}: {}",
            if ok { "matches the CPU" } else { "MISMATCH" }
        );
    }
    if checks.iter().all(|&(_, ok)| ok) {
        Ok(())
    } else {
        Err("a result does not match the CPU".into())
    }
}
