//! The device handle: context, stream, properties, and the way into the
//! context's kernel store.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{
    result as driver_result, sys as driver_sys, CudaContext, CudaFunction, CudaModule, CudaStream,
    DriverError,
};

use crate::error::{Error, Result};
use crate::kernel::{
    compile_and_store, embedded_cubin, embedded_ptx, find_cubin, not_cached, nvrtc_compiler,
    CacheLookup, CubinKey, DiskCache, KernelStore, LoadedModule, ModuleOrigin, ModuleSource,
};
use crate::launch::LaunchConfig;
use crate::pool::{default_pool_usage, trim_default_pool, DevicePool};

/// What parprims knows about the device it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Shared memory a block gets without opting in, bytes (48 KiB).
    pub shared_per_block: usize,
    /// Shared memory a block may opt in to, bytes.
    pub shared_per_block_optin: usize,
    /// Shared memory per multiprocessor, bytes.
    pub shared_per_sm: usize,
    /// L2 cache, bytes.
    pub l2_bytes: usize,
    /// Total device memory, bytes.
    pub memory_total: usize,
    /// Free device memory when the handle was opened, bytes.
    pub memory_free_at_open: usize,
    /// Largest block, threads.
    pub max_threads_per_block: u32,
    /// Threads resident per multiprocessor at most.
    pub max_threads_per_sm: u32,
    /// CUDA driver version as the driver reports it (13000 = 13.0).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// NVRTC target for this device: `sm_XY`.
    ///
    /// ```
    /// let info = gpu_core::DeviceInfo {
    ///     ordinal: 0,
    ///     name: "NVIDIA H100 80GB HBM3".into(),
    ///     compute_capability: (9, 0),
    ///     sm_count: 132,
    ///     shared_per_block: 48 << 10,
    ///     shared_per_block_optin: 227 << 10,
    ///     shared_per_sm: 228 << 10,
    ///     l2_bytes: 50 << 20,
    ///     memory_total: 80 << 30,
    ///     memory_free_at_open: 79 << 30,
    ///     max_threads_per_block: 1024,
    ///     max_threads_per_sm: 2048,
    ///     driver_version: 13000,
    /// };
    /// assert_eq!(info.arch(), "sm_90");
    /// ```
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// One line for tables and logs.
    ///
    /// ```
    /// let info = gpu_core::DeviceInfo {
    ///     ordinal: 0,
    ///     name: "NVIDIA H100 80GB HBM3".into(),
    ///     compute_capability: (9, 0),
    ///     sm_count: 132,
    ///     shared_per_block: 48 << 10,
    ///     shared_per_block_optin: 227 << 10,
    ///     shared_per_sm: 228 << 10,
    ///     l2_bytes: 50 << 20,
    ///     memory_total: 80 << 30,
    ///     memory_free_at_open: 79 << 30,
    ///     max_threads_per_block: 1024,
    ///     max_threads_per_sm: 2048,
    ///     driver_version: 13000,
    /// };
    /// assert_eq!(info.summary(), "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80.0 GiB, L2 50 MiB, driver 13.0)");
    /// ```
    pub fn summary(&self) -> String {
        format!(
            "{} (sm_{}{}, {} SMs, {:.1} GiB, L2 {} MiB, driver {}.{})",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.memory_total as f64 / (1u64 << 30) as f64,
            self.l2_bytes >> 20,
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10
        )
    }
}

/// Device memory held by this process's stream-ordered memory pools on one
/// device, in bytes ([`Gpu::pool_memory`]). `used` and `reserved` are what
/// PyTorch reports as `torch.cuda.memory_allocated` and
/// `torch.cuda.memory_reserved` for its own caching allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolMemory {
    /// In live buffers of parprims' pool, scratch arenas and workspaces
    /// included.
    pub used: u64,
    /// Taken from the driver by parprims' pool: `used` and what the pool
    /// keeps for the next allocation ([`Gpu::trim_memory_pool`] gives that
    /// back).
    pub reserved: u64,
    /// In live allocations of the device's default pool: the program's own
    /// cudarc allocations (`alloc_zeros`, `clone_htod`, ...).
    pub default_pool_used: u64,
    /// Taken from the driver by the device's default pool.
    pub default_pool_reserved: u64,
}

/// One stream's scratch arena, or a [`Workspace`](crate::Workspace)'s
/// (see `scratch.rs`).
pub(crate) type ScratchSlot = Arc<Mutex<crate::arena::Arena>>;

/// State shared by every [`Gpu`] handle on one context.
struct Shared {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    cache: DiskCache,
    /// Shared with every other handle on this context.
    store: Arc<KernelStore>,
    /// Where buffers come from (`None`: no stream-ordered allocator).
    pool: Option<DevicePool>,
    /// Page-locked staging for small reads back to the host.
    readback: crate::pinned::Readback,
    /// The device-mapped slot results are written to directly.
    mapped_result: crate::pinned::MappedResult,
    /// The scratch arenas of this context's streams (not the caller-owned
    /// workspaces), so an allocation that runs out of memory can take back
    /// what idle arenas hold.
    stream_arenas: Mutex<Vec<std::sync::Weak<Mutex<crate::arena::Arena>>>>,
}

impl Shared {
    /// A new stream's scratch arena, registered for [`Gpu::alloc_uninit`]'s
    /// reclaim on out-of-memory.
    fn new_stream_arena(&self) -> ScratchSlot {
        let arena = ScratchSlot::default();
        let mut arenas = self
            .stream_arenas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        arenas.retain(|weak| weak.strong_count() > 0);
        arenas.push(Arc::downgrade(&arena));
        arena
    }
}

/// A device context and the stream parprims orders its work on.
///
/// Cloning is cheap and shares the stream. [`Gpu::with_new_stream`] gives a
/// handle on the same context (and module store) with its own stream, for
/// concurrent work from several threads. `Gpu` is `Send + Sync`.
///
/// Every operation of the workspace is enqueued on this stream. Buffers that
/// came from elsewhere (a caller's cudarc stream) must be ready before they
/// are handed in: build the `Gpu` on that stream with [`Gpu::from_cudarc`],
/// or lend them with [`CudaRead`](crate::CudaRead) /
/// [`CudaWrite`](crate::CudaWrite), which record the reads and writes in
/// cudarc's events so the caller's other streams are ordered with this one,
/// or synchronise.
#[derive(Clone)]
pub struct Gpu {
    shared: Arc<Shared>,
    stream: Arc<CudaStream>,
    /// This stream's reusable scratch memory (shared by clones, which share
    /// the stream).
    pub(crate) scratch: ScratchSlot,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.shared.info)
            .finish_non_exhaustive()
    }
}

/// Checks that the CUDA driver library can be loaded. Never panics.
///
/// ```
/// // Never panics: without a CUDA driver it is a typed error.
/// match gpu_core::driver_available() {
///     Ok(()) => println!("{} CUDA device(s)", gpu_core::device_count()?),
///     Err(e) => println!("CPU references only: {e}"),
/// }
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn driver_available() -> Result<()> {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen candidate names.
    if *PRESENT.get_or_init(|| unsafe { driver_sys::is_culib_present() }) {
        Ok(())
    } else {
        Err(Error::NoDriver)
    }
}

/// Number of CUDA devices, or [`Error::NoDriver`].
///
/// ```
/// if let Ok(count) = gpu_core::device_count() {
///     println!("{count} CUDA device(s)");
/// }
/// ```
pub fn device_count() -> Result<usize> {
    driver_available()?;
    driver_result::init()?;
    Ok(CudaContext::device_count()? as usize)
}

impl Gpu {
    /// Opens device `ordinal` (its primary context) with a new stream.
    ///
    /// Returns [`Error::NoDriver`] when there is no CUDA driver and
    /// [`Error::BadOrdinal`] when there is no such device; never panics.
    ///
    /// ```
    /// use gpu_core::{Error, Gpu};
    /// match Gpu::new(0) {
    ///     Ok(gpu) => println!("{}", gpu.info().summary()),
    ///     Err(Error::NoDriver) => println!("no CUDA driver: CPU references only"),
    ///     Err(e) => println!("no GPU: {e}"),
    /// }
    /// ```
    pub fn new(ordinal: usize) -> Result<Gpu> {
        Self::with_cache(ordinal, DiskCache::from_env())
    }

    /// [`Gpu::new`] with an explicit kernel cache instead of the one the
    /// environment selects (`PARPRIMS_CACHE_DIR`).
    ///
    /// ```no_run
    /// use gpu_core::kernel::DiskCache;
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::with_cache(0, DiskCache::at("/tmp/my-kernels"))?;
    /// let no_disk = Gpu::with_cache(0, DiskCache::disabled())?; // compile every module afresh
    /// # let _ = (gpu, no_disk);
    /// # Ok(()) }
    /// ```
    pub fn with_cache(ordinal: usize, cache: DiskCache) -> Result<Gpu> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::BadOrdinal { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal)?;
        // Every parprims operation orders its work on one stream per handle
        // and passes raw device pointers, so cudarc's per-buffer event
        // tracking would only cost two events per allocation.
        // SAFETY: no cudarc buffers exist on this context yet through us; the
        // primary context may be shared with the caller's cudarc code, which
        // then orders its own streams (documented on `Gpu`).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        Self::build(ctx, stream, cache)
    }

    /// Wraps a caller's cudarc context and stream, so parprims operations
    /// run in order with the caller's own work on that stream.
    ///
    /// The context's event tracking is left as the caller set it (unlike
    /// [`Gpu::new`], which turns it off on the handle it creates for
    /// itself): with tracking on, buffers lent through
    /// [`CudaRead`](crate::CudaRead) / [`CudaWrite`](crate::CudaWrite) and
    /// outputs taken back with
    /// [`DeviceBuffer::into_cudarc`](crate::DeviceBuffer::into_cudarc) are
    /// ordered with the caller's other streams by cudarc's events.
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?; // the caller's stream
    /// let gpu = Gpu::from_cudarc(ctx, stream.clone())?;
    /// let data = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?; // ordered on `stream`
    /// # let _ = data;
    /// # Ok(()) }
    /// ```
    pub fn from_cudarc(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<Gpu> {
        if stream.context() != &ctx {
            return Err(Error::invalid(
                "stream",
                "the stream belongs to a different context",
            ));
        }
        Self::build(ctx, stream, DiskCache::from_env())
    }

    fn build(ctx: Arc<CudaContext>, stream: Arc<CudaStream>, cache: DiskCache) -> Result<Gpu> {
        use driver_sys::CUdevice_attribute_enum as A;
        let attr = |a| -> Result<i32> { Ok(ctx.attribute(a)?) };
        let (free, total) = ctx.mem_get_info()?;
        let mut driver_version = 0;
        // SAFETY: the driver is loaded (a context exists); valid out-pointer.
        unsafe { driver_sys::cuDriverGetVersion(&mut driver_version) }.result()?;
        let info = DeviceInfo {
            ordinal: ctx.ordinal(),
            name: ctx.name()?,
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
            ),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize,
            shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize,
            shared_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?
                as usize,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            memory_total: total,
            memory_free_at_open: free,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
            max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
            driver_version,
        };
        let store = KernelStore::for_context(&ctx);
        let pool = DevicePool::create(&ctx)?;
        let shared = Arc::new(Shared {
            ctx,
            info,
            store,
            cache,
            pool,
            readback: Default::default(),
            mapped_result: Default::default(),
            stream_arenas: Default::default(),
        });
        let scratch = shared.new_stream_arena();
        Ok(Gpu {
            shared,
            stream,
            scratch,
        })
    }

    /// The kernel store of this handle's context, shared by every handle
    /// on it.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let store = gpu.kernel_store();
    /// let before = store.module_count();
    /// gpu_core::DeviceBuffer::filled(&gpu, 4, 1u32)?; // loads the fill kernel once
    /// assert!(store.module_count() >= before);
    /// # Ok(()) }
    /// ```
    pub fn kernel_store(&self) -> &Arc<KernelStore> {
        &self.shared.store
    }

    /// A handle on the same context and kernel store with a new stream.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let worker = gpu.with_new_stream()?; // same context and kernels, its own stream
    /// std::thread::spawn(move || gpu_core::DeviceBuffer::<f32>::zeros(&worker, 1 << 20).map(drop))
    ///     .join()
    ///     .expect("worker thread")?;
    /// # Ok(()) }
    /// ```
    pub fn with_new_stream(&self) -> Result<Gpu> {
        let stream = self.shared.ctx.new_stream()?;
        Ok(Gpu {
            shared: self.shared.clone(),
            stream,
            scratch: self.shared.new_stream_arena(),
        })
    }

    /// [`with_new_stream`](Self::with_new_stream) with the device's highest
    /// stream priority: as SMs free up, the blocks of kernels queued on this
    /// stream are scheduled before those of default-priority streams, so
    /// short work on it (a transfer's kernels beside a long sort) is not held
    /// back behind a device full of another stream's blocks. Running blocks
    /// are not preempted.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let urgent = gpu.with_new_priority_stream()?;
    /// # let _ = urgent;
    /// # Ok(()) }
    /// ```
    pub fn with_new_priority_stream(&self) -> Result<Gpu> {
        self.shared.ctx.bind_to_thread()?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()?;
        let stream = self.shared.ctx.new_stream_with_priority(greatest)?;
        Ok(Gpu {
            shared: self.shared.clone(),
            stream,
            scratch: self.shared.new_stream_arena(),
        })
    }

    /// The device's properties.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let info = gpu.info();
    /// println!("{} with {} SMs, {}", info.name, info.sm_count, info.arch());
    /// # Ok(()) }
    /// ```
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The cudarc context, for callers who mix parprims with their own cudarc code.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let ctx = gpu.cudarc_context();
    /// let event = ctx.new_event(None)?; // the caller's own cudarc work on parprims' context
    /// event.record(gpu.cudarc_stream())?;
    /// # Ok(()) }
    /// ```
    pub fn cudarc_context(&self) -> &Arc<CudaContext> {
        &self.shared.ctx
    }

    /// The cudarc stream parprims enqueues on.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let slice = gpu.cudarc_stream().clone_htod(&[1u32, 2, 3])?; // ordered with parprims' work
    /// let data = gpu_core::DeviceBuffer::from_cudarc(slice);
    /// assert_eq!(data.to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn cudarc_stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Lets kernels enqueued through this handle read and write `owner`'s
    /// device memory: its buffers, parprims' pool included, addressed by
    /// their device pointers (peer access over NVLink or PCIe). Returns
    /// whether they now can: `false`, with nothing changed, where the two
    /// devices cannot reach each other; `true` at once for one device.
    /// Idempotent. Work that touches `owner`'s memory from here must still
    /// be ordered with `owner`'s stream by events.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let (a, b) = (Gpu::new(0)?, Gpu::new(1)?);
    /// if a.enable_peer_access(&b)? {
    ///     // kernels on `a` may now write buffers of `b`
    /// }
    /// # Ok(()) }
    /// ```
    pub fn enable_peer_access(&self, owner: &Gpu) -> Result<bool> {
        let (me, other) = (&self.shared.ctx, &owner.shared.ctx);
        if me.cu_device() == other.cu_device() {
            return Ok(true);
        }
        let mut can = 0;
        // SAFETY: `can` is a valid out-pointer; both devices are open.
        unsafe {
            cudarc::driver::sys::cuDeviceCanAccessPeer(&mut can, me.cu_device(), other.cu_device())
        }
        .result()?;
        if can == 0 {
            return Ok(false);
        }
        me.bind_to_thread()?;
        // SAFETY: this context is bound and `other` is a live context of
        // another device that this one can reach.
        match unsafe { cudarc::driver::sys::cuCtxEnablePeerAccess(other.cu_ctx(), 0) } {
            cudarc::driver::sys::CUresult::CUDA_SUCCESS
            | cudarc::driver::sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            error => return Err(cudarc::driver::DriverError(error).into()),
        }
        if let Some(pool) = &owner.shared.pool {
            pool.grant_access(me.ordinal())?;
        }
        Ok(true)
    }

    /// (free, total) device memory in bytes, now.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let (free, total) = gpu.memory_info()?;
    /// println!("{} of {} MiB free", free >> 20, total >> 20);
    /// # Ok(()) }
    /// ```
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        Ok(self.shared.ctx.mem_get_info()?)
    }

    /// The device memory this process's stream-ordered pools hold on this
    /// handle's device, in bytes: parprims' pool (shared by this handle and
    /// the handles made from it, [`Gpu::with_new_stream`]) and the device's default
    /// pool (the program's own cudarc allocations). Unlike
    /// [`Gpu::memory_info`], which reads the whole device, these count this
    /// process alone, so other programs on the same GPU do not move them.
    /// Frees still pending on a stream count as used until they run:
    /// synchronise first for a settled figure. All zero where the device
    /// has no stream-ordered allocator (buffers then come from cudarc's
    /// `cuMemAlloc`, which no pool counts).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let before = gpu.pool_memory()?;
    /// let buffer = DeviceBuffer::<u8>::zeros(&gpu, 1 << 20)?;
    /// gpu.synchronize()?;
    /// assert!(gpu.pool_memory()?.used >= before.used + (1 << 20));
    /// # drop(buffer);
    /// # Ok(()) }
    /// ```
    pub fn pool_memory(&self) -> Result<PoolMemory> {
        if !self.shared.ctx.has_async_alloc() {
            return Ok(PoolMemory::default());
        }
        let (used, reserved) = match &self.shared.pool {
            Some(pool) => pool.usage()?,
            None => (0, 0),
        };
        let (default_pool_used, default_pool_reserved) = default_pool_usage(&self.shared.ctx)?;
        Ok(PoolMemory {
            used,
            reserved,
            default_pool_used,
            default_pool_reserved,
        })
    }

    /// Gives the device memory that parprims' memory pool keeps for reuse,
    /// and the device's default pool keeps, but that no live buffer uses,
    /// back to the driver (what `torch.cuda.empty_cache()` does for
    /// PyTorch's cache), so that [`Gpu::memory_info`] counts it as free
    /// again; also frees this handle's scratch arena. Buffers are allocated
    /// and freed stream-ordered from a pool that keeps freed memory for the
    /// next allocation instead of releasing it at every synchronisation
    /// (see the `pool` module's notes; an allocation that runs out of memory
    /// trims by itself and tries again). **Synchronises the context** first,
    /// so frees still pending on any stream are counted. Nothing to do where
    /// the device has no stream-ordered allocator.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let big = gpu_core::DeviceBuffer::<u8>::zeros(&gpu, 1 << 30)?;
    /// drop(big); // kept by the pool for the next allocation
    /// gpu.trim_memory_pool()?; // now counted as free again
    /// let (free, _) = gpu.memory_info()?;
    /// # let _ = free;
    /// # Ok(()) }
    /// ```
    pub fn trim_memory_pool(&self) -> Result<()> {
        self.release_scratch();
        self.shared.ctx.synchronize()?;
        if let Some(pool) = &self.shared.pool {
            pool.trim()?;
        }
        if self.shared.ctx.has_async_alloc() {
            trim_default_pool(&self.shared.ctx)?;
        }
        Ok(())
    }

    /// `len` uninitialised elements on this handle's stream: from
    /// parprims' pool where the device has one, else cudarc's allocation.
    /// When the device is out of memory (after the pool has given back what
    /// it keeps), the scratch arenas of this context's streams that no call
    /// is using give their memory back and the allocation is tried once
    /// more; caller-owned workspaces are left alone.
    pub(crate) fn alloc_uninit<T: cudarc::driver::DeviceRepr>(
        &self,
        len: usize,
    ) -> Result<cudarc::driver::CudaSlice<T>> {
        match self.alloc_uninit_once::<T>(len) {
            Err(e) if e.is_out_of_memory() && self.release_idle_stream_arenas() => {
                self.shared.ctx.synchronize()?;
                self.alloc_uninit_once::<T>(len)
            }
            other => other,
        }
    }

    /// Frees the memory of every stream arena of this context that no call
    /// holds (a held one is skipped, never waited for: the allocation may
    /// come from inside a call that holds its own arena). True when any
    /// held memory.
    fn release_idle_stream_arenas(&self) -> bool {
        let arenas: Vec<_> = self
            .shared
            .stream_arenas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        let mut released = false;
        for arena in arenas {
            let mut guard = match arena.try_lock() {
                Ok(guard) => guard,
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            if guard.total_stats().bytes_held > 0 {
                guard.release();
                released = true;
            }
        }
        released
    }

    fn alloc_uninit_once<T: cudarc::driver::DeviceRepr>(
        &self,
        len: usize,
    ) -> Result<cudarc::driver::CudaSlice<T>> {
        match &self.shared.pool {
            Some(pool) => pool.alloc(&self.stream, len),
            // SAFETY: the caller (DeviceBuffer::uninit) documents that the
            // memory is uninitialised.
            None => match unsafe { self.stream.alloc::<T>(len) } {
                Ok(slice) => Ok(slice),
                Err(e) if e.0 == driver_sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                    let (free, total) = self.memory_info().unwrap_or((0, 0));
                    Err(Error::OutOfMemory {
                        bytes: len.saturating_mul(std::mem::size_of::<T>()),
                        free,
                        total,
                    })
                }
                Err(e) => Err(e.into()),
            },
        }
    }

    /// Waits for all work enqueued on this handle's stream.
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut data = gpu_core::DeviceBuffer::<i32>::zeros(&gpu, 1 << 20)?;
    /// data.view_mut().fill(&gpu, 1)?; // enqueued
    /// gpu.synchronize()?; // done
    /// # Ok(()) }
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    /// The context's staging buffer for small reads.
    pub(crate) fn readback(&self) -> &crate::pinned::Readback {
        &self.shared.readback
    }

    /// The context's device-mapped result slot.
    pub(crate) fn mapped_result(&self) -> &crate::pinned::MappedResult {
        &self.shared.mapped_result
    }

    /// Binds the context to the calling thread (needed before raw driver calls).
    pub(crate) fn bind(&self) -> Result<()> {
        Ok(self.shared.ctx.bind_to_thread()?)
    }

    /// The raw stream, for gpu-core's own driver calls.
    pub(crate) fn cu_stream(&self) -> driver_sys::CUstream {
        self.stream.cu_stream()
    }

    /// The module for `source`, compiled for this device on first use: from
    /// this context's store, else the disk cache, else NVRTC. Loading happens
    /// once per context, under a lock.
    ///
    /// Without NVRTC (or with `PARPRIMS_DISABLE_NVRTC=1`) a module the disk
    /// cache holds loads through the driver alone, and one it does not hold
    /// is [`Error::KernelNotCached`], which says how to fill a cache
    /// (`parprims warm-cache --arch sm_XY --out DIR`).
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let module = gpu.module(&fill_module::<f32>())?; // compiled or loaded once per context
    /// let kernel = module.kernel(&fill_entry::<f32>())?;
    /// println!("{} from {:?}", kernel.name(), module.origin());
    /// # Ok(()) }
    /// ```
    pub fn module(&self, source: &ModuleSource) -> Result<Module> {
        let arch = self.shared.info.arch();
        let key = source.cubin_key(&arch);
        let mut store = self
            .shared
            .store
            .modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(loaded) = store.get(&key) {
            return Ok(Module {
                name: source.name().to_owned(),
                loaded: loaded.clone(),
            });
        }
        let started = Instant::now();
        if let Some(cubin) = embedded_cubin(source, &arch) {
            let module = self.load_cubin(cubin.to_vec())?;
            return Ok(Self::keep_embedded(
                &mut store, key, source, module, started,
            ));
        }
        let cache = &self.shared.cache;
        let compiler = nvrtc_compiler();
        if compiler.is_none() {
            // No NVRTC: the disk cache, else embedded PTX for a GPU newer
            // than the embedded cubins, else the typed error.
            if let CacheLookup::Missing | CacheLookup::Corrupt(_) = cache.lookup(key) {
                if let Some(ptx) = embedded_ptx(source, &arch) {
                    let module = self
                        .shared
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_src(ptx))?;
                    return Ok(Self::keep_embedded(
                        &mut store, key, source, module, started,
                    ));
                }
            }
        }
        let found = find_cubin(cache, source, &arch, compiler)?;
        let mut from_disk = found.from_disk;
        let module = match self.load_cubin(found.cubin) {
            Ok(module) => module,
            // A cached cubin the driver refuses is treated like a corrupt
            // entry: compiled afresh (and replaced) when NVRTC is here.
            Err(refused) if from_disk => match compiler {
                Some(compile) => {
                    from_disk = false;
                    self.load_cubin(compile_and_store(cache, source, &arch, key, compile)?)?
                }
                None => {
                    return Err(not_cached(
                        cache,
                        source,
                        &arch,
                        format!("the driver refused its cached cubin ({refused})"),
                    ))
                }
            },
            Err(e) => return Err(e),
        };
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let origin = if from_disk {
            ModuleOrigin::DiskCache { ms }
        } else {
            ModuleOrigin::Compiled { ms }
        };
        Ok(Self::store_module(&mut store, key, source, module, origin))
    }

    /// Keeps a module loaded from an embedded image in the store.
    fn keep_embedded(
        store: &mut HashMap<CubinKey, Arc<LoadedModule>>,
        key: CubinKey,
        source: &ModuleSource,
        module: Arc<CudaModule>,
        started: Instant,
    ) -> Module {
        let ms = started.elapsed().as_secs_f64() * 1e3;
        Self::store_module(store, key, source, module, ModuleOrigin::Embedded { ms })
    }

    fn store_module(
        store: &mut HashMap<CubinKey, Arc<LoadedModule>>,
        key: CubinKey,
        source: &ModuleSource,
        module: Arc<CudaModule>,
        origin: ModuleOrigin,
    ) -> Module {
        let loaded = Arc::new(LoadedModule { module, origin });
        store.insert(key, loaded.clone());
        Module {
            name: source.name().to_owned(),
            loaded,
        }
    }

    fn load_cubin(&self, cubin: Vec<u8>) -> Result<Arc<CudaModule>> {
        Ok(self
            .shared
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))?)
    }

    /// The kernel `entry` of `source` (compiling or loading the module first).
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<u64>(), &fill_entry::<u64>())?;
    /// assert_eq!(kernel.name(), "fill_u64");
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self, source: &ModuleSource, entry: &str) -> Result<Kernel> {
        self.module(source)?.kernel(entry)
    }

    /// Enqueues `kernel` on this handle's stream.
    ///
    /// # Safety
    /// 1. `args` matches the kernel's C parameter list in number, order and
    ///    type.
    /// 2. Every buffer the kernel touches under `config` is allocated, on
    ///    this context, and long enough for the indices the kernel computes.
    /// 3. No buffer the kernel writes is read or written by other work that
    ///    is not ordered with this stream.
    ///
    /// ```no_run
    /// use gpu_core::launch::grid_1d;
    /// use gpu_core::{fill_entry, fill_module, DeviceBuffer, Gpu, KernelArgs};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut out = DeviceBuffer::<f32>::zeros(&gpu, 1000)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// let (config, _blocks) = grid_1d(1000, 256, 1, 0)?;
    /// let mut args = KernelArgs::new();
    /// args.output(&mut out.view_mut()).scalar(1000u64).scalar(2.5f32);
    /// // SAFETY: fill_f32(float* out, u64 n, float value) matches the arguments; out holds n floats.
    /// unsafe { gpu.launch(&kernel, config, &args)? };
    /// assert_eq!(out.to_host(&gpu)?, vec![2.5; 1000]);
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &KernelArgs,
    ) -> Result<()> {
        self.opt_in_dynamic_shared(kernel, config.shared_bytes)?;
        self.bind()?;
        let mut params = args.param_pointers();
        driver_result::launch_kernel(
            kernel.function.cu_function(),
            config.grid,
            config.block,
            config.shared_bytes,
            self.cu_stream(),
            &mut params,
        )?;
        Ok(())
    }

    /// Opts `kernel` in to `shared_bytes` of dynamic shared memory where its
    /// static and dynamic shared memory together pass the 48 KiB default:
    /// once per size, as the kernel remembers the largest size known to
    /// launch, so the hot path asks the driver nothing.
    fn opt_in_dynamic_shared(&self, kernel: &Kernel, shared_bytes: u32) -> Result<()> {
        if shared_bytes > kernel.state.dynamic_shared_opt_in.load(Ordering::Acquire) {
            let static_bytes = kernel.function.shared_size_bytes()? as usize;
            if static_bytes + shared_bytes as usize > self.shared.info.shared_per_block {
                kernel.function.set_attribute(
                    driver_sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes as i32,
                )?;
            }
            kernel
                .state
                .dynamic_shared_opt_in
                .fetch_max(shared_bytes, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Clusters of `kernel` (compiled with a cluster size,
    /// [`Kernel::cluster_blocks`]) of `block_threads` threads and
    /// `shared_bytes` dynamic shared memory per block that the device runs
    /// at once; 0 when it cannot run one (a cluster larger than a GPU
    /// processing cluster holds, or a kernel without a cluster size). Opts
    /// the kernel in to the shared memory and, past 8 blocks, to
    /// non-portable cluster sizes, as a launch needs; asked of the driver
    /// once per shape, then remembered.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// assert_eq!(gpu.resident_clusters(&kernel, 256, 0)?, 0); // no cluster size
    /// # Ok(()) }
    /// ```
    pub fn resident_clusters(
        &self,
        kernel: &Kernel,
        block_threads: u32,
        shared_bytes: u32,
    ) -> Result<u32> {
        let blocks = kernel.cluster_blocks()?;
        if blocks == 0 {
            return Ok(0);
        }
        remembered(
            &kernel.state.clusters,
            (block_threads, shared_bytes),
            || {
                if blocks > 8 {
                    kernel.allow_non_portable_clusters()?;
                }
                self.opt_in_dynamic_shared(kernel, shared_bytes)?;
                self.bind()?;
                let config = driver_sys::CUlaunchConfig {
                    gridDimX: blocks,
                    gridDimY: 1,
                    gridDimZ: 1,
                    blockDimX: block_threads,
                    blockDimY: 1,
                    blockDimZ: 1,
                    sharedMemBytes: shared_bytes,
                    hStream: self.cu_stream(),
                    attrs: std::ptr::null_mut(),
                    numAttrs: 0,
                };
                let mut clusters: std::ffi::c_int = 0;
                // SAFETY: the function is a loaded kernel of this context (bound
                // above), the configuration is a plain value with no attributes,
                // and the count is written to a live local.
                unsafe {
                    driver_sys::cuOccupancyMaxActiveClusters(
                        &mut clusters,
                        kernel.function.cu_function(),
                        &config,
                    )
                    .result()?;
                }
                Ok(clusters.max(0) as u32)
            },
        )
    }

    /// Enqueues on this handle's stream a device-to-device copy of `src` into
    /// the module-scope variable `symbol` (a `__constant__` or `__device__`
    /// array) of `module`, starting at the symbol's first byte.
    ///
    /// The copy is ordered with this stream only: kernels enqueued on it
    /// before the copy read the old contents, kernels enqueued after it the
    /// new ones. A module (and so its symbols) is shared by every handle on
    /// the context, so a caller that rewrites a symbol from several streams
    /// must order those streams itself (see `linalg`'s `ConstantFilter`).
    ///
    /// `module` must have been loaded through this handle's context
    /// ([`Gpu::module`]). Errors: [`Error::InvalidArgument`] when the module
    /// has no such symbol or `src` is longer than it.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, ModuleSource};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let source = ModuleSource::new("weights")
    ///     .source("__constant__ float weights[4];")
    ///     .entry("scale", "float* x", "x[threadIdx.x] *= weights[threadIdx.x]", None);
    /// let module = gpu.stored_module("example/weights", || source)?;
    /// let weights = DeviceBuffer::from_host(&gpu, &[1.0f32, 0.5, 0.25, 0.125])?;
    /// gpu.copy_to_symbol(&module, "weights", &weights.view())?; // kernels enqueued after it see these
    /// # Ok(()) }
    /// ```
    pub fn copy_to_symbol<T: crate::DeviceType>(
        &self,
        module: &Module,
        symbol: &str,
        src: &crate::DeviceView<'_, T>,
    ) -> Result<()> {
        self.bind()?;
        let global = module
            .loaded
            .module
            .get_global(symbol, &self.stream)
            .map_err(|e| {
                Error::invalid(
                    "symbol",
                    format!(
                        "`{symbol}` is not a global of module `{}`: {e}",
                        module.name
                    ),
                )
            })?;
        let symbol_bytes = global.len();
        if src.bytes() > symbol_bytes {
            return Err(Error::invalid(
                "src",
                format!(
                    "{} bytes do not fit in `{symbol}` ({symbol_bytes} bytes)",
                    src.bytes()
                ),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        let (dst, _record) = cudarc::driver::DevicePtr::device_ptr(&global, &self.stream);
        // SAFETY: `dst` is the symbol's device address, at least `src.bytes()`
        // long (checked above); `src` is live device memory of that length;
        // both belong to this context and the copy is ordered on its stream.
        unsafe {
            driver_result::memcpy_dtod_async(dst, src.device_ptr(), src.bytes(), self.cu_stream())
        }?;
        Ok(())
    }
}

/// `cuModuleGetFunction`'s error as ours: "not found" is a missing entry,
/// anything else (a sticky fault of the context, a lost device) stays the
/// driver's error.
fn missing_entry_or_driver(error: DriverError, module: &str, entry: &str) -> Error {
    if error.0 == driver_sys::CUresult::CUDA_ERROR_NOT_FOUND {
        Error::MissingEntry {
            module: module.to_owned(),
            entry: entry.to_owned(),
        }
    } else {
        Error::Driver(error)
    }
}

/// A module loaded on a context.
#[derive(Clone)]
pub struct Module {
    name: String,
    loaded: Arc<LoadedModule>,
}

impl Module {
    /// The entry point `entry`: [`Error::MissingEntry`] when the module has
    /// no such entry, [`Error::Driver`] for any other failure of the lookup
    /// (a context already broken by an earlier fault answers every call
    /// with that fault's error, which must not read as a missing entry).
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let module = gpu.module(&fill_module::<i8>())?;
    /// assert_eq!(module.kernel(&fill_entry::<i8>())?.name(), "fill_i8");
    /// assert!(module.kernel("no_such_entry").is_err()); // Error::MissingEntry
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self, entry: &str) -> Result<Kernel> {
        let function = self
            .loaded
            .module
            .load_function(entry)
            .map_err(|e| missing_entry_or_driver(e, &self.name, entry))?;
        Ok(Kernel {
            name: entry.to_owned(),
            function,
            state: Arc::default(),
        })
    }

    /// Where the module came from and how long that took (the first load on
    /// this context).
    ///
    /// ```no_run
    /// use gpu_core::{fill_module, Gpu, ModuleOrigin};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let module = gpu.module(&fill_module::<i8>())?;
    /// if let ModuleOrigin::Compiled { ms } = module.origin() {
    ///     println!("NVRTC took {ms:.1} ms; the next process loads it from the disk cache");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn origin(&self) -> ModuleOrigin {
        self.loaded.origin
    }
}

/// A kernel entry point, ready to launch with [`Gpu::launch`].
///
/// Clones share the answers already asked of the driver (occupancy per
/// launch shape, the dynamic shared memory opted into), so a kernel kept in
/// the [`KernelStore`] is launched without driver queries.
#[derive(Clone, Debug)]
pub struct Kernel {
    name: String,
    function: CudaFunction,
    state: Arc<KernelState>,
}

/// What a kernel has learnt from the driver, shared by its clones.
#[derive(Debug, Default)]
struct KernelState {
    /// Resident blocks per SM by (block threads, dynamic shared bytes).
    resident: Mutex<Vec<((u32, usize), u32)>>,
    /// The largest dynamic shared memory size known to launch (opted in on
    /// the function where static and dynamic together pass the default).
    dynamic_shared_opt_in: AtomicU32,
    /// Whether clusters of more than 8 blocks are allowed.
    non_portable_clusters: AtomicBool,
    /// The compile-time cluster width plus one, once asked (0 before).
    cluster_blocks: AtomicU32,
    /// Resident clusters by (block threads, dynamic shared bytes).
    clusters: Mutex<Vec<((u32, u32), u32)>>,
}

impl Kernel {
    /// The entry point's name.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// assert_eq!(kernel.name(), "fill_f32");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers per thread, as the compiler allocated them.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// println!("{} registers per thread", kernel.registers()?);
    /// # Ok(()) }
    /// ```
    pub fn registers(&self) -> Result<i32> {
        Ok(self
            .function
            .get_attribute(driver_sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NUM_REGS)?)
    }

    /// Blocks per cluster along x that the kernel was compiled for
    /// (`__cluster_dims__`, [`ModuleSource::entry_with_cluster`]); 0 when it
    /// was compiled without (on a target older than sm_90, or loaded from
    /// PTX for one), in which case it must not be launched as a cluster.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// assert_eq!(kernel.cluster_blocks()?, 0);
    /// # Ok(()) }
    /// ```
    pub fn cluster_blocks(&self) -> Result<u32> {
        // Asked of the driver once, then remembered (as width + 1; 0: not
        // asked yet).
        let known = self.state.cluster_blocks.load(Ordering::Acquire);
        if known != 0 {
            return Ok(known - 1);
        }
        let width = self.function.get_attribute(
            driver_sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        )?;
        let width = width.max(0) as u32;
        self.state
            .cluster_blocks
            .store(width + 1, Ordering::Release);
        Ok(width)
    }

    /// Lets the kernel launch as clusters of more than the portable 8
    /// blocks (up to 16 on sm_90), where the GPU can schedule them; asks
    /// the driver once per kernel.
    pub fn allow_non_portable_clusters(&self) -> Result<()> {
        if !self.state.non_portable_clusters.load(Ordering::Acquire) {
            self.function.set_attribute(
                driver_sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )?;
            self.state
                .non_portable_clusters
                .store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Blocks of `block_threads` threads with `shared_bytes` dynamic shared
    /// memory that fit on one multiprocessor at once. Asked of the driver
    /// once per shape, then remembered.
    ///
    /// ```no_run
    /// use gpu_core::{fill_entry, fill_module, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let kernel = gpu.kernel(&fill_module::<f32>(), &fill_entry::<f32>())?;
    /// let resident = kernel.resident_blocks_per_sm(256, 0)?; // 256 threads, no dynamic shared memory
    /// let full_wave = resident as u64 * gpu.info().sm_count as u64;
    /// println!("{full_wave} blocks of 256 threads run at once");
    /// # Ok(()) }
    /// ```
    pub fn resident_blocks_per_sm(&self, block_threads: u32, shared_bytes: usize) -> Result<u32> {
        remembered(&self.state.resident, (block_threads, shared_bytes), || {
            Ok(self
                .function
                .occupancy_max_active_blocks_per_multiprocessor(
                    block_threads,
                    shared_bytes,
                    None,
                )?)
        })
    }
}

/// The value remembered in `cache` for `shape`, or `ask`'s answer, then
/// remembered (a driver query asked once per kernel and shape). The lock is
/// not held while asking; two threads asking at once both ask, and the
/// first answer stays.
fn remembered<S: PartialEq + Copy>(
    cache: &Mutex<Vec<(S, u32)>>,
    shape: S,
    ask: impl FnOnce() -> Result<u32>,
) -> Result<u32> {
    let known = |entries: &Vec<(S, u32)>| entries.iter().find(|(s, _)| *s == shape).map(|e| e.1);
    // Pushes complete or unwind before touching the Vec.
    if let Some(value) = known(&cache.lock().unwrap_or_else(|p| p.into_inner())) {
        return Ok(value);
    }
    let value = ask()?;
    let mut entries = cache.lock().unwrap_or_else(|p| p.into_inner());
    Ok(match known(&entries) {
        Some(first) => first,
        None => {
            entries.push((shape, value));
            value
        }
    })
}

/// Kernel arguments, packed in order.
///
/// Device pointers come from views ([`crate::DeviceView::device_ptr`]);
/// scalars are any `Pod` value of at most 16 bytes, and [`KernelArgs::by_value`]
/// passes a larger `Pod` struct (a table of addresses, say) by value.
#[derive(Clone, Debug, Default)]
pub struct KernelArgs {
    /// 16-byte slots: one per argument, or several consecutive ones for an
    /// argument of more than 16 bytes.
    slots: Vec<[u64; 2]>,
    /// Where each argument of more than 16 bytes lies: (its first slot,
    /// its slot count). Empty for the usual argument lists.
    wide: Vec<(usize, usize)>,
}

impl KernelArgs {
    /// No arguments yet.
    ///
    /// ```
    /// let mut args = gpu_core::KernelArgs::new();
    /// assert!(args.is_empty());
    /// args.scalar(42u64).scalar(1.5f32);
    /// assert_eq!(args.len(), 2);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A read-only buffer argument (`const T*`).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, KernelArgs};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0])?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&gpu, 2)?;
    /// let mut args = KernelArgs::new(); // for `kernel(const float* x, float* y, u64 n)`
    /// args.input(&x.view()).output(&mut y.view_mut()).scalar(2u64);
    /// # Ok(()) }
    /// ```
    pub fn input<T: crate::DeviceType>(&mut self, view: &crate::DeviceView<'_, T>) -> &mut Self {
        self.scalar(view.device_ptr())
    }

    /// A written buffer argument (`T*`).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu, KernelArgs};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let x = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0])?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&gpu, 2)?;
    /// let mut args = KernelArgs::new(); // for `kernel(const float* x, float* y, u64 n)`
    /// args.input(&x.view()).output(&mut y.view_mut()).scalar(2u64);
    /// # Ok(()) }
    /// ```
    pub fn output<T: crate::DeviceType>(
        &mut self,
        view: &mut crate::DeviceViewMut<'_, T>,
    ) -> &mut Self {
        self.scalar(view.device_ptr())
    }

    /// A scalar argument passed by value.
    ///
    /// ```
    /// let mut args = gpu_core::KernelArgs::new();
    /// args.scalar(1000u64).scalar(-1i32).scalar([0.5f64, 2.0]); // n, a flag, a 16-byte pair
    /// assert_eq!(args.len(), 3);
    /// ```
    pub fn scalar<S: bytemuck::Pod>(&mut self, value: S) -> &mut Self {
        let bytes = bytemuck::bytes_of(&value);
        assert!(
            bytes.len() <= 16,
            "kernel scalar arguments are at most 16 bytes (this one is {})",
            bytes.len()
        );
        let mut slot = [0u64; 2];
        bytemuck::bytes_of_mut(&mut slot)[..bytes.len()].copy_from_slice(bytes);
        self.slots.push(slot);
        self
    }

    /// A `Pod` argument of any size passed by value: the kernel declares it
    /// as a struct parameter of the same layout (`const __grid_constant__
    /// Table table`, so that taking its address reads parameter space
    /// directly). CUDA allows 4 KiB of parameters in all (32 764 bytes from
    /// CUDA 12.1 on Volta and later).
    ///
    /// ```
    /// let mut args = gpu_core::KernelArgs::new();
    /// args.scalar(7u64).by_value([1u64; 25]).scalar(2u32); // a pointer, a 200-byte table, a count
    /// assert_eq!(args.len(), 3);
    /// ```
    pub fn by_value<S: bytemuck::Pod>(&mut self, value: S) -> &mut Self {
        let bytes = bytemuck::bytes_of(&value);
        if bytes.len() <= 16 {
            return self.scalar(value);
        }
        let count = bytes.len().div_ceil(16);
        let first = self.slots.len();
        self.wide.push((first, count));
        self.slots.resize(first + count, [0u64; 2]);
        bytemuck::cast_slice_mut::<[u64; 2], u8>(&mut self.slots[first..])[..bytes.len()]
            .copy_from_slice(bytes);
        self
    }

    /// Pointers to each argument's bytes, in order (what `cuLaunchKernel`
    /// takes).
    fn param_pointers(&self) -> Vec<*mut c_void> {
        let pointer = |slot: usize| self.slots[slot].as_ptr() as *mut c_void;
        if self.wide.is_empty() {
            return (0..self.slots.len()).map(pointer).collect();
        }
        let mut params = Vec::with_capacity(self.len());
        let mut slot = 0;
        let mut wide = self.wide.iter().peekable();
        while slot < self.slots.len() {
            params.push(pointer(slot));
            slot += match wide.peek() {
                Some(&&(first, count)) if first == slot => {
                    wide.next();
                    count
                }
                _ => 1,
            };
        }
        params
    }

    /// How many arguments have been pushed.
    ///
    /// ```
    /// let mut args = gpu_core::KernelArgs::new();
    /// assert!(args.is_empty());
    /// args.scalar(42u64).scalar(1.5f32);
    /// assert_eq!(args.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.slots.len() - self.wide.iter().map(|&(_, count)| count - 1).sum::<usize>()
    }

    /// Whether no argument has been pushed.
    ///
    /// ```
    /// let mut args = gpu_core::KernelArgs::new();
    /// assert!(args.is_empty());
    /// args.scalar(42u64).scalar(1.5f32);
    /// assert_eq!(args.len(), 2);
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_handles_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Gpu>();
        assert_send_sync::<Kernel>();
        assert_send_sync::<Module>();
    }

    #[test]
    fn only_not_found_reads_as_a_missing_entry() {
        let missing = missing_entry_or_driver(
            DriverError(driver_sys::CUresult::CUDA_ERROR_NOT_FOUND),
            "scan_i32",
            "nope",
        );
        assert!(
            matches!(&missing, Error::MissingEntry { module, entry } if module == "scan_i32" && entry == "nope"),
            "{missing:?}"
        );
        // A context broken by an earlier fault answers the lookup with the
        // fault: that is the driver's error, not a missing entry.
        let sticky = missing_entry_or_driver(
            DriverError(driver_sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            "scan_i32",
            "scan_i32_sum",
        );
        assert!(
            matches!(
                sticky,
                Error::Driver(DriverError(
                    driver_sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
                ))
            ),
            "{sticky:?}"
        );
    }

    #[test]
    fn scalars_pack_into_slots() {
        let mut args = KernelArgs::new();
        args.scalar(7u64).scalar(-1i32).scalar(1.5f64);
        assert_eq!(args.len(), 3);
        assert_eq!(args.slots[0][0], 7);
        assert_eq!(args.slots[1][0] as u32, u32::MAX);
        assert_eq!(f64::from_bits(args.slots[2][0]), 1.5);
    }

    #[test]
    fn wide_arguments_take_consecutive_slots_and_one_pointer() {
        let mut args = KernelArgs::new();
        let table: [u64; 25] = std::array::from_fn(|i| i as u64 + 100);
        args.scalar(7u64)
            .by_value(table)
            .scalar(9u32)
            .by_value([5u64; 2]);
        assert_eq!(args.len(), 4);
        // 1 + 13 + 1 + 1 slots; the 16-byte pair is an ordinary scalar.
        assert_eq!(args.slots.len(), 16);
        let params = args.param_pointers();
        assert_eq!(params.len(), 4);
        // SAFETY: each pointer points into `args.slots`, alive and unchanged.
        unsafe {
            assert_eq!(*(params[0] as *const u64), 7);
            let read: &[u64; 25] = &*(params[1] as *const [u64; 25]);
            assert_eq!(read, &table);
            assert_eq!(*(params[2] as *const u32), 9);
            assert_eq!(*(params[3] as *const [u64; 2]), [5, 5]);
        }
    }
}
