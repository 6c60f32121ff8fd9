//! The default sort's tuning knobs, for experts and the tuning sweep
//! (`examples/sort_tune.rs`): the Onesweep radix sort's [`OnesweepPolicy`]
//! as data. A caller who only sorts never needs this module (every entry
//! point takes [`OnesweepPolicy::default_for`]); one who tunes passes a
//! policy to [`sort_keys_with_policy`](crate::sort_keys_with_policy) or
//! [`sort_pairs_with_policy`](crate::sort_pairs_with_policy), and a policy
//! given is used or refused with a typed error, never dropped.
//!
//! | knob | values | what it changes |
//! |---|---|---|
//! | pass threads | 256, 384, 512 | warps per tile (threads 0 … 255 own a digit each in the look-back) |
//! | pass items | 1 … 32 per thread | keys per tile = threads × items, bounded by the shared-memory budget for the key and value widths |
//! | [`RankMethod`] | ballots, match-any, atomic or | how a warp finds the lanes holding its digit |
//! | [`TileCounts`] | early, from the ranks, by warp | when a tile counts its keys by digit for the look-back |
//! | [`TileOrder`] | counter, block order | how a pass's block finds its tile |
//! | [`PassDigits`] | recomputed, packed | whether a pass's thread takes each key's digit once or at every use |
//! | upsweep threads, items | 256, 384, 512; 1 … 32 | the all-digit histogram's block and keys per thread per round |
//! | [`UpsweepCounters`] | one set, per-lane copies | where the all-digit histogram's shared-memory counters live |
//!
//! Every size the host derives from a policy (tile, portion, look-back
//! state rows, dynamic shared memory of the pass) is computed here, in one
//! place. The inputs of at most [`crate::modules::one_launch_max_keys`]
//! keys take the one-launch sorts (one block, or one cluster on sm_90 and
//! newer), whose shape is fixed: a policy tunes the upsweep and the digit
//! passes only.

use gpu_core::{Error, Result};

use crate::key::{PayloadWidth, SortKey};

/// How a warp finds the lanes whose key has the same digit as its own
/// (`kernels/cuda/sort/warp_rank.cuh`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RankMethod {
    /// One ballot of the lanes holding keys and one per digit bit (9 for an
    /// 8-bit digit), the masks combined per lane.
    #[default]
    Ballots,
    /// One `__match_any_sync` on the digit.
    MatchAny,
    /// One shared-memory `atomicOr` of the lane's bit into its digit's word
    /// of a warp-private table of 256 masks, read back after the warp's
    /// sync (CUB's `WARP_MATCH_ATOMIC_OR`): one atomic and one load per
    /// key instead of eight ballots per row, for 1 KiB more shared memory
    /// per warp. Each row is ranked at once (its peers' counter read and
    /// grown, the masks cleared for the next row).
    AtomicOr,
}

impl RankMethod {
    /// Every method.
    pub const ALL: [RankMethod; 3] = [
        RankMethod::Ballots,
        RankMethod::MatchAny,
        RankMethod::AtomicOr,
    ];

    /// The name in tables and module names.
    ///
    /// ```
    /// assert_eq!(sort::policy::RankMethod::MatchAny.name(), "match-any");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            RankMethod::Ballots => "ballots",
            RankMethod::MatchAny => "match-any",
            RankMethod::AtomicOr => "atomic-or",
        }
    }
}

/// When a digit pass's tile counts its keys by digit, the counts its
/// successors read in the look-back (`kernels/cuda/sort/onesweep.cu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TileCounts {
    /// Right after the load, with one shared-memory increment per key, and
    /// published before the ranking, so that later tiles find them early.
    #[default]
    Early,
    /// After the ranking, as the sum of the warps' counters of each digit:
    /// no increments and one digit computation fewer per key, published
    /// later.
    FromRanks,
    /// Right after the load, with one shared increment per key into the
    /// warp's own counters, summed over the warps and published before the
    /// ranking; the tile's start of each digit and each warp's first slot
    /// of it are known before the ranking too, so the ranking hands out a
    /// key's slot in the tile at once (no second lookup of a warp offset
    /// per key, one digit computation fewer than [`TileCounts::Early`]),
    /// and the keys go into the exchange while the look-back runs (the
    /// order of CUB's Onesweep).
    ByWarp,
}

impl TileCounts {
    /// Every way.
    pub const ALL: [TileCounts; 3] = [TileCounts::Early, TileCounts::FromRanks, TileCounts::ByWarp];

    /// The value of the kernel's `SORT_TILE_COUNTS` define
    /// (`SORT_COUNTS_FROM_RANKS` 0, `SORT_COUNTS_EARLY` 1,
    /// `SORT_COUNTS_BY_WARP` 2 in `kernels/cuda/sort/onesweep.cu`).
    pub(crate) fn define(self) -> u32 {
        match self {
            TileCounts::FromRanks => 0,
            TileCounts::Early => 1,
            TileCounts::ByWarp => 2,
        }
    }

    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(sort::policy::TileCounts::FromRanks.name(), "counts from ranks");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            TileCounts::Early => "early counts",
            TileCounts::FromRanks => "counts from ranks",
            TileCounts::ByWarp => "counts by warp",
        }
    }
}

/// How a digit pass's block finds its tile (`kernels/cuda/sort/onesweep.cu`,
/// `SORT_TILES_IN_BLOCK_ORDER`). Either way a tile looks back only at
/// tiles of lower index, so a block waits only on blocks that started
/// before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TileOrder {
    /// Thread 0 draws the next tile index from the launch's zeroed counter,
    /// and the block learns it at a barrier: one atomic round trip to L2
    /// before the tile's loads can start, and safe whatever order the GPU
    /// starts the blocks in.
    Counter,
    /// The block's own index, as CUB's single-pass scan takes its tile
    /// ([`gpu_core::single_pass::Schedule::InBlockOrder`]): the loads start
    /// at once. The look-back then relies on the GPU starting a grid's
    /// blocks in index order, which NVIDIA GPUs do.
    #[default]
    InBlockOrder,
}

impl TileOrder {
    /// Both ways.
    pub const ALL: [TileOrder; 2] = [TileOrder::InBlockOrder, TileOrder::Counter];

    /// The value of the kernel's `SORT_TILES_IN_BLOCK_ORDER` define.
    pub(crate) fn define(self) -> u32 {
        u32::from(self == TileOrder::InBlockOrder)
    }

    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(sort::policy::TileOrder::Counter.name(), "tile counter");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            TileOrder::Counter => "tile counter",
            TileOrder::InBlockOrder => "tiles in block order",
        }
    }
}

/// Whether a digit pass's thread takes each key's digit of the pass once
/// or at every use (`kernels/cuda/sort/onesweep.cu`, `SORT_PACKED_DIGITS`).
/// A pass uses each key's digit three or four times in registers (the
/// tile's count with early or per-warp counts, the peer search, the rank,
/// the key's slot) and once more when it stores the key from the exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PassDigits {
    /// Computed from the key at every use: a shift and a mask for an
    /// unsigned key; for a float key its image first, a NaN test, the
    /// sign's flip and a select.
    #[default]
    Recomputed,
    /// Computed once after the load and kept four to a register
    /// (`ITEMS / 4` more registers), each use one byte permute.
    Packed,
}

impl PassDigits {
    /// Both ways.
    pub const ALL: [PassDigits; 2] = [PassDigits::Recomputed, PassDigits::Packed];

    /// The value of the kernel's `SORT_PACKED_DIGITS` define.
    pub(crate) fn define(self) -> u32 {
        u32::from(self == PassDigits::Packed)
    }

    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(sort::policy::PassDigits::Packed.name(), "digits packed");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            PassDigits::Recomputed => "digits recomputed",
            PassDigits::Packed => "digits packed",
        }
    }
}

/// Where the upsweep (the one read of the keys that histograms every
/// digit pass at once) keeps its shared-memory counters
/// (`kernels/cuda/sort/onesweep.cu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum UpsweepCounters {
    /// One counter per pass and digit in the block: 1 KiB per pass. The
    /// lanes of a warp incrementing random digits meet in the same
    /// shared-memory banks (about 3.5 ways for uniform 8-bit digits), and
    /// every conflict is one more pass of the increment through the banks.
    Shared,
    /// [`OnesweepPolicy::upsweep_copies`] copies of every counter, lane L
    /// incrementing copy L mod copies at bank L mod copies, so a warp's
    /// increments meet in a bank only where two lanes share a copy (at
    /// most 2 ways for 4-byte keys, 4 for 8-byte); the copies are summed
    /// when the block is done. 64 KiB for full-width keys of 2, 4 and 8
    /// bytes, 32 KiB for 1-byte keys. Measured on an H100
    /// (`sort_tune --grid upsweep`, the same vector loop either way): the
    /// sort of 2^28 `u32` keys 5.910 ms against 5.955 ms with one set,
    /// `u32` pairs 9.327 against 9.388 ms, 2^27 `u64` keys 8.683 against
    /// 8.667 ms (within the sweep's noise).
    #[default]
    PerLane,
}

impl UpsweepCounters {
    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(sort::policy::UpsweepCounters::PerLane.name(), "per-lane counters");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            UpsweepCounters::Shared => "shared counters",
            UpsweepCounters::PerLane => "per-lane counters",
        }
    }
}

/// The block sizes a pass or upsweep may have: whole warps, at least one
/// thread per digit, at most 512 (the warp counters of 16 warps take
/// 16 KiB of shared memory).
pub const BLOCK_THREADS_CHOICES: [u32; 3] = [256, 384, 512];

/// Most keys per thread of the pass and the upsweep (register arrays).
pub const MAX_ITEMS: u32 = 32;

/// Inputs of at most this many keys take [`OnesweepPolicy::SMALL_INPUT`]
/// ([`OnesweepPolicy::default_for_len`]).
pub const SMALL_INPUT_MAX_KEYS: u64 = 1 << 18;

/// Inputs past [`SMALL_INPUT_MAX_KEYS`] and of at most this many keys take
/// [`OnesweepPolicy::mid_input_for`] where a key type has one
/// ([`OnesweepPolicy::default_for_len`]).
pub const MID_INPUT_MAX_KEYS: u64 = 1 << 26;

/// Most dynamic shared memory a digit pass may take, bytes: 99 KiB, the
/// smallest opt-in limit per block of the GPUs from sm_80 on (sm_86 and
/// sm_89; sm_80 allows 163 KiB, sm_90 227 KiB). The launch also checks the
/// device's own limit.
pub const PASS_SHARED_BUDGET_BYTES: u32 = 99 << 10;

/// Keys a portion may hold at most: a pass's look-back counts are 30 bits
/// (`kernels/cuda/single_pass/digit_lookback.cuh`), and portions of at most
/// 2^28 keys keep them well below.
pub const PORTION_MAX_KEYS: u64 = 1 << 28;

/// Look-back counts are below this (30 bits).
pub const LOOKBACK_COUNT_LIMIT: u64 = 1 << 30;

/// The Onesweep sort's tuning: the digit pass's block threads, keys per
/// thread and [`RankMethod`], the upsweep's block threads and keys per
/// thread. Built by [`OnesweepPolicy::new`] (checked), checked against the
/// key and value widths by [`OnesweepPolicy::check_widths`].
///
/// ```
/// use sort::policy::{OnesweepPolicy, RankMethod};
/// let policy = OnesweepPolicy::new(384, 16, RankMethod::MatchAny)?;
/// assert_eq!(policy.tile(), 6144);
/// assert_eq!(policy.portion_keys() % policy.tile(), 0);
/// assert!(OnesweepPolicy::new(320, 16, RankMethod::Ballots).is_err());
/// // 512 × 32 u64 keys and values do not fit the shared-memory budget.
/// let wide = OnesweepPolicy::new(512, 32, RankMethod::Ballots)?;
/// assert!(wide.check_widths(8, 8).is_err());
/// # Ok::<(), gpu_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnesweepPolicy {
    pass_threads: u32,
    pass_items: u32,
    rank: RankMethod,
    counts: TileCounts,
    tiles: TileOrder,
    digits: PassDigits,
    upsweep_threads: u32,
    upsweep_items: u32,
    upsweep_counters: UpsweepCounters,
}

impl OnesweepPolicy {
    /// Passes of 256 threads × 16 keys ranked by ballots, an upsweep of 256
    /// threads × 16 keys: the base of [`OnesweepPolicy::new`] and the
    /// upsweep of every default ([`OnesweepPolicy::default_for`], whose
    /// passes are wider).
    pub const DEFAULT: OnesweepPolicy = OnesweepPolicy {
        pass_threads: 256,
        pass_items: 16,
        rank: RankMethod::Ballots,
        counts: TileCounts::Early,
        tiles: TileOrder::InBlockOrder,
        digits: PassDigits::Recomputed,
        upsweep_threads: 256,
        upsweep_items: 16,
        upsweep_counters: UpsweepCounters::PerLane,
    };

    /// A policy with these digit passes and the default upsweep, checked:
    /// `pass_threads` one of [`BLOCK_THREADS_CHOICES`], `pass_items` in
    /// 1 ..= [`MAX_ITEMS`], and the pass's shared memory for the narrowest
    /// keys (1 byte) within [`PASS_SHARED_BUDGET_BYTES`]; wider keys and
    /// values are checked by [`OnesweepPolicy::check_widths`].
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, RankMethod};
    /// assert_eq!(OnesweepPolicy::new(256, 16, RankMethod::Ballots)?, OnesweepPolicy::DEFAULT);
    /// assert!(OnesweepPolicy::new(256, 0, RankMethod::Ballots).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(pass_threads: u32, pass_items: u32, rank: RankMethod) -> Result<Self> {
        let policy = OnesweepPolicy {
            pass_threads,
            pass_items,
            rank,
            ..OnesweepPolicy::DEFAULT
        };
        policy.check()?;
        Ok(policy)
    }

    /// This policy with the upsweep's block threads (one of
    /// [`BLOCK_THREADS_CHOICES`]) and keys per thread per round (1 ..=
    /// [`MAX_ITEMS`]), checked.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// let p = OnesweepPolicy::DEFAULT.with_upsweep(512, 8)?;
    /// assert_eq!((p.upsweep_threads(), p.upsweep_items()), (512, 8));
    /// assert!(OnesweepPolicy::DEFAULT.with_upsweep(128, 16).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn with_upsweep(self, threads: u32, items: u32) -> Result<Self> {
        let policy = OnesweepPolicy {
            upsweep_threads: threads,
            upsweep_items: items,
            ..self
        };
        policy.check()?;
        Ok(policy)
    }

    /// This policy with its upsweep's counters kept as `counters` says.
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, UpsweepCounters};
    /// let p = OnesweepPolicy::DEFAULT.with_upsweep_counters(UpsweepCounters::Shared);
    /// assert_eq!(p.upsweep_counters(), UpsweepCounters::Shared);
    /// assert_eq!(p.upsweep_copies(4), 1);
    /// ```
    pub fn with_upsweep_counters(self, counters: UpsweepCounters) -> Self {
        OnesweepPolicy {
            upsweep_counters: counters,
            ..self
        }
    }

    /// This policy with its tiles counting their keys by digit as `counts`
    /// says (any shape takes either).
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, TileCounts};
    /// let p = OnesweepPolicy::DEFAULT.with_tile_counts(TileCounts::FromRanks);
    /// assert_eq!(p.tile_counts(), TileCounts::FromRanks);
    /// ```
    pub fn with_tile_counts(self, counts: TileCounts) -> Self {
        OnesweepPolicy { counts, ..self }
    }

    /// This policy with its passes' blocks finding their tiles as `tiles`
    /// says (any shape takes either).
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, TileOrder};
    /// let p = OnesweepPolicy::DEFAULT.with_tile_order(TileOrder::Counter);
    /// assert_eq!(p.tile_order(), TileOrder::Counter);
    /// ```
    pub fn with_tile_order(self, tiles: TileOrder) -> Self {
        OnesweepPolicy { tiles, ..self }
    }

    /// This policy with its passes taking each key's digit as `digits`
    /// says (any shape takes either).
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, PassDigits};
    /// let p = OnesweepPolicy::DEFAULT.with_pass_digits(PassDigits::Packed);
    /// assert_eq!(p.pass_digits(), PassDigits::Packed);
    /// ```
    pub fn with_pass_digits(self, digits: PassDigits) -> Self {
        OnesweepPolicy { digits, ..self }
    }

    /// This policy with its passes finding each key's peers by `rank`
    /// (any shape takes each; [`RankMethod::AtomicOr`] adds 1 KiB of
    /// shared memory per warp, which [`OnesweepPolicy::check_widths`]
    /// checks against the key and value widths).
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, RankMethod};
    /// let p = OnesweepPolicy::DEFAULT.with_rank_method(RankMethod::AtomicOr);
    /// assert_eq!(p.rank(), RankMethod::AtomicOr);
    /// assert_eq!(p.pass_shared_bytes(4, 0), OnesweepPolicy::DEFAULT.pass_shared_bytes(4, 0) + 8 * 1024);
    /// ```
    pub fn with_rank_method(self, rank: RankMethod) -> Self {
        OnesweepPolicy { rank, ..self }
    }

    /// The policy the entry points use for keys `K` with `payload` (values
    /// of that width, or none): digit passes ranked by ballots (faster than
    /// match-any in every measured case, and than atomic-or in every one
    /// but `f32` keys at 2^24) of the shape below, the upsweep of
    /// [`OnesweepPolicy::DEFAULT`] (256 × 16).
    ///
    /// | keys | payload | pass threads × keys | chosen by |
    /// |---|---|---|---|
    /// | 1, 4 bytes | none | 512 × 16 | measured (u32 keys: the fastest at 2^24 and 2^28, 256 × 24 within 1 %, 256 × 16 1.09x and 1.11x slower) |
    /// | 8 bytes | none | 512 × 16 | measured (u64 keys with tile counts by warp: 1.06x at 2^27 and 1.05x at 2^24 over 512 × 12 with early counts; 512 × 16 with early counts was within 1.5 % of 512 × 12) |
    /// | 1, 4 bytes | values of 1, 2, 4 bytes | 512 × 16 | measured for u32 keys with u32 values (1.05x at 2^24, 1.10x at 2^28 over 384 × 16 and 512 × 12); the other widths by rule |
    /// | 2 bytes | none, or values of 1, 2, 4 bytes | 512 × 12 | by rule: 512 × 16 spills to local memory within 64 registers |
    /// | 1, 2, 4 bytes | values of 8 bytes | 512 × 12 | by rule: 512 × 16 spills within 64 registers |
    /// | 8 bytes | values of 1, 2, 4, 8 bytes | 512 × 12 | by rule (the shape 8-byte keys had before tile counts by warp) |
    ///
    /// Tiles count their keys ([`TileCounts`]):
    ///
    /// | keys | payload | tile counts | chosen by |
    /// |---|---|---|---|
    /// | 8 bytes | none | [`TileCounts::ByWarp`] | measured on `u64` keys (above; on a second H100 7.5 % faster at 2^27 than early counts at 512 × 16) |
    /// | 1, 4 bytes, integers | values of 1, 2, 4 bytes | [`TileCounts::ByWarp`] | measured on `u32` keys with `u32` values on two H100s: 1.009x and 1.010x at 2^28, 1.015x and 1.016x at 2^24 over early counts (the other widths by rule) |
    /// | `f32` | values of 1, 2, 4 bytes | [`TileCounts::Early`] | measured with `u32` values: by warp 2.0 % slower at 2^28, 0.2 % faster at 2^24 |
    /// | `f32` | none | [`TileCounts::FromRanks`] | measured: 4.7 % faster than early counts at 2^28 and 2 % at 2^24 (a float key's digit costs a NaN test and a select more, and early counts take it once more per key); by warp within 1 % of it (1 % slower at 2^28, 1 % faster at 2^24) |
    /// | other | | [`TileCounts::Early`] | measured on `u32` keys: by warp equal at 2^28 and 2.2 % slower at 2^24, from the ranks 0.2 % and 4.6 % slower |
    ///
    /// The tile-count figures are from `sort_tune --grid counts` (one
    /// process on an H100, median of 10); `f64` keys follow `u64` and were
    /// not measured on their own.
    ///
    /// Passes find their tiles ([`TileOrder`]) in block order, except where
    /// tiles count from the ranks (`f32` keys alone), which take them from
    /// the counter. Measured by `sort_tune --grid order` (one process on an
    /// H200, median of 10, ms, block order against the counter):
    ///
    /// | case | smaller n | 2^28 (2^27 for 8-byte keys and for pairs) |
    /// |---|---|---|
    /// | `u32` keys | 2^24: 0.4118 against 0.4219 | 5.7112, 5.7010, 5.7363 against 5.7447, 5.7395, 5.7512 (three runs) |
    /// | `f32` keys, counts from the ranks | 2^24: 0.4457 against 0.4597 | 6.4044, 6.4138, 6.4587 against 6.2571, 6.2495, 6.2403 |
    /// | `u64` keys | 2^24: 1.0136 against 1.0328 | 7.3636 against 7.4557 |
    /// | `u32` keys, `u32` values | 2^24: 0.5508 against 0.5771 | 3.9824 against 4.0314 |
    ///
    /// So `f32` keys alone gain 2.4–3.5 % from the counter at 2^28 and give
    /// up 3 % at 2^24 (one run); every other case gains 0.3–4.6 % from
    /// block order.
    ///
    /// `f32` keys, alone or with values, take each key's digit once and
    /// keep it packed ([`PassDigits::Packed`]); every other key type
    /// recomputes it. Measured by `sort_tune --grid digits` (two processes
    /// on H200s, median of 10, ms, packed against recomputed with the same
    /// counts and order):
    ///
    /// | case | 2^24 | 2^28 |
    /// |---|---|---|
    /// | `f32` keys (the default's counts from the ranks, counter) | 0.4471, 0.4495 against 0.4471, 0.4537 | 6.0167, 6.0167 against 6.1378, 6.0727 |
    /// | `f32` keys, `u32` values (early counts, block order) | | 8.2424, 8.1975 against 8.2276, 8.2090 |
    /// | `u32` keys (early counts, block order) | 0.4186, 0.4170 against 0.4079, 0.4032 | 5.8009, 5.8099 against 5.6778, 5.6610 |
    /// | `u32` keys, `u32` values (counts by warp) | | 8.0367, 7.9462 against 7.9225, 7.8972 |
    ///
    /// `f32` keys alone gain 0.9–2.0 % at 2^28; with values it is a wash.
    /// A `u32` key's digit is a shift and a mask, so the four registers the
    /// packed digits hold cost more than the recomputing saves; `f64` keys'
    /// 512 × 16 passes spill with them.
    ///
    /// Measured by the tuning sweep (`examples/sort_tune.rs`, median of 10
    /// runs on an H100) over the grid of [`sweep_grid`], every pass
    /// compiled for [`OnesweepPolicy::pass_min_blocks_per_sm`] blocks. Every
    /// row fits the
    /// shared-memory budget for every width it covers, and its digit pass
    /// compiles for sm_90 with no local-memory accesses at each of those
    /// widths (`tests/policy.rs`); a shape that did not fit
    /// would give way to the most keys per thread that fit at its block
    /// threads ([`OnesweepPolicy::check_widths`]), never to an error.
    ///
    /// ```
    /// use sort::key::PayloadWidth;
    /// use sort::policy::OnesweepPolicy;
    /// let narrow = OnesweepPolicy::default_for::<u32>(None);
    /// assert_eq!((narrow.pass_threads(), narrow.pass_items()), (512, 16));
    /// let wide = OnesweepPolicy::default_for::<u64>(None);
    /// assert_eq!((wide.pass_threads(), wide.pass_items()), (512, 16));
    /// let wide_pairs = OnesweepPolicy::default_for::<u64>(Some(PayloadWidth::B4));
    /// assert_eq!((wide_pairs.pass_threads(), wide_pairs.pass_items()), (512, 12));
    /// let pairs = OnesweepPolicy::default_for::<f32>(Some(PayloadWidth::B4));
    /// assert_eq!((pairs.pass_threads(), pairs.pass_items()), (512, 16));
    /// use sort::policy::TileCounts;
    /// assert_eq!(OnesweepPolicy::default_for::<f32>(None).tile_counts(), TileCounts::FromRanks);
    /// assert_eq!(narrow.tile_counts(), TileCounts::Early);
    /// assert_eq!(wide.tile_counts(), TileCounts::ByWarp);
    /// assert_eq!(pairs.tile_counts(), TileCounts::Early);
    /// use sort::policy::TileOrder;
    /// assert_eq!(OnesweepPolicy::default_for::<f32>(None).tile_order(), TileOrder::Counter);
    /// assert_eq!(narrow.tile_order(), TileOrder::InBlockOrder);
    /// let int_pairs = OnesweepPolicy::default_for::<u32>(Some(PayloadWidth::B4));
    /// assert_eq!(int_pairs.tile_counts(), TileCounts::ByWarp);
    /// ```
    pub fn default_for<K: SortKey>(payload: Option<PayloadWidth>) -> Self {
        let value_bytes = payload.map_or(0, PayloadWidth::bytes);
        // 512 × 16 spills within the pass's 64 registers for 2-byte keys
        // and for 8-byte values; 8-byte keys with values keep 512 × 12.
        let wide = K::BYTES == 2 || value_bytes > 4 || (K::BYTES > 4 && payload.is_some());
        let (threads, items) = if wide { (512, 12) } else { (512, 16) };
        let counts = match (K::BYTES, payload) {
            (8, None) => TileCounts::ByWarp,
            (1 | 4, Some(_)) if value_bytes <= 4 && !K::IS_FLOAT => TileCounts::ByWarp,
            (4, None) if K::IS_FLOAT => TileCounts::FromRanks,
            _ => TileCounts::Early,
        };
        // f32 keys alone count from the ranks, and there tiles from the
        // counter measured faster at 2^28 (the table below).
        let tiles = if counts == TileCounts::FromRanks {
            TileOrder::Counter
        } else {
            TileOrder::InBlockOrder
        };
        // A float key's digit is dear (its image takes a NaN test and a
        // select): `f32` passes take each digit once. `f64` keys' 512 × 16
        // passes spill with the packed digits' four registers more.
        let digits = if K::IS_FLOAT && K::BYTES == 4 {
            PassDigits::Packed
        } else {
            PassDigits::Recomputed
        };
        let shape = |items| OnesweepPolicy {
            pass_threads: threads,
            pass_items: items,
            counts,
            tiles,
            digits,
            ..OnesweepPolicy::DEFAULT
        };
        // The most keys per thread, at most the table's, that fit the
        // widths (one key per thread always fits).
        (1..=items)
            .rev()
            .map(shape)
            .find(|policy| policy.check_widths(K::BYTES, value_bytes).is_ok())
            .unwrap_or_else(|| shape(1))
    }

    /// The policy of inputs of at most [`SMALL_INPUT_MAX_KEYS`] keys:
    /// passes and upsweep of 256 threads × 8 keys, ranked by ballots. At
    /// such sizes a pass of the large shapes has a handful of tiles, and
    /// each tile's latency (load, rank, look-back, scatter) is the pass's
    /// time; smaller tiles spread it over more SMs. Its upsweep keeps one
    /// set of counters ([`UpsweepCounters::Shared`]): a block there reads
    /// a few thousand keys, fewer than the words it would zero and sum
    /// with per-lane copies.
    pub const SMALL_INPUT: OnesweepPolicy = OnesweepPolicy {
        pass_threads: 256,
        pass_items: 8,
        rank: RankMethod::Ballots,
        counts: TileCounts::Early,
        tiles: TileOrder::InBlockOrder,
        digits: PassDigits::Recomputed,
        upsweep_threads: 256,
        upsweep_items: 8,
        upsweep_counters: UpsweepCounters::Shared,
    };

    /// The policy the entry points use for `n` keys `K` with `payload`:
    /// [`OnesweepPolicy::SMALL_INPUT`] up to [`SMALL_INPUT_MAX_KEYS`] keys,
    /// [`OnesweepPolicy::mid_input_for`] up to [`MID_INPUT_MAX_KEYS`] keys
    /// where the key type has one, [`OnesweepPolicy::default_for`] beyond.
    /// The small-input policy was measured by the tuning
    /// sweep's small grid (`sort_tune --grid small`, median of 20 on an
    /// H100) against passes of 512 × 16: u32 keys 1.29x faster at 2^16 and
    /// 1.20x at 2^18, u32 keys with u32 values 1.37x and 1.24x, u64 keys
    /// 1.45x and 1.28x (their large-input shape, 512 × 12, was not in that
    /// grid); at 2^20 512 × 16 is the faster for all three.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// assert_eq!(OnesweepPolicy::default_for_len::<u32>(None, 1 << 16), OnesweepPolicy::SMALL_INPUT);
    /// assert_eq!(
    ///     OnesweepPolicy::default_for_len::<u32>(None, 1 << 20),
    ///     OnesweepPolicy::default_for::<u32>(None)
    /// );
    /// ```
    pub fn default_for_len<K: SortKey>(payload: Option<PayloadWidth>, n: usize) -> Self {
        let small = OnesweepPolicy::SMALL_INPUT;
        if n as u64 <= SMALL_INPUT_MAX_KEYS && small.check_for::<K>(payload).is_ok() {
            return small;
        }
        match OnesweepPolicy::mid_input_for::<K>(payload) {
            Some(mid) if n as u64 <= MID_INPUT_MAX_KEYS => mid,
            _ => OnesweepPolicy::default_for::<K>(payload),
        }
    }

    /// The policy of inputs of keys `K` with `payload` past
    /// [`SMALL_INPUT_MAX_KEYS`] and up to [`MID_INPUT_MAX_KEYS`] keys where
    /// it differs from [`OnesweepPolicy::default_for`]: for `f32` keys
    /// alone, the default with tiles counted by warp
    /// ([`TileCounts::ByWarp`]), which publishes each tile's counts before
    /// the ranking instead of after it. Where a pass has few tiles per
    /// resident block, a tile's successors wait on its counts, and publishing
    /// them early pays; at 2^28 the default's fewer instructions per key do.
    /// `sort_tune --grid digits --cases f32` (one H200, median of 10, ms;
    /// every output checked), the default against counts by warp (tiles
    /// from the counter, digits packed, as the default):
    ///
    /// | keys | default | counts by warp |
    /// |---|---|---|
    /// | 2^19 | 0.0649 | 0.0658 |
    /// | 2^20 | 0.0703 | 0.0709 |
    /// | 2^22 | 0.1619 | 0.1427 |
    /// | 2^24 | 0.4555 | 0.4345 |
    /// | 2^26 | 1.5688 | 1.5618 |
    /// | 2^28 | 5.9868 | 5.9976 |
    ///
    /// (2^24 in an earlier run on another H200: 0.4471 and 0.4495 against
    /// 0.4290 and 0.4292; 2^28: 6.0167 against 6.0548 and 6.0288.) Other
    /// keys and payloads: `None`.
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, TileCounts};
    /// let mid = OnesweepPolicy::mid_input_for::<f32>(None).unwrap();
    /// assert_eq!(mid.tile_counts(), TileCounts::ByWarp);
    /// assert_eq!(OnesweepPolicy::default_for_len::<f32>(None, 1 << 24), mid);
    /// assert_eq!(
    ///     OnesweepPolicy::default_for_len::<f32>(None, 1 << 28),
    ///     OnesweepPolicy::default_for::<f32>(None)
    /// );
    /// assert!(OnesweepPolicy::mid_input_for::<u32>(None).is_none());
    /// ```
    pub fn mid_input_for<K: SortKey>(payload: Option<PayloadWidth>) -> Option<Self> {
        (K::IS_FLOAT && K::BYTES == 4 && payload.is_none())
            .then(|| OnesweepPolicy::default_for::<K>(payload).with_tile_counts(TileCounts::ByWarp))
    }

    /// Threads per block of the digit pass.
    pub fn pass_threads(&self) -> u32 {
        self.pass_threads
    }

    /// Keys per thread of the digit pass.
    pub fn pass_items(&self) -> u32 {
        self.pass_items
    }

    /// How the pass's warps find their peers.
    pub fn rank(&self) -> RankMethod {
        self.rank
    }

    /// When the pass's tiles count their keys by digit.
    pub fn tile_counts(&self) -> TileCounts {
        self.counts
    }

    /// How the pass's blocks find their tiles.
    pub fn tile_order(&self) -> TileOrder {
        self.tiles
    }

    /// Whether the pass's threads take each key's digit once or at every
    /// use.
    pub fn pass_digits(&self) -> PassDigits {
        self.digits
    }

    /// Where the upsweep keeps its counters.
    pub fn upsweep_counters(&self) -> UpsweepCounters {
        self.upsweep_counters
    }

    /// Copies of each upsweep counter for keys of `key_bytes` bytes: 1 for
    /// [`UpsweepCounters::Shared`]; per lane, 32 for keys of 1 and 2 bytes,
    /// 16 for 4 bytes, 8 for 8 bytes (64 KiB of counters for every
    /// full-width key of 2 bytes or more).
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// let p = OnesweepPolicy::DEFAULT;
    /// assert_eq!([1, 2, 4, 8].map(|k| p.upsweep_copies(k)), [32, 32, 16, 8]);
    /// assert_eq!(OnesweepPolicy::SMALL_INPUT.upsweep_copies(4), 1);
    /// ```
    pub fn upsweep_copies(&self, key_bytes: usize) -> u32 {
        match (self.upsweep_counters, key_bytes) {
            (UpsweepCounters::Shared, _) => 1,
            (UpsweepCounters::PerLane, 0..=2) => 32,
            (UpsweepCounters::PerLane, 3..=4) => 16,
            (UpsweepCounters::PerLane, _) => 8,
        }
    }

    /// Dynamic shared memory of the upsweep for keys of `key_bytes` bytes
    /// sorted in `passes` digit passes: 256 counters per pass, each in
    /// [`OnesweepPolicy::upsweep_copies`] copies, 4 bytes each.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// assert_eq!(OnesweepPolicy::DEFAULT.upsweep_shared_bytes(4, 4), 64 << 10);
    /// assert_eq!(OnesweepPolicy::SMALL_INPUT.upsweep_shared_bytes(8, 8), 8 << 10);
    /// ```
    pub fn upsweep_shared_bytes(&self, key_bytes: usize, passes: u32) -> u32 {
        passes * 256 * self.upsweep_copies(key_bytes) * 4
    }

    /// Threads per block of the upsweep.
    pub fn upsweep_threads(&self) -> u32 {
        self.upsweep_threads
    }

    /// Keys per thread per round of the upsweep.
    pub fn upsweep_items(&self) -> u32 {
        self.upsweep_items
    }

    /// Resident blocks per SM the digit pass is compiled for: as many as
    /// keep 1024 threads per SM (4 of 256 threads, 2 of 384 or 512, 1 of
    /// 1024), given to the compiler as `__launch_bounds__(threads, blocks)`,
    /// so at most 64 registers per thread (85 for 384). Without it the
    /// register count follows the compiler's heuristics and moves with
    /// unrelated edits of the kernel (77 registers and 3 blocks of 256, or
    /// 1 block of 512 threads at 77, were both seen).
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, RankMethod};
    /// assert_eq!(OnesweepPolicy::DEFAULT.pass_min_blocks_per_sm(), 4);
    /// assert_eq!(OnesweepPolicy::new(512, 16, RankMethod::Ballots)?.pass_min_blocks_per_sm(), 2);
    /// assert_eq!(OnesweepPolicy::new(384, 12, RankMethod::Ballots)?.pass_min_blocks_per_sm(), 2);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn pass_min_blocks_per_sm(&self) -> u32 {
        (1024 / self.pass_threads).max(1)
    }

    /// Keys per tile of the digit pass: threads × items.
    pub fn tile(&self) -> u64 {
        self.pass_threads as u64 * self.pass_items as u64
    }

    /// Keys per portion: the most whole tiles within
    /// [`PORTION_MAX_KEYS`] (each digit pass runs one look-back per
    /// portion).
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// assert_eq!(OnesweepPolicy::DEFAULT.portion_keys(), 1 << 28);
    /// ```
    pub fn portion_keys(&self) -> u64 {
        PORTION_MAX_KEYS / self.tile() * self.tile()
    }

    /// Tiles (look-back state rows) of a full portion.
    pub fn portion_tiles(&self) -> u64 {
        self.portion_keys() / self.tile()
    }

    /// Keys per block per round of the upsweep.
    pub fn upsweep_chunk(&self) -> u64 {
        self.upsweep_threads as u64 * self.upsweep_items as u64
    }

    /// Launch geometry of the digit passes for `n` keys: (portions, tiles
    /// of all portions together). Each portion has its own rows of
    /// look-back state (one row of 256 words per tile) in each half of the
    /// double state.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// let p = OnesweepPolicy::DEFAULT;
    /// // 2^28 keys: one portion of 65 536 tiles of 4096.
    /// assert_eq!(p.pass_geometry(1 << 28), (1, 65_536));
    /// assert_eq!(p.pass_geometry((1 << 28) + 1), (2, 65_537));
    /// assert_eq!(p.pass_geometry(5000), (1, 2));
    /// ```
    pub fn pass_geometry(&self, n: u64) -> (u64, u64) {
        let portion = self.portion_keys();
        let portions = n.div_ceil(portion).max(1);
        // Every portion but the last is whole tiles.
        let tiles = n.div_ceil(self.tile()).max(1);
        (portions, tiles)
    }

    /// Words (u32) of one half of the double look-back state for `n` keys:
    /// 256 per tile of every portion.
    pub fn lookback_state_words(&self, n: u64) -> u64 {
        self.pass_geometry(n).1 * 256
    }

    /// Dynamic shared memory of the digit pass for keys of `key_bytes` and
    /// values of `value_bytes` (0 for none), bytes: the layout of
    /// `OnesweepStorage` in `kernels/cuda/sort/onesweep.cu`, field by field,
    /// and with [`RankMethod::AtomicOr`] the warps' peer masks after it
    /// (1 KiB per warp; the kernel checks at compile time that this covers
    /// it).
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// // u32 keys alone: 8 warps' counters, tile counts, bases, the 16 KiB
    /// // exchange, one byte of slot digits, the scan's 8 totals, the tile.
    /// assert_eq!(OnesweepPolicy::DEFAULT.pass_shared_bytes(4, 0),
    ///            8192 + 1024 + 2048 + 16_384 + 4 + 32 + 4);
    /// ```
    pub fn pass_shared_bytes(&self, key_bytes: usize, value_bytes: usize) -> u32 {
        let warps = (self.pass_threads / 32) as u64;
        let tile = self.tile();
        let exchange_bytes = key_bytes.max(value_bytes) as u64;
        let round = |x: u64, to: u64| x.div_ceil(to) * to;
        let counters = 4 * warps * 256 + 4 * 256 + 8 * 256;
        let exchange = round(tile * exchange_bytes, 8);
        let slot_digits = if value_bytes > 0 { tile } else { 1 };
        let scan_and_tile = 4 * warps + 4;
        let peer_masks = match self.rank {
            RankMethod::AtomicOr => 4 * warps * 256,
            RankMethod::Ballots | RankMethod::MatchAny => 0,
        };
        let bytes = round(
            counters + exchange + round(slot_digits, 4) + scan_and_tile,
            8,
        ) + peer_masks;
        u32::try_from(bytes).unwrap_or(u32::MAX)
    }

    /// Shared memory of the split form of the digit pass (the last pass of
    /// [`crate::split`]'s sorts): the pass's own, then per digit a key
    /// address, a value address (with values) and a slot limit.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// let policy = OnesweepPolicy::DEFAULT;
    /// assert_eq!(policy.pass_split_shared_bytes(4, 0), policy.pass_shared_bytes(4, 0) + 256 * 12 + 8);
    /// ```
    pub fn pass_split_shared_bytes(&self, key_bytes: usize, value_bytes: usize) -> u32 {
        let split = 256 * 8 + if value_bytes > 0 { 256 * 8 } else { 8 } + 256 * 4;
        self.pass_shared_bytes(key_bytes, value_bytes)
            .saturating_add(split)
    }

    /// Checks the pass's shared memory for keys of `key_bytes` and values of
    /// `value_bytes` (0 for none) against [`PASS_SHARED_BUDGET_BYTES`]:
    /// `InvalidArgument("pass_items")` when it does not fit.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// assert!(OnesweepPolicy::DEFAULT.check_widths(8, 8).is_ok());
    /// ```
    pub fn check_widths(&self, key_bytes: usize, value_bytes: usize) -> Result<()> {
        let bytes = self.pass_shared_bytes(key_bytes, value_bytes);
        if bytes > PASS_SHARED_BUDGET_BYTES {
            return Err(Error::invalid(
                "pass_items",
                format!(
                    "{} threads × {} keys of {key_bytes} bytes (values of {value_bytes}) take \
                     {bytes} bytes of shared memory per block, past the budget of \
                     {PASS_SHARED_BUDGET_BYTES}",
                    self.pass_threads, self.pass_items
                ),
            ));
        }
        Ok(())
    }

    /// Checks the policy for keys `K` with `payload`.
    pub(crate) fn check_for<K: SortKey>(&self, payload: Option<PayloadWidth>) -> Result<()> {
        self.check()?;
        self.check_widths(K::BYTES, payload.map_or(0, PayloadWidth::bytes))
    }

    /// The width-independent checks.
    fn check(&self) -> Result<()> {
        for (name, threads) in [
            ("pass_threads", self.pass_threads),
            ("upsweep_threads", self.upsweep_threads),
        ] {
            if !BLOCK_THREADS_CHOICES.contains(&threads) {
                return Err(Error::invalid(
                    name,
                    format!("{threads}: must be one of {BLOCK_THREADS_CHOICES:?}"),
                ));
            }
        }
        for (name, items) in [
            ("pass_items", self.pass_items),
            ("upsweep_items", self.upsweep_items),
        ] {
            if !(1..=MAX_ITEMS).contains(&items) {
                return Err(Error::invalid(
                    name,
                    format!("{items}: must be 1 ..= {MAX_ITEMS}"),
                ));
            }
        }
        // The warp-striped layout gives each warp 32 · items keys.
        if !self.tile().is_multiple_of(32 * self.pass_items as u64) {
            return Err(Error::invalid(
                "pass_threads",
                format!(
                    "tile {} is not whole warps of {} keys",
                    self.tile(),
                    32 * self.pass_items
                ),
            ));
        }
        let portion = self.portion_keys();
        if portion == 0 || !portion.is_multiple_of(self.tile()) || portion >= LOOKBACK_COUNT_LIMIT {
            return Err(Error::invalid(
                "pass_items",
                format!("tile {} gives no valid portion", self.tile()),
            ));
        }
        self.check_widths(1, 0)
    }

    /// A short name: `pass 384x16 match-any, upsweep 256x16`.
    ///
    /// ```
    /// use sort::policy::{OnesweepPolicy, TileCounts};
    /// assert_eq!(OnesweepPolicy::DEFAULT.name(), "256x16 ballots up 256x16");
    /// let late = OnesweepPolicy::DEFAULT.with_tile_counts(TileCounts::FromRanks);
    /// assert_eq!(late.name(), "256x16 ballots counts from ranks up 256x16");
    /// use sort::policy::UpsweepCounters;
    /// let shared = OnesweepPolicy::DEFAULT.with_upsweep_counters(UpsweepCounters::Shared);
    /// assert_eq!(shared.name(), "256x16 ballots up 256x16 shared counters");
    /// use sort::policy::TileOrder;
    /// let counter = OnesweepPolicy::DEFAULT.with_tile_order(TileOrder::Counter);
    /// assert_eq!(counter.name(), "256x16 ballots tile counter up 256x16");
    /// use sort::policy::PassDigits;
    /// let packed = OnesweepPolicy::DEFAULT.with_pass_digits(PassDigits::Packed);
    /// assert_eq!(packed.name(), "256x16 ballots digits packed up 256x16");
    /// ```
    pub fn name(&self) -> String {
        // Early counts, tiles in block order, recomputed digits and
        // per-lane upsweep counters, the defaults of every large shape, go
        // unnamed.
        let counts = match self.counts {
            TileCounts::Early => String::new(),
            TileCounts::FromRanks | TileCounts::ByWarp => format!(" {}", self.counts.name()),
        };
        let counters = match self.upsweep_counters {
            UpsweepCounters::PerLane => String::new(),
            UpsweepCounters::Shared => format!(" {}", self.upsweep_counters.name()),
        };
        let tiles = match self.tiles {
            TileOrder::InBlockOrder => "",
            TileOrder::Counter => " tile counter",
        };
        let digits = match self.digits {
            PassDigits::Recomputed => "",
            PassDigits::Packed => " digits packed",
        };
        format!(
            "{}x{} {}{counts}{tiles}{digits} up {}x{}{counters}",
            self.pass_threads,
            self.pass_items,
            self.rank.name(),
            self.upsweep_threads,
            self.upsweep_items
        )
    }

    /// The suffix of module and entry names for keys `K` with `payload`:
    /// empty for that pair's [`OnesweepPolicy::default_for`] (its full
    /// module, [`crate::modules::module`]), `_p384x16m_u256x16` for others.
    pub(crate) fn suffix_for<K: SortKey>(&self, payload: Option<PayloadWidth>) -> String {
        if self.is_default_for::<K>(payload) {
            return String::new();
        }
        let rank = match self.rank {
            RankMethod::Ballots => 'b',
            RankMethod::MatchAny => 'm',
            RankMethod::AtomicOr => 'o',
        };
        let counts = match self.counts {
            TileCounts::Early => "",
            TileCounts::FromRanks => "r",
            TileCounts::ByWarp => "w",
        };
        let counters = match self.upsweep_counters {
            UpsweepCounters::PerLane => "",
            UpsweepCounters::Shared => "s",
        };
        let tiles = match self.tiles {
            TileOrder::InBlockOrder => "",
            TileOrder::Counter => "c",
        };
        let digits = match self.digits {
            PassDigits::Recomputed => "",
            PassDigits::Packed => "d",
        };
        format!(
            "_p{}x{}{rank}{counts}{tiles}{digits}_u{}x{}{counters}",
            self.pass_threads, self.pass_items, self.upsweep_threads, self.upsweep_items
        )
    }

    /// Whether this is the policy the entry points use for keys `K` with
    /// `payload` ([`OnesweepPolicy::default_for`]), whose kernels are in
    /// the full module of that pair.
    ///
    /// ```
    /// use sort::policy::OnesweepPolicy;
    /// assert!(OnesweepPolicy::default_for::<u32>(None).is_default_for::<u32>(None));
    /// assert!(!OnesweepPolicy::DEFAULT.is_default_for::<u32>(None));
    /// assert!(!OnesweepPolicy::default_for::<u32>(None).is_default_for::<u64>(None));
    /// ```
    pub fn is_default_for<K: SortKey>(&self, payload: Option<PayloadWidth>) -> bool {
        *self == OnesweepPolicy::default_for::<K>(payload)
    }
}

impl Default for OnesweepPolicy {
    fn default() -> Self {
        OnesweepPolicy::DEFAULT
    }
}

/// The tuning sweep's grid for small inputs (up to a few million keys,
/// where a pass has too few tiles of the large shapes to fill the GPU and
/// each tile's latency is the time): passes and upsweeps of few keys per
/// thread, ranked by ballots, and the 512 × 16 passes of the large inputs
/// for comparison; every upsweep with one set of counters
/// ([`UpsweepCounters::Shared`], as [`OnesweepPolicy::SMALL_INPUT`]).
///
/// ```
/// let grid = sort::policy::small_sweep_grid();
/// assert!(grid.iter().any(|p| p.pass_threads() == 256 && p.pass_items() == 4));
/// ```
pub fn small_sweep_grid() -> Vec<OnesweepPolicy> {
    let shapes = [
        ((256, 2), (256, 2)),
        ((256, 4), (256, 4)),
        ((256, 4), (256, 16)),
        ((256, 8), (256, 8)),
        ((512, 4), (256, 8)),
        ((512, 8), (256, 8)),
        ((512, 16), (256, 16)),
    ];
    shapes
        .into_iter()
        .map(
            |((threads, items), (up_threads, up_items))| OnesweepPolicy {
                pass_threads: threads,
                pass_items: items,
                rank: RankMethod::Ballots,
                counts: TileCounts::Early,
                tiles: TileOrder::InBlockOrder,
                digits: PassDigits::Recomputed,
                upsweep_threads: up_threads,
                upsweep_items: up_items,
                upsweep_counters: UpsweepCounters::Shared,
            },
        )
        .collect()
}

/// The tuning sweep's grid of pass shapes: 12 policies with early tile
/// counts (the default of u32 keys among them; u64 keys and u32 keys with
/// u32 values count tiles by warp by default, [`TileCounts`], which
/// `sort_tune --grid counts` compares): passes
/// of 256 × {16, 24}, 384 × {12, 16}, 512 × {12, 16} keys, each ranked by
/// ballots and by match-any ([`RankMethod::AtomicOr`], whose peer masks
/// take more shared memory than 512 × 16 u64 keys leave, has a grid of its
/// own: `sort_tune --grid rank`), the default upsweep. Every one fits u32 and u64 keys
/// and u32 keys with 4-byte values (the sweep's cases); the compile test
/// builds each one's modules for them ([`crate::modules::sweep_catalog`]).
///
/// ```
/// let grid = sort::policy::sweep_grid();
/// assert_eq!(grid.len(), 12);
/// assert!(grid.contains(&sort::policy::OnesweepPolicy::DEFAULT));
/// ```
pub fn sweep_grid() -> Vec<OnesweepPolicy> {
    let shapes = [
        (256, 16),
        (256, 24),
        (384, 12),
        (384, 16),
        (512, 12),
        (512, 16),
    ];
    let mut grid = Vec::new();
    for (threads, items) in shapes {
        for rank in [RankMethod::Ballots, RankMethod::MatchAny] {
            let policy = OnesweepPolicy {
                pass_threads: threads,
                pass_items: items,
                rank,
                ..OnesweepPolicy::DEFAULT
            };
            grid.push(policy);
        }
    }
    grid
}
