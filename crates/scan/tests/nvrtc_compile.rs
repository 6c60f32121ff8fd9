//! Compiles a representative slice of the scan modules with NVRTC for sm_80
//! and sm_90 (no GPU needed): every algorithm family for a few type ×
//! operator pairs and a custom operator, and checks the entry names. The workspace's
//! `tests/kernel_compile.rs` compiles the whole catalog; this is the quick
//! check for this crate. Skips (passes) without NVRTC unless
//! PARPRIMS_REQUIRE_NVRTC=1.

use gpu_core::kernel::{compile_cubin, cubin_defines};
use gpu_core::{BitXor, CustomOp, Error, Max, ModuleSource, Sum};
use parprims_testkit::testing::nvrtc_or_skip;

fn compile_all(modules: &[ModuleSource]) {
    for module in modules {
        for arch in ["sm_80", "sm_90"] {
            let cubin = compile_cubin(module, arch).unwrap_or_else(|e| panic!("{e}"));
            for entry in module.entries() {
                assert!(
                    cubin_defines(&cubin, entry),
                    "{arch}: {entry} missing from {}",
                    module.name()
                );
            }
        }
    }
}

#[test]
fn representative_modules_compile() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut modules = scan::modules_for::<i32, _>(&Sum);
    modules.extend(scan::modules_for::<f64, _>(&Max));
    modules.extend(scan::modules_for::<u64, _>(&BitXor));
    compile_all(&modules);
}

#[test]
fn custom_operators_compile_and_broken_ones_report_the_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let last = CustomOp::<u32>::new("last", "b", 0, |_, b| b).unwrap();
    compile_all(&scan::modules_for::<u32, _>(&last));

    let broken = CustomOp::<i32>::new("broken", "a + not_a_name(b)", 0, |a, b| a + b).unwrap();
    let module = &scan::modules_for::<i32, _>(&broken)[0];
    match compile_cubin(module, "sm_90") {
        Err(Error::Compile { module, log, .. }) => {
            assert!(module.contains("custom_broken"), "{module}");
            assert!(log.contains("not_a_name"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
