//! Histograms on the GPU (see the crate documentation).

use gpu_core::ModuleSource;

/// Every kernel module of the histogram methods.
///
/// ```
/// let modules = reduce::histogram::kernel_catalog();
/// assert!(modules.iter().all(|m| !m.entries().is_empty()));
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    Vec::new()
}
