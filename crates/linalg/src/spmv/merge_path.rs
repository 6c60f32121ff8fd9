//! `SpmvAlgorithm::MergePath`, the default: CSR SpMV balanced by work, after
//! Merrill & Garland, "Merge-based Parallel Sparse Matrix-Vector
//! Multiplication" (SC 2016). Kernels: `kernels/cuda/linalg/spmv_merge_path.cu`
//! over `kernels/cuda/block/merge_path.cuh`, which segmented reduce shares.
//!
//! - **The path.** Merge the row ends (`offsets[1..]`) with the non-zero
//!   indices 0..nnz, taking a row end before non-zero j when the end is ≤ j:
//!   rows + nnz steps, each row's non-zeros followed by its end. Diagonal d
//!   is the point after d steps, ([`merge_path_search`]: rows consumed,
//!   the rest non-zeros). Cutting the path into tiles of
//!   [`merge_tile_steps`] diagonals gives every block, and every thread in
//!   it, the same rows + non-zeros whatever the row lengths: one row of a
//!   million entries or a million empty rows cost what their steps cost.
//! - **Launches.** (1) partition: one thread per tile boundary searches its
//!   diagonal; (2) tiles: a block stages its products `vals·x[cols]` and row
//!   ends in shared memory (coalesced loads), each thread consumes 7 steps,
//!   a keyed block scan joins rows that cross threads, finished rows are
//!   stored as α·sum + β·y, the partial last row is the block's carry; (3)
//!   fix-up: every row that earlier blocks carried into gets `y[r] +=
//!   α·(their carries, in block order)`. Past [`MERGE_FIXUP_CHUNK`] tiles
//!   a grid of chunks applies the rows whose carries lie inside a chunk and
//!   leaves two summary carries per chunk, then one block of 256 folds the
//!   summaries; fewer carries go to that block directly. The coordinates,
//!   carries and summaries are words of the scratch arena
//!   ([`Gpu::with_scratch_words`], [`merge_scratch_words`] of them), written
//!   before they are read: after the first call at a size, a call allocates
//!   nothing and sets nothing.
//! - **Work** rows + nnz steps; **steps** per thread 7 + log(row ends in the
//!   tile) + the block scan; fix-up one round per chunk and one of the
//!   summaries.
//! - **Bytes** [`super::spmv_bytes_moved`] plus 16 bytes per tile of carries,
//!   8 of coordinates, and 2 · (8 + value) per chunk of summaries (tiles =
//!   (rows + nnz) / 1792).
//! - **Shared memory** per block: 1792 slots of a value, shared by the
//!   tile's products and its `u32` row ends (7 KiB for `f32`, 14 KiB for
//!   `f64`).
//! - **Deterministic**: the summation order depends only on the matrix.

use gpu_core::launch::grid_1d;
use gpu_core::merge_path::MergePathScratch;
use gpu_core::{DeviceView, DeviceViewMut, Error, Gpu, Kernel, KernelArgs, Result};

use super::module::{kernel, SpmvOffset, MERGE_BLOCK_THREADS, MERGE_ITEMS, ROW_BLOCK_THREADS};
use super::{CsrParts, SpmvElement};

/// Merge steps (rows + non-zeros) per tile: 256 threads × 7.
pub const fn merge_tile_steps() -> u64 {
    MERGE_BLOCK_THREADS as u64 * MERGE_ITEMS as u64
}

/// Tiles of a matrix with `rows` rows and `nnz` non-zeros.
///
/// ```
/// use linalg::spmv::merge_path::{merge_tile_steps, merge_tiles};
/// assert_eq!(merge_tiles(1, 0), 1);
/// assert_eq!(merge_tiles(100, merge_tile_steps() - 100), 1);
/// assert_eq!(merge_tiles(100, merge_tile_steps() - 99), 2);
/// ```
pub fn merge_tiles(rows: u64, nnz: u64) -> u64 {
    (rows + nnz).div_ceil(merge_tile_steps()).max(1)
}

/// The row coordinate of `diagonal` on the merge path of `offsets` (rows +
/// 1 entries, from 0 to nnz): how many row ends the first `diagonal` steps
/// take; the non-zero coordinate is `diagonal` minus it. The host twin of
/// `merge_path_search` in `merge_path.cuh`, for tests and planning.
///
/// ```
/// use linalg::spmv::merge_path::merge_path_search;
/// // Rows of 2, 0 and 1 non-zeros: steps nz0 nz1 end0 end1 nz2 end2.
/// let offsets = [0u64, 2, 2, 3];
/// let coordinates: Vec<u64> = (0..=6).map(|d| merge_path_search(d, &offsets)).collect();
/// assert_eq!(coordinates, vec![0, 0, 0, 1, 2, 2, 3]);
/// ```
pub fn merge_path_search(diagonal: u64, offsets: &[u64]) -> u64 {
    let rows = offsets.len().saturating_sub(1) as u64;
    let nnz = offsets.last().copied().unwrap_or(0);
    let mut lo = diagonal.saturating_sub(nnz);
    let mut hi = diagonal.min(rows);
    while lo < hi {
        let mid = (lo + hi) / 2;
        // Row mid ends before non-zero diagonal − mid − 1 is taken.
        if offsets[mid as usize + 1] < diagonal - mid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Carries per chunk of the fix-up: past this many tiles, a grid of chunks
/// applies the rows inside each chunk before one block folds the rest.
pub const MERGE_FIXUP_CHUNK: u64 = gpu_core::merge_path::FIXUP_CHUNK;

/// Summary carries of a call of `tiles` tiles: two per fix-up chunk when
/// there is more than one chunk, none otherwise.
///
/// ```
/// use linalg::spmv::merge_path::{merge_summary_carries, MERGE_FIXUP_CHUNK};
/// assert_eq!(merge_summary_carries(MERGE_FIXUP_CHUNK), 0);
/// assert_eq!(merge_summary_carries(2 * MERGE_FIXUP_CHUNK + 1), 6);
/// ```
pub const fn merge_summary_carries(tiles: u64) -> u64 {
    gpu_core::merge_path::summary_carries(tiles)
}

/// Scratch words of a merge-path call of `tiles` tiles with values of
/// `value_bytes`: the coordinates (tiles + 1), the carry keys (tiles), the
/// carry values (tiles, rounded up to whole words), then the summary keys
/// and values ([`merge_summary_carries`] of each, the values rounded up to
/// whole words).
///
/// ```
/// use linalg::spmv::merge_path::{merge_scratch_words, MERGE_FIXUP_CHUNK};
/// assert_eq!(merge_scratch_words(1, 4), 2 + 1 + 1);
/// assert_eq!(merge_scratch_words(3, 8), 4 + 3 + 3);
/// let tiles = MERGE_FIXUP_CHUNK + 1;
/// assert_eq!(merge_scratch_words(tiles, 4), (tiles + 1) + tiles + (tiles * 4).div_ceil(8) + 4 + 2);
/// ```
pub fn merge_scratch_words(tiles: u64, value_bytes: usize) -> u64 {
    gpu_core::merge_path::scratch_words(tiles, value_bytes)
}

pub(crate) fn launch<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    y: DeviceViewMut<'_, T>,
) -> Result<()> {
    let (rows, nnz) = (a.rows as u64, a.nnz as u64);
    let tiles = merge_tiles(rows, nnz);
    let words = usize::try_from(merge_scratch_words(tiles, T::BYTES))
        .map_err(|_| Error::invalid("matrix", "too many merge-path tiles"))?;
    // The kernels first: a first use compiles, and the arena stays free
    // meanwhile.
    let kernels = [
        kernel::<T, O>(gpu, "spmv_merge_partition")?,
        kernel::<T, O>(gpu, "spmv_merge_tiles")?,
        kernel::<T, O>(gpu, "spmv_merge_fixup_chunks")?,
        kernel::<T, O>(gpu, "spmv_merge_fixup")?,
    ];
    // SAFETY: the partition writes every coordinate 0..=tiles before the
    // tiles read them, each tile writes its carry before the fix-up reads
    // it, and each chunk writes its two summaries before the last launch
    // reads them (stream order); nothing else is read.
    unsafe {
        gpu.with_scratch_words(words, |scratch, _| {
            launch_on(gpu, &kernels, a, x, alpha, beta, y, tiles, scratch)
        })
    }
}

/// The launches of `kernels` (partition, tiles, fix-up chunks when there is
/// more than one, fix-up), the temporaries carved from `scratch`
/// ([`merge_scratch_words`] words).
#[allow(clippy::too_many_arguments)]
fn launch_on<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    [partition, tile_kernel, fixup_chunks, fixup]: &[Kernel; 4],
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    mut y: DeviceViewMut<'_, T>,
    tiles: u64,
    scratch: DeviceViewMut<'_, u64>,
) -> Result<()> {
    let (rows, nnz) = (a.rows as u64, a.nnz as u64);
    let mut temps = MergePathScratch::<T>::carve(scratch, tiles)?;

    let (config, _) = grid_1d(tiles + 1, ROW_BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&a.offsets)
        .scalar(rows)
        .scalar(nnz)
        .output(&mut temps.coordinates)
        .scalar(tiles);
    // SAFETY: (const O* offsets, u64 rows, u64 nnz, u64* coordinates, u64
    // tiles); offsets has rows + 1 entries (validated), coordinates tiles +
    // 1, threads past tiles return.
    unsafe { gpu.launch(partition, config, &args)? };

    let (config, blocks) = grid_1d(
        tiles * merge_tile_steps(),
        MERGE_BLOCK_THREADS,
        MERGE_ITEMS,
        0,
    )?;
    debug_assert_eq!(blocks, tiles);
    let mut args = KernelArgs::new();
    args.input(&a.offsets)
        .input(&a.columns)
        .input(&a.values)
        .input(&x)
        .output(&mut y)
        .input(&temps.coordinates.as_view())
        .output(&mut temps.carry_keys)
        .output(&mut temps.carry_values)
        .scalar(rows)
        .scalar(nnz)
        .scalar(tiles)
        .scalar(alpha)
        .scalar(beta);
    // SAFETY: the entry takes (offsets, cols, vals, x, y, coordinates,
    // carry_keys, carry_values, rows, nnz, tiles, alpha, beta) in this
    // order; the matrix is validated (columns below cols = x's length), y
    // has rows elements, coordinates tiles + 1, the carries tiles; static
    // shared memory only.
    unsafe { gpu.launch(tile_kernel, config, &args)? };

    // SAFETY: the fix-up entries of this module take (const u64*
    // carry_keys, const T* carry_values, u64 count, T* y, u64 rows, T
    // alpha), the chunks then (u64* summary_keys, T* summary_values); keys
    // at or past rows are skipped; the tiles above wrote the carries.
    unsafe {
        temps.launch_fixup(gpu, [fixup_chunks, fixup], &mut y, rows, &|args| {
            args.scalar(alpha);
        })
    }
}
