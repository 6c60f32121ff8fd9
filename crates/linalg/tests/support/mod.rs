//! Shared helpers of the linalg GPU tests (`tests/{conv, conv_strip,
//! conv_register_tile, conv_tuning, matvec, transpose}.rs`): the device
//! handle, seeds, random inputs, the convolution's check against the CPU
//! reference, the case grid the `TiledHalo` kernels' tests share, NVRTC
//! prewarming of the disk cache, and one `#[test]` per call for tests
//! instantiated per element type.
#![allow(dead_code)]

use gpu_core::kernel::{warm_disk_cache, CacheWarmReport, DiskCache};
use gpu_core::{DeviceBuffer, DeviceType, Element, Gpu, ModuleSource};
use linalg::conv::{conv2d_tuned_with, output_shape};
use linalg::policy::{strip_module, ConvPolicy, StripPolicy};
use linalg::{
    conv_cpu, Border, ConvAlgorithm, ConvElement, ConvOptions, MatrixView, MatrixViewMut, Padding,
};
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
        register_tile: None,
        register_tile_wide: None,
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

/// One convolution case of the kernel tests: the image (`h × w`, at element `offset` of a
/// larger buffer: unaligned rows when `offset` is not a multiple of the
/// vector width), the `k × k` filter and the options.
pub struct ConvCase<'a, T> {
    pub image: &'a [T],
    pub h: usize,
    pub w: usize,
    pub filter: &'a [T],
    pub k: usize,
    pub offset: usize,
    pub options: &'a ConvOptions,
}

impl<'a, T: ConvElement> ConvCase<'a, T> {
    /// A case on an `h × w` image at the start of its buffer (aligned rows).
    pub fn aligned(
        image: &'a [T],
        (h, w): (usize, usize),
        filter: &'a [T],
        k: usize,
        options: &'a ConvOptions,
    ) -> Self {
        ConvCase {
            image,
            h,
            w,
            filter,
            k,
            offset: 0,
            options,
        }
    }

    /// Runs the case with `tuning`, the output inside a poisoned buffer
    /// (nothing around it may be written); returns the output.
    pub fn run(&self, gpu: &Gpu, tuning: &ConvPolicy, context: &str) -> Vec<T> {
        let ConvCase {
            image,
            h,
            w,
            filter,
            k,
            offset,
            options,
        } = *self;
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

    /// Runs the case with `tuning` and with `block_tuning`: the two outputs
    /// must be equal bit for bit. Returns `tuning`'s.
    pub fn run_against_block(
        &self,
        gpu: &Gpu,
        tuning: &ConvPolicy,
        block_tuning: &ConvPolicy,
        context: &str,
    ) -> Vec<T> {
        let got = self.run(gpu, tuning, context);
        let block_result = self.run(gpu, block_tuning, context);
        if let Some(i) = (0..got.len())
            .find(|&i| got[i].to_f64().to_bits() != block_result[i].to_f64().to_bits())
        {
            panic!(
                "{context}: output {i} is {:?}, the block kernel gives {:?}",
                got[i], block_result[i]
            );
        }
        got
    }

    /// [`check_conv_against_cpu`] of `got`, this case's output.
    pub fn check_against_cpu(&self, got: &[T], context: &str) {
        let (h, w, k) = (self.h, self.w, self.k);
        check_conv_against_cpu(got, self.image, h, w, self.filter, k, self.options, context);
    }
}

/// The case grid of a `TiledHalo` kernel's tests: for each kernel policy of
/// `kernels` (run as `with_kernel` makes it a `ConvPolicy`), each `(h, w,
/// k)` of `shapes` and each border
/// (`Valid` only where the filter fits), with the padding, flip, block and
/// image offset (one of `offsets`) changing from case to case, the kernel
/// policy's output equals `block_tuning`'s bit for bit and the CPU reference
/// within the FMA bound, and nothing outside the output is written. Each
/// shape's image and filter are drawn once and serve every policy and
/// border. Integer inputs span ±2·10⁹ (the products wrap, and the results
/// are exact anyway).
pub fn kernel_policies_against_block_and_cpu<T: ConvElement, P: std::fmt::Debug + Copy>(
    gpu: &Gpu,
    seed: u64,
    kernels: &[P],
    with_kernel: impl Fn(P) -> ConvPolicy,
    block_tuning: &ConvPolicy,
    shapes: &[(usize, usize, usize)],
    offsets: &[usize],
) {
    let range = (-2.0e9, 2.0e9);
    let inputs: Vec<(Vec<T>, Vec<T>)> = shapes
        .iter()
        .enumerate()
        .map(|(shape_index, &(h, w, k))| {
            (
                random_input::<T>(h * w, seed ^ ((shape_index as u64) << 8), range),
                random_input::<T>(k * k, seed ^ 0x77 ^ k as u64, range),
            )
        })
        .collect();
    let mut case = 0usize;
    for &kernel in kernels {
        let label = format!("{kernel:?}");
        let tuning = with_kernel(kernel);
        for (&(h, w, k), (image, filter)) in shapes.iter().zip(&inputs) {
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
                    "{} {h}×{w} K={k} {border:?} {:?} flip={} block={block:?} offset={offset} {label}",
                    T::SUFFIX,
                    options.padding,
                    options.flip
                );
                let case = ConvCase {
                    image,
                    h,
                    w,
                    filter,
                    k,
                    offset,
                    options: &options,
                };
                let got = case.run_against_block(gpu, &tuning, block_tuning, &context);
                case.check_against_cpu(&got, &context);
            }
        }
    }
}
