//! Inclusive or exclusive: the one switch every scan algorithm takes.

use gpu_core::Element;

/// Which prefix a scan writes at position `i`.
///
/// - `Inclusive`: `out[i] = x[0] ⊕ x[1] ⊕ … ⊕ x[i]`.
/// - `Exclusive { initial }`: `out[0] = initial`,
///   `out[i] = initial ⊕ x[0] ⊕ … ⊕ x[i-1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScanKind<T: Element> {
    /// Each output includes its own input.
    Inclusive,
    /// Each output covers the inputs before it, seeded with `initial`
    /// (the operator's identity by default).
    Exclusive {
        /// The value at position 0, combined into every later output.
        initial: T,
    },
}
