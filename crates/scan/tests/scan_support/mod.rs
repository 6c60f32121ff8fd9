//! Shared helpers of the scan GPU tests (`tests/scan_*.rs`): the device,
//! inputs, a non-commutative custom operator, the checker against the CPU
//! reference, and one case run in every calling mode.
#![allow(dead_code)]

use gpu_core::{CustomOp, DeviceBuffer, Element, Gpu, Operator};
use parprims_testkit::rng::SplitMix64;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// The device handle of the calling test thread (each test runs on its own
/// thread). One handle per test rather than per binary: a handle's module
/// store compiles under a lock, so separate handles let the tests compile
/// their modules in parallel. Leaked on purpose (a few hundred handles on
/// the same primary context, one stream each).
pub fn gpu() -> &'static Gpu {
    thread_local! {
        static GPU: &'static Gpu = Box::leak(Box::new(Gpu::new(0).expect("a CUDA GPU")));
    }
    GPU.with(|gpu| *gpu)
}

/// A fresh seed per run, printed (to the captured output a failing test
/// shows) so that a failure can be replayed.
pub fn fresh_seed(what: &str) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed);
    let mut hash = gpu_core::kernel::Fnv64::new();
    hash.write(what.as_bytes());
    let seed = nanos ^ hash.finish();
    // Shown with a failing test's output, so the case can be replayed.
    eprintln!("{what}: seed {seed:#x}");
    seed
}

/// A random value for a test input. Integers: any bit pattern (sums wrap).
/// Floats: [0, 1) for sums (prefixes grow, so a lost carry shows), [-1, 1)
/// otherwise.
pub fn random_value<T: Element>(rng: &mut SplitMix64, for_float_sum: bool) -> T {
    if T::IS_FLOAT {
        let x = rng.next_f64();
        T::from_f64(if for_float_sum { x } else { 2.0 * x - 1.0 })
    } else {
        let bits = rng.next_u64();
        // Reinterpret the low bytes: every bit pattern of the type.
        let bytes = bits.to_le_bytes();
        bytemuck::pod_read_unaligned::<T>(&bytes[..T::BYTES])
    }
}

/// `n` random values (see [`random_value`]).
pub fn random_input<T: Element, O: Operator<T>>(n: usize, seed: u64, op: &O) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    let float_sum = op.name() == "sum";
    (0..n).map(|_| random_value(&mut rng, float_sum)).collect()
}

/// Associative, not commutative: composition of affine maps x ↦ a·x + b
/// modulo 2^16, packed as (a << 16) | b; first the left map, then the right.
/// Identity: (1, 0). A scan that swaps operands or regroups wrongly fails.
pub fn affine_op() -> CustomOp<u32> {
    CustomOp::new(
        "affine16",
        "((((a >> 16) * (b >> 16)) & 0xffffu) << 16) | \
         (((b >> 16) * (a & 0xffffu) + (b & 0xffffu)) & 0xffffu)",
        1u32 << 16,
        |a: u32, b: u32| {
            let (a1, b1) = (a >> 16, a & 0xffff);
            let (a2, b2) = (b >> 16, b & 0xffff);
            (((a1.wrapping_mul(a2)) & 0xffff) << 16)
                | ((a2.wrapping_mul(b1).wrapping_add(b2)) & 0xffff)
        },
    )
    .expect("a valid custom operator")
}

/// Machine epsilon of a float type (unused for integers).
fn epsilon<T: Element>() -> f64 {
    if T::BYTES == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// Checks a GPU scan against the CPU reference, element by element.
///
/// Integers, and floats under max/min (which round nothing), must match
/// exactly. Float sums are compared with an f64 reference: element i may be
/// off by eps · (|initial| + Σ_{j≤i} |x_j|) · (2·log2 n + n/256 + 16). The
/// log term covers tree-shaped combination; n/256 covers the serial chain of
/// tile aggregates of a look-back scan (tiles ≥ 2048 elements).
pub fn check<T: Element, O: Operator<T>>(
    what: &str,
    input: &[T],
    got: &[T],
    op: &O,
    kind: ScanKind<T>,
) {
    assert_eq!(got.len(), input.len(), "{what}: output length");
    let n = input.len();
    if T::IS_FLOAT && op.name() == "sum" {
        let factor = 2.0 * ((n + 2) as f64).log2() + n as f64 / 256.0 + 16.0;
        let eps = epsilon::<T>();
        let (mut exact, mut magnitude) = match kind {
            ScanKind::Inclusive => (0.0f64, 0.0f64),
            ScanKind::Exclusive { initial } | ScanKind::InclusiveFrom { initial } => {
                (initial.to_f64(), initial.to_f64().abs())
            }
        };
        for (i, (&x, &g)) in input.iter().zip(got).enumerate() {
            let (expected, scale) = match kind {
                ScanKind::Inclusive | ScanKind::InclusiveFrom { .. } => {
                    exact += x.to_f64();
                    magnitude += x.to_f64().abs();
                    (exact, magnitude)
                }
                ScanKind::Exclusive { .. } => {
                    let before = (exact, magnitude);
                    exact += x.to_f64();
                    magnitude += x.to_f64().abs();
                    before
                }
            };
            let tolerance = eps * scale * factor + f64::MIN_POSITIVE;
            let error = (g.to_f64() - expected).abs();
            assert!(
                error <= tolerance,
                "{what}: element {i} of {n}: got {g}, expected {expected} (error {error:e} > tolerance {tolerance:e})"
            );
        }
    } else {
        let expected = scan::cpu::scan(input, op, kind);
        if let Some(i) = (0..n).find(|&i| got[i] != expected[i]) {
            let lo = i.saturating_sub(2);
            let hi = (i + 3).min(n);
            panic!(
                "{what}: first mismatch at element {i} of {n}: got {:?}, expected {:?} (around: got {:?}, expected {:?})",
                got[i],
                expected[i],
                &got[lo..hi],
                &expected[lo..hi]
            );
        }
    }
}

/// How a case calls the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `scan::scan`, into a new buffer.
    New,
    /// `scan::scan_into`, into a poisoned buffer.
    Into,
    /// `scan::scan_in_place`.
    InPlace,
}

/// Every mode.
pub const MODES: [Mode; 3] = [Mode::New, Mode::Into, Mode::InPlace];

/// Runs one scan of `input` in `mode` and checks every element.
pub fn run_case<T: Element, O: Operator<T>>(
    input_device: &DeviceBuffer<T>,
    input: &[T],
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
    mode: Mode,
) {
    let gpu = gpu();
    let what = format!(
        "{} {}×{} n={} {:?} {:?} block {:?}",
        options.algorithm,
        T::SUFFIX,
        op.name(),
        input.len(),
        kind,
        mode,
        options.block_threads
    );
    let got = match mode {
        Mode::New => scan::scan(gpu, input_device.view(), op, kind, options)
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .to_host(gpu),
        Mode::Into => {
            let mut output =
                DeviceBuffer::<T>::poisoned(gpu, input.len()).expect("poisoned output");
            scan::scan_into(
                gpu,
                input_device.view(),
                output.view_mut(),
                op,
                kind,
                options,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            output.to_host(gpu)
        }
        Mode::InPlace => {
            let mut data = DeviceBuffer::from_host(gpu, input).expect("upload");
            scan::scan_in_place(gpu, data.view_mut(), op, kind, options)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            data.to_host(gpu)
        }
    }
    .unwrap_or_else(|e| panic!("{what}: download: {e}"));
    check(&what, input, &got, op, kind);
}

/// Tile sizes an algorithm's edges depend on, for block size `block`.
pub fn tiles_of(algorithm: ScanAlgorithm, block: u32) -> Vec<usize> {
    match algorithm.resolve() {
        ScanAlgorithm::HillisSteeleGlobal => vec![block as usize],
        ScanAlgorithm::HillisSteele => {
            vec![(block * scan::policy::HILLIS_STEELE_ITEMS_PER_THREAD) as usize]
        }
        ScanAlgorithm::Blelloch | ScanAlgorithm::BlellochPadded => {
            vec![(block * scan::policy::BLELLOCH_ITEMS_PER_THREAD) as usize]
        }
        // The tiles of the look-back's tuning table (one per element size;
        // both edges for either type, so a table change keeps them right)
        // and of its small inputs' policy.
        ScanAlgorithm::DecoupledLookback => scan::policy::LOOKBACK_TUNING
            .iter()
            .map(|(_, tuning)| tuning.tile_items() as usize)
            .chain([scan::policy::SMALL_INPUT_LOOKBACK_TUNING.tile_items() as usize])
            .collect(),
        // Reduce-then-scan: 256 × 16 four-byte or 256 × 8 eight-byte items.
        _ => vec![2048, 4096],
    }
}

/// Lengths biased to the edges for tiles `tiles`: 0, 1, 31, 32, 33, tile ± 1,
/// 2·tile ± 1, powers of two ± 1, and lengths needing two and three levels
/// of the recursive driver (tile² + 1), capped at `max`.
pub fn edge_lengths(tiles: &[usize], max: usize) -> Vec<usize> {
    let mut lengths = vec![0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 129, 1000];
    for &tile in tiles {
        for base in [tile / 2, tile, 2 * tile, 3 * tile, tile * tile] {
            lengths.extend([base.saturating_sub(1), base, base + 1]);
        }
    }
    for k in [10u32, 12, 16, 17] {
        let p = 1usize << k;
        lengths.extend([p - 1, p + 1]);
    }
    lengths.retain(|&n| n <= max);
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// Block sizes a suite runs an algorithm with: the default, and for the
/// teaching variants the extremes (and 96, not a power of two, where
/// allowed).
pub fn block_options(algorithm: ScanAlgorithm) -> Vec<ScanOptions> {
    let base = ScanOptions::new(algorithm);
    if !algorithm.takes_block_threads() {
        return vec![base];
    }
    let mut options = vec![
        base,
        base.with_block_threads(32),
        base.with_block_threads(1024),
    ];
    if !algorithm.needs_power_of_two_block() {
        options.push(base.with_block_threads(96));
    }
    options
}
