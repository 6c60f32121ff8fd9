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
