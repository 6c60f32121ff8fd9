//! The tuning knobs, for experts and the tuning sweeps: every algorithm's
//! policy as data. A caller who only scans never needs this module
//! ([`ScanOptions`](crate::ScanOptions) picks the defaults); one who tunes
//! passes a block size ([`ScanOptions::with_block_threads`](crate::ScanOptions::with_block_threads),
//! teaching variants) or a single-pass [`Policy`]
//! ([`ScanOptions::with_policy`](crate::ScanOptions::with_policy),
//! `DecoupledLookback` and `ReduceThenScan`), and a value given is used or
//! refused with a typed error, never dropped. (As rayon's `plumbing`: public
//! and documented, but not the everyday API.)
//!
//! | algorithm | policy | default |
//! |---|---|---|
//! | `HillisSteeleGlobal`, `HillisSteele`, `Blelloch`, `BlellochPadded` | block threads | [`DEFAULT_BLOCK_THREADS`] |
//! | `DecoupledLookback` (= `Auto`) | [`Policy`], every field ([`LookbackPolicy::validate_lookback`]) | [`LOOKBACK_TUNING`] by element size; [`SMALL_INPUT_LOOKBACK_TUNING`] up to [`SMALL_INPUT_MAX_ELEMENTS`] and [`MID_INPUT_LOOKBACK_TUNING`] from [`MID_INPUT_MIN_ELEMENTS`] to [`MID_INPUT_MAX_ELEMENTS`] in a 4-byte accumulator ([`lookback_policy_for_len`]) |
//! | `ReduceThenScan` | [`Policy`], the tile shape only ([`Policy::shape`]) | [`reduce_then_scan_policy`] |
//!
//! The measurements behind each default are in `docs/tuning.md`.

pub use crate::lookback::{
    lookback_candidates, lookback_module, lookback_policy, lookback_policy_for_len,
    protocol_test_variants, LookbackPolicy, LOOKBACK_TUNING, MID_INPUT_LOOKBACK_TUNING,
    MID_INPUT_MAX_ELEMENTS, MID_INPUT_MIN_ELEMENTS, PROTOCOL_TEST_TUNING,
    SMALL_INPUT_LOOKBACK_TUNING, SMALL_INPUT_MAX_ELEMENTS,
};
pub use crate::reduce_then_scan::reduce_then_scan_policy;
pub use gpu_core::single_pass::{Policy, Schedule, StatusEncoding, TileLayout};

/// Block size of the teaching variants when [`crate::ScanOptions::block_threads`]
/// is `None`: the fastest on the H100 for Hillis–Steele, within 0.3 % for
/// both Blelloch variants (`docs/tuning.md`).
pub const DEFAULT_BLOCK_THREADS: u32 = 256;

/// Smallest selectable block size (one warp).
pub const MIN_BLOCK_THREADS: u32 = 32;

/// Largest selectable block size (the hardware limit).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Elements per thread of the Hillis–Steele block scan (thread t owns
/// positions t + k·block_threads). The block scan is bound by instruction
/// issue, and each step's barrier and loop cost is paid once per thread, so
/// more elements per thread cut it per element (measurements in
/// `docs/tuning.md`). At 1024 threads and 8-byte elements the two buffers
/// take 64 KiB: the launch opts in past the 48 KiB default.
pub const HILLIS_STEELE_ITEMS_PER_THREAD: u32 = 4;

/// Elements per thread of the Blelloch block scans (an even power of two;
/// the tile is this many times the block). Each thread folds each half of
/// its elements to one leaf in registers, so the tree in shared memory has
/// two leaves per thread whatever this is; two (every element a leaf) is the
/// lab's form. Four halve the shared-memory traffic, bank conflicts and
/// barriers per element, which bound these scans (docs/scan.md, "What
/// limits them", and `docs/tuning.md`).
pub const BLELLOCH_ITEMS_PER_THREAD: u32 = 4;
const _: () =
    assert!(BLELLOCH_ITEMS_PER_THREAD >= 2 && BLELLOCH_ITEMS_PER_THREAD.is_power_of_two());

/// Threads per block of the uniform-add pass (capped at the tile size;
/// raised for tiles past UNIFORM_ADD_THREADS · UNIFORM_ADD_MAX_ITEMS).
/// Its pass runs at 0.98 of the copy ceiling on the H100 (docs/scan.md).
pub const UNIFORM_ADD_THREADS: u32 = 256;

/// Largest number of elements one uniform-add thread handles. Eight: all
/// loads issued before the first store, and few idle slots for small tiles
/// (a 16-element version was slower: `docs/tuning.md`).
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
