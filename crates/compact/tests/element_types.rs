//! The small integers (`i8`, `u8`, `i16`, `u16`) through compaction: the
//! catalog holds their modules, NVRTC compiles them, the CPU references
//! hold their properties, and (on a GPU) `select_flagged`, `select_if`,
//! `partition` and `count_if` match the references exactly.
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; the others run
//! everywhere (the NVRTC one wherever NVRTC is, and must, with
//! `PARPRIMS_REQUIRE_NVRTC=1`).

use std::sync::OnceLock;

use compact::{cpu, CompactAlgorithm, CompactOptions, Predicate};
use gpu_core::kernel::{compile_cubin, cubin_defines};
use gpu_core::{DeviceBuffer, Element, Gpu};
use parprims_testkit::rng::{random_flags, SplitMix64};
use proptest::prelude::*;

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new(0).expect("a CUDA GPU"))
}

/// `len` values over the type's whole range.
fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let (low, high) = (T::lowest().to_f64(), T::highest().to_f64());
    (0..len)
        .map(|_| T::from_f64((low + rng.next_f64() * (high - low + 1.0)).floor()))
        .collect()
}

/// A predicate of every kind, around the middle of the type's range.
fn predicates<T: Element>() -> Vec<Predicate<T>> {
    let low = T::from_f64(T::lowest().to_f64() / 4.0);
    let high = T::from_f64(T::highest().to_f64() / 2.0);
    vec![
        Predicate::NonZero,
        Predicate::Eq(T::zero()),
        Predicate::Ne(T::one()),
        Predicate::Lt(high),
        Predicate::Le(low),
        Predicate::Gt(low),
        Predicate::Ge(high),
        Predicate::InRange { low, high },
    ]
}

// ---- CPU-only tests (run in CI) ----

#[test]
fn the_catalog_holds_the_small_integers() {
    let catalog = compact::kernel_catalog();
    for suffix in ["i8", "u8", "i16", "u16"] {
        assert!(
            catalog.iter().any(|m| m
                .entries()
                .iter()
                .any(|e| e.ends_with(&format!("_{suffix}")))),
            "no {suffix} entry in the catalog"
        );
    }
}

#[test]
fn the_small_integer_modules_compile_with_nvrtc() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    // Each type's built-in module (flags, predicates, count, three-pass)
    // and its custom-predicate module: the only two (the 8-byte default
    // tuning, no candidates).
    for suffix in ["i8", "u8", "i16", "u16"] {
        let ours: Vec<_> = compact::kernel_catalog()
            .into_iter()
            .filter(|m| {
                m.entries()
                    .iter()
                    .all(|e| e.ends_with(&format!("_{suffix}")))
            })
            .collect();
        assert_eq!(ours.len(), 2, "{suffix}");
        for module in &ours {
            let cubin = compile_cubin(module, "sm_80").unwrap_or_else(|e| panic!("{e}"));
            for entry in module.entries() {
                assert!(cubin_defines(&cubin, entry), "{entry} missing");
            }
        }
    }
}

fn cpu_properties<T: Element>(len: usize, seed: u64) {
    let input = random::<T>(len, seed);
    for predicate in predicates::<T>() {
        let kept = cpu::select_if(&input, &predicate);
        assert_eq!(kept.len(), cpu::count_if(&input, &predicate));
        assert!(kept.iter().all(|&x| predicate.evaluate(x)));
        let (parted, count) = cpu::partition(&input, &predicate);
        assert_eq!(&parted[..count], &kept[..]);
        assert_eq!(cpu::map_scan_scatter(&input, &predicate), kept);
    }
    let flags = random_flags(len, seed ^ 9, 0.3);
    assert_eq!(
        cpu::select_flagged(&input, &flags).unwrap(),
        cpu::map_scan_scatter_flagged(&input, &flags).unwrap()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cpu_references_agree_for_small_integers(len in 0usize..3000, seed: u64) {
        cpu_properties::<i8>(len, seed);
        cpu_properties::<u8>(len, seed);
        cpu_properties::<i16>(len, seed);
        cpu_properties::<u16>(len, seed);
    }
}

// ---- GPU tests ----

/// Every operation and algorithm (the single pass in its blocked layout) on
/// one input, exactly against the CPU.
fn check_on_gpu<T: Element>(len: usize, seed: u64) {
    let gpu = gpu();
    let host = random::<T>(len, seed);
    let flags_host = random_flags(len, seed ^ 9, 0.3);
    let input = DeviceBuffer::from_host(gpu, &host).unwrap();
    let flags = DeviceBuffer::from_host(gpu, &flags_host).unwrap();
    for algorithm in CompactAlgorithm::all() {
        let options = CompactOptions::new(algorithm);
        let got = compact::select_flagged(gpu, input.view(), flags.view(), options).unwrap();
        assert_eq!(
            got.items.to_host(gpu).unwrap(),
            cpu::select_flagged(&host, &flags_host).unwrap(),
            "{} n={len} {algorithm:?} flags",
            T::SUFFIX
        );
        for predicate in predicates::<T>() {
            let expected = cpu::select_if(&host, &predicate);
            let got = compact::select_if(gpu, input.view(), &predicate, options).unwrap();
            assert_eq!(got.count, expected.len());
            assert_eq!(
                got.items.to_host(gpu).unwrap(),
                expected,
                "{} n={len}",
                T::SUFFIX
            );
            let (parted, count) = cpu::partition(&host, &predicate);
            let (items, kept) = compact::partition(gpu, input.view(), &predicate, options).unwrap();
            assert_eq!(kept, count);
            assert_eq!(items.to_host(gpu).unwrap(), parted);
        }
    }
    // Views that start off a 16-byte boundary take the scalar loads.
    if len > 3 {
        let view = input.slice(3..).unwrap();
        let got = compact::select_flagged(
            gpu,
            view,
            flags.slice(3..).unwrap(),
            CompactAlgorithm::SinglePass,
        )
        .unwrap();
        assert_eq!(
            got.items.to_host(gpu).unwrap(),
            cpu::select_flagged(&host[3..], &flags_host[3..]).unwrap(),
            "{} n={len} single pass, offset 3",
            T::SUFFIX
        );
    }
    for predicate in predicates::<T>() {
        assert_eq!(
            compact::count_if(gpu, input.view(), &predicate).unwrap(),
            cpu::count_if(&host, &predicate)
        );
    }
}

/// Lengths biased to edges: empty, one, a warp ± 1, a 256 × 16 tile ± 1,
/// many tiles.
const LENGTHS: [usize; 9] = [0, 1, 31, 33, 4095, 4096, 4097, 100_003, 1 << 20];

macro_rules! gpu_tests {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            for (i, &len) in LENGTHS.iter().enumerate() {
                check_on_gpu::<$t>(len, 0xc0 + i as u64);
            }
            proptest!(ProptestConfig::with_cases(16), |(len in 0usize..20_000, seed in any::<u64>())| {
                check_on_gpu::<$t>(len, seed);
            });
        }
    )*};
}

gpu_tests! {
    gpu_compact_i8: i8,
    gpu_compact_u8: u8,
    gpu_compact_i16: i16,
    gpu_compact_u16: u16,
}

/// The 16-bit floats are refused with a typed error before anything runs;
/// their bits compact as `u16`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_compact_refuses_16_bit_floats() {
    let gpu = gpu();
    let halves: Vec<gpu_core::f16> = (0..100)
        .map(|i| gpu_core::f16::from_f32(i as f32))
        .collect();
    let flags_host = random_flags(halves.len(), 5, 0.5);
    let input = DeviceBuffer::from_host(gpu, &halves).unwrap();
    let flags = DeviceBuffer::from_host(gpu, &flags_host).unwrap();
    for algorithm in CompactAlgorithm::all() {
        let refused = compact::select_flagged(gpu, input.view(), flags.view(), algorithm);
        assert!(
            matches!(refused, Err(gpu_core::Error::Unsupported(_))),
            "{algorithm:?}"
        );
    }
    let positive = Predicate::Gt(gpu_core::f16::ZERO);
    assert!(matches!(
        compact::count_if(gpu, input.view(), &positive),
        Err(gpu_core::Error::Unsupported(_))
    ));
    // The same bits as u16, selected by flags.
    let bits: Vec<u16> = halves.iter().map(|h| h.to_bits()).collect();
    let as_u16 = DeviceBuffer::from_host(gpu, &bits).unwrap();
    let got = compact::select_flagged(
        gpu,
        as_u16.view(),
        flags.view(),
        CompactAlgorithm::SinglePass,
    )
    .unwrap();
    assert_eq!(
        got.items.to_host(gpu).unwrap(),
        cpu::select_flagged(&bits, &flags_host).unwrap()
    );
}
