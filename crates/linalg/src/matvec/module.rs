//! The matvec kernel modules: one per element type, holding every
//! algorithm's entries and every compiled Tuned variant (one NVRTC compile
//! per type); their entry names; and the lookup of their kernels in the
//! context's kernel store.

use gpu_core::launch::MAX_BLOCK_THREADS;
use gpu_core::{bf16, f16, DeviceType, Gpu, Kernel, ModuleSource, Result};

use super::algorithm::MatvecElement;
use super::policy::{MatvecPolicy, TUNABLE_LOADS};

/// Threads per block of the Global kernels (not yet measured on the H100:
/// the lab's baseline only needs enough warps per SM to hide latency).
pub(crate) const GLOBAL_BLOCK_THREADS: u32 = 256;

/// Threads per block of the ordered reduction of partial vectors (Tuned
/// Aᵀ·x slabs, A·x column chunks).
pub(crate) const REDUCE_BLOCK_THREADS: u32 = 256;

/// Entry name `{kernel}_{type}`.
pub(crate) fn entry<T: MatvecElement>(kernel: &str) -> String {
    format!("{kernel}_{}", T::SUFFIX)
}

/// Entry-name suffix of a Tuned variant: empty for the original kernels (4
/// loads, no hint), `_u8` for 8 loads, `_cs` for the streaming hint.
pub(crate) fn variant_suffix(loads: u32, streaming: bool) -> String {
    let mut suffix = String::new();
    if loads != 4 {
        suffix.push_str(&format!("_u{loads}"));
    }
    if streaming {
        suffix.push_str("_cs");
    }
    suffix
}

/// The kernel module for element type `T` with `policy`'s compiled-in
/// block shapes: every matvec entry point of every algorithm and Tuned
/// variant.
pub(crate) fn module<T: MatvecElement>(policy: &MatvecPolicy) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let acc = <T::Acc as DeviceType>::CUDA_TYPE;
    let params = format!("const {t}* a, const {t}* x, {t}* y, u64 rows, u64 cols");
    let args = "a, x, y, rows, cols";
    let mut module = ModuleSource::new(format!("matvec_{}", T::SUFFIX))
        .define("MATVEC_N_BLOCK", policy.n_block_threads)
        .define("MATVEC_T_ROWS", policy.t_block_rows)
        .source(parprims_kernels::MATVEC_COMMON)
        .source(parprims_kernels::MATVEC_GLOBAL)
        .source(parprims_kernels::MATVEC_TILED)
        .source(parprims_kernels::MATVEC_TUNED)
        .entry(
            entry::<T>("matvec_global_n"),
            &params,
            &format!("matvec_global_n<{t}>({args})"),
            Some(GLOBAL_BLOCK_THREADS),
        )
        .entry(
            entry::<T>("matvec_global_t"),
            &params,
            &format!("matvec_global_t<{t}>({args})"),
            Some(GLOBAL_BLOCK_THREADS),
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
    // variant; the default variant's entries keep the plain names. They
    // write y, or with several parts the accumulator partials.
    let tuned_params =
        format!("const {t}* a, const {t}* x, {t}* y, {acc}* partial, u64 rows, u64 cols");
    let tuned_args = "a, x, y, partial, rows, cols";
    for loads in TUNABLE_LOADS {
        for streaming in [false, true] {
            let suffix = variant_suffix(loads, streaming);
            module = module
                .entry(
                    entry::<T>(&format!("matvec_tuned_n{suffix}")),
                    &format!("{tuned_params}, u32 tpr_log2, u64 chunk_cols"),
                    &format!(
                        "matvec_tuned_n<{t}, {loads}, {streaming}>\
                         ({tuned_args}, tpr_log2, chunk_cols)"
                    ),
                    Some(policy.n_block_threads),
                )
                .entry(
                    entry::<T>(&format!("matvec_tuned_t_partial_vec{suffix}")),
                    &format!("{tuned_params}, u64 slab_rows"),
                    &format!(
                        "matvec_tuned_t_partial<{t}, true, {loads}, {streaming}>\
                         ({tuned_args}, slab_rows)"
                    ),
                    Some(32 * policy.t_block_rows),
                )
                .entry(
                    entry::<T>(&format!("matvec_tuned_t_partial_scalar{suffix}")),
                    &format!("{tuned_params}, u64 slab_rows"),
                    &format!(
                        "matvec_tuned_t_partial<{t}, false, {loads}, {streaming}>\
                         ({tuned_args}, slab_rows)"
                    ),
                    Some(32 * policy.t_block_rows),
                );
        }
    }
    module.entry(
        entry::<T>("matvec_tuned_t_reduce"),
        &format!("const {acc}* partial, {t}* y, u64 cols, u32 slabs"),
        &format!("matvec_tuned_t_reduce<{t}>(partial, y, cols, slabs)"),
        Some(REDUCE_BLOCK_THREADS),
    )
}

/// The store key of [`module`]'s source: family, element type and the
/// compiled-in block shapes (every variant is in every module).
fn module_key<T: MatvecElement>(policy: &MatvecPolicy) -> String {
    format!(
        "linalg_matvec_{}_n{}_t{}",
        T::SUFFIX,
        policy.n_block_threads,
        policy.t_block_rows
    )
}

/// The kernel `{name}_{type}` of [`module`] on `gpu`'s context, from the
/// context's kernel store (built, compiled or loaded on first use only).
pub(crate) fn kernel<T: MatvecElement>(
    gpu: &Gpu,
    policy: &MatvecPolicy,
    name: &str,
) -> Result<Kernel> {
    gpu.stored_kernel(&module_key::<T>(policy), &entry::<T>(name), || {
        module::<T>(policy)
    })
}

/// Every matvec module (one per element type, default block shapes).
pub(crate) fn catalog() -> Vec<ModuleSource> {
    let policy = MatvecPolicy::DEFAULT;
    vec![
        module::<f32>(&policy),
        module::<f64>(&policy),
        module::<i32>(&policy),
        module::<f16>(&policy),
        module::<bf16>(&policy),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_name_every_entry() {
        let m = module::<f32>(&MatvecPolicy::DEFAULT);
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
        assert_eq!(
            names,
            [
                "matvec_f32",
                "matvec_f64",
                "matvec_i32",
                "matvec_f16",
                "matvec_bf16"
            ]
        );
        // The 16-bit floats sum in f32: their partials and reduction too.
        let half = module::<f16>(&MatvecPolicy::DEFAULT);
        assert!(half.code().contains(
            "matvec_tuned_t_reduce_f16(const f32* partial, f16* y, u64 cols, u32 slabs)"
        ));
        assert!(half
            .code()
            .contains("const f16* a, const f16* x, f16* y, f32* partial, u64 rows"));
        assert_eq!(
            module_key::<f64>(&MatvecPolicy::DEFAULT),
            "linalg_matvec_f64_n256_t8"
        );
    }

    #[test]
    fn variant_names_keep_the_original_entries() {
        assert_eq!(variant_suffix(4, false), "");
        assert_eq!(variant_suffix(8, false), "_u8");
        assert_eq!(variant_suffix(4, true), "_cs");
        assert_eq!(variant_suffix(8, true), "_u8_cs");
        let defaults = MatvecPolicy::DEFAULT;
        assert!(TUNABLE_LOADS.contains(&defaults.n_loads));
        assert!(TUNABLE_LOADS.contains(&defaults.t_loads));
        // Every variant a policy can name is an entry of the module.
        let names = module::<f64>(&defaults).entries().to_vec();
        for loads in TUNABLE_LOADS {
            for streaming in [false, true] {
                let suffix = variant_suffix(loads, streaming);
                for base in [
                    "matvec_tuned_n",
                    "matvec_tuned_t_partial_vec",
                    "matvec_tuned_t_partial_scalar",
                ] {
                    let name = format!("{base}{suffix}_f64");
                    assert!(names.contains(&name), "{name}");
                }
            }
        }
    }
}
