//! `TransposeAlgorithm::Tuned`, shaped by a [`TransposePolicy`]: two kernels.
//!
//! **Scalar tile** (`kernels/cuda/linalg/transpose_tuned.cu`, every element
//! size): `tile` × `block_rows` threads per padded `tile` × `tile` tile
//! (64 × 8 threads per 64 × 64 by default), `tile / block_rows` elements
//! per thread.
//! - Computes out[c][r] = in[r][c].
//! - Work rows·cols copies; one barrier per block; eight independent loads
//!   and stores per thread (at the default 64 × 8).
//! - Bytes [`crate::transpose_bytes_moved`], reads and writes coalesced
//!   (a tile reads `tile` consecutive elements of each of its rows).
//! - One launch, 512 threads per block at the default; shared memory
//!   tile·(tile + 1)·sizeof(T) (16.6 KiB for 4-byte elements), no bank
//!   conflicts for 4- and 8-byte elements (odd pitch; 2-way at worst for
//!   bytes).
//!
//! **Vector tile** (`kernels/cuda/linalg/transpose_vector.cu`, 1- and
//! 2-byte elements with [`TransposePolicy::vectors`], when
//! [`vectors_apply`]): 256 threads per 128 × 128 (bytes) or 64 × 64
//! (halfwords) tile, every global access a 16-byte vector, the tile
//! swizzled in shared memory (16 KiB / 8 KiB) so the gathers that build an
//! output vector do not conflict; tiles in the policy's order.
//!
//! Both: interior tiles skip the bounds checks; 64-bit tile origins;
//! deterministic; not in place.

use gpu_core::launch::grid_2d;
use gpu_core::{LaunchConfig, Result};

use super::policy::{TileOrder, TransposePolicy};

/// Entry base name of the scalar kernel for a tile shape and order.
pub(crate) fn kernel_name(policy: &TransposePolicy) -> String {
    format!(
        "transpose_tuned_t{}_rows{}_{}",
        policy.tile,
        policy.block_rows,
        policy.order.name()
    )
}

/// Entry base name of the vector kernel in a tile order (modules of 1- and
/// 2-byte elements only).
pub(crate) fn vector_kernel_name(order: TileOrder) -> String {
    format!("transpose_vector_{}", order.name())
}

/// Bytes per vector of the vector kernel.
const VECTOR_BYTES: usize = 16;

/// Threads per block of the vector kernel (launched as 32 × 8).
pub(crate) const VECTOR_THREADS: u32 = 256;

/// The vector kernel's compiled shape for `elem_bytes`-byte elements:
/// (tile side, lanes per output row, streaming loads and stores), measured
/// best on an H200 (docs/tuning.md#transpose); `None` where there is no
/// vector kernel (4- and 8-byte elements).
pub(crate) fn vector_shape(elem_bytes: usize) -> Option<(u32, u32, bool)> {
    match elem_bytes {
        1 => Some((128, 8, false)),
        2 => Some((64, 8, true)),
        _ => None,
    }
}

/// Whether a call takes the vector kernel: the policy asks for vectors,
/// the element size has a vector kernel, rows and columns are multiples of
/// the elements per vector (every tile row starts on a vector) and both
/// buffers start on a 16-byte boundary. Pure: tested on the host.
pub(crate) fn vectors_apply(
    policy: &TransposePolicy,
    elem_bytes: usize,
    rows: u64,
    cols: u64,
    input_address: u64,
    output_address: u64,
) -> bool {
    let per_vector = (VECTOR_BYTES / elem_bytes.max(1)) as u64;
    let vector_bytes = VECTOR_BYTES as u64;
    policy.vectors
        && vector_shape(elem_bytes).is_some()
        && rows.is_multiple_of(per_vector)
        && cols.is_multiple_of(per_vector)
        && input_address.is_multiple_of(vector_bytes)
        && output_address.is_multiple_of(vector_bytes)
}

/// The scalar kernel's grid: x over row tiles and y (spilling into z) over
/// column tiles down the columns, the other way round across the rows;
/// block tile × block_rows, each thread covering tile / block_rows rows.
pub(crate) fn config(rows: u64, cols: u64, policy: &TransposePolicy) -> Result<LaunchConfig> {
    let block = (policy.tile, policy.block_rows);
    let per_thread = (1, policy.tile / policy.block_rows);
    match policy.order {
        // grid_2d's x runs over its `cols` argument in steps of tile: here
        // the matrix's row tiles.
        TileOrder::DownColumns => grid_2d(cols, rows, block, per_thread, 0),
        TileOrder::AcrossRows => grid_2d(rows, cols, block, per_thread, 0),
    }
}

/// The vector kernel's grid for a tile side and order: one 32 × 8 block
/// per tile, x over row tiles down the columns, over column tiles across
/// the rows.
pub(crate) fn vector_config(
    rows: u64,
    cols: u64,
    tile: u32,
    order: TileOrder,
) -> Result<LaunchConfig> {
    let block = (32, VECTOR_THREADS / 32);
    let per_thread = (tile / block.0, tile / block.1);
    match order {
        // grid_2d's x runs over its `cols` argument in steps of
        // block.0 · per_thread.0 = tile: here the matrix's row tiles (the
        // y side's step is block.1 · per_thread.1 = tile as well).
        TileOrder::DownColumns => grid_2d(cols, rows, block, per_thread, 0),
        TileOrder::AcrossRows => grid_2d(rows, cols, block, per_thread, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_of_the_default_policy() {
        let policy = TransposePolicy::DEFAULT;
        let c = config(16384, 16384, &policy).unwrap();
        assert_eq!(c.grid, (256, 256, 1));
        assert_eq!(c.block, (64, 8, 1));
        // Down the columns: x over row tiles; 1 × N spills column tiles into z.
        let c = config(1000, 3000, &policy).unwrap();
        assert_eq!(c.grid, (16, 47, 1));
        let c = config(1, 1 << 26, &policy).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.2 > 1);
        assert!(c.grid.1 as u64 * c.grid.2 as u64 * 64 >= 1 << 26);
        assert_eq!(kernel_name(&policy), "transpose_tuned_t64_rows8_down");
        // Across the rows: x over column tiles; N × 1 spills row tiles into z.
        let across = TransposePolicy {
            order: TileOrder::AcrossRows,
            ..policy
        };
        let c = config(1000, 3000, &across).unwrap();
        assert_eq!(c.grid, (47, 16, 1));
        let c = config(1 << 26, 1, &across).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.2 > 1);
        assert_eq!(kernel_name(&across), "transpose_tuned_t64_rows8_across");
    }

    #[test]
    fn vector_grid_is_one_block_per_tile() {
        let down = TileOrder::DownColumns;
        let c = vector_config(32768, 32768, 128, down).unwrap();
        assert_eq!((c.grid, c.block), ((256, 256, 1), (32, 8, 1)));
        let c = vector_config(144, 272, 64, down).unwrap();
        assert_eq!(c.grid, (3, 5, 1));
        let c = vector_config(144, 272, 64, TileOrder::AcrossRows).unwrap();
        assert_eq!(c.grid, (5, 3, 1));
        assert_eq!(vector_kernel_name(down), "transpose_vector_down");
    }

    #[test]
    fn vectors_only_where_every_tile_row_starts_on_a_vector() {
        let p = TransposePolicy::DEFAULT;
        assert!(vectors_apply(&p, 1, 32768, 32768, 0, 1 << 20));
        assert!(vectors_apply(&p, 1, 144, 272, 256, 512));
        assert!(vectors_apply(&p, 2, 8, 24, 16, 32));
        // 4- and 8-byte elements have no vector kernel.
        assert!(!vectors_apply(&p, 4, 1024, 1024, 0, 0));
        assert!(!vectors_apply(&p, 8, 1024, 1024, 0, 0));
        // Rows or columns not whole vectors, misaligned buffers, or a
        // policy without vectors.
        assert!(!vectors_apply(&p, 1, 144, 270, 0, 0));
        assert!(!vectors_apply(&p, 1, 100, 272, 0, 0));
        assert!(!vectors_apply(&p, 2, 8, 20, 0, 0));
        assert!(!vectors_apply(&p, 1, 144, 272, 1, 0));
        assert!(!vectors_apply(&p, 2, 8, 24, 0, 8));
        let scalar = TransposePolicy {
            vectors: false,
            ..p
        };
        assert!(!vectors_apply(&scalar, 1, 32768, 32768, 0, 0));
        assert_eq!(vector_shape(1), Some((128, 8, false)));
        assert_eq!(vector_shape(4), None);
    }
}
