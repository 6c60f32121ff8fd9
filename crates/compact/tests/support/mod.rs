//! Shared helpers of the compaction GPU tests (`tests/gpu*.rs`,
//! `tests/compact_tuning.rs`): seeds, bit-exact comparison, and the checks of
//! the `_into` forms (count on the device, kept items, the output past the
//! count untouched) that every algorithm and policy must pass.
#![allow(dead_code)]

use compact::{
    cpu, partition_into, select_flagged_into, select_if_into, CompactAlgorithm, CompactOptions,
    Predicate, ScanAlgorithm,
};
use gpu_core::{DeviceBuffer, DeviceType, DeviceView, DeviceViewMut, Element, Gpu, Result};

/// A fresh seed per run, never zero, printed so that a failure can be
/// replayed.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed);
    let seed = nanos | 1;
    eprintln!("seed = {seed:#x}");
    seed
}

/// The bytes of `values`: floats compared bit for bit (NaN payloads, -0.0).
pub fn bits<T: DeviceType>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}

/// Whether every value is `T::poison()`, bit for bit.
pub fn all_poison<T: DeviceType>(values: &[T]) -> bool {
    let poison = [T::poison()];
    values
        .iter()
        .all(|v| bits(std::slice::from_ref(v)) == bits(&poison))
}

/// `SinglePass` and `ThreePass` with `scan`: the pair most tests run.
pub fn single_and_three_pass(scan: ScanAlgorithm) -> [CompactAlgorithm; 2] {
    [
        CompactAlgorithm::SinglePass,
        CompactAlgorithm::ThreePass { scan },
    ]
}

/// Checks a count left on the device and an output poisoned beforehand:
/// the count is `expected.len()`, the first `count` items are `expected`,
/// the rest still poison.
fn check_kept<T: Element>(
    gpu: &Gpu,
    out: &DeviceBuffer<T>,
    count: &DeviceBuffer<u64>,
    expected: &[T],
    ctx: &str,
) {
    let kept = count.to_host(gpu).expect(ctx)[0] as usize;
    assert_eq!(kept, expected.len(), "{ctx}: count");
    let host = out.to_host(gpu).expect(ctx);
    assert!(bits(&host[..kept]) == bits(expected), "{ctx}: kept items");
    assert!(all_poison(&host[kept..]), "{ctx}: wrote past the count");
}

/// Runs an `_into` form (`call(output, count_out)`) on a fresh output of
/// `len` poisoned items and a poisoned count; returns both.
pub fn run_into<T: Element>(
    gpu: &Gpu,
    len: usize,
    ctx: &str,
    call: impl FnOnce(DeviceViewMut<'_, T>, DeviceViewMut<'_, u64>) -> Result<()>,
) -> (DeviceBuffer<T>, DeviceBuffer<u64>) {
    let mut out = DeviceBuffer::<T>::poisoned(gpu, len).expect(ctx);
    let mut count = DeviceBuffer::<u64>::poisoned(gpu, 1).expect(ctx);
    call(out.view_mut(), count.view_mut()).expect(ctx);
    (out, count)
}

/// `select_flagged_into` into a poisoned output `extra` items longer than
/// the input: [`check_kept`] against `expected`.
pub fn check_select_flagged_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    flags: DeviceView<'_, u8>,
    expected: &[T],
    extra: usize,
    options: impl Into<CompactOptions>,
    ctx: &str,
) {
    let ctx = format!("{ctx}: select_flagged_into");
    let (out, count) = run_into(gpu, input.len() + extra, &ctx, |out, count| {
        select_flagged_into(gpu, input, flags, out, count, options)
    });
    check_kept(gpu, &out, &count, expected, &ctx);
}

/// `select_if_into` into a poisoned output 3 items longer than the input,
/// then `partition_into` into one of the input's length, against the CPU
/// references of `host_input` (the input's contents).
pub fn check_select_if_and_partition_into<T: Element>(
    gpu: &Gpu,
    input: DeviceView<'_, T>,
    host_input: &[T],
    predicate: &Predicate<T>,
    options: impl Into<CompactOptions>,
    ctx: &str,
) {
    let options = options.into();
    let n = input.len();
    let select_ctx = format!("{ctx}: select_if_into");
    let (out, count) = run_into(gpu, n + 3, &select_ctx, |out, count| {
        select_if_into(gpu, input, predicate, out, count, options)
    });
    let expected = cpu::select_if(host_input, predicate);
    check_kept(gpu, &out, &count, &expected, &select_ctx);

    // Kept in order, then rejected in order: a permutation of the input.
    let partition_ctx = format!("{ctx}: partition_into");
    let (out, count) = run_into(gpu, n, &partition_ctx, |out, count| {
        partition_into(gpu, input, predicate, out, count, options)
    });
    let (expected_partition, expected_count) = cpu::partition(host_input, predicate);
    assert_eq!(
        count.to_host(gpu).expect(&partition_ctx)[0] as usize,
        expected_count,
        "{partition_ctx}: count"
    );
    assert!(
        bits(&out.to_host(gpu).expect(&partition_ctx)) == bits(&expected_partition),
        "{partition_ctx}: order"
    );
}
