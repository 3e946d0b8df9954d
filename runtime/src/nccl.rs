//! NCCL collectives on device buffers: all-reduce, broadcast, all-gather and
//! reduce-scatter between NVIDIA GPUs, in one process ([`Clique`], one communicator per
//! device) or across the processes of an MPI program ([`Communicator`], one per rank,
//! joined through a [`UniqueId`] that rank 0 makes and sends to the others).
//!
//! NCCL is loaded at run time, as the CUDA driver is (`libnccl.so.2`); without it, or on
//! a device that is not an NVIDIA GPU, making a communicator is an `Err` that says so.
//! A collective goes to its device's one stream, after the launches and copies already
//! made there and before later ones, and returns without waiting; `to_vec` waits for it.
//!
//! Safe by construction: a collective takes its device data by reference for its
//! lengths' check and enqueue, and the device memory outlives the collective the way it
//! outlives a kernel (a buffer is freed after its device's earlier work). Each rank's
//! NCCL call touches only as many elements as that rank passes, and NCCL needs every
//! rank to pass the same count: a [`Clique`] checks its buffers' lengths before it
//! starts; a [`Communicator`] of several ranks first all-reduces the largest and the
//! smallest length over its ranks (one small collective and a wait, the price of the
//! check) and gives every rank the same `Err` when they differ.

use crate::backend::cuda;
use crate::{Device, DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, ScalarTy, scalar::Scalar};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;

/// What a reduction combines elements with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Product,
    Max,
    Min,
    /// The sum divided by the number of ranks (floats and integers as NCCL defines it).
    Average,
}

impl ReduceOp {
    fn raw(self) -> sys::ncclRedOp_t {
        match self {
            ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
            ReduceOp::Product => sys::ncclRedOp_t::ncclProd,
            ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
            ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
            ReduceOp::Average => sys::ncclRedOp_t::ncclAvg,
        }
    }
}

/// The identity of a communicator being made: rank 0 makes it with
/// [`UniqueId::new`] and sends its bytes to every other rank (over MPI, say).
#[derive(Clone, Copy)]
pub struct UniqueId(sys::ncclUniqueId);

impl UniqueId {
    /// A new identity (this needs NCCL, not a GPU).
    pub fn new() -> Result<Self, Error> {
        loaded()?;
        result::get_uniqueid()
            .map(UniqueId)
            .map_err(failed("making a unique id"))
    }

    /// The identity's 128 bytes, to send to the other ranks.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal.map(|c| c as u8)
    }

    /// The identity another rank sent as [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: [u8; 128]) -> Self {
        UniqueId(sys::ncclUniqueId {
            internal: bytes.map(|b| b as std::ffi::c_char),
        })
    }
}

/// One rank's NCCL communicator, on one GPU.
pub struct Communicator {
    comm: sys::ncclComm_t,
    device: &'static Device,
    ordinal: usize,
    rank: usize,
    ranks: usize,
    /// Two `u64`s for the length check of a communicator of several ranks.
    lengths: Option<DeviceBuffer<u64>>,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time: every
// use takes `&mut self`.
unsafe impl Send for Communicator {}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank)
            .field("ranks", &self.ranks)
            .field("device", self.device)
            .finish()
    }
}

impl Communicator {
    /// Rank `rank` of `ranks` on `device`, joining the other ranks that pass `id`; waits
    /// for all of them.
    pub fn new(device: &Device, id: &UniqueId, rank: usize, ranks: usize) -> Result<Self, Error> {
        if rank >= ranks {
            return Err(Error::Nccl(format!(
                "rank {rank} is not one of {ranks} ranks"
            )));
        }
        let (device, ordinal) = gpu(device)?;
        cuda::current(ordinal)?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is written by NCCL; the device's context is current.
        unsafe { result::comm_init_rank(&mut comm, ranks as i32, id.0, rank as i32) }.map_err(
            |e| match e.0 {
                sys::ncclResult_t::ncclInvalidUsage => Error::Nccl(format!(
                    "making a communicator failed: {:?} (NCCL refuses, among other misuses, two ranks on one GPU: give each rank its own device)",
                    e.0
                )),
                _ => failed("making a communicator")(e),
            },
        )?;
        let lengths = if ranks > 1 {
            Some(DeviceBuffer::zeros(device, 2)?)
        } else {
            None
        };
        Ok(Communicator {
            comm,
            device,
            ordinal,
            rank,
            ranks,
            lengths,
        })
    }

    /// This communicator's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The GPU this rank's data lives on.
    pub fn device(&self) -> &Device {
        self.device
    }

    /// Replaces `data` on every rank with `op` over every rank's `data`, element by
    /// element.
    pub fn all_reduce<'a, T: Scalar>(
        &mut self,
        data: impl Into<DeviceSliceMut<'a, T>>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        let mut data = data.into();
        self.same_length(data.len())?;
        let (device, at) = data.raw();
        let stream = self.on(device, "the data")?;
        // SAFETY: `at` is `data.len()` live elements of this device, borrowed exclusively;
        // every rank passes as many (checked above).
        unsafe {
            result::all_reduce(
                at as *const c_void,
                at as *mut c_void,
                data.len(),
                datatype::<T>()?,
                op.raw(),
                self.comm,
                stream as _,
            )
        }
        .map(drop)
        .map_err(failed("an all-reduce"))
    }

    /// Replaces `data` on every rank with rank `root`'s.
    pub fn broadcast<'a, T: Scalar>(
        &mut self,
        root: usize,
        data: impl Into<DeviceSliceMut<'a, T>>,
    ) -> Result<(), Error> {
        let mut data = data.into();
        self.root(root)?;
        self.same_length(data.len())?;
        let (device, at) = data.raw();
        let stream = self.on(device, "the data")?;
        // SAFETY: as in `all_reduce`.
        unsafe {
            result::broadcast(
                at as *const c_void,
                at as *mut c_void,
                data.len(),
                datatype::<T>()?,
                root as i32,
                self.comm,
                stream as _,
            )
        }
        .map(drop)
        .map_err(failed("a broadcast"))
    }

    /// Every rank's `send`, in rank order, into every rank's `receive` (`ranks` times as
    /// long as `send`).
    pub fn all_gather<'a, 'b, T: Scalar>(
        &mut self,
        send: impl Into<DeviceSlice<'a, T>>,
        receive: impl Into<DeviceSliceMut<'b, T>>,
    ) -> Result<(), Error> {
        let (send, mut receive) = (send.into(), receive.into());
        self.parts(send.len(), receive.len(), "all-gather", "receive")?;
        let ((from_device, from), (to_device, to)) = (send.raw(), receive.raw());
        self.on(from_device, "the sent data")?;
        let stream = self.on(to_device, "the received data")?;
        // SAFETY: both views are live elements of this device, `receive` borrowed
        // exclusively (so they do not overlap) and `ranks` times as long as `send`.
        unsafe {
            result::all_gather(
                from as *const c_void,
                to as *mut c_void,
                send.len(),
                datatype::<T>()?,
                self.comm,
                stream as _,
            )
        }
        .map(drop)
        .map_err(failed("an all-gather"))
    }

    /// `op` over every rank's `send` (`ranks` times as long as `receive`), element by
    /// element; rank `r` receives the `r`-th part.
    pub fn reduce_scatter<'a, 'b, T: Scalar>(
        &mut self,
        send: impl Into<DeviceSlice<'a, T>>,
        receive: impl Into<DeviceSliceMut<'b, T>>,
        op: ReduceOp,
    ) -> Result<(), Error> {
        let (send, mut receive) = (send.into(), receive.into());
        self.parts(receive.len(), send.len(), "reduce-scatter", "send")?;
        let ((from_device, from), (to_device, to)) = (send.raw(), receive.raw());
        self.on(from_device, "the sent data")?;
        let stream = self.on(to_device, "the received data")?;
        // SAFETY: as in `all_gather`, with `send` `ranks` times as long as `receive`.
        unsafe {
            result::reduce_scatter(
                from as *const c_void,
                to as *mut c_void,
                receive.len(),
                datatype::<T>()?,
                op.raw(),
                self.comm,
                stream as _,
            )
        }
        .map(drop)
        .map_err(failed("a reduce-scatter"))
    }

    /// Checks that `whole` is `ranks` times `part` here and that every rank's `part` is
    /// the same.
    fn parts(&mut self, part: usize, whole: usize, what: &str, side: &str) -> Result<(), Error> {
        if part.checked_mul(self.ranks) != Some(whole) {
            return Err(Error::Nccl(format!(
                "{what} over {} ranks of {part} elements each needs a {side} view of {}, not {whole}",
                self.ranks,
                part as u128 * self.ranks as u128
            )));
        }
        self.same_length(part)
    }

    fn root(&self, root: usize) -> Result<(), Error> {
        if root < self.ranks {
            Ok(())
        } else {
            Err(Error::Nccl(format!(
                "rank {root} is not one of {} ranks",
                self.ranks
            )))
        }
    }

    /// Makes the communicator's device current; checks that data is on it.
    fn on(&self, device: &Device, what: &str) -> Result<cudarc::driver::sys::CUstream, Error> {
        if device != self.device {
            return Err(Error::Nccl(format!(
                "{what} is on {device}, the communicator's rank on {}",
                self.device
            )));
        }
        cuda::current(self.ordinal)
    }

    /// Every rank learns whether every rank passed `len`.
    fn same_length(&mut self, len: usize) -> Result<(), Error> {
        let Some(lengths) = &mut self.lengths else {
            return Ok(());
        };
        let len = len as u64;
        lengths.copy_from_slice(&[len, u64::MAX - len])?;
        let stream = cuda::current(self.ordinal)?;
        let (_, at) = DeviceSliceMut::from(&mut *lengths).raw();
        // SAFETY: two live `u64`s of this device, borrowed exclusively.
        unsafe {
            result::all_reduce(
                at as *const c_void,
                at as *mut c_void,
                2,
                sys::ncclDataType_t::ncclUint64,
                sys::ncclRedOp_t::ncclMax,
                self.comm,
                stream as _,
            )
        }
        .map_err(failed("checking the ranks' lengths"))?;
        let [most, least] = lengths.to_vec()?[..] else {
            unreachable!("two lengths")
        };
        let least = u64::MAX - least;
        if (most, least) == (len, len) {
            Ok(())
        } else {
            Err(Error::Nccl(format!(
                "the ranks passed different lengths (from {least} to {most}; this rank {len}): nothing was done"
            )))
        }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // SAFETY: made by `comm_init_rank` (or `comm_init_all`), used by nothing after.
        if let Err(e) = unsafe { result::comm_destroy(self.comm) } {
            tracing::warn!("destroying an NCCL communicator: {e:?}");
        }
    }
}

/// One communicator per GPU of this process, driven together from one thread: each
/// collective takes one buffer per device, in the clique's device order.
pub struct Clique {
    members: Vec<Communicator>,
}

impl Clique {
    /// A communicator for each of `devices` (each an NVIDIA GPU, each once).
    pub fn new(devices: &[Device]) -> Result<Self, Error> {
        let mut found = Vec::new();
        for device in devices {
            let (device, ordinal) = gpu(device)?;
            if found.iter().any(|&(_, o)| o == ordinal) {
                return Err(Error::Nccl(format!("{device} is named twice")));
            }
            found.push((device, ordinal));
        }
        let ordinals: Vec<i32> = found.iter().map(|&(_, o)| o as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); found.len()];
        // SAFETY: one slot per device.
        unsafe {
            result::comm_init_all(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr())
        }
        .map_err(failed("making a clique's communicators"))?;
        let ranks = found.len();
        let members = comms
            .into_iter()
            .zip(found)
            .enumerate()
            .map(|(rank, (comm, (device, ordinal)))| Communicator {
                comm,
                device,
                ordinal,
                rank,
                ranks,
                lengths: None,
            })
            .collect();
        Ok(Clique { members })
    }

    /// The clique's devices, in rank order.
    pub fn devices(&self) -> Vec<Device> {
        self.members.iter().map(|m| m.device.clone()).collect()
    }

    /// [`Communicator::all_reduce`] over one buffer per device.
    pub fn all_reduce<T: Scalar>(
        &mut self,
        data: &mut [DeviceBuffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        self.fits(data.iter().map(|d| d.len()), "all-reduce")?;
        together(self.members.iter_mut().zip(data), |(m, d)| {
            m.all_reduce(d, op)
        })
    }

    /// [`Communicator::broadcast`] of device `root`'s buffer (its index) to the others.
    pub fn broadcast<T: Scalar>(
        &mut self,
        root: usize,
        data: &mut [DeviceBuffer<T>],
    ) -> Result<(), Error> {
        self.fits(data.iter().map(|d| d.len()), "broadcast")?;
        self.members[0].root(root)?;
        together(self.members.iter_mut().zip(data), |(m, d)| {
            m.broadcast(root, d)
        })
    }

    /// Checks one buffer per member, all of one length.
    fn fits(
        &self,
        lengths: impl ExactSizeIterator<Item = usize> + Clone,
        what: &str,
    ) -> Result<(), Error> {
        if lengths.len() != self.members.len() {
            return Err(Error::Nccl(format!(
                "an {what} over a clique of {} devices takes {} buffers, not {}",
                self.members.len(),
                self.members.len(),
                lengths.len()
            )));
        }
        let mut all = lengths;
        match all.next() {
            Some(first) if all.all(|l| l == first) => Ok(()),
            _ => Err(Error::Nccl(format!(
                "an {what} takes buffers of one length"
            ))),
        }
    }
}

/// Runs `each` in one NCCL group, so that one thread can start a collective on every
/// member before any of them waits for the others.
fn together<I: Iterator>(
    items: I,
    mut each: impl FnMut(I::Item) -> Result<(), Error>,
) -> Result<(), Error> {
    result::group_start().map_err(failed("starting a group"))?;
    let mut outcome = Ok(());
    for item in items {
        outcome = each(item);
        if outcome.is_err() {
            break;
        }
    }
    let ended = result::group_end()
        .map(drop)
        .map_err(failed("ending a group"));
    outcome.and(ended)
}

/// `device` as an NVIDIA GPU of this process, and its ordinal.
fn gpu(device: &Device) -> Result<(&'static Device, usize), Error> {
    let device = crate::machine::registered(device)?;
    match device {
        Device::Cuda { ordinal, .. } => {
            loaded()?;
            Ok((device, *ordinal))
        }
        other => Err(Error::Nccl(format!(
            "NCCL collectives run on NVIDIA GPUs; {other} is not one"
        ))),
    }
}

/// Whether this process can make a communicator on `device`: NCCL is there and the
/// device is an NVIDIA GPU (as [`Communicator::new`] needs).
#[cfg(feature = "mpi")]
pub(crate) fn usable(device: &Device) -> Result<(), Error> {
    loaded()?;
    gpu(device).map(drop)
}

/// Whether NCCL can be loaded.
fn loaded() -> Result<(), Error> {
    // SAFETY: only tries to open the library.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Nccl(
            "the NCCL library (libnccl.so.2) was not found: install NCCL 2 or add its folder to LD_LIBRARY_PATH".into(),
        ))
    }
}

/// NCCL's name for `T`.
fn datatype<T: Scalar>() -> Result<sys::ncclDataType_t, Error> {
    use sys::ncclDataType_t::*;
    Ok(match T::TY {
        ScalarTy::I8 => ncclInt8,
        ScalarTy::U8 => ncclUint8,
        ScalarTy::I32 => ncclInt32,
        ScalarTy::U32 => ncclUint32,
        ScalarTy::I64 | ScalarTy::Isize => ncclInt64,
        ScalarTy::U64 | ScalarTy::Usize => ncclUint64,
        ScalarTy::F16 => ncclFloat16,
        ScalarTy::Bf16 => ncclBfloat16,
        ScalarTy::F32 => ncclFloat32,
        ScalarTy::F64 => ncclFloat64,
        other => {
            return Err(Error::Nccl(format!(
                "NCCL has no `{other}` elements (it has 8-, 32- and 64-bit integers and 16-, 32- and 64-bit floats)"
            )));
        }
    })
}

/// The error for a failed NCCL call made while doing `during`.
fn failed(during: &'static str) -> impl FnOnce(result::NcclError) -> Error {
    move |e| Error::Nccl(format!("{during} failed: {:?}", e.0))
}
