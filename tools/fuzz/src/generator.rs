//! The generator's state and its scalar statements. Control flow is in `flow.rs`, memory
//! accesses in `memory.rs`, the deliberate rule breaks in `broken.rs`.
//!
//! The generator keeps a pool of the scalar locals that are assigned on every path to the
//! current block (so the validator's definite-initialisation check passes), each marked
//! *varying* when its value may differ between threads of a workgroup, computed as
//! `offload_mir::convergence` does. Barriers and subgroup operations are emitted only in
//! uniform context: outside every branch or loop on a varying value.

use crate::Config;
use crate::builder::{Builder, copy};
use crate::plan::Plan;
use crate::values::{extreme_bits, random_const};
use fastrand::Rng;
use offload_mir::interp::bits_const;
use offload_mir::*;

/// `op`, read with `copy` if it was a `move`.
pub(crate) fn copied(op: Operand) -> Operand {
    match op {
        Operand::Move(p) => Operand::Copy(p),
        other => other,
    }
}

/// A scalar local in scope.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Value {
    pub local: Local,
    pub ty: ScalarTy,
    pub varying: bool,
}

pub(crate) struct Gen<'c> {
    pub rng: Rng,
    pub b: Builder,
    pub cfg: &'c Config,
    pub plan: Plan,
    pub pool: Vec<Value>,
    /// Whether the current block runs for all threads of a workgroup or none.
    pub uniform: bool,
    /// Nesting of branches and loops.
    pub depth: u32,
    /// Segments left for the whole body.
    pub budget: u32,
    /// Regions whose own element the current block is accessing.
    pub open_regions: Vec<Local>,
}

/// Integer types by how often they are picked: `usize` indexes, `i32` is common.
const TYPES: [ScalarTy; 18] = [
    ScalarTy::Bool,
    ScalarTy::I8,
    ScalarTy::I16,
    ScalarTy::I32,
    ScalarTy::I32,
    ScalarTy::I64,
    ScalarTy::Isize,
    ScalarTy::U8,
    ScalarTy::U16,
    ScalarTy::U32,
    ScalarTy::U64,
    ScalarTy::Usize,
    ScalarTy::Usize,
    ScalarTy::F32,
    ScalarTy::F32,
    ScalarTy::F64,
    ScalarTy::F16,
    ScalarTy::Bf16,
];

/// The float functions of the intrinsic table that are `exact` (every target computes
/// the same bits) or not (transcendental ones, whose CPU results are the host libm's,
/// which other targets need not match bit for bit), in the table's order.
fn float_functions(exact: bool) -> Vec<Intrinsic> {
    Intrinsic::all()
        .filter(|i| i.is_exact() == exact)
        .filter(|i| {
            matches!(
                i.def().signature,
                Signature::Float | Signature::Signed | Signature::Ordered | Signature::FloatI32
            )
        })
        .collect()
}

/// Whether MIR casts `from` to `to`: any numeric cast, but a 16-bit float only to and
/// from `f32`, `f64` and itself.
pub(crate) fn casts(from: ScalarTy, to: ScalarTy) -> bool {
    let wide = |t: ScalarTy| matches!(t, ScalarTy::F32 | ScalarTy::F64);
    if !(from.is_half() || to.is_half()) {
        return true;
    }
    from == to || wide(from) || wide(to)
}

impl Gen<'_> {
    /// A type, often one the pool has values of, so that values flow into each other.
    pub fn pick_type(&mut self) -> ScalarTy {
        if !self.pool.is_empty() && self.rng.u32(0..5) < 3 {
            return self.pool[self.rng.usize(..self.pool.len())].ty;
        }
        TYPES[self.rng.usize(..TYPES.len())]
    }

    pub fn pick_int(&mut self) -> ScalarTy {
        loop {
            let t = self.pick_type();
            if t.is_integer() {
                return t;
            }
        }
    }

    /// A local of type `ty` from the pool, if there is one.
    pub fn pooled(&mut self, ty: ScalarTy) -> Option<Value> {
        let n = self.pool.iter().filter(|v| v.ty == ty).count();
        if n == 0 {
            return None;
        }
        let k = self.rng.usize(..n);
        self.pool.iter().filter(|v| v.ty == ty).nth(k).copied()
    }

    /// An operand of type `ty`, and whether it varies between threads: mostly a local
    /// from the pool, else a constant (now and then an extreme one).
    pub fn operand(&mut self, ty: ScalarTy) -> (Operand, bool) {
        if self.rng.u32(0..4) != 0
            && let Some(v) = self.pooled(ty)
        {
            return (copy(v.local), v.varying);
        }
        let c = if self.rng.u32(0..5) == 0 {
            bits_const(ty, extreme_bits(&mut self.rng, ty))
        } else {
            random_const(&mut self.rng, ty)
        };
        (Operand::Const(c), false)
    }

    /// Assigns `rvalue` of type `ty` to a new local and puts it in the pool.
    pub fn define(&mut self, ty: ScalarTy, rvalue: Rvalue, varying: bool) -> Value {
        let local = self.b.assign(ty, rvalue);
        let v = Value {
            local,
            ty,
            varying: varying || !self.uniform,
        };
        self.pool.push(v);
        v
    }

    /// A few scalar statements.
    pub fn scalars(&mut self) {
        for _ in 0..self.rng.u32(1..=4) {
            self.scalar();
        }
    }

    /// One scalar statement of a random kind and type.
    pub fn scalar(&mut self) -> Value {
        let ty = self.pick_type();
        let (ty, rvalue, varying) = match self.rng.u32(0..12) {
            0..=3 => self.arithmetic(ty),
            4 => self.unary(ty),
            5..=6 => self.cast_to(ty),
            7..=8 => self.intrinsic(ty),
            9 => self.comparison(),
            10 => self.query(),
            _ => return self.use_of(ty),
        };
        self.define(ty, rvalue, varying)
    }

    /// A copy of an operand, or now and then a `move` of the latest statement's result,
    /// which then leaves the pool (nothing reads a local after it is moved).
    fn use_of(&mut self, ty: ScalarTy) -> Value {
        let last = self.b.body.blocks[self.b.current.index()].statements.last();
        let fresh = last.and_then(|s| {
            let v = *self.pool.last()?;
            (s.place == Place::local(v.local) && self.rng.u32(0..4) == 0).then_some(v)
        });
        if let Some(v) = fresh {
            self.pool.pop();
            let moved = Rvalue::Use(Operand::Move(Place::local(v.local)));
            return self.define(v.ty, moved, v.varying);
        }
        let (a, v) = self.operand(ty);
        self.define(ty, Rvalue::Use(a), v)
    }

    /// An arithmetic or bitwise operation with a result of type `ty`.
    fn arithmetic(&mut self, ty: ScalarTy) -> (ScalarTy, Rvalue, bool) {
        if ty == ScalarTy::Bool {
            let op = [BinOp::BitAnd, BinOp::BitOr, BinOp::BitXor][self.rng.usize(..3)];
            let ((a, va), (b, vb)) = (self.operand(ty), self.operand(ty));
            return (ty, Rvalue::BinaryOp(op, a, b), va || vb);
        }
        let ops: &[BinOp] = if ty.is_float() {
            &BinOp::ALL[..5]
        } else {
            &BinOp::ALL[..10]
        };
        let op = ops[self.rng.usize(..ops.len())];
        let (a, va) = self.operand(ty);
        let amount_ty = if op.is_shift() { self.pick_int() } else { ty };
        let (b, vb) = self.operand(amount_ty);
        if matches!(op, BinOp::Div | BinOp::Rem) && ty.is_integer() {
            // The checks read the operands again. A constant zero divisor would make the
            // check always fail (and Rust refuses `x / 0`).
            let b = match copied(b) {
                Operand::Const(Const::Int(0, t)) => Operand::Const(Const::Int(1, t)),
                other => other,
            };
            let a = copied(a);
            self.checked_division(op, ty, a, b);
            return (ty, Rvalue::BinaryOp(op, a, b), va || vb);
        }
        (ty, Rvalue::BinaryOp(op, a, b), va || vb)
    }

    /// The checks the frontend emits before an integer division (`checked_division` in
    /// `translate.rs`), in its order and shape.
    pub fn checked_division(&mut self, op: BinOp, ty: ScalarTy, lhs: Operand, rhs: Operand) {
        let divisor = match rhs {
            Operand::Const(Const::Int(v, _)) => Some(v),
            _ => None,
        };
        let div = op == BinOp::Div;
        if divisor.is_none_or(|v| v == 0) {
            let zero = Operand::Const(Const::Int(0, ty));
            let nonzero = self.b.binary(ScalarTy::Bool, BinOp::Ne, rhs, zero);
            let msg = if div {
                "attempt to divide by zero"
            } else {
                "attempt to calculate the remainder with a divisor of zero"
            };
            self.b
                .assert(copy(nonzero), AssertMessage::Panic(msg.into()));
        }
        if ty.is_signed() && divisor.is_none_or(|v| v == -1) {
            let min = Operand::Const(Const::Int(-(1i128 << (ty.bits() - 1)), ty));
            let minus_one = Operand::Const(Const::Int(-1, ty));
            let is_minus_one = self.b.binary(ScalarTy::Bool, BinOp::Eq, rhs, minus_one);
            let is_min = self.b.binary(ScalarTy::Bool, BinOp::Eq, lhs, min);
            let both = self.b.binary(
                ScalarTy::Bool,
                BinOp::BitAnd,
                copy(is_minus_one),
                copy(is_min),
            );
            let fine = self
                .b
                .assign(ScalarTy::Bool, Rvalue::UnaryOp(UnOp::Not, copy(both)));
            let msg = if div {
                "attempt to divide with overflow"
            } else {
                "attempt to calculate the remainder with overflow"
            };
            self.b.assert(copy(fine), AssertMessage::Panic(msg.into()));
        }
    }

    fn unary(&mut self, ty: ScalarTy) -> (ScalarTy, Rvalue, bool) {
        let op = if ty.is_float() || (ty.is_signed() && self.rng.bool()) {
            UnOp::Neg
        } else {
            UnOp::Not
        };
        let (a, v) = self.operand(ty);
        (ty, Rvalue::UnaryOp(op, a), v)
    }

    fn cast_to(&mut self, ty: ScalarTy) -> (ScalarTy, Rvalue, bool) {
        if ty == ScalarTy::Bool {
            return self.comparison();
        }
        let from = self.pick_type();
        let from = if casts(from, ty) { from } else { ScalarTy::F32 };
        let from = if casts(from, ty) { from } else { ty };
        let (a, v) = self.operand(from);
        (ty, Rvalue::Cast(a, ty), v)
    }

    fn intrinsic(&mut self, ty: ScalarTy) -> (ScalarTy, Rvalue, bool) {
        if ty.is_float() {
            return self.float_intrinsic(ty);
        }
        if ty == ScalarTy::Bool {
            return self.comparison();
        }
        if matches!(ty, ScalarTy::U32 | ScalarTy::U64) && self.rng.u32(0..4) == 0 {
            let float = if ty == ScalarTy::U32 {
                ScalarTy::F32
            } else {
                ScalarTy::F64
            };
            let (a, v) = self.operand(float);
            return (ty, Rvalue::Intrinsic(Intrinsic::ToBits, vec![a]), v);
        }
        if ty == ScalarTy::U32 && self.rng.bool() {
            let f = [
                Intrinsic::LeadingZeros,
                Intrinsic::TrailingZeros,
                Intrinsic::CountOnes,
            ][self.rng.usize(..3)];
            let from = self.pick_int();
            let (a, v) = self.operand(from);
            return (ty, Rvalue::Intrinsic(f, vec![a]), v);
        }
        let f = match (ty.is_signed(), self.rng.u32(0..3)) {
            (true, 0) => Intrinsic::Abs,
            (_, 1) => Intrinsic::Min,
            _ => Intrinsic::Max,
        };
        let mut args = Vec::new();
        let mut varying = false;
        for _ in 0..f.arity() {
            let (a, v) = self.operand(ty);
            args.push(a);
            varying |= v;
        }
        (ty, Rvalue::Intrinsic(f, args), varying)
    }

    fn float_intrinsic(&mut self, ty: ScalarTy) -> (ScalarTy, Rvalue, bool) {
        // `f16` and `bf16` have `min` and `max` only.
        if ty.is_half() {
            let f = [Intrinsic::Min, Intrinsic::Max][self.rng.usize(..2)];
            let ((a, va), (b, vb)) = (self.operand(ty), self.operand(ty));
            return (ty, Rvalue::Intrinsic(f, vec![a, b]), va || vb);
        }
        // Now and then a float read from an integer's bits.
        if self.rng.u32(0..8) == 0 {
            let bits = if ty == ScalarTy::F32 {
                ScalarTy::U32
            } else {
                ScalarTy::U64
            };
            let (a, v) = self.operand(bits);
            return (ty, Rvalue::Intrinsic(Intrinsic::FromBits, vec![a]), v);
        }
        let functions = float_functions(!(self.cfg.transcendentals && self.rng.u32(0..3) == 0));
        let f = functions[self.rng.usize(..functions.len())];
        let (a, mut varying) = self.operand(ty);
        let mut args = vec![a];
        if f == Intrinsic::Powi {
            args.push(self.powi_exponent(ty));
        } else {
            for _ in 1..f.arity() {
                let (b, v) = self.operand(ty);
                args.push(b);
                varying |= v;
            }
        }
        (ty, Rvalue::Intrinsic(f, args), varying)
    }

    /// A `powi` exponent. With both operands constant, MLIR folds `powi` with libm's `pow`
    /// instead of the square-and-multiply loop it otherwise calls; the two agree exactly
    /// for these small powers (an `f32` power is computed in `f64` by `powf`).
    fn powi_exponent(&mut self, ty: ScalarTy) -> Operand {
        if self.cfg.transcendentals {
            return self.operand(ScalarTy::I32).0;
        }
        let exact: &[i128] = if ty == ScalarTy::F32 {
            &[-1, 0, 1, 2]
        } else {
            &[0, 1, 2]
        };
        Operand::Const(Const::Int(
            exact[self.rng.usize(..exact.len())],
            ScalarTy::I32,
        ))
    }

    pub fn comparison(&mut self) -> (ScalarTy, Rvalue, bool) {
        let op = BinOp::ALL[10 + self.rng.usize(..6)];
        let t = self.pick_type();
        let ((a, va), (b, vb)) = (self.operand(t), self.operand(t));
        (ScalarTy::Bool, Rvalue::BinaryOp(op, a, b), va || vb)
    }

    /// A `bool` operand for a branch: a pooled one or a fresh comparison.
    pub fn condition(&mut self) -> (Operand, bool) {
        if self.rng.bool()
            && let Some(v) = self.pooled(ScalarTy::Bool)
        {
            return (copy(v.local), v.varying);
        }
        let (ty, rv, varying) = self.comparison();
        let v = self.define(ty, rv, varying);
        (copy(v.local), v.varying)
    }

    /// A `usize` about the launch or a container: a position, a length, an extent, a
    /// region index or coordinate, or the subgroup's size or lane.
    fn query(&mut self) -> (ScalarTy, Rvalue, bool) {
        let d = self.rng.u32(0..3) as u8;
        let regions = self.plan.regions.clone();
        let rv = match self.rng.u32(0..6) {
            0 | 1 => Rvalue::Position(Position::ALL[self.rng.usize(..4)], d),
            2 if !regions.is_empty() => {
                let r = regions[self.rng.usize(..regions.len())];
                match self.rng.u32(0..3) {
                    0 => Rvalue::RegionIndex(r.local),
                    1 => Rvalue::RegionCoord(r.local, d.min(1)),
                    _ => Rvalue::RegionExtent(r.local, d.min(1)),
                }
            }
            3 => match self.len_target() {
                Some(l) => Rvalue::Len(l),
                None => Rvalue::Position(Position::WorkgroupSize, d),
            },
            4 => Rvalue::Subgroup(
                [SubgroupOp::Size, SubgroupOp::Lane][self.rng.usize(..2)],
                Vec::new(),
            ),
            _ => Rvalue::Position(Position::Thread, d),
        };
        let varying = match &rv {
            Rvalue::Position(p, _) => *p == Position::Thread,
            Rvalue::RegionIndex(_) | Rvalue::RegionCoord(..) => true,
            Rvalue::Subgroup(op, _) => *op == SubgroupOp::Lane,
            _ => false,
        };
        (ScalarTy::Usize, rv, varying)
    }

    /// A container whose `Len` the generator asks for.
    fn len_target(&mut self) -> Option<Local> {
        let p = &self.plan;
        let all: Vec<Local> = (p.regions.iter())
            .map(|r| r.local)
            .chain(p.slices.iter().map(|s| s.local))
            .chain(p.atomics.iter().map(|a| a.local))
            .chain(p.shared.iter().map(|s| s.local))
            .collect();
        (!all.is_empty()).then(|| all[self.rng.usize(..all.len())])
    }
}
