//! The transpose dispatch: checks a call, maps (algorithm, policy) to an
//! entry and a grid, finds the kernel in the context's store and launches
//! it once.

use gpu_core::{DeviceType, Error, Gpu, KernelArgs, LaunchConfig, Result};

use super::algorithm::{check_transpose_shapes, TransposeAlgorithm, TransposeOptions};
use super::policy::TransposePolicy;
use super::{module, naive, tiled, tuned};
use crate::matrix::{MatrixView, MatrixViewMut};

/// Where a call's buffers start (device addresses): the vector kernel
/// needs both on a 16-byte boundary.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Addresses {
    pub input: u64,
    pub output: u64,
}

/// The entry base name and launch shape of `algorithm` over a `rows × cols`
/// input of `elem_bytes`-byte elements (`policy` shapes Tuned only; Tuned
/// takes the vector kernel where [`tuned::vector_tile`] has one, else the
/// tall kernel where [`tuned::tall_applies`], else the scalar tile). Pure:
/// the arithmetic tested on the host.
pub(crate) fn plan(
    algorithm: TransposeAlgorithm,
    policy: &TransposePolicy,
    rows: u64,
    cols: u64,
    elem_bytes: usize,
    at: Addresses,
) -> Result<(String, LaunchConfig)> {
    Ok(match algorithm {
        TransposeAlgorithm::Naive => (naive::KERNEL.to_owned(), naive::config(rows, cols)?),
        TransposeAlgorithm::Tiled => (tiled::KERNEL.to_owned(), tiled::config(rows, cols)?),
        TransposeAlgorithm::TiledPadded => {
            (tiled::KERNEL_PADDED.to_owned(), tiled::config(rows, cols)?)
        }
        TransposeAlgorithm::Tuned => {
            if let Some(tile) =
                tuned::vector_tile(policy, elem_bytes, rows, cols, at.input, at.output)
            {
                (
                    tuned::vector_kernel_name(policy.order),
                    tuned::vector_config(rows, cols, tile, policy.order)?,
                )
            } else if tuned::tall_applies(policy, elem_bytes, rows, cols) {
                (
                    tuned::tall_kernel_name(policy.order),
                    tuned::tall_config(rows, cols, elem_bytes, policy.order)?,
                )
            } else {
                (
                    tuned::kernel_name(policy),
                    tuned::config(rows, cols, policy)?,
                )
            }
        }
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
    let at = Addresses {
        input: input.data().device_ptr(),
        output: out.device_ptr(),
    };
    let (base, config) = plan(options.algorithm, &policy, rows, cols, T::BYTES, at)?;
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
    // pairs them, with the tall entry's dynamic shared memory; the vector
    // entry only where rows and cols are whole vectors and both buffers
    // 16-byte aligned, checked by `plan`).
    unsafe { gpu.launch(&kernel, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both buffers on 16-byte boundaries (the vector kernel may run).
    const ALIGNED: Addresses = Addresses {
        input: 0,
        output: 1 << 30,
    };

    #[test]
    fn plan_pairs_each_entry_with_its_block() {
        let policy = TransposePolicy::DEFAULT;
        let at = ALIGNED;
        let plan = |algorithm, policy: &TransposePolicy, rows, cols| {
            plan(algorithm, policy, rows, cols, 4, at)
        };
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
        for (tile, block_rows) in super::super::policy::TUNABLE_SHAPES {
            let policy = TransposePolicy::new(tile, block_rows).unwrap();
            let (name, c) = plan(TransposeAlgorithm::Tuned, &policy, 16384, 16384).unwrap();
            assert_eq!(
                name,
                format!("transpose_tuned_t{tile}_rows{block_rows}_down")
            );
            assert_eq!(c.block, (tile, block_rows, 1));
            // Every thread covers tile / block_rows rows: one block per tile.
            assert_eq!(c.grid, (16384 / tile, 16384 / tile, 1));
        }
    }

    #[test]
    fn narrow_elements_take_vectors_where_the_call_allows() {
        let policy = TransposePolicy::DEFAULT;
        let aligned = ALIGNED;
        let (name, c) = plan(TransposeAlgorithm::Tuned, &policy, 32768, 32768, 1, aligned).unwrap();
        assert_eq!(
            (name.as_str(), c.block, c.grid),
            ("transpose_vector_down", (32, 8, 1), (256, 256, 1))
        );
        let (name, c) = plan(TransposeAlgorithm::Tuned, &policy, 1024, 2048, 2, aligned).unwrap();
        assert_eq!(
            (name.as_str(), c.grid),
            ("transpose_vector_down", (16, 32, 1))
        );
        // An odd column count, a misaligned view, or no vectors asked: the
        // scalar tile.
        let (name, _) = plan(TransposeAlgorithm::Tuned, &policy, 1024, 1023, 1, aligned).unwrap();
        assert_eq!(name, "transpose_tuned_t64_rows8_down");
        let odd = Addresses {
            input: 3,
            output: 1 << 30,
        };
        let (name, _) = plan(TransposeAlgorithm::Tuned, &policy, 1024, 1024, 1, odd).unwrap();
        assert_eq!(name, "transpose_tuned_t64_rows8_down");
        let scalar = TransposePolicy {
            vectors: false,
            ..policy
        };
        let (name, _) = plan(TransposeAlgorithm::Tuned, &scalar, 1024, 1024, 2, aligned).unwrap();
        assert_eq!(name, "transpose_tuned_t64_rows8_down");
        // Other algorithms never take it.
        let (name, _) = plan(
            TransposeAlgorithm::TiledPadded,
            &policy,
            1024,
            1024,
            1,
            aligned,
        )
        .unwrap();
        assert_eq!(name, "transpose_tiled_padded");
    }

    #[test]
    fn rows_off_256_byte_blocks_take_the_tall_tile() {
        let policy = TransposePolicy::DEFAULT;
        let aligned = ALIGNED;
        let tuned = |policy: &TransposePolicy, rows, cols, elem_bytes| {
            plan(
                TransposeAlgorithm::Tuned,
                policy,
                rows,
                cols,
                elem_bytes,
                aligned,
            )
            .unwrap()
        };
        let (name, c) = tuned(&policy, 9973, 10007, 4);
        assert_eq!(
            (name.as_str(), c.block, c.grid, c.shared_bytes),
            (
                "transpose_tall_down",
                (64, 8, 1),
                (78, 157, 1),
                128 * 65 * 4
            )
        );
        let across = TransposePolicy {
            order: super::super::policy::TileOrder::AcrossRows,
            ..policy
        };
        assert_eq!(tuned(&across, 9973, 10007, 2).0, "transpose_tall_across");
        assert_eq!(tuned(&policy, 10000, 10000, 4).0, "transpose_tall_down");
        // Whole 256-byte rows, 1- and 8-byte elements, or a policy without
        // it: the square tile.
        assert_eq!(
            tuned(&policy, 8192, 16384, 4).0,
            "transpose_tuned_t64_rows8_down"
        );
        assert_eq!(
            tuned(&policy, 9973, 10007, 8).0,
            "transpose_tuned_t64_rows8_down"
        );
        assert_eq!(
            tuned(&policy, 9973, 10007, 1).0,
            "transpose_tuned_t64_rows8_down"
        );
        let square = TransposePolicy {
            tall_from_elements: None,
            ..policy
        };
        assert_eq!(
            tuned(&square, 9973, 10007, 4).0,
            "transpose_tuned_t64_rows8_down"
        );
        // Vectors first: 2-byte elements on whole vectors (8 halfwords) but
        // not whole 256-byte blocks take the vector kernel.
        assert_eq!(tuned(&policy, 3000, 3000, 2).0, "transpose_vector_down");
        let (name, _) = plan(
            TransposeAlgorithm::Tuned,
            &policy,
            3000,
            3000,
            2,
            Addresses {
                input: 2,
                output: 1 << 30,
            },
        )
        .unwrap();
        assert_eq!(name, "transpose_tall_down");
        // Fewer than 2^23 elements: the square tile.
        assert_eq!(
            tuned(&policy, 2000, 3001, 4).0,
            "transpose_tuned_t64_rows8_down"
        );
    }
}
