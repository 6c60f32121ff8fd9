//! The lab's kernel modules: one shared module (radix images and indices
//! in, keys and values gathered out) and one per method, each holding the
//! entries of both image types (u32 for keys of up to 4 bytes, u64 for
//! 8-byte keys).

use gpu_core::{DeviceType, Gpu, Kernel, ModuleSource, Result};

use crate::key::PayloadWidth;

/// Items a tile of the bitonic block sort holds (one thread per
/// comparator: `BITONIC_TILE / 2` threads); merge sort's block sort and
/// output tiles are the same size.
pub(crate) const BITONIC_TILE: u32 = 2048;
/// Threads of a bitonic tile block.
pub(crate) const BITONIC_TILE_THREADS: u32 = BITONIC_TILE / 2;
/// Items one thread of a merge pass writes.
pub(crate) const MERGE_ITEMS: u32 = 8;
/// Threads of a merge-pass block (`BITONIC_TILE / MERGE_ITEMS`).
pub(crate) const MERGE_THREADS: u32 = BITONIC_TILE / MERGE_ITEMS;
/// The largest n odd–even transposition sorts in one block, in shared
/// memory (`ODD_EVEN_BLOCK_ITEMS / 2` threads).
pub(crate) const ODD_EVEN_BLOCK_ITEMS: u32 = 2048;
/// Threads per block of the one-item-per-thread kernels (prepare, gather,
/// copy, a global odd–even phase or bitonic step, split flags and scatter).
pub(crate) const ELEMENTWISE_THREADS: u32 = 256;

/// The image a key of `K`'s width is sorted by: `u32` or `u64`.
pub(crate) trait LabImage: DeviceType {}
impl LabImage for u32 {}
impl LabImage for u64 {}

/// The key types the shared module prepares, by CUDA name.
const KEY_TYPES: [(&str, &str); 10] = [
    ("u8", "u32"),
    ("u16", "u32"),
    ("u32", "u32"),
    ("u64", "u64"),
    ("i8", "u32"),
    ("i16", "u32"),
    ("i32", "u32"),
    ("i64", "u64"),
    ("f32", "u32"),
    ("f64", "u64"),
];
const IMAGE_TYPES: [&str; 2] = ["u32", "u64"];

/// The lab's modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LabModule {
    /// `sort_lab_prepare_*`, `sort_lab_gather_*`, `sort_lab_copy_*`.
    Common,
    /// `sort_lab_odd_even_{phase,block}_*`.
    OddEven,
    /// `sort_lab_bitonic_{tile_sort,tile_merge,global}_*`.
    Bitonic,
    /// `sort_lab_merge_{tile_sort,pass}_*`.
    Merge,
    /// `sort_lab_split_{flags,scatter}_*`.
    SplitRadix,
}

impl LabModule {
    /// Every module, for the catalog.
    pub(crate) const ALL: [LabModule; 5] = [
        LabModule::Common,
        LabModule::OddEven,
        LabModule::Bitonic,
        LabModule::Merge,
        LabModule::SplitRadix,
    ];

    fn name(self) -> &'static str {
        match self {
            LabModule::Common => "sort_lab_common",
            LabModule::OddEven => "sort_lab_odd_even",
            LabModule::Bitonic => "sort_lab_bitonic",
            LabModule::Merge => "sort_lab_merge",
            LabModule::SplitRadix => "sort_lab_split_radix",
        }
    }

    /// The module's source: `common.cuh`, the key images, the shared
    /// header, the method's body and its generated entries.
    pub(crate) fn source(self) -> ModuleSource {
        let headers = ModuleSource::new(self.name())
            .source(parprims_kernels::SORT_RADIX_KEY)
            .source(parprims_kernels::SORT_LAB_COMMON);
        match self {
            LabModule::Common => common_module(headers),
            LabModule::OddEven => {
                let mut module = headers
                    .define("ODD_EVEN_BLOCK_ITEMS", ODD_EVEN_BLOCK_ITEMS)
                    .source(parprims_kernels::SORT_LAB_ODD_EVEN);
                for i in IMAGE_TYPES {
                    module = module
                        .entry(
                            format!("sort_lab_odd_even_phase_{i}"),
                            &format!("{i}* image, u32* index, u64 n, u32 parity"),
                            &format!("odd_even_phase<{i}>(image, index, n, parity)"),
                            Some(ELEMENTWISE_THREADS),
                        )
                        .entry(
                            format!("sort_lab_odd_even_block_{i}"),
                            &format!("{i}* image, u32* index, u32 n"),
                            &format!("odd_even_block<{i}>(image, index, n)"),
                            Some(ODD_EVEN_BLOCK_ITEMS / 2),
                        );
                }
                module
            }
            LabModule::Bitonic => {
                let mut module =
                    bitonic_defines(headers).source(parprims_kernels::SORT_LAB_BITONIC);
                for i in IMAGE_TYPES {
                    module = module
                        .entry(
                            format!("sort_lab_bitonic_tile_sort_{i}"),
                            &format!("{i}* image, u32* index, u64 n"),
                            &format!("bitonic_tile<{i}, true>(image, index, n)"),
                            Some(BITONIC_TILE_THREADS),
                        )
                        .entry(
                            format!("sort_lab_bitonic_tile_merge_{i}"),
                            &format!("{i}* image, u32* index, u64 n"),
                            &format!("bitonic_tile<{i}, false>(image, index, n)"),
                            Some(BITONIC_TILE_THREADS),
                        )
                        .entry(
                            format!("sort_lab_bitonic_global_{i}"),
                            &format!(
                                "{i}* image, u32* index, u64 n, u64 comparators, u32 log_stride, u32 flip"
                            ),
                            &format!(
                                "bitonic_global<{i}>(image, index, n, comparators, log_stride, flip)"
                            ),
                            Some(ELEMENTWISE_THREADS),
                        );
                }
                module
            }
            LabModule::Merge => {
                let mut module = bitonic_defines(headers)
                    .define("MERGE_TILE", BITONIC_TILE)
                    .define("MERGE_ITEMS", MERGE_ITEMS)
                    .source(parprims_kernels::SORT_LAB_BITONIC)
                    .source(parprims_kernels::SORT_LAB_MERGE);
                for i in IMAGE_TYPES {
                    module = module
                        .entry(
                            format!("sort_lab_merge_tile_sort_{i}"),
                            &format!("{i}* image, u32* index, u64 n"),
                            &format!("bitonic_tile<{i}, true>(image, index, n)"),
                            Some(BITONIC_TILE_THREADS),
                        )
                        .entry(
                            format!("sort_lab_merge_pass_{i}"),
                            &format!(
                                "const {i}* src_image, const u32* src_index, {i}* dst_image, u32* dst_index, u64 n, u64 run"
                            ),
                            &format!(
                                "merge_pass<{i}>(src_image, src_index, dst_image, dst_index, n, run)"
                            ),
                            Some(MERGE_THREADS),
                        );
                }
                module
            }
            LabModule::SplitRadix => {
                let mut module = headers.source(parprims_kernels::SORT_LAB_SPLIT_RADIX);
                for i in IMAGE_TYPES {
                    module = module
                        .entry(
                            format!("sort_lab_split_flags_{i}"),
                            &format!("const {i}* image, u32* flags, u64 n, u32 bit"),
                            &format!("split_flags<{i}>(image, flags, n, bit)"),
                            Some(ELEMENTWISE_THREADS),
                        )
                        .entry(
                            format!("sort_lab_split_scatter_{i}"),
                            &format!(
                                "const {i}* src_image, const u32* src_index, const u32* zeros_before, {i}* dst_image, u32* dst_index, u64 n, u32 bit"
                            ),
                            &format!(
                                "split_scatter<{i}>(src_image, src_index, zeros_before, dst_image, dst_index, n, bit)"
                            ),
                            Some(ELEMENTWISE_THREADS),
                        );
                }
                module
            }
        }
    }

    /// The kernel `entry` of this module, built, compiled or loaded once
    /// per context.
    pub(crate) fn kernel(self, gpu: &Gpu, entry: &str) -> Result<Kernel> {
        gpu.stored_kernel(&format!("sort/lab/{}", self.name()), entry, || {
            self.source()
        })
    }
}

fn bitonic_defines(module: ModuleSource) -> ModuleSource {
    module
        .define("BITONIC_TILE", BITONIC_TILE)
        .define("BITONIC_LOG_TILE", BITONIC_TILE.trailing_zeros())
}

fn common_module(mut module: ModuleSource) -> ModuleSource {
    for (k, i) in KEY_TYPES {
        module = module.entry(
            prepare_entry_name(k),
            &format!(
                "const {k}* keys, u64 n, u32 begin_bit, u32 width, u32 descending, {i}* image, u32* index"
            ),
            &format!("sort_lab_prepare<{k}>(keys, n, begin_bit, width, descending, image, index)"),
            Some(ELEMENTWISE_THREADS),
        );
    }
    for width in PayloadWidth::ALL {
        let w = width.cuda_type();
        module = module
            .entry(
                gather_entry_name(width),
                &format!("const {w}* src, {w}* dst, const u32* index, u64 n"),
                &format!("sort_lab_gather<{w}>(src, dst, index, n)"),
                Some(ELEMENTWISE_THREADS),
            )
            .entry(
                copy_entry_name(width),
                &format!("const {w}* src, {w}* dst, u64 n"),
                &format!("sort_lab_copy<{w}>(src, dst, n)"),
                Some(ELEMENTWISE_THREADS),
            );
    }
    module
}

/// `sort_lab_prepare_{key}`.
pub(crate) fn prepare_entry_name(key_cuda_type: &str) -> String {
    format!("sort_lab_prepare_{key_cuda_type}")
}

/// `sort_lab_gather_{word}`.
pub(crate) fn gather_entry_name(width: PayloadWidth) -> String {
    format!("sort_lab_gather_{}", width.cuda_type())
}

/// `sort_lab_copy_{word}`.
pub(crate) fn copy_entry_name(width: PayloadWidth) -> String {
    format!("sort_lab_copy_{}", width.cuda_type())
}
