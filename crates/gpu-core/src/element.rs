//! The element types primitives work on.

use std::fmt::{Debug, Display};

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use half::{bf16, f16};

/// A type that can live in a device buffer and be passed to kernels: every
/// [`Element`] type.
pub trait DeviceType:
    bytemuck::Pod + DeviceRepr + ValidAsZeroBits + Default + PartialEq + Debug + Send + Sync + 'static
{
    /// CUDA type name (a typedef or struct from `common.cuh`): `u8`, `i32`,
    /// `f16`, `f64`, ...
    const CUDA_TYPE: &'static str;
    /// Suffix in kernel entry names, the same as the Rust type name.
    const SUFFIX: &'static str;
    /// Size in bytes.
    const BYTES: usize = std::mem::size_of::<Self>();
    /// A value no algorithm produces by accident on test inputs, written into
    /// outputs before a run so that an element the kernel never wrote shows up
    /// (a NaN with a recognisable payload for floats).
    ///
    /// ```
    /// use gpu_core::DeviceType;
    /// assert_eq!(i32::poison() as u32, 0xDEAD_BEEF);
    /// assert!(f32::poison().is_nan()); // a NaN with a recognisable payload
    /// ```
    fn poison() -> Self;
    /// The value as an exact CUDA expression of type [`Self::CUDA_TYPE`]
    /// (bit pattern, so `i32::MIN` and NaN payloads survive).
    ///
    /// ```
    /// use gpu_core::DeviceType;
    /// assert_eq!(i32::MIN.cuda_literal(), "((i32)0x80000000u)"); // the bit pattern, exactly
    /// ```
    fn cuda_literal(self) -> String;
}

/// An arithmetic element type the primitives work on: the integers
/// `i8, u8, i16, u16, i32, u32, i64, u64` and the floats `f16, bf16, f32,
/// f64` (`f16` and `bf16` are [`half::f16`] and [`half::bf16`]).
///
/// Carries the CUDA spelling of the type (the typedef names of
/// `kernels/cuda/common.cuh`), the suffix used in kernel entry names
/// (`blelloch_block_i32`), exact CUDA literals, and the CPU arithmetic that
/// the references use. Integer arithmetic wraps, on the GPU (through the
/// unsigned type) and on the CPU (`wrapping_add`) alike.
///
/// Each type names the type its sums accumulate in, [`Element::Acc`]: the
/// type itself, except the 16-bit floats, which accumulate in `f32` and are
/// rounded once, when a result is stored (as PyTorch does). For them
/// [`Element::add`] and [`Element::mul`] are one `f32` operation rounded to
/// the type.
pub trait Element: DeviceType + PartialOrd + Display {
    /// True for `f16`, `bf16`, `f32` and `f64`.
    const IS_FLOAT: bool;
    /// True for signed integers and floats.
    const IS_SIGNED: bool;
    /// Machine epsilon of a float type (the gap between 1 and the next
    /// value), as `f64`; 0 for integers.
    const EPSILON: f64;
    /// The type sums and products are carried in before a result is stored:
    /// `Self`, except `f32` for `f16` and `bf16`.
    type Acc: Element;
    /// Widens to the accumulator (exact).
    ///
    /// ```
    /// use gpu_core::{f16, Element};
    /// let x = f16::from_f32(0.1);
    /// let acc: f32 = x.to_acc(); // 16-bit floats accumulate in f32
    /// assert_eq!(acc, x.to_f32());
    /// assert_eq!(7i32.to_acc(), 7); // other types in themselves
    /// ```
    fn to_acc(self) -> Self::Acc;
    /// Rounds an accumulator to the type (to nearest, ties to even; the
    /// identity where [`Element::Acc`] is `Self`).
    ///
    /// ```
    /// use gpu_core::{bf16, Element};
    /// let acc = 1.0f32 + 0.001; // a sum carried in f32
    /// assert_eq!(bf16::from_acc(acc), bf16::from_f32(acc)); // rounded to nearest once, when stored
    /// assert_eq!(i64::from_acc(5), 5);
    /// ```
    fn from_acc(acc: Self::Acc) -> Self;
    /// `self + rhs`, wrapping for integers.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(i32::MAX.add(1), i32::MIN); // wraps, as the kernels do
    /// assert_eq!(1.5f64.add(2.0), 3.5);
    /// ```
    fn add(self, rhs: Self) -> Self;
    /// `self * rhs`, wrapping for integers.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(200u8.mul(2), 144); // wraps: 400 mod 256
    /// assert_eq!(1.5f32.mul(2.0), 3.0);
    /// ```
    fn mul(self, rhs: Self) -> Self;
    /// `if self > rhs { self } else { rhs }`: the same rule as the kernels.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(3i64.max_of(-7), 3);
    /// assert!(f32::NAN.max_of(1.0) == 1.0); // NaN > 1.0 is false: the kernels' rule
    /// ```
    fn max_of(self, rhs: Self) -> Self {
        if self > rhs {
            self
        } else {
            rhs
        }
    }
    /// `if self < rhs { self } else { rhs }`: the same rule as the kernels.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(3i64.min_of(-7), -7);
    /// assert!(f32::NAN.min_of(1.0) == 1.0);
    /// ```
    fn min_of(self, rhs: Self) -> Self {
        if self < rhs {
            self
        } else {
            rhs
        }
    }
    /// The smallest value (negative infinity for floats).
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(<i16 as Element>::lowest(), i16::MIN);
    /// assert_eq!(<f64 as Element>::lowest(), f64::NEG_INFINITY);
    /// ```
    fn lowest() -> Self;
    /// The largest value (infinity for floats).
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(<u32 as Element>::highest(), u32::MAX);
    /// assert_eq!(<f32 as Element>::highest(), f32::INFINITY);
    /// ```
    fn highest() -> Self;
    /// Zero.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(<u64 as Element>::zero(), 0);
    /// assert_eq!(<f64 as Element>::zero(), 0.0);
    /// ```
    fn zero() -> Self {
        Self::default()
    }
    /// One.
    ///
    /// ```
    /// use gpu_core::{f16, Element};
    /// assert_eq!(<i8 as Element>::one(), 1);
    /// assert_eq!(<f16 as Element>::one(), f16::ONE);
    /// ```
    fn one() -> Self;
    /// Lossy conversion to `f64`, for tolerances and GB/s arithmetic.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(u64::MAX.to_f64(), 18_446_744_073_709_551_615.0); // lossy: rounds to 2^64
    /// assert_eq!((-3i32).to_f64(), -3.0);
    /// ```
    fn to_f64(self) -> f64;
    /// Conversion from `f64` (truncating for integers, rounding to nearest
    /// for floats), for generated inputs.
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert_eq!(<i32 as Element>::from_f64(2.9), 2); // truncates
    /// assert_eq!(<f32 as Element>::from_f64(0.1), 0.1f32); // rounds to nearest
    /// ```
    fn from_f64(v: f64) -> Self;
    /// Whether the value is NaN (always false for integers).
    ///
    /// ```
    /// use gpu_core::Element;
    /// assert!(Element::is_nan(f64::NAN));
    /// assert!(!Element::is_nan(0i32));
    /// ```
    fn is_nan(self) -> bool {
        false
    }
}

/// Integer element types, which also have the bitwise operators. An integer
/// accumulates in its own type.
pub trait IntElement: Element<Acc = Self> {
    /// `self & rhs`.
    ///
    /// ```
    /// use gpu_core::IntElement;
    /// assert_eq!(0b1100u8.bit_and(0b1010), 0b1000);
    /// ```
    fn bit_and(self, rhs: Self) -> Self;
    /// `self | rhs`.
    ///
    /// ```
    /// use gpu_core::IntElement;
    /// assert_eq!(0b1100u8.bit_or(0b1010), 0b1110);
    /// ```
    fn bit_or(self, rhs: Self) -> Self;
    /// `self ^ rhs`.
    ///
    /// ```
    /// use gpu_core::IntElement;
    /// assert_eq!(0b1100u8.bit_xor(0b1010), 0b0110);
    /// ```
    fn bit_xor(self, rhs: Self) -> Self;
    /// All bits set.
    ///
    /// ```
    /// use gpu_core::IntElement;
    /// assert_eq!(<i32 as IntElement>::all_ones(), -1);
    /// assert_eq!(<u16 as IntElement>::all_ones(), u16::MAX);
    /// ```
    fn all_ones() -> Self;
}

/// `DeviceType`, `Element` and `IntElement` for an integer type: `$unsigned`
/// is the unsigned type of the same width (the literal's bit pattern),
/// `$poison` the poison value's bits, `$lit` the literal's format (CUDA
/// type, then the bits).
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
            const EPSILON: f64 = 0.0;
            type Acc = $t;
            fn to_acc(self) -> Self {
                self
            }
            fn from_acc(acc: Self) -> Self {
                acc
            }
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

int_element!(i8, u8, true, 0xAB_u8, "(({})0x{:02x}u)");
int_element!(u8, u8, false, 0xAB_u8, "(({})0x{:02x}u)");
int_element!(i16, u16, true, 0xDEAD_u16, "(({})0x{:04x}u)");
int_element!(u16, u16, false, 0xDEAD_u16, "(({})0x{:04x}u)");
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

/// `DeviceType` and `Element` for `f32` and `f64`, which accumulate in
/// themselves: `$poison` is the poison NaN's bits, `$lit` the format of the
/// literal from the bits (a CUDA bit-cast intrinsic).
macro_rules! float_element {
    ($t:ident, $poison:expr, $lit:expr) => {
        impl DeviceType for $t {
            const CUDA_TYPE: &'static str = stringify!($t);
            const SUFFIX: &'static str = stringify!($t);
            fn poison() -> Self {
                $t::from_bits($poison)
            }
            fn cuda_literal(self) -> String {
                format!($lit, self.to_bits())
            }
        }

        impl Element for $t {
            const IS_FLOAT: bool = true;
            const IS_SIGNED: bool = true;
            const EPSILON: f64 = $t::EPSILON as f64;
            type Acc = $t;
            fn to_acc(self) -> Self {
                self
            }
            fn from_acc(acc: Self) -> Self {
                acc
            }
            fn add(self, rhs: Self) -> Self {
                self + rhs
            }
            fn mul(self, rhs: Self) -> Self {
                self * rhs
            }
            fn lowest() -> Self {
                $t::NEG_INFINITY
            }
            fn highest() -> Self {
                $t::INFINITY
            }
            fn one() -> Self {
                1.0
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
        }
    };
}

float_element!(f32, 0x7fc0_dead, "__int_as_float(0x{:08x})");
float_element!(
    f64,
    0x7ff8_dead_dead_dead,
    "__longlong_as_double(0x{:016x}ll)"
);

/// `DeviceType` and `Element` for the 16-bit floats: stored as 16 bits,
/// accumulated in `f32`. On the device they are the bit-holding structs of
/// `common.cuh`, built from bits by `$from_bits` (the literal).
macro_rules! half_element {
    ($t:ident, $poison:expr, $from_bits:literal) => {
        impl DeviceType for $t {
            const CUDA_TYPE: &'static str = stringify!($t);
            const SUFFIX: &'static str = stringify!($t);
            fn poison() -> Self {
                $t::from_bits($poison)
            }
            fn cuda_literal(self) -> String {
                format!(concat!($from_bits, "(0x{:04x}u)"), self.to_bits())
            }
        }

        impl Element for $t {
            const IS_FLOAT: bool = true;
            const IS_SIGNED: bool = true;
            const EPSILON: f64 = $t::EPSILON.to_f64_const();
            type Acc = f32;
            fn to_acc(self) -> f32 {
                $t::to_f32(self)
            }
            fn from_acc(acc: f32) -> Self {
                $t::from_f32(acc)
            }
            fn add(self, rhs: Self) -> Self {
                $t::from_f32($t::to_f32(self) + $t::to_f32(rhs))
            }
            fn mul(self, rhs: Self) -> Self {
                $t::from_f32($t::to_f32(self) * $t::to_f32(rhs))
            }
            fn lowest() -> Self {
                $t::NEG_INFINITY
            }
            fn highest() -> Self {
                $t::INFINITY
            }
            fn one() -> Self {
                $t::ONE
            }
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
            fn from_f64(v: f64) -> Self {
                $t::from_f64(v)
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
        }
    };
}

half_element!(f16, 0x7ead, "f16_from_bits");
half_element!(bf16, 0x7fde, "bf16_from_bits");

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
    ///
    /// ```
    /// use gpu_core::ElementType;
    /// assert_eq!(ElementType::F64.name(), "f64");
    /// assert_eq!(ElementType::I32.to_string(), "i32");
    /// ```
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
    ///
    /// ```
    /// use gpu_core::ElementType;
    /// assert_eq!(ElementType::parse("u64"), Some(ElementType::U64));
    /// assert_eq!(ElementType::parse("int"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
    /// True for integer types.
    ///
    /// ```
    /// use gpu_core::ElementType;
    /// assert!(ElementType::U32.is_integer());
    /// assert!(!ElementType::F32.is_integer());
    /// ```
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
        assert_eq!(0xABu8.cuda_literal(), "((u8)0xabu)");
        assert_eq!((-1i8).cuda_literal(), "((i8)0xffu)");
        assert_eq!(i16::MIN.cuda_literal(), "((i16)0x8000u)");
        assert_eq!(7u16.cuda_literal(), "((u16)0x0007u)");
        assert_eq!(1.0f32.cuda_literal(), "__int_as_float(0x3f800000)");
        assert_eq!(
            f64::NEG_INFINITY.cuda_literal(),
            "__longlong_as_double(0xfff0000000000000ll)"
        );
        assert_eq!(f16::ONE.cuda_literal(), "f16_from_bits(0x3c00u)");
        assert_eq!(bf16::NEG_INFINITY.cuda_literal(), "bf16_from_bits(0xff80u)");
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(i32::MAX.add(1), i32::MIN);
        assert_eq!(u64::MAX.add(2), 1);
        assert_eq!(i32::MAX.mul(2), -2);
        assert_eq!(i8::MAX.add(1), i8::MIN);
        assert_eq!(200u8.add(100), 44);
        assert_eq!(i16::MIN.mul(-1), i16::MIN);
        assert_eq!(300u16.mul(300), (90_000u32 % 65_536) as u16);
    }

    #[test]
    fn sixteen_bit_floats_accumulate_in_f32_and_round_once() {
        // 2048 + 1 is not an f16 (11-bit significand): one rounding, to even.
        let big = f16::from_f32(2048.0);
        assert_eq!(big.add(f16::ONE), big);
        assert_eq!(f16::from_acc(2048.0 + 1.0 + 1.0), f16::from_f32(2050.0));
        assert_eq!(<f16 as Element>::EPSILON, 2f64.powi(-10));
        assert_eq!(<bf16 as Element>::EPSILON, 2f64.powi(-7));
        assert_eq!(bf16::from_f32(3.0).to_acc(), 3.0f32);
        assert_eq!(bf16::from_acc(1.0 + 1.0 / 256.0), bf16::ONE);
        assert_eq!(f16::lowest(), f16::NEG_INFINITY);
        assert_eq!(bf16::highest(), bf16::INFINITY);
        assert_eq!(<f32 as Element>::EPSILON, f32::EPSILON as f64);
        assert_eq!(<i16 as Element>::EPSILON, 0.0);
        assert_eq!(1.5f64.to_acc(), 1.5);
    }

    #[test]
    fn poison_is_recognisable() {
        assert!(f32::poison().is_nan());
        assert!(f64::poison().is_nan());
        assert!(Element::is_nan(f16::poison()));
        assert!(Element::is_nan(bf16::poison()));
        assert_eq!(u32::poison(), 0xDEAD_BEEF);
        assert_eq!(u8::poison(), 0xAB);
        assert_eq!(i8::poison(), 0xABu8 as i8);
        assert_eq!(u16::poison(), 0xDEAD);
        assert_eq!(f16::poison().to_bits(), 0x7ead);
    }

    #[test]
    fn element_type_names_round_trip() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::parse(t.name()), Some(t));
        }
        assert_eq!(ElementType::parse("f16"), None);
    }
}
