//! CPU references for matvec and transpose: what the GPU results are checked
//! against, and the "cpu" row of the lab tables.
//!
//! Float matvec accumulates in `f64` and rounds once to the element type (so
//! the reference is more accurate than any kernel, which sums in `f32` for
//! `f16`, `bf16` and `f32`, and the comparison needs a tolerance, see
//! [`matvec_tolerance`]); integer matvec wraps exactly as the kernels do
//! (two's-complement sums are independent of order, so GPU and CPU agree bit
//! for bit).

use gpu_core::{Element, Error, Result};

use crate::matrix::check_shape;
use crate::matvec::{check_matvec_lengths, MatvecElement, Transpose};

/// `y = A·x` (`op = No`, y has `rows` elements) or `y = Aᵀ·x` (`op = Yes`,
/// y has `cols` elements) for a row-major `rows × cols` matrix `a`.
///
/// Floats: products and sums in `f64`, rounded once at the end. Integers:
/// wrapping multiply and add.
///
/// ```
/// use linalg::Transpose;
/// let a = [1, 2, 3, 4, 5, 6]; // 2 × 3
/// assert_eq!(linalg::cpu::matvec(&a, 2, 3, &[1, 1, 1], Transpose::No)?, [6, 15]);
/// assert_eq!(linalg::cpu::matvec(&a, 2, 3, &[1, 1], Transpose::Yes)?, [5, 7, 9]);
/// assert!(linalg::cpu::matvec(&a, 2, 3, &[1, 1], Transpose::No).is_err()); // x needs cols elements
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn matvec<T: MatvecElement>(
    a: &[T],
    rows: usize,
    cols: usize,
    x: &[T],
    op: Transpose,
) -> Result<Vec<T>> {
    check_host_matvec(a, rows, cols, x, op)?;
    if T::IS_FLOAT {
        let (exact, _) = matvec_f64(a, rows, cols, x, op)?;
        return Ok(exact.into_iter().map(T::from_f64).collect());
    }
    let out_len = op.output_len(rows, cols);
    let mut y = vec![T::zero(); out_len];
    for r in 0..rows {
        let row = &a[r * cols..(r + 1) * cols];
        match op {
            Transpose::No => {
                let mut sum = T::zero();
                for (&a_rc, &x_c) in row.iter().zip(x) {
                    sum = sum.add(a_rc.mul(x_c));
                }
                y[r] = sum;
            }
            Transpose::Yes => {
                for (y_c, &a_rc) in y.iter_mut().zip(row) {
                    *y_c = y_c.add(a_rc.mul(x[r]));
                }
            }
        }
    }
    Ok(y)
}

/// The product in `f64` and, per output element, `Σ |a·x|` over its terms
/// (the scale of the rounding error a float kernel may make).
///
/// ```
/// use linalg::Transpose;
/// let a = [1.0f32, -2.0, 3.0, 4.0]; // 2 × 2
/// let (y, magnitude) = linalg::cpu::matvec_f64(&a, 2, 2, &[1.0, 1.0], Transpose::No)?;
/// assert_eq!(y, [-1.0, 7.0]);
/// assert_eq!(magnitude, [3.0, 7.0]); // Σ|a·x| per output
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn matvec_f64<T: MatvecElement>(
    a: &[T],
    rows: usize,
    cols: usize,
    x: &[T],
    op: Transpose,
) -> Result<(Vec<f64>, Vec<f64>)> {
    check_host_matvec(a, rows, cols, x, op)?;
    let out_len = op.output_len(rows, cols);
    let mut y = vec![0.0f64; out_len];
    let mut magnitude = vec![0.0f64; out_len];
    for r in 0..rows {
        let row = &a[r * cols..(r + 1) * cols];
        for (c, &a_rc) in row.iter().enumerate() {
            let term = a_rc.to_f64() * x[op.reduce_index(r, c)].to_f64();
            let out = op.output_index(r, c);
            y[out] += term;
            magnitude[out] += term.abs();
        }
    }
    Ok((y, magnitude))
}

/// How far a float kernel's result may be from the reference
/// ([`matvec`]: the `f64` sum rounded once to `T`), with `magnitude` =
/// `Σ|a·x|` of the output ([`matvec_f64`]):
/// `((terms + 2)·ε_acc + ε − ε_acc)·Σ|a·x|`. The first part is the classic
/// bound for a sum of `terms` rounded products in any order, made in the
/// accumulator ([`gpu_core::Element::Acc`], `ε_acc` its epsilon); the
/// second covers rounding the sum to `T` (`ε` of `T`), which only the
/// 16-bit floats do (accumulating in `f32`; `ε = ε_acc` for the others, so
/// their bound is `(terms + 2)·ε·Σ|a·x|`). 0 for integers, which must match
/// exactly.
///
/// ```
/// use linalg::cpu::{matvec_f64, matvec_tolerance};
/// use linalg::Transpose;
/// let (a, x) = (vec![0.1f32; 1000], vec![0.3f32; 1000]); // 1 × 1000
/// let (exact, magnitude) = matvec_f64(&a, 1, 1000, &x, Transpose::No)?;
/// let gpu_result = 30.0f32; // what a kernel returned, say
/// assert!((gpu_result as f64 - exact[0]).abs() <= matvec_tolerance::<f32>(1000, magnitude[0]));
/// assert_eq!(matvec_tolerance::<i32>(1000, 1e9), 0.0); // integers match exactly
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn matvec_tolerance<T: MatvecElement>(terms: usize, magnitude: f64) -> f64 {
    let acc_epsilon = <T::Acc as Element>::EPSILON;
    ((terms as f64 + 2.0) * acc_epsilon + (T::EPSILON - acc_epsilon)) * magnitude
}

fn check_host_matvec<T: MatvecElement>(
    a: &[T],
    rows: usize,
    cols: usize,
    x: &[T],
    op: Transpose,
) -> Result<()> {
    let len = check_shape::<T>("matrix A", rows, cols)?;
    Error::check_len("host matrix data", len, a.len())?;
    let y_len = op.output_len(rows, cols);
    check_matvec_lengths(rows, cols, x.len(), y_len, op)
}

/// `aᵀ` for a row-major `rows × cols` matrix: a row-major `cols × rows`
/// matrix. Walks 32 × 32 blocks so both sides stay in cache.
///
/// ```
/// let a = [1, 2, 3, 4, 5, 6]; // 2 × 3
/// assert_eq!(linalg::cpu::transpose(&a, 2, 3)?, [1, 4, 2, 5, 3, 6]); // 3 × 2
/// assert!(linalg::cpu::transpose(&a, 4, 2).is_err()); // 6 elements are not 4 × 2
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn transpose<T: Copy + Default>(a: &[T], rows: usize, cols: usize) -> Result<Vec<T>> {
    const BLOCK: usize = 32;
    let len = rows
        .checked_mul(cols)
        .filter(|_| rows > 0 && cols > 0)
        .ok_or_else(|| Error::Shape(format!("transpose: {rows}×{cols} is not a matrix")))?;
    Error::check_len("host matrix data", len, a.len())?;
    let mut out = vec![T::default(); len];
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    out[c * rows + r] = a[r * cols + c];
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_matvec_by_hand() {
        // A = [[1, 2, 3], [4, 5, 6]]
        let a = [1i32, 2, 3, 4, 5, 6];
        assert_eq!(
            matvec(&a, 2, 3, &[1, 0, -1], Transpose::No).unwrap(),
            vec![-2, -2]
        );
        assert_eq!(
            matvec(&a, 2, 3, &[1, 2], Transpose::Yes).unwrap(),
            vec![9, 12, 15]
        );
        let af = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(
            matvec(&af, 2, 3, &[0.5, 0.25, 1.0], Transpose::No).unwrap(),
            vec![4.0, 9.25]
        );
        let (y, magnitude) = matvec_f64(&af, 2, 3, &[1.0, -1.0], Transpose::Yes).unwrap();
        assert_eq!(y, vec![-3.0, -3.0, -3.0]);
        assert_eq!(magnitude, vec![5.0, 7.0, 9.0]);
    }

    #[test]
    fn integer_matvec_wraps() {
        let a = [i32::MAX, i32::MAX];
        assert_eq!(
            matvec(&a, 1, 2, &[2, 1], Transpose::No).unwrap(),
            vec![i32::MAX.wrapping_mul(2).wrapping_add(i32::MAX)]
        );
    }

    #[test]
    fn float_matvec_accumulates_in_f64() {
        // 1 + 1e-8 · 1e4 terms: f32 accumulation would lose the small terms.
        let cols = 10_001;
        let mut a = vec![1e-8f32; cols];
        a[0] = 1.0;
        let x = vec![1.0f32; cols];
        let y = matvec(&a, 1, cols, &x, Transpose::No).unwrap();
        assert!((y[0] - 1.0001).abs() < 1e-6, "{}", y[0]);
        assert_eq!(matvec_tolerance::<i32>(100, 1e9), 0.0);
        assert!(matvec_tolerance::<f32>(10, 1.0) > matvec_tolerance::<f64>(10, 1.0));
        // f32: the classic bound. f16: f32 accumulation plus one rounding
        // to f16.
        assert_eq!(
            matvec_tolerance::<f32>(10, 2.0),
            12.0 * f32::EPSILON as f64 * 2.0
        );
        let half = matvec_tolerance::<gpu_core::f16>(10, 1.0);
        let expected = 12.0 * f32::EPSILON as f64 + 2f64.powi(-10) - f32::EPSILON as f64;
        assert!((half - expected).abs() < 1e-18, "{half} {expected}");
        assert!(matvec_tolerance::<gpu_core::bf16>(10, 1.0) > half);
    }

    #[test]
    fn bad_host_shapes_are_errors() {
        let a = [1.0f32; 6];
        assert!(matvec(&a, 2, 3, &[1.0; 2], Transpose::No).is_err());
        assert!(matvec(&a, 2, 3, &[1.0; 3], Transpose::Yes).is_err());
        assert!(matvec(&a, 3, 3, &[1.0; 3], Transpose::No).is_err());
        assert!(matvec(&a, 0, 3, &[], Transpose::No).is_err());
        assert!(transpose(&a, 4, 2).is_err());
        assert!(transpose(&a, 0, 6).is_err());
    }

    #[test]
    fn transpose_by_hand_and_twice_is_identity() {
        let a = [1u8, 2, 3, 4, 5, 6];
        let t = transpose(&a, 2, 3).unwrap();
        assert_eq!(t, vec![1, 4, 2, 5, 3, 6]);
        assert_eq!(transpose(&t, 3, 2).unwrap(), a.to_vec());
        assert_eq!(transpose(&[7i64], 1, 1).unwrap(), vec![7]);
        let row: Vec<u32> = (0..5).collect();
        assert_eq!(transpose(&row, 1, 5).unwrap(), row);
    }
}
