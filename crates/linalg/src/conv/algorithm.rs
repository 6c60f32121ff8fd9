//! What a convolution caller chooses: the [`ConvAlgorithm`], the
//! [`ConvOptions`] (border, padding, flip, block, policy) and the element
//! type is [`ConvElement`](super::element::ConvElement) (`element.rs`).

use gpu_core::{Error, Result};

use super::policy::ConvPolicy;
use super::shape::{Border, Padding};

/// Thread-block shapes `(x, y)` every algorithm accepts: the lab's sweep
/// (8 × 8, 16 × 16, 32 × 32) and 32 × 8 (one warp per output row segment of
/// 128 bytes for `f32`; the `TiledHalo` default).
pub const CONV_BLOCKS: [(u32, u32); 4] = [(8, 8), (16, 16), (32, 32), (32, 8)];

/// How the GPU computes the convolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConvAlgorithm {
    /// One thread per output; image and filter read from global memory (the
    /// lab's gpu-gm).
    Global,
    /// One thread per output; the block stages the filter in shared memory
    /// first (the lab's gpu-sm).
    SharedFilter,
    /// One thread per output; the filter in `__constant__` memory (uniform
    /// reads are broadcast by the constant cache). Serialised across streams:
    /// see the module docs.
    ConstantFilter,
    /// The input tile and its halo staged in shared memory with coalesced
    /// loads, padding applied while loading; each thread computes a column of
    /// several outputs, reusing each loaded row for every output it touches;
    /// the filter in registers (small `K`) or shared memory.
    #[default]
    TiledHalo,
}

impl ConvAlgorithm {
    /// Every algorithm, for tests and sweeps.
    pub const ALL: [ConvAlgorithm; 4] = [
        ConvAlgorithm::Global,
        ConvAlgorithm::SharedFilter,
        ConvAlgorithm::ConstantFilter,
        ConvAlgorithm::TiledHalo,
    ];

    /// A short name for tables (`tiled_halo`).
    ///
    /// ```
    /// use linalg::ConvAlgorithm;
    /// assert_eq!(ConvAlgorithm::default().name(), "tiled_halo");
    /// assert_eq!(ConvAlgorithm::ConstantFilter.name(), "constant_filter");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ConvAlgorithm::Global => "global",
            ConvAlgorithm::SharedFilter => "shared_filter",
            ConvAlgorithm::ConstantFilter => "constant_filter",
            ConvAlgorithm::TiledHalo => "tiled_halo",
        }
    }
}

/// Options of [`crate::conv2d`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvOptions {
    /// Output extent and anchor.
    pub border: Border,
    /// Out-of-image samples (ignored by [`Border::Valid`]).
    pub padding: Padding,
    /// Rotate the filter by 180°: true convolution instead of correlation.
    pub flip: bool,
    /// Which kernel.
    pub algorithm: ConvAlgorithm,
    /// Threads per block `(x, y)`, one of [`CONV_BLOCKS`]. `TiledHalo`'s
    /// register-tile kernel (and a strip policy with `warps` set) launches
    /// the block of its policy instead.
    pub block: (u32, u32),
    /// `TiledHalo`'s policy; `None`: the device's default
    /// ([`ConvPolicy::for_device`]). Refused with any other algorithm.
    pub policy: Option<ConvPolicy>,
}

impl Default for ConvOptions {
    /// `Valid`, `Zero`, correlation, `TiledHalo`, block [`DEFAULT_BLOCK`],
    /// the device's default policy.
    fn default() -> Self {
        ConvOptions {
            border: Border::Valid,
            padding: Padding::Zero,
            flip: false,
            algorithm: ConvAlgorithm::TiledHalo,
            block: DEFAULT_BLOCK,
            policy: None,
        }
    }
}

impl ConvOptions {
    /// Checks that a policy, if given, goes with [`ConvAlgorithm::TiledHalo`]
    /// (the other algorithms have none): [`Error::InvalidArgument`]
    /// otherwise. The policy itself is checked with the element type
    /// ([`ConvPolicy::validate`]).
    ///
    /// ```
    /// use linalg::policy::ConvPolicy;
    /// use linalg::{ConvAlgorithm, ConvOptions};
    /// let policy = Some(ConvPolicy::default_for::<f32>((9, 0)));
    /// assert!(ConvOptions { policy, ..ConvOptions::default() }.check_policy().is_ok()); // TiledHalo
    /// let global = ConvOptions { policy, algorithm: ConvAlgorithm::Global, ..ConvOptions::default() };
    /// assert!(global.check_policy().is_err());
    /// ```
    pub fn check_policy(&self) -> Result<()> {
        match (self.algorithm, self.policy) {
            (ConvAlgorithm::TiledHalo, _) | (_, None) => Ok(()),
            (other, Some(_)) => Err(Error::invalid(
                "policy",
                format!(
                    "{} has no policy: only TiledHalo takes a ConvPolicy",
                    other.name()
                ),
            )),
        }
    }
}

/// The default block: 32 × 8 threads (with `TiledHalo`, a 32 × 64 output tile
/// for 4-byte types). Not yet measured on the H100; chosen so a warp reads
/// 128 contiguous bytes per tile row and 256-thread blocks leave room for
/// several resident blocks per SM to overlap loads with compute.
pub const DEFAULT_BLOCK: (u32, u32) = (32, 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tiled_halo_takes_a_policy() {
        let policy = Some(ConvPolicy::default_for::<f32>((9, 0)));
        for algorithm in ConvAlgorithm::ALL {
            let plain = ConvOptions {
                algorithm,
                ..ConvOptions::default()
            };
            assert!(plain.check_policy().is_ok());
            let given = ConvOptions { policy, ..plain };
            if algorithm == ConvAlgorithm::TiledHalo {
                assert!(given.check_policy().is_ok());
            } else {
                assert!(matches!(
                    given.check_policy(),
                    Err(Error::InvalidArgument { name: "policy", .. })
                ));
            }
        }
    }
}
