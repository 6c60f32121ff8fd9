//! `Matrix<T>`: a row-major rows × cols matrix on the device.
//!
//! Generic over [`DeviceType`] (every element type, `u8` included), so byte
//! matrices can be transposed; the arithmetic operations ask for more
//! (`MatvecElement`, `Element`) on their own signatures.

use gpu_core::{DeviceBuffer, DeviceType, DeviceView, DeviceViewMut, Error, Gpu, Result};

/// A row-major `rows × cols` matrix on the device, owning its memory.
///
/// Element `(r, c)` lives at index `r * cols + c`. Both dimensions are at
/// least 1; `rows * cols` is checked for overflow.
#[derive(Debug)]
pub struct Matrix<T: DeviceType> {
    rows: usize,
    cols: usize,
    data: DeviceBuffer<T>,
}

/// A read-only row-major matrix view over a caller's device memory.
#[derive(Clone, Copy, Debug)]
pub struct MatrixView<'a, T: DeviceType> {
    rows: usize,
    cols: usize,
    data: DeviceView<'a, T>,
}

/// A writable row-major matrix view over a caller's device memory.
#[derive(Debug)]
pub struct MatrixViewMut<'a, T: DeviceType> {
    rows: usize,
    cols: usize,
    data: DeviceViewMut<'a, T>,
}

/// Checks a shape: both dimensions ≥ 1, `rows·cols` fits in `usize` and
/// its byte count too. Returns `rows·cols`.
pub fn check_shape<T: DeviceType>(what: &str, rows: usize, cols: usize) -> Result<usize> {
    if rows == 0 || cols == 0 {
        return Err(Error::Shape(format!(
            "{what}: {rows}×{cols} has a zero dimension"
        )));
    }
    rows.checked_mul(cols)
        .filter(|n| n.checked_mul(T::BYTES).is_some())
        .ok_or_else(|| Error::Shape(format!("{what}: {rows}×{cols} overflows")))
}

/// `rows()`, `cols()` and `shape()`, the same for the three matrix types
/// (each holds `rows` and `cols`).
macro_rules! shape_accessors {
    ($($matrix:ty),*) => {$(
        impl<T: DeviceType> $matrix {
            /// Rows.
            pub fn rows(&self) -> usize {
                self.rows
            }
            /// Columns.
            pub fn cols(&self) -> usize {
                self.cols
            }
            /// `(rows, cols)`.
            pub fn shape(&self) -> (usize, usize) {
                (self.rows, self.cols)
            }
        }
    )*};
}

shape_accessors!(Matrix<T>, MatrixView<'_, T>, MatrixViewMut<'_, T>);

impl<T: DeviceType> Matrix<T> {
    /// Uploads `host` (row-major, `rows·cols` elements).
    pub fn from_host(gpu: &Gpu, rows: usize, cols: usize, host: &[T]) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Error::check_len("host matrix data", len, host.len())?;
        Ok(Matrix {
            rows,
            cols,
            data: DeviceBuffer::from_host(gpu, host)?,
        })
    }

    /// A matrix of zeros.
    pub fn zeros(gpu: &Gpu, rows: usize, cols: usize) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Ok(Matrix {
            rows,
            cols,
            data: DeviceBuffer::zeros(gpu, len)?,
        })
    }

    /// A matrix filled with [`DeviceType::poison`] (for tests and benchmarks).
    pub fn poisoned(gpu: &Gpu, rows: usize, cols: usize) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Ok(Matrix {
            rows,
            cols,
            data: DeviceBuffer::poisoned(gpu, len)?,
        })
    }

    /// Wraps a buffer of exactly `rows·cols` elements.
    pub fn from_buffer(rows: usize, cols: usize, data: DeviceBuffer<T>) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Error::check_len("matrix buffer", len, data.len())?;
        Ok(Matrix { rows, cols, data })
    }

    /// The buffer behind the matrix.
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        &self.data
    }
    /// Gives the buffer back.
    pub fn into_buffer(self) -> DeviceBuffer<T> {
        self.data
    }
    /// A read-only view.
    pub fn view(&self) -> MatrixView<'_, T> {
        MatrixView {
            rows: self.rows,
            cols: self.cols,
            data: self.data.view(),
        }
    }
    /// A writable view.
    pub fn view_mut(&mut self) -> MatrixViewMut<'_, T> {
        MatrixViewMut {
            rows: self.rows,
            cols: self.cols,
            data: self.data.view_mut(),
        }
    }
    /// Downloads the matrix, row-major (waits for the stream).
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.data.to_host(gpu)
    }
}

impl<'a, T: DeviceType> MatrixView<'a, T> {
    /// Views `data` (exactly `rows·cols` elements) as a matrix.
    pub fn new(rows: usize, cols: usize, data: DeviceView<'a, T>) -> Result<Self> {
        let len = check_shape::<T>("matrix view", rows, cols)?;
        Error::check_len("matrix view data", len, data.len())?;
        Ok(MatrixView { rows, cols, data })
    }
    /// The elements, row-major.
    pub fn data(&self) -> DeviceView<'a, T> {
        self.data
    }
}

impl<'a, T: DeviceType> MatrixViewMut<'a, T> {
    /// Views `data` (exactly `rows·cols` elements) as a writable matrix.
    pub fn new(rows: usize, cols: usize, data: DeviceViewMut<'a, T>) -> Result<Self> {
        let len = check_shape::<T>("matrix view", rows, cols)?;
        Error::check_len("matrix view data", len, data.len())?;
        Ok(MatrixViewMut { rows, cols, data })
    }
    /// A read-only view of the same matrix.
    pub fn as_view(&self) -> MatrixView<'_, T> {
        MatrixView {
            rows: self.rows,
            cols: self.cols,
            data: self.data.as_view(),
        }
    }
    /// The elements, row-major, writable.
    pub fn data_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.data.reborrow()
    }
}

impl<'a, T: DeviceType> From<&'a Matrix<T>> for MatrixView<'a, T> {
    fn from(m: &'a Matrix<T>) -> Self {
        m.view()
    }
}
impl<'a, T: DeviceType> From<&'a mut Matrix<T>> for MatrixViewMut<'a, T> {
    fn from(m: &'a mut Matrix<T>) -> Self {
        m.view_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        assert_eq!(check_shape::<f32>("m", 3, 4).unwrap(), 12);
        assert!(check_shape::<f32>("m", 0, 4).is_err());
        assert!(check_shape::<f32>("m", 4, 0).is_err());
        assert!(check_shape::<f64>("m", usize::MAX / 2, 3).is_err());
    }
}
