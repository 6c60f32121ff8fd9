//! The transpose dispatch: checks a call, maps (algorithm, policy) to an
//! entry and a grid, finds the kernel in the context's store and launches
//! it once.

use gpu_core::{DeviceType, Error, Gpu, KernelArgs, LaunchConfig, Result};

use super::algorithm::{check_transpose_shapes, TransposeAlgorithm, TransposeOptions};
use super::policy::TransposePolicy;
use super::{module, naive, tiled, tuned};
use crate::matrix::{MatrixView, MatrixViewMut};

/// The entry base name and launch shape of `algorithm` over a `rows × cols`
/// input (`policy` shapes Tuned only). Pure: the arithmetic tested on the
/// host.
pub(crate) fn plan(
    algorithm: TransposeAlgorithm,
    policy: &TransposePolicy,
    rows: u64,
    cols: u64,
) -> Result<(String, LaunchConfig)> {
    Ok(match algorithm {
        TransposeAlgorithm::Naive => (naive::KERNEL.to_owned(), naive::config(rows, cols)?),
        TransposeAlgorithm::Tiled => (tiled::KERNEL.to_owned(), tiled::config(rows, cols)?),
        TransposeAlgorithm::TiledPadded => {
            (tiled::KERNEL_PADDED.to_owned(), tiled::config(rows, cols)?)
        }
        TransposeAlgorithm::Tuned => (
            tuned::kernel_name(policy.block_rows),
            tuned::config(rows, cols, policy)?,
        ),
    })
}

/// `output = inputᵀ` as `options` asks (see [`crate::transpose_with`]).
pub(crate) fn transpose<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    mut output: MatrixViewMut<'_, T>,
    options: &TransposeOptions,
) -> Result<()> {
    options.validate()?;
    check_transpose_shapes(input.shape(), output.shape(), T::BYTES)?;
    let mut out = output.data_mut();
    if input.data().overlaps(out.device_ptr(), out.bytes()) {
        return Err(Error::invalid(
            "output",
            "the output overlaps the input (transpose is not in place)",
        ));
    }
    let policy = options
        .policy
        .unwrap_or_else(|| TransposePolicy::for_device(gpu.info()));
    let (rows, cols) = (input.rows() as u64, input.cols() as u64);
    let (base, config) = plan(options.algorithm, &policy, rows, cols)?;
    let kernel = module::kernel(gpu, T::BYTES, &base)?;
    let mut args = KernelArgs::new();
    args.input(&input.data())
        .output(&mut out)
        .scalar(rows)
        .scalar(cols);
    // SAFETY: every transpose entry is (const E* in, E* out, u64 rows, u64
    // cols) with E the same size as T; in holds rows·cols elements (the
    // view's shape was checked at construction), out rows·cols too (its
    // shape is cols × rows, checked above); the kernels touch only
    // in[r·cols + c] and out[c·rows + r] for r < rows, c < cols; the block
    // shape in `config` is the one the entry's kernel assumes (`plan`
    // pairs them).
    unsafe { gpu.launch(&kernel, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_pairs_each_entry_with_its_block() {
        let policy = TransposePolicy::DEFAULT;
        let (name, c) = plan(TransposeAlgorithm::Naive, &policy, 1000, 1000).unwrap();
        assert_eq!(
            (name.as_str(), c.block, c.grid),
            ("transpose_naive", (32, 8, 1), (32, 125, 1))
        );
        let (name, c) = plan(TransposeAlgorithm::Tiled, &policy, 33, 31).unwrap();
        assert_eq!(
            (name.as_str(), c.block, c.grid),
            ("transpose_tiled", (32, 32, 1), (1, 2, 1))
        );
        let (name, _) = plan(TransposeAlgorithm::TiledPadded, &policy, 33, 31).unwrap();
        assert_eq!(name, "transpose_tiled_padded");
        for block_rows in super::super::policy::TUNABLE_BLOCK_ROWS {
            let policy = TransposePolicy::new(block_rows).unwrap();
            let (name, c) = plan(TransposeAlgorithm::Tuned, &policy, 16384, 16384).unwrap();
            assert_eq!(name, format!("transpose_tuned_rows{block_rows}"));
            assert_eq!(c.block, (32, block_rows, 1));
            // Every thread covers 32 / block_rows rows: one block per tile.
            assert_eq!(c.grid, (512, 512, 1));
        }
    }
}
