//! parprims' memory pool: freed memory stays with the pool for the next
//! allocation (no remapping after a synchronisation), and is given back to
//! the driver on request.

use gpu_core::{DeviceBuffer, Gpu};

const BIG: usize = 512 << 20;

/// The tests read the device's free memory: they must not run at once.
static DEVICE_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
#[ignore = "needs a CUDA GPU"]
fn freed_memory_is_kept_until_trimmed() -> gpu_core::Result<()> {
    let _alone = DEVICE_MEMORY.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = Gpu::new(0)?.with_new_stream()?;
    gpu.trim_memory_pool()?;
    let (free_at_start, _) = gpu.memory_info()?;
    {
        // SAFETY: never read.
        let buffer = unsafe { DeviceBuffer::<u8>::uninit(&gpu, BIG)? };
        assert_eq!(buffer.len(), BIG);
    }
    gpu.synchronize()?;
    let (free_after_drop, _) = gpu.memory_info()?;
    assert!(
        free_after_drop + BIG / 2 < free_at_start,
        "the pool gave the freed memory back at the synchronisation: {free_at_start} -> {free_after_drop}"
    );
    // The next allocation of the same size reuses it: free memory does not
    // drop again.
    {
        // SAFETY: never read.
        let _buffer = unsafe { DeviceBuffer::<u8>::uninit(&gpu, BIG)? };
        gpu.synchronize()?;
        let (free_reused, _) = gpu.memory_info()?;
        assert!(
            free_reused + (64 << 20) > free_after_drop,
            "a second allocation mapped new memory: {free_after_drop} -> {free_reused}"
        );
    }
    gpu.trim_memory_pool()?;
    let (free_trimmed, _) = gpu.memory_info()?;
    assert!(
        free_trimmed + (64 << 20) > free_at_start,
        "trim_memory_pool kept memory: {free_at_start} -> {free_trimmed}"
    );
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_allocation_larger_than_free_memory_is_a_typed_error_after_trimming() -> gpu_core::Result<()> {
    let _alone = DEVICE_MEMORY.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = Gpu::new(0)?.with_new_stream()?;
    let (_, total) = gpu.memory_info()?;
    // Hold a large freed block in the pool, then ask for more than the
    // device has: the pool trims, retries and reports out of memory.
    {
        // SAFETY: never read.
        let _held = unsafe { DeviceBuffer::<u8>::uninit(&gpu, BIG)? };
    }
    // SAFETY: never read (and never allocated).
    let error = unsafe { DeviceBuffer::<u8>::uninit(&gpu, total + BIG) }.unwrap_err();
    assert!(
        matches!(error, gpu_core::Error::OutOfMemory { .. }),
        "{error}"
    );
    // The trim gave the held block back: a near-total allocation succeeds.
    gpu.synchronize()?;
    let (free, _) = gpu.memory_info()?;
    // SAFETY: never read.
    let _most = unsafe { DeviceBuffer::<u8>::uninit(&gpu, free.saturating_sub(256 << 20))? };
    Ok(())
}
