//! `ScanAlgorithm::HillisSteele`: the Hillis–Steele block scan,
//! double-buffered in shared memory, under the recursive multi-block driver.
//!
//! Computes an inclusive or exclusive scan of any length. One block of B
//! threads scans a tile of T = 4B elements (thread t owns positions t + k·B,
//! k < 4, so loads and stores are coalesced; four per thread because the
//! scan is bound by instruction issue and each step's barrier and loop cost
//! is per thread, see [`crate::policy::HILLIS_STEELE_ITEMS_PER_THREAD`]) in
//! ⌈log2 T⌉ steps
//! `v[p] = buf[p − d] ⊕ v[p]`, reading one shared buffer and writing the
//! other, one barrier per step. The driver (`recursive.rs`) scans the tile
//! totals by the same method and folds them in with a uniform add.
//!
//! - work: O(n log T) combines (not work-efficient: every step touches every
//!   element); steps: ⌈log2 T⌉ + 1 barriers per tile, ⌈log_T n⌉ levels;
//! - grid: one block per tile (a persistent, pipelined grid was 4 % slower
//!   on the H100: the scan is issue-bound, not waiting on its loads);
//! - global bytes moved: ≈ 4n·sizeof(T) (read + write in the block scan and
//!   in the uniform add) plus the higher levels, see [`crate::bytes_moved`];
//! - launches: 2·levels − 1;
//! - shared memory per block: 2T accumulators (the element type, or 4 bytes
//!   for the 1- and 2-byte types; 32 KiB for B = 512, `f64`; 64 KiB for
//!   B = 1024, where the launch opts in past the 48 KiB default);
//! - bank conflicts: none beyond the hardware minimum (consecutive threads,
//!   consecutive words);
//! - in place: yes; deterministic: yes.
//!
//! Kernel: `kernels/cuda/scan_hillis_steele.cu`.

use gpu_core::{Element, ModuleSource, Operator};

use crate::policy::HILLIS_STEELE_ITEMS_PER_THREAD;
use crate::recursive::{block_entry_params, recursive_module, stages, BlockScan, Stage};

/// The Hillis–Steele block scan, for the recursive driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HillisSteele;

impl BlockScan for HillisSteele {
    fn tile_items(&self, block_threads: u32) -> u64 {
        block_threads as u64 * HILLIS_STEELE_ITEMS_PER_THREAD as u64
    }

    fn shared_bytes(&self, block_threads: u32, value_bytes: u64) -> u64 {
        // Two buffers of one tile each.
        2 * self.tile_items(block_threads) * value_bytes
    }

    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource {
        let module = recursive_module::<T, O>(
            format!("scan_hillis_steele_{}_{}", T::SUFFIX, op.name()),
            op,
        )
        .define("HS_ITEMS_PER_THREAD", HILLIS_STEELE_ITEMS_PER_THREAD)
        .source(parprims_kernels::SCAN_HILLIS_STEELE);
        stages::<T>().iter().fold(module, |module, &stage| {
            let (load, store) = stage.types::<T>();
            module.entry(
                self.entry::<T, O>(op, stage),
                &block_entry_params::<T>(stage),
                &format!(
                    "hillis_steele_block<{load}, {store}, op_t>(in, out, totals, n, exclusive, \
                     has_seed, seed)"
                ),
                Some(crate::policy::MAX_BLOCK_THREADS),
            )
        })
    }

    fn loops_over_tiles(&self) -> bool {
        false
    }

    fn entry<T: Element, O: Operator<T>>(&self, op: &O, stage: Stage) -> String {
        format!(
            "hillis_steele_block_{}_{}{}",
            T::SUFFIX,
            op.name(),
            stage.suffix()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::Sum;

    #[test]
    fn geometry() {
        assert_eq!(HillisSteele.tile_items(512), 2048);
        assert_eq!(HillisSteele.shared_bytes(512, 4), 16384);
        // The largest configuration: 64 KiB, past the 48 KiB default (the
        // launch opts in) and within the opt-in limit of every GPU since
        // Volta (96 KiB and more).
        assert_eq!(HillisSteele.shared_bytes(1024, 8), 64 * 1024);
        let m = HillisSteele.module::<i32, _>(&Sum);
        assert_eq!(m.entries(), ["hillis_steele_block_i32_sum"]);
        assert!(m.code().contains("#define HS_ITEMS_PER_THREAD 4"));
        assert!(m.code().contains("hillis_steele_block<i32, i32, op_t>"));
        // A narrow type: the three stages, on its 4-byte accumulator.
        let m = HillisSteele.module::<i8, _>(&Sum);
        assert_eq!(
            m.entries(),
            [
                "hillis_steele_block_i8_sum",
                "hillis_steele_block_i8_sum_to_acc",
                "hillis_steele_block_i8_sum_acc"
            ]
        );
        assert!(m.code().contains("hillis_steele_block<i8, i32, op_t>"));
        assert!(m.code().contains("hillis_steele_block<i32, i32, op_t>"));
    }
}
