//! The NCCL layer: loading check, one owned communicator per rank, the
//! element and operator mappings, and the few collectives the operations
//! use, on raw device pointers and the rank's own stream.
//!
//! libnccl is loaded at run time (cudarc's `dynamic-loading`). cudarc's
//! loader panics when the library is missing, so every entry point here
//! first calls [`nccl_available`], which only tries to `dlopen` the
//! candidate names cudarc itself would open (`libnccl.so`, then
//! `libnccl.so.13`, `.12`, ..., not `libnccl.so.2`) and turns a miss into
//! [`Error::NoNccl`]; nothing reaches cudarc's loader before that.

use cudarc::nccl::{result, sys};
use gpu_core::{DeviceType, Element, Gpu, Operator};
use std::ffi::c_void;

use crate::{Error, Result};

/// Checks that libnccl can be loaded. Never panics.
///
/// ```
/// match dist::nccl_available() {
///     Ok(()) => println!("NCCL {}", dist::nccl_version().unwrap_or(0)),
///     Err(e) => println!("no multi-GPU operations: {e}"),
/// }
/// ```
pub fn nccl_available() -> Result<()> {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen candidate names.
    if *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() }) {
        Ok(())
    } else {
        Err(Error::NoNccl)
    }
}

/// NCCL's version code (`major * 10000 + minor * 100 + patch`, 22703 for
/// 2.27.3), or [`Error::NoNccl`].
///
/// ```no_run
/// let version = dist::nccl_version()?;
/// assert!(version >= 21800);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn nccl_version() -> Result<i32> {
    nccl_available()?;
    result::get_nccl_version().map_err(|e| nccl_error("ncclGetVersion", e))
}

pub(crate) fn nccl_error(call: &'static str, error: result::NcclError) -> Error {
    Error::Nccl {
        call,
        code: format!("{:?}", error.0),
    }
}

/// A new NCCL unique id (128 bytes): made once, by one process, and handed
/// to every rank through the user's bootstrap ([`Group::from_unique_id`](crate::Group::from_unique_id)).
///
/// ```no_run
/// let id = dist::unique_id()?;
/// assert_eq!(id.len(), 128);
/// # Ok::<(), dist::Error>(())
/// ```
pub fn unique_id() -> Result<[u8; 128]> {
    nccl_available()?;
    let id = result::get_uniqueid().map_err(|e| nccl_error("ncclGetUniqueId", e))?;
    Ok(id.internal.map(|c| c as u8))
}

/// One rank's NCCL communicator, destroyed on drop.
pub(crate) struct Communicator {
    raw: sys::ncclComm_t,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a
// time; `Group` hands it out only through `&self` methods that enqueue on
// the rank's stream, and `Group` is not `Sync`.
unsafe impl Send for Communicator {}

impl Communicator {
    /// Communicators for every device of `ordinals`, made by one thread
    /// (`ncclCommInitAll`). Rank i is `ordinals[i]`.
    pub(crate) fn init_all(ordinals: &[usize]) -> Result<Vec<Communicator>> {
        nccl_available()?;
        let devices: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
        let mut raw = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `raw` has one slot per device; `devices` outlives the call.
        unsafe { result::comm_init_all(raw.as_mut_ptr(), devices.len() as i32, devices.as_ptr()) }
            .map_err(|e| nccl_error("ncclCommInitAll", e))?;
        Ok(raw.into_iter().map(|raw| Communicator { raw }).collect())
    }

    /// This process's rank `rank` of `world` (`ncclCommInitRank`); blocks
    /// until every rank has joined. The device is `gpu`'s, bound to the
    /// calling thread first.
    pub(crate) fn init_rank(gpu: &Gpu, id: &[u8; 128], rank: usize, world: usize) -> Result<Self> {
        nccl_available()?;
        gpu.cudarc_context()
            .bind_to_thread()
            .map_err(gpu_core::Error::from)?;
        let unique = sys::ncclUniqueId {
            internal: id.map(|b| b as std::ffi::c_char),
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer; rank < world checked by the caller.
        unsafe { result::comm_init_rank(&mut raw, world as i32, unique, rank as i32) }
            .map_err(|e| nccl_error("ncclCommInitRank", e))?;
        Ok(Communicator { raw })
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // The group synchronises every stream before its communicators go,
        // so no operation is pending; abort frees the communicator without
        // the collective handshake `ncclCommDestroy` may wait on. Errors
        // cannot be reported from drop.
        // SAFETY: `raw` came from a successful init and is dropped once.
        let _ = unsafe { result::comm_abort(self.raw) };
    }
}

/// NCCL's name for `T`, if NCCL can reduce it (the 1-, 4- and 8-byte
/// integers, f16, bf16, f32, f64; not i16/u16).
pub(crate) fn nccl_type<T: DeviceType>() -> Option<sys::ncclDataType_t> {
    use sys::ncclDataType_t::*;
    Some(match T::SUFFIX {
        "i8" => ncclInt8,
        "u8" => ncclUint8,
        "i32" => ncclInt32,
        "u32" => ncclUint32,
        "i64" => ncclInt64,
        "u64" => ncclUint64,
        "f16" => ncclFloat16,
        "bf16" => ncclBfloat16,
        "f32" => ncclFloat32,
        "f64" => ncclFloat64,
        _ => return None,
    })
}

/// NCCL's reduction for a built-in operator (`sum`, `product`, `max`,
/// `min`); `None` for the others (bit operators, custom operators), which
/// are folded from all-gathered partials instead.
pub(crate) fn nccl_op<T: Element, O: Operator<T>>(op: &O) -> Option<sys::ncclRedOp_t> {
    use sys::ncclRedOp_t::*;
    Some(match op.name().as_str() {
        "sum" => ncclSum,
        "product" => ncclProd,
        "max" => ncclMax,
        "min" => ncclMin,
        _ => return None,
    })
}

/// Brackets NCCL calls for several communicators driven by one thread
/// (`ncclGroupStart` / `ncclGroupEnd`): the calls are queued and issued
/// together at the end, so no rank's call blocks waiting for a peer whose
/// call has not been made yet.
pub(crate) fn grouped(calls: impl FnOnce() -> Result<()>) -> Result<()> {
    result::group_start().map_err(|e| nccl_error("ncclGroupStart", e))?;
    let queued = calls();
    // The group is closed whatever happened, so NCCL's group depth returns
    // to zero; the first error wins.
    let ended = result::group_end()
        .map(drop)
        .map_err(|e| nccl_error("ncclGroupEnd", e));
    queued.and(ended)
}

fn stream_of(gpu: &Gpu) -> sys::cudaStream_t {
    gpu.cudarc_stream().cu_stream() as sys::cudaStream_t
}

impl Communicator {
    /// `ncclAllReduce` of `count` elements from `send` into `recv` (may be
    /// equal) on `gpu`'s stream.
    ///
    /// # Safety
    /// `send` and `recv` hold `count` elements of `dtype` on `gpu`'s device
    /// and stay alive until the stream has run the operation.
    pub(crate) unsafe fn all_reduce(
        &self,
        gpu: &Gpu,
        send: u64,
        recv: u64,
        count: usize,
        dtype: sys::ncclDataType_t,
        op: sys::ncclRedOp_t,
    ) -> Result<()> {
        result::all_reduce(
            send as *const c_void,
            recv as *mut c_void,
            count,
            dtype,
            op,
            self.raw,
            stream_of(gpu),
        )
        .map(drop)
        .map_err(|e| nccl_error("ncclAllReduce", e))
    }

    /// `ncclAllGather` of `bytes` bytes per rank from `send` into `recv`
    /// (`world * bytes`), as bytes whatever the element type.
    ///
    /// # Safety
    /// `send` holds `bytes` bytes, `recv` `world * bytes` bytes, on `gpu`'s
    /// device, alive until the stream has run the operation.
    pub(crate) unsafe fn all_gather_bytes(
        &self,
        gpu: &Gpu,
        send: u64,
        recv: u64,
        bytes: usize,
    ) -> Result<()> {
        result::all_gather(
            send as *const c_void,
            recv as *mut c_void,
            bytes,
            sys::ncclDataType_t::ncclUint8,
            self.raw,
            stream_of(gpu),
        )
        .map(drop)
        .map_err(|e| nccl_error("ncclAllGather", e))
    }

    /// `ncclSend` of `bytes` bytes at `send` to rank `peer`.
    ///
    /// # Safety
    /// `send` holds `bytes` bytes on `gpu`'s device, alive until the stream
    /// has run the operation; `peer` posts the matching receive.
    pub(crate) unsafe fn send_bytes(
        &self,
        gpu: &Gpu,
        send: u64,
        bytes: usize,
        peer: usize,
    ) -> Result<()> {
        result::send(
            send as *const c_void,
            bytes,
            sys::ncclDataType_t::ncclUint8,
            peer as i32,
            self.raw,
            stream_of(gpu),
        )
        .map(drop)
        .map_err(|e| nccl_error("ncclSend", e))
    }

    /// `ncclRecv` of `bytes` bytes into `recv` from rank `peer`.
    ///
    /// # Safety
    /// `recv` holds `bytes` bytes on `gpu`'s device, alive until the stream
    /// has run the operation; `peer` posts the matching send.
    pub(crate) unsafe fn recv_bytes(
        &self,
        gpu: &Gpu,
        recv: u64,
        bytes: usize,
        peer: usize,
    ) -> Result<()> {
        result::recv(
            recv as *mut c_void,
            bytes,
            sys::ncclDataType_t::ncclUint8,
            peer as i32,
            self.raw,
            stream_of(gpu),
        )
        .map(drop)
        .map_err(|e| nccl_error("ncclRecv", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::{BitOr, Max, Min, Product, Sum};

    #[test]
    fn element_types_map_to_nccl_types() {
        use sys::ncclDataType_t::*;
        assert_eq!(nccl_type::<i32>(), Some(ncclInt32));
        assert_eq!(nccl_type::<u64>(), Some(ncclUint64));
        assert_eq!(nccl_type::<f32>(), Some(ncclFloat32));
        assert_eq!(nccl_type::<gpu_core::bf16>(), Some(ncclBfloat16));
        assert_eq!(nccl_type::<i16>(), None);
        assert_eq!(nccl_type::<u16>(), None);
    }

    #[test]
    fn builtin_operators_map_to_nccl_reductions() {
        use sys::ncclRedOp_t::*;
        assert_eq!(nccl_op::<i32, _>(&Sum), Some(ncclSum));
        assert_eq!(nccl_op::<i32, _>(&Product), Some(ncclProd));
        assert_eq!(nccl_op::<f64, _>(&Max), Some(ncclMax));
        assert_eq!(nccl_op::<f64, _>(&Min), Some(ncclMin));
        assert_eq!(nccl_op::<u32, _>(&BitOr), None);
        let custom = gpu_core::CustomOp::<i32>::new("sum", "a + b", 0, |a, b| a + b).unwrap();
        assert_eq!(
            nccl_op::<i32, _>(&custom),
            None,
            "a custom op named sum is not NCCL's sum"
        );
    }

    #[test]
    fn missing_nccl_is_a_typed_error_not_a_panic() {
        match nccl_available() {
            Ok(()) => {}
            Err(e) => assert!(matches!(e, Error::NoNccl), "{e}"),
        }
    }
}
