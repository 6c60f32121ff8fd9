//! GPU tests of the default sort (Onesweep; the one-block path up to 8192
//! keys and, on sm_90 and newer, the one-cluster path up to 2^16), argsort, the in-place forms and top-k, against the CPU
//! references of `sort::cpu`, bit for bit (NaN payloads and the sign of
//! zero included): every key type × order × payload width (stability
//! checked through the payload), all-equal keys, sorted and reversed input,
//! few distinct values, narrow bit ranges, lengths at the edges (0, 1, the
//! one-block and one-cluster limits ± 1, the tile ± 1, 2^k·5/8 − 1), inputs of several
//! portions and past 2^31 keys, and bad arguments (typed error, nothing
//! written). Overlapping inputs and outputs cannot be built from safe views
//! (the borrow checker refuses them); the checks stand behind that.
//!
//! Run on a GPU machine: `cargo test -p parprims-sort --test sort_gpu --
//! --include-ignored` (`past_2_31_keys` and `several_portions` need about
//! 5 GB and are best run alone: `-- --ignored past_2_31 several_portions`).

use gpu_core::{DeviceBuffer, DeviceType, Error, Gpu};
use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use sort::key::PayloadViewMut;
use sort::{cpu, DoubleBuffer, Order, SortAlgorithm, SortKey, SortOptions};

mod sort_support;
use sort_support::{bits_of, check_keys_under, check_pairs_under, diff, gpu, seed};

/// The one-block limit, the one-cluster limit (sm_90 and newer) and the
/// digit pass's tile.
const SMALL: usize = 8192;
const CLUSTER: usize = 1 << 16;
const TILE: usize = 4096;

fn lengths() -> Vec<usize> {
    vec![
        0,
        1,
        2,
        31,
        33,
        1000,
        SMALL - 1,
        SMALL,
        SMALL + 1,
        3 * TILE - 1,
        3 * TILE,
        3 * TILE + 1,
        (1 << 16) * 5 / 8 - 1,
        7 * SMALL + 1,
        CLUSTER,
        CLUSTER + 1,
        (1 << 18) + 3,
        (1 << 21) * 5 / 8 - 1,
    ]
}

/// How the keys are drawn.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Random bits (floats: NaNs, infinities, −0 included).
    Random,
    /// Four distinct values.
    FewDistinct,
    /// One value.
    AllEqual,
    /// Already sorted ascending.
    Sorted,
    /// Sorted descending.
    Reversed,
}

const SHAPES: [Shape; 5] = [
    Shape::Random,
    Shape::FewDistinct,
    Shape::AllEqual,
    Shape::Sorted,
    Shape::Reversed,
];

/// `items` reinterpreted as `B`s (the same bytes).
fn pod_collect<A: bytemuck::Pod, B: bytemuck::Pod>(items: &[A]) -> Vec<B> {
    let bytes: &[u8] = bytemuck::cast_slice(items);
    let mut out = vec![B::zeroed(); bytes.len() / std::mem::size_of::<B>()];
    bytemuck::cast_slice_mut::<B, u8>(&mut out).copy_from_slice(bytes);
    out
}

fn random_keys<K: SortKey>(n: usize, rng: &mut SplitMix64) -> Vec<K> {
    let bytes: Vec<u8> = (0..n * K::BYTES).map(|_| rng.next_u64() as u8).collect();
    let mut keys: Vec<K> = pod_collect(&bytes);
    // Sprinkle the float specials (bit patterns, for every width).
    if K::IS_FLOAT && n > 8 {
        let specials: Vec<K> = if K::BYTES == 4 {
            pod_collect(&[
                0x8000_0000u32,
                0,
                0x7f80_0000,
                0xff80_0000,
                0x7fc0_0000,
                0xffc0_0001,
                0x7f80_0001,
            ])
        } else {
            pod_collect(&[
                0x8000_0000_0000_0000u64,
                0,
                0x7ff0_0000_0000_0000,
                0xfff0_0000_0000_0000,
                0x7ff8_0000_0000_0000,
                0xfff8_0000_0000_0001,
            ])
        };
        for (i, s) in specials.into_iter().enumerate() {
            let at = (rng.next_u64() as usize) % n;
            keys[at] = s;
            keys[(i * 7919) % n] = s;
        }
    }
    keys
}

fn keys_of<K: SortKey>(shape: Shape, n: usize, rng: &mut SplitMix64) -> Vec<K> {
    let mut keys = random_keys::<K>(n, rng);
    match shape {
        Shape::Random => {}
        Shape::FewDistinct => {
            let pool = random_keys::<K>(4, rng);
            for k in keys.iter_mut() {
                *k = pool[(rng.next_u64() % 4) as usize];
            }
        }
        Shape::AllEqual => {
            if let Some(&first) = keys.first() {
                keys.iter_mut().for_each(|k| *k = first);
            }
        }
        Shape::Sorted => keys = cpu::sort_keys(&keys, false, &cpu::full_bits::<K>()),
        Shape::Reversed => keys = cpu::sort_keys(&keys, true, &cpu::full_bits::<K>()),
    }
    keys
}

fn check_keys<K: SortKey>(gpu: &Gpu, keys: &[K], options: SortOptions) -> Result<(), String> {
    check_keys_under(gpu, keys, options, None)
}

fn check_pairs<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys: &[K],
    values: &[V],
    options: SortOptions,
) -> Result<(), String> {
    check_pairs_under(gpu, keys, values, options, None)
}

fn every_shape_and_length<K: SortKey>(gpu: &Gpu, rng: &mut SplitMix64, failures: &mut Vec<String>) {
    for n in lengths() {
        for shape in SHAPES {
            if n > 1 << 16 && !matches!(shape, Shape::Random | Shape::FewDistinct) {
                continue;
            }
            let keys = keys_of::<K>(shape, n, rng);
            for order in [Order::Ascending, Order::Descending] {
                if let Err(e) = check_keys(gpu, &keys, order.into()) {
                    failures.push(format!("{shape:?}: {e}"));
                }
            }
        }
    }
}

macro_rules! for_every_key {
    ($f:ident, $($arg:expr),*) => {
        $f::<u8>($($arg),*);
        $f::<u16>($($arg),*);
        $f::<u32>($($arg),*);
        $f::<u64>($($arg),*);
        $f::<i8>($($arg),*);
        $f::<i16>($($arg),*);
        $f::<i32>($($arg),*);
        $f::<i64>($($arg),*);
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
    };
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sort_keys_every_type_shape_length_and_order() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for_every_key!(every_shape_and_length, &gpu, &mut rng, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pairs with a payload that records the input index (truncated to the
/// payload's width: with few distinct keys, stability is still visible).
fn pairs_every_width<K: SortKey>(gpu: &Gpu, rng: &mut SplitMix64, failures: &mut Vec<String>) {
    for n in [
        1,
        100,
        SMALL,
        SMALL + 1,
        3 * TILE + 1,
        CLUSTER,
        CLUSTER + 1,
        (1 << 17) + 5,
    ] {
        for shape in [Shape::Random, Shape::FewDistinct, Shape::AllEqual] {
            let keys = keys_of::<K>(shape, n, rng);
            for order in [Order::Ascending, Order::Descending] {
                let o: SortOptions = order.into();
                let i8s: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let i16s: Vec<i16> = (0..n).map(|i| i as i16).collect();
                let i32s: Vec<u32> = (0..n).map(|i| i as u32).collect();
                let f64s: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
                for result in [
                    check_pairs(gpu, &keys, &i8s, o.clone()),
                    check_pairs(gpu, &keys, &i16s, o.clone()),
                    check_pairs(gpu, &keys, &i32s, o.clone()),
                    check_pairs(gpu, &keys, &f64s, o.clone()),
                ] {
                    if let Err(e) = result {
                        failures.push(format!("{shape:?}: {e}"));
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sort_pairs_every_type_and_payload_width_is_stable() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for_every_key!(pairs_every_width, &gpu, &mut rng, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_bit_ranges_order_by_those_bits_only() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for n in [1000, SMALL + 1, 5 * SMALL + 3, (1 << 17) + 3] {
        let u32s = random_keys::<u32>(n, &mut rng);
        let f32s = random_keys::<f32>(n, &mut rng);
        let i64s = random_keys::<i64>(n, &mut rng);
        let index: Vec<u32> = (0..n as u32).collect();
        for order in [Order::Ascending, Order::Descending] {
            for bits in [0..1, 3..4, 4..12, 5..13, 8..32, 31..32, 0..31, 0..24, 7..23] {
                let o = SortOptions::from(order).with_bits(bits.clone());
                failures.extend(check_keys(&gpu, &u32s, o.clone()).err());
                failures.extend(check_pairs(&gpu, &f32s, &index, o.clone()).err());
            }
            for bits in [13..47, 0..40, 56..64, 63..64] {
                let o = SortOptions::from(order).with_bits(bits);
                failures.extend(check_pairs(&gpu, &i64s, &index, o).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argsort_u32_and_u64_indices() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    for n in [0, 1, 77, SMALL + 1, CLUSTER, (1 << 18) + 1] {
        for shape in [Shape::Random, Shape::FewDistinct] {
            let keys = keys_of::<f32>(shape, n, &mut rng);
            for order in [Order::Ascending, Order::Descending] {
                let want: Vec<u64> = cpu::argsort(&keys, order.is_descending(), &(0..32))
                    .into_iter()
                    .map(|i| i as u64)
                    .collect();
                let k = DeviceBuffer::from_host(&gpu, &keys).unwrap();
                let mut i32s = DeviceBuffer::<u32>::poisoned(&gpu, n).unwrap();
                let mut i64s = DeviceBuffer::<u64>::poisoned(&gpu, n).unwrap();
                sort::argsort(&gpu, k.view(), i32s.view_mut(), order).unwrap();
                sort::argsort(&gpu, k.view(), i64s.view_mut(), order).unwrap();
                let got32: Vec<u64> = i32s
                    .to_host(&gpu)
                    .unwrap()
                    .into_iter()
                    .map(u64::from)
                    .collect();
                assert_eq!(got32, want, "u32 indices, n = {n}, {shape:?}, {order:?}");
                assert_eq!(i64s.to_host(&gpu).unwrap(), want, "u64 indices, n = {n}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn in_place_through_double_buffers() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    for n in [0, 1, 500, SMALL, SMALL + 1, CLUSTER - 3, (1 << 17) + 9] {
        // 3 passes (bits 0..24, odd) and 4 (even): the result must land in current.
        for bits in [0..24u32, 0..32] {
            for order in [Order::Ascending, Order::Descending] {
                let keys = random_keys::<i32>(n, &mut rng);
                let values: Vec<u64> = (0..n as u64).collect();
                let options = SortOptions::from(order).with_bits(bits.clone());
                let (want_k, want_v) =
                    cpu::sort_pairs(&keys, &values, order.is_descending(), &bits);

                let mut a = DeviceBuffer::from_host(&gpu, &keys).unwrap();
                let mut b = DeviceBuffer::<i32>::poisoned(&gpu, n).unwrap();
                let mut db = DoubleBuffer::new(a.view_mut(), b.view_mut()).unwrap();
                sort::sort_keys_in_place(&gpu, &mut db, options.clone()).unwrap();
                assert_eq!(db.current().to_host(&gpu).unwrap(), want_k, "keys, n = {n}");

                let mut ka = DeviceBuffer::from_host(&gpu, &keys).unwrap();
                let mut kb = DeviceBuffer::<i32>::poisoned(&gpu, n).unwrap();
                let mut va = DeviceBuffer::from_host(&gpu, &values).unwrap();
                let mut vb = DeviceBuffer::<u64>::poisoned(&gpu, n).unwrap();
                let mut dk = DoubleBuffer::new(ka.view_mut(), kb.view_mut()).unwrap();
                let mut dv = DoubleBuffer::new(va.view_mut(), vb.view_mut()).unwrap();
                sort::sort_pairs_in_place(&gpu, &mut dk, &mut dv, options.clone()).unwrap();
                assert_eq!(
                    dk.current().to_host(&gpu).unwrap(),
                    want_k,
                    "pair keys, n = {n}"
                );
                assert_eq!(
                    dv.current().to_host(&gpu).unwrap(),
                    want_v,
                    "pair values, n = {n}"
                );
                assert_eq!(dk.selector(), dv.selector());

                // The lab's entry point, the default method.
                let mut k = DeviceBuffer::from_host(&gpu, &keys).unwrap();
                let mut v = DeviceBuffer::from_host(&gpu, &values).unwrap();
                let payload = PayloadViewMut::new(v.view_mut()).unwrap();
                sort::sort_in_place_with(
                    &gpu,
                    k.view_mut(),
                    Some(payload),
                    order,
                    bits.clone(),
                    SortAlgorithm::Onesweep,
                )
                .unwrap();
                assert_eq!(k.to_host(&gpu).unwrap(), want_k, "in place, n = {n}");
                assert_eq!(v.to_host(&gpu).unwrap(), want_v, "in place values, n = {n}");
            }
        }
    }
}

fn check_top_k<K: SortKey>(gpu: &Gpu, keys: &[K], k: usize, largest: bool) -> Result<(), String> {
    let (want_v, want_i) = cpu::top_k(keys, k, largest);
    let input = DeviceBuffer::from_host(gpu, keys).unwrap();
    let (v, i) = sort::top_k(gpu, input.view(), k, largest).map_err(|e| e.to_string())?;
    let what = format!("top_k {} k = {k} largest = {largest}", K::SUFFIX);
    diff(&what, &v.to_host(gpu).unwrap(), &want_v)?;
    diff(&what, &i.to_host(gpu).unwrap(), &want_i)
}

fn top_k_cases<K: SortKey>(gpu: &Gpu, rng: &mut SplitMix64, failures: &mut Vec<String>) {
    for n in [1, 10, 5000, (1 << 18) + 7] {
        for shape in [Shape::Random, Shape::FewDistinct, Shape::AllEqual] {
            let keys = keys_of::<K>(shape, n, rng);
            // k ≤ n (k > n is refused: bad_arguments_are_typed_errors…).
            let mut ks = vec![0, 1, 5, n / 2, n - 1, n];
            ks.retain(|&k| k <= n);
            ks.sort_unstable();
            ks.dedup();
            for k in ks {
                for largest in [true, false] {
                    if let Err(e) = check_top_k(gpu, &keys, k, largest) {
                        failures.push(format!("{shape:?}: {e}"));
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn top_k_matches_the_cpu_for_every_type() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for_every_key!(top_k_cases, &gpu, &mut rng, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
#[allow(clippy::reversed_empty_ranges)] // reversed ranges are the bad input
fn bad_arguments_are_typed_errors_and_write_nothing() {
    let gpu = gpu();
    let keys = DeviceBuffer::from_host(&gpu, &[3u32, 1, 2, 0]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &[1u16, 2, 3, 4]).unwrap();
    let mut short = DeviceBuffer::<u32>::poisoned(&gpu, 3).unwrap();
    let poison3 = short.to_host(&gpu).unwrap();
    let invalid = |r: gpu_core::Result<()>| {
        matches!(
            r,
            Err(Error::InvalidArgument { .. } | Error::LengthMismatch { .. })
        )
    };
    // Lengths.
    assert!(invalid(sort::sort_keys(
        &gpu,
        keys.view(),
        short.view_mut(),
        Order::Ascending
    )));
    let mut out = DeviceBuffer::<u32>::poisoned(&gpu, 4).unwrap();
    let mut vout = DeviceBuffer::<u16>::poisoned(&gpu, 3).unwrap();
    assert!(invalid(sort::sort_pairs(
        &gpu,
        keys.view(),
        values.view(),
        out.view_mut(),
        vout.view_mut(),
        Order::Ascending
    )));
    let mut idx = DeviceBuffer::<u32>::poisoned(&gpu, 5).unwrap();
    assert!(invalid(sort::argsort(
        &gpu,
        keys.view(),
        idx.view_mut(),
        Order::Ascending
    )));
    // Bit ranges.
    for bits in [0..0, 4..2, 0..33] {
        let o = SortOptions::default().with_bits(bits);
        assert!(invalid(sort::sort_keys(
            &gpu,
            keys.view(),
            out.view_mut(),
            o
        )));
    }
    // k > n.
    assert!(matches!(
        sort::top_k(&gpu, keys.view(), 5, true),
        Err(Error::InvalidArgument { name: "k", .. })
    ));
    // Nothing was written by the refused calls.
    assert_eq!(short.to_host(&gpu).unwrap(), poison3);
    assert_eq!(
        bits_of(&vout.to_host(&gpu).unwrap()),
        bits_of(&[u16::poison(); 3])
    );
    assert_eq!(idx.to_host(&gpu).unwrap(), vec![u32::poison(); 5]);
    assert_eq!(out.to_host(&gpu).unwrap(), vec![u32::poison(); 4]);
    // top_k_into: indices of another length than the values.
    let mut tv = DeviceBuffer::<u32>::poisoned(&gpu, 2).unwrap();
    let mut ti = DeviceBuffer::<u64>::poisoned(&gpu, 3).unwrap();
    assert!(invalid(sort::top_k_into(
        &gpu,
        keys.view(),
        tv.view_mut(),
        ti.view_mut(),
        false
    )));
    assert_eq!(tv.to_host(&gpu).unwrap(), vec![u32::poison(); 2]);
    // Double buffers of different lengths.
    let mut a = DeviceBuffer::<u32>::poisoned(&gpu, 4).unwrap();
    assert!(DoubleBuffer::new(a.view_mut(), short.view_mut()).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU (about 3.5 GB); best run alone"]
fn several_portions() {
    // Past 2^28 keys each digit pass runs in portions with their own
    // look-back; a portion's last tile hands the next portion its digit
    // offsets. Four passes of u32 keys: from the second pass on, a portion
    // holds other keys than the input's positions there.
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let n = (1usize << 28) + (1 << 20) + 17;
    let keys = random_keys::<u32>(n, &mut rng);
    for order in [Order::Ascending, Order::Descending] {
        check_keys(&gpu, &keys, order.into()).unwrap();
    }
    let few: Vec<u32> = keys.iter().map(|k| k % 3).collect();
    let index: Vec<u32> = (0..n as u32).collect();
    check_pairs(&gpu, &few, &index, SortOptions::default().with_bits(0..2)).unwrap();
    drop((keys, few, index));
    // u16 keys over three portions, two passes: the output is ordered and
    // holds every key (counted per value).
    let n = 2 * (1usize << 28) + 4099;
    let keys: Vec<u16> = (0..n)
        .map(|i| (i.wrapping_mul(2654435761) >> 9) as u16)
        .collect();
    let mut counts = vec![0u64; 1 << 16];
    keys.iter().for_each(|&k| counts[k as usize] += 1);
    let input = DeviceBuffer::from_host(&gpu, &keys).unwrap();
    drop(keys);
    let mut out = DeviceBuffer::<u16>::poisoned(&gpu, n).unwrap();
    sort::sort_keys(&gpu, input.view(), out.view_mut(), Order::Descending).unwrap();
    let got = out.to_host(&gpu).unwrap();
    if let Some(at) = got.windows(2).position(|w| w[0] < w[1]) {
        panic!("u16 descending, n = {n}: out of order at {at}");
    }
    let mut got_counts = vec![0u64; 1 << 16];
    got.iter().for_each(|&k| got_counts[k as usize] += 1);
    assert!(got_counts == counts, "u16 descending, n = {n}: other keys");
}

#[test]
#[ignore = "needs a CUDA GPU (about 6.5 GB); best run alone"]
fn past_2_31_keys() {
    // u8 keys, one digit pass over 9 portions: positions past 2^31, and
    // the offsets handed from portion to portion through 8 launches
    // (several_portions covers the passes after the first).
    let gpu = gpu();
    let n = (1usize << 31) + 4099;
    let keys: Vec<u8> = (0..n)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    let mut counts = [0u64; 256];
    keys.iter().for_each(|&k| counts[k as usize] += 1);
    let input = DeviceBuffer::from_host(&gpu, &keys).unwrap();
    drop(keys);
    let mut out = DeviceBuffer::<u8>::poisoned(&gpu, n).unwrap();
    sort::sort_keys(&gpu, input.view(), out.view_mut(), Order::Descending).unwrap();
    let got = out.to_host(&gpu).unwrap();
    let mut at = 0usize;
    for digit in (0..256).rev() {
        let c = counts[digit] as usize;
        assert!(
            got[at..at + c].iter().all(|&k| k as usize == digit),
            "digit {digit} at {at}"
        );
        at += c;
    }
    // Top-k over the same keys: the first 1000 largest, ties by index.
    let (values, indices) = sort::top_k(&gpu, input.view(), 1000, true).unwrap();
    let values = values.to_host(&gpu).unwrap();
    let indices = indices.to_host(&gpu).unwrap();
    assert!(values.iter().all(|&v| v == 255));
    assert!(indices.windows(2).all(|w| w[0] < w[1]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn random_f32_pairs_sort_as_the_cpu(
        bits in prop::collection::vec(any::<u32>(), 0..20_000),
        descending in any::<bool>(),
        begin in 0u32..32,
        width in 1u32..33,
    ) {
        let gpu = gpu();
        let keys: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let index: Vec<u32> = (0..keys.len() as u32).collect();
        let end = (begin + width).min(32);
        let order = if descending { Order::Descending } else { Order::Ascending };
        let options = SortOptions::from(order).with_bits(begin..end);
        prop_assert_eq!(check_pairs(&gpu, &keys, &index, options), Ok(()));
    }
}

fn segmented_case<K: SortKey>(gpu: &Gpu, rng: &mut SplitMix64, failures: &mut Vec<String>) {
    // Segment lengths: empty, one key, a warp, the limit, random.
    let mut lengths = vec![0usize, 1, 32, 0, sort::segmented::MAX_SEGMENT_KEYS, 5000];
    lengths.extend((0..200).map(|_| (rng.next_u64() % 700) as usize));
    let mut offsets = vec![0u64];
    for len in &lengths {
        offsets.push(offsets.last().unwrap() + *len as u64);
    }
    let n = *offsets.last().unwrap() as usize;
    for shape in [Shape::Random, Shape::FewDistinct] {
        let keys = keys_of::<K>(shape, n, rng);
        let index: Vec<u32> = (0..n as u32).collect();
        for order in [Order::Ascending, Order::Descending] {
            let mut want_k = Vec::with_capacity(n);
            let mut want_v = Vec::with_capacity(n);
            for pair in offsets.windows(2) {
                let (a, b) = (pair[0] as usize, pair[1] as usize);
                let (k, v) = cpu::sort_pairs(
                    &keys[a..b],
                    &index[a..b],
                    order.is_descending(),
                    &cpu::full_bits::<K>(),
                );
                want_k.extend(k);
                want_v.extend(v);
            }
            let dk = DeviceBuffer::from_host(gpu, &keys).unwrap();
            let dv = DeviceBuffer::from_host(gpu, &index).unwrap();
            let doff = DeviceBuffer::from_host(gpu, &offsets).unwrap();
            let mut ko = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
            let mut vo = DeviceBuffer::<u32>::poisoned(gpu, n).unwrap();
            let mut ko2 = DeviceBuffer::<K>::poisoned(gpu, n).unwrap();
            sort::segmented_sort_pairs(
                gpu,
                dk.view(),
                dv.view(),
                ko.view_mut(),
                vo.view_mut(),
                doff.view(),
                order,
            )
            .unwrap();
            sort::segmented_sort_keys(gpu, dk.view(), ko2.view_mut(), doff.view(), order).unwrap();
            let what = format!("segmented {} {shape:?} {order:?}", K::SUFFIX);
            failures.extend(diff(&what, &ko.to_host(gpu).unwrap(), &want_k).err());
            failures.extend(diff(&what, &vo.to_host(gpu).unwrap(), &want_v).err());
            failures.extend(diff(&what, &ko2.to_host(gpu).unwrap(), &want_k).err());
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn segmented_sort_every_type() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for_every_key!(segmented_case, &gpu, &mut rng, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn segmented_sort_refuses_bad_offsets() {
    let gpu = gpu();
    let n = sort::segmented::MAX_SEGMENT_KEYS + 1;
    let keys = DeviceBuffer::from_host(&gpu, &vec![1u32; n]).unwrap();
    let mut out = DeviceBuffer::<u32>::poisoned(&gpu, n).unwrap();
    let too_long = DeviceBuffer::from_host(&gpu, &[0u64, n as u64]).unwrap();
    assert!(matches!(
        sort::segmented_sort_keys(
            &gpu,
            keys.view(),
            out.view_mut(),
            too_long.view(),
            Order::Ascending
        ),
        Err(Error::Unsupported(_))
    ));
    for bad in [vec![1u64, n as u64], vec![0, 10], vec![0, 20, 10, n as u64]] {
        let offsets = DeviceBuffer::from_host(&gpu, &bad).unwrap();
        assert!(matches!(
            sort::segmented_sort_keys(
                &gpu,
                keys.view(),
                out.view_mut(),
                offsets.view(),
                Order::Ascending
            ),
            Err(Error::InvalidArgument { .. })
        ));
    }
    assert_eq!(out.to_host(&gpu).unwrap(), vec![u32::poison(); n]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn in_place_with_one_pass() {
    // u8 keys: one digit pass, which lands in the alternate buffer (the
    // selector flips) past the one-launch sorts, and the lab's in-place
    // entry copies it back.
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    for n in [SMALL + 1, CLUSTER, (1 << 17) + 3] {
        let keys = random_keys::<u8>(n, &mut rng);
        let values: Vec<u16> = (0..n).map(|i| i as u16).collect();
        let (want_k, want_v) = cpu::sort_pairs(&keys, &values, true, &(0..8));
        let mut ka = DeviceBuffer::from_host(&gpu, &keys).unwrap();
        let mut kb = DeviceBuffer::<u8>::poisoned(&gpu, n).unwrap();
        let mut va = DeviceBuffer::from_host(&gpu, &values).unwrap();
        let mut vb = DeviceBuffer::<u16>::poisoned(&gpu, n).unwrap();
        let mut dk = DoubleBuffer::new(ka.view_mut(), kb.view_mut()).unwrap();
        let mut dv = DoubleBuffer::new(va.view_mut(), vb.view_mut()).unwrap();
        sort::sort_pairs_in_place(&gpu, &mut dk, &mut dv, Order::Descending).unwrap();
        // The one-launch sorts write in place; the digit pass flips.
        let one_launch =
            sort::modules::one_launch_max_keys::<u8>(&gpu, Some(sort::PayloadWidth::B2)).unwrap();
        assert_eq!(dk.selector(), usize::from(n > one_launch), "n = {n}");
        assert_eq!(dk.current().to_host(&gpu).unwrap(), want_k);
        assert_eq!(dv.current().to_host(&gpu).unwrap(), want_v);

        let mut k = DeviceBuffer::from_host(&gpu, &keys).unwrap();
        let mut v = DeviceBuffer::from_host(&gpu, &values).unwrap();
        sort::sort_in_place_with(
            &gpu,
            k.view_mut(),
            Some(PayloadViewMut::new(v.view_mut()).unwrap()),
            Order::Descending,
            0..8,
            SortAlgorithm::Onesweep,
        )
        .unwrap();
        assert_eq!(k.to_host(&gpu).unwrap(), want_k);
        assert_eq!(v.to_host(&gpu).unwrap(), want_v);
    }
}
