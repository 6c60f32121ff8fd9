//! The embedded kernels' PTX fallback on a real device: a module whose
//! only image is embedded PTX (NVRTC hidden, the disk cache empty) loads
//! through the driver's JIT and runs; a module found nowhere is the typed
//! [`Error::KernelNotCached`] naming it.
//!
//! The PTX is compiled with NVRTC by the parent test (for `compute_80`, as
//! the `aot` feature embeds it) and handed to a child process of this test
//! binary, which runs with `PARPRIMS_DISABLE_NVRTC=1` (so NVRTC cannot
//! serve the module), an empty `PARPRIMS_CACHE_DIR`, and
//! `PARPRIMS_EMBEDDED_PREFER_PTX=1`: the child also embeds a cubin that is
//! not one for the device's own architecture, which the store must skip (a
//! driver given those bytes would refuse them).
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; the PTX compile test
//! runs wherever NVRTC is.

use gpu_core::kernel::{
    compile_ptx, install_embedded, nvrtc_available, EmbeddedImage, EmbeddedModule,
};
use gpu_core::{DeviceBuffer, Error, Gpu, KernelArgs, LaunchConfig, ModuleOrigin, ModuleSource};
use parprims_testkit::testing::{assert_child_passed, nanos_stamp, run_child_test};

/// A module that writes `nonce` to `out[0]`: a source no earlier run (and
/// no disk cache) has seen.
fn probe_module(nonce: &str) -> ModuleSource {
    ModuleSource::new(format!("ptx_probe_{nonce}"))
        .source(&format!(
            "__device__ u64 ptx_probe_value() {{ return {nonce}ull; }}"
        ))
        .entry(
            "ptx_probe",
            "u64* out, u64 n",
            "const u64 i = global_thread_index(); if (i < n) out[i] = ptx_probe_value() + i",
            Some(128),
        )
}

#[test]
fn the_probe_compiles_to_ptx_for_compute_80() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let ptx = compile_ptx(&probe_module("12345"), "compute_80").expect("NVRTC compiles the probe");
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert!(ptx.contains("ptx_probe"), "the entry is missing:\n{ptx}");
}

/// The child half of `embedded_ptx_runs_through_the_driver_jit`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn embedded_ptx_child_process() {
    let (Ok(ptx_file), Ok(nonce), Ok(missing)) = (
        std::env::var("PARPRIMS_PTX_PROBE_FILE"),
        std::env::var("PARPRIMS_PTX_PROBE_NONCE"),
        std::env::var("PARPRIMS_PTX_PROBE_MISSING"),
    ) else {
        return; // not spawned by the parent test
    };
    assert!(matches!(nvrtc_available(), Err(Error::NoNvrtc)));
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let arch = gpu.info().arch();
    let module = probe_module(&nonce);
    let ptx: &'static str = Box::leak(
        std::fs::read_to_string(&ptx_file)
            .expect("the parent wrote the PTX")
            .into_boxed_str(),
    );
    let table: &'static [EmbeddedModule] = Box::leak(Box::new([
        EmbeddedModule {
            key: module.cubin_key("compute_80").0,
            image: EmbeddedImage::Ptx(ptx),
        },
        // Not a cubin: loading it would fail. PARPRIMS_EMBEDDED_PREFER_PTX
        // makes the store skip it for the PTX above.
        EmbeddedModule {
            key: module.cubin_key(&arch).0,
            image: EmbeddedImage::Cubin(b"not a cubin"),
        },
    ]));
    install_embedded(table);

    let loaded = gpu.module(&module).expect("the embedded PTX loads");
    assert!(
        matches!(loaded.origin(), ModuleOrigin::Embedded { .. }),
        "{:?}",
        loaded.origin()
    );
    let kernel = loaded
        .kernel("ptx_probe")
        .expect("the PTX defines ptx_probe");
    let n = 1000usize;
    let mut out = DeviceBuffer::<u64>::zeros(&gpu, n).expect("memory for the probe");
    let mut args = KernelArgs::new();
    args.output(&mut out.view_mut()).scalar(n as u64);
    let config = LaunchConfig {
        grid: (8, 1, 1),
        block: (128, 1, 1),
        shared_bytes: 0,
    };
    // SAFETY: ptx_probe(u64* out, u64 n) writes out[i] for i < n; out holds
    // n elements, and 8 × 128 threads cover them.
    unsafe { gpu.launch(&kernel, config, &args) }.expect("the probe launches");
    let base: u64 = nonce.parse().expect("a numeric nonce");
    let expected: Vec<u64> = (0..n as u64).map(|i| base + i).collect();
    assert_eq!(out.to_host(&gpu).expect("the probe's output"), expected);

    // Neither cached, nor embedded, nor compilable: the typed error.
    let missing_module = probe_module(&missing);
    let error = gpu
        .module(&missing_module)
        .err()
        .expect("a module found nowhere does not load");
    match &error {
        Error::KernelNotCached {
            module, arch: a, ..
        } => {
            assert_eq!(module, missing_module.name());
            assert_eq!(a, &arch);
        }
        other => panic!("expected KernelNotCached, got {other}"),
    }
    assert!(error.to_string().contains(missing_module.name()), "{error}");
    println!("EMBEDDED_PTX_CHILD_OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn embedded_ptx_runs_through_the_driver_jit() {
    if std::env::var("PARPRIMS_PTX_PROBE_NONCE").is_ok() {
        return; // we are the child
    }
    nvrtc_available().expect("NVRTC compiles the probe's PTX in the parent");
    let dir = std::env::temp_dir().join(format!("parprims-embedded-ptx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let stamp = nanos_stamp();
    let (nonce, missing) = (stamp.to_string(), (stamp + 1).to_string());
    let ptx = compile_ptx(&probe_module(&nonce), "compute_80").expect("NVRTC compiles the probe");
    let ptx_file = dir.join("probe.ptx");
    std::fs::write(&ptx_file, ptx).expect("the PTX written");
    let cache = dir.join("cache"); // empty: nothing to load from disk
    let child = run_child_test(
        "embedded_ptx_child_process",
        &[
            ("PARPRIMS_PTX_PROBE_FILE", &ptx_file),
            ("PARPRIMS_PTX_PROBE_NONCE", &nonce),
            ("PARPRIMS_PTX_PROBE_MISSING", &missing),
            ("PARPRIMS_DISABLE_NVRTC", &"1"),
            ("PARPRIMS_EMBEDDED_PREFER_PTX", &"1"),
            ("PARPRIMS_CACHE_DIR", &cache),
        ],
    );
    assert_child_passed(&child, "EMBEDDED_PTX_CHILD_OK");
    let _ = std::fs::remove_dir_all(&dir);
}
