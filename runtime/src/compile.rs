//! Compiling kernels from their embedded MIR, once per kernel and target.

use crate::{Error, launch::KernelDescriptor};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

/// A cache key: the descriptor's address (one per kernel in the program) and a target.
type Key = (usize, String);

fn key(descriptor: &'static KernelDescriptor, target: &str) -> Key {
    (
        descriptor as *const KernelDescriptor as usize,
        target.to_string(),
    )
}

/// Looks `key` up in `cache`, compiling with `make` on a miss. Compilation holds the
/// cache lock: MLIR work is serialised, which also keeps at most one compile of a kernel.
fn cached<T>(
    cache: &Mutex<HashMap<Key, Arc<T>>>,
    key: Key,
    make: impl FnOnce() -> Result<T, Error>,
) -> Result<Arc<T>, Error> {
    let mut map = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(hit) = map.get(&key) {
        return Ok(hit.clone());
    }
    let value = Arc::new(make()?);
    map.insert(key, value.clone());
    Ok(value)
}

/// PTX for a kernel and chip (`sm_90`).
pub(crate) fn ptx(descriptor: &'static KernelDescriptor, chip: &str) -> Result<Arc<String>, Error> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    cached(cache, key(descriptor, chip), || jit_ptx(descriptor, chip))
}

/// The kernel compiled for the CPU backend.
#[cfg(feature = "jit")]
pub(crate) fn cpu(
    descriptor: &'static KernelDescriptor,
) -> Result<Arc<offload_lowering::CpuKernel>, Error> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<offload_lowering::CpuKernel>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    cached(cache, key(descriptor, "cpu"), || {
        let body = descriptor.body()?;
        let valid = offload_mir::validate(body).expect("validated when parsed");
        offload_lowering::compile_cpu(valid).map_err(|e| compile_error(descriptor, e))
    })
}

#[cfg(feature = "jit")]
fn jit_ptx(descriptor: &'static KernelDescriptor, chip: &str) -> Result<String, Error> {
    let body = descriptor.body()?;
    let valid = offload_mir::validate(body).expect("validated when parsed");
    let target = offload_lowering::GpuTarget {
        chip: chip.to_string(),
        ..Default::default()
    };
    let kernel =
        offload_lowering::compile_ptx(valid, &target).map_err(|e| compile_error(descriptor, e))?;
    Ok(kernel.ptx)
}

#[cfg(not(feature = "jit"))]
fn jit_ptx(descriptor: &'static KernelDescriptor, chip: &str) -> Result<String, Error> {
    Err(Error::Compile {
        kernel: descriptor.name.to_string(),
        message: format!(
            "no {chip} code was built ahead of time and this program has no JIT (the `jit` feature is off)"
        ),
    })
}

#[cfg(feature = "jit")]
fn compile_error(descriptor: &KernelDescriptor, e: offload_lowering::LowerError) -> Error {
    Error::Compile {
        kernel: descriptor.name.to_string(),
        message: e.to_string(),
    }
}
