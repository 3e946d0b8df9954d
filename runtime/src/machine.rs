//! This machine's devices: listing them, the default one, the one a launch runs on, and
//! waiting for all of them.

use crate::{Device, Error, device::parse_selection_with};

/// Every device of this machine: CUDA GPUs first, in driver order, then AMD GPUs in
/// HIP's order, then the CPU.
/// `device = N` in a launch indexes this list.
pub fn devices() -> Vec<Device> {
    crate::backend::devices()
}

/// The device a launch without `device = N` and without device buffers runs on:
/// `OFFLOAD_DEVICE` if set, else the first GPU, else the CPU. The natural place for a
/// program's `DeviceBuffer`s.
pub fn default_device() -> Result<Device, Error> {
    select(None, None)
}

/// The device a launch runs on: `device = N` if given, else `OFFLOAD_DEVICE`
/// (`cpu`, `cuda:N` or `hip:N`), else the device of its device-resident buffers, else the first GPU,
/// else the CPU.
pub fn select(index: Option<usize>, resident: Option<Device>) -> Result<Device, Error> {
    let all = devices();
    if let Some(index) = index {
        return all.get(index).cloned().ok_or(Error::NoSuchDevice {
            index,
            available: all.len(),
        });
    }
    if let Ok(value) = std::env::var("OFFLOAD_DEVICE") {
        return parse_selection_with(&value, &all, crate::backend::why_no_hip().as_deref());
    }
    if let Some(device) = resident {
        return Ok(device);
    }
    Ok(all.into_iter().next().expect("the CPU is always listed"))
}

/// Waits for every launch on every device, and reports the first panic of the calling
/// thread's asynchronous launches (those that write device buffers and no host data) that
/// no earlier synchronisation reported: devices in [`devices()`] order, launches in the
/// order they were made. Each panic is reported once, and only to the thread that issued
/// its launch; other threads' launches are waited for but not reported here. Reading a
/// buffer back (`DeviceBuffer::to_vec`) does the same for its device.
pub fn synchronize() -> Result<(), Error> {
    let mut first = None;
    for device in devices() {
        if let Err(e) = crate::backend::of(&device).synchronize() {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
