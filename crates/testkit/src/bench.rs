//! The benchmark harness shared by the examples, the `parprims` command and
//! the benchmarks: warm-up, repetitions, median/min/max, GB/s from the bytes
//! an algorithm declares it moves, and the device-to-device copy ceiling
//! measured in the same process.
//!
//! Results are [`Record`]s, written as CSV with [`CSV_HEADER`].

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use gpu_core::{DeviceBuffer, Error, Gpu, GpuTimer, Result};

/// The exit status of an example that checks what it measures: success
/// when every check passed, 2 when one failed, and failure (after printing
/// `name: error` to stderr) when it could not run.
///
/// ```
/// use std::process::ExitCode;
/// use parprims_testkit::bench::checked_exit;
/// assert_eq!(checked_exit("demo", Ok::<_, gpu_core::Error>(true)), ExitCode::SUCCESS);
/// assert_eq!(checked_exit("demo", Ok::<_, gpu_core::Error>(false)), ExitCode::from(2));
/// ```
pub fn checked_exit<E: std::fmt::Display>(
    name: &str,
    outcome: std::result::Result<bool, E>,
) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How many runs to throw away and how many to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repetitions {
    /// Untimed runs first (module loading, caches, clocks).
    pub warmup: usize,
    /// Timed runs; the median is reported.
    pub timed: usize,
}

impl Default for Repetitions {
    fn default() -> Self {
        Repetitions {
            warmup: 3,
            timed: 20,
        }
    }
}

/// Summary of repeated timings, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Median.
    pub median_ms: f64,
    /// Fastest run.
    pub min_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Every timed run, in order.
    pub samples_ms: Vec<f64>,
}

impl Timing {
    /// Summarises samples (at least one).
    pub fn from_samples(samples_ms: Vec<f64>) -> Result<Timing> {
        if samples_ms.is_empty() {
            return Err(Error::invalid("timed", "at least one timed run is needed"));
        }
        let mut sorted = samples_ms.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let mid = sorted.len() / 2;
        let median_ms = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            0.5 * (sorted[mid - 1] + sorted[mid])
        };
        Ok(Timing {
            median_ms,
            min_ms: sorted[0],
            max_ms: sorted[sorted.len() - 1],
            samples_ms,
        })
    }

    /// GB/s (10^9 bytes per second) at the median for `bytes` moved per run.
    pub fn gbps(&self, bytes: f64) -> f64 {
        gbps(bytes, self.median_ms)
    }
}

/// 10^9 bytes per second for `bytes` moved in `ms` milliseconds.
pub fn gbps(bytes: f64, ms: f64) -> f64 {
    if ms > 0.0 {
        bytes / (ms * 1e-3) / 1e9
    } else {
        0.0
    }
}

/// Times device work with CUDA events: `prepare` runs untimed before each
/// run (poison the output, rotate inputs), `run` is timed on its own.
pub fn time_device(
    gpu: &Gpu,
    reps: Repetitions,
    mut prepare: impl FnMut(usize) -> Result<()>,
    mut run: impl FnMut(usize) -> Result<()>,
) -> Result<Timing> {
    let timer = GpuTimer::new(gpu)?;
    for i in 0..reps.warmup {
        prepare(i)?;
        run(i)?;
    }
    gpu.synchronize()?;
    let mut samples = Vec::with_capacity(reps.timed);
    for i in 0..reps.timed {
        prepare(reps.warmup + i)?;
        timer.start()?;
        run(reps.warmup + i)?;
        timer.stop()?;
        samples.push(timer.elapsed_ms()?);
    }
    Timing::from_samples(samples)
}

/// Times `calls` runs back to back between one pair of CUDA events and
/// reports each repetition's time per run: the steady rate of a pipeline,
/// where the host's work on one call overlaps the device's work on the one
/// before. `prepare` runs untimed before each group of `calls` runs; `run`
/// gets the running index of the run (warm-up groups included).
pub fn time_device_batched(
    gpu: &Gpu,
    reps: Repetitions,
    calls: usize,
    mut prepare: impl FnMut(usize) -> Result<()>,
    mut run: impl FnMut(usize) -> Result<()>,
) -> Result<Timing> {
    if calls == 0 {
        return Err(Error::invalid("calls", "at least one call per group"));
    }
    let timer = GpuTimer::new(gpu)?;
    let mut samples = Vec::with_capacity(reps.timed);
    for group in 0..reps.warmup + reps.timed {
        prepare(group)?;
        timer.start()?;
        for call in 0..calls {
            run(group * calls + call)?;
        }
        timer.stop()?;
        let ms = timer.elapsed_ms()?;
        if group >= reps.warmup {
            samples.push(ms / calls as f64);
        }
    }
    Timing::from_samples(samples)
}

/// Times host work (CPU references, or device work including its host↔device
/// copies, which must synchronise before returning) with the wall clock.
pub fn time_host(reps: Repetitions, mut run: impl FnMut(usize) -> Result<()>) -> Result<Timing> {
    for i in 0..reps.warmup {
        run(i)?;
    }
    let mut samples = Vec::with_capacity(reps.timed);
    for i in 0..reps.timed {
        let started = Instant::now();
        run(reps.warmup + i)?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Timing::from_samples(samples)
}

/// The device-to-device copy ceiling: the bandwidth of a large
/// `cuMemcpyDtoDAsync`, counting bytes read plus bytes written.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyCeiling {
    /// Bytes in one copy (read once, written once).
    pub bytes_copied: usize,
    /// Timing of the copies.
    pub timing: Timing,
    /// (read + write) bytes / median time, GB/s.
    pub gbps: f64,
}

impl CopyCeiling {
    /// `achieved_gbps` as a fraction of the ceiling.
    pub fn fraction(&self, achieved_gbps: f64) -> f64 {
        if self.gbps > 0.0 {
            achieved_gbps / self.gbps
        } else {
            0.0
        }
    }
}

/// Measures the copy ceiling with a copy of `bytes` bytes (use well over the
/// L2 size: 1 GiB is the default the tools use).
pub fn copy_ceiling(gpu: &Gpu, bytes: usize, reps: Repetitions) -> Result<CopyCeiling> {
    let words = bytes / 4;
    if words == 0 {
        return Err(Error::invalid("bytes", "copy at least 4 bytes"));
    }
    let src = DeviceBuffer::<u32>::filled(gpu, words, 0x5a5a_5a5a)?;
    let mut dst = DeviceBuffer::<u32>::zeros(gpu, words)?;
    let timing = time_device(
        gpu,
        reps,
        |_| Ok(()),
        |_| dst.view_mut().copy_from(gpu, &src.view()),
    )?;
    let bytes_copied = words * 4;
    let gbps = timing.gbps(2.0 * bytes_copied as f64);
    Ok(CopyCeiling {
        bytes_copied,
        timing,
        gbps,
    })
}

/// The CSV header every parprims results file starts with.
pub const CSV_HEADER: &str =
    "primitive,algorithm,type,shape,ms_median,gbps,ceiling_gbps,fraction_of_ceiling,device";

/// One measured result.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// `scan`, `compact`, `transpose`, `matvec`, `conv`.
    pub primitive: String,
    /// Algorithm or peer name (`DecoupledLookback`, `torch.cumsum`).
    pub algorithm: String,
    /// Element type (`i32`).
    pub element_type: String,
    /// Problem shape (`268435456`, `16384x16384`, `8192x8192/k3`).
    pub shape: String,
    /// Median time, ms.
    pub ms_median: f64,
    /// Achieved GB/s from the declared bytes moved.
    pub gbps: f64,
    /// Copy ceiling measured in the same run, GB/s.
    pub ceiling_gbps: f64,
    /// The GPU (`NVIDIA H100 80GB HBM3, sm_90`).
    pub device: String,
}

impl Record {
    /// `gbps / ceiling_gbps`.
    pub fn fraction_of_ceiling(&self) -> f64 {
        if self.ceiling_gbps > 0.0 {
            self.gbps / self.ceiling_gbps
        } else {
            0.0
        }
    }

    /// The record as one CSV line (no newline). Text fields are quoted when
    /// they hold a comma or a quote.
    pub fn to_csv(&self) -> String {
        format!(
            "{},{},{},{},{:.6},{:.2},{:.2},{:.4},{}",
            csv_field(&self.primitive),
            csv_field(&self.algorithm),
            csv_field(&self.element_type),
            csv_field(&self.shape),
            self.ms_median,
            self.gbps,
            self.ceiling_gbps,
            self.fraction_of_ceiling(),
            csv_field(&self.device)
        )
    }

    /// Parses a line written by [`Record::to_csv`] (or a peer's CSV).
    pub fn from_csv(line: &str) -> Result<Record> {
        let fields = split_csv(line);
        if fields.len() != 9 {
            return Err(Error::invalid(
                "csv",
                format!("expected 9 fields, found {}: {line:?}", fields.len()),
            ));
        }
        let number = |i: usize| -> Result<f64> {
            fields[i]
                .trim()
                .parse::<f64>()
                .map_err(|_| Error::invalid("csv", format!("field {i} is not a number: {line:?}")))
        };
        Ok(Record {
            primitive: fields[0].clone(),
            algorithm: fields[1].clone(),
            element_type: fields[2].clone(),
            shape: fields[3].clone(),
            ms_median: number(4)?,
            gbps: number(5)?,
            ceiling_gbps: number(6)?,
            device: fields[8].clone(),
        })
    }
}

/// One CSV text field: quoted (quotes doubled) when it holds a comma, a
/// quote or a newline, as is otherwise.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn split_csv(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Writes `records` to `path` with the header (replacing the file).
pub fn write_csv(path: &Path, records: &[Record]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(file, "{CSV_HEADER}")?;
    for record in records {
        writeln!(file, "{}", record.to_csv())?;
    }
    file.flush()?;
    Ok(())
}

/// Reads a results CSV written by [`write_csv`] (header required).
pub fn read_csv(path: &Path) -> Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    match lines.next() {
        Some(header) if header.trim() == CSV_HEADER => {}
        other => {
            return Err(Error::invalid(
                "csv",
                format!(
                    "{}: first line must be the header {CSV_HEADER:?}, found {other:?}",
                    path.display()
                ),
            ))
        }
    }
    lines
        .filter(|l| !l.trim().is_empty())
        .map(Record::from_csv)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.max_ms), (2.0, 1.0, 3.0));
        let t = Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(t.median_ms, 2.5);
        assert!(Timing::from_samples(vec![]).is_err());
    }

    #[test]
    fn gbps_arithmetic() {
        // 2 GB in 1 ms is 2000 GB/s.
        assert!((gbps(2e9, 1.0) - 2000.0).abs() < 1e-9);
        assert_eq!(gbps(1.0, 0.0), 0.0);
    }

    #[test]
    fn csv_round_trip() {
        let r = Record {
            primitive: "scan".into(),
            algorithm: "DecoupledLookback".into(),
            element_type: "i32".into(),
            shape: "268435456".into(),
            ms_median: 0.75,
            gbps: 2863.3,
            ceiling_gbps: 3000.0,
            device: "NVIDIA H100 80GB HBM3, sm_90".into(),
        };
        let line = r.to_csv();
        assert!(line.contains("\"NVIDIA H100 80GB HBM3, sm_90\""));
        let back = Record::from_csv(&line).unwrap();
        assert_eq!(back.algorithm, r.algorithm);
        assert_eq!(back.device, r.device);
        assert!((back.gbps - r.gbps).abs() < 0.01);
        assert!((r.fraction_of_ceiling() - 0.9544).abs() < 1e-3);
        assert!(Record::from_csv("a,b,c").is_err());
    }

    #[test]
    fn csv_files_round_trip() {
        let path = std::env::temp_dir().join(format!("parprims-csv-{}.csv", std::process::id()));
        let r = Record {
            primitive: "p".into(),
            algorithm: "a".into(),
            element_type: "f32".into(),
            shape: "1".into(),
            ms_median: 1.0,
            gbps: 1.0,
            ceiling_gbps: 2.0,
            device: "d".into(),
        };
        write_csv(&path, std::slice::from_ref(&r)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(CSV_HEADER));
        assert_eq!(read_csv(&path).unwrap().len(), 1);
        std::fs::write(&path, "bad header\n").unwrap();
        assert!(read_csv(&path).is_err());
        let _ = std::fs::remove_file(&path);
    }
}
