//! CPU tests of the reductions (run in CI): the references against naive
//! definitions, transforms, and the arguments refused before any device
//! work.

use gpu_core::{bf16, f16, CustomOp, Max, Min, Operator, Product, Sum};
use proptest::prelude::*;
use reduce::{cpu, ReduceAlgorithm, Transform};

#[test]
fn references_on_hand_made_cases() {
    assert_eq!(cpu::reduce(&[i8::MAX, 1], &Sum), i8::MIN); // wraps as the kernels do
    assert_eq!(cpu::reduce(&[16u8, 16], &Product), 0);
    assert_eq!(cpu::reduce::<f32, _>(&[], &Sum), 0.0);
    assert_eq!(cpu::reduce::<f32, _>(&[], &Max), f32::NEG_INFINITY);
    assert_eq!(
        cpu::reduce(&[f16::from_f32(1.5), f16::from_f32(-3.0)], &Min),
        f16::from_f32(-3.0)
    );
    // Ties: the first index; NaN: the first NaN.
    let ties = cpu::argmax(&[1i32, 3, 3, 2, 3]).unwrap();
    assert_eq!((ties.value, ties.index), (3, 1));
    let nan = cpu::argmin(&[1.0f64, f64::NAN, -5.0, f64::NAN]).unwrap();
    assert!(nan.value.is_nan());
    assert_eq!(nan.index, 1);
    assert_eq!(cpu::argmax(&[bf16::from_f32(-1.0)]).unwrap().index, 0);
    assert_eq!(cpu::minmax(&[3u64, 9, 1]), (1, 9));
}

#[test]
fn transforms_check_their_arguments() {
    assert!(Transform::<i32, i32>::new("bad name", "x", |x, _| x).is_err());
    assert!(Transform::<i32, i32>::new("empty", "  ", |x, _| x).is_err());
    assert!(Transform::<i32, u64>::count_if("c", "", |x| x > 0).is_err());
    assert_eq!(Transform::<i16, i16>::abs().apply(i16::MIN, 0), i16::MIN);
    assert_eq!(Transform::<f32, f32>::abs().apply(-0.5, 0), 0.5);
    assert_eq!(Transform::<u8, u8>::square().apply(16, 0), 0);
}

#[test]
fn algorithms_are_named_for_tables() {
    let names: Vec<_> = ReduceAlgorithm::ALL.iter().map(|a| a.name()).collect();
    assert_eq!(names, ["global-tree", "shared-tree", "single-pass"]);
    assert_eq!(ReduceAlgorithm::default(), ReduceAlgorithm::SinglePass);
    assert_eq!(reduce::bytes_moved(10, 2), 20);
}

proptest! {
    #[test]
    fn argmax_is_the_first_largest(values in proptest::collection::vec(-20i32..20, 1..300)) {
        let found = cpu::argmax(&values).unwrap();
        let largest = *values.iter().max().unwrap();
        prop_assert_eq!(found.value, largest);
        prop_assert_eq!(found.index as usize, values.iter().position(|&v| v == largest).unwrap());
        let low = cpu::argmin(&values).unwrap();
        let smallest = *values.iter().min().unwrap();
        prop_assert_eq!(low.index as usize, values.iter().position(|&v| v == smallest).unwrap());
        prop_assert_eq!(cpu::minmax(&values), (smallest, largest));
    }

    #[test]
    fn fold_order_matters_only_for_non_commutative_operators(values in proptest::collection::vec(0u32..4, 0..200)) {
        let last = CustomOp::<u32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| if b != 0 { b } else { a }).unwrap();
        let want = values.iter().rev().find(|&&v| v != 0).copied().unwrap_or(0);
        prop_assert_eq!(cpu::reduce(&values, &last), want);
        let sum: u32 = values.iter().sum();
        prop_assert_eq!(cpu::reduce(&values, &Sum), sum);
        prop_assert_eq!(Operator::<u32>::identity(&Product), 1);
    }
}
