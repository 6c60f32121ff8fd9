//! `MatvecAlgorithm::Tuned`: the fast matvec. Kernels in
//! `kernels/cuda/linalg/matvec_tuned.cu` (their header explains them in full).
//!
//! **y = A·x** (one launch): a group of `tpr` threads (a power of two, 1 to
//! [`MatvecPolicy::n_block_threads`]) owns a row and reads it in 16-byte
//! vectors, [`MatvecPolicy::n_loads`] in flight per thread (with the
//! evict-first hint when [`MatvecPolicy::streaming`]: A is read once, x is
//! what the caches should keep), after peeling the elements before the
//! row's first 16-byte boundary (rows of a matrix whose `cols·sizeof(T)` is
//! not a multiple of 16, or views at odd offsets, start unaligned); x is read
//! in vectors when aligned for that row, else by scalar loads. The group
//! reduces by warp shuffles, wider groups then through shared memory.
//! `tpr` grows with `cols` ([`threads_per_row`]) so a thread reads about
//! [`MatvecPolicy::n_vectors_per_thread`] vectors: thread-per-row for
//! very narrow matrices, a whole block per row for wide ones.
//! Matrices with too few rows to fill the GPU are split into column chunks
//! as well ([`n_geometry`]), the chunks' partial row sums added by a second,
//! ordered kernel (the one Aᵀ·x uses).
//!
//! **y = Aᵀ·x** (one or two launches): blocks of 32 × `t_block_rows` threads
//! each own a strip of 32·L columns (L = 16 / sizeof(T) when every row
//! starts 16-byte aligned, else 1) and a slab of rows ([`t_geometry`]); each
//! thread accumulates L partial outputs in registers while its warp reads
//! whole row segments (coalesced), the block folds its rows in shared
//! memory, and writes one partial row per slab. A second kernel adds the
//! slabs' partials per column in slab order. atomicAdd would save that
//! launch and the partial traffic (slabs·cols elements, ≈ 0.2 % of
//! A at 16384²) but make float results depend on timing: we keep results
//! deterministic. With a single slab the first kernel writes y directly.
//!
//! Work rows·cols multiply-adds. Bytes [`crate::matvec_bytes_moved`] plus
//! the Aᵀ·x partials (2·slabs·cols·sizeof(T)). Shared memory
//! `n_block_threads/32` elements (A·x), `t_block_rows·32·L` elements (Aᵀ·x).
//! Deterministic for a given shape, alignment and device; not in place.

use gpu_core::launch::{grid_1d, spread_blocks, LaunchConfig, MAX_GRID_X, MAX_GRID_YZ};
use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Error, Gpu, Kernel, KernelArgs, Result};

use super::algorithm::{MatvecElement, Transpose};
use super::module::{self, variant_suffix, REDUCE_BLOCK_THREADS};
use super::policy::MatvecPolicy;
use crate::matrix::MatrixView;

/// A·x: threads per row, as a power of two: enough that each thread reads
/// about `n_vectors_per_thread` vectors of `lanes` elements, at most one
/// block.
///
/// ```
/// use linalg::policy::{threads_per_row, MatvecPolicy};
/// let policy = MatvecPolicy::DEFAULT; // 16 vectors per thread, 256-thread blocks
/// assert_eq!(threads_per_row(4096, 4, &policy), 64); // 1024 vectors of 4 f32
/// assert_eq!(threads_per_row(8, 4, &policy), 1);
/// assert_eq!(threads_per_row(1 << 30, 4, &policy), 256); // at most one block
/// ```
pub fn threads_per_row(cols: u64, lanes: u64, policy: &MatvecPolicy) -> u32 {
    let vectors = cols.div_ceil(lanes.max(1));
    let wanted = vectors.div_ceil(policy.n_vectors_per_thread.max(1)).max(1);
    wanted
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX)
        .min(policy.n_block_threads as u64) as u32
}

/// A·x launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowGeometry {
    /// Threads per row group (a power of two).
    pub threads_per_row: u32,
    /// Blocks over the rows (each block holds n_block_threads / threads_per_row rows).
    pub row_blocks: u64,
    /// Column chunks (grid z); 1 means no second pass.
    pub chunks: u64,
    /// Columns per chunk, a multiple of the vector lanes (the last chunk
    /// may have fewer, never zero).
    pub chunk_cols: u64,
}

/// A·x: the row group width, and column chunks when there are too few rows
/// to give `target_blocks` blocks, each chunk at least one vector's worth
/// of work (`n_vectors_per_thread`) per thread, at most 65 535 chunks.
///
/// ```
/// use linalg::policy::{n_geometry, MatvecPolicy};
/// // 8 rows × 1,048,576 f32 columns: too few rows for 264 blocks, so the columns are chunked.
/// let shape = n_geometry(8, 1 << 20, 4, 264, &MatvecPolicy::DEFAULT);
/// assert!(shape.chunks > 1);
/// assert_eq!(n_geometry(100_000, 512, 4, 264, &MatvecPolicy::DEFAULT).chunks, 1);
/// ```
pub fn n_geometry(
    rows: u64,
    cols: u64,
    lanes: u64,
    target_blocks: u64,
    policy: &MatvecPolicy,
) -> RowGeometry {
    let lanes = lanes.max(1);
    let tpr = threads_per_row(cols, lanes, policy);
    let rows_per_block = (policy.n_block_threads / tpr).max(1) as u64;
    let row_blocks = rows.div_ceil(rows_per_block);
    let min_chunk_cols = tpr as u64 * policy.n_vectors_per_thread.max(1) * lanes;
    let max_chunks = (cols / min_chunk_cols).clamp(1, MAX_GRID_YZ);
    let chunks = target_blocks
        .div_ceil(row_blocks.max(1))
        .clamp(1, max_chunks);
    // Whole vectors per chunk, so chunk starts keep the row's alignment.
    let chunk_cols = cols.div_ceil(chunks).div_ceil(lanes) * lanes;
    RowGeometry {
        threads_per_row: tpr,
        row_blocks,
        chunks: cols.div_ceil(chunk_cols),
        chunk_cols,
    }
}

/// Aᵀ·x launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposedGeometry {
    /// Column strips (grid x), each 32·lanes columns.
    pub strips: u64,
    /// Row slabs (grid y); 1 means no second pass.
    pub slabs: u64,
    /// Rows per slab (the last slab may have fewer, never zero).
    pub slab_rows: u64,
}

/// Aᵀ·x: strips of 32·`lanes` columns and the number of row slabs.
///
/// Blocks all do the same work, so a grid of 2.1 waves of resident blocks
/// (`capacity` = SMs × resident blocks per SM) takes as long as 3 full
/// ones. The slab count `s` minimises a simple cost in units of one
/// block-row read (`32·lanes` elements):
///
/// `⌈strips·s / capacity⌉ · ⌈rows / s⌉` (waves × rows per slab)
/// `+ 2·s·strips / capacity + t_reduce_cost` when `s > 1` (partials written
/// and read back, and the second launch),
///
/// over `1 ≤ s ≤` the slabs `t_waves` waves allow, keeping at least
/// `t_min_rows_per_thread` rows per thread and at most 65 535 slabs; ties
/// go to fewer slabs.
///
/// ```
/// use linalg::policy::{t_geometry, MatvecPolicy};
/// // 65,536 rows × 256 f32 columns (2 strips of 128) on 132 SMs × 6 blocks: split the rows.
/// let shape = t_geometry(1 << 16, 256, 4, 132 * 6, &MatvecPolicy::DEFAULT)?;
/// assert_eq!(shape.strips, 2);
/// assert!(shape.slabs > 1 && shape.slabs * shape.slab_rows >= 1 << 16);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn t_geometry(
    rows: u64,
    cols: u64,
    lanes: u64,
    capacity: u64,
    policy: &MatvecPolicy,
) -> Result<TransposedGeometry> {
    let strips = cols.div_ceil(32 * lanes.max(1));
    if strips > MAX_GRID_X {
        return Err(Error::invalid(
            "cols",
            format!("{cols} columns need more than {MAX_GRID_X} blocks"),
        ));
    }
    let capacity = capacity.max(1);
    let min_slab_rows = policy.t_block_rows as u64 * policy.t_min_rows_per_thread.max(1);
    let max_slabs = rows
        .div_ceil(min_slab_rows)
        .min(policy.t_waves.max(1).saturating_mul(capacity) / strips)
        .clamp(1, MAX_GRID_YZ);
    let cost = |slabs: u64| -> f64 {
        let waves = (strips * slabs).div_ceil(capacity) as f64;
        let mut cost = waves * rows.div_ceil(slabs) as f64;
        if slabs > 1 {
            cost += 2.0 * (slabs * strips) as f64 / capacity as f64 + policy.t_reduce_cost as f64;
        }
        cost
    };
    let mut best = 1;
    let mut best_cost = cost(1);
    for slabs in 2..=max_slabs {
        let c = cost(slabs);
        if c < best_cost {
            (best, best_cost) = (slabs, c);
        }
    }
    let slab_rows = rows.div_ceil(best);
    // Recount so that no slab is empty (⌈rows / slab_rows⌉ ≤ slabs).
    let slabs = rows.div_ceil(slab_rows);
    Ok(TransposedGeometry {
        strips,
        slabs,
        slab_rows,
    })
}

/// Whether every row of an `cols`-column matrix at `base` starts on a
/// 16-byte boundary.
fn rows_aligned<T: MatvecElement>(base: u64, cols: u64) -> bool {
    base.is_multiple_of(16) && (cols * T::BYTES as u64).is_multiple_of(16)
}

/// One Tuned product: the matrix elements (row-major, `rows × cols`), x
/// and y, their lengths checked by the caller.
struct Problem<'a, T: MatvecElement> {
    a: DeviceView<'a, T>,
    x: DeviceView<'a, T>,
    y: DeviceViewMut<'a, T>,
    rows: u64,
    cols: u64,
}

pub(crate) fn launch<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    y: DeviceViewMut<'_, T>,
    op: Transpose,
) -> Result<()> {
    let problem = Problem {
        rows: a.rows() as u64,
        cols: a.cols() as u64,
        a: a.data(),
        x,
        y,
    };
    match op {
        Transpose::No => launch_n(gpu, policy, problem),
        Transpose::Yes => launch_t(gpu, policy, problem),
    }
}

/// The Tuned kernel `name` for `T`, and how many blocks of `block_threads`
/// the whole device holds at once (SMs × resident blocks per SM).
fn kernel_and_capacity<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    name: &str,
    block_threads: u32,
) -> Result<(Kernel, u64)> {
    let kernel = module::kernel::<T>(gpu, policy, name)?;
    let resident = kernel.resident_blocks_per_sm(block_threads, 0)?.max(1) as u64;
    Ok((kernel, gpu.info().sm_count as u64 * resident))
}

fn launch_n<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    problem: Problem<'_, T>,
) -> Result<()> {
    let (rows, cols) = (problem.rows, problem.cols);
    let lanes = 16 / T::BYTES as u64;
    let name = format!(
        "matvec_tuned_n{}",
        variant_suffix(policy.n_loads, policy.streaming)
    );
    let (kernel, capacity) = kernel_and_capacity::<T>(gpu, policy, &name, policy.n_block_threads)?;
    let target_blocks = capacity * policy.n_waves;
    let geometry = n_geometry(rows, cols, lanes, target_blocks, policy);
    // A block holds n_block_threads / tpr row groups; rows are consecutive
    // per block. Row blocks past 2^31 − 1 spill into gridDim.y (surplus
    // blocks find row ≥ rows and write nothing); column chunks are grid z.
    let (grid_x, grid_y, _) = spread_blocks(geometry.row_blocks)?;
    let config = LaunchConfig {
        grid: (grid_x, grid_y, geometry.chunks as u32),
        block: (policy.n_block_threads, 1, 1),
        shared_bytes: 0,
    };
    let tpr_log2 = geometry.threads_per_row.trailing_zeros();
    // SAFETY: (…, u32 tpr_log2, u64 chunk_cols) is the entry's tail; a has
    // rows·cols elements, x cols, y rows (checked by the caller); the
    // kernel writes part (chunk) `chunk < chunks` (grid z) of rows `row <
    // rows` and nothing else; every chunk starts below cols; vector loads
    // cover whole 16-byte-aligned vectors inside a row (the kernel peels
    // head and tail); the block size is the MATVEC_N_BLOCK the module was
    // compiled with.
    unsafe {
        launch_into_parts(
            gpu,
            policy,
            &kernel,
            config,
            problem,
            (rows, geometry.chunks),
            |args| {
                args.scalar(tpr_log2).scalar(geometry.chunk_cols);
            },
        )
    }
}

/// The launch both directions end with: `kernel` reads A and x and
/// computes `parts` partial vectors of `len` outputs (A·x: column chunks
/// of `rows` outputs; Aᵀ·x: row slabs of `cols`). One part goes straight
/// into y, rounded once; more go, as accumulators
/// ([`gpu_core::Element::Acc`]), to a temporary buffer that [`reduce`] adds
/// up into y, later on the same stream. `tail` appends the entry's
/// arguments after `(a, x, y, partial, rows, cols)`.
///
/// # Safety
///
/// 1. The entry's parameters are `(const T* a, const T* x, T* y, Acc*
///    partial, u64 rows, u64 cols)` followed by exactly what `tail`
///    appends.
/// 2. Launched with `config` (whose grid has `parts` parts), it writes
///    `y[i]` for every `i < len` when `parts` is 1, else
///    `partial[part·len + i]` for every `part < parts` and `i < len`, and
///    nothing else.
/// 3. `a` and `x` hold every element it reads; `y` holds `len` elements.
unsafe fn launch_into_parts<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    kernel: &Kernel,
    config: LaunchConfig,
    problem: Problem<'_, T>,
    (len, parts): (u64, u64),
    tail: impl Fn(&mut KernelArgs),
) -> Result<()> {
    let Problem {
        a,
        x,
        mut y,
        rows,
        cols,
    } = problem;
    let args_into = |y: &mut DeviceViewMut<'_, T>,
                     partial: Option<&mut DeviceViewMut<'_, T::Acc>>| {
        let mut args = KernelArgs::new();
        args.input(&a).input(&x).output(y);
        match partial {
            Some(partial) => args.output(partial),
            // A null `partial`: with one part the kernel never touches it.
            None => args.scalar(0u64),
        };
        args.scalar(rows).scalar(cols);
        tail(&mut args);
        args
    };
    if parts == 1 {
        let args = args_into(&mut y, None);
        // SAFETY: the caller's 1–3; with one part the kernel writes y[i]
        // for i < len only, and y holds len elements.
        return unsafe { gpu.launch(kernel, config, &args) };
    }
    // SAFETY: the kernel writes every element (each part × i, the caller's
    // 2) before the reduce kernel, later on the same stream, reads them.
    let mut partial = unsafe { DeviceBuffer::<T::Acc>::uninit(gpu, (parts * len) as usize)? };
    let args = args_into(&mut y, Some(&mut partial.view_mut()));
    // SAFETY: the caller's 1–3; partial has parts·len accumulators.
    unsafe { gpu.launch(kernel, config, &args)? };
    reduce(gpu, policy, &partial, y, len, parts)
}

/// y[i] = Σ_k partial[k·len + i] over `parts` partial vectors, in order,
/// in the accumulator, rounded once into y.
fn reduce<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    partial: &DeviceBuffer<T::Acc>,
    mut y: DeviceViewMut<'_, T>,
    len: u64,
    parts: u64,
) -> Result<()> {
    let kernel = module::kernel::<T>(gpu, policy, "matvec_tuned_t_reduce")?;
    let (config, _blocks) = grid_1d(len, REDUCE_BLOCK_THREADS, 1, 0)?;
    let mut args = KernelArgs::new();
    args.input(&partial.view())
        .output(&mut y)
        .scalar(len)
        .scalar(parts as u32);
    // SAFETY: (const Acc* partial, T* y, u64 cols, u32 slabs) matches the
    // entry; partial holds parts·len accumulators (parts ≤ 65 535 fits
    // u32), y len; the kernel drops threads past len. `partial` is freed
    // stream-ordered after this kernel.
    unsafe { gpu.launch(&kernel, config, &args) }
}

fn launch_t<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    problem: Problem<'_, T>,
) -> Result<()> {
    let (rows, cols) = (problem.rows, problem.cols);
    let vector = rows_aligned::<T>(problem.a.device_ptr(), cols);
    let lanes = if vector { 16 / T::BYTES as u64 } else { 1 };
    let name = format!(
        "matvec_tuned_t_partial_{}{}",
        if vector { "vec" } else { "scalar" },
        variant_suffix(policy.t_loads, policy.streaming)
    );
    let (kernel, capacity) =
        kernel_and_capacity::<T>(gpu, policy, &name, 32 * policy.t_block_rows)?;
    let geometry = t_geometry(rows, cols, lanes, capacity, policy)?;
    let config = LaunchConfig {
        grid: (geometry.strips as u32, geometry.slabs as u32, 1),
        block: (32, policy.t_block_rows, 1),
        shared_bytes: 0,
    };
    // SAFETY: (…, u64 slab_rows) is the entry's tail; a has rows·cols
    // elements, x rows, y cols (checked by the caller); the grid has
    // exactly `slabs` slabs of at most slab_rows rows each, and the kernel
    // writes part (slab) `slab < slabs` of columns `c < cols`. Vector loads
    // only when every row is 16-byte aligned and cols % lanes == 0.
    unsafe {
        launch_into_parts(
            gpu,
            policy,
            &kernel,
            config,
            problem,
            (cols, geometry.slabs),
            |args| {
                args.scalar(geometry.slab_rows);
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_width_grows_with_cols() {
        let t = MatvecPolicy::DEFAULT;
        assert_eq!(threads_per_row(1, 4, &t), 1);
        assert_eq!(threads_per_row(64, 4, &t), 1);
        assert_eq!(threads_per_row(65, 4, &t), 2);
        assert_eq!(threads_per_row(1000, 4, &t), 16);
        assert_eq!(threads_per_row(2048, 4, &t), 32);
        assert_eq!(threads_per_row(16384, 4, &t), 256);
        assert_eq!(threads_per_row(1 << 40, 4, &t), 256);
        assert_eq!(threads_per_row(16384, 2, &t), 256);
        for cols in [1u64, 3, 100, 997, 4096, 1 << 20] {
            let tpr = threads_per_row(cols, 4, &t);
            assert!(tpr.is_power_of_two() && tpr <= t.n_block_threads);
        }
    }

    #[test]
    fn row_geometry_splits_only_short_wide_matrices() {
        let t = MatvecPolicy::DEFAULT;
        let target = 132 * 6 * 2;
        // The goal shape: a block per row, no chunks.
        let g = n_geometry(16384, 16384, 4, target, &t);
        assert_eq!((g.threads_per_row, g.row_blocks, g.chunks), (256, 16384, 1));
        assert_eq!(g.chunk_cols, 16384);
        // A dot product of 16 M elements: 1024 chunks of 16384 columns.
        let g = n_geometry(1, 1 << 24, 4, target, &t);
        assert_eq!(g.chunks, 1024);
        assert_eq!(g.chunk_cols, 16384);
        // Narrow matrices are never split.
        let g = n_geometry(3, 100, 4, target, &t);
        assert_eq!(g.chunks, 1);
        for (rows, cols) in [
            (1u64, 1u64),
            (1, 999_999),
            (7, 4099),
            (100, 1 << 20),
            (5, 16387),
        ] {
            for lanes in [2u64, 4] {
                let g = n_geometry(rows, cols, lanes, target, &t);
                assert!(g.chunks >= 1 && g.chunks <= MAX_GRID_YZ);
                assert_eq!(g.chunk_cols % lanes, 0);
                assert!(g.chunks * g.chunk_cols >= cols, "{rows}×{cols}");
                assert!(
                    (g.chunks - 1) * g.chunk_cols < cols,
                    "empty chunk {rows}×{cols}"
                );
            }
        }
    }

    #[test]
    fn transposed_geometry_avoids_partial_waves() {
        let t = MatvecPolicy::DEFAULT;
        for capacity in [132u64 * 6, 132 * 8, 114 * 8] {
            let g = t_geometry(16384, 16384, 4, capacity, &t).unwrap();
            assert_eq!(g.strips, 128);
            assert!(g.slabs > 1);
            assert!(g.slabs * g.slab_rows >= 16384 && (g.slabs - 1) * g.slab_rows < 16384);
            // Within 3 % of a perfectly balanced grid, partials < 1 % of A.
            let blocks = g.strips * g.slabs;
            let waves = blocks.div_ceil(capacity) as f64;
            let balanced = 16384.0 * 128.0 / capacity as f64;
            let modelled = waves * g.slab_rows as f64;
            assert!(
                modelled <= 1.03 * balanced,
                "{capacity}: {g:?} {modelled} vs {balanced}"
            );
            assert!((g.slabs * 16384) as f64 / (16384.0 * 16384.0) < 0.01);
        }
        // Short matrices keep ≥ 16 rows per thread: one slab, no second pass.
        let g = t_geometry(100, 997, 1, 1056, &t).unwrap();
        assert_eq!((g.slabs, g.slab_rows), (1, 100));
        let g = t_geometry(1, 1, 1, 1056, &t).unwrap();
        assert_eq!((g.strips, g.slabs, g.slab_rows), (1, 1, 1));
        // Tall and thin: many slabs, bounded by the waves searched.
        let g = t_geometry(1 << 30, 1, 1, 1056, &t).unwrap();
        assert!(g.slabs > 1 && g.slabs <= 8 * 1056 && g.slabs * g.slab_rows >= 1 << 30);
        for rows in [1u64, 7, 127, 128, 129, 1000, 1021, 65536, 1 << 24] {
            for capacity in [1u64, 100, 1056, 1 << 20] {
                let g = t_geometry(rows, 64, 4, capacity, &t).unwrap();
                assert!(g.slabs >= 1 && g.slabs <= MAX_GRID_YZ);
                assert!(g.slabs * g.slab_rows >= rows);
                assert!((g.slabs - 1) * g.slab_rows < rows, "empty slab");
            }
        }
    }

    #[test]
    fn alignment_needs_base_and_row_pitch() {
        assert!(rows_aligned::<f32>(256, 4));
        assert!(!rows_aligned::<f32>(256, 3));
        assert!(!rows_aligned::<f32>(260, 4));
        assert!(rows_aligned::<f64>(16, 2));
        assert!(!rows_aligned::<f64>(8, 2));
    }
}
