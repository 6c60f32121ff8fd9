//! The 1- and 2-byte element types: `i8`, `u8`, `i16`, `u16` (wrapping,
//! exactly like the CPU reference) and `f16`, `bf16` (every combine in
//! `f32`, each output rounded once), through every algorithm, each of which
//! scans them in a 4-byte accumulator: the default (the decoupled
//! look-back) at many lengths, and the teaching scans and reduce-then-scan
//! at lengths around their tiles and across three recursion levels.
//!
//! Integers are compared exactly. A 16-bit float output `i` is compared with
//! the exact prefix (summed in `f64`) within a bound derived from the input:
//! the `f32` accumulation's error, `(i + 1)·ε_f32·Σ_{j≤i}|x_j|`, plus half
//! an ulp of the 16-bit type at the output's magnitude, plus half the
//! type's smallest subnormal (rounding near zero).
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; the reference,
//! validation and catalog tests run everywhere, the NVRTC test wherever
//! NVRTC is (and must, with `PARPRIMS_REQUIRE_NVRTC=1`).

use std::sync::OnceLock;

use gpu_core::kernel::{compile_cubin, cubin_defines};
use gpu_core::{
    bf16, f16, BitAnd, BitOr, BitXor, CustomOp, DeviceBuffer, Element, Error, Gpu, IntElement, Max,
    Min, Operator, Sum,
};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use scan::policy::{lookback_policy, reduce_then_scan_policy, PROTOCOL_TEST_TUNING};
use scan::{cpu, ScanAlgorithm, ScanKind, ScanOptions};

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU"))
}

/// Proptest cases for GPU properties: PROPTEST_CASES if set, else 12.
fn gpu_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

/// Lengths for the GPU properties: one element, one partial tile, one full
/// tile (256 × 32 items) and one more, several tiles with a ragged end, and
/// more than a million (128 tiles and a 3-item tail).
const GPU_LENGTHS: [usize; 7] = [1, 1000, 8192, 8193, 70_000, 200_003, (1 << 20) + 3];

/// `len` values of `T` from a seed. Integers: every bit pattern (sums wrap).
/// Floats: `[0, scale)`, with `scale` keeping the largest prefix sum near
/// 2^14, well inside the 16-bit floats' range, so that a lost carry shows.
fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let scale = (32_768.0 / len as f64).min(1.0);
    (0..len)
        .map(|_| {
            if T::IS_FLOAT {
                T::from_f64(rng.next_f64() * scale)
            } else {
                let bytes = rng.next_u64().to_le_bytes();
                bytemuck::pod_read_unaligned::<T>(&bytes[..T::BYTES])
            }
        })
        .collect()
}

/// Half the smallest positive value of a float type.
fn underflow_floor<T: Element>() -> f64 {
    let mut smallest = 1.0f64;
    while T::from_f64(smallest / 2.0).to_f64() != 0.0 {
        smallest /= 2.0;
    }
    smallest / 2.0
}

/// Checks a 16-bit float sum (inclusive, or exclusive from 0) against the
/// exact prefixes of `input` within the bound of the module docs.
fn check_float_sum<T: Element>(input: &[T], got: &[T], exclusive: bool) -> Result<(), String> {
    let eps32 = f32::EPSILON as f64;
    let floor = underflow_floor::<T>();
    let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
    for (i, (&x, &y)) in input.iter().zip(got).enumerate() {
        let terms = if exclusive { i } else { i + 1 };
        if !exclusive {
            exact += x.to_f64();
            magnitude += x.to_f64().abs();
        }
        let accumulation = terms as f64 * eps32 * magnitude;
        let rounding = T::EPSILON / 2.0 * (exact.abs() + accumulation);
        let tolerance = accumulation + rounding + floor;
        let error = (y.to_f64() - exact).abs();
        if error.is_nan() || error > tolerance {
            return Err(format!(
                "{}[{i}] of {}: {y} (exact {exact}, error {error:e} > {tolerance:e})",
                T::SUFFIX,
                input.len()
            ));
        }
        if exclusive {
            exact += x.to_f64();
            magnitude += x.to_f64().abs();
        }
    }
    Ok(())
}

// ---- CPU-only tests: references, validation, catalogs (run in CI) ----

/// The narrow-integer reference against the same scan carried in i64 and
/// truncated: wrapping sums, max, min and the bit operators.
fn check_int_reference<T: IntElement>(input: &[T], initial: T) {
    let wide = |x: T| x.to_f64() as i64;
    let narrow = |v: i64| -> T {
        let bytes = v.to_le_bytes();
        bytemuck::pod_read_unaligned::<T>(&bytes[..T::BYTES])
    };
    type Fold = fn(i64, i64) -> i64;
    let cases: [(&str, Fold); 6] = [
        ("sum", |a, b| a.wrapping_add(b)),
        ("max", |a, b| a.max(b)),
        ("min", |a, b| a.min(b)),
        ("and", |a, b| a & b),
        ("or", |a, b| a | b),
        ("xor", |a, b| a ^ b),
    ];
    for (name, fold) in cases {
        let expected_inclusive: Vec<T> = input
            .iter()
            .scan(None, |acc: &mut Option<i64>, &x| {
                *acc = Some(acc.map_or(wide(x), |a| fold(a, wide(x))));
                Some(narrow(acc.expect("set above")))
            })
            .collect();
        let expected_exclusive: Vec<T> = input
            .iter()
            .scan(wide(initial), |acc, &x| {
                let out = narrow(*acc);
                *acc = fold(*acc, wide(x));
                Some(out)
            })
            .collect();
        let kind = ScanKind::Exclusive { initial };
        let (inclusive, exclusive) = match name {
            "sum" => (cpu::inclusive(input, &Sum), cpu::scan(input, &Sum, kind)),
            "max" => (cpu::inclusive(input, &Max), cpu::scan(input, &Max, kind)),
            "min" => (cpu::inclusive(input, &Min), cpu::scan(input, &Min, kind)),
            "and" => (
                cpu::inclusive(input, &BitAnd),
                cpu::scan(input, &BitAnd, kind),
            ),
            "or" => (
                cpu::inclusive(input, &BitOr),
                cpu::scan(input, &BitOr, kind),
            ),
            _ => (
                cpu::inclusive(input, &BitXor),
                cpu::scan(input, &BitXor, kind),
            ),
        };
        assert_eq!(inclusive, expected_inclusive, "{} {name}", T::SUFFIX);
        assert_eq!(exclusive, expected_exclusive, "{} {name}", T::SUFFIX);
    }
}

proptest! {
    #[test]
    fn narrow_integer_references_wrap(len in 0usize..300, seed in any::<u64>()) {
        check_int_reference(&random::<i8>(len, seed), -7);
        check_int_reference(&random::<u8>(len, seed), 200);
        check_int_reference(&random::<i16>(len, seed), i16::MIN);
        check_int_reference(&random::<u16>(len, seed), 0xfff0);
    }

    #[test]
    fn half_float_references_carry_f32(len in 0usize..3000, seed in any::<u64>()) {
        // Each output is the f32 running value rounded once.
        fn check<T: Element<Acc = f32>>(input: &[T]) -> Result<(), String> {
            let mut running = 0.0f32;
            let sums = cpu::inclusive(input, &Sum);
            for (i, (&x, &y)) in input.iter().zip(&sums).enumerate() {
                running += x.to_acc();
                if y != T::from_acc(running) {
                    return Err(format!("{}[{i}]: {y} != {running}", T::SUFFIX));
                }
            }
            check_float_sum(input, &sums, false)?;
            check_float_sum(input, &cpu::exclusive(input, &Sum), true)
        }
        check(&random::<f16>(len, seed)).map_err(TestCaseError::fail)?;
        check(&random::<bf16>(len, seed)).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn half_float_max_and_min_are_exact() {
    let x: Vec<f16> = [0.5f32, -2.0, 3.25, 1.0].map(f16::from_f32).to_vec();
    let values = |v: Vec<f16>| v.into_iter().map(f16::to_f32).collect::<Vec<_>>();
    assert_eq!(values(cpu::inclusive(&x, &Max)), [0.5, 0.5, 3.25, 3.25]);
    assert_eq!(values(cpu::inclusive(&x, &Min)), [0.5, -2.0, -2.0, -2.0]);
    assert_eq!(
        values(cpu::exclusive(&x, &Max)),
        [f32::NEG_INFINITY, 0.5, 0.5, 3.25]
    );
}

/// Runs `$check::<T, _>(&op)` for each narrow integer type and operator.
macro_rules! for_each_int {
    ($check:ident, [$($op:expr),*]) => {
        $(
            $check::<i8, _>(&$op);
            $check::<u8, _>(&$op);
            $check::<i16, _>(&$op);
            $check::<u16, _>(&$op);
        )*
    };
}

#[test]
fn every_algorithm_takes_every_new_type_with_the_built_in_operators() {
    fn takes<T: Element, O: Operator<T>>(op: &O) {
        for algorithm in ScanAlgorithm::ALL {
            assert!(
                scan::check_element::<T, O>(op, algorithm).is_ok(),
                "{} {} {algorithm}",
                T::SUFFIX,
                op.name()
            );
        }
    }
    for_each_int!(takes, [Sum, Max, Min, BitAnd, BitOr, BitXor]);
    takes::<f16, _>(&Sum);
    takes::<f16, _>(&Max);
    takes::<bf16, _>(&Min);
    // The narrow types scan in the 4-byte accumulator's tuning.
    for bytes in [1, 2] {
        assert_eq!(lookback_policy(bytes), lookback_policy(4));
        assert_eq!(reduce_then_scan_policy(bytes), reduce_then_scan_policy(4));
    }
}

#[test]
fn custom_operators_on_the_new_types_are_refused_with_a_typed_error() {
    fn refused<T: Element, O: Operator<T>>(op: &O, algorithm: ScanAlgorithm) {
        assert!(
            matches!(
                scan::check_element::<T, O>(op, algorithm),
                Err(Error::Unsupported(_))
            ),
            "{} {} {algorithm}",
            T::SUFFIX,
            op.name()
        );
    }
    let custom_i8 = CustomOp::<i8>::new("add", "a + b", 0, |a, b| a.wrapping_add(b)).unwrap();
    let custom_f16 = CustomOp::<f16>::new("add", "a", f16::ZERO, |a, _| a).unwrap();
    let custom_u32 = CustomOp::<u32>::new("add", "a + b", 0, |a, b| a.wrapping_add(b)).unwrap();
    for algorithm in ScanAlgorithm::ALL {
        refused::<i8, _>(&custom_i8, algorithm);
        refused::<f16, _>(&custom_f16, algorithm);
        // The 4- and 8-byte types keep every algorithm, custom operators too.
        assert!(scan::check_element::<u32, _>(&custom_u32, algorithm).is_ok());
        assert!(scan::check_element::<f64, _>(&Max, algorithm).is_ok());
    }
    assert!(scan::modules_for::<i8, _>(&custom_i8).is_empty());
}

#[test]
fn the_catalog_holds_the_new_modules() {
    let catalog = scan::kernel_catalog();
    let names: Vec<&str> = catalog.iter().map(|m| m.name()).collect();
    let table = lookback_policy(4);
    let suffix = format!(
        "{}x{}{}",
        table.block_threads(),
        table.items_per_thread(),
        table.variant_suffix()
    );
    for t in ["i8", "u8", "i16", "u16", "f16", "bf16"] {
        for op in ["sum", "max", "min"] {
            for shape in [suffix.as_str(), "32x1"] {
                let name = format!("scan_lookback_{t}_{op}_{shape}");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
            for family in [
                "hillis_steele_global",
                "hillis_steele",
                "blelloch",
                "blelloch_padded",
                "uniform_add",
            ] {
                let name = format!("scan_{family}_{t}_{op}");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
            for shape in ["256x16", "32x1"] {
                let name = format!("scan_reduce_then_scan_{t}_{op}_{shape}");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        }
    }
    for t in ["i8", "u8", "i16", "u16"] {
        for op in ["and", "or", "xor"] {
            let name = format!("scan_lookback_{t}_{op}_{suffix}");
            assert!(names.contains(&name.as_str()), "{name} missing");
            let name = format!("scan_blelloch_padded_{t}_{op}");
            assert!(names.contains(&name.as_str()), "{name} missing");
        }
    }
    // Every narrow module of the teaching scans and reduce-then-scan has the
    // entries through accumulators.
    let module = catalog
        .iter()
        .find(|m| m.name() == "scan_blelloch_u16_max")
        .expect("in the catalog");
    assert_eq!(
        module.entries(),
        [
            "blelloch_block_u16_max",
            "blelloch_block_u16_max_to_acc",
            "blelloch_block_u16_max_acc"
        ]
    );
    let module = catalog
        .iter()
        .find(|m| m.name() == "scan_uniform_add_bf16_sum")
        .expect("in the catalog");
    assert_eq!(
        module.entries(),
        [
            "scan_uniform_add_bf16_sum",
            "scan_uniform_add_narrow_bf16_sum"
        ]
    );
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "duplicate module names");
}

/// Every look-back module of the new types (the table's shape, the
/// blocked-layout protocol shape, the small and the mid-size inputs'
/// shapes) compiles
/// with NVRTC for sm_90, the sums for sm_80 too, and defines its entries.
#[test]
fn the_new_lookback_modules_compile_with_nvrtc() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let mut modules = Vec::new();
    macro_rules! add {
        ($t:ty, [$($op:expr),*]) => { $( modules.extend(scan::modules_for::<$t, _>(&$op)); )* };
    }
    add!(i8, [Sum, Max, Min, BitAnd, BitOr, BitXor]);
    add!(u8, [Sum, Max, Min, BitAnd, BitOr, BitXor]);
    add!(i16, [Sum, Max, Min, BitAnd, BitOr, BitXor]);
    add!(u16, [Sum, Max, Min, BitAnd, BitOr, BitXor]);
    add!(f16, [Sum, Max, Min]);
    add!(bf16, [Sum, Max, Min]);
    modules.retain(|m| m.name().starts_with("scan_lookback_"));
    // The table's shape, the protocol shape, the small and mid-size inputs'.
    assert_eq!(modules.len(), 4 * (4 * 6 + 2 * 3));
    compile_for_sm90(&modules);
}

/// The other algorithms' modules for one narrow integer and one 16-bit
/// float type (every entry: element, to-accumulator and accumulator
/// stages, the narrowing uniform add, reduce-then-scan's accumulator
/// levels) compile with NVRTC and define their entries.
#[test]
fn the_new_teaching_and_reduce_then_scan_modules_compile_with_nvrtc() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let mut modules = scan::modules_for::<i8, _>(&Max);
    modules.extend(scan::modules_for::<f16, _>(&Sum));
    modules.retain(|m| !m.name().starts_with("scan_lookback_"));
    // Five teaching and uniform-add modules, two reduce-then-scan shapes.
    assert_eq!(modules.len(), 2 * 7);
    compile_for_sm90(&modules);
}

/// Compiles every module for sm_90 (the sums for sm_80 too) and checks
/// that each entry is defined.
fn compile_for_sm90(modules: &[gpu_core::ModuleSource]) {
    for module in modules {
        let archs: &[&str] = if module.name().contains("_sum") {
            &["sm_80", "sm_90"]
        } else {
            &["sm_90"]
        };
        for arch in archs {
            let cubin = compile_cubin(module, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", module.name()));
            for entry in module.entries() {
                assert!(cubin_defines(&cubin, entry), "{entry} missing for {arch}");
            }
        }
    }
}

// ---- GPU properties (ignored without a GPU) ----

/// Inclusive and exclusive scans of `input` with `op` through the default
/// algorithm (`inclusive`, `exclusive`, and `scan_into` exclusive and
/// inclusive from a non-identity initial value), compared exactly with the
/// CPU reference.
fn check_exact<T: Element, O: Operator<T>>(input: &[T], op: &O, initial: T) -> Result<(), String> {
    let gpu = gpu();
    let x = DeviceBuffer::from_host(gpu, input).map_err(|e| e.to_string())?;
    let got = scan::inclusive(gpu, x.view(), op)
        .and_then(|y| y.to_host(gpu))
        .map_err(|e| e.to_string())?;
    if got != cpu::inclusive(input, op) {
        return Err(format!(
            "inclusive {} {} n={}",
            T::SUFFIX,
            op.name(),
            input.len()
        ));
    }
    let got = scan::exclusive(gpu, x.view(), op)
        .and_then(|y| y.to_host(gpu))
        .map_err(|e| e.to_string())?;
    if got != cpu::exclusive(input, op) {
        return Err(format!(
            "exclusive {} {} n={}",
            T::SUFFIX,
            op.name(),
            input.len()
        ));
    }
    for kind in [
        ScanKind::Exclusive { initial },
        ScanKind::InclusiveFrom { initial },
    ] {
        let mut y = DeviceBuffer::<T>::poisoned(gpu, input.len()).map_err(|e| e.to_string())?;
        scan::scan_into(
            gpu,
            x.view(),
            y.view_mut(),
            op,
            kind,
            &ScanOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        if y.to_host(gpu).map_err(|e| e.to_string())? != cpu::scan(input, op, kind) {
            return Err(format!(
                "scan_into {} {} {kind:?} n={}",
                T::SUFFIX,
                op.name(),
                input.len()
            ));
        }
    }
    Ok(())
}

fn check_int_type<T: IntElement>(len: usize, seed: u64) -> Result<(), String> {
    let input = random::<T>(len, seed);
    let initial = input[len / 2];
    check_exact(&input, &Sum, initial)?;
    check_exact(&input, &Max, initial)?;
    check_exact(&input, &Min, initial)?;
    check_exact(&input, &BitAnd, initial)?;
    check_exact(&input, &BitOr, initial)?;
    check_exact(&input, &BitXor, initial)
}

/// Sums within the input-derived bound (inclusive and exclusive, the whole
/// buffer and a view starting one element in, which takes the kernels'
/// element-wise path); max and min exactly.
fn check_half_type<T: Element<Acc = f32>>(len: usize, seed: u64) -> Result<(), String> {
    let gpu = gpu();
    let input = random::<T>(len, seed);
    let x = DeviceBuffer::from_host(gpu, &input).map_err(|e| e.to_string())?;
    for offset in [0, 1.min(len - 1)] {
        let view = x.slice(offset..).map_err(|e| e.to_string())?;
        let part = &input[offset..];
        let sums = scan::inclusive(gpu, view, &Sum)
            .and_then(|y| y.to_host(gpu))
            .map_err(|e| e.to_string())?;
        check_float_sum(part, &sums, false)?;
        let sums = scan::exclusive(gpu, view, &Sum)
            .and_then(|y| y.to_host(gpu))
            .map_err(|e| e.to_string())?;
        check_float_sum(part, &sums, true)?;
    }
    let initial = input[len / 2];
    check_exact(&input, &Max, initial)?;
    check_exact(&input, &Min, initial)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(gpu_cases()))]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_i8_scans_wrap_exactly(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_int_type::<i8>(len, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_u8_scans_wrap_exactly(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_int_type::<u8>(len, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_i16_scans_wrap_exactly(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_int_type::<i16>(len, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_u16_scans_wrap_exactly(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_int_type::<u16>(len, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_f16_scans_accumulate_in_f32(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_half_type::<f16>(len, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_bf16_scans_accumulate_in_f32(len in prop::sample::select(GPU_LENGTHS.to_vec()), seed in any::<u64>()) {
        check_half_type::<bf16>(len, seed).map_err(TestCaseError::fail)?;
    }
}

/// Every refused combination (a custom operator on a narrow type, with any
/// algorithm) leaves the output untouched, found before the device is used
/// for the scan (and for an empty input too).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_refusals_write_nothing() {
    let gpu = gpu();
    let input = random::<i16>(1000, 7);
    let x = DeviceBuffer::from_host(gpu, &input).unwrap();
    let mut y = DeviceBuffer::<i16>::filled(gpu, input.len(), 5).unwrap();
    let custom = CustomOp::<i16>::new("add", "a + b", 0, |a, b| a.wrapping_add(b)).unwrap();
    for algorithm in ScanAlgorithm::ALL {
        let options = ScanOptions::new(algorithm);
        let result = scan::scan_into(
            gpu,
            x.view(),
            y.view_mut(),
            &custom,
            ScanKind::Inclusive,
            &options,
        );
        assert!(
            matches!(result, Err(Error::Unsupported(_))),
            "{algorithm}: {result:?}"
        );
    }
    assert!(y.to_host(gpu).unwrap().iter().all(|&v| v == 5));
    let empty = DeviceBuffer::<i16>::zeros(gpu, 0).unwrap();
    assert!(matches!(
        scan::scan(
            gpu,
            empty.view(),
            &custom,
            ScanKind::Inclusive,
            &ScanOptions::default()
        ),
        Err(Error::Unsupported(_))
    ));
}

// ---- Every other algorithm on the narrow types (ignored without a GPU) ----

/// One configuration of a non-default algorithm and the tile one block
/// scans with it (none for the one-launch-per-step Hillis–Steele).
struct Config {
    options: ScanOptions,
    tile: Option<usize>,
}

/// Every non-default algorithm at its default block size or tile shape, and
/// at the smallest one (32 threads, the 32-item protocol tile), whose tiny
/// tiles reach three recursion levels at a few thousand elements.
fn configs() -> Vec<Config> {
    let teaching = |algorithm, threads: u32, items_per_thread: usize| Config {
        options: ScanOptions::new(algorithm).with_block_threads(threads),
        tile: Some(threads as usize * items_per_thread),
    };
    let default_threads = scan::policy::DEFAULT_BLOCK_THREADS;
    let mut configs = vec![Config {
        options: ScanOptions::new(ScanAlgorithm::HillisSteeleGlobal),
        tile: None,
    }];
    for threads in [default_threads, 32] {
        configs.push(teaching(ScanAlgorithm::HillisSteele, threads, 4));
        configs.push(teaching(ScanAlgorithm::Blelloch, threads, 2));
        configs.push(teaching(ScanAlgorithm::BlellochPadded, threads, 2));
    }
    for shape in [reduce_then_scan_policy(1), PROTOCOL_TEST_TUNING] {
        configs.push(Config {
            options: ScanOptions::new(ScanAlgorithm::ReduceThenScan).with_policy(shape),
            tile: Some(shape.tile_items() as usize),
        });
    }
    configs
}

/// Lengths for a configuration: 0, 1, tile − 1, tile, tile + 1, several
/// tiles with a ragged end, and tile² + tile + 1 (three recursion levels)
/// where that stays under 2^21; the one-launch-per-step scan gets lengths
/// of one, two and many launches, in place of tiles.
fn lengths(config: &Config) -> Vec<usize> {
    match config.tile {
        None => vec![0, 1, 2, 3, 255, 256, 257, 5000, 70_001],
        Some(tile) => {
            let mut lengths = vec![0, 1, tile - 1, tile, tile + 1, 5 * tile + 3];
            let three_levels = tile * tile + tile + 1;
            if three_levels < 1 << 21 {
                lengths.push(three_levels);
            }
            lengths
        }
    }
}

/// `kind` of `input` with `op` through `options`, into a new buffer and in
/// place; both results.
fn run_scan<T: Element, O: Operator<T>>(
    input: &[T],
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
) -> Result<[Vec<T>; 2], String> {
    let gpu = gpu();
    let x = DeviceBuffer::from_host(gpu, input).map_err(|e| e.to_string())?;
    let out_of_place = scan::scan(gpu, x.view(), op, kind, options)
        .and_then(|y| y.to_host(gpu))
        .map_err(|e| e.to_string())?;
    let mut data = DeviceBuffer::from_host(gpu, input).map_err(|e| e.to_string())?;
    scan::scan_in_place(gpu, data.view_mut(), op, kind, options).map_err(|e| e.to_string())?;
    let in_place = data.to_host(gpu).map_err(|e| e.to_string())?;
    Ok([out_of_place, in_place])
}

/// Inclusive and exclusive scans (from the identity and from an element of
/// the input; inclusive also from that element) with `op`, out of place and
/// in place, compared exactly with the CPU reference.
fn check_exact_with<T: Element, O: Operator<T>>(
    input: &[T],
    op: &O,
    options: &ScanOptions,
) -> Result<(), String> {
    let mut kinds = vec![
        ScanKind::Inclusive,
        ScanKind::Exclusive {
            initial: op.identity(),
        },
    ];
    if let Some(&initial) = input.get(input.len() / 2) {
        kinds.push(ScanKind::Exclusive { initial });
        kinds.push(ScanKind::InclusiveFrom { initial });
    }
    for kind in kinds {
        let expected = cpu::scan(input, op, kind);
        for (got, how) in run_scan(input, op, kind, options)?
            .into_iter()
            .zip(["", " in place"])
        {
            if got != expected {
                let first = got.iter().zip(&expected).position(|(a, b)| a != b);
                return Err(format!(
                    "{} {} {kind:?}{how} n={}: first difference at {first:?}",
                    T::SUFFIX,
                    op.name(),
                    input.len()
                ));
            }
        }
    }
    Ok(())
}

/// A narrow integer type through every configuration and length: sum, max
/// and min (and xor, the bit operators' representative), exactly.
fn check_int_algorithms<T: IntElement>(seed: u64) -> Result<(), String> {
    for config in configs() {
        for len in lengths(&config) {
            let input = random::<T>(len, seed ^ len as u64);
            let options = &config.options;
            let context = |e: String| format!("{}: {e}", options.algorithm);
            check_exact_with(&input, &Sum, options).map_err(context)?;
            check_exact_with(&input, &Max, options).map_err(context)?;
            check_exact_with(&input, &Min, options).map_err(context)?;
            check_exact_with(&input, &BitXor, options).map_err(context)?;
        }
    }
    Ok(())
}

/// A 16-bit float type through every configuration and length: sums
/// (inclusive, and exclusive from 0; out of place and in place) within the
/// input-derived bound, max and min exactly.
fn check_half_algorithms<T: Element<Acc = f32>>(seed: u64) -> Result<(), String> {
    for config in configs() {
        for len in lengths(&config) {
            let input = random::<T>(len, seed ^ len as u64);
            let options = &config.options;
            let context = |e: String| format!("{}: {e}", options.algorithm);
            let exclusive = ScanKind::Exclusive {
                initial: Operator::<T>::identity(&Sum),
            };
            for (kind, is_exclusive) in [(ScanKind::Inclusive, false), (exclusive, true)] {
                for got in run_scan(&input, &Sum, kind, options).map_err(context)? {
                    check_float_sum(&input, &got, is_exclusive).map_err(context)?;
                }
            }
            check_exact_with(&input, &Max, options).map_err(context)?;
            check_exact_with(&input, &Min, options).map_err(context)?;
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_i8() {
    check_int_algorithms::<i8>(0x18).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_u8() {
    check_int_algorithms::<u8>(0x28).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_i16() {
    check_int_algorithms::<i16>(0x116).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_u16() {
    check_int_algorithms::<u16>(0x216).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_f16_in_f32() {
    check_half_algorithms::<f16>(0xf16).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_algorithm_scans_bf16_in_f32() {
    check_half_algorithms::<bf16>(0xbf16).unwrap();
}
