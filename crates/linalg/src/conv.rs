//! 2-D convolution of an `H × W` image with a `K × K` filter (`K` = 1 … 31).
//!
//! # What it computes
//!
//! Cross-correlation, as the lab defines it, for every output `(i, j)`:
//!
//! ```text
//! out[i][j] = Σ_{u,v < K} f[u][v] · image(i + u − a, j + v − a)
//! ```
//!
//! With [`ConvOptions::flip`] the filter is rotated by 180° first
//! (`f[K−1−u][K−1−v]`): true convolution. The anchor `a` and the output shape
//! come from the [`Border`] ([`anchor`], [`output_shape`]):
//!
//! | border | output shape | anchor `a` |
//! |---|---|---|
//! | [`Border::Valid`] | `(H−K+1) × (W−K+1)` (needs `K ≤ H`, `K ≤ W`) | 0 |
//! | [`Border::Same`]  | `H × W` | `K/2` (`(K−1)/2` with `flip`) |
//! | [`Border::Full`]  | `(H+K−1) × (W+K−1)` | `K − 1` |
//!
//! `Same` follows `scipy.ndimage`: `correlate(image, f, mode)` anchors the
//! filter at `K/2` (rounded down, so an even filter reaches one sample further
//! up/left than down/right), and `convolve(image, f, mode)` equals correlation
//! with the rotated filter anchored at `(K−1)/2`. The two anchors differ only
//! for even `K`. Samples `image(r, c)` outside the image are defined by the
//! [`Padding`] (never read by `Valid`).
//!
//! Arithmetic is in the element type: `f32`/`f64` with fused multiply-adds in
//! a fixed order (deterministic; compare with a tolerance, the CPU reference
//! [`crate::conv_cpu`] accumulates in `f64`); `i32` wraps (exact).
//!
//! # Algorithms ([`ConvAlgorithm`])
//!
//! | algorithm | filter in | image reads | per thread |
//! |---|---|---|---|
//! | `Global` (lab gpu-gm) | global | global (L1/L2) | 1 output |
//! | `SharedFilter` (lab gpu-sm) | shared | global (L1/L2) | 1 output |
//! | `ConstantFilter` | `__constant__` | global (L1/L2) | 1 output |
//! | `TiledHalo` (default), block kernel | registers / shared | one coalesced tile + halo in shared memory | a column of R outputs |
//! | `TiledHalo` (default), strip kernel ([`strip`], `K ≤ 7` when [`TiledTuning::strip`] is set) | registers | each row once per warp strip, vector loads, neighbours' columns by shuffles | VEC outputs per row, walking down S rows |
//!
//! All: one launch, `K²` multiply-adds per output (work `OH·OW·K²`), global
//! memory traffic near `(H·W + OH·OW + K²)` elements ([`conv_bytes_moved`]),
//! not in place (the output may not overlap the image or the filter),
//! deterministic. Shared memory and bank behaviour are in each kernel's header
//! in `kernels/cuda/conv.cu` and `kernels/cuda/conv_strip.cu`. The strip and
//! block kernels add each output's products in the same order: their results
//! are identical.
//!
//! # ConstantFilter and concurrency
//!
//! The constant filter is one `__constant__` array per module, shared by every
//! [`Gpu`] handle on the context. A call copies the caller's filter into it on
//! its own stream (stream-ordered, device to device), then launches. Calls from
//! the same stream are ordered by the stream. To keep calls from *different*
//! streams from overwriting a filter that a queued kernel still reads, the
//! copy-and-launch runs under a process-wide lock that remembers the stream of
//! the last call; a call from another stream first waits (on the host) for that
//! stream to drain. So `ConstantFilter` is correct from any number of threads
//! and streams, and serialised across streams (use `TiledHalo` or
//! `SharedFilter` for concurrent work).

use std::any::Any;
use std::sync::{Arc, Mutex};

use gpu_core::launch::grid_2d;
use gpu_core::{
    Element, ElementType, Error, Gpu, Kernel, KernelArgs, LaunchConfig, ModuleSource, Result,
};

use crate::matrix::{check_shape, Matrix, MatrixView, MatrixViewMut};

#[path = "conv_strip.rs"]
pub mod strip;
pub use strip::{StripStores, StripTuning, STRIP_CANDIDATES, STRIP_MAX_K};

/// Largest filter side.
pub const CONV_MAX_K: usize = 31;

/// Thread-block shapes `(x, y)` every algorithm accepts: the lab's sweep
/// (8 × 8, 16 × 16, 32 × 32) and 32 × 8 (one warp per output row segment of
/// 128 bytes for `f32`; the `TiledHalo` default).
pub const CONV_BLOCKS: [(u32, u32); 4] = [(8, 8), (16, 16), (32, 32), (32, 8)];

/// Which outputs exist and where the filter sits (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Border {
    /// Only outputs whose window lies inside the image (the lab's choice):
    /// `(H−K+1) × (W−K+1)`. Never reads padding.
    #[default]
    Valid,
    /// One output per input pixel, `H × W`, anchored as `scipy.ndimage`.
    Same,
    /// Every output whose window touches the image: `(H+K−1) × (W+K−1)`.
    Full,
}

/// What `image(r, c)` is outside the image, per axis, with SciPy's
/// (`scipy.ndimage`) meanings. For a row `a b c d`:
///
/// | mode | SciPy name | left … \| a b c d \| … right |
/// |---|---|---|
/// | `Zero`    | `'constant'` (cval 0) | `0 0 0 0 \| a b c d \| 0 0 0 0` |
/// | `Clamp`   | `'nearest'` | `a a a a \| a b c d \| d d d d` |
/// | `Reflect` | `'reflect'` | `d c b a \| a b c d \| d c b a` (edge repeated; period 2n) |
/// | `Wrap`    | `'wrap'` | `a b c d \| a b c d \| a b c d` (period n) |
///
/// The extension continues as far as the filter reaches (a 31-wide filter on a
/// 1-pixel-wide image works in every mode). Rows and columns are padded
/// independently; corners follow from applying the rule on both axes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Zeros.
    #[default]
    Zero = 0,
    /// The nearest edge sample.
    Clamp = 1,
    /// Mirror about the edge, the edge sample repeated.
    Reflect = 2,
    /// Periodic.
    Wrap = 3,
}

impl Padding {
    /// Every mode, for tests and sweeps.
    pub const ALL: [Padding; 4] = [
        Padding::Zero,
        Padding::Clamp,
        Padding::Reflect,
        Padding::Wrap,
    ];
}

impl Border {
    /// Every border mode, for tests and sweeps.
    pub const ALL: [Border; 3] = [Border::Valid, Border::Same, Border::Full];
}

/// How the GPU computes the convolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConvAlgorithm {
    /// One thread per output; image and filter read from global memory (the
    /// lab's gpu-gm).
    Global,
    /// One thread per output; the block stages the filter in shared memory
    /// first (the lab's gpu-sm).
    SharedFilter,
    /// One thread per output; the filter in `__constant__` memory (uniform
    /// reads are broadcast by the constant cache). Serialised across streams:
    /// see the module docs.
    ConstantFilter,
    /// The input tile and its halo staged in shared memory with coalesced
    /// loads, padding applied while loading; each thread computes a column of
    /// several outputs, reusing each loaded row for every output it touches;
    /// the filter in registers (small `K`) or shared memory.
    #[default]
    TiledHalo,
}

impl ConvAlgorithm {
    /// Every algorithm, for tests and sweeps.
    pub const ALL: [ConvAlgorithm; 4] = [
        ConvAlgorithm::Global,
        ConvAlgorithm::SharedFilter,
        ConvAlgorithm::ConstantFilter,
        ConvAlgorithm::TiledHalo,
    ];

    /// A short name for tables (`tiled_halo`).
    pub fn name(self) -> &'static str {
        match self {
            ConvAlgorithm::Global => "global",
            ConvAlgorithm::SharedFilter => "shared_filter",
            ConvAlgorithm::ConstantFilter => "constant_filter",
            ConvAlgorithm::TiledHalo => "tiled_halo",
        }
    }
}

/// Options of [`conv2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvOptions {
    /// Output extent and anchor.
    pub border: Border,
    /// Out-of-image samples (ignored by [`Border::Valid`]).
    pub padding: Padding,
    /// Rotate the filter by 180°: true convolution instead of correlation.
    pub flip: bool,
    /// Which kernel.
    pub algorithm: ConvAlgorithm,
    /// Threads per block `(x, y)`, one of [`CONV_BLOCKS`].
    pub block: (u32, u32),
}

impl Default for ConvOptions {
    /// `Valid`, `Zero`, correlation, `TiledHalo`, block [`DEFAULT_BLOCK`].
    fn default() -> Self {
        ConvOptions {
            border: Border::Valid,
            padding: Padding::Zero,
            flip: false,
            algorithm: ConvAlgorithm::TiledHalo,
            block: DEFAULT_BLOCK,
        }
    }
}

/// The default block: 32 × 8 threads (with `TiledHalo`, a 32 × 64 output tile
/// for 4-byte types). Not yet measured on the H100; chosen so a warp reads
/// 128 contiguous bytes per tile row and 256-thread blocks leave room for
/// several resident blocks per SM to overlap loads with compute.
pub const DEFAULT_BLOCK: (u32, u32) = (32, 8);

/// `TiledHalo` tuning for one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledTuning {
    /// Outputs per thread (a column of consecutive rows), `R`.
    pub rows_per_thread: u32,
    /// Largest `K` whose filter is held in registers (larger `K`: shared).
    pub reg_filter_max_k: u32,
    /// Tile loads a thread issues before storing them to shared memory.
    pub load_batch: u32,
    /// `Some`: filters up to [`STRIP_MAX_K`] use the strip kernel
    /// ([`strip`]: one warp per vertical strip, rows walked once through
    /// registers) instead of the block kernel; larger filters always use the
    /// block kernel (`rows_per_thread`, `reg_filter_max_k`, `load_batch`).
    pub strip: Option<StripTuning>,
    /// `Some`: the strip tuning for `K` from [`STRIP_WIDE_MIN_K`] to
    /// [`STRIP_MAX_K`] instead of `strip` (wider filters hold more
    /// accumulators and filter taps in registers and favour other settings).
    pub strip_wide: Option<StripTuning>,
}

/// Smallest `K` that [`TiledTuning::strip_wide`] applies to.
pub const STRIP_WIDE_MIN_K: usize = 4;

/// Largest `K` with a compile-time-specialised `TiledHalo` kernel (loops
/// unrolled); larger filters use the run-time-`K` kernel.
pub const TILED_SPECIALISED_MAX_K: usize = 7;

/// `TiledHalo` tuning per element type.
///
/// `f32`: the strip kernel, chosen from the `tests/conv_tuning.rs` sweeps on
/// an NVIDIA H100 80GB HBM3 (8192² Valid, headline bytes `4·H·W +
/// 4·outputs`; the block kernel measures K = 3 ≈ 0.246 ms = 0.73 of the
/// ceiling, K = 5 ≈ 0.307 ms = 0.59). The last sweep (2026-11-23, copy
/// ceiling 2978 GB/s, logs in docs/results/tuning-2026-11-23/
/// conv_tuning-3.log):
/// - K ≤ 3: 4 elements per lane, 2 rows in flight, one-wave strips, vector
///   stores ([`StripStores::Vector`]), 4 warps per block: K = 3 0.2242 ms,
///   2394 GB/s = 0.804. The previous default (scalar stores, 8 warps)
///   measured 0.2250 ms in the same run (0.2253–0.2277 ms over four sweeps):
///   the difference is within run-to-run noise. Vector stores at 8 / 16 / 32
///   warps 0.2256 / 0.2300 / 0.2390 ms; staged stores 0.2458 ms; 1 row in
///   flight 0.2260 ms; strips of 32/64/128 rows 0.2372/0.2755/0.3375 ms; 2
///   elements per lane 0.2663 ms; 1 per lane 0.3233 ms.
/// - K 4 … 7 (`strip_wide`): 4 per lane, 1 row in flight, vector stores, 8
///   warps per block: K = 5 0.2225 ms, 2411 GB/s = 0.809, against 0.2527
///   ms (0.713) for the previous default (staged stores, 2 rows in flight,
///   32 warps). With 2 rows in flight vector stores took 0.2783 ms: K = 5
///   holds 25 filter taps and 20 accumulators in registers, and the second
///   row in flight costs more than it hides. K = 4, 6, 7 use the same
///   tuning unmeasured.
///
/// The block kernel (`rows_per_thread`, `reg_filter_max_k`, `load_batch`)
/// serves K > 7, and `f64` and `i32` (strip kernel not yet measured for
/// them). Its values are not yet measured on the H100: chosen from register
/// budgets (blocks of up to 1024 threads allow 64 registers per thread: `R`
/// accumulators + `K` row values + `K²` filter registers must fit; checked
/// with `cuobjdump -res-usage` on the NVRTC 13.0 sm_90 cubin, with
/// `load_batch` 8 at the time: no spills except 3 registers in K = 5 for
/// 4-byte types) and so that with the default 32 × 8 block one batch of loads
/// covers a K ≤ 5 tile (`load_batch` ≥ tile elements / 256 threads:
/// 66·34/256 ≈ 8.8 for f32, K = 3).
pub const TILED_TUNING: [(ElementType, TiledTuning); 3] = [
    (
        ElementType::F32,
        TiledTuning {
            rows_per_thread: 8,
            reg_filter_max_k: 5,
            load_batch: 10,
            strip: Some(StripTuning {
                elems_per_lane: 4,
                prefetch_rows: 2,
                strip_rows: 0,
                stores: StripStores::Vector,
                max_registers: 0,
                warps: 4,
            }),
            strip_wide: Some(StripTuning {
                elems_per_lane: 4,
                prefetch_rows: 1,
                strip_rows: 0,
                stores: StripStores::Vector,
                max_registers: 0,
                warps: 8,
            }),
        },
    ),
    (
        ElementType::I32,
        TiledTuning {
            rows_per_thread: 8,
            reg_filter_max_k: 5,
            load_batch: 10,
            strip: None,
            strip_wide: None,
        },
    ),
    (
        ElementType::F64,
        TiledTuning {
            rows_per_thread: 4,
            reg_filter_max_k: 3,
            load_batch: 6,
            strip: None,
            strip_wide: None,
        },
    ),
];

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
}

/// The element types [`conv2d`] supports: `f32`, `f64`, `i32` (wrapping).
pub trait ConvElement: Element + sealed::Sealed {
    /// The CPU reference's accumulator (`f64` for floats, `i32` wrapping).
    type Acc: Copy;
    /// The type as an [`ElementType`] (tuning lookup).
    const TYPE: ElementType;
    /// Zero accumulator.
    fn acc_zero() -> Self::Acc;
    /// `acc + x·w` in the accumulator.
    fn acc_mul_add(acc: Self::Acc, x: Self, w: Self) -> Self::Acc;
    /// The accumulator rounded back to the element.
    fn acc_finish(acc: Self::Acc) -> Self;
}

impl ConvElement for f32 {
    type Acc = f64;
    const TYPE: ElementType = ElementType::F32;
    fn acc_zero() -> f64 {
        0.0
    }
    fn acc_mul_add(acc: f64, x: f32, w: f32) -> f64 {
        acc + x as f64 * w as f64
    }
    fn acc_finish(acc: f64) -> f32 {
        acc as f32
    }
}

impl ConvElement for f64 {
    type Acc = f64;
    const TYPE: ElementType = ElementType::F64;
    fn acc_zero() -> f64 {
        0.0
    }
    fn acc_mul_add(acc: f64, x: f64, w: f64) -> f64 {
        acc + x * w
    }
    fn acc_finish(acc: f64) -> f64 {
        acc
    }
}

impl ConvElement for i32 {
    type Acc = i32;
    const TYPE: ElementType = ElementType::I32;
    fn acc_zero() -> i32 {
        0
    }
    fn acc_mul_add(acc: i32, x: i32, w: i32) -> i32 {
        acc.wrapping_add(x.wrapping_mul(w))
    }
    fn acc_finish(acc: i32) -> i32 {
        acc
    }
}

/// The `TiledHalo` tuning for `T`.
pub fn tiled_tuning<T: ConvElement>() -> TiledTuning {
    TILED_TUNING
        .iter()
        .find(|(t, _)| *t == T::TYPE)
        .map(|&(_, tuning)| tuning)
        .expect("TILED_TUNING has an entry for every ConvElement type")
}

fn check_filter_side(k: usize) -> Result<()> {
    if !(1..=CONV_MAX_K).contains(&k) {
        return Err(Error::invalid(
            "filter",
            format!("K = {k}: the filter side must be 1 to {CONV_MAX_K}"),
        ));
    }
    Ok(())
}

/// The output shape for an `h × w` image, a `k × k` filter and `border`.
///
/// Errors: `k` outside 1 … 31, a zero image dimension, `Valid` with `k > h` or
/// `k > w`, `Full` overflowing `usize`.
pub fn output_shape(h: usize, w: usize, k: usize, border: Border) -> Result<(usize, usize)> {
    check_filter_side(k)?;
    if h == 0 || w == 0 {
        return Err(Error::Shape(format!("image {h}×{w} has a zero dimension")));
    }
    match border {
        Border::Valid => {
            if k > h || k > w {
                return Err(Error::Shape(format!(
                    "a {k}×{k} filter does not fit in a {h}×{w} image with Border::Valid"
                )));
            }
            Ok((h - k + 1, w - k + 1))
        }
        Border::Same => Ok((h, w)),
        Border::Full => match (h.checked_add(k - 1), w.checked_add(k - 1)) {
            (Some(rows), Some(cols)) => Ok((rows, cols)),
            _ => Err(Error::Shape(format!(
                "a Full {h}×{w} output with K = {k} overflows"
            ))),
        },
    }
}

/// The anchor `a`: output `(i, j)` reads image rows `i − a … i − a + K − 1`
/// (see the module docs). `Valid` 0, `Full` `K − 1`, `Same` `K/2`, or
/// `(K−1)/2` with `flip` (SciPy's `correlate` / `convolve`).
pub fn anchor(k: usize, border: Border, flip: bool) -> usize {
    match border {
        Border::Valid => 0,
        Border::Full => k.saturating_sub(1),
        Border::Same if flip => k.saturating_sub(1) / 2,
        Border::Same => k / 2,
    }
}

/// Bytes a convolution moves at least: the image read once, the outputs
/// written once and the filter read once, `elem_bytes · (H·W + OH·OW + K²)`
/// (`4·H·W + 4·outputs + 4·K²` for `f32`). The benchmark's GB/s use this.
/// Shapes [`output_shape`] rejects count no outputs.
pub fn conv_bytes_moved(h: usize, w: usize, k: usize, border: Border, elem_bytes: usize) -> u64 {
    let outputs = output_shape(h, w, k, border)
        .map(|(rows, cols)| rows as u64 * cols as u64)
        .unwrap_or(0);
    elem_bytes as u64 * (h as u64 * w as u64 + outputs + k as u64 * k as u64)
}

/// Every check [`conv2d`] makes before touching the device, as a pure
/// function of shapes and options (`T` gives the byte counts).
///
/// Checks: image dimensions ≥ 1 and addressable; the filter square with side
/// 1 … 31; `K ≤ H` and `K ≤ W` for `Valid`; the output shape equal to
/// [`output_shape`]; the block one of [`CONV_BLOCKS`]; the `TiledHalo` tile
/// within the largest shared memory a block can have on any supported GPU
/// (227 KiB; the device's own limit is checked again at launch). Returns the
/// output shape.
pub fn validate_conv<T: ConvElement>(
    image: (usize, usize),
    filter: (usize, usize),
    output: (usize, usize),
    options: &ConvOptions,
) -> Result<(usize, usize)> {
    validate_conv_with::<T>(image, filter, output, options, &tiled_tuning::<T>())
}

/// [`validate_conv`] for a `TiledHalo` tuning other than the table's
/// ([`conv2d_tuned_with`]); also checks the tuning ([`check_tuning`]).
pub fn validate_conv_with<T: ConvElement>(
    image: (usize, usize),
    filter: (usize, usize),
    output: (usize, usize),
    options: &ConvOptions,
    tuning: &TiledTuning,
) -> Result<(usize, usize)> {
    check_tuning(tuning)?;
    for strip in tuning.strip.iter().chain(tuning.strip_wide.iter()) {
        strip::check_strip_tuning::<T>(strip)?;
    }
    check_shape::<T>("image", image.0, image.1)?;
    if filter.0 != filter.1 {
        return Err(Error::Shape(format!(
            "the filter must be square, got {}×{}",
            filter.0, filter.1
        )));
    }
    let k = filter.0;
    check_filter_side(k)?;
    let expected = output_shape(image.0, image.1, k, options.border)?;
    check_shape::<T>("output", expected.0, expected.1)?;
    if output != expected {
        return Err(Error::Shape(format!(
            "output is {}×{}, but a {}×{} image with a {k}×{k} filter and {:?} borders gives {}×{}",
            output.0, output.1, image.0, image.1, options.border, expected.0, expected.1
        )));
    }
    if !CONV_BLOCKS.contains(&options.block) {
        return Err(Error::invalid(
            "block",
            format!(
                "{}×{} is not one of {:?}",
                options.block.0, options.block.1, CONV_BLOCKS
            ),
        ));
    }
    let shared = shared_bytes_with::<T>(options.algorithm, options.block, k, tuning);
    if shared > MAX_SHARED_PER_BLOCK {
        return Err(Error::invalid(
            "block",
            format!(
                "{}×{} with K = {k} needs {shared} bytes of shared memory per block (at most {MAX_SHARED_PER_BLOCK})",
                options.block.0, options.block.1
            ),
        ));
    }
    Ok(expected)
}

/// Checks a `TiledHalo` tuning: `rows_per_thread` 1 … 16, `reg_filter_max_k`
/// 0 … [`TILED_SPECIALISED_MAX_K`], `load_batch` 1 … 32.
pub fn check_tuning(tuning: &TiledTuning) -> Result<()> {
    if !(1..=16).contains(&tuning.rows_per_thread) {
        return Err(Error::invalid(
            "tuning",
            format!("rows_per_thread {} must be 1 to 16", tuning.rows_per_thread),
        ));
    }
    if tuning.reg_filter_max_k as usize > TILED_SPECIALISED_MAX_K {
        return Err(Error::invalid(
            "tuning",
            format!(
                "reg_filter_max_k {} must be at most {TILED_SPECIALISED_MAX_K}",
                tuning.reg_filter_max_k
            ),
        ));
    }
    if !(1..=32).contains(&tuning.load_batch) {
        return Err(Error::invalid(
            "tuning",
            format!("load_batch {} must be 1 to 32", tuning.load_batch),
        ));
    }
    Ok(())
}

/// The largest dynamic shared memory per block on the GPUs parprims targets
/// (sm_80: 163 KiB, sm_90: 227 KiB). The device's own limit is checked at
/// launch.
const MAX_SHARED_PER_BLOCK: usize = 227 * 1024;

/// The row pitch (elements) of the `TiledHalo` shared tile: the smallest value
/// ≥ `block_x + k − 1` for which the `32 / block_x` row groups of one warp
/// start `block_x` elements apart modulo the 32 banks, so a warp's tile reads
/// cover distinct banks (4-byte elements; 8-byte elements need two
/// wavefronts anyway and get the analogous spacing). Thread row `y` starts at
/// tile row `y·R`, so the condition is `R·pitch ≡ block_x (mod 32 / words)`.
pub fn tile_stride(block_x: u32, k: usize, rows_per_thread: u32, elem_bytes: usize) -> usize {
    let width = block_x as usize + k - 1;
    if block_x >= 32 {
        return width;
    }
    let words = elem_bytes.div_ceil(4).max(1);
    let modulus = (32 / words).max(1);
    let target = block_x as usize % modulus;
    (width..width + 32)
        .find(|&pitch| (rows_per_thread as usize * pitch) % modulus == target)
        .unwrap_or(width)
}

/// Dynamic shared memory per block, bytes, that `algorithm` asks for.
pub fn shared_bytes<T: ConvElement>(
    algorithm: ConvAlgorithm,
    block: (u32, u32),
    k: usize,
) -> usize {
    shared_bytes_with::<T>(algorithm, block, k, &tiled_tuning::<T>())
}

/// [`shared_bytes`] under a given `TiledHalo` tuning.
pub fn shared_bytes_with<T: ConvElement>(
    algorithm: ConvAlgorithm,
    block: (u32, u32),
    k: usize,
    tuning: &TiledTuning,
) -> usize {
    match algorithm {
        ConvAlgorithm::Global | ConvAlgorithm::ConstantFilter => 0,
        ConvAlgorithm::SharedFilter => k * k * T::BYTES,
        ConvAlgorithm::TiledHalo if uses_strip(k, tuning) => {
            let strip = strip_for(k, tuning).expect("uses_strip checked there is one");
            strip::strip_warps(block, &strip)
                .map(|warps| strip::strip_shared_bytes::<T>(&strip, warps))
                .unwrap_or(0)
        }
        ConvAlgorithm::TiledHalo => {
            let rows = block.1 as usize * tuning.rows_per_thread as usize + k - 1;
            let pitch = tile_stride(block.0, k, tuning.rows_per_thread, T::BYTES);
            (rows * pitch + k * k) * T::BYTES
        }
    }
}

/// Whether `TiledHalo` with filter side `k` runs the strip kernel.
pub fn uses_strip(k: usize, tuning: &TiledTuning) -> bool {
    strip_for(k, tuning).is_some()
}

/// The strip tuning `TiledHalo` uses for filter side `k`: none above
/// [`STRIP_MAX_K`]; [`TiledTuning::strip_wide`] (if set) from
/// [`STRIP_WIDE_MIN_K`]; else [`TiledTuning::strip`].
pub fn strip_for(k: usize, tuning: &TiledTuning) -> Option<StripTuning> {
    if k > STRIP_MAX_K {
        None
    } else if k >= STRIP_WIDE_MIN_K && tuning.strip_wide.is_some() {
        tuning.strip_wide
    } else {
        tuning.strip
    }
}

/// Name of the `__constant__` filter array in the conv modules.
const CONSTANT_FILTER_SYMBOL: &str = "conv_constant_filter";

const ENTRY_PARAMS: &str = "const conv_t* img, const conv_t* filt, conv_t* out, i64 H, i64 W, \
     i64 OH, i64 OW, i32 K, i32 pad, i32 padding, i32 flip, i32 stride";

/// The entry point `algorithm` uses for `T` and filter side `k`.
pub fn conv_entry<T: ConvElement>(algorithm: ConvAlgorithm, k: usize) -> String {
    let sfx = T::SUFFIX;
    match algorithm {
        ConvAlgorithm::TiledHalo if k <= TILED_SPECIALISED_MAX_K => {
            format!("conv_tiled_k{k}_{sfx}")
        }
        ConvAlgorithm::TiledHalo => format!("conv_tiled_generic_{sfx}"),
        other => format!("conv_{}_{sfx}", other.name()),
    }
}

/// The conv module for `T`: every algorithm's entry points (one module per
/// type, so one `__constant__` filter per type and context).
pub fn conv_module<T: ConvElement>() -> ModuleSource {
    conv_module_with::<T>(&tiled_tuning::<T>())
}

/// The name of [`conv_module_with`]'s module: it depends on the block
/// kernel's fields only, and names one source.
fn conv_module_name<T: ConvElement>(tuning: &TiledTuning) -> String {
    let base = tiled_tuning::<T>();
    let block_fields = |t: &TiledTuning| (t.rows_per_thread, t.reg_filter_max_k, t.load_batch);
    if block_fields(tuning) == block_fields(&base) {
        format!("linalg_conv_{}", T::SUFFIX)
    } else {
        format!(
            "linalg_conv_{}_r{}_f{}_b{}",
            T::SUFFIX,
            tuning.rows_per_thread,
            tuning.reg_filter_max_k,
            tuning.load_batch
        )
    }
}

/// A loaded conv kernel, kept per context ([`stored_kernel`]).
struct StoredKernel {
    context: Arc<dyn Any + Send + Sync>,
    module: String,
    entry: String,
    kernel: Kernel,
    /// Resident blocks per SM by (threads, dynamic shared bytes).
    resident: Vec<((u32, usize), u32)>,
}

/// Loaded conv kernels, process-wide. Getting a kernel through `Gpu::module`
/// builds the module source (20–35 KB) and hashes it on every call: tens of
/// microseconds of host time that the GPU waits through between
/// back-to-back convolutions (and that CUDA-event timings count). A lookup
/// here costs well under a microsecond. Module names determine their source
/// (they encode the element type and every compile-time tuning field).
static STORED_KERNELS: Mutex<Vec<StoredKernel>> = Mutex::new(Vec::new());

/// Entries kept before those of other contexts are dropped.
const MAX_STORED_KERNELS: usize = 64;

fn same_context(stored: &StoredKernel, gpu: &Gpu) -> bool {
    std::ptr::eq(
        Arc::as_ptr(&stored.context) as *const u8,
        Arc::as_ptr(gpu.cudarc_context()) as *const u8,
    )
}

/// The kernel `entry` of the module named `module_name` (built by `source`
/// only when it is not stored yet) on `gpu`'s context and, with `occupancy
/// = Some((threads, shared bytes))`, its resident blocks per SM (else 0).
fn stored_kernel(
    gpu: &Gpu,
    module_name: &str,
    entry: &str,
    source: impl FnOnce() -> ModuleSource,
    occupancy: Option<(u32, usize)>,
) -> Result<(Kernel, u32)> {
    let lock = || {
        STORED_KERNELS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    {
        let store = lock();
        if let Some(stored) = store
            .iter()
            .find(|s| s.entry == entry && s.module == module_name && same_context(s, gpu))
        {
            match occupancy {
                None => return Ok((stored.kernel.clone(), 0)),
                Some(key) => {
                    if let Some(&(_, resident)) = stored.resident.iter().find(|r| r.0 == key) {
                        return Ok((stored.kernel.clone(), resident));
                    }
                }
            }
        }
    }
    // Not stored: load without holding the lock (a first compile takes
    // seconds; Gpu::module serialises loading per context itself).
    let kernel = gpu.kernel(&source(), entry)?;
    let resident = match occupancy {
        Some((threads, shared)) => kernel.resident_blocks_per_sm(threads, shared)?,
        None => 0,
    };
    let mut store = lock();
    if store.len() >= MAX_STORED_KERNELS {
        store.retain(|s| same_context(s, gpu));
        if store.len() >= MAX_STORED_KERNELS {
            store.clear();
        }
    }
    match store
        .iter_mut()
        .find(|s| s.entry == entry && s.module == module_name && same_context(s, gpu))
    {
        Some(stored) => {
            if let Some(key) = occupancy {
                if !stored.resident.iter().any(|r| r.0 == key) {
                    stored.resident.push((key, resident));
                }
            }
        }
        None => {
            let context: Arc<dyn Any + Send + Sync> = gpu.cudarc_context().clone();
            store.push(StoredKernel {
                context,
                module: module_name.to_owned(),
                entry: entry.to_owned(),
                kernel: kernel.clone(),
                resident: occupancy.map(|key| (key, resident)).into_iter().collect(),
            });
        }
    }
    Ok((kernel, resident))
}

/// The conv module for `T` built with `tuning` (named after it when it is
/// not the table's, so each tuning is its own module and cache entry).
pub fn conv_module_with<T: ConvElement>(tuning: &TiledTuning) -> ModuleSource {
    let name = conv_module_name::<T>(tuning);
    let direct = |source: &str| {
        format!("conv_direct<{source}>(img, filt, out, H, W, OH, OW, K, pad, padding, flip)")
    };
    let mut module = ModuleSource::new(name)
        .element::<T>("conv_t")
        .define("CONV_ROWS_PER_THREAD", tuning.rows_per_thread)
        .define("CONV_REG_FILTER_MAX_K", tuning.reg_filter_max_k)
        .define("CONV_LOAD_BATCH", tuning.load_batch)
        .source(parprims_kernels::CONV)
        .entry(
            conv_entry::<T>(ConvAlgorithm::Global, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_GLOBAL"),
            Some(1024),
        )
        .entry(
            conv_entry::<T>(ConvAlgorithm::SharedFilter, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_SHARED"),
            Some(1024),
        )
        .entry(
            conv_entry::<T>(ConvAlgorithm::ConstantFilter, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_CONSTANT"),
            Some(1024),
        );
    for k in 1..=TILED_SPECIALISED_MAX_K {
        module = module.entry(
            conv_entry::<T>(ConvAlgorithm::TiledHalo, k),
            ENTRY_PARAMS,
            &format!(
                "conv_tiled<{k}>(img, filt, out, H, W, OH, OW, K, pad, padding, flip, stride)"
            ),
            Some(1024),
        );
    }
    module.entry(
        conv_entry::<T>(ConvAlgorithm::TiledHalo, CONV_MAX_K),
        ENTRY_PARAMS,
        "conv_tiled<0>(img, filt, out, H, W, OH, OW, K, pad, padding, flip, stride)",
        Some(1024),
    )
}

/// Launch geometry for a validated problem.
///
/// Direct methods: one thread per output, a block covers `bx × by` outputs;
/// `TiledHalo`: a block covers `bx` columns × `by·R` rows of outputs. Grid x
/// runs over column tiles, y (spilling into z) over row tiles.
fn launch_config<T: ConvElement>(
    output: (usize, usize),
    k: usize,
    options: &ConvOptions,
    tuning: &TiledTuning,
) -> Result<LaunchConfig> {
    let per_thread_rows = match options.algorithm {
        ConvAlgorithm::TiledHalo => tuning.rows_per_thread,
        _ => 1,
    };
    let shared = shared_bytes_with::<T>(options.algorithm, options.block, k, tuning);
    grid_2d(
        output.0 as u64,
        output.1 as u64,
        options.block,
        (1, per_thread_rows),
        shared as u32,
    )
}

/// Where the last `ConstantFilter` call enqueued its copy and launch: a
/// call from another stream waits for that stream first (module docs).
static CONSTANT_FILTER_LAST_USER: Mutex<Option<Gpu>> = Mutex::new(None);

/// Computes the 2-D convolution of `image` with the square `filter` into
/// `output` (see the module docs for the definition and shapes).
///
/// Everything is validated first ([`validate_conv`], the output overlapping
/// the image or filter, the device's shared-memory limit); on error nothing
/// is written. Enqueued on `gpu`'s stream; returns without waiting, except
/// that [`ConvAlgorithm::ConstantFilter`] may wait for another stream (module
/// docs).
pub fn conv2d<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    options: &ConvOptions,
) -> Result<()> {
    conv2d_tuned_with(gpu, image, filter, output, options, &tiled_tuning::<T>())
}

/// [`conv2d`] with a `TiledHalo` tuning other than [`TILED_TUNING`]'s, for
/// tuning sweeps on a new device (each tuning compiles its own module; the
/// direct algorithms ignore it). The tuning is checked ([`check_tuning`]).
pub fn conv2d_tuned_with<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    mut output: MatrixViewMut<'_, T>,
    options: &ConvOptions,
    tuning: &TiledTuning,
) -> Result<()> {
    let out_shape = validate_conv_with::<T>(
        image.shape(),
        filter.shape(),
        output.shape(),
        options,
        tuning,
    )?;
    let k = filter.rows();
    {
        let out_view = output.as_view();
        let out_data = out_view.data();
        let (out_ptr, out_bytes) = (out_data.device_ptr(), out_data.bytes());
        if image.data().overlaps(out_ptr, out_bytes) || filter.data().overlaps(out_ptr, out_bytes) {
            return Err(Error::invalid(
                "output",
                "the output overlaps the image or the filter (conv2d is not in place)",
            ));
        }
    }
    if options.algorithm == ConvAlgorithm::TiledHalo && uses_strip(k, tuning) {
        let strip_tuning = strip_for(k, tuning).expect("uses_strip checked there is one");
        return conv2d_strip(
            gpu,
            image,
            filter,
            output,
            out_shape,
            options,
            &strip_tuning,
        );
    }
    let shared = shared_bytes_with::<T>(options.algorithm, options.block, k, tuning);
    let limit = gpu.info().shared_per_block_optin;
    if shared > limit {
        return Err(Error::Unsupported(format!(
            "{:?} with block {:?} and K = {k} needs {shared} bytes of shared memory; this device allows {limit}",
            options.algorithm, options.block
        )));
    }
    let config = launch_config::<T>(out_shape, k, options, tuning)?;
    let stride = tile_stride(options.block.0, k, tuning.rows_per_thread, T::BYTES);
    // Valid never reads outside the image except for the surplus outputs of
    // the last partial tile, which are not stored: read those as zeros.
    let padding = match options.border {
        Border::Valid => Padding::Zero,
        _ => options.padding,
    };
    let pad = anchor(k, options.border, options.flip);

    let entry = conv_entry::<T>(options.algorithm, k);
    // ConstantFilter needs the module for its symbol; the others only the
    // kernel, kept per context.
    let (module, kernel) = if options.algorithm == ConvAlgorithm::ConstantFilter {
        let module = gpu.module(&conv_module_with::<T>(tuning))?;
        let kernel = module.kernel(&entry)?;
        (Some(module), kernel)
    } else {
        let name = conv_module_name::<T>(tuning);
        let (kernel, _) =
            stored_kernel(gpu, &name, &entry, || conv_module_with::<T>(tuning), None)?;
        (None, kernel)
    };

    let (h, w) = image.shape();
    let image_data = image.data();
    let filter_data = filter.data();
    let mut out_data = output.data_mut();
    let mut args = KernelArgs::new();
    args.input(&image_data)
        .input(&filter_data)
        .output(&mut out_data)
        .scalar(h as i64)
        .scalar(w as i64)
        .scalar(out_shape.0 as i64)
        .scalar(out_shape.1 as i64)
        .scalar(k as i32)
        .scalar(pad as i32)
        .scalar(padding as i32)
        .scalar(options.flip as i32)
        .scalar(stride as i32);

    // SAFETY (both launches): the arguments match ENTRY_PARAMS (three
    // pointers, four i64, five i32) in order; the image holds H·W elements,
    // the filter K·K and the output OH·OW (validated shapes); the kernels
    // read image samples only through conv_map_coord or inside-window checks
    // (indices in [0, H)×[0, W)), filter indices < K², and write only
    // (row < OH, col < OW); TiledHalo's shared tile is `shared` bytes as
    // computed from the same block, K, R and stride the kernel uses. The
    // output does not overlap the inputs (checked above) and is only written
    // by this stream.
    if options.algorithm == ConvAlgorithm::ConstantFilter {
        let mut last = CONSTANT_FILTER_LAST_USER
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(previous) = last.as_ref() {
            if !Arc::ptr_eq(previous.cudarc_stream(), gpu.cudarc_stream()) {
                // A kernel queued on that stream may still read the symbol.
                previous.synchronize()?;
            }
        }
        let module = module.expect("ConstantFilter loads its module above");
        gpu.copy_to_symbol(&module, CONSTANT_FILTER_SYMBOL, &filter_data)?;
        *last = Some(gpu.clone());
        unsafe { gpu.launch(&kernel, config, &args) }
    } else {
        unsafe { gpu.launch(&kernel, config, &args) }
    }
}

/// `TiledHalo` through the strip kernel, for a validated problem whose
/// output does not overlap its inputs.
fn conv2d_strip<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    mut output: MatrixViewMut<'_, T>,
    out_shape: (usize, usize),
    options: &ConvOptions,
    tuning: &StripTuning,
) -> Result<()> {
    let k = filter.rows();
    let (h, w) = image.shape();
    let warps = strip::strip_warps(options.block, tuning)?;
    let pad = anchor(k, options.border, options.flip);
    // As for the block kernel: Valid reads outside the image only for the
    // surplus outputs right of the last column, never stored: zeros.
    let padding = match options.border {
        Border::Valid => Padding::Zero,
        _ => options.padding,
    };
    let geometry = strip::strip_geometry(out_shape.1, pad, tuning.elems_per_lane, k);
    let image_data = image.data();
    let aligned = strip::rows_aligned::<T>(image_data.device_ptr(), w, tuning);

    let shared = strip::strip_shared_bytes::<T>(tuning, warps);
    let (kernel, resident) = stored_kernel(
        gpu,
        &strip::strip_module_name::<T>(tuning),
        &strip::strip_entry::<T>(k),
        || strip::strip_module::<T>(tuning),
        Some((warps * 32, shared)),
    )?;
    let strip_rows = if tuning.strip_rows == 0 {
        strip::wave_strip_rows(
            out_shape.0,
            geometry.col_strips,
            warps,
            resident,
            gpu.info().sm_count,
        )
    } else {
        tuning.strip_rows
    };
    let config = strip::strip_launch_config::<T>(out_shape, &geometry, warps, strip_rows, tuning)?;
    let filter_data = filter.data();
    let mut out_data = output.data_mut();
    let mut args = KernelArgs::new();
    args.input(&image_data)
        .input(&filter_data)
        .output(&mut out_data)
        .scalar(h as i64)
        .scalar(w as i64)
        .scalar(out_shape.0 as i64)
        .scalar(out_shape.1 as i64)
        .scalar(pad as i32)
        .scalar(padding as i32)
        .scalar(options.flip as i32)
        .scalar(strip_rows as i32)
        .scalar(i32::from(aligned))
        .scalar(geometry.col_base)
        .scalar(geometry.col_strips as i64);
    // SAFETY: the arguments match the strip entry's parameter list (three
    // pointers, four i64, five i32, two i64) in order; the image holds H·W
    // elements, the filter K·K and the output OH·OW (validated shapes). The
    // kernel reads the image only at rows and columns mapped into [0, H) ×
    // [0, W) by conv_map_coord, with vector loads only when `aligned` (W a
    // multiple of VEC and the base address VEC-element aligned) and the
    // chunk lies inside its row; it reads filter indices < K² and writes
    // only (row < OH, 0 ≤ col < OW). Shared memory is the
    // strip_shared_bytes the kernel's staging slices (32·VEC elements per
    // warp, `warps` = blockDim.y) need. The output does not overlap the
    // inputs (checked by the caller) and only this stream writes it.
    unsafe { gpu.launch(&kernel, config, &args) }
}

/// [`conv2d`] into a new matrix of the [`output_shape`].
pub fn conv2d_new<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    options: &ConvOptions,
) -> Result<Matrix<T>> {
    let (rows, cols) = validate_conv::<T>(
        image.shape(),
        filter.shape(),
        // The output is ours: give the shape the check expects.
        output_shape(image.rows(), image.cols(), filter.rows(), options.border).unwrap_or((0, 0)),
        options,
    )?;
    // SAFETY: conv2d writes every one of the rows·cols outputs before the
    // matrix is returned (or the buffer is dropped on error).
    let buffer = unsafe { gpu_core::DeviceBuffer::<T>::uninit(gpu, rows * cols)? };
    let mut result = Matrix::from_buffer(rows, cols, buffer)?;
    conv2d(gpu, image, filter, result.view_mut(), options)?;
    Ok(result)
}

/// Every module [`conv2d`] can request: one per element type, the strip
/// module of each type's tuning (if it has one), and the strip modules of
/// the [`STRIP_CANDIDATES`] the tuning sweep compares (`f32`).
pub fn conv_kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = vec![
        conv_module::<f32>(),
        conv_module::<f64>(),
        conv_module::<i32>(),
    ];
    let mut strips: Vec<ModuleSource> = Vec::new();
    let mut add = |module: ModuleSource| {
        if !strips.iter().any(|m| m.name() == module.name()) {
            strips.push(module);
        }
    };
    let f32_table = tiled_tuning::<f32>();
    for t in f32_table.strip.iter().chain(f32_table.strip_wide.iter()) {
        add(strip::strip_module::<f32>(t));
    }
    let f64_table = tiled_tuning::<f64>();
    for t in f64_table.strip.iter().chain(f64_table.strip_wide.iter()) {
        add(strip::strip_module::<f64>(t));
    }
    let i32_table = tiled_tuning::<i32>();
    for t in i32_table.strip.iter().chain(i32_table.strip_wide.iter()) {
        add(strip::strip_module::<i32>(t));
    }
    for t in STRIP_CANDIDATES {
        add(strip::strip_module::<f32>(&t));
    }
    modules.extend(strips);
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_shapes_follow_the_border() {
        assert_eq!(output_shape(10, 7, 3, Border::Valid).unwrap(), (8, 5));
        assert_eq!(output_shape(10, 7, 3, Border::Same).unwrap(), (10, 7));
        assert_eq!(output_shape(10, 7, 3, Border::Full).unwrap(), (12, 9));
        assert_eq!(output_shape(5, 5, 5, Border::Valid).unwrap(), (1, 1));
        assert_eq!(output_shape(1, 1, 31, Border::Full).unwrap(), (31, 31));
        assert_eq!(output_shape(1, 1, 31, Border::Same).unwrap(), (1, 1));
        assert!(output_shape(4, 5, 5, Border::Valid).is_err());
        assert!(output_shape(5, 4, 5, Border::Valid).is_err());
        assert!(output_shape(5, 5, 0, Border::Same).is_err());
        assert!(output_shape(5, 5, 32, Border::Full).is_err());
        assert!(output_shape(0, 5, 1, Border::Same).is_err());
        assert!(output_shape(usize::MAX, 5, 3, Border::Full).is_err());
    }

    #[test]
    fn anchors_match_scipy() {
        // correlate: origin at K/2; convolve: (K−1)/2 for the rotated filter.
        assert_eq!(anchor(3, Border::Same, false), 1);
        assert_eq!(anchor(3, Border::Same, true), 1);
        assert_eq!(anchor(4, Border::Same, false), 2);
        assert_eq!(anchor(4, Border::Same, true), 1);
        assert_eq!(anchor(1, Border::Same, true), 0);
        assert_eq!(anchor(4, Border::Valid, true), 0);
        assert_eq!(anchor(4, Border::Full, false), 3);
    }

    #[test]
    fn bytes_moved_counts_image_outputs_and_filter() {
        // 8192², K = 3, Valid, f32: 4·H·W + 4·(H−2)(W−2) + 4·9.
        let n = 8192u64;
        assert_eq!(
            conv_bytes_moved(8192, 8192, 3, Border::Valid, 4),
            4 * n * n + 4 * (n - 2) * (n - 2) + 36
        );
        assert_eq!(
            conv_bytes_moved(4, 4, 3, Border::Same, 8),
            8 * (16 + 16 + 9)
        );
        assert_eq!(conv_bytes_moved(2, 2, 3, Border::Valid, 4), 4 * (4 + 9));
    }

    #[test]
    fn validation_rejects_bad_arguments() {
        let ok = ConvOptions::default();
        assert_eq!(
            validate_conv::<f32>((10, 10), (3, 3), (8, 8), &ok).unwrap(),
            (8, 8)
        );
        let shape_err = |r: Result<(usize, usize)>| matches!(r, Err(Error::Shape(_)));
        let arg_err = |r: Result<(usize, usize)>| matches!(r, Err(Error::InvalidArgument { .. }));
        assert!(arg_err(validate_conv::<f32>((10, 10), (0, 0), (8, 8), &ok)));
        assert!(arg_err(validate_conv::<f32>(
            (40, 40),
            (32, 32),
            (9, 9),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (10, 10),
            (3, 4),
            (8, 8),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (10, 10),
            (3, 3),
            (8, 7),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (2, 10),
            (3, 3),
            (1, 8),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (0, 10),
            (3, 3),
            (1, 8),
            &ok
        )));
        let same = ConvOptions {
            border: Border::Same,
            ..ok
        };
        assert!(validate_conv::<i32>((2, 10), (3, 3), (2, 10), &same).is_ok());
        for block in [(4, 4), (64, 16), (16, 8), (0, 0)] {
            let bad = ConvOptions { block, ..ok };
            assert!(arg_err(validate_conv::<f64>(
                (10, 10),
                (3, 3),
                (8, 8),
                &bad
            )));
        }
        for block in CONV_BLOCKS {
            for algorithm in ConvAlgorithm::ALL {
                let o = ConvOptions {
                    block,
                    algorithm,
                    border: Border::Full,
                    ..ok
                };
                assert!(validate_conv::<f64>((1, 1), (31, 31), (31, 31), &o).is_ok());
            }
        }
    }

    #[test]
    fn tile_stride_spreads_warp_row_groups_over_banks() {
        for (bx, k, r, bytes) in [(8, 3, 8, 4), (16, 3, 8, 4), (8, 5, 4, 8), (16, 31, 8, 4)] {
            let pitch = tile_stride(bx, k, r, bytes);
            assert!(pitch >= bx as usize + k - 1);
            let words = bytes / 4;
            let modulus = 32 / words;
            // Row group g of a warp starts at word offset g·R·pitch·words;
            // they must land bx·words apart modulo 32 banks.
            assert_eq!((r as usize * pitch) % modulus, bx as usize % modulus);
        }
        assert_eq!(tile_stride(32, 3, 8, 4), 34);
    }

    #[test]
    fn shared_memory_fits_for_every_supported_case() {
        for block in CONV_BLOCKS {
            for k in 1..=CONV_MAX_K {
                assert!(
                    shared_bytes::<f64>(ConvAlgorithm::TiledHalo, block, k) <= MAX_SHARED_PER_BLOCK
                );
                assert!(
                    shared_bytes::<f32>(ConvAlgorithm::TiledHalo, block, k) <= MAX_SHARED_PER_BLOCK
                );
            }
        }
        // The block kernel, 32×8 threads, K = 3, 4-byte elements:
        // (8·8 + 2) rows × 34 + 9.
        assert_eq!(
            shared_bytes::<i32>(ConvAlgorithm::TiledHalo, (32, 8), 3),
            (66 * 34 + 9) * 4
        );
        // The table's f32 strips store from registers (none); a staged
        // strip takes 128 elements per warp; K = 8: the block kernel.
        assert_eq!(shared_bytes::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 3), 0);
        assert_eq!(shared_bytes::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 5), 0);
        let staged = StripTuning {
            stores: StripStores::Staged,
            warps: 32,
            ..STRIP_CANDIDATES[0]
        };
        assert_eq!(strip::strip_shared_bytes::<f32>(&staged, 32), 32 * 128 * 4);
        assert_eq!(
            shared_bytes::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 8),
            (71 * 39 + 64) * 4
        );
        assert_eq!(
            shared_bytes::<f64>(ConvAlgorithm::SharedFilter, (8, 8), 31),
            31 * 31 * 8
        );
        assert_eq!(shared_bytes::<f32>(ConvAlgorithm::Global, (8, 8), 31), 0);
    }

    #[test]
    fn entries_are_in_the_module() {
        for k in 1..=CONV_MAX_K {
            for algorithm in ConvAlgorithm::ALL {
                let entry = conv_entry::<f32>(algorithm, k);
                assert!(conv_module::<f32>().entries().contains(&entry), "{entry}");
            }
        }
        let names: Vec<String> = conv_kernel_catalog()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(
            names[..3],
            ["linalg_conv_f32", "linalg_conv_f64", "linalg_conv_i32"]
        );
        // Every strip candidate's module is listed (the sweep compiles them).
        for t in STRIP_CANDIDATES {
            let name = strip::strip_module::<f32>(&t).name().to_owned();
            assert!(names.contains(&name), "{name}");
        }
    }

    #[test]
    fn tunings_are_checked_and_named() {
        let base = tiled_tuning::<f32>();
        assert!(check_tuning(&base).is_ok());
        for bad in [
            TiledTuning {
                rows_per_thread: 0,
                ..base
            },
            TiledTuning {
                rows_per_thread: 17,
                ..base
            },
            TiledTuning {
                reg_filter_max_k: 8,
                ..base
            },
            TiledTuning {
                load_batch: 0,
                ..base
            },
        ] {
            assert!(check_tuning(&bad).is_err());
            assert!(validate_conv_with::<f32>(
                (9, 9),
                (3, 3),
                (7, 7),
                &ConvOptions::default(),
                &bad
            )
            .is_err());
        }
        let other = TiledTuning {
            rows_per_thread: 4,
            strip: None,
            strip_wide: None,
            ..base
        };
        assert_eq!(conv_module::<f32>().name(), "linalg_conv_f32");
        // Which kernel serves which K.
        assert_eq!(strip_for(3, &base), base.strip);
        assert_eq!(strip_for(4, &base), base.strip_wide);
        assert_eq!(strip_for(7, &base), base.strip_wide);
        assert_eq!(strip_for(8, &base), None);
        let narrow_only = TiledTuning {
            strip_wide: None,
            ..base
        };
        assert_eq!(strip_for(5, &narrow_only), base.strip);
        assert!(!uses_strip(3, &other));
        // The stored-kernel lookup names modules without building them.
        assert_eq!(
            conv_module_name::<f32>(&other),
            conv_module_with::<f32>(&other).name()
        );
        assert_eq!(
            conv_module_name::<f64>(&tiled_tuning::<f64>()),
            "linalg_conv_f64"
        );
        for t in STRIP_CANDIDATES {
            assert_eq!(
                strip::strip_module_name::<f32>(&t),
                strip::strip_module::<f32>(&t).name()
            );
        }
        assert_eq!(conv_module_with::<f32>(&base).name(), "linalg_conv_f32");
        assert_eq!(
            conv_module_with::<f32>(&other).name(),
            "linalg_conv_f32_r4_f5_b10"
        );
        assert!(conv_module_with::<f32>(&other)
            .code()
            .contains("#define CONV_ROWS_PER_THREAD 4"));
        assert_eq!(
            shared_bytes_with::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 3, &other),
            ((8 * 4 + 2) * 34 + 9) * 4
        );
    }

    #[test]
    fn tuning_covers_every_type() {
        assert_eq!(tiled_tuning::<f32>().rows_per_thread, 8);
        assert_eq!(tiled_tuning::<f64>().rows_per_thread, 4);
        assert_eq!(tiled_tuning::<i32>().reg_filter_max_k, 5);
    }
}
