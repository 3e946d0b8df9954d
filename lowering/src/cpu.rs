//! The CPU backend's code: the LLVM-dialect module of [`Stage::Cpu`] compiled to a
//! relocatable object ([`CpuObject`]), which is either linked into this process by the
//! JIT linker ([`CpuKernel`]) or, built ahead of time, into the user's program by the
//! system linker. Both run the same machine code through the same entry point.
//!
//! [`Stage::Cpu`]: crate::Stage::Cpu

use crate::LowerError;
use crate::llvm::{self, CpuTarget};
use offload_mir::abi::CpuEntry;
use std::ffi::c_void;

/// A kernel compiled for the CPU: an object file defining one entry point, `symbol`.
#[derive(Clone, Debug)]
pub struct CpuObject {
    /// The [`CpuEntry`] the object defines ([`offload_mir::abi::cpu_entry_symbol`]).
    pub symbol: String,
    /// The relocatable object, in the host's format (ELF on Linux).
    pub bytes: Vec<u8>,
}

impl CpuObject {
    pub(crate) fn compile(
        module: &melior::ir::Module<'_>,
        entry: &str,
        symbol: String,
        target: &CpuTarget,
    ) -> Result<CpuObject, LowerError> {
        let bytes = llvm::compile_object(module, entry, &symbol, target)?;
        Ok(CpuObject { symbol, bytes })
    }
}

/// A kernel linked into this process, ready to call.
pub struct CpuKernel {
    entry: CpuEntry,
}

impl CpuKernel {
    /// Links `object`, compiled for this machine ([`CpuTarget::host`]), into the process.
    pub fn load(object: &CpuObject) -> Result<CpuKernel, LowerError> {
        let address = llvm::load_object(&object.bytes, &object.symbol)?;
        // SAFETY: the address is the object's entry point, a `CpuEntry` by construction
        // (`llvm::compile_object`), linked for the rest of the process.
        let entry = unsafe { std::mem::transmute::<usize, CpuEntry>(address as usize) };
        Ok(CpuKernel { entry })
    }

    /// The entry point.
    pub fn entry(&self) -> CpuEntry {
        self.entry
    }

    /// Calls the entry point.
    ///
    /// # Safety
    ///
    /// `args` must hold one valid pointer per expanded argument of the entry point (the
    /// [`CPU_LEADING_WORDS`](offload_mir::abi::CPU_LEADING_WORDS) leading words, then the
    /// kernel ABI's arguments), each pointing at a value of that argument's type; the
    /// memory the memrefs describe must be valid for the accesses the kernel makes; and a
    /// kernel with barriers must be given whole workgroups (threads `0..size`).
    pub unsafe fn call(&self, args: &mut [*mut c_void]) {
        unsafe { (self.entry)(args.as_mut_ptr()) }
    }
}
