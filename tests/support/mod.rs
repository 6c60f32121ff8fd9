//! Helpers shared by the GPU test binaries of the `parprims` package
//! (`mod support;` in `reliability_bad_input.rs`,
//! `reliability_concurrency.rs`, `reliability_pool_streams.rs`,
//! `reliability_sizes.rs` and `sanitizer_cases.rs`): the one device
//! handle, a run's seed, inputs whose every sum and product is exact,
//! random bit patterns, bitwise equality, conv options from their parts, and
//! the NVRTC check of a test-only module.

// Each binary uses a subset.
#![allow(dead_code)]

use std::sync::OnceLock;

use gpu_core::{DeviceType, Element, Gpu, ModuleSource};
use linalg::{Border, ConvAlgorithm, ConvOptions, Padding};
use parprims_testkit::rng::{random_vec, SplitMix64};

/// The device handle a test binary shares (one context, one stream).
pub fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU (device 0)"))
}

/// `random_vec` draws floats uniformly (not whole): round them, so that every
/// sum and product the tests form is exact in any order and the comparison
/// with the CPU can be bitwise. Integers are already whole.
pub fn whole<T: Element>(mut values: Vec<T>) -> Vec<T> {
    if T::IS_FLOAT {
        for value in values.iter_mut() {
            *value = T::from_f64(value.to_f64().round());
        }
    }
    values
}

/// Inputs for exact comparisons: whole floats in `float_low … float_high`
/// (keep the range small enough that sums stay below 2^24 for `f32`), and
/// integers over most of their range, so sums wrap exactly as on the CPU.
pub fn wide_values<T: Element>(n: usize, seed: u64, float_low: f64, float_high: f64) -> Vec<T> {
    let (low, high) = if T::IS_FLOAT {
        (float_low, float_high)
    } else {
        let bits = 8 * T::BYTES as i32;
        if T::IS_SIGNED {
            (-(2f64.powi(bits - 2)), 2f64.powi(bits - 2))
        } else {
            (0.0, 2f64.powi(bits - 1))
        }
    };
    whole(random_vec::<T>(n, seed, low, high))
}

/// Small whole numbers of every type: `-half_range … half_range` for signed
/// types and floats, `0 … half_range` for unsigned ones (matvec and conv
/// inputs, whose products must stay exact).
pub fn small_values<T: Element>(n: usize, seed: u64, half_range: f64) -> Vec<T> {
    let low = if T::IS_SIGNED { -half_range } else { 0.0 };
    whole(random_vec::<T>(n, seed, low, half_range))
}

/// Random bit patterns of any device type (transposes move bits), one
/// `rng` word per 8 bytes.
pub fn random_bits<T: DeviceType>(rng: &mut SplitMix64, n: usize) -> Vec<T> {
    let mut values = vec![T::default(); n];
    for chunk in bytemuck::cast_slice_mut::<T, u8>(&mut values).chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
    values
}

/// Equal as values or as bits (so NaN payloads and -0.0 compare as stored).
pub fn same_bits<T: DeviceType>(a: &T, b: &T) -> bool {
    a == b || bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// Conv options from their parts (fields added to `ConvOptions` later keep
/// their defaults).
pub fn conv_options(
    algorithm: ConvAlgorithm,
    (border, padding): (Border, Padding),
    flip: bool,
    block: (u32, u32),
) -> ConvOptions {
    #[allow(clippy::needless_update)]
    ConvOptions {
        border,
        padding,
        flip,
        algorithm,
        block,
        ..ConvOptions::default()
    }
}

/// The seed of a randomised run: `PARPRIMS_SEED` when set (to replay a
/// run whose seed a test printed), else the clock.
pub fn fresh_seed() -> u64 {
    if let Some(seed) = std::env::var("PARPRIMS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return seed;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed)
}

/// A test-only module compiles for sm_80 and sm_90 and defines every entry
/// it declares, when NVRTC is present; without NVRTC the check is skipped
/// (said on stderr) unless `PARPRIMS_REQUIRE_NVRTC=1` (CI), where it fails.
pub fn check_module_compiles(module: &ModuleSource) {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let cubin = gpu_core::kernel::compile_cubin(module, arch).unwrap_or_else(|e| panic!("{e}"));
        for entry in module.entries() {
            assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
        }
    }
}
