//! `offload-math-to-llvm-intrinsics`: rewrites the `math` ops that NVPTX selects natively
//! into LLVM intrinsics: those `convert-gpu-to-nvvm` does not lower (integer bit counts,
//! integer `abs`, `trunc`: `clz`, `popc`, `brev`, `cvt.rzi`), and `fma`, which it would
//! send to a libdevice call where one `fma.rn` instruction does. For NVIDIA GPUs also
//! `sqrt`: libdevice's `__nv_sqrtf` is the approximate `sqrt.approx.f32` unless told
//! otherwise, while Rust's `f32::sqrt` is correctly rounded, as PTX's `sqrt.rn` is (and
//! nvcc's default `-prec-sqrt=true` gives); the differential fuzzer found the last bit
//! differing. The transcendental ops are left to NVVM's libdevice lowering.

use crate::rewrite::{self, Inserter};
use melior::{
    Context,
    ir::{OperationRef, r#type::TypeLike},
};

pub const NAME: &str = "offload-math-to-llvm-intrinsics";

/// Each math op, its intrinsic, and the intrinsic's poison flag (`false`: defined for
/// zero input and for `MIN`, as Rust requires).
const REWRITES: [(&str, &str, Option<&str>); 6] = [
    ("math.ctlz", "llvm.intr.ctlz", Some("is_zero_poison")),
    ("math.cttz", "llvm.intr.cttz", Some("is_zero_poison")),
    ("math.ctpop", "llvm.intr.ctpop", None),
    ("math.absi", "llvm.intr.abs", Some("is_int_min_poison")),
    ("math.trunc", "llvm.intr.trunc", None),
    ("math.fma", "llvm.intr.fma", None),
];

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError> {
    for (math, intrinsic, flag) in REWRITES {
        for op in rewrite::collect(root, math) {
            // SAFETY: `op` was collected from the live module and is replaced once.
            unsafe {
                let b = Inserter::before(context, op);
                let ty = rewrite::result_type(op);
                let attrs: Vec<(&str, melior::ir::Attribute)> =
                    flag.into_iter().map(|f| (f, b.bool_attr(false))).collect();
                let v = b.op(intrinsic, &rewrite::operands(op), &[ty], &attrs)?;
                rewrite::replace(op, &v);
            }
        }
    }
    // SAFETY: `root` is the live module operation.
    let amd = unsafe {
        rewrite::string_attribute(root.to_raw(), crate::offload_to_gpu::VENDOR_ATTR).as_deref()
            == Some("amd")
    };
    if !amd {
        for op in rewrite::collect(root, "math.sqrt") {
            // SAFETY: `op` was collected from the live module and is replaced once.
            unsafe {
                let b = Inserter::before(context, op);
                let ty = rewrite::result_type(op);
                let intrinsic = if ty.is_f64() {
                    "llvm.nvvm.sqrt.rn.d"
                } else {
                    "llvm.nvvm.sqrt.rn.f"
                };
                let v = b.call_intrinsic(intrinsic, &rewrite::operands(op), &[ty])?;
                rewrite::replace(op, &v);
            }
        }
    }
    Ok(())
}
