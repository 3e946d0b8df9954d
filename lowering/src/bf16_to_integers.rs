//! `offload-bf16-to-integers`: for the CPU backend, the conversions between `bf16` and
//! `f32` as integer arithmetic on their bits (an atomic add of `bf16` first becomes a
//! compare-and-swap loop that adds in `f32`). x86 has no instruction for them, and LLVM
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
    dialect::{arith, func},
    ir::{
        Block, BlockLike, Identifier, Location, OperationRef, Region, RegionLike, Type,
        attribute::{StringAttribute, TypeAttribute},
        r#type::{FunctionType, TypeLike},
    },
};

pub const NAME: &str = "offload-bf16-to-integers";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), crate::rewrite::PassError> {
    // LLVM narrows to `bf16` with a call to `__truncsfbf2` where it promotes a `bf16`
    // value to `f32` and back on its own: in the compare-and-swap loop it expands an
    // atomic add into, and around `bf16` values it passes or holds (a kernel's `bf16`
    // argument, a `freeze`). A module with any `bf16` value defines that function itself
    // (weak: one per object, the linker keeps one), as the `arith.truncf` this pass then
    // expands.
    if rewrite::any_value_type(root, |t| t.is_bf16()) {
        // SAFETY: `root` is the live module.
        unsafe { define_truncsfbf2(context, root) };
    }
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

/// Adds `bf16 __truncsfbf2(f32)` to the module, weak, as one `arith.truncf`.
///
/// # Safety
///
/// `root` must be the live module.
unsafe fn define_truncsfbf2(context: &Context, root: OperationRef<'_, '_>) {
    let location = Location::unknown(context);
    let (f32_type, bf16_type) = (Type::float32(context), Type::bfloat16(context));
    let block = Block::new(&[(f32_type, location)]);
    let argument = block.argument(0).expect("one argument").into();
    let narrow = block.append_operation(arith::truncf(argument, bf16_type, location));
    block.append_operation(func::r#return(
        &[narrow.result(0).expect("one result").into()],
        location,
    ));
    let region = Region::new();
    region.append_block(block);
    let signature = FunctionType::new(context, &[f32_type], &[bf16_type]);
    let weak = melior::ir::Attribute::parse(context, "#llvm.linkage<weak>")
        .expect("a linkage attribute parses");
    let function = func::func(
        context,
        StringAttribute::new(context, "__truncsfbf2"),
        TypeAttribute::new(signature.into()),
        region,
        &[(Identifier::new(context, "llvm.linkage"), weak)],
        location,
    );
    // SAFETY: the caller's contract; the function is owned by no block yet.
    unsafe {
        let body = rewrite::entry_block(root.to_raw());
        Inserter::at_end(context, body, location).place_op(function);
    }
}
