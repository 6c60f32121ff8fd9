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
//! | `TiledHalo` (default), register-tile kernel (`K ≤ 7`, `f32` and `i32`: [`crate::policy::ConvPolicy::register_tile`]) | shared, read into uniform registers | one tile + halo in shared memory, 16-byte loads | R rows × 4·G columns |
//! | `TiledHalo`, strip kernel (`K ≤ 7` when [`crate::policy::ConvPolicy::strip`] is set and no register tile) | registers | each row once per warp strip, vector loads, neighbours' columns by shuffles | VEC outputs per row, walking down S rows |
//!
//! All: one launch, `K²` multiply-adds per output (work `OH·OW·K²`), global
//! memory traffic near `(H·W + OH·OW + K²)` elements ([`conv_bytes_moved`]),
//! not in place (the output may not overlap the image or the filter),
//! deterministic. Shared memory and bank behaviour are in each kernel's header
//! in `kernels/cuda/linalg/conv.cu`, `conv_strip.cu` and
//! `conv_register_tile.cu`, and in each kernel's file here. The register-tile,
//! strip and block kernels add each output's products in the same order:
//! their results are identical.
//!
//! # ConstantFilter and concurrency
//!
//! The constant filter is one `__constant__` array per module, shared by every
//! [`Gpu`] handle on the context: `ConstantFilter` is correct from any number
//! of threads and streams, and serialised across streams (a call from
//! another stream than the last waits for it; use `TiledHalo` or
//! `SharedFilter` for concurrent work). `direct.rs` says how.
//!
//! # Layers
//!
//! `shape` (borders, padding, output shape, bytes moved), `algorithm` (what
//! the caller picks: [`ConvAlgorithm`], [`ConvOptions`]), `element`
//! ([`ConvElement`]),
//! `policy` (TiledHalo's [`crate::policy::ConvPolicy`] and
//! [`crate::policy::StripPolicy`]), one file per kernel (`direct`, `tiled`,
//! `strip`: grid, shared memory, launch), `module` (kernel sources, entry
//! names, store lookup), `dispatch` (checks, then which kernel).

mod algorithm;
mod direct;
mod dispatch;
mod element;
mod module;
pub(crate) mod policy;
mod register_tile;
mod shape;
mod strip;
mod tiled;

use gpu_core::{Gpu, Result};

use crate::matrix::{Matrix, MatrixView, MatrixViewMut};
pub use algorithm::{ConvAlgorithm, ConvOptions, CONV_BLOCKS, DEFAULT_BLOCK};
pub use element::ConvElement;
pub(crate) use module::{
    conv_kernel_catalog, conv_module, conv_module_with, register_tile_module, strip_module,
};
use policy::ConvPolicy;
pub use shape::{anchor, conv_bytes_moved, output_shape, Border, Padding, CONV_MAX_K};

/// Every check [`conv2d`] makes before touching the device, as a pure
/// function of shapes and options (`T` gives the byte counts).
///
/// Checks: image dimensions ≥ 1 and addressable; the filter square with side
/// 1 … 31; `K ≤ H` and `K ≤ W` for `Valid`; the output shape equal to
/// [`output_shape`]; the block one of [`CONV_BLOCKS`]; a policy only with
/// `TiledHalo`, and one the kernels run; the `TiledHalo` tile within the
/// largest shared memory a block can have on any supported GPU (227 KiB;
/// the device's own limit is checked again at launch). Without a policy in
/// `options` the measured table's is checked. Returns the output shape.
///
/// ```
/// use linalg::{validate_conv, Border, ConvAlgorithm, ConvOptions};
/// let options = ConvOptions::default(); // Border::Valid
/// assert_eq!(validate_conv::<f32>((64, 48), (5, 5), (60, 44), &options)?, (60, 44));
/// assert!(validate_conv::<f32>((64, 48), (5, 5), (64, 48), &options).is_err()); // wrong output shape
/// let same = ConvOptions { border: Border::Same, algorithm: ConvAlgorithm::Global, ..options };
/// assert!(validate_conv::<i32>((64, 48), (32, 32), (64, 48), &same).is_err()); // K > 31
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn validate_conv<T: ConvElement>(
    image: (usize, usize),
    filter: (usize, usize),
    output: (usize, usize),
    options: &ConvOptions,
) -> Result<(usize, usize)> {
    let policy = options.policy.unwrap_or_else(dispatch::table_policy::<T>);
    dispatch::validate::<T>(image, filter, output, options, &policy)
}

/// Computes the 2-D convolution of `image` with the square `filter` into
/// `output` (see the module docs for the definition and shapes), as
/// `options` asks: border, padding, flip, algorithm, block and, for
/// `TiledHalo`, optionally a [`crate::policy::ConvPolicy`] (else the
/// device's default).
///
/// Everything is validated first ([`validate_conv`], the output overlapping
/// the image or filter, the device's shared-memory limit); on error nothing
/// is written. Enqueued on `gpu`'s stream; returns without waiting, except
/// that [`ConvAlgorithm::ConstantFilter`] may wait for another stream (module
/// docs).
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::{Border, ConvOptions, Matrix, Padding};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let image: Vec<i32> = (0..16).collect(); // 4 × 4
/// let filter = [0i32, 1, 0, 1, -4, 1, 0, 1, 0]; // 3 × 3 Laplacian
/// let (img, f) = (Matrix::from_host(&gpu, 4, 4, &image)?, Matrix::from_host(&gpu, 3, 3, &filter)?);
/// let options = ConvOptions { border: Border::Same, padding: Padding::Clamp, ..ConvOptions::default() };
/// let mut out = Matrix::<i32>::zeros(&gpu, 4, 4)?;
/// linalg::conv2d(&gpu, img.view(), f.view(), out.view_mut(), &options)?;
/// assert_eq!(out.to_host(&gpu)?, linalg::conv_cpu::conv2d(&image, 4, 4, &filter, 3, &options)?);
/// # Ok(()) }
/// ```
pub fn conv2d<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    options: &ConvOptions,
) -> Result<()> {
    dispatch::conv2d(gpu, image, filter, output, options)
}

/// [`conv2d`] with `policy` as `TiledHalo`'s, for tuning sweeps:
/// `conv2d(…, &ConvOptions { policy: Some(*policy), ..*options })`. The
/// policy is checked, and refused with any algorithm but `TiledHalo`.
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::policy::ConvPolicy;
/// use linalg::{ConvOptions, Matrix};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (image, filter) = (vec![1.0f32; 64 * 64], vec![0.04f32; 25]); // a 5 × 5 box blur
/// let (img, f) = (Matrix::from_host(&gpu, 64, 64, &image)?, Matrix::from_host(&gpu, 5, 5, &filter)?);
/// let mut out = Matrix::<f32>::zeros(&gpu, 60, 60)?; // Border::Valid
/// let (options, policy) = (ConvOptions::default(), ConvPolicy::for_device::<f32>(gpu.info()));
/// linalg::conv::conv2d_tuned_with(&gpu, img.view(), f.view(), out.view_mut(), &options, &policy)?;
/// let expected = linalg::conv_cpu::conv2d(&image, 64, 64, &filter, 5, &options)?;
/// assert!(out.to_host(&gpu)?.iter().zip(&expected).all(|(g, c)| (g - c).abs() < 1e-5));
/// # Ok(()) }
/// ```
pub fn conv2d_tuned_with<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    options: &ConvOptions,
    policy: &ConvPolicy,
) -> Result<()> {
    let options = ConvOptions {
        policy: Some(*policy),
        ..*options
    };
    dispatch::conv2d(gpu, image, filter, output, &options)
}

/// [`conv2d`] into a new matrix of the [`output_shape`].
///
/// ```no_run
/// use gpu_core::Gpu;
/// use linalg::{Border, ConvOptions, Matrix};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let image: Vec<i32> = (0..20).collect(); // 4 × 5
/// let filter = [1i32, 2, 3, 4]; // 2 × 2
/// let (img, f) = (Matrix::from_host(&gpu, 4, 5, &image)?, Matrix::from_host(&gpu, 2, 2, &filter)?);
/// let options = ConvOptions { border: Border::Full, flip: true, ..ConvOptions::default() };
/// let out = linalg::conv2d_new(&gpu, img.view(), f.view(), &options)?;
/// assert_eq!(out.shape(), (5, 6));
/// assert_eq!(out.to_host(&gpu)?, linalg::conv_cpu::conv2d(&image, 4, 5, &filter, 2, &options)?);
/// # Ok(()) }
/// ```
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
