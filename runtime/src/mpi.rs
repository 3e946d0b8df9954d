//! MPI on device data (the `mpi` feature): sending, receiving, exchanging, reducing and
//! broadcasting [`DeviceBuffer`]s and views of them between the ranks of an MPI program,
//! through the `mpi` crate (rsmpi) over the system's MPI library.
//!
//! Each operation is blocking and takes the device data by reference for its whole
//! length, so no safe program can change or free a buffer while a message uses it. The
//! data goes through host memory: a send reads the elements once every launch that
//! writes them has finished (as `to_vec` does, reporting a kernel panic as an `Err`
//! before anything is sent), and a receive writes them only once the whole message has
//! arrived and has the view's length, so a failed receive leaves the buffer as it was.
//! The operations are ordered after the calling thread's launches on the device, and
//! later launches run after them.
//!
//! What is not here yet: passing device addresses to an MPI library built with CUDA
//! support (every message is staged through host memory, which is what a library without
//! it needs), page-locked staging, and requests that overlap communication with kernels.

pub use ::mpi::collective::SystemOperation;
pub use ::mpi::environment::Universe;
pub use ::mpi::topology::{Communicator, Rank};
pub use ::mpi::{Tag, datatype::Equivalence, initialize};

use crate::{DeviceSlice, DeviceSliceMut, Error, scalar::Scalar};
use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::point_to_point::{Destination, Source};

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
        let host = data.into().to_vec()?;
        process.send_with_tag(&host[..], tag);
        Ok(())
    }

    /// Receives a message of exactly `into`'s length from rank `from` with `tag` into
    /// `into`.
    fn receive_device<'a, T: MpiScalar>(
        &self,
        from: Rank,
        tag: Tag,
        into: impl Into<DeviceSliceMut<'a, T>>,
    ) -> Result<(), Error> {
        let process = self.process_at_rank(rank(self, from, "receive from")?);
        let mut into = into.into();
        let (message, status) = process.receive_vec_with_tag::<T>(tag);
        if message.len() != into.len() {
            return Err(Error::Mpi(format!(
                "rank {} sent {} elements with tag {}, into {} device elements: nothing was written",
                status.source_rank(),
                message.len(),
                status.tag(),
                into.len()
            )));
        }
        into.copy_from_slice(&message)
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
        let mut receive = receive.into();
        let outgoing = send.into().to_vec()?;
        let mut incoming = zeros::<T>(receive.len());
        let status = ::mpi::point_to_point::send_receive_into_with_tags(
            &outgoing[..],
            &destination,
            tag,
            &mut incoming[..],
            &source,
            tag,
        );
        let got = status.count(T::equivalent_datatype()) as usize;
        if got != receive.len() {
            return Err(Error::Mpi(format!(
                "rank {from} sent {got} elements with tag {tag}, into {} device elements: nothing was written",
                receive.len()
            )));
        }
        receive.copy_from_slice(&incoming)
    }

    /// Replaces `data` on every rank with `op` over all ranks' `data`, element by
    /// element (each rank's view must have the same length).
    fn all_reduce_device<'a, T: MpiScalar>(
        &self,
        data: impl Into<DeviceSliceMut<'a, T>>,
        op: SystemOperation,
    ) -> Result<(), Error> {
        let mut data = data.into();
        let mine = DeviceSlice::from(&data).to_vec()?;
        let mut all = mine.clone();
        self.all_reduce_into(&mine[..], &mut all[..], op);
        data.copy_from_slice(&all)
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
        let mut host = DeviceSlice::from(&data).to_vec()?;
        root.broadcast_into(&mut host[..]);
        data.copy_from_slice(&host)
    }
}

impl<C: Communicator> DeviceCommunicator for C {}

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

/// `len` zeros of `T`, to receive into.
fn zeros<T: Scalar>(len: usize) -> Vec<T> {
    // SAFETY: every `Scalar` (the integers, `bool` and the floats) is a plain value for
    // which all-zero bytes are valid (`0`, `false`, `0.0`).
    (0..len).map(|_| unsafe { std::mem::zeroed() }).collect()
}
