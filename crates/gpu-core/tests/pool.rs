//! parprims' memory pool: freed memory stays with the pool for the next
//! allocation (no remapping after a synchronisation), and is given back to
//! the driver on request.

use gpu_core::{DeviceBuffer, Gpu};

const BIG: usize = 512 << 20;

/// The tests measure the pool and the device's free memory: they must not
/// run at once.
static DEVICE_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Slack for the pool's own rounding, far below [`BIG`].
const SLACK: u64 = 32 << 20;

#[test]
#[ignore = "needs a CUDA GPU"]
fn freed_memory_is_kept_until_trimmed() -> gpu_core::Result<()> {
    // Read through the pool's own counts (`Gpu::pool_memory`), which other
    // programs on the same GPU do not move.
    let _alone = DEVICE_MEMORY.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = Gpu::new(0)?.with_new_stream()?;
    gpu.trim_memory_pool()?;
    let at_start = gpu.pool_memory()?;
    let big = BIG as u64;
    {
        // SAFETY: never read.
        let buffer = unsafe { DeviceBuffer::<u8>::uninit(&gpu, BIG)? };
        assert_eq!(buffer.len(), BIG);
        gpu.synchronize()?;
        let live = gpu.pool_memory()?;
        assert!(
            live.used >= at_start.used + big && live.reserved >= at_start.reserved + big,
            "a live {BIG} B buffer is not counted: {at_start:?} -> {live:?}"
        );
    }
    gpu.synchronize()?;
    let after_drop = gpu.pool_memory()?;
    assert!(
        after_drop.used <= at_start.used + SLACK,
        "the freed buffer still counts as used: {at_start:?} -> {after_drop:?}"
    );
    assert!(
        after_drop.reserved >= at_start.reserved + big,
        "the pool gave the freed memory back at the synchronisation: {at_start:?} -> {after_drop:?}"
    );
    // The next allocation of the same size reuses it: the pool takes
    // nothing more from the driver.
    {
        // SAFETY: never read.
        let _buffer = unsafe { DeviceBuffer::<u8>::uninit(&gpu, BIG)? };
        gpu.synchronize()?;
        let reused = gpu.pool_memory()?;
        assert!(
            reused.reserved <= after_drop.reserved + SLACK,
            "a second allocation mapped new memory: {after_drop:?} -> {reused:?}"
        );
    }
    gpu.trim_memory_pool()?;
    let trimmed = gpu.pool_memory()?;
    assert!(
        trimmed.reserved <= at_start.reserved + SLACK,
        "trim_memory_pool kept memory: {at_start:?} -> {trimmed:?}"
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
