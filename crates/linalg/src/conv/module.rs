//! The conv kernel modules and their entry names: per element type, one
//! module of the direct kernels and the block kernel (named after the
//! block kernel's policy fields) and one strip module per strip policy's
//! compile-time fields; and the lookup of their kernels in the context's
//! kernel store.

use gpu_core::{bf16, f16, Gpu, Kernel, KernelArgs, Module, ModuleSource, Result};

use super::algorithm::{ConvAlgorithm, ConvOptions};
use super::element::ConvElement;
use super::policy::{
    ConvPolicy, RegisterTilePolicy, StripPolicy, StripStores, REGISTER_TILE_CANDIDATES,
    REGISTER_TILE_MAX_K, STRIP_CANDIDATES, STRIP_MAX_K, TILED_SPECIALISED_MAX_K,
};
use super::shape::{anchor, kernel_padding, Padding, CONV_MAX_K};
use crate::matrix::{MatrixView, MatrixViewMut};

/// The architecture whose defaults name the plain modules (every
/// architecture has the same table today).
const TABLE_ARCH: (u32, u32) = (9, 0);

/// Name of the `__constant__` filter array in the conv modules.
pub(crate) const CONSTANT_FILTER_SYMBOL: &str = "conv_constant_filter";

const ENTRY_PARAMS: &str = "const conv_t* img, const conv_t* filt, conv_t* out, i64 H, i64 W, \
     i64 OH, i64 OW, i32 K, i32 pad, i32 padding, i32 flip, i32 stride";

/// One validated convolution on its way to a kernel: the operands, the
/// output's shape and the caller's options. The direct kernels, the block
/// kernel and the strip kernel all launch from one.
pub(crate) struct ConvCall<'a, 'o, T: ConvElement> {
    /// The `H × W` image.
    pub(crate) image: MatrixView<'a, T>,
    /// The `K × K` filter.
    pub(crate) filter: MatrixView<'a, T>,
    /// The output, not overlapping the image or the filter.
    pub(crate) output: MatrixViewMut<'a, T>,
    /// `(OH, OW)`, checked against the border.
    pub(crate) out_shape: (usize, usize),
    /// Border, padding, flip, algorithm and block.
    pub(crate) options: &'o ConvOptions,
}

impl<T: ConvElement> ConvCall<'_, '_, T> {
    /// The filter side `K`.
    pub(crate) fn k(&self) -> usize {
        self.filter.rows()
    }

    /// The anchor the border and flip give.
    pub(crate) fn pad(&self) -> usize {
        anchor(self.k(), self.options.border, self.options.flip)
    }

    /// The padding the kernels apply (`Zero` for `Valid`).
    pub(crate) fn padding(&self) -> Padding {
        kernel_padding(self.options.border, self.options.padding)
    }

    /// The arguments every conv entry starts with, in order: the image, the
    /// filter and the output pointers, then `H`, `W`, `OH`, `OW` as `i64`.
    fn shape_args(&mut self) -> KernelArgs {
        let (h, w) = self.image.shape();
        let mut args = KernelArgs::new();
        args.input(&self.image.data())
            .input(&self.filter.data())
            .output(&mut self.output.data_mut())
            .scalar(h as i64)
            .scalar(w as i64)
            .scalar(self.out_shape.0 as i64)
            .scalar(self.out_shape.1 as i64);
        args
    }

    /// The arguments of an [`ENTRY_PARAMS`] entry (the direct kernels and
    /// the block kernel), in order: [`Self::shape_args`], then five `i32`
    /// (`K`, the anchor, the padding, flip and `stride`, the block kernel's
    /// shared-tile pitch, 0 for the others).
    pub(crate) fn entry_args(&mut self, stride: usize) -> KernelArgs {
        let (k, pad, padding) = (self.k(), self.pad(), self.padding());
        let mut args = self.shape_args();
        args.scalar(k as i32)
            .scalar(pad as i32)
            .scalar(padding as i32)
            .scalar(self.options.flip as i32)
            .scalar(stride as i32);
        args
    }

    /// The first ten arguments of the strip and register-tile entries, in
    /// order: [`Self::shape_args`], then three `i32` (the anchor, the
    /// padding, flip); each kernel appends its own.
    pub(crate) fn border_args(&mut self) -> KernelArgs {
        let (pad, padding) = (self.pad(), self.padding());
        let mut args = self.shape_args();
        args.scalar(pad as i32)
            .scalar(padding as i32)
            .scalar(self.options.flip as i32);
        args
    }
}

/// The entry point `algorithm` uses for `T` and filter side `k`.
pub(crate) fn conv_entry<T: ConvElement>(algorithm: ConvAlgorithm, k: usize) -> String {
    let sfx = T::SUFFIX;
    match algorithm {
        ConvAlgorithm::TiledHalo if k <= TILED_SPECIALISED_MAX_K => {
            format!("conv_tiled_k{k}_{sfx}")
        }
        ConvAlgorithm::TiledHalo => format!("conv_tiled_generic_{sfx}"),
        other => format!("conv_{}_{sfx}", other.name()),
    }
}

/// The conv module for `T`: every algorithm's entry points (one module per
/// type, so one `__constant__` filter per type and context).
pub(crate) fn conv_module<T: ConvElement>() -> ModuleSource {
    conv_module_with::<T>(&ConvPolicy::default_for::<T>(TABLE_ARCH))
}

/// The name of [`conv_module_with`]'s module: it depends on the block
/// kernel's fields only, and names one source.
fn conv_module_name<T: ConvElement>(tuning: &ConvPolicy) -> String {
    let base = ConvPolicy::default_for::<T>(TABLE_ARCH);
    let block_fields = |t: &ConvPolicy| (t.rows_per_thread, t.reg_filter_max_k, t.load_batch);
    if block_fields(tuning) == block_fields(&base) {
        format!("linalg_conv_{}", T::SUFFIX)
    } else {
        format!(
            "linalg_conv_{}_r{}_f{}_b{}",
            T::SUFFIX,
            tuning.rows_per_thread,
            tuning.reg_filter_max_k,
            tuning.load_batch
        )
    }
}

/// The conv module for `T` built with `tuning` (named after it when it is
/// not the table's, so each tuning is its own module and cache entry).
pub(crate) fn conv_module_with<T: ConvElement>(tuning: &ConvPolicy) -> ModuleSource {
    let name = conv_module_name::<T>(tuning);
    let direct = |source: &str| {
        format!("conv_direct<{source}>(img, filt, out, H, W, OH, OW, K, pad, padding, flip)")
    };
    let mut module = ModuleSource::new(name)
        .element::<T>("conv_t")
        .element::<T::Acc>("conv_acc_t")
        .define("CONV_ROWS_PER_THREAD", tuning.rows_per_thread)
        .define("CONV_REG_FILTER_MAX_K", tuning.reg_filter_max_k)
        .define("CONV_LOAD_BATCH", tuning.load_batch)
        .source(parprims_kernels::CONV)
        .entry(
            conv_entry::<T>(ConvAlgorithm::Global, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_GLOBAL"),
            Some(1024),
        )
        .entry(
            conv_entry::<T>(ConvAlgorithm::SharedFilter, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_SHARED"),
            Some(1024),
        )
        .entry(
            conv_entry::<T>(ConvAlgorithm::ConstantFilter, 1),
            ENTRY_PARAMS,
            &direct("CONV_FILTER_CONSTANT"),
            Some(1024),
        );
    for k in 1..=TILED_SPECIALISED_MAX_K {
        module = module.entry(
            conv_entry::<T>(ConvAlgorithm::TiledHalo, k),
            ENTRY_PARAMS,
            &format!(
                "conv_tiled<{k}>(img, filt, out, H, W, OH, OW, K, pad, padding, flip, stride)"
            ),
            Some(1024),
        );
    }
    module.entry(
        conv_entry::<T>(ConvAlgorithm::TiledHalo, CONV_MAX_K),
        ENTRY_PARAMS,
        "conv_tiled<0>(img, filt, out, H, W, OH, OW, K, pad, padding, flip, stride)",
        Some(1024),
    )
}

/// The store key of [`conv_module_with`]'s source: the element type and
/// every block-kernel field (the direct kernels have none).
fn conv_module_key<T: ConvElement>(policy: &ConvPolicy) -> String {
    format!(
        "linalg_conv_{}_r{}_f{}_b{}",
        T::SUFFIX,
        policy.rows_per_thread,
        policy.reg_filter_max_k,
        policy.load_batch
    )
}

/// The kernel `entry` of the conv module for `T` and `policy`, from the
/// context's kernel store (built, compiled or loaded on first use only).
pub(crate) fn conv_kernel<T: ConvElement>(
    gpu: &Gpu,
    policy: &ConvPolicy,
    entry: &str,
) -> Result<Kernel> {
    gpu.stored_kernel(&conv_module_key::<T>(policy), entry, || {
        conv_module_with::<T>(policy)
    })
}

/// The conv module for `T` and `policy` itself (for ConstantFilter's
/// `__constant__` filter symbol), from the context's store under the same
/// key as its kernels.
pub(crate) fn stored_conv_module<T: ConvElement>(gpu: &Gpu, policy: &ConvPolicy) -> Result<Module> {
    gpu.stored_module(&conv_module_key::<T>(policy), || {
        conv_module_with::<T>(policy)
    })
}

/// The strip entry for `T` and filter side `k`.
pub(crate) fn strip_entry<T: ConvElement>(k: usize) -> String {
    format!("conv_strip_k{k}_{}", T::SUFFIX)
}

/// The entry parameters of the strip kernels.
const STRIP_PARAMS: &str = "const conv_t* img, const conv_t* filt, conv_t* out, i64 H, i64 W, \
     i64 OH, i64 OW, i32 pad, i32 padding, i32 flip, i32 strip_rows, i32 aligned, \
     i64 col_base, i64 col_strips, i32 claimed, u64* state, u32 epoch";

/// The name of [`strip_module`]'s module: the element type and every
/// compile-time field, so a name stands for one source.
pub(crate) fn strip_module_name<T: ConvElement>(tuning: &StripPolicy) -> String {
    format!(
        "linalg_conv_strip_{}_v{}_p{}_s{}_r{}_h{}",
        T::SUFFIX,
        tuning.elems_per_lane,
        tuning.prefetch_rows,
        tuning.stores.code(),
        tuning.max_registers,
        u8::from(tuning.trim_halo)
    )
}

/// The strip module for `T` and `tuning`: entries for K = 1 … [`STRIP_MAX_K`],
/// named after the compile-time part of the tuning (`strip_rows` and the
/// schedule are run-time arguments).
pub(crate) fn strip_module<T: ConvElement>(tuning: &StripPolicy) -> ModuleSource {
    let name = strip_module_name::<T>(tuning);
    let mut module = ModuleSource::new(name)
        .element::<T>("conv_t")
        .element::<T::Acc>("conv_acc_t")
        // conv.cu supplies the padding, FMA and filter-index helpers; its
        // own tuning constants are unused here.
        .define("CONV_ROWS_PER_THREAD", 1)
        .define("CONV_REG_FILTER_MAX_K", 0)
        .define("CONV_LOAD_BATCH", 1)
        .define("CONV_STRIP_VEC", tuning.elems_per_lane)
        .define("CONV_STRIP_PREFETCH", tuning.prefetch_rows)
        .define("CONV_STRIP_STORES", tuning.stores.code())
        .define("CONV_STRIP_TRIM", u8::from(tuning.trim_halo))
        .source(parprims_kernels::TILE_STATUS)
        .source(parprims_kernels::CONV)
        .source(parprims_kernels::CONV_STRIP);
    if tuning.max_registers != 0 {
        module = module.option(format!("--maxrregcount={}", tuning.max_registers));
    }
    // `__launch_bounds__(1024)` caps registers at 64 (any block size
    // launches); an explicit --maxrregcount (≤ 64, so any block size still
    // launches) only applies to entries without launch bounds.
    let bounds = (tuning.max_registers == 0).then_some(1024);
    for k in 1..=STRIP_MAX_K {
        module = module.entry(
            strip_entry::<T>(k),
            STRIP_PARAMS,
            &format!(
                "conv_strip<{k}>(img, filt, out, H, W, OH, OW, pad, padding, flip, strip_rows, \
                 aligned, col_base, col_strips, claimed, state, epoch)"
            ),
            bounds,
        );
    }
    module
}

/// The strip kernel for `T`, filter side `k` and `policy`, from the
/// context's kernel store (the module name holds every compile-time field).
pub(crate) fn strip_kernel<T: ConvElement>(
    gpu: &Gpu,
    policy: &StripPolicy,
    k: usize,
) -> Result<Kernel> {
    gpu.stored_kernel(
        &strip_module_name::<T>(policy),
        &strip_entry::<T>(k),
        || strip_module::<T>(policy),
    )
}

/// Every module `conv2d` can request: one per element type, the strip
/// module of each type's tuning (if it has one), and the strip modules of
/// the [`STRIP_CANDIDATES`] the tuning sweep compares (`f32`).
pub(crate) fn register_tile_entry<T: ConvElement>(k: usize) -> String {
    format!("conv_register_tile_k{k}_{}", T::SUFFIX)
}

const REGISTER_TILE_PARAMS: &str = "const conv_t* img, const conv_t* filt, conv_t* out, i64 H, \
     i64 W, i64 OH, i64 OW, i32 pad, i32 padding, i32 flip, i64 col_base, i32 aligned";

pub(crate) fn register_tile_module_name<T: ConvElement>(tuning: &RegisterTilePolicy) -> String {
    format!(
        "linalg_conv_register_tile_{}_r{}_g{}_w{}_m{}{}",
        T::SUFFIX,
        tuning.rows_per_thread,
        tuning.column_groups,
        tuning.warps,
        tuning.min_blocks,
        if tuning.aligned_stores { "_a" } else { "" }
    )
}

/// The register-tile module for `T` and `tuning`: entries for K = 1 …
/// [`REGISTER_TILE_MAX_K`], each bounded to the policy's block of
/// `32·warps` threads and, when set, its `min_blocks` per SM.
pub(crate) fn register_tile_module<T: ConvElement>(tuning: &RegisterTilePolicy) -> ModuleSource {
    let mut module = ModuleSource::new(register_tile_module_name::<T>(tuning))
        .element::<T>("conv_t")
        .element::<T::Acc>("conv_acc_t")
        // conv.cu supplies the padding, FMA and filter-index helpers; its
        // own tuning constants are unused here.
        .define("CONV_ROWS_PER_THREAD", 1)
        .define("CONV_REG_FILTER_MAX_K", 0)
        .define("CONV_LOAD_BATCH", 1)
        .define("CONV_RT_ROWS", tuning.rows_per_thread)
        .define("CONV_RT_GROUPS", tuning.column_groups)
        .define("CONV_RT_WARPS", tuning.warps)
        .define("CONV_RT_ALIGNED_STORES", u32::from(tuning.aligned_stores))
        .source(parprims_kernels::CONV)
        .source(parprims_kernels::CONV_REGISTER_TILE);
    let threads = 32 * tuning.warps;
    for k in 1..=REGISTER_TILE_MAX_K {
        let (name, body) = (
            register_tile_entry::<T>(k),
            format!(
                "conv_register_tile<{k}>(img, filt, out, H, W, OH, OW, pad, padding, flip, \
                 col_base, aligned)"
            ),
        );
        module = if tuning.min_blocks == 0 {
            module.entry(name, REGISTER_TILE_PARAMS, &body, Some(threads))
        } else {
            module.entry_with_min_blocks(
                name,
                REGISTER_TILE_PARAMS,
                &body,
                threads,
                tuning.min_blocks,
            )
        };
    }
    module
}

pub(crate) fn register_tile_kernel<T: ConvElement>(
    gpu: &Gpu,
    policy: &RegisterTilePolicy,
    k: usize,
) -> Result<Kernel> {
    gpu.stored_kernel(
        &register_tile_module_name::<T>(policy),
        &register_tile_entry::<T>(k),
        || register_tile_module::<T>(policy),
    )
}

pub(crate) fn conv_kernel_catalog() -> Vec<ModuleSource> {
    let mut modules = vec![
        conv_module::<f32>(),
        conv_module::<f64>(),
        conv_module::<i32>(),
        conv_module::<f16>(),
        conv_module::<bf16>(),
    ];
    let mut strips: Vec<ModuleSource> = Vec::new();
    let mut add = |module: ModuleSource| {
        if !strips.iter().any(|m| m.name() == module.name()) {
            strips.push(module);
        }
    };
    add_table_strips::<f32>(&mut add);
    add_table_strips::<f64>(&mut add);
    add_table_strips::<i32>(&mut add);
    add_table_strips::<f16>(&mut add);
    add_table_strips::<bf16>(&mut add);
    for t in STRIP_CANDIDATES {
        add(strip_module::<f32>(&t));
    }
    for t in REGISTER_TILE_CANDIDATES {
        add(register_tile_module::<f32>(&t));
        add(register_tile_module::<i32>(&t));
    }
    modules.extend(strips);
    modules
}

/// Hands `add` the strip module of each strip policy in `T`'s table policy.
fn add_table_strips<T: ConvElement>(add: &mut impl FnMut(ModuleSource)) {
    let table = ConvPolicy::default_for::<T>(TABLE_ARCH);
    for t in table.strip.iter().chain(table.strip_wide.iter()) {
        add(strip_module::<T>(t));
        if t.stores == StripStores::Vector {
            add(strip_module::<T>(&t.scalar_twin()));
        }
    }
    for t in table
        .register_tile
        .iter()
        .chain(table.register_tile_wide.iter())
    {
        add(register_tile_module::<T>(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::policy::StripSchedule;

    #[test]
    fn entries_are_in_the_module() {
        for k in 1..=CONV_MAX_K {
            for algorithm in ConvAlgorithm::ALL {
                let entry = conv_entry::<f32>(algorithm, k);
                assert!(conv_module::<f32>().entries().contains(&entry), "{entry}");
            }
        }
        let names: Vec<String> = conv_kernel_catalog()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(
            names[..3],
            ["linalg_conv_f32", "linalg_conv_f64", "linalg_conv_i32"]
        );
        // Every strip candidate's module is listed (the sweep compiles them).
        for t in STRIP_CANDIDATES {
            let name = strip_module::<f32>(&t).name().to_owned();
            assert!(names.contains(&name), "{name}");
        }
        // So is the scalar-store twin of each table strip policy.
        let table = ConvPolicy::default_for::<f32>(TABLE_ARCH);
        for t in table.strip.iter().chain(table.strip_wide.iter()) {
            let name = strip_module::<f32>(&t.scalar_twin()).name().to_owned();
            assert!(names.contains(&name), "{name}");
        }
    }

    #[test]
    fn register_tile_modules_are_in_the_catalog() {
        let names: Vec<String> = conv_kernel_catalog()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        for t in REGISTER_TILE_CANDIDATES {
            for name in [
                register_tile_module::<f32>(&t).name().to_owned(),
                register_tile_module::<i32>(&t).name().to_owned(),
            ] {
                assert!(names.contains(&name), "{name}");
            }
        }
        for table in [
            ConvPolicy::default_for::<f32>(TABLE_ARCH),
            ConvPolicy::default_for::<i32>(TABLE_ARCH),
        ] {
            for t in table
                .register_tile
                .iter()
                .chain(table.register_tile_wide.iter())
            {
                let module = register_tile_module::<f32>(t);
                assert!(names.contains(&module.name().to_owned()));
                let entries: Vec<String> = (1..=REGISTER_TILE_MAX_K)
                    .map(register_tile_entry::<f32>)
                    .collect();
                assert_eq!(module.entries(), &entries[..]);
            }
        }
        // Every compile-time field names the module.
        let base = REGISTER_TILE_CANDIDATES[0];
        let others = [
            RegisterTilePolicy {
                rows_per_thread: 2,
                ..base
            },
            RegisterTilePolicy {
                column_groups: 1,
                ..base
            },
            RegisterTilePolicy { warps: 2, ..base },
            RegisterTilePolicy {
                min_blocks: 0,
                ..base
            },
            RegisterTilePolicy {
                aligned_stores: !base.aligned_stores,
                ..base
            },
        ];
        for other in others {
            assert_ne!(
                register_tile_module_name::<f32>(&other),
                register_tile_module_name::<f32>(&base)
            );
        }
        assert_ne!(
            register_tile_module_name::<f32>(&base),
            register_tile_module_name::<i32>(&base)
        );
    }

    #[test]
    fn modules_are_named_by_their_compile_time_policy() {
        let base = ConvPolicy::default_for::<f32>(TABLE_ARCH);
        let other = ConvPolicy {
            rows_per_thread: 4,
            strip: None,
            strip_wide: None,
            register_tile: None,
            register_tile_wide: None,
            ..base
        };
        assert_eq!(conv_module::<f32>().name(), "linalg_conv_f32");
        // The stored-kernel lookup names modules without building them.
        assert_eq!(
            conv_module_name::<f32>(&other),
            conv_module_with::<f32>(&other).name()
        );
        assert_eq!(
            conv_module_name::<f64>(&ConvPolicy::default_for::<f64>(TABLE_ARCH)),
            "linalg_conv_f64"
        );
        assert_eq!(conv_module_key::<f32>(&base), "linalg_conv_f32_r8_f5_b10");
        assert_ne!(
            conv_module_key::<f32>(&base),
            conv_module_key::<f32>(&other)
        );
        for t in STRIP_CANDIDATES {
            assert_eq!(strip_module_name::<f32>(&t), strip_module::<f32>(&t).name());
        }
        assert_eq!(conv_module_with::<f32>(&base).name(), "linalg_conv_f32");
        assert_eq!(
            conv_module_with::<f32>(&other).name(),
            "linalg_conv_f32_r4_f5_b10"
        );
        assert!(conv_module_with::<f32>(&other)
            .code()
            .contains("#define CONV_ROWS_PER_THREAD 4"));
    }

    #[test]
    fn modules_have_every_k_and_are_named_by_compile_time_tuning() {
        let t = STRIP_CANDIDATES[0];
        let m = strip_module::<f32>(&t);
        assert_eq!(m.name(), "linalg_conv_strip_f32_v4_p2_s2_r0_h0");
        for k in 1..=STRIP_MAX_K {
            assert!(m.entries().contains(&strip_entry::<f32>(k)));
        }
        assert!(m.code().contains("#define CONV_STRIP_VEC 4"));
        assert!(m.code().contains("#define CONV_STRIP_STORES 2"));
        // Each way of storing is a module of its own.
        for (stores, code) in [(StripStores::Scalar, 0), (StripStores::Vector, 1)] {
            let other = strip_module::<f32>(&StripPolicy { stores, ..t });
            assert_eq!(
                other.name(),
                format!("linalg_conv_strip_f32_v4_p2_s{code}_r0_h0")
            );
            assert!(other
                .code()
                .contains(&format!("#define CONV_STRIP_STORES {code}")));
        }
        let other_rows = StripPolicy { strip_rows: 7, ..t };
        assert_eq!(strip_module::<f32>(&other_rows).name(), m.name());
        // Fixed and claimed pieces share a module (a kernel argument).
        let claimed = StripPolicy {
            schedule: StripSchedule::Claimed,
            strip_rows: 8,
            ..t
        };
        assert_eq!(strip_module::<f32>(&claimed).name(), m.name());
        let regs = StripPolicy {
            max_registers: 48,
            ..t
        };
        assert!(strip_module::<f32>(&regs)
            .options()
            .contains(&"--maxrregcount=48".to_owned()));
        // Trimmed halo rows are a module of their own.
        let trimmed = strip_module::<f32>(&StripPolicy {
            trim_halo: true,
            ..t
        });
        assert_eq!(trimmed.name(), "linalg_conv_strip_f32_v4_p2_s2_r0_h1");
        assert!(trimmed.code().contains("#define CONV_STRIP_TRIM 1"));
        assert!(m.code().contains("#define CONV_STRIP_TRIM 0"));
    }
}
