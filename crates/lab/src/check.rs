//! Checking a GPU result against the CPU reference.
//!
//! Integers are compared exactly. Floats are compared with a tolerance
//! relative to the magnitude of the expected value (at least 1), because a
//! GPU combines in a different order than the serial CPU loop. The lab's
//! float inputs are whole numbers of small magnitude ([`super::inputs`]), so
//! in practice every sum the primitives form is exact in any order and a
//! wrong element shows up as a whole-number difference, far above the
//! tolerance.
//!
//! An output element equal to the poison value ([`DeviceType::poison`]) is
//! reported as "never written", which is the likeliest bug.

use gpu_core::{DeviceType, Element};

/// The outcome of checking one method.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The output matched the reference.
    Pass,
    /// The output did not match, or the method failed; the reason.
    Fail(String),
    /// Not checked (and why), e.g. a CPU reference row.
    NotChecked(String),
}

impl Check {
    /// True for [`Check::Pass`].
    pub fn passed(&self) -> bool {
        matches!(self, Check::Pass)
    }

    /// True for [`Check::Fail`].
    pub fn failed(&self) -> bool {
        matches!(self, Check::Fail(_))
    }

    /// `✓`, `✗ reason` or `– reason`, for the table.
    pub fn cell(&self) -> String {
        match self {
            Check::Pass => "✓".to_owned(),
            Check::Fail(reason) => format!("✗ {reason}"),
            Check::NotChecked(reason) => format!("– {reason}"),
        }
    }

    /// Both checks must pass; the first failure wins.
    pub fn and(self, other: Check) -> Check {
        match (self, other) {
            (Check::Fail(a), _) => Check::Fail(a),
            (_, Check::Fail(b)) => Check::Fail(b),
            (Check::Pass, _) | (_, Check::Pass) => Check::Pass,
            (a, _) => a,
        }
    }
}

/// Relative tolerance for floats of type `T` after combining up to
/// `terms` values: a few ulps per level of a combining tree.
///
/// Kept tight on purpose: with the lab's whole-number inputs every partial
/// result is exact, so this only absorbs a different rounding of a peer or
/// an FMA, while a single wrong element (a difference of at least 1) still
/// fails for any expected value below about 2^16.
pub fn float_tolerance<T: Element>(terms: usize) -> f64 {
    let epsilon = if T::BYTES == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let levels = (terms.max(2) as f64).log2().ceil();
    4.0 * epsilon * (levels + 1.0)
}

/// Compares `got` with `expected` element by element: integers exactly,
/// floats within `float_tolerance::<T>(terms)` relative to `max(|expected|, 1)`.
/// The reason names the first bad index and how many differ.
pub fn compare<T: Element>(got: &[T], expected: &[T], terms: usize) -> Check {
    if got.len() != expected.len() {
        return Check::Fail(format!(
            "length {} where the reference has {}",
            got.len(),
            expected.len()
        ));
    }
    let tolerance = float_tolerance::<T>(terms);
    let poison = T::poison();
    let poison_bits = bytemuck::bytes_of(&poison).to_vec();
    let mut first_bad: Option<usize> = None;
    let mut bad = 0usize;
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        let ok = if T::IS_FLOAT {
            let (g, e) = (g.to_f64(), e.to_f64());
            if e.is_nan() {
                g.is_nan()
            } else {
                (g - e).abs() <= tolerance * e.abs().max(1.0)
            }
        } else {
            g == e
        };
        if !ok {
            bad += 1;
            first_bad.get_or_insert(i);
        }
    }
    match first_bad {
        None => Check::Pass,
        Some(i) => {
            let never_written = bytemuck::bytes_of(&got[i]) == poison_bits.as_slice();
            Check::Fail(format!(
                "{bad} of {} differ; first at [{i}]: got {}{}, expected {}",
                got.len(),
                got[i],
                if never_written {
                    " (never written)"
                } else {
                    ""
                },
                expected[i]
            ))
        }
    }
}

/// Checks a count the device reported against the reference's.
pub fn compare_count(got: usize, expected: usize) -> Check {
    if got == expected {
        Check::Pass
    } else {
        Check::Fail(format!("count {got}, expected {expected}"))
    }
}

/// A `Check` for an operation that failed with an error.
pub fn failed(error: &gpu_core::Error) -> Check {
    // The first line only: compile errors carry the whole NVRTC log.
    let text = error.to_string();
    let first = text.lines().next().unwrap_or("error");
    Check::Fail(first.to_owned())
}

/// The poison value is recognisable in `values` (a helper for tests).
pub fn holds_poison<T: DeviceType>(values: &[T]) -> bool {
    let poison = T::poison();
    values
        .iter()
        .any(|v| bytemuck::bytes_of(v) == bytemuck::bytes_of(&poison))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_exact() {
        assert_eq!(compare(&[1i32, 2, 3], &[1, 2, 3], 3), Check::Pass);
        let c = compare(&[1i32, 5, 3, 9], &[1, 2, 3, 4], 4);
        match c {
            Check::Fail(reason) => {
                assert!(
                    reason.starts_with("2 of 4 differ; first at [1]: got 5"),
                    "{reason}"
                );
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert!(compare(&[1u64], &[1, 2], 2).failed());
    }

    #[test]
    fn never_written_elements_are_named() {
        let got = [1i32, i32::poison()];
        match compare(&got, &[1, 2], 2) {
            Check::Fail(reason) => assert!(reason.contains("never written"), "{reason}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        assert!(holds_poison(&got));
        assert!(!holds_poison(&[1i32, 2]));
    }

    #[test]
    fn floats_within_tolerance() {
        let n = 1 << 24;
        let t = float_tolerance::<f32>(n);
        assert!(t > f32::EPSILON as f64 && t < 2e-5, "{t}");
        // One whole unit at 50 000 is still a failure.
        assert!(compare(&[50_001.0f32], &[50_000.0], n).failed());
        assert!(compare(&[1000.0f32 * (1.0 + 1e-6)], &[1000.0], n).passed());
        // A whole missing element of an integer-valued sum is far outside.
        assert!(compare(&[999.0f32], &[1000.0], n).failed());
        assert!(compare(&[f32::poison()], &[1.0], 1).failed());
        assert!(float_tolerance::<f64>(n) < 1e-12);
    }

    #[test]
    fn check_cells_and_combination() {
        assert_eq!(Check::Pass.cell(), "✓");
        assert_eq!(Check::Fail("x".into()).cell(), "✗ x");
        assert_eq!(Check::NotChecked("cpu".into()).cell(), "– cpu");
        assert!(Check::Pass.and(Check::Fail("b".into())).failed());
        assert!(Check::Fail("a".into()).and(Check::Pass).failed());
        assert!(Check::Pass.and(Check::NotChecked("n".into())).passed());
        assert_eq!(compare_count(3, 3), Check::Pass);
        assert!(compare_count(2, 3).failed());
        assert_eq!(
            failed(&gpu_core::Error::invalid("n", "too big\nmore")),
            Check::Fail("invalid argument `n`: too big".into())
        );
    }
}
