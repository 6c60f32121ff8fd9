//! The kernel pipeline, from CUDA C source to a launchable function.
//!
//! | step | file | what |
//! |---|---|---|
//! | source | [`source`](ModuleSource) | one module's CUDA C: `common.cuh`, the family's headers and bodies, generated operator functors, tuning `#define`s, generated `extern "C"` entry points |
//! | embedded | [`install_embedded`] | cubins and PTX compiled when the program was built (the `parprims` crate's `aot` feature), consulted first; PTX is JIT-compiled by the driver for GPUs newer than every embedded cubin, when neither the disk cache nor NVRTC has the module |
//! | compile | `nvrtc` | NVRTC for the device's own `sm_XY` (real machine code, no JIT at load time) |
//! | disk cache | [`DiskCache`], [`find_cubin`] | cubins keyed by a 128-bit hash of source, options and architecture ([`CubinKey`]; the NVRTC version is recorded, not keyed), so a process without NVRTC loads them through the driver alone; corrupt entries are rebuilt, an unwritable cache falls back to compiling in memory; [`warm_disk_cache`] fills one for several architectures |
//! | store | [`KernelStore`] | one per CUDA context, shared by every [`Gpu`](crate::Gpu) on it: loaded modules by source hash, and loaded functions by (module key, entry) with their occupancy, so a launch on the hot path neither builds nor hashes source nor queries the driver |
//!
//! An algorithm crate asks for a kernel with
//! [`Gpu::stored_kernel`](crate::Gpu::stored_kernel): a module key that
//! names the source completely (family, element type, operator, policy),
//! the entry name, and a closure that builds the [`ModuleSource`], called
//! only the first time the key is seen on the context.

mod disk_cache;
mod embedded;
mod nvrtc;
mod source;
mod store;

pub(crate) use disk_cache::{compile_and_store, not_cached};
pub use disk_cache::{
    find_cubin, for_each_in_parallel, nvrtc_compiler, validate_arch, warm_disk_cache, CacheLookup,
    CacheWarmReport, CachedCubin, CubinCompiler, DiskCache, FoundCubin,
};
pub(crate) use embedded::{embedded_cubin, embedded_ptx};
pub use embedded::{install_embedded, EmbeddedImage, EmbeddedModule};
pub use nvrtc::{compile_cubin, compile_ptx, cubin_defines, nvrtc_available, nvrtc_version};
pub use source::{stable_hash128, stable_hash64, CubinKey, Fnv64, ModuleSource};
pub(crate) use store::LoadedModule;
pub use store::{fingerprint, KernelStore};

/// Where a loaded module came from, and how long getting it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ModuleOrigin {
    /// Compiled by NVRTC in this process.
    Compiled {
        /// Wall-clock milliseconds for compiling and loading.
        ms: f64,
    },
    /// Read from the disk cache.
    DiskCache {
        /// Wall-clock milliseconds for reading and loading.
        ms: f64,
    },
    /// Embedded in the program (a cubin, or PTX the driver compiled).
    Embedded {
        /// Wall-clock milliseconds for loading.
        ms: f64,
    },
}
