//! `convert-offload-to-gpu`: moves each kernel into its own `gpu.module` as a `gpu.func`
//! with the [`kernel_abi`](crate::kernel_abi) signature plus a last `index` argument, the
//! first workgroup's x index (0 unless a launch is split across devices), and maps thread
//! positions to `gpu.thread_id`, `gpu.block_id` (+ that base in x) and `gpu.block_dim`.

use crate::{kernel_abi, rewrite};
use melior::ir::{attribute::AttributeLike, r#type::TypeLike};
use melior::{Context, ir::OperationRef};
use mlir_sys::*;
use offload_dialect::ops;

pub const NAME: &str = "convert-offload-to-gpu";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), String> {
    for func in kernel_abi::kernels(root) {
        // SAFETY: `func` and everything collected under it belong to the live module, and
        // each handle is used before the operation it names is erased.
        unsafe {
            kernel_abi::lower(context, func)?;
            let func_ref = OperationRef::from_raw(func);
            // A hidden last argument offsets workgroup x: a launch split across devices
            // runs each device's share of the workgroups with the share's first index.
            let entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
            let index = melior::ir::Type::index(context);
            let group_base =
                mlirBlockAddArgument(entry, index.to_raw(), mlirOperationGetLocation(func));
            kernel_abi::set_function_type(func, entry);
            for (name, gpu) in [
                (ops::THREAD_ID, "gpu.thread_id"),
                (ops::WORKGROUP_ID, "gpu.block_id"),
                (ops::WORKGROUP_DIM, "gpu.block_dim"),
            ] {
                for op in rewrite::collect(func_ref, name) {
                    let dim = rewrite::int_attribute(op, "dim")
                        .ok_or("thread position ops need a `dim`")?;
                    let axis = ["x", "y", "z"]
                        .get(dim as usize)
                        .ok_or("`dim` must be 0, 1 or 2")?;
                    let b = rewrite::Builder::before(context, op);
                    let attr = b.attr(&format!("#gpu<dim {axis}>"));
                    let mut v = b.op(gpu, &[], &[b.ty("index")], &[("dimension", attr)]);
                    if name == ops::WORKGROUP_ID && dim == 0 {
                        v = b.op("arith.addi", &[v[0], group_base], &[b.ty("index")], &[]);
                    }
                    rewrite::replace(op, &v);
                }
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Builder::before(context, ret).op("gpu.return", &[], &[], &[]);
                rewrite::replace(ret, &[]);
            }

            let (name, args) = kernel_abi::signature(func_ref)?;
            let skeleton = format!(
                "gpu.module @{name}_module {{\n  gpu.func @{name}({}) kernel {{\n    gpu.return\n  }}\n}}",
                args.join(", ")
            );
            let module = rewrite::parse_operation(context, &skeleton, NAME)?;
            let gpu_func = mlirBlockGetFirstOperation(mlirRegionGetFirstBlock(
                mlirOperationGetRegion(module, 0),
            ));
            mlirRegionTakeBody(
                mlirOperationGetRegion(gpu_func, 0),
                mlirOperationGetRegion(func, 0),
            );
            mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(func), func, module);
            mlirOperationDestroy(func);
        }
    }
    let unit = melior::ir::Attribute::unit(context);
    let name = melior::StringRef::new("gpu.container_module");
    // SAFETY: `root` is the live module operation.
    unsafe { mlirOperationSetAttributeByName(root.to_raw(), name.to_raw(), unit.to_raw()) };
    Ok(())
}
