//! GPU tests of every look-back variant the tuning sweep can choose from:
//! the warp-striped tile layout, wide look-back windows, the 128-bit packed
//! status word for 8-byte values and the spin back-off
//! (`scan::policy::protocol_test_variants`), each with tiny tiles so that hundreds of
//! thousands of tiles are in flight and every block looks back through many
//! windows, repeated, for 4- and 8-byte values, commutative and
//! non-commutative operators, inclusive / exclusive with an initial value,
//! in place, misaligned views and lengths at the tile edges. Then the sweep's
//! full-size candidates (`scan::policy::lookback_candidates`) at a few edge lengths
//! and 2^24 elements. Every comparison is exact.

mod lookback_support;
mod scan_support;

use gpu_core::{Max, Sum};
use lookback_support::Placement::{InPlace, Offsets, OutOfPlace};
use lookback_support::*;
use parprims_testkit::testing::scaled;
use scan::policy::Policy;
use scan::ScanKind::{Exclusive, Inclusive};

/// Elements for a protocol run: about 200 000 tiles of the tiny shapes,
/// at most 2^23 + 5 elements for the larger ones (still 16 000+ tiles).
/// At the quick scale (`parprims_testkit::testing`) 15 000 tiles and 2^19 + 5.
fn protocol_length(tuning: Policy) -> usize {
    let tile = tuning.tile_items() as usize;
    let (tiles, cap) = scaled((200_000, (1 << 23) + 5), (15_000, (1 << 19) + 5));
    (tile * tiles).min(cap) + 7
}

/// `full` repetitions, or 2 at the quick scale.
fn repetitions(full: usize) -> usize {
    scaled(full, 2)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_protocol_variant_with_hundreds_of_thousands_of_tiles() {
    let gpu = gpu();
    let op32 = affine_u32();
    let op64 = affine_u64();
    for tuning in scan::policy::protocol_test_variants() {
        let variant = Checker::new(&gpu, Runner::Lookback(tuning));
        let n = protocol_length(tuning);
        // 4-byte values, packed 64-bit word; non-commutative, so any
        // reordering of the look-back fold or the in-tile scan shows.
        let host = affine_input_u32(n, fresh_seed("variants affine16"));
        variant.repeated(&host, &op32, Inclusive, repetitions(8), "affine16");
        let exclusive = Exclusive {
            initial: 0x0003_0005,
        };
        variant.repeated(&host, &op32, exclusive, 2, "affine16 exclusive");
        // 8-byte values: the split or the 128-bit status, non-commutative.
        let host = affine_input_u64(n, fresh_seed("variants affine32"));
        variant.repeated(&host, &op64, Inclusive, repetitions(8), "affine32");
        let exclusive = Exclusive {
            initial: (7u64 << 32) | 3,
        };
        variant.repeated(&host, &op64, exclusive, 2, "affine32 exclusive");
        variant.case(&host, &op64, Inclusive, InPlace, "affine32 in place");
        variant.case(
            &host,
            &op64,
            Inclusive,
            Offsets(1, 3),
            "affine32 misaligned",
        );
        // A commutative 8-byte sum and a float max with an initial value.
        let host: Vec<u64> = exact_input(n, fresh_seed("variants u64 sum"));
        variant.repeated(&host, &Sum, Inclusive, 4, "u64 sum");
        let host: Vec<f64> = exact_input(n, fresh_seed("variants f64 max"));
        let exclusive = Exclusive { initial: -1.0e300 };
        variant.repeated(&host, &Max, exclusive, 2, "f64 max exclusive");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_protocol_variant_at_the_tile_edges() {
    let gpu = gpu();
    let op32 = affine_u32();
    let op64 = affine_u64();
    for tuning in scan::policy::protocol_test_variants() {
        let variant = Checker::new(&gpu, Runner::Lookback(tuning));
        let tile = tuning.tile_items() as usize;
        // Past the widest window (8 × 32 = 256 tiles) too.
        let mut lengths = edge_lengths(tile);
        lengths.extend([300 * tile - 1, 300 * tile + 1]);
        let exclusive = Exclusive {
            initial: 0x0001_0002,
        };
        for n in lengths {
            let host = affine_input_u32(n, fresh_seed("variant edges affine16"));
            variant.case(&host, &op32, exclusive, OutOfPlace, "edges affine16");
            let host = affine_input_u64(n, fresh_seed("variant edges affine32"));
            variant.case(&host, &op64, Inclusive, Offsets(3, 1), "edges affine32");
        }
    }
}

/// The lengths a full-size candidate of `tile` items runs: the tile's
/// edges, many tiles, and `large`.
fn candidate_lengths(tile: usize, large: usize) -> [usize; 5] {
    [1, tile - 1, tile + 1, 37 * tile + 5, large]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_sweep_candidate_at_full_size_shapes() {
    // The sweep's own kernels (i32 and u64 sums: the disk cache already has
    // them after a sweep); non-commutative operators on these layouts are
    // covered above with vector-width tiles (32 × 4, 64 × 8).
    let gpu = gpu();
    for tuning in scan::policy::lookback_candidates(4) {
        let candidate = Checker::new(&gpu, Runner::Lookback(tuning));
        let tile = tuning.tile_items() as usize;
        for n in candidate_lengths(tile, scaled(1 << 24, 1 << 20) + 3) {
            let host: Vec<i32> = exact_input(n, fresh_seed("candidates i32"));
            candidate.case(
                &host,
                &Sum,
                Exclusive { initial: -7 },
                InPlace,
                "candidate i32",
            );
        }
        let host: Vec<i32> = exact_input(3 * tile + 1, fresh_seed("candidates misaligned"));
        candidate.case(
            &host,
            &Sum,
            Inclusive,
            Offsets(1, 2),
            "candidate i32 misaligned",
        );
    }
    for tuning in scan::policy::lookback_candidates(8) {
        let candidate = Checker::new(&gpu, Runner::Lookback(tuning));
        let tile = tuning.tile_items() as usize;
        for n in candidate_lengths(tile, scaled(1 << 23, 1 << 19) + 3) {
            let host: Vec<u64> = exact_input(n, fresh_seed("candidates u64"));
            candidate.case(
                &host,
                &Sum,
                Exclusive { initial: 11 },
                OutOfPlace,
                "candidate u64",
            );
        }
        let host: Vec<u64> = exact_input(5 * tile + 3, fresh_seed("candidates u64 misaligned"));
        candidate.case(
            &host,
            &Sum,
            Inclusive,
            Offsets(1, 0),
            "candidate u64 misaligned",
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn loaded_kernels_are_told_apart_by_operator_text_and_context() {
    // Two custom operators with the same name but different CUDA text must
    // not share a loaded kernel; a second context loads its own.
    let sum = gpu_core::CustomOp::<u32>::new("same_name", "a + b", 0, |a, b| a.wrapping_add(b))
        .expect("operator");
    let xor =
        gpu_core::CustomOp::<u32>::new("same_name", "a ^ b", 0, |a, b| a ^ b).expect("operator");
    let host: Vec<u32> = exact_input(100_003, fresh_seed("same name"));
    for round in 0..2 {
        let gpu = gpu();
        let lookback = Checker::new(&gpu, Runner::Public(scan::ScanAlgorithm::DecoupledLookback));
        for (op, what) in [(&sum, "sum"), (&xor, "xor"), (&sum, "sum again")] {
            let what = format!("{what} (context {round})");
            lookback.case(&host, op, Inclusive, OutOfPlace, &what);
        }
    }
}
