//! # dist
//!
//! Scan, reduce, compaction, histograms and sort over several GPUs, through
//! NCCL: the array is split into one shard per GPU, every GPU runs the
//! single-GPU primitive on its shard, and NCCL exchanges the few values
//! that tie the shards together.
//!
//! | one GPU | several GPUs (this crate) |
//! |---|---|
//! | `Gpu` (context + stream) | [`Group`]: one `Gpu` and one NCCL communicator per rank |
//! | `DeviceBuffer<T>` | [`Sharded<T>`]: one buffer per rank, even blocks or the caller's layout |
//! | a one-element result | [`Replicated<T>`]: the same value on every rank |
//!
//! | operation | local step | exchange |
//! |---|---|---|
//! | [`reduce()`], [`reduce_replicated`], [`sum`] | `reduce::reduce_into` | all-reduce of the partials (sum, product, max, min), else all-gather + fold |
//! | [`scan()`], [`scan_into`], [`scan_local_into`] + [`apply_prefixes`] | `scan::scan_into` | all-gather of the shard totals, prefix combined into each later shard |
//! | [`scan_into_reduce_first`] | `reduce::reduce_into`, then `scan::scan_into` seeded with the prefix | all-gather of the shard totals before the scans (one host synchronisation) |
//! | [`select_if`], [`select_flagged`] | `compact::select_*_into` | all-gather of the counts; with [`Placement::Even`], send/receive into even blocks |
//! | [`histogram_even`] | `reduce::histogram::histogram_even_into` | all-reduce of the counts |
//! | [`sort_keys`], [`sort_pairs`] (sample sort, module [`sort`]: sort first by default, or partition first) | `sort::sort_keys` / `sort_pairs` of the shard before the exchange (sort first) or of the buckets after it (partition first), and merge rounds | all-gather of samples and bucket bounds, the buckets by send/receive (on a side stream, beside the kept bucket's sort, for partition first); with [`SortPlacement::Even`], a rebalancing |
//!
//! **NCCL** is loaded at run time, like the driver and NVRTC: without
//! libnccl every constructor returns [`Error::NoNccl`] (checked with a
//! `dlopen` of the candidate names before cudarc's loader, which would
//! panic, is touched). **One thread** drives every local rank; each
//! exchange is one NCCL group (`ncclGroupStart`/`ncclGroupEnd`). Ranks in
//! other processes or on other hosts join with [`Group::from_unique_id`].
//! The design, the sort's steps and the measured scaling are in
//! `docs/multi-gpu.md`.
//!
//! ```no_run
//! use gpu_core::Sum;
//! use scan::ScanKind;
//! # fn main() -> dist::Result<()> {
//! let group = dist::Group::all()?; // every GPU of this host
//! let data: Vec<i32> = (0..1 << 20).map(|i| i % 3).collect();
//! let x = dist::Sharded::scatter_from_host(&group, &data)?;
//! assert_eq!(dist::sum(&group, &x)?, data.iter().sum::<i32>());
//! let prefix_sums = dist::scan(&group, &x, &Sum, ScanKind::Inclusive)?;
//! assert_eq!(prefix_sums.gather_to_host(&group)?, scan::cpu::inclusive(&data, &Sum));
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod compact;
mod error;
mod group;
mod histogram;
pub mod layout;
mod moves;
mod nccl;
mod reduce;
pub mod scan;
mod scan_reduce_first;
mod sharded;
pub mod sort;

pub use crate::compact::{select_flagged, select_if, Placement};
pub use crate::histogram::histogram_even;
pub use crate::reduce::{all_reduce_in_place, reduce, reduce_replicated, sum};
pub use crate::scan::{apply_prefixes, scan, scan_into, scan_local_into};
pub use crate::scan_reduce_first::scan_into_reduce_first;
pub use crate::sort::{sort_keys, sort_pairs, SortPlacement};
pub use error::{Error, Result};
pub use group::{validate_devices, validate_rank, Group};
pub use nccl::{nccl_available, nccl_version, unique_id};
pub use sharded::{Replicated, Sharded};

/// Every kernel module this crate can request (the cross-shard scan
/// kernels, the sample sort's), for the NVRTC compile test and cache
/// warm-up.
///
/// ```
/// assert!(!dist::kernel_catalog().is_empty());
/// ```
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = crate::scan::kernel_catalog();
    modules.extend(crate::sort::kernel_catalog());
    modules
}
