//! # parprims-testkit
//!
//! The machinery that parprims' tests, examples and lab share, kept out of
//! the library crates so that a user of `gpu-core`, `scan`, `compact` or
//! `linalg` compiles none of it. Every crate takes it as a
//! `[dev-dependency]`; the lab (`parprims-lab`) as a normal one.
//!
//! | module | what |
//! |---|---|
//! | [`bench`](mod@bench) | the one timing harness: warm-up and repetitions, median/min/max, GB/s from the bytes an algorithm declares, the device-to-device copy ceiling, the results CSV |
//! | [`rng`] | SplitMix64 and random inputs (never all zeros) from a seed |
//! | [`testing`] | the GPU suite's scale (`PARPRIMS_QUICK_TESTS`), the NVRTC check that skips or fails, SM 9.0 SASS through nvdisasm |
//!
//! ```
//! use parprims_testkit::bench::{gbps, Timing};
//! use parprims_testkit::rng::random_vec;
//!
//! let timing = Timing::from_samples(vec![1.0, 3.0, 2.0])?;
//! assert_eq!(timing.median_ms, 2.0);
//! assert_eq!(gbps(2e9, 1.0), 2000.0); // 2 GB in 1 ms
//! let input: Vec<i32> = random_vec(1000, 7, -100.0, 100.0);
//! assert_eq!(input, random_vec::<i32>(1000, 7, -100.0, 100.0)); // one seed, one input
//! # Ok::<(), gpu_core::Error>(())
//! ```
#![deny(missing_docs)]

pub mod bench;
pub mod rng;
pub mod testing;
