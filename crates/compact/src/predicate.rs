//! Which items a compaction keeps: built-in comparison predicates and a
//! caller's predicate written in CUDA C.

use std::fmt::Debug;
use std::sync::Arc;

use gpu_core::{validate_identifier, Element, Error, Result};

/// A test applied to every item; items for which it holds are kept.
///
/// Built-in predicates are evaluated in the kernel from a small code and two
/// parameters, so one compiled module per element type serves all of them.
/// Comparisons follow IEEE rules on floats, the same in CUDA and in Rust:
/// with a NaN operand `Eq`, `Lt`, `Le`, `Gt`, `Ge` and `InRange` are false,
/// `Ne` is true, and `NonZero` is true (NaN is not zero); `-0.0` is zero.
#[derive(Clone, Debug)]
pub enum Predicate<T: Element> {
    /// `x != 0`.
    NonZero,
    /// `x == value`.
    Eq(T),
    /// `x != value`.
    Ne(T),
    /// `x < value`.
    Lt(T),
    /// `x <= value`.
    Le(T),
    /// `x > value`.
    Gt(T),
    /// `x >= value`.
    Ge(T),
    /// `low <= x && x < high` (half-open).
    InRange {
        /// Smallest value kept.
        low: T,
        /// First value above the range (not kept).
        high: T,
    },
    /// A caller's predicate: CUDA C for the kernel, Rust for the reference.
    Custom(CustomPredicate<T>),
}

// Codes shared with kernels/cuda/compact/compact.cuh (COMPACT_PRED_*).
const CODE_NONZERO: u32 = 0;
const CODE_EQ: u32 = 1;
const CODE_NE: u32 = 2;
const CODE_LT: u32 = 3;
const CODE_LE: u32 = 4;
const CODE_GT: u32 = 5;
const CODE_GE: u32 = 6;
const CODE_IN_RANGE: u32 = 7;

impl<T: Element> Predicate<T> {
    /// Whether `x` is kept: the CPU reference the kernels are checked against.
    ///
    /// ```
    /// use compact::Predicate;
    /// assert!(Predicate::InRange { low: 0, high: 10 }.evaluate(0));
    /// assert!(!Predicate::InRange { low: 0, high: 10 }.evaluate(10));
    /// assert!(!Predicate::Gt(0.0).evaluate(f32::NAN));
    /// ```
    pub fn evaluate(&self, x: T) -> bool {
        match self {
            Predicate::NonZero => x != T::zero(),
            Predicate::Eq(v) => x == *v,
            Predicate::Ne(v) => x != *v,
            Predicate::Lt(v) => x < *v,
            Predicate::Le(v) => x <= *v,
            Predicate::Gt(v) => x > *v,
            Predicate::Ge(v) => x >= *v,
            Predicate::InRange { low, high } => *low <= x && x < *high,
            Predicate::Custom(custom) => (custom.cpu)(x),
        }
    }

    /// The kernel's view of a built-in predicate: (code, first parameter,
    /// second parameter). A custom predicate ignores these (its module has
    /// the expression compiled in); it gets (0, 0, 0).
    ///
    /// ```
    /// use compact::Predicate;
    /// let (code, low, high) = Predicate::InRange { low: 2u32, high: 9 }.kernel_arguments();
    /// assert_eq!((low, high), (2, 9));
    /// assert_ne!(code, Predicate::Eq(2u32).kernel_arguments().0);
    /// ```
    pub fn kernel_arguments(&self) -> (u32, T, T) {
        let z = T::zero();
        match self {
            Predicate::NonZero => (CODE_NONZERO, z, z),
            Predicate::Eq(v) => (CODE_EQ, *v, z),
            Predicate::Ne(v) => (CODE_NE, *v, z),
            Predicate::Lt(v) => (CODE_LT, *v, z),
            Predicate::Le(v) => (CODE_LE, *v, z),
            Predicate::Gt(v) => (CODE_GT, *v, z),
            Predicate::Ge(v) => (CODE_GE, *v, z),
            Predicate::InRange { low, high } => (CODE_IN_RANGE, *low, *high),
            Predicate::Custom(_) => (0, z, z),
        }
    }

    /// A short name for tables and CSV rows (`lt`, `in_range`, `custom_<name>`).
    ///
    /// ```
    /// use compact::{CustomPredicate, Predicate};
    /// assert_eq!(Predicate::Le(3i32).name(), "le");
    /// let odd = CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0)?;
    /// assert_eq!(Predicate::Custom(odd).name(), "custom_odd");
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn name(&self) -> String {
        match self {
            Predicate::NonZero => "nonzero".into(),
            Predicate::Eq(_) => "eq".into(),
            Predicate::Ne(_) => "ne".into(),
            Predicate::Lt(_) => "lt".into(),
            Predicate::Le(_) => "le".into(),
            Predicate::Gt(_) => "gt".into(),
            Predicate::Ge(_) => "ge".into(),
            Predicate::InRange { .. } => "in_range".into(),
            Predicate::Custom(custom) => format!("custom_{}", custom.name),
        }
    }

    /// The custom predicate, if this is one.
    ///
    /// ```
    /// use compact::{CustomPredicate, Predicate};
    /// let odd = CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0)?;
    /// assert_eq!(Predicate::Custom(odd).custom().map(|c| c.name()), Some("odd"));
    /// assert!(Predicate::<i32>::NonZero.custom().is_none());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn custom(&self) -> Option<&CustomPredicate<T>> {
        match self {
            Predicate::Custom(custom) => Some(custom),
            _ => None,
        }
    }
}

/// A predicate written by the caller: a CUDA C boolean expression over `x`
/// (of the element type) for the kernels, and the same test as a Rust
/// closure for the CPU reference.
///
/// The expression is spliced into `__device__ bool pred(T x) { return (EXPR); }`
/// in a module of its own. Whether it compiles is only known when NVRTC sees
/// it: the first operation using it returns [`Error::Compile`] with NVRTC's
/// log if it does not, having written nothing.
///
/// ```
/// use compact::CustomPredicate;
/// let odd = CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0).unwrap();
/// assert_eq!(odd.name(), "odd");
/// ```
#[derive(Clone)]
pub struct CustomPredicate<T: Element> {
    name: String,
    cuda_expr: String,
    cuda_support: String,
    cpu: Arc<dyn Fn(T) -> bool + Send + Sync>,
}

impl<T: Element> Debug for CustomPredicate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomPredicate")
            .field("name", &self.name)
            .field("cuda_expr", &self.cuda_expr)
            .finish_non_exhaustive()
    }
}

impl<T: Element> CustomPredicate<T> {
    /// `name`: 1 to 48 ASCII letters, digits or `_` (it becomes part of the
    /// module name). `cuda_expr`: a CUDA C expression over `x` convertible to
    /// `bool`. `cpu`: the same test in Rust.
    ///
    /// ```
    /// use compact::{CustomPredicate, Predicate};
    /// let even = CustomPredicate::<u64>::new("even", "(x & 1) == 0", |x| x & 1 == 0)?;
    /// assert_eq!(compact::cpu::select_if(&[1, 2, 3, 4], &Predicate::Custom(even)), [2, 4]);
    /// assert!(CustomPredicate::<u64>::new("not a name", "x > 0", |x| x > 0).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(
        name: &str,
        cuda_expr: &str,
        cpu: impl Fn(T) -> bool + Send + Sync + 'static,
    ) -> Result<Self> {
        validate_identifier("name", name)?;
        validate_cuda_text("cuda_expr", cuda_expr)?;
        if cuda_expr.trim().is_empty() {
            return Err(Error::invalid("cuda_expr", "empty expression"));
        }
        Ok(CustomPredicate {
            name: name.to_owned(),
            cuda_expr: cuda_expr.to_owned(),
            cuda_support: String::new(),
            cpu: Arc::new(cpu),
        })
    }

    /// Adds CUDA C definitions (device functions) placed before the
    /// predicate, for expressions that call them.
    ///
    /// ```
    /// use compact::CustomPredicate;
    /// let square = CustomPredicate::<i32>::new("small_square", "sq(x) < 50", |x| x * x < 50)?
    ///     .with_support_code("__device__ int sq(int v) { return v * v; }")?;
    /// assert!(square.evaluate(7) && !square.evaluate(8));
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn with_support_code(mut self, cuda_source: &str) -> Result<Self> {
        validate_cuda_text("cuda_source", cuda_source)?;
        self.cuda_support = cuda_source.to_owned();
        Ok(self)
    }

    /// The predicate's name.
    ///
    /// ```
    /// use compact::policy::{policy, CompactPolicy, Schedule, TileLayout};
    /// let p = policy(256, 16, TileLayout::Blocked, 1, Schedule::TilePerBlock);
    /// assert_eq!(p.name(), "256x16/blocked/lb1/tile-per-block");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CUDA C expression over `x`.
    ///
    /// ```
    /// use compact::CustomPredicate;
    /// let odd = CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0)?;
    /// assert_eq!(odd.cuda_expr(), "(x & 1) != 0");
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn cuda_expr(&self) -> &str {
        &self.cuda_expr
    }

    /// The CUDA C support code placed before the predicate.
    ///
    /// ```
    /// use compact::CustomPredicate;
    /// let odd = CustomPredicate::<i32>::new("odd", "is_odd(x)", |x| x & 1 != 0)?
    ///     .with_support_code("__device__ bool is_odd(int v) { return v & 1; }")?;
    /// assert!(odd.cuda_support().contains("is_odd"));
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn cuda_support(&self) -> &str {
        &self.cuda_support
    }

    /// Evaluates the Rust closure (the CPU reference).
    ///
    /// ```
    /// use compact::CustomPredicate;
    /// let odd = CustomPredicate::<i32>::new("odd", "(x & 1) != 0", |x| x & 1 != 0)?;
    /// assert!(odd.evaluate(-3) && !odd.evaluate(4));
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn evaluate(&self, x: T) -> bool {
        (self.cpu)(x)
    }
}

fn validate_cuda_text(what: &'static str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(Error::invalid(what, "contains a NUL byte"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_follow_ieee_with_nan() {
        let nan = f32::NAN;
        assert!(!Predicate::Eq(nan).evaluate(nan));
        assert!(Predicate::Ne(1.0f32).evaluate(nan));
        assert!(!Predicate::Lt(1.0f32).evaluate(nan));
        assert!(!Predicate::Ge(1.0f32).evaluate(nan));
        assert!(!Predicate::InRange {
            low: f32::NEG_INFINITY,
            high: f32::INFINITY
        }
        .evaluate(nan));
        assert!(Predicate::<f32>::NonZero.evaluate(nan));
        assert!(!Predicate::<f32>::NonZero.evaluate(-0.0));
    }

    #[test]
    fn range_is_half_open() {
        let p = Predicate::InRange { low: 2i32, high: 5 };
        let kept: Vec<i32> = (0..8).filter(|&x| p.evaluate(x)).collect();
        assert_eq!(kept, vec![2, 3, 4]);
        assert_eq!(p.kernel_arguments(), (CODE_IN_RANGE, 2, 5));
    }

    #[test]
    fn codes_are_distinct() {
        let all: Vec<Predicate<i64>> = vec![
            Predicate::NonZero,
            Predicate::Eq(1),
            Predicate::Ne(1),
            Predicate::Lt(1),
            Predicate::Le(1),
            Predicate::Gt(1),
            Predicate::Ge(1),
            Predicate::InRange { low: 0, high: 1 },
        ];
        let mut codes: Vec<u32> = all.iter().map(|p| p.kernel_arguments().0).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }

    #[test]
    fn custom_names_and_text_are_validated() {
        assert!(CustomPredicate::<u32>::new("ok_1", "x > 3u", |x| x > 3).is_ok());
        assert!(CustomPredicate::<u32>::new("bad-name", "x > 3u", |x| x > 3).is_err());
        assert!(CustomPredicate::<u32>::new("", "x > 3u", |x| x > 3).is_err());
        assert!(CustomPredicate::<u32>::new("e", " ", |x| x > 3).is_err());
        assert!(CustomPredicate::<u32>::new("nul", "x\0", |x| x > 3).is_err());
        let p = CustomPredicate::<u32>::new("gt3", "x > 3u", |x| x > 3).unwrap();
        assert!(Predicate::Custom(p.clone()).evaluate(4));
        assert!(!Predicate::Custom(p).evaluate(3));
    }
}
