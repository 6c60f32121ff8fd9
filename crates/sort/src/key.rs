//! Sort keys and value payloads.
//!
//! Every key type maps to an unsigned integer of its own width whose
//! unsigned order is the key's sort order ([`SortKey::to_radix`]):
//!
//! | keys | radix image |
//! |---|---|
//! | `u8 u16 u32 u64` | the bits unchanged |
//! | `i8 i16 i32 i64` | the sign bit flipped |
//! | `f32 f64`, negative (sign bit set) | every bit flipped |
//! | `f32 f64`, positive | the sign bit flipped |
//! | `f32 f64`, NaN (either sign, any payload) | all ones: after +∞ |
//!
//! So floats sort in IEEE total order (−∞ < … < −0 < +0 < … < +∞) with every
//! NaN after +∞, as NumPy and torch place them; all NaNs are equal keys.
//! **Keys move as their own bits**: a sort never rewrites a key (NaN
//! payloads and the sign of zero come out as they went in); the radix image
//! is computed from the key wherever a method compares keys or extracts a
//! digit. **Descending** order compares the complement `!to_radix(k)`, so
//! descending sorts are stable too (equal keys keep their input order) and
//! NaNs come first.
//!
//! The CUDA twin is `kernels/cuda/sort/radix_key.cuh`
//! (`radix_key<K>::to_radix`), checked against this one by the GPU tests.

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Not;

use gpu_core::{DeviceType, DeviceView, DeviceViewMut, Element, Error, Result};

/// An unsigned integer that holds a key's radix image: `u8`, `u16`, `u32`,
/// `u64`.
pub trait RadixBits:
    DeviceType + Copy + Ord + Eq + Hash + Debug + Not<Output = Self> + Into<u64>
{
    /// Width in bits.
    const BITS: u32;
}

impl RadixBits for u8 {
    const BITS: u32 = 8;
}
impl RadixBits for u16 {
    const BITS: u32 = 16;
}
impl RadixBits for u32 {
    const BITS: u32 = 32;
}
impl RadixBits for u64 {
    const BITS: u32 = 64;
}

/// A key type the sorts order: `u8 u16 u32 u64 i8 i16 i32 i64 f32 f64`.
///
/// ```
/// use sort::key::SortKey;
/// assert!((-1i32).to_radix() < 0i32.to_radix());
/// assert!((-0.0f32).to_radix() < 0.0f32.to_radix());
/// assert!(f32::INFINITY.to_radix() < f32::NAN.to_radix());
/// assert_eq!((-f64::NAN).to_radix(), u64::MAX); // every NaN is the top key
/// ```
pub trait SortKey: Element {
    /// The unsigned integer of the same width.
    type Bits: RadixBits;
    /// Width of the key in bits (8, 16, 32 or 64).
    const KEY_BITS: u32;
    /// The order-preserving map to an unsigned integer (see the module).
    fn to_radix(self) -> Self::Bits;
    /// [`SortKey::to_radix`] for `descending = false`, its complement
    /// otherwise: the image the sorts order ascending.
    ///
    /// ```
    /// use sort::key::SortKey;
    /// assert!(5u8.ordered_radix(true) < 3u8.ordered_radix(true));
    /// ```
    fn ordered_radix(self, descending: bool) -> Self::Bits {
        let bits = self.to_radix();
        if descending {
            !bits
        } else {
            bits
        }
    }
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            type Bits = $t;
            const KEY_BITS: u32 = <$t>::BITS;
            fn to_radix(self) -> $t {
                self
            }
        }
    )*};
}
unsigned_key!(u8, u16, u32, u64);

macro_rules! signed_key {
    ($($t:ty => $u:ty),*) => {$(
        impl SortKey for $t {
            type Bits = $u;
            const KEY_BITS: u32 = <$u>::BITS;
            fn to_radix(self) -> $u {
                (self as $u) ^ (1 << (<$u>::BITS - 1))
            }
        }
    )*};
}
signed_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

macro_rules! float_key {
    ($($t:ty => $u:ty),*) => {$(
        impl SortKey for $t {
            type Bits = $u;
            const KEY_BITS: u32 = <$u>::BITS;
            fn to_radix(self) -> $u {
                if self.is_nan() {
                    return <$u>::MAX;
                }
                let bits = self.to_bits();
                let sign = 1 << (<$u>::BITS - 1);
                if bits & sign != 0 {
                    !bits
                } else {
                    bits ^ sign
                }
            }
        }
    )*};
}
float_key!(f32 => u32, f64 => u64);

/// Width in bytes of a value payload: the element size of the values a
/// sort carries with its keys, moved as raw bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PayloadWidth {
    /// 1 byte.
    B1,
    /// 2 bytes.
    B2,
    /// 4 bytes.
    B4,
    /// 8 bytes.
    B8,
}

impl PayloadWidth {
    /// The width of `bytes`-byte elements, or `Error::Unsupported`.
    ///
    /// ```
    /// use sort::key::PayloadWidth;
    /// assert_eq!(PayloadWidth::of_bytes(4)?, PayloadWidth::B4);
    /// assert!(PayloadWidth::of_bytes(12).is_err());
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn of_bytes(bytes: usize) -> Result<Self> {
        match bytes {
            1 => Ok(PayloadWidth::B1),
            2 => Ok(PayloadWidth::B2),
            4 => Ok(PayloadWidth::B4),
            8 => Ok(PayloadWidth::B8),
            _ => Err(Error::Unsupported(format!(
                "sort values of {bytes} bytes: payloads are 1, 2, 4 or 8 bytes wide"
            ))),
        }
    }

    /// Bytes per value.
    ///
    /// ```
    /// assert_eq!(sort::key::PayloadWidth::B8.bytes(), 8);
    /// ```
    pub fn bytes(self) -> usize {
        match self {
            PayloadWidth::B1 => 1,
            PayloadWidth::B2 => 2,
            PayloadWidth::B4 => 4,
            PayloadWidth::B8 => 8,
        }
    }

    /// The CUDA unsigned type of this width (`u8` … `u64`), the type the
    /// kernels move values in.
    ///
    /// ```
    /// assert_eq!(sort::key::PayloadWidth::B2.cuda_type(), "u16");
    /// ```
    pub fn cuda_type(self) -> &'static str {
        match self {
            PayloadWidth::B1 => "u8",
            PayloadWidth::B2 => "u16",
            PayloadWidth::B4 => "u32",
            PayloadWidth::B8 => "u64",
        }
    }

    /// Every width, narrowest first.
    pub const ALL: [PayloadWidth; 4] = [
        PayloadWidth::B1,
        PayloadWidth::B2,
        PayloadWidth::B4,
        PayloadWidth::B8,
    ];
}

/// A read-only view of a value buffer as raw bits: any element type of 1,
/// 2, 4 or 8 bytes.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::key::{PayloadView, PayloadWidth};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let values = DeviceBuffer::from_host(&gpu, &[1.5f64, 2.5])?;
/// let payload = PayloadView::new(values.view())?;
/// assert_eq!((payload.len(), payload.width()), (2, PayloadWidth::B8));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct PayloadView<'a> {
    ptr: u64,
    len: usize,
    width: PayloadWidth,
    _borrow: PhantomData<&'a [u8]>,
}

impl<'a> PayloadView<'a> {
    /// The values of `view` as raw bits; `Error::Unsupported` for an element
    /// size other than 1, 2, 4 or 8 bytes.
    pub fn new<V: DeviceType>(view: DeviceView<'a, V>) -> Result<Self> {
        Ok(PayloadView {
            ptr: view.device_ptr(),
            len: view.len(),
            width: PayloadWidth::of_bytes(V::BYTES)?,
            _borrow: PhantomData,
        })
    }
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes per value.
    pub fn width(&self) -> PayloadWidth {
        self.width
    }
    /// Device address of the first value.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * self.width.bytes()
    }
}

/// A writable view of a value buffer as raw bits: any element type of 1,
/// 2, 4 or 8 bytes. The in-place sorts permute it with their keys.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::key::{PayloadViewMut, PayloadWidth};
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut values = DeviceBuffer::from_host(&gpu, &[7u16, 8, 9])?;
/// let payload = PayloadViewMut::new(values.view_mut())?;
/// assert_eq!((payload.len(), payload.width()), (3, PayloadWidth::B2));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PayloadViewMut<'a> {
    ptr: u64,
    len: usize,
    width: PayloadWidth,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> PayloadViewMut<'a> {
    /// The values of `view` as raw bits; `Error::Unsupported` for an element
    /// size other than 1, 2, 4 or 8 bytes.
    pub fn new<V: DeviceType>(view: DeviceViewMut<'a, V>) -> Result<Self> {
        Ok(PayloadViewMut {
            ptr: view.device_ptr(),
            len: view.len(),
            width: PayloadWidth::of_bytes(V::BYTES)?,
            _borrow: PhantomData,
        })
    }
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes per value.
    pub fn width(&self) -> PayloadWidth {
        self.width
    }
    /// Device address of the first value.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * self.width.bytes()
    }
    /// A shorter-lived writable view of the same values.
    pub fn reborrow(&mut self) -> PayloadViewMut<'_> {
        PayloadViewMut {
            ptr: self.ptr,
            len: self.len,
            width: self.width,
            _borrow: PhantomData,
        }
    }
    /// The same values, read-only.
    pub fn as_view(&self) -> PayloadView<'_> {
        PayloadView {
            ptr: self.ptr,
            len: self.len,
            width: self.width,
            _borrow: PhantomData,
        }
    }
}
