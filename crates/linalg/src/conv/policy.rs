//! `TiledHalo`'s policies: [`ConvPolicy`] (the block kernel's shape, and
//! which register-tile and strip kernels serve small filters),
//! [`RegisterTilePolicy`] (the register-tile kernel's shape) and
//! [`StripPolicy`] (the strip kernel's shape), with their checks and
//! per-type, per-architecture defaults.
//!
//! Measured in docs/tuning.md#conv. `f32` and `i32` run the register-tile
//! kernel for K ≤ 7: for K ≤ 5 4 rows × 2 groups of 4 columns per thread,
//! 4 warps, 8 blocks per SM, rows stored in whole 16-byte pieces
//! ([`RegisterTilePolicy::aligned_stores`]); for K = 6 and 7
//! ([`ConvPolicy::register_tile_wide`], from [`REGISTER_TILE_WIDE_MIN_K`])
//! 8 rows × 4 columns, 4 warps, 8 blocks per SM (on one H200 at 8192²,
//! 0.98 / 0.91 / 0.81 / 0.63 of the copy ceiling at K = 1 / 3 / 5 / 7,
//! against 0.74 / 0.67 / 0.64 / 0.46 for the strip policies in the same
//! process).
//!
//! The table keeps the strip policies, which run when the register tiles
//! are `None`: for K ≤ 5 four elements per lane, one row in flight, vector
//! stores, 4 warps per block, and warps that claim pieces of 8 output rows
//! from a counter ([`StripSchedule::Claimed`]) until none is left, rather
//! than one fixed piece per warp: a call then lasts as long as the average
//! warp, not the slowest, and the pieces in flight stay in one band of
//! rows. For K = 6 and 7 ([`ConvPolicy::strip_wide`]) two elements per lane
//! and pieces of 16 rows (half the accumulators and window registers beside
//! the 36 or 49 filter taps). Both trim the halo rows' products
//! ([`StripPolicy::trim_halo`]): at K = 7 the walk is bound by instruction
//! issue, and a piece of 16 rows would otherwise spend 27 % of its
//! multiply-adds on sums it discards. `i32` takes the same policies as
//! `f32` (the strip policies measured on an H100: 0.85 / 0.79 / 0.57 of the
//! copy ceiling at K = 3 / 5 / 7, against 0.71 / 0.54 / 0.24 for its block
//! kernel in an earlier build). The block
//! kernel serves K > 7; `f64` at every K (its block kernel reaches 0.86 at
//! K = 3 and 0.42 at K = 7, where the strip kernel measured 0.85 and 0.21;
//! the strip kernel wins only at K = 5, 0.78 against 0.60, and a policy
//! cannot yet give it K = 4 and 5 alone); and `f16` and `bf16` (the strip
//! and register-tile kernels compute in the element type; they accumulate
//! in `f32`, with the 4-byte block policy, not measured for them). The
//! block kernel's values come from register budgets (blocks of up to 1024
//! threads allow 64 registers per thread: `R` accumulators, `K` row values
//! and `K²` filter registers must fit, checked with
//! `cuobjdump -res-usage`) and from one batch of loads covering a K ≤ 5 tile
//! of the default 32 × 8 block (`load_batch` ≥ tile elements / 256 threads).

use gpu_core::{DeviceInfo, DeviceType, Error, Result};

use super::element::ConvElement;

/// Largest `K` the strip kernel handles (compile-time `K`, fully unrolled);
/// larger filters use the block kernel.
pub const STRIP_MAX_K: usize = 7;

/// `TiledHalo`'s policy for one element type.
///
/// The fields are public so sweeps can write `ConvPolicy { strip: None,
/// ..ConvPolicy::default_for::<f32>(arch) }`; every policy given to a
/// convolution is checked ([`ConvPolicy::validate`]) and refused with a
/// typed error when the kernels cannot run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvPolicy {
    /// Outputs per thread (a column of consecutive rows), `R`.
    pub rows_per_thread: u32,
    /// Largest `K` whose filter is held in registers (larger `K`: shared).
    pub reg_filter_max_k: u32,
    /// Tile loads a thread issues before storing them to shared memory.
    pub load_batch: u32,
    /// `Some`: filters up to [`STRIP_MAX_K`] use the strip kernel
    /// (the strip kernel: one warp per vertical strip, rows walked once through
    /// registers) instead of the block kernel; larger filters always use the
    /// block kernel (`rows_per_thread`, `reg_filter_max_k`, `load_batch`).
    pub strip: Option<StripPolicy>,
    /// `Some`: the strip tuning for `K` from [`STRIP_WIDE_MIN_K`] to
    /// [`STRIP_MAX_K`] instead of `strip` (wider filters hold more
    /// accumulators and filter taps in registers and favour other settings).
    pub strip_wide: Option<StripPolicy>,
    /// `Some`: filters up to [`REGISTER_TILE_MAX_K`] use the register-tile
    /// kernel (a shared tile, a block of outputs per thread, the taps in
    /// uniform registers) instead of the strip and block kernels.
    pub register_tile: Option<RegisterTilePolicy>,
    /// `Some`: the register-tile tuning for `K` from
    /// [`REGISTER_TILE_WIDE_MIN_K`] to [`REGISTER_TILE_MAX_K`] instead of
    /// `register_tile`.
    pub register_tile_wide: Option<RegisterTilePolicy>,
}

/// Largest `K` the register-tile kernel handles (compile-time `K`, fully
/// unrolled; 8 taps per filter row in shared memory).
pub const REGISTER_TILE_MAX_K: usize = 7;

/// Smallest `K` served by [`ConvPolicy::register_tile_wide`] when it is
/// set (the register tiles' own split, measured apart from the strips'
/// [`STRIP_WIDE_MIN_K`]; docs/tuning.md#conv).
pub const REGISTER_TILE_WIDE_MIN_K: usize = 6;

/// The register-tile kernel's policy (`kernels/cuda/linalg/conv_register_tile.cu`).
/// A block of `32 × warps` threads computes `128·column_groups` output
/// columns × `warps·rows_per_thread` output rows; each thread
/// `rows_per_thread` rows × `column_groups` groups of 4 consecutive
/// columns. Fields public as [`ConvPolicy`]'s; checked by
/// [`RegisterTilePolicy::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisterTilePolicy {
    /// Output rows per thread, `R`, 1 … 16.
    pub rows_per_thread: u32,
    /// Groups of 4 columns per thread, `G`, 1 or 2 (128 columns apart).
    pub column_groups: u32,
    /// Warps per block, 1 … 32, stacked down the tile.
    pub warps: u32,
    /// Blocks per SM the compiler must fit (`__launch_bounds__(32·warps,
    /// min_blocks)`, capping registers at about `65 536 / (32·warps·min_blocks)`),
    /// 0 … 32; 0: the block size alone bounds them.
    pub min_blocks: u32,
    /// `true`: every output row is stored in whole 16-byte pieces at
    /// 16-byte boundaries, the lanes of a row that does not start on one
    /// taking the next lane's first outputs by shuffle (one request per
    /// sector at the L2; about 3 shuffles and a few tests more per row).
    /// `false`: a 16-byte store where a thread's 4 outputs start on a
    /// boundary, else two 8-byte stores or four 4-byte ones (the fewest
    /// instructions, for walks bound by instruction issue).
    pub aligned_stores: bool,
}

impl RegisterTilePolicy {
    /// Accumulators per thread: `4·rows_per_thread·column_groups`.
    pub fn accumulators(&self) -> u32 {
        4 * self.rows_per_thread * self.column_groups
    }

    /// Checks the policy for element type `T`: a 4-byte type that
    /// accumulates in itself (`f32`, `i32`); `rows_per_thread` 1 … 16,
    /// `column_groups` 1 or 2, `warps` 1 … 32, `min_blocks` 0 … 32 with at
    /// most 64 warps per SM, and at most 64 accumulators per thread. Each refusal is [`Error::InvalidArgument`].
    ///
    /// ```
    /// use linalg::policy::RegisterTilePolicy;
    /// let tile = RegisterTilePolicy {
    ///     rows_per_thread: 4,
    ///     column_groups: 2,
    ///     warps: 8,
    ///     min_blocks: 0,
    ///     aligned_stores: true,
    /// };
    /// assert!(tile.validate::<f32>().is_ok());
    /// assert!(tile.validate::<f64>().is_err()); // 4-byte types only
    /// assert!(RegisterTilePolicy { rows_per_thread: 16, ..tile }.validate::<f32>().is_err()); // 128 accumulators
    /// ```
    pub fn validate<T: ConvElement>(&self) -> Result<()> {
        if T::BYTES != 4 || std::any::TypeId::of::<T>() != std::any::TypeId::of::<T::Acc>() {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "the register-tile kernel serves 4-byte types that accumulate in themselves \
                     (f32, i32), not {}",
                    T::SUFFIX
                ),
            ));
        }
        if !(1..=16).contains(&self.rows_per_thread) {
            return Err(Error::invalid(
                "tuning",
                format!("rows_per_thread {} must be 1 to 16", self.rows_per_thread),
            ));
        }
        if !(1..=2).contains(&self.column_groups) {
            return Err(Error::invalid(
                "tuning",
                format!("column_groups {} must be 1 or 2", self.column_groups),
            ));
        }
        if !(1..=32).contains(&self.warps) {
            return Err(Error::invalid(
                "tuning",
                format!("warps {} must be 1 to 32", self.warps),
            ));
        }
        if self.min_blocks > 32 || self.min_blocks * self.warps > 64 {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "min_blocks {} of {} warps: at most 32 blocks and 64 warps per SM",
                    self.min_blocks, self.warps
                ),
            ));
        }
        if self.accumulators() > 64 {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "{} rows × {} groups of 4 columns are {} accumulators per thread (at most 64)",
                    self.rows_per_thread,
                    self.column_groups,
                    self.accumulators()
                ),
            ));
        }
        Ok(())
    }
}

/// `f32`'s and `i32`'s register tile for K ≤ 5: 4 rows × 2 groups of 4
/// columns per thread, 4 warps: tiles of 256 × 16 outputs, eight blocks
/// (32 warps, 64 registers each) per SM, rows stored in whole 16-byte
/// pieces (measured in docs/tuning.md#conv).
const REGISTER_TILE_NARROW: RegisterTilePolicy = aligned(tile(4, 2, 4, 8));

/// `f32`'s and `i32`'s register tile for K = 6 and 7: 8 rows × 4 columns
/// per thread, 4 warps: tiles of 128 × 32 outputs, 32 accumulators beside
/// the 12-sample window, eight blocks per SM; the fewest store
/// instructions (the walk is bound by issue).
const REGISTER_TILE_WIDE: RegisterTilePolicy = tile(8, 1, 4, 8);

/// Register tiles the sweep (`tests/conv_tuning.rs`) compares with the
/// strip kernel on `f32`, 8192², K = 1 … 7.
pub const REGISTER_TILE_CANDIDATES: [RegisterTilePolicy; 10] = [
    REGISTER_TILE_NARROW,
    REGISTER_TILE_WIDE,
    tile(4, 2, 4, 8),
    aligned(tile(8, 1, 4, 8)),
    tile(4, 2, 8, 4),
    aligned(tile(4, 2, 8, 4)),
    tile(8, 1, 4, 0),
    aligned(tile(8, 1, 4, 0)),
    tile(8, 1, 8, 4),
    tile(6, 1, 8, 0),
];

const fn tile(
    rows_per_thread: u32,
    column_groups: u32,
    warps: u32,
    min_blocks: u32,
) -> RegisterTilePolicy {
    RegisterTilePolicy {
        rows_per_thread,
        column_groups,
        warps,
        min_blocks,
        aligned_stores: false,
    }
}

/// `policy` storing its rows in whole 16-byte pieces.
const fn aligned(policy: RegisterTilePolicy) -> RegisterTilePolicy {
    RegisterTilePolicy {
        aligned_stores: true,
        ..policy
    }
}

/// Smallest `K` that [`ConvPolicy::strip_wide`] applies to: from K = 6 the
/// K² filter taps and K·VEC accumulators of four elements per lane no
/// longer fit in registers (local-memory spills: 56 bytes at K = 6, 160 at
/// K = 7, in NVRTC 13.0's sm_90 cubins).
pub const STRIP_WIDE_MIN_K: usize = 6;

/// Largest `K` with a compile-time-specialised `TiledHalo` kernel (loops
/// unrolled); larger filters use the run-time-`K` kernel.
pub const TILED_SPECIALISED_MAX_K: usize = 7;

/// The block kernel's policy of the 4-byte types and of `f16` and `bf16`
/// (whose tiles hold `f32` accumulators: the same shared memory and
/// registers as a 4-byte type), not measured for them; `f16` and `bf16`
/// run the block kernel only.
const BLOCK_ONLY_4_BYTE: ConvPolicy = ConvPolicy {
    rows_per_thread: 8,
    reg_filter_max_k: 5,
    load_batch: 10,
    strip: None,
    strip_wide: None,
    register_tile: None,
    register_tile_wide: None,
};

/// `f32`'s and `i32`'s strip policy for K ≤ 5: warps claim pieces of 8
/// output rows, one row in flight, four elements per lane (16-byte loads),
/// vector stores, 4 warps per block, halo products trimmed (measured in
/// docs/tuning.md#conv).
const CLAIMED_EIGHT_ROWS: StripPolicy = StripPolicy {
    elems_per_lane: 4,
    prefetch_rows: 1,
    strip_rows: 8,
    stores: StripStores::Vector,
    max_registers: 0,
    warps: 4,
    schedule: StripSchedule::Claimed,
    trim_halo: true,
};

/// `f32`'s and `i32`'s strip policy for K = 6 and 7: two elements per lane
/// (8-byte loads; half the accumulators and window registers beside the K²
/// taps) and pieces of 16 rows, halo products trimmed.
const CLAIMED_WIDE: StripPolicy = StripPolicy {
    elems_per_lane: 2,
    strip_rows: 16,
    ..CLAIMED_EIGHT_ROWS
};

/// The default `TiledHalo` policy per element type, by
/// [`DeviceType::SUFFIX`] (measured in docs/tuning.md#conv; see the module
/// docs for the reasoning).
const TABLE: [(&str, ConvPolicy); 5] = [
    (
        "f32",
        ConvPolicy {
            rows_per_thread: 8,
            reg_filter_max_k: 5,
            load_batch: 10,
            strip: Some(CLAIMED_EIGHT_ROWS),
            strip_wide: Some(CLAIMED_WIDE),
            register_tile: Some(REGISTER_TILE_NARROW),
            register_tile_wide: Some(REGISTER_TILE_WIDE),
        },
    ),
    (
        "i32",
        ConvPolicy {
            strip: Some(CLAIMED_EIGHT_ROWS),
            strip_wide: Some(CLAIMED_WIDE),
            register_tile: Some(REGISTER_TILE_NARROW),
            register_tile_wide: Some(REGISTER_TILE_WIDE),
            ..BLOCK_ONLY_4_BYTE
        },
    ),
    ("f16", BLOCK_ONLY_4_BYTE),
    ("bf16", BLOCK_ONLY_4_BYTE),
    (
        "f64",
        ConvPolicy {
            rows_per_thread: 4,
            reg_filter_max_k: 3,
            load_batch: 6,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
        },
    ),
];

impl ConvPolicy {
    /// A block-kernel policy (no strip kernel), checked for `T`:
    /// `rows_per_thread` 1 … 16, `reg_filter_max_k` 0 …
    /// [`TILED_SPECIALISED_MAX_K`], `load_batch` 1 … 32.
    ///
    /// ```
    /// use linalg::policy::ConvPolicy;
    /// let policy = ConvPolicy::new::<f32>(8, 5, 4)?; // 8 rows per thread, filters ≤ 5 in registers
    /// assert_eq!(policy.strip, None); // the block kernel only
    /// assert!(ConvPolicy::new::<f32>(17, 5, 4).is_err()); // rows_per_thread 1 … 16
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new<T: ConvElement>(
        rows_per_thread: u32,
        reg_filter_max_k: u32,
        load_batch: u32,
    ) -> Result<ConvPolicy> {
        let policy = ConvPolicy {
            rows_per_thread,
            reg_filter_max_k,
            load_batch,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
        };
        policy.validate::<T>()?;
        Ok(policy)
    }

    /// The default for `T` on a device: the measured table on every
    /// architecture (measured on sm_90).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::policy::ConvPolicy;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let policy = ConvPolicy::for_device::<f32>(gpu.info());
    /// assert_eq!(policy, ConvPolicy::default_for::<f32>(gpu.info().compute_capability));
    /// # Ok(()) }
    /// ```
    pub fn for_device<T: ConvElement>(info: &DeviceInfo) -> ConvPolicy {
        Self::default_for::<T>(info.compute_capability)
    }

    /// The default for `T` on compute capability `arch` (see
    /// [`Self::for_device`]).
    ///
    /// ```
    /// use linalg::policy::ConvPolicy;
    /// let policy = ConvPolicy::default_for::<f64>((9, 0));
    /// assert!(policy.validate::<f64>().is_ok());
    /// ```
    pub fn default_for<T: ConvElement>(_arch: (u32, u32)) -> ConvPolicy {
        TABLE
            .iter()
            .find(|(t, _)| *t == T::SUFFIX)
            .map(|&(_, policy)| policy)
            .expect("TABLE has an entry for every ConvElement type")
    }

    /// Checks the policy for element type `T`, as every convolution does
    /// before using it: the block kernel's fields (see [`Self::new`]) and
    /// each strip policy ([`StripPolicy::validate`]). Each refusal is
    /// [`Error::InvalidArgument`].
    ///
    /// ```
    /// use linalg::policy::ConvPolicy;
    /// let table = ConvPolicy::default_for::<f32>((9, 0));
    /// assert!(table.validate::<f32>().is_ok());
    /// assert!(ConvPolicy { load_batch: 0, ..table }.validate::<f32>().is_err());
    /// ```
    pub fn validate<T: ConvElement>(&self) -> Result<()> {
        if !(1..=16).contains(&self.rows_per_thread) {
            return Err(Error::invalid(
                "tuning",
                format!("rows_per_thread {} must be 1 to 16", self.rows_per_thread),
            ));
        }
        if self.reg_filter_max_k as usize > TILED_SPECIALISED_MAX_K {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "reg_filter_max_k {} must be at most {TILED_SPECIALISED_MAX_K}",
                    self.reg_filter_max_k
                ),
            ));
        }
        if !(1..=32).contains(&self.load_batch) {
            return Err(Error::invalid(
                "tuning",
                format!("load_batch {} must be 1 to 32", self.load_batch),
            ));
        }
        for strip in self.strip.iter().chain(self.strip_wide.iter()) {
            strip.validate::<T>()?;
        }
        for tile in self
            .register_tile
            .iter()
            .chain(self.register_tile_wide.iter())
        {
            tile.validate::<T>()?;
        }
        Ok(())
    }

    /// The strip policy for filter side `k`: none above [`STRIP_MAX_K`];
    /// [`ConvPolicy::strip_wide`] (if set) from [`STRIP_WIDE_MIN_K`]; else
    /// [`ConvPolicy::strip`]. `None`: the block kernel serves `k`.
    ///
    /// ```
    /// use linalg::policy::{ConvPolicy, STRIP_MAX_K};
    /// let policy = ConvPolicy::default_for::<f32>((9, 0));
    /// assert_eq!(policy.strip_for(STRIP_MAX_K + 2), None); // large filters: the block kernel
    /// assert_eq!(ConvPolicy::new::<f32>(8, 5, 4)?.strip_for(3), None); // no strip policy set
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn strip_for(&self, k: usize) -> Option<StripPolicy> {
        if k > STRIP_MAX_K {
            None
        } else if k >= STRIP_WIDE_MIN_K && self.strip_wide.is_some() {
            self.strip_wide
        } else {
            self.strip
        }
    }

    /// The register-tile policy for filter side `k`: none above
    /// [`REGISTER_TILE_MAX_K`]; [`ConvPolicy::register_tile_wide`] (if set)
    /// from [`REGISTER_TILE_WIDE_MIN_K`]; else [`ConvPolicy::register_tile`].
    /// `Some` takes precedence over [`Self::strip_for`]: `TiledHalo` runs
    /// the register-tile kernel, else the strip kernel, else the block
    /// kernel.
    ///
    /// ```
    /// use linalg::policy::{ConvPolicy, REGISTER_TILE_MAX_K};
    /// let policy = ConvPolicy::default_for::<f32>((9, 0));
    /// assert!(policy.register_tile_for(3).is_some());
    /// assert_eq!(policy.register_tile_for(REGISTER_TILE_MAX_K + 1), None);
    /// assert_eq!(ConvPolicy::default_for::<f64>((9, 0)).register_tile_for(3), None);
    /// ```
    pub fn register_tile_for(&self, k: usize) -> Option<RegisterTilePolicy> {
        if k > REGISTER_TILE_MAX_K {
            None
        } else if k >= REGISTER_TILE_WIDE_MIN_K && self.register_tile_wide.is_some() {
            self.register_tile_wide
        } else {
            self.register_tile
        }
    }
}

/// The strip kernel's policy. `TiledHalo` uses it for `K ≤` [`STRIP_MAX_K`]
/// when [`ConvPolicy::strip`] is set. Fields public as [`ConvPolicy`]'s;
/// checked by [`StripPolicy::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StripPolicy {
    /// Consecutive elements a lane loads per row (VEC): `VEC · bytes` must be
    /// 4, 8 or 16 (one scalar or vector load).
    pub elems_per_lane: u32,
    /// Rows a lane loads ahead of the one it uses (D), 1 … 4.
    pub prefetch_rows: u32,
    /// Output rows per warp (S), 1 … 4096: each strip re-reads `K − 1` halo
    /// rows, so larger is less traffic, smaller is more warps. 0: as many
    /// as make the grid one full wave of resident blocks (the strip kernel's `wave_strip_rows`):
    /// no tail of a few strips walking alone after the rest have finished.
    pub strip_rows: u32,
    /// How a lane's VEC finished outputs reach global memory.
    pub stores: StripStores,
    /// NVRTC `--maxrregcount`, 24 … 255 (0: `__launch_bounds__(1024)`
    /// instead, which caps registers at 64): below 64 for more resident
    /// warps, above it for fewer resident warps with more registers each
    /// (then `warps` must be set and the block must fit the register file).
    /// A higher cap does not by itself remove local memory: NVRTC 13.0
    /// still gives the K = 7 four-per-lane walk a 48-byte stack frame at 96.
    pub max_registers: u32,
    /// Warps per block, 1 … 32, side by side across the image (0: the
    /// threads of the options' `block`, over 32).
    pub warps: u32,
    /// How warps get their pieces (`strip_rows` output rows of one strip).
    pub schedule: StripSchedule,
    /// `true`: each piece's first and last `K − 1` input rows add products
    /// only to the piece's own output rows (uniform tests per filter row);
    /// `false`: every input row meets all K filter rows and the sums of rows
    /// outside the piece are discarded, a fraction `(K − 1)/strip_rows` more
    /// multiply-adds.
    pub trim_halo: bool,
}

/// How the strip kernel's warps get their pieces of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StripSchedule {
    /// One piece per warp, fixed by its place in the grid
    /// ([`StripPolicy::strip_rows`] 0: one wave of pieces as long as the
    /// image allows). The whole call lasts as long as its slowest warp.
    Fixed,
    /// A grid of as many warps as fit on the GPU at once, each claiming the
    /// next piece from the call's counter until none is left; pieces are
    /// taken in row bands across the whole image. A slow piece delays
    /// only its own warp's next claim. Needs `strip_rows` ≥ 1. An output
    /// too small to give each resident warp two pieces of `strip_rows`
    /// rows runs as `Fixed` with one-wave pieces instead (there the claims'
    /// round trips cost more than the balance brings: 1024² K = 3
    /// measured 0.0166 ms claimed against 0.0135 ms fixed on the H100).
    Claimed,
}

impl StripSchedule {
    /// A short name: "fixed" or "claimed".
    ///
    /// ```
    /// use linalg::policy::StripSchedule;
    /// assert_eq!(StripSchedule::Claimed.name(), "claimed");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            StripSchedule::Fixed => "fixed",
            StripSchedule::Claimed => "claimed",
        }
    }
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
    /// stores. A call in which no output row allows an 8-byte store (`f32`
    /// `Same` at K = 3 on an 8192-wide image: every lane's outputs start one
    /// element past a 16-byte boundary) runs the policy's `Scalar` twin,
    /// which stores the same values without the alignment tests.
    Vector,
    /// Through the warp's slice of shared memory (one vector store per
    /// lane), then VEC coalesced rounds of 32 consecutive elements.
    Staged,
}

impl StripStores {
    /// The kernel's `CONV_STRIP_STORES` value.
    ///
    /// ```
    /// use linalg::policy::StripStores;
    /// assert_eq!(StripStores::Scalar.code(), 0);
    /// assert_eq!(StripStores::Staged.code(), 2);
    /// ```
    pub fn code(self) -> u8 {
        match self {
            StripStores::Scalar => 0,
            StripStores::Vector => 1,
            StripStores::Staged => 2,
        }
    }

    /// A short name: "direct", "vector" or "staged".
    ///
    /// ```
    /// use linalg::policy::StripStores;
    /// assert_eq!(StripStores::Vector.name(), "vector");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            StripStores::Scalar => "direct",
            StripStores::Vector => "vector",
            StripStores::Staged => "staged",
        }
    }
}

/// Strip policies the sweep (`tests/conv_tuning.rs`) compares on `f32`,
/// 8192², K = 3, 5 and 7 (each also at other warps per block), measured in
/// docs/tuning.md#conv. They were chosen around the register budget (K·VEC
/// accumulators + K² filter registers + D·2·VEC loads in flight) and the
/// bytes in flight an SM needs to stream at the copy ceiling (≈ 3 TB/s ×
/// ~1 µs / 132 SMs ≈ 23 KB: 8 warps × 16 B × 32 lanes × D = 2 rows per
/// 8-warp block, several blocks per SM).
pub const STRIP_CANDIDATES: [StripPolicy; 27] = [
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
    claimed(4, 1, 8),
    claimed(4, 2, 8),
    claimed(4, 1, 16),
    claimed(4, 2, 16),
    claimed(2, 1, 16),
    claimed(2, 1, 32),
    trimmed(claimed(4, 1, 8)),
    trimmed(claimed(4, 1, 16)),
    trimmed(claimed(2, 1, 16)),
    trimmed(claimed(2, 1, 32)),
    registers(trimmed(claimed(4, 1, 16)), 96),
    registers(trimmed(claimed(4, 1, 32)), 96),
];

const fn trimmed(policy: StripPolicy) -> StripPolicy {
    StripPolicy {
        trim_halo: true,
        ..policy
    }
}

/// `policy` with a register cap above the 64 of 1024-thread blocks: fewer
/// resident warps with more registers each (its 4-warp blocks fit the
/// register file).
const fn registers(policy: StripPolicy, max_registers: u32) -> StripPolicy {
    StripPolicy {
        max_registers,
        warps: 4,
        ..policy
    }
}

use StripStores::{Scalar, Staged, Vector};

const fn strip(vec: u32, prefetch: u32, rows: u32, stores: StripStores, regs: u32) -> StripPolicy {
    StripPolicy {
        elems_per_lane: vec,
        prefetch_rows: prefetch,
        strip_rows: rows,
        stores,
        max_registers: regs,
        warps: 0,
        schedule: StripSchedule::Fixed,
        trim_halo: false,
    }
}

/// `strip(vec, prefetch, rows, Vector, 0)` with claimed pieces.
const fn claimed(vec: u32, prefetch: u32, rows: u32) -> StripPolicy {
    StripPolicy {
        schedule: StripSchedule::Claimed,
        ..strip(vec, prefetch, rows, Vector, 0)
    }
}

impl StripPolicy {
    /// The same policy with [`StripStores::Scalar`]: what a call with
    /// `Vector` stores runs where no output row allows a vector store
    /// (`strip::vector_stores_pay`).
    pub(crate) fn scalar_twin(self) -> StripPolicy {
        StripPolicy {
            stores: StripStores::Scalar,
            ..self
        }
    }

    /// Checks the policy for element type `T`: a type that accumulates in
    /// itself (not `f16` or `bf16`); `elems_per_lane · bytes` 4, 8 or 16;
    /// `prefetch_rows` 1 … 4; `strip_rows` 0 … 4096; `warps` 0 … 32;
    /// `max_registers` 0 or 24 … 255, above 64 only with `warps` set and
    /// `warps · 32 · max_registers` ≤ 65,536. Each refusal is
    /// [`Error::InvalidArgument`].
    ///
    /// ```
    /// use linalg::policy::{StripPolicy, STRIP_CANDIDATES};
    /// let strip: StripPolicy = STRIP_CANDIDATES[0];
    /// assert!(strip.validate::<f32>().is_ok());
    /// assert!(StripPolicy { prefetch_rows: 5, ..strip }.validate::<f32>().is_err()); // 1 … 4
    /// assert!(StripPolicy { elems_per_lane: 3, ..strip }.validate::<f32>().is_err()); // 12-byte loads
    /// ```
    pub fn validate<T: ConvElement>(&self) -> Result<()> {
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<T::Acc>() {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "the strip kernel computes in the element type: {} (which accumulates in {}) \
                     runs the block kernel only",
                    T::SUFFIX,
                    <T::Acc as DeviceType>::SUFFIX
                ),
            ));
        }
        let load_bytes = self.elems_per_lane as usize * T::BYTES;
        if !matches!(load_bytes, 4 | 8 | 16) {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "elems_per_lane {} × {} bytes must be 4, 8 or 16 bytes",
                    self.elems_per_lane,
                    T::BYTES
                ),
            ));
        }
        if !(1..=4).contains(&self.prefetch_rows) {
            return Err(Error::invalid(
                "tuning",
                format!("prefetch_rows {} must be 1 to 4", self.prefetch_rows),
            ));
        }
        if self.schedule == StripSchedule::Claimed && self.strip_rows == 0 {
            return Err(Error::invalid(
                "tuning",
                "claimed pieces need strip_rows 1 to 4096 (0, one wave, is for fixed pieces)",
            ));
        }
        if self.strip_rows > 4096 {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "strip_rows {} must be 0 (one wave) or 1 to 4096",
                    self.strip_rows
                ),
            ));
        }
        if self.warps > 32 {
            return Err(Error::invalid(
                "tuning",
                format!("warps {} must be 0 (from the block) or 1 to 32", self.warps),
            ));
        }
        if self.max_registers != 0 && !(24..=255).contains(&self.max_registers) {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "max_registers {} must be 0 or 24 to 255",
                    self.max_registers
                ),
            ));
        }
        if self.max_registers > 64
            && (self.warps == 0 || self.warps * 32 * self.max_registers > 65_536)
        {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "max_registers {} above 64 needs warps set (not 0) and a block that fits \
                     the 65,536-register file: {} warps × 32 × {} registers",
                    self.max_registers, self.warps, self.max_registers
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_kernel_refusals_are_typed() {
        let base = ConvPolicy::default_for::<f32>((9, 0));
        assert!(base.validate::<f32>().is_ok());
        assert!(ConvPolicy::new::<f64>(4, 3, 6).is_ok());
        for (rows, regs, batch) in [(0, 5, 10), (17, 5, 10), (8, 8, 10), (8, 5, 0), (8, 5, 33)] {
            assert!(matches!(
                ConvPolicy::new::<f32>(rows, regs, batch),
                Err(Error::InvalidArgument { name: "tuning", .. })
            ));
        }
        for bad in [
            ConvPolicy {
                rows_per_thread: 0,
                ..base
            },
            ConvPolicy {
                rows_per_thread: 17,
                ..base
            },
            ConvPolicy {
                reg_filter_max_k: 8,
                ..base
            },
            ConvPolicy {
                load_batch: 0,
                ..base
            },
        ] {
            assert!(bad.validate::<f32>().is_err());
        }
        // f32's strips load 4 × 4 bytes: no single load for f64.
        assert!(matches!(
            base.validate::<f64>(),
            Err(Error::InvalidArgument { name: "tuning", .. })
        ));
    }

    #[test]
    fn which_kernel_serves_which_k() {
        let base = ConvPolicy::default_for::<f32>((9, 0));
        assert_eq!(base.strip_for(3), base.strip);
        assert_eq!(base.strip_for(5), base.strip);
        assert_eq!(base.strip_for(6), base.strip_wide);
        assert_eq!(base.strip_for(7), base.strip_wide);
        assert_ne!(base.strip, base.strip_wide);
        assert_eq!(base.strip_for(8), None);
        let narrow_only = ConvPolicy {
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..base
        };
        assert_eq!(narrow_only.strip_for(5), base.strip);
        let block_only = ConvPolicy {
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..base
        };
        assert_eq!(block_only.strip_for(3), None);
    }

    #[test]
    fn register_tiles_serve_filters_up_to_seven_before_the_strips() {
        for base in [
            ConvPolicy::default_for::<f32>((9, 0)),
            ConvPolicy::default_for::<i32>((9, 0)),
        ] {
            assert_eq!(base.register_tile_for(1), base.register_tile);
            assert_eq!(base.register_tile_for(5), base.register_tile);
            assert_eq!(
                base.register_tile_for(REGISTER_TILE_WIDE_MIN_K),
                base.register_tile_wide
            );
            assert_eq!(base.register_tile_for(6), base.register_tile_wide);
            assert_eq!(base.register_tile_for(7), base.register_tile_wide);
            assert_ne!(base.register_tile, base.register_tile_wide);
            assert_eq!(base.register_tile_for(REGISTER_TILE_MAX_K + 1), None);
            let narrow_only = ConvPolicy {
                register_tile_wide: None,
                ..base
            };
            assert_eq!(narrow_only.register_tile_for(7), base.register_tile);
        }
        for other in [
            ConvPolicy::default_for::<f64>((9, 0)),
            ConvPolicy::default_for::<gpu_core::f16>((9, 0)),
            ConvPolicy::default_for::<gpu_core::bf16>((9, 0)),
        ] {
            assert_eq!(other.register_tile_for(3), None);
        }
    }

    #[test]
    fn register_tile_refusals_are_typed() {
        for t in REGISTER_TILE_CANDIDATES {
            assert!(t.validate::<f32>().is_ok(), "{t:?}");
            assert!(t.validate::<i32>().is_ok(), "{t:?}");
            assert!(t.validate::<f64>().is_err(), "{t:?}");
            assert!(t.validate::<gpu_core::f16>().is_err(), "{t:?}");
        }
        let base = REGISTER_TILE_CANDIDATES[0];
        assert_eq!(base.accumulators(), 32);
        assert!(tile(16, 1, 2, 0).validate::<f32>().is_ok()); // 64 accumulators
        for bad in [
            tile(0, 1, 4, 0),
            tile(17, 1, 4, 0),
            tile(16, 2, 4, 0), // 128 accumulators
            tile(4, 0, 4, 0),
            tile(4, 3, 4, 0),
            tile(4, 1, 0, 0),
            tile(4, 1, 33, 0),
            tile(1, 1, 1, 33),
            tile(4, 1, 8, 9), // 72 warps per SM
        ] {
            assert!(
                matches!(
                    bad.validate::<f32>(),
                    Err(Error::InvalidArgument { name: "tuning", .. })
                ),
                "{bad:?}"
            );
            let policy = ConvPolicy {
                register_tile: Some(bad),
                ..ConvPolicy::default_for::<f32>((9, 0))
            };
            assert!(policy.validate::<f32>().is_err(), "{bad:?}");
        }
        // f64's block policy with a register tile: refused for f64.
        let f64_tiled = ConvPolicy {
            register_tile: Some(base),
            ..ConvPolicy::default_for::<f64>((9, 0))
        };
        assert!(f64_tiled.validate::<f64>().is_err());
    }

    #[test]
    fn tuning_covers_every_type() {
        assert_eq!(ConvPolicy::default_for::<f32>((9, 0)).rows_per_thread, 8);
        assert_eq!(ConvPolicy::default_for::<f64>((9, 0)).rows_per_thread, 4);
        assert_eq!(ConvPolicy::default_for::<i32>((8, 0)).reg_filter_max_k, 5);
        for (_, policy) in TABLE {
            assert!(policy.rows_per_thread >= 1);
        }
    }

    #[test]
    fn tunings_are_checked() {
        for t in STRIP_CANDIDATES {
            assert!(t.validate::<f32>().is_ok(), "{t:?}");
        }
        let base = STRIP_CANDIDATES[0];
        // 4 × 8 bytes is no single load; 2 × 8 is.
        assert!(base.validate::<f64>().is_err());
        assert!(StripPolicy {
            elems_per_lane: 2,
            ..base
        }
        .validate::<f64>()
        .is_ok());
        for bad in [
            StripPolicy {
                elems_per_lane: 3,
                ..base
            },
            StripPolicy {
                prefetch_rows: 0,
                ..base
            },
            StripPolicy {
                prefetch_rows: 5,
                ..base
            },
            StripPolicy {
                strip_rows: 4097,
                ..base
            },
            StripPolicy {
                max_registers: 16,
                ..base
            },
            StripPolicy {
                max_registers: 65,
                ..base
            },
            StripPolicy {
                max_registers: 256,
                warps: 4,
                ..base
            },
            StripPolicy {
                max_registers: 128,
                warps: 32,
                ..base
            },
            StripPolicy { warps: 33, ..base },
            StripPolicy {
                schedule: StripSchedule::Claimed,
                strip_rows: 0,
                ..base
            },
        ] {
            assert!(bad.validate::<f32>().is_err(), "{bad:?}");
        }
    }
}
