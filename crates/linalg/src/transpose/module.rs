//! The transpose kernel modules: one per element *size* (the kernels move
//! bits), holding every algorithm's entry and the Tuned kernel at every
//! block height of [`TUNABLE_BLOCK_ROWS`]; and the lookup of their kernels
//! in the context's kernel store.

use gpu_core::{Gpu, Kernel, ModuleSource, Result};

use super::algorithm::storage_name;
use super::policy::{TransposePolicy, TUNABLE_BLOCK_ROWS};
use super::{naive, tiled, tuned};

/// The tile side compiled into every module (`TRANSPOSE_TILE`).
const TILE: u32 = TransposePolicy::DEFAULT.tile;

/// The module for elements of `elem_bytes` bytes: Naive, Tiled,
/// TiledPadded and Tuned at every block height of [`TUNABLE_BLOCK_ROWS`].
pub(crate) fn module(elem_bytes: usize) -> Result<ModuleSource> {
    let e = storage_name(elem_bytes)?;
    let params = format!("const {e}* in, {e}* out, u64 rows, u64 cols");
    let mut module = ModuleSource::new(format!("transpose_{e}"))
        .define("TRANSPOSE_TILE", TILE)
        .source(parprims_kernels::TRANSPOSE_NAIVE)
        .source(parprims_kernels::TRANSPOSE_TILED)
        .source(parprims_kernels::TRANSPOSE_TUNED)
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
    for block_rows in TUNABLE_BLOCK_ROWS {
        module = module.entry(
            format!("{}_{e}", tuned::kernel_name(block_rows)),
            &params,
            &format!("transpose_tuned<{e}, {block_rows}>(in, out, rows, cols)"),
            Some(TILE * block_rows),
        );
    }
    Ok(module)
}

/// The store key of [`module`]'s source: family, storage type and the
/// compiled tile (the block heights compiled are fixed).
fn module_key(storage: &str) -> String {
    format!("linalg_transpose_{storage}_t{TILE}")
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
        for m in &modules {
            assert_eq!(m.entries().len(), 6);
        }
        assert!(module(3).is_err());
        assert_eq!(module_key("u32"), "linalg_transpose_u32_t32");
    }
}
