//! `TiledHalo`'s register-tile kernel (`kernels/cuda/linalg/conv_register_tile.cu`):
//! a tile of the image in shared memory, a block of outputs in each thread's
//! registers.
//!
//! # What it computes
//!
//! Exactly the family's definition (every border, padding and `flip`), for
//! `K ≤` [`REGISTER_TILE_MAX_K`](super::policy::REGISTER_TILE_MAX_K) and
//! 4-byte types that accumulate in themselves (`f32`, `i32`), with the
//! products of each output added in the same order as the block and strip
//! kernels': the three agree bit for bit.
//!
//! # How
//!
//! A block of `32 × warps` threads ([`RegisterTilePolicy`]) stages `TR + K − 1`
//! input rows × `TC + ⌈(K − 1)/4⌉·4` columns in shared memory with 16-byte
//! loads (`TC = 128·column_groups` output columns, `TR =
//! warps·rows_per_thread` output rows), and the filter as K rows of 8 taps.
//! Each thread then holds `rows_per_thread` rows × `column_groups` groups of
//! 4 consecutive outputs: it reads each of its `R + K − 1` window rows once
//! with 16-byte shared loads and adds its K products into every output row
//! whose window holds it. The taps are read with broadcast loads at
//! warp-uniform addresses, which the compiler keeps in uniform registers, so
//! the multiply-adds are nearly all the thread's instructions (K = 7,
//! `R` = 8, one group: 1 568 multiply-adds in about 1 700 instructions; the
//! strip kernel spends about 65 instructions on loads, shuffles and stores
//! beside each lane's 98 multiply-adds per row).
//!
//! Tiles start at input column `col_base + tx·TC` with `col_base = −(pad
//! rounded up to a multiple of 4)` ([`RegisterTileGeometry`]), so every
//! tile's loads are whole 16-byte vectors when the image rows are aligned.
//! With [`RegisterTilePolicy::aligned_stores`] the outputs go out in whole
//! 16-byte pieces too: where a row does not start on a 16-byte boundary
//! each lane takes the next lane's first outputs by shuffle and stores the
//! aligned 16 bytes inside its quad (the L2 sees one write per sector).
//!
//! | | |
//! |---|---|
//! | work | `K²` multiply-adds per output |
//! | steps | `(R + K − 1)` window rows per thread, `R·4·G·K²` multiply-adds |
//! | global memory | `(TR + K − 1)·(TC + ⌈(K−1)/4⌉·4)` samples read per tile (halo mostly L2 hits), outputs written once: ≈ `crate::conv_bytes_moved` |
//! | launches | 1 |
//! | shared memory | `((TR + K − 1)·(TC + ⌈(K−1)/4⌉·4) + 8K)` elements per block ([`register_tile_shared_bytes`]); conflict-free |
//! | in place | no |
//! | deterministic | yes |

use gpu_core::launch::grid_2d;
use gpu_core::{Gpu, LaunchConfig, Result};

use super::element::ConvElement;
use super::module::{self, ConvCall};
use super::policy::RegisterTilePolicy;

/// Output columns per tile: `128·column_groups`.
pub(crate) fn tile_cols(tuning: &RegisterTilePolicy) -> usize {
    128 * tuning.column_groups as usize
}

/// Output rows per tile: `warps·rows_per_thread`.
pub(crate) fn tile_rows(tuning: &RegisterTilePolicy) -> usize {
    tuning.warps as usize * tuning.rows_per_thread as usize
}

/// Dynamic shared memory per block, bytes: the tile (`TR + K − 1` rows of
/// `TC + ⌈(K − 1)/4⌉·4` elements) and the filter (K rows of 8 taps).
pub(crate) fn register_tile_shared_bytes<T: ConvElement>(
    tuning: &RegisterTilePolicy,
    k: usize,
) -> usize {
    let pitch = tile_cols(tuning) + (k.max(1) - 1).div_ceil(4) * 4;
    let rows = tile_rows(tuning) + k.max(1) - 1;
    (rows * pitch + 8 * k) * T::BYTES
}

/// Where the tiles lie across an output of `out_cols` columns with anchor
/// `pad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegisterTileGeometry {
    /// First input column of tile column 0: `−(pad rounded up to a
    /// multiple of 4)`, so every tile's first input column is a multiple of
    /// 4.
    pub(crate) col_base: i64,
    /// Output columns the tile columns span, from `col_base + pad` (≤ 0):
    /// `out_cols` plus the `pad_up − pad` columns left of 0.
    pub(crate) span: u64,
}

/// The tile geometry (see [`RegisterTileGeometry`]).
pub(crate) fn register_tile_geometry(out_cols: usize, pad: usize) -> RegisterTileGeometry {
    let pad_up = (pad as u64).div_ceil(4) * 4;
    RegisterTileGeometry {
        col_base: -(pad_up as i64),
        span: out_cols as u64 + (pad_up - pad as u64),
    }
}

/// Launch geometry: block `(32, warps)`, grid x over tile columns
/// (`⌈span / TC⌉`), grid y (spilling into z) over tile rows (`⌈OH / TR⌉`).
pub(crate) fn register_tile_launch_config<T: ConvElement>(
    out_rows: usize,
    geometry: &RegisterTileGeometry,
    k: usize,
    tuning: &RegisterTilePolicy,
) -> Result<LaunchConfig> {
    grid_2d(
        out_rows as u64,
        geometry.span,
        (32, tuning.warps),
        (4 * tuning.column_groups, tuning.rows_per_thread),
        register_tile_shared_bytes::<T>(tuning, k) as u32,
    )
}

/// Whether the tile loads may be 16-byte vectors: `W` a multiple of 4 and
/// the image's device address 16-byte aligned.
pub(crate) fn rows_aligned(image_ptr: u64, w: usize) -> bool {
    w.is_multiple_of(4) && image_ptr.is_multiple_of(16)
}

/// `TiledHalo` through the register-tile kernel with `tuning`, for a
/// validated problem whose output does not overlap its inputs and whose
/// shared memory fits the device.
pub(crate) fn launch<T: ConvElement>(
    gpu: &Gpu,
    mut call: ConvCall<'_, '_, T>,
    tuning: &RegisterTilePolicy,
) -> Result<()> {
    let (k, out_shape) = (call.k(), call.out_shape);
    let w = call.image.cols();
    let geometry = register_tile_geometry(out_shape.1, call.pad());
    let config = register_tile_launch_config::<T>(out_shape.0, &geometry, k, tuning)?;
    let kernel = module::register_tile_kernel::<T>(gpu, tuning, k)?;
    let aligned = rows_aligned(call.image.data().device_ptr(), w);
    // As for the block kernel: Valid reads outside the image only for
    // outputs past the last row or column, never stored: zeros (the
    // padding border_args passes).
    let mut args = call.border_args();
    args.scalar(geometry.col_base).scalar(i32::from(aligned));
    // SAFETY: the arguments match the register-tile entry's parameter list
    // (three pointers, four i64, three i32, an i64 and an i32) in order; the
    // image holds H·W elements, the filter K·K and the output OH·OW
    // (validated shapes). The kernel reads the image only at rows and
    // columns inside [0, H) × [0, W) or mapped there by conv_map_coord, with
    // 16-byte loads only when `aligned` (W a multiple of 4, a 16-byte-aligned
    // base) and the vector lies inside its row; it reads filter indices
    // < K² and writes only (row < OH, 0 ≤ col < OW). Shared memory is the
    // register_tile_shared_bytes the kernel's tile and taps need for this
    // policy and K (the same R, G, warps and K the module was built with),
    // and the block is the (32, warps) its launch bounds allow. The output
    // does not overlap the inputs (checked by the caller) and only this
    // stream writes it.
    unsafe { gpu.launch(&kernel, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::policy::REGISTER_TILE_CANDIDATES;

    #[test]
    fn tiles_start_on_whole_vectors_and_cover_the_output() {
        // Valid: pad 0, tiles from column 0.
        let valid = register_tile_geometry(8190, 0);
        assert_eq!(
            valid,
            RegisterTileGeometry {
                col_base: 0,
                span: 8190
            }
        );
        // Same at K = 3 (pad 1): input columns from −4, outputs from −3.
        let same = register_tile_geometry(8192, 1);
        assert_eq!(same.col_base, -4);
        assert_eq!(same.span, 8192 + 3);
        // Full at K = 7 (pad 6): from −8, outputs from −2.
        let full = register_tile_geometry(8198, 6);
        assert_eq!((full.col_base, full.span), (-8, 8198 + 2));
        for pad in 0..8 {
            let g = register_tile_geometry(100, pad);
            assert_eq!(g.col_base.rem_euclid(4), 0);
            assert!(g.col_base + pad as i64 <= 0 && g.col_base + pad as i64 > -4);
        }
    }

    #[test]
    fn a_block_covers_its_tile() {
        let narrow = REGISTER_TILE_CANDIDATES[0]; // R 4, G 2, 4 warps
        let g = register_tile_geometry(8190, 0);
        let c = register_tile_launch_config::<f32>(8190, &g, 3, &narrow).unwrap();
        assert_eq!(c.block, (32, 4, 1));
        assert_eq!(c.grid, (8190u32.div_ceil(256), 8190u32.div_ceil(16), 1));
        // (16 + 2) rows × (256 + 4) columns + 3 × 8 taps, 4 bytes each.
        assert_eq!(c.shared_bytes as usize, (18 * 260 + 24) * 4);
        let wide = REGISTER_TILE_CANDIDATES[1]; // R 8, G 1, 4 warps
        let c = register_tile_launch_config::<i32>(8186, &g, 7, &wide).unwrap();
        assert_eq!(c.block, (32, 4, 1));
        assert_eq!(c.grid.1, 8186u32.div_ceil(32));
        assert_eq!(c.shared_bytes as usize, (38 * 136 + 56) * 4);
        // Rows past 65 535 tiles spill into z.
        let tall = register_tile_launch_config::<f32>(65_536 * 16 + 1, &g, 3, &narrow).unwrap();
        assert!(tall.grid.2 > 1);
    }

    #[test]
    fn vector_loads_need_aligned_rows() {
        assert!(rows_aligned(0x1000, 8192));
        assert!(!rows_aligned(0x1004, 8192));
        assert!(!rows_aligned(0x1000, 8190));
    }
}
