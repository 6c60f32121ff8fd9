//! The direct methods, `ConvAlgorithm::Global`, `SharedFilter` and
//! `ConstantFilter` (`conv_direct<FILTER>` in
//! `kernels/cuda/linalg/conv.cu`): one kernel, one thread per output, the
//! filter read from global memory (the lab's gpu-gm), staged in shared
//! memory by each block (the lab's gpu-sm), or from a `__constant__` array
//! (uniform reads broadcast by the constant cache).
//!
//! - Computes the convolution of the family's definition (every border,
//!   padding and flip).
//! - Work `K²` multiply-adds per output, `K²` steps per thread.
//! - Bytes ≈ `crate::conv_bytes_moved`: image samples come through L1/L2
//!   (each is read by up to K² threads).
//! - One launch (ConstantFilter: a device-to-device copy into the symbol,
//!   then the launch); one thread per output, a `bx × by` block per
//!   `bx × by` outputs.
//! - Shared memory [`shared_bytes`]: the filter (`K²` accumulators) for
//!   SharedFilter, none otherwise; filter reads are broadcasts.
//! - Arithmetic in [`gpu_core::Element::Acc`] (`f32` for `f16` and `bf16`),
//!   each output rounded once.
//! - Deterministic; not in place.
//!
//! # ConstantFilter and concurrency
//!
//! The constant filter is one `__constant__` array per module, shared by every
//! `Gpu` handle on the context. A call copies the caller's filter into it on
//! its own stream (stream-ordered, device to device), then launches. Calls from
//! the same stream are ordered by the stream. To keep calls from *different*
//! streams from overwriting a filter that a queued kernel still reads, the
//! copy-and-launch runs under a process-wide lock that remembers the stream of
//! the last call; a call from another stream first waits (on the host) for that
//! stream to drain. So `ConstantFilter` is correct from any number of threads
//! and streams, and serialised across streams (use `TiledHalo` or
//! `SharedFilter` for concurrent work).

use std::sync::{Arc, Mutex};

use gpu_core::launch::grid_2d;
use gpu_core::{DeviceType, Gpu, Result};

use super::algorithm::ConvAlgorithm;
use super::element::ConvElement;
use super::module::{self, ConvCall, CONSTANT_FILTER_SYMBOL};
use super::policy::ConvPolicy;

/// Dynamic shared memory per block, bytes: the filter for SharedFilter, as
/// `K²` accumulators ([`gpu_core::Element::Acc`]).
pub(crate) fn shared_bytes<T: ConvElement>(algorithm: ConvAlgorithm, k: usize) -> usize {
    match algorithm {
        ConvAlgorithm::SharedFilter => k * k * <T::Acc as DeviceType>::BYTES,
        _ => 0,
    }
}

/// Where the last `ConstantFilter` call enqueued its copy and launch: a
/// call from another stream waits for that stream first (module docs). This
/// orders the `__constant__` symbol across streams; it is no kernel cache.
static CONSTANT_FILTER_LAST_USER: Mutex<Option<Gpu>> = Mutex::new(None);

/// Launches the call's algorithm (a direct method) for a validated problem
/// whose output does not overlap its inputs and whose shared memory fits
/// the device. The kernels live in `policy`'s conv module.
pub(crate) fn launch<T: ConvElement>(
    gpu: &Gpu,
    policy: &ConvPolicy,
    mut call: ConvCall<'_, '_, T>,
) -> Result<()> {
    let (k, algorithm) = (call.k(), call.options.algorithm);
    let shared = shared_bytes::<T>(algorithm, k);
    // One thread per output, a block covers bx × by outputs: grid x over
    // column tiles, y (spilling into z) over row tiles.
    let config = grid_2d(
        call.out_shape.0 as u64,
        call.out_shape.1 as u64,
        call.options.block,
        (1, 1),
        shared as u32,
    )?;
    let entry = module::conv_entry::<T>(algorithm, k);
    let kernel = module::conv_kernel::<T>(gpu, policy, &entry)?;
    let args = call.entry_args(0);

    // SAFETY (both launches): the arguments match the entry's parameters
    // (ConvCall::entry_args: three pointers, four i64, five i32, in order);
    // the image holds H·W elements, the filter K·K and the output OH·OW
    // (validated shapes); the kernel reads image samples only through
    // conv_map_coord or inside-window checks (indices in [0, H)×[0, W)),
    // filter indices < K², and writes only (row < OH, col < OW);
    // SharedFilter's shared memory holds the K² filter accumulators it
    // stages. The output does not overlap the inputs (checked by the
    // dispatch) and is only written by this stream.
    if algorithm != ConvAlgorithm::ConstantFilter {
        return unsafe { gpu.launch(&kernel, config, &args) };
    }
    // The symbol needs the module itself: the store's, under the same key
    // as the kernel's (no source built or hashed after the first call).
    let loaded = module::stored_conv_module::<T>(gpu, policy)?;
    let mut last = CONSTANT_FILTER_LAST_USER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(previous) = last.as_ref() {
        if !Arc::ptr_eq(previous.cudarc_stream(), gpu.cudarc_stream()) {
            // A kernel queued on that stream may still read the symbol.
            previous.synchronize()?;
        }
    }
    gpu.copy_to_symbol(&loaded, CONSTANT_FILTER_SYMBOL, &call.filter.data())?;
    *last = Some(gpu.clone());
    unsafe { gpu.launch(&kernel, config, &args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_shared_filter_stages_the_filter() {
        assert_eq!(
            shared_bytes::<f64>(ConvAlgorithm::SharedFilter, 31),
            31 * 31 * 8
        );
        assert_eq!(shared_bytes::<f32>(ConvAlgorithm::Global, 31), 0);
        assert_eq!(shared_bytes::<f32>(ConvAlgorithm::ConstantFilter, 5), 0);
        // The 16-bit floats stage f32 taps.
        assert_eq!(
            shared_bytes::<gpu_core::f16>(ConvAlgorithm::SharedFilter, 3),
            9 * 4
        );
    }
}
