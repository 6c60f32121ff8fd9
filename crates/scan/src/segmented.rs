//! Segmented scan by head flags, on the single decoupled look-back.
//!
//! - **Computes** an inclusive or exclusive scan of `n` values under any
//!   associative operator that restarts at every *head*: an item whose flag
//!   byte is non-zero (item 0 always starts a segment). Inclusive:
//!   `out[i] = x[h] ⊕ … ⊕ x[i]` for the last head `h ≤ i`; exclusive: the
//!   identity at a head, else `x[h] ⊕ … ⊕ x[i−1]`.
//! - **How**: the look-back scan over pairs (flag, value) with
//!   `(fa, va) ⊕ (fb, vb) = (fa | fb, fb ? vb : va ⊕ vb)`, which is
//!   associative whenever `⊕` is; 4-byte values and their flag pack into one
//!   64-bit word, so the pair travels through the block scan, the warp
//!   shuffles and the 8-byte tile status unchanged
//!   (`kernels/cuda/scan/segmented.cu`).
//! - **Work** O(n); **steps** O(items per thread + log block + look-back
//!   depth); **bytes moved** n·s + n read, n·s written, plus the tile state;
//!   one launch, no memset (epoch-tagged tile state).
//! - **Types**: the 4-byte ones (`i32`, `u32`, `f32`), any operator on them.
//! - **Deterministic** for integers; for floats the look-back's combine
//!   order depends on timing, as for the look-back scan.

use gpu_core::op::operator_prelude;
use gpu_core::single_pass::{with_tile_state, StatusEncoding};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, KernelArgs, ModuleSource,
    Operator, Result,
};

use crate::lookback::lookback_policy;

/// Threads per block of the segmented scan.
const BLOCK_THREADS: u32 = 256;
/// Items per thread (a tile of 4096).
const ITEMS_PER_THREAD: u32 = 16;

/// Inclusive or exclusive segmented scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SegmentedKind {
    /// `out[i]` folds its segment's items up to and including `i`.
    #[default]
    Inclusive,
    /// `out[i]` folds its segment's items before `i` (the identity at a head).
    Exclusive,
}

/// Checks the lengths of a segmented scan: `head_flags` and `output` as
/// long as `input`, and the value type 4 bytes wide. A typed error, never a
/// panic.
///
/// ```
/// use scan::validate_segmented;
/// assert!(validate_segmented::<i32>(10, 10, 10).is_ok());
/// assert!(validate_segmented::<i32>(10, 9, 10).is_err()); // flags too short
/// assert!(validate_segmented::<i64>(10, 10, 10).is_err()); // 8-byte values: not yet
/// ```
pub fn validate_segmented<T: Element>(
    input_len: usize,
    flags_len: usize,
    output_len: usize,
) -> Result<()> {
    if T::BYTES != 4 {
        return Err(Error::Unsupported(format!(
            "segmented scan of {}: the values pack with their flag into 64 bits, so they \
             must be 4 bytes (i32, u32, f32)",
            T::SUFFIX
        )));
    }
    Error::check_len("head_flags", flags_len, input_len)?;
    Error::check_len("output", output_len, input_len)
}

/// The module of the segmented scan for `T` and `op`: the single-pass
/// headers, the operator functor on `T`, the segmented kernel, one entry.
fn module<T: Element, O: Operator<T>>(op: &O, entry: &str) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let delays = lookback_policy(8);
    parprims_kernels::SINGLE_PASS
        .iter()
        .fold(ModuleSource::new(entry), |module, header| {
            module.source(header)
        })
        .source(&operator_prelude::<T, O>(op, "op_t"))
        .source(parprims_kernels::SCAN_SEGMENTED)
        .entry(
            entry,
            &format!(
                "const {t}* in, const u8* heads, {t}* out, u64* state, u32 epoch, u64 n, \
                 u64 num_tiles, u32 exclusive, u32 vector_ok"
            ),
            &format!(
                "segmented_scan_tile<{t}, op_t, {BLOCK_THREADS}, {ITEMS_PER_THREAD}, {w}, {spin}, \
                 {start}>(in, heads, out, state, epoch, n, num_tiles, exclusive, vector_ok)",
                w = delays.lookback_width(),
                spin = delays.spin_ns(),
                start = delays.start_delay_ns(),
            ),
            Some(BLOCK_THREADS),
        )
}

/// The entry name: type, operator and a fingerprint of the operator's CUDA.
fn entry_name<T: Element, O: Operator<T>>(op: &O) -> String {
    let text = format!("{}\n{}", op.cuda_support(), op.cuda_combine());
    format!(
        "scan_segmented_{}_{}_{}",
        T::SUFFIX,
        op.name(),
        &gpu_core::kernel::fingerprint(&text)[..8]
    )
}

/// The segmented scan's modules for the built-in operators on the 4-byte
/// types, for the kernel catalog.
pub(crate) fn catalog() -> Vec<ModuleSource> {
    use gpu_core::{BitAnd, BitOr, BitXor, Max, Min, Sum};
    fn one<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
        module::<T, O>(op, &entry_name::<T, O>(op))
    }
    vec![
        one::<i32, _>(&Sum),
        one::<i32, _>(&Max),
        one::<i32, _>(&Min),
        one::<u32, _>(&Sum),
        one::<u32, _>(&Max),
        one::<u32, _>(&Min),
        one::<u32, _>(&BitAnd),
        one::<u32, _>(&BitOr),
        one::<u32, _>(&BitXor),
        one::<f32, _>(&Sum),
        one::<f32, _>(&Max),
        one::<f32, _>(&Min),
    ]
}

/// Segmented scan of `input` by `head_flags` (one byte per item, non-zero
/// where a segment starts) into `output` (same length), enqueued on `gpu`'s
/// stream with no host synchronisation. `output` may be the memory of
/// `input` (in place); any other overlap, or an overlap with the flags, is
/// an error. On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let values = [1i32, 2, 3, 4, 5, 6];
/// let heads = [1u8, 0, 0, 1, 0, 1];
/// let x = DeviceBuffer::from_host(&gpu, &values)?;
/// let f = DeviceBuffer::from_host(&gpu, &heads)?;
/// let mut out = DeviceBuffer::<i32>::zeros(&gpu, values.len())?;
/// scan::segmented_scan_into(&gpu, x.view(), f.view(), out.view_mut(), &Sum, SegmentedKind::Inclusive)?;
/// assert_eq!(out.to_host(&gpu)?, scan::cpu::segmented_scan(&values, &heads, &Sum, SegmentedKind::Inclusive)); // [1, 3, 6, 4, 9, 6]
/// # Ok(()) }
/// ```
pub fn segmented_scan_into<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    head_flags: DeviceView<'_, u8>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    validate_segmented::<T>(input.len(), head_flags.len(), output.len())?;
    // In place (the same memory) is allowed; any other overlap is an error.
    let same = crate::check_aliasing(
        input.device_ptr(),
        output.device_ptr(),
        input.bytes() as u64,
    )?;
    run(gpu, (!same).then_some(input), head_flags, output, op, kind)
}

/// [`segmented_scan_into`] in place: `data` is scanned where it lies.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut data = DeviceBuffer::from_host(&gpu, &[1i32, 1, 1, 1])?;
/// let heads = DeviceBuffer::from_host(&gpu, &[0u8, 0, 1, 0])?;
/// scan::segmented_scan_in_place(&gpu, data.view_mut(), heads.view(), &Sum, SegmentedKind::Inclusive)?;
/// assert_eq!(data.to_host(&gpu)?, vec![1, 2, 1, 2]);
/// # Ok(()) }
/// ```
pub fn segmented_scan_in_place<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    data: DeviceViewMut<'_, T>,
    head_flags: DeviceView<'_, u8>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    validate_segmented::<T>(data.len(), head_flags.len(), data.len())?;
    run(gpu, None, head_flags, data, op, kind)
}

/// The launch, arguments validated; `input = None` scans `output` in place.
fn run<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    head_flags: DeviceView<'_, u8>,
    mut output: DeviceViewMut<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    if head_flags.overlaps(output.device_ptr(), output.bytes()) {
        return Err(Error::invalid("output", "overlaps head_flags"));
    }
    let out_ptr = output.device_ptr();
    let in_ptr = input.map_or(out_ptr, |view| view.device_ptr());
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let (config, num_tiles) = gpu_core::launch::grid_1d(n, BLOCK_THREADS, ITEMS_PER_THREAD, 0)?;
    let entry = entry_name::<T, O>(op);
    let key = format!("scan/segmented/{entry}");
    let kernel = gpu.stored_kernel(&key, &entry, || module::<T, O>(op, &entry))?;
    let values_aligned = in_ptr.is_multiple_of(16) && out_ptr.is_multiple_of(16);
    let flags_aligned = head_flags.device_ptr().is_multiple_of(16);
    let vector_ok = u32::from(values_aligned) | (u32::from(flags_aligned) << 1);
    let exclusive = u32::from(kind == SegmentedKind::Exclusive);
    with_tile_state(gpu, num_tiles, 8, StatusEncoding::Packed128, |mut state| {
        let mut args = KernelArgs::new();
        args.scalar(in_ptr)
            .input(&head_flags)
            .output(&mut output)
            .output(&mut state.words)
            .scalar(state.epoch)
            .scalar(n)
            .scalar(num_tiles)
            .scalar(exclusive)
            .scalar(vector_ok);
        // SAFETY: the arguments match scan_segmented_*(const T* in, const u8*
        // heads, T* out, u64* state, u32 epoch, u64 n, u64 num_tiles, u32
        // exclusive, u32 vector_ok). `in`, `heads` and `out` cover n items
        // (lengths validated; `out` may equal `in`: a block reads its whole
        // tile before writing it, tiles are disjoint; `out` does not overlap
        // `heads`, checked). One block per tile, each touching items
        // [tile·4096, min(n, (tile+1)·4096)) of its counter-assigned tile;
        // `state` holds the tile state of num_tiles 8-byte values in the
        // packed 128-bit encoding (16-byte aligned, checked by
        // with_tile_state). Vector accesses only where vector_ok says the
        // pointers are 16-byte aligned (a full tile is then aligned too).
        unsafe { gpu.launch(&kernel, config, &args) }
    })
}

/// [`segmented_scan_into`] into a new buffer.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Max};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[3u32, 1, 4, 1, 5])?;
/// let f = DeviceBuffer::from_host(&gpu, &[0u8, 0, 1, 0, 0])?;
/// let running_max = scan::segmented_scan(&gpu, x.view(), f.view(), &Max, SegmentedKind::Inclusive)?;
/// assert_eq!(running_max.to_host(&gpu)?, vec![3, 3, 4, 4, 5]);
/// # Ok(()) }
/// ```
pub fn segmented_scan<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    head_flags: DeviceView<'_, u8>,
    op: &O,
    kind: SegmentedKind,
) -> Result<DeviceBuffer<T>> {
    validate_segmented::<T>(input.len(), head_flags.len(), input.len())?;
    // SAFETY: the scan writes every element before the buffer is returned;
    // on error the buffer is dropped unread.
    let mut output = unsafe { DeviceBuffer::<T>::uninit(gpu, input.len())? };
    segmented_scan_into(gpu, input, head_flags, output.view_mut(), op, kind)?;
    Ok(output)
}

/// Global bytes a segmented scan of `n` items of `element_bytes` moves:
/// values and flags read, values written (n·s + n + n·s).
///
/// ```
/// assert_eq!(scan::segmented_bytes_moved(1000, 4), 9000);
/// ```
pub fn segmented_bytes_moved(n: usize, element_bytes: usize) -> u64 {
    (n * (2 * element_bytes + 1)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_type_and_operator() {
        let name = entry_name::<i32, _>(&gpu_core::Sum);
        assert!(name.starts_with("scan_segmented_i32_sum_"));
        assert_ne!(name, entry_name::<i32, _>(&gpu_core::Max));
    }

    #[test]
    fn catalog_modules_compile_where_nvrtc_is() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let custom =
            gpu_core::CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
                if b != 0 {
                    b
                } else {
                    a
                }
            })
            .unwrap();
        let modules = [
            catalog().remove(0),
            module::<i32, _>(&custom, &entry_name::<i32, _>(&custom)),
        ];
        for module in &modules {
            let cubin = gpu_core::kernel::compile_cubin(module, "sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
            for entry in module.entries() {
                assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
            }
        }
    }
}
