//! Launch geometry for 1-D and 2-D work with 64-bit counts.
//!
//! CUDA limits a grid to 2^31 − 1 blocks in x and 65 535 in y and z. Work
//! that needs more blocks than x holds spills into y (and, for 2-D work, rows
//! of blocks spill from y into z). Kernels recover the flat block index with
//! `linear_block_index()` from `common.cuh` and must guard against the few
//! surplus blocks of the last partial row of the grid.

use crate::error::{Error, Result};

/// Largest `gridDim.x`.
pub const MAX_GRID_X: u64 = (1 << 31) - 1;
/// Largest `gridDim.y` and `gridDim.z`.
pub const MAX_GRID_YZ: u64 = 65_535;
/// Largest block, in threads, on every GPU parprims supports.
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// What a kernel launch needs besides its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Grid size in blocks, (x, y, z).
    pub grid: (u32, u32, u32),
    /// Block size in threads, (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// Blocks the grid launches (x·y·z), some of which may be surplus.
    ///
    /// ```
    /// use gpu_core::LaunchConfig;
    /// let config = LaunchConfig { grid: (100, 3, 1), block: (256, 1, 1), shared_bytes: 0 };
    /// assert_eq!(config.grid_blocks(), 300);
    /// ```
    pub fn grid_blocks(&self) -> u64 {
        self.grid.0 as u64 * self.grid.1 as u64 * self.grid.2 as u64
    }
    /// Threads per block.
    ///
    /// ```
    /// use gpu_core::LaunchConfig;
    /// let config = LaunchConfig { grid: (8, 8, 1), block: (32, 8, 1), shared_bytes: 0 };
    /// assert_eq!(config.block_threads(), 256);
    /// ```
    pub fn block_threads(&self) -> u32 {
        self.block.0 * self.block.1 * self.block.2
    }
}

/// Spreads `blocks` over (x, y): x = min(blocks, 2^31 − 1), y = ⌈blocks / x⌉.
/// The grid holds `x·y ≥ blocks` blocks; the surplus (< x) must exit early.
///
/// ```
/// use gpu_core::launch::{spread_blocks, MAX_GRID_X};
/// assert_eq!(spread_blocks(1000)?, (1000, 1, 1));
/// assert_eq!(spread_blocks(MAX_GRID_X + 1)?, (MAX_GRID_X as u32, 2, 1)); // spills into y
/// assert!(spread_blocks(0).is_err());
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn spread_blocks(blocks: u64) -> Result<(u32, u32, u32)> {
    if blocks == 0 {
        return Err(Error::invalid("blocks", "a grid needs at least one block"));
    }
    let x = blocks.min(MAX_GRID_X);
    let y = blocks.div_ceil(x);
    if y > MAX_GRID_YZ {
        return Err(Error::invalid(
            "blocks",
            format!("{blocks} blocks exceed one grid ({MAX_GRID_X} × {MAX_GRID_YZ})"),
        ));
    }
    Ok((x as u32, y as u32, 1))
}

/// Checks a block size: 1 to 1024 threads, a multiple of the warp size (32)
/// when `multiple_of_warp`, a power of two when `power_of_two`.
///
/// ```
/// use gpu_core::launch::check_block_threads;
/// assert!(check_block_threads(96, false).is_ok());
/// assert!(check_block_threads(96, true).is_err()); // not a power of two
/// assert!(check_block_threads(100, false).is_err()); // not a multiple of 32
/// ```
pub fn check_block_threads(block_threads: u32, power_of_two: bool) -> Result<()> {
    if !(32..=MAX_BLOCK_THREADS).contains(&block_threads) || !block_threads.is_multiple_of(32) {
        return Err(Error::invalid(
            "block_threads",
            format!("{block_threads}: must be a multiple of 32 from 32 to 1024"),
        ));
    }
    if power_of_two && !block_threads.is_power_of_two() {
        return Err(Error::invalid(
            "block_threads",
            format!("{block_threads}: this algorithm needs a power of two"),
        ));
    }
    Ok(())
}

/// 1-D work: `items` items, `block_threads` threads per block, each thread
/// taking `items_per_thread` items, so a block covers
/// `block_threads · items_per_thread` items and the grid ⌈items / that⌉ blocks.
///
/// Returns the configuration and the number of real blocks (the kernel's
/// bound for `linear_block_index()`).
///
/// ```
/// use gpu_core::launch::grid_1d;
/// // 1,000,000 items, 256 threads × 4 items per block: 977 blocks.
/// let (config, blocks) = grid_1d(1_000_000, 256, 4, 0)?;
/// assert_eq!((config.grid, config.block, blocks), ((977, 1, 1), (256, 1, 1), 977));
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn grid_1d(
    items: u64,
    block_threads: u32,
    items_per_thread: u32,
    shared_bytes: u32,
) -> Result<(LaunchConfig, u64)> {
    if block_threads == 0 || block_threads > MAX_BLOCK_THREADS {
        return Err(Error::invalid(
            "block_threads",
            format!("{block_threads}: must be 1 to 1024"),
        ));
    }
    if items_per_thread == 0 {
        return Err(Error::invalid("items_per_thread", "must be at least 1"));
    }
    let tile_items = block_threads as u64 * items_per_thread as u64;
    let blocks = items.div_ceil(tile_items).max(1);
    Ok((
        LaunchConfig {
            grid: spread_blocks(blocks)?,
            block: (block_threads, 1, 1),
            shared_bytes,
        },
        blocks,
    ))
}

/// 2-D work over `rows × cols` items with `block = (bx, by)` threads, each
/// thread covering `per_thread = (px, py)` items (columns, rows).
///
/// Grid x runs over column tiles (at most 2^31 − 1); row tiles go into y, and
/// past 65 535 into z: the kernel's row-tile index is
/// `blockIdx.z * gridDim.y + blockIdx.y` (`block_row_2d()` in `common.cuh`).
///
/// ```
/// use gpu_core::launch::grid_2d;
/// // A 1000 × 3000 matrix, 32 × 8 threads, each thread 1 column × 4 rows: 94 × 32 tiles.
/// let config = grid_2d(1000, 3000, (32, 8), (1, 4), 0)?;
/// assert_eq!((config.grid, config.block), ((94, 32, 1), (32, 8, 1)));
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn grid_2d(
    rows: u64,
    cols: u64,
    block: (u32, u32),
    per_thread: (u32, u32),
    shared_bytes: u32,
) -> Result<LaunchConfig> {
    let threads = block.0 as u64 * block.1 as u64;
    if block.0 == 0 || block.1 == 0 || threads > MAX_BLOCK_THREADS as u64 {
        return Err(Error::invalid(
            "block",
            format!("{}×{}: needs 1 to 1024 threads", block.0, block.1),
        ));
    }
    if per_thread.0 == 0 || per_thread.1 == 0 {
        return Err(Error::invalid("per_thread", "must be at least 1×1"));
    }
    let col_tiles = cols.div_ceil(block.0 as u64 * per_thread.0 as u64).max(1);
    let row_tiles = rows.div_ceil(block.1 as u64 * per_thread.1 as u64).max(1);
    if col_tiles > MAX_GRID_X {
        return Err(Error::invalid(
            "cols",
            format!("{cols} columns need too many blocks"),
        ));
    }
    let y = row_tiles.min(MAX_GRID_YZ);
    let z = row_tiles.div_ceil(y);
    if z > MAX_GRID_YZ {
        return Err(Error::invalid(
            "rows",
            format!("{rows} rows need too many blocks"),
        ));
    }
    Ok(LaunchConfig {
        grid: (col_tiles as u32, y as u32, z as u32),
        block: (block.0, block.1, 1),
        shared_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_grids_use_x_only() {
        let (cfg, blocks) = grid_1d(1000, 256, 1, 0).unwrap();
        assert_eq!(blocks, 4);
        assert_eq!(cfg.grid, (4, 1, 1));
        let (cfg, blocks) = grid_1d(0, 256, 4, 0).unwrap();
        assert_eq!((cfg.grid, blocks), ((1, 1, 1), 1));
    }

    #[test]
    fn huge_grids_spill_into_y() {
        let items = 5u64 << 40; // far more blocks than x holds
        let (cfg, blocks) = grid_1d(items, 256, 1, 0).unwrap();
        assert_eq!(blocks, items / 256);
        assert_eq!(cfg.grid.0 as u64, MAX_GRID_X);
        assert!(cfg.grid_blocks() >= blocks);
        assert!(cfg.grid_blocks() - blocks < MAX_GRID_X);
        assert!(spread_blocks(MAX_GRID_X * MAX_GRID_YZ + 1).is_err());
    }

    #[test]
    fn block_sizes_are_checked() {
        assert!(check_block_threads(512, true).is_ok());
        assert!(check_block_threads(96, false).is_ok());
        assert!(check_block_threads(96, true).is_err());
        assert!(check_block_threads(16, false).is_err());
        assert!(check_block_threads(2048, false).is_err());
        assert!(grid_1d(10, 0, 1, 0).is_err());
        assert!(grid_1d(10, 32, 0, 0).is_err());
    }

    #[test]
    fn tall_2d_grids_fold_rows_into_z() {
        let cfg = grid_2d(1 << 28, 1, (32, 8), (1, 4), 0).unwrap();
        let row_tiles = (1u64 << 28) / 32;
        assert_eq!(cfg.grid.0, 1);
        assert!(cfg.grid.1 as u64 * cfg.grid.2 as u64 >= row_tiles);
        assert!(cfg.grid.2 > 1);
        assert!(grid_2d(4, 4, (64, 32), (1, 1), 0).is_err());
    }

    proptest! {
        #[test]
        fn grid_1d_covers_every_item(items in 0u64..1 << 50, shift in 5u32..11, ipt in 1u32..16) {
            let block = 1u32 << shift;
            let (cfg, blocks) = grid_1d(items, block, ipt, 0).unwrap();
            let tile = block as u64 * ipt as u64;
            prop_assert!(blocks * tile >= items);
            prop_assert!(items == 0 || (blocks - 1) * tile < items);
            prop_assert!(cfg.grid_blocks() >= blocks);
        }

        #[test]
        fn grid_2d_covers_every_item(rows in 1u64..1 << 24, cols in 1u64..1 << 24, bx in 1u32..33, by in 1u32..33) {
            let cfg = grid_2d(rows, cols, (bx, by), (1, 1), 0).unwrap();
            prop_assert!(cfg.grid.0 as u64 * bx as u64 >= cols);
            prop_assert!(cfg.grid.1 as u64 * cfg.grid.2 as u64 * by as u64 >= rows);
        }
    }
}
