//! The one place this crate calls the scan crate: the exclusive sum of the
//! three-pass marks.
//!
//! TEMPORARY: the scan crate's public `scan_into`/`ScanAlgorithm` have not
//! landed yet; until they do, `ScanAlgorithm` is a stand-in with the same
//! variants and the scan returns `Error::Unsupported`.

use gpu_core::{DeviceView, DeviceViewMut, Element, Error, Gpu, Result};

/// Which scan algorithm the three-pass compaction uses for its marks
/// (stand-in for `scan::ScanAlgorithm` until that is exported).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ScanAlgorithm {
    /// Hillis–Steele, one launch per step.
    HillisSteeleGlobal,
    /// Hillis–Steele per block in shared memory.
    HillisSteele,
    /// Blelloch up/down-sweep per block.
    Blelloch,
    /// Blelloch with bank-conflict padding.
    BlellochPadded,
    /// Single-pass decoupled look-back.
    #[default]
    DecoupledLookback,
    /// Reduce, scan the totals, scan the tiles.
    ReduceThenScan,
    /// The scan crate's choice.
    Auto,
}

impl ScanAlgorithm {
    /// Every variant, `Auto` last.
    pub const ALL: [ScanAlgorithm; 7] = [
        ScanAlgorithm::HillisSteeleGlobal,
        ScanAlgorithm::HillisSteele,
        ScanAlgorithm::Blelloch,
        ScanAlgorithm::BlellochPadded,
        ScanAlgorithm::DecoupledLookback,
        ScanAlgorithm::ReduceThenScan,
        ScanAlgorithm::Auto,
    ];
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            ScanAlgorithm::HillisSteeleGlobal => "hillis-steele-global",
            ScanAlgorithm::HillisSteele => "hillis-steele",
            ScanAlgorithm::Blelloch => "blelloch",
            ScanAlgorithm::BlellochPadded => "blelloch-padded",
            ScanAlgorithm::DecoupledLookback => "decoupled-lookback",
            ScanAlgorithm::ReduceThenScan => "reduce-then-scan",
            ScanAlgorithm::Auto => "auto",
        }
    }
}

/// `positions = exclusive sum of marks` (same length, 0 first).
pub(crate) fn exclusive_sum<C: Element>(
    _gpu: &Gpu,
    _marks: DeviceView<'_, C>,
    _positions: DeviceViewMut<'_, C>,
    _algorithm: ScanAlgorithm,
) -> Result<()> {
    Err(Error::Unsupported(
        "three-pass compaction waits for the scan crate's public scan_into".into(),
    ))
}
