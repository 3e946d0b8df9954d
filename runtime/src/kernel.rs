//! Kernel descriptors: what `#[offload_kernel]` and `#[offload_device]` emit, and the
//! kernel they describe, linked and verified once.

use crate::{Error, aot::AotCode};
use offload_mir::{Body, Linked};
use std::sync::OnceLock;

/// What `#[offload_kernel]` emits for each kernel (each instance of a generic one): its
/// name, its MIR, and the device functions it calls. The MIR text is the API boundary
/// between the macro and the runtime.
#[doc(hidden)]
pub struct KernelDescriptor {
    pub name: &'static str,
    pub mir: &'static str,
    pub device_functions: &'static [&'static DeviceFn],
    body: OnceLock<Result<Linked, String>>,
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
        KernelDescriptor {
            name,
            mir,
            device_functions,
            body: OnceLock::new(),
            aot: OnceLock::new(),
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
        linked.as_ref().map_err(|message| Error::Compile {
            kernel: self.name.to_string(),
            message: message.clone(),
        })
    }

    fn link(&self) -> Result<Linked, String> {
        let kernel = offload_mir::parse(self.mir)
            .map_err(|e| format!("embedded MIR does not parse: {e}"))?;
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
                bodies.push(
                    offload_mir::parse(mir)
                        .map_err(|e| format!("MIR of `{}` does not parse: {e}", f.name))?,
                );
            }
        }
        let device: Vec<&Body> = bodies.iter().collect();
        offload_mir::link(&kernel, &device).map_err(|e| e.to_string())
    }
}
