//! A kernel's code for a target, once per kernel and target: built ahead of time
//! ([`crate::aot`]), else compiled from its embedded MIR by the JIT (the `jit` feature),
//! which keeps what it compiles in the disk cache for later runs.

use crate::{CompileCause, Error, kernel::KernelDescriptor};
use offload_mir::abi::CpuEntry;
use std::{
    collections::HashMap,
    sync::atomic::{AtomicUsize, Ordering},
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

/// Kernels compiled by this process (PTX or CPU code, not counting answers from the disk
/// cache): what a test reads to see that a second run compiles nothing.
static COMPILES: AtomicUsize = AtomicUsize::new(0);

/// How many kernels this process has compiled with its JIT.
#[doc(hidden)]
pub fn jit_compiles() -> usize {
    COMPILES.load(Ordering::Relaxed)
}

/// What a launch's PTX is compiled for besides the chip: its workgroup size, so that
/// ptxas allocates registers for the threads the launch has (`GpuTarget::block_size`),
/// and the workgroups a multiprocessor should hold (`LaunchOptions::resident_workgroups`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LaunchShape {
    pub block_size: [u32; 3],
    pub resident_workgroups: Option<u32>,
    /// The launch runs its whole grid at once (`GpuTarget::whole_grid`).
    pub whole_grid: bool,
}

/// PTX for a kernel, chip (`sm_90`) and launch shape: built ahead of time (for any
/// shape), else compiled now for this one.
pub(crate) fn ptx(
    descriptor: &'static KernelDescriptor,
    chip: &str,
    shape: LaunchShape,
) -> Result<Arc<String>, Error> {
    static CACHE: CompileCache<String> = CompileCache::new();
    CACHE.get_or_compile(
        key(descriptor, &format!("{chip} {shape:?}")),
        || match descriptor.aot()?.ptx_for(chip) {
            Some(ptx) => Ok(ptx.to_string()),
            None => jit_ptx(descriptor, chip, shape),
        },
    )
}

/// A code object for a kernel and AMD chip (`gfx942`): built ahead of time, else
/// compiled now.
pub(crate) fn code_object(
    descriptor: &'static KernelDescriptor,
    chip: &str,
) -> Result<Arc<Vec<u8>>, Error> {
    static CACHE: CompileCache<Vec<u8>> = CompileCache::new();
    CACHE.get_or_compile(key(descriptor, chip), || {
        match descriptor.aot()?.code_object_for(chip) {
            Some(code) => Ok(code.to_vec()),
            None => jit_code_object(descriptor, chip),
        }
    })
}

/// The kernel's CPU entry point: built ahead of time (for any workgroup size), else
/// compiled now for workgroups of `workgroup_size` threads, whose thread loops then have
/// constant trip counts.
pub(crate) fn cpu(
    descriptor: &'static KernelDescriptor,
    workgroup_size: [u32; 3],
) -> Result<CpuEntry, Error> {
    if let Some(entry) = descriptor.aot()?.cpu() {
        return Ok(entry);
    }
    // A thread's recent kernels are found without formatting the key or locking.
    type Recent = crate::recent::Recent<(usize, [u32; 3]), CpuEntry>;
    thread_local! {
        static RECENT: std::cell::RefCell<Recent> = const { std::cell::RefCell::new(Recent::new()) };
    }
    let fast = (
        descriptor as *const KernelDescriptor as usize,
        workgroup_size,
    );
    if let Ok(Some(entry)) = RECENT.try_with(|recent| recent.borrow().get(&fast)) {
        return Ok(entry);
    }
    static CACHE: CompileCache<CpuEntry> = CompileCache::new();
    let [x, y, z] = workgroup_size;
    let entry = *CACHE.get_or_compile(key(descriptor, &format!("cpu {x}x{y}x{z}")), || {
        jit_cpu(descriptor, workgroup_size)
    })?;
    let _ = RECENT.try_with(|recent| recent.borrow_mut().put(fast, entry));
    Ok(entry)
}

/// The CPU code compiled in this process or an earlier one ([`crate::disk_cache`]), else
/// now, linked into the process.
#[cfg(feature = "jit")]
fn jit_cpu(
    descriptor: &'static KernelDescriptor,
    workgroup_size: [u32; 3],
) -> Result<CpuEntry, Error> {
    use offload_lowering::{CpuKernel, CpuObject, CpuTarget};
    let target = CpuTarget {
        workgroup_size: Some(workgroup_size),
        ..CpuTarget::host()
    };
    let bytes = disk_cached(descriptor, "cpu", &target, |body| {
        offload_lowering::compile_cpu_object(body, &target).map(|object| object.bytes)
    })?;
    let symbol = offload_lowering::cpu_symbol(descriptor.body()?, &target);
    let kernel =
        CpuKernel::load(&CpuObject { symbol, bytes }).map_err(|e| compile_error(descriptor, e))?;
    Ok(kernel.entry())
}

/// PTX compiled in this process or an earlier one ([`crate::disk_cache`]), else now.
#[cfg(feature = "jit")]
fn jit_ptx(
    descriptor: &'static KernelDescriptor,
    chip: &str,
    shape: LaunchShape,
) -> Result<String, Error> {
    let target = offload_lowering::GpuTarget {
        chip: chip.to_string(),
        block_size: Some(shape.block_size),
        resident_workgroups: shape.resident_workgroups,
        whole_grid: shape.whole_grid,
        ..Default::default()
    };
    let bytes = disk_cached(descriptor, "ptx", &target, |body| {
        offload_lowering::compile_ptx(body, &target).map(|kernel| kernel.ptx.into_bytes())
    })?;
    // The disk cache checks what it returns against its hash, so this is what was stored.
    String::from_utf8(bytes).map_err(|_| {
        Error::compile(
            descriptor.name,
            CompileCause::Lower(crate::LowerFailure::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the cached PTX is not UTF-8",
            ))),
        )
    })
}

/// A code object compiled in this process or an earlier one ([`crate::disk_cache`]),
/// else now.
#[cfg(feature = "jit")]
fn jit_code_object(descriptor: &'static KernelDescriptor, chip: &str) -> Result<Vec<u8>, Error> {
    let target =
        offload_lowering::AmdTarget::new(chip).map_err(|e| compile_error(descriptor, e))?;
    disk_cached(descriptor, "hsaco", &target, |body| {
        offload_lowering::compile_amd(std::slice::from_ref(body), &target, false)
    })
}

/// A kernel's code of one `kind` for `target`: from the disk cache ([`crate::disk_cache`])
/// when an earlier process compiled it, else compiled now and stored there. The key is
/// everything the code depends on: the kind, the target, the kernel as linked, and the
/// compiler's build.
#[cfg(feature = "jit")]
fn disk_cached(
    descriptor: &'static KernelDescriptor,
    kind: &str,
    target: &impl std::fmt::Debug,
    compile: impl FnOnce(&offload_mir::Linked) -> Result<Vec<u8>, offload_lowering::LowerError>,
) -> Result<Vec<u8>, Error> {
    let body = descriptor.body()?;
    let key = format!(
        "{kind}\n{}\n{}\n{target:?}\n{}",
        env!("CARGO_PKG_VERSION"),
        compiler_build(),
        body.body()
    );
    let disk = crate::disk_cache::DiskCache::from_env();
    if let Some(code) = disk.as_ref().and_then(|d| d.get(&key)) {
        tracing::debug!(kernel = descriptor.name, kind, "code from the disk cache");
        return Ok(code);
    }
    COMPILES.fetch_add(1, Ordering::Relaxed);
    let code = compile(body).map_err(|e| compile_error(descriptor, e))?;
    if let Some(disk) = disk {
        disk.put(&key, &code);
    }
    Ok(code)
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
fn jit_ptx(
    descriptor: &'static KernelDescriptor,
    chip: &str,
    _shape: LaunchShape,
) -> Result<String, Error> {
    Err(no_code(descriptor, chip))
}

#[cfg(not(feature = "jit"))]
fn jit_code_object(descriptor: &'static KernelDescriptor, chip: &str) -> Result<Vec<u8>, Error> {
    Err(no_code(descriptor, chip))
}

#[cfg(not(feature = "jit"))]
fn jit_cpu(descriptor: &'static KernelDescriptor, _size: [u32; 3]) -> Result<CpuEntry, Error> {
    Err(no_code(descriptor, "cpu"))
}

/// A launch with no code for `target` and no JIT to compile it.
#[cfg(not(feature = "jit"))]
fn no_code(descriptor: &'static KernelDescriptor, target: &str) -> Error {
    let built = match descriptor.aot().map(|aot| aot.targets()) {
        Ok(targets) if !targets.is_empty() => format!(
            "the kernel was built ahead of time for {} only",
            targets.join(", ")
        ),
        _ => "no code built ahead of time matches the kernel (see `offload-build`)".to_string(),
    };
    let target = target.to_string();
    Error::compile(descriptor.name, CompileCause::NoCode { target, built })
}

#[cfg(feature = "jit")]
fn compile_error(descriptor: &KernelDescriptor, e: offload_lowering::LowerError) -> Error {
    Error::compile(
        descriptor.name,
        CompileCause::Lower(crate::LowerFailure::new(e)),
    )
}
