//! CPU tests of the sort crate: the radix images (total order of every key
//! type, floats against `total_cmp` with every NaN last), the CPU
//! references, option validation and the launch geometry.

use std::cmp::Ordering;

use proptest::prelude::*;
use sort::key::{PayloadWidth, SortKey};
use sort::modules::{
    block_sort_shared_bytes, cluster_sort_shared_bytes, cluster_sort_takes, digit_passes,
    BLOCK_SORT_MAX_KEYS, CLUSTER_SORT_BLOCKS, CLUSTER_SORT_MAX_KEYS,
};
use sort::onesweep::{pass_geometry, pass_target};
use sort::policy::OnesweepPolicy;
use sort::{cpu, Order, SortOptions};

/// `total_cmp` with every NaN (either sign) equal and after everything.
fn reference_cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

fn reference_cmp_f32(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

fn special_f32() -> Vec<f32> {
    vec![
        f32::NEG_INFINITY,
        f32::MIN,
        -1.0,
        -f32::MIN_POSITIVE,
        -1e-45,
        -0.0,
        0.0,
        1e-45,
        f32::MIN_POSITIVE,
        1.0,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_dead),
    ]
}

#[test]
fn float_images_follow_total_order_with_nan_last() {
    let specials = special_f32();
    for &a in &specials {
        for &b in &specials {
            assert_eq!(
                a.to_radix().cmp(&b.to_radix()),
                reference_cmp_f32(a, b),
                "{a:?} vs {b:?}"
            );
            let (a, b) = (a as f64, b as f64);
            assert_eq!(
                a.to_radix().cmp(&b.to_radix()),
                reference_cmp_f64(a, b),
                "{a:?} vs {b:?}"
            );
        }
    }
    assert_eq!(f32::NAN.to_radix(), u32::MAX);
    assert_eq!((-f64::NAN).to_radix(), u64::MAX);
    assert!((-0.0f32).to_radix() < 0.0f32.to_radix());
    assert!(f32::INFINITY.to_radix() < f32::NAN.to_radix());
    // Descending: the complement, NaN first.
    assert!(f32::NAN.ordered_radix(true) < f32::INFINITY.ordered_radix(true));
}

#[test]
fn integer_images_follow_the_natural_order() {
    let ints = [i8::MIN, -100, -1, 0, 1, 100, i8::MAX];
    for &a in &ints {
        for &b in &ints {
            assert_eq!(a.to_radix().cmp(&b.to_radix()), a.cmp(&b));
        }
    }
    assert_eq!(i32::MIN.to_radix(), 0);
    assert_eq!(i32::MAX.to_radix(), u32::MAX);
    assert_eq!(i64::MIN.to_radix(), 0);
    assert_eq!(7u16.to_radix(), 7);
    assert_eq!(<i16 as SortKey>::KEY_BITS, 16);
    assert_eq!(<f64 as SortKey>::KEY_BITS, 64);
    assert_eq!(<u8 as SortKey>::KEY_BITS, 8);
}

proptest! {
    #[test]
    fn f32_images_order_as_total_cmp(a in any::<u32>(), b in any::<u32>()) {
        let (a, b) = (f32::from_bits(a), f32::from_bits(b));
        prop_assert_eq!(a.to_radix().cmp(&b.to_radix()), reference_cmp_f32(a, b));
    }

    #[test]
    fn f64_images_order_as_total_cmp(a in any::<u64>(), b in any::<u64>()) {
        let (a, b) = (f64::from_bits(a), f64::from_bits(b));
        prop_assert_eq!(a.to_radix().cmp(&b.to_radix()), reference_cmp_f64(a, b));
    }

    #[test]
    fn signed_images_order_as_the_integers(a in any::<i64>(), b in any::<i64>(), c in any::<i16>(), d in any::<i16>()) {
        prop_assert_eq!(a.to_radix().cmp(&b.to_radix()), a.cmp(&b));
        prop_assert_eq!(c.to_radix().cmp(&d.to_radix()), c.cmp(&d));
        prop_assert_eq!((a as i32).to_radix().cmp(&(b as i32).to_radix()), (a as i32).cmp(&(b as i32)));
    }

    #[test]
    fn cpu_sort_is_sorted_stable_and_a_permutation(
        keys in prop::collection::vec(0u32..16, 0..300),
        descending in any::<bool>(),
    ) {
        let values: Vec<usize> = (0..keys.len()).collect();
        let (k, v) = cpu::sort_pairs(&keys, &values, descending, &(0..32));
        for i in 1..k.len() {
            let (a, b) = (k[i - 1], k[i]);
            if descending { prop_assert!(a >= b) } else { prop_assert!(a <= b) }
            if a == b { prop_assert!(v[i - 1] < v[i], "stable") }
        }
        for (i, &j) in v.iter().enumerate() {
            prop_assert_eq!(k[i], keys[j]);
        }
    }

    #[test]
    fn cpu_sorts_follow_the_stable_order_of_sort_values(
        picks in prop::collection::vec((any::<bool>(), any::<u32>()), 0..300),
        start in 0u32..32,
        width in 1u32..33,
        descending in any::<bool>(),
    ) {
        // Special floats (NaN payloads, both zeros, infinities) and random
        // bit patterns, ordered by a bit range that makes many keys equal.
        let specials = special_f32();
        let keys: Vec<f32> = picks
            .iter()
            .map(|&(special, x)| if special { specials[x as usize % specials.len()] } else { f32::from_bits(x) })
            .collect();
        let range = start..(start + width).min(32);
        // The definition: indices stably sorted by their keys' sort values.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| cpu::sort_value(keys[i], descending, &range));
        prop_assert_eq!(&cpu::argsort(&keys, descending, &range), &order);
        let bits_of = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        let gathered: Vec<f32> = order.iter().map(|&i| keys[i]).collect();
        prop_assert_eq!(bits_of(&cpu::sort_keys(&keys, descending, &range)), bits_of(&gathered));
        let values: Vec<usize> = (0..keys.len()).collect();
        let (k, v) = cpu::sort_pairs(&keys, &values, descending, &range);
        prop_assert_eq!(bits_of(&k), bits_of(&gathered));
        prop_assert_eq!(v, order);
    }

    #[test]
    fn cpu_top_k_is_the_head_of_the_sort(
        keys in prop::collection::vec(any::<i16>(), 0..200),
        k in 0usize..200,
        largest in any::<bool>(),
    ) {
        let k = k.min(keys.len());
        let (values, indices) = cpu::top_k(&keys, k, largest);
        let order = cpu::argsort(&keys, largest, &cpu::full_bits::<i16>());
        prop_assert_eq!(indices, order[..k].iter().map(|&i| i as u64).collect::<Vec<_>>());
        prop_assert_eq!(values, order[..k].iter().map(|&i| keys[i]).collect::<Vec<_>>());
    }
}

#[test]
fn narrow_bit_ranges_compare_only_those_bits() {
    let keys = [0x1f_u32, 0x13, 0x2f, 0x00];
    // Bits 4..8: 1, 1, 2, 0 → stable order 3, 0, 1, 2.
    assert_eq!(cpu::argsort(&keys, false, &(4..8)), vec![3, 0, 1, 2]);
    assert_eq!(cpu::argsort(&keys, true, &(4..8)), vec![2, 0, 1, 3]);
    assert_eq!(cpu::sort_value(u64::MAX, false, &(0..64)), u64::MAX);
    assert_eq!(cpu::sort_value(0xabu8, true, &(0..8)), 0x54);
}

#[test]
#[allow(clippy::reversed_empty_ranges)] // reversed ranges are the bad input
fn bit_ranges_are_validated() {
    assert_eq!(SortOptions::default().bit_range::<u8>().unwrap(), 0..8);
    assert_eq!(SortOptions::default().bit_range::<f64>().unwrap(), 0..64);
    assert_eq!(
        SortOptions::from(Order::Descending)
            .with_bits(5..9)
            .bit_range::<u16>()
            .unwrap(),
        5..9
    );
    for bad in [0..0, 4..4, 9..3, 0..33, 32..40] {
        let err = SortOptions::default()
            .with_bits(bad.clone())
            .bit_range::<u32>();
        assert!(
            matches!(
                err,
                Err(gpu_core::Error::InvalidArgument { name: "bits", .. })
            ),
            "{bad:?}"
        );
    }
    assert!(SortOptions::default()
        .with_bits(0..9)
        .bit_range::<i8>()
        .is_err());
}

#[test]
fn payload_widths() {
    for (bytes, width) in [
        (1, PayloadWidth::B1),
        (2, PayloadWidth::B2),
        (4, PayloadWidth::B4),
        (8, PayloadWidth::B8),
    ] {
        assert_eq!(PayloadWidth::of_bytes(bytes).unwrap(), width);
        assert_eq!(width.bytes(), bytes);
    }
    for bytes in [0, 3, 12, 16] {
        assert!(matches!(
            PayloadWidth::of_bytes(bytes),
            Err(gpu_core::Error::Unsupported(_))
        ));
    }
}

#[test]
fn geometry() {
    assert_eq!(digit_passes(0, 8), 1);
    assert_eq!(digit_passes(0, 64), 8);
    assert_eq!(digit_passes(7, 9), 1);
    assert_eq!(digit_passes(0, 1), 1);
    let tile = OnesweepPolicy::DEFAULT.tile();
    let portion = OnesweepPolicy::DEFAULT.portion_keys();
    assert_eq!(tile, 4096);
    assert_eq!(portion % tile, 0);
    assert!(portion < 1 << 30, "look-back counts are 30 bits");
    assert_eq!(pass_geometry(1), (1, 1));
    assert_eq!(pass_geometry(tile + 1), (1, 2));
    assert_eq!(pass_geometry(3 * portion + 5), (4, 3 * portion / tile + 1));
    // Every pass alternates, the last on the final target.
    for passes in 1..=8 {
        for last in 0..2 {
            assert_eq!(pass_target(passes - 1, passes, last), last);
            for p in 1..passes {
                assert_ne!(
                    pass_target(p, passes, last),
                    pass_target(p - 1, passes, last)
                );
            }
        }
    }
    // The one-block sort fits the H100's 227 KiB of shared memory per block
    // for every key and value width, each block of the one-cluster sort for
    // every pair it takes; the cluster is one an H100 can run (at most 16
    // blocks).
    assert!(block_sort_shared_bytes(8, 8) <= 227 * 1024);
    assert_eq!(BLOCK_SORT_MAX_KEYS, 8192);
    const { assert!(CLUSTER_SORT_BLOCKS <= 16) };
    assert_eq!(CLUSTER_SORT_MAX_KEYS, 1 << 16);
    for (k, v) in [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4)] {
        assert!(cluster_sort_takes(k, v), "{k} + {v}");
        assert!(cluster_sort_shared_bytes(k, v) <= 227 * 1024, "{k} + {v}");
    }
    assert_eq!(sort::bytes_moved(10, 8, 4, 8), 80 + 8 * 2 * 10 * 12);
}
