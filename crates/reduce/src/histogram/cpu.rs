//! The CPU reference every GPU test compares with: the same bin formulas
//! ([`EvenBins::bin`], [`range_bin`]), one item at a time, wrapping counts.

use gpu_core::Result;

use super::bins::{range_bin, validate_boundaries, EvenBins, HistogramCount, HistogramInput};

/// Counts of `input` in `even(bins, lower, upper)` (see [`EvenBins`]).
///
/// ```
/// let counts: Vec<u32> = reduce::histogram::cpu::histogram_even(&[0i32, 1, 5, 9, 10, -3], 2, 0, 10).unwrap();
/// assert_eq!(counts, [2, 2]); // 10 and -3 are outside
/// ```
pub fn histogram_even<T: HistogramInput, C: HistogramCount>(
    input: &[T],
    bins: usize,
    lower: T,
    upper: T,
) -> Result<Vec<C>> {
    let spec = EvenBins::new(bins, lower, upper)?;
    Ok(count(input, spec.bins(), |x| spec.bin(x)))
}

/// Counts of `input` in the bins `[b[k], b[k+1])` of `boundaries`.
///
/// ```
/// let counts: Vec<u64> = reduce::histogram::cpu::histogram_ranges(&[0.5f32, 1.0, 7.0, f32::NAN], &[0.0, 1.0, 8.0]).unwrap();
/// assert_eq!(counts, [1, 2]);
/// ```
pub fn histogram_ranges<T: HistogramInput, C: HistogramCount>(
    input: &[T],
    boundaries: &[T],
) -> Result<Vec<C>> {
    validate_boundaries(boundaries)?;
    Ok(count(input, boundaries.len() - 1, |x| {
        range_bin(boundaries, x)
    }))
}

fn count<T: HistogramInput, C: HistogramCount>(
    input: &[T],
    bins: usize,
    bin_of: impl Fn(T) -> Option<u32>,
) -> Vec<C> {
    let mut counts = vec![0u64; bins];
    for &x in input {
        if let Some(bin) = bin_of(x) {
            counts[bin as usize] += 1;
        }
    }
    counts
        .into_iter()
        .map(|c| C::add_wrapping(C::zero(), c))
        .collect()
}
