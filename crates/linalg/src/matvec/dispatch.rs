//! The matvec dispatch: checks a call, resolves the policy (the one given,
//! else the device's default) and hands the problem to its algorithm, which
//! sizes the grid and launches (Tuned sizes its grid from the kernel's
//! occupancy, so that arithmetic lives beside it in `tuned`).

use gpu_core::{DeviceView, DeviceViewMut, Gpu, Result};

use super::algorithm::{validate, MatvecAlgorithm, MatvecElement, MatvecOptions};
use super::policy::MatvecPolicy;
use super::{global, tiled, tuned};
use crate::matrix::MatrixView;

/// `y = op(A)·x` as `options` asks (see [`crate::matvec_with`]).
pub(crate) fn matvec<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    mut y: DeviceViewMut<'_, T>,
    options: &MatvecOptions,
) -> Result<()> {
    validate(&a, &x, &y, options)?;
    let policy = options
        .policy
        .unwrap_or_else(|| MatvecPolicy::for_device(gpu.info()));
    let op = options.op;
    match options.algorithm {
        MatvecAlgorithm::Global => global::launch(gpu, &policy, a, x, y.reborrow(), op),
        MatvecAlgorithm::SharedTiled { tile } => {
            tiled::launch(gpu, &policy, a, x, y.reborrow(), op, tile)
        }
        MatvecAlgorithm::Tuned => tuned::launch(gpu, &policy, a, x, y.reborrow(), op),
    }
}
