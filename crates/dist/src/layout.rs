//! Host arithmetic of shard layouts, no GPU: even blocks, offsets, and the
//! plan that moves compacted items into even blocks.
//!
//! A layout is the list of shard lengths, one per rank in rank order; the
//! global array is the shards concatenated.

use std::ops::Range;

/// The even split of `n` items over `world` ranks: rank r holds
/// `[r·n/world, (r+1)·n/world)`, so lengths differ by at most one and the
/// longer shards come last (`10` over `3`: `[0..3, 3..6, 6..10]`).
///
/// ```
/// assert_eq!(dist::layout::even_blocks(10, 3), vec![0..3, 3..6, 6..10]);
/// assert_eq!(dist::layout::even_blocks(2, 4), vec![0..0, 0..1, 1..1, 1..2]);
/// assert!(dist::layout::even_blocks(5, 0).is_empty());
/// ```
pub fn even_blocks(n: usize, world: usize) -> Vec<Range<usize>> {
    // u128: r · n overflows u64 only past 2^64 / world items, but it costs nothing.
    let bound = |r: usize| (r as u128 * n as u128 / world.max(1) as u128) as usize;
    (0..world).map(|r| bound(r)..bound(r + 1)).collect()
}

/// The lengths of [`even_blocks`].
///
/// ```
/// assert_eq!(dist::layout::even_lengths(10, 4), vec![2, 3, 2, 3]);
/// ```
pub fn even_lengths(n: usize, world: usize) -> Vec<usize> {
    even_blocks(n, world).iter().map(|b| b.len()).collect()
}

/// The start of each shard in the global array (the exclusive sum of the
/// lengths) and the total, as `(starts, total)`.
///
/// ```
/// assert_eq!(dist::layout::offsets(&[3, 0, 4]), (vec![0, 3, 3], 7));
/// ```
pub fn offsets(lengths: &[usize]) -> (Vec<usize>, usize) {
    let mut starts = Vec::with_capacity(lengths.len());
    let mut total = 0usize;
    for &len in lengths {
        starts.push(total);
        total += len;
    }
    (starts, total)
}

/// One contiguous piece of a rebalancing: `len` items from rank
/// `from_rank` at `from_offset` of its shard to rank `to_rank` at
/// `to_offset` of its new shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The rank that holds the items now.
    pub from_rank: usize,
    /// Where they start in its shard.
    pub from_offset: usize,
    /// The rank that holds them afterwards.
    pub to_rank: usize,
    /// Where they start in its new shard.
    pub to_offset: usize,
    /// How many items.
    pub len: usize,
}

/// The moves that turn shards of `lengths` (rank order, global order kept)
/// into the even blocks of their total over the same ranks: the
/// intersections of each current shard with each target block, in
/// (`from_rank`, `to_rank`) order, empty pieces left out. Every pair of
/// ranks has at most one move, so the sends and receives of a pair match
/// one to one. A move with `from_rank == to_rank` is a copy on one device.
///
/// ```
/// use dist::layout::{rebalance_plan, Move};
/// // Rank 0 kept 5 items, rank 1 kept 1: the even layout is 3 + 3.
/// assert_eq!(rebalance_plan(&[5, 1]), vec![
///     Move { from_rank: 0, from_offset: 0, to_rank: 0, to_offset: 0, len: 3 },
///     Move { from_rank: 0, from_offset: 3, to_rank: 1, to_offset: 0, len: 2 },
///     Move { from_rank: 1, from_offset: 0, to_rank: 1, to_offset: 2, len: 1 },
/// ]);
/// ```
pub fn rebalance_plan(lengths: &[usize]) -> Vec<Move> {
    let (starts, total) = offsets(lengths);
    let targets = even_blocks(total, lengths.len());
    let mut moves = Vec::new();
    for (from_rank, (&start, &len)) in starts.iter().zip(lengths).enumerate() {
        let source = start..start + len;
        for (to_rank, target) in targets.iter().enumerate() {
            let begin = source.start.max(target.start);
            let end = source.end.min(target.end);
            if begin < end {
                moves.push(Move {
                    from_rank,
                    from_offset: begin - source.start,
                    to_rank,
                    to_offset: begin - target.start,
                    len: end - begin,
                });
            }
        }
    }
    moves
}

/// Shard lengths summing to `n`, cut at each of `cuts` taken modulo
/// `n + 1` (empty shards where cuts repeat): the layouts the property
/// tests draw.
#[cfg(test)]
pub(crate) fn split_at_cuts(n: usize, cuts: &[usize]) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|&c| c % (n + 1)).collect();
    points.extend([0, n]);
    points.sort_unstable();
    points.windows(2).map(|w| w[1] - w[0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn even_blocks_cover_edges() {
        assert_eq!(even_blocks(0, 2), vec![0..0, 0..0]);
        assert_eq!(even_blocks(1, 1), vec![0..1]);
        assert_eq!(even_blocks(1, 2), vec![0..0, 0..1]);
        assert_eq!(
            even_blocks(7, 7),
            (0..7).map(|i| i..i + 1).collect::<Vec<_>>()
        );
        assert_eq!(even_lengths(1 << 32, 2), vec![1 << 31, 1 << 31]);
        assert_eq!(
            even_lengths(usize::MAX, 2),
            vec![usize::MAX / 2, usize::MAX / 2 + 1]
        );
    }

    proptest! {
        #[test]
        fn even_blocks_tile_the_range(n in 0usize..100_000, world in 1usize..17) {
            let blocks = even_blocks(n, world);
            prop_assert_eq!(blocks.len(), world);
            prop_assert_eq!(blocks[0].start, 0);
            prop_assert_eq!(blocks[world - 1].end, n);
            for pair in blocks.windows(2) {
                prop_assert_eq!(pair[0].end, pair[1].start);
            }
            let lengths: Vec<usize> = blocks.iter().map(|b| b.len()).collect();
            let (min, max) = (lengths.iter().min().unwrap(), lengths.iter().max().unwrap());
            prop_assert!(max - min <= 1);
            prop_assert_eq!(offsets(&lengths).1, n);
        }

        #[test]
        fn rebalancing_keeps_order_and_evens_out(lengths in proptest::collection::vec(0usize..50, 1..9)) {
            // Simulate the plan on host shards holding their global indices.
            let (starts, total) = offsets(&lengths);
            let shards: Vec<Vec<usize>> = starts.iter().zip(&lengths).map(|(&s, &l)| (s..s + l).collect()).collect();
            let target = even_lengths(total, lengths.len());
            let mut out: Vec<Vec<Option<usize>>> = target.iter().map(|&l| vec![None; l]).collect();
            let plan = rebalance_plan(&lengths);
            let mut pairs = std::collections::HashSet::new();
            for m in &plan {
                prop_assert!(m.len > 0);
                prop_assert!(pairs.insert((m.from_rank, m.to_rank)), "one move per pair");
                for k in 0..m.len {
                    let slot = &mut out[m.to_rank][m.to_offset + k];
                    prop_assert!(slot.is_none(), "written twice");
                    *slot = Some(shards[m.from_rank][m.from_offset + k]);
                }
            }
            let flat: Vec<usize> = out.into_iter().flatten().map(|v| v.expect("every slot written")).collect();
            prop_assert_eq!(flat, (0..total).collect::<Vec<_>>());
        }
    }
}
