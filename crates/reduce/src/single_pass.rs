//! The default reduction: one pass over the input at the bandwidth limit.
//!
//! - **Computes** any reducer (an operator over the items or over a fused
//!   map of them, an arg-reduction, minmax) in one launch.
//! - **Work** O(n) combines; **steps** O(n / (grid warps · 32) + log 32 +
//!   grid / 256).
//! - **Bytes moved** n·s read (the ceiling's unit), plus 16 bytes per block
//!   of partials written and read back and the result: the memcpy lower
//!   bound for a read-only pass.
//! - **Launches** one kernel, nothing else: the partials and the ticket
//!   counter are a ticket state from the scratch arena
//!   ([`gpu_core::single_pass::with_ticket_state`]), epoch-tagged, so no
//!   memset. A call that returns the value to the host has the last block
//!   write it into the context's page-locked, device-mapped result slot and
//!   raise a flag there, which the host polls (`Gpu::with_mapped_result`):
//!   no copy and no stream synchronisation.
//!
//! How (`kernels/cuda/reduce/single_pass.cu`): a persistent grid of
//! `min(⌈n / (256 · 4 · 16 B)⌉, SMs × resident blocks)` blocks of 256
//! threads; each warp owns one contiguous share of the input and walks it
//! with every lane keeping four 16-byte loads in flight (scalar loads when
//! the view is not 16-byte aligned); lanes fold their items (built-in,
//! commutative operators) or each group of 32 loads is folded in lane order
//! by shuffles (custom operators, which need only be associative); warp
//! totals fold in order into a block partial; the block that draws the last
//! ticket folds the partials in block order and stores the result.
//!
//! **Deterministic**: the grid depends only on n, the element type and the
//! device (SM count, occupancy), the shares on the grid, and every combine
//! order on the shares; so the same input at the same alignment gives the
//! same bits on every run on one GPU model. Another GPU model (another SM
//! count) or another library version may round floats differently.

use gpu_core::launch::LaunchConfig;
use gpu_core::single_pass::with_ticket_state;
use gpu_core::{DeviceView, Element, Gpu, KernelArgs, Operator, Result};

use crate::modules::{
    reducer_kernel, value_bytes, Method, Reducer, SINGLE_PASS_BLOCK_THREADS, SINGLE_PASS_UNROLL,
};

/// Where a reduction's result goes: two device addresses handed to the
/// reducer's `store` (the value, and the index of an arg-reduction).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Destination {
    /// Caller's device memory.
    Device { out0: u64, out1: u64 },
    /// Back to the host: the two result words, read after the launch.
    Host,
}

/// Items one block covers per round (every lane's loads of 16 bytes).
fn items_per_block_round(element_bytes: usize) -> u64 {
    let lanes = SINGLE_PASS_BLOCK_THREADS as u64;
    lanes * SINGLE_PASS_UNROLL as u64 * (16 / element_bytes.min(16)) as u64
}

/// The grid: enough blocks for one round each, never more than are
/// resident at once. A function of n, the element size and the device
/// only (the determinism guarantee rests on it).
///
/// ```text
/// blocks = clamp(⌈n / (256 · 4 · 16 / s)⌉, 1, SMs · resident per SM)
/// ```
pub(crate) fn grid_blocks(n: u64, element_bytes: usize, resident_blocks: u64) -> u64 {
    n.div_ceil(items_per_block_round(element_bytes))
        .clamp(1, resident_blocks.max(1))
}

/// Runs the single pass of `reducer` over `input`, the result to
/// `destination`. Returns the two result words when it goes to the host
/// (after synchronising), zeros otherwise. Arguments validated by the
/// caller.
pub(crate) fn run<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    reducer: &Reducer<'_, T, U, O>,
    destination: Destination,
) -> Result<[u64; 2]> {
    let n = input.len() as u64;
    let kernel = reducer_kernel(gpu, Method::SinglePass, reducer)?;
    let resident = kernel.resident_blocks_per_sm(SINGLE_PASS_BLOCK_THREADS, 0)? as u64;
    let blocks = grid_blocks(n, T::BYTES, gpu.info().sm_count as u64 * resident);
    let vector_ok = input.device_ptr().is_multiple_of(16);
    // Words 0, 1: tile counters; 2, 3: the result slot; then the partials.
    let partial_words = (blocks * value_bytes(reducer) as u64).div_ceil(8);
    with_ticket_state(gpu, 2 + partial_words, |mut state| {
        let base = state.words.device_ptr();
        let config = LaunchConfig {
            grid: (blocks as u32, 1, 1),
            block: (SINGLE_PASS_BLOCK_THREADS, 1, 1),
            shared_bytes: 0,
        };
        let mut launch = |out0: u64, out1: u64, done_flag: u64, seq: u64| -> Result<()> {
            let mut args = KernelArgs::new();
            args.input(&input)
                .scalar(n)
                .scalar(out0)
                .scalar(out1)
                .output(&mut state.words)
                .scalar(state.epoch)
                .scalar(u32::from(vector_ok))
                .scalar(done_flag)
                .scalar(seq);
            // SAFETY: the arguments match reduce_sp_*(const T* in, u64 n,
            // void* out0, void* out1, u64* state, u32 epoch, u32 vector_ok,
            // u64* done_flag, u64 seq). The kernel reads in[0, n) (16-byte
            // vector loads only when vector_ok, checked above), writes state
            // words 0–3 and the partials of `blocks` blocks (2 +
            // partial_words words after the two counters, the length of the
            // state), the result through out0/out1 (the caller's validated
            // one-element buffers, the state's result slot, or the context's
            // mapped result slot) and, when done_flag is not 0, the mapped
            // slot's flag word.
            unsafe { gpu.launch(&kernel, config, &args) }
        };
        match destination {
            Destination::Device { out0, out1 } => {
                launch(out0, out1, 0, 0)?;
                Ok([0, 0])
            }
            Destination::Host => {
                // Straight into mapped host memory, polled: no copy, no
                // stream synchronisation. Another thread holding the slot:
                // the state's result words, copied back.
                let mapped = gpu.with_mapped_result(|result, flag, seq| {
                    launch(result, result + 8, flag, seq)
                })?;
                if let Some(words) = mapped {
                    return Ok(words);
                }
                launch(base + 16, base + 24, 0, 0)?;
                let mut words = [0u64; 2];
                gpu.read_small(&state.words.as_view().slice(2..4)?, &mut words)?;
                Ok(words)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_one_round_per_block_up_to_the_resident_limit() {
        // 4-byte items: 256 threads × 4 loads × 4 items = 4096 per round.
        assert_eq!(grid_blocks(0, 4, 1056), 1);
        assert_eq!(grid_blocks(4096, 4, 1056), 1);
        assert_eq!(grid_blocks(4097, 4, 1056), 2);
        assert_eq!(grid_blocks(1 << 28, 4, 1056), 1056);
        // One-byte items cover 16 per load.
        assert_eq!(grid_blocks(1 << 16, 1, 1056), 4);
        assert_eq!(grid_blocks(1 << 16, 8, 1056), 32);
    }
}
