//! The scale of the GPU test suite, shared by the test binaries of every
//! crate.
//!
//! `scripts/gpu-sanitize.sh` runs the whole GPU suite under
//! compute-sanitizer, whose racecheck slows shared-memory kernels about a
//! hundredfold. It sets `PARPRIMS_QUICK_TESTS=1`, and the test binaries
//! then keep every test, kernel and code path (every algorithm, element
//! type, operator, border and block shape) but draw smaller inputs: shorter
//! lengths, smaller images and matrices, fewer random operations. A plain
//! run (`scripts/gpu-tests.sh`, `cargo test`) uses the full sizes.

/// The environment variable that selects the quick scale.
pub const QUICK_TESTS_VAR: &str = "PARPRIMS_QUICK_TESTS";

/// Whether the quick (sanitizer-sized) scale is on: `PARPRIMS_QUICK_TESTS`
/// set to anything but empty or `0`.
pub fn quick_tests() -> bool {
    std::env::var(QUICK_TESTS_VAR).is_ok_and(|value| !value.is_empty() && value != "0")
}

/// `full` at the normal scale, `quick` at the quick scale.
pub fn scaled<T>(full: T, quick: T) -> T {
    if quick_tests() {
        quick
    } else {
        full
    }
}

/// Asserts that a measured device-to-device copy rate (GB/s, read + write)
/// is a real, positive figure and, at the normal scale, above 100 GB/s (any
/// CUDA GPU copies faster). The floor is skipped at the quick scale, which
/// the sanitizer script sets: instrumentation slows the copy many times
/// over (initcheck measured 16 GB/s on an H100).
pub fn assert_plausible_copy_rate(gbps: f64) {
    assert!(gbps.is_finite() && gbps > 0.0, "copy rate {gbps} GB/s");
    if !quick_tests() {
        assert!(gbps > 100.0, "copy rate {gbps} GB/s: below any CUDA GPU's");
    }
}

/// Whether NVRTC loads, for tests that compile kernels without a GPU:
/// `true` when it does; `false`, with a `SKIPPED` line on stderr, when it
/// does not, unless `PARPRIMS_REQUIRE_NVRTC=1` (set by CI), where a missing
/// NVRTC is a panic.
pub fn nvrtc_or_skip() -> bool {
    match gpu_core::kernel::nvrtc_available() {
        Ok(()) => true,
        Err(e) if std::env::var("PARPRIMS_REQUIRE_NVRTC").as_deref() == Ok("1") => {
            panic!("PARPRIMS_REQUIRE_NVRTC=1 but NVRTC is missing: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: NVRTC not found ({e})");
            false
        }
    }
}

/// Nanoseconds since the epoch: a stamp no earlier run used (nonces that
/// keep a test's kernels and cache directories its own).
pub fn nanos_stamp() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_nanos() as u64
}

/// A random seed from the clock (odd, so never zero), printed on stderr so
/// a failing test can be replayed with it.
pub fn logged_seed() -> u64 {
    let seed = nanos_stamp() | 1;
    eprintln!("seed = {seed:#x}");
    seed
}

/// Runs the ignored test `test` of the current test binary alone in a
/// child process, with `env` set; its output, which the parent checks
/// (see [`assert_child_passed`]).
pub fn run_child_test(
    test: &str,
    env: &[(&str, &dyn AsRef<std::ffi::OsStr>)],
) -> std::process::Output {
    let mut child = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    child.args([
        "--exact",
        test,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (name, value) in env {
        child.env(name, value);
    }
    child.output().expect("the child test runs")
}

/// Asserts that a child from [`run_child_test`] succeeded and printed
/// `marker`, showing its stdout and stderr when it did not.
pub fn assert_child_passed(child: &std::process::Output, marker: &str) {
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains(marker),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}

/// Compiles every module for every one of `arches` (`"sm_90"`) with NVRTC
/// and checks that each of its entry points is in the cubin. Returns one
/// line per failure (a module name given twice, a compile error, or `entry
/// missing from module (arch)`), empty when all is well. Call
/// [`nvrtc_or_skip`] first.
///
/// ```no_run
/// let modules: Vec<gpu_core::ModuleSource> = Vec::new(); // a crate's kernel_catalog()
/// let failures = parprims_testkit::testing::compile_failures(&modules, &["sm_90"]);
/// assert!(failures.is_empty(), "{}", failures.join("\n"));
/// ```
pub fn compile_failures(modules: &[gpu_core::ModuleSource], arches: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    for (i, module) in modules.iter().enumerate() {
        if modules[..i].iter().any(|m| m.name() == module.name()) {
            failures.push(format!("duplicate module name {}", module.name()));
        }
    }
    for module in modules {
        for &arch in arches {
            match gpu_core::kernel::compile_cubin(module, arch) {
                Ok(cubin) => {
                    for entry in module.entries() {
                        if !gpu_core::kernel::cubin_defines(&cubin, entry) {
                            failures
                                .push(format!("{entry} missing from {} ({arch})", module.name()));
                        }
                    }
                }
                Err(e) => failures.push(e.to_string()),
            }
        }
    }
    failures
}

/// nvdisasm: `PARPRIMS_NVDISASM`, else on `PATH`, else in the `bin` beside
/// an `LD_LIBRARY_PATH` entry (the layout of NVIDIA's pip wheels, where CI
/// installs NVRTC and nvdisasm).
pub fn find_nvdisasm() -> Option<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("PARPRIMS_NVDISASM") {
        return Some(path.into());
    }
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if let Some(path) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&path).map(|lib| lib.join("..").join("bin")));
    }
    dirs.into_iter()
        .map(|dir| dir.join("nvdisasm"))
        .find(|candidate| candidate.is_file())
}

/// The sm_90 SASS of `module`, compiled by NVRTC and disassembled by
/// nvdisasm, for tests that check what ptxas made of a kernel.
///
/// `None`, with a `SKIPPED` line on stderr, when NVRTC or nvdisasm is
/// missing; with `PARPRIMS_REQUIRE_NVDISASM=1` (set by CI) that is a panic
/// instead, as a missing NVRTC is under `PARPRIMS_REQUIRE_NVRTC=1`. A module that does not compile, or that nvdisasm cannot read,
/// is always a panic.
pub fn sm90_sass(module: &gpu_core::ModuleSource) -> Option<String> {
    let require = std::env::var("PARPRIMS_REQUIRE_NVDISASM").as_deref() == Ok("1");
    if !nvrtc_or_skip() {
        assert!(!require, "PARPRIMS_REQUIRE_NVDISASM=1 but NVRTC is missing");
        return None;
    }
    let Some(nvdisasm) = find_nvdisasm() else {
        assert!(
            !require,
            "PARPRIMS_REQUIRE_NVDISASM=1 but nvdisasm is not found"
        );
        eprintln!("SKIPPED: nvdisasm not found (pip install nvidia-cuda-nvdisasm)");
        return None;
    };
    let cubin = gpu_core::kernel::compile_cubin(module, "sm_90")
        .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
    // nvdisasm reads a file; one per call, so parallel tests never share one.
    static NEXT_FILE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = NEXT_FILE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!(
        "parprims-sass-{}-{serial}-{}.cubin",
        std::process::id(),
        module.name()
    ));
    std::fs::write(&file, &cubin).expect("write the cubin for nvdisasm");
    let output = std::process::Command::new(&nvdisasm).arg(&file).output();
    let _ = std::fs::remove_file(&file);
    let output =
        output.unwrap_or_else(|e| panic!("nvdisasm ({}) does not run: {e}", nvdisasm.display()));
    assert!(
        output.status.success(),
        "nvdisasm failed on {}: {}",
        module.name(),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The opcodes of a SASS listing (nvdisasm's output), one per instruction,
/// with their modifiers (`LDG.E.64`) and without the guard predicate
/// (`@P0`, `@!PT`).
pub fn sass_opcodes(sass: &str) -> Vec<&str> {
    sass.lines()
        .filter_map(|line| {
            // Instruction lines read `/*0040*/  @P0 LDG.E R2, desc[...] ;`.
            let (_, code) = line.trim_start().strip_prefix("/*")?.split_once("*/")?;
            let mut words = code.split_whitespace();
            let first = words.next()?;
            let opcode = if first.starts_with('@') {
                words.next()?
            } else {
                first
            };
            opcode
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase())
                .then_some(opcode.trim_end_matches(';'))
        })
        .collect()
}

/// Checks the status reads of one single-pass module in its sm_90 SASS:
/// every global load (`LDG…`) whose opcode contains `strong` is a status
/// read, and each must contain every one of `required` (the scope and width
/// that make it one access of the whole status word). Panics, naming the
/// module, when there is no such load (the check would pass vacuously) or
/// when one lacks a required part. Returns how many loads were checked;
/// `None` when the SASS cannot be had ([`sm90_sass`]).
pub fn check_status_loads(
    module: &gpu_core::ModuleSource,
    strong: &str,
    required: &[&str],
) -> Option<usize> {
    let sass = sm90_sass(module)?;
    let strong_loads: Vec<&str> = sass_opcodes(&sass)
        .into_iter()
        .filter(|op| op.starts_with("LDG") && op.contains(strong))
        .collect();
    assert!(
        !strong_loads.is_empty(),
        "{}: no strong load found: the check would pass vacuously",
        module.name()
    );
    for opcode in &strong_loads {
        for part in required {
            assert!(
                opcode.contains(part),
                "{}: status load `{opcode}` lacks `{part}`: not one access of the status word",
                module.name()
            );
        }
    }
    Some(strong_loads.len())
}

/// Asserts that the arena neither allocated nor zeroed memory between two
/// `Gpu::scratch_stats` readings: steady-state calls reuse what the first
/// call set up.
pub fn assert_scratch_steady(before: gpu_core::ScratchStats, after: gpu_core::ScratchStats) {
    assert_eq!(
        after.allocations, before.allocations,
        "arena allocated: {before:?} -> {after:?}"
    );
    assert_eq!(
        after.zeroings, before.zeroings,
        "arena zeroed: {before:?} -> {after:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::{assert_plausible_copy_rate, sass_opcodes};

    #[test]
    fn opcodes_are_read_from_instruction_lines_only() {
        let sass = "\t.text.k:\n\
                    \t/*0000*/                   LDC R1, c[0x0][0x28] ;\n\
                    \t/*0010*/              @P0 LDG.E.64 R2, desc[UR4][R2.64] ;\n\
                    \t/*0020*/             @!PT STS [R0], R3 ;\n\
                    \t/*0030*/                   EXIT ;\n\
                    \t/*0040*/                   BRA `(.L_x_0);\n\
                    .L_x_0:\n\
                    \t/* comment */\n";
        assert_eq!(
            sass_opcodes(sass),
            vec!["LDC", "LDG.E.64", "STS", "EXIT", "BRA"]
        );
    }

    #[test]
    fn a_real_copy_rate_passes() {
        assert_plausible_copy_rate(2993.8);
    }

    #[test]
    #[should_panic(expected = "copy rate")]
    fn zero_is_not_a_copy_rate() {
        assert_plausible_copy_rate(0.0);
    }

    #[test]
    #[should_panic(expected = "copy rate")]
    fn nan_is_not_a_copy_rate() {
        assert_plausible_copy_rate(f64::NAN);
    }
}
