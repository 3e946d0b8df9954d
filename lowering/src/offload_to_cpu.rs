//! `convert-offload-to-cpu`: turns each kernel into a host function that runs a range of
//! workgroups (numbered x fastest, then y, then z) and, in each, a range of threads
//! (numbered likewise) in turn:
//!
//! ```text
//! func @k(%group_begin, %group_end, %groups_x, %groups_y, %groups_z, %size_x, %size_y,
//!         %size_z, %shared: memref<?xi8>, <kernel_abi args>) {
//!   (%group_x, %group_y, %group_z) = %group_begin split by %groups_x and %groups_y
//!   scf.for %group = %group_begin to %group_end (carrying %group_x, %group_y, %group_z) {
//!     scf.for %z = 0 to %size_z { scf.for %y = 0 to %size_y { scf.for %x = 0 to %size_x {
//!       scf.execute_region { <the kernel body; each return yields> }
//!     } } }
//!     advance %group_x, wrapping into %group_y, then %group_z
//! ```
//!
//! The innermost loop runs over x with a plain counter, which LLVM's loop passes take as
//! they take any counted loop. The workgroup's position is carried from one workgroup to
//! the next rather than divided out of `%group` each time: a remainder there is one the
//! inner loops' bounds checks would be stated in, and LLVM's range-check elimination
//! (`irce`, see `llvm::compile_object`) gives up on those.
//! `%shared` is the workgroup's shared memory: static arrays at their offsets, dynamic
//! shared memory after them. The runtime calls the function once per share of the
//! launch's workgroups, with every thread. A kernel with barriers is split into phases
//! ([`workgroup_loops`]): the thread loop runs once per phase, each thread up to its
//! next barrier, until no thread stops at one.
//! The subgroup is one thread wide: shuffles and reductions return the thread's own
//! value. [`crate::cpu_host`] builds the host function; this pass connects the kernel to
//! it and moves the kernel's body in.

use crate::cpu_host::Host;
use crate::rewrite::{PassError, refuse};
use crate::{kernel_abi, rewrite, tiles, workgroup_loops};
use melior::Context;
use melior::dialect::arith;
use melior::ir::{OperationRef, Type};
use mlir_sys::*;
use offload_dialect::{OffloadType, ops};

pub const NAME: &str = "convert-offload-to-cpu";

/// Arguments the CPU entry point takes before the kernel's own, in the order of
/// [`offload_mir::abi::CpuLeading`]: `group_begin`, `group_end`, `groups_x`, `groups_y`,
/// `groups_z` (the whole launch's workgroups), `size_x`, `size_y`, `size_z`,
/// `shared`.
pub const LEADING_ARGS: usize = offload_mir::abi::CPU_LEADING_ARGS;

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    // SAFETY: `root` is the live module operation.
    let fixed_size = unsafe { kernel_abi::workgroup_size(root.to_raw())? };
    for func in kernel_abi::kernels(root) {
        // SAFETY: as in `offload_to_gpu::run`: every handle comes from the live module and
        // is used before what it names is erased.
        unsafe {
            // Regions and slices reach memory no other argument does (Rust's borrows:
            // a region is borrowed exclusively, a slice is only read), so their
            // memrefs are `noalias`: LLVM can then vectorise a thread loop that reads
            // a slice or shared memory and writes a region without checking overlap.
            let unshared: Vec<MlirValue> = rewrite::arguments(rewrite::entry_block(func))
                .into_iter()
                .filter(|&a| {
                    matches!(
                        OffloadType::of(context, rewrite::value_type(a)),
                        Ok(Some(OffloadType::Region { .. } | OffloadType::Slice { .. }))
                    )
                })
                .collect();
            // Tiles are multiplied in loops of loads and stores, which the ABI lowers.
            tiles::in_loops(context, OperationRef::from_raw(func), |_| false)?;
            kernel_abi::lower(context, func)?;
            let func_ref = OperationRef::from_raw(func);
            let name = kernel_abi::name(func_ref)?;
            let kernel_args: Vec<(Type, bool)> = rewrite::arguments(rewrite::entry_block(func))
                .into_iter()
                .map(|a| {
                    let noalias = unshared.iter().any(|&u| rewrite::same_value(u, a));
                    (rewrite::value_type(a), noalias)
                })
                .collect();
            let barriers = rewrite::collect(func_ref, ops::BARRIER).len();
            // The block is zeroed whole if any of its arrays may be read unwritten.
            let zeroes_shared = rewrite::collect(func_ref, ops::ALLOC_SHARED)
                .into_iter()
                .any(|op| !rewrite::has_attribute(op, offload_dialect::WRITTEN_BEFORE_READ_ATTR));
            let location = rewrite::location(func);
            let host = Host::build(
                context,
                location,
                &name,
                &kernel_args,
                barriers > 0,
                fixed_size,
                zeroes_shared,
            );
            let arg = |i: usize| host.args[i];
            // Tiles are filled (in loops of loads and stores) once they are views of the
            // workgroup's memory, before the thread positions the loops use are lowered.
            workgroup_memory(context, func_ref, arg(8))?;
            let threads = fixed_size.map(|s| s.iter().product());
            tiles::fill_tiles(context, func_ref, false, threads)?;
            let count = [arg(2), arg(3), arg(4)];
            let (thread, group, size) = (host.thread, host.group, host.size);
            for (op_name, values) in [
                (ops::THREAD_ID, thread),
                (ops::WORKGROUP_ID, group),
                (ops::WORKGROUP_DIM, size),
                (ops::WORKGROUP_COUNT, count),
            ] {
                for op in rewrite::collect(func_ref, op_name) {
                    let value = match rewrite::int_attribute(op, "dim") {
                        Some(d @ 0..=2) => values[d as usize],
                        _ => {
                            return Err(refuse(
                                op,
                                format!("`{op_name}` needs a `dim` of 0, 1 or 2"),
                            ));
                        }
                    };
                    rewrite::replace(op, &[value]);
                }
            }
            one_lane_subgroups(context, func_ref)?;
            if let Some(phases) = &host.phases {
                workgroup_loops::split(context, func, phases)?;
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Inserter::before(context, ret).yield_nothing();
                rewrite::replace(ret, &[]);
            }
            // The body moves into `scf.execute_region`, whose entry block takes no
            // arguments: point the kernel's arguments at the host function's instead.
            rewrite::forward_arguments(rewrite::entry_block(func), &host.args[LEADING_ARGS..]);
            rewrite::move_body(func, host.body);
            if let Some(phases) = &host.phases {
                workgroup_loops::unswitch(context, host.thread_nest, phases.phase, barriers);
            }
            rewrite::insert_before(func, host.func);
            rewrite::erase(func);
        }
    }
    Ok(())
}

/// Replaces each `offload.alloc_shared` with a view into the workgroup's `shared` block.
///
/// # Safety
///
/// `func` is a live kernel; `shared` the host function's `memref<?xi8>` argument.
unsafe fn workgroup_memory(
    context: &Context,
    func: OperationRef<'_, '_>,
    shared: MlirValue,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::ALLOC_SHARED) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let array = kernel_abi::SharedArray::of(context, op)?;
            let b = rewrite::Inserter::before(context, op);
            let start = b.index_constant(array.offset as i64);
            let len = match array.len {
                Some(len) => b.index_constant(len as i64),
                None => {
                    // Dynamic shared memory is the rest of the block (none if the
                    // block ends before it starts).
                    let zero = b.index_constant(0);
                    let total = b.dim(shared, zero);
                    let end = b.arith(arith::maxui, total, start);
                    let rest = b.arith(arith::subi, end, start);
                    let size = b.index_constant(array.element_bytes as i64);
                    b.arith(arith::divui, rest, size)
                }
            };
            let view = b.view(shared, start, &[len], b.memref(array.elem, 1, None));
            rewrite::replace(op, &[view]);
        }
    }
    Ok(())
}

/// The subgroup ops with one lane per subgroup.
///
/// # Safety
///
/// `func` is a live kernel.
unsafe fn one_lane_subgroups(
    context: &Context,
    func: OperationRef<'_, '_>,
) -> Result<(), PassError> {
    // SAFETY (whole function): every handle was just collected from the live kernel and
    // each op is replaced once.
    unsafe {
        for (name, constant) in [(ops::SUBGROUP_SIZE, 1), (ops::SUBGROUP_LANE, 0)] {
            for op in rewrite::collect(func, name) {
                let v = rewrite::Inserter::before(context, op).index_constant(constant);
                rewrite::replace(op, &[v]);
            }
        }
        // With one lane, every other lane is outside the subgroup: a shuffle gives the
        // caller's own value, and a reduction is the value itself.
        for name in [ops::SHUFFLE, ops::SUBGROUP_REDUCE] {
            for op in rewrite::collect(func, name) {
                rewrite::replace(op, &[rewrite::operand(op, 0)]);
            }
        }
        for op in rewrite::collect(func, ops::BALLOT) {
            let b = rewrite::Inserter::before(context, op);
            let v = [b.convert(arith::extui, rewrite::operand(op, 0), b.int(64))];
            rewrite::replace(op, &v);
        }
    }
    Ok(())
}
