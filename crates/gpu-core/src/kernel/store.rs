//! The kernel store: one per CUDA context, shared by every [`Gpu`] handle
//! made on that context ([`Gpu::new`], [`Gpu::from_cudarc`],
//! [`Gpu::with_new_stream`]), thread-safe.
//!
//! It keeps two maps:
//! - **modules** by their [`CubinKey`] ([`ModuleSource::cubin_key`]: source,
//!   options and architecture):
//!   what [`Gpu::module`] serves. Hashing a 20–35 KB source costs
//!   microseconds, so this is the path for first loads and for callers that
//!   only have a source;
//! - **kernels** by (module key, entry): what [`Gpu::stored_kernel`] serves.
//!   The module key is a short string that names the source completely
//!   (family, element type, operator, policy), so a lookup is two hash-map
//!   probes on short strings under a read lock; the source is built only
//!   when the key is new on this context.
//!
//! A [`Kernel`] carries its occupancy answers and the dynamic shared memory
//! it was opted into, so repeated launches ask the driver nothing.
//!
//! The store lives as long as some `Gpu` handle of its context does; the
//! process-wide registry that lets a new handle find it holds it weakly, so
//! dropping the last handle unloads every module (and lets the context go).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use cudarc::driver::{CudaContext, CudaModule};

use super::{stable_hash64, CubinKey, ModuleOrigin};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Module};
use crate::kernel::ModuleSource;

/// A module loaded on a context, and where it came from.
pub(crate) struct LoadedModule {
    pub(crate) module: Arc<CudaModule>,
    pub(crate) origin: ModuleOrigin,
}

/// Loaded modules and kernels of one CUDA context (see the module docs).
#[derive(Default)]
pub struct KernelStore {
    /// Modules by cubin key. Held across a load, so one context never
    /// compiles or loads the same module twice at once.
    pub(crate) modules: Mutex<HashMap<CubinKey, Arc<LoadedModule>>>,
    /// Kernels by module key, then entry.
    kernels: RwLock<HashMap<String, HashMap<String, Kernel>>>,
    /// Modules by module key, for callers that need the module itself (a
    /// `__constant__` symbol to copy into).
    keyed_modules: RwLock<HashMap<String, Module>>,
}

impl std::fmt::Debug for KernelStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelStore")
            .field("modules", &self.module_count())
            .field("kernels", &self.kernel_count())
            .finish()
    }
}

impl KernelStore {
    /// The store of `ctx`: the one already shared by live handles on that
    /// context, else a new one.
    pub(crate) fn for_context(ctx: &Arc<CudaContext>) -> Arc<KernelStore> {
        /// (context, its store), both weak: an entry whose store has dropped
        /// is replaced; a context address can only be reused after the
        /// context, and so every module (which holds it), is gone.
        type Registry = Vec<(Weak<CudaContext>, Weak<KernelStore>)>;
        static REGISTRY: Mutex<Registry> = Mutex::new(Vec::new());
        // Registry operations complete or unwind before touching the Vec.
        let mut registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        registry.retain(|(context, store)| context.strong_count() > 0 && store.strong_count() > 0);
        let found = registry
            .iter()
            .find(|(context, _)| std::ptr::eq(context.as_ptr(), Arc::as_ptr(ctx)))
            .and_then(|(_, store)| store.upgrade());
        if let Some(store) = found {
            return store;
        }
        let store = Arc::new(KernelStore::default());
        registry.push((Arc::downgrade(ctx), Arc::downgrade(&store)));
        store
    }

    /// The stored kernel, if `module_key`'s `entry` was loaded before.
    pub(crate) fn get(&self, module_key: &str, entry: &str) -> Option<Kernel> {
        let kernels = self.kernels.read().unwrap_or_else(|p| p.into_inner());
        kernels.get(module_key)?.get(entry).cloned()
    }

    /// Keeps `kernel` under (`module_key`, `entry`) and returns the stored
    /// one (the first stored wins when two threads load at once, so every
    /// caller shares one occupancy record).
    pub(crate) fn insert(&self, module_key: &str, entry: &str, kernel: Kernel) -> Kernel {
        let mut kernels = self.kernels.write().unwrap_or_else(|p| p.into_inner());
        kernels
            .entry(module_key.to_owned())
            .or_default()
            .entry(entry.to_owned())
            .or_insert(kernel)
            .clone()
    }

    /// Modules loaded on this context.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// gpu_core::DeviceBuffer::filled(&gpu, 4, 1i32)?; // needs the fill kernel for i32
    /// let store = gpu.kernel_store();
    /// println!("{} modules, {} stored kernels", store.module_count(), store.kernel_count());
    /// # Ok(()) }
    /// ```
    pub fn module_count(&self) -> usize {
        self.modules.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Where each module loaded on this context came from, and how long
    /// loading it took.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// gpu_core::DeviceBuffer::filled(&gpu, 4, 1i32)?;
    /// for origin in gpu.kernel_store().module_origins() {
    ///     println!("{origin:?}"); // Compiled, DiskCache or Embedded, with the milliseconds it took
    /// }
    /// # Ok(()) }
    /// ```
    pub fn module_origins(&self) -> Vec<super::ModuleOrigin> {
        let modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        modules.values().map(|loaded| loaded.origin).collect()
    }

    /// Kernels stored under a module key on this context.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// gpu_core::DeviceBuffer::filled(&gpu, 4, 1i32)?; // needs the fill kernel for i32
    /// let store = gpu.kernel_store();
    /// println!("{} modules, {} stored kernels", store.module_count(), store.kernel_count());
    /// # Ok(()) }
    /// ```
    pub fn kernel_count(&self) -> usize {
        let kernels = self.kernels.read().unwrap_or_else(|p| p.into_inner());
        kernels.values().map(HashMap::len).sum()
    }
}

impl Gpu {
    /// The module that `module_key` names, from this context's store, for
    /// callers that need the module itself (a symbol to copy into, see
    /// [`Gpu::copy_to_symbol`]); `build` runs only when the key is new on
    /// this context. The same contract on `module_key` as
    /// [`Gpu::stored_kernel`]: it must name the source completely.
    ///
    /// ```no_run
    /// use gpu_core::{Gpu, ModuleSource};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let build = || ModuleSource::new("table").source("__constant__ int table[16];");
    /// let module = gpu.stored_module("example/table/v1", build)?; // built and loaded once
    /// let again = gpu.stored_module("example/table/v1", build)?; // from the store: build not called
    /// # let _ = (module, again);
    /// # Ok(()) }
    /// ```
    pub fn stored_module(
        &self,
        module_key: &str,
        build: impl FnOnce() -> ModuleSource,
    ) -> Result<Module> {
        let store = self.kernel_store();
        {
            let modules = store
                .keyed_modules
                .read()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(module) = modules.get(module_key) {
                return Ok(module.clone());
            }
        }
        let module = self.module(&build())?;
        let mut modules = store
            .keyed_modules
            .write()
            .unwrap_or_else(|p| p.into_inner());
        Ok(modules
            .entry(module_key.to_owned())
            .or_insert(module)
            .clone())
    }

    /// The kernel `entry` of the module that `module_key` names, from this
    /// context's store; `build` makes the module's source and runs only when
    /// the key is new on this context (then the module is loaded through
    /// [`Gpu::module`]: memory, else disk cache, else NVRTC).
    ///
    /// `module_key` must name the source completely: two calls with the
    /// same key must build the same source. Put in it the family, the
    /// element type, the operator, every policy field the source depends on,
    /// and for caller-supplied CUDA text (a custom operator or predicate)
    /// its [`fingerprint`]. A lookup is two probes of short-string maps
    /// under a read lock, with no source built and no driver call.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// // The key names the source completely: the family and the element type.
    /// let kernel = gpu.stored_kernel("gpu_core/fill/f64", &fill_entry::<f64>(), fill_module::<f64>)?;
    /// let again = gpu.stored_kernel("gpu_core/fill/f64", &fill_entry::<f64>(), fill_module::<f64>)?;
    /// assert_eq!(kernel.name(), again.name());
    /// # Ok(()) }
    /// ```
    pub fn stored_kernel(
        &self,
        module_key: &str,
        entry: &str,
        build: impl FnOnce() -> ModuleSource,
    ) -> Result<Kernel> {
        let store = self.kernel_store();
        if let Some(kernel) = store.get(module_key, entry) {
            return Ok(kernel);
        }
        let kernel = self.module(&build())?.kernel(entry)?;
        Ok(store.insert(module_key, entry, kernel))
    }
}

/// A short, stable fingerprint of caller-supplied CUDA text (an operator's
/// or predicate's expression), for module keys: 16 hex digits.
///
/// ```
/// use gpu_core::kernel::fingerprint;
/// let key = format!("my_family/i32/{}", fingerprint("a * b + 1"));
/// assert_eq!(fingerprint("a * b + 1").len(), 16);
/// assert_ne!(fingerprint("a * b + 1"), fingerprint("a * b + 2"));
/// # let _ = key;
/// ```
pub fn fingerprint(cuda_text: &str) -> String {
    format!("{:016x}", stable_hash64(&[cuda_text.as_bytes()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_short_stable_and_distinct() {
        let a = fingerprint("a + b");
        assert_eq!(a.len(), 16);
        assert_eq!(a, fingerprint("a + b"));
        assert_ne!(a, fingerprint("a * b"));
    }

    #[test]
    fn an_empty_store_counts_nothing() {
        let store = KernelStore::default();
        assert_eq!((store.module_count(), store.kernel_count()), (0, 0));
        assert!(store.get("m", "e").is_none());
        assert!(format!("{store:?}").contains("KernelStore"));
    }
}
