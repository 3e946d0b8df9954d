//! `convert-offload-to-gpu`: moves each kernel into its own `gpu.module` as a `gpu.func`
//! with the [`kernel_abi`](crate::kernel_abi) signature, and maps thread positions to
//! `gpu.thread_id`, `gpu.block_id` and `gpu.block_dim`.

use crate::{kernel_abi, rewrite};
use melior::ir::attribute::AttributeLike;
use melior::{
    Context,
    ir::{OperationRef, operation::OperationLike},
};
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
                    let v = b.op(gpu, &[], &[b.ty("index")], &[("dimension", attr)]);
                    rewrite::replace(op, &v);
                }
            }
            for ret in rewrite::collect(func_ref, "func.return") {
                rewrite::Builder::before(context, ret).op("gpu.return", &[], &[], &[]);
                rewrite::replace(ret, &[]);
            }

            let name = func_ref
                .attribute("sym_name")
                .map_err(|e| e.to_string())?
                .to_string();
            let name = name.trim_matches('"');
            let fty = func_ref
                .attribute("function_type")
                .map_err(|e| e.to_string())?
                .to_string();
            let inputs = fty
                .trim_start_matches('(')
                .rsplit_once(") ->")
                .map(|(i, _)| i)
                .unwrap_or("");
            let args: Vec<String> = split_types(inputs)
                .iter()
                .enumerate()
                .map(|(i, t)| format!("%a{i}: {t}"))
                .collect();
            let skeleton = format!(
                "gpu.module @{name}_module {{\n  gpu.func @{name}({}) kernel {{\n    gpu.return\n  }}\n}}",
                args.join(", ")
            );
            let source = melior::StringRef::new(&skeleton);
            let origin = melior::StringRef::new(NAME);
            let module =
                mlirOperationCreateParse(context.to_raw(), source.to_raw(), origin.to_raw());
            if module.ptr.is_null() {
                return Err(format!(
                    "internal: the gpu.module skeleton does not parse:\n{skeleton}"
                ));
            }
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

/// Splits a printed list of types at top-level commas (`memref<?xf32>, f32`).
pub fn split_types(list: &str) -> Vec<String> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = list[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}
