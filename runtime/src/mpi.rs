//! MPI on device data (the `mpi` feature): sending, receiving, exchanging, reducing and
//! broadcasting [`DeviceBuffer`](crate::DeviceBuffer)s and views of them between the
//! ranks of an MPI program, through the `mpi` crate (rsmpi) over the system's MPI
//! library; and an NCCL communicator for every rank, its unique id sent over MPI
//! ([`nccl_communicator`]).
//!
//! Every message goes through page-locked host memory, from a pool kept across messages
//! (MPI libraries without CUDA support, such as Debian's Open MPI, cannot read device
//! addresses). A send reads the elements once every launch that writes them has finished
//! (as `to_vec` does, reporting a kernel panic as an `Err` before anything is sent); a
//! receive writes them only once the whole message has arrived and has the view's
//! length, so a failed receive leaves the view as it was.
//!
//! The blocking operations take the device data by reference for their whole length.
//! The immediate ones ([`DeviceCommunicator::immediate_send_device`],
//! [`DeviceCommunicator::immediate_receive_device`]) return a [`DeviceRequest`] that
//! borrows the view until it is waited for or dropped (dropping waits), so no safe
//! program changes, reads or frees data a message still uses; kernels on other data run
//! meanwhile. A view split off a buffer with `split_at_mut` lets one rank receive one
//! halo row while it sends another.

pub use ::mpi::collective::SystemOperation;
pub use ::mpi::environment::Universe;
pub use ::mpi::topology::{Communicator, Rank};
pub use ::mpi::{Tag, datatype::Equivalence, initialize};

use crate::{Device, DeviceSlice, DeviceSliceMut, Error, PinnedVec, scalar::Scalar};
use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::ffi;
use ::mpi::point_to_point::{Destination, Source};
use ::mpi::raw::AsRaw;
use std::marker::PhantomData;
use std::sync::Mutex;

/// Device data an MPI message can carry: `offload`'s element types that MPI knows
/// (integers and `f32`/`f64`; MPI has no 16-bit float).
pub trait MpiScalar: Scalar + Equivalence {}

impl<T: Scalar + Equivalence> MpiScalar for T {}

/// MPI operations on device data, for every communicator (`universe.world()`, a split
/// of it, ...).
pub trait DeviceCommunicator: Communicator {
    /// Sends `data`'s elements to rank `to` with `tag`.
    fn send_device<'a, T: MpiScalar>(
        &self,
        to: Rank,
        tag: Tag,
        data: impl Into<DeviceSlice<'a, T>>,
    ) -> Result<(), Error> {
        let process = self.process_at_rank(rank(self, to, "send to")?);
        let data = data.into();
        let mut staging = Staging::of(&data)?;
        let host = staging.read(&data)?;
        process.send_with_tag(host, tag);
        Ok(())
    }

    /// Receives a message of exactly `into`'s length from rank `from` with `tag` into
    /// `into`. A message of another length is received and dropped, and is an `Err`.
    fn receive_device<'a, T: MpiScalar>(
        &self,
        from: Rank,
        tag: Tag,
        into: impl Into<DeviceSliceMut<'a, T>>,
    ) -> Result<(), Error> {
        let process = self.process_at_rank(rank(self, from, "receive from")?);
        let mut into = into.into();
        let (message, status) = process.matched_probe_with_tag(tag);
        let sent = status.count(T::equivalent_datatype());
        if sent != into.len() as ::mpi::Count {
            // Received (so that it does not wait forever) as bytes, and dropped.
            let bytes = status.count(u8::equivalent_datatype());
            let mut dropped = vec![0u8; bytes.max(0) as usize];
            message.matched_receive_into(&mut dropped[..]);
            return Err(wrong_length(
                status.source_rank(),
                tag,
                sent,
                dropped.len(),
                into.len(),
            ));
        }
        let mut staging = Staging::of(&DeviceSlice::from(&into))?;
        let host = staging.elements::<T>(into.len());
        message.matched_receive_into(&mut host[..]);
        into.copy_from_slice(host)
    }

    /// Sends `send` to rank `to` and receives `receive` (exactly its length) from rank
    /// `from`, both with `tag`, at once: the halo exchange of a domain split across
    /// ranks, without the deadlock two blocking sends can make.
    fn exchange_device<'a, 'b, T: MpiScalar>(
        &self,
        send: impl Into<DeviceSlice<'a, T>>,
        to: Rank,
        receive: impl Into<DeviceSliceMut<'b, T>>,
        from: Rank,
        tag: Tag,
    ) -> Result<(), Error> {
        let destination = self.process_at_rank(rank(self, to, "send to")?);
        let source = self.process_at_rank(rank(self, from, "receive from")?);
        let (send, mut receive) = (send.into(), receive.into());
        let mut outgoing = Staging::of(&send)?;
        let mut incoming = Staging::of(&DeviceSlice::from(&receive))?;
        let outgoing = outgoing.read(&send)?;
        let incoming = incoming.elements::<T>(receive.len());
        let status = ::mpi::point_to_point::send_receive_into_with_tags(
            outgoing,
            &destination,
            tag,
            &mut incoming[..],
            &source,
            tag,
        );
        let got = status.count(T::equivalent_datatype());
        if got != receive.len() as ::mpi::Count {
            return Err(wrong_length(from, tag, got, 0, receive.len()));
        }
        receive.copy_from_slice(incoming)
    }

    /// Replaces `data` on every rank with `op` over all ranks' `data`, element by
    /// element (each rank's view must have the same length).
    fn all_reduce_device<'a, T: MpiScalar>(
        &self,
        data: impl Into<DeviceSliceMut<'a, T>>,
        op: SystemOperation,
    ) -> Result<(), Error> {
        let mut data = data.into();
        let view = DeviceSlice::from(&data);
        let (mut mine, mut all) = (Staging::of(&view)?, Staging::of(&view)?);
        let mine = mine.read(&view)?;
        let all = all.elements::<T>(data.len());
        self.all_reduce_into(mine, &mut all[..], op);
        data.copy_from_slice(all)
    }

    /// Replaces `data` on every rank with rank `root`'s (each rank's view must have the
    /// same length).
    fn broadcast_device<'a, T: MpiScalar>(
        &self,
        root: Rank,
        data: impl Into<DeviceSliceMut<'a, T>>,
    ) -> Result<(), Error> {
        let root = self.process_at_rank(rank(self, root, "broadcast from")?);
        let mut data = data.into();
        let view = DeviceSlice::from(&data);
        let mut staging = Staging::of(&view)?;
        let host = staging.elements::<T>(data.len());
        if root.is_self() {
            view.copy_to_slice(host)?;
        }
        root.broadcast_into(&mut host[..]);
        data.copy_from_slice(host)
    }

    /// Starts sending `data`'s elements to rank `to` with `tag`, and returns at once:
    /// `data` stays borrowed until the request is waited for (or dropped). The elements
    /// are read here, after the launches that write them (reporting a kernel panic as an
    /// `Err` before anything is sent).
    fn immediate_send_device<'a, T: MpiScalar>(
        &'a self,
        to: Rank,
        tag: Tag,
        data: impl Into<DeviceSlice<'a, T>>,
    ) -> Result<DeviceRequest<'a, T>, Error> {
        let process = self.process_at_rank(rank(self, to, "send to")?);
        let data = data.into();
        let count = count(data.len())?;
        let mut staging = Staging::of(&data)?;
        let at = staging.read(&data)?.as_ptr();
        let mut request = DeviceRequest::new(staging, None, to, tag);
        // SAFETY: `at` is `count` elements in the request's staging memory, which lives
        // (and is not written) until the request is complete: `wait` and `drop` complete
        // it before the memory goes back to the pool.
        let code = unsafe {
            ffi::MPI_Isend(
                at.cast(),
                count,
                T::equivalent_datatype().as_raw(),
                to,
                tag,
                process.as_raw(),
                &mut request.raw,
            )
        };
        checked(code, "starting a send")?;
        Ok(request)
    }

    /// Starts receiving a message of exactly `into`'s length from rank `from` with
    /// `tag`, and returns at once: `into` stays borrowed until the request is waited
    /// for, which writes the message into it (or dropped, which leaves it unchanged). A
    /// shorter message is an `Err` from `wait`; a longer one is MPI's truncation error
    /// (by MPI's default error handler, the end of the program).
    fn immediate_receive_device<'a, T: MpiScalar>(
        &'a self,
        from: Rank,
        tag: Tag,
        into: impl Into<DeviceSliceMut<'a, T>>,
    ) -> Result<DeviceRequest<'a, T>, Error> {
        let process = self.process_at_rank(rank(self, from, "receive from")?);
        let into = into.into();
        let count = count(into.len())?;
        let mut staging = Staging::of(&DeviceSlice::from(&into))?;
        let at = staging.elements::<T>(into.len()).as_mut_ptr();
        let mut request = DeviceRequest::new(staging, Some(into), from, tag);
        // SAFETY: as in `immediate_send_device`; MPI writes the staging memory, which
        // nothing reads until the request is complete.
        let code = unsafe {
            ffi::MPI_Irecv(
                at.cast(),
                count,
                T::equivalent_datatype().as_raw(),
                from,
                tag,
                process.as_raw(),
                &mut request.raw,
            )
        };
        checked(code, "starting a receive")?;
        Ok(request)
    }
}

impl<C: Communicator> DeviceCommunicator for C {}

/// A message in flight, from [`DeviceCommunicator::immediate_send_device`] or
/// [`DeviceCommunicator::immediate_receive_device`]. It borrows the device data (and
/// the communicator) until it is complete: [`wait`](Self::wait) completes it and, for a
/// receive, writes the message into the view; dropping it waits for the message too,
/// and leaves a receive's view unchanged.
#[must_use = "a request is complete, and a received message written, only once it is waited for"]
pub struct DeviceRequest<'a, T: MpiScalar> {
    raw: ffi::MPI_Request,
    /// Where the message is on the host meanwhile.
    staging: Staging,
    /// Where a received message goes; `None` for a send.
    into: Option<DeviceSliceMut<'a, T>>,
    /// The other rank and the tag, for messages.
    peer: Rank,
    tag: Tag,
    _data: PhantomData<DeviceSlice<'a, T>>,
}

impl<'a, T: MpiScalar> DeviceRequest<'a, T> {
    fn new(staging: Staging, into: Option<DeviceSliceMut<'a, T>>, peer: Rank, tag: Tag) -> Self {
        DeviceRequest {
            // SAFETY: reads a constant of the MPI library.
            raw: unsafe { ffi::RSMPI_REQUEST_NULL },
            staging,
            into,
            peer,
            tag,
            _data: PhantomData,
        }
    }

    /// Waits for the message; for a receive, checks its length and writes it into the
    /// view.
    pub fn wait(mut self) -> Result<(), Error> {
        let status = self.complete()?;
        let Some(mut into) = self.into.take() else {
            return Ok(());
        };
        let mut got = 0;
        // SAFETY: `status` is the completed receive's.
        let code =
            unsafe { ffi::MPI_Get_count(&status, T::equivalent_datatype().as_raw(), &mut got) };
        checked(code, "counting a received message")?;
        if got != into.len() as ::mpi::Count {
            return Err(wrong_length(self.peer, self.tag, got, 0, into.len()));
        }
        into.copy_from_slice(self.staging.elements::<T>(into.len()))
    }

    /// Waits for the message to be sent or received into the staging memory.
    fn complete(&mut self) -> Result<ffi::MPI_Status, Error> {
        // SAFETY: an all-zero status is a valid one to be overwritten.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: `raw` is this request's (or the null request, which completes at once).
        let code = unsafe { ffi::MPI_Wait(&mut self.raw, &mut status) };
        checked(code, "waiting for a message")?;
        Ok(status)
    }
}

impl<T: MpiScalar> Drop for DeviceRequest<'_, T> {
    fn drop(&mut self) {
        // The staging memory must outlive the message; a dropped receive writes nothing.
        let _ = self.complete();
    }
}

/// Waits for every request in turn (all of them, even after one fails); the first
/// `Err`, if any.
pub fn wait_all<'a, T: MpiScalar>(
    requests: impl IntoIterator<Item = DeviceRequest<'a, T>>,
) -> Result<(), Error> {
    let mut first = Ok(());
    for request in requests {
        let done = request.wait();
        if first.is_ok() {
            first = done;
        }
    }
    first
}

/// An NCCL communicator for this rank of `comm`, on `device`, with every rank of `comm`
/// in it at its MPI rank. Every rank calls it: rank 0 makes NCCL's unique id and
/// broadcasts it over MPI. If any rank cannot use NCCL on its device, every rank gets an
/// `Err` (and none waits for the others forever).
pub fn nccl_communicator<C: Communicator>(
    comm: &C,
    device: &Device,
) -> Result<crate::nccl::Communicator, Error> {
    let usable = crate::nccl::usable(device);
    let mut everyone = 0u8;
    comm.all_reduce_into(
        &(usable.is_ok() as u8),
        &mut everyone,
        SystemOperation::min(),
    );
    usable?;
    if everyone == 0 {
        return Err(Error::Nccl(
            "another rank cannot use NCCL on its device, so no communicator was made".into(),
        ));
    }
    // Rank 0's unique id, after a byte that says whether it made one.
    let mut id = [0u8; 129];
    let made = if comm.rank() == 0 {
        crate::nccl::UniqueId::new().map(|made| {
            id[0] = 1;
            id[1..].copy_from_slice(&made.to_bytes());
        })
    } else {
        Ok(())
    };
    comm.process_at_rank(0).broadcast_into(&mut id[..]);
    made?;
    if id[0] == 0 {
        return Err(Error::Nccl(
            "rank 0 could not make NCCL's unique id, so no communicator was made".into(),
        ));
    }
    let bytes = id[1..].try_into().expect("128 bytes");
    crate::nccl::Communicator::new(
        device,
        &crate::nccl::UniqueId::from_bytes(bytes),
        comm.rank() as usize,
        comm.size() as usize,
    )
}

/// Page-locked host memory a message goes through, taken from a pool of such memory
/// (allocating it costs far more than a small message) and given back when dropped.
struct Staging {
    pinned: Option<PinnedVec<u8>>,
    device: &'static Device,
}

/// Staging memory not in use, with the device it was allocated for. Bounded: the
/// smallest goes when there are more.
static POOL: Mutex<Vec<(&'static Device, PinnedVec<u8>)>> = Mutex::new(Vec::new());
const POOLED: usize = 8;

impl Staging {
    /// Memory for a message of `view`'s elements, page-locked for its device.
    fn of<T: Scalar>(view: &DeviceSlice<'_, T>) -> Result<Self, Error> {
        let (device, _) = view.raw();
        let bytes = view.len() * T::TY.size_bytes();
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let fits = pool
            .iter()
            .enumerate()
            .filter(|(_, (d, p))| *d == device && p.len() >= bytes)
            .min_by_key(|(_, (_, p))| p.len())
            .map(|(i, _)| i);
        let pinned = match fits {
            Some(i) => pool.swap_remove(i).1,
            None => {
                drop(pool);
                // Rounded up, so that a message a little longer reuses it.
                PinnedVec::zeros(device, bytes.next_power_of_two().max(4096))?
            }
        };
        Ok(Staging {
            pinned: Some(pinned),
            device,
        })
    }

    /// The first `len` elements of `T`.
    fn elements<T: Scalar>(&mut self, len: usize) -> &mut [T] {
        let bytes = self
            .pinned
            .as_mut()
            .expect("staging memory until dropped")
            .as_mut_slice()
            .expect("no stream copy uses staging memory");
        assert!(len * T::TY.size_bytes() <= bytes.len());
        assert_eq!(bytes.as_ptr().align_offset(std::mem::align_of::<T>()), 0);
        // SAFETY: in bounds and aligned (asserted above); scalars are plain values
        // valid for every bit pattern.
        unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), len) }
    }

    /// `view`'s elements, read into the memory.
    fn read<T: Scalar>(&mut self, view: &DeviceSlice<'_, T>) -> Result<&[T], Error> {
        let host = self.elements::<T>(view.len());
        view.copy_to_slice(host)?;
        Ok(host)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let Some(pinned) = self.pinned.take() else {
            return;
        };
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.push((self.device, pinned));
        if pool.len() > POOLED {
            let smallest = (0..pool.len())
                .min_by_key(|&i| pool[i].1.len())
                .expect("a full pool");
            pool.swap_remove(smallest);
        }
    }
}

/// `len` as an MPI element count.
fn count(len: usize) -> Result<::mpi::Count, Error> {
    ::mpi::Count::try_from(len).map_err(|_| {
        Error::Mpi(format!(
            "a message of {len} elements is longer than MPI's counts reach ({})",
            ::mpi::Count::MAX
        ))
    })
}

/// `Ok` for MPI's success code.
fn checked(code: std::ffi::c_int, during: &str) -> Result<(), Error> {
    if code == ffi::MPI_SUCCESS as std::ffi::c_int {
        Ok(())
    } else {
        Err(Error::Mpi(format!("MPI error {code} {during}")))
    }
}

/// The error for a message of `sent` elements (or, where MPI cannot count them, `bytes`
/// bytes) for a view of `len`.
fn wrong_length(from: Rank, tag: Tag, sent: ::mpi::Count, bytes: usize, len: usize) -> Error {
    let sent = if sent >= 0 {
        format!("{sent} elements")
    } else {
        format!("{bytes} bytes, not a whole number of elements,")
    };
    Error::Mpi(format!(
        "rank {from} sent {sent} with tag {tag}, into {len} device elements: nothing was written"
    ))
}

/// The device this rank of `comm` should use: the one `OFFLOAD_DEVICE` names if it is
/// set; else, on a host with GPUs, GPU `local % count`, where `local` is the rank's number
/// among `comm`'s ranks on the same host (one GPU per rank when there are enough); else
/// the CPU.
pub fn rank_device<C: Communicator>(comm: &C) -> Result<crate::Device, Error> {
    let chosen = crate::default_device()?;
    if std::env::var_os("OFFLOAD_DEVICE").is_some() {
        return Ok(chosen);
    }
    let gpus: Vec<_> = crate::devices()
        .into_iter()
        .filter(|d| !matches!(d, crate::Device::Cpu))
        .collect();
    if gpus.is_empty() {
        return Ok(chosen);
    }
    let local = comm.split_shared(comm.rank()).rank() as usize;
    Ok(gpus[local % gpus.len()].clone())
}

/// `r`, if it is a rank of `comm` (rsmpi panics on others).
fn rank<C: Communicator + ?Sized>(comm: &C, r: Rank, what: &str) -> Result<Rank, Error> {
    if (0..comm.size()).contains(&r) {
        Ok(r)
    } else {
        Err(Error::Mpi(format!(
            "cannot {what} rank {r}: the communicator has ranks 0..{}",
            comm.size()
        )))
    }
}
