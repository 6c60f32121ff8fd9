//! # parprims
//!
//! GPU parallel primitives for Rust on NVIDIA GPUs. This crate is the facade
//! a user depends on: it re-exports the libraries, and nothing else comes
//! with it. The lab runner behind the `parprims` command and the examples
//! (timing, tables, plots, the benchmark; clap, indicatif and plotters) is
//! the `parprims-lab` crate, compiled only for the binary (feature `cli`, on
//! by default): `default-features = false, features = ["cuda-13000"]` leaves
//! it out.
//!
//! | crate | what |
//! |---|---|
//! | [`gpu_core`] | device, buffers, elements and operators, kernels, timer |
//! | [`scan`] | inclusive/exclusive scan: Hillis–Steele, Blelloch, padded Blelloch, decoupled look-back |
//! | [`compact`] | stream compaction: select by flags or predicate, partition, three-pass and single-pass |
//! | [`linalg`] | matrix–vector multiply, transpose, 2-D convolution |
//!
//! The CPU reference of each primitive runs anywhere; the GPU path needs a
//! CUDA driver:
//!
//! ```
//! use parprims::gpu_core::{DeviceBuffer, Gpu, Sum};
//! use parprims::{compact, scan};
//!
//! let input = [3i32, 1, 4, 1, 5, 9, 2, 6];
//! let expected = scan::cpu::inclusive(&input, &Sum);
//! assert_eq!(expected, [3, 4, 8, 9, 14, 23, 25, 31]);
//! let flags = [1u8, 0, 1, 0, 1, 1, 0, 0];
//! assert_eq!(compact::cpu::select_flagged(&input, &flags)?, [3, 4, 5, 9]);
//!
//! // Without a CUDA driver, `Gpu::new` is a typed error (`Error::NoDriver`).
//! if let Ok(gpu) = Gpu::new(0) {
//!     let device = DeviceBuffer::from_host(&gpu, &input)?;
//!     let sums = scan::inclusive(&gpu, device.view(), &Sum)?;
//!     assert_eq!(sums.to_host(&gpu)?, expected);
//! }
//! # Ok::<(), parprims::gpu_core::Error>(())
//! ```
#![deny(missing_docs)]

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
