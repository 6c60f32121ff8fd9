//! # compact
//!
//! Stream compaction on the GPU, built on scan: keep the items whose flag
//! byte is non-zero or for which a predicate holds, in their original order;
//! stable partition; counting.
//!
//! | operation | what it returns | synchronises |
//! |---|---|---|
//! | [`select_flagged`] | kept `input[i]` where `flags[i] != 0` (any non-zero byte) | yes (reads the count) |
//! | [`select_if`] | kept items for which a [`Predicate`] holds | yes |
//! | [`partition`] | kept items in order, then rejected ones **also in order** | yes |
//! | [`count_if`] | how many items a predicate keeps | yes |
//! | [`select_flagged_into`], [`select_if_into`], [`partition_into`] | the same into a caller's buffer, the count left on the device | **no** |
//!
//! CUB's `DevicePartition` writes the rejected items in reverse order; ours
//! keep their input order.
//!
//! Runs of equal consecutive keys and allocation by scan (`docs/segmented.md`):
//!
//! | operation | what it returns | synchronises |
//! |---|---|---|
//! | [`reduce_by_key`] | each run's key and the fold of its values, the number of runs | yes |
//! | [`run_length_encode`] | each run's key and length | yes |
//! | [`unique`], [`unique_by_key`] | the first item of each run (and its value) | yes |
//! | [`expand_alloc`] | `values[i]` repeated `counts[i]` times, the offsets | yes |
//! | `*_into` forms | the same into a caller's buffers, the count (or total) left on the device | **no** |
//!
//! | algorithm ([`CompactAlgorithm`]) | how | global bytes (select by flags, n items of s bytes, k kept) |
//! |---|---|---|
//! | `SinglePass` (default) | one kernel: keep masks in registers, block scan of popcounts, decoupled look-back over tile counts, staged coalesced writes | n·s + n + k·s |
//! | `ThreePass { scan }` | map to 0/1 marks, exclusive scan (any [`ScanAlgorithm`]), scatter: the lab's method | n + 3n·c + n·s + k·s + the scan's (c = 4, or 8 past 2^32 items) |
//!
//! Every operation takes [`CompactOptions`]: an algorithm and optionally a
//! single-pass [`policy::Policy`] (a bare [`CompactAlgorithm`] converts).
//! Without one, `SinglePass`'s kernel shape comes from a table per element
//! size: [`policy::TUNING`] for `select_flagged` and `partition`,
//! [`policy::SELECT_IF_TUNING`] for `select_if`. A policy given is used, or
//! refused with a typed error, never dropped; the knobs and the tuning
//! sweep's candidates are in [`policy`], the measurements in
//! `docs/tuning.md`. Argument checks as pure functions are in [`validate`].
//!
//! Every element type (`i32 u32 i64 u64 f32 f64`), any length (64-bit
//! indices and counts), n = 0 and all-rejected give an empty result.
//! Results are deterministic. Bad arguments are typed errors returned before
//! anything is written.
//!
//! ```no_run
//! use compact::{select_if, CompactAlgorithm, Predicate};
//! use gpu_core::{DeviceBuffer, Gpu};
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let data = DeviceBuffer::from_host(&gpu, &[5i32, -1, 7, 0, 3])?;
//! let kept = select_if(&gpu, data.view(), &Predicate::Gt(2), CompactAlgorithm::default())?;
//! assert_eq!(kept.count, 3);
//! assert_eq!(kept.items.to_host(&gpu)?, vec![5, 7, 3]);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod by_key;
mod count;
pub mod cpu;
pub mod cpu_by_key;
mod expand;
mod modules;
pub mod policy;
mod predicate;
mod run_length;
mod scan_bridge;
mod single_pass;
mod three_pass;
mod unique;
pub mod validate;

use gpu_core::{DeviceBuffer, DeviceView, DeviceViewMut, Element, Gpu, Result};
pub use scan_bridge::ScanAlgorithm;

pub use by_key::{
    keyed_kernel_catalog, reduce_by_key, reduce_by_key_bytes_moved, reduce_by_key_into,
    validate_reduce_by_key,
};
pub use count::count_bytes_moved;
pub use expand::{expand_alloc, expand_bytes_moved, expand_into, validate_expand};
pub use modules::kernel_catalog;
pub use predicate::{CustomPredicate, Predicate};
pub use run_length::{
    run_length_bytes_moved, run_length_encode, run_length_encode_into, validate_run_length_encode,
};
pub use single_pass::status_bytes;
pub use three_pass::{map_scatter_bytes_moved, uses_u64_marks};
pub use unique::{
    unique, unique_by_key, unique_by_key_into, unique_bytes_moved, unique_into, validate_unique,
    validate_unique_by_key,
};

use gpu_core::Error;
use modules::PredicateSource;
use validate::{
    validate_count_out, validate_disjoint, validate_flags, validate_partition_into,
    validate_select_into,
};

/// How a compaction finds each kept item's output position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompactAlgorithm {
    /// Map to 0/1 marks, exclusive scan with `scan`, scatter (three kernel
    /// passes plus the scan's; the lab's method). Marks are `u32`, or `u64`
    /// past u32::MAX items.
    ThreePass {
        /// The scan algorithm for the marks.
        scan: ScanAlgorithm,
    },
    /// One kernel: predicate or flags evaluated in registers, kept counts
    /// combined across tiles by decoupled look-back, kept items staged in
    /// shared memory and written coalesced. The fastest.
    #[default]
    SinglePass,
}

impl CompactAlgorithm {
    /// Every variant: `ThreePass` with each scan algorithm (`Auto` left
    /// out), then `SinglePass`.
    ///
    /// ```
    /// use compact::{CompactAlgorithm, ScanAlgorithm};
    /// let all = CompactAlgorithm::all();
    /// assert_eq!(all.last(), Some(&CompactAlgorithm::SinglePass));
    /// assert!(all.contains(&CompactAlgorithm::ThreePass { scan: ScanAlgorithm::Blelloch }));
    /// ```
    pub fn all() -> Vec<CompactAlgorithm> {
        let mut all: Vec<CompactAlgorithm> = ScanAlgorithm::ALL
            .into_iter()
            .filter(|&scan| scan != ScanAlgorithm::Auto)
            .map(|scan| CompactAlgorithm::ThreePass { scan })
            .collect();
        all.push(CompactAlgorithm::SinglePass);
        all
    }

    /// A name for tables and CSV rows: `single-pass`, `three-pass/blelloch`.
    ///
    /// ```
    /// use compact::{CompactAlgorithm, ScanAlgorithm};
    /// assert_eq!(CompactAlgorithm::SinglePass.name(), "single-pass");
    /// let three_pass = CompactAlgorithm::ThreePass { scan: ScanAlgorithm::Blelloch };
    /// assert_eq!(three_pass.name(), "three-pass/blelloch");
    /// ```
    pub fn name(&self) -> String {
        match self {
            CompactAlgorithm::ThreePass { scan } => format!("three-pass/{}", scan.name()),
            CompactAlgorithm::SinglePass => "single-pass".to_owned(),
        }
    }
}

/// How to compact: the algorithm and, optionally, a single-pass policy.
/// Every operation takes `impl Into<CompactOptions>`, so a bare
/// [`CompactAlgorithm`] works too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactOptions {
    /// Which algorithm (`SinglePass` by default).
    pub algorithm: CompactAlgorithm,
    /// The `SinglePass` kernel's policy: `None` for the table's (by element
    /// size and operation). One given must be the default or one of the
    /// sweep's candidates ([`policy::validate_tuning`]: only catalogued
    /// modules are compiled) and the predicate a built-in one; refused for
    /// `ThreePass`, whose scan keeps its own policy.
    pub policy: Option<policy::Policy>,
}

impl CompactOptions {
    /// Options for `algorithm` with its default policy.
    ///
    /// ```
    /// use compact::{CompactAlgorithm, CompactOptions, ScanAlgorithm};
    /// let options = CompactOptions::new(CompactAlgorithm::ThreePass { scan: ScanAlgorithm::HillisSteele });
    /// assert_eq!(options.policy, None);
    /// assert_eq!(CompactOptions::from(CompactAlgorithm::SinglePass), CompactOptions::default());
    /// ```
    pub fn new(algorithm: CompactAlgorithm) -> Self {
        CompactOptions {
            algorithm,
            policy: None,
        }
    }

    /// `SinglePass` with `policy`.
    ///
    /// ```
    /// use compact::{policy, CompactAlgorithm, CompactOptions};
    /// let options = CompactOptions::single_pass(policy::candidates(4)[0]);
    /// assert_eq!(options.algorithm, CompactAlgorithm::SinglePass);
    /// assert!(policy::validate_tuning(4, &options.policy.unwrap()).is_ok());
    /// ```
    pub fn single_pass(policy: policy::Policy) -> Self {
        CompactOptions::new(CompactAlgorithm::SinglePass).with_policy(policy)
    }

    /// The same options with `policy`.
    ///
    /// ```
    /// use compact::{policy, CompactAlgorithm, CompactOptions};
    /// let options = CompactOptions::new(CompactAlgorithm::SinglePass).with_policy(policy::default_policy::<f64>());
    /// assert_eq!(options.policy, Some(policy::default_policy_for(8)));
    /// ```
    pub fn with_policy(mut self, policy: policy::Policy) -> Self {
        self.policy = Some(policy);
        self
    }
}

impl From<CompactAlgorithm> for CompactOptions {
    fn from(algorithm: CompactAlgorithm) -> Self {
        CompactOptions::new(algorithm)
    }
}

impl std::fmt::Display for CompactAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// An owned compaction result: `items` holds exactly `count` elements.
#[derive(Debug)]
pub struct Compacted<T: gpu_core::DeviceType> {
    /// The kept items, in input order (empty, with no allocation, when none).
    pub items: DeviceBuffer<T>,
    /// How many were kept (`items.len()`).
    pub count: usize,
}

/// What decides which items are kept.
#[derive(Clone, Copy)]
pub(crate) enum Selection<'a, T: Element> {
    /// `flags[i] != 0` keeps `input[i]`.
    Flags {
        input: DeviceView<'a, T>,
        flags: DeviceView<'a, u8>,
    },
    /// `predicate(input[i])` keeps `input[i]`.
    Predicate {
        input: DeviceView<'a, T>,
        predicate: &'a Predicate<T>,
    },
}

impl<'a, T: Element> Selection<'a, T> {
    pub(crate) fn input(&self) -> DeviceView<'a, T> {
        match self {
            Selection::Flags { input, .. } | Selection::Predicate { input, .. } => *input,
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.input().len()
    }
    /// The predicate a module compiles in: the built-in one for flags and
    /// built-in predicates, else the caller's.
    pub(crate) fn predicate_source(&self) -> PredicateSource<'a, T> {
        match self {
            Selection::Flags { .. } => PredicateSource::Builtin,
            Selection::Predicate { predicate, .. } => PredicateSource::of(predicate),
        }
    }
}

/// One compaction as [`dispatch`] hands it to an algorithm: which items are
/// kept, where the kept items and their count go, and whether the rejected
/// items follow the kept ones (a partition).
pub(crate) struct Compaction<'a, T: Element> {
    pub(crate) selection: Selection<'a, T>,
    pub(crate) output: DeviceViewMut<'a, T>,
    pub(crate) count_out: DeviceViewMut<'a, u64>,
    pub(crate) partition: bool,
}

impl<'a, T: Element> Compaction<'a, T> {
    /// Kept items to `output[0..count)`.
    fn select(
        selection: Selection<'a, T>,
        output: DeviceViewMut<'a, T>,
        count_out: DeviceViewMut<'a, u64>,
    ) -> Self {
        Compaction {
            selection,
            output,
            count_out,
            partition: false,
        }
    }

    /// Kept items first, then the rejected ones, in `output[0..n)`.
    fn partition(
        selection: Selection<'a, T>,
        output: DeviceViewMut<'a, T>,
        count_out: DeviceViewMut<'a, u64>,
    ) -> Self {
        Compaction {
            partition: true,
            ..Compaction::select(selection, output, count_out)
        }
    }
}

/// Global-memory bytes a select moves as the benchmark counts them: n items
/// read (and n flag bytes when selecting by flags), `kept` items written.
/// For `i32` by flags that is 5n + 4·kept; by a predicate 4n + 4·kept.
/// (The single-pass tile statuses, [`status_bytes`], and the owned forms'
/// count pass, [`count_bytes_moved`], are not included.)
///
/// ```
/// // 1000 i32 items, 250 kept: read 4000 item bytes (+ 1000 flag bytes), write 1000.
/// assert_eq!(compact::bytes_moved(1000, 250, 4, true), 6000);
/// assert_eq!(compact::bytes_moved(1000, 250, 4, false), 5000);
/// ```
pub fn bytes_moved(n: usize, kept: usize, element_bytes: usize, by_flags: bool) -> u64 {
    let flags = if by_flags { n } else { 0 };
    ((n + kept) * element_bytes + flags) as u64
}

/// Global-memory bytes a single-pass partition moves: the count pass (n
/// items read) and the scatter (n read, n written): 3n·s.
///
/// ```
/// assert_eq!(compact::partition_bytes_moved(1000, 4), 12_000);
/// ```
pub fn partition_bytes_moved(n: usize, element_bytes: usize) -> u64 {
    (3 * n * element_bytes) as u64
}

/// Refuses the 16-bit floats, before anything is allocated or compiled:
/// the compaction kernels compare items in their own type, which `f16` and
/// `bf16` (bit patterns in CUDA) do not support. Items selected by flags
/// only move, so a caller can select them as `u16` (`bytemuck` casts the
/// buffer).
fn check_element<T: Element>() -> Result<()> {
    if T::IS_FLOAT && T::BYTES == 2 {
        return Err(Error::Unsupported(format!(
            "compaction of {}: 16-bit floats are not supported; select them as u16 \
             (the same bits) with select_flagged",
            T::SUFFIX
        )));
    }
    Ok(())
}

/// Checks a policy given in `options` for `T` and `selection`, before
/// anything is allocated, compiled or launched.
fn check_options<T: Element>(selection: &Selection<'_, T>, options: &CompactOptions) -> Result<()> {
    check_element::<T>()?;
    let Some(policy) = options.policy else {
        return Ok(());
    };
    match options.algorithm {
        CompactAlgorithm::ThreePass { .. } => Err(Error::invalid(
            "policy",
            "a single-pass policy applies to CompactAlgorithm::SinglePass only",
        )),
        CompactAlgorithm::SinglePass => {
            modules::validate_tuning(T::BYTES, &policy)?;
            if let Selection::Predicate { predicate, .. } = selection {
                if predicate.custom().is_some() {
                    return Err(Error::invalid(
                        "predicate",
                        "a policy takes built-in predicates; a custom one runs at the default policy",
                    ));
                }
            }
            Ok(())
        }
    }
}

/// The one dispatch: maps the algorithm and its policy (given, or the
/// table's) to kernels and grids. Arguments and options are validated.
fn dispatch<T: Element>(
    gpu: &Gpu,
    mut job: Compaction<'_, T>,
    options: CompactOptions,
) -> Result<()> {
    check_options(&job.selection, &options)?;
    if job.selection.len() == 0 {
        // Nothing to compile or launch; the count is 0.
        return job.count_out.fill(gpu, 0);
    }
    match options.algorithm {
        CompactAlgorithm::SinglePass => {
            // select_if has a table of its own (SELECT_IF_TUNING); select
            // by flags and partition use TUNING.
            let policy = options.policy.unwrap_or_else(|| match job.selection {
                Selection::Predicate { .. } if !job.partition => modules::select_if_policy::<T>(),
                _ => modules::default_policy::<T>(),
            });
            single_pass::run(
                gpu,
                &job.selection,
                &mut job.output,
                &mut job.count_out,
                job.partition,
                &policy,
            )
        }
        CompactAlgorithm::ThreePass { scan } => three_pass::run(gpu, job, scan),
    }
}

fn select_owned<T: Element>(
    gpu: &Gpu,
    selection: Selection<'_, T>,
    options: CompactOptions,
) -> Result<Compacted<T>> {
    check_options(&selection, &options)?;
    let mut count_buffer = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    if selection.len() == 0 {
        // SAFETY: zero elements: nothing to initialise.
        let items = unsafe { DeviceBuffer::<T>::uninit(gpu, 0)? };
        return Ok(Compacted { items, count: 0 });
    }
    // Count first (cheap for flags: one byte per item), so the result is
    // allocated at exactly its length and written once.
    count::count_into(gpu, &selection, &mut count_buffer.view_mut())?;
    let mut counted = [0u64];
    gpu.read_small(&count_buffer.view(), &mut counted)?;
    let count = counted[0] as usize;
    // SAFETY: the compaction below writes all `count` elements.
    let mut items = unsafe { DeviceBuffer::<T>::uninit(gpu, count)? };
    if count > 0 {
        let job = Compaction::select(selection, items.view_mut(), count_buffer.view_mut());
        dispatch(gpu, job, options)?;
    }
    Ok(Compacted { items, count })
}

/// Keeps `input[i]` where `flags[i] != 0` (any non-zero byte), in order, into
/// a new buffer of exactly the kept length.
///
/// **Synchronises** (reads the count back to size the result). Errors:
/// [`gpu_core::Error::LengthMismatch`] when `flags` and `input` differ in
/// length (nothing launched).
///
/// ```no_run
/// use compact::CompactAlgorithm;
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (input, flags) = ([5i32, -1, 7, 0, 3], [1u8, 0, 2, 0, 1]);
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let f = DeviceBuffer::from_host(&gpu, &flags)?;
/// let kept = compact::select_flagged(&gpu, x.view(), f.view(), CompactAlgorithm::default())?;
/// assert_eq!(kept.items.to_host(&gpu)?, compact::cpu::select_flagged(&input, &flags)?); // [5, 7, 3]
/// # Ok(()) }
/// ```
pub fn select_flagged<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    flags: DeviceView<'_, u8>,
    options: impl Into<CompactOptions>,
) -> Result<Compacted<T>> {
    validate_flags(input.len(), flags.len())?;
    select_owned(gpu, Selection::Flags { input, flags }, options.into())
}

/// Keeps the items for which `predicate` holds, in order, into a new buffer
/// of exactly the kept length.
///
/// **Synchronises** (reads the count back). A [`Predicate::Custom`] whose
/// CUDA C does not compile gives [`gpu_core::Error::Compile`] with NVRTC's log.
///
/// ```no_run
/// use compact::{CompactAlgorithm, Predicate};
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5.0f32, -1.0, 7.5, 0.0, 3.0];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let positive = Predicate::Gt(0.0);
/// let kept = compact::select_if(&gpu, x.view(), &positive, CompactAlgorithm::SinglePass)?;
/// assert_eq!(kept.items.to_host(&gpu)?, compact::cpu::select_if(&input, &positive)); // [5.0, 7.5, 3.0]
/// # Ok(()) }
/// ```
pub fn select_if<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    options: impl Into<CompactOptions>,
) -> Result<Compacted<T>> {
    select_owned(
        gpu,
        Selection::Predicate { input, predicate },
        options.into(),
    )
}

/// Stable partition into a new buffer of `input.len()` items: those for which
/// `predicate` holds first, in input order, then the others, **also in input
/// order** (CUB reverses them). Returns the buffer and the kept count.
///
/// **Synchronises** (reads the count back).
///
/// ```no_run
/// use compact::{CompactAlgorithm, Predicate};
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5u32, 1, 7, 0, 3];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let big = Predicate::Ge(3);
/// let (items, kept) = compact::partition(&gpu, x.view(), &big, CompactAlgorithm::default())?;
/// assert_eq!((items.to_host(&gpu)?, kept), compact::cpu::partition(&input, &big)); // ([5, 7, 3, 1, 0], 3)
/// # Ok(()) }
/// ```
pub fn partition<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    options: impl Into<CompactOptions>,
) -> Result<(DeviceBuffer<T>, usize)> {
    // SAFETY: a partition writes every one of the n elements.
    let mut output = unsafe { DeviceBuffer::<T>::uninit(gpu, input.len())? };
    let mut count_buffer = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    partition_into(
        gpu,
        input,
        predicate,
        output.view_mut(),
        count_buffer.view_mut(),
        options,
    )?;
    let mut counted = [0u64];
    gpu.read_small(&count_buffer.view(), &mut counted)?;
    let count = counted[0] as usize;
    Ok((output, count))
}

/// How many items `predicate` keeps. **Synchronises** (reads the count back).
///
/// ```no_run
/// use compact::Predicate;
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5i64, -1, 7, 0, 3];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let in_range = Predicate::InRange { low: 0, high: 6 };
/// let count = compact::count_if(&gpu, x.view(), &in_range)?;
/// assert_eq!(count, compact::cpu::count_if(&input, &in_range)); // 5, 0 and 3
/// # Ok(()) }
/// ```
pub fn count_if<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
) -> Result<usize> {
    check_element::<T>()?;
    if input.is_empty() {
        return Ok(0);
    }
    let mut count_buffer = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    count::count_into(
        gpu,
        &Selection::Predicate { input, predicate },
        &mut count_buffer.view_mut(),
    )?;
    let mut counted = [0u64];
    gpu.read_small(&count_buffer.view(), &mut counted)?;
    Ok(counted[0] as usize)
}

/// [`count_if`] leaving the count in `count_out[0]` on the device. **Does
/// not synchronise.**
///
/// ```no_run
/// use compact::Predicate;
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5i32, -1, 7, 0, 3];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::count_if_into(&gpu, x.view(), &Predicate::NonZero, count.view_mut())?;
/// // ... more work on gpu's stream; the count stays on the device until read:
/// assert_eq!(count.to_host(&gpu)?[0] as usize, compact::cpu::count_if(&input, &Predicate::NonZero));
/// # Ok(()) }
/// ```
pub fn count_if_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    mut count_out: DeviceViewMut<'_, u64>,
) -> Result<()> {
    check_element::<T>()?;
    validate_count_out(count_out.len())?;
    validate_disjoint(&[
        ("count_out", count_out.device_ptr(), count_out.bytes()),
        ("input", input.device_ptr(), input.bytes()),
    ])?;
    if input.is_empty() {
        return count_out.fill(gpu, 0);
    }
    count::count_into(
        gpu,
        &Selection::Predicate { input, predicate },
        &mut count_out,
    )
}

/// [`select_flagged`] into a caller's buffer: the kept items go to
/// `output[0..count)` and the count to `count_out[0]`, on the device.
/// **Does not synchronise**: the work is enqueued on `gpu`'s stream.
///
/// `output.len() >= input.len()` (the count is not known on the host);
/// `output[count..]` is left as it was. `count_out.len() == 1`. No argument
/// may overlap another. Any violation is an error before anything is written.
///
/// ```no_run
/// use compact::CompactAlgorithm;
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let (input, flags) = ([5i32, -1, 7, 0, 3], [1u8, 0, 1, 0, 1]);
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let f = DeviceBuffer::from_host(&gpu, &flags)?;
/// let mut output = DeviceBuffer::<i32>::zeros(&gpu, input.len())?; // room for every item
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// compact::select_flagged_into(&gpu, x.view(), f.view(), output.view_mut(), count.view_mut(), CompactAlgorithm::default())?;
/// let count = count.to_host(&gpu)?[0] as usize;
/// assert_eq!(output.to_host(&gpu)?[..count], compact::cpu::select_flagged(&input, &flags)?); // [5, 7, 3]
/// # Ok(()) }
/// ```
pub fn select_flagged_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    flags: DeviceView<'_, u8>,
    output: DeviceViewMut<'_, T>,
    count_out: DeviceViewMut<'_, u64>,
    options: impl Into<CompactOptions>,
) -> Result<()> {
    let job = Compaction::select(Selection::Flags { input, flags }, output, count_out);
    compact_into(gpu, job, options.into())
}

/// [`select_if`] into a caller's buffer, the count left in `count_out[0]`.
/// **Does not synchronise.** Same requirements as [`select_flagged_into`].
///
/// ```no_run
/// use compact::{CompactAlgorithm, Predicate};
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5i32, -1, 7, 0, 3];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let mut output = DeviceBuffer::<i32>::zeros(&gpu, input.len())?;
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// let nonzero = Predicate::Ne(0);
/// compact::select_if_into(&gpu, x.view(), &nonzero, output.view_mut(), count.view_mut(), CompactAlgorithm::default())?;
/// let count = count.to_host(&gpu)?[0] as usize;
/// assert_eq!(output.to_host(&gpu)?[..count], compact::cpu::select_if(&input, &nonzero)); // [5, -1, 7, 3]
/// # Ok(()) }
/// ```
pub fn select_if_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    output: DeviceViewMut<'_, T>,
    count_out: DeviceViewMut<'_, u64>,
    options: impl Into<CompactOptions>,
) -> Result<()> {
    let job = Compaction::select(Selection::Predicate { input, predicate }, output, count_out);
    compact_into(gpu, job, options.into())
}

/// [`partition`] into a caller's buffer of exactly `input.len()` elements,
/// the kept count left in `count_out[0]`. **Does not synchronise.**
///
/// ```no_run
/// use compact::{CompactAlgorithm, Predicate};
/// use gpu_core::{DeviceBuffer, Gpu};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [5i32, -1, 7, 0, 3];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let mut output = DeviceBuffer::<i32>::zeros(&gpu, input.len())?; // exactly input.len()
/// let mut count = DeviceBuffer::<u64>::zeros(&gpu, 1)?;
/// let negative = Predicate::Lt(0);
/// compact::partition_into(&gpu, x.view(), &negative, output.view_mut(), count.view_mut(), CompactAlgorithm::default())?;
/// let (expected, kept) = compact::cpu::partition(&input, &negative); // ([-1, 5, 7, 0, 3], 1)
/// assert_eq!((output.to_host(&gpu)?, count.to_host(&gpu)?[0] as usize), (expected, kept));
/// # Ok(()) }
/// ```
pub fn partition_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    predicate: &Predicate<T>,
    output: DeviceViewMut<'_, T>,
    count_out: DeviceViewMut<'_, u64>,
    options: impl Into<CompactOptions>,
) -> Result<()> {
    let job = Compaction::partition(Selection::Predicate { input, predicate }, output, count_out);
    compact_into(gpu, job, options.into())
}

/// The `_into` forms: checks the arguments as [`validate_select_into`] or
/// [`validate_partition_into`] do (nothing written on an error), then
/// dispatches.
fn compact_into<T: Element>(
    gpu: &Gpu,
    job: Compaction<'_, T>,
    options: CompactOptions,
) -> Result<()> {
    let input = job.selection.input();
    let input_range = (input.device_ptr(), input.len(), T::BYTES);
    let output_range = (job.output.device_ptr(), job.output.len(), T::BYTES);
    let count_range = (job.count_out.device_ptr(), job.count_out.len());
    if job.partition {
        validate_partition_into(input_range, output_range, count_range)?;
    } else {
        let flags = match job.selection {
            Selection::Flags { flags, .. } => Some((flags.device_ptr(), flags.len())),
            Selection::Predicate { .. } => None,
        };
        validate_select_into(input_range, flags, output_range, count_range)?;
    }
    dispatch(gpu, job, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_match_the_benchmark_convention() {
        let n = 1usize << 28;
        assert_eq!(bytes_moved(n, n / 2, 4, true), (5 * n + 4 * (n / 2)) as u64);
        assert_eq!(
            bytes_moved(n, n / 2, 4, false),
            (4 * n + 4 * (n / 2)) as u64
        );
        assert_eq!(bytes_moved(0, 0, 8, true), 0);
        assert_eq!(partition_bytes_moved(10, 8), 240);
        assert_eq!(status_bytes(4096, 4), 16);
        assert_eq!(count_bytes_moved(100, 4, true), 108);
        assert!(!uses_u64_marks(u32::MAX as usize));
        assert!(uses_u64_marks(u32::MAX as usize + 1));
    }

    #[test]
    fn algorithms_are_listed_and_named() {
        let all = CompactAlgorithm::all();
        assert_eq!(all.last(), Some(&CompactAlgorithm::SinglePass));
        assert_eq!(all.len(), ScanAlgorithm::ALL.len());
        assert_eq!(CompactAlgorithm::default(), CompactAlgorithm::SinglePass);
        assert_eq!(CompactAlgorithm::SinglePass.name(), "single-pass");
        assert!(all.iter().all(|a| !a.name().contains("auto")));
    }
}
