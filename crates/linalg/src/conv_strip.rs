//! `TiledHalo`'s strip kernel (`kernels/cuda/conv_strip.cu`): one warp per
//! vertical strip of the image, a sliding window of rows in registers.
//!
//! # What it computes
//!
//! Exactly [`crate::conv::conv2d`]'s definition (every border, padding and
//! `flip`), for `K ≤` [`STRIP_MAX_K`], with the products of each output added
//! in the same order as the block kernel's: the two agree bit for bit.
//!
//! # How
//!
//! A warp reads `32·VEC` consecutive input columns ([`StripTuning::elems_per_lane`]
//! = VEC per lane, one 16-byte vector load for 4-byte types when the rows are
//! aligned) and owns [`StripTuning::strip_rows`] output rows. It walks down its
//! `S + K − 1` input rows once: each row's horizontal dot products with the K
//! filter rows go into a ring of K accumulator rows, the K − 1 columns right
//! of a lane's chunk come from the next lanes by shuffles (so the last
//! `⌈(K−1)/VEC⌉` lanes only supply columns, and neighbouring strips overlap
//! by that many chunks: [`StripGeometry`]), and a finished
//! output row is stored ([`StripTuning::stores`]: VEC scalar stores per
//! lane, one vector store per lane where the output address allows, or
//! transposed through shared memory so every store instruction writes 32
//! consecutive elements). [`StripTuning::prefetch_rows`] rows are
//! loaded ahead. No block-wide barrier: warps are independent.
//!
//! | | |
//! |---|---|
//! | work | `K²` multiply-adds per output |
//! | steps | `(S + K − 1)·K²·VEC` per warp |
//! | global memory | image read once from DRAM (+ `(K−1)/S` halo rows and `⌈(K−1)/VEC⌉/32` overlap, mostly L2 hits), outputs written once: ≈ [`crate::conv::conv_bytes_moved`] |
//! | launches | 1 |
//! | shared memory | none, or `32·VEC` elements per warp with [`StripStores::Staged`] ([`strip_shared_bytes`]); conflict-free |
//! | in place | no |
//! | deterministic | yes |

use gpu_core::launch::grid_2d;
use gpu_core::{Error, LaunchConfig, ModuleSource, Result};

use crate::conv::ConvElement;

/// Largest `K` the strip kernel handles (compile-time `K`, fully unrolled);
/// larger filters use the block kernel.
pub const STRIP_MAX_K: usize = 7;

/// The strip kernel's tuning (see the module docs). `TiledHalo` uses it for
/// `K ≤` [`STRIP_MAX_K`] when [`crate::conv::TiledTuning::strip`] is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StripTuning {
    /// Consecutive elements a lane loads per row (VEC): `VEC · bytes` must be
    /// 4, 8 or 16 (one scalar or vector load).
    pub elems_per_lane: u32,
    /// Rows a lane loads ahead of the one it uses (D), 1 … 4.
    pub prefetch_rows: u32,
    /// Output rows per warp (S), 1 … 4096: each strip re-reads `K − 1` halo
    /// rows, so larger is less traffic, smaller is more warps. 0: as many
    /// as make the grid one full wave of resident blocks ([`wave_strip_rows`]):
    /// no tail of a few strips walking alone after the rest have finished.
    pub strip_rows: u32,
    /// How a lane's VEC finished outputs reach global memory.
    pub stores: StripStores,
    /// NVRTC `--maxrregcount`, 24 … 64, for more resident warps (0:
    /// `__launch_bounds__(1024)` instead, which caps registers at 64).
    pub max_registers: u32,
    /// Warps per block, 1 … 32, side by side across the image (0: the
    /// threads of [`crate::conv::ConvOptions::block`], over 32).
    pub warps: u32,
}

/// How the strip kernel stores a finished output row. A lane's VEC outputs
/// are consecutive in the row, but output rows are generally not
/// vector-aligned (`Valid`: `OW = W − K + 1`), so each choice trades
/// instructions against alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StripStores {
    /// VEC scalar stores per lane, at a stride of VEC elements across the
    /// warp: each store instruction touches VEC times the sectors it fills.
    Scalar,
    /// One store per lane of all VEC outputs where their address is aligned
    /// to `VEC · bytes` (16 for 4-byte types with VEC = 4), else two
    /// half-width stores where it is aligned to half that, else scalar
    /// stores. The alignment is the same for every lane of a row (their
    /// columns differ by multiples of VEC), so a warp stores a row with
    /// one instruction, two, or VEC. For `f32`, `Valid`, `W = 8192`, K = 3
    /// (`OW = 8190`) even rows take one 16-byte store, odd rows two 8-byte
    /// stores.
    Vector,
    /// Through the warp's slice of shared memory (one vector store per
    /// lane), then VEC coalesced rounds of 32 consecutive elements.
    Staged,
}

impl StripStores {
    /// The kernel's `CONV_STRIP_STORES` value.
    pub fn code(self) -> u8 {
        match self {
            StripStores::Scalar => 0,
            StripStores::Vector => 1,
            StripStores::Staged => 2,
        }
    }

    /// A short name: "direct", "vector" or "staged".
    pub fn name(self) -> &'static str {
        match self {
            StripStores::Scalar => "direct",
            StripStores::Vector => "vector",
            StripStores::Staged => "staged",
        }
    }
}

/// Strip tunings the sweep (`tests/conv_tuning.rs`) compares on `f32`,
/// 8192², K = 3 and 5 (each also at other warps per block). The first
/// twelve were chosen around the register budget (K·VEC accumulators + K²
/// filter registers + D·2·VEC loads in flight) and the bytes in flight an SM
/// needs to stream at the copy ceiling (≈ 3 TB/s × ~1 µs / 132 SMs ≈ 23 KB:
/// 8 warps × 16 B × 32 lanes × D = 2 rows per 8-warp block, several blocks
/// per SM), and measured on the H100 on 2026-11-22 and 23 (see
/// [`crate::conv::TILED_TUNING`]); the last three, with
/// [`StripStores::Vector`], were added after those sweeps.
pub const STRIP_CANDIDATES: [StripTuning; 15] = [
    strip(4, 2, 0, Staged, 0),
    strip(4, 2, 32, Staged, 0),
    strip(4, 2, 64, Staged, 0),
    strip(4, 2, 128, Staged, 0),
    strip(4, 1, 0, Staged, 0),
    strip(4, 3, 0, Staged, 0),
    strip(4, 2, 0, Scalar, 0),
    strip(2, 2, 0, Staged, 0),
    strip(2, 3, 0, Staged, 0),
    strip(4, 2, 0, Staged, 48),
    strip(1, 4, 0, Scalar, 0),
    strip(1, 4, 64, Scalar, 0),
    strip(4, 2, 0, Vector, 0),
    strip(4, 1, 0, Vector, 0),
    strip(4, 3, 0, Vector, 0),
];

use StripStores::{Scalar, Staged, Vector};

const fn strip(vec: u32, prefetch: u32, rows: u32, stores: StripStores, regs: u32) -> StripTuning {
    StripTuning {
        elems_per_lane: vec,
        prefetch_rows: prefetch,
        strip_rows: rows,
        stores,
        max_registers: regs,
        warps: 0,
    }
}

/// Checks a strip tuning for element type `T`.
pub fn check_strip_tuning<T: ConvElement>(tuning: &StripTuning) -> Result<()> {
    let load_bytes = tuning.elems_per_lane as usize * T::BYTES;
    if !matches!(load_bytes, 4 | 8 | 16) {
        return Err(Error::invalid(
            "tuning",
            format!(
                "elems_per_lane {} × {} bytes must be 4, 8 or 16 bytes",
                tuning.elems_per_lane,
                T::BYTES
            ),
        ));
    }
    if !(1..=4).contains(&tuning.prefetch_rows) {
        return Err(Error::invalid(
            "tuning",
            format!("prefetch_rows {} must be 1 to 4", tuning.prefetch_rows),
        ));
    }
    if tuning.strip_rows > 4096 {
        return Err(Error::invalid(
            "tuning",
            format!(
                "strip_rows {} must be 0 (one wave) or 1 to 4096",
                tuning.strip_rows
            ),
        ));
    }
    if tuning.warps > 32 {
        return Err(Error::invalid(
            "tuning",
            format!(
                "warps {} must be 0 (from the block) or 1 to 32",
                tuning.warps
            ),
        ));
    }
    if tuning.max_registers != 0 && !(24..=64).contains(&tuning.max_registers) {
        return Err(Error::invalid(
            "tuning",
            format!(
                "max_registers {} must be 0 or 24 to 64",
                tuning.max_registers
            ),
        ));
    }
    Ok(())
}

/// Warps per block: [`StripTuning::warps`], or when that is 0 the threads
/// of `block = (x, y)` over 32, arranged as warps side by side (each its own
/// strip). Errors unless the thread count is a multiple of 32 (every
/// [`crate::conv::CONV_BLOCKS`] is).
pub fn strip_warps(block: (u32, u32), tuning: &StripTuning) -> Result<u32> {
    if (1..=32).contains(&tuning.warps) {
        return Ok(tuning.warps);
    }
    let threads = block.0 * block.1;
    if threads == 0 || threads % 32 != 0 || threads > 1024 {
        return Err(Error::invalid(
            "block",
            format!(
                "{}×{}: the strip kernel needs a multiple of 32 threads, at most 1024",
                block.0, block.1
            ),
        ));
    }
    Ok(threads / 32)
}

/// Dynamic shared memory per block: `32·VEC` elements per warp with
/// [`StripStores::Staged`], none otherwise.
pub fn strip_shared_bytes<T: ConvElement>(tuning: &StripTuning, warps: u32) -> usize {
    if tuning.stores == StripStores::Staged {
        warps as usize * 32 * tuning.elems_per_lane as usize * T::BYTES
    } else {
        0
    }
}

/// Where the strips lie for an output of `out_cols` columns, anchor `pad`,
/// `vec` elements per lane and filter side `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripGeometry {
    /// First input column of strip 0: `−(pad rounded up to a multiple of
    /// vec)`, so every lane's chunk starts at a multiple of `vec`.
    pub col_base: i64,
    /// Output columns per strip: `(32 − ⌈(k−1)/vec⌉)·vec` (the last lanes
    /// only supply the window's right columns to their neighbours).
    pub out_width: u64,
    /// Strips across: they cover output columns
    /// `col_base + pad … col_base + pad + col_strips·out_width − 1 ⊇ [0, out_cols)`.
    pub col_strips: u64,
}

/// The strip geometry (see [`StripGeometry`]).
pub fn strip_geometry(out_cols: usize, pad: usize, vec: u32, k: usize) -> StripGeometry {
    let vec = vec.max(1) as u64;
    let pad_up = (pad as u64).div_ceil(vec) * vec;
    let supplying_lanes = (k.max(1) as u64 - 1).div_ceil(vec);
    let out_width = (32 - supplying_lanes.min(31)) * vec;
    // Output columns covered start at pad − pad_up ∈ (−vec, 0].
    let span = out_cols as u64 + (pad_up - pad as u64);
    StripGeometry {
        col_base: -(pad_up as i64),
        out_width,
        col_strips: span.div_ceil(out_width).max(1),
    }
}

/// Output rows per strip so that the grid is one wave: the
/// `resident_blocks_per_sm · sm_count` blocks that fit on the GPU at once,
/// `⌈col_strips / warps⌉` blocks across, so `⌊capacity / across⌋` row strips
/// of `⌈out_rows / that⌉` rows (at least 1, at most 4096). Every warp then
/// walks about the same number of rows at the same time, and the halo
/// overhead `(K − 1)/S` is as small as a full GPU allows.
pub fn wave_strip_rows(
    out_rows: usize,
    col_strips: u64,
    warps: u32,
    resident_blocks_per_sm: u32,
    sm_count: u32,
) -> u32 {
    let across = col_strips.div_ceil(warps.max(1) as u64).max(1);
    let capacity = resident_blocks_per_sm.max(1) as u64 * sm_count.max(1) as u64;
    let row_strips = (capacity / across).max(1);
    (out_rows as u64).div_ceil(row_strips).clamp(1, 4096) as u32
}

/// Launch geometry: block `(32, warps)`, grid x over groups of `warps`
/// strips, grid y (spilling into z) over row strips of `strip_rows` outputs
/// (the resolved value, ≥ 1).
pub fn strip_launch_config<T: ConvElement>(
    out_shape: (usize, usize),
    geometry: &StripGeometry,
    warps: u32,
    strip_rows: u32,
    tuning: &StripTuning,
) -> Result<LaunchConfig> {
    // grid_2d over a (rows × strips) "matrix": a block covers `warps` strips
    // (block x = warps, one strip each) and `strip_rows` rows (block y = 1,
    // strip_rows per thread); the real block is (32, warps).
    let mut config = grid_2d(
        out_shape.0 as u64,
        geometry.col_strips,
        (warps, 1),
        (1, strip_rows.max(1)),
        strip_shared_bytes::<T>(tuning, warps) as u32,
    )?;
    config.block = (32, warps, 1);
    Ok(config)
}

/// The strip entry for `T` and filter side `k`.
pub fn strip_entry<T: ConvElement>(k: usize) -> String {
    format!("conv_strip_k{k}_{}", T::SUFFIX)
}

/// The entry parameters (after conv.rs's three pointers and four sizes).
const STRIP_PARAMS: &str = "const conv_t* img, const conv_t* filt, conv_t* out, i64 H, i64 W, \
     i64 OH, i64 OW, i32 pad, i32 padding, i32 flip, i32 strip_rows, i32 aligned, \
     i64 col_base, i64 col_strips";

/// The name of [`strip_module`]'s module: the element type and every
/// compile-time field, so a name stands for one source.
pub fn strip_module_name<T: ConvElement>(tuning: &StripTuning) -> String {
    format!(
        "linalg_conv_strip_{}_v{}_p{}_s{}_r{}",
        T::SUFFIX,
        tuning.elems_per_lane,
        tuning.prefetch_rows,
        tuning.stores.code(),
        tuning.max_registers
    )
}

/// The strip module for `T` and `tuning`: entries for K = 1 … [`STRIP_MAX_K`],
/// named after the compile-time part of the tuning (`strip_rows` is a
/// run-time argument).
pub fn strip_module<T: ConvElement>(tuning: &StripTuning) -> ModuleSource {
    let name = strip_module_name::<T>(tuning);
    let mut module = ModuleSource::new(name)
        .element::<T>("conv_t")
        // conv.cu supplies the padding, FMA and filter-index helpers; its
        // own tuning constants are unused here.
        .define("CONV_ROWS_PER_THREAD", 1)
        .define("CONV_REG_FILTER_MAX_K", 0)
        .define("CONV_LOAD_BATCH", 1)
        .define("CONV_STRIP_VEC", tuning.elems_per_lane)
        .define("CONV_STRIP_PREFETCH", tuning.prefetch_rows)
        .define("CONV_STRIP_STORES", tuning.stores.code())
        .source(parprims_kernels::CONV)
        .source(parprims_kernels::CONV_STRIP);
    if tuning.max_registers != 0 {
        module = module.option(format!("--maxrregcount={}", tuning.max_registers));
    }
    // `__launch_bounds__(1024)` caps registers at 64 (any block size
    // launches); an explicit --maxrregcount (≤ 64, so any block size still
    // launches) only applies to entries without launch bounds.
    let bounds = (tuning.max_registers == 0).then_some(1024);
    for k in 1..=STRIP_MAX_K {
        module = module.entry(
            strip_entry::<T>(k),
            STRIP_PARAMS,
            &format!(
                "conv_strip<{k}>(img, filt, out, H, W, OH, OW, pad, padding, flip, strip_rows, \
                 aligned, col_base, col_strips)"
            ),
            bounds,
        );
    }
    module
}

/// Whether the image rows allow vector loads: `W` a multiple of VEC and
/// the image's device address aligned to `VEC · bytes`.
pub fn rows_aligned<T: ConvElement>(image_ptr: u64, w: usize, tuning: &StripTuning) -> bool {
    let vec = tuning.elems_per_lane as usize;
    let bytes = (vec * T::BYTES) as u64;
    w % vec == 0 && image_ptr % bytes == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunings_are_checked() {
        for t in STRIP_CANDIDATES {
            assert!(check_strip_tuning::<f32>(&t).is_ok(), "{t:?}");
        }
        let base = STRIP_CANDIDATES[0];
        // 4 × 8 bytes is no single load; 2 × 8 is.
        assert!(check_strip_tuning::<f64>(&base).is_err());
        assert!(check_strip_tuning::<f64>(&StripTuning {
            elems_per_lane: 2,
            ..base
        })
        .is_ok());
        for bad in [
            StripTuning {
                elems_per_lane: 3,
                ..base
            },
            StripTuning {
                prefetch_rows: 0,
                ..base
            },
            StripTuning {
                prefetch_rows: 5,
                ..base
            },
            StripTuning {
                strip_rows: 4097,
                ..base
            },
            StripTuning {
                max_registers: 16,
                ..base
            },
            StripTuning {
                max_registers: 65,
                ..base
            },
            StripTuning { warps: 33, ..base },
        ] {
            assert!(check_strip_tuning::<f32>(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn strips_cover_every_output_column() {
        for (vec, k) in [
            (1u32, 1usize),
            (1, 7),
            (2, 3),
            (2, 6),
            (4, 1),
            (4, 5),
            (4, 7),
        ] {
            for pad in 0..k {
                for out_cols in [1usize, 2, 31, 127, 128, 129, 8190, 8192] {
                    let g = strip_geometry(out_cols, pad, vec, k);
                    let width = g.out_width as i64;
                    // The supplying lanes cover the window's K − 1 extra columns.
                    let lanes = width / vec as i64;
                    assert!((32 - lanes) * vec as i64 >= k as i64 - 1);
                    assert!((32 - lanes - 1) * (vec as i64) < k as i64 - 1 || lanes == 32);
                    // Chunks start at multiples of vec.
                    assert_eq!(g.col_base % vec as i64, 0);
                    assert!(g.col_base <= -(pad as i64));
                    let first = g.col_base + pad as i64;
                    assert!(first <= 0 && first > -(vec as i64));
                    let end = first + g.col_strips as i64 * width;
                    assert!(end >= out_cols as i64, "{vec} {pad} {out_cols}");
                    // No strip lies wholly right of the output.
                    assert!(end - width < out_cols as i64);
                }
            }
        }
        // Valid on 8192², K = 3: 8190 columns in strips of 124.
        assert_eq!(
            strip_geometry(8190, 0, 4, 3),
            StripGeometry {
                col_base: 0,
                out_width: 124,
                col_strips: 67
            }
        );
        assert_eq!(strip_geometry(100, 0, 4, 1).out_width, 128);
    }

    #[test]
    fn launch_geometry_and_shared_memory() {
        let t = STRIP_CANDIDATES[0];
        let g = strip_geometry(8190, 0, 4, 3);
        let c = strip_launch_config::<f32>((8190, 8190), &g, 8, 64, &t).unwrap();
        assert_eq!(c.block, (32, 8, 1));
        assert_eq!(c.grid, (67u32.div_ceil(8), 8190u32.div_ceil(64), 1));
        assert_eq!(c.shared_bytes, 8 * 32 * 4 * 4);
        for stores in [StripStores::Scalar, StripStores::Vector] {
            let unstaged = StripTuning { stores, ..t };
            assert_eq!(strip_shared_bytes::<f32>(&unstaged, 8), 0);
        }
        assert_eq!(strip_warps((32, 8), &t).unwrap(), 8);
        assert_eq!(strip_warps((8, 8), &t).unwrap(), 2);
        assert_eq!(strip_warps((32, 32), &t).unwrap(), 32);
        assert!(strip_warps((4, 4), &t).is_err());
        assert!(strip_warps((0, 8), &t).is_err());
        let fixed = StripTuning { warps: 32, ..t };
        assert_eq!(strip_warps((8, 8), &fixed).unwrap(), 32);
        assert_eq!(strip_warps((4, 4), &fixed).unwrap(), 32);
    }

    #[test]
    fn one_wave_strips() {
        // 8190 rows, 67 strips in blocks of 8 warps (9 across), 4 blocks on
        // each of 132 SMs: 528 blocks, 58 row strips of 142 rows.
        let rows = wave_strip_rows(8190, 67, 8, 4, 132);
        assert_eq!(rows, 142);
        let blocks = 9 * 8190u64.div_ceil(rows as u64);
        assert!(blocks <= 528 && blocks > 528 - 9);
        // Tiny outputs: at least one row; huge ones: at most 4096.
        assert_eq!(wave_strip_rows(1, 1, 8, 4, 132), 1);
        assert_eq!(wave_strip_rows(1 << 30, 1000, 1, 1, 1), 4096);
        assert_eq!(wave_strip_rows(100, 1, 0, 0, 0), 100);
    }

    #[test]
    fn alignment_needs_width_and_address() {
        let t = STRIP_CANDIDATES[0];
        assert!(rows_aligned::<f32>(0x1000, 8192, &t));
        assert!(!rows_aligned::<f32>(0x1004, 8192, &t));
        assert!(!rows_aligned::<f32>(0x1000, 8190, &t));
        let one = StripTuning {
            elems_per_lane: 1,
            ..t
        };
        assert!(rows_aligned::<f32>(0x1004, 8191, &one));
    }

    #[test]
    fn modules_have_every_k_and_are_named_by_compile_time_tuning() {
        let t = STRIP_CANDIDATES[0];
        let m = strip_module::<f32>(&t);
        assert_eq!(m.name(), "linalg_conv_strip_f32_v4_p2_s2_r0");
        for k in 1..=STRIP_MAX_K {
            assert!(m.entries().contains(&strip_entry::<f32>(k)));
        }
        assert!(m.code().contains("#define CONV_STRIP_VEC 4"));
        assert!(m.code().contains("#define CONV_STRIP_STORES 2"));
        // Each way of storing is a module of its own.
        for (stores, code) in [(StripStores::Scalar, 0), (StripStores::Vector, 1)] {
            let other = strip_module::<f32>(&StripTuning { stores, ..t });
            assert_eq!(
                other.name(),
                format!("linalg_conv_strip_f32_v4_p2_s{code}_r0")
            );
            assert!(other
                .code()
                .contains(&format!("#define CONV_STRIP_STORES {code}")));
        }
        let other_rows = StripTuning { strip_rows: 7, ..t };
        assert_eq!(strip_module::<f32>(&other_rows).name(), m.name());
        let regs = StripTuning {
            max_registers: 48,
            ..t
        };
        assert!(strip_module::<f32>(&regs)
            .options()
            .contains(&"--maxrregcount=48".to_owned()));
    }
}
