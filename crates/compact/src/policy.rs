//! The tuning knobs, for experts and the tuning sweep: the single-pass
//! kernel's [`Policy`] as data. A caller who only compacts never needs this
//! module (the tables pick the policy by element size and operation); one
//! who tunes passes a policy in [`CompactOptions`](crate::CompactOptions)
//! (`CompactOptions::single_pass(policy)`), and a policy given is used or
//! refused with a typed error, never dropped. (As rayon's `plumbing`:
//! public and documented, but not the everyday API.)
//!
//! | what | here |
//! |---|---|
//! | the policy type, shared with the scan | [`Policy`], [`TileLayout`], [`Schedule`], [`StatusEncoding`] (from `gpu_core::single_pass`) |
//! | compaction's view of it: names, shared memory, constraints | [`CompactPolicy`] |
//! | defaults by element size | [`TUNING`] (select by flags, partition), [`SELECT_IF_TUNING`] (select by predicate), [`default_policy`], [`select_if_policy`] |
//! | what the sweep (`tests/compact_tuning.rs`) compares | [`CANDIDATES_4`], [`CANDIDATES_8`], [`candidates`] |
//! | which policies a call accepts (catalogued modules only) | [`validate_tuning`] |
//! | the fixed shapes of the count and three-pass kernels | [`COUNT_BLOCK_THREADS`], [`COUNT_ITEMS_PER_THREAD`], [`THREE_PASS_BLOCK_THREADS`], [`THREE_PASS_ITEMS`] |
//!
//! The measurements behind each default are in `docs/tuning.md`.

pub use crate::modules::{
    candidates, default_policy, default_policy_for, policy, select_if_policy, select_if_policy_for,
    validate_tuning, CompactPolicy, CANDIDATES_4, CANDIDATES_8, COUNT_BLOCK_THREADS,
    COUNT_ITEMS_PER_THREAD, SELECT_IF_TUNING, THREE_PASS_BLOCK_THREADS, THREE_PASS_ITEMS, TUNING,
};
pub use gpu_core::single_pass::{Policy, Schedule, StatusEncoding, TileLayout};
