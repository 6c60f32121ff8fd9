//! The sample sorts' host models (`dist::sort::model`, `model_pairs`,
//! `model_pairs_with` and `partition_first::model_pairs`: the device
//! paths' sample positions, splitters, buckets and exchange plans, with
//! CPU local sorts) of every method against the single-GPU sort's CPU
//! reference of the concatenated shards, for worlds of 1 to 8 ranks and
//! skewed inputs; peer scatter's split destinations against the exchange
//! plan; and the host steps' argument checks. No GPU.

use std::ops::Range;

use dist::sort::partition_first::{self, bucket_of, bucket_work, jittered_sample_positions};
use dist::sort::peer_scatter;
use dist::sort::{
    bucket_bounds, choose_splitters, choose_splitters_at, chunk_plans, exchange_plan, merge_round,
    model, model_pairs, model_pairs_with, reserve_capacity, run_lengths, sample_positions,
    samples_per_rank, search_work, validate, MergeStep, RunOrder, SampleSortMethod,
    SampleSortPolicy, Splitter, SEARCH_LOWER, SEARCH_UPPER,
};
use proptest::prelude::*;
use sort::{Order, SortKey, SortOptions};

/// Shards cut from `data` at `cuts` (modulo len + 1, so empty shards and
/// everything on one rank come up), `world` of them.
fn shards_of<K: Copy>(data: &[K], cuts: &[usize], world: usize) -> Vec<Vec<K>> {
    let n = data.len();
    let mut points: Vec<usize> = cuts.iter().take(world - 1).map(|&c| c % (n + 1)).collect();
    points.resize(world - 1, n);
    points.extend([0, n]);
    points.sort_unstable();
    points
        .windows(2)
        .map(|w| data[w[0]..w[1]].to_vec())
        .collect()
}

fn options(descending: bool, bits: Option<Range<u32>>) -> SortOptions {
    let order = if descending {
        Order::Descending
    } else {
        Order::Ascending
    };
    SortOptions { order, bits }
}

/// Keys as their bytes: floats compare bit for bit (NaN payloads and
/// signed zeros included).
fn bits_of<K: SortKey>(keys: &[K]) -> Vec<Vec<u8>> {
    keys.iter()
        .map(|k| bytemuck::bytes_of(k).to_vec())
        .collect()
}

/// Checks the model against the CPU sort of the concatenation, bit for
/// bit, and the bucket sizes against the regular-sampling bound.
fn check_model<K: SortKey>(shards: &[Vec<K>], options: &SortOptions) -> Result<(), TestCaseError> {
    let world = shards.len();
    let bits = options.bit_range::<K>().expect("a valid bit range");
    let all: Vec<K> = shards.concat();
    let expected = sort::cpu::sort_keys(&all, options.order.is_descending(), &bits);
    // The default: sort first, merge rounds.
    let sorted = model(shards, options).expect("the model runs");
    prop_assert_eq!(sorted.len(), world);
    prop_assert_eq!(bits_of(&sorted.concat()), bits_of(&expected));
    // Partition first, and sort first with a second sort: each rank holds a
    // bucket of the same result.
    let units: Vec<Vec<()>> = shards.iter().map(|k| vec![(); k.len()]).collect();
    let policy = |method, run_order| SampleSortPolicy {
        method,
        run_order,
        ..Default::default()
    };
    let (partitioned, _) = model_pairs_with(
        shards,
        &units,
        options,
        &policy(SampleSortMethod::PartitionFirst, RunOrder::Merge),
    )
    .expect("the model runs");
    prop_assert_eq!(partitioned.len(), world);
    prop_assert_eq!(bits_of(&partitioned.concat()), bits_of(&expected));
    let (resorted, _) = model_pairs_with(
        shards,
        &units,
        options,
        &policy(SampleSortMethod::SortFirst, RunOrder::Resort),
    )
    .expect("the model runs");
    for (rank, (m, r)) in resorted.iter().zip(&sorted).enumerate() {
        prop_assert_eq!(bits_of(m), bits_of(r), "rank {} re-sorted", rank);
    }
    // Merged in any number of chunks: the same shards (every c-th bucket
    // splitter is a rank splitter).
    for chunks in [1, 3, 8] {
        let chunked = SampleSortPolicy {
            chunks,
            chunked_from: 0,
            ..policy(SampleSortMethod::SortFirst, RunOrder::Merge)
        };
        let (k, _) = model_pairs_with(shards, &units, options, &chunked).expect("the model runs");
        for (rank, (a, b)) in k.iter().zip(&sorted).enumerate() {
            prop_assert_eq!(bits_of(a), bits_of(b), "rank {}, {} chunks", rank, chunks);
        }
    }
    // Regular sampling of sorted shards: no bucket far above n / world.
    let s = samples_per_rank(world);
    let slack: usize = shards.iter().map(|m| m.len().div_ceil(s)).sum();
    let bound = all.len() / world + 3 * slack + world;
    // Jittered sampling of unsorted shards: within half a share of it
    // (the splitters' rank error is a few percent of n at 64·world
    // samples per rank).
    let loose = all.len() / world + all.len() / (2 * world) + 2 * world;
    for (rank, (shard, part)) in sorted.iter().zip(&partitioned).enumerate() {
        prop_assert!(
            shard.len() <= bound && part.len() <= loose,
            "rank {} holds {} (sort first; bound {}) and {} (partition first; bound {}) of {} keys",
            rank,
            shard.len(),
            bound,
            part.len(),
            loose,
            all.len()
        );
    }
    Ok(())
}

fn special_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(f32::NAN),
        Just(-f32::NAN),
        Just(f32::from_bits(0x7fc0_1234)),
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(1.0f32),
        (-4i32..4).prop_map(|i| i as f32 * 0.5),
        any::<f32>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn u32_any_layout_matches_the_sort_of_the_concatenation(
        data in proptest::collection::vec(any::<u32>(), 0..3000),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 1usize..=8,
        descending in any::<bool>(),
    ) {
        check_model(&shards_of(&data, &cuts, world), &options(descending, None))?;
    }

    #[test]
    fn few_distinct_keys_and_bit_ranges(
        data in proptest::collection::vec(0u16..4, 0..3000),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 1usize..=8,
        descending in any::<bool>(),
        begin in 0u32..2,
        width in 1u32..3,
    ) {
        let shards = shards_of(&data, &cuts, world);
        check_model(&shards, &options(descending, None))?;
        check_model(&shards, &options(descending, Some(begin..begin + width)))?;
    }

    #[test]
    fn floats_with_nan_and_signed_zeros(
        data in proptest::collection::vec(special_f32(), 0..2000),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 1usize..=8,
        descending in any::<bool>(),
    ) {
        check_model(&shards_of(&data, &cuts, world), &options(descending, None))?;
    }

    #[test]
    fn signed_and_wide_keys(
        data in proptest::collection::vec(any::<i64>(), 0..2000),
        small in proptest::collection::vec(any::<i8>(), 0..2000),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 1usize..=8,
    ) {
        check_model(&shards_of(&data, &cuts, world), &options(false, None))?;
        check_model(&shards_of(&small, &cuts, world), &options(true, None))?;
    }

    #[test]
    fn pairs_are_stable_across_ranks(
        data in proptest::collection::vec(0u32..6, 0..2500),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 1usize..=8,
        descending in any::<bool>(),
    ) {
        let keys = shards_of(&data, &cuts, world);
        // Each value is the key's global position.
        let index: Vec<usize> = (0..data.len()).collect();
        let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
        let mut values = Vec::new();
        let mut start = 0;
        for len in lens {
            values.push(index[start..start + len].to_vec());
            start += len;
        }
        let opts = options(descending, None);
        let expected = sort::cpu::argsort(&data, descending, &(0..32));
        let (k, v) = model_pairs(&keys, &values, &opts).expect("the model runs");
        prop_assert_eq!(v.concat(), expected.clone());
        prop_assert_eq!(k.concat(), expected.iter().map(|&i| data[i]).collect::<Vec<_>>());
        for (method, run_order) in [
            (SampleSortMethod::SortFirst, RunOrder::Resort),
            (SampleSortMethod::PartitionFirst, RunOrder::Merge),
        ] {
            let policy = SampleSortPolicy {
                method,
                run_order,
                ..Default::default()
            };
            let (_, v) = model_pairs_with(&keys, &values, &opts, &policy).expect("the model runs");
            prop_assert_eq!(v.concat(), expected.clone());
        }
    }

    #[test]
    fn partition_buckets_follow_the_tuple_order(
        values in prop::collection::vec(0u64..6, 1..60),
        picks in prop::collection::vec((0usize..4, 0u64..6, 0usize..60), 0..7),
        rank in 0usize..4,
    ) {
        // Splitters as (value, rank, position) tuples, sorted, some missing
        // at the end; a key's bucket is how many come at or before it.
        let mut splitters: Vec<Splitter> = picks
            .iter()
            .map(|&(r, value, position)| Splitter { value, rank: r, position })
            .collect();
        splitters.sort_unstable();
        let mut listed: Vec<Option<Splitter>> = splitters.iter().copied().map(Some).collect();
        listed.push(None);
        let work = bucket_work(rank, &listed);
        for (i, &value) in values.iter().enumerate() {
            let me = Splitter { value, rank, position: i };
            let expected = splitters.iter().filter(|s| **s <= me).count();
            prop_assert_eq!(bucket_of(value, i, &work), expected, "key {} at {}", value, i);
        }
    }

    #[test]
    fn merge_rounds_tile_the_runs_and_end_in_one(
        runs in proptest::collection::vec(0usize..40, 1..10),
    ) {
        let total: usize = runs.iter().sum();
        let mut lens = runs.clone();
        let mut rounds = 0;
        while lens.len() > 1 {
            let round = merge_round(&lens);
            prop_assert_eq!(round.len(), lens.len().div_ceil(2));
            let mut offset = 0;
            for (step, pair) in round.iter().zip(lens.chunks(2)) {
                prop_assert_eq!(step.offset, offset);
                prop_assert_eq!(step.left, pair[0]);
                prop_assert_eq!(step.right, pair.get(1).copied().unwrap_or(0));
                offset += step.left + step.right;
            }
            prop_assert_eq!(offset, total);
            lens = round.iter().map(|s| s.left + s.right).collect();
            rounds += 1;
        }
        prop_assert_eq!(rounds, runs.len().next_power_of_two().trailing_zeros());
    }

    #[test]
    fn splitters_are_sorted_and_bounds_monotone(
        data in proptest::collection::vec(0u32..50, 0..2000),
        cuts in proptest::collection::vec(any::<usize>(), 7),
        world in 2usize..=8,
    ) {
        let mut shards = shards_of(&data, &cuts, world);
        for shard in &mut shards {
            shard.sort_unstable();
        }
        let lengths: Vec<usize> = shards.iter().map(Vec::len).collect();
        let count = samples_per_rank(world);
        let samples: Vec<Vec<u64>> = shards
            .iter()
            .map(|s| sample_positions(s.len(), count).into_iter().map(|p| s[p] as u64).collect())
            .collect();
        let splitters = choose_splitters(&samples, &lengths);
        prop_assert_eq!(splitters.len(), world - 1);
        // Present splitters first, in tuple order; absent ones last.
        let present: Vec<Splitter> = splitters.iter().flatten().copied().collect();
        prop_assert!(splitters[..present.len()].iter().all(Option::is_some));
        prop_assert!(present.windows(2).all(|w| w[0] <= w[1]));
        if !data.is_empty() {
            prop_assert!(!present.is_empty(), "a non-empty input has a splitter");
        }
        for (rank, shard) in shards.iter().enumerate() {
            let values: Vec<u64> = shard.iter().map(|&k| k as u64).collect();
            let bounds = bucket_bounds(&values, rank, &splitters);
            prop_assert!(bounds.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(bounds.iter().all(|&b| b <= shard.len()));
            // Every key below its bound is before the splitter in tuple order.
            for (b, s) in bounds.iter().zip(&splitters) {
                if let Some(s) = s {
                    for (i, &v) in values.iter().enumerate() {
                        let before = (v, rank, i) < (s.value, s.rank, s.position);
                        prop_assert_eq!(before, i < *b);
                    }
                }
            }
        }
    }
}

#[test]
fn skewed_inputs_on_every_world() {
    let n = 5000usize;
    let inputs: Vec<(&str, Vec<u32>)> = vec![
        ("all equal", vec![7; n]),
        ("two values", (0..n as u32).map(|i| i % 2).collect()),
        ("sorted", (0..n as u32).collect()),
        ("reversed", (0..n as u32).rev().collect()),
        ("sawtooth", (0..n as u32).map(|i| i % 64).collect()),
    ];
    for world in 1..=8 {
        for (what, data) in &inputs {
            // Even blocks, one empty shard, everything on the last rank.
            let even = shards_of(
                data,
                &dist::layout::offsets(&dist::layout::even_lengths(n, world)).0[1..],
                world,
            );
            let mut one_empty = even.clone();
            if world > 1 {
                let moved = std::mem::take(&mut one_empty[0]);
                one_empty[1].splice(0..0, moved);
            }
            let mut last_only = vec![Vec::new(); world];
            last_only[world - 1] = data.clone();
            for (layout, shards) in [
                ("even", &even),
                ("one empty", &one_empty),
                ("last only", &last_only),
            ] {
                for descending in [false, true] {
                    let result = check_model(shards, &options(descending, None));
                    assert!(
                        result.is_ok(),
                        "{what}, {layout}, world {world}: {result:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn all_equal_keys_spread_evenly() {
    // The (key, rank, position) order splits a run of one key: no rank
    // gets much more than its share.
    let world = 4;
    let shards = vec![vec![3u64; 4000]; world];
    let sorted = model(&shards, &Order::Ascending.into()).expect("the model runs");
    for shard in &sorted {
        assert!(
            (3900..=4100).contains(&shard.len()),
            "{:?}",
            sorted.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
}

#[test]
fn empty_inputs_give_empty_shards() {
    for world in 1..=8 {
        let sorted =
            model(&vec![Vec::<f64>::new(); world], &Order::Ascending.into()).expect("runs");
        assert_eq!(sorted, vec![Vec::<f64>::new(); world]);
    }
}

#[test]
fn runs_received_follow_the_plan() {
    // Rank 0 keeps 1 and sends 2 to rank 1; rank 1 sends 2 to rank 0.
    let (plan, lens) = exchange_plan(&[3, 2], &[vec![1], vec![2]]).unwrap();
    assert_eq!(lens, vec![3, 2]);
    assert_eq!(run_lengths(&plan, 2, 0), vec![1, 2]);
    assert_eq!(run_lengths(&plan, 2, 1), vec![2, 0]);
    assert_eq!(
        merge_round(&[1, 2]),
        vec![MergeStep {
            offset: 0,
            left: 1,
            right: 2
        }]
    );
}

#[test]
fn search_work_encodes_each_splitter() {
    let s = |rank, position| {
        Some(Splitter {
            value: 9,
            rank,
            position,
        })
    };
    let work = search_work(2, 40, &[s(0, 1), s(2, 17), s(3, 0), None]);
    assert_eq!(work, vec![9, 9, 9, 0, SEARCH_LOWER, 17, SEARCH_UPPER, 40]);
}

#[test]
fn bad_bounds_and_arguments_are_errors() {
    // Decreasing bounds, a bound past the shard, the wrong count.
    assert!(exchange_plan(&[4, 4], &[vec![3], vec![5]]).is_err());
    assert!(exchange_plan(&[4, 4, 4], &[vec![3, 1], vec![0, 0], vec![4, 4]]).is_err());
    assert!(exchange_plan(&[4, 4], &[vec![], vec![1]]).is_err());
    assert!(exchange_plan(&[4], &[]).is_err());
    // The model's own checks.
    assert!(model::<u32>(&[], &Order::Ascending.into()).is_err());
    assert!(model_pairs(&[vec![1u32, 2]], &[vec![1u8]], &Order::Ascending.into()).is_err());
    assert!(model(&[vec![1u16]], &SortOptions::default().with_bits(3..3)).is_err());
    // validate: the bit range and the sample arithmetic.
    assert!(validate::<f64>(8, &[1 << 20; 8], &SortOptions::default()).is_ok());
    assert!(validate::<i32>(2, &[1], &SortOptions::default().with_bits(0..33)).is_err());
    assert!(validate::<u64>(2, &[usize::MAX / 64], &SortOptions::default()).is_err());
}

#[test]
fn sample_sort_kernels_compile_for_sm90_for_every_key_type() {
    let modules = dist::sort::kernel_catalog();
    assert_eq!(modules.len(), 10, "one module per key type");
    let names: Vec<String> = modules.iter().map(|m| m.name().to_string()).collect();
    assert!(
        dist::kernel_catalog().iter().any(|m| m.name() == names[0]),
        "in the crate's catalog"
    );
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let failures = parprims_testkit::testing::compile_failures(&modules, &["sm_90"]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// How far partition first's largest bucket lies above n/world for `n`
/// keys in even shards, with `per_rank` samples per rank: the device
/// path's sample positions, splitters and bucket rule (the buckets the
/// GPU makes, as `partition_first::model_pairs` predicts them).
fn partition_first_excess(keys: &[u64], world: usize, per_rank: usize) -> f64 {
    let m = keys.len() / world;
    let lengths = vec![m; world];
    let positions: Vec<Vec<usize>> = (0..world)
        .map(|r| jittered_sample_positions(m, per_rank, r))
        .collect();
    let samples: Vec<Vec<u64>> = (0..world)
        .map(|r| positions[r].iter().map(|&p| keys[r * m + p]).collect())
        .collect();
    let splitters = choose_splitters_at(&samples, &positions, &lengths);
    let mut sizes = vec![0usize; world];
    for r in 0..world {
        let work = bucket_work(r, &splitters);
        for i in 0..m {
            sizes[bucket_of(keys[r * m + i], i, &work)] += 1;
        }
    }
    *sizes.iter().max().unwrap() as f64 / m as f64 - 1.0
}

#[test]
fn partition_first_buckets_are_near_even() {
    let n = 1u64 << 20;
    let weyl: Vec<u64> = (0..n)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32)
        .collect();
    let hashed: Vec<u64> = (0..n)
        .map(|i| {
            let x = (i ^ 0x1234_5678).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (x ^ (x >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb) >> 32
        })
        .collect();
    for world in [2usize, 4, 8] {
        for (what, keys) in [("Weyl sequence", &weyl), ("hashed", &hashed)] {
            let now = partition_first_excess(keys, world, partition_first::samples_per_rank(world));
            let fewer = partition_first_excess(keys, world, samples_per_rank(world));
            println!("{what}, {world} ranks: largest bucket {now:+.3} (with the sort-first sample count {fewer:+.3})");
            assert!(
                now <= 0.05,
                "{what}, {world} ranks: the largest bucket is {now:+.3} over n/world"
            );
        }
    }
}

/// The receive buffers sort first and partition first reserve before the
/// buckets are known hold every bucket of even shards: sort first's by
/// the regular sampling bound (for every shard length, up to 256 ranks)
/// and on the host model's buckets, partition first's (whose sampling
/// peer scatter shares) on the model's buckets of four kinds of keys.
#[test]
fn buckets_of_even_shards_fit_the_reserve() {
    for world in [2usize, 3, 4, 8, 64, 256] {
        let s = samples_per_rank(world);
        for m in [0usize, 1, 100, 4097, 1 << 20, 1 << 30, (1 << 31) + 12345] {
            let slack = world * m.div_ceil(s);
            assert!(
                m + 3 * slack + world <= reserve_capacity(m),
                "{world} ranks of {m} keys: the bound {} passes the reserve {}",
                m + 3 * slack + world,
                reserve_capacity(m)
            );
        }
    }
    let n = 1usize << 18;
    let kinds: [(&str, Vec<u32>); 4] = [
        (
            "Weyl sequence",
            (0..n as u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32)
                .collect(),
        ),
        ("sorted", (0..n as u32).collect()),
        ("reversed", (0..n as u32).rev().collect()),
        (
            "four distinct keys",
            (0..n as u32).map(|i| (i * 7) % 4).collect(),
        ),
    ];
    let policy = |method| SampleSortPolicy {
        method,
        ..Default::default()
    };
    for world in [2usize, 4, 8] {
        let m = n / world;
        for (what, keys) in &kinds {
            let shards: Vec<Vec<u32>> = keys.chunks(m).map(<[u32]>::to_vec).collect();
            let units: Vec<Vec<()>> = shards.iter().map(|k| vec![(); k.len()]).collect();
            for method in [
                SampleSortMethod::SortFirst,
                SampleSortMethod::PartitionFirst,
            ] {
                let (buckets, _) =
                    model_pairs_with(&shards, &units, &Order::Ascending.into(), &policy(method))
                        .expect("the model runs");
                let largest = buckets.iter().map(Vec::len).max().unwrap_or(0);
                assert!(
                    largest <= reserve_capacity(m),
                    "{what}, {world} ranks, {method:?}: a bucket of {largest} passes the reserve {}",
                    reserve_capacity(m)
                );
            }
        }
    }
}

proptest! {
    #[test]
    fn chunk_plans_fill_every_slot_once(
        shape in (1usize..5, 1usize..5).prop_flat_map(|(world, chunks)| {
            prop::collection::vec(
                prop::collection::vec(0usize..6, world * chunks),
                world,
            )
        }),
    ) {
        // Rank r's buckets have sizes shape[r]; chunks = buckets / world.
        let world = shape.len();
        let chunks = shape[0].len() / world;
        let lengths: Vec<usize> = shape.iter().map(|s| s.iter().sum()).collect();
        let bounds: Vec<Vec<usize>> = shape
            .iter()
            .map(|sizes| {
                sizes[..sizes.len() - 1]
                    .iter()
                    .scan(0, |end, &s| {
                        *end += s;
                        Some(*end)
                    })
                    .collect()
            })
            .collect();
        let (plans, new_lengths) = chunk_plans(&lengths, &bounds, chunks).expect("a layout");
        prop_assert_eq!(plans.len(), chunks);
        for plan in &plans {
            let order: Vec<(usize, usize)> =
                plan.moves.iter().map(|m| (m.from_rank, m.to_rank)).collect();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(order, sorted, "one move per pair of ranks, in order");
        }
        let mut read: Vec<Vec<u8>> = lengths.iter().map(|&l| vec![0; l]).collect();
        let mut written: Vec<Vec<u8>> = new_lengths.iter().map(|&l| vec![0; l]).collect();
        for (q, &len) in new_lengths.iter().enumerate() {
            // The chunks tile the new shard in order, chunk j holding
            // bucket q·chunks + j of every rank.
            let mut end = 0;
            for (j, plan) in plans.iter().enumerate() {
                prop_assert_eq!(plan.ranges[q].start, end);
                end = plan.ranges[q].end;
                let expected: usize = shape.iter().map(|s| s[q * chunks + j]).sum();
                prop_assert_eq!(plan.ranges[q].len(), expected);
            }
            prop_assert_eq!(end, len);
        }
        for plan in &plans {
            for m in &plan.moves {
                prop_assert!(m.len > 0);
                let range = &plan.ranges[m.to_rank];
                prop_assert!(range.start <= m.to_offset && m.to_offset + m.len <= range.end);
                for i in 0..m.len {
                    read[m.from_rank][m.from_offset + i] += 1;
                    written[m.to_rank][m.to_offset + i] += 1;
                }
            }
        }
        prop_assert!(read.iter().flatten().all(|&c| c == 1), "every key sent once");
        prop_assert!(written.iter().flatten().all(|&c| c == 1), "every slot written once");
    }
}

proptest! {
    #[test]
    fn peer_scatter_destinations_deliver_every_key_once(
        lengths in proptest::collection::vec(0usize..300, 2..=8),
        seeds in proptest::collection::vec(any::<u64>(), 64),
        with_values in any::<bool>(),
    ) {
        // Bucket bounds of every rank (non-decreasing, within its shard),
        // the exchange plan, then each rank's split destinations with
        // receive buffers at made-up addresses: every destination is a
        // valid split table, each sorted position of each rank lands in
        // exactly one receive slot, and every receive slot is written once
        // (values alongside, at their own width).
        let world = lengths.len();
        let bounds: Vec<Vec<usize>> = lengths
            .iter()
            .enumerate()
            .map(|(r, &len)| {
                let mut b: Vec<usize> = (0..world - 1)
                    .map(|t| (seeds[(r * 8 + t) % seeds.len()] % (len as u64 + 1)) as usize)
                    .collect();
                b.sort_unstable();
                b
            })
            .collect();
        let (plan, new_lengths) = exchange_plan(&lengths, &bounds).expect("bounds are a layout");
        let base = |t: usize| ((t as u64) + 1) << 40;
        let value_base = |t: usize| ((t as u64) + 9) << 40;
        let (key_bytes, value_bytes) = (4usize, if with_values { 8usize } else { 0 });
        let mut written: Vec<Vec<u32>> = new_lengths.iter().map(|&l| vec![0; l]).collect();
        for rank in 0..world {
            let d = peer_scatter::destinations(
                &plan, rank, world, &bounds[rank], base, value_base, key_bytes, value_bytes,
            );
            prop_assert_eq!(d.len(), world);
            prop_assert!(sort::split::validate_destinations(lengths[rank], &d, with_values).is_ok());
            for p in 0..lengths[rank] {
                let j = sort::split::destination_of(&d, p);
                prop_assert!(d[j].keys != 0, "position {} of rank {} has no address", p, rank);
                let t = (d[j].keys >> 40) as usize - 1;
                let slot = ((d[j].keys - base(t)) as usize) / key_bytes + (p - d[j].start);
                prop_assert!(slot < new_lengths[t]);
                written[t][slot] += 1;
                if with_values {
                    let value_slot = ((d[j].values - value_base(t)) as usize) / value_bytes + (p - d[j].start);
                    prop_assert_eq!(value_slot, slot);
                }
            }
        }
        prop_assert!(written.iter().flatten().all(|&c| c == 1), "every receive slot written once");
    }
}

#[test]
fn bad_chunk_plans_are_errors() {
    // No chunk, the wrong bound count, a bound past the shard, decreasing bounds.
    assert!(chunk_plans(&[4, 4], &[vec![1, 2, 3], vec![1, 2, 3]], 2).is_ok());
    assert!(chunk_plans(&[4, 4], &[vec![], vec![]], 0).is_err());
    assert!(chunk_plans(&[4, 4], &[vec![1], vec![1]], 2).is_err());
    assert!(chunk_plans(&[4, 4], &[vec![1, 2, 5], vec![1, 2, 3]], 2).is_err());
    assert!(chunk_plans(&[4, 4], &[vec![2, 1, 3], vec![1, 2, 3]], 2).is_err());
    assert!(chunk_plans(&[4], &[], 1).is_err());
}
