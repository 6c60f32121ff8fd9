//! `parprims` with no arguments: every primitive's default method and every
//! lab method at a modest size on the GPU, or, without a GPU, the CPU
//! references.

use parprims_testkit::bench::Repetitions;

use super::prims;
use super::progress::Progress;
use super::table::Row;
use super::Lab;

/// Every primitive's tour on the GPU, in registry order.
pub fn gpu_tour(lab: &Lab) -> Vec<Row> {
    let progress = Progress::open_ended();
    let mut rows = Vec::new();
    for primitive in prims::registry() {
        rows.extend((primitive.tour)(lab, &progress));
    }
    progress.finish();
    rows
}

/// Every primitive's CPU reference at a modest size, timed with the wall
/// clock and self-checked.
pub fn cpu_tour(seed: u64, reps: Repetitions) -> Vec<Row> {
    prims::registry()
        .into_iter()
        .flat_map(|primitive| (primitive.cpu)(seed, reps))
        .collect()
}

/// How many rows failed their check.
pub fn failures(rows: &[Row]) -> usize {
    rows.iter().filter(|r| r.check.failed()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_tour_rows_all_pass() {
        let rows = cpu_tour(
            7,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(failures(&rows), 0, "{rows:?}");
        assert!(rows.iter().all(|r| r.ms.is_some()));
    }
}
