//! Building the `offload` dialect for one rvalue: arithmetic, casts, intrinsics and
//! subgroup operations, each computed value an SSA value.

use super::*;
use melior::dialect::arith::{self, CmpfPredicate, CmpiPredicate, cmpf, cmpi};
use offload_dialect::build::{Combine, ShuffleMode};

impl<'c, 'a> Emitter<'c, 'a> {
    pub(super) fn rvalue(&mut self, rv: &Rvalue, span: Span) -> (Value<'c, 'a>, ScalarTy) {
        let location = self.location(span);
        match rv {
            Rvalue::Use(op) => self.operand(op, span),
            Rvalue::AtomicRmw(op, place, value) => self.atomic_rmw(*op, *place, value, span),
            Rvalue::AtomicCas(place, current, new) => self.atomic_cas(*place, current, new, span),
            Rvalue::Position(p, d) => {
                self.index_query(build::position(self.context, *p, *d, location), span)
            }
            Rvalue::Intrinsic(i, args) => {
                let args: Vec<(Value<'c, 'a>, ScalarTy)> =
                    args.iter().map(|a| self.operand(a, span)).collect();
                self.intrinsic(*i, &args, span)
            }
            Rvalue::Subgroup(op, args) => {
                let args: Vec<(Value<'c, 'a>, ScalarTy)> =
                    args.iter().map(|a| self.operand(a, span)).collect();
                self.subgroup(*op, &args, span)
            }
            Rvalue::BinaryOp(op, a, b) => {
                let (a, ty) = self.operand(a, span);
                let (b, bty) = self.operand(b, span);
                self.binary(*op, a, b, ty, bty, span)
            }
            Rvalue::UnaryOp(op, a) => {
                let (a, ty) = self.operand(a, span);
                let v = match (op, ty.is_float()) {
                    (UnOp::Neg, true) => self.result(arith::negf(a, self.location(span))),
                    (UnOp::Neg, false) => {
                        let zero = self.constant(Const::Int(0, ty), span);
                        self.arith(arith::subi, zero, a, span)
                    }
                    (UnOp::Not, _) => {
                        let ones = if ty == ScalarTy::Bool {
                            Const::Bool(true)
                        } else {
                            Const::Int(-1, ty)
                        };
                        let ones = self.constant(ones, span);
                        self.arith(arith::xori, a, ones, span)
                    }
                };
                (v, ty)
            }
            Rvalue::Cast(a, to) => {
                let (a, from) = self.operand(a, span);
                (self.cast(a, from, *to, span), *to)
            }
            Rvalue::Len(l) => {
                let len = build::len(self.context, self.container(*l), location);
                self.index_query(len, span)
            }
            Rvalue::RegionCoord(l, d) => {
                let coord = build::region_coord(self.context, self.container(*l), *d, location);
                self.index_query(coord, span)
            }
            Rvalue::RegionExtent(l, d) => {
                let extent = build::extent(self.context, self.container(*l), *d, location);
                self.index_query(extent, span)
            }
            Rvalue::RegionEnd(l, d) => {
                // The extent less the margin: an interior's threads stop that far from the
                // far edge, as they start that far from the near one.
                let region = self.container(*l);
                let extent = build::extent(self.context, region, *d, location);
                let (extent, _) = self.index_query(extent, span);
                let (margin, _) =
                    self.index_query(build::margin(self.context, region, location), span);
                (
                    self.arith(arith::subi, extent, margin, span),
                    ScalarTy::Usize,
                )
            }
            Rvalue::RegionIndex(l) => {
                let index = build::region_index(self.context, self.container(*l), location);
                self.index_query(index, span)
            }
        }
    }

    /// An atomic read-modify-write of `place`'s element: the `offload.atomic_rmw` of the
    /// kind Rust's operation and the element type select.
    fn atomic_rmw(
        &mut self,
        op: AtomicOp,
        place: Place,
        value: &Operand,
        span: Span,
    ) -> (Value<'c, 'a>, ScalarTy) {
        let (value, ty) = self.operand(value, span);
        use offload_dialect::AtomicKind;
        let kind = match (op, ty.is_float(), ty.is_signed()) {
            (AtomicOp::Add, true, _) => AtomicKind::AddF,
            (AtomicOp::Add, false, _) => AtomicKind::AddI,
            (AtomicOp::And, ..) => AtomicKind::AndI,
            (AtomicOp::Exchange, ..) => AtomicKind::Assign,
            (AtomicOp::Max, _, true) => AtomicKind::MaxS,
            (AtomicOp::Max, _, false) => AtomicKind::MaxU,
            (AtomicOp::Min, _, true) => AtomicKind::MinS,
            (AtomicOp::Min, _, false) => AtomicKind::MinU,
            (AtomicOp::Or, ..) => AtomicKind::OrI,
            (AtomicOp::Xor, ..) => AtomicKind::XorI,
        };
        let index = self.index_value(
            place.index.expect("validated: atomic places are indexed"),
            span,
        );
        let atomic = self.container(place.local);
        let rmw = build::atomic_rmw(
            self.context,
            atomic,
            index,
            value,
            kind,
            self.scalar(ty),
            self.location(span),
        );
        (self.result(rmw), ty)
    }

    /// An atomic compare-and-swap of `place`'s element.
    fn atomic_cas(
        &mut self,
        place: Place,
        current: &Operand,
        new: &Operand,
        span: Span,
    ) -> (Value<'c, 'a>, ScalarTy) {
        let (current, ty) = self.operand(current, span);
        let (new, _) = self.operand(new, span);
        let index = self.index_value(
            place.index.expect("validated: atomic places are indexed"),
            span,
        );
        let atomic = self.container(place.local);
        let cas = build::atomic_cas(
            self.context,
            [atomic, index, current, new],
            self.scalar(ty),
            self.location(span),
        );
        (self.result(cas), ty)
    }

    /// An `arith.cmpi`.
    pub(super) fn compare_ints(
        &self,
        predicate: CmpiPredicate,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.result(cmpi(self.context, predicate, a, b, self.location(span)))
    }

    /// An `arith.cmpf`.
    fn compare_floats(
        &self,
        predicate: CmpfPredicate,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.result(cmpf(self.context, predicate, a, b, self.location(span)))
    }

    /// Appends `operation`, which has one result, and returns that result.
    /// A binary `arith` operation `build` of `a` and `b`, of their type.
    pub(super) fn arith(
        &self,
        build: Binary<'c>,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.result(build(a, b, self.location(span)))
    }

    /// `a` converted to `to` by the `arith` conversion `build`.
    pub(super) fn convert(
        &self,
        build: Conversion<'c>,
        a: Value<'c, 'a>,
        to: Type<'c>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.result(build(a, to, self.location(span)))
    }

    /// `arith.select`: `if_true` where `condition` holds, else `if_false`.
    fn select(
        &self,
        condition: Value<'c, 'a>,
        if_true: Value<'c, 'a>,
        if_false: Value<'c, 'a>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.result(arith::select(
            condition,
            if_true,
            if_false,
            self.location(span),
        ))
    }

    pub(super) fn result(&self, operation: Operation<'c>) -> Value<'c, 'a> {
        self.append(operation)
            .result(0)
            .expect("the operation has one result")
            .into()
    }

    fn subgroup(
        &mut self,
        op: SubgroupOp,
        args: &[(Value<'c, 'a>, ScalarTy)],
        span: Span,
    ) -> (Value<'c, 'a>, ScalarTy) {
        match op {
            SubgroupOp::Size => {
                let size = build::subgroup_size(self.context, self.location(span));
                self.index_query(size, span)
            }
            SubgroupOp::Lane => {
                let lane = build::subgroup_lane(self.context, self.location(span));
                self.index_query(lane, span)
            }
            SubgroupOp::Shuffle | SubgroupOp::ShuffleXor => {
                let (value, ty) = args[0];
                // Lanes are `i32` on every target; a lane past `u32::MAX` saturates,
                // which is past the subgroup either way.
                let (lane, _) = args[1];
                let max = self.constant(Const::Int(i32::MAX as i128, ScalarTy::I64), span);
                let clamped = self.arith(arith::minui, lane, max, span);
                let i32_type = self.scalar(ScalarTy::I32);
                let lane32 = self.convert(arith::trunci, clamped, i32_type, span);
                let mode = if op == SubgroupOp::ShuffleXor {
                    ShuffleMode::Xor
                } else {
                    ShuffleMode::Lane
                };
                let location = self.location(span);
                let shuffle =
                    build::shuffle(self.context, value, lane32, mode, self.scalar(ty), location);
                (self.result(shuffle), ty)
            }
            SubgroupOp::Sum | SubgroupOp::Min | SubgroupOp::Max => {
                let (value, ty) = args[0];
                let combine = match (op, ty.is_float(), ty.is_signed()) {
                    (SubgroupOp::Sum, true, _) => Combine::AddF,
                    (SubgroupOp::Sum, false, _) => Combine::AddI,
                    (SubgroupOp::Min, true, _) => Combine::MinNumF,
                    (SubgroupOp::Min, false, true) => Combine::MinSI,
                    (SubgroupOp::Min, false, false) => Combine::MinUI,
                    (_, true, _) => Combine::MaxNumF,
                    (_, false, true) => Combine::MaxSI,
                    (_, false, false) => Combine::MaxUI,
                };
                let location = self.location(span);
                let reduce =
                    build::subgroup_reduce(self.context, value, combine, self.scalar(ty), location);
                (self.result(reduce), ty)
            }
            SubgroupOp::Ballot => {
                let ballot = build::ballot(self.context, args[0].0, self.location(span));
                (self.result(ballot), ScalarTy::U64)
            }
            SubgroupOp::Any | SubgroupOp::All => {
                // any(b) = ballot(b) != 0; all(b) = ballot(!b) == 0.
                let all = op == SubgroupOp::All;
                let mut p = args[0].0;
                if all {
                    let t = self.constant(Const::Bool(true), span);
                    p = self.arith(arith::xori, p, t, span);
                }
                let mask = self.result(build::ballot(self.context, p, self.location(span)));
                let zero = self.constant(Const::Int(0, ScalarTy::U64), span);
                let predicate = if all {
                    CmpiPredicate::Eq
                } else {
                    CmpiPredicate::Ne
                };
                (
                    self.compare_ints(predicate, mask, zero, span),
                    ScalarTy::Bool,
                )
            }
        }
    }

    /// An op `name` yielding an `index`, as a `usize`.
    /// The `index` that `query` (an offload op) yields, as the `usize` it is in MIR.
    fn index_query(&mut self, query: Operation<'c>, span: Span) -> (Value<'c, 'a>, ScalarTy) {
        let i = self.result(query);
        let v = self.convert(arith::index_cast, i, self.scalar(ScalarTy::I64), span);
        (v, ScalarTy::Usize)
    }

    fn intrinsic(
        &mut self,
        i: Intrinsic,
        args: &[(Value<'c, 'a>, ScalarTy)],
        span: Span,
    ) -> (Value<'c, 'a>, ScalarTy) {
        let (a, ty) = args[0];
        let t = self.scalar(ty);
        let values: Vec<Value<'c, 'a>> = args.iter().map(|(v, _)| *v).collect();
        // On floats, most functions are one `math` op, named by the intrinsic table.
        if let Some(op) = i.def().math
            && ty.is_float()
        {
            return (self.value(op, &values, t, span), ty);
        }
        match i {
            Intrinsic::ToBits | Intrinsic::FromBits => {
                let to = i.result_type(&[ty]).expect("validated");
                (self.convert(arith::bitcast, a, self.scalar(to), span), to)
            }
            Intrinsic::Min | Intrinsic::Max => {
                // Rust's float `min`/`max` return the non-NaN operand: `minnumf`/`maxnumf`.
                let op = |build: Binary<'c>| self.arith(build, values[0], values[1], span);
                let v = match (i == Intrinsic::Min, ty.is_float(), ty.is_signed()) {
                    (true, true, _) => op(minnumf),
                    (false, true, _) => op(arith::maxnumf),
                    (true, false, true) => op(arith::minsi),
                    (false, false, true) => op(arith::maxsi),
                    (true, false, false) => op(arith::minui),
                    (false, false, false) => op(arith::maxui),
                };
                (v, ty)
            }
            Intrinsic::Abs => (self.value("math.absi", &[a], t, span), ty),
            Intrinsic::LeadingZeros | Intrinsic::TrailingZeros | Intrinsic::CountOnes => {
                let op = match i {
                    Intrinsic::LeadingZeros => "math.ctlz",
                    Intrinsic::TrailingZeros => "math.cttz",
                    _ => "math.ctpop",
                };
                let v = self.value(op, &[a], t, span);
                (self.cast(v, ty, ScalarTy::U32, span), ScalarTy::U32)
            }
            _ => unreachable!("validated: `{}` on `{ty}` is a `math` op", i.name()),
        }
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: Value<'c, 'a>,
        b: Value<'c, 'a>,
        ty: ScalarTy,
        bty: ScalarTy,
        span: Span,
    ) -> (Value<'c, 'a>, ScalarTy) {
        let float = ty.is_float();
        let signed = ty.is_signed();
        if op.is_comparison() {
            let v = if float {
                let predicate = match op {
                    BinOp::Eq => CmpfPredicate::Oeq,
                    // Rust's `!=` is true when either side is NaN.
                    BinOp::Ne => CmpfPredicate::Une,
                    BinOp::Lt => CmpfPredicate::Olt,
                    BinOp::Le => CmpfPredicate::Ole,
                    BinOp::Gt => CmpfPredicate::Ogt,
                    BinOp::Ge => CmpfPredicate::Oge,
                    _ => unreachable!("comparison operators are listed here"),
                };
                self.compare_floats(predicate, a, b, span)
            } else {
                let predicate = match (op, signed) {
                    (BinOp::Eq, _) => CmpiPredicate::Eq,
                    (BinOp::Ne, _) => CmpiPredicate::Ne,
                    (BinOp::Lt, true) => CmpiPredicate::Slt,
                    (BinOp::Le, true) => CmpiPredicate::Sle,
                    (BinOp::Gt, true) => CmpiPredicate::Sgt,
                    (BinOp::Ge, true) => CmpiPredicate::Sge,
                    (BinOp::Lt, false) => CmpiPredicate::Ult,
                    (BinOp::Le, false) => CmpiPredicate::Ule,
                    (BinOp::Gt, false) => CmpiPredicate::Ugt,
                    (BinOp::Ge, false) => CmpiPredicate::Uge,
                    _ => unreachable!("comparison operators are listed here"),
                };
                self.compare_ints(predicate, a, b, span)
            };
            return (v, ScalarTy::Bool);
        }
        if op.is_shift() {
            // Rust masks the shift amount to the bit width (release semantics), so the
            // shift is never out of range.
            let amount = self.cast(b, bty, ty_unsigned_of(ty), span);
            let mask = self.constant(Const::Int(ty.bits() as i128 - 1, ty_unsigned_of(ty)), span);
            let masked = self.arith(arith::andi, amount, mask, span);
            let shift = |build: Binary<'c>| self.arith(build, a, masked, span);
            let v = match (op, signed) {
                (BinOp::Shl, _) => shift(arith::shli),
                (_, true) => shift(arith::shrsi),
                (_, false) => shift(arith::shrui),
            };
            return (v, ty);
        }
        let build = |f: Binary<'c>| self.arith(f, a, b, span);
        let v = match (op, float, signed) {
            (BinOp::Add, true, _) => build(arith::addf),
            (BinOp::Sub, true, _) => build(arith::subf),
            (BinOp::Mul, true, _) => build(arith::mulf),
            (BinOp::Div, true, _) => build(arith::divf),
            (BinOp::Rem, true, _) => build(arith::remf),
            (BinOp::Add, false, _) => build(arith::addi),
            (BinOp::Sub, false, _) => build(arith::subi),
            (BinOp::Mul, false, _) => build(arith::muli),
            (BinOp::Div, false, true) => build(arith::divsi),
            (BinOp::Div, false, false) => build(arith::divui),
            (BinOp::Rem, false, true) => build(arith::remsi),
            (BinOp::Rem, false, false) => build(arith::remui),
            (BinOp::BitAnd, false, _) => build(arith::andi),
            (BinOp::BitOr, false, _) => build(arith::ori),
            (BinOp::BitXor, false, _) => build(arith::xori),
            _ => unreachable!("validated: bitwise operators are not applied to floats"),
        };
        (v, ty)
    }

    /// Rust's `as`: integers truncate or extend by the source's signedness, floats to
    /// integers saturate (NaN becomes 0), integers to floats round to nearest.
    fn cast(
        &mut self,
        a: Value<'c, 'a>,
        from: ScalarTy,
        to: ScalarTy,
        span: Span,
    ) -> Value<'c, 'a> {
        if mlir_scalar(from) == mlir_scalar(to) && from.is_float() == to.is_float() {
            return a;
        }
        // Between `f64` and a half type through `f32`: widening is exact either way, and
        // narrowing rounds to odd first, after which rounding to the half type is the
        // single rounding from `f64` that `f16::from_f64` does (`f32` keeps more than two
        // bits past a half type's significand). No target then needs a library call for
        // a conversion it has no instruction for.
        if from == ScalarTy::F64 && to.is_half() {
            let narrowed = self.f64_to_f32_rounding_to_odd(a, span);
            return self.cast(narrowed, ScalarTy::F32, to, span);
        }
        if from.is_half() && to == ScalarTy::F64 {
            let widened = self.cast(a, from, ScalarTy::F32, span);
            return self.cast(widened, ScalarTy::F32, to, span);
        }
        let to_type = self.scalar(to);
        let convert = |build: Conversion<'c>| self.convert(build, a, to_type, span);
        match (from.is_float(), to.is_float()) {
            (false, false) if from.bits() > to.bits() => convert(arith::trunci),
            (false, false) if from.is_signed() => convert(arith::extsi),
            (false, false) => convert(arith::extui),
            (false, true) if from.is_signed() => convert(arith::sitofp),
            (false, true) => convert(arith::uitofp),
            (true, true) if from.bits() > to.bits() => convert(arith::truncf),
            (true, true) => convert(arith::extf),
            (true, false) => self.saturating_float_to_int(a, from, to, span),
        }
    }

    /// `a` (an `f64`) as the `f32` nearest it that is odd when `a` is not exact in `f32`:
    /// truncated toward zero with the lowest bit set.
    fn f64_to_f32_rounding_to_odd(&mut self, a: Value<'c, 'a>, span: Span) -> Value<'c, 'a> {
        let (f32_ty, i32_ty) = (self.scalar(ScalarTy::F32), self.scalar(ScalarTy::U32));
        let nearest = self.convert(arith::truncf, a, f32_ty, span);
        let back = self.convert(arith::extf, nearest, self.scalar(ScalarTy::F64), span);
        // Ordered: a NaN is exact, and an infinity too.
        let inexact = self.compare_floats(CmpfPredicate::One, back, a, span);
        let zero = self.constant(Const::Float(0.0, ScalarTy::F64), span);
        let negative = self.compare_floats(CmpfPredicate::Olt, a, zero, span);
        let below = self.compare_floats(CmpfPredicate::Olt, back, a, span);
        let above = self.compare_floats(CmpfPredicate::Ogt, back, a, span);
        // Rounded away from zero: one step back toward it (the bits are sign and
        // magnitude, so one less is one step smaller in magnitude either way).
        let away = self.select(negative, below, above, span);
        let bits = self.convert(arith::bitcast, nearest, i32_ty, span);
        let one = self.constant(Const::Int(1, ScalarTy::U32), span);
        let less = self.arith(arith::subi, bits, one, span);
        let toward_zero = self.select(away, less, bits, span);
        let odd = self.arith(arith::ori, toward_zero, one, span);
        let odd = self.convert(arith::bitcast, odd, f32_ty, span);
        self.select(inexact, odd, nearest, span)
    }

    fn saturating_float_to_int(
        &mut self,
        a: Value<'c, 'a>,
        from: ScalarTy,
        to: ScalarTy,
        span: Span,
    ) -> Value<'c, 'a> {
        let tt = self.scalar(to);
        let (min, max): (i128, i128) = if to.is_signed() {
            (-(1i128 << (to.bits() - 1)), (1i128 << (to.bits() - 1)) - 1)
        } else {
            (0, (1i128 << to.bits()) - 1)
        };
        // Clamp in the float domain to the representable range, convert, then fix up the
        // ends exactly (the float bounds may round past them) and map NaN to zero.
        let lo = self.constant(Const::Float(min as f64, from), span);
        let hi = self.constant(Const::Float(max as f64, from), span);
        let clamped_lo = self.arith(arith::maxnumf, a, lo, span);
        let clamped = self.arith(minnumf, clamped_lo, hi, span);
        // `max` may not be representable: a value that rounds up to 2^bits converts out
        // of range, so treat anything at or above `hi` as `max` exactly.
        let below_hi = self.compare_floats(CmpfPredicate::Olt, clamped, hi, span);
        let safe = self.select(below_hi, clamped, lo, span);
        let conv = if to.is_signed() {
            self.convert(arith::fptosi, safe, tt, span)
        } else {
            self.convert(arith::fptoui, safe, tt, span)
        };
        let max_c = self.constant(Const::Int(max, to), span);
        let sat = self.select(below_hi, conv, max_c, span);
        let is_nan = self.compare_floats(CmpfPredicate::Uno, a, a, span);
        let zero = self.constant(Const::Int(0, to), span);
        self.select(is_nan, zero, sat, span)
    }
}

/// melior's builder of a binary `arith` operation (`arith::addi`, ...).
pub(super) type Binary<'c> =
    for<'x, 'y> fn(Value<'c, 'x>, Value<'c, 'y>, Location<'c>) -> Operation<'c>;

/// melior's builder of an `arith` conversion to a given type (`arith::extsi`, ...).
pub(super) type Conversion<'c> = for<'x> fn(Value<'c, 'x>, Type<'c>, Location<'c>) -> Operation<'c>;

/// `arith.minnumf`, which melior's `arith` module lacks (it has `maxnumf`): the same
/// shape as its binary builders, the result of the operands' type.
fn minnumf<'c>(lhs: Value<'c, '_>, rhs: Value<'c, '_>, location: Location<'c>) -> Operation<'c> {
    use melior::ir::ValueLike;
    OperationBuilder::new("arith.minnumf", location)
        .add_operands(&[lhs, rhs])
        .add_results(&[lhs.r#type()])
        .build()
        .expect("an arith.minnumf of two floats of one type builds")
}
