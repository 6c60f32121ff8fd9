//! Shared helpers of the distributed GPU tests (`tests/dist_gpu.rs`,
//! `tests/dist_sort_gpu.rs`): the reference GPU, groups of chosen devices,
//! the test sizes and shard layouts, uploading a layout, and the skip for
//! machines with fewer than two GPUs.
#![allow(dead_code)]

use dist::{layout, Group, Sharded};
use gpu_core::{DeviceBuffer, DeviceType, Gpu};

/// Lengths from empty through one and a few items to several tiles of
/// several ranks, odd ones among them.
pub const SIZES: [usize; 8] = [0, 1, 2, 31, 1000, 4097, (1 << 20) + 3, (1 << 22) + 1];

/// Device 0, where the single-GPU reference runs.
pub fn reference_gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// A group of `devices`, rank r on `devices[r]`.
pub fn group_of(devices: &[usize]) -> Group {
    Group::new(devices).unwrap_or_else(|e| panic!("a group of {devices:?}: {e}"))
}

/// Even blocks, then a lopsided layout (all on the last rank, the others
/// empty), then an uneven one (rank r holds a share proportional to r + 1).
pub fn layouts(n: usize, world: usize) -> Vec<Vec<usize>> {
    let mut lopsided = vec![0; world];
    lopsided[world - 1] = n;
    let weights: usize = (1..=world).sum();
    let mut uneven: Vec<usize> = (1..=world).map(|r| n * r / weights).collect();
    let assigned: usize = uneven.iter().sum();
    uneven[0] += n - assigned;
    vec![layout::even_lengths(n, world), lopsided, uneven]
}

/// `data` split as `lens` (global rank order) onto the group's local ranks.
pub fn shard<T: DeviceType>(group: &Group, data: &[T], lens: &[usize]) -> Sharded<T> {
    let (starts, total) = layout::offsets(lens);
    assert_eq!(total, data.len());
    let shards = group
        .local_ranks()
        .into_iter()
        .enumerate()
        .map(|(i, rank)| {
            let piece = &data[starts[rank]..starts[rank] + lens[rank]];
            DeviceBuffer::from_host(group.gpu(i).expect("local rank"), piece).expect("upload")
        })
        .collect();
    Sharded::from_shards(group, shards).expect("one shard per local rank")
}

/// The number of visible GPUs when there are two or more; otherwise says
/// why the test is skipped and gives `None`.
pub fn several_gpus() -> Option<usize> {
    let count = gpu_core::device_count().unwrap_or(0);
    if count < 2 {
        eprintln!("skipped: {count} CUDA device(s) visible, this test needs 2 or more");
        return None;
    }
    Some(count)
}
