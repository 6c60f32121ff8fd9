//! Tuning constants of the teaching scans, as data.
//!
//! The lab this crate reproduces (seed 000: a block-size sweep 32…1024 on a
//! Tesla P40) found 512 threads best. On an NVIDIA H100 80GB HBM3, with the
//! kernels of 2026-11-24 (`examples/scan.rs --block-sweep`, table in
//! docs/scan.md), 256 is the fastest block for Hillis–Steele at 2^28 and
//! 123123123 `i32` (5 % ahead of 512) and within 0.3 % of the fastest for
//! both Blelloch variants, so it is the default.
//! (The look-back and reduce-then-scan kernels keep their own tables in
//! their files.)

/// Block size of the teaching variants when [`crate::ScanOptions::block_threads`]
/// is `None`. On the H100, 2^28 `i32`: Hillis–Steele 1.818 ms (512: 1.909),
/// Blelloch 2.299 ms (512: 2.303), padded Blelloch 1.988 ms (512: 1.983).
pub const DEFAULT_BLOCK_THREADS: u32 = 256;

/// Smallest selectable block size (one warp).
pub const MIN_BLOCK_THREADS: u32 = 32;

/// Largest selectable block size (the hardware limit).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Elements per thread of the Hillis–Steele block scan (thread t owns
/// positions t + k·block_threads). The block scan is bound by instruction
/// issue (ncu on the H100, 2026-11-24: 0.88 warps issued per scheduler per
/// cycle, SM throughput 88 %), and each step's barrier and loop cost is paid
/// once per thread, so more elements per thread cut it per element. On the
/// H100 (2^28 `i32`, 512 threads, docs/scan.md) 4 took 1.941 ms against
/// 2.228 ms for 2, although that run's uniform add was the slower 16-item
/// one (with the 8-item one: 1.908 ms). At 1024 threads and 8-byte elements the two buffers take 64 KiB:
/// the launch opts in past the 48 KiB default.
pub const HILLIS_STEELE_ITEMS_PER_THREAD: u32 = 4;

/// Elements per thread of the Blelloch block scans: fixed at two by the
/// algorithm (each thread owns one leaf pair of the tree).
pub const BLELLOCH_ITEMS_PER_THREAD: u32 = 2;

/// Threads per block of the uniform-add pass (capped at the tile size;
/// raised for tiles past UNIFORM_ADD_THREADS · UNIFORM_ADD_MAX_ITEMS).
/// Its pass runs at 0.98 of the copy ceiling on the H100 (docs/scan.md).
pub const UNIFORM_ADD_THREADS: u32 = 256;

/// Largest number of elements one uniform-add thread handles. Eight: all
/// loads issued before the first store, and few idle slots for small tiles
/// (a 16-element version made the whole Blelloch scan 7 % slower on the
/// H100, 2026-11-24).
pub const UNIFORM_ADD_MAX_ITEMS: u32 = 8;

/// Most threads of a uniform-add block (its entry's launch bound): the
/// largest tile, Hillis–Steele's 1024 · 4 = 4096, over 8 elements each.
pub const UNIFORM_ADD_MAX_THREADS: u32 = 512;
const _: () = assert!(UNIFORM_ADD_MAX_THREADS <= MAX_BLOCK_THREADS);

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
        assert!(UNIFORM_ADD_MAX_THREADS * UNIFORM_ADD_MAX_ITEMS >= largest_tile);
    }

    #[test]
    fn defaults_are_valid_block_sizes() {
        assert!(DEFAULT_BLOCK_THREADS.is_power_of_two());
        assert!((MIN_BLOCK_THREADS..=MAX_BLOCK_THREADS).contains(&DEFAULT_BLOCK_THREADS));
        assert_eq!(UNIFORM_ADD_THREADS % 32, 0);
    }
}
