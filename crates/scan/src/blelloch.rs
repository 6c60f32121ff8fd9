//! `ScanAlgorithm::Blelloch`: the work-efficient up-sweep / down-sweep block
//! scan (Blelloch 1990) in shared memory, two elements per thread, under the
//! recursive multi-block driver.
//!
//! Computes an inclusive or exclusive scan of any length. One block of B
//! threads (a power of two) scans a tile of T = 2B elements; thread t owns
//! the leaf pair 2t, 2t+1 (one two-element vector load and store when the
//! array is aligned to two elements). The up-sweep builds a reduction tree
//! in place (log2 T levels, half the threads idle at each deeper level), the
//! root is saved as the tile total and cleared to the identity, and the
//! down-sweep pushes prefixes back down (log2 T levels). The result is the
//! exclusive scan; the inclusive one adds each element's own input. The
//! driver (`recursive.rs`) scans the tile totals by the same method and
//! folds them in with a uniform add.
//!
//! The tree is the textbook's; three things make it fast on a GPU whose
//! block scan is bound by instruction issue, not by memory:
//! - the leaf level of both sweeps is the thread's own pair, done in
//!   registers (no shared-memory round trip, no barrier);
//! - the levels with at most 32 active threads run inside warp 0 behind warp
//!   barriers, while the other 15 warps (B = 512) skip them instead of
//!   passing a block barrier at each;
//! - the grid is persistent, and each block loads its next tile's pair into
//!   registers before scanning the current one (the pipelined tile loop of
//!   `kernels/cuda/scan/recursive.cuh`).
//!
//! - work: ≈ 2n combines (work-efficient); steps: 2·log2 T levels per tile
//!   behind 2·max(log2 B − 6, 0) + 2 block barriers, ⌈log_T n⌉ levels of
//!   recursion;
//! - global bytes moved: ≈ 4n·sizeof(T) plus the higher levels, see
//!   [`crate::bytes_moved`];
//! - launches: 2·levels − 1;
//! - shared memory per block: T accumulators (the element type, or 4 bytes
//!   for the 1- and 2-byte types; 4 KiB for B = 512, `i32`);
//! - bank conflicts: at stride s the active threads of a warp touch words 2s
//!   apart, a min(2s, 32)-way conflict (on the H100 these cost more
//!   shared-memory cycles than the whole padded scan): what
//!   [`ScanAlgorithm::BlellochPadded`](crate::ScanAlgorithm::BlellochPadded)
//!   removes;
//! - in place: yes; deterministic: yes.
//!
//! Kernel: `kernels/cuda/scan_blelloch.cu` (template parameter PADDED = false).

use gpu_core::{Element, ModuleSource, Operator};

use crate::policy::{BLELLOCH_ITEMS_PER_THREAD, LOG_NUM_BANKS};
use crate::recursive::{block_entry_params, recursive_module, stages, BlockScan, Stage};

/// Tile size of both Blelloch variants.
pub(crate) fn blelloch_tile_items(block_threads: u32) -> u64 {
    block_threads as u64 * BLELLOCH_ITEMS_PER_THREAD as u64
}

/// A Blelloch block-scan module: `family` names it (`blelloch` or
/// `blelloch_padded`), `padded` picks the template parameter; one entry per
/// stage.
pub(crate) fn blelloch_module<T: Element, O: Operator<T>>(
    family: &str,
    padded: bool,
    op: &O,
) -> ModuleSource {
    let module = recursive_module::<T, O>(format!("scan_{family}_{}_{}", T::SUFFIX, op.name()), op)
        .define("LOG_NUM_BANKS", LOG_NUM_BANKS)
        .source(parprims_kernels::SCAN_BLELLOCH);
    stages::<T>().iter().fold(module, |module, &stage| {
        let (load, store) = stage.types::<T>();
        module.entry(
            blelloch_entry::<T, O>(family, op, stage),
            &block_entry_params::<T>(stage),
            &format!(
                "blelloch_block<{load}, {store}, op_t, {padded}>(in, out, totals, n, exclusive, \
                 has_seed, seed)"
            ),
            Some(crate::policy::MAX_BLOCK_THREADS),
        )
    })
}

/// Entry name of a Blelloch block scan's `stage`.
pub(crate) fn blelloch_entry<T: Element, O: Operator<T>>(
    family: &str,
    op: &O,
    stage: Stage,
) -> String {
    format!(
        "{family}_block_{}_{}{}",
        T::SUFFIX,
        op.name(),
        stage.suffix()
    )
}

/// The unpadded Blelloch block scan, for the recursive driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blelloch;

impl BlockScan for Blelloch {
    fn tile_items(&self, block_threads: u32) -> u64 {
        blelloch_tile_items(block_threads)
    }

    fn shared_bytes(&self, block_threads: u32, value_bytes: u64) -> u64 {
        self.tile_items(block_threads) * value_bytes
    }

    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource {
        blelloch_module::<T, O>("blelloch", false, op)
    }

    fn loops_over_tiles(&self) -> bool {
        true
    }

    fn entry<T: Element, O: Operator<T>>(&self, op: &O, stage: Stage) -> String {
        blelloch_entry::<T, O>("blelloch", op, stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::Max;

    #[test]
    fn geometry() {
        assert_eq!(Blelloch.tile_items(512), 1024);
        assert_eq!(Blelloch.shared_bytes(512, 4), 4096);
        let m = Blelloch.module::<f64, _>(&Max);
        assert_eq!(m.entries(), ["blelloch_block_f64_max"]);
        assert!(m.code().contains("blelloch_block<f64, f64, op_t, false>"));
        let m = Blelloch.module::<gpu_core::f16, _>(&Max);
        assert_eq!(
            m.entries(),
            [
                "blelloch_block_f16_max",
                "blelloch_block_f16_max_to_acc",
                "blelloch_block_f16_max_acc"
            ]
        );
        assert!(m.code().contains("blelloch_block<f16, f32, op_t, false>"));
    }
}
