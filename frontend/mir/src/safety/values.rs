//! Symbolic values for the memory-safety proof: every value a local can hold is named by
//! an expression over the kernel's inputs (arguments, thread position, lengths) and over
//! values the analysis does not follow (loads, merges of paths).
//!
//! Names are hash-consed, so two computations of the same expression get the same
//! [`Sym`], and a fact proven about one holds for the other. A name made at a block
//! ([`Expr::Merge`], [`Expr::Opaque`]) means its most recent instance; every name that
//! mentions it is forgotten when the block is entered again (see [`Values::rooted_at`]).

use crate::ir::*;
use std::collections::HashMap;

/// A symbolic value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

/// What a symbolic value is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A constant: its bits (two's complement, zero-extended from the type's width).
    Const(u128, ScalarTy),
    /// A scalar argument of the kernel.
    Arg(Local),
    /// A `const` item outside the kernel not yet filled in ([`Const::Item`]), which the
    /// macro's translation checks for races: one value, the same in every thread.
    Item(u32, ScalarTy),
    /// `Len(_n)`; for a static shared array this is a constant instead.
    Len(Local),
    RegionIndex(Local),
    RegionCoord(Local, u8),
    RegionExtent(Local, u8),
    RegionEnd(Local, u8),
    Position(Position, u8),
    Binary(BinOp, Sym, Sym),
    Unary(UnOp, Sym),
    Cast(Sym, ScalarTy),
    Intrinsic(Intrinsic, Vec<Sym>),
    /// An element of a container no thread writes (a slice, a `Stencil2D` region): the
    /// same index reads the same value anywhere in the kernel.
    Element(Local, Sym),
    /// The value of a local at the entry of a block where paths with different values
    /// of it meet.
    Merge(BasicBlock, Local),
    /// A value not followed (a load, an atomic's result, a subgroup value), named by the
    /// block, statement and operand position that made it.
    Opaque(BasicBlock, usize, u8),
}

/// The table of symbolic values of one analysis.
#[derive(Default)]
pub struct Values {
    exprs: Vec<Expr>,
    ids: HashMap<Expr, Sym>,
    /// Per value, the blocks whose [`Expr::Merge`] or [`Expr::Opaque`] it mentions.
    roots: Vec<Vec<BasicBlock>>,
}

impl Values {
    pub fn get(&self, s: Sym) -> &Expr {
        &self.exprs[s.0 as usize]
    }

    pub fn intern(&mut self, e: Expr) -> Sym {
        let e = match self.simplified(e) {
            Ok(s) => return s,
            Err(e) => e,
        };
        if let Some(s) = self.ids.get(&e) {
            return *s;
        }
        let mut roots: Vec<BasicBlock> = match &e {
            Expr::Merge(b, _) | Expr::Opaque(b, ..) => vec![*b],
            Expr::Binary(_, a, b) => [self.roots(*a), self.roots(*b)].concat(),
            Expr::Unary(_, a) | Expr::Cast(a, _) | Expr::Element(_, a) => self.roots(*a).to_vec(),
            Expr::Intrinsic(_, args) => args.iter().flat_map(|a| self.roots(*a).to_vec()).collect(),
            _ => Vec::new(),
        };
        roots.sort();
        roots.dedup();
        let s = Sym(self.exprs.len() as u32);
        self.exprs.push(e.clone());
        self.roots.push(roots);
        self.ids.insert(e, s);
        s
    }

    /// The value `e` is already known as, by the identities of integer arithmetic
    /// (`x + 0`, `x * 1`, `x * 0`, and operations on two constants, wrapping in the
    /// type's width); otherwise `e` itself. Constant operands appear where linking
    /// folded known values, and must not hide the shapes the proof looks for.
    fn simplified(&mut self, e: Expr) -> Result<Sym, Expr> {
        let Expr::Binary(op, a, b) = e else {
            return Err(e);
        };
        let (x, y) = (self.const_bits(a), self.const_bits(b));
        let is = |c: Option<(u128, ScalarTy)>, v: u128| c.is_some_and(|(c, _)| c == v);
        match op {
            BinOp::Add if is(y, 0) => return Ok(a),
            BinOp::Add if is(x, 0) => return Ok(b),
            BinOp::Sub if is(y, 0) => return Ok(a),
            BinOp::Mul if is(y, 1) => return Ok(a),
            BinOp::Mul if is(x, 1) => return Ok(b),
            BinOp::Mul if is(y, 0) => return Ok(b),
            BinOp::Mul if is(x, 0) => return Ok(a),
            _ => {}
        }
        let (Some((x, t)), Some((y, u))) = (x, y) else {
            return Err(Expr::Binary(op, a, b));
        };
        if t != u || t == ScalarTy::Bool {
            return Err(Expr::Binary(op, a, b));
        }
        let signed = |v: u128| {
            let shift = 128 - t.bits();
            ((v << shift) as i128) >> shift
        };
        let order = if t.is_signed() {
            signed(x).cmp(&signed(y))
        } else {
            x.cmp(&y)
        };
        let value = match op {
            BinOp::Add => Expr::Const(truncate(x.wrapping_add(y), t), t),
            BinOp::Sub => Expr::Const(truncate(x.wrapping_sub(y), t), t),
            BinOp::Mul => Expr::Const(truncate(x.wrapping_mul(y), t), t),
            BinOp::BitAnd => Expr::Const(x & y, t),
            BinOp::BitOr => Expr::Const(x | y, t),
            BinOp::BitXor => Expr::Const(x ^ y, t),
            BinOp::Eq => Expr::Const(order.is_eq() as u128, ScalarTy::Bool),
            BinOp::Ne => Expr::Const(order.is_ne() as u128, ScalarTy::Bool),
            BinOp::Lt => Expr::Const(order.is_lt() as u128, ScalarTy::Bool),
            BinOp::Le => Expr::Const(order.is_le() as u128, ScalarTy::Bool),
            BinOp::Gt => Expr::Const(order.is_gt() as u128, ScalarTy::Bool),
            BinOp::Ge => Expr::Const(order.is_ge() as u128, ScalarTy::Bool),
            _ => return Err(Expr::Binary(op, a, b)),
        };
        Ok(self.intern(value))
    }

    fn roots(&self, s: Sym) -> &[BasicBlock] {
        &self.roots[s.0 as usize]
    }

    /// Whether `s` names an instance made at block `b`, which entering `b` again replaces.
    pub fn rooted_at(&self, s: Sym, b: BasicBlock) -> bool {
        self.roots(s).binary_search(&b).is_ok()
    }

    pub fn constant(&mut self, c: Const) -> Sym {
        let (bits, ty) = match c {
            Const::Bool(b) => (b as u128, ScalarTy::Bool),
            Const::Int(v, t) => (truncate(v as u128, t), t),
            Const::Float(f, t) => match t {
                ScalarTy::F32 => ((f as f32).to_bits() as u128, t),
                _ => (f.to_bits() as u128, t),
            },
            Const::Item(k, t) => return self.intern(Expr::Item(k, t)),
        };
        self.intern(Expr::Const(bits, ty))
    }

    pub fn usize(&mut self, v: u128) -> Sym {
        self.intern(Expr::Const(v, ScalarTy::Usize))
    }

    /// The value of `s` when it is an integer or `bool` constant, as unsigned bits.
    pub fn const_bits(&self, s: Sym) -> Option<(u128, ScalarTy)> {
        match self.get(s) {
            Expr::Const(bits, ty) if !ty.is_float() => Some((*bits, *ty)),
            _ => None,
        }
    }
}

/// `v` cut to the width of `t`.
pub fn truncate(v: u128, t: ScalarTy) -> u128 {
    if t.bits() >= 128 {
        v
    } else {
        v & ((1u128 << t.bits()) - 1)
    }
}
