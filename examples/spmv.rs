//! The SpMV lab: `y = A·x` over CSR with every GPU method of
//! `linalg::spmv` (merge path, vector, scalar, segmented scan), each timed
//! (GB/s and fraction of the copy ceiling in the table) and checked
//! against the CPU.
//!
//! With `--mtx FILE` it runs on your Matrix Market matrix (`coordinate`,
//! `real`/`integer`/`pattern`, `general`/`symmetric`/`skew-symmetric`),
//! with x drawn by the benchmark's generator. Without a file it generates
//! the benchmark's matrices (uniform 32 per row, power-law rows) and a band
//! of 33 per row, `--rows` rows each.
//!
//! ```sh
//! cargo run --release --example spmv
//! cargo run --release --example spmv -- --rows 2^20 --algos mergepath,vector
//! cargo run --release --example spmv -- --mtx matrix.mtx --types f64
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use gpu_core::ElementType;
use linalg::spmv::generate::{generate_x, SEED};
use linalg::spmv::{read_matrix_market_file, SpmvElement};
use parprims_lab::front::{exit_with, finish, open_or_explain};
use parprims_lab::prims::spmv::{run, run_host, Kind, SpmvPlan, BENCH_ROWS};
use parprims_lab::progress::Progress;
use parprims_lab::select::Selection;
use parprims_lab::{Lab, LabOptions, Row};

/// Sparse matrix–vector multiply on the GPU: every method side by side.
#[derive(Parser)]
struct Args {
    /// A Matrix Market file to run on (default: the generated matrices).
    #[arg(long)]
    mtx: Option<PathBuf>,
    /// Rows (= columns) of the generated matrices, comma-separated (default 2^22).
    #[arg(long)]
    rows: Option<String>,
    /// Methods, comma-separated (`MergePath`, `Vector`, `Scalar`, `SegmentedScan`; default: all).
    #[arg(long)]
    algos: Option<String>,
    /// Value types, comma-separated (f32, f64).
    #[arg(long, default_value = "f32")]
    types: String,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// CSV of the GPU rows.
    #[arg(long)]
    csv: Option<PathBuf>,
}

fn on_file<T: SpmvElement>(
    lab: &Lab,
    path: &std::path::Path,
    plan: &SpmvPlan,
    progress: &Progress,
) -> gpu_core::Result<Vec<Row>> {
    let a = read_matrix_market_file::<T>(path)?;
    eprintln!(
        "{}: {} × {}, {} stored entries",
        path.display(),
        a.rows,
        a.cols,
        a.nnz()
    );
    let x = generate_x::<T>(a.cols, SEED);
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mtx".into());
    let shape = format!("{}x{}/{name}", a.rows, a.cols);
    Ok(run_host(lab, &shape, &a, &x, &plan.methods, progress))
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit_with(|| {
        let selection = Selection {
            sizes: args.rows.clone(),
            algos: args.algos.clone(),
            types: Some(args.types.clone()),
            ..Selection::default()
        };
        let mut plan = SpmvPlan::from_selection(&selection, &BENCH_ROWS)?;
        plan.kinds = Kind::EXAMPLE.to_vec();
        let options = LabOptions::with_reps(args.reps)?;
        let Some(lab) = open_or_explain(options)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let rows = match &args.mtx {
            Some(path) => {
                let progress = Progress::new((plan.types.len() * plan.methods.len()) as u64);
                let mut rows = Vec::new();
                for &t in &plan.types {
                    rows.extend(match t {
                        ElementType::F64 => on_file::<f64>(&lab, path, &plan, &progress)?,
                        _ => on_file::<f32>(&lab, path, &plan, &progress)?,
                    });
                }
                progress.finish();
                rows
            }
            None => {
                let progress = Progress::new(plan.cases());
                let rows = run(&lab, &plan, &progress);
                progress.finish();
                rows
            }
        };
        finish(&lab, &rows, args.csv.as_deref())
    })
}
