//! Emitting the `offload` dialect for one rvalue: arithmetic, casts, intrinsics and
//! subgroup operations, each computed value as SSA text.

use super::*;

impl Emitter<'_> {
    pub(super) fn rvalue(&mut self, rv: &Rvalue, span: Span) -> (String, ScalarTy) {
        match rv {
            Rvalue::Use(op) => self.operand(op, span),
            Rvalue::AtomicRmw(op, place, value) => {
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
                }
                .code();
                let index = self.index_value(
                    place.index.expect("validated: atomic places are indexed"),
                    span,
                );
                let atomic = mlir_type(self.body.locals[place.local.index()].ty);
                let t = mlir_scalar(ty);
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.atomic_rmw\"(%arg{}, {index}, {value}) {{kind = {kind} : i64}} : ({atomic}, index, {t}) -> {t}", place.local.0),
                    span,
                );
                (v, ty)
            }
            Rvalue::AtomicCas(place, current, new) => {
                let (current, ty) = self.operand(current, span);
                let (new, _) = self.operand(new, span);
                let index = self.index_value(
                    place.index.expect("validated: atomic places are indexed"),
                    span,
                );
                let atomic = mlir_type(self.body.locals[place.local.index()].ty);
                let t = mlir_scalar(ty);
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.atomic_cas\"(%arg{}, {index}, {current}, {new}) : ({atomic}, index, {t}, {t}) -> {t}", place.local.0),
                    span,
                );
                (v, ty)
            }
            Rvalue::Position(p, d) => {
                let op = match p {
                    Position::Thread => "offload.thread_id",
                    Position::Workgroup => "offload.workgroup_id",
                    Position::WorkgroupSize => "offload.workgroup_dim",
                    Position::WorkgroupCount => "offload.workgroup_count",
                };
                self.index_query(
                    &format!("\"{op}\"() {{dim = {d} : i64}} : () -> index"),
                    span,
                )
            }
            Rvalue::Intrinsic(i, args) => {
                let args: Vec<(String, ScalarTy)> =
                    args.iter().map(|a| self.operand(a, span)).collect();
                self.intrinsic(*i, &args, span)
            }
            Rvalue::Subgroup(op, args) => {
                let args: Vec<(String, ScalarTy)> =
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
                let t = mlir_scalar(ty);
                let v = self.fresh();
                match (op, ty.is_float()) {
                    (UnOp::Neg, true) => self.line(&format!("{v} = arith.negf {a} : {t}"), span),
                    (UnOp::Neg, false) => {
                        let zero = self.constant(Const::Int(0, ty), span);
                        self.line(&format!("{v} = arith.subi {zero}, {a} : {t}"), span);
                    }
                    (UnOp::Not, _) => {
                        let ones = if ty == ScalarTy::Bool {
                            Const::Bool(true)
                        } else {
                            Const::Int(-1, ty)
                        };
                        let ones = self.constant(ones, span);
                        self.line(&format!("{v} = arith.xori {a}, {ones} : {t}"), span);
                    }
                }
                (v, ty)
            }
            Rvalue::Cast(a, to) => {
                let (a, from) = self.operand(a, span);
                (self.cast(a, from, *to, span), *to)
            }
            Rvalue::Len(l) => {
                let container = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!("\"offload.len\"(%arg{}) : ({container}) -> index", l.0),
                    span,
                )
            }
            Rvalue::RegionCoord(l, d) | Rvalue::RegionExtent(l, d) => {
                let op = if matches!(rv, Rvalue::RegionCoord(..)) {
                    "offload.region_coord"
                } else {
                    "offload.extent"
                };
                let region = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!(
                        "\"{op}\"(%arg{}) {{dim = {d} : i64}} : ({region}) -> index",
                        l.0
                    ),
                    span,
                )
            }
            Rvalue::RegionIndex(l) => {
                let region = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!(
                        "\"offload.region_index\"(%arg{}) : ({region}) -> index",
                        l.0
                    ),
                    span,
                )
            }
        }
    }

    fn subgroup(
        &mut self,
        op: SubgroupOp,
        args: &[(String, ScalarTy)],
        span: Span,
    ) -> (String, ScalarTy) {
        match op {
            SubgroupOp::Size => self.index_query("\"offload.subgroup_size\"() : () -> index", span),
            SubgroupOp::Lane => self.index_query("\"offload.subgroup_lane\"() : () -> index", span),
            SubgroupOp::Shuffle | SubgroupOp::ShuffleXor => {
                let (value, ty) = args[0].clone();
                let t = mlir_scalar(ty);
                // Lanes are `i32` on every target; a lane past `u32::MAX` saturates,
                // which is past the subgroup either way.
                let (lane, _) = args[1].clone();
                let max = self.constant(Const::Int(i32::MAX as i128, ScalarTy::I64), span);
                let clamped = self.fresh();
                self.line(
                    &format!("{clamped} = arith.minui {lane}, {max} : i64"),
                    span,
                );
                let lane32 = self.fresh();
                self.line(
                    &format!("{lane32} = arith.trunci {clamped} : i64 to i32"),
                    span,
                );
                let mode = (op == SubgroupOp::ShuffleXor) as i64;
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.shuffle\"({value}, {lane32}) {{mode = {mode} : i64}} : ({t}, i32) -> {t}"),
                    span,
                );
                (v, ty)
            }
            SubgroupOp::Sum | SubgroupOp::Min | SubgroupOp::Max => {
                let (value, ty) = args[0].clone();
                let t = mlir_scalar(ty);
                let combine = match (op, ty.is_float(), ty.is_signed()) {
                    (SubgroupOp::Sum, true, _) => "arith.addf",
                    (SubgroupOp::Sum, false, _) => "arith.addi",
                    (SubgroupOp::Min, true, _) => "arith.minnumf",
                    (SubgroupOp::Min, false, true) => "arith.minsi",
                    (SubgroupOp::Min, false, false) => "arith.minui",
                    (_, true, _) => "arith.maxnumf",
                    (_, false, true) => "arith.maxsi",
                    (_, false, false) => "arith.maxui",
                };
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.subgroup_reduce\"({value}) {{combine = \"{combine}\"}} : ({t}) -> {t}"),
                    span,
                );
                (v, ty)
            }
            SubgroupOp::Ballot => {
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.ballot\"({}) : (i1) -> i64", args[0].0),
                    span,
                );
                (v, ScalarTy::U64)
            }
            SubgroupOp::Any | SubgroupOp::All => {
                // any(b) = ballot(b) != 0; all(b) = ballot(!b) == 0.
                let all = op == SubgroupOp::All;
                let mut p = args[0].0.clone();
                if all {
                    let t = self.constant(Const::Bool(true), span);
                    let n = self.fresh();
                    self.line(&format!("{n} = arith.xori {p}, {t} : i1"), span);
                    p = n;
                }
                let mask = self.fresh();
                self.line(
                    &format!("{mask} = \"offload.ballot\"({p}) : (i1) -> i64"),
                    span,
                );
                let zero = self.constant(Const::Int(0, ScalarTy::U64), span);
                let v = self.fresh();
                let pred = if all { "eq" } else { "ne" };
                self.line(
                    &format!("{v} = arith.cmpi {pred}, {mask}, {zero} : i64"),
                    span,
                );
                (v, ScalarTy::Bool)
            }
        }
    }

    /// An op yielding an `index` (`op` is its text after `=`), as a `usize`.
    fn index_query(&mut self, op: &str, span: Span) -> (String, ScalarTy) {
        let i = self.fresh();
        self.line(&format!("{i} = {op}"), span);
        let v = self.fresh();
        self.line(&format!("{v} = arith.index_cast {i} : index to i64"), span);
        (v, ScalarTy::Usize)
    }

    fn intrinsic(
        &mut self,
        i: Intrinsic,
        args: &[(String, ScalarTy)],
        span: Span,
    ) -> (String, ScalarTy) {
        let (a, ty) = args[0].clone();
        let t = mlir_scalar(ty);
        let names: Vec<&str> = args.iter().map(|(v, _)| v.as_str()).collect();
        let list = names.join(", ");
        let v = self.fresh();
        let unary = match i {
            Intrinsic::Sqrt => Some("math.sqrt"),
            Intrinsic::Exp => Some("math.exp"),
            Intrinsic::Exp2 => Some("math.exp2"),
            Intrinsic::Ln => Some("math.log"),
            Intrinsic::Log2 => Some("math.log2"),
            Intrinsic::Log10 => Some("math.log10"),
            Intrinsic::Sin => Some("math.sin"),
            Intrinsic::Cos => Some("math.cos"),
            Intrinsic::Tan => Some("math.tan"),
            Intrinsic::Tanh => Some("math.tanh"),
            Intrinsic::Floor => Some("math.floor"),
            Intrinsic::Ceil => Some("math.ceil"),
            // Rust rounds half away from zero, as `math.round` does.
            Intrinsic::Round => Some("math.round"),
            Intrinsic::Trunc => Some("math.trunc"),
            Intrinsic::Abs if ty.is_float() => Some("math.absf"),
            Intrinsic::Abs => Some("math.absi"),
            _ => None,
        };
        if let Some(op) = unary {
            self.line(&format!("{v} = {op} {a} : {t}"), span);
            return (v, ty);
        }
        match i {
            Intrinsic::Min | Intrinsic::Max => {
                // Rust's float `min`/`max` return the non-NaN operand: `minnumf`/`maxnumf`.
                let op = match (i == Intrinsic::Min, ty.is_float(), ty.is_signed()) {
                    (true, true, _) => "minnumf",
                    (false, true, _) => "maxnumf",
                    (true, false, true) => "minsi",
                    (false, false, true) => "maxsi",
                    (true, false, false) => "minui",
                    (false, false, false) => "maxui",
                };
                self.line(&format!("{v} = arith.{op} {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::Powf => {
                self.line(&format!("{v} = math.powf {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::Powi => {
                self.line(&format!("{v} = math.fpowi {list} : {t}, i32"), span);
                (v, ty)
            }
            Intrinsic::MulAdd => {
                self.line(&format!("{v} = math.fma {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::LeadingZeros | Intrinsic::TrailingZeros | Intrinsic::CountOnes => {
                let op = match i {
                    Intrinsic::LeadingZeros => "math.ctlz",
                    Intrinsic::TrailingZeros => "math.cttz",
                    _ => "math.ctpop",
                };
                self.line(&format!("{v} = {op} {a} : {t}"), span);
                (self.cast(v, ty, ScalarTy::U32, span), ScalarTy::U32)
            }
            _ => unreachable!("unary intrinsics are handled above"),
        }
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: String,
        b: String,
        ty: ScalarTy,
        bty: ScalarTy,
        span: Span,
    ) -> (String, ScalarTy) {
        let t = mlir_scalar(ty);
        let float = ty.is_float();
        let signed = ty.is_signed();
        let v = self.fresh();
        if op.is_comparison() {
            let pred = match (op, float, signed) {
                (BinOp::Eq, true, _) => "oeq",
                // Rust's `!=` is true when either side is NaN.
                (BinOp::Ne, true, _) => "une",
                (BinOp::Lt, true, _) => "olt",
                (BinOp::Le, true, _) => "ole",
                (BinOp::Gt, true, _) => "ogt",
                (BinOp::Ge, true, _) => "oge",
                (BinOp::Eq, false, _) => "eq",
                (BinOp::Ne, false, _) => "ne",
                (BinOp::Lt, false, true) => "slt",
                (BinOp::Le, false, true) => "sle",
                (BinOp::Gt, false, true) => "sgt",
                (BinOp::Ge, false, true) => "sge",
                (BinOp::Lt, false, false) => "ult",
                (BinOp::Le, false, false) => "ule",
                (BinOp::Gt, false, false) => "ugt",
                (BinOp::Ge, false, false) => "uge",
                _ => unreachable!("comparison operators are listed above"),
            };
            let cmp = if float { "cmpf" } else { "cmpi" };
            self.line(&format!("{v} = arith.{cmp} {pred}, {a}, {b} : {t}"), span);
            return (v, ScalarTy::Bool);
        }
        if op.is_shift() {
            // Rust masks the shift amount to the bit width (release semantics), so the
            // shift is never out of range.
            let amount = self.cast(b, bty, ty_unsigned_of(ty), span);
            let mask = self.constant(Const::Int(ty.bits() as i128 - 1, ty_unsigned_of(ty)), span);
            let masked = self.fresh();
            self.line(
                &format!("{masked} = arith.andi {amount}, {mask} : {t}"),
                span,
            );
            let name = match (op, signed) {
                (BinOp::Shl, _) => "shli",
                (_, true) => "shrsi",
                (_, false) => "shrui",
            };
            self.line(&format!("{v} = arith.{name} {a}, {masked} : {t}"), span);
            return (v, ty);
        }
        let name = match (op, float, signed) {
            (BinOp::Add, true, _) => "addf",
            (BinOp::Sub, true, _) => "subf",
            (BinOp::Mul, true, _) => "mulf",
            (BinOp::Div, true, _) => "divf",
            (BinOp::Rem, true, _) => "remf",
            (BinOp::Add, false, _) => "addi",
            (BinOp::Sub, false, _) => "subi",
            (BinOp::Mul, false, _) => "muli",
            (BinOp::Div, false, true) => "divsi",
            (BinOp::Div, false, false) => "divui",
            (BinOp::Rem, false, true) => "remsi",
            (BinOp::Rem, false, false) => "remui",
            (BinOp::BitAnd, false, _) => "andi",
            (BinOp::BitOr, false, _) => "ori",
            (BinOp::BitXor, false, _) => "xori",
            _ => unreachable!("validated: bitwise operators are not applied to floats"),
        };
        self.line(&format!("{v} = arith.{name} {a}, {b} : {t}"), span);
        (v, ty)
    }

    /// Rust's `as`: integers truncate or extend by the source's signedness, floats to
    /// integers saturate (NaN becomes 0), integers to floats round to nearest.
    fn cast(&mut self, a: String, from: ScalarTy, to: ScalarTy, span: Span) -> String {
        let (ft, tt) = (mlir_scalar(from), mlir_scalar(to));
        if ft == tt && from.is_float() == to.is_float() {
            return a;
        }
        let v = self.fresh();
        match (from.is_float(), to.is_float()) {
            (false, false) => {
                let op = if from.bits() > to.bits() {
                    "trunci"
                } else if from.is_signed() {
                    "extsi"
                } else {
                    "extui"
                };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (false, true) => {
                let op = if from.is_signed() { "sitofp" } else { "uitofp" };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (true, true) => {
                let op = if from.bits() > to.bits() {
                    "truncf"
                } else {
                    "extf"
                };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (true, false) => return self.saturating_float_to_int(a, from, to, span),
        }
        v
    }

    fn saturating_float_to_int(
        &mut self,
        a: String,
        from: ScalarTy,
        to: ScalarTy,
        span: Span,
    ) -> String {
        let (ft, tt) = (mlir_scalar(from), mlir_scalar(to));
        let (min, max): (i128, i128) = if to.is_signed() {
            (-(1i128 << (to.bits() - 1)), (1i128 << (to.bits() - 1)) - 1)
        } else {
            (0, (1i128 << to.bits()) - 1)
        };
        // Clamp in the float domain to the representable range, convert, then fix up the
        // ends exactly (the float bounds may round past them) and map NaN to zero.
        let lo = self.constant(Const::Float(min as f64, from), span);
        let hi = self.constant(Const::Float(max as f64, from), span);
        let clamped_lo = self.fresh();
        self.line(
            &format!("{clamped_lo} = arith.maxnumf {a}, {lo} : {ft}"),
            span,
        );
        let clamped = self.fresh();
        self.line(
            &format!("{clamped} = arith.minnumf {clamped_lo}, {hi} : {ft}"),
            span,
        );
        let conv = self.fresh();
        let op = if to.is_signed() { "fptosi" } else { "fptoui" };
        // `max` may not be representable: a value that rounds up to 2^bits converts out
        // of range, so treat anything at or above `hi` as `max` exactly.
        let below_hi = self.fresh();
        self.line(
            &format!("{below_hi} = arith.cmpf olt, {clamped}, {hi} : {ft}"),
            span,
        );
        let safe = self.fresh();
        let lo_again = lo.clone();
        self.line(
            &format!("{safe} = arith.select {below_hi}, {clamped}, {lo_again} : {ft}"),
            span,
        );
        self.line(&format!("{conv} = arith.{op} {safe} : {ft} to {tt}"), span);
        let max_c = self.constant(Const::Int(max, to), span);
        let sat = self.fresh();
        self.line(
            &format!("{sat} = arith.select {below_hi}, {conv}, {max_c} : {tt}"),
            span,
        );
        let is_nan = self.fresh();
        self.line(&format!("{is_nan} = arith.cmpf uno, {a}, {a} : {ft}"), span);
        let zero = self.constant(Const::Int(0, to), span);
        let v = self.fresh();
        self.line(
            &format!("{v} = arith.select {is_nan}, {zero}, {sat} : {tt}"),
            span,
        );
        v
    }
}
