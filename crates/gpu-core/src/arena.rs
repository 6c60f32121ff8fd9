//! The data of a scratch arena: the buffers it holds and what it has done.
//! The behaviour is in `scratch.rs`; this leaf module only holds the state
//! (so that `gpu.rs`, which keeps an arena per stream, imports nothing
//! that imports it back).

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream};

/// What a scratch arena ([`Workspace`](crate::Workspace), or a stream's own)
/// has done since it was made: a steady-state call of a primitive leaves
/// every count unchanged except [`ScratchStats::epochs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScratchStats {
    /// Device allocations the arena made (first use, growth, a new layout).
    pub allocations: u64,
    /// Memsets the arena enqueued: every [`Gpu::with_zeroed_scratch`](crate::Gpu::with_zeroed_scratch)
    /// call, and a tile state's reset when its epochs run out or a call
    /// failed after drawing an epoch.
    pub zeroings: u64,
    /// Tile-state epochs handed out: one per call of a single-pass
    /// primitive (scan, compaction).
    pub epochs: u64,
    /// Calls that found the arena busy (another thread, or a call nested in
    /// one that holds it) and used an allocation of their own.
    pub busy_fallbacks: u64,
    /// Bytes of device memory the arena holds now.
    pub bytes_held: u64,
}

/// One tile state: a layout, its words, and the last epoch handed out.
pub(crate) struct TileStateSlot {
    /// What fixes where the status words sit (see `single_pass.rs`): two
    /// calls with the same layout read each other's words only as statuses.
    pub(crate) layout: [u64; 3],
    pub(crate) words: CudaSlice<u64>,
    /// The epoch of the last call (0 right after the words were zeroed).
    pub(crate) epoch: u32,
    /// The words must be zeroed before the next call: a call drew an epoch
    /// and failed, so its grid may not have reset the next tile counter.
    pub(crate) needs_zeroing: bool,
}

/// The buffers of one arena, behind the arena's lock.
#[derive(Default)]
pub(crate) struct Arena {
    /// Words handed out zeroed on every call.
    pub(crate) zeroed: Option<CudaSlice<u64>>,
    /// Epoch-tagged tile states, one per layout.
    pub(crate) tile_states: Vec<TileStateSlot>,
    /// Words handed out as the last call left them: temporaries the
    /// enqueued work writes before it reads them.
    pub(crate) unzeroed: Option<CudaSlice<u64>>,
    /// The arena of the calls a primitive makes while it holds `unzeroed`
    /// (another primitive run on its temporaries); made on first use.
    pub(crate) nested: Option<Arc<Mutex<Arena>>>,
    /// The stream of the last call, so that a call from another stream (a
    /// [`Workspace`](crate::Workspace) lent to several handles) waits for it.
    pub(crate) last_stream: Option<Arc<CudaStream>>,
    pub(crate) stats: ScratchStats,
}

impl Arena {
    /// Frees `words` after the work of the arena's last stream that may
    /// still use them: a slice frees on its own stream, so that stream first
    /// waits for the last one where they differ.
    pub(crate) fn retire(&mut self, words: CudaSlice<u64>) {
        if let Some(last) = &self.last_stream {
            if last.cu_stream() != words.stream().cu_stream() {
                // A failed join leaves the stream unordered; the error is
                // recorded by the context and the slice is freed anyway.
                let _ = words.stream().join(last);
            }
        }
        self.stats.bytes_held = self.stats.bytes_held.saturating_sub(8 * words.len() as u64);
        drop(words);
    }

    /// Frees every buffer (stream-ordered).
    pub(crate) fn release(&mut self) {
        if let Some(words) = self.zeroed.take() {
            self.retire(words);
        }
        for slot in std::mem::take(&mut self.tile_states) {
            self.retire(slot.words);
        }
        if let Some(words) = self.unzeroed.take() {
            self.retire(words);
        }
        if let Some(nested) = &self.nested {
            lock_arena(nested).release();
        }
    }

    /// What this arena and its nested one have done, summed.
    pub(crate) fn total_stats(&self) -> ScratchStats {
        let mut total = self.stats;
        if let Some(nested) = &self.nested {
            let inner = lock_arena(nested).total_stats();
            total.allocations += inner.allocations;
            total.zeroings += inner.zeroings;
            total.epochs += inner.epochs;
            total.busy_fallbacks += inner.busy_fallbacks;
            total.bytes_held += inner.bytes_held;
        }
        total
    }
}

/// Locks `arena`, recovering it from a poisoned lock: arena operations
/// complete or unwind before leaving state half-made.
pub(crate) fn lock_arena(arena: &Mutex<Arena>) -> std::sync::MutexGuard<'_, Arena> {
    arena
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drop for Arena {
    fn drop(&mut self) {
        self.release();
    }
}
