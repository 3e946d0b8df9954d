//! `offload-math-to-llvm-intrinsics`: rewrites the `math` ops that NVPTX selects natively
//! into LLVM intrinsics: those `convert-gpu-to-nvvm` does not lower (integer bit counts,
//! integer `abs`, `trunc`: `clz`, `popc`, `brev`, `cvt.rzi`), and `fma`, which it would
//! send to a libdevice call where one `fma.rn` instruction does. The transcendental ops
//! are left to NVVM's libdevice lowering.

use crate::rewrite::{self, Inserter};
use melior::{Context, ir::OperationRef};

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
    Ok(())
}
