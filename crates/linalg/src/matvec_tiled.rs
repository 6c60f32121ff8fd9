//! `MatvecAlgorithm::SharedTiled { tile }`: one thread per output element,
//! x staged through shared memory `tile` elements at a time (the lab's
//! gpu-sm). Kernels in `kernels/cuda/matvec_tiled.cu`.
//!
//! - Computes y = A·x or y = Aᵀ·x, one output per thread, the block's
//!   `tile` threads loading one x element each per tile, then accumulating
//!   the tile's products (lab boundary rule: every thread stages x, only
//!   threads with an output accumulate; the last tile is partial).
//! - Work rows·cols multiply-adds; 2·⌈len(x)/tile⌉ barriers per block.
//! - Bytes: [`crate::matvec_bytes_moved`] (x read once per block instead of
//!   once per thread). A·x reads A uncoalesced, as in the lab.
//! - One launch, `tile` threads per block, `tile·sizeof(T)` bytes of
//!   dynamic shared memory; tile reads are broadcasts (no bank conflicts).
//! - Deterministic; not in place.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceView, DeviceViewMut, Gpu, KernelArgs, Result};

use crate::matvec::{kernel, MatvecElement, Transpose};

pub(crate) fn launch<T: MatvecElement>(
    gpu: &Gpu,
    a: DeviceView<'_, T>,
    x: DeviceView<'_, T>,
    mut y: DeviceViewMut<'_, T>,
    (rows, cols): (u64, u64),
    op: Transpose,
    tile: u32,
) -> Result<()> {
    let (name, outputs) = match op {
        Transpose::No => ("matvec_tiled_n", rows),
        Transpose::Yes => ("matvec_tiled_t", cols),
    };
    let (kernel, _) = kernel::<T>(gpu, name, None)?;
    // A block of `tile` threads (validated: 1 to 1024) owns `tile` outputs
    // and stages `tile` elements of x: tile·sizeof(T) ≤ 8 KiB of shared memory.
    let shared_bytes = tile * T::BYTES as u32;
    let (config, _blocks) = grid_1d(outputs, tile, 1, shared_bytes)?;
    let mut args = KernelArgs::new();
    args.input(&a)
        .input(&x)
        .output(&mut y)
        .scalar(rows)
        .scalar(cols);
    // SAFETY: (const T* a, const T* x, T* y, u64 rows, u64 cols) matches the
    // entry; lengths were checked by the caller; the kernel reads x only
    // below its length, A only below rows·cols, writes y only below
    // `outputs`, and uses exactly blockDim.x elements of dynamic shared memory.
    unsafe { gpu.launch(&kernel, config, &args) }
}
