//! parprims' own stream-ordered memory pool, one per device handle family
//! (a [`Gpu`](crate::Gpu) and the handles made from it).
//!
//! Buffers are allocated and freed stream-ordered (`cuMemAllocFromPoolAsync`,
//! `cuMemFreeAsync`). The device's default pool gives its free memory back
//! to the driver at every synchronisation (release threshold 0), so a
//! program that allocates, synchronises and allocates again maps fresh pages
//! every time: for a 1 GiB result, about a millisecond per call. This pool
//! keeps what it has freed (release threshold: unlimited) and reuses it, so
//! a steady-state allocating call costs about what its `_into` form costs.
//! Its memory is given back
//! - on request: [`Gpu::trim_memory_pool`](crate::Gpu::trim_memory_pool);
//! - when an allocation fails for lack of memory: the context is
//!   synchronised, this pool and the device's default pool are trimmed,
//!   and the allocation is tried once more before
//!   [`Error::OutOfMemory`](crate::Error::OutOfMemory);
//! - when the last handle drops (the pool is destroyed; memory still in
//!   live buffers is released as they are freed).
//!
//! A program's own cudarc allocations stay in the default pool, untouched.
//! Several processes sharing one GPU each keep their freed memory; set
//! `PARPRIMS_POOL_KEEP_BYTES` (bytes kept through a synchronisation, `0` for
//! none) to bound that.

use std::sync::Arc;

use cudarc::driver::sys as driver_sys;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};

use crate::error::{Error, Result};

/// An owned `CUmemoryPool` with an unlimited release threshold.
pub(crate) struct DevicePool {
    pool: driver_sys::CUmemoryPool,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUmemoryPool handle may be used from any thread; the driver
// synchronises operations on it.
unsafe impl Send for DevicePool {}
// SAFETY: as above; every method takes &self and only calls the driver.
unsafe impl Sync for DevicePool {}

impl DevicePool {
    /// A pool on `ctx`'s device, or `None` where the device has no
    /// stream-ordered allocator (buffers then come from cudarc's own
    /// allocation path).
    pub(crate) fn create(ctx: &Arc<CudaContext>) -> Result<Option<DevicePool>> {
        if !ctx.has_async_alloc() {
            return Ok(None);
        }
        ctx.bind_to_thread()?;
        // SAFETY: an all-zero CUmemPoolProps is the documented default
        // (no handle types, no maximum size); the fields below say where.
        let mut props: driver_sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = driver_sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type_ = driver_sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ctx.ordinal() as i32;
        let mut pool: driver_sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer and `props` a valid
        // description of device memory on this context's device.
        unsafe { driver_sys::cuMemPoolCreate(&mut pool, &props) }.result()?;
        let owned = DevicePool {
            pool,
            ctx: ctx.clone(),
        };
        let mut threshold: u64 = keep_bytes();
        // SAFETY: RELEASE_THRESHOLD takes a u64 (cuuint64_t) by pointer.
        unsafe {
            driver_sys::cuMemPoolSetAttribute(
                pool,
                driver_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        }
        .result()?;
        Ok(Some(owned))
    }

    /// `len` elements of `T`, uninitialised, allocated on `stream` (ordered
    /// after its earlier work) and freed stream-ordered when the slice drops.
    /// On out-of-memory: synchronise, trim, try once more.
    pub(crate) fn alloc<T: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::invalid("len", format!("{len} elements overflow usize bytes")))?;
        self.ctx.bind_to_thread()?;
        let ptr = match self.raw_alloc(stream, bytes) {
            Err(driver_sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY) => {
                self.ctx.synchronize()?;
                self.trim()?;
                trim_default_pool(&self.ctx)?;
                self.raw_alloc(stream, bytes)
            }
            other => other,
        };
        let ptr = match ptr {
            Ok(ptr) => ptr,
            Err(driver_sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY) => {
                let (free, total) = self.ctx.mem_get_info().unwrap_or((0, 0));
                return Err(Error::OutOfMemory { bytes, free, total });
            }
            Err(e) => return Err(cudarc::driver::DriverError(e).into()),
        };
        // `upgrade_device_ptr` creates the slice's events when the context
        // tracks them and panics if that fails: keep the panic inside.
        let upgraded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `ptr` is a fresh allocation of `bytes` = len·size_of T
            // bytes on this context, owned by nothing else; the slice frees
            // it stream-ordered on `stream` (cuMemFreeAsync, valid for pool
            // allocations).
            unsafe { stream.upgrade_device_ptr::<T>(ptr, len) }
        }));
        match upgraded {
            Ok(slice) => Ok(slice),
            Err(_) => {
                // SAFETY: `ptr` was allocated above and is owned by nothing.
                unsafe { driver_sys::cuMemFreeAsync(ptr, stream.cu_stream()) }.result()?;
                Err(Error::invalid(
                    "buffer",
                    "the driver could not create the events of a new buffer",
                ))
            }
        }
    }

    fn raw_alloc(
        &self,
        stream: &CudaStream,
        bytes: usize,
    ) -> std::result::Result<driver_sys::CUdeviceptr, driver_sys::cudaError_enum> {
        let mut ptr: driver_sys::CUdeviceptr = 0;
        // SAFETY: the context is bound; `ptr` is a valid out-pointer; the
        // stream belongs to this pool's context.
        let status = unsafe {
            driver_sys::cuMemAllocFromPoolAsync(
                &mut ptr,
                bytes.max(1),
                self.pool,
                stream.cu_stream(),
            )
        };
        match status {
            driver_sys::cudaError_enum::CUDA_SUCCESS => Ok(ptr),
            error => Err(error),
        }
    }

    /// Lets kernels on device `ordinal` read and write every allocation of
    /// this pool, present and future (`cuMemPoolSetAccess`; peer access
    /// between the contexts does not cover pool memory).
    pub(crate) fn grant_access(&self, ordinal: usize) -> Result<()> {
        // SAFETY: an all-zero CUmemAccessDesc is valid; the fields below
        // name a device and read-write access.
        let mut desc: driver_sys::CUmemAccessDesc = unsafe { std::mem::zeroed() };
        desc.location.type_ = driver_sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        desc.location.id = ordinal as i32;
        desc.flags = driver_sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        self.ctx.bind_to_thread()?;
        // SAFETY: the pool is live; `desc` is one valid access descriptor.
        unsafe { driver_sys::cuMemPoolSetAccess(self.pool, &desc, 1) }.result()?;
        Ok(())
    }

    /// Bytes in live allocations of the pool, and bytes it holds from the
    /// driver (those plus what it keeps for reuse).
    pub(crate) fn usage(&self) -> Result<(u64, u64)> {
        self.ctx.bind_to_thread()?;
        usage_of(self.pool)
    }

    /// Gives every byte the pool holds but no live buffer uses back to the
    /// driver (frees still pending on a stream are not counted: synchronise
    /// first to include them).
    pub(crate) fn trim(&self) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the pool is live; trimming only releases unused memory.
        unsafe { driver_sys::cuMemPoolTrimTo(self.pool, 0) }.result()?;
        Ok(())
    }
}

/// Bytes the pool keeps through a synchronisation: `PARPRIMS_POOL_KEEP_BYTES`
/// when it is set to a whole number (`0` gives freed memory back at every
/// synchronisation, as the default pool does: for several processes
/// sharing one GPU), else unlimited.
fn keep_bytes() -> u64 {
    std::env::var("PARPRIMS_POOL_KEEP_BYTES")
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX)
}

/// Trims the device's current (default) pool, which cudarc's own
/// allocations use, to nothing unused.
pub(crate) fn trim_default_pool(ctx: &Arc<CudaContext>) -> Result<()> {
    ctx.bind_to_thread()?;
    let mut pool: driver_sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: the context is bound; `pool` is a valid out-pointer; the pool
    // returned lives as long as the device, and trimming it only releases
    // memory no allocation holds.
    unsafe { driver_sys::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) }.result()?;
    unsafe { driver_sys::cuMemPoolTrimTo(pool, 0) }.result()?;
    Ok(())
}

/// Bytes in live allocations and bytes reserved from the driver of the
/// device's current (default) pool, which cudarc's own allocations use.
pub(crate) fn default_pool_usage(ctx: &Arc<CudaContext>) -> Result<(u64, u64)> {
    ctx.bind_to_thread()?;
    let mut pool: driver_sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: the context is bound; `pool` is a valid out-pointer; the pool
    // returned lives as long as the device.
    unsafe { driver_sys::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) }.result()?;
    usage_of(pool)
}

/// (used, reserved) bytes of a live pool.
fn usage_of(pool: driver_sys::CUmemoryPool) -> Result<(u64, u64)> {
    let attribute = |attribute| -> Result<u64> {
        let mut value: u64 = 0;
        // SAFETY: the pool is live; USED_MEM_CURRENT and RESERVED_MEM_CURRENT
        // write a u64 (cuuint64_t) through the pointer.
        unsafe {
            driver_sys::cuMemPoolGetAttribute(pool, attribute, (&mut value as *mut u64).cast())
        }
        .result()?;
        Ok(value)
    };
    Ok((
        attribute(driver_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
        attribute(driver_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
    ))
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        // Memory still held by live buffers is released when they are
        // freed (cuMemPoolDestroy's documented behaviour).
        let _ = self.ctx.bind_to_thread();
        // SAFETY: the pool is destroyed once, here; buffers allocated from
        // it stay valid until freed.
        let _ = unsafe { driver_sys::cuMemPoolDestroy(self.pool) };
    }
}
