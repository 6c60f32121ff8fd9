//! `TransposeAlgorithm::Tuned`: 32 × 8 threads per padded 32 × 32 tile, four
//! rows per thread. Kernel in `kernels/cuda/transpose_tuned.cu`.
//!
//! - Computes out[c][r] = in[r][c].
//! - Work rows·cols copies; one barrier per block; four independent loads
//!   and stores per thread.
//! - Bytes [`crate::transpose_bytes_moved`], reads and writes coalesced.
//! - One launch, 256 threads per block (8 blocks per SM at full occupancy),
//!   shared memory 32·33·sizeof(T) (4.1 KiB for 4-byte elements), no bank
//!   conflicts for 4- and 8-byte elements (33-element pitch; 2-way at
//!   worst for bytes).
//! - Interior tiles skip the bounds checks; 64-bit tile origins.
//! - Deterministic; not in place.

use gpu_core::{Error, LaunchConfig, Result};

/// Tile shape of the Tuned kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeTuning {
    /// Tile side (= block width, one warp).
    pub tile: u32,
    /// Block height; each thread copies `tile / block_rows` elements.
    pub block_rows: u32,
}

/// Not yet measured on the H100: the classic 32 × 8 shape (4 elements per
/// thread), which gives full occupancy with 4.1 KiB of shared memory per
/// block.
pub const TUNED: TransposeTuning = TransposeTuning {
    tile: 32,
    block_rows: 8,
};

/// Block heights compiled into every transpose module (entries
/// `transpose_tuned_rows{R}_{storage}`), for tuning sweeps through
/// [`crate::transpose_tuned_with`].
pub const TUNABLE_BLOCK_ROWS: [u32; 3] = [4, 8, 16];

/// Checks a tuning: tile 32 (a warp per tile row), block_rows one of
/// [`TUNABLE_BLOCK_ROWS`].
pub fn check_tuning(tuning: &TransposeTuning) -> Result<()> {
    if tuning.tile != 32 || !TUNABLE_BLOCK_ROWS.contains(&tuning.block_rows) {
        return Err(Error::invalid(
            "tuning",
            format!(
                "tile {} × block rows {}: the compiled kernels have tile 32 and block rows {:?}",
                tuning.tile, tuning.block_rows, TUNABLE_BLOCK_ROWS
            ),
        ));
    }
    Ok(())
}

/// Entry base name for a block height.
pub(crate) fn kernel_name(block_rows: u32) -> String {
    format!("transpose_tuned_rows{block_rows}")
}

/// Grid x over column tiles, y (spilling into z) over row tiles; block
/// tile × block_rows, each thread covering tile / block_rows rows.
pub(crate) fn config(rows: u64, cols: u64, tuning: &TransposeTuning) -> Result<LaunchConfig> {
    crate::transpose::tile_grid(
        rows,
        cols,
        (tuning.tile, tuning.block_rows),
        (1, tuning.tile / tuning.block_rows),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_is_consistent() {
        assert_eq!(TUNED.tile % TUNED.block_rows, 0);
        assert_eq!(TUNED.tile, 32, "the kernel's lanes map to tile columns");
        assert!(check_tuning(&TUNED).is_ok());
        for block_rows in TUNABLE_BLOCK_ROWS {
            assert!(check_tuning(&TransposeTuning {
                tile: 32,
                block_rows
            })
            .is_ok());
        }
        assert!(check_tuning(&TransposeTuning {
            tile: 32,
            block_rows: 2
        })
        .is_err());
        assert!(check_tuning(&TransposeTuning {
            tile: 64,
            block_rows: 8
        })
        .is_err());
        let c = config(16384, 16384, &TUNED).unwrap();
        assert_eq!(c.grid, (512, 512, 1));
        assert_eq!(c.block, (32, 8, 1));
        // N × 1: row tiles spill into z.
        let c = config(1 << 26, 1, &TUNED).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.2 > 1);
        assert!(c.grid.1 as u64 * c.grid.2 as u64 * 32 >= 1 << 26);
    }
}
