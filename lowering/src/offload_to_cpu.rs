//! `convert-offload-to-cpu`: turns each kernel into a host function that runs a range of
//! workgroups (numbered row by row), every thread of each in turn:
//!
//! ```text
//! func @k(%group_begin, %group_end, %groups_x, %size_x, %size_y, <kernel_abi args>) {
//!   scf.for %group = %group_begin to %group_end {
//!     (%group_x, %group_y) = (%group % %groups_x, %group / %groups_x)
//!     scf.for %thread_y = 0 to %size_y {
//!       scf.for %thread_x = 0 to %size_x {
//!         scf.execute_region { <the kernel body; each return yields> }
//! ```
//!
//! The runtime splits the launch's workgroups among host threads and calls this once per
//! share.

use crate::{kernel_abi, rewrite};
use melior::{Context, ir::OperationRef};
use mlir_sys::*;
use offload_dialect::ops;

pub const NAME: &str = "convert-offload-to-cpu";

/// Arguments the CPU entry point takes before the kernel's own: `group_begin`,
/// `group_end`, `groups_x`, `size_x`, `size_y`.
pub const LEADING_ARGS: usize = 5;

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), String> {
    for func in kernel_abi::kernels(root) {
        // SAFETY: as in `offload_to_gpu::run`: every handle comes from the live module and
        // is used before what it names is erased.
        unsafe {
            kernel_abi::lower(context, func)?;
            let func_ref = OperationRef::from_raw(func);
            let (name, args) = kernel_abi::signature(func_ref)?;
            let skeleton = format!(
                "func.func @{name}(%group_begin: index, %group_end: index, %groups_x: index, %size_x: index, %size_y: index, {}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %group = %group_begin to %group_end step %c1 {{
    %group_x = arith.remui %group, %groups_x : index
    %group_y = arith.divui %group, %groups_x : index
    scf.for %thread_y = %c0 to %size_y step %c1 {{
      scf.for %thread_x = %c0 to %size_x step %c1 {{
        scf.execute_region {{
          scf.yield
        }}
      }}
    }}
  }}
  return
}}",
                args.join(", ")
            );
            let host = rewrite::parse_operation(context, &skeleton, NAME)?;
            let host_ref = OperationRef::from_raw(host);
            let host_entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(host, 0));
            let fors = rewrite::collect(host_ref, "scf.for");
            let induction = |op: MlirOperation| {
                mlirBlockGetArgument(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)), 0)
            };
            let thread = [induction(fors[2]), induction(fors[1])];
            let group_ids = [
                rewrite::collect(host_ref, "arith.remui")[0],
                rewrite::collect(host_ref, "arith.divui")[0],
            ];
            let group = [
                mlirOperationGetResult(group_ids[0], 0),
                mlirOperationGetResult(group_ids[1], 0),
            ];
            let size = [
                mlirBlockGetArgument(host_entry, 3),
                mlirBlockGetArgument(host_entry, 4),
            ];

            for (op_name, values) in [
                (ops::THREAD_ID, thread),
                (ops::WORKGROUP_ID, group),
                (ops::WORKGROUP_DIM, size),
            ] {
                for op in rewrite::collect(func_ref, op_name) {
                    let dim = rewrite::int_attribute(op, "dim").unwrap_or(-1);
                    let Some(value) = usize::try_from(dim).ok().and_then(|d| values.get(d)) else {
                        return Err(
                            "the CPU backend runs one- and two-dimensional launches only".into(),
                        );
                    };
                    rewrite::replace(op, &[*value]);
                }
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Builder::before(context, ret).op("scf.yield", &[], &[], &[]);
                rewrite::replace(ret, &[]);
            }
            // The body moves into `scf.execute_region`, whose entry block takes no
            // arguments: point the kernel's arguments at the host function's instead.
            let body = mlirOperationGetRegion(func, 0);
            let entry = mlirRegionGetFirstBlock(body);
            let n = mlirBlockGetNumArguments(entry);
            for i in 0..n {
                let host_arg = mlirBlockGetArgument(host_entry, i + LEADING_ARGS as isize);
                mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(entry, i), host_arg);
            }
            for i in (0..n).rev() {
                mlirBlockEraseArgument(entry, i as u32);
            }
            let execute = rewrite::collect(host_ref, "scf.execute_region")[0];
            mlirRegionTakeBody(mlirOperationGetRegion(execute, 0), body);
            mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(func), func, host);
            mlirOperationDestroy(func);
        }
    }
    Ok(())
}
