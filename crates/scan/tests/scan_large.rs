//! Fixed large cases for every algorithm, each output poisoned first and
//! checked in full against a CPU scan computed on the fly:
//! 2^28 `i32` (inclusive), 123 123 123 `i32` (the lab's size, exclusive with
//! an initial value), 5/8 · 2^28 `i32` (in place), and 2^31 + 17 `u32`
//! (past 2^31 elements: 8.6 GB of input plus as much output, 64-bit indices
//! everywhere), all under wrapping sum.
//!
//! Needs a CUDA GPU with ≥ 32 GB and ≥ 24 GB of host memory:
//! `cargo test -p parprims-scan --release --test scan_large -- --include-ignored`.

mod scan_support;

use gpu_core::{DeviceBuffer, Sum};
use parprims_testkit::rng::random_vec;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};
use scan_support::{fresh_seed, gpu};

/// The algorithms the large cases run: every one but `Auto` (which is the
/// look-back).
fn algorithms() -> impl Iterator<Item = ScanAlgorithm> {
    ScanAlgorithm::ALL
        .into_iter()
        .filter(|&algorithm| algorithm != ScanAlgorithm::Auto)
}

/// Elements downloaded per chunk while checking.
const CHUNK: usize = 1 << 26;

/// Downloads `output` chunk by chunk and compares it with the wrapping-sum
/// scan of `input` (inclusive, or exclusive from `initial`).
fn check_wrapping_sum<T>(output: &DeviceBuffer<T>, input: &[T], initial: Option<T>, what: &str)
where
    T: gpu_core::Element,
{
    let n = input.len();
    assert_eq!(output.len(), n);
    let mut acc = initial.unwrap_or_else(T::zero);
    let mut host = vec![T::zero(); CHUNK.min(n)];
    let mut start = 0;
    while start < n {
        let end = (start + CHUNK).min(n);
        let chunk = &mut host[..end - start];
        output
            .slice(start..end)
            .expect("chunk in range")
            .copy_to_host(gpu(), chunk)
            .expect("download");
        for (offset, &got) in chunk.iter().enumerate() {
            let i = start + offset;
            let expected = if initial.is_some() {
                let before = acc;
                acc = acc.add(input[i]);
                before
            } else {
                acc = acc.add(input[i]);
                acc
            };
            if got != expected {
                panic!("{what}: element {i} of {n}: got {got}, expected {expected}");
            }
        }
        start = end;
    }
}

/// Poisons `output`, then scans `input` into it with `algorithm`'s defaults.
fn scan_into_poisoned<T: gpu_core::Element>(
    input: &DeviceBuffer<T>,
    output: &mut DeviceBuffer<T>,
    kind: ScanKind<T>,
    algorithm: ScanAlgorithm,
    what: &str,
) where
    Sum: gpu_core::Operator<T>,
{
    let gpu = gpu();
    output.view_mut().fill(gpu, T::poison()).unwrap();
    let options = ScanOptions::new(algorithm);
    scan::scan_into(gpu, input.view(), output.view_mut(), &Sum, kind, &options)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

fn run_size(n: usize, kind: &str) {
    let gpu = gpu();
    let seed = fresh_seed(&format!("large {n}"));
    let input: Vec<i32> = random_vec(n, seed, -2.0e9, 2.0e9);
    let device = DeviceBuffer::from_host(gpu, &input).expect("upload");
    let mut output = DeviceBuffer::<i32>::poisoned(gpu, n).expect("output");
    for algorithm in algorithms() {
        let options = ScanOptions::new(algorithm);
        let what = format!("{algorithm} n={n} {kind} (seed {seed:#x})");
        let started = std::time::Instant::now();
        let initial = -123_456_789;
        if kind == "in place" {
            // In place: output starts as a copy of the input.
            output.view_mut().copy_from(gpu, &device.view()).unwrap();
            scan::scan_in_place(gpu, output.view_mut(), &Sum, ScanKind::Inclusive, &options)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_wrapping_sum(&output, &input, None, &what);
        } else {
            let exclusive = kind == "exclusive";
            let scan_kind = if exclusive {
                ScanKind::Exclusive { initial }
            } else {
                ScanKind::Inclusive
            };
            scan_into_poisoned(&device, &mut output, scan_kind, algorithm, &what);
            check_wrapping_sum(&output, &input, exclusive.then_some(initial), &what);
        }
        eprintln!(
            "{what}: ok ({:.1} s with the check)",
            started.elapsed().as_secs_f64()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_two_to_the_28_inclusive() {
    run_size(1 << 28, "inclusive");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_lab_size_exclusive() {
    run_size(123_123_123, "exclusive");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_five_eighths_of_2_28_in_place() {
    run_size(5 << 25, "in place");
}

/// 2^31 + 17 `u32` elements (8.6 GB each way): past every 32-bit index.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_past_two_to_the_31() {
    let gpu = gpu();
    let n = (1usize << 31) + 17;
    let seed = fresh_seed("past 2^31");
    let input: Vec<u32> = random_vec(n, seed, 0.0, 4_294_967_296.0);
    let device = DeviceBuffer::from_host(gpu, &input).expect("upload 8.6 GB");
    let mut output = DeviceBuffer::<u32>::poisoned(gpu, n).expect("8.6 GB output");
    for algorithm in algorithms() {
        let what = format!("{algorithm} n=2^31+17 (seed {seed:#x})");
        let started = std::time::Instant::now();
        scan_into_poisoned(&device, &mut output, ScanKind::Inclusive, algorithm, &what);
        check_wrapping_sum(&output, &input, None, &what);
        eprintln!(
            "{what}: ok ({:.1} s with the check)",
            started.elapsed().as_secs_f64()
        );
    }
}
