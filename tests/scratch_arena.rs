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
