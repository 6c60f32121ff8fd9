//! GPU tests of every candidate single-pass [`Policy`] (blocked and
//! warp-striped layouts, look-back depths 1 and 4, one tile per block and
//! persistent pipelined blocks, register caps) through the `*_into`
//! functions with `CompactOptions::single_pass(policy)`, against the CPU references: lengths at the edges of a warp's
//! segment and of a tile (striped partial tiles leave whole warps empty),
//! past one 128-tile look-back window, densities 0 %, 1 %, 50 %, 100 % and a
//! random one, select by flags, select by predicate and stable partition,
//! the output past the count untouched; unaligned sub-views (the scalar
//! load paths); a many-tile stress run for the persistent schedule; and the
//! typed errors of the tuned entry points.
//!
//! Run on a GPU machine with
//! `cargo test -p parprims-compact --test gpu_tuned -- --include-ignored`.

mod support;

use compact::policy::{
    candidates, default_policy, policy, CompactPolicy, Policy, Schedule, TileLayout,
};
use compact::{
    cpu, partition_into, select_flagged_into, select_if_into, CompactOptions, CustomPredicate,
    Predicate, ScanAlgorithm,
};
use gpu_core::{DeviceBuffer, DeviceView, Element, Error, Gpu};
use parprims_testkit::rng::{random_flags, random_vec, SplitMix64};
use support::{
    all_poison, check_select_flagged_into, check_select_if_and_partition_into, fresh_seed,
    single_and_three_pass,
};

/// Lengths around the tuning's warp segment and tile, and past a window of
/// 32 · depth tiles.
fn lengths(tuning: &Policy) -> Vec<usize> {
    let tile = tuning.tile_items() as usize;
    let segment = 32 * tuning.items_per_thread() as usize;
    let window = 32 * tuning.lookback_width() as usize;
    let mut lengths = vec![
        0,
        1,
        31,
        33,
        segment - 1,
        segment + 1,
        tile - 1,
        tile,
        tile + 1,
        3 * tile + segment + 5,
        (window + 3) * tile + 77,
    ];
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

fn check_flagged<T: Element>(
    gpu: &Gpu,
    tuning: &Policy,
    input: DeviceView<'_, T>,
    flags: DeviceView<'_, u8>,
    expected: &[T],
    ctx: &str,
) {
    let options = CompactOptions::single_pass(*tuning);
    check_select_flagged_into(gpu, input, flags, expected, 7, options, ctx);
}

fn check_predicate<T: Element>(
    gpu: &Gpu,
    tuning: &Policy,
    input: DeviceView<'_, T>,
    host_input: &[T],
    predicate: &Predicate<T>,
    ctx: &str,
) {
    let options = CompactOptions::single_pass(*tuning);
    check_select_if_and_partition_into(gpu, input, host_input, predicate, options, ctx);
}

fn every_candidate<T: Element>(element_bytes: usize) {
    assert_eq!(T::BYTES, element_bytes);
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let mut rng = SplitMix64::new(seed);
    for tuning in candidates(element_bytes) {
        for n in lengths(tuning) {
            for density in [0.0, 0.01, 0.5, 1.0, rng.next_f64()] {
                let case_seed = rng.next_u64() | 1;
                let ctx = format!(
                    "{} {} n={n} density={density} seed={case_seed:#x}",
                    T::SUFFIX,
                    tuning.name()
                );
                let input: Vec<T> = random_vec(n, case_seed, 0.0, 1000.0);
                let flags = random_flags(n, case_seed ^ 0x9e37, density);
                let d_input = DeviceBuffer::from_host(&gpu, &input).expect(&ctx);
                let d_flags = DeviceBuffer::from_host(&gpu, &flags).expect(&ctx);
                let (view, flags_view) = (d_input.view(), d_flags.view());
                let expected = cpu::select_flagged(&input, &flags).expect("equal lengths");
                check_flagged(&gpu, tuning, view, flags_view, &expected, &ctx);
                let predicate = Predicate::Lt(T::from_f64((density * 1000.0).round()));
                check_predicate(&gpu, tuning, view, &input, &predicate, &ctx);
            }
        }
    }
}

/// One test per element type, each running [`every_candidate`].
macro_rules! every_candidate_per_type {
    ($($name:ident: $t:ty, $bytes:expr;)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            every_candidate::<$t>($bytes);
        }
    )*};
}

every_candidate_per_type! {
    every_4_byte_candidate_i32: i32, 4;
    every_4_byte_candidate_f32: f32, 4;
    every_8_byte_candidate_u64: u64, 8;
    every_8_byte_candidate_f64: f64, 8;
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unaligned_views_and_nan_take_the_scalar_paths() {
    // Sub-views one element in: no 16-byte vector (or u32/u16 flag word)
    // loads; every layout must fall back to scalar loads and stay exact.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    for bytes in [4usize, 8] {
        for tuning in candidates(bytes) {
            let n = 2 * tuning.tile_items() as usize + 32 * tuning.items_per_thread() as usize + 3;
            let flags = random_flags(n + 1, seed ^ 1, 0.5);
            let d_flags = DeviceBuffer::from_host(&gpu, &flags).expect("upload");
            let flags_view = d_flags.slice(1..).expect("in range");
            let ctx = format!("unaligned {bytes}-byte {}", tuning.name());
            if bytes == 4 {
                let mut input: Vec<f32> = random_vec(n + 1, seed, -10.0, 10.0);
                for (i, v) in input.iter_mut().enumerate() {
                    if i % 7 == 3 {
                        *v = f32::NAN;
                    }
                }
                let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
                let view = d_input.slice(1..).expect("in range");
                let expected = cpu::select_flagged(&input[1..], &flags[1..]).expect("lengths");
                check_flagged(&gpu, tuning, view, flags_view, &expected, &ctx);
                for predicate in [
                    Predicate::Ge(0.5f32),
                    Predicate::Ne(1.0f32),
                    Predicate::InRange {
                        low: -2.0f32,
                        high: 3.0,
                    },
                ] {
                    check_predicate(&gpu, tuning, view, &input[1..], &predicate, &ctx);
                }
            } else {
                let input: Vec<i64> = random_vec(n + 1, seed, -100.0, 100.0);
                let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
                let view = d_input.slice(1..).expect("in range");
                let expected = cpu::select_flagged(&input[1..], &flags[1..]).expect("lengths");
                check_flagged(&gpu, tuning, view, flags_view, &expected, &ctx);
                check_predicate(&gpu, tuning, view, &input[1..], &Predicate::Gt(-7i64), &ctx);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn persistent_lookback_stress_many_tiles_repeated() {
    // 2^24 + 5 items: thousands of tiles per launch, each block looping over
    // many of them; repeated so races get a chance. At the quick scale
    // (`parprims_testkit::testing`) 2^20 + 5 items.
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let seed = fresh_seed();
    let n = parprims_testkit::testing::scaled(1usize << 24, 1 << 20) + 5;
    let input: Vec<u32> = random_vec(n, seed, 0.0, 1000.0);
    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
    for (round, density) in [0.5, 0.001, 0.999].into_iter().enumerate() {
        let flags = random_flags(n, seed ^ round as u64, density);
        let d_flags = DeviceBuffer::from_host(&gpu, &flags).expect("upload");
        let expected = cpu::select_flagged(&input, &flags).expect("lengths");
        for tuning in candidates(4)
            .iter()
            .filter(|t| t.schedule() == Schedule::Persistent)
        {
            let ctx = format!("stress {} density={density}", tuning.name());
            let (view, flags_view) = (d_input.view(), d_flags.view());
            for _ in 0..2 {
                check_flagged(&gpu, tuning, view, flags_view, &expected, &ctx);
            }
        }
    }
    let wide: Vec<f64> = random_vec(n, seed ^ 77, 0.0, 1000.0);
    let d_wide = DeviceBuffer::from_host(&gpu, &wide).expect("upload");
    for tuning in candidates(8) {
        check_predicate(
            &gpu,
            tuning,
            d_wide.view(),
            &wide,
            &Predicate::InRange {
                low: 100.0,
                high: 700.0,
            },
            &format!("stress f64 {}", tuning.name()),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_entry_points_refuse_bad_arguments_and_write_nothing() {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let n = 1000;
    let input: Vec<i32> = (0..n as i32).collect();
    let d_input = DeviceBuffer::from_host(&gpu, &input).expect("upload");
    let d_flags = DeviceBuffer::from_host(&gpu, &vec![1u8; n]).expect("upload");
    let mut out = DeviceBuffer::<i32>::poisoned(&gpu, n).expect("alloc");
    let mut count = DeviceBuffer::<u64>::poisoned(&gpu, 1).expect("alloc");
    let good = candidates(4)[6];
    // Not a catalogued candidate.
    let stray = policy(64, 16, TileLayout::WarpStriped, 2, Schedule::Persistent);
    let e = select_flagged_into(
        &gpu,
        d_input.view(),
        d_flags.view(),
        out.view_mut(),
        count.view_mut(),
        CompactOptions::single_pass(stray),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "tuning", .. }),
        "{e}"
    );
    // An 8-byte candidate for 4-byte items, and an invalid shape.
    let eight = candidates(8)[2];
    assert!(select_if_into(
        &gpu,
        d_input.view(),
        &Predicate::Gt(3),
        out.view_mut(),
        count.view_mut(),
        CompactOptions::single_pass(eight),
    )
    .is_err());
    // A custom predicate.
    let custom = Predicate::Custom(
        CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0).expect("valid"),
    );
    let e = partition_into(
        &gpu,
        d_input.view(),
        &custom,
        out.view_mut(),
        count.view_mut(),
        CompactOptions::single_pass(good),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "predicate",
                ..
            }
        ),
        "{e}"
    );
    // A short output.
    let mut short = DeviceBuffer::<i32>::poisoned(&gpu, n - 1).expect("alloc");
    assert!(select_flagged_into(
        &gpu,
        d_input.view(),
        d_flags.view(),
        short.view_mut(),
        count.view_mut(),
        CompactOptions::single_pass(good),
    )
    .is_err());
    assert!(all_poison(&out.to_host(&gpu).expect("download")));
    assert!(all_poison(&short.to_host(&gpu).expect("download")));
    assert!(all_poison(&count.to_host(&gpu).expect("download")));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_are_kept_per_context() {
    // Built-in kernels are kept per (context, module, entry): a second
    // handle, a dropped-and-reopened device and a second stream must all
    // get working kernels; back-to-back enqueues should cost microseconds of
    // host time, not tens (printed, not asserted: host timing is noisy).
    let seed = fresh_seed();
    let n = 3 * 4096 + 17;
    let input: Vec<i32> = random_vec(n, seed, -100.0, 100.0);
    let flags = random_flags(n, seed ^ 3, 0.4);
    let expected = cpu::select_flagged(&input, &flags).expect("lengths");
    let predicate = Predicate::Lt(10i32);
    let expected_if = cpu::select_if(&input, &predicate);
    let run = |gpu: &Gpu, label: &str| {
        let d_input = DeviceBuffer::from_host(gpu, &input).expect("upload");
        let d_flags = DeviceBuffer::from_host(gpu, &flags).expect("upload");
        for tuning in [default_policy::<i32>(), candidates(4)[6]] {
            let ctx = format!("{label} {}", tuning.name());
            let (view, flags_view) = (d_input.view(), d_flags.view());
            check_flagged(gpu, &tuning, view, flags_view, &expected, &ctx);
            check_predicate(gpu, &tuning, view, &input, &predicate, &ctx);
        }
        // The untuned entry points (main module, count pass, three-pass).
        for algorithm in single_and_three_pass(ScanAlgorithm::Blelloch) {
            let got =
                compact::select_if(gpu, d_input.view(), &predicate, algorithm).expect("select_if");
            assert_eq!(got.items.to_host(gpu).expect("download"), expected_if);
            assert_eq!(
                compact::count_if(gpu, d_input.view(), &predicate).expect("count"),
                expected_if.len()
            );
        }
        let mut out = DeviceBuffer::<i32>::poisoned(gpu, n).expect("alloc");
        let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect("alloc");
        gpu.synchronize().expect("sync");
        let started = std::time::Instant::now();
        let calls = 200;
        for _ in 0..calls {
            compact::select_flagged_into(
                gpu,
                d_input.view(),
                d_flags.view(),
                out.view_mut(),
                count.view_mut(),
                compact::CompactAlgorithm::SinglePass,
            )
            .expect("enqueue");
        }
        let host_us = started.elapsed().as_secs_f64() * 1e6 / calls as f64;
        assert_eq!(
            count.to_host(gpu).expect("download")[0] as usize,
            expected.len()
        );
        println!("{label}: {host_us:.1} us of host time per select_flagged_into enqueue");
    };
    let first = Gpu::new(0).expect("a CUDA GPU");
    run(&first, "first handle");
    run(&first.with_new_stream().expect("stream"), "second stream");
    drop(first);
    let reopened = Gpu::new(0).expect("a CUDA GPU");
    run(&reopened, "reopened");
}
