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

/// Scan: pieces shared by the recursive multi-block scans (shared-memory
/// tile, per-element output rule, the uniform-add kernel).
pub const SCAN_RECURSIVE: &str = include_str!("../cuda/scan_recursive.cuh");
/// Scan: Hillis–Steele with one launch per step, ping-pong in global memory.
pub const SCAN_HILLIS_STEELE_GLOBAL: &str = include_str!("../cuda/scan_hillis_steele_global.cu");
/// Scan: Hillis–Steele block scan, double buffer in shared memory.
pub const SCAN_HILLIS_STEELE: &str = include_str!("../cuda/scan_hillis_steele.cu");
/// Scan: Blelloch up-sweep/down-sweep block scan, plain and bank-conflict padded.
pub const SCAN_BLELLOCH: &str = include_str!("../cuda/scan_blelloch.cu");

/// Matvec: multiply-add and 16-byte vector helpers shared by the matvec kernels.
pub const MATVEC_COMMON: &str = include_str!("../cuda/matvec_common.cu");
/// Matvec from global memory, one thread per output (the lab's gpu-gm).
pub const MATVEC_GLOBAL: &str = include_str!("../cuda/matvec_global.cu");
/// Matvec with x staged in shared-memory tiles (the lab's gpu-sm).
pub const MATVEC_TILED: &str = include_str!("../cuda/matvec_tiled.cu");
/// Matvec, tuned: vectorised row groups for A·x, column-blocked two-pass Aᵀ·x.
pub const MATVEC_TUNED: &str = include_str!("../cuda/matvec_tuned.cu");
/// Transpose, one thread per element, strided writes.
pub const TRANSPOSE_NAIVE: &str = include_str!("../cuda/transpose_naive.cu");
/// Transpose through a 32 × 32 (or padded 32 × 33) shared tile.
pub const TRANSPOSE_TILED: &str = include_str!("../cuda/transpose_tiled.cu");
/// Transpose, tuned: 32 × 8 threads per padded 32 × 32 tile.
pub const TRANSPOSE_TUNED: &str = include_str!("../cuda/transpose_tuned.cu");

/// Stream compaction building blocks: predicates, tile loads and keep masks,
/// block scan, decoupled look-back over tile counts (crate `compact`).
pub const COMPACT: &str = include_str!("../cuda/compact.cuh");

/// Single-pass compaction and partition scatter (crate `compact`).
pub const COMPACT_SINGLE_PASS: &str = include_str!("../cuda/compact_single_pass.cu");

/// Counting kept items (crate `compact`).
pub const COMPACT_COUNT: &str = include_str!("../cuda/compact_count.cu");

/// Three-pass compaction: map and scatter kernels (crate `compact`).
pub const COMPACT_THREE_PASS: &str = include_str!("../cuda/compact_three_pass.cu");

/// 2-D convolution: Global, SharedFilter, ConstantFilter and TiledHalo
/// kernels (crate `linalg`, `conv`).
pub const CONV: &str = include_str!("../cuda/conv.cu");
/// 2-D convolution: TiledHalo's strip kernel, one warp per vertical strip
/// (needs CONV for its helpers; crate `linalg`, `conv_strip`).
pub const CONV_STRIP: &str = include_str!("../cuda/conv_strip.cu");

/// Warp-wide building blocks (shuffle scans), templated on T and Op.
pub const WARP: &str = include_str!("../cuda/warp.cuh");
/// Block-wide building blocks: block scan, striped/blocked exchange, seeded thread scans.
pub const BLOCK: &str = include_str!("../cuda/block.cuh");
/// The decoupled look-back tile-status protocol (any associative op, 4- or 8-byte values).
pub const LOOKBACK: &str = include_str!("../cuda/lookback.cuh");
/// Single-pass scan with decoupled look-back (needs WARP, BLOCK, LOOKBACK).
pub const SCAN_LOOKBACK: &str = include_str!("../cuda/scan_lookback.cu");
/// Deterministic reduce-then-scan (needs WARP, BLOCK).
pub const SCAN_REDUCE_THEN_SCAN: &str = include_str!("../cuda/scan_reduce_then_scan.cu");

/// Every embedded source, by file name, for tooling (the kernel-compile
/// test, the docs).
pub fn all_sources() -> Vec<(&'static str, &'static str)> {
    vec![
        ("common.cuh", COMMON),
        ("gpu_core.cu", GPU_CORE),
        ("warp.cuh", WARP),
        ("block.cuh", BLOCK),
        ("lookback.cuh", LOOKBACK),
        ("scan_lookback.cu", SCAN_LOOKBACK),
        ("scan_reduce_then_scan.cu", SCAN_REDUCE_THEN_SCAN),
        ("compact.cuh", COMPACT),
        ("compact_single_pass.cu", COMPACT_SINGLE_PASS),
        ("compact_count.cu", COMPACT_COUNT),
        ("compact_three_pass.cu", COMPACT_THREE_PASS),
        ("scan_recursive.cuh", SCAN_RECURSIVE),
        ("scan_hillis_steele_global.cu", SCAN_HILLIS_STEELE_GLOBAL),
        ("scan_hillis_steele.cu", SCAN_HILLIS_STEELE),
        ("scan_blelloch.cu", SCAN_BLELLOCH),
        ("matvec_common.cu", MATVEC_COMMON),
        ("matvec_global.cu", MATVEC_GLOBAL),
        ("matvec_tiled.cu", MATVEC_TILED),
        ("matvec_tuned.cu", MATVEC_TUNED),
        ("transpose_naive.cu", TRANSPOSE_NAIVE),
        ("transpose_tiled.cu", TRANSPOSE_TILED),
        ("transpose_tuned.cu", TRANSPOSE_TUNED),
        ("conv.cu", CONV),
        ("conv_strip.cu", CONV_STRIP),
    ]
}
