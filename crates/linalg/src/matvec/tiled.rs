//! `MatvecAlgorithm::SharedTiled { tile }`: one thread per output element,
//! x staged through shared memory `tile` elements at a time (the lab's
//! gpu-sm). Kernels in `kernels/cuda/linalg/matvec_tiled.cu`.
//!
//! - Computes y = A·x or y = Aᵀ·x, one output per thread, the block's
//!   `tile` threads loading one x element each per tile, then accumulating
//!   the tile's products (lab boundary rule: every thread stages x, only
//!   threads with an output accumulate; the last tile is partial).
//! - Work rows·cols multiply-adds; 2·⌈len(x)/tile⌉ barriers per block.
//! - Bytes: [`crate::matvec_bytes_moved`] (x read once per block instead of
//!   once per thread). A·x reads A uncoalesced, as in the lab.
//! - One launch, `tile` threads per block, [`shared_bytes`] of dynamic
//!   shared memory (`tile` rounded up to a multiple of
//!   [`TILE_GROUP`] elements); tile reads are broadcasts (no bank
//!   conflicts).
//! - Deterministic; not in place.

use gpu_core::{DeviceView, DeviceViewMut, Gpu, Result};

use super::algorithm::{MatvecElement, Transpose};
use super::global::launch_per_output;
use super::policy::MatvecPolicy;
use crate::matrix::MatrixView;

/// The kernels' inner loop is unrolled by this many elements
/// (`#pragma unroll 4` in `matvec_tiled.cu`), and the shared tile is
/// allocated in whole groups of it. ptxas may merge the unrolled loop's
/// remainder (up to 3 conditional scalar reads of `x_tile[4m..4m+3)`) into
/// one wider read of that group, issued even when fewer elements are valid:
/// compute-sanitizer memcheck reported a 12-byte read past a 4-byte tile
/// (tile 1) on sm_90. With the tile padded to whole groups every such read
/// stays inside the allocation; the padding's values are never used.
pub(crate) const TILE_GROUP: u32 = 4;

/// Dynamic shared memory of a block of `tile` threads: the x tile, rounded
/// up to whole [`TILE_GROUP`]s of `elem_bytes`-byte elements.
pub(crate) fn shared_bytes(tile: u32, elem_bytes: usize) -> u32 {
    tile.div_ceil(TILE_GROUP) * TILE_GROUP * elem_bytes as u32
}

pub(crate) fn launch<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    op: Transpose,
    tile: u32,
) -> Result<()> {
    // A block of `tile` threads (validated: 1 to 1024) owns `tile` outputs
    // and stages `tile` elements of x, padded to whole groups of TILE_GROUP
    // (see there): at most 1024·8 B = 8 KiB of shared memory.
    // SAFETY: the SharedTiled entries take (const T* a, const T* x, T* y,
    // u64 rows, u64 cols); the kernel reads x only below its length, A only
    // below rows·cols, writes y only below `outputs`, and reads at most the
    // first ⌈blockDim.x / 4⌉·4 elements of dynamic shared memory, which is
    // what it gets (writes blockDim.x).
    unsafe {
        launch_per_output(
            gpu,
            policy,
            (a, x, y),
            op,
            "matvec_tiled",
            tile,
            shared_bytes(tile, T::BYTES),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_tile_is_padded_to_whole_groups() {
        assert_eq!(shared_bytes(1, 4), 16);
        assert_eq!(shared_bytes(2, 8), 32);
        assert_eq!(shared_bytes(4, 4), 16);
        assert_eq!(shared_bytes(33, 4), 36 * 4);
        assert_eq!(shared_bytes(256, 4), 1024);
        assert_eq!(shared_bytes(1024, 8), 8192);
        for tile in 1..=1024u32 {
            for bytes in [4usize, 8] {
                let elements = shared_bytes(tile, bytes) / bytes as u32;
                // Every group a remainder read can touch (the one holding
                // the last element) is allocated, and no more than that.
                assert!(elements >= tile && elements.is_multiple_of(TILE_GROUP));
                assert!(elements - tile < TILE_GROUP);
            }
        }
    }
}
