//! The segmented-reduce lab: `reduce::segmented_reduce` of values of each
//! type `--types` names (`f32` by default; every 4- and 8-byte type), sum,
//! by `u32` offsets, segments of about 1000 (lengths drawn uniformly
//! from 1 to 1999), the default size 2^28: issue 21's target of 0.90 of the
//! copy ceiling. Also one segment of n and n segments of one at the smaller
//! sizes of the tour, which the merge path makes cost the same per byte.
//!
//! **Bytes**: `reduce::segmented::segmented_reduce_bytes_moved`: v·n +
//! (v + 4)·segments + 4 for v-byte values (values, results and offsets
//! once): 4n + 8·segments + 4 for `f32`.
//!
//! **Inputs**: values are small integers (0 to 7) of the value type, so
//! every float sum below 2^21 is exact in any order and the check is exact.

use gpu_core::{DeviceBuffer, Element, ElementType, Gpu, Result, Sum};
use parprims_testkit::bench::Repetitions;
use parprims_testkit::rng::SplitMix64;

use crate::check::{compare, Check};
use crate::inputs::derive_seed;
use crate::progress::Progress;
use crate::run::{measure_cpu, GpuCase, Spec};
use crate::select::Selection;
use crate::with_element_type;
use crate::{Lab, Row};

use super::{measure_method, Primitive};

/// The segmented reduce's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "segreduce",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| SegReducePlan::from_selection(selection, &BENCH_SIZES));

/// The benchmark's sizes: 2^28 (the target's).
pub const BENCH_SIZES: [usize; 1] = [1 << 28];

/// The tour's size.
pub const TOUR_SIZE: usize = 1 << 22;

/// The value types `--types` may name: every 4- and 8-byte type.
pub const TYPES: [ElementType; 6] = ElementType::ALL;

/// The default value type: `f32`.
pub const DEFAULT_TYPES: [ElementType; 1] = [ElementType::F32];

/// How the values are cut into segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segments {
    /// Lengths uniform in 1..=1999 (mean 1000).
    About1000,
    /// One segment of all n values.
    One,
    /// n segments of one value.
    AllOnes,
}

impl Segments {
    /// Every layout.
    pub const ALL: [Segments; 3] = [Segments::About1000, Segments::One, Segments::AllOnes];

    /// The shape's suffix: `seg1000`, `seg_n`, `seg1`.
    pub fn name(self) -> &'static str {
        match self {
            Segments::About1000 => "seg1000",
            Segments::One => "seg_n",
            Segments::AllOnes => "seg1",
        }
    }

    /// The `u32` offsets of this layout over n values (n < 2^32).
    pub fn offsets(self, n: usize, seed: u64) -> Vec<u32> {
        match self {
            Segments::One => vec![0, n as u32],
            Segments::AllOnes => (0..=n as u32).collect(),
            Segments::About1000 => {
                let mut rng = SplitMix64::new(seed);
                let mut offsets = vec![0u32];
                let mut end = 0usize;
                while end < n {
                    end = (end + 1 + rng.below(1999) as usize).min(n);
                    offsets.push(end as u32);
                }
                offsets
            }
        }
    }
}

/// What a run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct SegReducePlan {
    /// Value counts.
    pub sizes: Vec<usize>,
    /// Segment layouts.
    pub layouts: Vec<Segments>,
    /// Value types.
    pub types: Vec<ElementType>,
}

impl SegReducePlan {
    /// A plan from a selection (`--types` of [`TYPES`], `f32` by default;
    /// `--sizes` below 2^32).
    pub fn from_selection(selection: &Selection, default_sizes: &[usize]) -> Result<SegReducePlan> {
        let types = selection.types(&DEFAULT_TYPES, &TYPES)?;
        let sizes = selection.counts(default_sizes)?;
        if let Some(&n) = sizes.iter().find(|&&n| n as u64 >= u32::MAX as u64) {
            return Err(gpu_core::Error::invalid(
                "sizes",
                format!("{n}: u32 offsets, below 2^32"),
            ));
        }
        Ok(SegReducePlan {
            sizes,
            layouts: vec![Segments::About1000],
            types,
        })
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        (self.sizes.len() * self.types.len() * self.layouts.len()) as u64
    }
}

/// Small integers (0 to 7) of `T`.
pub fn values<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| T::from_f64(rng.below(8) as f64)).collect()
}

/// The row's bytes: `n` values of `value_bytes` in `segments` segments,
/// `u32` offsets.
pub fn bytes(n: usize, segments: usize, value_bytes: usize) -> f64 {
    reduce::segmented::segmented_reduce_bytes_moved(n, segments, value_bytes, 4) as f64
}

/// The method's name in tables and CSV: `segmented_reduce/f32-sum`.
pub fn method_name(value: &str) -> String {
    format!("segmented_reduce/{value}-sum")
}

struct SegReduceCase<'a, T: Element> {
    values: &'a DeviceBuffer<T>,
    offsets: &'a DeviceBuffer<u32>,
    out: DeviceBuffer<T>,
    expected: &'a [T],
}

impl<T: Element> GpuCase for SegReduceCase<'_, T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.out.view_mut().fill(gpu, T::poison())
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        reduce::segmented_reduce(
            gpu,
            self.values.view(),
            self.offsets.view(),
            &Sum,
            self.out.view_mut(),
        )
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.out.to_host(gpu)?, self.expected, 1))
    }
}

/// Runs a plan: for each size and value type, fresh values, then every
/// layout.
pub fn run(lab: &Lab, plan: &SegReducePlan, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    for (stream, &n) in plan.sizes.iter().enumerate() {
        let seed = derive_seed(lab.seed(), 0x5e_0000 + stream as u64);
        for &t in &plan.types {
            rows.extend(with_element_type!(
                t,
                run_size(lab, &plan.layouts, n, seed, progress)
            ));
        }
    }
    rows
}

fn run_size<T: Element>(
    lab: &Lab,
    layouts: &[Segments],
    n: usize,
    seed: u64,
    progress: &Progress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let t = T::SUFFIX;
    let method = method_name(t);
    progress.start(&format!("segreduce {t} {n}: values"));
    let host_values = values::<T>(n, seed);
    let gpu = lab.gpu();
    let uploaded = DeviceBuffer::from_host(gpu, &host_values);
    for &layout in layouts {
        let values_buffer = match &uploaded {
            Ok(buffer) => buffer,
            Err(error) => {
                progress.step();
                let shape = format!("{n}/{}", layout.name());
                rows.push(Spec::new("segreduce", &method, t, shape, 0.0).failed_row(error));
                continue;
            }
        };
        let offsets = layout.offsets(n, seed ^ 0x0ff5);
        let segments = offsets.len() - 1;
        let spec = Spec::new(
            "segreduce",
            &method,
            t,
            format!("{n}/{}", layout.name()),
            bytes(n, segments, T::BYTES),
        );
        progress.start(&format!("segreduce {t} {n}/{}", layout.name()));
        let expected = match reduce::segmented::segmented_reduce_cpu(&host_values, &offsets, &Sum) {
            Ok(expected) => expected,
            Err(error) => {
                progress.step();
                rows.push(spec.failed_row(&error));
                continue;
            }
        };
        let case = DeviceBuffer::from_host(gpu, &offsets).and_then(|offsets_buffer| {
            Ok((offsets_buffer, DeviceBuffer::<T>::zeros(gpu, segments)?))
        });
        let row = match case {
            Ok((offsets_buffer, out)) => {
                let case = SegReduceCase {
                    values: values_buffer,
                    offsets: &offsets_buffer,
                    out,
                    expected: &expected,
                };
                measure_method(lab, &spec, Ok(case), false, progress)
            }
            Err(error) => {
                progress.step();
                spec.failed_row(&error)
            }
        };
        rows.push(row);
    }
    rows
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let plan = SegReducePlan {
        sizes: vec![lab.tour_len(TOUR_SIZE)],
        layouts: Segments::ALL.to_vec(),
        types: DEFAULT_TYPES.to_vec(),
    };
    run(lab, &plan, progress)
}

/// The CPU reference at `n` values in segments of about 1000, timed and
/// checked against the total.
pub fn cpu_rows(n: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let host_values = values::<f32>(n, derive_seed(seed, 0x5e_0001));
    let offsets = Segments::About1000.offsets(n, seed);
    let spec = Spec::new(
        "segreduce",
        "segmented_reduce/cpu",
        "f32",
        format!("{n}/seg1000"),
        bytes(n, offsets.len() - 1, 4),
    );
    let mut out = Vec::new();
    let row = measure_cpu(&spec, reps, || {
        out = reduce::segmented::segmented_reduce_cpu(&host_values, &offsets, &Sum)?;
        Ok(())
    });
    let total: f64 = host_values.iter().map(|&v| v as f64).sum();
    let folded: f64 = out.iter().map(|&v| v as f64).sum();
    vec![row.checked_by(|| {
        if total == folded {
            Check::Pass
        } else {
            Check::Fail(format!("segments sum to {folded}, the values to {total}"))
        }
    })]
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_SIZE, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_plans_and_bytes() {
        let n = 1 << 20;
        let offsets = Segments::About1000.offsets(n, 3);
        assert_eq!((offsets[0], *offsets.last().unwrap()), (0, n as u32));
        let mean = n as f64 / (offsets.len() - 1) as f64;
        assert!((900.0..1100.0).contains(&mean), "mean {mean}");
        assert_eq!(Segments::One.offsets(5, 0), vec![0, 5]);
        assert_eq!(Segments::AllOnes.offsets(3, 0), vec![0, 1, 2, 3]);
        let plan = SegReducePlan::from_selection(&Selection::default(), &BENCH_SIZES).unwrap();
        assert_eq!(
            (plan.cases(), plan.types.as_slice()),
            (1, &[ElementType::F32][..])
        );
        assert_eq!(method_name("f32"), "segmented_reduce/f32-sum");
        assert_eq!(
            bytes(1 << 28, 1 << 18, 4),
            (4u64 * (1 << 28) + 8 * (1 << 18) + 4) as f64
        );
        // 8-byte values: 8n + (8 + 4)·segments + 4.
        assert_eq!(
            bytes(1 << 28, 1 << 18, 8),
            (8u64 * (1 << 28) + 12 * (1 << 18) + 4) as f64
        );
        let wide = Selection {
            types: Some("f32,f64,i64,u64".into()),
            ..Selection::default()
        };
        assert_eq!(
            SegReducePlan::from_selection(&wide, &BENCH_SIZES)
                .unwrap()
                .cases(),
            4
        );
        // The values are the same small integers in every type.
        let narrow = values::<f32>(1000, 7);
        let doubles = values::<f64>(1000, 7);
        assert!(narrow.iter().zip(&doubles).all(|(&a, &b)| a as f64 == b));
        assert!(values::<u64>(1000, 7).iter().all(|&v| v < 8));
        let big = Selection {
            sizes: Some("2^32".into()),
            ..Selection::default()
        };
        assert!(SegReducePlan::from_selection(&big, &BENCH_SIZES).is_err());
    }

    #[test]
    fn cpu_rows_pass() {
        let rows = cpu_rows(
            100_003,
            5,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert!(rows.iter().all(|r| r.check.passed()), "{rows:?}");
    }
}
