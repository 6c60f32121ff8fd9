//! A CPU model of the merge-path kernels behind segmented reduce and CSR
//! SpMV (`kernels/cuda/block/merge_path.cuh`): the partition, a tile (its
//! staging, one search per thread, the walk with the current segment end in
//! a register, the keyed block scan, the carry) and the two fix-up passes
//! (chunks of carries with their summaries, then the one-block fold), step
//! for step with the kernels' index arithmetic, at small geometries so that
//! runs of carries cross many chunks with few values. Checked against the
//! CPU reference with a non-commutative operator (order matters), and with
//! broken offsets for the robustness promise: every modelled access of
//! values, offsets, shared slots and out is asserted in bounds.
//!
//! The block-wide scans are modelled by their result (the keyed fold of the
//! threads before), not by their shuffles.

use proptest::prelude::*;

/// Affine maps x ↦ m·x + c modulo 2^32 packed (m, c) in a u64, composed left
/// to right: associative, not commutative.
fn compose(a: u64, b: u64) -> u64 {
    let (m1, c1) = ((a >> 32) as u32, a as u32);
    let (m2, c2) = ((b >> 32) as u32, b as u32);
    ((m1.wrapping_mul(m2) as u64) << 32) | (c1.wrapping_mul(m2).wrapping_add(c2) as u64)
}
const IDENTITY: u64 = 1 << 32;

/// Threads and items of the tiles, threads and carries per thread of the
/// fix-up chunks.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    block: u64,
    items: u64,
    chunk_threads: u64,
    chunk_items: u64,
}

impl Geometry {
    fn tile(&self) -> u64 {
        self.block * self.items
    }
    fn chunk(&self) -> u64 {
        self.chunk_threads * self.chunk_items
    }
}

fn merge_path_items(offsets: &[u64], segments: u64, n: u64) -> (u64, u64) {
    let first = offsets[0];
    let last = offsets[segments as usize];
    let base = first.min(n);
    let end = last.min(n);
    (base, end.saturating_sub(base))
}

fn segment_end_relative(offsets: &[u64], s: u64, base: u64, items: u64) -> u64 {
    let end = offsets[(s + 1) as usize];
    let relative = end.saturating_sub(base);
    relative.min(items)
}

fn merge_path_search(diagonal: u64, offsets: &[u64], segments: u64, items: u64, base: u64) -> u64 {
    let mut lo = diagonal.saturating_sub(items);
    let mut hi = diagonal.min(segments);
    while lo < hi {
        let mid = (lo + hi) >> 1;
        if segment_end_relative(offsets, mid, base, items) < diagonal - mid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn merge_path_search_shared(diagonal: u64, ends: &[u64], segments: u64, items: u64) -> u64 {
    let mut lo = diagonal.saturating_sub(items);
    let mut hi = diagonal.min(segments);
    while lo < hi {
        let mid = (lo + hi) >> 1;
        assert!(mid < segments, "shared end {mid} of {segments}");
        if ends[mid as usize] < diagonal - mid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The keyed fold of `(key, value)` pairs in order: the last key and the
/// fold of its trailing run (what the keyed block scans compute).
fn keyed_fold(pairs: impl IntoIterator<Item = (u64, u64)>) -> Option<(u64, u64)> {
    let mut run: Option<(u64, u64)> = None;
    for (key, value) in pairs {
        run = Some(match run {
            Some((run_key, run_value)) if run_key == key => (key, compose(run_value, value)),
            _ => (key, value),
        });
    }
    run
}

/// Output with a count of writes per segment.
struct Out {
    values: Vec<u64>,
    completes: Vec<u32>,
}

impl Out {
    fn complete(&mut self, segment: u64, value: u64) {
        assert!(
            segment < self.values.len() as u64,
            "out[{segment}] past {}",
            self.values.len()
        );
        self.values[segment as usize] = value;
        self.completes[segment as usize] += 1;
    }
    fn fixup(&mut self, segment: u64, carry: u64) {
        assert!(
            segment < self.values.len() as u64,
            "out[{segment}] past {}",
            self.values.len()
        );
        let stored = self.values[segment as usize];
        self.values[segment as usize] = compose(carry, stored);
    }
}

/// One tile, as `merge_path_tile`; returns its carry.
#[allow(clippy::too_many_arguments)]
fn tile(
    g: Geometry,
    tile: u64,
    coordinates: &[u64],
    values: &[u64],
    offsets: &[u64],
    segments: u64,
    base: u64,
    items: u64,
    out: &mut Out,
) -> (u64, u64) {
    let full = g.tile();
    let total = segments + items;
    let diagonal_first = (tile * full).min(total);
    let diagonal_end = (diagonal_first + full).min(total);
    let segment_begin = coordinates[tile as usize];
    let segment_end = coordinates[tile as usize + 1];
    let item_begin = diagonal_first - segment_begin.min(diagonal_first);
    let item_end = diagonal_end - segment_end.min(diagonal_end);
    let tile_segments = if segment_end > segment_begin {
        (segment_end - segment_begin).min(full)
    } else {
        0
    };
    let tile_items = if item_end > item_begin {
        (item_end - item_begin).min(full - tile_segments)
    } else {
        0
    };
    // The slots: items in [0, tile_items), ends (u32, one slot each for
    // 4-byte values, the tightest case) from slot tile_items on.
    assert!(tile_items + tile_segments <= full);
    let mut slots = vec![None::<u64>; full as usize];
    for i in 0..tile_items {
        let index = base + item_begin + i;
        assert!(index < values.len() as u64, "values[{index}]");
        slots[i as usize] = Some(values[index as usize]);
    }
    let items_end = base + items;
    let tile_first = base + item_begin;
    let mut ends = vec![0u64; tile_segments as usize];
    for (i, end_slot) in ends.iter_mut().enumerate() {
        let index = segment_begin + i as u64 + 1;
        assert!(index <= segments, "offsets[{index}]");
        let end = offsets[index as usize].min(items_end);
        *end_slot = if end > tile_first {
            (end - tile_first).min(tile_items)
        } else {
            0
        };
    }
    let tile_steps = tile_segments + tile_items;
    // Per thread: (scan key, running, first segment and its value if any).
    let mut threads = Vec::with_capacity(g.block as usize);
    for t in 0..g.block {
        let step_begin = (t * g.items).min(tile_steps);
        let steps = g.items.min(tile_steps - step_begin);
        let mut s = merge_path_search_shared(step_begin, &ends, tile_segments, tile_items);
        let mut j = step_begin - s;
        let first_segment = s;
        let mut next_end = if s < tile_segments {
            ends[s as usize]
        } else {
            tile_items
        };
        let mut first = None;
        let mut running = IDENTITY;
        for _ in 0..steps {
            assert!(j < full, "slot {j} of {full}");
            let take = j < next_end;
            if !take {
                assert!(s < tile_segments, "end step past the tile's segments");
                if first.is_some() {
                    out.complete(segment_begin + s, running);
                } else {
                    first = Some(running);
                }
                running = IDENTITY;
                s += 1;
                next_end = if s < tile_segments {
                    ends[s as usize]
                } else {
                    tile_items
                };
            } else {
                assert!(j < tile_items, "item slot {j} past {tile_items} items");
                running = compose(running, slots[j as usize].unwrap());
                j += 1;
            }
        }
        threads.push((s, running, first_segment, first));
    }
    for t in 0..threads.len() {
        let (_, _, first_segment, first) = threads[t];
        if let Some(mut first) = first {
            let prefix = keyed_fold(threads[..t].iter().map(|&(k, v, _, _)| (k, v)));
            if let Some((prefix_key, prefix)) = prefix {
                if prefix_key == first_segment {
                    first = compose(prefix, first);
                }
            }
            out.complete(segment_begin + first_segment, first);
        }
    }
    let (aggregate_key, aggregate) =
        keyed_fold(threads.iter().map(|&(k, v, _, _)| (k, v))).unwrap();
    ((segment_begin + aggregate_key).min(segments), aggregate)
}

/// `fixup_chunk` over every chunk; returns the summaries.
fn fixup_chunks(
    g: Geometry,
    carries: &[(u64, u64)],
    segments: u64,
    out: &mut Out,
) -> Vec<(u64, u64)> {
    let count = carries.len() as u64;
    let chunks = count.div_ceil(g.chunk());
    let mut summaries = vec![None::<(u64, u64)>; 2 * chunks as usize];
    let key_at = |index: u64, limit: u64| {
        if index < limit {
            carries[index as usize].0
        } else {
            u64::MAX
        }
    };
    for chunk in 0..chunks {
        let chunk_begin = chunk * g.chunk();
        let chunk_limit = (chunk_begin + g.chunk()).min(count);
        let first_key = carries[chunk_begin as usize].0;
        let last_key = carries[chunk_limit as usize - 1].0;
        let ci = g.chunk_items as usize;
        // Per thread: keys (and the one after), inclusive values.
        let mut threads = Vec::new();
        for t in 0..g.chunk_threads {
            let first_index = chunk_begin + t * g.chunk_items;
            let keys: Vec<u64> = (0..=ci as u64)
                .map(|k| key_at(first_index + k, chunk_limit))
                .collect();
            let values: Vec<u64> = (0..ci as u64)
                .map(|k| {
                    let index = first_index + k;
                    if index < chunk_limit {
                        carries[index as usize].1
                    } else {
                        IDENTITY
                    }
                })
                .collect();
            let mut inclusive = values.clone();
            for k in 1..ci {
                if keys[k - 1] == keys[k] {
                    inclusive[k] = compose(inclusive[k - 1], inclusive[k]);
                }
            }
            threads.push((first_index, keys, inclusive));
        }
        let thread_carries: Vec<(u64, u64)> = threads
            .iter()
            .map(|(_, keys, inclusive)| (keys[ci - 1], inclusive[ci - 1]))
            .collect();
        // Every thread's reads first (the kernel's threads read before they
        // write, and no two write the same key).
        let mut writes = Vec::new();
        for (t, (first_index, keys, inclusive)) in threads.iter_mut().enumerate() {
            if let Some((prefix_key, prefix)) = keyed_fold(thread_carries[..t].iter().copied()) {
                for k in 0..ci {
                    if keys[k] == keys[0] && prefix_key == keys[k] {
                        inclusive[k] = compose(prefix, inclusive[k]);
                    }
                }
            }
            for k in 0..ci {
                let index = *first_index + k as u64;
                if index < chunk_limit
                    && keys[k + 1] != keys[k]
                    && keys[k] != first_key
                    && keys[k] != last_key
                    && keys[k] < segments
                {
                    writes.push((keys[k], inclusive[k]));
                }
                if index < chunk_limit
                    && keys[k] == first_key
                    && (index + 1 == chunk_limit || keys[k + 1] != first_key)
                {
                    summaries[2 * chunk as usize] = Some((first_key, inclusive[k]));
                }
                if index + 1 == chunk_limit {
                    let value = if last_key == first_key {
                        IDENTITY
                    } else {
                        inclusive[k]
                    };
                    summaries[2 * chunk as usize + 1] = Some((last_key, value));
                }
            }
        }
        for (key, value) in writes {
            out.fixup(key, value);
        }
    }
    summaries
        .into_iter()
        .map(|s| s.expect("every summary written"))
        .collect()
}

/// `fixup_carries`: each run of equal keys folded in order, applied once
/// when its key is below `segments`.
fn fixup_fold(carries: &[(u64, u64)], segments: u64, out: &mut Out) {
    let mut run: Option<(u64, u64)> = None;
    for &(key, value) in carries {
        run = match run {
            Some((run_key, run_value)) if run_key == key => Some((key, compose(run_value, value))),
            Some((run_key, run_value)) => {
                if run_key < segments {
                    out.fixup(run_key, run_value);
                }
                Some((key, value))
            }
            None => Some((key, value)),
        };
    }
    if let Some((key, value)) = run {
        if key < segments {
            out.fixup(key, value);
        }
    }
}

/// The whole segmented reduce as the launches run it.
fn model(g: Geometry, values: &[u64], offsets: &[u64]) -> Out {
    let segments = offsets.len() as u64 - 1;
    let n = values.len() as u64;
    let tiles = (segments + n).div_ceil(g.tile()).max(1);
    let (base, items) = merge_path_items(offsets, segments, n);
    let coordinates: Vec<u64> = (0..=tiles)
        .map(|t| {
            merge_path_search(
                (t * g.tile()).min(segments + items),
                offsets,
                segments,
                items,
                base,
            )
        })
        .collect();
    let mut out = Out {
        values: vec![0xdead_beef; segments as usize],
        completes: vec![0; segments as usize],
    };
    let carries: Vec<(u64, u64)> = (0..tiles)
        .map(|t| {
            tile(
                g,
                t,
                &coordinates,
                values,
                offsets,
                segments,
                base,
                items,
                &mut out,
            )
        })
        .collect();
    if tiles > g.chunk() {
        let summaries = fixup_chunks(g, &carries, segments, &mut out);
        let well_formed =
            offsets.windows(2).all(|w| w[0] <= w[1]) && offsets[segments as usize] <= n;
        if well_formed {
            assert!(
                summaries.windows(2).all(|w| w[0].0 <= w[1].0),
                "summary keys sorted"
            );
        }
        fixup_fold(&summaries, segments, &mut out);
    } else {
        fixup_fold(&carries, segments, &mut out);
    }
    out
}

fn reference(values: &[u64], offsets: &[u64]) -> Vec<u64> {
    offsets
        .windows(2)
        .map(|w| {
            values[w[0] as usize..w[1] as usize]
                .iter()
                .fold(IDENTITY, |a, &v| compose(a, v))
        })
        .collect()
}

fn maps(n: usize, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 32) | 1) << 32 | (state & 0xffff_ffff)
        })
        .collect()
}

fn offsets_from_lengths(first: u64, lengths: &[u64]) -> Vec<u64> {
    let mut offsets = vec![first];
    for &length in lengths {
        offsets.push(offsets.last().unwrap() + length);
    }
    offsets
}

fn check(g: Geometry, n: usize, offsets: &[u64]) {
    let values = maps(n, n as u64 ^ offsets.len() as u64);
    let out = model(g, &values, offsets);
    assert_eq!(out.values, reference(&values, offsets), "{g:?}, n {n}");
    assert!(
        out.completes.iter().all(|&c| c == 1),
        "every segment stored once by the tiles"
    );
}

const SMALL: Geometry = Geometry {
    block: 4,
    items: 3,
    chunk_threads: 2,
    chunk_items: 2,
};
/// The odd shapes: one thread, one item.
const TINY: Geometry = Geometry {
    block: 1,
    items: 1,
    chunk_threads: 1,
    chunk_items: 1,
};
const WIDE: Geometry = Geometry {
    block: 8,
    items: 5,
    chunk_threads: 4,
    chunk_items: 3,
};

#[test]
fn one_segment_of_n_crosses_many_chunks() {
    for g in [SMALL, TINY, WIDE] {
        for n in [0usize, 1, 2, 11, 12, 13, 1000, 4099] {
            check(g, n, &[0, n as u64]);
        }
    }
}

#[test]
fn n_segments_of_one_and_empty_segments() {
    for g in [SMALL, TINY, WIDE] {
        for n in [0usize, 1, 5, 12, 97, 1000] {
            let ones: Vec<u64> = (0..=n as u64).collect();
            check(g, n, &ones);
            let mut empties = vec![0u64; 50];
            empties.push(n as u64);
            check(g, n, &empties);
            let mut trailing = vec![0u64, n as u64];
            trailing.extend(std::iter::repeat_n(n as u64, 40));
            check(g, n, &trailing);
        }
    }
}

#[test]
fn segments_of_exactly_one_tile_and_one_chunk_of_tiles() {
    for g in [SMALL, WIDE] {
        let tile = g.tile();
        // A segment's items + end fill a tile.
        let lengths = vec![tile - 1; 40];
        check(
            g,
            ((tile - 1) * 40) as usize,
            &offsets_from_lengths(0, &lengths),
        );
        // A segment spanning exactly a chunk of tiles, then one more.
        let span = g.chunk() * tile;
        for length in [span - 1, span, span + 1] {
            let lengths = vec![length, 3, length, 0, 0, length];
            let n: u64 = lengths.iter().sum();
            check(g, n as usize, &offsets_from_lengths(0, &lengths));
        }
    }
}

#[test]
fn giant_segment_among_short_ones_and_offsets_not_from_zero() {
    let g = SMALL;
    let mut lengths = vec![1u64, 0, 2, 0, 0, 5];
    lengths.push(3000);
    lengths.extend([0, 1, 0, 4, 7]);
    let offsets = offsets_from_lengths(13, &lengths);
    let n = *offsets.last().unwrap() as usize + 9;
    check(g, n, &offsets);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn model_matches_the_reference(
        lengths in prop::collection::vec(prop_oneof![Just(0u64), 0u64..4, 0u64..40, 0u64..400], 1..120),
        first in 0u64..20,
        extra in 0usize..10,
        geometry in prop::sample::select(vec![SMALL, TINY, WIDE]),
    ) {
        let offsets = offsets_from_lengths(first, &lengths);
        let n = *offsets.last().unwrap() as usize + extra;
        check(geometry, n, &offsets);
    }

    /// Offsets that break the contract (any values, any order): every access
    /// stays in bounds (the model asserts each one); the values are
    /// meaningless and not checked.
    #[test]
    fn broken_offsets_stay_in_bounds(
        offsets in prop::collection::vec(0u64..300, 1..80),
        n in 0usize..250,
        geometry in prop::sample::select(vec![SMALL, TINY, WIDE]),
    ) {
        let values = maps(n, 7);
        let _ = model(geometry, &values, &offsets);
    }
}
