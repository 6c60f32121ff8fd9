//! Scratch memory reused from call to call: each stream's own arena, and
//! [`Workspace`], an arena a caller owns and lends to calls.
//!
//! A single-pass primitive needs a few words per tile (the look-back's
//! status words and tile counters). Allocating them per call costs a
//! stream-ordered allocation and free each time, and zeroing them costs a
//! memset launch, which at small sizes takes as long as the primitive. An
//! arena instead keeps its buffers, and a tile state is *epoch-tagged*
//! (`kernels/cuda/single_pass/tile_status.cuh`): each call gets the next
//! epoch, statuses of other epochs read as "not yet published", and the
//! grid itself resets the tile counter the next call draws from. After the
//! first call at a given size and layout, a call allocates nothing and
//! enqueues nothing but its kernel; [`ScratchStats`] counts what the arena
//! did, so tests can check that. Temporaries that a primitive's kernels
//! write before they read them (merge-path coordinates and carries, an
//! SpMV's products) are words handed out as the last call left them
//! ([`Gpu::with_scratch_words`]); a primitive that runs another one on
//! them passes it the handle of an arena nested in its own, so the inner
//! call draws from the same reusable memory instead of finding the lock
//! taken.
//!
//! Reuse is safe because an arena's work runs in stream order: the lock is
//! held while a call enqueues its work, and a call from another stream than
//! the last one (a [`Workspace`] lent to handles on several streams) first
//! makes its stream wait for that one. The enqueued work must only use the
//! memory on the stream it was handed for (the view must not escape). A
//! call that finds the lock taken (by another thread, or a nested call) uses
//! a fresh allocation instead of waiting.
//!
//! An arena keeps the largest size it was asked for (a sort's double
//! buffer makes that the size of its input) until it is released: on
//! request ([`Gpu::release_scratch`], [`Workspace::release`]), when its
//! last handle drops, and, for the streams' own arenas, when an allocation
//! on the context runs out of memory: the arenas no call is holding give
//! their memory back and the allocation is tried once more. A
//! [`Workspace`] is the caller's and is never released behind its back.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use cudarc::driver::result as driver_result;

use crate::arena::{lock_arena, Arena, ScratchStats, TileStateSlot};
use crate::buffer::{DeviceBuffer, DeviceViewMut};
use crate::error::Result;
use crate::gpu::Gpu;

/// The largest epoch: tags are `(epoch << 2) | status` in 32 bits.
pub(crate) const MAX_EPOCH: u32 = (1 << 30) - 1;

/// Words a buffer grows to for a request of `words`: the next power of two,
/// so a sequence of growing sizes reallocates a logarithmic number of times.
fn grown_words(words: usize) -> usize {
    words.checked_next_power_of_two().unwrap_or(words).max(1)
}

/// Scratch memory a caller owns and lends to parprims calls, in place of
/// the stream's own: CUB's temporary-storage pattern without the two-call
/// size query. The arena grows to what the calls need and keeps it; drop
/// the workspace, or call [`Workspace::release`], to free it.
///
/// ```no_run
/// use gpu_core::{Gpu, Workspace};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let workspace = Workspace::new();
/// let with_workspace = gpu.with_workspace(&workspace);
/// // ... scan or compact through `with_workspace` ...
/// let grown = workspace.stats().allocations;
/// // ... the same calls again: no further allocation ...
/// assert_eq!(workspace.stats().allocations, grown);
/// # Ok(()) }
/// ```
///
/// A workspace may be lent to handles on several streams: a call from
/// another stream than the previous call's waits (on the device) for that
/// stream's work first, so the memory is never used by two streams at once.
#[derive(Clone, Default)]
pub struct Workspace {
    pub(crate) arena: Arc<Mutex<Arena>>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Workspace {
    /// An empty workspace: nothing is allocated until a call needs it.
    ///
    /// ```
    /// let workspace = gpu_core::Workspace::new();
    /// assert_eq!(workspace.stats().bytes_held, 0); // nothing allocated until a call needs it
    /// ```
    pub fn new() -> Workspace {
        Workspace::default()
    }

    /// What the workspace has done, and the bytes it holds.
    ///
    /// ```
    /// let workspace = gpu_core::Workspace::new();
    /// let stats = workspace.stats();
    /// assert_eq!((stats.allocations, stats.bytes_held), (0, 0));
    /// ```
    pub fn stats(&self) -> ScratchStats {
        lock(&self.arena).total_stats()
    }

    /// Frees the workspace's memory (stream-ordered, after the work that
    /// used it); the next call allocates again.
    ///
    /// ```
    /// let workspace = gpu_core::Workspace::new();
    /// workspace.release();
    /// assert_eq!(workspace.stats().bytes_held, 0);
    /// ```
    pub fn release(&self) {
        lock(&self.arena).release();
    }
}

fn lock(arena: &Mutex<Arena>) -> MutexGuard<'_, Arena> {
    lock_arena(arena)
}

impl Gpu {
    /// A handle on this handle's context and stream whose calls take their
    /// scratch memory from `workspace` instead of the stream's own arena.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let workspace = gpu_core::Workspace::new();
    /// let pinned = gpu.with_workspace(&workspace); // scratch from `workspace` from now on
    /// assert_eq!(pinned.scratch_stats(), workspace.stats());
    /// # Ok(()) }
    /// ```
    pub fn with_workspace(&self, workspace: &Workspace) -> Gpu {
        let mut gpu = self.clone();
        gpu.scratch = workspace.arena.clone();
        gpu
    }

    /// What this handle's arena (its stream's, or the workspace it was
    /// given) has done, and the bytes it holds.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let stats = gpu.scratch_stats();
    /// println!("{} allocations, {} bytes held", stats.allocations, stats.bytes_held);
    /// # Ok(()) }
    /// ```
    pub fn scratch_stats(&self) -> ScratchStats {
        lock(&self.scratch).total_stats()
    }

    /// Locks the arena for a call, ordered after the arena's last stream;
    /// `None` when it is busy.
    fn enter_arena(&self) -> Result<Option<MutexGuard<'_, Arena>>> {
        let mut arena = match self.scratch.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        let stream = self.cudarc_stream();
        match &arena.last_stream {
            Some(last) if last.cu_stream() == stream.cu_stream() => {}
            Some(last) => {
                stream.join(last)?;
                arena.last_stream = Some(stream.clone());
            }
            None => arena.last_stream = Some(stream.clone()),
        }
        Ok(Some(arena))
    }

    /// Notes a busy arena's fallback allocation.
    fn note_busy_fallback(&self) {
        if let Ok(mut arena) = self.scratch.try_lock() {
            arena.stats.busy_fallbacks += 1;
        }
    }

    /// Zeroes `words` on this handle's stream.
    fn zero_words(&self, view: &DeviceViewMut<'_, u64>) -> Result<()> {
        if view.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: `view` is live 64-bit words of this context; the memset is
        // ordered on this handle's stream, after the work of earlier calls
        // and before the work the caller adds.
        unsafe {
            driver_result::memset_d8_async(view.device_ptr(), 0, view.len() * 8, self.cu_stream())
        }?;
        Ok(())
    }

    /// Calls `enqueue` with `words` zeroed 64-bit words of this handle's
    /// scratch memory, and returns what it returns.
    ///
    /// The words are zeroed by a memset ordered on the stream before
    /// anything `enqueue` launches; `enqueue` must only *enqueue* work on
    /// this handle's stream that uses the view (the view must not escape,
    /// and nothing on another stream may touch it), because the next call
    /// reuses the same memory. After the first call at a given size a call
    /// allocates nothing. `words = 0` passes an empty view. (The single-pass
    /// primitives use epoch-tagged tile states instead, which need no
    /// memset: [`crate::single_pass::with_tile_state`].)
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// // Eight zeroed counters for a kernel of the caller's, reused by the next call.
    /// gpu.with_zeroed_scratch(8, |counters| {
    ///     assert_eq!(counters.len(), 8);
    ///     Ok(()) // enqueue work that uses `counters` on gpu's stream here
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn with_zeroed_scratch<R>(
        &self,
        words: usize,
        enqueue: impl FnOnce(DeviceViewMut<'_, u64>) -> Result<R>,
    ) -> Result<R> {
        let Some(mut arena) = self.enter_arena()? else {
            self.note_busy_fallback();
            // A buffer of its own, freed stream-ordered after `enqueue`'s work.
            let mut own = DeviceBuffer::<u64>::zeros(self, words)?;
            return enqueue(own.view_mut());
        };
        let arena = &mut *arena;
        if arena
            .zeroed
            .as_ref()
            .is_none_or(|buffer| buffer.len() < words)
        {
            // The old buffer goes first (freed in stream order, after the
            // work that used it), then the larger one is allocated.
            if let Some(old) = arena.zeroed.take() {
                arena.retire(old);
            }
            let grown = grown_words(words);
            arena.zeroed = self.allocate_words(grown, &mut arena.stats)?;
        }
        let buffer = arena
            .zeroed
            .as_mut()
            .expect("the buffer was allocated above");
        let mut view = DeviceViewMut::from(buffer).into_slice(..words)?;
        if words > 0 {
            self.zero_words(&view)?;
            arena.stats.zeroings += 1;
        }
        enqueue(view.reborrow())
    }

    /// Calls `enqueue` with `words` 64-bit words of this handle's scratch
    /// memory as the last call left them (no memset), and a handle on the
    /// same stream for the calls `enqueue` makes itself: a primitive that
    /// runs another one on its temporaries passes that handle, whose
    /// scratch is an arena nested in this one (the words' arena stays
    /// locked until `enqueue` returns). After the first call at a given
    /// size a call allocates nothing; [`Gpu::scratch_stats`] counts the
    /// nested arena too. `enqueue` must only enqueue work on this stream
    /// that uses the words (the view must not escape), because the next
    /// call reuses them. `words = 0` passes an empty view.
    ///
    /// # Safety
    /// The words hold whatever an earlier call or the allocator left: the
    /// enqueued work must write every word it reads first.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// // SAFETY: the work enqueued here writes the words before reading them.
    /// unsafe {
    ///     gpu.with_scratch_words(1024, |words, _nested| {
    ///         assert_eq!(words.len(), 1024);
    ///         Ok(()) // enqueue kernels that write, then read, `words` here
    ///     })?;
    /// }
    /// # Ok(()) }
    /// ```
    pub unsafe fn with_scratch_words<R>(
        &self,
        words: usize,
        enqueue: impl FnOnce(DeviceViewMut<'_, u64>, &Gpu) -> Result<R>,
    ) -> Result<R> {
        let Some(mut arena) = self.enter_arena()? else {
            self.note_busy_fallback();
            // SAFETY: the caller's contract: written before read.
            let mut own = unsafe { DeviceBuffer::<u64>::uninit(self, words)? };
            return enqueue(own.view_mut(), self);
        };
        let arena = &mut *arena;
        if arena
            .unzeroed
            .as_ref()
            .is_none_or(|buffer| buffer.len() < words)
        {
            if let Some(old) = arena.unzeroed.take() {
                arena.retire(old);
            }
            arena.unzeroed = self.allocate_words(grown_words(words), &mut arena.stats)?;
        }
        let mut nested = self.clone();
        nested.scratch = arena.nested.get_or_insert_with(Default::default).clone();
        let buffer = arena
            .unzeroed
            .as_mut()
            .expect("the buffer was allocated above");
        let view = DeviceViewMut::from(buffer).into_slice(..words)?;
        enqueue(view, &nested)
    }

    /// Calls `enqueue` with `words` words of an epoch-tagged tile state of
    /// `layout` and this call's epoch (1 to 2^30 − 1). The words hold
    /// whatever earlier calls of the same layout left (statuses of older
    /// epochs) or zeros; they are zeroed only when first allocated, when
    /// the epochs run out, or after a call that failed. `enqueue` must only
    /// enqueue work on this handle's stream that uses the words.
    pub(crate) fn with_epoch_scratch<R>(
        &self,
        layout: [u64; 3],
        words: usize,
        enqueue: impl FnOnce(DeviceViewMut<'_, u64>, u32) -> Result<R>,
    ) -> Result<R> {
        let Some(mut arena) = self.enter_arena()? else {
            self.note_busy_fallback();
            let mut own = DeviceBuffer::<u64>::zeros(self, words)?;
            return enqueue(own.view_mut(), 1);
        };
        let arena = &mut *arena;
        let found = arena
            .tile_states
            .iter()
            .position(|slot| slot.layout == layout);
        let index = match found {
            Some(index) if arena.tile_states[index].words.len() >= words => index,
            _ => {
                if let Some(index) = found {
                    let old = arena.tile_states.swap_remove(index);
                    arena.retire(old.words);
                }
                let words = self
                    .allocate_words(grown_words(words), &mut arena.stats)?
                    .expect("grown_words is at least one word");
                arena.tile_states.push(TileStateSlot {
                    layout,
                    words,
                    epoch: 0,
                    needs_zeroing: true,
                });
                arena.tile_states.len() - 1
            }
        };
        let slot = &mut arena.tile_states[index];
        if slot.needs_zeroing || slot.epoch >= MAX_EPOCH {
            // Zero what the layout can reach: the whole buffer.
            self.zero_words(&DeviceViewMut::from(&mut slot.words))?;
            arena.stats.zeroings += 1;
            slot.epoch = 0;
            slot.needs_zeroing = false;
        }
        slot.epoch += 1;
        arena.stats.epochs += 1;
        let epoch = slot.epoch;
        // Until the call has enqueued its grid, the next counter is not
        // known to be reset.
        slot.needs_zeroing = true;
        let result = {
            let mut view = DeviceViewMut::from(&mut slot.words).into_slice(..words)?;
            enqueue(view.reborrow(), epoch)
        };
        if result.is_ok() {
            slot.needs_zeroing = false;
        }
        result
    }

    /// `words` fresh u64 words from the device (uninitialised; zeroed by the
    /// caller before use), counted in `stats`.
    fn allocate_words(
        &self,
        words: usize,
        stats: &mut ScratchStats,
    ) -> Result<Option<cudarc::driver::CudaSlice<u64>>> {
        // SAFETY: every caller zeroes the words before any kernel reads them
        // (a tile state is created needing zeroing; the zeroed buffer is
        // zeroed on every call), or hands them out under
        // `with_scratch_words`'s contract (written before read).
        let buffer = unsafe { DeviceBuffer::<u64>::uninit(self, words)? };
        stats.allocations += 1;
        stats.bytes_held += 8 * words as u64;
        Ok(buffer.into_cudarc())
    }

    /// Frees this handle's scratch memory (stream-ordered); the next call
    /// that needs scratch allocates it again.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// gpu.release_scratch(); // the next call that needs scratch allocates it again
    /// assert_eq!(gpu.scratch_stats().bytes_held, 0);
    /// # Ok(()) }
    /// ```
    pub fn release_scratch(&self) {
        lock(&self.scratch).release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_grows_to_powers_of_two() {
        assert_eq!(grown_words(0), 1);
        assert_eq!(grown_words(1), 1);
        assert_eq!(grown_words(3), 4);
        assert_eq!(grown_words(65_538), 131_072);
        assert_eq!(grown_words(usize::MAX), usize::MAX);
    }

    #[test]
    fn epochs_fit_the_status_tag() {
        // (epoch << 2) | status must fit 32 bits for every epoch handed out.
        assert_eq!((MAX_EPOCH as u64) << 2 | 3, u32::MAX as u64);
    }

    #[test]
    fn a_new_workspace_holds_nothing() {
        let workspace = Workspace::new();
        assert_eq!(workspace.stats(), ScratchStats::default());
        workspace.release();
        assert_eq!(workspace.stats().bytes_held, 0);
    }
}
