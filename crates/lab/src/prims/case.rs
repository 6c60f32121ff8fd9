//! The GPU case that scan, transpose, matvec and conv share: one input
//! uploaded from the host, one output poisoned before each run and compared
//! with the CPU reference after it. With copies, the input is uploaded and
//! the output downloaded around the run, as a caller with host data pays.

use gpu_core::{DeviceBuffer, Element, Gpu, Result};
use linalg::Matrix;

use crate::check::{compare, Check};
use crate::run::GpuCase;

/// Device memory a case uploads into, poisons and downloads from: a buffer,
/// or a matrix's buffer.
pub(crate) trait CaseMemory<T: Element> {
    /// Fills the memory with `T::poison()` (enqueued).
    fn poison(&mut self, gpu: &Gpu) -> Result<()>;
    /// Copies `host` in (waits for the copy).
    fn upload(&mut self, gpu: &Gpu, host: &[T]) -> Result<()>;
    /// Copies the memory out into `host`, of the same length (waits).
    fn download(&self, gpu: &Gpu, host: &mut [T]) -> Result<()>;
    /// The memory on the host (waits).
    fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>>;
}

impl<T: Element> CaseMemory<T> for DeviceBuffer<T> {
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.view_mut().fill(gpu, T::poison())
    }
    fn upload(&mut self, gpu: &Gpu, host: &[T]) -> Result<()> {
        self.view_mut().copy_from_host(gpu, host)
    }
    fn download(&self, gpu: &Gpu, host: &mut [T]) -> Result<()> {
        self.view().copy_to_host(gpu, host)
    }
    fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        DeviceBuffer::to_host(self, gpu)
    }
}

impl<T: Element> CaseMemory<T> for Matrix<T> {
    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        self.view_mut().data_mut().fill(gpu, T::poison())
    }
    fn upload(&mut self, gpu: &Gpu, host: &[T]) -> Result<()> {
        self.view_mut().data_mut().copy_from_host(gpu, host)
    }
    fn download(&self, gpu: &Gpu, host: &mut [T]) -> Result<()> {
        self.buffer().view().copy_to_host(gpu, host)
    }
    fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        Matrix::to_host(self, gpu)
    }
}

/// One GPU method on one input: `method` reads `input` (uploaded from
/// `host`) and writes `output`, which should then equal `expected`.
pub(crate) struct UploadedCase<'a, T: Element, I, O, F> {
    host: &'a [T],
    input: &'a mut I,
    output: O,
    expected: &'a [T],
    terms: usize,
    method: F,
    downloaded: Vec<T>,
}

impl<'a, T: Element, I, O, F> UploadedCase<'a, T, I, O, F>
where
    F: FnMut(&Gpu, &I, &mut O) -> Result<()>,
{
    /// The case of `method` from `input` (holding `host`) to `output`.
    /// `expected` is the CPU reference; `terms`, how many input terms each
    /// output combines (the float tolerance of [`compare`]).
    pub(crate) fn new(
        host: &'a [T],
        input: &'a mut I,
        output: O,
        expected: &'a [T],
        terms: usize,
        method: F,
    ) -> Self {
        UploadedCase {
            host,
            input,
            output,
            expected,
            terms,
            method,
            downloaded: Vec::new(),
        }
    }
}

impl<T, I, O, F> GpuCase for UploadedCase<'_, T, I, O, F>
where
    T: Element,
    I: CaseMemory<T>,
    O: CaseMemory<T>,
    F: FnMut(&Gpu, &I, &mut O) -> Result<()>,
{
    fn prepare(&mut self, gpu: &Gpu) -> Result<()> {
        self.output.poison(gpu)
    }
    fn run(&mut self, gpu: &Gpu) -> Result<()> {
        (self.method)(gpu, self.input, &mut self.output)
    }
    fn check(&mut self, gpu: &Gpu) -> Result<Check> {
        Ok(compare(
            &self.output.to_host(gpu)?,
            self.expected,
            self.terms,
        ))
    }
    fn run_with_copies(&mut self, gpu: &Gpu) -> Option<Result<()>> {
        Some((|| {
            self.input.upload(gpu, self.host)?;
            self.run(gpu)?;
            self.downloaded.resize(self.expected.len(), T::zero());
            self.output.download(gpu, &mut self.downloaded)
        })())
    }
    fn check_copies(&mut self) -> Check {
        compare(&self.downloaded, self.expected, self.terms)
    }
}
