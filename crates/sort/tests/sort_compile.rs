//! Compiles every sort module (every key type × payload, the lab's too)
//! for sm_90 with NVRTC and checks that each entry point is in the cubin.
//! Needs NVRTC, not a GPU (skipped with a message without it, unless
//! PARPRIMS_REQUIRE_NVRTC=1).

use gpu_core::kernel::{compile_cubin, cubin_defines};

#[test]
fn every_sort_kernel_compiles_for_sm90() {
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    let modules = sort::kernel_catalog();
    let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), modules.len(), "duplicate module names");
    // Every key type × (keys alone + four payload widths).
    assert!(modules.len() >= 50);
    let failures: std::sync::Mutex<Vec<String>> = Default::default();
    gpu_core::kernel::for_each_in_parallel(&modules, 2, |module| {
        let result = match compile_cubin(module, "sm_90") {
            Ok(cubin) => module
                .entries()
                .iter()
                .filter(|entry| !cubin_defines(&cubin, entry))
                .map(|entry| format!("{entry} missing from {}", module.name()))
                .collect(),
            Err(e) => vec![format!("{}: {e}", module.name())],
        };
        failures.lock().unwrap().extend(result);
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The SASS of one kernel (`entry`) out of a module's listing.
fn kernel_sass<'a>(sass: &'a str, entry: &str) -> &'a str {
    let marker = format!(".text.{entry}:");
    let start = sass
        .find(&marker)
        .unwrap_or_else(|| panic!("{entry} not in the listing"));
    let rest = &sass[start..];
    let end = rest[marker.len()..]
        .find(".text.")
        .map_or(rest.len(), |e| e + marker.len());
    &rest[..end]
}

#[test]
fn digit_pass_and_block_sort_keep_everything_in_registers() {
    // Local-memory traffic (spills, or the key arrays demoted to the stack)
    // would cost the digit pass its bandwidth; the widest cases are checked.
    for (module, suffix) in [
        (sort::modules::module::<u32>(None), "u32_keys"),
        (
            sort::modules::module::<f32>(Some(sort::PayloadWidth::B4)),
            "f32_v4",
        ),
        (
            sort::modules::module::<u64>(Some(sort::PayloadWidth::B8)),
            "u64_v8",
        ),
        (sort::modules::module::<f64>(None), "f64_keys"),
    ] {
        let Some(sass) = parprims_testkit::testing::sm90_sass(&module) else {
            return;
        };
        for entry in [
            format!("sort_pass_{suffix}"),
            format!("sort_block_{suffix}"),
            format!("sort_cluster_{suffix}"),
        ] {
            if !module.entries().contains(&entry) {
                continue; // no one-cluster sort for 16-byte items (cluster_sort_takes)
            }
            let text = kernel_sass(&sass, &entry);
            let local: Vec<&str> = text
                .lines()
                .filter(|l| l.contains(" STL") || l.contains(" LDL"))
                .collect();
            assert!(
                local.is_empty(),
                "{entry}: {} local-memory accesses, e.g. {:?}",
                local.len(),
                local.first()
            );
        }
    }
}

#[test]
fn the_split_pass_keeps_everything_in_registers() {
    // The split form of the last pass (sort::split) stores through
    // per-digit addresses in shared memory: no local memory either.
    use sort::policy::OnesweepPolicy;
    use sort::PayloadWidth;
    let cases = [
        (
            sort::modules::split_module::<u32>(None, &OnesweepPolicy::default_for::<u32>(None)),
            "u32_keys",
        ),
        (
            sort::modules::split_module::<f32>(
                Some(PayloadWidth::B4),
                &OnesweepPolicy::default_for::<f32>(Some(PayloadWidth::B4)),
            ),
            "f32_v4",
        ),
        (
            sort::modules::split_module::<u64>(None, &OnesweepPolicy::default_for::<u64>(None)),
            "u64_keys",
        ),
        (
            sort::modules::split_module::<u64>(
                Some(PayloadWidth::B8),
                &OnesweepPolicy::default_for::<u64>(Some(PayloadWidth::B8)),
            ),
            "u64_v8",
        ),
    ];
    for (module, suffix) in cases {
        let module = module.expect("the default policy fits its own pair");
        let Some(sass) = parprims_testkit::testing::sm90_sass(&module) else {
            return;
        };
        let entry = format!("sort_split_pass_{suffix}");
        let local: Vec<&str> = kernel_sass(&sass, &entry)
            .lines()
            .filter(|l| l.contains(" STL") || l.contains(" LDL"))
            .collect();
        assert!(local.is_empty(), "{entry}: local-memory accesses {local:?}");
    }
}

#[test]
fn the_one_cluster_sort_compiles_for_sm80_without_clusters() {
    // sm_80 has no clusters: the entry compiles without them (and traps;
    // the host launches it only where the loaded kernel is a cluster).
    if !parprims_testkit::testing::nvrtc_or_skip() {
        return;
    }
    for module in [
        sort::modules::module::<u32>(None),
        sort::modules::module::<i64>(Some(sort::PayloadWidth::B4)),
    ] {
        let cubin = compile_cubin(&module, "sm_80")
            .unwrap_or_else(|e| panic!("{} for sm_80: {e}", module.name()));
        for entry in module.entries() {
            assert!(
                cubin_defines(&cubin, entry),
                "{entry} missing from {}",
                module.name()
            );
        }
        assert!(module.code().contains("__cluster_dims__(16, 1, 1)"));
    }
}
