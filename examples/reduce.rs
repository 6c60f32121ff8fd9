//! The reduction lab: the sum of `--sizes` random integers (default 2^24
//! and a non-power of two) with the CPU serial loop, the global-memory tree
//! (one kernel per level), the shared-memory tree and the single pass (the
//! default), then the default's argmax, minmax and sum of squares; each
//! timed with CUDA events and checked against the CPU. GB/s count the
//! input read once, so the last column is the fraction of the copy ceiling.
//!
//! ```sh
//! cargo run --release --example reduce
//! cargo run --release --example reduce -- --types i32,f32,u8,f16 --sizes 2^28
//! cargo run --release --example reduce -- --algos single-pass,argmax --sweep --csv reduce-sweep.csv
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::reduce::{run, ReducePlan, BENCH_SIZES};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// Reduction on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Element counts, comma-separated (`2^24`, `5*2^21`, `1000000`).
    #[arg(long, default_value = "2^24,5*2^21")]
    sizes: String,
    /// Methods, comma-separated (`global-tree`, `shared-tree`,
    /// `single-pass`, `argmax`, `minmax`, `sum-of-squares`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Element types, comma-separated (i8 u8 i16 u16 i32 u32 i64 u64 f16
    /// bf16 f32 f64).
    #[arg(long, default_value = "i32")]
    types: String,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// The labs' sweep: 2^12 … 2^29 and 5/8 of each, written as CSV.
    #[arg(long)]
    sweep: bool,
    /// CSV of the GPU rows (default with --sweep: reduce-sweep.csv).
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
        let mut plan = ReducePlan::from_selection(&selection, &BENCH_SIZES, &["i32"])?;
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
        let csv = args
            .csv
            .clone()
            .or_else(|| args.sweep.then(|| PathBuf::from("reduce-sweep.csv")));
        finish(&lab, &rows, csv.as_deref())
    })
}
