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
    ///
    /// ```
    /// use linalg::ConvElement;
    /// assert_eq!(f32::acc_zero(), 0.0f64); // floats: the reference sums in f64
    /// assert_eq!(i32::acc_zero(), 0);
    /// ```
    fn acc_zero() -> Self::RefAcc;
    /// `acc + x·w` in the accumulator.
    ///
    /// ```
    /// use linalg::ConvElement;
    /// let acc = f32::acc_mul_add(f32::acc_zero(), 0.1, 3.0);
    /// assert_eq!(acc, 0.1f32 as f64 * 3.0); // exact in f64
    /// assert_eq!(i32::acc_mul_add(i32::MAX, 1, 1), i32::MIN); // i32 wraps
    /// ```
    fn acc_mul_add(acc: Self::RefAcc, x: Self, w: Self) -> Self::RefAcc;
    /// The accumulator rounded back to the element.
    ///
    /// ```
    /// use linalg::ConvElement;
    /// assert_eq!(f32::acc_finish(0.1), 0.1f32); // rounded once
    /// assert_eq!(i32::acc_finish(-7), -7);
    /// ```
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
