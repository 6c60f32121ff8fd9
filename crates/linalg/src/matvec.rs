//! Matrix–vector multiply on the device: `y = A·x` and `y = Aᵀ·x`.
//!
//! | algorithm | A·x | Aᵀ·x | launches |
//! |---|---|---|---|
//! | [`MatvecAlgorithm::Global`] | thread per row (uncoalesced, the lab's gpu-gm) | thread per column (coalesced) | 1 |
//! | [`MatvecAlgorithm::SharedTiled`] | as Global, x staged in shared tiles (the lab's gpu-sm) | same, over rows | 1 |
//! | [`MatvecAlgorithm::Tuned`] | thread group per row, 16-byte loads, shuffle reduction | column-blocked strips × row slabs, two-pass | 1 (A·x), 1–2 (Aᵀ·x) |
//!
//! Every algorithm reads A once: [`matvec_bytes_moved`] is
//! `(rows·cols + rows + cols)·sizeof(T)` for both directions. Every
//! algorithm is deterministic (fixed summation order for a given shape and
//! device); float results differ between algorithms in the last bits.
//! Integers wrap, identically on GPU and CPU.
//!
//! This file holds the public API, the validation (pure functions, tested
//! without a GPU), the kernel modules and the store of loaded kernels
//! ([`kernel`]); the launches live in `matvec_global.rs`, `matvec_tiled.rs`
//! and `matvec_tuned.rs`.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

use gpu_core::launch::MAX_BLOCK_THREADS;
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, Kernel, ModuleSource, Result,
};

use crate::matrix::MatrixView;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
}

/// Element types matvec supports: `f32`, `f64` and `i32` (wrapping).
pub trait MatvecElement: Element + sealed::Sealed {
    /// Machine epsilon for floats (`T::EPSILON` as `f64`), 0 for integers.
    const EPSILON: f64;
}
impl MatvecElement for f32 {
    const EPSILON: f64 = f32::EPSILON as f64;
}
impl MatvecElement for f64 {
    const EPSILON: f64 = f64::EPSILON;
}
impl MatvecElement for i32 {
    const EPSILON: f64 = 0.0;
}

/// Which product: `y = A·x` or `y = Aᵀ·x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transpose {
    /// `y = A·x`: x has `cols` elements, y has `rows`.
    #[default]
    No,
    /// `y = Aᵀ·x`: x has `rows` elements, y has `cols`.
    Yes,
}

impl Transpose {
    /// Length of x for a `rows × cols` matrix.
    pub fn input_len(self, rows: usize, cols: usize) -> usize {
        match self {
            Transpose::No => cols,
            Transpose::Yes => rows,
        }
    }
    /// Length of y for a `rows × cols` matrix.
    pub fn output_len(self, rows: usize, cols: usize) -> usize {
        match self {
            Transpose::No => rows,
            Transpose::Yes => cols,
        }
    }
    /// Index of y that element `(r, c)` of A contributes to.
    pub fn output_index(self, r: usize, c: usize) -> usize {
        match self {
            Transpose::No => r,
            Transpose::Yes => c,
        }
    }
    /// Index of x that element `(r, c)` of A is multiplied by.
    pub fn reduce_index(self, r: usize, c: usize) -> usize {
        match self {
            Transpose::No => c,
            Transpose::Yes => r,
        }
    }
    /// `"Ax"` or `"ATx"`, for tables.
    pub fn name(self) -> &'static str {
        match self {
            Transpose::No => "Ax",
            Transpose::Yes => "ATx",
        }
    }
}

/// How to compute the product. See the module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MatvecAlgorithm {
    /// One thread per output element, A and x straight from global memory
    /// (the lab's gpu-gm). A·x reads A uncoalesced.
    Global,
    /// One thread per output element, x staged through shared memory
    /// `tile` elements at a time by a block of `tile` threads (the lab's
    /// gpu-sm). `tile` is 1 to 1024.
    SharedTiled {
        /// Threads per block = x elements per shared tile.
        tile: u32,
    },
    /// The fast kernels: A·x by a power-of-two group of threads per row
    /// with 16-byte loads and a shuffle reduction; Aᵀ·x column-blocked
    /// with partial sums per row slab and a deterministic second pass.
    #[default]
    Tuned,
}

impl MatvecAlgorithm {
    /// The lab's shared-memory tile width (one block of 256 threads).
    pub const DEFAULT_TILE: u32 = 256;

    /// Every algorithm, with the default tile for `SharedTiled`.
    pub fn all() -> [MatvecAlgorithm; 3] {
        [
            MatvecAlgorithm::Global,
            MatvecAlgorithm::SharedTiled {
                tile: Self::DEFAULT_TILE,
            },
            MatvecAlgorithm::Tuned,
        ]
    }

    /// A short name for tables and CSV rows (`global`, `shared-tiled-256`,
    /// `tuned`).
    pub fn name(self) -> String {
        match self {
            MatvecAlgorithm::Global => "global".to_owned(),
            MatvecAlgorithm::SharedTiled { tile } => format!("shared-tiled-{tile}"),
            MatvecAlgorithm::Tuned => "tuned".to_owned(),
        }
    }

    /// Checks the algorithm's parameters (the tile width).
    pub fn validate(self) -> Result<()> {
        match self {
            MatvecAlgorithm::SharedTiled { tile } if tile == 0 || tile > MAX_BLOCK_THREADS => {
                Err(Error::invalid(
                    "tile",
                    format!("{tile}: the shared tile width must be 1 to {MAX_BLOCK_THREADS}"),
                ))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for MatvecAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Global-memory bytes every matvec algorithm must move: A once, x once, y
/// once: `(rows·cols + rows + cols)·elem_bytes`. The GB/s of the benchmark
/// are computed from this figure (extra traffic an algorithm makes, such as
/// Tuned Aᵀ·x's slab partials, is not counted).
pub fn matvec_bytes_moved(rows: usize, cols: usize, elem_bytes: usize) -> u64 {
    (rows as u64 * cols as u64 + rows as u64 + cols as u64) * elem_bytes as u64
}

/// Checks the vector lengths against the matrix shape (pure; the shape
/// itself was checked when the matrix view was made).
pub fn check_matvec_lengths(
    rows: usize,
    cols: usize,
    x_len: usize,
    y_len: usize,
    op: Transpose,
) -> Result<()> {
    if rows == 0 || cols == 0 {
        return Err(Error::Shape(format!(
            "matvec: {rows}×{cols} has a zero dimension"
        )));
    }
    Error::check_len("x (matvec input vector)", op.input_len(rows, cols), x_len)?;
    Error::check_len("y (matvec output vector)", op.output_len(rows, cols), y_len)
}

/// Everything checked before `matvec` touches the device: shapes, lengths,
/// the algorithm's parameters, and that y overlaps neither A nor x.
fn validate<T: MatvecElement>(
    a: &MatrixView<'_, T>,
    x: &DeviceView<'_, T>,
    y: &DeviceViewMut<'_, T>,
    op: Transpose,
    algorithm: MatvecAlgorithm,
) -> Result<()> {
    check_matvec_lengths(a.rows(), a.cols(), x.len(), y.len(), op)?;
    algorithm.validate()?;
    if a.data().overlaps(y.device_ptr(), y.bytes()) || x.overlaps(y.device_ptr(), y.bytes()) {
        return Err(Error::invalid(
            "y",
            "the output vector overlaps the matrix or the input vector (matvec is not in place)",
        ));
    }
    Ok(())
}

/// `y = A·x` (`op = Transpose::No`) or `y = Aᵀ·x` (`op = Transpose::Yes`),
/// enqueued on `gpu`'s stream.
///
/// `a` is row-major `rows × cols`; x has `cols` (A·x) or `rows` (Aᵀ·x)
/// elements, y the other. Every argument is checked first: a shape or
/// length mismatch, an overlap of y with A or x, or a bad tile width is a
/// typed error and nothing is written.
pub fn matvec<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    mut y: DeviceViewMut<'_, T>,
    op: Transpose,
    algorithm: MatvecAlgorithm,
) -> Result<()> {
    validate(&a, &x, &y, op, algorithm)?;
    let shape = (a.rows() as u64, a.cols() as u64);
    match algorithm {
        MatvecAlgorithm::Global => {
            crate::matvec_global::launch(gpu, a.data(), x, y.reborrow(), shape, op)
        }
        MatvecAlgorithm::SharedTiled { tile } => {
            crate::matvec_tiled::launch(gpu, a.data(), x, y.reborrow(), shape, op, tile)
        }
        MatvecAlgorithm::Tuned => crate::matvec_tuned::launch(
            gpu,
            a.data(),
            x,
            y.reborrow(),
            shape,
            op,
            &crate::matvec_tuned::TUNED,
        ),
    }
}

/// [`MatvecAlgorithm::Tuned`] with another [`crate::MatvecTuning`], for tuning
/// sweeps: only the run-time constants (`n_vectors_per_thread`, `n_waves`,
/// `t_waves`, `t_min_rows_per_thread`) may differ from [`crate::MATVEC_TUNING`]; the
/// block shapes are compiled in. Same checks and guarantees as [`matvec`].
pub fn matvec_tuned_with<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    mut y: DeviceViewMut<'_, T>,
    op: Transpose,
    tuning: &crate::MatvecTuning,
) -> Result<()> {
    validate(&a, &x, &y, op, MatvecAlgorithm::Tuned)?;
    crate::matvec_tuned::check_tuning(tuning)?;
    let shape = (a.rows() as u64, a.cols() as u64);
    crate::matvec_tuned::launch(gpu, a.data(), x, y.reborrow(), shape, op, tuning)
}

/// [`matvec`] into a new device vector.
pub fn matvec_new<T: MatvecElement>(
    gpu: &Gpu,
    a: MatrixView<'_, T>,
    x: DeviceView<'_, T>,
    op: Transpose,
    algorithm: MatvecAlgorithm,
) -> Result<DeviceBuffer<T>> {
    let y_len = op.output_len(a.rows(), a.cols());
    check_matvec_lengths(a.rows(), a.cols(), x.len(), y_len, op)?;
    algorithm.validate()?;
    // SAFETY: matvec writes every element of y (one result per output) before
    // anything reads it; on error the buffer is dropped unread.
    let mut y = unsafe { DeviceBuffer::<T>::uninit(gpu, y_len)? };
    matvec(gpu, a, x, y.view_mut(), op, algorithm)?;
    Ok(y)
}

/// The kernel module for element type `T`: every matvec entry point of
/// every algorithm and Tuned variant (one NVRTC compile per type).
pub(crate) fn module<T: MatvecElement>() -> ModuleSource {
    use crate::matvec_tuned::{variant_suffix, TUNABLE_LOADS};
    let tuning = crate::matvec_tuned::TUNED;
    let t = T::CUDA_TYPE;
    let params = format!("const {t}* a, const {t}* x, {t}* y, u64 rows, u64 cols");
    let args = "a, x, y, rows, cols";
    let mut module = ModuleSource::new(format!("matvec_{}", T::SUFFIX))
        .define("MATVEC_N_BLOCK", tuning.n_block_threads)
        .define("MATVEC_T_ROWS", tuning.t_block_rows)
        .source(parprims_kernels::MATVEC_COMMON)
        .source(parprims_kernels::MATVEC_GLOBAL)
        .source(parprims_kernels::MATVEC_TILED)
        .source(parprims_kernels::MATVEC_TUNED)
        .entry(
            entry::<T>("matvec_global_n"),
            &params,
            &format!("matvec_global_n<{t}>({args})"),
            Some(crate::matvec_global::BLOCK_THREADS),
        )
        .entry(
            entry::<T>("matvec_global_t"),
            &params,
            &format!("matvec_global_t<{t}>({args})"),
            Some(crate::matvec_global::BLOCK_THREADS),
        )
        .entry(
            entry::<T>("matvec_tiled_n"),
            &params,
            &format!("matvec_tiled_n<{t}>({args})"),
            Some(MAX_BLOCK_THREADS),
        )
        .entry(
            entry::<T>("matvec_tiled_t"),
            &params,
            &format!("matvec_tiled_t<{t}>({args})"),
            Some(MAX_BLOCK_THREADS),
        );
    // The Tuned kernels, one entry per (loads in flight, streaming hint)
    // variant; the default variant's entries keep the plain names.
    let partial_params =
        format!("const {t}* a, const {t}* x, {t}* partial, u64 rows, u64 cols, u64 slab_rows");
    for loads in TUNABLE_LOADS {
        for streaming in [false, true] {
            let suffix = variant_suffix(loads, streaming);
            module = module
                .entry(
                    entry::<T>(&format!("matvec_tuned_n{suffix}")),
                    &format!("{params}, u32 tpr_log2, u64 chunk_cols"),
                    &format!(
                        "matvec_tuned_n<{t}, {loads}, {streaming}>({args}, tpr_log2, chunk_cols)"
                    ),
                    Some(tuning.n_block_threads),
                )
                .entry(
                    entry::<T>(&format!("matvec_tuned_t_partial_vec{suffix}")),
                    &partial_params,
                    &format!(
                        "matvec_tuned_t_partial<{t}, true, {loads}, {streaming}>\
                         (a, x, partial, rows, cols, slab_rows)"
                    ),
                    Some(32 * tuning.t_block_rows),
                )
                .entry(
                    entry::<T>(&format!("matvec_tuned_t_partial_scalar{suffix}")),
                    &partial_params,
                    &format!(
                        "matvec_tuned_t_partial<{t}, false, {loads}, {streaming}>\
                         (a, x, partial, rows, cols, slab_rows)"
                    ),
                    Some(32 * tuning.t_block_rows),
                );
        }
    }
    module.entry(
        entry::<T>("matvec_tuned_t_reduce"),
        &format!("const {t}* partial, {t}* y, u64 cols, u32 slabs"),
        &format!("matvec_tuned_t_reduce<{t}>(partial, y, cols, slabs)"),
        Some(crate::matvec_tuned::REDUCE_BLOCK_THREADS),
    )
}

/// One loaded kernel in the store: the context it was loaded on (held, so
/// the address cannot be reused while the entry lives), its entry name, and
/// the occupancies asked of it so far (block threads, resident blocks/SM).
struct StoredKernel {
    context: Arc<dyn Any + Send + Sync>,
    entry: String,
    kernel: Kernel,
    resident: Vec<(u32, u32)>,
}

/// Loaded matvec kernels, process-wide. `Gpu::kernel` rebuilds and hashes the
/// module source (about 25 KB) on every call, tens of microseconds of host
/// time that the GPU waits through between back-to-back matvecs (and that
/// CUDA-event timings count); a lookup here costs well under a microsecond.
static KERNELS: Mutex<Vec<StoredKernel>> = Mutex::new(Vec::new());

/// Entries kept before those of other contexts are dropped (a process uses
/// at most 3 types × 15 entries on one context).
const STORED_KERNELS: usize = 64;

fn stored_kernels() -> MutexGuard<'static, Vec<StoredKernel>> {
    // A panic while holding the lock cannot leave the Vec half-updated
    // (push and retain complete or unwind before touching it).
    KERNELS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn same_context(stored: &StoredKernel, gpu: &Gpu) -> bool {
    std::ptr::eq(
        Arc::as_ptr(&stored.context) as *const u8,
        Arc::as_ptr(gpu.cudarc_context()) as *const u8,
    )
}

/// The kernel `{name}_{type}` of [`module`] on `gpu`'s context, and, when
/// `occupancy_threads` is given, its resident blocks per SM at that block
/// size without dynamic shared memory (else 0). Loaded (compiled on first
/// use) through `Gpu::kernel` once per context and entry, then served from
/// [`KERNELS`].
pub(crate) fn kernel<T: MatvecElement>(
    gpu: &Gpu,
    name: &str,
    occupancy_threads: Option<u32>,
) -> Result<(Kernel, u32)> {
    let entry = entry::<T>(name);
    {
        let store = stored_kernels();
        if let Some(stored) = store
            .iter()
            .find(|s| s.entry == entry && same_context(s, gpu))
        {
            match occupancy_threads {
                None => return Ok((stored.kernel.clone(), 0)),
                Some(threads) => {
                    if let Some(&(_, resident)) = stored.resident.iter().find(|r| r.0 == threads) {
                        return Ok((stored.kernel.clone(), resident));
                    }
                }
            }
        }
    }
    // Not stored: load without holding the lock (a first compile takes
    // seconds; Gpu::module serialises loading per context itself).
    let loaded = gpu.kernel(&module::<T>(), &entry)?;
    let resident = match occupancy_threads {
        Some(threads) => loaded.resident_blocks_per_sm(threads, 0)?,
        None => 0,
    };
    let mut store = stored_kernels();
    if store.len() >= STORED_KERNELS {
        store.retain(|s| same_context(s, gpu));
        if store.len() >= STORED_KERNELS {
            store.clear();
        }
    }
    match store
        .iter_mut()
        .find(|s| s.entry == entry && same_context(s, gpu))
    {
        Some(stored) => {
            if let Some(threads) = occupancy_threads {
                if !stored.resident.iter().any(|r| r.0 == threads) {
                    stored.resident.push((threads, resident));
                }
            }
        }
        None => {
            let context: Arc<dyn Any + Send + Sync> = gpu.cudarc_context().clone();
            store.push(StoredKernel {
                context,
                entry,
                kernel: loaded.clone(),
                resident: occupancy_threads
                    .map(|threads| vec![(threads, resident)])
                    .unwrap_or_default(),
            });
        }
    }
    Ok((loaded, resident))
}

/// Entry name `{kernel}_{type}`.
pub(crate) fn entry<T: MatvecElement>(kernel: &str) -> String {
    format!("{kernel}_{}", T::SUFFIX)
}

/// Every matvec module (one per element type).
pub(crate) fn catalog() -> Vec<ModuleSource> {
    vec![module::<f32>(), module::<f64>(), module::<i32>()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_follow_the_direction() {
        assert!(check_matvec_lengths(3, 5, 5, 3, Transpose::No).is_ok());
        assert!(check_matvec_lengths(3, 5, 3, 5, Transpose::Yes).is_ok());
        assert!(matches!(
            check_matvec_lengths(3, 5, 3, 3, Transpose::No),
            Err(Error::LengthMismatch {
                expected: 5,
                actual: 3,
                ..
            })
        ));
        assert!(matches!(
            check_matvec_lengths(3, 5, 5, 5, Transpose::No),
            Err(Error::LengthMismatch {
                expected: 3,
                actual: 5,
                ..
            })
        ));
        assert!(check_matvec_lengths(3, 5, 5, 3, Transpose::Yes).is_err());
        assert!(matches!(
            check_matvec_lengths(0, 5, 5, 0, Transpose::No),
            Err(Error::Shape(_))
        ));
    }

    #[test]
    fn tile_widths_are_checked() {
        for tile in [1, 32, 33, 256, 1024] {
            assert!(MatvecAlgorithm::SharedTiled { tile }.validate().is_ok());
        }
        for tile in [0, 1025, u32::MAX] {
            assert!(matches!(
                MatvecAlgorithm::SharedTiled { tile }.validate(),
                Err(Error::InvalidArgument { name: "tile", .. })
            ));
        }
        assert!(MatvecAlgorithm::Global.validate().is_ok());
        assert_eq!(MatvecAlgorithm::default(), MatvecAlgorithm::Tuned);
    }

    #[test]
    fn bytes_moved_counts_matrix_and_both_vectors() {
        assert_eq!(
            matvec_bytes_moved(16384, 16384, 4),
            4 * (16384 * 16384 + 2 * 16384)
        );
        assert_eq!(matvec_bytes_moved(1, 1, 8), 24);
        // 64-bit arithmetic: no overflow past 2^32 elements.
        assert_eq!(
            matvec_bytes_moved(1 << 20, 1 << 20, 8),
            8 * ((1u64 << 40) + (2 << 20))
        );
    }

    #[test]
    fn direction_indices() {
        assert_eq!(Transpose::No.output_index(2, 7), 2);
        assert_eq!(Transpose::No.reduce_index(2, 7), 7);
        assert_eq!(Transpose::Yes.output_index(2, 7), 7);
        assert_eq!(Transpose::Yes.reduce_index(2, 7), 2);
    }

    #[test]
    fn modules_name_every_entry() {
        let m = module::<f32>();
        assert_eq!(m.name(), "matvec_f32");
        // 4 Global/SharedTiled + 4 variants × 3 Tuned + the reduction.
        assert_eq!(m.entries().len(), 17);
        assert!(m.entries().iter().any(|e| e == "matvec_tuned_n_f32"));
        assert!(m
            .entries()
            .iter()
            .any(|e| e == "matvec_tuned_t_partial_vec_u8_cs_f32"));
        assert!(m.entries().iter().all(|e| e.ends_with("_f32")));
        let names: Vec<_> = catalog().iter().map(|m| m.name().to_owned()).collect();
        assert_eq!(names, ["matvec_f32", "matvec_f64", "matvec_i32"]);
    }
}
