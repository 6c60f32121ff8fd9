//! Typed device memory and views of it.
//!
//! | CPU          | GPU                    |
//! |--------------|------------------------|
//! | `Vec<T>`     | [`DeviceBuffer<T>`]    |
//! | `&[T]`       | [`DeviceView<'_, T>`]  |
//! | `&mut [T]`   | [`DeviceViewMut<'_, T>`] |
//!
//! Lengths are `usize` element counts (64-bit); byte counts are checked for
//! overflow. Every operation of the workspace takes views, so a sub-range of
//! a buffer, or a caller's cudarc `CudaSlice`, works wherever a whole buffer
//! does.
//!
//! ## A caller's cudarc buffers
//!
//! | cudarc | lent to parprims as | parprims work on the `Gpu`'s stream is recorded as |
//! |---|---|---|
//! | `&CudaSlice<T>`, `CudaView<'_, T>`, `&CudaView`, `&CudaViewMut` | [`CudaRead`] → [`DeviceView`] | a read |
//! | `&mut CudaSlice<T>`, `CudaViewMut<'_, T>`, `&mut CudaViewMut` | [`CudaWrite`] → [`DeviceViewMut`] | a write |
//! | `CudaSlice<T>` (owned) | [`DeviceBuffer::from_cudarc`] | (the caller orders it) |
//! | ← [`DeviceBuffer::into_cudarc`] | `CudaSlice<T>`, no copy | a write, up to that point |
//!
//! cudarc orders a buffer's users on different streams with two events per
//! allocation (when its context tracks events, the default once a context
//! has several streams): a read waits for the last write, a write for the
//! last read and write, and each records its own event on its stream
//! afterwards. [`CudaRead::new`] and [`CudaWrite::new`] take part in that
//! protocol with the `Gpu`'s stream: the stream waits for the buffer's
//! earlier work when the loan starts, and the loan's event is recorded on
//! the stream when the loan is dropped, after every parprims operation that
//! used its views has been enqueued. The borrow checker ends the loan before
//! the caller's own code can touch the buffer again, so the caller's other
//! streams wait for parprims' work. This holds however an algorithm passes
//! the pointer to its kernels (a kernel argument, a raw scalar, a copy),
//! which a record per launch could not promise.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cudarc::driver::{
    result as driver_result, CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr,
    DevicePtrMut, DeviceSlice, SyncOnDrop,
};

use crate::element::DeviceType;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::kernel::ModuleSource;
use crate::launch::grid_1d;
use crate::KernelArgs;

/// An owned, typed allocation on the device.
///
/// Allocated stream-ordered on the [`Gpu`]'s stream and freed the same way
/// when dropped, so dropping a buffer that a queued kernel still uses is
/// safe. A zero-length buffer holds no allocation.
pub struct DeviceBuffer<T: DeviceType> {
    slice: Option<CudaSlice<T>>,
    len: usize,
}

impl<T: DeviceType> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}]", T::SUFFIX, self.len)
    }
}

fn byte_len<T: DeviceType>(len: usize) -> Result<usize> {
    len.checked_mul(T::BYTES)
        .ok_or_else(|| Error::invalid("len", format!("{len} elements overflow a byte count")))
}

fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or(Error::OutOfBounds {
            start: s,
            end: s,
            len,
        })?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e
            .checked_add(1)
            .ok_or(Error::OutOfBounds { start, end: e, len })?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::OutOfBounds { start, end, len });
    }
    Ok((start, end))
}

impl<T: DeviceType> DeviceBuffer<T> {
    /// Allocates `len` elements without initialising them.
    ///
    /// # Safety
    /// The contents are whatever the memory held; read them only after
    /// writing them.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let host = [1.0f32, 2.0, 3.0];
    /// // SAFETY: the copy below writes every element before any is read.
    /// let mut output = unsafe { DeviceBuffer::<f32>::uninit(&gpu, host.len())? };
    /// output.view_mut().copy_from_host(&gpu, &host)?;
    /// assert_eq!(output.to_host(&gpu)?, host);
    /// # Ok(()) }
    /// ```
    pub unsafe fn uninit(gpu: &Gpu, len: usize) -> Result<Self> {
        // The byte count must fit before the pool is asked.
        byte_len::<T>(len)?;
        if len == 0 {
            return Ok(DeviceBuffer { slice: None, len });
        }
        Ok(DeviceBuffer {
            slice: Some(gpu.alloc_uninit::<T>(len)?),
            len,
        })
    }

    /// `len` zeros.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let counts = DeviceBuffer::<u64>::zeros(&gpu, 4)?;
    /// assert_eq!(counts.to_host(&gpu)?, vec![0; 4]);
    /// # Ok(()) }
    /// ```
    pub fn zeros(gpu: &Gpu, len: usize) -> Result<Self> {
        // SAFETY: every byte is set to zero below, before anyone reads it.
        let mut buffer = unsafe { Self::uninit(gpu, len)? };
        if let Some(slice) = buffer.slice.as_mut() {
            gpu.cudarc_stream().memset_zeros(slice)?;
        }
        Ok(buffer)
    }

    /// `len` copies of `value`, written by a fill kernel.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let ones = DeviceBuffer::filled(&gpu, 3, 1.5f64)?;
    /// assert_eq!(ones.to_host(&gpu)?, vec![1.5; 3]);
    /// # Ok(()) }
    /// ```
    pub fn filled(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        // SAFETY: fill writes every element before anyone reads it.
        let mut buffer = unsafe { Self::uninit(gpu, len)? };
        buffer.view_mut().fill(gpu, value)?;
        Ok(buffer)
    }

    /// `len` copies of [`DeviceType::poison`]: an output to write into in tests
    /// and benchmarks, so an element the algorithm skipped shows up.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// use gpu_core::DeviceType;
    /// let output = DeviceBuffer::<i32>::poisoned(&gpu, 3)?;
    /// assert_eq!(output.to_host(&gpu)?, vec![i32::poison(); 3]); // overwritten by the operation under test
    /// # Ok(()) }
    /// ```
    pub fn poisoned(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::filled(gpu, len, T::poison())
    }

    /// Copies `host` to a new device buffer (waits for the copy).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let data = DeviceBuffer::from_host(&gpu, &[3u8, 1, 4])?;
    /// assert_eq!(data.len(), 3);
    /// assert_eq!(data.to_host(&gpu)?, vec![3, 1, 4]);
    /// # Ok(()) }
    /// ```
    pub fn from_host(gpu: &Gpu, host: &[T]) -> Result<Self> {
        // SAFETY: the whole buffer is written by the copy below.
        let mut buffer = unsafe { Self::uninit(gpu, host.len())? };
        buffer.view_mut().copy_from_host(gpu, host)?;
        Ok(buffer)
    }

    /// Wraps a cudarc slice without copying. Its stream should be the
    /// [`Gpu`]'s (or be synchronised before parprims uses the buffer): the
    /// buffer's views record nothing in cudarc's events. To lend a slice
    /// that other streams use, with the ordering recorded, use
    /// [`CudaRead`] / [`CudaWrite`] instead.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// // A slice from the caller's own cudarc code, on the Gpu's stream.
    /// let slice = gpu.cudarc_stream().clone_htod(&[1i32, 2, 3])?;
    /// let buffer = DeviceBuffer::from_cudarc(slice);
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn from_cudarc(slice: CudaSlice<T>) -> Self {
        let len = slice.len();
        DeviceBuffer {
            slice: Some(slice),
            len,
        }
    }

    /// Gives the allocation back as a cudarc slice, without copying: how an
    /// output parprims allocated (`scan::inclusive`, `compact::select_if`,
    /// [`DeviceBuffer::zeros`], …) becomes the caller's `CudaSlice`. `None`
    /// for an empty buffer (CUDA cannot allocate zero bytes).
    ///
    /// The slice belongs to the stream of the [`Gpu`] that allocated it.
    /// When its context tracks events, a write is recorded on that stream
    /// here, so that the caller's other streams wait for every parprims
    /// operation enqueued on it so far before they read or write the slice.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let output = DeviceBuffer::from_host(&gpu, &[1i32, 3, 6])?; // or scan::inclusive's result, …
    /// let slice: cudarc::driver::CudaSlice<i32> = output.into_cudarc().expect("not empty");
    /// assert_eq!(gpu.cudarc_stream().clone_dtoh(&slice)?, vec![1, 3, 6]);
    /// # Ok(()) }
    /// ```
    pub fn into_cudarc(self) -> Option<CudaSlice<T>> {
        let mut slice = self.slice?;
        let stream = slice.stream().clone();
        // The guard records the slice's write event on its stream when it
        // drops, right here: after all the work already enqueued there.
        let (_, record) = slice.device_ptr_mut(&stream);
        drop(record);
        Some(slice)
    }

    /// The cudarc slice behind the buffer (`None` when empty). Nothing is
    /// recorded in its events: order other streams with the [`Gpu`]'s
    /// yourself, or take the slice with [`DeviceBuffer::into_cudarc`].
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// let slice = buffer.as_cudarc().expect("not empty");
    /// assert_eq!(slice.len(), 3);
    /// assert!(DeviceBuffer::<i32>::zeros(&gpu, 0)?.as_cudarc().is_none());
    /// # Ok(()) }
    /// ```
    pub fn as_cudarc(&self) -> Option<&CudaSlice<T>> {
        self.slice.as_ref()
    }

    fn raw_ptr(&self) -> u64 {
        self.slice.as_ref().map_or(0, untracked_ptr)
    }

    /// The whole buffer as a read-only view.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// let view = buffer.view(); // what read-only parprims inputs take
    /// assert_eq!((view.len(), view.device_ptr()), (3, buffer.view().device_ptr()));
    /// # Ok(()) }
    /// ```
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView {
            ptr: self.raw_ptr(),
            len: self.len,
            _borrow: PhantomData,
        }
    }

    /// The whole buffer as a writable view.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<i32>::zeros(&gpu, 3)?;
    /// buffer.view_mut().fill(&gpu, 7)?; // what parprims outputs take
    /// assert_eq!(buffer.to_host(&gpu)?, vec![7, 7, 7]);
    /// # Ok(()) }
    /// ```
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            ptr: self.raw_ptr(),
            len: self.len,
            _borrow: PhantomData,
        }
    }

    /// Elements `range` as a read-only view.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4, 5])?;
    /// assert_eq!(buffer.slice(1..4)?.to_host(&gpu)?, vec![2, 3, 4]);
    /// assert!(buffer.slice(4..9).is_err()); // out of bounds
    /// # Ok(()) }
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.view().slice(range)
    }

    /// Elements `range` as a writable view.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4, 5])?;
    /// buffer.slice_mut(3..)?.fill(&gpu, 0)?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1, 2, 3, 0, 0]);
    /// # Ok(()) }
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        self.view_mut().into_slice(range)
    }

    /// Copies the buffer to the host (waits for the stream).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1.0f32, 2.0])?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.view().to_host(gpu)
    }
}

/// A read-only view of `len` elements of device memory.
#[derive(Clone, Copy)]
pub struct DeviceView<'a, T: DeviceType> {
    ptr: u64,
    len: usize,
    _borrow: PhantomData<&'a T>,
}

/// A writable view of `len` elements of device memory.
pub struct DeviceViewMut<'a, T: DeviceType> {
    ptr: u64,
    len: usize,
    _borrow: PhantomData<&'a mut T>,
}

/// `{kind}<{suffix}>[len] @ address`: the `Debug` form of views and loans.
fn fmt_device_memory(
    f: &mut std::fmt::Formatter<'_>,
    kind: &str,
    suffix: &str,
    len: usize,
    ptr: u64,
) -> std::fmt::Result {
    write!(f, "{kind}<{suffix}>[{len}] @ {ptr:#x}")
}

/// The length accessors of buffers and views (each holds `len`).
macro_rules! length_accessors {
    ($($memory:ty),*) => {$(
        impl<T: DeviceType> $memory {
            /// Number of elements.
            ///
            /// ```no_run
            /// use gpu_core::{DeviceBuffer, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let buffer = DeviceBuffer::<f64>::zeros(&gpu, 1000)?;
            /// assert_eq!((buffer.len(), buffer.bytes()), (1000, 8000));
            /// assert!(!buffer.is_empty() && buffer.view().slice(10..10)?.is_empty());
            /// # Ok(()) }
            /// ```
            pub fn len(&self) -> usize {
                self.len
            }
            /// Whether it has no elements.
            ///
            /// ```no_run
            /// use gpu_core::{DeviceBuffer, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let buffer = DeviceBuffer::<f64>::zeros(&gpu, 1000)?;
            /// assert_eq!((buffer.len(), buffer.bytes()), (1000, 8000));
            /// assert!(!buffer.is_empty() && buffer.view().slice(10..10)?.is_empty());
            /// # Ok(()) }
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }
            /// Size in bytes.
            ///
            /// ```no_run
            /// use gpu_core::{DeviceBuffer, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let buffer = DeviceBuffer::<f64>::zeros(&gpu, 1000)?;
            /// assert_eq!((buffer.len(), buffer.bytes()), (1000, 8000));
            /// assert!(!buffer.is_empty() && buffer.view().slice(10..10)?.is_empty());
            /// # Ok(()) }
            /// ```
            pub fn bytes(&self) -> usize {
                self.len * T::BYTES
            }
        }
    )*};
}
length_accessors!(DeviceBuffer<T>, DeviceView<'_, T>, DeviceViewMut<'_, T>);

/// The address and `Debug` form both views share.
macro_rules! view_accessors {
    ($($view:ident),*) => {$(
        impl<T: DeviceType> $view<'_, T> {
            /// The device address of the first element (0 for an empty buffer).
            ///
            /// ```no_run
            /// use gpu_core::{DeviceBuffer, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let gpu = Gpu::new(0)?;
            /// let buffer = DeviceBuffer::<u32>::zeros(&gpu, 8)?;
            /// let (whole, tail) = (buffer.view(), buffer.slice(4..)?);
            /// assert_eq!(tail.device_ptr(), whole.device_ptr() + 4 * 4); // 4-byte elements
            /// # Ok(()) }
            /// ```
            pub fn device_ptr(&self) -> u64 {
                self.ptr
            }
        }

        impl<T: DeviceType> std::fmt::Debug for $view<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                fmt_device_memory(f, stringify!($view), T::SUFFIX, self.len, self.ptr)
            }
        }
    )*};
}
view_accessors!(DeviceView, DeviceViewMut);

impl<'a, T: DeviceType> DeviceView<'a, T> {
    /// Elements `range` of this view.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3, 4, 5])?;
    /// let middle = buffer.view().slice(1..4)?;
    /// assert_eq!(middle.slice(1..)?.to_host(&gpu)?, vec![3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceView {
            ptr: self.ptr + (start * T::BYTES) as u64,
            len: end - start,
            _borrow: PhantomData,
        })
    }
    /// Whether this view and `other` share any byte of memory.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::<u32>::zeros(&gpu, 8)?;
    /// let (head, tail) = (buffer.slice(..4)?, buffer.slice(4..)?);
    /// assert!(!head.overlaps(tail.device_ptr(), tail.bytes()));
    /// assert!(buffer.view().overlaps(tail.device_ptr(), tail.bytes()));
    /// # Ok(()) }
    /// ```
    pub fn overlaps(&self, other_ptr: u64, other_bytes: usize) -> bool {
        let (a0, a1) = (self.ptr, self.ptr + self.bytes() as u64);
        let (b0, b1) = (other_ptr, other_ptr + other_bytes as u64);
        self.len > 0 && other_bytes > 0 && a0 < b1 && b0 < a1
    }
    /// Copies the view to the host (waits for the stream).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// assert_eq!(buffer.view().slice(1..)?.to_host(&gpu)?, vec![2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        let mut host = vec![T::default(); self.len];
        self.copy_to_host(gpu, &mut host)?;
        Ok(host)
    }
    /// Copies the view into `host` (waits for the stream).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// let mut host = [0i32; 3];
    /// buffer.view().copy_to_host(&gpu, &mut host)?; // into memory the caller reuses
    /// assert_eq!(host, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn copy_to_host(&self, gpu: &Gpu, host: &mut [T]) -> Result<()> {
        Error::check_len("host slice", self.len, host.len())?;
        if self.len == 0 {
            return Ok(());
        }
        gpu.bind()?;
        // SAFETY: `host` has `len` elements; the view covers `len` elements
        // of live device memory; the copy is waited for before returning, so
        // `host` outlives it even if it is pinned memory.
        unsafe { driver_result::memcpy_dtoh_async(host, self.ptr, gpu.cu_stream()) }?;
        gpu.synchronize()
    }
}

impl<'a, T: DeviceType> DeviceViewMut<'a, T> {
    /// A read-only view of the same elements.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// let output = buffer.view_mut();
    /// assert_eq!(output.as_view().to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView {
            ptr: self.ptr,
            len: self.len,
            _borrow: PhantomData,
        }
    }
    /// A shorter-lived writable view of the same elements.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<i32>::zeros(&gpu, 4)?;
    /// let mut output = buffer.view_mut();
    /// output.reborrow().fill(&gpu, 1)?; // lend it for one call ...
    /// output.slice_mut(2..)?.fill(&gpu, 2)?; // ... and keep using it
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1, 1, 2, 2]);
    /// # Ok(()) }
    /// ```
    pub fn reborrow(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            ptr: self.ptr,
            len: self.len,
            _borrow: PhantomData,
        }
    }
    /// Elements `range` of this view, consuming it.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<i32>::zeros(&gpu, 4)?;
    /// let mut tail = buffer.view_mut().into_slice(1..)?;
    /// tail.fill(&gpu, 9)?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![0, 9, 9, 9]);
    /// # Ok(()) }
    /// ```
    pub fn into_slice(self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'a, T>> {
        let (start, end) = resolve_range(range, self.len)?;
        Ok(DeviceViewMut {
            ptr: self.ptr + (start * T::BYTES) as u64,
            len: end - start,
            _borrow: PhantomData,
        })
    }
    /// Elements `range` of this view, borrowed.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<i32>::zeros(&gpu, 4)?;
    /// let mut output = buffer.view_mut();
    /// output.slice_mut(..1)?.fill(&gpu, 5)?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![5, 0, 0, 0]);
    /// # Ok(()) }
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        self.reborrow().into_slice(range)
    }
    /// Splits into `[0, mid)` and `[mid, len)`.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<i32>::zeros(&gpu, 5)?;
    /// let (mut head, mut tail) = buffer.view_mut().split_at_mut(2)?; // two outputs at once
    /// head.fill(&gpu, 1)?;
    /// tail.fill(&gpu, 2)?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![1, 1, 2, 2, 2]);
    /// # Ok(()) }
    /// ```
    pub fn split_at_mut(self, mid: usize) -> Result<(DeviceViewMut<'a, T>, DeviceViewMut<'a, T>)> {
        if mid > self.len {
            return Err(Error::OutOfBounds {
                start: mid,
                end: mid,
                len: self.len,
            });
        }
        let head = DeviceViewMut {
            ptr: self.ptr,
            len: mid,
            _borrow: PhantomData,
        };
        let tail = DeviceViewMut {
            ptr: self.ptr + (mid * T::BYTES) as u64,
            len: self.len - mid,
            _borrow: PhantomData,
        };
        Ok((head, tail))
    }
    /// The same memory as elements of `U`, as many whole ones as it holds
    /// (scratch words carved into typed temporaries). Errors when the
    /// address is not aligned for `U`.
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut words = DeviceBuffer::<u64>::zeros(&gpu, 3)?;
    /// let mut halves = words.view_mut().into_elements::<f32>()?;
    /// assert_eq!(halves.len(), 6);
    /// halves.fill(&gpu, 1.0)?;
    /// # Ok(()) }
    /// ```
    pub fn into_elements<U: DeviceType>(self) -> Result<DeviceViewMut<'a, U>> {
        if !self.ptr.is_multiple_of(std::mem::align_of::<U>() as u64) {
            return Err(Error::invalid(
                "view",
                format!("{:#x} is not aligned for {}", self.ptr, U::SUFFIX),
            ));
        }
        Ok(DeviceViewMut {
            ptr: self.ptr,
            len: self.len * T::BYTES / U::BYTES,
            _borrow: PhantomData,
        })
    }
    /// Copies `host` into the view (waits for the copy).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<f32>::zeros(&gpu, 3)?;
    /// buffer.view_mut().copy_from_host(&gpu, &[0.5, 1.5, 2.5])?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![0.5, 1.5, 2.5]);
    /// # Ok(()) }
    /// ```
    pub fn copy_from_host(&mut self, gpu: &Gpu, host: &[T]) -> Result<()> {
        Error::check_len("host slice", self.len, host.len())?;
        if self.len == 0 {
            return Ok(());
        }
        gpu.bind()?;
        // SAFETY: lengths checked; the copy is waited for before returning.
        unsafe { driver_result::memcpy_htod_async(self.ptr, host, gpu.cu_stream()) }?;
        gpu.synchronize()
    }
    /// Copies `src` (same length) into the view, device to device, enqueued
    /// on the stream (does not wait).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let source = DeviceBuffer::from_host(&gpu, &[1i32, 2, 3])?;
    /// let mut copy = DeviceBuffer::<i32>::zeros(&gpu, 3)?;
    /// copy.view_mut().copy_from(&gpu, &source.view())?;
    /// assert_eq!(copy.to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn copy_from(&mut self, gpu: &Gpu, src: &DeviceView<'_, T>) -> Result<()> {
        Error::check_len("copy source", self.len, src.len)?;
        if self.len == 0 {
            return Ok(());
        }
        gpu.bind()?;
        // SAFETY: both ranges are live device memory of `bytes()` bytes.
        unsafe {
            driver_result::memcpy_dtod_async(self.ptr, src.ptr, self.bytes(), gpu.cu_stream())
        }?;
        Ok(())
    }
    /// Writes `value` into every element (enqueued; does not wait).
    ///
    /// ```no_run
    /// use gpu_core::{DeviceBuffer, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let mut buffer = DeviceBuffer::<u16>::zeros(&gpu, 4)?;
    /// buffer.view_mut().fill(&gpu, 0xffff)?;
    /// assert_eq!(buffer.to_host(&gpu)?, vec![0xffff; 4]);
    /// # Ok(()) }
    /// ```
    pub fn fill(&mut self, gpu: &Gpu, value: T) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let source = fill_module::<T>();
        let kernel = gpu.kernel(&source, &fill_entry::<T>())?;
        let (config, _blocks) = grid_1d(self.len as u64, 256, 1, 0)?;
        let mut args = KernelArgs::new();
        args.output(self).scalar(self.len as u64).scalar(value);
        // SAFETY: fill_T(T* out, u64 n, T value) matches the arguments; the
        // kernel writes out[i] only for i < n = len.
        unsafe { gpu.launch(&kernel, config, &args) }
    }
}

impl<'a, T: DeviceType> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buffer: &'a DeviceBuffer<T>) -> Self {
        buffer.view()
    }
}
impl<'a, T: DeviceType> From<&'a mut DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buffer: &'a mut DeviceBuffer<T>) -> Self {
        buffer.view()
    }
}
impl<'a, T: DeviceType> From<&'a mut DeviceBuffer<T>> for DeviceViewMut<'a, T> {
    fn from(buffer: &'a mut DeviceBuffer<T>) -> Self {
        buffer.view_mut()
    }
}
impl<'a, T: DeviceType> From<&'a DeviceViewMut<'_, T>> for DeviceView<'a, T> {
    fn from(view: &'a DeviceViewMut<'_, T>) -> Self {
        view.as_view()
    }
}
impl<'a, T: DeviceType> From<&'a mut DeviceViewMut<'_, T>> for DeviceViewMut<'a, T> {
    fn from(view: &'a mut DeviceViewMut<'_, T>) -> Self {
        view.reborrow()
    }
}
/// Untracked: the view records nothing in the slice's cudarc events, so it
/// is right only when the slice's other users are ordered with the stream
/// parprims runs on (the same stream, a context without event tracking, or
/// a synchronisation). With other streams, lend it with [`CudaRead::new`].
impl<'a, T: DeviceType> From<&'a CudaSlice<T>> for DeviceView<'a, T> {
    fn from(slice: &'a CudaSlice<T>) -> Self {
        DeviceView {
            ptr: untracked_ptr(slice),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }
}
/// Untracked, like the `&CudaSlice` conversion to [`DeviceView`]: with
/// other streams, lend it with [`CudaWrite::new`] so the write is recorded.
impl<'a, T: DeviceType> From<&'a mut CudaSlice<T>> for DeviceViewMut<'a, T> {
    fn from(slice: &'a mut CudaSlice<T>) -> Self {
        DeviceViewMut {
            ptr: untracked_ptr(slice),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }
}

/// The device address of `slice`, recording nothing: cudarc hands out
/// addresses only with a guard that records a read when dropped, so the
/// guard is forgotten (it holds two references and nothing else). On a
/// context with event tracking the slice's own stream is still made to wait
/// for its last write (cudarc does that before returning the address),
/// which orders nothing parprims runs elsewhere.
fn untracked_ptr<T>(slice: &CudaSlice<T>) -> u64 {
    let (ptr, record) = slice.device_ptr(slice.stream());
    std::mem::forget(record);
    ptr
}

mod sealed {
    pub trait Sealed {}
}

/// cudarc memory that parprims can read: `&CudaSlice<T>`, `CudaView<'_, T>`
/// (by value or by reference) and `&CudaViewMut<'_, T>`. Sealed; see
/// [`CudaRead::new`].
pub trait CudarcReadable<'a, T>: sealed::Sealed {
    /// The context the memory belongs to.
    #[doc(hidden)]
    fn cudarc_context(&self) -> &Arc<CudaContext>;
    /// Elements.
    #[doc(hidden)]
    fn cudarc_len(&self) -> usize;
    /// cudarc's read protocol on `stream`: the address, with the guard that
    /// records the read when dropped.
    #[doc(hidden)]
    fn lend_for_reading(self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
}

/// cudarc memory that parprims can write: `&mut CudaSlice<T>` and
/// `CudaViewMut<'_, T>` (by value or by mutable reference). Sealed; see
/// [`CudaWrite::new`].
pub trait CudarcWritable<'a, T>: sealed::Sealed {
    /// The context the memory belongs to.
    #[doc(hidden)]
    fn cudarc_context(&self) -> &Arc<CudaContext>;
    /// Elements.
    #[doc(hidden)]
    fn cudarc_len(&self) -> usize;
    /// cudarc's write protocol on `stream`: the address, with the guard
    /// that records the write when dropped.
    #[doc(hidden)]
    fn lend_for_writing(self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
}

/// Implements `$trait` (`CudarcReadable` or `CudarcWritable`) for each
/// cudarc source, `$lend` naming the trait's protocol method.
macro_rules! lendable {
    ($trait:ident :: $lend_fn:ident {
        $(impl<$($lt:lifetime),*> for $source:ty => |$s:ident, $stream:ident| $lend:expr;)*
    }) => {$(
        impl<$($lt,)* T> sealed::Sealed for $source {}
        impl<$($lt,)* T> $trait<'a, T> for $source {
            fn cudarc_context(&self) -> &Arc<CudaContext> {
                self.stream().context()
            }
            fn cudarc_len(&self) -> usize {
                self.len()
            }
            fn $lend_fn(self, $stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                let $s = self;
                $lend
            }
        }
    )*};
}
lendable! {
    CudarcReadable::lend_for_reading {
        impl<'a> for &'a CudaSlice<T> => |s, stream| s.device_ptr(stream);
        impl<'a> for CudaView<'a, T> => |s, stream| s.view_ptr(stream);
        impl<'a, 'b> for &'a CudaView<'b, T> => |s, stream| s.device_ptr(stream);
        impl<'a, 'b> for &'a CudaViewMut<'b, T> => |s, stream| s.device_ptr(stream);
    }
}
lendable! {
    CudarcWritable::lend_for_writing {
        impl<'a> for &'a mut CudaSlice<T> => |s, stream| s.device_ptr_mut(stream);
        impl<'a> for CudaViewMut<'a, T> => |s, stream| s.view_ptr_mut(stream);
        impl<'a, 'b> for &'a mut CudaViewMut<'b, T> => |s, stream| s.device_ptr_mut(stream);
    }
}

/// Checks that memory of context `source` can be lent to `gpu`: the same
/// CUDA context, and a context handle that records events if the source's
/// does (cudarc records through the stream's handle).
fn check_loan(gpu: &Gpu, source: &CudaContext) -> Result<()> {
    let ours = gpu.cudarc_context();
    if **ours != *source {
        return Err(Error::invalid(
            "source",
            "the cudarc buffer belongs to another CUDA context than this Gpu's",
        ));
    }
    if source.is_managing_stream_synchronization() && !ours.is_managing_stream_synchronization() {
        return Err(Error::invalid(
            "gpu",
            "the cudarc buffer's context tracks events across streams, but this Gpu's handle \
             of that context does not (Gpu::new turns tracking off on its own handle), so the \
             loan could not be recorded: make the Gpu with Gpu::from_cudarc(ctx, stream) from \
             the buffer's own context",
        ));
    }
    Ok(())
}

/// A caller's cudarc memory lent to parprims for reading, on one [`Gpu`]'s
/// stream.
///
/// cudarc orders a buffer's users on different streams with two events per
/// allocation (when its context tracks events, the default once a context
/// has several streams): a read waits for the last write, a write for the
/// last read and write, and each records its own event on its stream
/// afterwards. A loan takes part in that protocol with the `Gpu`'s stream
/// for as long as it lives, so it covers every parprims operation that uses
/// its views, however the algorithm passes the address to its kernels; the
/// borrow checker ends the loan before the caller's code can touch the
/// buffer again.
///
/// Made by [`CudaRead::new`]: the `Gpu`'s stream waits for the memory's
/// last recorded write. [`CudaRead::view`] gives the [`DeviceView`] that
/// parprims operations take; dropping the loan records a read on the
/// stream, after every operation enqueued while it lived. Use its views
/// with the `Gpu` that made it only.
///
/// ```no_run
/// # use gpu_core::{CudaRead, CudaWrite, Gpu};
/// # fn f(gpu: &Gpu, input: &cudarc::driver::CudaSlice<f32>, output: &mut cudarc::driver::CudaSlice<f32>) -> gpu_core::Result<()> {
/// let input = CudaRead::new(gpu, input)?;
/// let mut output = CudaWrite::new(gpu, output.slice_mut(0..input.len()))?;
/// output.view_mut().copy_from(gpu, &input.view())?;
/// // Both loans end here: a read and a write are recorded on gpu's stream.
/// # Ok(()) }
/// ```
pub struct CudaRead<'a, T: DeviceType> {
    loan: Loan<'a>,
    _borrow: PhantomData<&'a T>,
}

/// A caller's cudarc memory lent to parprims for writing, on one [`Gpu`]'s
/// stream (the protocol is [`CudaRead`]'s).
///
/// Made by [`CudaWrite::new`]: the `Gpu`'s stream waits for the memory's
/// last recorded read and write. [`CudaWrite::view_mut`] gives the
/// [`DeviceViewMut`] that parprims operations take; dropping the loan
/// records a write on the stream, after every operation enqueued while it
/// lived. Use its views with the `Gpu` that made it only.
pub struct CudaWrite<'a, T: DeviceType> {
    loan: Loan<'a>,
    _borrow: PhantomData<&'a mut T>,
}

/// What a [`CudaRead`] or a [`CudaWrite`] holds: the lent address and
/// length, and cudarc's guard that records the loan's read or write on the
/// `Gpu`'s stream when dropped. Which of the two is recorded is fixed by
/// the protocol that made the guard (`lend_for_reading` or
/// `lend_for_writing`), so the loan itself is the same for both.
struct Loan<'a> {
    ptr: u64,
    len: usize,
    _record: SyncOnDrop<'a>,
}

impl<'a> Loan<'a> {
    /// Lends `source` on `gpu`'s stream: checks it with [`check_loan`]
    /// (nothing enqueued on an error), then runs `protocol`, cudarc's read
    /// or write protocol for the source, whose guard records that access
    /// when the loan is dropped.
    fn lend<S>(
        gpu: &'a Gpu,
        source: S,
        context: impl FnOnce(&S) -> &Arc<CudaContext>,
        len: impl FnOnce(&S) -> usize,
        protocol: impl FnOnce(S, &'a CudaStream) -> (u64, SyncOnDrop<'a>),
    ) -> Result<Self> {
        check_loan(gpu, context(&source))?;
        let len = len(&source);
        let (ptr, record) = protocol(source, gpu.cudarc_stream());
        Ok(Loan {
            ptr,
            len,
            _record: record,
        })
    }

    fn view<T: DeviceType>(&self) -> DeviceView<'_, T> {
        DeviceView {
            ptr: self.ptr,
            len: self.len,
            _borrow: PhantomData,
        }
    }

    fn view_mut<T: DeviceType>(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            ptr: self.ptr,
            len: self.len,
            _borrow: PhantomData,
        }
    }
}

impl<'a, T: DeviceType> CudaRead<'a, T> {
    /// Lends `source` (`&CudaSlice<T>`, a `CudaView`, `&CudaView`,
    /// `&CudaViewMut`) to parprims operations on `gpu`'s stream, for
    /// reading.
    ///
    /// Errors ([`Error::InvalidArgument`], nothing enqueued): the memory
    /// belongs to another CUDA context; or its context handle tracks events
    /// and `gpu`'s handle does not (make `gpu` with [`Gpu::from_cudarc`]
    /// from the buffer's context).
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use gpu_core::{CudaRead, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let input = stream.clone_htod(&[1i32, 2, 3])?; // the caller's own buffer
    /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
    /// let lent = CudaRead::new(&gpu, &input)?; // gpu's stream waits for the upload
    /// assert_eq!(lent.view().to_host(&gpu)?, vec![1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &'a Gpu, source: impl CudarcReadable<'a, T>) -> Result<Self> {
        Ok(CudaRead {
            loan: Loan::lend(
                gpu,
                source,
                |s| s.cudarc_context(),
                |s| s.cudarc_len(),
                |s, stream| s.lend_for_reading(stream),
            )?,
            _borrow: PhantomData,
        })
    }
}

impl<'a, T: DeviceType> CudaWrite<'a, T> {
    /// Lends `source` (`&mut CudaSlice<T>`, a `CudaViewMut`, or
    /// `&mut CudaViewMut`) to parprims operations on `gpu`'s stream, for
    /// writing (and reading).
    ///
    /// Errors: as [`CudaRead::new`].
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use gpu_core::{CudaWrite, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut output = stream.alloc_zeros::<i32>(3)?; // the caller's own buffer
    /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
    /// CudaWrite::new(&gpu, &mut output)?.view_mut().fill(&gpu, 7)?; // the loan ends here
    /// assert_eq!(stream.clone_dtoh(&output)?, vec![7, 7, 7]); // stream waits for the write
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: &'a Gpu, source: impl CudarcWritable<'a, T>) -> Result<Self> {
        Ok(CudaWrite {
            loan: Loan::lend(
                gpu,
                source,
                |s| s.cudarc_context(),
                |s| s.cudarc_len(),
                |s, stream| s.lend_for_writing(stream),
            )?,
            _borrow: PhantomData,
        })
    }

    /// The lent memory as a writable view, for parprims operations on the
    /// `Gpu` that made the loan.
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use gpu_core::{CudaWrite, Gpu};
    /// # fn main() -> gpu_core::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let mut output = ctx.default_stream().alloc_zeros::<u64>(4)?;
    /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
    /// let mut lent = CudaWrite::new(&gpu, output.slice_mut(1..))?;
    /// lent.view_mut().fill(&gpu, 1)?;
    /// drop(lent); // records the write: the default stream's copy below waits for it
    /// assert_eq!(ctx.default_stream().clone_dtoh(&output)?, vec![0, 1, 1, 1]);
    /// # Ok(()) }
    /// ```
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.loan.view_mut()
    }
}

/// The accessors both loans share, over their [`Loan`].
macro_rules! loan_accessors {
    ($($loan:ident),*) => {$(
        impl<T: DeviceType> $loan<'_, T> {
            /// The lent memory as a read-only view, for parprims operations
            /// on the `Gpu` that made the loan.
            ///
            /// ```no_run
            /// use cudarc::driver::CudaContext;
            /// use gpu_core::{CudaRead, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let ctx = CudaContext::new(0)?;
            /// let input = ctx.default_stream().clone_htod(&[5u32, 6, 7, 8])?;
            /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
            /// let lent = CudaRead::new(&gpu, input.slice(1..3))?;
            /// assert_eq!((lent.len(), lent.is_empty()), (2, false));
            /// assert_eq!(lent.view().to_host(&gpu)?, vec![6, 7]);
            /// # Ok(()) }
            /// ```
            pub fn view(&self) -> DeviceView<'_, T> {
                self.loan.view()
            }

            /// Number of elements.
            ///
            /// ```no_run
            /// use cudarc::driver::CudaContext;
            /// use gpu_core::{CudaRead, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let ctx = CudaContext::new(0)?;
            /// let input = ctx.default_stream().clone_htod(&[5u32, 6, 7, 8])?;
            /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
            /// let lent = CudaRead::new(&gpu, input.slice(1..3))?;
            /// assert_eq!((lent.len(), lent.is_empty()), (2, false));
            /// assert_eq!(lent.view().to_host(&gpu)?, vec![6, 7]);
            /// # Ok(()) }
            /// ```
            pub fn len(&self) -> usize {
                self.loan.len
            }

            /// Whether the lent memory is empty.
            ///
            /// ```no_run
            /// use cudarc::driver::CudaContext;
            /// use gpu_core::{CudaRead, Gpu};
            /// # fn main() -> gpu_core::Result<()> {
            /// let ctx = CudaContext::new(0)?;
            /// let input = ctx.default_stream().clone_htod(&[5u32, 6, 7, 8])?;
            /// let gpu = Gpu::from_cudarc(ctx.clone(), ctx.new_stream()?)?;
            /// let lent = CudaRead::new(&gpu, input.slice(1..3))?;
            /// assert_eq!((lent.len(), lent.is_empty()), (2, false));
            /// assert_eq!(lent.view().to_host(&gpu)?, vec![6, 7]);
            /// # Ok(()) }
            /// ```
            pub fn is_empty(&self) -> bool {
                self.loan.len == 0
            }
        }

        impl<T: DeviceType> std::fmt::Debug for $loan<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                fmt_device_memory(f, stringify!($loan), T::SUFFIX, self.loan.len, self.loan.ptr)
            }
        }
    )*};
}
loan_accessors!(CudaRead, CudaWrite);

/// Entry name of the fill kernel for `T`.
///
/// ```
/// assert_eq!(gpu_core::fill_entry::<f32>(), "fill_f32");
/// ```
pub fn fill_entry<T: DeviceType>() -> String {
    format!("fill_{}", T::SUFFIX)
}

/// gpu-core's module for `T`: the fill kernel.
///
/// ```
/// use gpu_core::{fill_entry, fill_module};
/// let module = fill_module::<u8>();
/// assert_eq!(module.entries(), [fill_entry::<u8>()]);
/// ```
pub fn fill_module<T: DeviceType>() -> ModuleSource {
    ModuleSource::new(format!("gpu_core_{}", T::SUFFIX))
        .source(parprims_kernels::GPU_CORE)
        .entry(
            fill_entry::<T>(),
            &format!("{t}* out, u64 n, {t} value", t = T::CUDA_TYPE),
            &format!("fill_impl<{}>(out, n, value)", T::CUDA_TYPE),
            Some(256),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_and_reject() {
        assert_eq!(resolve_range(.., 10).unwrap(), (0, 10));
        assert_eq!(resolve_range(2..5, 10).unwrap(), (2, 5));
        assert_eq!(resolve_range(2..=5, 10).unwrap(), (2, 6));
        assert_eq!(resolve_range(10.., 10).unwrap(), (10, 10));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 5..2;
        assert!(resolve_range(reversed, 10).is_err());
        assert!(resolve_range(0..11, 10).is_err());
        assert!(resolve_range(..=usize::MAX, 10).is_err());
    }

    #[test]
    fn byte_lengths_overflow_is_an_error() {
        assert!(byte_len::<u64>(usize::MAX / 4).is_err());
        assert_eq!(byte_len::<u64>(3).unwrap(), 24);
    }
}
