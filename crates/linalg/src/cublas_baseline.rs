//! cuBLAS `sgemv` / `dgemv` on the same matrices and vectors as
//! [`crate::matvec`], as the benchmark's baseline (feature `cublas`; the
//! library itself never needs it).
//!
//! cuBLAS is column-major. A row-major `rows × cols` matrix with pitch
//! `cols` is, read column-major, the `cols × rows` matrix `Aᵀ` with
//! `lda = cols`; so row-major `y = A·x` is cuBLAS's `op = T` on that view
//! (m = cols, n = rows), and `y = Aᵀ·x` is `op = N`.
//!
//! libcublas is loaded at run time: [`CublasHandle::new`] checks that it can
//! be loaded and returns [`Error::Unsupported`] otherwise. cuBLAS's own
//! failures are reported as [`Error::Unsupported`] too, with the status.

use cudarc::cublas::{result as cublas_result, sys as cublas_sys, CudaBlas};
use gpu_core::{DeviceView, DeviceViewMut, Error, Gpu, Result};

use crate::matrix::MatrixView;
use crate::matvec::{check_matvec_lengths, Transpose};

/// A cuBLAS handle bound to a [`Gpu`]'s stream (create once, reuse: creating
/// a handle costs milliseconds).
#[derive(Debug)]
pub struct CublasHandle {
    blas: CudaBlas,
    ctx: std::sync::Arc<cudarc::driver::CudaContext>,
}

impl CublasHandle {
    /// Loads cuBLAS and creates a handle on `gpu`'s stream.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::cublas_baseline::CublasHandle;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let handle = CublasHandle::new(&gpu)?; // Error::Unsupported without libcublas
    /// # let _ = handle;
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: is_culib_present only tries to dlopen candidate names.
        if !unsafe { cublas_sys::is_culib_present() } {
            return Err(Error::Unsupported(
                "cuBLAS: libcublas could not be loaded (install the CUDA toolkit or \
                 `pip install nvidia-cublas` and add its lib directory to LD_LIBRARY_PATH)"
                    .to_owned(),
            ));
        }
        let blas = CudaBlas::new(gpu.cudarc_stream().clone()).map_err(cublas_error)?;
        Ok(CublasHandle {
            blas,
            ctx: gpu.cudarc_context().clone(),
        })
    }

    /// Makes the handle's context current on this thread (cuBLAS calls run
    /// in the calling thread's current context).
    fn bind(&self) -> Result<()> {
        Ok(self.ctx.bind_to_thread()?)
    }
}

fn cublas_error(e: cublas_result::CublasError) -> Error {
    Error::Unsupported(format!("cuBLAS call failed: {e}"))
}

/// cuBLAS's (op, m, n, lda) for a row-major `rows × cols` matrix.
fn gemv_shape(
    rows: usize,
    cols: usize,
    op: Transpose,
) -> Result<(cublas_sys::cublasOperation_t, i32, i32, i32)> {
    let m = i32::try_from(cols)
        .map_err(|_| Error::invalid("cols", format!("{cols}: cuBLAS gemv needs a 32-bit size")))?;
    let n = i32::try_from(rows)
        .map_err(|_| Error::invalid("rows", format!("{rows}: cuBLAS gemv needs a 32-bit size")))?;
    let trans = match op {
        Transpose::No => cublas_sys::cublasOperation_t::CUBLAS_OP_T,
        Transpose::Yes => cublas_sys::cublasOperation_t::CUBLAS_OP_N,
    };
    Ok((trans, m, n, m))
}

fn check<T: gpu_core::DeviceType>(
    a: &MatrixView<'_, T>,
    x: &DeviceView<'_, T>,
    y: &DeviceViewMut<'_, T>,
    op: Transpose,
) -> Result<()> {
    check_matvec_lengths(a.rows(), a.cols(), x.len(), y.len(), op)?;
    if a.data().overlaps(y.device_ptr(), y.bytes()) || x.overlaps(y.device_ptr(), y.bytes()) {
        return Err(Error::invalid("y", "the output vector overlaps an input"));
    }
    Ok(())
}

/// `y = A·x` or `y = Aᵀ·x` in `f32` by cuBLAS (`cublasSgemv`), enqueued on
/// the handle's stream.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::cublas_baseline::{sgemv, CublasHandle};
/// use linalg::{Matrix, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3, row-major
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 1.0, 1.0])?;
/// let mut y = DeviceBuffer::<f32>::zeros(&gpu, 2)?;
/// sgemv(&CublasHandle::new(&gpu)?, a.view(), x.view(), y.view_mut(), Transpose::No)?;
/// assert_eq!(y.to_host(&gpu)?, linalg::cpu::matvec(&host, 2, 3, &[1.0, 1.0, 1.0], Transpose::No)?); // [6, 15]
/// # Ok(()) }
/// ```
pub fn sgemv(
    handle: &CublasHandle,
    a: MatrixView<'_, f32>,
    x: DeviceView<'_, f32>,
    mut y: DeviceViewMut<'_, f32>,
    op: Transpose,
) -> Result<()> {
    check(&a, &x, &y, op)?;
    let (trans, m, n, lda) = gemv_shape(a.rows(), a.cols(), op)?;
    handle.bind()?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: the handle is live and bound to the Gpu's stream; a, x and y
    // are device pointers of live views with the lengths cuBLAS reads for
    // (trans, m, n, lda) (checked above: a has m·n elements, x and y the
    // lengths of the op); alpha and beta are host scalars (the handle's
    // default pointer mode) that outlive the call, which only enqueues.
    unsafe {
        cublas_result::sgemv(
            *handle.blas.handle(),
            trans,
            m,
            n,
            &alpha,
            a.data().device_ptr() as *const f32,
            lda,
            x.device_ptr() as *const f32,
            1,
            &beta,
            y.reborrow().device_ptr() as *mut f32,
            1,
        )
    }
    .map_err(cublas_error)
}

/// `y = A·x` or `y = Aᵀ·x` in `f64` by cuBLAS (`cublasDgemv`), enqueued on
/// the handle's stream.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use linalg::cublas_baseline::{dgemv, CublasHandle};
/// use linalg::{Matrix, Transpose};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3, row-major
/// let a = Matrix::from_host(&gpu, 2, 3, &host)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.0f64, 1.0, 1.0])?;
/// let mut y = DeviceBuffer::<f64>::zeros(&gpu, 2)?;
/// dgemv(&CublasHandle::new(&gpu)?, a.view(), x.view(), y.view_mut(), Transpose::No)?;
/// assert_eq!(y.to_host(&gpu)?, linalg::cpu::matvec(&host, 2, 3, &[1.0, 1.0, 1.0], Transpose::No)?); // [6, 15]
/// # Ok(()) }
/// ```
pub fn dgemv(
    handle: &CublasHandle,
    a: MatrixView<'_, f64>,
    x: DeviceView<'_, f64>,
    mut y: DeviceViewMut<'_, f64>,
    op: Transpose,
) -> Result<()> {
    check(&a, &x, &y, op)?;
    let (trans, m, n, lda) = gemv_shape(a.rows(), a.cols(), op)?;
    handle.bind()?;
    let (alpha, beta) = (1.0f64, 0.0f64);
    // SAFETY: as in `sgemv`, for f64.
    unsafe {
        cublas_result::dgemv(
            *handle.blas.handle(),
            trans,
            m,
            n,
            &alpha,
            a.data().device_ptr() as *const f64,
            lda,
            x.device_ptr() as *const f64,
            1,
            &beta,
            y.reborrow().device_ptr() as *mut f64,
            1,
        )
    }
    .map_err(cublas_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_maps_to_column_major_transposed() {
        let (op, m, n, lda) = gemv_shape(3, 5, Transpose::No).unwrap();
        assert_eq!(op, cublas_sys::cublasOperation_t::CUBLAS_OP_T);
        assert_eq!((m, n, lda), (5, 3, 5));
        let (op, ..) = gemv_shape(3, 5, Transpose::Yes).unwrap();
        assert_eq!(op, cublas_sys::cublasOperation_t::CUBLAS_OP_N);
        assert!(gemv_shape(1 << 31, 1, Transpose::No).is_err());
    }
}
