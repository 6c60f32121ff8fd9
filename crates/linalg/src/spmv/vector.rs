//! `SpmvAlgorithm::Vector`: one warp per row
//! (`kernels/cuda/linalg/spmv_vector.cu`).
//!
//! - Computes y[r] = α·Σ vals[k]·x[cols[k]] + β·y[r]: lane l of row r's
//!   warp sums entries l, l + 32, …; five shuffles sum the lanes.
//! - Work nnz multiply-adds + 31 per row; steps ⌈longest row / 32⌉ + 5.
//! - Bytes: [`super::spmv_bytes_moved`], loads coalesced within a row;
//!   rows much shorter than 32 leave most lanes idle.
//! - One launch, 8 rows per block of 256, no shared memory. Deterministic.

use gpu_core::{DeviceView, DeviceViewMut, Error, Gpu, Result};

use super::module::SpmvOffset;
use super::scalar::launch_rows;
use super::{CsrParts, SpmvElement};

pub(crate) fn launch<T: SpmvElement, O: SpmvOffset>(
    gpu: &Gpu,
    a: &CsrParts<'_, T, O>,
    x: DeviceView<'_, T>,
    alpha: T,
    beta: T,
    y: DeviceViewMut<'_, T>,
) -> Result<()> {
    let threads = (a.rows as u64)
        .checked_mul(32)
        .ok_or_else(|| Error::invalid("rows", "32 threads per row overflow 64 bits"))?;
    launch_rows(gpu, a, x, alpha, beta, y, "spmv_vector", threads)
}
