//! The lab runner on a GPU: the checks it reports are real (a method that
//! writes nothing, or writes a wrong value, is caught), rows become records
//! against the measured ceiling, and each primitive's tour passes.

use gpu_core::{DeviceBuffer, Gpu, Result};
use parprims_lab::check::{compare, Check};
use parprims_lab::prims;
use parprims_lab::progress::Progress;
use parprims_lab::run::{measure_gpu, GpuCase, Spec};
use parprims_lab::{Lab, LabOptions, Row};

fn lab() -> Lab {
    let gpu = Gpu::new(0).expect("a CUDA GPU");
    let mut options = LabOptions::with_reps(3).expect("3 reps");
    options.seed = 12345;
    // A quarter GiB is enough for a ceiling in a test.
    options.ceiling_bytes = 1 << 28;
    // The quick tour under the sanitizer script (parprims_testkit::testing).
    options.quick = parprims_testkit::testing::quick_tests();
    Lab::with_gpu(gpu, options).expect("the lab opens")
}

/// A row as a failed assertion names it: primitive, method, type, shape
/// and the check.
fn describe(row: &Row) -> String {
    format!(
        "{} {} {} {}: {:?}",
        row.primitive, row.method, row.element_type, row.shape, row.check
    )
}

/// A case that copies `source` into `target` — or, when `broken`, writes
/// only the first half, or adds one to one element.
struct Halves {
    source: DeviceBuffer<i32>,
    target: DeviceBuffer<i32>,
    expected: Vec<i32>,
    broken: Broken,
}

#[derive(Clone, Copy, PartialEq)]
enum Broken {
    No,
    WritesHalf,
    OffByOne,
}

impl GpuCase for Halves {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.target
            .view_mut()
            .fill(gpu, <i32 as gpu_core::DeviceType>::poison())
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        let n = self.source.len();
        match self.broken {
            Broken::No => self.target.view_mut().copy_from(gpu, &self.source.view()),
            Broken::WritesHalf => self
                .target
                .slice_mut(..n / 2)?
                .copy_from(gpu, &self.source.slice(..n / 2)?),
            Broken::OffByOne => {
                self.target.view_mut().copy_from(gpu, &self.source.view())?;
                let wrong = self.expected[n / 3].wrapping_add(1);
                self.target
                    .slice_mut(n / 3..n / 3 + 1)?
                    .copy_from_host(gpu, &[wrong])
            }
        }
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.target.to_host(gpu)?, &self.expected, 1))
    }
}

fn halves(lab: &Lab, broken: Broken) -> parprims_lab::Row {
    let n = 1 << 20;
    let host: Vec<i32> = (0..n as i32).collect();
    let case = DeviceBuffer::from_host(lab.gpu(), &host).and_then(|source| {
        Ok(Halves {
            source,
            target: DeviceBuffer::zeros(lab.gpu(), n)?,
            expected: host.clone(),
            broken,
        })
    });
    let spec = Spec::new("test", "halves", "i32", n.to_string(), 8.0 * n as f64);
    measure_gpu(lab, &spec, case, false)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_results_are_reported_not_hidden() {
    let lab = lab();
    parprims_testkit::testing::assert_plausible_copy_rate(lab.ceiling().gbps);
    let good = halves(&lab, Broken::No);
    assert!(good.check.passed(), "{:?}", good.check);
    assert!(good.ms.unwrap() > 0.0);
    let half = halves(&lab, Broken::WritesHalf);
    match &half.check {
        Check::Fail(reason) => {
            assert!(reason.contains("524288 of 1048576 differ"), "{reason}");
            assert!(reason.contains("never written"), "{reason}");
        }
        other => panic!("a half-written output passed: {other:?}"),
    }
    let off = halves(&lab, Broken::OffByOne);
    assert!(off.check.failed(), "{:?}", off.check);
    let records = lab.records(&[good, half, off]);
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.ceiling_gbps == lab.ceiling().gbps));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_primitive_tour_passes() {
    let lab = lab();
    for primitive in prims::registry() {
        let rows = (primitive.tour)(&lab, &Progress::hidden());
        assert!(!rows.is_empty(), "{} made no rows", primitive.name);
        for row in &rows {
            assert!(!row.check.failed(), "{}", describe(row));
        }
        // Every GPU row that ran became a record with a positive rate.
        for record in lab.records(&rows) {
            assert!(record.gbps > 0.0, "{record:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn odd_sizes_pass_in_every_primitive() {
    let lab = lab();
    let selection = |sizes: &str| parprims_lab::select::Selection {
        sizes: Some(sizes.into()),
        ..Default::default()
    };
    let quiet = Progress::hidden();
    let cases = [
        ("scan", "1,31,33,1000003"),
        ("compact", "1,33,1000003"),
        ("transpose", "1x7,33x65,1000x3"),
        ("matvec", "1x7,33x65,1000x3"),
        ("conv", "5x5,33x65,100x7"),
        ("copy", "1,1000003"),
    ];
    for (name, sizes) in cases {
        let primitive = prims::find(name).expect("registered");
        let rows = (primitive.bench)(&lab, &selection(sizes), &quiet).expect("valid selection");
        assert!(!rows.is_empty());
        for row in &rows {
            assert!(row.check.passed(), "{}", describe(row));
        }
    }
}
