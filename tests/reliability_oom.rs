//! Reliability: running out of device memory.
//!
//! - `reliability_oom_absurd_requests_are_typed`: allocations no device can
//!   satisfy (2^50 bytes as a buffer and as a matrix) are
//!   `Error::OutOfMemory` with exactly the bytes asked for; a byte count that
//!   overflows `usize` is `Error::InvalidArgument`; a small scan afterwards
//!   is correct.
//! - `reliability_large_oom_when_the_device_is_full`: after every module is
//!   loaded and 512 MiB inputs are in place, one buffer takes all but about
//!   64 MiB of the device. Then each operation that needs a 512 MiB
//!   allocation must return `Error::OutOfMemory { bytes: 536870912, .. }`:
//!   `scan::scan` (its output), `scan::scan_into` with `HillisSteeleGlobal`
//!   (its temporary; the caller's output must be untouched),
//!   `compact::select_if` (its result, after counting), `compact::partition`,
//!   `compact::select_if_into` with `ThreePass` (its marks; output and count
//!   untouched), `linalg::transpose_new` and `linalg::conv2d_new` (their
//!   outputs). After each failure a small scan on the still-full device is
//!   correct; after the filler is freed, the full-size scan succeeds and is
//!   checked.
//!
//! - `reliability_oom_idle_scratch_is_given_back`: a stream's scratch
//!   arena holding up to half of the free device memory (as a sort of a
//!   large input leaves it) is given back when an allocation would
//!   otherwise run out of memory: after the pool has given back what it
//!   keeps (so that the driver's free memory is what an allocation can
//!   get), a buffer of three quarters of the free memory, which does not
//!   fit beside the arena, succeeds, and the arena holds nothing after it.
//!
//! Run on a GPU: `cargo test --release --test reliability_oom --
//! --include-ignored`.

use std::sync::{Mutex, MutexGuard, OnceLock};

use compact::{CompactAlgorithm, Predicate};
use gpu_core::{DeviceBuffer, Error, Gpu, Sum};
use linalg::{ConvOptions, Matrix, MatrixView, TransposeAlgorithm};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// Elements of the 512 MiB `i32` inputs (an 8192 × 16384 matrix).
const N: usize = 1 << 27;
const ROWS: usize = 8192;
const COLS: usize = 16384;
/// What each failing operation must ask for.
const BYTES: usize = N * 4;
/// Device memory left free by the filler (room for small work, not for
/// another 512 MiB).
const MARGIN: usize = 64 << 20;

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU"))
}

fn device_lock() -> MutexGuard<'static, ()> {
    static DEVICE: Mutex<()> = Mutex::new(());
    DEVICE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A small scan, checked: the context still works.
fn small_scan_works(gpu: &Gpu, after: &str) {
    let host: Vec<i32> = (0..10_000).map(|i| (i * 7919) % 1000 - 500).collect();
    let input = DeviceBuffer::from_host(gpu, &host)
        .unwrap_or_else(|e| panic!("after {after}: upload failed: {e}"));
    let out = scan::inclusive(gpu, input.view(), &Sum)
        .unwrap_or_else(|e| panic!("after {after}: small scan failed: {e}"));
    assert_eq!(
        out.to_host(gpu).expect("download"),
        scan::cpu::inclusive(&host, &Sum),
        "after {after}: small scan wrong"
    );
}

fn expect_oom<T>(result: gpu_core::Result<T>, what: &str, bytes: usize) {
    match result {
        Err(Error::OutOfMemory {
            bytes: asked,
            free,
            total,
        }) => {
            assert_eq!(asked, bytes, "{what}: asked for {asked} bytes");
            assert!(free <= total, "{what}: free {free} > total {total}");
            eprintln!("{what}: OutOfMemory, asked {asked} B with {free} of {total} B free");
        }
        Err(other) => panic!("{what}: expected OutOfMemory, got {other}"),
        Ok(_) => panic!("{what}: expected OutOfMemory, it succeeded"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_oom_absurd_requests_are_typed() {
    let _device = device_lock();
    let gpu = gpu();
    let absurd = 1usize << 50;
    expect_oom(
        DeviceBuffer::<f64>::zeros(gpu, absurd / 8),
        "DeviceBuffer::zeros 2^50 B",
        absurd,
    );
    small_scan_works(gpu, "a 2^50-byte buffer");
    expect_oom(
        // SAFETY: never read (the allocation fails).
        unsafe { DeviceBuffer::<u8>::uninit(gpu, absurd) },
        "DeviceBuffer::uninit 2^50 B",
        absurd,
    );
    expect_oom(
        Matrix::<f32>::zeros(gpu, 1 << 24, 1 << 24),
        "Matrix::zeros 2^24 × 2^24 f32",
        absurd,
    );
    small_scan_works(gpu, "a 2^50-byte matrix");
    let overflow = DeviceBuffer::<u64>::zeros(gpu, usize::MAX / 4);
    assert!(
        matches!(overflow, Err(Error::InvalidArgument { .. })),
        "a byte count past usize: {overflow:?}"
    );
    small_scan_works(gpu, "an overflowing byte count");
}

/// Allocates one buffer taking all but about [`MARGIN`] bytes of free
/// device memory, retrying a little smaller if the allocator refuses.
fn fill_device(gpu: &Gpu) -> DeviceBuffer<u8> {
    gpu.synchronize().expect("idle");
    // The pool keeps what earlier tests in this binary freed, which
    // `memory_info` does not count as free but an allocation gets first:
    // give it back, so that the filler takes the memory the calls below
    // would otherwise be served from.
    gpu.trim_memory_pool().expect("trim the pool");
    let (free, total) = gpu.memory_info().expect("memory info");
    for attempt in 0..32usize {
        let bytes = free.saturating_sub(MARGIN + attempt * (8 << 20));
        // SAFETY: the filler is never read.
        match unsafe { DeviceBuffer::<u8>::uninit(gpu, bytes) } {
            Ok(filler) => {
                gpu.synchronize().expect("idle");
                let (left, _) = gpu.memory_info().expect("memory info");
                eprintln!("filler: {bytes} B of {total} B; {left} B left free (attempt {attempt})");
                assert!(
                    left < BYTES,
                    "could not fill the device: {left} B still free"
                );
                return filler;
            }
            Err(e) if e.is_out_of_memory() => continue,
            Err(e) => panic!("filler: {e}"),
        }
    }
    panic!("could not allocate a filler buffer near {free} B");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_large_oom_when_the_device_is_full() {
    let _device = device_lock();
    let gpu = gpu();
    let host: Vec<i32> = (0..N)
        .map(|i| ((i * 2_654_435_761) % 2001) as i32 - 1000)
        .collect();
    let input = DeviceBuffer::from_host(gpu, &host).expect("512 MiB input");
    let matrix = MatrixView::new(ROWS, COLS, input.view()).expect("8192 × 16384 view");
    let filter = Matrix::from_host(gpu, 3, 3, &[0, 1, 0, 1, -4, 1, 0, 1, 0]).expect("filter");
    let mut output = DeviceBuffer::<i32>::poisoned(gpu, N).expect("512 MiB output");
    let mut count_out = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("count");
    let keep_all = Predicate::Ge(i32::MIN);
    let hsg = ScanOptions::new(ScanAlgorithm::HillisSteeleGlobal);
    let three_pass = CompactAlgorithm::ThreePass {
        scan: ScanAlgorithm::DecoupledLookback,
    };
    let conv = ConvOptions {
        border: linalg::Border::Same,
        ..ConvOptions::default()
    };

    // Load every module the failing calls use while memory is plentiful
    // (module loading needs device memory of its own).
    {
        let small = input.slice(..5000).expect("view");
        let small_matrix = MatrixView::new(50, 100, small).expect("view");
        let mut small_out = DeviceBuffer::<i32>::poisoned(gpu, 5000).expect("out");
        scan::scan(
            gpu,
            small,
            &Sum,
            ScanKind::Inclusive,
            &ScanOptions::default(),
        )
        .expect("warm scan");
        scan::scan_into(
            gpu,
            small,
            small_out.view_mut(),
            &Sum,
            ScanKind::Inclusive,
            &hsg,
        )
        .expect("warm hsg");
        compact::select_if(gpu, small, &keep_all, CompactAlgorithm::SinglePass)
            .expect("warm select");
        compact::partition(gpu, small, &keep_all, CompactAlgorithm::SinglePass)
            .expect("warm partition");
        compact::select_if_into(
            gpu,
            small,
            &keep_all,
            small_out.view_mut(),
            count_out.view_mut(),
            three_pass,
        )
        .expect("warm three-pass");
        linalg::transpose_new(gpu, small_matrix, TransposeAlgorithm::Tuned)
            .expect("warm transpose");
        linalg::conv2d_new(gpu, small_matrix, filter.view(), &conv).expect("warm conv");
        small_scan_works(gpu, "warm-up");
        count_out.view_mut().fill(gpu, u64::MAX).expect("re-poison");
    }

    let filler = fill_device(gpu);
    small_scan_works(gpu, "filling the device");

    expect_oom(
        scan::scan(
            gpu,
            input.view(),
            &Sum,
            ScanKind::Inclusive,
            &ScanOptions::default(),
        ),
        "scan::scan",
        BYTES,
    );
    small_scan_works(gpu, "scan::scan");

    expect_oom(
        scan::scan_into(
            gpu,
            input.view(),
            output.view_mut(),
            &Sum,
            ScanKind::Inclusive,
            &hsg,
        ),
        "scan::scan_into HillisSteeleGlobal (temporary)",
        BYTES,
    );
    small_scan_works(gpu, "scan::scan_into");

    expect_oom(
        compact::select_if(gpu, input.view(), &keep_all, CompactAlgorithm::SinglePass),
        "compact::select_if",
        BYTES,
    );
    small_scan_works(gpu, "compact::select_if");

    expect_oom(
        compact::partition(gpu, input.view(), &keep_all, CompactAlgorithm::SinglePass),
        "compact::partition",
        BYTES,
    );
    small_scan_works(gpu, "compact::partition");

    expect_oom(
        compact::select_if_into(
            gpu,
            input.view(),
            &keep_all,
            output.view_mut(),
            count_out.view_mut(),
            three_pass,
        ),
        "compact::select_if_into ThreePass (marks)",
        BYTES,
    );
    small_scan_works(gpu, "compact::select_if_into");

    expect_oom(
        linalg::transpose_new(gpu, matrix, TransposeAlgorithm::Tuned),
        "linalg::transpose_new",
        BYTES,
    );
    small_scan_works(gpu, "linalg::transpose_new");

    expect_oom(
        linalg::conv2d_new(gpu, matrix, filter.view(), &conv),
        "linalg::conv2d_new",
        BYTES,
    );
    small_scan_works(gpu, "linalg::conv2d_new");

    // The caller's buffers of the failed `_into` calls were not written.
    let untouched = output.to_host(gpu).expect("download");
    assert!(
        untouched.iter().all(|&x| x == 0xDEAD_BEEF_u32 as i32),
        "a failed call wrote its output"
    );
    assert_eq!(count_out.to_host(gpu).expect("download"), vec![u64::MAX]);

    // Memory back: the same full-size scan now works.
    drop(filler);
    let out = scan::scan(
        gpu,
        input.view(),
        &Sum,
        ScanKind::Inclusive,
        &ScanOptions::default(),
    )
    .expect("full-size scan after freeing the filler");
    let got = out.to_host(gpu).expect("download");
    assert!(
        got == scan::cpu::inclusive(&host, &Sum),
        "full-size scan after the failures"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reliability_oom_idle_scratch_is_given_back() {
    let _device = device_lock();
    let gpu = gpu().with_new_stream().expect("a stream");
    // The pool keeps what earlier work freed (the other tests' buffers:
    // after the full-device test, nearly the whole device) and hands it out
    // before any allocation runs out of memory, while `memory_info` does
    // not count it as free. Give it back first, so that "free" is what an
    // allocation can get.
    gpu.trim_memory_pool().expect("trim the pool");
    let (free, total) = gpu.memory_info().expect("memory info");
    assert!(free >= 1 << 30, "only {free} of {total} B free");
    // A power of two, which the arena holds exactly (it grows to powers of
    // two): more than a quarter and at most half of the free memory.
    let held_words = 1usize << (free / 16).ilog2();
    // SAFETY: nothing is enqueued, so no word is read.
    unsafe { gpu.with_scratch_words(held_words, |_, _| Ok(())) }.expect("scratch words");
    gpu.synchronize().expect("idle");
    let before = gpu.scratch_stats();
    let held = before.bytes_held;
    assert_eq!(held, 8 * held_words as u64, "the arena holds {held} B");
    let (free_beside_arena, _) = gpu.memory_info().expect("memory info");
    let bytes = free / 4 * 3;
    assert!(
        free_beside_arena < bytes,
        "{bytes} B fit beside the {held} B arena ({free_beside_arena} B free): \
         the allocation would not run out of memory"
    );
    // SAFETY: never read.
    let big = unsafe { DeviceBuffer::<u8>::uninit(&gpu, bytes) }.unwrap_or_else(|e| {
        panic!(
            "{bytes} B with {held} B in an idle arena ({free} B free before it, \
             {free_beside_arena} B beside it): {e}; arena now {:?}",
            gpu.scratch_stats()
        )
    });
    let after = gpu.scratch_stats();
    if after.bytes_held != 0 {
        let (free_after, _) = gpu.memory_info().expect("memory info");
        let verdict = if after.allocations == before.allocations && after.bytes_held == held {
            "the arena was never released: the allocation found room without running out"
        } else if after.allocations > before.allocations {
            "the arena was released, then a call allocated into it (or its nested arena) again"
        } else {
            "the arena was released only in part"
        };
        panic!(
            "the idle arena was not given back: {verdict}.\n  \
             arena before the allocation: {before:?}\n  \
             arena after:                 {after:?}\n  \
             since: {} allocations, {} zeroings (zeroed scratch, tile-state resets), \
             {} epochs (tile states), {} busy fallbacks\n  \
             device: {total} B, {free} B free after trimming, {free_beside_arena} B beside \
             the arena, {bytes} B asked, {free_after} B free now",
            after.allocations - before.allocations,
            after.zeroings - before.zeroings,
            after.epochs - before.epochs,
            after.busy_fallbacks - before.busy_fallbacks,
        );
    }
    drop(big);
    small_scan_works(&gpu, "an allocation that took back the idle arena");
}
