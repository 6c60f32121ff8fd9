//! # reduce
//!
//! Reductions, arg-reductions and histograms on the GPU: the lesson's
//! methods side by side, and a single-pass default at the bandwidth limit.
//!
//! | operation | what it returns | synchronises |
//! |---|---|---|
//! | [`reduce`] | any [`Operator`] folded over the items ([`sum`], [`product`], [`min`], [`max`] are shorthands) | yes (reads the value) |
//! | [`transform_reduce`] | an operator folded over a [`Transform`] of the items (sum of squares, count of a condition) | yes |
//! | [`argmax`], [`argmin`] | the extreme item and its index ([`ArgExtreme`]) | yes |
//! | [`minmax`] | the smallest and the largest item, in one pass | yes |
//! | [`reduce_into`], [`transform_reduce_into`], [`argmax_into`], [`argmin_into`], [`minmax_into`] | the same into a caller's device buffer | **no** |
//! | [`histogram`] | counts per bin (see the module) | no |
//!
//! | algorithm ([`ReduceAlgorithm`]) | how | launches | global bytes (n items of s bytes, values of v bytes) |
//! |---|---|---|---|
//! | `GlobalTree` | the lesson's first version: a tree per block of 1024 in global memory, one launch per level | ⌈log₁₀₂₄ n⌉ | n·s + about 3·n·v |
//! | `SharedTree` | the same tree in shared memory | ⌈log₁₀₂₄ n⌉ | n·s + n·v / 1024 |
//! | `SinglePass` (default) | a persistent grid, 16-byte loads four deep per thread, warp shuffles, the last block to finish folds the partials | 1 | n·s + 16 per block |
//!
//! **Operators.** Every [`Operator`]: the built-in ones ([`Sum`],
//! [`Product`], [`Max`], [`Min`], and on integers [`BitAnd`](gpu_core::BitAnd),
//! [`BitOr`](gpu_core::BitOr), [`BitXor`](gpu_core::BitXor)) and a caller's
//! [`CustomOp`](gpu_core::CustomOp), which need only be associative (every
//! method combines in index order). Integers wrap, as in the CPU reference.
//!
//! **Types.** Every element type of the toolkit: `i8 u8 i16 u16 i32 u32
//! i64 u64 f16 bf16 f32 f64`. The 1- and 2-byte types are combined in a
//! 4-byte register type (`i32`/`u32`, `f32` for `f16`/`bf16`) and the
//! result narrowed once: integer results are exactly the narrow type's
//! wrapping results; 16-bit float results are rounded once, so they are
//! usually closer to the exact value than a fold in the type itself. Custom
//! operators take 4- and 8-byte types (a typed error otherwise).
//!
//! **Empty input** gives the operator's identity (`minmax`: `(highest,
//! lowest)`); arg-reductions of an empty input are [`Error::InvalidArgument`].
//! Any length (64-bit indices).
//!
//! **Floats.** Every method is deterministic: the same input gives the same
//! bits on every run on the same GPU model (the single pass's grid depends
//! on the device's SM count, see [`ReduceAlgorithm::SinglePass`]); the
//! combine order is not the CPU's left-to-right fold, so results differ from
//! it by rounding. `max`/`min` treat NaN as `a > b ? a : b` does (a NaN
//! operand may or may not win, depending on the combine order); the
//! arg-reductions and their NaN rule are exact (the first NaN wins).
//!
//! ```no_run
//! use gpu_core::{DeviceBuffer, Gpu};
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let x = DeviceBuffer::from_host(&gpu, &[3.0f32, -1.0, 7.5, 2.0])?;
//! assert_eq!(reduce::sum(&gpu, x.view())?, 11.5);
//! let top = reduce::argmax(&gpu, x.view())?;
//! assert_eq!((top.value, top.index), (7.5, 2));
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod cpu;
pub mod histogram;
mod modules;
pub mod segmented;
mod single_pass;
mod transform;
mod tree;

use gpu_core::op::check_register_operator;
use gpu_core::{
    DeviceView, DeviceViewMut, Element, Error, Gpu, Max, Min, Operator, Product, Result, Sum,
};

pub use segmented::{segmented_reduce, SegmentOffset};
pub use transform::Transform;

use modules::Reducer;
use single_pass::Destination;
use tree::Tree;

/// How a reduction combines the items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReduceAlgorithm {
    /// The lesson's first version: each block of 1024 folds its items with a
    /// tree in global memory (on a work copy of the input), one launch per
    /// level.
    GlobalTree,
    /// The same tree in shared memory: each item read once from global
    /// memory, one launch per level.
    SharedTree,
    /// One pass at the bandwidth limit: a persistent grid sized to the
    /// device, four 16-byte loads in flight per thread, warp shuffles, and
    /// the partials folded on the device by the last block to finish. The
    /// grid depends on n, the type and the device's SM count and occupancy,
    /// so float results are bitwise repeatable on one GPU model.
    #[default]
    SinglePass,
}

impl ReduceAlgorithm {
    /// Every algorithm, in the lesson's order.
    pub const ALL: [ReduceAlgorithm; 3] = [
        ReduceAlgorithm::GlobalTree,
        ReduceAlgorithm::SharedTree,
        ReduceAlgorithm::SinglePass,
    ];

    /// The method's name in tables: `global-tree`, `shared-tree`,
    /// `single-pass`.
    ///
    /// ```
    /// assert_eq!(reduce::ReduceAlgorithm::default().name(), "single-pass");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ReduceAlgorithm::GlobalTree => "global-tree",
            ReduceAlgorithm::SharedTree => "shared-tree",
            ReduceAlgorithm::SinglePass => "single-pass",
        }
    }
}

/// An arg-reduction's result: the extreme item and its index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArgExtreme<T> {
    /// The item.
    pub value: T,
    /// Its index: the first on ties, the first NaN if there is one.
    pub index: u64,
}

/// Global bytes a reduction must move: the input read once (`n · s`), the
/// unit of the copy-ceiling ratios in the benchmark.
///
/// ```
/// assert_eq!(reduce::bytes_moved(1 << 20, 4), 4 << 20);
/// ```
pub fn bytes_moved(n: usize, element_bytes: usize) -> u64 {
    n as u64 * element_bytes as u64
}

/// Checks that `out` has length `expected`: a typed error naming `what`.
fn check_out<T: Element>(
    what: &'static str,
    out: &DeviceViewMut<'_, T>,
    expected: usize,
) -> Result<()> {
    Error::check_len(what, out.len(), expected)
}

/// Refuses an arg-reduction of nothing.
fn check_not_empty(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid(
            "input",
            "an arg-reduction of an empty input has no index",
        ));
    }
    Ok(())
}

/// Runs `reducer` with `algorithm`, the result to `destination`; returns
/// the result words when they go to the host.
fn dispatch<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    reducer: &Reducer<'_, T, U, O>,
    algorithm: ReduceAlgorithm,
    destination: Destination,
) -> Result<[u64; 2]> {
    let tree = match algorithm {
        ReduceAlgorithm::SinglePass => {
            return single_pass::run(gpu, input, reducer, destination);
        }
        ReduceAlgorithm::GlobalTree => Tree::Global,
        ReduceAlgorithm::SharedTree => Tree::Shared,
    };
    match destination {
        Destination::Device { out0, out1 } => {
            tree::run(gpu, input, reducer, tree, out0, out1)?;
            Ok([0, 0])
        }
        Destination::Host => {
            let mut slot = gpu_core::DeviceBuffer::<u64>::zeros(gpu, 2)?;
            let base = slot.view_mut().device_ptr();
            tree::run(gpu, input, reducer, tree, base, base + 8)?;
            let mut words = [0u64; 2];
            gpu.read_small(&slot.view(), &mut words)?;
            Ok(words)
        }
    }
}

/// [`dispatch`] to the host: the two result words, after the one wait.
fn to_host<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    reducer: &Reducer<'_, T, U, O>,
    algorithm: ReduceAlgorithm,
) -> Result<[u64; 2]> {
    dispatch(gpu, input, reducer, algorithm, Destination::Host)
}

/// [`dispatch`] into a caller's device memory (`out1` = 0 when the reducer
/// stores one value), enqueued with no host synchronisation.
fn into_device<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    reducer: &Reducer<'_, T, U, O>,
    algorithm: ReduceAlgorithm,
    out0: u64,
    out1: u64,
) -> Result<()> {
    dispatch(
        gpu,
        input,
        reducer,
        algorithm,
        Destination::Device { out0, out1 },
    )?;
    Ok(())
}

/// The first `T` in little-endian result words.
fn value_from_words<T: Element>(words: &[u64; 2], at: usize) -> T {
    let bytes = bytemuck::bytes_of(words);
    bytemuck::pod_read_unaligned(&bytes[at..at + T::BYTES])
}

/// `op` folded over `input`, returned to the host (one synchronisation:
/// the call waits for the result). Empty input gives `op`'s identity.
///
/// ```no_run
/// use gpu_core::{CustomOp, DeviceBuffer, Gpu, Max};
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[4i64, -9, 12, 3])?;
/// assert_eq!(reduce::reduce(&gpu, x.view(), &Max, ReduceAlgorithm::SharedTree)?, 12);
/// // Any associative operator, commutative or not: the last non-zero item.
/// let last = CustomOp::<i64>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| if b != 0 { b } else { a })?;
/// assert_eq!(reduce::reduce(&gpu, x.view(), &last, ReduceAlgorithm::default())?, 3);
/// # Ok(()) }
/// ```
pub fn reduce<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    op: &O,
    algorithm: ReduceAlgorithm,
) -> Result<T> {
    check_register_operator::<T, O>("reduce", op)?;
    let reducer = Reducer::Fold { op, map: None };
    let words = to_host(gpu, input, &reducer, algorithm)?;
    Ok(value_from_words(&words, 0))
}

/// `op` folded over `input` into `out[0]` (a one-element device buffer),
/// enqueued on `gpu`'s stream with no host synchronisation. On an argument
/// error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1u32, 2, 3])?;
/// let mut total = DeviceBuffer::<u32>::zeros(&gpu, 1)?;
/// reduce::reduce_into(&gpu, x.view(), &Sum, total.view_mut(), ReduceAlgorithm::default())?;
/// assert_eq!(total.to_host(&gpu)?, vec![6]);
/// # Ok(()) }
/// ```
pub fn reduce_into<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    op: &O,
    mut out: DeviceViewMut<'_, T>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    check_out("out", &out, 1)?;
    check_register_operator::<T, O>("reduce", op)?;
    let reducer = Reducer::Fold { op, map: None };
    let out0 = out.reborrow().device_ptr();
    into_device(gpu, input, &reducer, algorithm, out0, 0)
}

/// The sum of `input` (wrapping for integers), with the default algorithm;
/// synchronises.
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[0.5f64; 1000])?;
/// assert_eq!(reduce::sum(&gpu, x.view())?, 500.0);
/// # Ok(()) }
/// ```
pub fn sum<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<T> {
    reduce(gpu, input, &Sum, ReduceAlgorithm::default())
}

/// The product of `input` (wrapping for integers); synchronises.
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[2u64, 3, 7])?;
/// assert_eq!(reduce::product(&gpu, x.view())?, 42);
/// # Ok(()) }
/// ```
pub fn product<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<T> {
    reduce(gpu, input, &Product, ReduceAlgorithm::default())
}

/// The largest item (the type's lowest value when empty); synchronises.
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[2i16, -3, 7])?;
/// assert_eq!(reduce::max(&gpu, x.view())?, 7);
/// # Ok(()) }
/// ```
pub fn max<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<T> {
    reduce(gpu, input, &Max, ReduceAlgorithm::default())
}

/// The smallest item (the type's highest value when empty); synchronises.
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[2i16, -3, 7])?;
/// assert_eq!(reduce::min(&gpu, x.view())?, -3);
/// # Ok(()) }
/// ```
pub fn min<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<T> {
    reduce(gpu, input, &Min, ReduceAlgorithm::default())
}

/// `op` folded over `map(input[i], i)`, the map fused into the loads (no
/// intermediate array); returned to the host (synchronises). Empty input
/// gives `op`'s identity. `U` must be a 4- or 8-byte type unless `op` is
/// built in.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use reduce::{ReduceAlgorithm, Transform};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[3.0f32, -4.0])?;
/// let squares = reduce::transform_reduce(&gpu, x.view(), &Transform::square(), &Sum, ReduceAlgorithm::default())?;
/// assert_eq!(squares, 25.0);
/// let negative = Transform::<f32, u64>::count_if("negative", "x < 0.0f", |x| x < 0.0)?;
/// assert_eq!(reduce::transform_reduce(&gpu, x.view(), &negative, &Sum, ReduceAlgorithm::default())?, 1);
/// # Ok(()) }
/// ```
pub fn transform_reduce<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    map: &Transform<T, U>,
    op: &O,
    algorithm: ReduceAlgorithm,
) -> Result<U> {
    check_register_operator::<U, O>("transform_reduce", op)?;
    let reducer = Reducer::Fold { op, map: Some(map) };
    let words = to_host(gpu, input, &reducer, algorithm)?;
    Ok(value_from_words(&words, 0))
}

/// [`transform_reduce`] into `out[0]`, with no host synchronisation.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use reduce::{ReduceAlgorithm, Transform};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1i32, -2, 3])?;
/// let mut norm1 = DeviceBuffer::<i32>::zeros(&gpu, 1)?;
/// reduce::transform_reduce_into(&gpu, x.view(), &Transform::abs(), &Sum, norm1.view_mut(), ReduceAlgorithm::default())?;
/// assert_eq!(norm1.to_host(&gpu)?, vec![6]);
/// # Ok(()) }
/// ```
pub fn transform_reduce_into<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    map: &Transform<T, U>,
    op: &O,
    mut out: DeviceViewMut<'_, U>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    check_out("out", &out, 1)?;
    check_register_operator::<U, O>("transform_reduce", op)?;
    let reducer = Reducer::Fold { op, map: Some(map) };
    let out0 = out.reborrow().device_ptr();
    into_device(gpu, input, &reducer, algorithm, out0, 0)
}

fn arg<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    max: bool,
    algorithm: ReduceAlgorithm,
) -> Result<ArgExtreme<T>> {
    check_not_empty(input.len())?;
    let reducer: Reducer<'_, T, T, Sum> = Reducer::Arg { max };
    let words = to_host(gpu, input, &reducer, algorithm)?;
    Ok(ArgExtreme {
        value: value_from_words(&words, 0),
        index: words[1],
    })
}

fn arg_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    max: bool,
    mut value_out: DeviceViewMut<'_, T>,
    mut index_out: DeviceViewMut<'_, u64>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    check_out("value_out", &value_out, 1)?;
    check_out("index_out", &index_out, 1)?;
    check_not_empty(input.len())?;
    let reducer: Reducer<'_, T, T, Sum> = Reducer::Arg { max };
    let out0 = value_out.reborrow().device_ptr();
    let out1 = index_out.reborrow().device_ptr();
    into_device(gpu, input, &reducer, algorithm, out0, out1)
}

/// The largest item and its index (the first on ties; the first NaN if
/// there is one, as `torch.argmax`), with the default algorithm;
/// synchronises. An empty input is [`Error::InvalidArgument`].
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[1.0f32, 9.0, 9.0, -3.0])?;
/// let top = reduce::argmax(&gpu, x.view())?;
/// assert_eq!((top.value, top.index), (9.0, 1));
/// # Ok(()) }
/// ```
pub fn argmax<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<ArgExtreme<T>> {
    arg(gpu, input, true, ReduceAlgorithm::default())
}

/// The smallest item and its index (the first on ties; the first NaN if
/// there is one); synchronises. An empty input is [`Error::InvalidArgument`].
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[4u8, 1, 7, 1])?;
/// let low = reduce::argmin(&gpu, x.view())?;
/// assert_eq!((low.value, low.index), (1, 1));
/// # Ok(()) }
/// ```
pub fn argmin<T: Element>(gpu: &Gpu, input: DeviceView<'_, T>) -> Result<ArgExtreme<T>> {
    arg(gpu, input, false, ReduceAlgorithm::default())
}

/// [`argmax`] with a chosen algorithm.
///
/// ```no_run
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[1i32, 5, 2])?;
/// assert_eq!(reduce::argmax_with(&gpu, x.view(), ReduceAlgorithm::SharedTree)?.index, 1);
/// # Ok(()) }
/// ```
pub fn argmax_with<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    algorithm: ReduceAlgorithm,
) -> Result<ArgExtreme<T>> {
    arg(gpu, input, true, algorithm)
}

/// [`argmin`] with a chosen algorithm.
///
/// ```no_run
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[1i32, 5, -2])?;
/// assert_eq!(reduce::argmin_with(&gpu, x.view(), ReduceAlgorithm::GlobalTree)?.index, 2);
/// # Ok(()) }
/// ```
pub fn argmin_with<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    algorithm: ReduceAlgorithm,
) -> Result<ArgExtreme<T>> {
    arg(gpu, input, false, algorithm)
}

/// [`argmax`] into `value_out[0]` and `index_out[0]`, with no host
/// synchronisation. An empty input is [`Error::InvalidArgument`], nothing
/// written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.5f64, 8.0, -2.0])?;
/// let (mut value, mut index) = (DeviceBuffer::<f64>::zeros(&gpu, 1)?, DeviceBuffer::<u64>::zeros(&gpu, 1)?);
/// reduce::argmax_into(&gpu, x.view(), value.view_mut(), index.view_mut(), ReduceAlgorithm::default())?;
/// assert_eq!((value.to_host(&gpu)?[0], index.to_host(&gpu)?[0]), (8.0, 1));
/// # Ok(()) }
/// ```
pub fn argmax_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    value_out: DeviceViewMut<'_, T>,
    index_out: DeviceViewMut<'_, u64>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    arg_into(gpu, input, true, value_out, index_out, algorithm)
}

/// [`argmin`] into `value_out[0]` and `index_out[0]`, with no host
/// synchronisation.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use reduce::ReduceAlgorithm;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[1.5f64, 8.0, -2.0])?;
/// let (mut value, mut index) = (DeviceBuffer::<f64>::zeros(&gpu, 1)?, DeviceBuffer::<u64>::zeros(&gpu, 1)?);
/// reduce::argmin_into(&gpu, x.view(), value.view_mut(), index.view_mut(), ReduceAlgorithm::default())?;
/// assert_eq!(index.to_host(&gpu)?, vec![2]);
/// # Ok(()) }
/// ```
pub fn argmin_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    value_out: DeviceViewMut<'_, T>,
    index_out: DeviceViewMut<'_, u64>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    arg_into(gpu, input, false, value_out, index_out, algorithm)
}

/// The smallest and the largest item in one pass (`(highest, lowest)` when
/// empty); synchronises.
///
/// ```no_run
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = gpu_core::Gpu::new(0)?;
/// let x = gpu_core::DeviceBuffer::from_host(&gpu, &[4i32, -3, 8])?;
/// assert_eq!(reduce::minmax(&gpu, x.view(), reduce::ReduceAlgorithm::default())?, (-3, 8));
/// # Ok(()) }
/// ```
pub fn minmax<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    algorithm: ReduceAlgorithm,
) -> Result<(T, T)> {
    let reducer: Reducer<'_, T, T, Sum> = Reducer::MinMax;
    let words = to_host(gpu, input, &reducer, algorithm)?;
    Ok((
        value_from_words(&words, 0),
        value_from_words(&words, T::BYTES),
    ))
}

/// [`minmax`] into `out[0]` (the smallest) and `out[1]` (the largest), with
/// no host synchronisation.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let x = DeviceBuffer::from_host(&gpu, &[4u16, 3, 8])?;
/// let mut range = DeviceBuffer::<u16>::zeros(&gpu, 2)?;
/// reduce::minmax_into(&gpu, x.view(), range.view_mut(), reduce::ReduceAlgorithm::default())?;
/// assert_eq!(range.to_host(&gpu)?, vec![3, 8]);
/// # Ok(()) }
/// ```
pub fn minmax_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    mut out: DeviceViewMut<'_, T>,
    algorithm: ReduceAlgorithm,
) -> Result<()> {
    check_out("out", &out, 2)?;
    let reducer: Reducer<'_, T, T, Sum> = Reducer::MinMax;
    let out0 = out.reborrow().device_ptr();
    into_device(gpu, input, &reducer, algorithm, out0, 0)
}

/// Every kernel module of the crate (every element type × method ×
/// built-in reducer, and the histograms'): what the kernel-compile test
/// compiles and `aot` embeds.
///
/// ```
/// assert!(!reduce::kernel_catalog().iter().any(|m| m.entries().is_empty()));
/// ```
pub fn kernel_catalog() -> Vec<gpu_core::ModuleSource> {
    let mut modules = modules::kernel_catalog();
    modules.extend(histogram::kernel_catalog());
    modules.extend(segmented::kernel_catalog());
    modules
}
