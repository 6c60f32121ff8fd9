//! Compiles every module of `dist::kernel_catalog()` for sm_90 with NVRTC
//! and checks that each entry point is in the cubin. Needs NVRTC, not a GPU
//! (skipped with a message without it, unless PARPRIMS_REQUIRE_NVRTC=1).

use gpu_core::kernel::{compile_cubin, cubin_defines};

#[test]
fn every_dist_kernel_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules = dist::kernel_catalog();
    let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), modules.len(), "duplicate module names");
    let mut failures = Vec::new();
    for module in &modules {
        match compile_cubin(module, "sm_90") {
            Ok(cubin) => {
                for entry in module.entries() {
                    if !cubin_defines(&cubin, entry) {
                        failures.push(format!("{entry} missing from {}", module.name()));
                    }
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
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
    let cubin = compile_cubin(&module, "sm_90").expect("compiles");
    for entry in module.entries() {
        assert!(cubin_defines(&cubin, entry), "{entry}");
    }
}
