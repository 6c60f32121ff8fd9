//! Scratch memory that belongs to a stream, reused from call to call.
//!
//! A single-pass primitive needs a few zeroed words per tile (the
//! look-back's status words and tile counter). Allocating them on every
//! call costs a stream-ordered allocation and free each time, and after a
//! synchronisation the device's memory pool may have handed that memory
//! back to the driver, so the next allocation maps pages again: tens of
//! microseconds of host time before the kernel can start, which a caller
//! timing one call from an idle stream sees in full. Each stream instead
//! keeps one grow-only buffer: a call zeroes the words it needs
//! (`cuMemsetD8Async`, ordered on the stream like everything else) and
//! launches.
//!
//! Reuse is safe because the buffer is used only by work on its own stream,
//! which runs in enqueue order: the next call's zeroing runs after the
//! previous call's kernel. A handle's clones share its stream, so they share
//! the buffer; [`Gpu::with_new_stream`] gets a buffer of its own. The lock is
//! held while a call enqueues its zeroing and its launch, so two threads on
//! one stream cannot interleave them; a call that finds the lock taken (by
//! another thread, or a nested call) uses a fresh allocation instead of
//! waiting.

use std::sync::TryLockError;

use cudarc::driver::result as driver_result;

use crate::buffer::{DeviceBuffer, DeviceViewMut};
use crate::error::Result;
use crate::gpu::Gpu;

/// Words the buffer grows to for a request of `words`: the next power of
/// two, so a sequence of growing sizes reallocates a logarithmic number of
/// times.
fn grown_words(words: usize) -> usize {
    words.checked_next_power_of_two().unwrap_or(words)
}

impl Gpu {
    /// Calls `enqueue` with `words` zeroed 64-bit words of scratch memory of
    /// this handle's stream, and returns what it returns.
    ///
    /// The words are zeroed by a memset ordered on the stream before
    /// anything `enqueue` launches; `enqueue` must only *enqueue* work on
    /// this handle's stream that uses the view (the view must not escape,
    /// and nothing on another stream may touch it), because the next call
    /// reuses the same memory. After the first call at a given size a call
    /// allocates nothing. `words = 0` passes an empty view.
    pub fn with_zeroed_scratch<R>(
        &self,
        words: usize,
        enqueue: impl FnOnce(DeviceViewMut<'_, u64>) -> Result<R>,
    ) -> Result<R> {
        let mut slot = match self.scratch.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Taken by another thread or a nested call: a buffer of its
                // own, freed stream-ordered after `enqueue`'s work.
                let mut own = DeviceBuffer::<u64>::zeros(self, words)?;
                return enqueue(own.view_mut());
            }
        };
        if slot.as_ref().map_or(true, |buffer| buffer.len() < words) {
            // Drop the old buffer first (freed in stream order, after the
            // work that used it), then allocate the larger one.
            *slot = None;
            *slot = DeviceBuffer::<u64>::zeros(self, grown_words(words).max(1))?.into_cudarc();
        }
        let buffer = slot.as_mut().expect("the slot was filled above");
        let mut view = DeviceViewMut::from(buffer).into_slice(..words)?;
        if words > 0 {
            self.bind()?;
            // SAFETY: `view` is `words` live 64-bit words of this context;
            // the memset is ordered on this handle's stream, before the
            // work `enqueue` adds, and after the work of earlier calls.
            unsafe {
                driver_result::memset_d8_async(view.device_ptr(), 0, words * 8, self.cu_stream())
            }?;
        }
        enqueue(view.reborrow())
    }

    /// Frees this stream's scratch buffer (stream-ordered); the next call
    /// that needs scratch allocates it again.
    pub fn release_scratch(&self) {
        let mut slot = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        *slot = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_grows_to_powers_of_two() {
        assert_eq!(grown_words(1), 1);
        assert_eq!(grown_words(3), 4);
        assert_eq!(grown_words(65_538), 131_072);
        assert_eq!(grown_words(usize::MAX), usize::MAX);
    }
}
