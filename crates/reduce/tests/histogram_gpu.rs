//! GPU tests of the histogram: every method (the histogram by sort
//! included) × input type × count type × bin specification against the CPU
//! reference, exactly; lengths biased to the edges; all items in one bin;
//! 2 to 65 536 bins; Accumulate and Overwrite; u32 counts wrapping;
//! unaligned views; bad arguments (typed error, counts untouched); the
//! sort method at its own edges (digit-pass counts, the one-block sort).
//!
//! Run on a GPU machine: `cargo test -p parprims-reduce --test histogram_gpu -- --include-ignored`
//! (`histogram_past_2_31_u8` is ignored separately: run it alone).

use gpu_core::{DeviceBuffer, DeviceViewMut, Error, Gpu};
use parprims_testkit::rng::{random_vec, SplitMix64};
use proptest::prelude::*;
use reduce::histogram::{
    cpu, histogram_even, histogram_even_into, histogram_ranges, histogram_ranges_into, CountMode,
    HistogramAlgorithm, HistogramCount, HistogramInput,
};

const METHODS: [HistogramAlgorithm; 4] = [
    HistogramAlgorithm::GlobalAtomic,
    HistogramAlgorithm::SharedPrivatised,
    HistogramAlgorithm::Sort,
    HistogramAlgorithm::Auto,
];
/// One chunk of a 256-thread block: 256 × 4 vectors of 16 bytes.
const CHUNK_BYTES: usize = 256 * 4 * 16;

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

fn lengths(element_bytes: usize) -> Vec<usize> {
    let chunk = CHUNK_BYTES / element_bytes;
    vec![
        0,
        1,
        31,
        32,
        33,
        chunk - 1,
        chunk,
        chunk + 1,
        5 * chunk + 7,
        (1 << 20) + 3,
    ]
}

/// SharedPrivatised cannot hold 65 536 bins: it must refuse them, typed.
fn expect_refusal(algorithm: HistogramAlgorithm, bins: usize) -> bool {
    algorithm == HistogramAlgorithm::SharedPrivatised && bins * 4 > 227 * 1024
}

fn check_even<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    data: &[T],
    offset: usize,
    bins: usize,
    lower: T,
    upper: T,
    ctx: &str,
) {
    let buffer = DeviceBuffer::from_host(gpu, data).expect(ctx);
    let view = buffer.slice(offset..).expect(ctx);
    let expected: Vec<C> = cpu::histogram_even(&data[offset..], bins, lower, upper).expect(ctx);
    for algorithm in METHODS {
        let ctx = format!("{ctx} {algorithm:?} bins={bins} offset={offset}");
        let got = histogram_even::<T, C>(gpu, view, bins, lower, upper, algorithm);
        if expect_refusal(algorithm, bins) {
            assert!(matches!(got, Err(Error::InvalidArgument { .. })), "{ctx}");
            continue;
        }
        let got = got.expect(&ctx).to_host(gpu).expect(&ctx);
        assert!(got == expected, "{ctx}: counts differ");
    }
}

fn check_ranges<T: HistogramInput, C: HistogramCount>(
    gpu: &Gpu,
    data: &[T],
    boundaries: &[T],
    ctx: &str,
) {
    let buffer = DeviceBuffer::from_host(gpu, data).expect(ctx);
    let expected: Vec<C> = cpu::histogram_ranges(data, boundaries).expect(ctx);
    for algorithm in METHODS {
        let ctx = format!("{ctx} {algorithm:?} ranges bins={}", boundaries.len() - 1);
        let got = histogram_ranges::<T, C>(gpu, buffer.view(), boundaries, algorithm);
        if expect_refusal(algorithm, boundaries.len() - 1) {
            assert!(got.is_err(), "{ctx}");
            continue;
        }
        assert!(
            got.expect(&ctx).to_host(gpu).expect(&ctx) == expected,
            "{ctx}: counts differ"
        );
    }
}

/// Evenly spaced boundaries over [low, high] for `bins` bins, in T.
fn boundaries<T: HistogramInput>(bins: usize, low: f64, high: f64) -> Vec<T> {
    let mut b: Vec<T> = (0..=bins)
        .map(|k| T::from_f64(low + (high - low) * k as f64 / bins as f64))
        .collect();
    b.dedup_by(|a, b| *a <= *b);
    b
}

fn every_case<T: HistogramInput>(gpu: &Gpu, low: f64, high: f64) {
    let mut rng = SplitMix64::new(0x5eed_0000 + T::BYTES as u64);
    let (lower, upper) = (T::from_f64(low), T::from_f64(high));
    for n in lengths(T::BYTES) {
        // A little outside the bounds on both sides, so some items count nowhere.
        let span = high - low;
        let data: Vec<T> = random_vec(n, rng.next_u64(), low - span / 16.0, high + span / 16.0);
        let ctx = format!("{} n={n}", T::SUFFIX);
        for bins in [2, 256, 4096, 65_536] {
            check_even::<T, u32>(gpu, &data, 0, bins, lower, upper, &ctx);
        }
        check_even::<T, u64>(gpu, &data, 0, 256, lower, upper, &ctx);
        if n > 1 {
            check_even::<T, u32>(gpu, &data, 1, 256, lower, upper, &ctx);
        }
        for bins in [2, 100, 5000] {
            let b = boundaries::<T>(bins, low, high);
            if b.len() >= 3 {
                check_ranges::<T, u32>(gpu, &data, &b, &ctx);
            }
        }
        check_ranges::<T, u64>(gpu, &data, &boundaries::<T>(64, low, high), &ctx);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_method_type_and_bins_against_cpu() {
    let gpu = gpu();
    every_case::<u8>(&gpu, 0.0, 255.0);
    every_case::<i8>(&gpu, -100.0, 100.0);
    every_case::<u16>(&gpu, 0.0, 60_000.0);
    every_case::<i16>(&gpu, -30_000.0, 30_000.0);
    every_case::<i32>(&gpu, -1e6, 1e6);
    every_case::<u32>(&gpu, 0.0, 4e9);
    every_case::<f32>(&gpu, -3.5, 7.25);
    every_case::<f64>(&gpu, -3.5, 7.25);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn all_items_in_one_bin() {
    let gpu = gpu();
    let n = (1 << 20) + 5;
    for bins in [2, 256, 4096, 65_536] {
        check_even::<i32, u32>(&gpu, &vec![7i32; n], 0, bins, 0, 65_536, "one bin i32");
        check_even::<u8, u64>(
            &gpu,
            &vec![200u8; n],
            0,
            bins.min(255),
            0,
            255,
            "one bin u8",
        );
        check_even::<f32, u32>(&gpu, &vec![0.5f32; n], 0, bins, 0.0, 1.0, "one bin f32");
    }
    // Past 0x8000 and 0x10000 items in one 16-bit packed count of one block.
    let n = 3 << 16;
    check_even::<u16, u32>(
        &gpu,
        &vec![9u16; n],
        0,
        65_536,
        0,
        65_535,
        "packed16 one bin",
    );
    check_even::<i32, u64>(
        &gpu,
        &vec![65_535i32; n],
        0,
        65_536,
        0,
        65_536,
        "packed16 top bin",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn accumulate_and_overwrite() {
    let gpu = gpu();
    let data: Vec<i32> = random_vec(100_003, 11, -50.0, 1050.0);
    let input = DeviceBuffer::from_host(&gpu, &data).unwrap();
    let once: Vec<u64> = cpu::histogram_even(&data, 1000, 0, 1000).unwrap();
    for algorithm in METHODS {
        let mut counts = DeviceBuffer::<u64>::filled(&gpu, 1000, 5).unwrap();
        let view = || input.view();
        histogram_even_into(
            &gpu,
            view(),
            1000,
            0,
            1000,
            counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )
        .unwrap();
        histogram_even_into(
            &gpu,
            view(),
            1000,
            0,
            1000,
            counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )
        .unwrap();
        let got = counts.to_host(&gpu).unwrap();
        assert!(
            got.iter().zip(&once).all(|(g, o)| *g == 5 + 2 * o),
            "{algorithm:?} accumulate"
        );
        histogram_even_into(
            &gpu,
            view(),
            1000,
            0,
            1000,
            counts.view_mut(),
            CountMode::Overwrite,
            algorithm,
        )
        .unwrap();
        assert_eq!(
            counts.to_host(&gpu).unwrap(),
            once,
            "{algorithm:?} overwrite"
        );
        let b: Vec<i32> = (0..=1000).collect();
        histogram_ranges_into(
            &gpu,
            view(),
            &b,
            counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )
        .unwrap();
        assert!(
            counts
                .to_host(&gpu)
                .unwrap()
                .iter()
                .zip(&once)
                .all(|(g, o)| *g == 2 * o),
            "{algorithm:?} ranges"
        );
        // Empty input: Overwrite zeroes, Accumulate leaves.
        let empty = input.slice(0..0).unwrap();
        histogram_even_into(
            &gpu,
            empty,
            1000,
            0,
            1000,
            counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )
        .unwrap();
        assert!(counts
            .to_host(&gpu)
            .unwrap()
            .iter()
            .zip(&once)
            .all(|(g, o)| *g == 2 * o));
        histogram_even_into(
            &gpu,
            empty,
            1000,
            0,
            1000,
            counts.view_mut(),
            CountMode::Overwrite,
            algorithm,
        )
        .unwrap();
        assert!(counts.to_host(&gpu).unwrap().iter().all(|&g| g == 0));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_write_nothing() {
    let gpu = gpu();
    let input = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3]).unwrap();
    let sentinel = 0xDEAD_BEEFu32;
    let mut counts = DeviceBuffer::<u32>::filled(&gpu, 4, sentinel).unwrap();
    let over = CountMode::Overwrite;
    let auto = HistogramAlgorithm::Auto;
    let v = || input.view();
    // Even bins over [0, 10) into `out`.
    let even = |bins: usize, out: DeviceViewMut<'_, u32>, algorithm: HistogramAlgorithm| {
        histogram_even_into(&gpu, v(), bins, 0, 10, out, over, algorithm)
    };
    let errors = [
        even(3, counts.view_mut(), auto), // wrong length
        even(1, counts.slice_mut(..1).unwrap(), auto),
        histogram_even_into(&gpu, v(), 4, 10, 10, counts.view_mut(), over, auto),
        histogram_even_into(&gpu, v(), 4, 10, 0, counts.view_mut(), over, auto),
        histogram_ranges_into(&gpu, v(), &[0, 1, 1, 2, 3], counts.view_mut(), over, auto),
        histogram_ranges_into(&gpu, v(), &[0, 1, 2, 3], counts.view_mut(), over, auto), // 3 bins
        // The sort method validates the same way: one bin, a wrong length.
        even(1, counts.slice_mut(..1).unwrap(), HistogramAlgorithm::Sort),
        even(3, counts.view_mut(), HistogramAlgorithm::Sort),
        histogram_ranges_into(
            &gpu,
            v(),
            &[0, 1],
            counts.view_mut(),
            over,
            HistogramAlgorithm::Sort,
        ),
    ];
    for (k, e) in errors.into_iter().enumerate() {
        assert!(
            matches!(
                e,
                Err(Error::InvalidArgument { .. } | Error::LengthMismatch { .. })
            ),
            "case {k}: {e:?}"
        );
    }
    let mut big = DeviceBuffer::<u32>::filled(&gpu, 65_536, sentinel).unwrap();
    let refused = histogram_even_into(
        &gpu,
        v(),
        65_536,
        0,
        10,
        big.view_mut(),
        over,
        HistogramAlgorithm::SharedPrivatised,
    );
    assert!(refused.is_err());
    let fbuf = DeviceBuffer::from_host(&gpu, &[0.5f32]).unwrap();
    let mut fcounts = DeviceBuffer::<u32>::filled(&gpu, 4, sentinel).unwrap();
    assert!(histogram_even_into(
        &gpu,
        fbuf.view(),
        4,
        f32::NAN,
        1.0,
        fcounts.view_mut(),
        over,
        auto
    )
    .is_err());
    assert!(counts.to_host(&gpu).unwrap().iter().all(|&c| c == sentinel));
    assert!(big.to_host(&gpu).unwrap().iter().all(|&c| c == sentinel));
    assert!(fcounts
        .to_host(&gpu)
        .unwrap()
        .iter()
        .all(|&c| c == sentinel));
}

/// u32 counts wrap past 2^32 − 1 in every method: accumulating 5 items into
/// a count of 2^32 − 2 leaves 3.
#[test]
#[ignore = "needs a CUDA GPU"]
fn u32_counts_wrap_when_accumulating() {
    let gpu = gpu();
    let input = DeviceBuffer::from_host(&gpu, &[1u16, 1, 1, 1, 1, 7, 300]).unwrap();
    for algorithm in METHODS {
        let mut counts = DeviceBuffer::from_host(&gpu, &[u32::MAX - 1, u32::MAX, 9, 0]).unwrap();
        histogram_even_into(
            &gpu,
            input.view(),
            4,
            0,
            8,
            counts.view_mut(),
            CountMode::Accumulate,
            algorithm,
        )
        .unwrap();
        assert_eq!(
            counts.to_host(&gpu).unwrap(),
            [3, u32::MAX, 9, 1],
            "{algorithm:?}"
        );
    }
}

/// The histogram by sort at its own edges: bin counts where the key bits
/// cross a digit (255: the sentinel fills 8 bits; 256: a second pass;
/// 65 535 and 65 536), lengths around the one-block sort's 8192 keys, every
/// item outside the bins, every item in the top bin, both count modes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sort_method_edges() {
    let gpu = gpu();
    let sort = HistogramAlgorithm::Sort;
    let mut rng = SplitMix64::new(0x5027_0000);
    for n in [1usize, 2, 8191, 8192, 8193, 100_000] {
        let data: Vec<i32> = random_vec(n, rng.next_u64(), -70_000.0, 140_000.0);
        let input = DeviceBuffer::from_host(&gpu, &data).unwrap();
        for bins in [2usize, 3, 255, 256, 257, 65_535, 65_536] {
            let ctx = format!("sort n={n} bins={bins}");
            let expected: Vec<u32> = cpu::histogram_even(&data, bins, 0, 65_536).unwrap();
            let got = histogram_even::<i32, u32>(&gpu, input.view(), bins, 0, 65_536, sort)
                .expect(&ctx)
                .to_host(&gpu)
                .unwrap();
            assert!(got == expected, "{ctx}: counts differ");
            // Overwrite over a poisoned buffer, then Accumulate on top.
            let mut counts = DeviceBuffer::<u64>::filled(&gpu, bins, u64::MAX).unwrap();
            for mode in [CountMode::Overwrite, CountMode::Accumulate] {
                histogram_even_into(
                    &gpu,
                    input.view(),
                    bins,
                    0,
                    65_536,
                    counts.view_mut(),
                    mode,
                    sort,
                )
                .expect(&ctx);
            }
            let got = counts.to_host(&gpu).unwrap();
            assert!(
                got.iter()
                    .zip(&expected)
                    .all(|(&g, &e)| g == 2 * u64::from(e)),
                "{ctx}: overwrite then accumulate"
            );
        }
        // Nothing inside the bins: every index is the sentinel.
        let got = histogram_even::<i32, u32>(&gpu, input.view(), 256, 200_000, 300_000, sort)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert!(got.iter().all(|&c| c == 0), "sort n={n} nothing inside");
        // Everything in the top bin, the sentinel's neighbour.
        let top = DeviceBuffer::from_host(&gpu, &vec![65_535i32; n]).unwrap();
        let got = histogram_even::<i32, u64>(&gpu, top.view(), 65_536, 0, 65_536, sort)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert_eq!(got[65_535], n as u64);
        assert_eq!(got.iter().sum::<u64>(), n as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_even_f32_and_i32(n in 0usize..(1 << 22), bins in 2usize..=65_536, offset in 0usize..4, seed in any::<u64>()) {
        let gpu = gpu();
        let n = n.max(offset);
        let f: Vec<f32> = random_vec(n, seed, -1.0, 2.0);
        check_even::<f32, u32>(&gpu, &f, offset, bins, 0.0, 1.0, "proptest f32");
        let i: Vec<i32> = random_vec(n, seed ^ 1, -10.0, 70_000.0);
        check_even::<i32, u64>(&gpu, &i, offset, bins, 0, 65_536, "proptest i32");
    }
}

/// Past 2^31 items (u8, 2.1 GB): 64-bit indices everywhere. Run it alone.
#[test]
#[ignore = "needs a CUDA GPU and 2.2 GB: run alone"]
fn histogram_past_2_31_u8() {
    let gpu = gpu();
    let n = (1usize << 31) + 4099;
    let data: Vec<u8> = (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let input = DeviceBuffer::from_host(&gpu, &data).unwrap();
    let expected: Vec<u64> = cpu::histogram_even(&data, 256, 0, 255).unwrap();
    for algorithm in METHODS {
        let got = histogram_even::<u8, u64>(&gpu, input.view(), 256, 0, 255, algorithm).unwrap();
        assert_eq!(got.to_host(&gpu).unwrap(), expected, "{algorithm:?}");
    }
    let expected: Vec<u32> = cpu::histogram_even(&data[1..], 7, 3, 250).unwrap();
    let got = histogram_even::<u8, u32>(
        &gpu,
        input.slice(1..).unwrap(),
        7,
        3,
        250,
        HistogramAlgorithm::Auto,
    )
    .unwrap();
    assert_eq!(got.to_host(&gpu).unwrap(), expected);
}
