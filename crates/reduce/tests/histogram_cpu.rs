//! CPU tests of the histogram (run in CI, no GPU): the reference on
//! hand-made cases (edges, NaN, out of range, top-edge rounding), every
//! bad-argument case as a typed error, the launch plan and grid arithmetic.

use gpu_core::Error;
use proptest::prelude::*;
use reduce::histogram::policy::{grid_blocks, head_items, plan, Mode};
use reduce::histogram::{
    cpu, range_bin, validate_bins, validate_boundaries, validate_counts, EvenBins,
    HistogramAlgorithm,
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

    /// Every counted item lands in exactly one bin; the totals agree.
    #[test]
    fn counts_add_up(data in proptest::collection::vec(-2.0f32..2.0, 0..300), bins in 2usize..70) {
        let counts: Vec<u32> = cpu::histogram_even(&data, bins, -1.0, 1.5).unwrap();
        let inside = data.iter().filter(|&&x| (-1.0..1.5).contains(&x)).count() as u32;
        prop_assert_eq!(counts.iter().sum::<u32>(), inside);
    }
}
