//! Small device-to-host reads (a reduction's value, a count) through a
//! pinned staging buffer, one per CUDA context.
//!
//! A copy into pageable memory goes through the driver's own staging and
//! costs several microseconds more than one into page-locked memory; a
//! primitive that returns a value to the host pays it on every call. The
//! staging buffer (256 bytes, `cuMemHostAlloc`) is allocated on the first
//! read and kept by the context; a read that finds it in use by another
//! thread, or that is larger, copies straight into the caller's memory.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result as driver_result, CudaContext};

use crate::buffer::DeviceView;
use crate::element::DeviceType;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// Bytes of the staging buffer.
pub(crate) const STAGING_BYTES: usize = 256;

/// The context's staging buffer, allocated on first use.
#[derive(Default)]
pub(crate) struct Readback {
    staging: Mutex<Option<Pinned>>,
}

/// Page-locked host memory of [`STAGING_BYTES`], freed with its context.
struct Pinned {
    ctx: Arc<CudaContext>,
    ptr: *mut c_void,
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

impl Gpu {
    /// Copies `view` into `host` (same length) and waits for it: like
    /// [`DeviceView::copy_to_host`], through the context's page-locked
    /// staging buffer when the view is at most 256 bytes, which saves the
    /// pageable copy's extra microseconds. Synchronises this handle's
    /// stream.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let count = DeviceBuffer::from_host(&gpu, &[42u64])?;
    /// let mut host = [0u64];
    /// gpu.read_small(&count.view(), &mut host)?;
    /// assert_eq!(host, [42]);
    /// # Ok(()) }
    /// ```
    pub fn read_small<T: DeviceType>(
        &self,
        view: &DeviceView<'_, T>,
        host: &mut [T],
    ) -> Result<()> {
        Error::check_len("host slice", view.len(), host.len())?;
        let bytes = view.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let readback = self.readback();
        let guard = match readback.staging.try_lock() {
            Ok(guard) if bytes <= STAGING_BYTES => Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) if bytes <= STAGING_BYTES => {
                Some(p.into_inner())
            }
            _ => None,
        };
        let Some(mut staging) = guard else {
            return view.copy_to_host(self, host);
        };
        self.bind()?;
        if staging.is_none() {
            // SAFETY: 256 bytes of page-locked memory, written by the copy
            // below before anything reads them.
            let ptr = unsafe { driver_result::malloc_host(STAGING_BYTES, 0) }?;
            *staging = Some(Pinned {
                ctx: self.cudarc_context().clone(),
                ptr,
            });
        }
        let pinned = staging
            .as_ref()
            .map(|p| p.ptr)
            .ok_or_else(|| Error::invalid("readback", "the staging buffer was not allocated"))?;
        // SAFETY: the staging buffer holds 256 ≥ `bytes` bytes, aligned for
        // any element (cuMemHostAlloc returns page-aligned memory), and only
        // this thread touches it while the lock is held; the copy is waited
        // for before the lock is released and the bytes are read.
        let staged = unsafe { std::slice::from_raw_parts_mut(pinned.cast::<T>(), host.len()) };
        unsafe { driver_result::memcpy_dtoh_async(staged, view.device_ptr(), self.cu_stream()) }?;
        self.synchronize()?;
        host.copy_from_slice(staged);
        Ok(())
    }
}
