//! (work in progress)

/// Every kernel module this crate can request, for the kernel-compile test.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    Vec::new()
}
