//! GPU tests of the split sorts (`sort::split`): every destination must
//! receive exactly its range of the CPU sort, bit for bit, for keys alone
//! and pairs, both orders and narrow bit ranges (one, two and four passes),
//! with destinations that are empty, cut inside a run of equal keys and
//! inside one tile's digit run, one key long, and as many as the table
//! takes; the guard words around each destination must stay untouched.
//! Bad tables are refused before any device work.
//!
//! Run on a GPU machine: `cargo test --release -p parprims-sort --test
//! split_gpu -- --include-ignored`.

use gpu_core::{DeviceBuffer, DeviceType, Gpu};
use parprims_testkit::rng::SplitMix64;
use sort::split::{
    sort_keys_split, sort_keys_split_deferred, sort_pairs_split, SplitDestination, SplitTable,
};
use sort::{cpu, Order, SortKey, SortOptions};

mod sort_support;
use sort_support::{diff, gpu, seed};

/// Guard elements before and after each destination's range.
const GUARD: usize = 5;

/// Cuts of n sorted positions: destination starts (first 0).
fn cut_sets(n: usize) -> Vec<Vec<usize>> {
    let mut sets = vec![vec![0], vec![0, n / 2], vec![0, 0, n, n]];
    if n >= 8 {
        sets.push(vec![0, 1, n / 3, n / 3, n / 2 + 1, n - 1, n - 1, n]);
        sets.push((0..8).map(|j| j * n / 8).collect());
    }
    if n > 5000 {
        // Inside the second tile, near its end (a digit run crossing).
        sets.push(vec![0, 4096 + 4000, 4096 + 4001]);
    }
    sets
}

/// One destination buffer per cut, each with guards of `poison` around it.
fn destination_buffers<T: DeviceType>(
    gpu: &Gpu,
    lens: &[usize],
    poison: T,
) -> Vec<DeviceBuffer<T>> {
    lens.iter()
        .map(|&len| DeviceBuffer::filled(gpu, len + 2 * GUARD, poison).unwrap())
        .collect()
}

/// Address of element 0 of a destination (past its front guard).
fn inner<T: DeviceType>(buffer: &DeviceBuffer<T>) -> u64 {
    buffer.view().device_ptr() + (GUARD * T::BYTES) as u64
}

fn lens_of(starts: &[usize], n: usize) -> Vec<usize> {
    (0..starts.len())
        .map(|j| starts.get(j + 1).copied().unwrap_or(n) - starts[j])
        .collect()
}

/// Every destination against its part of `want`, guards intact.
fn check_parts<T: DeviceType + PartialEq>(
    gpu: &Gpu,
    what: &str,
    buffers: &[DeviceBuffer<T>],
    starts: &[usize],
    want: &[T],
    poison: T,
) -> Result<(), String> {
    let lens = lens_of(starts, want.len());
    for (j, buffer) in buffers.iter().enumerate() {
        let got = buffer.to_host(gpu).unwrap();
        let part = &want[starts[j]..starts[j] + lens[j]];
        diff(
            &format!("{what}, destination {j}"),
            &got[GUARD..GUARD + lens[j]],
            part,
        )?;
        let guards: Vec<T> = got[..GUARD]
            .iter()
            .chain(&got[GUARD + lens[j]..])
            .copied()
            .collect();
        diff(
            &format!("{what}, guards of {j}"),
            &guards,
            &[poison; 2 * GUARD],
        )?;
    }
    Ok(())
}

fn check_keys<K: SortKey + PartialEq>(
    gpu: &Gpu,
    keys: &[K],
    options: SortOptions,
    starts: &[usize],
    poison: K,
    deferred: bool,
) -> Result<(), String> {
    let n = keys.len();
    let bits = options.bit_range::<K>().unwrap();
    let want = cpu::sort_keys(keys, options.order.is_descending(), &bits);
    let input = DeviceBuffer::from_host(gpu, keys).unwrap();
    let buffers = destination_buffers(gpu, &lens_of(starts, n), poison);
    let destinations: Vec<SplitDestination> = starts
        .iter()
        .zip(&buffers)
        .map(|(&start, buffer)| SplitDestination {
            start,
            keys: inner(buffer),
            values: 0,
        })
        .collect();
    let table = SplitTable::new(n, &destinations).map_err(|e| e.to_string())?;
    let mut asked = 0;
    // SAFETY: each destination is this device's, holds its range between
    // guards, and nothing else uses it until the reads below (stream order).
    if deferred {
        unsafe {
            sort_keys_split_deferred(gpu, input.view(), options.clone(), || {
                asked += 1;
                Ok(table)
            })
        }
    } else {
        asked = 1;
        unsafe { sort_keys_split(gpu, input.view(), &table, options.clone()) }
    }
    .map_err(|e| e.to_string())?;
    let what = format!(
        "split keys {} n = {n} {options:?} cuts {starts:?}{}",
        K::SUFFIX,
        if deferred { " deferred" } else { "" }
    );
    if asked != 1 {
        return Err(format!("{what}: the table was asked for {asked} times"));
    }
    check_parts(gpu, &what, &buffers, starts, &want, poison)?;
    diff("input", &input.to_host(gpu).unwrap(), keys)
}

fn check_pairs<K: SortKey + PartialEq>(
    gpu: &Gpu,
    keys: &[K],
    options: SortOptions,
    starts: &[usize],
    poison: K,
) -> Result<(), String> {
    let n = keys.len();
    let bits = options.bit_range::<K>().unwrap();
    let values: Vec<u32> = (0..n as u32).collect();
    let (want_keys, want_values) =
        cpu::sort_pairs(keys, &values, options.order.is_descending(), &bits);
    let k = DeviceBuffer::from_host(gpu, keys).unwrap();
    let v = DeviceBuffer::from_host(gpu, &values).unwrap();
    let lens = lens_of(starts, n);
    let key_buffers = destination_buffers(gpu, &lens, poison);
    let value_buffers = destination_buffers(gpu, &lens, u32::MAX);
    let destinations: Vec<SplitDestination> = (0..starts.len())
        .map(|j| SplitDestination {
            start: starts[j],
            keys: inner(&key_buffers[j]),
            values: inner(&value_buffers[j]),
        })
        .collect();
    let table = SplitTable::new(n, &destinations).map_err(|e| e.to_string())?;
    // SAFETY: as in check_keys, for the value buffers too.
    unsafe { sort_pairs_split(gpu, k.view(), v.view(), &table, options.clone()) }
        .map_err(|e| e.to_string())?;
    let what = format!(
        "split pairs {} n = {n} {options:?} cuts {starts:?}",
        K::SUFFIX
    );
    check_parts(gpu, &what, &key_buffers, starts, &want_keys, poison)?;
    check_parts(gpu, &what, &value_buffers, starts, &want_values, u32::MAX)
}

/// Keys with long runs of equal values (cuts fall inside them) or random.
fn draw_u32(rng: &mut SplitMix64, n: usize, few: bool) -> Vec<u32> {
    (0..n)
        .map(|_| {
            let x = rng.next_u64();
            if few {
                (x % 5) as u32 * 0x0101_0101
            } else {
                (x >> 32) as u32
            }
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_sorts_match_the_cpu_sort_range_by_range() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let mut failures = Vec::new();
    for n in [
        1usize,
        2,
        33,
        4095,
        4096,
        4097,
        12_289,
        100_003,
        (1 << 20) + 7,
    ] {
        for few in [false, true] {
            let keys = draw_u32(&mut rng, n, few);
            for starts in cut_sets(n) {
                for options in [
                    SortOptions::from(Order::Ascending),
                    SortOptions::from(Order::Descending),
                    SortOptions::from(Order::Ascending).with_bits(0..8),
                    SortOptions::from(Order::Descending).with_bits(4..20),
                ] {
                    for deferred in [false, true] {
                        let checked = check_keys(
                            &gpu,
                            &keys,
                            options.clone(),
                            &starts,
                            0xdead_beef,
                            deferred,
                        );
                        if let Err(e) = checked {
                            failures.push(e);
                        }
                    }
                    if let Err(e) = check_pairs(&gpu, &keys, options, &starts, 0xdead_beef) {
                        failures.push(e);
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_sorts_of_wide_and_float_keys() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(seed());
    let n = 300_007;
    let starts = vec![0, n / 5, n / 5 + 1, 3 * n / 4];
    let keys: Vec<u64> = (0..n)
        .map(|_| rng.next_u64() >> (rng.next_u64() % 40))
        .collect();
    check_keys(
        &gpu,
        &keys,
        Order::Ascending.into(),
        &starts,
        u64::MAX,
        true,
    )
    .unwrap();
    check_pairs(&gpu, &keys, Order::Descending.into(), &starts, u64::MAX).unwrap();
    let floats: Vec<f32> = (0..n)
        .map(|i| match i % 97 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::INFINITY,
            _ => (rng.next_u64() as i64 as f64 / 1e15) as f32,
        })
        .collect();
    // Poison with a value whose bits no key has (a distinct NaN payload).
    let poison = f32::from_bits(0x7fc0_dead);
    check_keys(
        &gpu,
        &floats,
        Order::Ascending.into(),
        &starts,
        poison,
        false,
    )
    .unwrap();
    check_pairs(&gpu, &floats, Order::Descending.into(), &starts, poison).unwrap();
    let signed: Vec<i16> = (0..n).map(|_| rng.next_u64() as i16).collect();
    check_keys(
        &gpu,
        &signed,
        Order::Ascending.into(),
        &starts,
        0x5a5a,
        true,
    )
    .unwrap();
}

#[test]
fn bad_split_tables_are_refused_on_the_host() {
    let to = |start| SplitDestination {
        start,
        keys: 0x1000,
        values: 0,
    };
    assert!(SplitTable::new(3, &[]).is_err());
    assert!(SplitTable::new(3, &[to(1)]).is_err());
    assert!(SplitTable::new(3, &[to(0), to(4)]).is_err());
    assert!(SplitTable::new(3, &[to(0); 9]).is_err());
    let table = SplitTable::new(3, &[to(0), to(2)]).unwrap();
    assert_eq!((table.len(), table.has_values()), (3, false));
    let empty = SplitTable::new(0, &[to(0)]).unwrap();
    assert!(empty.is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_split_tables_are_refused() {
    let gpu = gpu();
    let keys = DeviceBuffer::from_host(&gpu, &[3u32, 1, 2]).unwrap();
    let out = DeviceBuffer::<u32>::zeros(&gpu, 3).unwrap();
    let to = |start| SplitDestination {
        start,
        keys: out.view().device_ptr(),
        values: 0,
    };
    // A table for another length, and a keys-only table for pairs.
    let table = SplitTable::new(2, &[to(0)]).unwrap();
    // SAFETY: refused before any device work.
    assert!(unsafe { sort_keys_split(&gpu, keys.view(), &table, Order::Ascending) }.is_err());
    let table = SplitTable::new(3, &[to(0)]).unwrap();
    let values = DeviceBuffer::from_host(&gpu, &[0u32, 1, 2]).unwrap();
    // SAFETY: refused before any device work.
    let pairs =
        unsafe { sort_pairs_split(&gpu, keys.view(), values.view(), &table, Order::Ascending) };
    assert!(pairs.is_err());
    // A deferred table for another length, and one that fails: refused
    // before the last pass, the only one that writes the destinations.
    let short = SplitTable::new(2, &[to(0)]).unwrap();
    // SAFETY: the table is refused before the pass that writes through it.
    let late =
        unsafe { sort_keys_split_deferred(&gpu, keys.view(), Order::Ascending, || Ok(short)) };
    assert!(late.is_err());
    // SAFETY: as above.
    let failed = unsafe {
        sort_keys_split_deferred(&gpu, keys.view(), Order::Ascending, || {
            Err(gpu_core::Error::invalid("table", "not known"))
        })
    };
    assert!(failed.is_err());
    assert_eq!(out.to_host(&gpu).unwrap(), vec![0, 0, 0], "nothing written");
}
