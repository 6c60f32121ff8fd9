//! The 2-D convolution lab: `Valid` cross-correlation of `f32` images of
//! 1000 × 1000 and 10000 × 10000 (the lab's sizes) with 3 × 3 and 5 × 5
//! filters, with the CPU loop and every GPU algorithm (global, filter in
//! shared memory, filter in constant memory, tiled with halo) at each of the
//! lab's block sizes 8 × 8, 16 × 16, 32 × 32 and the default 32 × 8, timed
//! with and without copies, each checked against the CPU.
//!
//! ```sh
//! cargo run --release --example conv
//! cargo run --release --example conv -- --sizes 8192 --algos TiledHalo
//! cargo run --release --example conv -- --block-size 16
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::conv::{run, ConvPlan, LAB_DIMS};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// 2-D convolution on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Image shapes, comma-separated: `HxW` or a side (default: the lab's 1000 and 10000).
    #[arg(long)]
    sizes: Option<String>,
    /// Methods, comma-separated (`TiledHalo`, `Global@16x16`, …; default:
    /// every algorithm at every block size).
    #[arg(long)]
    algos: Option<String>,
    /// Run the chosen algorithms at this block side only (8, 16 or 32).
    #[arg(long)]
    block_size: Option<u32>,
    /// Element types, comma-separated (f32, i32, f64).
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
        let all_blocks = args.algos.is_none() && args.block_size.is_none();
        let selection = Selection {
            sizes: args.sizes.clone(),
            algos: args.algos.clone(),
            types: Some(args.types.clone()),
            block_threads: args.block_size,
            ..Selection::default()
        };
        let mut plan = ConvPlan::from_selection(&selection, &LAB_DIMS)?;
        if all_blocks {
            plan.methods = ConvPlan::lab_methods();
        }
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
