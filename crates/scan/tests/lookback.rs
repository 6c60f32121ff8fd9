//! GPU tests of the single-pass decoupled look-back scan.
//!
//! The look-back protocol on its own (tiny 32-item tiles so hundreds of
//! thousands of tiles are in flight and each one looks back through many
//! windows; repeated runs; non-commutative operators on both status
//! encodings), then the kernel through the public API for every type ×
//! operator, inclusive / exclusive with an initial value / in place,
//! lengths at the tile edges, misaligned views, other tile shapes, and the
//! typed errors. Every comparison is exact (inputs are chosen so that float
//! sums are exact too).

mod lookback_support;
mod scan_support;

use gpu_core::{
    BitAnd, BitOr, BitXor, DeviceBuffer, DeviceType, Element, Error, Gpu, Max, Min, Operator, Sum,
};
use lookback_support::Placement::{InPlace, Offsets, OutOfPlace};
use lookback_support::*;
use scan::policy::{Policy, StatusEncoding, TileLayout, LOOKBACK_TUNING, PROTOCOL_TEST_TUNING};
use scan::ScanKind::{Exclusive, Inclusive, InclusiveFrom};
use scan::{ScanAlgorithm, ScanOptions};

const LOOKBACK: Runner = Runner::Public(ScanAlgorithm::DecoupledLookback);

/// `full` tiles of the protocol tests, or a fifteenth of them at the quick
/// scale (`parprims_testkit::testing`; still several times the resident blocks).
fn tiny_tiles(full: usize) -> usize {
    parprims_testkit::testing::scaled(full, full / 15)
}

/// `full` repetitions, or 2 at the quick scale.
fn repetitions(full: usize) -> usize {
    parprims_testkit::testing::scaled(full, 2)
}

fn tile_of<T: Element>() -> usize {
    LOOKBACK_TUNING
        .iter()
        .find(|(bytes, _)| *bytes == T::BYTES)
        .map(|(_, t)| t.tile_items() as usize)
        .expect("a tuning for every element size")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn protocol_hundreds_of_thousands_of_tiny_tiles_repeated() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, Runner::Lookback(PROTOCOL_TEST_TUNING));
    // 300 000 tiles of 32 items: packed 64-bit status words.
    let n = 32 * tiny_tiles(300_000);
    let host: Vec<u32> = exact_input(n, fresh_seed("tiny u32 sum"));
    tiny.repeated(&host, &Sum, Inclusive, repetitions(50), "tiny u32 sum");
    // A partial last tile and an exclusive scan with an initial value.
    let host: Vec<i32> = exact_input(n - 7, fresh_seed("tiny i32 sum excl"));
    let exclusive = Exclusive { initial: -12345 };
    tiny.repeated(
        &host,
        &Sum,
        exclusive,
        repetitions(10),
        "tiny i32 sum exclusive",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn protocol_split_status_for_eight_byte_values() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, Runner::Lookback(PROTOCOL_TEST_TUNING));
    let n = 32 * tiny_tiles(250_000) + 5;
    let host: Vec<u64> = exact_input(n, fresh_seed("tiny u64 sum"));
    tiny.repeated(&host, &Sum, Inclusive, repetitions(20), "tiny u64 sum");
    let host: Vec<f64> = exact_input(n, fresh_seed("tiny f64 sum"));
    tiny.repeated(&host, &Sum, Inclusive, repetitions(10), "tiny f64 sum");
    let host: Vec<i64> = exact_input(n, fresh_seed("tiny i64 max"));
    let exclusive = Exclusive { initial: 0 };
    tiny.repeated(&host, &Max, exclusive, repetitions(5), "tiny i64 max");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn protocol_keeps_operands_in_order_for_non_commutative_operators() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, Runner::Lookback(PROTOCOL_TEST_TUNING));
    let lookback = Checker::new(&gpu, LOOKBACK);
    let n = 32 * tiny_tiles(200_000) + 17;
    // 4-byte values: the packed status word.
    let op32 = affine_u32();
    let host = affine_input_u32(n, fresh_seed("affine16"));
    tiny.repeated(&host, &op32, Inclusive, repetitions(10), "tiny affine16");
    let exclusive = Exclusive {
        initial: 0x0003_0005,
    };
    tiny.repeated(
        &host,
        &op32,
        exclusive,
        repetitions(3),
        "tiny affine16 exclusive",
    );
    // 8-byte values: the split status protocol.
    let op64 = affine_u64();
    let host = affine_input_u64(n, fresh_seed("affine32"));
    tiny.repeated(&host, &op64, Inclusive, repetitions(10), "tiny affine32");
    let exclusive = Exclusive {
        initial: (7u64 << 32) | 3,
    };
    tiny.repeated(
        &host,
        &op64,
        exclusive,
        repetitions(3),
        "tiny affine32 exclusive",
    );
    // The same operators through the default tile shapes.
    for n in edge_lengths(tile_of::<u32>()) {
        let host = affine_input_u32(n, fresh_seed("affine16 edges"));
        lookback.case(&host, &op32, Inclusive, OutOfPlace, "affine16");
    }
    for n in edge_lengths(tile_of::<u64>()) {
        let host = affine_input_u64(n, fresh_seed("affine32 edges"));
        lookback.case(&host, &op64, Inclusive, InPlace, "affine32");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiny_tiles_at_every_edge_length() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, Runner::Lookback(PROTOCOL_TEST_TUNING));
    let cases = [(Inclusive, OutOfPlace), (Exclusive { initial: 9 }, InPlace)];
    for n in edge_lengths(32) {
        let host: Vec<u32> = exact_input(n, fresh_seed("tiny edges u32"));
        tiny.cases(&host, &Sum, &cases, "tiny");
        let host: Vec<f64> = exact_input(n, fresh_seed("tiny edges f64"));
        tiny.case(&host, &Sum, Inclusive, Offsets(1, 3), "tiny");
    }
}

/// Every operator of `T` at every edge length: inclusive out of place,
/// exclusive with a non-identity initial value in place; sums also
/// exclusive out of place and inclusive in place.
fn every_case<T: Element, O: Operator<T>>(gpu: &Gpu, op: &O, initial: T, name: &str) {
    let lookback = Checker::new(gpu, LOOKBACK);
    let cases = [(Inclusive, OutOfPlace), (Exclusive { initial }, InPlace)];
    for n in edge_lengths(tile_of::<T>()) {
        let host: Vec<T> = exact_input(n, fresh_seed(name));
        lookback.cases(&host, op, &cases, name);
    }
}

fn every_operator<T: Element>(gpu: &Gpu)
where
    Sum: Operator<T>,
    Max: Operator<T>,
    Min: Operator<T>,
{
    let initial = T::from_f64(3.0);
    every_case::<T, _>(gpu, &Sum, initial, &format!("{} sum", T::SUFFIX));
    every_case::<T, _>(gpu, &Max, initial, &format!("{} max", T::SUFFIX));
    every_case::<T, _>(gpu, &Min, initial, &format!("{} min", T::SUFFIX));
    let sum_cases = [(Exclusive { initial }, OutOfPlace), (Inclusive, InPlace)];
    for n in [1, tile_of::<T>() + 1, 5 * tile_of::<T>() - 1] {
        let host: Vec<T> = exact_input(n, fresh_seed("sum extra"));
        Checker::new(gpu, LOOKBACK).cases(&host, &Sum, &sum_cases, "sum");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_type_and_operator_at_the_tile_edges() {
    let gpu = gpu();
    let lookback = Checker::new(&gpu, LOOKBACK);
    every_operator::<i32>(&gpu);
    every_operator::<u32>(&gpu);
    every_operator::<i64>(&gpu);
    every_operator::<u64>(&gpu);
    every_operator::<f32>(&gpu);
    every_operator::<f64>(&gpu);
    for n in edge_lengths(tile_of::<u32>()) {
        let host: Vec<u32> = exact_input(n, fresh_seed("u32 bitwise"));
        lookback.case(&host, &BitXor, Inclusive, OutOfPlace, "xor");
        lookback.case(&host, &BitAnd, Inclusive, OutOfPlace, "and");
    }
    for n in edge_lengths(tile_of::<i64>()) {
        let host: Vec<i64> = exact_input(n, fresh_seed("i64 bitwise"));
        lookback.case(&host, &BitOr, Inclusive, OutOfPlace, "or");
        lookback.case(&host, &BitXor, Exclusive { initial: 5 }, InPlace, "xor");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_views_take_the_element_wise_path() {
    let gpu = gpu();
    let lookback = Checker::new(&gpu, LOOKBACK);
    let offsets = [(1, 0), (2, 3), (3, 1), (0, 2), (4, 4)];
    for (in_offset, out_offset) in offsets {
        let placement = Offsets(in_offset, out_offset);
        for n in [1, 4095, 3 * 4096 + 5, 100_003] {
            let host: Vec<i32> = exact_input(n, fresh_seed("misaligned i32"));
            lookback.case(&host, &Sum, Inclusive, placement, "i32");
            let host: Vec<f32> = exact_input(n, fresh_seed("misaligned f32"));
            let exclusive = Exclusive { initial: -100.0 };
            lookback.case(&host, &Max, exclusive, placement, "f32");
            let host: Vec<u64> = exact_input(n, fresh_seed("misaligned u64"));
            lookback.case(&host, &Sum, Inclusive, placement, "u64");
            let host: Vec<f64> = exact_input(n, fresh_seed("misaligned f64"));
            lookback.case(&host, &Sum, Exclusive { initial: 0.5 }, placement, "f64");
        }
    }
}

/// The inclusive scan from an initial value (`initial ⊕ x[0] ⊕ … ⊕ x[i]`)
/// in both tile layouts and every placement: the protocol's tiny tiles
/// with non-commutative operators (a seed on the wrong side, or folded
/// into a later tile twice, shows), the default tiles at their edges in
/// and out of place, misaligned views (the element-wise paths), and the
/// blocked and warp-striped shapes of `other_tile_shapes`, for 4- and
/// 8-byte types.
#[test]
#[ignore = "needs a CUDA GPU"]
fn inclusive_from_an_initial_value_in_every_layout() {
    let gpu = gpu();
    let tiny = Checker::new(&gpu, Runner::Lookback(PROTOCOL_TEST_TUNING));
    let lookback = Checker::new(&gpu, LOOKBACK);
    let op32 = affine_u32();
    let op64 = affine_u64();
    let seeded32 = InclusiveFrom {
        initial: 0x0003_0005,
    };
    let seeded64 = InclusiveFrom {
        initial: (7u64 << 32) | 3,
    };
    let n = 32 * tiny_tiles(100_000) + 17;
    let host = affine_input_u32(n, fresh_seed("from affine16"));
    tiny.repeated(&host, &op32, seeded32, repetitions(3), "tiny affine16 from");
    let host = affine_input_u64(n, fresh_seed("from affine32"));
    tiny.repeated(&host, &op64, seeded64, repetitions(3), "tiny affine32 from");
    for n in edge_lengths(tile_of::<u32>()) {
        let host = affine_input_u32(n, fresh_seed("from affine16 edges"));
        lookback.case(&host, &op32, seeded32, OutOfPlace, "affine16 from");
        lookback.case(&host, &op32, seeded32, InPlace, "affine16 from in place");
        let host: Vec<i32> = exact_input(n, fresh_seed("from i32 edges"));
        lookback.case(
            &host,
            &Sum,
            InclusiveFrom { initial: -5 },
            OutOfPlace,
            "i32 from",
        );
        let host: Vec<f32> = exact_input(n, fresh_seed("from f32 edges"));
        let from = InclusiveFrom { initial: 1.0e9 };
        lookback.case(&host, &Max, from, InPlace, "f32 max from");
    }
    for n in edge_lengths(tile_of::<u64>()) {
        let host = affine_input_u64(n, fresh_seed("from affine32 edges"));
        lookback.case(&host, &op64, seeded64, OutOfPlace, "affine32 from");
        let host: Vec<f64> = exact_input(n, fresh_seed("from f64 edges"));
        let from = InclusiveFrom { initial: 0.5 };
        lookback.case(&host, &Sum, from, InPlace, "f64 from");
    }
    for placement in [Offsets(1, 0), Offsets(3, 1), Offsets(0, 2)] {
        for n in [1, 4095, 3 * 4096 + 5, 100_003] {
            let host: Vec<i32> = exact_input(n, fresh_seed("from misaligned i32"));
            lookback.case(&host, &Sum, InclusiveFrom { initial: 11 }, placement, "i32");
            let host = affine_input_u64(n, fresh_seed("from misaligned affine32"));
            lookback.case(&host, &op64, seeded64, placement, "affine32");
        }
    }
    let shapes = other_shapes();
    for tuning in shapes {
        let shaped = Checker::new(&gpu, Runner::Lookback(tuning));
        let tile = tuning.tile_items() as usize;
        for n in [1, tile - 1, tile, tile + 1, 40 * tile + 3] {
            let host = affine_input_u32(n, fresh_seed("from shapes affine16"));
            shaped.case(&host, &op32, seeded32, OutOfPlace, "affine16 from");
            let host: Vec<f64> = exact_input(n, fresh_seed("from shapes f64"));
            let from = InclusiveFrom { initial: 2.0 };
            shaped.case(&host, &Sum, from, InPlace, "f64 from");
        }
    }
}

/// Tile shapes besides the default: 3 items per thread (not a multiple of
/// the vector width, so the element-wise path even when aligned), a larger
/// 512 × 8 block, and both in the warp-striped layout (3 items: scalar
/// groups; 512 × 8 with the 128-bit status and a 4-wide look-back).
fn other_shapes() -> [Policy; 4] {
    [
        Policy::shape(64, 3),
        Policy::shape(512, 8),
        Policy::shape(64, 3).with_layout(TileLayout::WarpStriped),
        Policy::shape(512, 8)
            .with_layout(TileLayout::WarpStriped)
            .with_status(StatusEncoding::Packed128)
            .with_lookback_width(4),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn other_tile_shapes() {
    let gpu = gpu();
    let shapes = other_shapes();
    for tuning in shapes {
        let shaped = Checker::new(&gpu, Runner::Lookback(tuning));
        let tile = tuning.tile_items() as usize;
        for n in [
            1,
            tile - 1,
            tile,
            tile + 1,
            40 * tile + 3,
            parprims_testkit::testing::scaled(1 << 20, 1 << 16),
        ] {
            let host: Vec<i32> = exact_input(n, fresh_seed("shapes i32"));
            shaped.case(&host, &Sum, Inclusive, OutOfPlace, "i32");
            let host: Vec<f64> = exact_input(n, fresh_seed("shapes f64"));
            shaped.case(&host, &Sum, Exclusive { initial: 2.0 }, InPlace, "f64");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn repeated_runs_at_2_24_with_the_default_tiles() {
    let gpu = gpu();
    let lookback = Checker::new(&gpu, LOOKBACK);
    // 2^20 at the quick scale.
    let n = parprims_testkit::testing::scaled(1 << 24, 1 << 20);
    let host: Vec<i32> = exact_input(n, fresh_seed("2^24 i32"));
    lookback.repeated(&host, &Sum, Inclusive, repetitions(20), "2^24 i32 sum");
    let host: Vec<f64> = exact_input(n + 3, fresh_seed("2^24 f64"));
    lookback.repeated(&host, &Sum, Inclusive, repetitions(5), "2^24 f64 sum");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_input_and_bad_arguments_write_nothing() {
    let gpu = gpu();
    let empty = DeviceBuffer::<i32>::zeros(&gpu, 0).expect("empty");
    let mut empty_out = DeviceBuffer::<i32>::zeros(&gpu, 0).expect("empty");
    for runner in [LOOKBACK, Runner::Lookback(PROTOCOL_TEST_TUNING)] {
        runner
            .run(
                &gpu,
                Some(empty.view()),
                empty_out.view_mut(),
                &Sum,
                Inclusive,
            )
            .expect("n = 0 is a no-op");
    }
    let input = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4]).expect("upload");
    let mut output = DeviceBuffer::<i32>::poisoned(&gpu, 5).expect("output");
    let err = scan::scan_into(
        &gpu,
        input.view(),
        output.view_mut(),
        &Sum,
        Inclusive,
        &ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(PROTOCOL_TEST_TUNING),
    )
    .expect_err("length mismatch");
    assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
    let bad = Policy::shape(48, 4);
    let err = scan::scan_into(
        &gpu,
        input.view(),
        output.slice_mut(0..4).expect("view"),
        &Sum,
        Inclusive,
        &ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(bad),
    )
    .expect_err("bad tuning");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert!(output
        .to_host(&gpu)
        .expect("download")
        .iter()
        .all(|&x| x == i32::poison()));
}
