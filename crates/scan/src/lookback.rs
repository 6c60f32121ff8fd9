//! Single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass
//! Parallel Prefix Scan with Decoupled Look-back", NVIDIA NVR-2016-002).
//!
//! - **Computes** an inclusive or exclusive scan of `n` elements under any
//!   associative operator (operands kept in index order: the operator need
//!   not be commutative).
//! - **Work** O(n) (about 2n combines plus the look-back), **steps**
//!   O(items per thread + log block + look-back depth).
//! - **Bytes moved** 2·n·size (each element read once and written once) plus
//!   the tile state ([`lookback_bytes_moved`]): the memcpy lower bound.
//! - **Launches** one kernel, after one memset of the per-call tile state
//!   (tile counter + status words, one small allocation, both stream-ordered).
//! - **Shared memory** per block: the striped↔blocked exchange, (tile + tile
//!   / (128 / size)) · size bytes (≈ 17 KB for 256 × 16 four-byte items),
//!   padded so both access patterns are free of bank conflicts, plus one
//!   word per warp.
//! - **In place**: yes (`input = None`): a block reads its whole tile before
//!   writing it, tiles are disjoint.
//! - **Deterministic**: for integers, yes (wrapping arithmetic is exact).
//!   **Not for floats**: a tile's prefix is either its predecessor's
//!   inclusive prefix or a chain of aggregates folded onto an earlier prefix,
//!   depending on which tiles have finished when it looks back, so rounding
//!   can differ from run to run. Use `ReduceThenScan` for bitwise-repeatable
//!   float results.
//!
//! How it works (kernels/cuda/scan_lookback.cu, lookback.cuh): one block per
//! tile; the tile index comes from an atomic counter, so tiles are handed out
//! in the order blocks start and the look-back only ever waits on resident
//! blocks (no deadlock). Each tile publishes its aggregate, then one warp
//! inspects 32 predecessors at once, spinning while any is unpublished, folds
//! aggregates back to the nearest inclusive prefix, and publishes its own
//! inclusive prefix. Four-byte values travel with their status in one 64-bit
//! word; eight-byte values use a fenced status/value protocol (see the
//! header of lookback.cuh for why each is correct).

use gpu_core::launch::{check_block_threads, grid_1d};
use gpu_core::{
    DeviceBuffer, DeviceView, DeviceViewMut, Element, Error, Gpu, KernelArgs, ModuleSource,
    Operator, Result,
};

use crate::kind::ScanKind;

/// Block size and items per thread of one tile-per-block scan kernel (the
/// look-back scan and the reduce-then-scan kernels use the same shape).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookbackTuning {
    /// Threads per block: a multiple of 32, 32 to 1024.
    pub block_threads: u32,
    /// Items each thread holds in registers, 1 to 32.
    pub items_per_thread: u32,
}

/// Static shared memory a kernel may use without opting in.
const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

impl LookbackTuning {
    /// Items per tile (= per block).
    pub fn tile_items(self) -> u64 {
        self.block_threads as u64 * self.items_per_thread as u64
    }

    /// Shared memory per block for `element_bytes`-byte elements: the padded
    /// exchange (one element of padding per 128 bytes), the warp totals, and
    /// a few words of tile bookkeeping.
    pub fn shared_bytes(self, element_bytes: u64) -> u64 {
        let tile = self.tile_items();
        let exchange = tile + tile / (128 / element_bytes);
        let warps = self.block_threads as u64 / 32;
        (exchange + warps + 1) * element_bytes + 16
    }

    /// Checks the shape for `element_bytes`-byte elements (4 or 8).
    pub fn validate(self, element_bytes: usize) -> Result<()> {
        check_block_threads(self.block_threads, false)?;
        if !(1..=32).contains(&self.items_per_thread) {
            return Err(Error::invalid(
                "items_per_thread",
                format!("{}: must be 1 to 32", self.items_per_thread),
            ));
        }
        if element_bytes != 4 && element_bytes != 8 {
            return Err(Error::Unsupported(format!(
                "look-back tile state for {element_bytes}-byte elements (4 or 8 only)"
            )));
        }
        let shared = self.shared_bytes(element_bytes as u64);
        if shared > STATIC_SHARED_LIMIT {
            return Err(Error::invalid(
                "items_per_thread",
                format!(
                    "{}×{} tile needs {shared} bytes of shared memory (at most {STATIC_SHARED_LIMIT})",
                    self.block_threads, self.items_per_thread
                ),
            ));
        }
        Ok(())
    }
}

/// Tuning by element size, as data: (element bytes, shape).
///
/// Not yet measured on the H100. Starting points that usually reach memcpy
/// speed on Hopper: 256 threads × 16 four-byte items (4096-item, 16 KiB
/// tiles), 256 × 8 eight-byte items (the same 16 KiB of data per tile).
/// Both keep 4 × 16-byte loads in flight per thread.
///
/// Resources as NVRTC 13.0 compiles them for sm_90 (sum): 4-byte 256 × 16,
/// 47 registers, 17.5 KiB static shared memory, no local memory → 5 blocks
/// per SM (registers bound); 8-byte 256 × 8, 54–56 registers, 18 KiB → 4
/// blocks per SM.
pub const LOOKBACK_TUNING: [(usize, LookbackTuning); 2] = [
    (
        4,
        LookbackTuning {
            block_threads: 256,
            items_per_thread: 16,
        },
    ),
    (
        8,
        LookbackTuning {
            block_threads: 256,
            items_per_thread: 8,
        },
    ),
];

/// The shape the protocol tests use: one warp, one item per thread, so a
/// million elements make tens of thousands of tiles in flight and every
/// block looks back through many windows.
pub const PROTOCOL_TEST_TUNING: LookbackTuning = LookbackTuning {
    block_threads: 32,
    items_per_thread: 1,
};

/// The table's shape for `element_bytes`-byte elements.
pub fn lookback_tuning(element_bytes: usize) -> LookbackTuning {
    LOOKBACK_TUNING
        .iter()
        .find(|(bytes, _)| *bytes == element_bytes)
        .map(|(_, tuning)| *tuning)
        // Every Element is 4 or 8 bytes; an unknown size gets the 8-byte
        // shape, which validate() then refuses with a typed error.
        .unwrap_or(LOOKBACK_TUNING[1].1)
}

/// u64 words of the per-call tile state for `num_tiles` tiles: the counter
/// and one padding word, then the status region (mirrors lookback.cuh:
/// one word per tile for 4-byte values; for 8-byte values ⌈tiles/2⌉ words
/// of u32 statuses, then the aggregate and prefix slots).
pub fn tile_state_words(num_tiles: u64, element_bytes: usize) -> u64 {
    let region = if element_bytes == 4 {
        num_tiles
    } else {
        num_tiles.div_ceil(2) + 2 * num_tiles
    };
    2 + region
}

/// Bytes the look-back scan moves for `n` elements of `element_bytes`
/// bytes with the table's tuning: 2·n·size, plus the tile state written by
/// the memset and read/written by the kernel (counted twice).
pub(crate) fn lookback_bytes_moved(n: u64, element_bytes: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let tiles = n.div_ceil(lookback_tuning(element_bytes as usize).tile_items());
    2 * n * element_bytes + 2 * 8 * tile_state_words(tiles, element_bytes as usize)
}

fn entry_name<T: Element, O: Operator<T>>(op: &O, tuning: LookbackTuning) -> String {
    format!(
        "scan_lookback_{}_{}_{}x{}",
        T::SUFFIX,
        op.name(),
        tuning.block_threads,
        tuning.items_per_thread
    )
}

fn module<T: Element, O: Operator<T>>(op: &O, tuning: LookbackTuning) -> ModuleSource {
    let t = T::CUDA_TYPE;
    let entry = entry_name::<T, O>(op, tuning);
    ModuleSource::new(entry.clone())
        .source(parprims_kernels::WARP)
        .source(parprims_kernels::BLOCK)
        .source(parprims_kernels::LOOKBACK)
        .source(parprims_kernels::SCAN_LOOKBACK)
        .operator::<T, O>(op, "op_t")
        .entry(
            entry,
            &format!(
                "const {t}* in, {t}* out, u64* state, u64 n, u64 num_tiles, u32 exclusive, \
                 {t} initial, u32 vector_ok"
            ),
            &format!(
                "scan_lookback_tile<{t}, op_t, {b}, {i}>(in, out, state, n, num_tiles, exclusive, \
                 initial, vector_ok)",
                b = tuning.block_threads,
                i = tuning.items_per_thread
            ),
            Some(tuning.block_threads),
        )
}

/// The modules [`scan_lookback`] can request for `T` and `op`: the table's
/// tuning, and the protocol tests' tiny tiles.
pub(crate) fn lookback_modules<T: Element, O: Operator<T>>(op: &O) -> Vec<ModuleSource> {
    vec![
        module::<T, O>(op, lookback_tuning(T::BYTES)),
        module::<T, O>(op, PROTOCOL_TEST_TUNING),
    ]
}

/// `(exclusive flag, initial)` as the kernels take them.
pub(crate) fn kind_arguments<T: Element, O: Operator<T>>(op: &O, kind: ScanKind<T>) -> (u32, T) {
    match kind {
        ScanKind::Inclusive => (0, op.identity()),
        ScanKind::Exclusive { initial } => (1, initial),
    }
}

/// Whether the kernels may use 16-byte vector accesses: both pointers
/// 16-byte aligned and every tile a whole number of 16-byte vectors (each
/// tile then starts aligned too). A view may start at any element; a
/// misaligned one takes the element-wise path.
pub(crate) fn vector_ok(
    in_ptr: u64,
    out_ptr: u64,
    tuning: LookbackTuning,
    element_bytes: usize,
) -> bool {
    in_ptr % 16 == 0 && out_ptr % 16 == 0 && (tuning.tile_items() * element_bytes as u64) % 16 == 0
}

/// Scans `input` into `output` (same length) in one pass; `input = None`
/// scans `output` in place. Arguments are validated by the caller
/// (`input.len() == output.len() > 0`).
pub(crate) fn scan_lookback<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
) -> Result<()> {
    scan_lookback_tuned(gpu, input, output, op, kind, lookback_tuning(T::BYTES))
}

/// [`scan_lookback`] with an explicit tile shape (the protocol tests use
/// [`PROTOCOL_TEST_TUNING`] to put hundreds of thousands of tiles in
/// flight). Validates everything before touching the device; `n = 0` does
/// nothing.
#[doc(hidden)]
pub fn scan_lookback_tuned<T: Element, O: Operator<T>>(
    gpu: &Gpu,
    input: Option<DeviceView<'_, T>>,
    mut output: DeviceViewMut<'_, T>,
    op: &O,
    kind: ScanKind<T>,
    tuning: LookbackTuning,
) -> Result<()> {
    tuning.validate(T::BYTES)?;
    if let Some(input) = &input {
        Error::check_len("scan input", output.len(), input.len())?;
    }
    let n = output.len() as u64;
    if n == 0 {
        return Ok(());
    }
    // One block per tile; the grid spills into y past 2^31 − 1 tiles, and
    // the kernel takes its tile index from the counter, not from blockIdx.
    let (config, num_tiles) = grid_1d(n, tuning.block_threads, tuning.items_per_thread, 0)?;
    let source = module::<T, O>(op, tuning);
    let kernel = gpu.kernel(&source, &entry_name::<T, O>(op, tuning))?;

    let out_ptr = output.device_ptr();
    let in_ptr = input.map_or(out_ptr, |view| view.device_ptr());
    let vectors = vector_ok(in_ptr, out_ptr, tuning, T::BYTES);
    let (exclusive, initial) = kind_arguments(op, kind);

    // Tile counter + statuses, zeroed (stream-ordered) before the launch and
    // freed stream-ordered when `state` drops after it.
    let state_words = tile_state_words(num_tiles, T::BYTES);
    let state_len = usize::try_from(state_words)
        .map_err(|_| Error::invalid("n", format!("{n} elements need too many tiles")))?;
    let mut state = DeviceBuffer::<u64>::zeros(gpu, state_len)?;
    let mut state_view = state.view_mut();

    let mut args = KernelArgs::new();
    args.scalar(in_ptr)
        .output(&mut output)
        .output(&mut state_view)
        .scalar(n)
        .scalar(num_tiles)
        .scalar(exclusive)
        .scalar(initial)
        .scalar(vectors as u32);
    // SAFETY: the argument list matches scan_lookback_tile's entry
    // (const T* in, T* out, u64* state, u64 n, u64 num_tiles, u32 exclusive,
    // T initial, u32 vector_ok). `in` and `out` cover n elements (equal
    // lengths checked above; `in == out` in place is supported: each block
    // reads its tile before writing it). The grid has num_tiles real blocks,
    // each touching only items [tile·TILE, min(n, (tile+1)·TILE)) of its
    // counter-assigned tile < num_tiles; `state` has tile_state_words(num_tiles)
    // zeroed words, the layout lookback.cuh reads. Vector accesses only when
    // vector_ok checked 16-byte alignment.
    unsafe { gpu.launch(&kernel, config, &args) }?;
    drop(state);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_covers_every_element_size_and_is_valid() {
        for bytes in [4usize, 8] {
            let tuning = lookback_tuning(bytes);
            tuning.validate(bytes).expect("table entries are valid");
            // 16 KiB of data per tile either way.
            assert_eq!(tuning.tile_items() * bytes as u64, 16 * 1024);
        }
        PROTOCOL_TEST_TUNING.validate(4).unwrap();
        PROTOCOL_TEST_TUNING.validate(8).unwrap();
    }

    #[test]
    fn shared_memory_and_shapes_are_checked() {
        let too_big = LookbackTuning {
            block_threads: 1024,
            items_per_thread: 32,
        };
        assert!(too_big.validate(4).is_err());
        let odd = LookbackTuning {
            block_threads: 100,
            items_per_thread: 4,
        };
        assert!(odd.validate(4).is_err());
        let none = LookbackTuning {
            block_threads: 64,
            items_per_thread: 0,
        };
        assert!(none.validate(4).is_err());
        let fine = LookbackTuning {
            block_threads: 512,
            items_per_thread: 16,
        };
        // 8192 items · 4 B + padding = 33 KB: fits.
        fine.validate(4).unwrap();
        assert!(fine.validate(2).is_err());
        // 256 × 16 × 4: exchange 4096 + 128 padding elements, 8 warp totals.
        assert_eq!(
            lookback_tuning(4).shared_bytes(4),
            (4096 + 128 + 8 + 1) * 4 + 16
        );
    }

    #[test]
    fn tile_state_layout_matches_the_header() {
        assert_eq!(tile_state_words(1, 4), 3);
        assert_eq!(tile_state_words(65_536, 4), 65_538);
        // 8-byte values: ⌈5/2⌉ status words + 5 aggregates + 5 prefixes.
        assert_eq!(tile_state_words(5, 8), 2 + 3 + 10);
        // 2^32 + 5 elements in 4096-item tiles: 2^20 + 1 tiles.
        let tiles = ((1u64 << 32) + 5).div_ceil(4096);
        assert_eq!(tiles, (1 << 20) + 1);
        assert_eq!(tile_state_words(tiles, 4), tiles + 2);
    }

    #[test]
    fn bytes_moved_is_two_passes_plus_state() {
        assert_eq!(lookback_bytes_moved(0, 4), 0);
        let n = 1u64 << 28;
        let tiles = n / 4096;
        assert_eq!(lookback_bytes_moved(n, 4), 8 * n + 16 * (tiles + 2));
        // The state is well under 1 % of the data.
        assert!(lookback_bytes_moved(n, 8) < (16 * n) * 101 / 100);
    }

    #[test]
    fn vector_accesses_need_alignment() {
        let t = lookback_tuning(4);
        assert!(vector_ok(0x1000, 0x2000, t, 4));
        assert!(!vector_ok(0x1004, 0x2000, t, 4));
        assert!(!vector_ok(0x1000, 0x2008, t, 4));
        // 32 × 1 × 4 B = 128 B tiles: still whole vectors.
        assert!(vector_ok(0x1000, 0x2000, PROTOCOL_TEST_TUNING, 4));
        // Any valid shape (a multiple of 32 threads) makes whole-vector
        // tiles; a shape whose ITEMS is not a multiple of the vector width
        // takes the element-wise path inside the kernel (compile-time).
        let odd_tile = LookbackTuning {
            block_threads: 32,
            items_per_thread: 3,
        };
        assert!(vector_ok(0x1000, 0x2000, odd_tile, 4));
        assert!(!vector_ok(0x1000, 0x2004, odd_tile, 8));
    }

    #[test]
    fn kind_arguments_carry_the_initial_value() {
        use gpu_core::Sum;
        assert_eq!(kind_arguments::<i32, _>(&Sum, ScanKind::Inclusive), (0, 0));
        assert_eq!(
            kind_arguments::<i32, _>(&Sum, ScanKind::Exclusive { initial: 7 }),
            (1, 7)
        );
    }

    /// Compiles a sample of the modules (all six types, so both status
    /// encodings and every shuffle overload; a non-commutative custom
    /// operator; both tunings) for sm_80 and sm_90 and checks the entries
    /// are there. The workspace's kernel_compile test covers the whole
    /// catalog.
    #[test]
    fn sample_modules_compile_with_nvrtc() {
        use gpu_core::kernel::{compile_cubin, cubin_defines, nvrtc_available};
        use gpu_core::{CustomOp, Max, Sum};
        if let Err(e) = nvrtc_available() {
            assert_ne!(
                std::env::var("PARPRIMS_REQUIRE_NVRTC").as_deref(),
                Ok("1"),
                "PARPRIMS_REQUIRE_NVRTC=1 but NVRTC is missing: {e}"
            );
            eprintln!("SKIPPED: NVRTC not found ({e})");
            return;
        }
        let affine = CustomOp::<u64>::new(
            "affine",
            "((((a & 0xffffffffull) * (b & 0xffffffffull)) & 0xffffffffull) | \
             ((((a >> 32) * (b & 0xffffffffull) + (b >> 32)) & 0xffffffffull) << 32))",
            1,
            |a, b| {
                let m = (a as u32).wrapping_mul(b as u32);
                let o = ((a >> 32) as u32)
                    .wrapping_mul(b as u32)
                    .wrapping_add((b >> 32) as u32);
                ((o as u64) << 32) | m as u64
            },
        )
        .unwrap();
        let mut modules = lookback_modules::<i32, _>(&Sum);
        modules.extend(lookback_modules::<f64, _>(&Max));
        modules.extend(lookback_modules::<u64, _>(&affine));
        modules.extend(lookback_modules::<u32, _>(&gpu_core::Min));
        modules.extend(lookback_modules::<i64, _>(&gpu_core::BitXor));
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<i64, _>(
            &Max,
        ));
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<f32, _>(
            &Sum,
        ));
        modules.extend(crate::reduce_then_scan::reduce_then_scan_modules::<u64, _>(
            &affine,
        ));
        for module in &modules {
            for arch in ["sm_80", "sm_90"] {
                let cubin = compile_cubin(module, arch)
                    .unwrap_or_else(|e| panic!("{} for {arch}: {e}", module.name()));
                for entry in module.entries() {
                    assert!(cubin_defines(&cubin, entry), "{entry} missing for {arch}");
                }
            }
        }
    }

    #[test]
    fn modules_name_their_entries() {
        use gpu_core::Sum;
        let modules = lookback_modules::<f32, _>(&Sum);
        assert_eq!(modules.len(), 2);
        assert_eq!(modules[0].entries(), ["scan_lookback_f32_sum_256x16"]);
        assert_eq!(modules[1].entries(), ["scan_lookback_f32_sum_32x1"]);
        assert!(modules[0]
            .code()
            .contains("scan_lookback_tile<f32, op_t, 256, 16>"));
    }
}
