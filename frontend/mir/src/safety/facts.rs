//! What the analysis knows from conditions: recording a condition that holds (split
//! through `!`, `&` and `|`), and deciding `a < b` and `a <= b` from the facts (see the
//! parent module's docs for the rules).

use super::values::{Expr, Sym};
use super::{Analysis, State};
use crate::ir::*;

impl Analysis<'_> {
    /// Records that `cond` is `value` here, with what follows from it.
    pub(super) fn assume(&mut self, state: &mut State, cond: Sym, value: bool) {
        if state.facts.insert((cond, value)).is_some() {
            return;
        }
        if self.values.const_bits(cond) == Some(((!value) as u128, ScalarTy::Bool)) {
            state.infeasible = true;
        }
        match (self.values.get(cond).clone(), value) {
            (Expr::Unary(UnOp::Not, x), v) => self.assume(state, x, !v),
            (Expr::Binary(BinOp::BitAnd, x, y), true)
            | (Expr::Binary(BinOp::BitOr, x, y), false)
                if self.is_bool(x) =>
            {
                self.assume(state, x, value);
                self.assume(state, y, value);
            }
            _ => {}
        }
    }

    pub(super) fn is_bool(&self, s: Sym) -> bool {
        match self.values.get(s) {
            Expr::Const(_, t) | Expr::Cast(_, t) => *t == ScalarTy::Bool,
            Expr::Binary(op, ..) if op.is_comparison() => true,
            Expr::Binary(_, a, _) | Expr::Unary(_, a) => self.is_bool(*a),
            Expr::Merge(_, l) => self.local_is_bool(*l),
            Expr::Arg(l) => self.local_is_bool(*l),
            _ => false,
        }
    }

    pub(super) fn local_is_bool(&self, l: Local) -> bool {
        self.body
            .locals
            .get(l.index())
            .is_some_and(|d| d.ty == Ty::Scalar(ScalarTy::Bool))
    }

    pub(super) fn holds(&self, state: &State, cond: Sym, value: bool) -> bool {
        state.facts.contains(&(cond, value))
            || self.values.const_bits(cond) == Some((value as u128, ScalarTy::Bool))
    }

    /// Whether `a < b` (unsigned `usize`) is known, of `a` or of a constant `a` is known
    /// to equal (a `switchInt` case).
    pub(super) fn less(&mut self, state: &State, a: Sym, b: Sym) -> bool {
        if self.less_direct(state, a, b) {
            return true;
        }
        let equal: Vec<Sym> = state
            .facts
            .iter()
            .filter_map(|(f, v)| match self.values.get(*f) {
                Expr::Binary(BinOp::Eq, x, y) if *v => {
                    let other = if *x == a {
                        *y
                    } else if *y == a {
                        *x
                    } else {
                        return None;
                    };
                    self.values.const_bits(other).is_some().then_some(other)
                }
                _ => None,
            })
            .collect();
        if equal.into_iter().any(|c| self.less_direct(state, c, b)) {
            return true;
        }
        // `a < m <= b`: a loop's counter below its end, the end at most a length (the
        // test before a versioned loop).
        if self
            .bounds_above(state, a)
            .into_iter()
            .any(|m| self.at_most(state, m, b))
        {
            return true;
        }
        // `x + y < b` from `y < m`, `m <= b` and `x <= b - m` (exact, as `m <= b`): then
        // `x + y < x + m <= b`, and nothing wraps (a versioned loop's `s[e + k]`).
        let Expr::Binary(BinOp::Add, x, y) = self.values.get(a).clone() else {
            return false;
        };
        if self.clamped_in_region(state, x, y, b) {
            return true;
        }
        [(x, y), (y, x)].into_iter().any(|(x, y)| {
            self.bounds_above(state, y).into_iter().any(|m| {
                let room = self.values.intern(Expr::Binary(BinOp::Sub, b, m));
                self.at_most(state, m, b) && self.at_most(state, x, room)
            })
        })
    }

    /// `r * w + c < Len(_g)` for a 2-D region `_g` of `w = RegionExtent(_g, 0)` columns and
    /// `h = RegionExtent(_g, 1)` rows, where the row is below the last (`r < h` is known,
    /// or `r = min(_, h - 1)` and `0 < Len(_g)` is known) and so is the column (`c < w`,
    /// or `c = min(_, w - 1)`). The host lays 2-D regions out in whole rows of at least one
    /// element (`Len = h * w`, `w >= 1`), so `r <= h - 1` and `c <= w - 1` give
    /// `r * w + c <= (h - 1) * w + w - 1 = Len - 1` (a `Stencil2D` read, clamped or
    /// tested).
    fn clamped_in_region(&mut self, state: &State, x: Sym, y: Sym, b: Sym) -> bool {
        let Expr::Len(region) = *self.values.get(b) else {
            return false;
        };
        let two_d = matches!(
            self.body.locals.get(region.index()).map(|d| d.ty),
            Some(Ty::Region(_, s)) if s.rank() == 2
        );
        if !two_d {
            return false;
        }
        let zero = self.values.usize(0);
        let one = self.values.usize(1);
        let [w, h] = [0, 1].map(|d| self.values.intern(Expr::RegionExtent(region, d)));
        let [last_col, last_row] =
            [w, h].map(|e| self.values.intern(Expr::Binary(BinOp::Sub, e, one)));
        let is_min_with = |values: &super::values::Values, s: Sym, last: Sym| matches!(values.get(s), Expr::Intrinsic(Intrinsic::Min, args) if args.contains(&last));
        [(x, y), (y, x)].into_iter().any(|(row_start, c)| {
            let Expr::Binary(BinOp::Mul, p, q) = *self.values.get(row_start) else {
                return false;
            };
            let col = self.less_direct(state, c, w) || is_min_with(&self.values, c, last_col);
            col && [(p, q), (q, p)].into_iter().any(|(r, width)| {
                width == w
                    && (self.less_direct(state, r, h)
                        || (is_min_with(&self.values, r, last_row)
                            && self.less_direct(state, zero, b)))
            })
        })
    }

    /// The values `a` is below by a fact (`a < m`, in any spelling).
    pub(super) fn bounds_above(&self, state: &State, a: Sym) -> Vec<Sym> {
        state
            .facts
            .iter()
            .filter_map(|&(f, holds)| match (self.values.get(f), holds) {
                (Expr::Binary(BinOp::Lt, x, m), true) | (Expr::Binary(BinOp::Ge, x, m), false)
                    if *x == a =>
                {
                    Some(*m)
                }
                (Expr::Binary(BinOp::Gt, m, x), true) | (Expr::Binary(BinOp::Le, m, x), false)
                    if *x == a =>
                {
                    Some(*m)
                }
                _ => None,
            })
            .collect()
    }

    /// Whether `x <= y` is known: the same value, constants, or a fact in any spelling.
    pub(super) fn at_most(&mut self, state: &State, x: Sym, y: Sym) -> bool {
        if x == y {
            return true;
        }
        if let (Some((p, _)), Some((q, _))) = (self.values.const_bits(x), self.values.const_bits(y))
        {
            return p <= q;
        }
        let spellings = [
            (Expr::Binary(BinOp::Le, x, y), true),
            (Expr::Binary(BinOp::Ge, y, x), true),
            (Expr::Binary(BinOp::Lt, y, x), false),
            (Expr::Binary(BinOp::Gt, x, y), false),
        ];
        spellings.into_iter().any(|(e, v)| {
            let f = self.values.intern(e);
            self.holds(state, f, v)
        })
    }

    pub(super) fn less_direct(&mut self, state: &State, a: Sym, b: Sym) -> bool {
        if let (Some((x, _)), Some((y, _))) = (self.values.const_bits(a), self.values.const_bits(b))
        {
            return x < y;
        }
        let lt = self.values.intern(Expr::Binary(BinOp::Lt, a, b));
        let gt = self.values.intern(Expr::Binary(BinOp::Gt, b, a));
        let ge = self.values.intern(Expr::Binary(BinOp::Ge, a, b));
        let le = self.values.intern(Expr::Binary(BinOp::Le, b, a));
        if self.holds(state, lt, true)
            || self.holds(state, gt, true)
            || self.holds(state, ge, false)
            || self.holds(state, le, false)
        {
            return true;
        }
        // `a < c` for a constant `c` no larger than a constant `b`.
        let Some((bound, _)) = self.values.const_bits(b) else {
            return false;
        };
        state.facts.iter().any(|(f, v)| {
            let (op, x, y) = match self.values.get(*f) {
                Expr::Binary(op, x, y) => (*op, *x, *y),
                _ => return false,
            };
            let c = match (op, v) {
                (BinOp::Lt, true) | (BinOp::Ge, false) if x == a => y,
                (BinOp::Gt, true) | (BinOp::Le, false) if y == a => x,
                _ => return false,
            };
            self.values.const_bits(c).is_some_and(|(c, _)| c <= bound)
        })
    }
}
