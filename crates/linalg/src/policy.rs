//! Tuning knobs: the policy of each tuned algorithm, for sweeps and new
//! devices (rayon's `plumbing`, CUB's `tuning_*.cuh`). Ordinary calls never
//! need this module: every algorithm runs with its device's default.
//!
//! | algorithm | policy | default | given through |
//! |---|---|---|---|
//! | [`crate::TransposeAlgorithm::Tuned`] | [`TransposePolicy`] (tile, block rows, tile order, vectors, tall tile) | [`TransposePolicy::for_device`] | [`crate::TransposeOptions`], [`crate::transpose_tuned_with`] |
//! | [`crate::MatvecAlgorithm::Tuned`] | [`MatvecPolicy`] (block shapes, grid sizing, load variants) | [`MatvecPolicy::for_device`] | [`crate::MatvecOptions`], [`crate::matvec_tuned_with`] |
//! | [`crate::ConvAlgorithm::TiledHalo`] | [`ConvPolicy`] (block kernel, strip kernels as [`StripPolicy`], register-tile kernels as [`RegisterTilePolicy`]) | [`ConvPolicy::for_device`] | [`crate::ConvOptions::policy`], [`crate::conv::conv2d_tuned_with`] |
//!
//! Each policy has a checked constructor and a `validate` that every call
//! runs: a policy the compiled kernels cannot run, or one given to an
//! algorithm that has none, is a typed [`gpu_core::Error`], never dropped.
//! The measurements behind each default are in `docs/tuning.md`.
//!
//! The launch-shape arithmetic of the Tuned matvec ([`threads_per_row`],
//! [`n_geometry`], [`t_geometry`]) and the module builders of the conv
//! policies ([`conv_module_with`], [`strip_module`], [`register_tile_module`],
//! for sweeps that compile
//! ahead) are here too.

pub use crate::conv::policy::{
    ConvPolicy, RegisterTilePolicy, StripPolicy, StripSchedule, StripStores,
    REGISTER_TILE_CANDIDATES, REGISTER_TILE_MAX_K, REGISTER_TILE_WIDE_MIN_K, STRIP_CANDIDATES,
    STRIP_MAX_K, STRIP_WIDE_MIN_K, TILED_SPECIALISED_MAX_K,
};
pub use crate::matvec::policy::{MatvecPolicy, TUNABLE_LOADS};
pub use crate::matvec::tuned::{
    n_geometry, t_geometry, threads_per_row, RowGeometry, TransposedGeometry,
};
pub use crate::transpose::policy::{TileOrder, TransposePolicy, TUNABLE_SHAPES};

use crate::conv::ConvElement;
use gpu_core::ModuleSource;

/// The conv module (direct kernels and block kernel) for `T` built with
/// `policy`'s block-kernel fields, as a call with that policy loads it.
///
/// ```
/// use linalg::policy::{conv_module, conv_module_with, ConvPolicy};
/// let table = ConvPolicy::default_for::<f32>((9, 0));
/// let module = conv_module_with::<f32>(&table);
/// assert!(!module.entries().is_empty());
/// # let _ = conv_module::<f32>();
/// ```
pub fn conv_module_with<T: ConvElement>(policy: &ConvPolicy) -> ModuleSource {
    crate::conv::conv_module_with::<T>(policy)
}

/// The conv module for `T` with the measured table's policy.
///
/// ```
/// let module = linalg::policy::conv_module::<f64>();
/// assert!(!module.entries().is_empty());
/// ```
pub fn conv_module<T: ConvElement>() -> ModuleSource {
    crate::conv::conv_module::<T>()
}

/// The strip module for `T` and `policy`'s compile-time fields (entries for
/// K = 1 … [`STRIP_MAX_K`]), as a call with that strip policy loads it.
///
/// ```
/// use linalg::policy::{strip_module, STRIP_CANDIDATES};
/// let module = strip_module::<f32>(&STRIP_CANDIDATES[0]);
/// assert!(!module.entries().is_empty());
/// ```
pub fn strip_module<T: ConvElement>(policy: &StripPolicy) -> ModuleSource {
    crate::conv::strip_module::<T>(policy)
}

/// The register-tile module for `T` and `policy` (entries for K = 1 …
/// [`REGISTER_TILE_MAX_K`]), as a call with that policy loads it.
///
/// ```
/// use linalg::policy::{register_tile_module, REGISTER_TILE_CANDIDATES};
/// let module = register_tile_module::<f32>(&REGISTER_TILE_CANDIDATES[0]);
/// assert_eq!(module.entries().len(), 7);
/// ```
pub fn register_tile_module<T: ConvElement>(policy: &RegisterTilePolicy) -> ModuleSource {
    crate::conv::register_tile_module::<T>(policy)
}
