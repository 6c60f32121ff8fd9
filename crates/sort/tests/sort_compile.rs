//! Compiles every sort module (every key type × payload, the lab's too)
//! for sm_90 with NVRTC and checks that each entry point is in the cubin.
//! Needs NVRTC, not a GPU (skipped with a message without it, unless
//! PARPRIMS_REQUIRE_NVRTC=1).

use gpu_core::kernel::{compile_cubin, cubin_defines};

#[test]
fn every_sort_kernel_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules = sort::kernel_catalog();
    let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), modules.len(), "duplicate module names");
    // Every key type × (keys alone + four payload widths).
    assert!(modules.len() >= 50);
    let failures: std::sync::Mutex<Vec<String>> = Default::default();
    gpu_core::kernel::for_each_in_parallel(&modules, 2, |module| {
        let result = match compile_cubin(module, "sm_90") {
            Ok(cubin) => module
                .entries()
                .iter()
                .filter(|entry| !cubin_defines(&cubin, entry))
                .map(|entry| format!("{entry} missing from {}", module.name()))
                .collect(),
            Err(e) => vec![format!("{}: {e}", module.name())],
        };
        failures.lock().unwrap().extend(result);
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
