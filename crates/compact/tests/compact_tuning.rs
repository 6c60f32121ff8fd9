//! The single-pass tuning sweep at the headline size (issue 4): every
//! candidate [`Policy`] for `select_flagged` (50 % random byte flags) and
//! `select_if(x > 0)` on 2^28 `i32`, then `select_if(x > 0)` on 2^28 `f32`
//! (the persistent candidates and the default) and both on 2^28 `u64` (every
//! 8-byte candidate). Each variant is first checked exactly against the CPU
//! reference (count, kept items, the output past the count untouched), then
//! timed: median of 20 runs after 3 warm-ups, CUDA events
//! (`parprims_testkit::bench::time_device`), output and count poisoned before every
//! run. One line per variant: name, ms, GB/s from the headline byte count
//! (`compact::bytes_moved`: 5n + 4·kept by flags, 4n + 4·kept by predicate
//! for i32) and the fraction of the device-to-device copy ceiling measured
//! in the same process.
//!
//! `cargo test -p parprims-compact --release --test compact_tuning -- --ignored --nocapture`
//! (about a minute on an H100, NVRTC compiles included; needs ~8 GB of
//! device memory).

mod support;

use compact::policy::{
    candidates, default_policy, select_if_policy, CompactPolicy, Policy, Schedule,
};
use compact::{
    bytes_moved, cpu, partition_bytes_moved, partition_into, select_flagged_into, select_if_into,
    CompactOptions, Predicate,
};
use gpu_core::{DeviceBuffer, Element, Gpu};
use parprims_testkit::bench::{copy_ceiling, time_device, CopyCeiling, Repetitions};
use parprims_testkit::rng::{random_flags, random_vec};
use support::{all_poison, bits, fresh_seed};

const N: usize = 1 << 28;

/// What one sweep line compacts.
struct Case<'a, T: Element> {
    label: &'static str,
    input: &'a DeviceBuffer<T>,
    flags: Option<&'a DeviceBuffer<u8>>,
    predicate: Predicate<T>,
    expected: &'a [T],
}

fn run_once<T: Element>(
    gpu: &Gpu,
    case: &Case<'_, T>,
    tuning: &Policy,
    output: &mut DeviceBuffer<T>,
    count: &mut DeviceBuffer<u64>,
) -> gpu_core::Result<()> {
    match case.flags {
        Some(flags) => select_flagged_into(
            gpu,
            case.input.view(),
            flags.view(),
            output.view_mut(),
            count.view_mut(),
            CompactOptions::single_pass(*tuning),
        ),
        None => select_if_into(
            gpu,
            case.input.view(),
            &case.predicate,
            output.view_mut(),
            count.view_mut(),
            CompactOptions::single_pass(*tuning),
        ),
    }
}

/// Checks `tuning` exactly, times it, prints its line; returns the median ms.
fn measure<T: Element>(
    gpu: &Gpu,
    ceiling: &CopyCeiling,
    case: &Case<'_, T>,
    tuning: &Policy,
    reps: Repetitions,
) -> f64 {
    let n = case.input.len();
    let ctx = format!("{} {} {}", case.label, T::SUFFIX, tuning.name());
    let mut output = DeviceBuffer::<T>::poisoned(gpu, n).expect(&ctx);
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect(&ctx);

    // Exact check first (this also compiles the module, outside the timing).
    run_once(gpu, case, tuning, &mut output, &mut count).expect(&ctx);
    let kept = count.to_host(gpu).expect(&ctx)[0] as usize;
    assert_eq!(kept, case.expected.len(), "{ctx}: count");
    let got = output.slice(..kept).expect(&ctx).to_host(gpu).expect(&ctx);
    assert!(
        bits(&got) == bits(case.expected),
        "{ctx}: kept items differ"
    );
    let tail_end = (kept + 65536).min(n);
    let tail = output
        .slice(kept..tail_end)
        .expect(&ctx)
        .to_host(gpu)
        .expect(&ctx);
    assert!(all_poison(&tail), "{ctx}: wrote past the count");

    // Both closures need the buffers mutably, one at a time.
    let buffers = std::cell::RefCell::new((output, count));
    let timing = time_device(
        gpu,
        reps,
        |_| {
            let (output, count) = &mut *buffers.borrow_mut();
            output.view_mut().fill(gpu, T::poison())?;
            count.view_mut().fill(gpu, u64::MAX)
        },
        |_| {
            let (output, count) = &mut *buffers.borrow_mut();
            run_once(gpu, case, tuning, output, count)
        },
    )
    .expect(&ctx);
    let bytes = bytes_moved(n, kept, T::BYTES, case.flags.is_some()) as f64;
    let gbps = timing.gbps(bytes);
    println!(
        "{:<16} {:<4} {:<40} {:>8.4} ms  {:>7.1} GB/s  {:.3} of copy ceiling  (min {:.4} max {:.4})",
        case.label,
        T::SUFFIX,
        tuning.name(),
        timing.median_ms,
        gbps,
        ceiling.fraction(gbps),
        timing.min_ms,
        timing.max_ms
    );
    timing.median_ms
}

/// Median of 20 after 3 warm-ups: the headline size's repetitions.
const HEADLINE_REPS: Repetitions = Repetitions {
    warmup: 3,
    timed: 20,
};

fn sweep<T: Element>(
    gpu: &Gpu,
    ceiling: &CopyCeiling,
    case: &Case<'_, T>,
    tunings: &[Policy],
    reps: Repetitions,
) {
    let mut best: Option<(f64, Policy)> = None;
    for tuning in tunings {
        let ms = measure(gpu, ceiling, case, tuning, reps);
        if best.is_none_or(|(b, _)| ms < b) {
            best = Some((ms, *tuning));
        }
    }
    if let Some((ms, tuning)) = best {
        // select_if has a table of its own.
        let default = if case.flags.is_some() {
            default_policy::<T>()
        } else {
            select_if_policy::<T>()
        };
        println!(
            "best {} {}: {} at {ms:.4} ms (default {})",
            case.label,
            T::SUFFIX,
            tuning.name(),
            default.name()
        );
    }
}

/// Every candidate for `T`'s size on `values`, by `flags` (host and device
/// copies) and by `predicate` (the sweep line `label`).
fn sweep_flags_and_predicate<T: Element>(
    gpu: &Gpu,
    ceiling: &CopyCeiling,
    values: Vec<T>,
    (flags_host, flags): (&[u8], &DeviceBuffer<u8>),
    predicate: Predicate<T>,
    label: &'static str,
    (tunings, reps): (&[Policy], Repetitions),
) {
    let input = DeviceBuffer::from_host(gpu, &values).expect("upload");
    let by_flags = cpu::select_flagged(&values, flags_host).expect("lengths");
    let by_predicate = cpu::select_if(&values, &predicate);
    drop(values);
    let flagged = Case {
        label: "select_flagged",
        input: &input,
        flags: Some(flags),
        predicate: predicate.clone(),
        expected: &by_flags,
    };
    sweep(gpu, ceiling, &flagged, tunings, reps);
    let by_predicate = Case {
        label,
        input: &input,
        flags: None,
        predicate,
        expected: &by_predicate,
    };
    sweep(gpu, ceiling, &by_predicate, tunings, reps);
}

/// The copy ceiling of a 1 GiB copy, printed with the device.
fn headline_ceiling(gpu: &Gpu) -> CopyCeiling {
    let ceiling = copy_ceiling(gpu, 1 << 30, Repetitions::default()).expect("copy ceiling");
    println!(
        "copy ceiling {:.0} GB/s (read + write) on {}",
        ceiling.gbps,
        gpu.info().summary()
    );
    ceiling
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn single_pass_tuning_sweep_at_2_28() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let ceiling = headline_ceiling(&gpu);
    let seed = fresh_seed();
    let flags_host = random_flags(N, seed ^ 0xf1a9, 0.5);
    let flags = DeviceBuffer::from_host(&gpu, &flags_host).expect("flags");

    // i32: every 4-byte candidate, by flags and by x > 0.
    let values: Vec<i32> = random_vec(N, seed, -1000.0, 1000.0);
    sweep_flags_and_predicate(
        &gpu,
        &ceiling,
        values,
        (&flags_host, &flags),
        Predicate::Gt(0),
        "select_if(x>0)",
        (candidates(4), HEADLINE_REPS),
    );

    // f32: the two defaults and the persistent candidates, by x > 0.
    {
        let values: Vec<f32> = random_vec(N, seed ^ 0xf32, -1000.0, 1000.0);
        let input = DeviceBuffer::from_host(&gpu, &values).expect("upload");
        let predicate = Predicate::Gt(0.0f32);
        let expected = cpu::select_if(&values, &predicate);
        drop(values);
        let case = Case {
            label: "select_if(x>0)",
            input: &input,
            flags: None,
            predicate,
            expected: &expected,
        };
        let tunings: Vec<Policy> = candidates(4)
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                *i == 0
                    || **t == select_if_policy::<f32>()
                    || **t == select_if_policy::<f32>().with_schedule(Schedule::TilePerBlock)
                    || t.schedule() == Schedule::Persistent
            })
            .map(|(_, t)| *t)
            .collect();
        sweep(&gpu, &ceiling, &case, &tunings, HEADLINE_REPS);
    }

    // u64: every 8-byte candidate, by flags and by x > 500.
    let values: Vec<u64> = random_vec(N, seed ^ 0x64, 0.0, 1000.0);
    sweep_flags_and_predicate(
        &gpu,
        &ceiling,
        values,
        (&flags_host, &flags),
        Predicate::Gt(500),
        "select_if(x>500)",
        (candidates(8), HEADLINE_REPS),
    );
}

/// Mid sizes: the 4-byte candidates a per-size policy could pick, for
/// `select_flagged` (50 % byte flags) and `select_if(x > 0)` on 2^20 …
/// 2^26 `i32`, each checked exactly and timed (median of 101) against a
/// device-to-device copy of the same input measured just before: the "of
/// copy ceiling" column is the same-size copy's time for the call's bytes
/// over the call's time.
#[test]
#[ignore = "needs a CUDA GPU"]
fn single_pass_mid_sizes_against_the_same_size_copy() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    println!("{}", gpu.info().summary());
    let reps = Repetitions {
        warmup: 5,
        timed: 101,
    };
    // The defaults, then the same with their tiles drawn from the counter.
    let mut tunings: Vec<Policy> = vec![
        default_policy::<i32>(),
        select_if_policy::<i32>(),
        default_policy::<i32>().with_schedule(Schedule::TilePerBlock),
        select_if_policy::<i32>().with_schedule(Schedule::TilePerBlock),
    ];
    for candidate in candidates(4) {
        let small_tile = candidate.block_threads() * candidate.items_per_thread() <= 4096;
        if small_tile
            && candidate.schedule() == Schedule::TilePerBlock
            && !tunings.contains(candidate)
        {
            tunings.push(*candidate);
        }
    }
    let seed = fresh_seed();
    for log2 in 20u32..=26 {
        let n = 1usize << log2;
        let same_size = copy_ceiling(&gpu, n * 4, reps).expect("same-size copy");
        println!(
            "n = 2^{log2}: copy {:.2} us",
            same_size.timing.median_ms * 1e3
        );
        let flags_host = random_flags(n, seed ^ 0xf1a9 ^ log2 as u64, 0.5);
        let flags = DeviceBuffer::from_host(&gpu, &flags_host).expect("flags");
        let values: Vec<i32> = random_vec(n, seed ^ log2 as u64, -1000.0, 1000.0);
        sweep_flags_and_predicate(
            &gpu,
            &same_size,
            values,
            (&flags_host, &flags),
            Predicate::Gt(0),
            "select_if(x>0)",
            (&tunings, reps),
        );
    }
}

/// The `select_if` default against its closest rivals at 2^28 (the
/// register-capped candidates and the flags default), `i32` and `f32`
/// (x > 0), and `partition(x > 0)` of the `i32` at each of them, in three
/// interleaved rounds, so that a drift of the machine
/// during the run shows as a spread between rounds, not as a difference
/// between policies.
#[test]
#[ignore = "needs a CUDA GPU"]
fn select_if_rivals_interleaved_at_2_28() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let ceiling = headline_ceiling(&gpu);
    let mut rivals = vec![select_if_policy::<i32>()];
    for candidate in candidates(4) {
        let capped = candidate.min_blocks_per_sm() > 0;
        if (capped || *candidate == default_policy::<i32>()) && !rivals.contains(candidate) {
            rivals.push(*candidate);
        }
    }
    let seed = fresh_seed();
    let ints: Vec<i32> = random_vec(N, seed, -1000.0, 1000.0);
    let floats: Vec<f32> = random_vec(N, seed ^ 0xf32, -1000.0, 1000.0);
    let int_input = DeviceBuffer::from_host(&gpu, &ints).expect("upload");
    let float_input = DeviceBuffer::from_host(&gpu, &floats).expect("upload");
    let int_expected = cpu::select_if(&ints, &Predicate::Gt(0));
    let float_expected = cpu::select_if(&floats, &Predicate::Gt(0.0f32));
    let partitioned = cpu::partition(&ints, &Predicate::Gt(0));
    drop((ints, floats));
    let int_case = Case {
        label: "select_if(x>0)",
        input: &int_input,
        flags: None,
        predicate: Predicate::Gt(0),
        expected: &int_expected,
    };
    let float_case = Case {
        label: "select_if(x>0)",
        input: &float_input,
        flags: None,
        predicate: Predicate::Gt(0.0f32),
        expected: &float_expected,
    };
    for round in 1..=3 {
        println!("round {round}");
        for tuning in &rivals {
            measure(&gpu, &ceiling, &int_case, tuning, HEADLINE_REPS);
            measure(&gpu, &ceiling, &float_case, tuning, HEADLINE_REPS);
            measure_partition(&gpu, &ceiling, &int_input, &partitioned, tuning);
        }
    }
}

/// `partition(x > 0)` of `input` with `tuning`: checked against the CPU's
/// partition (both halves in input order, and the count), then timed; one
/// line with the fraction of the ceiling at the partition's 3n·s bytes.
fn measure_partition(
    gpu: &Gpu,
    ceiling: &CopyCeiling,
    input: &DeviceBuffer<i32>,
    (expected, kept): &(Vec<i32>, usize),
    tuning: &Policy,
) {
    let n = input.len();
    let ctx = format!("partition(x>0) {}", tuning.name());
    let buffers = std::cell::RefCell::new((
        DeviceBuffer::<i32>::poisoned(gpu, n).expect(&ctx),
        DeviceBuffer::<u64>::poisoned(gpu, 1).expect(&ctx),
    ));
    let run = || {
        let (output, count) = &mut *buffers.borrow_mut();
        partition_into(
            gpu,
            input.view(),
            &Predicate::Gt(0),
            output.view_mut(),
            count.view_mut(),
            CompactOptions::single_pass(*tuning),
        )
    };
    run().expect(&ctx);
    {
        let (output, count) = &*buffers.borrow();
        assert_eq!(
            count.to_host(gpu).expect(&ctx)[0] as usize,
            *kept,
            "{ctx}: count"
        );
        assert!(
            output.to_host(gpu).expect(&ctx) == *expected,
            "{ctx}: partition differs"
        );
    }
    let timing = time_device(
        gpu,
        HEADLINE_REPS,
        |_| {
            let (output, count) = &mut *buffers.borrow_mut();
            output.view_mut().fill(gpu, i32::MIN)?;
            count.view_mut().fill(gpu, u64::MAX)
        },
        |_| run(),
    )
    .expect(&ctx);
    let gbps = timing.gbps(partition_bytes_moved(n, 4) as f64);
    println!(
        "{ctx:<62} {:>8.4} ms  {:>7.1} GB/s  {:.3} of copy ceiling",
        timing.median_ms,
        gbps,
        ceiling.fraction(gbps)
    );
}
