//! The `parprims` command line (clap), kept in the lab's library so tests
//! can parse it and the binary stays a few lines.
//!
//! ```text
//! parprims [--reps N] [--seed S] [--device D] [--quick]
//! parprims bench <scan|compact|transpose|matvec|conv|reduce|histogram|segreduce|runs|spmv|sort|copy|all>
//!          [--sizes …] [--algos …] [--types …] [--reps N] [--sweep]
//!          [--csv FILE] [--plot STEM] [--compare FILE] [--out-dir DIR]
//! parprims warm-cache [--arch sm_80,sm_90] [--out DIR] [--threads N]
//! parprims plot FILE.csv… --out STEM [--primitive P] [--title T]
//!          [--ceiling GBPS] [--per-second NOUN]
//! ```

use std::path::PathBuf;

use clap::{Args, Subcommand};
use gpu_core::kernel::{validate_arch, warm_disk_cache, CacheWarmReport, DiskCache};
use gpu_core::{Error, Gpu, ModuleSource, Result};

use parprims_testkit::bench::{read_csv, Record, Timing};

use crate::bench::{targets, BenchOptions};
use crate::plot::{plot_element_rate, plot_records};
use crate::select::Selection;

/// clap's parsing trait, for [`Cli::parse`]: the binary needs no clap of its
/// own.
pub use clap::Parser;

/// Run, verify and measure GPU parallel primitives.
#[derive(Clone, Debug, Parser, PartialEq)]
#[command(
    name = "parprims",
    version,
    about = "Run, verify and measure GPU parallel primitives (scan, compaction, transpose, matvec, conv2d, reduction, histogram, segmented reduce, runs, SpMV, sort).",
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
    /// Compile every kernel of the workspace into a kernel cache, for one
    /// or several architectures, so later runs load them instead of waiting
    /// for NVRTC, or run without NVRTC at all (ship the directory and set
    /// `PARPRIMS_CACHE_DIR` to it); needs NVRTC, and a GPU only when
    /// `--arch` is not given.
    WarmCache(WarmCacheArgs),
    /// Draw the plots of stored results (parprims' CSV format, ours and
    /// the peers'): STEM-time and STEM-gbps (.svg, .png), and with
    /// --per-second STEM-rate; needs no GPU.
    Plot(PlotArgs),
}

/// Arguments of `parprims plot`.
#[derive(Clone, Debug, Args, PartialEq)]
pub struct PlotArgs {
    /// Results CSVs, ours first (the copy ceiling line is the first
    /// file's), then any peers'.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output stem: STEM-time.svg/.png, STEM-gbps.svg/.png.
    #[arg(long)]
    pub out: PathBuf,
    /// Only this primitive's rows (default: every row).
    #[arg(long)]
    pub primitive: Option<String>,
    /// The plots' title (default: the primitive).
    #[arg(long)]
    pub title: Option<String>,
    /// The copy ceiling line, GB/s (default: the median ceiling of the
    /// first file's rows).
    #[arg(long)]
    pub ceiling: Option<f64>,
    /// Also STEM-rate.svg/.png: NOUN per second against size (`keys`).
    #[arg(long)]
    pub per_second: Option<String>,
}

/// `parprims bench` arguments.
#[derive(Clone, Debug, Args, PartialEq)]
pub struct BenchArgs {
    /// scan, compact, transpose, matvec, conv, reduce, histogram,
    /// segreduce, runs, spmv, sort, copy, or all.
    pub primitive: String,
    /// Sizes, comma-separated: counts (`2^24,123123123`) for scan, compact,
    /// reduce, histogram and copy; `ROWSxCOLS` or a side (`4096`) for the
    /// 2-D primitives.
    #[arg(long)]
    pub sizes: Option<String>,
    /// Methods, comma-separated (names as the table shows them).
    #[arg(long)]
    pub algos: Option<String>,
    /// Element types, comma-separated (i32 u32 i64 u64 f32 f64; reduce also
    /// i8 u8 i16 u16 f16 bf16, histogram i32 u8 u32 f32).
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
    /// Target architectures, comma-separated (`sm_80,sm_90`); default: that
    /// of the `--device` GPU.
    #[arg(long)]
    pub arch: Option<String>,
    /// The cache directory to fill (created if needed); default: the one
    /// the environment selects (`PARPRIMS_CACHE_DIR`, else the user's
    /// cache directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Compiler threads; default: the machine's parallelism.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// What `parprims warm-cache` did.
#[derive(Clone, Debug, PartialEq)]
pub struct WarmCacheOutcome {
    /// The architectures compiled for.
    pub archs: Vec<String>,
    /// The cache directory filled.
    pub dir: PathBuf,
    /// Modules per architecture.
    pub modules: usize,
    /// Compiler threads used.
    pub threads: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Counts and failures over every (module, architecture).
    pub report: CacheWarmReport,
}

impl WarmCacheOutcome {
    /// Every cubin is in the cache (none failed to compile or be written).
    pub fn complete(&self) -> bool {
        self.report.failures.is_empty() && self.report.not_stored == 0
    }

    /// The lines `parprims warm-cache` prints on stdout.
    pub fn summary(&self) -> String {
        let r = &self.report;
        let mut text = format!(
            "warm-cache {}: {} modules each, {} compiled, {} already cached, {} not stored, \
             {} failed ({} threads, {:.1} s) in {}\n",
            self.archs.join(","),
            self.modules,
            r.compiled,
            r.already_cached,
            r.not_stored,
            r.failures.len(),
            self.threads,
            self.seconds,
            self.dir.display()
        );
        if self.complete() {
            text.push_str(&format!(
                "To use it: PARPRIMS_CACHE_DIR={} (a process without NVRTC loads every kernel \
                 from it on a GPU of these architectures)\n",
                self.dir.display()
            ));
        }
        text
    }
}

impl WarmCacheArgs {
    /// The architectures of `--arch` (each `sm_` and digits, no
    /// duplicates), or `None` when it was not given.
    pub fn archs(&self) -> Result<Option<Vec<String>>> {
        let Some(list) = &self.arch else {
            return Ok(None);
        };
        let mut archs: Vec<String> = Vec::new();
        for arch in list.split(',').map(str::trim) {
            validate_arch(arch)?;
            if !archs.iter().any(|a| a == arch) {
                archs.push(arch.to_owned());
            }
        }
        Ok(Some(archs))
    }

    /// The cache to fill: `--out`, else the environment's.
    pub fn cache(&self) -> DiskCache {
        match &self.out {
            Some(dir) => DiskCache::at(dir),
            None => DiskCache::from_env(),
        }
    }

    /// Compiles `modules` (the workspace's catalogue) for every
    /// architecture into the cache. Arguments are checked first; without
    /// `--arch` the architecture is that of GPU `device`.
    pub fn run(&self, device: usize, modules: &[ModuleSource]) -> Result<WarmCacheOutcome> {
        let archs = match self.archs()? {
            Some(archs) => archs,
            None => vec![Gpu::new(device)
                .map_err(|e| {
                    Error::invalid(
                        "arch",
                        format!(
                            "not given, and no GPU to take it from ({e}); pass --arch, \
                             like --arch sm_80,sm_90"
                        ),
                    )
                })?
                .info()
                .arch()],
        };
        let threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let cache = self.cache();
        let dir = cache.dir().map(PathBuf::from).ok_or_else(|| {
            Error::invalid(
                "out",
                "no cache directory: PARPRIMS_CACHE_DIR is empty; pass --out DIR",
            )
        })?;
        let started = std::time::Instant::now();
        let arch_names: Vec<&str> = archs.iter().map(String::as_str).collect();
        let report = warm_disk_cache(&cache, modules, &arch_names, threads)?;
        Ok(WarmCacheOutcome {
            archs,
            dir,
            modules: modules.len(),
            threads,
            seconds: started.elapsed().as_secs_f64(),
            report,
        })
    }
}

impl PlotArgs {
    /// Reads every file, keeps the rows asked for and writes the plots.
    /// Returns the files written. Nothing is written when a file cannot be
    /// read, no row is left, or the ceiling is not a positive number.
    pub fn run(&self) -> Result<Vec<PathBuf>> {
        if let Some(ceiling) = self.ceiling {
            if !(ceiling.is_finite() && ceiling > 0.0) {
                return Err(Error::invalid(
                    "ceiling",
                    format!("{ceiling} is not a positive GB/s"),
                ));
            }
        }
        if let Some(noun) = &self.per_second {
            if noun.trim().is_empty() {
                return Err(Error::invalid("per-second", "an empty noun"));
            }
        }
        let keep = |r: &Record| self.primitive.as_deref().is_none_or(|p| r.primitive == p);
        let mut files = self.files.iter();
        let mut records: Vec<Record> = match files.next() {
            Some(path) => read_csv(path)?.into_iter().filter(keep).collect(),
            None => return Err(Error::invalid("files", "no results file")),
        };
        // The ceiling line is the first file's (ours), before the peers'.
        let ceiling = self.ceiling.or_else(|| median_ceiling(&records));
        for path in files {
            records.extend(read_csv(path)?.into_iter().filter(keep));
        }
        if records.is_empty() {
            return Err(Error::invalid(
                "files",
                match &self.primitive {
                    Some(p) => format!("no row of primitive {p:?}"),
                    None => "no rows".to_owned(),
                },
            ));
        }
        let title = match (&self.title, &self.primitive) {
            (Some(title), _) => title.clone(),
            (None, Some(primitive)) => primitive.clone(),
            (None, None) => records[0].primitive.clone(),
        };
        let mut written = plot_records(&self.out, &title, &records, ceiling)?;
        if let Some(noun) = &self.per_second {
            written.extend(plot_element_rate(&self.out, &title, &records, noun.trim())?);
        }
        Ok(written)
    }
}

/// The median of the records' positive copy ceilings, if any.
fn median_ceiling(records: &[Record]) -> Option<f64> {
    let ceilings: Vec<f64> = records
        .iter()
        .map(|r| r.ceiling_gbps)
        .filter(|c| c.is_finite() && *c > 0.0)
        .collect();
    Timing::from_samples(ceilings).ok().map(|t| t.median_ms)
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

    fn plot_record(primitive: &str, algorithm: &str, n: usize, ms: f64) -> Record {
        Record {
            primitive: primitive.into(),
            algorithm: algorithm.into(),
            element_type: "u32".into(),
            shape: n.to_string(),
            ms_median: ms,
            gbps: 8.0 * n as f64 / (ms * 1e6),
            ceiling_gbps: 2990.0,
            device: "test".into(),
        }
    }

    /// `parprims plot` draws stored results: ours and a peer's file, one
    /// primitive kept, the rate plot on request; bad arguments write
    /// nothing.
    #[test]
    fn plot_draws_stored_results() {
        use parprims_testkit::bench::write_csv;
        let dir = std::env::temp_dir().join(format!("parprims-plot-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ours = dir.join("sort.csv");
        let peers = dir.join("peers.csv");
        write_csv(
            &ours,
            &[
                plot_record("sort", "onesweep", 1 << 20, 0.1),
                plot_record("sort", "onesweep", 1 << 24, 0.43),
                plot_record("sort", "bitonic", 1 << 20, 0.4),
                plot_record("scan", "DecoupledLookback", 1 << 20, 0.01),
            ],
        )
        .unwrap();
        let mut peer = plot_record("sort", "cupy.sort", 1 << 24, 0.5);
        peer.ceiling_gbps = 2900.0;
        write_csv(&peers, &[peer]).unwrap();
        let stem = dir.join("out").join("sort");
        let cli = Cli::try_parse_from([
            "parprims",
            "plot",
            ours.to_str().unwrap(),
            peers.to_str().unwrap(),
            "--out",
            stem.to_str().unwrap(),
            "--primitive",
            "sort",
            "--per-second",
            "keys",
        ])
        .unwrap();
        let Some(Command::Plot(args)) = cli.command else {
            panic!("plot expected");
        };
        let written = args.run().unwrap();
        assert_eq!(written.len(), 6);
        let gbps = std::fs::read_to_string(&written[2]).unwrap();
        assert!(gbps.contains("copy ceiling 2990 GB/s"), "{gbps:.300}");
        assert!(gbps.contains("cupy.sort") && gbps.contains("bitonic"));
        assert!(!gbps.contains("DecoupledLookback"));
        assert!(std::fs::read_to_string(&written[4])
            .unwrap()
            .contains("G keys/s"));
        // No rows of that primitive, an unreadable file, a bad ceiling:
        // errors, nothing written.
        let refused = dir.join("refused").join("x");
        for bad in [
            PlotArgs {
                primitive: Some("fft".into()),
                out: refused.clone(),
                ..args.clone()
            },
            PlotArgs {
                files: vec![dir.join("missing.csv")],
                out: refused.clone(),
                ..args.clone()
            },
            PlotArgs {
                ceiling: Some(-1.0),
                out: refused.clone(),
                ..args.clone()
            },
        ] {
            assert!(bad.run().is_err(), "{bad:?}");
        }
        assert!(!dir.join("refused").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn warm_cache_arguments_parse() {
        let cli = Cli::try_parse_from([
            "parprims",
            "warm-cache",
            "--arch",
            "sm_80, sm_90,sm_80",
            "--out",
            "kernels-dir",
            "--threads",
            "3",
        ])
        .unwrap();
        let Some(Command::WarmCache(args)) = cli.command else {
            panic!("warm-cache expected");
        };
        assert_eq!(
            args.archs().unwrap(),
            Some(vec!["sm_80".to_owned(), "sm_90".to_owned()])
        );
        assert_eq!(args.threads, Some(3));
        assert_eq!(
            args.cache().dir(),
            Some(std::path::Path::new("kernels-dir"))
        );
        assert!(Cli::try_parse_from(["parprims", "warm-cache", "--threads", "x"]).is_err());
        let bad = WarmCacheArgs {
            arch: Some("sm_90,compute_90".to_owned()),
            out: None,
            threads: None,
        };
        assert!(matches!(bad.archs(), Err(Error::InvalidArgument { .. })));
        // Refused before anything is compiled or written.
        let dir = std::env::temp_dir().join(format!("parprims-warm-bad-{}", std::process::id()));
        let bad = WarmCacheArgs {
            out: Some(dir.clone()),
            ..bad
        };
        assert!(bad.run(0, &gpu_core::kernel_catalog()).is_err());
        assert!(!dir.exists());
    }

    /// `parprims warm-cache --arch sm_80,sm_90 --out DIR` over a small
    /// catalogue (gpu-core's own modules), then every module looked up the
    /// way a process without NVRTC does (no compiler): all found, for both
    /// architectures.
    #[test]
    fn a_warmed_directory_serves_every_module_without_nvrtc() {
        use gpu_core::kernel::find_cubin;
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("parprims-warm-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cli = Cli::try_parse_from([
            "parprims",
            "warm-cache",
            "--arch",
            "sm_80,sm_90",
            "--out",
            dir.to_str().unwrap(),
            "--threads",
            "2",
        ])
        .unwrap();
        let Some(Command::WarmCache(args)) = cli.command else {
            panic!("warm-cache expected");
        };
        let modules = gpu_core::kernel_catalog();
        let outcome = args.run(0, &modules).unwrap();
        assert!(outcome.complete(), "{}", outcome.summary());
        assert_eq!(outcome.report.compiled, 2 * modules.len());
        assert!(outcome.summary().contains("PARPRIMS_CACHE_DIR="));
        let cache = DiskCache::at(&dir);
        for arch in ["sm_80", "sm_90"] {
            for module in &modules {
                let found = find_cubin(&cache, module, arch, None)
                    .unwrap_or_else(|e| panic!("{} {arch}: {e}", module.name()));
                assert!(found.from_disk);
            }
        }
        // A second run finds everything already there.
        let again = args.run(0, &modules).unwrap();
        assert_eq!(again.report.already_cached, 2 * modules.len());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(Cli::try_parse_from(["parprims", "bench"]).is_err());
        assert!(Cli::try_parse_from(["parprims", "--reps", "x"]).is_err());
        let cli = Cli::try_parse_from(["parprims", "bench", "fft"]).unwrap();
        let Some(Command::Bench(args)) = cli.command else {
            panic!("bench expected");
        };
        assert!(args.options().is_err());
    }
}
