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
