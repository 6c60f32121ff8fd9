//! The CPU reference for [`crate::conv2d`]: the definition, computed
//! directly.
//!
//! `out[i][j] = Σ_{u,v < K} fw(u, v) · image(i + u − a, j + v − a)` with
//! `fw(u, v) = f[u][v]` (or `f[K−1−u][K−1−v]` with `flip`), the anchor `a`
//! from [`crate::conv::anchor`] and out-of-image samples from [`padded_index`].
//! Floats accumulate in `f64` (so the reference is at least as accurate as
//! the GPU's fused multiply-adds in the element type); `i32` wraps. Work
//! `OH·OW·K²`, one thread, deterministic.

use gpu_core::{Error, Result};

use crate::conv::{anchor, output_shape, ConvElement, ConvOptions, Padding};

/// Maps coordinate `x` (any value, possibly far outside) onto `0 … n − 1` by
/// `padding`, or `None` for a zero sample ([`Padding::Zero`] outside).
/// `n` must be at least 1.
///
/// ```
/// use linalg::conv::Padding;
/// use linalg::conv_cpu::padded_index;
/// // A row of 4 samples, indices 0..4; coordinate -2 lies two to the left.
/// assert_eq!(padded_index(-2, 4, Padding::Zero), None);
/// assert_eq!(padded_index(-2, 4, Padding::Clamp), Some(0));
/// assert_eq!(padded_index(-2, 4, Padding::Reflect), Some(1));
/// assert_eq!(padded_index(-2, 4, Padding::Wrap), Some(2));
/// ```
pub fn padded_index(x: i64, n: usize, padding: Padding) -> Option<usize> {
    let n = n as i64;
    if (0..n).contains(&x) {
        return Some(x as usize);
    }
    let mapped = match padding {
        Padding::Zero => return None,
        Padding::Clamp => x.clamp(0, n - 1),
        Padding::Reflect => {
            let m = x.rem_euclid(2 * n);
            if m < n {
                m
            } else {
                2 * n - 1 - m
            }
        }
        Padding::Wrap => x.rem_euclid(n),
    };
    Some(mapped as usize)
}

/// The convolution of the row-major `h × w` `image` with the row-major
/// `k × k` `filter`, as [`crate::conv2d`] defines it, with the border,
/// padding and flip of `options` (its algorithm and block are ignored). Returns the row-major
/// output of [`crate::conv::output_shape`].
///
/// ```
/// use linalg::{Border, ConvOptions};
/// let image = [1, 2, 3, 4, 5, 6, 7, 8, 9]; // 3 × 3
/// let filter = [1, 0, 0, -1]; // 2 × 2: top-left minus bottom-right
/// let out = linalg::conv_cpu::conv2d(&image, 3, 3, &filter, 2, &ConvOptions::default())?;
/// assert_eq!(out, [-4, -4, -4, -4]); // 2 × 2 (Border::Valid)
/// let same = ConvOptions { border: Border::Same, ..ConvOptions::default() };
/// assert_eq!(linalg::conv_cpu::conv2d(&image, 3, 3, &filter, 2, &same)?.len(), 9);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn conv2d<T: ConvElement>(
    image: &[T],
    h: usize,
    w: usize,
    filter: &[T],
    k: usize,
    options: &ConvOptions,
) -> Result<Vec<T>> {
    let (border, padding, flip) = (options.border, options.padding, options.flip);
    let (out_rows, out_cols) = output_shape(h, w, k, border)?;
    let pixels = h
        .checked_mul(w)
        .ok_or_else(|| Error::Shape(format!("image {h}×{w} overflows")))?;
    Error::check_len("image", pixels, image.len())?;
    Error::check_len("filter", k * k, filter.len())?;
    let a = anchor(k, border, flip) as i64;
    let mut out = Vec::with_capacity(out_rows * out_cols);
    for i in 0..out_rows as i64 {
        for j in 0..out_cols as i64 {
            let mut acc = T::acc_zero();
            for u in 0..k {
                let Some(r) = padded_index(i + u as i64 - a, h, padding) else {
                    continue;
                };
                for v in 0..k {
                    let Some(c) = padded_index(j + v as i64 - a, w, padding) else {
                        continue;
                    };
                    let f = if flip {
                        filter[(k - 1 - u) * k + (k - 1 - v)]
                    } else {
                        filter[u * k + v]
                    };
                    acc = T::acc_mul_add(acc, image[r * w + c], f);
                }
            }
            out.push(T::acc_finish(acc));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::Border;

    fn o(border: Border, padding: Padding, flip: bool) -> ConvOptions {
        ConvOptions {
            border,
            padding,
            flip,
            ..ConvOptions::default()
        }
    }

    /// The padded extension of the row `1 2 3 4` (a 1 × 4 image), read
    /// through a 7 × 7 filter with a single non-zero tap.
    fn row_extension(padding: Padding) -> Vec<i32> {
        let image = [1, 2, 3, 4];
        let k = 7;
        let mut filter = vec![0; k * k];
        filter[3 * k] = 1; // middle row, first column
        let picks = conv2d(&image, 1, 4, &filter, k, &o(Border::Full, padding, false)).unwrap();
        // Full (anchor 6): output (i, j) reads rows i − 6 … i, columns
        // j − 6 … j; the tap (3, 0) picks row i − 3, column j − 6, so output
        // row 3 shows image row 0 at columns −6 … 3.
        let (_rows, cols) = output_shape(1, 4, k, Border::Full).unwrap();
        picks[3 * cols..4 * cols].to_vec()
    }

    #[test]
    fn each_padding_mode_on_a_row() {
        // Output row 3 of Full shows columns −6 … 3 of the padded row.
        assert_eq!(row_extension(Padding::Zero), [0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(
            row_extension(Padding::Clamp),
            [1, 1, 1, 1, 1, 1, 1, 2, 3, 4]
        );
        // d c b a | a b c d, continued: period 8 (… c d d c b a | a b c d).
        assert_eq!(
            row_extension(Padding::Reflect),
            [3, 4, 4, 3, 2, 1, 1, 2, 3, 4]
        );
        assert_eq!(row_extension(Padding::Wrap), [3, 4, 1, 2, 3, 4, 1, 2, 3, 4]);
    }

    #[test]
    fn padded_index_extends_both_ways() {
        let n = 4;
        let reflect: Vec<usize> = (-5..9)
            .map(|x| padded_index(x, n, Padding::Reflect).unwrap())
            .collect();
        assert_eq!(reflect, [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0]);
        let wrap: Vec<usize> = (-5..9)
            .map(|x| padded_index(x, n, Padding::Wrap).unwrap())
            .collect();
        assert_eq!(wrap, [3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]);
        assert_eq!(padded_index(-1, n, Padding::Zero), None);
        assert_eq!(padded_index(4, n, Padding::Zero), None);
        assert_eq!(padded_index(-100, n, Padding::Clamp), Some(0));
        assert_eq!(padded_index(100, n, Padding::Clamp), Some(3));
        // A single sample extends to itself in every non-zero mode.
        for p in [Padding::Clamp, Padding::Reflect, Padding::Wrap] {
            assert_eq!(padded_index(-31, 1, p), Some(0));
            assert_eq!(padded_index(31, 1, p), Some(0));
        }
    }

    #[test]
    fn valid_3x3_by_hand() {
        // 3×4 image, 2×2 filter [[1, 2], [3, 4]].
        let image = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let filter = [1, 2, 3, 4];
        let out = conv2d(
            &image,
            3,
            4,
            &filter,
            2,
            &o(Border::Valid, Padding::Zero, false),
        )
        .unwrap();
        // (0,0): 1·1 + 2·2 + 5·3 + 6·4 = 44
        assert_eq!(out, [44, 54, 64, 84, 94, 104]);
        // Flip: filter [[4, 3], [2, 1]]: (0,0) = 4 + 6 + 10 + 6 = 26.
        let flipped = conv2d(
            &image,
            3,
            4,
            &filter,
            2,
            &o(Border::Valid, Padding::Zero, true),
        )
        .unwrap();
        assert_eq!(flipped, [26, 36, 46, 66, 76, 86]);
    }

    #[test]
    fn same_even_filter_anchors_like_scipy() {
        // 1 × 4 image with a 2 × 2 filter whose bottom-right tap is 1.
        // correlate (anchor K/2 = 1): out(0, j) = image(1 − 1 + 0 … ) — the
        // tap (1, 1) reads image(i, j): the identity.
        let image = [1.0f64, 2.0, 3.0, 4.0];
        let tap = [0.0, 0.0, 0.0, 1.0];
        let out = conv2d(
            &image,
            1,
            4,
            &tap,
            2,
            &o(Border::Same, Padding::Zero, false),
        )
        .unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        // convolve (anchor (K−1)/2 = 0, rotated filter: tap at (0, 0)): also
        // the identity, as scipy.ndimage.convolve(image, tap) gives.
        let out = conv2d(&image, 1, 4, &tap, 2, &o(Border::Same, Padding::Zero, true)).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        // The top-left tap under correlate reads image(i − 1, j − 1): zero
        // row above a 1-row image.
        let top_left = [1.0, 0.0, 0.0, 0.0];
        let out = conv2d(
            &image,
            1,
            4,
            &top_left,
            2,
            &o(Border::Same, Padding::Zero, false),
        )
        .unwrap();
        assert_eq!(out, [0.0; 4]);
        // With Clamp it is the sample up-left, clamped: 1 1 2 3.
        let out = conv2d(
            &image,
            1,
            4,
            &top_left,
            2,
            &o(Border::Same, Padding::Clamp, false),
        )
        .unwrap();
        assert_eq!(out, [1.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn full_is_true_convolution_when_flipped() {
        // Full + flip of a 1×1 image is the filter itself.
        let filter: Vec<i32> = (1..=9).collect();
        let out = conv2d(
            &[1],
            1,
            1,
            &filter,
            3,
            &o(Border::Full, Padding::Zero, true),
        )
        .unwrap();
        assert_eq!(out, filter);
        // Without flip it is the filter rotated.
        let out = conv2d(
            &[1],
            1,
            1,
            &filter,
            3,
            &o(Border::Full, Padding::Zero, false),
        )
        .unwrap();
        let rotated: Vec<i32> = filter.iter().rev().copied().collect();
        assert_eq!(out, rotated);
    }

    #[test]
    fn integers_wrap_and_floats_accumulate_in_f64() {
        let out = conv2d(
            &[i32::MAX, 1],
            1,
            2,
            &[1],
            1,
            &o(Border::Valid, Padding::Zero, false),
        )
        .unwrap();
        assert_eq!(out, [i32::MAX, 1]);
        let out = conv2d(
            &[i32::MAX; 4],
            2,
            2,
            &[1, 1, 1, 1],
            2,
            &o(Border::Valid, Padding::Zero, false),
        )
        .unwrap();
        assert_eq!(out, [i32::MAX.wrapping_mul(4)]);
        // 1 + 1e8 − 1e8 in f32 would lose the 1; the f64 accumulator keeps it.
        let out = conv2d(
            &[1.0f32, 1e8, -1e8, 0.0],
            2,
            2,
            &[1.0, 1.0, 1.0, 1.0],
            2,
            &o(Border::Valid, Padding::Zero, false),
        )
        .unwrap();
        assert_eq!(out, [1.0]);
    }

    #[test]
    fn lengths_are_checked() {
        assert!(conv2d(
            &[1, 2, 3],
            2,
            2,
            &[1],
            1,
            &o(Border::Valid, Padding::Zero, false)
        )
        .is_err());
        assert!(conv2d(
            &[1, 2, 3, 4],
            2,
            2,
            &[1, 2],
            1,
            &o(Border::Valid, Padding::Zero, false)
        )
        .is_err());
        assert!(conv2d(
            &[1, 2, 3, 4],
            2,
            2,
            &[1; 9],
            3,
            &o(Border::Valid, Padding::Zero, false)
        )
        .is_err());
    }
}
