//! The `parprims` binary end to end: the no-GPU path (what CI and the
//! README's `cargo run --release` show on a machine without a GPU), argument
//! errors found before the GPU is touched, and, on a GPU, a tiny tour and a
//! tiny benchmark.

use std::process::{Command, Output};

use parprims::gpu_core::Gpu;

/// The binary under test: `PARPRIMS_BIN` when set (a bundle run on a GPU
/// machine, where the path cargo compiled in does not exist), else the one
/// cargo built.
fn binary() -> std::path::PathBuf {
    std::env::var_os("PARPRIMS_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_parprims").into())
}

fn parprims(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .output()
        .expect("the parprims binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn gpu_present() -> bool {
    Gpu::new(0).is_ok()
}

#[test]
fn no_arguments_exits_zero_and_explains_a_missing_gpu() {
    if gpu_present() {
        // The GPU path is the ignored smoke test below.
        return;
    }
    let output = parprims(&["--reps", "1", "--seed", "42"]);
    let all = text(&output);
    assert!(output.status.success(), "exit {:?}\n{all}", output.status);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("No CUDA GPU found") || first.starts_with("No usable CUDA GPU"),
        "first line: {first}"
    );
    assert!(!all.contains("panicked"), "{all}");
    // The CPU references' table follows, every primitive, every self-check passing.
    assert!(stdout.contains("The CPU references instead"), "{stdout}");
    for primitive in ["scan", "compact", "transpose", "matvec", "conv"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(primitive)),
            "no {primitive} row:\n{stdout}"
        );
    }
    assert!(stdout.contains("seed 42"));
    assert!(!stdout.contains('✗'), "{stdout}");
    assert!(stdout.contains("match their reference"), "{stdout}");
}

#[test]
fn bad_arguments_fail_before_the_gpu() {
    let output = parprims(&["bench", "fft"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("fft"));
    let output = parprims(&["bench", "scan", "--types", "f16"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = parprims(&["bench", "conv", "--sweep"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = parprims(&["bench", "scan", "--compare", "/nonexistent/peers.csv"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = parprims(&["--reps", "0"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = parprims(&["--no-such-flag"]);
    assert!(!output.status.success());
}

#[test]
fn help_lists_the_bench_command() {
    let output = parprims(&["--help"]);
    assert!(output.status.success());
    assert!(text(&output).contains("bench"));
    let output = parprims(&["bench", "--help"]);
    assert!(output.status.success());
    let help = text(&output);
    for flag in [
        "--sizes",
        "--algos",
        "--types",
        "--csv",
        "--plot",
        "--compare",
        "--out-dir",
        "--sweep",
    ] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[test]
fn bench_without_a_gpu_says_so() {
    if gpu_present() {
        return;
    }
    let output = parprims(&["bench", "copy", "--sizes", "2^10"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("No CUDA GPU"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_tour_runs_and_every_check_passes() {
    // The quick tour under the sanitizer script (parprims_testkit::testing).
    let output = if parprims_testkit::testing::quick_tests() {
        parprims(&["--reps", "2", "--quick"])
    } else {
        parprims(&["--reps", "2"])
    };
    let all = text(&output);
    assert!(output.status.success(), "exit {:?}\n{all}", output.status);
    assert!(all.contains("copy ceiling"), "{all}");
    for primitive in ["scan", "compact", "transpose", "matvec", "conv", "copy"] {
        assert!(
            all.lines().any(|l| l.starts_with(primitive)),
            "no {primitive} row:\n{all}"
        );
    }
    assert!(!all.contains('✗'), "{all}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_small_bench_writes_csv_and_plots_and_merges_peers() {
    let dir = std::env::temp_dir().join(format!("parprims-cli-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let peers = dir.join("peers.csv");
    std::fs::write(
        &peers,
        format!(
            "{}\nscan,torch.cumsum,i32,1048576,0.0100,838.86,3000.00,0.2796,peer device\n",
            parprims_testkit::bench::CSV_HEADER
        ),
    )
    .expect("peers csv written");
    let out_dir = dir.join("results");
    let output = parprims(&[
        "bench",
        "scan",
        "--sizes",
        "2^20,5*2^17",
        "--types",
        "i32,f32",
        "--reps",
        "2",
        "--out-dir",
        out_dir.to_str().expect("utf-8 path"),
        "--compare",
        peers.to_str().expect("utf-8 path"),
    ]);
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains("torch.cumsum"), "{all}");
    let records = parprims_testkit::bench::read_csv(&out_dir.join("scan.csv")).expect("csv");
    // 2 sizes × 2 types × 6 algorithms, peers not copied into our CSV.
    assert_eq!(records.len(), 24);
    assert!(records.iter().all(|r| r.gbps > 0.0 && r.ceiling_gbps > 0.0));
    for name in [
        "scan-time.svg",
        "scan-time.png",
        "scan-gbps.svg",
        "scan-gbps.png",
    ] {
        let path = out_dir.join(name);
        assert!(
            std::fs::metadata(&path)
                .map(|m| m.len() > 1000)
                .unwrap_or(false),
            "{} missing",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
