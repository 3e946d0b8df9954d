//! Devices and how a launch picks one.

use crate::Error;
use std::fmt;

/// A device kernels can run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// An NVIDIA GPU, through the CUDA driver.
    Cuda {
        ordinal: usize,
        name: String,
        compute_capability: (u32, u32),
    },
    /// The CPU backend: the lowered kernel compiled for the host and run on all cores.
    Cpu,
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cuda {
                ordinal,
                name,
                compute_capability: (major, minor),
            } => write!(f, "cuda:{ordinal} ({name}, sm_{major}{minor})"),
            Device::Cpu => write!(f, "cpu ({} threads)", crate::cpu::host_threads()),
        }
    }
}

/// Every device of this machine: CUDA GPUs first, in driver order, then the CPU.
/// `device = N` in a launch indexes this list.
pub fn devices() -> Vec<Device> {
    let mut all = crate::cuda::devices();
    all.push(Device::Cpu);
    all
}

/// The device a launch without `device = N` and without device buffers runs on:
/// `OFFLOAD_DEVICE` if set, else the first GPU, else the CPU. The natural place for a
/// program's `DeviceBuffer`s.
pub fn default_device() -> Result<Device, Error> {
    select(None, None)
}

/// The device a launch runs on: `device = N` if given, else `OFFLOAD_DEVICE`
/// (`cpu` or `cuda:N`), else the device of its device-resident buffers, else the first GPU,
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
        return parse_selection(&value, &all);
    }
    if let Some(device) = resident {
        return Ok(device);
    }
    Ok(all.into_iter().next().expect("the CPU is always listed"))
}

/// Reads an `OFFLOAD_DEVICE`-style selection (`cpu`, `cuda`, `cuda:N`) against a device
/// list.
pub fn parse_selection(value: &str, all: &[Device]) -> Result<Device, Error> {
    let fail = |reason: String| Error::DeviceSelection {
        value: value.to_string(),
        reason,
    };
    let spec = value.trim();
    if spec == "cpu" {
        return Ok(Device::Cpu);
    }
    let Some(n) = spec
        .strip_prefix("cuda:")
        .or(if spec == "cuda" { Some("0") } else { None })
    else {
        return Err(fail("expected `cpu` or `cuda:N`".into()));
    };
    let n: usize = n
        .parse()
        .map_err(|_| fail("expected `cuda:N` with N a number".into()))?;
    all.iter()
        .find(|d| matches!(d, Device::Cuda { ordinal, .. } if *ordinal == n))
        .cloned()
        .ok_or_else(|| {
            let gpus = all
                .iter()
                .filter(|d| matches!(d, Device::Cuda { .. }))
                .count();
            fail(format!("no CUDA device {n}; this machine has {gpus}"))
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
    for device in devices() {
        if let Device::Cuda { ordinal, .. } = device
            && let Err(e) = crate::cuda::synchronize(ordinal)
        {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
