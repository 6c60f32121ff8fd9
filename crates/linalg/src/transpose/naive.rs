//! `TransposeAlgorithm::Naive`: one thread per element, straight from global
//! memory (the lab's gpu-gm). Kernel in `kernels/cuda/linalg/transpose_naive.cu`.
//!
//! - Computes out[c][r] = in[r][c].
//! - Work rows·cols copies, one step per thread.
//! - Bytes [`crate::transpose_bytes_moved`]: reads coalesced (a warp reads
//!   32 consecutive elements of a row), writes strided (the same warp
//!   writes 32 elements `rows` apart: one sector each).
//! - One launch, block [`BLOCK`] (32 × 8), no shared memory.
//! - Deterministic; not in place.

use gpu_core::launch::grid_2d;
use gpu_core::{LaunchConfig, Result};

/// The kernel's base name (entry `{KERNEL}_{storage}`).
pub(crate) const KERNEL: &str = "transpose_naive";

/// Threads per block (x along columns, y along rows). Not yet measured on
/// the H100.
pub(crate) const BLOCK: (u32, u32) = (32, 8);

/// One thread per element: grid x over ⌈cols/32⌉ column tiles, y (spilling
/// into z for tall matrices) over ⌈rows/8⌉ row tiles.
pub(crate) fn config(rows: u64, cols: u64) -> Result<LaunchConfig> {
    grid_2d(rows, cols, BLOCK, (1, 1), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_the_matrix() {
        let c = config(1000, 1000).unwrap();
        assert_eq!(c.block, (32, 8, 1));
        assert_eq!(c.grid, (32, 125, 1));
        let c = config(1 << 24, 1).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.1 as u64 * c.grid.2 as u64 * 8 >= 1 << 24);
    }
}
