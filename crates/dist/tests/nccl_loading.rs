//! NCCL's host-side calls, which need libnccl but no GPU: the loading
//! check, the version, a unique id, and a typed error (never a panic) for
//! a group on a machine without a GPU. Without libnccl the test checks
//! that the error is `NoNccl` and says so; with `PARPRIMS_REQUIRE_NCCL=1`
//! a missing NCCL fails it.

#[test]
fn nccl_loads_or_is_a_typed_error() {
    match dist::nccl_available() {
        Ok(()) => {
            let version = dist::nccl_version().expect("ncclGetVersion");
            assert!(version >= 20_000, "NCCL version code {version}");
            let id = dist::unique_id().expect("ncclGetUniqueId");
            assert!(id.iter().any(|&b| b != 0), "a unique id is not all zeros");
            assert_ne!(dist::unique_id().expect("a second id"), id, "ids differ");
        }
        Err(e) => {
            assert!(matches!(e, dist::Error::NoNccl), "{e}");
            assert!(
                std::env::var("PARPRIMS_REQUIRE_NCCL").as_deref() != Ok("1"),
                "PARPRIMS_REQUIRE_NCCL=1 but NCCL did not load: {e}"
            );
            eprintln!("skipped: {e}");
        }
    }
}

#[test]
fn a_group_without_a_gpu_is_a_typed_error() {
    if gpu_core::device_count().is_ok_and(|count| count > 0) {
        return; // a machine with a GPU: the GPU tests cover groups
    }
    let err = dist::Group::new(&[0]).expect_err("no GPU here");
    assert!(
        matches!(err, dist::Error::Gpu(_) | dist::Error::NoNccl),
        "{err}"
    );
    let err = dist::Group::from_unique_id(&[0; 128], 0, 1, 0).expect_err("no GPU here");
    assert!(
        matches!(err, dist::Error::Gpu(_) | dist::Error::NoNccl),
        "{err}"
    );
    assert!(
        dist::Group::from_unique_id(&[0; 128], 1, 1, 0).is_err(),
        "rank past the world"
    );
}
