//! The Tuned transpose's policy: tile side and block height.
//!
//! Measured in docs/tuning.md#transpose. The default is the classic 32 × 8
//! shape (4 elements per thread): full occupancy with 4.1 KiB of shared
//! memory per block.

use gpu_core::{DeviceInfo, Error, Result};

/// Block heights compiled into every transpose module (entries
/// `transpose_tuned_rows{R}_{storage}`): the values
/// [`TransposePolicy::block_rows`] may take.
pub const TUNABLE_BLOCK_ROWS: [u32; 3] = [4, 8, 16];

/// Tile shape of [`crate::TransposeAlgorithm::Tuned`].
///
/// The fields are public so sweeps can write `TransposePolicy { block_rows,
/// ..TransposePolicy::DEFAULT }`; every policy given to a transpose is
/// checked ([`TransposePolicy::validate`]) and refused with a typed error
/// when the compiled kernels cannot run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransposePolicy {
    /// Tile side (= block width, one warp): 32.
    pub tile: u32,
    /// Block height, one of [`TUNABLE_BLOCK_ROWS`]; each thread copies
    /// `tile / block_rows` elements.
    pub block_rows: u32,
}

impl TransposePolicy {
    /// 32 × 8 threads per 32 × 32 tile.
    pub const DEFAULT: TransposePolicy = TransposePolicy {
        tile: 32,
        block_rows: 8,
    };

    /// A 32-wide tile with `block_rows` rows of threads, checked.
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// assert_eq!(TransposePolicy::new(16)?.block_rows, 16);
    /// assert!(TransposePolicy::new(12).is_err()); // not one of TUNABLE_BLOCK_ROWS
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(block_rows: u32) -> Result<TransposePolicy> {
        let policy = TransposePolicy {
            tile: 32,
            block_rows,
        };
        policy.validate()?;
        Ok(policy)
    }

    /// The default for a device: [`TransposePolicy::DEFAULT`] on every
    /// architecture (measured on sm_90).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::policy::TransposePolicy;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let policy = TransposePolicy::for_device(gpu.info());
    /// assert_eq!(policy, TransposePolicy::default_for(gpu.info().compute_capability));
    /// # Ok(()) }
    /// ```
    pub fn for_device(info: &DeviceInfo) -> TransposePolicy {
        Self::default_for(info.compute_capability)
    }

    /// The default for compute capability `arch` (see [`Self::for_device`]).
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// assert_eq!(TransposePolicy::default_for((8, 0)), TransposePolicy::DEFAULT);
    /// ```
    pub fn default_for(_arch: (u32, u32)) -> TransposePolicy {
        Self::DEFAULT
    }

    /// Tile 32 (a warp per tile row) and `block_rows` one of
    /// [`TUNABLE_BLOCK_ROWS`]: [`Error::InvalidArgument`] otherwise.
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// assert!(TransposePolicy { block_rows: 4, ..TransposePolicy::DEFAULT }.validate().is_ok());
    /// assert!(TransposePolicy { tile: 16, ..TransposePolicy::DEFAULT }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        if self.tile != 32 || !TUNABLE_BLOCK_ROWS.contains(&self.block_rows) {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "tile {} × block rows {}: the compiled kernels have tile 32 and block rows {:?}",
                    self.tile, self.block_rows, TUNABLE_BLOCK_ROWS
                ),
            ));
        }
        Ok(())
    }
}

impl Default for TransposePolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_a_typed_error() {
        assert_eq!(
            TransposePolicy::DEFAULT.tile % TransposePolicy::DEFAULT.block_rows,
            0
        );
        assert!(TransposePolicy::DEFAULT.validate().is_ok());
        for block_rows in TUNABLE_BLOCK_ROWS {
            assert_eq!(
                TransposePolicy::new(block_rows).unwrap().block_rows,
                block_rows
            );
        }
        for block_rows in [0, 1, 2, 3, 5, 32, u32::MAX] {
            assert!(matches!(
                TransposePolicy::new(block_rows),
                Err(Error::InvalidArgument { name: "tuning", .. })
            ));
        }
        let wide = TransposePolicy {
            tile: 64,
            block_rows: 8,
        };
        assert!(matches!(
            wide.validate(),
            Err(Error::InvalidArgument { name: "tuning", .. })
        ));
        assert_eq!(
            TransposePolicy::default_for((8, 0)),
            TransposePolicy::DEFAULT
        );
        assert_eq!(TransposePolicy::default(), TransposePolicy::DEFAULT);
    }
}
