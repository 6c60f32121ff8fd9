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
///
/// ```
/// use linalg::check_shape;
/// assert_eq!(check_shape::<f32>("A", 3, 4)?, 12);
/// assert!(check_shape::<f32>("A", 0, 4).is_err());
/// assert!(check_shape::<f64>("A", usize::MAX / 2, 3).is_err()); // overflows
/// # Ok::<(), gpu_core::Error>(())
/// ```
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
            ///
            /// ```no_run
            /// use gpu_core::Gpu;
            /// use linalg::Matrix;
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let a = Matrix::<f32>::zeros(&gpu, 2, 3)?;
            /// assert_eq!((a.rows(), a.cols(), a.shape()), (2, 3, (2, 3)));
            /// assert_eq!(a.view().shape(), (2, 3));
            /// # Ok(()) }
            /// ```
            pub fn rows(&self) -> usize {
                self.rows
            }
            /// Columns.
            ///
            /// ```no_run
            /// use gpu_core::Gpu;
            /// use linalg::Matrix;
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let a = Matrix::<f32>::zeros(&gpu, 2, 3)?;
            /// assert_eq!((a.rows(), a.cols(), a.shape()), (2, 3, (2, 3)));
            /// assert_eq!(a.view().shape(), (2, 3));
            /// # Ok(()) }
            /// ```
            pub fn cols(&self) -> usize {
                self.cols
            }
            /// `(rows, cols)`.
            ///
            /// ```no_run
            /// use gpu_core::Gpu;
            /// use linalg::Matrix;
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let a = Matrix::<f32>::zeros(&gpu, 2, 3)?;
            /// assert_eq!((a.rows(), a.cols(), a.shape()), (2, 3, (2, 3)));
            /// assert_eq!(a.view().shape(), (2, 3));
            /// # Ok(()) }
            /// ```
            pub fn shape(&self) -> (usize, usize) {
                (self.rows, self.cols)
            }
        }
    )*};
}

shape_accessors!(Matrix<T>, MatrixView<'_, T>, MatrixViewMut<'_, T>);

impl<T: DeviceType> Matrix<T> {
    /// Uploads `host` (row-major, `rows·cols` elements).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 2, 3, &[1i32, 2, 3, 4, 5, 6])?; // row-major
    /// assert_eq!(a.to_host(&gpu)?, vec![1, 2, 3, 4, 5, 6]);
    /// assert!(Matrix::from_host(&gpu, 2, 2, &[1i32, 2, 3]).is_err()); // 4 elements needed
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::<f64>::zeros(&gpu, 4, 4)?;
    /// assert_eq!(a.to_host(&gpu)?, vec![0.0; 16]);
    /// # Ok(()) }
    /// ```
    pub fn zeros(gpu: &Gpu, rows: usize, cols: usize) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Ok(Matrix {
            rows,
            cols,
            data: DeviceBuffer::zeros(gpu, len)?,
        })
    }

    /// A matrix filled with [`DeviceType::poison`] (for tests and benchmarks).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// use gpu_core::DeviceType;
    /// let out = Matrix::<u8>::poisoned(&gpu, 2, 2)?; // an output to write into in a test
    /// assert_eq!(out.to_host(&gpu)?, vec![u8::poison(); 4]);
    /// # Ok(()) }
    /// ```
    pub fn poisoned(gpu: &Gpu, rows: usize, cols: usize) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Ok(Matrix {
            rows,
            cols,
            data: DeviceBuffer::poisoned(gpu, len)?,
        })
    }

    /// Wraps a buffer of exactly `rows·cols` elements.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = gpu_core::DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0, 3.0, 4.0])?;
    /// let a = Matrix::from_buffer(2, 2, buffer)?;
    /// assert_eq!(a.shape(), (2, 2));
    /// # Ok(()) }
    /// ```
    pub fn from_buffer(rows: usize, cols: usize, data: DeviceBuffer<T>) -> Result<Self> {
        let len = check_shape::<T>("matrix", rows, cols)?;
        Error::check_len("matrix buffer", len, data.len())?;
        Ok(Matrix { rows, cols, data })
    }

    /// The buffer behind the matrix.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::<i32>::zeros(&gpu, 2, 3)?;
    /// assert_eq!(a.buffer().len(), 6);
    /// # Ok(()) }
    /// ```
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        &self.data
    }
    /// Gives the buffer back.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 1, 3, &[1u32, 2, 3])?;
    /// let buffer = a.into_buffer(); // the same memory, as a flat buffer
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn into_buffer(self) -> DeviceBuffer<T> {
        self.data
    }
    /// A read-only view.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 2, 2, &[1.0f32, 2.0, 3.0, 4.0])?;
    /// let t = linalg::transpose_new(&gpu, a.view(), linalg::TransposeAlgorithm::Tuned)?; // inputs take views
    /// assert_eq!(t.to_host(&gpu)?, vec![1.0, 3.0, 2.0, 4.0]);
    /// # Ok(()) }
    /// ```
    pub fn view(&self) -> MatrixView<'_, T> {
        MatrixView {
            rows: self.rows,
            cols: self.cols,
            data: self.data.view(),
        }
    }
    /// A writable view.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 2, 2, &[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut t = Matrix::<f32>::zeros(&gpu, 2, 2)?;
    /// linalg::transpose(&gpu, a.view(), t.view_mut(), linalg::TransposeAlgorithm::Naive)?; // outputs take mutable views
    /// assert_eq!(t.to_host(&gpu)?, vec![1.0, 3.0, 2.0, 4.0]);
    /// # Ok(()) }
    /// ```
    pub fn view_mut(&mut self) -> MatrixViewMut<'_, T> {
        MatrixViewMut {
            rows: self.rows,
            cols: self.cols,
            data: self.data.view_mut(),
        }
    }
    /// Downloads the matrix, row-major (waits for the stream).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 2, 2, &[5i32, 6, 7, 8])?;
    /// assert_eq!(a.to_host(&gpu)?, vec![5, 6, 7, 8]);
    /// # Ok(()) }
    /// ```
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.data.to_host(gpu)
    }
}

impl<'a, T: DeviceType> MatrixView<'a, T> {
    /// Views `data` (exactly `rows·cols` elements) as a matrix.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// use linalg::MatrixView;
    /// let buffer = gpu_core::DeviceBuffer::from_host(&gpu, &[0.0f32; 12])?;
    /// let top = MatrixView::new(2, 3, buffer.slice(..6)?)?; // the first half of a caller's buffer as 2 × 3
    /// assert_eq!(top.shape(), (2, 3));
    /// assert!(MatrixView::new(2, 4, buffer.slice(..6)?).is_err()); // 8 elements needed
    /// # Ok(()) }
    /// ```
    pub fn new(rows: usize, cols: usize, data: DeviceView<'a, T>) -> Result<Self> {
        let len = check_shape::<T>("matrix view", rows, cols)?;
        Error::check_len("matrix view data", len, data.len())?;
        Ok(MatrixView { rows, cols, data })
    }
    /// The elements, row-major.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = Matrix::from_host(&gpu, 2, 2, &[1i32, 2, 3, 4])?;
    /// let flat = a.view().data(); // the elements, row-major
    /// assert_eq!(flat.slice(2..)?.to_host(&gpu)?, vec![3, 4]); // the second row
    /// # Ok(()) }
    /// ```
    pub fn data(&self) -> DeviceView<'a, T> {
        self.data
    }
}

impl<'a, T: DeviceType> MatrixViewMut<'a, T> {
    /// Views `data` (exactly `rows·cols` elements) as a writable matrix.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// use linalg::MatrixViewMut;
    /// let mut buffer = gpu_core::DeviceBuffer::<f32>::zeros(&gpu, 12)?;
    /// let bottom = MatrixViewMut::new(2, 3, buffer.slice_mut(6..)?)?; // the second half as 2 × 3
    /// let a = Matrix::from_host(&gpu, 3, 2, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// linalg::transpose(&gpu, a.view(), bottom, linalg::TransposeAlgorithm::Tuned)?;
    /// # Ok(()) }
    /// ```
    pub fn new(rows: usize, cols: usize, data: DeviceViewMut<'a, T>) -> Result<Self> {
        let len = check_shape::<T>("matrix view", rows, cols)?;
        Error::check_len("matrix view data", len, data.len())?;
        Ok(MatrixViewMut { rows, cols, data })
    }
    /// A read-only view of the same matrix.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut a = Matrix::<i32>::zeros(&gpu, 2, 2)?;
    /// let out = a.view_mut();
    /// assert_eq!(out.as_view().shape(), (2, 2));
    /// # Ok(()) }
    /// ```
    pub fn as_view(&self) -> MatrixView<'_, T> {
        MatrixView {
            rows: self.rows,
            cols: self.cols,
            data: self.data.as_view(),
        }
    }
    /// The elements, row-major, writable.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::Matrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut a = Matrix::<i32>::zeros(&gpu, 2, 2)?;
    /// let mut out = a.view_mut();
    /// out.data_mut().slice_mut(2..)?.fill(&gpu, 1)?; // the second row
    /// assert_eq!(a.to_host(&gpu)?, vec![0, 0, 1, 1]);
    /// # Ok(()) }
    /// ```
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
