//! Scratch arenas in steady state: after the first call at a size, the
//! single-pass primitives (scan, compaction) allocate nothing and enqueue no
//! memset (their tile states are epoch-tagged), through a stream's own
//! arena and through a caller's [`Workspace`], and every result stays exact.
//! The counts come from [`gpu_core::ScratchStats`].

use compact::CompactOptions;
use gpu_core::{DeviceBuffer, Gpu, ScratchStats, Sum, Workspace};
use parprims_testkit::rng::{random_vec, SplitMix64};
use scan::{ScanKind, ScanOptions};

/// One round of mixed work on `gpu`: an i32 scan, a u64 scan (another tile
/// layout) and a select by flags, of `n` items, each checked on the host.
fn round(gpu: &Gpu, n: usize, seed: u64) -> gpu_core::Result<()> {
    let mut rng = SplitMix64::new(seed);
    let small: Vec<i32> = (0..n)
        .map(|_| (rng.next_u64() % 201) as i32 - 100)
        .collect();
    let wide: Vec<u64> = random_vec(n, seed ^ 0x5eed, 0.0, 1e12);
    let flags: Vec<u8> = (0..n)
        .map(|_| rng.next_u64().is_multiple_of(3) as u8)
        .collect();

    let input = DeviceBuffer::from_host(gpu, &small)?;
    let mut sums = DeviceBuffer::<i32>::zeros(gpu, n)?;
    scan::scan_into(
        gpu,
        input.view(),
        sums.view_mut(),
        &Sum,
        ScanKind::Inclusive,
        &ScanOptions::default(),
    )?;
    let wide_input = DeviceBuffer::from_host(gpu, &wide)?;
    let mut wide_sums = DeviceBuffer::<u64>::zeros(gpu, n)?;
    scan::scan_into(
        gpu,
        wide_input.view(),
        wide_sums.view_mut(),
        &Sum,
        ScanKind::Exclusive { initial: 7 },
        &ScanOptions::default(),
    )?;
    let flag_buffer = DeviceBuffer::from_host(gpu, &flags)?;
    let mut kept = DeviceBuffer::<i32>::zeros(gpu, n)?;
    let mut count = DeviceBuffer::<u64>::zeros(gpu, 1)?;
    compact::select_flagged_into(
        gpu,
        input.view(),
        flag_buffer.view(),
        kept.view_mut(),
        count.view_mut(),
        CompactOptions::default(),
    )?;

    let mut running = 0i32;
    let expected: Vec<i32> = small
        .iter()
        .map(|&x| {
            running = running.wrapping_add(x);
            running
        })
        .collect();
    assert_eq!(sums.to_host(gpu)?, expected, "i32 scan, n = {n}");
    let mut running = 7u64;
    let expected: Vec<u64> = wide
        .iter()
        .map(|&x| {
            let before = running;
            running = running.wrapping_add(x);
            before
        })
        .collect();
    assert_eq!(wide_sums.to_host(gpu)?, expected, "u64 scan, n = {n}");
    let expected: Vec<i32> = small
        .iter()
        .zip(&flags)
        .filter(|(_, &flag)| flag != 0)
        .map(|(&x, _)| x)
        .collect();
    let count = count.to_host(gpu)?[0] as usize;
    assert_eq!(count, expected.len(), "kept count, n = {n}");
    assert_eq!(
        &kept.to_host(gpu)?[..count],
        &expected[..],
        "kept items, n = {n}"
    );
    Ok(())
}

/// Checks that `after` shows no growth over `before`: no allocation, no
/// memset, no fallback, the same bytes, and `calls` more epochs.
fn assert_steady(before: ScratchStats, after: ScratchStats, calls: u64) {
    assert_eq!(
        after.allocations, before.allocations,
        "arena allocated: {after:?}"
    );
    assert_eq!(after.zeroings, before.zeroings, "arena zeroed: {after:?}");
    assert_eq!(
        after.busy_fallbacks, before.busy_fallbacks,
        "arena was busy: {after:?}"
    );
    assert_eq!(after.bytes_held, before.bytes_held, "arena grew: {after:?}");
    assert_eq!(
        after.epochs,
        before.epochs + calls,
        "one epoch per call: {after:?}"
    );
}

/// Sizes from one tile up to a few hundred, largest first so the arena has
/// grown before the steady rounds.
const SIZES: [usize; 5] = [1 << 22, 1, 5000, 1 << 16, 3_000_001];

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_arena_does_not_grow_in_steady_state() -> gpu_core::Result<()> {
    let gpu = Gpu::new(0)?.with_new_stream()?;
    round(&gpu, SIZES[0], 1)?;
    let before = gpu.scratch_stats();
    assert!(
        before.allocations >= 1 && before.bytes_held > 0,
        "{before:?}"
    );
    for (index, &n) in SIZES.iter().cycle().take(15).enumerate() {
        round(&gpu, n, 100 + index as u64)?;
    }
    // Three single-pass calls a round.
    assert_steady(before, gpu.scratch_stats(), 3 * 15);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn workspace_serves_handles_on_two_streams() -> gpu_core::Result<()> {
    let gpu = Gpu::new(0)?;
    let workspace = Workspace::new();
    let first = gpu.with_new_stream()?.with_workspace(&workspace);
    let second = gpu.with_new_stream()?.with_workspace(&workspace);
    round(&first, SIZES[0], 7)?;
    let before = workspace.stats();
    assert_eq!(
        first.scratch_stats(),
        before,
        "the handle reports the workspace's arena"
    );
    // Alternate streams: each call waits for the other stream's last use.
    for (index, &n) in SIZES.iter().cycle().take(10).enumerate() {
        let handle = if index % 2 == 0 { &second } else { &first };
        round(handle, n, 200 + index as u64)?;
    }
    assert_steady(before, workspace.stats(), 3 * 10);
    // The stream's own arena was never touched.
    assert_eq!(gpu.scratch_stats().allocations, 0);
    workspace.release();
    assert_eq!(workspace.stats().bytes_held, 0);
    round(&first, 1000, 9)?;
    assert!(workspace.stats().allocations > before.allocations);
    Ok(())
}

/// One segmented scan by offsets of `n` items in random segments (empty
/// ones among them), 4-byte values then 8-byte values (another tile state
/// layout), each checked against the CPU reference; then offsets that end
/// short of n, refused with nothing written. Three single-pass calls.
fn offsets_round(gpu: &Gpu, n: usize, seed: u64) -> gpu_core::Result<()> {
    use scan::SegmentedKind;
    let mut rng = SplitMix64::new(seed);
    let mut offsets = vec![0u64];
    for i in 1..n as u64 {
        match rng.below(50) {
            0 => offsets.push(i),
            1 => offsets.extend([i, i]),
            _ => {}
        }
    }
    offsets.push(n as u64);
    let small: Vec<i32> = (0..n)
        .map(|_| (rng.next_u64() % 201) as i32 - 100)
        .collect();
    let wide: Vec<f64> = small.iter().map(|&x| x as f64 * 0.5).collect();
    let offsets_buffer = DeviceBuffer::from_host(gpu, &offsets)?;

    let input = DeviceBuffer::from_host(gpu, &small)?;
    let mut out = DeviceBuffer::<i32>::zeros(gpu, n)?;
    scan::segmented_scan_by_offsets_into(
        gpu,
        input.view(),
        offsets_buffer.view(),
        out.view_mut(),
        &Sum,
        SegmentedKind::Inclusive,
    )?;
    let want =
        scan::cpu::segmented_scan_by_offsets(&small, &offsets, &Sum, SegmentedKind::Inclusive)?;
    assert_eq!(out.to_host(gpu)?, want, "i32 by offsets, n = {n}");

    let wide_input = DeviceBuffer::from_host(gpu, &wide)?;
    let mut wide_out = DeviceBuffer::<f64>::zeros(gpu, n)?;
    scan::segmented_scan_by_offsets_into(
        gpu,
        wide_input.view(),
        offsets_buffer.view(),
        wide_out.view_mut(),
        &Sum,
        SegmentedKind::Exclusive,
    )?;
    let want =
        scan::cpu::segmented_scan_by_offsets(&wide, &offsets, &Sum, SegmentedKind::Exclusive)?;
    assert_eq!(wide_out.to_host(gpu)?, want, "f64 by offsets, n = {n}");

    let short = DeviceBuffer::from_host(gpu, &[0u64, n as u64 - 1])?;
    let mut untouched = DeviceBuffer::<i32>::filled(gpu, n, 77)?;
    let refused = scan::segmented_scan_by_offsets_into(
        gpu,
        input.view(),
        short.view(),
        untouched.view_mut(),
        &Sum,
        SegmentedKind::Inclusive,
    );
    assert!(
        matches!(refused, Err(gpu_core::Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    assert_eq!(
        untouched.to_host(gpu)?,
        vec![77; n],
        "refused offsets wrote"
    );
    Ok(())
}

/// The segmented scan by offsets takes its check words (tile starts and
/// verdict) and its tile state from one arena loan: after the first round
/// no call allocates, zeroes through the arena or falls back, refused
/// offsets included, through a stream's arena and through a workspace.
#[test]
#[ignore = "needs a CUDA GPU"]
fn segmented_scan_by_offsets_does_not_grow_in_steady_state() -> gpu_core::Result<()> {
    let gpu = Gpu::new(0)?.with_new_stream()?;
    let workspace = Workspace::new();
    let lent = gpu.with_workspace(&workspace);
    for handle in [&gpu, &lent] {
        offsets_round(handle, SIZES[0], 3)?;
        let before = handle.scratch_stats();
        assert!(before.allocations >= 1, "{before:?}");
        for (index, &n) in SIZES.iter().cycle().take(10).enumerate() {
            offsets_round(handle, n.max(2), 300 + index as u64)?;
        }
        assert_steady(before, handle.scratch_stats(), 3 * 10);
    }
    Ok(())
}

/// One round of the merge-path primitives on a matrix of `rows` rows:
/// SpMV by merge path (`f32`, then `f64`: another carry width) and by
/// segmented scan, and the segmented reduce of the same row structure
/// (`i32` by `u32` offsets, `i64` by `u64` offsets), each checked against
/// the host. Rows of 0 to 8 entries, every 97th empty and row 0 holding up
/// to 5000, so blocks carry into rows; small-integer values keep every
/// float sum exact in any order. One single-pass call (the segmented
/// scan's) a round.
fn merge_path_round(gpu: &Gpu, rows: usize, seed: u64) -> gpu_core::Result<()> {
    use linalg::spmv::{spmv_into, CsrMatrix, HostCsr, SpmvAlgorithm};
    use reduce::segmented::segmented_reduce_cpu;

    let mut rng = SplitMix64::new(seed);
    let cols = rows.max(16);
    let mut offsets = vec![0u64];
    for row in 0..rows {
        let len = match row {
            0 => 5000.min(cols),
            _ if row % 97 == 0 => 0,
            _ => rng.below(9) as usize,
        };
        offsets.push(offsets[row] + len as u64);
    }
    let nnz = offsets[rows] as usize;
    let mut columns: Vec<i32> = (0..nnz).map(|_| rng.below(cols as u64) as i32).collect();
    for row in 0..rows {
        columns[offsets[row] as usize..offsets[row + 1] as usize].sort_unstable();
    }
    let small: Vec<i32> = (0..nnz).map(|_| rng.below(7) as i32 - 3).collect();
    let x_small: Vec<i32> = (0..cols).map(|_| rng.below(5) as i32 - 2).collect();

    fn check_spmv<T: linalg::spmv::SpmvElement + From<i8>>(
        gpu: &Gpu,
        host: HostCsr<T>,
        x: Vec<T>,
        algorithm: SpmvAlgorithm,
    ) -> gpu_core::Result<()> {
        let a = CsrMatrix::from_host(
            gpu,
            host.rows,
            host.cols,
            &host.offsets,
            &host.columns,
            &host.values,
        )?;
        let x_buffer = DeviceBuffer::from_host(gpu, &x)?;
        let mut y = DeviceBuffer::<T>::filled(gpu, host.rows, T::from(1))?;
        let two = T::from(2);
        spmv_into(gpu, &a, x_buffer.view(), two, two, y.view_mut(), algorithm)?;
        let mut want = vec![T::from(1); host.rows];
        host.spmv(&x, two, two, &mut want)?;
        assert_eq!(
            y.to_host(gpu)?,
            want,
            "{algorithm:?} {}, {} rows",
            T::SUFFIX,
            host.rows
        );
        Ok(())
    }
    let host_f32 = HostCsr {
        rows,
        cols,
        offsets: offsets.clone(),
        columns: columns.clone(),
        values: small.iter().map(|&v| v as f32).collect(),
    };
    let x_f32: Vec<f32> = x_small.iter().map(|&v| v as f32).collect();
    check_spmv(
        gpu,
        host_f32.clone(),
        x_f32.clone(),
        SpmvAlgorithm::MergePath,
    )?;
    check_spmv(gpu, host_f32, x_f32, SpmvAlgorithm::SegmentedScan)?;
    let host_f64 = HostCsr {
        rows,
        cols,
        offsets: offsets.clone(),
        columns,
        values: small.iter().map(|&v| v as f64).collect(),
    };
    let x_f64: Vec<f64> = x_small.iter().map(|&v| v as f64).collect();
    check_spmv(gpu, host_f64, x_f64, SpmvAlgorithm::MergePath)?;

    let narrow_offsets: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
    let values = DeviceBuffer::from_host(gpu, &small)?;
    let offsets_buffer = DeviceBuffer::from_host(gpu, &narrow_offsets)?;
    let mut sums = DeviceBuffer::<i32>::filled(gpu, rows, 77)?;
    reduce::segmented_reduce(
        gpu,
        values.view(),
        offsets_buffer.view(),
        &Sum,
        sums.view_mut(),
    )?;
    let want = segmented_reduce_cpu(&small, &narrow_offsets, &Sum)?;
    assert_eq!(
        sums.to_host(gpu)?,
        want,
        "segmented reduce i32, {rows} rows"
    );

    let wide: Vec<i64> = small.iter().map(|&v| i64::from(v) << 33).collect();
    let wide_values = DeviceBuffer::from_host(gpu, &wide)?;
    let wide_offsets = DeviceBuffer::from_host(gpu, &offsets)?;
    let mut wide_sums = DeviceBuffer::<i64>::filled(gpu, rows, 77)?;
    reduce::segmented_reduce(
        gpu,
        wide_values.view(),
        wide_offsets.view(),
        &Sum,
        wide_sums.view_mut(),
    )?;
    let want = segmented_reduce_cpu(&wide, &offsets, &Sum)?;
    assert_eq!(
        wide_sums.to_host(gpu)?,
        want,
        "segmented reduce i64, {rows} rows"
    );
    Ok(())
}

/// Row counts for the merge-path rounds, largest first: a few hundred
/// tiles down to one.
const MATRIX_ROWS: [usize; 5] = [300_000, 1, 2000, 70_001, 5];

/// SpMV (merge path and segmented scan) and segmented reduce take their
/// coordinates, carries and temporaries from the arena: after the first
/// round no call allocates, zeroes through the arena or falls back,
/// through a stream's arena and through a workspace.
#[test]
#[ignore = "needs a CUDA GPU"]
fn merge_path_primitives_do_not_grow_in_steady_state() -> gpu_core::Result<()> {
    let gpu = Gpu::new(0)?.with_new_stream()?;
    let workspace = Workspace::new();
    let lent = gpu.with_workspace(&workspace);
    let mut stream_arena = ScratchStats::default();
    for handle in [&gpu, &lent] {
        // Words for the temporaries, and a tile state in the nested arena.
        merge_path_round(handle, MATRIX_ROWS[0], 5)?;
        let before = handle.scratch_stats();
        assert!(
            before.allocations >= 2 && before.bytes_held > 0,
            "{before:?}"
        );
        for (index, &rows) in MATRIX_ROWS.iter().cycle().take(10).enumerate() {
            merge_path_round(handle, rows, 500 + index as u64)?;
        }
        assert_steady(before, handle.scratch_stats(), 10);
        if std::ptr::eq(handle, &gpu) {
            stream_arena = gpu.scratch_stats();
        }
    }
    // The workspace's calls never touched the stream's arena.
    assert_eq!(gpu.scratch_stats(), stream_arena);
    assert!(workspace.stats().bytes_held > 0);
    Ok(())
}

/// Keys per round of [`sort_round`], largest first so the arena has grown
/// before the steady rounds: several digit-pass tiles, the block sort's
/// largest input and one key.
const SORT_SIZES: [usize; 4] = [1 << 21, 70_001, sort::modules::BLOCK_SORT_MAX_KEYS, 1];

/// Candidates [`sort_round`] asks top-k for out of `n` keys: more than the
/// one-launch sorts take at the largest size, so the candidates' sort runs
/// the digit passes there (monotone in n, so the largest round sizes the
/// arena).
fn top_k_count(n: usize) -> usize {
    (n / 16).max(1)
}

/// Memsets [`sort_round`] declares for `n` keys: one (the zeroed words of
/// the digit passes) per Onesweep sort past the one-launch sorts' size for
/// its key and payload on this device, and one for top-k's own zeroed
/// words.
fn sort_round_zeroings(gpu: &Gpu, n: usize) -> gpu_core::Result<u64> {
    use sort::modules::one_launch_max_keys;
    use sort::PayloadWidth::{B4, B8};
    let passes = |limit: usize, keys: usize| u64::from(keys > limit);
    // sort_keys (u32), sort_pairs (u64, u32), argsort (f32, u32 indices),
    // top-k (its filter's words and its candidates' sort: i32 with u64
    // indices); the segmented sort takes none.
    Ok(passes(one_launch_max_keys::<u32>(gpu, None)?, n)
        + passes(one_launch_max_keys::<u64>(gpu, Some(B4))?, n)
        + passes(one_launch_max_keys::<f32>(gpu, Some(B4))?, n)
        + 1
        + passes(one_launch_max_keys::<i32>(gpu, Some(B8))?, top_k_count(n)))
}

/// One round of every sort on `n` keys, each checked against the CPU
/// sort: `sort_keys` (u32, descending), `sort_pairs` (u64 keys, u32
/// values), `argsort` (f32 keys, u32 indices), `top_k_into` (i32, the
/// largest [`top_k_count`]) and `segmented_sort_keys` (u16 in segments of
/// up to [`sort::segmented::MAX_SEGMENT_KEYS`], empty ones among them).
fn sort_round(gpu: &Gpu, n: usize, seed: u64) -> gpu_core::Result<()> {
    use sort::{Order, SortOptions};
    let mut rng = SplitMix64::new(seed);
    let narrow: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let wide: Vec<u64> = (0..n)
        .map(|_| rng.next_u64() >> (rng.next_u64() % 40))
        .collect();
    let payload: Vec<u32> = (0..n as u32).collect();
    // Few distinct values, so ties test stability.
    let reals: Vec<f32> = (0..n)
        .map(|_| (rng.next_u64() % 1000) as f32 * 0.25 - 100.0)
        .collect();
    let signed: Vec<i32> = (0..n)
        .map(|_| (rng.next_u64() % 5000) as i32 - 2500)
        .collect();
    let short: Vec<u16> = (0..n).map(|_| rng.next_u64() as u16).collect();
    let mut offsets = vec![0u64];
    while *offsets.last().unwrap() < n as u64 {
        let room = n as u64 - offsets.last().unwrap();
        let length = (rng.next_u64() % (sort::segmented::MAX_SEGMENT_KEYS as u64 + 1)).min(room);
        offsets.push(offsets.last().unwrap() + length);
    }
    let all_bits = |bits: u32| 0..bits;

    let input = DeviceBuffer::from_host(gpu, &narrow)?;
    let mut out = DeviceBuffer::<u32>::zeros(gpu, n)?;
    sort::sort_keys(
        gpu,
        input.view(),
        out.view_mut(),
        SortOptions::from(Order::Descending),
    )?;

    let wide_in = DeviceBuffer::from_host(gpu, &wide)?;
    let payload_in = DeviceBuffer::from_host(gpu, &payload)?;
    let mut wide_out = DeviceBuffer::<u64>::zeros(gpu, n)?;
    let mut payload_out = DeviceBuffer::<u32>::zeros(gpu, n)?;
    sort::sort_pairs(
        gpu,
        wide_in.view(),
        payload_in.view(),
        wide_out.view_mut(),
        payload_out.view_mut(),
        SortOptions::from(Order::Ascending),
    )?;

    let reals_in = DeviceBuffer::from_host(gpu, &reals)?;
    let mut order = DeviceBuffer::<u32>::zeros(gpu, n)?;
    sort::argsort(
        gpu,
        reals_in.view(),
        order.view_mut(),
        SortOptions::from(Order::Ascending),
    )?;

    let k = top_k_count(n);
    let signed_in = DeviceBuffer::from_host(gpu, &signed)?;
    let mut top = DeviceBuffer::<i32>::zeros(gpu, k)?;
    let mut top_indices = DeviceBuffer::<u64>::zeros(gpu, k)?;
    sort::top_k_into(
        gpu,
        signed_in.view(),
        top.view_mut(),
        top_indices.view_mut(),
        true,
    )?;

    let short_in = DeviceBuffer::from_host(gpu, &short)?;
    let offsets_in = DeviceBuffer::from_host(gpu, &offsets)?;
    let mut short_out = DeviceBuffer::<u16>::zeros(gpu, n)?;
    sort::segmented_sort_keys(
        gpu,
        short_in.view(),
        short_out.view_mut(),
        offsets_in.view(),
        SortOptions::from(Order::Ascending),
    )?;

    assert_eq!(
        out.to_host(gpu)?,
        sort::cpu::sort_keys(&narrow, true, &all_bits(32)),
        "sort_keys u32 descending, n = {n}"
    );
    let (keys, values) = sort::cpu::sort_pairs(&wide, &payload, false, &all_bits(64));
    assert_eq!(wide_out.to_host(gpu)?, keys, "sort_pairs keys, n = {n}");
    assert_eq!(
        payload_out.to_host(gpu)?,
        values,
        "sort_pairs values, n = {n}"
    );
    let expected: Vec<u32> = sort::cpu::argsort(&reals, false, &all_bits(32))
        .into_iter()
        .map(|i| i as u32)
        .collect();
    assert_eq!(order.to_host(gpu)?, expected, "argsort f32, n = {n}");
    let (values, indices) = sort::cpu::top_k(&signed, k, true);
    assert_eq!(top.to_host(gpu)?, values, "top-{k} values, n = {n}");
    assert_eq!(
        top_indices.to_host(gpu)?,
        indices,
        "top-{k} indices, n = {n}"
    );
    let mut expected = short.clone();
    for segment in offsets.windows(2) {
        expected[segment[0] as usize..segment[1] as usize].sort_unstable();
    }
    assert_eq!(short_out.to_host(gpu)?, expected, "segmented sort, n = {n}");
    Ok(())
}

/// The sorts (Onesweep's digit passes and the one-launch sorts, pairs,
/// argsort, top-k, segmented) take every temporary from the arena: after
/// the first round no call allocates, falls back or grows, and each zeroes
/// only the words it declares (one memset per Onesweep sort past the
/// one-launch sorts' size, one for top-k's filter), through a stream's
/// arena and through a workspace. The sorts draw no tile-state epochs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sorts_do_not_grow_in_steady_state() -> gpu_core::Result<()> {
    let gpu = Gpu::new(0)?.with_new_stream()?;
    let workspace = Workspace::new();
    let lent = gpu.with_workspace(&workspace);
    let mut stream_arena = ScratchStats::default();
    for handle in [&gpu, &lent] {
        sort_round(handle, SORT_SIZES[0], 11)?;
        let before = handle.scratch_stats();
        assert!(
            before.allocations >= 2 && before.bytes_held > 0,
            "{before:?}"
        );
        assert!(top_k_count(SORT_SIZES[0]) > sort::modules::CLUSTER_SORT_MAX_KEYS);
        let mut zeroings = 0;
        for (index, &n) in SORT_SIZES.iter().cycle().take(8).enumerate() {
            sort_round(handle, n, 700 + index as u64)?;
            zeroings += sort_round_zeroings(handle, n)?;
        }
        let after = handle.scratch_stats();
        assert_eq!(
            after.zeroings,
            before.zeroings + zeroings,
            "one memset per declared use: {after:?}"
        );
        assert_steady(
            before,
            ScratchStats {
                zeroings: before.zeroings,
                ..after
            },
            0,
        );
        if std::ptr::eq(handle, &gpu) {
            stream_arena = gpu.scratch_stats();
        }
    }
    // The workspace's calls never touched the stream's arena.
    assert_eq!(gpu.scratch_stats(), stream_arena);
    assert!(workspace.stats().bytes_held > 0);
    Ok(())
}
