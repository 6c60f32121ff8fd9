//! Allocation by scan (`expand_into`, `expand_alloc`): CPU property tests of
//! the reference, argument checks, and GPU tests against the reference:
//! random counts with zeros, all zeros, one huge count among small ones,
//! long stretches of zero counts, n = 0 and 1, an output shorter or longer
//! than the total, bad arguments (typed error, nothing written).
//!
//! GPU tests: `cargo test -p parprims-compact --test expand -- --include-ignored`.

mod support;

use compact::cpu_by_key as cpu;
use gpu_core::{DeviceBuffer, Element, Error, Gpu};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use support::bits;

proptest! {
    #[test]
    fn reference_offsets_scan_the_counts_and_outputs_follow_them(counts in prop::collection::vec(0u32..6, 0..200)) {
        let values: Vec<i32> = (0..counts.len() as i32).collect();
        let (offsets, total, out) = cpu::expand(&values, &counts).unwrap();
        prop_assert_eq!(total as usize, out.len());
        prop_assert_eq!(total, counts.iter().map(|&c| u64::from(c)).sum::<u64>());
        for (i, &c) in counts.iter().enumerate() {
            let start = offsets[i] as usize;
            prop_assert!(out[start..start + c as usize].iter().all(|&x| x == values[i]));
            if i + 1 < counts.len() {
                prop_assert_eq!(offsets[i + 1], offsets[i] + u64::from(c));
            }
        }
    }
}

#[test]
fn argument_checks() {
    assert!(compact::validate_expand(0, 0, 0, 1).is_ok());
    assert!(matches!(
        compact::validate_expand(3, 2, 3, 1),
        Err(Error::LengthMismatch { what: "counts", .. })
    ));
    assert!(cpu::expand(&[1, 2], &[1]).is_err());
}

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// Both forms against the reference.
fn check<T: Element>(gpu: &Gpu, values: &[T], counts: &[u32], ctx: &str) {
    let n = values.len();
    let (want_offsets, want_total, want) = cpu::expand(values, counts).unwrap();
    let v = DeviceBuffer::from_host(gpu, values).unwrap();
    let c = DeviceBuffer::from_host(gpu, counts).unwrap();
    let mut offsets = DeviceBuffer::<u64>::poisoned(gpu, n).unwrap();
    let out = compact::expand_alloc(gpu, v.view(), c.view(), offsets.view_mut())
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(
        offsets.to_host(gpu).unwrap(),
        want_offsets,
        "{ctx}: offsets"
    );
    assert_eq!(out.len() as u64, want_total, "{ctx}: total");
    assert_eq!(
        bits(&out.to_host(gpu).unwrap()),
        bits(&want),
        "{ctx}: expansion"
    );

    // _into with room for 3 more: the tail untouched, the total on the device.
    let total = want_total as usize;
    let mut offsets = DeviceBuffer::<u64>::poisoned(gpu, n).unwrap();
    let mut total_out = DeviceBuffer::<u64>::filled(gpu, 1, 4242).unwrap();
    let mut out = DeviceBuffer::<T>::poisoned(gpu, total + 3).unwrap();
    compact::expand_into(
        gpu,
        v.view(),
        c.view(),
        offsets.view_mut(),
        out.view_mut(),
        total_out.view_mut(),
    )
    .unwrap();
    assert_eq!(
        total_out.to_host(gpu).unwrap(),
        [want_total],
        "{ctx}: total_out"
    );
    assert_eq!(
        offsets.to_host(gpu).unwrap(),
        want_offsets,
        "{ctx}: offsets (_into)"
    );
    let host = out.to_host(gpu).unwrap();
    assert_eq!(
        bits(&host[..total]),
        bits(&want),
        "{ctx}: expansion (_into)"
    );
    assert_eq!(
        bits(&host[total..]),
        bits(&[T::poison(); 3]),
        "{ctx}: past the total"
    );

    // _into with an output shorter than the total: a prefix, nothing past it.
    if total > 1 {
        let short = total / 2;
        let mut out = DeviceBuffer::<T>::poisoned(gpu, short).unwrap();
        compact::expand_into(
            gpu,
            v.view(),
            c.view(),
            offsets.view_mut(),
            out.view_mut(),
            total_out.view_mut(),
        )
        .unwrap();
        assert_eq!(
            bits(&out.to_host(gpu).unwrap()),
            bits(&want[..short]),
            "{ctx}: prefix"
        );
        assert_eq!(
            total_out.to_host(gpu).unwrap(),
            [want_total],
            "{ctx}: total (short out)"
        );
    }
}

fn random_counts(n: usize, max: u32, zero_fraction: f64, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            if rng.next_f64() < zero_fraction {
                0
            } else {
                rng.below(u64::from(max) + 1) as u32
            }
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_expand_matches_the_reference() {
    let gpu = gpu();
    let seed = 0xe_c0u64;
    let big = parprims_testkit::testing::scaled(1usize << 20, 1 << 16);
    for n in [0usize, 1, 2, 31, 255, 2049, 4097, big + 7] {
        let values_i32: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(7919)).collect();
        let values_f64: Vec<f64> = (0..n).map(|i| i as f64 + 0.25).collect();
        let values_u8: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        for (name, counts) in [
            ("0..=3", random_counts(n, 3, 0.0, seed ^ n as u64)),
            ("half zeros", random_counts(n, 5, 0.5, seed ^ 1)),
            ("99% zeros", random_counts(n, 40, 0.99, seed ^ 2)),
            ("all zeros", vec![0; n]),
            ("all ones", vec![1; n]),
            ("0..=2000", random_counts(n.min(4097), 2000, 0.1, seed ^ 3)),
        ] {
            let counts = &counts[..counts.len().min(n)];
            let m = counts.len();
            let ctx = format!("n={m} {name}");
            check(&gpu, &values_i32[..m], counts, &format!("{ctx} i32"));
            check(&gpu, &values_f64[..m], counts, &format!("{ctx} f64"));
            check(&gpu, &values_u8[..m], counts, &format!("{ctx} u8"));
        }
    }
}

/// One huge count among small ones, at the start, middle and end, and
/// zeros all around it: the huge element's outputs span many blocks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_huge_count_and_stretches_of_zeros() {
    let gpu = gpu();
    let huge = parprims_testkit::testing::scaled(3_000_017u32, 300_017);
    let n = 10_000;
    let values: Vec<u32> = (0..n as u32).collect();
    for at in [0, n / 2, n - 1] {
        let mut counts = random_counts(n, 2, 0.3, at as u64);
        counts[at] = huge;
        check(&gpu, &values, &counts, &format!("huge at {at}"));
        let mut zeros = vec![0u32; n];
        zeros[at] = huge;
        check(
            &gpu,
            &values,
            &zeros,
            &format!("huge at {at}, zeros elsewhere"),
        );
    }
    // Long stretches of zeros between single outputs.
    let mut counts = vec![0u32; 1 << 18];
    for i in (0..counts.len()).step_by(50_001) {
        counts[i] = 3;
    }
    let values: Vec<u32> = (0..counts.len() as u32).collect();
    check(&gpu, &values, &counts, "sparse ones");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_write_nothing() {
    let gpu = gpu();
    let values = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3]).unwrap();
    let counts = DeviceBuffer::from_host(&gpu, &[1u32, 2]).unwrap();
    let mut offsets = DeviceBuffer::<u64>::filled(&gpu, 3, 77).unwrap();
    let mut out = DeviceBuffer::<i32>::filled(&gpu, 8, 77).unwrap();
    let mut total = DeviceBuffer::<u64>::filled(&gpu, 1, 77).unwrap();
    assert!(matches!(
        compact::expand_into(
            &gpu,
            values.view(),
            counts.view(),
            offsets.view_mut(),
            out.view_mut(),
            total.view_mut()
        ),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(compact::expand_alloc(&gpu, values.view(), counts.view(), offsets.view_mut()).is_err());
    let counts = DeviceBuffer::from_host(&gpu, &[1u32, 2, 3]).unwrap();
    let mut two = DeviceBuffer::<u64>::filled(&gpu, 2, 77).unwrap();
    assert!(compact::expand_into(
        &gpu,
        values.view(),
        counts.view(),
        offsets.view_mut(),
        out.view_mut(),
        two.view_mut()
    )
    .is_err());
    assert_eq!(offsets.to_host(&gpu).unwrap(), [77; 3]);
    assert_eq!(out.to_host(&gpu).unwrap(), [77; 8]);
    assert_eq!(total.to_host(&gpu).unwrap(), [77]);
    assert_eq!(two.to_host(&gpu).unwrap(), [77; 2]);
}
