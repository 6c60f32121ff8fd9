//! Kernel modules: one per element type for the built-in predicates and
//! flags, one per (custom predicate, element type); the tuning table.

use gpu_core::{Element, Error, ModuleSource, Result};

use crate::predicate::{CustomPredicate, Predicate};

pub use gpu_core::single_pass::{Policy, Schedule, StatusEncoding, TileLayout};

/// A single-pass compaction policy: `block_threads` × `items_per_thread` in
/// `layout`, a look-back window of 32 × `lookback_width` tiles, `schedule`,
/// and the status encoding every compaction default uses (u64 counts in one
/// 128-bit word per tile). Unchecked, for `const` tables: see
/// [`CompactPolicy::validate_compact`].
///
/// ```
/// use compact::policy::{policy, CompactPolicy, Schedule, StatusEncoding, TileLayout};
/// let p = policy(256, 16, TileLayout::Blocked, 1, Schedule::TilePerBlock);
/// assert_eq!(p.status(), StatusEncoding::Packed128);
/// assert!(p.validate_compact(4).is_ok());
/// ```
pub const fn policy(
    block_threads: u32,
    items_per_thread: u32,
    layout: TileLayout,
    lookback_width: u32,
    schedule: Schedule,
) -> Policy {
    Policy::shape(block_threads, items_per_thread)
        .with_layout(layout)
        .with_lookback_width(lookback_width)
        .with_schedule(schedule)
        .with_status(StatusEncoding::Packed128)
}

/// `select_flagged`'s and `partition`'s 4-byte default. Every default
/// takes its tiles in block order (against the counter: `docs/tuning.md`,
/// "Tiles in block order").
const FLAGS_4: Policy =
    per_tile(512, 16, TileLayout::Blocked, 1, (1125, 415)).with_schedule(Schedule::InBlockOrder);
/// Every operation's 1- and 2-byte default (blocked), which was the 4-byte
/// default before the sweep on the shared single-pass machinery; not swept
/// for these sizes.
const NARROW: Policy =
    per_tile(256, 16, TileLayout::Blocked, 1, (3000, 1000)).with_schedule(Schedule::InBlockOrder);
/// `select_if`'s 4-byte default: the flags default's tiles with registers
/// capped at 32 for 4 resident blocks per SM (uncapped it compiles to more
/// and keeps 3).
const SELECT_IF_4: Policy = FLAGS_4.with_min_blocks_per_sm(4);
/// Every operation's 8-byte default.
const EVERY_8: Policy = per_tile(256, 16, TileLayout::WarpStriped, 1, (1170, 360))
    .with_schedule(Schedule::InBlockOrder);

/// [`policy`] with one tile per block and the look-back's `(start, spin)`
/// delays in ns (`(0, 0)`: none).
const fn per_tile(
    block_threads: u32,
    items_per_thread: u32,
    layout: TileLayout,
    lookback_width: u32,
    delays: (u32, u32),
) -> Policy {
    policy(
        block_threads,
        items_per_thread,
        layout,
        lookback_width,
        Schedule::TilePerBlock,
    )
    .with_delays(delays.0, delays.1)
}

/// The single-pass kernel's default policy per element size: (element
/// bytes, policy), for `select_flagged` and `partition`. Measured on an
/// H100 at 2^28 items (the sweep: `tests/compact_tuning.rs`; figures and the
/// runners-up in `docs/tuning.md`).
///
/// 1- and 2-byte items take a blocked layout: the warp-striped one packs a
/// thread's flags one vector per 32-bit word and a vector's kept count in
/// 8 bits, which hold 4-byte and 8-byte vectors only.
pub const TUNING: [(usize, Policy); 4] = [(1, NARROW), (2, NARROW), (4, FLAGS_4), (8, EVERY_8)];

/// The default policy of `select_if` (selection by a predicate, no flags
/// array: the flags default's 4-byte tiles with registers capped for one
/// more resident block, which is faster there and slower by flags), per
/// element size; a custom predicate is compiled at this policy too.
/// `partition` keeps [`TUNING`]. Figures in `docs/tuning.md`.
pub const SELECT_IF_TUNING: [(usize, Policy); 4] =
    [(1, NARROW), (2, NARROW), (4, SELECT_IF_4), (8, EVERY_8)];

/// The policies the tuning sweep compares for 4-byte items, the default
/// first (measurements in `docs/tuning.md`: deeper windows and the
/// persistent schedule lose).
pub const CANDIDATES_4: [Policy; 19] = {
    use TileLayout::{Blocked, WarpStriped};
    [
        FLAGS_4,
        per_tile(256, 16, Blocked, 1, (0, 0)),
        per_tile(256, 16, Blocked, 1, (2000, 800)),
        per_tile(384, 16, Blocked, 1, (2000, 800)),
        NARROW,
        per_tile(512, 16, Blocked, 1, (2000, 800)),
        policy(256, 16, WarpStriped, 1, Schedule::Persistent),
        per_tile(256, 32, Blocked, 1, (2000, 800)),
        SELECT_IF_4,
        per_tile(384, 16, Blocked, 1, (1600, 600)),
        per_tile(384, 16, Blocked, 1, (1125, 415)),
        // Smaller tiles for inputs that fill the GPU only a few times over
        // (the mid-size sweep).
        per_tile(128, 16, Blocked, 1, (1125, 415)),
        per_tile(256, 16, Blocked, 1, (1125, 415)),
        per_tile(128, 16, WarpStriped, 1, (1125, 415)),
        per_tile(256, 16, WarpStriped, 1, (1125, 415)),
        // The previous `select_if` default, uncapped (39 registers, 4
        // blocks of 384 per SM: ncu put it at 75 % occupancy, held by
        // registers) and capped for 5 blocks.
        per_tile(384, 16, WarpStriped, 1, (1125, 415)),
        per_tile(384, 16, WarpStriped, 1, (1125, 415)).with_min_blocks_per_sm(5),
        // The defaults with their tiles drawn from the counter.
        FLAGS_4.with_schedule(Schedule::TilePerBlock),
        SELECT_IF_4.with_schedule(Schedule::TilePerBlock),
    ]
};

/// The policies the tuning sweep compares for 8-byte items, the default
/// first (measurements in `docs/tuning.md`).
pub const CANDIDATES_8: [Policy; 8] = {
    use TileLayout::{Blocked, WarpStriped};
    [
        EVERY_8,
        per_tile(256, 16, WarpStriped, 4, (0, 0)),
        per_tile(384, 8, WarpStriped, 4, (1170, 360)),
        per_tile(256, 16, WarpStriped, 4, (1170, 360)),
        per_tile(256, 16, WarpStriped, 4, (2000, 800)),
        policy(256, 16, Blocked, 4, Schedule::Persistent),
        per_tile(128, 16, WarpStriped, 4, (1170, 360)),
        EVERY_8.with_schedule(Schedule::TilePerBlock),
    ]
};

/// A table's entry for `element_bytes` (its 4- or 8-byte row; any other
/// size gets the 8-byte row).
fn table_entry(table: &[(usize, Policy)], element_bytes: usize) -> Policy {
    table
        .iter()
        .find(|(bytes, _)| *bytes == element_bytes)
        .or(table.last())
        .map_or(EVERY_8, |(_, t)| *t)
}

/// Static shared memory a single-pass block may use (the 48 KiB a block
/// gets without opting in).
const STATIC_SHARED_LIMIT: usize = 48 * 1024;

/// The default policy for an element of `element_bytes` bytes (1, 2, 4 or
/// 8; any other size gets the 8-byte entry).
///
/// ```
/// use compact::policy::{default_policy_for, CompactPolicy};
/// assert!(default_policy_for(4).validate_compact(4).is_ok());
/// assert_eq!(default_policy_for(1), default_policy_for(2)); // narrow items: one blocked shape
/// assert_eq!(default_policy_for(2).name(), "256x16/blocked/lb1/in-block-order/d3000s1000");
/// assert_eq!(default_policy_for(16), default_policy_for(8)); // any other size: the 8-byte row
/// ```
pub fn default_policy_for(element_bytes: usize) -> Policy {
    table_entry(&TUNING, element_bytes)
}

/// The default policy for `T`.
///
/// ```
/// use compact::policy::{default_policy, default_policy_for};
/// assert_eq!(default_policy::<f32>(), default_policy_for(4));
/// ```
pub fn default_policy<T: Element>() -> Policy {
    default_policy_for(T::BYTES)
}

/// The `select_if` policy ([`SELECT_IF_TUNING`]) for an element of
/// `element_bytes` bytes (1, 2, 4 or 8; any other size gets the 8-byte
/// entry).
///
/// ```
/// use compact::policy::{select_if_policy_for, validate_tuning};
/// assert!(validate_tuning(4, &select_if_policy_for(4)).is_ok());
/// ```
pub fn select_if_policy_for(element_bytes: usize) -> Policy {
    table_entry(&SELECT_IF_TUNING, element_bytes)
}

/// The `select_if` policy for `T`.
///
/// ```
/// use compact::policy::{select_if_policy, select_if_policy_for};
/// assert_eq!(select_if_policy::<u64>(), select_if_policy_for(8));
/// ```
pub fn select_if_policy<T: Element>() -> Policy {
    select_if_policy_for(T::BYTES)
}

/// The sweep's policies for elements of `element_bytes` bytes (4-byte list
/// for 4, the 8-byte default alone for 1 and 2, 8-byte list otherwise).
///
/// ```
/// use compact::policy::{candidates, CompactPolicy};
/// for policy in candidates(8) {
///     assert!(policy.validate_compact(8).is_ok());
/// }
/// ```
pub fn candidates(element_bytes: usize) -> &'static [Policy] {
    match element_bytes {
        4 => &CANDIDATES_4,
        // 1- and 2-byte items: the default only.
        1 | 2 => &[NARROW],
        _ => &CANDIDATES_8,
    }
}

/// What compaction adds to [`Policy`]: its shared memory, its names, and its
/// own constraints.
pub trait CompactPolicy {
    /// Static shared memory of a single-pass block, bytes: the staging tile
    /// plus the warp totals and three 8-byte words.
    ///
    /// ```
    /// use compact::policy::{CompactPolicy, Policy};
    /// // The 256 × 16 tile staged in shared memory, plus 8 warp totals and 24 bytes.
    /// assert_eq!(Policy::shape(256, 16).shared_bytes(4), 256 * 16 * 4 + 8 * 4 + 24);
    /// ```
    fn shared_bytes(&self, element_bytes: usize) -> usize;
    /// A short name for tables: `256x16/blocked/lb1/tile-per-block`.
    ///
    /// ```
    /// use compact::policy::{policy, CompactPolicy, Schedule, TileLayout};
    /// let p = policy(256, 16, TileLayout::Blocked, 1, Schedule::TilePerBlock);
    /// assert_eq!(p.name(), "256x16/blocked/lb1/tile-per-block");
    /// ```
    fn name(&self) -> String;
    /// An identifier for module names and keys, every field:
    /// `b256x16_lb1_t`.
    ///
    /// ```
    /// use compact::policy::{policy, CompactPolicy, Schedule, TileLayout};
    /// let p = policy(256, 16, TileLayout::Blocked, 1, Schedule::TilePerBlock);
    /// assert_eq!(p.module_tag(), "b256x16_lb1_t");
    /// ```
    fn module_tag(&self) -> String;
    /// [`Policy::validate`], plus whether the kernel template accepts this
    /// shape for elements of `element_bytes` bytes (the static_asserts of
    /// compact/compact.cuh, checked on the host): at most 32 items (the keep
    /// mask is a u32), whole 16-byte flag vectors when blocked, at most 8
    /// item vectors when striped, no cache hints, the staging within 48 KiB.
    ///
    /// ```
    /// use compact::policy::{CompactPolicy, Policy, TileLayout};
    /// assert!(Policy::shape(256, 16).validate_compact(4).is_ok());
    /// assert!(Policy::shape(256, 8).validate_compact(4).is_err()); // blocked needs whole 16-byte flag vectors
    /// assert!(Policy::shape(256, 8).with_layout(TileLayout::WarpStriped).validate_compact(4).is_ok());
    /// ```
    fn validate_compact(&self, element_bytes: usize) -> Result<()>;
}

impl CompactPolicy for Policy {
    fn shared_bytes(&self, element_bytes: usize) -> usize {
        self.tile_items() as usize * element_bytes + 4 * (self.block_threads() as usize / 32) + 24
    }

    fn name(&self) -> String {
        spell(self, Spelling::Name)
    }

    fn module_tag(&self) -> String {
        spell(self, Spelling::Tag)
    }

    fn validate_compact(&self, element_bytes: usize) -> Result<()> {
        // The tile state carries kept counts, not items: 1- and 2-byte
        // items are checked as the 4-byte shape they share.
        self.validate(element_bytes.max(4))?;
        let vector_items = 16 / element_bytes.clamp(1, 16) as u32;
        let items = self.items_per_thread();
        let items_ok = match self.layout() {
            TileLayout::Blocked => items <= 32 && items.is_multiple_of(16),
            // One vector's flags in a 32-bit word: 4- and 8-byte items.
            TileLayout::WarpStriped => {
                element_bytes >= 4
                    && items <= 32
                    && items.is_multiple_of(vector_items)
                    && items / vector_items <= 8
            }
        };
        if !items_ok {
            return Err(Error::invalid(
                "policy",
                format!(
                    "{items} items per thread do not fit the {:?} layout for {element_bytes}-byte items",
                    self.layout()
                ),
            ));
        }
        if self.streaming() {
            return Err(Error::invalid(
                "streaming",
                "compaction has no cache-hinted loads",
            ));
        }
        if self.shared_bytes(element_bytes) > STATIC_SHARED_LIMIT {
            return Err(Error::invalid(
                "policy",
                format!(
                    "{} bytes of staging exceed 48 KiB of static shared memory",
                    self.shared_bytes(element_bytes)
                ),
            ));
        }
        Ok(())
    }
}

/// How [`spell`] writes a policy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// For tables: `256x16/blocked/lb1/tile-per-block`.
    Name,
    /// For module names and keys: `b256x16_lb1_t`.
    Tag,
}

/// [`CompactPolicy::name`] and [`CompactPolicy::module_tag`]: shape, layout,
/// look-back width and schedule, then [`extra_suffix`].
fn spell(policy: &Policy, spelling: Spelling) -> String {
    // (name, tag) of each field.
    let (layout_name, layout_tag) = match policy.layout() {
        TileLayout::Blocked => ("blocked", "b"),
        TileLayout::WarpStriped => ("striped", "s"),
    };
    let (schedule_name, schedule_tag) = match policy.schedule() {
        Schedule::TilePerBlock => ("tile-per-block", "t"),
        Schedule::InBlockOrder => ("in-block-order", "o"),
        Schedule::Persistent => ("persistent", "p"),
    };
    let shape = format!("{}x{}", policy.block_threads(), policy.items_per_thread());
    let width = format!("lb{}", policy.lookback_width());
    match spelling {
        Spelling::Name => format!(
            "{shape}/{layout_name}/{width}/{schedule_name}{}",
            extra_suffix(policy, '/')
        ),
        Spelling::Tag => format!(
            "{layout_tag}{shape}_{width}_{schedule_tag}{}",
            extra_suffix(policy, '_')
        ),
    }
}

/// The fields past shape, layout, width and schedule, for [`spell`]: a
/// register limit, the look-back delays, the split status encoding.
fn extra_suffix(policy: &Policy, separator: char) -> String {
    let mut suffix = String::new();
    if policy.min_blocks_per_sm() > 0 {
        suffix.push_str(&format!("{separator}r{}", policy.min_blocks_per_sm()));
    }
    if policy.start_delay_ns() > 0 || policy.spin_ns() > 0 {
        suffix.push_str(&format!(
            "{separator}d{}s{}",
            policy.start_delay_ns(),
            policy.spin_ns()
        ));
    }
    if policy.status() == StatusEncoding::Split {
        suffix.push_str(&format!("{separator}split"));
    }
    suffix
}

/// A call with a policy may only ask for a catalogued module: a default tuning (of
/// the flags table or the `select_if` table) or one of the candidates for
/// the element size.
///
/// ```
/// use compact::policy::{default_policy_for, policy, validate_tuning, CompactPolicy, Schedule, TileLayout};
/// assert!(validate_tuning(8, &default_policy_for(8)).is_ok());
/// // A valid policy that is not catalogued is refused: only catalogued modules are compiled.
/// let odd_one = policy(64, 32, TileLayout::Blocked, 8, Schedule::TilePerBlock);
/// assert!(odd_one.validate_compact(4).is_ok() && validate_tuning(4, &odd_one).is_err());
/// ```
pub fn validate_tuning(element_bytes: usize, tuning: &Policy) -> Result<()> {
    tuning.validate_compact(element_bytes)?;
    if *tuning == default_policy_for(element_bytes)
        || *tuning == select_if_policy_for(element_bytes)
        || candidates(element_bytes).contains(tuning)
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

/// Threads per block of the three-pass map and scatter kernels: not swept.
pub const THREE_PASS_BLOCK_THREADS: u32 = 256;

/// Consecutive items per thread of the three-pass map and scatter kernels:
/// one 16-byte access per array for 4-byte items and marks
/// (`THREE_PASS_ITEMS` in `kernels/cuda/compact/three_pass.cu`).
pub const THREE_PASS_ITEMS: u32 = 4;

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
    tuning: &Policy,
    pred_type: &str,
    builtin: bool,
) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let striped = tuning.layout() == TileLayout::WarpStriped;
    let persistent = tuning.schedule() == Schedule::Persistent;
    let shape = format!(
        "{t}, {block}, {items}, {striped}, {depth}, {persistent}",
        block = tuning.block_threads(),
        items = tuning.items_per_thread(),
        depth = tuning.lookback_width(),
    );
    // The look-back's delays and the tile status encoding (u64 counts).
    let delays = format!(
        "{}, {}, {}, {}",
        tuning.start_delay_ns(),
        tuning.spin_ns(),
        tuning.status().cuda_flag(),
        tuning.schedule() == Schedule::InBlockOrder
    );
    // __launch_bounds__ would override --maxrregcount: a capped tuning
    // leaves it out (the cap then bounds registers on its own).
    let bounds = if tuning.max_registers().is_some() {
        None
    } else {
        Some(tuning.block_threads())
    };
    if builtin {
        module = module.entry(
            entry::select_flagged::<T>(),
            &format!("const {t}* in, const u8* flags, {t}* out, u64 n, u64* state, u32 epoch, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{shape}, true, false, builtin_pred<{t}>, {delays}>(in, flags, builtin_pred<{t}>(0u, ({t})0, ({t})0), out, n, state, epoch, num_tiles, count_out, nullptr)"
            ),
            bounds,
        );
    }
    module
        .entry(
            entry::select_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* state, u32 epoch, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{shape}, false, false, {pred_type}, {delays}>(in, nullptr, {pred}, out, n, state, epoch, num_tiles, count_out, nullptr)"
            ),
            bounds,
        )
        .entry(
            entry::partition_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* state, u32 epoch, u64 num_tiles, const u64* total"),
            &format!(
                "compact_single_pass<{shape}, false, true, {pred_type}, {delays}>(in, nullptr, {pred}, out, n, state, epoch, num_tiles, nullptr, total)"
            ),
            bounds,
        )
}

/// The key naming, for `Gpu::stored_kernel`, the module that
/// [`single_pass_module`] builds for `predicate` and `tuning` (the main
/// module, [`module`], when `tuning` is the default): family, element type,
/// every tuning field (the tag spells them all), and the predicate: built
/// in, or a caller's by name and the fingerprint of its CUDA text.
pub(crate) fn module_key<T: Element>(predicate: PredicateSource<'_, T>, tuning: &Policy) -> String {
    let family = if *tuning == default_policy::<T>() {
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
        tuning.module_tag()
    )
}

/// The name of the built-in module holding `tuning`'s single-pass entries:
/// `compact_{type}` for the default tuning (the main module), else
/// `compact_sp_{tag}_{type}` (the store's key is [`module_key`]).
pub(crate) fn builtin_module_name<T: Element>(tuning: &Policy) -> String {
    if *tuning == default_policy::<T>() {
        format!("compact_{}", T::SUFFIX)
    } else {
        format!("compact_sp_{}_{}", tuning.module_tag(), T::SUFFIX)
    }
}

/// The single-pass module for `tuning`: the default tuning lives in the
/// main module ([`module`]); any other (a candidate) in a module of its own
/// holding only the single-pass entries for the built-in predicates and flags.
pub(crate) fn single_pass_module<T: Element>(
    predicate: PredicateSource<'_, T>,
    tuning: &Policy,
) -> ModuleSource {
    if *tuning == default_policy::<T>() {
        return module::<T>(predicate);
    }
    let (pred_type, support) = predicate_parts::<T>(predicate);
    let builtin = matches!(predicate, PredicateSource::Builtin);
    let name = match predicate {
        PredicateSource::Builtin => builtin_module_name::<T>(tuning),
        PredicateSource::Custom(custom) => {
            format!(
                "compact_sp_{}_custom_{}_{}",
                tuning.module_tag(),
                custom.name(),
                T::SUFFIX
            )
        }
    };
    let mut module = headers(ModuleSource::new(name))
        .source(&support)
        .source(parprims_kernels::COMPACT_SINGLE_PASS);
    if let Some(registers) = tuning.max_registers() {
        module = module.option(format!("--maxrregcount={registers}"));
    }
    add_single_pass::<T>(module, tuning, &pred_type, builtin)
}

/// The module for `T` with `predicate` compiled in, at the default tuning.
/// The built-in module also holds the flag kernels; a custom module holds
/// only the predicate ones.
pub(crate) fn module<T: Element>(predicate: PredicateSource<'_, T>) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let tuning = default_policy::<T>();
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
        .define("THREE_PASS_ITEMS", THREE_PASS_ITEMS)
        .source(parprims_kernels::COMPACT_THREE_PASS);
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let builtin = matches!(predicate, PredicateSource::Builtin);

    // Single pass. (A register cap in the default tuning would apply to the
    // whole module: count and three-pass kernels too.)
    if let Some(registers) = tuning.max_registers() {
        module = module.option(format!("--maxrregcount={registers}"));
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
    module = add_three_pass::<T, u32>(module, &pred_type, builtin);
    add_three_pass::<T, u64>(module, &pred_type, builtin)
}

/// Adds the three-pass entries with marks of type `C` (map by flags when
/// `builtin`, map by predicate, both scatters).
fn add_three_pass<T: Element, C: Element>(
    mut module: ModuleSource,
    pred_type: &str,
    builtin: bool,
) -> ModuleSource {
    let (t, c) = (T::CUDA_TYPE, C::CUDA_TYPE);
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let three = Some(THREE_PASS_BLOCK_THREADS);
    if builtin {
        module = module.entry(
            entry::map_flags::<T, C>(),
            &format!("const u8* flags, {c}* marks, u64 n"),
            &format!("compact_map_flags<{c}>(flags, marks, n)"),
            three,
        );
    }
    module
        .entry(
            entry::map_if::<T, C>(),
            &format!("const {t}* in, {pred_params}, {c}* marks, u64 n"),
            &format!("compact_map_if<{t}, {c}, {pred_type}>(in, {pred}, marks, n)"),
            three,
        )
        .entry(
            entry::scatter::<T, C>(false),
            &format!("const {t}* in, const {c}* marks, const {c}* positions, {t}* out, u64 n, u64* count_out"),
            &format!("compact_scatter<{t}, {c}, false>(in, marks, positions, out, n, count_out)"),
            three,
        )
        .entry(
            entry::scatter::<T, C>(true),
            &format!("const {t}* in, const {c}* marks, const {c}* positions, {t}* out, u64 n, u64* count_out"),
            &format!("compact_scatter<{t}, {c}, true>(in, marks, positions, out, n, count_out)"),
            three,
        )
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
    let default = default_policy::<T>();
    for tuning in candidates(T::BYTES) {
        if *tuning != default {
            modules.push(single_pass_module::<T>(PredicateSource::Builtin, tuning));
        }
    }
    // A caller's predicate is compiled at the select_if tuning as well.
    let select_if = select_if_policy::<T>();
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
/// the default (built-in predicates and flags; what a policy given in
/// `CompactOptions` uses, and the built-in `select_if` where its tuning differs),
/// and, where the `select_if` tuning differs from the default, the
/// custom-predicate single-pass module at that tuning.
///
/// ```
/// let catalog = compact::kernel_catalog();
/// assert!(!catalog.is_empty());
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    modules.extend(modules_for::<i8>());
    modules.extend(modules_for::<u8>());
    modules.extend(modules_for::<i16>());
    modules.extend(modules_for::<u16>());
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
            assert_eq!(default_policy_for(bytes), tuning);
            tuning
                .validate_compact(bytes)
                .expect("the default is a valid shape");
            validate_tuning(bytes, &tuning).expect("the default is always allowed");
            // The sweep measures the default against the candidates.
            assert_eq!(candidates(bytes)[0], tuning);
        }
        let t = default_policy::<i32>();
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
            assert_eq!(select_if_policy_for(bytes), tuning);
            // Measured against the others by the sweep, and compiled in the
            // catalogue as a candidate module.
            assert!(candidates(bytes).contains(&tuning));
            validate_tuning(bytes, &tuning).expect("allowed");
        }
        assert_eq!(
            select_if_policy::<i32>().name(),
            "512x16/blocked/lb1/in-block-order/r4/d1125s415"
        );
        assert_eq!(select_if_policy::<i32>().max_registers(), Some(32));
        assert_eq!(select_if_policy::<u64>(), default_policy::<u64>());
        // The built-in select_if of 4-byte types resolves to the candidate's
        // module; a caller's predicate gets a module of its own.
        let t = select_if_policy::<f32>();
        assert_eq!(
            single_pass_module::<f32>(PredicateSource::Builtin, &t).name(),
            format!("compact_sp_{}_f32", t.module_tag())
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
            let candidates = candidates(bytes);
            for tuning in candidates {
                tuning
                    .validate_compact(bytes)
                    .expect("every candidate is a valid shape");
                validate_tuning(bytes, tuning).expect("every candidate is allowed");
                // Staging within the 48 KiB of static shared memory.
                assert!(tuning.shared_bytes(bytes) <= 48 * 1024);
            }
            let mut tags: Vec<String> = candidates.iter().map(|t| t.module_tag()).collect();
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
            "512x16/blocked/lb1/in-block-order/d1125s415"
        );
        assert_eq!(CANDIDATES_4[6].module_tag(), "s256x16_lb1_p");
        assert_eq!(CANDIDATES_4[0].module_tag(), "b512x16_lb1_o_d1125s415");
    }

    #[test]
    fn bad_tunings_are_refused() {
        use TileLayout::{Blocked, WarpStriped};
        // The same checks as before the policy became one type: each case
        // changes one field of a valid striped, persistent 256 × 16 × lb4.
        let with = |block: u32, items: u32, layout: TileLayout, width: u32| {
            policy(block, items, layout, width, Schedule::Persistent)
        };
        let ok = with(256, 16, WarpStriped, 4);
        assert!(ok.validate_compact(4).is_ok());
        assert!(with(100, 16, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(0, 16, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(2048, 16, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(256, 0, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(256, 6, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(256, 33, WarpStriped, 4).validate_compact(4).is_err());
        assert!(with(256, 8, WarpStriped, 4).validate_compact(4).is_ok());
        assert!(with(256, 6, WarpStriped, 4).validate_compact(8).is_ok());
        // 8-byte striped: at most 8 vectors of 2 items.
        assert!(with(256, 32, WarpStriped, 4).validate_compact(8).is_err());
        // Blocked needs whole 16-byte flag vectors.
        assert!(with(256, 16, Blocked, 4).validate_compact(4).is_ok());
        assert!(with(256, 8, Blocked, 4).validate_compact(4).is_err());
        assert!(with(256, 16, WarpStriped, 3).validate_compact(4).is_err());
        assert!(with(256, 16, WarpStriped, 0).validate_compact(4).is_err());
        // 1024 × 16 × 4 bytes of staging: too much static shared memory.
        assert!(with(1024, 16, WarpStriped, 4).validate_compact(4).is_err());
        // No cache-hinted loads in compaction: refused, not dropped.
        assert!(ok.with_streaming(true).validate_compact(4).is_err());
        // Valid shapes outside the catalogue are refused by validate_tuning.
        let uncatalogued = with(64, 16, WarpStriped, 4);
        assert!(uncatalogued.validate_compact(4).is_ok());
        assert!(validate_tuning(4, &uncatalogued).is_err());
    }

    #[test]
    fn catalog_names_are_unique_and_complete() {
        let modules = kernel_catalog();
        // Per type (ten): built-in + custom, the non-default candidates, and
        // for 4-byte types the custom module at the select_if tuning.
        // The 1- and 2-byte types have the default tuning only.
        let expected = 20 + 3 * (CANDIDATES_4.len() - 1) + 3 * (CANDIDATES_8.len() - 1) + 3;
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
            single_pass_module::<i32>(PredicateSource::Builtin, &default_policy::<i32>()).name(),
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
        use parprims_testkit::testing::check_status_loads;
        let mut seen = std::collections::HashSet::new();
        let mut cases = vec![
            module::<i32>(PredicateSource::Builtin),
            module::<u64>(PredicateSource::Builtin),
            module::<f32>(PredicateSource::Custom(&catalog_custom::<f32>())),
        ];
        for bytes in [4usize, 8] {
            for tuning in candidates(bytes) {
                let shape = (
                    bytes,
                    tuning.layout(),
                    tuning.lookback_width(),
                    tuning.schedule(),
                    tuning.spin_ns() > 0,
                    tuning.start_delay_ns() > 0,
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
            // Every strong load, of any scope, must be one gpu-scope
            // 128-bit access.
            let Some(loads) = check_status_loads(module, "STRONG", &["STRONG.GPU", ".128."]) else {
                return; // NVRTC or nvdisasm missing (a panic in CI)
            };
            checked += loads;
        }
        eprintln!("{} modules, {checked} status loads checked", cases.len());
    }
}
