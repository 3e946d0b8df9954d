//! This machine's devices: listing them, the default one, the one a launch runs on, and
//! waiting for all of them.

use crate::{Device, Error, device::parse_selection_with};

/// Every device of this machine: CUDA GPUs first, in driver order, then AMD GPUs in
/// HIP's order, then the CPU.
/// `device = N` in a launch indexes this list.
pub fn devices() -> Vec<Device> {
    all_devices().to_vec()
}

fn all_devices() -> &'static [Device] {
    crate::backend::devices()
}

/// What `OFFLOAD_DEVICE` selects, read at the first launch (as CUDA reads
/// `CUDA_VISIBLE_DEVICES` once): `None` when it is not set.
fn environment_selection() -> &'static Option<Result<Device, Error>> {
    static SELECTED: std::sync::OnceLock<Option<Result<Device, Error>>> =
        std::sync::OnceLock::new();
    SELECTED.get_or_init(|| {
        let value = std::env::var("OFFLOAD_DEVICE").ok()?;
        Some(parse_selection_with(
            &value,
            all_devices(),
            crate::backend::why_no_hip().as_deref(),
        ))
    })
}

/// The device a launch without `device = N` and without device buffers runs on:
/// `OFFLOAD_DEVICE` if set, else the first GPU, else the CPU. The natural place for a
/// program's `DeviceBuffer`s.
pub fn default_device() -> Result<Device, Error> {
    select(None, None).cloned()
}

/// The device a launch runs on: `device = N` if given, else `OFFLOAD_DEVICE`
/// (`cpu`, `cuda:N` or `hip:N`, read once, at the first launch), else the device of its device-resident buffers, else the first GPU,
/// else the CPU.
pub fn select(
    index: Option<usize>,
    resident: Option<&'static Device>,
) -> Result<&'static Device, Error> {
    let all = all_devices();
    if let Some(index) = index {
        return all.get(index).ok_or(Error::NoSuchDevice {
            index,
            available: all.len(),
        });
    }
    match environment_selection() {
        Some(Ok(selected)) => return Ok(selected),
        Some(Err(e)) => return Err(e.clone()),
        None => {}
    }
    if let Some(device) = resident {
        return Ok(device);
    }
    Ok(all.first().expect("the CPU is always listed"))
}

/// This machine's entry for `device`: what buffers keep, so that a launch compares and
/// finds devices without copying one. A device this machine lacks (made by hand, or on
/// another machine) is [`Error::InvalidBuffer`].
pub(crate) fn registered(device: &Device) -> Result<&'static Device, Error> {
    all_devices().iter().find(|d| *d == device).ok_or_else(|| {
        Error::InvalidBuffer(format!(
            "{device} is not a device of this machine (see `offload::devices()`)"
        ))
    })
}

/// Waits for every launch on every device, and reports the first panic of the calling
/// thread's asynchronous launches (those that write device buffers and no host data) that
/// no earlier synchronisation reported: devices in [`devices()`] order, launches in the
/// order they were made. Each panic is reported once, and only to the thread that issued
/// its launch; other threads' launches are waited for but not reported here. Reading a
/// buffer back (`DeviceBuffer::to_vec`) does the same for its device.
pub fn synchronize() -> Result<(), Error> {
    let mut first = None;
    for device in all_devices() {
        if let Err(e) = crate::backend::of(device).and_then(|b| b.synchronize()) {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
