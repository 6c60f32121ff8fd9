//! The matrix–vector lab: `y = A·x` and `y = Aᵀ·x` for `f32` matrices of
//! 1000 × 1000 and 10000 × 10000 (the lab's sizes) with the CPU loop and
//! every GPU algorithm (global, shared-memory tiles, tuned; cuBLAS too when
//! built with `--features cublas`), timed with and without copies, each
//! checked against the CPU.
//!
//! ```sh
//! cargo run --release --example matvec
//! cargo run --release --features cublas --example matvec -- --sizes 16384
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::matvec::{run, MatvecPlan, LAB_DIMS};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// Matrix–vector multiply on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Shapes, comma-separated: `ROWSxCOLS` or a side (default: the lab's 1000 and 10000).
    #[arg(long)]
    sizes: Option<String>,
    /// Methods, comma-separated (`Global`, `SharedTiled256`, `Tuned`, `cuBLAS`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Element types, comma-separated (f32, f64, i32).
    #[arg(long, default_value = "f32")]
    types: String,
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
            sizes: args.sizes.clone(),
            algos: args.algos.clone(),
            types: Some(args.types.clone()),
            ..Selection::default()
        };
        let mut plan = MatvecPlan::from_selection(&selection, &LAB_DIMS)?;
        plan.cpu_row = true;
        plan.copies = true;
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
