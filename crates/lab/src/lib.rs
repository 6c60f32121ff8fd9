//! # parprims-lab
//!
//! The lab runner: one place that measures, checks and tabulates every
//! primitive, shared by the `parprims` command and the examples. Not library
//! API (`publish = false`): a user of the primitives depends on `parprims`
//! (or `gpu-core`, `scan`, `compact`, `linalg`) and compiles none of this,
//! nor its clap, indicatif and plotters.
//!
//! | module | what |
//! |---|---|
//! | [`run`] | the one measuring loop: poison, time, check, copies |
//! | [`prims`] | one lab per primitive (scan, compact, transpose, matvec, conv, reduce, histogram, copy) |
//! | [`inputs`], [`sizes`], [`select`] | random inputs, sizes and shapes, what a run selects |
//! | [`check`] | the result against the CPU reference |
//! | [`table`], [`plot`], [`headline`] | the table, CSV records, SVG/PNG plots, the headline figures |
//! | [`bench`](mod@bench) | `parprims bench`: the sweeps, CSV, plots and peer comparison |
//! | [`tour`], [`front`], [`progress`] | the tour, what the binary and the examples share, progress bars |
//! | `cli` | the `parprims` command line (clap; feature `cli`, on by default) |
//!
//! Timing itself is the workspace's one harness,
//! [`parprims_testkit::bench`] (CUDA events, median, the copy ceiling, the
//! results CSV), which the crates' tuning tests use too.
//!
//! A run goes the same way for every primitive and method:
//!
//! 1. fresh random inputs ([`inputs`]), never all zeros, from a seed printed
//!    with the table so a failure can be replayed (`--seed`);
//! 2. the CPU reference computes the expected output (and is itself timed
//!    when the table has a CPU row);
//! 3. the GPU method runs `warmup + reps` times; before each run its output
//!    is poisoned ([`gpu_core::DeviceType::poison`]) so an element the
//!    kernel never wrote shows up; each run is timed with CUDA events and the
//!    median is reported ([`parprims_testkit::bench::time_device`]);
//! 4. the output of the last timed run is checked against the CPU
//!    reference ([`check`]: integers exact, floats within a tolerance);
//! 5. where the lab measured it, the same method is timed again with its
//!    host↔device copies (upload, run, download, synchronised; wall clock)
//!    and that download is checked too;
//! 6. GB/s come from the bytes the algorithm declares it moves (each crate's
//!    `bytes_moved`), and are shown as a fraction of the device-to-device
//!    copy ceiling measured once per process ([`Lab::open`]).
//!
//! A method that fails (an error from the library, a wrong result) becomes
//! a row with `✗` and the reason; the table is always printed.
//!
//! ```
//! use parprims_lab::table::Timed;
//! use parprims_lab::{render_table, Check, Row};
//! let row = Row {
//!     primitive: "scan".into(),
//!     method: "DecoupledLookback".into(),
//!     element_type: "i32".into(),
//!     shape: "268435456".into(),
//!     bytes: 8.0 * 268435456.0,
//!     timed: Timed::Device,
//!     ms: Some(0.75),
//!     ms_with_copies: None,
//!     check: Check::Pass,
//! };
//! let table = render_table(&[row], Some(3000.0));
//! assert!(table.contains("2863.3")); // GB/s from the declared 8n bytes
//! assert!(table.contains("0.95"));   // of the copy ceiling
//! ```
#![deny(missing_docs)]

pub mod bench;
pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
pub mod front;
pub mod headline;
pub mod inputs;
pub mod plot;
pub mod prims;
pub mod progress;
pub mod run;
pub mod select;
pub mod sizes;
pub mod table;
pub mod tour;

use gpu_core::{Error, Gpu, Result};
// `with_element_type!` names gpu-core through `$crate`, so it works in any
// crate that uses the lab.
#[doc(hidden)]
pub use gpu_core;
use parprims_testkit::bench::{copy_ceiling, CopyCeiling, Record, Repetitions};

pub use check::Check;
pub use run::{measure_cpu, measure_gpu, GpuCase, Spec};
pub use table::{render_table, Row};

/// The primitives the runner knows, in table order.
pub const PRIMITIVES: [&str; 7] = [
    "scan",
    "compact",
    "transpose",
    "matvec",
    "conv",
    "reduce",
    "histogram",
];

/// Bytes copied to measure the copy ceiling: far over the L2 (50 MB on an
/// H100), so the copy streams from and to DRAM.
pub const CEILING_BYTES: usize = 1 << 30;

/// Timed repetitions of the ceiling copy.
pub const CEILING_REPS: Repetitions = Repetitions {
    warmup: 3,
    timed: 20,
};

/// An open GPU with its copy ceiling and the run's settings.
pub struct Lab {
    gpu: Gpu,
    ceiling: CopyCeiling,
    reps: Repetitions,
    cpu_reps: Repetitions,
    device: String,
    seed: u64,
    quick: bool,
}

/// Settings of a lab run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabOptions {
    /// Device ordinal.
    pub ordinal: usize,
    /// GPU repetitions (warm-up and timed).
    pub reps: Repetitions,
    /// CPU reference repetitions (they are slow at lab sizes).
    pub cpu_reps: Repetitions,
    /// Seed of the first input; each later input derives its own from it.
    pub seed: u64,
    /// Bytes of the ceiling copy.
    pub ceiling_bytes: usize,
    /// The quick tour (`parprims --quick`): 1-D sizes ÷ 64 and each side of
    /// a 2-D shape ÷ 8, a smoke test of every method in seconds (under
    /// compute-sanitizer too). Benchmarks are not affected.
    pub quick: bool,
}

impl LabOptions {
    /// `reps` timed GPU runs after 3 warm-ups, 3 timed CPU runs after one
    /// warm-up, a seed from the clock, a 1 GiB ceiling copy.
    pub fn with_reps(reps: usize) -> Result<LabOptions> {
        if reps == 0 {
            return Err(Error::invalid("reps", "at least one timed repetition"));
        }
        Ok(LabOptions {
            ordinal: 0,
            reps: Repetitions {
                warmup: 3,
                timed: reps,
            },
            cpu_reps: Repetitions {
                warmup: 1,
                timed: reps.min(3),
            },
            seed: inputs::clock_seed(),
            ceiling_bytes: CEILING_BYTES,
            quick: false,
        })
    }
}

impl Lab {
    /// Opens the device and measures its copy ceiling (about a second).
    ///
    /// Returns [`Error::NoDriver`] or [`Error::BadOrdinal`] on a machine
    /// without a usable GPU; [`no_gpu_sentence`] words those for a person.
    pub fn open(options: LabOptions) -> Result<Lab> {
        Lab::with_gpu(Gpu::new(options.ordinal)?, options)
    }

    /// A lab on a device already opened (the ordinal of `options` is not
    /// used): measures the copy ceiling.
    pub fn with_gpu(gpu: Gpu, options: LabOptions) -> Result<Lab> {
        let info = gpu.info();
        let device = format!("{}, {}", info.name, info.arch());
        // Less than the ceiling copy's two buffers free (a small GPU): copy
        // a quarter of what is free instead, still far over any L2.
        let ceiling_bytes = options
            .ceiling_bytes
            .min(info.memory_free_at_open / 4)
            .max(4);
        let ceiling = copy_ceiling(&gpu, ceiling_bytes, CEILING_REPS)?;
        Ok(Lab {
            gpu,
            ceiling,
            reps: options.reps,
            cpu_reps: options.cpu_reps,
            device,
            seed: options.seed,
            quick: options.quick,
        })
    }

    /// The device handle.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The copy ceiling measured when the lab opened.
    pub fn ceiling(&self) -> &CopyCeiling {
        &self.ceiling
    }

    /// GPU repetitions.
    pub fn reps(&self) -> Repetitions {
        self.reps
    }

    /// CPU repetitions.
    pub fn cpu_reps(&self) -> Repetitions {
        self.cpu_reps
    }

    /// The run's base seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The tour's length for a full-tour length `full` (÷ 64 when quick).
    pub fn tour_len(&self, full: usize) -> usize {
        if self.quick {
            (full / 64).max(1)
        } else {
            full
        }
    }

    /// The tour's shape for a full-tour shape `full` (each side ÷ 8 when
    /// quick).
    pub fn tour_dims(&self, full: (usize, usize)) -> (usize, usize) {
        if self.quick {
            ((full.0 / 8).max(1), (full.1 / 8).max(1))
        } else {
            full
        }
    }

    /// `name, sm_XY`, as CSV records carry it.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The header printed above a table: device, ceiling, seed.
    pub fn header(&self) -> String {
        format!(
            "device: {}\ncopy ceiling: {:.1} GB/s (device-to-device copy of {} MiB, read + write, median of {})\ninputs: seed {} (replay with --seed {})",
            self.gpu.info().summary(),
            self.ceiling.gbps,
            self.ceiling.bytes_copied >> 20,
            self.ceiling.timing.samples_ms.len(),
            self.seed,
            self.seed
        )
    }

    /// The GPU rows of `rows` as CSV records (CPU rows and rows that did not
    /// run are left out: they have no device time against this ceiling).
    pub fn records(&self, rows: &[Row]) -> Vec<Record> {
        rows.iter()
            .filter_map(|row| row.to_record(self.ceiling.gbps, &self.device))
            .collect()
    }
}

/// One plain sentence for a machine where [`Gpu::new`] failed, with the
/// error's own advice. Any failure to open the device (no driver, no
/// device, a driver that refuses to initialise) takes the no-GPU path.
pub fn no_gpu_sentence(error: &Error) -> String {
    match error {
        Error::NoDriver => {
            format!("No CUDA GPU found: the NVIDIA driver library could not be loaded ({error}).")
        }
        Error::BadOrdinal { count: 0, .. } => {
            format!("No CUDA GPU found: the driver is installed but reports no device ({error}).")
        }
        Error::BadOrdinal { .. } => format!("No such CUDA GPU: {error}."),
        other => format!("No usable CUDA GPU: opening the device failed ({other})."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gpu_sentences_are_one_plain_sentence() {
        let s = no_gpu_sentence(&Error::NoDriver);
        assert!(s.starts_with("No CUDA GPU found"));
        assert!(
            s.contains("LD_LIBRARY_PATH"),
            "the error's advice is kept: {s}"
        );
        assert!(!s.contains('\n'));
        let s = no_gpu_sentence(&Error::BadOrdinal {
            ordinal: 0,
            count: 0,
        });
        assert!(s.contains("reports no device"));
        let s = no_gpu_sentence(&Error::BadOrdinal {
            ordinal: 3,
            count: 1,
        });
        assert!(s.contains("ordinal 3"));
    }

    #[test]
    fn options_refuse_zero_reps() {
        assert!(LabOptions::with_reps(0).is_err());
        let o = LabOptions::with_reps(20).unwrap();
        assert_eq!(o.reps.timed, 20);
        assert_eq!(o.cpu_reps.timed, 3);
        assert_eq!(o.ceiling_bytes, 1 << 30);
    }
}
