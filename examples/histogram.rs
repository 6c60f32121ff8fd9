//! The histogram lab: 256 even bins of uniform `i32`, the same of `u8`,
//! every item in one bin, and 65 536 bins, with the CPU loop, one global
//! atomic per item, shared-memory privatisation, the histogram by sort
//! (sorted bin indices, counts as distances between run boundaries) and
//! the default (which picks per bin count); each timed with CUDA events and
//! checked against the CPU. GB/s count the input read once (the sort row:
//! its own traffic, `reduce::histogram::sort_bytes_moved`), so the last
//! column is the fraction of the copy ceiling.
//!
//! ```sh
//! cargo run --release --example histogram
//! cargo run --release --example histogram -- --sizes 2^28 --algos auto
//! cargo run --release --example histogram -- --algos sort,auto
//! cargo run --release --example histogram -- --types u8,f32 --csv histogram.csv
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::histogram::{run, HistogramPlan, BENCH_SIZES};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// Histograms on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Element counts, comma-separated (`2^24`, `5*2^21`, `1000000`).
    #[arg(long, default_value = "2^24")]
    sizes: String,
    /// Methods, comma-separated (`global-atomic`, `shared-privatised`,
    /// `sort`, `auto`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Input types, comma-separated (i32 u8 u32 f32; default: the four
    /// cases of i32 and u8).
    #[arg(long)]
    types: Option<String>,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// CSV of the GPU rows.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Seed of the inputs (default: the clock).
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit_with(|| {
        let selection = Selection {
            sizes: Some(args.sizes.clone()),
            algos: args.algos.clone(),
            types: args.types.clone(),
            sweep: false,
            block_threads: None,
        };
        let mut plan = HistogramPlan::from_selection(&selection, &BENCH_SIZES)?;
        plan.cpu_row = true;
        let mut options = LabOptions::with_reps(args.reps)?;
        if let Some(seed) = args.seed {
            options.seed = seed;
        }
        let Some(lab) = open_or_explain(options)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let progress = Progress::new(plan.cases());
        let rows = run(&lab, &plan, &progress);
        progress.finish();
        finish(&lab, &rows, args.csv.as_deref())
    })
}
