//! Segmented reduce without a GPU: the CPU reference against a plain fold
//! per segment, the host checks, and NVRTC compiles of every built-in
//! module and of a custom operator's module for sm_80 and sm_90.

use gpu_core::{CustomOp, Max, Sum};
use parprims_testkit::testing::compile_failures;
use proptest::prelude::*;
use reduce::segmented::{
    kernel_catalog, segmented_reduce_bytes_moved, segmented_reduce_cpu, validate_segmented_reduce,
};

fn offsets_from_lengths(lengths: &[usize]) -> Vec<u64> {
    let mut offsets = vec![0u64];
    for &length in lengths {
        offsets.push(offsets.last().unwrap() + length as u64);
    }
    offsets
}

proptest! {
    #[test]
    fn cpu_reference_folds_each_segment(lengths in prop::collection::vec(0usize..40, 0..30)) {
        let offsets = offsets_from_lengths(&lengths);
        let n = *offsets.last().unwrap() as usize;
        let values: Vec<i64> = (0..n as i64).map(|i| i * 7 - 50).collect();
        let out = segmented_reduce_cpu(&values, &offsets, &Sum).unwrap();
        prop_assert_eq!(out.len(), lengths.len());
        for (s, pair) in offsets.windows(2).enumerate() {
            let expected: i64 = values[pair[0] as usize..pair[1] as usize].iter().sum();
            prop_assert_eq!(out[s], expected);
        }
    }
}

#[test]
fn cpu_reference_keeps_order_for_a_non_commutative_operator() {
    // (a, b) -> 2a + b on u32 (wrapping): associative? No; use the affine
    // composition packed in u64: (m1, c1) then (m2, c2) = (m1·m2, c1·m2 + c2),
    // 32 bits each, modulo 2^32: associative and not commutative.
    let compose = |a: u64, b: u64| {
        let (m1, c1) = ((a >> 32) as u32, a as u32);
        let (m2, c2) = ((b >> 32) as u32, b as u32);
        ((m1.wrapping_mul(m2) as u64) << 32) | (c1.wrapping_mul(m2).wrapping_add(c2) as u64)
    };
    let op = CustomOp::<u64>::new(
        "affine",
        "((u64)((u32)(a >> 32) * (u32)(b >> 32)) << 32) | (u64)((u32)a * (u32)(b >> 32) + (u32)b)",
        1u64 << 32,
        compose,
    )
    .unwrap();
    let values: Vec<u64> = (0..10u64).map(|i| ((i + 2) << 32) | (i * 3 + 1)).collect();
    let out = segmented_reduce_cpu(&values, &[0u32, 4, 4, 10], &op).unwrap();
    let fold = |slice: &[u64]| slice.iter().fold(1u64 << 32, |acc, &v| compose(acc, v));
    assert_eq!(
        out,
        vec![fold(&values[..4]), 1u64 << 32, fold(&values[4..])]
    );
    assert_ne!(compose(values[0], values[1]), compose(values[1], values[0]));
}

#[test]
fn cpu_reference_refuses_broken_offsets() {
    assert!(segmented_reduce_cpu(&[1.0f32, 2.0], &[0u32, 3], &Max).is_err());
    assert!(segmented_reduce_cpu(&[1.0f32, 2.0], &[1u32, 0], &Max).is_err());
    assert!(segmented_reduce_cpu(&[1.0f32, 2.0], &[] as &[u32], &Max).is_err());
    assert_eq!(
        segmented_reduce_cpu(&[1.0f32, 2.0], &[1u32, 1], &Max).unwrap(),
        vec![f32::NEG_INFINITY]
    );
}

#[test]
fn host_checks() {
    assert!(validate_segmented_reduce::<f64>(1, 0).is_ok());
    assert!(validate_segmented_reduce::<f64>(0, 0).is_err());
    assert!(validate_segmented_reduce::<i16>(3, 2).is_err());
    assert_eq!(
        segmented_reduce_bytes_moved(1 << 28, 1 << 18, 4, 4),
        4 * (1 << 28) + 8 * (1 << 18) + 4
    );
}

#[test]
fn every_segmented_module_compiles_for_sm80_and_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let mut modules = kernel_catalog();
    // A custom operator's module too (built on first use, not in the catalog).
    let op = CustomOp::<f32>::new(
        "absmax",
        "fmaxf(fabsf(a), fabsf(b))",
        0.0,
        |a: f32, b: f32| a.abs().max(b.abs()),
    )
    .unwrap();
    modules.push(reduce::segmented::custom_module::<f32, _, u64>(&op));
    let failures = compile_failures(&modules, &["sm_80", "sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
