//! CPU-only checks of the public API (run in CI): the serial reference
//! against the definition, in-place against out-of-place, validation and
//! bytes_moved. No GPU needed.

use gpu_core::{CustomOp, Error, Max, Operator, Sum};
use proptest::prelude::*;
use scan::{bytes_moved, cpu, validate, ScanAlgorithm, ScanKind, ScanOptions};

/// out[i] straight from the definition, O(n²).
fn by_definition<T: gpu_core::Element, O: Operator<T>>(
    x: &[T],
    op: &O,
    kind: ScanKind<T>,
) -> Vec<T> {
    (0..x.len())
        .map(|i| match kind {
            ScanKind::Inclusive => x[1..=i].iter().fold(x[0], |acc, &v| op.combine(acc, v)),
            ScanKind::Exclusive { initial } => {
                x[..i].iter().fold(initial, |acc, &v| op.combine(acc, v))
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn reference_matches_the_definition(x in proptest::collection::vec(any::<i32>(), 0..200), initial in any::<i32>()) {
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial }] {
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
fn bytes_moved_orders_the_algorithms() {
    let n = 123_123_123u64;
    let bytes = |a| bytes_moved(a, n, 4, 512);
    assert!(bytes(ScanAlgorithm::DecoupledLookback) < bytes(ScanAlgorithm::ReduceThenScan));
    assert!(bytes(ScanAlgorithm::ReduceThenScan) < bytes(ScanAlgorithm::Blelloch));
    assert_eq!(
        bytes(ScanAlgorithm::Blelloch),
        bytes(ScanAlgorithm::BlellochPadded)
    );
    // Hillis–Steele's tile is twice Blelloch's (four elements per thread),
    // so it writes half as many tile totals: the same ≈ 16n bytes, a
    // little less.
    let (hillis_steele, blelloch) = (
        bytes(ScanAlgorithm::HillisSteele),
        bytes(ScanAlgorithm::Blelloch),
    );
    assert!(hillis_steele < blelloch);
    assert!(blelloch - hillis_steele < blelloch / 1000);
    assert!(hillis_steele > 16 * n);
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
