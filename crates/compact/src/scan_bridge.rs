//! The one place this crate calls the scan crate: the exclusive sum of the
//! three-pass marks, through scan's public API.

use gpu_core::{DeviceView, DeviceViewMut, Element, Gpu, Result, Sum};
pub use scan::ScanAlgorithm;
use scan::{ScanKind, ScanOptions};

/// `positions = exclusive sum of marks` (same length, 0 first), enqueued on
/// `gpu`'s stream with `algorithm` at its default block size.
pub(crate) fn exclusive_sum<C: Element>(
    gpu: &Gpu,
    marks: DeviceView<'_, C>,
    positions: DeviceViewMut<'_, C>,
    algorithm: ScanAlgorithm,
) -> Result<()> {
    scan::scan_into(
        gpu,
        marks,
        positions,
        &Sum,
        ScanKind::Exclusive { initial: C::zero() },
        &ScanOptions::new(algorithm),
    )
}
