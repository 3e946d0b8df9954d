//! `offload-partition`: turns each `offload.region_index` into index arithmetic over the
//! thread's position, by the region's partitioning strategy. The result still uses the
//! target-neutral `offload.thread_id`/`workgroup_id`/`workgroup_dim` ops, so GPU and CPU
//! conversions share this pass.

use crate::rewrite::{self, Builder};
use melior::{Context, ir::OperationRef};
use offload_dialect::{ContainerType, ops, parse_container_type};

pub const NAME: &str = "offload-partition";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), String> {
    for op in rewrite::collect(root, ops::REGION_INDEX) {
        // SAFETY: `op` was just collected from the live module and is rewritten once.
        unsafe {
            let region = rewrite::operand(op, 0);
            let ty = rewrite::type_text(mlir_sys::mlirValueGetType(region));
            let Some(ContainerType::Region { strategy, .. }) = parse_container_type(&ty) else {
                return Err(format!(
                    "`{}` needs a region operand, found `{ty}`",
                    ops::REGION_INDEX
                ));
            };
            let b = Builder::before(context, op);
            let index = b.ty("index");
            let x = [("dim", b.attr("0 : i64"))];
            let value = match strategy.as_str() {
                // Thread t of the launch owns element t: t = workgroup * size + thread.
                "Linear1D" => {
                    let thread = b.op(ops::THREAD_ID, &[], &[index], &x)[0];
                    let group = b.op(ops::WORKGROUP_ID, &[], &[index], &x)[0];
                    let size = b.op(ops::WORKGROUP_DIM, &[], &[index], &x)[0];
                    let base = b.op("arith.muli", &[group, size], &[index], &[])[0];
                    b.op("arith.addi", &[base, thread], &[index], &[])[0]
                }
                other => return Err(format!("unknown partitioning strategy `{other}`")),
            };
            rewrite::replace(op, &[value]);
        }
    }
    Ok(())
}
