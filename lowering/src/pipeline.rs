//! The stages of the lowering and the pass pipelines between them.
//!
//! ```text
//! MIR ──emit──▶ offload ──partition, convert-offload-to-gpu──▶ gpu ──NVVM──▶ llvm ──▶ ptx
//!                  │                                            └──ROCDL──▶ rocdl ──▶ HSACO
//!                  └────partition, convert-offload-to-cpu──▶ cpu ──LLVM──▶ JIT
//! ```
//!
//! Every pass manager runs with the verifier on, so each pass's output is verified.
//!
//! [`Session::run_pipeline`] runs a pipeline given as text, as `mlir-opt
//! --pass-pipeline` does, with our passes ([`PASSES`]) usable by name at the top level
//! of `builtin.module(...)` next to every upstream pass.
//! `OFFLOAD_PASS_TIMING=1` makes each pass manager print MLIR's per-pass timing report to
//! stderr when it finishes.

use crate::{
    LowerError, bf16_to_integers, half_in_f32, math_to_llvm_intrinsics, offload_to_cpu,
    offload_to_gpu, partition,
};
use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{Module, OperationRef, operation::OperationLike, r#type::TypeId},
    pass::{ExternalPass, Pass, PassManager, create_external},
    utility::{
        parse_pass_pipeline, register_all_dialects, register_all_llvm_translations,
        register_all_passes,
    },
};
use offload_mir::Linked;
use std::{cell::RefCell, rc::Rc, sync::Once};

/// `canonicalize` on control flow in the `cf` dialect, as every pipeline of ours runs it:
/// first folds alone (with the one pattern that folds a branch on a constant), then all
/// of it. MLIR 22's driver can fold forever inside one sweep when a branch it folds
/// leaves a loop no path reaches and it then merges that loop's header into its latch:
/// the header's argument becomes `%x = arith.addi %x, %c` (upstream llvm-project PRs
/// 221037 and 221152; CPU fuzz seed 4254 hit it at the `offload` stage). Region
/// simplification, which runs between sweeps, erases unreachable blocks; the first pass
/// folds the branches and so lets it erase such loops before the second merges blocks.
/// (The pattern's name is MLIR's type name for it; were it ever not to match, the first
/// pass would fold no branch, and the link file tests
/// `loop_left_unreachable_by_a_folded_{branch,switch}.mir` fail by their deadline.)
const CANONICALIZE: &str = "canonicalize{enable-patterns='(anonymous namespace)::SimplifyConstCondBranchPred'}, canonicalize";

/// A stage whose IR `offload-opt` can print.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The `offload` dialect, straight from MIR (locals already SSA values) after
    /// canonicalisation.
    Offload,
    /// `gpu.module`/`gpu.func` with `arith`, `cf` and `memref`.
    Gpu,
    /// The LLVM and NVVM dialects inside the `gpu.module`.
    Llvm,
    /// PTX assembly.
    Ptx,
    /// The CPU backend's host function, in the LLVM dialect.
    Cpu,
    /// The LLVM and ROCDL dialects inside the `gpu.module`, for an AMD GPU.
    Rocdl,
    /// AMDGPU assembly of the code object.
    Amdgcn,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Offload => "offload",
            Stage::Gpu => "gpu",
            Stage::Llvm => "llvm",
            Stage::Ptx => "ptx",
            Stage::Cpu => "cpu",
            Stage::Rocdl => "rocdl",
            Stage::Amdgcn => "amdgcn",
        }
    }
}

/// Which NVIDIA chip to generate code for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuTarget {
    /// `sm_XY`.
    pub chip: String,
    /// PTX features; `+ptx80` keeps the ISA at 8.0, which CUDA 12 and 13 drivers JIT.
    pub features: String,
    /// CUDA's `libdevice.10.bc`, linked in when kernels call math functions (`sin`,
    /// `exp`, ...), which NVVM lowers to `__nv_*` calls; found by default as
    /// `libdevice.rs` says. A kernel that needs it without one is [`LowerError::Libdevice`].
    pub libdevice: Option<String>,
    /// The threads per workgroup of every launch the code will run, when compiled for one
    /// launch shape: the kernel then declares them (`known_block_size`, PTX `.maxntid`),
    /// so ptxas allocates registers for that many threads and the thread position is
    /// known to be below them. `None`: any shape.
    pub block_size: Option<[u32; 3]>,
    /// Workgroups a multiprocessor should hold at once (PTX `.minnctapersm`), which
    /// bounds the registers a thread may use; `None`: ptxas's choice.
    pub resident_workgroups: Option<u32>,
    /// Every launch of the code runs its whole grid in one piece (not a share of a split
    /// launch, not a grid folded past the device's limits), so a workgroup's index is its
    /// block's: the thread's position is then a product of 32-bit values, which ptxas
    /// computes with one 32-bit wide multiply instead of a 64-bit one. `false`: code for
    /// any launch, which adds the launch's hidden group base.
    pub whole_grid: bool,
}

impl GpuTarget {
    /// The target for a device of compute capability `major.minor`.
    pub fn for_compute_capability(major: u32, minor: u32) -> GpuTarget {
        GpuTarget {
            chip: format!("sm_{major}{minor}"),
            features: "+ptx80".into(),
            libdevice: crate::libdevice::find(),
            block_size: None,
            resident_workgroups: None,
            whole_grid: false,
        }
    }
}

impl Default for GpuTarget {
    /// The H200's chip.
    fn default() -> Self {
        GpuTarget::for_compute_capability(9, 0)
    }
}

/// Which AMD chip to generate code for: `gfx90a`, `gfx942`, `gfx1100`, ...
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AmdTarget {
    pub chip: String,
}

/// The AMD chips LLVM 22 generates code for (`llc -mtriple=amdgcn -mcpu=help`).
pub const AMD_CHIPS: [&str; 47] = [
    "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705",
    "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx900", "gfx902", "gfx904", "gfx906",
    "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012",
    "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
    "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
    "gfx1200", "gfx1201", "gfx1250", "gfx1251",
];

impl AmdTarget {
    /// The target for `chip`, one of those `AMD_CHIPS` lists.
    pub fn new(chip: &str) -> Result<AmdTarget, LowerError> {
        if !AMD_CHIPS.contains(&chip) {
            return Err(crate::TargetError::NotAnAmdChip(chip.into()).into());
        }
        Ok(AmdTarget { chip: chip.into() })
    }

    /// Lanes per wavefront, the subgroup: 64 on GCN and CDNA chips (`gfx9..` and
    /// before), 32 on RDNA (`gfx10..` on), as LLVM compiles for each by default.
    pub fn wavefront(&self) -> u32 {
        let generation = &self.chip["gfx".len()..];
        if generation.len() >= 4 { 32 } else { 64 }
    }
}

impl Default for AmdTarget {
    /// The MI300's chip.
    fn default() -> Self {
        AmdTarget {
            chip: "gfx942".into(),
        }
    }
}

/// An MLIR context with every dialect we use, the `offload` dialect, and a sink for its
/// diagnostics.
pub struct Session {
    pub context: Context,
    diagnostics: Rc<RefCell<Vec<String>>>,
}

static REGISTER_PASSES: Once = Once::new();

impl Session {
    pub fn new() -> Result<Session, LowerError> {
        REGISTER_PASSES.call_once(register_all_passes);
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new_with_registry(&registry, false);
        context.load_all_available_dialects();
        register_all_llvm_translations(&context);
        offload_dialect::load(&context)?;
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = diagnostics.clone();
        context.attach_diagnostic_handler(move |d| {
            let mut text = format!("{}: {d}", source_position(&d.location().to_string()));
            for i in 0..d.note_count() {
                if let Ok(note) = d.note(i) {
                    text.push_str(&format!("\n  note: {note}"));
                }
            }
            sink.borrow_mut().push(text);
            true
        });
        Ok(Session {
            context,
            diagnostics,
        })
    }

    fn take_diagnostics(&self) -> String {
        std::mem::take(&mut *self.diagnostics.borrow_mut()).join("\n")
    }

    /// MIR → the `offload` dialect, verified. `mir_to_offload` builds locals as SSA values
    /// itself (upstream `mem2reg` is quadratic in kernel size), so only canonicalisation
    /// and CSE run here.
    pub fn offload_module(&self, body: &Linked) -> Result<Module<'_>, LowerError> {
        let mut module = crate::mir_to_offload::build(&self.context, body);
        if !module.as_operation().verify() {
            return Err(LowerError::Internal {
                stage: "offload",
                diagnostics: format!(
                    "{}\nin the module built:\n{}",
                    self.take_diagnostics(),
                    module.as_operation()
                ),
            });
        }
        self.run(
            &mut module,
            "offload",
            &[],
            &format!("builtin.module({CANONICALIZE}, cse)"),
        )?;
        Ok(module)
    }

    /// `offload` → `gpu`.
    pub fn to_gpu(&self, module: &mut Module<'_>) -> Result<(), LowerError> {
        self.run(
            module,
            "gpu",
            &[PARTITION, TO_GPU],
            &format!("builtin.module({CANONICALIZE}, cse)"),
        )
    }

    /// `offload` → `gpu` for an NVIDIA GPU: [`Self::to_gpu`], with every launch's
    /// workgroup index its block's when `target` says each runs its whole grid
    /// ([`GpuTarget::whole_grid`]).
    pub fn to_gpu_nvidia(
        &self,
        module: &mut Module<'_>,
        target: &GpuTarget,
    ) -> Result<(), LowerError> {
        if let Some([x, y, z]) = target.block_size {
            // The tile operations' loops are shaped for the threads there are.
            let size: melior::ir::Attribute = melior::ir::attribute::DenseI64ArrayAttribute::new(
                &self.context,
                &[x as i64, y as i64, z as i64],
            )
            .into();
            let root = module.as_operation().to_raw();
            // SAFETY: `root` is the live module operation.
            unsafe {
                crate::rewrite::set_attribute(root, crate::kernel_abi::WORKGROUP_SIZE_ATTR, size)
            };
        }
        if target.whole_grid {
            let root = module.as_operation().to_raw();
            let unit = melior::ir::attribute::Attribute::unit(&self.context);
            // SAFETY: `root` is the live module operation.
            unsafe {
                crate::rewrite::set_attribute(root, crate::offload_to_gpu::WHOLE_GRID_ATTR, unit)
            };
        }
        self.to_gpu(module)
    }

    /// `gpu` → LLVM/NVVM dialects for `target`.
    pub fn to_nvvm(&self, module: &mut Module<'_>, target: &GpuTarget) -> Result<(), LowerError> {
        if let Some([x, y, z]) = target.block_size {
            let size: melior::ir::Attribute = melior::ir::attribute::DenseI32ArrayAttribute::new(
                &self.context,
                &[x as i32, y as i32, z as i32],
            )
            .into();
            for func in crate::rewrite::collect(module.as_operation(), "gpu.func") {
                // SAFETY: `func` was just collected from the live module.
                unsafe { crate::rewrite::set_attribute(func, "known_block_size", size) };
            }
        }
        if target.resident_workgroups.is_some() {
            crate::offload_to_gpu::unmark_panic_sites(module.as_operation());
        }
        let link = match &target.libdevice {
            Some(path) => format!(" l={path}"),
            None => String::new(),
        };
        let pipeline = format!(
            "builtin.module(convert-scf-to-cf, expand-strided-metadata, lower-affine, \
             nvvm-attach-target{{chip={} features={} O=3{link}}}, arith-expand, \
             gpu.module(convert-gpu-to-nvvm, canonicalize, cse, reconcile-unrealized-casts))",
            target.chip, target.features
        );
        self.run(
            module,
            "llvm",
            &[HALF_IN_F32, MATH_TO_INTRINSICS],
            &pipeline,
        )?;
        crate::offload_to_gpu::extern_dynamic_shared(&self.context, module.as_operation());
        if let Some(n) = target.resident_workgroups {
            // PTX `.minnctapersm`: ptxas keeps registers few enough for `n` workgroups.
            let n = melior::ir::attribute::IntegerAttribute::new(
                melior::ir::r#type::IntegerType::new(&self.context, 32).into(),
                n as i64,
            );
            for func in crate::rewrite::collect(module.as_operation(), "llvm.func") {
                // SAFETY: `func` was just collected from the live module; only kernels
                // (`nvvm.kernel`) take the attribute.
                unsafe {
                    if crate::rewrite::has_attribute(func, "nvvm.kernel") {
                        crate::rewrite::set_attribute(func, "nvvm.minctasm", n.into());
                    }
                }
            }
        }
        Ok(())
    }

    /// `offload` → `gpu` for an AMD GPU: subgroups as wide as its wavefront, ballots
    /// through ROCDL.
    pub fn to_gpu_amd(
        &self,
        module: &mut Module<'_>,
        target: &AmdTarget,
    ) -> Result<(), LowerError> {
        use crate::offload_to_gpu::{SUBGROUP_SIZE_ATTR, VENDOR_ATTR};
        let width = melior::ir::attribute::IntegerAttribute::new(
            melior::ir::r#type::IntegerType::new(&self.context, 64).into(),
            target.wavefront() as i64,
        );
        let vendor = melior::ir::attribute::StringAttribute::new(&self.context, "amd");
        let root = module.as_operation().to_raw();
        // SAFETY: `root` is the live module operation.
        unsafe {
            crate::rewrite::set_attribute(root, SUBGROUP_SIZE_ATTR, width.into());
            crate::rewrite::set_attribute(root, VENDOR_ATTR, vendor.into());
        }
        self.to_gpu(module)
    }

    /// `gpu` → LLVM/ROCDL dialects for `target`.
    pub fn to_rocdl(&self, module: &mut Module<'_>, target: &AmdTarget) -> Result<(), LowerError> {
        let pipeline = format!(
            "builtin.module(convert-scf-to-cf, expand-strided-metadata, lower-affine, \
             rocdl-attach-target{{chip={chip} O=3}}, arith-expand, \
             convert-math-to-rocdl{{chipset={chip}}}, \
             gpu.module(convert-gpu-to-rocdl{{chipset={chip}}}, canonicalize, cse, \
             reconcile-unrealized-casts))",
            chip = target.chip
        );
        self.run(
            module,
            "rocdl",
            &[HALF_IN_F32, MATH_TO_INTRINSICS],
            &pipeline,
        )?;
        crate::offload_to_gpu::extern_dynamic_shared(&self.context, module.as_operation());
        Ok(())
    }

    /// Moves every kernel's `gpu.module` into the first one, so that one code object
    /// holds them all; a function declared in several (a math library's) is kept once.
    pub fn merge_gpu_modules(&self, module: &mut Module<'_>) {
        use crate::rewrite;
        let modules = rewrite::collect(module.as_operation(), "gpu.module");
        let Some((&first, rest)) = modules.split_first() else {
            return;
        };
        // SAFETY: every handle was just collected from the live module; each moved or
        // erased operation is used once.
        unsafe {
            let into = rewrite::entry_block(first);
            let anchor = rewrite::first_operation(into);
            let mut symbols: std::collections::HashSet<String> = rewrite::operations(into)
                .into_iter()
                .filter_map(|op| rewrite::symbol_name(op))
                .collect();
            for &other in rest {
                for op in rewrite::operations(rewrite::entry_block(other)) {
                    let name = rewrite::symbol_name(op);
                    let declared = name.as_ref().is_some_and(|n| symbols.contains(n))
                        && rewrite::is_declaration(op);
                    if declared {
                        rewrite::erase(op);
                    } else {
                        symbols.extend(name);
                        rewrite::move_before(op, anchor);
                    }
                }
                rewrite::erase(other);
            }
        }
    }

    /// The code object of the `gpu.module` lowered by [`Self::to_rocdl`]: HSACO bytes, or
    /// with `assembly` its AMDGPU assembly.
    pub fn to_code_object(
        &self,
        module: &mut Module<'_>,
        assembly: bool,
    ) -> Result<Vec<u8>, LowerError> {
        let toolkit = crate::rocm::toolkit()?;
        let format = if assembly { "isa" } else { "bin" };
        let pipeline = format!(
            "builtin.module(gpu-module-to-binary{{format={format} toolkit={}}})",
            toolkit.display()
        );
        self.run(module, "hsaco", &[], &pipeline)?;
        self.gpu_object(module, "hsaco")
    }

    /// The bytes of the one `gpu.binary`'s first object.
    fn gpu_object(&self, module: &Module<'_>, stage: &'static str) -> Result<Vec<u8>, LowerError> {
        let binaries = crate::rewrite::collect(module.as_operation(), "gpu.binary");
        let [binary] = binaries[..] else {
            return Err(LowerError::Internal {
                stage,
                diagnostics: format!("expected one gpu.binary, found {}", binaries.len()),
            });
        };
        // SAFETY: `binary` is a live `gpu.binary` op; its `objects` attribute is an array of
        // `#gpu.object`s, as the op's verifier guarantees.
        unsafe {
            let objects = OperationRef::from_raw(binary)
                .attribute("objects")
                .map_err(|e| LowerError::Internal {
                    stage,
                    diagnostics: e.to_string(),
                })?;
            Ok(crate::rewrite::first_gpu_object(objects))
        }
    }

    /// LLVM/NVVM dialects → PTX text.
    pub fn to_ptx(&self, module: &mut Module<'_>) -> Result<String, LowerError> {
        self.run(
            module,
            "ptx",
            &[],
            "builtin.module(gpu-module-to-binary{format=isa})",
        )?;
        let bytes = self.gpu_object(module, "ptx")?;
        let ptx = String::from_utf8_lossy(&bytes).into_owned();
        let unresolved = crate::libdevice::unresolved(&ptx);
        if !unresolved.is_empty() {
            return Err(crate::libdevice::LibdeviceMissing::now(unresolved).into());
        }
        Ok(ptx)
    }

    /// `offload` → the CPU backend's host function, in the LLVM dialect; for workgroups
    /// of `workgroup_size` threads when given ([`CpuTarget::workgroup_size`](crate::CpuTarget::workgroup_size)).
    pub fn to_cpu(
        &self,
        module: &mut Module<'_>,
        workgroup_size: Option<[u32; 3]>,
    ) -> Result<(), LowerError> {
        if let Some([x, y, z]) = workgroup_size {
            let size: melior::ir::Attribute = melior::ir::attribute::DenseI64ArrayAttribute::new(
                &self.context,
                &[x as i64, y as i64, z as i64],
            )
            .into();
            let root = module.as_operation().to_raw();
            // SAFETY: `root` is the live module operation.
            unsafe {
                crate::rewrite::set_attribute(root, crate::kernel_abi::WORKGROUP_SIZE_ATTR, size)
            };
        }
        self.run(
            module,
            "cpu",
            &[PARTITION, TO_CPU, HALF_IN_F32, BF16_TO_INTEGERS],
            // The second canonicalizer bottom-up (`CANONICALIZE` ends in `canonicalize`):
            // before branches were folded first, a top-down one rewrote a CPU kernel's
            // copy per phase forever (`to_cpu_unreachable_loop.mlir`), and bottom-up is
            // what every CPU kernel since has been measured with.
            &format!(
                "builtin.module({CANONICALIZE}{{top-down=false}}, cse, convert-math-to-funcs, \
                 convert-math-to-llvm, \
                 convert-math-to-libm, convert-scf-to-cf, expand-strided-metadata, lower-affine, \
                 convert-arith-to-llvm, finalize-memref-to-llvm, convert-cf-to-llvm, \
                 convert-func-to-llvm, reconcile-unrealized-casts)"
            ),
        )?;
        // SAFETY: the module is live and now in the LLVM dialect.
        unsafe { crate::cpu_host::mark_noalias(&self.context, module.as_operation()) };
        Ok(())
    }

    /// Parses the MLIR file at `path` and verifies it; diagnostics name its lines.
    pub fn parse_file(&self, path: &str) -> Result<Module<'_>, LowerError> {
        let input = |diagnostics: String| LowerError::Input { diagnostics };
        let name = std::ffi::CString::new(path)
            .map_err(|_| input(format!("{path}: a path with a NUL byte")))?;
        let Some(module) = crate::rewrite::parse_module_file(&self.context, &name) else {
            let diagnostics = self.take_diagnostics();
            return Err(input(if diagnostics.is_empty() {
                format!("{path}: cannot read or parse this file")
            } else {
                diagnostics
            }));
        };
        if !module.as_operation().verify() {
            return Err(input(self.take_diagnostics()));
        }
        Ok(module)
    }

    /// Runs `pipeline`, MLIR's textual form (`builtin.module(offload-partition,
    /// canonicalize)`), on `module`. Our passes run by their names at the top level of
    /// `builtin.module(...)`; each run of upstream passes between them is handed to MLIR.
    pub fn run_pipeline(&self, module: &mut Module<'_>, pipeline: &str) -> Result<(), LowerError> {
        let bad = |message: &str| LowerError::Pipeline {
            pipeline: pipeline.to_string(),
            message: message.to_string(),
        };
        let as_input = |e: LowerError| match e {
            LowerError::Internal { diagnostics, .. } => LowerError::Input { diagnostics },
            other => other,
        };
        let Some(inner) = pipeline
            .trim()
            .strip_prefix("builtin.module(")
            .and_then(|p| p.strip_suffix(')'))
        else {
            // Not anchored on the module: only upstream passes can be named.
            if PASSES.iter().any(|(_, name, _)| pipeline.contains(name)) {
                return Err(bad("offload passes run on `builtin.module(...)` only"));
            }
            return self
                .run(module, "pipeline", &[], pipeline)
                .map_err(as_input);
        };
        let mut upstream: Vec<&str> = Vec::new();
        let flush = |upstream: &mut Vec<&str>, module: &mut Module<'_>| {
            if upstream.is_empty() {
                return Ok(());
            }
            let text = format!("builtin.module({})", upstream.join(","));
            upstream.clear();
            self.run(module, "pipeline", &[], &text).map_err(as_input)
        };
        for element in top_level(inner).map_err(|m| bad(&m))? {
            match PASSES.iter().find(|(_, name, _)| *name == element) {
                Some(pass) => {
                    flush(&mut upstream, module)?;
                    self.run(module, "pipeline", &[*pass], "builtin.module()")
                        .map_err(as_input)?;
                }
                None if PASSES.iter().any(|(_, name, _)| element.starts_with(name)) => {
                    return Err(bad(&format!("`{element}`: offload passes take no options")));
                }
                None => upstream.push(element),
            }
        }
        flush(&mut upstream, module)
    }

    fn run(
        &self,
        module: &mut Module<'_>,
        stage: &'static str,
        passes: &[PassSpec],
        pipeline: &str,
    ) -> Result<(), LowerError> {
        let manager = PassManager::new(&self.context);
        manager.enable_verifier(true);
        for (id, name, body) in passes {
            manager.add_pass(make(id, name, *body));
        }
        // MLIR's diagnostics say what failed where; its own message only that it did.
        let fail = |what: String| {
            let diagnostics = self.take_diagnostics();
            LowerError::Internal {
                stage,
                diagnostics: if diagnostics.is_empty() {
                    what
                } else {
                    diagnostics
                },
            }
        };
        let nested = PassManager::new(&self.context);
        nested.enable_verifier(true);
        if std::env::var_os("OFFLOAD_PASS_TIMING").is_some() {
            // MLIR prints the reports when the managers are destroyed, below.
            crate::rewrite::enable_timing(&manager);
            crate::rewrite::enable_timing(&nested);
        }
        parse_pass_pipeline(nested.as_operation_pass_manager(), pipeline)
            .map_err(|e| fail(format!("bad pass pipeline `{pipeline}`: {e}")))?;
        if !passes.is_empty() {
            manager.run(module).map_err(|e| fail(e.to_string()))?;
        }
        nested.run(module).map_err(|e| fail(e.to_string()))?;
        Ok(())
    }
}

/// Identities of our external passes; MLIR tells passes apart by the address of these.
#[repr(align(8))]
struct PassId;
static PARTITION_ID: PassId = PassId;
static TO_GPU_ID: PassId = PassId;
static TO_CPU_ID: PassId = PassId;
static MATH_TO_INTRINSICS_ID: PassId = PassId;
static BF16_TO_INTEGERS_ID: PassId = PassId;
static HALF_IN_F32_ID: PassId = PassId;

type PassBody = fn(&Context, OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError>;

/// One of our passes: its identity, its name and its body.
type PassSpec = (&'static PassId, &'static str, PassBody);

const PARTITION: PassSpec = (&PARTITION_ID, partition::NAME, partition::run);
const TO_GPU: PassSpec = (&TO_GPU_ID, offload_to_gpu::NAME, offload_to_gpu::run);
const TO_CPU: PassSpec = (&TO_CPU_ID, offload_to_cpu::NAME, offload_to_cpu::run);
const MATH_TO_INTRINSICS: PassSpec = (
    &MATH_TO_INTRINSICS_ID,
    math_to_llvm_intrinsics::NAME,
    math_to_llvm_intrinsics::run,
);

const BF16_TO_INTEGERS: PassSpec = (
    &BF16_TO_INTEGERS_ID,
    bf16_to_integers::NAME,
    bf16_to_integers::run,
);

const HALF_IN_F32: PassSpec = (&HALF_IN_F32_ID, half_in_f32::NAME, half_in_f32::run);

/// Every offload pass, by the name pipelines given as text use.
const PASSES: [PassSpec; 6] = [
    PARTITION,
    TO_GPU,
    TO_CPU,
    MATH_TO_INTRINSICS,
    BF16_TO_INTEGERS,
    HALF_IN_F32,
];

/// `loc("FILE":LINE:COL)`, as MLIR prints a position in a file, as `FILE:LINE:COL`;
/// other locations as printed.
fn source_position(loc: &str) -> String {
    let inner = loc.strip_prefix("loc(\"").and_then(|l| l.strip_suffix(')'));
    match inner.and_then(|l| l.split_once("\":")) {
        Some((file, line_col)) if !line_col.contains(['(', '"']) => format!("{file}:{line_col}"),
        _ => loc.to_string(),
    }
}

/// The elements of a pass list, split at its top-level commas (not those inside an
/// element's `(...)` or `{...}`), trimmed.
fn top_level(list: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.checked_sub(1).ok_or("unbalanced brackets")?,
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets".into());
    }
    out.push(list[start..].trim());
    if out.iter().any(|e| e.is_empty()) && list.trim() != "" {
        return Err("an empty pass name".into());
    }
    out.retain(|e| !e.is_empty());
    Ok(out)
}

/// Wraps a Rust rewrite as a real MLIR pass on `builtin.module`. A failure is emitted as
/// an error diagnostic at the operation it refused (else the module) and fails the pass
/// manager. A panic in the rewrite
/// (an internal bug) is caught here and becomes such a failure too: unwinding through
/// MLIR's C++ frames would abort the process.
fn make(id: &'static PassId, name: &'static str, body: PassBody) -> Pass {
    create_external(
        move |op: OperationRef<'_, '_>, pass: ExternalPass<'_>| {
            // `to_ref` reinterprets the `ContextRef` itself as a `Context`, so the
            // `ContextRef` must outlive the reference: keep it in a local.
            let context_ref = op.context();
            // SAFETY: `context_ref` lives until the end of this call, and the context it
            // names outlives every pass run on its operations.
            let context = unsafe { context_ref.to_ref() };
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(context, op)))
                    .unwrap_or_else(|panic| {
                        let what = panic
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| panic.downcast_ref::<&str>().copied())
                            .unwrap_or("a panic");
                        Err(format!("internal error: {what}").into())
                    });
            if let Err(error) = outcome {
                // At the operation the pass refused, else at the module.
                let at = error.at.unwrap_or_else(|| op.location().to_raw());
                // SAFETY: `at` is a location of this context.
                unsafe { crate::rewrite::emit_error(at, &format!("{name}: {}", error.message)) };
                pass.signal_failure();
            }
        },
        TypeId::create(id),
        name,
        name,
        "",
        "builtin.module",
        &[],
    )
}

static PANICS_ID: PassId = PassId;

fn panics(_: &Context, _: OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError> {
    panic!("a bug forced for the test")
}

/// Runs a pass that panics (a bug of ours, forced) on an empty module, then
/// `canonicalize` on it: what the test of the pass manager's backstop calls, which holds
/// a panicking pass to an `Err` (unwinding through MLIR's C++ frames would abort the
/// process) and the context to staying usable.
#[doc(hidden)]
pub fn run_a_panicking_pass() -> (Result<(), LowerError>, Result<(), LowerError>) {
    let session = Session::new().expect("a session starts");
    let mut module = Module::parse(&session.context, "module {}").expect("an empty module parses");
    let spec: PassSpec = (&PANICS_ID, "test-panics", panics);
    let failed = session.run(&mut module, "test", &[spec], "builtin.module()");
    let after = session.run(&mut module, "test", &[], "builtin.module(canonicalize)");
    (failed, after)
}
