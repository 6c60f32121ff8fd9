//! (work in progress: the scan helper owns this file)
mod kind;
mod lookback;

pub use kind::ScanKind;

/// Every kernel module this crate can request, for the kernel-compile test.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    Vec::new()
}
