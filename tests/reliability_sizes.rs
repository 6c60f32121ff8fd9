//! Reliability: unusual sizes.
//!
//! - `reliability_large_grid_spills_into_y`: a test-only module writes
//!   `n = 2^31 + 1000` bytes with **one thread per block**, so the 1-D grid
//!   needs more than 2^31 − 1 blocks and gpu-core's geometry spills into
//!   `gridDim.y` (x = 2^31 − 1, y = 2); the kernel recovers its index with
//!   `global_thread_index()` and guards `linear_block_index() < blocks`.
//!   Every byte is checked (`out[i] = i mod 251`, 0xFF never written).
//! - `reliability_large_scan_lengths_around_2_31_and_2_32`: `u32` Sum,
//!   inclusive, `DecoupledLookback` and `ReduceThenScan`, at n = 2^31 − 1,
//!   2^31 + 1, 2^32 − 1 and 2^32 + 1 (input and output 16 GiB each). The
//!   input is generated on the device (`hash(i)`, 24-bit values, so sums
//!   wrap); the CPU computes the prefix at every 2^20-element chunk boundary
//!   in parallel and then checks whole chunks: the first two, those at the
//!   2^31 and 2^32 boundaries, eight random ones and the last (partial) one,
//!   plus 16 elements past n that must still hold their poison.
//! - `reliability_large_compaction_lengths_around_2_31_and_2_32`:
//!   `select_if(x < 2^23)` on the same input (about half kept) with
//!   `SinglePass` at all four lengths and `ThreePass` (look-back scan) at
//!   2^31 + 1; a stable `partition` at 2^32 + 1. Counts exact; kept items
//!   (and, for the partition, rejected items) checked chunk by chunk at the
//!   same sampled chunks.
//!
//! Every GPU test here allocates more than 1 GiB, so all are named
//! `large_` (the sanitizer script skips them). About 40 GiB of device memory
//! at most (an 80 GB H100 holds it); the tests take a lock so they never
//! hold their buffers at the same time.

mod support;

use support::gpu;

use std::sync::{Mutex, MutexGuard};

use compact::{CompactAlgorithm, Predicate};
use gpu_core::launch::{grid_1d, MAX_GRID_X};
use gpu_core::{DeviceBuffer, Gpu, KernelArgs, ModuleSource, Sum};
use parprims_testkit::rng::SplitMix64;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// Elements per CPU verification chunk.
const CHUNK: usize = 1 << 20;
/// The largest length tested: 2^32 + 1.
const N_MAX: usize = (1 << 32) + 1;
/// The lengths around the 2^31 and 2^32 boundaries.
const LENGTHS: [usize; 4] = [(1 << 31) - 1, (1 << 31) + 1, (1 << 32) - 1, (1 << 32) + 1];
/// Items below this are kept by the compaction tests (about half of the
/// 24-bit hashes).
const KEEP_BELOW: u32 = 1 << 23;

fn device_lock() -> MutexGuard<'static, ()> {
    static DEVICE: Mutex<()> = Mutex::new(());
    DEVICE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The test-only kernels: a byte marker with one thread per block, and the
/// input generator. `hash` must match [`hash`] below.
fn sizes_module() -> ModuleSource {
    ModuleSource::new("reliability_sizes")
        .source(
            "__device__ __forceinline__ u32 reliability_hash(u64 i) {\n\
             \x20   return (u32)((i * 0x9E3779B97F4A7C15ull) >> 40);\n\
             }\n",
        )
        .entry(
            "reliability_mark_u8",
            "u8* out, u64 n, u64 blocks",
            "if (linear_block_index() < blocks) { u64 i = global_thread_index(); \
             if (i < n) out[i] = (u8)(i % 251ull); }",
            None,
        )
        .entry(
            "reliability_hash_u32",
            "u32* out, u64 n",
            "u64 i = global_thread_index(); if (i < n) out[i] = reliability_hash(i)",
            Some(256),
        )
}

/// The generator's values: 24-bit, well mixed.
fn hash(i: u64) -> u32 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32
}

#[test]
fn reliability_spill_geometry_and_module() {
    // The geometry the GPU test relies on: one-thread blocks for
    // 2^31 + 1000 items spill into y.
    let n = (1u64 << 31) + 1000;
    let (config, blocks) = grid_1d(n, 1, 1, 0).expect("geometry");
    assert_eq!(blocks, n);
    assert_eq!(config.grid, (MAX_GRID_X as u32, 2, 1));
    assert!(config.grid_blocks() >= blocks);
    assert!(config.grid_blocks() - blocks < MAX_GRID_X);
    // The input generator's range and spread.
    assert!((0..1u64 << 20).all(|i| hash(i) < 1 << 24));
    let kept = (0..1u64 << 20).filter(|&i| hash(i) < KEEP_BELOW).count();
    assert!(
        (kept as f64 / (1 << 20) as f64 - 0.5).abs() < 0.01,
        "{kept}"
    );
    // The module compiles and defines its entries (when NVRTC is present).
    support::check_module_compiles(&sizes_module());
}

/// Runs `check(chunk_index, chunk)` over `host` split in `CHUNK`s on every
/// core; panics with the first failure.
fn parallel_chunks<T: Sync>(host: &[T], check: impl Fn(usize, &[T]) + Sync) {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4);
    let chunks: Vec<(usize, &[T])> = host.chunks(CHUNK).enumerate().collect();
    let per_worker = chunks.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        for group in chunks.chunks(per_worker) {
            let check = &check;
            scope.spawn(move || {
                for &(c, chunk) in group {
                    check(c, chunk);
                }
            });
        }
    });
}

/// Computes `f(c)` for every chunk index `c < chunks` on every core.
fn per_chunk<R: Send + Default + Clone>(chunks: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4);
    let mut out = vec![R::default(); chunks];
    let per_worker = chunks.div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        for (w, slots) in out.chunks_mut(per_worker).enumerate() {
            let f = &f;
            scope.spawn(move || {
                for (k, slot) in slots.iter_mut().enumerate() {
                    *slot = f(w * per_worker + k);
                }
            });
        }
    });
    out
}

fn chunk_range(c: usize, n: usize) -> std::ops::Range<usize> {
    c * CHUNK..((c + 1) * CHUNK).min(n)
}

/// The chunks a test checks for length `n`: the first two, those around
/// 2^31 and 2^32 (when below n), eight random ones, the last.
fn sampled_chunks(n: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let chunks = n.div_ceil(CHUNK);
    let mut picked = vec![0, 1];
    for boundary in [1usize << 31, 1 << 32] {
        let c = boundary / CHUNK;
        picked.extend([c - 1, c]);
    }
    picked.extend((0..8).map(|_| rng.below(chunks as u64) as usize));
    picked.push(chunks - 1);
    picked.retain(|&c| c < chunks);
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// An `N_MAX`-element device buffer holding `hash(i)`.
fn hashed_input(gpu: &Gpu) -> DeviceBuffer<u32> {
    // SAFETY: the generator below writes all N_MAX elements.
    let mut input = unsafe { DeviceBuffer::<u32>::uninit(gpu, N_MAX).expect("16 GiB input") };
    let kernel = gpu
        .kernel(&sizes_module(), "reliability_hash_u32")
        .expect("test module");
    let (config, _) = grid_1d(N_MAX as u64, 256, 1, 0).expect("geometry");
    let mut view = input.view_mut();
    let mut args = KernelArgs::new();
    args.output(&mut view).scalar(N_MAX as u64);
    // SAFETY: reliability_hash_u32(u32* out, u64 n) matches; it writes
    // out[i] for i < n = N_MAX = the buffer's length.
    unsafe { gpu.launch(&kernel, config, &args) }.expect("launch");
    gpu.synchronize().expect("generator ran");
    input
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_large_grid_spills_into_y() {
    let _device = device_lock();
    let gpu = gpu();
    let n = (1usize << 31) + 1000;
    let kernel = gpu
        .kernel(&sizes_module(), "reliability_mark_u8")
        .expect("test module");
    let mut out = DeviceBuffer::<u8>::filled(gpu, n, 0xFF).expect("2 GiB");
    let (config, blocks) = grid_1d(n as u64, 1, 1, 0).expect("geometry");
    assert!(
        config.grid.1 >= 2,
        "the grid spills into y: {:?}",
        config.grid
    );
    let mut view = out.view_mut();
    let mut args = KernelArgs::new();
    args.output(&mut view).scalar(n as u64).scalar(blocks);
    // SAFETY: reliability_mark_u8(u8* out, u64 n, u64 blocks) matches; it
    // writes out[i] only for i < n (the buffer's length), in blocks below
    // `blocks`.
    unsafe { gpu.launch(&kernel, config, &args) }.expect("launch");
    let host = out.to_host(gpu).expect("download");
    parallel_chunks(&host, |c, chunk| {
        let start = c * CHUNK;
        if let Some(k) = chunk
            .iter()
            .enumerate()
            .position(|(k, &b)| b != ((start + k) % 251) as u8)
        {
            panic!(
                "byte {} is {:#04x}, expected {:#04x} (grid {:?})",
                start + k,
                chunk[k],
                ((start + k) % 251) as u8,
                config.grid
            );
        }
    });
    eprintln!("grid {:?}: all {n} bytes written once", config.grid);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_large_scan_lengths_around_2_31_and_2_32() {
    let _device = device_lock();
    let gpu = gpu();
    let input = hashed_input(gpu);
    let mut out = DeviceBuffer::<u32>::poisoned(gpu, N_MAX).expect("16 GiB output");
    // Inclusive prefix (wrapping) before each chunk.
    let chunks = N_MAX.div_ceil(CHUNK);
    let sums = per_chunk(chunks, |c| {
        chunk_range(c, N_MAX).fold(0u32, |acc, i| acc.wrapping_add(hash(i as u64)))
    });
    let mut before = vec![0u32; chunks];
    for c in 1..chunks {
        before[c] = before[c - 1].wrapping_add(sums[c - 1]);
    }
    let mut rng = SplitMix64::new(0x5ca1ab1e);
    for algorithm in [
        ScanAlgorithm::DecoupledLookback,
        ScanAlgorithm::ReduceThenScan,
    ] {
        for n in LENGTHS {
            out.view_mut().fill(gpu, u32::MAX).expect("re-poison");
            scan::scan_into(
                gpu,
                input.slice(..n).expect("prefix view"),
                out.slice_mut(..n).expect("prefix view"),
                &Sum,
                ScanKind::Inclusive,
                &ScanOptions::new(algorithm),
            )
            .unwrap_or_else(|e| panic!("{algorithm} n = {n}: {e}"));
            let checked = sampled_chunks(n, &mut rng);
            for &c in &checked {
                let range = chunk_range(c, n);
                let got = out
                    .slice(range.clone())
                    .and_then(|v| v.to_host(gpu))
                    .expect("download");
                let mut acc = before[c];
                for (k, i) in range.enumerate() {
                    acc = acc.wrapping_add(hash(i as u64));
                    assert_eq!(got[k], acc, "{algorithm} n = {n}: element {i}");
                }
            }
            if n < N_MAX {
                let tail = out
                    .slice(n..(n + 16).min(N_MAX))
                    .and_then(|v| v.to_host(gpu))
                    .expect("download");
                assert!(
                    tail.iter().all(|&x| x == u32::MAX),
                    "{algorithm} n = {n} wrote past the end"
                );
            }
            eprintln!("{algorithm} n = {n}: chunks {checked:?} exact");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_large_compaction_lengths_around_2_31_and_2_32() {
    let _device = device_lock();
    let gpu = gpu();
    let input = hashed_input(gpu);
    let keep = |i: usize| hash(i as u64) < KEEP_BELOW;
    let chunks = N_MAX.div_ceil(CHUNK);
    // Kept items in each full chunk (the last one is recounted per length).
    let kept_in = per_chunk(chunks, |c| {
        chunk_range(c, N_MAX).filter(|&i| keep(i)).count()
    });
    let kept_before = |c: usize| kept_in[..c].iter().sum::<usize>();
    let predicate = Predicate::Lt(KEEP_BELOW);
    let mut rng = SplitMix64::new(0xc0ffee);
    let three_pass = CompactAlgorithm::ThreePass {
        scan: ScanAlgorithm::DecoupledLookback,
    };
    let mut cases: Vec<(usize, CompactAlgorithm)> = LENGTHS
        .iter()
        .map(|&n| (n, CompactAlgorithm::SinglePass))
        .collect();
    cases.push(((1 << 31) + 1, three_pass));
    for (n, algorithm) in cases {
        let last = (n - 1) / CHUNK;
        let expected_count = kept_before(last) + chunk_range(last, n).filter(|&i| keep(i)).count();
        let kept = compact::select_if(
            gpu,
            input.slice(..n).expect("prefix view"),
            &predicate,
            algorithm,
        )
        .unwrap_or_else(|e| panic!("{algorithm} n = {n}: {e}"));
        assert_eq!(kept.count, expected_count, "{algorithm} n = {n}: count");
        let checked = sampled_chunks(n, &mut rng);
        for &c in &checked {
            let expected: Vec<u32> = chunk_range(c, n)
                .filter(|&i| keep(i))
                .map(|i| hash(i as u64))
                .collect();
            let offset = kept_before(c);
            let got = kept
                .items
                .slice(offset..offset + expected.len())
                .and_then(|v| v.to_host(gpu))
                .expect("download");
            assert!(
                got == expected,
                "{algorithm} n = {n}: kept items of chunk {c}"
            );
        }
        eprintln!("{algorithm} n = {n}: count {expected_count}, chunks {checked:?} exact");
    }

    // A stable partition past 2^32: kept in order, then rejected in order.
    let n = N_MAX;
    let (parted, count) =
        compact::partition(gpu, input.view(), &predicate, CompactAlgorithm::SinglePass)
            .expect("partition");
    let total_kept = kept_before(chunks);
    assert_eq!(count, total_kept, "partition count");
    for &c in &sampled_chunks(n, &mut rng) {
        let range = chunk_range(c, n);
        let (kept, rejected): (Vec<u32>, Vec<u32>) = range
            .clone()
            .map(|i| hash(i as u64))
            .partition(|&x| x < KEEP_BELOW);
        let kept_offset = kept_before(c);
        let rejected_offset = count + (range.start - kept_offset);
        let got_kept = parted
            .slice(kept_offset..kept_offset + kept.len())
            .and_then(|v| v.to_host(gpu))
            .expect("download");
        let got_rejected = parted
            .slice(rejected_offset..rejected_offset + rejected.len())
            .and_then(|v| v.to_host(gpu))
            .expect("download");
        assert!(got_kept == kept, "partition: kept items of chunk {c}");
        assert!(
            got_rejected == rejected,
            "partition: rejected items of chunk {c}"
        );
    }
    eprintln!("partition n = {n}: count {count}, sampled chunks exact");
}
