//! The sort crate's kernel modules and their tuning: one module per key
//! type and payload (none, or values of 1, 2, 4 or 8 bytes moved as raw
//! bits), holding the upsweep (which ends with the digit offsets), the
//! digit pass, the one-block and the one-cluster sort for that pair, built with the pair's
//! [`OnesweepPolicy::default_for`]; the keys-only module adds top-k and the
//! index fill of argsort. Every other [`OnesweepPolicy`] gets a module of
//! its own per key type and payload with the upsweep and the digit pass
//! only ([`policy_module`]), cached like every other module.

use gpu_core::{Gpu, Kernel, ModuleSource, Result};

use crate::key::{PayloadWidth, SortKey};
use crate::policy::{OnesweepPolicy, RankMethod};

/// Threads per block of top-k's histograms and counts.
pub const TOPK_BLOCK_THREADS: u32 = 256;
/// Keys per thread per round of top-k's histograms and counts.
pub const TOPK_ITEMS: u32 = 16;
/// Upsweep (and top-k count) blocks per SM (the grid strides over the
/// input), at most: the upsweep takes fewer where its counters'
/// shared memory does not fit four ([`upsweep_blocks_per_sm`]).
pub const UPSWEEP_BLOCKS_PER_SM: u64 = 4;

/// Shared memory the driver reserves per block, bytes (1 KiB on sm_80 and
/// newer), and an allowance for the upsweep's static shared memory (its
/// last-block flag and the digit offsets' block scan).
const UPSWEEP_SHARED_OVERHEAD_BYTES: u64 = 3 << 10;

/// Upsweep blocks per SM for `dynamic_shared_bytes` of counters on a GPU
/// with `shared_per_sm` bytes of shared memory per SM: as many as fit,
/// between 1 and [`UPSWEEP_BLOCKS_PER_SM`], so that the grid (which
/// strides over the input) is resident at once and no block waits for
/// another to finish before it starts its share.
///
/// ```
/// use sort::modules::upsweep_blocks_per_sm;
/// assert_eq!(upsweep_blocks_per_sm(64 << 10, 228 << 10), 3);
/// assert_eq!(upsweep_blocks_per_sm(4 << 10, 228 << 10), 4);
/// assert_eq!(upsweep_blocks_per_sm(64 << 10, 100 << 10), 1);
/// ```
pub fn upsweep_blocks_per_sm(dynamic_shared_bytes: u64, shared_per_sm: u64) -> u64 {
    (shared_per_sm / (dynamic_shared_bytes + UPSWEEP_SHARED_OVERHEAD_BYTES))
        .clamp(1, UPSWEEP_BLOCKS_PER_SM)
}
/// Threads of the one-block sort.
pub const BLOCK_SORT_THREADS: u32 = 512;
/// Keys per thread of the one-block sort.
pub const BLOCK_SORT_ITEMS: u32 = 16;
/// The largest input the one-block sort takes.
pub const BLOCK_SORT_MAX_KEYS: usize = (BLOCK_SORT_THREADS * BLOCK_SORT_ITEMS) as usize;
/// Blocks of the one-cluster sort (sm_90 and newer): the largest cluster
/// an H100 runs (16, a non-portable size; [`one_launch_max_keys`] checks
/// that the device can run it).
pub const CLUSTER_SORT_BLOCKS: u32 = 16;
/// Threads per block of the one-cluster sort.
pub const CLUSTER_SORT_THREADS: u32 = 512;
/// Keys per thread of the one-cluster sort.
pub const CLUSTER_SORT_ITEMS: u32 = 8;
/// Keys each block of the one-cluster sort holds.
pub const CLUSTER_SORT_PART: usize = (CLUSTER_SORT_THREADS * CLUSTER_SORT_ITEMS) as usize;
/// The largest input the one-cluster sort takes: 2^16 keys.
pub const CLUSTER_SORT_MAX_KEYS: usize = CLUSTER_SORT_BLOCKS as usize * CLUSTER_SORT_PART;
/// Bytes of each cluster block's fixed shared storage: warp counters for
/// 16 warps × 256 digits; three tables of 256 digits; every block's 256
/// counts for each pass parity; four mbarriers and the block scan's 16
/// `u64` warp totals within the last KiB. The kernel checks that its
/// storage fits.
pub const CLUSTER_SORT_STORAGE_BYTES: u32 =
    (CLUSTER_SORT_THREADS / 32 * 256 + 3 * 256 + 2 * CLUSTER_SORT_BLOCKS * 256) * 4 + 1024;

/// Threads per block of top-k's filter.
pub const FILTER_BLOCK_THREADS: u32 = 256;
/// Keys per thread of top-k's filter.
pub const FILTER_ITEMS: u32 = 16;
/// Keys per tile of top-k's filter.
pub const FILTER_TILE: u64 = FILTER_BLOCK_THREADS as u64 * FILTER_ITEMS as u64;
/// Keys per portion of top-k's counts and filter: its look-back counts
/// must stay below 2^30; a multiple of the filter's tile.
pub const TOPK_PORTION_KEYS: u64 = crate::policy::PORTION_MAX_KEYS / FILTER_TILE * FILTER_TILE;

/// Bytes of the one-block sort's fixed shared storage (warp counters for
/// 16 warps × 256 digits, 256 digit starts, the block scan's 16 warp
/// totals), rounded up to 8.
pub const BLOCK_SORT_STORAGE_BYTES: u32 =
    ((BLOCK_SORT_THREADS / 32 * 256 + 256 + BLOCK_SORT_THREADS / 32) * 4).div_ceil(8) * 8;

/// Dynamic shared memory of the one-block sort for `key_bytes` keys and
/// `value_bytes` values (0 for none).
///
/// ```
/// // u32 keys alone: the fixed storage and 8192 four-byte slots.
/// assert_eq!(sort::modules::block_sort_shared_bytes(4, 0), 17_472 + 8192 * 4);
/// ```
pub fn block_sort_shared_bytes(key_bytes: usize, value_bytes: usize) -> u32 {
    BLOCK_SORT_STORAGE_BYTES + BLOCK_SORT_MAX_KEYS as u32 * key_bytes.max(value_bytes) as u32
}

/// Dynamic shared memory of each block of the one-cluster sort for
/// `key_bytes` keys and `value_bytes` values (0 for none): the fixed
/// storage, then a staging area and two receiving areas (by pass parity)
/// of a slot for each of the block's keys and values.
///
/// ```
/// // u32 keys with u32 values: 53 248 + 3 · 4096 · 8 bytes.
/// assert_eq!(sort::modules::cluster_sort_shared_bytes(4, 4), 53_248 + 3 * 4096 * 8);
/// ```
pub fn cluster_sort_shared_bytes(key_bytes: usize, value_bytes: usize) -> u32 {
    CLUSTER_SORT_STORAGE_BYTES + 3 * (CLUSTER_SORT_PART * (key_bytes + value_bytes)) as u32
}

/// Whether the one-cluster sort takes keys of `key_bytes` with values of
/// `value_bytes` (0 for none): its blocks exchange keys and values with
/// asynchronous stores of 4 or 8 bytes, and at most 12 bytes an item fit
/// its shared memory.
///
/// ```
/// use sort::modules::cluster_sort_takes;
/// assert!(cluster_sort_takes(4, 0) && cluster_sort_takes(8, 4) && cluster_sort_takes(4, 8));
/// assert!(!cluster_sort_takes(2, 0) && !cluster_sort_takes(4, 2) && !cluster_sort_takes(8, 8));
/// ```
pub fn cluster_sort_takes(key_bytes: usize, value_bytes: usize) -> bool {
    matches!(key_bytes, 4 | 8) && matches!(value_bytes, 0 | 4 | 8) && key_bytes + value_bytes <= 12
}

/// The largest input of keys `K` with `payload` sorted in one launch on
/// `gpu`: [`CLUSTER_SORT_MAX_KEYS`] by one cluster where the pair has one
/// ([`cluster_sort_takes`]), the device is sm_90 or newer, the loaded entry
/// was compiled as a cluster (not from PTX for an older target) and the
/// device can run the cluster; [`BLOCK_SORT_MAX_KEYS`] by one block
/// elsewhere. Larger inputs take the Onesweep passes. After the first call
/// on a context it asks the driver nothing.
pub fn one_launch_max_keys<K: SortKey>(gpu: &Gpu, payload: Option<PayloadWidth>) -> Result<usize> {
    let value_bytes = payload.map_or(0, PayloadWidth::bytes);
    if gpu.info().compute_capability.0 >= 9 && cluster_sort_takes(K::BYTES, value_bytes) {
        let kernel = kernel::<K>(gpu, Entry::Cluster, payload)?;
        if kernel.cluster_blocks()? == CLUSTER_SORT_BLOCKS
            && gpu.resident_clusters(
                &kernel,
                CLUSTER_SORT_THREADS,
                cluster_sort_shared_bytes(K::BYTES, value_bytes),
            )? > 0
        {
            return Ok(CLUSTER_SORT_MAX_KEYS);
        }
    }
    Ok(BLOCK_SORT_MAX_KEYS)
}

/// Digit passes of a sort of bits `begin..end`: ⌈(end − begin) / 8⌉.
///
/// ```
/// assert_eq!(sort::modules::digit_passes(0, 32), 4);
/// assert_eq!(sort::modules::digit_passes(3, 12), 2);
/// ```
pub fn digit_passes(begin: u32, end: u32) -> u32 {
    end.saturating_sub(begin).div_ceil(8)
}

/// The suffix of a payload in names: `keys`, `v1`, `v2`, `v4`, `v8`.
fn payload_suffix(payload: Option<PayloadWidth>) -> String {
    match payload {
        None => "keys".into(),
        Some(width) => format!("v{}", width.bytes()),
    }
}

/// The module name for keys `K`, `payload` and the policy suffix
/// ([`OnesweepPolicy::suffix_for`], empty for the pair's default).
fn module_name<K: SortKey>(payload: Option<PayloadWidth>, policy: &str) -> String {
    format!("sort_{}_{}{policy}", K::SUFFIX, payload_suffix(payload))
}

/// The entry points a module can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The all-digit histogram.
    Upsweep,
    /// One digit pass.
    Pass,
    /// The last digit pass writing through a split table.
    SplitPass,
    /// The one-block sort.
    Block,
    /// The one-cluster sort.
    Cluster,
    /// Copy of keys (and values).
    Copy,
    /// One block per segment.
    Segments,
    /// `out[i] = i` as u32.
    IotaU32,
    /// `out[i] = i` as u64.
    IotaU64,
    /// Top-k digit histogram.
    TopkHistogram,
    /// Top-k digit choice.
    TopkSelect,
    /// Top-k class counts per portion.
    TopkCount,
    /// Top-k ordered filter.
    TopkFilter,
}

/// The entry name of `entry` in the module of `K`, `payload` and the
/// policy suffix (which only the upsweep and the pass carry).
pub(crate) fn entry_name<K: SortKey>(
    entry: Entry,
    payload: Option<PayloadWidth>,
    policy: &str,
) -> String {
    let k = K::SUFFIX;
    let p = payload_suffix(payload);
    match entry {
        Entry::Upsweep => format!("sort_upsweep_{k}_{p}{policy}"),
        Entry::Pass => format!("sort_pass_{k}_{p}{policy}"),
        Entry::SplitPass => format!("sort_split_pass_{k}_{p}{policy}"),
        Entry::Block => format!("sort_block_{k}_{p}"),
        Entry::Cluster => format!("sort_cluster_{k}_{p}"),
        Entry::Copy => format!("sort_copy_{k}_{p}"),
        Entry::Segments => format!("sort_segments_{k}_{p}"),
        Entry::IotaU32 => format!("sort_iota_u32_{k}"),
        Entry::IotaU64 => format!("sort_iota_u64_{k}"),
        Entry::TopkHistogram => format!("topk_histogram_{k}"),
        Entry::TopkSelect => format!("topk_select_{k}"),
        Entry::TopkCount => format!("topk_count_{k}"),
        Entry::TopkFilter => format!("topk_filter_{k}"),
    }
}

/// The upsweep and the digit pass of keys `K` with `payload` under
/// `policy` (checked by the caller), with the headers they need, in a
/// module named `name` (the caller adds the one-block sort and more).
fn onesweep_module<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
    name: String,
) -> ModuleSource {
    let k = K::CUDA_TYPE;
    let (v, has) = match payload {
        None => ("u8", "false"),
        Some(width) => (width.cuda_type(), "true"),
    };
    let suffix = policy.suffix_for::<K>(payload);
    let e = |entry| entry_name::<K>(entry, payload, &suffix);
    let (pb, pi) = (policy.pass_threads(), policy.pass_items());
    let shared = policy.pass_shared_bytes(K::BYTES, payload.map_or(0, PayloadWidth::bytes));
    let (ub, ui) = (policy.upsweep_threads(), policy.upsweep_items());
    let copies = policy.upsweep_copies(K::BYTES);
    onesweep_sources(ModuleSource::new(name), policy)
        .entry(
            e(Entry::Upsweep),
            "const void* keys, u64 n, u64 portion_keys, u32 begin_bit, u32 end_bit, u32 passes, u32 descending, u32* hist, u64* offsets, u32* done_counter",
            &format!("sort_upsweep<{k}, {ub}, {ui}, {copies}>(reinterpret_cast<const {k}*>(keys), n, portion_keys, begin_bit, end_bit, passes, descending, hist, offsets, done_counter)"),
            Some(ub),
        )
        .entry_with_min_blocks(
            e(Entry::Pass),
            "const void* keys_in, void* keys_out, const void* values_in, void* values_out, u64 count, u32 shift, u32 width, u32 descending, const u64* digit_offsets, u64* next_portion_offsets, u32* tile_counter, u32* state, u32* next_state, u64 state_rows",
            &format!("sort_onesweep_pass<{k}, {v}, {has}, {pb}, {pi}, {shared}>(reinterpret_cast<const {k}*>(keys_in), reinterpret_cast<{k}*>(keys_out), reinterpret_cast<const {v}*>(values_in), reinterpret_cast<{v}*>(values_out), count, shift, width, descending, digit_offsets, next_portion_offsets, tile_counter, state, next_state, state_rows)"),
            pb,
            policy.pass_min_blocks_per_sm(),
        )
}

/// The headers and tuning defines of the upsweep and the digit pass under
/// `policy`, added to `module`.
fn onesweep_sources(module: ModuleSource, policy: &OnesweepPolicy) -> ModuleSource {
    module
        .source(parprims_kernels::WARP)
        .source(parprims_kernels::BLOCK)
        .source(parprims_kernels::TILE_STATUS)
        .source(parprims_kernels::SINGLE_PASS_DIGIT_LOOKBACK)
        .source(parprims_kernels::SORT_RADIX_KEY)
        .define(
            "SORT_RANK_BY_MATCH_ANY",
            u32::from(policy.rank() == RankMethod::MatchAny),
        )
        .define(
            "SORT_RANK_BY_SHARED_MASKS",
            u32::from(policy.rank() == RankMethod::AtomicOr),
        )
        .define("SORT_TILE_COUNTS", policy.tile_counts().define())
        .define("SORT_TILES_IN_BLOCK_ORDER", policy.tile_order().define())
        .define("SORT_PACKED_DIGITS", policy.pass_digits().define())
        .source(parprims_kernels::SORT_WARP_RANK)
        .source(parprims_kernels::SORT_ONESWEEP)
}

/// The split form of the digit pass of keys `K` with `payload` under
/// `policy` (the last pass of [`crate::split`]'s sorts, writing through a
/// split table), in a module of its own: `sort_{key}_{payload}{policy}_split`
/// (the policy suffix empty for the pair's default), compiled only by sorts
/// that split their output.
///
/// ```
/// use sort::policy::OnesweepPolicy;
/// let policy = OnesweepPolicy::default_for::<u32>(None);
/// let module = sort::modules::split_module::<u32>(None, &policy)?;
/// assert_eq!(module.name(), "sort_u32_keys_split");
/// assert_eq!(module.entries().len(), 1);
/// assert!(module.code().contains(", true>(")); // SPLIT
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn split_module<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> Result<ModuleSource> {
    policy.check_for::<K>(payload)?;
    Ok(checked_split_module::<K>(payload, policy))
}

/// [`split_module`] for a policy already checked for `K` and `payload`.
fn checked_split_module<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> ModuleSource {
    let k = K::CUDA_TYPE;
    let (v, has) = match payload {
        None => ("u8", "false"),
        Some(width) => (width.cuda_type(), "true"),
    };
    let suffix = policy.suffix_for::<K>(payload);
    let (pb, pi) = (policy.pass_threads(), policy.pass_items());
    let shared = policy.pass_split_shared_bytes(K::BYTES, payload.map_or(0, PayloadWidth::bytes));
    let name = format!("{}_split", module_name::<K>(payload, &suffix));
    onesweep_sources(ModuleSource::new(name), policy).entry_with_min_blocks(
        entry_name::<K>(Entry::SplitPass, payload, &suffix),
        "const void* keys_in, const void* values_in, u64 count, u32 shift, u32 width, u32 descending, const u64* digit_offsets, u64* next_portion_offsets, u32* tile_counter, u32* state, u32* next_state, u64 state_rows, const __grid_constant__ SortSplitTable split",
        &format!("sort_onesweep_pass<{k}, {v}, {has}, {pb}, {pi}, {shared}, true>(reinterpret_cast<const {k}*>(keys_in), nullptr, reinterpret_cast<const {v}*>(values_in), nullptr, count, shift, width, descending, digit_offsets, next_portion_offsets, tile_counter, state, next_state, state_rows, &split)"),
        pb,
        policy.pass_min_blocks_per_sm(),
    )
}

/// The split digit pass of `K` and `payload` under `policy` (checked by
/// the caller), compiled and loaded once per context and policy.
pub(crate) fn split_kernel<K: SortKey>(
    gpu: &Gpu,
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> Result<Kernel> {
    let suffix = policy.suffix_for::<K>(payload);
    let key = format!("sort/{}_split", module_name::<K>(payload, &suffix));
    let entry = entry_name::<K>(Entry::SplitPass, payload, &suffix);
    gpu.stored_kernel(&key, &entry, || checked_split_module::<K>(payload, policy))
}

/// The module of keys `K` with `payload` under the pair's
/// [`OnesweepPolicy::default_for`]: the upsweep, the digit pass, the
/// one-block and one-cluster sorts, the segmented sort, the copy, and for keys alone top-k
/// and the index fill. Its name and entry names carry no policy suffix.
///
/// ```
/// let module = sort::modules::module::<u64>(None);
/// assert_eq!(module.name(), "sort_u64_keys");
/// assert!(module.code().contains("sort_onesweep_pass<u64, u8, false, 512, 16, "));
/// ```
pub fn module<K: SortKey>(payload: Option<PayloadWidth>) -> ModuleSource {
    let k = K::CUDA_TYPE;
    let (v, has) = match payload {
        None => ("u8", "false"),
        Some(width) => (width.cuda_type(), "true"),
    };
    let e = |entry| entry_name::<K>(entry, payload, "");
    let (ub, ui) = (TOPK_BLOCK_THREADS, TOPK_ITEMS);
    let (bb, bi) = (BLOCK_SORT_THREADS, BLOCK_SORT_ITEMS);
    let (cb, ci) = (CLUSTER_SORT_BLOCKS, CLUSTER_SORT_ITEMS);
    let (ct, cs) = (CLUSTER_SORT_THREADS, CLUSTER_SORT_STORAGE_BYTES);
    let policy = OnesweepPolicy::default_for::<K>(payload);
    let mut module = onesweep_module::<K>(payload, &policy, module_name::<K>(payload, ""))
        .source(parprims_kernels::SORT_BLOCK)
        .entry(
            e(Entry::Block),
            "const void* keys_in, void* keys_out, const void* values_in, void* values_out, u32 n, u32 begin_bit, u32 end_bit, u32 descending",
            &format!("sort_block<{k}, {v}, {has}, {bb}, {bi}>(reinterpret_cast<const {k}*>(keys_in), reinterpret_cast<{k}*>(keys_out), reinterpret_cast<const {v}*>(values_in), reinterpret_cast<{v}*>(values_out), n, begin_bit, end_bit, descending)"),
            Some(bb),
        )
        .entry(
            e(Entry::Segments),
            "const void* keys_in, void* keys_out, const void* values_in, void* values_out, const u64* offsets, u64 segments, u32 begin_bit, u32 end_bit, u32 descending",
            &format!("sort_segments<{k}, {v}, {has}, {bb}, {bi}>(reinterpret_cast<const {k}*>(keys_in), reinterpret_cast<{k}*>(keys_out), reinterpret_cast<const {v}*>(values_in), reinterpret_cast<{v}*>(values_out), offsets, segments, begin_bit, end_bit, descending)"),
            Some(bb),
        )
        .entry(
            e(Entry::Copy),
            "const void* keys_in, void* keys_out, const void* values_in, void* values_out, u64 n",
            &format!("sort_copy<{k}, {v}, {has}>(reinterpret_cast<const {k}*>(keys_in), reinterpret_cast<{k}*>(keys_out), reinterpret_cast<const {v}*>(values_in), reinterpret_cast<{v}*>(values_out), n)"),
            Some(256),
        );
    if cluster_sort_takes(K::BYTES, payload.map_or(0, PayloadWidth::bytes)) {
        module = module        .entry_with_cluster(
            e(Entry::Cluster),
            "const void* keys_in, void* keys_out, const void* values_in, void* values_out, u32 n, u32 begin_bit, u32 end_bit, u32 descending",
            &format!("sort_cluster<{k}, {v}, {has}, {ct}, {ci}, {cb}, {cs}>(reinterpret_cast<const {k}*>(keys_in), reinterpret_cast<{k}*>(keys_out), reinterpret_cast<const {v}*>(values_in), reinterpret_cast<{v}*>(values_out), n, begin_bit, end_bit, descending)"),
            ct,
            cb,
        );
    }
    if payload.is_none() {
        let (fb, fi) = (FILTER_BLOCK_THREADS, FILTER_ITEMS);
        module = module
            .source(parprims_kernels::SORT_TOP_K)
            .entry(e(Entry::IotaU32), "u32* out, u64 n", "sort_iota<u32>(out, n)", Some(256))
            .entry(e(Entry::IotaU64), "u64* out, u64 n", "sort_iota<u64>(out, n)", Some(256))
            .entry(
                e(Entry::TopkHistogram),
                "const void* keys, u64 n, u32 descending, u32 shift, const u64* select, unsigned long long* hist",
                &format!("topk_histogram<{k}, {ub}, {ui}>(reinterpret_cast<const {k}*>(keys), n, descending, shift, select, hist)"),
                Some(ub),
            )
            .entry(
                e(Entry::TopkSelect),
                "unsigned long long* hist, u64* select, u32 shift",
                "topk_select(hist, select, shift)",
                Some(256),
            )
            .entry(
                e(Entry::TopkCount),
                "const void* keys, u64 n, u64 portion_keys, u32 descending, const u64* select, unsigned long long* counts",
                &format!("topk_count<{k}, {ub}, {ui}>(reinterpret_cast<const {k}*>(keys), n, portion_keys, descending, select, counts)"),
                Some(ub),
            )
            .entry(
                e(Entry::TopkFilter),
                "const void* keys, u64 count, u64 first, u64 k, u32 descending, const u64* select, const unsigned long long* counts, u32 portion, void* out_keys, u64* out_indices, u32* tile_counter, u32* state",
                &format!("topk_filter<{k}, {fb}, {fi}>(reinterpret_cast<const {k}*>(keys), count, first, k, descending, select, counts, portion, reinterpret_cast<{k}*>(out_keys), out_indices, tile_counter, state)"),
                Some(fb),
            );
    }
    module
}

/// The index type an argsort fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IotaEntry {
    /// `u32` indices.
    U32,
    /// `u64` indices.
    U64,
}

/// A grid-stride launch of 256-thread blocks over `n` items, at most 8
/// blocks per SM.
pub(crate) fn grid_stride_config(gpu: &Gpu, n: u64) -> gpu_core::LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 8 * gpu.info().sm_count as u64);
    gpu_core::LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (256, 1, 1),
        shared_bytes: 0,
    }
}

/// Writes `0, 1, …, n − 1` into `out` (the argsort's payload).
pub(crate) fn fill_iota<K: SortKey, I: crate::SortIndex>(
    gpu: &Gpu,
    mut out: gpu_core::DeviceViewMut<'_, I>,
) -> Result<()> {
    let entry = match I::IOTA {
        IotaEntry::U32 => Entry::IotaU32,
        IotaEntry::U64 => Entry::IotaU64,
    };
    let kernel = kernel::<K>(gpu, entry, None)?;
    let n = out.len() as u64;
    let mut args = gpu_core::KernelArgs::new();
    args.output(&mut out).scalar(n);
    // SAFETY: sort_iota_*(I* out, u64 n) matches (I is u32 or u64 as the
    // entry); the kernel writes out[0, n), the view's length.
    unsafe { gpu.launch(&kernel, grid_stride_config(gpu, n), &args) }
}

/// Copies `n` keys (and values, with `payload`) from `from` to `to`
/// (device addresses, validated by the caller).
pub(crate) fn copy_slot<K: SortKey>(
    gpu: &Gpu,
    payload: Option<PayloadWidth>,
    from: (u64, u64),
    to: (u64, u64),
    n: u64,
) -> Result<()> {
    let kernel = kernel::<K>(gpu, Entry::Copy, payload)?;
    let mut args = gpu_core::KernelArgs::new();
    args.scalar(from.0)
        .scalar(to.0)
        .scalar(from.1)
        .scalar(to.1)
        .scalar(n);
    // SAFETY: sort_copy_*(const void*, void*, const void*, void*, u64 n)
    // matches; the caller passes buffers of n keys (values) each, distinct.
    unsafe { gpu.launch(&kernel, grid_stride_config(gpu, n), &args) }
}

/// The module of keys `K` with `payload` under `policy`: [`module`] for
/// the pair's [`OnesweepPolicy::default_for`], else a module of the upsweep and the digit
/// pass alone, its name and entry names suffixed with the policy's shape
/// (`sort_u32_keys_p384x16m_u256x16`). Refuses a policy that does not fit
/// the key and value widths.
///
/// ```
/// use sort::policy::{OnesweepPolicy, RankMethod};
/// let policy = OnesweepPolicy::new(512, 12, RankMethod::MatchAny)?;
/// let module = sort::modules::policy_module::<u32>(None, &policy)?;
/// assert_eq!(module.name(), "sort_u32_keys_p512x12m_u256x16");
/// assert_eq!(module.entries().len(), 2);
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn policy_module<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> Result<ModuleSource> {
    policy.check_for::<K>(payload)?;
    if policy.is_default_for::<K>(payload) {
        return Ok(module::<K>(payload));
    }
    let name = module_name::<K>(payload, &policy.suffix_for::<K>(payload));
    Ok(onesweep_module::<K>(payload, policy, name))
}

/// The kernel `entry` of the module of `K` and `payload`, compiled and
/// loaded once per context.
pub(crate) fn kernel<K: SortKey>(
    gpu: &Gpu,
    entry: Entry,
    payload: Option<PayloadWidth>,
) -> Result<Kernel> {
    let key = format!("sort/{}", module_name::<K>(payload, ""));
    gpu.stored_kernel(&key, &entry_name::<K>(entry, payload, ""), || {
        module::<K>(payload)
    })
}

/// The upsweep or digit pass (`entry`) of `K` and `payload` under `policy`
/// (checked by the caller), compiled and loaded once per context and
/// policy; the pair's [`OnesweepPolicy::default_for`] takes it from
/// [`module`], the module [`kernel_catalog`] lists.
pub(crate) fn policy_kernel<K: SortKey>(
    gpu: &Gpu,
    entry: Entry,
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> Result<Kernel> {
    debug_assert!(matches!(entry, Entry::Upsweep | Entry::Pass));
    if policy.is_default_for::<K>(payload) {
        return kernel::<K>(gpu, entry, payload);
    }
    let suffix = policy.suffix_for::<K>(payload);
    let name = module_name::<K>(payload, &suffix);
    let key = format!("sort/{name}");
    gpu.stored_kernel(&key, &entry_name::<K>(entry, payload, &suffix), || {
        onesweep_module::<K>(payload, policy, name)
    })
}

/// Every module of one key type: keys alone and each payload width, each
/// with the upsweep and pass of small inputs
/// ([`OnesweepPolicy::SMALL_INPUT`]), of mid-size inputs where the key
/// type has a policy of its own for them
/// ([`OnesweepPolicy::mid_input_for`]) and the default's split pass
/// ([`split_module`]).
fn modules_of<K: SortKey>() -> Vec<ModuleSource> {
    let payloads = std::iter::once(None).chain(PayloadWidth::ALL.into_iter().map(Some));
    let mut modules = Vec::new();
    for payload in payloads {
        modules.push(module::<K>(payload));
        modules.extend(policy_module::<K>(payload, &OnesweepPolicy::SMALL_INPUT).ok());
        if let Some(mid) = OnesweepPolicy::mid_input_for::<K>(payload) {
            modules.extend(policy_module::<K>(payload, &mid).ok());
        }
        modules.extend(split_module::<K>(payload, &OnesweepPolicy::default_for::<K>(payload)).ok());
    }
    modules
}

/// The modules of the tuning sweep's grid ([`crate::policy::sweep_grid`])
/// for the cases the sweep measures: u32 keys, u64 keys, u32 keys with
/// 4-byte values, each policy that fits them but the case's own default
/// (its kernels are in [`module`]).
pub fn sweep_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    for policy in crate::policy::sweep_grid() {
        modules.extend(sweep_module::<u32>(None, &policy));
        modules.extend(sweep_module::<u64>(None, &policy));
        modules.extend(sweep_module::<u32>(Some(PayloadWidth::B4), &policy));
    }
    modules
}

/// [`policy_module`] for one case of the sweep, none for the case's
/// default or a policy that does not fit it.
fn sweep_module<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: &OnesweepPolicy,
) -> Option<ModuleSource> {
    if policy.is_default_for::<K>(payload) {
        return None;
    }
    policy_module::<K>(payload, policy).ok()
}

/// Every module of the default sort and top-k: every key type × payload,
/// and the tuning sweep's ([`sweep_catalog`]).
pub fn kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = Vec::new();
    modules.extend(modules_of::<u8>());
    modules.extend(modules_of::<u16>());
    modules.extend(modules_of::<u32>());
    modules.extend(modules_of::<u64>());
    modules.extend(modules_of::<i8>());
    modules.extend(modules_of::<i16>());
    modules.extend(modules_of::<i32>());
    modules.extend(modules_of::<i64>());
    modules.extend(modules_of::<f32>());
    modules.extend(modules_of::<f64>());
    modules.extend(sweep_catalog());
    modules
}
