//! `offload-bf16-to-integers`: for the CPU backend, the conversions between `bf16` and
//! `f32` as integer arithmetic on their bits. x86 has no instruction for them, and LLVM
//! would call `__truncsfbf2`, which neither the JIT's process nor an older libgcc
//! defines. `arith-emulate-unsupported-floats` runs first, so every `bf16` operation is
//! already an `f32` one between these conversions.
//!
//! `bf16` is the high half of an `f32`: widening shifts the bits up; narrowing rounds to
//! nearest, ties to even (adding `0x7fff` plus the kept half's lowest bit carries into it
//! exactly when the dropped half is above the tie, or at it with an odd kept half, and a
//! carry out of the significand is the next exponent, up to infinity), and keeps a NaN a
//! quiet NaN with its high payload bits, as the `half` crate does.

use crate::rewrite::{self, Inserter};
use melior::{
    Context,
    dialect::arith,
    ir::{OperationRef, r#type::TypeLike},
};

pub const NAME: &str = "offload-bf16-to-integers";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError> {
    for op in rewrite::collect(root, "arith.extf") {
        // SAFETY: `op` was collected from the live module and is replaced once.
        unsafe {
            let a = rewrite::operand(op, 0);
            let to = rewrite::result_type(op);
            if !rewrite::value_type(a).is_bf16() || !to.is_f32() {
                continue;
            }
            let b = Inserter::before(context, op);
            let (i16, i32) = (b.int(16), b.int(32));
            let bits = b.convert(arith::bitcast, a, i16);
            let wide = b.convert(arith::extui, bits, i32);
            let high = b.arith(arith::shli, wide, b.constant(i32, 16));
            rewrite::replace(op, &[b.convert(arith::bitcast, high, to)]);
        }
    }
    for op in rewrite::collect(root, "arith.truncf") {
        // SAFETY: as above.
        unsafe {
            let a = rewrite::operand(op, 0);
            let to = rewrite::result_type(op);
            if !rewrite::value_type(a).is_f32() || !to.is_bf16() {
                continue;
            }
            let b = Inserter::before(context, op);
            let (i16, i32) = (b.int(16), b.int(32));
            let bits = b.convert(arith::bitcast, a, i32);
            let sixteen = b.constant(i32, 16);
            let kept = b.arith(arith::shrui, bits, sixteen);
            let lowest = b.arith(arith::andi, kept, b.constant(i32, 1));
            let bias = b.arith(arith::addi, lowest, b.constant(i32, 0x7fff));
            let rounded = b.arith(arith::addi, bits, bias);
            let rounded = b.arith(arith::shrui, rounded, sixteen);
            // NaN: above infinity once the sign is dropped.
            let magnitude = b.arith(arith::andi, bits, b.constant(i32, 0x7fff_ffff));
            let nan = b.cmpi(
                arith::CmpiPredicate::Ugt,
                magnitude,
                b.constant(i32, 0x7f80_0000),
            );
            let quiet = b.arith(arith::ori, kept, b.constant(i32, 0x0040));
            let result = b.select(nan, quiet, rounded);
            let narrow = b.convert(arith::trunci, result, i16);
            rewrite::replace(op, &[b.convert(arith::bitcast, narrow, to)]);
        }
    }
    Ok(())
}
