//! The CUDA C sources of parprims, embedded at build time.
//!
//! Kernels live as ordinary `.cu`/`.cuh` files under `kernels/cuda/` so they
//! read (and diff) as CUDA, and are embedded here with `include_str!` so that
//! every crate compiling them can be packaged and published on its own.
//!
//! An embedded source has no include path, so NVRTC never sees an
//! `#include "..."` of ours: the host side (`gpu_core::kernel`) prepends the
//! headers a module needs, then the operator/element prelude it generates,
//! then the algorithm's body, then the generated `extern "C"` entry points.
//!
//! Layering follows CUB: `common.cuh` (element helpers), `warp.cuh` and
//! `block.cuh` (warp- and block-wide building blocks), then one `.cu` per
//! algorithm family.
#![deny(missing_docs)]

/// Shared definitions every module starts with: fixed-width integer names,
/// 64-bit index helpers, load/store helpers.
pub const COMMON: &str = include_str!("../cuda/common.cuh");

/// gpu-core's own kernels: fill (poison) and a plain copy used by tests.
pub const GPU_CORE: &str = include_str!("../cuda/gpu_core.cu");

/// Every embedded source, by file name, for tooling (the kernel-compile
/// test, the docs).
pub fn all_sources() -> Vec<(&'static str, &'static str)> {
    vec![("common.cuh", COMMON), ("gpu_core.cu", GPU_CORE)]
}
