//! # dist
//!
//! Scan, reduce, compaction and histograms over the GPUs of one host
//! through NCCL.
#![deny(missing_docs)]
