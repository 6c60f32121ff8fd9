//! GPU tests of `TiledHalo`'s strip kernel (`conv::strip`): for strip
//! tunings of every kind (elements per lane 1, 2, 4; 1 to 4 rows in flight;
//! staged and direct stores; strips of 1, 2, 3, 5 rows and one-wave strips;
//! a register cap), every K from 1 to 7, every border, padding and flip,
//! several block shapes, images narrower and wider than a strip, aligned and
//! unaligned rows and views, the results equal the block kernel's bit for bit
//! (same products, same order) and the CPU reference within the FMA bound;
//! nothing outside the output view is written.
//!
//! They need a CUDA GPU: `cargo test -p parprims-linalg --test conv_strip --
//! --include-ignored`.

use gpu_core::kernel::{compile_cubin, nvrtc_version, DiskCache};
use gpu_core::{DeviceBuffer, Gpu};
use linalg::conv::{conv2d_tuned_with, output_shape};
use linalg::policy::{
    conv_module, strip_module, ConvPolicy, StripPolicy, StripStores, STRIP_CANDIDATES, STRIP_MAX_K,
};
use linalg::{
    conv_cpu, Border, ConvAlgorithm, ConvElement, ConvOptions, MatrixView, MatrixViewMut, Padding,
};

/// The measured table's `TiledHalo` policy for `T` (the default on every
/// architecture today).
fn table_policy<T: ConvElement>() -> ConvPolicy {
    ConvPolicy::default_for::<T>((9, 0))
}
use parprims_testkit::rng::random_vec;

fn run_seed() -> u64 {
    let seed = std::env::var("CONV_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x5eed)
                | 1
        });
    eprintln!("conv_strip tests: seed {seed} (set CONV_TEST_SEED to replay)");
    seed
}

fn inputs<T: ConvElement>(len: usize, seed: u64) -> Vec<T> {
    if T::IS_FLOAT {
        random_vec::<T>(len, seed, -1.0, 1.0)
    } else {
        random_vec::<T>(len, seed, -2.0e9, 2.0e9) // products wrap: exact anyway
    }
}

use StripStores::{Scalar, Staged, Vector};

const fn strip(vec: u32, prefetch: u32, rows: u32, stores: StripStores, regs: u32) -> StripPolicy {
    StripPolicy {
        elems_per_lane: vec,
        prefetch_rows: prefetch,
        strip_rows: rows,
        stores,
        max_registers: regs,
        warps: 0,
    }
}

/// `got` against the CPU reference: integers exactly, floats within
/// `2·K²·ε·Σ|x·w|` per output.
#[allow(clippy::too_many_arguments)]
fn check_against_cpu<T: ConvElement>(
    got: &[T],
    image: &[T],
    h: usize,
    w: usize,
    filter: &[T],
    k: usize,
    options: &ConvOptions,
    context: &str,
) {
    let want = conv_cpu::conv2d(image, h, w, filter, k, options).expect("valid reference case");
    assert_eq!(got.len(), want.len(), "{context}: output length");
    if !T::IS_FLOAT {
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{context}: output {i} is {:?}, expected {:?}",
                got[i], want[i]
            );
        }
        return;
    }
    let abs_image: Vec<f64> = image.iter().map(|x| x.to_f64().abs()).collect();
    let abs_filter: Vec<f64> = filter.iter().map(|x| x.to_f64().abs()).collect();
    let magnitude =
        conv_cpu::conv2d(&abs_image, h, w, &abs_filter, k, options).expect("valid reference case");
    let eps = if T::BYTES == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    for i in 0..got.len() {
        let tolerance = 2.0 * (k * k) as f64 * eps * magnitude[i] + f64::MIN_POSITIVE;
        let error = (got[i].to_f64() - want[i].to_f64()).abs();
        assert!(
            error <= tolerance,
            "{context}: output {i} is {}, expected {} (error {error:e} > {tolerance:e})",
            got[i],
            want[i]
        );
    }
}

/// Runs one case through the strip kernel, with the image at element
/// `offset` of a larger buffer (unaligned rows when `offset` is not a
/// multiple of the vector width) and the output inside a poisoned buffer;
/// returns the output.
#[allow(clippy::too_many_arguments)]
fn run<T: ConvElement>(
    gpu: &Gpu,
    image: &[T],
    h: usize,
    w: usize,
    filter: &[T],
    k: usize,
    offset: usize,
    options: &ConvOptions,
    tuning: &ConvPolicy,
    context: &str,
) -> Vec<T> {
    let (rows, cols) = output_shape(h, w, k, options.border).expect("a valid case");
    let mut image_host = vec![T::poison(); h * w + offset + 3];
    image_host[offset..offset + h * w].copy_from_slice(image);
    let image_buffer = DeviceBuffer::from_host(gpu, &image_host).unwrap();
    let filter_buffer = DeviceBuffer::from_host(gpu, filter).unwrap();
    let margin = 33;
    let mut out_buffer = DeviceBuffer::<T>::poisoned(gpu, rows * cols + 2 * margin).unwrap();
    {
        let image_view =
            MatrixView::new(h, w, image_buffer.slice(offset..offset + h * w).unwrap()).unwrap();
        let filter_view = MatrixView::new(k, k, filter_buffer.view()).unwrap();
        let out_view = MatrixViewMut::new(
            rows,
            cols,
            out_buffer.slice_mut(margin..margin + rows * cols).unwrap(),
        )
        .unwrap();
        conv2d_tuned_with(gpu, image_view, filter_view, out_view, options, tuning)
            .unwrap_or_else(|e| panic!("{context}: {e}"));
    }
    let all = out_buffer.to_host(gpu).unwrap();
    let poison = T::poison();
    let same = |a: T, b: T| a.to_f64().to_bits() == b.to_f64().to_bits();
    assert!(
        all[..margin].iter().all(|&x| same(x, poison)),
        "{context}: wrote before the output"
    );
    assert!(
        all[margin + rows * cols..].iter().all(|&x| same(x, poison)),
        "{context}: wrote after the output"
    );
    all[margin..margin + rows * cols].to_vec()
}

/// Edge-biased `(h, w, k)`: a pixel, images narrower than one strip, one
/// strip exactly (124 outputs for K = 3..5 with 4 per lane), several strips,
/// W a multiple of 4 (vector loads) or not, fewer rows than a ring of K.
const SHAPES: [(usize, usize, usize); 12] = [
    (1, 1, 1),
    (3, 5, 3),
    (37, 29, 3),
    (16, 128, 3),
    (70, 130, 5),
    (64, 252, 5),
    (33, 257, 4),
    (66, 260, 7),
    (9, 516, 6),
    (130, 4, 2),
    (20, 125, 7),
    (5, 300, 1),
];

/// Compiles the strip modules of `strips` (and the block kernel's module)
/// for this device on every CPU thread at once into the disk cache, so the
/// test's first calls load them instead of compiling one after another.
/// Best effort: a module that fails here is compiled (and its error
/// reported) by the call that needs it.
fn prewarm<T: ConvElement>(gpu: &Gpu, strips: &[StripPolicy]) {
    let Ok(version) = nvrtc_version() else {
        return;
    };
    let mut modules = vec![conv_module::<T>()];
    for t in strips {
        let module = strip_module::<T>(t);
        if !modules.iter().any(|m| m.name() == module.name()) {
            modules.push(module);
        }
    }
    let arch = gpu.info().arch();
    let cache = DiskCache::from_env();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(modules.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(module) = modules.get(i) else {
                    break;
                };
                let key = module.cache_key(&arch, version);
                if cache.load(key).is_none() {
                    if let Ok(cubin) = compile_cubin(module, &arch) {
                        cache.store(key, &cubin);
                    }
                }
            });
        }
    });
}

fn strip_against_block_and_cpu<T: ConvElement>(
    seed: u64,
    strips: &[StripPolicy],
    offsets: &[usize],
) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    prewarm::<T>(&gpu, strips);
    let block_tuning = ConvPolicy {
        strip: None,
        strip_wide: None,
        ..table_policy::<T>()
    };
    let mut case = 0usize;
    for &strip_tuning in strips {
        let tuning = ConvPolicy {
            strip: Some(strip_tuning),
            ..block_tuning
        };
        for (shape_index, &(h, w, k)) in SHAPES.iter().enumerate() {
            for border in Border::ALL {
                if border == Border::Valid && (k > h || k > w) {
                    continue;
                }
                case += 1;
                let block = [(32, 8), (8, 8), (32, 32), (16, 16)][case % 4];
                let options = ConvOptions {
                    border,
                    padding: Padding::ALL[case % 4],
                    flip: case % 3 == 1,
                    algorithm: ConvAlgorithm::TiledHalo,
                    block,
                    policy: None,
                };
                let offset = offsets[case % offsets.len()];
                let context = format!(
                    "{} {h}×{w} K={k} {border:?} {:?} flip={} block={block:?} offset={offset} {strip_tuning:?}",
                    T::SUFFIX,
                    options.padding,
                    options.flip
                );
                let image = inputs::<T>(h * w, seed ^ ((shape_index as u64) << 8));
                let filter = inputs::<T>(k * k, seed ^ 0x77 ^ k as u64);
                let got = run(
                    &gpu, &image, h, w, &filter, k, offset, &options, &tuning, &context,
                );
                let block_result = run(
                    &gpu,
                    &image,
                    h,
                    w,
                    &filter,
                    k,
                    offset,
                    &options,
                    &block_tuning,
                    &context,
                );
                if let Some(i) = (0..got.len())
                    .find(|&i| got[i].to_f64().to_bits() != block_result[i].to_f64().to_bits())
                {
                    panic!(
                        "{context}: output {i} is {:?}, the block kernel gives {:?}",
                        got[i], block_result[i]
                    );
                }
                check_against_cpu(&got, &image, h, w, &filter, k, &options, &context);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strip_candidates_f32() {
    let mut strips: Vec<StripPolicy> = STRIP_CANDIDATES.to_vec();
    // Strips of 1, 2, 3 and 5 rows: the accumulator ring starts and stops
    // at every phase.
    for rows in [1, 2, 3, 5] {
        strips.push(strip(4, 2, rows, Staged, 0));
    }
    strips.push(strip(4, 4, 3, Scalar, 0));
    strips.push(strip(2, 1, 2, Scalar, 0));
    // Vector stores with short strips and 8-byte chunks.
    strips.push(strip(4, 2, 3, Vector, 0));
    strips.push(strip(2, 2, 5, Vector, 0));
    // The table's strips (fixed warps per block).
    let table = table_policy::<f32>();
    strips.extend(table.strip.iter().chain(table.strip_wide.iter()));
    // Offsets 0 (aligned), 1 and 2 elements (rows not 16-byte aligned: the
    // edge walk everywhere).
    strip_against_block_and_cpu::<f32>(run_seed(), &strips, &[0, 0, 1, 2]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strip_f64_and_i32() {
    let seed = run_seed();
    strip_against_block_and_cpu::<f64>(
        seed,
        &[
            strip(2, 2, 0, Staged, 0),
            strip(1, 3, 5, Scalar, 0),
            strip(2, 1, 1, Staged, 0),
            strip(2, 2, 3, Vector, 0),
            strip(1, 2, 0, Vector, 0),
        ],
        &[0, 1],
    );
    strip_against_block_and_cpu::<i32>(
        seed,
        &[
            strip(4, 2, 3, Staged, 0),
            strip(2, 4, 0, Scalar, 0),
            strip(1, 1, 2, Staged, 48),
            strip(4, 2, 0, Vector, 0),
            strip(2, 1, 4, Vector, 0),
        ],
        &[0, 3],
    );
}

/// Every K the strip kernel handles, on an image of several strips and
/// many rows, every border: equal to the block kernel bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn strip_every_k_on_a_larger_image() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = run_seed();
    let strips = [
        strip(4, 2, 0, Staged, 0),
        strip(4, 3, 7, Scalar, 0),
        strip(4, 2, 0, Vector, 0),
    ];
    prewarm::<f32>(&gpu, &strips);
    let (h, w) = (517, 1032);
    let image = inputs::<f32>(h * w, seed);
    let block_tuning = ConvPolicy {
        strip: None,
        strip_wide: None,
        ..table_policy::<f32>()
    };
    for k in 1..=STRIP_MAX_K {
        let filter = inputs::<f32>(k * k, seed ^ k as u64);
        for (i, border) in Border::ALL.into_iter().enumerate() {
            let options = ConvOptions {
                border,
                padding: Padding::ALL[(k + i) % 4],
                flip: k % 2 == 0,
                ..ConvOptions::default()
            };
            for strip_tuning in strips {
                let tuning = ConvPolicy {
                    strip: Some(strip_tuning),
                    ..block_tuning
                };
                let context = format!("{h}×{w} K={k} {border:?} {strip_tuning:?}");
                let got = run(
                    &gpu, &image, h, w, &filter, k, 0, &options, &tuning, &context,
                );
                let want = run(
                    &gpu,
                    &image,
                    h,
                    w,
                    &filter,
                    k,
                    0,
                    &options,
                    &block_tuning,
                    &context,
                );
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{context}: differs from the block kernel"
                );
                if k == 3 || k == 6 {
                    check_against_cpu(&got, &image, h, w, &filter, k, &options, &context);
                }
            }
        }
    }
}
