//! Tuning sweeps on the goal shapes, printed as tables with the copy ceiling
//! measured in the same run: every transpose algorithm and the Tuned
//! transpose at every compiled shape, with and without vectors and the tall
//! tile (f32 16384² and a prime 9973 × 10007, f64 8192 × 16384, u8 32768²,
//! u16 16384 × 32768); every matvec algorithm at 16384² (f32 and f64), the Tuned
//! kernels at each tunable setting, and cuBLAS gemv when built with
//! `--features cublas`. Every variant's result
//! is checked against the CPU before it is timed, so the sweep is also a
//! correctness test of the tuning variants.
//!
//! Run on the GPU machine with
//! `cargo test --release -p parprims-linalg [--features cublas] --test matvec_transpose_sweep -- --include-ignored --nocapture`.

use gpu_core::{DeviceBuffer, DeviceType, Gpu};
use linalg::policy::{MatvecPolicy, TransposePolicy};
use linalg::{
    cpu, matvec, matvec_bytes_moved, matvec_tuned_with, transpose, transpose_bytes_moved,
    transpose_tuned_with, Matrix, MatvecAlgorithm, MatvecElement, Transpose, TransposeAlgorithm,
};
use parprims_testkit::bench::{copy_ceiling, time_device, CopyCeiling, Repetitions};
use parprims_testkit::rng::{random_vec, SplitMix64};

/// A named way to fill an output, timed as one run.
type Variant<'a, Out> = (String, Box<dyn Fn(&mut Out) + 'a>);

/// Median of 25 timed runs after 3 warm-ups.
const REPS: Repetitions = Repetitions {
    warmup: 3,
    timed: 25,
};

fn report(what: &str, ms: f64, bytes: u64, ceiling: &CopyCeiling, baseline_ms: Option<f64>) {
    let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
    let versus = match baseline_ms {
        Some(baseline) => format!("  {:>6.3} of cuBLAS", baseline / ms),
        None => String::new(),
    };
    println!(
        "{what:<58} {ms:>9.4} ms {gbps:>8.1} GB/s {:>6.3} of copy ceiling{versus}",
        ceiling.fraction(gbps)
    );
}

/// Times `run` into `y`: y is poisoned and the stream drained before each
/// run (untimed), so a run's host-side work (argument checks, kernel
/// lookup, allocation) is inside its CUDA-event interval, as a user calling
/// matvec back to back on an idle GPU sees it.
fn time_into<T: MatvecElement>(
    gpu: &Gpu,
    y: &mut DeviceBuffer<T>,
    run: &dyn Fn(&mut DeviceBuffer<T>),
) -> f64 {
    let y = std::cell::RefCell::new(y);
    time_device(
        gpu,
        REPS,
        |_| {
            y.borrow_mut().view_mut().fill(gpu, T::poison())?;
            gpu.synchronize()
        },
        |_| {
            run(&mut y.borrow_mut());
            Ok(())
        },
    )
    .unwrap()
    .median_ms
}

/// The Tuned variants swept for one direction, with their names.
fn tunings<T: MatvecElement>(n: usize, op: Transpose) -> Vec<(String, MatvecPolicy)> {
    let mut tunings = Vec::new();
    for loads in [4u32, 8] {
        for streaming in [false, true] {
            let hint = if streaming { " cs" } else { "" };
            match op {
                Transpose::No => {
                    for vectors in [16u64, 32, 64] {
                        let mut tuning = MatvecPolicy::DEFAULT;
                        tuning.n_vectors_per_thread = vectors;
                        tuning.n_loads = loads;
                        tuning.streaming = streaming;
                        let tpr = linalg::policy::threads_per_row(
                            n as u64,
                            16 / T::BYTES as u64,
                            &tuning,
                        );
                        tunings.push((
                            format!("tuned threads/row {tpr} loads {loads}{hint}"),
                            tuning,
                        ));
                    }
                }
                Transpose::Yes => {
                    for waves in [2u64, 4, 8, 16] {
                        let mut tuning = MatvecPolicy::DEFAULT;
                        tuning.t_waves = waves;
                        tuning.t_loads = loads;
                        tuning.streaming = streaming;
                        tunings.push((format!("tuned waves {waves} loads {loads}{hint}"), tuning));
                    }
                }
            }
        }
    }
    tunings
}

fn matvec_sweep<T: MatvecElement>(gpu: &Gpu, n: usize, ceiling: &CopyCeiling) {
    let a_host = random_vec::<T>(n * n, 3, -1.0, 1.0);
    let x_host = random_vec::<T>(n, 4, -1.0, 1.0);
    let a = Matrix::from_host(gpu, n, n, &a_host).unwrap();
    let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
    let mut y = DeviceBuffer::<T>::poisoned(gpu, n).unwrap();
    let bytes = matvec_bytes_moved(n, n, T::BYTES);
    for op in [Transpose::No, Transpose::Yes] {
        let (exact, magnitude) = cpu::matvec_f64(&a_host, n, n, &x_host, op).unwrap();
        let check = |y: &DeviceBuffer<T>, what: &str| {
            let got = y.to_host(gpu).unwrap();
            for i in 0..n {
                let tolerance = cpu::matvec_tolerance::<T>(n, magnitude[i]);
                assert!(
                    (got[i].to_f64() - exact[i]).abs() <= tolerance,
                    "{what}: y[{i}] = {}, reference {}",
                    got[i],
                    exact[i]
                );
            }
        };
        // cuBLAS first, so every line below can say how far from it we are.
        let baseline_ms = cublas(gpu, &a, &x, &mut y, op, n, bytes, ceiling, &check);
        let mut variants: Vec<Variant<'_, DeviceBuffer<T>>> = Vec::new();
        for algorithm in MatvecAlgorithm::all() {
            let (a, x) = (&a, &x);
            let name = match algorithm {
                MatvecAlgorithm::Tuned => "tuned (default tuning)".to_owned(),
                other => other.name(),
            };
            variants.push((
                name,
                Box::new(move |y: &mut DeviceBuffer<T>| {
                    matvec(gpu, a.view(), x.view(), y.view_mut(), op, algorithm).unwrap()
                }),
            ));
        }
        for (name, tuning) in tunings::<T>(n, op) {
            let (a, x) = (&a, &x);
            variants.push((
                name,
                Box::new(move |y: &mut DeviceBuffer<T>| {
                    matvec_tuned_with(gpu, a.view(), x.view(), y.view_mut(), op, &tuning).unwrap()
                }),
            ));
        }
        for (name, run) in &variants {
            let what = format!("matvec {} {} {n}² {name}", T::SUFFIX, op.name());
            y.view_mut().fill(gpu, T::poison()).unwrap();
            run(&mut y);
            check(&y, &what);
            let ms = time_into(gpu, &mut y, run.as_ref());
            report(&what, ms, bytes, ceiling, baseline_ms);
        }
    }
}

/// cuBLAS gemv on the same data: checked, timed, reported; returns its
/// median time (None when cuBLAS cannot be loaded).
#[cfg(feature = "cublas")]
#[allow(clippy::too_many_arguments)]
fn cublas<T: MatvecElement>(
    gpu: &Gpu,
    a: &Matrix<T>,
    x: &DeviceBuffer<T>,
    y: &mut DeviceBuffer<T>,
    op: Transpose,
    n: usize,
    bytes: u64,
    ceiling: &CopyCeiling,
    check: &dyn Fn(&DeviceBuffer<T>, &str),
) -> Option<f64> {
    use linalg::cublas_baseline::{dgemv, sgemv, CublasHandle};
    use std::any::Any;
    let handle = match CublasHandle::new(gpu) {
        Ok(h) => h,
        Err(e) => {
            println!("cuBLAS unavailable: {e}");
            return None;
        }
    };
    let run = |y: &mut DeviceBuffer<T>| {
        let y_any: &mut dyn Any = y;
        if let Some(y32) = y_any.downcast_mut::<DeviceBuffer<f32>>() {
            let a32 = (a as &dyn Any).downcast_ref::<Matrix<f32>>().unwrap();
            let x32 = (x as &dyn Any).downcast_ref::<DeviceBuffer<f32>>().unwrap();
            sgemv(&handle, a32.view(), x32.view(), y32.view_mut(), op).unwrap();
        } else if let Some(y64) = y_any.downcast_mut::<DeviceBuffer<f64>>() {
            let a64 = (a as &dyn Any).downcast_ref::<Matrix<f64>>().unwrap();
            let x64 = (x as &dyn Any).downcast_ref::<DeviceBuffer<f64>>().unwrap();
            dgemv(&handle, a64.view(), x64.view(), y64.view_mut(), op).unwrap();
        }
    };
    let what = format!("matvec {} {} {n}² cuBLAS gemv", T::SUFFIX, op.name());
    y.view_mut().fill(gpu, T::poison()).unwrap();
    run(y);
    check(y, &what);
    let ms = time_into(gpu, y, &run);
    report(&what, ms, bytes, ceiling, Some(ms));
    Some(ms)
}

#[cfg(not(feature = "cublas"))]
#[allow(clippy::too_many_arguments)]
fn cublas<T: MatvecElement>(
    _gpu: &Gpu,
    _a: &Matrix<T>,
    _x: &DeviceBuffer<T>,
    _y: &mut DeviceBuffer<T>,
    _op: Transpose,
    _n: usize,
    _bytes: u64,
    _ceiling: &CopyCeiling,
    _check: &dyn Fn(&DeviceBuffer<T>, &str),
) -> Option<f64> {
    println!("(cuBLAS baseline: build with --features cublas)");
    None
}

/// Random bit patterns (compared as bits, so NaNs do no harm).
fn random_bits<T: DeviceType>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let mut out = vec![T::default(); len];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
    out
}

fn transpose_sweep<T: DeviceType>(gpu: &Gpu, rows: usize, cols: usize, ceiling: &CopyCeiling) {
    let host = random_bits::<T>(rows * cols, 5);
    let expected = cpu::transpose(&host, rows, cols).unwrap();
    let input = Matrix::from_host(gpu, rows, cols, &host).unwrap();
    let mut output = Matrix::<T>::poisoned(gpu, cols, rows).unwrap();
    let bytes = transpose_bytes_moved(rows, cols, T::BYTES);
    let mut variants: Vec<Variant<'_, Matrix<T>>> = Vec::new();
    for algorithm in TransposeAlgorithm::ALL {
        let input = &input;
        variants.push((
            format!("{algorithm}"),
            Box::new(move |out: &mut Matrix<T>| {
                transpose(gpu, input.view(), out.view_mut(), algorithm).unwrap()
            }),
        ));
    }
    // Every scalar shape and order; in both orders, the policy with vectors
    // and the tall tile at the default shape (the vector kernel for 1- and
    // 2-byte elements on whole vectors, the tall tile for 2- and 4-byte
    // elements on rows off 256-byte blocks, the square tile otherwise).
    let (scalar, special): (Vec<_>, Vec<_>) = TransposePolicy::compiled()
        .into_iter()
        .partition(|policy| !policy.vectors && policy.tall_from_elements.is_none());
    let special = special.into_iter().filter(|policy| {
        (policy.tile, policy.block_rows)
            == (
                TransposePolicy::DEFAULT.tile,
                TransposePolicy::DEFAULT.block_rows,
            )
    });
    for tuning in scalar.into_iter().chain(special) {
        let input = &input;
        let name = if tuning.vectors || tuning.tall_from_elements.is_some() {
            format!("tuned vectors+tall {}", tuning.order.name())
        } else {
            format!(
                "tuned {}×{} {}",
                tuning.tile,
                tuning.block_rows,
                tuning.order.name()
            )
        };
        variants.push((
            name,
            Box::new(move |out: &mut Matrix<T>| {
                transpose_tuned_with(gpu, input.view(), out.view_mut(), &tuning).unwrap()
            }),
        ));
    }
    for (name, run) in &variants {
        let what = format!("transpose {} {rows}×{cols} {name}", T::SUFFIX);
        run(&mut output);
        let got = output.to_host(gpu).unwrap();
        assert!(
            got.iter()
                .zip(&expected)
                .all(|(g, e)| bytemuck::bytes_of(g) == bytemuck::bytes_of(e)),
            "{what}: wrong result"
        );
        let timing = time_device(
            gpu,
            REPS,
            |_| Ok(()),
            |_| {
                run(&mut output);
                Ok(())
            },
        )
        .unwrap();
        report(&what, timing.median_ms, bytes, ceiling, None);
    }
}

/// The device and the copy ceiling, printed.
fn device_and_ceiling() -> (Gpu, CopyCeiling) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let ceiling = copy_ceiling(&gpu, 1 << 30, REPS).unwrap();
    println!(
        "\n{}\ncopy ceiling {:.1} GB/s (1 GiB copy, read + write)",
        gpu.info().summary(),
        ceiling.gbps
    );
    (gpu, ceiling)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transpose_sweep_every_element_size() {
    let (gpu, ceiling) = device_and_ceiling();
    transpose_sweep::<f32>(&gpu, 16384, 16384, &ceiling);
    transpose_sweep::<f32>(&gpu, 9973, 10007, &ceiling);
    transpose_sweep::<f64>(&gpu, 8192, 16384, &ceiling);
    transpose_sweep::<u8>(&gpu, 32768, 32768, &ceiling);
    transpose_sweep::<u16>(&gpu, 16384, 32768, &ceiling);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matvec_sweep_16384_squared() {
    let (gpu, ceiling) = device_and_ceiling();
    matvec_sweep::<f32>(&gpu, 16384, &ceiling);
    matvec_sweep::<f64>(&gpu, 16384, &ceiling);
}
