//! The benchmark's generated matrices, bit for bit reproducible from a seed
//! in any language with 64-bit integers and IEEE doubles (`bench/peers.py`
//! builds the same ones with numpy). Only integer arithmetic and correctly
//! rounded `+ · /` and `floor` are used.
//!
//! - **Random numbers**: a counter hash, no state.
//!   `bits(stream, i) = mix(seed + stream·0xD1B54A32D192ED03 + (i + 1)·0x9E3779B97F4A7C15)`
//!   (all mod 2^64), where `mix` is the SplitMix64 finaliser
//!   `z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31`.
//!   `unit(s, i) = (bits(s, i) >> 11)·2^-53`, in `[0, 1)`;
//!   `open_unit(s, i) = ((bits(s, i) >> 11) + 1)·2^-53`, in `(0, 1]`.
//! - **Row lengths**: [`RowLengths::Uniform`]`(k)`: every row k.
//!   [`RowLengths::PowerLaw`] (Pareto, α = 1.5, x_m = 32/3, mean about 32,
//!   31.5 after the floor): `v = max(open_unit(4, r), open_unit(5, r),
//!   open_unit(6, r))` (the law of U^(1/3)), `t = v·v`, `t = 3·t`,
//!   `len = min(floor(32 / t), cols)` = floor(x_m·U^(-2/3)); every row at
//!   least 10. [`RowLengths::Banded`]`(w)`: row r holds columns
//!   `max(0, r − w) ..= min(cols − 1, r + w)` (no random draw; sorted).
//! - **Columns** (uniform and power-law) at CSR position k:
//!   `((bits(1, k) >> 32)·cols) >> 32`, then sorted ascending within each
//!   row (duplicates kept).
//! - **Values** at position k (after the sort): `2·unit(2, k) − 1`, rounded
//!   to `T`; `x[c] = 2·unit(3, c) − 1` rounded to `T`.
//!
//! [`SEED`] is the benchmark's seed.

use super::cpu::HostCsr;
use super::SpmvElement;

/// The benchmark's seed ("SPMV").
pub const SEED: u64 = 0x5350_4D56;

const STREAM: u64 = 0xD1B5_4A32_D192_ED03;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `bits(stream, i)` of the module's recipe.
///
/// ```
/// use linalg::spmv::generate::bits;
/// assert_ne!(bits(1, 0, 0), bits(1, 0, 1));
/// assert_eq!(bits(7, 3, 9), bits(7, 3, 9));
/// ```
pub fn bits(seed: u64, stream: u64, i: u64) -> u64 {
    mix(seed
        .wrapping_add(stream.wrapping_mul(STREAM))
        .wrapping_add(i.wrapping_add(1).wrapping_mul(GOLDEN)))
}

fn unit(seed: u64, stream: u64, i: u64) -> f64 {
    (bits(seed, stream, i) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn open_unit(seed: u64, stream: u64, i: u64) -> f64 {
    ((bits(seed, stream, i) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// How many entries each row gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowLengths {
    /// Every row the same.
    Uniform(usize),
    /// Pareto(α = 1.5, x_m = 32/3): mean about 32, a few rows of 10^5.
    PowerLaw,
    /// Columns r − w ..= r + w (clipped): a band of half-width w.
    Banded(usize),
}

/// The power-law length of row `r` (see the module).
///
/// ```
/// let len = linalg::spmv::generate::power_law_length(linalg::spmv::generate::SEED, 0, 1 << 22);
/// assert!(len >= 10);
/// ```
pub fn power_law_length(seed: u64, row: u64, cols: usize) -> usize {
    let v = open_unit(seed, 4, row)
        .max(open_unit(seed, 5, row))
        .max(open_unit(seed, 6, row));
    let mut t = v * v;
    t *= 3.0;
    ((32.0 / t).floor() as usize).min(cols)
}

/// A `rows × cols` matrix with the given row lengths, from `seed` (see the
/// module for the exact recipe).
///
/// ```
/// use linalg::spmv::generate::{generate, RowLengths, SEED};
/// let a = generate::<f32>(100, 50, RowLengths::Uniform(4), SEED);
/// assert_eq!(a.nnz(), 400);
/// assert!(a.validate().is_ok());
/// ```
pub fn generate<T: SpmvElement>(
    rows: usize,
    cols: usize,
    lengths: RowLengths,
    seed: u64,
) -> HostCsr<T> {
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0u64);
    for r in 0..rows {
        let len = match lengths {
            RowLengths::Uniform(k) => k.min(if cols == 0 { 0 } else { usize::MAX }),
            RowLengths::PowerLaw => {
                if cols == 0 {
                    0
                } else {
                    power_law_length(seed, r as u64, cols)
                }
            }
            RowLengths::Banded(w) => {
                if r >= cols + w {
                    0
                } else {
                    let first = r.saturating_sub(w);
                    let last = (r + w).min(cols.saturating_sub(1));
                    if first > last {
                        0
                    } else {
                        last - first + 1
                    }
                }
            }
        };
        offsets.push(offsets[r] + len as u64);
    }
    let nnz = offsets[rows] as usize;
    let mut columns = vec![0i32; nnz];
    match lengths {
        RowLengths::Banded(w) => {
            for r in 0..rows {
                let first = r.saturating_sub(w);
                for (i, k) in (offsets[r] as usize..offsets[r + 1] as usize).enumerate() {
                    columns[k] = (first + i) as i32;
                }
            }
        }
        _ => {
            for (k, column) in columns.iter_mut().enumerate() {
                *column = (((bits(seed, 1, k as u64) >> 32) * cols as u64) >> 32) as i32;
            }
            for r in 0..rows {
                columns[offsets[r] as usize..offsets[r + 1] as usize].sort_unstable();
            }
        }
    }
    let values = (0..nnz as u64)
        .map(|k| T::from_f64(2.0 * unit(seed, 2, k) - 1.0))
        .collect();
    HostCsr {
        rows,
        cols,
        offsets,
        columns,
        values,
    }
}

/// The benchmark's x: `x[c] = 2·unit(3, c) − 1` rounded to `T`.
///
/// ```
/// let x = linalg::spmv::generate::generate_x::<f64>(8, linalg::spmv::generate::SEED);
/// assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
/// ```
pub fn generate_x<T: SpmvElement>(cols: usize, seed: u64) -> Vec<T> {
    (0..cols as u64)
        .map(|c| T::from_f64(2.0 * unit(seed, 3, c) - 1.0))
        .collect()
}
