//! Inclusive, seeded inclusive or exclusive: the one switch every scan
//! algorithm takes.

use gpu_core::{Element, Operator};

/// Which prefix a scan writes at position `i`.
///
/// - `Inclusive`: `out[i] = x[0] ⊕ x[1] ⊕ … ⊕ x[i]`.
/// - `InclusiveFrom { initial }`: `out[i] = initial ⊕ x[0] ⊕ … ⊕ x[i]`
///   (`initial` on the left, so any associative operator works; the
///   seeded inclusive scan that C++17's `std::inclusive_scan` takes an
///   `init` for).
/// - `Exclusive { initial }`: `out[0] = initial`,
///   `out[i] = initial ⊕ x[0] ⊕ … ⊕ x[i-1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScanKind<T: Element> {
    /// Each output includes its own input.
    Inclusive,
    /// Each output includes its own input and starts from `initial`: the
    /// inclusive scan of `[initial, x[0], …]` without its first element.
    InclusiveFrom {
        /// The value every output starts from, combined on the left.
        initial: T,
    },
    /// Each output covers the inputs before it, seeded with `initial`
    /// (the operator's identity by default).
    Exclusive {
        /// The value at position 0, combined into every later output.
        initial: T,
    },
}

impl<T: Element> ScanKind<T> {
    /// The value every output starts from: `initial` of the seeded kinds,
    /// none for `Inclusive`.
    ///
    /// ```
    /// use scan::ScanKind;
    /// assert_eq!(ScanKind::<i32>::Inclusive.initial(), None);
    /// assert_eq!(ScanKind::InclusiveFrom { initial: 4 }.initial(), Some(4));
    /// assert_eq!(ScanKind::Exclusive { initial: 7 }.initial(), Some(7));
    /// ```
    pub fn initial(self) -> Option<T> {
        match self {
            ScanKind::Inclusive => None,
            ScanKind::InclusiveFrom { initial } | ScanKind::Exclusive { initial } => Some(initial),
        }
    }

    /// Whether output `i` leaves out input `i` (the exclusive kind).
    ///
    /// ```
    /// use scan::ScanKind;
    /// assert!(ScanKind::Exclusive { initial: 0 }.is_exclusive());
    /// assert!(!ScanKind::InclusiveFrom { initial: 0 }.is_exclusive());
    /// ```
    pub fn is_exclusive(self) -> bool {
        matches!(self, ScanKind::Exclusive { .. })
    }

    /// The kernels' `kind` argument: 0 inclusive, 1 exclusive (seeded with
    /// `initial`), 2 inclusive seeded with `initial`; and the seed (the
    /// operator's identity where there is none). Bit 0 says "shifted
    /// (exclusive)", any non-zero value "tile 0 starts from `initial`".
    pub(crate) fn kernel_arguments<O: Operator<T>>(self, op: &O) -> (u32, T) {
        match self {
            ScanKind::Inclusive => (KIND_INCLUSIVE, op.identity()),
            ScanKind::Exclusive { initial } => (KIND_EXCLUSIVE, initial),
            ScanKind::InclusiveFrom { initial } => (KIND_INCLUSIVE_FROM, initial),
        }
    }
}

/// The kernels' code for [`ScanKind::Inclusive`].
pub(crate) const KIND_INCLUSIVE: u32 = 0;
/// The kernels' code for [`ScanKind::Exclusive`] (bit 0: shifted).
pub(crate) const KIND_EXCLUSIVE: u32 = 1;
/// The kernels' code for [`ScanKind::InclusiveFrom`].
pub(crate) const KIND_INCLUSIVE_FROM: u32 = 2;
