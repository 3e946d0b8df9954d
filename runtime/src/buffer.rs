//! Device-resident buffers: data that stays on a device across launches.
//!
//! A `DeviceBuffer<T>` is passed to `offload!` in place of host data (`&mut buf` for a
//! `Region` parameter, `&buf` for a slice), and the launch uses it where it lives, with no
//! copy. On a GPU, a launch that writes only device buffers returns without waiting; the
//! host reaches a buffer's contents only through `to_vec`, which waits for the device, so
//! safe code cannot read a buffer while a kernel writes it. `to_vec` also reports a panic
//! of the calling thread's launches on the device that no earlier synchronisation
//! reported; another thread's panics are reported only to that thread.
//!
//! On the CPU backend a buffer is host memory that kernels run on in place. On any
//! device, a launch that panics may leave a device buffer partly written: unlike host
//! regions, buffers are not copied, so there is no original to keep.

use crate::hazards::Hazards;
use crate::pinned::{HostSide, PinnedSlice, PinnedSliceMut};
use crate::stream::{Access, Stream};
use crate::{
    AtomicData, Device, Error, Indexed, IntoAtomic, IntoRegion, IntoSlice, Linear3D,
    OneDimensional, PartitioningStrategy, Region, Shape, SliceData, Stencil2D,
    memory::{BufferLocation, Memory, SplitParts, window},
    scalar::Scalar,
};
use std::marker::PhantomData;
use std::ops::{Range, RangeBounds};

/// `len` elements of `T` on one device.
pub struct DeviceBuffer<T> {
    device: &'static Device,
    len: usize,
    /// Taken only when the buffer is dropped.
    memory: std::mem::ManuallyDrop<Box<dyn Memory>>,
    /// The stream work that still uses the buffer.
    hazards: Hazards,
    _element: PhantomData<T>,
}

fn bytes_of<T: Scalar>(data: &[T]) -> &[u8] {
    // SAFETY: scalars are plain values without padding; their bytes are initialised.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

impl<T: Scalar> DeviceBuffer<T> {
    /// A buffer on `device` holding a copy of `data`.
    pub fn from_slice(device: &Device, data: &[T]) -> Result<Self, Error> {
        let device = crate::machine::registered(device)?;
        Ok(DeviceBuffer {
            device,
            len: data.len(),
            memory: std::mem::ManuallyDrop::new(
                crate::backend::of(device)?.upload(bytes_of(data))?,
            ),
            hazards: Hazards::default(),
            _element: PhantomData,
        })
    }

    /// A buffer of `len` zeros on `device`. Asking for more than the device can hold is
    /// [`Error::OutOfMemory`].
    pub fn zeros(device: &Device, len: usize) -> Result<Self, Error> {
        let bytes = len as u128 * T::TY.size_bytes() as u128;
        let device = crate::machine::registered(device)?;
        Ok(DeviceBuffer {
            device,
            len,
            memory: std::mem::ManuallyDrop::new(
                crate::backend::of(device)?.allocate_zeroed(bytes)?,
            ),
            hazards: Hazards::default(),
            _element: PhantomData,
        })
    }

    /// Replaces the buffer's contents with `data`, which must have the buffer's length.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<(), Error> {
        if data.len() != self.len {
            return Err(Error::InvalidBuffer(format!(
                "cannot copy {} elements into a buffer of {}",
                data.len(),
                self.len
            )));
        }
        // In place: on a GPU the copy is ordered after the launches already made.
        self.write_at(0, data)
    }

    /// The buffer's contents, after every launch that uses it has finished.
    ///
    /// On a GPU this waits for the device, and returns [`Error::KernelPanic`] for the first
    /// panic (in launch order) among the calling thread's asynchronous launches on this
    /// device since its last `to_vec` or [`synchronize`](crate::synchronize) there, whether
    /// or not they wrote this buffer. Each panic is reported once; other threads' are not
    /// reported here.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        self.read_window(0, self.len)
    }

    /// Copies the buffer's contents into `out` (as long as the buffer), as
    /// [`to_vec`](Self::to_vec) reads them: into memory the caller keeps, such as a
    /// [`PinnedVec`]'s.
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<(), Error> {
        DeviceSlice::from(self).copy_to_slice(out)
    }

    /// Waits for the buffer's device as [`to_vec`](Self::to_vec) does, reporting the same
    /// panics, without reading the buffer.
    fn wait(&self) -> Result<(), Error> {
        crate::backend::of(self.device)?.synchronize()
    }

    /// The number of elements (not bytes).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the buffer lives on. A launch that uses the buffer must run there
    /// ([`Error::InvalidLaunch`] otherwise).
    pub fn device(&self) -> &Device {
        self.device
    }

    pub(crate) fn resident(&self) -> BufferLocation {
        BufferLocation {
            device: self.device,
            len: self.len,
            address: self.memory.address(),
            split: None,
            issuer: crate::panic::issuer(),
            hazards: Some(self.hazards.clone()),
        }
    }

    /// Copies `data` into the buffer from element `first` on.
    fn write_at(&self, first: usize, data: &[T]) -> Result<(), Error> {
        self.memory
            .write(first * T::TY.size_bytes(), bytes_of(data))
    }

    /// Elements `range` of the buffer, read-only: a kernel's slice argument
    /// (`&buf.slice(a..b)?`), the source of a copy on the device, or read back with
    /// `to_vec`. A range outside the buffer is [`Error::InvalidBuffer`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>, Error> {
        let (start, len) = window(self.len, range)?;
        Ok(DeviceSlice {
            buffer: self,
            start,
            len,
        })
    }

    /// Elements `range` of the buffer, writable: a kernel's one-dimensional region
    /// argument (`&mut buf.slice_mut(a..b)?`), or the destination of copies. A range
    /// outside the buffer is [`Error::InvalidBuffer`].
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSliceMut<'_, T>, Error> {
        let (start, len) = window(self.len, range)?;
        Ok(DeviceSliceMut::new(self, start, len))
    }

    /// The buffer as two writable views, of elements `..mid` and `mid..`. A `mid` past
    /// the end is [`Error::InvalidBuffer`].
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'_, T>, DeviceSliceMut<'_, T>), Error> {
        DeviceSliceMut::from(self).into_split_at(mid)
    }

    /// Replaces the buffer's contents with `source`'s, which must be on the same device
    /// and as long, by a copy on the device (after the launches already made there); the
    /// host waits for nothing.
    pub fn copy_from_device<'s>(
        &mut self,
        source: impl Into<DeviceSlice<'s, T>>,
    ) -> Result<(), Error>
    where
        T: 's,
    {
        copy_on_device(self, 0, self.len, source.into())
    }

    /// The device address range of elements `start..start + len`.
    fn bytes(&self, start: usize, len: usize) -> Range<u64> {
        let size = T::TY.size_bytes() as u64;
        let base = self.memory.address();
        base + start as u64 * size..base + (start + len) as u64 * size
    }

    /// Enqueues on `stream` a copy of `data` (page-locked host memory, as long as the
    /// buffer) into the buffer, and returns at once. The copy waits for the work on other
    /// streams that uses the buffer, and later work that uses it waits for the copy; the
    /// host can change `data` again only once the copy has read it
    /// ([`PinnedVec::as_mut_slice`] waits for that).
    pub fn copy_from_slice_async<'p>(
        &mut self,
        stream: &Stream,
        data: impl Into<PinnedSlice<'p, T>>,
    ) -> Result<(), Error>
    where
        T: 'p,
    {
        copy_in_async(self, 0, self.len, stream, data.into().side())
    }

    /// Enqueues on `stream` a copy of the buffer into `out` (page-locked host memory, as
    /// long as the buffer), and returns at once. The copy waits for the work on other
    /// streams that writes the buffer; the host reads `out` only once the copy has
    /// finished ([`PinnedVec::as_slice`] waits for that).
    pub fn copy_to_async<'p>(
        &self,
        stream: &Stream,
        out: impl Into<PinnedSliceMut<'p, T>>,
    ) -> Result<(), Error>
    where
        T: 'p,
    {
        copy_out_async(self, 0, self.len, stream, out.into().side())
    }

    /// Enqueues on `stream` a copy of `source` (on the same device, as long as the
    /// buffer) into the buffer, ordered against other streams as the other copies are.
    pub fn copy_from_device_async<'s>(
        &mut self,
        stream: &Stream,
        source: impl Into<DeviceSlice<'s, T>>,
    ) -> Result<(), Error>
    where
        T: 's,
    {
        copy_on_device_async(self, 0, self.len, stream, source.into())
    }

    /// Device-resident data of elements `start..start + len`.
    fn location(&self, start: usize, len: usize) -> BufferLocation {
        let mut at = self.resident();
        at.address += (start * T::TY.size_bytes()) as u64;
        at.len = len;
        at
    }

    /// Elements `start..start + len`, after every launch that uses the buffer has
    /// finished (see [`to_vec`](Self::to_vec)).
    fn read_window(&self, start: usize, len: usize) -> Result<Vec<T>, Error> {
        // The one queue's copy below runs after every stream's work; this reports the
        // panics of the streams that wrote these elements.
        self.hazards.settle(&self.bytes(start, len), false)?;
        let mut out: Vec<T> = Vec::with_capacity(len);
        let size = T::TY.size_bytes();
        // SAFETY: `out` has capacity for `len * size` bytes; `read` fills all of them,
        // from `len` valid elements of the memory, before the length is set.
        unsafe {
            let into = std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len * size);
            self.memory.read(start * size, into)?;
            out.set_len(len);
        }
        Ok(out)
    }

    /// Copies elements `start..start + out.len()` into `out`, as
    /// [`read_window`](Self::read_window) reads them.
    fn read_into(&self, start: usize, out: &mut [T]) -> Result<(), Error> {
        self.hazards.settle(&self.bytes(start, out.len()), false)?;
        let size = T::TY.size_bytes();
        // SAFETY: scalars are plain values without padding, and every bit pattern the
        // read writes is a valid one.
        let into = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out),
            )
        };
        self.memory.read(start * size, into)
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; nothing uses the field after.
        let memory = unsafe { std::mem::ManuallyDrop::take(&mut self.memory) };
        // Freed once no graph holds it; the device frees it after the work enqueued
        // before, on every stream.
        self.hazards.adopt(Box::new(memory), false);
    }
}

/// Copies `source` over elements `start..start + len` of `target`, on their device.
fn copy_on_device<T: Scalar>(
    target: &DeviceBuffer<T>,
    start: usize,
    len: usize,
    source: DeviceSlice<'_, T>,
) -> Result<(), Error> {
    if source.len != len {
        return Err(Error::InvalidBuffer(format!(
            "cannot copy {} elements into a buffer of {len}",
            source.len
        )));
    }
    if source.buffer.device != target.device {
        return Err(Error::InvalidBuffer(format!(
            "a copy on the device needs both buffers on one device: the source is on {}, the target on {}",
            source.buffer.device, target.device
        )));
    }
    let (from, to) = (
        source.buffer.location(source.start, len).address,
        target.location(start, len).address,
    );
    // SAFETY: both windows are within live buffers of this device (checked when the
    // views were made), and do not overlap: the target window is borrowed exclusively,
    // so `source` is another buffer or a disjoint part of this one.
    unsafe { crate::backend::of(target.device)?.copy(from, to, len * T::TY.size_bytes()) }
}

/// The error for a copy of `given` elements into or out of `len`.
fn length_mismatch(given: usize, len: usize) -> Error {
    Error::InvalidBuffer(format!(
        "cannot copy {given} elements into a buffer of {len}"
    ))
}

/// Enqueues on `stream` a copy of `host` over elements `start..start + len` of `target`.
fn copy_in_async<T: Scalar>(
    target: &DeviceBuffer<T>,
    start: usize,
    len: usize,
    stream: &Stream,
    host: HostSide<'_>,
) -> Result<(), Error> {
    if host.len != len {
        return Err(length_mismatch(host.len, len));
    }
    stream.check_device(target.device, "the buffer")?;
    let device = target.bytes(start, len);
    let (from, to, bytes) = (
        host.range.start,
        device.start,
        host.range.end - host.range.start,
    );
    let uses = [
        Access {
            hazards: &target.hazards,
            range: device,
            write: true,
        },
        Access {
            hazards: host.hazards,
            range: host.range,
            write: false,
        },
    ];
    // SAFETY: both ranges are live (the views were checked when made); the device
    // range is not used by other streams' work until the copy is done, and the host
    // memory is neither written by the host nor freed before it (`uses`).
    stream.run(&uses, |queue| unsafe {
        queue.copy_in(from as *const u8, to, bytes as usize)
    })
}

/// Enqueues on `stream` a copy of elements `start..start + len` of `source` into `host`.
fn copy_out_async<T: Scalar>(
    source: &DeviceBuffer<T>,
    start: usize,
    len: usize,
    stream: &Stream,
    host: HostSide<'_>,
) -> Result<(), Error> {
    if host.len != len {
        return Err(Error::InvalidBuffer(format!(
            "cannot copy {len} elements into {} of page-locked memory",
            host.len
        )));
    }
    stream.check_device(source.device, "the buffer")?;
    let device = source.bytes(start, len);
    let (from, to, bytes) = (
        device.start,
        host.range.start,
        host.range.end - host.range.start,
    );
    let uses = [
        Access {
            hazards: &source.hazards,
            range: device,
            write: false,
        },
        Access {
            hazards: host.hazards,
            range: host.range,
            write: true,
        },
    ];
    // SAFETY: as in `copy_in_async`, with the host memory neither read nor written by the
    // host before the copy is done.
    stream.run(&uses, |queue| unsafe {
        queue.copy_out(from, to as *mut u8, bytes as usize)
    })
}

/// Enqueues on `stream` a copy of `source` over elements `start..start + len` of
/// `target`.
fn copy_on_device_async<T: Scalar>(
    target: &DeviceBuffer<T>,
    start: usize,
    len: usize,
    stream: &Stream,
    source: DeviceSlice<'_, T>,
) -> Result<(), Error> {
    if source.len != len {
        return Err(length_mismatch(source.len, len));
    }
    stream.check_device(target.device, "the target buffer")?;
    stream.check_device(source.buffer.device, "the source buffer")?;
    let (from, to) = (
        source.buffer.bytes(source.start, len),
        target.bytes(start, len),
    );
    let (from_address, to_address, bytes) = (from.start, to.start, to.end - to.start);
    let uses = [
        Access {
            hazards: &target.hazards,
            range: to,
            write: true,
        },
        Access {
            hazards: &source.buffer.hazards,
            range: from,
            write: false,
        },
    ];
    // SAFETY: both windows are within live buffers of this device and do not overlap
    // (the target window is borrowed exclusively by the caller, so `source` is another
    // buffer or a disjoint part of this one).
    stream.run(&uses, |queue| unsafe {
        queue.copy_device(from_address, to_address, bytes as usize)
    })
}

/// Elements of a [`DeviceBuffer`], read-only ([`DeviceBuffer::slice`]).
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T> {
    buffer: &'a DeviceBuffer<T>,
    start: usize,
    len: usize,
}

/// Elements of a [`DeviceBuffer`], writable ([`DeviceBuffer::slice_mut`],
/// [`DeviceBuffer::split_at_mut`]). The view borrows its buffer exclusively for its
/// window: two views of one buffer, from `split_at_mut`, never overlap, so each may be
/// written while the other is (a halo row received while another is sent).
pub struct DeviceSliceMut<'a, T> {
    buffer: &'a DeviceBuffer<T>,
    start: usize,
    len: usize,
    _exclusive: PhantomData<&'a mut DeviceBuffer<T>>,
}

impl<'a, T: Scalar> DeviceSlice<'a, T> {
    /// Elements `range` of the view. A range outside the view is
    /// [`Error::InvalidBuffer`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>, Error> {
        let (start, len) = window(self.len, range)?;
        Ok(DeviceSlice {
            buffer: self.buffer,
            start: self.start + start,
            len,
        })
    }
}

impl<T: Scalar> DeviceSlice<'_, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, after every launch that uses the buffer has finished, reporting
    /// panics as [`DeviceBuffer::to_vec`] does.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        self.buffer.read_window(self.start, self.len)
    }

    /// Copies the elements into `out` (as long as the view), as [`to_vec`](Self::to_vec)
    /// reads them: into memory the caller keeps, such as a [`PinnedVec`]'s.
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<(), Error> {
        if out.len() != self.len {
            return Err(Error::InvalidBuffer(format!(
                "cannot copy {} elements into {} of host memory",
                self.len,
                out.len()
            )));
        }
        self.buffer.read_into(self.start, out)
    }

    /// Enqueues on `stream` a copy of the elements into `out`, as
    /// [`DeviceBuffer::copy_to_async`].
    pub fn copy_to_async<'p>(
        &self,
        stream: &Stream,
        out: impl Into<PinnedSliceMut<'p, T>>,
    ) -> Result<(), Error>
    where
        T: 'p,
    {
        copy_out_async(self.buffer, self.start, self.len, stream, out.into().side())
    }
}

impl<'a, T: Scalar> DeviceSliceMut<'a, T> {
    /// Elements `start..start + len` of `buffer`, which the caller has checked and
    /// borrows exclusively for `'a`.
    fn new(buffer: &'a mut DeviceBuffer<T>, start: usize, len: usize) -> Self {
        DeviceSliceMut {
            buffer,
            start,
            len,
            _exclusive: PhantomData,
        }
    }

    /// The view as two writable views, of its elements `..mid` and `mid..`, for as long
    /// as the view was borrowed. A `mid` past the end is [`Error::InvalidBuffer`].
    pub fn into_split_at(self, mid: usize) -> Result<(Self, Self), Error> {
        if mid > self.len {
            return Err(Error::InvalidBuffer(format!(
                "cannot split a view of {} elements at {mid}",
                self.len
            )));
        }
        let part = |start, len| DeviceSliceMut {
            buffer: self.buffer,
            start,
            len,
            _exclusive: PhantomData,
        };
        Ok((
            part(self.start, mid),
            part(self.start + mid, self.len - mid),
        ))
    }

    /// As [`into_split_at`](Self::into_split_at), for as long as `self` is borrowed.
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'_, T>, DeviceSliceMut<'_, T>), Error> {
        DeviceSliceMut::from(self).into_split_at(mid)
    }

    /// Elements `range` of the view, read-only. A range outside the view is
    /// [`Error::InvalidBuffer`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>, Error> {
        let (start, len) = window(self.len, range)?;
        Ok(DeviceSlice {
            buffer: self.buffer,
            start: self.start + start,
            len,
        })
    }

    /// Elements `range` of the view, writable.
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSliceMut<'_, T>, Error> {
        let (start, len) = window(self.len, range)?;
        Ok(DeviceSliceMut {
            buffer: self.buffer,
            start: self.start + start,
            len,
            _exclusive: PhantomData,
        })
    }
}

impl<T: Scalar> DeviceSliceMut<'_, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, as [`DeviceSlice::to_vec`].
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        self.buffer.read_window(self.start, self.len)
    }

    /// Copies the elements into `out`, as [`DeviceSlice::copy_to_slice`].
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<(), Error> {
        DeviceSlice::from(self).copy_to_slice(out)
    }

    /// Replaces the elements with `data`, which must be as long.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<(), Error> {
        if data.len() != self.len {
            return Err(Error::InvalidBuffer(format!(
                "cannot copy {} elements into a buffer of {}",
                data.len(),
                self.len
            )));
        }
        self.buffer.write_at(self.start, data)
    }

    /// Enqueues on `stream` a copy of `data` into the elements, as
    /// [`DeviceBuffer::copy_from_slice_async`].
    pub fn copy_from_slice_async<'p>(
        &mut self,
        stream: &Stream,
        data: impl Into<PinnedSlice<'p, T>>,
    ) -> Result<(), Error>
    where
        T: 'p,
    {
        copy_in_async(
            self.buffer,
            self.start,
            self.len,
            stream,
            data.into().side(),
        )
    }

    /// Enqueues on `stream` a copy of the elements into `out`, as
    /// [`DeviceBuffer::copy_to_async`].
    pub fn copy_to_async<'p>(
        &self,
        stream: &Stream,
        out: impl Into<PinnedSliceMut<'p, T>>,
    ) -> Result<(), Error>
    where
        T: 'p,
    {
        copy_out_async(self.buffer, self.start, self.len, stream, out.into().side())
    }

    /// Enqueues on `stream` a copy of `source` into the elements, as
    /// [`DeviceBuffer::copy_from_device_async`].
    pub fn copy_from_device_async<'s>(
        &mut self,
        stream: &Stream,
        source: impl Into<DeviceSlice<'s, T>>,
    ) -> Result<(), Error>
    where
        T: 's,
    {
        copy_on_device_async(self.buffer, self.start, self.len, stream, source.into())
    }

    /// Replaces the elements with `source`'s, as [`DeviceBuffer::copy_from_device`].
    pub fn copy_from_device<'s>(
        &mut self,
        source: impl Into<DeviceSlice<'s, T>>,
    ) -> Result<(), Error>
    where
        T: 's,
    {
        copy_on_device(self.buffer, self.start, self.len, source.into())
    }
}

impl<T: Scalar> DeviceSlice<'_, T> {
    /// The view's device and the address of its first element, for a library (NCCL)
    /// that works on device memory itself.
    pub(crate) fn raw(&self) -> (&'static Device, u64) {
        (
            self.buffer.device,
            self.buffer.location(self.start, self.len).address,
        )
    }
}

impl<T: Scalar> DeviceSliceMut<'_, T> {
    /// As [`DeviceSlice::raw`].
    pub(crate) fn raw(&mut self) -> (&'static Device, u64) {
        (
            self.buffer.device,
            self.buffer.location(self.start, self.len).address,
        )
    }
}

impl<'a, T: Scalar> From<&'a DeviceBuffer<T>> for DeviceSlice<'a, T> {
    fn from(buffer: &'a DeviceBuffer<T>) -> Self {
        DeviceSlice {
            buffer,
            start: 0,
            len: buffer.len,
        }
    }
}

impl<'a, T: Scalar> From<&DeviceSlice<'a, T>> for DeviceSlice<'a, T> {
    fn from(view: &DeviceSlice<'a, T>) -> Self {
        *view
    }
}

impl<'a, T: Scalar> From<&'a DeviceSliceMut<'_, T>> for DeviceSlice<'a, T> {
    fn from(view: &'a DeviceSliceMut<'_, T>) -> Self {
        DeviceSlice {
            buffer: view.buffer,
            start: view.start,
            len: view.len,
        }
    }
}

impl<'a, T: Scalar> From<&'a mut DeviceBuffer<T>> for DeviceSliceMut<'a, T> {
    fn from(buffer: &'a mut DeviceBuffer<T>) -> Self {
        let len = buffer.len;
        DeviceSliceMut::new(buffer, 0, len)
    }
}

impl<'a, 'b: 'a, T: Scalar> From<&'a mut DeviceSliceMut<'b, T>> for DeviceSliceMut<'a, T> {
    fn from(view: &'a mut DeviceSliceMut<'b, T>) -> Self {
        DeviceSliceMut {
            buffer: view.buffer,
            start: view.start,
            len: view.len,
            _exclusive: PhantomData,
        }
    }
}

/// Data spread over every device a `device = all` launch uses (each GPU, or two CPU parts
/// without one), for launches that never bring it back to the host in between.
///
/// - [`scatter`](Self::scatter) gives each device a contiguous window, cut every `granule`
///   elements: pass it as a region, and each device's share of the launch works on its
///   own window in place. `granule` must be the elements one workgroup covers (256 for a
///   `Linear1D` region with the default workgroup size), so that a share's workgroups are
///   exactly the ones its window needs; a launch that does not fit is refused.
/// - [`replicate`](Self::replicate) puts all of the data on every device: pass it as a
///   slice, which any thread may read anywhere.
///
/// Each part is allocated at the buffer's full length, so a kernel indexes it as usual;
/// only the part's window is meaningful. Launches on split buffers do not wait for the
/// devices; [`to_vec`](Self::to_vec) does, and reports the calling thread's unreported
/// panics on them, as [`DeviceBuffer::to_vec`] does.
pub struct SplitBuffer<T> {
    len: usize,
    parts: Vec<DeviceBuffer<T>>,
    windows: Vec<(usize, usize)>,
    replicated: bool,
}

impl<T: Scalar> SplitBuffer<T> {
    /// One contiguous window of `data` per device, cut every `granule` elements.
    pub fn scatter(data: &[T], granule: usize) -> Result<Self, Error> {
        if granule == 0 {
            return Err(Error::InvalidBuffer(
                "a split buffer's granule must be at least 1".into(),
            ));
        }
        let devices = crate::split::share_devices()?;
        let (granules, count) = (data.len().div_ceil(granule), devices.len());
        let mut parts = Vec::with_capacity(count);
        let mut windows = Vec::with_capacity(count);
        for (p, device) in devices.iter().enumerate() {
            let at = |q: usize| (granules * q / count * granule).min(data.len());
            let (first, last) = (at(p), at(p + 1));
            let part = DeviceBuffer::zeros(device, data.len())?;
            part.write_at(first, &data[first..last])?;
            parts.push(part);
            windows.push((first, last));
        }
        Ok(SplitBuffer {
            len: data.len(),
            parts,
            windows,
            replicated: false,
        })
    }

    /// All of `data` on every device.
    pub fn replicate(data: &[T]) -> Result<Self, Error> {
        let devices = crate::split::share_devices()?;
        let parts = devices
            .iter()
            .map(|d| DeviceBuffer::from_slice(d, data))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SplitBuffer {
            len: data.len(),
            windows: vec![(0, data.len()); parts.len()],
            parts,
            replicated: true,
        })
    }

    /// The buffer's contents (each part's window, in order), after every launch that uses
    /// it has finished. Reads every part, so it waits for every part's device and reports
    /// the first panic (parts in order) that [`DeviceBuffer::to_vec`] reports for one.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        let mut out = Vec::with_capacity(self.len);
        let mut first_error = None;
        for (p, (part, &(first, last))) in self.parts.iter().zip(&self.windows).enumerate() {
            if self.replicated && p > 0 {
                // Every part holds all of it: the others are only waited for.
                if let Err(e) = part.wait() {
                    first_error.get_or_insert(e);
                }
                continue;
            }
            match part.to_vec() {
                Ok(all) if self.replicated => out = all,
                Ok(all) => out.extend_from_slice(&all[first..last]),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(out), Err)
    }

    /// The number of elements of the whole buffer: the length of the data it was made
    /// from, which is also each part's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The devices of the parts, in share order.
    pub fn devices(&self) -> Vec<Device> {
        self.parts.iter().map(|p| p.device().clone()).collect()
    }

    pub(crate) fn resident(&self) -> BufferLocation {
        let parts: Vec<BufferLocation> = self.parts.iter().map(DeviceBuffer::resident).collect();
        BufferLocation {
            split: Some(std::sync::Arc::new(SplitParts {
                parts: parts.iter().map(|r| (r.device, r.address)).collect(),
                windows: self.windows.clone(),
                replicated: self.replicated,
            })),
            // Split launches take no stream.
            hazards: None,
            ..parts[0].clone()
        }
    }
}

// How buffers take part in launches: as regions and slices used where they live.

impl<'a, T: Scalar, S: PartitioningStrategy> Region<'a, T, S> {
    /// A region over a device-resident buffer, used where it lives.
    pub fn on_device(buffer: &'a mut DeviceBuffer<T>) -> Self {
        Self::over(buffer, None)
    }

    /// A 2-D region over a device-resident buffer in rows of `row_len` elements.
    pub fn on_device_2d(buffer: &'a mut DeviceBuffer<T>, row_len: usize) -> Self {
        Self::over(buffer, Some(row_len))
    }

    fn over(buffer: &DeviceBuffer<T>, row_len: Option<usize>) -> Self {
        let shape = Shape {
            row_len,
            ..Shape::flat(buffer.len())
        };
        Region::resident(shape, buffer.resident())
    }
}

impl<'a, T: Scalar> Region<'a, T, Linear3D> {
    /// A 3-D region over a device-resident buffer: rows of `nx` elements, planes of `ny`
    /// rows (as [`Region::new_3d`]).
    pub fn on_device_3d(buffer: &'a mut DeviceBuffer<T>, nx: usize, ny: usize) -> Self {
        let mut region = Self::over(buffer, Some(nx));
        region.shape.plane_rows = Some(ny);
        region
    }
}

impl<'a, T: Scalar> Region<'a, T, Indexed> {
    /// A scatter over a device-resident buffer: thread `t` owns element `indices[t]` (as
    /// [`Region::indexed`]).
    pub fn indexed_on_device(buffer: &'a mut DeviceBuffer<T>, indices: &'a [usize]) -> Self {
        let mut region = Self::over(buffer, None);
        region.shape.indices = Some(indices.len());
        region.indices = Some(indices);
        region
    }
}

impl<'a, T: Scalar, const R: usize> Region<'a, T, Stencil2D<R>> {
    /// A read-only stencil region over a device-resident buffer.
    pub fn stencil_on_device(buffer: &'a DeviceBuffer<T>, row_len: usize) -> Self {
        Region::over(buffer, Some(row_len))
    }
}

impl<'a, T: Scalar, S: OneDimensional> IntoRegion<'a, T, S> for &'a mut DeviceBuffer<T> {
    fn into_region(self) -> Region<'a, T, S> {
        Region::on_device(self)
    }
}

impl<'a, T: Scalar, S: OneDimensional> IntoRegion<'a, T, S> for &'a mut SplitBuffer<T> {
    fn into_region(self) -> Region<'a, T, S> {
        Region::resident(Shape::flat(self.len()), self.resident())
    }
}

impl<'a, T: Scalar> IntoSlice<'a, T> for &'a SplitBuffer<T> {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: &[],
            resident: Some(self.resident()),
        }
    }
}

impl<'a, T: Scalar> IntoAtomic<'a, T> for &'a mut DeviceBuffer<T> {
    fn into_atomic(self) -> AtomicData<'a, T> {
        // The host slice is never touched for resident data; the length is the buffer's.
        AtomicData {
            host: &mut [],
            resident: Some(self.resident()),
        }
    }
}

impl<'a, T: Scalar, S: OneDimensional> IntoRegion<'a, T, S> for &'a mut DeviceSliceMut<'_, T> {
    fn into_region(self) -> Region<'a, T, S> {
        let at = self.buffer.location(self.start, self.len);
        Region::resident(Shape::flat(self.len), at)
    }
}

impl<'a, T: Scalar> IntoSlice<'a, T> for DeviceSlice<'a, T> {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: &[],
            resident: Some(self.buffer.location(self.start, self.len)),
        }
    }
}

impl<'a, T: Scalar> IntoSlice<'a, T> for &'a DeviceSlice<'_, T> {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: &[],
            resident: Some(self.buffer.location(self.start, self.len)),
        }
    }
}

impl<'a, T: Scalar> IntoSlice<'a, T> for &'a DeviceBuffer<T> {
    fn into_slice(self) -> SliceData<'a, T> {
        // The host slice is never read for resident data; the length is the buffer's.
        SliceData {
            host: &[],
            resident: Some(self.resident()),
        }
    }
}
