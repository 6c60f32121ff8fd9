//! `MatvecAlgorithm::Global`: one thread per output element, everything
//! from global memory (the lab's gpu-gm). Kernels in
//! `kernels/cuda/linalg/matvec_global.cu`.
//!
//! - Computes y = A·x (thread r: Σ_c A[r][c]·x[c]) or y = Aᵀ·x (thread c:
//!   Σ_r A[r][c]·x[r]).
//! - Work rows·cols multiply-adds; step complexity cols (A·x) or rows (Aᵀ·x).
//! - Bytes: [`crate::matvec_bytes_moved`] (A once; x re-read per thread from
//!   cache). A·x reads A uncoalesced: a warp touches 32 rows per step, so
//!   each 32-byte sector is fetched for 4 useful bytes unless L1/L2 keep it
//!   until the next 7 steps. Aᵀ·x is coalesced.
//! - One launch, blocks of [`GLOBAL_BLOCK_THREADS`], no shared memory.
//! - Deterministic; not in place.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceView, DeviceViewMut, Gpu, KernelArgs, Result};

use super::algorithm::{MatvecElement, Transpose};
use super::module::{self, GLOBAL_BLOCK_THREADS};
use super::policy::MatvecPolicy;
use crate::matrix::MatrixView;

pub(crate) fn launch<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    op: Transpose,
) -> Result<()> {
    // SAFETY: the Global entries take (const T* a, const T* x, T* y, u64
    // rows, u64 cols), use no shared memory, and index a, x and y only
    // below rows·cols, their reduced length and `outputs`.
    unsafe {
        launch_per_output(
            gpu,
            policy,
            (a, x, y),
            op,
            "matvec_global",
            GLOBAL_BLOCK_THREADS,
            0,
        )
    }
}

/// The launch Global and SharedTiled share: entry `{family}_n` (A·x) or
/// `{family}_t` (Aᵀ·x), one thread per output element in blocks of
/// `block_threads` with `shared_bytes` of dynamic shared memory, arguments
/// `(a, x, y, rows, cols)`. The caller checked the lengths: a has
/// rows·cols elements, x the reduced length, y the outputs.
///
/// # Safety
///
/// 1. Both entries take `(const T* a, const T* x, T* y, u64 rows, u64
///    cols)`.
/// 2. With that block and shared memory they index a, x and y only below
///    those lengths and shared memory only below `shared_bytes`.
pub(super) unsafe fn launch_per_output<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    (a, x, mut y): (MatrixView<'_, T>, DeviceView<'_, T>, DeviceViewMut<'_, T>),
    op: Transpose,
    family: &str,
    block_threads: u32,
    shared_bytes: u32,
) -> Result<()> {
    let (rows, cols) = (a.rows() as u64, a.cols() as u64);
    let a = a.data();
    let (name, outputs) = match op {
        Transpose::No => (format!("{family}_n"), rows),
        Transpose::Yes => (format!("{family}_t"), cols),
    };
    let kernel = module::kernel::<T>(gpu, policy, &name)?;
    // One thread per output element; grid_1d spills into gridDim.y past
    // 2^31 − 1 blocks, and the kernel drops threads past `outputs`.
    let (config, _blocks) = grid_1d(outputs, block_threads, 1, shared_bytes)?;
    let mut args = KernelArgs::new();
    args.input(&a)
        .input(&x)
        .output(&mut y)
        .scalar(rows)
        .scalar(cols);
    // SAFETY: the caller's 1 and 2; `config` has the block and shared
    // memory they were promised for.
    unsafe { gpu.launch(&kernel, config, &args) }
}
