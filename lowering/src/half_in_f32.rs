//! `offload-half-in-f32`: `f16` and `bf16` arithmetic and comparisons as `f32` ones
//! between explicit conversions, on every target: each operation's result is rounded
//! back to its type, as the `half` crate computes. A GPU would otherwise fuse a multiply
//! into the add that uses it (one rounding instead of two), and x86 has no `bf16`
//! arithmetic at all. For `+ - * /` the `f32` result holds the exact one closely enough
//! that rounding it once more gives the correctly rounded result a native instruction
//! would; `%`, `min`, `max` and negation are exact in `f32`.
//!
//! MLIR's `arith-emulate-unsupported-floats` does the same but marks its conversions
//! `contract`, which lets the canonicalizer fold a rounding away
//! (`extf(truncf(x))` to `x`); these conversions carry no fast-math flags.

use crate::rewrite::{self, Inserter};
use melior::{
    Context,
    dialect::arith,
    ir::{OperationRef, Type, r#type::TypeLike},
};

pub const NAME: &str = "offload-half-in-f32";

/// The float operations the lowering emits on scalars, and the attributes each keeps.
const OPERATIONS: [(&str, &[&str]); 9] = [
    ("arith.addf", &[]),
    ("arith.subf", &[]),
    ("arith.mulf", &[]),
    ("arith.divf", &[]),
    ("arith.remf", &[]),
    ("arith.negf", &[]),
    ("arith.maxnumf", &[]),
    ("arith.minnumf", &[]),
    ("arith.cmpf", &["predicate"]),
];

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError> {
    let f32_type = Type::float32(context);
    for (name, kept) in OPERATIONS {
        for op in rewrite::collect(root, name) {
            // SAFETY: `op` was collected from the live module and is replaced once.
            unsafe {
                let operands = rewrite::operands(op);
                let half = rewrite::value_type(operands[0]);
                if !(half.is_f16() || half.is_bf16()) {
                    continue;
                }
                let b = Inserter::before(context, op);
                let wide: Vec<_> = operands
                    .iter()
                    .map(|v| b.convert(arith::extf, *v, f32_type))
                    .collect();
                let attributes: Vec<(&str, melior::ir::Attribute)> = kept
                    .iter()
                    .filter_map(|a| Some((*a, rewrite::attribute(op, a)?)))
                    .collect();
                let result = rewrite::result_type(op);
                let comparison = name == "arith.cmpf";
                let results = [if comparison { result } else { f32_type }];
                let value = b.op(name, &wide, &results, &attributes)?[0];
                let value = if comparison {
                    value
                } else {
                    b.convert(arith::truncf, value, half)
                };
                rewrite::replace(op, &[value]);
            }
        }
    }
    Ok(())
}
