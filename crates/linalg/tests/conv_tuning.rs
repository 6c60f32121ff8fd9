//! Tuning sweep of `TiledHalo` on the headline problem (issue 5): f32,
//! 8192² image, `Border::Valid`, K = 3, 5 and 7. Every variant — the block
//! kernel (the table's tuning) and each strip-kernel candidate
//! ([`STRIP_CANDIDATES`], plus other block shapes) — is first checked
//! exactly, bit for bit, against a CPU reference that adds the products in
//! the kernels' order with f32 fused multiply-adds, then timed: median of 25
//! runs after 3 warm-ups (CUDA events; the output poisoned before each run,
//! as `parprims bench` does), GB/s from the headline byte count
//! `4·H·W + 4·outputs`, and the fraction of the device-to-device copy
//! ceiling measured in the same process.
//!
//! `conv_borders_against_valid_8192` times the default through the public
//! `conv2d` at every border and padding mode against `Valid`.
//!
//! Run on the GPU machine with
//! `cargo test --release -p parprims-linalg --test conv_tuning -- --include-ignored --nocapture`
//! (one of the two: append its name).
//!
//! The sweep takes three optional environment variables, for profiling a
//! few variants: `CONV_SWEEP_K` (filter sides, `3,7`), `CONV_SWEEP_MATCH`
//! (variants whose name contains one of the `|`-separated strings) and
//! `CONV_SWEEP_CHECK_ONLY=1` (one checked run per variant, none timed: one
//! launch each, for `ncu`).

mod support;

use gpu_core::{DeviceType, Gpu, ModuleSource};
use linalg::conv::{conv2d_tuned_with, output_shape};
use linalg::policy::{
    conv_module_with, ConvPolicy, StripPolicy, StripStores, REGISTER_TILE_CANDIDATES,
    STRIP_CANDIDATES,
};
use linalg::{Border, ConvAlgorithm, ConvOptions, Matrix, MatrixViewMut};
use parprims_testkit::bench::{copy_ceiling, time_device, CopyCeiling, Repetitions, Timing};
use parprims_testkit::rng::random_vec;
use support::{block_kernel_only, conv_and_strip_modules, table_policy};

const REPS: Repetitions = Repetitions {
    warmup: 3,
    timed: 25,
};

const SIDE: usize = 8192;

/// Valid cross-correlation with the kernels' order of operations: for each
/// output, filter rows ascending, columns ascending, `acc = fma(x, w, acc)`
/// in f32. Row bands on every CPU thread.
fn cpu_exact(image: &[f32], h: usize, w: usize, filter: &[f32], k: usize) -> Vec<f32> {
    let (rows, cols) = (h - k + 1, w - k + 1);
    let mut out = vec![0.0f32; rows * cols];
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 64);
    let band = rows.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (b, chunk) in out.chunks_mut(band * cols).enumerate() {
            scope.spawn(move || {
                for (r, out_row) in chunk.chunks_mut(cols).enumerate() {
                    let i = b * band + r;
                    for (j, o) in out_row.iter_mut().enumerate() {
                        let mut acc = 0.0f32;
                        for u in 0..k {
                            let row = &image[(i + u) * w + j..(i + u) * w + j + k];
                            for v in 0..k {
                                acc = row[v].mul_add(filter[u * k + v], acc);
                            }
                        }
                        *o = acc;
                    }
                }
            });
        }
    });
    out
}

/// `support::prewarm`, with the time it took.
fn prewarm(gpu: &Gpu, modules: &[ModuleSource]) {
    let started = std::time::Instant::now();
    if support::prewarm(gpu, modules).is_some() {
        println!(
            "prewarmed {} modules in {:.1} s",
            modules.len(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// Device 0 and its copy ceiling (1 GiB device-to-device copy), printed.
fn gpu_and_ceiling() -> (Gpu, CopyCeiling) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let ceiling = copy_ceiling(&gpu, 1 << 30, Repetitions::default()).expect("copy ceiling");
    println!(
        "device: {} ({} SMs); copy ceiling {:.1} GB/s (read + write, 1 GiB copy)",
        gpu.info().name,
        gpu.info().sm_count,
        ceiling.gbps
    );
    (gpu, ceiling)
}

/// A fresh `SIDE × SIDE` image of values in [−1, 1) (the seed mixes `salt`
/// with the clock), on the host and on `gpu`, with its seed.
fn fresh_image(gpu: &Gpu, salt: u64) -> (u64, Vec<f32>, Matrix<f32>) {
    let seed = salt
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
    let image = random_vec::<f32>(SIDE * SIDE, seed, -1.0, 1.0);
    let image_d = Matrix::from_host(gpu, SIDE, SIDE, &image).expect("upload");
    (seed, image, image_d)
}

/// Panics at the first output whose bits differ from the reference's.
fn assert_bit_equal(got: &[f32], want: &[f32], cols: usize, what: &str, reference: &str) {
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!(
            "{what}: output ({}, {}) is {}, {reference} gives {}",
            i / cols,
            i % cols,
            got[i],
            want[i]
        );
    }
}

/// Times `run` into `out` ([`REPS`], CUDA events), the output poisoned
/// before each run as `parprims bench` does.
fn time_into(
    gpu: &Gpu,
    out: &mut Matrix<f32>,
    mut run: impl FnMut(MatrixViewMut<'_, f32>) -> gpu_core::Result<()>,
) -> gpu_core::Result<Timing> {
    let out = std::cell::RefCell::new(out);
    time_device(
        gpu,
        REPS,
        |_| {
            out.borrow_mut()
                .view_mut()
                .data_mut()
                .fill(gpu, f32::poison())
        },
        |_| run(out.borrow_mut().view_mut()),
    )
}

fn strip_name(t: &StripPolicy) -> String {
    let rows = if t.strip_rows == 0 {
        "wave".to_owned()
    } else {
        t.strip_rows.to_string()
    };
    format!(
        "strip vec{} pre{} rows={rows} {} {}{}{}{}",
        t.elems_per_lane,
        t.prefetch_rows,
        t.schedule.name(),
        t.stores.name(),
        if t.trim_halo { " trim" } else { "" },
        if t.max_registers == 0 {
            String::new()
        } else {
            format!(" regs{}", t.max_registers)
        },
        if t.warps == 0 {
            String::new()
        } else {
            format!(" warps{}", t.warps)
        }
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn conv_tiled_halo_sweep_8192() {
    let (gpu, ceiling) = gpu_and_ceiling();

    let block_tuning = block_kernel_only::<f32>();
    let mut variants: Vec<(String, ConvPolicy, (u32, u32))> = vec![(
        format!("block kernel R={} 32x8", block_tuning.rows_per_thread),
        block_tuning,
        (32, 8),
    )];
    variants.push((
        "table default 32x8".to_owned(),
        table_policy::<f32>(),
        (32, 8),
    ));
    if table_policy::<f32>().strip.is_some() {
        variants.push((
            "table strips (strip / strip_wide) 32x8".to_owned(),
            ConvPolicy {
                register_tile: None,
                register_tile_wide: None,
                ..table_policy::<f32>()
            },
            (32, 8),
        ));
    }
    for t in REGISTER_TILE_CANDIDATES {
        variants.push((
            format!(
                "register tile R={} G={} warps={} min_blocks={}{}",
                t.rows_per_thread,
                t.column_groups,
                t.warps,
                t.min_blocks,
                if t.aligned_stores { " aligned" } else { "" }
            ),
            ConvPolicy {
                register_tile: Some(t),
                ..block_tuning
            },
            (32, 8),
        ));
    }
    for t in STRIP_CANDIDATES {
        let tuning = ConvPolicy {
            strip: Some(t),
            ..block_tuning
        };
        variants.push((format!("{} 32x8", strip_name(&t)), tuning, (32, 8)));
    }
    // Other block shapes (warps per block) for the first candidate.
    for block in [(8, 8), (32, 32)] {
        let t = STRIP_CANDIDATES[0];
        let tuning = ConvPolicy {
            strip: Some(t),
            ..block_tuning
        };
        variants.push((
            format!("{} {}x{}", strip_name(&t), block.0, block.1),
            tuning,
            block,
        ));
    }
    // The first vector-store candidate at 4, 16 and 32 warps per block
    // (fixed by the tuning's `warps`: the conv block shapes are 8×8,
    // 16×16, 32×8 and 32×32 only).
    let vector = *STRIP_CANDIDATES
        .iter()
        .find(|t| t.stores == StripStores::Vector)
        .expect("a vector-store candidate");
    for warps in [4, 16, 32] {
        let t = StripPolicy { warps, ..vector };
        let tuning = ConvPolicy {
            strip: Some(t),
            ..block_tuning
        };
        variants.push((strip_name(&t), tuning, (32, 8)));
    }

    if let Ok(wanted) = std::env::var("CONV_SWEEP_MATCH") {
        variants.retain(|(name, _, _)| wanted.split('|').any(|w| name.contains(w)));
    }
    let check_only = std::env::var("CONV_SWEEP_CHECK_ONLY").is_ok_and(|v| v == "1");
    let sides: Vec<usize> = std::env::var("CONV_SWEEP_K")
        .map(|v| {
            v.split(',')
                .map(|k| k.trim().parse().expect("CONV_SWEEP_K: filter sides, 3,5,7"))
                .collect()
        })
        .unwrap_or_else(|_| vec![3, 5, 7]);
    let strips = variants
        .iter()
        .flat_map(|(_, tuning, _)| tuning.strip.iter().chain(tuning.strip_wide.iter()));
    let block_module = conv_module_with::<f32>(&block_tuning);
    prewarm(&gpu, &conv_and_strip_modules::<f32>(block_module, strips));

    let (h, w) = (SIDE, SIDE);
    let (seed, image, image_d) = fresh_image(&gpu, 0x5eed_c0de_u64);
    for k in sides {
        let filter = random_vec::<f32>(k * k, seed ^ k as u64, -1.0, 1.0);
        let filter_d = Matrix::from_host(&gpu, k, k, &filter).expect("upload");
        let (rows, cols) = output_shape(h, w, k, Border::Valid).expect("valid");
        let headline_bytes = 4.0 * (h * w) as f64 + 4.0 * (rows * cols) as f64;
        let started = std::time::Instant::now();
        let want = cpu_exact(&image, h, w, &filter, k);
        println!(
            "\nf32 {h}x{w} Valid K={k}: headline bytes {headline_bytes:.0} (CPU reference {:.1} s)",
            started.elapsed().as_secs_f64()
        );
        let mut out = Matrix::<f32>::poisoned(&gpu, rows, cols).expect("alloc");
        for (name, tuning, block) in &variants {
            let options = ConvOptions {
                border: Border::Valid,
                algorithm: ConvAlgorithm::TiledHalo,
                block: *block,
                ..ConvOptions::default()
            };
            // Check (this run also compiles the module).
            let compile = std::time::Instant::now();
            out.view_mut()
                .data_mut()
                .fill(&gpu, f32::poison())
                .expect("poison");
            conv2d_tuned_with(
                &gpu,
                image_d.view(),
                filter_d.view(),
                out.view_mut(),
                &options,
                tuning,
            )
            .unwrap_or_else(|e| panic!("K={k} {name}: {e}"));
            let got = out.to_host(&gpu).expect("download");
            let first_ms = compile.elapsed().as_secs_f64() * 1e3;
            assert_bit_equal(&got, &want, cols, &format!("K={k} {name}"), "the CPU");
            if check_only {
                println!("K={k} {name:<44} exact ✓ (not timed)");
                continue;
            }
            let timing = time_into(&gpu, &mut out, |view| {
                conv2d_tuned_with(
                    &gpu,
                    image_d.view(),
                    filter_d.view(),
                    view,
                    &options,
                    tuning,
                )
            })
            .unwrap_or_else(|e| panic!("K={k} {name}: {e}"));
            let gbps = headline_bytes / (timing.median_ms * 1e-3) / 1e9;
            println!(
                "K={k} {name:<44} {:>8.4} ms (min {:.4}) {gbps:>7.1} GB/s {:>6.3} of copy ceiling  exact ✓ (first call {first_ms:.0} ms)",
                timing.median_ms,
                timing.min_ms,
                ceiling.fraction(gbps)
            );
        }
    }
}

/// The default `TiledHalo` through the public [`linalg::conv2d`] at every
/// border (zero padding) for K = 3, 5 and 7, and at `Same` K = 3 with every
/// padding mode, on the same 8192² `f32` image: each output checked bit for
/// bit against the block kernel (the strip kernel adds in its order), then
/// timed as the sweep times (median of 25 after 3 warm-ups, output poisoned
/// before each run), and printed with its time relative to `Valid` at the
/// same K (issue 23 asks for every border mode within 10 %). Bytes: the
/// image plus the outputs, each read or written once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn conv_borders_against_valid_8192() {
    use linalg::Padding;
    let (gpu, ceiling) = gpu_and_ceiling();
    let block_only = block_kernel_only::<f32>();
    let (h, w) = (SIDE, SIDE);
    let (seed, _, image_d) = fresh_image(&gpu, 0xb0_4de5_u64);
    let mut cases: Vec<(usize, Border, Padding)> = Vec::new();
    for k in [3usize, 5, 7] {
        for border in [Border::Valid, Border::Same, Border::Full] {
            cases.push((k, border, Padding::Zero));
        }
    }
    for padding in [Padding::Clamp, Padding::Reflect, Padding::Wrap] {
        cases.push((3, Border::Same, padding));
    }
    let mut valid_ms = [0.0f64; 8];
    for (k, border, padding) in cases {
        let filter = random_vec::<f32>(k * k, seed ^ k as u64, -1.0, 1.0);
        let filter_d = Matrix::from_host(&gpu, k, k, &filter).expect("upload");
        let options = ConvOptions {
            border,
            padding,
            ..ConvOptions::default()
        };
        let (rows, cols) = output_shape(h, w, k, border).expect("shape");
        let bytes = 4.0 * (h * w) as f64 + 4.0 * (rows * cols) as f64;
        let name = format!("K={k} {border:?} {padding:?}");
        let mut want = Matrix::<f32>::poisoned(&gpu, rows, cols).expect("alloc");
        conv2d_tuned_with(
            &gpu,
            image_d.view(),
            filter_d.view(),
            want.view_mut(),
            &options,
            &block_only,
        )
        .unwrap_or_else(|e| panic!("{name}, block kernel: {e}"));
        let want = want.to_host(&gpu).expect("download");
        let mut out = Matrix::<f32>::poisoned(&gpu, rows, cols).expect("alloc");
        linalg::conv2d(
            &gpu,
            image_d.view(),
            filter_d.view(),
            out.view_mut(),
            &options,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = out.to_host(&gpu).expect("download");
        assert_bit_equal(&got, &want, cols, &name, "the block kernel");
        let timing = time_into(&gpu, &mut out, |view| {
            linalg::conv2d(&gpu, image_d.view(), filter_d.view(), view, &options)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        if border == Border::Valid {
            valid_ms[k] = timing.median_ms;
        }
        let gbps = bytes / (timing.median_ms * 1e-3) / 1e9;
        println!(
            "{name:<22} {:>8.4} ms {gbps:>7.1} GB/s {:>6.3} of copy ceiling {:>+6.1} % against Valid  exact ✓",
            timing.median_ms,
            ceiling.fraction(gbps),
            100.0 * (timing.median_ms / valid_ms[k] - 1.0)
        );
    }
}
