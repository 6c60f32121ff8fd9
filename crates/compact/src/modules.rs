//! Kernel modules: one per element type for the built-in predicates and
//! flags, one per (custom predicate, element type); the tuning table.

use gpu_core::{Element, Error, ModuleSource, Result};

use crate::predicate::{CustomPredicate, Predicate};

/// How a thread's items sit in a single-pass tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arrangement {
    /// Thread t owns items t·ITEMS .. (t+1)·ITEMS: its flags are one or two
    /// 16-byte vectors, but a warp's item loads are strided (each sector is
    /// fetched by two load instructions).
    Blocked,
    /// Warp w owns 32·ITEMS consecutive items and lane l the 16-byte vectors
    /// l, l+32, l+64, …: every load instruction reads 512 contiguous bytes.
    WarpStriped,
}

/// How single-pass tiles map to blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One block per tile (a grid of as many blocks as tiles).
    TilePerBlock,
    /// As many blocks as are resident at once, each looping over tiles taken
    /// from the counter; the next tile's loads are issued before this
    /// tile's look-back and write-out, and tile indices are claimed one
    /// iteration ahead.
    Persistent,
}

/// The single-pass kernel's shape: threads per block, items per thread,
/// their arrangement, the look-back depth and the schedule.
///
/// The table [`TUNING`] gives the default per element size; the candidates
/// ([`Tuning::candidates`]) are the variants the tuning sweep
/// (`tests/compact_tuning.rs`) compares, each compiled as a module of its own
/// and reachable through the `*_into_tuned` functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub block_threads: u32,
    /// Items each thread owns (at most 32, the keep mask is a u32; a
    /// multiple of 16 when blocked, of 16 / element bytes when striped).
    pub items_per_thread: u32,
    /// Blocked or warp-striped items.
    pub arrangement: Arrangement,
    /// Tile statuses each look-back lane reads per round trip (1, 2 or 4):
    /// a window of 32 · depth tiles.
    pub lookback_depth: u32,
    /// One tile per block, or persistent pipelined blocks.
    pub schedule: Schedule,
    /// Register cap per thread handed to the compiler (`--maxrregcount`), so
    /// more blocks fit on a multiprocessor; 0 leaves the choice to the
    /// compiler.
    pub max_registers: u32,
    /// Look-back start delay: one `__nanosleep` before the first status
    /// read (0: none). Grids of 512 tiles or more only.
    pub start_delay_ns: u32,
    /// Look-back spin delay between re-reads of an unpublished status (0:
    /// growing sleeps of 16 … 256 ns). Grids of 512 tiles or more only.
    pub spin_ns: u32,
}

/// The tuning table: (element bytes, tuning), the default of the single-pass
/// kernel, set from two tuning sweeps (`tests/compact_tuning.rs`) on an
/// NVIDIA H100 80GB HBM3, 2026-11-23, at 2^28 items (copy ceiling 2976 GB/s;
/// logs in docs/results/tuning-2026-11-23/):
///
/// * 4-byte: 256 × 16 blocked, one status per look-back lane, one tile per
///   block, look-back delays 3000 ns (start) / 1000 ns (spin):
///   `select_flagged` i32 0.779 ms (0.810 of the ceiling) and
///   `select_if(x > 0)` 0.676 ms (0.801), the only candidate over 0.80 for
///   both (without delays: 0.942 / 0.823 ms). Warp-striped tiles are faster
///   by predicate (0.657 ms) but 14 % slower by flags.
/// * 8-byte: 256 × 16 warp-striped, one status per lane, delays 1170 / 360
///   ns: `select_flagged` u64 1.309 ms (0.896), `select_if(x > 500)` 1.227 ms
///   (0.881); 4 statuses per lane with the same delays 1.376 / 1.270 ms,
///   without delays 1.570 / 1.399 ms.
pub const TUNING: [(usize, Tuning); 2] = [
    (
        4,
        Tuning::new(256, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock)
            .with_delays(3000, 1000),
    ),
    (
        8,
        Tuning::new(256, 16, Arrangement::WarpStriped, 1, Schedule::TilePerBlock)
            .with_delays(1170, 360),
    ),
];

/// The tuning of `select_if` (selection by a predicate, no flags array):
/// (element bytes, tuning). Without the flags stream a tile's loads are
/// fewer and its look-back dominates more; on the sweep (H100, 2026-11-23,
/// 2^28 i32, `select_if(x > 0)`) 384 × 16 warp-striped tiles with delays
/// 1125 / 415 ns took 0.661 ms (0.657 ms in the first sweep) against 0.676
/// ms for the flags default, but 0.891 ms against 0.779 ms by flags: hence
/// a table of its own. 8-byte items: the flags default was also the fastest
/// by predicate. `partition` keeps [`TUNING`] (its scatter writes every item,
/// the shape the flags table was chosen for; not swept on its own). A
/// custom predicate is compiled at this tuning too.
pub const SELECT_IF_TUNING: [(usize, Tuning); 2] = [
    (
        4,
        Tuning::new(384, 16, Arrangement::WarpStriped, 1, Schedule::TilePerBlock)
            .with_delays(1125, 415),
    ),
    (
        8,
        Tuning::new(256, 16, Arrangement::WarpStriped, 1, Schedule::TilePerBlock)
            .with_delays(1170, 360),
    ),
];

/// Variants compared by the tuning sweep for 4-byte items; the first is the
/// default. Measured on an NVIDIA H100 80GB HBM3, 2026-11-23, 2^28 i32,
/// median ms for `select_flagged` (50 % flags) / `select_if(x > 0)`; "dS/P" =
/// look-back start delay S ns, spin delay P ns:
///
/// | candidate | flagged | x > 0 |
/// |---|---|---|
/// | 256x16 blocked lb1 d3000/1000 (default) | **0.779** | 0.676 |
/// | 256x16 blocked lb1, no delays (the 2026-11-22 default) | 0.944 | 0.821 |
/// | 256x16 blocked lb1 d2000/800 | 0.787 | 0.692 |
/// | 384x16 blocked lb1 d2000/800 | 0.797 | 0.681 |
/// | 512x16 blocked lb1 d1125/415 | 0.808 | 0.672 |
/// | 512x16 blocked lb1 d2000/800 | 0.812 | 0.677 |
/// | 256x16 striped lb1 persistent | 2.795 | 2.337 |
/// | 256x32 blocked lb1 d2000/800 | 0.865 | 0.691 |
/// | 384x16 striped lb1 d1125/415 | 0.891 | **0.661** |
/// | 384x16 blocked lb1 d1600/600 | 0.795 | 0.684 |
/// | 384x16 blocked lb1 d1125/415 | 0.791 | 0.688 |
///
/// The first sweep of the day also had 256x16 blocked d1125/415 (0.783 /
/// 0.690), d600/200 (0.838 / 0.738) and 128x16 striped lb4 ≤ 32 registers
/// with and without delays (0.934 / 0.728, 1.022 / 0.821). Deeper look-back
/// windows cost more than they save for 4-byte tiles, and the persistent
/// schedule is 3–12× slower: a tile claimed ahead but not started publishes
/// nothing until its block has finished the tile before it, so successors'
/// look-backs stall on it and the blocks convoy.
pub const CANDIDATES_4: [Tuning; 11] = [
    Tuning::new(256, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(3000, 1000),
    Tuning::new(256, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock),
    Tuning::new(256, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(2000, 800),
    Tuning::new(384, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(2000, 800),
    Tuning::new(512, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(1125, 415),
    Tuning::new(512, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(2000, 800),
    Tuning::new(256, 16, Arrangement::WarpStriped, 1, Schedule::Persistent),
    Tuning::new(256, 32, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(2000, 800),
    Tuning::new(384, 16, Arrangement::WarpStriped, 1, Schedule::TilePerBlock)
        .with_delays(1125, 415),
    Tuning::new(384, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(1600, 600),
    Tuning::new(384, 16, Arrangement::Blocked, 1, Schedule::TilePerBlock).with_delays(1125, 415),
];

/// Variants compared by the tuning sweep for 8-byte items; the first is the
/// default. Measured on an NVIDIA H100 80GB HBM3, 2026-11-23, 2^28 u64,
/// median ms for `select_flagged` (50 % flags) / `select_if(x > 500)`:
///
/// | candidate | flagged | x > 500 |
/// |---|---|---|
/// | 256x16 striped lb1 d1170/360 (default) | **1.309** | **1.227** |
/// | 256x16 striped lb4, no delays (the 2026-11-22 default) | 1.570 | 1.399 |
/// | 384x8 striped lb4 d1170/360 | 1.454 | 1.333 |
/// | 256x16 striped lb4 d1170/360 | 1.376 | 1.270 |
/// | 256x16 striped lb4 d2000/800 | 1.370 | 1.269 |
/// | 256x16 blocked lb4 persistent | 8.502 | 9.829 |
/// | 128x16 striped lb4 d1170/360 | 1.413 | 1.314 |
pub const CANDIDATES_8: [Tuning; 7] = [
    Tuning::new(256, 16, Arrangement::WarpStriped, 1, Schedule::TilePerBlock)
        .with_delays(1170, 360),
    Tuning::new(256, 16, Arrangement::WarpStriped, 4, Schedule::TilePerBlock),
    Tuning::new(384, 8, Arrangement::WarpStriped, 4, Schedule::TilePerBlock).with_delays(1170, 360),
    Tuning::new(256, 16, Arrangement::WarpStriped, 4, Schedule::TilePerBlock)
        .with_delays(1170, 360),
    Tuning::new(256, 16, Arrangement::WarpStriped, 4, Schedule::TilePerBlock)
        .with_delays(2000, 800),
    Tuning::new(256, 16, Arrangement::Blocked, 4, Schedule::Persistent),
    Tuning::new(128, 16, Arrangement::WarpStriped, 4, Schedule::TilePerBlock)
        .with_delays(1170, 360),
];

/// A tuning table's entry for `element_bytes` (its 4- or 8-byte row; any
/// other size gets the 8-byte row).
fn table_entry(table: &[(usize, Tuning); 2], element_bytes: usize) -> Tuning {
    table
        .iter()
        .find(|(bytes, _)| *bytes == element_bytes)
        .map_or(table[1].1, |(_, t)| *t)
}

/// Static shared memory a single-pass block may use (the 48 KiB a block
/// gets without opting in).
const STATIC_SHARED_LIMIT: usize = 48 * 1024;

impl Tuning {
    /// A tuning from its shape fields, without a register cap.
    pub const fn new(
        block_threads: u32,
        items_per_thread: u32,
        arrangement: Arrangement,
        lookback_depth: u32,
        schedule: Schedule,
    ) -> Tuning {
        Tuning {
            block_threads,
            items_per_thread,
            arrangement,
            lookback_depth,
            schedule,
            max_registers: 0,
            start_delay_ns: 0,
            spin_ns: 0,
        }
    }

    /// The same tuning with look-back delays: `start` ns before the first
    /// status read, `spin` ns between re-reads.
    pub const fn with_delays(mut self, start: u32, spin: u32) -> Tuning {
        self.start_delay_ns = start;
        self.spin_ns = spin;
        self
    }

    /// The same tuning with a register cap per thread.
    pub const fn with_max_registers(mut self, max_registers: u32) -> Tuning {
        self.max_registers = max_registers;
        self
    }

    /// The tuning for an element of `element_bytes` bytes (4 or 8; any other
    /// size gets the 8-byte entry).
    pub fn for_element_bytes(element_bytes: usize) -> Tuning {
        table_entry(&TUNING, element_bytes)
    }

    /// The tuning for `T`.
    pub fn of<T: Element>() -> Tuning {
        Self::for_element_bytes(T::BYTES)
    }

    /// The `select_if` tuning ([`SELECT_IF_TUNING`]) for an element of
    /// `element_bytes` bytes (4 or 8; any other size gets the 8-byte entry).
    pub fn select_if_for_element_bytes(element_bytes: usize) -> Tuning {
        table_entry(&SELECT_IF_TUNING, element_bytes)
    }

    /// The `select_if` tuning for `T`.
    pub fn select_if_of<T: Element>() -> Tuning {
        Self::select_if_for_element_bytes(T::BYTES)
    }

    /// The sweep's variants for elements of `element_bytes` bytes (4-byte
    /// list for 4, 8-byte list otherwise).
    pub fn candidates(element_bytes: usize) -> &'static [Tuning] {
        if element_bytes == 4 {
            &CANDIDATES_4
        } else {
            &CANDIDATES_8
        }
    }

    /// Items per tile (one block's share of the single-pass kernel at a time).
    pub fn tile_items(&self) -> u64 {
        self.block_threads as u64 * self.items_per_thread as u64
    }

    /// Tiles covering `n` items.
    pub fn tiles(&self, n: u64) -> u64 {
        n.div_ceil(self.tile_items())
    }

    /// Static shared memory of a single-pass block, bytes: the staging tile
    /// plus the warp totals and three 8-byte words.
    pub fn shared_bytes(&self, element_bytes: usize) -> usize {
        self.tile_items() as usize * element_bytes + 4 * (self.block_threads as usize / 32) + 24
    }

    /// A short name for tables: `256x16/blocked/lb1/tile-per-block`.
    pub fn name(&self) -> String {
        let arrangement = match self.arrangement {
            Arrangement::Blocked => "blocked",
            Arrangement::WarpStriped => "striped",
        };
        let schedule = match self.schedule {
            Schedule::TilePerBlock => "tile-per-block",
            Schedule::Persistent => "persistent",
        };
        let cap = if self.max_registers > 0 {
            format!("/r{}", self.max_registers)
        } else {
            String::new()
        };
        let delays = self.delay_suffix('/');
        format!(
            "{}x{}/{arrangement}/lb{}/{schedule}{cap}{delays}",
            self.block_threads, self.items_per_thread, self.lookback_depth
        )
    }

    /// `{separator}d{start}s{spin}` when the tuning has look-back delays,
    /// else nothing (shared by [`Tuning::name`] and the module tag).
    fn delay_suffix(&self, separator: char) -> String {
        if self.start_delay_ns > 0 || self.spin_ns > 0 {
            format!("{separator}d{}s{}", self.start_delay_ns, self.spin_ns)
        } else {
            String::new()
        }
    }

    /// An identifier for module names: `b256x16_lb1_t`.
    pub(crate) fn tag(&self) -> String {
        let arrangement = match self.arrangement {
            Arrangement::Blocked => "b",
            Arrangement::WarpStriped => "s",
        };
        let schedule = match self.schedule {
            Schedule::TilePerBlock => "t",
            Schedule::Persistent => "p",
        };
        let cap = if self.max_registers > 0 {
            format!("_r{}", self.max_registers)
        } else {
            String::new()
        };
        let delays = self.delay_suffix('_');
        format!(
            "{arrangement}{}x{}_lb{}_{schedule}{cap}{delays}",
            self.block_threads, self.items_per_thread, self.lookback_depth
        )
    }

    /// Whether the kernel template accepts this shape for elements of
    /// `element_bytes` bytes (the static_asserts of compact/compact.cuh, checked on
    /// the host).
    pub fn validate(&self, element_bytes: usize) -> Result<()> {
        let vector_items = 16 / element_bytes.clamp(1, 16) as u32;
        if self.block_threads == 0 || self.block_threads % 32 != 0 || self.block_threads > 1024 {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "block_threads {} is not a multiple of 32 in 32..=1024",
                    self.block_threads
                ),
            ));
        }
        let items = self.items_per_thread;
        let items_ok = match self.arrangement {
            Arrangement::Blocked => items > 0 && items <= 32 && items % 16 == 0,
            Arrangement::WarpStriped => {
                items > 0 && items <= 32 && items % vector_items == 0 && items / vector_items <= 8
            }
        };
        if !items_ok {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "{items} items per thread do not fit the {:?} layout for {element_bytes}-byte items",
                    self.arrangement
                ),
            ));
        }
        if !matches!(self.lookback_depth, 1 | 2 | 4) {
            return Err(Error::invalid(
                "tuning",
                format!("look-back depth {} is not 1, 2 or 4", self.lookback_depth),
            ));
        }
        if self.max_registers != 0 && !(24..=255).contains(&self.max_registers) {
            return Err(Error::invalid(
                "tuning",
                format!("register cap {} is not 0 or 24..=255", self.max_registers),
            ));
        }
        if self.start_delay_ns > 10_000 || self.spin_ns > 10_000 {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "look-back delays {} / {} ns: at most 10000 each",
                    self.start_delay_ns, self.spin_ns
                ),
            ));
        }
        if self.shared_bytes(element_bytes) > STATIC_SHARED_LIMIT {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "{} bytes of staging exceed 48 KiB of static shared memory",
                    self.shared_bytes(element_bytes)
                ),
            ));
        }
        Ok(())
    }
}

/// A tuned call may only ask for a catalogued module: a default tuning (of
/// the flags table or the `select_if` table) or one of the candidates for
/// the element size.
pub fn validate_tuning(element_bytes: usize, tuning: &Tuning) -> Result<()> {
    tuning.validate(element_bytes)?;
    if *tuning == Tuning::for_element_bytes(element_bytes)
        || *tuning == Tuning::select_if_for_element_bytes(element_bytes)
        || Tuning::candidates(element_bytes).contains(tuning)
    {
        Ok(())
    } else {
        Err(Error::invalid(
            "tuning",
            format!(
                "{} is neither the default nor a candidate for {element_bytes}-byte items \
                 (only catalogued modules are compiled)",
                tuning.name()
            ),
        ))
    }
}

/// Threads per block and items per thread of the count kernel (blocked,
/// one 16-byte flag vector per thread): the first version's shape, not
/// swept.
pub const COUNT_BLOCK_THREADS: u32 = 256;
/// Items per thread of the count kernel.
pub const COUNT_ITEMS_PER_THREAD: u32 = 16;

/// Threads per block of the three-pass map and scatter kernels (one item per
/// thread): not swept.
pub const THREE_PASS_BLOCK_THREADS: u32 = 256;

/// Which predicate a module compiles in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PredicateSource<'a, T: Element> {
    /// The runtime-coded comparisons (and the flag kernels).
    Builtin,
    /// A caller's expression.
    Custom(&'a CustomPredicate<T>),
}

impl<'a, T: Element> PredicateSource<'a, T> {
    pub(crate) fn of(predicate: &'a Predicate<T>) -> Self {
        match predicate.custom() {
            Some(custom) => PredicateSource::Custom(custom),
            None => PredicateSource::Builtin,
        }
    }
}

/// Entry names (the same in the built-in and in each custom module).
pub(crate) mod entry {
    use gpu_core::DeviceType;

    pub(crate) fn select_flagged<T: DeviceType>() -> String {
        format!("compact_select_flagged_{}", T::SUFFIX)
    }
    pub(crate) fn select_if<T: DeviceType>() -> String {
        format!("compact_select_if_{}", T::SUFFIX)
    }
    pub(crate) fn partition_if<T: DeviceType>() -> String {
        format!("compact_partition_if_{}", T::SUFFIX)
    }
    pub(crate) fn count_flagged<T: DeviceType>() -> String {
        format!("compact_count_flagged_{}", T::SUFFIX)
    }
    pub(crate) fn count_if<T: DeviceType>() -> String {
        format!("compact_count_if_{}", T::SUFFIX)
    }
    pub(crate) fn map_flags<T: DeviceType, C: DeviceType>() -> String {
        format!("compact_map_flags_{}_{}", C::SUFFIX, T::SUFFIX)
    }
    pub(crate) fn map_if<T: DeviceType, C: DeviceType>() -> String {
        format!("compact_map_if_{}_{}", C::SUFFIX, T::SUFFIX)
    }
    pub(crate) fn scatter<T: DeviceType, C: DeviceType>(partition: bool) -> String {
        let kind = if partition { "partition" } else { "select" };
        format!("compact_scatter_{kind}_{}_{}", C::SUFFIX, T::SUFFIX)
    }
}

/// The CUDA functor type and the support code a predicate source needs.
fn predicate_parts<T: Element>(predicate: PredicateSource<'_, T>) -> (String, String) {
    let t = T::CUDA_TYPE;
    match predicate {
        PredicateSource::Builtin => (format!("builtin_pred<{t}>"), String::new()),
        PredicateSource::Custom(custom) => (
            "custom_pred".to_owned(),
            // The caller's expression, spliced into a device function of `x`;
            // the functor takes (and ignores) the built-in arguments so both
            // kinds of module share the kernel templates and parameter lists.
            format!(
                "{support}\n__device__ __forceinline__ bool custom_predicate({t} x) {{ return (bool)({expr}); }}\n\
                 struct custom_pred {{\n    \
                 __device__ __forceinline__ custom_pred(u32, {t}, {t}) {{}}\n    \
                 __device__ __forceinline__ bool operator()({t} x) const {{ return custom_predicate(x); }}\n}};\n",
                support = custom.cuda_support(),
                expr = custom.cuda_expr(),
            ),
        ),
    }
}

/// The headers every compaction module starts with: the single-pass
/// machinery (warp, block scan, tile state, look-back), the block reduce of
/// the count kernel, then compaction's own pieces.
fn headers(module: ModuleSource) -> ModuleSource {
    parprims_kernels::SINGLE_PASS
        .iter()
        .fold(module, |module, header| module.source(header))
        .source(parprims_kernels::BLOCK_REDUCE)
        .source(parprims_kernels::COMPACT)
}

/// Adds the single-pass entries (select by flags when `builtin`, select by
/// predicate, partition scatter) for `tuning`.
fn add_single_pass<T: Element>(
    mut module: ModuleSource,
    tuning: &Tuning,
    pred_type: &str,
    builtin: bool,
) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let striped = tuning.arrangement == Arrangement::WarpStriped;
    let persistent = tuning.schedule == Schedule::Persistent;
    let shape = format!(
        "{t}, {block}, {items}, {striped}, {depth}, {persistent}",
        block = tuning.block_threads,
        items = tuning.items_per_thread,
        depth = tuning.lookback_depth,
    );
    let delays = format!("{}, {}", tuning.start_delay_ns, tuning.spin_ns);
    // __launch_bounds__ would override --maxrregcount: a capped tuning
    // leaves it out (the cap then bounds registers on its own).
    let bounds = if tuning.max_registers > 0 {
        None
    } else {
        Some(tuning.block_threads)
    };
    if builtin {
        module = module.entry(
            entry::select_flagged::<T>(),
            &format!("const {t}* in, const u8* flags, {t}* out, u64 n, u64* state, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{shape}, true, false, builtin_pred<{t}>, {delays}>(in, flags, builtin_pred<{t}>(0u, ({t})0, ({t})0), out, n, state, num_tiles, count_out, nullptr)"
            ),
            bounds,
        );
    }
    module
        .entry(
            entry::select_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* state, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{shape}, false, false, {pred_type}, {delays}>(in, nullptr, {pred}, out, n, state, num_tiles, count_out, nullptr)"
            ),
            bounds,
        )
        .entry(
            entry::partition_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* state, u64 num_tiles, const u64* total"),
            &format!(
                "compact_single_pass<{shape}, false, true, {pred_type}, {delays}>(in, nullptr, {pred}, out, n, state, num_tiles, nullptr, total)"
            ),
            bounds,
        )
}

/// The key naming, for `Gpu::stored_kernel`, the module that
/// [`single_pass_module`] builds for `predicate` and `tuning` (the main
/// module, [`module`], when `tuning` is the default): family, element type,
/// every tuning field (the tag spells them all), and the predicate: built
/// in, or a caller's by name and the fingerprint of its CUDA text.
pub(crate) fn module_key<T: Element>(predicate: PredicateSource<'_, T>, tuning: &Tuning) -> String {
    let family = if *tuning == Tuning::of::<T>() {
        "main"
    } else {
        "single_pass"
    };
    let predicate = match predicate {
        PredicateSource::Builtin => "builtin".to_owned(),
        PredicateSource::Custom(custom) => format!(
            "custom/{}/{}",
            custom.name(),
            gpu_core::kernel::fingerprint(&format!(
                "{}\n{}",
                custom.cuda_support(),
                custom.cuda_expr()
            ))
        ),
    };
    format!(
        "compact/{family}/{}/{}/{predicate}",
        T::SUFFIX,
        tuning.tag()
    )
}

/// The name of the built-in module holding `tuning`'s single-pass entries:
/// `compact_{type}` for the default tuning (the main module), else
/// `compact_sp_{tag}_{type}` (the store's key is [`module_key`]).
pub(crate) fn builtin_module_name<T: Element>(tuning: &Tuning) -> String {
    if *tuning == Tuning::of::<T>() {
        format!("compact_{}", T::SUFFIX)
    } else {
        format!("compact_sp_{}_{}", tuning.tag(), T::SUFFIX)
    }
}

/// The single-pass module for `tuning`: the default tuning lives in the
/// main module ([`module`]); any other (a candidate) in a module of its own
/// holding only the single-pass entries for the built-in predicates and flags.
pub(crate) fn single_pass_module<T: Element>(
    predicate: PredicateSource<'_, T>,
    tuning: &Tuning,
) -> ModuleSource {
    if *tuning == Tuning::of::<T>() {
        return module::<T>(predicate);
    }
    let (pred_type, support) = predicate_parts::<T>(predicate);
    let builtin = matches!(predicate, PredicateSource::Builtin);
    let name = match predicate {
        PredicateSource::Builtin => builtin_module_name::<T>(tuning),
        PredicateSource::Custom(custom) => {
            format!(
                "compact_sp_{}_custom_{}_{}",
                tuning.tag(),
                custom.name(),
                T::SUFFIX
            )
        }
    };
    let mut module = headers(ModuleSource::new(name))
        .source(&support)
        .source(parprims_kernels::COMPACT_SINGLE_PASS);
    if tuning.max_registers > 0 {
        module = module.option(format!("--maxrregcount={}", tuning.max_registers));
    }
    add_single_pass::<T>(module, tuning, &pred_type, builtin)
}

/// The module for `T` with `predicate` compiled in, at the default tuning.
/// The built-in module also holds the flag kernels; a custom module holds
/// only the predicate ones.
pub(crate) fn module<T: Element>(predicate: PredicateSource<'_, T>) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let tuning = Tuning::of::<T>();
    let (count_block, count_items) = (COUNT_BLOCK_THREADS, COUNT_ITEMS_PER_THREAD);
    let name = match predicate {
        PredicateSource::Builtin => builtin_module_name::<T>(&tuning),
        PredicateSource::Custom(custom) => {
            format!("compact_custom_{}_{}", custom.name(), T::SUFFIX)
        }
    };
    let (pred_type, support) = predicate_parts::<T>(predicate);
    let mut module = headers(ModuleSource::new(name))
        .source(&support)
        .source(parprims_kernels::COMPACT_SINGLE_PASS)
        .source(parprims_kernels::COMPACT_COUNT)
        .source(parprims_kernels::COMPACT_THREE_PASS);
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let builtin = matches!(predicate, PredicateSource::Builtin);

    // Single pass. (A register cap in the default tuning would apply to the
    // whole module: count and three-pass kernels too.)
    if tuning.max_registers > 0 {
        module = module.option(format!("--maxrregcount={}", tuning.max_registers));
    }
    module = add_single_pass::<T>(module, &tuning, &pred_type, builtin);
    let bounds = Some(count_block);

    // Count.
    if builtin {
        module = module.entry(
            entry::count_flagged::<T>(),
            "const u8* flags, u64 n, u64 num_tiles, u64* count_out",
            &format!(
                "compact_count<{t}, {count_block}, {count_items}, true, builtin_pred<{t}>>(nullptr, flags, builtin_pred<{t}>(0u, ({t})0, ({t})0), n, num_tiles, count_out)"
            ),
            bounds,
        );
    }
    module = module.entry(
        entry::count_if::<T>(),
        &format!("const {t}* in, {pred_params}, u64 n, u64 num_tiles, u64* count_out"),
        &format!(
            "compact_count<{t}, {count_block}, {count_items}, false, {pred_type}>(in, nullptr, {pred}, n, num_tiles, count_out)"
        ),
        bounds,
    );

    // Three pass, with u32 and u64 marks.
    let three = Some(THREE_PASS_BLOCK_THREADS);
    for c in ["u32", "u64"] {
        let (map_flags, map_if, scatter_select, scatter_partition) = if c == "u32" {
            (
                entry::map_flags::<T, u32>(),
                entry::map_if::<T, u32>(),
                entry::scatter::<T, u32>(false),
                entry::scatter::<T, u32>(true),
            )
        } else {
            (
                entry::map_flags::<T, u64>(),
                entry::map_if::<T, u64>(),
                entry::scatter::<T, u64>(false),
                entry::scatter::<T, u64>(true),
            )
        };
        if builtin {
            module = module.entry(
                map_flags,
                &format!("const u8* flags, {c}* marks, u64 n"),
                &format!("compact_map_flags<{c}>(flags, marks, n)"),
                three,
            );
        }
        module = module
            .entry(
                map_if,
                &format!("const {t}* in, {pred_params}, {c}* marks, u64 n"),
                &format!("compact_map_if<{t}, {c}, {pred_type}>(in, {pred}, marks, n)"),
                three,
            )
            .entry(
                scatter_select,
                &format!("const {t}* in, const {c}* marks, const {c}* positions, {t}* out, u64 n, u64* count_out"),
                &format!("compact_scatter<{t}, {c}, false>(in, marks, positions, out, n, count_out)"),
                three,
            )
            .entry(
                scatter_partition,
                &format!("const {t}* in, const {c}* marks, const {c}* positions, {t}* out, u64 n, u64* count_out"),
                &format!("compact_scatter<{t}, {c}, true>(in, marks, positions, out, n, count_out)"),
                three,
            );
    }
    module
}

/// The example custom predicate the catalog compiles for every type, so the
/// custom-module template is checked without a caller's expression.
fn catalog_custom<T: Element>() -> CustomPredicate<T> {
    CustomPredicate::new("catalog_positive", "x > 0", |x: T| x > T::zero())
        .expect("a valid name and expression")
}

fn modules_for<T: Element>() -> Vec<ModuleSource> {
    let custom = catalog_custom::<T>();
    let mut modules = vec![
        module::<T>(PredicateSource::Builtin),
        module::<T>(PredicateSource::Custom(&custom)),
    ];
    let default = Tuning::of::<T>();
    for tuning in Tuning::candidates(T::BYTES) {
        if *tuning != default {
            modules.push(single_pass_module::<T>(PredicateSource::Builtin, tuning));
        }
    }
    // A caller's predicate is compiled at the select_if tuning as well.
    let select_if = Tuning::select_if_of::<T>();
    if select_if != default {
        modules.push(single_pass_module::<T>(
            PredicateSource::Custom(&custom),
            &select_if,
        ));
    }
    modules
}

/// Every module this crate can request: for each element type the built-in
/// module (flags and comparison predicates; single pass, count, three-pass
/// map/scatter with u32 and u64 marks), a custom-predicate module (the
/// template every caller's expression is compiled into, with an example
/// expression), one single-pass module per candidate tuning other than
/// the default (built-in predicates and flags; what the `*_into_tuned`
/// functions use, and the built-in `select_if` where its tuning differs),
/// and, where the `select_if` tuning differs from the default, the
/// custom-predicate single-pass module at that tuning.
pub fn kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    modules.extend(modules_for::<i32>());
    modules.extend(modules_for::<u32>());
    modules.extend(modules_for::<i64>());
    modules.extend(modules_for::<u64>());
    modules.extend(modules_for::<f32>());
    modules.extend(modules_for::<f64>());
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_tiles_cover_every_item() {
        for (bytes, tuning) in TUNING {
            assert_eq!(Tuning::for_element_bytes(bytes), tuning);
            tuning
                .validate(bytes)
                .expect("the default is a valid shape");
            validate_tuning(bytes, &tuning).expect("the default is always allowed");
            // The sweep measures the default against the candidates.
            assert_eq!(Tuning::candidates(bytes)[0], tuning);
        }
        let t = Tuning::of::<i32>();
        assert_eq!(t.tiles(0), 0);
        assert_eq!(t.tiles(1), 1);
        assert_eq!(t.tiles(t.tile_items()), 1);
        assert_eq!(t.tiles(t.tile_items() + 1), 2);
        assert_eq!(
            t.tiles((1u64 << 31) + 9),
            ((1u64 << 31) + 9).div_ceil(t.tile_items())
        );
    }

    #[test]
    fn select_if_tuning_is_a_catalogued_candidate() {
        for (bytes, tuning) in SELECT_IF_TUNING {
            assert_eq!(Tuning::select_if_for_element_bytes(bytes), tuning);
            // Measured against the others by the sweep, and compiled in the
            // catalogue as a candidate module.
            assert!(Tuning::candidates(bytes).contains(&tuning));
            validate_tuning(bytes, &tuning).expect("allowed");
        }
        assert_eq!(
            Tuning::select_if_of::<i32>().name(),
            "384x16/striped/lb1/tile-per-block/d1125s415"
        );
        assert_eq!(Tuning::select_if_of::<u64>(), Tuning::of::<u64>());
        // The built-in select_if of 4-byte types resolves to the candidate's
        // module; a caller's predicate gets a module of its own.
        let t = Tuning::select_if_of::<f32>();
        assert_eq!(
            single_pass_module::<f32>(PredicateSource::Builtin, &t).name(),
            format!("compact_sp_{}_f32", t.tag())
        );
        let custom = catalog_custom::<f32>();
        let names: Vec<String> = kernel_catalog()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        let custom_name = single_pass_module::<f32>(PredicateSource::Custom(&custom), &t)
            .name()
            .to_owned();
        assert!(names.contains(&custom_name), "{custom_name} not catalogued");
    }

    #[test]
    fn candidates_are_valid_distinct_and_named_apart() {
        for bytes in [4usize, 8] {
            let candidates = Tuning::candidates(bytes);
            for tuning in candidates {
                tuning
                    .validate(bytes)
                    .expect("every candidate is a valid shape");
                validate_tuning(bytes, tuning).expect("every candidate is allowed");
                // Staging within the 48 KiB of static shared memory.
                assert!(tuning.shared_bytes(bytes) <= 48 * 1024);
            }
            let mut tags: Vec<String> = candidates.iter().map(|t| t.tag()).collect();
            let mut names: Vec<String> = candidates.iter().map(|t| t.name()).collect();
            tags.sort();
            tags.dedup();
            names.sort();
            names.dedup();
            assert_eq!(tags.len(), candidates.len());
            assert_eq!(names.len(), candidates.len());
        }
        assert_eq!(
            CANDIDATES_4[0].name(),
            "256x16/blocked/lb1/tile-per-block/d3000s1000"
        );
        assert_eq!(CANDIDATES_4[6].tag(), "s256x16_lb1_p");
        assert_eq!(CANDIDATES_4[0].tag(), "b256x16_lb1_t_d3000s1000");
    }

    #[test]
    fn bad_tunings_are_refused() {
        let ok = Tuning::new(256, 16, Arrangement::WarpStriped, 4, Schedule::Persistent);
        assert!(ok.validate(4).is_ok());
        let with = |f: &dyn Fn(&mut Tuning)| {
            let mut t = ok;
            f(&mut t);
            t
        };
        assert!(with(&|t| t.block_threads = 100).validate(4).is_err());
        assert!(with(&|t| t.block_threads = 0).validate(4).is_err());
        assert!(with(&|t| t.block_threads = 2048).validate(4).is_err());
        assert!(with(&|t| t.items_per_thread = 0).validate(4).is_err());
        assert!(with(&|t| t.items_per_thread = 6).validate(4).is_err());
        assert!(with(&|t| t.items_per_thread = 33).validate(4).is_err());
        assert!(with(&|t| t.items_per_thread = 8).validate(4).is_ok());
        assert!(with(&|t| t.items_per_thread = 6).validate(8).is_ok());
        // 8-byte striped: at most 8 vectors of 2 items.
        assert!(with(&|t| t.items_per_thread = 32).validate(8).is_err());
        // Blocked needs whole 16-byte flag vectors.
        let blocked = with(&|t| t.arrangement = Arrangement::Blocked);
        assert!(blocked.validate(4).is_ok());
        assert!(with(&|t| {
            t.arrangement = Arrangement::Blocked;
            t.items_per_thread = 8
        })
        .validate(4)
        .is_err());
        assert!(with(&|t| t.lookback_depth = 3).validate(4).is_err());
        assert!(with(&|t| t.lookback_depth = 0).validate(4).is_err());
        // 1024 × 16 × 4 bytes of staging: too much static shared memory.
        assert!(with(&|t| t.block_threads = 1024).validate(4).is_err());
        // Valid shapes outside the catalogue are refused by validate_tuning.
        let uncatalogued = with(&|t| t.block_threads = 64);
        assert!(uncatalogued.validate(4).is_ok());
        assert!(validate_tuning(4, &uncatalogued).is_err());
    }

    #[test]
    fn catalog_names_are_unique_and_complete() {
        let modules = kernel_catalog();
        // Per type: built-in + custom, the non-default candidates, and for
        // 4-byte types the custom module at the select_if tuning.
        let expected = 12 + 3 * (CANDIDATES_4.len() - 1) + 3 * (CANDIDATES_8.len() - 1) + 3;
        assert_eq!(modules.len(), expected);
        let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), expected);
        // A candidate module holds exactly the three single-pass entries.
        let tuned = single_pass_module::<i32>(PredicateSource::Builtin, &CANDIDATES_4[6]);
        assert_eq!(tuned.name(), "compact_sp_s256x16_lb1_p_i32");
        assert_eq!(
            tuned.entries(),
            &[
                entry::select_flagged::<i32>(),
                entry::select_if::<i32>(),
                entry::partition_if::<i32>()
            ]
        );
        assert!(tuned
            .code()
            .contains("compact_single_pass<i32, 256, 16, true, 1, true, true, false"));
        // The default tuning resolves to the main module.
        assert_eq!(
            single_pass_module::<i32>(PredicateSource::Builtin, &Tuning::of::<i32>()).name(),
            "compact_i32"
        );
        let builtin = module::<f64>(PredicateSource::Builtin);
        for e in [
            entry::select_flagged::<f64>(),
            entry::select_if::<f64>(),
            entry::partition_if::<f64>(),
            entry::count_flagged::<f64>(),
            entry::count_if::<f64>(),
            entry::map_flags::<f64, u64>(),
            entry::map_if::<f64, u32>(),
            entry::scatter::<f64, u32>(true),
            entry::scatter::<f64, u64>(false),
        ] {
            assert!(builtin.entries().contains(&e), "{e} missing");
        }
        let custom = catalog_custom::<f64>();
        let custom_module = module::<f64>(PredicateSource::Custom(&custom));
        assert!(custom_module.code().contains("return (bool)(x > 0)"));
        assert!(!custom_module
            .entries()
            .contains(&entry::select_flagged::<f64>()));
        assert!(custom_module.entries().contains(&entry::select_if::<f64>()));
    }

    /// The look-back is correct only if each status read is ONE memory
    /// access (status and count from the same store): compaction's counts
    /// are u64, in one 128-bit word per tile (single_pass/tile_status.cuh).
    /// Compiles the single-pass modules of every code shape (arrangement,
    /// window width, schedule, delays; flags, built-in and custom
    /// predicates, partition) for sm_90, disassembles them and checks that
    /// every strong (relaxed gpu-scope) load is one 128-bit access, as
    /// scan's test of the same name does for the scan.
    #[test]
    fn status_loads_stay_single_accesses() {
        use parprims_testkit::testing::{sass_opcodes, sm90_sass};
        let mut seen = std::collections::HashSet::new();
        let mut cases = vec![
            module::<i32>(PredicateSource::Builtin),
            module::<u64>(PredicateSource::Builtin),
            module::<f32>(PredicateSource::Custom(&catalog_custom::<f32>())),
        ];
        for bytes in [4usize, 8] {
            for tuning in Tuning::candidates(bytes) {
                let shape = (
                    bytes,
                    tuning.arrangement,
                    tuning.lookback_depth,
                    tuning.schedule,
                    tuning.spin_ns > 0,
                    tuning.start_delay_ns > 0,
                );
                if !seen.insert(shape) {
                    continue;
                }
                cases.push(if bytes == 4 {
                    single_pass_module::<i32>(PredicateSource::Builtin, tuning)
                } else {
                    single_pass_module::<f64>(PredicateSource::Builtin, tuning)
                });
            }
        }
        let mut checked = 0;
        for module in &cases {
            let Some(sass) = sm90_sass(module) else {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            };
            let strong_loads: Vec<&str> = sass_opcodes(&sass)
                .into_iter()
                .filter(|op| op.starts_with("LDG") && op.contains("STRONG"))
                .collect();
            assert!(
                !strong_loads.is_empty(),
                "{}: no strong load found: the check would pass vacuously",
                module.name()
            );
            for opcode in &strong_loads {
                assert!(
                    opcode.contains("STRONG.GPU") && opcode.contains(".128."),
                    "{}: status load `{opcode}` is not one 128-bit gpu-scope access",
                    module.name()
                );
                checked += 1;
            }
        }
        eprintln!("{} modules, {checked} status loads checked", cases.len());
    }
}
