//! `ScanAlgorithm::Blelloch`: the work-efficient up-sweep / down-sweep block
//! scan (Blelloch 1990), four elements per thread, under the recursive
//! multi-block driver.
//!
//! Computes an inclusive or exclusive scan of any length. One block of B
//! threads (a power of two) scans a tile of T = 4B elements
//! ([`crate::policy::BLELLOCH_ITEMS_PER_THREAD`]); thread t owns positions 4t … 4t+3 (vector
//! loads and stores when the array is aligned to them). The up-sweep builds
//! a reduction tree (log2 T levels, half the nodes idle at each deeper
//! level), the root is saved as the tile total and cleared to the identity,
//! and the down-sweep pushes prefixes back down (log2 T levels). The result
//! is the exclusive scan; the inclusive one adds each element's own input.
//! The driver (`recursive.rs`) scans the tile totals by the same method and
//! folds them in with a uniform add.
//!
//! The tree is the textbook's; four things make it fast on a GPU whose
//! block scan is bound by shared memory and instruction issue, not by DRAM:
//! - the levels inside one thread's elements run in registers: each half of
//!   a thread's four elements folds to one leaf, so the tree in shared
//!   memory has 2B leaves, the leaf pair of the lab's two-per-thread kernel,
//!   and costs the same per tile while the tile is twice as long (half the
//!   shared-memory wavefronts, bank conflicts and barriers per element);
//! - the pair's own level of both sweeps is done in registers too (no
//!   shared-memory round trip, no barrier);
//! - the levels with at most 32 active threads run inside warp 0 behind warp
//!   barriers, while the other 15 warps (B = 512) skip them instead of
//!   passing a block barrier at each;
//! - the grid is persistent, and each block loads its next tile's elements
//!   into registers before scanning the current one (the pipelined tile loop
//!   of `kernels/cuda/scan/recursive.cuh`).
//!
//! - work: ≈ 2n combines (work-efficient); steps: 2·log2 T levels per tile
//!   behind 2·max(log2 B − 6, 0) + 2 block barriers, ⌈log_T n⌉ levels of
//!   recursion;
//! - global bytes moved: ≈ 4n·sizeof(T) plus the higher levels, see
//!   [`crate::bytes_moved`];
//! - launches: 2·levels − 1;
//! - shared memory per block: 2B accumulators (the element type, or 4 bytes
//!   for the 1- and 2-byte types; 4 KiB for B = 512, `i32`);
//! - bank conflicts: at stride s the active threads of a warp touch words 2s
//!   apart, a min(2s, 32)-way conflict (on the H100 these cost more
//!   shared-memory cycles than the whole padded scan): what
//!   [`ScanAlgorithm::BlellochPadded`](crate::ScanAlgorithm::BlellochPadded)
//!   removes;
//! - in place: yes; deterministic: yes.
//!
//! Kernel: `kernels/cuda/scan/blelloch.cu` (template parameter PADDED = false).

use gpu_core::{Element, ModuleSource, Operator};

use crate::policy::{BLELLOCH_ITEMS_PER_THREAD, LOG_NUM_BANKS};
use crate::recursive::{block_entry_params, recursive_module, stages, BlockScan, Stage};

/// Tile size of both Blelloch variants with `items_per_thread` elements per
/// thread.
pub(crate) fn blelloch_tile_items(block_threads: u32, items_per_thread: u32) -> u64 {
    block_threads as u64 * items_per_thread as u64
}

/// The name of a Blelloch family (`blelloch` or `blelloch_padded`) at
/// `items_per_thread`: the base name at the policy's value, suffixed
/// otherwise (so that each shape has its own module and store entry).
pub(crate) fn blelloch_family(base: &str, items_per_thread: u32) -> String {
    if items_per_thread == BLELLOCH_ITEMS_PER_THREAD {
        base.to_string()
    } else {
        format!("{base}_items{items_per_thread}")
    }
}

/// Leaves of the tree in shared memory for a block of `block_threads`: two
/// per thread (each the total of half of the thread's elements).
pub(crate) fn blelloch_leaves(block_threads: u32) -> u64 {
    2 * block_threads as u64
}

/// A Blelloch block-scan module: `family` names it (see
/// [`blelloch_family`]), `padded` picks the template parameter,
/// `items_per_thread` the elements per thread (an even power of two); one
/// entry per stage.
pub(crate) fn blelloch_module<T: Element, O: Operator<T>>(
    family: &str,
    padded: bool,
    items_per_thread: u32,
    op: &O,
) -> ModuleSource {
    let module = recursive_module::<T, O>(format!("scan_{family}_{}_{}", T::SUFFIX, op.name()), op)
        .define("LOG_NUM_BANKS", LOG_NUM_BANKS)
        .define("BLELLOCH_ITEMS", items_per_thread)
        .source(parprims_kernels::SCAN_BLELLOCH);
    stages::<T>().iter().fold(module, |module, &stage| {
        let (load, store) = stage.types::<T>();
        module.entry(
            blelloch_entry::<T, O>(family, op, stage),
            &block_entry_params::<T>(stage),
            &format!(
                "blelloch_block<{load}, {store}, op_t, {padded}>(in, out, totals, n, exclusive, \
                 has_seed, seed)"
            ),
            Some(crate::policy::MAX_BLOCK_THREADS),
        )
    })
}

/// Entry name of a Blelloch block scan's `stage`.
pub(crate) fn blelloch_entry<T: Element, O: Operator<T>>(
    family: &str,
    op: &O,
    stage: Stage,
) -> String {
    format!(
        "{family}_block_{}_{}{}",
        T::SUFFIX,
        op.name(),
        stage.suffix()
    )
}

/// The unpadded Blelloch block scan, for the recursive driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blelloch {
    /// Elements per thread: an even power of two, 2 … 16.
    pub(crate) items_per_thread: u32,
}

impl Blelloch {
    /// The policy's shape ([`BLELLOCH_ITEMS_PER_THREAD`]).
    pub(crate) const DEFAULT: Blelloch = Blelloch {
        items_per_thread: BLELLOCH_ITEMS_PER_THREAD,
    };
}

impl BlockScan for Blelloch {
    fn tile_items(&self, block_threads: u32) -> u64 {
        blelloch_tile_items(block_threads, self.items_per_thread)
    }

    fn shared_bytes(&self, block_threads: u32, value_bytes: u64) -> u64 {
        blelloch_leaves(block_threads) * value_bytes
    }

    fn module<T: Element, O: Operator<T>>(&self, op: &O) -> ModuleSource {
        let family = blelloch_family("blelloch", self.items_per_thread);
        blelloch_module::<T, O>(&family, false, self.items_per_thread, op)
    }

    fn loops_over_tiles(&self) -> bool {
        true
    }

    fn entry<T: Element, O: Operator<T>>(&self, op: &O, stage: Stage) -> String {
        let family = blelloch_family("blelloch", self.items_per_thread);
        blelloch_entry::<T, O>(&family, op, stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::Max;

    /// Every shape the tuning sweep takes compiles for both variants, for a
    /// 4-, an 8- and a 2-byte type (skips without NVRTC unless
    /// PARPRIMS_REQUIRE_NVRTC=1).
    #[test]
    fn every_items_per_thread_compiles() {
        use crate::blelloch_padded::BlellochPadded;
        use parprims_testkit::testing::{compile_failures, nvrtc_or_skip};
        if !nvrtc_or_skip() {
            return;
        }
        let mut modules = Vec::new();
        for items_per_thread in [2u32, 4, 8, 16] {
            let plain = Blelloch { items_per_thread };
            let padded = BlellochPadded { items_per_thread };
            modules.push(plain.module::<i32, _>(&gpu_core::Sum));
            modules.push(padded.module::<u64, _>(&Max));
            modules.push(plain.module::<gpu_core::f16, _>(&gpu_core::Sum));
        }
        let failures = compile_failures(&modules, &["sm_90"]);
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Elements per thread of both Blelloch variants, side by side in one
    /// process (`--nocapture`): inclusive `i32` sum at 2^28 and at the seed's
    /// 123123123 with the default block, each shape checked against the host
    /// once, then the median of 10 against the copy ceiling of the same run
    /// on the lab's 8n basis. Two is the lab's form (every element a leaf of
    /// the tree); the table in `docs/tuning.md` comes from this sweep.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn blelloch_items_per_thread_tuning() {
        use crate::blelloch_padded::BlellochPadded;
        use crate::recursive::scan_recursive;
        use crate::ScanKind;
        use gpu_core::{DeviceBuffer, Gpu, Sum};
        use parprims_testkit::bench::{copy_ceiling, time_device, Repetitions};
        use parprims_testkit::rng::random_vec;

        /// One inclusive sum of `input` into `output` by `scan`.
        fn scan_into_with<S: BlockScan>(
            gpu: &Gpu,
            scan: &S,
            block_threads: u32,
            input: &DeviceBuffer<i32>,
            output: &mut DeviceBuffer<i32>,
        ) -> gpu_core::Result<()> {
            let (input, output) = (Some(input.view()), output.view_mut());
            scan_recursive(
                gpu,
                scan,
                block_threads,
                input,
                output,
                &Sum,
                ScanKind::Inclusive,
            )
        }

        let gpu = Gpu::new(0).expect("a CUDA GPU");
        let reps = Repetitions {
            warmup: 3,
            timed: 10,
        };
        let ceiling = copy_ceiling(&gpu, 1 << 30, reps).expect("copy ceiling");
        println!("copy ceiling {:.1} GB/s", ceiling.gbps);
        let block_threads = crate::policy::DEFAULT_BLOCK_THREADS;
        for n in [1usize << 28, 123_123_123] {
            let host: Vec<i32> = random_vec(n, 0x5ca9 + n as u64, -1000.0, 1000.0);
            let mut want = host.clone();
            let mut running = 0i32;
            for x in &mut want {
                running = running.wrapping_add(*x);
                *x = running;
            }
            let input = DeviceBuffer::from_host(&gpu, &host).expect("upload");
            let mut output = DeviceBuffer::<i32>::zeros(&gpu, n).expect("output");
            for padded in [false, true] {
                for items_per_thread in [2u32, 4, 8, 16] {
                    let mut run = || {
                        if padded {
                            let scan = BlellochPadded { items_per_thread };
                            scan_into_with(&gpu, &scan, block_threads, &input, &mut output)
                        } else {
                            let scan = Blelloch { items_per_thread };
                            scan_into_with(&gpu, &scan, block_threads, &input, &mut output)
                        }
                    };
                    run().expect("scan");
                    let timing = time_device(&gpu, reps, |_| Ok(()), |_| run()).expect("timing");
                    let got = output.to_host(&gpu).expect("download");
                    let name = if padded { "BlellochPadded" } else { "Blelloch" };
                    assert!(
                        got == want,
                        "{name} items {items_per_thread} n {n}: wrong scan"
                    );
                    let gbps = timing.gbps(8.0 * n as f64);
                    println!(
                        "{name:>14} n {n:>9} block {block_threads} items {items_per_thread:>2}: \
                         {:.4} ms, {:.0} GB/s, {:.3} of ceiling",
                        timing.median_ms,
                        gbps,
                        gbps / ceiling.gbps
                    );
                }
            }
        }
    }

    #[test]
    fn geometry() {
        let blelloch = Blelloch::DEFAULT;
        assert_eq!(blelloch.tile_items(512), 2048);
        assert_eq!(blelloch.shared_bytes(512, 4), 4096);
        let m = blelloch.module::<f64, _>(&Max);
        assert_eq!(m.entries(), ["blelloch_block_f64_max"]);
        assert!(m.code().contains("blelloch_block<f64, f64, op_t, false>"));
        assert!(m.code().contains("#define BLELLOCH_ITEMS 4"));
        let m = blelloch.module::<gpu_core::f16, _>(&Max);
        assert_eq!(
            m.entries(),
            [
                "blelloch_block_f16_max",
                "blelloch_block_f16_max_to_acc",
                "blelloch_block_f16_max_acc"
            ]
        );
        assert!(m.code().contains("blelloch_block<f16, f32, op_t, false>"));
    }
}
