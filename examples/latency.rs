//! Latency of single calls at small sizes: what one call through the public
//! API costs when the work is too small to fill the GPU, in steady state
//! (kernels loaded, scratch memory held, inputs and outputs allocated once).
//!
//! For each size n (2^10, 2^16 and 2^20 by default) and each primitive:
//!
//! | primitive (CSV) | the call | problem at n |
//! |---|---|---|
//! | `scan::scan_into` | inclusive `i32` `Sum`, default options | n elements |
//! | `compact::select_flagged_into` | `i32`, random byte flags (about half kept) | n elements |
//! | `compact::select_if_into` | `i32`, `Predicate::Gt(0)` (about half kept) | n elements |
//! | `reduce::sum` | `i32` sum returned to the host (its one synchronisation inside the call) | n elements |
//! | `linalg::transpose` | `f32`, default algorithm | √n × √n |
//! | `linalg::matvec` | `f32` `A·x`, default algorithm | √n × √n matrix |
//! | `linalg::conv2d` | `f32` image, 3×3 filter, default options (Valid) | √n × √n image |
//! | `DeviceViewMut::copy_from` | device-to-device copy of n `i32` (the floor for moving n elements) | n elements |
//! | `DeviceViewMut::fill` | the fill kernel on 1 element (the floor for one launch) | 1 element, once |
//!
//! (An n that is not a square gives the 2-D primitives `rows × cols` with
//! `rows = 2^⌊k/2⌋` for n = 2^k, else `rows = ⌊√n⌋`, `cols = ⌊n / rows⌋`; the
//! CSV's `n` is then `rows · cols`.)
//!
//! Three numbers per row, each the median of `--reps` after `--warmup`
//! untimed calls, all from the timing harness (`parprims_testkit::bench`):
//!
//! | column | what is timed |
//! |---|---|
//! | device, one call | CUDA events around one call. By default the stream is idle when the start event is recorded, so the events also see the host's work inside the call (checks, kernel lookup, launch); with `--queued` the start event waits behind a 64 MiB fill, so they see the device's work only |
//! | device, back to back | events around `--calls` calls, divided by the count: the rate of a pipeline, host work overlapping device work |
//! | host | the wall clock from before the call to after `gpu.synchronize()` returns: host call to result ready |
//!
//! Inputs are fresh random values (whole numbers, so float results are
//! exact; `--seed` replays them). Outputs are poisoned before every timed
//! one-call run and before the other two phases, and checked against the
//! CPU reference after each phase; a mismatch ends the run with exit status 2.
//! Small inputs stay in L2 between calls, as they do in a program that
//! calls the same primitive on the same buffers.
//!
//! ```sh
//! cargo run --release --example latency
//! cargo run --release --example latency -- --csv docs/results/latency.csv
//! cargo run --release --example latency -- --sizes 2^16 --only scan,select_flagged --queued
//! ```

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use parprims::compact::{self, CompactOptions, Predicate};
use parprims::gpu_core::{DeviceBuffer, DeviceType, Error, Gpu, Result, Sum};
use parprims::linalg::{
    self, conv_cpu, ConvOptions, Matrix, MatvecAlgorithm, Transpose, TransposeAlgorithm,
};
use parprims::reduce;
use parprims::scan::{self, ScanKind, ScanOptions};
use parprims_lab::check::{compare, compare_count, Check};
use parprims_lab::inputs::{clock_seed, derive_seed, values};
use parprims_lab::no_gpu_sentence;
use parprims_lab::sizes::parse_counts;
use parprims_testkit::bench::{
    csv_field, time_device, time_device_batched, time_host, Repetitions,
};
use parprims_testkit::rng::random_flags;

/// Latency of single parprims calls at small sizes.
#[derive(Parser)]
struct Args {
    /// Element counts, comma-separated (`2^16`, `65536`, `5*2^10`).
    #[arg(long, default_value = "2^10,2^16,2^20")]
    sizes: String,
    /// Which primitives, comma-separated: scan, select_flagged, select_if,
    /// transpose, matvec, conv, copy, launch (default: all).
    #[arg(long)]
    only: Option<String>,
    /// Timed repetitions per phase (the median is reported).
    #[arg(long, default_value_t = 200)]
    reps: usize,
    /// Untimed calls (or groups of calls) before each phase.
    #[arg(long, default_value_t = 20)]
    warmup: usize,
    /// Calls between one pair of events in the back-to-back phase.
    #[arg(long, default_value_t = 100)]
    calls: usize,
    /// Record the one-call start event behind a 64 MiB fill, so that the
    /// events see the device's work only.
    #[arg(long)]
    queued: bool,
    /// Write the rows as CSV here:
    /// primitive,n,device_us_one,device_us_back_to_back,host_us,device.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Seed of the inputs (default: the clock).
    #[arg(long)]
    seed: Option<u64>,
}

/// The primitives, by the names `--only` takes, in table order.
const PRIMITIVES: [&str; 9] = [
    "launch",
    "copy",
    "scan",
    "sum",
    "select_flagged",
    "select_if",
    "transpose",
    "matvec",
    "conv",
];

/// Elements of the fill that keeps the stream busy under `--queued`: 64 MiB,
/// tens of microseconds of writes, longer than the host's work in a call.
const BUSY_ELEMENTS: usize = 1 << 24;

/// The CSV header.
const CSV_COLUMNS: &str = "primitive,n,device_us_one,device_us_back_to_back,host_us,device";

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("latency: {error}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let sizes = parse_counts(&args.sizes)?;
    if sizes.is_empty() || sizes.contains(&0) {
        return Err(Error::invalid("sizes", "give at least one size, each ≥ 1"));
    }
    let only = parse_only(args.only.as_deref())?;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error @ (Error::NoDriver | Error::BadOrdinal { count: 0, .. })) => {
            println!("{}", no_gpu_sentence(&error));
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    let mut plan = Plan {
        reps: Repetitions {
            warmup: args.warmup,
            timed: args.reps.max(1),
        },
        calls: args.calls.max(1),
        busy: if args.queued {
            Some(DeviceBuffer::<i32>::poisoned(&gpu, BUSY_ELEMENTS)?)
        } else {
            None
        },
    };
    let seed = args.seed.unwrap_or_else(clock_seed);
    let device = format!("{}, {}", gpu.info().name, gpu.info().arch());
    println!("{}", gpu.info().summary());
    println!(
        "steady-state latency, µs, median of {} after {} warm-ups; one call: events {}; \
         back to back: {} calls between events; host: call → gpu.synchronize(); seed {seed}\n",
        plan.reps.timed,
        plan.reps.warmup,
        if args.queued {
            "behind a 64 MiB fill (device work only)"
        } else {
            "from an idle stream (host work in the call included)"
        },
        plan.calls
    );
    println!("| primitive | n | shape | device µs, one call | device µs, back to back | host µs |");
    println!("|---|---|---|---|---|---|");

    let mut rows = Vec::new();
    let mut stream = 0u64;
    let mut next_seed = || {
        stream += 1;
        derive_seed(seed, stream)
    };
    if only.contains(&"launch") {
        let mut case = FillCase::new(&gpu)?;
        rows.push(measure(&gpu, &mut case, &mut plan)?);
    }
    for &n in &sizes {
        for &name in PRIMITIVES.iter().filter(|p| only.contains(p)) {
            let mut case: Box<dyn Case> = match name {
                "copy" => Box::new(CopyCase::new(&gpu, n, next_seed())?),
                "scan" => Box::new(ScanCase::new(&gpu, n, next_seed())?),
                "sum" => Box::new(SumCase::new(&gpu, n, next_seed())?),
                "select_flagged" => Box::new(SelectCase::flagged(&gpu, n, next_seed())?),
                "select_if" => Box::new(SelectCase::predicate(&gpu, n, next_seed())?),
                "transpose" => Box::new(TransposeCase::new(&gpu, n, next_seed())?),
                "matvec" => Box::new(MatvecCase::new(&gpu, n, next_seed())?),
                "conv" => match ConvCase::new(&gpu, n, next_seed())? {
                    Some(case) => Box::new(case),
                    None => {
                        eprintln!("conv at n = {n}: the image is smaller than the filter; skipped");
                        continue;
                    }
                },
                _ => continue, // "launch": once, above
            };
            rows.push(measure(&gpu, case.as_mut(), &mut plan)?);
        }
    }
    if let Some(path) = &args.csv {
        write_rows(path, &rows, &device)?;
        println!("\nwrote {} rows to {}", rows.len(), path.display());
    }
    Ok(())
}

fn parse_only(text: Option<&str>) -> Result<Vec<&'static str>> {
    let Some(text) = text else {
        return Ok(PRIMITIVES.to_vec());
    };
    let mut chosen = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match PRIMITIVES.iter().find(|p| **p == word) {
            Some(name) => chosen.push(*name),
            None => {
                return Err(Error::invalid(
                    "only",
                    format!(
                        "unknown primitive {word:?}: choose from {}",
                        PRIMITIVES.join(", ")
                    ),
                ))
            }
        }
    }
    Ok(chosen)
}

/// How every case is timed.
struct Plan {
    reps: Repetitions,
    calls: usize,
    /// The buffer a fill keeps the stream busy with under `--queued`.
    busy: Option<DeviceBuffer<i32>>,
}

/// One measured row.
struct Row {
    primitive: &'static str,
    elements: usize,
    one_us: f64,
    back_to_back_us: f64,
    host_us: f64,
}

/// One primitive at one size, called as a user calls it: inputs and outputs
/// allocated once, the same call repeated on them.
trait Case {
    /// The function a user calls (the CSV's `primitive`).
    fn primitive(&self) -> &'static str;
    /// Elements of the problem (of the matrix or image for the 2-D ones).
    fn elements(&self) -> usize;
    /// The shape for the table: `65536`, `256x256`, `256x256/k3`.
    fn shape(&self) -> String;
    /// The call that is timed (enqueued; does not wait).
    fn call(&mut self, gpu: &Gpu) -> Result<()>;
    /// Writes the poison value over the outputs (enqueued).
    fn poison(&mut self, gpu: &Gpu) -> Result<()>;
    /// Reads the outputs back and compares them with the CPU reference.
    fn check(&self, gpu: &Gpu) -> Result<Check>;
}

/// Times `case` three ways (module docs), checking its output after each,
/// and prints its table row.
fn measure(gpu: &Gpu, case: &mut dyn Case, plan: &mut Plan) -> Result<Row> {
    let reps = plan.reps;
    let case = RefCell::new(case);
    let busy = &mut plan.busy;

    let one = time_device(
        gpu,
        reps,
        |_| {
            case.borrow_mut().poison(gpu)?;
            match busy.as_mut() {
                Some(buffer) => buffer.view_mut().fill(gpu, i32::poison()),
                None => gpu.synchronize(),
            }
        },
        |_| case.borrow_mut().call(gpu),
    )?;
    verify(gpu, &**case.borrow(), "one call")?;

    case.borrow_mut().poison(gpu)?;
    let back_to_back = time_device_batched(
        gpu,
        reps,
        plan.calls,
        |_| gpu.synchronize(),
        |_| case.borrow_mut().call(gpu),
    )?;
    verify(gpu, &**case.borrow(), "back to back")?;

    case.borrow_mut().poison(gpu)?;
    gpu.synchronize()?;
    let host = time_host(reps, |_| {
        case.borrow_mut().call(gpu)?;
        gpu.synchronize()
    })?;
    verify(gpu, &**case.borrow(), "host")?;

    let case = case.borrow();
    let row = Row {
        primitive: case.primitive(),
        elements: case.elements(),
        one_us: one.median_ms * 1e3,
        back_to_back_us: back_to_back.median_ms * 1e3,
        host_us: host.median_ms * 1e3,
    };
    println!(
        "| `{}` | {} | {} | {:.2} | {:.2} | {:.2} |",
        row.primitive,
        row.elements,
        case.shape(),
        row.one_us,
        row.back_to_back_us,
        row.host_us
    );
    let _ = std::io::stdout().flush();
    Ok(row)
}

/// A failed check is an error naming the case and the phase.
fn verify(gpu: &Gpu, case: &dyn Case, phase: &str) -> Result<()> {
    gpu.synchronize()?;
    match case.check(gpu)? {
        Check::Fail(reason) => Err(Error::invalid(
            "result",
            format!("{} {} ({phase}): {reason}", case.primitive(), case.shape()),
        )),
        _ => Ok(()),
    }
}

fn write_rows(path: &Path, rows: &[Row], device: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(file, "{CSV_COLUMNS}")?;
    for row in rows {
        writeln!(
            file,
            "{},{},{:.3},{:.3},{:.3},{}",
            csv_field(row.primitive),
            row.elements,
            row.one_us,
            row.back_to_back_us,
            row.host_us,
            csv_field(device)
        )?;
    }
    file.flush()?;
    Ok(())
}

/// The matrix the 2-D primitives use for about n elements (module docs).
fn matrix_shape(n: usize) -> (usize, usize) {
    let rows = if n.is_power_of_two() {
        1usize << (n.trailing_zeros() / 2)
    } else {
        (n as f64).sqrt().floor().max(1.0) as usize
    };
    (rows, (n / rows).max(1))
}

// --- the cases ---------------------------------------------------------------

/// `DeviceViewMut::fill` of one element: one launch of gpu-core's smallest
/// kernel.
struct FillCase {
    buffer: DeviceBuffer<i32>,
}

/// The value the launch floor writes (anything but the poison).
const FILL_VALUE: i32 = 7;

impl FillCase {
    fn new(gpu: &Gpu) -> Result<Self> {
        Ok(FillCase {
            buffer: DeviceBuffer::poisoned(gpu, 1)?,
        })
    }
}

impl Case for FillCase {
    fn primitive(&self) -> &'static str {
        "DeviceViewMut::fill"
    }
    fn elements(&self) -> usize {
        1
    }
    fn shape(&self) -> String {
        "1".to_owned()
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        self.buffer.view_mut().fill(gpu, FILL_VALUE)
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        // The fill kernel itself, with another value: the poison is what
        // the timed call must overwrite.
        self.buffer.view_mut().fill(gpu, i32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.buffer.to_host(gpu)?, &[FILL_VALUE], 1))
    }
}

/// `DeviceViewMut::copy_from`: n `i32`, device to device.
struct CopyCase {
    source: DeviceBuffer<i32>,
    destination: DeviceBuffer<i32>,
    expected: Vec<i32>,
}

impl CopyCase {
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let expected = values::<i32>(n, seed);
        Ok(CopyCase {
            source: DeviceBuffer::from_host(gpu, &expected)?,
            destination: DeviceBuffer::poisoned(gpu, n)?,
            expected,
        })
    }
}

impl Case for CopyCase {
    fn primitive(&self) -> &'static str {
        "DeviceViewMut::copy_from"
    }
    fn elements(&self) -> usize {
        self.expected.len()
    }
    fn shape(&self) -> String {
        self.expected.len().to_string()
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        self.destination
            .view_mut()
            .copy_from(gpu, &self.source.view())
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.destination.view_mut().fill(gpu, i32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.destination.to_host(gpu)?, &self.expected, 1))
    }
}

/// `scan::scan_into`: inclusive `i32` sum, default options.
struct ScanCase {
    input: DeviceBuffer<i32>,
    output: DeviceBuffer<i32>,
    options: ScanOptions,
    expected: Vec<i32>,
}

impl ScanCase {
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let host = values::<i32>(n, seed);
        Ok(ScanCase {
            input: DeviceBuffer::from_host(gpu, &host)?,
            output: DeviceBuffer::poisoned(gpu, n)?,
            options: ScanOptions::default(),
            expected: scan::cpu::inclusive(&host, &Sum),
        })
    }
}

impl Case for ScanCase {
    fn primitive(&self) -> &'static str {
        "scan::scan_into"
    }
    fn elements(&self) -> usize {
        self.expected.len()
    }
    fn shape(&self) -> String {
        self.expected.len().to_string()
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        scan::scan_into(
            gpu,
            self.input.view(),
            self.output.view_mut(),
            &Sum,
            ScanKind::Inclusive,
            &self.options,
        )
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.view_mut().fill(gpu, i32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        let terms = self.expected.len();
        Ok(compare(&self.output.to_host(gpu)?, &self.expected, terms))
    }
}

/// `reduce::sum`: `i32`, the value returned to the host.
struct SumCase {
    input: DeviceBuffer<i32>,
    result: Option<i32>,
    expected: i32,
    n: usize,
}

impl SumCase {
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let host = values::<i32>(n, seed);
        Ok(SumCase {
            input: DeviceBuffer::from_host(gpu, &host)?,
            result: None,
            expected: reduce::cpu::reduce(&host, &Sum),
            n,
        })
    }
}

impl Case for SumCase {
    fn primitive(&self) -> &'static str {
        "reduce::sum"
    }
    fn elements(&self) -> usize {
        self.n
    }
    fn shape(&self) -> String {
        self.n.to_string()
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        self.result = Some(reduce::sum(gpu, self.input.view())?);
        Ok(())
    }
    fn poison(&mut self, _gpu: &Gpu) -> Result<()> {
        self.result = None;
        Ok(())
    }
    fn check(&self, _gpu: &Gpu) -> Result<Check> {
        let got = self.result.map(|v| vec![v]).unwrap_or_default();
        Ok(compare(&got, &[self.expected], self.n))
    }
}

/// What a [`SelectCase`] keeps by.
enum Keep {
    /// `select_flagged_into` with these byte flags.
    Flags(DeviceBuffer<u8>),
    /// `select_if_into` with this predicate.
    Predicate(Predicate<i32>),
}

/// `compact::select_flagged_into` or `compact::select_if_into`, `i32`,
/// default options, the count left on the device.
struct SelectCase {
    input: DeviceBuffer<i32>,
    keep: Keep,
    output: DeviceBuffer<i32>,
    count: DeviceBuffer<u64>,
    expected: Vec<i32>,
    n: usize,
}

impl SelectCase {
    /// Random byte flags, non-zero with probability ½.
    fn flagged(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let host = values::<i32>(n, seed);
        let flags = random_flags(n, derive_seed(seed, 1), 0.5);
        let expected = compact::cpu::select_flagged(&host, &flags)?;
        Self::with(
            gpu,
            &host,
            Keep::Flags(DeviceBuffer::from_host(gpu, &flags)?),
            expected,
        )
    }

    /// `x > 0` on values drawn from -8..=8: a little under half kept.
    fn predicate(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let host = values::<i32>(n, seed);
        let predicate = Predicate::Gt(0);
        let expected = compact::cpu::select_if(&host, &predicate);
        Self::with(gpu, &host, Keep::Predicate(predicate), expected)
    }

    fn with(gpu: &Gpu, host: &[i32], keep: Keep, expected: Vec<i32>) -> Result<Self> {
        Ok(SelectCase {
            input: DeviceBuffer::from_host(gpu, host)?,
            keep,
            output: DeviceBuffer::poisoned(gpu, host.len())?,
            count: DeviceBuffer::filled(gpu, 1, u64::MAX)?,
            expected,
            n: host.len(),
        })
    }
}

impl Case for SelectCase {
    fn primitive(&self) -> &'static str {
        match self.keep {
            Keep::Flags(_) => "compact::select_flagged_into",
            Keep::Predicate(_) => "compact::select_if_into",
        }
    }
    fn elements(&self) -> usize {
        self.n
    }
    fn shape(&self) -> String {
        self.n.to_string()
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        let options = CompactOptions::default();
        match &self.keep {
            Keep::Flags(flags) => compact::select_flagged_into(
                gpu,
                self.input.view(),
                flags.view(),
                self.output.view_mut(),
                self.count.view_mut(),
                options,
            ),
            Keep::Predicate(predicate) => compact::select_if_into(
                gpu,
                self.input.view(),
                predicate,
                self.output.view_mut(),
                self.count.view_mut(),
                options,
            ),
        }
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.view_mut().fill(gpu, i32::poison())?;
        self.count.view_mut().fill(gpu, u64::MAX)
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        let count = self.count.to_host(gpu)?[0];
        let counted = compare_count(count as usize, self.expected.len());
        if counted.failed() {
            return Ok(counted);
        }
        let kept = self.output.slice(..self.expected.len())?.to_host(gpu)?;
        Ok(compare(&kept, &self.expected, 1))
    }
}

/// `linalg::transpose`: `f32` `rows × cols`, the default algorithm.
struct TransposeCase {
    input: Matrix<f32>,
    output: Matrix<f32>,
    expected: Vec<f32>,
}

impl TransposeCase {
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let (rows, cols) = matrix_shape(n);
        let host = values::<f32>(rows * cols, seed);
        Ok(TransposeCase {
            input: Matrix::from_host(gpu, rows, cols, &host)?,
            output: Matrix::poisoned(gpu, cols, rows)?,
            expected: linalg::cpu::transpose(&host, rows, cols)?,
        })
    }
}

impl Case for TransposeCase {
    fn primitive(&self) -> &'static str {
        "linalg::transpose"
    }
    fn elements(&self) -> usize {
        self.expected.len()
    }
    fn shape(&self) -> String {
        format!("{}x{}", self.input.rows(), self.input.cols())
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        linalg::transpose(
            gpu,
            self.input.view(),
            self.output.view_mut(),
            TransposeAlgorithm::default(),
        )
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.view_mut().data_mut().fill(gpu, f32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.output.to_host(gpu)?, &self.expected, 1))
    }
}

/// `linalg::matvec`: `y = A·x`, `f32` `rows × cols`, the default algorithm.
struct MatvecCase {
    matrix: Matrix<f32>,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    expected: Vec<f32>,
}

impl MatvecCase {
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Self> {
        let (rows, cols) = matrix_shape(n);
        let a = values::<f32>(rows * cols, seed);
        let x = values::<f32>(cols, derive_seed(seed, 1));
        Ok(MatvecCase {
            matrix: Matrix::from_host(gpu, rows, cols, &a)?,
            x: DeviceBuffer::from_host(gpu, &x)?,
            y: DeviceBuffer::poisoned(gpu, rows)?,
            expected: linalg::cpu::matvec(&a, rows, cols, &x, Transpose::No)?,
        })
    }
}

impl Case for MatvecCase {
    fn primitive(&self) -> &'static str {
        "linalg::matvec"
    }
    fn elements(&self) -> usize {
        self.matrix.rows() * self.matrix.cols()
    }
    fn shape(&self) -> String {
        format!("{}x{}", self.matrix.rows(), self.matrix.cols())
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        linalg::matvec(
            gpu,
            self.matrix.view(),
            self.x.view(),
            self.y.view_mut(),
            Transpose::No,
            MatvecAlgorithm::default(),
        )
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.y.view_mut().fill(gpu, f32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        let terms = self.matrix.cols();
        Ok(compare(&self.y.to_host(gpu)?, &self.expected, terms))
    }
}

/// The filter side of the conv case.
const CONV_K: usize = 3;

/// `linalg::conv2d`: `f32` image `rows × cols`, a 3×3 filter, default
/// options (Valid, zero padding, correlation, `TiledHalo`).
struct ConvCase {
    image: Matrix<f32>,
    filter: Matrix<f32>,
    output: Matrix<f32>,
    options: ConvOptions,
    expected: Vec<f32>,
}

impl ConvCase {
    /// `None` when the image is smaller than the filter.
    fn new(gpu: &Gpu, n: usize, seed: u64) -> Result<Option<Self>> {
        let (rows, cols) = matrix_shape(n);
        if rows < CONV_K || cols < CONV_K {
            return Ok(None);
        }
        let options = ConvOptions::default();
        let (out_rows, out_cols) = linalg::conv::output_shape(rows, cols, CONV_K, options.border)?;
        let image = values::<f32>(rows * cols, seed);
        let filter = values::<f32>(CONV_K * CONV_K, derive_seed(seed, 1));
        Ok(Some(ConvCase {
            image: Matrix::from_host(gpu, rows, cols, &image)?,
            filter: Matrix::from_host(gpu, CONV_K, CONV_K, &filter)?,
            output: Matrix::poisoned(gpu, out_rows, out_cols)?,
            expected: conv_cpu::conv2d(&image, rows, cols, &filter, CONV_K, &options)?,
            options,
        }))
    }
}

impl Case for ConvCase {
    fn primitive(&self) -> &'static str {
        "linalg::conv2d"
    }
    fn elements(&self) -> usize {
        self.image.rows() * self.image.cols()
    }
    fn shape(&self) -> String {
        format!("{}x{}/k{CONV_K}", self.image.rows(), self.image.cols())
    }
    fn call(&mut self, gpu: &Gpu) -> Result<()> {
        linalg::conv2d(
            gpu,
            self.image.view(),
            self.filter.view(),
            self.output.view_mut(),
            &self.options,
        )
    }
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.view_mut().data_mut().fill(gpu, f32::poison())
    }
    fn check(&self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(
            &self.output.to_host(gpu)?,
            &self.expected,
            CONV_K * CONV_K,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_hold_n_elements_for_powers_of_two() {
        assert_eq!(matrix_shape(1 << 10), (32, 32));
        assert_eq!(matrix_shape(1 << 16), (256, 256));
        assert_eq!(matrix_shape(1 << 20), (1024, 1024));
        assert_eq!(matrix_shape(1 << 11), (32, 64));
        assert_eq!(matrix_shape(1000), (31, 32));
        assert_eq!(matrix_shape(1), (1, 1));
    }

    #[test]
    fn only_takes_known_names() {
        assert_eq!(parse_only(None).unwrap(), PRIMITIVES.to_vec());
        assert_eq!(
            parse_only(Some("scan, conv")).unwrap(),
            vec!["scan", "conv"]
        );
        assert!(parse_only(Some("sort")).is_err());
    }
}
