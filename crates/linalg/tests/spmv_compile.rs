//! Compiles every SpMV module for sm_80 and sm_90 with NVRTC and checks that each
//! entry point is in the cubin. Needs NVRTC, not a GPU (skipped with a
//! message without it, unless PARPRIMS_REQUIRE_NVRTC=1).

use gpu_core::kernel::{compile_cubin, cubin_defines};

#[test]
fn every_spmv_kernel_compiles_for_sm80_and_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules: Vec<_> = linalg::kernel_catalog()
        .into_iter()
        .filter(|m| m.name().starts_with("spmv_"))
        .collect();
    assert_eq!(modules.len(), 4, "f32 and f64 with u32 and u64 offsets");
    let mut failures = Vec::new();
    for (module, arch) in modules.iter().flat_map(|m| [(m, "sm_80"), (m, "sm_90")]) {
        match compile_cubin(module, arch) {
            Ok(cubin) => {
                for entry in module.entries() {
                    if !cubin_defines(&cubin, entry) {
                        failures.push(format!("{entry} missing from {} ({arch})", module.name()));
                    }
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
