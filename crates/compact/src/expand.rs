//! Allocation by scan, and `expand`: element `i` asks for `counts[i]`
//! outputs and is written that many times.
//!
//! - **Computes** `offsets[i] = counts[0] + … + counts[i−1]` (u64, the
//!   exclusive scan), `total = offsets[n−1] + counts[n−1]`, and
//!   `out[j] = values[i]` for the `i` with `offsets[i] <= j < offsets[i+1]`
//!   (torch's `repeat_interleave`, `thrust::expand`): the lesson's
//!   allocation by scan, with the offsets handed to the caller.
//! - **How** (`kernels/cuda/compact/expand.cu`): the counts widened to u64
//!   into `offsets_out`, scanned in place by the `scan` crate's exclusive
//!   scan, the total written on the device by a one-thread kernel; then the
//!   expansion, balanced by outputs: one thread per boundary between tiles
//!   of 2048 outputs finds the element owning it by binary search over the
//!   offsets, all at once (into scratch words); each block copies the
//!   offsets of its tile's elements into shared memory (when they are at
//!   most 2048; else it searches global memory), each thread finds the
//!   owner of its first output there and walks on (searching again when an
//!   element ends, so a stretch of zero counts costs one search). One huge
//!   count or many zero counts cost what their outputs cost. Outputs are
//!   staged in shared memory and written coalesced.
//! - **Work** O(n + total + tiles·log n); **bytes moved** about
//!   4n + 8n + 16n (counts read, offsets written, the scan) + 8n + total·s
//!   written + the values and offsets the searches read
//!   ([`expand_bytes_moved`] counts the unavoidable part: counts and values
//!   read, offsets and outputs written); launches: widen, the scan's,
//!   total, partition, expand.
//! - **Types**: any element type as values; counts `u32`; offsets and the
//!   total `u64` (any total).

use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, KernelArgs, ModuleSource, Result,
    Sum,
};
use scan::{ScanKind, ScanOptions};

use crate::by_key::check_outputs_disjoint;

/// Threads per block of the expand kernels.
const EXPAND_BLOCK_THREADS: u32 = 256;
/// Outputs per thread of the expand kernel (a block writes 2048).
const EXPAND_ITEMS_PER_THREAD: u32 = 8;

/// Checks an expansion's arguments: `counts` and `offsets_out` as long as
/// `values`, one `total_out` slot.
///
/// ```
/// use compact::validate_expand;
/// assert!(validate_expand(10, 10, 10, 1).is_ok());
/// assert!(validate_expand(10, 9, 10, 1).is_err()); // counts too short
/// assert!(validate_expand(10, 10, 11, 1).is_err()); // offsets_out the wrong length
/// assert!(validate_expand(10, 10, 10, 2).is_err()); // total_out is one u64
/// ```
pub fn validate_expand(
    values_len: usize,
    counts_len: usize,
    offsets_len: usize,
    total_out_len: usize,
) -> Result<()> {
    Error::check_len("counts", values_len, counts_len)?;
    Error::check_len("offsets_out", values_len, offsets_len)?;
    Error::check_len("total_out", 1, total_out_len)
}

/// The expand module for `T`: widen, total and the tile kernel.
fn module<T: Element>() -> ModuleSource {
    let t = T::CUDA_TYPE;
    ModuleSource::new(format!("compact_expand_{}", T::SUFFIX))
        .source(parprims_kernels::COMPACT_EXPAND)
        .entry(
            "expand_widen_counts",
            "const u32* counts, u64* offsets, u64 n",
            "expand_widen(counts, offsets, n)",
            Some(EXPAND_BLOCK_THREADS),
        )
        .entry(
            "expand_write_total",
            "const u32* counts, const u64* offsets, u64 n, u64* total",
            "expand_total(counts, offsets, n, total)",
            Some(32),
        )
        .entry(
            "expand_partition_tiles",
            "const u64* offsets, u64 n, const u64* total, u64 out_len, u64 tiles, u64* owners",
            &format!(
                "expand_partition<{}>(offsets, n, total, out_len, tiles, owners)",
                EXPAND_BLOCK_THREADS * EXPAND_ITEMS_PER_THREAD
            ),
            Some(EXPAND_BLOCK_THREADS),
        )
        .entry(
            tile_entry::<T>(),
            &format!(
                "const {t}* values, const u64* offsets, u64 n, const u64* total, \
                 const u64* owners, {t}* out, u64 out_len"
            ),
            &format!(
                "expand_tile<{t}, {EXPAND_BLOCK_THREADS}, {EXPAND_ITEMS_PER_THREAD}>(values, \
                 offsets, n, total, owners, out, out_len)"
            ),
            Some(EXPAND_BLOCK_THREADS),
        )
}

fn tile_entry<T: Element>() -> String {
    format!("expand_tile_{}", T::SUFFIX)
}

fn module_key<T: Element>() -> String {
    format!("compact/expand/{}", T::SUFFIX)
}

/// Offsets and total: widen, scan in place, total. Arguments validated.
fn offsets_and_total<T: Element>(
    gpu: &Gpu,
    counts: &DeviceView<'_, u32>,
    offsets_out: &mut DeviceViewMut<'_, u64>,
    total_out: &mut DeviceViewMut<'_, u64>,
) -> Result<()> {
    let n = counts.len() as u64;
    let build = module::<T>;
    if n > 0 {
        let widen = gpu.stored_kernel(&module_key::<T>(), "expand_widen_counts", build)?;
        let (config, _) = gpu_core::launch::grid_1d(n, EXPAND_BLOCK_THREADS, 1, 0)?;
        let mut args = KernelArgs::new();
        args.input(counts).output(offsets_out).scalar(n);
        // SAFETY: (const u32* counts, u64* offsets, u64 n): both hold n
        // items (validated); one thread per index, indices < n only.
        unsafe { gpu.launch(&widen, config, &args)? };
        scan::scan_in_place(
            gpu,
            offsets_out.reborrow(),
            &Sum,
            ScanKind::Exclusive { initial: 0u64 },
            &ScanOptions::default(),
        )?;
    }
    let total = gpu.stored_kernel(&module_key::<T>(), "expand_write_total", build)?;
    let (config, _) = gpu_core::launch::grid_1d(1, 32, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(counts)
        .output(offsets_out)
        .scalar(n)
        .output(total_out);
    // SAFETY: (const u32* counts, const u64* offsets, u64 n, u64* total):
    // counts and offsets hold n items, read at n − 1 only when n > 0; total
    // holds one u64 (validated). One thread writes.
    unsafe { gpu.launch(&total, config, &args) }
}

/// The expansion proper, offsets and total already on the device.
fn expand_tiles<T: Element>(
    gpu: &Gpu,
    values: &DeviceView<'_, T>,
    offsets: &DeviceViewMut<'_, u64>,
    total: &DeviceViewMut<'_, u64>,
    out: &mut DeviceViewMut<'_, T>,
) -> Result<()> {
    let out_len = out.len() as u64;
    if out_len == 0 || values.is_empty() {
        return Ok(());
    }
    let kernel = gpu.stored_kernel(&module_key::<T>(), &tile_entry::<T>(), module::<T>)?;
    let partition = gpu.stored_kernel(&module_key::<T>(), "expand_partition_tiles", module::<T>)?;
    let (config, tiles) =
        gpu_core::launch::grid_1d(out_len, EXPAND_BLOCK_THREADS, EXPAND_ITEMS_PER_THREAD, 0)?;
    let (partition_config, _) = gpu_core::launch::grid_1d(tiles + 1, EXPAND_BLOCK_THREADS, 1, 0)?;
    let n = values.len() as u64;
    let boundaries = usize::try_from(tiles + 1)
        .map_err(|_| Error::invalid("out", "more tiles than this host's usize counts"))?;
    // SAFETY: expand_partition writes owners[0 ..= tiles] whenever some
    // tile has outputs, and expand_tile reads owners[b], owners[b + 1] only
    // for a tile b with outputs, after it on the same stream.
    unsafe {
        gpu.with_scratch_words(boundaries, |mut owners, _| {
            let mut args = KernelArgs::new();
            args.scalar(offsets.device_ptr())
                .scalar(n)
                .scalar(total.device_ptr())
                .scalar(out_len)
                .scalar(tiles)
                .output(&mut owners);
            // SAFETY: (const u64* offsets, u64 n, const u64* total, u64
            // out_len, u64 tiles, u64* owners): offsets hold n items (the
            // exclusive scan of the counts) and total their sum, written
            // earlier on this stream; owners holds tiles + 1 words, written
            // at indices <= tiles only.
            gpu.launch(&partition, partition_config, &args)?;
            let mut args = KernelArgs::new();
            args.input(values)
                .scalar(offsets.device_ptr())
                .scalar(n)
                .scalar(total.device_ptr())
                .input(&owners.as_view())
                .output(out)
                .scalar(out_len);
            // SAFETY: (const T* values, const u64* offsets, u64 n, const u64*
            // total, const u64* owners, T* out, u64 out_len): values and
            // offsets hold n items, offsets the exclusive scan of the counts
            // and total their sum, owners each tile's first owner (all
            // written earlier on this stream), so every owner found lies in
            // [0, n); out is written at indices < min(total, out_len) only;
            // out overlaps no input (validated).
            gpu.launch(&kernel, config, &args)
        })
    }
}

/// Allocation by scan into the caller's buffers. **Does not synchronise.**
/// Writes `offsets_out` (the exclusive scan of `counts`, as u64),
/// `total_out[0]` (the sum of the counts) and `out[j]` for every
/// `j < min(total, out.len())`: the host cannot know the total without a
/// synchronisation, so `out.len()` is the caller's promise that it holds
/// the total; what is checked is that the kernel writes no index at or past
/// `out.len()` (a short `out` receives a prefix of the expansion; compare
/// `total_out` with its length). On an argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let values = DeviceBuffer::from_host(&gpu, &[1.5f32, 2.5, 3.5])?;
/// let counts = DeviceBuffer::from_host(&gpu, &[2u32, 0, 3])?;
/// let mut offsets = DeviceBuffer::<u64>::zeros(&gpu, 3)?;
/// let mut total = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// let mut out = DeviceBuffer::<f32>::zeros(&gpu, 5)?;
/// compact::expand_into(&gpu, values.view(), counts.view(), offsets.view_mut(), out.view_mut(), total.view_mut())?;
/// assert_eq!(offsets.to_host(&gpu)?, [0, 2, 2]);
/// assert_eq!(total.to_host(&gpu)?, [5]);
/// assert_eq!(out.to_host(&gpu)?, [1.5, 1.5, 3.5, 3.5, 3.5]);
/// # Ok(()) }
/// ```
pub fn expand_into<T: Element>(
    gpu: &Gpu,
    values: DeviceView<'_, T>,
    counts: DeviceView<'_, u32>,
    mut offsets_out: DeviceViewMut<'_, u64>,
    mut out: DeviceViewMut<'_, T>,
    mut total_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    validate_expand(
        values.len(),
        counts.len(),
        offsets_out.len(),
        total_out.len(),
    )?;
    check_outputs(&values, &counts, &offsets_out, &total_out, Some(&out))?;
    offsets_and_total::<T>(gpu, &counts, &mut offsets_out, &mut total_out)?;
    expand_tiles(gpu, &values, &offsets_out, &total_out, &mut out)
}

/// Allocation by scan into a new buffer of exactly the total:
/// `offsets_out` receives the exclusive scan of `counts`, the result holds
/// `values[i]` `counts[i]` times, in order. **Synchronises** (reads the
/// total to size the buffer).
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (v, c) = ([7i64, 8, 9], [1u32, 3, 0]);
/// let values = DeviceBuffer::from_host(&gpu, &v)?;
/// let counts = DeviceBuffer::from_host(&gpu, &c)?;
/// let mut offsets = DeviceBuffer::<u64>::zeros(&gpu, 3)?;
/// let out = compact::expand_alloc(&gpu, values.view(), counts.view(), offsets.view_mut())?;
/// let (want_offsets, _, want) = compact::cpu_by_key::expand(&v, &c)?;
/// assert_eq!(out.to_host(&gpu)?, want); // [7, 8, 8, 8]
/// assert_eq!(offsets.to_host(&gpu)?, want_offsets); // [0, 1, 4]
/// # Ok(()) }
/// ```
pub fn expand_alloc<T: Element>(
    gpu: &Gpu,
    values: DeviceView<'_, T>,
    counts: DeviceView<'_, u32>,
    mut offsets_out: DeviceViewMut<'_, u64>,
) -> Result<DeviceBuffer<T>> {
    validate_expand(values.len(), counts.len(), offsets_out.len(), 1)?;
    let mut total = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    check_outputs(&values, &counts, &offsets_out, &total.view_mut(), None)?;
    let mut total_view = total.view_mut();
    offsets_and_total::<T>(gpu, &counts, &mut offsets_out, &mut total_view)?;
    let mut host = [0u64];
    gpu.read_small(&total.view(), &mut host)?;
    let len = usize::try_from(host[0])
        .map_err(|_| Error::invalid("counts", "the total does not fit this host's usize"))?;
    // SAFETY: the expansion writes every one of the `len` = total items
    // before the buffer is returned; on error it is dropped unread.
    let mut out = unsafe { DeviceBuffer::<T>::uninit(gpu, len)? };
    expand_tiles(
        gpu,
        &values,
        &offsets_out,
        &total.view_mut(),
        &mut out.view_mut(),
    )?;
    Ok(out)
}

/// No output overlaps an input or another output.
fn check_outputs<T: Element>(
    values: &DeviceView<'_, T>,
    counts: &DeviceView<'_, u32>,
    offsets_out: &DeviceViewMut<'_, u64>,
    total_out: &DeviceViewMut<'_, u64>,
    out: Option<&DeviceViewMut<'_, T>>,
) -> Result<()> {
    let mut outputs = vec![
        (
            "offsets_out",
            (offsets_out.device_ptr(), offsets_out.bytes()),
        ),
        ("total_out", (total_out.device_ptr(), total_out.bytes())),
    ];
    if let Some(out) = out {
        outputs.push(("out", (out.device_ptr(), out.bytes())));
    }
    check_outputs_disjoint(
        &[
            (values.device_ptr(), values.bytes()),
            (counts.device_ptr(), counts.bytes()),
        ],
        &outputs,
    )
}

/// Global bytes an expansion moves at the least: counts (4n) and values
/// (n·s) read, offsets (8n) and the outputs (total·s) written.
///
/// ```
/// assert_eq!(compact::expand_bytes_moved(100, 1000, 4), 400 + 400 + 800 + 4000);
/// ```
pub fn expand_bytes_moved(n: usize, total: usize, element_bytes: usize) -> u64 {
    (4 * n + n * element_bytes + 8 * n + total * element_bytes) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_compile_where_nvrtc_is() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        for module in [
            module::<i32>(),
            module::<f32>(),
            module::<u64>(),
            module::<f64>(),
            module::<u8>(),
            module::<gpu_core::f16>(),
            module::<gpu_core::bf16>(),
        ] {
            let cubin = gpu_core::kernel::compile_cubin(&module, "sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
            for entry in module.entries() {
                assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
            }
        }
    }
}
