//! Loaded kernels, kept per context so a compaction finds its kernel without
//! rebuilding and hashing its module source.
//!
//! `Gpu::kernel` identifies a module by a hash of its full source (tens of
//! kilobytes for the built-in compaction module), tens of microseconds of
//! host time per call that the GPU waits through between back-to-back
//! compactions (and that CUDA-event timings count). Built-in modules are
//! fully named by their element type and tuning, so their kernels are kept
//! here under (context, module name, entry) and found in well under a
//! microsecond. Modules with a caller's predicate are not kept (two custom
//! predicates may share a name), they go through `Gpu::kernel` every time.
//! A kept kernel keeps its module loaded (and its context alive) after the
//! last `Gpu` handle of that context is dropped, until the store drops it
//! (see `MAX_OTHER_CONTEXTS`).

use std::sync::{Arc, Mutex, MutexGuard};

use gpu_core::{Element, Gpu, Kernel, ModuleSource, Result};

use crate::modules::{builtin_module_name, PredicateSource, Tuning};

struct Stored {
    /// The context's address. The stored kernel holds its module, which
    /// holds the context, so the address cannot be reused by another
    /// context while the entry exists.
    context: usize,
    module: String,
    entry: String,
    kernel: Kernel,
    /// (block threads, resident blocks per SM without dynamic shared memory).
    resident: Vec<(u32, u32)>,
}

static STORE: Mutex<Vec<Stored>> = Mutex::new(Vec::new());

/// Entries kept before the store is emptied: a process uses at most
/// 6 types × (8 entries + 3 per candidate) on one context.
const CAPACITY: usize = 512;

/// Contexts other than the caller's whose entries are kept.
const MAX_OTHER_CONTEXTS: usize = 3;

fn store() -> MutexGuard<'static, Vec<Stored>> {
    // No operation on the Vec can leave it half-updated by a panic.
    STORE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn context_of(gpu: &Gpu) -> usize {
    Arc::as_ptr(gpu.cudarc_context()) as *const u8 as usize
}

/// The kernel `entry` of the module `predicate` and `tuning` select (see
/// `modules::single_pass_module`; the default tuning's module holds the
/// count and three-pass entries too), loaded on `gpu`'s context, and, when
/// `occupancy_threads` is given, its resident blocks per SM at that block
/// size (else 0). `build` makes the module source; it runs only when the
/// kernel is not kept yet, or for a custom predicate.
pub(crate) fn kernel<T: Element>(
    gpu: &Gpu,
    predicate: PredicateSource<'_, T>,
    tuning: &Tuning,
    build: impl FnOnce() -> ModuleSource,
    entry: &str,
    occupancy_threads: Option<u32>,
) -> Result<(Kernel, u32)> {
    let name = match predicate {
        PredicateSource::Builtin => builtin_module_name::<T>(tuning),
        PredicateSource::Custom(_) => {
            // Not kept: a caller's predicate.
            let kernel = gpu.kernel(&build(), entry)?;
            let resident = match occupancy_threads {
                Some(threads) => kernel.resident_blocks_per_sm(threads, 0)?,
                None => 0,
            };
            return Ok((kernel, resident));
        }
    };
    let context = context_of(gpu);
    {
        let store = store();
        if let Some(stored) = store
            .iter()
            .find(|s| s.context == context && s.entry == entry && s.module == name)
        {
            match occupancy_threads {
                None => return Ok((stored.kernel.clone(), 0)),
                Some(threads) => {
                    if let Some(&(_, resident)) = stored.resident.iter().find(|r| r.0 == threads) {
                        return Ok((stored.kernel.clone(), resident));
                    }
                }
            }
        }
    }
    // Load without holding the lock (a first compile takes seconds;
    // Gpu::module serialises loading per context itself).
    let kernel = gpu.kernel(&build(), entry)?;
    let resident = match occupancy_threads {
        Some(threads) => kernel.resident_blocks_per_sm(threads, 0)?,
        None => 0,
    };
    let mut store = store();
    // A kept kernel keeps its module loaded and its context alive: bound
    // both, keeping only this context's entries when the store is full or
    // holds more than a few other contexts (a process that opens devices
    // over and over).
    let mut others: Vec<usize> = store
        .iter()
        .map(|s| s.context)
        .filter(|&c| c != context)
        .collect();
    others.sort_unstable();
    others.dedup();
    if store.len() >= CAPACITY || others.len() >= MAX_OTHER_CONTEXTS {
        store.retain(|s| s.context == context);
        if store.len() >= CAPACITY {
            store.clear();
        }
    }
    match store
        .iter_mut()
        .find(|s| s.context == context && s.entry == entry && s.module == name)
    {
        Some(stored) => {
            if let Some(threads) = occupancy_threads {
                if !stored.resident.iter().any(|r| r.0 == threads) {
                    stored.resident.push((threads, resident));
                }
            }
        }
        None => store.push(Stored {
            context,
            module: name,
            entry: entry.to_owned(),
            kernel: kernel.clone(),
            resident: occupancy_threads
                .map(|threads| vec![(threads, resident)])
                .unwrap_or_default(),
        }),
    }
    Ok((kernel, resident))
}
