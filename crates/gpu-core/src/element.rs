//! The element types primitives work on.

use std::fmt::{Debug, Display};

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// A type that can live in a device buffer and be passed to kernels: the six
/// [`Element`] types and `u8` (flag bytes for compaction).
pub trait DeviceType:
    bytemuck::Pod + DeviceRepr + ValidAsZeroBits + Default + PartialEq + Debug + Send + Sync + 'static
{
    /// CUDA type name (a typedef from `common.cuh`): `u8`, `i32`, `f64`, ...
    const CUDA_TYPE: &'static str;
    /// Suffix in kernel entry names, the same as the Rust type name.
    const SUFFIX: &'static str;
    /// Size in bytes.
    const BYTES: usize = std::mem::size_of::<Self>();
    /// A value no algorithm produces by accident on test inputs, written into
    /// outputs before a run so that an element the kernel never wrote shows up
    /// (a NaN with a recognisable payload for floats).
    fn poison() -> Self;
    /// The value as an exact CUDA expression of type [`Self::CUDA_TYPE`]
    /// (bit pattern, so `i32::MIN` and NaN payloads survive).
    fn cuda_literal(self) -> String;
}

impl DeviceType for u8 {
    const CUDA_TYPE: &'static str = "u8";
    const SUFFIX: &'static str = "u8";
    fn poison() -> Self {
        0xAB
    }
    fn cuda_literal(self) -> String {
        format!("((u8)0x{self:02x}u)")
    }
}

/// An arithmetic element type the primitives work on:
/// `i32, u32, i64, u64, f32, f64`.
///
/// Carries the CUDA spelling of the type (the typedef names of
/// `kernels/cuda/common.cuh`), the suffix used in kernel entry names
/// (`blelloch_block_i32`), exact CUDA literals, and the CPU arithmetic that
/// the references use. Integer arithmetic wraps, on the GPU (through the
/// unsigned type) and on the CPU (`wrapping_add`) alike.
pub trait Element: DeviceType + PartialOrd + Display {
    /// True for `f32` and `f64`.
    const IS_FLOAT: bool;
    /// True for signed integers and floats.
    const IS_SIGNED: bool;
    /// `self + rhs`, wrapping for integers.
    fn add(self, rhs: Self) -> Self;
    /// `self * rhs`, wrapping for integers.
    fn mul(self, rhs: Self) -> Self;
    /// `if self > rhs { self } else { rhs }`: the same rule as the kernels.
    fn max_of(self, rhs: Self) -> Self {
        if self > rhs {
            self
        } else {
            rhs
        }
    }
    /// `if self < rhs { self } else { rhs }`: the same rule as the kernels.
    fn min_of(self, rhs: Self) -> Self {
        if self < rhs {
            self
        } else {
            rhs
        }
    }
    /// The smallest value (negative infinity for floats).
    fn lowest() -> Self;
    /// The largest value (infinity for floats).
    fn highest() -> Self;
    /// Zero.
    fn zero() -> Self {
        Self::default()
    }
    /// One.
    fn one() -> Self;
    /// Lossy conversion to `f64`, for tolerances and GB/s arithmetic.
    fn to_f64(self) -> f64;
    /// Conversion from `f64` (truncating for integers), for generated inputs.
    fn from_f64(v: f64) -> Self;
    /// Whether the value is NaN (always false for integers).
    fn is_nan(self) -> bool {
        false
    }
}

/// Integer element types, which also have the bitwise operators.
pub trait IntElement: Element {
    /// `self & rhs`.
    fn bit_and(self, rhs: Self) -> Self;
    /// `self | rhs`.
    fn bit_or(self, rhs: Self) -> Self;
    /// `self ^ rhs`.
    fn bit_xor(self, rhs: Self) -> Self;
    /// All bits set.
    fn all_ones() -> Self;
}

macro_rules! int_element {
    ($t:ty, $unsigned:ty, $signed:expr, $poison:expr, $lit:expr) => {
        impl DeviceType for $t {
            const CUDA_TYPE: &'static str = stringify!($t);
            const SUFFIX: &'static str = stringify!($t);
            fn poison() -> Self {
                $poison as $t
            }
            fn cuda_literal(self) -> String {
                format!($lit, stringify!($t), self as $unsigned)
            }
        }
        impl Element for $t {
            const IS_FLOAT: bool = false;
            const IS_SIGNED: bool = $signed;
            fn add(self, rhs: Self) -> Self {
                self.wrapping_add(rhs)
            }
            fn mul(self, rhs: Self) -> Self {
                self.wrapping_mul(rhs)
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
            fn one() -> Self {
                1
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
        impl IntElement for $t {
            fn bit_and(self, rhs: Self) -> Self {
                self & rhs
            }
            fn bit_or(self, rhs: Self) -> Self {
                self | rhs
            }
            fn bit_xor(self, rhs: Self) -> Self {
                self ^ rhs
            }
            fn all_ones() -> Self {
                !0
            }
        }
    };
}

int_element!(i32, u32, true, 0xDEAD_BEEF_u32, "(({})0x{:08x}u)");
int_element!(u32, u32, false, 0xDEAD_BEEF_u32, "(({})0x{:08x}u)");
int_element!(
    i64,
    u64,
    true,
    0xDEAD_BEEF_DEAD_BEEF_u64,
    "(({})0x{:016x}ull)"
);
int_element!(
    u64,
    u64,
    false,
    0xDEAD_BEEF_DEAD_BEEF_u64,
    "(({})0x{:016x}ull)"
);

impl DeviceType for f32 {
    const CUDA_TYPE: &'static str = "f32";
    const SUFFIX: &'static str = "f32";
    fn poison() -> Self {
        f32::from_bits(0x7fc0_dead)
    }
    fn cuda_literal(self) -> String {
        format!("__int_as_float(0x{:08x})", self.to_bits())
    }
}

impl Element for f32 {
    const IS_FLOAT: bool = true;
    const IS_SIGNED: bool = true;
    fn add(self, rhs: Self) -> Self {
        self + rhs
    }
    fn mul(self, rhs: Self) -> Self {
        self * rhs
    }
    fn lowest() -> Self {
        f32::NEG_INFINITY
    }
    fn highest() -> Self {
        f32::INFINITY
    }
    fn one() -> Self {
        1.0
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl DeviceType for f64 {
    const CUDA_TYPE: &'static str = "f64";
    const SUFFIX: &'static str = "f64";
    fn poison() -> Self {
        f64::from_bits(0x7ff8_dead_dead_dead)
    }
    fn cuda_literal(self) -> String {
        format!("__longlong_as_double(0x{:016x}ll)", self.to_bits())
    }
}

impl Element for f64 {
    const IS_FLOAT: bool = true;
    const IS_SIGNED: bool = true;
    fn add(self, rhs: Self) -> Self {
        self + rhs
    }
    fn mul(self, rhs: Self) -> Self {
        self * rhs
    }
    fn lowest() -> Self {
        f64::NEG_INFINITY
    }
    fn highest() -> Self {
        f64::INFINITY
    }
    fn one() -> Self {
        1.0
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

/// The element types at run time, for tables, CSV rows and the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl ElementType {
    /// All six, in a fixed order.
    pub const ALL: [ElementType; 6] = [
        ElementType::I32,
        ElementType::U32,
        ElementType::I64,
        ElementType::U64,
        ElementType::F32,
        ElementType::F64,
    ];
    /// The type's name (`"i32"`).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::I32 => "i32",
            ElementType::U32 => "u32",
            ElementType::I64 => "i64",
            ElementType::U64 => "u64",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
        }
    }
    /// Parses a name as [`ElementType::name`] writes it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
    /// True for integer types.
    pub fn is_integer(self) -> bool {
        !matches!(self, ElementType::F32 | ElementType::F64)
    }
}

impl Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_bit_exact() {
        assert_eq!(i32::MIN.cuda_literal(), "((i32)0x80000000u)");
        assert_eq!((-1i64).cuda_literal(), "((i64)0xffffffffffffffffull)");
        assert_eq!(1.0f32.cuda_literal(), "__int_as_float(0x3f800000)");
        assert_eq!(
            f64::NEG_INFINITY.cuda_literal(),
            "__longlong_as_double(0xfff0000000000000ll)"
        );
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(i32::MAX.add(1), i32::MIN);
        assert_eq!(u64::MAX.add(2), 1);
        assert_eq!(i32::MAX.mul(2), -2);
    }

    #[test]
    fn poison_is_recognisable() {
        assert!(f32::poison().is_nan());
        assert!(f64::poison().is_nan());
        assert_eq!(u32::poison(), 0xDEAD_BEEF);
    }

    #[test]
    fn element_type_names_round_trip() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::parse(t.name()), Some(t));
        }
        assert_eq!(ElementType::parse("f16"), None);
    }
}
