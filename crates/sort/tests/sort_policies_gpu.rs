//! GPU tests of the Onesweep sort under tuning policies
//! (`sort::policy::OnesweepPolicy`): the default and non-default shapes
//! (384 × 16 by match-any, 512 × 12 by ballots, 256 × 24 by match-any),
//! every way of tile counts (`TileCounts`), both tile orders
//! (`TileOrder`) and both ways of the pass's digits (`PassDigits`), keys
//! and pairs, u32 and
//! u64 keys, both orders, lengths at each policy's
//! tile ± 1 and several tiles, bit for bit against `sort::cpu`; one input
//! past a portion of a non-default policy (checked in O(n) through an
//! index payload); and policies refused with a typed error, nothing
//! written.
//!
//! Run on a GPU machine: `cargo test -p parprims-sort --test
//! sort_policies_gpu -- --include-ignored` (`policy_past_one_portion`
//! needs about 3 GB).

use gpu_core::{DeviceBuffer, DeviceType, Error, Gpu};
use parprims_testkit::rng::SplitMix64;
use sort::policy::{OnesweepPolicy, PassDigits, RankMethod, TileCounts, TileOrder};
use sort::{Order, SortKey, SortOptions};

mod sort_support;
use sort_support::{check_keys_under, check_pairs_under, gpu, seed};

/// The policies every case runs under: the default and three other
/// shapes, tile counts taken each way, tiles from the counter as well as
/// in block order (the default), digits packed as well as recomputed
/// (the default), and every rank method (each policy fits 8-byte keys
/// with 4-byte values).
fn policies() -> Vec<OnesweepPolicy> {
    vec![
        OnesweepPolicy::DEFAULT,
        OnesweepPolicy::new(384, 16, RankMethod::MatchAny).unwrap(),
        OnesweepPolicy::new(512, 12, RankMethod::Ballots).unwrap(),
        OnesweepPolicy::new(256, 24, RankMethod::MatchAny).unwrap(),
        OnesweepPolicy::new(512, 16, RankMethod::Ballots)
            .unwrap()
            .with_tile_counts(TileCounts::ByWarp),
        OnesweepPolicy::new(384, 16, RankMethod::MatchAny)
            .unwrap()
            .with_tile_counts(TileCounts::ByWarp),
        OnesweepPolicy::new(512, 12, RankMethod::Ballots)
            .unwrap()
            .with_tile_counts(TileCounts::FromRanks),
        OnesweepPolicy::new(512, 16, RankMethod::Ballots)
            .unwrap()
            .with_tile_order(TileOrder::Counter),
        OnesweepPolicy::new(384, 16, RankMethod::MatchAny)
            .unwrap()
            .with_tile_counts(TileCounts::ByWarp)
            .with_tile_order(TileOrder::Counter),
        OnesweepPolicy::new(512, 16, RankMethod::Ballots)
            .unwrap()
            .with_pass_digits(PassDigits::Packed),
        OnesweepPolicy::new(384, 16, RankMethod::MatchAny)
            .unwrap()
            .with_tile_counts(TileCounts::ByWarp)
            .with_pass_digits(PassDigits::Packed),
        OnesweepPolicy::new(512, 12, RankMethod::Ballots)
            .unwrap()
            .with_tile_counts(TileCounts::FromRanks)
            .with_tile_order(TileOrder::Counter)
            .with_pass_digits(PassDigits::Packed),
        OnesweepPolicy::new(512, 12, RankMethod::AtomicOr).unwrap(),
        OnesweepPolicy::new(384, 16, RankMethod::AtomicOr)
            .unwrap()
            .with_tile_counts(TileCounts::ByWarp)
            .with_tile_order(TileOrder::Counter),
        OnesweepPolicy::new(512, 12, RankMethod::AtomicOr)
            .unwrap()
            .with_tile_counts(TileCounts::FromRanks)
            .with_pass_digits(PassDigits::Packed),
    ]
}

/// Lengths around multiples of the policy's tile just past the one-launch
/// sorts (which no policy tunes: up to 2^16 keys on sm_90 and newer), many
/// tiles with a partial last one.
fn lengths(policy: &OnesweepPolicy) -> Vec<usize> {
    let tile = policy.tile() as usize;
    let base = sort::modules::CLUSTER_SORT_MAX_KEYS.next_multiple_of(tile);
    vec![
        base + tile - 1,
        base + tile,
        base + tile + 1,
        base + 2 * tile + 1,
        base + 3 * tile - 1,
        base + 17 * tile + 5,
        (1 << 18) + 3,
    ]
}

/// Keys with every bit pattern (`few`: only 5 distinct values, so ties
/// test stability).
fn keys_of<K: SortKey>(n: usize, few: bool, rng: &mut SplitMix64) -> Vec<K> {
    let base: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
    (0..n)
        .map(|_| {
            let bits = if few {
                base[rng.below(5) as usize]
            } else {
                rng.next_u64()
            };
            bytemuck::pod_read_unaligned(&bits.to_le_bytes()[..K::BYTES])
        })
        .collect()
}

fn check_keys<K: SortKey>(
    gpu: &Gpu,
    keys: &[K],
    options: SortOptions,
    policy: &OnesweepPolicy,
) -> Result<(), String> {
    check_keys_under(gpu, keys, options, Some(policy))
}

/// Pairs with the input index as the value.
fn check_pairs<K: SortKey>(
    gpu: &Gpu,
    keys: &[K],
    options: SortOptions,
    policy: &OnesweepPolicy,
) -> Result<(), String> {
    let values: Vec<u32> = (0..keys.len() as u32).collect();
    check_pairs_under(gpu, keys, &values, options, Some(policy))
}

fn every_policy<K: SortKey>(gpu: &Gpu, rng: &mut SplitMix64, failures: &mut Vec<String>) {
    for policy in policies() {
        for n in lengths(&policy) {
            for few in [false, true] {
                let keys = keys_of::<K>(n, few, rng);
                for order in [Order::Ascending, Order::Descending] {
                    for result in [
                        check_keys(gpu, &keys, order.into(), &policy),
                        check_pairs(gpu, &keys, order.into(), &policy),
                    ] {
                        if let Err(e) = result {
                            failures.push(e);
                        }
                    }
                }
            }
            // Two passes over a narrow range (12 bits: the second pass has
            // a 4-bit digit).
            let keys = keys_of::<K>(n, false, rng);
            let narrow = SortOptions::default().with_bits(0..12);
            for result in [
                check_keys(gpu, &keys, narrow.clone(), &policy),
                check_pairs(gpu, &keys, narrow, &policy),
            ] {
                if let Err(e) = result {
                    failures.push(e);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn keys_and_pairs_under_every_policy() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    every_policy::<u32>(&gpu, &mut rng, &mut failures);
    every_policy::<u64>(&gpu, &mut rng, &mut failures);
    every_policy::<f32>(&gpu, &mut rng, &mut failures);
    every_policy::<i64>(&gpu, &mut rng, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Checks in O(n) that (`keys_out`, `index_out`) is the stable ascending
/// sort of `keys` with the input index as payload: the index is a
/// permutation, each key is the input's key at its index, keys never
/// decrease, and equal keys keep increasing indices.
fn check_by_index(keys: &[u32], keys_out: &[u32], index_out: &[u32]) -> Result<(), String> {
    let mut seen = vec![false; keys.len()];
    for (i, (&k, &at)) in keys_out.iter().zip(index_out).enumerate() {
        let at = at as usize;
        if at >= keys.len() || seen[at] {
            return Err(format!("position {i}: index {at} out of range or repeated"));
        }
        seen[at] = true;
        if keys[at] != k {
            return Err(format!(
                "position {i}: key {k}, the input's is {}",
                keys[at]
            ));
        }
        if i > 0 {
            let (pk, pat) = (keys_out[i - 1], index_out[i - 1]);
            if pk > k || (pk == k && pat as usize > at) {
                return Err(format!("position {i}: out of order or unstable"));
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU (about 3 GB)"]
fn policy_past_one_portion() {
    // 384 × 16 keys per tile: portions of 43 690 tiles (268 431 360 keys),
    // not a power of two; the input spans two portions and four passes.
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let policy = OnesweepPolicy::new(384, 16, RankMethod::MatchAny).unwrap();
    assert_eq!(policy.portion_keys(), 43_690 * 6144);
    let n = policy.portion_keys() as usize + policy.tile() as usize + 17;
    let keys: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32 >> 4).collect();
    let index: Vec<u32> = (0..n as u32).collect();
    let k = DeviceBuffer::from_host(&gpu, &keys).unwrap();
    let v = DeviceBuffer::from_host(&gpu, &index).unwrap();
    drop(index);
    let mut ko = DeviceBuffer::<u32>::poisoned(&gpu, n).unwrap();
    let mut vo = DeviceBuffer::<u32>::poisoned(&gpu, n).unwrap();
    sort::sort_pairs_with_policy(
        &gpu,
        k.view(),
        v.view(),
        ko.view_mut(),
        vo.view_mut(),
        Order::Ascending,
        &policy,
    )
    .unwrap();
    check_by_index(
        &keys,
        &ko.to_host(&gpu).unwrap(),
        &vo.to_host(&gpu).unwrap(),
    )
    .unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn policies_that_do_not_fit_are_refused_and_write_nothing() {
    let gpu = gpu();
    let n = 100_000;
    let keys = DeviceBuffer::from_host(&gpu, &vec![7u64; n]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &vec![1u64; n]).unwrap();
    let mut ko = DeviceBuffer::<u64>::poisoned(&gpu, n).unwrap();
    let mut vo = DeviceBuffer::<u64>::poisoned(&gpu, n).unwrap();
    // 512 × 32 u64 keys: 128 KiB of exchange, past the budget.
    let wide = OnesweepPolicy::new(512, 32, RankMethod::Ballots).unwrap();
    let result =
        sort::sort_keys_with_policy(&gpu, keys.view(), ko.view_mut(), Order::Ascending, &wide);
    assert!(
        matches!(result, Err(Error::InvalidArgument { .. })),
        "{result:?}"
    );
    let result = sort::sort_pairs_with_policy(
        &gpu,
        keys.view(),
        values.view(),
        ko.view_mut(),
        vo.view_mut(),
        Order::Ascending,
        &wide,
    );
    assert!(
        matches!(result, Err(Error::InvalidArgument { .. })),
        "{result:?}"
    );
    assert!(ko
        .to_host(&gpu)
        .unwrap()
        .iter()
        .all(|&k| k == u64::poison()));
    assert!(vo
        .to_host(&gpu)
        .unwrap()
        .iter()
        .all(|&v| v == u64::poison()));
    // The same policy fits u32 keys alone, and sorts them.
    let small: Vec<u32> = (0..n as u32).rev().collect();
    let input = DeviceBuffer::from_host(&gpu, &small).unwrap();
    let mut out = DeviceBuffer::<u32>::poisoned(&gpu, n).unwrap();
    sort::sort_keys_with_policy(&gpu, input.view(), out.view_mut(), Order::Ascending, &wide)
        .unwrap();
    assert_eq!(
        out.to_host(&gpu).unwrap(),
        (0..n as u32).collect::<Vec<_>>()
    );
}
