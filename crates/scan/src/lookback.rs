//! Single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass
//! Parallel Prefix Scan with Decoupled Look-back", NVIDIA NVR-2016-002).
//!
//! - **Computes** an inclusive, seeded inclusive or exclusive scan of `n`
//!   elements under any associative operator (operands kept in index order:
//!   the operator need not be commutative; a seed is combined on the left).
//!   The kind is one uniform kernel argument: a seeded kind starts tile 0's
//!   prefix from `initial`, the exclusive kind also shifts the outputs.
//! - **Work** O(n) (about 2n combines plus the look-back), **steps**
//!   O(items per thread + log block + look-back depth).
//! - **Bytes moved** 2·n·size (each element read once and written once) plus
//!   the tile state ([`lookback_bytes_moved`]): the memcpy lower bound.
//! - **Launches** one kernel and nothing else: the tile state (tile
//!   counters + status words) comes from the stream's scratch arena and is
//!   epoch-tagged, so it needs no memset between calls
//!   ([`gpu_core::single_pass::with_tile_state`]).
//! - **Shared memory** per block: [`TileLayout::Blocked`], the
//!   striped↔blocked exchange, (tile + tile / (128 / size)) · size bytes
//!   (≈ 17 KB for 256 × 16 four-byte items), padded so both access patterns
//!   are free of bank conflicts, plus one word per warp;
//!   [`TileLayout::WarpStriped`], one word per warp only.
//! - **In place**: yes (`input = None`): a block reads its whole tile before
//!   writing it, tiles are disjoint.
//! - **Deterministic**: for integers, yes (wrapping arithmetic is exact).
//!   **Not for floats**: a tile's prefix is either its predecessor's
//!   inclusive prefix or a chain of aggregates folded onto an earlier prefix,
//!   depending on which tiles have finished when it looks back, so rounding
//!   can differ from run to run. Use `ReduceThenScan` for bitwise-repeatable
//!   float results.
//!
//! How it works (kernels/cuda/scan/lookback.cu, single_pass/): one block per
//! tile; the tile index comes from an atomic counter, so tiles are handed out
//! in the order blocks start and the look-back only ever waits on resident
//! blocks (no deadlock). Each tile publishes its aggregate, then one warp
//! inspects 32 predecessors at once, spinning while any is unpublished, folds
//! aggregates back to the nearest inclusive prefix, and publishes its own
//! inclusive prefix. On grids of 512 tiles or more the warp first sleeps a
//! *start delay* (≈ 1.2 µs) and sleeps a *spin delay* (≈ 0.6 µs) between
//! re-reads: by then the nearest predecessor has usually published its
//! inclusive prefix, one read ends the look-back, and the polling no longer
//! crowds the status lines in L2 (0.759 → 0.855 of the copy ceiling for
//! `i32` on the H100). Four-byte values travel with their status in one 64-bit
//! word, one per 8 or (the table's choice) 16 bytes of state, so fewer
//! tiles share an L2 sector that their successors poll (0.855 → 0.915);
//! eight-byte values use a fenced status/value protocol or one 128-bit
//! word (see the header of single_pass/tile_status.cuh for why each is correct; a unit
//! test reads the SASS to check that each status load stays one access).
//! One- and two-byte elements are read and written as themselves and scanned
//! in a 4-byte accumulator (`i32`/`u32` extended, `f32` for `f16`/`bf16`),
//! so their registers, tile state and tuning are the 4-byte ones
//! (`accumulator_bytes`); the operator functor is built on the
//! accumulator, which the built-in operators allow (custom ones are refused).
//!
//! Variants, as tuning data ([`Policy`]; every one a separate
//! kernel entry so a sweep compares them in one process): the tile layout
//! (shared-memory exchange, or vectorised warp-striped registers with no
//! exchange and two or three barriers per tile), the look-back window width (32 ×
//! 1…8 predecessors per round), the 8-byte status encoding, a register
//! limit for more resident blocks, the start and spin delays,
//! evict-first cache hints, and where a block's tile index comes from (its
//! own index, the defaults', or the call's counter). [`lookback_candidates`] lists what
//! `tests/lookback_tuning.rs` measures; [`LOOKBACK_TUNING`] holds the chosen
//! one per element size, and inputs of at most [`SMALL_INPUT_MAX_ELEMENTS`]
//! in a 4-byte accumulator take [`SMALL_INPUT_LOOKBACK_TUNING`]'s smaller
//! tiles, and those past [`MID_INPUT_MIN_ELEMENTS`] up to
//! [`MID_INPUT_MAX_ELEMENTS`] [`MID_INPUT_LOOKBACK_TUNING`]'s
//! ([`lookback_policy_for_len`]). A caller passes one with
//! `ScanOptions::with_policy` (all of them through `crate::policy`).

use gpu_core::launch::grid_1d;
use gpu_core::{
    DeviceView, DeviceViewMut, Element, Error, Gpu, Kernel, KernelArgs, ModuleSource, Operator,
    Result,
};

use crate::kind::ScanKind;

use gpu_core::single_pass::{tile_state_words, with_tile_state, Schedule};
pub use gpu_core::single_pass::{Policy, StatusEncoding, TileLayout};

/// Static shared memory a kernel may use without opting in.
const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

/// What the look-back scan adds to [`Policy`]: its shared memory and its
/// own constraints. (The layouts: [`TileLayout::Blocked`] is striped
/// coalesced 16-byte loads and stores transposed to and from a blocked
/// arrangement through padded shared memory, `scan_lookback_tile`;
/// [`TileLayout::WarpStriped`] keeps vectorised warp-striped registers with
/// no exchange and one warp shuffle scan per 16-byte group,
/// `scan_lookback_tile_striped`.)
pub trait LookbackPolicy {
    /// Shared memory per block for `element_bytes`-byte elements. Blocked:
    /// the padded exchange (one element of padding per 128 bytes), the warp
    /// totals, and a few words of tile bookkeeping. WarpStriped: the warp
    /// totals and the bookkeeping only.
    ///
    /// ```
    /// use scan::policy::{LookbackPolicy, Policy, TileLayout};
    /// let blocked = Policy::shape(256, 8);
    /// let striped = blocked.with_layout(TileLayout::WarpStriped);
    /// assert!(blocked.shared_bytes(4) > 256 * 8 * 4); // the exchange holds the whole tile
    /// assert!(striped.shared_bytes(4) < 1024); // warp totals and bookkeeping only
    /// ```
    fn shared_bytes(&self, element_bytes: u64) -> u64;
    /// [`Policy::validate`], plus what the look-back scan needs: one tile
    /// per block, cache hints only with the warp-striped layout, and the
    /// tile's shared memory within the 48 KiB a block gets without opting
    /// in. A typed error, never a panic.
    ///
    /// ```
    /// use scan::policy::{LookbackPolicy, Policy, Schedule};
    /// assert!(scan::policy::lookback_policy(4).validate_lookback(4).is_ok());
    /// let persistent = Policy::shape(256, 8).with_schedule(Schedule::Persistent);
    /// assert!(persistent.validate_lookback(4).is_err()); // the scan takes one tile per block
    /// ```
    fn validate_lookback(&self, element_bytes: usize) -> Result<()>;
}

impl LookbackPolicy for Policy {
    fn shared_bytes(&self, element_bytes: u64) -> u64 {
        let tile = self.tile_items();
        let exchange = match self.layout() {
            TileLayout::Blocked => tile + tile / (128 / element_bytes),
            TileLayout::WarpStriped => 0,
        };
        let warps = self.block_threads() as u64 / 32;
        (exchange + warps + 1) * element_bytes + 16
    }

    fn validate_lookback(&self, element_bytes: usize) -> Result<()> {
        self.validate(element_bytes)?;
        if self.schedule() == Schedule::Persistent {
            return Err(Error::invalid(
                "schedule",
                "the look-back scan runs one tile per block",
            ));
        }
        if self.streaming() && self.layout() != TileLayout::WarpStriped {
            return Err(Error::invalid(
                "streaming",
                "cache hints are implemented for the warp-striped layout only",
            ));
        }
        let shared = self.shared_bytes(element_bytes as u64);
        if shared > STATIC_SHARED_LIMIT {
            return Err(Error::invalid(
                "items_per_thread",
                format!(
                    "{}×{} tile needs {shared} bytes of shared memory (at most {STATIC_SHARED_LIMIT})",
                    self.block_threads(),
                    self.items_per_thread()
                ),
            ));
        }
        Ok(())
    }
}

/// The look-back scan's default policy per element size: (element bytes,
/// policy). Measured on an H100 at 2^28 elements (sm_90; the sweep is
/// `tests/lookback_tuning.rs`); used on every architecture. The figures, the
/// runners-up and why these win are in `docs/tuning.md`. Each takes its
/// tiles in block order ([`Schedule::InBlockOrder`]), measured against the
/// counter on an H200 (`docs/tuning.md`, "Tiles in block order").
pub const LOOKBACK_TUNING: [(usize, Policy); 2] = [
    (
        4,
        Policy::shape(256, 32)
            .with_layout(TileLayout::WarpStriped)
            .with_status(StatusEncoding::Packed128)
            .with_delays(1245, 648)
            .with_schedule(Schedule::InBlockOrder),
    ),
    (
        8,
        Policy::shape(128, 24)
            .with_layout(TileLayout::WarpStriped)
            .with_status(StatusEncoding::Packed128)
            .with_delays(1290, 632)
            .with_schedule(Schedule::InBlockOrder),
    ),
];

/// The look-back scan's policy for inputs of at most
/// [`SMALL_INPUT_MAX_ELEMENTS`] elements scanned in a 4-byte accumulator:
/// tiles of 128 × 16 = 2048 elements instead of 8192, so a small input's
/// few tiles spread over four times the SMs and each block's loads, scan
/// and stores are shorter. Measured on an H100 (`examples/latency.rs
/// --queued`, device time of one `i32` `scan_into`): 5.95 against 6.62 µs
/// at 2^16, 4.64 against 5.22 µs at 2^10, 6.72 against 6.82 µs at 2^17,
/// and slower from 2^18 on (7.55 against 7.30 µs), `docs/tuning.md`.
pub const SMALL_INPUT_LOOKBACK_TUNING: Policy = Policy::shape(128, 16)
    .with_layout(TileLayout::WarpStriped)
    .with_status(StatusEncoding::Packed128)
    .with_delays(1245, 648)
    .with_schedule(Schedule::InBlockOrder);

/// The largest input that takes [`SMALL_INPUT_LOOKBACK_TUNING`].
pub const SMALL_INPUT_MAX_ELEMENTS: usize = 1 << 17;

/// The look-back scan's policy for inputs of more than
/// [`MID_INPUT_MIN_ELEMENTS`] and at most [`MID_INPUT_MAX_ELEMENTS`]
/// elements scanned in a 4-byte accumulator: tiles of 128 × 32 = 4096
/// elements instead of 8192, so that the few waves of tiles such an input
/// makes finish closer together (the same layout, status and delays; 32
/// items keep the 1- and 2-byte types' 16-wide vectors). Device time over a
/// same-size device-to-device copy on an H100 (`tests/lookback_tuning.rs`,
/// `mid_size_candidates_against_the_same_size_copy`, `i32`), against the
/// 256 × 32 default: 1.47 against 1.57 at 2^22, 1.23 against 1.30 at 2^23,
/// 1.18 against 1.21 at 2^24, 1.13 against 1.15 at 2^25; from 2^26 on and
/// up to 2^21 the default is as fast or faster (`docs/tuning.md`).
pub const MID_INPUT_LOOKBACK_TUNING: Policy = Policy::shape(128, 32)
    .with_layout(TileLayout::WarpStriped)
    .with_status(StatusEncoding::Packed128)
    .with_delays(1245, 648)
    .with_schedule(Schedule::InBlockOrder);

/// Inputs of more than this many elements (and at most
/// [`MID_INPUT_MAX_ELEMENTS`]) take [`MID_INPUT_LOOKBACK_TUNING`].
pub const MID_INPUT_MIN_ELEMENTS: usize = 1 << 21;

/// The largest input that takes [`MID_INPUT_LOOKBACK_TUNING`].
pub const MID_INPUT_MAX_ELEMENTS: usize = 1 << 25;

/// The default policy of a look-back scan of `n` elements of
/// `element_bytes` bytes. Scanned in a 4-byte accumulator (1-, 2- and
/// 4-byte elements): [`SMALL_INPUT_LOOKBACK_TUNING`] up to
/// [`SMALL_INPUT_MAX_ELEMENTS`] elements, [`MID_INPUT_LOOKBACK_TUNING`]
/// past [`MID_INPUT_MIN_ELEMENTS`] up to [`MID_INPUT_MAX_ELEMENTS`], else
/// [`lookback_policy`]; 8-byte elements always take [`lookback_policy`].
///
/// ```
/// use scan::policy::{
///     lookback_policy, lookback_policy_for_len, MID_INPUT_LOOKBACK_TUNING,
///     SMALL_INPUT_LOOKBACK_TUNING,
/// };
/// assert_eq!(lookback_policy_for_len(4, 1 << 16), SMALL_INPUT_LOOKBACK_TUNING);
/// assert_eq!(lookback_policy_for_len(2, 1000), SMALL_INPUT_LOOKBACK_TUNING);
/// assert_eq!(lookback_policy_for_len(4, (1 << 17) + 1), lookback_policy(4));
/// assert_eq!(lookback_policy_for_len(4, 1 << 21), lookback_policy(4));
/// assert_eq!(lookback_policy_for_len(4, (1 << 21) + 1), MID_INPUT_LOOKBACK_TUNING);
/// assert_eq!(lookback_policy_for_len(1, 1 << 24), MID_INPUT_LOOKBACK_TUNING);
/// assert_eq!(lookback_policy_for_len(4, 1 << 25), MID_INPUT_LOOKBACK_TUNING);
/// assert_eq!(lookback_policy_for_len(4, (1 << 25) + 1), lookback_policy(4));
/// assert_eq!(lookback_policy_for_len(8, 1000), lookback_policy(8));
/// assert_eq!(lookback_policy_for_len(8, 1 << 24), lookback_policy(8));
/// ```
pub fn lookback_policy_for_len(element_bytes: usize, n: usize) -> Policy {
    if accumulator_bytes(element_bytes) != 4 {
        lookback_policy(element_bytes)
    } else if n <= SMALL_INPUT_MAX_ELEMENTS {
        SMALL_INPUT_LOOKBACK_TUNING
    } else if n > MID_INPUT_MIN_ELEMENTS && n <= MID_INPUT_MAX_ELEMENTS {
        MID_INPUT_LOOKBACK_TUNING
    } else {
        lookback_policy(element_bytes)
    }
}

/// The variants the tuning sweep (`tests/lookback_tuning.rs`) measures for
/// `element_bytes`-byte elements, the table's entry first. Every one is
/// exact (the sweep checks it against the CPU) and compiled by the unit
/// tests for sm_80 and sm_90.
///
/// ```
/// use scan::policy::{lookback_candidates, lookback_policy};
/// let candidates = lookback_candidates(8);
/// assert_eq!(candidates[0], lookback_policy(8)); // the table's entry first
/// ```
pub fn lookback_candidates(element_bytes: usize) -> Vec<Policy> {
    use StatusEncoding::Packed128;
    use TileLayout::WarpStriped;
    let table = lookback_policy(element_bytes);
    // The table's entry with its tiles drawn from the counter, then the rest.
    let mut candidates = vec![table, table.with_schedule(Schedule::TilePerBlock)];
    let striped = |block_threads, items| {
        Policy::shape(block_threads, items)
            .with_layout(WarpStriped)
            .with_lookback_width(4)
    };
    // Warp-striped with a 1-wide window and the look-back delays: the shape
    // of both table entries.
    let delayed = |block_threads, items, start, spin| {
        Policy::shape(block_threads, items)
            .with_layout(WarpStriped)
            .with_delays(start, spin)
    };
    // The previous table and the runners-up around the current one: tile
    // shapes, window widths and delays (start before the first read, spin
    // between re-reads; CUB's sm_90 tunings use 1,245 / 648 ns for 4-byte and
    // 1,290 / 632 ns for 8-byte sums, a starting point for ours).
    let others: Vec<Policy> = if element_bytes == 4 {
        vec![
            striped(256, 24),
            Policy::shape(512, 16).with_delays(1245, 648),
            Policy::shape(512, 16).with_delays(2000, 1000),
            delayed(256, 24, 1245, 648),
            delayed(256, 24, 2000, 1000),
            delayed(128, 24, 2000, 1000),
            delayed(128, 24, 1600, 800),
            delayed(128, 24, 900, 400),
            delayed(128, 24, 1245, 300),
            delayed(128, 24, 1245, 648).with_lookback_width(2),
            delayed(128, 24, 1245, 648).with_streaming(true),
            delayed(128, 32, 1245, 648),
            delayed(192, 24, 1245, 648),
            delayed(256, 32, 1245, 648),
            // Larger tiles (8-byte stride): 128 × 48 is the 4-byte
            // analogue of the 8-byte 128 × 24 (as many bytes per thread).
            // It and 128/256 × 40, 96/64/224 × 48 and 128 × 64 ran at
            // 0.81–0.85 (docs/tuning.md), none above 128 × 24; one stays
            // as the record.
            delayed(128, 48, 1245, 648),
            // 4-byte status words at a 16-byte stride: one tile
            // per 16 bytes of state, as the 8-byte table's encoding has. At
            // equal tile bytes (256 × 32 i32 against 256 × 16 u64, both 96 KB
            // resident per SM) u64 ran at 0.916 of the ceiling and i32 at
            // 0.864: the status word is the remaining difference.
            delayed(128, 24, 1245, 648).with_status(Packed128),
            delayed(128, 24, 1245, 648)
                .with_status(Packed128)
                .with_streaming(true),
            delayed(128, 24, 1290, 632).with_status(Packed128),
            // The previous table entry (128 × 24, 8-byte stride), and the
            // neighbours of the new one (256 × 32 ws p128, 0.910).
            delayed(128, 24, 1245, 648),
            delayed(256, 32, 1245, 648)
                .with_status(Packed128)
                .with_streaming(true),
            delayed(256, 32, 2000, 1000).with_status(Packed128),
            delayed(256, 32, 900, 400).with_status(Packed128),
            delayed(128, 32, 1245, 648).with_status(Packed128),
            delayed(192, 32, 1245, 648).with_status(Packed128),
            delayed(256, 24, 1245, 648).with_status(Packed128),
            delayed(256, 40, 1245, 648).with_status(Packed128),
            delayed(384, 24, 1245, 648).with_status(Packed128),
            delayed(384, 24, 2000, 1000).with_status(Packed128),
            delayed(384, 32, 1245, 648).with_status(Packed128),
            delayed(512, 16, 1245, 648).with_status(Packed128),
            delayed(512, 24, 1245, 648).with_status(Packed128),
            // The default with registers capped at 64 (4 blocks per SM).
            delayed(256, 32, 1245, 648)
                .with_status(Packed128)
                .with_min_blocks_per_sm(4),
        ]
    } else {
        vec![
            Policy::shape(512, 8).with_status(Packed128),
            striped(224, 24)
                .with_status(Packed128)
                .with_delays(1290, 632),
            Policy::shape(256, 12)
                .with_status(Packed128)
                .with_delays(1290, 632),
            Policy::shape(256, 12)
                .with_status(Packed128)
                .with_delays(2000, 1000),
            // The previous 8-byte default: 3 blocks of 224 per SM when it
            // compiled to 80 registers, 2 since it compiles to 87.
            delayed(224, 24, 1290, 632).with_status(Packed128),
            delayed(128, 16, 1290, 632).with_status(Packed128),
            delayed(128, 24, 2000, 1000).with_status(Packed128),
            delayed(96, 24, 1290, 632).with_status(Packed128),
            delayed(128, 32, 1290, 632).with_status(Packed128),
            delayed(192, 24, 1290, 632).with_status(Packed128),
            delayed(256, 16, 1290, 632).with_status(Packed128),
            striped(224, 24)
                .with_status(Packed128)
                .with_delays(2000, 1000),
        ]
    };
    for tuning in others {
        if !candidates.contains(&tuning) {
            candidates.push(tuning);
        }
    }
    candidates
}

/// The shape the protocol tests use: one warp, one item per thread, so a
/// million elements make tens of thousands of tiles in flight and every
/// block looks back through many windows.
pub const PROTOCOL_TEST_TUNING: Policy = Policy::shape(32, 1);

/// The protocol tests' tiny tiles in every variant of the look-back itself
/// (layout, window width, 8-byte status, back-off, start delay, tile order), plus tiles of 32 × 4 and
/// 64 × 8 items so the warp-striped layout's vector path runs too (the
/// latter with the streaming cache hints). Every
/// shape keeps tiles tiny, so hundreds of thousands are in flight.
///
/// ```
/// use scan::policy::{protocol_test_variants, LookbackPolicy};
/// for policy in protocol_test_variants() {
///     assert!(policy.tile_items() <= 512);
///     assert!(policy.validate_lookback(8).is_ok());
/// }
/// ```
pub fn protocol_test_variants() -> Vec<Policy> {
    use StatusEncoding::Packed128;
    use TileLayout::WarpStriped;
    let tiny = PROTOCOL_TEST_TUNING;
    vec![
        tiny,
        tiny.with_lookback_width(4),
        tiny.with_status(Packed128),
        tiny.with_status(Packed128).with_lookback_width(2),
        tiny.with_layout(WarpStriped),
        tiny.with_layout(WarpStriped)
            .with_status(Packed128)
            .with_lookback_width(8)
            .with_spin_ns(32),
        Policy::shape(32, 4)
            .with_layout(WarpStriped)
            .with_lookback_width(4),
        Policy::shape(64, 8)
            .with_layout(WarpStriped)
            .with_status(Packed128)
            .with_lookback_width(4)
            .with_streaming(true),
        // The look-back delays (start and spin), active on these grids.
        tiny.with_layout(WarpStriped)
            .with_status(Packed128)
            .with_lookback_width(4)
            .with_delays(300, 100),
        tiny.with_delays(200, 50),
        // Tiles in block order (the defaults' schedule), in both layouts.
        tiny.with_schedule(Schedule::InBlockOrder),
        tiny.with_layout(WarpStriped)
            .with_status(Packed128)
            .with_schedule(Schedule::InBlockOrder),
    ]
}

/// The table's shape for `element_bytes`-byte elements.
///
/// ```
/// use scan::policy::{lookback_policy, LookbackPolicy};
/// let policy = lookback_policy(4);
/// assert!(policy.validate_lookback(4).is_ok());
/// println!("4-byte look-back tiles: {}", policy.label());
/// ```
pub fn lookback_policy(element_bytes: usize) -> Policy {
    // 1- and 2-byte elements scan in a 4-byte accumulator: the 4-byte
    // shape (its registers and tile state are the accumulator's).
    let bytes = accumulator_bytes(element_bytes);
    LOOKBACK_TUNING
        .iter()
        .find(|(table_bytes, _)| *table_bytes == bytes)
        .map(|(_, tuning)| *tuning)
        // An unknown size gets the 8-byte shape, which validate() then
        // refuses with a typed error.
        .unwrap_or(LOOKBACK_TUNING[1].1)
}

/// Bytes of the value the look-back scan carries for `element_bytes`-byte
/// elements (its registers, warp totals and tile state): the element
/// itself for 4- and 8-byte types; a 4-byte accumulator (`i32`, `u32`,
/// `f32`) for the 1- and 2-byte ones.
pub(crate) fn accumulator_bytes(element_bytes: usize) -> usize {
    element_bytes.max(4)
}

/// Whether the look-back scan takes `T` with `op`: every type with a
/// built-in operator; custom operators (CUDA written for `T`) on the 4- and
/// 8-byte types only. A typed [`Error::Unsupported`] otherwise.
pub(crate) fn check_element<T: Element, O: Operator<T>>(op: &O) -> Result<()> {
    gpu_core::op::check_register_operator::<T, O>("scan", op)
}

/// The operator functor `op_t` of the look-back module: `op` on `T` for
/// the 4- and 8-byte types; for the narrow ones `op` on the accumulator
/// (lookback.cu widens each item when loaded and narrows it when stored).
fn scan_operator<T: Element, O: Operator<T>>(op: &O) -> String {
    gpu_core::op::register_operator_prelude::<T, O>(op, "op_t")
}

/// Bytes the look-back scan moves for `n` elements of `element_bytes`
/// bytes with the default tuning for `n` ([`lookback_policy_for_len`]):
/// 2·n·size, plus the tile state, written and read by the kernel (counted
/// twice).
pub(crate) fn lookback_bytes_moved(n: u64, element_bytes: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let tuning = lookback_policy_for_len(element_bytes as usize, n as usize);
    let tiles = n.div_ceil(tuning.tile_items());
    let state_bytes = accumulator_bytes(element_bytes as usize);
    2 * n * element_bytes + 2 * 8 * tile_state_words(tiles, state_bytes, tuning.status())
}

fn entry_name<T: Element, O: Operator<T>>(op: &O, tuning: Policy) -> String {
    format!(
        "scan_lookback_{}_{}_{}x{}{}",
        T::SUFFIX,
        op.name(),
        tuning.block_threads(),
        tuning.items_per_thread(),
        tuning.variant_suffix()
    )
}

fn module<T: Element, O: Operator<T>>(op: &O, tuning: Policy) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let entry = entry_name::<T, O>(op, tuning);
    let (function, stream) = match tuning.layout() {
        TileLayout::Blocked => ("scan_lookback_tile", String::new()),
        TileLayout::WarpStriped => (
            "scan_lookback_tile_striped",
            format!(", {}", tuning.streaming() as u32),
        ),
    };
    let status8 = match tuning.status() {
        StatusEncoding::Split => 0,
        StatusEncoding::Packed128 => 1,
    };
    // The single-pass headers (warp, block, tile state, look-back), then
    // the scan's kernels.
    let source = parprims_kernels::SINGLE_PASS
        .iter()
        .fold(ModuleSource::new(entry.clone()), |module, header| {
            module.source(header)
        })
        .source(parprims_kernels::SCAN_LOOKBACK)
        .source(&scan_operator::<T, O>(op))
        .entry(
            entry,
            &format!(
                "const {t}* in, {t}* out, u64* state, u32 epoch, u64 n, u64 num_tiles, \
                 u32 kind, {t} initial, u32 vector_ok"
            ),
            &format!(
                "{function}<{t}, op_t, {b}, {i}, {w}, {status8}, {ns}{stream}, {start}, {order}>(in, \
                 out, state, epoch, n, num_tiles, kind, initial, vector_ok)",
                b = tuning.block_threads(),
                i = tuning.items_per_thread(),
                w = tuning.lookback_width(),
                ns = tuning.spin_ns(),
                start = tuning.start_delay_ns(),
                order = tuning.schedule() == Schedule::InBlockOrder,
            ),
            // __launch_bounds__ would override --maxrregcount, so a
            // register-limited variant goes without it.
            match tuning.max_registers() {
                Some(_) => None,
                None => Some(tuning.block_threads()),
            },
        );
    match tuning.max_registers() {
        Some(registers) => source.option(format!("--maxrregcount={registers}")),
        None => source,
    }
}

/// The module and entry name of one tuning, for tests that inspect the
/// compiled kernel (registers, occupancy).
///
/// ```
/// use gpu_core::Sum;
/// use scan::policy::{lookback_module, lookback_policy};
/// let (module, entry) = lookback_module::<i32, _>(&Sum, lookback_policy(4));
/// assert!(module.entries().iter().any(|e| *e == entry));
/// ```
pub fn lookback_module<T: Element, O: Operator<T>>(
    op: &O,
    tuning: Policy,
) -> (ModuleSource, String) {
    (module::<T, O>(op, tuning), entry_name::<T, O>(op, tuning))
}

/// The kernel of `tuning` for `T` and `op` on `gpu`'s context, from the
/// context's kernel store (built, compiled and loaded on first use). The
/// entry name spells every tuning field; the operator key adds the type
/// and the fingerprint of the operator's CUDA text.
fn lookback_kernel<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    op: &O,
    tuning: Policy,
) -> Result<Kernel> {
    let entry = entry_name::<T, O>(op, tuning);
    let key = format!("scan/lookback/{entry}/{}", crate::operator_key::<T, O>(op));
    gpu.stored_kernel(&key, &entry, || module::<T, O>(op, tuning))
}

/// The modules [`scan_lookback_tuned`] can request for `T` and `op`: the table's
/// tuning, the small and mid-size inputs' (4-byte accumulators), and the
/// protocol tests' tiny tiles (none where [`check_element`] refuses the pair).
pub(crate) fn lookback_modules<T: Element, O: Operator<T>>(op: &O) -> Vec<ModuleSource> {
    if check_element::<T, O>(op).is_err() {
        return Vec::new();
    }
    let mut modules = vec![
        module::<T, O>(op, lookback_policy(T::BYTES)),
        module::<T, O>(op, PROTOCOL_TEST_TUNING),
    ];
    if accumulator_bytes(T::BYTES) == 4 {
        modules.push(module::<T, O>(op, SMALL_INPUT_LOOKBACK_TUNING));
        modules.push(module::<T, O>(op, MID_INPUT_LOOKBACK_TUNING));
    }
    modules
}

/// `(kind code, initial)` as the kernels take them (0 inclusive, 1
/// exclusive, 2 inclusive seeded with `initial`: [`ScanKind`]'s codes).
pub(crate) fn kind_arguments<T: Element, O: Operator<T>>(op: &O, kind: ScanKind<T>) -> (u32, T) {
    kind.kernel_arguments(op)
}

/// Whether the kernels may use 16-byte vector accesses: both pointers
/// 16-byte aligned and every tile a whole number of 16-byte vectors (each
/// tile then starts aligned too). A view may start at any element; a
/// misaligned one takes the element-wise path.
pub(crate) fn vector_ok(in_ptr: u64, out_ptr: u64, tuning: Policy, element_bytes: usize) -> bool {
    in_ptr.is_multiple_of(16)
        && out_ptr.is_multiple_of(16)
        && (tuning.tile_items() * element_bytes as u64).is_multiple_of(16)
}

/// Scans `input` into `output` (same length) in one pass with `tuning`
/// (the table's, or the caller's through `ScanOptions::with_policy`);
/// `input = None` scans `output` in place. Validates everything before touching the
/// device; `n = 0` does nothing.
pub(crate) fn scan_lookback_tuned<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    mut output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    tuning: Policy,
) -> Result<()> {
    check_element::<T, O>(op)?;
    // Registers, warp totals and tile state hold the accumulator; for a
    // narrow type the exchange (T) is smaller than shared_bytes(4) counts,
    // so the check errs on the safe side.
    let state_bytes = accumulator_bytes(T::BYTES);
    tuning.validate_lookback(state_bytes)?;
    if let Some(input) = &input {
        Error::check_len("scan input", output.len(), input.len())?;
    }
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    // One block per tile; the grid spills into y past 2^31 − 1 tiles. The
    // kernel takes its tile index from the counter, or in block order from
    // its linear block index (x first, then y: the order blocks start in).
    let (config, num_tiles) = grid_1d(n, tuning.block_threads(), tuning.items_per_thread(), 0)?;
    let kernel = lookback_kernel::<T, O>(gpu, op, tuning)?;

    let out_ptr = output.device_ptr();
    let in_ptr = input.map_or(out_ptr, |view| view.device_ptr());
    let vectors = vector_ok(in_ptr, out_ptr, tuning, T::BYTES);
    let (kind_code, initial) = kind_arguments(op, kind);

    // Tile counters + statuses from the arena, epoch-tagged (no memset);
    // with_tile_state checks the 16-byte alignment the b128 accesses need.
    with_tile_state(gpu, num_tiles, state_bytes, tuning.status(), |mut state| {
        let mut args = KernelArgs::new();
        args.scalar(in_ptr)
            .output(&mut output)
            .output(&mut state.words)
            .scalar(state.epoch)
            .scalar(n)
            .scalar(num_tiles)
            .scalar(kind_code)
            .scalar(initial)
            .scalar(vectors as u32);
        // SAFETY: the argument list matches the entry of scan_lookback_tile or
        // scan_lookback_tile_striped (the same parameters: const T* in, T* out,
        // u64* state, u32 epoch, u64 n, u64 num_tiles, u32 kind, T initial,
        // u32 vector_ok; kind one of ScanKind's codes 0, 1, 2). `in` and `out` cover n elements (equal
        // lengths checked above; `in == out` in place is supported: each block
        // reads its tile before writing it). The grid has num_tiles real blocks,
        // each touching only items [tile·TILE, min(n, (tile+1)·TILE)) of its
        // counter-assigned tile < num_tiles; `state` has tile_state_words(num_tiles)
        // words for the tuning's status encoding of the accumulator (T, or the
        // 4-byte one of a narrow T: op_t's value_type), the layout tile_status.cuh reads,
        // holding zeros or older epochs' tags (16-byte aligned, checked above, for
        // the 128-bit words), and `epoch` is this call's. Vector
        // accesses only when vector_ok checked 16-byte alignment.
        unsafe { gpu.launch(&kernel, config, &args) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_covers_every_element_size_and_is_valid() {
        for bytes in [4usize, 8] {
            let tuning = lookback_policy(bytes);
            tuning
                .validate_lookback(bytes)
                .expect("table entries are valid");
        }
        // 32 KiB of data per 4-byte tile, 24 KiB per 8-byte tile.
        assert_eq!(lookback_policy(4).tile_items() * 4, 32 * 1024);
        assert_eq!(lookback_policy(8).tile_items() * 8, 24 * 1024);
        PROTOCOL_TEST_TUNING.validate_lookback(4).unwrap();
        PROTOCOL_TEST_TUNING.validate_lookback(8).unwrap();
    }

    #[test]
    fn shared_memory_and_shapes_are_checked() {
        let too_big = Policy::shape(1024, 32);
        assert!(too_big.validate_lookback(4).is_err());
        // Without the exchange the same shape needs almost no shared memory.
        too_big
            .with_layout(TileLayout::WarpStriped)
            .validate_lookback(4)
            .unwrap();
        let odd = Policy::shape(100, 4);
        assert!(odd.validate_lookback(4).is_err());
        let none = Policy::shape(64, 0);
        assert!(none.validate_lookback(4).is_err());
        let fine = Policy::shape(512, 16);
        assert!(fine.with_lookback_width(3).validate_lookback(4).is_err());
        assert!(fine.with_lookback_width(16).validate_lookback(4).is_err());
        assert!(fine.with_spin_ns(20_000).validate_lookback(4).is_err());
        assert!(fine.with_streaming(true).validate_lookback(4).is_err());
        fine.with_layout(TileLayout::WarpStriped)
            .with_streaming(true)
            .validate_lookback(4)
            .unwrap();
        // 512 × 4 = 2048 threads fit one SM, 512 × 5 do not.
        fine.with_min_blocks_per_sm(4).validate_lookback(4).unwrap();
        assert!(fine.with_min_blocks_per_sm(5).validate_lookback(4).is_err());
        // 8192 items · 4 B + padding = 33 KB: fits.
        fine.validate_lookback(4).unwrap();
        assert!(fine.validate_lookback(2).is_err());
        // 256 × 16 × 4: exchange 4096 + 128 padding elements, 8 warp totals.
        assert_eq!(
            Policy::shape(256, 16).shared_bytes(4),
            (4096 + 128 + 8 + 1) * 4 + 16
        );
    }

    #[test]
    fn tile_state_layout_matches_the_header() {
        use StatusEncoding::{Packed128, Split};
        assert_eq!(tile_state_words(1, 4, Split), 3);
        assert_eq!(tile_state_words(65_536, 4, Split), 65_538);
        // 4-byte values at the 16-byte stride: two words per tile.
        assert_eq!(tile_state_words(65_536, 4, Packed128), 2 + 131_072);
        // 8-byte values: ⌈5/2⌉ status words + 5 aggregates + 5 prefixes.
        assert_eq!(tile_state_words(5, 8, Split), 2 + 3 + 10);
        // Packed in 128 bits: two words per tile.
        assert_eq!(tile_state_words(5, 8, Packed128), 2 + 10);
        // 2^32 + 5 elements in 4096-item tiles: 2^20 + 1 tiles.
        let tiles = ((1u64 << 32) + 5).div_ceil(4096);
        assert_eq!(tiles, (1 << 20) + 1);
        assert_eq!(tile_state_words(tiles, 4, Split), tiles + 2);
    }

    #[test]
    fn variants_have_distinct_entries_and_registers() {
        use gpu_core::Sum;
        let mut names = std::collections::HashSet::new();
        for bytes in [4usize, 8] {
            let candidates = lookback_candidates(bytes);
            assert_eq!(candidates[0], lookback_policy(bytes), "table entry first");
            for tuning in candidates {
                tuning.validate_lookback(bytes).unwrap();
                let name = if bytes == 4 {
                    entry_name::<i32, _>(&Sum, tuning)
                } else {
                    entry_name::<u64, _>(&Sum, tuning)
                };
                assert!(names.insert(name.clone()), "{name} twice");
            }
        }
        for tuning in protocol_test_variants() {
            tuning.validate_lookback(4).unwrap();
            tuning.validate_lookback(8).unwrap();
            assert!(names.insert(entry_name::<i32, _>(&Sum, tuning)));
        }
        let striped = Policy::shape(256, 16)
            .with_layout(TileLayout::WarpStriped)
            .with_lookback_width(4)
            .with_min_blocks_per_sm(8);
        assert_eq!(
            entry_name::<i32, _>(&Sum, striped),
            "scan_lookback_i32_sum_256x16_ws_w4_r8"
        );
        assert_eq!(striped.label(), "256x16 ws w4 r8");
        assert_eq!(striped.max_registers(), Some(32));
        assert_eq!(
            Policy::shape(256, 8)
                .with_min_blocks_per_sm(6)
                .max_registers(),
            Some(40)
        );
        assert_eq!(Policy::shape(256, 8).max_registers(), None);
        let (source, entry) = lookback_module::<i32, _>(&Sum, striped);
        assert_eq!(source.options(), ["--maxrregcount=32"]);
        assert_eq!(source.entries(), [entry]);
        assert!(source
            .code()
            .contains("scan_lookback_tile_striped<i32, op_t, 256, 16, 4, 0, 0, 0, 0, false>"));
        // Striped tiles need only the warp totals in shared memory.
        assert_eq!(striped.shared_bytes(4), (8 + 1) * 4 + 16);
    }

    #[test]
    fn bytes_moved_is_two_passes_plus_state() {
        assert_eq!(lookback_bytes_moved(0, 4), 0);
        let n = 1u64 << 28;
        // 4-byte values, status words at a 16-byte stride: two words per tile.
        let tiles = n.div_ceil(256 * 32);
        assert_eq!(lookback_bytes_moved(n, 4), 8 * n + 16 * (2 * tiles + 2));
        // 8-byte values, 128-bit status words: two words per tile.
        let tiles = n.div_ceil(128 * 24);
        assert_eq!(lookback_bytes_moved(n, 8), 16 * n + 16 * (2 * tiles + 2));
        // The state is well under 1 % of the data.
        assert!(lookback_bytes_moved(n, 8) < (16 * n) * 101 / 100);
    }

    #[test]
    fn vector_accesses_need_alignment() {
        let t = lookback_policy(4);
        assert!(vector_ok(0x1000, 0x2000, t, 4));
        assert!(!vector_ok(0x1004, 0x2000, t, 4));
        assert!(!vector_ok(0x1000, 0x2008, t, 4));
        // 32 × 1 × 4 B = 128 B tiles: still whole vectors.
        assert!(vector_ok(0x1000, 0x2000, PROTOCOL_TEST_TUNING, 4));
        // Any valid shape (a multiple of 32 threads) makes whole-vector
        // tiles; a shape whose ITEMS is not a multiple of the vector width
        // takes the element-wise path inside the kernel (compile-time).
        let odd_tile = Policy::shape(32, 3);
        assert!(vector_ok(0x1000, 0x2000, odd_tile, 4));
        assert!(!vector_ok(0x1000, 0x2004, odd_tile, 8));
    }

    #[test]
    fn kind_arguments_carry_the_initial_value() {
        use gpu_core::Sum;
        assert_eq!(kind_arguments::<i32, _>(&Sum, ScanKind::Inclusive), (0, 0));
        assert_eq!(
            kind_arguments::<i32, _>(&Sum, ScanKind::Exclusive { initial: 7 }),
            (1, 7)
        );
        assert_eq!(
            kind_arguments::<i32, _>(&Sum, ScanKind::InclusiveFrom { initial: 7 }),
            (2, 7)
        );
    }

    /// The look-back is correct only if each status read is ONE memory
    /// access (single-copy atomic: status and value from the same store).
    /// PTX says so for `ld.relaxed.gpu` of 64 and 128 bits, but ptxas
    /// (NVRTC 13.0, sm_90) has split a `b128` load whose value
    /// was partly unused (4-byte values widened into the 16-byte word) into
    /// two 32-bit loads, and the H100 returned torn (status, value) pairs.
    /// This compiles every status encoding a tuning can select, disassembles
    /// the sm_90 SASS and checks that every strong (relaxed gpu-scope) load
    /// is exactly as wide as the encoding's word: 64 bits for 4-byte values
    /// (either stride), 128 bits for 8-byte values in the 16-byte word. The
    /// split encoding is left out: its 32-bit status and 64-bit value loads
    /// are separate on purpose, ordered by fences.
    #[test]
    fn status_loads_stay_single_accesses() {
        use gpu_core::{Max, Sum};
        use parprims_testkit::testing::check_status_loads;
        // One tuning per code shape of the look-back (tile shapes and delay
        // values do not change how the status is read).
        let distinct = |tunings: Vec<Policy>| {
            let mut seen = std::collections::HashSet::new();
            tunings
                .into_iter()
                .filter(|t| {
                    seen.insert((
                        t.layout(),
                        t.lookback_width(),
                        t.status(),
                        t.streaming(),
                        t.spin_ns() > 0,
                        t.start_delay_ns() > 0,
                    ))
                })
                .collect::<Vec<_>>()
        };
        let mut cases: Vec<(ModuleSource, &str)> = Vec::new();
        // The candidates start with the table's entry.
        let mut four = lookback_candidates(4);
        four.extend(protocol_test_variants());
        for tuning in distinct(four) {
            cases.push((module::<i32, _>(&Sum, tuning), ".64"));
            cases.push((module::<f32, _>(&Max, tuning), ".64"));
        }
        // The narrow types carry a 4-byte accumulator in the same words.
        for tuning in [lookback_policy(1), PROTOCOL_TEST_TUNING] {
            cases.push((module::<i8, _>(&Sum, tuning), ".64"));
            cases.push((module::<u16, _>(&Max, tuning), ".64"));
            cases.push((module::<gpu_core::f16, _>(&Sum, tuning), ".64"));
            cases.push((module::<gpu_core::bf16, _>(&gpu_core::Min, tuning), ".64"));
        }
        let mut eight = lookback_candidates(8);
        eight.extend(protocol_test_variants());
        eight.retain(|t| t.status() == StatusEncoding::Packed128);
        for tuning in distinct(eight) {
            cases.push((module::<u64, _>(&Sum, tuning), ".128"));
            cases.push((module::<f64, _>(&Max, tuning), ".128"));
        }
        let mut checked = 0;
        for (module, width) in &cases {
            let width = format!("{width}.");
            let Some(loads) = check_status_loads(module, "STRONG.GPU", &[&width]) else {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            };
            checked += loads;
        }
        eprintln!("{} modules, {checked} status loads checked", cases.len());
    }

    /// Compiles a sample of the modules (all six types, so both status
    /// encodings and every shuffle overload; a non-commutative custom
    /// operator; both tunings) for sm_80 and sm_90 and checks the entries
    /// are there. The workspace's kernel_compile test covers the whole
    /// catalog.
    #[test]
    fn sample_modules_compile_with_nvrtc() {
        use gpu_core::kernel::{compile_cubin, cubin_defines};
        use gpu_core::{CustomOp, Max, Sum};
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let affine = CustomOp::<u64>::new(
            "affine",
            "((((a & 0xffffffffull) * (b & 0xffffffffull)) & 0xffffffffull) | \
             ((((a >> 32) * (b & 0xffffffffull) + (b >> 32)) & 0xffffffffull) << 32))",
            1,
            |a, b| {
                let m = (a as u32).wrapping_mul(b as u32);
                let o = ((a >> 32) as u32)
                    .wrapping_mul(b as u32)
                    .wrapping_add((b >> 32) as u32);
                ((o as u64) << 32) | m as u64
            },
        )
        .unwrap();
        let mut modules = lookback_modules::<i32, _>(&Sum);
        modules.extend(lookback_modules::<f64, _>(&Max));
        modules.extend(lookback_modules::<u64, _>(&affine));
        modules.extend(lookback_modules::<u32, _>(&gpu_core::Min));
        modules.extend(lookback_modules::<i64, _>(&gpu_core::BitXor));
        // Every sweep candidate and protocol-test variant: i32 sum and f32
        // sum for the 4-byte candidates, u64 sum and the non-commutative
        // affine operator for the 8-byte ones, f64 max for both encodings.
        for tuning in lookback_candidates(4) {
            modules.push(module::<i32, _>(&Sum, tuning));
            modules.push(module::<f32, _>(&Sum, tuning));
        }
        for tuning in lookback_candidates(8) {
            modules.push(module::<u64, _>(&Sum, tuning));
            modules.push(module::<u64, _>(&affine, tuning));
        }
        for tuning in protocol_test_variants() {
            modules.push(module::<u32, _>(&Sum, tuning));
            modules.push(module::<f64, _>(&Max, tuning));
            modules.push(module::<u64, _>(&affine, tuning));
        }
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<i64, _>(
            &Max,
        ));
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<f32, _>(
            &Sum,
        ));
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<u64, _>(
            &affine,
        ));
        for module in &modules {
            for arch in ["sm_80", "sm_90"] {
                let cubin = compile_cubin(module, arch)
                    .unwrap_or_else(|e| panic!("{} for {arch}: {e}", module.name()));
                for entry in module.entries() {
                    assert!(cubin_defines(&cubin, entry), "{entry} missing for {arch}");
                }
            }
        }
    }

    #[test]
    fn modules_name_their_entries() {
        use gpu_core::Sum;
        let modules = lookback_modules::<f32, _>(&Sum);
        assert_eq!(modules.len(), 4);
        assert_eq!(
            modules[0].entries(),
            ["scan_lookback_f32_sum_256x32_ws_p128_bo_ns648_d1245"]
        );
        assert_eq!(modules[1].entries(), ["scan_lookback_f32_sum_32x1"]);
        assert_eq!(
            modules[2].entries(),
            ["scan_lookback_f32_sum_128x16_ws_p128_bo_ns648_d1245"]
        );
        assert_eq!(
            modules[3].entries(),
            ["scan_lookback_f32_sum_128x32_ws_p128_bo_ns648_d1245"]
        );
        assert!(modules[0]
            .code()
            .contains("scan_lookback_tile_striped<f32, op_t, 256, 32, 1, 1, 648, 0, 1245, true>"));
        let modules = lookback_modules::<u64, _>(&Sum);
        assert_eq!(
            modules.len(),
            2,
            "no small-input module for 8-byte elements"
        );
        assert_eq!(
            modules[0].entries(),
            ["scan_lookback_u64_sum_128x24_ws_p128_bo_ns632_d1290"]
        );
        assert!(modules[0]
            .code()
            .contains("scan_lookback_tile_striped<u64, op_t, 128, 24, 1, 1, 632, 0, 1290, true>"));
    }
}
