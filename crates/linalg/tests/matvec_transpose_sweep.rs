//! Tuning sweep on the goal shapes (16384², f32 and f64), printed as a table
//! with the copy ceiling measured in the same run: every matvec and
//! transpose algorithm, the Tuned kernels at each tunable setting, and
//! cuBLAS gemv when built with `--features cublas`. Every variant's result
//! is checked against the CPU before it is timed, so the sweep is also a
//! correctness test of the tuning variants.
//!
//! Run on the GPU machine with
//! `cargo test --release -p parprims-linalg [--features cublas] --test matvec_transpose_sweep -- --include-ignored --nocapture`.

use gpu_core::bench::{copy_ceiling, time_device, CopyCeiling, Repetitions};
use gpu_core::rng::random_vec;
use gpu_core::{DeviceBuffer, Gpu};
use linalg::{
    cpu, matvec, matvec_bytes_moved, matvec_tuned_with, transpose, transpose_bytes_moved,
    transpose_tuned_with, Matrix, MatvecAlgorithm, MatvecElement, MatvecTuning, Transpose,
    TransposeAlgorithm, TransposeTuning, MATVEC_TUNING, TUNABLE_BLOCK_ROWS,
};

/// A named way to fill an output, timed as one run.
type Variant<'a, Out> = (String, Box<dyn Fn(&mut Out) + 'a>);

const REPS: Repetitions = Repetitions {
    warmup: 3,
    timed: 15,
};

fn report(what: &str, ms: f64, bytes: u64, ceiling: &CopyCeiling) {
    let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
    println!(
        "{what:<48} {ms:>9.4} ms {gbps:>8.1} GB/s {:>6.3} of copy ceiling",
        ceiling.fraction(gbps)
    );
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
        let mut check = |y: &DeviceBuffer<T>, what: &str| {
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
        let mut variants: Vec<Variant<'_, DeviceBuffer<T>>> = Vec::new();
        for algorithm in MatvecAlgorithm::all() {
            let (a, x) = (&a, &x);
            variants.push((
                format!("{algorithm}"),
                Box::new(move |y: &mut DeviceBuffer<T>| {
                    matvec(gpu, a.view(), x.view(), y.view_mut(), op, algorithm).unwrap()
                }),
            ));
        }
        let tunings: Vec<MatvecTuning> = match op {
            Transpose::No => [4u64, 8, 16, 32, 64, 128]
                .into_iter()
                .map(|v| MatvecTuning {
                    n_vectors_per_thread: v,
                    ..MATVEC_TUNING
                })
                .collect(),
            Transpose::Yes => [1u64, 2, 4, 8, 16]
                .into_iter()
                .map(|w| MatvecTuning {
                    t_waves: w,
                    ..MATVEC_TUNING
                })
                .collect(),
        };
        for tuning in tunings {
            let (a, x) = (&a, &x);
            let name = match op {
                Transpose::No => format!(
                    "tuned vectors/thread {} (threads/row {})",
                    tuning.n_vectors_per_thread,
                    linalg::threads_per_row(n as u64, 16 / T::BYTES as u64, &tuning)
                ),
                Transpose::Yes => format!("tuned waves {}", tuning.t_waves),
            };
            variants.push((
                name,
                Box::new(move |y: &mut DeviceBuffer<T>| {
                    matvec_tuned_with(gpu, a.view(), x.view(), y.view_mut(), op, &tuning).unwrap()
                }),
            ));
        }
        for (name, run) in &variants {
            let what = format!("matvec {} {} {n}² {name}", T::SUFFIX, op.name());
            run(&mut y);
            check(&y, &what);
            let timing = time_device(
                gpu,
                REPS,
                |_| Ok(()),
                |_| {
                    run(&mut y);
                    Ok(())
                },
            )
            .unwrap();
            report(&what, timing.median_ms, bytes, ceiling);
        }
        cublas(gpu, &a, &x, &mut y, op, n, bytes, ceiling, &mut check);
    }
}

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
    check: &mut dyn FnMut(&DeviceBuffer<T>, &str),
) {
    use linalg::cublas_baseline::{dgemv, sgemv, CublasHandle};
    use std::any::Any;
    let handle = match CublasHandle::new(gpu) {
        Ok(h) => h,
        Err(e) => {
            println!("cuBLAS unavailable: {e}");
            return;
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
    run(y);
    check(y, &what);
    let timing = time_device(
        gpu,
        REPS,
        |_| Ok(()),
        |_| {
            run(y);
            Ok(())
        },
    )
    .unwrap();
    report(&what, timing.median_ms, bytes, ceiling);
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
    _check: &mut dyn FnMut(&DeviceBuffer<T>, &str),
) {
    println!("(cuBLAS baseline: build with --features cublas)");
}

fn transpose_sweep<T: MatvecElement>(gpu: &Gpu, rows: usize, cols: usize, ceiling: &CopyCeiling) {
    let host = random_vec::<T>(rows * cols, 5, -1.0, 1.0);
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
    for block_rows in TUNABLE_BLOCK_ROWS {
        let input = &input;
        let tuning = TransposeTuning {
            tile: 32,
            block_rows,
        };
        variants.push((
            format!("tuned 32×{block_rows}"),
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
        report(&what, timing.median_ms, bytes, ceiling);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_sweep_16384_squared() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let ceiling = copy_ceiling(&gpu, 1 << 30, REPS).unwrap();
    println!(
        "\n{}\ncopy ceiling {:.1} GB/s (1 GiB copy, read + write)",
        gpu.info().summary(),
        ceiling.gbps
    );
    transpose_sweep::<f32>(&gpu, 16384, 16384, &ceiling);
    transpose_sweep::<f64>(&gpu, 8192, 16384, &ceiling);
    matvec_sweep::<f32>(&gpu, 16384, &ceiling);
    matvec_sweep::<f64>(&gpu, 16384, &ceiling);
}
