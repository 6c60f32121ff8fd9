//! The stream-compaction lab: keep the items of `i32` arrays whose byte flag
//! is non-zero (50 % random flags), and those a comparison keeps (`x > 0`),
//! with the CPU filter, the CPU map → scan → scatter, three-pass on the GPU
//! with each scan algorithm, and single-pass; at a power-of-two and a
//! non-power-of-two size; each checked against the CPU.
//!
//! ```sh
//! cargo run --release --example compact
//! cargo run --release --example compact -- --sizes 2^20,5*2^17 --algos SinglePass
//! cargo run --release --example compact -- --sweep --csv compact-sweep.csv
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims::gpu_core::ElementType;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::compact::{run, CompactPlan, BENCH_SIZES};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// Stream compaction on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Element counts, comma-separated (`2^24`, `5*2^21`, `1000000`).
    #[arg(long, default_value = "2^24,5*2^21")]
    sizes: String,
    /// Methods, comma-separated (`SinglePass`, `ThreePass/Blelloch`,
    /// `select_flagged/SinglePass`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Element types, comma-separated.
    #[arg(long, default_value = "i32")]
    types: String,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// The labs' sweep: 2^12 … 2^29 and 5/8 of each, written as CSV.
    #[arg(long)]
    sweep: bool,
    /// CSV of the GPU rows (default with --sweep: compact-sweep.csv).
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
            types: Some(args.types.clone()),
            sweep: args.sweep,
            block_threads: None,
        };
        let mut plan = CompactPlan::from_selection(&selection, &BENCH_SIZES, &[ElementType::I32])?;
        plan.cpu_rows = true;
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
        let csv = args
            .csv
            .clone()
            .or_else(|| args.sweep.then(|| PathBuf::from("compact-sweep.csv")));
        finish(&lab, &rows, csv.as_deref())
    })
}
