//! Kernel descriptors: what `#[offload_kernel]` and `#[offload_device]` emit, and the
//! kernel they describe, linked and verified once.

use crate::{CompileCause, Error, aot::AotCode};
use offload_mir::{Body, Linked};
use std::sync::OnceLock;

/// What `#[offload_kernel]` emits for each kernel (each instance of a generic one): its
/// name, its MIR, and the device functions it calls. The MIR text is the API boundary
/// between the macro and the runtime.
#[doc(hidden)]
pub struct KernelDescriptor {
    pub name: &'static str,
    /// The module the kernel is declared in (`module_path!()`, set by [`at`](Self::at)),
    /// which names its GPU symbol; empty for descriptors made by hand.
    path: &'static str,
    pub mir: &'static str,
    pub device_functions: &'static [&'static DeviceFn],
    /// Whether the kernel's MIR may hold raw (`unsafe`) operations: only a kernel written
    /// with `unsafe` blocks, whose descriptor the macro makes with
    /// [`new_unsafe`](Self::new_unsafe).
    allows_raw: bool,
    body: OnceLock<Result<Linked, MirError>>,
    /// The code built ahead of time for the linked body, looked up once: registration
    /// happens before `main`, so the answer does not change.
    aot: OnceLock<AotCode>,
}

/// What `#[offload_device]` emits for a function kernels may call: its name, the MIR of
/// each of its instances, and the device functions it calls in turn.
#[doc(hidden)]
pub struct DeviceFn {
    pub name: &'static str,
    pub instances: &'static [&'static str],
    pub calls: &'static [&'static DeviceFn],
}

impl DeviceFn {
    /// A device function named `name` with MIR `instances`, calling `calls`.
    pub const fn new(
        name: &'static str,
        instances: &'static [&'static str],
        calls: &'static [&'static DeviceFn],
    ) -> Self {
        DeviceFn {
            name,
            instances,
            calls,
        }
    }
}

impl KernelDescriptor {
    /// A kernel named `name` with MIR `mir`, calling `device_functions`.
    pub const fn new(
        name: &'static str,
        mir: &'static str,
        device_functions: &'static [&'static DeviceFn],
    ) -> Self {
        Self::with_raw(name, mir, device_functions, false)
    }

    const fn with_raw(
        name: &'static str,
        mir: &'static str,
        device_functions: &'static [&'static DeviceFn],
        allows_raw: bool,
    ) -> Self {
        KernelDescriptor {
            name,
            path: "",
            mir,
            device_functions,
            allows_raw,
            body: OnceLock::new(),
            aot: OnceLock::new(),
        }
    }

    /// A kernel whose MIR may hold raw operations (`unsafe` shared-memory `load`/`store`,
    /// `get_unchecked`), which the safety verifier does not check in full.
    ///
    /// # Safety
    ///
    /// The raw operations must come from `unsafe` blocks the kernel's author wrote, who
    /// vouches for them (the indices of `get_unchecked` in bounds, raw shared-memory
    /// accesses free of races).
    pub const unsafe fn new_unsafe(
        name: &'static str,
        mir: &'static str,
        device_functions: &'static [&'static DeviceFn],
    ) -> Self {
        Self::with_raw(name, mir, device_functions, true)
    }

    /// The descriptor of a kernel declared in module `path` (`module_path!()`).
    pub const fn at(mut self, path: &'static str) -> Self {
        self.path = path;
        self
    }

    /// The symbol its GPU code is loaded under: its Rust path mangled
    /// ([`crate::symbol`]), else the name of its MIR body.
    pub(crate) fn symbol(&self) -> Result<String, Error> {
        match crate::symbol::mangled(self.path, self.name) {
            Some(symbol) => Ok(symbol),
            None => Ok(self.body()?.name.clone()),
        }
    }

    /// The code built ahead of time for this kernel as linked here.
    pub(crate) fn aot(&self) -> Result<&AotCode, Error> {
        let body = self.body()?;
        Ok(self
            .aot
            .get_or_init(|| AotCode::find(&offload_mir::code_key(body.body()))))
    }

    /// The kernel's MIR linked with its device functions and verified safe
    /// ([`offload_mir::link`]), once.
    pub fn body(&self) -> Result<&Linked, Error> {
        let linked = self.body.get_or_init(|| self.link());
        linked
            .as_ref()
            .map_err(|e| Error::compile(self.name, CompileCause::Mir(e.clone())))
    }

    fn link(&self) -> Result<Linked, MirError> {
        let kernel = offload_mir::parse(self.mir).map_err(MirError::KernelMir)?;
        // Raw operations escape parts of the safety verifier: they are taken only from a
        // kernel whose author wrote `unsafe` (see `new_unsafe`), never from device
        // functions, which have no raw operations to write.
        let has_raw = |b: &Body| {
            b.blocks
                .iter()
                .any(|bb| bb.statements.iter().any(|s| s.raw))
        };
        if has_raw(&kernel) && !self.allows_raw {
            return Err(MirError::UndeclaredRaw);
        }
        // Every device function reachable from the kernel, each once.
        let mut reachable: Vec<&'static DeviceFn> = Vec::new();
        let mut stack: Vec<&'static DeviceFn> = self.device_functions.to_vec();
        while let Some(f) = stack.pop() {
            if !reachable.iter().any(|r| std::ptr::eq(*r, f)) {
                reachable.push(f);
                stack.extend(f.calls);
            }
        }
        let mut bodies: Vec<Body> = Vec::new();
        for f in &reachable {
            for mir in f.instances {
                let body = offload_mir::parse(mir).map_err(|error| MirError::DeviceMir {
                    function: f.name,
                    error,
                })?;
                if has_raw(&body) {
                    return Err(MirError::RawInDeviceFunction(f.name));
                }
                bodies.push(body);
            }
        }
        let device: Vec<&Body> = bodies.iter().collect();
        Ok(offload_mir::link(&kernel, &device)?)
    }
}

/// Why a kernel's descriptor does not give a linked, verified body
/// ([`CompileCause::Mir`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MirError {
    /// The kernel's embedded MIR does not parse.
    #[error("embedded MIR does not parse: {0}")]
    KernelMir(offload_mir::ParseError),
    /// A device function's MIR does not parse.
    #[error("MIR of `{function}` does not parse: {error}")]
    DeviceMir {
        /// The device function.
        function: &'static str,
        /// Where and why its MIR does not parse.
        error: offload_mir::ParseError,
    },
    /// Raw operations in a kernel whose descriptor says it has no `unsafe` blocks.
    #[error(
        "the kernel's MIR has raw (`unsafe`) operations, but its descriptor was not made for a kernel with `unsafe` blocks"
    )]
    UndeclaredRaw,
    /// Raw operations in a device function (named), which may have none.
    #[error(
        "the MIR of device function `{0}` has raw (`unsafe`) operations, which device functions cannot have"
    )]
    RawInDeviceFunction(&'static str),
    /// Linking or the safety verifier refused the body.
    #[error(transparent)]
    Link(#[from] offload_mir::LinkError),
}
