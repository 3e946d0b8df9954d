//! Lowers offload MIR through the `offload` dialect to PTX for NVIDIA GPUs, to code
//! objects (HSACO) for AMD GPUs, and to machine code for the CPU backend.
//!
//! The entry points take a [`Linked`] body (inlined, simplified, validated and verified
//! safe by `offload_mir::link`), so everything here may assume valid MIR:
//!
//! - [`compile_ptx`]: MIR → PTX for a [`GpuTarget`];
//! - [`compile_cpu_object`]: MIR → an object file for the CPU backend ([`CpuObject`]),
//!   and [`compile_cpu`]: that object linked into this process ([`CpuKernel`]);
//! - [`emit`]: the text of any [`Stage`], for `offload-opt` and snapshot tests.
//!
//! `pipeline` holds the stages and pass pipelines; each offload pass is its own module,
//! named after the pass.
//!
//! # Where safe code could meet `undef` or `poison`, and how each is closed
//!
//! In LLVM a branch, an address or a division computed from `undef` or `poison` is
//! undefined behaviour, so the lowering gives every value a safe kernel can observe a
//! defined one, on every target:
//!
//! - **Shared memory.** Workgroup memory starts out undefined on a GPU, and a CPU thread
//!   reuses one block for its workgroups. Each workgroup's shared memory (static arrays
//!   and dynamic shared memory) is zeroed before its threads run: on a GPU every thread
//!   zeroes its share, then a barrier (`offload_to_gpu::zero_fill`); on the CPU the host
//!   function zeroes the block before each workgroup (`cpu_host`). A slot no thread wrote
//!   reads as zero, as in `offload_mir::interp`.
//! - **Locals assigned on one path only.** The MIR validator refuses a read that some
//!   path reaches unassigned; where SSA construction still needs a value on a path that
//!   never reads it, it is a zero constant, never `undef` (`mir_to_offload`).
//! - **Float-to-integer casts.** `fptosi`/`fptoui` give `poison` out of range: the value
//!   is first clamped into the range (NaN to the low end), converted, and the ends and NaN
//!   are then picked by `select`s of defined values (`mir_to_offload::rvalue`).
//! - **Shifts.** A shift by the bit width or more is `poison`: every amount is masked to
//!   the width first, as Rust's release semantics say.
//! - **Integer division and remainder.** By zero, or `MIN / -1`, is undefined: the safety
//!   verifier proves every division free of both from the checks that dominate it.
//! - **Bit counts and `abs`.** `ctlz`/`cttz` of zero and `abs` of `MIN` are emitted with
//!   their poison flags off (`math_to_llvm_intrinsics`, and upstream `convert-math-to-llvm`
//!   on the CPU), so they are the width and `MIN`.
//! - **Selects the lowering creates** (saturating casts, clamped neighbours, a shuffle
//!   from a lane outside the subgroup, the next workgroup's position) choose between
//!   defined values only; a shuffle's result is used only where its validity bit holds.
//! - **Integer arithmetic** carries no `nsw`/`nuw` flags: it wraps. **Memory accesses** are
//!   dominated by bounds checks, so no address is formed past an allocation.
//! - **Thread positions.** A GPU kernel compiled for a known workgroup size (whose thread
//!   ids then carry range facts) is launched with that size only: its code is cached per
//!   launch shape.
//! - **Device memory** a kernel can read is always written first: host data is copied in,
//!   `DeviceBuffer`s are made from a slice or zeroed.

mod bf16_to_integers;
mod cpu;
mod cpu_host;
mod half_in_f32;
mod kernel_abi;
pub mod libdevice;
mod llvm;
mod math_to_llvm_intrinsics;
mod mir_to_offload;
mod offload_to_cpu;
mod offload_to_gpu;
mod partition;
mod pipeline;
mod rewrite;
pub mod rocm;
mod ssa;
mod tiles;
mod workgroup_loops;

pub use cpu::{CpuKernel, CpuObject};
pub use kernel_abi::PANIC_BUFFER_WORDS;
pub use libdevice::LibdeviceMissing;
pub use llvm::{CpuTarget, JitError, RegistryEntry, registry_object};
pub use pipeline::{AmdTarget, GpuTarget, Session, Stage, run_a_panicking_pass};

use offload_mir::{Linked, TargetFacts};

/// A failure inside the lowering. Valid MIR should never produce one; when it does, the
/// MLIR diagnostics say which pass refused what.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error("the offload dialect failed to load: {0}")]
    Dialect(#[from] offload_dialect::DialectError),
    #[error("internal error in the `{stage}` stage:\n{diagnostics}")]
    Internal {
        stage: &'static str,
        diagnostics: String,
    },
    #[error("CPU code generation failed: {0}")]
    Jit(#[from] llvm::JitError),
    /// A kernel calls math that needs CUDA's libdevice, and none was found or given.
    #[error(transparent)]
    Libdevice(#[from] libdevice::LibdeviceMissing),
    /// MLIR given by the user (`offload-opt FILE.mlir`) that does not parse or verify, or
    /// that a pass of the pipeline the user gave refuses.
    #[error("{diagnostics}")]
    Input { diagnostics: String },
    /// AMD GPU code without the ROCm device libraries or LLVM's linker.
    #[error(transparent)]
    Rocm(#[from] rocm::ToolkitError),
    /// A target that does not name a chip, or nothing to compile for it.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A pipeline given as text that does not name passes correctly.
    #[error("bad pass pipeline `{pipeline}`: {message}")]
    Pipeline { pipeline: String, message: String },
}

/// A target the lowering cannot compile for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error(
        "`{0}` is not an AMD GPU LLVM 22 compiles for: give `gfx` and its number (`gfx90a`, `gfx942`, `gfx1100`)"
    )]
    NotAnAmdChip(String),
    #[error("no kernels to compile")]
    NoKernels,
}

/// What NVIDIA GPUs fix: warps of [`offload_mir::abi::NVIDIA_WARP`] lanes.
const GPU_FACTS: TargetFacts = TargetFacts {
    subgroup_size: offload_mir::abi::NVIDIA_WARP,
};

/// What the CPU backend fixes: one-lane subgroups.
const CPU_FACTS: TargetFacts = TargetFacts { subgroup_size: 1 };

/// What an AMD chip fixes: wavefronts of 64 lanes (CDNA) or 32 (RDNA).
fn amd_facts(target: &AmdTarget) -> TargetFacts {
    TargetFacts {
        subgroup_size: target.wavefront(),
    }
}

/// One AMD code object (HSACO) holding every kernel of `bodies`, for `target`; with
/// `assembly`, its AMDGPU assembly instead.
pub fn compile_amd(
    bodies: &[Linked],
    target: &AmdTarget,
    assembly: bool,
) -> Result<Vec<u8>, LowerError> {
    let session = Session::new()?;
    let mut module = rocdl_module(&session, bodies, target)?;
    session.to_code_object(&mut module, assembly)
}

/// `bodies` lowered for `target` into one module, each kernel in its own `gpu.module`
/// of LLVM and ROCDL dialects.
fn rocdl_module<'s>(
    session: &'s Session,
    bodies: &[Linked],
    target: &AmdTarget,
) -> Result<melior::ir::Module<'s>, LowerError> {
    let mut modules = Vec::new();
    for body in bodies {
        let body = &body.for_target(amd_facts(target));
        let mut module = session.offload_module(body)?;
        session.to_gpu_amd(&mut module, target)?;
        session.to_rocdl(&mut module, target)?;
        dump(body, Stage::Rocdl, &module);
        modules.push(module);
    }
    let mut modules = modules.into_iter();
    let Some(mut all) = modules.next() else {
        return Err(TargetError::NoKernels.into());
    };
    for module in modules {
        // SAFETY: both modules are live in one context; each top-level operation of
        // `module` is moved once, before the first of `all` (its gpu.module).
        unsafe {
            let anchor = rewrite::first_operation(all.body().to_raw());
            for op in rewrite::operations(module.body().to_raw()) {
                rewrite::move_before(op, anchor);
            }
        }
    }
    session.merge_gpu_modules(&mut all);
    Ok(all)
}

/// PTX for one kernel, with the name of its entry point.
#[derive(Clone, Debug)]
pub struct PtxKernel {
    pub entry: String,
    pub ptx: String,
}

/// Compiles a kernel to PTX.
pub fn compile_ptx(body: &Linked, target: &GpuTarget) -> Result<PtxKernel, LowerError> {
    let body = &body.for_target(GPU_FACTS);
    let session = Session::new()?;
    let mut module = session.offload_module(body)?;
    dump(body, Stage::Offload, &module);
    session.to_gpu_nvidia(&mut module, target)?;
    dump(body, Stage::Gpu, &module);
    session.to_nvvm(&mut module, target)?;
    dump(body, Stage::Llvm, &module);
    let ptx = session.to_ptx(&mut module)?;
    Ok(PtxKernel {
        entry: body.name.clone(),
        ptx,
    })
}

/// The entry point [`compile_cpu_object`] defines for a kernel and target: the
/// [`offload_mir::abi::cpu_entry_symbol`] of the kernel's
/// [`code_key`](offload_mir::code_key) and, when the code is compiled for one
/// ([`CpuTarget::workgroup_size`]), of the workgroup size, so that the JIT links each
/// shape's code under its own name.
pub fn cpu_symbol(body: &Linked, target: &CpuTarget) -> String {
    let mut key = offload_mir::code_key(body.body());
    if let Some([x, y, z]) = target.workgroup_size {
        key += &format!("_{x}x{y}x{z}");
    }
    offload_mir::abi::cpu_entry_symbol(&key)
}

/// Compiles a kernel for the CPU backend to an object file for `target`, defining the
/// entry point [`cpu_symbol`].
pub fn compile_cpu_object(body: &Linked, target: &CpuTarget) -> Result<CpuObject, LowerError> {
    let symbol = cpu_symbol(body, target);
    let body = &body.for_target(CPU_FACTS);
    let session = Session::new()?;
    let mut module = session.offload_module(body)?;
    session.to_cpu(&mut module, target.workgroup_size)?;
    dump(body, Stage::Cpu, &module);
    CpuObject::compile(&module, &body.name, symbol, target)
}

/// Compiles a kernel for this machine's CPU and links it into the process.
pub fn compile_cpu(body: &Linked) -> Result<CpuKernel, LowerError> {
    CpuKernel::load(&compile_cpu_object(body, &CpuTarget::host())?)
}

/// The text of every stage from `offload` up to and including `last`, in order. The GPU
/// stages (`gpu`, `llvm`, `ptx`) and the CPU stage are separate paths from `offload`.
pub fn emit(
    body: &Linked,
    last: Stage,
    target: &GpuTarget,
) -> Result<Vec<(Stage, String)>, LowerError> {
    // The `offload` stage alone is target-neutral; the others start from the kernel
    // specialised for their target, as `compile_cpu` and `compile_ptx` do.
    if matches!(last, Stage::Rocdl | Stage::Amdgcn) {
        return emit_amd(body, last, &AmdTarget::default());
    }
    let body = &match last {
        Stage::Offload => body.clone(),
        Stage::Cpu => body.for_target(CPU_FACTS),
        Stage::Gpu | Stage::Llvm | Stage::Ptx => body.for_target(GPU_FACTS),
        Stage::Rocdl | Stage::Amdgcn => unreachable!("emitted by `emit_amd`"),
    };
    let session = Session::new()?;
    let mut module = session.offload_module(body)?;
    let text = |m: &melior::ir::Module<'_>| m.as_operation().to_string();
    let mut out = vec![(Stage::Offload, text(&module))];
    match last {
        Stage::Offload => {}
        Stage::Cpu => {
            session.to_cpu(&mut module, target.block_size)?;
            out.push((Stage::Cpu, text(&module)));
        }
        Stage::Gpu | Stage::Llvm | Stage::Ptx => {
            session.to_gpu_nvidia(&mut module, target)?;
            out.push((Stage::Gpu, text(&module)));
            if last != Stage::Gpu {
                session.to_nvvm(&mut module, target)?;
                out.push((Stage::Llvm, text(&module)));
            }
            if last == Stage::Ptx {
                out.push((Stage::Ptx, session.to_ptx(&mut module)?));
            }
        }
        Stage::Rocdl | Stage::Amdgcn => unreachable!("emitted by `emit_amd`"),
    }
    Ok(out)
}

/// The text of every stage for an AMD GPU from `offload` up to `last` (`gpu`, `rocdl`
/// or `amdgcn`, the code object's assembly), in order.
pub fn emit_amd(
    body: &Linked,
    last: Stage,
    target: &AmdTarget,
) -> Result<Vec<(Stage, String)>, LowerError> {
    let body = &body.for_target(amd_facts(target));
    let session = Session::new()?;
    let mut module = session.offload_module(body)?;
    let text = |m: &melior::ir::Module<'_>| m.as_operation().to_string();
    let mut out = vec![(Stage::Offload, text(&module))];
    if last == Stage::Offload {
        return Ok(out);
    }
    session.to_gpu_amd(&mut module, target)?;
    out.push((Stage::Gpu, text(&module)));
    if last == Stage::Gpu {
        return Ok(out);
    }
    session.to_rocdl(&mut module, target)?;
    out.push((Stage::Rocdl, text(&module)));
    if last == Stage::Amdgcn {
        let assembly = session.to_code_object(&mut module, true)?;
        out.push((
            Stage::Amdgcn,
            String::from_utf8_lossy(&assembly).into_owned(),
        ));
    }
    Ok(out)
}

/// `OFFLOAD_DUMP_IR=kernel_name` (or `all`) prints each stage to stderr as it is built.
fn dump(body: &Linked, stage: Stage, module: &melior::ir::Module<'_>) {
    let Ok(wanted) = std::env::var("OFFLOAD_DUMP_IR") else {
        return;
    };
    if wanted == "all" || wanted.split(',').any(|k| k == body.name) {
        eprintln!(
            "// ----- {} :: {} -----\n{}",
            body.name,
            stage.name(),
            module.as_operation()
        );
    }
}
