//! The transpose kernel modules: one per element *size* (the kernels move
//! bits), holding every algorithm's entry, the Tuned scalar kernel at every
//! shape of [`TUNABLE_SHAPES`], for 2- and 4-byte elements the Tuned tall
//! kernel and, for 1- and 2-byte elements, the Tuned vector kernel; and the
//! lookup of their kernels in the context's kernel store.

use gpu_core::{Gpu, Kernel, ModuleSource, Result};

use super::algorithm::storage_name;
use super::policy::{TileOrder, TransposePolicy, TUNABLE_SHAPES};
use super::{naive, tiled, tuned};

/// The tile side of Tiled and TiledPadded (`TRANSPOSE_TILE`).
const TILE: u32 = tiled::TILE;

/// The module for elements of `elem_bytes` bytes: Naive, Tiled,
/// TiledPadded, Tuned's scalar kernel at every shape of
/// [`TUNABLE_SHAPES`] in both tile orders and, in both orders, the tall
/// kernel where [`tuned::has_tall_kernel`] and the vector kernel where
/// [`tuned::vector_shape`] has one.
pub(crate) fn module(elem_bytes: usize) -> Result<ModuleSource> {
    let e = storage_name(elem_bytes)?;
    let params = format!("const {e}* in, {e}* out, u64 rows, u64 cols");
    let mut module = ModuleSource::new(format!("transpose_{e}"))
        .define("TRANSPOSE_TILE", TILE)
        .source(parprims_kernels::TRANSPOSE_NAIVE)
        .source(parprims_kernels::TRANSPOSE_TILED)
        .source(parprims_kernels::TRANSPOSE_TUNED)
        .source(parprims_kernels::TRANSPOSE_TALL)
        .source(parprims_kernels::TRANSPOSE_VECTOR)
        .entry(
            format!("{}_{e}", naive::KERNEL),
            &params,
            &format!("transpose_naive<{e}>(in, out, rows, cols)"),
            Some(naive::BLOCK.0 * naive::BLOCK.1),
        )
        .entry(
            format!("{}_{e}", tiled::KERNEL),
            &params,
            &format!("transpose_tiled<{e}, 0>(in, out, rows, cols)"),
            Some(tiled::TILE * tiled::TILE),
        )
        .entry(
            format!("{}_{e}", tiled::KERNEL_PADDED),
            &params,
            &format!("transpose_tiled<{e}, 1>(in, out, rows, cols)"),
            Some(tiled::TILE * tiled::TILE),
        );
    for (tile, block_rows) in TUNABLE_SHAPES {
        let name = |order| {
            tuned::kernel_name(&TransposePolicy {
                tile,
                block_rows,
                order,
                ..TransposePolicy::DEFAULT
            })
        };
        module = in_both_orders(module, e, &params, tile * block_rows, name, |down| {
            format!("transpose_tuned<{e}, {tile}, {block_rows}, {down}>(in, out, rows, cols)")
        });
    }
    if tuned::has_tall_kernel(elem_bytes) {
        let (tile, tile_rows, block_rows) = (
            tuned::TALL_TILE,
            tuned::TALL_TILE_ROWS,
            tuned::TALL_BLOCK_ROWS,
        );
        module = in_both_orders(
            module,
            e,
            &params,
            tile * block_rows,
            tuned::tall_kernel_name,
            |down| {
                format!(
                    "transpose_tall<{e}, {tile}, {tile_rows}, {block_rows}, {down}>(in, out, rows, cols)"
                )
            },
        );
    }
    if let Some((tile, lanes_per_row, streaming)) = tuned::vector_shape(elem_bytes) {
        let threads = tuned::VECTOR_THREADS;
        module = in_both_orders(
            module,
            e,
            &params,
            threads,
            tuned::vector_kernel_name,
            |down| {
                format!(
                    "transpose_vector<{e}, {tile}, {threads}, {lanes_per_row}, {streaming}, {down}>(in, out, rows, cols)"
                )
            },
        );
    }
    Ok(module)
}

/// `module` with one entry per [`TileOrder`]: `{name(order)}_{storage}`,
/// its body `call(down)` (`down` true for [`TileOrder::DownColumns`]),
/// launched with at most `block_threads` threads.
fn in_both_orders(
    mut module: ModuleSource,
    storage: &str,
    params: &str,
    block_threads: u32,
    name: impl Fn(TileOrder) -> String,
    call: impl Fn(bool) -> String,
) -> ModuleSource {
    for order in TileOrder::ALL {
        module = module.entry(
            format!("{}_{storage}", name(order)),
            params,
            &call(order == TileOrder::DownColumns),
            Some(block_threads),
        );
    }
    module
}

/// The store key of [`module`]'s source: family and storage type (the
/// shapes compiled are fixed).
fn module_key(storage: &str) -> String {
    format!("linalg_transpose_{storage}")
}

/// The kernel `{base}_{storage}` for `elem_bytes`-byte elements, from the
/// context's kernel store (the module is built and loaded on first use).
pub(crate) fn kernel(gpu: &Gpu, elem_bytes: usize, base: &str) -> Result<Kernel> {
    let storage = storage_name(elem_bytes)?;
    let entry = format!("{base}_{storage}");
    gpu.stored_kernel(&module_key(storage), &entry, || {
        module(elem_bytes).expect("storage_name accepted this element size")
    })
}

/// Every transpose module (element sizes 1, 2, 4, 8).
pub(crate) fn catalog() -> Vec<ModuleSource> {
    [1, 2, 4, 8]
        .into_iter()
        .map(|bytes| module(bytes).expect("1, 2, 4 and 8 bytes have kernels"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_module_per_element_size() {
        let modules = catalog();
        let names: Vec<_> = modules.iter().map(|m| m.name().to_owned()).collect();
        assert_eq!(
            names,
            [
                "transpose_u8",
                "transpose_u16",
                "transpose_u32",
                "transpose_u64"
            ]
        );
        // Naive, Tiled, TiledPadded, the scalar shapes in both orders; the
        // tall kernel in both orders for 2- and 4-byte elements, the vector
        // kernel in both orders for 1- and 2-byte elements.
        let scalar = 3 + 2 * TUNABLE_SHAPES.len();
        let entries: Vec<_> = modules.iter().map(|m| m.entries().len()).collect();
        assert_eq!(entries, [scalar + 2, scalar + 4, scalar + 2, scalar]);
        assert!(module(3).is_err());
        assert_eq!(module_key("u32"), "linalg_transpose_u32");
    }
}
