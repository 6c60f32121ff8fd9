//! Run-length encoding: each run of equal consecutive keys as its key and
//! its length.
//!
//! - **Computes** `unique_out[r]` = the key of run `r`, `counts_out[r]` =
//!   its length (u32), and the number of runs.
//! - **How**: the by-key kernel of [`crate::reduce_by_key`]
//!   (`kernels/cuda/compact/by_key.cu`, mode `BY_KEY_RUN_LENGTH`) with
//!   implicit values 1 summed as `u32`: nothing but the keys is read.
//! - **Work** O(n); **bytes moved** n·k read, runs·(k + 4) written
//!   ([`run_length_bytes_moved`]), plus the tile state; one launch.
//! - **Types**: keys `i32 u32 i64 u64` (bitwise equality), any length;
//!   run lengths are `u32` (a run of 2^32 items or more wraps modulo 2^32).

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Element, Gpu, Result};

use crate::by_key::{
    check_key, check_outputs_disjoint, check_room, read_runs, run_length_operator, RunLaunch,
    RunMode,
};

/// Checks a run-length encoding's arguments: the key type, both outputs
/// able to hold `n` runs.
///
/// ```
/// use compact::validate_run_length_encode;
/// assert!(validate_run_length_encode::<i32>(10, 10, 10).is_ok());
/// assert!(validate_run_length_encode::<i32>(10, 10, 3).is_err()); // counts_out too short
/// assert!(validate_run_length_encode::<f64>(10, 10, 10).is_err()); // float keys
/// ```
pub fn validate_run_length_encode<K: Element>(
    input_len: usize,
    unique_out_len: usize,
    counts_out_len: usize,
) -> Result<()> {
    check_key::<K>("run_length_encode")?;
    check_room("unique_out", input_len, unique_out_len)?;
    check_room("counts_out", input_len, counts_out_len)
}

/// Run-length encoding into the caller's buffers, the number of runs left in
/// `num_runs_out[0]`. **Does not synchronise.** `unique_out` and
/// `counts_out` must hold at least `input.len()` items; the first `runs` of
/// each are written. On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = DeviceBuffer::from_host(&gpu, &[5i32, 5, 5, 2, 2, 5])?;
/// let mut unique = DeviceBuffer::<i32>::zeros(&gpu, 6)?;
/// let mut counts = DeviceBuffer::<u32>::zeros(&gpu, 6)?;
/// let mut runs = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::run_length_encode_into(&gpu, input.view(), unique.view_mut(), counts.view_mut(), runs.view_mut())?;
/// assert_eq!(runs.to_host(&gpu)?, [3]);
/// assert_eq!(counts.to_host(&gpu)?[..3], [3, 2, 1]);
/// # Ok(()) }
/// ```
pub fn run_length_encode_into<K: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, K>,
    unique_out: DeviceViewMut<'_, K>,
    counts_out: DeviceViewMut<'_, u32>,
    mut num_runs_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    validate_run_length_encode::<K>(input.len(), unique_out.len(), counts_out.len())?;
    crate::validate::validate_count_out(num_runs_out.len())?;
    let input_span = (input.device_ptr(), input.bytes());
    let unique_span = (unique_out.device_ptr(), unique_out.bytes());
    let counts_span = (counts_out.device_ptr(), counts_out.bytes());
    check_outputs_disjoint(
        &[input_span],
        &[
            ("unique_out", unique_span),
            ("counts_out", counts_span),
            (
                "num_runs_out",
                (num_runs_out.device_ptr(), num_runs_out.bytes()),
            ),
        ],
    )?;
    RunLaunch {
        mode: RunMode::RunLength,
        keys: input,
        values_ptr: 0,
        keys_out_ptr: unique_span.0,
        values_out_ptr: counts_span.0,
        value_bytes: 0,
        value_cuda: "u32",
        value_suffix: "u32",
        operator: Some(run_length_operator()),
    }
    .enqueue(gpu, &mut num_runs_out)
}

/// Run-length encoding: each run's key to `unique_out[r]`, its length to
/// `counts_out[r]`. Returns the number of runs. **Synchronises** (reads the
/// count back). Same requirements as [`run_length_encode_into`].
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let host = [1u64, 1, 4, 4, 4, 4, 9];
/// let input = DeviceBuffer::from_host(&gpu, &host)?;
/// let mut unique = DeviceBuffer::<u64>::zeros(&gpu, host.len())?;
/// let mut counts = DeviceBuffer::<u32>::zeros(&gpu, host.len())?;
/// let runs = compact::run_length_encode(&gpu, input.view(), unique.view_mut(), counts.view_mut())?;
/// let (want_keys, want_counts) = compact::cpu_by_key::run_length_encode(&host);
/// assert_eq!(unique.to_host(&gpu)?[..runs], want_keys); // [1, 4, 9]
/// assert_eq!(counts.to_host(&gpu)?[..runs], want_counts); // [2, 4, 1]
/// # Ok(()) }
/// ```
pub fn run_length_encode<K: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, K>,
    unique_out: DeviceViewMut<'_, K>,
    counts_out: DeviceViewMut<'_, u32>,
) -> Result<usize> {
    validate_run_length_encode::<K>(input.len(), unique_out.len(), counts_out.len())?;
    let mut runs = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    run_length_encode_into(gpu, input, unique_out, counts_out, runs.view_mut())?;
    read_runs(gpu, &runs)
}

/// Global bytes a run-length encoding moves: the keys read, one key and one
/// u32 count written per run: n·k + runs·(k + 4). The issue's figure for
/// i32 keys is 4n + 8·runs.
///
/// ```
/// assert_eq!(compact::run_length_bytes_moved(1 << 20, 1 << 16, 4), (4 << 20) + 8 * (1 << 16));
/// ```
pub fn run_length_bytes_moved(n: usize, runs: usize, key_bytes: usize) -> u64 {
    (n * key_bytes + runs * (key_bytes + 4)) as u64
}
