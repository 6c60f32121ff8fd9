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
//!   shuffles and the 8-byte tile status unchanged; 8-byte values travel
//!   with their flag as a 16-byte struct, shuffled in two parts and
//!   published in one 128-bit status word beside the status tag
//!   (`kernels/cuda/single_pass/headed_value.cuh`), through the same
//!   look-back (`kernels/cuda/scan/segmented.cu`).
//! - **Work** O(n); **steps** O(items per thread + log block + look-back
//!   depth); **bytes moved** n·s + n read, n·s written, plus the tile state;
//!   one launch, no memset (epoch-tagged tile state).
//! - **Types**: the 4- and 8-byte ones (`i32`, `u32`, `f32`, `i64`, `u64`,
//!   `f64`), any operator on them; the 1- and 2-byte types are refused with
//!   [`Error::Unsupported`].
//! - **Deterministic** for integers; for floats the look-back's combine
//!   order depends on timing, as for the look-back scan.

use gpu_core::op::operator_prelude;
use gpu_core::single_pass::{with_tile_state, Schedule, StatusEncoding};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, IntElement, KernelArgs,
    ModuleSource, Operator, Result,
};

use crate::lookback::lookback_policy;

/// Threads per block of the segmented scan.
const BLOCK_THREADS: u32 = 256;
/// Items per thread: 32 (a tile of 8192, each thread's heads one 32-bit
/// mask), 16 for 8-byte keys or 8-byte values (their exchange must fit the
/// 48 KiB of static shared memory).
const fn items_per_thread(heads: HeadSource, value_bytes: usize) -> u32 {
    match (heads, value_bytes) {
        (HeadSource::Keys(_, 8), _) | (_, 8) => 16,
        _ => 32,
    }
}

/// Bytes of tile state per tile's status, as `with_tile_state` takes them:
/// 8 for the 4-byte values' packed u64 pairs, 16 for the 8-byte values'
/// headed pairs (a layout of their own: see `headed_value.cuh`).
const fn state_element_bytes(value_bytes: usize) -> usize {
    if value_bytes == 8 {
        16
    } else {
        8
    }
}

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
/// long as `input`, and the value type 4 or 8 bytes wide. A typed error,
/// never a panic.
///
/// ```
/// use scan::validate_segmented;
/// assert!(validate_segmented::<i32>(10, 10, 10).is_ok());
/// assert!(validate_segmented::<f64>(10, 10, 10).is_ok());
/// assert!(validate_segmented::<i32>(10, 9, 10).is_err()); // flags too short
/// assert!(validate_segmented::<u16>(10, 10, 10).is_err()); // 2-byte values
/// ```
pub fn validate_segmented<T: Element>(
    input_len: usize,
    flags_len: usize,
    output_len: usize,
) -> Result<()> {
    if T::BYTES != 4 && T::BYTES != 8 {
        return Err(Error::Unsupported(format!(
            "segmented scan of {}: the values travel with their flag through the look-back's \
             tile status, so they must be 4 or 8 bytes (i32, u32, f32, i64, u64, f64)",
            T::SUFFIX
        )));
    }
    Error::check_len("head_flags", flags_len, input_len)?;
    Error::check_len("output", output_len, input_len)
}

/// Where a segmented scan's segments come from, as the kernel's `MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HeadSource {
    /// A flag byte per item (`SEGMENT_HEADS_FLAGS`).
    Flags,
    /// Sorted segment offsets (`SEGMENT_HEADS_OFFSETS`).
    Offsets,
    /// Runs of equal keys of the CUDA type named, of the bytes given
    /// (`SEGMENT_HEADS_KEYS`).
    Keys(&'static str, usize),
}

impl HeadSource {
    fn mode(self) -> u32 {
        match self {
            HeadSource::Flags => 0,
            HeadSource::Offsets => 1,
            HeadSource::Keys(..) => 2,
        }
    }

    /// The kernel's key type (`u8` where there are no keys).
    fn key_type(self) -> &'static str {
        match self {
            HeadSource::Keys(key, _) => key,
            _ => "u8",
        }
    }

    /// The entry name's part for the source.
    fn tag(self) -> String {
        match self {
            HeadSource::Flags => "flags".into(),
            HeadSource::Offsets => "offsets".into(),
            HeadSource::Keys(key, _) => format!("by_{key}"),
        }
    }
}

/// The module of a segmented scan of `T` by `heads` under `op`: the
/// single-pass headers (and the headed pair's), the operator functor on
/// `T`, the segmented kernel,
/// one scan entry (and, for offsets, the `segmented_tile_first` kernel of
/// the same source).
fn module<T: Element, O: Operator<T>>(op: &O, heads: HeadSource, entry: &str) -> ModuleSource {
    let t = T::CUDA_TYPE;
    // The look-back's window, delays and tile order: the scan's 8-byte
    // table entry (a pair is 8 or 16 bytes).
    let delays = lookback_policy(8);
    let module = parprims_kernels::SINGLE_PASS
        .iter()
        .fold(ModuleSource::new(entry), |module, header| {
            module.source(header)
        })
        .source(parprims_kernels::SINGLE_PASS_HEADED_VALUE)
        .source(&operator_prelude::<T, O>(op, "op_t"))
        .source(parprims_kernels::SCAN_SEGMENTED);
    let params = format!(
        "const {t}* in, const void* heads, const u64* aux, {t}* out, u64* state, \
         u32 epoch, u64 n, u64 num_tiles, u32 exclusive, u32 vector_ok, const u32* bad"
    );
    let body = format!(
        "segmented_scan_tile<{t}, op_t, {mode}, {k}, {BLOCK_THREADS}, {items}, \
         {w}, {spin}, {start}, {order}>(in, heads, aux, out, state, epoch, n, num_tiles, \
         exclusive, vector_ok, bad)",
        mode = heads.mode(),
        k = heads.key_type(),
        items = items_per_thread(heads, T::BYTES),
        w = delays.lookback_width(),
        spin = delays.spin_ns(),
        start = delays.start_delay_ns(),
        order = delays.schedule() == Schedule::InBlockOrder,
    );
    match min_blocks_per_sm(T::BYTES) {
        Some(blocks) => module.entry_with_min_blocks(entry, &params, &body, BLOCK_THREADS, blocks),
        None => module.entry(entry, &params, &body, Some(BLOCK_THREADS)),
    }
}

/// Resident blocks per SM the kernel is compiled for (`__launch_bounds__`'s
/// second argument), by value width: 4 for 4-byte values (64 registers;
/// left to the compiler it took 92 and fitted two blocks), none for 8-byte
/// values. Measured on the H100, 2^28 `i32`, segments of ~1000: by head
/// flags 0.795 → 0.923 of the copy ceiling, by offsets 0.67 → 0.81, by
/// `u32` keys 0.86 → 0.97; the same bound made 2^28 `f64` by flags slower
/// (0.918 → 0.866 at three blocks), so 8-byte values keep the compiler's
/// choice. Every 4-byte module compiles for sm_90 at 64 registers with no
/// local memory.
const fn min_blocks_per_sm(value_bytes: usize) -> Option<u32> {
    if value_bytes == 8 {
        None
    } else {
        Some(4)
    }
}

/// The entry name: type, head source, operator and a fingerprint of the
/// operator's CUDA.
fn entry_name<T: Element, O: Operator<T>>(op: &O, heads: HeadSource) -> String {
    let text = format!("{}\n{}", op.cuda_support(), op.cuda_combine());
    format!(
        "scan_segmented_{}_{}_{}_{}",
        T::SUFFIX,
        heads.tag(),
        op.name(),
        &gpu_core::kernel::fingerprint(&text)[..8]
    )
}

/// The segmented scan's modules for the built-in operators on the 4- and
/// 8-byte types by flags, and the sums by offsets and by `i32`/`u64` keys of
/// both widths, for the kernel catalog.
pub(crate) fn catalog() -> Vec<ModuleSource> {
    use gpu_core::{BitAnd, BitOr, BitXor, Max, Min, Sum};
    fn one<T: Element, O: Operator<T>>(op: &O, heads: HeadSource) -> ModuleSource {
        module::<T, O>(op, heads, &entry_name::<T, O>(op, heads))
    }
    let flags = HeadSource::Flags;
    vec![
        one::<i32, _>(&Sum, flags),
        one::<i32, _>(&Max, flags),
        one::<i32, _>(&Min, flags),
        one::<u32, _>(&Sum, flags),
        one::<u32, _>(&Max, flags),
        one::<u32, _>(&Min, flags),
        one::<u32, _>(&BitAnd, flags),
        one::<u32, _>(&BitOr, flags),
        one::<u32, _>(&BitXor, flags),
        one::<f32, _>(&Sum, flags),
        one::<f32, _>(&Max, flags),
        one::<f32, _>(&Min, flags),
        one::<i64, _>(&Sum, flags),
        one::<i64, _>(&Max, flags),
        one::<i64, _>(&Min, flags),
        one::<u64, _>(&Sum, flags),
        one::<u64, _>(&Max, flags),
        one::<u64, _>(&Min, flags),
        one::<u64, _>(&BitAnd, flags),
        one::<u64, _>(&BitOr, flags),
        one::<u64, _>(&BitXor, flags),
        one::<f64, _>(&Sum, flags),
        one::<f64, _>(&Max, flags),
        one::<f64, _>(&Min, flags),
        one::<i32, _>(&Sum, HeadSource::Offsets),
        one::<f32, _>(&Sum, HeadSource::Offsets),
        one::<i64, _>(&Sum, HeadSource::Offsets),
        one::<f64, _>(&Sum, HeadSource::Offsets),
        one::<i32, _>(&Sum, HeadSource::Keys("i32", 4)),
        one::<f32, _>(&Sum, HeadSource::Keys("u64", 8)),
        one::<i64, _>(&Sum, HeadSource::Keys("i32", 4)),
        one::<f64, _>(&Sum, HeadSource::Keys("u64", 8)),
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
    let heads = Heads::flags(&head_flags);
    heads.refuse_overlap(&output)?;
    run(gpu, (!same).then_some(input), heads, output, op, kind)
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
    let heads = Heads::flags(&head_flags);
    heads.refuse_overlap(&data)?;
    run(gpu, None, heads, data, op, kind)
}

/// Checks the lengths of a segmented scan by offsets: 4- or 8-byte values,
/// `output` as long as `input`, and at least one offset (`segments + 1`
/// of them: `offsets[0] = 0`, `offsets[segments] = n`, non-decreasing;
/// that the values obey this is checked on the device).
///
/// ```
/// assert!(scan::validate_segmented_offsets::<f32>(10, 4, 10).is_ok());
/// assert!(scan::validate_segmented_offsets::<f32>(10, 0, 10).is_err()); // no offsets
/// assert!(scan::validate_segmented_offsets::<f32>(10, 4, 9).is_err()); // output too short
/// ```
pub fn validate_segmented_offsets<T: Element>(
    input_len: usize,
    offsets_len: usize,
    output_len: usize,
) -> Result<()> {
    validate_segmented::<T>(input_len, input_len, output_len)?;
    if offsets_len == 0 {
        return Err(Error::invalid(
            "offsets",
            "empty: segments + 1 offsets are needed, from 0 to n",
        ));
    }
    Ok(())
}

/// Segmented scan of `input` with the segments given by `offsets` (CSR
/// style: segment `s` is `input[offsets[s]..offsets[s + 1]]`, so
/// `segments + 1` offsets from 0 to n, non-decreasing; empty segments are
/// allowed) into `output`.
///
/// **Synchronises** once: the offsets are checked on the device by the
/// kernel that locates each tile's segment starts, and the check's verdict
/// is read back, so that offsets which do not start at 0, end at n, or
/// decrease are an [`Error::InvalidArgument`] with nothing written (the
/// scan kernel sees the verdict and writes nothing). Bytes: the scan's
/// n·s read and written, 8 per offset read twice, 8 per tile. Its
/// temporaries (the tile starts, the verdict, the tile state) come from
/// `gpu`'s scratch arena: after the first call at a size a call allocates
/// nothing (three launches: the verdict word's fill, the tile starts, the
/// scan).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4, 5, 6])?;
/// let offsets = DeviceBuffer::from_host(&gpu, &[0u64, 3, 3, 5, 6])?; // [1 2 3] [] [4 5] [6]
/// let mut out = DeviceBuffer::<i32>::zeros(&gpu, 6)?;
/// scan::segmented_scan_by_offsets_into(&gpu, x.view(), offsets.view(), out.view_mut(), &Sum, SegmentedKind::Inclusive)?;
/// assert_eq!(out.to_host(&gpu)?, vec![1, 3, 6, 4, 9, 6]);
/// # Ok(()) }
/// ```
pub fn segmented_scan_by_offsets_into<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    offsets: DeviceView<'_, u64>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    validate_segmented_offsets::<T>(input.len(), offsets.len(), output.len())?;
    let same = crate::check_aliasing(
        input.device_ptr(),
        output.device_ptr(),
        input.bytes() as u64,
    )?;
    if offsets.overlaps(output.device_ptr(), output.bytes()) {
        return Err(Error::invalid("output", "overlaps offsets"));
    }
    let n = input.len() as u64;
    if n == 0 {
        // Only `[0]` describes an empty input; nothing to scan either way.
        let mut first = [0u64];
        gpu.read_small(&offsets.slice(..1)?, &mut first)?;
        return check_empty_offsets(offsets.len(), first[0]);
    }
    let tile_items = segmented_offsets_tile_items(T::BYTES);
    let num_tiles = n.div_ceil(tile_items);
    // The check words, `first` (one per tile and one past) then the
    // verdict, come from the arena's scratch words; the scan's tile state
    // from the nested arena those lend with them (one loan each, no
    // fallback allocation).
    let first_words = num_tiles as usize + 1;
    // The kernels first: a first use compiles, and the arena stays free
    // meanwhile (the launches below find them stored).
    tile_first_kernel(gpu)?;
    scan_kernel::<T, O>(gpu, op, HeadSource::Offsets)?;
    gpu.kernel(
        &gpu_core::fill_module::<u64>(),
        &gpu_core::fill_entry::<u64>(),
    )?;
    // SAFETY: every word the enqueued work reads is written first on this
    // stream: `segmented_tile_first` writes first[0..=num_tiles] before the
    // scan kernel reads them, and the verdict word is zeroed (fill) before
    // segmented_tile_first may set it; the host reads it after both.
    let verdict = unsafe {
        gpu.with_scratch_words(first_words + 1, |mut check, nested| {
            let first_ptr = check.device_ptr();
            let bad_ptr = first_ptr + 8 * first_words as u64;
            check
                .reborrow()
                .into_slice(first_words..)?
                .fill(nested, 0)?;
            locate_tile_starts(nested, &offsets, n, tile_items, num_tiles, &mut check)?;
            let heads = Heads {
                source: HeadSource::Offsets,
                ptr: offsets.device_ptr(),
                aligned: true,
                aux: first_ptr,
                bad: bad_ptr,
            };
            run(nested, (!same).then_some(input), heads, output, op, kind)?;
            let mut verdict = [0u64];
            nested.read_small(&check.as_view().slice(first_words..)?, &mut verdict)?;
            Ok(verdict[0])
        })?
    };
    if verdict != 0 {
        return Err(Error::invalid(
            "offsets",
            "not segment offsets of the input: they must start at 0, end at n and never decrease \
             (nothing was written)",
        ));
    }
    Ok(())
}

/// The only valid offsets of an empty input: `[0]`.
fn check_empty_offsets(len: usize, first: u64) -> Result<()> {
    if len == 1 && first == 0 {
        Ok(())
    } else {
        Err(Error::invalid(
            "offsets",
            "an empty input has exactly one offset, 0",
        ))
    }
}

/// Items per tile of the segmented scan by offsets of `value_bytes` values
/// (each tile searches the offsets for its first segment once, so the
/// bytes the scan moves depend on it).
///
/// ```
/// assert_eq!(scan::segmented_offsets_tile_items(4), 8192);
/// assert_eq!(scan::segmented_offsets_tile_items(8), 4096);
/// ```
pub const fn segmented_offsets_tile_items(value_bytes: usize) -> u64 {
    BLOCK_THREADS as u64 * items_per_thread(HeadSource::Offsets, value_bytes) as u64
}

/// The `segmented_tile_first` kernel. It sits in every segmented module;
/// the i32 sum's serves all.
fn tile_first_kernel(gpu: &Gpu) -> Result<gpu_core::Kernel> {
    let scan_entry = entry_name::<i32, _>(&gpu_core::Sum, HeadSource::Offsets);
    let key = format!("scan/segmented/{scan_entry}");
    gpu.stored_kernel(&key, "segmented_tile_first", || {
        module::<i32, _>(&gpu_core::Sum, HeadSource::Offsets, &scan_entry)
    })
}

/// The scan kernel of `T` by `source` under `op` (compiled on first use,
/// then stored).
fn scan_kernel<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    op: &O,
    source: HeadSource,
) -> Result<gpu_core::Kernel> {
    let entry = entry_name::<T, O>(op, source);
    let key = format!("scan/segmented/{entry}");
    gpu.stored_kernel(&key, &entry, || module::<T, O>(op, source, &entry))
}

/// Launches `segmented_tile_first`: `check[t]` = the first offset ≥
/// t·tile_items for t in 0..=num_tiles, and `check[num_tiles + 1]` set (its
/// low word) when the offsets are not valid for n items.
fn locate_tile_starts(
    gpu: &Gpu,
    offsets: &DeviceView<'_, u64>,
    n: u64,
    tile_items: u64,
    num_tiles: u64,
    check: &mut DeviceViewMut<'_, u64>,
) -> Result<()> {
    const THREADS: u32 = 256;
    let work = (num_tiles + 1).max(offsets.len() as u64);
    let blocks = work.div_ceil(THREADS as u64).clamp(1, 4096) as u32;
    let config = gpu_core::LaunchConfig {
        grid: (blocks, 1, 1),
        block: (THREADS, 1, 1),
        shared_bytes: 0,
    };
    // The kernel sits in every segmented module; the i32 sum's serves all.
    let kernel = tile_first_kernel(gpu)?;
    let bad_ptr = check.device_ptr() + 8 * (num_tiles + 1);
    let mut args = KernelArgs::new();
    args.input(offsets)
        .scalar(offsets.len() as u64)
        .scalar(n)
        .scalar(tile_items)
        .scalar(num_tiles)
        .output(check)
        .scalar(bad_ptr);
    // SAFETY: segmented_tile_first(const u64* offsets, u64 num_offsets, u64
    // n, u64 tile_items, u64 num_tiles, u64* first, u32* bad): `offsets`
    // holds num_offsets words; `first` (the check buffer) holds num_tiles + 2
    // words, of which the kernel writes entries 0..=num_tiles and, through
    // `bad` (its last word, 8-byte aligned), one u32. A grid-stride loop
    // bounds every index.
    unsafe { gpu.launch(&kernel, config, &args) }
}

/// Checks the lengths of a scan by key: keys and output as long as the
/// input, 4- or 8-byte values.
///
/// ```
/// assert!(scan::validate_by_key::<i32>(8, 8, 8).is_ok());
/// assert!(scan::validate_by_key::<i32>(8, 7, 8).is_err()); // keys too short
/// ```
pub fn validate_by_key<T: Element>(
    input_len: usize,
    keys_len: usize,
    output_len: usize,
) -> Result<()> {
    validate_segmented::<T>(input_len, input_len, output_len)?;
    Error::check_len("keys", keys_len, input_len)
}

/// Scan by key: a segmented scan of `input` whose segments are the runs of
/// equal consecutive `keys` (compared by their bits), as CUB's ScanByKey;
/// enqueued with no host synchronisation. Keys are any integer type; the
/// bytes moved are the scan's plus n·k of keys. `output` may be `input`'s
/// memory; any other overlap is an error, nothing written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[7u32, 7, 2, 2, 2, 7])?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, 1, 1, 1, 1, 1])?;
/// let mut out = DeviceBuffer::<i32>::zeros(&gpu, 6)?;
/// scan::scan_by_key_into(&gpu, keys.view(), x.view(), out.view_mut(), &Sum, SegmentedKind::Inclusive)?;
/// assert_eq!(out.to_host(&gpu)?, vec![1, 2, 1, 2, 3, 1]);
/// # Ok(()) }
/// ```
pub fn scan_by_key_into<K: IntElement, T: Element, O: Operator<T>>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    input: DeviceView<'_, T>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    validate_by_key::<T>(input.len(), keys.len(), output.len())?;
    let same = crate::check_aliasing(
        input.device_ptr(),
        output.device_ptr(),
        input.bytes() as u64,
    )?;
    if keys.overlaps(output.device_ptr(), output.bytes()) {
        return Err(Error::invalid("output", "overlaps keys"));
    }
    let heads = Heads {
        source: HeadSource::Keys(K::CUDA_TYPE, K::BYTES),
        ptr: keys.device_ptr(),
        aligned: keys.device_ptr().is_multiple_of(16),
        aux: 0,
        bad: 0,
    };
    run(gpu, (!same).then_some(input), heads, output, op, kind)
}

/// [`scan_by_key_into`] into a new buffer.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Max};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let keys = DeviceBuffer::from_host(&gpu, &[1u8, 1, 1, 2, 2])?;
/// let x = DeviceBuffer::from_host(&gpu, &[3.0f32, 1.0, 4.0, 1.0, 5.0])?;
/// let out = scan::scan_by_key(&gpu, keys.view(), x.view(), &Max, SegmentedKind::Inclusive)?;
/// assert_eq!(out.to_host(&gpu)?, vec![3.0, 3.0, 4.0, 1.0, 5.0]);
/// # Ok(()) }
/// ```
pub fn scan_by_key<K: IntElement, T: Element, O: Operator<T>>(
    gpu: &Gpu,
    keys: DeviceView<'_, K>,
    input: DeviceView<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<DeviceBuffer<T>> {
    validate_by_key::<T>(input.len(), keys.len(), input.len())?;
    // SAFETY: the scan writes every element before the buffer is returned;
    // on error the buffer is dropped unread.
    let mut output = unsafe { DeviceBuffer::<T>::uninit(gpu, input.len())? };
    scan_by_key_into(gpu, keys, input, output.view_mut(), op, kind)?;
    Ok(output)
}

/// [`segmented_scan_by_offsets_into`] into a new buffer (synchronises, as
/// it does).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::SegmentedKind;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1u32, 1, 1, 1])?;
/// let offsets = DeviceBuffer::from_host(&gpu, &[0u64, 1, 4])?;
/// let out = scan::segmented_scan_by_offsets(&gpu, x.view(), offsets.view(), &Sum, SegmentedKind::Exclusive)?;
/// assert_eq!(out.to_host(&gpu)?, vec![0, 0, 1, 2]);
/// # Ok(()) }
/// ```
pub fn segmented_scan_by_offsets<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    offsets: DeviceView<'_, u64>,
    op: &O,
    kind: SegmentedKind,
) -> Result<DeviceBuffer<T>> {
    validate_segmented_offsets::<T>(input.len(), offsets.len(), input.len())?;
    // SAFETY: the scan writes every element before the buffer is returned;
    // on error (bad offsets: nothing written) the buffer is dropped unread.
    let mut output = unsafe { DeviceBuffer::<T>::uninit(gpu, input.len())? };
    segmented_scan_by_offsets_into(gpu, input, offsets, output.view_mut(), op, kind)?;
    Ok(output)
}

/// A validated head source's device side.
struct Heads {
    source: HeadSource,
    /// The flags, offsets or keys.
    ptr: u64,
    /// Whether `ptr` allows 16-byte loads.
    aligned: bool,
    /// `first` for offsets, else 0.
    aux: u64,
    /// The offsets' verdict word, else 0 (null).
    bad: u64,
}

impl Heads {
    fn flags(flags: &DeviceView<'_, u8>) -> Heads {
        Heads {
            source: HeadSource::Flags,
            ptr: flags.device_ptr(),
            aligned: flags.device_ptr().is_multiple_of(16),
            aux: 0,
            bad: 0,
        }
    }

    /// Flags must not overlap the output (the scan would read what it wrote).
    fn refuse_overlap<T: Element>(&self, output: &DeviceViewMut<'_, T>) -> Result<()> {
        let (out, bytes) = (output.device_ptr(), output.bytes() as u64);
        let flags_bytes = bytes / T::BYTES as u64;
        if out < self.ptr + flags_bytes && self.ptr < out + bytes && bytes > 0 {
            return Err(Error::invalid("output", "overlaps head_flags"));
        }
        Ok(())
    }
}

/// The launch, arguments validated; `input = None` scans `output` in place.
fn run<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    heads: Heads,
    mut output: DeviceViewMut<'_, T>,
    op: &O,
    kind: SegmentedKind,
) -> Result<()> {
    let out_ptr = output.device_ptr();
    let in_ptr = input.map_or(out_ptr, |view| view.device_ptr());
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let (config, num_tiles) = gpu_core::launch::grid_1d(
        n,
        BLOCK_THREADS,
        items_per_thread(heads.source, T::BYTES),
        0,
    )?;
    let kernel = scan_kernel::<T, O>(gpu, op, heads.source)?;
    let values_aligned = in_ptr.is_multiple_of(16) && out_ptr.is_multiple_of(16);
    let vector_ok = u32::from(values_aligned) | (u32::from(heads.aligned) << 1);
    let exclusive = u32::from(kind == SegmentedKind::Exclusive);
    let state_bytes = state_element_bytes(T::BYTES);
    with_tile_state(
        gpu,
        num_tiles,
        state_bytes,
        StatusEncoding::Packed128,
        |mut state| {
            let mut args = KernelArgs::new();
            args.scalar(in_ptr)
                .scalar(heads.ptr)
                .scalar(heads.aux)
                .output(&mut output)
                .output(&mut state.words)
                .scalar(state.epoch)
                .scalar(n)
                .scalar(num_tiles)
                .scalar(exclusive)
                .scalar(vector_ok)
                .scalar(heads.bad);
            // SAFETY: the arguments match scan_segmented_*(const T* in, const
            // void* heads, const u64* aux, T* out, u64* state, u32 epoch, u64 n,
            // u64 num_tiles, u32 exclusive, u32 vector_ok, const u32* bad). `in`,
            // `out` and the heads cover n items (n flag bytes or n keys, lengths
            // validated; for offsets, `aux` holds num_tiles + 1 tile starts into
            // them, written by segmented_tile_first earlier on this stream, and
            // `bad` its verdict, or null); `out` may equal `in` (a block reads its
            // whole tile before writing it, tiles are disjoint) and overlaps
            // nothing else (checked). One block per tile, each touching items
            // [tile·T, min(n, (tile+1)·T)) of its counter-assigned tile (T = 256
            // threads × items_per_thread(source, T::BYTES), the kernel's ITEMS),
            // and the key before it; `state` holds the tile state of num_tiles
            // 128-bit status words (2 words per tile for either element width
            // given, 16-byte aligned, checked by with_tile_state). Vector accesses only where vector_ok says the
            // pointers are 16-byte aligned (a full tile is then aligned too).
            unsafe { gpu.launch(&kernel, config, &args) }
        },
    )
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
        let name = entry_name::<i32, _>(&gpu_core::Sum, HeadSource::Flags);
        assert!(name.starts_with("scan_segmented_i32_flags_sum_"));
        assert_ne!(
            name,
            entry_name::<i32, _>(&gpu_core::Max, HeadSource::Flags)
        );
        assert_ne!(
            name,
            entry_name::<i32, _>(&gpu_core::Sum, HeadSource::Offsets)
        );
        assert_ne!(
            entry_name::<i32, _>(&gpu_core::Sum, HeadSource::Keys("u32", 4)),
            entry_name::<i32, _>(&gpu_core::Sum, HeadSource::Keys("u64", 8))
        );
    }

    #[test]
    fn shared_memory_fits_every_shape() {
        // The kernel's static shared memory: the values' (or keys') padded
        // exchange, the block scan's warp totals, the tile slot and the
        // tile prefix (pairs: 8 bytes packed, 16 as a headed value).
        let sources = [
            HeadSource::Flags,
            HeadSource::Offsets,
            HeadSource::Keys("u8", 1),
            HeadSource::Keys("u32", 4),
            HeadSource::Keys("u64", 8),
        ];
        for source in sources {
            for value_bytes in [4usize, 8] {
                let items = items_per_thread(source, value_bytes) as usize;
                let tile = BLOCK_THREADS as usize * items;
                let padded = |s: usize| (tile + tile / (128 / s)) * s;
                let key_bytes = match source {
                    HeadSource::Keys(_, k) => padded(k),
                    _ => 0,
                };
                let pair = state_element_bytes(value_bytes);
                let bytes = padded(value_bytes).max(key_bytes)
                    + pair * (BLOCK_THREADS as usize / 32)
                    + 8
                    + pair;
                assert!(
                    bytes <= 48 * 1024,
                    "{source:?}, {value_bytes}-byte values: {bytes}"
                );
                assert!(items <= 32, "a thread's heads fit a 32-bit mask");
            }
        }
    }

    #[test]
    fn wide_values_take_their_own_state_layout() {
        assert_eq!(state_element_bytes(4), 8);
        assert_eq!(state_element_bytes(8), 16);
        assert_eq!(segmented_offsets_tile_items(4), 8192);
        assert_eq!(segmented_offsets_tile_items(8), 4096);
    }

    /// A module of every head source and value width, the built-in
    /// operators on both widths and a non-commutative custom operator on
    /// each, compiled for sm_90 with its entries checked (the workspace's
    /// kernel_compile test covers the whole catalog).
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
        let custom64 =
            gpu_core::CustomOp::<u64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
                if b != 0 {
                    b
                } else {
                    a
                }
            })
            .unwrap();
        fn named<T: Element, O: Operator<T>>(op: &O, heads: HeadSource) -> ModuleSource {
            module::<T, O>(op, heads, &entry_name::<T, O>(op, heads))
        }
        let modules = [
            named::<i32, _>(&gpu_core::Sum, HeadSource::Flags),
            named::<i32, _>(&gpu_core::Sum, HeadSource::Offsets),
            named::<f32, _>(&gpu_core::Sum, HeadSource::Keys("u64", 8)),
            named::<i32, _>(&custom, HeadSource::Keys("i8", 1)),
            named::<i64, _>(&gpu_core::Sum, HeadSource::Flags),
            named::<f64, _>(&gpu_core::Max, HeadSource::Offsets),
            named::<u64, _>(&gpu_core::BitXor, HeadSource::Keys("u32", 4)),
            named::<f64, _>(&gpu_core::Min, HeadSource::Keys("u64", 8)),
            named::<u64, _>(&custom64, HeadSource::Keys("u8", 1)),
        ];
        for module in &modules {
            let cubin = gpu_core::kernel::compile_cubin(module, "sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
            for entry in module.entries() {
                assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
            }
            assert!(gpu_core::kernel::cubin_defines(
                &cubin,
                "segmented_tile_first"
            ));
        }
    }

    /// Each status read must stay ONE load of the 128-bit word (status and
    /// pair from the same store): for the packed u64 pairs of 4-byte values
    /// and the headed pairs of 8-byte values alike (see
    /// `tile_status.cuh`), checked in the sm_90 SASS.
    #[test]
    fn status_loads_stay_single_accesses() {
        use gpu_core::{Max, Sum};
        use parprims_testkit::testing::check_status_loads;
        let cases = [
            module::<i32, _>(&Sum, HeadSource::Flags, "seg_i32"),
            module::<f32, _>(&Max, HeadSource::Offsets, "seg_f32"),
            module::<i64, _>(&Sum, HeadSource::Flags, "seg_i64"),
            module::<u64, _>(&Max, HeadSource::Keys("u32", 4), "seg_u64"),
            module::<f64, _>(&Sum, HeadSource::Offsets, "seg_f64"),
        ];
        for module in &cases {
            if check_status_loads(module, "STRONG.GPU", &[".128."]).is_none() {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            }
        }
    }
}
