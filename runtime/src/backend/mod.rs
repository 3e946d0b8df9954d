//! The backend seam: what the runtime needs of a device, and the devices that provide it.
//! Everything above this module reaches a device only through [`Backend`] and
//! [`Memory`](crate::memory::Memory); the CUDA, HIP (AMD) and CPU backends sit behind it.

mod cpu;
mod cuda;
mod hip;

use crate::{Device, Error, memory::Memory, plan::LaunchPlan};

/// One device's backend.
pub(crate) trait Backend {
    /// Runs a checked launch: copies host data in, runs the kernel, and copies regions
    /// back unless a thread panicked. A launch that writes only device-resident data may
    /// return before the kernel has finished; its panic then surfaces at the issuing
    /// thread's next synchronisation of the device.
    fn launch(&self, plan: LaunchPlan<'_, '_>) -> Result<(), Error>;
    /// Waits for every launch on the device, and reports the first unreported panic of
    /// the calling thread's launches there.
    fn synchronize(&self) -> Result<(), Error>;
    /// `bytes` of zeroed device memory; more than the device can hold is
    /// [`Error::OutOfMemory`].
    fn allocate_zeroed(&self, bytes: u128) -> Result<Box<dyn Memory>, Error>;
    /// Device memory holding a copy of `data`.
    fn upload(&self, data: &[u8]) -> Result<Box<dyn Memory>, Error>;
}

/// The backend of `device`.
pub(crate) fn of(device: &Device) -> Box<dyn Backend> {
    match device {
        Device::Cuda { ordinal, .. } => Box::new(cuda::Cuda {
            ordinal: *ordinal,
            device: device.clone(),
        }),
        Device::Hip { ordinal, .. } => Box::new(hip::HipDevice {
            ordinal: *ordinal,
            device: device.clone(),
        }),
        Device::Cpu => Box::new(cpu::Cpu),
    }
}

/// Every device of every backend: CUDA GPUs first, in driver order, then AMD GPUs in
/// HIP's order, then the CPU.
pub(crate) fn devices() -> Vec<Device> {
    let mut all = cuda::devices();
    all.extend(hip::devices());
    all.push(Device::Cpu);
    all
}

/// Why there are no AMD GPUs, when the HIP runtime is not there.
pub(crate) fn why_no_hip() -> Option<String> {
    hip::why_absent()
}
