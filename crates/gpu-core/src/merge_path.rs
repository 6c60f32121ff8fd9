//! The host side of the merge-path machinery (`kernels/cuda/block/merge_path.cuh`)
//! that every work-balanced primitive composes (segmented reduce by
//! offsets, the CSR SpMV's merge-path method): the temporaries of a call,
//! carved from the arena's scratch words, and the two launches of the carry
//! fix-up.
//!
//! A call of `tiles` tiles holds, in this order: the partition's
//! coordinates (`tiles + 1` words), each tile's carry (a `u64` key and a
//! value), and, past one [`FIXUP_CHUNK`] of tiles, two summary carries per
//! chunk. The fix-up then runs as
//!   1. `*_fixup_chunks` (only past one chunk): one block of
//!      [`FIXUP_CHUNK_THREADS`] per chunk of carries applies the runs of
//!      equal keys inside its chunk and writes its first and last run as
//!      two summaries;
//!   2. `*_fixup`: one block folds the summaries (or, within one chunk,
//!      the carries themselves) in order and applies them.
//!
//! Bytes: 8 + s per tile of carries, read once; 2·(8 + s) per chunk of
//! summaries, written and read once.

use crate::launch::grid_1d;
use crate::{DeviceType, DeviceViewMut, Gpu, Kernel, KernelArgs, Result};

/// Threads per block of a fix-up chunk, and of the one-block fold.
pub const FIXUP_CHUNK_THREADS: u32 = 256;
/// Carries per thread of a fix-up chunk, and per thread per round of the
/// one-block fold (one round for up to a chunk of carries or summaries).
pub const FIXUP_CHUNK_ITEMS: u32 = 4;
/// Carries per chunk of the fix-up: past this many tiles, a grid of chunks
/// applies the runs inside each chunk before one block folds the rest.
pub const FIXUP_CHUNK: u64 = FIXUP_CHUNK_THREADS as u64 * FIXUP_CHUNK_ITEMS as u64;

/// Summary carries of a call of `tiles` tiles: two per fix-up chunk when
/// there is more than one chunk, none otherwise.
///
/// ```
/// use gpu_core::merge_path::{summary_carries, FIXUP_CHUNK};
/// assert_eq!(summary_carries(FIXUP_CHUNK), 0);
/// assert_eq!(summary_carries(FIXUP_CHUNK + 1), 4);
/// assert_eq!(summary_carries(2 * FIXUP_CHUNK + 1), 6);
/// ```
pub const fn summary_carries(tiles: u64) -> u64 {
    if tiles > FIXUP_CHUNK {
        2 * tiles.div_ceil(FIXUP_CHUNK)
    } else {
        0
    }
}

/// Scratch words of a call of `tiles` tiles with values of `value_bytes`:
/// the coordinates (tiles + 1), the carry keys (tiles), the carry values
/// (tiles, rounded up to whole words), then the summary keys and values
/// ([`summary_carries`] of each, the values rounded up to whole words).
///
/// ```
/// use gpu_core::merge_path::{scratch_words, FIXUP_CHUNK};
/// assert_eq!(scratch_words(1, 4), 2 + 1 + 1);
/// assert_eq!(scratch_words(5, 4), 6 + 5 + 3);
/// let tiles = 3 * FIXUP_CHUNK;
/// assert_eq!(scratch_words(tiles, 8), (tiles + 1) + 2 * tiles + 6 + 6);
/// ```
pub const fn scratch_words(tiles: u64, value_bytes: usize) -> u64 {
    let summaries = summary_carries(tiles);
    (tiles + 1)
        + tiles
        + (tiles * value_bytes as u64).div_ceil(8)
        + summaries
        + (summaries * value_bytes as u64).div_ceil(8)
}

/// The temporaries of one merge-path call, carved from [`scratch_words`]
/// words of scratch.
pub struct MergePathScratch<'a, T: DeviceType> {
    /// The partition's segment coordinate of every tile boundary (tiles + 1).
    pub coordinates: DeviceViewMut<'a, u64>,
    /// Each tile's carry key: the segment (row) it ends in.
    pub carry_keys: DeviceViewMut<'a, u64>,
    /// Each tile's carry value: its part of that segment.
    pub carry_values: DeviceViewMut<'a, T>,
    summary_keys: DeviceViewMut<'a, u64>,
    summary_values: DeviceViewMut<'a, T>,
    tiles: u64,
}

impl<'a, T: DeviceType> MergePathScratch<'a, T> {
    /// Carves the temporaries of a call of `tiles` tiles from `scratch`
    /// (at least [`scratch_words`]`(tiles, T::BYTES)` words; a shorter one
    /// is a typed error).
    pub fn carve(scratch: DeviceViewMut<'a, u64>, tiles: u64) -> Result<Self> {
        let tiles_len = tiles as usize;
        let (coordinates, rest) = scratch.split_at_mut(tiles_len + 1)?;
        let (carry_keys, rest) = rest.split_at_mut(tiles_len)?;
        let value_words = (tiles * T::BYTES as u64).div_ceil(8) as usize;
        let (carry_words, rest) = rest.split_at_mut(value_words)?;
        let carry_values = carry_words.into_elements::<T>()?.into_slice(..tiles_len)?;
        let summaries = summary_carries(tiles) as usize;
        let (summary_keys, rest) = rest.split_at_mut(summaries)?;
        let summary_values = rest.into_elements::<T>()?.into_slice(..summaries)?;
        Ok(MergePathScratch {
            coordinates,
            carry_keys,
            carry_values,
            summary_keys,
            summary_values,
            tiles,
        })
    }

    /// Launches the fix-up of the carries the tiles wrote: the chunks
    /// (past one [`FIXUP_CHUNK`] of tiles) and the one-block fold, which
    /// apply every carry to `out`. Both kernels take `(const u64*
    /// carry_keys, const T* carry_values, u64 count, T* out, u64 bound,
    /// EXTRA…)`, the chunks' kernel then `(u64* summary_keys, T*
    /// summary_values)`; `extra` appends EXTRA (SpMV's α; nothing for
    /// segmented reduce).
    ///
    /// # Safety
    /// The kernels must have those signatures and be the `merge_path.cuh`
    /// fix-up of the tiles that wrote these carries (keys at or past
    /// `bound` skipped, every other key below `out`'s length), launched
    /// after the tiles on the same stream.
    pub unsafe fn launch_fixup(
        &mut self,
        gpu: &Gpu,
        [chunks_kernel, fold_kernel]: [&Kernel; 2],
        out: &mut DeviceViewMut<'_, T>,
        bound: u64,
        extra: &dyn Fn(&mut KernelArgs),
    ) -> Result<()> {
        let tiles = self.tiles;
        let summaries = summary_carries(tiles);
        if summaries > 0 {
            let (config, chunks) = grid_1d(tiles, FIXUP_CHUNK_THREADS, FIXUP_CHUNK_ITEMS, 0)?;
            debug_assert_eq!(2 * chunks, summaries);
            let mut args = KernelArgs::new();
            args.input(&self.carry_keys.as_view())
                .input(&self.carry_values.as_view())
                .scalar(tiles)
                .output(out)
                .scalar(bound);
            extra(&mut args);
            args.output(&mut self.summary_keys)
                .output(&mut self.summary_values);
            // SAFETY: the caller's contract (the signature above); block c
            // reads the carries [c·FIXUP_CHUNK, min((c + 1)·FIXUP_CHUNK,
            // tiles)) and writes summaries 2c and 2c + 1 (2·chunks of them).
            unsafe { gpu.launch(chunks_kernel, config, &args)? };
        }
        // The one-block fold: over the summaries, or the carries themselves.
        let (keys, values, count) = if summaries > 0 {
            (
                self.summary_keys.as_view(),
                self.summary_values.as_view(),
                summaries,
            )
        } else {
            (
                self.carry_keys.as_view(),
                self.carry_values.as_view(),
                tiles,
            )
        };
        let (config, _) = grid_1d(FIXUP_CHUNK_THREADS as u64, FIXUP_CHUNK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(&keys)
            .input(&values)
            .scalar(count)
            .output(out)
            .scalar(bound);
        extra(&mut args);
        // SAFETY: the caller's contract; one block over `count` carries.
        unsafe { gpu.launch(fold_kernel, config, &args) }
    }
}
