//! Associative operators, shared by the GPU kernels and the CPU references.
//!
//! An operator knows its identity, how to combine two values on the CPU, and
//! how to say the same thing in CUDA C. [`operator_prelude`] turns that into a
//! small functor struct that every templated kernel takes as its `Op`
//! parameter, so the kernels never hard-code `+`.

use std::any::TypeId;
use std::fmt::Debug;
use std::sync::Arc;

use crate::element::{Element, IntElement};
use crate::error::{Error, Result};

/// An associative binary operator with an identity, usable in a scan.
///
/// `combine` must be associative; it need not be commutative (every parprims
/// kernel keeps operands in index order).
pub trait Operator<T: Element>: Clone + Debug + Send + Sync + 'static {
    /// Name used in kernel entry and module names (`sum`, `max`,
    /// `custom_<name>`): letters, digits and `_` only.
    ///
    /// ```
    /// use gpu_core::{Max, Operator};
    /// assert_eq!(Operator::<f32>::name(&Max), "max");
    /// ```
    fn name(&self) -> String;
    /// The identity: `combine(identity, x) == x`.
    ///
    /// ```
    /// use gpu_core::{BitAnd, Max, Operator, Sum};
    /// assert_eq!(Operator::<i32>::identity(&Sum), 0);
    /// assert_eq!(Operator::<i32>::identity(&Max), i32::MIN);
    /// assert_eq!(Operator::<u8>::identity(&BitAnd), 0xff);
    /// ```
    fn identity(&self) -> T;
    /// CPU combine, the reference the GPU result is checked against.
    ///
    /// ```
    /// use gpu_core::{Min, Operator, Sum};
    /// assert_eq!(Sum.combine(i32::MAX, 1), i32::MIN); // integers wrap, as in the kernels
    /// assert_eq!(Min.combine(2.5f64, -1.0), -1.0);
    /// ```
    fn combine(&self, a: T, b: T) -> T;
    /// CUDA C expression of type `T` over the parameters `a` and `b`.
    ///
    /// ```
    /// use gpu_core::{Operator, Sum};
    /// let expr = Operator::<u32>::cuda_combine(&Sum); // a CUDA C expression over `a` and `b`
    /// assert!(expr.contains('a') && expr.contains('b'));
    /// ```
    fn cuda_combine(&self) -> String;
    /// Extra CUDA C placed before the functor (helper functions), if any.
    ///
    /// ```
    /// use gpu_core::{Operator, Sum};
    /// assert!(Operator::<i32>::cuda_support(&Sum).is_empty()); // built-ins need no helpers
    /// ```
    fn cuda_support(&self) -> String {
        String::new()
    }
}

/// `a + b` (wrapping for integers). Identity 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum;
/// `max(a, b)` as `a > b ? a : b`. Identity: the type's lowest value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Max;
/// `min(a, b)` as `a < b ? a : b`. Identity: the type's highest value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Min;
/// `a * b` (wrapping for integers). Identity 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Product;
/// `a & b`, integers only. Identity: all ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitAnd;
/// `a | b`, integers only. Identity 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitOr;
/// `a ^ b`, integers only. Identity 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitXor;

impl<T: Element> Operator<T> for Sum {
    fn name(&self) -> String {
        "sum".into()
    }
    fn identity(&self) -> T {
        T::zero()
    }
    fn combine(&self, a: T, b: T) -> T {
        a.add(b)
    }
    fn cuda_combine(&self) -> String {
        "wrapping_add(a, b)".into()
    }
}

impl<T: Element> Operator<T> for Product {
    fn name(&self) -> String {
        "product".into()
    }
    fn identity(&self) -> T {
        T::one()
    }
    fn combine(&self, a: T, b: T) -> T {
        a.mul(b)
    }
    fn cuda_combine(&self) -> String {
        "wrapping_mul(a, b)".into()
    }
}

impl<T: Element> Operator<T> for Max {
    fn name(&self) -> String {
        "max".into()
    }
    fn identity(&self) -> T {
        T::lowest()
    }
    fn combine(&self, a: T, b: T) -> T {
        a.max_of(b)
    }
    fn cuda_combine(&self) -> String {
        "max_of(a, b)".into()
    }
}

impl<T: Element> Operator<T> for Min {
    fn name(&self) -> String {
        "min".into()
    }
    fn identity(&self) -> T {
        T::highest()
    }
    fn combine(&self, a: T, b: T) -> T {
        a.min_of(b)
    }
    fn cuda_combine(&self) -> String {
        "min_of(a, b)".into()
    }
}

macro_rules! bitwise {
    ($op:ident, $name:literal, $identity:expr, $cpu:ident, $cuda:literal) => {
        impl<T: IntElement> Operator<T> for $op {
            fn name(&self) -> String {
                $name.into()
            }
            fn identity(&self) -> T {
                $identity
            }
            fn combine(&self, a: T, b: T) -> T {
                a.$cpu(b)
            }
            fn cuda_combine(&self) -> String {
                $cuda.into()
            }
        }
    };
}
bitwise!(BitAnd, "and", T::all_ones(), bit_and, "(a & b)");
bitwise!(BitOr, "or", T::zero(), bit_or, "(a | b)");
bitwise!(BitXor, "xor", T::zero(), bit_xor, "(a ^ b)");

/// A caller's operator: CUDA C for the GPU, a Rust closure for the CPU
/// reference, and the identity.
///
/// ```
/// use gpu_core::{CustomOp, Operator};
/// // Sum of squares is not associative; "a + b" restricted to the low 16 bits is.
/// let op = CustomOp::<u32>::new("add16", "((a + b) & 0xffffu)", 0, |a, b| (a + b) & 0xffff).unwrap();
/// assert_eq!(op.combine(0xffff, 1), 0);
/// ```
#[derive(Clone)]
pub struct CustomOp<T: Element> {
    name: String,
    cuda_expr: String,
    cuda_support: String,
    identity: T,
    cpu: Arc<dyn Fn(T, T) -> T + Send + Sync>,
}

impl<T: Element> Debug for CustomOp<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomOp")
            .field("name", &self.name)
            .field("cuda_expr", &self.cuda_expr)
            .field("identity", &self.identity)
            .finish()
    }
}

impl<T: Element> CustomOp<T> {
    /// `name`: letters, digits and `_`, at most 48 characters (it becomes
    /// part of kernel names). `cuda_expr`: a CUDA C expression of type `T`
    /// over `a` and `b`. `cpu`: the same function in Rust.
    ///
    /// Whether `cuda_expr` compiles is only known when NVRTC sees it: the
    /// first operation using the operator returns [`Error::Compile`] with the
    /// NVRTC log if it does not.
    ///
    /// ```
    /// use gpu_core::{CustomOp, Operator};
    /// let product = CustomOp::<i64>::new("product", "a * b", 1, |a, b| a.wrapping_mul(b))?;
    /// assert_eq!(product.combine(6, 7), 42);
    /// assert_eq!(product.identity(), 1);
    /// assert!(CustomOp::<i64>::new("bad name!", "a * b", 1, |a, b| a * b).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(
        name: &str,
        cuda_expr: &str,
        identity: T,
        cpu: impl Fn(T, T) -> T + Send + Sync + 'static,
    ) -> Result<Self> {
        validate_identifier("name", name)?;
        validate_cuda_expression("cuda_expr", cuda_expr)?;
        Ok(CustomOp {
            name: name.to_owned(),
            cuda_expr: cuda_expr.to_owned(),
            cuda_support: String::new(),
            identity,
            cpu: Arc::new(cpu),
        })
    }

    /// Adds CUDA C helper definitions (device functions) placed before the
    /// functor, for expressions that call them.
    ///
    /// ```
    /// use gpu_core::{CustomOp, Operator};
    /// let gcd = |mut a: u32, mut b: u32| { while b != 0 { (a, b) = (b, a % b); } a };
    /// let op = CustomOp::<u32>::new("gcd", "gcd(a, b)", 0, gcd)?.with_support_code(
    ///     "__device__ unsigned gcd(unsigned a, unsigned b) { while (b) { unsigned t = a % b; a = b; b = t; } return a; }",
    /// )?;
    /// assert_eq!(op.combine(12, 18), 6);
    /// assert!(op.cuda_support().contains("__device__ unsigned gcd"));
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn with_support_code(mut self, cuda_source: &str) -> Result<Self> {
        if cuda_source.contains('\0') {
            return Err(Error::invalid("cuda_source", "contains a NUL byte"));
        }
        self.cuda_support = cuda_source.to_owned();
        Ok(self)
    }
}

impl<T: Element> Operator<T> for CustomOp<T> {
    fn name(&self) -> String {
        format!("custom_{}", self.name)
    }
    fn identity(&self) -> T {
        self.identity
    }
    fn combine(&self, a: T, b: T) -> T {
        (self.cpu)(a, b)
    }
    fn cuda_combine(&self) -> String {
        self.cuda_expr.clone()
    }
    fn cuda_support(&self) -> String {
        self.cuda_support.clone()
    }
}

/// Checks that `value` can be part of a CUDA identifier.
///
/// ```
/// use gpu_core::validate_identifier;
/// assert!(validate_identifier("name", "sum_of_squares").is_ok());
/// assert!(validate_identifier("name", "sum-of-squares").is_err());
/// assert!(validate_identifier("name", "").is_err());
/// ```
pub fn validate_identifier(what: &'static str, value: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 48
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            what,
            format!("{value:?}: use 1 to 48 ASCII letters, digits or '_'"),
        ))
    }
}

/// CUDA C for the functor struct `struct_name` of operator `op` on `T`:
///
/// ```text
/// struct op_t {
///     typedef i32 value_type;
///     static __device__ __forceinline__ i32 identity() { return ...; }
///     static __device__ __forceinline__ i32 combine(i32 a, i32 b) { return (...); }
/// };
/// ```
///
/// Kernels are templates over `<typename T, typename Op>` and call
/// `Op::combine` / `Op::identity()`.
pub fn operator_prelude<T: Element, O: Operator<T>>(op: &O, struct_name: &str) -> String {
    let t = T::CUDA_TYPE;
    format!(
        "{support}\nstruct {struct_name} {{\n    typedef {t} value_type;\n    \
         static __device__ __forceinline__ {t} identity() {{ return {identity}; }}\n    \
         static __device__ __forceinline__ {t} combine({t} a, {t} b) {{ return ({expr}); }}\n}};\n",
        support = op.cuda_support(),
        identity = op.identity().cuda_literal(),
        expr = op.cuda_combine(),
    )
}

/// Checks a caller's CUDA C expression before it goes into a module: not
/// empty, no NUL byte. (Whether it compiles is NVRTC's to say, on first
/// use.)
///
/// ```
/// use gpu_core::op::validate_cuda_expression;
/// assert!(validate_cuda_expression("cuda_expr", "a + b").is_ok());
/// assert!(validate_cuda_expression("cuda_expr", "  ").is_err());
/// ```
pub fn validate_cuda_expression(what: &'static str, expression: &str) -> Result<()> {
    if expression.trim().is_empty() {
        return Err(Error::invalid(what, "empty expression"));
    }
    if expression.contains('\0') {
        return Err(Error::invalid(what, "contains a NUL byte"));
    }
    Ok(())
}

/// The CUDA type a kernel combines `T` in when `T` is narrow: `i32` for
/// `i8`/`i16` (sign-extended), `u32` for `u8`/`u16` (zero-extended), `f32`
/// for `f16`/`bf16`; `None` for the 4- and 8-byte types, which are combined
/// as themselves. The kernels widen an item once when they load it and
/// narrow a result once when they store it (`widen`/`narrow` in
/// `common.cuh`): for integers the low bits of a wrapping sum or product,
/// and max, min and the bit operators of extended values, are exactly the
/// narrow type's own results; 16-bit floats are combined in f32 and
/// rounded once.
///
/// ```
/// use gpu_core::op::register_type;
/// assert_eq!(register_type::<u8>(), Some("u32"));
/// assert_eq!(register_type::<gpu_core::f16>(), Some("f32"));
/// assert_eq!(register_type::<i64>(), None);
/// ```
pub fn register_type<T: Element>() -> Option<&'static str> {
    if T::BYTES >= 4 {
        None
    } else if T::IS_FLOAT {
        Some("f32")
    } else if T::IS_SIGNED {
        Some("i32")
    } else {
        Some("u32")
    }
}

/// Whether `O` is a built-in operator ([`Sum`], [`Product`], [`Max`],
/// [`Min`], [`BitAnd`], [`BitOr`], [`BitXor`]): its CUDA expression is the
/// same text for every type, so it applies to a narrow type's register
/// type, and it is commutative.
///
/// ```
/// use gpu_core::op::is_builtin;
/// use gpu_core::{CustomOp, Sum};
/// assert!(is_builtin::<Sum>());
/// assert!(!is_builtin::<CustomOp<i32>>());
/// ```
pub fn is_builtin<O: 'static>() -> bool {
    let operator = TypeId::of::<O>();
    [
        TypeId::of::<Sum>(),
        TypeId::of::<Product>(),
        TypeId::of::<Max>(),
        TypeId::of::<Min>(),
        TypeId::of::<BitAnd>(),
        TypeId::of::<BitOr>(),
        TypeId::of::<BitXor>(),
    ]
    .contains(&operator)
}

/// Refuses a custom operator on a narrow `T` (its CUDA is written for `T`,
/// and the kernels combine narrow types in [`register_type`]) with a typed
/// [`Error::Unsupported`] naming `what` (the primitive).
///
/// ```
/// use gpu_core::op::check_register_operator;
/// use gpu_core::{CustomOp, Sum};
/// assert!(check_register_operator::<u8, _>("reduce", &Sum).is_ok());
/// let op = CustomOp::<u8>::new("add", "(a + b)", 0, |a, b| a.wrapping_add(b)).unwrap();
/// assert!(check_register_operator::<u8, _>("reduce", &op).is_err());
/// ```
pub fn check_register_operator<T: Element, O: Operator<T>>(what: &str, op: &O) -> Result<()> {
    if register_type::<T>().is_some() && !is_builtin::<O>() {
        return Err(Error::Unsupported(format!(
            "{what} of {} with the operator {}: {}-byte elements are combined in a 4-byte \
             register type, which the built-in operators (sum, product, max, min, and, or, xor) \
             support; a custom operator needs a 4- or 8-byte element type",
            T::SUFFIX,
            op.name(),
            T::BYTES
        )));
    }
    Ok(())
}

/// [`operator_prelude`] on the type the kernels combine `T` in: `T` itself
/// for the 4- and 8-byte types; for the narrow ones the built-in operator's
/// expression on [`register_type`], with `T`'s identity widened (an
/// identity on every widened value). Check the operator first with
/// [`check_register_operator`].
///
/// ```
/// use gpu_core::op::register_operator_prelude;
/// use gpu_core::Max;
/// let p = register_operator_prelude::<i8, _>(&Max, "op_t");
/// assert!(p.contains("typedef i32 value_type"));
/// ```
pub fn register_operator_prelude<T: Element, O: Operator<T>>(op: &O, struct_name: &str) -> String {
    match register_type::<T>() {
        None => operator_prelude::<T, O>(op, struct_name),
        Some(acc) => format!(
            "struct {struct_name} {{\n    typedef {acc} value_type;\n    \
             static __device__ __forceinline__ {acc} identity() {{ return widen<{acc}>({identity}); }}\n    \
             static __device__ __forceinline__ {acc} combine({acc} a, {acc} b) {{ return ({expr}); }}\n}};\n",
            identity = op.identity().cuda_literal(),
            expr = op.cuda_combine(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_identities() {
        for x in [-5i32, 0, 7, i32::MIN, i32::MAX] {
            assert_eq!(Sum.combine(Operator::<i32>::identity(&Sum), x), x);
            assert_eq!(Max.combine(Operator::<i32>::identity(&Max), x), x);
            assert_eq!(Min.combine(Operator::<i32>::identity(&Min), x), x);
            assert_eq!(BitAnd.combine(Operator::<i32>::identity(&BitAnd), x), x);
            assert_eq!(BitOr.combine(Operator::<i32>::identity(&BitOr), x), x);
            assert_eq!(BitXor.combine(Operator::<i32>::identity(&BitXor), x), x);
        }
        assert_eq!(
            Max.combine(Operator::<f32>::identity(&Max), -1e30f32),
            -1e30
        );
    }

    #[test]
    fn custom_names_are_validated() {
        assert!(CustomOp::<i32>::new("ok_name1", "a+b", 0, |a, b| a + b).is_ok());
        assert!(CustomOp::<i32>::new("bad name", "a+b", 0, |a, b| a + b).is_err());
        assert!(CustomOp::<i32>::new("", "a+b", 0, |a, b| a + b).is_err());
        assert!(CustomOp::<i32>::new("x", "  ", 0, |a, b| a + b).is_err());
    }

    #[test]
    fn prelude_spells_identity_and_combine() {
        let p = operator_prelude::<i32, _>(&Max, "op_t");
        assert!(p.contains("struct op_t"));
        assert!(p.contains("((i32)0x80000000u)"));
        assert!(p.contains("max_of(a, b)"));
    }
}
