//! CPU references: the straight filter, and the lab's map → scan → scatter.
//!
//! The GPU results are checked against these; they are also the "CPU
//! without scan" and "CPU with scan" rows of the compaction lab.

use gpu_core::{DeviceType, Element, Error, Result};

use crate::predicate::Predicate;

/// Keeps `input[i]` where `flags[i] != 0`, in order (a straight filter).
///
/// ```
/// assert_eq!(compact::cpu::select_flagged(&[5, -1, 7, 0], &[1, 0, 9, 0])?, [5, 7]);
/// assert!(compact::cpu::select_flagged(&[5, -1, 7], &[1, 0]).is_err()); // one flag per item
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn select_flagged<T: DeviceType>(input: &[T], flags: &[u8]) -> Result<Vec<T>> {
    Error::check_len("flags", input.len(), flags.len())?;
    Ok(input
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f != 0)
        .map(|(&x, _)| x)
        .collect())
}

/// Keeps the items for which `predicate` holds, in order.
///
/// ```
/// use compact::Predicate;
/// assert_eq!(compact::cpu::select_if(&[5, -1, 7, 0], &Predicate::Lt(6)), [5, -1, 0]);
/// ```
pub fn select_if<T: Element>(input: &[T], predicate: &Predicate<T>) -> Vec<T> {
    input
        .iter()
        .copied()
        .filter(|&x| predicate.evaluate(x))
        .collect()
}

/// Stable partition: the kept items in order, then the rejected ones, also
/// in their original order. Returns the items and how many were kept.
///
/// ```
/// use compact::Predicate;
/// let (items, kept) = compact::cpu::partition(&[5, -1, 7, 0], &Predicate::Lt(6));
/// assert_eq!((items, kept), (vec![5, -1, 0, 7], 3));
/// ```
pub fn partition<T: Element>(input: &[T], predicate: &Predicate<T>) -> (Vec<T>, usize) {
    let (mut kept, rejected): (Vec<T>, Vec<T>) =
        input.iter().copied().partition(|&x| predicate.evaluate(x));
    let count = kept.len();
    kept.extend(rejected);
    (kept, count)
}

/// How many items `predicate` keeps.
///
/// ```
/// use compact::Predicate;
/// assert_eq!(compact::cpu::count_if(&[5.0, f64::NAN, 0.0, -0.0], &Predicate::NonZero), 2);
/// ```
pub fn count_if<T: Element>(input: &[T], predicate: &Predicate<T>) -> usize {
    input.iter().filter(|&&x| predicate.evaluate(x)).count()
}

/// The lab's three steps on the CPU for a keep decision per item: map each
/// item to 0 or 1, exclusive-scan those marks into output positions, scatter
/// the kept items to their positions. The count is the last position plus
/// the last mark. Marks and positions are `u64`, so any length works.
///
/// ```
/// // Keep every other item.
/// let kept = compact::cpu::map_scan_scatter_by(&[10, 11, 12, 13, 14], |i, _| i % 2 == 0);
/// assert_eq!(kept, [10, 12, 14]);
/// ```
pub fn map_scan_scatter_by<T: Copy>(input: &[T], keep: impl Fn(usize, T) -> bool) -> Vec<T> {
    // Map.
    let marks: Vec<u64> = input
        .iter()
        .enumerate()
        .map(|(i, &x)| u64::from(keep(i, x)))
        .collect();
    // Exclusive scan.
    let mut positions = Vec::with_capacity(marks.len());
    let mut running = 0u64;
    for &m in &marks {
        positions.push(running);
        running += m;
    }
    let count = match (positions.last(), marks.last()) {
        (Some(&p), Some(&m)) => (p + m) as usize,
        _ => 0,
    };
    // Scatter.
    let mut out: Vec<Option<T>> = vec![None; count];
    for (i, &x) in input.iter().enumerate() {
        if marks[i] != 0 {
            out[positions[i] as usize] = Some(x);
        }
    }
    out.into_iter()
        .map(|x| x.expect("every position below the count receives exactly one item"))
        .collect()
}

/// [`map_scan_scatter_by`] with a predicate.
///
/// ```
/// use compact::Predicate;
/// let input = [5, -1, 7, 0];
/// let kept = compact::cpu::map_scan_scatter(&input, &Predicate::Gt(0));
/// assert_eq!(kept, compact::cpu::select_if(&input, &Predicate::Gt(0)));
/// ```
pub fn map_scan_scatter<T: Element>(input: &[T], predicate: &Predicate<T>) -> Vec<T> {
    map_scan_scatter_by(input, |_, x| predicate.evaluate(x))
}

/// [`map_scan_scatter_by`] with flag bytes (non-zero keeps).
///
/// ```
/// assert_eq!(compact::cpu::map_scan_scatter_flagged(&[5, -1, 7, 0], &[1, 0, 1, 0])?, [5, 7]);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn map_scan_scatter_flagged<T: DeviceType>(input: &[T], flags: &[u8]) -> Result<Vec<T>> {
    Error::check_len("flags", input.len(), flags.len())?;
    Ok(map_scan_scatter_by(input, |i, _| flags[i] != 0))
}
