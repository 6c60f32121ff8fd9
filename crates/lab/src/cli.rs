//! The `parprims` command line (clap), kept in the lab's library so tests
//! can parse it and the binary stays a few lines.
//!
//! ```text
//! parprims [--reps N] [--seed S] [--device D] [--quick]
//! parprims bench <scan|compact|transpose|matvec|conv|copy|all>
//!          [--sizes …] [--algos …] [--types …] [--reps N] [--sweep]
//!          [--csv FILE] [--plot STEM] [--compare FILE] [--out-dir DIR]
//! parprims warm-cache [--arch sm_XY] [--threads N]
//! ```

use std::path::PathBuf;

use clap::{Args, Subcommand};
use gpu_core::Result;

use crate::bench::{targets, BenchOptions};
use crate::select::Selection;

/// clap's parsing trait, for [`Cli::parse`]: the binary needs no clap of its
/// own.
pub use clap::Parser;

/// Run, verify and measure GPU parallel primitives.
#[derive(Clone, Debug, Parser, PartialEq)]
#[command(
    name = "parprims",
    version,
    about = "Run, verify and measure GPU parallel primitives (scan, compaction, transpose, matvec, conv2d).",
    long_about = "With no command: on a GPU, print the device and its copy ceiling, run every \
                  primitive's default method and every lab method at a modest size, check each \
                  against the CPU reference and print one table. Without a GPU, say so and show \
                  the CPU references instead."
)]
pub struct Cli {
    /// `bench`, or nothing for the tour.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Timed repetitions per method (the median is reported) [default: 10,
    /// or 20 for bench].
    #[arg(long, global = true)]
    pub reps: Option<usize>,
    /// Seed of the random inputs (printed with every table; default: the clock).
    #[arg(long, global = true)]
    pub seed: Option<u64>,
    /// CUDA device ordinal.
    #[arg(long, global = true, default_value_t = 0)]
    pub device: usize,
    /// A quick tour: sizes ÷ 64, 2-D sides ÷ 8 (a smoke test in seconds,
    /// also under compute-sanitizer). The benchmark ignores it.
    #[arg(long)]
    pub quick: bool,
}

/// Subcommands.
#[derive(Clone, Debug, Subcommand, PartialEq)]
pub enum Command {
    /// Benchmark one primitive or all: table, CSV, plots, peers.
    Bench(BenchArgs),
    /// Compile every kernel of the workspace into the disk cache
    /// (`PARPRIMS_CACHE_DIR`), so later runs load them instead of waiting
    /// for NVRTC; needs NVRTC, and a GPU only when `--arch` is not given.
    WarmCache(WarmCacheArgs),
}

/// `parprims bench` arguments.
#[derive(Clone, Debug, Args, PartialEq)]
pub struct BenchArgs {
    /// scan, compact, transpose, matvec, conv, copy, or all.
    pub primitive: String,
    /// Sizes, comma-separated: counts (`2^24,123123123`) for scan, compact
    /// and copy; `ROWSxCOLS` or a side (`4096`) for the 2-D primitives.
    #[arg(long)]
    pub sizes: Option<String>,
    /// Methods, comma-separated (names as the table shows them).
    #[arg(long)]
    pub algos: Option<String>,
    /// Element types, comma-separated (i32 u32 i64 u64 f32 f64).
    #[arg(long)]
    pub types: Option<String>,
    /// The labs' sweep for scan and compact: 2^12 … 2^29 and 5/8 of each.
    #[arg(long)]
    pub sweep: bool,
    /// Threads per block for the teaching kernels that take one.
    #[arg(long)]
    pub block_size: Option<u32>,
    /// Write every record to this CSV (parprims' results format).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write plots: STEM-time.svg/.png and STEM-gbps.svg/.png.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Merge a peers CSV (bench/peers.py) into tables and plots.
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Write DIR/PRIMITIVE.csv and DIR/PRIMITIVE-{time,gbps}.{svg,png}.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// Arguments of `parprims warm-cache`.
#[derive(Clone, Debug, Args, PartialEq)]
pub struct WarmCacheArgs {
    /// Target architecture (`sm_90`); default: that of the `--device` GPU.
    #[arg(long)]
    pub arch: Option<String>,
    /// Compiler threads; default: the machine's parallelism.
    #[arg(long)]
    pub threads: Option<usize>,
}

impl BenchArgs {
    /// The options the runner takes; names and sizes are validated later,
    /// before the GPU is opened.
    pub fn options(&self) -> Result<BenchOptions> {
        Ok(BenchOptions {
            targets: targets(&self.primitive)?,
            selection: Selection {
                sizes: self.sizes.clone(),
                algos: self.algos.clone(),
                types: self.types.clone(),
                sweep: self.sweep,
                block_threads: self.block_size,
            },
            csv: self.csv.clone(),
            plot: self.plot.clone(),
            compare: self.compare.clone(),
            out_dir: self.out_dir.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_arguments_is_the_tour() {
        let cli = Cli::try_parse_from(["parprims"]).unwrap();
        assert_eq!(cli.command, None);
        assert_eq!(cli.reps, None);
        assert_eq!(cli.device, 0);
    }

    #[test]
    fn bench_arguments_parse() {
        let cli = Cli::try_parse_from([
            "parprims",
            "bench",
            "copy",
            "--sizes",
            "2^20,2^24",
            "--types",
            "i32",
            "--reps",
            "5",
            "--csv",
            "out.csv",
            "--plot",
            "p",
            "--out-dir",
            "d",
            "--seed",
            "9",
        ])
        .unwrap();
        assert_eq!(cli.reps, Some(5));
        assert_eq!(cli.seed, Some(9));
        let Some(Command::Bench(args)) = cli.command else {
            panic!("bench expected");
        };
        let options = args.options().unwrap();
        assert_eq!(options.targets, vec!["copy".to_owned()]);
        assert_eq!(options.selection.sizes.as_deref(), Some("2^20,2^24"));
        assert_eq!(options.csv, Some(PathBuf::from("out.csv")));
        assert_eq!(options.out_dir, Some(PathBuf::from("d")));
    }

    #[test]
    fn warm_cache_arguments_parse() {
        let cli = Cli::try_parse_from([
            "parprims",
            "warm-cache",
            "--arch",
            "sm_90",
            "--threads",
            "3",
        ])
        .unwrap();
        let Some(Command::WarmCache(args)) = cli.command else {
            panic!("warm-cache expected");
        };
        assert_eq!(args.arch.as_deref(), Some("sm_90"));
        assert_eq!(args.threads, Some(3));
        assert!(Cli::try_parse_from(["parprims", "warm-cache", "--threads", "x"]).is_err());
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(Cli::try_parse_from(["parprims", "bench"]).is_err());
        assert!(Cli::try_parse_from(["parprims", "--reps", "x"]).is_err());
        let cli = Cli::try_parse_from(["parprims", "bench", "sort"]).unwrap();
        let Some(Command::Bench(args)) = cli.command else {
            panic!("bench expected");
        };
        assert!(args.options().is_err());
    }
}
