//! The element types beyond `f32`, `f64` and `i32`: transpose of every
//! type (`i8`, `u8`, `i16`, `u16`, `f16`, `bf16` next to the others), and
//! matvec and conv in `f16` and `bf16`, which accumulate in `f32` and round
//! each output once.
//!
//! Floats are compared with tolerances derived from the input: the CPU
//! references sum in `f64` and round once, and a GPU result may differ by
//! the accumulation's error in `f32` (`(terms + 2)·ε_f32·Σ|terms|`) plus one
//! rounding to the 16-bit type (`ε·Σ|terms|`): [`linalg::cpu::matvec_tolerance`]
//! for matvec, the same bound over the `K²` taps for conv.
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; the reference, validation
//! and catalog tests run everywhere, the NVRTC test wherever NVRTC is (and
//! must, with `PARPRIMS_REQUIRE_NVRTC=1`).

use std::sync::OnceLock;

use gpu_core::kernel::{compile_cubin, cubin_defines};
use gpu_core::{bf16, f16, DeviceBuffer, DeviceType, Element, Error, Gpu};
use linalg::conv::{output_shape, Border, ConvAlgorithm, ConvElement, ConvOptions, Padding};
use linalg::policy::{ConvPolicy, StripPolicy, StripSchedule, StripStores};
use linalg::{
    check_transpose_shapes, conv2d_new, conv_cpu, cpu, matvec_new, transpose_new, validate_conv,
    Matrix, MatvecAlgorithm, MatvecElement, Transpose, TransposeAlgorithm,
};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU"))
}

/// Proptest cases for GPU properties: PROPTEST_CASES if set, else 24.
fn gpu_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// `len` values of `T` from a seed: floats in [-2, 2) (every value a
/// 16-bit float can hold there, rounded from f64), integers over the type's
/// whole range.
fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|_| {
            if T::IS_FLOAT {
                T::from_f64(rng.next_f64() * 4.0 - 2.0)
            } else {
                let (low, high) = (T::lowest().to_f64(), T::highest().to_f64());
                T::from_f64((low + rng.next_f64() * (high - low + 1.0)).floor())
            }
        })
        .collect()
}

/// Bitwise equality (NaN payloads and signed zeros included): a transpose
/// moves bits.
fn same_bits<T: DeviceType>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// Half the smallest positive value of a float type: what rounding a result
/// in the subnormal range may move it by, however small the terms (0 for
/// integers).
fn underflow_floor<T: Element>() -> f64 {
    if !T::IS_FLOAT {
        return 0.0;
    }
    let mut smallest = 1.0f64;
    while T::from_f64(smallest / 2.0).to_f64() != 0.0 {
        smallest /= 2.0;
    }
    smallest / 2.0
}

/// How far a 16-bit-float conv output may be from the reference (the f64
/// sum rounded once): the accumulation bound in the accumulator over `taps`
/// products, plus one rounding to `T`, both scaled by `magnitude` =
/// `Σ|x·w|` of that output.
fn conv_tolerance<T: ConvElement>(taps: usize, magnitude: f64) -> f64 {
    let acc_epsilon = <T::Acc as Element>::EPSILON;
    ((taps as f64 + 2.0) * acc_epsilon + (T::EPSILON - acc_epsilon)) * magnitude
        + underflow_floor::<T>()
}

/// `Σ|x·w|` per conv output: the reference convolution of |image| with
/// |filter| in f64.
fn conv_magnitude<T: ConvElement>(
    image: &[T],
    (h, w): (usize, usize),
    filter: &[T],
    k: usize,
    options: &ConvOptions,
) -> Vec<f64> {
    let abs = |v: &[T]| v.iter().map(|x| x.to_f64().abs()).collect::<Vec<f64>>();
    conv_cpu::conv2d(&abs(image), h, w, &abs(filter), k, options).expect("a valid shape")
}

// ---- CPU-only tests: references, validation, catalogs (run in CI) ----

#[test]
fn underflow_floors_are_half_the_smallest_subnormal() {
    assert_eq!(underflow_floor::<f16>(), 2f64.powi(-25));
    assert_eq!(underflow_floor::<bf16>(), 2f64.powi(-134));
    assert_eq!(underflow_floor::<i16>(), 0.0);
}

#[test]
fn every_new_type_has_a_transpose_kernel_size() {
    for bytes in [
        i8::BYTES,
        u8::BYTES,
        i16::BYTES,
        u16::BYTES,
        f16::BYTES,
        bf16::BYTES,
    ] {
        assert!(
            check_transpose_shapes((3, 5), (5, 3), bytes).is_ok(),
            "{bytes}"
        );
    }
    assert!(matches!(
        check_transpose_shapes((3, 5), (5, 3), 3),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn the_catalog_holds_the_new_modules() {
    let catalog = linalg::kernel_catalog();
    let names: Vec<&str> = catalog.iter().map(|m| m.name()).collect();
    for name in [
        "transpose_u8",
        "transpose_u16",
        "matvec_f16",
        "matvec_bf16",
        "linalg_conv_f16",
        "linalg_conv_bf16",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    // No strip module for the 16-bit floats: the strip kernel computes in
    // the element type.
    assert!(!names
        .iter()
        .any(|n| n.contains("strip_f16") || n.contains("strip_bf16")));
    // The 16-bit floats' modules carry f32 accumulators.
    let conv = catalog
        .iter()
        .find(|m| m.name() == "linalg_conv_bf16")
        .unwrap();
    assert!(conv.code().contains("typedef bf16 conv_t;"));
    assert!(conv.code().contains("typedef f32 conv_acc_t;"));
    let matvec = catalog.iter().find(|m| m.name() == "matvec_f16").unwrap();
    assert!(matvec.code().contains("f32* partial"));
}

#[test]
fn the_new_modules_compile_with_nvrtc() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let wanted = [
        "transpose_u16",
        "matvec_f16",
        "matvec_bf16",
        "linalg_conv_f16",
        "linalg_conv_bf16",
    ];
    for module in linalg::kernel_catalog()
        .iter()
        .filter(|m| wanted.contains(&m.name()))
    {
        let cubin = compile_cubin(module, "sm_80").unwrap_or_else(|e| panic!("{e}"));
        for entry in module.entries() {
            assert!(cubin_defines(&cubin, entry), "{entry} missing");
        }
    }
}

#[test]
fn a_strip_policy_is_refused_for_16_bit_floats() {
    let strip = StripPolicy {
        elems_per_lane: 2,
        prefetch_rows: 1,
        strip_rows: 0,
        stores: StripStores::Scalar,
        max_registers: 0,
        warps: 0,
        schedule: StripSchedule::Fixed,
        trim_halo: false,
    };
    let with_strip = ConvOptions {
        policy: Some(ConvPolicy {
            strip: Some(strip),
            ..ConvPolicy::default_for::<f16>((9, 0))
        }),
        ..ConvOptions::default()
    };
    assert!(matches!(
        validate_conv::<f16>((16, 16), (3, 3), (14, 14), &with_strip),
        Err(Error::InvalidArgument { name: "tuning", .. })
    ));
    assert!(matches!(
        validate_conv::<bf16>((16, 16), (3, 3), (14, 14), &with_strip),
        Err(Error::InvalidArgument { name: "tuning", .. })
    ));
    // The table's policy (block kernel only) is fine.
    assert_eq!(
        validate_conv::<bf16>((16, 16), (3, 3), (14, 14), &ConvOptions::default()).unwrap(),
        (14, 14)
    );
    assert!(ConvPolicy::default_for::<f16>((9, 0)).strip.is_none());
}

/// The matvec reference for a 16-bit float rounds the exact sum once, and
/// the tolerance covers the distance from that sum.
fn reference_rounds_once<T: MatvecElement>(rows: usize, cols: usize, seed: u64) {
    let a = random::<T>(rows * cols, seed);
    let x = random::<T>(cols, seed ^ 1);
    let y = cpu::matvec(&a, rows, cols, &x, Transpose::No).unwrap();
    let (exact, magnitude) = cpu::matvec_f64(&a, rows, cols, &x, Transpose::No).unwrap();
    for i in 0..rows {
        assert_eq!(y[i], T::from_f64(exact[i]));
        // Rounding once moves a value by at most half an ulp: ε/2 relative.
        let error = (y[i].to_f64() - exact[i]).abs();
        assert!(error <= T::EPSILON / 2.0 * exact[i].abs() + underflow_floor::<T>());
        assert!(error <= cpu::matvec_tolerance::<T>(cols, magnitude[i]) + underflow_floor::<T>());
    }
}

fn conv_reference_rounds_once<T: ConvElement>(h: usize, w: usize, k: usize, seed: u64) {
    let image = random::<T>(h * w, seed);
    let filter = random::<T>(k * k, seed ^ 2);
    let options = ConvOptions {
        border: Border::Same,
        padding: Padding::Reflect,
        ..ConvOptions::default()
    };
    let got = conv_cpu::conv2d(&image, h, w, &filter, k, &options).unwrap();
    let wide = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let exact = conv_cpu::conv2d(&wide(&image), h, w, &wide(&filter), k, &options).unwrap();
    for (g, e) in got.iter().zip(&exact) {
        assert_eq!(*g, T::from_f64(*e));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cpu_transpose_twice_is_identity(rows in 1usize..70, cols in 1usize..70, seed: u64) {
        fn twice<T: Element>(rows: usize, cols: usize, seed: u64) {
            let a = random::<T>(rows * cols, seed);
            let t = cpu::transpose(&a, rows, cols).unwrap();
            assert!(same_bits(&t[..1], &a[..1]));
            assert!(same_bits(&cpu::transpose(&t, cols, rows).unwrap(), &a));
        }
        twice::<i8>(rows, cols, seed);
        twice::<u8>(rows, cols, seed);
        twice::<i16>(rows, cols, seed);
        twice::<u16>(rows, cols, seed);
        twice::<f16>(rows, cols, seed);
        twice::<bf16>(rows, cols, seed);
    }

    #[test]
    fn cpu_matvec_of_16_bit_floats_rounds_once(rows in 1usize..12, cols in 1usize..300, seed: u64) {
        reference_rounds_once::<f16>(rows, cols, seed);
        reference_rounds_once::<bf16>(rows, cols, seed);
    }

    #[test]
    fn cpu_conv_of_16_bit_floats_rounds_once(h in 1usize..20, w in 1usize..20, k in 1usize..6, seed: u64) {
        conv_reference_rounds_once::<f16>(h, w, k, seed);
        conv_reference_rounds_once::<bf16>(h, w, k, seed);
    }
}

// ---- GPU tests ----

/// Every transpose algorithm on one shape, bit for bit against the CPU.
fn check_transpose<T: Element>(rows: usize, cols: usize, seed: u64) {
    let gpu = gpu();
    let host = random::<T>(rows * cols, seed);
    let expected = cpu::transpose(&host, rows, cols).unwrap();
    let input = Matrix::from_host(gpu, rows, cols, &host).unwrap();
    for algorithm in TransposeAlgorithm::ALL {
        let out = transpose_new(gpu, input.view(), algorithm).unwrap();
        assert_eq!(out.shape(), (cols, rows));
        let got = out.to_host(gpu).unwrap();
        assert!(
            same_bits(&got, &expected),
            "{} {rows}×{cols} {algorithm}",
            T::SUFFIX
        );
    }
}

/// Shapes biased to edges: 1 × N, N × 1, tile ± 1, several tiles.
const TRANSPOSE_SHAPES: [(usize, usize); 8] = [
    (1, 1),
    (1, 77),
    (77, 1),
    (31, 33),
    (32, 32),
    (33, 31),
    (65, 200),
    (257, 96),
];

macro_rules! transpose_tests {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            for (i, &(rows, cols)) in TRANSPOSE_SHAPES.iter().enumerate() {
                check_transpose::<$t>(rows, cols, 0x7e57 + i as u64);
            }
            proptest!(ProptestConfig::with_cases(gpu_cases()), |(rows in 1usize..300, cols in 1usize..300, seed in any::<u64>())| {
                check_transpose::<$t>(rows, cols, seed);
            });
        }
    )*};
}

transpose_tests! {
    gpu_transpose_i8: i8,
    gpu_transpose_u8: u8,
    gpu_transpose_i16: i16,
    gpu_transpose_u16: u16,
    gpu_transpose_f16: f16,
    gpu_transpose_bf16: bf16,
}

/// Every matvec algorithm, both directions, against the CPU reference
/// within [`cpu::matvec_tolerance`] (plus [`underflow_floor`] for results
/// in the subnormal range).
fn check_matvec<T: MatvecElement>(rows: usize, cols: usize, seed: u64) {
    let gpu = gpu();
    let host = random::<T>(rows * cols, seed);
    let a = Matrix::from_host(gpu, rows, cols, &host).unwrap();
    for op in [Transpose::No, Transpose::Yes] {
        let x_host = random::<T>(op.input_len(rows, cols), seed ^ 3);
        let x = DeviceBuffer::from_host(gpu, &x_host).unwrap();
        let (exact, magnitude) = cpu::matvec_f64(&host, rows, cols, &x_host, op).unwrap();
        let terms = op.input_len(rows, cols);
        for algorithm in MatvecAlgorithm::all() {
            let got = matvec_new(gpu, a.view(), x.view(), op, algorithm)
                .unwrap()
                .to_host(gpu)
                .unwrap();
            for (i, g) in got.iter().enumerate() {
                let error = (g.to_f64() - exact[i]).abs();
                let tolerance =
                    cpu::matvec_tolerance::<T>(terms, magnitude[i]) + underflow_floor::<T>();
                assert!(
                    error <= tolerance,
                    "{} {rows}×{cols} {op:?} {algorithm}: y[{i}] = {g}, exact {} \
                     (error {error:e} > {tolerance:e})",
                    T::SUFFIX,
                    exact[i]
                );
            }
        }
    }
}

/// Shapes for matvec: thin, wide (several column chunks and row slabs),
/// rows not a multiple of the 16-byte vector (8 halves).
const MATVEC_SHAPES: [(usize, usize); 7] = [
    (1, 1),
    (1, 4097),
    (4097, 1),
    (7, 9),
    (33, 1000),
    (3000, 24),
    (16, 20_000),
];

macro_rules! matvec_tests {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            for (i, &(rows, cols)) in MATVEC_SHAPES.iter().enumerate() {
                check_matvec::<$t>(rows, cols, 0x3a7 + i as u64);
            }
            proptest!(ProptestConfig::with_cases(gpu_cases()), |(rows in 1usize..400, cols in 1usize..400, seed in any::<u64>())| {
                check_matvec::<$t>(rows, cols, seed);
            });
        }
    )*};
}

matvec_tests! {
    gpu_matvec_f16: f16,
    gpu_matvec_bf16: bf16,
}

/// A 16-bit float matvec whose terms cancel in f32 but not in f16: the
/// f32 accumulator keeps the small terms a 16-bit running sum would lose.
fn accumulates_in_f32<T: MatvecElement>() {
    let gpu = gpu();
    let cols = 4096;
    // 1 + 4095 · 2^-12 = 1.999…: a 16-bit running sum stalls at 1
    // (2^-12 is below half an ulp of 1), an f32 one does not.
    let mut host = vec![T::from_f64(1.0 / 4096.0); cols];
    host[0] = T::one();
    let a = Matrix::from_host(gpu, 1, cols, &host).unwrap();
    let x = DeviceBuffer::from_host(gpu, &vec![T::one(); cols]).unwrap();
    for algorithm in MatvecAlgorithm::all() {
        let y = matvec_new(gpu, a.view(), x.view(), Transpose::No, algorithm)
            .unwrap()
            .to_host(gpu)
            .unwrap();
        assert_eq!(y[0], T::from_f64(1.0 + 4095.0 / 4096.0), "{algorithm}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matvec_16_bit_floats_accumulate_in_f32() {
    accumulates_in_f32::<f16>();
    accumulates_in_f32::<bf16>();
}

/// Every conv algorithm on one problem, against the CPU reference within
/// [`conv_tolerance`].
fn check_conv<T: ConvElement>(
    (h, w): (usize, usize),
    k: usize,
    border: Border,
    padding: Padding,
    seed: u64,
) {
    let gpu = gpu();
    let image_host = random::<T>(h * w, seed);
    let filter_host = random::<T>(k * k, seed ^ 5);
    let image = Matrix::from_host(gpu, h, w, &image_host).unwrap();
    let filter = Matrix::from_host(gpu, k, k, &filter_host).unwrap();
    for flip in [false, true] {
        for algorithm in ConvAlgorithm::ALL {
            let options = ConvOptions {
                border,
                padding,
                flip,
                algorithm,
                ..ConvOptions::default()
            };
            let wide = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
            let exact =
                conv_cpu::conv2d(&wide(&image_host), h, w, &wide(&filter_host), k, &options)
                    .unwrap();
            let magnitude = conv_magnitude(&image_host, (h, w), &filter_host, k, &options);
            let got = conv2d_new(gpu, image.view(), filter.view(), &options)
                .unwrap()
                .to_host(gpu)
                .unwrap();
            assert_eq!(got.len(), exact.len());
            for (i, g) in got.iter().enumerate() {
                let error = (g.to_f64() - exact[i]).abs();
                let tolerance = conv_tolerance::<T>(k * k, magnitude[i]);
                assert!(
                    error <= tolerance,
                    "{} {h}×{w} K={k} {border:?} {padding:?} flip={flip} {algorithm:?}: \
                     out[{i}] = {g}, exact {} (error {error:e} > {tolerance:e})",
                    T::SUFFIX,
                    exact[i]
                );
            }
        }
    }
}

macro_rules! conv_tests {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            // Small and large K (registers, shared-memory and run-time-K
            // block kernels), every border and padding.
            for (i, &k) in [1usize, 3, 5, 8, 13, 31].iter().enumerate() {
                for border in [Border::Valid, Border::Same, Border::Full] {
                    let h = (k + 17 + i).max(40);
                    check_conv::<$t>((h, h + 3), k, border, Padding::Zero, 0xc0 + i as u64);
                }
            }
            for padding in [Padding::Clamp, Padding::Reflect, Padding::Wrap] {
                check_conv::<$t>((37, 29), 4, Border::Same, padding, 0xc1);
            }
            proptest!(ProptestConfig::with_cases(gpu_cases()), |(h in 1usize..90, w in 1usize..90, k in 1usize..10, seed in any::<u64>())| {
                let border = if k <= h && k <= w { Border::Valid } else { Border::Full };
                prop_assume!(output_shape(h, w, k, border).is_ok());
                check_conv::<$t>((h, w), k, border, Padding::Zero, seed);
            });
        }
    )*};
}

conv_tests! {
    gpu_conv_f16: f16,
    gpu_conv_bf16: bf16,
}
