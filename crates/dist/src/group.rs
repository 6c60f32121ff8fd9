//! [`Group`]: the ranks of one communicator that this process drives, each
//! a device with its own [`Gpu`] (context + stream) and NCCL communicator.

use gpu_core::{DeviceBuffer, DeviceType, Gpu};

use crate::nccl::{grouped, nccl_available, Communicator};
use crate::{Error, Result};

/// One rank this process drives: its global rank, its GPU, its
/// communicator, and a second stream on the same device, of the device's
/// highest priority, for exchanges that overlap the rank's own work (the
/// sample sorts' bucket exchanges): its NCCL kernels get SMs before the
/// blocks of the sort or merge running beside them.
pub(crate) struct LocalRank {
    pub(crate) rank: usize,
    pub(crate) gpu: Gpu,
    pub(crate) comm: Communicator,
    pub(crate) side: Gpu,
}

impl LocalRank {
    fn new(rank: usize, gpu: Gpu, comm: Communicator) -> Result<LocalRank> {
        let side = gpu.with_new_priority_stream()?;
        Ok(LocalRank {
            rank,
            gpu,
            comm,
            side,
        })
    }
}

/// The GPUs of one NCCL communicator that this process drives.
///
/// - [`Group::new`] / [`Group::all`]: every rank in this process, one per
///   device of this host, the communicators made together
///   (`ncclCommInitAll`). One thread drives them all: each operation
///   enqueues the local work on every rank's stream, then the exchange
///   inside one `ncclGroupStart`/`ncclGroupEnd`, which NCCL requires when
///   one thread issues a collective on several communicators (otherwise
///   the first rank's call would wait for peers whose calls are never
///   made). Nothing synchronises the host until a result is read.
/// - [`Group::from_unique_id`]: one rank of a larger communicator whose
///   other ranks live in other threads, processes or hosts, joined through
///   an NCCL unique id the caller distributes (MPI, TCP, a shared file).
///
/// A group of one rank runs every code path (the collectives included,
/// which NCCL completes locally) and works on a one-GPU machine.
///
/// Every `Gpu` of a group is its own: the group synchronises all of them
/// before its communicators are freed. `Group` is `Send`, not `Sync`: one
/// thread at a time drives it.
pub struct Group {
    pub(crate) ranks: Vec<LocalRank>,
    world: usize,
    /// Whether every local rank's kernels can write every other local
    /// rank's memory, asked (and enabled) once: [`Group::peers_reach_all`].
    peers: std::sync::OnceLock<bool>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("world", &self.world)
            .field(
                "local_ranks",
                &self.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
            )
            .field(
                "devices",
                &self
                    .ranks
                    .iter()
                    .map(|r| r.gpu.info().ordinal)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Checks a device list against the device count, without a GPU: not
/// empty, no device twice (NCCL refuses two ranks on one GPU), every
/// ordinal below `device_count`.
///
/// ```
/// assert!(dist::validate_devices(&[0, 1], 2).is_ok());
/// assert!(dist::validate_devices(&[], 2).is_err());
/// assert!(dist::validate_devices(&[0, 0], 2).is_err());
/// assert!(dist::validate_devices(&[0, 2], 2).is_err());
/// ```
pub fn validate_devices(devices: &[usize], device_count: usize) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::invalid(
            "devices",
            "a group needs at least one device",
        ));
    }
    for (i, &device) in devices.iter().enumerate() {
        if device >= device_count {
            return Err(gpu_core::Error::BadOrdinal {
                ordinal: device,
                count: device_count,
            }
            .into());
        }
        if devices[..i].contains(&device) {
            return Err(Error::invalid(
                "devices",
                format!("device {device} is listed twice (one rank per GPU)"),
            ));
        }
    }
    Ok(())
}

/// Checks a rank and world size for [`Group::from_unique_id`].
///
/// ```
/// assert!(dist::validate_rank(1, 2).is_ok());
/// assert!(dist::validate_rank(2, 2).is_err());
/// assert!(dist::validate_rank(0, 0).is_err());
/// ```
pub fn validate_rank(rank: usize, world: usize) -> Result<()> {
    if world == 0 || world > i32::MAX as usize {
        return Err(Error::invalid(
            "world",
            format!("{world}: must be 1 to 2^31 - 1"),
        ));
    }
    if rank >= world {
        return Err(Error::invalid(
            "rank",
            format!("{rank} is not below the world size {world}"),
        ));
    }
    Ok(())
}

impl Group {
    /// A group of the listed devices of this host, rank i on
    /// `devices[i]`, each with a new stream.
    ///
    /// Errors: [`Error::NoNccl`] without libnccl, `NoDriver`/`BadOrdinal`
    /// (inside [`Error::Gpu`]) without the devices, an invalid argument for
    /// an empty list or a device listed twice.
    ///
    /// ```no_run
    /// let group = dist::Group::new(&[0, 1])?;
    /// assert_eq!(group.world(), 2);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn new(devices: &[usize]) -> Result<Group> {
        let count = gpu_core::device_count()?;
        validate_devices(devices, count)?;
        nccl_available()?;
        let gpus = devices
            .iter()
            .map(|&d| Gpu::new(d))
            .collect::<gpu_core::Result<Vec<_>>>()?;
        let comms = Communicator::init_all(devices)?;
        let ranks = gpus
            .into_iter()
            .zip(comms)
            .enumerate()
            .map(|(rank, (gpu, comm))| LocalRank::new(rank, gpu, comm))
            .collect::<Result<Vec<_>>>()?;
        Ok(Group {
            peers: std::sync::OnceLock::new(),
            world: ranks.len(),
            ranks,
        })
    }

    /// A group of every device of this host.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// println!("{} GPU(s)", group.world());
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn all() -> Result<Group> {
        let count = gpu_core::device_count()?;
        Group::new(&(0..count).collect::<Vec<_>>())
    }

    /// Rank `rank` of a communicator of `world` ranks, on this host's
    /// device `device`, joined through `id` (from [`unique_id`](crate::unique_id) on one
    /// process, carried to the others by the caller's bootstrap). Blocks
    /// until every rank has joined, so the ranks of one process must join
    /// from different threads. See `docs/multi-gpu.md` for a run across
    /// hosts.
    ///
    /// ```no_run
    /// // Two ranks in two threads of one process (across hosts, send `id` over MPI or TCP).
    /// let id = dist::unique_id()?;
    /// let ranks: Vec<_> = (0..2)
    ///     .map(|rank| std::thread::spawn(move || dist::Group::from_unique_id(&id, rank, 2, rank)))
    ///     .collect();
    /// for rank in ranks {
    ///     let group = rank.join().expect("rank thread")?;
    ///     assert_eq!(group.world(), 2);
    /// }
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn from_unique_id(
        id: &[u8; 128],
        rank: usize,
        world: usize,
        device: usize,
    ) -> Result<Group> {
        validate_rank(rank, world)?;
        let count = gpu_core::device_count()?;
        validate_devices(&[device], count)?;
        nccl_available()?;
        let gpu = Gpu::new(device)?;
        let comm = Communicator::init_rank(&gpu, id, rank, world)?;
        Ok(Group {
            peers: std::sync::OnceLock::new(),
            ranks: vec![LocalRank::new(rank, gpu, comm)?],
            world,
        })
    }

    /// The number of ranks of the communicator (all processes).
    pub fn world(&self) -> usize {
        self.world
    }

    /// The number of ranks this process drives.
    pub fn local_count(&self) -> usize {
        self.ranks.len()
    }

    /// The global ranks this process drives, in order.
    pub fn local_ranks(&self) -> Vec<usize> {
        self.ranks.iter().map(|r| r.rank).collect()
    }

    /// True when this process drives every rank (then
    /// [`Sharded::gather_to_host`](crate::Sharded::gather_to_host) can see the whole array).
    pub fn is_whole(&self) -> bool {
        self.ranks.len() == self.world
    }

    /// Whether the group is whole ([`is_whole`](Self::is_whole)) and the
    /// kernels of every rank can read and write every other rank's device
    /// memory, its memory pool included: peer access is enabled between
    /// every pair the first time this is asked ([`Gpu::enable_peer_access`])
    /// and the answer kept. A group of one rank reaches all.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// println!("peer access between all: {}", group.peers_reach_all()?);
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn peers_reach_all(&self) -> Result<bool> {
        if let Some(&reach) = self.peers.get() {
            return Ok(reach);
        }
        let mut reach = self.is_whole();
        for a in &self.ranks {
            for b in &self.ranks {
                if reach && a.rank != b.rank {
                    reach = a.gpu.enable_peer_access(&b.gpu)?;
                }
            }
        }
        Ok(*self.peers.get_or_init(|| reach))
    }

    /// The `Gpu` (context + stream) of the `i`-th local rank, for the
    /// caller's own single-GPU work in order with the group's, or
    /// `InvalidArgument` past the last.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// println!("{}", group.gpu(0)?.info().summary());
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn gpu(&self, i: usize) -> Result<&Gpu> {
        self.ranks.get(i).map(|r| &r.gpu).ok_or_else(|| {
            Error::invalid(
                "i",
                format!("{i}: the group has {} local rank(s)", self.ranks.len()),
            )
        })
    }

    /// Waits for every local rank's stream.
    ///
    /// ```no_run
    /// let group = dist::Group::all()?;
    /// group.synchronize()?;
    /// # Ok::<(), dist::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        for rank in &self.ranks {
            rank.gpu.synchronize()?;
        }
        Ok(())
    }

    /// All-gathers one element per local rank: `singles[i]` (one `T` on
    /// local rank `i`'s device) into a buffer of `world` `T`'s on the same
    /// device, every rank in one NCCL group. Returns the gathered buffers
    /// in local-rank order; nothing waits for the streams.
    pub(crate) fn all_gather_one<T: DeviceType>(
        &self,
        singles: &[DeviceBuffer<T>],
    ) -> Result<Vec<DeviceBuffer<T>>> {
        self.all_gather(singles, 1)
    }

    /// All-gathers `per_rank` elements of every local rank's `parts[i]`
    /// (on local rank `i`'s device) into `world · per_rank` elements on
    /// each local rank, rank r's part at `r · per_rank`, every rank in one
    /// NCCL group. Returns the gathered buffers in local-rank order;
    /// nothing waits for the streams.
    pub(crate) fn all_gather<T: DeviceType>(
        &self,
        parts: &[DeviceBuffer<T>],
        per_rank: usize,
    ) -> Result<Vec<DeviceBuffer<T>>> {
        let mains: Vec<&Gpu> = self.ranks.iter().map(|rank| &rank.gpu).collect();
        self.all_gather_on(&mains, parts, per_rank)
    }

    /// [`Group::all_gather`] on other streams of the ranks' devices
    /// (`streams[i]` on local rank `i`'s device, such as its side stream):
    /// the gathered buffers are allocated and the NCCL calls queued there.
    pub(crate) fn all_gather_on<T: DeviceType>(
        &self,
        streams: &[&Gpu],
        parts: &[DeviceBuffer<T>],
        per_rank: usize,
    ) -> Result<Vec<DeviceBuffer<T>>> {
        Error::check_len("all-gather streams", self.local_count(), streams.len())?;
        Error::check_len("all-gather parts", self.local_count(), parts.len())?;
        for part in parts {
            Error::check_len("all-gather part", per_rank, part.len())?;
        }
        let mut gathered = Vec::with_capacity(self.local_count());
        for stream in streams {
            // SAFETY: the all-gather below writes every rank's part before
            // any read (stream-ordered).
            gathered.push(unsafe { DeviceBuffer::<T>::uninit(stream, self.world() * per_rank)? });
        }
        grouped(|| {
            for (((rank, stream), part), all) in
                self.ranks.iter().zip(streams).zip(parts).zip(&mut gathered)
            {
                // SAFETY: `part` holds per_rank T's and `all` world ·
                // per_rank on this rank's device; both are borrowed or owned
                // past this call and freed stream-ordered, after the
                // all-gather has run.
                unsafe {
                    rank.comm.all_gather_bytes(
                        stream,
                        part.view().device_ptr(),
                        all.view_mut().device_ptr(),
                        per_rank * T::BYTES,
                    )?
                };
            }
            Ok(())
        })?;
        Ok(gathered)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // Work still queued may use the communicators: wait for it before
        // they are freed. Errors cannot be reported from drop.
        for rank in &self.ranks {
            let _ = rank.side.synchronize();
            let _ = rank.gpu.synchronize();
        }
    }
}
