//! CPU model of the Onesweep digit passes' bookkeeping over portions
//! (`kernels/cuda/sort/onesweep.cu`), at small tile and portion sizes: the
//! upsweep's histogram of the input and the first portion's digit offsets,
//! then per pass and portion the tiles in order, each placing its keys at
//! `offset + before − start + slot` (`before` from the look-back, `start`
//! the tile-local first slot of the digit), and the portion's last tile
//! handing the next portion its offsets (offset + before + total). The
//! model checks that every pass writes each position below n exactly once
//! and that the result is the stable order of `sort::cpu::argsort`.
//!
//! It also keeps the bookkeeping the kernels had before the hand-over
//! (every portion's offsets from the input's histogram), to show why it is
//! wrong: from the second pass on, a portion holds the previous pass's
//! output at those positions, not the input's keys.
//!
//! Last, the look-back state's rows: with the first half zeroed per call
//! and the second taken from unzeroed scratch (whatever an earlier call
//! left), no launch reads a row that is not clear.

use std::ops::Range;

use parprims_testkit::rng::SplitMix64;
use proptest::prelude::*;
use sort::cpu;
use sort::key::SortKey;
use sort::modules::digit_passes;

/// Where each portion's digit offsets come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Offsets {
    /// The first from the upsweep, each next one from the portion before's
    /// last tile (the kernels).
    HandedOver,
    /// Every portion's from the upsweep's histogram of the input.
    FromInputHistogram,
}

/// The input indices in output order after the digit passes of the model,
/// or the first position written twice or past n.
fn model_sort(
    keys: &[u32],
    descending: bool,
    bits: &Range<u32>,
    tile: usize,
    portion_keys: usize,
    offsets_from: Offsets,
) -> Result<Vec<usize>, String> {
    assert!(tile > 0 && portion_keys.is_multiple_of(tile) && portion_keys > 0);
    let n = keys.len();
    let passes = digit_passes(bits.start, bits.end) as usize;
    let portions = n.div_ceil(portion_keys).max(1);
    let image = |i: usize| -> u64 { keys[i].ordered_radix(descending).into() };
    let digit_of = |i: usize, p: usize| -> usize {
        let shift = bits.start + 8 * p as u32;
        let width = (bits.end - shift).min(8);
        ((image(i) >> shift) & ((1u64 << width) - 1)) as usize
    };
    // The upsweep: every pass's histogram per portion of the input.
    let mut hist = vec![[0u64; 256]; passes * portions];
    for i in 0..n {
        for (p, row) in hist.chunks_mut(portions).enumerate() {
            row[i / portion_keys][digit_of(i, p)] += 1;
        }
    }
    // Its last block: the first portion's offsets (and, for the old
    // bookkeeping, every portion's from the input's counts).
    let mut offsets = vec![[0u64; 256]; passes * portions];
    for p in 0..passes {
        let mut running = 0u64;
        for d in 0..256 {
            let mut at = running;
            for q in 0..portions {
                if q == 0 || offsets_from == Offsets::FromInputHistogram {
                    offsets[p * portions + q][d] = at;
                }
                at += hist[p * portions + q][d];
            }
            running = at;
        }
    }

    let mut source: Vec<usize> = (0..n).collect();
    for p in 0..passes {
        let mut target: Vec<Option<usize>> = vec![None; n];
        for q in 0..portions {
            let row = p * portions + q;
            let first = q * portion_keys;
            let count = (n - first).min(portion_keys);
            let tiles = count.div_ceil(tile);
            let mut before = [0u64; 256];
            for t in 0..tiles {
                let items = &source[first + t * tile..first + (t * tile + tile).min(count)];
                let mut total = [0u64; 256];
                for &i in items {
                    total[digit_of(i, p)] += 1;
                }
                let mut start = [0u64; 256];
                for d in 1..256 {
                    start[d] = start[d - 1] + total[d - 1];
                }
                // Tile-local slots: by digit, then by position in the tile.
                let mut next_slot = start;
                for &i in items {
                    let d = digit_of(i, p);
                    let slot = next_slot[d];
                    next_slot[d] += 1;
                    let base = offsets[row][d]
                        .wrapping_add(before[d])
                        .wrapping_sub(start[d]);
                    let at = base.wrapping_add(slot);
                    match target.get_mut(at as usize) {
                        Some(cell @ None) => *cell = Some(i),
                        Some(Some(_)) => {
                            return Err(format!("pass {p} portion {q}: position {at} twice"))
                        }
                        None => return Err(format!("pass {p} portion {q}: position {at} ≥ {n}")),
                    }
                }
                if t == tiles - 1 && q + 1 < portions && offsets_from == Offsets::HandedOver {
                    for d in 0..256 {
                        offsets[row + 1][d] = offsets[row][d] + before[d] + total[d];
                    }
                }
                for d in 0..256 {
                    before[d] += total[d];
                }
            }
        }
        source = target
            .into_iter()
            .enumerate()
            .map(|(at, i)| i.ok_or(format!("pass {p}: position {at} never written")))
            .collect::<Result<_, _>>()?;
    }
    Ok(source)
}

fn random_keys(n: usize, rng: &mut SplitMix64) -> Vec<u32> {
    (0..n).map(|_| rng.next_u64() as u32).collect()
}

#[test]
fn handed_over_offsets_sort_over_several_portions() {
    let mut rng = SplitMix64::new(0x5eed);
    for n in [1, 63, 64, 65, 1000, 4099] {
        let keys = random_keys(n, &mut rng);
        for descending in [false, true] {
            for bits in [0..32, 0..8, 3..20] {
                let want = cpu::argsort(&keys, descending, &bits);
                let got = model_sort(&keys, descending, &bits, 16, 64, Offsets::HandedOver);
                assert_eq!(
                    got,
                    Ok(want),
                    "n = {n}, descending = {descending}, bits {bits:?}"
                );
            }
        }
    }
}

#[test]
fn offsets_from_the_input_histogram_fail_after_the_first_pass() {
    let mut rng = SplitMix64::new(0x5eed);
    let keys = random_keys(1000, &mut rng);
    let bits = 0..32;
    // One pass reads the input itself: the input's histogram is right.
    let one_pass = 0..8;
    assert_eq!(
        model_sort(&keys, false, &one_pass, 16, 64, Offsets::FromInputHistogram),
        Ok(cpu::argsort(&keys, false, &one_pass))
    );
    // Four passes: positions collide (or stay unwritten) from the second.
    let got = model_sort(&keys, false, &bits, 16, 64, Offsets::FromInputHistogram);
    assert!(got.is_err(), "{got:?}");
    assert!(got.unwrap_err().starts_with("pass 1"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_model_sorts_as_the_cpu(
        keys in proptest::collection::vec(any::<u32>(), 1..1500),
        descending in any::<bool>(),
        tile in 1usize..40,
        tiles_per_portion in 1usize..6,
        begin in 0u32..16,
        width in 1u32..17,
    ) {
        let bits = begin..begin + width;
        let want = cpu::argsort(&keys, descending, &bits);
        let got = model_sort(&keys, descending, &bits, tile, tile * tiles_per_portion, Offsets::HandedOver);
        prop_assert_eq!(got, Ok(want));
    }
}

/// The rows of the two look-back halves a sort of `n` keys over `passes`
/// passes reads, modelled as the host lays them out
/// (`crates/sort/src/onesweep.rs`): half 0 comes zeroed (the arena's
/// zeroed words), half 1 holds whatever an earlier call left (unzeroed
/// scratch words, modelled as every row dirty); pass p's launch for a
/// portion reads its `tiles` rows of half p mod 2 from the portion's
/// offset and zeroes the same rows of the other half
/// (`digit_state_clear_rows`), leaving its own dirty. Returns the first
/// launch that would read a dirty row.
fn first_dirty_read(policy: &sort::policy::OnesweepPolicy, n: u64, passes: u32) -> Option<String> {
    first_dirty_read_from(policy, n, passes, true)
}

/// [`first_dirty_read`] with the first half zeroed or not.
fn first_dirty_read_from(
    policy: &sort::policy::OnesweepPolicy,
    n: u64,
    passes: u32,
    first_zeroed: bool,
) -> Option<String> {
    let (portions, rows) = policy.pass_geometry(n);
    assert_eq!(policy.lookback_state_words(n), rows * 256);
    let portion_rows = policy.portion_tiles();
    let mut dirty = [
        vec![!first_zeroed; rows as usize],
        vec![true; rows as usize],
    ];
    for p in 0..passes {
        let (used, other) = ((p % 2) as usize, ((p + 1) % 2) as usize);
        for portion in 0..portions {
            let first = portion * policy.portion_keys();
            let tiles = (n - first)
                .min(policy.portion_keys())
                .div_ceil(policy.tile());
            let start = (portion * portion_rows) as usize;
            let span = start..start + tiles as usize;
            if span.end > rows as usize {
                return Some(format!(
                    "pass {p} portion {portion}: rows {span:?} past {rows}"
                ));
            }
            if let Some(row) = span.clone().find(|&r| dirty[used][r]) {
                return Some(format!("pass {p} portion {portion}: row {row} dirty"));
            }
            for r in span {
                dirty[other][r] = false;
                dirty[used][r] = true;
            }
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// With only the first half zeroed and the second left by an earlier
    /// call, no launch reads a dirty look-back row, for any size (one or
    /// several portions, a short last portion), pass count and default
    /// policy (their tiles differ by key and payload width).
    #[test]
    fn the_unzeroed_second_state_is_cleared_before_it_is_read(
        n in prop_oneof![1u64..100_000, (1u64 << 28) - 5000..(1u64 << 28) + 5000, (1u64 << 28) * 2 + 1..(1u64 << 30)],
        passes in 1u32..9,
        policy_index in 0usize..4,
    ) {
        use sort::key::PayloadWidth;
        use sort::policy::OnesweepPolicy;
        let policy = match policy_index {
            0 => OnesweepPolicy::default_for::<u32>(None),
            1 => OnesweepPolicy::default_for::<u64>(None),
            2 => OnesweepPolicy::default_for::<u64>(Some(PayloadWidth::B8)),
            _ => OnesweepPolicy::default_for::<u8>(Some(PayloadWidth::B1)),
        };
        prop_assert_eq!(first_dirty_read(&policy, n, passes), None);
    }
}

#[test]
fn a_dirty_first_state_is_caught() {
    // Without the zeroing of the first half, pass 0 reads a dirty row.
    let policy = sort::policy::OnesweepPolicy::DEFAULT;
    let got = first_dirty_read_from(&policy, 10_000, 2, false);
    assert_eq!(got.as_deref(), Some("pass 0 portion 0: row 0 dirty"));
    assert_eq!(first_dirty_read_from(&policy, 10_000, 2, true), None);
    // Three portions, the last short, eight passes.
    let n = 2 * policy.portion_keys() + 12_345;
    assert_eq!(policy.pass_geometry(n).0, 3);
    assert_eq!(first_dirty_read(&policy, n, 8), None);
}
