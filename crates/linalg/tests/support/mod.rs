//! Shared helpers of the linalg GPU tests (`tests/{conv, conv_strip,
//! conv_tuning, matvec, transpose}.rs`): the device handle, seeds, random
//! inputs, the convolution's check against the CPU reference, NVRTC
//! prewarming of the disk cache, and one `#[test]` per call for tests
//! instantiated per element type.
#![allow(dead_code)]

use gpu_core::kernel::{warm_disk_cache, CacheWarmReport, DiskCache};
use gpu_core::{DeviceType, Element, Gpu, ModuleSource};
use linalg::conv::output_shape;
use linalg::policy::{strip_module, ConvPolicy, StripPolicy};
use linalg::{conv_cpu, ConvElement, ConvOptions};
use parprims_testkit::rng::random_vec;

/// One handle for every test of a binary: one module store, so each module
/// is compiled (or read from the disk cache) once, not once per test thread.
/// Tests share its stream; each waits for its own results.
pub fn gpu() -> &'static Gpu {
    static GPU: std::sync::OnceLock<Gpu> = std::sync::OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU"))
}

/// Proptest cases for GPU properties: PROPTEST_CASES if set, else 48.
pub fn gpu_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// A fresh seed per run, or `CONV_TEST_SEED`'s; printed with `binary`'s
/// name so that a failure can be replayed.
pub fn run_seed(binary: &str) -> u64 {
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
    eprintln!("{binary} tests: seed {seed} (set CONV_TEST_SEED to replay)");
    seed
}

/// `len` random values: floats in [−1, 1), integers in `integers`
/// (`[low, high)`).
pub fn random_input<T: Element>(len: usize, seed: u64, integers: (f64, f64)) -> Vec<T> {
    if T::IS_FLOAT {
        random_vec::<T>(len, seed, -1.0, 1.0)
    } else {
        random_vec::<T>(len, seed, integers.0, integers.1)
    }
}

/// Whether `a` and `b` are equal bit for bit.
pub fn same_bits<T: DeviceType>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// Whether every value is `T::poison()`, bit for bit: an output left
/// untouched.
pub fn all_poison<T: DeviceType>(values: &[T]) -> bool {
    let poison = [T::poison()];
    values
        .iter()
        .all(|v| same_bits(std::slice::from_ref(v), &poison))
}

/// `host` as a `rows × cols` matrix of more than 2^31 elements on the
/// device, or `None` (said on stderr) when the device has too little memory
/// for it: the tests past 2^31 elements skip there.
pub fn upload_past_2_pow_31<T: DeviceType>(
    gpu: &Gpu,
    rows: usize,
    cols: usize,
    host: &[T],
) -> Option<linalg::Matrix<T>> {
    assert!(rows * cols > 1 << 31, "{rows}×{cols} is not past 2^31");
    match linalg::Matrix::from_host(gpu, rows, cols, host) {
        Ok(matrix) => Some(matrix),
        Err(e) if e.is_out_of_memory() => {
            eprintln!("SKIPPED: not enough device memory for {rows}×{cols} ({e})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// The measured table's `TiledHalo` policy for `T` (the default on every
/// architecture today).
pub fn table_policy<T: ConvElement>() -> ConvPolicy {
    ConvPolicy::default_for::<T>((9, 0))
}

/// [`table_policy`] with the strip kernels off: `TiledHalo`'s block kernel
/// at every K (the reference the strip kernel must equal bit for bit).
pub fn block_kernel_only<T: ConvElement>() -> ConvPolicy {
    ConvPolicy {
        strip: None,
        strip_wide: None,
        ..table_policy::<T>()
    }
}

/// Compares a convolution's `got` with the CPU reference: integers exactly;
/// floats within `2·K²·ε·Σ|x·w|` per output (the FMA chain's error bound,
/// plus the reference's final rounding), where `Σ|x·w|` is the reference run
/// on the absolute values.
#[allow(clippy::too_many_arguments)]
pub fn check_conv_against_cpu<T: ConvElement>(
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
            let cols = output_shape(h, w, k, options.border).expect("valid").1;
            panic!(
                "{context}: output ({}, {}) is {:?}, expected {:?}",
                i / cols,
                i % cols,
                got[i],
                want[i]
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

/// Compiles `modules` for this device on every CPU thread at once into the
/// disk cache (`warm_disk_cache`), so a test's first calls load them instead
/// of compiling one after another (NVRTC takes seconds per module). Best
/// effort: `None` without NVRTC or a disk cache, and a module that fails
/// here is compiled (and its error reported) by the call that needs it.
pub fn prewarm(gpu: &Gpu, modules: &[ModuleSource]) -> Option<CacheWarmReport> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(modules.len().max(1));
    let arch = gpu.info().arch();
    warm_disk_cache(&DiskCache::from_env(), modules, &[arch.as_str()], threads).ok()
}

/// A block kernel's `module`, then the strip module of each of `strips`
/// (each once): what a convolution test prewarms.
pub fn conv_and_strip_modules<'s, T: ConvElement>(
    module: ModuleSource,
    strips: impl IntoIterator<Item = &'s StripPolicy>,
) -> Vec<ModuleSource> {
    let mut modules = vec![module];
    for t in strips {
        let module = strip_module::<T>(t);
        if !modules.iter().any(|m| m.name() == module.name()) {
            modules.push(module);
        }
    }
    modules
}

/// One `#[ignore = "needs a CUDA GPU"]` test per line, its body one call:
/// `name => call;` (attributes such as doc comments before the name).
#[allow(unused_macros)]
macro_rules! gpu_tests {
    ($($(#[$meta:meta])* $name:ident => $call:expr;)*) => {$(
        $(#[$meta])*
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            $call;
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use gpu_tests;

/// Calls `$f::<T>(args…)` for each type `T` listed, in order.
#[allow(unused_macros)]
macro_rules! each_type {
    ($f:ident $args:tt : $($t:ty),+ $(,)?) => {{
        $($f::<$t> $args;)+
    }};
}
#[allow(unused_imports)]
pub(crate) use each_type;
