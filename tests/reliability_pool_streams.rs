//! Reliability: the simplest multi-stream pattern, on its own.
//!
//! `reliability_concurrency` runs every primitive from 8 threads at once.
//! Under compute-sanitizer's initcheck, with several instrumented processes
//! sharing the GPU, its leak test has reported "uninitialized" reads of
//! bytes that its kernels had written (the results were exact) and once
//! failed with an illegal-address fault (see docs/RELIABILITY.md). This
//! binary is the control for those runs: it keeps the same shape of work,
//! 8 threads each on its own stream, each allocating stream-ordered from
//! the device's pool, but runs nothing of the library beyond gpu-core:
//!
//! 1. allocate `a` and `b` of a random length (`DeviceBuffer::uninit`, so
//!    nothing initialises them but the kernels);
//! 2. one kernel writes every element of `a` (`a[i] = hash(seed, i)`);
//! 3. a second kernel reads every element of `a` and writes `b[i] = a[i] ^
//!    rotl(a[i], 13)`;
//! 4. copy `b` to the host and compare every element with the CPU;
//! 5. drop both buffers (freed stream-ordered on the thread's stream).
//!
//! A report or a fault under a sanitizer here points at gpu-core's buffers
//! or at the tool, not at any primitive. Plainly it is one more concurrency
//! test: every element of every buffer is checked.
//!
//! `PARPRIMS_QUICK_TESTS=1` (the sanitizer scale) runs 50 rounds per thread
//! instead of 1,000. `PARPRIMS_SEED=<n>` replays a run (the seed is
//! printed).

mod support;

use support::fresh_seed;

use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, Gpu, Kernel, KernelArgs, ModuleSource};
use parprims_testkit::rng::SplitMix64;

/// Threads, each with its own stream.
const THREADS: usize = 8;

/// Longest buffer, in `u32` elements (256 KiB).
const MAX_LEN: u64 = 1 << 16;

/// Threads per block of both kernels.
const BLOCK_THREADS: u32 = 256;

fn module() -> ModuleSource {
    ModuleSource::new("reliability_pool_streams")
        .source(
            "__device__ __forceinline__ u32 pool_hash(u64 seed, u64 i) {\n\
             \x20   u64 x = (i + seed) * 0x9E3779B97F4A7C15ull;\n\
             \x20   return (u32)(x >> 32) ^ (u32)x;\n\
             }\n",
        )
        .entry(
            "pool_fill_u32",
            "u32* a, u64 n, u64 seed, u64 blocks",
            "if (linear_block_index() < blocks) { u64 i = global_thread_index(); \
             if (i < n) a[i] = pool_hash(seed, i); }",
            Some(BLOCK_THREADS),
        )
        .entry(
            "pool_mix_u32",
            "const u32* a, u32* b, u64 n, u64 blocks",
            "if (linear_block_index() < blocks) { u64 i = global_thread_index(); \
             if (i < n) { u32 v = a[i]; b[i] = v ^ ((v << 13) | (v >> 19)); } }",
            Some(BLOCK_THREADS),
        )
}

/// The CPU's `pool_hash`.
fn hash(seed: u64, i: u64) -> u32 {
    let x = i.wrapping_add(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 32) as u32) ^ (x as u32)
}

/// What `pool_mix_u32` makes of `pool_fill_u32`'s element `i`.
fn expected(seed: u64, i: u64) -> u32 {
    let v = hash(seed, i);
    v ^ v.rotate_left(13)
}

/// The two kernels, loaded once on the context every stream shares.
struct Kernels {
    fill: Kernel,
    mix: Kernel,
}

/// One round on `gpu`'s stream: allocate, fill, mix, copy back, check.
fn round(gpu: &Gpu, kernels: &Kernels, rng: &mut SplitMix64) -> Result<(), String> {
    let n = 1 + rng.next_u64() % MAX_LEN;
    let seed = rng.next_u64();
    let what = format!("n={n} seed={seed:#x}");
    let fail = |e: gpu_core::Error| format!("{what}: {e}");
    // SAFETY (both): the kernels write every element below n before
    // anything reads it (fill writes a, mix reads a and writes b).
    let mut a = unsafe { DeviceBuffer::<u32>::uninit(gpu, n as usize) }.map_err(fail)?;
    let mut b = unsafe { DeviceBuffer::<u32>::uninit(gpu, n as usize) }.map_err(fail)?;
    let (config, blocks) = grid_1d(n, BLOCK_THREADS, 1, 0).map_err(fail)?;
    {
        let mut a_view = a.view_mut();
        let mut args = KernelArgs::new();
        args.output(&mut a_view)
            .scalar(n)
            .scalar(seed)
            .scalar(blocks);
        // SAFETY: pool_fill_u32(u32* a, u64 n, u64 seed, u64 blocks)
        // matches; it writes a[i] for i < n only (a holds n elements).
        unsafe { gpu.launch(&kernels.fill, config, &args) }.map_err(fail)?;
    }
    {
        let a_view = a.view();
        let mut b_view = b.view_mut();
        let mut args = KernelArgs::new();
        args.input(&a_view)
            .output(&mut b_view)
            .scalar(n)
            .scalar(blocks);
        // SAFETY: pool_mix_u32(const u32* a, u32* b, u64 n, u64 blocks)
        // matches; it reads a[i] and writes b[i] for i < n only.
        unsafe { gpu.launch(&kernels.mix, config, &args) }.map_err(fail)?;
    }
    let host = b.to_host(gpu).map_err(fail)?;
    if let Some(i) = (0..n).find(|&i| host[i as usize] != expected(seed, i)) {
        return Err(format!(
            "{what}: element {i} is {:#010x}, expected {:#010x}",
            host[i as usize],
            expected(seed, i)
        ));
    }
    Ok(())
}

#[test]
fn reliability_pool_streams_reference_and_module() {
    // The CPU reference against values worked by hand: hash(0, 1) is the
    // golden-ratio constant's two halves xored, and the mix is v xor
    // rotl(v, 13), the kernel's (v << 13) | (v >> 19).
    assert_eq!(hash(0, 1), 0x9E37_79B9 ^ 0x7F4A_7C15);
    assert_eq!(hash(0, 1), 0xE17D_05AC);
    assert_eq!(expected(0, 1), 0x41C8_9983);
    assert_eq!(hash(5, 0), hash(0, 5));
    // The module compiles and defines both entries (when NVRTC is present).
    support::check_module_compiles(&module());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_eight_streams_allocate_fill_copy() {
    let base = Gpu::new(0).expect("a CUDA GPU (device 0)");
    let seed = fresh_seed();
    let rounds = parprims_testkit::testing::scaled(1000, 50);
    eprintln!("seed {seed} (PARPRIMS_SEED={seed} replays it): {THREADS} threads × {rounds} rounds");
    // Compile and load once before the threads start.
    let loaded = base.module(&module()).expect("test module");
    let kernels = Kernels {
        fill: loaded.kernel("pool_fill_u32").expect("fill entry"),
        mix: loaded.kernel("pool_mix_u32").expect("mix entry"),
    };
    let kernels = &kernels;
    let streams: Vec<Gpu> = (0..THREADS)
        .map(|_| base.with_new_stream().expect("a new stream"))
        .collect();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .enumerate()
            .map(|(thread, gpu)| {
                scope.spawn(move || {
                    let mut rng = SplitMix64::new(seed ^ ((thread as u64 + 1) << 32));
                    for r in 0..rounds {
                        round(gpu, kernels, &mut rng)
                            .map_err(|e| format!("thread {thread}, round {r}: {e}"))?;
                    }
                    Ok::<(), String>(())
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("a thread panicked".into()),
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
