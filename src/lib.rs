//! # parprims
//!
//! GPU parallel primitives for Rust on NVIDIA GPUs, and the classic GPU
//! labs runnable and measured. This crate is the facade: it re-exports the
//! libraries and holds the shared lab runner that the `parprims` command and
//! the examples are thin front ends over.
//!
//! | crate | what |
//! |---|---|
//! | [`gpu_core`] | device, buffers, elements and operators, kernels, timing |
//! | [`scan`] | inclusive/exclusive scan: Hillis–Steele, Blelloch, padded Blelloch, decoupled look-back |
//! | [`compact`] | stream compaction: select by flags or predicate, partition, three-pass and single-pass |
//! | [`linalg`] | matrix–vector multiply, transpose, 2-D convolution |
//! | [`lab`] | the lab runner: inputs, timing, checks, the table, CSV, plots |
//!
//! ```
//! use parprims::lab::{render_table, Check, Row};
//! use parprims::lab::table::Timed;
//! let row = Row {
//!     primitive: "scan".into(),
//!     method: "DecoupledLookback".into(),
//!     element_type: "i32".into(),
//!     shape: "268435456".into(),
//!     bytes: 8.0 * 268435456.0,
//!     timed: Timed::Device,
//!     ms: Some(0.75),
//!     ms_with_copies: None,
//!     check: Check::Pass,
//! };
//! let table = render_table(&[row], Some(3000.0));
//! assert!(table.contains("2863.3")); // GB/s from the declared 8n bytes
//! assert!(table.contains("0.95"));   // of the copy ceiling
//! ```
#![deny(missing_docs)]

pub mod cli;
pub mod lab;

pub use compact;
pub use gpu_core;
pub use linalg;
pub use scan;

/// Every kernel module the workspace can request (every element type ×
/// operator × variant of every crate): what `tests/kernel_compile.rs`
/// compiles in CI and `parprims warm-cache` compiles into the disk cache.
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = gpu_core::kernel_catalog();
    modules.extend(scan::kernel_catalog());
    modules.extend(compact::kernel_catalog());
    modules.extend(linalg::kernel_catalog());
    modules
}
