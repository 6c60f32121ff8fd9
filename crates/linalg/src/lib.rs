//! # linalg
//!
//! Dense linear-algebra primitives on the device, every method of the lab
//! and then the fastest: matrix–vector multiply, transpose and 2-D
//! convolution over a row-major [`Matrix`].
//!
//! | operation | function | algorithms (default last) | bytes moved |
//! |---|---|---|---|
//! | `y = A·x`, `y = Aᵀ·x` (`f16`, `bf16`, `f32`, `f64`, `i32`) | [`matvec`] | [`MatvecAlgorithm`]: Global, SharedTiled { tile }, Tuned | [`matvec_bytes_moved`] |
//! | `out = Aᵀ` (every element type: 1, 2, 4 and 8 bytes) | [`transpose`] | [`TransposeAlgorithm`]: Naive, Tiled, TiledPadded, Tuned | [`transpose_bytes_moved`] |
//! | 2-D cross-correlation / convolution, K = 1…31, Valid/Same/Full, Zero/Clamp/Reflect/Wrap (`f16`, `bf16`, `f32`, `f64`, `i32`) | [`conv2d`] | [`ConvAlgorithm`]: Global, SharedFilter, ConstantFilter, TiledHalo | [`conv_bytes_moved`] |
//! | `y = α·A·x + β·y`, A sparse (CSR, `f32`, `f64`) | [`spmv::spmv_into`] | [`spmv::SpmvAlgorithm`]: Cpu, Scalar, Vector, SegmentedScan, MergePath | [`spmv::spmv_bytes_moved`] |
//!
//! `f16` and `bf16` ([`gpu_core::f16`], [`gpu_core::bf16`]) accumulate in
//! `f32`, as PyTorch does: products and sums (partial sums of split
//! problems too) are carried in `f32` ([`gpu_core::Element::Acc`]) and each
//! output is rounded to the 16-bit type once, when it is stored. Integers
//! wrap.
//!
//! Matrices are row-major views of device memory ([`MatrixView`],
//! [`MatrixViewMut`]), so a caller's buffer, or part of one, works wherever
//! a [`Matrix`] does. Every shape or length mismatch, zero dimension, overlap
//! of output and input, or out-of-range parameter is a typed
//! [`gpu_core::Error`] found before anything is launched: nothing is
//! written. CPU references are in [`cpu`] and [`conv_cpu`].
//!
//! Each call takes an algorithm; the tuned ones also take an optional
//! policy through their options ([`TransposeOptions`], [`MatvecOptions`],
//! [`ConvOptions::policy`]), else run with the device's default. Policies
//! and their defaults are in [`policy`].
//!
//! Inside, each family is a folder of layers: the caller's vocabulary
//! (`algorithm`), its `policy`, one file per algorithm (grid and launch),
//! the kernel sources and their lookup in the context's kernel store
//! (`module`), and the `dispatch` that maps options to a kernel and a grid.
//!
//! ```no_run
//! use gpu_core::{DeviceBuffer, Gpu};
//! use linalg::{matvec_new, transpose_new, Matrix, MatvecAlgorithm, Transpose, TransposeAlgorithm};
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let a = Matrix::from_host(&gpu, 2, 3, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 1.0, 1.0])?;
//! let y = matvec_new(&gpu, a.view(), x.view(), Transpose::No, MatvecAlgorithm::Tuned)?;
//! assert_eq!(y.to_host(&gpu)?, vec![6.0, 15.0]);
//! let t = transpose_new(&gpu, a.view(), TransposeAlgorithm::Tuned)?;
//! assert_eq!(t.to_host(&gpu)?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod conv;
pub mod conv_cpu;
pub mod cpu;
mod matrix;
mod matvec;
pub mod policy;
pub mod spmv;
mod transpose;

#[cfg(feature = "cublas")]
pub mod cublas_baseline;

/// The element types of the arithmetic (matvec and conv): `f16`, `bf16`,
/// `f32`, `f64`, `i32`. Sealed, so that every type the public traits admit
/// has its kernels in the catalog.
mod sealed {
    pub trait Arithmetic {}
    impl Arithmetic for gpu_core::f16 {}
    impl Arithmetic for gpu_core::bf16 {}
    impl Arithmetic for f32 {}
    impl Arithmetic for f64 {}
    impl Arithmetic for i32 {}
}

pub use conv::{
    conv2d, conv2d_new, conv_bytes_moved, validate_conv, Border, ConvAlgorithm, ConvElement,
    ConvOptions, Padding,
};
pub use matrix::{check_shape, Matrix, MatrixView, MatrixViewMut};
pub use matvec::{
    check_matvec_lengths, matvec, matvec_bytes_moved, matvec_new, matvec_tuned_with, matvec_with,
    MatvecAlgorithm, MatvecElement, MatvecOptions, Transpose,
};
pub use transpose::{
    check_transpose_shapes, transpose, transpose_bytes_moved, transpose_new, transpose_tuned_with,
    transpose_with, TransposeAlgorithm, TransposeOptions,
};

/// Every kernel module this crate can request, for the kernel-compile test
/// and cache warming.
///
/// ```
/// let catalog = linalg::kernel_catalog();
/// assert!(!catalog.is_empty());
/// ```
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = matvec::catalog();
    modules.extend(transpose::catalog());
    modules.extend(conv::conv_kernel_catalog());
    modules.extend(spmv::catalog());
    modules
}
