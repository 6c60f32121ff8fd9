//! Shared helpers of the look-back and reduce-then-scan GPU tests
//! (`tests/lookback*.rs`): inputs, non-commutative operators, a runner for
//! each way of calling the kernels, and a checked case.
#![allow(dead_code)]

use gpu_core::{CustomOp, DeviceBuffer, DeviceView, DeviceViewMut, Element, Gpu, Operator};
use parprims_testkit::rng::random_vec;
use scan::policy::Policy;
use scan::{ScanAlgorithm, ScanKind, ScanOptions};

/// The device, or a panic saying a GPU is needed.
pub fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// A fresh seed per run (scan_support's, so each test binary that uses this
/// module declares `mod scan_support;` beside it).
pub use crate::scan_support::fresh_seed;

/// Inputs whose scans are exact for every operator: integers over a wide
/// range (sums wrap), floats rounded to whole numbers in [-8, 8) so every
/// partial sum of up to ~2^28 of them is exactly representable (a random
/// walk of that length stays far below 2^24).
pub fn exact_input<T: Element>(n: usize, seed: u64) -> Vec<T> {
    if T::IS_FLOAT {
        random_vec::<T>(n, seed, -8.0, 8.0)
            .into_iter()
            .map(|x| T::from_f64(x.to_f64().round()))
            .collect()
    } else if T::IS_SIGNED {
        random_vec::<T>(n, seed, -2.0e9, 2.0e9)
    } else {
        random_vec::<T>(n, seed, 0.0, 4.0e9)
    }
}

/// Affine maps v ↦ v·m + o (mod 2^32) packed as (o << 32) | m, composed
/// left to right: (m1, o1) ∘ (m2, o2) = (m1·m2, o1·m2 + o2). Associative,
/// not commutative; identity (1, 0) = 1.
pub fn affine_u64() -> CustomOp<u64> {
    CustomOp::<u64>::new(
        "affine32",
        "((((a & 0xffffffffull) * (b & 0xffffffffull)) & 0xffffffffull) | \
         ((((a >> 32) * (b & 0xffffffffull) + (b >> 32)) & 0xffffffffull) << 32))",
        1,
        |a, b| {
            let (am, ao) = (a as u32, (a >> 32) as u32);
            let (bm, bo) = (b as u32, (b >> 32) as u32);
            let m = am.wrapping_mul(bm);
            let o = ao.wrapping_mul(bm).wrapping_add(bo);
            ((o as u64) << 32) | m as u64
        },
    )
    .expect("a valid custom operator")
}

/// The same affine composition mod 2^16, packed into u32 as (o << 16) | m:
/// a non-commutative operator for the packed (4-byte) status word.
pub fn affine_u32() -> CustomOp<u32> {
    CustomOp::<u32>::new(
        "affine16",
        "((((a & 0xffffu) * (b & 0xffffu)) & 0xffffu) | \
         ((((a >> 16) * (b & 0xffffu) + (b >> 16)) & 0xffffu) << 16))",
        1,
        |a, b| {
            let (am, ao) = (a & 0xffff, a >> 16);
            let (bm, bo) = (b & 0xffff, b >> 16);
            let m = am.wrapping_mul(bm) & 0xffff;
            let o = (ao.wrapping_mul(bm).wrapping_add(bo)) & 0xffff;
            (o << 16) | m
        },
    )
    .expect("a valid custom operator")
}

/// Affine inputs with odd multipliers (so products never collapse to 0 and
/// every element keeps mattering to every later prefix).
pub fn affine_input_u64(n: usize, seed: u64) -> Vec<u64> {
    random_vec::<u64>(n, seed, 0.0, 1.8e19)
        .into_iter()
        .map(|x| x | 1)
        .collect()
}

/// As [`affine_input_u64`], for [`affine_u32`].
pub fn affine_input_u32(n: usize, seed: u64) -> Vec<u32> {
    random_vec::<u32>(n, seed, 0.0, 4.2e9)
        .into_iter()
        .map(|x| x | 1)
        .collect()
}

/// How a case calls the kernels.
#[derive(Clone, Copy, Debug)]
pub enum Runner {
    /// The public API (`scan_into` / `scan_in_place`) with an algorithm.
    Public(ScanAlgorithm),
    /// The look-back kernel with an explicit tile shape.
    Lookback(Policy),
    /// Reduce-then-scan with an explicit tile shape.
    ReduceThenScan(Policy),
}

impl Runner {
    /// Runs one scan; `input = None` scans `output` in place.
    pub fn run<T: Element, O: Operator<T>>(
        self,
        gpu: &Gpu,
        input: Option<DeviceView<'_, T>>,
        output: DeviceViewMut<'_, T>,
        op: &O,
        kind: ScanKind<T>,
    ) -> gpu_core::Result<()> {
        match (self, input) {
            (Runner::Public(algorithm), Some(input)) => {
                scan::scan_into(gpu, input, output, op, kind, &ScanOptions::new(algorithm))
            }
            (Runner::Public(algorithm), None) => {
                scan::scan_in_place(gpu, output, op, kind, &ScanOptions::new(algorithm))
            }
            (Runner::Lookback(tuning), input) => {
                let options =
                    ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(tuning);
                match input {
                    Some(input) => scan::scan_into(gpu, input, output, op, kind, &options),
                    None => scan::scan_in_place(gpu, output, op, kind, &options),
                }
            }
            (Runner::ReduceThenScan(tuning), input) => {
                let options = ScanOptions::new(ScanAlgorithm::ReduceThenScan).with_policy(tuning);
                match input {
                    Some(input) => scan::scan_into(gpu, input, output, op, kind, &options),
                    None => scan::scan_in_place(gpu, output, op, kind, &options),
                }
            }
        }
    }
}

/// Where the data lives.
#[derive(Clone, Copy, Debug)]
pub enum Placement {
    /// Separate input and output buffers.
    OutOfPlace,
    /// One buffer, scanned in place.
    InPlace,
    /// Input starts `in_offset` elements into its buffer, output
    /// `out_offset` elements into a poisoned buffer; the elements around
    /// the output view must stay poisoned.
    Offsets(usize, usize),
}

/// Index of the first difference, for messages.
pub fn first_difference<T: PartialEq>(got: &[T], want: &[T]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w)
}

/// Asserts got == want element by element (floats by value: -0.0 == 0.0),
/// naming the first difference.
pub fn assert_same<T: Element>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = first_difference(got, want) {
        let lo = i.saturating_sub(2);
        let hi = (i + 3).min(got.len());
        panic!(
            "{what}: first difference at {i} of {}: got {:?}, want {:?}",
            got.len(),
            &got[lo..hi],
            &want[lo..hi]
        );
    }
}

/// Scans `host` on the GPU with `runner` and compares with the CPU
/// reference exactly.
pub fn check_case<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    runner: Runner,
    host: &[T],
    op: &O,
    kind: ScanKind<T>,
    placement: Placement,
    what: &str,
) {
    let n = host.len();
    let want = scan::cpu::scan(host, op, kind);
    let what = format!("{what} {runner:?} n={n} {kind:?} {placement:?}");
    match placement {
        Placement::OutOfPlace => {
            let input = DeviceBuffer::from_host(gpu, host).expect("upload");
            let mut output = DeviceBuffer::<T>::poisoned(gpu, n).expect("output");
            runner
                .run(gpu, Some(input.view()), output.view_mut(), op, kind)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_same(&output.to_host(gpu).expect("download"), &want, &what);
            // The input is untouched.
            assert_same(&input.to_host(gpu).expect("download"), host, &what);
        }
        Placement::InPlace => {
            let mut data = DeviceBuffer::from_host(gpu, host).expect("upload");
            runner
                .run(gpu, None, data.view_mut(), op, kind)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_same(&data.to_host(gpu).expect("download"), &want, &what);
        }
        Placement::Offsets(in_offset, out_offset) => {
            let mut padded_in = vec![T::poison(); n + in_offset + 3];
            padded_in[in_offset..in_offset + n].copy_from_slice(host);
            let input = DeviceBuffer::from_host(gpu, &padded_in).expect("upload");
            let mut output = DeviceBuffer::<T>::poisoned(gpu, n + out_offset + 3).expect("output");
            let in_view = input.slice(in_offset..in_offset + n).expect("input view");
            let out_view = output
                .slice_mut(out_offset..out_offset + n)
                .expect("output view");
            runner
                .run(gpu, Some(in_view), out_view, op, kind)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = output.to_host(gpu).expect("download");
            assert_same(&got[out_offset..out_offset + n], &want, &what);
            let untouched = got[..out_offset]
                .iter()
                .chain(&got[out_offset + n..])
                .all(|x| bytemuck::bytes_of(x) == bytemuck::bytes_of(&T::poison()));
            assert!(untouched, "{what}: wrote outside the output view");
        }
    }
}

/// One way of calling the kernels on one device: the checks the look-back
/// and reduce-then-scan tests run, each against the CPU reference.
#[derive(Clone, Copy)]
pub struct Checker<'g> {
    pub gpu: &'g Gpu,
    pub runner: Runner,
}

impl<'g> Checker<'g> {
    pub fn new(gpu: &'g Gpu, runner: Runner) -> Self {
        Checker { gpu, runner }
    }

    /// [`check_case`] with this checker's device and runner.
    pub fn case<T: Element, O: Operator<T>>(
        &self,
        host: &[T],
        op: &O,
        kind: ScanKind<T>,
        placement: Placement,
        what: &str,
    ) {
        check_case(self.gpu, self.runner, host, op, kind, placement, what);
    }

    /// [`Checker::case`] for each `(kind, placement)` of `cases`.
    pub fn cases<T: Element, O: Operator<T>>(
        &self,
        host: &[T],
        op: &O,
        cases: &[(ScanKind<T>, Placement)],
        what: &str,
    ) {
        for &(kind, placement) in cases {
            self.case(host, op, kind, placement, what);
        }
    }

    /// Runs the same scan of `host` `runs` times into a re-poisoned output;
    /// `each(run, output)` gets every run's result.
    pub fn each_run<T: Element, O: Operator<T>>(
        &self,
        host: &[T],
        op: &O,
        kind: ScanKind<T>,
        runs: usize,
        mut each: impl FnMut(usize, Vec<T>),
    ) {
        let gpu = self.gpu;
        let input = DeviceBuffer::from_host(gpu, host).expect("upload");
        let mut output = DeviceBuffer::<T>::poisoned(gpu, host.len()).expect("output");
        for run in 0..runs {
            output.view_mut().fill(gpu, T::poison()).expect("poison");
            self.runner
                .run(gpu, Some(input.view()), output.view_mut(), op, kind)
                .unwrap_or_else(|e| panic!("{:?} run {run}: {e}", self.runner));
            each(run, output.to_host(gpu).expect("download"));
        }
    }

    /// [`Checker::each_run`], every run compared with the CPU reference.
    pub fn repeated<T: Element, O: Operator<T>>(
        &self,
        host: &[T],
        op: &O,
        kind: ScanKind<T>,
        runs: usize,
        what: &str,
    ) {
        let want = scan::cpu::scan(host, op, kind);
        let what = format!("{what} {:?} n={}", self.runner, host.len());
        self.each_run(host, op, kind, runs, |run, got| {
            assert_same(&got, &want, &format!("{what} run {run} of {runs}"));
        });
    }
}

/// Lengths around the edges of a tile of `tile` items: 1, warp edges,
/// block edges, tile ± 1, a few tiles ± 1, and more tiles than one window
/// of the look-back (32) holds.
pub fn edge_lengths(tile: usize) -> Vec<usize> {
    let mut lengths = vec![1, 2, 31, 32, 33, 255, 256, 257];
    for k in [1, 2, 3, 33, 70] {
        lengths.extend([k * tile - 1, k * tile, k * tile + 1]);
    }
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}
