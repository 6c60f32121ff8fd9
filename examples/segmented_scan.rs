//! Segmented scan at one size, the segments given three ways (head flags,
//! offsets, runs of u32 keys): the inclusive sum of one value type (`i32`
//! by default; any of `i32 u32 f32 i64 u64 f64`) through
//! `scan::segmented_scan_into`, `segmented_scan_by_offsets_into` and
//! `scan_by_key_into`, each checked against the CPU reference, timed with
//! CUDA events (3 warm-ups, median of 20), and reported as GB/s and as a
//! fraction of the device-to-device copy ceiling measured in the same
//! process. Bytes for s-byte values: values read and written plus the
//! heads (flags: (2s + 1)·n, 9n for `i32`, as `scan::segmented_bytes_moved`
//! counts them; see [`form_bytes`]).
//!
//! ```sh
//! cargo run --release --example segmented_scan -- 268435456 1000       # n, mean segment length
//! cargo run --release --example segmented_scan -- 268435456 1000 f64   # and the value type
//! ```

use std::process::ExitCode;

use parprims::gpu_core::{DeviceBuffer, Element, ElementType, Error, Gpu, Result, Sum};
use parprims::scan::{self, SegmentedKind};
use parprims_testkit::bench::{checked_exit, copy_ceiling, gbps, time_device, Repetitions};
use parprims_testkit::rng::{random_vec, SplitMix64};

fn main() -> ExitCode {
    checked_exit("segmented_scan", run())
}

fn run() -> Result<bool> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 28);
    let mean_segment: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000)
        .max(1);
    let value_type = match args.next() {
        None => ElementType::I32,
        Some(name) => ElementType::parse(&name).ok_or_else(|| {
            Error::invalid(
                "value type",
                format!("{name:?} is not one of i32 u32 f32 i64 u64 f64"),
            )
        })?,
    };
    match value_type {
        ElementType::I32 => run_typed::<i32>(n, mean_segment),
        ElementType::U32 => run_typed::<u32>(n, mean_segment),
        ElementType::F32 => run_typed::<f32>(n, mean_segment),
        ElementType::I64 => run_typed::<i64>(n, mean_segment),
        ElementType::U64 => run_typed::<u64>(n, mean_segment),
        ElementType::F64 => run_typed::<f64>(n, mean_segment),
    }
}

/// The values: integers in ±1000 (0 to 2000 unsigned); for floats whole
/// numbers in ±3, so every sum within a segment is exact in any order.
fn make_values<T: Element>(n: usize, seed: u64) -> Vec<T> {
    if T::IS_FLOAT {
        random_vec::<T>(n, seed, -3.0, 3.0)
            .into_iter()
            .map(|v| T::from_f64(v.to_f64().round()))
            .collect()
    } else if T::IS_SIGNED {
        random_vec(n, seed, -1000.0, 1000.0)
    } else {
        random_vec(n, seed, 0.0, 2000.0)
    }
}

/// Bytes each form moves for `n` values of `value_bytes` with
/// `offsets_len` offsets: values read and written (2sn) plus the heads:
/// flags 1 per item; offsets read twice, by the tile search-and-check and
/// the scan, and a tile start per tile; u32 keys 4 per item.
fn form_bytes(n: usize, value_bytes: usize, offsets_len: usize) -> [(&'static str, u64); 3] {
    let values = 2 * (value_bytes * n) as u64;
    let tiles = (n as u64).div_ceil(scan::segmented_offsets_tile_items(value_bytes));
    [
        (
            "head flags (u8)",
            scan::segmented_bytes_moved(n, value_bytes),
        ),
        (
            "offsets (u64, checked)",
            values + 16 * offsets_len as u64 + 16 * tiles,
        ),
        ("by key (u32)", values + 4 * n as u64),
    ]
}

fn run_typed<T: Element>(n: usize, mean_segment: u64) -> Result<bool> {
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    let seed = 0x5e9_2026;
    let values: Vec<T> = make_values(n, seed);
    let mut rng = SplitMix64::new(seed ^ 1);
    let heads: Vec<u8> = (0..n)
        .map(|_| u8::from(rng.below(mean_segment) == 0))
        .collect();
    let offsets: Vec<u64> = std::iter::once(0)
        .chain((1..n).filter(|&i| heads[i] != 0).map(|i| i as u64))
        .chain(std::iter::once(n as u64))
        .collect();
    let keys = run_ids(&heads);
    let want = scan::cpu::segmented_scan(&values, &heads, &Sum, SegmentedKind::Inclusive);
    let input = DeviceBuffer::from_host(&gpu, &values)?;
    let flags = DeviceBuffer::from_host(&gpu, &heads)?;
    let offsets_gpu = DeviceBuffer::from_host(&gpu, &offsets)?;
    let keys_gpu = DeviceBuffer::from_host(&gpu, &keys)?;
    let mut output = DeviceBuffer::<T>::poisoned(&gpu, n)?;
    let reps = Repetitions::default();
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    let forms = form_bytes(n, T::BYTES, offsets.len());
    let mut all_ok = true;
    for (form, (name, bytes)) in forms.iter().enumerate() {
        let timing = time_device(
            &gpu,
            reps,
            |_| Ok(()),
            |_| match form {
                0 => scan::segmented_scan_into(
                    &gpu,
                    input.view(),
                    flags.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
                1 => scan::segmented_scan_by_offsets_into(
                    &gpu,
                    input.view(),
                    offsets_gpu.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
                _ => scan::scan_by_key_into(
                    &gpu,
                    keys_gpu.view(),
                    input.view(),
                    output.view_mut(),
                    &Sum,
                    SegmentedKind::Inclusive,
                ),
            },
        )?;
        let ok = output.to_host(&gpu)? == want;
        all_ok &= ok;
        let rate = gbps(*bytes as f64, timing.median_ms);
        println!(
            "segmented scan {} by {name}, n = {n}, mean segment {mean_segment}: {:.4} ms, {rate:.1} GB/s, {:.3} of the copy ceiling ({:.1} GB/s), check {}",
            T::SUFFIX,
            timing.median_ms,
            ceiling.fraction(rate),
            ceiling.gbps,
            if ok { "passed" } else { "FAILED" }
        );
    }
    Ok(all_ok)
}

/// Keys whose runs are the segments: the segment number of each item.
fn run_ids(heads: &[u8]) -> Vec<u32> {
    let mut run = 0u32;
    heads
        .iter()
        .enumerate()
        .map(|(i, &flag)| {
            if i > 0 && flag != 0 {
                run = run.wrapping_add(1);
            }
            run
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_of_each_form() {
        let n = 1usize << 28;
        let offsets = n / 1000;
        // Value bytes; bytes per item by flags, of the offsets form's values
        // and by keys; the offsets tile. 4-byte values give the counts this
        // example has always reported, 8-byte ones twice the value traffic
        // and half the tile.
        for (s, flags, values, tile, keys) in [(4, 9, 8, 8192, 12), (8, 17, 16, 4096, 20)] {
            let [by_flags, by_offsets, by_keys] = form_bytes(n, s, offsets);
            assert_eq!(by_flags.1, flags * n as u64);
            assert_eq!(
                by_offsets.1,
                values * n as u64 + 16 * offsets as u64 + 16 * (n / tile) as u64
            );
            assert_eq!(by_keys.1, keys * n as u64);
        }
        assert_eq!(form_bytes(8193, 8, 2)[1].1, 16 * 8193 + 32 + 16 * 3);
    }

    #[test]
    fn values_sum_exactly() {
        let ints = make_values::<i32>(10_000, 1);
        assert!(ints.iter().all(|v| (-1000..=1000).contains(v)));
        assert_eq!(ints, random_vec::<i32>(10_000, 1, -1000.0, 1000.0));
        assert!(make_values::<u64>(10_000, 1).iter().all(|&v| v <= 2000));
        let floats = make_values::<f64>(10_000, 1);
        assert!(floats.iter().all(|&v| v.fract() == 0.0 && v.abs() <= 3.0));
    }
}
