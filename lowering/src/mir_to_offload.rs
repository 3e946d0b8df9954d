//! MIR → `offload` dialect.
//!
//! Emits MLIR text for one validated kernel and leaves parsing and verification to the
//! caller. Each MIR scalar local becomes a `memref.alloca` of rank 0 that statements load
//! from and store to; upstream `mem2reg` then turns them into SSA values and block
//! arguments. Region and slice arguments stay values of `!offload.region` and
//! `!offload.slice` type and are reached only through `offload` ops. Every MIR block
//! becomes one MLIR block; an extra entry block holds the allocas, since MLIR's entry
//! block cannot be a branch target while MIR's `bb0` can.

use offload_mir::*;
use std::fmt::Write;

/// The MLIR spelling of a scalar type. Rust's integers are signless in MLIR; signedness
/// picks the operation (`divsi` or `divui`, `slt` or `ult`).
pub fn mlir_scalar(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool => "i1",
        ScalarTy::I8 | ScalarTy::U8 => "i8",
        ScalarTy::I16 | ScalarTy::U16 => "i16",
        ScalarTy::I32 | ScalarTy::U32 => "i32",
        ScalarTy::I64 | ScalarTy::U64 | ScalarTy::Isize | ScalarTy::Usize => "i64",
        ScalarTy::F32 => "f32",
        ScalarTy::F64 => "f64",
    }
}

pub fn mlir_type(t: Ty) -> String {
    match t {
        Ty::Unit => "()".into(),
        Ty::Scalar(s) => mlir_scalar(s).into(),
        Ty::Region(e, s) => format!("!offload.region<{}, \"{s}\">", mlir_scalar(e)),
        Ty::Slice(e) => format!("!offload.slice<{}>", mlir_scalar(e)),
        Ty::Atomic(e) => format!("!offload.atomic<{}>", mlir_scalar(e)),
        Ty::Shared(e, _) => format!("!offload.shared<{}>", mlir_scalar(e)),
    }
}

/// Prints the kernel as a module in the `offload` dialect.
pub fn emit(body: &Linked) -> String {
    let mut e = Emitter {
        body: body.body(),
        out: String::new(),
        next_value: 0,
        panic_blocks: String::new(),
        panic_count: 0,
    };
    e.kernel();
    e.out
}

struct Emitter<'a> {
    body: &'a Body,
    out: String,
    next_value: usize,
    /// Blocks that report a panic, appended after the MIR blocks.
    panic_blocks: String,
    panic_count: usize,
}

impl Emitter<'_> {
    fn fresh(&mut self) -> String {
        self.next_value += 1;
        format!("%v{}", self.next_value)
    }

    fn loc(&self, span: Span) -> String {
        format!("loc({:?}:{}:{})", self.body.file, span.line, span.column)
    }

    fn line(&mut self, text: &str, span: Span) {
        let loc = self.loc(span);
        writeln!(self.out, "    {text} {loc}").unwrap();
    }

    fn kernel(&mut self) {
        let b = self.body;
        let args: Vec<String> = b
            .args()
            .map(|(l, d)| format!("%arg{}: {}", l.0, mlir_type(d.ty)))
            .collect();
        writeln!(self.out, "module {{").unwrap();
        writeln!(
            self.out,
            "  func.func @{}({}) attributes {{offload.kernel}} {{",
            b.name,
            args.join(", ")
        )
        .unwrap();
        let entry_span = b.blocks[0]
            .statements
            .first()
            .map(|s| s.span)
            .unwrap_or(b.blocks[0].terminator.span);
        for (i, decl) in b.locals.iter().enumerate() {
            let Ty::Scalar(s) = decl.ty else { continue };
            let span = decl.debug.as_ref().map(|d| d.1).unwrap_or(entry_span);
            self.line(
                &format!("%l{i} = memref.alloca() : memref<{}>", mlir_scalar(s)),
                span,
            );
            if (1..=b.arg_count).contains(&i) {
                self.line(
                    &format!("memref.store %arg{i}, %l{i}[] : memref<{}>", mlir_scalar(s)),
                    span,
                );
            }
        }
        // Shared arrays are values like the container arguments, named alike.
        let layout = b.shared_layout();
        for (i, decl) in b.locals.iter().enumerate() {
            let Ty::Shared(_, len) = decl.ty else {
                continue;
            };
            let span = decl.debug.as_ref().map(|d| d.1).unwrap_or(entry_span);
            let offset = layout
                .arrays
                .iter()
                .find(|(l, _)| l.index() == i)
                .map_or(layout.dynamic_offset, |(_, o)| *o);
            let len = len.map_or(-1, i64::from);
            self.line(
                &format!(
                    "%arg{i} = \"offload.alloc_shared\"() {{len = {len} : i64, offset = {offset} : i64}} : () -> {}",
                    mlir_type(decl.ty)
                ),
                span,
            );
        }
        self.line("cf.br ^bb0", entry_span);
        for (i, block) in b.blocks.iter().enumerate() {
            writeln!(self.out, "  ^bb{i}:").unwrap();
            for s in &block.statements {
                self.statement(s);
            }
            self.terminator(&block.terminator);
        }
        let panics = std::mem::take(&mut self.panic_blocks);
        self.out.push_str(&panics);
        writeln!(self.out, "  }}").unwrap();
        writeln!(self.out, "}}").unwrap();
    }

    fn scalar_of(&self, p: Place) -> ScalarTy {
        let ty = self.body.locals[p.local.index()].ty;
        match p.index {
            Some(_) => ty
                .element()
                .expect("validated: indexed locals are regions or slices"),
            None => ty.scalar().expect("validated: plain places are scalars"),
        }
    }

    /// Loads an index local and converts it to MLIR's `index` type.
    fn index_value(&mut self, index: Local, span: Span) -> String {
        let raw = self.fresh();
        self.line(
            &format!("{raw} = memref.load %l{}[] : memref<i64>", index.0),
            span,
        );
        let v = self.fresh();
        self.line(
            &format!("{v} = arith.index_cast {raw} : i64 to index"),
            span,
        );
        v
    }

    fn operand(&mut self, op: &Operand, span: Span) -> (String, ScalarTy) {
        match op {
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.scalar_of(*p);
                let t = mlir_scalar(ty);
                let v = match p.index {
                    None => {
                        let v = self.fresh();
                        self.line(
                            &format!("{v} = memref.load %l{}[] : memref<{t}>", p.local.0),
                            span,
                        );
                        v
                    }
                    Some(index) => {
                        let i = self.index_value(index, span);
                        let v = self.fresh();
                        let container = mlir_type(self.body.locals[p.local.index()].ty);
                        self.line(
                            &format!(
                                "{v} = \"offload.load\"(%arg{}, {i}) : ({container}, index) -> {t}",
                                p.local.0
                            ),
                            span,
                        );
                        v
                    }
                };
                (v, ty)
            }
            Operand::Const(c) => {
                let ty = c.ty();
                let v = self.fresh();
                self.line(&format!("{v} = arith.constant {}", const_attr(*c)), span);
                (v, ty)
            }
        }
    }

    fn constant(&mut self, c: Const, span: Span) -> String {
        self.operand(&Operand::Const(c), span).0
    }

    fn statement(&mut self, s: &Statement) {
        let span = s.span;
        let (value, ty) = self.rvalue(&s.rvalue, span);
        let t = mlir_scalar(ty);
        match s.place.index {
            None => self.line(
                &format!(
                    "memref.store {value}, %l{}[] : memref<{t}>",
                    s.place.local.0
                ),
                span,
            ),
            Some(index) => {
                let i = self.index_value(index, span);
                let region = mlir_type(self.body.locals[s.place.local.index()].ty);
                self.line(
                    &format!(
                        "\"offload.store\"({value}, %arg{}, {i}) : ({t}, {region}, index) -> ()",
                        s.place.local.0
                    ),
                    span,
                );
            }
        }
    }

    fn rvalue(&mut self, rv: &Rvalue, span: Span) -> (String, ScalarTy) {
        match rv {
            Rvalue::Use(op) => self.operand(op, span),
            Rvalue::AtomicRmw(op, place, value) => {
                let (value, ty) = self.operand(value, span);
                let kind = match (op, ty.is_float(), ty.is_signed()) {
                    (AtomicOp::Add, true, _) => 0,
                    (AtomicOp::Add, false, _) => 1,
                    (AtomicOp::And, ..) => 2,
                    (AtomicOp::Exchange, ..) => 3,
                    (AtomicOp::Max, _, true) => 6,
                    (AtomicOp::Max, _, false) => 7,
                    (AtomicOp::Min, _, true) => 10,
                    (AtomicOp::Min, _, false) => 11,
                    (AtomicOp::Or, ..) => 14,
                    (AtomicOp::Xor, ..) => 15,
                };
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

    fn terminator(&mut self, t: &Terminator) {
        let span = t.span;
        match &t.kind {
            TerminatorKind::Goto(b) => self.line(&format!("cf.br ^bb{}", b.0), span),
            TerminatorKind::Barrier { target } => {
                self.line("\"offload.barrier\"() : () -> ()", span);
                self.line(&format!("cf.br ^bb{}", target.0), span);
            }
            TerminatorKind::Call { .. } => unreachable!("`emit` refuses bodies with calls"),
            TerminatorKind::Return | TerminatorKind::Unreachable => {
                // MIR `unreachable` marks code no path reaches; returning there is sound.
                self.line("func.return", span)
            }
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                let (d, ty) = self.operand(discr, span);
                if ty == ScalarTy::Bool && targets.len() == 1 && targets[0].0 == 0 {
                    self.line(
                        &format!("cf.cond_br {d}, ^bb{}, ^bb{}", otherwise.0, targets[0].1.0),
                        span,
                    );
                } else {
                    let t = mlir_scalar(ty);
                    let cases: Vec<String> = targets
                        .iter()
                        .map(|(v, b)| format!("{}: ^bb{}", signed_bits(*v, ty), b.0))
                        .collect();
                    self.line(
                        &format!(
                            "cf.switch {d} : {t}, [default: ^bb{}, {}]",
                            otherwise.0,
                            cases.join(", ")
                        ),
                        span,
                    );
                }
            }
            TerminatorKind::Assert { cond, msg, target } => {
                let (c, _) = self.operand(cond, span);
                let values = match msg {
                    AssertMessage::BoundsCheck { len, index } => {
                        vec![self.operand(len, span).0, self.operand(index, span).0]
                    }
                    AssertMessage::Panic(_) => vec![],
                };
                let site = self.panic_count;
                self.panic_count += 1;
                self.line(
                    &format!("cf.cond_br {c}, ^bb{}, ^panic{site}", target.0),
                    span,
                );
                let loc = self.loc(span);
                let types = vec!["i64"; values.len()].join(", ");
                writeln!(self.panic_blocks, "  ^panic{site}:").unwrap();
                writeln!(
                    self.panic_blocks,
                    "    \"offload.panic\"({}) {{site = {site} : i64}} : ({types}) -> () {loc}",
                    values.join(", ")
                )
                .unwrap();
                writeln!(self.panic_blocks, "    func.return {loc}").unwrap();
            }
        }
    }
}

fn ty_unsigned_of(t: ScalarTy) -> ScalarTy {
    match t.bits() {
        8 => ScalarTy::U8,
        16 => ScalarTy::U16,
        32 => ScalarTy::U32,
        _ => ScalarTy::U64,
    }
}

/// A switch value as MLIR prints an integer of the discriminant's width: two's
/// complement, signed.
fn signed_bits(v: u128, ty: ScalarTy) -> i128 {
    let bits = ty.bits();
    let v = v & ((1u128 << bits) - 1);
    if bits > 1 && v >> (bits - 1) == 1 {
        v as i128 - (1i128 << bits)
    } else {
        v as i128
    }
}

/// A constant as an `arith.constant` attribute. Floats are written as their bit pattern
/// so the value is exact.
fn const_attr(c: Const) -> String {
    match c {
        Const::Bool(b) => format!("{b}"),
        Const::Int(v, t) => format!("{} : {}", signed_bits(v as u128, t), mlir_scalar(t)),
        Const::Float(v, ScalarTy::F32) => format!("0x{:08X} : f32", (v as f32).to_bits()),
        Const::Float(v, _) => format!("0x{:016X} : f64", v.to_bits()),
    }
}
