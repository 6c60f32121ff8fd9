//! The scan lab: inclusive sum of `--n` integers (default 123123123, the
//! lab's size) with the CPU serial loop and every GPU algorithm, timed with
//! and without host↔device copies, each checked against the CPU.
//!
//! ```sh
//! cargo run --release --example scan
//! cargo run --release --example scan -- --block-size 512 --algos Blelloch,BlellochPadded
//! cargo run --release --example scan -- --sweep --csv scan-sweep.csv   # 2^12 … 2^29 and 5/8 of each
//! cargo run --release --example scan -- --block-sweep                   # teaching kernels at 32 … 1024 threads
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use parprims::gpu_core::ElementType;
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::scan::{ScanPlan, BENCH_SIZES};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::LabOptions;

/// One plan per block size for the algorithms that take one (the CPU row
/// and the copies only once, with the first).
fn block_sweep(plan: &ScanPlan) -> Vec<ScanPlan> {
    [32u32, 64, 128, 256, 512, 1024]
        .into_iter()
        .enumerate()
        .map(|(i, threads)| ScanPlan {
            algorithms: plan
                .algorithms
                .iter()
                .copied()
                .filter(|a| a.takes_block_threads())
                .collect(),
            block_threads: Some(threads),
            cpu_row: plan.cpu_row && i == 0,
            copies: false,
            ..plan.clone()
        })
        .collect()
}

/// Prefix sum on the GPU: the lab's table.
#[derive(Parser)]
struct Args {
    /// Elements to scan.
    #[arg(long, default_value_t = 123_123_123)]
    n: usize,
    /// Threads per block for the teaching algorithms (32 … 1024).
    #[arg(long)]
    block_size: Option<u32>,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Algorithms, comma-separated (default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Element types, comma-separated.
    #[arg(long, default_value = "i32")]
    types: String,
    /// The labs' sweep: 2^12 … 2^29 and 5/8 of each, written as CSV.
    #[arg(long)]
    sweep: bool,
    /// The lab's block-size sweep: the teaching algorithms at 32, 64, …,
    /// 1024 threads per block.
    #[arg(long, conflicts_with_all = ["sweep", "block_size"])]
    block_sweep: bool,
    /// CSV of the GPU rows (default with --sweep: scan-sweep.csv).
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
            sizes: Some(args.n.to_string()),
            algos: args.algos.clone(),
            types: Some(args.types.clone()),
            sweep: args.sweep,
            block_threads: args.block_size,
        };
        let mut plan = ScanPlan::from_selection(&selection, &BENCH_SIZES, &[ElementType::I32])?;
        plan.cpu_row = true;
        plan.copies = !args.sweep;
        let mut options = LabOptions::with_reps(args.reps)?;
        if let Some(seed) = args.seed {
            options.seed = seed;
        }
        let Some(lab) = open_or_explain(options)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let plans = if args.block_sweep {
            block_sweep(&plan)
        } else {
            vec![plan]
        };
        let progress = Progress::new(plans.iter().map(ScanPlan::cases).sum());
        let rows: Vec<_> = plans
            .iter()
            .flat_map(|plan| parprims_lab::prims::scan::run(&lab, plan, &progress))
            .collect();
        progress.finish();
        let csv = args
            .csv
            .clone()
            .or_else(|| args.sweep.then(|| PathBuf::from("scan-sweep.csv")));
        finish(&lab, &rows, csv.as_deref())
    })
}
