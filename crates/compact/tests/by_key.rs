//! Keyed run primitives: reduce by key, run-length encoding, unique and
//! unique by key.
//!
//! CPU property tests of the references (`compact::cpu_by_key`), argument
//! checks, and GPU property tests against the references: keys built from
//! run lengths (all length 1, one run of n, short, long, runs that cross
//! tiles, exactly a tile), n = 0 and 1, built-in and a non-commutative
//! associative custom operator, the `_into` forms (count on the device, the
//! outputs past the count untouched), 8-byte values (`i64 u64 f64`, their
//! own tile of 256 × 8 and tile state) with the same patterns, and bad
//! arguments (typed error, nothing written).
//!
//! GPU tests: `cargo test -p parprims-compact --test by_key -- --include-ignored`.

mod support;

use compact::cpu_by_key as cpu;
use gpu_core::{CustomOp, DeviceBuffer, DeviceType, Element, Error, Gpu, Max, Min, Operator, Sum};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use support::{all_poison, bits};

/// Tile of the by-key kernel for 4-byte keys and values (256 × 16).
const TILE: usize = 4096;
/// Tile of the by-key kernel for 8-byte values, or 8-byte keys with values
/// (256 × 8).
const WIDE_TILE: usize = 2048;

/// Composition of affine maps x → a·x + b (mod 2^16), (a, b) packed as
/// (a << 16) | b: associative, not commutative.
fn affine16() -> CustomOp<u32> {
    CustomOp::<u32>::new(
        "affine16",
        "((((a >> 16) * (b >> 16)) & 0xffffu) << 16) | (((b >> 16) * (a & 0xffffu) + (b & 0xffffu)) & 0xffffu)",
        0x1_0000,
        affine16_cpu,
    )
    .unwrap()
}

fn affine16_cpu(a: u32, b: u32) -> u32 {
    let hi = ((a >> 16).wrapping_mul(b >> 16) & 0xffff) << 16;
    hi | ((b >> 16).wrapping_mul(a & 0xffff).wrapping_add(b & 0xffff) & 0xffff)
}

/// The same composition on 64-bit words: x → a·x + b (mod 2^32), (a, b)
/// packed as (a << 32) | b.
fn affine32() -> CustomOp<u64> {
    CustomOp::<u64>::new(
        "affine32",
        "((((a >> 32) * (b >> 32)) & 0xffffffffull) << 32) | (((b >> 32) * (a & 0xffffffffull) + (b & 0xffffffffull)) & 0xffffffffull)",
        1 << 32,
        affine32_cpu,
    )
    .unwrap()
}

fn affine32_cpu(a: u64, b: u64) -> u64 {
    let hi = ((a >> 32).wrapping_mul(b >> 32) & 0xffff_ffff) << 32;
    hi | ((b >> 32)
        .wrapping_mul(a & 0xffff_ffff)
        .wrapping_add(b & 0xffff_ffff)
        & 0xffff_ffff)
}

/// Keys from run lengths: consecutive runs get different keys (drawn from
/// `distinct` values, so equal keys recur in non-adjacent runs).
fn keys_from_runs(lengths: &[usize], distinct: u64, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut keys = Vec::new();
    let mut previous = u64::MAX;
    for &len in lengths {
        let mut key = rng.below(distinct.max(2));
        if key == previous {
            key = (key + 1) % distinct.max(2);
        }
        previous = key;
        keys.extend(std::iter::repeat_n(key, len));
    }
    keys
}

/// Run lengths summing to n: every run length in [1, max_run].
fn random_runs(n: usize, max_run: usize, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed);
    let mut lengths = Vec::new();
    let mut left = n;
    while left > 0 {
        let len = (1 + rng.below(max_run as u64) as usize).min(left);
        lengths.push(len);
        left -= len;
    }
    lengths
}

/// The run-length patterns every GPU test runs for n items, around the
/// 4-byte tile.
fn patterns(n: usize, seed: u64) -> Vec<(String, Vec<usize>)> {
    patterns_around(n, TILE, seed)
}

/// The run-length patterns for n items, with runs around `tile`.
fn patterns_around(n: usize, tile: usize, seed: u64) -> Vec<(String, Vec<usize>)> {
    let mut out = vec![
        ("all length 1".to_string(), vec![1; n]),
        ("one run".to_string(), if n > 0 { vec![n] } else { vec![] }),
        ("runs of 1..=3".to_string(), random_runs(n, 3, seed)),
        ("runs of 1..=32".to_string(), random_runs(n, 32, seed ^ 1)),
        (
            "runs of 1..=5000".to_string(),
            random_runs(n, 5000, seed ^ 2),
        ),
    ];
    // Runs of exactly a tile, and a tile ± 1: boundaries on, before and
    // after the tiles'.
    for run in [tile - 1, tile, tile + 1, 2 * tile + 3] {
        let mut lengths = vec![run; n / run];
        if !n.is_multiple_of(run) {
            lengths.push(n % run);
        }
        out.push((format!("runs of {run}"), lengths));
    }
    out
}

fn lengths() -> Vec<usize> {
    lengths_around(TILE)
}

/// The lengths a GPU test runs for a kernel tile of `tile` items.
fn lengths_around(tile: usize) -> Vec<usize> {
    let mut all = vec![
        0,
        1,
        2,
        31,
        33,
        tile - 1,
        tile,
        tile + 1,
        2 * tile + 17,
        33 * tile + 5, // past one look-back window
        (1 << 20) + 3,
    ];
    all.retain(|&n| n <= parprims_testkit::testing::scaled(usize::MAX, (1 << 17) + 1));
    all
}

fn cast_keys<K: Element>(keys: &[u64]) -> Vec<K> {
    keys.iter().map(|&k| K::from_f64(k as f64)).collect()
}

fn values_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.next_u64() as u32).collect()
}

// ---------------------------------------------------------------- CPU ----

proptest! {
    #[test]
    fn runs_cover_the_input_and_split_where_keys_change(keys in prop::collection::vec(0u8..4, 0..300)) {
        let runs = cpu::runs(&keys);
        let mut next = 0;
        for &(s, e) in &runs {
            prop_assert_eq!(s, next);
            prop_assert!(e > s);
            prop_assert!(keys[s..e].iter().all(|&k| k == keys[s]));
            if e < keys.len() {
                prop_assert_ne!(keys[e], keys[e - 1]);
            }
            next = e;
        }
        prop_assert_eq!(next, keys.len());
    }

    #[test]
    fn reduce_by_key_folds_each_run_in_order(lengths in prop::collection::vec(1usize..20, 0..40), seed in any::<u64>()) {
        let keys = keys_from_runs(&lengths, 3, seed);
        let values = values_u32(keys.len(), seed ^ 7);
        let op = affine16();
        let (unique, folds) = cpu::reduce_by_key(&keys, &values, &op).unwrap();
        prop_assert_eq!(unique.len(), lengths.len());
        let mut start = 0;
        for (r, &len) in lengths.iter().enumerate() {
            prop_assert_eq!(unique[r], keys[start]);
            let want = values[start + 1..start + len].iter().fold(values[start], |a, &b| affine16_cpu(a, b));
            prop_assert_eq!(folds[r], want);
            start += len;
        }
    }

    #[test]
    fn reduce_by_key_folds_8_byte_values_in_order(lengths in prop::collection::vec(1usize..20, 0..40), seed in any::<u64>()) {
        let keys = keys_from_runs(&lengths, 3, seed);
        let mut rng = SplitMix64::new(seed ^ 11);
        let values: Vec<u64> = (0..keys.len()).map(|_| rng.next_u64()).collect();
        let op = affine32();
        let (unique, folds) = cpu::reduce_by_key(&keys, &values, &op).unwrap();
        prop_assert_eq!(unique.len(), lengths.len());
        let signed: Vec<i64> = values.iter().map(|&v| v as i64 >> 20).collect();
        let (_, sums) = cpu::reduce_by_key(&keys, &signed, &Sum).unwrap();
        let wide: Vec<f64> = values.iter().map(|&v| (v % 1000) as f64 - 500.0).collect();
        let (_, maxima) = cpu::reduce_by_key(&keys, &wide, &Max).unwrap();
        let mut start = 0;
        for (r, &len) in lengths.iter().enumerate() {
            let run = start..start + len;
            prop_assert_eq!(unique[r], keys[start]);
            let want = values[start + 1..run.end].iter().fold(values[start], |a, &b| affine32_cpu(a, b));
            prop_assert_eq!(folds[r], want);
            prop_assert_eq!(sums[r], signed[run.clone()].iter().fold(0i64, |a, &b| a.wrapping_add(b)));
            prop_assert_eq!(maxima[r], wide[run].iter().copied().fold(f64::NEG_INFINITY, f64::max));
            start += len;
        }
    }

    #[test]
    fn run_length_counts_sum_to_n_and_rebuild_the_input(keys in prop::collection::vec(0i32..3, 0..300)) {
        let (unique, counts) = cpu::run_length_encode(&keys);
        prop_assert_eq!(counts.iter().map(|&c| c as usize).sum::<usize>(), keys.len());
        let rebuilt: Vec<i32> = unique.iter().zip(&counts).flat_map(|(&k, &c)| std::iter::repeat_n(k, c as usize)).collect();
        prop_assert_eq!(rebuilt, keys.clone());
        prop_assert_eq!(cpu::unique(&keys), unique.clone());
        // Run-length encoding is reduce by key with values 1.
        let ones = vec![1u32; keys.len()];
        prop_assert_eq!(cpu::reduce_by_key(&keys, &ones, &Sum).unwrap(), (unique, counts));
    }

    #[test]
    fn unique_by_key_keeps_each_runs_first_value(keys in prop::collection::vec(0u64..3, 0..200)) {
        let values: Vec<i64> = (0..keys.len() as i64).collect();
        let (unique, firsts) = cpu::unique_by_key(&keys, &values).unwrap();
        prop_assert_eq!(unique.clone(), cpu::unique(&keys));
        for (r, &first) in firsts.iter().enumerate() {
            let i = first as usize;
            prop_assert_eq!(keys[i], unique[r]);
            prop_assert!(i == 0 || keys[i - 1] != keys[i]);
        }
    }
}

#[test]
fn references_refuse_lengths_that_disagree() {
    assert!(matches!(
        cpu::reduce_by_key(&[1, 2], &[1u32], &Sum),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(cpu::unique_by_key(&[1, 2], &[1u32, 2, 3]).is_err());
}

#[test]
fn argument_checks_are_typed() {
    use compact::{
        validate_reduce_by_key, validate_run_length_encode, validate_unique, validate_unique_by_key,
    };
    assert!(validate_reduce_by_key::<u64, u32>(5, 5, 5, 5).is_ok());
    assert!(matches!(
        validate_reduce_by_key::<u64, u32>(5, 4, 5, 5),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        validate_reduce_by_key::<u64, u32>(5, 5, 5, 4),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        validate_reduce_by_key::<f64, u32>(5, 5, 5, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(validate_reduce_by_key::<i32, i64>(5, 5, 5, 5).is_ok());
    assert!(validate_reduce_by_key::<u64, f64>(5, 5, 5, 5).is_ok());
    assert!(matches!(
        validate_reduce_by_key::<i32, u16>(5, 5, 5, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        validate_reduce_by_key::<i32, i8>(5, 5, 5, 5),
        Err(Error::Unsupported(_))
    ));
    assert!(validate_run_length_encode::<i32>(1 << 33, 1 << 33, 1 << 33).is_ok());
    assert!(validate_run_length_encode::<i32>(5, 5, 4).is_err());
    assert!(validate_run_length_encode::<u16>(5, 5, 5).is_err());
    assert!(validate_unique::<i64>(0, 0).is_ok());
    assert!(validate_unique::<i64>(3, 2).is_err());
    assert!(validate_unique_by_key::<i32, u8>(3, 3, 3, 3).is_err());
    assert!(validate_unique_by_key::<i32, f64>(3, 3, 3, 3).is_ok());
}

// ---------------------------------------------------------------- GPU ----

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// Reduce by key on the GPU (both forms) against the reference; outputs
/// past the run count untouched.
fn check_reduce<K: Element, V: Element, O: Operator<V>>(
    gpu: &Gpu,
    keys: &[K],
    values: &[V],
    op: &O,
    ctx: &str,
) {
    let n = keys.len();
    let (want_keys, want_values) = cpu::reduce_by_key(keys, values, op).unwrap();
    let runs = want_keys.len();
    let k = DeviceBuffer::from_host(gpu, keys).unwrap();
    let v = DeviceBuffer::from_host(gpu, values).unwrap();
    // Sync form, outputs one longer than needed (poisoned).
    let mut keys_out = DeviceBuffer::<K>::poisoned(gpu, n + 1).unwrap();
    let mut values_out = DeviceBuffer::<V>::poisoned(gpu, n + 1).unwrap();
    let got = compact::reduce_by_key(
        gpu,
        k.view(),
        v.view(),
        op,
        keys_out.view_mut(),
        values_out.view_mut(),
    )
    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(got, runs, "{ctx}: runs");
    check_run_outputs(
        gpu,
        (&keys_out, &values_out),
        (&want_keys, &want_values),
        &format!("{ctx}: aggregates"),
    );
    // _into form: the count on the device.
    let mut count = DeviceBuffer::<u64>::filled(gpu, 1, 12345).unwrap();
    let mut keys_out = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
    let mut values_out = DeviceBuffer::<V>::poisoned(gpu, n).unwrap();
    compact::reduce_by_key_into(
        gpu,
        k.view(),
        v.view(),
        op,
        keys_out.view_mut(),
        values_out.view_mut(),
        count.view_mut(),
    )
    .unwrap();
    assert_eq!(
        count.to_host(gpu).unwrap(),
        [runs as u64],
        "{ctx}: count_out"
    );
    assert_eq!(
        bits(&values_out.to_host(gpu).unwrap()[..runs]),
        bits(&want_values),
        "{ctx}: aggregates (_into)"
    );
}

fn check_run_length<K: Element>(gpu: &Gpu, keys: &[K], ctx: &str) {
    let n = keys.len();
    let (want_keys, want_counts) = cpu::run_length_encode(keys);
    let runs = want_keys.len();
    let k = DeviceBuffer::from_host(gpu, keys).unwrap();
    let mut unique = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
    let mut counts = DeviceBuffer::<u32>::poisoned(gpu, n).unwrap();
    let got = compact::run_length_encode(gpu, k.view(), unique.view_mut(), counts.view_mut())
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(got, runs, "{ctx}: runs");
    assert_eq!(
        bits(&unique.to_host(gpu).unwrap()[..runs]),
        bits(&want_keys),
        "{ctx}: keys"
    );
    let host_counts = counts.to_host(gpu).unwrap();
    assert_eq!(host_counts[..runs], want_counts, "{ctx}: counts");
    assert!(
        host_counts[runs..].iter().all(|&c| c == u32::poison()),
        "{ctx}: past the runs"
    );
    let mut count = DeviceBuffer::<u64>::filled(gpu, 1, 777).unwrap();
    compact::run_length_encode_into(
        gpu,
        k.view(),
        unique.view_mut(),
        counts.view_mut(),
        count.view_mut(),
    )
    .unwrap();
    assert_eq!(
        count.to_host(gpu).unwrap(),
        [runs as u64],
        "{ctx}: count_out"
    );
}

fn check_unique<K: Element, V: Element>(gpu: &Gpu, keys: &[K], values: &[V], ctx: &str) {
    let n = keys.len();
    let want = cpu::unique(keys);
    let runs = want.len();
    let k = DeviceBuffer::from_host(gpu, keys).unwrap();
    let mut out = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
    let got =
        compact::unique(gpu, k.view(), out.view_mut()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(got, runs, "{ctx}: unique count");
    assert_eq!(
        bits(&out.to_host(gpu).unwrap()[..runs]),
        bits(&want),
        "{ctx}: unique"
    );
    let mut count = DeviceBuffer::<u64>::filled(gpu, 1, 9).unwrap();
    compact::unique_into(gpu, k.view(), out.view_mut(), count.view_mut()).unwrap();
    assert_eq!(
        count.to_host(gpu).unwrap(),
        [runs as u64],
        "{ctx}: unique count_out"
    );

    let (want_keys, want_values) = cpu::unique_by_key(keys, values).unwrap();
    let v = DeviceBuffer::from_host(gpu, values).unwrap();
    let mut keys_out = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
    let mut values_out = DeviceBuffer::<V>::poisoned(gpu, n).unwrap();
    let got = compact::unique_by_key(
        gpu,
        k.view(),
        v.view(),
        keys_out.view_mut(),
        values_out.view_mut(),
    )
    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(got, runs, "{ctx}: unique_by_key count");
    check_run_outputs(
        gpu,
        (&keys_out, &values_out),
        (&want_keys, &want_values),
        &format!("{ctx}: values"),
    );
}

/// The first `want_keys.len()` keys and values on the device match the
/// reference bit for bit, and every value slot past them still holds the
/// poison. `ctx` names the values in the messages.
fn check_run_outputs<K: Element, V: Element>(
    gpu: &Gpu,
    (keys_out, values_out): (&DeviceBuffer<K>, &DeviceBuffer<V>),
    (want_keys, want_values): (&[K], &[V]),
    ctx: &str,
) {
    let runs = want_keys.len();
    let host_keys = keys_out.to_host(gpu).unwrap();
    let host_values = values_out.to_host(gpu).unwrap();
    assert_eq!(bits(&host_keys[..runs]), bits(want_keys), "{ctx}: keys");
    assert_eq!(bits(&host_values[..runs]), bits(want_values), "{ctx}");
    assert!(
        all_poison(&host_values[runs..]),
        "{ctx}: written past the runs"
    );
}

/// Every length × run pattern × key type, each primitive.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matches_the_references_on_every_run_pattern() {
    let gpu = gpu();
    let seed = 0x5eed_b1e5u64;
    let affine = affine16();
    for n in lengths() {
        for (name, runs) in patterns(n, seed ^ n as u64) {
            let raw = keys_from_runs(&runs, 1000, seed ^ (n as u64) << 8);
            assert_eq!(raw.len(), n);
            let ctx = format!("n={n} {name}");
            let values = values_u32(n, seed ^ 3);
            // f32 values that are small integers: sums exact whatever the order.
            let small: Vec<f32> = values.iter().map(|&x| (x % 8) as f32).collect();
            let signed: Vec<i32> = values.iter().map(|&x| x as i32).collect();
            let wide: Vec<f64> = values.iter().map(|&x| x as f64 + 0.5).collect();
            let keys_i32 = cast_keys::<i32>(&raw);
            let keys_u32 = cast_keys::<u32>(&raw);
            let keys_i64: Vec<i64> = raw.iter().map(|&k| k as i64 - 500).collect();
            let keys_u64: Vec<u64> = raw.iter().map(|&k| k << 40 | 7).collect();
            check_reduce(&gpu, &keys_i32, &small, &Sum, &format!("{ctx} i32/f32 sum"));
            check_reduce(
                &gpu,
                &keys_u32,
                &values,
                &Max,
                &format!("{ctx} u32/u32 max"),
            );
            check_reduce(
                &gpu,
                &keys_i64,
                &signed,
                &Min,
                &format!("{ctx} i64/i32 min"),
            );
            check_reduce(
                &gpu,
                &keys_u64,
                &values,
                &affine,
                &format!("{ctx} u64/u32 affine"),
            );
            check_reduce(
                &gpu,
                &keys_i32,
                &values,
                &affine,
                &format!("{ctx} i32/u32 affine"),
            );
            check_run_length(&gpu, &keys_i32, &format!("{ctx} rle i32"));
            check_run_length(&gpu, &keys_u64, &format!("{ctx} rle u64"));
            check_unique(&gpu, &keys_i32, &wide, &format!("{ctx} unique i32/f64"));
            check_unique(&gpu, &keys_i64, &signed, &format!("{ctx} unique i64/i32"));
        }
    }
}

/// Reduce by key of 8-byte values (their own tile of 256 × 8 items and
/// their own tile state): every length around that tile × run pattern, 4-
/// and 8-byte keys, the built-in operators on `i64 u64 f64` and a
/// non-commutative custom one on `u64`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_reduces_8_byte_values_on_every_run_pattern() {
    let gpu = gpu();
    let seed = 0x8b17_e5e5u64;
    let affine = affine32();
    for n in lengths_around(WIDE_TILE) {
        for (name, runs) in patterns_around(n, WIDE_TILE, seed ^ n as u64) {
            let raw = keys_from_runs(&runs, 1000, seed ^ (n as u64) << 8);
            assert_eq!(raw.len(), n);
            let ctx = format!("n={n} {name}");
            let mut rng = SplitMix64::new(seed ^ 5);
            let bits64: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let signed: Vec<i64> = bits64.iter().map(|&x| x as i64).collect();
            // f64 values that are small integers: sums exact whatever the order.
            let small: Vec<f64> = bits64.iter().map(|&x| (x % 16) as f64 - 8.0).collect();
            let keys_i32 = cast_keys::<i32>(&raw);
            let keys_u64: Vec<u64> = raw.iter().map(|&k| k << 40 | 7).collect();
            check_reduce(
                &gpu,
                &keys_i32,
                &signed,
                &Sum,
                &format!("{ctx} i32/i64 sum"),
            );
            check_reduce(
                &gpu,
                &keys_u64,
                &signed,
                &Max,
                &format!("{ctx} u64/i64 max"),
            );
            check_reduce(
                &gpu,
                &keys_i32,
                &bits64,
                &Min,
                &format!("{ctx} i32/u64 min"),
            );
            check_reduce(
                &gpu,
                &keys_u64,
                &bits64,
                &affine,
                &format!("{ctx} u64/u64 affine"),
            );
            check_reduce(&gpu, &keys_i32, &small, &Sum, &format!("{ctx} i32/f64 sum"));
            check_reduce(&gpu, &keys_u64, &small, &Max, &format!("{ctx} u64/f64 max"));
        }
    }
}

/// The 4- and 8-byte value forms one after the other on one stream, and
/// repeatedly: each keeps its own tile state (a stale headed status word
/// must never read as a status of the other form's call).
#[test]
#[ignore = "needs a CUDA GPU"]
fn value_widths_alternate_on_one_stream() {
    let gpu = gpu();
    for round in 0..4u64 {
        for n in [1usize, WIDE_TILE + 1, 40 * WIDE_TILE + 3, 3 * TILE - 1] {
            let raw = keys_from_runs(&random_runs(n, 7, round), 50, round);
            let keys = cast_keys::<u32>(&raw);
            let values = values_u32(n, round ^ 9);
            let wide: Vec<u64> = values.iter().map(|&v| (v as u64) << 20 | 3).collect();
            let ctx = format!("round {round} n={n}");
            check_reduce(&gpu, &keys, &wide, &Sum, &format!("{ctx} u64 sum"));
            check_reduce(&gpu, &keys, &values, &Sum, &format!("{ctx} u32 sum"));
            check_run_length(&gpu, &keys, &format!("{ctx} rle"));
            check_unique(&gpu, &keys, &wide, &format!("{ctx} unique"));
        }
    }
}

/// Keys that differ only in high bits, and signed keys around zero: the
/// comparison is the whole key.
#[test]
#[ignore = "needs a CUDA GPU"]
fn keys_compare_every_bit() {
    let gpu = gpu();
    let keys: Vec<u64> = (0..3 * TILE as u64).map(|i| (i / 5) << 33).collect();
    check_run_length(&gpu, &keys, "high bits");
    let keys: Vec<i32> = (0..3 * TILE as i32).map(|i| (i / 7) % 3 - 1).collect();
    check_run_length(&gpu, &keys, "signed");
}

/// Repeated calls reuse the tile state (epochs), n = 0 in between.
#[test]
#[ignore = "needs a CUDA GPU"]
fn repeated_calls_and_empty_inputs() {
    let gpu = gpu();
    for round in 0..5u64 {
        for n in [0usize, 1, 5 * TILE + 1, 0] {
            let raw = keys_from_runs(&random_runs(n, 9, round), 50, round);
            check_run_length(
                &gpu,
                &cast_keys::<u32>(&raw),
                &format!("round {round} n={n}"),
            );
        }
    }
}

/// Bad arguments: typed errors, nothing written.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_write_nothing() {
    let gpu = gpu();
    let keys = DeviceBuffer::from_host(&gpu, &[1i32, 1, 2]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &[1u32, 2]).unwrap();
    let mut keys_out = DeviceBuffer::<i32>::filled(&gpu, 3, 99).unwrap();
    let mut values_out = DeviceBuffer::<u32>::filled(&gpu, 3, 99).unwrap();
    let mut count = DeviceBuffer::<u64>::filled(&gpu, 2, 99).unwrap();
    // values shorter than keys
    assert!(matches!(
        compact::reduce_by_key(
            &gpu,
            keys.view(),
            values.view(),
            &Sum,
            keys_out.view_mut(),
            values_out.view_mut()
        ),
        Err(Error::LengthMismatch { .. })
    ));
    let values = DeviceBuffer::from_host(&gpu, &[1u32, 2, 3]).unwrap();
    // count_out of two
    assert!(compact::reduce_by_key_into(
        &gpu,
        keys.view(),
        values.view(),
        &Sum,
        keys_out.view_mut(),
        values_out.view_mut(),
        count.view_mut()
    )
    .is_err());
    // outputs too short
    let mut short = DeviceBuffer::<u32>::filled(&gpu, 2, 99).unwrap();
    assert!(
        compact::run_length_encode(&gpu, keys.view(), keys_out.view_mut(), short.view_mut())
            .is_err()
    );
    let mut short_keys = DeviceBuffer::<i32>::filled(&gpu, 2, 99).unwrap();
    assert!(compact::unique(&gpu, keys.view(), short_keys.view_mut()).is_err());
    // float keys, 2-byte values
    let float_keys = DeviceBuffer::from_host(&gpu, &[1.0f32, 1.0, 2.0]).unwrap();
    let mut float_out = DeviceBuffer::<f32>::filled(&gpu, 3, 99.0).unwrap();
    assert!(matches!(
        compact::unique(&gpu, float_keys.view(), float_out.view_mut()),
        Err(Error::Unsupported(_))
    ));
    let narrow = DeviceBuffer::from_host(&gpu, &[1u16, 2, 3]).unwrap();
    let mut narrow_out = DeviceBuffer::<u16>::filled(&gpu, 3, 99).unwrap();
    assert!(matches!(
        compact::reduce_by_key(
            &gpu,
            keys.view(),
            narrow.view(),
            &Sum,
            keys_out.view_mut(),
            narrow_out.view_mut()
        ),
        Err(Error::Unsupported(_))
    ));
    // nothing written anywhere
    assert_eq!(keys_out.to_host(&gpu).unwrap(), [99, 99, 99]);
    assert_eq!(values_out.to_host(&gpu).unwrap(), [99, 99, 99]);
    assert_eq!(count.to_host(&gpu).unwrap(), [99, 99]);
    assert_eq!(short.to_host(&gpu).unwrap(), [99, 99]);
    assert_eq!(short_keys.to_host(&gpu).unwrap(), [99, 99]);
    assert_eq!(float_out.to_host(&gpu).unwrap(), [99.0, 99.0, 99.0]);
    assert_eq!(narrow_out.to_host(&gpu).unwrap(), [99, 99, 99]);
}
