//! Bin specifications and the one bin formula the GPU and the CPU reference
//! share: [`HistogramInput`] (the input types), [`HistogramCount`] (the count
//! types) and [`EvenBins`] (validated `even` parameters).

use gpu_core::{Element, Error, Result};

/// Fewest bins a histogram may have.
pub const MIN_BINS: usize = 2;
/// Most bins a histogram may have.
pub const MAX_BINS: usize = 65_536;

mod sealed {
    pub trait Sealed {}
}

/// An input type of the histogram: `u8, i8, u16, i16, u32, i32` (integer
/// binning, exact) and `f32, f64` (binning in the type itself). Sealed: the
/// kernels exist for these types only (64-bit integers are not supported:
/// their offsets times the bin count do not fit 64 bits).
pub trait HistogramInput: Element + sealed::Sealed {
    /// `upper − lower` as an exact integer (integers), else 0.
    #[doc(hidden)]
    fn integer_range(lower: Self, upper: Self) -> u64;
    /// `bins / (upper − lower)` in `Self` (floats), else zero.
    #[doc(hidden)]
    fn float_scale(bins: u32, lower: Self, upper: Self) -> Self;
    /// The bin of `x` by the `even` formula (see [`EvenBins::bin`]).
    #[doc(hidden)]
    fn even_bin(x: Self, bins: &EvenBins<Self>) -> Option<u32>;
}

macro_rules! integer_input {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl HistogramInput for $t {
            fn integer_range(lower: Self, upper: Self) -> u64 {
                (upper as i64 - lower as i64) as u64
            }
            fn float_scale(_: u32, _: Self, _: Self) -> Self {
                0
            }
            fn even_bin(x: Self, bins: &EvenBins<Self>) -> Option<u32> {
                if !(x >= bins.lower && x < bins.upper) {
                    return None;
                }
                let offset = (x as i64 - bins.lower as i64) as u128;
                Some((offset * bins.bins as u128 / bins.range as u128) as u32)
            }
        }
    )*};
}
integer_input!(u8, i8, u16, i16, u32, i32);

macro_rules! float_input {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl HistogramInput for $t {
            fn integer_range(_: Self, _: Self) -> u64 {
                0
            }
            fn float_scale(bins: u32, lower: Self, upper: Self) -> Self {
                bins as $t / (upper - lower)
            }
            fn even_bin(x: Self, bins: &EvenBins<Self>) -> Option<u32> {
                // NaN fails both comparisons.
                if !(x >= bins.lower && x < bins.upper) {
                    return None;
                }
                // Rounded to nearest in the type, as the kernel's __fsub_rn /
                // __fmul_rn (no fused multiply-add on either side); `as u32`
                // truncates like the kernel's conversion. Rounding can put
                // a value just below `upper` at `bins`: clamped.
                let bin = ((x - bins.lower) * bins.scale) as u32;
                Some(bin.min(bins.bins - 1))
            }
        }
    )*};
}
float_input!(f32, f64);

/// A count type of the histogram: `u32` (wraps past 2^32 − 1, like the
/// device's 32-bit atomics) or `u64`.
pub trait HistogramCount: Element + sealed::Sealed {
    /// `count + by`, wrapping.
    #[doc(hidden)]
    fn add_wrapping(count: Self, by: u64) -> Self;
}

impl sealed::Sealed for u64 {}
impl HistogramCount for u32 {
    fn add_wrapping(count: Self, by: u64) -> Self {
        count.wrapping_add(by as u32)
    }
}
impl HistogramCount for u64 {
    fn add_wrapping(count: Self, by: u64) -> Self {
        count.wrapping_add(by)
    }
}

/// `bins` must be 2 to 65 536.
///
/// ```
/// use reduce::histogram::validate_bins;
/// assert!(validate_bins(256).is_ok());
/// assert!(validate_bins(1).is_err() && validate_bins(65_537).is_err());
/// ```
pub fn validate_bins(bins: usize) -> Result<()> {
    if !(MIN_BINS..=MAX_BINS).contains(&bins) {
        return Err(Error::invalid(
            "bins",
            format!("{bins} bins: a histogram has {MIN_BINS} to {MAX_BINS}"),
        ));
    }
    Ok(())
}

/// Validated parameters of `even(bins, lower, upper)`: half-open bins
/// `[lower + k·w, lower + (k+1)·w)` with `w = (upper − lower) / bins`.
///
/// The bin of `x` ([`EvenBins::bin`], the same formula on the GPU):
/// - no bin when `x < lower`, `x >= upper` or `x` is NaN;
/// - integers: `⌊(x − lower) · bins / (upper − lower)⌋`, exactly (the
///   device computes it in 64-bit integers, no floating point);
/// - floats: `⌊(x − lower) · scale⌋` with `scale = bins / (upper − lower)`,
///   every operation rounded to nearest in the input type itself (f32 for
///   f32), clamped to `bins − 1` where rounding reaches `bins` just below
///   `upper`. Near a bin edge this may differ from exact arithmetic by one
///   bin; it never differs between the GPU and the CPU reference.
///
/// Refused (typed [`Error::InvalidArgument`]): bins outside 2 to 65 536,
/// `lower >= upper`, NaN or infinite float bounds, a float range or scale
/// that is not finite.
///
/// ```
/// use reduce::histogram::EvenBins;
/// let bins = EvenBins::new(4, 0i32, 10).unwrap();
/// assert_eq!([0, 2, 3, 5, 9, 10, -1].map(|x| bins.bin(x)), [Some(0), Some(0), Some(1), Some(2), Some(3), None, None]);
/// assert!(EvenBins::new(4, 1.0f32, 1.0).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EvenBins<T: HistogramInput> {
    pub(crate) bins: u32,
    pub(crate) lower: T,
    pub(crate) upper: T,
    /// `upper − lower` (integers).
    pub(crate) range: u64,
    /// `bins / (upper − lower)` in `T` (floats).
    pub(crate) scale: T,
}

impl<T: HistogramInput> EvenBins<T> {
    /// Checks and prepares `even(bins, lower, upper)`.
    ///
    /// ```
    /// use reduce::histogram::EvenBins;
    /// assert!(EvenBins::new(256, 0u8, 255).is_ok());
    /// assert!(EvenBins::new(256, f32::NAN, 1.0).is_err());
    /// ```
    pub fn new(bins: usize, lower: T, upper: T) -> Result<Self> {
        validate_bins(bins)?;
        // Written as a negation so that NaN bounds are refused too.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let unordered = !(lower < upper);
        if unordered {
            return Err(Error::invalid(
                "lower",
                format!("lower = {lower} must be below upper = {upper} (and neither NaN)"),
            ));
        }
        let bins = bins as u32;
        let scale = T::float_scale(bins, lower, upper);
        if T::IS_FLOAT {
            // Finite bounds; the scale, computed in T, finite and positive
            // (an overflowing `upper − lower` makes it 0, a subnormal one ∞).
            let scale = scale.to_f64();
            let usable = lower.to_f64().is_finite()
                && upper.to_f64().is_finite()
                && scale > 0.0
                && scale.is_finite();
            if !usable {
                return Err(Error::invalid(
                    "upper",
                    format!(
                        "{bins} bins over {lower}..{upper}: the bounds and the scale \
                         bins / (upper − lower) must be finite in the input type"
                    ),
                ));
            }
        }
        Ok(EvenBins {
            bins,
            lower,
            upper,
            range: T::integer_range(lower, upper),
            scale,
        })
    }

    /// The number of bins.
    ///
    /// ```
    /// assert_eq!(reduce::histogram::EvenBins::new(8, 0u32, 80).unwrap().bins(), 8);
    /// ```
    pub fn bins(&self) -> usize {
        self.bins as usize
    }

    /// The bin of `x`, or `None` (outside `[lower, upper)`, or NaN).
    ///
    /// ```
    /// use reduce::histogram::EvenBins;
    /// let bins = EvenBins::new(3, 0.0f32, 1.0).unwrap();
    /// assert_eq!(bins.bin(0.5), Some(1));
    /// assert_eq!(bins.bin(f32::NAN), None);
    /// assert_eq!(bins.bin(1.0), None); // half-open
    /// ```
    pub fn bin(&self, x: T) -> Option<u32> {
        T::even_bin(x, self)
    }

    /// ⌊(2^64 − 1) / range⌋: the kernel's reciprocal for the integer
    /// division (its quotient estimate is exact or one low, then corrected).
    pub(crate) fn magic(&self) -> u64 {
        u64::MAX.checked_div(self.range).unwrap_or(0)
    }

    /// log2 of the bin width when `range` is `bins` times a power of two
    /// (the kernel's integer bin is then `(x − lower) >> shift`, no
    /// division); [`NO_SHIFT`] otherwise, and for floats.
    pub(crate) fn shift(&self) -> u32 {
        if T::IS_FLOAT || self.range == 0 || !self.range.is_multiple_of(self.bins as u64) {
            return NO_SHIFT;
        }
        let width = self.range / self.bins as u64;
        if width.is_power_of_two() {
            width.trailing_zeros()
        } else {
            NO_SHIFT
        }
    }
}

/// [`EvenBins::shift`] when the integer bins are not a power of two wide.
pub(crate) const NO_SHIFT: u32 = 0xff;

/// `boundaries` must be `bins + 1` (3 to 65 537) strictly increasing values
/// (no NaN): bin k is `[b[k], b[k+1])`.
///
/// ```
/// use reduce::histogram::validate_boundaries;
/// assert!(validate_boundaries(&[0.0f32, 1.0, 2.5]).is_ok());
/// assert!(validate_boundaries(&[0, 1, 1]).is_err()); // not strictly increasing
/// assert!(validate_boundaries(&[0, 1]).is_err()); // one bin
/// ```
pub fn validate_boundaries<T: HistogramInput>(boundaries: &[T]) -> Result<()> {
    validate_bins(boundaries.len().saturating_sub(1))?;
    // Negated so that NaN (incomparable) boundaries are refused too.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let unsorted = boundaries.windows(2).position(|w| !(w[0] < w[1]));
    if let Some(k) = unsorted {
        return Err(Error::invalid(
            "boundaries",
            format!(
                "boundaries must be strictly increasing (and not NaN): b[{k}] = {}, b[{}] = {}",
                boundaries[k],
                k + 1,
                boundaries[k + 1]
            ),
        ));
    }
    Ok(())
}

/// The bin of `x` among `boundaries` (validated): the `k` with
/// `b[k] <= x < b[k+1]`, or `None`.
///
/// ```
/// assert_eq!(reduce::histogram::range_bin(&[0, 10, 20], 15), Some(1));
/// assert_eq!(reduce::histogram::range_bin(&[0, 10, 20], 20), None);
/// ```
pub fn range_bin<T: HistogramInput>(boundaries: &[T], x: T) -> Option<u32> {
    let last = *boundaries.last()?;
    if !(x >= boundaries[0] && x < last) {
        return None;
    }
    Some((boundaries.partition_point(|b| *b <= x) - 1) as u32)
}

#[cfg(test)]
mod shift_tests {
    use super::*;

    #[test]
    fn power_of_two_widths_shift_instead_of_dividing() {
        assert_eq!(EvenBins::new(256, 0i32, 256).unwrap().shift(), 0);
        assert_eq!(EvenBins::new(256, -512i32, 512).unwrap().shift(), 2);
        assert_eq!(EvenBins::new(10, 0u32, 1000).unwrap().shift(), NO_SHIFT);
        assert_eq!(EvenBins::new(256, 0u32, 768).unwrap().shift(), NO_SHIFT); // width 3
        assert_eq!(EvenBins::new(4, 0.0f32, 4.0).unwrap().shift(), NO_SHIFT);
        // The shift gives the reference's bins.
        let bins = EvenBins::new(64, -100i32, 156).unwrap();
        for x in -100i32..156 {
            assert_eq!(bins.bin(x), Some(((x + 100) >> bins.shift()) as u32));
        }
    }
}
