//! # scan: GPU prefix scans, from the textbook to memcpy speed
//!
//! Inclusive, seeded inclusive ([`ScanKind::InclusiveFrom`]) and exclusive
//! scans under any associative operator, on every
//! element type of gpu-core, of any length (0 to past 2^32 elements), into a
//! new buffer, into a caller's buffer, or in place. The 1- and 2-byte types
//! (`i8 u8 i16 u16 f16 bf16`) take every algorithm with the built-in
//! operators: they scan in a 4-byte accumulator (`i32`/`u32`, exact; `f32`
//! for the 16-bit floats, each output rounded once), see [`check_element`].
//!
//! | [`ScanAlgorithm`] | idea | work | global traffic | launches | deterministic for floats |
//! |---|---|---|---|---|---|
//! | `HillisSteeleGlobal` | one launch per step, ping-pong buffers | n log n | ≈ 3n log n | ⌈log2 n⌉ | yes |
//! | `HillisSteele` | double buffer in shared memory + recursive driver | n log T | ≈ 4n | 2·levels − 1 | yes |
//! | `Blelloch` | up-sweep / down-sweep, 4 per thread + recursive driver | ≈ 2n | ≈ 4n | 2·levels − 1 | yes |
//! | `BlellochPadded` | the same, shared memory padded against bank conflicts | ≈ 2n | ≈ 4n | 2·levels − 1 | yes |
//! | `DecoupledLookback` (= `Auto`) | single pass, decoupled look-back | ≈ 2n | ≈ 2n | 1 | **no** |
//! | `ReduceThenScan` | tile totals, their scan, seeded tile scans | ≈ 3n | ≈ 3n | 3 (n ≤ T²) | yes |
//!
//! (T = the tile a block scans, "levels" = ⌈log_T n⌉, traffic in elements;
//! [`bytes_moved`] gives the exact figure the benchmark divides by.)
//!
//! ```no_run
//! use gpu_core::{DeviceBuffer, Gpu, Sum};
//! use scan::{ScanAlgorithm, ScanKind, ScanOptions};
//! # fn main() -> gpu_core::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let x = DeviceBuffer::from_host(&gpu, &[3i32, 1, 7, 0, 4])?;
//! let sums = scan::inclusive(&gpu, x.view(), &Sum)?;
//! assert_eq!(sums.to_host(&gpu)?, vec![3, 4, 11, 11, 15]);
//!
//! let options = ScanOptions::new(ScanAlgorithm::BlellochPadded).with_block_threads(256);
//! let starts = scan::scan(&gpu, x.view(), &Sum, ScanKind::Exclusive { initial: 100 }, &options)?;
//! assert_eq!(starts.to_host(&gpu)?, vec![100, 103, 104, 111, 111]);
//! assert_eq!(scan::cpu::exclusive(&[3, 1, 7], &Sum), vec![0, 3, 4]);
//! # Ok(()) }
//! ```
//!
//! [`ScanOptions`] carry an algorithm and optionally its policy (a block
//! size for the teaching variants, a single-pass [`policy::Policy`] for the
//! look-back and reduce-then-scan); one `dispatch` turns them into kernels
//! and grids, and a value given is used or refused, never dropped. The
//! knobs, tables and the sweep's candidates are in [`policy`]; the
//! measurements behind the defaults in `docs/tuning.md`.
//!
//! Integers wrap exactly like the CPU reference ([`cpu`]). Custom operators
//! ([`gpu_core::CustomOp`]) go through the same path; CUDA that does not
//! compile is reported as [`gpu_core::Error::Compile`] with NVRTC's log, and
//! nothing is written. Every argument is checked on the host before anything
//! touches the device ([`validate`]).
#![deny(missing_docs)]

mod algorithm;
mod blelloch;
mod blelloch_padded;
pub mod cpu;
mod hillis_steele;
mod hillis_steele_global;
mod kind;
mod lookback;
pub mod policy;
mod recursive;
mod reduce_then_scan;
mod segmented;

pub use algorithm::ScanAlgorithm;
pub use kind::ScanKind;
pub use segmented::{
    scan_by_key, scan_by_key_into, segmented_bytes_moved, segmented_offsets_tile_items,
    segmented_scan, segmented_scan_by_offsets, segmented_scan_by_offsets_into,
    segmented_scan_in_place, segmented_scan_into, validate_by_key, validate_segmented,
    validate_segmented_offsets, SegmentedKind,
};

use gpu_core::launch::check_block_threads;
use gpu_core::{
    bf16, f16, BitAnd, BitOr, BitXor, DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu,
    IntElement, Max, Min, ModuleSource, Operator, Result, Sum,
};

use crate::recursive::BlockScan;

/// How to scan: the algorithm and, optionally, its policy: a block size
/// for the teaching variants, a single-pass [`policy::Policy`] for
/// `DecoupledLookback` (= `Auto`) and `ReduceThenScan`. Nothing given means
/// the algorithm's default ([`policy`]); anything given is used, or refused
/// with [`Error::InvalidArgument`] by [`validate`], never dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// Which algorithm ([`ScanAlgorithm::Auto`] by default).
    pub algorithm: ScanAlgorithm,
    /// Threads per block for the teaching variants (32 to 1024, a multiple
    /// of 32; a power of two for the Blelloch variants). `None`:
    /// [`policy::DEFAULT_BLOCK_THREADS`]. Refused for `DecoupledLookback`,
    /// `ReduceThenScan` and `Auto`, whose block size is part of their
    /// [`ScanOptions::policy`] ([`ScanAlgorithm::takes_block_threads`]).
    pub block_threads: Option<u32>,
    /// The single-pass policy of `DecoupledLookback` (= `Auto`; every field)
    /// or `ReduceThenScan` (the tile shape only). `None`: the table's policy
    /// for the element size. Refused for the teaching variants.
    pub policy: Option<policy::Policy>,
}

impl ScanOptions {
    /// Options for `algorithm` with its default policy.
    ///
    /// ```
    /// use scan::{ScanAlgorithm, ScanOptions};
    /// let options = ScanOptions::new(ScanAlgorithm::ReduceThenScan);
    /// assert_eq!(options.algorithm, ScanAlgorithm::ReduceThenScan);
    /// assert_eq!((options.block_threads, options.policy), (None, None));
    /// assert!(scan::validate(10, 10, &options).is_ok());
    /// ```
    pub fn new(algorithm: ScanAlgorithm) -> Self {
        ScanOptions {
            algorithm,
            block_threads: None,
            policy: None,
        }
    }

    /// The same options with `block_threads` threads per block (teaching
    /// variants).
    ///
    /// ```
    /// use scan::{ScanAlgorithm, ScanOptions};
    /// let options = ScanOptions::new(ScanAlgorithm::HillisSteele).with_block_threads(512);
    /// assert_eq!(options.block_threads, Some(512));
    /// assert!(scan::validate(10, 10, &options).is_ok());
    /// ```
    pub fn with_block_threads(mut self, block_threads: u32) -> Self {
        self.block_threads = Some(block_threads);
        self
    }

    /// The same options with a single-pass `policy` (`DecoupledLookback`,
    /// `Auto`, `ReduceThenScan`).
    ///
    /// ```
    /// use scan::policy::{Policy, TileLayout};
    /// use scan::{ScanAlgorithm, ScanOptions};
    /// # fn main() -> gpu_core::Result<()> {
    /// let policy = Policy::new(256, 8)?.with_layout(TileLayout::WarpStriped);
    /// let options = ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_policy(policy);
    /// assert!(scan::validate(10, 10, &options).is_ok());
    /// // A teaching variant takes a block size, not a policy:
    /// assert!(scan::validate(10, 10, &ScanOptions::new(ScanAlgorithm::Blelloch).with_policy(policy)).is_err());
    /// # Ok(()) }
    /// ```
    pub fn with_policy(mut self, policy: policy::Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The block size a teaching variant runs with.
    ///
    /// ```
    /// use scan::{policy, ScanAlgorithm, ScanOptions};
    /// let options = ScanOptions::new(ScanAlgorithm::Blelloch);
    /// assert_eq!(options.effective_block_threads(), policy::DEFAULT_BLOCK_THREADS);
    /// assert_eq!(options.with_block_threads(128).effective_block_threads(), 128);
    /// ```
    pub fn effective_block_threads(&self) -> u32 {
        self.block_threads.unwrap_or(policy::DEFAULT_BLOCK_THREADS)
    }
}

/// Checks a scan's arguments without a GPU: equal input and output lengths,
/// a block size or a policy the algorithm accepts (the element-size checks
/// of a policy follow in dispatch, still before anything touches the
/// device). Every entry point calls it first.
///
/// ```
/// use scan::{ScanAlgorithm, ScanOptions};
/// assert!(scan::validate(5, 5, &ScanOptions::default()).is_ok());
/// assert!(scan::validate(5, 4, &ScanOptions::default()).is_err()); // lengths differ
/// let blelloch = ScanOptions::new(ScanAlgorithm::Blelloch);
/// assert!(scan::validate(5, 5, &blelloch.with_block_threads(96)).is_err()); // not a power of two
/// assert!(scan::validate(5, 5, &ScanOptions::default().with_block_threads(256)).is_err()); // look-back takes a policy
/// ```
pub fn validate(input_len: usize, output_len: usize, options: &ScanOptions) -> Result<()> {
    Error::check_len("scan output", input_len, output_len)?;
    validate_options(options)
}

fn validate_options(options: &ScanOptions) -> Result<()> {
    let algorithm = options.algorithm;
    match options.block_threads {
        None => {}
        Some(_) if !algorithm.takes_block_threads() => {
            return Err(Error::invalid(
                "block_threads",
                format!(
                    "{algorithm} takes its block size in its policy (ScanOptions::with_policy); \
                     a block size alone applies only to {}",
                    ScanAlgorithm::TEACHING.map(|a| a.name()).join(", ")
                ),
            ))
        }
        Some(threads) => check_block_threads(threads, algorithm.needs_power_of_two_block())?,
    }
    match (options.policy, algorithm.resolve()) {
        (None, _) => Ok(()),
        (Some(_), a) if a.takes_block_threads() => Err(Error::invalid(
            "policy",
            format!("{algorithm} takes a block size (ScanOptions::with_block_threads), not a single-pass policy"),
        )),
        (Some(p), a) => {
            if a == ScanAlgorithm::ReduceThenScan {
                reduce_then_scan::check_shape_only(&p)?;
            }
            // What does not depend on the element size (4 passes the width
            // check); the look-back's own checks follow in dispatch.
            p.validate(4)
        }
    }
}

/// Checks that an input and an output of `bytes` bytes each either are the
/// same memory (an in-place scan) or do not overlap at all. Returns whether
/// they are the same memory.
///
/// ```
/// // 1 KiB at 0x1000: the same memory, disjoint memory, an overlap.
/// assert_eq!(scan::check_aliasing(0x1000, 0x1000, 1024).unwrap(), true);
/// assert_eq!(scan::check_aliasing(0x1000, 0x1400, 1024).unwrap(), false);
/// assert!(scan::check_aliasing(0x1000, 0x1200, 1024).is_err());
/// ```
pub fn check_aliasing(input_ptr: u64, output_ptr: u64, bytes: u64) -> Result<bool> {
    if bytes == 0 {
        return Ok(false);
    }
    if input_ptr == output_ptr {
        return Ok(true);
    }
    let overlap = input_ptr < output_ptr.saturating_add(bytes)
        && output_ptr < input_ptr.saturating_add(bytes);
    if overlap {
        Err(Error::invalid(
            "output",
            "input and output overlap without being the same memory: use scan_in_place, \
             or non-overlapping buffers",
        ))
    } else {
        Ok(false)
    }
}

/// Global-memory bytes an inclusive scan of `n` elements of `element_bytes`
/// moves with `algorithm` (`block_threads` for the teaching variants; ignored
/// otherwise): the figure the benchmarks turn into GB/s. The seeded kinds:
/// [`kind_bytes_moved`].
///
/// ```
/// use scan::ScanAlgorithm;
/// let n = 1 << 20;
/// let lookback = scan::bytes_moved(ScanAlgorithm::DecoupledLookback, n, 4, 0);
/// let blelloch = scan::bytes_moved(ScanAlgorithm::Blelloch, n, 4, 256);
/// assert!(lookback >= 2 * 4 * n); // at least one read and one write of each element
/// assert!(blelloch > lookback);
/// ```
pub fn bytes_moved(
    algorithm: ScanAlgorithm,
    n: u64,
    element_bytes: u64,
    block_threads: u32,
) -> u64 {
    bytes_moved_seeded(algorithm, n, element_bytes, block_threads, false)
}

/// [`bytes_moved`] for a scan of `kind` over `n` elements of `T`. Every
/// algorithm but `HillisSteeleGlobal` moves the same bytes for every kind
/// (the seed is a kernel argument); `HillisSteeleGlobal` adds its first
/// launch (the shift or the seed: n read, n written) for the seeded kinds.
///
/// ```
/// use scan::{ScanAlgorithm, ScanKind};
/// let n = 1 << 20;
/// let seeded = ScanKind::InclusiveFrom { initial: 5i32 };
/// let a = ScanAlgorithm::DecoupledLookback;
/// assert_eq!(scan::kind_bytes_moved(a, seeded, n, 0), scan::bytes_moved(a, n, 4, 0));
/// let global = ScanAlgorithm::HillisSteeleGlobal;
/// let plain = scan::bytes_moved(global, n, 4, 256);
/// assert_eq!(scan::kind_bytes_moved(global, seeded, n, 256), plain + 2 * 4 * n);
/// ```
pub fn kind_bytes_moved<T: Element>(
    algorithm: ScanAlgorithm,
    kind: ScanKind<T>,
    n: u64,
    block_threads: u32,
) -> u64 {
    let seeded = kind.initial().is_some();
    bytes_moved_seeded(algorithm, n, T::BYTES as u64, block_threads, seeded)
}

fn bytes_moved_seeded(
    algorithm: ScanAlgorithm,
    n: u64,
    element_bytes: u64,
    block_threads: u32,
    seeded: bool,
) -> u64 {
    match algorithm.resolve() {
        ScanAlgorithm::HillisSteeleGlobal => {
            hillis_steele_global::bytes_moved(n, element_bytes, seeded)
        }
        ScanAlgorithm::HillisSteele => recursive::bytes_moved(
            n,
            element_bytes,
            hillis_steele::HillisSteele.tile_items(block_threads),
        ),
        ScanAlgorithm::Blelloch => recursive::bytes_moved(
            n,
            element_bytes,
            blelloch::Blelloch::DEFAULT.tile_items(block_threads),
        ),
        ScanAlgorithm::BlellochPadded => recursive::bytes_moved(
            n,
            element_bytes,
            blelloch_padded::BlellochPadded::DEFAULT.tile_items(block_threads),
        ),
        ScanAlgorithm::DecoupledLookback | ScanAlgorithm::Auto => {
            lookback::lookback_bytes_moved(n, element_bytes)
        }
        ScanAlgorithm::ReduceThenScan => {
            reduce_then_scan::reduce_then_scan_bytes_moved(n, element_bytes)
        }
    }
}

/// Scans `input` into a new buffer.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::{ScanAlgorithm, ScanKind, ScanOptions};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [3i32, 1, 7, 0, 4];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let kind = ScanKind::Exclusive { initial: 100 };
/// let options = ScanOptions::new(ScanAlgorithm::Blelloch);
/// let starts = scan::scan(&gpu, x.view(), &Sum, kind, &options)?;
/// assert_eq!(starts.to_host(&gpu)?, scan::cpu::scan(&input, &Sum, kind)); // [100, 103, 104, 111, 111]
/// # Ok(()) }
/// ```
pub fn scan<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
) -> Result<DeviceBuffer<T>> {
    validate(input.len(), input.len(), options)?;
    // SAFETY: the scan below writes every element before the buffer is
    // returned; on error the buffer is dropped unread.
    let mut output = unsafe { DeviceBuffer::<T>::uninit(gpu, input.len())? };
    dispatch(gpu, Some(input), output.view_mut(), op, kind, options)?;
    Ok(output)
}

/// Scans `input` into the caller's `output` (same length). `output` may be
/// the very memory of `input` (then it is an in-place scan); any other
/// overlap is an error. On any argument error nothing is written.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Max};
/// use scan::{ScanKind, ScanOptions};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [3i32, 1, 7, 0, 4];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let mut running_max = DeviceBuffer::<i32>::zeros(&gpu, input.len())?;
/// scan::scan_into(&gpu, x.view(), running_max.view_mut(), &Max, ScanKind::Inclusive, &ScanOptions::default())?;
/// assert_eq!(running_max.to_host(&gpu)?, scan::cpu::inclusive(&input, &Max)); // [3, 3, 7, 7, 7]
/// # Ok(()) }
/// ```
pub fn scan_into<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
) -> Result<()> {
    validate(input.len(), output.len(), options)?;
    let same = check_aliasing(
        input.device_ptr(),
        output.device_ptr(),
        input.bytes() as u64,
    )?;
    let input = if same { None } else { Some(input) };
    dispatch(gpu, input, output, op, kind, options)
}

/// Scans `data` in place.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// use scan::{ScanKind, ScanOptions};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut host = vec![3u64, 1, 7, 0, 4];
/// let mut data = DeviceBuffer::from_host(&gpu, &host)?;
/// scan::scan_in_place(&gpu, data.view_mut(), &Sum, ScanKind::Inclusive, &ScanOptions::default())?;
/// scan::cpu::scan_in_place(&mut host, &Sum, ScanKind::Inclusive);
/// assert_eq!(data.to_host(&gpu)?, host); // [3, 4, 11, 11, 15]
/// # Ok(()) }
/// ```
pub fn scan_in_place<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    data: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
) -> Result<()> {
    validate(data.len(), data.len(), options)?;
    dispatch(gpu, None, data, op, kind, options)
}

/// Inclusive scan into a new buffer with the default algorithm.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let input = [3i32, 1, 7, 0, 4];
/// let x = DeviceBuffer::from_host(&gpu, &input)?;
/// let sums = scan::inclusive(&gpu, x.view(), &Sum)?;
/// assert_eq!(sums.to_host(&gpu)?, scan::cpu::inclusive(&input, &Sum)); // [3, 4, 11, 11, 15]
/// # Ok(()) }
/// ```
pub fn inclusive<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    op: &O,
) -> Result<DeviceBuffer<T>> {
    scan(gpu, input, op, ScanKind::Inclusive, &ScanOptions::default())
}

/// Exclusive scan (initial value: the operator's identity) into a new
/// buffer with the default algorithm.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu, Sum};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let counts = [3u32, 1, 7, 0, 4];
/// let x = DeviceBuffer::from_host(&gpu, &counts)?;
/// let offsets = scan::exclusive(&gpu, x.view(), &Sum)?;
/// assert_eq!(offsets.to_host(&gpu)?, scan::cpu::exclusive(&counts, &Sum)); // [0, 3, 4, 11, 11]
/// # Ok(()) }
/// ```
pub fn exclusive<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    op: &O,
) -> Result<DeviceBuffer<T>> {
    let kind = ScanKind::Exclusive {
        initial: op.identity(),
    };
    scan(gpu, input, op, kind, &ScanOptions::default())
}

/// The one dispatch: maps the algorithm and its policy (given, or the
/// default) to kernels and grids. Arguments are validated; `input` `None`
/// means in place. n = 0 launches nothing.
fn dispatch<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    options: &ScanOptions,
) -> Result<()> {
    check_element::<T, O>(op, options.algorithm)?;
    if output.is_empty() {
        return Ok(());
    }
    let block_threads = options.effective_block_threads();
    match options.algorithm.resolve() {
        ScanAlgorithm::HillisSteeleGlobal => {
            hillis_steele_global::scan(gpu, block_threads, input, output, op, kind)
        }
        ScanAlgorithm::HillisSteele => recursive::scan_recursive(
            gpu,
            &hillis_steele::HillisSteele,
            block_threads,
            input,
            output,
            op,
            kind,
        ),
        ScanAlgorithm::Blelloch => recursive::scan_recursive(
            gpu,
            &blelloch::Blelloch::DEFAULT,
            block_threads,
            input,
            output,
            op,
            kind,
        ),
        ScanAlgorithm::BlellochPadded => recursive::scan_recursive(
            gpu,
            &blelloch_padded::BlellochPadded::DEFAULT,
            block_threads,
            input,
            output,
            op,
            kind,
        ),
        ScanAlgorithm::DecoupledLookback | ScanAlgorithm::Auto => {
            let policy = options
                .policy
                .unwrap_or_else(|| lookback::lookback_policy_for_len(T::BYTES, output.len()));
            lookback::scan_lookback_tuned(gpu, input, output, op, kind, policy)
        }
        ScanAlgorithm::ReduceThenScan => {
            let policy = options
                .policy
                .unwrap_or_else(|| reduce_then_scan::reduce_then_scan_policy(T::BYTES));
            reduce_then_scan::reduce_then_scan_tuned(gpu, input, output, op, kind, policy)
        }
    }
}

/// Whether `algorithm` scans `T` with `op`. Every algorithm takes every
/// element type with the built-in operators, and the 4- and 8-byte types
/// with any operator. The 1- and 2-byte types (`i8`, `u8`, `i16`, `u16`,
/// `f16`, `bf16`) scan in a 4-byte accumulator (`i32`/`u32` extended,
/// exact; `f32` for the 16-bit floats, each output rounded once): every
/// item is widened when loaded, every combine, shared tile and total
/// between levels or passes is an accumulator, and each output is narrowed
/// once when stored. A custom operator (its CUDA written for the element
/// type) on them is a typed [`Error::Unsupported`], found on the host (for
/// any length, 0 included).
///
/// ```
/// use gpu_core::{f16, CustomOp, Error, Sum};
/// use scan::ScanAlgorithm;
/// assert!(scan::check_element::<i8, _>(&Sum, ScanAlgorithm::Auto).is_ok());
/// assert!(scan::check_element::<f16, _>(&Sum, ScanAlgorithm::DecoupledLookback).is_ok());
/// assert!(scan::check_element::<u16, _>(&Sum, ScanAlgorithm::Blelloch).is_ok());
/// assert!(scan::check_element::<f16, _>(&Sum, ScanAlgorithm::HillisSteeleGlobal).is_ok());
/// let custom = CustomOp::<i16>::new("add", "a + b", 0, |a, b| a.wrapping_add(b))?;
/// for algorithm in ScanAlgorithm::ALL {
///     assert!(matches!(
///         scan::check_element::<i16, _>(&custom, algorithm),
///         Err(Error::Unsupported(_))
///     ));
/// }
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn check_element<T: Element, O: Operator<T>>(op: &O, algorithm: ScanAlgorithm) -> Result<()> {
    match algorithm.resolve() {
        ScanAlgorithm::DecoupledLookback => lookback::check_element::<T, O>(op),
        other => gpu_core::op::check_register_operator::<T, O>(&format!("{other} scan"), op),
    }
}

/// The part of a module key that names `T` and `op` completely (for
/// `Gpu::stored_kernel`): the element suffix, the operator's name, and the
/// fingerprint of its CUDA functor (two custom operators may share a name;
/// the functor spells identity, combine and support code).
pub(crate) fn operator_key<T: Element, O: Operator<T>>(op: &O) -> String {
    format!(
        "{}/{}/{}",
        T::SUFFIX,
        op.name(),
        gpu_core::kernel::fingerprint(&gpu_core::operator_prelude::<T, O>(op, "op_t"))
    )
}

/// Every module any algorithm can request for `T` and `op` (every block
/// size uses the same module: the block size is a launch parameter); none
/// where [`check_element`] refuses every algorithm (a custom operator on a
/// 1- or 2-byte type).
///
/// ```
/// use gpu_core::{f16, Sum};
/// let modules = scan::modules_for::<f32, _>(&Sum);
/// assert!(modules.len() > 5);
/// // The 16-bit floats have the same algorithms (on an f32 accumulator).
/// assert_eq!(scan::modules_for::<f16, _>(&Sum).len(), modules.len());
/// ```
pub fn modules_for<T: Element, O: Operator<T>>(op: &O) -> Vec<ModuleSource> {
    if check_element::<T, O>(op, ScanAlgorithm::Auto).is_err() {
        return Vec::new();
    }
    let mut modules = vec![
        hillis_steele_global::module::<T, O>(op),
        hillis_steele::HillisSteele.module::<T, O>(op),
        blelloch::Blelloch::DEFAULT.module::<T, O>(op),
        blelloch_padded::BlellochPadded::DEFAULT.module::<T, O>(op),
        recursive::uniform_add_module::<T, O>(op),
    ];
    modules.extend(lookback::lookback_modules::<T, O>(op));
    modules.extend(reduce_then_scan::reduce_then_scan_modules::<T, O>(op));
    modules
}

fn arithmetic_modules<T: Element>(modules: &mut Vec<ModuleSource>) {
    modules.extend(modules_for::<T, _>(&Sum));
    modules.extend(modules_for::<T, _>(&Max));
    modules.extend(modules_for::<T, _>(&Min));
}

fn bitwise_modules<T: IntElement>(modules: &mut Vec<ModuleSource>) {
    modules.extend(modules_for::<T, _>(&BitAnd));
    modules.extend(modules_for::<T, _>(&BitOr));
    modules.extend(modules_for::<T, _>(&BitXor));
}

/// Every kernel module this crate can request (every algorithm × element
/// type × built-in operator: sum, max and min for every type; and, or and
/// xor for the integer types), for the kernel-compile test.
///
/// ```
/// let catalog = scan::kernel_catalog();
/// assert!(catalog.len() > scan::modules_for::<i32, _>(&gpu_core::Sum).len());
/// ```
pub fn kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    arithmetic_modules::<i32>(&mut modules);
    arithmetic_modules::<u32>(&mut modules);
    arithmetic_modules::<i64>(&mut modules);
    arithmetic_modules::<u64>(&mut modules);
    arithmetic_modules::<f32>(&mut modules);
    arithmetic_modules::<f64>(&mut modules);
    bitwise_modules::<i32>(&mut modules);
    bitwise_modules::<u32>(&mut modules);
    bitwise_modules::<i64>(&mut modules);
    bitwise_modules::<u64>(&mut modules);
    arithmetic_modules::<i8>(&mut modules);
    arithmetic_modules::<u8>(&mut modules);
    arithmetic_modules::<i16>(&mut modules);
    arithmetic_modules::<u16>(&mut modules);
    arithmetic_modules::<f16>(&mut modules);
    arithmetic_modules::<bf16>(&mut modules);
    bitwise_modules::<i8>(&mut modules);
    bitwise_modules::<u8>(&mut modules);
    bitwise_modules::<i16>(&mut modules);
    bitwise_modules::<u16>(&mut modules);
    modules.extend(segmented::catalog());
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_checks_lengths_and_block_sizes() {
        let teaching = |a, b| ScanOptions::new(a).with_block_threads(b);
        assert!(validate(10, 10, &ScanOptions::default()).is_ok());
        assert!(matches!(
            validate(10, 9, &ScanOptions::default()),
            Err(Error::LengthMismatch {
                expected: 10,
                actual: 9,
                ..
            })
        ));
        assert!(validate(0, 0, &ScanOptions::default()).is_ok());
        for a in ScanAlgorithm::TEACHING {
            for b in [32, 64, 128, 256, 512, 1024] {
                assert!(validate(5, 5, &teaching(a, b)).is_ok(), "{a} {b}");
            }
            for b in [0, 16, 31, 33, 1025, 2048] {
                assert!(validate(5, 5, &teaching(a, b)).is_err(), "{a} {b}");
            }
        }
        // 96: fine for Hillis–Steele, not for Blelloch's tree.
        assert!(validate(5, 5, &teaching(ScanAlgorithm::HillisSteele, 96)).is_ok());
        assert!(validate(5, 5, &teaching(ScanAlgorithm::HillisSteeleGlobal, 96)).is_ok());
        assert!(validate(5, 5, &teaching(ScanAlgorithm::Blelloch, 96)).is_err());
        assert!(validate(5, 5, &teaching(ScanAlgorithm::BlellochPadded, 96)).is_err());
        // The look-back kernels refuse a block size.
        for a in [
            ScanAlgorithm::DecoupledLookback,
            ScanAlgorithm::ReduceThenScan,
            ScanAlgorithm::Auto,
        ] {
            assert!(validate(5, 5, &ScanOptions::new(a)).is_ok());
            assert!(validate(5, 5, &teaching(a, 256)).is_err());
        }
    }

    #[test]
    fn policies_are_used_or_refused() {
        use policy::{Policy, TileLayout, LOOKBACK_TUNING, PROTOCOL_TEST_TUNING};
        let with = |a, p| ScanOptions::new(a).with_policy(p);
        for (_, table) in LOOKBACK_TUNING {
            for a in [ScanAlgorithm::DecoupledLookback, ScanAlgorithm::Auto] {
                assert!(validate(5, 5, &with(a, table)).is_ok());
            }
            // A look-back policy sets look-back fields: refused by
            // reduce-then-scan, which takes a tile shape only.
            assert!(matches!(
                validate(5, 5, &with(ScanAlgorithm::ReduceThenScan, table)),
                Err(Error::InvalidArgument { name: "policy", .. })
            ));
        }
        let shape = PROTOCOL_TEST_TUNING;
        assert!(validate(5, 5, &with(ScanAlgorithm::ReduceThenScan, shape)).is_ok());
        // The teaching variants take a block size, not a policy.
        for a in ScanAlgorithm::TEACHING {
            assert!(validate(5, 5, &with(a, shape)).is_err(), "{a}");
        }
        // An invalid policy is refused before anything runs.
        let bad = Policy::shape(48, 4).with_layout(TileLayout::WarpStriped);
        assert!(validate(5, 5, &with(ScanAlgorithm::DecoupledLookback, bad)).is_err());
        assert!(validate(
            5,
            5,
            &with(ScanAlgorithm::ReduceThenScan, Policy::shape(48, 4))
        )
        .is_err());
        // A block size given to the look-back is refused, not dropped.
        let both = ScanOptions::new(ScanAlgorithm::DecoupledLookback).with_block_threads(256);
        assert!(matches!(
            validate(5, 5, &both),
            Err(Error::InvalidArgument {
                name: "block_threads",
                ..
            })
        ));
    }

    #[test]
    fn aliasing_rules() {
        assert!(check_aliasing(1000, 1000, 40).unwrap());
        assert!(!check_aliasing(1000, 1040, 40).unwrap());
        assert!(!check_aliasing(1040, 1000, 40).unwrap());
        assert!(check_aliasing(1000, 1004, 40).is_err());
        assert!(check_aliasing(1004, 1000, 40).is_err());
        assert!(!check_aliasing(1000, 1000, 0).unwrap());
    }

    #[test]
    fn bytes_moved_per_algorithm() {
        let n = 1u64 << 28;
        let teaching = |a| bytes_moved(a, n, 4, 512) as f64 / (8 * n) as f64;
        // The recursive variants move ≈ 4n elements: twice a copy.
        for a in [
            ScanAlgorithm::HillisSteele,
            ScanAlgorithm::Blelloch,
            ScanAlgorithm::BlellochPadded,
        ] {
            let ratio = teaching(a);
            assert!((2.0..2.01).contains(&ratio), "{a}: {ratio}");
        }
        // Global Hillis–Steele: ≈ 3n per step, 28 steps.
        let ratio = teaching(ScanAlgorithm::HillisSteeleGlobal);
        assert!((41.0..42.1).contains(&ratio), "{ratio}");
        // The single pass is close to a copy; Auto is the look-back.
        let lookback = bytes_moved(ScanAlgorithm::DecoupledLookback, n, 4, 0);
        assert!(lookback >= 8 * n && lookback < 8 * n + 8 * n / 64);
        assert_eq!(bytes_moved(ScanAlgorithm::Auto, n, 4, 0), lookback);
        assert!(bytes_moved(ScanAlgorithm::ReduceThenScan, n, 4, 0) >= 12 * n);
        for a in ScanAlgorithm::ALL {
            assert_eq!(bytes_moved(a, 0, 4, 512), 0, "{a}");
        }
    }

    #[test]
    fn options_default_to_auto_and_256() {
        let o = ScanOptions::default();
        assert_eq!(o.algorithm, ScanAlgorithm::Auto);
        assert_eq!(o.effective_block_threads(), 256);
        assert_eq!(
            ScanOptions::new(ScanAlgorithm::Blelloch)
                .with_block_threads(128)
                .effective_block_threads(),
            128
        );
    }

    #[test]
    fn catalog_covers_every_type_and_operator() {
        let catalog = kernel_catalog();
        let names: Vec<&str> = catalog.iter().map(|m| m.name()).collect();
        let has_every_family = |t: &str, op: &str| {
            for family in [
                "hillis_steele_global",
                "hillis_steele",
                "blelloch",
                "blelloch_padded",
                "uniform_add",
            ] {
                let name = format!("scan_{family}_{t}_{op}");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        };
        for t in ["i32", "u32", "i64", "u64", "f32", "f64"] {
            for op in ["sum", "max", "min"] {
                has_every_family(t, op);
            }
        }
        for t in ["i32", "u32", "i64", "u64"] {
            for op in ["and", "or", "xor"] {
                let name = format!("scan_blelloch_padded_{t}_{op}");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        }
        // The 1- and 2-byte types have every algorithm too.
        for t in ["i8", "u8", "i16", "u16", "f16", "bf16"] {
            for op in ["sum", "max", "min"] {
                has_every_family(t, op);
                let name = format!("scan_reduce_then_scan_{t}_{op}_256x16");
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        }
        assert!(!names.iter().any(|n| n.contains("f32_and")));
        assert!(!names.iter().any(|n| n.contains("f16_and")));
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate module names");
    }
}
