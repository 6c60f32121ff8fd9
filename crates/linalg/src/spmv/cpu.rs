//! The CPU side of SpMV: [`HostCsr`], a CSR matrix in host memory (what the
//! Matrix Market reader and the generators build, and what
//! [`HostCsr::upload`] sends to the device), and the reference
//! [`HostCsr::spmv`] every GPU method is compared with
//! (`SpmvAlgorithm::Cpu`).

use gpu_core::{Error, Gpu, Result};

use super::csr::{validate_csr, CsrMatrix};
use super::SpmvElement;

/// A CSR matrix in host memory: row `r` holds `columns[offsets[r] ..
/// offsets[r + 1]]` and the same range of `values`.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCsr<T> {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows + 1` row offsets, from 0 to nnz.
    pub offsets: Vec<u64>,
    /// Column index of each stored entry.
    pub columns: Vec<i32>,
    /// Value of each stored entry.
    pub values: Vec<T>,
}

impl<T: SpmvElement> HostCsr<T> {
    /// Stored entries.
    ///
    /// ```
    /// let a = linalg::spmv::HostCsr { rows: 1, cols: 2, offsets: vec![0, 2], columns: vec![0, 1], values: vec![1.0f32, 2.0] };
    /// assert_eq!(a.nnz(), 2);
    /// ```
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// [`validate_csr`] on this matrix.
    ///
    /// ```
    /// let a = linalg::spmv::HostCsr { rows: 1, cols: 2, offsets: vec![0, 1], columns: vec![2], values: vec![1.0f32] };
    /// assert!(a.validate().is_err()); // column 2 of 2
    /// ```
    pub fn validate(&self) -> Result<()> {
        validate_csr(
            self.rows,
            self.cols,
            &self.offsets,
            &self.columns,
            self.values.len(),
        )
    }

    /// The reference product: `y = α·A·x + β·y`, each row summed left to
    /// right in `T` (y is not read when β = 0). Checks the matrix and the
    /// lengths of x (cols) and y (rows) first.
    ///
    /// ```
    /// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    /// let a = linalg::spmv::HostCsr { rows: 3, cols: 3, offsets: vec![0, 2, 2, 3], columns: vec![0, 2, 1], values: vec![1.0f64, 2.0, 3.0] };
    /// let mut y = vec![1.0; 3];
    /// a.spmv(&[1.0, 2.0, 3.0], 2.0, 1.0, &mut y)?;
    /// assert_eq!(y, vec![15.0, 1.0, 13.0]);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn spmv(&self, x: &[T], alpha: T, beta: T, y: &mut [T]) -> Result<()> {
        self.validate()?;
        Error::check_len("x (cols)", self.cols, x.len())?;
        Error::check_len("y (rows)", self.rows, y.len())?;
        for (row, out) in y.iter_mut().enumerate() {
            let (begin, end) = (self.offsets[row] as usize, self.offsets[row + 1] as usize);
            let mut sum = T::zero();
            for k in begin..end {
                sum = sum + self.values[k] * x[self.columns[k] as usize];
            }
            *out = if beta == T::zero() {
                alpha * sum
            } else {
                alpha * sum + beta * *out
            };
        }
        Ok(())
    }

    /// The matrix as a dense row-major `rows × cols` array (duplicates
    /// summed), for tests of small matrices.
    ///
    /// ```
    /// let a = linalg::spmv::HostCsr { rows: 1, cols: 2, offsets: vec![0, 2], columns: vec![1, 1], values: vec![1.0f32, 2.0] };
    /// assert_eq!(a.to_dense()?, vec![0.0, 3.0]);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn to_dense(&self) -> Result<Vec<T>> {
        self.validate()?;
        let len = self
            .rows
            .checked_mul(self.cols)
            .ok_or_else(|| Error::invalid("shape", "rows · cols overflows"))?;
        let mut dense = vec![T::zero(); len];
        for row in 0..self.rows {
            for k in self.offsets[row] as usize..self.offsets[row + 1] as usize {
                let cell = &mut dense[row * self.cols + self.columns[k] as usize];
                *cell = *cell + self.values[k];
            }
        }
        Ok(dense)
    }

    /// Uploads the matrix ([`CsrMatrix::from_host`], validated).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::HostCsr { rows: 1, cols: 1, offsets: vec![0, 1], columns: vec![0], values: vec![2.0f32] };
    /// assert_eq!(a.upload(&gpu)?.nnz(), 1);
    /// # Ok(()) }
    /// ```
    pub fn upload(&self, gpu: &Gpu) -> Result<CsrMatrix<T>> {
        CsrMatrix::from_host(
            gpu,
            self.rows,
            self.cols,
            &self.offsets,
            &self.columns,
            &self.values,
        )
    }
}

/// Dense `y = α·A·x + β·y` of a row-major `rows × cols` matrix, the check
/// of the CSR reference in tests.
///
/// ```
/// let mut y = vec![0.0f32; 2];
/// linalg::spmv::dense_matvec(&[1.0, 2.0, 3.0, 4.0], 2, 2, &[1.0, 1.0], 1.0, 0.0, &mut y)?;
/// assert_eq!(y, vec![3.0, 7.0]);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn dense_matvec<T: SpmvElement>(
    a: &[T],
    rows: usize,
    cols: usize,
    x: &[T],
    alpha: T,
    beta: T,
    y: &mut [T],
) -> Result<()> {
    Error::check_len("a (rows · cols)", rows.saturating_mul(cols), a.len())?;
    Error::check_len("x (cols)", cols, x.len())?;
    Error::check_len("y (rows)", rows, y.len())?;
    for (row, out) in y.iter_mut().enumerate() {
        let mut sum = T::zero();
        for col in 0..cols {
            sum = sum + a[row * cols + col] * x[col];
        }
        *out = if beta == T::zero() {
            alpha * sum
        } else {
            alpha * sum + beta * *out
        };
    }
    Ok(())
}
