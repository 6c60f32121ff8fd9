//! GPU tests of `TiledHalo`'s register-tile kernel (`conv::register_tile`):
//! for register tiles of every shape (1 to 16 rows per thread, one or two
//! groups of columns, 1 to 8 warps, with and without a blocks-per-SM bound),
//! every K from 1 to 7, every border, padding and flip, images smaller than
//! one tile and several tiles wide and tall, aligned and unaligned rows and
//! views, the results equal the block kernel's bit for bit (same products,
//! same order) and the CPU reference within the FMA bound; nothing outside
//! the output view is written. The default policy (the public `conv2d`
//! with no policy) runs the register tile for `f32` and `i32` up to K = 7.
//!
//! They need a CUDA GPU: `cargo test -p parprims-linalg --test
//! conv_register_tile -- --include-ignored`.

mod support;

use gpu_core::Gpu;
use linalg::policy::{
    register_tile_module, ConvPolicy, RegisterTilePolicy, REGISTER_TILE_CANDIDATES,
    REGISTER_TILE_MAX_K,
};
use linalg::{Border, ConvElement, ConvOptions, Matrix, Padding};
use support::{block_kernel_only, table_policy, ConvCase};

fn run_seed() -> u64 {
    support::run_seed("conv_register_tile")
}

fn inputs<T: ConvElement>(len: usize, seed: u64) -> Vec<T> {
    support::random_input(len, seed, (-2.0e9, 2.0e9)) // products wrap: exact anyway
}

const fn tile(rows: u32, groups: u32, warps: u32, min_blocks: u32) -> RegisterTilePolicy {
    RegisterTilePolicy {
        rows_per_thread: rows,
        column_groups: groups,
        warps,
        min_blocks,
        aligned_stores: true,
    }
}

/// Edge-biased `(h, w, k)`: a pixel, images narrower and shorter than one
/// tile, one tile's width exactly (128 and 256 outputs), several tiles
/// across and down (interior tiles, whose loads take the untested vector
/// path), W a multiple of 4 (vector loads) or not, every K.
const SHAPES: [(usize, usize, usize); 14] = [
    (1, 1, 1),
    (3, 5, 3),
    (37, 29, 3),
    (16, 130, 3),
    (70, 258, 3),
    (33, 257, 4),
    (100, 300, 5),
    (66, 260, 7),
    (9, 516, 6),
    (130, 4, 2),
    (20, 125, 7),
    (5, 300, 1),
    (90, 1030, 5),
    (75, 524, 7),
];

fn register_tile_against_block_and_cpu<T: ConvElement>(
    seed: u64,
    tiles: &[RegisterTilePolicy],
    offsets: &[usize],
) {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let modules: Vec<_> = tiles.iter().map(register_tile_module::<T>).collect();
    support::prewarm(&gpu, &modules);
    let block_tuning = block_kernel_only::<T>();
    support::kernel_policies_against_block_and_cpu::<T, _>(
        &gpu,
        seed,
        tiles,
        |tile| ConvPolicy {
            register_tile: Some(tile),
            ..block_tuning
        },
        &block_tuning,
        &SHAPES,
        offsets,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn register_tile_candidates_f32() {
    let mut tiles: Vec<RegisterTilePolicy> = REGISTER_TILE_CANDIDATES.to_vec();
    // One row, one group, one warp; odd row counts; the most accumulators.
    tiles.push(tile(1, 1, 1, 0));
    tiles.push(tile(3, 2, 2, 0));
    tiles.push(tile(16, 1, 2, 0));
    tiles.push(tile(5, 1, 3, 6));
    // Offsets 0 (aligned), 1 and 2 elements (rows not 16-byte aligned: every
    // sample through the padded fetch).
    register_tile_against_block_and_cpu::<f32>(run_seed(), &tiles, &[0, 0, 1, 2]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn register_tile_i32() {
    let table = table_policy::<i32>();
    let mut tiles: Vec<RegisterTilePolicy> = table
        .register_tile
        .iter()
        .chain(table.register_tile_wide.iter())
        .copied()
        .collect();
    tiles.push(tile(2, 2, 4, 0));
    tiles.push(tile(7, 1, 5, 0));
    register_tile_against_block_and_cpu::<i32>(run_seed(), &tiles, &[0, 3]);
}

/// The public `conv2d` with no policy runs the device's default, which for
/// `f32` and `i32` is the register tile at every K up to
/// [`REGISTER_TILE_MAX_K`]: on an image of several tiles each way, at
/// every border and padding, its output equals the block kernel's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_default_runs_the_register_tile() {
    fn check<T: ConvElement>(gpu: &Gpu, seed: u64) {
        let table = table_policy::<T>();
        let block_tuning = block_kernel_only::<T>();
        let (h, w) = (181, 777);
        let image = inputs::<T>(h * w, seed);
        for k in 1..=REGISTER_TILE_MAX_K {
            assert!(table.register_tile_for(k).is_some(), "K={k}");
            let filter = inputs::<T>(k * k, seed ^ k as u64);
            for (i, border) in Border::ALL.into_iter().enumerate() {
                let options = ConvOptions {
                    border,
                    padding: Padding::ALL[(k + i) % 4],
                    flip: k % 2 == 0,
                    ..ConvOptions::default()
                };
                let context = format!("{} default K={k} {border:?}", T::SUFFIX);
                let case = ConvCase::aligned(&image, (h, w), &filter, k, &options);
                // The table policy explicitly, then the public call without one.
                let explicit = case.run_against_block(gpu, &table, &block_tuning, &context);
                let img = Matrix::from_host(gpu, h, w, &image).unwrap();
                let f = Matrix::from_host(gpu, k, k, &filter).unwrap();
                let out = linalg::conv2d_new(gpu, img.view(), f.view(), &options).unwrap();
                let implicit = out.to_host(gpu).unwrap();
                assert!(support::same_bits(&explicit, &implicit), "{context}");
                case.check_against_cpu(&explicit, &context);
            }
        }
    }
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = run_seed();
    check::<f32>(&gpu, seed);
    check::<i32>(&gpu, seed ^ 1);
}
