//! Odd–even transposition ("brick") sort, the lesson's first sort.
//!
//! - **Computes** a stable sort of the lab's (image, index) pairs
//!   ([`super::pairs`]): phase p compare-exchanges the pairs (2t + p mod 2,
//!   2t + p mod 2 + 1) and swaps only when the right image is strictly
//!   smaller, so equal keys never pass each other.
//! - **Work** O(n²) compare-exchanges (n phases of n/2); **steps** O(n).
//! - **Launches**: one for n ≤ 2048 (one block runs every phase in shared
//!   memory), otherwise one per phase: n launches.
//! - **Bytes moved** per global phase: every pair read, swapped ones
//!   written: n·(s + 4) read and up to as much written (s = 4 or 8, the
//!   image size); n phases in all. Plus the shared prepare and gather.
//! - **Memory**: the pairs; in place on them. Deterministic.
//!
//! Quadratic work and one launch per phase: the lab's table stops it at a
//! few hundred thousand keys (`examples/sort.rs` names the cut-off).

use gpu_core::launch::{grid_1d, LaunchConfig};
use gpu_core::{Gpu, KernelArgs, Result};

use super::modules::{LabImage, LabModule, ELEMENTWISE_THREADS, ODD_EVEN_BLOCK_ITEMS};
use super::pairs::{PairSort, Pairs};

/// The odd–even transposition method.
pub(crate) struct OddEven;

/// Whether `n` items sort in one block (all phases in shared memory).
pub(crate) fn fits_one_block(n: usize) -> bool {
    n <= ODD_EVEN_BLOCK_ITEMS as usize
}

impl PairSort for OddEven {
    fn sort<I: LabImage>(gpu: &Gpu, mut pairs: Pairs<I>) -> Result<Pairs<I>> {
        let n = pairs.len();
        let image = pairs.image.view_mut().device_ptr();
        let index = pairs.index.view_mut().device_ptr();
        if fits_one_block(n) {
            let kernel = LabModule::OddEven
                .kernel(gpu, &format!("sort_lab_odd_even_block_{}", I::SUFFIX))?;
            let config = LaunchConfig {
                grid: (1, 1, 1),
                block: (ODD_EVEN_BLOCK_ITEMS / 2, 1, 1),
                shared_bytes: 0,
            };
            let mut args = KernelArgs::new();
            args.scalar(image).scalar(index).scalar(n as u32);
            // SAFETY: sort_lab_odd_even_block_{i}(I* image, u32* index, u32
            // n); one block of ODD_EVEN_BLOCK_ITEMS / 2 threads, n ≤
            // ODD_EVEN_BLOCK_ITEMS (its shared arrays); both buffers hold n.
            unsafe { gpu.launch(&kernel, config, &args) }?;
            return Ok(pairs);
        }
        let kernel =
            LabModule::OddEven.kernel(gpu, &format!("sort_lab_odd_even_phase_{}", I::SUFFIX))?;
        // One thread per pair of the even phase (the odd phase has one
        // fewer or the same).
        let (config, _) = grid_1d((n as u64).div_ceil(2), ELEMENTWISE_THREADS, 1, 0)?;
        for phase in 0..n {
            let mut args = KernelArgs::new();
            args.scalar(image)
                .scalar(index)
                .scalar(n as u64)
                .scalar((phase % 2) as u32);
            // SAFETY: sort_lab_odd_even_phase_{i}(I* image, u32* index, u64
            // n, u32 parity); thread t touches 2t + parity and the next
            // item only when that is < n; both buffers hold n.
            unsafe { gpu.launch(&kernel, config, &args) }?;
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_up_to_its_shared_arrays_then_a_launch_per_phase() {
        assert!(fits_one_block(2));
        assert!(fits_one_block(2048));
        assert!(!fits_one_block(2049));
        assert_eq!(
            ODD_EVEN_BLOCK_ITEMS % 64,
            0,
            "two items per thread, whole warps"
        );
    }

    /// The phases on the CPU, as the kernels run them (swap only when the
    /// right image is strictly smaller): n phases give the stable sort.
    #[test]
    fn n_phases_of_strict_swaps_give_the_stable_sort() {
        for n in [2usize, 3, 4, 31, 64, 257] {
            let mut pairs: Vec<(u32, u32)> =
                (0..n as u32).map(|i| ((i * 7919 + 13) % 5, i)).collect();
            let mut want = pairs.clone();
            want.sort_by_key(|p| p.0);
            for phase in 0..n {
                let mut left = phase % 2;
                while left + 1 < n {
                    if pairs[left + 1].0 < pairs[left].0 {
                        pairs.swap(left, left + 1);
                    }
                    left += 2;
                }
            }
            assert_eq!(pairs, want, "n = {n}");
        }
    }
}
