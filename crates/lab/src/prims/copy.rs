//! The device-to-device copy as a row of the table: the ceiling every other
//! primitive is measured against, at the table's own size (so a size that
//! fits in L2 shows what that does to a "bandwidth").
//!
//! Bytes moved: `2 · n · size_of::<T>()` (read once, written once). One
//! `cuMemcpyDtoDAsync`; no kernel, no shared memory; deterministic.

use gpu_core::{DeviceBuffer, Element, ElementType, Gpu, Result};
use parprims_testkit::bench::Repetitions;

use crate::check::{compare, Check};
use crate::inputs::{derive_seed, values};
use crate::progress::Progress;
use crate::run::{measure_gpu, GpuCase, Spec};
use crate::select::Selection;
use crate::{Lab, Row};

use super::Primitive;

/// The copy's entry points.
pub const PRIMITIVE: Primitive = Primitive {
    name: "copy",
    validate,
    bench,
    tour,
    cpu,
};

/// Sizes of the benchmark's copy: from L2-resident to far past it.
pub const BENCH_SIZES: [usize; 6] = [1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28];

const TYPES: [ElementType; 2] = [ElementType::I32, ElementType::U64];

fn validate(selection: &Selection) -> Result<u64> {
    let sizes = selection.counts(&BENCH_SIZES)?;
    let types = selection.types(&[ElementType::I32], &TYPES)?;
    Ok((sizes.len() * types.len()) as u64)
}

fn bench(lab: &Lab, selection: &Selection, progress: &Progress) -> Result<Vec<Row>> {
    let sizes = selection.counts(&BENCH_SIZES)?;
    let types = selection.types(&[ElementType::I32], &TYPES)?;
    let mut rows = Vec::new();
    for &t in &types {
        for &n in &sizes {
            progress.start(&format!("copy {t} {n}"));
            rows.push(match t {
                ElementType::U64 => row::<u64>(lab, n),
                _ => row::<i32>(lab, n),
            });
            progress.step();
        }
    }
    Ok(rows)
}

fn tour(lab: &Lab, progress: &Progress) -> Vec<Row> {
    progress.start("copy");
    let rows = vec![row::<i32>(lab, lab.tour_len(1 << 24))];
    progress.step();
    rows
}

/// The CPU has no reference for a device copy: no rows.
fn cpu(_seed: u64, _reps: Repetitions) -> Vec<Row> {
    Vec::new()
}

/// Bytes a copy of `n` elements of `element_bytes` moves.
pub fn bytes_moved(n: usize, element_bytes: usize) -> f64 {
    2.0 * n as f64 * element_bytes as f64
}

struct CopyCase<T: Element> {
    host: Vec<T>,
    source: DeviceBuffer<T>,
    target: DeviceBuffer<T>,
}

impl<T: Element> CopyCase<T> {
    fn new(gpu: &Gpu, host: Vec<T>) -> Result<Self> {
        Ok(CopyCase {
            source: DeviceBuffer::from_host(gpu, &host)?,
            target: DeviceBuffer::poisoned(gpu, host.len())?,
            host,
        })
    }
}

impl<T: Element> GpuCase for CopyCase<T> {
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.target.view_mut().fill(gpu, T::poison())
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        self.target.view_mut().copy_from(gpu, &self.source.view())
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(&self.target.to_host(gpu)?, &self.host, 1))
    }
}

/// One row: a copy of `n` elements of `T`.
pub fn row<T: Element>(lab: &Lab, n: usize) -> Row {
    let spec = Spec::new(
        "copy",
        "cuMemcpyDtoD",
        T::SUFFIX,
        n.to_string(),
        bytes_moved(n, T::BYTES),
    );
    let host = values::<T>(n, derive_seed(lab.seed(), 0xc0));
    measure_gpu(lab, &spec, CopyCase::new(lab.gpu(), host), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_bytes() {
        assert_eq!(bytes_moved(1 << 20, 4), 8.0 * (1 << 20) as f64);
    }
}
