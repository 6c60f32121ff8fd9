//! Page-locked host memory a context keeps for small reads back to the
//! host: the staging buffer of [`Gpu::read_small`](crate::Gpu::read_small)
//! and the device-mapped result slot of
//! [`Gpu::with_mapped_result`](crate::Gpu::with_mapped_result) (both in
//! `readback.rs`). Held by the context's shared state, allocated on first
//! use, freed with the context.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result as driver_result, CudaContext};

/// Bytes of the staging buffer.
pub(crate) const STAGING_BYTES: usize = 256;

/// The context's staging buffer, allocated on first use.
#[derive(Default)]
pub(crate) struct Readback {
    pub(crate) staging: Mutex<Option<Pinned>>,
}

/// Page-locked host memory (the staging buffer, or the mapped slot), freed
/// with its context.
pub(crate) struct Pinned {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) ptr: *mut c_void,
}

// SAFETY: the pointer is plain host memory owned by this value; access is
// serialised by the Mutex in `Readback`.
unsafe impl Send for Pinned {}

impl Drop for Pinned {
    fn drop(&mut self) {
        // The memory belongs to `ctx`, which this value keeps alive.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `ptr` came from malloc_host and is freed once, here.
        let _ = unsafe { driver_result::free_host(self.ptr) };
    }
}

/// The context's device-mapped result slot: page-locked host memory the
/// kernels write into directly (words 0 and 1: a result; word 2: the flag
/// that says it has arrived), allocated on first use.
#[derive(Default)]
pub(crate) struct MappedResult {
    pub(crate) slot: Mutex<Option<MappedSlot>>,
}

/// Four page-locked, device-mapped words and the last sequence number.
pub(crate) struct MappedSlot {
    pub(crate) memory: Pinned,
    pub(crate) device_ptr: u64,
    pub(crate) seq: u64,
}
