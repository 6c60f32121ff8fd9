// Every kernel module the workspace can request: the body of
// `parprims::kernel_catalog`, shared with the build script (`aot` feature),
// which includes this file with the same crate names in scope.

/// Every kernel module the workspace can request (every element type ×
/// operator × variant of every crate): what `tests/kernel_compile.rs`
/// compiles in CI, `parprims warm-cache` compiles into the disk cache, and
/// the `aot` feature embeds.
///
/// ```
/// let catalog = parprims::kernel_catalog();
/// let scan_modules = parprims::scan::kernel_catalog().len();
/// assert!(catalog.len() > scan_modules); // every crate's modules
/// ```
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = gpu_core::kernel_catalog();
    modules.extend(scan::kernel_catalog());
    modules.extend(compact::kernel_catalog());
    modules.extend(linalg::kernel_catalog());
    modules.extend(reduce::kernel_catalog());
    modules.extend(sort::kernel_catalog());
    modules
}
