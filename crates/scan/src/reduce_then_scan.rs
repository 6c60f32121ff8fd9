//! Reduce-then-scan: the run-to-run deterministic scan.
//!
//! - **Computes** an inclusive, seeded inclusive or exclusive scan of `n` elements under any
//!   associative operator, operands in index order.
//! - **Passes** (kernels/cuda/scan_reduce_then_scan.cu), in tiles of
//!   block × items:
//!   1. each tile reduces its items in a fixed order → tile totals;
//!   2. the tile totals are scanned (inclusively, in place) by the same
//!      method, recursively, until they fit in one tile;
//!   3. each tile rescans its items seeded with the total of the tiles
//!      before it (and `initial`, on the left, for a seeded kind).
//! - **Work** O(n) (≈ 3n combines), **steps** O(items + log block) per
//!   level, ⌈log_tile n⌉ levels (3 for 2^32 four-byte elements).
//! - **Bytes moved** ≈ 3·n·size ([`reduce_then_scan_bytes_moved`]): pass 1
//!   reads the input, pass 3 reads it again and writes the output; the
//!   totals add n / tile per level. One element read more than the
//!   look-back scan: the price of determinism.
//! - **Launches** 2 per level + 1 (one launch when n fits in one tile).
//! - **Shared memory** per block as the look-back scan (padded exchange,
//!   conflict-free), no atomics, no tile state.
//! - **In place**: yes (`input = None`).
//! - **Deterministic**: yes, bitwise across runs on the same device, build
//!   and tuning: every combination (per-thread serial fold, warp shuffle
//!   tree, serial fold of warp totals, the same at every level) is fixed by
//!   n and the tile shape, never by timing. Floats still differ from the
//!   serial CPU reference by rounding (a different but fixed order).
//! - **Narrow types** (`i8 u8 i16 u16 f16 bf16`): each item is widened to a
//!   4-byte accumulator when loaded and narrowed once when stored, as in
//!   the look-back scan; the tile totals and every level above the first
//!   are accumulators (the module's `_acc` entries), and the tile shape is
//!   the 4-byte one.

use gpu_core::launch::grid_1d;
use gpu_core::{
    DeviceView, DeviceViewMut, Element, Error, Gpu, Kernel, KernelArgs, ModuleSource, Operator,
    Result,
};

use crate::kind::ScanKind;
use crate::lookback::{kind_arguments, vector_ok, LookbackPolicy, Policy, PROTOCOL_TEST_TUNING};
use crate::recursive::{accumulator_buffer, accumulator_bytes, accumulator_type, is_narrow};

/// The tile shape of reduce-then-scan for `element_bytes`-byte elements
/// (shared-memory exchange; the look-back fields do not apply): 256 × 16
/// four-byte items, 256 × 8 eight-byte items, 16 KiB of data per tile
/// (measurements in `docs/tuning.md`); the 1- and 2-byte types, which scan
/// in 4-byte accumulators, take the 4-byte shape.
///
/// ```
/// use scan::policy::reduce_then_scan_policy;
/// assert_eq!(reduce_then_scan_policy(4).tile_items(), 256 * 16);
/// assert_eq!(reduce_then_scan_policy(8).tile_items(), 256 * 8);
/// ```
pub fn reduce_then_scan_policy(element_bytes: usize) -> Policy {
    if element_bytes <= 4 {
        Policy::shape(256, 16)
    } else {
        Policy::shape(256, 8)
    }
}

/// Bytes reduce-then-scan moves for `n` elements: 3·n·size for the data,
/// and the same again for the tile totals of every level that has more
/// than one tile; a level of one tile is a single read + write. The totals
/// are accumulators (4 bytes for the 1- and 2-byte types).
pub(crate) fn reduce_then_scan_bytes_moved(n: u64, element_bytes: u64) -> u64 {
    let tile = reduce_then_scan_policy(element_bytes as usize).tile_items();
    let mut bytes = 0;
    let mut level = n;
    let mut size = element_bytes;
    while level > 0 {
        bytes += 3 * level * size;
        if level <= tile {
            // One tile: only the scan pass runs (read + write).
            bytes -= level * size;
            break;
        }
        level = level.div_ceil(tile);
        size = accumulator_bytes(element_bytes);
    }
    bytes
}

/// `(reduce, scan)` entry names of `tuning` for `T`, on the elements
/// (`acc` false) or on accumulators (the totals' levels of a 1- or 2-byte
/// type).
fn entry_names<T: Element, O: Operator<T>>(op: &O, tuning: Policy, acc: bool) -> (String, String) {
    let shape = format!(
        "{}_{}_{}x{}{}",
        T::SUFFIX,
        op.name(),
        tuning.block_threads(),
        tuning.items_per_thread(),
        if acc { "_acc" } else { "" }
    );
    (format!("rts_reduce_{shape}"), format!("rts_scan_{shape}"))
}

fn module<T: Element, O: Operator<T>>(op: &O, tuning: Policy) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let acc = accumulator_type::<T>();
    let (b, i) = (tuning.block_threads(), tuning.items_per_thread());
    let entries = |module: ModuleSource, on_acc: bool| {
        let (reduce, scan) = entry_names::<T, O>(op, tuning, on_acc);
        let v = if on_acc { acc } else { t };
        module
            .entry(
                reduce,
                &format!("const {v}* in, {acc}* tile_totals, u64 n, u64 num_tiles, u32 vector_ok"),
                &format!(
                    "rts_reduce_tiles<{v}, op_t, {b}, {i}>(in, tile_totals, n, num_tiles, vector_ok)"
                ),
                Some(b),
            )
            .entry(
                scan,
                &format!(
                    "const {v}* in, {v}* out, const {acc}* tile_inclusive, u64 n, u64 num_tiles, \
                     u32 kind, {t} initial, u32 vector_ok"
                ),
                &format!(
                    "rts_scan_tiles<{v}, op_t, {b}, {i}>(in, out, tile_inclusive, n, num_tiles, \
                     kind, initial, vector_ok)"
                ),
                Some(b),
            )
    };
    let module = ModuleSource::new(format!(
        "scan_reduce_then_scan_{}_{}_{b}x{i}",
        T::SUFFIX,
        op.name()
    ))
    .source(parprims_kernels::WARP)
    .source(parprims_kernels::BLOCK)
    .source(parprims_kernels::SCAN_REDUCE_THEN_SCAN)
    .source(&gpu_core::op::register_operator_prelude::<T, O>(op, "op_t"));
    let module = entries(module, false);
    if is_narrow::<T>() {
        entries(module, true)
    } else {
        module
    }
}

/// The modules [`reduce_then_scan`] can request for `T` and `op`: the
/// table's tuning and the protocol tests' tiny tiles.
pub(crate) fn reduce_then_scan_modules<T: Element, O: Operator<T>>(op: &O) -> Vec<ModuleSource> {
    vec![
        module::<T, O>(op, reduce_then_scan_policy(T::BYTES)),
        module::<T, O>(op, PROTOCOL_TEST_TUNING),
    ]
}

/// Reduce-then-scan takes only a tile shape: a policy with any look-back
/// field set is refused, not dropped.
pub(crate) fn check_shape_only(policy: &Policy) -> Result<()> {
    if *policy != Policy::shape(policy.block_threads(), policy.items_per_thread()) {
        return Err(Error::invalid(
            "policy",
            format!(
                "reduce-then-scan takes only a tile shape (block threads × items per thread); \
                 {} sets look-back fields",
                policy.label()
            ),
        ));
    }
    Ok(())
}

/// Deterministic reduce-then-scan of `input` into `output` (same length;
/// `input = None` scans `output` in place) with the tile shape `tuning`
/// (tiny tiles exercise several recursion levels at small n). Validates everything before
/// touching the device; `n = 0` does nothing.
pub(crate) fn reduce_then_scan_tuned<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    tuning: Policy,
) -> Result<()> {
    // Only the shape applies: these kernels always use the shared-memory
    // exchange and have no look-back.
    check_shape_only(&tuning)?;
    // The registers, the block scan and the totals hold accumulators.
    tuning.validate_lookback(accumulator_bytes(T::BYTES as u64) as usize)?;
    if let Some(input) = &input {
        Error::check_len("scan input", output.len(), input.len())?;
    }
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    // Geometry of the first level, checked before anything is allocated.
    grid_1d(n, tuning.block_threads(), tuning.items_per_thread(), 0)?;
    // The module depends on the type, the operator and the tile shape only.
    let key = format!(
        "scan/reduce_then_scan/{}x{}/{}",
        tuning.block_threads(),
        tuning.items_per_thread(),
        crate::operator_key::<T, O>(op)
    );
    let build = || module::<T, O>(op, tuning);
    let pair = |on_acc: bool| -> Result<(Kernel, Kernel)> {
        let (reduce_entry, scan_entry) = entry_names::<T, O>(op, tuning, on_acc);
        Ok((
            gpu.stored_kernel(&key, &reduce_entry, build)?,
            gpu.stored_kernel(&key, &scan_entry, build)?,
        ))
    };
    let (reduce, scan) = pair(false)?;
    // The totals' levels: the accumulator entries of a 1- or 2-byte type,
    // the same kernels otherwise.
    let (reduce_acc, scan_acc) = if is_narrow::<T>() {
        pair(true)?
    } else {
        (reduce.clone(), scan.clone())
    };
    let kernels = Kernels {
        levels: [
            LevelKernels {
                reduce,
                scan,
                value_bytes: T::BYTES,
            },
            LevelKernels {
                reduce: reduce_acc,
                scan: scan_acc,
                value_bytes: accumulator_bytes(T::BYTES as u64) as usize,
            },
        ],
        tuning,
    };
    let out_ptr = output.device_ptr();
    let in_ptr = input.map_or(out_ptr, |view| view.device_ptr());
    let (kind_code, initial) = kind_arguments(op, kind);
    // SAFETY: `in_ptr` and `out_ptr` each address n live elements (equal
    // lengths checked above, the same memory when in place), borrowed for
    // this whole call, and the launches are stream-ordered on gpu's stream.
    unsafe { scan_level::<T>(gpu, &kernels, 0, in_ptr, out_ptr, n, kind_code, initial) }?;
    Ok(())
}

/// The kernels of one kind of level and the size of the values it scans.
struct LevelKernels {
    reduce: Kernel,
    scan: Kernel,
    value_bytes: usize,
}

/// The first level's kernels (on the elements) and the totals' levels'
/// (on accumulators; the same kernels for 4- and 8-byte types).
struct Kernels {
    levels: [LevelKernels; 2],
    tuning: Policy,
}

/// One level: reduce tiles, scan their totals recursively, rescan tiles.
/// Level 0 scans the elements, every higher level the accumulator totals.
///
/// # Safety
/// `in_ptr` and `out_ptr` address `n` live values of the level's type (`T`
/// on level 0, its accumulator above) on `gpu`'s context (possibly the same
/// memory), valid until the enqueued work ends.
#[allow(clippy::too_many_arguments)]
unsafe fn scan_level<T: Element>(
    gpu: &Gpu,
    kernels: &Kernels,
    level: usize,
    in_ptr: u64,
    out_ptr: u64,
    n: u64,
    kind_code: u32,
    initial: T,
) -> Result<()> {
    let tuning = kernels.tuning;
    let this = &kernels.levels[level.min(1)];
    // One block per tile; the grid spills into y past 2^31 − 1 tiles and
    // the kernels guard surplus blocks with linear_block_index().
    let (config, num_tiles) = grid_1d(n, tuning.block_threads(), tuning.items_per_thread(), 0)?;
    let vectors = vector_ok(in_ptr, out_ptr, tuning, this.value_bytes) as u32;
    let totals = if num_tiles > 1 {
        let len = usize::try_from(num_tiles)
            .map_err(|_| Error::invalid("n", format!("{n} elements need too many tiles")))?;
        // SAFETY: every element is written by the reduce pass below before
        // the recursive scan or the scan pass reads it.
        let totals = unsafe { accumulator_buffer::<T>(gpu, len)? };
        let totals_ptr = totals.view().device_ptr();
        let mut args = KernelArgs::new();
        args.scalar(in_ptr)
            .scalar(totals_ptr)
            .scalar(n)
            .scalar(num_tiles)
            .scalar(vectors);
        // SAFETY: matches rts_reduce_tiles' entry (const V* in, A*
        // tile_totals, u64 n, u64 num_tiles, u32 vector_ok; V the level's
        // type, A the accumulator); `in` has n values (caller's contract),
        // tile_totals num_tiles accumulators; block t < num_tiles reads only
        // its tile's items and writes tile_totals[t].
        unsafe { gpu.launch(&this.reduce, config, &args) }?;
        // The totals scanned inclusively, in place, by the same method.
        // SAFETY: `totals` holds num_tiles accumulators and lives until the
        // end of this function (freed stream-ordered, after the scan pass).
        unsafe {
            scan_level::<T>(
                gpu,
                kernels,
                level + 1,
                totals_ptr,
                totals_ptr,
                num_tiles,
                0,
                initial,
            )
        }?;
        Some(totals)
    } else {
        None
    };
    let totals_ptr = totals.as_ref().map_or(0, |t| t.view().device_ptr());
    let mut args = KernelArgs::new();
    args.scalar(in_ptr)
        .scalar(out_ptr)
        .scalar(totals_ptr)
        .scalar(n)
        .scalar(num_tiles)
        .scalar(kind_code)
        .scalar(initial)
        .scalar(vectors);
    // SAFETY: matches rts_scan_tiles' entry (const V* in, V* out, const A*
    // tile_inclusive, u64 n, u64 num_tiles, u32 kind, T initial, u32
    // vector_ok; kind one of ScanKind's codes); `in`/`out` have n values, block t reads and writes only
    // its own tile (in place is fine) and reads tile_inclusive[t − 1] only
    // for t ≥ 1, i.e. only when num_tiles > 1 and the totals exist.
    unsafe { gpu.launch(&this.scan, config, &args) }?;
    drop(totals);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_moved_counts_three_passes_per_level() {
        assert_eq!(reduce_then_scan_bytes_moved(0, 4), 0);
        // One tile: a single read + write.
        assert_eq!(reduce_then_scan_bytes_moved(4096, 4), 2 * 4096 * 4);
        // 2^28 i32: 65 536 totals → 16 totals → one tile.
        let n = 1u64 << 28;
        let expected = 3 * n * 4 + 3 * 65_536 * 4 + 2 * 16 * 4;
        assert_eq!(reduce_then_scan_bytes_moved(n, 4), expected);
    }

    #[test]
    fn entries_are_named_by_type_operator_and_shape() {
        use gpu_core::Max;
        let (r, s) = entry_names::<i64, _>(&Max, reduce_then_scan_policy(8), false);
        assert_eq!(r, "rts_reduce_i64_max_256x8");
        assert_eq!(s, "rts_scan_i64_max_256x8");
        let modules = reduce_then_scan_modules::<i64, _>(&Max);
        assert_eq!(modules.len(), 2);
        assert_eq!(modules[0].entries(), [r, s]);
    }
}
