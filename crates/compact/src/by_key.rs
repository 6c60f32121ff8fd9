//! Reduce by key, and the one kernel every keyed run primitive runs on.
//!
//! - **Computes**, for `n` keys and values, one output per *run* (a maximal
//!   stretch of consecutive equal keys; integer keys compared with `==`,
//!   i.e. bitwise): the run's key and the fold of its values under any
//!   associative [`Operator`] in index order, plus the number of runs.
//! - **How** (`kernels/cuda/compact/by_key.cu`): one pass on the single
//!   decoupled look-back. Each item's head flag says its key differs from
//!   its predecessor's (a tile reads the key before its start); the block
//!   scan and the look-back carry pairs (heads, value) with
//!   `(ha, va) ⊕ (hb, vb) = (ha + hb, hb > 0 ? vb : va ⊕ vb)`: the
//!   segmented scan's pair (`scan::segmented_scan_into`) whose flag part
//!   *counts* heads (in 32 bits, saturating). A 4-byte value and the count
//!   pack into 64 bits and ride the 8-byte tile status unchanged; an 8-byte
//!   value and the count travel as a 16-byte struct published in one
//!   128-bit status word beside the status tag
//!   (`kernels/cuda/single_pass/headed_value.cuh`), through the same
//!   look-back. The inclusive pair at the last item of a run (its *tail*)
//!   holds the run's aggregate. Before the look-back returns, each tail
//!   stages its position and fold in shared memory at its run's slot in
//!   the tile; once the prefix is known the block writes the tile's runs
//!   coalesced, at the heads before the tile plus the slot, minus one (the
//!   run carried in from the previous tile takes the prefix's fold first).
//!   Below 2^32 items the pair's 32-bit head count is exact and gives the
//!   heads before the tile; past it a second look-back over u64 per-tile
//!   head counts, run by another warp at the same time, gives them.
//! - **Work** O(n); **steps** O(items per thread + log block + look-back
//!   depth); **bytes moved** n·(k + v) read, runs·(k + v) written
//!   ([`reduce_by_key_bytes_moved`]), plus 16 bytes of tile state per tile
//!   (32 past 2^32 items); one launch, no memset (epoch-tagged tile state).
//! - **Types**: keys `i32 u32 i64 u64`; values 4 or 8 bytes (`i32 u32 f32
//!   i64 u64 f64`), any operator, custom ones included. Float keys and 1-
//!   or 2-byte values are refused with [`Error::Unsupported`]. Any length
//!   (64-bit slots and counts).
//! - **Deterministic** for integers; for floats the look-back's combine
//!   order across tiles depends on timing (within a run the order is always
//!   the index order).
//!
//! [`crate::run_length_encode`] is this kernel with implicit values 1, and
//! [`crate::unique`] / [`crate::unique_by_key`] the same kernel scanning the
//! head count alone.

use gpu_core::op::operator_prelude;
use gpu_core::single_pass::{with_tile_state, Schedule, StatusEncoding};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, KernelArgs, ModuleSource,
    Operator, Result, Sum,
};

/// Threads per block of the by-key kernel (but run lengths of 4-byte
/// keys: [`tile_shape`]).
pub(crate) const BY_KEY_BLOCK_THREADS: u32 = 256;

/// What the by-key kernel computes (`BY_KEY_*` in `by_key.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunMode {
    /// Keys and the fold of each run's values.
    Reduce,
    /// Keys and run lengths (u32).
    RunLength,
    /// Keys (and the head's value when `values`).
    Unique {
        /// Values travel with the keys.
        values: bool,
    },
}

impl RunMode {
    fn cuda(self) -> &'static str {
        match self {
            RunMode::Reduce => "BY_KEY_REDUCE",
            RunMode::RunLength => "BY_KEY_RUN_LENGTH",
            RunMode::Unique { .. } => "BY_KEY_UNIQUE",
        }
    }

    fn name(self) -> &'static str {
        match self {
            RunMode::Reduce => "reduce",
            RunMode::RunLength => "rle",
            RunMode::Unique { values: false } => "unique",
            RunMode::Unique { values: true } => "unique_values",
        }
    }

    fn has_values(self) -> bool {
        matches!(self, RunMode::Reduce | RunMode::Unique { values: true })
    }
}

/// Keys must be 4- or 8-byte integers (compared bitwise).
pub(crate) fn check_key<K: Element>(what: &str) -> Result<()> {
    if K::IS_FLOAT || !(K::BYTES == 4 || K::BYTES == 8) {
        return Err(Error::Unsupported(format!(
            "{what} with {} keys: keys must be 4- or 8-byte integers (i32, u32, i64, u64), \
             compared bitwise",
            K::SUFFIX
        )));
    }
    Ok(())
}

/// Threads per block and items per thread of one by-key kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TileShape {
    pub(crate) block_threads: u32,
    pub(crate) items: u32,
}

/// The tile of a mode and its key and value sizes (value bytes 0 when no
/// values are read):
/// - run lengths of 4-byte keys: 128 × 32 (4096 keys, as 256 × 16, in
///   blocks half the size: twice the blocks per SM at the same registers);
/// - otherwise 256 threads with 16 items while a key and a value fit 8
///   bytes, else 8 (the shared exchanges stay under 48 KiB).
pub(crate) fn tile_shape(mode: RunMode, key_bytes: usize, value_bytes: usize) -> TileShape {
    if mode == RunMode::RunLength && key_bytes == 4 {
        return TileShape {
            block_threads: 128,
            items: 32,
        };
    }
    let items = if key_bytes + value_bytes <= 8 { 16 } else { 8 };
    TileShape {
        block_threads: BY_KEY_BLOCK_THREADS,
        items,
    }
}

/// Checks a reduce by key's arguments: key and value types, `values` as
/// long as `keys`, both outputs able to hold every run (at least `n`: the
/// number of runs is only known on the device).
///
/// ```
/// use compact::validate_reduce_by_key;
/// assert!(validate_reduce_by_key::<i32, f32>(10, 10, 10, 10).is_ok());
/// assert!(validate_reduce_by_key::<i32, f32>(10, 9, 10, 10).is_err()); // values too short
/// assert!(validate_reduce_by_key::<i32, f32>(10, 10, 9, 10).is_err()); // keys_out too short
/// assert!(validate_reduce_by_key::<f32, f32>(10, 10, 10, 10).is_err()); // float keys
/// assert!(validate_reduce_by_key::<i32, f64>(10, 10, 10, 10).is_ok()); // 8-byte values
/// assert!(validate_reduce_by_key::<i32, u16>(10, 10, 10, 10).is_err()); // 2-byte values
/// ```
pub fn validate_reduce_by_key<K: Element, V: Element>(
    keys_len: usize,
    values_len: usize,
    keys_out_len: usize,
    values_out_len: usize,
) -> Result<()> {
    check_key::<K>("reduce_by_key")?;
    if V::BYTES != 4 && V::BYTES != 8 {
        return Err(Error::Unsupported(format!(
            "reduce_by_key of {} values: the value and a 32-bit head count travel through the \
             look-back's tile status, so values must be 4 or 8 bytes (i32, u32, f32, i64, u64, \
             f64)",
            V::SUFFIX
        )));
    }
    Error::check_len("values", keys_len, values_len)?;
    check_room("unique_keys_out", keys_len, keys_out_len)?;
    check_room("aggregates_out", keys_len, values_out_len)
}

/// An output that receives up to one item per run: room for `n`.
pub(crate) fn check_room(what: &'static str, n: usize, len: usize) -> Result<()> {
    if len < n {
        return Err(Error::invalid(
            what,
            format!("holds {len} items; up to {n} runs may come out (one per input item)"),
        ));
    }
    Ok(())
}

/// The by-key module for one mode, key type, value type and operator: the
/// single-pass headers (and the headed pair's), the operator functor
/// (reduce: `op` on `V`; run lengths: sum on `u32`), the kernel in its
/// tile shape, one entry. `wide_heads`: the second look-back over u64 head
/// counts, for inputs past 2^32 items.
pub(crate) fn module(
    mode: RunMode,
    key_cuda: &str,
    value_cuda: &str,
    operator: Option<String>,
    shape: TileShape,
    wide_heads: bool,
    entry: &str,
) -> ModuleSource {
    let TileShape {
        block_threads,
        items,
    } = shape;
    // The look-back's window, delays and tile order: the scan's 8-byte
    // table entry (a pair is at least 8 bytes).
    let delays = scan::policy::lookback_policy(8);
    let mut module = parprims_kernels::SINGLE_PASS
        .iter()
        .fold(ModuleSource::new(entry), |module, header| {
            module.source(header)
        })
        .source(parprims_kernels::SINGLE_PASS_HEADED_VALUE);
    let op_type = match &operator {
        Some(prelude) => {
            module = module.source(prelude);
            "op_t"
        }
        None => "sum_op<u64>",
    };
    let (k, v) = (key_cuda, value_cuda);
    let params = format!(
        "const {k}* keys, const {v}* values, {k}* keys_out, {v}* values_out, u64* runs_out, \
             u64* state, u32 epoch, u64 n, u64 num_tiles, u32 vector_ok"
    );
    let body = format!(
        "by_key_tile<{k}, {v}, {op_type}, {mode}, {has_values}, {wide_heads}, {bt}, {items}, \
             {w}, {spin}, {start}, {order}>(keys, values, keys_out, values_out, runs_out, state, \
             epoch, n, num_tiles, vector_ok)",
        mode = mode.cuda(),
        has_values = mode.has_values(),
        w = delays.lookback_width(),
        spin = delays.spin_ns(),
        start = delays.start_delay_ns(),
        order = delays.schedule() == Schedule::InBlockOrder,
        bt = block_threads,
    );
    module.source(parprims_kernels::COMPACT_BY_KEY).entry(
        entry,
        &params,
        &body,
        Some(block_threads),
    )
}

/// A launch of the by-key kernel, its arguments validated.
pub(crate) struct RunLaunch<'a, K: Element> {
    pub(crate) mode: RunMode,
    pub(crate) keys: DeviceView<'a, K>,
    /// Device address of the values (0 when none).
    pub(crate) values_ptr: u64,
    pub(crate) keys_out_ptr: u64,
    /// Device address of the value or count output (0 when none).
    pub(crate) values_out_ptr: u64,
    pub(crate) value_bytes: usize,
    pub(crate) value_cuda: &'static str,
    pub(crate) value_suffix: &'static str,
    /// The operator's functor (reduce, run lengths), its name and fingerprint.
    pub(crate) operator: Option<(String, String)>,
}

impl<K: Element> RunLaunch<'_, K> {
    /// Compiles (or fetches) the kernel, then enqueues it: no host
    /// synchronisation; `runs_out[0]` receives the number of runs.
    pub(crate) fn enqueue(self, gpu: &Gpu, runs_out: &mut DeviceViewMut<'_, u64>) -> Result<()> {
        let n = self.keys.len() as u64;
        let shape = tile_shape(self.mode, K::BYTES, self.value_bytes);
        // The pair's 32-bit head count is exact below 2^32 items; past it a
        // second look-back over u64 head counts gives the run slots.
        let wide_heads = n > u64::from(u32::MAX) && !matches!(self.mode, RunMode::Unique { .. });
        let op_name = self
            .operator
            .as_ref()
            .map_or("none", |(_, name)| name.as_str());
        let entry = entry_name(self.mode, K::SUFFIX, self.value_suffix, op_name, wide_heads);
        let key = format!("compact/by_key/{entry}");
        let prelude = self.operator.map(|(prelude, _)| prelude);
        let kernel = gpu.stored_kernel(&key, &entry, || {
            module(
                self.mode,
                K::CUDA_TYPE,
                self.value_cuda,
                prelude,
                shape,
                wide_heads,
                &entry,
            )
        })?;
        // n = 0: one block writes no runs (and draws no tile).
        let (config, num_tiles) =
            gpu_core::launch::grid_1d(n.max(1), shape.block_threads, shape.items, 0)?;
        let keys_aligned = self.keys.device_ptr().is_multiple_of(16);
        let values_aligned = self.values_ptr.is_multiple_of(16);
        let vector_ok = u32::from(keys_aligned) | (u32::from(values_aligned) << 1);
        // The pair modes keep two statuses per tile (pairs, then u64 head
        // counts); unique one (head counts).
        let status_tiles = match self.mode {
            RunMode::Unique { .. } => num_tiles,
            RunMode::Reduce | RunMode::RunLength if wide_heads => 2 * num_tiles,
            RunMode::Reduce | RunMode::RunLength => num_tiles,
        };
        with_tile_state(
            gpu,
            status_tiles,
            state_element_bytes(self.mode, self.value_bytes),
            StatusEncoding::Packed128,
            |mut state| {
                let mut args = KernelArgs::new();
                args.input(&self.keys)
                    .scalar(self.values_ptr)
                    .scalar(self.keys_out_ptr)
                    .scalar(self.values_out_ptr)
                    .output(runs_out)
                    .output(&mut state.words)
                    .scalar(state.epoch)
                    .scalar(n)
                    .scalar(num_tiles)
                    .scalar(vector_ok);
                // SAFETY: the arguments match by_key_*(const K* keys, const V*
                // values, K* keys_out, V* values_out, u64* runs_out, u64* state,
                // u32 epoch, u64 n, u64 num_tiles, u32 vector_ok). `keys` and
                // `values` (null when the mode has none) hold n items, read at
                // indices < n only; `keys_out` and `values_out` (null when the
                // mode writes none) hold at least n items (validated) and are
                // written at run slots < runs <= n; `runs_out` holds one u64.
                // The outputs overlap no input (validated). `state` holds the
                // tile state of status_tiles 128-bit status words (2 words per
                // tile for either element width given; 16-byte aligned,
                // checked by with_tile_state): the kernel's statuses for
                // num_tiles tiles, twice for the pair modes past 2^32 items. Vector
                // loads only where vector_ok says the base is 16-byte aligned.
                unsafe { gpu.launch(&kernel, config, &args) }
            },
        )
    }
}

/// Bytes per status as `with_tile_state` takes them: 16 where the pairs
/// carry 8-byte values (headed pairs, a state layout of their own: see
/// `headed_value.cuh`), else 8 (packed u64 pairs or head counts).
pub(crate) fn state_element_bytes(mode: RunMode, value_bytes: usize) -> usize {
    if mode == RunMode::Reduce && value_bytes == 8 {
        16
    } else {
        8
    }
}

/// The entry (and module) name of one instantiation: mode, key type, value
/// type, operator name (with its fingerprint; `none` for unique).
fn entry_name(
    mode: RunMode,
    key_suffix: &str,
    value_suffix: &str,
    op_name: &str,
    wide_heads: bool,
) -> String {
    let heads = if wide_heads { "_wide" } else { "" };
    format!(
        "by_key_{}_{key_suffix}_{value_suffix}_{op_name}{heads}",
        mode.name()
    )
}

/// Refuses an output that overlaps an input.
pub(crate) fn check_disjoint(
    what: &'static str,
    out_ptr: u64,
    out_bytes: usize,
    inputs: &[(u64, usize)],
) -> Result<()> {
    for &(ptr, bytes) in inputs {
        let (a0, a1) = (out_ptr, out_ptr + out_bytes as u64);
        let (b0, b1) = (ptr, ptr + bytes as u64);
        if out_bytes > 0 && bytes > 0 && a0 < b1 && b0 < a1 {
            return Err(Error::invalid(what, "overlaps an input or another output"));
        }
    }
    Ok(())
}

/// Refuses an output that overlaps an input or an output before it:
/// `outputs[i]` (a name and a `(pointer, bytes)` span) is checked against
/// every input and `outputs[..i]`, in order, so the first clash names the
/// later of the two outputs.
pub(crate) fn check_outputs_disjoint(
    inputs: &[(u64, usize)],
    outputs: &[(&'static str, (u64, usize))],
) -> Result<()> {
    let mut seen: Vec<(u64, usize)> = inputs.to_vec();
    for &(what, (ptr, bytes)) in outputs {
        check_disjoint(what, ptr, bytes, &seen)?;
        seen.push((ptr, bytes));
    }
    Ok(())
}

/// The operator's functor and a name with a fingerprint of its CUDA.
pub(crate) fn operator_parts<V: Element, O: Operator<V>>(op: &O) -> (String, String) {
    let text = format!("{}\n{}", op.cuda_support(), op.cuda_combine());
    let name = format!(
        "{}_{}",
        op.name(),
        &gpu_core::kernel::fingerprint(&text)[..8]
    );
    (operator_prelude::<V, O>(op, "op_t"), name)
}

/// Reduce by key into the caller's buffers, the number of runs left in
/// `num_runs_out[0]`. **Does not synchronise.** `unique_keys_out` and
/// `aggregates_out` must hold at least `keys.len()` items (the number of
/// runs is only known on the device); the first `runs` of each are written.
/// On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[1i32, 1, 2, 2, 2, 1])?;
/// let values = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let mut unique = DeviceBuffer::<i32>::zeros(&gpu, 6)?;
/// let mut sums = DeviceBuffer::<f32>::zeros(&gpu, 6)?;
/// let mut runs = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::reduce_by_key_into(&gpu, keys.view(), values.view(), &Sum, unique.view_mut(), sums.view_mut(), runs.view_mut())?;
/// assert_eq!(runs.to_host(&gpu)?, [3]);
/// assert_eq!(sums.to_host(&gpu)?[..3], [3.0, 12.0, 6.0]);
/// # Ok(()) }
/// ```
pub fn reduce_by_key_into<K: Element, V: Element, O: Operator<V>>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    values: DeviceView<'_, V>,
    op: &O,
    unique_keys_out: DeviceViewMut<'_, K>,
    aggregates_out: DeviceViewMut<'_, V>,
    mut num_runs_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    validate_reduce_by_key::<K, V>(
        keys.len(),
        values.len(),
        unique_keys_out.len(),
        aggregates_out.len(),
    )?;
    crate::validate::validate_count_out(num_runs_out.len())?;
    check_outputs_disjoint(
        &[
            (keys.device_ptr(), keys.bytes()),
            (values.device_ptr(), values.bytes()),
        ],
        &[
            (
                "unique_keys_out",
                (unique_keys_out.device_ptr(), unique_keys_out.bytes()),
            ),
            (
                "aggregates_out",
                (aggregates_out.device_ptr(), aggregates_out.bytes()),
            ),
            (
                "num_runs_out",
                (num_runs_out.device_ptr(), num_runs_out.bytes()),
            ),
        ],
    )?;
    RunLaunch {
        mode: RunMode::Reduce,
        keys,
        values_ptr: values.device_ptr(),
        keys_out_ptr: unique_keys_out.device_ptr(),
        values_out_ptr: aggregates_out.device_ptr(),
        value_bytes: V::BYTES,
        value_cuda: V::CUDA_TYPE,
        value_suffix: V::SUFFIX,
        operator: Some(operator_parts::<V, O>(op)),
    }
    .enqueue(gpu, &mut num_runs_out)
}

/// Reduce by key: consecutive equal keys form a run; each run's key goes to
/// `unique_keys_out[r]` and the fold of its values under `op` (index order)
/// to `aggregates_out[r]`. Returns the number of runs. **Synchronises**
/// (reads the count back). Same requirements as [`reduce_by_key_into`].
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Max};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (k, v) = ([7u64, 7, 3, 7], [5u32, 9, 1, 2]);
/// let keys = DeviceBuffer::from_host(&gpu, &k)?;
/// let values = DeviceBuffer::from_host(&gpu, &v)?;
/// let mut unique = DeviceBuffer::<u64>::zeros(&gpu, 4)?;
/// let mut maxima = DeviceBuffer::<u32>::zeros(&gpu, 4)?;
/// let runs = compact::reduce_by_key(&gpu, keys.view(), values.view(), &Max, unique.view_mut(), maxima.view_mut())?;
/// let (want_keys, want_max) = compact::cpu_by_key::reduce_by_key(&k, &v, &Max)?;
/// assert_eq!(unique.to_host(&gpu)?[..runs], want_keys); // [7, 3, 7]
/// assert_eq!(maxima.to_host(&gpu)?[..runs], want_max); // [9, 1, 2]
/// # Ok(()) }
/// ```
pub fn reduce_by_key<K: Element, V: Element, O: Operator<V>>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    values: DeviceView<'_, V>,
    op: &O,
    unique_keys_out: DeviceViewMut<'_, K>,
    aggregates_out: DeviceViewMut<'_, V>,
) -> Result<usize> {
    validate_reduce_by_key::<K, V>(
        keys.len(),
        values.len(),
        unique_keys_out.len(),
        aggregates_out.len(),
    )?;
    let mut runs = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    reduce_by_key_into(
        gpu,
        keys,
        values,
        op,
        unique_keys_out,
        aggregates_out,
        runs.view_mut(),
    )?;
    read_runs(gpu, &runs)
}

/// Reads a run count back (synchronises).
pub(crate) fn read_runs(gpu: &Gpu, runs: &DeviceBuffer<u64>) -> Result<usize> {
    let mut host = [0u64];
    gpu.read_small(&runs.view(), &mut host)?;
    Ok(host[0] as usize)
}

/// Global bytes a reduce by key moves: keys and values read, one key and
/// one aggregate written per run: n·(k + v) + runs·(k + v).
///
/// ```
/// // 2^28 i32 keys and f32 values in runs of 16.
/// let n = 1usize << 28;
/// assert_eq!(compact::reduce_by_key_bytes_moved(n, n / 16, 4, 4), (8 * n + 8 * (n / 16)) as u64);
/// ```
pub fn reduce_by_key_bytes_moved(
    n: usize,
    runs: usize,
    key_bytes: usize,
    value_bytes: usize,
) -> u64 {
    ((n + runs) * (key_bytes + value_bytes)) as u64
}

/// The run-length operator: sum on `u32`.
pub(crate) fn run_length_operator() -> (String, String) {
    operator_parts::<u32, Sum>(&Sum)
}

/// The keyed modules (reduce by key, run-length encoding, unique) for a
/// kernel catalog: every mode on a few key types, reduce with built-in
/// operators on the 4- and 8-byte value types.
///
/// ```
/// assert!(compact::keyed_kernel_catalog().len() >= 10);
/// ```
pub fn keyed_kernel_catalog() -> Vec<ModuleSource> {
    use gpu_core::{Max, Min};
    fn reduce<K: Element, V: Element, O: Operator<V>>(op: &O) -> ModuleSource {
        let (prelude, name) = operator_parts::<V, O>(op);
        let entry = entry_name(RunMode::Reduce, K::SUFFIX, V::SUFFIX, &name, false);
        module(
            RunMode::Reduce,
            K::CUDA_TYPE,
            V::CUDA_TYPE,
            Some(prelude),
            tile_shape(RunMode::Reduce, K::BYTES, V::BYTES),
            false,
            &entry,
        )
    }
    // V: the counts' u32 (run lengths), the values' type (unique by key) or
    // the key type (unique: no values), as the launches name them.
    fn keyed<K: Element, V: Element>(mode: RunMode) -> ModuleSource {
        let operator = (mode == RunMode::RunLength).then(run_length_operator);
        let op_name = operator.as_ref().map_or("none", |(_, name)| name.as_str());
        let entry = entry_name(mode, K::SUFFIX, V::SUFFIX, op_name, false);
        let value_bytes = if mode.has_values() { V::BYTES } else { 0 };
        module(
            mode,
            K::CUDA_TYPE,
            V::CUDA_TYPE,
            operator.map(|(prelude, _)| prelude),
            tile_shape(mode, K::BYTES, value_bytes),
            false,
            &entry,
        )
    }
    vec![
        reduce::<i32, f32, _>(&Sum),
        reduce::<i32, i32, _>(&Max),
        reduce::<u32, u32, _>(&Min),
        reduce::<i64, f32, _>(&Sum),
        reduce::<u64, i32, _>(&Sum),
        reduce::<i32, i64, _>(&Sum),
        reduce::<u32, u64, _>(&Max),
        reduce::<i64, f64, _>(&Sum),
        reduce::<u64, f64, _>(&Min),
        keyed::<i32, u32>(RunMode::RunLength),
        keyed::<u64, u32>(RunMode::RunLength),
        keyed::<i32, i32>(RunMode::Unique { values: false }),
        keyed::<i64, i64>(RunMode::Unique { values: false }),
        keyed::<u32, f64>(RunMode::Unique { values: true }),
        keyed::<i64, f32>(RunMode::Unique { values: true }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_fits_every_shape() {
        let modes = [
            RunMode::Reduce,
            RunMode::RunLength,
            RunMode::Unique { values: false },
            RunMode::Unique { values: true },
        ];
        for mode in modes {
            for (k, v) in [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4), (8, 8)] {
                let v = if mode.has_values() { v } else { 0 };
                let shape = tile_shape(mode, k, v);
                let (threads, tile) = (
                    shape.block_threads as usize,
                    (shape.block_threads * shape.items) as usize,
                );
                let padded = |s: usize| (tile + tile / (128 / s)) * s;
                // The pair (or head count): 16 bytes headed, else 8.
                let pair = if v == 8 { 16 } else { 8 };
                // Each tail's (unique: head's) u16 position, staged.
                let staged = 2 * (tile + 1);
                let bytes = padded(k)
                    + if v > 0 { padded(v) } else { 8 }
                    + 2 * k * threads
                    + pair * (threads / 32)
                    + pair
                    + staged
                    + 24;
                assert!(
                    bytes <= 48 * 1024,
                    "{mode:?}, {k}-byte keys, {v}-byte values: {bytes}"
                );
            }
        }
    }

    #[test]
    fn catalog_entries_are_the_names_launches_use() {
        let names: Vec<String> = keyed_kernel_catalog()
            .iter()
            .flat_map(|m| m.entries().to_vec())
            .collect();
        let rle = entry_name(
            RunMode::RunLength,
            "i32",
            "u32",
            &run_length_operator().1,
            false,
        );
        assert!(names.contains(&rle), "{rle} in {names:?}");
        let unique = entry_name(
            RunMode::Unique { values: false },
            "i32",
            "i32",
            "none",
            false,
        );
        assert!(names.contains(&unique), "{unique} in {names:?}");
    }

    #[test]
    fn keys_must_be_wide_integers() {
        assert!(check_key::<i32>("t").is_ok());
        assert!(check_key::<u64>("t").is_ok());
        assert!(matches!(check_key::<f32>("t"), Err(Error::Unsupported(_))));
        assert!(matches!(check_key::<i16>("t"), Err(Error::Unsupported(_))));
    }

    #[test]
    fn overlapping_outputs_are_refused() {
        assert!(check_disjoint("o", 100, 16, &[(116, 16)]).is_ok());
        assert!(check_disjoint("o", 100, 16, &[(108, 16)]).is_err());
        assert!(check_disjoint("o", 100, 0, &[(100, 16)]).is_ok());
    }

    #[test]
    fn each_output_is_checked_against_the_inputs_and_earlier_outputs() {
        let inputs = [(0, 64)];
        let apart = [("a", (64, 16)), ("b", (80, 16))];
        assert!(check_outputs_disjoint(&inputs, &apart).is_ok());
        let on_input = [("a", (64, 16)), ("b", (32, 16))];
        let clash = [("a", (64, 16)), ("b", (72, 16))];
        for outputs in [&on_input, &clash] {
            match check_outputs_disjoint(&inputs, outputs) {
                Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, "b"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn catalog_modules_compile_where_nvrtc_is() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        // Composition of affine maps x -> a·x + b mod 2^16, (a, b) packed
        // in a u32: associative, not commutative.
        let custom = gpu_core::CustomOp::<u32>::new(
            "affine16",
            "((((a >> 16) * (b >> 16)) & 0xffffu) << 16) | (((b >> 16) * (a & 0xffffu) + (b & 0xffffu)) & 0xffffu)",
            0x1_0000,
            |a, b| {
                let hi = ((a >> 16).wrapping_mul(b >> 16) & 0xffff) << 16;
                hi | ((b >> 16).wrapping_mul(a & 0xffff).wrapping_add(b & 0xffff) & 0xffff)
            },
        )
        .unwrap();
        // The same on 64-bit words: (a, b) packed in a u64, mod 2^32.
        let custom64 = gpu_core::CustomOp::<u64>::new(
            "affine32",
            "((((a >> 32) * (b >> 32)) & 0xffffffffull) << 32) | (((b >> 32) * (a & 0xffffffffull) + (b & 0xffffffffull)) & 0xffffffffull)",
            1 << 32,
            |a, b| {
                let hi = ((a >> 32).wrapping_mul(b >> 32) & 0xffff_ffff) << 32;
                hi | ((b >> 32).wrapping_mul(a & 0xffff_ffff).wrapping_add(b & 0xffff_ffff) & 0xffff_ffff)
            },
        )
        .unwrap();
        let (prelude, name) = operator_parts::<u32, _>(&custom);
        let (prelude64, name64) = operator_parts::<u64, _>(&custom64);
        let mut modules = keyed_kernel_catalog();
        modules.push(module(
            RunMode::Reduce,
            "i32",
            "u32",
            Some(prelude),
            tile_shape(RunMode::Reduce, 4, 4),
            false,
            &format!("by_key_reduce_i32_u32_{name}"),
        ));
        modules.push(module(
            RunMode::Reduce,
            "u64",
            "u64",
            Some(prelude64),
            tile_shape(RunMode::Reduce, 8, 8),
            false,
            &format!("by_key_reduce_u64_u64_{name64}"),
        ));
        // Past 2^32 items: the second look-back over u64 head counts, for
        // packed (4-byte) and headed (8-byte) pairs and run lengths.
        let (sum_f32, sum_f32_name) = operator_parts::<f32, _>(&Sum);
        let (sum_f64, sum_f64_name) = operator_parts::<f64, _>(&Sum);
        let (rle_prelude, rle_name) = run_length_operator();
        for (mode, key, value, prelude, name, value_bytes) in [
            (RunMode::Reduce, "i32", "f32", sum_f32, sum_f32_name, 4),
            (RunMode::Reduce, "u64", "f64", sum_f64, sum_f64_name, 8),
            (RunMode::RunLength, "u32", "u32", rle_prelude, rle_name, 0),
        ] {
            let entry = entry_name(mode, key, value, &name, true);
            modules.push(module(
                mode,
                key,
                value,
                Some(prelude),
                tile_shape(mode, if key == "u64" { 8 } else { 4 }, value_bytes),
                true,
                &entry,
            ));
        }
        for module in &modules {
            let cubin = gpu_core::kernel::compile_cubin(module, "sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
            for entry in module.entries() {
                assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
            }
        }
    }

    /// Each status read must stay ONE load of the 128-bit word: the packed
    /// pairs and counts of 4-byte values, the headed pairs of 8-byte values
    /// and the counts read beside them alike (see `tile_status.cuh` and
    /// `headed_value.cuh`), checked in the sm_90 SASS.
    #[test]
    fn status_loads_stay_single_accesses() {
        use gpu_core::{Max, Sum};
        use parprims_testkit::testing::check_status_loads;
        fn reduce<V: Element, O: Operator<V>>(op: &O, key: &str, key_bytes: usize) -> ModuleSource {
            let (prelude, name) = operator_parts::<V, O>(op);
            module(
                RunMode::Reduce,
                key,
                V::CUDA_TYPE,
                Some(prelude),
                tile_shape(RunMode::Reduce, key_bytes, V::BYTES),
                true,
                &format!("by_key_reduce_{key}_{}_{name}", V::SUFFIX),
            )
        }
        let cases = [
            reduce::<f32, _>(&Sum, "i32", 4),
            reduce::<i64, _>(&Sum, "i32", 4),
            reduce::<f64, _>(&Max, "u64", 8),
        ];
        for module in &cases {
            if check_status_loads(module, "STRONG.GPU", &[".128."]).is_none() {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            }
        }
    }
}
