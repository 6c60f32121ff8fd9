//! Compiles every module of `dist::kernel_catalog()` for sm_90 with NVRTC
//! and checks that each entry point is in the cubin. Needs NVRTC, not a GPU
//! (skipped with a message without it, unless PARPRIMS_REQUIRE_NVRTC=1).

use parprims_testkit::testing::compile_failures;

#[test]
fn every_dist_kernel_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules = dist::kernel_catalog();
    let failures = compile_failures(&modules, &["sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_custom_operator_prefix_module_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let last = gpu_core::CustomOp::<i64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .expect("a valid custom operator");
    let module = dist::scan::prefix_module::<i64, _>(&last);
    let failures = compile_failures(&[module], &["sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
