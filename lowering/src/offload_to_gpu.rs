//! `convert-offload-to-gpu`: moves each kernel into its own `gpu.module` as a `gpu.func`
//! with the [`kernel_abi`](crate::kernel_abi) signature plus seven last `index`
//! arguments (`offload_mir::abi::GPU_HIDDEN`): the first workgroup's index along x, y
//! and z (0 unless a launch is split across devices or folded into several grids), the
//! launch's dynamic shared memory in bytes, and the whole launch's workgroups along x, y
//! and z. It maps thread positions to `gpu.thread_id`, `gpu.block_id` (+ that base),
//! `gpu.block_dim` and those workgroup counts; shared arrays to workgroup
//! `memref.global`s (dynamic shared memory to `gpu.dynamic_shared_memory`); barriers to
//! `gpu.barrier` (on NVIDIA, in a kernel that can panic, PTX's unaligned `barrier.sync`:
//! see [`unaligned_barrier`]); and subgroup operations to warp shuffles and votes.
//!
//! The module's `offload.subgroup_size` attribute (default 32, an NVIDIA warp; 64 for
//! AMD's CDNA wavefronts) sets the subgroup width, and `offload.vendor = "amd"` asks for
//! ballots as ROCDL's rather than NVVM's.
//!
//! Float multiplies, adds and subtracts are marked `contract` (fusable into FMAs) unless
//! the kernel carries `offload.no_fp_contract`.

use crate::rewrite::{PassError, refuse};
use crate::{kernel_abi, rewrite, tiles};
use melior::Context;
use melior::dialect::arith;
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{FunctionType, MemRefType};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, Operation, OperationRef, Region, RegionLike,
    Type,
};
use mlir_sys::*;
use offload_dialect::build::{Combine, ShuffleMode};
use offload_dialect::ops;

pub const NAME: &str = "convert-offload-to-gpu";

/// What the module's attributes say of the GPU the kernels are for.
#[derive(Copy, Clone)]
struct Subgroups {
    width: i64,
    amd: bool,
}

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    // SAFETY: `root` is the live module operation.
    let subgroups_of = unsafe {
        Subgroups {
            width: rewrite::int_attribute(root.to_raw(), SUBGROUP_SIZE_ATTR).unwrap_or(WARP),
            amd: rewrite::string_attribute(root.to_raw(), VENDOR_ATTR).as_deref() == Some("amd"),
        }
    };
    // SAFETY: as above.
    let whole_grid = unsafe { rewrite::has_attribute(root.to_raw(), WHOLE_GRID_ATTR) };
    // SAFETY: as above.
    let threads = unsafe { kernel_abi::workgroup_size(root.to_raw())? }.map(|s| s.iter().product());
    if ![32, 64].contains(&subgroups_of.width) {
        return Err(refuse(
            root.to_raw(),
            format!(
                "`{SUBGROUP_SIZE_ATTR}` must be 32 or 64, not {}",
                subgroups_of.width
            ),
        ));
    }
    for func in kernel_abi::kernels(root) {
        // SAFETY: `func` and everything collected under it belong to the live module, and
        // each handle is used before the operation it names is erased.
        unsafe {
            let may_panic = !rewrite::collect(OperationRef::from_raw(func), ops::PANIC).is_empty();
            if !subgroups_of.amd {
                end_panic_reports(context, OperationRef::from_raw(func))?;
            }
            // Tiles the tensor cores do not take are multiplied in loops of loads and
            // stores, which the kernel ABI then lowers; AMD's matrix cores are not used
            // yet.
            let amd = subgroups_of.amd;
            tiles::in_loops(context, OperationRef::from_raw(func), |elem| {
                !amd && tiles::nvidia_tensor_cores(elem)
            })?;
            kernel_abi::lower(context, func)?;
            let func_ref = OperationRef::from_raw(func);
            // Hidden last arguments: where this part of the launch starts (workgroup
            // positions are offset by it: a launch split across devices, or folded into
            // grids the device can run) and the whole launch's workgroups.
            let entry = rewrite::entry_block(func);
            let index = melior::ir::Type::index(context);
            // The hidden index parameters, in the ABI's order.
            use offload_mir::abi::{GPU_HIDDEN, GpuHidden};
            let hidden = GPU_HIDDEN.map(|h| (h, rewrite::add_argument(entry, index, func)));
            let parameter = |kind: GpuHidden| {
                hidden
                    .iter()
                    .find(|(h, _)| *h == kind)
                    .map(|(_, v)| *v)
                    .expect("every hidden parameter is declared")
            };
            let group_base = [0, 1, 2].map(|d| parameter(GpuHidden::GroupBase(d)));
            let dynamic_bytes = parameter(GpuHidden::DynamicSharedBytes);
            let groups = [0, 1, 2].map(|d| parameter(GpuHidden::Workgroups(d)));
            rewrite::set_function_type(context, func, entry);
            let globals = workgroup_memory(context, func_ref, dynamic_bytes)?;
            tiles::fill_tiles(context, func_ref, true, threads)?;
            tiles::on_tensor_cores(context, func_ref, threads)?;
            subgroups(context, func_ref, subgroups_of)?;
            if !rewrite::has_attribute(func, offload_dialect::NO_FP_CONTRACT_ATTR) {
                allow_contraction(context, func_ref);
            }
            for op in rewrite::collect(func_ref, ops::BARRIER) {
                let b = rewrite::Inserter::before(context, op);
                if may_panic && !subgroups_of.amd {
                    unaligned_barrier(&b)?;
                } else {
                    b.op("gpu.barrier", &[], &[], &[])?;
                }
                rewrite::replace(op, &[]);
            }
            for (name, gpu) in [
                (ops::THREAD_ID, "gpu.thread_id"),
                (ops::WORKGROUP_ID, "gpu.block_id"),
                (ops::WORKGROUP_DIM, "gpu.block_dim"),
                (ops::WORKGROUP_COUNT, "the hidden count"),
            ] {
                for op in rewrite::collect(func_ref, name) {
                    let dim = rewrite::int_attribute(op, "dim")
                        .ok_or_else(|| refuse(op, "thread position ops need a `dim`"))?;
                    let axis = ["x", "y", "z"]
                        .get(dim as usize)
                        .ok_or_else(|| refuse(op, "`dim` must be 0, 1 or 2"))?;
                    let b = rewrite::Inserter::before(context, op);
                    if name == ops::WORKGROUP_COUNT {
                        rewrite::replace(op, &[groups[dim as usize]]);
                        continue;
                    }
                    let attr = b.attr(&format!("#gpu<dim {axis}>"));
                    let mut v = b.op(gpu, &[], &[b.index()], &[("dimension", attr)])?;
                    if name == ops::WORKGROUP_ID && !whole_grid {
                        let base = group_base[dim as usize];
                        v = vec![b.arith(arith::addi, v[0], base)];
                    }
                    rewrite::replace(op, &v);
                }
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Inserter::before(context, ret).op("gpu.return", &[], &[], &[])?;
                rewrite::replace(ret, &[]);
            }

            let name = kernel_abi::name(func_ref)?;
            let location = rewrite::location(func);
            let (module, gpu_func) = gpu_module(context, location, &name, func, globals);
            rewrite::move_body(func, gpu_func);
            rewrite::insert_before(func, module);
            rewrite::erase(func);
        }
    }
    let unit = Attribute::unit(context);
    // SAFETY: `root` is the live module operation.
    unsafe { rewrite::set_attribute(root.to_raw(), "gpu.container_module", unit) };
    Ok(())
}

/// Threads per warp, the subgroup of NVIDIA GPUs, and the width without
/// [`SUBGROUP_SIZE_ATTR`].
pub const WARP: i64 = offload_mir::abi::NVIDIA_WARP as i64;

/// The module attribute giving the subgroup width the kernels are lowered for.
pub const SUBGROUP_SIZE_ATTR: &str = "offload.subgroup_size";

/// The module attribute naming the GPU vendor (`"amd"`; NVIDIA without it).
pub const VENDOR_ATTR: &str = "offload.vendor";

/// The module attribute saying that every launch runs the whole grid in one piece
/// (`GpuTarget::whole_grid`): a workgroup's index is then its block's, without the hidden
/// group base.
pub const WHOLE_GRID_ATTR: &str = "offload.whole_grid";

/// The kernel's `gpu.module`, holding the workgroup arrays' `globals` and a `gpu.func`
/// kernel of `func`'s name and argument types, whose body is left empty; returns the
/// module and that function.
///
/// # Safety
///
/// `func` is a live function.
unsafe fn gpu_module<'c>(
    context: &'c Context,
    location: Location<'c>,
    name: &str,
    func: MlirOperation,
    globals: Vec<Operation<'c>>,
) -> (MlirOperation, MlirOperation) {
    // SAFETY: per the contract.
    let inputs: Vec<Type> = unsafe { rewrite::arguments(rewrite::entry_block(func)) }
        .into_iter()
        // SAFETY: the arguments were just read from the live function.
        .map(|a| unsafe { rewrite::value_type(a) })
        .collect();
    let named = |symbol: &str| {
        (
            Identifier::new(context, "sym_name"),
            StringAttribute::new(context, symbol).into(),
        )
    };
    let function_type = FunctionType::new(context, &inputs, &[]);
    let kernel = OperationBuilder::new("gpu.func", location)
        .add_attributes(&[
            named(name),
            (
                Identifier::new(context, "function_type"),
                TypeAttribute::new(function_type.into()).into(),
            ),
            (
                Identifier::new(context, "gpu.kernel"),
                Attribute::unit(context),
            ),
        ])
        .add_regions([Region::new()])
        .build()
        .expect("a `gpu.func` of a name, a type and a region is valid");
    let body = Block::new(&[]);
    for global in globals {
        body.append_operation(global);
    }
    let kernel = body.append_operation(kernel).to_raw();
    let contents = Region::new();
    contents.append_block(body);
    let module = OperationBuilder::new("gpu.module", location)
        .add_attributes(&[named(&format!("{name}_module"))])
        .add_regions([contents])
        .build()
        .expect("a `gpu.module` of a name and a region is valid");
    (module.into_raw(), kernel)
}

/// Replaces each `offload.alloc_shared` with a view of workgroup memory, zeroed at the
/// kernel's start ([`zero_fill`]) unless the verifier proved that no read sees a slot no
/// thread wrote (`offload.written_before_read`); returns the `memref.global` declarations the kernel's
/// `gpu.module` needs.
///
/// # Safety
///
/// `func` is a live kernel; `dynamic_bytes` its dynamic-shared-memory-size argument.
unsafe fn workgroup_memory<'c>(
    context: &'c Context,
    func: OperationRef<'_, '_>,
    dynamic_bytes: MlirValue,
) -> Result<Vec<Operation<'c>>, PassError> {
    // A dialect attribute without a C constructor, so given by its text.
    let space = Attribute::parse(context, "#gpu.address_space<workgroup>")
        .expect("the gpu dialect is loaded");
    let kernel = kernel_abi::name(func)?;
    let mut globals = Vec::new();
    // What the zero fill covers: each static array's view, its element type and length;
    // the dynamic shared memory through its first view.
    let mut statics = Vec::new();
    let mut dynamic = None;
    let mut after_arrays = None;
    for (k, op) in rewrite::collect(func, ops::ALLOC_SHARED)
        .into_iter()
        .enumerate()
    {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let shared = kernel_abi::SharedArray::of(context, op)?;
            after_arrays = Some(rewrite::next_operation(op));
            let needs_zeros =
                !rewrite::has_attribute(op, offload_dialect::WRITTEN_BEFORE_READ_ATTR);
            let b = rewrite::Inserter::before(context, op);
            let view_ty = b.memref(shared.elem, 1, Some(space));
            let view = match shared.len {
                Some(len) => {
                    // Named by kernel, so the kernels of one file can share a module.
                    let symbol = format!("__offload_shared_{kernel}_{k}");
                    let ty: Type =
                        MemRefType::new(shared.elem, &[len as i64], None, Some(space)).into();
                    // A declaration (no `initial_value`): the target gives it storage.
                    let attribute =
                        |name: &str, value: Attribute<'c>| (Identifier::new(context, name), value);
                    let text = |t: &str| StringAttribute::new(context, t).into();
                    let align = offload_mir::SHARED_ALIGN as i64;
                    let global = OperationBuilder::new("memref.global", b.location)
                        .add_attributes(&[
                            attribute("sym_name", text(&symbol)),
                            attribute("sym_visibility", text("private")),
                            attribute("type", TypeAttribute::new(ty).into()),
                            attribute("alignment", b.i64_attr(align)),
                        ])
                        .build()
                        .expect("a workgroup array's global is valid");
                    globals.push(global);
                    let global = b.get_global(&symbol, ty);
                    let view = b.cast(global, view_ty);
                    if needs_zeros {
                        let len = b.index_constant(len as i64);
                        statics.push((view, shared.elem, len));
                    }
                    view
                }
                None => {
                    // The driver places dynamic shared memory after the static arrays.
                    let bytes = b.memref(b.int(8), 1, Some(space));
                    let raw = b.op("gpu.dynamic_shared_memory", &[], &[bytes], &[])?[0];
                    let size = b.index_constant(shared.element_bytes as i64);
                    let len = b.arith(arith::divui, dynamic_bytes, size);
                    let start = b.index_constant(0);
                    let view = b.view(raw, start, &[len], view_ty);
                    // Every view has elements of one size (the verifier sees to it), so
                    // filling one fills each view's slots, and no byte past them is read.
                    if needs_zeros {
                        dynamic.get_or_insert((view, shared.elem, len));
                    }
                    view
                }
            };
            rewrite::replace(op, &[view]);
        }
    }
    if let Some(anchor) = after_arrays {
        // SAFETY: `anchor` follows the last array's view in the live kernel's entry block,
        // before any of the kernel's own operations; `func` is live.
        unsafe {
            let b = rewrite::Inserter::before(context, anchor);
            let arrays: Vec<_> = statics.into_iter().chain(dynamic).collect();
            if arrays.is_empty() {
                return Ok(globals);
            }
            let owned =
                rewrite::has_attribute(func.to_raw(), offload_dialect::FIRST_PHASE_OWNS_SLOTS_ATTR);
            zero_fill(&b, &arrays, !owned)?;
        }
    }
    Ok(globals)
}

/// Zeroes the workgroup's shared memory: a slot no thread of the workgroup wrote reads
/// as zero, the one value the interpreter and the CPU backend give it too. Workgroup
/// memory starts out undefined (LLVM `undef`), and a branch or an index computed from it
/// would be undefined behaviour.
///
/// Each of the `arrays` (a view, its element type and its length; dynamic shared memory
/// through one of its views) is zeroed by every thread at its own slots: elements `rank`,
/// `rank + threads`, ..., the slots `write` and `write_nth` give it. Unless `wait` asks
/// for a barrier after the fill, the kernel must touch shared memory only at its own
/// slots before its first barrier ([`offload_dialect::FIRST_PHASE_OWNS_SLOTS_ATTR`]):
/// then no thread reaches a slot another is still zeroing, and a thread's own zero store
/// followed by its write of the same slot is one LLVM may drop.
fn zero_fill<'c>(
    b: &rewrite::Inserter<'c>,
    arrays: &[(MlirValue, Type<'c>, MlirValue)],
    wait: bool,
) -> Result<(), PassError> {
    let position = |name: &str, axis: &str| {
        let dimension = b.attr(&format!("#gpu<dim {axis}>"));
        b.op(name, &[], &[b.index()], &[("dimension", dimension)])
            .map(|v| v[0])
    };
    let (tx, ty, tz) = (
        position("gpu.thread_id", "x")?,
        position("gpu.thread_id", "y")?,
        position("gpu.thread_id", "z")?,
    );
    let (dx, dy, dz) = (
        position("gpu.block_dim", "x")?,
        position("gpu.block_dim", "y")?,
        position("gpu.block_dim", "z")?,
    );
    // rank = (tz * dy + ty) * dx + tx; threads = dx * dy * dz.
    let plane = b.arith(arith::muli, tz, dy);
    let row = b.arith(arith::addi, plane, ty);
    let rows = b.arith(arith::muli, row, dx);
    let rank = b.arith(arith::addi, rows, tx);
    let dxy = b.arith(arith::muli, dx, dy);
    let threads = b.arith(arith::muli, dxy, dz);
    for &(view, elem, len) in arrays {
        b.zero_fill(view, elem, [rank, len, threads]);
    }
    if wait {
        b.op("gpu.barrier", &[], &[], &[])?;
    }
    Ok(())
}

/// Lowers the subgroup ops to `gpu.shuffle`, `gpu.lane_id` and a ballot (`nvvm.vote.sync`
/// or `rocdl.ballot`); reductions are butterfly shuffle steps (five for 32 lanes, six for
/// 64).
///
/// # Safety
///
/// `func` is a live kernel.
unsafe fn subgroups(
    context: &Context,
    func: OperationRef<'_, '_>,
    Subgroups { width, amd }: Subgroups,
) -> Result<(), PassError> {
    // SAFETY (whole function): every handle was just collected from the live kernel and
    // each op is replaced once.
    unsafe {
        for op in rewrite::collect(func, ops::SUBGROUP_SIZE) {
            let v = rewrite::Inserter::before(context, op).index_constant(width);
            rewrite::replace(op, &[v]);
        }
        for op in rewrite::collect(func, ops::SUBGROUP_LANE) {
            let b = rewrite::Inserter::before(context, op);
            let v = b.op("gpu.lane_id", &[], &[b.index()], &[])?;
            rewrite::replace(op, &v);
        }
        for op in rewrite::collect(func, ops::SHUFFLE) {
            let mode = rewrite::int_attribute(op, "mode")
                .and_then(ShuffleMode::from_code)
                .ok_or_else(|| refuse(op, "`offload.shuffle` needs `mode` 0 or 1"))?;
            let b = rewrite::Inserter::before(context, op);
            let value = rewrite::operand(op, 0);
            let v = shuffle(&b, value, rewrite::operand(op, 1), mode, width)?;
            rewrite::replace(op, &[v]);
        }
        for op in rewrite::collect(func, ops::SUBGROUP_REDUCE) {
            let combine = rewrite::string_attribute(op, "combine")
                .and_then(|name| Combine::from_name(&name))
                .ok_or_else(|| {
                    refuse(
                        op,
                        "`offload.subgroup_reduce` needs a `combine`: `arith.addf`, `arith.addi`, `arith.minnumf`, `arith.minsi`, `arith.minui`, `arith.maxnumf`, `arith.maxsi` or `arith.maxui`",
                    )
                })?;
            let b = rewrite::Inserter::before(context, op);
            let ty = rewrite::value_type(rewrite::operand(op, 0));
            let mut acc = rewrite::operand(op, 0);
            let mut offset = width / 2;
            while offset > 0 {
                let lane = b.constant(b.int(32), offset);
                let other = shuffle(&b, acc, lane, ShuffleMode::Xor, width)?;
                acc = b.op(combine.name(), &[acc, other], &[ty], &[])?[0];
                offset /= 2;
            }
            rewrite::replace(op, &[acc]);
        }
        for op in rewrite::collect(func, ops::BALLOT) {
            let b = rewrite::Inserter::before(context, op);
            if amd {
                // One bit per lane of the wavefront.
                let bits = b.int(width as u32);
                let mask = b.op("rocdl.ballot", &[rewrite::operand(op, 0)], &[bits], &[])?[0];
                let v = if width == 64 {
                    vec![mask]
                } else {
                    vec![b.convert(arith::extui, mask, b.int(64))]
                };
                rewrite::replace(op, &v);
                continue;
            }
            let all_lanes = b.constant(b.int(32), -1);
            let mask = b.op(
                "nvvm.vote.sync",
                &[all_lanes, rewrite::operand(op, 0)],
                &[b.int(32)],
                &[("kind", b.attr("#nvvm<vote_sync_kind ballot>"))],
            )?[0];
            let v = [b.convert(arith::extui, mask, b.int(64))];
            rewrite::replace(op, &v);
        }
    }
    Ok(())
}

/// `value` from the lane `lane` selects under `mode` (`idx` or `xor`); the caller's own
/// value where that lane is outside the subgroup of `width` lanes.
/// Gives the globals through which MLIR's GPU-to-NVVM and GPU-to-ROCDL conversions reach
/// dynamic shared memory (`__dynamic_shmem__N`, zero-sized arrays) external linkage, as
/// CUDA's `extern __shared__` has. The conversions make them internal: a zero-sized
/// internal array is a static one of no bytes, which ptxas placed over the kernel's
/// static shared arrays (seen: a kernel with both read its `Shared` tile's slots as its
/// `DynShared` values, and racecheck reported the two writes racing), and through which
/// every access is out of bounds to LLVM. An external one is what both backends place
/// after the static arrays, where the driver puts the launch's dynamic shared memory.
pub fn extern_dynamic_shared(context: &Context, root: OperationRef<'_, '_>) {
    let external =
        Attribute::parse(context, "#llvm.linkage<external>").expect("the LLVM dialect is loaded");
    for op in rewrite::collect(root, "llvm.mlir.global") {
        // SAFETY: `op` was just collected from the live module.
        unsafe {
            if rewrite::string_attribute(op, "sym_name")
                .is_some_and(|name| name.starts_with("__dynamic_shmem__"))
            {
                rewrite::set_attribute(op, "linkage", external);
            }
        }
    }
}

/// A workgroup barrier that threads may reach while others of their warp are still on
/// the way to a panic's `exit` (PTX `barrier.sync 0`, not `gpu.barrier`'s `bar.sync 0`):
/// for the kernels that can panic. An aligned `bar.sync` asks that the whole warp execute
/// it together, and a warp whose thread took a failed check's branch is divergent there
/// until that thread exits (undefined; compute-sanitizer's synccheck reports "Divergent
/// thread(s) in warp"); the unaligned barrier waits for the warp's threads that have not
/// exited. It is LLVM's intrinsic, which LLVM knows to be convergent.
fn unaligned_barrier(b: &rewrite::Inserter<'_>) -> Result<(), PassError> {
    let id = b.constant(b.int(32), 0);
    b.call_intrinsic("llvm.nvvm.barrier.cta.sync.all", &[id], &[])?;
    Ok(())
}

/// The text of the inline-assembly comment that ends each panic report on NVIDIA GPUs.
pub const PANIC_SITE_MARKER: &str = "// offload panic site";

/// Removes the site markers [`end_panic_reports`] left (not the `exit`s), so that the reports merge again: for a
/// kernel compiled to a register budget (`resident_workgroups`), where one shared report
/// costs fewer registers than a report per check (measured: the tiled matrix product at
/// 32 registers spilled with a report per check, and ran 17% slower).
pub fn unmark_panic_sites(root: OperationRef<'_, '_>) {
    for op in rewrite::collect(root, "llvm.inline_asm") {
        // SAFETY: `op` was just collected from the live module, and is erased only once.
        unsafe {
            if rewrite::string_attribute(op, "asm_string")
                .is_some_and(|s| s.starts_with(PANIC_SITE_MARKER))
            {
                rewrite::erase(op);
            }
        }
    }
}

/// Ends each panic report (what `offload.panic` becomes) with two inline-assembly
/// statements (PTX only):
///
/// - a comment naming its site. MLIR's canonicalizer merges blocks that differ only in
///   values from outside them, and the reports of a kernel's checks differ only in
///   constants: merged, their sites and values become block arguments, and every check
///   then copies them into registers on the path that does not panic (three moves per
///   bounds check). An asm statement that differs per site keeps each report in a block
///   of its own, and LLVM neither moves nor merges it.
/// - `exit`: the panicking thread ends there. Otherwise its report branches to the
///   kernel's one `ret`, and the thread waits there, diverged but not exited, while the
///   rest of its warp goes on to a barrier or a warp shuffle: a barrier a warp reaches
///   divergent is undefined (compute-sanitizer's synccheck reported "Divergent thread(s)
///   in warp" on a safe kernel whose thread 0 failed a check before a barrier). An exited
///   thread is one `bar.sync` and the `.sync` shuffles no longer wait for.
///
/// # Safety
///
/// `func` must be a live kernel.
unsafe fn end_panic_reports(
    context: &Context,
    func: OperationRef<'_, '_>,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::PANIC) {
        // SAFETY: `op` was just collected from the live kernel; a panic is followed by
        // the block's terminator.
        unsafe {
            let site = rewrite::int_attribute(op, "site")
                .ok_or_else(|| refuse(op, "`offload.panic` needs an integer `site`"))?;
            let next = rewrite::next_operation(op);
            let b = rewrite::Inserter::before(context, next);
            for asm in [format!("{PANIC_SITE_MARKER} {site}"), "exit;".to_string()] {
                b.op(
                    "llvm.inline_asm",
                    &[],
                    &[],
                    &[
                        ("asm_string", StringAttribute::new(context, &asm).into()),
                        ("constraints", StringAttribute::new(context, "").into()),
                        ("has_side_effects", Attribute::unit(context)),
                    ],
                )?;
            }
        }
    }
    Ok(())
}

/// Marks the kernel's float multiplies, adds and subtracts `contract`, so the GPU
/// backend may fuse a multiply and the add or subtract that uses it into one fused
/// multiply-add, rounded once (what nvcc does by default, and what makes a dot product's
/// inner loop one instruction per element).
fn allow_contraction(context: &Context, func: OperationRef<'_, '_>) {
    let contract = melior::ir::Attribute::parse(context, "#arith.fastmath<contract>")
        .expect("`#arith.fastmath<contract>` parses");
    for name in ["arith.mulf", "arith.addf", "arith.subf"] {
        for op in rewrite::collect(func, name) {
            // SAFETY: `op` was just collected from the live kernel.
            unsafe { rewrite::set_attribute(op, "fastmath", contract) };
        }
    }
}

/// `gpu.shuffle` of `value` over `width` lanes; a lane out of range keeps its own value
/// (the shuffle's validity bit picks it).
fn shuffle(
    b: &rewrite::Inserter<'_>,
    value: MlirValue,
    lane: MlirValue,
    mode: ShuffleMode,
    width: i64,
) -> Result<MlirValue, PassError> {
    // SAFETY: `value` is a live SSA value of the kernel being converted.
    let ty = unsafe { rewrite::value_type(value) };
    let width = b.constant(b.int(32), width);
    let mode = match mode {
        ShuffleMode::Lane => "#gpu<shuffle_mode idx>",
        ShuffleMode::Xor => "#gpu<shuffle_mode xor>",
    };
    let r = b.op(
        "gpu.shuffle",
        &[value, lane, width],
        &[ty, b.int(1)],
        &[("mode", b.attr(mode))],
    )?;
    Ok(b.select(r[1], r[0], value))
}
