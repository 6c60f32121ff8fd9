//! The one results table every front end prints, and its rows.

use parprims_testkit::bench::{gbps, Record};

use super::check::Check;

/// Where a row's time was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// On the GPU, with CUDA events (device time only).
    Device,
    /// On the CPU, with the wall clock (a CPU reference).
    Host,
}

/// One measured method: a line of the table, and a CSV record for GPU rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `scan`, `compact`, `transpose`, `matvec`, `conv`, `copy`.
    pub primitive: String,
    /// The method (`DecoupledLookback`, `cpu serial`, `ThreePass/Blelloch`).
    pub method: String,
    /// Element type name (`i32`).
    pub element_type: String,
    /// Problem shape as CSV records write it (`268435456`, `4096x4096`,
    /// `2048x2048/k3`).
    pub shape: String,
    /// Bytes the algorithm declares it moves per run (for GB/s).
    pub bytes: f64,
    /// How the time was taken.
    pub timed: Timed,
    /// Median time, ms; `None` when the method did not run.
    pub ms: Option<f64>,
    /// Median time including host↔device copies, ms, where measured.
    pub ms_with_copies: Option<f64>,
    /// The check against the CPU reference.
    pub check: Check,
}

impl Row {
    /// A row for a method that could not run (`check` says why).
    pub fn not_run(
        primitive: &str,
        method: &str,
        element_type: &str,
        shape: &str,
        check: Check,
    ) -> Row {
        Row {
            primitive: primitive.to_owned(),
            method: method.to_owned(),
            element_type: element_type.to_owned(),
            shape: shape.to_owned(),
            bytes: 0.0,
            timed: Timed::Device,
            ms: None,
            ms_with_copies: None,
            check,
        }
    }

    /// The row with `check()` as its check, if it ran (a row that failed
    /// keeps its failure).
    pub fn checked_by(mut self, check: impl FnOnce() -> Check) -> Row {
        if self.ms.is_some() {
            self.check = check();
        }
        self
    }

    /// GB/s at the median time from the declared bytes.
    pub fn gbps(&self) -> Option<f64> {
        self.ms
            .filter(|_| self.bytes > 0.0)
            .map(|ms| gbps(self.bytes, ms))
    }

    /// Fraction of the copy ceiling (GPU rows only).
    pub fn fraction(&self, ceiling_gbps: Option<f64>) -> Option<f64> {
        match (self.timed, self.gbps(), ceiling_gbps) {
            (Timed::Device, Some(achieved), Some(ceiling)) if ceiling > 0.0 => {
                Some(achieved / ceiling)
            }
            _ => None,
        }
    }

    /// The row as a CSV record, for GPU rows that ran.
    pub fn to_record(&self, ceiling_gbps: f64, device: &str) -> Option<Record> {
        if self.timed != Timed::Device {
            return None;
        }
        let ms = self.ms?;
        Some(Record {
            primitive: self.primitive.clone(),
            algorithm: self.method.clone(),
            element_type: self.element_type.clone(),
            shape: self.shape.clone(),
            ms_median: ms,
            gbps: self.gbps().unwrap_or(0.0),
            ceiling_gbps,
            device: device.to_owned(),
        })
    }

    /// A row from a CSV record (a peer's, for `--compare`): device time,
    /// bytes recovered from GB/s and time, not checked here.
    pub fn from_record(record: &Record) -> Row {
        Row {
            primitive: record.primitive.clone(),
            method: record.algorithm.clone(),
            element_type: record.element_type.clone(),
            shape: record.shape.clone(),
            bytes: record.gbps * 1e9 * record.ms_median * 1e-3,
            timed: Timed::Device,
            ms: Some(record.ms_median),
            ms_with_copies: None,
            check: Check::NotChecked(format!("peer, from {}", record.device)),
        }
    }
}

/// Formats milliseconds with about four significant digits.
pub fn format_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.3}")
    } else {
        format!("{ms:.4}")
    }
}

/// A shape for people: `268435456` becomes `268435456 (2^28)`.
pub fn format_shape(shape: &str) -> String {
    match shape.parse::<u64>() {
        Ok(n) if n.is_power_of_two() && n >= 1024 => {
            format!("{shape} (2^{})", n.trailing_zeros())
        }
        _ => shape.to_owned(),
    }
}

/// Renders rows as one aligned text table. `ceiling_gbps` is the copy
/// ceiling (absent on the CPU-only path, where the fraction column is left
/// out). The ms-with-copies column appears only when some row has it.
pub fn render_table(rows: &[Row], ceiling_gbps: Option<f64>) -> String {
    let with_copies = rows.iter().any(|r| r.ms_with_copies.is_some());
    let mut header = vec!["primitive", "method", "type", "size"];
    header.push(if ceiling_gbps.is_some() {
        "ms (device)"
    } else {
        "ms"
    });
    if with_copies {
        header.push("ms (with copies)");
    }
    header.push("GB/s");
    if ceiling_gbps.is_some() {
        header.push("of ceiling");
    }
    header.push("check");
    let dash = "—".to_owned();
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for row in rows {
        let mut cells = vec![
            row.primitive.clone(),
            row.method.clone(),
            row.element_type.clone(),
            format_shape(&row.shape),
            row.ms.map(format_ms).unwrap_or_else(|| dash.clone()),
        ];
        if with_copies {
            cells.push(
                row.ms_with_copies
                    .map(format_ms)
                    .unwrap_or_else(|| dash.clone()),
            );
        }
        cells.push(
            row.gbps()
                .map(|g| format!("{g:.1}"))
                .unwrap_or_else(|| dash.clone()),
        );
        if ceiling_gbps.is_some() {
            cells.push(
                row.fraction(ceiling_gbps)
                    .map(|f| format!("{f:.2}"))
                    .unwrap_or_else(|| dash.clone()),
            );
        }
        cells.push(row.check.cell());
        lines.push(cells);
    }
    let columns = lines[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Text columns left-aligned, numbers right-aligned, check last and free.
    let numeric = |c: usize| c >= 4 && c + 1 < columns;
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        let mut text = String::new();
        for (c, cell) in line.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c > 0 {
                text.push_str("  ");
            }
            if c + 1 == columns {
                text.push_str(cell);
            } else if numeric(c) {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
        if index == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (columns - 1);
            out.push_str(&"─".repeat(total));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, ms: Option<f64>, check: Check) -> Row {
        Row {
            primitive: "scan".into(),
            method: method.into(),
            element_type: "i32".into(),
            shape: "16777216".into(),
            bytes: 8.0 * 16_777_216.0,
            timed: Timed::Device,
            ms,
            ms_with_copies: None,
            check,
        }
    }

    #[test]
    fn gbps_and_fraction_from_declared_bytes() {
        let r = row("DecoupledLookback", Some(0.05), Check::Pass);
        let g = r.gbps().unwrap();
        assert!((g - 2684.35456).abs() < 1e-6, "{g}");
        assert!((r.fraction(Some(3000.0)).unwrap() - 0.894784853).abs() < 1e-6);
        assert_eq!(r.fraction(None), None);
        let mut cpu = r.clone();
        cpu.timed = Timed::Host;
        assert_eq!(cpu.fraction(Some(3000.0)), None);
        assert_eq!(cpu.to_record(3000.0, "d"), None);
        assert_eq!(row("x", None, Check::Pass).gbps(), None);
    }

    #[test]
    fn records_round_trip_through_rows() {
        let r = row("Blelloch", Some(0.5), Check::Pass);
        let rec = r.to_record(3000.0, "NVIDIA H100, sm_90").unwrap();
        assert_eq!(rec.algorithm, "Blelloch");
        assert_eq!(rec.shape, "16777216");
        assert!((rec.gbps - r.gbps().unwrap()).abs() < 1e-9);
        let back = Row::from_record(&Record::from_csv(&rec.to_csv()).unwrap());
        assert_eq!(back.method, "Blelloch");
        assert!((back.bytes - r.bytes).abs() / r.bytes < 1e-3);
        assert!(matches!(back.check, Check::NotChecked(_)));
    }

    #[test]
    fn table_is_aligned_and_complete() {
        let mut with_copies = row("HillisSteele", Some(1.25), Check::Pass);
        with_copies.ms_with_copies = Some(12.5);
        let rows = vec![
            with_copies,
            row("Blelloch", None, Check::Fail("boom".into())),
        ];
        let text = render_table(&rows, Some(3000.0));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("primitive"));
        assert!(lines[0].contains("ms (with copies)") && lines[0].contains("of ceiling"));
        assert!(lines[1].chars().all(|c| c == '─'));
        assert!(lines[2].contains("16777216 (2^24)"));
        assert!(
            lines[2].contains("1.250") && lines[2].contains("12.50") && lines[2].ends_with('✓')
        );
        assert!(lines[3].contains('—') && lines[3].ends_with("✗ boom"));
        // The size column starts at the same character in every line.
        let at = |l: &str| l.chars().collect::<String>().find("16777216").unwrap();
        assert_eq!(at(lines[2]), at(lines[3]));
        // CPU-only: no ceiling column, no copies column.
        let cpu = render_table(&[row("cpu", Some(3.0), Check::Pass)], None);
        assert!(!cpu.contains("of ceiling") && !cpu.contains("with copies"));
    }

    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(format_ms(123.456), "123.5");
        assert_eq!(format_ms(1.23456), "1.235");
        assert_eq!(format_ms(0.012345), "0.0123");
        assert_eq!(format_shape("268435456"), "268435456 (2^28)");
        assert_eq!(format_shape("123123123"), "123123123");
        assert_eq!(format_shape("4096x4096"), "4096x4096");
    }
}
