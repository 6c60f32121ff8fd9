//! GPU tests of `conv2d` against the CPU reference (`conv_cpu::conv2d`):
//! every algorithm × element type × border × padding, flip, every K from 1
//! to 31, every block size, edge shapes, views of caller buffers, bad input
//! (typed error, output untouched), ConstantFilter from several streams, and
//! an image of more than 2^31 elements.
//!
//! They need a CUDA GPU: `cargo test -p parprims-linalg --test conv --
//! --include-ignored`.

mod support;

use gpu_core::{DeviceBuffer, DeviceType, Error, Gpu};
use linalg::conv::{conv2d_tuned_with, output_shape, CONV_BLOCKS, CONV_MAX_K};
use linalg::policy::ConvPolicy;
use linalg::{
    conv2d, conv2d_new, conv_cpu, Border, ConvAlgorithm, ConvElement, ConvOptions, Matrix,
    MatrixView, MatrixViewMut, Padding,
};
use parprims_testkit::rng::random_vec;
use proptest::prelude::*;
use support::{
    all_poison, check_conv_against_cpu as check_against_cpu, gpu, gpu_tests, table_policy,
};

/// A fresh seed per run (printed, so a failure can be replayed with
/// `CONV_TEST_SEED`).
fn run_seed() -> u64 {
    support::run_seed("conv")
}

/// Test inputs: floats in [−1, 1), integers in [−100, 100) (sums stay far
/// from wrapping unless a test asks for it).
fn inputs<T: ConvElement>(len: usize, seed: u64) -> Vec<T> {
    support::random_input(len, seed, (-100.0, 100.0))
}

fn describe(h: usize, w: usize, k: usize, o: &ConvOptions, type_name: &str) -> String {
    format!(
        "{type_name} {h}×{w} K={k} {:?} {:?} {:?} flip={} block={:?}",
        o.algorithm, o.border, o.padding, o.flip, o.block
    )
}

/// One GPU run into a poisoned output, checked against the CPU: `conv2d`,
/// or `conv2d_tuned_with` with `tuning`, on random inputs from `seeds`
/// (image, filter).
fn check_conv<T: ConvElement>(
    gpu: &Gpu,
    (h, w, k): (usize, usize, usize),
    o: &ConvOptions,
    (image_seed, filter_seed): (u64, u64),
    tuning: Option<&ConvPolicy>,
    context: &str,
) {
    let image = inputs::<T>(h * w, image_seed);
    let filter = inputs::<T>(k * k, filter_seed);
    let (rows, cols) = output_shape(h, w, k, o.border).expect("a valid case");
    let image_d = Matrix::from_host(gpu, h, w, &image).expect("upload");
    let filter_d = Matrix::from_host(gpu, k, k, &filter).expect("upload");
    let mut out = Matrix::<T>::poisoned(gpu, rows, cols).expect("alloc");
    let (image_v, filter_v, out_v) = (image_d.view(), filter_d.view(), out.view_mut());
    match tuning {
        None => conv2d(gpu, image_v, filter_v, out_v, o),
        Some(tuning) => conv2d_tuned_with(gpu, image_v, filter_v, out_v, o, tuning),
    }
    .unwrap_or_else(|e| panic!("{context}: {e}"));
    let got = out
        .to_host(gpu)
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    check_against_cpu(&got, &image, h, w, &filter, k, o, context);
}

/// [`check_conv`] with `conv2d`, inputs from `seed`.
fn run_case<T: ConvElement>(gpu: &Gpu, h: usize, w: usize, k: usize, o: &ConvOptions, seed: u64) {
    let context = describe(h, w, k, o, T::SUFFIX);
    let seeds = (seed, seed ^ 0x9e37_79b9_7f4a_7c15);
    check_conv::<T>(gpu, (h, w, k), o, seeds, None, &context);
}

/// Edge-biased shapes `(h, w, k)`: 1 × 1, 1 × N, N × 1, TiledHalo tile ± 1
/// (a 32 × 8 block covers 32 columns × 64 rows for 4-byte types, 32 × 32 for
/// f64), primes, K = 1, K equal to the image side, even K, K = 31.
const SHAPES: [(usize, usize, usize); 14] = [
    (1, 1, 1),
    (1, 37, 1),
    (1, 37, 3),
    (41, 1, 2),
    (65, 33, 3),
    (63, 31, 5),
    (64, 32, 4),
    (33, 65, 6),
    (97, 101, 7),
    (13, 13, 13),
    (12, 12, 12),
    (5, 9, 31),
    (31, 31, 31),
    (70, 45, 8),
];

fn every_combination<T: ConvElement>(seed: u64) {
    let gpu = gpu();
    let mut case = 0u64;
    for algorithm in ConvAlgorithm::ALL {
        for border in Border::ALL {
            for padding in Padding::ALL {
                for &(h, w, k) in &SHAPES {
                    if border == Border::Valid && (k > h || k > w) {
                        continue;
                    }
                    case += 1;
                    let o = ConvOptions {
                        border,
                        padding,
                        flip: case.is_multiple_of(2),
                        algorithm,
                        block: CONV_BLOCKS[(case as usize / 2) % CONV_BLOCKS.len()],
                        policy: None,
                    };
                    run_case::<T>(gpu, h, w, k, &o, seed.wrapping_add(case));
                }
            }
        }
    }
}

gpu_tests! {
    every_algorithm_border_padding_f32 => every_combination::<f32>(run_seed());
    every_algorithm_border_padding_f64 => every_combination::<f64>(run_seed());
    every_algorithm_border_padding_i32 => every_combination::<i32>(run_seed());
}

/// Every K from 1 to 31 (the specialised kernels up to 7, the run-time-K one
/// above), every algorithm, both flips, on a shape that is not a multiple of
/// any tile; Same + Reflect and Full + Wrap reach far into the padding.
fn every_k<T: ConvElement>(seed: u64) {
    let gpu = gpu();
    for k in 1..=CONV_MAX_K {
        for algorithm in ConvAlgorithm::ALL {
            for (border, padding, flip) in [
                (Border::Same, Padding::Reflect, false),
                (Border::Full, Padding::Wrap, true),
                (Border::Valid, Padding::Zero, k % 2 == 0),
                (Border::Same, Padding::Clamp, true),
            ] {
                let o = ConvOptions {
                    border,
                    padding,
                    flip,
                    algorithm,
                    ..ConvOptions::default()
                };
                run_case::<T>(gpu, 67, 35, k, &o, seed ^ (k as u64 * 131));
            }
        }
    }
}

gpu_tests! {
    every_k_from_1_to_31_f32 => every_k::<f32>(run_seed());
    every_k_from_1_to_31_i32 => every_k::<i32>(run_seed());
    every_k_from_1_to_31_f64 => every_k::<f64>(run_seed());
}

/// Every block size with every algorithm, with shapes one past and one
/// short of the block's tile, small, even and large K.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_block_size() {
    let gpu = gpu();
    let seed = run_seed();
    for block in CONV_BLOCKS {
        for algorithm in ConvAlgorithm::ALL {
            for k in [1, 3, 4, 5, 9, 31] {
                // TiledHalo tiles: block.0 columns × block.1·R rows (R = 8 or 4).
                for (h, w) in [
                    (block.1 as usize * 8 + 1 + k, block.0 as usize - 1 + k),
                    (block.1 as usize * 4 - 1 + k, block.0 as usize * 2 + 1 + k),
                ] {
                    let o = ConvOptions {
                        border: if k % 3 == 0 {
                            Border::Full
                        } else {
                            Border::Valid
                        },
                        padding: Padding::Reflect,
                        flip: k % 2 == 1,
                        algorithm,
                        block,
                        policy: None,
                    };
                    run_case::<f32>(gpu, h, w, k, &o, seed ^ k as u64);
                    run_case::<f64>(gpu, h, w, k, &o, seed ^ (k as u64 + 1000));
                    run_case::<i32>(gpu, h, w, k, &o, seed ^ (k as u64 + 2000));
                }
            }
        }
    }
}

/// `conv2d_tuned_with`: other TiledHalo tunings (rows per thread, filter in
/// registers or not, load batch) give the same results, for every type.
fn other_tunings<T: ConvElement>(seed: u64, tunings: &[ConvPolicy]) {
    // Its own handle (own module store): these modules compile in parallel
    // with the default ones the other tests use.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    for &tuning in tunings {
        for block in [(8, 8), (32, 8), (16, 16)] {
            for (h, w, k) in [
                (1, 1, 1),
                (37, 29, 3),
                (70, 45, 5),
                (66, 33, 7),
                (40, 40, 12),
            ] {
                for border in Border::ALL {
                    if border == Border::Valid && (k > h || k > w) {
                        continue;
                    }
                    let o = ConvOptions {
                        border,
                        padding: Padding::Reflect,
                        flip: k % 2 == 1,
                        algorithm: ConvAlgorithm::TiledHalo,
                        block,
                        policy: None,
                    };
                    let context = format!("{tuning:?} {}", describe(h, w, k, &o, T::SUFFIX));
                    let seeds = (seed ^ k as u64, seed ^ 77);
                    check_conv::<T>(&gpu, (h, w, k), &o, seeds, Some(&tuning), &context);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn other_tiled_tunings_f32() {
    let base = table_policy::<f32>();
    let tunings = [
        // One output per thread, filter always in shared memory, one load
        // in flight.
        ConvPolicy {
            rows_per_thread: 1,
            reg_filter_max_k: 0,
            load_batch: 1,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
        },
        // The block kernel for every K (the table's f32 tuning uses the
        // strip kernel up to K = 7; tests/conv_strip.rs covers it).
        ConvPolicy {
            rows_per_thread: 16,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..base
        },
    ];
    other_tunings::<f32>(run_seed(), &tunings);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn other_tiled_tunings_f64_i32() {
    let seed = run_seed();
    // An odd R, the filter in registers up to K = 5 (f64's table says 3),
    // a larger load batch.
    let odd = ConvPolicy {
        rows_per_thread: 3,
        reg_filter_max_k: 5,
        load_batch: 16,
        strip: None,
        strip_wide: None,
        register_tile: None,
        register_tile_wide: None,
    };
    other_tunings::<f64>(seed, &[odd]);
    other_tunings::<i32>(seed, &[odd]);
}

/// i32 arithmetic wraps exactly as the CPU's `wrapping_add`/`wrapping_mul`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn integers_wrap_exactly() {
    let gpu = gpu();
    let seed = run_seed();
    let (h, w, k) = (70, 90, 5);
    let image = random_vec::<i32>(h * w, seed, -2.0e9, 2.0e9);
    let filter = random_vec::<i32>(k * k, seed ^ 7, -2.0e9, 2.0e9);
    let image_d = Matrix::from_host(gpu, h, w, &image).unwrap();
    let filter_d = Matrix::from_host(gpu, k, k, &filter).unwrap();
    for algorithm in ConvAlgorithm::ALL {
        let o = ConvOptions {
            border: Border::Same,
            padding: Padding::Wrap,
            algorithm,
            ..ConvOptions::default()
        };
        let out = conv2d_new(gpu, image_d.view(), filter_d.view(), &o).unwrap();
        let got = out.to_host(gpu).unwrap();
        check_against_cpu(
            &got,
            &image,
            h,
            w,
            &filter,
            k,
            &o,
            &format!("wrap {algorithm:?}"),
        );
    }
}

/// Inputs and output are views into larger caller buffers: only the
/// output's range is written.
#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_caller_buffers() {
    let gpu = gpu();
    let seed = run_seed();
    let (h, w, k) = (45, 38, 4);
    let image = inputs::<f32>(h * w, seed);
    let filter = inputs::<f32>(k * k, seed ^ 3);
    // Image at offset 17 of a longer buffer, filter at offset 5.
    let mut image_host = vec![f32::NAN; h * w + 40];
    image_host[17..17 + h * w].copy_from_slice(&image);
    let mut filter_host = vec![f32::NAN; k * k + 9];
    filter_host[5..5 + k * k].copy_from_slice(&filter);
    let image_buffer = DeviceBuffer::from_host(gpu, &image_host).unwrap();
    let filter_buffer = DeviceBuffer::from_host(gpu, &filter_host).unwrap();
    for algorithm in ConvAlgorithm::ALL {
        let o = ConvOptions {
            border: Border::Same,
            padding: Padding::Clamp,
            algorithm,
            ..ConvOptions::default()
        };
        let (rows, cols) = output_shape(h, w, k, o.border).unwrap();
        let mut out_buffer = DeviceBuffer::<f32>::poisoned(gpu, rows * cols + 100).unwrap();
        {
            let image_view =
                MatrixView::new(h, w, image_buffer.slice(17..17 + h * w).unwrap()).unwrap();
            let filter_view =
                MatrixView::new(k, k, filter_buffer.slice(5..5 + k * k).unwrap()).unwrap();
            let out_view = MatrixViewMut::new(
                rows,
                cols,
                out_buffer.slice_mut(60..60 + rows * cols).unwrap(),
            )
            .unwrap();
            conv2d(gpu, image_view, filter_view, out_view, &o).unwrap();
        }
        let all = out_buffer.to_host(gpu).unwrap();
        let poison = f32::poison().to_bits();
        assert!(
            all[..60].iter().all(|x| x.to_bits() == poison),
            "{algorithm:?} wrote before the view"
        );
        assert!(
            all[60 + rows * cols..]
                .iter()
                .all(|x| x.to_bits() == poison),
            "{algorithm:?} wrote after the view"
        );
        check_against_cpu(
            &all[60..60 + rows * cols],
            &image,
            h,
            w,
            &filter,
            k,
            &o,
            &format!("views {algorithm:?}"),
        );
    }
}

/// Bad input: a typed error, and the (poisoned) output is left untouched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    let gpu = gpu();
    let image = Matrix::from_host(gpu, 20, 20, &vec![1.0f32; 400]).unwrap();
    let f3 = Matrix::from_host(gpu, 3, 3, &[1.0f32; 9]).unwrap();
    let f32x32 = Matrix::from_host(gpu, 32, 32, &vec![1.0f32; 1024]).unwrap();
    let f3x4 = Matrix::from_host(gpu, 3, 4, &[1.0f32; 12]).unwrap();
    let big_filter = Matrix::from_host(gpu, 21, 21, &vec![1.0f32; 441]).unwrap();
    let mut out = Matrix::<f32>::poisoned(gpu, 18, 18).unwrap();
    let ok = ConvOptions::default();
    let cases: Vec<(&str, &Matrix<f32>, ConvOptions)> = vec![
        ("K = 32", &f32x32, ok),
        ("K > image for Valid", &big_filter, ok),
        ("non-square filter", &f3x4, ok),
        (
            "output shape wrong for Same",
            &f3,
            ConvOptions {
                border: Border::Same,
                ..ok
            },
        ),
        (
            "block 64 × 16",
            &f3,
            ConvOptions {
                block: (64, 16),
                ..ok
            },
        ),
        (
            "block 16 × 8",
            &f3,
            ConvOptions {
                block: (16, 8),
                ..ok
            },
        ),
    ];
    for (what, filter, options) in cases {
        for algorithm in ConvAlgorithm::ALL {
            let o = ConvOptions {
                algorithm,
                ..options
            };
            let err = conv2d(gpu, image.view(), filter.view(), out.view_mut(), &o).expect_err(what);
            assert!(
                matches!(err, Error::Shape(_) | Error::InvalidArgument { .. }),
                "{what}: unexpected error kind {err:?}"
            );
        }
    }
    // An output of the wrong shape for Valid.
    let mut wrong = Matrix::<f32>::poisoned(gpu, 18, 17).unwrap();
    assert!(matches!(
        conv2d(gpu, image.view(), f3.view(), wrong.view_mut(), &ok),
        Err(Error::Shape(_))
    ));
    gpu.synchronize().unwrap();
    assert!(all_poison(&out.to_host(gpu).unwrap()));
    assert!(all_poison(&wrong.to_host(gpu).unwrap()));
    // conv2d_new reports the same errors.
    assert!(conv2d_new(gpu, image.view(), big_filter.view(), &ok).is_err());
}

/// ConstantFilter from two streams on two threads, each with its own filter,
/// many times over: every result matches its own filter (the symbol copy is
/// never overwritten under a running kernel).
#[test]
#[ignore = "needs a CUDA GPU"]
fn constant_filter_from_concurrent_streams() {
    let gpu = gpu();
    let seed = run_seed();
    let (h, w, k) = (512, 768, 9);
    let image = inputs::<f32>(h * w, seed);
    let image_d = Matrix::from_host(gpu, h, w, &image).unwrap();
    let o = ConvOptions {
        algorithm: ConvAlgorithm::ConstantFilter,
        border: Border::Same,
        padding: Padding::Reflect,
        block: (16, 16),
        ..ConvOptions::default()
    };
    let filters: Vec<Vec<f32>> = (0..2)
        .map(|t| inputs::<f32>(k * k, seed ^ (t + 11)))
        .collect();
    let expected: Vec<Vec<f32>> = filters
        .iter()
        .map(|f| conv_cpu::conv2d(&image, h, w, f, k, &o).unwrap())
        .collect();
    std::thread::scope(|scope| {
        for (t, filter) in filters.iter().enumerate() {
            let handle = gpu.with_new_stream().unwrap();
            let image_view = image_d.view();
            let image = &image;
            scope.spawn(move || {
                let filter_d = Matrix::from_host(&handle, k, k, filter).unwrap();
                let mut outs: Vec<Matrix<f32>> = (0..12)
                    .map(|_| Matrix::poisoned(&handle, h, w).unwrap())
                    .collect();
                // Enqueue many launches before looking at any result.
                for out in outs.iter_mut() {
                    conv2d(&handle, image_view, filter_d.view(), out.view_mut(), &o).unwrap();
                }
                for (i, out) in outs.iter().enumerate() {
                    let got = out.to_host(&handle).unwrap();
                    check_against_cpu(
                        &got,
                        image,
                        h,
                        w,
                        filter,
                        k,
                        &o,
                        &format!("stream {t} launch {i}"),
                    );
                }
            });
        }
    });
    // Sanity: the two filters give different results.
    assert_ne!(expected[0], expected[1]);
}

/// An image of more than 2^31 elements (i32, 8.6 GB in and out): 64-bit
/// indices in every kernel. Checks the last rows fully and scattered points,
/// for TiledHalo (Same + Wrap: wrapping across the whole image) and Global
/// (Valid).
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_image_over_2_pow_31_elements() {
    let gpu = gpu();
    let seed = run_seed();
    let (h, w, k) = (65_539usize, 32_773usize, 3usize);
    assert!(h * w > 1 << 31);
    let image = random_vec::<i32>(h * w, seed, -1000.0, 1000.0);
    let filter = random_vec::<i32>(k * k, seed ^ 5, -50.0, 50.0);
    let image_d = Matrix::from_host(gpu, h, w, &image).unwrap();
    let filter_d = Matrix::from_host(gpu, k, k, &filter).unwrap();
    // The table's K ≤ 5 strip policy runs the first case; the third runs
    // its K = 6–7 policy (two elements per lane) at K = 3: rows at 64-bit
    // offsets, pieces claimed past 2^31 elements.
    let strip_tuning = ConvPolicy {
        strip: table_policy::<f32>().strip_wide,
        strip_wide: None,
        register_tile: None,
        register_tile_wide: None,
        ..table_policy::<i32>()
    };
    for (o, tuning) in [
        (
            ConvOptions {
                border: Border::Same,
                padding: Padding::Wrap,
                ..ConvOptions::default()
            },
            Some(table_policy::<i32>()),
        ),
        (
            ConvOptions {
                algorithm: ConvAlgorithm::Global,
                block: (32, 8),
                ..ConvOptions::default()
            },
            // Global takes no policy (one given is refused).
            None,
        ),
        (
            ConvOptions {
                border: Border::Valid,
                ..ConvOptions::default()
            },
            Some(strip_tuning),
        ),
    ] {
        let (rows, cols) = output_shape(h, w, k, o.border).unwrap();
        let mut out = Matrix::<i32>::poisoned(gpu, rows, cols).unwrap();
        let o = ConvOptions {
            policy: tuning,
            ..o
        };
        conv2d(gpu, image_d.view(), filter_d.view(), out.view_mut(), &o).unwrap();
        let (rows, cols) = out.shape();
        let point = |i: usize, j: usize| -> i32 {
            let a = linalg::conv::anchor(k, o.border, o.flip) as i64;
            let mut acc = 0i32;
            for u in 0..k {
                for v in 0..k {
                    let r = conv_cpu::padded_index(i as i64 + u as i64 - a, h, o.padding);
                    let c = conv_cpu::padded_index(j as i64 + v as i64 - a, w, o.padding);
                    if let (Some(r), Some(c)) = (r, c) {
                        acc = acc.wrapping_add(image[r * w + c].wrapping_mul(filter[u * k + v]));
                    }
                }
            }
            acc
        };
        // The last two rows, whole.
        let tail_start = (rows - 2) * cols;
        let tail = out
            .buffer()
            .slice(tail_start..)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        for (n, &got) in tail.iter().enumerate() {
            let (i, j) = ((tail_start + n) / cols, (tail_start + n) % cols);
            assert_eq!(got, point(i, j), "{:?} output ({i}, {j})", o.algorithm);
        }
        // Scattered points, the first row and column included.
        let mut rng = parprims_testkit::rng::SplitMix64::new(seed);
        for n in 0..2000 {
            let i = if n < 20 {
                0
            } else {
                rng.below(rows as u64) as usize
            };
            let j = if n % 50 == 1 {
                0
            } else {
                rng.below(cols as u64) as usize
            };
            let index = i * cols + j;
            let got = out
                .buffer()
                .slice(index..index + 1)
                .unwrap()
                .to_host(gpu)
                .unwrap()[0];
            assert_eq!(got, point(i, j), "{:?} output ({i}, {j})", o.algorithm);
        }
    }
}

proptest! {
    // 48 cases; 8 at the quick scale (parprims_testkit::testing).
    #![proptest_config(ProptestConfig { cases: parprims_testkit::testing::scaled(48, 8), ..ProptestConfig::default() })]

    /// Random shapes (edge-biased), K, options and types against the CPU.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_cases_match_the_cpu(
        h in prop_oneof![1usize..4, 30usize..36, 62usize..67, 1usize..150],
        w in prop_oneof![1usize..4, 30usize..35, 1usize..150],
        k in prop_oneof![1usize..8, 1usize..=31],
        border in prop_oneof![Just(Border::Valid), Just(Border::Same), Just(Border::Full)],
        padding in prop_oneof![Just(Padding::Zero), Just(Padding::Clamp), Just(Padding::Reflect), Just(Padding::Wrap)],
        flip in any::<bool>(),
        algorithm in prop_oneof![Just(ConvAlgorithm::Global), Just(ConvAlgorithm::SharedFilter), Just(ConvAlgorithm::ConstantFilter), Just(ConvAlgorithm::TiledHalo)],
        block_index in 0usize..4,
        type_index in 0usize..3,
        seed in any::<u64>(),
    ) {
        prop_assume!(border != Border::Valid || (k <= h && k <= w));
        let o = ConvOptions { border, padding, flip, algorithm, block: CONV_BLOCKS[block_index], policy: None };
        let gpu = gpu();
        match type_index {
            0 => run_case::<f32>(gpu, h, w, k, &o, seed | 1),
            1 => run_case::<f64>(gpu, h, w, k, &o, seed | 1),
            _ => run_case::<i32>(gpu, h, w, k, &o, seed | 1),
        }
    }
}
