//! CPU tests of the Onesweep policy (`sort::policy`): the default
//! reproduces the sort's fixed configuration, each key type and payload
//! takes its row of the measured table and finds its kernels in the
//! catalog's default module, every invalid configuration
//! is a typed error naming the field, the derived sizes agree with each
//! other, and the sweep grid's modules are distinct and well named.

use gpu_core::Error;
use proptest::prelude::*;
use sort::key::{PayloadWidth, SortKey};
use sort::policy::{
    sweep_grid, OnesweepPolicy, PassDigits, RankMethod, TileCounts, TileOrder,
    BLOCK_THREADS_CHOICES, LOOKBACK_COUNT_LIMIT, MAX_ITEMS, PASS_SHARED_BUDGET_BYTES,
};

/// The field an `InvalidArgument` names, or a description of another error.
fn refused_field(result: gpu_core::Result<OnesweepPolicy>) -> String {
    match result {
        Err(Error::InvalidArgument { name, .. }) => name.to_string(),
        Err(other) => format!("other error: {other}"),
        Ok(policy) => format!("accepted {policy:?}"),
    }
}

#[test]
fn default_is_the_fixed_configuration() {
    let p = OnesweepPolicy::DEFAULT;
    assert_eq!(
        (p.pass_threads(), p.pass_items(), p.rank()),
        (256, 16, RankMethod::Ballots)
    );
    assert_eq!((p.upsweep_threads(), p.upsweep_items()), (256, 16));
    assert_eq!(p.tile(), 4096);
    assert_eq!(p.portion_keys(), 1 << 28);
    assert_eq!(p.portion_tiles(), 65_536);
    assert_eq!(p.upsweep_chunk(), 4096);
    assert_eq!(OnesweepPolicy::default(), p);
    assert_eq!(
        OnesweepPolicy::new(256, 16, RankMethod::Ballots).unwrap(),
        p
    );
    // It is the upsweep of every default, not the passes of one: every
    // default module keeps its name (no policy suffix), DEFAULT's passes
    // get one.
    let module = sort::modules::policy_module::<u32>(None, &p).unwrap();
    assert_eq!(module.name(), "sort_u32_keys_p256x16b_u256x16");
    let default = OnesweepPolicy::default_for::<u32>(None);
    let module = sort::modules::policy_module::<u32>(None, &default).unwrap();
    assert_eq!(module.name(), "sort_u32_keys");
    assert_eq!(module.name(), sort::modules::module::<u32>(None).name());
}

/// The shape `OnesweepPolicy::default_for` gives keys of `key_bytes` with
/// `payload`: (pass threads, pass keys per thread), the table of its doc.
fn table_shape(key_bytes: usize, payload: Option<PayloadWidth>) -> (u32, u32) {
    match (key_bytes, payload) {
        (8, Some(_)) | (2, _) | (_, Some(PayloadWidth::B8)) => (512, 12),
        (_, _) => (512, 16),
    }
}

/// Keys alone and every payload width.
fn payloads() -> Vec<Option<PayloadWidth>> {
    std::iter::once(None)
        .chain(PayloadWidth::ALL.into_iter().map(Some))
        .collect()
}

/// The default of `K` with every payload: the table's shape by ballots (tile
/// counts from the ranks and tiles from the counter for `f32` keys alone,
/// counts early or by warp and tiles in block order otherwise; digits
/// packed for `f32` keys, recomputed otherwise) with
/// the 256 × 16 upsweep, accepted for those widths (`policy_module` runs the
/// sort's own check, `check_for`), its module the unsuffixed default module
/// built with that shape, and that module in `kernel_catalog()` with the
/// default upsweep and pass among its entries.
fn check_defaults_of<K: SortKey>(catalog: &[gpu_core::ModuleSource]) {
    for payload in payloads() {
        let case = format!("{} with {payload:?}", K::SUFFIX);
        let p = OnesweepPolicy::default_for::<K>(payload);
        assert_eq!(
            (p.pass_threads(), p.pass_items()),
            table_shape(K::BYTES, payload),
            "{case}"
        );
        assert_eq!(p.rank(), RankMethod::Ballots, "{case}");
        let narrow_values = payload.is_some_and(|w| w.bytes() <= 4);
        let by_warp = (K::BYTES == 8 && payload.is_none())
            || ((K::BYTES == 1 || K::BYTES == 4) && narrow_values && !K::IS_FLOAT);
        let counts = if by_warp {
            TileCounts::ByWarp
        } else if K::IS_FLOAT && K::BYTES == 4 && payload.is_none() {
            TileCounts::FromRanks
        } else {
            TileCounts::Early
        };
        assert_eq!(p.tile_counts(), counts, "{case}");
        let tiles = if counts == TileCounts::FromRanks {
            TileOrder::Counter
        } else {
            TileOrder::InBlockOrder
        };
        assert_eq!(p.tile_order(), tiles, "{case}");
        let digits = if K::IS_FLOAT && K::BYTES == 4 {
            PassDigits::Packed
        } else {
            PassDigits::Recomputed
        };
        assert_eq!(p.pass_digits(), digits, "{case}");
        assert_eq!(
            (p.upsweep_threads(), p.upsweep_items()),
            (256, 16),
            "{case}"
        );
        assert!(p.is_default_for::<K>(payload), "{case}");
        let value_bytes = payload.map_or(0, PayloadWidth::bytes);
        assert!(p.check_widths(K::BYTES, value_bytes).is_ok(), "{case}");
        assert_eq!(
            OnesweepPolicy::new(p.pass_threads(), p.pass_items(), p.rank())
                .unwrap()
                .with_tile_counts(p.tile_counts())
                .with_tile_order(p.tile_order())
                .with_pass_digits(p.pass_digits()),
            p,
            "{case}"
        );
        let module = sort::modules::policy_module::<K>(payload, &p).unwrap();
        let default = sort::modules::module::<K>(payload);
        assert_eq!(module.name(), default.name(), "{case}");
        assert!(!module.name().contains("_p"), "{case}: {}", module.name());
        let (v, has) = payload.map_or(("u8", "false"), |w| (w.cuda_type(), "true"));
        let pass = format!(
            "sort_onesweep_pass<{}, {v}, {has}, {}, {}, {}>",
            K::CUDA_TYPE,
            p.pass_threads(),
            p.pass_items(),
            p.pass_shared_bytes(K::BYTES, value_bytes)
        );
        assert!(default.code().contains(&pass), "{case}: no {pass}");
        let p_name = payload.map_or("keys".to_string(), |w| format!("v{}", w.bytes()));
        let entries = [
            format!("sort_pass_{}_{p_name}", K::SUFFIX),
            format!("sort_upsweep_{}_{p_name}", K::SUFFIX),
        ];
        let listed = catalog
            .iter()
            .find(|m| m.name() == default.name())
            .unwrap_or_else(|| panic!("{case}: {} not in the catalog", default.name()));
        assert_eq!(listed.code(), default.code(), "{case}");
        for entry in &entries {
            assert!(
                listed.entries().contains(entry),
                "{case}: {entry} not in {}",
                listed.name()
            );
        }
        // A policy other than the default gets a module of its own, so it
        // never shadows the default's kernels.
        let other = if p == OnesweepPolicy::DEFAULT {
            OnesweepPolicy::new(512, 12, RankMethod::Ballots).unwrap()
        } else {
            OnesweepPolicy::DEFAULT
        };
        assert!(!other.is_default_for::<K>(payload), "{case}");
        let module = sort::modules::policy_module::<K>(payload, &other).unwrap();
        assert_ne!(module.name(), default.name(), "{case}");
        assert!(module.name().contains("_p"), "{case}: {}", module.name());
    }
}

#[test]
fn defaults_follow_the_table_fit_and_are_in_the_catalog() {
    let catalog = sort::kernel_catalog();
    check_defaults_of::<u8>(&catalog);
    check_defaults_of::<u16>(&catalog);
    check_defaults_of::<u32>(&catalog);
    check_defaults_of::<u64>(&catalog);
    check_defaults_of::<i8>(&catalog);
    check_defaults_of::<i16>(&catalog);
    check_defaults_of::<i32>(&catalog);
    check_defaults_of::<i64>(&catalog);
    check_defaults_of::<f32>(&catalog);
    check_defaults_of::<f64>(&catalog);
    // The measured rows.
    let shape = |p: OnesweepPolicy| (p.pass_threads(), p.pass_items());
    assert_eq!(shape(OnesweepPolicy::default_for::<u32>(None)), (512, 16));
    assert_eq!(shape(OnesweepPolicy::default_for::<u64>(None)), (512, 16));
    assert_eq!(
        shape(OnesweepPolicy::default_for::<u64>(Some(PayloadWidth::B4))),
        (512, 12)
    );
    assert_eq!(
        shape(OnesweepPolicy::default_for::<u32>(Some(PayloadWidth::B4))),
        (512, 16)
    );
}

#[test]
fn bad_block_threads_are_refused() {
    for threads in [0, 32, 128, 255, 257, 320, 448, 640, 768, 1024] {
        assert_eq!(
            refused_field(OnesweepPolicy::new(threads, 16, RankMethod::Ballots)),
            "pass_threads",
            "{threads}"
        );
        assert_eq!(
            refused_field(OnesweepPolicy::DEFAULT.with_upsweep(threads, 16)),
            "upsweep_threads",
            "{threads}"
        );
    }
}

#[test]
fn bad_items_are_refused() {
    for items in [0, MAX_ITEMS + 1, 64, u32::MAX] {
        assert_eq!(
            refused_field(OnesweepPolicy::new(256, items, RankMethod::MatchAny)),
            "pass_items",
            "{items}"
        );
        assert_eq!(
            refused_field(OnesweepPolicy::DEFAULT.with_upsweep(256, items)),
            "upsweep_items",
            "{items}"
        );
    }
}

#[test]
fn shared_memory_past_the_budget_is_refused_for_those_widths_only() {
    // 512 × 32 keys: 16 KiB of counters and a 64 KiB exchange of u32 keys
    // fit; u64 keys (128 KiB of exchange) do not, nor u32 keys with u64
    // values.
    let wide = OnesweepPolicy::new(512, 32, RankMethod::Ballots).unwrap();
    assert!(wide.check_widths(4, 0).is_ok());
    for (k, v) in [(8, 0), (8, 8), (4, 8), (8, 4)] {
        match wide.check_widths(k, v) {
            Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, "pass_items"),
            other => panic!("{k}/{v}: {other:?}"),
        }
    }
    // The module builder refuses it too, before any source is built.
    assert!(matches!(
        sort::modules::policy_module::<u64>(None, &wide),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(sort::modules::policy_module::<u32>(None, &wide).is_ok());
}

#[test]
fn pass_shared_bytes_follows_the_storage_layout() {
    // u64 keys with u64 values at 512 × 16: 16 warps × 256 counters, 256
    // tile counts, 256 bases, 8192 × 8 bytes of exchange, 8192 slot digits, the
    // scan's 16 totals, the tile id.
    let p = OnesweepPolicy::new(512, 16, RankMethod::Ballots).unwrap();
    // (93 252 bytes, rounded up to 8.)
    assert_eq!(
        p.pass_shared_bytes(8, 8),
        (16 * 256 * 4 + 1024 + 2048 + 8192 * 8 + 8192 + 16 * 4 + 4u32).div_ceil(8) * 8
    );
    // Keys alone: one slot digit byte, padded to the scan's 4-byte totals,
    // the whole rounded up to 8.
    let q = OnesweepPolicy::new(384, 12, RankMethod::Ballots).unwrap();
    let want = (12 * 256 * 4 + 1024 + 2048 + 4608 * 2 + 4 + 12 * 4 + 4usize).div_ceil(8) * 8;
    assert_eq!(q.pass_shared_bytes(2, 0) as usize, want);
    assert_eq!(q.pass_shared_bytes(2, 0) % 8, 0);
}

proptest! {
    #[test]
    fn every_accepted_policy_is_consistent(
        threads in prop::sample::select(BLOCK_THREADS_CHOICES.to_vec()),
        items in 1..=MAX_ITEMS,
        rank in prop::sample::select(RankMethod::ALL.to_vec()),
        up_threads in prop::sample::select(BLOCK_THREADS_CHOICES.to_vec()),
        up_items in 1..=MAX_ITEMS,
        n in 1u64..(1u64 << 36),
    ) {
        let p = OnesweepPolicy::new(threads, items, rank)
            .and_then(|p| p.with_upsweep(up_threads, up_items));
        // One-byte keys always fit the budget at these shapes.
        let p = p.unwrap();
        prop_assert_eq!(p.tile(), threads as u64 * items as u64);
        prop_assert_eq!(p.tile() % (32 * items as u64), 0);
        prop_assert_eq!(p.portion_keys() % p.tile(), 0);
        prop_assert!(p.portion_keys() < LOOKBACK_COUNT_LIMIT);
        prop_assert!(p.portion_keys() + p.tile() > 1 << 28, "the most whole tiles");
        let (portions, tiles) = p.pass_geometry(n);
        prop_assert_eq!(portions, n.div_ceil(p.portion_keys()));
        // Tiles of every portion together: whole portions plus the last.
        let last = n - (portions - 1) * p.portion_keys();
        prop_assert_eq!(tiles, (portions - 1) * p.portion_tiles() + last.div_ceil(p.tile()));
        prop_assert_eq!(p.lookback_state_words(n), tiles * 256);
        prop_assert_eq!(p.upsweep_chunk(), up_threads as u64 * up_items as u64);
        // The budget decides check_widths exactly.
        for (k, v) in [(4usize, 0usize), (8, 0), (4, 4), (8, 8)] {
            let fits = p.pass_shared_bytes(k, v) <= PASS_SHARED_BUDGET_BYTES;
            prop_assert_eq!(p.check_widths(k, v).is_ok(), fits);
        }
    }
}

#[test]
fn sweep_grid_is_distinct_and_fits_the_swept_widths() {
    let grid = sweep_grid();
    assert!((12..=24).contains(&grid.len()));
    assert!(grid.contains(&OnesweepPolicy::DEFAULT));
    for (i, a) in grid.iter().enumerate() {
        // Every grid policy is one new() accepts.
        assert_eq!(
            OnesweepPolicy::new(a.pass_threads(), a.pass_items(), a.rank())
                .and_then(|p| p.with_upsweep(a.upsweep_threads(), a.upsweep_items()))
                .unwrap(),
            *a
        );
        for (k, v) in [(4, 0), (8, 0), (4, 4)] {
            assert!(a.check_widths(k, v).is_ok(), "{} for {k}/{v}", a.name());
        }
        for b in &grid[i + 1..] {
            assert_ne!(a, b);
            assert_ne!(a.name(), b.name());
        }
    }
    // Modules: one per non-default policy and swept case, distinct names,
    // two entries each, named after the policy.
    let modules = sort::modules::sweep_catalog();
    let defaults_in_grid = grid
        .iter()
        .map(|p| {
            usize::from(p.is_default_for::<u32>(None))
                + usize::from(p.is_default_for::<u64>(None))
                + usize::from(p.is_default_for::<u32>(Some(PayloadWidth::B4)))
        })
        .sum::<usize>();
    assert_eq!(defaults_in_grid, 1, "u32 keys' default only");
    assert_eq!(modules.len(), 3 * grid.len() - defaults_in_grid);
    let mut names: Vec<&str> = modules.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), modules.len());
    for module in &modules {
        assert_eq!(module.entries().len(), 2, "{}", module.name());
        assert!(module.name().contains("_p"), "{}", module.name());
    }
    let m = OnesweepPolicy::new(384, 16, RankMethod::MatchAny).unwrap();
    let module = sort::modules::policy_module::<u64>(None, &m).unwrap();
    assert_eq!(module.name(), "sort_u64_keys_p384x16m_u256x16");
    assert!(module.code().contains("#define SORT_RANK_BY_MATCH_ANY 1"));
    assert!(module
        .code()
        .contains("sort_onesweep_pass<u64, u8, false, 384, 16, "));
    let default = sort::modules::module::<u64>(None);
    assert!(default.code().contains("#define SORT_RANK_BY_MATCH_ANY 0"));
    assert!(default
        .code()
        .contains("sort_onesweep_pass<u64, u8, false, 512, 16, "));
    assert!(default.code().contains("#define SORT_TILE_COUNTS 2"));
    assert!(default
        .code()
        .contains("#define SORT_TILES_IN_BLOCK_ORDER 1"));
    let counter = OnesweepPolicy::default_for::<u64>(None).with_tile_order(TileOrder::Counter);
    let module = sort::modules::policy_module::<u64>(None, &counter).unwrap();
    assert_eq!(module.name(), "sort_u64_keys_p512x16bwc_u256x16");
    assert!(module
        .code()
        .contains("#define SORT_TILES_IN_BLOCK_ORDER 0"));
    // u32 keys' own default is left to its full module; the grid's
    // early-count shapes of the other cases' default shapes are listed.
    let name = |m: &gpu_core::ModuleSource| m.name().to_string();
    let names: Vec<String> = modules.iter().map(name).collect();
    assert!(!names.iter().any(|n| n == "sort_u32_keys_p512x16b_u256x16"));
    for present in [
        "sort_u64_keys_p256x16b_u256x16",
        "sort_u32_keys_p256x16b_u256x16",
        "sort_u32_keys_p512x12b_u256x16",
        "sort_u32_v4_p256x16b_u256x16",
        "sort_u64_keys_p512x16b_u256x16",
        "sort_u32_v4_p512x16b_u256x16",
    ] {
        assert!(names.iter().any(|n| n == present), "{present}");
    }
}

/// Local-memory accesses (spills, or register arrays demoted to the stack)
/// of `entry` in an sm_90 SASS listing.
fn local_accesses(sass: &str, entry: &str) -> usize {
    let marker = format!(".text.{entry}:");
    let start = sass
        .find(&marker)
        .unwrap_or_else(|| panic!("{entry} not in the listing"));
    let rest = &sass[start + marker.len()..];
    let text = &rest[..rest.find(".text.").unwrap_or(rest.len())];
    text.lines()
        .filter(|l| l.contains(" STL") || l.contains(" LDL"))
        .count()
}

/// Compiles each (module, entry) for sm_90, two at a time, and fails
/// naming every entry with local-memory accesses (skipped without NVRTC
/// and nvdisasm).
fn assert_in_registers(cases: &[(gpu_core::ModuleSource, String)]) {
    let failures: std::sync::Mutex<Vec<String>> = Default::default();
    gpu_core::kernel::for_each_in_parallel(cases, 2, |(module, entry)| {
        let Some(sass) = parprims_testkit::testing::sm90_sass(module) else {
            return;
        };
        let local = local_accesses(&sass, entry);
        if local > 0 {
            failures
                .lock()
                .unwrap()
                .push(format!("{entry}: {local} local-memory accesses"));
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Checks that `cases` name one module each (every policy its own
/// module), then [`assert_in_registers`].
fn assert_distinct_and_in_registers(cases: &[(gpu_core::ModuleSource, String)]) {
    let mut names: Vec<&str> = cases.iter().map(|(m, _)| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "{names:?}");
    assert_in_registers(cases);
}

/// The default module of `K` with `payload`, its pass entry's name.
fn default_pass<K: SortKey>(payload: Option<PayloadWidth>) -> (gpu_core::ModuleSource, String) {
    let p_name = payload.map_or("keys".to_string(), |w| format!("v{}", w.bytes()));
    (
        sort::modules::module::<K>(payload),
        format!("sort_pass_{}_{p_name}", K::SUFFIX),
    )
}

/// The small-input module of `K` with `payload`, its pass entry's name.
fn small_input_pass<K: SortKey>(payload: Option<PayloadWidth>) -> (gpu_core::ModuleSource, String) {
    let policy = OnesweepPolicy::SMALL_INPUT;
    let module = sort::modules::policy_module::<K>(payload, &policy).unwrap();
    let p_name = payload.map_or("keys".to_string(), |w| format!("v{}", w.bytes()));
    let name = format!("sort_pass_{}_{p_name}_p256x8b_u256x8s", K::SUFFIX);
    assert!(module.entries().contains(&name), "{name}");
    (module, name)
}

#[test]
fn every_default_pass_keeps_everything_in_registers() {
    // Each key width with keys alone and every value width, under its
    // default policy and the small-input one (512 × 16 for keys of up to 4 bytes with 8-byte values
    // is the largest register tile): local-memory traffic would cost the
    // pass its bandwidth. Needs NVRTC and nvdisasm, skipped without.
    let mut cases = Vec::new();
    for payload in payloads() {
        cases.push(default_pass::<u8>(payload));
        cases.push(default_pass::<u16>(payload));
        cases.push(default_pass::<u32>(payload));
        cases.push(default_pass::<u64>(payload));
        cases.push(small_input_pass::<u8>(payload));
        cases.push(small_input_pass::<u16>(payload));
        cases.push(small_input_pass::<u32>(payload));
        cases.push(small_input_pass::<u64>(payload));
    }
    // Float keys: their image adds a NaN test and a select per digit, and
    // f32 passes keep their digits packed (four registers more).
    for payload in payloads() {
        cases.push(default_pass::<f32>(payload));
    }
    cases.push(default_pass::<f64>(None));
    assert_in_registers(&cases);
}

/// The module of `K` with `payload` under its default policy with tile
/// counts `counts`, its pass entry's name.
fn pass_with_counts<K: SortKey>(
    payload: Option<PayloadWidth>,
    counts: TileCounts,
) -> (gpu_core::ModuleSource, String) {
    let policy = OnesweepPolicy::default_for::<K>(payload).with_tile_counts(counts);
    with_pass_entry(sort::modules::policy_module::<K>(payload, &policy).unwrap())
}

/// `module` and the name of its digit pass's entry.
fn with_pass_entry(module: gpu_core::ModuleSource) -> (gpu_core::ModuleSource, String) {
    let entry = module
        .entries()
        .iter()
        .find(|e| e.starts_with("sort_pass_"))
        .unwrap_or_else(|| panic!("{}: no pass entry", module.name()))
        .clone();
    (module, entry)
}

#[test]
fn every_way_of_tile_counts_keeps_the_pass_in_registers() {
    // The swept cases' defaults (u32 and f32 keys, u32 keys with u32
    // values) with each way of tile counts, as `sort_tune --grid counts`
    // runs them, and one module name per way. Needs NVRTC and nvdisasm for
    // the listing, skipped without.
    // u64 keys' 512 × 16 default fits 64 registers only with its own
    // tile counts (by warp; `every_default_pass_keeps_everything_in_registers`
    // checks it): early counts and counts from the ranks spill a few
    // registers there, which the sweep's figures for them include.
    let mut cases = Vec::new();
    for counts in TileCounts::ALL {
        cases.push(pass_with_counts::<u32>(None, counts));
        cases.push(pass_with_counts::<f32>(None, counts));
        cases.push(pass_with_counts::<u32>(Some(PayloadWidth::B4), counts));
    }
    assert_distinct_and_in_registers(&cases);
}

#[test]
fn both_tile_orders_keep_the_pass_in_registers() {
    // The defaults of u32 and u64 keys and u32 keys with u32 values, and
    // the small-input policy, each with both tile orders, as `sort_tune
    // --grid order` runs them; one module name per policy. Needs NVRTC and
    // nvdisasm for the listing, skipped without.
    let mut cases = Vec::new();
    for tiles in TileOrder::ALL {
        for (payload, policy) in [
            (None, OnesweepPolicy::default_for::<u32>(None)),
            (None, OnesweepPolicy::SMALL_INPUT),
            (
                Some(PayloadWidth::B4),
                OnesweepPolicy::default_for::<u32>(Some(PayloadWidth::B4)),
            ),
        ] {
            let policy = policy.with_tile_order(tiles);
            assert_eq!(policy.tile_order(), tiles);
            let module = sort::modules::policy_module::<u32>(payload, &policy).unwrap();
            let define = format!(
                "#define SORT_TILES_IN_BLOCK_ORDER {}",
                u32::from(tiles == TileOrder::InBlockOrder)
            );
            assert!(module.code().contains(&define), "{}", module.name());
            cases.push(with_pass_entry(module));
        }
        let wide = OnesweepPolicy::default_for::<u64>(None).with_tile_order(tiles);
        cases.push(with_pass_entry(
            sort::modules::policy_module::<u64>(None, &wide).unwrap(),
        ));
    }
    assert_distinct_and_in_registers(&cases);
}

/// The module of `K` with `payload` under `policy` with its pass's digits
/// as `digits` says (checked in the module's defines), and its pass entry.
fn with_pass_digits<K: SortKey>(
    payload: Option<PayloadWidth>,
    policy: OnesweepPolicy,
    digits: PassDigits,
) -> (gpu_core::ModuleSource, String) {
    let policy = policy.with_pass_digits(digits);
    assert_eq!(policy.pass_digits(), digits);
    let module = sort::modules::policy_module::<K>(payload, &policy).unwrap();
    let define = format!(
        "#define SORT_PACKED_DIGITS {}",
        u32::from(digits == PassDigits::Packed)
    );
    assert!(module.code().contains(&define), "{}", module.name());
    with_pass_entry(module)
}

#[test]
fn both_ways_of_pass_digits_keep_the_pass_in_registers() {
    // The defaults of u32 and f32 keys with every way of tile counts, of
    // u32 and f32 keys with u32 values, and the small-input policy, each
    // with the pass's digits recomputed and packed, as `sort_tune --grid
    // digits` runs them; one module name per policy. (u64 keys' 512 × 16
    // passes spill with packed digits, as f64 keys' do.) Needs NVRTC and
    // nvdisasm for the listing, skipped without.
    let mut cases = Vec::new();
    let pairs = Some(PayloadWidth::B4);
    for digits in PassDigits::ALL {
        for counts in TileCounts::ALL {
            let u = OnesweepPolicy::default_for::<u32>(None).with_tile_counts(counts);
            cases.push(with_pass_digits::<u32>(None, u, digits));
            let f = OnesweepPolicy::default_for::<f32>(None).with_tile_counts(counts);
            cases.push(with_pass_digits::<f32>(None, f, digits));
        }
        let u_pairs = OnesweepPolicy::default_for::<u32>(pairs);
        cases.push(with_pass_digits::<u32>(pairs, u_pairs, digits));
        let f_pairs = OnesweepPolicy::default_for::<f32>(pairs);
        cases.push(with_pass_digits::<f32>(pairs, f_pairs, digits));
        let small = OnesweepPolicy::SMALL_INPUT;
        cases.push(with_pass_digits::<f32>(None, small, digits));
    }
    assert_distinct_and_in_registers(&cases);
}

#[test]
fn small_inputs_take_the_small_input_policy_and_it_is_in_the_catalog() {
    let limit = sort::policy::SMALL_INPUT_MAX_KEYS as usize;
    for payload in payloads() {
        for (n, small) in [
            (1, true),
            (limit, true),
            (limit + 1, false),
            (1 << 28, false),
        ] {
            let policy = OnesweepPolicy::default_for_len::<u32>(payload, n);
            let expected = if small {
                OnesweepPolicy::SMALL_INPUT
            } else {
                OnesweepPolicy::default_for::<u32>(payload)
            };
            assert_eq!(policy, expected, "n = {n}, {payload:?}");
            let value_bytes = payload.map_or(0, |w| w.bytes());
            assert!(policy.check_widths(8, value_bytes).is_ok());
        }
    }
    let names: Vec<String> = sort::kernel_catalog()
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    for name in [
        "sort_u32_keys_p256x8b_u256x8s",
        "sort_f64_v8_p256x8b_u256x8s",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in the catalog");
    }
}

#[test]
fn mid_size_f32_keys_count_tiles_by_warp_and_their_pass_is_in_the_catalog() {
    let small = sort::policy::SMALL_INPUT_MAX_KEYS as usize;
    let mid_max = sort::policy::MID_INPUT_MAX_KEYS as usize;
    let default = OnesweepPolicy::default_for::<f32>(None);
    let mid = OnesweepPolicy::mid_input_for::<f32>(None).unwrap();
    assert_eq!(mid, default.with_tile_counts(TileCounts::ByWarp));
    assert_eq!(
        (mid.tile_order(), mid.pass_digits()),
        (default.tile_order(), default.pass_digits())
    );
    for (n, expected) in [
        (small, OnesweepPolicy::SMALL_INPUT),
        (small + 1, mid),
        (1 << 24, mid),
        (mid_max, mid),
        (mid_max + 1, default),
        (1 << 28, default),
    ] {
        assert_eq!(
            OnesweepPolicy::default_for_len::<f32>(None, n),
            expected,
            "n = {n}"
        );
    }
    // Every other key type and every payload keeps its default past the
    // small inputs.
    for payload in payloads() {
        assert_eq!(
            OnesweepPolicy::default_for_len::<u32>(payload, 1 << 24),
            OnesweepPolicy::default_for::<u32>(payload)
        );
        assert_eq!(
            OnesweepPolicy::default_for_len::<f64>(payload, 1 << 24),
            OnesweepPolicy::default_for::<f64>(payload)
        );
        if payload.is_some() {
            assert!(OnesweepPolicy::mid_input_for::<f32>(payload).is_none());
            assert_eq!(
                OnesweepPolicy::default_for_len::<f32>(payload, 1 << 24),
                OnesweepPolicy::default_for::<f32>(payload)
            );
        }
    }
    let module = sort::modules::policy_module::<f32>(None, &mid).unwrap();
    assert_eq!(module.name(), "sort_f32_keys_p512x16bwcd_u256x16");
    assert!(sort::kernel_catalog()
        .iter()
        .any(|m| m.name() == module.name()));
    // Its pass keeps everything in registers (NVRTC and nvdisasm, skipped
    // without).
    assert_in_registers(&[with_pass_entry(module)]);
}

#[test]
fn every_rank_method_keeps_the_pass_in_registers() {
    // The defaults of u32 and f32 keys and u32 keys with u32 values, as
    // `sort_tune --grid rank` runs them: each with every rank method, and
    // the atomic-or ranking with every way of tile counts; one module name
    // per policy, its defines set. Needs NVRTC and nvdisasm for the
    // listing, skipped without.
    let mut cases = Vec::new();
    // (f32 keys, payload, that case's default)
    for (float_keys, payload, default) in [
        (false, None, OnesweepPolicy::default_for::<u32>(None)),
        (true, None, OnesweepPolicy::default_for::<f32>(None)),
        (
            false,
            Some(PayloadWidth::B4),
            OnesweepPolicy::default_for::<u32>(Some(PayloadWidth::B4)),
        ),
    ] {
        let mut policies: Vec<OnesweepPolicy> = RankMethod::ALL
            .map(|rank| default.with_rank_method(rank))
            .to_vec();
        for counts in TileCounts::ALL {
            let policy = default
                .with_rank_method(RankMethod::AtomicOr)
                .with_tile_counts(counts);
            if !policies.contains(&policy) {
                policies.push(policy);
            }
        }
        for policy in policies {
            let module = if float_keys {
                sort::modules::policy_module::<f32>(payload, &policy)
            } else {
                sort::modules::policy_module::<u32>(payload, &policy)
            };
            let module = module.unwrap();
            for (define, on) in [
                (
                    "SORT_RANK_BY_MATCH_ANY",
                    policy.rank() == RankMethod::MatchAny,
                ),
                (
                    "SORT_RANK_BY_SHARED_MASKS",
                    policy.rank() == RankMethod::AtomicOr,
                ),
            ] {
                let line = format!("#define {define} {}", u32::from(on));
                assert!(module.code().contains(&line), "{}: {line}", module.name());
            }
            cases.push(with_pass_entry(module));
        }
    }
    assert_distinct_and_in_registers(&cases);
}

#[test]
fn atomic_or_ranking_takes_a_kib_of_shared_memory_per_warp() {
    // The warps' peer masks follow the pass's storage (and the split
    // storage): 16 KiB at 512 threads, which 512 × 16 u64 keys do not
    // leave within the budget, while 512 × 12 fits them.
    let ballots = OnesweepPolicy::new(512, 16, RankMethod::Ballots).unwrap();
    let masks = ballots.with_rank_method(RankMethod::AtomicOr);
    for (k, v) in [(4, 0), (4, 4), (8, 0), (8, 8)] {
        assert_eq!(
            masks.pass_shared_bytes(k, v),
            ballots.pass_shared_bytes(k, v) + 16 * 1024
        );
        assert_eq!(
            masks.pass_split_shared_bytes(k, v),
            ballots.pass_split_shared_bytes(k, v) + 16 * 1024
        );
    }
    assert!(masks.check_widths(4, 4).is_ok());
    assert!(ballots.check_widths(8, 0).is_ok());
    assert_eq!(
        refused_field(masks.check_widths(8, 0).map(|()| masks)),
        "pass_items"
    );
    let narrower = OnesweepPolicy::new(512, 12, RankMethod::AtomicOr).unwrap();
    assert!(narrower.check_widths(8, 4).is_ok());
    let module = sort::modules::policy_module::<u64>(None, &narrower).unwrap();
    assert_eq!(module.name(), "sort_u64_keys_p512x12o_u256x16");
    assert!(module
        .code()
        .contains("#define SORT_RANK_BY_SHARED_MASKS 1"));
    assert!(sort::modules::policy_module::<u64>(None, &masks).is_err());
}
