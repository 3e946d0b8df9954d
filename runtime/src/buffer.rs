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

use crate::{Device, Error, scalar::Scalar};
use std::marker::PhantomData;

/// Where a buffer's data lives, as a launch needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resident {
    pub device: Device,
    /// Elements in the buffer.
    pub len: usize,
    /// The device address (CUDA) or host address (CPU) of the first element.
    pub address: u64,
    /// For a [`SplitBuffer`]: every part, one per share of a `device = all` launch (the
    /// fields above describe the first).
    pub split: Option<std::sync::Arc<SplitParts>>,
    /// The thread that made the launch argument: the launch's issuer, to whom an
    /// asynchronous launch's panic is reported (also when a `device = all` launch runs its
    /// shares on helper threads).
    pub issuer: crate::cuda::Issuer,
}

/// Where a [`SplitBuffer`]'s parts live.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SplitParts {
    /// Each part's device and the address of its element 0.
    pub parts: Vec<(Device, u64)>,
    /// The elements each part holds: its window of a scattered buffer, all of them in a
    /// replicated one.
    pub windows: Vec<(usize, usize)>,
    pub replicated: bool,
}

enum Storage {
    Cuda(cudarc::driver::CudaSlice<u8>),
    /// 8-byte aligned for any element type.
    Cpu(Vec<u64>),
}

/// `len` elements of `T` on one device.
pub struct DeviceBuffer<T> {
    device: Device,
    len: usize,
    storage: Storage,
    _element: PhantomData<T>,
}

/// `bytes` of zeros as 8-byte words, or `None` if the allocator refuses. Zeroed pages
/// come from the allocator lazily, without touching them here.
fn zeroed_words(bytes: u128) -> Option<Vec<u64>> {
    let words = usize::try_from(bytes.div_ceil(8)).ok()?;
    if words == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(words).ok()?;
    // SAFETY: `layout` has a non-zero size; a non-null result is `words` zeroed, aligned
    // `u64`s owned by the returned vector, which frees them with the same layout.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<u64>();
        (!ptr.is_null()).then(|| Vec::from_raw_parts(ptr, words, words))
    }
}

fn bytes_of<T: Scalar>(data: &[T]) -> &[u8] {
    // SAFETY: scalars are plain values without padding; their bytes are initialised.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

impl<T: Scalar> DeviceBuffer<T> {
    /// A buffer on `device` holding a copy of `data`.
    pub fn from_slice(device: &Device, data: &[T]) -> Result<Self, Error> {
        let storage = match device {
            Device::Cuda { ordinal, .. } => {
                let stream = crate::cuda::stream(*ordinal)?;
                let bytes = bytes_of(data);
                let slice = if bytes.is_empty() {
                    // A zero-length allocation is refused by the driver; one byte stands in.
                    stream.alloc_zeros::<u8>(1)
                } else {
                    stream.clone_htod(bytes)
                }
                .map_err(Error::cuda("copying a buffer to the device"))?;
                Storage::Cuda(slice)
            }
            Device::Cpu => {
                let bytes = bytes_of(data);
                let mut words = vec![0u64; bytes.len().div_ceil(8)];
                // SAFETY: `words` has room for `bytes`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        words.as_mut_ptr().cast::<u8>(),
                        bytes.len(),
                    )
                };
                Storage::Cpu(words)
            }
        };
        Ok(DeviceBuffer {
            device: device.clone(),
            len: data.len(),
            storage,
            _element: PhantomData,
        })
    }

    /// A buffer of `len` zeros on `device`. Asking for more than the device can hold is
    /// [`Error::OutOfMemory`].
    pub fn zeros(device: &Device, len: usize) -> Result<Self, Error> {
        let bytes = len as u128 * T::TY.size_bytes() as u128;
        let out_of_memory = || Error::OutOfMemory {
            device: device.to_string(),
            bytes,
        };
        let storage = match device {
            Device::Cuda { ordinal, .. } => {
                let stream = crate::cuda::stream(*ordinal)?;
                let size = usize::try_from(bytes).map_err(|_| out_of_memory())?;
                match stream.alloc_zeros::<u8>(size.max(1)) {
                    Ok(slice) => Storage::Cuda(slice),
                    Err(e)
                        if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY =>
                    {
                        return Err(out_of_memory());
                    }
                    Err(e) => return Err(Error::cuda("allocating a buffer")(e)),
                }
            }
            Device::Cpu => {
                // The CPU backend's device memory is the host's: a buffer larger than it
                // is refused up front, since an overcommitting kernel would hand out the
                // address space and kill the process when it is touched.
                if crate::cpu::host_memory_bytes().is_some_and(|total| bytes > total as u128) {
                    return Err(out_of_memory());
                }
                Storage::Cpu(zeroed_words(bytes).ok_or_else(out_of_memory)?)
            }
        };
        Ok(DeviceBuffer {
            device: device.clone(),
            len,
            storage,
            _element: PhantomData,
        })
    }

    /// Replaces the buffer's contents with `data`, which must have the buffer's length.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<(), Error> {
        if data.len() != self.len {
            return Err(Error::InvalidLaunch(format!(
                "cannot copy {} elements into a buffer of {}",
                data.len(),
                self.len
            )));
        }
        *self = DeviceBuffer::from_slice(&self.device, data)?;
        Ok(())
    }

    /// The buffer's contents, after every launch that uses it has finished.
    ///
    /// On a GPU this waits for the device, and returns [`Error::KernelPanic`] for the first
    /// panic (in launch order) among the calling thread's asynchronous launches on this
    /// device since its last `to_vec` or [`synchronize`](crate::synchronize) there, whether
    /// or not they wrote this buffer. Each panic is reported once; other threads' are not
    /// reported here.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        let mut out: Vec<T> = Vec::with_capacity(self.len);
        let bytes = self.len * T::TY.size_bytes();
        match &self.storage {
            Storage::Cuda(slice) => {
                let Device::Cuda { ordinal, .. } = self.device else {
                    unreachable!("CUDA storage is on a CUDA device")
                };
                // Waits for the launches that may write the buffer, and reports this
                // thread's unreported panics on the device.
                crate::cuda::synchronize(ordinal)?;
                let stream = crate::cuda::stream(ordinal)?;
                let host = stream
                    .clone_dtoh(slice)
                    .map_err(Error::cuda("copying a buffer from the device"))?;
                // SAFETY: `out` has capacity for `bytes`, which the device held as `len`
                // valid elements.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        host.as_ptr(),
                        out.as_mut_ptr().cast::<u8>(),
                        bytes,
                    );
                    out.set_len(self.len);
                }
            }
            Storage::Cpu(words) => unsafe {
                // SAFETY: as above, from host memory.
                std::ptr::copy_nonoverlapping(
                    words.as_ptr().cast::<u8>(),
                    out.as_mut_ptr().cast::<u8>(),
                    bytes,
                );
                out.set_len(self.len);
            },
        }
        Ok(out)
    }

    /// Waits for the buffer's device as [`to_vec`](Self::to_vec) does, reporting the same
    /// panics, without reading the buffer.
    fn wait(&self) -> Result<(), Error> {
        match self.device {
            Device::Cuda { ordinal, .. } => crate::cuda::synchronize(ordinal),
            Device::Cpu => Ok(()),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn resident(&self) -> Resident {
        let address = match &self.storage {
            Storage::Cuda(slice) => {
                let Device::Cuda { ordinal, .. } = self.device else {
                    unreachable!("CUDA storage is on a CUDA device")
                };
                let stream = crate::cuda::stream(ordinal).expect("the buffer's context exists");
                let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(slice, &stream);
                ptr
            }
            Storage::Cpu(words) => words.as_ptr() as u64,
        };
        Resident {
            device: self.device.clone(),
            len: self.len,
            address,
            split: None,
            issuer: crate::cuda::issuer(),
        }
    }

    /// Copies `data` into the buffer from element `first` on.
    fn write_at(&mut self, first: usize, data: &[T]) -> Result<(), Error> {
        let bytes = bytes_of(data);
        let offset = first * T::TY.size_bytes();
        match &mut self.storage {
            Storage::Cuda(slice) => {
                let Device::Cuda { ordinal, .. } = self.device else {
                    unreachable!("CUDA storage is on a CUDA device")
                };
                if !bytes.is_empty() {
                    let stream = crate::cuda::stream(ordinal)?;
                    let mut window = slice.slice_mut(offset..offset + bytes.len());
                    stream
                        .memcpy_htod(bytes, &mut window)
                        .map_err(Error::cuda("copying a buffer part to the device"))?;
                }
            }
            Storage::Cpu(words) => {
                // SAFETY: the buffer holds `len` elements, of which `first..first +
                // data.len()` are in range (the caller's window).
                unsafe {
                    let at = words.as_mut_ptr().cast::<u8>().add(offset);
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len())
                };
            }
        }
        Ok(())
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
            return Err(Error::InvalidLaunch(
                "a split buffer's granule must be at least 1".into(),
            ));
        }
        let devices = crate::split::share_devices();
        let (granules, count) = (data.len().div_ceil(granule), devices.len());
        let mut parts = Vec::with_capacity(count);
        let mut windows = Vec::with_capacity(count);
        for (p, device) in devices.iter().enumerate() {
            let at = |q: usize| (granules * q / count * granule).min(data.len());
            let (first, last) = (at(p), at(p + 1));
            let mut part = DeviceBuffer::zeros(device, data.len())?;
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
        let devices = crate::split::share_devices();
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

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The devices of the parts, in share order.
    pub fn devices(&self) -> Vec<Device> {
        self.parts.iter().map(|p| p.device().clone()).collect()
    }

    pub(crate) fn resident(&self) -> Resident {
        let parts: Vec<Resident> = self.parts.iter().map(DeviceBuffer::resident).collect();
        Resident {
            split: Some(std::sync::Arc::new(SplitParts {
                parts: parts
                    .iter()
                    .map(|r| (r.device.clone(), r.address))
                    .collect(),
                windows: self.windows.clone(),
                replicated: self.replicated,
            })),
            ..parts[0].clone()
        }
    }
}
