//! # reduce
//!
//! Reductions, arg-reductions and histograms on the GPU.
#![deny(missing_docs)]

pub mod histogram;

use gpu_core::ModuleSource;

/// Every kernel module of the crate (every element type × operator ×
/// method): what the kernel-compile test compiles and `aot` embeds.
///
/// ```
/// assert!(!reduce::kernel_catalog().iter().any(|m| m.entries().is_empty()));
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    modules.extend(histogram::kernel_catalog());
    modules
}
