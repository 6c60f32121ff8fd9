//! Timing device work with CUDA events.

use cudarc::driver::{sys as driver_sys, CudaEvent};

use crate::error::Result;
use crate::gpu::Gpu;

/// A pair of CUDA events around device work on a [`Gpu`]'s stream.
///
/// Events are recorded into the stream, so the time measured is the device's
/// own, from the start event to the stop event: host overhead between
/// launches counts only if it starves the device.
pub struct GpuTimer {
    gpu: Gpu,
    start: CudaEvent,
    stop: CudaEvent,
}

impl GpuTimer {
    /// Two timing events on `gpu`'s context.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let ctx = gpu.cudarc_context();
        let flags = Some(driver_sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(GpuTimer {
            gpu: gpu.clone(),
            start: ctx.new_event(flags)?,
            stop: ctx.new_event(flags)?,
        })
    }

    /// Records the start event.
    pub fn start(&self) -> Result<()> {
        Ok(self.start.record(self.gpu.cudarc_stream())?)
    }

    /// Records the stop event.
    pub fn stop(&self) -> Result<()> {
        Ok(self.stop.record(self.gpu.cudarc_stream())?)
    }

    /// Milliseconds between start and stop (waits for the stop event).
    pub fn elapsed_ms(&self) -> Result<f64> {
        Ok(self.start.elapsed_ms(&self.stop)? as f64)
    }

    /// Times one call of `work`.
    pub fn time<F: FnOnce() -> Result<()>>(&self, work: F) -> Result<f64> {
        self.start()?;
        work()?;
        self.stop()?;
        self.elapsed_ms()
    }
}
