//! The CUDA C sources of parprims, embedded at build time.
//!
//! Kernels live as ordinary `.cu`/`.cuh` files under `kernels/cuda/` so they
//! read (and diff) as CUDA, and are embedded here with `include_str!` so that
//! every crate compiling them can be packaged and published on its own.
//!
//! An embedded source has no include path, so NVRTC never sees an
//! `#include "..."` of ours: the host side (`gpu_core::kernel::ModuleSource`)
//! starts every module with [`COMMON`], then appends the headers a module
//! needs in layer order, then the operator/element prelude it generates,
//! then the algorithm's body, then the generated `extern "C"` entry points.
//!
//! Layering follows CUB, one folder per layer:
//!
//! | folder | what | constants |
//! |---|---|---|
//! | `common.cuh` | integer names, the 16-bit floats (`f16`, `bf16`) and their conversions, accumulator types (`acc_t`), 64-bit indices, wrapping arithmetic, `sum_op` | [`COMMON`] |
//! | `warp/` | warp shuffle scans | [`WARP`] |
//! | `block/` | block scan, striped↔blocked exchange, block reduce | [`BLOCK`], [`BLOCK_REDUCE`] |
//! | `single_pass/` | the tile state (status encodings) and the decoupled look-back, written once for every single-pass primitive | [`TILE_STATUS`], [`SINGLE_PASS_LOOKBACK`] ([`SINGLE_PASS`] lists the four headers in order) |
//! | `scan/` | the scan algorithms | `SCAN_*` |
//! | `compact/` | stream compaction | `COMPACT*` |
//! | `linalg/` | matvec, transpose, convolution | `MATVEC_*`, `TRANSPOSE_*`, `CONV*` |
//! | `reduce/` | reduction, arg-reductions, histograms | `REDUCE*`, `HISTOGRAM*` |
//! | `sort/` | key transforms, radix sort, the lesson's sorts | `SORT_*` |
#![deny(missing_docs)]

/// Shared definitions every module starts with: fixed-width integer names,
/// the 16-bit floats with their f32 conversions and accumulator types,
/// 64-bit index helpers, wrapping arithmetic, the `sum_op` functor.
pub const COMMON: &str = include_str!("../cuda/common.cuh");

/// gpu-core's own kernels: fill (poison) and a plain copy used by tests.
pub const GPU_CORE: &str = include_str!("../cuda/gpu_core.cu");

/// Warp-wide building blocks (shuffle scans), templated on T and Op.
pub const WARP: &str = include_str!("../cuda/warp/warp_scan.cuh");
/// Block-wide building blocks: block scan, striped/blocked exchange, seeded
/// thread scans (needs WARP).
pub const BLOCK: &str = include_str!("../cuda/block/block_scan.cuh");
/// Block-wide reduction for commutative operators (needs WARP).
pub const BLOCK_REDUCE: &str = include_str!("../cuda/block/block_reduce.cuh");
/// The merge-path partition of a segmented sequence (segment ends merged
/// with item indices) and the balanced tile, keyed carry scan and fix-up
/// that CSR SpMV and segmented reduce share (needs COMMON only).
pub const MERGE_PATH: &str = include_str!("../cuda/block/merge_path.cuh");

/// The single-pass tile state: tile counter, status encodings (one per
/// element width: 4-byte values in a 64-bit word at a 16-byte stride, 8-byte
/// values in one 128-bit word), relaxed gpu-scope accesses.
pub const TILE_STATUS: &str = include_str!("../cuda/single_pass/tile_status.cuh");
/// The decoupled look-back over [`TILE_STATUS`], any associative operator
/// (needs WARP and TILE_STATUS).
pub const SINGLE_PASS_LOOKBACK: &str = include_str!("../cuda/single_pass/lookback.cuh");
/// The per-digit decoupled look-back: one 32-bit (status, count) word per
/// tile and digit, one thread per digit walking back (the Onesweep radix
/// sort's; needs [`TILE_STATUS`]).
pub const SINGLE_PASS_DIGIT_LOOKBACK: &str = include_str!("../cuda/single_pass/digit_lookback.cuh");
/// An 8-byte value with a 32-bit head field through the look-back: the
/// struct, its shuffles and its 128-bit tile status (after [`SINGLE_PASS`];
/// the segmented scan's and the keyed runs' 8-byte values).
pub const SINGLE_PASS_HEADED_VALUE: &str = include_str!("../cuda/single_pass/headed_value.cuh");
/// The headers a single-pass module prepends, in order: warp, block, tile
/// state, look-back.
pub const SINGLE_PASS: [&str; 4] = [WARP, BLOCK, TILE_STATUS, SINGLE_PASS_LOOKBACK];

/// Scan: pieces shared by the recursive multi-block scans (shared-memory
/// tile, per-element output rule, the uniform-add kernel).
pub const SCAN_RECURSIVE: &str = include_str!("../cuda/scan/recursive.cuh");
/// Scan: Hillis–Steele with one launch per step, ping-pong in global memory.
pub const SCAN_HILLIS_STEELE_GLOBAL: &str = include_str!("../cuda/scan/hillis_steele_global.cu");
/// Scan: Hillis–Steele block scan, double buffer in shared memory.
pub const SCAN_HILLIS_STEELE: &str = include_str!("../cuda/scan/hillis_steele.cu");
/// Scan: Blelloch up-sweep/down-sweep block scan, plain and bank-conflict padded.
pub const SCAN_BLELLOCH: &str = include_str!("../cuda/scan/blelloch.cu");
/// Single-pass scan with decoupled look-back (needs [`SINGLE_PASS`]).
pub const SCAN_LOOKBACK: &str = include_str!("../cuda/scan/lookback.cu");
/// Segmented scan by head flags over (flag, value) pairs on the look-back
/// (needs [`SINGLE_PASS`]).
pub const SCAN_SEGMENTED: &str = include_str!("../cuda/scan/segmented.cu");
/// Deterministic reduce-then-scan (needs WARP, BLOCK).
pub const SCAN_REDUCE_THEN_SCAN: &str = include_str!("../cuda/scan/reduce_then_scan.cu");

/// Stream compaction's own pieces: predicates, tile loads and keep masks,
/// ranks of kept items (needs [`SINGLE_PASS`] and BLOCK_REDUCE; crate `compact`).
pub const COMPACT: &str = include_str!("../cuda/compact/compact.cuh");
/// Single-pass compaction and partition scatter (crate `compact`).
pub const COMPACT_SINGLE_PASS: &str = include_str!("../cuda/compact/single_pass.cu");
/// Counting kept items (crate `compact`).
pub const COMPACT_COUNT: &str = include_str!("../cuda/compact/count.cu");
/// Three-pass compaction: map and scatter kernels (crate `compact`).
pub const COMPACT_THREE_PASS: &str = include_str!("../cuda/compact/three_pass.cu");
/// Runs of equal consecutive keys on the look-back: reduce by key,
/// run-length encoding, unique (needs [`SINGLE_PASS`]; crate `compact`).
pub const COMPACT_BY_KEY: &str = include_str!("../cuda/compact/by_key.cu");
/// Allocation by scan: widen counts, the total, the output-balanced expand
/// (crate `compact`).
pub const COMPACT_EXPAND: &str = include_str!("../cuda/compact/expand.cu");

/// Matvec: multiply-add and 16-byte vector helpers shared by the matvec kernels.
pub const MATVEC_COMMON: &str = include_str!("../cuda/linalg/matvec_common.cu");
/// Matvec from global memory, one thread per output (the lab's gpu-gm).
pub const MATVEC_GLOBAL: &str = include_str!("../cuda/linalg/matvec_global.cu");
/// Matvec with x staged in shared-memory tiles (the lab's gpu-sm).
pub const MATVEC_TILED: &str = include_str!("../cuda/linalg/matvec_tiled.cu");
/// Matvec, tuned: vectorised row groups for A·x, column-blocked two-pass Aᵀ·x.
pub const MATVEC_TUNED: &str = include_str!("../cuda/linalg/matvec_tuned.cu");
/// Transpose, one thread per element, strided writes.
pub const TRANSPOSE_NAIVE: &str = include_str!("../cuda/linalg/transpose_naive.cu");
/// Transpose through a 32 × 32 (or padded 32 × 33) shared tile.
pub const TRANSPOSE_TILED: &str = include_str!("../cuda/linalg/transpose_tiled.cu");
/// Transpose, tuned: element by element through a padded 32 × 32 or
/// 64 × 64 shared tile.
pub const TRANSPOSE_TUNED: &str = include_str!("../cuda/linalg/transpose_tuned.cu");
/// Transpose, tuned: a tall 64 × 128 tile with rotated, sector-aligned
/// stores, for rows that are not whole 256-byte blocks.
pub const TRANSPOSE_TALL: &str = include_str!("../cuda/linalg/transpose_tall.cu");
/// Transpose, tuned, 16-byte vectors through a swizzled tile (1- and 2-byte
/// elements).
pub const TRANSPOSE_VECTOR: &str = include_str!("../cuda/linalg/transpose_vector.cu");
/// 2-D convolution: Global, SharedFilter, ConstantFilter and TiledHalo
/// kernels (crate `linalg`, `conv`).
pub const CONV: &str = include_str!("../cuda/linalg/conv.cu");
/// 2-D convolution: TiledHalo's strip kernel, one warp per vertical strip
/// (needs CONV for its helpers; crate `linalg`, `conv_strip`).
pub const CONV_STRIP: &str = include_str!("../cuda/linalg/conv_strip.cu");
/// 2-D convolution: TiledHalo's register-tile kernel, a shared tile and a
/// block of outputs per thread (needs CONV for its helpers; crate `linalg`,
/// `conv_register_tile`).
pub const CONV_REGISTER_TILE: &str = include_str!("../cuda/linalg/conv_register_tile.cu");
/// CSR SpMV: the sum functor, the row store (α·sum + β·y) and the product.
pub const SPMV_COMMON: &str = include_str!("../cuda/linalg/spmv_common.cu");
/// CSR SpMV, one thread per row (needs SPMV_COMMON).
pub const SPMV_SCALAR: &str = include_str!("../cuda/linalg/spmv_scalar.cu");
/// CSR SpMV, one warp per row (needs SPMV_COMMON).
pub const SPMV_VECTOR: &str = include_str!("../cuda/linalg/spmv_vector.cu");
/// CSR SpMV balanced by the merge path (needs SPMV_COMMON and MERGE_PATH).
pub const SPMV_MERGE_PATH: &str = include_str!("../cuda/linalg/spmv_merge_path.cu");
/// CSR SpMV by segmented scan: products, row heads, row gather (needs SPMV_COMMON).
pub const SPMV_SEGMENTED_SCAN: &str = include_str!("../cuda/linalg/spmv_segmented_scan.cu");

/// Reduction: the reducer functors (operator, map, arg and min–max pairs)
/// and the ordered warp and block reductions every reduce kernel uses
/// (needs WARP; crate `reduce`).
pub const REDUCE: &str = include_str!("../cuda/reduce/reduce.cuh");
/// Reduction, the default: one pass over the input, per-block partials,
/// the last block to finish combines them (needs REDUCE and TILE_STATUS).
pub const REDUCE_SINGLE_PASS: &str = include_str!("../cuda/reduce/single_pass.cu");
/// Reduction, the lesson's trees: one launch per level in global memory,
/// and a shared-memory tree per block (needs REDUCE).
pub const REDUCE_TREE: &str = include_str!("../cuda/reduce/tree.cu");
/// Histograms: global atomics, per-block privatised counts, and the
/// default's kernels (crate `reduce`, module `histogram`).
pub const HISTOGRAM: &str = include_str!("../cuda/reduce/histogram.cu");
/// The histogram by sort: bin indices by the binners of [`HISTOGRAM`],
/// then, after the sort crate has sorted them, counts as distances between
/// run boundaries (needs HISTOGRAM).
pub const HISTOGRAM_SORT: &str = include_str!("../cuda/reduce/histogram_sort.cu");
/// Segmented reduce by offsets, balanced by the merge path (needs MERGE_PATH).
pub const REDUCE_SEGMENTED: &str = include_str!("../cuda/reduce/segmented.cu");

/// Sort keys: the order-preserving map of every key type to an unsigned
/// integer (`radix_key<K>`), digit extraction (crate `sort`).
pub const SORT_RADIX_KEY: &str = include_str!("../cuda/sort/radix_key.cuh");
/// The stable warp-level ranking by digit (peer masks by ballots or
/// `__match_any_sync`, warp-private counters) that the Onesweep pass and the
/// one-block sort share (needs COMMON only).
pub const SORT_WARP_RANK: &str = include_str!("../cuda/sort/warp_rank.cuh");
/// The default sort, Onesweep LSD radix sort: the all-digit upsweep, the
/// digit offsets, the digit pass with per-digit look-back (needs BLOCK,
/// TILE_STATUS, [`SINGLE_PASS_DIGIT_LOOKBACK`], [`SORT_RADIX_KEY`],
/// [`SORT_WARP_RANK`]).
pub const SORT_ONESWEEP: &str = include_str!("../cuda/sort/onesweep.cu");
/// The one-block sort of small inputs in shared memory (needs
/// [`SORT_ONESWEEP`]).
pub const SORT_BLOCK: &str = include_str!("../cuda/sort/block_sort.cu");
/// Top-k by radix select: digit histograms narrowing the k-th key, then an
/// ordered filter on the per-digit look-back (needs [`SORT_ONESWEEP`]).
pub const SORT_TOP_K: &str = include_str!("../cuda/sort/top_k.cu");
/// The lesson's sorts: what they share, prepare (radix images and
/// indices), gather and copy back (needs SORT_RADIX_KEY; crate `sort`,
/// module `lab`).
pub const SORT_LAB_COMMON: &str = include_str!("../cuda/sort/lab_common.cuh");
/// Odd–even transposition sort: one block, or one launch per phase (needs
/// SORT_LAB_COMMON).
pub const SORT_LAB_ODD_EVEN: &str = include_str!("../cuda/sort/lab_odd_even.cu");
/// Bitonic sort for any n: shared-memory tiles, global merge steps (needs
/// SORT_LAB_COMMON).
pub const SORT_LAB_BITONIC: &str = include_str!("../cuda/sort/lab_bitonic.cu");
/// Merge sort: bitonic block sort, merge-path passes (needs
/// SORT_LAB_BITONIC).
pub const SORT_LAB_MERGE: &str = include_str!("../cuda/sort/lab_merge.cu");
/// The lesson's one-bit split radix sort: flags and scatter around the scan
/// crate's exclusive sum (needs SORT_LAB_COMMON).
pub const SORT_LAB_SPLIT_RADIX: &str = include_str!("../cuda/sort/lab_split_radix.cu");

/// Every embedded source, by its path under `kernels/cuda/`, for tooling
/// (the kernel-compile test, the docs).
pub fn all_sources() -> Vec<(&'static str, &'static str)> {
    vec![
        ("common.cuh", COMMON),
        ("gpu_core.cu", GPU_CORE),
        ("warp/warp_scan.cuh", WARP),
        ("block/block_scan.cuh", BLOCK),
        ("block/block_reduce.cuh", BLOCK_REDUCE),
        ("block/merge_path.cuh", MERGE_PATH),
        ("single_pass/tile_status.cuh", TILE_STATUS),
        ("single_pass/lookback.cuh", SINGLE_PASS_LOOKBACK),
        ("single_pass/digit_lookback.cuh", SINGLE_PASS_DIGIT_LOOKBACK),
        ("single_pass/headed_value.cuh", SINGLE_PASS_HEADED_VALUE),
        ("scan/lookback.cu", SCAN_LOOKBACK),
        ("scan/reduce_then_scan.cu", SCAN_REDUCE_THEN_SCAN),
        ("scan/segmented.cu", SCAN_SEGMENTED),
        ("scan/recursive.cuh", SCAN_RECURSIVE),
        ("scan/hillis_steele_global.cu", SCAN_HILLIS_STEELE_GLOBAL),
        ("scan/hillis_steele.cu", SCAN_HILLIS_STEELE),
        ("scan/blelloch.cu", SCAN_BLELLOCH),
        ("compact/compact.cuh", COMPACT),
        ("compact/single_pass.cu", COMPACT_SINGLE_PASS),
        ("compact/count.cu", COMPACT_COUNT),
        ("compact/three_pass.cu", COMPACT_THREE_PASS),
        ("compact/by_key.cu", COMPACT_BY_KEY),
        ("compact/expand.cu", COMPACT_EXPAND),
        ("linalg/matvec_common.cu", MATVEC_COMMON),
        ("linalg/matvec_global.cu", MATVEC_GLOBAL),
        ("linalg/matvec_tiled.cu", MATVEC_TILED),
        ("linalg/matvec_tuned.cu", MATVEC_TUNED),
        ("linalg/transpose_naive.cu", TRANSPOSE_NAIVE),
        ("linalg/transpose_tiled.cu", TRANSPOSE_TILED),
        ("linalg/transpose_tuned.cu", TRANSPOSE_TUNED),
        ("linalg/transpose_tall.cu", TRANSPOSE_TALL),
        ("linalg/transpose_vector.cu", TRANSPOSE_VECTOR),
        ("linalg/conv.cu", CONV),
        ("linalg/conv_strip.cu", CONV_STRIP),
        ("linalg/conv_register_tile.cu", CONV_REGISTER_TILE),
        ("linalg/spmv_common.cu", SPMV_COMMON),
        ("linalg/spmv_scalar.cu", SPMV_SCALAR),
        ("linalg/spmv_vector.cu", SPMV_VECTOR),
        ("linalg/spmv_merge_path.cu", SPMV_MERGE_PATH),
        ("linalg/spmv_segmented_scan.cu", SPMV_SEGMENTED_SCAN),
        ("reduce/reduce.cuh", REDUCE),
        ("reduce/single_pass.cu", REDUCE_SINGLE_PASS),
        ("reduce/tree.cu", REDUCE_TREE),
        ("reduce/histogram.cu", HISTOGRAM),
        ("reduce/histogram_sort.cu", HISTOGRAM_SORT),
        ("reduce/segmented.cu", REDUCE_SEGMENTED),
        ("sort/radix_key.cuh", SORT_RADIX_KEY),
        ("sort/warp_rank.cuh", SORT_WARP_RANK),
        ("sort/onesweep.cu", SORT_ONESWEEP),
        ("sort/block_sort.cu", SORT_BLOCK),
        ("sort/top_k.cu", SORT_TOP_K),
        ("sort/lab_common.cuh", SORT_LAB_COMMON),
        ("sort/lab_odd_even.cu", SORT_LAB_ODD_EVEN),
        ("sort/lab_bitonic.cu", SORT_LAB_BITONIC),
        ("sort/lab_merge.cu", SORT_LAB_MERGE),
        ("sort/lab_split_radix.cu", SORT_LAB_SPLIT_RADIX),
    ]
}
