//! Run-length encoding and unique past 2^32 items: 2^32 + 4099 `u32` keys
//! in runs of 1000 (about 17 GB of keys, 17 GB of unique keys and 17 GB of
//! counts on the device: a GPU with at least 60 GB; run it alone). The run
//! slots and the run count pass 32 bits only through the u64 head-count
//! look-back, which this test is for.
//!
//! `cargo test --release -p parprims-compact --test by_key_huge -- --include-ignored`

use gpu_core::{DeviceBuffer, Gpu};

/// Keys i / 1000, filled in parallel.
fn keys(n: usize) -> Vec<u32> {
    let mut keys = vec![0u32; n];
    const CHUNK: usize = 1 << 26;
    std::thread::scope(|scope| {
        for (c, chunk) in keys.chunks_mut(CHUNK).enumerate() {
            scope.spawn(move || {
                for (k, key) in chunk.iter_mut().enumerate() {
                    *key = ((c * CHUNK + k) / 1000) as u32;
                }
            });
        }
    });
    keys
}

#[test]
#[ignore = "needs a CUDA GPU with about 60 GB of device memory"]
fn run_length_encode_and_unique_past_2_pow_32() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let n: usize = (1usize << 32) + 4099;
    let runs = n.div_ceil(1000);
    let input = DeviceBuffer::from_host(&gpu, &keys(n)).unwrap();
    let mut unique = DeviceBuffer::<u32>::zeros(&gpu, n).unwrap();
    let mut counts = DeviceBuffer::<u32>::zeros(&gpu, n).unwrap();
    let got = compact::run_length_encode(&gpu, input.view(), unique.view_mut(), counts.view_mut())
        .unwrap();
    assert_eq!(got, runs);
    let unique_host = unique.slice(..runs).unwrap().to_host(&gpu).unwrap();
    let counts_host = counts.slice(..runs).unwrap().to_host(&gpu).unwrap();
    for r in 0..runs {
        assert_eq!(unique_host[r], r as u32, "run {r}: key");
        let want = if r + 1 < runs {
            1000
        } else {
            n - 1000 * (runs - 1)
        };
        assert_eq!(counts_host[r] as usize, want, "run {r}: length");
    }
    drop(counts);
    let kept = compact::unique(&gpu, input.view(), unique.view_mut()).unwrap();
    assert_eq!(kept, runs);
    let unique_host = unique.slice(..runs).unwrap().to_host(&gpu).unwrap();
    assert!(unique_host.iter().enumerate().all(|(r, &k)| k == r as u32));
}
