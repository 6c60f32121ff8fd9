//! The lesson's LSD radix sort with one bit per pass, built from the
//! toolkit's own scan (the split).
//!
//! - **Computes** a stable sort of the lab's (image, index) pairs
//!   ([`super::pairs`]), least significant bit first: for each bit, flag
//!   the pairs whose bit is 0, take the scan crate's exclusive sum of the
//!   flags (`scan::scan_into`, the default single-pass look-back), and
//!   scatter the 0s to their scanned positions and the 1s after all the
//!   0s, each group in its input order. Stable by construction, so each
//!   pass keeps the order the lower bits made.
//! - **Work** O(k·n) for k = `bits.end − bits.start` bits; **steps**
//!   O(k · log n).
//! - **Launches** per bit: flags, the scan's, scatter.
//! - **Bytes moved** per bit: flags n·s read, 4n written; the scan about
//!   4n read and 4n written; scatter n·(s + 8) read and n·(s + 4) written
//!   (s = 4 or 8, the image size). Plus the shared prepare and gather.
//! - **Memory**: two sets of pairs (ping-pong), the flags and their scan
//!   (4n bytes each). Deterministic.
//!
//! The zero count of a pass is read on the GPU (scan[n−1] + flag[n−1]) by
//! the scatter, so the host never waits between passes.

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, Gpu, KernelArgs, Result, Sum};
use scan::{ScanKind, ScanOptions};

use super::modules::{LabImage, LabModule, ELEMENTWISE_THREADS};
use super::pairs::{PairSort, Pairs};

/// The split radix method.
pub(crate) struct SplitRadix;

impl PairSort for SplitRadix {
    fn sort<I: LabImage>(gpu: &Gpu, pairs: Pairs<I>) -> Result<Pairs<I>> {
        let n = pairs.len();
        let suffix = I::SUFFIX;
        let flags_kernel =
            LabModule::SplitRadix.kernel(gpu, &format!("sort_lab_split_flags_{suffix}"))?;
        let scatter =
            LabModule::SplitRadix.kernel(gpu, &format!("sort_lab_split_scatter_{suffix}"))?;
        let (config, _) = grid_1d(n as u64, ELEMENTWISE_THREADS, 1, 0)?;
        // SAFETY: each pass writes all n flags before the scan reads them,
        // and the scan writes all n sums before the scatter reads them.
        let (mut flags, mut zeros_before) = unsafe {
            (
                DeviceBuffer::<u32>::uninit(gpu, n)?,
                DeviceBuffer::<u32>::uninit(gpu, n)?,
            )
        };
        let options = ScanOptions::default();
        let mut src = pairs;
        let mut dst = src.partner(gpu)?;
        for bit in 0..src.width {
            let mut args = KernelArgs::new();
            args.scalar(src.image.view().device_ptr())
                .output(&mut flags.view_mut())
                .scalar(n as u64)
                .scalar(bit);
            // SAFETY: sort_lab_split_flags_{i}(const I* image, u32* flags,
            // u64 n, u32 bit); thread i < n reads image[i], writes flags[i];
            // both hold n.
            unsafe { gpu.launch(&flags_kernel, config, &args) }?;
            scan::scan_into(
                gpu,
                flags.view(),
                zeros_before.view_mut(),
                &Sum,
                ScanKind::Exclusive { initial: 0 },
                &options,
            )?;
            let mut args = KernelArgs::new();
            args.scalar(src.image.view().device_ptr())
                .scalar(src.index.view().device_ptr())
                .input(&zeros_before.view())
                .scalar(dst.image.view_mut().device_ptr())
                .scalar(dst.index.view_mut().device_ptr())
                .scalar(n as u64)
                .scalar(bit);
            // SAFETY: sort_lab_split_scatter_{i}(const I* src_image, const
            // u32* src_index, const u32* zeros_before, I* dst_image, u32*
            // dst_index, u64 n, u32 bit); thread i < n reads item i and item
            // n − 1 of the sources and writes one position < n of the
            // destinations: zeros_before[i] < zeros for a 0, zeros + (i −
            // zeros_before[i]) < n for a 1 (the exclusive sum of 0/1 flags
            // is at most i). Sources and destinations are distinct.
            unsafe { gpu.launch(&scatter, config, &args) }?;
            std::mem::swap(&mut src, &mut dst);
        }
        Ok(src)
    }
}

#[cfg(test)]
mod tests {
    /// The scatter's arithmetic on the CPU: with the exclusive sum of the
    /// 0-flags, 0s go to `sum[i]` and 1s to `zeros + i − sum[i]` (zeros read
    /// from the last item, as the kernel does): a permutation, stable, and
    /// after every bit the pairs are sorted by the bits so far.
    #[test]
    fn splits_bit_by_bit_give_the_stable_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let pairs: Vec<(u32, u32)> = (0..5000u32)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state % 1000) as u32, i)
            })
            .collect();
        let width = 10;
        let mut src = pairs.clone();
        for bit in 0..width {
            let n = src.len();
            let flags: Vec<u32> = src.iter().map(|p| ((p.0 >> bit) & 1) ^ 1).collect();
            let sum: Vec<u32> = flags
                .iter()
                .scan(0u32, |acc, &f| {
                    let before = *acc;
                    *acc += f;
                    Some(before)
                })
                .collect();
            let zeros = (sum[n - 1] + flags[n - 1]) as usize;
            let mut dst = vec![None; n];
            for (i, &p) in src.iter().enumerate() {
                let to = if (p.0 >> bit) & 1 == 1 {
                    zeros + i - sum[i] as usize
                } else {
                    sum[i] as usize
                };
                assert!(dst[to].is_none(), "two items scattered to {to}");
                dst[to] = Some(p);
            }
            src = dst.into_iter().map(|p| p.expect("a permutation")).collect();
            let mask = (1u32 << (bit + 1)) - 1;
            assert!(src
                .windows(2)
                .all(|w| (w[0].0 & mask, w[0].1) < (w[1].0 & mask, w[1].1)));
        }
        let mut want = pairs;
        want.sort_by_key(|p| p.0);
        assert_eq!(src, want);
    }
}
