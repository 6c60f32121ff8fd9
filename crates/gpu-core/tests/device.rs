//! gpu-core on a real device: buffers, views, fill, timer, copy ceiling,
//! kernel cache across processes (with and without NVRTC), bad ordinals,
//! out-of-memory, cudarc buffers lent with their reads and writes recorded.
//!
//! Tests that need a GPU are `#[ignore]`d so CPU-only CI reports them as
//! ignored; the GPU machine runs them with `--include-ignored`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use gpu_core::kernel::DiskCache;
use gpu_core::{
    CudaRead, CudaWrite, DeviceBuffer, DeviceType, Error, Gpu, GpuTimer, KernelArgs, ModuleOrigin,
    ModuleSource,
};
use parprims_testkit::bench::{copy_ceiling, Repetitions};
use parprims_testkit::testing::{assert_child_passed, nanos_stamp, run_child_test};

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// Held by the tests that start a child process on the GPU and by the one
/// that asks for more memory than the device has: while the request for
/// twice the device's memory is in flight, a child's context creation can
/// fail with `CUDA_ERROR_OUT_OF_MEMORY` (seen on the H100 when the tests
/// of this file run in parallel).
static CHILD_OR_OOM: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn child_or_oom_lock() -> std::sync::MutexGuard<'static, ()> {
    CHILD_OR_OOM
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs everywhere: with no driver, opening a device is a typed error, not a
/// panic; with a driver, an absurd ordinal is `BadOrdinal`.
#[test]
fn opening_a_device_never_panics() {
    match Gpu::new(0) {
        Ok(gpu) => assert!(gpu.info().sm_count > 0),
        Err(Error::NoDriver) => {
            let message = Error::NoDriver.to_string();
            assert!(message.contains("LD_LIBRARY_PATH"), "{message}");
        }
        Err(other) => panic!("unexpected error opening device 0: {other}"),
    }
    match Gpu::new(usize::MAX) {
        Err(Error::NoDriver) | Err(Error::BadOrdinal { .. }) => {}
        other => panic!("expected NoDriver or BadOrdinal, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_ordinal_is_a_typed_error() {
    let count = gpu_core::device_count().unwrap();
    match Gpu::new(count) {
        Err(Error::BadOrdinal { ordinal, count: c }) => assert_eq!((ordinal, c), (count, count)),
        other => panic!("expected BadOrdinal, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_info_is_sane() {
    let gpu = gpu();
    let info = gpu.info();
    println!("device: {}", info.summary());
    assert!(info.sm_count > 0);
    assert!(info.compute_capability.0 >= 7);
    assert!(info.shared_per_block >= 48 * 1024);
    assert!(info.shared_per_block_optin >= info.shared_per_block);
    assert!(info.shared_per_sm >= info.shared_per_block);
    assert!(info.l2_bytes > 0);
    assert!(info.memory_total > info.memory_free_at_open / 2);
    assert_eq!(
        info.arch(),
        format!(
            "sm_{}{}",
            info.compute_capability.0, info.compute_capability.1
        )
    );
}

fn round_trip<T: DeviceType>(gpu: &Gpu, host: &[T]) {
    let buffer = DeviceBuffer::from_host(gpu, host).unwrap();
    assert_eq!(buffer.len(), host.len());
    assert_eq!(buffer.bytes(), std::mem::size_of_val(host));
    let back = buffer.to_host(gpu).unwrap();
    assert!(
        back == host,
        "round trip of {} elements differs",
        host.len()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_round_trip_at_edge_lengths() {
    let gpu = gpu();
    for len in [0usize, 1, 2, 3, 7, 31, 33, 1023, 1025, 1_000_003] {
        let ints: Vec<i32> = (0..len as i32)
            .map(|i| i.wrapping_mul(7919).wrapping_sub(3))
            .collect();
        round_trip(&gpu, &ints);
        let longs: Vec<u64> = (0..len as u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        round_trip(&gpu, &longs);
        let floats: Vec<f64> = (0..len).map(|i| i as f64 * 0.5 - 1e9).collect();
        round_trip(&gpu, &floats);
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
        round_trip(&gpu, &bytes);
    }
    let empty = DeviceBuffer::<f32>::zeros(&gpu, 0).unwrap();
    assert!(empty.is_empty());
    assert!(empty.into_cudarc().is_none());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_buffer_over_two_gib_round_trips() {
    let gpu = gpu();
    // 2^29 + 7 u32 values: 2 GiB + 28 bytes, past any 32-bit byte count.
    let len = (1usize << 29) + 7;
    let host: Vec<u32> = (0..len as u32).map(|i| i ^ 0xa5a5_a5a5).collect();
    let buffer = DeviceBuffer::from_host(&gpu, &host).unwrap();
    assert!(buffer.bytes() > 1 << 31);
    let back = buffer.to_host(&gpu).unwrap();
    assert!(back == host);
    // The last elements through a view at a byte offset past 2^31.
    let tail = buffer.slice(len - 3..).unwrap().to_host(&gpu).unwrap();
    assert_eq!(tail, host[len - 3..]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_read_and_write_only_their_range() {
    let gpu = gpu();
    let host: Vec<i64> = (0..1000).collect();
    let mut buffer = DeviceBuffer::from_host(&gpu, &host).unwrap();
    assert_eq!(
        buffer.slice(10..20).unwrap().to_host(&gpu).unwrap(),
        host[10..20]
    );
    assert_eq!(buffer.slice(..).unwrap().len(), 1000);
    assert!(buffer.slice(990..1001).is_err());

    buffer.slice_mut(100..200).unwrap().fill(&gpu, -7).unwrap();
    let mut patch = buffer.slice_mut(500..503).unwrap();
    patch.copy_from_host(&gpu, &[1, 2, 3]).unwrap();
    assert!(patch.copy_from_host(&gpu, &[1, 2]).is_err());
    let after = buffer.to_host(&gpu).unwrap();
    for (i, &v) in after.iter().enumerate() {
        let expected = match i {
            100..=199 => -7,
            500 => 1,
            501 => 2,
            502 => 3,
            _ => i as i64,
        };
        assert_eq!(v, expected, "element {i}");
    }

    // Device-to-device copy between views of two buffers, and split views.
    let mut other = DeviceBuffer::<i64>::poisoned(&gpu, 10).unwrap();
    let (mut head, mut tail) = other.view_mut().split_at_mut(4).unwrap();
    head.copy_from(&gpu, &buffer.slice(0..4).unwrap()).unwrap();
    tail.fill(&gpu, 42).unwrap();
    assert!(head.copy_from(&gpu, &buffer.slice(0..5).unwrap()).is_err());
    assert_eq!(
        other.to_host(&gpu).unwrap(),
        vec![0, 1, 2, 3, 42, 42, 42, 42, 42, 42]
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fill_and_poison_write_every_element() {
    let gpu = gpu();
    for len in [1usize, 255, 256, 257, 1 << 20, (1 << 20) + 1] {
        let f = DeviceBuffer::<f32>::poisoned(&gpu, len)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert!(f.iter().all(|x| x.to_bits() == f32::poison().to_bits()));
        let u = DeviceBuffer::<u8>::filled(&gpu, len, 0x3c)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert!(u.iter().all(|&x| x == 0x3c));
        let i = DeviceBuffer::<i64>::filled(&gpu, len, i64::MIN)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert!(i.iter().all(|&x| x == i64::MIN));
        let z = DeviceBuffer::<u32>::zeros(&gpu, len)
            .unwrap()
            .to_host(&gpu)
            .unwrap();
        assert!(z.iter().all(|&x| x == 0));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_slices_convert_without_copying() {
    let gpu = gpu();
    let buffer = DeviceBuffer::from_host(&gpu, &[1u32, 2, 3, 4]).unwrap();
    let ptr = buffer.view().device_ptr();
    let slice = buffer.into_cudarc().expect("non-empty buffer has a slice");
    let view: gpu_core::DeviceView<u32> = (&slice).into();
    assert_eq!(view.device_ptr(), ptr);
    let back = DeviceBuffer::from_cudarc(slice);
    assert_eq!(back.view().device_ptr(), ptr);
    assert_eq!(back.to_host(&gpu).unwrap(), vec![1, 2, 3, 4]);

    // A Gpu built on a caller's cudarc context and stream.
    let ctx = gpu.cudarc_context().clone();
    let stream = ctx.new_stream().unwrap();
    let theirs = Gpu::from_cudarc(ctx, stream).unwrap();
    let data = DeviceBuffer::<f64>::filled(&theirs, 3, 2.5).unwrap();
    assert_eq!(data.to_host(&theirs).unwrap(), vec![2.5; 3]);
    // And handles with their own streams on the same context, of default
    // and of the highest priority.
    let second = gpu.with_new_stream().unwrap();
    let urgent = gpu.with_new_priority_stream().unwrap();
    for (handle, value) in [(&second, 9), (&urgent, 11)] {
        assert_eq!(
            DeviceBuffer::<i32>::filled(handle, 2, value)
                .unwrap()
                .to_host(handle)
                .unwrap(),
            vec![value, value]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn timer_measures_device_work() {
    let gpu = gpu();
    let timer = GpuTimer::new(&gpu).unwrap();
    let mut big = DeviceBuffer::<u32>::zeros(&gpu, 1 << 28).unwrap();
    // Warm up: the first fill compiles or loads the fill module.
    big.view_mut().fill(&gpu, 0).unwrap();
    gpu.synchronize().unwrap();
    // Other tests of this binary share the GPU: the shortest of several
    // single fills is the undisturbed time (contention only lengthens the
    // four fills below, which the check tolerates).
    let one = (0..5)
        .map(|_| timer.time(|| big.view_mut().fill(&gpu, 1)).unwrap())
        .fold(f64::INFINITY, f64::min);
    let four = timer
        .time(|| {
            for v in 0..4 {
                big.view_mut().fill(&gpu, v)?;
            }
            Ok(())
        })
        .unwrap();
    println!("fill 1 GiB: {one:.3} ms; four fills: {four:.3} ms");
    assert!(one > 0.0);
    assert!(
        four > 2.0 * one,
        "four fills ({four} ms) should take longer than two ({one} ms each)"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copy_ceiling_is_measured() {
    let gpu = gpu();
    let ceiling = copy_ceiling(
        &gpu,
        1 << 30,
        Repetitions {
            warmup: 3,
            timed: 20,
        },
    )
    .unwrap();
    println!(
        "copy ceiling: {:.1} GB/s (read+write) from a {} MiB copy, median {:.3} ms (min {:.3}, max {:.3})",
        ceiling.gbps,
        ceiling.bytes_copied >> 20,
        ceiling.timing.median_ms,
        ceiling.timing.min_ms,
        ceiling.timing.max_ms
    );
    parprims_testkit::testing::assert_plausible_copy_rate(ceiling.gbps);
    assert!((ceiling.fraction(ceiling.gbps) - 1.0).abs() < 1e-12);
}

/// A module nobody else compiles: a fresh nonce per process keeps the test
/// honest about compiling versus loading from disk.
fn nonce_module(nonce: &str) -> ModuleSource {
    ModuleSource::new(format!("cache_probe_{nonce}"))
        .source(&format!(
            "__device__ u64 cache_probe_value() {{ return {nonce}ull; }}"
        ))
        .entry(
            "cache_probe",
            "u64* out",
            "out[0] = cache_probe_value()",
            Some(32),
        )
}

fn run_probe(gpu: &Gpu, module: &ModuleSource) -> (ModuleOrigin, u64) {
    let loaded = gpu.module(module).unwrap();
    let kernel = loaded.kernel("cache_probe").unwrap();
    let mut out = DeviceBuffer::<u64>::zeros(gpu, 1).unwrap();
    let mut args = KernelArgs::new();
    args.output(&mut out.view_mut());
    let config = gpu_core::LaunchConfig {
        grid: (1, 1, 1),
        block: (32, 1, 1),
        shared_bytes: 0,
    };
    // SAFETY: cache_probe(u64* out) writes out[0]; out has one element.
    unsafe { gpu.launch(&kernel, config, &args) }.unwrap();
    (loaded.origin(), out.to_host(gpu).unwrap()[0])
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_cache_child_process() {
    // Only meaningful when started by `kernel_cache_is_used_by_a_second_process`.
    let Ok(nonce) = std::env::var("PARPRIMS_CACHE_PROBE_NONCE") else {
        return;
    };
    let gpu = gpu();
    let (origin, value) = run_probe(&gpu, &nonce_module(&nonce));
    assert_eq!(value, nonce.parse::<u64>().unwrap());
    match origin {
        ModuleOrigin::DiskCache { ms } => println!("CHILD_ORIGIN disk {ms:.3}"),
        ModuleOrigin::Compiled { ms } => println!("CHILD_ORIGIN compiled {ms:.3}"),
        ModuleOrigin::Embedded { ms } => println!("CHILD_ORIGIN embedded {ms:.3}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_cache_is_used_by_a_second_process() {
    if std::env::var("PARPRIMS_CACHE_PROBE_NONCE").is_ok() {
        return; // we are the child
    }
    let _alone = child_or_oom_lock();
    let dir = std::env::temp_dir().join(format!("parprims-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let nonce = nanos_stamp().to_string();
    let gpu = Gpu::with_cache(0, DiskCache::at(&dir)).expect("a CUDA GPU");
    let (origin, value) = run_probe(&gpu, &nonce_module(&nonce));
    assert_eq!(value, nonce.parse::<u64>().unwrap());
    let ModuleOrigin::Compiled { ms: compile_ms } = origin else {
        panic!("first load must compile, got {origin:?}");
    };
    // A second load in the same context comes from the in-memory store.
    assert_eq!(gpu.module(&nonce_module(&nonce)).unwrap().origin(), origin);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    let env: [(&str, &dyn AsRef<std::ffi::OsStr>); 2] = [
        ("PARPRIMS_CACHE_PROBE_NONCE", &nonce),
        ("PARPRIMS_CACHE_DIR", &dir),
    ];

    let child = run_child_test("kernel_cache_child_process", &env);
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    // libtest prints "test name ... " before the test's own output.
    let line = stdout
        .lines()
        .find_map(|l| l.find("CHILD_ORIGIN").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("child printed no origin:\n{stdout}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        fields[1], "disk",
        "second process should load from disk: {line}"
    );
    let disk_ms: f64 = fields[2].parse().unwrap();
    println!("kernel cache: compile+load {compile_ms:.1} ms in the first process, disk+load {disk_ms:.1} ms in the second");
    assert!(
        disk_ms < compile_ms,
        "loading from disk ({disk_ms} ms) should beat compiling ({compile_ms} ms)"
    );

    // Corrupt every cached file: a third process must ignore it and compile.
    for entry in std::fs::read_dir(&dir).unwrap() {
        std::fs::write(entry.unwrap().path(), b"PPCUBIN1 garbage").unwrap();
    }
    let child = run_child_test("kernel_cache_child_process", &env);
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "child with a corrupt cache failed:\n{stdout}"
    );
    assert!(
        stdout.contains("CHILD_ORIGIN compiled"),
        "corrupt cache must fall back to compiling:\n{stdout}"
    );
    assert!(DiskCache::at(&dir).dir().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unwritable_cache_still_compiles() {
    let file = std::env::temp_dir().join(format!("parprims-not-a-dir-{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let gpu = Gpu::with_cache(0, DiskCache::at(file.join("cache"))).expect("a CUDA GPU");
    let (origin, value) = run_probe(&gpu, &nonce_module("4242"));
    assert_eq!(value, 4242);
    assert!(matches!(origin, ModuleOrigin::Compiled { .. }));
    let _ = std::fs::remove_file(&file);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_memory_is_typed_and_the_context_survives() {
    let _alone = child_or_oom_lock();
    let gpu = gpu();
    let total = gpu.info().memory_total;
    let err = DeviceBuffer::<u8>::zeros(&gpu, total * 2).unwrap_err();
    match &err {
        Error::OutOfMemory {
            bytes, total: t, ..
        } => {
            assert_eq!(*bytes, total * 2);
            assert_eq!(*t, total);
            println!("{err}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    // The context keeps working.
    let ok = DeviceBuffer::<i32>::filled(&gpu, 1000, 5).unwrap();
    assert_eq!(ok.to_host(&gpu).unwrap(), vec![5; 1000]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_broken_kernel_is_a_compile_error_with_the_log() {
    let gpu = gpu();
    let broken =
        ModuleSource::new("broken_probe").entry("broken", "i32* out", "out[0] = nope", None);
    match gpu.module(&broken) {
        Err(Error::Compile {
            module,
            log,
            options,
            arch,
        }) => {
            assert_eq!(module, "broken_probe");
            assert!(log.contains("nope"), "{log}");
            assert!(options.iter().any(|o| o.contains(&arch)));
        }
        Err(other) => panic!("expected Compile, got {other}"),
        Ok(_) => panic!("a broken kernel compiled"),
    }
    let fine = ModuleSource::new("fine_probe").entry("fine", "i32* out", "out[0] = 1", None);
    assert!(matches!(
        gpu.kernel(&fine, "not_there"),
        Err(Error::MissingEntry { .. })
    ));
}

/// Trimming the allocator's pool releases only memory no buffer holds: a
/// live buffer keeps its contents, and a second trim is a no-op. (That the
/// trimmed memory shows as free is checked by the leak test in
/// tests/reliability_concurrency.rs, which holds the device alone.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn trimming_the_memory_pool_keeps_live_buffers() {
    let gpu = gpu();
    let host: Vec<u32> = (0..(1u32 << 20))
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let live = DeviceBuffer::from_host(&gpu, &host).unwrap();
    let freed: Vec<DeviceBuffer<u8>> = (0..64)
        .map(|_| DeviceBuffer::<u8>::zeros(&gpu, 1 << 20).unwrap())
        .collect();
    drop(freed);
    gpu.trim_memory_pool().unwrap();
    gpu.trim_memory_pool().unwrap();
    assert_eq!(live.to_host(&gpu).unwrap(), host);
    // The pool still serves new allocations after a trim.
    let again = DeviceBuffer::<u8>::zeros(&gpu, 1 << 20).unwrap();
    assert!(again.to_host(&gpu).unwrap().iter().all(|&b| b == 0));
}

/// One kernel store per context: handles made with `with_new_stream` and
/// `from_cudarc` on the same context share it, a stored kernel is built
/// once, and its occupancy answer is remembered by every clone.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_kernel_store_per_context() {
    let gpu = gpu();
    let other_stream = gpu.with_new_stream().unwrap();
    let wrapped = Gpu::from_cudarc(
        gpu.cudarc_context().clone(),
        gpu.cudarc_context().new_stream().unwrap(),
    )
    .unwrap();
    assert!(std::sync::Arc::ptr_eq(
        gpu.kernel_store(),
        other_stream.kernel_store()
    ));
    assert!(std::sync::Arc::ptr_eq(
        gpu.kernel_store(),
        wrapped.kernel_store()
    ));

    let module = nonce_module(&format!("{}7", std::process::id()));
    let entry = module.entries()[0].clone();
    let builds = std::cell::Cell::new(0);
    let key = format!("store_test_{}", std::process::id());
    let first = gpu
        .stored_kernel(&key, &entry, || {
            builds.set(builds.get() + 1);
            module.clone()
        })
        .unwrap();
    let blocks = first.resident_blocks_per_sm(128, 0).unwrap();
    assert!(blocks > 0);
    let again = wrapped
        .stored_kernel(&key, &entry, || {
            builds.set(builds.get() + 1);
            module.clone()
        })
        .unwrap();
    assert_eq!(builds.get(), 1, "the source is built once per context");
    assert_eq!(again.name(), entry);
    assert_eq!(again.resident_blocks_per_sm(128, 0).unwrap(), blocks);
    // A wrong entry under a known key is a typed error, not a panic.
    assert!(matches!(
        gpu.stored_kernel(&key, "no_such_entry", || module.clone()),
        Err(Error::MissingEntry { .. })
    ));
}

/// A stream's scratch words come zeroed on every call, even after a call
/// dirtied them; the same size is served from the same memory (no new
/// allocation); a new stream gets memory of its own; a nested call on the
/// same stream gets a fresh buffer instead of waiting.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scratch_is_zeroed_reused_and_per_stream() {
    let gpu = gpu();
    let words = 1000;
    let first = gpu
        .with_zeroed_scratch(words, |mut view| {
            view.fill(&gpu, u64::MAX)?;
            Ok(view.device_ptr())
        })
        .unwrap();
    let (second, zeroed) = gpu
        .with_zeroed_scratch(words, |view| {
            Ok((view.device_ptr(), view.as_view().to_host(&gpu)?))
        })
        .unwrap();
    assert_eq!(first, second, "the same size reuses the same memory");
    assert!(zeroed.iter().all(|&w| w == 0), "scratch is zeroed per call");
    let clone = gpu.clone();
    let shared = clone
        .with_zeroed_scratch(10, |view| Ok(view.device_ptr()))
        .unwrap();
    assert_eq!(shared, first, "clones share their stream's scratch");
    let other = gpu.with_new_stream().unwrap();
    let own = other
        .with_zeroed_scratch(words, |view| Ok(view.device_ptr()))
        .unwrap();
    assert_ne!(own, first, "another stream has scratch of its own");
    let nested = gpu
        .with_zeroed_scratch(words, |outer| {
            let inner = gpu.with_zeroed_scratch(words, |inner| {
                Ok((inner.device_ptr(), inner.as_view().to_host(&gpu)?))
            })?;
            Ok((outer.device_ptr(), inner))
        })
        .unwrap();
    assert_ne!(
        nested.0, nested.1 .0,
        "a nested call gets a buffer of its own"
    );
    assert!(nested.1 .1.iter().all(|&w| w == 0));
    gpu.trim_memory_pool().unwrap();
}

/// A caller's cudarc setup with event tracking on (cudarc's default): one
/// context, stream A for parprims (through `Gpu::from_cudarc`), stream B
/// for the caller's own cudarc work.
fn tracked_streams() -> (Arc<CudaContext>, Arc<CudaStream>, Gpu) {
    let ctx = CudaContext::new(0).expect("a CUDA GPU");
    let stream_a = ctx.new_stream().unwrap();
    let stream_b = ctx.new_stream().unwrap();
    assert!(ctx.is_managing_stream_synchronization());
    let gpu = Gpu::from_cudarc(ctx.clone(), stream_a).unwrap();
    // from_cudarc leaves the caller's setting alone.
    assert!(ctx.is_event_tracking());
    (ctx, stream_b, gpu)
}

/// Keeps `gpu`'s stream busy for about `ms` milliseconds (one thread
/// spinning on clock64), so work that is not ordered after it would run
/// first and the tests below would see stale data.
fn spin(gpu: &Gpu, ms: u64) {
    let module = ModuleSource::new("interop_spin").entry(
        "interop_spin",
        "u64 cycles",
        "long long start = clock64(); while ((u64)(clock64() - start) < cycles) {}",
        Some(32),
    );
    let kernel = gpu.kernel(&module, "interop_spin").unwrap();
    let cycles = ms * 2_000_000; // at most ~2 GHz
    let mut args = KernelArgs::new();
    args.scalar(cycles);
    let config = gpu_core::LaunchConfig {
        grid: (1, 1, 1),
        block: (32, 1, 1),
        shared_bytes: 0,
    };
    // SAFETY: interop_spin(u64 cycles) takes one scalar and touches no memory.
    unsafe { gpu.launch(&kernel, config, &args) }.unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_lent_slice_written_on_one_stream_is_read_after_the_write_on_another() {
    let (_ctx, stream_b, gpu) = tracked_streams();
    let n = 1 << 20;
    let mut slice = stream_b.alloc_zeros::<u32>(n).unwrap();
    stream_b.synchronize().unwrap();
    spin(&gpu, 300);
    {
        let mut out = CudaWrite::new(&gpu, &mut slice).unwrap();
        assert_eq!(out.len(), n);
        out.view_mut().fill(&gpu, 7).unwrap();
    } // the write is recorded on stream A here, after the fill
      // Stream B waits for that write, not for the host: no synchronisation.
    let host = stream_b.clone_dtoh(&slice).unwrap();
    assert!(
        host.iter().all(|&x| x == 7),
        "stream B read before the write"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_lent_slice_read_on_one_stream_is_overwritten_only_after_the_read() {
    let (_ctx, stream_b, gpu) = tracked_streams();
    let n = 1 << 20;
    let original: Vec<u32> = (0..n as u32).collect();
    let mut input = stream_b.clone_htod(&original).unwrap();
    let mut copy = DeviceBuffer::<u32>::zeros(&gpu, n).unwrap();
    gpu.synchronize().unwrap();
    spin(&gpu, 300);
    {
        let lent = CudaRead::new(&gpu, &input).unwrap();
        copy.view_mut().copy_from(&gpu, &lent.view()).unwrap();
    } // the read is recorded on stream A here, after the copy
      // A write on stream B waits for the read.
    stream_b.memset_zeros(&mut input).unwrap();
    assert_eq!(copy.to_host(&gpu).unwrap(), original);
    assert!(stream_b.clone_dtoh(&input).unwrap().iter().all(|&x| x == 0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_output_handed_back_as_a_cudarc_slice_is_ordered_with_other_streams() {
    let (_ctx, stream_b, gpu) = tracked_streams();
    let n = 1 << 20;
    spin(&gpu, 300);
    let buffer = DeviceBuffer::<u64>::filled(&gpu, n, 9).unwrap();
    let ptr = buffer.view().device_ptr();
    let slice = buffer.into_cudarc().expect("non-empty");
    let view: gpu_core::DeviceView<u64> = (&slice).into();
    assert_eq!(view.device_ptr(), ptr, "no copy");
    let host = stream_b.clone_dtoh(&slice).unwrap();
    assert!(
        host.iter().all(|&x| x == 9),
        "stream B read before the fill"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lent_sub_views_read_and_write_only_their_range() {
    let (_ctx, stream_b, gpu) = tracked_streams();
    let mut slice = stream_b.alloc_zeros::<i32>(100).unwrap();
    {
        let mut part = CudaWrite::new(&gpu, slice.slice_mut(10..20)).unwrap();
        assert_eq!(part.len(), 10);
        part.view_mut().fill(&gpu, 5).unwrap();
    }
    {
        let mut whole_view = slice.as_view_mut();
        let mut part = CudaWrite::new(&gpu, &mut whole_view).unwrap();
        part.view_mut()
            .slice_mut(90..)
            .unwrap()
            .fill(&gpu, -1)
            .unwrap();
    }
    let host = stream_b.clone_dtoh(&slice).unwrap();
    for (i, &x) in host.iter().enumerate() {
        let expected = match i {
            10..=19 => 5,
            90.. => -1,
            _ => 0,
        };
        assert_eq!(x, expected, "element {i}");
    }
    // Reads of a sub-range, by value and by reference.
    let read = CudaRead::new(&gpu, slice.slice(5..15)).unwrap();
    assert_eq!(
        read.view().to_host(&gpu).unwrap(),
        [0, 0, 0, 0, 0, 5, 5, 5, 5, 5]
    );
    drop(read);
    let sub = slice.slice(85..95);
    let read = CudaRead::new(&gpu, &sub).unwrap();
    assert_eq!(
        read.view().to_host(&gpu).unwrap(),
        [0, 0, 0, 0, 0, -1, -1, -1, -1, -1]
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lending_to_a_gpu_that_cannot_record_is_refused() {
    let (_ctx, stream_b, _gpu) = tracked_streams();
    let slice = stream_b.alloc_zeros::<u32>(4).unwrap();
    // Gpu::new has its own handle of the primary context, with tracking off.
    let untracked = gpu();
    assert!(!untracked.cudarc_context().is_event_tracking());
    let refused = CudaRead::new(&untracked, &slice).unwrap_err();
    assert!(
        matches!(refused, Error::InvalidArgument { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("from_cudarc"), "{refused}");
}

/// The child half of `a_warmed_cache_is_used_without_nvrtc`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn no_nvrtc_child_process() {
    let (Ok(cached), Ok(missing)) = (
        std::env::var("PARPRIMS_NO_NVRTC_CACHED"),
        std::env::var("PARPRIMS_NO_NVRTC_MISSING"),
    ) else {
        return; // not spawned by the parent test
    };
    assert!(matches!(
        gpu_core::kernel::nvrtc_available(),
        Err(Error::NoNvrtc)
    ));
    let gpu = gpu();
    let (origin, value) = run_probe(&gpu, &nonce_module(&cached));
    assert_eq!(value, cached.parse::<u64>().unwrap());
    assert!(
        matches!(origin, ModuleOrigin::DiskCache { .. }),
        "{origin:?}"
    );
    let error = gpu
        .module(&nonce_module(&missing))
        .err()
        .expect("not cached");
    assert!(matches!(error, Error::KernelNotCached { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("parprims warm-cache --arch sm_"),
        "{message}"
    );
    println!("NO_NVRTC_CHILD_OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_warmed_cache_is_used_without_nvrtc() {
    let _alone = child_or_oom_lock();
    let dir = std::env::temp_dir().join(format!("parprims-no-nvrtc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stamp = nanos_stamp();
    let (cached, missing) = (stamp.to_string(), (stamp + 1).to_string());
    let arch = gpu().info().arch();
    let report = gpu_core::kernel::warm_disk_cache(
        &DiskCache::at(&dir),
        &[nonce_module(&cached)],
        &[arch.as_str()],
        1,
    )
    .unwrap();
    assert_eq!(report.compiled, 1);
    let child = run_child_test(
        "no_nvrtc_child_process",
        &[
            ("PARPRIMS_NO_NVRTC_CACHED", &cached),
            ("PARPRIMS_NO_NVRTC_MISSING", &missing),
            ("PARPRIMS_DISABLE_NVRTC", &"1"),
            ("PARPRIMS_CACHE_DIR", &dir),
        ],
    );
    assert_child_passed(&child, "NO_NVRTC_CHILD_OK");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel whose static shared memory (40 KiB) and dynamic shared memory
/// (16 KiB) together pass the 48 KiB default launches: `Gpu::launch` opts
/// it in to the dynamic size although the dynamic size alone is under the
/// default. Each block writes both arrays and sums them back.
#[test]
#[ignore = "needs a CUDA GPU"]
fn static_and_dynamic_shared_memory_past_the_default_launch() {
    let gpu = gpu();
    const STATIC_WORDS: u32 = 10 * 1024; // 40 KiB of u32
    const DYNAMIC_WORDS: u32 = 4 * 1024; // 16 KiB of u32
    let module = ModuleSource::new("shared_split_probe").entry(
        "shared_split",
        "u64* out",
        &format!(
            "__shared__ u32 fixed[{STATIC_WORDS}]; extern __shared__ u32 dynamic[]; \
             for (u32 i = threadIdx.x; i < {STATIC_WORDS}u; i += blockDim.x) fixed[i] = i; \
             for (u32 i = threadIdx.x; i < {DYNAMIC_WORDS}u; i += blockDim.x) dynamic[i] = 2u * i; \
             __syncthreads(); \
             if (threadIdx.x == 0) {{ u64 sum = 0; \
               for (u32 i = 0; i < {STATIC_WORDS}u; ++i) sum += fixed[i]; \
               for (u32 i = 0; i < {DYNAMIC_WORDS}u; ++i) sum += dynamic[i]; \
               out[blockIdx.x] = sum; }}"
        ),
        Some(256),
    );
    let kernel = gpu.module(&module).unwrap().kernel("shared_split").unwrap();
    let blocks = 4usize;
    let mut out = DeviceBuffer::<u64>::zeros(&gpu, blocks).unwrap();
    let mut args = KernelArgs::new();
    args.output(&mut out.view_mut());
    let config = gpu_core::LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (256, 1, 1),
        shared_bytes: DYNAMIC_WORDS * 4,
    };
    for _ in 0..2 {
        // SAFETY: shared_split(u64* out) writes out[blockIdx.x] for each of
        // the `blocks` blocks; out holds `blocks` u64; the dynamic shared
        // memory given is what the kernel indexes.
        unsafe { gpu.launch(&kernel, config, &args) }.unwrap();
    }
    let s = u64::from(STATIC_WORDS);
    let d = u64::from(DYNAMIC_WORDS);
    let want = s * (s - 1) / 2 + d * (d - 1);
    assert_eq!(out.to_host(&gpu).unwrap(), vec![want; blocks]);
}

/// An entry compiled with a cluster size (`entry_with_cluster`) runs as
/// clusters from a plain launch on sm_90 and newer: each block reads its
/// rank in the cluster; a size past the portable 8 runs once
/// `resident_clusters` has opted the kernel in. Elsewhere the kernel
/// reports no cluster size and no resident clusters.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_entries_run_as_clusters() {
    let gpu = gpu();
    for cluster in [2u32, 8, 16] {
        let name = format!("cluster_rank_{cluster}");
        let module = ModuleSource::new(format!("cluster_rank_probe_{cluster}")).entry_with_cluster(
            &name,
            "u32* out",
            "u32 rank = 0; \
             asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank)); \
             if (threadIdx.x == 0) out[blockIdx.x] = rank",
            128,
            cluster,
        );
        let kernel = gpu.module(&module).unwrap().kernel(&name).unwrap();
        if gpu.info().compute_capability.0 < 9 {
            assert_eq!(kernel.cluster_blocks().unwrap(), 0);
            assert_eq!(gpu.resident_clusters(&kernel, 128, 0).unwrap(), 0);
            return;
        }
        assert_eq!(kernel.cluster_blocks().unwrap(), cluster);
        let resident = gpu.resident_clusters(&kernel, 128, 0).unwrap();
        assert!(resident > 0, "no cluster of {cluster} fits");
        // Asked once, then remembered.
        assert_eq!(gpu.resident_clusters(&kernel, 128, 0).unwrap(), resident);
        let blocks = 2 * cluster as usize;
        let mut out = DeviceBuffer::<u32>::poisoned(&gpu, blocks).unwrap();
        let mut args = KernelArgs::new();
        args.output(&mut out.view_mut());
        let config = gpu_core::LaunchConfig {
            grid: (blocks as u32, 1, 1),
            block: (128, 1, 1),
            shared_bytes: 0,
        };
        // SAFETY: cluster_rank_N(u32* out) writes out[blockIdx.x] for each
        // of the `blocks` blocks (two whole clusters); out holds `blocks`.
        unsafe { gpu.launch(&kernel, config, &args) }.unwrap();
        let want: Vec<u32> = (0..blocks as u32).map(|b| b % cluster).collect();
        assert_eq!(out.to_host(&gpu).unwrap(), want, "cluster of {cluster}");
    }
}
