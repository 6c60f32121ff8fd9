//! Inputs for lab runs: fresh random values every run (a seed from the
//! clock unless `--seed` replays one), never all zeros.
//!
//! Values are whole numbers of small magnitude, for floats too: `-8..=8`
//! (mean 0) for signed types and `0..=15` for unsigned ones. That keeps every
//! sum the primitives form exact in any order (a mean-zero random walk of
//! 2^28 steps of at most 8 stays around 10^5, far below 2^24, the edge of
//! `f32`'s whole numbers), so a
//! float result can be checked almost as strictly as an integer one, while
//! the kernels do exactly the work they do on any data. Integer sums of
//! unsigned values may wrap past `u32::MAX`; wrapping is what both the GPU
//! and the CPU reference do.

use gpu_core::Element;
use parprims_testkit::rng::{random_flags, random_vec, SplitMix64};

/// A seed from the clock (nanoseconds mixed with the process id).
pub fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    SplitMix64::new(nanos ^ (u64::from(std::process::id()) << 32)).next_u64()
}

/// The seed of input number `stream` of a run with base seed `seed`: each
/// input of a run gets its own, reproducibly.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    SplitMix64::new(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

/// The range lab values are drawn from for `T`.
pub fn value_range<T: Element>() -> (f64, f64) {
    if T::IS_SIGNED {
        // floor() of [-8, 9) gives -8..=8 with equal weights: mean 0, so
        // long sums do not drift.
        (-8.0, 9.0)
    } else {
        (0.0, 16.0)
    }
}

/// `len` random whole-number values of type `T` (see the module docs).
pub fn values<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let (low, high) = value_range::<T>();
    let mut out: Vec<T> = random_vec(len, seed, low, high);
    // random_vec keeps floats fractional: make them whole (the floor stays
    // in range), so sums are exact in any order.
    if T::IS_FLOAT {
        for v in &mut out {
            *v = T::from_f64(v.to_f64().floor());
        }
    }
    // Never all zeros, whatever the length and the draw.
    if !out.is_empty() && out.iter().all(|v| *v == T::zero()) {
        out[0] = T::one();
    }
    out
}

/// `len` flag bytes, non-zero with probability `keep` (values 1..=255).
pub fn flags(len: usize, seed: u64, keep: f64) -> Vec<u8> {
    random_flags(len, seed, keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_whole_small_and_not_all_zero() {
        let f: Vec<f32> = values(100_000, 7);
        assert!(f
            .iter()
            .all(|v| v.fract() == 0.0 && (-8.0..=8.0).contains(v)));
        let mean = f.iter().map(|v| *v as f64).sum::<f64>() / f.len() as f64;
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!(f.iter().any(|v| *v < 0.0) && f.iter().any(|v| *v > 0.0));
        let u: Vec<u32> = values(10_000, 7);
        assert!(u.iter().all(|v| *v < 16));
        let one: Vec<i32> = values(1, 0);
        assert_eq!(one.len(), 1);
        let empty: Vec<i64> = values(0, 0);
        assert!(empty.is_empty());
        // Small lengths are never all zeros.
        for seed in 0..200 {
            let v: Vec<i32> = values(2, seed);
            assert!(v.iter().any(|x| *x != 0));
        }
    }

    #[test]
    fn seeds_are_reproducible_and_distinct() {
        assert_eq!(derive_seed(5, 1), derive_seed(5, 1));
        assert_ne!(derive_seed(5, 1), derive_seed(5, 2));
        let a: Vec<f64> = values(1000, derive_seed(9, 0));
        let b: Vec<f64> = values(1000, derive_seed(9, 0));
        assert_eq!(a, b);
        let flags = flags(10_000, 3, 0.5);
        let kept = flags.iter().filter(|f| **f != 0).count();
        assert!((4_000..6_000).contains(&kept));
    }
}
