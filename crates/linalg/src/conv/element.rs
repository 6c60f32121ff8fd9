//! The element types a convolution supports ([`ConvElement`]): `f32`,
//! `f64`, `i32`, with the CPU reference's accumulator for each.

use gpu_core::{Element, ElementType};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
}

/// The element types [`crate::conv2d`] supports: `f32`, `f64`, `i32` (wrapping).
pub trait ConvElement: Element + sealed::Sealed {
    /// The CPU reference's accumulator (`f64` for floats, `i32` wrapping).
    type RefAcc: Copy;
    /// The type as an [`ElementType`] (tuning lookup).
    const TYPE: ElementType;
    /// Zero accumulator.
    fn acc_zero() -> Self::RefAcc;
    /// `acc + x·w` in the accumulator.
    fn acc_mul_add(acc: Self::RefAcc, x: Self, w: Self) -> Self::RefAcc;
    /// The accumulator rounded back to the element.
    fn acc_finish(acc: Self::RefAcc) -> Self;
}

impl ConvElement for f32 {
    type RefAcc = f64;
    const TYPE: ElementType = ElementType::F32;
    fn acc_zero() -> f64 {
        0.0
    }
    fn acc_mul_add(acc: f64, x: f32, w: f32) -> f64 {
        acc + x as f64 * w as f64
    }
    fn acc_finish(acc: f64) -> f32 {
        acc as f32
    }
}

impl ConvElement for f64 {
    type RefAcc = f64;
    const TYPE: ElementType = ElementType::F64;
    fn acc_zero() -> f64 {
        0.0
    }
    fn acc_mul_add(acc: f64, x: f64, w: f64) -> f64 {
        acc + x * w
    }
    fn acc_finish(acc: f64) -> f64 {
        acc
    }
}

impl ConvElement for i32 {
    type RefAcc = i32;
    const TYPE: ElementType = ElementType::I32;
    fn acc_zero() -> i32 {
        0
    }
    fn acc_mul_add(acc: i32, x: i32, w: i32) -> i32 {
        acc.wrapping_add(x.wrapping_mul(w))
    }
    fn acc_finish(acc: i32) -> i32 {
        acc
    }
}
