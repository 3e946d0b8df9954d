//! Compiling kernels from their embedded MIR, once per kernel and target.

use crate::{Error, kernel::KernelDescriptor};
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

/// One compiled kernel, or the compile in progress: its own lock, so a slow compile of
/// one kernel never holds up the first launch of another.
type Cell<T> = Arc<Mutex<Option<Arc<T>>>>;

/// Compiled kernels by kernel and target. The map's lock is held only to find a
/// kernel's cell; the cell's lock is held while it compiles, so each kernel and target
/// is compiled at most once at a time and nothing else waits for it. A failed compile is
/// not cached.
#[doc(hidden)]
pub struct CompileCache<T> {
    cells: OnceLock<Mutex<HashMap<Key, Cell<T>>>>,
}

impl<T> CompileCache<T> {
    pub const fn new() -> Self {
        CompileCache {
            cells: OnceLock::new(),
        }
    }

    /// The value for `key`, compiled with `make` on a miss.
    pub fn get_or_compile(
        &self,
        key: (usize, String),
        make: impl FnOnce() -> Result<T, Error>,
    ) -> Result<Arc<T>, Error> {
        let cell = self
            .cells
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(key)
            .or_default()
            .clone();
        let mut slot = cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(hit) = &*slot {
            return Ok(hit.clone());
        }
        let value = Arc::new(make()?);
        *slot = Some(value.clone());
        Ok(value)
    }
}

impl<T> Default for CompileCache<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// PTX for a kernel and chip (`sm_90`).
pub(crate) fn ptx(descriptor: &'static KernelDescriptor, chip: &str) -> Result<Arc<String>, Error> {
    static CACHE: CompileCache<String> = CompileCache::new();
    CACHE.get_or_compile(key(descriptor, chip), || jit_ptx(descriptor, chip))
}

/// The kernel compiled for the CPU backend.
#[cfg(feature = "jit")]
pub(crate) fn cpu(
    descriptor: &'static KernelDescriptor,
) -> Result<Arc<offload_lowering::CpuKernel>, Error> {
    static CACHE: CompileCache<offload_lowering::CpuKernel> = CompileCache::new();
    CACHE.get_or_compile(key(descriptor, "cpu"), || {
        let body = descriptor.body()?;
        offload_lowering::compile_cpu(body).map_err(|e| compile_error(descriptor, e))
    })
}

/// PTX compiled in this process or an earlier one ([`crate::disk_cache`]), else now.
#[cfg(feature = "jit")]
fn jit_ptx(descriptor: &'static KernelDescriptor, chip: &str) -> Result<String, Error> {
    let body = descriptor.body()?;
    let target = offload_lowering::GpuTarget {
        chip: chip.to_string(),
        ..Default::default()
    };
    let disk = crate::disk_cache::DiskCache::from_env();
    // Everything the PTX depends on: the kernel as linked, the target, and the compiler.
    let key = format!(
        "ptx\n{}\n{}\n{}\n{}\n{:?}\n{}",
        env!("CARGO_PKG_VERSION"),
        compiler_build(),
        target.chip,
        target.features,
        target.libdevice,
        body.body()
    );
    if let Some(ptx) = disk.as_ref().and_then(|d| d.get(&key))
        && let Ok(ptx) = String::from_utf8(ptx)
    {
        tracing::debug!(kernel = descriptor.name, chip, "PTX from the disk cache");
        return Ok(ptx);
    }
    let kernel =
        offload_lowering::compile_ptx(body, &target).map_err(|e| compile_error(descriptor, e))?;
    if let Some(disk) = disk {
        disk.put(&key, kernel.ptx.as_bytes());
    }
    Ok(kernel.ptx)
}

/// Stands for the build of the compiler linked into this program: the executable's size
/// and modification time. A rebuild, which may change the lowering, makes new cache keys;
/// runs of one build share them.
#[cfg(feature = "jit")]
fn compiler_build() -> String {
    std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {modified}", m.len())
        })
        .unwrap_or_default()
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
