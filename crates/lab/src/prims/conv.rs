//! The convolution lab: `Valid` 2-D cross-correlation of an H × W image
//! with a K × K filter, with the CPU loop and every GPU algorithm of
//! `linalg::conv2d` (global, filter in shared memory, filter in constant
//! memory, tiled with halo) at each block size of the lab.
//!
//! Bytes moved: the image once, the outputs once, the filter once,
//! [`linalg::conv_bytes_moved`] (4·H·W + 4·outputs + 4·K² for `f32`).

use gpu_core::{ElementType, Result};
use linalg::{Border, ConvAlgorithm, ConvElement, ConvOptions, Matrix};
use parprims_testkit::bench::Repetitions;

use crate::check::Check;
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_cpu, Spec};
use crate::select::Selection;
use crate::sizes::dims_shape;
use crate::{Lab, Row};

use super::case::UploadedCase;
use super::{cpu_reference, measure_method, rows_per_shape, Primitive};

/// The convolution's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "conv",
    validate,
    bench,
    tour,
    cpu,
};

bench_entry_points!(|selection| ConvPlan::from_selection(selection, &BENCH_DIMS));

/// Element types conv2d takes.
pub const TYPES: [ElementType; 3] = [ElementType::F32, ElementType::I32, ElementType::F64];

/// Filter sides the runs use: K = 3, 5 and 7 (the strip kernel's widest).
pub const FILTERS: [usize; 3] = [3, 5, 7];

/// The lab's block sizes (threads per block, x × y).
pub const LAB_BLOCKS: [(u32, u32); 3] = [(8, 8), (16, 16), (32, 32)];

/// The benchmark's default images, up to the headline 8192².
pub const BENCH_DIMS: [(usize, usize); 4] =
    [(1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192)];

/// The lab's images (the example's default).
pub const LAB_DIMS: [(usize, usize); 2] = [(1000, 1000), (10_000, 10_000)];

/// The tour's image.
pub const TOUR_DIMS: (usize, usize) = (2048, 2048);

/// The name a method has in tables and CSV: `TiledHalo` at the default
/// block, `Global@16x16` at another.
pub fn method_name(algorithm: ConvAlgorithm, block: (u32, u32)) -> String {
    if block == linalg::conv::DEFAULT_BLOCK {
        format!("{algorithm:?}")
    } else {
        format!("{algorithm:?}@{}x{}", block.0, block.1)
    }
}

/// The shape a record carries: `8192x8192/k3`.
pub fn shape(rows: usize, cols: usize, k: usize) -> String {
    format!("{}/k{k}", dims_shape(rows, cols))
}

/// What a convolution run covers.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvPlan {
    /// `(H, W)` of the image.
    pub dims: Vec<(usize, usize)>,
    /// Filter sides.
    pub filters: Vec<usize>,
    /// Element types.
    pub types: Vec<ElementType>,
    /// (algorithm, block) pairs.
    pub methods: Vec<(ConvAlgorithm, (u32, u32))>,
    /// Time the CPU reference as a row.
    pub cpu_row: bool,
    /// Also time each method with its host↔device copies.
    pub copies: bool,
}

impl ConvPlan {
    /// Every algorithm at the default block.
    pub fn default_methods() -> Vec<(ConvAlgorithm, (u32, u32))> {
        ConvAlgorithm::ALL
            .into_iter()
            .map(|a| (a, linalg::conv::DEFAULT_BLOCK))
            .collect()
    }

    /// Every algorithm at each of the lab's block sizes, then at the default.
    pub fn lab_methods() -> Vec<(ConvAlgorithm, (u32, u32))> {
        let mut all = Vec::new();
        for algorithm in ConvAlgorithm::ALL {
            for block in LAB_BLOCKS {
                all.push((algorithm, block));
            }
            all.push((algorithm, linalg::conv::DEFAULT_BLOCK));
        }
        all
    }

    /// A plan from a selection, validated without a GPU. `--algos` takes
    /// algorithm names (`TiledHalo`) or names with a block
    /// (`Global@16x16`); `--block-size 16` runs the chosen algorithms at
    /// 16 × 16.
    pub fn from_selection(
        selection: &Selection,
        default_dims: &[(usize, usize)],
    ) -> Result<ConvPlan> {
        let all = Self::lab_methods();
        let names: Vec<String> = all.iter().map(|(a, b)| method_name(*a, *b)).collect();
        let defaults: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, (_, block))| *block == linalg::conv::DEFAULT_BLOCK)
            .map(|(i, _)| i)
            .collect();
        let mut methods: Vec<(ConvAlgorithm, (u32, u32))> = selection
            .algos(&names, &defaults)?
            .into_iter()
            .map(|i| all[i])
            .collect();
        if let Some(side) = selection.block_threads {
            let block = (side, side);
            if !linalg::conv::CONV_BLOCKS.contains(&block) {
                return Err(gpu_core::Error::invalid(
                    "block_threads",
                    format!("{side}: conv blocks are 8, 16 or 32 a side"),
                ));
            }
            for method in &mut methods {
                method.1 = block;
            }
            methods.dedup();
        }
        let dims = selection.dims(default_dims)?;
        let types = selection.types(&[ElementType::F32], &TYPES)?;
        let plan = ConvPlan {
            dims,
            filters: FILTERS.to_vec(),
            types,
            methods,
            cpu_row: false,
            copies: false,
        };
        for &(h, w) in &plan.dims {
            // The filters that do not fit an image (K = 7 on a 5 × 5 one)
            // are left out for it; an image no filter fits is refused.
            let fitting: Vec<usize> = plan.filters_for(h, w).collect();
            if fitting.is_empty() {
                return Err(gpu_core::Error::invalid(
                    "sizes",
                    format!("{h}x{w} is smaller than every filter ({:?})", plan.filters),
                ));
            }
            for k in fitting {
                for &(algorithm, block) in &plan.methods {
                    let options = options(algorithm, block);
                    let out = linalg::conv::output_shape(h, w, k, Border::Valid)?;
                    linalg::validate_conv::<f32>((h, w), (k, k), out, &options)?;
                }
            }
        }
        Ok(plan)
    }

    /// The plan's filter sides that fit an `h × w` image (`Valid`: K ≤ H
    /// and K ≤ W).
    pub fn filters_for(&self, h: usize, w: usize) -> impl Iterator<Item = usize> + '_ {
        self.filters
            .iter()
            .copied()
            .filter(move |&k| k <= h && k <= w)
    }

    /// Table rows the plan makes.
    pub fn cases(&self) -> u64 {
        let shapes: usize = self
            .dims
            .iter()
            .map(|&(h, w)| self.filters_for(h, w).count())
            .sum();
        (shapes * self.types.len() * (self.methods.len() + usize::from(self.cpu_row))) as u64
    }
}

fn options(algorithm: ConvAlgorithm, block: (u32, u32)) -> ConvOptions {
    ConvOptions {
        algorithm,
        block,
        ..ConvOptions::default()
    }
}

/// Bytes a `Valid` convolution of an `h × w` image with a `k × k` filter
/// of `T` moves.
pub fn bytes<T: ConvElement>(h: usize, w: usize, k: usize) -> f64 {
    linalg::conv_bytes_moved(h, w, k, Border::Valid, T::BYTES) as f64
}

/// Runs a plan.
pub fn run(lab: &Lab, plan: &ConvPlan, progress: &Progress) -> Vec<Row> {
    rows_per_shape(&plan.types, &plan.dims, 0xc0_4000, |t, dims, stream| {
        with_linalg_type!(t, run_shape(lab, plan, dims, stream, progress))
    })
}

fn run_shape<T: ConvElement>(
    lab: &Lab,
    plan: &ConvPlan,
    (h, w): (usize, usize),
    stream: u64,
    progress: &Progress,
) -> Vec<Row> {
    let t = T::SUFFIX;
    let mut out = Vec::new();
    progress.start(&format!("conv {t} {h}x{w}: inputs"));
    let image_host = values::<T>(h * w, derive_seed(lab.seed(), stream));
    let gpu = lab.gpu();
    let mut image = Matrix::from_host(gpu, h, w, &image_host);
    for k in plan.filters_for(h, w) {
        let shape = shape(h, w, k);
        let filter_host = values::<T>(k * k, derive_seed(lab.seed(), stream ^ (k as u64) << 20));
        let mut expected = Vec::new();
        let reference = Spec::new("conv", "cpu", t, shape.clone(), bytes::<T>(h, w, k));
        progress.start(&format!("conv {t} {shape}: CPU reference"));
        out.extend(cpu_reference(
            lab,
            &reference,
            plan.cpu_row,
            progress,
            || {
                expected = linalg::conv_cpu::conv2d(
                    &image_host,
                    h,
                    w,
                    &filter_host,
                    k,
                    &ConvOptions::default(),
                )?;
                Ok(())
            },
        ));
        let (out_rows, out_cols) = match linalg::conv::output_shape(h, w, k, Border::Valid) {
            Ok(shape) => shape,
            Err(error) => {
                out.push(reference.failed_row(&error));
                continue;
            }
        };
        let uploaded = match (&mut image, Matrix::from_host(gpu, k, k, &filter_host)) {
            (Ok(image), Ok(filter)) => Ok((image, filter)),
            (Err(error), _) => Err(gpu_core::Error::Unsupported(format!(
                "image upload: {error}"
            ))),
            (_, Err(error)) => Err(error),
        };
        let (image, filter) = match uploaded {
            Ok(pair) => pair,
            Err(error) => {
                out.push(Spec::new("conv", "upload", t, shape.clone(), 0.0).failed_row(&error));
                continue;
            }
        };
        for &(algorithm, block) in &plan.methods {
            let name = method_name(algorithm, block);
            progress.start(&format!("conv {t} {shape}: {name}"));
            let spec = Spec::new("conv", name, t, shape.clone(), bytes::<T>(h, w, k));
            let options = options(algorithm, block);
            let filter = &filter;
            let case = Matrix::<T>::poisoned(gpu, out_rows, out_cols).map(|output| {
                UploadedCase::new(
                    &image_host,
                    &mut *image,
                    output,
                    &expected,
                    k * k,
                    move |gpu, image, output| {
                        linalg::conv2d(
                            gpu,
                            image.view(),
                            filter.view(),
                            output.view_mut(),
                            &options,
                        )
                    },
                )
            });
            out.push(measure_method(lab, &spec, case, plan.copies, progress));
        }
    }
    out
}

/// The tour: every algorithm at the default block and `Global` and
/// `SharedFilter` at the lab's 16 × 16.
fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    let mut methods = ConvPlan::default_methods();
    methods.insert(0, (ConvAlgorithm::SharedFilter, (16, 16)));
    methods.insert(0, (ConvAlgorithm::Global, (16, 16)));
    let plan = ConvPlan {
        dims: vec![lab.tour_dims(TOUR_DIMS)],
        filters: FILTERS.to_vec(),
        types: vec![ElementType::F32],
        methods,
        cpu_row: true,
        copies: true,
    };
    run(lab, &plan, progress)
}

/// The CPU reference at `h × w` for each of [`FILTERS`], timed; checked at sampled
/// outputs against a direct sum written here.
pub fn cpu_rows(h: usize, w: usize, seed: u64, reps: Repetitions) -> Vec<Row> {
    let image = values::<f32>(h * w, derive_seed(seed, 0xc0_4001));
    let mut out = Vec::new();
    for k in FILTERS {
        let filter = values::<f32>(k * k, derive_seed(seed, 0xc0_4002 + k as u64));
        let spec = Spec::new("conv", "cpu", "f32", shape(h, w, k), bytes::<f32>(h, w, k));
        let mut result = Vec::new();
        let row = measure_cpu(&spec, reps, || {
            result = linalg::conv_cpu::conv2d(&image, h, w, &filter, k, &ConvOptions::default())?;
            Ok(())
        });
        out.push(row.checked_by(|| {
            // A row that ran had a valid shape; an image smaller than the
            // filter failed in the reference and keeps that failure.
            let (out_rows, out_cols) = (h.saturating_sub(k) + 1, w.saturating_sub(k) + 1);
            sampled_check(&image, w, &filter, k, &result, out_rows, out_cols)
        }));
    }
    out
}

/// `out[i][j] = Σ image[i+a][j+b]·filter[a][b]` at a spread of outputs.
fn sampled_check(
    image: &[f32],
    w: usize,
    filter: &[f32],
    k: usize,
    result: &[f32],
    out_rows: usize,
    out_cols: usize,
) -> Check {
    if out_rows == 0 || out_cols == 0 || result.len() != out_rows * out_cols {
        return Check::Fail(format!(
            "{} outputs, expected {out_rows}×{out_cols}",
            result.len()
        ));
    }
    let samples = [
        (0, 0),
        (out_rows - 1, out_cols - 1),
        (out_rows / 2, out_cols / 3),
        (1, out_cols - 1),
    ];
    for (i, j) in samples {
        let mut sum = 0.0f64;
        for a in 0..k {
            for b in 0..k {
                sum += image[(i + a) * w + j + b] as f64 * filter[a * k + b] as f64;
            }
        }
        let got = result[i * out_cols + j] as f64;
        if got != sum {
            return Check::Fail(format!("out[{i}][{j}] = {got}, direct sum {sum}"));
        }
    }
    Check::Pass
}

fn cpu(seed: u64, reps: Repetitions) -> Vec<Row> {
    cpu_rows(TOUR_DIMS.0, TOUR_DIMS.1, seed, reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_names() {
        let plan = ConvPlan::from_selection(&Selection::default(), &BENCH_DIMS).unwrap();
        assert_eq!(plan.methods.len(), 4);
        assert_eq!(plan.filters, vec![3, 5, 7]);
        assert_eq!(
            method_name(ConvAlgorithm::TiledHalo, linalg::conv::DEFAULT_BLOCK),
            "TiledHalo"
        );
        assert_eq!(method_name(ConvAlgorithm::Global, (16, 16)), "Global@16x16");
        assert_eq!(shape(8192, 8192, 3), "8192x8192/k3");
        let blocks = Selection {
            algos: Some("Global,SharedFilter".into()),
            block_threads: Some(8),
            ..Selection::default()
        };
        let plan = ConvPlan::from_selection(&blocks, &[(64, 64)]).unwrap();
        assert_eq!(
            plan.methods,
            vec![
                (ConvAlgorithm::Global, (8, 8)),
                (ConvAlgorithm::SharedFilter, (8, 8))
            ]
        );
        let bad = Selection {
            block_threads: Some(12),
            ..Selection::default()
        };
        assert!(ConvPlan::from_selection(&bad, &[(64, 64)]).is_err());
        // An image smaller than every filter has no Valid output.
        let tiny = ConvPlan::from_selection(&Selection::default(), &[(2, 2)]).err();
        assert!(tiny.is_some_and(|e| e.to_string().contains("2x2 is smaller than every filter")));
        // K = 7 does not fit a 5 × 5 image: that image runs K = 3 and 5 only.
        let small = ConvPlan::from_selection(&Selection::default(), &[(5, 5), (64, 64)]).unwrap();
        assert_eq!(small.filters_for(5, 5).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(small.cases(), ((2 + 3) * small.methods.len()) as u64);
        assert_eq!(ConvPlan::lab_methods().len(), 16);
    }

    #[test]
    fn headline_bytes() {
        let b = bytes::<f32>(8192, 8192, 3);
        let outputs = 8190.0 * 8190.0;
        assert_eq!(b, 4.0 * 8192.0 * 8192.0 + 4.0 * outputs + 4.0 * 9.0);
    }

    #[test]
    fn cpu_reference_matches_direct_sums() {
        let rows = cpu_rows(
            67,
            45,
            8,
            Repetitions {
                warmup: 0,
                timed: 1,
            },
        );
        assert_eq!(rows.len(), FILTERS.len());
        assert!(rows.iter().all(|r| r.check.passed()), "{rows:?}");
    }
}
