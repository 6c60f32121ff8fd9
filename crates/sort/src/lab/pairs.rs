//! What the lab's methods share: the (radix image, index) pairs they sort,
//! built from the keys, and the gather that moves keys and values into
//! the sorted order at the end (`kernels/cuda/sort/lab_common.cuh`).
//!
//! Every lab method sorts the pairs, never the keys themselves: the image
//! is the key's radix image (complemented when descending) restricted to
//! the bit range and shifted down to bit 0, so one kernel per image width
//! (u32 or u64) serves every key type, order and bit range; the index is
//! the key's input position, which makes bitonic sort stable (pairs compare
//! as (image, index)) and lets the keys and any payload move once, as their
//! own bits, when the order is known.
//!
//! - **Bytes moved** around the method: prepare reads n·k and writes
//!   n·(s + 4); gather and copy-back read 4n + 2·n·k and write 2·n·k, plus
//!   2·n·v each way with values (k, v, s: key, value and image bytes).
//! - **Memory**: the pairs (n·(s + 4) bytes; methods that ping-pong hold
//!   two sets) and an n-item scratch for the gather.
//! - **Limit**: indices are u32, so the lab sorts at most 2^32 − 1 keys.

use std::ops::Range;

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceViewMut, Error, Gpu, KernelArgs, Result};

use super::modules::{
    copy_entry_name, gather_entry_name, prepare_entry_name, LabImage, LabModule,
    ELEMENTWISE_THREADS,
};
use crate::key::{PayloadViewMut, PayloadWidth, RadixBits, SortKey};

/// The pairs a lab method sorts: `image[i]` orders, `index[i]` is the input
/// position of the key it came from; `width` is the number of image bits
/// that take part (`bits.end − bits.start`).
pub(crate) struct Pairs<I: LabImage> {
    /// Radix images, shifted and masked to the bit range.
    pub(crate) image: DeviceBuffer<I>,
    /// Input positions.
    pub(crate) index: DeviceBuffer<u32>,
    /// Significant bits of every image.
    pub(crate) width: u32,
}

impl<I: LabImage> Pairs<I> {
    /// The number of pairs.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Uninitialised pairs of the same length and width (a ping-pong
    /// partner).
    pub(crate) fn partner(&self, gpu: &Gpu) -> Result<Pairs<I>> {
        // SAFETY: every method writes all n pairs of its destination in a
        // pass before anything reads them.
        Ok(unsafe {
            Pairs {
                image: DeviceBuffer::uninit(gpu, self.len())?,
                index: DeviceBuffer::uninit(gpu, self.len())?,
                width: self.width,
            }
        })
    }
}

/// A lab method: sorts the pairs by image, stably, and returns them (the
/// same buffers or its ping-pong partner).
pub(crate) trait PairSort {
    /// Sorts `pairs` (n ≥ 2, width ≥ 1).
    fn sort<I: LabImage>(gpu: &Gpu, pairs: Pairs<I>) -> Result<Pairs<I>>;
}

/// The lab's limit: indices are u32.
///
/// ```text
/// check_lab_len(u32::MAX as usize) is Ok; one more is Error::Unsupported
/// ```
pub(crate) fn check_lab_len(n: usize) -> Result<()> {
    if n as u64 > u32::MAX as u64 {
        return Err(Error::Unsupported(format!(
            "the lab's sorts carry 32-bit indices: at most {} keys, not {n} (the default sorts more)",
            u32::MAX
        )));
    }
    Ok(())
}

/// Sorts `keys` (and `values`) in place with method `M`: prepare the
/// pairs, sort them, gather. Arguments validated by the caller (bit range
/// inside the key, values as long as the keys).
pub(crate) fn sort_with<K: SortKey, M: PairSort>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    descending: bool,
    bits: Range<u32>,
) -> Result<()> {
    let n = keys.len();
    check_lab_len(n)?;
    if let Some(values) = &values {
        Error::check_len("values", n, values.len())?;
    }
    let key_bits = <K::Bits as RadixBits>::BITS;
    if bits.start > bits.end || bits.end > key_bits {
        return Err(Error::invalid(
            "bits",
            format!("{bits:?} is not inside the key's {key_bits} bits"),
        ));
    }
    let width = bits.end - bits.start;
    // No two keys can be out of order: nothing moves.
    if n < 2 || width == 0 {
        return Ok(());
    }
    if key_bits > 32 {
        let pairs = prepare::<K, u64>(gpu, &keys, descending, bits.start, width)?;
        let sorted = M::sort(gpu, pairs)?;
        gather(gpu, keys, values, &sorted.index)
    } else {
        let pairs = prepare::<K, u32>(gpu, &keys, descending, bits.start, width)?;
        let sorted = M::sort(gpu, pairs)?;
        gather(gpu, keys, values, &sorted.index)
    }
}

/// Builds the pairs of `keys`.
fn prepare<K: SortKey, I: LabImage>(
    gpu: &Gpu,
    keys: &DeviceViewMut<'_, K>,
    descending: bool,
    begin_bit: u32,
    width: u32,
) -> Result<Pairs<I>> {
    let n = keys.len();
    let kernel = LabModule::Common.kernel(gpu, &prepare_entry_name(K::CUDA_TYPE))?;
    // SAFETY: the prepare kernel writes all n images and indices.
    let (image, index) = unsafe {
        (
            DeviceBuffer::<I>::uninit(gpu, n)?,
            DeviceBuffer::<u32>::uninit(gpu, n)?,
        )
    };
    let (config, _) = grid_1d(n as u64, ELEMENTWISE_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.scalar(keys.device_ptr())
        .scalar(n as u64)
        .scalar(begin_bit)
        .scalar(width)
        .scalar(u32::from(descending))
        .scalar(image.view().device_ptr())
        .scalar(index.view().device_ptr());
    // SAFETY: sort_lab_prepare_{k}(const K* keys, u64 n, u32 begin_bit, u32
    // width, u32 descending, I* image, u32* index); thread i < n reads
    // keys[i] and writes image[i], index[i] (all three n long); I is the
    // image type the entry was generated with for K (u64 for 8-byte keys).
    unsafe { gpu.launch(&kernel, config, &args) }?;
    Ok(Pairs {
        image,
        index,
        width,
    })
}

/// Moves `n` words of `width` at `data` into the order `index` (a
/// permutation of 0..n): gather into a scratch buffer, copy back.
fn permute(gpu: &Gpu, data: u64, width: PayloadWidth, index: &DeviceBuffer<u32>) -> Result<()> {
    let n = index.len();
    let words = (n * width.bytes()).div_ceil(8);
    // SAFETY: the gather writes all n items before the copy reads them.
    let scratch = unsafe { DeviceBuffer::<u64>::uninit(gpu, words)? };
    let scratch_ptr = scratch.view().device_ptr();
    let (config, _) = grid_1d(n as u64, ELEMENTWISE_THREADS, 1, 0)?;
    let gather = LabModule::Common.kernel(gpu, &gather_entry_name(width))?;
    let mut args = KernelArgs::new();
    args.scalar(data)
        .scalar(scratch_ptr)
        .scalar(index.view().device_ptr())
        .scalar(n as u64);
    // SAFETY: sort_lab_gather_{w}(const W* src, W* dst, const u32* index,
    // u64 n); thread i < n reads index[i] < n and src[index[i]] (`data`
    // holds n words of width w) and writes dst[i] (the scratch holds n
    // words, 8-byte aligned).
    unsafe { gpu.launch(&gather, config, &args) }?;
    let copy = LabModule::Common.kernel(gpu, &copy_entry_name(width))?;
    let mut args = KernelArgs::new();
    args.scalar(scratch_ptr).scalar(data).scalar(n as u64);
    // SAFETY: sort_lab_copy_{w}(const W* src, W* dst, u64 n); both hold n
    // words of width w, and do not overlap.
    unsafe { gpu.launch(&copy, config, &args) }?;
    // Stream-ordered free: safe to drop right after enqueuing.
    drop(scratch);
    Ok(())
}

/// Moves the keys, and the values when given, into the sorted order.
fn gather<K: SortKey>(
    gpu: &Gpu,
    keys: DeviceViewMut<'_, K>,
    values: Option<PayloadViewMut<'_>>,
    index: &DeviceBuffer<u32>,
) -> Result<()> {
    permute(
        gpu,
        keys.device_ptr(),
        PayloadWidth::of_bytes(K::BYTES)?,
        index,
    )?;
    if let Some(values) = values {
        permute(gpu, values.device_ptr(), values.width(), index)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_sorts_up_to_u32_max_keys() {
        assert!(check_lab_len(0).is_ok());
        assert!(check_lab_len(u32::MAX as usize).is_ok());
        assert!(matches!(
            check_lab_len(u32::MAX as usize + 1),
            Err(Error::Unsupported(_))
        ));
    }
}
