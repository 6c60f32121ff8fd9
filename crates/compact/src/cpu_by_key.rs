//! CPU references for the keyed run primitives and allocation by scan.
//!
//! A *run* is a maximal stretch of consecutive equal keys (compared with
//! `==`; the GPU versions take integer keys only, where `==` is bitwise
//! equality). The GPU results of [`crate::reduce_by_key`],
//! [`crate::run_length_encode`], [`crate::unique`],
//! [`crate::unique_by_key`] and [`crate::expand_into`] are checked against
//! these.

use gpu_core::{DeviceType, Element, Error, Operator, Result};

/// The runs of `keys` as `(start, end)` index ranges, in order.
///
/// ```
/// assert_eq!(compact::cpu_by_key::runs(&[7, 7, 1, 7]), [(0, 2), (2, 3), (3, 4)]);
/// assert!(compact::cpu_by_key::runs::<i32>(&[]).is_empty());
/// ```
pub fn runs<K: PartialEq>(keys: &[K]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=keys.len() {
        if i == keys.len() || keys[i] != keys[i - 1] {
            out.push((start, i));
            start = i;
        }
    }
    out
}

/// Reduce by key: each run's key and the fold of its values under `op`, in
/// index order (`v[s] ⊕ v[s+1] ⊕ …`, starting from the first value, never
/// from the identity).
///
/// ```
/// use gpu_core::Sum;
/// let (keys, sums) = compact::cpu_by_key::reduce_by_key(&[1, 1, 2, 1], &[1.0f32, 2.0, 3.0, 4.0], &Sum)?;
/// assert_eq!((keys, sums), (vec![1, 2, 1], vec![3.0, 3.0, 4.0]));
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn reduce_by_key<K: DeviceType + PartialEq, V: Element, O: Operator<V>>(
    keys: &[K],
    values: &[V],
    op: &O,
) -> Result<(Vec<K>, Vec<V>)> {
    Error::check_len("values", keys.len(), values.len())?;
    Ok(runs(keys)
        .into_iter()
        .map(|(s, e)| {
            let folded = values[s + 1..e]
                .iter()
                .fold(values[s], |acc, &v| op.combine(acc, v));
            (keys[s], folded)
        })
        .unzip())
}

/// Run-length encoding: each run's key and its length.
///
/// ```
/// let (keys, counts) = compact::cpu_by_key::run_length_encode(&[4u64, 4, 4, 9, 4]);
/// assert_eq!((keys, counts), (vec![4, 9, 4], vec![3, 1, 1]));
/// ```
pub fn run_length_encode<K: DeviceType + PartialEq>(keys: &[K]) -> (Vec<K>, Vec<u32>) {
    runs(keys)
        .into_iter()
        .map(|(s, e)| (keys[s], (e - s) as u32))
        .unzip()
}

/// Consecutive duplicates dropped, the first of each run kept.
///
/// ```
/// assert_eq!(compact::cpu_by_key::unique(&[3, 3, 1, 1, 3]), [3, 1, 3]);
/// ```
pub fn unique<K: DeviceType + PartialEq>(keys: &[K]) -> Vec<K> {
    runs(keys).into_iter().map(|(s, _)| keys[s]).collect()
}

/// Each run's key and the value at its first item.
///
/// ```
/// let (keys, values) = compact::cpu_by_key::unique_by_key(&[3, 3, 1], &[10i64, 11, 12])?;
/// assert_eq!((keys, values), (vec![3, 1], vec![10, 12]));
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn unique_by_key<K: DeviceType + PartialEq, V: DeviceType>(
    keys: &[K],
    values: &[V],
) -> Result<(Vec<K>, Vec<V>)> {
    Error::check_len("values", keys.len(), values.len())?;
    Ok(runs(keys)
        .into_iter()
        .map(|(s, _)| (keys[s], values[s]))
        .unzip())
}

/// Allocation by scan: the offsets (exclusive scan of `counts`, u64), the
/// total, and `values[i]` written `counts[i]` times in order.
///
/// ```
/// let (offsets, total, out) = compact::cpu_by_key::expand(&['a' as u32, 'b' as u32, 'c' as u32], &[2, 0, 3])?;
/// assert_eq!((offsets, total), (vec![0, 2, 2], 5));
/// assert_eq!(out, ['a' as u32, 'a' as u32, 'c' as u32, 'c' as u32, 'c' as u32]);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn expand<T: DeviceType>(values: &[T], counts: &[u32]) -> Result<(Vec<u64>, u64, Vec<T>)> {
    Error::check_len("counts", values.len(), counts.len())?;
    let mut offsets = Vec::with_capacity(counts.len());
    let mut running = 0u64;
    for &c in counts {
        offsets.push(running);
        running += u64::from(c);
    }
    let mut out = Vec::with_capacity(running as usize);
    for (&v, &c) in values.iter().zip(counts) {
        out.extend(std::iter::repeat_n(v, c as usize));
    }
    Ok((offsets, running, out))
}
