//! `TransposeAlgorithm::Tuned`: 32 × `block_rows` threads per padded 32 × 32
//! tile, `32 / block_rows` rows per thread ([`super::policy::TransposePolicy`];
//! 32 × 8 by default). Kernel in `kernels/cuda/linalg/transpose_tuned.cu`.
//!
//! - Computes out[c][r] = in[r][c].
//! - Work rows·cols copies; one barrier per block; four independent loads
//!   and stores per thread (at the default 32 × 8).
//! - Bytes [`crate::transpose_bytes_moved`], reads and writes coalesced.
//! - One launch, 256 threads per block (8 blocks per SM at full occupancy),
//!   shared memory 32·33·sizeof(T) (4.1 KiB for 4-byte elements), no bank
//!   conflicts for 4- and 8-byte elements (33-element pitch; 2-way at
//!   worst for bytes).
//! - Interior tiles skip the bounds checks; 64-bit tile origins.
//! - Deterministic; not in place.

use gpu_core::launch::grid_2d;
use gpu_core::{LaunchConfig, Result};

use super::policy::TransposePolicy;

/// Entry base name for a block height.
pub(crate) fn kernel_name(block_rows: u32) -> String {
    format!("transpose_tuned_rows{block_rows}")
}

/// Grid x over column tiles, y (spilling into z) over row tiles; block
/// tile × block_rows, each thread covering tile / block_rows rows.
pub(crate) fn config(rows: u64, cols: u64, policy: &TransposePolicy) -> Result<LaunchConfig> {
    grid_2d(
        rows,
        cols,
        (policy.tile, policy.block_rows),
        (1, policy.tile / policy.block_rows),
        0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_of_the_default_policy() {
        let policy = TransposePolicy::DEFAULT;
        let c = config(16384, 16384, &policy).unwrap();
        assert_eq!(c.grid, (512, 512, 1));
        assert_eq!(c.block, (32, 8, 1));
        // N × 1: row tiles spill into z.
        let c = config(1 << 26, 1, &policy).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.2 > 1);
        assert!(c.grid.1 as u64 * c.grid.2 as u64 * 32 >= 1 << 26);
        assert_eq!(kernel_name(8), "transpose_tuned_rows8");
    }
}
