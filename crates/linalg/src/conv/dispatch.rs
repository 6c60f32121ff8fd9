//! The conv dispatch: every check before the device is touched (shapes,
//! options, the policy, shared memory), then (algorithm, policy, K) →
//! which kernel: the register-tile kernel, the strip kernel, the block
//! kernel or a direct method.

use gpu_core::{Error, Gpu, Result};

use super::algorithm::{ConvAlgorithm, ConvOptions, CONV_BLOCKS};
use super::element::ConvElement;
use super::module::ConvCall;
use super::policy::ConvPolicy;
use super::shape::{check_filter_side, output_shape};
use super::{direct, register_tile, strip, tiled};
use crate::matrix::{check_shape, MatrixView, MatrixViewMut};

/// The largest dynamic shared memory per block on the GPUs parprims targets
/// (sm_80: 163 KiB, sm_90: 227 KiB). The device's own limit is checked at
/// launch.
const MAX_SHARED_PER_BLOCK: usize = 227 * 1024;

/// The table's policy for `T`, for checks made without a device.
pub(crate) fn table_policy<T: ConvElement>() -> ConvPolicy {
    ConvPolicy::default_for::<T>((9, 0))
}

/// Dynamic shared memory per block, bytes, that `algorithm` asks for with
/// `block`, filter side `k` and `policy` (TiledHalo's).
pub(crate) fn shared_bytes<T: ConvElement>(
    algorithm: ConvAlgorithm,
    block: (u32, u32),
    k: usize,
    policy: &ConvPolicy,
) -> usize {
    match algorithm {
        ConvAlgorithm::TiledHalo => match (policy.register_tile_for(k), policy.strip_for(k)) {
            (Some(tile), _) => register_tile::register_tile_shared_bytes::<T>(&tile, k),
            (None, Some(strip)) => strip::strip_warps(block, &strip)
                .map(|warps| strip::strip_shared_bytes::<T>(&strip, warps))
                .unwrap_or(0),
            (None, None) => tiled::shared_bytes::<T>(block, k, policy),
        },
        direct => direct::shared_bytes::<T>(direct, k),
    }
}

/// Every check `conv2d` makes before touching the device, with `policy` as
/// TiledHalo's (the one in `options`, else the device's default). Returns
/// the output shape.
pub(crate) fn validate<T: ConvElement>(
    image: (usize, usize),
    filter: (usize, usize),
    output: (usize, usize),
    options: &ConvOptions,
    policy: &ConvPolicy,
) -> Result<(usize, usize)> {
    options.check_policy()?;
    policy.validate::<T>()?;
    check_shape::<T>("image", image.0, image.1)?;
    if filter.0 != filter.1 {
        return Err(Error::Shape(format!(
            "the filter must be square, got {}×{}",
            filter.0, filter.1
        )));
    }
    let k = filter.0;
    check_filter_side(k)?;
    let expected = output_shape(image.0, image.1, k, options.border)?;
    check_shape::<T>("output", expected.0, expected.1)?;
    if output != expected {
        return Err(Error::Shape(format!(
            "output is {}×{}, but a {}×{} image with a {k}×{k} filter and {:?} borders gives {}×{}",
            output.0, output.1, image.0, image.1, options.border, expected.0, expected.1
        )));
    }
    if !CONV_BLOCKS.contains(&options.block) {
        return Err(Error::invalid(
            "block",
            format!(
                "{}×{} is not one of {:?}",
                options.block.0, options.block.1, CONV_BLOCKS
            ),
        ));
    }
    let shared = shared_bytes::<T>(options.algorithm, options.block, k, policy);
    if shared > MAX_SHARED_PER_BLOCK {
        return Err(Error::invalid(
            "block",
            format!(
                "{}×{} with K = {k} needs {shared} bytes of shared memory per block (at most {MAX_SHARED_PER_BLOCK})",
                options.block.0, options.block.1
            ),
        ));
    }
    Ok(expected)
}

/// `conv2d` as `options` asks: validated, then handed to the kernel that
/// serves (algorithm, policy, K).
pub(crate) fn conv2d<T: ConvElement>(
    gpu: &Gpu,
    image: MatrixView<'_, T>,
    filter: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    options: &ConvOptions,
) -> Result<()> {
    let policy = options
        .policy
        .unwrap_or_else(|| ConvPolicy::for_device::<T>(gpu.info()));
    let out_shape = validate::<T>(
        image.shape(),
        filter.shape(),
        output.shape(),
        options,
        &policy,
    )?;
    let k = filter.rows();
    {
        let out_view = output.as_view();
        let out_data = out_view.data();
        let (out_ptr, out_bytes) = (out_data.device_ptr(), out_data.bytes());
        if image.data().overlaps(out_ptr, out_bytes) || filter.data().overlaps(out_ptr, out_bytes) {
            return Err(Error::invalid(
                "output",
                "the output overlaps the image or the filter (conv2d is not in place)",
            ));
        }
    }
    let call = ConvCall {
        image,
        filter,
        output,
        out_shape,
        options,
    };
    let register_tile = match options.algorithm {
        ConvAlgorithm::TiledHalo => policy.register_tile_for(k),
        _ => None,
    };
    if register_tile.is_none() && options.algorithm == ConvAlgorithm::TiledHalo {
        if let Some(strip_policy) = policy.strip_for(k) {
            return strip::launch(gpu, call, &strip_policy);
        }
    }
    let shared = shared_bytes::<T>(options.algorithm, options.block, k, &policy);
    let limit = gpu.info().shared_per_block_optin;
    if shared > limit {
        return Err(Error::Unsupported(format!(
            "{:?} with block {:?} and K = {k} needs {shared} bytes of shared memory; this device allows {limit}",
            options.algorithm, options.block
        )));
    }
    match (options.algorithm, register_tile) {
        (ConvAlgorithm::TiledHalo, Some(tile)) => register_tile::launch(gpu, call, &tile),
        (ConvAlgorithm::TiledHalo, None) => tiled::launch(gpu, &policy, call),
        _ => direct::launch(gpu, &policy, call),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::policy::{StripPolicy, StripStores, STRIP_CANDIDATES};
    use crate::conv::shape::{Border, CONV_MAX_K};

    fn validate_conv<T: ConvElement>(
        image: (usize, usize),
        filter: (usize, usize),
        output: (usize, usize),
        options: &ConvOptions,
    ) -> Result<(usize, usize)> {
        validate::<T>(image, filter, output, options, &table_policy::<T>())
    }

    #[test]
    fn validation_rejects_bad_arguments() {
        let ok = ConvOptions::default();
        assert_eq!(
            validate_conv::<f32>((10, 10), (3, 3), (8, 8), &ok).unwrap(),
            (8, 8)
        );
        let shape_err = |r: Result<(usize, usize)>| matches!(r, Err(Error::Shape(_)));
        let arg_err = |r: Result<(usize, usize)>| matches!(r, Err(Error::InvalidArgument { .. }));
        assert!(arg_err(validate_conv::<f32>((10, 10), (0, 0), (8, 8), &ok)));
        assert!(arg_err(validate_conv::<f32>(
            (40, 40),
            (32, 32),
            (9, 9),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (10, 10),
            (3, 4),
            (8, 8),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (10, 10),
            (3, 3),
            (8, 7),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (2, 10),
            (3, 3),
            (1, 8),
            &ok
        )));
        assert!(shape_err(validate_conv::<f32>(
            (0, 10),
            (3, 3),
            (1, 8),
            &ok
        )));
        let same = ConvOptions {
            border: Border::Same,
            ..ok
        };
        assert!(validate_conv::<i32>((2, 10), (3, 3), (2, 10), &same).is_ok());
        for block in [(4, 4), (64, 16), (16, 8), (0, 0)] {
            let bad = ConvOptions { block, ..ok };
            assert!(arg_err(validate_conv::<f64>(
                (10, 10),
                (3, 3),
                (8, 8),
                &bad
            )));
        }
        for block in CONV_BLOCKS {
            for algorithm in ConvAlgorithm::ALL {
                let o = ConvOptions {
                    block,
                    algorithm,
                    border: Border::Full,
                    ..ok
                };
                assert!(validate_conv::<f64>((1, 1), (31, 31), (31, 31), &o).is_ok());
            }
        }
    }

    #[test]
    fn shared_memory_fits_for_every_supported_case() {
        let f32_table = table_policy::<f32>();
        let f64_table = table_policy::<f64>();
        for block in CONV_BLOCKS {
            for k in 1..=CONV_MAX_K {
                assert!(
                    shared_bytes::<f64>(ConvAlgorithm::TiledHalo, block, k, &f64_table)
                        <= MAX_SHARED_PER_BLOCK
                );
                assert!(
                    shared_bytes::<f32>(ConvAlgorithm::TiledHalo, block, k, &f32_table)
                        <= MAX_SHARED_PER_BLOCK
                );
            }
        }
        // The block kernel, 32×8 threads, K = 3, 4-byte elements:
        // (8·8 + 2) rows × 34 + 9 (i32's table without its strips).
        let i32_block = ConvPolicy {
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..table_policy::<i32>()
        };
        assert_eq!(
            shared_bytes::<i32>(ConvAlgorithm::TiledHalo, (32, 8), 3, &i32_block),
            (66 * 34 + 9) * 4
        );
        // The strips store from registers (no shared memory).
        let strips_only = |table: ConvPolicy| ConvPolicy {
            register_tile: None,
            register_tile_wide: None,
            ..table
        };
        assert_eq!(
            shared_bytes::<i32>(
                ConvAlgorithm::TiledHalo,
                (32, 8),
                3,
                &strips_only(table_policy::<i32>())
            ),
            0
        );
        assert_eq!(
            shared_bytes::<f32>(
                ConvAlgorithm::TiledHalo,
                (32, 8),
                5,
                &strips_only(f32_table)
            ),
            0
        );
        // The table's register tiles, whatever the block: K = 3, 4 rows × 2
        // groups × 4 warps: (16 + 2) rows × (256 + 4) + 3 rows of 8 taps;
        // K = 7, 8 rows × 1 group × 4 warps: (32 + 6) × (128 + 8) + 7 × 8.
        for block in CONV_BLOCKS {
            assert_eq!(
                shared_bytes::<f32>(ConvAlgorithm::TiledHalo, block, 3, &f32_table),
                (18 * 260 + 24) * 4
            );
            assert_eq!(
                shared_bytes::<i32>(ConvAlgorithm::TiledHalo, block, 7, &table_policy::<i32>()),
                (38 * 136 + 56) * 4
            );
        }
        // A staged strip takes 128 elements per warp; K = 8: the block kernel.
        let staged = StripPolicy {
            stores: StripStores::Staged,
            warps: 32,
            ..STRIP_CANDIDATES[0]
        };
        assert_eq!(strip::strip_shared_bytes::<f32>(&staged, 32), 32 * 128 * 4);
        assert_eq!(
            shared_bytes::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 8, &f32_table),
            (71 * 39 + 64) * 4
        );
        assert_eq!(
            shared_bytes::<f64>(ConvAlgorithm::SharedFilter, (8, 8), 31, &f64_table),
            31 * 31 * 8
        );
        assert_eq!(
            shared_bytes::<f32>(ConvAlgorithm::Global, (8, 8), 31, &f32_table),
            0
        );
        let other = ConvPolicy {
            rows_per_thread: 4,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..f32_table
        };
        assert_eq!(
            shared_bytes::<f32>(ConvAlgorithm::TiledHalo, (32, 8), 3, &other),
            ((8 * 4 + 2) * 34 + 9) * 4
        );
    }

    #[test]
    fn refused_policies_fail_validation() {
        let base = table_policy::<f32>();
        for bad in [
            ConvPolicy {
                rows_per_thread: 0,
                ..base
            },
            ConvPolicy {
                reg_filter_max_k: 8,
                ..base
            },
            ConvPolicy {
                load_batch: 0,
                ..base
            },
        ] {
            let refused = validate::<f32>((9, 9), (3, 3), (7, 7), &ConvOptions::default(), &bad);
            assert!(matches!(
                refused,
                Err(Error::InvalidArgument { name: "tuning", .. })
            ));
        }
        // A policy with a direct method is refused, not ignored.
        let given = ConvOptions {
            algorithm: ConvAlgorithm::Global,
            policy: Some(base),
            ..ConvOptions::default()
        };
        assert!(matches!(
            validate::<f32>((9, 9), (3, 3), (7, 7), &given, &base),
            Err(Error::InvalidArgument { name: "policy", .. })
        ));
    }
}
