//! The Matrix Market reader: `%%MatrixMarket matrix coordinate F S` files,
//! F = `real`, `integer` or `pattern` (every value 1), S = `general`,
//! `symmetric` or `skew-symmetric` (the mirrored entries added: (j, i, v),
//! or (j, i, −v), for every off-diagonal (i, j, v)), into a [`HostCsr`].
//!
//! Lines starting with `%` after the header are comments; blank lines are
//! skipped. Indices are 1-based in the file. Entries keep their file order
//! within each row, and duplicates are kept (SpMV sums them). Every problem
//! is a [`MatrixMarketError`] with the 1-based line it was found on.

use std::fmt;
use std::io::BufRead;

use super::cpu::HostCsr;
use super::SpmvElement;

/// What was wrong with a Matrix Market file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatrixMarketProblem {
    /// The first line is not `%%MatrixMarket matrix coordinate <field> <symmetry>`.
    BadHeader(String),
    /// A format this reader does not take (`array`, `complex`, `hermitian`).
    Unsupported(String),
    /// The size line is not `rows cols entries` in non-negative integers,
    /// or the shape is too large (columns above `i32::MAX + 1`).
    BadSize(String),
    /// An entry line that does not parse.
    BadEntry(String),
    /// An index outside `1..=rows` or `1..=cols`.
    IndexOutOfRange(String),
    /// A symmetric matrix with an entry above the diagonal, or a
    /// skew-symmetric one with an entry on it.
    NotLowerTriangle(String),
    /// More entry lines than the size line announced.
    TooManyEntries(usize),
    /// The file ended after this many of the announced entries.
    TooFewEntries {
        /// Entries announced.
        expected: usize,
        /// Entries found.
        found: usize,
    },
    /// The file could not be read.
    Io(String),
}

/// A Matrix Market problem and the 1-based line it was found on (0 when
/// the file is empty or could not be opened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixMarketError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub problem: MatrixMarketProblem,
}

impl fmt::Display for MatrixMarketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Matrix Market line {}: ", self.line)?;
        match &self.problem {
            MatrixMarketProblem::BadHeader(text) => write!(f, "bad header: {text}"),
            MatrixMarketProblem::Unsupported(text) => write!(f, "unsupported: {text}"),
            MatrixMarketProblem::BadSize(text) => write!(f, "bad size line: {text}"),
            MatrixMarketProblem::BadEntry(text) => write!(f, "bad entry: {text}"),
            MatrixMarketProblem::IndexOutOfRange(text) => write!(f, "index out of range: {text}"),
            MatrixMarketProblem::NotLowerTriangle(text) => {
                write!(f, "entry not in the stored triangle: {text}")
            }
            MatrixMarketProblem::TooManyEntries(expected) => {
                write!(f, "more entries than the {expected} announced")
            }
            MatrixMarketProblem::TooFewEntries { expected, found } => {
                write!(f, "{found} entries of the {expected} announced")
            }
            MatrixMarketProblem::Io(text) => write!(f, "read error: {text}"),
        }
    }
}

impl std::error::Error for MatrixMarketError {}

impl From<MatrixMarketError> for gpu_core::Error {
    fn from(error: MatrixMarketError) -> Self {
        gpu_core::Error::invalid("matrix market file", error.to_string())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
}

fn error(line: usize, problem: MatrixMarketProblem) -> MatrixMarketError {
    MatrixMarketError { line, problem }
}

fn parse_header(line_number: usize, line: &str) -> Result<(Field, Symmetry), MatrixMarketError> {
    let words: Vec<String> = line.split_whitespace().map(str::to_lowercase).collect();
    let bad = || error(line_number, MatrixMarketProblem::BadHeader(line.to_owned()));
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(bad());
    }
    if words[2] != "coordinate" {
        return Err(error(
            line_number,
            MatrixMarketProblem::Unsupported(format!("format `{}` (only coordinate)", words[2])),
        ));
    }
    let field = match words[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        other => {
            return Err(error(
                line_number,
                MatrixMarketProblem::Unsupported(format!("field `{other}`")),
            ))
        }
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        other => {
            return Err(error(
                line_number,
                MatrixMarketProblem::Unsupported(format!("symmetry `{other}`")),
            ))
        }
    };
    Ok((field, symmetry))
}

/// Parses Matrix Market text (see the module) into a CSR matrix of `T`
/// (values converted from `f64`, integers exactly up to 2^53).
///
/// ```
/// let text = "%%MatrixMarket matrix coordinate real general\n% a comment\n2 3 3\n1 1 1.5\n2 3 -2\n1 1 0.5\n";
/// let a = linalg::spmv::parse_matrix_market::<f64>(text)?;
/// assert_eq!((a.rows, a.cols, a.nnz()), (2, 3, 3));
/// assert_eq!(a.to_dense()?, vec![2.0, 0.0, 0.0, 0.0, 0.0, -2.0]); // the duplicate summed
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn parse_matrix_market<T: SpmvElement>(text: &str) -> Result<HostCsr<T>, MatrixMarketError> {
    read_matrix_market(text.as_bytes())
}

/// Reads a Matrix Market file at `path` (see [`parse_matrix_market`]).
///
/// ```no_run
/// let a = linalg::spmv::read_matrix_market_file::<f32>("matrix.mtx".as_ref())?;
/// println!("{} × {}, {} entries", a.rows, a.cols, a.nnz());
/// # Ok::<(), linalg::spmv::MatrixMarketError>(())
/// ```
pub fn read_matrix_market_file<T: SpmvElement>(
    path: &std::path::Path,
) -> Result<HostCsr<T>, MatrixMarketError> {
    let file = std::fs::File::open(path).map_err(|e| {
        error(
            0,
            MatrixMarketProblem::Io(format!("{}: {e}", path.display())),
        )
    })?;
    read_matrix_market(std::io::BufReader::new(file))
}

/// Reads Matrix Market text from any reader (see [`parse_matrix_market`]).
///
/// ```
/// let text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 1\n3 1\n";
/// let a = linalg::spmv::read_matrix_market::<f32, _>(text.as_bytes())?;
/// assert_eq!(a.to_dense()?, vec![1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn read_matrix_market<T: SpmvElement, R: BufRead>(
    reader: R,
) -> Result<HostCsr<T>, MatrixMarketError> {
    let mut lines = reader.lines().enumerate().map(|(i, line)| (i + 1, line));
    let (header_number, header) = match lines.next() {
        Some((number, Ok(line))) => (number, line),
        Some((number, Err(e))) => {
            return Err(error(number, MatrixMarketProblem::Io(e.to_string())))
        }
        None => {
            return Err(error(
                0,
                MatrixMarketProblem::BadHeader("empty file".into()),
            ))
        }
    };
    let (field, symmetry) = parse_header(header_number, &header)?;
    let mut size: Option<(usize, usize, usize)> = None;
    let mut triplets: Vec<(u32, i32, f64)> = Vec::new();
    let mut found = 0usize;
    let mut last_line = header_number;
    for (number, line) in lines {
        last_line = number;
        let line = line.map_err(|e| error(number, MatrixMarketProblem::Io(e.to_string())))?;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('%') {
            continue;
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let Some((rows, cols, entries)) = size else {
            let parsed: Vec<Option<usize>> = words.iter().map(|w| w.parse().ok()).collect();
            match parsed.as_slice() {
                [Some(rows), Some(cols), Some(entries)] => {
                    if *cols > super::csr::MAX_COLS || *rows >= u32::MAX as usize {
                        return Err(error(
                            number,
                            MatrixMarketProblem::BadSize(format!(
                                "{rows} × {cols}: at most {} rows and {} columns",
                                u32::MAX - 1,
                                super::csr::MAX_COLS
                            )),
                        ));
                    }
                    size = Some((*rows, *cols, *entries));
                    let stored = if symmetry == Symmetry::General {
                        *entries
                    } else {
                        entries.saturating_mul(2)
                    };
                    triplets.reserve(stored.min(1 << 28));
                    continue;
                }
                _ => {
                    return Err(error(
                        number,
                        MatrixMarketProblem::BadSize(trimmed.to_owned()),
                    ))
                }
            }
        };
        if found == entries {
            return Err(error(number, MatrixMarketProblem::TooManyEntries(entries)));
        }
        let want = if field == Field::Pattern { 2 } else { 3 };
        let bad_entry = || error(number, MatrixMarketProblem::BadEntry(trimmed.to_owned()));
        if words.len() != want {
            return Err(bad_entry());
        }
        let row: usize = words[0].parse().map_err(|_| bad_entry())?;
        let col: usize = words[1].parse().map_err(|_| bad_entry())?;
        let value: f64 = match field {
            Field::Pattern => 1.0,
            Field::Integer => words[2].parse::<i64>().map_err(|_| bad_entry())? as f64,
            Field::Real => words[2].parse::<f64>().map_err(|_| bad_entry())?,
        };
        if row == 0 || row > rows || col == 0 || col > cols {
            return Err(error(
                number,
                MatrixMarketProblem::IndexOutOfRange(format!(
                    "({row}, {col}) in a {rows} × {cols} matrix (indices start at 1)"
                )),
            ));
        }
        let (r, c) = (row - 1, col - 1);
        match symmetry {
            Symmetry::General => {}
            Symmetry::Symmetric if c > r => {
                return Err(error(
                    number,
                    MatrixMarketProblem::NotLowerTriangle(format!(
                        "({row}, {col}) above the diagonal of a symmetric matrix"
                    )),
                ))
            }
            Symmetry::SkewSymmetric if c >= r => {
                return Err(error(
                    number,
                    MatrixMarketProblem::NotLowerTriangle(format!(
                        "({row}, {col}) on or above the diagonal of a skew-symmetric matrix"
                    )),
                ))
            }
            Symmetry::Symmetric | Symmetry::SkewSymmetric => {
                if c != r {
                    let mirrored = if symmetry == Symmetry::Symmetric {
                        value
                    } else {
                        -value
                    };
                    triplets.push((c as u32, r as i32, mirrored));
                }
            }
        }
        triplets.push((r as u32, c as i32, value));
        found += 1;
    }
    let Some((rows, cols, entries)) = size else {
        return Err(error(
            last_line + 1,
            MatrixMarketProblem::BadSize("missing".into()),
        ));
    };
    if found < entries {
        return Err(error(
            last_line + 1,
            MatrixMarketProblem::TooFewEntries {
                expected: entries,
                found,
            },
        ));
    }
    Ok(csr_from_triplets(rows, cols, &triplets))
}

/// CSR from (row, column, value) triplets: a stable counting sort by row,
/// so each row keeps the triplets' order.
fn csr_from_triplets<T: SpmvElement>(
    rows: usize,
    cols: usize,
    triplets: &[(u32, i32, f64)],
) -> HostCsr<T> {
    let mut offsets = vec![0u64; rows + 1];
    for &(row, _, _) in triplets {
        offsets[row as usize + 1] += 1;
    }
    for row in 0..rows {
        offsets[row + 1] += offsets[row];
    }
    let mut next: Vec<u64> = offsets[..rows].to_vec();
    let mut columns = vec![0i32; triplets.len()];
    let mut values = vec![T::zero(); triplets.len()];
    for &(row, col, value) in triplets {
        let slot = &mut next[row as usize];
        columns[*slot as usize] = col;
        values[*slot as usize] = T::from_f64(value);
        *slot += 1;
    }
    HostCsr {
        rows,
        cols,
        offsets,
        columns,
        values,
    }
}
