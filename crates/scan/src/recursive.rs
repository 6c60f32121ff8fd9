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

use gpu_core::launch::{grid_1d, spread_blocks};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, KernelArgs, LaunchConfig,
    ModuleSource, Operator, Result,
};

use crate::kind::ScanKind;
use crate::policy::{UNIFORM_ADD_MAX_ITEMS, UNIFORM_ADD_MAX_THREADS, UNIFORM_ADD_THREADS};

/// A block-level scan kernel the driver can run: it scans tiles of
/// `tile_items(block_threads)` elements with the entry signature
/// `(const T* in, T* out, T* totals, u64 n, u32 exclusive, u32 has_seed, T seed)`
/// (see `kernels/cuda/scan/recursive.cuh`).
pub(crate) trait BlockScan {
    /// Elements one block scans.
    fn tile_items(&self, block_threads: u32) -> u64;
    /// Dynamic shared memory per block, in bytes.
    fn shared_bytes(&self, block_threads: u32, element_bytes: u64) -> u64;
    /// The kernel module for `T` and `op`.
    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource;
    /// The block-scan entry point in [`BlockScan::module`].
    fn entry<T: Element, O: Operator<T>>(&self, op: &O) -> String;
    /// Whether the kernel loops over tiles (the pipelined tile loop of
    /// `scan/recursive.cuh`, on a persistent grid) rather than scanning the
    /// one tile of its block index.
    fn loops_over_tiles(&self) -> bool;
}

/// Parameter list of every block-scan entry point.
pub(crate) fn block_entry_params<T: Element>() -> String {
    format!(
        "const {t}* in, {t}* out, {t}* totals, u64 n, u32 exclusive, u32 has_seed, {t} seed",
        t = T::CUDA_TYPE
    )
}

/// Starts a module that uses `scan/recursive.cuh`: the operator functor
/// `op_t`, the uniform-add constant, the shared header.
pub(crate) fn recursive_module<T: Element, O: Operator<T>>(name: String, op: &O) -> ModuleSource {
    ModuleSource::new(name)
        .operator::<T, O>(op, "op_t")
        .define("UNIFORM_ADD_MAX_ITEMS", UNIFORM_ADD_MAX_ITEMS)
        .source(parprims_kernels::SCAN_RECURSIVE)
}

/// Entry name of the uniform-add kernel.
pub(crate) fn uniform_add_entry<T: Element, O: Operator<T>>(op: &O) -> String {
    format!("scan_uniform_add_{}_{}", T::SUFFIX, op.name())
}

/// The uniform-add module for `T` and `op` (shared by the three recursive
/// variants, so it is compiled once).
pub(crate) fn uniform_add_module<T: Element, O: Operator<T>>(op: &O) -> ModuleSource {
    recursive_module::<T, O>(format!("scan_uniform_add_{}_{}", T::SUFFIX, op.name()), op).entry(
        uniform_add_entry::<T, O>(op),
        &format!(
            "{t}* data, const {t}* carry, u64 n, u64 tile_items, u64 tiles",
            t = T::CUDA_TYPE
        ),
        &format!(
            "uniform_add<{t}, op_t>(data, carry, n, tile_items, tiles)",
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
pub(crate) fn bytes_moved(n: u64, element_bytes: u64, tile_items: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let mut elements = 0u64;
    for m in level_lengths(n, tile_items) {
        let tiles = m.div_ceil(tile_items);
        elements += 2 * m;
        if tiles > 1 {
            elements += tiles; // totals written
            elements += 2 * (m - tile_items) + (tiles - 1); // uniform add
        }
    }
    elements * element_bytes
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
    let shared_bytes = u32::try_from(block_scan.shared_bytes(block_threads, T::BYTES as u64))
        .map_err(|_| Error::invalid("block_threads", "shared memory per block overflows"))?;
    let levels = level_lengths(n, tile_items);

    // Everything fallible before the first launch.
    // From the context's kernel store: the entry names the family, and the
    // operator key the type and operator (every block size shares a module).
    let operator = crate::operator_key::<T, O>(op);
    let block_entry = block_scan.entry::<T, O>(op);
    let block_kernel = gpu.stored_kernel(
        &format!("scan/block/{block_entry}/{operator}"),
        &block_entry,
        || block_scan.module::<T, O>(op),
    )?;
    let add_kernel = if levels.len() > 1 {
        Some(gpu.stored_kernel(
            &format!("scan/uniform_add/{operator}"),
            &uniform_add_entry::<T, O>(op),
            || uniform_add_module::<T, O>(op),
        )?)
    } else {
        None
    };
    // Block scans, one grid per level: for a kernel that loops over tiles, a
    // persistent grid of min(tiles, resident blocks per SM × SMs) blocks
    // (`persistent_grid`); otherwise one block per tile, ⌈m / tile_items⌉
    // blocks (spread over y past 2^31 − 1).
    let block_configs: Vec<LaunchConfig> = if block_scan.loops_over_tiles() {
        let resident = block_kernel.resident_blocks_per_sm(block_threads, shared_bytes as usize)?;
        let resident_blocks = u64::from(resident) * u64::from(gpu.info().sm_count);
        levels
            .iter()
            .map(|&m| persistent_grid(m, tile_items, resident_blocks, block_threads, shared_bytes))
            .collect::<Result<_>>()?
    } else {
        let items_per_thread = (tile_items / block_threads as u64) as u32;
        levels
            .iter()
            .map(|&m| grid_1d(m, block_threads, items_per_thread, shared_bytes).map(|(c, _)| c))
            .collect::<Result<_>>()?
    };
    // Uniform adds: one block per tile t ≥ 1 of each level below the top.
    let add_threads = uniform_add_threads(tile_items)?;
    let add_configs: Vec<LaunchConfig> = levels[1..]
        .iter()
        .map(|&tiles| {
            Ok(LaunchConfig {
                grid: spread_blocks(tiles - 1)?,
                block: (add_threads, 1, 1),
                shared_bytes: 0,
            })
        })
        .collect::<Result<_>>()?;
    // totals[l] receives level l's tile totals and is the array level l + 1 scans.
    let totals: Vec<DeviceBuffer<T>> = levels[1..]
        .iter()
        // SAFETY: level l's block scan writes every element of totals[l]
        // (one per tile) before the next level or the uniform add reads it.
        .map(|&m| unsafe { DeviceBuffer::<T>::uninit(gpu, m as usize) })
        .collect::<Result<_>>()?;
    let totals_ptrs: Vec<u64> = totals.iter().map(|b| b.view().device_ptr()).collect();

    let (exclusive, seed) = match kind {
        ScanKind::Inclusive => (false, None),
        ScanKind::Exclusive { initial } => (true, Some(initial)),
    };
    let output_ptr = output.device_ptr();
    let input_ptr = input.map_or(output_ptr, |v| v.device_ptr());

    // Down the levels: block scans. Level 0 reads `input` and writes
    // `output`; level l ≥ 1 scans totals[l − 1] in place, inclusively, with
    // the same seed.
    for (level, &m) in levels.iter().enumerate() {
        let (src, dst) = if level == 0 {
            (input_ptr, output_ptr)
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
        // SAFETY: the arguments match block_entry_params (in, out, totals,
        // n, exclusive, has_seed, seed). `src` and `dst` hold m elements
        // (the caller's views, validated to the same length, or totals[l−1]
        // of length m); `totals_ptr` is null on the top level (one tile) and
        // otherwise totals[level] with ⌈m / tile_items⌉ elements, one per
        // tile, each written by the one block that scans that tile; the
        // kernel guards every index against m and exits surplus blocks.
        // src == dst is allowed: each element is read, then written, by
        // the one thread that owns it, and blocks own disjoint tiles.
        unsafe { gpu.launch(&block_kernel, block_configs[level], &args)? };
    }

    // Back up: uniform adds, top level first, so that totals[l] is final
    // before level l uses it as carries.
    if let Some(add_kernel) = add_kernel {
        for level in (0..levels.len() - 1).rev() {
            let data = if level == 0 {
                output_ptr
            } else {
                totals_ptrs[level - 1]
            };
            let mut args = KernelArgs::new();
            args.scalar(data)
                .scalar(totals_ptrs[level])
                .scalar(levels[level])
                .scalar(tile_items)
                .scalar(levels[level + 1]);
            // SAFETY: the arguments match uniform_add (data, carry, n,
            // tile_items, tiles). `data` holds levels[level] elements,
            // `carry` = totals[level] holds levels[level + 1] = tiles
            // elements; the grid has tiles − 1 real blocks, each handling
            // tile b + 1 with add_threads · UNIFORM_ADD_MAX_ITEMS ≥
            // tile_items (checked by uniform_add_threads), and the kernel
            // guards every index against n and exits surplus blocks.
            unsafe { gpu.launch(&add_kernel, add_configs[level], &args)? };
        }
    }
    // `totals` drop here: stream-ordered frees, after the launches above.
    drop(totals);
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
                crate::blelloch::Blelloch.tile_items(threads),
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
        assert_eq!(bytes_moved(2048, 1, 1024), 4096 + 2 + 2048 + 1 + 4);
    }
}
