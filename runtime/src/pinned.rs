//! Page-locked host memory: what asynchronous copies on a stream read and write.
//!
//! A `PinnedVec<T>` is host memory the GPU copies to and from by itself, so that
//! `DeviceBuffer::copy_from_slice_async` and `copy_to_async` return at once and overlap
//! with kernels and with each other. The vector remembers the stream copies still using it
//! (`crate::hazards`): the host reaches its elements only through
//! [`as_slice`](PinnedVec::as_slice) and [`as_mut_slice`](PinnedVec::as_mut_slice), which
//! first wait for the copies that write it (and, to write, that read it); dropping it
//! waits for all of them. So no safe program reads a vector a copy is filling, or changes
//! one a copy is reading. On the CPU backend it is plain host memory.

use crate::hazards::Hazards;
use crate::scalar::Scalar;
use crate::{Device, Error};
use std::marker::PhantomData;
use std::ops::{Range, RangeBounds};

/// `len` elements of `T` in page-locked host memory, for asynchronous copies.
pub struct PinnedVec<T> {
    /// Taken only when the vector is dropped.
    memory: std::mem::ManuallyDrop<Box<dyn crate::queue::HostMemory>>,
    len: usize,
    hazards: Hazards,
    _element: PhantomData<T>,
}

impl<T: Scalar> PinnedVec<T> {
    /// `len` zeros, page-locked for copies to and from `device` (and, on CUDA, any other
    /// GPU).
    pub fn zeros(device: &Device, len: usize) -> Result<Self, Error> {
        let device = crate::machine::registered(device)?;
        let bytes = len
            .checked_mul(T::TY.size_bytes())
            .ok_or(Error::OutOfMemory {
                device: "the host".into(),
                bytes: len as u128 * T::TY.size_bytes() as u128,
            })?;
        Ok(PinnedVec {
            memory: std::mem::ManuallyDrop::new(crate::backend::of(device)?.pinned(bytes)?),
            len,
            hazards: Hazards::default(),
            _element: PhantomData,
        })
    }

    /// A page-locked copy of `data`.
    pub fn from_slice(device: &Device, data: &[T]) -> Result<Self, Error> {
        let mut pinned = Self::zeros(device, data.len())?;
        pinned.elements_mut().copy_from_slice(data);
        Ok(pinned)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, once the stream copies that write them have finished.
    pub fn as_slice(&self) -> Result<&[T], Error> {
        self.hazards.settle(&self.bytes(0, self.len), false)?;
        Ok(self.elements())
    }

    /// The elements, writable, once every stream copy that uses them has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], Error> {
        self.hazards.settle(&self.bytes(0, self.len), true)?;
        Ok(self.elements_mut())
    }

    /// A copy of the elements, as [`as_slice`](Self::as_slice) sees them.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        Ok(self.as_slice()?.to_vec())
    }

    /// Elements `range`, read-only: the source of a copy to the device. A range outside
    /// the vector is [`Error::InvalidBuffer`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<PinnedSlice<'_, T>, Error> {
        let (start, len) = crate::memory::window(self.len, range)?;
        Ok(PinnedSlice {
            pinned: self,
            start,
            len,
        })
    }

    /// Elements `range`, writable: the destination of a copy from the device.
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<PinnedSliceMut<'_, T>, Error> {
        let (start, len) = crate::memory::window(self.len, range)?;
        Ok(PinnedSliceMut {
            pinned: self,
            start,
            len,
        })
    }

    fn elements(&self) -> &[T] {
        // SAFETY: the memory holds `len` elements' bytes, aligned for any scalar (page- or
        // 8-byte aligned), and every bit pattern is a valid scalar.
        unsafe { std::slice::from_raw_parts(self.memory.as_ptr().cast(), self.len) }
    }

    fn elements_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.memory.as_mut_ptr().cast(), self.len) }
    }

    /// The host address range of elements `start..start + len`.
    fn bytes(&self, start: usize, len: usize) -> Range<u64> {
        let size = T::TY.size_bytes() as u64;
        let base = self.memory.as_ptr() as u64;
        base + start as u64 * size..base + (start + len) as u64 * size
    }
}

impl<T> Drop for PinnedVec<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; nothing uses the field after.
        let memory = unsafe { std::mem::ManuallyDrop::take(&mut self.memory) };
        // Freed once no graph holds it, after the copies still using it have finished.
        self.hazards.adopt(Box::new(memory), true);
    }
}

impl<T: Scalar> std::fmt::Debug for PinnedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedVec<{}>({} elements)", T::TY, self.len)
    }
}

/// Elements of a [`PinnedVec`], read-only ([`PinnedVec::slice`]).
#[derive(Clone, Copy)]
pub struct PinnedSlice<'a, T> {
    pinned: &'a PinnedVec<T>,
    start: usize,
    len: usize,
}

/// Elements of a [`PinnedVec`], writable ([`PinnedVec::slice_mut`]).
pub struct PinnedSliceMut<'a, T> {
    pinned: &'a mut PinnedVec<T>,
    start: usize,
    len: usize,
}

/// Host memory a copy reads: its address range, and the uses it records.
pub(crate) struct HostSide<'a> {
    pub hazards: &'a Hazards,
    pub range: Range<u64>,
    pub len: usize,
}

impl<'a, T: Scalar> PinnedSlice<'a, T> {
    pub(crate) fn side(&self) -> HostSide<'a> {
        HostSide {
            hazards: &self.pinned.hazards,
            range: self.pinned.bytes(self.start, self.len),
            len: self.len,
        }
    }
}

impl<T: Scalar> PinnedSliceMut<'_, T> {
    pub(crate) fn side(&self) -> HostSide<'_> {
        HostSide {
            hazards: &self.pinned.hazards,
            range: self.pinned.bytes(self.start, self.len),
            len: self.len,
        }
    }
}

impl<'a, T: Scalar> From<&'a PinnedVec<T>> for PinnedSlice<'a, T> {
    fn from(pinned: &'a PinnedVec<T>) -> Self {
        PinnedSlice {
            len: pinned.len,
            pinned,
            start: 0,
        }
    }
}

impl<'a, T: Scalar> From<&PinnedSlice<'a, T>> for PinnedSlice<'a, T> {
    fn from(view: &PinnedSlice<'a, T>) -> Self {
        *view
    }
}

impl<'a, T: Scalar> From<&'a mut PinnedVec<T>> for PinnedSliceMut<'a, T> {
    fn from(pinned: &'a mut PinnedVec<T>) -> Self {
        PinnedSliceMut {
            len: pinned.len,
            pinned,
            start: 0,
        }
    }
}

impl<'a, 'b: 'a, T: Scalar> From<&'a mut PinnedSliceMut<'b, T>> for PinnedSliceMut<'a, T> {
    fn from(view: &'a mut PinnedSliceMut<'b, T>) -> Self {
        PinnedSliceMut {
            pinned: &mut *view.pinned,
            start: view.start,
            len: view.len,
        }
    }
}
