//! Tuning constants of the teaching scans, as data.
//!
//! Chosen from the lab this crate reproduces (seed 000: a block-size sweep
//! 32…1024 on a Tesla P40 found 512 threads best) and checked on an NVIDIA
//! H100 80GB HBM3 on 2026-11-23 (`examples/scan.rs --block-sweep`, table in
//! docs/scan.md): 512 is the fastest block for Hillis–Steele and Blelloch at
//! 2^28 and 123123123 `i32`, and within 4 % of the fastest (256) for padded
//! Blelloch.
//! (The look-back and reduce-then-scan kernels keep their own tables in
//! their files.)

/// Block size of the teaching variants when [`crate::ScanOptions::block_threads`]
/// is `None`. The lab's best (P40), and the best or within 4 % of it on the
/// H100 (2^28 `i32`: Hillis–Steele 2.226 ms, Blelloch 2.949 ms, padded
/// Blelloch 2.458 ms against 2.368 ms at 256).
pub const DEFAULT_BLOCK_THREADS: u32 = 512;

/// Smallest selectable block size (one warp).
pub const MIN_BLOCK_THREADS: u32 = 32;

/// Largest selectable block size (the hardware limit).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Elements per thread of the Hillis–Steele block scan (thread t owns
/// positions t + k·block_threads). Two keeps two loads in flight per thread
/// and halves the number of tiles, at the same shared-memory work per
/// element. Not yet measured on the H100.
pub const HILLIS_STEELE_ITEMS_PER_THREAD: u32 = 2;

/// Elements per thread of the Blelloch block scans: fixed at two by the
/// algorithm (each thread owns one leaf pair of the tree).
pub const BLELLOCH_ITEMS_PER_THREAD: u32 = 2;

/// Threads per block of the uniform-add pass (capped at the tile size).
/// Not yet measured on the H100.
pub const UNIFORM_ADD_THREADS: u32 = 256;

/// Largest number of elements one uniform-add thread handles; with
/// [`UNIFORM_ADD_THREADS`] it bounds the tile size the driver accepts
/// (256 · 8 = 2048 = the largest tile, Blelloch or Hillis–Steele with 1024
/// threads).
pub const UNIFORM_ADD_MAX_ITEMS: u32 = 8;

/// `log2` of the number of shared-memory banks, for BlellochPadded's
/// `i + (i >> LOG_NUM_BANKS)` (32 banks of 4 bytes on every GPU since Kepler).
pub const LOG_NUM_BANKS: u32 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_tile_fits_one_uniform_add_block() {
        let largest_tile =
            MAX_BLOCK_THREADS * HILLIS_STEELE_ITEMS_PER_THREAD.max(BLELLOCH_ITEMS_PER_THREAD);
        assert!(UNIFORM_ADD_THREADS * UNIFORM_ADD_MAX_ITEMS >= largest_tile);
    }

    #[test]
    fn defaults_are_valid_block_sizes() {
        assert!(DEFAULT_BLOCK_THREADS.is_power_of_two());
        assert!((MIN_BLOCK_THREADS..=MAX_BLOCK_THREADS).contains(&DEFAULT_BLOCK_THREADS));
        assert_eq!(UNIFORM_ADD_THREADS % 32, 0);
    }
}
