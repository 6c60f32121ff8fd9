//! (work in progress: matvec/transpose helper and conv helper share this crate)
mod matrix;
pub mod conv;
pub mod conv_cpu;

pub use matrix::{check_shape, Matrix, MatrixView, MatrixViewMut};
pub use conv::{
    conv2d, conv2d_new, conv_bytes_moved, validate_conv, Border, ConvAlgorithm, ConvElement,
    ConvOptions, Padding,
};

/// Every kernel module this crate can request, for the kernel-compile test.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    conv::conv_kernel_catalog()
}
