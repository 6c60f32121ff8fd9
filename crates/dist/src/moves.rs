//! The one way shards move between ranks: a plan of [`Move`]s (computed
//! identically by every process) run as device copies for the pieces that
//! stay on their rank and one `ncclSend`/`ncclRecv` pair per piece that
//! changes rank, all in one NCCL group. Compaction's rebalancing and the
//! sample sort's bucket exchange and rebalancing all go through it.

use gpu_core::{DeviceType, DeviceView, DeviceViewMut, Gpu};

use crate::layout::Move;
use crate::nccl::grouped;
use crate::{Group, Result};

/// Runs a plan of moves between shards: a piece that stays on its rank is
/// a device copy, every other piece one `ncclSend`/`ncclRecv` pair, all in
/// one NCCL group. `sources[i]` and `targets[i]` are local rank i's; the
/// plan has at most one move per pair of ranks, computed identically by
/// every process.
pub(crate) fn run_moves<T: DeviceType>(
    group: &Group,
    sources: &[DeviceView<'_, T>],
    plan: &[Move],
    targets: &mut [DeviceViewMut<'_, T>],
) -> Result<()> {
    let streams: Vec<&Gpu> = group.ranks.iter().map(|r| &r.gpu).collect();
    run_moves_on(group, &streams, sources, plan, targets, LocalPieces::Copy)
}

/// What [`run_moves_on`] does with the pieces that stay on their rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LocalPieces {
    /// A device copy on the rank's stream.
    Copy,
    /// Nothing: the caller places them itself.
    Skip,
}

/// [`run_moves`] on the given stream of each local rank (`streams[i]`, a
/// `Gpu` of local rank i's device: its own stream or its side stream),
/// with the pieces that stay on their rank copied or left to the caller.
pub(crate) fn run_moves_on<T: DeviceType>(
    group: &Group,
    streams: &[&Gpu],
    sources: &[DeviceView<'_, T>],
    plan: &[Move],
    targets: &mut [DeviceViewMut<'_, T>],
    local: LocalPieces,
) -> Result<()> {
    crate::Error::check_len("streams", group.local_count(), streams.len())?;
    let local_index = |global: usize| group.ranks.iter().position(|r| r.rank == global);
    let copies = plan
        .iter()
        .filter(|m| m.from_rank == m.to_rank && local == LocalPieces::Copy);
    for piece in copies {
        if let Some(i) = local_index(piece.from_rank) {
            let source = sources[i].slice(piece.from_offset..piece.from_offset + piece.len)?;
            targets[i]
                .slice_mut(piece.to_offset..piece.to_offset + piece.len)?
                .copy_from(streams[i], &source)?;
        }
    }
    grouped(|| {
        for piece in plan.iter().filter(|m| m.from_rank != m.to_rank) {
            let bytes = piece.len * T::BYTES;
            if let Some(i) = local_index(piece.from_rank) {
                let source = sources[i].slice(piece.from_offset..piece.from_offset + piece.len)?;
                let rank = &group.ranks[i];
                // SAFETY: `source` is `bytes` long on rank i's device and
                // outlives the stream's send (its buffer is freed
                // stream-ordered); the peer posts the matching receive
                // (every process follows the same plan).
                unsafe {
                    rank.comm
                        .send_bytes(streams[i], source.device_ptr(), bytes, piece.to_rank)?
                };
            }
            if let Some(j) = local_index(piece.to_rank) {
                let target = targets[j].slice_mut(piece.to_offset..piece.to_offset + piece.len)?;
                let rank = &group.ranks[j];
                // SAFETY: `target` is `bytes` long on rank j's device; the
                // peer posts the matching send.
                unsafe {
                    rank.comm
                        .recv_bytes(streams[j], target.device_ptr(), bytes, piece.from_rank)?
                };
            }
        }
        Ok(())
    })
}
