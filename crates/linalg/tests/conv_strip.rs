//! GPU tests of `TiledHalo`'s strip kernel (`conv::strip`): for strip
//! tunings of every kind (elements per lane 1, 2, 4; 1 to 4 rows in flight;
//! staged and direct stores; strips of 1, 2, 3, 5 rows and one-wave strips;
//! pieces claimed from a counter;
//! a register cap), every K from 1 to 7, every border, padding and flip,
//! several block shapes, images narrower and wider than a strip, aligned and
//! unaligned rows and views, the results equal the block kernel's bit for bit
//! (same products, same order) and the CPU reference within the FMA bound;
//! nothing outside the output view is written.
//!
//! They need a CUDA GPU: `cargo test -p parprims-linalg --test conv_strip --
//! --include-ignored`.

mod support;

use gpu_core::Gpu;
use linalg::policy::{
    conv_module, ConvPolicy, StripPolicy, StripSchedule, StripStores, STRIP_CANDIDATES, STRIP_MAX_K,
};
use linalg::{Border, ConvElement, ConvOptions, Padding};
use support::{block_kernel_only, conv_and_strip_modules, table_policy, ConvCase};

fn run_seed() -> u64 {
    support::run_seed("conv_strip")
}

fn inputs<T: ConvElement>(len: usize, seed: u64) -> Vec<T> {
    support::random_input(len, seed, (-2.0e9, 2.0e9)) // products wrap: exact anyway
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
        schedule: StripSchedule::Fixed,
        trim_halo: false,
    }
}

/// `strip(…)` with warps claiming pieces of `rows` output rows.
const fn claimed(vec: u32, prefetch: u32, rows: u32, stores: StripStores) -> StripPolicy {
    StripPolicy {
        schedule: StripSchedule::Claimed,
        ..strip(vec, prefetch, rows, stores, 0)
    }
}

/// `policy` with the halo rows' products trimmed (`trim_halo`).
const fn trimmed(policy: StripPolicy) -> StripPolicy {
    StripPolicy {
        trim_halo: true,
        ..policy
    }
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

/// Prewarms the disk cache with the strip modules of `strips` and the
/// block kernel's module (`support::prewarm`).
fn prewarm<T: ConvElement>(gpu: &Gpu, strips: &[StripPolicy]) {
    support::prewarm(
        gpu,
        &conv_and_strip_modules::<T>(conv_module::<T>(), strips),
    );
}

fn strip_against_block_and_cpu<T: ConvElement>(
    seed: u64,
    strips: &[StripPolicy],
    offsets: &[usize],
) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    prewarm::<T>(&gpu, strips);
    let block_tuning = block_kernel_only::<T>();
    support::kernel_policies_against_block_and_cpu::<T, _>(
        &gpu,
        seed,
        strips,
        |strip| ConvPolicy {
            strip: Some(strip),
            ..block_tuning
        },
        &block_tuning,
        &SHAPES,
        offsets,
    );
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
    // Claimed pieces of 1, 3, 7 and 32 rows (more pieces than warps, so
    // warps claim several).
    strips.push(claimed(4, 2, 1, Vector));
    strips.push(claimed(4, 2, 3, Staged));
    strips.push(claimed(4, 1, 7, Vector));
    strips.push(claimed(4, 2, 32, Scalar));
    // Trimmed halo rows on pieces of 1 to 3 rows (the first and last K − 1
    // rows overlap), every way of storing.
    strips.push(trimmed(claimed(4, 1, 1, Vector)));
    strips.push(trimmed(strip(4, 2, 2, Scalar, 0)));
    strips.push(trimmed(claimed(2, 2, 3, Staged)));
    strips.push(trimmed(strip(4, 3, 2, Scalar, 0)));

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
    let f64_strips = [
        strip(2, 2, 0, Staged, 0),
        strip(1, 3, 5, Scalar, 0),
        strip(2, 1, 1, Staged, 0),
        strip(2, 2, 3, Vector, 0),
        strip(1, 2, 0, Vector, 0),
        claimed(2, 2, 5, Vector),
        trimmed(claimed(2, 1, 3, Vector)),
        trimmed(strip(1, 2, 0, Vector, 0)),
    ];
    strip_against_block_and_cpu::<f64>(seed, &f64_strips, &[0, 1]);
    let i32_strips = [
        strip(4, 2, 3, Staged, 0),
        strip(2, 4, 0, Scalar, 0),
        strip(1, 1, 2, Staged, 48),
        strip(4, 2, 0, Vector, 0),
        strip(2, 1, 4, Vector, 0),
        claimed(4, 1, 2, Staged),
        trimmed(strip(4, 2, 3, Staged, 0)),
    ];
    strip_against_block_and_cpu::<i32>(seed, &i32_strips, &[0, 3]);
}

/// Claimed pieces where they are claimed (a small output runs one fixed
/// piece per warp instead): a tall image holds well over two pieces of 1
/// to 3 rows for every warp an H100 holds (4100 rows × 9 strips), every K,
/// every border, pieces ending at every phase of the accumulator ring,
/// equal to the block kernel bit for bit; the table's own policies too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn claimed_pieces_on_a_tall_image() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = run_seed();
    let table = table_policy::<f32>();
    let mut strips = vec![
        claimed(4, 1, 1, Vector),
        claimed(4, 2, 2, Staged),
        claimed(2, 1, 3, Scalar),
        trimmed(claimed(4, 1, 2, Vector)),
    ];
    strips.extend(table.strip.iter().chain(table.strip_wide.iter()));
    prewarm::<f32>(&gpu, &strips);
    let (h, w) = (4100, 1032);
    let image = inputs::<f32>(h * w, seed);
    let block_tuning = block_kernel_only::<f32>();
    for k in 1..=STRIP_MAX_K {
        let filter = inputs::<f32>(k * k, seed ^ k as u64);
        let border = Border::ALL[k % Border::ALL.len()];
        let options = ConvOptions {
            border,
            padding: Padding::ALL[k % 4],
            flip: k % 2 == 1,
            ..ConvOptions::default()
        };
        for strip_tuning in &strips {
            let tuning = ConvPolicy {
                strip: Some(*strip_tuning),
                strip_wide: None,
                register_tile: None,
                register_tile_wide: None,
                ..block_tuning
            };
            let context = format!("{h}×{w} K={k} {border:?} {strip_tuning:?}");
            let case = ConvCase::aligned(&image, (h, w), &filter, k, &options);
            case.run_against_block(&gpu, &tuning, &block_tuning, &context);
        }
    }
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
        claimed(4, 2, 16, Vector),
    ];
    prewarm::<f32>(&gpu, &strips);
    let (h, w) = (517, 1032);
    let image = inputs::<f32>(h * w, seed);
    let block_tuning = block_kernel_only::<f32>();
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
                let case = ConvCase::aligned(&image, (h, w), &filter, k, &options);
                let got = case.run_against_block(&gpu, &tuning, &block_tuning, &context);
                if k == 3 || k == 6 {
                    case.check_against_cpu(&got, &context);
                }
            }
        }
    }
}
