//! The one error type of the runtime.

/// Why a launch failed. Every failure of a launch is one of these; none is a crash.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A thread of the kernel panicked (failed bounds check, division by zero, `panic!`).
    /// The first panic of the launch is reported; region data was not copied back.
    #[error("kernel `{kernel}` panicked at {file}:{line}:{column}: {message}")]
    KernelPanic {
        /// The name of the kernel that panicked.
        kernel: String,
        /// The kernel's source file, as the compiler named it (as `file!()` does).
        file: String,
        /// The panic's line in `file`, from 1; 0 when the site is unknown. A panic inside
        /// an `#[offload_device]` function is reported at its call in the kernel.
        line: u32,
        /// The panic's column in `line`, from 1; 0 when the site is unknown.
        column: u32,
        /// The panic message, as Rust prints it (`index out of bounds: the len is ...`,
        /// `attempt to divide by zero`, or the `panic!` text).
        message: String,
    },
    /// Launch geometry or arguments that the kernel cannot run with safely.
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
    /// A device buffer asked to do what does not fit it: copying data of another length
    /// in, or splitting with a granule of 0.
    #[error("invalid buffer operation: {0}")]
    InvalidBuffer(String),
    /// An MPI operation on device data that cannot run as asked: a rank outside the
    /// communicator, or a message of another length than the buffer it is received into
    /// (which is then left as it was).
    #[error("MPI: {0}")]
    Mpi(String),
    /// An NCCL collective that cannot run: no NCCL library, a device that is not an
    /// NVIDIA GPU, buffers of lengths that do not fit, or a failed NCCL call.
    #[error("NCCL: {0}")]
    Nccl(String),
    /// `device = N` named a device that does not exist.
    #[error("there is no device {index}; offload::devices() lists {available}")]
    NoSuchDevice {
        /// The index asked for.
        index: usize,
        /// How many devices [`devices()`](crate::devices) lists.
        available: usize,
    },
    /// `OFFLOAD_DEVICE` could not be understood or names a missing device.
    #[error("OFFLOAD_DEVICE=`{value}`: {reason}")]
    DeviceSelection {
        /// The selection as given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error while {during}: {message}")]
    Cuda {
        /// What the runtime was doing, e.g. `launching the kernel`.
        during: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A HIP runtime call failed, or the runtime could not be loaded.
    #[error("HIP error while {during}: {message}")]
    Hip {
        /// What the runtime was doing, e.g. `launching the kernel`.
        during: &'static str,
        /// HIP's error.
        message: String,
    },
    /// The kernel could not be compiled for the chosen device.
    #[error("kernel `{kernel}` could not be compiled: {message}")]
    Compile {
        /// The name of the kernel.
        kernel: String,
        /// Why, in words: `cause`'s text.
        message: String,
        /// Why: its MIR did not link or pass the safety verifier, lowering it for the
        /// device failed, or the program has no code for the device and no JIT.
        #[source]
        cause: Box<CompileCause>,
    },
    /// A device (or the host, for the CPU backend) could not allocate the memory asked for.
    #[error("out of memory on {device}: {bytes} bytes could not be allocated")]
    OutOfMemory {
        /// The device, as text (`cuda:N`, or the CPU backend's name).
        device: String,
        /// The size of the allocation that failed, in bytes.
        bytes: u128,
    },
}

/// Why a kernel could not be compiled ([`Error::Compile`]'s source).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileCause {
    /// Its MIR did not parse, link, or pass the safety verifier: each violation is listed
    /// with its MIR location and Rust span.
    #[error(transparent)]
    Mir(#[from] crate::kernel::MirError),
    /// Lowering it for the device failed: the lowering's error
    /// ([`LowerFailure::error`]).
    #[error(transparent)]
    Lower(LowerFailure),
    /// The program has no code for the device: none was built ahead of time for it, and
    /// the `jit` feature, which would compile it, is off.
    #[error(
        "no code for {target}: {built}, and this program has no JIT (the `jit` feature is off)"
    )]
    NoCode {
        /// The target, as ahead-of-time code names it (`cpu`, `sm_90`, `gfx942`).
        target: String,
        /// What was built ahead of time instead.
        built: String,
    },
    /// The generic kernel's body does not compile for this instance's types (an `f16`
    /// or `bf16` one, which a kernel written for `f32` and `f64` need not support): why,
    /// as the translator said it at compile time.
    #[error("the kernel does not compile for these types: {0}")]
    NotForTypes(&'static str),
}

impl Error {
    /// [`Error::Compile`] for `kernel`, its message `cause`'s text.
    pub(crate) fn compile(kernel: &str, cause: CompileCause) -> Error {
        Error::Compile {
            kernel: kernel.to_string(),
            message: cause.to_string(),
            cause: Box::new(cause),
        }
    }
}

/// The lowering's error behind a [`CompileCause::Lower`]: an
/// `offload_lowering::LowerError` where the `jit` feature is on, reached with
/// [`error`](Self::error) (to downcast) and shared, so that [`Error`] stays `Clone`.
#[derive(Clone)]
pub struct LowerFailure(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl LowerFailure {
    #[cfg(feature = "jit")]
    pub(crate) fn new(error: impl std::error::Error + Send + Sync + 'static) -> LowerFailure {
        LowerFailure(std::sync::Arc::new(error))
    }

    /// The lowering's own error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Debug for LowerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for LowerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Two failures are equal when they say the same.
impl PartialEq for LowerFailure {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl std::error::Error for LowerFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
