//! `parprims`: the tour of every primitive (no arguments), the benchmark
//! (`parprims bench …`), `parprims warm-cache` and `parprims plot`. A thin front end over the
//! lab runner, [`parprims_lab`] (built with the `cli` feature, on by
//! default).

use std::process::ExitCode;

use parprims::gpu_core::{Gpu, Result};
use parprims_lab as lab;
use parprims_lab::cli::{BenchArgs, Cli, Command, Parser, PlotArgs, WarmCacheArgs};
use parprims_lab::front::verdict;
use parprims_lab::{render_table, Lab, LabOptions};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        None => tour(&cli),
        Some(Command::Bench(args)) => bench(&cli, args),
        Some(Command::WarmCache(args)) => warm_cache(&cli, args),
        Some(Command::Plot(args)) => plot(args),
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("parprims: {error}");
        ExitCode::from(2)
    })
}

fn options(cli: &Cli, default_reps: usize) -> Result<LabOptions> {
    let mut options = LabOptions::with_reps(cli.reps.unwrap_or(default_reps))?;
    options.ordinal = cli.device;
    options.quick = cli.quick;
    if let Some(seed) = cli.seed {
        options.seed = seed;
    }
    Ok(options)
}

fn tour(cli: &Cli) -> Result<ExitCode> {
    let options = options(cli, 10)?;
    let gpu = match Gpu::new(options.ordinal) {
        Ok(gpu) => gpu,
        Err(error) => {
            println!("{}", lab::no_gpu_sentence(&error));
            println!(
                "\nThe CPU references instead (wall clock, median of {}; inputs: seed {}):",
                options.cpu_reps.timed, options.seed
            );
            let rows = lab::tour::cpu_tour(options.seed, options.cpu_reps);
            print!("{}", render_table(&rows, None));
            return Ok(verdict(&rows));
        }
    };
    let lab = Lab::with_gpu(gpu, options)?;
    println!("{}\n", lab.header());
    let rows = lab::tour::gpu_tour(&lab);
    print!("{}", render_table(&rows, Some(lab.ceiling().gbps)));
    Ok(verdict(&rows))
}

fn bench(cli: &Cli, args: &BenchArgs) -> Result<ExitCode> {
    let bench_options = args.options()?;
    // Every argument is checked before the GPU is opened.
    lab::bench::validate(&bench_options)?;
    let options = options(cli, 20)?;
    let gpu = match Gpu::new(options.ordinal) {
        Ok(gpu) => gpu,
        Err(error) => {
            println!("{}", lab::no_gpu_sentence(&error));
            println!("parprims bench measures the GPU: nothing to do here.");
            return Ok(ExitCode::from(1));
        }
    };
    let lab = Lab::with_gpu(gpu, options)?;
    println!("{}", lab.header());
    let results = lab::bench::run(&lab, &bench_options)?;
    let measured: Vec<_> = results
        .iter()
        .flat_map(|r| r.records.iter().chain(&r.peers).cloned())
        .collect();
    print!(
        "{}",
        lab::headline::render(&lab::headline::evaluate(&measured))
    );
    for file in results.iter().flat_map(|r| &r.files) {
        println!("wrote {}", file.display());
    }
    let rows: Vec<lab::Row> = results.into_iter().flat_map(|r| r.rows).collect();
    Ok(verdict(&rows))
}

fn warm_cache(cli: &Cli, args: &WarmCacheArgs) -> Result<ExitCode> {
    let outcome = args.run(cli.device, &parprims::kernel_catalog())?;
    print!("{}", outcome.summary());
    for failure in &outcome.report.failures {
        eprintln!("{failure}");
    }
    Ok(if outcome.complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `parprims plot`: the plots of stored results, no GPU.
fn plot(args: &PlotArgs) -> Result<ExitCode> {
    for path in args.run()? {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
