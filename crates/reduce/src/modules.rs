//! The reduce crate's kernel modules: the reducer functors the kernels are
//! templated on (`kernels/cuda/reduce/reduce.cuh` states their contract),
//! the entry points of every method, and the catalog.
//!
//! One *built-in* module per element type holds every method's entries for
//! the built-in operators (sum, product, min, max, and the bit operators on
//! integers), the arg-reductions and minmax. A custom operator or a
//! transform gets a module of its own, keyed by a fingerprint of its CUDA
//! text.

use gpu_core::op::{is_builtin, register_operator_prelude, register_type};
use gpu_core::{Element, Gpu, Kernel, Max, Min, ModuleSource, Operator, Product, Result, Sum};

use crate::transform::Transform;

/// Threads per block of the single-pass kernel.
pub(crate) const SINGLE_PASS_BLOCK_THREADS: u32 = 256;
/// 16-byte loads each thread keeps in flight in the single-pass kernel.
pub(crate) const SINGLE_PASS_UNROLL: u32 = 4;
/// Threads per block of the lesson's trees (one element per thread).
pub(crate) const TREE_BLOCK_THREADS: u32 = 1024;

/// The three kernels a reducer gets: the single pass, and the first and
/// later levels of each tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// `reduce_sp_*`.
    SinglePass,
    /// `reduce_gtree_first_*` / `reduce_gtree_next_*`.
    GlobalTreeFirst,
    /// Later levels of the global-memory tree.
    GlobalTreeNext,
    /// `reduce_stree_first_*`.
    SharedTreeFirst,
    /// Later levels of the shared-memory tree.
    SharedTreeNext,
}

impl Method {
    fn prefix(self) -> &'static str {
        match self {
            Method::SinglePass => "reduce_sp",
            Method::GlobalTreeFirst => "reduce_gtree_first",
            Method::GlobalTreeNext => "reduce_gtree_next",
            Method::SharedTreeFirst => "reduce_stree_first",
            Method::SharedTreeNext => "reduce_stree_next",
        }
    }
}

/// What a reducer computes, as the module sees it: an operator over the
/// (mapped) items, an arg-reduction, or minmax.
pub(crate) enum Reducer<'a, T: Element, U: Element, O: Operator<U>> {
    /// `op` over `map(x)` (the identity map for a plain reduction).
    Fold {
        /// The operator.
        op: &'a O,
        /// The map fused into the load; `None` is the identity.
        map: Option<&'a Transform<T, U>>,
    },
    /// Index of the largest (`max = true`) or smallest item.
    Arg {
        /// argmax when true, argmin otherwise.
        max: bool,
    },
    /// The smallest and the largest item.
    MinMax,
}

/// The reducer's struct name in the module (unique per module).
fn reducer_name<T: Element, U: Element, O: Operator<U>>(reducer: &Reducer<'_, T, U, O>) -> String {
    match reducer {
        Reducer::Fold { op, map: None } => format!("red_{}", op.name()),
        Reducer::Fold { op, map: Some(map) } => format!("red_{}_{}", map.name(), op.name()),
        Reducer::Arg { max: true } => "red_argmax".into(),
        Reducer::Arg { max: false } => "red_argmin".into(),
        Reducer::MinMax => "red_minmax".into(),
    }
}

/// The entry point of `method` for `reducer` on `T`.
pub(crate) fn entry_name<T: Element, U: Element, O: Operator<U>>(
    method: Method,
    reducer: &Reducer<'_, T, U, O>,
) -> String {
    format!(
        "{}_{}_{}",
        method.prefix(),
        T::SUFFIX,
        &reducer_name(reducer)[4..]
    )
}

/// The CUDA type `T` is combined in (`T`, or its register type).
fn reg<T: Element>() -> &'static str {
    register_type::<T>().unwrap_or(T::CUDA_TYPE)
}

/// The CUDA text of a reducer struct (and the operator functor it uses).
fn reducer_source<T: Element, U: Element, O: Operator<U>>(
    reducer: &Reducer<'_, T, U, O>,
) -> String {
    let name = reducer_name(reducer);
    let t = T::CUDA_TYPE;
    let rt = reg::<T>();
    match reducer {
        Reducer::Fold { op, map } => {
            let u = U::CUDA_TYPE;
            let ru = reg::<U>();
            let op_struct = format!("op_{}", &name[4..]);
            let functor = register_operator_prelude::<U, O>(op, &op_struct);
            let commutative = is_builtin::<O>();
            let map_body = match map {
                None => format!("return widen<{ru}>(x_in);"),
                Some(map) => format!(
                    "const {rt} x = widen<{rt}>(x_in); (void)x; (void)i; return ({ru})({expr});",
                    expr = map.cuda_expr()
                ),
            };
            let support = map.map(|m| m.cuda_support().to_owned()).unwrap_or_default();
            format!(
                "{support}\n{functor}\nstruct {name} {{\n    typedef {t} input_type;\n    \
                 typedef {ru} value_type;\n    \
                 static constexpr bool commutative = {commutative};\n    \
                 static __device__ __forceinline__ {ru} identity() {{ return {op_struct}::identity(); }}\n    \
                 static __device__ __forceinline__ {ru} map({t} x_in, u64 i) {{ {map_body} }}\n    \
                 static __device__ __forceinline__ {ru} combine({ru} a, {ru} b) {{ return {op_struct}::combine(a, b); }}\n    \
                 static __device__ __forceinline__ {ru} accumulate({ru} a, {t} x, u64 i) {{ return combine(a, map(x, i)); }}\n    \
                 static __device__ __forceinline__ void store({ru} v, void* out0, void*) {{ *reinterpret_cast<{u}*>(out0) = narrow<{u}>(v); }}\n}};\n"
            )
        }
        Reducer::Arg { max } => {
            let better = if *max { ">" } else { "<" };
            format!(
                "struct {name} {{\n    typedef {t} input_type;\n    typedef arg_pair<{rt}> value_type;\n    \
                 static constexpr bool commutative = true;\n    \
                 static __device__ __forceinline__ value_type identity() {{ value_type p; p.value = ({rt})0; p.index = ARG_NONE; return p; }}\n    \
                 static __device__ __forceinline__ value_type map({t} x, u64 index) {{ value_type p; p.value = widen<{rt}>(x); p.index = index; return p; }}\n    \
                 static __device__ __forceinline__ value_type combine(value_type a, value_type b) {{\n        \
                 if (a.index == ARG_NONE) return b;\n        if (b.index == ARG_NONE) return a;\n        \
                 const bool a_nan = value_is_nan(a.value), b_nan = value_is_nan(b.value);\n        \
                 if (a_nan || b_nan) {{ if (a_nan && b_nan) return a.index < b.index ? a : b; return a_nan ? a : b; }}\n        \
                 if (a.value == b.value) return a.index < b.index ? a : b;\n        \
                 return b.value {better} a.value ? b : a;\n    }}\n    \
                 static __device__ __forceinline__ value_type accumulate(value_type a, {t} x_in, u64 i) {{\n        \
                 // x comes after every item of a: it wins only by being strictly better,\n        \
                 // or the first NaN (ties keep a's lower index).\n        \
                 const {rt} x = widen<{rt}>(x_in);\n        \
                 const bool take = a.index == ARG_NONE || (!value_is_nan(a.value) && (value_is_nan(x) || x {better} a.value));\n        \
                 if (take) {{ a.value = x; a.index = i; }}\n        return a;\n    }}\n    \
                 static __device__ __forceinline__ void store(value_type v, void* out0, void* out1) {{\n        \
                 *reinterpret_cast<{t}*>(out0) = narrow<{t}>(v.value);\n        *reinterpret_cast<u64*>(out1) = v.index;\n    }}\n}};\n"
            )
        }
        Reducer::MinMax => format!(
            "struct {name} {{\n    typedef {t} input_type;\n    typedef min_max_pair<{rt}> value_type;\n    \
             static constexpr bool commutative = true;\n    \
             static __device__ __forceinline__ value_type identity() {{ value_type p; p.min = widen<{rt}>({highest}); p.max = widen<{rt}>({lowest}); return p; }}\n    \
             static __device__ __forceinline__ value_type map({t} x, u64) {{ value_type p; p.min = widen<{rt}>(x); p.max = p.min; return p; }}\n    \
             static __device__ __forceinline__ value_type combine(value_type a, value_type b) {{ value_type p; p.min = min_of(a.min, b.min); p.max = max_of(a.max, b.max); return p; }}\n    \
             static __device__ __forceinline__ value_type accumulate(value_type a, {t} x, u64 i) {{ return combine(a, map(x, i)); }}\n    \
             static __device__ __forceinline__ void store(value_type v, void* out0, void*) {{\n        \
             {t}* out = reinterpret_cast<{t}*>(out0);\n        out[0] = narrow<{t}>(v.min);\n        out[1] = narrow<{t}>(v.max);\n    }}\n}};\n",
            highest = T::highest().cuda_literal(),
            lowest = T::lowest().cuda_literal(),
        ),
    }
}

/// The CUDA type of a reducer's value (what the trees' work buffers hold).
pub(crate) fn value_bytes<T: Element, U: Element, O: Operator<U>>(
    reducer: &Reducer<'_, T, U, O>,
) -> usize {
    match reducer {
        Reducer::Fold { .. } => U::BYTES.max(4),
        Reducer::Arg { .. } => 16,
        Reducer::MinMax => 2 * T::BYTES.max(4),
    }
}

/// Adds the reducer and its five entry points to `module`.
fn add_reducer<T: Element, U: Element, O: Operator<U>>(
    module: ModuleSource,
    reducer: &Reducer<'_, T, U, O>,
) -> ModuleSource {
    let name = reducer_name(reducer);
    let t = T::CUDA_TYPE;
    let (sp, tree) = (SINGLE_PASS_BLOCK_THREADS, TREE_BLOCK_THREADS);
    let unroll = SINGLE_PASS_UNROLL;
    module
        .source(&reducer_source(reducer))
        .entry(
            entry_name(Method::SinglePass, reducer),
            &format!(
                "const {t}* in, u64 n, void* out0, void* out1, u64* state, u32 epoch, u32 vector_ok, \
                 u64* done_flag, u64 seq"
            ),
            &format!(
                "reduce_single_pass<{name}, {sp}, {unroll}>(in, n, out0, out1, state, epoch, vector_ok, \
                 done_flag, seq)"
            ),
            Some(sp),
        )
        .entry(
            entry_name(Method::GlobalTreeFirst, reducer),
            &format!("const {t}* in, u64 n, void* work, void* partials, void* out0, void* out1"),
            &format!("reduce_global_tree_first<{name}, {tree}>(in, n, work, partials, out0, out1)"),
            Some(tree),
        )
        .entry(
            entry_name(Method::GlobalTreeNext, reducer),
            "void* data, u64 n, void* partials, void* out0, void* out1",
            &format!("reduce_global_tree_next<{name}, {tree}>(data, n, partials, out0, out1)"),
            Some(tree),
        )
        .entry(
            entry_name(Method::SharedTreeFirst, reducer),
            &format!("const {t}* in, u64 n, void* partials, void* out0, void* out1"),
            &format!("reduce_shared_tree<{name}, {tree}, true>(in, n, partials, out0, out1)"),
            Some(tree),
        )
        .entry(
            entry_name(Method::SharedTreeNext, reducer),
            "const void* in, u64 n, void* partials, void* out0, void* out1",
            &format!(
                "reduce_shared_tree<{name}, {tree}, false>(reinterpret_cast<const {t}*>(in), n, partials, out0, out1)"
            ),
            Some(tree),
        )
}

/// The headers and bodies every reduce module starts with.
fn headers(name: String) -> ModuleSource {
    ModuleSource::new(name)
        .source(parprims_kernels::WARP)
        .source(parprims_kernels::TILE_STATUS)
        .source(parprims_kernels::REDUCE)
        .source(parprims_kernels::REDUCE_SINGLE_PASS)
        .source(parprims_kernels::REDUCE_TREE)
}

/// Adds the fold reducer of a built-in operator `op` on `T`.
fn add_builtin<T: Element, O: Operator<T>>(module: ModuleSource, op: &O) -> ModuleSource {
    add_reducer::<T, T, O>(module, &Reducer::Fold { op, map: None })
}

/// The built-in module of `T`: every method for sum, product, min, max
/// (and, or, xor on integers), argmax, argmin, minmax.
pub(crate) fn builtin_module<T: Element>() -> ModuleSource {
    let mut module = headers(format!("reduce_{}", T::SUFFIX));
    module = add_builtin::<T, _>(module, &Sum);
    module = add_builtin::<T, _>(module, &Product);
    module = add_builtin::<T, _>(module, &Max);
    module = add_builtin::<T, _>(module, &Min);
    if !T::IS_FLOAT {
        module = add_bitwise::<T>(module);
    }
    module = add_reducer::<T, T, Sum>(module, &Reducer::Arg { max: true });
    module = add_reducer::<T, T, Sum>(module, &Reducer::Arg { max: false });
    add_reducer::<T, T, Sum>(module, &Reducer::MinMax)
}

/// The bit operators' reducers of an integer `T` (through the CUDA text
/// alone: `T` is only known to be an integer at run time here).
fn add_bitwise<T: Element>(module: ModuleSource) -> ModuleSource {
    let mut module = module;
    for (name, identity, expr) in [
        ("and", T::lowest(), "(a & b)"),
        ("or", T::zero(), "(a | b)"),
        ("xor", T::zero(), "(a ^ b)"),
    ] {
        // `and`'s identity is all ones: -1 for signed, MAX for unsigned.
        let identity = if name == "and" {
            if T::IS_SIGNED {
                T::from_f64(-1.0)
            } else {
                T::highest()
            }
        } else {
            identity
        };
        let op = BitwiseText::<T> {
            name,
            identity,
            expr,
        };
        module = add_reducer::<T, T, _>(module, &Reducer::Fold { op: &op, map: None });
    }
    module
}

/// A bit operator over a generic `T` that is an integer at run time (the
/// built-in module of every integer type holds and, or, xor; the typed
/// API takes `BitAnd`, `BitOr`, `BitXor`, which need `IntElement`).
#[derive(Clone, Debug)]
struct BitwiseText<T: Element> {
    name: &'static str,
    identity: T,
    expr: &'static str,
}

impl<T: Element> Operator<T> for BitwiseText<T> {
    fn name(&self) -> String {
        self.name.into()
    }
    fn identity(&self) -> T {
        self.identity
    }
    fn combine(&self, a: T, b: T) -> T {
        // Byte by byte: exactly the integer bit operator.
        let mut out = a;
        let bytes = bytemuck::bytes_of_mut(&mut out);
        for (x, y) in bytes.iter_mut().zip(bytemuck::bytes_of(&b)) {
            *x = match self.name {
                "and" => *x & y,
                "or" => *x | y,
                _ => *x ^ y,
            };
        }
        out
    }
    fn cuda_combine(&self) -> String {
        self.expr.into()
    }
}

/// The module key and builder of `reducer` on `T`: the built-in module for
/// built-in operators without a map, the arg-reductions and minmax; a
/// module of its own otherwise.
pub(crate) fn reducer_kernel<T: Element, U: Element, O: Operator<U>>(
    gpu: &Gpu,
    method: Method,
    reducer: &Reducer<'_, T, U, O>,
) -> Result<Kernel> {
    let entry = entry_name(method, reducer);
    let custom = match reducer {
        Reducer::Fold { map, .. } => {
            map.is_some() || !is_builtin::<O>() || folds_another_type::<T, U>()
        }
        _ => false,
    };
    if !custom {
        let key = format!("reduce/builtin/{}", T::SUFFIX);
        return gpu.stored_kernel(&key, &entry, builtin_module::<T>);
    }
    let text = reducer_source(reducer);
    let fingerprint = gpu_core::kernel::fingerprint(&text);
    let key = format!("reduce/custom/{}/{}", T::SUFFIX, fingerprint);
    gpu.stored_kernel(&key, &entry, || {
        let name = format!("reduce_custom_{}_{}", T::SUFFIX, &fingerprint[..8]);
        add_reducer(headers(name), reducer)
    })
}

/// True when a built-in operator folds a type other than the input's (a
/// transform's output): the built-in module holds same-type folds only.
fn folds_another_type<T: Element, U: Element>() -> bool {
    std::any::TypeId::of::<T>() != std::any::TypeId::of::<U>()
}

/// Every built-in module (one per element type): what the kernel-compile
/// test compiles and `aot` embeds.
pub fn kernel_catalog() -> Vec<ModuleSource> {
    use gpu_core::{bf16, f16};
    vec![
        builtin_module::<i8>(),
        builtin_module::<u8>(),
        builtin_module::<i16>(),
        builtin_module::<u16>(),
        builtin_module::<i32>(),
        builtin_module::<u32>(),
        builtin_module::<i64>(),
        builtin_module::<u64>(),
        builtin_module::<f16>(),
        builtin_module::<bf16>(),
        builtin_module::<f32>(),
        builtin_module::<f64>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_say_method_type_and_reducer() {
        let r: Reducer<'_, f32, f32, Sum> = Reducer::Fold {
            op: &Sum,
            map: None,
        };
        assert_eq!(entry_name(Method::SinglePass, &r), "reduce_sp_f32_sum");
        let a: Reducer<'_, i32, i32, Sum> = Reducer::Arg { max: true };
        assert_eq!(
            entry_name(Method::SharedTreeNext, &a),
            "reduce_stree_next_i32_argmax"
        );
    }

    #[test]
    fn builtin_modules_hold_every_reducer() {
        let ints = builtin_module::<u8>();
        assert_eq!(ints.entries().len(), 10 * 5);
        assert!(ints.entries().iter().any(|e| e == "reduce_sp_u8_xor"));
        let floats = builtin_module::<f32>();
        assert_eq!(floats.entries().len(), 7 * 5);
        assert!(floats.code().contains("struct red_argmax"));
    }

    /// The modules built on demand (a custom operator, a transform to
    /// another type) compile with NVRTC and define their entries; the
    /// built-in ones are compiled by the workspace's kernel-compile test.
    #[test]
    fn custom_reducer_modules_compile() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let op = gpu_core::CustomOp::<i32>::new("last_nonzero", "(b != 0 ? b : a)", 0, |a, b| {
            if b != 0 {
                b
            } else {
                a
            }
        })
        .unwrap();
        let count = Transform::<gpu_core::f16, u64>::count_if("positive", "x > 0.0f", |x| {
            x > gpu_core::f16::ZERO
        })
        .unwrap();
        let custom: Reducer<'_, i32, i32, _> = Reducer::Fold { op: &op, map: None };
        let transform: Reducer<'_, gpu_core::f16, u64, _> = Reducer::Fold {
            op: &Sum,
            map: Some(&count),
        };
        let modules = [
            add_reducer(headers("reduce_test_custom".into()), &custom),
            add_reducer(headers("reduce_test_transform".into()), &transform),
        ];
        for module in &modules {
            let cubin = gpu_core::kernel::compile_cubin(module, "sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", module.name()));
            for entry in module.entries() {
                assert!(gpu_core::kernel::cubin_defines(&cubin, entry), "{entry}");
            }
        }
    }

    #[test]
    fn narrow_types_fold_in_their_register_type() {
        let module = builtin_module::<i8>();
        assert!(module.code().contains("typedef i32 value_type"));
    }
}
