//! `parprims bench`: every selected size × type × method of one primitive
//! or all, one table, CSV in the harness's format, plots, and a peers CSV
//! merged in for comparison.

use std::path::{Path, PathBuf};

use gpu_core::{Error, Result};
use parprims_testkit::bench::{read_csv, write_csv, Record};

use super::plot::plot_records;
use super::prims::{self, Primitive};
use super::progress::Progress;
use super::select::Selection;
use super::table::{render_table, Row};
use super::Lab;

/// What `parprims bench` was asked to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchOptions {
    /// Primitive names (`all` already expanded).
    pub targets: Vec<String>,
    /// Sizes, methods, types.
    pub selection: Selection,
    /// One CSV of every record.
    pub csv: Option<PathBuf>,
    /// Plot file stem (`docs/results/scan` → `scan-time.svg`, ...); with
    /// several primitives, `-<primitive>` is appended.
    pub plot: Option<PathBuf>,
    /// A peers CSV to merge into tables and plots.
    pub compare: Option<PathBuf>,
    /// A directory for `<primitive>.csv` and `<primitive>-*.svg/png`.
    pub out_dir: Option<PathBuf>,
}

/// Expands `all` and checks every name; order follows the registry.
pub fn targets(name: &str) -> Result<Vec<String>> {
    let registry = prims::registry();
    if name == "all" {
        return Ok(registry.iter().map(|p| p.name.to_owned()).collect());
    }
    if registry.iter().any(|p| p.name == name) {
        return Ok(vec![name.to_owned()]);
    }
    let names: Vec<&str> = registry.iter().map(|p| p.name).collect();
    Err(Error::invalid(
        "primitive",
        format!(
            "{name:?} is not available in this build; choose from {} or all",
            names.join(", ")
        ),
    ))
}

/// Validates the options without a GPU (names, sizes, methods, types, the
/// peers file); returns the number of cases for the progress bar.
pub fn validate(options: &BenchOptions) -> Result<u64> {
    let mut cases = 0;
    for name in &options.targets {
        let primitive = find(name)?;
        cases += (primitive.validate)(&options.selection).map_err(|e| match e {
            Error::InvalidArgument { name: what, reason } => Error::InvalidArgument {
                name: what,
                reason: format!("{}: {reason}", primitive.name),
            },
            other => other,
        })?;
    }
    if let Some(path) = &options.compare {
        read_csv(path)?;
    }
    Ok(cases)
}

fn find(name: &str) -> Result<Primitive> {
    prims::find(name).ok_or_else(|| Error::invalid("primitive", format!("unknown {name:?}")))
}

/// What one primitive's benchmark produced.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// The primitive.
    pub primitive: String,
    /// Measured rows (then the peers' rows, if any).
    pub rows: Vec<Row>,
    /// Our records (what goes to CSV).
    pub records: Vec<Record>,
    /// Peers' records for this primitive.
    pub peers: Vec<Record>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Runs the benchmark, printing each primitive's table as it completes;
/// writes CSV and plots. Returns every primitive's result.
pub fn run(lab: &Lab, options: &BenchOptions) -> Result<Vec<BenchResult>> {
    let cases = validate(options)?;
    let peers = match &options.compare {
        Some(path) => read_csv(path)?,
        None => Vec::new(),
    };
    let progress = Progress::new(cases);
    let several = options.targets.len() > 1;
    let mut results = Vec::new();
    for name in &options.targets {
        let primitive = find(name)?;
        let rows = (primitive.bench)(lab, &options.selection, &progress)?;
        let records = lab.records(&rows);
        let peer_records: Vec<Record> = peers
            .iter()
            .filter(|r| r.primitive == primitive.name)
            .cloned()
            .collect();
        let mut all_rows = rows;
        all_rows.extend(peer_records.iter().map(Row::from_record));
        progress.finish_line(&format!(
            "\n{}\n{}",
            primitive.name,
            render_table(&all_rows, Some(lab.ceiling().gbps))
        ));
        let mut files = Vec::new();
        let mut plotted: Vec<Record> = records.clone();
        plotted.extend(peer_records.iter().cloned());
        if let Some(dir) = &options.out_dir {
            let csv = dir.join(format!("{}.csv", primitive.name));
            write_csv(&csv, &records)?;
            files.push(csv);
            files.extend(plot_or_note(
                &dir.join(primitive.name),
                primitive.name,
                &plotted,
                lab.ceiling().gbps,
            ));
        }
        if let Some(stem) = &options.plot {
            let stem = if several {
                suffixed(stem, primitive.name)
            } else {
                stem.clone()
            };
            files.extend(plot_or_note(
                &stem,
                primitive.name,
                &plotted,
                lab.ceiling().gbps,
            ));
        }
        results.push(BenchResult {
            primitive: primitive.name.to_owned(),
            rows: all_rows,
            records,
            peers: peer_records,
            files,
        });
    }
    progress.finish();
    if let Some(path) = &options.csv {
        let all: Vec<Record> = results.iter().flat_map(|r| r.records.clone()).collect();
        write_csv(path, &all)?;
        if let Some(last) = results.last_mut() {
            last.files.push(path.clone());
        }
    }
    Ok(results)
}

/// Plots, or says on stderr why not (a plot failing does not lose the CSV).
fn plot_or_note(stem: &Path, title: &str, records: &[Record], ceiling: f64) -> Vec<PathBuf> {
    match plot_records(stem, title, records, Some(ceiling)) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("parprims: no plot for {title}: {error}");
            Vec::new()
        }
    }
}

/// `dir/name.ext` → `dir/name-suffix.ext`.
pub fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{suffix}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_expand_and_refuse() {
        let all = targets("all").unwrap();
        assert!(all.contains(&"copy".to_owned()));
        assert_eq!(targets("copy").unwrap(), vec!["copy".to_owned()]);
        let err = targets("fft").unwrap_err().to_string();
        assert!(err.contains("copy"), "{err}");
    }

    #[test]
    fn options_are_validated_without_a_gpu() {
        let mut options = BenchOptions {
            targets: vec!["copy".into()],
            ..BenchOptions::default()
        };
        assert!(validate(&options).unwrap() > 0);
        options.selection.types = Some("f16".into());
        assert!(validate(&options).unwrap_err().to_string().contains("copy"));
        options.selection.types = None;
        options.compare = Some(PathBuf::from("/nonexistent/peers.csv"));
        assert!(validate(&options).is_err());
    }

    #[test]
    fn suffixes() {
        assert_eq!(
            suffixed(Path::new("a/plot.svg"), "scan"),
            PathBuf::from("a/plot-scan.svg")
        );
        assert_eq!(
            suffixed(Path::new("plot"), "conv"),
            PathBuf::from("plot-conv")
        );
    }
}
