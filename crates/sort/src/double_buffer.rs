//! A pair of buffers and a selector: the in-place sorts read
//! [`DoubleBuffer::current`], use the other buffer as their temporary
//! storage, and leave the result in `current` (flipping the selector when
//! the last pass wrote the other buffer). No buffer of keys or values is
//! taken.

use gpu_core::{DeviceType, DeviceView, DeviceViewMut, Error, Result};

/// Two equally long buffers of `T` and which one is current.
///
/// ```no_run
/// use gpu_core::{DeviceBuffer, Gpu};
/// use sort::DoubleBuffer;
/// # fn main() -> gpu_core::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut a = DeviceBuffer::from_host(&gpu, &[2u32, 1])?;
/// let mut b = DeviceBuffer::<u32>::zeros(&gpu, 2)?;
/// let keys = DoubleBuffer::new(a.view_mut(), b.view_mut())?;
/// assert_eq!((keys.selector(), keys.len()), (0, 2));
/// # Ok(()) }
/// ```
pub struct DoubleBuffer<'a, T: DeviceType> {
    buffers: [DeviceViewMut<'a, T>; 2],
    selector: usize,
}

impl<T: DeviceType> std::fmt::Debug for DoubleBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleBuffer")
            .field("buffers", &self.buffers)
            .field("selector", &self.selector)
            .finish()
    }
}

impl<'a, T: DeviceType> DoubleBuffer<'a, T> {
    /// `current` holds the data, `alternate` is the workspace. Errors:
    /// different lengths, overlapping buffers.
    pub fn new(current: DeviceViewMut<'a, T>, alternate: DeviceViewMut<'a, T>) -> Result<Self> {
        Error::check_len("alternate", current.len(), alternate.len())?;
        if current
            .as_view()
            .overlaps(alternate.device_ptr(), alternate.bytes())
        {
            return Err(Error::invalid(
                "alternate",
                "the two buffers of a DoubleBuffer must not overlap",
            ));
        }
        Ok(DoubleBuffer {
            buffers: [current, alternate],
            selector: 0,
        })
    }
    /// Elements per buffer.
    pub fn len(&self) -> usize {
        self.buffers[0].len()
    }
    /// Whether the buffers are empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Which buffer is current: 0 (the first given) or 1.
    pub fn selector(&self) -> usize {
        self.selector
    }
    /// The current buffer (the data, and after a sort the result).
    pub fn current(&self) -> DeviceView<'_, T> {
        self.buffers[self.selector].as_view()
    }
    /// The current buffer, writable.
    pub fn current_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.buffers[self.selector].reborrow()
    }
    /// The other buffer.
    pub fn alternate(&self) -> DeviceView<'_, T> {
        self.buffers[1 - self.selector].as_view()
    }
    /// Swaps the roles of the two buffers.
    pub(crate) fn flip(&mut self) {
        self.selector = 1 - self.selector;
    }
    /// Device addresses of (current, alternate).
    pub(crate) fn addresses(&mut self) -> [u64; 2] {
        [
            self.buffers[self.selector].device_ptr(),
            self.buffers[1 - self.selector].device_ptr(),
        ]
    }
}
