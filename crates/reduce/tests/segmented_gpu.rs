//! GPU tests of segmented reduce by offsets against the CPU reference:
//! random segment lengths with empty segments, one segment of n, n segments
//! of one, one giant segment among short ones, lengths around a tile,
//! offsets not starting at 0, u32 and u64 offsets, i32 exactly, f32 and
//! f64 within a rounding bound, a non-commutative custom operator, shapes
//! whose carries fill several fix-up chunks (one run of carries across
//! chunks, segments of exactly one tile, empty segments at chunk
//! boundaries), and bad arguments (typed error, nothing written).
//!
//! Run on a GPU machine: `cargo test -p parprims-reduce --test segmented_gpu -- --include-ignored`.

use gpu_core::{CustomOp, DeviceBuffer, Error, Gpu, Max, Min, Sum};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use reduce::segmented::{segmented_reduce_cpu, tile_steps, SegmentOffset, FIXUP_CHUNK};

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

fn offsets_from_lengths(first: u64, lengths: &[usize]) -> Vec<u64> {
    let mut offsets = vec![first];
    for &length in lengths {
        offsets.push(offsets.last().unwrap() + length as u64);
    }
    offsets
}

/// Runs the GPU segmented reduce with `Off` offsets; `out` starts poisoned.
fn run<T: gpu_core::Element, O: gpu_core::Operator<T>, Off: SegmentOffset + TryFrom<u64>>(
    gpu: &Gpu,
    values: &[T],
    offsets: &[u64],
    op: &O,
) -> Vec<T>
where
    <Off as TryFrom<u64>>::Error: std::fmt::Debug,
{
    let narrow: Vec<Off> = offsets.iter().map(|&o| Off::try_from(o).unwrap()).collect();
    let values = DeviceBuffer::from_host(gpu, values).unwrap();
    let offsets = DeviceBuffer::from_host(gpu, &narrow).unwrap();
    let mut out = DeviceBuffer::<T>::poisoned(gpu, narrow.len() - 1).unwrap();
    reduce::segmented_reduce(gpu, values.view(), offsets.view(), op, out.view_mut()).unwrap();
    out.to_host(gpu).unwrap()
}

fn random_lengths(rng: &mut SplitMix64, segments: usize, max_len: u64) -> Vec<usize> {
    (0..segments)
        .map(|_| match rng.below(4) {
            0 => 0,
            1 => rng.below(3) as usize,
            _ => rng.below(max_len + 1) as usize,
        })
        .collect()
}

fn values_i32(rng: &mut SplitMix64, n: usize) -> Vec<i32> {
    (0..n).map(|_| rng.below(2001) as i32 - 1000).collect()
}

/// Checks i32 sums exactly, with u32 and u64 offsets.
fn check_i32(gpu: &Gpu, values: &[i32], offsets: &[u64]) {
    let expected = segmented_reduce_cpu(values, offsets, &Sum).unwrap();
    assert_eq!(
        run::<i32, _, u64>(gpu, values, offsets, &Sum),
        expected,
        "u64 offsets"
    );
    assert_eq!(
        run::<i32, _, u32>(gpu, values, offsets, &Sum),
        expected,
        "u32 offsets"
    );
    let expected = segmented_reduce_cpu(values, offsets, &Max).unwrap();
    assert_eq!(
        run::<i32, _, u32>(gpu, values, offsets, &Max),
        expected,
        "max"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shapes_at_the_edges() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(0x5e9);
    let tile = tile_steps(4) as usize;
    for n in [
        0usize,
        1,
        2,
        31,
        33,
        tile - 1,
        tile,
        tile + 1,
        5 * tile + 17,
        1 << 20,
    ] {
        let values = values_i32(&mut rng, n);
        // One segment of n.
        check_i32(&gpu, &values, &[0, n as u64]);
        // n segments of one.
        let ones: Vec<u64> = (0..=n as u64).collect();
        check_i32(&gpu, &values, &ones);
        // Every segment empty, then all of n in the last one.
        let mut empties = vec![0u64; 1000];
        empties.push(n as u64);
        check_i32(&gpu, &values, &empties);
    }
    // One giant segment among short ones, and segments of ~1000.
    let n = 3 << 20;
    let values = values_i32(&mut rng, n);
    let mut lengths = random_lengths(&mut rng, 2000, 8);
    lengths.push(n - lengths.iter().sum::<usize>() - 3000);
    lengths.extend(random_lengths(&mut rng, 100, 20));
    let offsets = offsets_from_lengths(0, &lengths);
    assert!(*offsets.last().unwrap() as usize <= n);
    check_i32(&gpu, &values, &offsets);
    let thousands: Vec<u64> = (0..=(n as u64 / 1000)).map(|s| s * 1000).collect();
    check_i32(&gpu, &values, &thousands);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn offsets_need_not_start_at_zero_or_end_at_n() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(7);
    let values = values_i32(&mut rng, 50_000);
    let lengths = random_lengths(&mut rng, 300, 200);
    let offsets = offsets_from_lengths(123, &lengths);
    assert!(*offsets.last().unwrap() <= 50_000);
    check_i32(&gpu, &values, &offsets);
}

/// More tiles than one fix-up chunk holds, so that the chunks and their
/// summaries run: one run of carries over several chunks, every tile
/// ending a segment, empty segments where chunks meet, a non-commutative
/// operator across chunks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn carries_across_fixup_chunks() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(0xc4a);
    let tile = tile_steps(4);
    let chunk_steps = FIXUP_CHUNK * tile;
    // One segment of 2^24 values: about 3450 tiles, every carry in one run
    // over four chunks.
    let n = 1usize << 24;
    let values = values_i32(&mut rng, n);
    check_i32(&gpu, &values, &[0, n as u64]);
    // Segments of exactly one tile (items + end), 3000 tiles.
    let lengths = vec![tile as usize - 1; 3000];
    let offsets = offsets_from_lengths(0, &lengths);
    let values = values_i32(&mut rng, *offsets.last().unwrap() as usize);
    check_i32(&gpu, &values, &offsets);
    // n segments of one: 2^22 of them, about 1700 tiles of distinct keys.
    let n = 1usize << 22;
    let values = values_i32(&mut rng, n);
    let ones: Vec<u64> = (0..=n as u64).collect();
    check_i32(&gpu, &values, &ones);
    // Long segments with empty ones and ends just around where the chunks'
    // steps meet (each end takes a step, so the items shift by the ends
    // before).
    let n = 5 * chunk_steps as usize;
    let values = values_i32(&mut rng, n);
    let mut offsets = vec![0u64];
    for c in 1..5u64 {
        let at = c * chunk_steps - offsets.len() as u64;
        offsets.extend([at - 1, at, at, at, at + 1, at + 2]);
    }
    offsets.extend([n as u64, n as u64]);
    check_i32(&gpu, &values, &offsets);
    // Order across chunks: affine maps, one giant segment among short ones.
    let op = affine();
    let n = 3 * chunk_steps as usize;
    let maps: Vec<u64> = (0..n)
        .map(|_| ((rng.below(1 << 32) | 1) << 32) | rng.below(1 << 32))
        .collect();
    let mut lengths = random_lengths(&mut rng, 500, 8);
    let short: usize = lengths.iter().sum();
    lengths.push(n - short - 100);
    lengths.extend([0, 40, 0, 60]);
    let offsets = offsets_from_lengths(0, &lengths);
    assert_eq!(*offsets.last().unwrap() as usize, n);
    assert_eq!(
        run::<u64, _, u32>(&gpu, &maps, &offsets, &op),
        segmented_reduce_cpu(&maps, &offsets, &op).unwrap()
    );
}

/// The composition of affine maps x ↦ m·x + c modulo 2^32, packed (m, c) in
/// a u64: associative, not commutative.
fn affine() -> CustomOp<u64> {
    CustomOp::<u64>::new(
        "affine",
        "((u64)((u32)(a >> 32) * (u32)(b >> 32)) << 32) | (u64)((u32)a * (u32)(b >> 32) + (u32)b)",
        1u64 << 32,
        |a: u64, b: u64| {
            let (m1, c1) = ((a >> 32) as u32, a as u32);
            let (m2, c2) = ((b >> 32) as u32, b as u32);
            ((m1.wrapping_mul(m2) as u64) << 32) | (c1.wrapping_mul(m2).wrapping_add(c2) as u64)
        },
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_segments_every_type(seed in any::<u64>(), segments in 1usize..3000, max_len in prop::sample::select(vec![1u64, 4, 40, 1000, 20_000])) {
        let gpu = gpu();
        let mut rng = SplitMix64::new(seed);
        let lengths = random_lengths(&mut rng, segments, max_len);
        let offsets = offsets_from_lengths(0, &lengths);
        let n = *offsets.last().unwrap() as usize + rng.below(5) as usize;

        let ints = values_i32(&mut rng, n);
        prop_assert_eq!(run::<i32, _, u32>(&gpu, &ints, &offsets, &Sum), segmented_reduce_cpu(&ints, &offsets, &Sum).unwrap());
        prop_assert_eq!(run::<i32, _, u64>(&gpu, &ints, &offsets, &Min), segmented_reduce_cpu(&ints, &offsets, &Min).unwrap());

        // Floats: a reordered sum is within n·ε·Σ|x| of the exact one.
        let floats: Vec<f32> = ints.iter().map(|&v| v as f32 / 7.0).collect();
        let got = run::<f32, _, u32>(&gpu, &floats, &offsets, &Sum);
        for (s, pair) in offsets.windows(2).enumerate() {
            let slice = &floats[pair[0] as usize..pair[1] as usize];
            let exact: f64 = slice.iter().map(|&v| v as f64).sum();
            let bound: f64 = slice.iter().map(|&v| (v as f64).abs()).sum::<f64>() * slice.len() as f64 * f32::EPSILON as f64 + 1e-30;
            prop_assert!((got[s] as f64 - exact).abs() <= bound, "segment {}: {} vs {}", s, got[s], exact);
        }
        let doubles: Vec<f64> = ints.iter().map(|&v| v as f64 / 3.0).collect();
        let got = run::<f64, _, u64>(&gpu, &doubles, &offsets, &Max);
        prop_assert_eq!(got, segmented_reduce_cpu(&doubles, &offsets, &Max).unwrap());

        // Order: a non-commutative operator, exactly.
        let maps: Vec<u64> = (0..n).map(|_| ((rng.below(1 << 32) | 1) << 32) | rng.below(1 << 32)).collect();
        let op = affine();
        prop_assert_eq!(run::<u64, _, u32>(&gpu, &maps, &offsets, &op), segmented_reduce_cpu(&maps, &offsets, &op).unwrap());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_typed_errors_and_write_nothing() {
    let gpu = gpu();
    let values = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0, 3.0]).unwrap();
    let offsets = DeviceBuffer::from_host(&gpu, &[0u32, 1, 3]).unwrap();
    let mut out = DeviceBuffer::from_host(&gpu, &[9.0f32; 3]).unwrap();
    let error = reduce::segmented_reduce(&gpu, values.view(), offsets.view(), &Sum, out.view_mut());
    assert!(
        matches!(error, Err(Error::LengthMismatch { .. })),
        "{error:?}"
    );
    assert_eq!(out.to_host(&gpu).unwrap(), vec![9.0; 3]);
    let narrow = DeviceBuffer::from_host(&gpu, &[1u8, 2]).unwrap();
    let mut narrow_out = DeviceBuffer::<u8>::zeros(&gpu, 1).unwrap();
    let offsets = DeviceBuffer::from_host(&gpu, &[0u64, 2]).unwrap();
    let error = reduce::segmented_reduce(
        &gpu,
        narrow.view(),
        offsets.view(),
        &Sum,
        narrow_out.view_mut(),
    );
    assert!(matches!(error, Err(Error::Unsupported(_))), "{error:?}");
}

/// After a first call at a size, calls take their coordinates, carries and
/// summaries from the scratch arena: nothing allocated, nothing set, with
/// and without the fix-up's chunks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn steady_state_calls_allocate_nothing() {
    let gpu = gpu();
    let n = 1usize << 24; // more tiles than one fix-up chunk
    let host: Vec<i32> = (0..n).map(|i| (i % 13) as i32 - 6).collect();
    let values = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let long = DeviceBuffer::from_host(&gpu, &[0u32, 1000, n as u32]).unwrap();
    let thousands: Vec<u32> = (0..=(n as u32 / 1000)).map(|s| s * 1000).collect();
    let short = DeviceBuffer::from_host(&gpu, &thousands).unwrap();
    let mut out_long = DeviceBuffer::<i32>::zeros(&gpu, 2).unwrap();
    let mut out_short = DeviceBuffer::<i32>::zeros(&gpu, thousands.len() - 1).unwrap();
    let small = DeviceBuffer::from_host(&gpu, &[0u32, 10, 5000]).unwrap();
    let mut out_small = DeviceBuffer::<i32>::zeros(&gpu, 2).unwrap();
    let mut calls = |gpu: &Gpu| {
        reduce::segmented_reduce(gpu, values.view(), long.view(), &Sum, out_long.view_mut())
            .unwrap();
        reduce::segmented_reduce(gpu, values.view(), short.view(), &Sum, out_short.view_mut())
            .unwrap();
        reduce::segmented_reduce(gpu, values.view(), small.view(), &Sum, out_small.view_mut())
            .unwrap();
    };
    calls(&gpu);
    gpu.synchronize().unwrap();
    let before = gpu.scratch_stats();
    for _ in 0..10 {
        calls(&gpu);
    }
    gpu.synchronize().unwrap();
    parprims_testkit::testing::assert_scratch_steady(before, gpu.scratch_stats());
    let sums = out_long.to_host(&gpu).unwrap();
    let expected = segmented_reduce_cpu(&host, &[0u32, 1000, n as u32], &Sum).unwrap();
    assert_eq!(sums, expected);
}
