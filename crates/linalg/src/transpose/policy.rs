//! The Tuned transpose's policy: tile side, block height, tile order,
//! 16-byte vectors for narrow elements, and the tall tile for rows that are
//! not whole 256-byte blocks.
//!
//! Measured in docs/tuning.md#transpose. The default is a padded 64 × 64
//! tile moved by 64 × 8 threads (8 elements per thread, 16.6 KiB of shared
//! memory for 4-byte elements), blocks taking tiles down the columns,
//! 16-byte vectors for 1- and 2-byte elements where the matrix allows them,
//! and the tall 64 × 128 tile for 2- and 4-byte elements whose rows or
//! columns are not whole 256-byte blocks.

use gpu_core::{DeviceInfo, Error, Result};

/// The (tile side, block height) pairs compiled into every transpose
/// module, each in both [`TileOrder`]s (entries
/// `transpose_tuned_t{tile}_rows{block_rows}_{order}_{storage}`): the shapes
/// a [`TransposePolicy`] may name.
pub const TUNABLE_SHAPES: [(u32, u32); 5] = [(32, 4), (32, 8), (32, 16), (64, 4), (64, 8)];

/// The order in which a Tuned transpose's blocks take tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileOrder {
    /// Consecutive blocks take consecutive row tiles of one column band
    /// (grid x over row tiles): the blocks writing neighbouring pieces of
    /// the same output rows run together.
    DownColumns,
    /// Consecutive blocks take consecutive column tiles of one row band
    /// (grid x over column tiles): the blocks reading neighbouring pieces of
    /// the same input rows run together.
    AcrossRows,
}

impl TileOrder {
    /// Both orders.
    pub const ALL: [TileOrder; 2] = [TileOrder::DownColumns, TileOrder::AcrossRows];

    /// The short name in kernel entries and tables (`down`, `across`).
    pub fn name(self) -> &'static str {
        match self {
            TileOrder::DownColumns => "down",
            TileOrder::AcrossRows => "across",
        }
    }
}

/// Shape of [`crate::TransposeAlgorithm::Tuned`].
///
/// The fields are public so sweeps can write `TransposePolicy { block_rows,
/// ..TransposePolicy::DEFAULT }`; every policy given to a transpose is
/// checked ([`TransposePolicy::validate`]) and refused with a typed error
/// when the compiled kernels cannot run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransposePolicy {
    /// Side of the scalar kernel's square tile: 32 (one warp per tile row)
    /// or 64 (two).
    pub tile: u32,
    /// Block height of the scalar kernel (the block is `tile` × `block_rows`
    /// threads); each thread copies `tile / block_rows` elements. With
    /// `tile`, one of [`TUNABLE_SHAPES`].
    pub block_rows: u32,
    /// The order in which the blocks take tiles, in the scalar and the
    /// vector kernel (both orders are compiled for every shape).
    pub order: TileOrder,
    /// 1- and 2-byte elements: move 16-byte vectors through a swizzled tile
    /// (128 × 128 bytes, 64 × 64 halfwords; `transpose_vector.cu`) when
    /// rows and columns are multiples of the elements per vector (16, 8) and
    /// both buffers are 16-byte aligned; the scalar tile otherwise. 4- and
    /// 8-byte elements always take the scalar tile (their vector kernels
    /// measured slower).
    pub vectors: bool,
    /// 2- and 4-byte matrices of at least this many elements whose rows or
    /// columns are not whole 256-byte blocks (`rows · size` or `cols · size`
    /// not a multiple of 256), where vectors do not apply, move a tall tile
    /// of 128 input rows by 64 columns with stores rotated onto 32-byte
    /// sector boundaries (`transpose_tall.cu`; 64 × 8 threads, in the
    /// policy's order, whatever `tile` and `block_rows` say); `None`: never.
    /// Measured 0.72 → 0.87 of the copy ceiling at `f32` 9973 × 10007 and
    /// 0.89 → 0.91 at 10000²; slower than the square tile on whole 256-byte
    /// rows, for 1- and 8-byte elements, and below about 2^23 elements
    /// (too few blocks to fill the GPU: `f32` 2000 × 3001 0.465 square
    /// against 0.435 tall, 3001 × 4001 0.552 against 0.586), which keep it.
    pub tall_from_elements: Option<u64>,
}

impl TransposePolicy {
    /// 64 × 8 threads per padded 64 × 64 tile, taken down the columns;
    /// vectors for 1- and 2-byte elements; the tall tile for matrices of
    /// 2^23 elements or more whose rows are not whole 256-byte blocks.
    pub const DEFAULT: TransposePolicy = TransposePolicy {
        tile: 64,
        block_rows: 8,
        order: TileOrder::DownColumns,
        vectors: true,
        tall_from_elements: Some(1 << 23),
    };

    /// A `tile` × `tile` tile with `block_rows` rows of threads (order,
    /// vectors and the tall tile as in [`Self::DEFAULT`]), checked.
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// assert_eq!(TransposePolicy::new(32, 16)?.block_rows, 16);
    /// assert!(TransposePolicy::new(32, 12).is_err()); // not one of TUNABLE_SHAPES
    /// assert!(TransposePolicy::new(64, 16).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(tile: u32, block_rows: u32) -> Result<TransposePolicy> {
        let policy = TransposePolicy {
            tile,
            block_rows,
            ..Self::DEFAULT
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

    /// Every kernel the compiled modules run, as policies: each shape of
    /// [`TUNABLE_SHAPES`] in each [`TileOrder`], once with the square tile
    /// alone (no vectors, no tall tile) and once with vectors and the tall
    /// tile at any size (`tall_from_elements: Some(0)`, so tests reach it
    /// on small shapes), for tests and sweeps.
    ///
    /// ```
    /// use linalg::policy::{TransposePolicy, TUNABLE_SHAPES};
    /// let all = TransposePolicy::compiled();
    /// assert_eq!(all.len(), TUNABLE_SHAPES.len() * 2 * 2);
    /// assert!(all.contains(&TransposePolicy {
    ///     tall_from_elements: Some(0),
    ///     ..TransposePolicy::DEFAULT
    /// }));
    /// assert!(all.iter().all(|policy| policy.validate().is_ok()));
    /// ```
    pub fn compiled() -> Vec<TransposePolicy> {
        let mut all = Vec::new();
        for (tile, block_rows) in TUNABLE_SHAPES {
            for order in TileOrder::ALL {
                for special in [false, true] {
                    all.push(TransposePolicy {
                        tile,
                        block_rows,
                        order,
                        vectors: special,
                        tall_from_elements: special.then_some(0),
                    });
                }
            }
        }
        all
    }

    /// `(tile, block_rows)` one of [`TUNABLE_SHAPES`]:
    /// [`Error::InvalidArgument`] otherwise.
    ///
    /// ```
    /// use linalg::policy::TransposePolicy;
    /// assert!(TransposePolicy { block_rows: 4, ..TransposePolicy::DEFAULT }.validate().is_ok());
    /// assert!(TransposePolicy { tile: 16, ..TransposePolicy::DEFAULT }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        if !TUNABLE_SHAPES.contains(&(self.tile, self.block_rows)) {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "tile {} × block rows {}: the compiled kernels have (tile, block rows) {:?}",
                    self.tile, self.block_rows, TUNABLE_SHAPES
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
        assert!(TransposePolicy::DEFAULT.validate().is_ok());
        for (tile, block_rows) in TUNABLE_SHAPES {
            assert_eq!(tile % block_rows, 0);
            assert!(tile * block_rows <= 1024);
            let policy = TransposePolicy::new(tile, block_rows).unwrap();
            assert_eq!((policy.tile, policy.block_rows), (tile, block_rows));
        }
        for (tile, block_rows) in [
            (32, 0),
            (32, 1),
            (32, 3),
            (32, 32),
            (64, 16),
            (16, 8),
            (128, 8),
            (32, u32::MAX),
        ] {
            assert!(matches!(
                TransposePolicy::new(tile, block_rows),
                Err(Error::InvalidArgument { name: "tuning", .. })
            ));
        }
        assert_eq!(
            TransposePolicy::default_for((8, 0)),
            TransposePolicy::DEFAULT
        );
        assert_eq!(TransposePolicy::default(), TransposePolicy::DEFAULT);
    }
}
