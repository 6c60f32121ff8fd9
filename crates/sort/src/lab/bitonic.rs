//! Bitonic sort for any n, the lesson's sorting network.
//!
//! - **Computes** a stable sort of the lab's (image, index) pairs
//!   ([`super::pairs`]). A bitonic network is not stable by itself; pairs
//!   compare as (image, index), which are all distinct, so the network's
//!   result is the one stable order.
//! - **Network**: the all-ascending form (merging runs of h: compare i with
//!   its mirror in each block of 2h, then half-clean with strides h/2 … 1),
//!   padded logically to the next power of two N with +∞ sentinels that sit
//!   at the top and never move: every comparator reaching past n is
//!   skipped, so no padding is stored.
//! - **Work** O(n log² n) comparators; **steps** O(log² n).
//! - **Launches**: one tile sort (2048 items per block in shared memory),
//!   then for each run length h = 2048 … N/2: one global flip, log2(h/2048)
//!   global half-cleaners and one shared-memory tile merge (strides 1024 …
//!   1) — [`launch_plan`] lists them.
//! - **Bytes moved** per launch: every pair read and written once,
//!   n·(s + 4) each way (s = 4 or 8, the image size); plus the shared
//!   prepare and gather.
//! - **Memory**: the pairs, in place; 24 KiB of shared memory per tile
//!   block at most. Deterministic.

use gpu_core::launch::grid_1d;
use gpu_core::{Gpu, KernelArgs, Result};

use super::modules::{
    LabImage, LabModule, BITONIC_TILE, BITONIC_TILE_THREADS, ELEMENTWISE_THREADS,
};
use super::pairs::{PairSort, Pairs};

/// The bitonic method.
pub(crate) struct Bitonic;

/// One launch of the bitonic sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Every tile sorted in shared memory.
    TileSort,
    /// A global step of stride 2^log_stride: the flip of a merge of runs of
    /// 2^log_stride, or a half-cleaner.
    Global {
        /// log2 of the stride (the half run length of a flip).
        log_stride: u32,
        /// Mirror comparators (the first step of a merge).
        flip: bool,
    },
    /// The half-cleaners of strides `BITONIC_TILE/2 … 1` in shared memory.
    TileMerge,
}

/// The launches that sort `n ≥ 2` items.
///
/// ```text
/// n ≤ 2048: [TileSort]
/// n = 4096: [TileSort, Global { log_stride: 11, flip: true }, TileMerge]
/// ```
pub(crate) fn launch_plan(n: usize) -> Vec<Step> {
    let mut plan = vec![Step::TileSort];
    let padded = (n as u64).next_power_of_two();
    let log_tile = BITONIC_TILE.trailing_zeros();
    let mut log_half = log_tile;
    while (1u64 << log_half) < padded {
        plan.push(Step::Global {
            log_stride: log_half,
            flip: true,
        });
        for log_stride in (log_tile..log_half).rev() {
            plan.push(Step::Global {
                log_stride,
                flip: false,
            });
        }
        plan.push(Step::TileMerge);
        log_half += 1;
    }
    plan
}

impl PairSort for Bitonic {
    fn sort<I: LabImage>(gpu: &Gpu, mut pairs: Pairs<I>) -> Result<Pairs<I>> {
        let n = pairs.len() as u64;
        let image = pairs.image.view_mut().device_ptr();
        let index = pairs.index.view_mut().device_ptr();
        let suffix = I::SUFFIX;
        let tile_sort =
            LabModule::Bitonic.kernel(gpu, &format!("sort_lab_bitonic_tile_sort_{suffix}"))?;
        let tile_merge =
            LabModule::Bitonic.kernel(gpu, &format!("sort_lab_bitonic_tile_merge_{suffix}"))?;
        let global =
            LabModule::Bitonic.kernel(gpu, &format!("sort_lab_bitonic_global_{suffix}"))?;
        // One block per tile (BITONIC_TILE_THREADS threads, two items each).
        let (tile_config, _) = grid_1d(n, BITONIC_TILE_THREADS, 2, 0)?;
        // One thread per comparator of the padded network: N / 2.
        let comparators = n.next_power_of_two() / 2;
        let (global_config, _) = grid_1d(comparators, ELEMENTWISE_THREADS, 1, 0)?;
        for step in launch_plan(pairs.len()) {
            let mut args = KernelArgs::new();
            args.scalar(image).scalar(index).scalar(n);
            match step {
                Step::TileSort | Step::TileMerge => {
                    let kernel = if step == Step::TileSort {
                        &tile_sort
                    } else {
                        &tile_merge
                    };
                    // SAFETY: sort_lab_bitonic_tile_{sort,merge}_{i}(I*
                    // image, u32* index, u64 n); block b touches items
                    // [2048·b, min(2048·(b+1), n)) of both n-long buffers;
                    // surplus blocks return.
                    unsafe { gpu.launch(kernel, tile_config, &args) }?;
                }
                Step::Global { log_stride, flip } => {
                    args.scalar(comparators)
                        .scalar(log_stride)
                        .scalar(u32::from(flip));
                    // SAFETY: sort_lab_bitonic_global_{i}(I* image, u32*
                    // index, u64 n, u64 comparators, u32 log_stride, u32
                    // flip); comparator c < comparators touches lo < hi only
                    // when hi < n.
                    unsafe { gpu.launch(&global, global_config, &args) }?;
                }
            }
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launches_expected(n: usize) -> usize {
        // 1 + Σ over merges of runs h = T … N/2 of (2 + log2(h / T)).
        let padded = n.next_power_of_two();
        let tile = BITONIC_TILE as usize;
        let mut count = 1;
        let mut half = tile;
        while half < padded {
            count += 2 + (half / tile).trailing_zeros() as usize;
            half *= 2;
        }
        count
    }

    #[test]
    fn one_tile_sort_up_to_a_tile() {
        assert_eq!(launch_plan(2), vec![Step::TileSort]);
        assert_eq!(launch_plan(2048), vec![Step::TileSort]);
    }

    #[test]
    fn each_merge_flips_then_half_cleans_down_to_the_tile() {
        assert_eq!(
            launch_plan(2049),
            vec![
                Step::TileSort,
                Step::Global {
                    log_stride: 11,
                    flip: true
                },
                Step::TileMerge
            ]
        );
        assert_eq!(
            launch_plan(8192),
            vec![
                Step::TileSort,
                Step::Global {
                    log_stride: 11,
                    flip: true
                },
                Step::TileMerge,
                Step::Global {
                    log_stride: 12,
                    flip: true
                },
                Step::Global {
                    log_stride: 11,
                    flip: false
                },
                Step::TileMerge
            ]
        );
        for n in [3, 2047, 2049, 5000, 1 << 16, (1 << 20) + 1, 5 << 25] {
            assert_eq!(launch_plan(n).len(), launches_expected(n), "n = {n}");
        }
    }

    /// The network the plan launches, run on the CPU (skipping every
    /// comparator past n, as the kernels do), sorts any input.
    #[test]
    fn the_padded_network_sorts_without_storing_the_padding() {
        fn compare(v: &mut [(u32, u32)], lo: usize, hi: usize) {
            if hi < v.len() && v[hi] < v[lo] {
                v.swap(lo, hi);
            }
        }
        fn step(v: &mut [(u32, u32)], comparators: usize, log_stride: u32, flip: bool) {
            let stride = 1usize << log_stride;
            for c in 0..comparators {
                let base = (c >> log_stride) << (log_stride + 1);
                let lo = base + (c & (stride - 1));
                let hi = if flip {
                    base + 2 * stride - 1 - (c & (stride - 1))
                } else {
                    lo + stride
                };
                compare(v, lo, hi);
            }
        }
        let tile = BITONIC_TILE as usize;
        let log_tile = BITONIC_TILE.trailing_zeros();
        for n in [2usize, 3, 100, 2047, 2048, 2049, 4097, 10_000] {
            let mut state = 0x9e37_79b9u32 ^ n as u32;
            let mut v: Vec<(u32, u32)> = (0..n as u32)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    (state % 97, i)
                })
                .collect();
            let mut expected = v.clone();
            expected.sort();
            let comparators = n.next_power_of_two() / 2;
            for s in launch_plan(n) {
                match s {
                    Step::TileSort => {
                        for chunk in v.chunks_mut(tile) {
                            let count = chunk.len();
                            let mut log_half = 0;
                            while (1usize << log_half) < count {
                                step(chunk, tile / 2, log_half, true);
                                for log_j in (0..log_half).rev() {
                                    step(chunk, tile / 2, log_j, false);
                                }
                                log_half += 1;
                            }
                        }
                    }
                    Step::TileMerge => {
                        for chunk in v.chunks_mut(tile) {
                            for log_j in (0..log_tile).rev() {
                                step(chunk, tile / 2, log_j, false);
                            }
                        }
                    }
                    Step::Global { log_stride, flip } => {
                        step(&mut v, comparators, log_stride, flip)
                    }
                }
            }
            assert_eq!(v, expected, "n = {n}");
        }
    }
}
