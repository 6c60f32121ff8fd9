//! # gpu-core
//!
//! The narrow waist of parprims: everything that talks to the CUDA driver and
//! NVRTC (through [cudarc]) lives here, and the algorithm crates (`scan`,
//! `compact`, `linalg`) use only this small API.
//!
//! | CPU            | GPU (parprims)            | cudarc underneath  |
//! |----------------|---------------------------|--------------------|
//! | —              | [`Gpu`]: context + stream | `CudaContext`, `CudaStream` |
//! | `Vec<T>`       | [`DeviceBuffer<T>`]       | `CudaSlice<T>`     |
//! | `&[T]`         | [`DeviceView<'_, T>`]     | `CudaView<'_, T>`  |
//! | `&mut [T]`     | [`DeviceViewMut<'_, T>`]  | `CudaViewMut<'_, T>` |
//! | a caller's buffer, lent | [`CudaRead`] / [`CudaWrite`] | `&CudaSlice`, `CudaView` / `&mut CudaSlice`, `CudaViewMut` (reads and writes recorded in cudarc's events) |
//! | `fn(T, T) -> T`| [`Operator`] (CPU + CUDA) | —                  |
//! | `.cu` file     | [`ModuleSource`] → [`Kernel`] | `CudaModule`, `CudaFunction` |
//!
//! - **No panics without CUDA.** [`Gpu::new`] checks for the driver library
//!   first and returns [`Error::NoDriver`]; compiling checks for NVRTC and
//!   returns [`Error::NoNvrtc`].
//! - **Kernels** are CUDA C from the `parprims-kernels` crate, specialised per
//!   element type and operator, compiled by NVRTC for the device's own
//!   architecture, loaded once per context and cached on disk
//!   ([`kernel::DiskCache`]).
//! - **Timing** ([`GpuTimer`]): CUDA events on the stream. The harness built
//!   on it (warm-up, median, GB/s against the copy ceiling) is
//!   `parprims_testkit::bench`, outside the library.
//!
//! ```no_run
//! use gpu_core::{DeviceBuffer, Gpu};
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! println!("{}", gpu.info().summary());
//! let data = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
//! assert_eq!(data.to_host(&gpu)?, vec![1, 2, 3]);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod arena;
mod buffer;
mod element;
mod error;
mod gpu;
pub mod kernel;
pub mod launch;
pub mod merge_path;
pub mod op;
mod pinned;
mod pool;
mod readback;
mod scratch;
pub mod single_pass;
mod timer;

pub use arena::ScratchStats;
pub use buffer::{
    fill_entry, fill_module, CudaRead, CudaWrite, CudarcReadable, CudarcWritable, DeviceBuffer,
    DeviceView, DeviceViewMut,
};
pub use element::{DeviceType, Element, ElementType, IntElement};
pub use error::{Error, Result};
pub use gpu::{
    device_count, driver_available, DeviceInfo, Gpu, Kernel, KernelArgs, Module, PoolMemory,
};
/// The `half` crate, whose [`f16`](struct@f16) and [`bf16`] are the 16-bit float
/// element types.
pub use half;
pub use half::{bf16, f16};
pub use kernel::{ModuleOrigin, ModuleSource};
pub use launch::LaunchConfig;
pub use op::{
    operator_prelude, validate_identifier, BitAnd, BitOr, BitXor, CustomOp, Max, Min, Operator,
    Product, Sum,
};
pub use scratch::Workspace;
pub use timer::GpuTimer;

/// Every module gpu-core itself can request (the fill kernel for each element
/// type), for the kernel-compile test.
///
/// ```
/// let catalog = gpu_core::kernel_catalog();
/// assert!(catalog.iter().any(|module| module.entries().contains(&gpu_core::fill_entry::<f32>())));
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    vec![
        fill_module::<i8>(),
        fill_module::<u8>(),
        fill_module::<i16>(),
        fill_module::<u16>(),
        fill_module::<i32>(),
        fill_module::<u32>(),
        fill_module::<i64>(),
        fill_module::<u64>(),
        fill_module::<f16>(),
        fill_module::<bf16>(),
        fill_module::<f32>(),
        fill_module::<f64>(),
    ]
}
