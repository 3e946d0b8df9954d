//! This machine's devices: listing them, the default one, the one a launch runs on, and
//! waiting for all of them.

use crate::{Device, Error, device::parse_selection_with};

/// Every device of this machine: CUDA GPUs first, in driver order, then AMD GPUs in
/// HIP's order, then the CPU.
/// `device = N` in a launch indexes this list.
pub fn devices() -> Vec<Device> {
    all_devices().to_vec()
}

/// [`devices()`], listed once: the drivers' device lists do not change while a program
/// runs, and a launch should not pay for a fresh copy.
fn all_devices() -> &'static [Device] {
    static ALL: std::sync::OnceLock<Vec<Device>> = std::sync::OnceLock::new();
    ALL.get_or_init(crate::backend::devices)
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
    select(None, None)
}

/// The device a launch runs on: `device = N` if given, else `OFFLOAD_DEVICE`
/// (`cpu`, `cuda:N` or `hip:N`, read once, at the first launch), else the device of its device-resident buffers, else the first GPU,
/// else the CPU.
pub fn select(index: Option<usize>, resident: Option<Device>) -> Result<Device, Error> {
    let all = all_devices();
    if let Some(index) = index {
        return all.get(index).cloned().ok_or(Error::NoSuchDevice {
            index,
            available: all.len(),
        });
    }
    if let Some(selected) = environment_selection() {
        return selected.clone();
    }
    if let Some(device) = resident {
        return Ok(device);
    }
    Ok(all.first().cloned().expect("the CPU is always listed"))
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
