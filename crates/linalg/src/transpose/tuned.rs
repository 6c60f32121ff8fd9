//! `TransposeAlgorithm::Tuned`, shaped by a [`TransposePolicy`]: three kernels.
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
//! **Tall tile** (`kernels/cuda/linalg/transpose_tall.cu`, 2- and 4-byte
//! elements with [`TransposePolicy::tall_from_elements`], when
//! [`tall_applies`]): 64 × 8 threads per padded tile of 128 input rows by
//! 64 columns (16 elements per thread), each output piece 128 elements
//! long with its warp stores rotated onto 32-byte sector boundaries, loads
//! prefetching 256 bytes into L2; dynamic shared memory 128·65·sizeof(T)
//! (33 KiB for 4-byte elements).
//!
//! **Vector tile** (`kernels/cuda/linalg/transpose_vector.cu`, 1- and
//! 2-byte elements with [`TransposePolicy::vectors`], when
//! [`vector_tile`] has one): 256 threads per 128 × 128 (bytes) or 64 × 64
//! (halfwords) tile, every global access a 16-byte vector, the tile
//! swizzled in shared memory (16 KiB / 8 KiB) so the gathers that build an
//! output vector do not conflict; tiles in the policy's order.
//!
//! A call takes the vector tile where it applies, else the tall tile where
//! it applies, else the scalar tile. All three: interior tiles skip the
//! bounds checks; 64-bit tile origins; deterministic; not in place.

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

/// The vector kernel's tile side when a call takes it: the policy asks
/// for vectors, the element size has a vector kernel, rows and columns are
/// multiples of the elements per vector (every tile row starts on a
/// vector) and both buffers start on a 16-byte boundary; `None` otherwise.
/// Pure: tested on the host.
pub(crate) fn vector_tile(
    policy: &TransposePolicy,
    elem_bytes: usize,
    rows: u64,
    cols: u64,
    input_address: u64,
    output_address: u64,
) -> Option<u32> {
    let (tile, _, _) = vector_shape(elem_bytes)?;
    let per_vector = (VECTOR_BYTES / elem_bytes.max(1)) as u64;
    let vector_bytes = VECTOR_BYTES as u64;
    let applies = policy.vectors
        && rows.is_multiple_of(per_vector)
        && cols.is_multiple_of(per_vector)
        && input_address.is_multiple_of(vector_bytes)
        && output_address.is_multiple_of(vector_bytes);
    applies.then_some(tile)
}

/// Input columns per tall tile (= its output rows; the block is
/// `TALL_TILE` × [`TALL_BLOCK_ROWS`] threads).
pub(crate) const TALL_TILE: u32 = 64;

/// Input rows per tall tile: the length of each output piece.
pub(crate) const TALL_TILE_ROWS: u32 = 128;

/// Rows of threads of the tall tile's block.
pub(crate) const TALL_BLOCK_ROWS: u32 = 8;

/// Row lengths (bytes) that keep the square tile: rows and columns both
/// multiples of 256 bytes. Rows off the 32-byte sector grid share sectors
/// between tiles (the tall tile's rotated stores touch one sector fewer per
/// warp store); rows on it but off 256-byte blocks (`f32` 10000²) measured
/// faster with the tall tile too; whole 256-byte rows (`f32` 8192², 16384²)
/// measured 1–2 % slower with it.
const SQUARE_ROW_BYTES: u64 = 256;

/// Whether the tall tile has a kernel for `elem_bytes`-byte elements (2 and
/// 4: measured faster there on unaligned shapes; 1- and 8-byte elements
/// measured slower).
pub(crate) fn has_tall_kernel(elem_bytes: usize) -> bool {
    matches!(elem_bytes, 2 | 4)
}

/// Whether a call that takes no vectors takes the tall tile: the element
/// size has it, the matrix has at least the policy's
/// [`TransposePolicy::tall_from_elements`], and the input's or the
/// output's rows are not whole 256-byte blocks. Pure: tested on the host.
pub(crate) fn tall_applies(
    policy: &TransposePolicy,
    elem_bytes: usize,
    rows: u64,
    cols: u64,
) -> bool {
    let bytes = elem_bytes as u64;
    policy
        .tall_from_elements
        .is_some_and(|least| rows.saturating_mul(cols) >= least)
        && has_tall_kernel(elem_bytes)
        && (!(rows * bytes).is_multiple_of(SQUARE_ROW_BYTES)
            || !(cols * bytes).is_multiple_of(SQUARE_ROW_BYTES))
}

/// Entry base name of the tall kernel in a tile order (modules of 2- and
/// 4-byte elements only).
pub(crate) fn tall_kernel_name(order: TileOrder) -> String {
    format!("transpose_tall_{}", order.name())
}

/// One block per tile of `tile_rows` input rows by `tile_cols` input
/// columns, for `block` threads: down the columns grid x runs over row
/// tiles and y (spilling into z) over column tiles, across the rows the
/// other way round.
fn ordered_grid(
    rows: u64,
    cols: u64,
    order: TileOrder,
    block: (u32, u32),
    (tile_rows, tile_cols): (u32, u32),
    shared_bytes: u32,
) -> Result<LaunchConfig> {
    // grid_2d's x runs over its `cols` argument in steps of block.0 ·
    // per_thread.0, y over its `rows` argument in steps of block.1 ·
    // per_thread.1.
    match order {
        TileOrder::DownColumns => grid_2d(
            cols,
            rows,
            block,
            (tile_rows / block.0, tile_cols / block.1),
            shared_bytes,
        ),
        TileOrder::AcrossRows => grid_2d(
            rows,
            cols,
            block,
            (tile_cols / block.0, tile_rows / block.1),
            shared_bytes,
        ),
    }
}

/// The scalar kernel's grid: block tile × block_rows, each thread covering
/// tile / block_rows rows of a tile × tile tile, in the policy's order.
pub(crate) fn config(rows: u64, cols: u64, policy: &TransposePolicy) -> Result<LaunchConfig> {
    let block = (policy.tile, policy.block_rows);
    ordered_grid(
        rows,
        cols,
        policy.order,
        block,
        (policy.tile, policy.tile),
        0,
    )
}

/// The tall kernel's grid and dynamic shared memory for `elem_bytes`-byte
/// elements in a tile order.
pub(crate) fn tall_config(
    rows: u64,
    cols: u64,
    elem_bytes: usize,
    order: TileOrder,
) -> Result<LaunchConfig> {
    let shared = TALL_TILE_ROWS * (TALL_TILE + 1) * elem_bytes as u32;
    ordered_grid(
        rows,
        cols,
        order,
        (TALL_TILE, TALL_BLOCK_ROWS),
        (TALL_TILE_ROWS, TALL_TILE),
        shared,
    )
}

/// The vector kernel's grid for a tile side and order: one 32 × 8 block
/// per tile.
pub(crate) fn vector_config(
    rows: u64,
    cols: u64,
    tile: u32,
    order: TileOrder,
) -> Result<LaunchConfig> {
    let block = (32, VECTOR_THREADS / 32);
    ordered_grid(rows, cols, order, block, (tile, tile), 0)
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
        assert_eq!(vector_tile(&p, 1, 32768, 32768, 0, 1 << 20), Some(128));
        assert_eq!(vector_tile(&p, 1, 144, 272, 256, 512), Some(128));
        assert_eq!(vector_tile(&p, 2, 8, 24, 16, 32), Some(64));
        // 4- and 8-byte elements have no vector kernel.
        assert_eq!(vector_tile(&p, 4, 1024, 1024, 0, 0), None);
        assert_eq!(vector_tile(&p, 8, 1024, 1024, 0, 0), None);
        // Rows or columns not whole vectors, misaligned buffers, or a
        // policy without vectors.
        assert_eq!(vector_tile(&p, 1, 144, 270, 0, 0), None);
        assert_eq!(vector_tile(&p, 1, 100, 272, 0, 0), None);
        assert_eq!(vector_tile(&p, 2, 8, 20, 0, 0), None);
        assert_eq!(vector_tile(&p, 1, 144, 272, 1, 0), None);
        assert_eq!(vector_tile(&p, 2, 8, 24, 0, 8), None);
        let scalar = TransposePolicy {
            vectors: false,
            ..p
        };
        assert_eq!(vector_tile(&scalar, 1, 32768, 32768, 0, 0), None);
        assert_eq!(vector_shape(1), Some((128, 8, false)));
        assert_eq!(vector_shape(4), None);
    }

    #[test]
    fn tall_tile_only_for_rows_off_256_byte_blocks() {
        let p = TransposePolicy::DEFAULT;
        // f32: 9973 · 4 and 10007 · 4 bytes are not whole sectors, 10000 · 4
        // whole sectors but not whole 256-byte blocks; one side off is
        // enough.
        assert!(tall_applies(&p, 4, 9973, 10007));
        assert!(tall_applies(&p, 4, 10000, 10000));
        assert!(tall_applies(&p, 4, 16384, 10007));
        assert!(tall_applies(&p, 4, 9973, 16384));
        assert!(tall_applies(&p, 4, 3001, 4001));
        assert!(tall_applies(&p, 2, 9973, 10007));
        assert!(tall_applies(&p, 4, 1, (1 << 23) + 1));
        // Fewer than 2^23 elements: the square tile fills the GPU better,
        // unless the policy asks for the tall tile at any size.
        assert!(!tall_applies(&p, 4, 2000, 3001));
        assert!(!tall_applies(&p, 4, 8, 24));
        assert!(!tall_applies(&p, 4, 1, (1 << 23) - 1));
        let any_size = TransposePolicy {
            tall_from_elements: Some(0),
            ..p
        };
        assert!(tall_applies(&any_size, 4, 8, 24));
        assert!(tall_applies(&any_size, 2, 1, 3));
        assert!(!tall_applies(&any_size, 4, 64, 128));
        // Whole 256-byte blocks both ways: 64 f32 or 128 halfwords.
        assert!(!tall_applies(&p, 4, 16384, 16384));
        assert!(!tall_applies(&p, 4, 8192, 64));
        assert!(!tall_applies(&p, 2, 128, 4096));
        // 1- and 8-byte elements have no tall kernel; nor does a policy
        // without it.
        assert!(!tall_applies(&p, 1, 9973, 10007));
        assert!(!tall_applies(&p, 8, 9973, 10007));
        let square = TransposePolicy {
            tall_from_elements: None,
            ..p
        };
        assert!(!tall_applies(&square, 4, 9973, 10007));
        assert!(has_tall_kernel(2) && has_tall_kernel(4));
        assert!(!has_tall_kernel(1) && !has_tall_kernel(8));
    }

    #[test]
    fn tall_grid_is_one_block_per_128_by_64_tile() {
        let down = tall_config(9973, 10007, 4, TileOrder::DownColumns).unwrap();
        assert_eq!(
            (down.grid, down.block, down.shared_bytes),
            ((78, 157, 1), (64, 8, 1), 128 * 65 * 4)
        );
        let across = tall_config(9973, 10007, 2, TileOrder::AcrossRows).unwrap();
        assert_eq!(
            (across.grid, across.shared_bytes),
            ((157, 78, 1), 128 * 65 * 2)
        );
        // 1 × N down the columns spills its column tiles into z.
        let c = tall_config(1, 1 << 26, 4, TileOrder::DownColumns).unwrap();
        assert_eq!(c.grid.0, 1);
        assert!(c.grid.2 > 1);
        assert!(c.grid.1 as u64 * c.grid.2 as u64 * 64 >= 1 << 26);
        assert_eq!(
            tall_kernel_name(TileOrder::DownColumns),
            "transpose_tall_down"
        );
    }
}
