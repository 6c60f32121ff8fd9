//! `ConvAlgorithm::TiledHalo`'s block kernel (`conv_tiled<K>` in
//! `kernels/cuda/linalg/conv.cu`): K > 7, and every K for types whose
//! policy has no strip kernel.
//!
//! - Computes the convolution of the family's definition (every border,
//!   padding and flip), each output's products in the same order as the
//!   strip kernel's.
//! - A `bx × by` block stages an input tile of `(by·R + K − 1)` rows ×
//!   `(bx + K − 1)` columns (its halo included, padding applied while
//!   loading, [`ConvPolicy::load_batch`] loads in flight per thread) with
//!   coalesced loads; each thread then computes a column of R =
//!   [`ConvPolicy::rows_per_thread`] outputs, reusing every tile row it
//!   reads for each output it touches; the filter in registers up to
//!   [`ConvPolicy::reg_filter_max_k`], else in shared memory.
//! - Work `K²` multiply-adds per output; one barrier per block.
//! - Bytes ≈ `crate::conv_bytes_moved` (the image read once from DRAM, halos
//!   mostly L2 hits; outputs written once).
//! - Arithmetic in [`gpu_core::Element::Acc`] (`f32` for `f16` and `bf16`),
//!   each output rounded once.
//! - One launch; shared memory [`shared_bytes`] = `((by·R + K − 1)·pitch +
//!   K²)` accumulators, the pitch from [`tile_stride`] so a warp's tile reads
//!   hit distinct banks.
//! - Deterministic; not in place.

use gpu_core::launch::grid_2d;
use gpu_core::{DeviceType, Gpu, LaunchConfig, Result};

use super::algorithm::ConvAlgorithm;
use super::element::ConvElement;
use super::module::{self, ConvCall};
use super::policy::ConvPolicy;

/// The row pitch (elements) of the `TiledHalo` shared tile: the smallest value
/// ≥ `block_x + k − 1` for which the `32 / block_x` row groups of one warp
/// start `block_x` elements apart modulo the 32 banks, so a warp's tile reads
/// cover distinct banks (4-byte elements; 8-byte elements need two
/// wavefronts anyway and get the analogous spacing). Thread row `y` starts at
/// tile row `y·R`, so the condition is `R·pitch ≡ block_x (mod 32 / words)`.
pub(crate) fn tile_stride(
    block_x: u32,
    k: usize,
    rows_per_thread: u32,
    elem_bytes: usize,
) -> usize {
    let width = block_x as usize + k - 1;
    if block_x >= 32 {
        return width;
    }
    let words = elem_bytes.div_ceil(4).max(1);
    let modulus = (32 / words).max(1);
    let target = block_x as usize % modulus;
    (width..width + 32)
        .find(|&pitch| (rows_per_thread as usize * pitch) % modulus == target)
        .unwrap_or(width)
}

/// Dynamic shared memory per block, bytes: the tile with its halo at the
/// [`tile_stride`] pitch, then the filter, both as accumulators
/// ([`gpu_core::Element::Acc`]: samples are widened once, as they are
/// staged).
pub(crate) fn shared_bytes<T: ConvElement>(
    block: (u32, u32),
    k: usize,
    policy: &ConvPolicy,
) -> usize {
    let acc_bytes = <T::Acc as DeviceType>::BYTES;
    let rows = block.1 as usize * policy.rows_per_thread as usize + k - 1;
    let pitch = tile_stride(block.0, k, policy.rows_per_thread, acc_bytes);
    (rows * pitch + k * k) * acc_bytes
}

/// A block covers `bx` columns × `by·R` rows of outputs: grid x over column
/// tiles, y (spilling into z) over row tiles.
pub(crate) fn launch_config<T: ConvElement>(
    output: (usize, usize),
    k: usize,
    block: (u32, u32),
    policy: &ConvPolicy,
) -> Result<LaunchConfig> {
    grid_2d(
        output.0 as u64,
        output.1 as u64,
        block,
        (1, policy.rows_per_thread),
        shared_bytes::<T>(block, k, policy) as u32,
    )
}

/// Launches the block kernel for a validated problem whose output does not
/// overlap its inputs and whose shared memory fits the device.
pub(crate) fn launch<T: ConvElement>(
    gpu: &Gpu,
    policy: &ConvPolicy,
    mut call: ConvCall<'_, '_, T>,
) -> Result<()> {
    let (k, block) = (call.k(), call.options.block);
    let config = launch_config::<T>(call.out_shape, k, block, policy)?;
    let kernel = module::conv_kernel::<T>(
        gpu,
        policy,
        &module::conv_entry::<T>(ConvAlgorithm::TiledHalo, k),
    )?;
    let args = call.entry_args(tile_stride(
        block.0,
        k,
        policy.rows_per_thread,
        <T::Acc as DeviceType>::BYTES,
    ));
    // SAFETY: the arguments match the entry's parameters
    // (ConvCall::entry_args: three pointers, four i64, five i32, in order);
    // the image holds H·W elements, the filter K·K and the output OH·OW
    // (validated shapes); the kernel reads image samples only through
    // conv_map_coord (indices in [0, H)×[0, W)) and filter indices < K²,
    // writes only (row < OH, col < OW); the shared tile is `shared_bytes`
    // as computed from the same block, K, R and stride the kernel uses. The
    // output does not overlap the inputs (checked by the dispatch) and only
    // this stream writes it.
    unsafe { gpu.launch(&kernel, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_stride_spreads_warp_row_groups_over_banks() {
        for (bx, k, r, bytes) in [(8, 3, 8, 4), (16, 3, 8, 4), (8, 5, 4, 8), (16, 31, 8, 4)] {
            let pitch = tile_stride(bx, k, r, bytes);
            assert!(pitch >= bx as usize + k - 1);
            let words = bytes / 4;
            let modulus = 32 / words;
            // Row group g of a warp starts at word offset g·R·pitch·words;
            // they must land bx·words apart modulo 32 banks.
            assert_eq!((r as usize * pitch) % modulus, bx as usize % modulus);
        }
        assert_eq!(tile_stride(32, 3, 8, 4), 34);
    }

    #[test]
    fn a_block_covers_r_rows_per_thread() {
        let policy = ConvPolicy::default_for::<i32>((9, 0));
        let c = launch_config::<i32>((8190, 8190), 3, (32, 8), &policy).unwrap();
        assert_eq!(c.block, (32, 8, 1));
        assert_eq!(c.grid, (8190u32.div_ceil(32), 8190u32.div_ceil(64), 1));
        assert_eq!(c.shared_bytes as usize, (66 * 34 + 9) * 4);
        // f16 tiles hold f32 accumulators: the same bytes as i32's.
        let half = launch_config::<gpu_core::f16>((8190, 8190), 3, (32, 8), &policy).unwrap();
        assert_eq!(half.shared_bytes, c.shared_bytes);
    }
}
