//! `ScanAlgorithm::BlellochPadded`: the Blelloch block scan with
//! bank-conflict padding, under the recursive multi-block driver.
//!
//! The same up-sweep / down-sweep as [`crate::ScanAlgorithm::Blelloch`]
//! (tile T = 4B elements for B threads, a power of two, over a tree of 2B
//! leaves in shared memory), but shared index i
//! lives at `i + (i >> LOG_NUM_BANKS)` (GPU Gems 3 §39.2.3,
//! CONFLICT_FREE_OFFSET): one padding slot after every 32 elements, so
//! accesses at stride 32, 64, … no longer fall into one bank. For 4-byte
//! types this removes the tree's 32-way conflicts down to at most 2-way; for
//! 8-byte types (two banks per element) it halves them.
//!
//! - work: ≈ 2n combines; steps: 2·log2 T levels per tile, behind
//!   2·max(log2 B − 6, 0) + 2 block barriers (the levels inside a thread's
//!   elements and the pair's level run in registers, the levels with at most
//!   32 active threads in warp 0 behind warp barriers; see
//!   [`crate::ScanAlgorithm::Blelloch`]);
//! - global bytes moved: ≈ 4n·sizeof(T) plus the higher levels, see
//!   [`crate::bytes_moved`];
//! - launches: 2·levels − 1;
//! - shared memory per block: 2B + ⌊(2B − 1)/32⌋ accumulators (the element
//!   type, or 4 bytes for the 1- and 2-byte types);
//! - in place: yes; deterministic: yes.
//!
//! Kernel: `kernels/cuda/scan/blelloch.cu` (template parameter PADDED = true).

use gpu_core::{Element, ModuleSource, Operator};

use crate::blelloch::{
    blelloch_entry, blelloch_family, blelloch_leaves, blelloch_module, blelloch_tile_items,
};
use crate::policy::{BLELLOCH_ITEMS_PER_THREAD, LOG_NUM_BANKS};
use crate::recursive::{BlockScan, Stage};

/// The padded Blelloch block scan, for the recursive driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlellochPadded {
    /// Elements per thread: an even power of two, 2 … 16.
    pub(crate) items_per_thread: u32,
}

impl BlellochPadded {
    /// The policy's shape ([`BLELLOCH_ITEMS_PER_THREAD`]).
    pub(crate) const DEFAULT: BlellochPadded = BlellochPadded {
        items_per_thread: BLELLOCH_ITEMS_PER_THREAD,
    };
}

/// Shared slots a padded tree of `leaves` needs: the padded index of the
/// last leaf, plus one.
pub(crate) fn padded_slots(leaves: u64) -> u64 {
    let last = leaves - 1;
    last + (last >> LOG_NUM_BANKS) + 1
}

impl BlockScan for BlellochPadded {
    fn tile_items(&self, block_threads: u32) -> u64 {
        blelloch_tile_items(block_threads, self.items_per_thread)
    }

    fn shared_bytes(&self, block_threads: u32, value_bytes: u64) -> u64 {
        padded_slots(blelloch_leaves(block_threads)) * value_bytes
    }

    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource {
        let family = blelloch_family("blelloch_padded", self.items_per_thread);
        blelloch_module::<T, O>(&family, true, self.items_per_thread, op)
    }

    fn loops_over_tiles(&self) -> bool {
        true
    }

    fn entry<T: Element, O: Operator<T>>(&self, op: &O, stage: Stage) -> String {
        let family = blelloch_family("blelloch_padded", self.items_per_thread);
        blelloch_entry::<T, O>(&family, op, stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::Sum;

    #[test]
    fn padding_adds_one_slot_per_32() {
        assert_eq!(padded_slots(64), 64 + 1);
        assert_eq!(padded_slots(1024), 1024 + 31);
        assert_eq!(padded_slots(2048), 2048 + 63);
        assert_eq!(
            BlellochPadded::DEFAULT.shared_bytes(512, 8),
            (1024 + 31) * 8
        );
        // Conflict-free mapping: slots are distinct and increasing.
        let slots: Vec<u64> = (0..2048u64).map(|i| i + (i >> LOG_NUM_BANKS)).collect();
        assert!(slots.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*slots.last().unwrap() + 1, padded_slots(2048));
    }

    #[test]
    fn strided_tree_accesses_spread_over_banks() {
        // Up-sweep at stride 32 (4-byte words): right children s·(2t+2) − 1
        // for the 32 threads of a warp. Unpadded they share one bank;
        // padded they use at least 16 different banks.
        let stride = 32u64;
        let banks = |pad: bool| {
            let mut seen: Vec<u64> = (0..32u64)
                .map(|t| {
                    let i = stride * (2 * t + 2) - 1;
                    let slot = if pad { i + (i >> LOG_NUM_BANKS) } else { i };
                    slot % 32
                })
                .collect();
            seen.sort_unstable();
            seen.dedup();
            seen.len()
        };
        assert_eq!(banks(false), 1);
        assert!(banks(true) >= 16, "{}", banks(true));
    }

    /// Shared-memory wavefronts of one warp instruction whose lanes access
    /// 4-byte words `addresses`: the most distinct words in any one bank.
    fn wavefronts(addresses: impl Iterator<Item = u64>) -> u64 {
        let mut per_bank: Vec<Vec<u64>> = vec![Vec::new(); 32];
        for a in addresses {
            let bank = &mut per_bank[(a % 32) as usize];
            if !bank.contains(&a) {
                bank.push(a);
            }
        }
        per_bank.iter().map(|b| b.len() as u64).max().unwrap_or(0)
    }

    /// Wavefronts of the instructions issued by the first `active` threads.
    fn instruction(active: u64, address: impl Fn(u64) -> u64) -> u64 {
        (0..active)
            .step_by(32)
            .map(|w| wavefronts((w..(w + 32).min(active)).map(&address)))
            .sum()
    }

    /// Shared-memory wavefronts one block of `threads` spends on the tree of
    /// a tile of 4-byte elements (2·threads leaves, whatever the elements per
    /// thread), following scan/blelloch.cu access by access: thread t's leaf
    /// pair (2t, 2t+1) is combined in registers and stored to slot 2t+1, the
    /// tree's other levels run in shared memory, and each thread reads slot
    /// 2t+1 back at the end.
    fn block_wavefronts(threads: u64, padded: bool) -> u64 {
        let slot = |i: u64| if padded { i + (i >> LOG_NUM_BANKS) } else { i };
        let pair = |t: u64| slot(2 * t + 1);
        // The leaf store and the final read.
        let mut total = 2 * instruction(threads, pair);
        // Up-sweep, stride 2 … B (d = B/2 … 1 active threads):
        // s[right] = s[left] ⊕ s[right], two reads and one write.
        let (mut stride, mut d) = (2u64, threads / 2);
        while d > 0 {
            total += instruction(d, |t| slot(stride * (2 * t + 1) - 1));
            total += 2 * instruction(d, |t| slot(stride * (2 * t + 2) - 1));
            stride <<= 1;
            d >>= 1;
        }
        // Down-sweep, stride B … 2 (d = 1 … B/2): two reads, two writes.
        let (mut stride, mut d) = (threads, 1u64);
        while d < threads {
            total += 2 * instruction(d, |t| slot(stride * (2 * t + 1) - 1));
            total += 2 * instruction(d, |t| slot(stride * (2 * t + 2) - 1));
            stride >>= 1;
            d <<= 1;
        }
        total
    }

    const MODEL_UNPADDED: u64 = 1177;
    const MODEL_PADDED: u64 = 172;

    #[test]
    fn padding_cuts_shared_memory_wavefronts() {
        // 512 threads, a tree of 1024 leaves over a 2048-element tile (four
        // elements per thread): ≈ 0.57 wavefronts per element unpadded,
        // ≈ 0.084 padded. ncu on the H100 (2^26 `i32`, docs/scan.md)
        // counted 39,520,956 and 6,166,007 shared wavefronts over 32,768
        // tiles: 1206 and 188 per tile, within 3 % and 10 % of the model
        // (which leaves out thread 0's read and reset of the root).
        assert_eq!(block_wavefronts(512, false), MODEL_UNPADDED);
        assert_eq!(block_wavefronts(512, true), MODEL_PADDED);
        for threads in [32, 64, 128, 256, 1024] {
            let (plain, padded) = (
                block_wavefronts(threads, false),
                block_wavefronts(threads, true),
            );
            // Small tiles have few conflicting levels; large ones gain ~4×.
            let gain = if threads >= 128 { 3 } else { 1 };
            assert!(padded * gain < plain, "{threads}: {padded} vs {plain}");
        }
    }

    #[test]
    fn module_names_differ_from_plain_blelloch() {
        let m = BlellochPadded::DEFAULT.module::<u32, _>(&Sum);
        assert_eq!(m.name(), "scan_blelloch_padded_u32_sum");
        assert_eq!(m.entries(), ["blelloch_padded_block_u32_sum"]);
        assert!(m.code().contains("blelloch_block<u32, u32, op_t, true>"));
        let m = BlellochPadded::DEFAULT.module::<gpu_core::bf16, _>(&Sum);
        assert_eq!(m.entries()[1], "blelloch_padded_block_bf16_sum_to_acc");
        assert!(m.code().contains("blelloch_block<f32, f32, op_t, true>"));
    }
}
