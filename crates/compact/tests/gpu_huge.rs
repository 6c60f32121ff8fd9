//! One compaction past 2^31 elements: 2^31 + 9 `u32` with byte flags
//! (≈ 8.6 GB input, 2.1 GB flags, 8.6 GB output on the device), SinglePass
//! and ThreePass with the look-back scan (u32 marks: 2 × 8.6 GB more).
//! Needs a GPU with ≥ 40 GB; about ten seconds, mostly host-side generation
//! and checking.
//!
//! The input is `input[i] = i` so the check needs no second copy: the output
//! must be strictly increasing indices, each with a non-zero flag, as many
//! as there are non-zero flags.

use compact::{select_flagged_into, CompactAlgorithm, ScanAlgorithm};
use gpu_core::{DeviceBuffer, Gpu};
use parprims_testkit::rng::SplitMix64;

fn parallel_fill<T: Send>(out: &mut [T], fill: impl Fn(usize, &mut [T]) + Sync) {
    const CHUNK: usize = 1 << 24;
    std::thread::scope(|scope| {
        let fill = &fill;
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(4);
        let chunks: Vec<(usize, &mut [T])> = out.chunks_mut(CHUNK).enumerate().collect();
        let mut groups: Vec<Vec<(usize, &mut [T])>> = (0..workers).map(|_| Vec::new()).collect();
        for (k, chunk) in chunks.into_iter().enumerate() {
            groups[k % workers].push(chunk);
        }
        for group in groups {
            scope.spawn(move || {
                for (index, chunk) in group {
                    fill(index * CHUNK, chunk);
                }
            });
        }
    });
}

#[test]
#[ignore = "needs a CUDA GPU (about 40 GB of device memory)"]
fn large_select_flagged_past_2_pow_31() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let n: usize = (1usize << 31) + 9;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
        | 1;
    eprintln!("seed = {seed:#x}");

    let mut input = vec![0u32; n];
    parallel_fill(&mut input, |start, chunk| {
        for (k, v) in chunk.iter_mut().enumerate() {
            *v = (start + k) as u32;
        }
    });
    // About 30 % kept, arbitrary non-zero bytes; the last few items kept so
    // the final partial tile is exercised.
    let mut flags = vec![0u8; n];
    parallel_fill(&mut flags, |start, chunk| {
        let mut rng = SplitMix64::new(seed ^ (start as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for f in chunk.iter_mut() {
            let r = rng.next_u64();
            *f = if r % 10 < 3 {
                1 + (r >> 32) as u8 % 255
            } else {
                0
            };
        }
    });
    for f in &mut flags[n - 4..] {
        *f = 0x80;
    }
    let expected_count = flags.iter().filter(|&&f| f != 0).count();

    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload input");
    drop(input);
    let d_flags = DeviceBuffer::from_host(&gpu, &flags).expect("upload flags");
    let mut out = DeviceBuffer::<u32>::poisoned(&gpu, n).expect("output");
    let mut count = DeviceBuffer::<u64>::poisoned(&gpu, 1).expect("count");

    for algorithm in [
        CompactAlgorithm::SinglePass,
        CompactAlgorithm::ThreePass {
            scan: ScanAlgorithm::DecoupledLookback,
        },
    ] {
        out.view_mut().fill(&gpu, u32::MAX).expect("reset output");
        select_flagged_into(
            &gpu,
            d_input.view(),
            d_flags.view(),
            out.view_mut(),
            count.view_mut(),
            algorithm,
        )
        .expect("select_flagged_into");
        let got_count = count.to_host(&gpu).expect("count")[0] as usize;
        assert_eq!(got_count, expected_count, "{algorithm}: count");
        let got = out.to_host(&gpu).expect("download");
        // Indices strictly increasing, each flagged, then untouched output.
        let mut previous: Option<u32> = None;
        for (k, &index) in got[..got_count].iter().enumerate() {
            assert!(
                flags[index as usize] != 0,
                "{algorithm}: output[{k}] = {index} is not flagged"
            );
            if let Some(p) = previous {
                assert!(index > p, "{algorithm}: output[{k}] = {index} after {p}");
            }
            previous = Some(index);
        }
        assert_eq!(previous, Some((n - 1) as u32), "{algorithm}: last item");
        assert!(
            got[got_count..].iter().all(|&x| x == u32::MAX),
            "{algorithm}: wrote past the count"
        );
    }
}
