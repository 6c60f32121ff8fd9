//! Small device-to-host reads (a reduction's value, a count) through a
//! pinned staging buffer, one per CUDA context.
//!
//! A copy into pageable memory goes through the driver's own staging and
//! costs several microseconds more than one into page-locked memory; a
//! primitive that returns a value to the host pays it on every call. The
//! staging buffer (256 bytes, `cuMemHostAlloc`) is allocated on the first
//! read and kept by the context; a read that finds it in use by another
//! thread, or that is larger, copies straight into the caller's memory.

use cudarc::driver::result as driver_result;

use crate::buffer::DeviceView;
use crate::element::DeviceType;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::pinned::{MappedSlot, Pinned, STAGING_BYTES};

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

impl Gpu {
    /// For a primitive that returns a value to the host: calls `enqueue`
    /// with (result address, flag address, sequence number) in the
    /// context's device-mapped page-locked slot. The work `enqueue` queues
    /// on this handle's stream must store the result (up to 16 bytes) at
    /// the result address and then, after `__threadfence_system()`, the
    /// sequence number at the flag address. Waits for the flag (polling
    /// host memory, and the stream's status so that a failed launch is an
    /// error rather than a hang) and returns the two result words: no copy
    /// and no stream synchronisation, so a small call returns as soon as
    /// its kernel has written the value. `Ok(None)` without calling
    /// `enqueue` when another thread holds the slot; the caller then takes
    /// its ordinary path ([`Gpu::read_small`]).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let words = gpu.with_mapped_result(|result, flag, seq| {
    ///     // launch a kernel that writes result[0..2], fences, writes flag = seq
    ///     # let _ = (result, flag, seq);
    ///     Ok(())
    /// })?;
    /// # let _ = words;
    /// # Ok(()) }
    /// ```
    pub fn with_mapped_result(
        &self,
        enqueue: impl FnOnce(u64, u64, u64) -> Result<()>,
    ) -> Result<Option<[u64; 2]>> {
        let mut guard = match self.mapped_result().slot.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        self.bind()?;
        if guard.is_none() {
            // SAFETY: 32 bytes of page-locked memory mapped into the
            // device's address space, zeroed below before any use.
            let ptr = unsafe {
                driver_result::malloc_host(32, cudarc::driver::sys::CU_MEMHOSTALLOC_DEVICEMAP)
            }?;
            let memory = Pinned {
                ctx: self.cudarc_context().clone(),
                ptr,
            };
            let mut device_ptr = 0u64;
            // SAFETY: `ptr` is a mapped allocation of this context.
            unsafe { cudarc::driver::sys::cuMemHostGetDevicePointer_v2(&mut device_ptr, ptr, 0) }
                .result()?;
            // SAFETY: four u64 words owned by `memory`.
            unsafe { std::ptr::write_bytes(ptr.cast::<u64>(), 0, 4) };
            *guard = Some(MappedSlot {
                memory,
                device_ptr,
                seq: 0,
            });
        }
        let slot = guard
            .as_mut()
            .ok_or_else(|| Error::invalid("readback", "the mapped slot was not allocated"))?;
        slot.seq += 1;
        let seq = slot.seq;
        let host = slot.memory.ptr.cast::<u64>();
        enqueue(slot.device_ptr, slot.device_ptr + 16, seq)?;
        let mut polls = 0u32;
        loop {
            // SAFETY: word 2 of the slot; the device writes it, so it is
            // read volatile.
            if unsafe { std::ptr::read_volatile(host.add(2)) } == seq {
                break;
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) {
                // SAFETY: this handle's live stream.
                match unsafe { cudarc::driver::sys::cuStreamQuery(self.cu_stream()) } {
                    cudarc::driver::sys::CUresult::CUDA_SUCCESS => {
                        // Everything queued has finished: the flag is there
                        // now, or the work never wrote it.
                        if unsafe { std::ptr::read_volatile(host.add(2)) } == seq {
                            break;
                        }
                        return Err(Error::invalid(
                            "readback",
                            "the stream finished without the result being written",
                        ));
                    }
                    cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY => {}
                    failed => failed.result()?,
                }
                if polls.is_multiple_of(4096) {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // SAFETY: words 0 and 1, written before the flag (the kernel's
        // system-scope fence orders them).
        let words = unsafe {
            [
                std::ptr::read_volatile(host),
                std::ptr::read_volatile(host.add(1)),
            ]
        };
        Ok(Some(words))
    }
}
