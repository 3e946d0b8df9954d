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
    /// An AMD GPU, through the HIP runtime.
    Hip {
        /// HIP's ordinal for the GPU: `N` in `OFFLOAD_DEVICE=hip:N`.
        ordinal: usize,
        /// The GPU's name, as HIP reports it.
        name: String,
        /// The chip kernels are compiled for, e.g. `gfx942`.
        arch: String,
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
            Device::Hip {
                ordinal,
                name,
                arch,
            } => write!(f, "hip:{ordinal} ({name}, {arch})"),
            Device::Cpu => write!(f, "cpu ({} threads)", host_threads()),
        }
    }
}

/// Reads an `OFFLOAD_DEVICE`-style selection (`cpu`, `cuda`, `cuda:N`, `hip`, `hip:N`)
/// against a device list.
pub fn parse_selection(value: &str, all: &[Device]) -> Result<Device, Error> {
    parse_selection_with(value, all, None)
}

/// [`parse_selection`], where `why_no_hip` says why there is no HIP device when there
/// is none (the runtime's library was not found, say).
pub(crate) fn parse_selection_with(
    value: &str,
    all: &[Device],
    why_no_hip: Option<&str>,
) -> Result<Device, Error> {
    let fail = |reason: String| Error::DeviceSelection {
        value: value.to_string(),
        reason,
    };
    let spec = value.trim();
    if spec == "cpu" {
        return Ok(Device::Cpu);
    }
    let (kind, n) = match spec.split_once(':') {
        Some((kind, n)) => (kind, n),
        None => (spec, "0"),
    };
    if kind != "cuda" && kind != "hip" {
        return Err(fail("expected `cpu`, `cuda:N` or `hip:N`".into()));
    }
    let n: usize = n
        .parse()
        .map_err(|_| fail(format!("expected `{kind}:N` with N a number")))?;
    let of_kind = |d: &Device| match d {
        Device::Cuda { ordinal, .. } if kind == "cuda" => Some(*ordinal),
        Device::Hip { ordinal, .. } if kind == "hip" => Some(*ordinal),
        _ => None,
    };
    if let Some(device) = all.iter().find(|d| of_kind(d) == Some(n)) {
        return Ok(device.clone());
    }
    let gpus = all.iter().filter(|d| of_kind(d).is_some()).count();
    let (api, why) = match (kind, why_no_hip) {
        ("hip", Some(why)) if gpus == 0 => ("HIP", format!(": {why}")),
        ("hip", _) => ("HIP", String::new()),
        _ => ("CUDA", String::new()),
    };
    Err(fail(format!(
        "no {api} device {n}; this machine has {gpus}{why}"
    )))
}

/// How many host threads the CPU backend runs a launch on: those of rayon's global pool
/// (the machine's cores, or `RAYON_NUM_THREADS`).
pub(crate) fn host_threads() -> usize {
    rayon::current_num_threads()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Vec<Device> {
        vec![
            Device::Cuda {
                ordinal: 0,
                name: "H200".into(),
                compute_capability: (9, 0),
            },
            Device::Hip {
                ordinal: 0,
                name: "MI300X".into(),
                arch: "gfx942".into(),
            },
            Device::Cpu,
        ]
    }

    #[test]
    fn selections_name_cuda_hip_and_cpu_devices() {
        let all = machine();
        assert_eq!(parse_selection("cuda:0", &all).unwrap(), all[0]);
        assert_eq!(parse_selection("hip", &all).unwrap(), all[1]);
        assert_eq!(parse_selection("hip:0", &all).unwrap(), all[1]);
        assert_eq!(parse_selection("cpu", &all).unwrap(), Device::Cpu);
        assert_eq!(all[1].to_string(), "hip:0 (MI300X, gfx942)");
        assert_eq!(
            parse_selection("hip:1", &all).unwrap_err().to_string(),
            "OFFLOAD_DEVICE=`hip:1`: no HIP device 1; this machine has 1"
        );
        assert_eq!(
            parse_selection("rocm:0", &all).unwrap_err().to_string(),
            "OFFLOAD_DEVICE=`rocm:0`: expected `cpu`, `cuda:N` or `hip:N`"
        );
    }

    #[test]
    fn without_hip_the_selection_says_why() {
        let all = [Device::Cpu];
        assert_eq!(
            parse_selection_with(
                "hip:0",
                &all,
                Some("the HIP runtime was not found (tried x)")
            )
            .unwrap_err()
            .to_string(),
            "OFFLOAD_DEVICE=`hip:0`: no HIP device 0; this machine has 0: the HIP runtime was not found (tried x)"
        );
    }
}
