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

#[cfg(test)]
mod tests {
    use super::assert_plausible_copy_rate;

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
