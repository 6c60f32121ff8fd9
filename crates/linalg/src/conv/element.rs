//! The element types a convolution supports ([`ConvElement`]): `f16`,
//! `bf16`, `f32`, `f64`, `i32`, with the CPU reference's accumulator for
//! each.

use gpu_core::{bf16, f16, Element};

/// The element types [`crate::conv2d`] supports: `f16` and `bf16` (products
/// and sums in `f32`, each output rounded once), `f32`, `f64`, `i32`
/// (wrapping). The kernels accumulate in [`Element::Acc`].
pub trait ConvElement: Element + crate::sealed::Arithmetic {
    /// The CPU reference's accumulator (`f64` for floats, `i32` wrapping).
    type RefAcc: Copy;
    /// Zero accumulator.
    fn acc_zero() -> Self::RefAcc;
    /// `acc + x·w` in the accumulator.
    fn acc_mul_add(acc: Self::RefAcc, x: Self, w: Self) -> Self::RefAcc;
    /// The accumulator rounded back to the element.
    fn acc_finish(acc: Self::RefAcc) -> Self;
}

/// The floats: the reference sums exact-ish in `f64` and rounds once.
macro_rules! float_conv_element {
    ($($t:ty),*) => {$(
        impl ConvElement for $t {
            type RefAcc = f64;
            fn acc_zero() -> f64 {
                0.0
            }
            fn acc_mul_add(acc: f64, x: $t, w: $t) -> f64 {
                acc + x.to_f64() * w.to_f64()
            }
            fn acc_finish(acc: f64) -> $t {
                <$t as Element>::from_f64(acc)
            }
        }
    )*};
}

float_conv_element!(f16, bf16, f32, f64);

impl ConvElement for i32 {
    type RefAcc = i32;
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
