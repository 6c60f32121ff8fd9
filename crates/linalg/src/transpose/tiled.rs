//! `TransposeAlgorithm::Tiled` and `TiledPadded`: a 32 × 32 block of
//! threads moves a 32 × 32 tile through shared memory, one element per
//! thread (the lab's gpu-sm). Kernel in `kernels/cuda/linalg/transpose_tiled.cu`,
//! instantiated with PAD = 0 (Tiled) and PAD = 1 (TiledPadded).
//!
//! - Computes out[c][r] = in[r][c].
//! - Work rows·cols copies; one barrier per block.
//! - Bytes [`crate::transpose_bytes_moved`], reads and writes coalesced.
//! - One launch, 1024 threads per block, shared memory
//!   32·(32 + PAD)·sizeof(T) (4 KiB / 4.1 KiB for 4-byte elements).
//! - Banks: Tiled's column read from shared memory is a 32-way conflict for
//!   4-byte elements (16-way per half-warp for 8-byte, 8-way for bytes);
//!   the 33-element pitch of TiledPadded makes it conflict-free (≤ 2-way
//!   for bytes). That
//!   difference is the lab's point, and the benchmark shows it.
//! - Deterministic; not in place.

use gpu_core::launch::grid_2d;
use gpu_core::{LaunchConfig, Result};

/// The kernels' base names (entries `{kernel}_{storage}`): PAD = 0, PAD = 1.
pub(crate) const KERNEL: &str = "transpose_tiled";
/// See [`KERNEL`].
pub(crate) const KERNEL_PADDED: &str = "transpose_tiled_padded";

/// Tile side = block side, as in the lab.
pub(crate) const TILE: u32 = 32;

/// Grid x over column tiles, y (spilling into z) over row tiles, 32 × 32
/// threads per block.
pub(crate) fn config(rows: u64, cols: u64) -> Result<LaunchConfig> {
    grid_2d(rows, cols, (TILE, TILE), (1, 1), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_per_tile() {
        let c = config(33, 31).unwrap();
        assert_eq!(c.block, (32, 32, 1));
        assert_eq!(c.grid, (1, 2, 1));
        let c = config(1, 1 << 20).unwrap();
        assert_eq!(c.grid, (1 << 15, 1, 1));
    }
}
