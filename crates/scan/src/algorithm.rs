//! The scan algorithms, as a run-time choice.

use std::fmt;

/// Which scan algorithm to run. `n` is the length, `T` the tile a block scans
/// (`tile_items`), `s` = `size_of::<T>()`; bytes are global-memory traffic
/// for an inclusive scan, as [`crate::bytes_moved`] counts it.
///
/// | variant | work | steps (barriers / launches) | bytes moved | launches | shared memory per block | deterministic |
/// |---|---|---|---|---|---|---|
/// | `HillisSteeleGlobal` | n log n | ⌈log2 n⌉ launches | ≈ 3n·s per step | ⌈log2 n⌉ | none | yes |
/// | `HillisSteele` | n log T | log2 T + 1 barriers per tile | ≈ 4n·s | 2·levels − 1 | 2T·s | yes |
/// | `Blelloch` | ≈ 2n | 2·log2 T levels per tile, 2·max(log2 B − 6, 0) + 2 block barriers | ≈ 4n·s | 2·levels − 1 | T·s | yes |
/// | `BlellochPadded` | ≈ 2n | as `Blelloch` | ≈ 4n·s | 2·levels − 1 | (T + T/32)·s | yes |
/// | `DecoupledLookback` | ≈ 2n | one pass | ≈ 2n·s | 1 | see `lookback.rs` | **not for floats** |
/// | `ReduceThenScan` | ≈ 3n | three passes per level | ≈ 3n·s | 3 for n ≤ T² (+2 per further level) | see `reduce_then_scan.rs` | yes |
///
/// "levels" is the number of recursion levels of the multi-block driver:
/// ⌈log_T n⌉ (2 for n ≤ T², 3 for n ≤ T³, …); each level is one block-scan
/// launch and, below the top, one uniform-add launch: 2·levels − 1 launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ScanAlgorithm {
    /// Hillis–Steele with one launch per step, ping-ponging between two
    /// global buffers: `out[i] = in[i−d] ⊕ in[i]` for d = 1, 2, 4, … < n.
    /// O(n log n) work, ⌈log2 n⌉ launches (+1 shift launch for an exclusive
    /// scan), ≈ 3n elements of traffic per step, no shared memory, needs an
    /// n-element temporary buffer. Deterministic. The teaching baseline:
    /// bandwidth-bound with log n passes, so far from the copy ceiling.
    HillisSteeleGlobal,
    /// Hillis–Steele per block, double-buffered in shared memory (one barrier
    /// per step), then the recursive multi-block driver: block scans write
    /// tile totals, the totals are scanned by the same method, a uniform add
    /// folds them in. Tile = `block_threads · 4` elements (four per thread).
    /// O(n log T) work, ≈ 4n elements of traffic, shared memory 2T elements
    /// per block. Deterministic (fixed combination tree).
    HillisSteele,
    /// Blelloch's work-efficient up-sweep / down-sweep per block, two
    /// elements per thread (tile = 2 · `block_threads`, a power of two), same
    /// recursive driver. O(n) work, 2·log2 T tree levels per tile (the leaf
    /// level in registers, the levels with ≤ 32 active threads in warp 0),
    /// ≈ 4n elements of traffic, T elements of shared memory per block;
    /// strided tree accesses cause bank conflicts (up to 32-way).
    /// Deterministic.
    Blelloch,
    /// [`ScanAlgorithm::Blelloch`] with shared index `i` stored at
    /// `i + (i >> 5)` (one padding word per 32 banks, GPU Gems 3 §39.2.3),
    /// which removes most bank conflicts of the tree's strided accesses.
    /// Shared memory T + T/32 elements per block. Deterministic.
    BlellochPadded,
    /// Single-pass scan with decoupled look-back (Merrill & Garland 2016):
    /// each tile publishes its aggregate and inclusive prefix, later tiles
    /// look back over a window of predecessors. ≈ 2n elements of traffic,
    /// one launch. The fastest. **Not run-to-run deterministic for
    /// floats**: how much of the prefix a tile combines from aggregates
    /// versus inclusive prefixes depends on timing, so float rounding varies
    /// between runs (integers are exact). The block size is part of its
    /// single-pass policy (`ScanOptions::with_policy`, [`crate::policy`]).
    DecoupledLookback,
    /// Reduce, then scan: per-tile totals, a scan of the totals, then a
    /// scan of each tile seeded with its prefix. ≈ 3n elements of traffic,
    /// a fixed combination order: the run-to-run
    /// deterministic choice for floats. The tile shape is its policy
    /// (`ScanOptions::with_policy`, [`crate::policy`]).
    /// (Launches: 2 per recursion level + 1, so 3 for n ≤ tile².)
    ReduceThenScan,
    /// The library's choice (the default): currently
    /// [`ScanAlgorithm::DecoupledLookback`].
    #[default]
    Auto,
}

impl ScanAlgorithm {
    /// Every variant, `Auto` last.
    pub const ALL: [ScanAlgorithm; 7] = [
        ScanAlgorithm::HillisSteeleGlobal,
        ScanAlgorithm::HillisSteele,
        ScanAlgorithm::Blelloch,
        ScanAlgorithm::BlellochPadded,
        ScanAlgorithm::DecoupledLookback,
        ScanAlgorithm::ReduceThenScan,
        ScanAlgorithm::Auto,
    ];

    /// The teaching variants, whose block size is selectable.
    pub const TEACHING: [ScanAlgorithm; 4] = [
        ScanAlgorithm::HillisSteeleGlobal,
        ScanAlgorithm::HillisSteele,
        ScanAlgorithm::Blelloch,
        ScanAlgorithm::BlellochPadded,
    ];

    /// Short name for tables, CSV rows and the command line.
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert_eq!(ScanAlgorithm::BlellochPadded.name(), "blelloch-padded");
    /// assert_eq!(ScanAlgorithm::BlellochPadded.to_string(), "blelloch-padded");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ScanAlgorithm::HillisSteeleGlobal => "hillis-steele-global",
            ScanAlgorithm::HillisSteele => "hillis-steele",
            ScanAlgorithm::Blelloch => "blelloch",
            ScanAlgorithm::BlellochPadded => "blelloch-padded",
            ScanAlgorithm::DecoupledLookback => "decoupled-lookback",
            ScanAlgorithm::ReduceThenScan => "reduce-then-scan",
            ScanAlgorithm::Auto => "auto",
        }
    }

    /// Parses a name as [`ScanAlgorithm::name`] writes it (case-insensitive;
    /// `_` accepted for `-`; `lookback` and `rts` as short forms).
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert_eq!(ScanAlgorithm::parse("Hillis_Steele"), Some(ScanAlgorithm::HillisSteele));
    /// assert_eq!(ScanAlgorithm::parse("lookback"), Some(ScanAlgorithm::DecoupledLookback));
    /// assert_eq!(ScanAlgorithm::parse("bitonic"), None);
    /// ```
    pub fn parse(name: &str) -> Option<ScanAlgorithm> {
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        match wanted.as_str() {
            "lookback" => return Some(ScanAlgorithm::DecoupledLookback),
            "rts" => return Some(ScanAlgorithm::ReduceThenScan),
            _ => {}
        }
        Self::ALL.into_iter().find(|a| a.name() == wanted)
    }

    /// The algorithm `Auto` stands for (itself for every other variant).
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert_eq!(ScanAlgorithm::Auto.resolve(), ScanAlgorithm::DecoupledLookback);
    /// assert_eq!(ScanAlgorithm::Blelloch.resolve(), ScanAlgorithm::Blelloch);
    /// ```
    pub fn resolve(self) -> ScanAlgorithm {
        match self {
            ScanAlgorithm::Auto => ScanAlgorithm::DecoupledLookback,
            other => other,
        }
    }

    /// Whether [`crate::ScanOptions::block_threads`] may be set (the
    /// teaching variants); the look-back and reduce-then-scan kernels use
    /// their own policies ([`crate::ScanOptions::with_policy`]) and refuse a
    /// bare block size.
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert!(ScanAlgorithm::HillisSteele.takes_block_threads());
    /// assert!(!ScanAlgorithm::Auto.takes_block_threads());
    /// ```
    pub fn takes_block_threads(self) -> bool {
        Self::TEACHING.contains(&self.resolve())
    }

    /// Whether the block size must be a power of two (Blelloch's tree).
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert!(ScanAlgorithm::Blelloch.needs_power_of_two_block());
    /// assert!(!ScanAlgorithm::HillisSteele.needs_power_of_two_block());
    /// ```
    pub fn needs_power_of_two_block(self) -> bool {
        matches!(
            self.resolve(),
            ScanAlgorithm::Blelloch | ScanAlgorithm::BlellochPadded
        )
    }

    /// Whether two runs on the same input give bit-identical results for
    /// every element type (false only for the look-back on floats).
    ///
    /// ```
    /// use scan::ScanAlgorithm;
    /// assert!(ScanAlgorithm::ReduceThenScan.deterministic_for_floats());
    /// assert!(!ScanAlgorithm::Auto.deterministic_for_floats());
    /// ```
    pub fn deterministic_for_floats(self) -> bool {
        self.resolve() != ScanAlgorithm::DecoupledLookback
    }
}

impl fmt::Display for ScanAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ScanAlgorithm {
    type Err = gpu_core::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ScanAlgorithm::parse(s).ok_or_else(|| {
            let known: Vec<&str> = ScanAlgorithm::ALL.iter().map(|a| a.name()).collect();
            gpu_core::Error::invalid(
                "algorithm",
                format!("unknown scan algorithm {s:?}; known: {}", known.join(", ")),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in ScanAlgorithm::ALL {
            assert_eq!(ScanAlgorithm::parse(a.name()), Some(a));
            assert_eq!(a.name().parse::<ScanAlgorithm>().unwrap(), a);
        }
        assert_eq!(
            ScanAlgorithm::parse("Blelloch_Padded"),
            Some(ScanAlgorithm::BlellochPadded)
        );
        assert_eq!(
            ScanAlgorithm::parse("lookback"),
            Some(ScanAlgorithm::DecoupledLookback)
        );
        assert_eq!(ScanAlgorithm::parse("quicksort"), None);
        assert!("quicksort".parse::<ScanAlgorithm>().is_err());
    }

    #[test]
    fn auto_is_lookback() {
        assert_eq!(
            ScanAlgorithm::Auto.resolve(),
            ScanAlgorithm::DecoupledLookback
        );
        assert_eq!(ScanAlgorithm::default(), ScanAlgorithm::Auto);
        assert!(!ScanAlgorithm::Auto.takes_block_threads());
        assert!(!ScanAlgorithm::Auto.deterministic_for_floats());
        assert!(ScanAlgorithm::ReduceThenScan.deterministic_for_floats());
    }

    #[test]
    fn block_size_rules() {
        for a in ScanAlgorithm::TEACHING {
            assert!(a.takes_block_threads());
        }
        assert!(ScanAlgorithm::Blelloch.needs_power_of_two_block());
        assert!(ScanAlgorithm::BlellochPadded.needs_power_of_two_block());
        assert!(!ScanAlgorithm::HillisSteele.needs_power_of_two_block());
        assert!(!ScanAlgorithm::DecoupledLookback.takes_block_threads());
    }
}
