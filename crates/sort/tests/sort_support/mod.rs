//! Shared helpers of the sort GPU tests (`sort_gpu.rs`,
//! `sort_policies_gpu.rs`): the device, a logged seed, and the checks of
//! `sort_keys` / `sort_pairs` (or their `_with_policy` forms) against the
//! CPU sort, bit for bit, reported as the first difference.
#![allow(dead_code)]

use gpu_core::{DeviceBuffer, DeviceType, Gpu};
use sort::policy::OnesweepPolicy;
use sort::{cpu, SortKey, SortOptions};

/// The device of the calling test.
pub fn gpu() -> Gpu {
    Gpu::new(0).expect("a CUDA GPU")
}

/// A seed from the clock, printed so a failure can be replayed.
pub fn seed() -> u64 {
    parprims_testkit::testing::logged_seed()
}

/// The bytes of `values`.
pub fn bits_of<T: DeviceType>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}

/// First difference of two bit-identical-expected vectors, as a message.
pub fn diff<T: DeviceType>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if bits_of(got) == bits_of(want) {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| bits_of(std::slice::from_ref(a)) != bits_of(std::slice::from_ref(b)))
        .unwrap_or(got.len().min(want.len()));
    Err(format!(
        "{what}: n = {}, first difference at {at}: got {:?}, want {:?}",
        want.len(),
        got.get(at),
        want.get(at)
    ))
}

/// `sort_keys` (or `sort_keys_with_policy` when `policy` is given) of
/// `keys` against the CPU sort; the input must be left untouched.
pub fn check_keys_under<K: SortKey>(
    gpu: &Gpu,
    keys: &[K],
    options: SortOptions,
    policy: Option<&OnesweepPolicy>,
) -> Result<(), String> {
    let bits = options.bit_range::<K>().unwrap();
    let want = cpu::sort_keys(keys, options.order.is_descending(), &bits);
    let input = DeviceBuffer::from_host(gpu, keys).unwrap();
    let mut out = DeviceBuffer::<K>::poisoned(gpu, keys.len()).unwrap();
    let what = format!(
        "sort_keys {} {options:?}{}",
        K::SUFFIX,
        policy_suffix(policy)
    );
    match policy {
        Some(policy) => {
            sort::sort_keys_with_policy(gpu, input.view(), out.view_mut(), options, policy)
        }
        None => sort::sort_keys(gpu, input.view(), out.view_mut(), options),
    }
    .map_err(|e| e.to_string())?;
    diff(&what, &out.to_host(gpu).unwrap(), &want)?;
    diff("input", &input.to_host(gpu).unwrap(), keys)
}

/// `sort_pairs` (or `sort_pairs_with_policy` when `policy` is given) of
/// `keys` and `values` against the CPU sort.
pub fn check_pairs_under<K: SortKey, V: DeviceType>(
    gpu: &Gpu,
    keys: &[K],
    values: &[V],
    options: SortOptions,
    policy: Option<&OnesweepPolicy>,
) -> Result<(), String> {
    let bits = options.bit_range::<K>().unwrap();
    let (want_keys, want_values) =
        cpu::sort_pairs(keys, values, options.order.is_descending(), &bits);
    let k = DeviceBuffer::from_host(gpu, keys).unwrap();
    let v = DeviceBuffer::from_host(gpu, values).unwrap();
    let mut ko = DeviceBuffer::<K>::poisoned(gpu, keys.len()).unwrap();
    let mut vo = DeviceBuffer::<V>::poisoned(gpu, keys.len()).unwrap();
    let what = format!(
        "sort_pairs {}/{} {options:?}{}",
        K::SUFFIX,
        V::SUFFIX,
        policy_suffix(policy)
    );
    let (ki, vi) = (k.view(), v.view());
    match policy {
        Some(policy) => {
            sort::sort_pairs_with_policy(gpu, ki, vi, ko.view_mut(), vo.view_mut(), options, policy)
        }
        None => sort::sort_pairs(gpu, ki, vi, ko.view_mut(), vo.view_mut(), options),
    }
    .map_err(|e| e.to_string())?;
    diff(&what, &ko.to_host(gpu).unwrap(), &want_keys)?;
    diff(&what, &vo.to_host(gpu).unwrap(), &want_values)
}

fn policy_suffix(policy: Option<&OnesweepPolicy>) -> String {
    policy.map_or(String::new(), |p| format!(" {}", p.name()))
}
