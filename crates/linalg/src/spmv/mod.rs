//! Sparse matrix–vector multiply over CSR: `y = A·x` and `y = α·A·x + β·y`.
//!
//! | method ([`SpmvAlgorithm`]) | how | launches | balanced by |
//! |---|---|---|---|
//! | `Cpu` | the reference loop on the host ([`HostCsr::spmv`]), A, x and y copied | 0 | — |
//! | `Scalar` | one thread per row | 1 | rows (one long row stalls its warp) |
//! | `Vector` | one warp per row, shuffle sum | 1 | rows (short rows idle most lanes) |
//! | `SegmentedScan` | the lesson's: products, row-head flags, a segmented scan, the row ends gathered (`f32` only) | 4 + the scan's | non-zeros |
//! | `MergePath` (default) | Merrill & Garland's merge path over rows and non-zeros: equal shares of rows + nnz per thread, carries fixed up | 3 | rows + non-zeros |
//!
//! Bytes moved, the figure the benchmark's GB/s uses
//! ([`spmv_bytes_moved`]): values and column indices once (8 per non-zero
//! for `f32`), the row offsets, x and y once each. Every method is
//! deterministic (the summation order depends only on the matrix and the
//! method); methods differ from each other and from the CPU in the last
//! bits of floats.
//!
//! Layers: `csr` (the matrix and its checks), `cpu` (host matrix and
//! reference), `matrix_market` (the reader), `module` (kernel sources),
//! one file per method, and the dispatch below.

mod cpu;
mod csr;
pub mod generate;
mod matrix_market;
pub mod merge_path;
mod module;
mod scalar;
mod segmented_scan;
mod vector;

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, Result};

pub use cpu::{dense_matvec, HostCsr};
pub use csr::{validate_csr, CsrMatrix, CsrOffsets, MAX_COLS, OFFSETS_64_FROM};
pub use matrix_market::{
    parse_matrix_market, read_matrix_market, read_matrix_market_file, MatrixMarketError,
    MatrixMarketProblem,
};
pub use module::SpmvOffset;

pub(crate) use module::catalog;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The value types of SpMV: `f32` and `f64`. Sealed, so that every type the
/// API admits has its kernels in the catalog.
pub trait SpmvElement:
    Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + sealed::Sealed
{
}
impl SpmvElement for f32 {}
impl SpmvElement for f64 {}

/// How SpMV is computed. See the module table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SpmvAlgorithm {
    /// The host reference: A, x and y copied to the host, [`HostCsr::spmv`],
    /// y copied back (synchronises).
    Cpu,
    /// One thread per row.
    Scalar,
    /// One warp per row.
    Vector,
    /// The lesson's SpMV by segmented scan (`f32` only: the scan takes
    /// 4-byte values; `f64` is [`Error::Unsupported`]).
    SegmentedScan,
    /// The merge path over rows and non-zeros, balanced by work.
    #[default]
    MergePath,
}

impl SpmvAlgorithm {
    /// Every method, the default last.
    ///
    /// ```
    /// use linalg::spmv::SpmvAlgorithm;
    /// assert_eq!(SpmvAlgorithm::all().last(), Some(&SpmvAlgorithm::MergePath));
    /// ```
    pub fn all() -> [SpmvAlgorithm; 5] {
        [
            SpmvAlgorithm::Cpu,
            SpmvAlgorithm::Scalar,
            SpmvAlgorithm::Vector,
            SpmvAlgorithm::SegmentedScan,
            SpmvAlgorithm::MergePath,
        ]
    }

    /// Whether the method takes values of `T` (SegmentedScan: `f32` only).
    ///
    /// ```
    /// use linalg::spmv::SpmvAlgorithm;
    /// assert!(SpmvAlgorithm::SegmentedScan.supports::<f32>());
    /// assert!(!SpmvAlgorithm::SegmentedScan.supports::<f64>());
    /// ```
    pub fn supports<T: SpmvElement>(self) -> bool {
        self != SpmvAlgorithm::SegmentedScan || T::BYTES == 4
    }
}

/// Bytes an SpMV moves: values and column indices once (`value_bytes + 4`
/// per non-zero), `offset_bytes` per row offset (rows + 1), x (cols) and y
/// (rows) once each at `value_bytes`. For `f32` with 32-bit offsets:
/// 8·nnz + 4·(rows + 1) + 4·rows + 4·cols.
///
/// ```
/// assert_eq!(linalg::spmv::spmv_bytes_moved(4, 5, 10, 4, 4), 8 * 10 + 4 * 5 + 4 * 4 + 4 * 5);
/// ```
pub fn spmv_bytes_moved(
    rows: usize,
    cols: usize,
    nnz: usize,
    value_bytes: usize,
    offset_bytes: usize,
) -> u64 {
    let (rows, cols, nnz) = (rows as u64, cols as u64, nnz as u64);
    let (value_bytes, offset_bytes) = (value_bytes as u64, offset_bytes as u64);
    (value_bytes + 4) * nnz + offset_bytes * (rows + 1) + value_bytes * (rows + cols)
}

/// Checks the vector lengths of an SpMV with an `rows × cols` matrix: x
/// has `cols` elements, y `rows`.
///
/// ```
/// assert!(linalg::spmv::check_spmv_lengths(2, 3, 3, 2).is_ok());
/// assert!(linalg::spmv::check_spmv_lengths(2, 3, 2, 3).is_err());
/// ```
pub fn check_spmv_lengths(rows: usize, cols: usize, x_len: usize, y_len: usize) -> Result<()> {
    Error::check_len("x (cols)", cols, x_len)?;
    Error::check_len("y (rows)", rows, y_len)
}

/// The parts of a matrix a kernel needs, with its offsets' type.
pub(crate) struct CsrParts<'a, T: SpmvElement, O: SpmvOffset> {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub offsets: DeviceView<'a, O>,
    pub columns: DeviceView<'a, i32>,
    pub values: DeviceView<'a, T>,
}

/// `y = α·A·x + β·y` on `gpu`'s stream (y is not read when β = 0).
///
/// Checks first: x has `a.cols()` elements, y `a.rows()`, y overlaps
/// neither x nor the matrix, the method takes `T`; a problem is a typed
/// error and nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::spmv::{CsrMatrix, SpmvAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
/// let a = CsrMatrix::from_host(&gpu, 3, 3, &[0u32, 2, 2, 3], &[0, 2, 1], &[1.0f32, 2.0, 3.0])?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0, 3.0])?;
/// let mut y = DeviceBuffer::from_host(&gpu, &[1.0f32, 1.0, 1.0])?;
/// linalg::spmv::spmv_into(&gpu, &a, x.view(), 2.0, 1.0, y.view_mut(), SpmvAlgorithm::MergePath)?;
/// assert_eq!(y.to_host(&gpu)?, vec![15.0, 1.0, 13.0]);
/// # Ok(()) }
/// ```
pub fn spmv_into<T: SpmvElement>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    y: DeviceViewMut<'_, T>,
    algorithm: SpmvAlgorithm,
) -> Result<()> {
    check_spmv_lengths(a.rows(), a.cols(), x.len(), y.len())?;
    if !algorithm.supports::<T>() {
        return Err(Error::Unsupported(format!(
            "SpMV {algorithm:?} takes f32 values only, not {}",
            T::SUFFIX
        )));
    }
    let y_ptr = y.device_ptr();
    let y_bytes = y.bytes();
    let inputs_overlap = x.overlaps(y_ptr, y_bytes)
        || a.values().overlaps(y_ptr, y_bytes)
        || a.columns().overlaps(y_ptr, y_bytes)
        || match a.offsets() {
            CsrOffsets::U32(offsets) => offsets.view().overlaps(y_ptr, y_bytes),
            CsrOffsets::U64(offsets) => offsets.view().overlaps(y_ptr, y_bytes),
        };
    if inputs_overlap && y_bytes > 0 {
        return Err(Error::invalid("y", "overlaps x or the matrix"));
    }
    if a.rows() == 0 {
        return Ok(());
    }
    match a.offsets() {
        CsrOffsets::U32(offsets) => {
            run(gpu, parts(a, offsets.view()), x, alpha, beta, y, algorithm)
        }
        CsrOffsets::U64(offsets) => {
            run(gpu, parts(a, offsets.view()), x, alpha, beta, y, algorithm)
        }
    }
}

/// `y = A·x` into a new device vector (see [`spmv_into`]).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::spmv::{CsrMatrix, SpmvAlgorithm};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let a = CsrMatrix::from_host(&gpu, 2, 2, &[0u32, 1, 3], &[1, 0, 1], &[2.0f64, 3.0, 4.0])?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.0f64, 1.0])?;
/// let y = linalg::spmv::spmv(&gpu, &a, x.view(), SpmvAlgorithm::default())?;
/// assert_eq!(y.to_host(&gpu)?, vec![2.0, 7.0]);
/// # Ok(()) }
/// ```
pub fn spmv<T: SpmvElement>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    x: DeviceView<'_, T>,
    algorithm: SpmvAlgorithm,
) -> Result<DeviceBuffer<T>> {
    check_spmv_lengths(a.rows(), a.cols(), x.len(), a.rows())?;
    // SAFETY: with β = 0 every method writes every element of y before
    // anything reads it, and no method reads y; on error y is dropped unread.
    let mut y = unsafe { DeviceBuffer::<T>::uninit(gpu, a.rows())? };
    spmv_into(gpu, a, x, T::one(), T::zero(), y.view_mut(), algorithm)?;
    Ok(y)
}

fn parts<'a, T: SpmvElement, O: SpmvOffset>(
    a: &'a CsrMatrix<T>,
    offsets: DeviceView<'a, O>,
) -> CsrParts<'a, T, O> {
    CsrParts {
        rows: a.rows(),
        cols: a.cols(),
        nnz: a.nnz(),
        offsets,
        columns: a.columns(),
        values: a.values(),
    }
}

fn run<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    mut y: DeviceViewMut<'_, T>,
    algorithm: SpmvAlgorithm,
) -> Result<()> {
    match algorithm {
        SpmvAlgorithm::Cpu => {
            let host = HostCsr {
                rows: a.rows,
                cols: a.cols,
                offsets: a
                    .offsets
                    .to_host(gpu)?
                    .into_iter()
                    .map(Into::into)
                    .collect(),
                columns: a.columns.to_host(gpu)?,
                values: a.values.to_host(gpu)?,
            };
            let x = x.to_host(gpu)?;
            let mut out = if beta == T::zero() {
                vec![T::zero(); a.rows]
            } else {
                y.as_view().to_host(gpu)?
            };
            host.spmv(&x, alpha, beta, &mut out)?;
            y.copy_from_host(gpu, &out)
        }
        SpmvAlgorithm::Scalar => scalar::launch(gpu, &a, x, alpha, beta, y),
        SpmvAlgorithm::Vector => vector::launch(gpu, &a, x, alpha, beta, y),
        SpmvAlgorithm::SegmentedScan => segmented_scan::launch(gpu, &a, x, alpha, beta, y),
        SpmvAlgorithm::MergePath => merge_path::launch(gpu, &a, x, alpha, beta, y),
    }
}
