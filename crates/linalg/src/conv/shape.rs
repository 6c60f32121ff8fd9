//! What a convolution's output is: the [`Border`] (extent and anchor), the
//! [`Padding`] of out-of-image samples, the output shape and the bytes a
//! convolution moves. Pure functions, shared by the GPU path and the CPU
//! reference.

use gpu_core::{Error, Result};

/// Largest filter side.
pub const CONV_MAX_K: usize = 31;

/// Which outputs exist and where the filter sits (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Border {
    /// Only outputs whose window lies inside the image (the lab's choice):
    /// `(H−K+1) × (W−K+1)`. Never reads padding.
    #[default]
    Valid,
    /// One output per input pixel, `H × W`, anchored as `scipy.ndimage`.
    Same,
    /// Every output whose window touches the image: `(H+K−1) × (W+K−1)`.
    Full,
}

/// What `image(r, c)` is outside the image, per axis, with SciPy's
/// (`scipy.ndimage`) meanings. For a row `a b c d`:
///
/// | mode | SciPy name | left … \| a b c d \| … right |
/// |---|---|---|
/// | `Zero`    | `'constant'` (cval 0) | `0 0 0 0 \| a b c d \| 0 0 0 0` |
/// | `Clamp`   | `'nearest'` | `a a a a \| a b c d \| d d d d` |
/// | `Reflect` | `'reflect'` | `d c b a \| a b c d \| d c b a` (edge repeated; period 2n) |
/// | `Wrap`    | `'wrap'` | `a b c d \| a b c d \| a b c d` (period n) |
///
/// The extension continues as far as the filter reaches (a 31-wide filter on a
/// 1-pixel-wide image works in every mode). Rows and columns are padded
/// independently; corners follow from applying the rule on both axes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Zeros.
    #[default]
    Zero = 0,
    /// The nearest edge sample.
    Clamp = 1,
    /// Mirror about the edge, the edge sample repeated.
    Reflect = 2,
    /// Periodic.
    Wrap = 3,
}

impl Padding {
    /// Every mode, for tests and sweeps.
    pub const ALL: [Padding; 4] = [
        Padding::Zero,
        Padding::Clamp,
        Padding::Reflect,
        Padding::Wrap,
    ];
}

impl Border {
    /// Every border mode, for tests and sweeps.
    pub const ALL: [Border; 3] = [Border::Valid, Border::Same, Border::Full];
}

pub(crate) fn check_filter_side(k: usize) -> Result<()> {
    if !(1..=CONV_MAX_K).contains(&k) {
        return Err(Error::invalid(
            "filter",
            format!("K = {k}: the filter side must be 1 to {CONV_MAX_K}"),
        ));
    }
    Ok(())
}

/// The output shape for an `h × w` image, a `k × k` filter and `border`.
///
/// Errors: `k` outside 1 … 31, a zero image dimension, `Valid` with `k > h` or
/// `k > w`, `Full` overflowing `usize`.
///
/// ```
/// use linalg::conv::{output_shape, Border};
/// assert_eq!(output_shape(10, 7, 3, Border::Valid)?, (8, 5));
/// assert_eq!(output_shape(10, 7, 3, Border::Same)?, (10, 7));
/// assert_eq!(output_shape(10, 7, 3, Border::Full)?, (12, 9));
/// assert!(output_shape(2, 7, 3, Border::Valid).is_err()); // the filter does not fit
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn output_shape(h: usize, w: usize, k: usize, border: Border) -> Result<(usize, usize)> {
    check_filter_side(k)?;
    if h == 0 || w == 0 {
        return Err(Error::Shape(format!("image {h}×{w} has a zero dimension")));
    }
    match border {
        Border::Valid => {
            if k > h || k > w {
                return Err(Error::Shape(format!(
                    "a {k}×{k} filter does not fit in a {h}×{w} image with Border::Valid"
                )));
            }
            Ok((h - k + 1, w - k + 1))
        }
        Border::Same => Ok((h, w)),
        Border::Full => match (h.checked_add(k - 1), w.checked_add(k - 1)) {
            (Some(rows), Some(cols)) => Ok((rows, cols)),
            _ => Err(Error::Shape(format!(
                "a Full {h}×{w} output with K = {k} overflows"
            ))),
        },
    }
}

/// The anchor `a`: output `(i, j)` reads image rows `i − a … i − a + K − 1`
/// (see the module docs). `Valid` 0, `Full` `K − 1`, `Same` `K/2`, or
/// `(K−1)/2` with `flip` (SciPy's `correlate` / `convolve`).
///
/// ```
/// use linalg::conv::{anchor, Border};
/// assert_eq!(anchor(4, Border::Valid, false), 0);
/// assert_eq!(anchor(4, Border::Full, false), 3);
/// assert_eq!(anchor(4, Border::Same, false), 2); // scipy.ndimage.correlate
/// assert_eq!(anchor(4, Border::Same, true), 1); // scipy.ndimage.convolve
/// ```
pub fn anchor(k: usize, border: Border, flip: bool) -> usize {
    match border {
        Border::Valid => 0,
        Border::Full => k.saturating_sub(1),
        Border::Same if flip => k.saturating_sub(1) / 2,
        Border::Same => k / 2,
    }
}

/// The padding a kernel applies: `Valid` never reads outside the image
/// except for the surplus outputs of a last partial tile or strip, which are
/// not stored, so those read zeros; other borders keep `padding`.
pub(crate) fn kernel_padding(border: Border, padding: Padding) -> Padding {
    match border {
        Border::Valid => Padding::Zero,
        _ => padding,
    }
}

/// Bytes a convolution moves at least: the image read once, the outputs
/// written once and the filter read once, `elem_bytes · (H·W + OH·OW + K²)`
/// (`4·H·W + 4·outputs + 4·K²` for `f32`). The benchmark's GB/s use this.
/// Shapes [`output_shape`] rejects count no outputs.
///
/// ```
/// use linalg::conv::{conv_bytes_moved, Border};
/// // f32, 100 × 100 image, 3 × 3 filter, 98 × 98 outputs.
/// assert_eq!(conv_bytes_moved(100, 100, 3, Border::Valid, 4), 4 * (100 * 100 + 98 * 98 + 9));
/// ```
pub fn conv_bytes_moved(h: usize, w: usize, k: usize, border: Border, elem_bytes: usize) -> u64 {
    let outputs = output_shape(h, w, k, border)
        .map(|(rows, cols)| rows as u64 * cols as u64)
        .unwrap_or(0);
    elem_bytes as u64 * (h as u64 * w as u64 + outputs + k as u64 * k as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_shapes_follow_the_border() {
        assert_eq!(output_shape(10, 7, 3, Border::Valid).unwrap(), (8, 5));
        assert_eq!(output_shape(10, 7, 3, Border::Same).unwrap(), (10, 7));
        assert_eq!(output_shape(10, 7, 3, Border::Full).unwrap(), (12, 9));
        assert_eq!(output_shape(5, 5, 5, Border::Valid).unwrap(), (1, 1));
        assert_eq!(output_shape(1, 1, 31, Border::Full).unwrap(), (31, 31));
        assert_eq!(output_shape(1, 1, 31, Border::Same).unwrap(), (1, 1));
        assert!(output_shape(4, 5, 5, Border::Valid).is_err());
        assert!(output_shape(5, 4, 5, Border::Valid).is_err());
        assert!(output_shape(5, 5, 0, Border::Same).is_err());
        assert!(output_shape(5, 5, 32, Border::Full).is_err());
        assert!(output_shape(0, 5, 1, Border::Same).is_err());
        assert!(output_shape(usize::MAX, 5, 3, Border::Full).is_err());
    }

    #[test]
    fn anchors_match_scipy() {
        // correlate: origin at K/2; convolve: (K−1)/2 for the rotated filter.
        assert_eq!(anchor(3, Border::Same, false), 1);
        assert_eq!(anchor(3, Border::Same, true), 1);
        assert_eq!(anchor(4, Border::Same, false), 2);
        assert_eq!(anchor(4, Border::Same, true), 1);
        assert_eq!(anchor(1, Border::Same, true), 0);
        assert_eq!(anchor(4, Border::Valid, true), 0);
        assert_eq!(anchor(4, Border::Full, false), 3);
    }

    #[test]
    fn bytes_moved_counts_image_outputs_and_filter() {
        // 8192², K = 3, Valid, f32: 4·H·W + 4·(H−2)(W−2) + 4·9.
        let n = 8192u64;
        assert_eq!(
            conv_bytes_moved(8192, 8192, 3, Border::Valid, 4),
            4 * n * n + 4 * (n - 2) * (n - 2) + 36
        );
        assert_eq!(
            conv_bytes_moved(4, 4, 3, Border::Same, 8),
            8 * (16 + 16 + 9)
        );
        assert_eq!(conv_bytes_moved(2, 2, 3, Border::Valid, 4), 4 * (4 + 9));
    }
}
