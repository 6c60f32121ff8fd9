//! Segmented reduce by offsets: `out[s]` = the fold, in index order, of
//! `values[offsets[s] .. offsets[s + 1]]` under any [`Operator`]; an empty
//! segment gives the operator's identity.
//!
//! - **Balance.** The merge path over segments and values
//!   (`kernels/cuda/block/merge_path.cuh`, the one CSR SpMV uses): every
//!   block and thread gets the same number of segments + values, so one
//!   segment of n values and n segments of one value both run at the rate
//!   of their bytes.
//! - **Launches.** Three, or four past [`FIXUP_CHUNK`] tiles
//!   (`kernels/cuda/reduce/segmented.cu`): a partition (one thread per tile
//!   boundary searches its diagonal), the tiles (values staged coalesced in
//!   shared memory, each thread searches where its steps begin and folds
//!   them, a keyed block scan joins segments that cross threads, every
//!   segment ending in the tile is stored), and the fix-up that folds the
//!   carries of blocks that ended inside a segment in front of its stored
//!   value (`out[s] = carries ⊕ out[s]`, order kept). The fix-up is a grid
//!   of chunks of [`FIXUP_CHUNK`] carries, each applying the segments whose
//!   carries lie inside it and leaving its first and last run as two
//!   summary carries, then one block folding the summaries; carries that
//!   fit one chunk go to that block directly. The coordinates, carries and
//!   summaries are words of the scratch arena ([`Gpu::with_scratch_words`],
//!   [`scratch_words`] of them), written before they are read: after the
//!   first call at a size, a call allocates nothing and sets nothing.
//! - **Work** n + segments steps; **bytes moved**
//!   [`segmented_reduce_bytes_moved`]: the values once, the offsets once,
//!   out once (plus 8 + the value's bytes per tile of carries, 8 of
//!   coordinates, and twice 8 + the value's bytes per chunk of summaries:
//!   well under 1 % of the values' bytes at 19 steps per thread).
//! - **Types**: the 4- and 8-byte ones (`i32 u32 f32 i64 u64 f64`), any
//!   operator (built-in or [`CustomOp`](gpu_core::CustomOp)) that is
//!   associative; it need not be commutative. Offsets `u32` or `u64`.
//! - **Deterministic**: the fold order depends only on the offsets.
//! - **Offsets are the caller's contract**: `segments + 1` of them,
//!   non-decreasing, at most n. The host checks the lengths; the values
//!   of the offsets stay on the device and are not checked (that would
//!   cost a synchronisation). Offsets that break the contract give
//!   meaningless results, never an access outside the buffers: the
//!   kernels clamp every item index to `[offsets[0], min(offsets[segments],
//!   n))`. `offsets[0]` need not be 0: the values before it are skipped.

use gpu_core::launch::grid_1d;
use gpu_core::merge_path::{self, MergePathScratch};
use gpu_core::op::operator_prelude;
use gpu_core::{
    DeviceType, DeviceView, DeviceViewMut, Element, Error, Gpu, Kernel, KernelArgs, Max, Min,
    ModuleSource, Operator, Product, Result, Sum,
};

/// Threads per block of the merge-path tiles.
const BLOCK_THREADS: u32 = 256;
/// Threads per block of the partition.
const PARTITION_THREADS: u32 = 256;
/// Threads per block of the fix-up's chunks, and of its one-block fold.
const CHUNK_THREADS: u32 = merge_path::FIXUP_CHUNK_THREADS;
/// Carries per thread of a fix-up chunk, and per thread per round of the
/// one-block fold.
const CHUNK_ITEMS: u32 = merge_path::FIXUP_CHUNK_ITEMS;
/// Carries per chunk of the fix-up (`gpu_core::merge_path::FIXUP_CHUNK`):
/// past this many tiles, a grid of chunks applies the runs inside each
/// chunk before one block folds the rest.
pub const FIXUP_CHUNK: u64 = merge_path::FIXUP_CHUNK;

/// Summary carries of a call of `tiles` tiles: two per fix-up chunk when
/// there is more than one chunk, none otherwise.
///
/// ```
/// use reduce::segmented::{summary_carries, FIXUP_CHUNK};
/// assert_eq!(summary_carries(FIXUP_CHUNK), 0);
/// assert_eq!(summary_carries(FIXUP_CHUNK + 1), 4);
/// ```
pub const fn summary_carries(tiles: u64) -> u64 {
    merge_path::summary_carries(tiles)
}

/// Merge steps per thread: odd (the threads' strided reads of staged values
/// then hit distinct shared-memory banks); 19 for 4-byte values, 11 for
/// 8-byte ones. Both keep the tiles kernel within 32 registers on sm_90 (8
/// blocks of 256 threads per SM; 23 for 4-byte values takes 40), with 19 KiB
/// and 22 KiB of static shared memory per block (the values and the segment
/// ends share one slot each).
const fn items_per_thread(value_bytes: usize) -> u32 {
    if value_bytes == 4 {
        19
    } else {
        11
    }
}

/// Merge steps per tile for values of `value_bytes`.
///
/// ```
/// assert_eq!(reduce::segmented::tile_steps(4), 256 * 19);
/// assert_eq!(reduce::segmented::tile_steps(8), 256 * 11);
/// ```
pub const fn tile_steps(value_bytes: usize) -> u64 {
    BLOCK_THREADS as u64 * items_per_thread(value_bytes) as u64
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The offset types segmented reduce takes: `u32` and `u64`.
pub trait SegmentOffset: DeviceType + Copy + Into<u64> + sealed::Sealed {}
impl SegmentOffset for u32 {}
impl SegmentOffset for u64 {}

/// Checks a segmented reduce's lengths and types on the host: `offsets`
/// has `out_len + 1` entries, and values are 4 or 8 bytes wide.
///
/// ```
/// use reduce::segmented::validate_segmented_reduce;
/// assert!(validate_segmented_reduce::<f32>(4, 3).is_ok());
/// assert!(validate_segmented_reduce::<f32>(4, 4).is_err()); // 4 offsets: 3 segments
/// assert!(validate_segmented_reduce::<u8>(2, 1).is_err()); // 1-byte values
/// ```
pub fn validate_segmented_reduce<T: Element>(offsets_len: usize, out_len: usize) -> Result<()> {
    if T::BYTES != 4 && T::BYTES != 8 {
        return Err(Error::Unsupported(format!(
            "segmented reduce of {}: 4- and 8-byte values only",
            T::SUFFIX
        )));
    }
    Error::check_len(
        "offsets (segments + 1)",
        out_len.saturating_add(1),
        offsets_len,
    )
}

/// Bytes a segmented reduce moves: the n values and the `segments` results
/// at `value_bytes`, and `segments + 1` offsets at `offset_bytes`. For
/// `f32` with `u32` offsets: 4n + 8·segments + 4.
///
/// ```
/// assert_eq!(reduce::segmented::segmented_reduce_bytes_moved(1000, 10, 4, 4), 4 * 1000 + 8 * 10 + 4);
/// ```
pub fn segmented_reduce_bytes_moved(
    n: usize,
    segments: usize,
    value_bytes: usize,
    offset_bytes: usize,
) -> u64 {
    (value_bytes * (n + segments) + offset_bytes * (segments + 1)) as u64
}

/// The CPU reference: `out[s]` = `op` folded left to right over
/// `values[offsets[s] .. offsets[s + 1]]`, the identity when empty. Checks
/// the offsets here (lengths, non-decreasing, within `values`).
///
/// ```
/// use gpu_core::Sum;
/// let out = reduce::segmented::segmented_reduce_cpu(&[1, 2, 3, 4, 5], &[0u32, 2, 2, 5], &Sum)?;
/// assert_eq!(out, vec![3, 0, 12]);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn segmented_reduce_cpu<T: Element, O: Operator<T>, Off: SegmentOffset>(
    values: &[T],
    offsets: &[Off],
    op: &O,
) -> Result<Vec<T>> {
    if offsets.is_empty() {
        return Err(Error::invalid("offsets", "empty: segments + 1 are needed"));
    }
    let mut out = Vec::with_capacity(offsets.len() - 1);
    for (s, pair) in offsets.windows(2).enumerate() {
        let (begin, end): (u64, u64) = (pair[0].into(), pair[1].into());
        if begin > end || end > values.len() as u64 {
            return Err(Error::invalid(
                "offsets",
                format!(
                    "segment {s}: {begin}..{end} is not a range within {} values",
                    values.len()
                ),
            ));
        }
        let fold = values[begin as usize..end as usize]
            .iter()
            .fold(op.identity(), |acc, &v| op.combine(acc, v));
        out.push(fold);
    }
    Ok(out)
}

/// `out[s]` = `op` folded over `values[offsets[s] .. offsets[s + 1]]` for
/// every segment `s < out.len()`, on `gpu`'s stream (no synchronisation).
///
/// Checks first ([`validate_segmented_reduce`]; out overlapping values or
/// offsets): a problem is a typed error and nothing is written. The values
/// of the offsets are the caller's contract (see the module). The identity
/// starts every fold, so a sum of `-0.0` alone gives `+0.0`.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Max};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let values = DeviceBuffer::from_host(&gpu, &[3.0f32, 1.0, 4.0, 1.0, 5.0])?;
/// let offsets = DeviceBuffer::from_host(&gpu, &[0u32, 3, 3, 5])?; // [3 1 4] [] [1 5]
/// let mut out = DeviceBuffer::<f32>::zeros(&gpu, 3)?;
/// reduce::segmented_reduce(&gpu, values.view(), offsets.view(), &Max, out.view_mut())?;
/// assert_eq!(out.to_host(&gpu)?, vec![4.0, f32::NEG_INFINITY, 5.0]);
/// # Ok(()) }
/// ```
pub fn segmented_reduce<T: Element, O: Operator<T>, Off: SegmentOffset>(
    gpu: &Gpu,
    values: DeviceView<'_, T>,
    offsets: DeviceView<'_, Off>,
    op: &O,
    out: DeviceViewMut<'_, T>,
) -> Result<()> {
    validate_segmented_reduce::<T>(offsets.len(), out.len())?;
    let segments = out.len() as u64;
    if segments == 0 {
        return Ok(());
    }
    if values.overlaps(out.device_ptr(), out.bytes())
        || offsets.overlaps(out.device_ptr(), out.bytes())
    {
        return Err(Error::invalid("out", "overlaps the values or the offsets"));
    }
    let n = values.len() as u64;
    // The grid covers segments + n steps: the path may be shorter (offsets
    // not starting at 0 or ending before n), and the tiles past its end
    // find nothing to do.
    let tiles = (segments + n).div_ceil(tile_steps(T::BYTES)).max(1);
    let words = usize::try_from(scratch_words(tiles, T::BYTES))
        .map_err(|_| Error::invalid("values", "too many tiles"))?;
    // The kernels first: a first use compiles, and the arena stays free
    // meanwhile.
    let kernels = [
        kernel::<T, O, Off>(gpu, op, Entry::Partition)?,
        kernel::<T, O, Off>(gpu, op, Entry::Tiles)?,
        kernel::<T, O, Off>(gpu, op, Entry::FixupChunks)?,
        kernel::<T, O, Off>(gpu, op, Entry::Fixup)?,
    ];
    // SAFETY: the partition writes every coordinate 0..=tiles before the
    // tiles read them; every tile writes its carry before the fix-up reads
    // it, and every chunk writes its two summaries before the last launch
    // reads them (stream order); nothing else is read.
    unsafe {
        gpu.with_scratch_words(words, |scratch, _| {
            launch_on(gpu, &kernels, values, offsets, out, tiles, scratch)
        })
    }
}

/// Scratch words of a call of `tiles` tiles with values of `value_bytes`:
/// the coordinates (tiles + 1), the carry keys (tiles), the carry values
/// (tiles, rounded up to whole words), then the summary keys and values
/// ([`summary_carries`] of each, the values rounded up to whole words).
///
/// ```
/// use reduce::segmented::{scratch_words, FIXUP_CHUNK};
/// assert_eq!(scratch_words(1, 4), 2 + 1 + 1);
/// assert_eq!(scratch_words(5, 4), 6 + 5 + 3);
/// let tiles = 3 * FIXUP_CHUNK;
/// assert_eq!(scratch_words(tiles, 8), (tiles + 1) + 2 * tiles + 6 + 6);
/// ```
pub fn scratch_words(tiles: u64, value_bytes: usize) -> u64 {
    merge_path::scratch_words(tiles, value_bytes)
}

/// The launches of `kernels` (partition, tiles, fix-up chunks when there
/// is more than one, fix-up) over `tiles` tiles, the temporaries carved
/// from `scratch` ([`scratch_words`] words). Arguments checked by the
/// caller.
fn launch_on<T: Element, Off: SegmentOffset>(
    gpu: &Gpu,
    [partition, tiles_kernel, fixup_chunks, fixup]: &[Kernel; 4],
    values: DeviceView<'_, T>,
    offsets: DeviceView<'_, Off>,
    mut out: DeviceViewMut<'_, T>,
    tiles: u64,
    scratch: DeviceViewMut<'_, u64>,
) -> Result<()> {
    let segments = out.len() as u64;
    let n = values.len() as u64;
    let mut temps = MergePathScratch::<T>::carve(scratch, tiles)?;

    let (config, _) = grid_1d(tiles + 1, PARTITION_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&offsets)
        .scalar(segments)
        .scalar(n)
        .output(&mut temps.coordinates)
        .scalar(tiles);
    // SAFETY: (const Off* offsets, u64 segments, u64 n, u64* coordinates,
    // u64 tiles); offsets has segments + 1 entries (checked), coordinates
    // tiles + 1; threads past tiles return.
    unsafe { gpu.launch(partition, config, &args)? };

    let (config, blocks) = grid_1d(
        tiles * tile_steps(T::BYTES),
        BLOCK_THREADS,
        items_per_thread(T::BYTES),
        0,
    )?;
    debug_assert_eq!(blocks, tiles);
    let mut args = KernelArgs::new();
    args.input(&values)
        .input(&offsets)
        .output(&mut out)
        .input(&temps.coordinates.as_view())
        .output(&mut temps.carry_keys)
        .output(&mut temps.carry_values)
        .scalar(segments)
        .scalar(n)
        .scalar(tiles);
    // SAFETY: (const T* values, const Off* offsets, T* out, const u64*
    // coordinates, u64* carry_keys, T* carry_values, u64 segments, u64 n,
    // u64 tiles); values are read only in [min(offsets[0], n),
    // min(offsets[segments], n)), out only below segments (its length), the
    // carries below tiles; static shared memory only.
    unsafe { gpu.launch(tiles_kernel, config, &args)? };

    // SAFETY: the fix-up entries of this module take (const u64*
    // carry_keys, const T* carry_values, u64 count, T* out, u64 segments),
    // the chunks then (u64* summary_keys, T* summary_values); keys at or
    // past segments are skipped; the tiles above wrote the carries.
    unsafe { temps.launch_fixup(gpu, [fixup_chunks, fixup], &mut out, segments, &|_| {}) }
}

#[derive(Clone, Copy)]
enum Entry {
    Partition,
    Tiles,
    FixupChunks,
    Fixup,
}

/// The operator's name in entry points and the struct name.
fn op_tag<T: Element, O: Operator<T>>(op: &O) -> String {
    op.name()
}

fn entry_name<T: Element, O: Operator<T>, Off: SegmentOffset>(op: &O, entry: Entry) -> String {
    let kind = match entry {
        Entry::Partition => "partition",
        Entry::Tiles => "tiles",
        Entry::FixupChunks => "fixup_chunks",
        Entry::Fixup => "fixup",
    };
    format!(
        "segmented_reduce_{kind}_{}_{}_{}",
        T::SUFFIX,
        Off::SUFFIX,
        op_tag::<T, O>(op)
    )
}

/// Adds the four entries of `op` (its functor `op_{name}` already in the
/// module) to `module`.
fn add_entries<T: Element, O: Operator<T>, Off: SegmentOffset>(
    module: ModuleSource,
    op: &O,
) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let o = Off::CUDA_TYPE;
    let functor = format!("op_{}", op_tag::<T, O>(op));
    module
        .entry(
            entry_name::<T, O, Off>(op, Entry::Partition),
            &format!("const {o}* offsets, u64 segments, u64 n, u64* coordinates, u64 tiles"),
            "segmented_reduce_partition(offsets, segments, n, coordinates, tiles)",
            Some(PARTITION_THREADS),
        )
        .entry(
            entry_name::<T, O, Off>(op, Entry::Tiles),
            &format!(
                "const {t}* values, const {o}* offsets, {t}* out, const u64* coordinates, \
                 u64* carry_keys, {t}* carry_values, u64 segments, u64 n, u64 tiles"
            ),
            &format!(
                "segmented_reduce_tiles<{t}, {functor}, {o}>(values, offsets, out, coordinates, \
                 carry_keys, carry_values, segments, n, tiles)"
            ),
            Some(BLOCK_THREADS),
        )
        .entry(
            entry_name::<T, O, Off>(op, Entry::FixupChunks),
            &format!(
                "const u64* carry_keys, const {t}* carry_values, u64 tiles, {t}* out, \
                 u64 segments, u64* summary_keys, {t}* summary_values"
            ),
            &format!(
                "segmented_reduce_fixup_chunks<{t}, {functor}>(carry_keys, carry_values, tiles, \
                 out, segments, summary_keys, summary_values)"
            ),
            Some(CHUNK_THREADS),
        )
        .entry(
            entry_name::<T, O, Off>(op, Entry::Fixup),
            &format!(
                "const u64* carry_keys, const {t}* carry_values, u64 tiles, {t}* out, u64 segments"
            ),
            &format!(
                "segmented_reduce_fixup<{t}, {functor}>(carry_keys, carry_values, tiles, out, \
                 segments)"
            ),
            Some(CHUNK_THREADS),
        )
}

fn headers<T: Element>(name: String) -> ModuleSource {
    ModuleSource::new(name)
        .define("SEGMENTED_BLOCK", BLOCK_THREADS)
        .define("SEGMENTED_ITEMS", items_per_thread(T::BYTES))
        .define("SEGMENTED_FIXUP_BLOCK", CHUNK_THREADS)
        .define("SEGMENTED_FIXUP_ITEMS", CHUNK_ITEMS)
        .define("SEGMENTED_CHUNK_BLOCK", CHUNK_THREADS)
        .define("SEGMENTED_CHUNK_ITEMS", CHUNK_ITEMS)
        .source(parprims_kernels::MERGE_PATH)
        .source(parprims_kernels::REDUCE_SEGMENTED)
}

/// One module per (value, offset) type with the built-in operators every
/// type has (sum, product, max, min).
fn builtin_module<T: Element, Off: SegmentOffset>() -> ModuleSource {
    let mut module = headers::<T>(format!("segmented_reduce_{}_{}", T::SUFFIX, Off::SUFFIX))
        .source(&operator_prelude::<T, Sum>(&Sum, "op_sum"))
        .source(&operator_prelude::<T, Product>(&Product, "op_product"))
        .source(&operator_prelude::<T, Max>(&Max, "op_max"))
        .source(&operator_prelude::<T, Min>(&Min, "op_min"));
    module = add_entries::<T, Sum, Off>(module, &Sum);
    module = add_entries::<T, Product, Off>(module, &Product);
    module = add_entries::<T, Max, Off>(module, &Max);
    add_entries::<T, Min, Off>(module, &Min)
}

fn is_in_builtin_module<T: Element, O: Operator<T>>() -> bool {
    use std::any::TypeId;
    let id = TypeId::of::<O>();
    id == TypeId::of::<Sum>()
        || id == TypeId::of::<Product>()
        || id == TypeId::of::<Max>()
        || id == TypeId::of::<Min>()
}

fn kernel<T: Element, O: Operator<T>, Off: SegmentOffset>(
    gpu: &Gpu,
    op: &O,
    entry: Entry,
) -> Result<Kernel> {
    let name = entry_name::<T, O, Off>(op, entry);
    if is_in_builtin_module::<T, O>() {
        let key = format!("reduce/segmented/{}/{}", T::SUFFIX, Off::SUFFIX);
        return gpu.stored_kernel(&key, &name, builtin_module::<T, Off>);
    }
    let fingerprint = custom_fingerprint::<T, O>(op);
    let key = format!(
        "reduce/segmented/custom/{}/{}/{fingerprint}",
        T::SUFFIX,
        Off::SUFFIX
    );
    gpu.stored_kernel(&key, &name, || custom_module::<T, O, Off>(op))
}

fn custom_prelude<T: Element, O: Operator<T>>(op: &O) -> String {
    operator_prelude::<T, O>(op, &format!("op_{}", op_tag::<T, O>(op)))
}

fn custom_fingerprint<T: Element, O: Operator<T>>(op: &O) -> String {
    gpu_core::kernel::fingerprint(&custom_prelude::<T, O>(op))
}

/// The module of a caller's operator (built on first use; public for the
/// compile test and cache warming).
///
/// ```
/// use gpu_core::CustomOp;
/// let op = CustomOp::<i32>::new("absmax", "max(abs(a), abs(b))", 0, |a: i32, b: i32| a.abs().max(b.abs())).unwrap();
/// let module = reduce::segmented::custom_module::<i32, _, u32>(&op);
/// assert_eq!(module.entries().len(), 4);
/// ```
pub fn custom_module<T: Element, O: Operator<T>, Off: SegmentOffset>(op: &O) -> ModuleSource {
    let fingerprint = custom_fingerprint::<T, O>(op);
    let module = headers::<T>(format!(
        "segmented_reduce_custom_{}_{}_{}",
        T::SUFFIX,
        Off::SUFFIX,
        &fingerprint[..8]
    ))
    .source(&custom_prelude::<T, O>(op));
    add_entries::<T, O, Off>(module, op)
}

/// Every built-in segmented-reduce module: the 4- and 8-byte types with
/// `u32` and `u64` offsets.
///
/// ```
/// assert_eq!(reduce::segmented::kernel_catalog().len(), 12);
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    vec![
        builtin_module::<i32, u32>(),
        builtin_module::<u32, u32>(),
        builtin_module::<f32, u32>(),
        builtin_module::<i64, u32>(),
        builtin_module::<u64, u32>(),
        builtin_module::<f64, u32>(),
        builtin_module::<i32, u64>(),
        builtin_module::<u32, u64>(),
        builtin_module::<f32, u64>(),
        builtin_module::<i64, u64>(),
        builtin_module::<u64, u64>(),
        builtin_module::<f64, u64>(),
    ]
}
