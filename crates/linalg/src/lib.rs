//! (work in progress: matvec/transpose helper and conv helper share this crate)
mod matrix;

pub use matrix::{check_shape, Matrix, MatrixView, MatrixViewMut};

/// Every kernel module this crate can request, for the kernel-compile test.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    Vec::new()
}
