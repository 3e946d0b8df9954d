//! The one error type of the runtime.

/// Why a launch failed. Every failure of a launch is one of these; none is a crash.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A thread of the kernel panicked (failed bounds check, division by zero, `panic!`).
    /// The first panic of the launch is reported; region data was not copied back.
    #[error("kernel `{kernel}` panicked at {file}:{line}:{column}: {message}")]
    KernelPanic {
        kernel: String,
        file: String,
        line: u32,
        column: u32,
        message: String,
    },
    /// Launch geometry or arguments that the kernel cannot run with safely.
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
    /// `device = N` named a device that does not exist.
    #[error("there is no device {index}; offload::devices() lists {available}")]
    NoSuchDevice { index: usize, available: usize },
    /// `OFFLOAD_DEVICE` could not be understood or names a missing device.
    #[error("OFFLOAD_DEVICE=`{value}`: {reason}")]
    DeviceSelection { value: String, reason: String },
    /// A CUDA driver call failed.
    #[error("CUDA driver error while {during}: {message}")]
    Cuda {
        during: &'static str,
        message: String,
    },
    /// The kernel could not be compiled for the chosen device.
    #[error("kernel `{kernel}` could not be compiled: {message}")]
    Compile { kernel: String, message: String },
    /// A device (or the host, for the CPU backend) could not allocate the memory asked for.
    #[error("out of memory on {device}: {bytes} bytes could not be allocated")]
    OutOfMemory { device: String, bytes: u128 },
}
