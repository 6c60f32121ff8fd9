//! CPU-only checks of the public API (run in CI): the serial reference
//! against the definition, in-place against out-of-place, validation and
//! bytes_moved. No GPU needed.

use gpu_core::{CustomOp, Error, Max, Operator, Sum};
use proptest::prelude::*;
use scan::{bytes_moved, cpu, kind_bytes_moved, validate, ScanAlgorithm, ScanKind, ScanOptions};

mod scan_support;
use scan_support::affine_op;

/// out[i] straight from the definition, O(n²).
fn by_definition<T: gpu_core::Element, O: Operator<T>>(
    x: &[T],
    op: &O,
    kind: ScanKind<T>,
) -> Vec<T> {
    (0..x.len())
        .map(|i| match kind {
            ScanKind::Inclusive => x[1..=i].iter().fold(x[0], |acc, &v| op.combine(acc, v)),
            ScanKind::InclusiveFrom { initial } => {
                x[..=i].iter().fold(initial, |acc, &v| op.combine(acc, v))
            }
            ScanKind::Exclusive { initial } => {
                x[..i].iter().fold(initial, |acc, &v| op.combine(acc, v))
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn reference_matches_the_definition(x in proptest::collection::vec(any::<i32>(), 0..200), initial in any::<i32>()) {
        for kind in [
            ScanKind::Inclusive,
            ScanKind::Exclusive { initial },
            ScanKind::InclusiveFrom { initial },
        ] {
            prop_assert_eq!(cpu::scan(&x, &Sum, kind), by_definition(&x, &Sum, kind));
            prop_assert_eq!(cpu::scan(&x, &Max, kind), by_definition(&x, &Max, kind));
            let mut data = x.clone();
            cpu::scan_in_place(&mut data, &Sum, kind);
            prop_assert_eq!(data, cpu::scan(&x, &Sum, kind));
        }
    }

    #[test]
    fn non_commutative_operators_keep_order(x in proptest::collection::vec(any::<u32>(), 0..100)) {
        // (a, b) ↦ a: the inclusive scan repeats x[0].
        let first = CustomOp::<u32>::new("first", "a", 0, |a, _| a).unwrap();
        let got = cpu::inclusive(&x, &first);
        prop_assert!(got.iter().all(|&v| v == x[0]));
        // Seeded: the seed is the leftmost operand of every output.
        let got = cpu::scan(&x, &first, ScanKind::InclusiveFrom { initial: 7 });
        prop_assert!(got.iter().all(|&v| v == 7));
    }

    #[test]
    fn inclusive_from_is_the_exclusive_scan_one_place_on(
        x in proptest::collection::vec(any::<u32>(), 0..200),
        initial in any::<u32>(),
    ) {
        // initial ⊕ x[0] ⊕ … ⊕ x[i] is the exclusive scan of x ++ [0] from
        // initial at i + 1, for any associative operator; the affine maps
        // are not commutative.
        let affine = affine_op();
        let mut padded = x.clone();
        padded.push(0);
        let kind = ScanKind::InclusiveFrom { initial };
        let exclusive = ScanKind::Exclusive { initial };
        prop_assert_eq!(&cpu::scan(&x, &Sum, kind)[..], &cpu::scan(&padded, &Sum, exclusive)[1..]);
        prop_assert_eq!(&cpu::scan(&x, &affine, kind)[..], &cpu::scan(&padded, &affine, exclusive)[1..]);
        prop_assert_eq!(cpu::scan(&x, &affine, kind), by_definition(&x, &affine, kind));
    }

    #[test]
    fn inclusive_from_identity_is_inclusive(x in proptest::collection::vec(any::<i64>(), 0..200)) {
        prop_assert_eq!(
            cpu::scan(&x, &Max, ScanKind::InclusiveFrom { initial: i64::MIN }),
            cpu::inclusive(&x, &Max)
        );
        prop_assert_eq!(
            cpu::scan(&x, &Sum, ScanKind::InclusiveFrom { initial: 0 }),
            cpu::inclusive(&x, &Sum)
        );
    }

    #[test]
    fn inclusive_from_narrow_types_match_the_definition(
        x in proptest::collection::vec(any::<i8>(), 0..200),
        initial in any::<i8>(),
    ) {
        let kind = ScanKind::InclusiveFrom { initial };
        prop_assert_eq!(cpu::scan(&x, &Sum, kind), by_definition(&x, &Sum, kind));
        let mut data = x.clone();
        cpu::scan_in_place(&mut data, &Sum, kind);
        prop_assert_eq!(data, cpu::scan(&x, &Sum, kind));
    }
}

#[test]
fn shorthands_use_the_identity() {
    assert_eq!(cpu::exclusive(&[2u64, 3], &Sum), vec![0, 2]);
    assert_eq!(cpu::exclusive(&[2i32, 3], &Max), vec![i32::MIN, 2]);
    assert_eq!(cpu::inclusive(&[2.0f64, 3.0], &Sum), vec![2.0, 5.0]);
}

#[test]
fn validation_is_pure_and_typed() {
    let options = ScanOptions::new(ScanAlgorithm::Blelloch).with_block_threads(100);
    assert!(matches!(
        validate(8, 8, &options),
        Err(Error::InvalidArgument {
            name: "block_threads",
            ..
        })
    ));
    assert!(matches!(
        validate(8, 7, &ScanOptions::default()),
        Err(Error::LengthMismatch { .. })
    ));
    // Lengths past 2^32 are fine on the host side.
    assert!(validate((1 << 33) + 5, (1 << 33) + 5, &ScanOptions::default()).is_ok());
}

#[test]
fn seeded_kinds_move_the_same_bytes_but_for_the_global_hillis_steele() {
    let n = 1_000_003u64;
    for a in ScanAlgorithm::ALL {
        let plain = bytes_moved(a, n, 8, 256);
        for kind in [
            ScanKind::InclusiveFrom { initial: 3u64 },
            ScanKind::Exclusive { initial: 3u64 },
        ] {
            let seeded = kind_bytes_moved(a, kind, n, 256);
            let extra = if a == ScanAlgorithm::HillisSteeleGlobal {
                2 * 8 * n
            } else {
                0
            };
            assert_eq!(seeded, plain + extra, "{a} {kind:?}");
        }
        assert_eq!(
            kind_bytes_moved(a, ScanKind::<u64>::Inclusive, n, 256),
            plain
        );
    }
}

#[test]
fn bytes_moved_orders_the_algorithms() {
    let n = 123_123_123u64;
    let bytes = |a| bytes_moved(a, n, 4, 512);
    assert!(bytes(ScanAlgorithm::DecoupledLookback) < bytes(ScanAlgorithm::ReduceThenScan));
    assert!(bytes(ScanAlgorithm::ReduceThenScan) < bytes(ScanAlgorithm::Blelloch));
    assert_eq!(
        bytes(ScanAlgorithm::Blelloch),
        bytes(ScanAlgorithm::BlellochPadded)
    );
    // Hillis–Steele and Blelloch both take four elements per thread: the
    // same tiles, the same ≈ 16n bytes.
    assert_eq!(
        bytes(ScanAlgorithm::HillisSteele),
        bytes(ScanAlgorithm::Blelloch)
    );
    assert!(bytes(ScanAlgorithm::HillisSteele) > 16 * n);
    assert!(bytes(ScanAlgorithm::HillisSteele) < bytes(ScanAlgorithm::HillisSteeleGlobal));
    // Element size scales the data traffic linearly (the look-back kernels'
    // tile state adds a little that depends on the element size).
    for a in ScanAlgorithm::ALL {
        let (four, eight) = (
            bytes_moved(a, 1 << 20, 4, 256),
            bytes_moved(a, 1 << 20, 8, 256),
        );
        if a.takes_block_threads() {
            assert_eq!(eight, 2 * four, "{a}");
        } else {
            let ratio = eight as f64 / four as f64;
            assert!((1.95..2.05).contains(&ratio), "{a}: {ratio}");
        }
    }
}
