//! Segmented scan by head flags, by offsets and by key: the CPU references
//! against a per-segment scan and each other (CI), and on a GPU every 4- and
//! 8-byte type × operator × kind × head source against the reference, with head
//! densities from none to all, lengths at the tile edges and many tiles (the
//! look-back carries segments across tiles), flags of any non-zero byte,
//! empty segments among the offsets, keys of 1, 4 and 8 bytes, a
//! non-commutative custom operator, in place, unaligned views, and bad
//! arguments and offsets (typed error, nothing written).

use gpu_core::{BitXor, CustomOp, DeviceBuffer, Element, Error, Gpu, Max, Min, Operator, Sum};
use parprims_testkit::rng::{random_vec, SplitMix64};
use proptest::prelude::*;
use scan::{cpu, SegmentedKind};

/// The reference, written the other way: split at the heads, scan each part.
fn per_segment<T: Element, O: Operator<T>>(
    x: &[T],
    heads: &[u8],
    op: &O,
    kind: SegmentedKind,
) -> Vec<T> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in 1..=x.len() {
        if end == x.len() || heads[end] != 0 {
            let part = &x[start..end];
            let scanned = match kind {
                SegmentedKind::Inclusive => cpu::inclusive(part, op),
                SegmentedKind::Exclusive => cpu::scan(
                    part,
                    op,
                    scan::ScanKind::Exclusive {
                        initial: op.identity(),
                    },
                ),
            };
            out.extend(scanned);
            start = end;
        }
    }
    out
}

proptest! {
    #[test]
    fn reference_matches_a_scan_per_segment(
        x in proptest::collection::vec(-1000i32..1000, 0..400),
        density in 0u64..4,
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix64::new(seed);
        let heads: Vec<u8> = x.iter().map(|_| if rng.below(4) < density { (rng.below(255) + 1) as u8 } else { 0 }).collect();
        for kind in [SegmentedKind::Inclusive, SegmentedKind::Exclusive] {
            prop_assert_eq!(cpu::segmented_scan(&x, &heads, &Sum, kind), per_segment(&x, &heads, &Sum, kind));
            prop_assert_eq!(cpu::segmented_scan(&x, &heads, &Max, kind), per_segment(&x, &heads, &Max, kind));
        }
    }

    #[test]
    fn reference_matches_a_scan_per_segment_for_8_byte_values(
        x in proptest::collection::vec(any::<i64>(), 0..400),
        density in 0u64..4,
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix64::new(seed);
        let heads: Vec<u8> = x.iter().map(|_| if rng.below(4) < density { (rng.below(255) + 1) as u8 } else { 0 }).collect();
        let u: Vec<u64> = x.iter().map(|&v| v as u64).collect();
        let f: Vec<f64> = x.iter().map(|&v| (v % 1000) as f64).collect();
        let last = last_nonzero_u64();
        for kind in [SegmentedKind::Inclusive, SegmentedKind::Exclusive] {
            prop_assert_eq!(cpu::segmented_scan(&x, &heads, &Sum, kind), per_segment(&x, &heads, &Sum, kind));
            prop_assert_eq!(cpu::segmented_scan(&x, &heads, &Min, kind), per_segment(&x, &heads, &Min, kind));
            prop_assert_eq!(cpu::segmented_scan(&u, &heads, &BitXor, kind), per_segment(&u, &heads, &BitXor, kind));
            prop_assert_eq!(cpu::segmented_scan(&u, &heads, &last, kind), per_segment(&u, &heads, &last, kind));
            prop_assert_eq!(cpu::segmented_scan(&f, &heads, &Max, kind), per_segment(&f, &heads, &Max, kind));
        }
    }
}

/// Associative, not commutative: the last non-zero value so far (on u64).
fn last_nonzero_u64() -> CustomOp<u64> {
    CustomOp::<u64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .unwrap()
}

#[test]
fn validation_refuses_bad_lengths_and_wide_types() {
    assert!(scan::validate_segmented::<f32>(5, 5, 5).is_ok());
    assert!(matches!(
        scan::validate_segmented::<i32>(5, 4, 5),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        scan::validate_segmented::<i32>(5, 5, 6),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(scan::validate_segmented::<u64>(5, 5, 5).is_ok());
    assert!(scan::validate_segmented::<i64>(5, 5, 5).is_ok());
    assert!(scan::validate_segmented::<f64>(5, 5, 5).is_ok());
    assert!(matches!(
        scan::validate_segmented::<i64>(5, 4, 5),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        scan::validate_segmented::<u8>(5, 5, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        scan::validate_segmented::<i16>(5, 5, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        scan::validate_segmented_offsets::<u16>(5, 2, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        scan::validate_by_key::<gpu_core::f16>(5, 5, 5),
        Err(Error::Unsupported(_))
    ));
}

fn seed() -> u64 {
    parprims_testkit::testing::logged_seed()
}

/// Tile of the segmented scan of 4-byte values (256 × 32).
const TILE: usize = 8192;
/// Tile of the segmented scan of 8-byte values (256 × 16).
const WIDE_TILE: usize = 4096;

fn heads_with(n: usize, density_per_mille: u64, rng: &mut SplitMix64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            if rng.below(1000) < density_per_mille {
                (rng.below(255) + 1) as u8
            } else {
                0
            }
        })
        .collect()
}

/// The same segments as `heads`, as offsets (with an empty segment after
/// every seventh start, to check that empty segments change nothing).
fn offsets_of(heads: &[u8]) -> Vec<u64> {
    let mut offsets = vec![0u64];
    for (i, &flag) in heads.iter().enumerate().skip(1) {
        if flag != 0 {
            offsets.push(i as u64);
            if i % 7 == 0 {
                offsets.push(i as u64);
            }
        }
    }
    offsets.push(heads.len() as u64);
    offsets
}

/// The same segments as `heads`, as runs of keys: the run number, wrapped
/// to `K` (adjacent runs still differ).
fn keys_of<K: Copy>(heads: &[u8], wrap: impl Fn(u64) -> K) -> Vec<K> {
    let mut run = 0u64;
    heads
        .iter()
        .enumerate()
        .map(|(i, &flag)| {
            if i > 0 && flag != 0 {
                run += 1;
            }
            wrap(run)
        })
        .collect()
}

/// The scan by flags, by offsets and by keys (u8, u32, u64) of the same
/// segments, against the reference.
fn check<T: Element, O: Operator<T>>(gpu: &Gpu, x: &[T], heads: &[u8], op: &O, what: &str) {
    let n = x.len();
    let input = DeviceBuffer::from_host(gpu, x).unwrap();
    let flags = DeviceBuffer::from_host(gpu, heads).unwrap();
    let offsets_host = offsets_of(heads);
    let offsets = DeviceBuffer::from_host(gpu, &offsets_host).unwrap();
    let keys8 = DeviceBuffer::from_host(gpu, &keys_of(heads, |r| r as u8)).unwrap();
    let keys32 = DeviceBuffer::from_host(gpu, &keys_of(heads, |r| r as u32)).unwrap();
    let keys64 = DeviceBuffer::from_host(gpu, &keys_of(heads, |r| r << 33 | 5)).unwrap();
    for kind in [SegmentedKind::Inclusive, SegmentedKind::Exclusive] {
        let want = cpu::segmented_scan(x, heads, op, kind);
        assert_eq!(
            cpu::segmented_scan_by_offsets(x, &offsets_host, op, kind).unwrap(),
            want
        );
        // Floats are whole numbers here, so every order of combining is exact.
        let matches = |got: DeviceBuffer<T>, by: &str| {
            assert_eq!(
                got.to_host(gpu).unwrap(),
                want,
                "{what} {kind:?} {by} n={n}"
            );
        };
        matches(
            scan::segmented_scan(gpu, input.view(), flags.view(), op, kind).unwrap(),
            "flags",
        );
        matches(
            scan::segmented_scan_by_offsets(gpu, input.view(), offsets.view(), op, kind).unwrap(),
            "offsets",
        );
        matches(
            scan::scan_by_key(gpu, keys8.view(), input.view(), op, kind).unwrap(),
            "u8 keys",
        );
        matches(
            scan::scan_by_key(gpu, keys32.view(), input.view(), op, kind).unwrap(),
            "u32 keys",
        );
        matches(
            scan::scan_by_key(gpu, keys64.view(), input.view(), op, kind).unwrap(),
            "u64 keys",
        );
    }
}

proptest! {
    #[test]
    fn offsets_and_keys_references_agree_with_flags(
        x in proptest::collection::vec(-1000i32..1000, 0..300),
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix64::new(seed);
        let heads = heads_with(x.len(), 200, &mut rng);
        for kind in [SegmentedKind::Inclusive, SegmentedKind::Exclusive] {
            let want = cpu::segmented_scan(&x, &heads, &Sum, kind);
            if !x.is_empty() {
                prop_assert_eq!(&cpu::segmented_scan_by_offsets(&x, &offsets_of(&heads), &Sum, kind).unwrap(), &want);
            }
            prop_assert_eq!(&cpu::scan_by_key(&keys_of(&heads, |r| r as u8), &x, &Sum, kind), &want);
        }
    }
}

#[test]
fn offsets_reference_refuses_what_the_gpu_refuses() {
    let x = [1i32, 2, 3];
    let inclusive = SegmentedKind::Inclusive;
    for bad in [&[][..], &[1, 3], &[0, 2], &[0, 2, 1, 3], &[0, 4, 3]] {
        assert!(
            cpu::segmented_scan_by_offsets(&x, bad, &Sum, inclusive).is_err(),
            "{bad:?}"
        );
    }
    assert_eq!(
        cpu::segmented_scan_by_offsets(&x, &[0, 0, 3, 3], &Sum, inclusive).unwrap(),
        [1, 3, 6]
    );
    assert!(scan::validate_segmented_offsets::<i32>(3, 0, 3).is_err());
    assert!(scan::validate_by_key::<i32>(3, 2, 3).is_err());
}

/// The scan by offsets of `n` copies of `one`: bad offsets (a first offset
/// not 0, a last not n, a decreasing pair, one past n) are an
/// `InvalidArgument` with the output (filled with `fill`) untouched; one
/// segment of everything gives `running(i)` = `one` summed i times at i - 1,
/// and n segments of one scanned exclusively give all `zero`.
fn offsets_refused_and_extremes<T>(
    gpu: &Gpu,
    n: usize,
    one: T,
    fill: T,
    zero: T,
    running: impl Fn(usize) -> T,
) where
    T: Element,
    Sum: Operator<T>,
{
    let input = DeviceBuffer::from_host(gpu, &vec![one; n]).unwrap();
    let mut out = DeviceBuffer::<T>::filled(gpu, n, fill).unwrap();
    let m = n as u64;
    for bad in [
        vec![1, m],
        vec![0, m - 1],
        vec![0, 5000, 4999, m],
        vec![0, m + 1, m],
    ] {
        let offsets = DeviceBuffer::from_host(gpu, &bad).unwrap();
        let result = scan::segmented_scan_by_offsets_into(
            gpu,
            input.view(),
            offsets.view(),
            out.view_mut(),
            &Sum,
            SegmentedKind::Inclusive,
        );
        assert!(
            matches!(result, Err(Error::InvalidArgument { .. })),
            "{bad:?}"
        );
        assert_eq!(out.to_host(gpu).unwrap(), vec![fill; n], "{bad:?}");
    }
    let whole = DeviceBuffer::from_host(gpu, &[0, m]).unwrap();
    scan::segmented_scan_by_offsets_into(
        gpu,
        input.view(),
        whole.view(),
        out.view_mut(),
        &Sum,
        SegmentedKind::Inclusive,
    )
    .unwrap();
    assert_eq!(
        out.to_host(gpu).unwrap(),
        (1..=n).map(&running).collect::<Vec<_>>()
    );
    let singles = DeviceBuffer::from_host(gpu, &(0..=m).collect::<Vec<_>>()).unwrap();
    scan::segmented_scan_by_offsets_into(
        gpu,
        input.view(),
        singles.view(),
        out.view_mut(),
        &Sum,
        SegmentedKind::Exclusive,
    )
    .unwrap();
    assert_eq!(out.to_host(gpu).unwrap(), vec![zero; n]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_offsets_are_an_error_and_write_nothing() {
    let gpu = Gpu::new(0).unwrap();
    let n = 3 * TILE + 17;
    offsets_refused_and_extremes(&gpu, n, 1i32, 77, 0, |i| i as i32);
    // An empty input takes exactly [0].
    let empty = DeviceBuffer::<i32>::zeros(&gpu, 0).unwrap();
    let zero = DeviceBuffer::from_host(&gpu, &[0u64]).unwrap();
    assert!(scan::segmented_scan_by_offsets(
        &gpu,
        empty.view(),
        zero.view(),
        &Sum,
        SegmentedKind::Inclusive
    )
    .is_ok());
    let one = DeviceBuffer::from_host(&gpu, &[1u64]).unwrap();
    assert!(scan::segmented_scan_by_offsets(
        &gpu,
        empty.view(),
        one.view(),
        &Sum,
        SegmentedKind::Inclusive
    )
    .is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_type_operator_and_density_against_cpu() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    let lengths = [
        1usize,
        2,
        31,
        33,
        4095,
        4097,
        TILE - 1,
        TILE,
        TILE + 1,
        3 * TILE + 5,
        100_003,
        1 << 20,
        (1 << 22) + 7,
    ];
    for &n in &lengths {
        for density in [0u64, 1, 50, 500, 1000] {
            let heads = heads_with(n, density, &mut rng);
            let what = format!("density {density}‰");
            let i: Vec<i32> = random_vec(n, rng.next_u64(), -1000.0, 1000.0);
            check(&gpu, &i, &heads, &Sum, &format!("i32 sum {what}"));
            check(&gpu, &i, &heads, &Max, &format!("i32 max {what}"));
            let u: Vec<u32> = random_vec(n, rng.next_u64(), 0.0, 4e9);
            check(&gpu, &u, &heads, &Min, &format!("u32 min {what}"));
            check(&gpu, &u, &heads, &BitXor, &format!("u32 xor {what}"));
            // Small whole numbers: f32 sums stay exact within a segment of
            // up to 2^22 items of magnitude ≤ 3.
            let f: Vec<f32> = random_vec::<f32>(n, rng.next_u64(), -3.0, 3.0)
                .into_iter()
                .map(f32::round)
                .collect();
            check(&gpu, &f, &heads, &Sum, &format!("f32 sum {what}"));
            check(&gpu, &f, &heads, &Max, &format!("f32 max {what}"));
        }
    }
}

/// Every 8-byte type × operator (built-in and a non-commutative custom one)
/// × head density × kind × head source, at lengths around their tile of
/// 256 × 16: one segment of n (density 0), segments of one (density 1000).
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_8_byte_type_operator_and_density_against_cpu() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    let last = last_nonzero_u64();
    let lengths = [
        1usize,
        2,
        33,
        WIDE_TILE - 1,
        WIDE_TILE,
        WIDE_TILE + 1,
        3 * WIDE_TILE + 5,
        100_003,
        (1 << 21) + 7,
    ];
    for &n in &lengths {
        for density in [0u64, 1, 50, 500, 1000] {
            let heads = heads_with(n, density, &mut rng);
            let what = format!("density {density}‰");
            let i: Vec<i64> = (0..n)
                .map(|_| rng.next_u64() as i64 >> (rng.below(40) + 1))
                .collect();
            check(&gpu, &i, &heads, &Sum, &format!("i64 sum {what}"));
            check(&gpu, &i, &heads, &Max, &format!("i64 max {what}"));
            let u: Vec<u64> = (0..n)
                .map(|_| if rng.below(8) == 0 { 0 } else { rng.next_u64() })
                .collect();
            check(&gpu, &u, &heads, &Min, &format!("u64 min {what}"));
            check(&gpu, &u, &heads, &BitXor, &format!("u64 xor {what}"));
            check(&gpu, &u, &heads, &last, &format!("u64 last_nonzero {what}"));
            // Whole numbers of magnitude ≤ 2^20: f64 sums stay exact in
            // any combining order up to 2^32 items.
            let f: Vec<f64> = (0..n)
                .map(|_| rng.below(1 << 21) as f64 - (1 << 20) as f64)
                .collect();
            check(&gpu, &f, &heads, &Sum, &format!("f64 sum {what}"));
            check(&gpu, &f, &heads, &Min, &format!("f64 min {what}"));
        }
    }
}

/// The inclusive scan by flags in place, and the exclusive one on views off
/// the 16-byte boundary (input, flags and output all start at item 1),
/// against the reference.
fn in_place_and_unaligned<T: Element, O: Operator<T>>(gpu: &Gpu, x: &[T], heads: &[u8], op: &O) {
    let n = x.len();
    let mut data = DeviceBuffer::from_host(gpu, x).unwrap();
    let flags = DeviceBuffer::from_host(gpu, heads).unwrap();
    scan::segmented_scan_in_place(
        gpu,
        data.view_mut(),
        flags.view(),
        op,
        SegmentedKind::Inclusive,
    )
    .unwrap();
    assert_eq!(
        data.to_host(gpu).unwrap(),
        cpu::segmented_scan(x, heads, op, SegmentedKind::Inclusive),
        "in place n={n}"
    );
    let input = DeviceBuffer::from_host(gpu, x).unwrap();
    let mut out = DeviceBuffer::<T>::zeros(gpu, n).unwrap();
    scan::segmented_scan_into(
        gpu,
        input.slice(1..).unwrap(),
        flags.slice(1..).unwrap(),
        out.slice_mut(1..).unwrap(),
        op,
        SegmentedKind::Exclusive,
    )
    .unwrap();
    assert_eq!(
        &out.to_host(gpu).unwrap()[1..],
        cpu::segmented_scan(&x[1..], &heads[1..], op, SegmentedKind::Exclusive).as_slice(),
        "unaligned n={n}"
    );
}

/// The 8-byte forms' own checks: bad offsets refused with nothing written
/// (their tile is half the 4-byte one, so the tile starts differ), in
/// place, views off the 16-byte boundary, empty inputs, and the 4- and
/// 8-byte forms alternating on one stream (each keeps its own tile state).
#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_values_offsets_in_place_unaligned_and_empty() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    let n = 3 * WIDE_TILE + 17;
    offsets_refused_and_extremes(&gpu, n, 1.5f64, 77.0, 0.0, |i| 1.5 * i as f64);

    // In place and unaligned, with the non-commutative operator.
    let last = last_nonzero_u64();
    for n in [5usize, WIDE_TILE + 3, 300_001] {
        let x: Vec<u64> = (0..n)
            .map(|_| {
                if rng.below(20) == 0 {
                    rng.next_u64() | 1
                } else {
                    0
                }
            })
            .collect();
        let heads = heads_with(n, 5, &mut rng);
        in_place_and_unaligned(&gpu, &x, &heads, &last);
    }

    // Empty inputs: every form succeeds and writes nothing.
    let empty = DeviceBuffer::<i64>::zeros(&gpu, 0).unwrap();
    let no_flags = DeviceBuffer::<u8>::zeros(&gpu, 0).unwrap();
    let no_keys = DeviceBuffer::<u32>::zeros(&gpu, 0).unwrap();
    let zero = DeviceBuffer::from_host(&gpu, &[0u64]).unwrap();
    let inclusive = SegmentedKind::Inclusive;
    assert!(
        scan::segmented_scan(&gpu, empty.view(), no_flags.view(), &Sum, inclusive)
            .unwrap()
            .is_empty()
    );
    assert!(
        scan::segmented_scan_by_offsets(&gpu, empty.view(), zero.view(), &Sum, inclusive)
            .unwrap()
            .is_empty()
    );
    assert!(
        scan::scan_by_key(&gpu, no_keys.view(), empty.view(), &Sum, inclusive)
            .unwrap()
            .is_empty()
    );

    // The two widths alternating on one stream.
    for round in 0..3 {
        for n in [WIDE_TILE + 1, 50 * WIDE_TILE + 3] {
            let heads = heads_with(n, 3, &mut rng);
            let narrow: Vec<i32> = random_vec(n, rng.next_u64(), -1000.0, 1000.0);
            let wide: Vec<i64> = narrow.iter().map(|&v| (v as i64) << 24).collect();
            check(&gpu, &wide, &heads, &Sum, &format!("round {round} i64"));
            check(&gpu, &narrow, &heads, &Sum, &format!("round {round} i32"));
        }
    }
}

/// Associative, not commutative: the last non-zero value of the segment so
/// far.
#[test]
#[ignore = "needs a CUDA GPU"]
fn non_commutative_operator_in_place_and_unaligned() {
    let gpu = Gpu::new(0).unwrap();
    let mut rng = SplitMix64::new(seed());
    let last = CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .unwrap();
    for n in [5usize, TILE + 3, 300_001] {
        let x: Vec<i32> = (0..n)
            .map(|_| {
                if rng.below(20) == 0 {
                    rng.below(100) as i32 + 1
                } else {
                    0
                }
            })
            .collect();
        let heads = heads_with(n, 5, &mut rng);
        check(&gpu, &x, &heads, &last, "last_nonzero");
        in_place_and_unaligned(&gpu, &x, &heads, &Sum);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_write_nothing() {
    let gpu = Gpu::new(0).unwrap();
    let input = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4]).unwrap();
    let flags = DeviceBuffer::from_host(&gpu, &[1u8, 0, 0]).unwrap();
    let mut out = DeviceBuffer::<i32>::filled(&gpu, 4, 77).unwrap();
    let short = scan::segmented_scan_into(
        &gpu,
        input.view(),
        flags.view(),
        out.view_mut(),
        &Sum,
        SegmentedKind::Inclusive,
    );
    assert!(matches!(short, Err(Error::LengthMismatch { .. })));
    assert_eq!(out.to_host(&gpu).unwrap(), vec![77; 4]);
    let narrow = DeviceBuffer::from_host(&gpu, &[1i16, 2]).unwrap();
    let two = DeviceBuffer::from_host(&gpu, &[1u8, 0]).unwrap();
    assert!(matches!(
        scan::segmented_scan(
            &gpu,
            narrow.view(),
            two.view(),
            &Sum,
            SegmentedKind::Inclusive
        ),
        Err(Error::Unsupported(_))
    ));
    // n = 0 writes nothing and succeeds.
    let empty = DeviceBuffer::<i32>::zeros(&gpu, 0).unwrap();
    let no_flags = DeviceBuffer::<u8>::zeros(&gpu, 0).unwrap();
    assert_eq!(
        scan::segmented_scan(
            &gpu,
            empty.view(),
            no_flags.view(),
            &Sum,
            SegmentedKind::Exclusive
        )
        .unwrap()
        .len(),
        0
    );
}
