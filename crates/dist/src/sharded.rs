//! [`Sharded`]: one device buffer per local rank, the global array being
//! the shards in rank order; [`Replicated`]: the same small array on every
//! local rank (a reduction's value, a histogram's counts).

use gpu_core::{DeviceBuffer, DeviceType, DeviceView, DeviceViewMut};

use crate::layout::even_blocks;
use crate::{Error, Group, Result};

/// A global array split over the ranks of a [`Group`]: one
/// [`DeviceBuffer`] per local rank, on that rank's GPU, holding the rank's
/// shard in its first `lens()[i]` elements (a compaction's output keeps the
/// input's capacity and records the kept count).
pub struct Sharded<T: DeviceType> {
    buffers: Vec<DeviceBuffer<T>>,
    lens: Vec<usize>,
}

impl<T: DeviceType> std::fmt::Debug for Sharded<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharded").field("lens", &self.lens).finish()
    }
}

impl<T: DeviceType> Sharded<T> {
    /// Splits `data` (the whole global array, on every process) in even
    /// blocks over the group's world ([`even_blocks`]) and copies each
    /// local rank's block to its GPU.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// let data: Vec<i32> = (0..1000).collect();
    /// let x = dist::Sharded::scatter_from_host(&group, &data)?;
    /// assert_eq!(x.gather_to_host(&group)?, data);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn scatter_from_host(group: &Group, data: &[T]) -> Result<Self> {
        let blocks = even_blocks(data.len(), group.world());
        let mut buffers = Vec::with_capacity(group.local_count());
        let mut lens = Vec::with_capacity(group.local_count());
        for rank in &group.ranks {
            let block = blocks[rank.rank].clone();
            lens.push(block.len());
            buffers.push(DeviceBuffer::from_host(&rank.gpu, &data[block])?);
        }
        Ok(Sharded { buffers, lens })
    }

    /// The caller's own layout: `shards[i]` is local rank i's shard, on
    /// that rank's GPU (`group.gpu(i)`), any length. The count must match
    /// the group's local ranks.
    ///
    /// ```no_run
    /// use gpu_core::DeviceBuffer;
    /// let group = dist::Group::all()?;
    /// let shards = (0..group.local_count())
    ///     .map(|i| DeviceBuffer::from_host(group.gpu(i)?, &vec![1u32; 10 * (i + 1)]).map_err(dist::Error::from))
    ///     .collect::<dist::Result<Vec<_>>>()?;
    /// let x = dist::Sharded::from_shards(&group, shards)?;
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn from_shards(group: &Group, shards: Vec<DeviceBuffer<T>>) -> Result<Self> {
        Error::check_len("shards", group.local_count(), shards.len())?;
        let lens = shards.iter().map(|b| b.view().len()).collect();
        Ok(Sharded {
            buffers: shards,
            lens,
        })
    }

    /// Uninitialised shards of `lens` (one per local rank).
    ///
    /// # Safety
    /// Every element must be written before it is read.
    pub(crate) unsafe fn uninit(group: &Group, lens: &[usize]) -> Result<Self> {
        Error::check_len("lens", group.local_count(), lens.len())?;
        let buffers = group
            .ranks
            .iter()
            .zip(lens)
            .map(|(rank, &len)| DeviceBuffer::<T>::uninit(&rank.gpu, len))
            .collect::<gpu_core::Result<Vec<_>>>()?;
        Ok(Sharded {
            buffers,
            lens: lens.to_vec(),
        })
    }

    /// Wraps buffers whose first `lens[i]` elements are the shards.
    pub(crate) fn from_parts(buffers: Vec<DeviceBuffer<T>>, lens: Vec<usize>) -> Self {
        Sharded { buffers, lens }
    }

    /// Checks that this array has one shard per local rank of `group`.
    pub(crate) fn check_group(&self, what: &'static str, group: &Group) -> Result<()> {
        Error::check_len(what, group.local_count(), self.buffers.len())
    }

    /// Each local rank's shard length.
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }

    /// The number of elements this process holds (every shard's length).
    pub fn local_len(&self) -> usize {
        self.lens.iter().sum()
    }

    /// The number of local shards.
    pub fn shard_count(&self) -> usize {
        self.buffers.len()
    }

    /// Local rank `i`'s shard (its first `lens()[i]` elements).
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// let x = dist::Sharded::scatter_from_host(&group, &[1u8, 2, 3, 4])?;
    /// let first = x.shard(0)?; // a DeviceView on group.gpu(0)
    /// assert_eq!(first.len(), x.lens()[0]);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn shard(&self, i: usize) -> Result<DeviceView<'_, T>> {
        let buffer = self.buffers.get(i).ok_or_else(|| {
            Error::invalid(
                "i",
                format!("{i}: there are {} shard(s)", self.buffers.len()),
            )
        })?;
        Ok(buffer.slice(0..self.lens[i])?)
    }

    /// Local rank `i`'s shard, writable.
    pub fn shard_mut(&mut self, i: usize) -> Result<DeviceViewMut<'_, T>> {
        let count = self.buffers.len();
        let len = *self
            .lens
            .get(i)
            .ok_or_else(|| Error::invalid("i", format!("{i}: there are {count} shard(s)")))?;
        Ok(self.buffers[i].slice_mut(0..len)?)
    }

    pub(crate) fn views(&self) -> Vec<DeviceView<'_, T>> {
        self.buffers
            .iter()
            .zip(&self.lens)
            .map(|(b, &len)| {
                b.slice(0..len)
                    .expect("a shard's length is within its buffer")
            })
            .collect()
    }

    pub(crate) fn views_mut(&mut self) -> Vec<DeviceViewMut<'_, T>> {
        self.buffers
            .iter_mut()
            .zip(&self.lens)
            .map(|(b, &len)| {
                b.slice_mut(0..len)
                    .expect("a shard's length is within its buffer")
            })
            .collect()
    }

    /// The buffers, one per local rank (their first `lens()[i]` elements
    /// are the shards).
    pub fn into_buffers(self) -> Vec<DeviceBuffer<T>> {
        self.buffers
    }

    /// The global array on the host: every shard in rank order. Needs
    /// every rank in this process ([`Group::is_whole`]), else
    /// `Unsupported`. Waits for each rank's stream.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// let x = dist::Sharded::scatter_from_host(&group, &[5u64, 6, 7])?;
    /// assert_eq!(x.gather_to_host(&group)?, [5, 6, 7]);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn gather_to_host(&self, group: &Group) -> Result<Vec<T>> {
        self.check_group("shards", group)?;
        if !group.is_whole() {
            return Err(gpu_core::Error::Unsupported(format!(
                "gather_to_host needs every rank in this process ({} of {} here); gather per process",
                group.local_count(),
                group.world()
            ))
            .into());
        }
        let mut host = Vec::with_capacity(self.local_len());
        for (rank, view) in group.ranks.iter().zip(self.views()) {
            host.extend(view.to_host(&rank.gpu)?);
        }
        Ok(host)
    }
}

/// The same small array on every local rank of a group (a reduction's
/// value, a histogram's counts), each copy on its rank's GPU.
pub struct Replicated<T: DeviceType> {
    buffers: Vec<DeviceBuffer<T>>,
}

impl<T: DeviceType> std::fmt::Debug for Replicated<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replicated")
            .field("copies", &self.buffers.len())
            .finish()
    }
}

impl<T: DeviceType> Replicated<T> {
    pub(crate) fn new(buffers: Vec<DeviceBuffer<T>>) -> Self {
        Replicated { buffers }
    }

    /// Local rank `i`'s copy.
    pub fn copy(&self, i: usize) -> Result<DeviceView<'_, T>> {
        self.buffers.get(i).map(|b| b.view()).ok_or_else(|| {
            Error::invalid("i", format!("{i}: there are {} copies", self.buffers.len()))
        })
    }

    /// The values, read from the first local rank (waits for its stream).
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// let x = dist::Sharded::scatter_from_host(&group, &[1.0f32, 2.0, 5.0])?;
    /// let counts = dist::histogram_even::<f32, u32>(&group, &x, 2, 0.0, 4.0)?;
    /// assert_eq!(counts.to_host(&group)?, [1, 1]);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn to_host(&self, group: &Group) -> Result<Vec<T>> {
        let first = group
            .ranks
            .first()
            .ok_or_else(|| Error::invalid("group", "no local rank"))?;
        let buffer = self
            .buffers
            .first()
            .ok_or_else(|| Error::invalid("replicated", "no copy"))?;
        Ok(buffer.to_host(&first.gpu)?)
    }

    /// The buffers, one per local rank.
    pub fn into_buffers(self) -> Vec<DeviceBuffer<T>> {
        self.buffers
    }
}
