//! Kernel modules: one per element type for the built-in predicates and
//! flags, one per (custom predicate, element type); the tuning table.

use gpu_core::{Element, ModuleSource};

use crate::predicate::{CustomPredicate, Predicate};

/// Threads per block and items per thread of the single-pass and count
/// kernels, by element size.
///
/// Chosen for the H100 (sm_90): 256 threads × 16 items = 4096-item tiles keep
/// 16–32 KiB of loads in flight per block and one 16-byte flag vector per
/// thread; staging needs 16 KiB (4-byte) or 32 KiB (8-byte) of shared memory.
/// Not yet measured: the lead's sweep on the H100 fills the figures in
/// docs/compact.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Threads per block (a multiple of 32).
    pub block_threads: u32,
    /// Consecutive items each thread owns (16: one 16-byte flag vector).
    pub items_per_thread: u32,
}

/// The tuning table: (element bytes, tuning). Not yet measured on the H100.
pub const TUNING: [(usize, Tuning); 2] = [
    (
        4,
        Tuning {
            block_threads: 256,
            items_per_thread: 16,
        },
    ),
    (
        8,
        Tuning {
            block_threads: 256,
            items_per_thread: 16,
        },
    ),
];

impl Tuning {
    /// The tuning for an element of `element_bytes` bytes (4 or 8; any other
    /// size gets the 8-byte entry).
    pub fn for_element_bytes(element_bytes: usize) -> Tuning {
        TUNING
            .iter()
            .find(|(bytes, _)| *bytes == element_bytes)
            .map(|(_, t)| *t)
            .unwrap_or(TUNING[1].1)
    }

    /// The tuning for `T`.
    pub fn of<T: Element>() -> Tuning {
        Self::for_element_bytes(T::BYTES)
    }

    /// Items per tile (one block's share of the single-pass kernel).
    pub fn tile_items(&self) -> u64 {
        self.block_threads as u64 * self.items_per_thread as u64
    }

    /// Tiles covering `n` items.
    pub fn tiles(&self, n: u64) -> u64 {
        n.div_ceil(self.tile_items())
    }
}

/// Threads per block of the three-pass map and scatter kernels (one item per
/// thread). Not yet measured.
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

/// The module for `T` with `predicate` compiled in. The built-in module also
/// holds the flag kernels; a custom module holds only the predicate ones.
pub(crate) fn module<T: Element>(predicate: PredicateSource<'_, T>) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let tuning = Tuning::of::<T>();
    let (block, items) = (tuning.block_threads, tuning.items_per_thread);
    let (name, pred_type, support) = match predicate {
        PredicateSource::Builtin => (
            format!("compact_{}", T::SUFFIX),
            format!("builtin_pred<{t}>"),
            String::new(),
        ),
        PredicateSource::Custom(custom) => (
            format!("compact_custom_{}_{}", custom.name(), T::SUFFIX),
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
    };
    let mut module = ModuleSource::new(name)
        .source(parprims_kernels::COMPACT)
        .source(&support)
        .source(parprims_kernels::COMPACT_SINGLE_PASS)
        .source(parprims_kernels::COMPACT_COUNT)
        .source(parprims_kernels::COMPACT_THREE_PASS);
    let pred = format!("{pred_type}(code, a, b)");
    let pred_params = format!("u32 code, {t} a, {t} b");
    let bounds = Some(block);
    let builtin = matches!(predicate, PredicateSource::Builtin);

    // Single pass.
    if builtin {
        module = module.entry(
            entry::select_flagged::<T>(),
            &format!("const {t}* in, const u8* flags, {t}* out, u64 n, u64* tile_status, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{t}, {block}, {items}, true, false, builtin_pred<{t}>>(in, flags, builtin_pred<{t}>(0u, ({t})0, ({t})0), out, n, tile_status, num_tiles, count_out, nullptr)"
            ),
            bounds,
        );
    }
    module = module
        .entry(
            entry::select_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* tile_status, u64 num_tiles, u64* count_out"),
            &format!(
                "compact_single_pass<{t}, {block}, {items}, false, false, {pred_type}>(in, nullptr, {pred}, out, n, tile_status, num_tiles, count_out, nullptr)"
            ),
            bounds,
        )
        .entry(
            entry::partition_if::<T>(),
            &format!("const {t}* in, {pred_params}, {t}* out, u64 n, u64* tile_status, u64 num_tiles, const u64* total"),
            &format!(
                "compact_single_pass<{t}, {block}, {items}, false, true, {pred_type}>(in, nullptr, {pred}, out, n, tile_status, num_tiles, nullptr, total)"
            ),
            bounds,
        );

    // Count.
    if builtin {
        module = module.entry(
            entry::count_flagged::<T>(),
            "const u8* flags, u64 n, u64 num_tiles, u64* count_out",
            &format!(
                "compact_count<{t}, {block}, {items}, true, builtin_pred<{t}>>(nullptr, flags, builtin_pred<{t}>(0u, ({t})0, ({t})0), n, num_tiles, count_out)"
            ),
            bounds,
        );
    }
    module = module.entry(
        entry::count_if::<T>(),
        &format!("const {t}* in, {pred_params}, u64 n, u64 num_tiles, u64* count_out"),
        &format!(
            "compact_count<{t}, {block}, {items}, false, {pred_type}>(in, nullptr, {pred}, n, num_tiles, count_out)"
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
    vec![
        module::<T>(PredicateSource::Builtin),
        module::<T>(PredicateSource::Custom(&custom)),
    ]
}

/// Every module this crate can request: for each element type the built-in
/// module (flags and comparison predicates; single pass, count, three-pass
/// map/scatter with u32 and u64 marks) and a custom-predicate module (the
/// template every caller's expression is compiled into, with an example
/// expression).
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
            assert_eq!(tuning.block_threads % 32, 0);
            // One 16-byte flag vector per thread, and whole item vectors.
            assert_eq!(tuning.items_per_thread % 16, 0);
            assert!(tuning.items_per_thread <= 32, "the keep mask is a u32");
            // Staging must fit the 48 KiB of static shared memory.
            assert!(tuning.tile_items() as usize * bytes + 1024 <= 48 * 1024);
        }
        let t = Tuning::of::<i32>();
        assert_eq!(t.tiles(0), 0);
        assert_eq!(t.tiles(1), 1);
        assert_eq!(t.tiles(t.tile_items()), 1);
        assert_eq!(t.tiles(t.tile_items() + 1), 2);
        assert_eq!(t.tiles((1u64 << 31) + 9), ((1u64 << 31) + 9).div_ceil(4096));
    }

    #[test]
    fn catalog_names_are_unique_and_complete() {
        let modules = kernel_catalog();
        assert_eq!(modules.len(), 12);
        let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 12);
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
}
