//! The histogram's kernel modules: one per input type, holding every mode ×
//! count type × bin specification (12 entries) and the sort method's bin
//! indices (even, ranges) and counts (u32, u64), so the catalogue stays at
//! one module per type. Kernels: `kernels/cuda/reduce/histogram.cu`,
//! `kernels/cuda/reduce/histogram_sort.cu`.

use gpu_core::{DeviceType, ModuleSource};

use super::bins::HistogramInput;

/// How a kernel counts (the `MODE` of `histogram.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One global atomic per counted item.
    Global,
    /// u32 counts in shared memory, `copies` sub-histograms, merged at the end.
    Shared,
    /// Two 16-bit counts per shared word, moved to global at 0x8000.
    Packed16,
    /// 1-byte inputs: the 256 values counted in shared memory, binned at the merge.
    Values,
    /// The sort method: bin indices written to global memory (boundaries
    /// staged in shared memory), sorted, then counted by binary search
    /// (`histogram_sort.cu`, not a counting mode of `histogram.cu`).
    Sort,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::Shared => "shared",
            Mode::Packed16 => "packed16",
            Mode::Values => "values",
            Mode::Sort => "sort",
        }
    }
    pub(crate) fn cuda_mode(self) -> u32 {
        match self {
            Mode::Global => 0,
            Mode::Shared => 1,
            Mode::Packed16 => 2,
            Mode::Values => 3,
            // Not a MODE of histogram_agent: its kernels are their own.
            Mode::Sort => 4,
        }
    }
    /// Threads per block: 1024 for PACKED16 (one 128 KiB block per SM at
    /// 65 536 bins must still keep enough loads in flight), else 256.
    pub fn block_threads(self) -> u32 {
        match self {
            Mode::Packed16 => 1024,
            _ => 256,
        }
    }
}

/// The bin specification an entry is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpecKind {
    /// `even(bins, lower, upper)`.
    Even,
    /// `ranges(boundaries)`.
    Ranges,
}

impl SpecKind {
    fn name(self) -> &'static str {
        match self {
            SpecKind::Even => "even",
            SpecKind::Ranges => "ranges",
        }
    }
}

/// The modes compiled for `T`: 1-byte inputs count their values (VALUES),
/// wider ones use 16-bit packed counts past the u32 tier (PACKED16).
pub(crate) fn modes<T: HistogramInput>() -> [Mode; 3] {
    if T::BYTES == 1 {
        [Mode::Global, Mode::Shared, Mode::Values]
    } else {
        [Mode::Global, Mode::Shared, Mode::Packed16]
    }
}

/// `histogram_{mode}_{even|ranges}_{count}_{type}`.
pub(crate) fn entry<T: DeviceType, C: DeviceType>(mode: Mode, spec: SpecKind) -> String {
    format!(
        "histogram_{}_{}_{}_{}",
        mode.name(),
        spec.name(),
        C::SUFFIX,
        T::SUFFIX
    )
}

/// `histogram_sort_bins_{even|ranges}_{type}`: the sort method's bin indices.
pub(crate) fn sort_bins_entry<T: DeviceType>(spec: SpecKind) -> String {
    format!("histogram_sort_bins_{}_{}", spec.name(), T::SUFFIX)
}

/// `histogram_sort_counts_{count}_{type}`: the sort method's counts (the
/// same code in every type's module, so that one module serves a call).
pub(crate) fn sort_counts_entry<T: DeviceType, C: DeviceType>() -> String {
    format!("histogram_sort_counts_{}_{}", C::SUFFIX, T::SUFFIX)
}

/// Threads per block of the sort method's kernels.
pub(crate) const SORT_BLOCK_THREADS: u32 = 256;

/// The store key of `T`'s module (equal keys, equal sources).
pub(crate) fn module_key<T: DeviceType>() -> String {
    format!("reduce/histogram/{}", T::SUFFIX)
}

/// 16-byte vectors each thread has in flight per chunk: four, but two for
/// 2-byte items in PACKED16 (a 1024-thread chunk must stay below 32 768
/// items between the barriers that bound a 16-bit count's growth).
pub(crate) fn unroll(mode: Mode, element_bytes: usize) -> u32 {
    if mode == Mode::Packed16 && element_bytes == 2 {
        2
    } else {
        4
    }
}

/// The module of every histogram entry for input type `T`.
pub(crate) fn module<T: HistogramInput>() -> ModuleSource {
    let mut module = ModuleSource::new(format!("histogram_{}", T::SUFFIX))
        .source(parprims_kernels::HISTOGRAM)
        .source(parprims_kernels::HISTOGRAM_SORT);
    for mode in modes::<T>() {
        module = add_entries::<T, u32>(module, mode);
        module = add_entries::<T, u64>(module, mode);
    }
    add_sort_entries::<T>(module)
}

/// The sort method's entries: bin indices for even and ranges bins, counts
/// into u32 and u64.
fn add_sort_entries<T: HistogramInput>(module: ModuleSource) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let block = SORT_BLOCK_THREADS;
    let common = format!("const {t}* in, u64 n, u32* bin_of, u32 bins");
    let module = module
        .entry(
            sort_bins_entry::<T>(SpecKind::Even),
            &format!("{common}, {t} lower, {t} upper, u64 range, u64 magic, {t} scale, u32 shift"),
            &format!(
                "histogram_sort_bins<{t}, even_binner<{t}>, {block}>(in, n, bin_of, \
                 even_binner<{t}>(bins, lower, upper, range, magic, scale, shift), bins, nullptr, 0u)"
            ),
            Some(block),
        )
        .entry(
            sort_bins_entry::<T>(SpecKind::Ranges),
            &format!("{common}, const {t}* boundaries, u32 stage"),
            &format!(
                "histogram_sort_bins<{t}, range_binner<{t}>, {block}>(in, n, bin_of, \
                 range_binner<{t}>{{boundaries, bins}}, bins, boundaries, stage)"
            ),
            Some(block),
        );
    let counts = |module: ModuleSource, c: &str, name: String| {
        module.entry(
            name,
            &format!("const u32* sorted, u64 n, {c}* counts, u32 bins, u32 accumulate"),
            &format!("histogram_sort_counts<{c}>(sorted, n, counts, bins, accumulate)"),
            Some(block),
        )
    };
    let module = counts(module, "u32", sort_counts_entry::<T, u32>());
    counts(module, "u64", sort_counts_entry::<T, u64>())
}

fn add_entries<T: HistogramInput, C: DeviceType>(module: ModuleSource, mode: Mode) -> ModuleSource {
    let (t, c) = (T::CUDA_TYPE, C::CUDA_TYPE);
    let block = mode.block_threads();
    let agent = format!(
        "{}, {}, {}",
        mode.cuda_mode(),
        block,
        unroll(mode, T::BYTES)
    );
    let common = format!(
        "const {t}* in, u64 n, u64 head, {c}* counts, u32 bins, u32 stored_bins, u32 copies"
    );
    module
        .entry(
            entry::<T, C>(mode, SpecKind::Even),
            &format!("{common}, {t} lower, {t} upper, u64 range, u64 magic, {t} scale, u32 shift"),
            &format!(
                "histogram_agent<{t}, {c}, even_binner<{t}>, {agent}>(in, n, head, counts, \
                 even_binner<{t}>(bins, lower, upper, range, magic, scale, shift), bins, stored_bins, copies, nullptr, 0u)"
            ),
            Some(block),
        )
        .entry(
            entry::<T, C>(mode, SpecKind::Ranges),
            &format!("{common}, const {t}* boundaries, u32 stage"),
            &format!(
                "histogram_agent<{t}, {c}, range_binner<{t}>, {agent}>(in, n, head, counts, \
                 range_binner<{t}>{{boundaries, bins}}, bins, stored_bins, copies, boundaries, stage)"
            ),
            Some(block),
        )
}

/// Every histogram module: one per input type.
pub(crate) fn catalog() -> Vec<ModuleSource> {
    vec![
        module::<u8>(),
        module::<i8>(),
        module::<u16>(),
        module::<i16>(),
        module::<u32>(),
        module::<i32>(),
        module::<f32>(),
        module::<f64>(),
    ]
}
