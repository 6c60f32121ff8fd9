//! The host side of the single-pass machinery (`kernels/cuda/single_pass/`):
//! the tile state (its size, layout and status encodings) and the
//! [`Policy`] of a single-pass kernel, shared by every primitive built on the
//! decoupled look-back (scan, the segmented scan, compaction and
//! partition, the keyed runs of `compact`), as CUB's `ScanTileState` and
//! `AgentScanPolicy` are. The radix sort's per-digit look-back
//! (`single_pass/digit_lookback.cuh`) keeps its own state, sized by the sort
//! crate.
//!
//! | piece | CUDA | here |
//! |---|---|---|
//! | tile counters + per-tile {status, value} words, epoch-tagged | `single_pass/tile_status.cuh` | [`tile_state_words`], [`with_tile_state`], [`TileState`], [`StatusEncoding`] |
//! | the look-back over them | `single_pass/lookback.cuh` | [`Policy::lookback_width`], the delays |
//! | the kernel's shape | the algorithm's template arguments | [`Policy`] |
//!
//! A policy is data: build one with [`Policy::new`] (validated) or the
//! `const` builders (for tables; every table entry is checked by its crate's
//! tests), then [`Policy::validate`] it for an element width. Each algorithm
//! adds its own constraints (the scan refuses the persistent schedule,
//! compaction the streaming hints) and keeps its defaults per element width;
//! the measurements behind them are in `docs/tuning.md`.

use crate::buffer::DeviceViewMut;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// How tiles publish their status and value (see the header of
/// `kernels/cuda/single_pass/tile_status.cuh` for why each is correct).
///
/// One encoding per element width is the default of every policy:
/// [`StatusEncoding::Packed128`], what the scan measured best. The other is
/// kept for tuning sweeps and the protocol tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusEncoding {
    /// One status word per 16 bytes of state: 4-byte values packed with
    /// their status in a 64-bit word at a 16-byte stride; 8-byte values
    /// packed in one 128-bit word (`st/ld.relaxed.gpu.b128`, PTX ISA 8.3+).
    /// One memory access per publish and per inspected predecessor, no fence.
    Packed128,
    /// 4-byte values packed in a 64-bit word at an 8-byte stride; 8-byte
    /// values split into a status array and write-once value slots ordered
    /// by `fence.acq_rel.gpu` (two fences per tile, one per window read).
    Split,
}

impl StatusEncoding {
    /// The kernels' `STATUS8` template argument.
    ///
    /// ```
    /// use gpu_core::single_pass::StatusEncoding;
    /// assert_eq!(StatusEncoding::Split.cuda_flag(), 0);
    /// assert_eq!(StatusEncoding::Packed128.cuda_flag(), 1);
    /// ```
    pub fn cuda_flag(self) -> u32 {
        match self {
            StatusEncoding::Split => 0,
            StatusEncoding::Packed128 => 1,
        }
    }
}

/// Words before the status region: the two tile counters (a call draws
/// from one and its grid zeroes the other for the next call; they keep the
/// region 16-byte aligned).
pub const STATE_HEADER_WORDS: u64 = 2;

/// u64 words of the tile state for `num_tiles` tiles of `element_bytes`-byte
/// values (mirrors `tile_status.cuh`): the header, then one word per tile
/// (4-byte, split), two (packed 128, either width), or ⌈tiles/2⌉ words of
/// u32 statuses plus an aggregate and a prefix word per tile (8-byte, split).
///
/// ```
/// use gpu_core::single_pass::{tile_state_words, StatusEncoding, STATE_HEADER_WORDS};
/// // 1000 tiles of 4-byte values, packed: the header and two words per tile.
/// assert_eq!(tile_state_words(1000, 4, StatusEncoding::Packed128), STATE_HEADER_WORDS + 2000);
/// assert_eq!(tile_state_words(1000, 4, StatusEncoding::Split), STATE_HEADER_WORDS + 1000);
/// ```
pub fn tile_state_words(num_tiles: u64, element_bytes: usize, encoding: StatusEncoding) -> u64 {
    let region = match (element_bytes, encoding) {
        (4, StatusEncoding::Split) => num_tiles,
        (_, StatusEncoding::Split) => num_tiles.div_ceil(2) + 2 * num_tiles,
        (_, StatusEncoding::Packed128) => 2 * num_tiles,
    };
    STATE_HEADER_WORDS + region
}

/// Checks that a tile state at `address` suits `encoding`: the 128-bit
/// words need 16-byte alignment (allocations are 256-byte aligned, so this
/// guards against a caller's offset view).
///
/// ```
/// use gpu_core::single_pass::{check_state_alignment, StatusEncoding};
/// assert!(check_state_alignment(0x7f00_0000_0100, StatusEncoding::Packed128).is_ok());
/// assert!(check_state_alignment(0x7f00_0000_0108, StatusEncoding::Packed128).is_err());
/// assert!(check_state_alignment(0x7f00_0000_0108, StatusEncoding::Split).is_ok());
/// ```
pub fn check_state_alignment(address: u64, encoding: StatusEncoding) -> Result<()> {
    if encoding == StatusEncoding::Packed128 && !address.is_multiple_of(16) {
        return Err(Error::invalid(
            "tile state",
            "16-byte status words need a 16-byte aligned allocation",
        ));
    }
    Ok(())
}

/// The layout key of [`with_ticket_state`]'s words: no tile state has it
/// (their first entry is an element width), so untagged partials never
/// share a buffer with status words.
const TICKET_LAYOUT: [u64; 3] = [0, u64::MAX, 0];

/// Calls `enqueue` with a *ticket state*: the two tile counters of
/// [`STATE_HEADER_WORDS`] (used as in `tile_status.cuh`: the call's counter
/// `epoch & 1` is zero when its grid starts, and block 0 zeroes the other
/// for the next call) followed by `payload_words` words that the kernel
/// writes before it reads them (per-block partials of a "last block
/// finishes" reduction). From the handle's scratch arena, reused from call
/// to call with no memset, like [`with_tile_state`].
///
/// ```no_run
/// use gpu_core::single_pass::{with_ticket_state, STATE_HEADER_WORDS};
/// use gpu_core::Gpu;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// with_ticket_state(&gpu, 1024, |state| {
///     assert_eq!(state.words.len() as u64, STATE_HEADER_WORDS + 1024);
///     Ok(()) // launch a kernel that takes (state.words, state.epoch) here
/// })?;
/// # Ok(()) }
/// ```
pub fn with_ticket_state<R>(
    gpu: &Gpu,
    payload_words: u64,
    enqueue: impl FnOnce(TileState<'_>) -> Result<R>,
) -> Result<R> {
    let words = STATE_HEADER_WORDS
        .checked_add(payload_words)
        .and_then(|w| usize::try_from(w).ok())
        .ok_or_else(|| Error::invalid("payload_words", "too many words of ticket state"))?;
    gpu.with_epoch_scratch(TICKET_LAYOUT, words, |words, epoch| {
        enqueue(TileState { words, epoch })
    })
}

/// What fixes where a tile state's status words sit: two calls of the same
/// layout share a buffer, and a status word of one is only ever read as a
/// status word by the other (a stale one, of an older epoch, reads as not
/// published). The split 8-byte encoding places its value slots after the
/// statuses of all tiles, so there the tile count is part of the layout.
fn state_layout(num_tiles: u64, element_bytes: usize, encoding: StatusEncoding) -> [u64; 3] {
    let tiles = match (element_bytes, encoding) {
        (4, _) | (_, StatusEncoding::Packed128) => 0,
        (_, StatusEncoding::Split) => num_tiles,
    };
    [element_bytes as u64, u64::from(encoding.cuda_flag()), tiles]
}

/// One call's tile state: the words (the kernels' `u64* state`) and the
/// call's epoch (their `u32 epoch`, see `tile_status.cuh`).
pub struct TileState<'a> {
    /// [`tile_state_words`] words: the tile counters, then the statuses.
    pub words: DeviceViewMut<'a, u64>,
    /// This call's epoch: statuses tagged with another read as unpublished.
    pub epoch: u32,
}

/// Calls `enqueue` with a tile state for `num_tiles` tiles and this call's
/// epoch, taken from the handle's scratch arena (its stream's, or the
/// [`Workspace`](crate::Workspace) it was given). The state is
/// epoch-tagged, so after the first call of a layout a call enqueues no
/// memset and allocates nothing while the arena is large enough (see
/// `kernels/cuda/single_pass/tile_status.cuh`). Checks the 16-byte
/// alignment the 128-bit status words need. `enqueue` must only enqueue
/// work on `gpu`'s stream that uses the state, and that work must follow
/// the epoch protocol: draw tiles with `lookback_next_tile(state, epoch)`
/// and call `lookback_prepare_next_call(state, epoch)` from every block.
///
/// ```no_run
/// use gpu_core::single_pass::{with_tile_state, Policy, StatusEncoding};
/// use gpu_core::Gpu;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let policy = Policy::shape(256, 16).with_status(StatusEncoding::Packed128);
/// let tiles = policy.tiles(1 << 24);
/// with_tile_state(&gpu, tiles, 4, policy.status(), |state| {
///     assert_eq!(state.words.len() as u64, gpu_core::single_pass::tile_state_words(tiles, 4, policy.status()));
///     Ok(()) // launch the single-pass kernel with (state.words, state.epoch) here
/// })?;
/// # Ok(()) }
/// ```
pub fn with_tile_state<R>(
    gpu: &Gpu,
    num_tiles: u64,
    element_bytes: usize,
    encoding: StatusEncoding,
    enqueue: impl FnOnce(TileState<'_>) -> Result<R>,
) -> Result<R> {
    let words = tile_state_words(num_tiles, element_bytes, encoding);
    let len = usize::try_from(words)
        .map_err(|_| Error::invalid("n", format!("{num_tiles} tiles need too much tile state")))?;
    let layout = state_layout(num_tiles, element_bytes, encoding);
    gpu.with_epoch_scratch(layout, len, |words, epoch| {
        check_state_alignment(words.device_ptr(), encoding)?;
        enqueue(TileState { words, epoch })
    })
}

/// How a thread's items sit in a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileLayout {
    /// Thread t owns items t·ITEMS .. (t+1)·ITEMS. The scan gets there with
    /// striped coalesced loads and a padded shared-memory exchange;
    /// compaction loads the thread's 16-byte vectors directly.
    Blocked,
    /// Warp w owns 32·ITEMS consecutive items and lane l the 16-byte vectors
    /// l, l+32, l+64, …: every load instruction reads 512 contiguous bytes,
    /// no exchange.
    WarpStriped,
}

/// How tiles map to blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One block per tile, a grid of as many blocks as tiles, each block's
    /// tile drawn from the call's counter: safe whatever order the GPU
    /// starts the blocks in.
    TilePerBlock,
    /// One block per tile, the tile index the block's own index, as CUB's
    /// single-pass scan takes it: no atomic round trip and no barrier
    /// before a block's loads. The look-back relies on the GPU starting a
    /// grid's blocks in index order, so that the predecessors a block waits
    /// on are running or done; NVIDIA GPUs do.
    InBlockOrder,
    /// About as many blocks as are resident at once, each looping over
    /// tiles taken from the counter, the next tile's loads issued before
    /// this tile's look-back.
    Persistent,
}

/// The shape and variant of one single-pass kernel: every field is a
/// template argument or compile option, so every policy is a kernel of its
/// own (its crate names the module after all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    block_threads: u32,
    items_per_thread: u32,
    layout: TileLayout,
    lookback_width: u32,
    status: StatusEncoding,
    schedule: Schedule,
    min_blocks_per_sm: u32,
    spin_ns: u32,
    start_delay_ns: u32,
    streaming: bool,
}

/// Largest look-back delay, start or spin, in ns.
pub const MAX_DELAY_NS: u32 = 10_000;

/// Resident threads per multiprocessor (sm_80, sm_90).
const SM_THREADS: u64 = 2048;

impl Policy {
    /// A policy of `block_threads` × `items_per_thread`, checked (block a
    /// multiple of 32 from 32 to 1024, 1 to 64 items); every other field at
    /// its plain value (see [`Policy::shape`]).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::new(256, 16)?;
    /// assert_eq!(policy.tile_items(), 4096);
    /// assert!(Policy::new(100, 16).is_err()); // not a multiple of 32
    /// assert!(Policy::new(256, 65).is_err()); // more than 64 items
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(block_threads: u32, items_per_thread: u32) -> Result<Policy> {
        let policy = Policy::shape(block_threads, items_per_thread);
        policy.check_shape()?;
        Ok(policy)
    }

    /// A policy of this shape, unchecked (for `const` tables): blocked
    /// layout, one predecessor per lane per look-back round, the split
    /// status encoding, one tile per block, no register limit, no delays,
    /// no cache hints. Use [`Policy::validate`] before launching.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// const TABLE_ENTRY: Policy = Policy::shape(512, 8); // for const tables: unchecked
    /// assert!(TABLE_ENTRY.validate(4).is_ok());
    /// ```
    pub const fn shape(block_threads: u32, items_per_thread: u32) -> Policy {
        Policy {
            block_threads,
            items_per_thread,
            layout: TileLayout::Blocked,
            lookback_width: 1,
            status: StatusEncoding::Split,
            schedule: Schedule::TilePerBlock,
            min_blocks_per_sm: 0,
            spin_ns: 0,
            start_delay_ns: 0,
            streaming: false,
        }
    }

    /// With another layout.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, TileLayout};
    /// let policy = Policy::shape(256, 8).with_layout(TileLayout::WarpStriped);
    /// assert_eq!(policy.layout(), TileLayout::WarpStriped);
    /// ```
    pub const fn with_layout(mut self, layout: TileLayout) -> Self {
        self.layout = layout;
        self
    }
    /// With another look-back width: predecessors each lane inspects per
    /// round (a window of 32 × width tiles).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_lookback_width(4); // a window of 128 tiles
    /// assert_eq!(policy.lookback_width(), 4);
    /// assert!(Policy::shape(256, 8).with_lookback_width(3).validate(4).is_err());
    /// ```
    pub const fn with_lookback_width(mut self, width: u32) -> Self {
        self.lookback_width = width;
        self
    }
    /// With another status encoding.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, StatusEncoding};
    /// let policy = Policy::shape(256, 8).with_status(StatusEncoding::Packed128);
    /// assert_eq!(policy.status(), StatusEncoding::Packed128);
    /// ```
    pub const fn with_status(mut self, status: StatusEncoding) -> Self {
        self.status = status;
        self
    }
    /// With another schedule.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, Schedule};
    /// let policy = Policy::shape(256, 8).with_schedule(Schedule::Persistent);
    /// assert_eq!(policy.schedule(), Schedule::Persistent);
    /// ```
    pub const fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }
    /// With a register limit for `blocks` resident blocks per SM.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_min_blocks_per_sm(4);
    /// assert_eq!(policy.max_registers(), Some(64)); // 65,536 / (4 · 256)
    /// ```
    pub const fn with_min_blocks_per_sm(mut self, blocks: u32) -> Self {
        self.min_blocks_per_sm = blocks;
        self
    }
    /// With a sleep between re-reads of unpublished predecessors.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_spin_ns(100);
    /// assert_eq!(policy.spin_ns(), 100);
    /// ```
    pub const fn with_spin_ns(mut self, spin_ns: u32) -> Self {
        self.spin_ns = spin_ns;
        self
    }
    /// With a sleep before the look-back's first read.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_start_delay_ns(300);
    /// assert_eq!(policy.start_delay_ns(), 300);
    /// ```
    pub const fn with_start_delay_ns(mut self, start_delay_ns: u32) -> Self {
        self.start_delay_ns = start_delay_ns;
        self
    }
    /// With both look-back delays: `start` before the first read, `spin`
    /// between re-reads.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_delays(300, 100);
    /// assert_eq!((policy.start_delay_ns(), policy.spin_ns()), (300, 100));
    /// ```
    pub const fn with_delays(self, start: u32, spin: u32) -> Self {
        self.with_start_delay_ns(start).with_spin_ns(spin)
    }
    /// With or without evict-first (`.cs`) cache hints on the data's loads
    /// and stores.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 8).with_streaming(true);
    /// assert!(policy.streaming());
    /// ```
    pub const fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Threads per block: a multiple of 32, 32 to 1024.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).block_threads(), 256);
    /// ```
    pub fn block_threads(&self) -> u32 {
        self.block_threads
    }
    /// Items each thread holds in registers.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).items_per_thread(), 8);
    /// ```
    pub fn items_per_thread(&self) -> u32 {
        self.items_per_thread
    }
    /// The register arrangement of a tile.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, TileLayout};
    /// assert_eq!(Policy::shape(256, 8).layout(), TileLayout::Blocked);
    /// ```
    pub fn layout(&self) -> TileLayout {
        self.layout
    }
    /// Predecessors each look-back lane inspects per round (1, 2, 4 or 8).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).lookback_width(), 1);
    /// ```
    pub fn lookback_width(&self) -> u32 {
        self.lookback_width
    }
    /// The tile status encoding.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, StatusEncoding};
    /// assert_eq!(Policy::shape(256, 8).status(), StatusEncoding::Split);
    /// ```
    pub fn status(&self) -> StatusEncoding {
        self.status
    }
    /// One tile per block, or persistent blocks.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, Schedule};
    /// assert_eq!(Policy::shape(256, 8).schedule(), Schedule::TilePerBlock);
    /// ```
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }
    /// Blocks per SM the register allocation must allow (0: no limit).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).min_blocks_per_sm(), 0);
    /// assert_eq!(Policy::shape(256, 8).with_min_blocks_per_sm(2).min_blocks_per_sm(), 2);
    /// ```
    pub fn min_blocks_per_sm(&self) -> u32 {
        self.min_blocks_per_sm
    }
    /// `__nanosleep` between re-reads of unpublished predecessors (0: none).
    /// Applied on grids of 512 tiles or more.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).spin_ns(), 0);
    /// ```
    pub fn spin_ns(&self) -> u32 {
        self.spin_ns
    }
    /// One `__nanosleep` after publishing the aggregate, before the
    /// look-back's first read (0: none). Applied on grids of 512 tiles or
    /// more.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).start_delay_ns(), 0);
    /// ```
    pub fn start_delay_ns(&self) -> u32 {
        self.start_delay_ns
    }
    /// Evict-first cache hints on the data.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert!(!Policy::shape(256, 8).streaming());
    /// ```
    pub fn streaming(&self) -> bool {
        self.streaming
    }

    /// Items per tile (= per block at a time).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 16).tile_items(), 4096);
    /// ```
    pub fn tile_items(&self) -> u64 {
        self.block_threads as u64 * self.items_per_thread as u64
    }

    /// Tiles covering `n` items.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// let policy = Policy::shape(256, 16); // 4096 items per tile
    /// assert_eq!(policy.tiles(10_000), 3);
    /// assert_eq!(policy.tiles(0), 0);
    /// ```
    pub fn tiles(&self, n: u64) -> u64 {
        n.div_ceil(self.tile_items())
    }

    /// The `--maxrregcount` that `min_blocks_per_sm` implies (65,536
    /// registers per SM on every architecture we compile for, rounded down
    /// to a multiple of 8), if any. A kernel compiled with it goes without
    /// `__launch_bounds__` (which would override it).
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert_eq!(Policy::shape(256, 8).max_registers(), None);
    /// assert_eq!(Policy::shape(256, 8).with_min_blocks_per_sm(3).max_registers(), Some(80)); // 85, rounded down to 8s
    /// ```
    pub fn max_registers(&self) -> Option<u32> {
        if self.min_blocks_per_sm == 0 {
            return None;
        }
        let per_thread = 65_536 / (self.min_blocks_per_sm as u64 * self.block_threads as u64);
        Some((per_thread.min(255) as u32) & !7)
    }

    fn check_shape(&self) -> Result<()> {
        crate::launch::check_block_threads(self.block_threads, false)?;
        if !(1..=64).contains(&self.items_per_thread) {
            return Err(Error::invalid(
                "items_per_thread",
                format!("{}: must be 1 to 64", self.items_per_thread),
            ));
        }
        Ok(())
    }

    /// Checks what every single-pass kernel needs, for values of
    /// `element_bytes` bytes (4 or 8): the shape, the window width (1, 2,
    /// 4 or 8), delays of at most [`MAX_DELAY_NS`], and a register limit
    /// that leaves at least 24 registers and fits one SM. The algorithm
    /// checks its own constraints on top.
    ///
    /// ```
    /// use gpu_core::single_pass::Policy;
    /// assert!(Policy::shape(256, 16).validate(8).is_ok());
    /// assert!(Policy::shape(256, 16).validate(2).is_err()); // 4- or 8-byte values only
    /// assert!(Policy::shape(256, 16).with_spin_ns(20_000).validate(4).is_err()); // past MAX_DELAY_NS
    /// ```
    pub fn validate(&self, element_bytes: usize) -> Result<()> {
        self.check_shape()?;
        if element_bytes != 4 && element_bytes != 8 {
            return Err(Error::Unsupported(format!(
                "single-pass tile state for {element_bytes}-byte values (4 or 8 only)"
            )));
        }
        if ![1, 2, 4, 8].contains(&self.lookback_width) {
            return Err(Error::invalid(
                "lookback_width",
                format!("{}: must be 1, 2, 4 or 8", self.lookback_width),
            ));
        }
        if self.spin_ns > MAX_DELAY_NS {
            return Err(Error::invalid(
                "spin_ns",
                format!("{}: at most {MAX_DELAY_NS}", self.spin_ns),
            ));
        }
        if self.start_delay_ns > MAX_DELAY_NS {
            return Err(Error::invalid(
                "start_delay_ns",
                format!("{}: at most {MAX_DELAY_NS}", self.start_delay_ns),
            ));
        }
        if self.min_blocks_per_sm != 0 {
            let threads = self.min_blocks_per_sm as u64 * self.block_threads as u64;
            if threads > SM_THREADS || self.max_registers().unwrap_or(0) < 24 {
                return Err(Error::invalid(
                    "min_blocks_per_sm",
                    format!(
                        "{} blocks of {} threads do not fit one SM",
                        self.min_blocks_per_sm, self.block_threads
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A short, unique identifier of every field, for module keys and entry
    /// names: `256x16` for [`Policy::shape`], then `_ws` (warp-striped),
    /// `_w{width}`, `_p128`, `_bo` (in block order), `_persistent`,
    /// `_r{blocks}`, `_ns{spin}`,
    /// `_d{start}`, `_cs` (streaming) for the fields that differ from it.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, TileLayout};
    /// assert_eq!(Policy::shape(256, 16).tag(), "256x16");
    /// let striped = Policy::shape(512, 16).with_layout(TileLayout::WarpStriped).with_lookback_width(4);
    /// assert_eq!(striped.tag(), "512x16_ws_w4");
    /// ```
    pub fn tag(&self) -> String {
        format!(
            "{}x{}{}",
            self.block_threads,
            self.items_per_thread,
            self.variant_suffix()
        )
    }

    /// The non-default fields of [`Policy::tag`] (empty for a plain shape).
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, StatusEncoding};
    /// assert_eq!(Policy::shape(256, 16).variant_suffix(), "");
    /// assert_eq!(Policy::shape(256, 16).with_status(StatusEncoding::Packed128).variant_suffix(), "_p128");
    /// ```
    pub fn variant_suffix(&self) -> String {
        let mut suffix = String::new();
        if self.layout == TileLayout::WarpStriped {
            suffix.push_str("_ws");
        }
        if self.lookback_width != 1 {
            suffix.push_str(&format!("_w{}", self.lookback_width));
        }
        if self.status == StatusEncoding::Packed128 {
            suffix.push_str("_p128");
        }
        match self.schedule {
            Schedule::TilePerBlock => {}
            Schedule::InBlockOrder => suffix.push_str("_bo"),
            Schedule::Persistent => suffix.push_str("_persistent"),
        }
        if self.min_blocks_per_sm != 0 {
            suffix.push_str(&format!("_r{}", self.min_blocks_per_sm));
        }
        if self.spin_ns != 0 {
            suffix.push_str(&format!("_ns{}", self.spin_ns));
        }
        if self.start_delay_ns != 0 {
            suffix.push_str(&format!("_d{}", self.start_delay_ns));
        }
        if self.streaming {
            suffix.push_str("_cs");
        }
        suffix
    }

    /// A short human-readable name: `256x16`, `512x16 ws w4 r4`.
    ///
    /// ```
    /// use gpu_core::single_pass::{Policy, TileLayout};
    /// let policy = Policy::shape(512, 16).with_layout(TileLayout::WarpStriped).with_min_blocks_per_sm(4);
    /// assert_eq!(policy.label(), "512x16 ws r4");
    /// ```
    pub fn label(&self) -> String {
        self.tag().replace('_', " ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_sizes_follow_the_header() {
        use StatusEncoding::{Packed128, Split};
        assert_eq!(tile_state_words(1, 4, Split), 3);
        assert_eq!(tile_state_words(65_536, 4, Packed128), 2 + 131_072);
        assert_eq!(tile_state_words(5, 8, Split), 2 + 3 + 10);
        assert_eq!(tile_state_words(5, 8, Packed128), 2 + 10);
        assert!(check_state_alignment(0x1000, Packed128).is_ok());
        assert!(check_state_alignment(0x1008, Packed128).is_err());
        assert!(check_state_alignment(0x1008, Split).is_ok());
        assert_eq!(Packed128.cuda_flag(), 1);
        assert_eq!(Split.cuda_flag(), 0);
    }

    #[test]
    fn the_constructor_and_validate_refuse_bad_values() {
        assert!(Policy::new(256, 16).is_ok());
        for (b, i) in [(0, 4), (100, 4), (2048, 4), (64, 0), (64, 65)] {
            assert!(matches!(
                Policy::new(b, i),
                Err(Error::InvalidArgument { .. })
            ));
        }
        let fine = Policy::shape(512, 16);
        fine.validate(4).unwrap();
        assert!(fine.validate(2).is_err());
        assert!(fine.with_lookback_width(3).validate(4).is_err());
        assert!(fine.with_spin_ns(20_000).validate(4).is_err());
        assert!(fine.with_start_delay_ns(20_000).validate(8).is_err());
        fine.with_min_blocks_per_sm(4).validate(4).unwrap();
        assert!(fine.with_min_blocks_per_sm(5).validate(4).is_err());
        assert_eq!(
            Policy::shape(256, 8)
                .with_min_blocks_per_sm(6)
                .max_registers(),
            Some(40)
        );
    }

    #[test]
    fn tags_name_every_field() {
        let p = Policy::shape(256, 16)
            .with_layout(TileLayout::WarpStriped)
            .with_lookback_width(4)
            .with_min_blocks_per_sm(8);
        assert_eq!(p.tag(), "256x16_ws_w4_r8");
        assert_eq!(p.label(), "256x16 ws w4 r8");
        assert_eq!(Policy::shape(32, 1).tag(), "32x1");
        let all = p
            .with_status(StatusEncoding::Packed128)
            .with_schedule(Schedule::Persistent)
            .with_delays(3, 2)
            .with_streaming(true);
        assert_eq!(all.tag(), "256x16_ws_w4_p128_persistent_r8_ns2_d3_cs");
        let in_order = Policy::shape(256, 16).with_schedule(Schedule::InBlockOrder);
        assert_eq!(in_order.tag(), "256x16_bo");
        assert_eq!(in_order.label(), "256x16 bo");
    }

    /// A look-back of u64 sums over one-warp tiles, written directly on the
    /// tile state: out[t] = in[0] + … + in[t − 1]; out[num_tiles] counts
    /// blocks that drew a tile index past the end (a counter not reset).
    const PROTOCOL_KERNEL: &str = r#"
template <int STATUS8>
__device__ void epoch_protocol(const u64* in, u64* out, u64* state, u32 epoch, u64 num_tiles) {
    typedef typename TileStatusFor<u64, STATUS8>::type Status;
    __shared__ u64 tile_slot;
    lookback_prepare_next_call(state, epoch);
    if (threadIdx.x == 0) tile_slot = lookback_next_tile(state, epoch);
    __syncthreads();
    const u64 tile = tile_slot;
    if (tile >= num_tiles) {
        if (threadIdx.x == 0) atomicAdd((unsigned long long*)(out + num_tiles), 1ull);
        return;
    }
    Status status(lookback_status_region(state), num_tiles, epoch);
    if (threadIdx.x == 0) single_pass_publish_aggregate<u64, Status>(status, tile, in[tile]);
    const u64 prefix = single_pass_prefix<u64, sum_op<u64>, Status>(status, tile, in[tile]);
    if (threadIdx.x == 0) out[tile] = prefix;
}
extern "C" __global__ void epoch_protocol_split(const u64* in, u64* out, u64* state, u32 epoch, u64 num_tiles) {
    epoch_protocol<0>(in, out, state, epoch, num_tiles);
}
extern "C" __global__ void epoch_protocol_packed128(const u64* in, u64* out, u64* state, u32 epoch, u64 num_tiles) {
    epoch_protocol<1>(in, out, state, epoch, num_tiles);
}
"#;

    fn protocol_module() -> crate::ModuleSource {
        parprims_kernels::SINGLE_PASS
            .iter()
            .fold(crate::ModuleSource::new("epoch_protocol_test"), |m, h| {
                m.source(h)
            })
            .source(PROTOCOL_KERNEL)
    }

    /// Runs the protocol kernel once on `gpu`'s arena and checks every
    /// tile's prefix and that no block drew past the end.
    fn run_protocol(gpu: &Gpu, tiles: u64, encoding: StatusEncoding, salt: u64) -> Result<()> {
        use crate::{DeviceBuffer, KernelArgs, LaunchConfig};
        let entry = match encoding {
            StatusEncoding::Split => "epoch_protocol_split",
            StatusEncoding::Packed128 => "epoch_protocol_packed128",
        };
        let kernel = gpu.kernel(&protocol_module(), entry)?;
        let values: Vec<u64> = (0..tiles).map(|t| (t * 7 + salt) % 1000).collect();
        let input = DeviceBuffer::from_host(gpu, &values)?;
        let mut output = DeviceBuffer::<u64>::zeros(gpu, tiles as usize + 1)?;
        with_tile_state(gpu, tiles, 8, encoding, |mut state| {
            let mut args = KernelArgs::new();
            args.input(&input.view())
                .output(&mut output.view_mut())
                .output(&mut state.words)
                .scalar(state.epoch)
                .scalar(tiles);
            let config = LaunchConfig {
                grid: (tiles as u32, 1, 1),
                block: (32, 1, 1),
                shared_bytes: 0,
            };
            // SAFETY: (const u64* in, u64* out, u64* state, u32 epoch, u64
            // num_tiles): `in` has num_tiles values, `out` num_tiles + 1,
            // `state` tile_state_words(num_tiles, 8, encoding) words of this
            // epoch; one block per tile.
            unsafe { gpu.launch(&kernel, config, &args) }
        })?;
        let got = output.to_host(gpu)?;
        let mut running = 0u64;
        for (tile, value) in values.iter().enumerate() {
            assert_eq!(got[tile], running, "tile {tile} of {tiles}, {encoding:?}");
            running += value;
        }
        assert_eq!(got[tiles as usize], 0, "blocks drew tiles past the end");
        Ok(())
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn epochs_reuse_the_state_without_zeroing() -> Result<()> {
        let gpu = Gpu::new(0)?.with_new_stream()?;
        for encoding in [StatusEncoding::Packed128, StatusEncoding::Split] {
            // Larger then smaller grids on one state: stale statuses of
            // older epochs lie beyond and inside every later grid.
            for (call, tiles) in [3000u64, 17, 1, 2999, 64, 3000].into_iter().enumerate() {
                run_protocol(&gpu, tiles, encoding, call as u64)?;
            }
        }
        let stats = gpu.scratch_stats();
        let zeroings_before = stats.zeroings;
        let allocations_before = stats.allocations;
        for call in 0..20u64 {
            run_protocol(
                &gpu,
                1 + (call * 389) % 3000,
                StatusEncoding::Packed128,
                call,
            )?;
        }
        let stats = gpu.scratch_stats();
        assert_eq!(
            stats.allocations, allocations_before,
            "steady state allocated"
        );
        assert_eq!(stats.zeroings, zeroings_before, "steady state zeroed");
        Ok(())
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn epochs_wrap_by_zeroing_once() -> Result<()> {
        let gpu = Gpu::new(0)?.with_new_stream()?;
        run_protocol(&gpu, 500, StatusEncoding::Packed128, 1)?;
        // Jump to the last epochs; every call must still see only its own.
        {
            let mut arena = gpu.scratch.lock().unwrap();
            for slot in &mut arena.tile_states {
                slot.epoch = crate::scratch::MAX_EPOCH - 2;
            }
        }
        let zeroings = gpu.scratch_stats().zeroings;
        for call in 0..5u64 {
            run_protocol(&gpu, 500 - call * 50, StatusEncoding::Packed128, call)?;
        }
        // Epochs MAX − 1 and MAX, then one zeroing and epochs 1, 2, 3.
        assert_eq!(gpu.scratch_stats().zeroings, zeroings + 1);
        Ok(())
    }
}
