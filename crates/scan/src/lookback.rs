//! Single-pass scan with decoupled look-back (Merrill & Garland 2016).
//! (Being written: see the lookback helper's brief.)

use gpu_core::{DeviceView, DeviceViewMut, Element, Error, Gpu, ModuleSource, Operator, Result};

use crate::kind::ScanKind;

/// Scans `input` into `output` (same length, may be the same memory) in one
/// pass. Arguments are already validated by the caller; `input.len() > 0`.
pub(crate) fn scan_lookback<T: Element, O: Operator<T>>(
    _gpu: &Gpu,
    _input: DeviceView<'_, T>,
    _output: DeviceViewMut<'_, T>,
    _op: &O,
    _kind: ScanKind<T>,
) -> Result<()> {
    Err(Error::Unsupported(
        "decoupled look-back scan not built yet".into(),
    ))
}

/// The modules [`scan_lookback`] can request for `T` and `op`.
pub(crate) fn lookback_modules<T: Element, O: Operator<T>>(_op: &O) -> Vec<ModuleSource> {
    Vec::new()
}
