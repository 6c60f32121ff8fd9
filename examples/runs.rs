//! Keyed runs at one size: reduce by key (i32 keys, values of one type,
//! `f32` by default, any of `i32 u32 f32 i64 u64 f64`; sum), run-length
//! encoding and unique of sorted i32 keys in runs of 1 to 2·mean − 1
//! items, and expand (the run lengths back into runs), each checked
//! against the CPU reference (`compact::cpu_by_key`), timed with CUDA
//! events (3 warm-ups, median of 20) and reported as GB/s and as a
//! fraction of the device-to-device copy ceiling measured in the same
//! process. Bytes as the compact crate counts them: reduce by key
//! (4 + v)·n + (4 + v)·runs for v-byte values (8n + 8·runs for `f32`),
//! run-length encoding 4n + 8·runs, unique 4n + 4·runs, expand
//! 4·runs + 4·runs + 8·runs + 4n.
//!
//! ```sh
//! cargo run --release --example runs -- 268435456 16       # n, mean run length
//! cargo run --release --example runs -- 268435456 16 f64   # and the reduce by key's value type
//! ```

use std::process::ExitCode;

use parprims::compact;
use parprims::gpu_core::{DeviceBuffer, Element, ElementType, Error, Gpu, Result, Sum};
use parprims_testkit::bench::{checked_exit, copy_ceiling, gbps, time_device, Repetitions};
use parprims_testkit::rng::SplitMix64;

fn main() -> ExitCode {
    checked_exit("runs", run())
}

fn run() -> Result<bool> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 28);
    let mean_run: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(16)
        .max(1);
    let value_type = match args.next() {
        None => ElementType::F32,
        Some(name) => ElementType::parse(&name).ok_or_else(|| {
            Error::invalid(
                "value type",
                format!("{name:?} is not one of i32 u32 f32 i64 u64 f64"),
            )
        })?,
    };
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.info().summary());
    // Sorted keys, runs of 1 to 2·mean − 1 items; small-integer values
    // (every sum exact, whatever the order).
    let mut rng = SplitMix64::new(0x2u64 << 40 | 2026);
    let mut keys = Vec::with_capacity(n);
    let mut key = i32::MIN;
    while keys.len() < n {
        let run = (1 + rng.below(2 * mean_run - 1)) as usize;
        keys.extend(std::iter::repeat_n(key, run.min(n - keys.len())));
        key = key.wrapping_add(1);
    }
    let (want_keys, want_counts) = compact::cpu_by_key::run_length_encode(&keys);
    let runs = want_keys.len();

    let keys_gpu = DeviceBuffer::from_host(&gpu, &keys)?;
    let mut keys_out = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let mut counts_out = DeviceBuffer::<u32>::poisoned(&gpu, n)?;
    let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
    let reps = Repetitions::default();
    let ceiling = copy_ceiling(&gpu, 1 << 30, reps)?;
    let report = |name: &str, bytes: u64, ms: f64, ok: bool| {
        let rate = gbps(bytes as f64, ms);
        println!(
            "{name}, n = {n}, {runs} runs (mean {:.1}): {ms:.4} ms, {rate:.1} GB/s, {:.3} of the copy ceiling ({:.1} GB/s), check {}",
            n as f64 / runs.max(1) as f64,
            ceiling.fraction(rate),
            ceiling.gbps,
            if ok { "passed" } else { "FAILED" }
        );
    };
    let mut all_ok = true;

    let mut keyed = KeyedRuns {
        gpu: &gpu,
        reps,
        keys: &keys,
        keys_gpu: &keys_gpu,
        want_keys: &want_keys,
        keys_out: &mut keys_out,
        count: &mut count,
    };
    let (ms, ok) = match value_type {
        ElementType::I32 => keyed.reduce_by_key::<i32>(rng),
        ElementType::U32 => keyed.reduce_by_key::<u32>(rng),
        ElementType::F32 => keyed.reduce_by_key::<f32>(rng),
        ElementType::I64 => keyed.reduce_by_key::<i64>(rng),
        ElementType::U64 => keyed.reduce_by_key::<u64>(rng),
        ElementType::F64 => keyed.reduce_by_key::<f64>(rng),
    }?;
    all_ok &= ok;
    report(
        &format!("reduce_by_key i32/{value_type} sum"),
        compact::reduce_by_key_bytes_moved(n, runs, 4, value_bytes(value_type)),
        ms,
        ok,
    );

    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            compact::run_length_encode_into(
                &gpu,
                keys_gpu.view(),
                keys_out.view_mut(),
                counts_out.view_mut(),
                count.view_mut(),
            )
        },
    )?;
    let ok = count.to_host(&gpu)?[0] as usize == runs
        && keys_out.slice(..runs)?.to_host(&gpu)? == want_keys
        && counts_out.slice(..runs)?.to_host(&gpu)? == want_counts;
    all_ok &= ok;
    report(
        "run_length_encode i32",
        compact::run_length_bytes_moved(n, runs, 4),
        timing.median_ms,
        ok,
    );

    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| compact::unique_into(&gpu, keys_gpu.view(), keys_out.view_mut(), count.view_mut()),
    )?;
    let ok = count.to_host(&gpu)?[0] as usize == runs
        && keys_out.slice(..runs)?.to_host(&gpu)? == want_keys;
    all_ok &= ok;
    report(
        "unique i32",
        compact::unique_bytes_moved(n, runs, 4, 0),
        timing.median_ms,
        ok,
    );

    // Expand: the unique keys, each repeated its run length, rebuild the keys.
    let unique_gpu = DeviceBuffer::from_host(&gpu, &want_keys)?;
    let counts_gpu = DeviceBuffer::from_host(&gpu, &want_counts)?;
    let mut offsets = DeviceBuffer::<u64>::zeros(&gpu, runs)?;
    let mut total = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
    let mut rebuilt = DeviceBuffer::<i32>::poisoned(&gpu, n)?;
    let timing = time_device(
        &gpu,
        reps,
        |_| Ok(()),
        |_| {
            compact::expand_into(
                &gpu,
                unique_gpu.view(),
                counts_gpu.view(),
                offsets.view_mut(),
                rebuilt.view_mut(),
                total.view_mut(),
            )
        },
    )?;
    let ok = total.to_host(&gpu)?[0] as usize == n && rebuilt.to_host(&gpu)? == keys;
    all_ok &= ok;
    report(
        "expand i32 (run lengths back into runs)",
        compact::expand_bytes_moved(runs, n, 4),
        timing.median_ms,
        ok,
    );
    Ok(all_ok)
}

/// The reduce by key's inputs and outputs that do not depend on the value
/// type.
struct KeyedRuns<'a> {
    gpu: &'a Gpu,
    reps: Repetitions,
    keys: &'a [i32],
    keys_gpu: &'a DeviceBuffer<i32>,
    want_keys: &'a [i32],
    keys_out: &'a mut DeviceBuffer<i32>,
    count: &'a mut DeviceBuffer<u64>,
}

impl KeyedRuns<'_> {
    /// The reduce by key of small-integer `T` values (0 to 7, drawn from
    /// `rng`), timed: the median in ms and whether the keys, sums and run
    /// count match the CPU reference.
    fn reduce_by_key<T: Element>(&mut self, mut rng: SplitMix64) -> Result<(f64, bool)> {
        let gpu = self.gpu;
        let n = self.keys.len();
        let values: Vec<T> = (0..n).map(|_| T::from_f64(rng.below(8) as f64)).collect();
        let (_, want_sums) = compact::cpu_by_key::reduce_by_key(self.keys, &values, &Sum)?;
        let values_gpu = DeviceBuffer::from_host(gpu, &values)?;
        let mut sums_out = DeviceBuffer::<T>::poisoned(gpu, n)?;
        let timing = time_device(
            gpu,
            self.reps,
            |_| Ok(()),
            |_| {
                compact::reduce_by_key_into(
                    gpu,
                    self.keys_gpu.view(),
                    values_gpu.view(),
                    &Sum,
                    self.keys_out.view_mut(),
                    sums_out.view_mut(),
                    self.count.view_mut(),
                )
            },
        )?;
        let runs = self.want_keys.len();
        let ok = self.count.to_host(gpu)?[0] as usize == runs
            && self.keys_out.slice(..runs)?.to_host(gpu)? == self.want_keys
            && sums_out.slice(..runs)?.to_host(gpu)? == want_sums;
        Ok((timing.median_ms, ok))
    }
}

/// Bytes per value of a type.
fn value_bytes(t: ElementType) -> usize {
    match t {
        ElementType::I32 | ElementType::U32 | ElementType::F32 => 4,
        ElementType::I64 | ElementType::U64 | ElementType::F64 => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_by_key_bytes_scale_with_the_value_width() {
        let n = 1usize << 28;
        let runs = n / 16;
        assert_eq!(
            compact::reduce_by_key_bytes_moved(n, runs, 4, value_bytes(ElementType::F32)),
            (8 * n + 8 * runs) as u64
        );
        assert_eq!(
            compact::reduce_by_key_bytes_moved(n, runs, 4, value_bytes(ElementType::F64)),
            (12 * n + 12 * runs) as u64
        );
        for t in ElementType::ALL {
            assert_eq!(value_bytes(t), if t.name().ends_with("64") { 8 } else { 4 });
        }
    }
}
