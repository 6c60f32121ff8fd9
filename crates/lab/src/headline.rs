//! The issues' performance targets, checked against a benchmark's records:
//! after `parprims bench`, one line per target says what was measured, what
//! was asked for, and whether it was met. Targets whose records are absent
//! (a primitive not run, no peers CSV, no cuBLAS build) are left out.
//!
//! Fractions are of the copy ceiling measured in the same run; speed-ups
//! compare median times on the same shape.

use parprims_testkit::bench::Record;

/// One target and what the records say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// What is measured (`scan DecoupledLookback i32 2^28`).
    pub what: String,
    /// The measured figure, as text (`0.93 of ceiling`).
    pub measured: String,
    /// The target, as text (`≥ 0.90`).
    pub target: String,
    /// Whether it was met.
    pub met: bool,
}

fn find<'a>(
    records: &'a [Record],
    primitive: &str,
    algorithm: &str,
    t: &str,
    shape: &str,
) -> Option<&'a Record> {
    records.iter().find(|r| {
        r.primitive == primitive
            && r.algorithm == algorithm
            && r.element_type == t
            && r.shape == shape
    })
}

fn fraction_target(
    records: &[Record],
    primitive: &str,
    algorithm: &str,
    t: &str,
    shape: &str,
    at_least: f64,
) -> Option<Target> {
    let r = find(records, primitive, algorithm, t, shape)?;
    Some(ceiling_target(
        format!("{primitive} {algorithm} {t} {shape}"),
        r,
        at_least,
    ))
}

/// The record's fraction of its copy ceiling, judged against `at_least`.
fn ceiling_target(what: String, r: &Record, at_least: f64) -> Target {
    let f = r.fraction_of_ceiling();
    Target {
        what,
        measured: format!("{f:.2} of ceiling ({:.1} GB/s)", r.gbps),
        target: format!("≥ {at_least:.2}"),
        met: f >= at_least,
    }
}

/// Like [`fraction_target`], but with the GB/s recomputed from `bytes` (the
/// issue's headline byte count) instead of the bytes the record declares.
fn headline_bytes_target(
    records: &[Record],
    (primitive, algorithm, t, shape): (&str, &str, &str, &str),
    bytes: f64,
    at_least: f64,
) -> Option<Target> {
    let r = find(records, primitive, algorithm, t, shape)?;
    if r.ms_median <= 0.0 || r.ceiling_gbps <= 0.0 {
        return None;
    }
    let rebased = Record {
        gbps: bytes / (r.ms_median * 1e6),
        ..r.clone()
    };
    Some(ceiling_target(
        format!("{primitive} {algorithm} {t} {shape} (bytes as 8n)"),
        &rebased,
        at_least,
    ))
}

/// `fast` at least `factor` times faster than `slow` (median times).
fn speedup_target(
    records: &[Record],
    primitive: &str,
    (fast, fast_t): (&str, &str),
    (slow, slow_t): (&str, &str),
    shapes: (&str, &str),
    factor: f64,
) -> Option<Target> {
    let f = find(records, primitive, fast, fast_t, shapes.0)?;
    let s = find(records, primitive, slow, slow_t, shapes.1)?;
    if f.ms_median <= 0.0 {
        return None;
    }
    let ratio = s.ms_median / f.ms_median;
    Some(Target {
        what: format!("{primitive} {fast} vs {slow} {} {}", fast_t, shapes.0),
        measured: format!(
            "{ratio:.2}× ({:.4} ms vs {:.4} ms)",
            f.ms_median, s.ms_median
        ),
        target: format!("≥ {factor:.2}×"),
        met: ratio >= factor,
    })
}

const N28: &str = "268435456";
const T16K: &str = "16384x16384";

/// Every target of issues 3, 4, 5, 20, 21, 22 and 23 that `records` (ours
/// and peers') can answer.
pub fn evaluate(records: &[Record]) -> Vec<Target> {
    let mut out: Vec<Option<Target>> = Vec::new();
    // Issue 3: scan.
    out.push(fraction_target(
        records,
        "scan",
        "DecoupledLookback",
        "i32",
        N28,
        0.90,
    ));
    if let Some(base) = find(records, "scan", "DecoupledLookback", "i32", N28) {
        let base_fraction = base.fraction_of_ceiling();
        for t in ["f32", "u64", "i64"] {
            if let Some(r) = find(records, "scan", "DecoupledLookback", t, N28) {
                let f = r.fraction_of_ceiling();
                out.push(Some(Target {
                    what: format!("scan DecoupledLookback {t} {N28} against i32"),
                    measured: format!("{f:.2} vs {base_fraction:.2}"),
                    target: "within 10 %".into(),
                    met: f >= 0.9 * base_fraction,
                }));
            }
        }
    }
    // The issue counts every scan's bytes as 8n (one read and one write of
    // each i32), whatever the algorithm really moves: the recursive
    // variants move 16n, so their own GB/s would overstate them twice.
    for algorithm in ["HillisSteele", "Blelloch", "BlellochPadded"] {
        out.push(headline_bytes_target(
            records,
            ("scan", algorithm, "i32", N28),
            8.0 * (1u64 << 28) as f64,
            0.35,
        ));
    }
    out.push(speedup_target(
        records,
        "scan",
        ("Blelloch", "i32"),
        ("HillisSteele", "i32"),
        (N28, N28),
        1.0,
    ));
    out.push(speedup_target(
        records,
        "scan",
        ("BlellochPadded", "i32"),
        ("Blelloch", "i32"),
        (N28, N28),
        1.0,
    ));
    out.push(speedup_target(
        records,
        "scan",
        ("DecoupledLookback", "i32"),
        ("torch.cumsum", "i32"),
        (N28, N28),
        1.5,
    ));
    // Issue 4: compact.
    out.push(fraction_target(
        records,
        "compact",
        "select_flagged/SinglePass",
        "i32",
        N28,
        0.80,
    ));
    out.push(fraction_target(
        records,
        "compact",
        "select_if(x>0)/SinglePass",
        "i32",
        N28,
        0.80,
    ));
    out.push(speedup_target(
        records,
        "compact",
        ("select_flagged/SinglePass", "i32"),
        ("torch.masked_select", "i32"),
        (N28, N28),
        2.5,
    ));
    // Issue 5: transpose, matvec, conv.
    out.push(fraction_target(
        records,
        "transpose",
        "Tuned",
        "f32",
        T16K,
        0.90,
    ));
    out.push(speedup_target(
        records,
        "transpose",
        ("TiledPadded", "f32"),
        ("Tiled", "f32"),
        (T16K, T16K),
        1.5,
    ));
    for (op, peer_shape) in [("Ax", T16K.to_owned()), ("ATx", format!("{T16K}/T"))] {
        let tuned = format!("{op}/Tuned");
        let cublas = format!("{op}/cuBLAS");
        // Our own cuBLAS row (built with `cublas`), else the peers' torch.mv.
        let baseline = find(records, "matvec", &cublas, "f32", T16K)
            .or_else(|| find(records, "matvec", "torch.mv(cuBLAS)", "f32", &peer_shape));
        if let (Some(ours), Some(theirs)) = (find(records, "matvec", &tuned, "f32", T16K), baseline)
        {
            let ratio = if ours.ms_median > 0.0 {
                theirs.ms_median / ours.ms_median
            } else {
                0.0
            };
            out.push(Some(Target {
                what: format!("matvec {tuned} f32 {T16K} against {}", theirs.algorithm),
                measured: format!("{ratio:.2} of its throughput"),
                target: "≥ 0.97".into(),
                met: ratio >= 0.97,
            }));
        }
    }
    out.push(fraction_target(
        records,
        "conv",
        "TiledHalo",
        "f32",
        "8192x8192/k3",
        0.80,
    ));
    out.push(fraction_target(
        records,
        "conv",
        "TiledHalo",
        "f32",
        "8192x8192/k5",
        0.70,
    ));
    out.push(speedup_target(
        records,
        "conv",
        ("TiledHalo", "f32"),
        ("F.conv2d(cuDNN)", "f32"),
        ("8192x8192/k3", "8192x8192/k3"),
        20.0,
    ));
    // Issue 23: conv closer to the copy ceiling, K = 7 included.
    for (shape, fraction) in [
        ("8192x8192/k3", 0.90),
        ("8192x8192/k5", 0.88),
        ("8192x8192/k7", 0.85),
    ] {
        out.push(fraction_target(
            records,
            "conv",
            "TiledHalo",
            "f32",
            shape,
            fraction,
        ));
    }
    out.extend(reduce_targets(records));
    out.extend(segmented_and_sort_targets(records));
    out.into_iter().flatten().collect()
}

/// The lab's name of the histogram default (`HistogramAlgorithm::Auto`).
pub const HISTOGRAM_DEFAULT: &str = "auto";

/// Issue 20: reduce and histogram. Fractions count the input read once
/// (4n for i32 and f32, n for u8), as both the lab and the peers declare.
fn reduce_targets(records: &[Record]) -> Vec<Option<Target>> {
    let mut out = Vec::new();
    for t in ["i32", "f32"] {
        out.push(fraction_target(
            records,
            "reduce",
            "single-pass",
            t,
            N28,
            0.97,
        ));
        // "Not slower than torch.sum": at least 1.0× its speed, and for
        // i32 also 1.0× the call that keeps the sum in int32 (torch.sum
        // alone accumulates an int32 input in int64, several times slower).
        out.push(speedup_target(
            records,
            "reduce",
            ("single-pass", t),
            ("torch.sum", t),
            (N28, N28),
            1.0,
        ));
        if t == "i32" {
            out.push(speedup_target(
                records,
                "reduce",
                ("single-pass", t),
                ("torch.sum(dtype=x.dtype)", t),
                (N28, N28),
                1.0,
            ));
        }
    }
    out.push(fraction_target(
        records, "reduce", "argmax", "f32", N28, 0.95,
    ));
    for (t, shape, at_least) in [
        ("i32", "268435456/bins256", 0.85),
        ("u8", "268435456/bins256", 0.85),
        ("i32", "268435456/bins256-onebin", 0.5),
        ("i32", "268435456/bins65536", 0.5),
    ] {
        out.push(fraction_target(
            records,
            "histogram",
            HISTOGRAM_DEFAULT,
            t,
            shape,
            at_least,
        ));
    }
    out
}

/// The peers' run names the lab's power-law SpMV matrix by its distribution.
const SPMV_POWER_LAW_PEER: &str = "4194304x4194304/pareto1.5";
/// torch's segmented reduce by offsets, the form of the lab's input.
const SEGMENT_REDUCE_PEER: &str = "torch.segment_reduce(offsets)";
/// torch's run-length encoding.
const RUN_LENGTH_PEER: &str = "torch.unique_consecutive";
/// CUB's radix sort through CuPy, sorting in place (the sort alone).
const CUB_SORT: &str = "cupy.ndarray.sort(in-place)";

/// Issues 21 and 22: the segmented primitives, SpMV and the sort, against
/// the copy ceiling and against cuSPARSE and CUB measured on the same
/// machine. Our rows are found by the names and shapes the lab writes.
fn segmented_and_sort_targets(records: &[Record]) -> Vec<Option<Target>> {
    use crate::prims::{runs, segreduce, sort, spmv};
    let sort_name = |operation| {
        sort::Method {
            operation,
            input: sort::Input::Uniform,
        }
        .name()
    };
    let (keys, argsort) = (
        sort_name(sort::Operation::Keys),
        sort_name(sort::Operation::Argsort),
    );
    let rle = runs::Method::RunLengthEncode.row_name("i32");
    let segments = format!("{N28}/{}", segreduce::Segments::About1000.name());
    let segreduce_method = segreduce::method_name("f32");
    let mut out = vec![
        fraction_target(
            records,
            "segreduce",
            &segreduce_method,
            "f32",
            &segments,
            0.90,
        ),
        // Faster than the peers on the same input: torch.segment_reduce by
        // offsets (our input's form) and torch.unique_consecutive.
        speedup_target(
            records,
            "segreduce",
            (segreduce_method.as_str(), "f32"),
            (SEGMENT_REDUCE_PEER, "f32"),
            (segments.as_str(), segments.as_str()),
            1.0,
        ),
        fraction_target(records, "runs", &rle, "i32", N28, 0.85),
        speedup_target(
            records,
            "runs",
            (rle.as_str(), "i32"),
            (RUN_LENGTH_PEER, "i32"),
            (N28, N28),
            1.0,
        ),
    ];
    let spmv_rows = spmv::BENCH_ROWS[0];
    let uniform = spmv::shape(spmv_rows, spmv::Kind::Uniform32);
    let power_law = spmv::shape(spmv_rows, spmv::Kind::PowerLaw);
    for (shape, peer_shape) in [
        (uniform.as_str(), uniform.as_str()),
        (power_law.as_str(), SPMV_POWER_LAW_PEER),
    ] {
        out.push(speedup_target(
            records,
            "spmv",
            ("MergePath", "f32"),
            ("cupyx.csr@x(cuSPARSE)", "f32"),
            (shape, peer_shape),
            1.3,
        ));
    }
    // The sort: at most 5.5 ms for 2^28 u32 keys, 1.25× CUB; f32 and u64
    // keys 1.2× CUB; argsort 1.25× cupy.argsort.
    if let Some(r) = find(records, "sort", &keys, "u32", N28) {
        out.push(Some(Target {
            what: format!("sort {keys} u32 {N28}"),
            measured: format!("{:.3} ms", r.ms_median),
            target: "≤ 5.5 ms".into(),
            met: r.ms_median <= 5.5,
        }));
    }
    for (t, shape, factor) in [
        ("u32", N28, 1.25),
        ("f32", N28, 1.2),
        ("u64", "134217728", 1.2),
    ] {
        out.push(speedup_target(
            records,
            "sort",
            (keys.as_str(), t),
            (CUB_SORT, t),
            (shape, shape),
            factor,
        ));
    }
    out.push(speedup_target(
        records,
        "sort",
        (argsort.as_str(), "u32"),
        ("cupy.argsort", "i32"),
        (N28, "268435456/argsort"),
        1.25,
    ));
    out
}

/// The targets as text lines (empty when none applies).
pub fn render(targets: &[Target]) -> String {
    if targets.is_empty() {
        return String::new();
    }
    let width = targets
        .iter()
        .map(|t| t.what.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("targets of the issues:\n");
    for t in targets {
        let pad = width - t.what.chars().count();
        out.push_str(&format!(
            "  {}{}  {}  (target {})  {}\n",
            t.what,
            " ".repeat(pad),
            t.measured,
            t.target,
            if t.met { "met" } else { "NOT met" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        primitive: &str,
        algorithm: &str,
        t: &str,
        shape: &str,
        ms: f64,
        gbps: f64,
    ) -> Record {
        Record {
            primitive: primitive.into(),
            algorithm: algorithm.into(),
            element_type: t.into(),
            shape: shape.into(),
            ms_median: ms,
            gbps,
            ceiling_gbps: 3000.0,
            device: "d".into(),
        }
    }

    #[test]
    fn targets_are_judged_from_records() {
        let records = vec![
            record("scan", "DecoupledLookback", "i32", N28, 0.75, 2850.0),
            record("scan", "DecoupledLookback", "f32", N28, 0.80, 2500.0),
            record("scan", "torch.cumsum", "i32", N28, 1.23, 1740.0),
            record("transpose", "Tiled", "f32", T16K, 2.0, 1000.0),
            record("transpose", "TiledPadded", "f32", T16K, 1.5, 1300.0),
        ];
        let targets = evaluate(&records);
        let by = |what: &str| targets.iter().find(|t| t.what.starts_with(what)).cloned();
        let lookback = by("scan DecoupledLookback i32").unwrap();
        assert!(lookback.met, "{lookback:?}");
        assert!(lookback.measured.starts_with("0.95"));
        // 2500/3000 = 0.83 < 0.9 · 0.95.
        assert!(!by("scan DecoupledLookback f32").unwrap().met);
        let torch = by("scan DecoupledLookback vs torch.cumsum").unwrap();
        assert!(torch.met && torch.measured.starts_with("1.64"), "{torch:?}");
        // 2.0 / 1.5 = 1.33 < 1.5.
        assert!(!by("transpose TiledPadded vs Tiled").unwrap().met);
        // Nothing about compact, matvec or conv without their records.
        assert!(targets
            .iter()
            .all(|t| !t.what.starts_with("compact") && !t.what.starts_with("conv")));
        let text = render(&targets);
        assert!(text.contains("NOT met") && text.contains("met"));
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn conv_targets_of_both_issues() {
        // 0.85 and 0.61 of a 3000 GB/s ceiling: issue 5's K = 3 ≥ 0.80 is
        // met, issue 23's ≥ 0.90 and K = 7's ≥ 0.85 are not.
        let records = vec![
            record("conv", "TiledHalo", "f32", "8192x8192/k3", 0.21, 2550.0),
            record("conv", "TiledHalo", "f32", "8192x8192/k7", 0.29, 1830.0),
        ];
        let targets = evaluate(&records);
        let k3: Vec<_> = targets
            .iter()
            .filter(|t| t.what == "conv TiledHalo f32 8192x8192/k3")
            .collect();
        assert_eq!(k3.len(), 2, "{targets:?}");
        assert!(k3[0].met && k3[0].target == "≥ 0.80", "{k3:?}");
        assert!(!k3[1].met && k3[1].target == "≥ 0.90", "{k3:?}");
        let k7 = targets
            .iter()
            .find(|t| t.what == "conv TiledHalo f32 8192x8192/k7")
            .expect("a K = 7 target");
        assert!(!k7.met && k7.target == "≥ 0.85", "{k7:?}");
        // No K = 5 record, no K = 5 target.
        assert!(targets.iter().all(|t| !t.what.ends_with("k5")));
    }

    #[test]
    fn teaching_scans_are_judged_on_eight_bytes_per_element() {
        // 2.225 ms for 2^28 i32: 16n bytes at 1930 GB/s (0.64 of a 3000
        // GB/s ceiling) but 8n bytes at 965 GB/s (0.32): not met.
        let records = vec![record("scan", "HillisSteele", "i32", N28, 2.225, 1930.0)];
        let targets = evaluate(&records);
        let hs = targets
            .iter()
            .find(|t| t.what.starts_with("scan HillisSteele i32"))
            .expect("a HillisSteele target");
        assert!(!hs.met, "{hs:?}");
        assert!(hs.measured.starts_with("0.32"), "{hs:?}");
        assert!(hs.what.contains("8n"));
    }

    #[test]
    fn reduce_and_histogram_targets() {
        // 2^28 i32 read once (4n bytes) in 0.37 ms: 2902 GB/s, 0.967 of a
        // 3000 GB/s ceiling: under 0.97. torch.sum at 0.38 ms: not slower.
        let bytes = 4.0 * (1u64 << 28) as f64;
        let records = vec![
            record("reduce", "single-pass", "i32", N28, 0.37, bytes / 0.37e6),
            record("reduce", "torch.sum", "i32", N28, 0.38, bytes / 0.38e6),
            record("reduce", "argmax", "f32", N28, 0.37, bytes / 0.37e6),
            record(
                "histogram",
                "auto",
                "u8",
                "268435456/bins256",
                0.1,
                bytes / 4.0 / 0.1e6,
            ),
        ];
        let targets = evaluate(&records);
        let by = |what: &str| targets.iter().find(|t| t.what.starts_with(what)).cloned();
        let sum = by("reduce single-pass i32").unwrap();
        assert!(!sum.met && sum.measured.starts_with("0.97"), "{sum:?}");
        assert!(by("reduce single-pass vs torch.sum i32").unwrap().met);
        assert!(by("reduce argmax f32").unwrap().met);
        // 2^28 bytes in 0.1 ms: 2684 GB/s, 0.89 of the ceiling.
        let u8_bins = by("histogram auto u8").unwrap();
        assert!(u8_bins.met, "{u8_bins:?}");
        assert!(by("histogram auto i32").is_none());
    }

    #[test]
    fn segmented_spmv_and_sort_targets() {
        let records = vec![
            record("runs", "run_length_encode", "i32", N28, 0.52, 2322.5),
            record("runs", RUN_LENGTH_PEER, "i32", N28, 1.456, 829.7),
            record(
                "segreduce",
                SEGMENT_REDUCE_PEER,
                "f32",
                "268435456/seg1000",
                0.649,
                1657.1,
            ),
            record(
                "segreduce",
                "segmented_reduce/f32-sum",
                "f32",
                "268435456/seg1000",
                0.376,
                2860.1,
            ),
            record(
                "spmv",
                "MergePath",
                "f32",
                "4194304x4194304/powerlaw",
                1.204,
                919.4,
            ),
            record(
                "spmv",
                "cupyx.csr@x(cuSPARSE)",
                "f32",
                SPMV_POWER_LAW_PEER,
                1.188,
                931.5,
            ),
            record("sort", "onesweep", "u32", N28, 6.02, 1605.1),
            record("sort", CUB_SORT, "u32", N28, 5.531, 1747.1),
            record("sort", "argsort", "u32", N28, 9.779, 1976.4),
            record(
                "sort",
                "cupy.argsort",
                "i32",
                "268435456/argsort",
                14.35,
                1272.0,
            ),
        ];
        let targets = evaluate(&records);
        let by = |what: &str| targets.iter().find(|t| t.what.starts_with(what)).cloned();
        assert!(!by("runs run_length_encode i32").unwrap().met); // 0.77 < 0.85
                                                                 // 0.97 of the ceiling, 1.73× torch.segment_reduce by offsets.
        assert!(by("segreduce segmented_reduce/f32-sum f32").unwrap().met);
        let torch =
            by("segreduce segmented_reduce/f32-sum vs torch.segment_reduce(offsets)").unwrap();
        assert!(
            torch.met && torch.measured.starts_with("1.73×"),
            "{torch:?}"
        );
        let unique = by("runs run_length_encode vs torch.unique_consecutive").unwrap();
        assert!(
            unique.met && unique.measured.starts_with("2.80×"),
            "{unique:?}"
        );
        // The power-law matrix is paired with the peers' name for it.
        let spmv = by("spmv MergePath vs cupyx.csr@x(cuSPARSE)").unwrap();
        assert!(!spmv.met && spmv.measured.starts_with("0.99×"), "{spmv:?}");
        let ms = by("sort onesweep u32").unwrap();
        assert!(!ms.met && ms.target == "≤ 5.5 ms", "{ms:?}");
        let cub = by("sort onesweep vs cupy.ndarray.sort(in-place) u32").unwrap();
        assert!(!cub.met && cub.measured.starts_with("0.92×"), "{cub:?}");
        let argsort = by("sort argsort vs cupy.argsort").unwrap();
        assert!(
            argsort.met && argsort.measured.starts_with("1.47×"),
            "{argsort:?}"
        );
        // No f32 or u64 sort records, no targets for them.
        assert!(targets
            .iter()
            .filter(|t| t.what.starts_with("sort"))
            .all(|t| !t.what.contains("f32") && !t.what.contains("u64")));
    }

    #[test]
    fn matvec_against_cublas() {
        let records = vec![
            record("matvec", "Ax/Tuned", "f32", T16K, 0.38, 2800.0),
            record("matvec", "Ax/cuBLAS", "f32", T16K, 0.37, 2870.0),
        ];
        let targets = evaluate(&records);
        assert_eq!(targets.len(), 1);
        assert!(targets[0].met, "{:?}", targets[0]); // 0.37 / 0.38 = 0.974
                                                     // Without our cuBLAS row, the peers' torch.mv on A·x and Aᵀ·x.
        let peers = vec![
            record("matvec", "Ax/Tuned", "f32", T16K, 0.38, 2800.0),
            record("matvec", "ATx/Tuned", "f32", T16K, 0.50, 2000.0),
            record("matvec", "torch.mv(cuBLAS)", "f32", T16K, 0.37, 2870.0),
            record(
                "matvec",
                "torch.mv(cuBLAS)",
                "f32",
                "16384x16384/T",
                0.37,
                2870.0,
            ),
        ];
        let targets = evaluate(&peers);
        assert_eq!(targets.len(), 2);
        assert!(targets[0].met && !targets[1].met, "{targets:?}");
        assert!(targets[1].what.contains("torch.mv"));
    }
}
