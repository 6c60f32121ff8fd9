//! CPU-only tests (run in CI): the references agree with each other and
//! with the definitions, argument validation, byte counts, tuning.

use compact::policy::default_policy;
use compact::{cpu, CompactAlgorithm, CustomPredicate, Predicate};
use gpu_core::Error;
use proptest::prelude::*;

fn arbitrary_predicate() -> impl Strategy<Value = Predicate<i32>> {
    prop_oneof![
        Just(Predicate::NonZero),
        (-50i32..50).prop_map(Predicate::Eq),
        (-50i32..50).prop_map(Predicate::Ne),
        (-50i32..50).prop_map(Predicate::Lt),
        (-50i32..50).prop_map(Predicate::Le),
        (-50i32..50).prop_map(Predicate::Gt),
        (-50i32..50).prop_map(Predicate::Ge),
        (-50i32..50, -50i32..50).prop_map(|(low, high)| Predicate::InRange { low, high }),
    ]
}

proptest! {
    #[test]
    fn filter_and_map_scan_scatter_agree(
        input in proptest::collection::vec(-50i32..50, 0..300),
        predicate in arbitrary_predicate(),
    ) {
        let filtered = cpu::select_if(&input, &predicate);
        prop_assert_eq!(&cpu::map_scan_scatter(&input, &predicate), &filtered);
        prop_assert_eq!(cpu::count_if(&input, &predicate), filtered.len());
        // Order preserved: the kept items are a subsequence of the input.
        let mut rest = input.iter();
        for x in &filtered {
            prop_assert!(rest.any(|y| y == x));
        }
    }

    #[test]
    fn flagged_references_agree(
        pairs in proptest::collection::vec((any::<u64>(), any::<u8>()), 0..300),
    ) {
        let (input, flags): (Vec<u64>, Vec<u8>) = pairs.into_iter().unzip();
        let straight = cpu::select_flagged(&input, &flags).unwrap();
        let three = cpu::map_scan_scatter_flagged(&input, &flags).unwrap();
        prop_assert_eq!(&straight, &three);
        prop_assert_eq!(straight.len(), flags.iter().filter(|&&f| f != 0).count());
    }

    #[test]
    fn partition_is_a_stable_permutation(
        input in proptest::collection::vec(-50i32..50, 0..300),
        predicate in arbitrary_predicate(),
    ) {
        let (out, count) = cpu::partition(&input, &predicate);
        prop_assert_eq!(out.len(), input.len());
        prop_assert_eq!(count, cpu::count_if(&input, &predicate));
        prop_assert!(out[..count].iter().all(|&x| predicate.evaluate(x)));
        prop_assert!(out[count..].iter().all(|&x| !predicate.evaluate(x)));
        // Both halves in input order.
        let kept: Vec<i32> = input.iter().copied().filter(|&x| predicate.evaluate(x)).collect();
        let rejected: Vec<i32> = input.iter().copied().filter(|&x| !predicate.evaluate(x)).collect();
        prop_assert_eq!(&out[..count], &kept[..]);
        prop_assert_eq!(&out[count..], &rejected[..]);
    }
}

#[test]
fn any_nonzero_byte_selects() {
    let input = [10u32, 20, 30, 40, 50];
    let flags = [0u8, 1, 255, 0, 128];
    assert_eq!(
        cpu::select_flagged(&input, &flags).unwrap(),
        vec![20, 30, 50]
    );
    assert!(matches!(
        cpu::select_flagged(&input, &flags[..4]),
        Err(Error::LengthMismatch { .. })
    ));
}

#[test]
fn partition_keeps_rejected_in_input_order_unlike_cub() {
    let input = [5, 1, 6, 2, 7, 3];
    let (out, count) = cpu::partition(&input, &Predicate::Ge(5));
    assert_eq!(count, 3);
    assert_eq!(out, vec![5, 6, 7, 1, 2, 3]); // CUB would give 5 6 7 3 2 1
}

#[test]
fn nan_inputs_on_the_cpu() {
    let input = [1.0f64, f64::NAN, -1.0, 0.0, -0.0];
    assert_eq!(cpu::count_if(&input, &Predicate::Lt(5.0)), 4);
    assert_eq!(cpu::count_if(&input, &Predicate::Ne(1.0)), 4);
    assert_eq!(cpu::count_if(&input, &Predicate::NonZero), 3);
    let custom =
        Predicate::Custom(CustomPredicate::new("is_nan", "isnan(x)", |x: f64| x.is_nan()).unwrap());
    assert_eq!(cpu::select_if(&input, &custom).len(), 1);
}

#[test]
fn empty_inputs() {
    let empty: [f32; 0] = [];
    assert!(cpu::select_if(&empty, &Predicate::NonZero).is_empty());
    assert!(cpu::map_scan_scatter(&empty, &Predicate::NonZero).is_empty());
    assert_eq!(cpu::partition(&empty, &Predicate::NonZero), (vec![], 0));
}

#[test]
fn validation_without_a_gpu() {
    use compact::validate::{validate_partition_into, validate_select_into};
    // Flags shorter than the input.
    assert!(matches!(
        validate_select_into(
            (0x1000, 10, 4),
            Some((0x2000, 9)),
            (0x3000, 10, 4),
            (0x4000, 1)
        ),
        Err(Error::LengthMismatch { what: "flags", .. })
    ));
    // Output shorter than the input.
    assert!(matches!(
        validate_select_into((0x1000, 10, 4), None, (0x3000, 9, 4), (0x4000, 1)),
        Err(Error::InvalidArgument { name: "output", .. })
    ));
    // count_out of two elements.
    assert!(matches!(
        validate_partition_into((0x1000, 10, 4), (0x3000, 10, 4), (0x4000, 2)),
        Err(Error::LengthMismatch {
            what: "count_out",
            ..
        })
    ));
    // Output overlapping the input by one element.
    assert!(validate_select_into((0x1000, 10, 4), None, (0x1024, 10, 4), (0x4000, 1)).is_err());
    assert!(validate_select_into((0x1000, 10, 4), None, (0x1028, 10, 4), (0x4000, 1)).is_ok());
    // Empty everything is fine.
    assert!(validate_select_into((0, 0, 4), Some((0, 0)), (0, 0, 4), (0x4000, 1)).is_ok());
}

#[test]
fn bytes_and_tuning() {
    let n = 1usize << 28;
    assert_eq!(compact::bytes_moved(n, n / 2, 4, true), 7 * n as u64);
    assert_eq!(compact::bytes_moved(n, n / 2, 4, false), 6 * n as u64);
    let t = default_policy::<f64>();
    assert_eq!(t.tile_items(), 4096);
    assert_eq!(
        compact::map_scatter_bytes_moved(100, 50, 4, true, false),
        100 + 400 + 400 + 800 + 200
    );
    assert_eq!(
        CompactAlgorithm::all().len(),
        compact::ScanAlgorithm::ALL.len()
    );
}
