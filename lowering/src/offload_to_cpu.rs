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
//! value.

use crate::rewrite::{PassError, refuse};
use crate::{kernel_abi, rewrite, workgroup_loops};
use melior::{Context, ir::OperationRef};
use mlir_sys::*;
use offload_dialect::ops;

pub const NAME: &str = "convert-offload-to-cpu";

/// Arguments the CPU entry point takes before the kernel's own, in the order of
/// [`offload_mir::abi::CpuLeading`]: `group_begin`, `group_end`, `groups_x`, `groups_y`,
/// `groups_z` (the whole launch's workgroups), `size_x`, `size_y`, `size_z`,
/// `shared`.
pub const LEADING_ARGS: usize = offload_mir::abi::CPU_LEADING_ARGS;

/// The module attribute giving the threads per workgroup (`array<i64: x, y, z>`) of
/// every launch the code is for (`CpuTarget::workgroup_size`); without it, any.
pub const WORKGROUP_SIZE_ATTR: &str = "offload.workgroup_size";

/// The workgroup size the module attribute [`WORKGROUP_SIZE_ATTR`] gives, if any.
///
/// # Safety
///
/// `root` is the live module operation.
unsafe fn workgroup_size(root: MlirOperation) -> Result<Option<[i64; 3]>, PassError> {
    // SAFETY: per the contract.
    unsafe {
        if !rewrite::has_attribute(root, WORKGROUP_SIZE_ATTR) {
            return Ok(None);
        }
        match rewrite::i64_array_attribute(root, WORKGROUP_SIZE_ATTR).as_deref() {
            Some(&[x, y, z]) if x > 0 && y > 0 && z > 0 => Ok(Some([x, y, z])),
            _ => Err(refuse(
                root,
                format!("`{WORKGROUP_SIZE_ATTR}` must be `array<i64: x, y, z>` of sizes above 0"),
            )),
        }
    }
}

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    // SAFETY: `root` is the live module operation.
    let fixed_size = unsafe { workgroup_size(root.to_raw())? };
    for func in kernel_abi::kernels(root) {
        // SAFETY: as in `offload_to_gpu::run`: every handle comes from the live module and
        // is used before what it names is erased.
        unsafe {
            kernel_abi::lower(context, func)?;
            let func_ref = OperationRef::from_raw(func);
            let (name, args) = kernel_abi::signature(func_ref)?;
            let barriers = rewrite::collect(func_ref, ops::BARRIER).len();
            let phased = barriers > 0;
            let skeleton = skeleton(&name, &args, phased);
            let host = rewrite::parse_operation(context, &skeleton, NAME)?;
            let host_ref = OperationRef::from_raw(host);
            let host_entry = rewrite::entry_block(host);
            let result = |op: MlirOperation| rewrite::result(op, 0);
            // The thread's (x, y, z) are the counters of the three thread loops (in
            // pre-order: the group loop, then z, y, x); the workgroup's, the group
            // loop's carried values after its counter.
            let loops = rewrite::collect(host_ref, "scf.for");
            let carried = rewrite::arguments(rewrite::entry_block(loops[0]));
            let group = [carried[1], carried[2], carried[3]];
            let counter = |l: usize| rewrite::arguments(rewrite::entry_block(loops[l]))[0];
            let thread = [counter(3), counter(2), counter(1)];
            // The thread's linear index, `(z * size_y + y) * size_x + x`: the innermost
            // loop's addition.
            let linear =
                result(rewrite::collect(OperationRef::from_raw(loops[3]), "arith.addi")[0]);
            let host_args = rewrite::arguments(host_entry);
            let arg = |i: usize| host_args[i];
            let count = [arg(2), arg(3), arg(4)];
            let mut size = [arg(5), arg(6), arg(7)];
            if let Some(fixed) = fixed_size {
                // Compiled for one workgroup size: the size arguments are these
                // constants, so the thread loops' trip counts are known.
                let b = rewrite::Inserter::before(context, rewrite::first_operation(host_entry));
                for (d, &s) in fixed.iter().enumerate() {
                    let constant = b.index_constant(s);
                    mlirValueReplaceAllUsesOfWith(size[d], constant);
                    size[d] = constant;
                }
            }
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
            workgroup_memory(context, func_ref, arg(8))?;
            one_lane_subgroups(context, func_ref)?;
            if phased {
                let memory = |name| rewrite::collect(host_ref, name);
                let phases = workgroup_loops::Phases {
                    phase: result(memory("memref.alloca")[0]),
                    stopped: result(memory("memref.alloc")[0]),
                    thread: linear,
                    threads: result(rewrite::collect(host_ref, "arith.muli")[2]),
                    allocate_before: rewrite::collect(host_ref, "scf.for")[0],
                    free_before: rewrite::collect(host_ref, "func.return")[0],
                };
                workgroup_loops::split(context, func, &phases)?;
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Inserter::before(context, ret).op("scf.yield", &[], &[], &[]);
                rewrite::replace(ret, &[]);
            }
            // The body moves into `scf.execute_region`, whose entry block takes no
            // arguments: point the kernel's arguments at the host function's instead.
            rewrite::forward_arguments(rewrite::entry_block(func), &host_args[LEADING_ARGS..]);
            let execute = rewrite::collect(host_ref, "scf.execute_region")[0];
            rewrite::move_body(func, execute);
            if phased {
                let phase = result(rewrite::collect(host_ref, "memref.alloca")[0]);
                workgroup_loops::unswitch(context, loops[1], phase, barriers);
            }
            rewrite::insert_before(func, host);
            rewrite::erase(func);
        }
    }
    Ok(())
}

/// The host function's text with an empty kernel body (`scf.execute_region`); see the
/// module docs. A `phased` kernel (one with barriers, see [`workgroup_loops`]) runs its
/// threads once per phase, with the phase and each thread's `stopped` barrier in memory;
/// after a phase the workgroup goes on to the barrier its threads stopped at (the
/// largest, as every thread that stops stops at the same one), or ends if none did.
fn skeleton(name: &str, args: &[String], phased: bool) -> String {
    let pick = |text: &'static str| if phased { text } else { "" };
    let state = pick(
        "
  %p0 = arith.constant 0 : i32
  %phase = memref.alloca() : memref<i32>
  %stopped = memref.alloc(%threads) : memref<?xi32>",
    );
    let phases_begin = pick(
        "
    memref.store %p0, %phase[] : memref<i32>
    scf.while : () -> () {",
    );
    let phases_end = pick(
        "
    %next = scf.for %t = %c0 to %threads step %c1 iter_args(%at = %p0) -> (i32) {
      %here = memref.load %stopped[%t] : memref<?xi32>
      %later = arith.maxui %at, %here : i32
      scf.yield %later : i32
    }
    memref.store %next, %phase[] : memref<i32>
    %more = arith.cmpi ne, %next, %p0 : i32
    scf.condition(%more)
    } do {
      scf.yield
    }",
    );
    let free = pick(
        "
  memref.dealloc %stopped : memref<?xi32>",
    );
    // The order of the `arith.muli`s (the third is `%threads`), of the `scf.for`s and of
    // the innermost loop's `arith.addi` (the linear index) is what `run` looks up.
    format!(
        "func.func @{name}(%group_begin: index, %group_end: index, %groups_x: index, %groups_y: index, %groups_z: index, %size_x: index, %size_y: index, %size_z: index, %shared: memref<?xi8>, {}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %groups_xy = arith.muli %groups_x, %groups_y : index
  %size_xy = arith.muli %size_x, %size_y : index
  %threads = arith.muli %size_xy, %size_z : index{state}
  %first_x = arith.remui %group_begin, %groups_x : index
  %first_yz = arith.divui %group_begin, %groups_x : index
  %first_y = arith.remui %first_yz, %groups_y : index
  %first_z = arith.divui %group_begin, %groups_xy : index
  %last:3 = scf.for %group = %group_begin to %group_end step %c1 iter_args(%group_x = %first_x, %group_y = %first_y, %group_z = %first_z) -> (index, index, index) {{{phases_begin}
    scf.for %z = %c0 to %size_z step %c1 {{
      %plane = arith.muli %z, %size_y : index
      scf.for %y = %c0 to %size_y step %c1 {{
        %plane_row = arith.addi %plane, %y : index
        %row = arith.muli %plane_row, %size_x : index
        scf.for %x = %c0 to %size_x step %c1 {{
          %linear = arith.addi %row, %x : index
          scf.execute_region {{
            scf.yield
          }}
        }}
      }}
    }}{phases_end}
    %x1 = arith.addi %group_x, %c1 : index
    %wrap_x = arith.cmpi eq, %x1, %groups_x : index
    %y1 = arith.addi %group_y, %c1 : index
    %wrap_y = arith.cmpi eq, %y1, %groups_y : index
    %z1 = arith.addi %group_z, %c1 : index
    %next_x = arith.select %wrap_x, %c0, %x1 : index
    %carry_y = arith.select %wrap_y, %c0, %y1 : index
    %next_y = arith.select %wrap_x, %carry_y, %group_y : index
    %carry_z = arith.select %wrap_y, %z1, %group_z : index
    %next_z = arith.select %wrap_x, %carry_z, %group_z : index
    scf.yield %next_x, %next_y, %next_z : index, index, index
  }}{free}
  return
}}",
        args.join(", ")
    )
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
            let array = kernel_abi::SharedArray::of(op)?;
            let elem = &array.elem;
            let b = rewrite::Inserter::before(context, op);
            let index = b.index();
            let start = b.index_constant(array.offset as i64);
            let len = match array.len {
                Some(len) => b.index_constant(len as i64),
                None => {
                    // Dynamic shared memory is the rest of the block (none if the
                    // block ends before it starts).
                    let zero = b.index_constant(0);
                    let total = b.op("memref.dim", &[shared, zero], &[index], &[])[0];
                    let end = b.op("arith.maxui", &[total, start], &[index], &[])[0];
                    let rest = b.op("arith.subi", &[end, start], &[index], &[])[0];
                    let size = b.index_constant(array.element_bytes as i64);
                    b.op("arith.divui", &[rest, size], &[index], &[])[0]
                }
            };
            let view = b.op(
                "memref.view",
                &[shared, start, len],
                &[b.ty(&format!("memref<?x{elem}>"))],
                &[],
            );
            rewrite::replace(op, &view);
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
            let v = b.op("arith.extui", &[rewrite::operand(op, 0)], &[b.int(64)], &[]);
            rewrite::replace(op, &v);
        }
    }
    Ok(())
}
