//! Matrix transpose on the device: `out = inᵀ`.
//!
//! | algorithm | block | tile | global access | shared-memory banks |
//! |---|---|---|---|---|
//! | [`TransposeAlgorithm::Naive`] | 32 × 8 | — | reads coalesced, writes strided | — |
//! | [`TransposeAlgorithm::Tiled`] | 32 × 32 | 32 × 32 | both coalesced | 32-way conflicts on the column read (4-byte) |
//! | [`TransposeAlgorithm::TiledPadded`] | 32 × 32 | 32 × 33 | both coalesced | conflict-free for 4/8-byte, ≤ 2-way for bytes (the lab's gpu-sm) |
//! | [`TransposeAlgorithm::Tuned`] | 32 × 8 | 32 × 33, 4 rows per thread | both coalesced | as TiledPadded |
//!
//! Any `rows × cols` (1 × N and N × 1 included), element sizes 1, 4 and 8
//! bytes (`u8`, `i32`, `u32`, `f32`, `i64`, `u64`, `f64`): the kernels move
//! bits, so one module per element *size* serves every type of that size.
//! Bytes moved [`transpose_bytes_moved`] = 2·rows·cols·sizeof(T); one
//! launch; deterministic; not in place (the output must not overlap the
//! input). Launches in `transpose_naive.rs`, `transpose_tiled.rs`,
//! `transpose_tuned.rs`.

use gpu_core::launch::{grid_2d, LaunchConfig};
use gpu_core::{
    DeviceType, DeviceView, DeviceViewMut, Error, Gpu, KernelArgs, ModuleSource, Result,
};

use crate::matrix::{Matrix, MatrixView, MatrixViewMut};
use crate::transpose_tuned::TransposeTuning;

/// How to transpose. See the module table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TransposeAlgorithm {
    /// One thread per element; coalesced reads, strided writes.
    Naive,
    /// 32 × 32 shared tile without padding: coalesced both ways, but the
    /// column read from shared memory is a 32-way bank conflict (kept to
    /// show it).
    Tiled,
    /// 32 × 33 shared tile (the lab's gpu-sm): no bank conflicts for 4- and
    /// 8-byte elements (at most 2-way for bytes).
    TiledPadded,
    /// 32 × 8 threads per padded 32 × 32 tile, four rows per thread,
    /// branch-free interior tiles.
    #[default]
    Tuned,
}

impl TransposeAlgorithm {
    /// Every algorithm, slowest first.
    pub const ALL: [TransposeAlgorithm; 4] = [
        TransposeAlgorithm::Naive,
        TransposeAlgorithm::Tiled,
        TransposeAlgorithm::TiledPadded,
        TransposeAlgorithm::Tuned,
    ];

    /// A short name for tables and CSV rows.
    pub fn name(self) -> &'static str {
        match self {
            TransposeAlgorithm::Naive => "naive",
            TransposeAlgorithm::Tiled => "tiled",
            TransposeAlgorithm::TiledPadded => "tiled-padded",
            TransposeAlgorithm::Tuned => "tuned",
        }
    }

    /// The kernel's base name (entry = `{kernel}_{storage}`).
    fn kernel(self) -> &'static str {
        match self {
            TransposeAlgorithm::Naive => "transpose_naive",
            TransposeAlgorithm::Tiled => "transpose_tiled",
            TransposeAlgorithm::TiledPadded => "transpose_tiled_padded",
            TransposeAlgorithm::Tuned => "transpose_tuned_rows8",
        }
    }
}

impl std::fmt::Display for TransposeAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Global-memory bytes a transpose moves: every element read once and
/// written once, `2·rows·cols·elem_bytes`.
pub fn transpose_bytes_moved(rows: usize, cols: usize, elem_bytes: usize) -> u64 {
    2 * rows as u64 * cols as u64 * elem_bytes as u64
}

/// Checks that `output_shape` is `input_shape` transposed, and that the
/// element size has a kernel (1, 4 or 8 bytes). Pure, for CI.
pub fn check_transpose_shapes(
    input_shape: (usize, usize),
    output_shape: (usize, usize),
    elem_bytes: usize,
) -> Result<()> {
    let (rows, cols) = input_shape;
    if rows == 0 || cols == 0 {
        return Err(Error::Shape(format!(
            "transpose: input {rows}×{cols} has a zero dimension"
        )));
    }
    if output_shape != (cols, rows) {
        return Err(Error::Shape(format!(
            "transpose: a {rows}×{cols} input needs a {cols}×{rows} output, got {}×{}",
            output_shape.0, output_shape.1
        )));
    }
    storage_name(elem_bytes).map(|_| ())
}

/// The CUDA type the kernels copy for elements of `elem_bytes` bytes.
fn storage_name(elem_bytes: usize) -> Result<&'static str> {
    match elem_bytes {
        1 => Ok("u8"),
        4 => Ok("u32"),
        8 => Ok("u64"),
        other => Err(Error::Unsupported(format!(
            "transpose of {other}-byte elements (kernels exist for 1, 4 and 8 bytes)"
        ))),
    }
}

/// `output = inputᵀ`, enqueued on `gpu`'s stream. `input` is `rows × cols`,
/// `output` must be `cols × rows` and must not overlap `input`. Shape
/// errors, overlap and unsupported element sizes are typed errors, found
/// before anything is written.
pub fn transpose<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    algorithm: TransposeAlgorithm,
) -> Result<()> {
    run(
        gpu,
        input,
        output,
        algorithm,
        &crate::transpose_tuned::TUNED,
    )
}

/// [`TransposeAlgorithm::Tuned`] with another block height, for tuning
/// sweeps: `tuning.tile` must be 32 and `tuning.block_rows` one of
/// [`crate::TUNABLE_BLOCK_ROWS`] (compiled into every module). Same checks
/// and guarantees as [`transpose`].
pub fn transpose_tuned_with<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    output: MatrixViewMut<'_, T>,
    tuning: &TransposeTuning,
) -> Result<()> {
    crate::transpose_tuned::check_tuning(tuning)?;
    run(gpu, input, output, TransposeAlgorithm::Tuned, tuning)
}

fn run<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    mut output: MatrixViewMut<'_, T>,
    algorithm: TransposeAlgorithm,
    tuning: &TransposeTuning,
) -> Result<()> {
    check_transpose_shapes(input.shape(), output.shape(), T::BYTES)?;
    let mut out = output.data_mut();
    if input.data().overlaps(out.device_ptr(), out.bytes()) {
        return Err(Error::invalid(
            "output",
            "the output overlaps the input (transpose is not in place)",
        ));
    }
    let storage = storage_name(T::BYTES)?;
    let (rows, cols) = (input.rows() as u64, input.cols() as u64);
    let (config, kernel_name) = match algorithm {
        TransposeAlgorithm::Naive => (
            crate::transpose_naive::config(rows, cols)?,
            algorithm.kernel().to_owned(),
        ),
        TransposeAlgorithm::Tiled | TransposeAlgorithm::TiledPadded => (
            crate::transpose_tiled::config(rows, cols)?,
            algorithm.kernel().to_owned(),
        ),
        TransposeAlgorithm::Tuned => (
            crate::transpose_tuned::config(rows, cols, tuning)?,
            crate::transpose_tuned::kernel_name(tuning.block_rows),
        ),
    };
    let kernel = gpu.kernel(&module(T::BYTES)?, &format!("{kernel_name}_{storage}"))?;
    launch(gpu, &kernel, config, input.data(), &mut out, rows, cols)
}

fn launch<T: DeviceType>(
    gpu: &Gpu,
    kernel: &gpu_core::Kernel,
    config: LaunchConfig,
    input: DeviceView<'_, T>,
    output: &mut DeviceViewMut<'_, T>,
    rows: u64,
    cols: u64,
) -> Result<()> {
    let mut args = KernelArgs::new();
    args.input(&input).output(output).scalar(rows).scalar(cols);
    // SAFETY: every transpose entry is (const E* in, E* out, u64 rows, u64
    // cols) with E the same size as T; in holds rows·cols elements (the
    // view's shape was checked at construction), out rows·cols too (its
    // shape is cols × rows, checked above); the kernels touch only
    // in[r·cols + c] and out[c·rows + r] for r < rows, c < cols; the block
    // shape in `config` is the one the entry's kernel assumes.
    unsafe { gpu.launch(kernel, config, &args) }
}

/// [`transpose`] into a new `cols × rows` matrix.
pub fn transpose_new<T: DeviceType>(
    gpu: &Gpu,
    input: MatrixView<'_, T>,
    algorithm: TransposeAlgorithm,
) -> Result<Matrix<T>> {
    let (rows, cols) = input.shape();
    check_transpose_shapes((rows, cols), (cols, rows), T::BYTES)?;
    // SAFETY: the transpose writes every element of the output before
    // anything reads it; on error the buffer is dropped unread.
    let buffer = unsafe { gpu_core::DeviceBuffer::<T>::uninit(gpu, rows * cols)? };
    let mut output = Matrix::from_buffer(cols, rows, buffer)?;
    transpose(gpu, input, output.view_mut(), algorithm)?;
    Ok(output)
}

/// The module for elements of `elem_bytes` bytes: Naive, Tiled,
/// TiledPadded and Tuned at every block height of
/// [`crate::TUNABLE_BLOCK_ROWS`].
pub(crate) fn module(elem_bytes: usize) -> Result<ModuleSource> {
    let e = storage_name(elem_bytes)?;
    let tile = crate::transpose_tuned::TUNED.tile;
    let params = format!("const {e}* in, {e}* out, u64 rows, u64 cols");
    let mut module = ModuleSource::new(format!("transpose_{e}"))
        .define("TRANSPOSE_TILE", tile)
        .source(parprims_kernels::TRANSPOSE_NAIVE)
        .source(parprims_kernels::TRANSPOSE_TILED)
        .source(parprims_kernels::TRANSPOSE_TUNED)
        .entry(
            format!("transpose_naive_{e}"),
            &params,
            &format!("transpose_naive<{e}>(in, out, rows, cols)"),
            Some(crate::transpose_naive::BLOCK.0 * crate::transpose_naive::BLOCK.1),
        )
        .entry(
            format!("transpose_tiled_{e}"),
            &params,
            &format!("transpose_tiled<{e}, 0>(in, out, rows, cols)"),
            Some(1024),
        )
        .entry(
            format!("transpose_tiled_padded_{e}"),
            &params,
            &format!("transpose_tiled<{e}, 1>(in, out, rows, cols)"),
            Some(1024),
        );
    for block_rows in crate::transpose_tuned::TUNABLE_BLOCK_ROWS {
        module = module.entry(
            format!("{}_{e}", crate::transpose_tuned::kernel_name(block_rows)),
            &params,
            &format!("transpose_tuned<{e}, {block_rows}>(in, out, rows, cols)"),
            Some(tile * block_rows),
        );
    }
    Ok(module)
}

/// Every transpose module (element sizes 1, 4, 8).
pub(crate) fn catalog() -> Vec<ModuleSource> {
    [1, 4, 8]
        .into_iter()
        .map(|bytes| module(bytes).expect("1, 4 and 8 bytes have kernels"))
        .collect()
}

/// 2-D grid over 32 × 32 tiles for `block` threads of `per_thread` items
/// (shared by the tiled kernels): x over column tiles, y (then z) over
/// row tiles.
pub(crate) fn tile_grid(
    rows: u64,
    cols: u64,
    block: (u32, u32),
    per_thread: (u32, u32),
) -> Result<LaunchConfig> {
    grid_2d(rows, cols, block, per_thread, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_must_be_transposed() {
        assert!(check_transpose_shapes((3, 5), (5, 3), 4).is_ok());
        assert!(check_transpose_shapes((1, 1), (1, 1), 8).is_ok());
        assert!(check_transpose_shapes((1, 7), (7, 1), 1).is_ok());
        assert!(matches!(
            check_transpose_shapes((3, 5), (3, 5), 4),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            check_transpose_shapes((0, 5), (5, 0), 4),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            check_transpose_shapes((3, 5), (5, 3), 2),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn bytes_and_names() {
        assert_eq!(transpose_bytes_moved(16384, 16384, 4), 8 * 16384 * 16384);
        assert_eq!(TransposeAlgorithm::default(), TransposeAlgorithm::Tuned);
        let names: Vec<_> = TransposeAlgorithm::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["naive", "tiled", "tiled-padded", "tuned"]);
    }

    #[test]
    fn one_module_per_element_size() {
        let modules = catalog();
        let names: Vec<_> = modules.iter().map(|m| m.name().to_owned()).collect();
        assert_eq!(names, ["transpose_u8", "transpose_u32", "transpose_u64"]);
        for m in &modules {
            assert_eq!(m.entries().len(), 6);
        }
        assert!(module(2).is_err());
    }
}
