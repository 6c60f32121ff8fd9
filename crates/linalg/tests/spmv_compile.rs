//! Compiles every SpMV module for sm_80 and sm_90 with NVRTC and checks that each
//! entry point is in the cubin. Needs NVRTC, not a GPU (skipped with a
//! message without it, unless PARPRIMS_REQUIRE_NVRTC=1).

use parprims_testkit::testing::compile_failures;

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
    let failures = compile_failures(&modules, &["sm_80", "sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
