//! The recursive multi-block driver shared by the Hillis–Steele and Blelloch
//! block scans ("scan, then propagate").
//!
//! For n elements and a block scan over tiles of `T` elements:
//!
//! 1. **block scan** (one launch): every block scans its tile in shared
//!    memory, writes the tile-local prefixes to the output and the tile's
//!    total to `totals[tile]` (tile 0 also folds in the exclusive scan's
//!    initial value, the *seed*);
//! 2. the ⌈n / T⌉ totals are scanned **inclusively, with the same seed, by
//!    the same method**, level after level until one tile holds them all
//!    (levels: n, ⌈n/T⌉, ⌈n/T²⌉, …);
//! 3. **uniform add** (one launch per level below the top): every element of
//!    tile t ≥ 1 becomes `scanned_totals[t − 1] ⊕ element`.
//!
//! Correctness: element i of tile t ends as
//! `seed ⊕ total(tile 0) ⊕ … ⊕ total(tile t−1) ⊕ local prefix(i)`, which is
//! the scan; operands stay in index order, so non-commutative operators work.
//! Bytes moved: level 0 reads and writes n elements in each of steps 1 and 3
//! (≈ 4n), the higher levels add a 1/T fraction ([`bytes_moved`]).
//!
//! Everything that can fail (compiling the modules, allocating the totals of
//! every level, sizing the grids) happens before the first launch, so an
//! error leaves the output untouched. The block kernel is a type parameter
//! ([`BlockScan`]), so the driver is written once for all three variants.
//!
//! The 1- and 2-byte types scan in a 4-byte accumulator
//! (`gpu_core::op::register_type`): the block scans widen each item when
//! they load it, the shared tile and the totals of every level are
//! accumulators, and level 0 writes its tile-local prefixes to an
//! n-element accumulator array (not to the output, which would round a
//! 16-bit float twice); the last step, `uniform_add_narrow`, folds in the
//! carries and narrows each output once. An array of one tile is scanned
//! straight from the element type to the element type. Bytes moved grow
//! accordingly ([`bytes_moved`]); the temporary is 4n bytes.

use gpu_core::launch::{grid_1d, spread_blocks};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, Kernel, KernelArgs, LaunchConfig,
    ModuleSource, Operator, Result,
};

use crate::kind::ScanKind;
use crate::policy::{UNIFORM_ADD_MAX_ITEMS, UNIFORM_ADD_MAX_THREADS, UNIFORM_ADD_THREADS};

/// A block-level scan kernel the driver can run: it scans tiles of
/// `tile_items(block_threads)` elements with the entry signature
/// `(const L* in, S* out, A* totals, u64 n, u32 exclusive, u32 has_seed, T seed)`
/// (see `kernels/cuda/scan/recursive.cuh`), one entry per [`Stage`].
pub(crate) trait BlockScan {
    /// Elements one block scans.
    fn tile_items(&self, block_threads: u32) -> u64;
    /// Dynamic shared memory per block, in bytes, for `value_bytes`-byte
    /// accumulators.
    fn shared_bytes(&self, block_threads: u32, value_bytes: u64) -> u64;
    /// The kernel module for `T` and `op`: one entry per stage of
    /// [`stages`].
    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource;
    /// The block-scan entry point of `stage` in [`BlockScan::module`].
    fn entry<T: Element, O: Operator<T>>(&self, op: &O, stage: Stage) -> String;
    /// Whether the kernel loops over tiles (the pipelined tile loop of
    /// `scan/recursive.cuh`, on a persistent grid) rather than scanning the
    /// one tile of its block index.
    fn loops_over_tiles(&self) -> bool;
}

/// What a block-scan entry reads and writes. The 4- and 8-byte types have
/// only [`Stage::Element`]; a 1- or 2-byte type has all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Elements to elements: every level of a 4- or 8-byte type, and a
    /// narrow type's array of one tile.
    Element,
    /// Elements to accumulators: level 0 of a narrow type's multi-tile scan.
    ToAccumulator,
    /// Accumulators to accumulators: the totals' levels of a narrow type.
    Accumulator,
}

impl Stage {
    /// The suffix of the stage's entry name (none for [`Stage::Element`], so
    /// the 4- and 8-byte entries keep their names).
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Stage::Element => "",
            Stage::ToAccumulator => "_to_acc",
            Stage::Accumulator => "_acc",
        }
    }

    /// CUDA types `(loaded, stored)` for `T`.
    pub(crate) fn types<T: Element>(self) -> (&'static str, &'static str) {
        let acc = accumulator_type::<T>();
        match self {
            Stage::Element => (T::CUDA_TYPE, T::CUDA_TYPE),
            Stage::ToAccumulator => (T::CUDA_TYPE, acc),
            Stage::Accumulator => (acc, acc),
        }
    }
}

/// The CUDA type the kernels combine `T` in: `T` itself for the 4- and
/// 8-byte types, the 4-byte register type for the others.
pub(crate) fn accumulator_type<T: Element>() -> &'static str {
    gpu_core::op::register_type::<T>().unwrap_or(T::CUDA_TYPE)
}

/// Bytes of one accumulator of `element_bytes`-byte elements (4 for the 1-
/// and 2-byte types).
pub(crate) fn accumulator_bytes(element_bytes: u64) -> u64 {
    element_bytes.max(4)
}

/// Whether `T` scans through accumulator arrays (a 1- or 2-byte type).
pub(crate) fn is_narrow<T: Element>() -> bool {
    gpu_core::op::register_type::<T>().is_some()
}

/// The block-scan stages a module for `T` holds.
pub(crate) fn stages<T: Element>() -> &'static [Stage] {
    if is_narrow::<T>() {
        &[Stage::Element, Stage::ToAccumulator, Stage::Accumulator]
    } else {
        &[Stage::Element]
    }
}

/// Parameter list of the block-scan entry of `stage`.
pub(crate) fn block_entry_params<T: Element>(stage: Stage) -> String {
    let (load, store) = stage.types::<T>();
    format!(
        "const {load}* in, {store}* out, {acc}* totals, u64 n, u32 exclusive, u32 has_seed, {t} seed",
        acc = accumulator_type::<T>(),
        t = T::CUDA_TYPE
    )
}

/// An uninitialised device array of `len` accumulators of `T` (4-byte
/// words, two per accumulator of an 8-byte type).
///
/// # Safety
/// As [`DeviceBuffer::uninit`]: every element must be written before it is
/// read.
pub(crate) unsafe fn accumulator_buffer<T: Element>(
    gpu: &Gpu,
    len: usize,
) -> Result<DeviceBuffer<u32>> {
    let words = len
        .checked_mul(accumulator_bytes(T::BYTES as u64) as usize / 4)
        .ok_or_else(|| Error::invalid("n", format!("{len} accumulators overflow")))?;
    // SAFETY: the caller writes before reading.
    unsafe { DeviceBuffer::<u32>::uninit(gpu, words) }
}

/// Starts a module that uses `scan/recursive.cuh`: the operator functor
/// `op_t` (on the accumulator for the 1- and 2-byte types), the uniform-add
/// constant, the shared header.
pub(crate) fn recursive_module<T: Element, O: Operator<T>>(name: String, op: &O) -> ModuleSource {
    ModuleSource::new(name)
        .source(&gpu_core::op::register_operator_prelude::<T, O>(op, "op_t"))
        .define("UNIFORM_ADD_MAX_ITEMS", UNIFORM_ADD_MAX_ITEMS)
        .source(parprims_kernels::SCAN_RECURSIVE)
}

/// Entry name of the uniform-add kernel.
pub(crate) fn uniform_add_entry<T: Element, O: Operator<T>>(op: &O) -> String {
    format!("scan_uniform_add_{}_{}", T::SUFFIX, op.name())
}

/// Entry name of the narrowing uniform add (1- and 2-byte types only).
pub(crate) fn uniform_add_narrow_entry<T: Element, O: Operator<T>>(op: &O) -> String {
    format!("scan_uniform_add_narrow_{}_{}", T::SUFFIX, op.name())
}

/// The uniform-add module for `T` and `op` (shared by the three recursive
/// variants, so it is compiled once): the uniform add on accumulators, and
/// for the 1- and 2-byte types the narrowing one.
pub(crate) fn uniform_add_module<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
    let acc = accumulator_type::<T>();
    let module =
        recursive_module::<T, O>(format!("scan_uniform_add_{}_{}", T::SUFFIX, op.name()), op)
            .entry(
                uniform_add_entry::<T, O>(op),
                &format!("{acc}* data, const {acc}* carry, u64 n, u64 tile_items, u64 tiles"),
                &format!("uniform_add<{acc}, op_t>(data, carry, n, tile_items, tiles)"),
                Some(UNIFORM_ADD_MAX_THREADS),
            );
    if !is_narrow::<T>() {
        return module;
    }
    module.entry(
        uniform_add_narrow_entry::<T, O>(op),
        &format!(
            "const {acc}* work, {t}* out, const {acc}* carry, u64 n, u64 tile_items, u64 tiles",
            t = T::CUDA_TYPE
        ),
        &format!(
            "uniform_add_narrow<{t}, op_t>(work, out, carry, n, tile_items, tiles)",
            t = T::CUDA_TYPE
        ),
        Some(UNIFORM_ADD_MAX_THREADS),
    )
}

/// Lengths of the arrays the driver scans, level by level: `n`, ⌈n/T⌉,
/// ⌈n/T²⌉, … down to the first that fits one tile. `n > 0`, `tile_items ≥ 2`.
pub(crate) fn level_lengths(n: u64, tile_items: u64) -> Vec<u64> {
    let mut levels = vec![n];
    let mut m = n;
    while m > tile_items {
        m = m.div_ceil(tile_items);
        levels.push(m);
    }
    levels
}

/// Uniform-add threads per block for tiles of `tile_items`: UNIFORM_ADD_THREADS
/// (or the tile, if smaller), raised to tile / UNIFORM_ADD_MAX_ITEMS for
/// tiles larger than UNIFORM_ADD_THREADS · UNIFORM_ADD_MAX_ITEMS, up to
/// UNIFORM_ADD_MAX_THREADS (the entry's launch bound).
pub(crate) fn uniform_add_threads(tile_items: u64) -> Result<u32> {
    let threads = (UNIFORM_ADD_THREADS as u64)
        .max(tile_items.div_ceil(UNIFORM_ADD_MAX_ITEMS as u64))
        .min(tile_items);
    if threads > 0 && threads <= UNIFORM_ADD_MAX_THREADS as u64 {
        Ok(threads as u32)
    } else {
        Err(Error::Unsupported(format!(
            "tiles of {tile_items} elements exceed one uniform-add block \
             ({UNIFORM_ADD_MAX_THREADS} threads × {UNIFORM_ADD_MAX_ITEMS} elements)"
        )))
    }
}

/// Launch geometry of a block scan over `m` elements in tiles of
/// `tile_items`: one block per tile up to `resident_blocks` (what fits on the
/// device at once), each block looping over every G-th tile past that.
/// `resident_blocks` 0 (the kernel cannot run with this block) is an error.
pub(crate) fn persistent_grid(
    m: u64,
    tile_items: u64,
    resident_blocks: u64,
    block_threads: u32,
    shared_bytes: u32,
) -> Result<LaunchConfig> {
    if resident_blocks == 0 {
        return Err(Error::Unsupported(format!(
            "a block scan of {block_threads} threads with {shared_bytes} bytes of shared \
             memory cannot be resident on this device"
        )));
    }
    let blocks = m.div_ceil(tile_items).min(resident_blocks).max(1);
    // Resident blocks are at most SMs × 32 (the per-SM block limit): the
    // grid always fits in x.
    let blocks = u32::try_from(blocks)
        .map_err(|_| Error::invalid("block_threads", "persistent grid overflows u32"))?;
    Ok(LaunchConfig {
        grid: (blocks, 1, 1),
        block: (block_threads, 1, 1),
        shared_bytes,
    })
}

/// Global-memory bytes the driver moves for an inclusive scan of `n`
/// elements of `element_bytes` with tiles of `tile_items`: per level of
/// length m with t = ⌈m/T⌉ tiles, the block scan reads and writes m
/// elements (and writes t totals when t > 1); the uniform add reads and
/// writes the m − T elements past the first tile and reads t − 1 carries.
/// For 1- and 2-byte elements (scanned in 4-byte accumulators) level 0
/// writes m accumulators and its t totals, and the narrowing uniform add
/// reads the m accumulators and t − 1 carries and writes the m elements;
/// the higher levels move accumulators.
pub(crate) fn bytes_moved(n: u64, element_bytes: u64, tile_items: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let acc = accumulator_bytes(element_bytes);
    let narrow = acc != element_bytes;
    let mut bytes = 0u64;
    for (level, m) in level_lengths(n, tile_items).into_iter().enumerate() {
        let tiles = m.div_ceil(tile_items);
        if level == 0 && narrow && tiles > 1 {
            bytes += m * element_bytes + m * acc + tiles * acc; // block scan
            bytes += m * acc + (tiles - 1) * acc + m * element_bytes; // narrowing add
            continue;
        }
        let mut elements = 2 * m;
        if tiles > 1 {
            elements += tiles; // totals written
            elements += 2 * (m - tile_items) + (tiles - 1); // uniform add
        }
        bytes += elements * if level == 0 { element_bytes } else { acc };
    }
    bytes
}

/// Scans `output.len()` elements with block scan `block_scan` and
/// `block_threads` threads per block. `input` `None` scans `output` in place.
/// Arguments are validated by the caller; `block_threads` suits the block
/// scan (a multiple of 32, a power of two for Blelloch).
pub(crate) fn scan_recursive<T: Element, O: Operator<T>, S: BlockScan>(
    gpu: &Gpu,
    block_scan: &S,
    block_threads: u32,
    input: Option<DeviceView<'_, T>>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<()> {
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let tile_items = block_scan.tile_items(block_threads);
    let shared_bytes =
        u32::try_from(block_scan.shared_bytes(block_threads, accumulator_bytes(T::BYTES as u64)))
            .map_err(|_| Error::invalid("block_threads", "shared memory per block overflows"))?;
    let levels = level_lengths(n, tile_items);
    // A 1- or 2-byte type over several tiles goes through accumulators:
    // level 0 into `work`, the totals' levels on accumulators, and the
    // narrowing uniform add into the output.
    let through_accumulators = is_narrow::<T>() && levels.len() > 1;
    let stage_of = |level: usize| match (through_accumulators, level) {
        (false, _) => Stage::Element,
        (true, 0) => Stage::ToAccumulator,
        (true, _) => Stage::Accumulator,
    };

    // Everything fallible before the first launch.
    // From the context's kernel store: the entry names the family (and the
    // stage), the operator key the type and operator (every block size
    // shares a module).
    let operator = crate::operator_key::<T, O>(op);
    let block_kernel = |stage: Stage| {
        let entry = block_scan.entry::<T, O>(op, stage);
        gpu.stored_kernel(
            &format!(
                "scan/block/{}/{operator}",
                block_scan.entry::<T, O>(op, Stage::Element)
            ),
            &entry,
            || block_scan.module::<T, O>(op),
        )
    };
    let level_kernels: Vec<Kernel> = (0..levels.len())
        .map(|level| block_kernel(stage_of(level)))
        .collect::<Result<_>>()?;
    let add_key = format!("scan/uniform_add/{operator}");
    let add_kernel = if levels.len() > 1 {
        Some(
            gpu.stored_kernel(&add_key, &uniform_add_entry::<T, O>(op), || {
                uniform_add_module::<T, O>(op)
            })?,
        )
    } else {
        None
    };
    let narrow_add_kernel = if through_accumulators {
        Some(
            gpu.stored_kernel(&add_key, &uniform_add_narrow_entry::<T, O>(op), || {
                uniform_add_module::<T, O>(op)
            })?,
        )
    } else {
        None
    };
    // Block scans, one grid per level: for a kernel that loops over tiles, a
    // persistent grid of min(tiles, resident blocks per SM × SMs) blocks
    // (`persistent_grid`, from each level's own kernel); otherwise one block
    // per tile, ⌈m / tile_items⌉ blocks (spread over y past 2^31 − 1).
    let block_configs: Vec<LaunchConfig> = levels
        .iter()
        .zip(&level_kernels)
        .map(|(&m, kernel)| {
            if block_scan.loops_over_tiles() {
                let resident =
                    kernel.resident_blocks_per_sm(block_threads, shared_bytes as usize)?;
                let resident_blocks = u64::from(resident) * u64::from(gpu.info().sm_count);
                persistent_grid(m, tile_items, resident_blocks, block_threads, shared_bytes)
            } else {
                let items_per_thread = (tile_items / block_threads as u64) as u32;
                grid_1d(m, block_threads, items_per_thread, shared_bytes).map(|(c, _)| c)
            }
        })
        .collect::<Result<_>>()?;
    // Uniform adds: one block per tile t ≥ 1 of each level below the top;
    // the narrowing add of level 0 takes every tile (tile 0 is narrowed too).
    let add_threads = uniform_add_threads(tile_items)?;
    let add_configs: Vec<LaunchConfig> = levels[1..]
        .iter()
        .enumerate()
        .map(|(level, &tiles)| {
            let blocks = if level == 0 && through_accumulators {
                tiles
            } else {
                tiles - 1
            };
            Ok(LaunchConfig {
                grid: spread_blocks(blocks)?,
                block: (add_threads, 1, 1),
                shared_bytes: 0,
            })
        })
        .collect::<Result<_>>()?;
    // totals[l] receives level l's tile totals and is the array level l + 1
    // scans; accumulators (the element type itself for 4- and 8-byte types).
    let totals: Vec<DeviceBuffer<u32>> = levels[1..]
        .iter()
        // SAFETY: level l's block scan writes every element of totals[l]
        // (one per tile) before the next level or the uniform add reads it.
        .map(|&m| unsafe { accumulator_buffer::<T>(gpu, m as usize) })
        .collect::<Result<_>>()?;
    let totals_ptrs: Vec<u64> = totals.iter().map(|b| b.view().device_ptr()).collect();
    // Level 0's tile-local prefixes of a narrow type, as accumulators.
    let work = if through_accumulators {
        // SAFETY: level 0's block scan writes all n accumulators before the
        // narrowing uniform add reads them.
        Some(unsafe { accumulator_buffer::<T>(gpu, n as usize)? })
    } else {
        None
    };

    // A seeded kind folds `initial` into tile 0 of level 0 (on the left)
    // and into the totals' scan, so every later tile gets it through its
    // carry; only the exclusive kind shifts level 0's outputs.
    let (exclusive, seed) = (kind.is_exclusive(), kind.initial());
    let output_ptr = output.device_ptr();
    let input_ptr = input.map_or(output_ptr, |v| v.device_ptr());
    // Where level 0's block scan writes: the output, or `work`.
    let level0_ptr = work.as_ref().map_or(output_ptr, |w| w.view().device_ptr());

    // Down the levels: block scans. Level 0 reads `input` and writes
    // `output` (or `work`); level l ≥ 1 scans totals[l − 1] in place,
    // inclusively, with the same seed.
    for (level, &m) in levels.iter().enumerate() {
        let (src, dst) = if level == 0 {
            (input_ptr, level0_ptr)
        } else {
            (totals_ptrs[level - 1], totals_ptrs[level - 1])
        };
        let totals_ptr = totals_ptrs.get(level).copied().unwrap_or(0);
        let mut args = KernelArgs::new();
        args.scalar(src)
            .scalar(dst)
            .scalar(totals_ptr)
            .scalar(m)
            .scalar(u32::from(exclusive && level == 0))
            .scalar(u32::from(seed.is_some()))
            .scalar(seed.unwrap_or_else(|| op.identity()));
        // SAFETY: the arguments match block_entry_params(stage) (in, out,
        // totals, n, exclusive, has_seed, seed: T). `src` and `dst` hold m
        // values of the stage's types (the caller's views, validated to the
        // same length, or `work` of n accumulators, or totals[l−1] of m
        // accumulators); `totals_ptr` is null on the top level (one tile)
        // and otherwise totals[level] with ⌈m / tile_items⌉ accumulators,
        // one per tile, each written by the one block that scans that tile;
        // the kernel guards every index against m and exits surplus blocks.
        // src == dst is allowed: each element is read, then written, by
        // the one thread that owns it, and blocks own disjoint tiles.
        unsafe { gpu.launch(&level_kernels[level], block_configs[level], &args)? };
    }

    // Back up: uniform adds, top level first, so that totals[l] is final
    // before level l uses it as carries.
    for level in (0..levels.len() - 1).rev() {
        let mut args = KernelArgs::new();
        if level == 0 && through_accumulators {
            let kernel = narrow_add_kernel
                .as_ref()
                .expect("loaded above for a scan through accumulators");
            args.scalar(level0_ptr)
                .scalar(output_ptr)
                .scalar(totals_ptrs[0])
                .scalar(levels[0])
                .scalar(tile_items)
                .scalar(levels[1]);
            // SAFETY: the arguments match uniform_add_narrow (work, out,
            // carry, n, tile_items, tiles). `work` holds n accumulators,
            // written by level 0's block scan; `out` is the caller's output
            // of n elements (a different allocation); `carry` = totals[0]
            // holds levels[1] = tiles accumulators; the grid has `tiles`
            // real blocks, one per tile, with add_threads ·
            // UNIFORM_ADD_MAX_ITEMS ≥ tile_items (uniform_add_threads), and
            // the kernel guards every index against n and exits surplus
            // blocks.
            unsafe { gpu.launch(kernel, add_configs[0], &args)? };
            continue;
        }
        let kernel = add_kernel
            .as_ref()
            .expect("loaded above for more than one level");
        let data = if level == 0 {
            output_ptr
        } else {
            totals_ptrs[level - 1]
        };
        args.scalar(data)
            .scalar(totals_ptrs[level])
            .scalar(levels[level])
            .scalar(tile_items)
            .scalar(levels[level + 1]);
        // SAFETY: the arguments match uniform_add (data, carry, n,
        // tile_items, tiles), on accumulators (the element type for 4- and
        // 8-byte types, whose level 0 is the output). `data` holds
        // levels[level] values, `carry` = totals[level] holds
        // levels[level + 1] = tiles values; the grid has tiles − 1 real
        // blocks, each handling tile b + 1 with add_threads ·
        // UNIFORM_ADD_MAX_ITEMS ≥ tile_items (checked by
        // uniform_add_threads), and the kernel guards every index against
        // n and exits surplus blocks.
        unsafe { gpu.launch(kernel, add_configs[level], &args)? };
    }
    // `totals` and `work` drop here: stream-ordered frees, after the
    // launches above.
    drop(totals);
    drop(work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_shrink_to_one_tile() {
        assert_eq!(level_lengths(1, 1024), vec![1]);
        assert_eq!(level_lengths(1024, 1024), vec![1024]);
        assert_eq!(level_lengths(1025, 1024), vec![1025, 2]);
        assert_eq!(level_lengths(1 << 20, 1024), vec![1 << 20, 1024]);
        assert_eq!(
            level_lengths((1 << 20) + 1, 1024),
            vec![(1 << 20) + 1, 1025, 2]
        );
        // Past 2^32 elements with the smallest Hillis–Steele tile: 64.
        let levels = level_lengths((1u64 << 32) + 17, 64);
        assert_eq!(levels.len(), 6);
        assert!(levels.windows(2).all(|w| w[1] == w[0].div_ceil(64)));
        assert!(*levels.last().unwrap() <= 64);
    }

    #[test]
    fn persistent_grid_is_capped_by_residency() {
        // Fewer tiles than resident blocks: one block per tile.
        let c = persistent_grid(3000, 1024, 528, 512, 4096).unwrap();
        assert_eq!(
            (c.grid, c.block, c.shared_bytes),
            ((3, 1, 1), (512, 1, 1), 4096)
        );
        // 2^28 elements in 1024-element tiles on 132 SMs × 4: 528 blocks loop.
        let c = persistent_grid(1 << 28, 1024, 528, 512, 4096).unwrap();
        assert_eq!(c.grid, (528, 1, 1));
        // Past 2^32 elements the grid stays the resident count.
        let c = persistent_grid((1 << 32) + 5, 64, 132 * 32, 32, 256).unwrap();
        assert_eq!(c.grid, (132 * 32, 1, 1));
        assert!(persistent_grid(1 << 20, 1024, 0, 512, 4096).is_err());
    }

    #[test]
    fn uniform_add_geometry() {
        assert_eq!(uniform_add_threads(64).unwrap(), 64);
        assert_eq!(uniform_add_threads(1024).unwrap(), 256);
        assert_eq!(uniform_add_threads(2048).unwrap(), 256);
        // Hillis–Steele's largest tile: 1024 threads × 4 elements.
        assert_eq!(uniform_add_threads(4096).unwrap(), 512);
        assert!(uniform_add_threads(8192).is_err());
        // Every tile a teaching variant can have fits.
        for threads in [32u32, 64, 96, 128, 160, 256, 480, 512, 992, 1024] {
            for tile in [
                crate::hillis_steele::HillisSteele.tile_items(threads),
                crate::blelloch::Blelloch::DEFAULT.tile_items(threads),
            ] {
                let add = uniform_add_threads(tile).unwrap() as u64;
                assert!(add * UNIFORM_ADD_MAX_ITEMS as u64 >= tile, "tile {tile}");
            }
        }
    }

    #[test]
    fn recursive_bytes_are_about_four_n() {
        let n = 1u64 << 28;
        let bytes = bytes_moved(n, 4, 1024);
        // Level 0: 2n + n/1024 totals + 2(n − 1024) + carries; level 1 and 2 are small.
        assert!(bytes > 16 * n - 8192);
        assert!(bytes < 16 * n + 16 * n / 256);
        // One tile: read and write once.
        assert_eq!(bytes_moved(1000, 8, 1024), 2 * 1000 * 8);
        assert_eq!(bytes_moved(0, 8, 1024), 0);
        // Two tiles exactly: block pass 2·2048 + 2 totals; add 2·1024 + 1 carry; top level 2·2.
        assert_eq!(bytes_moved(2048, 4, 1024), (4096 + 2 + 2048 + 1 + 4) * 4);
        // The same for 1-byte elements, through 4-byte accumulators: the
        // block pass reads 2048 bytes and writes 2048 accumulators and 2
        // totals; the narrowing add reads 2048 accumulators and 1 carry and
        // writes 2048 bytes; the top level scans 2 accumulators.
        let block = 2048 + 2048 * 4 + 2 * 4;
        let narrowing_add = 2048 * 4 + 4 + 2048;
        assert_eq!(
            bytes_moved(2048, 1, 1024),
            block + narrowing_add + 2 * 2 * 4
        );
        // One tile of a narrow type: straight from bytes to bytes.
        assert_eq!(bytes_moved(1000, 2, 1024), 2 * 1000 * 2);
    }
}
