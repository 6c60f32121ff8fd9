//! Merge sort: a block sort of each tile, then merge passes partitioned by
//! merge path.
//!
//! - **Computes** a stable sort of the lab's (image, index) pairs
//!   ([`super::pairs`]).
//! - **Block sort**: bitonic sort of each 2048-item tile in shared memory,
//!   comparing (image, index), so each tile is stably sorted (the kernel
//!   of [`super::bitonic`]).
//! - **Merge passes**: runs of r = 2048, 4096, … merge pairwise into runs
//!   of 2r, one pass per doubling. Each block writes 2048 outputs: it finds
//!   where its first and last output diagonals cross the merge path by
//!   binary search (ties take the left run: stable, since the left run's
//!   keys came first), loads the items between into shared memory, and
//!   each of its 256 threads searches its own 8-output diagonal there and
//!   merges serially. Every block merges the same number of outputs,
//!   whatever the data: the lesson's answer to the last merges, where
//!   one block per merge would leave the GPU idle.
//! - **Work** O(n log n); **steps** O(log n · log 2048).
//! - **Launches**: 1 + ⌈log2(⌈n / 2048⌉)⌉ ([`merge_passes`]).
//! - **Bytes moved** per pass: n·(s + 4) read and written (s = 4 or 8, the
//!   image size), plus the searches' few reads; the block sort the same
//!   once. Plus the shared prepare and gather.
//! - **Memory**: two sets of pairs (ping-pong). Deterministic.

use gpu_core::launch::grid_1d;
use gpu_core::{Gpu, KernelArgs, Result};

use super::modules::{
    LabImage, LabModule, BITONIC_TILE, BITONIC_TILE_THREADS, MERGE_ITEMS, MERGE_THREADS,
};
use super::pairs::{PairSort, Pairs};

/// The merge-path method.
pub(crate) struct MergePath;

/// The run lengths the merge passes start from: 2048, 4096, … while a run
/// is shorter than n (empty for n ≤ 2048).
///
/// ```text
/// merge_passes(2049) = [2048], merge_passes(8192) = [2048, 4096]
/// ```
pub(crate) fn merge_passes(n: usize) -> Vec<u64> {
    let mut runs = Vec::new();
    let mut run = BITONIC_TILE as u64;
    while run < n as u64 {
        runs.push(run);
        run *= 2;
    }
    runs
}

impl PairSort for MergePath {
    fn sort<I: LabImage>(gpu: &Gpu, mut pairs: Pairs<I>) -> Result<Pairs<I>> {
        let n = pairs.len() as u64;
        let suffix = I::SUFFIX;
        let tile_sort =
            LabModule::Merge.kernel(gpu, &format!("sort_lab_merge_tile_sort_{suffix}"))?;
        let (tile_config, _) = grid_1d(n, BITONIC_TILE_THREADS, 2, 0)?;
        let mut args = KernelArgs::new();
        args.scalar(pairs.image.view_mut().device_ptr())
            .scalar(pairs.index.view_mut().device_ptr())
            .scalar(n);
        // SAFETY: sort_lab_merge_tile_sort_{i}(I* image, u32* index, u64 n);
        // block b touches items [2048·b, min(2048·(b+1), n)) of both n-long
        // buffers; surplus blocks return.
        unsafe { gpu.launch(&tile_sort, tile_config, &args) }?;

        let runs = merge_passes(pairs.len());
        if runs.is_empty() {
            return Ok(pairs);
        }
        let pass = LabModule::Merge.kernel(gpu, &format!("sort_lab_merge_pass_{suffix}"))?;
        // One block of MERGE_THREADS per 2048 outputs.
        let (pass_config, _) = grid_1d(n, MERGE_THREADS, MERGE_ITEMS, 0)?;
        let mut src = pairs;
        let mut dst = src.partner(gpu)?;
        for run in runs {
            let mut args = KernelArgs::new();
            args.scalar(src.image.view().device_ptr())
                .scalar(src.index.view().device_ptr())
                .scalar(dst.image.view_mut().device_ptr())
                .scalar(dst.index.view_mut().device_ptr())
                .scalar(n)
                .scalar(run);
            // SAFETY: sort_lab_merge_pass_{i}(const I* src_image, const u32*
            // src_index, I* dst_image, u32* dst_index, u64 n, u64 run); block
            // b writes outputs [2048·b, min(2048·(b+1), n)) and reads only
            // items < n of its pair of runs; all four buffers hold n items,
            // src and dst are distinct allocations.
            unsafe { gpu.launch(&pass, pass_config, &args) }?;
            std::mem::swap(&mut src, &mut dst);
        }
        Ok(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_per_doubling_of_the_tile_until_one_run() {
        assert!(merge_passes(2).is_empty());
        assert!(merge_passes(2048).is_empty());
        assert_eq!(merge_passes(2049), vec![2048]);
        assert_eq!(merge_passes(4096), vec![2048]);
        assert_eq!(merge_passes(8192), vec![2048, 4096]);
        assert_eq!(merge_passes(1 << 28).len(), 17);
        assert_eq!(BITONIC_TILE, MERGE_THREADS * MERGE_ITEMS);
    }

    /// Merge path on the CPU, as each block and thread computes it: the
    /// split counts of consecutive diagonals merge two sorted runs into
    /// exactly the stable merge.
    #[test]
    fn merge_path_splits_give_the_stable_merge() {
        fn search(a: &[(u32, u32)], b: &[(u32, u32)], diagonal: usize) -> usize {
            let (mut lo, mut hi) = (diagonal.saturating_sub(b.len()), diagonal.min(a.len()));
            while lo < hi {
                let mid = (lo + hi) / 2;
                if a[mid].0 <= b[diagonal - 1 - mid].0 {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        }
        for (la, lb) in [(0usize, 5usize), (5, 0), (7, 9), (64, 3), (100, 100)] {
            let a: Vec<(u32, u32)> = (0..la as u32).map(|i| (i / 3, i)).collect();
            let b: Vec<(u32, u32)> = (0..lb as u32).map(|i| (i / 2, 1000 + i)).collect();
            let mut expected: Vec<(u32, u32)> = a.iter().chain(&b).copied().collect();
            expected.sort_by_key(|p| p.0); // stable: a before b on ties
            let tile = 8;
            let mut merged = Vec::new();
            let mut d = 0;
            while d < la + lb {
                let end = (d + tile).min(la + lb);
                let (a0, a1) = (search(&a, &b, d), search(&a, &b, end));
                let (mut ai, mut bi) = (a0, d - a0);
                for _ in d..end {
                    let take_a = bi >= end - a1 || (ai < a1 && a[ai].0 <= b[bi].0);
                    merged.push(if take_a { a[ai] } else { b[bi] });
                    if take_a {
                        ai += 1;
                    } else {
                        bi += 1;
                    }
                }
                d = end;
            }
            assert_eq!(merged, expected, "({la}, {lb})");
        }
    }
}
