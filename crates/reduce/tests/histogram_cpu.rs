//! CPU tests of the histogram (run in CI, no GPU): the reference on
//! hand-made cases (edges, NaN, out of range, top-edge rounding), every
//! bad-argument case as a typed error, the launch plan and grid arithmetic,
//! and the histogram by sort's steps replayed on the host (bin indices with
//! the sentinel, a sort by the key bits only, counts as boundary distances)
//! against the reference.

use gpu_core::Error;
use proptest::prelude::*;
use reduce::histogram::policy::{grid_blocks, head_items, key_bits, plan, sort_passes, Mode};
use reduce::histogram::{
    bytes_moved, cpu, range_bin, sort_bytes_moved, validate_bins, validate_boundaries,
    validate_counts, EvenBins, HistogramAlgorithm, HistogramCount, MAX_BINS, MIN_BINS,
};

const H100_SHARED: usize = 227 * 1024;

#[test]
fn even_integer_bins_are_exact_and_half_open() {
    let counts: Vec<u32> =
        cpu::histogram_even(&[0i32, 1, 2, 3, 4, 5, 6, 7, 8, 9], 3, 0, 9).unwrap();
    // Bins [0, 3), [3, 6), [6, 9); 9 is outside.
    assert_eq!(counts, [3, 3, 3]);
    // More bins than values: the bins between are empty.
    let counts: Vec<u64> = cpu::histogram_even(&[0u8, 1, 2], 8, 0, 3).unwrap();
    assert_eq!(counts, [1, 0, 1, 0, 0, 1, 0, 0]); // ⌊x · 8 / 3⌋
                                                  // Full type ranges, no overflow.
    let spec = EvenBins::new(65_536, i32::MIN, i32::MAX).unwrap();
    assert_eq!(spec.bin(i32::MIN), Some(0));
    assert_eq!(spec.bin(i32::MAX - 1), Some(65_535));
    assert_eq!(spec.bin(i32::MAX), None);
    assert_eq!(spec.bin(0), Some(32_768));
    let spec = EvenBins::new(2, 0u32, u32::MAX).unwrap();
    assert_eq!(spec.bin(u32::MAX / 2), Some(0));
    assert_eq!(spec.bin(u32::MAX / 2 + 1), Some(1));
    let spec = EvenBins::new(256, -128i8, 127).unwrap();
    assert_eq!(spec.bin(-128), Some(0));
    assert_eq!(spec.bin(126), Some(254)); // ⌊254 · 256 / 255⌋
}

#[test]
fn even_float_bins_nan_out_of_range_and_top_edge() {
    let data = [
        f32::NAN,
        -0.0,
        0.0,
        0.1,
        0.5,
        0.999_999_9,
        1.0,
        -1e-30,
        f32::INFINITY,
    ];
    let counts: Vec<u32> = cpu::histogram_even(&data, 10, 0.0, 1.0).unwrap();
    assert_eq!(counts.iter().sum::<u32>(), 5); // -0.0, 0.0, 0.1, 0.5, 0.9999999
    assert_eq!(counts[0], 2);
    assert_eq!(counts[9], 1);
    // Top-edge rounding: (x − lower) · scale rounds to `bins` just below upper.
    let spec = EvenBins::new(3, 0.0f32, 0.3).unwrap();
    let below_top = f32::from_bits(0.3f32.to_bits() - 1);
    assert_eq!(spec.bin(below_top), Some(2));
    for bins in [2usize, 3, 7, 255, 65_536] {
        let spec = EvenBins::new(bins, -1.7f64, 3.3).unwrap();
        let top = f64::from_bits(3.3f64.to_bits() - 1);
        assert_eq!(spec.bin(top), Some(bins as u32 - 1));
        assert_eq!(spec.bin(-1.7), Some(0));
    }
}

#[test]
fn ranges_bins() {
    let b = [-1.0f32, 0.0, 0.5, 10.0];
    assert_eq!(range_bin(&b, -1.0), Some(0));
    assert_eq!(range_bin(&b, 0.0), Some(1));
    assert_eq!(range_bin(&b, 9.99), Some(2));
    assert_eq!(range_bin(&b, 10.0), None);
    assert_eq!(range_bin(&b, -2.0), None);
    assert_eq!(range_bin(&b, f32::NAN), None);
    let counts: Vec<u32> = cpu::histogram_ranges(&[5u16, 6, 7, 1000], &[5, 6, 8]).unwrap();
    assert_eq!(counts, [1, 2]);
}

#[test]
fn bad_arguments_are_typed_errors() {
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument { .. }));
    assert!(validate_bins(2).is_ok() && validate_bins(65_536).is_ok());
    for bins in [0, 1, 65_537] {
        assert!(invalid(validate_bins(bins)));
        assert!(EvenBins::new(bins, 0i32, 100).is_err());
    }
    assert!(EvenBins::new(4, 5i32, 5).is_err());
    assert!(EvenBins::new(4, 6u8, 5).is_err());
    assert!(EvenBins::new(4, f32::NAN, 1.0).is_err());
    assert!(EvenBins::new(4, 0.0, f64::NAN).is_err());
    assert!(EvenBins::new(4, f32::NEG_INFINITY, 1.0).is_err());
    assert!(EvenBins::new(4, -f32::MAX, f32::MAX).is_err()); // range overflows f32
    assert!(EvenBins::new(4, 0.0f32, 1e-44).is_err()); // scale overflows
    assert!(invalid(validate_boundaries(&[0i32, 1, 1])));
    assert!(invalid(validate_boundaries(&[0i32, 2, 1])));
    assert!(invalid(validate_boundaries(&[0.0f32, f32::NAN, 1.0])));
    assert!(invalid(validate_boundaries::<i32>(&[])));
    assert!(invalid(validate_boundaries(&[1i32])));
    assert!(invalid(validate_boundaries(&[1i32, 2])));
    assert!(validate_boundaries(&[1i32, 2, 3]).is_ok());
    let too_many: Vec<i32> = (0..65_538).collect();
    assert!(invalid(validate_boundaries(&too_many)));
    assert!(validate_boundaries(&too_many[..65_537]).is_ok());
    assert!(matches!(
        validate_counts(10, 9, (0x1000, 40), (0x2000, 36)),
        Err(Error::LengthMismatch {
            what: "counts",
            expected: 10,
            actual: 9
        })
    ));
    assert!(invalid(validate_counts(10, 10, (0x1000, 40), (0x1020, 40))));
    assert!(validate_counts(10, 10, (0x1000, 40), (0x1028, 40)).is_ok());
    assert!(validate_counts(10, 10, (0x1000, 0), (0x1000, 40)).is_ok());
    assert!(cpu::histogram_even::<i32, u32>(&[1], 1, 0, 10).is_err());
    assert!(cpu::histogram_ranges::<i32, u32>(&[1], &[3, 2, 1]).is_err());
}

#[test]
fn plans_per_bin_count() {
    use HistogramAlgorithm::{Auto, GlobalAtomic, SharedPrivatised};
    let p = plan(Auto, 256, 4, None, H100_SHARED).unwrap();
    assert_eq!(
        (p.mode, p.copies, p.block_threads, p.shared_bytes),
        (Mode::Shared, 32, 256, 32768)
    );
    let p = plan(Auto, 2, 4, None, H100_SHARED).unwrap();
    assert_eq!((p.mode, p.copies, p.shared_bytes), (Mode::Shared, 32, 256));
    let p = plan(Auto, 4096, 4, None, H100_SHARED).unwrap();
    assert_eq!((p.mode, p.copies, p.shared_bytes), (Mode::Shared, 2, 32768));
    let p = plan(Auto, 3000, 8, None, H100_SHARED).unwrap();
    assert_eq!((p.mode, p.copies), (Mode::Shared, 2));
    let p = plan(Auto, 65_536, 4, None, H100_SHARED).unwrap();
    assert_eq!(
        (p.mode, p.block_threads, p.shared_bytes),
        (Mode::Packed16, 1024, 131_072)
    );
    let p = plan(Auto, 8193, 2, None, H100_SHARED).unwrap();
    assert_eq!((p.mode, p.shared_bytes), (Mode::Packed16, 4097 * 4));
    // 1-byte inputs count values whatever the bins.
    for bins in [2, 256, 65_536] {
        let p = plan(Auto, bins, 1, Some(bins + 1), H100_SHARED).unwrap();
        assert_eq!(
            (p.mode, p.stored_bins, p.stage, p.shared_bytes),
            (Mode::Values, 256, 0, 34_816)
        );
    }
    // A device with 99 KiB blocks: global atomics past the u32 tier.
    assert_eq!(
        plan(Auto, 65_536, 4, None, 99 * 1024).unwrap().mode,
        Mode::Global
    );
    // Ranges: boundaries staged after the counts when they fit 16 KiB.
    let p = plan(Auto, 256, 4, Some(257), H100_SHARED).unwrap();
    assert_eq!((p.stage, p.shared_bytes), (257, 32768 + 257 * 4));
    let p = plan(Auto, 4096, 4, Some(4097), H100_SHARED).unwrap();
    assert_eq!((p.stage, p.shared_bytes), (0, 32768));
    let p = plan(GlobalAtomic, 100, 4, Some(101), H100_SHARED).unwrap();
    assert_eq!((p.mode, p.stage, p.shared_bytes), (Mode::Global, 101, 404));
    let p = plan(SharedPrivatised, 1000, 8, Some(1001), H100_SHARED).unwrap();
    assert_eq!(
        (p.mode, p.copies, p.stage, p.shared_bytes),
        (Mode::Shared, 1, 1001, 4000 + 8008)
    );
    assert!(plan(SharedPrivatised, 56 * 1024, 4, None, H100_SHARED).is_ok());
    assert!(matches!(
        plan(SharedPrivatised, 65_536, 4, None, H100_SHARED),
        Err(Error::InvalidArgument {
            name: "algorithm",
            ..
        })
    ));
}

#[test]
fn sort_method_plans_every_bin_count_and_auto_never_picks_it() {
    use HistogramAlgorithm::{Auto, Sort};
    for bins in [MIN_BINS, 255, 256, 8192, 8193, MAX_BINS] {
        for element_bytes in [1, 2, 4, 8] {
            let p = plan(Sort, bins, element_bytes, None, H100_SHARED).unwrap();
            assert_eq!(
                (p.mode, p.block_threads, p.stage, p.shared_bytes),
                (Mode::Sort, 256, 0, 0)
            );
            // On a device with 48 KiB blocks too: nothing of the counts is shared.
            assert!(plan(Sort, bins, element_bytes, None, 48 * 1024).is_ok());
            for shared in [48 * 1024, 99 * 1024, H100_SHARED] {
                assert_ne!(
                    plan(Auto, bins, element_bytes, None, shared).unwrap().mode,
                    Mode::Sort
                );
            }
        }
    }
    // Ranges: the boundaries are staged for the bin-index kernel when they fit 16 KiB.
    let p = plan(Sort, 256, 4, Some(257), H100_SHARED).unwrap();
    assert_eq!((p.stage, p.shared_bytes), (257, 257 * 4));
    let p = plan(Sort, 4096, 4, Some(4097), H100_SHARED).unwrap();
    assert_eq!((p.stage, p.shared_bytes), (0, 0));
    let p = plan(Sort, 1000, 8, Some(1001), H100_SHARED).unwrap();
    assert_eq!((p.stage, p.shared_bytes), (1001, 8008));
}

#[test]
fn sort_key_bits_passes_and_bytes() {
    // Every bin index and the sentinel `bins` fit the key bits; one bit fewer does not.
    for bins in MIN_BINS..=MAX_BINS {
        let bits = key_bits(bins);
        assert!(bins < 1 << bits, "{bins}");
        assert!(bins >= 1 << (bits - 1), "{bins}");
        assert_eq!(sort_passes(bins), bits.div_ceil(8));
    }
    assert_eq!(
        [2, 3, 4, 255, 256, 65_535, 65_536].map(key_bits),
        [2, 2, 3, 8, 9, 16, 17]
    );
    // Against the input read once: 7× for i32 at 256 bins, 9× at 65 536, 25× for u8.
    let n = 1usize << 28;
    let searches = |bins: u64| bins * 2 * 29 * 4;
    assert_eq!(
        sort_bytes_moved(n, 4, 256),
        7 * bytes_moved(n, 4) + searches(256)
    );
    assert_eq!(
        sort_bytes_moved(n, 4, 65_536),
        9 * bytes_moved(n, 4) + searches(65_536)
    );
    assert_eq!(
        sort_bytes_moved(n, 1, 256),
        25 * bytes_moved(n, 1) + searches(256)
    );
    assert_eq!(sort_bytes_moved(1, 4, 2), 4 + 4 + 4 + 8 + 2 * 2 * 4);
}

/// The histogram by sort on the host, step by step as the GPU runs it: bin
/// indices (`bins` for an item counted nowhere), sorted by the key bits only
/// (a stable sort of the masked keys, as the radix sort's bit range), then
/// `lower_bound(k + 1) − lower_bound(k)` per bin, stored or added wrapping.
fn by_sort_on_host<C: HistogramCount>(
    bin_of: impl Iterator<Item = Option<u32>>,
    bins: usize,
    counts: &mut [C],
    accumulate: bool,
) {
    let mask = (1u32 << key_bits(bins)) - 1;
    let mut keys: Vec<u32> = bin_of.map(|b| b.unwrap_or(bins as u32)).collect();
    keys.sort_by_key(|k| k & mask);
    let lower_bound = |k: u32| keys.partition_point(|&x| x < k) as u64;
    for (k, count) in counts.iter_mut().enumerate() {
        let run = lower_bound(k as u32 + 1) - lower_bound(k as u32);
        let base = if accumulate { *count } else { C::zero() };
        *count = C::add_wrapping(base, run);
    }
}

#[test]
fn by_sort_steps_on_host_at_the_edges() {
    // n = 0 and 1, 2 bins, items outside on both sides, the top bin, 65 536 bins.
    for (data, bins) in [
        (vec![], 2usize),
        (vec![5i32], 2),
        (vec![-1], 2),
        (vec![0, 1, 1, 2, -5, 9], 2),
        (vec![65_535, 0, 65_536, 65_535, -1], MAX_BINS),
    ] {
        let upper = if bins == 2 { 2 } else { 65_536 };
        let expected: Vec<u64> = cpu::histogram_even(&data, bins, 0, upper).unwrap();
        let spec = EvenBins::new(bins, 0, upper).unwrap();
        let mut counts = vec![7u64; bins];
        by_sort_on_host(data.iter().map(|&x| spec.bin(x)), bins, &mut counts, false);
        assert_eq!(counts, expected, "{data:?}");
        by_sort_on_host(data.iter().map(|&x| spec.bin(x)), bins, &mut counts, true);
        let doubled: Vec<u64> = expected.iter().map(|c| 2 * c).collect();
        assert_eq!(counts, doubled, "{data:?} accumulate");
    }
    // u32 counts wrap like the atomics: 1 + (2^32 − 1) = 0.
    let mut counts = [u32::MAX, 3];
    by_sort_on_host([Some(0), None, Some(1)].into_iter(), 2, &mut counts, true);
    assert_eq!(counts, [0, 4]);
}

#[test]
fn grid_and_alignment() {
    // 2^28 i32: 2^26 vectors, chunks of 1024 vectors: capped at the resident count.
    assert_eq!(grid_blocks(1 << 28, 4, 256, 4, 132 * 7), 924);
    assert_eq!(grid_blocks(1 << 12, 4, 256, 4, 924), 1);
    assert_eq!(grid_blocks((1 << 12) + 4, 4, 256, 4, 924), 2);
    assert_eq!(grid_blocks(31, 1, 256, 4, 924), 1);
    // Past 2^32 items, enough blocks that none counts 2^32 items.
    assert_eq!(grid_blocks(1 << 40, 1, 256, 4, 100), 512);
    assert_eq!(head_items(0x7f00_0000_0000, 10, 8), 0);
    assert_eq!(head_items(0x7f00_0000_0008, 10, 8), 1);
    assert_eq!(head_items(0x7f00_0000_0001, 3, 1), 3);
    assert_eq!(head_items(0x7f00_0000_0002, 1000, 2), 7);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The integer formula is the exact floor of the real quotient and
    /// agrees with the bin edges lower + ⌈k · range / bins⌉.
    #[test]
    fn integer_bins_match_exact_edges(lower in -1000i32..1000, width in 1i32..5000, bins in 2usize..600, x in -3000i32..8000) {
        let upper = lower + width;
        let spec = EvenBins::new(bins, lower, upper).unwrap();
        let got = spec.bin(x);
        if x < lower || x >= upper {
            prop_assert_eq!(got, None);
        } else {
            let k = got.unwrap() as i64;
            let (off, w, b) = ((x - lower) as i64, width as i64, bins as i64);
            prop_assert!(k * w <= off * b && off * b < (k + 1) * w);
        }
    }

    /// The histogram by sort's steps give the reference's counts, even and
    /// ranges bins, overwriting and accumulating.
    #[test]
    fn by_sort_steps_match_the_reference(
        data in proptest::collection::vec(-300i32..1300, 0..2000),
        bins in 2usize..1100,
        lower in -100i32..100,
        start in proptest::collection::vec(any::<u32>(), 0..4),
    ) {
        let upper = lower + 1000;
        let spec = EvenBins::new(bins, lower, upper).unwrap();
        let expected: Vec<u32> = cpu::histogram_even(&data, bins, lower, upper).unwrap();
        let mut counts = vec![u32::MAX; bins];
        by_sort_on_host(data.iter().map(|&x| spec.bin(x)), bins, &mut counts, false);
        prop_assert_eq!(&counts, &expected);
        let mut counts: Vec<u32> = (0..bins).map(|k| start.get(k % 4).copied().unwrap_or(1)).collect();
        let before = counts.clone();
        by_sort_on_host(data.iter().map(|&x| spec.bin(x)), bins, &mut counts, true);
        for k in 0..bins {
            prop_assert_eq!(counts[k], before[k].wrapping_add(expected[k]));
        }
        // Ranges: boundaries every `bins / 3 + 1`, from lower on.
        let boundaries: Vec<i32> = (0..=bins.min(40) as i32).map(|k| lower + k * (bins as i32 / 3 + 1)).collect();
        let expected: Vec<u64> = cpu::histogram_ranges(&data, &boundaries).unwrap();
        let mut counts = vec![0u64; boundaries.len() - 1];
        by_sort_on_host(data.iter().map(|&x| range_bin(&boundaries, x)), boundaries.len() - 1, &mut counts, false);
        prop_assert_eq!(counts, expected);
    }

    /// Every counted item lands in exactly one bin; the totals agree.
    #[test]
    fn counts_add_up(data in proptest::collection::vec(-2.0f32..2.0, 0..300), bins in 2usize..70) {
        let counts: Vec<u32> = cpu::histogram_even(&data, bins, -1.0, 1.5).unwrap();
        let inside = data.iter().filter(|&&x| (-1.0..1.5).contains(&x)).count() as u32;
        prop_assert_eq!(counts.iter().sum::<u32>(), inside);
    }
}
