//! Compiles every kernel entry point the workspace can request (every element
//! type × operator × variant) with NVRTC for sm_80 and sm_90, and checks that
//! each entry name is in the cubin NVRTC produced. Needs NVRTC, not a GPU.
//!
//! Without NVRTC the test says so and passes, unless PARPRIMS_REQUIRE_NVRTC=1
//! (as CI sets it), where a missing NVRTC fails it.

use gpu_core::kernel::{
    compile_cubin, cubin_defines, for_each_in_parallel, nvrtc_available, nvrtc_version,
};
use gpu_core::ModuleSource;

fn catalog() -> Vec<ModuleSource> {
    parprims::kernel_catalog()
}

#[test]
fn every_kernel_compiles_for_sm80_and_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let version = nvrtc_version().expect("NVRTC loaded, so its version is readable");
    let modules = catalog();
    // Module names must be unique: they name cache entries and errors.
    let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "duplicate module names in the catalog");

    let jobs: Vec<(&ModuleSource, &str)> = modules
        .iter()
        .flat_map(|m| [(m, "sm_80"), (m, "sm_90")])
        .collect();
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let entries_checked = std::sync::atomic::AtomicUsize::new(0);
    for_each_in_parallel(&jobs, workers, |&(module, arch)| {
        match compile_cubin(module, arch) {
            Ok(cubin) => {
                for entry in module.entries() {
                    if cubin_defines(&cubin, entry) {
                        entries_checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    } else {
                        failures.lock().unwrap().push(format!(
                            "{arch}: entry {entry} missing from module {}",
                            module.name()
                        ));
                    }
                }
            }
            Err(e) => failures.lock().unwrap().push(format!("{arch}: {e}")),
        }
    });
    let failures = failures.into_inner().unwrap();
    let entry_count: usize = modules.iter().map(|m| m.entries().len()).sum();
    println!(
        "compiled {} modules ({} entry points) for sm_80 and sm_90 with NVRTC {}.{}: {} entry checks passed",
        modules.len(),
        entry_count,
        version.0,
        version.1,
        entries_checked.into_inner()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(entry_count > 0);
}

#[test]
fn a_broken_kernel_reports_the_nvrtc_log() {
    if nvrtc_available().is_err() {
        return;
    }
    let broken = ModuleSource::new("broken_on_purpose").entry(
        "broken_i32",
        "i32* out",
        "out[0] = this_is_not_defined",
        None,
    );
    let err = compile_cubin(&broken, "sm_90").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("broken_on_purpose"), "{text}");
    assert!(text.contains("this_is_not_defined"), "{text}");
    assert!(text.contains("--gpu-architecture=sm_90"), "{text}");
}
