//! Plots of benchmark records, as SVG and PNG.
//!
//! For a file stem `P` ([`plot_records`]) four files are written:
//!
//! - `P-time.svg`, `P-time.png`: median time against size, log–log, one
//!   series per method (and per peer); sizes that are not powers of two (the
//!   labs' 5/8 sizes) form their own series with a hollow marker, so the
//!   power-of-two and non-power-of-two curves can be told apart;
//! - `P-gbps.svg`, `P-gbps.png`: GB/s (from the declared bytes) against
//!   size, log x, with the copy ceiling drawn as a dashed line.
//!
//! [`plot_element_rate`] writes a fifth and sixth, `P-rate.svg` and
//! `P-rate.png`: elements per second (keys/s for a sort) against size,
//! log–log, for labs whose methods move different bytes per element or
//! whose lesson speaks in elements per second.
//!
//! Text needs a font: an embedded DejaVu Sans Mono (see
//! `plot/LICENSE-DejaVu.txt`) is registered with plotters' `ab_glyph`
//! backend, so PNGs have labels on machines without system fonts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpu_core::{Error, Result};
use parprims_testkit::bench::Record;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::sizes::{shape_elements, shape_is_power_of_two};

static FONT: &[u8] = include_bytes!("plot/DejaVuSansMono.ttf");

/// Registers the embedded font as plotters' `sans-serif` (once).
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        [FontStyle::Normal, FontStyle::Bold]
            .into_iter()
            .all(|style| plotters::style::register_font("sans-serif", style, FONT).is_ok())
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Unsupported(
            "the embedded plot font could not be loaded".into(),
        ))
    }
}

/// One line of a plot: a label and its (elements, value) points, sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Whether these are the non-power-of-two sizes.
    pub non_power_of_two: bool,
    /// `(elements, value)` points, sorted by elements.
    pub points: Vec<(f64, f64)>,
}

/// The legend label of a record: the method, plus the element type when
/// the records hold several, plus the part of the shape after `/` (the
/// filter size of a convolution) when there is one.
pub fn series_label(record: &Record, several_types: bool) -> String {
    let mut label = record.algorithm.clone();
    if several_types {
        label.push(' ');
        label.push_str(&record.element_type);
    }
    if let Some((_, extra)) = record.shape.split_once('/') {
        label.push(' ');
        label.push_str(extra);
    }
    label
}

/// Groups records into series of `value(record)` against elements.
/// Records whose shape has no size are skipped.
pub fn series(records: &[Record], value: impl Fn(&Record) -> f64) -> Vec<Series> {
    let mut types: Vec<&str> = records.iter().map(|r| r.element_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let several_types = types.len() > 1;
    let mut groups: BTreeMap<(String, bool), Vec<(f64, f64)>> = BTreeMap::new();
    for record in records {
        let Some(elements) = shape_elements(&record.shape) else {
            continue;
        };
        let key = (
            series_label(record, several_types),
            !shape_is_power_of_two(&record.shape),
        );
        groups
            .entry(key)
            .or_default()
            .push((elements as f64, value(record)));
    }
    groups
        .into_iter()
        .map(|((label, non_power_of_two), mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: if non_power_of_two {
                    format!("{label} (non-pow2)")
                } else {
                    label
                },
                non_power_of_two,
                points,
            }
        })
        .collect()
}

/// The files [`plot_records`] writes for `stem`.
pub fn plot_paths(stem: &Path) -> Vec<PathBuf> {
    stem_paths(stem, &["time.svg", "time.png", "gbps.svg", "gbps.png"])
}

/// `stem-suffix` for every suffix (the stem's own extension dropped).
fn stem_paths(stem: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let base = stem.with_extension("");
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plot".into());
    suffixes
        .iter()
        .map(|suffix| base.with_file_name(format!("{name}-{suffix}")))
        .collect()
}

/// The records with a time and a size, or an error when there are none.
fn timed_records(records: &[Record]) -> Result<Vec<Record>> {
    let timed: Vec<Record> = records
        .iter()
        .filter(|r| r.ms_median > 0.0 && shape_elements(&r.shape).is_some())
        .cloned()
        .collect();
    if timed.is_empty() {
        return Err(Error::invalid("records", "nothing to plot"));
    }
    Ok(timed)
}

/// Creates the folder of the first of `paths`, if it has one.
fn create_parent(paths: &[PathBuf]) -> Result<()> {
    if let Some(dir) = paths[0].parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    Ok(())
}

/// Writes the time and GB/s plots of `records` (see the module docs);
/// `ceiling_gbps` is drawn on the GB/s plot. Returns the files written.
pub fn plot_records(
    stem: &Path,
    title: &str,
    records: &[Record],
    ceiling_gbps: Option<f64>,
) -> Result<Vec<PathBuf>> {
    register_font()?;
    let timed = timed_records(records)?;
    let times = series(&timed, |r| r.ms_median);
    let rates = series(&timed, |r| r.gbps);
    let paths = plot_paths(stem);
    create_parent(&paths)?;
    let size = (1100, 700);
    let time_title = format!("{title}: median time against size");
    let rate_title = format!("{title}: throughput against size");
    draw_time(
        SVGBackend::new(&paths[0], size).into_drawing_area(),
        &time_title,
        &times,
    )?;
    draw_time(
        BitMapBackend::new(&paths[1], size).into_drawing_area(),
        &time_title,
        &times,
    )?;
    draw_rate(
        SVGBackend::new(&paths[2], size).into_drawing_area(),
        &rate_title,
        &rates,
        ceiling_gbps,
    )?;
    draw_rate(
        BitMapBackend::new(&paths[3], size).into_drawing_area(),
        &rate_title,
        &rates,
        ceiling_gbps,
    )?;
    Ok(paths)
}

/// The files [`plot_element_rate`] writes for `stem`.
pub fn rate_plot_paths(stem: &Path) -> Vec<PathBuf> {
    stem_paths(stem, &["rate.svg", "rate.png"])
}

/// Writes the elements-per-second plot of `records` (see the module docs):
/// G `noun`/s = elements of the shape / median time, one series per
/// method as in the other plots. Returns the files written.
pub fn plot_element_rate(
    stem: &Path,
    title: &str,
    records: &[Record],
    noun: &str,
) -> Result<Vec<PathBuf>> {
    register_font()?;
    let timed = timed_records(records)?;
    let rates = series(&timed, |r| {
        shape_elements(&r.shape).unwrap_or(0) as f64 / (r.ms_median * 1e-3) / 1e9
    });
    let paths = rate_plot_paths(stem);
    create_parent(&paths)?;
    let size = (1100, 700);
    let rate_title = format!("{title}: {noun} per second against size");
    let y_desc = format!("G {noun}/s (elements / median time)");
    draw_log_log(
        SVGBackend::new(&paths[0], size).into_drawing_area(),
        &rate_title,
        &rates,
        &y_desc,
    )?;
    draw_log_log(
        BitMapBackend::new(&paths[1], size).into_drawing_area(),
        &rate_title,
        &rates,
        &y_desc,
    )?;
    Ok(paths)
}

fn plot_error(error: impl std::fmt::Display) -> Error {
    Error::Io(std::io::Error::other(format!("plot: {error}")))
}

fn bounds(series: &[Series], extra_y: Option<f64>) -> ((f64, f64), (f64, f64)) {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(extra_y);
    let (mut x0, mut x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (mut y0, mut y1) = ys
        .filter(|y| *y > 0.0)
        .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    if x0 > x1 {
        (x0, x1) = (1.0, 2.0);
    }
    if y0 > y1 {
        (y0, y1) = (1e-3, 1.0);
    }
    ((x0 / 1.5, x1 * 1.5), (y0 / 1.5, y1 * 1.5))
}

fn colour(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    PALETTE[index % PALETTE.len()]
}

/// Colour index per label without the non-pow2 suffix, so both series of
/// one method share a colour.
fn colour_indices(series: &[Series]) -> Vec<usize> {
    let mut names: Vec<String> = Vec::new();
    series
        .iter()
        .map(|s| {
            let base = s.label.trim_end_matches(" (non-pow2)").to_owned();
            match names.iter().position(|n| *n == base) {
                Some(i) => i,
                None => {
                    names.push(base);
                    names.len() - 1
                }
            }
        })
        .collect()
}

fn draw_lines<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    series: &[Series],
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let colours = colour_indices(series);
    for (s, &c) in series.iter().zip(&colours) {
        let colour = colour(c);
        let hollow = s.non_power_of_two;
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(if hollow { 1 } else { 2 }),
            ))
            .map_err(plot_error)?
            .label(s.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(s.points.iter().map(|&p| {
                if hollow {
                    TriangleMarker::new(p, 5, colour.stroke_width(1)).into_dyn()
                } else {
                    Circle::new(p, 3, colour.filled()).into_dyn()
                }
            }))
            .map_err(plot_error)?;
    }
    Ok(())
}

fn draw_time<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
) -> Result<()> {
    draw_log_log(root, title, series, "ms (median, device)")
}

fn draw_log_log<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
    y_desc: &str,
) -> Result<()> {
    root.fill(&WHITE).map_err(plot_error)?;
    let ((x0, x1), (y0, y1)) = bounds(series, None);
    let mut chart = chart_builder(&root, title)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(plot_error)?;
    draw_mesh(&mut chart, y_desc)?;
    finish_chart(&root, &mut chart, series)
}

fn draw_rate<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
    ceiling_gbps: Option<f64>,
) -> Result<()> {
    root.fill(&WHITE).map_err(plot_error)?;
    let ((x0, x1), (_, y1)) = bounds(series, ceiling_gbps);
    let mut chart = chart_builder(&root, title)
        .build_cartesian_2d((x0..x1).log_scale(), 0.0..y1 * 1.05)
        .map_err(plot_error)?;
    draw_mesh(&mut chart, "GB/s (declared bytes / median time)")?;
    if let Some(ceiling) = ceiling_gbps {
        let dashes: Vec<(f64, f64)> = dash_points(x0, x1, 40);
        chart
            .draw_series(dashes.chunks(2).map(|pair| {
                PathElement::new(
                    pair.iter().map(|&(x, _)| (x, ceiling)).collect::<Vec<_>>(),
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(plot_error)?
            .label(format!("copy ceiling {ceiling:.0} GB/s"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    finish_chart(&root, &mut chart, series)
}

/// Every chart's frame: the title, margins and label areas.
fn chart_builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &'b str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72);
    builder
}

/// Every chart's grid: elements on the x axis (log scale, counts written
/// short), `y_desc` on the y axis.
fn draw_mesh<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    y_desc: &str,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("elements")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format_count(*x))
        .draw()
        .map_err(plot_error)
}

/// Every chart's ending: the series, the legend in the upper left, and the
/// file written.
fn finish_chart<'a, DB: DrawingBackend + 'a, X, Y>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[Series],
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    draw_lines(chart, series)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error)?;
    root.present().map_err(plot_error)
}

/// `2 * segments` x positions evenly spaced in log space, pairwise forming
/// the dashes of a horizontal line.
fn dash_points(x0: f64, x1: f64, segments: usize) -> Vec<(f64, f64)> {
    let (l0, l1) = (x0.ln(), x1.ln());
    let step = (l1 - l0) / (2 * segments) as f64;
    (0..2 * segments)
        .map(|i| ((l0 + step * i as f64).exp(), 0.0))
        .collect()
}

/// `2^k` for powers of two, else a short decimal (`160M`).
pub fn format_count(x: f64) -> String {
    let rounded = x.round();
    if rounded >= 1.0 && (rounded as u64).is_power_of_two() && (rounded - x).abs() < 1e-6 * x {
        return format!("2^{}", (rounded as u64).trailing_zeros());
    }
    let (value, unit) = if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(algorithm: &str, t: &str, shape: &str, ms: f64) -> Record {
        Record {
            primitive: "scan".into(),
            algorithm: algorithm.into(),
            element_type: t.into(),
            shape: shape.into(),
            ms_median: ms,
            gbps: 8.0 * shape_elements(shape).unwrap_or(0) as f64 / (ms * 1e-3) / 1e9,
            ceiling_gbps: 3000.0,
            device: "test".into(),
        }
    }

    #[test]
    fn series_split_methods_types_and_non_powers_of_two() {
        let records = vec![
            record("A", "i32", "4096", 0.01),
            record("A", "i32", "2560", 0.008),
            record("A", "i32", "1024", 0.005),
            record("B", "i32", "1024", 0.02),
        ];
        let s = series(&records, |r| r.ms_median);
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, vec!["A", "A (non-pow2)", "B"]);
        assert_eq!(s[0].points, vec![(1024.0, 0.005), (4096.0, 0.01)]);
        assert!(s[1].non_power_of_two);
        assert_eq!(colour_indices(&s), vec![0, 0, 1]);
        let mixed = vec![
            record("A", "i32", "1024", 0.01),
            record("A", "f32", "8x8/k3", 0.01),
        ];
        let labels: Vec<String> = series(&mixed, |r| r.gbps)
            .into_iter()
            .map(|s| s.label)
            .collect();
        assert_eq!(labels, vec!["A f32 k3", "A i32"]);
    }

    #[test]
    fn paths_and_labels() {
        let p = plot_paths(Path::new("out/scan.svg"));
        assert_eq!(p[0], Path::new("out/scan-time.svg"));
        assert_eq!(p[3], Path::new("out/scan-gbps.png"));
        assert_eq!(format_count(268_435_456.0), "2^28");
        assert_eq!(format_count(167_772_160.0), "167.77M");
        assert_eq!(format_count(10_000.0), "10k");
        assert_eq!(format_count(1_000_000.0), "1M");
        assert_eq!(format_count(100.0), "100");
        assert_eq!(dash_points(1.0, 100.0, 2).len(), 4);
    }

    #[test]
    fn plots_are_written_with_text() {
        let dir = std::env::temp_dir().join(format!("parprims-plot-{}", std::process::id()));
        let records = vec![
            record("DecoupledLookback", "i32", "4096", 0.01),
            record("DecoupledLookback", "i32", "2560", 0.009),
            record("DecoupledLookback", "i32", "1048576", 0.02),
            record("Blelloch", "i32", "4096", 0.03),
            record("Blelloch", "i32", "1048576", 0.09),
        ];
        let written = plot_records(&dir.join("scan"), "scan", &records, Some(3000.0)).unwrap();
        assert_eq!(written.len(), 4);
        for path in &written {
            let bytes = std::fs::read(path).unwrap();
            assert!(bytes.len() > 1000, "{} is too small", path.display());
        }
        let svg = std::fs::read_to_string(&written[2]).unwrap();
        assert!(svg.contains("copy ceiling 3000 GB/s"));
        assert!(svg.contains("DecoupledLookback (non-pow2)"));
        let png = std::fs::read(&written[1]).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(plot_records(&dir.join("none"), "none", &[], None).is_err());
        // Elements per second: 2^20 elements in 0.02 ms is 52.4 G/s.
        let rate = plot_element_rate(&dir.join("scan"), "scan", &records, "keys").unwrap();
        assert_eq!(rate, rate_plot_paths(&dir.join("scan")));
        let svg = std::fs::read_to_string(&rate[0]).unwrap();
        assert!(svg.contains("G keys/s"), "{svg:.200}");
        assert!(svg.contains("Blelloch"));
        assert_eq!(&std::fs::read(&rate[1]).unwrap()[1..4], b"PNG");
        assert!(plot_element_rate(&dir.join("none"), "none", &[], "keys").is_err());
        if std::env::var_os("PARPRIMS_KEEP_PLOTS").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
