//! Every distributed operation against the single-GPU result on device 0
//! (bit for bit for integers, within a rounding bound for floats) and the
//! CPU reference, on even blocks and on the caller's own layouts.
//!
//! - `one_rank_*`: a group of one rank (device 0), `#[ignore = "needs a
//!   CUDA GPU"]`: every code path, the NCCL calls included, but no exchange
//!   between GPUs.
//! - `all_gpus_*`: every visible GPU, `#[ignore = "needs 2+ CUDA GPUs"]`;
//!   with fewer than two devices they print why and return.
//! - `one_gpu_*`: a single-GPU call a rank makes that a one-rank group
//!   never reaches (device 0, no NCCL).
//!
//! Both need libnccl (`dist::Error::NoNccl` otherwise, which fails the test
//! with the reason).

mod common;

use common::{group_of, layouts, reference_gpu, several_gpus, shard, SIZES};
use compact::Predicate;
use dist::{layout, Group, Placement, Replicated, Sharded};
use gpu_core::{BitXor, CustomOp, DeviceBuffer, Gpu, Max, Min, Sum};
use parprims_testkit::rng::{random_flags, random_vec};
use scan::ScanKind;

/// Every local rank's copy of `replicated` equals `expected`.
fn assert_every_copy<T: gpu_core::DeviceType + PartialEq + std::fmt::Debug>(
    group: &Group,
    replicated: &Replicated<T>,
    expected: &[T],
) {
    for i in 0..group.local_count() {
        let copy = replicated
            .copy(i)
            .unwrap()
            .to_host(group.gpu(i).unwrap())
            .unwrap();
        assert_eq!(copy, expected, "rank {i}'s copy");
    }
}

fn close(actual: f64, expected: f64, n: usize, what: &str) {
    let tolerance = 1e-5 * (n.max(1) as f64).sqrt() * expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} vs {expected} (n = {n})"
    );
}

fn check_reduce(group: &Group, gpu: &Gpu, n: usize, lens: &[usize], seed: u64) {
    let data: Vec<i32> = random_vec(n, seed, -1000.0, 1000.0);
    let x = shard(group, &data, lens);
    let local = DeviceBuffer::from_host(gpu, &data).unwrap();
    let single = |op_name: &str| -> i32 {
        match op_name {
            "sum" => reduce::reduce(gpu, local.view(), &Sum, Default::default()).unwrap(),
            "max" => reduce::reduce(gpu, local.view(), &Max, Default::default()).unwrap(),
            "min" => reduce::reduce(gpu, local.view(), &Min, Default::default()).unwrap(),
            _ => reduce::reduce(gpu, local.view(), &BitXor, Default::default()).unwrap(),
        }
    };
    assert_eq!(
        dist::sum(group, &x).unwrap(),
        single("sum"),
        "sum n={n} {lens:?}"
    );
    assert_eq!(
        dist::reduce(group, &x, &Max).unwrap(),
        single("max"),
        "max n={n}"
    );
    assert_eq!(
        dist::reduce(group, &x, &Min).unwrap(),
        single("min"),
        "min n={n}"
    );
    assert_eq!(
        dist::reduce(group, &x, &BitXor).unwrap(),
        single("xor"),
        "xor n={n}"
    );
    // Associative, not commutative: the rank order must be kept.
    let last = CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .unwrap();
    let expected = data.iter().fold(0, |a, &b| if b != 0 { b } else { a });
    assert_eq!(
        dist::reduce(group, &x, &last).unwrap(),
        expected,
        "last non-zero n={n}"
    );
    // The replicated form: the same value on every local rank.
    let everywhere = dist::reduce_replicated(group, &x, &Sum).unwrap();
    assert_every_copy(group, &everywhere, &[single("sum")]);
    // u64 and f64 sums, i16 (no NCCL arithmetic: gathered and folded).
    let wide: Vec<u64> = random_vec(n, seed + 1, 0.0, 1e12);
    let xw = shard(group, &wide, lens);
    assert_eq!(
        dist::sum(group, &xw).unwrap(),
        wide.iter().fold(0u64, |a, &b| a.wrapping_add(b))
    );
    let narrow: Vec<i16> = random_vec(n, seed + 2, -300.0, 300.0);
    let xn = shard(group, &narrow, lens);
    let ln = DeviceBuffer::from_host(gpu, &narrow).unwrap();
    assert_eq!(
        dist::sum(group, &xn).unwrap(),
        reduce::sum(gpu, ln.view()).unwrap(),
        "i16 sum"
    );
    let floats: Vec<f64> = random_vec(n, seed + 3, -1.0, 1.0);
    let xf = shard(group, &floats, lens);
    close(
        dist::sum(group, &xf).unwrap(),
        floats.iter().sum(),
        n,
        "f64 sum",
    );
}

/// The same kind with an initial value that is not Max's identity.
fn kind_for_max(kind: ScanKind<i32>) -> ScanKind<i32> {
    match kind {
        ScanKind::Inclusive => kind,
        ScanKind::Exclusive { initial } => ScanKind::Exclusive {
            initial: initial.wrapping_mul(1000),
        },
        ScanKind::InclusiveFrom { initial } => ScanKind::InclusiveFrom {
            initial: initial.wrapping_mul(1000),
        },
    }
}

fn check_scan(group: &Group, gpu: &Gpu, n: usize, lens: &[usize], seed: u64) {
    let data: Vec<i32> = random_vec(n, seed, -1_000_000.0, 1_000_000.0);
    let x = shard(group, &data, lens);
    let local = DeviceBuffer::from_host(gpu, &data).unwrap();
    for kind in [
        ScanKind::Inclusive,
        ScanKind::Exclusive { initial: 0 },
        ScanKind::Exclusive { initial: -77 },
        ScanKind::InclusiveFrom { initial: -77 },
    ] {
        let expected = scan::scan(gpu, local.view(), &Sum, kind, &Default::default())
            .unwrap()
            .to_host(gpu)
            .unwrap();
        let mut y = dist::scan(group, &x, &Sum, kind).unwrap();
        assert_eq!(y.lens(), x.lens(), "the output keeps the layout");
        assert_eq!(
            y.gather_to_host(group).unwrap(),
            expected,
            "i32 {kind:?} n={n} {lens:?}"
        );
        dist::scan_into_reduce_first(group, &x, &mut y, &Sum, kind).unwrap();
        assert_eq!(
            y.gather_to_host(group).unwrap(),
            expected,
            "reduce first: i32 {kind:?} n={n} {lens:?}"
        );
        let mut z = dist::scan(group, &x, &Max, kind_for_max(kind)).unwrap();
        dist::scan_into_reduce_first(group, &x, &mut z, &Max, kind_for_max(kind)).unwrap();
        assert_eq!(
            z.gather_to_host(group).unwrap(),
            scan::cpu::scan(&data, &Max, kind_for_max(kind)),
            "reduce first: max {kind:?} n={n} {lens:?}"
        );
        assert_eq!(
            y.gather_to_host(group).unwrap(),
            expected,
            "i32 {kind:?} n={n} {lens:?}"
        );
    }
    // Max (a different identity), and the deferred form applied by hand.
    let expected = scan::cpu::inclusive(&data, &Max);
    assert_eq!(
        dist::scan(group, &x, &Max, ScanKind::Inclusive)
            .unwrap()
            .gather_to_host(group)
            .unwrap(),
        expected
    );
    let mut y = dist::scan(group, &x, &Sum, ScanKind::Inclusive).unwrap();
    let prefixes = dist::scan_local_into(group, &x, &mut y, &Sum, ScanKind::Inclusive).unwrap();
    let (starts, _) = layout::offsets(lens);
    for (i, rank) in group.local_ranks().into_iter().enumerate() {
        let prefix = prefixes
            .copy(i)
            .unwrap()
            .to_host(group.gpu(i).unwrap())
            .unwrap()[0];
        let expected_prefix = data[..starts[rank]]
            .iter()
            .fold(0i32, |a, &b| a.wrapping_add(b));
        assert_eq!(prefix, expected_prefix, "rank {rank}'s prefix");
    }
    dist::apply_prefixes(group, &prefixes, &mut y, &Sum).unwrap();
    assert_eq!(
        y.gather_to_host(group).unwrap(),
        scan::cpu::inclusive(&data, &Sum)
    );
    // u64 exact, f32 within rounding.
    let wide: Vec<u64> = random_vec(n, seed + 1, 0.0, 1e15);
    let xw = shard(group, &wide, lens);
    let mut got = dist::scan(group, &xw, &Sum, ScanKind::Exclusive { initial: 5 }).unwrap();
    assert_eq!(
        got.gather_to_host(group).unwrap(),
        scan::cpu::scan(&wide, &Sum, ScanKind::Exclusive { initial: 5 })
    );
    dist::scan_into_reduce_first(group, &xw, &mut got, &Sum, ScanKind::Inclusive).unwrap();
    assert_eq!(
        got.gather_to_host(group).unwrap(),
        scan::cpu::inclusive(&wide, &Sum),
        "reduce first u64"
    );
    dist::scan_into(
        group,
        &xw,
        &mut got,
        &Sum,
        ScanKind::Exclusive { initial: 5 },
    )
    .unwrap();
    assert_eq!(
        got.gather_to_host(group).unwrap(),
        scan::cpu::scan(&wide, &Sum, ScanKind::Exclusive { initial: 5 })
    );
    let floats: Vec<f32> = random_vec(n, seed + 2, 0.0, 1.0);
    let xf = shard(group, &floats, lens);
    let got = dist::scan(group, &xf, &Sum, ScanKind::Inclusive)
        .unwrap()
        .gather_to_host(group)
        .unwrap();
    let mut running = 0f64;
    for (i, (&g, &v)) in got.iter().zip(&floats).enumerate() {
        running += v as f64;
        close(g as f64, running, i + 1, "f32 inclusive");
    }
}

fn check_compact(group: &Group, gpu: &Gpu, n: usize, lens: &[usize], seed: u64) {
    let data: Vec<i32> = random_vec(n, seed, -100.0, 100.0);
    let x = shard(group, &data, lens);
    let local = DeviceBuffer::from_host(gpu, &data).unwrap();
    let positive = Predicate::Gt(0);
    let single = compact::select_if(
        gpu,
        local.view(),
        &positive,
        compact::CompactAlgorithm::default(),
    )
    .unwrap();
    let expected = single
        .items
        .slice(0..single.count)
        .unwrap()
        .to_host(gpu)
        .unwrap();
    assert_eq!(expected, compact::cpu::select_if(&data, &positive));
    let (starts, _) = layout::offsets(lens);
    let kept = dist::select_if(group, &x, &positive, Placement::AsKept).unwrap();
    assert_eq!(
        kept.gather_to_host(group).unwrap(),
        expected,
        "as kept n={n} {lens:?}"
    );
    for (i, rank) in group.local_ranks().into_iter().enumerate() {
        let own = &data[starts[rank]..starts[rank] + lens[rank]];
        assert_eq!(
            kept.lens()[i],
            compact::cpu::count_if(own, &positive),
            "rank {rank}'s count"
        );
    }
    let even = dist::select_if(group, &x, &positive, Placement::Even).unwrap();
    assert_eq!(
        even.gather_to_host(group).unwrap(),
        expected,
        "even n={n} {lens:?}"
    );
    let target = layout::even_lengths(expected.len(), group.world());
    for (i, rank) in group.local_ranks().into_iter().enumerate() {
        assert_eq!(even.lens()[i], target[rank], "rank {rank}'s even share");
    }
    // Flags, 8-byte items, rebalanced.
    let wide: Vec<u64> = random_vec(n, seed + 1, 0.0, 1e18);
    let flags = random_flags(n, seed + 2, 0.3);
    let xw = shard(group, &wide, lens);
    let f = shard(group, &flags, lens);
    let got = dist::select_flagged(group, &xw, &f, Placement::Even).unwrap();
    assert_eq!(
        got.gather_to_host(group).unwrap(),
        compact::cpu::select_flagged(&wide, &flags).unwrap()
    );
}

fn check_histogram(group: &Group, gpu: &Gpu, n: usize, lens: &[usize], seed: u64) {
    let data: Vec<f32> = random_vec(n, seed, -0.5, 10.5);
    let x = shard(group, &data, lens);
    let local = DeviceBuffer::from_host(gpu, &data).unwrap();
    let expected = reduce::histogram::histogram_even::<f32, u32>(
        gpu,
        local.view(),
        37,
        0.0,
        10.0,
        reduce::histogram::HistogramAlgorithm::Auto,
    )
    .unwrap()
    .to_host(gpu)
    .unwrap();
    let counts = dist::histogram_even::<f32, u32>(group, &x, 37, 0.0, 10.0).unwrap();
    assert_eq!(
        counts.to_host(group).unwrap(),
        expected,
        "histogram n={n} {lens:?}"
    );
    assert_every_copy(group, &counts, &expected);
    let ints: Vec<u8> = random_vec(n, seed + 1, 0.0, 255.0);
    let xi = shard(group, &ints, lens);
    let got = dist::histogram_even::<u8, u64>(group, &xi, 256, 0, 255).unwrap();
    assert_eq!(
        got.to_host(group).unwrap(),
        reduce::histogram::cpu::histogram_even::<u8, u64>(&ints, 256, 0, 255).unwrap()
    );
}

fn check_every_operation(group: &Group) {
    let gpu = reference_gpu();
    for (k, &n) in SIZES.iter().enumerate() {
        for (l, lens) in layouts(n, group.world()).into_iter().enumerate() {
            let seed = 1000 * k as u64 + 10 * l as u64;
            check_reduce(group, &gpu, n, &lens, seed);
            check_scan(group, &gpu, n, &lens, seed);
            check_compact(group, &gpu, n, &lens, seed);
            check_histogram(group, &gpu, n, &lens, seed);
        }
    }
}

fn check_arguments(group: &Group) {
    let x = Sharded::scatter_from_host(group, &[1i32, 2, 3]).unwrap();
    // A different layout for the output is refused before anything runs.
    let mut wrong = Sharded::scatter_from_host(group, &[0i32; 4]).unwrap();
    let err = dist::scan_into(group, &x, &mut wrong, &Sum, ScanKind::Inclusive).unwrap_err();
    assert!(
        matches!(
            err,
            dist::Error::Gpu(gpu_core::Error::LengthMismatch { .. })
        ),
        "{err}"
    );
    // Too many shards for the group.
    let gpu = group.gpu(0).unwrap();
    let shards = (0..group.local_count() + 1)
        .map(|_| DeviceBuffer::from_host(gpu, &[1i32]).unwrap())
        .collect();
    assert!(Sharded::from_shards(group, shards).is_err());
    // Narrow types are not scanned across ranks.
    let bytes = Sharded::scatter_from_host(group, &[1u8, 2]).unwrap();
    assert!(matches!(
        dist::scan(group, &bytes, &Sum, ScanKind::Inclusive),
        Err(dist::Error::Gpu(gpu_core::Error::Unsupported(_)))
    ));
    // Flags in another layout.
    let flags = Sharded::scatter_from_host(group, &[1u8; 4]).unwrap();
    assert!(dist::select_flagged(group, &x, &flags, Placement::AsKept).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_every_operation_matches_one_gpu() {
    let group = group_of(&[0]);
    assert_eq!((group.world(), group.local_ranks()), (1, vec![0]));
    check_every_operation(&group);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_arguments_are_checked() {
    check_arguments(&group_of(&[0]));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_from_unique_id() {
    let id = dist::unique_id().expect("NCCL");
    let group = Group::from_unique_id(&id, 0, 1, 0).expect("a one-rank communicator");
    let data: Vec<u32> = (0..5000).collect();
    let x = Sharded::scatter_from_host(&group, &data).unwrap();
    let y = dist::scan(&group, &x, &Sum, ScanKind::Inclusive).unwrap();
    assert_eq!(
        y.gather_to_host(&group).unwrap(),
        scan::cpu::inclusive(&data, &Sum)
    );
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_every_operation_matches_one_gpu() {
    let Some(count) = several_gpus() else { return };
    let group = Group::all().expect("a group of every GPU");
    assert_eq!(group.world(), count);
    check_every_operation(&group);
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_pairs_and_reversed_order() {
    let Some(count) = several_gpus() else { return };
    // Rank order need not be device order.
    let reversed: Vec<usize> = (0..count).rev().collect();
    let group = group_of(&reversed);
    let gpu = reference_gpu();
    for (k, &n) in [0usize, 3, 100_003].iter().enumerate() {
        for lens in layouts(n, count) {
            check_scan(&group, &gpu, n, &lens, 7 + k as u64);
            check_compact(&group, &gpu, n, &lens, 9 + k as u64);
        }
    }
    check_arguments(&group);
    if count > 2 {
        let pair = group_of(&[0, count - 1]);
        check_reduce(&pair, &gpu, 4097, &[4000, 97], 3);
    }
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn all_gpus_one_rank_per_thread_through_a_unique_id() {
    let Some(count) = several_gpus() else { return };
    let id = dist::unique_id().expect("NCCL");
    let n = 1_000_003usize;
    let data: Vec<i32> = random_vec(n, 42, -1e9, 1e9);
    let expected_scan = scan::cpu::inclusive(&data, &Sum);
    let expected_sum = data.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    let threads: Vec<_> = (0..count)
        .map(|rank| {
            let data = data.clone();
            std::thread::spawn(move || {
                let group = Group::from_unique_id(&id, rank, count, rank).expect("join");
                assert_eq!((group.world(), group.local_ranks()), (count, vec![rank]));
                // Every process holds the whole input and takes its block.
                let x = Sharded::scatter_from_host(&group, &data).unwrap();
                let total = dist::sum(&group, &x).unwrap();
                let y = dist::scan(&group, &x, &Sum, ScanKind::Inclusive).unwrap();
                let kept = dist::select_if(&group, &x, &Predicate::Gt(0), Placement::Even).unwrap();
                let counts =
                    dist::histogram_even::<i32, u64>(&group, &x, 10, -1_000_000_000, 1_000_000_000)
                        .unwrap();
                let mine = y.shard(0).unwrap().to_host(group.gpu(0).unwrap()).unwrap();
                // Not every rank is in this thread: the whole array is not here.
                assert!(y.gather_to_host(&group).is_err());
                (
                    rank,
                    total,
                    mine,
                    kept.lens()[0],
                    counts.to_host(&group).unwrap(),
                )
            })
        })
        .collect();
    let blocks = layout::even_blocks(n, count);
    let positive = compact::cpu::count_if(&data, &Predicate::Gt(0));
    let shares = layout::even_lengths(positive, count);
    let expected_counts = reduce::histogram::cpu::histogram_even::<i32, u64>(
        &data,
        10,
        -1_000_000_000,
        1_000_000_000,
    )
    .unwrap();
    for thread in threads {
        let (rank, total, mine, kept, counts) = thread.join().expect("rank thread");
        assert_eq!(total, expected_sum);
        assert_eq!(
            mine,
            expected_scan[blocks[rank].clone()],
            "rank {rank}'s block of the scan"
        );
        assert_eq!(kept, shares[rank]);
        assert_eq!(counts, expected_counts);
    }
}

/// The scans the reduce-first form runs, alone on device 0: the data cut
/// into shards (each its own allocation, as a rank's is), each whole shard
/// scanned with the default options and `reduce_first_local_kind` of its
/// prefix (from the CPU's shard totals), so ranks after the first run the
/// seeded inclusive scan on 16-byte-aligned views. Against the CPU scan of
/// the whole array, every kind, for 4- and 8-byte types: integers exact,
/// f32 on small integers (exact in any order), and a non-commutative
/// operator.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_gpu_reduce_first_local_scans_are_exact() {
    fn check<T: gpu_core::Element, O: gpu_core::Operator<T>>(
        gpu: &Gpu,
        data: &[T],
        lens: &[usize],
        op: &O,
        initial: T,
    ) {
        let (starts, _) = layout::offsets(lens);
        for kind in [
            ScanKind::Inclusive,
            ScanKind::InclusiveFrom { initial },
            ScanKind::Exclusive { initial },
        ] {
            let shards: Vec<&[T]> = starts
                .iter()
                .zip(lens)
                .map(|(&s, &l)| &data[s..s + l])
                .collect();
            let totals: Vec<T> = shards
                .iter()
                .map(|shard| shard.iter().fold(op.identity(), |a, &b| op.combine(a, b)))
                .collect();
            let prefixes = dist::scan::reduce_first_prefixes(&totals, op, kind);
            let mut got = Vec::with_capacity(data.len());
            for (shard, prefix) in shards.iter().zip(prefixes) {
                if shard.is_empty() {
                    continue;
                }
                let x = DeviceBuffer::from_host(gpu, shard).unwrap();
                let mut out = DeviceBuffer::<T>::filled(gpu, shard.len(), T::highest()).unwrap();
                let local = dist::scan::reduce_first_local_kind(kind, prefix);
                scan::scan_into(
                    gpu,
                    x.view(),
                    out.view_mut(),
                    op,
                    local,
                    &Default::default(),
                )
                .unwrap();
                got.extend(out.to_host(gpu).unwrap());
            }
            assert_eq!(
                got,
                scan::cpu::scan(data, op, kind),
                "{} {kind:?} {lens:?}",
                T::SUFFIX
            );
        }
    }
    let gpu = reference_gpu();
    // Associative, not commutative (0 is its identity).
    let last = CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
        if b != 0 {
            b
        } else {
            a
        }
    })
    .expect("a valid custom operator");
    for (i, n) in [1usize, 3, 1000, 8193, (1 << 20) + 3, (1 << 22) + 1]
        .into_iter()
        .enumerate()
    {
        let seed = 900 + i as u64;
        for lens in layouts(n, 3) {
            let small: Vec<i32> = random_vec(n, seed, -1000.0, 1000.0);
            check(&gpu, &small, &lens, &Sum, -7);
            check(&gpu, &small, &lens, &last, 9);
            let wide: Vec<u64> = random_vec(n, seed + 1, 0.0, 1e15);
            check(&gpu, &wide, &lens, &Sum, 5);
            let floats: Vec<f32> = small.iter().map(|&v| (v % 8) as f32).collect();
            check(&gpu, &floats, &lens, &Sum, 0.5);
            let signed: Vec<i64> = random_vec(n, seed + 2, -1e12, 1e12);
            check(&gpu, &signed, &lens, &Max, i64::MIN + 1);
        }
    }
}
