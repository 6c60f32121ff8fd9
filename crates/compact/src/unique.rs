//! Unique (consecutive): the first item of every run of equal consecutive
//! keys, optionally with a value travelling along.
//!
//! - **Computes** `out[r]` = the key of run `r` (consecutive duplicates
//!   dropped, the first kept; torch's `unique_consecutive`), and for
//!   [`unique_by_key`] `values_out[r]` = the value at the run's first item;
//!   plus the number of runs.
//! - **How**: a selection of heads (items whose key differs from their
//!   predecessor's). The by-key kernel of [`crate::reduce_by_key`]
//!   (`kernels/cuda/compact/by_key.cu`, mode `BY_KEY_UNIQUE`) computes each
//!   item's head flag with a one-item look-behind (a tile reads the key
//!   before its start), scans the u64 head counts (block scan, then the
//!   look-back carrying u64 counts as compaction's does), and each head
//!   writes its key (and value) at slot = heads before it.
//! - **Work** O(n); **bytes moved** n·(k + v) read, runs·(k + v) written
//!   ([`unique_bytes_moved`]), plus the tile state; one launch.
//! - **Types**: keys `i32 u32 i64 u64` (bitwise equality); values of 4 or 8
//!   bytes (`i32 u32 f32 i64 u64 f64`); any length (64-bit counts).

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, Result};

use crate::by_key::{check_key, check_outputs_disjoint, check_room, read_runs, RunLaunch, RunMode};

/// Checks a unique's arguments: the key type and an output able to hold
/// every item.
///
/// ```
/// use compact::validate_unique;
/// assert!(validate_unique::<u32>(10, 10).is_ok());
/// assert!(validate_unique::<u32>(10, 9).is_err()); // out too short
/// assert!(validate_unique::<f32>(10, 10).is_err()); // float keys
/// ```
pub fn validate_unique<K: Element>(input_len: usize, out_len: usize) -> Result<()> {
    check_key::<K>("unique")?;
    check_room("out", input_len, out_len)
}

/// Checks a unique by key's arguments: types, `values` as long as `keys`,
/// both outputs able to hold every item.
///
/// ```
/// use compact::validate_unique_by_key;
/// assert!(validate_unique_by_key::<i64, f64>(10, 10, 10, 10).is_ok());
/// assert!(validate_unique_by_key::<i64, f64>(10, 11, 10, 10).is_err()); // values longer
/// assert!(validate_unique_by_key::<i64, u8>(10, 10, 10, 10).is_err()); // 1-byte values
/// ```
pub fn validate_unique_by_key<K: Element, V: Element>(
    keys_len: usize,
    values_len: usize,
    keys_out_len: usize,
    values_out_len: usize,
) -> Result<()> {
    check_key::<K>("unique_by_key")?;
    if !(V::BYTES == 4 || V::BYTES == 8) {
        return Err(Error::Unsupported(format!(
            "unique_by_key with {} values: values must be 4 or 8 bytes",
            V::SUFFIX
        )));
    }
    Error::check_len("values", keys_len, values_len)?;
    check_room("keys_out", keys_len, keys_out_len)?;
    check_room("values_out", keys_len, values_out_len)
}

/// [`unique`] into the caller's buffer, the number of runs left in
/// `count_out[0]`. **Does not synchronise.** `out` must hold at least
/// `input.len()` items. On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = DeviceBuffer::from_host(&gpu, &[3i32, 3, 1, 1, 3])?;
/// let mut out = DeviceBuffer::<i32>::zeros(&gpu, 5)?;
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::unique_into(&gpu, input.view(), out.view_mut(), count.view_mut())?;
/// assert_eq!(count.to_host(&gpu)?, [3]);
/// assert_eq!(out.to_host(&gpu)?[..3], [3, 1, 3]);
/// # Ok(()) }
/// ```
pub fn unique_into<K: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, K>,
    out: DeviceViewMut<'_, K>,
    mut count_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    validate_unique::<K>(input.len(), out.len())?;
    crate::validate::validate_count_out(count_out.len())?;
    let input_span = (input.device_ptr(), input.bytes());
    let out_span = (out.device_ptr(), out.bytes());
    check_outputs_disjoint(
        &[input_span],
        &[
            ("out", out_span),
            ("count_out", (count_out.device_ptr(), count_out.bytes())),
        ],
    )?;
    RunLaunch {
        mode: RunMode::Unique { values: false },
        keys: input,
        values_ptr: 0,
        keys_out_ptr: out_span.0,
        values_out_ptr: 0,
        value_bytes: 0,
        value_cuda: K::CUDA_TYPE,
        value_suffix: K::SUFFIX,
        operator: None,
    }
    .enqueue(gpu, &mut count_out)
}

/// Unique (consecutive): `input` with consecutive duplicates dropped, the
/// first of each run kept, into `out`. Returns how many were kept.
/// **Synchronises** (reads the count back).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [9u64, 9, 9, 2, 9];
/// let input = DeviceBuffer::from_host(&gpu, &host)?;
/// let mut out = DeviceBuffer::<u64>::zeros(&gpu, host.len())?;
/// let kept = compact::unique(&gpu, input.view(), out.view_mut())?;
/// assert_eq!(out.to_host(&gpu)?[..kept], compact::cpu_by_key::unique(&host)); // [9, 2, 9]
/// # Ok(()) }
/// ```
pub fn unique<K: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, K>,
    out: DeviceViewMut<'_, K>,
) -> Result<usize> {
    validate_unique::<K>(input.len(), out.len())?;
    let mut count = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    unique_into(gpu, input, out, count.view_mut())?;
    read_runs(gpu, &count)
}

/// [`unique_by_key`] into the caller's buffers, the number of runs left in
/// `count_out[0]`. **Does not synchronise.** Both outputs must hold at least
/// `keys.len()` items. On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[3i32, 3, 1])?;
/// let values = DeviceBuffer::from_host(&gpu, &[10.5f64, 11.5, 12.5])?;
/// let mut keys_out = DeviceBuffer::<i32>::zeros(&gpu, 3)?;
/// let mut values_out = DeviceBuffer::<f64>::zeros(&gpu, 3)?;
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::unique_by_key_into(&gpu, keys.view(), values.view(), keys_out.view_mut(), values_out.view_mut(), count.view_mut())?;
/// assert_eq!(values_out.to_host(&gpu)?[..2], [10.5, 12.5]);
/// # Ok(()) }
/// ```
pub fn unique_by_key_into<K: Element, V: Element>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    values: DeviceView<'_, V>,
    keys_out: DeviceViewMut<'_, K>,
    values_out: DeviceViewMut<'_, V>,
    mut count_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    validate_unique_by_key::<K, V>(keys.len(), values.len(), keys_out.len(), values_out.len())?;
    crate::validate::validate_count_out(count_out.len())?;
    let keys_span = (keys.device_ptr(), keys.bytes());
    let values_span = (values.device_ptr(), values.bytes());
    let keys_out_span = (keys_out.device_ptr(), keys_out.bytes());
    let values_out_span = (values_out.device_ptr(), values_out.bytes());
    check_outputs_disjoint(
        &[keys_span, values_span],
        &[
            ("keys_out", keys_out_span),
            ("values_out", values_out_span),
            ("count_out", (count_out.device_ptr(), count_out.bytes())),
        ],
    )?;
    RunLaunch {
        mode: RunMode::Unique { values: true },
        keys,
        values_ptr: values_span.0,
        keys_out_ptr: keys_out_span.0,
        values_out_ptr: values_out_span.0,
        value_bytes: V::BYTES,
        value_cuda: V::CUDA_TYPE,
        value_suffix: V::SUFFIX,
        operator: None,
    }
    .enqueue(gpu, &mut count_out)
}

/// Unique by key: the key of each run to `keys_out[r]` and the value at its
/// first item to `values_out[r]`. Returns the number of runs.
/// **Synchronises** (reads the count back).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (k, v) = ([3u32, 3, 1, 3], [10i64, 11, 12, 13]);
/// let keys = DeviceBuffer::from_host(&gpu, &k)?;
/// let values = DeviceBuffer::from_host(&gpu, &v)?;
/// let mut keys_out = DeviceBuffer::<u32>::zeros(&gpu, 4)?;
/// let mut values_out = DeviceBuffer::<i64>::zeros(&gpu, 4)?;
/// let runs = compact::unique_by_key(&gpu, keys.view(), values.view(), keys_out.view_mut(), values_out.view_mut())?;
/// let (want_keys, want_values) = compact::cpu_by_key::unique_by_key(&k, &v)?;
/// assert_eq!(keys_out.to_host(&gpu)?[..runs], want_keys); // [3, 1, 3]
/// assert_eq!(values_out.to_host(&gpu)?[..runs], want_values); // [10, 12, 13]
/// # Ok(()) }
/// ```
pub fn unique_by_key<K: Element, V: Element>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    values: DeviceView<'_, V>,
    keys_out: DeviceViewMut<'_, K>,
    values_out: DeviceViewMut<'_, V>,
) -> Result<usize> {
    validate_unique_by_key::<K, V>(keys.len(), values.len(), keys_out.len(), values_out.len())?;
    let mut count = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    unique_by_key_into(gpu, keys, values, keys_out, values_out, count.view_mut())?;
    read_runs(gpu, &count)
}

/// Global bytes a unique (by key) moves: n·(k + v) read, runs·(k + v)
/// written (`value_bytes` 0 for [`unique`]).
///
/// ```
/// assert_eq!(compact::unique_bytes_moved(1000, 100, 4, 0), 4400);
/// ```
pub fn unique_bytes_moved(n: usize, runs: usize, key_bytes: usize, value_bytes: usize) -> u64 {
    ((n + runs) * (key_bytes + value_bytes)) as u64
}
