//! The CPU backend's JIT: compiles the LLVM-dialect module of [`Stage::Cpu`] to machine
//! code with MLIR's execution engine and hands out the kernel's entry point.
//!
//! [`Stage::Cpu`]: crate::Stage::Cpu

use crate::LowerError;
use melior::ir::Module;
use mlir_sys::*;
use std::ffi::c_void;

/// The packed entry point MLIR generates: one pointer per argument, each pointing at the
/// argument's value (memrefs expanded into their five descriptor fields).
pub type PackedEntry = unsafe extern "C" fn(*mut *mut c_void);

/// What a kernel's barrier argument points at: the runtime's barrier, whose `wait` a
/// barrier in the kernel calls with the pointer itself. The runtime embeds this as the
/// first field of its own `#[repr(C)]` state.
#[repr(C)]
pub struct CpuBarrier {
    pub wait: unsafe extern "C" fn(*mut CpuBarrier),
}

/// The function kernels' barriers call.
unsafe extern "C" fn barrier_trampoline(barrier: *mut CpuBarrier) {
    // SAFETY: kernels call this only with the barrier argument the runtime passed, which
    // points at a live `CpuBarrier` (the entry point's contract, see `CpuKernel::call`).
    unsafe { ((*barrier).wait)(barrier) }
}

/// A kernel compiled for the host.
pub struct CpuKernel {
    engine: MlirExecutionEngine,
    entry: PackedEntry,
}

// SAFETY: the engine is not touched after construction except to destroy it, and the
// compiled entry point is plain machine code with no shared mutable state: calling it
// from several threads at once is as safe as the arguments each call passes.
unsafe impl Send for CpuKernel {}
unsafe impl Sync for CpuKernel {}

/// LLVM's JIT writes a perf jitdump for every engine (`.debug/jit/llvm-IR-jit-*/jit-PID.dump`
/// under `JITDUMPDIR`, else the temporary directory; about half a megabyte per kernel),
/// and MLIR's C API has no way to turn that off. Unless `JITDUMPDIR` is set, which asks
/// for them, this process's dumps are removed once its kernel is compiled: the engine
/// writes nothing more there after that.
fn remove_perf_dumps() {
    if std::env::var_os("JITDUMPDIR").is_some() {
        return;
    }
    let root = std::env::temp_dir().join(".debug/jit");
    let ours = format!("jit-{}.dump", std::process::id());
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for dir in entries.flatten().map(|e| e.path()) {
        let jit = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("llvm-IR-jit-"));
        if jit && dir.join(&ours).is_file() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    // The folders too, when nothing else is in them.
    let _ = std::fs::remove_dir(&root);
    if let Some(debug) = root.parent() {
        let _ = std::fs::remove_dir(debug);
    }
}

impl CpuKernel {
    pub(crate) fn compile(module: &Module<'_>, name: &str) -> Result<CpuKernel, LowerError> {
        // SAFETY: the module is valid LLVM dialect (the pipeline verified it); the engine
        // translates and compiles it into its own LLVM context and keeps no reference.
        unsafe {
            let engine =
                mlirExecutionEngineCreate(module.to_raw(), 3, 0, std::ptr::null(), false, false);
            if engine.ptr.is_null() {
                return Err(LowerError::Jit(format!(
                    "the execution engine could not compile `{name}`"
                )));
            }
            let barrier = melior::StringRef::new(crate::offload_to_cpu::BARRIER_SYMBOL);
            mlirExecutionEngineRegisterSymbol(
                engine,
                barrier.to_raw(),
                barrier_trampoline as *mut c_void,
            );
            let symbol = melior::StringRef::new(name);
            let entry = mlirExecutionEngineLookupPacked(engine, symbol.to_raw());
            remove_perf_dumps();
            if entry.is_null() {
                mlirExecutionEngineDestroy(engine);
                return Err(LowerError::Jit(format!(
                    "the compiled module has no entry point `{name}`"
                )));
            }
            Ok(CpuKernel {
                engine,
                entry: std::mem::transmute::<*mut c_void, PackedEntry>(entry),
            })
        }
    }

    /// Calls the entry point.
    ///
    /// # Safety
    ///
    /// `args` must hold one valid pointer per expanded argument of the entry point (the
    /// [`CPU_LEADING_WORDS`](offload_mir::abi::CPU_LEADING_WORDS) leading words, then the kernel
    /// ABI's arguments), each
    /// pointing at a value of that argument's type; the memory the memrefs describe must
    /// be valid for the accesses the kernel makes; and if the kernel waits at barriers,
    /// the barrier argument must point at a live [`CpuBarrier`] whose `wait` returns
    /// only once every other thread of the workgroup has arrived or finished.
    pub unsafe fn call(&self, args: &mut [*mut c_void]) {
        unsafe { (self.entry)(args.as_mut_ptr()) }
    }
}

impl Drop for CpuKernel {
    fn drop(&mut self) {
        // SAFETY: the engine was created by us and is destroyed once.
        unsafe { mlirExecutionEngineDestroy(self.engine) }
    }
}
