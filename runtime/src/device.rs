//! Devices: what kernels can run on, and how an `OFFLOAD_DEVICE`-style selection names
//! one.

use crate::Error;
use std::fmt;

/// A device kernels can run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// An NVIDIA GPU, through the CUDA driver.
    Cuda {
        /// The CUDA driver's ordinal for the GPU: `N` in `OFFLOAD_DEVICE=cuda:N`.
        ordinal: usize,
        /// The GPU's name, as the driver reports it.
        name: String,
        /// The compute capability as (major, minor), e.g. `(9, 0)`: kernels are compiled
        /// for `sm_90`.
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
            Device::Cpu => write!(f, "cpu ({} threads)", host_threads()),
        }
    }
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

/// How many host threads the CPU backend runs a launch on.
pub(crate) fn host_threads() -> usize {
    // Asked once: on Linux the answer reads the cgroup's CPU quota from files, tens of
    // microseconds that every CPU launch would pay.
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
