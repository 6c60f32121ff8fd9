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
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, GpuTimer};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = DeviceBuffer::<f32>::zeros(&gpu, 1 << 24)?;
    /// let timer = GpuTimer::new(&gpu)?;
    /// let ms = timer.time(|| data.view_mut().fill(&gpu, 1.0))?;
    /// println!("fill: {:.1} GB/s", data.bytes() as f64 / ms / 1e6);
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, GpuTimer};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = DeviceBuffer::<f32>::zeros(&gpu, 1 << 24)?;
    /// let timer = GpuTimer::new(&gpu)?;
    /// timer.start()?;
    /// for _ in 0..10 {
    ///     data.view_mut().fill(&gpu, 1.0)?;
    /// }
    /// timer.stop()?;
    /// println!("{:.3} ms per fill", timer.elapsed_ms()? / 10.0);
    /// # Ok(()) }
    /// ```
    pub fn start(&self) -> Result<()> {
        Ok(self.start.record(self.gpu.cudarc_stream())?)
    }

    /// Records the stop event.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, GpuTimer};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = DeviceBuffer::<f32>::zeros(&gpu, 1 << 24)?;
    /// let timer = GpuTimer::new(&gpu)?;
    /// timer.start()?;
    /// for _ in 0..10 {
    ///     data.view_mut().fill(&gpu, 1.0)?;
    /// }
    /// timer.stop()?;
    /// println!("{:.3} ms per fill", timer.elapsed_ms()? / 10.0);
    /// # Ok(()) }
    /// ```
    pub fn stop(&self) -> Result<()> {
        Ok(self.stop.record(self.gpu.cudarc_stream())?)
    }

    /// Milliseconds between start and stop (waits for the stop event).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, GpuTimer};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = DeviceBuffer::<f32>::zeros(&gpu, 1 << 24)?;
    /// let timer = GpuTimer::new(&gpu)?;
    /// timer.start()?;
    /// for _ in 0..10 {
    ///     data.view_mut().fill(&gpu, 1.0)?;
    /// }
    /// timer.stop()?;
    /// println!("{:.3} ms per fill", timer.elapsed_ms()? / 10.0);
    /// # Ok(()) }
    /// ```
    pub fn elapsed_ms(&self) -> Result<f64> {
        Ok(self.start.elapsed_ms(&self.stop)? as f64)
    }

    /// Times one call of `work`.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, GpuTimer};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = DeviceBuffer::<f32>::zeros(&gpu, 1 << 24)?;
    /// let timer = GpuTimer::new(&gpu)?;
    /// let ms = timer.time(|| data.view_mut().fill(&gpu, 1.0))?;
    /// println!("fill: {:.1} GB/s", data.bytes() as f64 / ms / 1e6);
    /// # Ok(()) }
    /// ```
    pub fn time<F: FnOnce() -> Result<()>>(&self, work: F) -> Result<f64> {
        self.start()?;
        work()?;
        self.stop()?;
        self.elapsed_ms()
    }
}
