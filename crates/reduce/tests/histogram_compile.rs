//! Compiles every histogram module for sm_90 with NVRTC and checks that each
//! entry point is in the cubin. Needs NVRTC, not a GPU (skipped with a
//! message without it, unless PARPRIMS_REQUIRE_NVRTC=1).

use parprims_testkit::testing::compile_failures;

#[test]
fn every_histogram_kernel_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules = reduce::histogram::kernel_catalog();
    let failures = compile_failures(&modules, &["sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
