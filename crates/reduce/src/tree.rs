//! The lesson's reductions: a binary tree per block of 1024 items, one
//! launch per level until one block is left.
//!
//! - **Computes** any reducer, as the single pass does (same functors).
//! - **Work** O(n) combines; **steps** O(log₁₀₂₄ n · log 1024).
//! - **Launches** ⌈log₁₀₂₄ n⌉ (two for n ≤ 2^20, three to 2^30).
//! - **Bytes moved**, global-memory tree: n·s read, n·v written to a work
//!   array and about 2·n·v more read and written by the tree's levels (v the
//!   reducer's value size); shared-memory tree: n·s read plus the partials.
//! - **Memory**: partial arrays of ⌈n / 1024⌉ values, and for the global
//!   tree the n-value work array (the lesson's tree folds in place, and the
//!   input is the caller's, so it folds a copy).
//!
//! The pairing (`kernels/cuda/reduce/tree.cu`) keeps operands in index
//! order, so custom operators need only be associative; results are
//! deterministic (the tree's shape depends only on n).

use gpu_core::launch::LaunchConfig;
use gpu_core::{DeviceBuffer, DeviceView, Element, Error, Gpu, KernelArgs, Operator, Result};

use crate::modules::{reducer_kernel, value_bytes, Method, Reducer, TREE_BLOCK_THREADS};

/// Which tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tree {
    /// In global memory (on a work copy of the input).
    Global,
    /// In shared memory.
    Shared,
}

/// Launches per level: `⌈n / 1024⌉` blocks, then `⌈that / 1024⌉`, … until
/// one block. Never empty (n = 0 launches one block that stores the
/// identity).
///
/// ```text
/// level_blocks(1 << 20) = [1024, 1]
/// ```
pub(crate) fn level_blocks(n: u64) -> Vec<u64> {
    let block = TREE_BLOCK_THREADS as u64;
    let mut levels = vec![n.div_ceil(block).max(1)];
    while let Some(&last) = levels.last() {
        if last == 1 {
            break;
        }
        levels.push(last.div_ceil(block));
    }
    levels
}

/// A device buffer of `bytes` bytes for values of any reducer (u64 words).
fn value_buffer(gpu: &Gpu, bytes: u64) -> Result<DeviceBuffer<u64>> {
    let words = usize::try_from(bytes.div_ceil(8).max(1))
        .map_err(|_| Error::invalid("n", "too many values for a work array"))?;
    // SAFETY: every value is written by a kernel before it is read.
    unsafe { DeviceBuffer::<u64>::uninit(gpu, words) }
}

/// Runs the tree of `reducer` over `input`, storing the result at
/// `out0`/`out1` (device addresses). Arguments validated by the caller.
pub(crate) fn run<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    reducer: &Reducer<'_, T, U, O>,
    tree: Tree,
    out0: u64,
    out1: u64,
) -> Result<()> {
    let n = input.len() as u64;
    let v = value_bytes(reducer) as u64;
    let levels = level_blocks(n);
    let (first, next) = match tree {
        Tree::Global => (Method::GlobalTreeFirst, Method::GlobalTreeNext),
        Tree::Shared => (Method::SharedTreeFirst, Method::SharedTreeNext),
    };
    let first_kernel = reducer_kernel(gpu, first, reducer)?;
    let next_kernel = if levels.len() > 1 {
        Some(reducer_kernel(gpu, next, reducer)?)
    } else {
        None
    };
    let config = |blocks: u64| LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (TREE_BLOCK_THREADS, 1, 1),
        shared_bytes: 0,
    };
    // Two partial arrays, ping-ponged between levels.
    let mut partials = [
        value_buffer(gpu, levels[0] * v)?,
        value_buffer(gpu, levels.get(1).copied().unwrap_or(1) * v)?,
    ];
    let work = match tree {
        Tree::Global => Some(value_buffer(gpu, n * v)?),
        Tree::Shared => None,
    };

    let mut args = KernelArgs::new();
    args.input(&input).scalar(n);
    if let Some(work) = &work {
        args.scalar(work.view().device_ptr());
    }
    args.scalar(partials[0].view().device_ptr())
        .scalar(out0)
        .scalar(out1);
    // SAFETY: the arguments match reduce_{g,s}tree_first_*(const T* in, u64
    // n, [void* work,] void* partials, void* out0, void* out1). Block b reads
    // in[1024·b, min(1024·(b+1), n)), writes the same range of `work`
    // (n values) and partials[b] (levels[0] values), or the result through
    // out0/out1 when it is the only block.
    unsafe { gpu.launch(&first_kernel, config(levels[0]), &args) }?;

    for (level, pair) in levels.windows(2).enumerate() {
        let (values, blocks) = (pair[0], pair[1]);
        let (src, dst) = (level % 2, (level + 1) % 2);
        if partials[dst].len() as u64 * 8 < blocks * v {
            partials[dst] = value_buffer(gpu, blocks * v)?;
        }
        let mut args = KernelArgs::new();
        args.scalar(partials[src].view().device_ptr())
            .scalar(values)
            .scalar(partials[dst].view().device_ptr())
            .scalar(out0)
            .scalar(out1);
        let kernel = next_kernel
            .as_ref()
            .ok_or_else(|| Error::invalid("n", "a tree level without its kernel"))?;
        // SAFETY: reduce_{g,s}tree_next_*(void* values, u64 n, void*
        // partials, void* out0, void* out1): block b folds values[1024·b,
        // min(1024·(b+1), n)) (in place for the global tree) and writes
        // partials[b] (blocks values), or the result when it is the only
        // block. `values` holds the previous level's partials.
        unsafe { gpu.launch(kernel, config(blocks), &args) }?;
    }
    drop(work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_shrink_by_the_block_until_one() {
        assert_eq!(level_blocks(0), vec![1]);
        assert_eq!(level_blocks(1024), vec![1]);
        assert_eq!(level_blocks(1025), vec![2, 1]);
        assert_eq!(level_blocks(1 << 20), vec![1024, 1]);
        assert_eq!(level_blocks((1 << 20) + 1), vec![1025, 2, 1]);
        assert_eq!(level_blocks(1 << 28), vec![1 << 18, 256, 1]);
    }
}
