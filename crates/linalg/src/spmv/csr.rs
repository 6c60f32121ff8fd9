//! [`CsrMatrix`]: a sparse matrix in compressed sparse row form on the
//! device, validated when it is built.
//!
//! Row `r` holds the non-zeros `offsets[r]..offsets[r + 1]` of `columns`
//! (`i32`, `0 ≤ c < cols`) and `values`. Columns need not be sorted within a
//! row, and a column may repeat: the products of repeated entries are summed
//! like any other. Row offsets are `u32` while nnz < 2^31 and `u64` past it
//! ([`CsrOffsets`]), chosen by the constructor.

use gpu_core::{DeviceBuffer, DeviceType, DeviceView, Error, Gpu, Result};

use super::SpmvElement;

/// Non-zeros past which the row offsets are stored as `u64` (below it,
/// `u32`: the index width cuSPARSE and PyTorch use by default).
pub const OFFSETS_64_FROM: u64 = 1 << 31;

/// The largest column count: column indices are `i32`.
pub const MAX_COLS: usize = i32::MAX as usize + 1;

/// Row offsets on the device, 32- or 64-bit.
#[derive(Debug)]
pub enum CsrOffsets {
    /// nnz < 2^31.
    U32(DeviceBuffer<u32>),
    /// Any nnz.
    U64(DeviceBuffer<u64>),
}

impl CsrOffsets {
    /// The number of offsets (rows + 1).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// use linalg::spmv::CsrOffsets;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let offsets = CsrOffsets::U32(DeviceBuffer::from_host(&gpu, &[0u32, 2, 3])?);
    /// assert_eq!(offsets.len(), 3);
    /// # Ok(()) }
    /// ```
    #[allow(clippy::len_without_is_empty)] // never empty in a valid matrix
    pub fn len(&self) -> usize {
        match self {
            CsrOffsets::U32(buffer) => buffer.len(),
            CsrOffsets::U64(buffer) => buffer.len(),
        }
    }

    /// The offsets copied to the host, widened to `u64`.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// use linalg::spmv::CsrOffsets;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let offsets = CsrOffsets::U32(DeviceBuffer::from_host(&gpu, &[0u32, 2, 3])?);
    /// assert_eq!(offsets.to_host(&gpu)?, vec![0u64, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<u64>> {
        Ok(match self {
            CsrOffsets::U32(buffer) => buffer.to_host(gpu)?.into_iter().map(u64::from).collect(),
            CsrOffsets::U64(buffer) => buffer.to_host(gpu)?,
        })
    }
}

/// A CSR matrix of `T` (`f32`, `f64`) in device memory, checked on
/// construction: see [`validate_csr`].
#[derive(Debug)]
pub struct CsrMatrix<T: DeviceType> {
    rows: usize,
    cols: usize,
    offsets: CsrOffsets,
    columns: DeviceBuffer<i32>,
    values: DeviceBuffer<T>,
}

/// Checks a CSR description on the host, before anything is uploaded:
/// `rows + 1` offsets, the first 0, none decreasing, the last equal to the
/// number of column indices and of values; every column in `0..cols`;
/// `cols` at most [`MAX_COLS`]. The first problem is returned as a typed
/// [`Error`] naming the row or position.
///
/// ```
/// use linalg::spmv::validate_csr;
/// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
/// assert!(validate_csr(3, 3, &[0u64, 2, 2, 3], &[0, 2, 1], 3).is_ok());
/// assert!(validate_csr(3, 3, &[0u64, 2, 1, 3], &[0, 2, 1], 3).is_err()); // row 1 decreases
/// assert!(validate_csr(3, 3, &[0u64, 2, 2, 3], &[0, 3, 1], 3).is_err()); // column 3 of 3
/// ```
pub fn validate_csr<O: Copy + Into<u64>>(
    rows: usize,
    cols: usize,
    offsets: &[O],
    columns: &[i32],
    values_len: usize,
) -> Result<()> {
    if cols > MAX_COLS {
        return Err(Error::invalid(
            "cols",
            format!("{cols}: column indices are i32, at most {MAX_COLS} columns"),
        ));
    }
    let expected = rows
        .checked_add(1)
        .ok_or_else(|| Error::invalid("rows", "rows + 1 overflows"))?;
    Error::check_len("offsets (rows + 1)", expected, offsets.len())?;
    let first: u64 = offsets[0].into();
    if first != 0 {
        return Err(Error::invalid(
            "offsets",
            format!("offsets[0] is {first}, must be 0"),
        ));
    }
    let mut previous = 0u64;
    for (row, offset) in offsets.iter().enumerate().skip(1) {
        let offset: u64 = (*offset).into();
        if offset < previous {
            return Err(Error::invalid(
                "offsets",
                format!(
                    "row {}: offsets[{row}] = {offset} is below offsets[{}] = {previous}",
                    row - 1,
                    row - 1
                ),
            ));
        }
        previous = offset;
    }
    let nnz = previous;
    if nnz != columns.len() as u64 {
        return Err(Error::invalid(
            "offsets",
            format!(
                "the last offset is {nnz}, but there are {} column indices",
                columns.len()
            ),
        ));
    }
    Error::check_len("values (nnz)", columns.len(), values_len)?;
    if let Some((position, column)) = columns
        .iter()
        .enumerate()
        .find(|(_, &c)| c < 0 || c as u64 >= cols as u64)
    {
        return Err(Error::invalid(
            "columns",
            format!("columns[{position}] = {column} is outside 0..{cols}"),
        ));
    }
    Ok(())
}

impl<T: SpmvElement> CsrMatrix<T> {
    /// Uploads a CSR matrix from host slices after [`validate_csr`]; the
    /// offsets are stored as `u32` while nnz < 2^31, else as `u64`.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::spmv::CsrMatrix;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    /// let a = CsrMatrix::from_host(&gpu, 3, 3, &[0u32, 2, 2, 3], &[0, 2, 1], &[1.0f32, 2.0, 3.0])?;
    /// assert_eq!((a.rows(), a.cols(), a.nnz()), (3, 3, 3));
    /// # Ok(()) }
    /// ```
    pub fn from_host<O: Copy + Into<u64>>(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        offsets: &[O],
        columns: &[i32],
        values: &[T],
    ) -> Result<Self> {
        validate_csr(rows, cols, offsets, columns, values.len())?;
        let nnz = columns.len() as u64;
        let offsets = if nnz < OFFSETS_64_FROM {
            let narrow: Vec<u32> = offsets.iter().map(|&o| o.into() as u32).collect();
            CsrOffsets::U32(DeviceBuffer::from_host(gpu, &narrow)?)
        } else {
            let wide: Vec<u64> = offsets.iter().map(|&o| o.into()).collect();
            CsrOffsets::U64(DeviceBuffer::from_host(gpu, &wide)?)
        };
        Ok(CsrMatrix {
            rows,
            cols,
            offsets,
            columns: DeviceBuffer::from_host(gpu, columns)?,
            values: DeviceBuffer::from_host(gpu, values)?,
        })
    }

    /// A CSR matrix over a caller's device buffers, validated: the offsets
    /// and column indices are copied to the host and checked as
    /// [`validate_csr`] does (a copy of 4 bytes per non-zero and 4 or 8 per
    /// row; [`CsrMatrix::from_device_unchecked`] skips it).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// use linalg::spmv::{CsrMatrix, CsrOffsets};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let offsets = CsrOffsets::U32(DeviceBuffer::from_host(&gpu, &[0u32, 1, 2])?);
    /// let columns = DeviceBuffer::from_host(&gpu, &[1i32, 0])?;
    /// let values = DeviceBuffer::from_host(&gpu, &[5.0f64, 7.0])?;
    /// let a = CsrMatrix::from_device(&gpu, 2, 2, offsets, columns, values)?;
    /// assert_eq!(a.nnz(), 2);
    /// # Ok(()) }
    /// ```
    pub fn from_device(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        offsets: CsrOffsets,
        columns: DeviceBuffer<i32>,
        values: DeviceBuffer<T>,
    ) -> Result<Self> {
        Error::check_len("offsets (rows + 1)", rows.saturating_add(1), offsets.len())?;
        let host_offsets = offsets.to_host(gpu)?;
        let host_columns = columns.to_host(gpu)?;
        validate_csr(rows, cols, &host_offsets, &host_columns, values.len())?;
        // SAFETY: validated just now.
        Ok(unsafe { Self::from_device_unchecked(rows, cols, offsets, columns, values) })
    }

    /// A CSR matrix over a caller's device buffers without reading them.
    ///
    /// # Safety
    ///
    /// The buffers must satisfy [`validate_csr`] for `rows` and `cols`: the
    /// kernels index `columns`, `values` and x by the offsets and column
    /// indices without checking them again, so broken ones read outside
    /// those buffers.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// use linalg::spmv::{CsrMatrix, CsrOffsets};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let offsets = CsrOffsets::U64(DeviceBuffer::from_host(&gpu, &[0u64, 1])?);
    /// let columns = DeviceBuffer::from_host(&gpu, &[0i32])?;
    /// let values = DeviceBuffer::from_host(&gpu, &[2.0f32])?;
    /// // SAFETY: one row, one non-zero in column 0 of 1.
    /// let a = unsafe { CsrMatrix::from_device_unchecked(1, 1, offsets, columns, values) };
    /// assert_eq!(a.nnz(), 1);
    /// # Ok(()) }
    /// ```
    pub unsafe fn from_device_unchecked(
        rows: usize,
        cols: usize,
        offsets: CsrOffsets,
        columns: DeviceBuffer<i32>,
        values: DeviceBuffer<T>,
    ) -> Self {
        CsrMatrix {
            rows,
            cols,
            offsets,
            columns,
            values,
        }
    }

    /// Rows.
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 2, 5, &[0u32, 0, 0], &[], &[] as &[f32])?;
    /// assert_eq!(a.rows(), 2);
    /// # Ok(()) }
    /// ```
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 2, 5, &[0u32, 0, 0], &[], &[] as &[f32])?;
    /// assert_eq!(a.cols(), 5);
    /// # Ok(()) }
    /// ```
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Stored entries (duplicates counted).
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 1, 2, &[0u32, 2], &[1, 1], &[1.0f32, 2.0])?;
    /// assert_eq!(a.nnz(), 2); // column 1 twice: its entry is 3
    /// # Ok(()) }
    /// ```
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The row offsets.
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 1, 2, &[0u32, 1], &[1], &[1.0f32])?;
    /// assert!(matches!(a.offsets(), linalg::spmv::CsrOffsets::U32(_)));
    /// # Ok(()) }
    /// ```
    pub fn offsets(&self) -> &CsrOffsets {
        &self.offsets
    }

    /// The column indices.
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 1, 2, &[0u32, 1], &[1], &[1.0f32])?;
    /// assert_eq!(a.columns().to_host(&gpu)?, vec![1]);
    /// # Ok(()) }
    /// ```
    pub fn columns(&self) -> DeviceView<'_, i32> {
        self.columns.view()
    }

    /// The values.
    ///
    /// ```no_run
    /// # use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// # let gpu = Gpu::new(0)?;
    /// let a = linalg::spmv::CsrMatrix::from_host(&gpu, 1, 2, &[0u32, 1], &[1], &[4.0f32])?;
    /// assert_eq!(a.values().to_host(&gpu)?, vec![4.0]);
    /// # Ok(()) }
    /// ```
    pub fn values(&self) -> DeviceView<'_, T> {
        self.values.view()
    }
}
