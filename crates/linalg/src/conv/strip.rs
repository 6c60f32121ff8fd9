//! `TiledHalo`'s strip kernel (`kernels/cuda/linalg/conv_strip.cu`): one warp per
//! vertical strip of the image, a sliding window of rows in registers.
//!
//! # What it computes
//!
//! Exactly the family's definition (every border, padding and
//! `flip`), for `K ≤` [`STRIP_MAX_K`](super::policy::STRIP_MAX_K), with the products of each output added
//! in the same order as the block kernel's: the two agree bit for bit.
//!
//! # How
//!
//! A warp reads `32·VEC` consecutive input columns ([`StripPolicy::elems_per_lane`]
//! = VEC per lane, one 16-byte vector load for 4-byte types when the rows are
//! aligned) and owns a piece of [`StripPolicy::strip_rows`] output rows (one
//! piece fixed by its place in the grid, or pieces claimed one after another
//! from the call's counter: [`StripPolicy::schedule`]). It walks down its
//! `S + K − 1` input rows once: each row's horizontal dot products with the K
//! filter rows go into a ring of K accumulator rows, the K − 1 columns right
//! of a lane's chunk come from the next lanes by shuffles (so the last
//! `⌈(K−1)/VEC⌉` lanes only supply columns, and neighbouring strips overlap
//! by that many chunks: [`StripGeometry`]), and a finished
//! output row is stored ([`StripPolicy::stores`]: VEC scalar stores per
//! lane, one vector store per lane where the output address allows, or
//! transposed through shared memory so every store instruction writes 32
//! consecutive elements). [`StripPolicy::prefetch_rows`] rows are
//! loaded ahead. No block-wide barrier: warps are independent.
//!
//! | | |
//! |---|---|
//! | work | `K²` multiply-adds per output |
//! | steps | `(S + K − 1)·K²·VEC` per warp |
//! | global memory | image read once from DRAM (+ `(K−1)/S` halo rows and `⌈(K−1)/VEC⌉/32` overlap, mostly L2 hits), outputs written once: ≈ `crate::conv_bytes_moved` |
//! | launches | 1 (claimed pieces: one counter word of the handle's epoch-tagged ticket state, no memset) |
//! | shared memory | none, or `32·VEC` elements per warp with [`StripStores::Staged`] ([`strip_shared_bytes`]); conflict-free |
//! | in place | no |
//! | deterministic | yes |

use gpu_core::launch::grid_2d;
use gpu_core::single_pass::with_ticket_state;
use gpu_core::{Error, Gpu, LaunchConfig, Result};

use super::element::ConvElement;
use super::module::{self, ConvCall};
use super::policy::{StripPolicy, StripSchedule, StripStores};

/// Warps per block: [`StripPolicy::warps`], or when that is 0 the threads
/// of `block = (x, y)` over 32, arranged as warps side by side (each its own
/// strip). Errors unless the thread count is a multiple of 32 (every
/// `CONV_BLOCKS` is).
pub(crate) fn strip_warps(block: (u32, u32), tuning: &StripPolicy) -> Result<u32> {
    if (1..=32).contains(&tuning.warps) {
        return Ok(tuning.warps);
    }
    let threads = block.0 * block.1;
    if threads == 0 || !threads.is_multiple_of(32) || threads > 1024 {
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
pub(crate) fn strip_shared_bytes<T: ConvElement>(tuning: &StripPolicy, warps: u32) -> usize {
    if tuning.stores == StripStores::Staged {
        warps as usize * 32 * tuning.elems_per_lane as usize * T::BYTES
    } else {
        0
    }
}

/// Where the strips lie for an output of `out_cols` columns, anchor `pad`,
/// `vec` elements per lane and filter side `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StripGeometry {
    /// First input column of strip 0: `−(pad rounded up to a multiple of
    /// vec)`, so every lane's chunk starts at a multiple of `vec`.
    pub(crate) col_base: i64,
    /// Output columns per strip: `(32 − ⌈(k−1)/vec⌉)·vec` (the last lanes
    /// only supply the window's right columns to their neighbours).
    pub(crate) out_width: u64,
    /// Strips across: they cover output columns
    /// `col_base + pad … col_base + pad + col_strips·out_width − 1 ⊇ [0, out_cols)`.
    pub(crate) col_strips: u64,
}

/// The strip geometry (see [`StripGeometry`]).
pub(crate) fn strip_geometry(out_cols: usize, pad: usize, vec: u32, k: usize) -> StripGeometry {
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
pub(crate) fn wave_strip_rows(
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

/// Whether claimed pieces of `rows` rows pay for their claims: when the
/// output holds at least two pieces for every warp that fits on the GPU
/// (`warp_capacity`). Smaller outputs run one fixed one-wave piece per
/// warp ([`StripSchedule::Claimed`]): at 1024² and 2048² (K = 3) each warp
/// would get one piece or none, and the claims' round trips to L2 cost
/// more than the balance brings.
pub(crate) fn claimed_pays(
    out_rows: usize,
    col_strips: u64,
    warp_capacity: u64,
    rows: u32,
) -> bool {
    claimed_pieces(out_rows, col_strips, rows) >= warp_capacity.saturating_mul(2)
}

/// Pieces of `rows` output rows (at least 1) in `out_rows` rows of
/// `col_strips` strips: the kernel's count, band-major.
fn claimed_pieces(out_rows: usize, col_strips: u64, rows: u32) -> u64 {
    (out_rows as u64)
        .div_ceil(rows.max(1) as u64)
        .saturating_mul(col_strips)
}

/// Launch geometry: block `(32, warps)`, grid x over groups of `warps`
/// strips, grid y (spilling into z) over row strips of `strip_rows` outputs
/// (the resolved value, ≥ 1).
pub(crate) fn strip_launch_config<T: ConvElement>(
    out_shape: (usize, usize),
    geometry: &StripGeometry,
    warps: u32,
    strip_rows: u32,
    tuning: &StripPolicy,
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

/// Launch geometry of [`StripSchedule::Claimed`]: block `(32, warps)`, a
/// one-dimensional grid of as many blocks as fit at once (`capacity`,
/// resident blocks per SM times SMs), fewer when there are fewer pieces
/// (`⌈OH / strip_rows⌉ · col_strips`) than warps.
pub(crate) fn claimed_launch_config<T: ConvElement>(
    out_shape: (usize, usize),
    geometry: &StripGeometry,
    warps: u32,
    strip_rows: u32,
    capacity: u64,
    tuning: &StripPolicy,
) -> LaunchConfig {
    let pieces = claimed_pieces(out_shape.0, geometry.col_strips, strip_rows);
    let blocks = pieces
        .div_ceil(warps.max(1) as u64)
        .clamp(1, capacity.max(1));
    LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (32, warps, 1),
        shared_bytes: strip_shared_bytes::<T>(tuning, warps) as u32,
    }
}

/// Whether the rows take vector loads: `W` a multiple of VEC and the
/// image's device address aligned to `VEC · bytes`.
pub(crate) fn rows_aligned<T: ConvElement>(image_ptr: u64, w: usize, tuning: &StripPolicy) -> bool {
    let vec = tuning.elems_per_lane as usize;
    let bytes = (vec * T::BYTES) as u64;
    w.is_multiple_of(vec) && image_ptr.is_multiple_of(bytes)
}

/// Whether [`StripStores::Vector`] can store some output row with more than
/// one element per instruction: lane t's outputs start at column
/// `col_base + pad + t·VEC` of a strip (the same residue mod VEC in every
/// strip), and the vector path stores 8 or 16 bytes at once only where that
/// address is 8-byte aligned. Row addresses step by `OW·bytes`, a multiple
/// of 4, so rows 0 and 1 show every residue mod 8 that any row has. Where
/// no row qualifies (`f32` `Same` at K = 3: every output row starts one
/// element past a 16-byte boundary), `Vector` would only add its alignment
/// tests to `Scalar`'s stores, and the call runs the `Scalar` twin of the
/// policy instead (same results; measured faster, docs/conv.md).
pub(crate) fn vector_stores_pay<T: ConvElement>(
    out_ptr: u64,
    out_shape: (usize, usize),
    geometry: &StripGeometry,
    pad: usize,
    vec: u32,
) -> bool {
    let bytes = T::BYTES as u64;
    if vec as u64 * bytes < 8 {
        return false; // no store wider than one element
    }
    let first_col = (geometry.col_base + pad as i64).rem_euclid(vec as i64) as u64;
    (0..out_shape.0.min(2) as u64).any(|row| {
        let element = row * out_shape.1 as u64 + first_col;
        out_ptr.wrapping_add(element * bytes).is_multiple_of(8)
    })
}

/// `TiledHalo` through the strip kernel with `policy`, for a validated
/// problem whose output does not overlap its inputs.
pub(crate) fn launch<T: ConvElement>(
    gpu: &Gpu,
    mut call: ConvCall<'_, '_, T>,
    policy: &StripPolicy,
) -> Result<()> {
    let (k, out_shape, options) = (call.k(), call.out_shape, call.options);
    let w = call.image.cols();
    let warps = strip_warps(options.block, policy)?;
    let pad = call.pad();
    let geometry = strip_geometry(out_shape.1, pad, policy.elems_per_lane, k);
    let aligned = rows_aligned::<T>(call.image.data().device_ptr(), w, policy);
    let policy = if policy.stores == StripStores::Vector
        && !vector_stores_pay::<T>(
            call.output.data_mut().device_ptr(),
            out_shape,
            &geometry,
            pad,
            policy.elems_per_lane,
        ) {
        policy.scalar_twin()
    } else {
        *policy
    };
    let policy = &policy;

    let shared = strip_shared_bytes::<T>(policy, warps);
    let kernel = module::strip_kernel::<T>(gpu, policy, k)?;
    let resident = kernel.resident_blocks_per_sm(warps * 32, shared)?;
    let capacity = resident as u64 * gpu.info().sm_count as u64;
    let warp_capacity = capacity * warps as u64;
    let (schedule, strip_rows) = match (policy.schedule, policy.strip_rows) {
        (StripSchedule::Claimed, rows)
            if claimed_pays(out_shape.0, geometry.col_strips, warp_capacity, rows) =>
        {
            (StripSchedule::Claimed, rows)
        }
        (StripSchedule::Claimed, _) | (StripSchedule::Fixed, 0) => (
            StripSchedule::Fixed,
            wave_strip_rows(
                out_shape.0,
                geometry.col_strips,
                warps,
                resident,
                gpu.info().sm_count,
            ),
        ),
        (StripSchedule::Fixed, rows) => (StripSchedule::Fixed, rows),
    };
    let config = match schedule {
        StripSchedule::Fixed => {
            strip_launch_config::<T>(out_shape, &geometry, warps, strip_rows, policy)?
        }
        StripSchedule::Claimed => {
            claimed_launch_config::<T>(out_shape, &geometry, warps, strip_rows, capacity, policy)
        }
    };
    with_ticket_state(gpu, 0, |mut state| {
        // As for the block kernel: Valid reads outside the image only for
        // the surplus outputs right of the last column, never stored: zeros
        // (the padding border_args passes).
        let mut args = call.border_args();
        args.scalar(strip_rows as i32)
            .scalar(i32::from(aligned))
            .scalar(geometry.col_base)
            .scalar(geometry.col_strips as i64)
            .scalar(i32::from(schedule == StripSchedule::Claimed))
            .output(&mut state.words)
            .scalar(state.epoch);
        // SAFETY: the arguments match the strip entry's parameter list (three
        // pointers, four i64, five i32, two i64, an i32, the state pointer
        // and a u32) in order; the image holds H·W elements, the filter K·K and
        // the output OH·OW (validated shapes). The kernel reads the image
        // only at rows and columns mapped into [0, H) × [0, W) by
        // conv_map_coord, with vector loads only when `aligned` (W a
        // multiple of VEC and the base address VEC-element aligned) and the
        // chunk lies inside its row; it reads filter indices < K² and writes
        // only (row < OH, 0 ≤ col < OW). It touches only the state's two
        // counters (its length), by the epoch protocol of
        // single_pass/tile_status.cuh. Shared memory is the
        // strip_shared_bytes the kernel's staging slices (32·VEC elements
        // per warp, `warps` = blockDim.y) need. The output does not overlap
        // the inputs (checked by the caller) and only this stream writes it.
        unsafe { gpu.launch(&kernel, config, &args) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::policy::STRIP_CANDIDATES;

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
            let unstaged = StripPolicy { stores, ..t };
            assert_eq!(strip_shared_bytes::<f32>(&unstaged, 8), 0);
        }
        assert_eq!(strip_warps((32, 8), &t).unwrap(), 8);
        assert_eq!(strip_warps((8, 8), &t).unwrap(), 2);
        assert_eq!(strip_warps((32, 32), &t).unwrap(), 32);
        assert!(strip_warps((4, 4), &t).is_err());
        assert!(strip_warps((0, 8), &t).is_err());
        let fixed = StripPolicy { warps: 32, ..t };
        assert_eq!(strip_warps((8, 8), &fixed).unwrap(), 32);
        assert_eq!(strip_warps((4, 4), &fixed).unwrap(), 32);
    }

    #[test]
    fn claimed_pieces_only_where_each_warp_gets_two() {
        // 4224 resident warps (132 SMs × 8 blocks × 4 warps).
        // 8190 rows × 67 strips: 1024 bands of 8 rows, 68 608 pieces.
        assert!(claimed_pays(8190, 67, 4224, 8));
        // 4094 × 34: 17 408 pieces, at least two per warp.
        assert!(claimed_pays(4094, 34, 4224, 8));
        // 2046 × 17: 4352 pieces, about one per warp: fixed.
        assert!(!claimed_pays(2046, 17, 4224, 8));
        assert!(!claimed_pays(1, 1, 4224, 8));
        // Degenerate inputs do not panic.
        assert!(claimed_pays(100, 1, 0, 0));
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
        let one = StripPolicy {
            elems_per_lane: 1,
            ..t
        };
        assert!(rows_aligned::<f32>(0x1004, 8191, &one));
    }

    #[test]
    fn vector_stores_only_where_a_row_takes_one() {
        let base = 0x10_0000u64;
        let case = |ptr: u64, out: (usize, usize), k: usize, pad: usize, vec: u32| {
            let geometry = strip_geometry(out.1, pad, vec, k);
            vector_stores_pay::<f32>(ptr, out, &geometry, pad, vec)
        };
        // Valid 8192², K = 3: 8190 columns, rows alternately 16- and
        // 8-byte aligned at lane 0.
        assert!(case(base, (8190, 8190), 3, 0, 4));
        // Same, K = 3: pad 1, strips from column −4, so every row's lane
        // outputs start at a column ≡ 1 (mod 4) of an 8192-wide row.
        assert!(!case(base, (8192, 8192), 3, 1, 4));
        // …but an odd width puts every other row on an 8-byte boundary.
        assert!(case(base, (8191, 8191), 3, 1, 4));
        // …and a one-row output has only row 0.
        assert!(!case(base, (1, 8191), 3, 1, 4));
        // Same, K = 5 (pad 2): columns ≡ 2 (mod 4): 8-byte stores.
        assert!(case(base, (8192, 8192), 5, 2, 4));
        // Full, K = 3 (pad 2), and Same, K = 7 with two per lane (pad 3:
        // odd columns of an even-width row, 8-byte stores impossible).
        assert!(case(base, (8194, 8194), 3, 2, 4));
        assert!(!case(base, (8192, 8192), 7, 3, 2));
        // An output view starting one element in shifts every row.
        assert!(!case(base + 4, (8190, 8190), 3, 0, 4));
        assert!(case(base + 4, (8192, 8192), 3, 1, 4));
        // One element per lane: nothing wider to store. 8-byte types:
        // every element is 8-byte aligned.
        assert!(!case(base, (8190, 8190), 3, 0, 1));
        let geometry = strip_geometry(8192, 1, 2, 3);
        assert!(vector_stores_pay::<f64>(
            base,
            (8192, 8192),
            &geometry,
            1,
            2
        ));
    }
}
