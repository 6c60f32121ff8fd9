//! # parprims
//!
//! GPU parallel primitives for Rust on NVIDIA GPUs. This crate is the facade
//! a user depends on: it re-exports the libraries, and nothing else comes
//! with it. The lab runner behind the `parprims` command and the examples
//! (timing, tables, plots, the benchmark; clap, indicatif and plotters) is
//! the `parprims-lab` crate, compiled only for the binary (feature `cli`, on
//! by default): `default-features = false, features = ["cuda-13000"]` leaves
//! it out.
//!
//! | crate | what |
//! |---|---|
//! | [`gpu_core`] | device, buffers, elements and operators, kernels, timer |
//! | [`scan`] | inclusive/exclusive scan: Hillis–Steele, Blelloch, padded Blelloch, decoupled look-back |
//! | [`compact`] | stream compaction: select by flags or predicate, partition, three-pass and single-pass |
//! | [`linalg`] | matrix–vector multiply, transpose, 2-D convolution |
//!
//! The CPU reference of each primitive runs anywhere; the GPU path needs a
//! CUDA driver:
//!
//! ```
//! use parprims::gpu_core::{DeviceBuffer, Gpu, Sum};
//! use parprims::{compact, scan};
//!
//! let input = [3i32, 1, 4, 1, 5, 9, 2, 6];
//! let expected = scan::cpu::inclusive(&input, &Sum);
//! assert_eq!(expected, [3, 4, 8, 9, 14, 23, 25, 31]);
//! let flags = [1u8, 0, 1, 0, 1, 1, 0, 0];
//! assert_eq!(compact::cpu::select_flagged(&input, &flags)?, [3, 4, 5, 9]);
//!
//! // Without a CUDA driver, `Gpu::new` is a typed error (`Error::NoDriver`).
//! if let Ok(gpu) = Gpu::new(0) {
//!     let device = DeviceBuffer::from_host(&gpu, &input)?;
//!     let sums = scan::inclusive(&gpu, device.view(), &Sum)?;
//!     assert_eq!(sums.to_host(&gpu)?, expected);
//! }
//! # Ok::<(), parprims::gpu_core::Error>(())
//! ```
#![deny(missing_docs)]

pub use compact;
pub use gpu_core;
pub use linalg;
pub use reduce;
pub use scan;
pub use sort;

include!("catalog.rs");

/// Kernels compiled when this crate was built (feature `aot`), embedded in
/// the program.
///
/// The build script compiles every module of [`kernel_catalog`] with NVRTC
/// for the architectures in `PARPRIMS_AOT_ARCHS` (default `sm_80,sm_90`) and
/// to PTX for `PARPRIMS_AOT_PTX` (default `compute_80`, which the driver
/// compiles for any newer GPU). Where the build machine has no NVRTC, the
/// build says so in a warning and embeds nothing: kernels are then compiled
/// at run time as without the feature.
///
/// ```no_run
/// # fn main() -> parprims::gpu_core::Result<()> {
/// let images = parprims::aot::install();
/// let gpu = parprims::gpu_core::Gpu::new(0)?;
/// // every kernel now loads from the program itself: no NVRTC, no disk cache
/// # let _ = (images, gpu); Ok(()) }
/// ```
#[cfg(feature = "aot")]
pub mod aot {
    use gpu_core::kernel::{install_embedded, EmbeddedModule};

    include!(concat!(env!("OUT_DIR"), "/aot_kernels.rs"));

    /// Makes the embedded kernels available to every `Gpu` of this process
    /// (call once, before the first kernel is needed; calling again changes
    /// nothing). Returns the number of embedded images.
    ///
    /// ```no_run
    /// # fn main() -> parprims::gpu_core::Result<()> {
    /// let images = parprims::aot::install(); // once, before the first kernel is needed
    /// println!("{images} embedded kernel images");
    /// let gpu = parprims::gpu_core::Gpu::new(0)?;
    /// # let _ = gpu; Ok(()) }
    /// ```
    pub fn install() -> usize {
        install_embedded(EMBEDDED)
    }

    /// The embedded images: a cubin per module and architecture, and PTX
    /// per module. Empty when the build found no NVRTC.
    ///
    /// ```
    /// use parprims::gpu_core::kernel::EmbeddedImage;
    /// let images = parprims::aot::images();
    /// let cubins = images.iter().filter(|m| matches!(m.image, EmbeddedImage::Cubin(_))).count();
    /// println!("{cubins} cubins and {} PTX images embedded", images.len() - cubins);
    /// ```
    pub fn images() -> &'static [EmbeddedModule] {
        EMBEDDED
    }
}
