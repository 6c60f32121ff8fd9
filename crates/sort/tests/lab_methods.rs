//! The lab's sorts (odd–even transposition, bitonic, merge path, split
//! radix): every kernel compiles for sm_80 and sm_90 (NVRTC, no GPU), and on a GPU
//! every method sorts every key type, in both orders, with and without
//! values, exactly as the CPU reference does (keys compared as bits,
//! stability checked through an index payload).

use std::ops::Range;

use gpu_core::kernel::{compile_cubin, cubin_defines};
use gpu_core::{DeviceBuffer, Gpu};
use proptest::prelude::*;
use sort::cpu;
use sort::key::{PayloadViewMut, SortKey};
use sort::{Order, SortAlgorithm};

const LAB: [SortAlgorithm; 4] = [
    SortAlgorithm::OddEvenTransposition,
    SortAlgorithm::Bitonic,
    SortAlgorithm::MergePath,
    SortAlgorithm::SplitRadix,
];

#[test]
fn every_lab_kernel_compiles_for_sm80_and_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules: Vec<_> = sort::kernel_catalog()
        .into_iter()
        .filter(|m| m.name().starts_with("sort_lab_"))
        .collect();
    assert_eq!(modules.len(), 5, "the shared module and one per method");
    let mut failures = Vec::new();
    for arch in ["sm_80", "sm_90"] {
        for module in &modules {
            match compile_cubin(module, arch) {
                Ok(cubin) => {
                    for entry in module.entries() {
                        if !cubin_defines(&cubin, entry) {
                            failures
                                .push(format!("{entry} missing from {} ({arch})", module.name()));
                        }
                    }
                }
                Err(e) => failures.push(format!("{} ({arch}): {e}", module.name())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lab_modules_have_distinct_names_and_entries() {
    let modules: Vec<_> = sort::kernel_catalog()
        .into_iter()
        .filter(|m| m.name().starts_with("sort_lab_"))
        .collect();
    let mut entries: Vec<&String> = modules.iter().flat_map(|m| m.entries()).collect();
    let total = entries.len();
    entries.sort();
    entries.dedup();
    assert_eq!(entries.len(), total, "an entry point defined twice");
    // 10 prepares + 4 gathers + 4 copies; 2 image types × (2 + 3 + 2 + 2).
    assert_eq!(total, 18 + 2 * 9);
}

/// Lengths around every edge of the lab's kernels: one-block odd–even
/// (2048), bitonic and merge tiles (2048) and their multiples, warps and
/// blocks, powers of two and 2^k·5/8 − 1.
const EDGE_LENGTHS: [usize; 22] = [
    0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097, 5119,
    6144, 10_239, 20_000,
];

/// Runs `algorithm` on `keys` (and an index payload: the input position,
/// so the payload checks stability) and compares keys bit for bit and the
/// payload with the CPU's stable sort.
fn check<K: SortKey>(
    gpu: &Gpu,
    algorithm: SortAlgorithm,
    keys: &[K],
    order: Order,
    bits: Range<u32>,
    with_values: bool,
) -> Result<(), String> {
    let descending = order.is_descending();
    let mut device_keys = DeviceBuffer::from_host(gpu, keys).map_err(|e| e.to_string())?;
    let positions: Vec<u32> = (0..keys.len() as u32).collect();
    let mut device_values = DeviceBuffer::from_host(gpu, &positions).map_err(|e| e.to_string())?;
    let values = if with_values {
        Some(PayloadViewMut::new(device_values.view_mut()).map_err(|e| e.to_string())?)
    } else {
        None
    };
    sort::sort_in_place_with(
        gpu,
        device_keys.view_mut(),
        values,
        order,
        bits.clone(),
        algorithm,
    )
    .map_err(|e| format!("{algorithm:?}: {e}"))?;
    let got = device_keys.to_host(gpu).map_err(|e| e.to_string())?;
    let (want_keys, want_positions) = cpu::sort_pairs(keys, &positions, descending, &bits);
    let bits_of = |v: &[K]| -> Vec<u8> { bytemuck::cast_slice(v).to_vec() };
    if bits_of(&got) != bits_of(&want_keys) {
        let first = got
            .iter()
            .zip(&want_keys)
            .position(|(a, b)| bytemuck::bytes_of(a) != bytemuck::bytes_of(b));
        return Err(format!(
            "{algorithm:?} {} n = {} {order:?} bits {bits:?}: keys differ first at {first:?}",
            K::SUFFIX,
            keys.len()
        ));
    }
    let got_positions = device_values.to_host(gpu).map_err(|e| e.to_string())?;
    let expected_positions = if with_values {
        want_positions
    } else {
        positions
    };
    if got_positions != expected_positions {
        return Err(format!(
            "{algorithm:?} {} n = {} {order:?} bits {bits:?}: payload (stability) differs",
            K::SUFFIX,
            keys.len()
        ));
    }
    Ok(())
}

fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// A deterministic pseudo-random generator for the fixed cases.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Inputs of one shape: random, few distinct, all equal, sorted, reversed.
fn shapes<K: SortKey>(n: usize, from_bits: impl Fn(u64) -> K) -> Vec<(&'static str, Vec<K>)> {
    let mut next = xorshift(n as u64 * 7919 + 1);
    let random: Vec<K> = (0..n).map(|_| from_bits(next())).collect();
    let few: Vec<K> = (0..n).map(|_| from_bits(next() % 5)).collect();
    let equal = vec![from_bits(42); n];
    let mut sorted = random.clone();
    sorted.sort_by_key(|k| k.to_radix());
    let reversed: Vec<K> = sorted.iter().rev().copied().collect();
    vec![
        ("random", random),
        ("few distinct", few),
        ("all equal", equal),
        ("sorted", sorted),
        ("reversed", reversed),
    ]
}

fn every_case<K: SortKey>(from_bits: impl Fn(u64) -> K + Copy) {
    let gpu = gpu();
    let full = cpu::full_bits::<K>();
    let mut failures = Vec::new();
    for algorithm in LAB {
        for n in EDGE_LENGTHS {
            // Odd–even launches once per phase past 2048 keys: 2049 … 4097
            // cover that path; `larger_inputs_span_many_tiles_and_merge_passes`
            // runs it once more at 9000.
            if algorithm == SortAlgorithm::OddEvenTransposition && n > 4097 {
                continue;
            }
            for (shape, keys) in shapes(n, from_bits) {
                for order in [Order::Ascending, Order::Descending] {
                    for with_values in [false, true] {
                        if let Err(e) =
                            check(&gpu, algorithm, &keys, order, full.clone(), with_values)
                        {
                            failures.push(format!("{shape}: {e}"));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn u32_keys_every_method_length_shape_order_and_payload() {
    every_case::<u32>(|b| b as u32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn i32_keys_every_method_length_shape_order_and_payload() {
    every_case::<i32>(|b| b as i32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn u64_keys_every_method_length_shape_order_and_payload() {
    every_case::<u64>(|b| b.rotate_left(17));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn u8_keys_every_method_length_shape_order_and_payload() {
    every_case::<u8>(|b| b as u8);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn i16_and_i64_keys_every_method_length_shape_order_and_payload() {
    every_case::<i16>(|b| b as i16);
    every_case::<i64>(|b| b as i64);
}

/// Float keys from raw bits, with NaNs of both signs and payloads, ±0 and
/// ±∞ mixed in.
fn special_f32(b: u64) -> f32 {
    match b % 11 {
        0 => f32::NAN,
        1 => -f32::NAN,
        2 => f32::from_bits(0x7fc0_1234),
        3 => -0.0,
        4 => 0.0,
        5 => f32::INFINITY,
        6 => f32::NEG_INFINITY,
        _ => f32::from_bits((b >> 8) as u32),
    }
}

fn special_f64(b: u64) -> f64 {
    match b % 11 {
        0 => f64::NAN,
        1 => -f64::NAN,
        2 => f64::from_bits(0xfff8_0000_dead_beef),
        3 => -0.0,
        4 => 0.0,
        5 => f64::INFINITY,
        6 => f64::NEG_INFINITY,
        _ => f64::from_bits(b.rotate_left(29)),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_keys_with_nan_signed_zero_and_infinities() {
    every_case::<f32>(special_f32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f64_keys_with_nan_signed_zero_and_infinities() {
    every_case::<f64>(special_f64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_bit_ranges_order_by_those_bits_only() {
    let gpu = gpu();
    let mut failures = Vec::new();
    let mut next = xorshift(99);
    let keys32: Vec<u32> = (0..5000).map(|_| next() as u32).collect();
    let keys64: Vec<i64> = (0..5000).map(|_| next() as i64).collect();
    let keys8: Vec<u8> = (0..3000).map(|_| next() as u8).collect();
    let floats: Vec<f32> = (0..3000).map(|_| special_f32(next())).collect();
    for algorithm in LAB {
        for order in [Order::Ascending, Order::Descending] {
            for bits in [0..1, 3..4, 4..12, 8..32, 31..32, 0..31] {
                failures.extend(check(&gpu, algorithm, &keys32, order, bits.clone(), true).err());
                failures.extend(check(&gpu, algorithm, &floats, order, bits, true).err());
            }
            for bits in [0..8, 5..7, 7..8] {
                failures.extend(check(&gpu, algorithm, &keys8, order, bits, true).err());
            }
            for bits in [0..64, 0..33, 32..64, 60..64, 63..64, 20..44] {
                failures.extend(check(&gpu, algorithm, &keys64, order, bits, true).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn payloads_of_every_width_move_with_their_keys() {
    let gpu = gpu();
    let mut next = xorshift(5);
    let n = 4099;
    let keys: Vec<u16> = (0..n).map(|_| (next() % 300) as u16).collect();
    let (want_keys, order) = {
        let order = cpu::argsort(&keys, false, &(0..16));
        (order.iter().map(|&i| keys[i]).collect::<Vec<_>>(), order)
    };
    for algorithm in LAB {
        let v8: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let v16: Vec<i16> = (0..n).map(|i| i as i16 * 3).collect();
        let v64: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        macro_rules! run {
            ($values:expr) => {{
                let mut k = DeviceBuffer::from_host(&gpu, &keys).unwrap();
                let mut v = DeviceBuffer::from_host(&gpu, &$values).unwrap();
                let payload = PayloadViewMut::new(v.view_mut()).unwrap();
                sort::sort_in_place_with(
                    &gpu,
                    k.view_mut(),
                    Some(payload),
                    Order::Ascending,
                    0..16,
                    algorithm,
                )
                .unwrap();
                assert_eq!(k.to_host(&gpu).unwrap(), want_keys, "{algorithm:?}");
                let want: Vec<_> = order.iter().map(|&i| $values[i]).collect();
                assert_eq!(v.to_host(&gpu).unwrap(), want, "{algorithm:?}");
            }};
        }
        run!(v8);
        run!(v16);
        run!(v64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn larger_inputs_span_many_tiles_and_merge_passes() {
    let gpu = gpu();
    let mut failures = Vec::new();
    for algorithm in [
        SortAlgorithm::Bitonic,
        SortAlgorithm::MergePath,
        SortAlgorithm::SplitRadix,
    ] {
        for n in [(1 << 16) + 1, 5 * (1 << 17) / 8 - 1, (1 << 20) - 3] {
            let mut next = xorshift(n as u64);
            let keys: Vec<i32> = (0..n).map(|_| (next() % 100_000) as i32 - 50_000).collect();
            for order in [Order::Ascending, Order::Descending] {
                failures.extend(check(&gpu, algorithm, &keys, order, 0..32, true).err());
            }
        }
    }
    // Odd–even past its one-block size: one launch per phase.
    let mut next = xorshift(3);
    let keys: Vec<f32> = (0..9000).map(|_| special_f32(next())).collect();
    failures.extend(
        check(
            &gpu,
            SortAlgorithm::OddEvenTransposition,
            &keys,
            Order::Descending,
            0..32,
            true,
        )
        .err(),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn any_keys_any_method_match_the_cpu(
        keys in prop::collection::vec(any::<i32>(), 0..6000),
        method in 0usize..4,
        descending in any::<bool>(),
        begin in 0u32..32,
        width in 1u32..33,
    ) {
        let gpu = gpu();
        let end = (begin + width).min(32);
        let order = if descending { Order::Descending } else { Order::Ascending };
        let result = check(&gpu, LAB[method], &keys, order, begin..end, true);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}
