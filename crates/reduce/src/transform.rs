//! A map fused into the reduction's loads (`transform_reduce`): each item
//! `x` at index `i` becomes `map(x, i)` in registers, then the operator
//! folds the mapped values. Nothing is written between the two; the bytes
//! moved are the input's.

use std::fmt::Debug;
use std::sync::Arc;

use gpu_core::op::{register_type, validate_cuda_expression, validate_identifier};
use gpu_core::{Element, Result};

/// A map from `T` to `U` fused into a reduction's loads: a CUDA C
/// expression for the kernels and the same function in Rust for the CPU
/// reference.
///
/// The expression sees `x`, the item in `T`'s register type (`T` itself
/// for the 4- and 8-byte types, `f32` for `f16`/`bf16`, `i32`/`u32` for the
/// narrow integers), and `i`, its index (`u64`); it gives a value of `U`'s
/// register type.
///
/// ```
/// use reduce::Transform;
/// let square = Transform::<f32, f32>::square();
/// assert_eq!(square.apply(3.0, 0), 9.0);
/// let positive = Transform::<i32, u64>::count_if("positive", "x > 0", |x| x > 0)?;
/// assert_eq!(positive.apply(-4, 0), 0);
/// # Ok::<(), gpu_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Transform<T: Element, U: Element> {
    name: String,
    cuda_expr: String,
    cuda_support: String,
    cpu: Arc<dyn Fn(T, u64) -> U + Send + Sync>,
}

impl<T: Element, U: Element> Debug for Transform<T, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transform")
            .field("name", &self.name)
            .field("cuda_expr", &self.cuda_expr)
            .finish()
    }
}

impl<T: Element, U: Element> Transform<T, U> {
    /// `name`: letters, digits and `_` (it becomes part of kernel names).
    /// `cuda_expr`: a CUDA C expression over `x` and `i` (see the type's
    /// docs). `cpu`: the same map in Rust, on `T` and the index.
    ///
    /// Whether the expression compiles is known when NVRTC first sees it:
    /// the first reduction using it returns [`Error::Compile`](gpu_core::Error::Compile) with the
    /// NVRTC log if it does not.
    ///
    /// ```
    /// use reduce::Transform;
    /// // Weighted by position: x · i.
    /// let weighted = Transform::<f64, f64>::new("weighted", "x * (f64)i", |x, i| x * i as f64)?;
    /// assert_eq!(weighted.apply(2.0, 3), 6.0);
    /// assert!(Transform::<f64, f64>::new("no spaces", "x", |x, _| x).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(
        name: &str,
        cuda_expr: &str,
        cpu: impl Fn(T, u64) -> U + Send + Sync + 'static,
    ) -> Result<Self> {
        validate_identifier("name", name)?;
        validate_cuda_expression("cuda_expr", cuda_expr)?;
        Ok(Transform {
            name: name.to_owned(),
            cuda_expr: cuda_expr.to_owned(),
            cuda_support: String::new(),
            cpu: Arc::new(cpu),
        })
    }

    /// Adds CUDA C helper definitions (device functions) placed before the
    /// reducer, for expressions that call them.
    ///
    /// ```
    /// use reduce::Transform;
    /// let t = Transform::<f32, f32>::new("cube", "cube(x)", |x, _| x * x * x)?
    ///     .with_support_code("__device__ f32 cube(f32 v) { return v * v * v; }");
    /// assert_eq!(t.apply(2.0, 0), 8.0);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn with_support_code(mut self, cuda_source: &str) -> Self {
        self.cuda_support = cuda_source.to_owned();
        self
    }

    /// The map's name.
    ///
    /// ```
    /// assert_eq!(reduce::Transform::<i32, i32>::square().name(), "square");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CPU map: what the kernels compute for item `x` at index `index`.
    ///
    /// ```
    /// assert_eq!(reduce::Transform::<i32, i32>::abs().apply(-7, 0), 7);
    /// ```
    pub fn apply(&self, x: T, index: u64) -> U {
        (self.cpu)(x, index)
    }

    /// The CUDA expression.
    pub(crate) fn cuda_expr(&self) -> &str {
        &self.cuda_expr
    }

    /// The CUDA helper definitions, if any.
    pub(crate) fn cuda_support(&self) -> &str {
        &self.cuda_support
    }
}

impl<T: Element> Transform<T, T> {
    /// `x · x` (wrapping for integers): with `Sum`, the sum of squares.
    ///
    /// ```
    /// assert_eq!(reduce::Transform::<u8, u8>::square().apply(20, 0), 144); // 400 mod 256
    /// ```
    pub fn square() -> Self {
        Transform {
            name: "square".into(),
            cuda_expr: "wrapping_mul(x, x)".into(),
            cuda_support: String::new(),
            cpu: Arc::new(|x: T, _| x.mul(x)),
        }
    }

    /// `|x|` (for signed integers wrapping: `|MIN| = MIN`; NaN stays NaN).
    ///
    /// ```
    /// assert_eq!(reduce::Transform::<f64, f64>::abs().apply(-2.5, 0), 2.5);
    /// assert_eq!(reduce::Transform::<i8, i8>::abs().apply(i8::MIN, 0), i8::MIN);
    /// ```
    pub fn abs() -> Self {
        let reg = register_type::<T>().unwrap_or(T::CUDA_TYPE);
        let cuda_expr = if T::IS_FLOAT {
            "(x < 0 ? -x : x)".to_owned()
        } else if T::IS_SIGNED {
            format!("(x < 0 ? wrapping_mul(x, ({reg})-1) : x)")
        } else {
            "x".to_owned()
        };
        Transform {
            name: "abs".into(),
            cuda_expr,
            cuda_support: String::new(),
            cpu: Arc::new(|x: T, _| {
                if x < T::zero() {
                    x.mul(T::from_f64(-1.0))
                } else {
                    x
                }
            }),
        }
    }
}

impl<T: Element> Transform<T, u64> {
    /// 1 where `cuda_condition` (a CUDA C condition over `x` and `i`) holds,
    /// 0 elsewhere: with `Sum`, the count of items that satisfy it.
    ///
    /// ```
    /// use reduce::Transform;
    /// let big = Transform::<f32, u64>::count_if("big", "x > 100.0f", |x| x > 100.0)?;
    /// assert_eq!(big.apply(250.0, 0), 1);
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn count_if(
        name: &str,
        cuda_condition: &str,
        cpu: impl Fn(T) -> bool + Send + Sync + 'static,
    ) -> Result<Self> {
        validate_cuda_expression("cuda_condition", cuda_condition)?;
        Transform::new(
            name,
            &format!("(({cuda_condition}) ? 1ull : 0ull)"),
            move |x, _| u64::from(cpu(x)),
        )
    }
}
