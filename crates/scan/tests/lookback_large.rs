//! Large GPU cases of the look-back scan (and reduce-then-scan): 2^28
//! elements of several types, the lab's 123123123, and more than 2^32
//! elements (2^32 + 5 u32, 17 GB, scanned in place), every element checked.

mod lookback_support;
mod scan_support;

use gpu_core::{DeviceBuffer, Element, Gpu, Operator, Sum};
use lookback_support::*;
use parprims_testkit::rng::random_vec;
use scan::{ScanAlgorithm, ScanKind};

const LOOKBACK: Runner = Runner::Public(ScanAlgorithm::DecoupledLookback);

fn large<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    runner: Runner,
    n: usize,
    op: &O,
    kind: ScanKind<T>,
    placement: Placement,
    what: &str,
) {
    let host: Vec<T> = exact_input(n, fresh_seed(what));
    check_case(gpu, runner, &host, op, kind, placement, what);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_two_to_the_28_of_every_width() {
    let gpu = gpu();
    let n = 1 << 28;
    large::<i32, _>(
        &gpu,
        LOOKBACK,
        n,
        &Sum,
        ScanKind::Inclusive,
        Placement::OutOfPlace,
        "2^28 i32",
    );
    large::<f32, _>(
        &gpu,
        LOOKBACK,
        n,
        &Sum,
        ScanKind::Inclusive,
        Placement::InPlace,
        "2^28 f32",
    );
    large::<u64, _>(
        &gpu,
        LOOKBACK,
        n,
        &Sum,
        ScanKind::Exclusive { initial: 42 },
        Placement::OutOfPlace,
        "2^28 u64",
    );
    large::<i32, _>(
        &gpu,
        LOOKBACK,
        123_123_123,
        &Sum,
        ScanKind::Exclusive { initial: 1 },
        Placement::InPlace,
        "123123123 i32",
    );
    large::<i32, _>(
        &gpu,
        Runner::Public(ScanAlgorithm::ReduceThenScan),
        n + 1,
        &Sum,
        ScanKind::Inclusive,
        Placement::OutOfPlace,
        "2^28 + 1 i32 reduce-then-scan",
    );
}

/// 2^32 + 5 u32 (17 GB) scanned in place. The input repeats one random
/// chunk of 2^24 values, so the expected prefix at k·C + j is
/// k·S + prefix[j] (mod 2^32, S = the chunk's sum) and every element can
/// be checked without a 17 GB reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn large_more_than_2_32_elements_in_place() {
    let gpu = gpu();
    const CHUNK: usize = 1 << 24;
    let n = (1usize << 32) + 5;
    let chunk: Vec<u32> = random_vec(CHUNK, fresh_seed("2^32 + 5 u32"), 0.0, 4.0e9);
    let chunk_prefix = scan::cpu::scan(&chunk, &Sum, ScanKind::Inclusive);
    let chunk_sum = *chunk_prefix.last().expect("a non-empty chunk");

    // SAFETY: every element is written by the uploads below.
    let mut data = unsafe { DeviceBuffer::<u32>::uninit(&gpu, n) }.expect("17 GB on the device");
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        data.slice_mut(start..start + len)
            .expect("chunk view")
            .copy_from_host(&gpu, &chunk[..len])
            .expect("upload");
        start += len;
    }
    scan::scan_in_place(
        &gpu,
        data.view_mut(),
        &Sum,
        ScanKind::Inclusive,
        &scan::ScanOptions::new(ScanAlgorithm::DecoupledLookback),
    )
    .expect("scan of 2^32 + 5 elements");

    let mut got = vec![0u32; CHUNK];
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        data.slice(start..start + len)
            .expect("chunk view")
            .copy_to_host(&gpu, &mut got[..len])
            .expect("download");
        let k = (start / CHUNK) as u32;
        let base = k.wrapping_mul(chunk_sum);
        if let Some(j) = (0..len).find(|&j| got[j] != base.wrapping_add(chunk_prefix[j])) {
            panic!(
                "element {}: got {}, want {}",
                start + j,
                got[j],
                base.wrapping_add(chunk_prefix[j])
            );
        }
        start += len;
    }
}
