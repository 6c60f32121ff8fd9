//! Bad input is a typed error and writes nothing: a wrong output length, a
//! bad block size, a block size for an algorithm with its own tuning, and a
//! custom operator whose CUDA does not compile (NVRTC's log in the error).
//! Every output is poisoned first and compared with its poison afterwards.
//!
//! Needs a CUDA GPU: `cargo test -p parprims-scan --test scan_errors -- --include-ignored`.

mod scan_support;

use gpu_core::{CustomOp, DeviceBuffer, Error, Operator, Sum};
use scan::{ScanAlgorithm, ScanKind, ScanOptions};
use scan_support::gpu;

const N: usize = 10_000;

fn input() -> DeviceBuffer<i32> {
    let host: Vec<i32> = (0..N as i32).collect();
    DeviceBuffer::from_host(gpu(), &host).expect("upload")
}

/// The error `scan_into` of `x` into `output` returns.
fn into_error<O: Operator<i32>>(
    x: &DeviceBuffer<i32>,
    output: &mut DeviceBuffer<i32>,
    op: &O,
    kind: ScanKind<i32>,
    options: &ScanOptions,
) -> Error {
    scan::scan_into(gpu(), x.view(), output.view_mut(), op, kind, options).unwrap_err()
}

/// The error `scan_in_place` of `data` returns.
fn in_place_error<O: Operator<i32>>(
    data: &mut DeviceBuffer<i32>,
    op: &O,
    kind: ScanKind<i32>,
    options: &ScanOptions,
) -> Error {
    scan::scan_in_place(gpu(), data.view_mut(), op, kind, options).unwrap_err()
}

fn assert_untouched(buffer: &DeviceBuffer<i32>, what: &str) {
    let host = buffer.to_host(gpu()).expect("download");
    assert!(
        host.iter().all(|&x| x == 0xDEAD_BEEF_u32 as i32),
        "{what}: the output was written"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_output_length_is_refused() {
    let x = input();
    for algorithm in ScanAlgorithm::ALL {
        for len in [N - 1, N + 1, 0] {
            let mut output = DeviceBuffer::<i32>::poisoned(gpu(), len).unwrap();
            let options = ScanOptions::new(algorithm);
            let err = into_error(&x, &mut output, &Sum, ScanKind::Inclusive, &options);
            assert!(
                matches!(err, Error::LengthMismatch { expected: N, actual, .. } if actual == len),
                "{algorithm}: {err}"
            );
            assert_untouched(&output, &format!("{algorithm} length {len}"));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_block_sizes_are_refused() {
    let x = input();
    let mut cases: Vec<(ScanAlgorithm, u32)> = Vec::new();
    for algorithm in ScanAlgorithm::TEACHING {
        cases.extend([
            (algorithm, 0),
            (algorithm, 16),
            (algorithm, 33),
            (algorithm, 2048),
        ]);
    }
    cases.extend([
        (ScanAlgorithm::Blelloch, 96),
        (ScanAlgorithm::BlellochPadded, 480),
        (ScanAlgorithm::DecoupledLookback, 256),
        (ScanAlgorithm::ReduceThenScan, 256),
        (ScanAlgorithm::Auto, 512),
    ]);
    for (algorithm, block) in cases {
        let options = ScanOptions::new(algorithm).with_block_threads(block);
        let mut output = DeviceBuffer::<i32>::poisoned(gpu(), N).unwrap();
        let err = into_error(&x, &mut output, &Sum, ScanKind::Inclusive, &options);
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    name: "block_threads",
                    ..
                }
            ),
            "{algorithm} block {block}: {err}"
        );
        assert_untouched(&output, &format!("{algorithm} block {block}"));
        // In place: the data is the poison, and must stay so.
        let err = in_place_error(&mut output, &Sum, ScanKind::Inclusive, &options);
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
        assert_untouched(&output, &format!("{algorithm} block {block} in place"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_operator_that_does_not_compile() {
    let x = input();
    let broken = CustomOp::<i32>::new("broken", "a + no_such_function(b)", 0, |a, b| a + b)
        .expect("the name and expression pass the host checks");
    for algorithm in ScanAlgorithm::ALL {
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial: 5 }] {
            let mut output = DeviceBuffer::<i32>::poisoned(gpu(), N).unwrap();
            let options = ScanOptions::new(algorithm);
            let err = into_error(&x, &mut output, &broken, kind, &options);
            match &err {
                Error::Compile { module, log, .. } => {
                    assert!(module.contains("custom_broken"), "{algorithm}: {module}");
                    assert!(log.contains("no_such_function"), "{algorithm}: {log}");
                }
                other => panic!("{algorithm}: expected Error::Compile, got {other}"),
            }
            assert_untouched(&output, &format!("{algorithm} broken operator"));
            let err = in_place_error(&mut output, &broken, kind, &options);
            assert!(matches!(err, Error::Compile { .. }), "{err}");
            assert_untouched(&output, &format!("{algorithm} broken operator in place"));
            // A new-buffer scan reports the same error.
            assert!(matches!(
                scan::scan(gpu(), x.view(), &broken, kind, &options),
                Err(Error::Compile { .. })
            ));
        }
    }
}

/// n = 0 launches nothing and succeeds in every mode.
#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_inputs() {
    let empty = DeviceBuffer::<i32>::from_host(gpu(), &[]).unwrap();
    let mut output = DeviceBuffer::<i32>::poisoned(gpu(), 0).unwrap();
    for algorithm in ScanAlgorithm::ALL {
        let options = ScanOptions::new(algorithm);
        let kind = ScanKind::Exclusive { initial: 3 };
        assert!(scan::scan(gpu(), empty.view(), &Sum, kind, &options)
            .unwrap()
            .is_empty());
        scan::scan_into(gpu(), empty.view(), output.view_mut(), &Sum, kind, &options).unwrap();
        scan::scan_in_place(gpu(), output.view_mut(), &Sum, kind, &options).unwrap();
    }
    // Even a broken operator is never compiled for n = 0.
    let broken = CustomOp::<i32>::new("broken_empty", "a +* b", 0, |a, b| a + b).unwrap();
    for algorithm in ScanAlgorithm::ALL {
        assert!(scan::scan(
            gpu(),
            empty.view(),
            &broken,
            ScanKind::Inclusive,
            &ScanOptions::new(algorithm)
        )
        .unwrap()
        .is_empty());
    }
}
