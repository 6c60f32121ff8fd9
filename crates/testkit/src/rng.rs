//! A small, fast, reproducible generator for test and benchmark inputs.
//!
//! SplitMix64 (Steele, Lea & Flood 2014): one 64-bit state, full period,
//! good enough statistics for inputs; no dependency.

use gpu_core::Element;

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform integer in `[0, bound)`; `bound` > 0.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

/// `len` values drawn uniformly from `[low, high)` (integers: whole numbers
/// in that range), generated in parallel chunks on every CPU core.
/// Reproducible for a given seed whatever the core count.
pub fn random_vec<T: Element>(len: usize, seed: u64, low: f64, high: f64) -> Vec<T> {
    const CHUNK: usize = 1 << 20;
    let mut out = vec![T::zero(); len];
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(len.div_ceil(CHUNK).max(1));
    let span = high - low;
    let chunks: Vec<(usize, &mut [T])> = out.chunks_mut(CHUNK).enumerate().collect();
    let per_worker = chunks.len().div_ceil(workers.max(1)).max(1);
    let mut groups: Vec<Vec<(usize, &mut [T])>> = Vec::new();
    let mut iter = chunks.into_iter().peekable();
    while iter.peek().is_some() {
        groups.push(iter.by_ref().take(per_worker).collect());
    }
    std::thread::scope(|scope| {
        for group in groups {
            scope.spawn(move || {
                for (index, chunk) in group {
                    let mut rng =
                        SplitMix64::new(seed ^ (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
                    for value in chunk.iter_mut() {
                        let x = low + rng.next_f64() * span;
                        *value = T::from_f64(if T::IS_FLOAT { x } else { x.floor() });
                    }
                }
            });
        }
    });
    out
}

/// `len` bytes that are non-zero with probability `keep` (the non-zero
/// values vary, 1..=255, so "non-zero" rather than "== 1" is what selects).
pub fn random_flags(len: usize, seed: u64, keep: f64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|_| {
            if rng.next_f64() < keep {
                1 + rng.below(255) as u8
            } else {
                0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_vec_is_reproducible_and_in_range() {
        let a: Vec<i32> = random_vec(3_000_000, 42, -100.0, 100.0);
        let b: Vec<i32> = random_vec(3_000_000, 42, -100.0, 100.0);
        assert_eq!(a, b);
        assert!(a.iter().all(|&x| (-100..100).contains(&x)));
        assert!(a.iter().any(|&x| x != a[0]));
        let f: Vec<f32> = random_vec(1000, 1, 0.0, 1.0);
        assert!(f.iter().all(|&x| (0.0..1.0).contains(&x)));
    }

    #[test]
    fn flags_have_the_density_asked_for() {
        let flags = random_flags(100_000, 3, 0.5);
        let kept = flags.iter().filter(|&&f| f != 0).count();
        assert!((45_000..55_000).contains(&kept));
        assert!(flags.iter().any(|&f| f > 1));
        assert!(random_flags(1000, 3, 0.0).iter().all(|&f| f == 0));
        assert!(random_flags(1000, 3, 1.0).iter().all(|&f| f != 0));
    }
}
