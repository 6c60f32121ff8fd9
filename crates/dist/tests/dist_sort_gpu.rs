//! The distributed sample sort against the single-GPU sort on device 0
//! (bit for bit: keys compared as bytes, so NaN payloads and signed zeros
//! count) and against the host model (`dist::sort::model`, which predicts
//! every rank's shard exactly), on even blocks and the caller's own
//! layouts, with both methods (sort first, the default, with both run
//! orders of its step 5, `RunOrder::Resort` and `Merge`, the merge in one
//! chunk, the default chunks and 7; partition first).
//!
//! - `one_rank_*`: a group of one rank (device 0), `#[ignore = "needs a
//!   CUDA GPU"]`: the local sort, the placement, the argument checks.
//! - `one_gpu_*` (`needs a CUDA GPU`): the partition-first kernels
//!   (`gather_samples`, `partition_counts`, `bucket_starts`,
//!   `partition_scatter`, against `jittered_sample_positions` and a stable
//!   partition by `bucket_of`, with and without values, in 32, 2 and 6
//!   buckets), and the sort-first kernels alone on device 0
//!   (`take_samples`, `splitter_bounds` against their host twins
//!   `sample_positions` and `bucket_bounds`, every search kind;
//!   `merge_runs` against a stable sort of its two runs, with and without
//!   values), for several key types and bit ranges, so a one-GPU machine
//!   checks what a group of one rank skips.
//! - `all_gpus_*`: every visible GPU, `#[ignore = "needs 2+ CUDA GPUs"]`
//!   (printing why and returning with fewer): samples, splitters, bounds,
//!   the exchange and step 5; a reversed rank order; one rank per thread
//!   through a unique id.
//!
//! All need libnccl.

mod common;

use common::{group_of, layouts, reference_gpu, several_gpus, shard, SIZES};
use dist::sort::partition_first::{
    bucket_of, bucket_work, jittered_sample_positions, MAX_WORLD, PART_ITEMS, PART_THREADS,
    PART_TILE,
};
use dist::sort::{
    bucket_bounds, sample_positions, search_work, RunOrder, SampleSortMethod, SampleSortPolicy,
    Splitter, DEFAULT_CHUNKS,
};
use dist::{layout, Group, Sharded, SortPlacement};
use gpu_core::launch::grid_1d;
use gpu_core::{DeviceBuffer, DeviceType, Gpu, KernelArgs, Sum};
use scan::{ScanKind, ScanOptions};
use sort::{Order, SortKey, SortOptions};

/// Every method and run order of the sample sort; merged runs in one
/// chunk, the default chunks and an odd count, at every size.
const POLICIES: [SampleSortPolicy; 6] = [
    SampleSortPolicy {
        method: SampleSortMethod::SortFirst,
        run_order: RunOrder::Resort,
        chunks: 1,
        chunked_from: 0,
    },
    SampleSortPolicy {
        method: SampleSortMethod::SortFirst,
        run_order: RunOrder::Merge,
        chunks: 1,
        chunked_from: 0,
    },
    SampleSortPolicy {
        method: SampleSortMethod::SortFirst,
        run_order: RunOrder::Merge,
        chunks: DEFAULT_CHUNKS,
        chunked_from: 0,
    },
    SampleSortPolicy {
        method: SampleSortMethod::SortFirst,
        run_order: RunOrder::Merge,
        chunks: 7,
        chunked_from: 0,
    },
    SampleSortPolicy {
        method: SampleSortMethod::PartitionFirst,
        run_order: RunOrder::Merge,
        chunks: 1,
        chunked_from: 0,
    },
    SampleSortPolicy {
        method: SampleSortMethod::PeerScatter,
        run_order: RunOrder::Merge,
        chunks: 1,
        chunked_from: 0,
    },
];

/// `n` keys of random bits (every bit pattern: NaNs with payloads, signed
/// zeros, infinities), one in four replaced by one of 5 values so runs of
/// equal keys cross the ranks.
fn random_keys<K: SortKey>(n: usize, seed: u64) -> Vec<K> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let few: Vec<K> = (0..5)
        .map(|_| bytemuck::pod_read_unaligned(&next().to_le_bytes()[..K::BYTES]))
        .collect();
    (0..n)
        .map(|_| {
            let bits = next();
            if bits % 4 == 0 {
                few[(bits >> 8) as usize % few.len()]
            } else {
                bytemuck::pod_read_unaligned(&bits.to_le_bytes()[..K::BYTES])
            }
        })
        .collect()
}

fn bytes_of<T: DeviceType>(values: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(values).to_vec()
}

/// Every shard of `sharded` on the host, in global rank order (the whole
/// group is in this process).
fn shards_on_host<T: DeviceType>(group: &Group, sharded: &Sharded<T>) -> Vec<Vec<T>> {
    (0..group.local_count())
        .map(|i| {
            sharded
                .shard(i)
                .unwrap()
                .to_host(group.gpu(i).unwrap())
                .unwrap()
        })
        .collect()
}

/// One distributed key sort and pair sort of `keys` laid out as `lens`,
/// against one GPU (bit for bit) and the host model (every shard).
fn check_sort<K: SortKey>(
    keys: &[K],
    lens: &[usize],
    group: &Group,
    gpu: &Gpu,
    options: SortOptions,
    placement: SortPlacement,
) {
    let n = keys.len();
    let what = format!(
        "{} keys of {} as {lens:?}, {options:?}, {placement:?}",
        n,
        K::SUFFIX
    );
    // One GPU: keys, and the global positions carried along.
    let positions: Vec<u32> = (0..n as u32).collect();
    let input = DeviceBuffer::from_host(gpu, keys).unwrap();
    let input_values = DeviceBuffer::from_host(gpu, &positions).unwrap();
    let mut expected = DeviceBuffer::<K>::zeros(gpu, n).unwrap();
    let mut expected_values = DeviceBuffer::<u32>::zeros(gpu, n).unwrap();
    let mut expected_keys_of_pairs = DeviceBuffer::<K>::zeros(gpu, n).unwrap();
    sort::sort_keys(gpu, input.view(), expected.view_mut(), options.clone()).unwrap();
    sort::sort_pairs(
        gpu,
        input.view(),
        input_values.view(),
        expected_keys_of_pairs.view_mut(),
        expected_values.view_mut(),
        options.clone(),
    )
    .unwrap();
    let expected = expected.to_host(gpu).unwrap();
    let expected_values = expected_values.to_host(gpu).unwrap();

    // The host model's layout.
    let (starts, _) = layout::offsets(lens);
    let host_shards: Vec<Vec<K>> = starts
        .iter()
        .zip(lens)
        .map(|(&s, &l)| keys[s..s + l].to_vec())
        .collect();
    let units: Vec<Vec<()>> = host_shards.iter().map(|k| vec![(); k.len()]).collect();

    let x = shard(group, keys, lens);
    let v = shard(group, &positions, lens);
    let peers = group.peers_reach_all().unwrap();
    for policy in POLICIES {
        let what = format!("{what}, {policy:?}");
        // Without peer access between every pair, peer scatter runs sort
        // first in one chunk.
        let modelled = match policy.method {
            SampleSortMethod::PeerScatter if !peers => SampleSortPolicy {
                method: SampleSortMethod::SortFirst,
                ..policy
            },
            _ => policy,
        };
        let (model, _) =
            dist::sort::model_pairs_with(&host_shards, &units, &options, &modelled).unwrap();
        let expected_lens = match placement {
            SortPlacement::Buckets => model.iter().map(Vec::len).collect::<Vec<_>>(),
            SortPlacement::Even => layout::even_lengths(n, group.world()),
        };
        assert_eq!(
            bytes_of(&model.concat()),
            bytes_of(&expected),
            "{what}: model"
        );
        let sorted =
            dist::sort::sort_keys_with(group, &x, options.clone(), placement, &policy).unwrap();
        assert_eq!(sorted.lens(), &expected_lens[..], "{what}: shard lengths");
        let got = shards_on_host(group, &sorted);
        if placement == SortPlacement::Buckets {
            for (rank, (g, m)) in got.iter().zip(&model).enumerate() {
                assert_eq!(
                    bytes_of(g),
                    bytes_of(m),
                    "{what}: rank {rank} against the model"
                );
            }
        }
        assert_eq!(bytes_of(&got.concat()), bytes_of(&expected), "{what}: keys");

        let (sorted_keys, sorted_values) =
            dist::sort::sort_pairs_with(group, &x, &v, options.clone(), placement, &policy)
                .unwrap();
        assert_eq!(
            sorted_keys.lens(),
            &expected_lens[..],
            "{what}: pair lengths"
        );
        assert_eq!(
            sorted_values.lens(),
            &expected_lens[..],
            "{what}: value lengths"
        );
        assert_eq!(
            bytes_of(&sorted_keys.gather_to_host(group).unwrap()),
            bytes_of(&expected),
            "{what}: keys of the pairs"
        );
        assert_eq!(
            sorted_values.gather_to_host(group).unwrap(),
            expected_values,
            "{what}: values (stable across ranks)"
        );
    }
    // The default entry points (sort first, merged runs).
    let sorted = dist::sort_keys(group, &x, options.clone(), placement).unwrap();
    assert_eq!(
        bytes_of(&sorted.gather_to_host(group).unwrap()),
        bytes_of(&expected),
        "{what}: sort_keys"
    );
}

/// Random keys of any type ([`random_keys`]) laid out as `lens`, for
/// [`check_sort`].
struct RandomKeys<'a> {
    n: usize,
    seed: u64,
    lens: &'a [usize],
    group: &'a Group,
    gpu: &'a Gpu,
}

impl RandomKeys<'_> {
    /// [`check_sort`] of `n` random `K` keys.
    fn check<K: SortKey>(&self, options: SortOptions, placement: SortPlacement) {
        let keys = random_keys::<K>(self.n, self.seed);
        check_sort(&keys, self.lens, self.group, self.gpu, options, placement);
    }
}

fn check_every_sort(group: &Group) {
    let gpu = reference_gpu();
    let world = group.world();
    for (k, &n) in SIZES.iter().enumerate() {
        let seed = 100 + k as u64;
        for (l, lens) in layouts(n, world).into_iter().enumerate() {
            let placement = if l == 0 {
                SortPlacement::Buckets
            } else {
                SortPlacement::Even
            };
            let random = RandomKeys {
                n,
                seed,
                lens: &lens,
                group,
                gpu: &gpu,
            };
            random.check::<u32>(Order::Ascending.into(), SortPlacement::Buckets);
            random.check::<f32>(Order::Descending.into(), placement);
            if n <= 4097 || l == 0 {
                random.check::<i64>(Order::Ascending.into(), placement);
                random.check::<f64>(Order::Ascending.into(), SortPlacement::Buckets);
                random.check::<u8>(Order::Descending.into(), SortPlacement::Even);
                random.check::<i16>(SortOptions::default().with_bits(4..12), placement);
            }
        }
        // One repeated key: the splitters cut the run by rank and position.
        let same = vec![7u32; n];
        check_sort(
            &same,
            &layout::even_lengths(n, world),
            group,
            &gpu,
            Order::Ascending.into(),
            SortPlacement::Buckets,
        );
    }
}

fn check_arguments(group: &Group) {
    let n = 1000;
    let keys: Vec<u32> = random_keys(n, 5);
    let x = Sharded::scatter_from_host(group, &keys).unwrap();
    // Value shards of other lengths.
    let mut lens = layout::even_lengths(n, group.world());
    lens[0] += 1;
    let values = shard(group, &vec![0u16; n + 1], &lens);
    let e = dist::sort_pairs(group, &x, &values, Order::Ascending, SortPlacement::Buckets);
    assert!(matches!(
        e,
        Err(dist::Error::Gpu(gpu_core::Error::LengthMismatch { .. }))
    ));
    // A bit range past the key.
    let e = dist::sort_keys(
        group,
        &x,
        SortOptions::default().with_bits(0..33),
        SortPlacement::Buckets,
    );
    assert!(matches!(
        e,
        Err(dist::Error::Gpu(gpu_core::Error::InvalidArgument { .. }))
    ));
    // The input is left as it was.
    assert_eq!(x.gather_to_host(group).unwrap(), keys);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_sort_matches_one_gpu() {
    let group = group_of(&[0]);
    check_every_sort(&group);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_sort_arguments_are_checked() {
    check_arguments(&group_of(&[0]));
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_sort_matches_one_gpu() {
    let Some(count) = several_gpus() else { return };
    let group = Group::all().expect("a group of every GPU");
    assert_eq!(group.world(), count);
    check_every_sort(&group);
    check_arguments(&group);
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_sort_in_reversed_rank_order() {
    let Some(count) = several_gpus() else { return };
    let reversed: Vec<usize> = (0..count).rev().collect();
    let group = group_of(&reversed);
    let gpu = reference_gpu();
    for &n in &[0usize, 3, 100_003] {
        for lens in layouts(n, count) {
            check_sort(
                &random_keys::<u64>(n, 9),
                &lens,
                &group,
                &gpu,
                Order::Descending.into(),
                SortPlacement::Even,
            );
        }
    }
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_sort_one_rank_per_thread_through_a_unique_id() {
    let Some(count) = several_gpus() else { return };
    let id = dist::unique_id().expect("NCCL");
    let n = 1_000_003usize;
    let keys: Vec<f32> = random_keys(n, 77);
    let options = SortOptions::from(Order::Ascending);
    let blocks = layout::even_blocks(n, count);
    let host_shards: Vec<Vec<f32>> = blocks.iter().map(|b| keys[b.clone()].to_vec()).collect();
    let model = dist::sort::model(&host_shards, &options).unwrap();
    let threads: Vec<_> = (0..count)
        .map(|rank| {
            let keys = keys.clone();
            let options = options.clone();
            std::thread::spawn(move || {
                let group = Group::from_unique_id(&id, rank, count, rank).expect("join");
                let x = Sharded::scatter_from_host(&group, &keys).unwrap();
                let sorted = dist::sort_keys(&group, &x, options, SortPlacement::Buckets).unwrap();
                let mine = sorted
                    .shard(0)
                    .unwrap()
                    .to_host(group.gpu(0).unwrap())
                    .unwrap();
                (rank, mine)
            })
        })
        .collect();
    for thread in threads {
        let (rank, mine) = thread.join().expect("rank thread");
        assert_eq!(
            bytes_of(&mine),
            bytes_of(&model[rank]),
            "rank {rank}'s bucket"
        );
    }
}

/// Runs `dist_take_samples_{K}` and `dist_splitter_bounds_{K}` on a
/// sorted array of `n` keys against the host twins, with splitters of
/// every kind (from this rank, an earlier one, a later one, missing).
fn check_kernels<K: SortKey>(gpu: &Gpu, n: usize, seed: u64, options: SortOptions) {
    let bits = options.bit_range::<K>().unwrap();
    let descending = options.order.is_descending();
    let keys: Vec<K> = random_keys(n, seed);
    let input = DeviceBuffer::from_host(gpu, &keys).unwrap();
    let mut sorted = DeviceBuffer::<K>::zeros(gpu, n).unwrap();
    sort::sort_keys(gpu, input.view(), sorted.view_mut(), options.clone()).unwrap();
    let host_sorted = sorted.to_host(gpu).unwrap();
    let values: Vec<u64> = host_sorted
        .iter()
        .map(|&k| sort::cpu::sort_value(k, descending, &bits))
        .collect();
    let module = dist::sort::sample_sort_module::<K>();
    let what = format!("{n} keys of {}, {options:?}", K::SUFFIX);

    // take_samples.
    let count = 200usize;
    let mut samples = DeviceBuffer::<K>::zeros(gpu, count).unwrap();
    if n > 0 {
        let kernel = gpu
            .kernel(&module, &format!("dist_take_samples_{}", K::SUFFIX))
            .unwrap();
        let (config, _) = grid_1d(count as u64, 256, 1, 0).unwrap();
        let mut args = KernelArgs::new();
        args.input(&sorted.view())
            .scalar(n as u64)
            .scalar(count as u32)
            .output(&mut samples.view_mut());
        // SAFETY: take_samples(const K*, u64 n, u32 count, K*): matches;
        // sorted holds n > 0 keys, samples count.
        unsafe { gpu.launch(&kernel, config, &args).unwrap() };
        let expected: Vec<K> = sample_positions(n, count)
            .into_iter()
            .map(|p| host_sorted[p])
            .collect();
        assert_eq!(
            bytes_of(&samples.to_host(gpu).unwrap()),
            bytes_of(&expected),
            "{what}: samples"
        );
    }

    // splitter_bounds: targets drawn from the keys and just past them, from
    // ranks 0 (earlier), 1 (this one) and 2 (later), and a missing one.
    let mut splitters = vec![None];
    for (j, &v) in values.iter().step_by((n / 7).max(1)).enumerate() {
        for (rank, value) in [
            (0, v),
            (2, v),
            (0, v.wrapping_add(1)),
            (2, v.saturating_sub(1)),
        ] {
            splitters.push(Some(Splitter {
                value,
                rank,
                position: 0,
            }));
        }
        splitters.push(Some(Splitter {
            value: v,
            rank: 1,
            position: j,
        }));
    }
    let count = splitters.len();
    let work = DeviceBuffer::from_host(gpu, &search_work(1, n, &splitters)).unwrap();
    let mut bounds = DeviceBuffer::<u64>::zeros(gpu, count).unwrap();
    let kernel = gpu
        .kernel(&module, &format!("dist_splitter_bounds_{}", K::SUFFIX))
        .unwrap();
    let (config, _) = grid_1d(count as u64, 256, 1, 0).unwrap();
    let mut args = KernelArgs::new();
    args.input(&sorted.view())
        .scalar(n as u64)
        .input(&work.view())
        .scalar(count as u32)
        .scalar(u32::from(descending))
        .scalar(bits.start)
        .scalar(bits.end)
        .output(&mut bounds.view_mut());
    // SAFETY: splitter_bounds(const K*, u64 n, const u64* work, u32 count,
    // u32 descending, u32 begin, u32 end, u64*): matches; work holds
    // 2·count words, bounds count.
    unsafe { gpu.launch(&kernel, config, &args).unwrap() };
    let expected: Vec<u64> = bucket_bounds(&values, 1, &splitters)
        .into_iter()
        .map(|b| b as u64)
        .collect();
    assert_eq!(bounds.to_host(gpu).unwrap(), expected, "{what}: bounds");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_gpu_sample_sort_kernels_match_their_host_twins() {
    let gpu = reference_gpu();
    for (k, &n) in [0usize, 1, 2, 31, 1000, 100_003].iter().enumerate() {
        let seed = 300 + k as u64;
        check_kernels::<u32>(&gpu, n, seed, Order::Ascending.into());
        check_kernels::<f32>(&gpu, n, seed, Order::Descending.into());
        check_kernels::<i64>(&gpu, n, seed, Order::Ascending.into());
        check_kernels::<f64>(&gpu, n, seed, Order::Descending.into());
        check_kernels::<u8>(&gpu, n, seed, Order::Ascending.into());
        check_kernels::<i16>(&gpu, n, seed, SortOptions::default().with_bits(4..12));
        check_kernels::<u64>(
            &gpu,
            n,
            seed,
            SortOptions::from(Order::Descending).with_bits(40..64),
        );
    }
}

/// The arguments `splitter_counts` and `partition_counts` begin with:
/// (const K* keys, u64 n, const u64* work, u32 splitters, u32 descending,
/// u32 begin, u32 end).
fn splitter_kernel_args<K: SortKey>(
    keys: &DeviceBuffer<K>,
    work: &DeviceBuffer<u64>,
    splitters: usize,
    descending: bool,
    bits: &std::ops::Range<u32>,
) -> KernelArgs {
    let mut args = KernelArgs::new();
    args.input(&keys.view())
        .scalar(keys.len() as u64)
        .input(&work.view())
        .scalar(splitters as u32)
        .scalar(u32::from(descending))
        .scalar(bits.start)
        .scalar(bits.end);
    args
}

/// The partition-first kernels alone (`gather_samples`,
/// `partition_counts`, the scan of the counts, `bucket_starts`,
/// `partition_scatter`) and peer scatter's `splitter_counts` (up to 7
/// splitters) on rank 1 of a pretend world, against the stable partition
/// by the host twin `bucket_of`, with positions as values or without
/// values.
/// `present` splitters drawn from the samples, then `missing` absent ones.
fn check_partition_kernels<K: SortKey>(
    gpu: &Gpu,
    n: usize,
    seed: u64,
    options: SortOptions,
    (present, missing): (usize, usize),
) {
    let bits = options.bit_range::<K>().unwrap();
    let descending = options.order.is_descending();
    let keys: Vec<K> = random_keys(n, seed);
    let values: Vec<u64> = keys
        .iter()
        .map(|&k| sort::cpu::sort_value(k, descending, &bits))
        .collect();
    let module = dist::sort::sample_sort_module::<K>();
    let what = format!("{n} keys of {}, {options:?}", K::SUFFIX);
    let input = DeviceBuffer::from_host(gpu, &keys).unwrap();

    // gather_samples at the jittered positions.
    let count = 100usize;
    let positions = jittered_sample_positions(n, count, 1);
    if n > 0 {
        let at: Vec<u64> = positions.iter().map(|&p| p as u64).collect();
        let at = DeviceBuffer::from_host(gpu, &at).unwrap();
        let mut samples = DeviceBuffer::<K>::zeros(gpu, count).unwrap();
        let kernel = gpu
            .kernel(&module, &format!("dist_gather_samples_{}", K::SUFFIX))
            .unwrap();
        let (config, _) = grid_1d(count as u64, 256, 1, 0).unwrap();
        let mut args = KernelArgs::new();
        args.input(&input.view())
            .input(&at.view())
            .scalar(count as u32)
            .output(&mut samples.view_mut());
        // SAFETY: gather_samples(const K*, const u64*, u32 count, K*):
        // matches; positions below n, samples count.
        unsafe { gpu.launch(&kernel, config, &args).unwrap() };
        let expected: Vec<K> = positions.iter().map(|&p| keys[p]).collect();
        assert_eq!(
            bytes_of(&samples.to_host(gpu).unwrap()),
            bytes_of(&expected),
            "{what}: samples"
        );
    }

    // Splitters from every third sample, from ranks 0, 1 (this one) and 2,
    // sorted as tuples, the first `present` of them, then `missing` absent
    // ones (fewer than MAX_WORLD in all).
    let mut splitters: Vec<Splitter> = positions
        .iter()
        .step_by(3)
        .enumerate()
        .map(|(j, &p)| Splitter {
            value: values[p],
            rank: j % 3,
            position: p,
        })
        .collect();
    splitters.sort_unstable();
    assert!(present + missing < MAX_WORLD);
    splitters.truncate(present);
    let mut listed: Vec<Option<Splitter>> = splitters.into_iter().map(Some).collect();
    listed.resize(listed.len() + missing, None);
    let world = listed.len() + 1;
    let work_words = bucket_work(1, &listed);
    let buckets: Vec<usize> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| bucket_of(v, i, &work_words))
        .collect();
    let bucket_list = &buckets;
    let order: Vec<usize> = (0..world)
        .flat_map(|b| (0..n).filter(move |&i| bucket_list[i] == b))
        .collect::<Vec<_>>();
    let expected_keys: Vec<K> = order.iter().map(|&i| keys[i]).collect();
    let expected_starts: Vec<u64> = (1..world)
        .map(|b| buckets.iter().filter(|&&x| x < b).count() as u64)
        .collect();
    if n == 0 {
        return;
    }
    let work = DeviceBuffer::from_host(gpu, &work_words).unwrap();

    // splitter_counts (peer scatter's cuts, at most 7 splitters): the keys
    // before each splitter, which are where the buckets after it start.
    // Three blocks, so the grid-stride walk takes several steps.
    if world - 1 <= 7 {
        let mut below = DeviceBuffer::<u64>::zeros(gpu, world - 1).unwrap();
        let kernel = gpu
            .kernel(&module, &format!("dist_splitter_counts_{}", K::SUFFIX))
            .unwrap();
        let (mut config, _) = grid_1d(n as u64, 256, 1, 0).unwrap();
        config.grid.0 = config.grid.0.min(3);
        let mut args = splitter_kernel_args(&input, &work, world - 1, descending, &bits);
        args.output(&mut below.view_mut());
        // SAFETY: splitter_counts(const K*, u64 n, const u64* work, u32
        // splitters, u32 descending, u32 begin, u32 end, u64* below):
        // matches; work holds 2·splitters words, below splitters zeros.
        unsafe { gpu.launch(&kernel, config, &args).unwrap() };
        assert_eq!(
            below.to_host(gpu).unwrap(),
            expected_starts,
            "{what}: splitter counts"
        );
    }

    let tiles = n.div_ceil(PART_TILE);
    let mut counts = DeviceBuffer::<u64>::zeros(gpu, world * tiles).unwrap();
    let mut offsets = DeviceBuffer::<u64>::zeros(gpu, world * tiles).unwrap();
    let mut starts = DeviceBuffer::<u64>::zeros(gpu, world - 1).unwrap();
    let (config, _) = grid_1d(n as u64, PART_THREADS, PART_ITEMS, 0).unwrap();
    let kernel = gpu
        .kernel(&module, &format!("dist_partition_counts_{}", K::SUFFIX))
        .unwrap();
    let mut args = splitter_kernel_args(&input, &work, world - 1, descending, &bits);
    args.output(&mut counts.view_mut()).scalar(tiles as u64);
    // SAFETY: partition_counts(const K*, u64 n, const u64* work, u32
    // splitters, u32 descending, u32 begin, u32 end, u64* counts, u64
    // tiles): matches; one block per tile, counts world·tiles cells.
    unsafe { gpu.launch(&kernel, config, &args).unwrap() };
    scan::scan_into(
        gpu,
        counts.view(),
        offsets.view_mut(),
        &Sum,
        ScanKind::Exclusive { initial: 0 },
        &ScanOptions::default(),
    )
    .unwrap();
    let kernel = gpu
        .kernel(&module, &format!("dist_bucket_starts_{}", K::SUFFIX))
        .unwrap();
    let (starts_config, _) = grid_1d((world - 1) as u64, 256, 1, 0).unwrap();
    let mut args = KernelArgs::new();
    args.input(&offsets.view())
        .scalar(tiles as u64)
        .scalar((world - 1) as u32)
        .output(&mut starts.view_mut());
    // SAFETY: bucket_starts(const u64*, u64 tiles, u32 splitters, u64*):
    // matches; offsets world·tiles, starts world − 1.
    unsafe { gpu.launch(&kernel, starts_config, &args).unwrap() };
    assert_eq!(
        starts.to_host(gpu).unwrap(),
        expected_starts,
        "{what}: starts"
    );

    let index: Vec<u32> = (0..n as u32).collect();
    let index = DeviceBuffer::from_host(gpu, &index).unwrap();
    for with_values in [false, true] {
        let mut out = DeviceBuffer::<K>::zeros(gpu, n).unwrap();
        let mut out_index = DeviceBuffer::<u32>::zeros(gpu, n).unwrap();
        let (width, values_in, values_out) = if with_values {
            (
                4,
                index.view().device_ptr(),
                out_index.view_mut().device_ptr(),
            )
        } else {
            (1, 0, 0)
        };
        let kernel = gpu
            .kernel(
                &module,
                &format!("dist_partition_scatter_{}_v{width}", K::SUFFIX),
            )
            .unwrap();
        let mut args = KernelArgs::new();
        args.input(&input.view())
            .scalar(values_in)
            .scalar(n as u64)
            .input(&work.view())
            .scalar((world - 1) as u32)
            .scalar(u32::from(descending))
            .scalar(bits.start)
            .scalar(bits.end)
            .input(&offsets.view())
            .scalar(tiles as u64)
            .output(&mut out.view_mut())
            .scalar(values_out);
        // SAFETY: partition_scatter(const K*, const V*, u64 n, const u64*
        // work, u32 splitters, u32 descending, u32 begin, u32 end, const
        // u64* offsets, u64 tiles, K*, V*): matches, V u32 with values and
        // u8 with null pointers; every buffer n long.
        unsafe { gpu.launch(&kernel, config, &args).unwrap() };
        assert_eq!(
            bytes_of(&out.to_host(gpu).unwrap()),
            bytes_of(&expected_keys),
            "{what}: partitioned keys, values {with_values}"
        );
        if with_values {
            let expected: Vec<u32> = order.iter().map(|&i| i as u32).collect();
            assert_eq!(out_index.to_host(gpu).unwrap(), expected, "{what}: values");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_gpu_partition_kernels_match_their_host_twins() {
    let gpu = reference_gpu();
    for (k, &n) in [0usize, 1, 2, 31, 2047, 2048, 2049, 100_003]
        .iter()
        .enumerate()
    {
        let seed = 700 + k as u64;
        // 31 splitters (the most), then 1 and 5: the binary search's
        // power-of-two and partial steps.
        for shape in [(MAX_WORLD - 4, 3), (1, 0), (4, 1)] {
            check_partition_kernels::<u32>(&gpu, n, seed, Order::Ascending.into(), shape);
            check_partition_kernels::<f64>(
                &gpu,
                n,
                seed,
                SortOptions::default().with_bits(52..64),
                shape,
            );
        }
        let most = (MAX_WORLD - 4, 3);
        check_partition_kernels::<f32>(&gpu, n, seed, Order::Descending.into(), most);
        check_partition_kernels::<i64>(&gpu, n, seed, Order::Ascending.into(), most);
        check_partition_kernels::<u8>(&gpu, n, seed, Order::Descending.into(), most);
        check_partition_kernels::<u16>(
            &gpu,
            n,
            seed,
            SortOptions::default().with_bits(4..12),
            most,
        );
    }
}

/// `merge_runs` of two sorted runs (a of the keys, then the rest) with
/// their positions as values, against the stable sort of both runs
/// concatenated (what a stable merge with ties to the first run is).
fn check_merge_kernel<K: SortKey>(gpu: &Gpu, n: usize, a: usize, seed: u64, options: SortOptions) {
    let bits = options.bit_range::<K>().unwrap();
    let descending = options.order.is_descending();
    let keys: Vec<K> = random_keys(n, seed);
    let (first, second) = keys.split_at(a);
    let runs = [
        sort::cpu::sort_keys(first, descending, &bits),
        sort::cpu::sort_keys(second, descending, &bits),
    ]
    .concat();
    let positions: Vec<u64> = (0..n as u64).collect();
    let expected_order = sort::cpu::argsort(&runs, descending, &bits);
    let expected: Vec<K> = expected_order.iter().map(|&i| runs[i]).collect();
    let input = DeviceBuffer::from_host(gpu, &runs).unwrap();
    let values = DeviceBuffer::from_host(gpu, &positions).unwrap();
    let mut out = DeviceBuffer::<K>::zeros(gpu, n).unwrap();
    let mut out_values = DeviceBuffer::<u64>::zeros(gpu, n).unwrap();
    let module = dist::sort::sample_sort_module::<K>();
    for with_values in [false, true] {
        let entry = format!(
            "dist_merge_runs_{}_v{}",
            K::SUFFIX,
            if with_values { 8 } else { 1 }
        );
        let (config, tiles) = grid_1d(n as u64, 256, dist::sort::MERGE_ITEMS, 0).unwrap();
        let mut splits = DeviceBuffer::<u64>::zeros(gpu, tiles as usize + 1).unwrap();
        let split_kernel = gpu
            .kernel(&module, &format!("dist_merge_splits_{}", K::SUFFIX))
            .unwrap();
        let (split_config, _) = grid_1d(tiles + 1, 256, 1, 0).unwrap();
        let mut args = KernelArgs::new();
        args.input(&input.slice(..a).unwrap())
            .scalar(a as u64)
            .input(&input.slice(a..).unwrap())
            .scalar((n - a) as u64)
            .scalar(tiles)
            .scalar(u32::from(descending))
            .scalar(bits.start)
            .scalar(bits.end)
            .output(&mut splits.view_mut());
        // SAFETY: merge_splits(const K*, u64 a, const K*, u64 b, u64 tiles,
        // u32, u32, u32, u64*): matches; splits holds tiles + 1 words.
        unsafe { gpu.launch(&split_kernel, split_config, &args).unwrap() };
        let kernel = gpu.kernel(&module, &entry).unwrap();
        let value_ptr = |p: u64| if with_values { p } else { 0 };
        let mut args = KernelArgs::new();
        args.input(&input.slice(..a).unwrap())
            .scalar(value_ptr(values.slice(..a).unwrap().device_ptr()))
            .scalar(a as u64)
            .input(&input.slice(a..).unwrap())
            .scalar(value_ptr(values.slice(a..).unwrap().device_ptr()))
            .scalar((n - a) as u64)
            .input(&splits.view())
            .output(&mut out.view_mut())
            .scalar(value_ptr(out_values.view_mut().device_ptr()))
            .scalar(u32::from(descending))
            .scalar(bits.start)
            .scalar(bits.end);
        // SAFETY: merge_runs(const K*, const V*, u64 a, const K*, const V*,
        // u64 b, const u64* splits, K*, V*, u32, u32, u32) with V = u8 and
        // null value pointers, or V = u64 and n values; the runs hold a and
        // n - a keys, splits the grid's tile starts, out n.
        unsafe { gpu.launch(&kernel, config, &args).unwrap() };
        let what = format!(
            "merge of {a} + {} keys of {}, {options:?}",
            n - a,
            K::SUFFIX
        );
        assert_eq!(
            bytes_of(&out.to_host(gpu).unwrap()),
            bytes_of(&expected),
            "{what}"
        );
        if with_values {
            let got = out_values.to_host(gpu).unwrap();
            let want: Vec<u64> = expected_order.iter().map(|&i| i as u64).collect();
            assert_eq!(got, want, "{what}: values (ties take the first run)");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_gpu_merge_kernel_is_a_stable_merge() {
    let gpu = reference_gpu();
    let cases = [
        (1usize, 0usize),
        (1, 1),
        (2, 1),
        (31, 7),
        (1000, 999),
        (4097, 2048),
        (100_003, 33_333),
        ((1 << 20) + 3, 1 << 19),
    ];
    for (k, &(n, a)) in cases.iter().enumerate() {
        let seed = 500 + k as u64;
        check_merge_kernel::<u32>(&gpu, n, a, seed, Order::Ascending.into());
        check_merge_kernel::<f32>(&gpu, n, a, seed, Order::Descending.into());
        check_merge_kernel::<i64>(&gpu, n, a, seed, Order::Ascending.into());
        check_merge_kernel::<u8>(&gpu, n, a, seed, Order::Descending.into());
        check_merge_kernel::<i16>(&gpu, n, a, seed, SortOptions::default().with_bits(4..12));
    }
}
