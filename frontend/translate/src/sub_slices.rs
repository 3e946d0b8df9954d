//! Sub-slices of read-only slices: `&x[a..b]` (also `a..`, `..b`, `..`, `a..=b`,
//! `..=b`), bound by `let`, or taken where an iteration runs over it (`x[a..b].iter()`,
//! `for v in &x[a..]`, `x[a..b].iter().map(..).sum()`), `x[a..b].len()`, and sub-slices
//! of sub-slices. A sub-slice is a [`Binding::Window`] of its slice: where it starts and
//! how long it is, checked once where it is made, in the order Rust checks them and
//! with its messages (`range end index 9 out of range for slice of length 8`; as Rust
//! 1.95 reports an inclusive range, by the end as written). Then `s[k]` is
//! `x[start + k]`, checked against the window's length as Rust checks it. Windows of a
//! slice are read-only, as the slice is.

use super::syntax::{as_sub_slice, strip_parens};
use super::{Binding, Result, TranslateError, Translator, error};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

impl Translator {
    /// The window `e` (`x[range]` or `&x[range]`, of a slice parameter or a sub-slice of
    /// one) names, made here: its range is evaluated and checked at this point.
    pub(super) fn sub_slice(&mut self, e: &syn::Expr) -> Result<Binding> {
        let Some((of, range)) = as_sub_slice(e) else {
            return error(e, "a sub-slice `&x[a..b]` is expected here");
        };
        let span = range.span();
        let usize_const = |v: i128| Operand::Const(Const::Int(v, ScalarTy::Usize));
        let (base, base_start, base_len) = match self.sliced(of) {
            Some(Binding::Local(l)) => {
                let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(l), span);
                (l, None, len)
            }
            Some(Binding::Window { base, start, len }) => {
                (base, Some(start), Operand::Copy(Place::local(len)))
            }
            _ => {
                return error(
                    of,
                    "sub-slices (`&x[a..b]`) are taken of read-only slice parameters and of their sub-slices; a `Region` is reached through `get_mut()`",
                );
            }
        };
        let bound = |b: &mut Self, e: &Option<Box<syn::Expr>>| -> Result<Option<Local>> {
            let Some(e) = e else { return Ok(None) };
            let (op, _) = b.scalar_expr(e, Some(ScalarTy::Usize))?;
            Ok(Some(b.as_local(op, ScalarTy::Usize, e.span())))
        };
        let start = bound(self, &range.start)?;
        let end = bound(self, &range.end)?;
        let copy = |l: Local| Operand::Copy(Place::local(l));
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        // Rust's checks, in its order: the start within the slice, then the end (an
        // inclusive end below the length), then the start not past the end.
        let test = |b: &mut Self, op: BinOp, x: Operand, y: Operand, msg: AssertMessage| {
            let holds = b.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, x, y), span);
            b.assert_that(holds, msg, span);
        };
        if let Some(a) = start {
            let msg = AssertMessage::SliceStart {
                start: copy(a),
                len: base_len,
            };
            test(self, BinOp::Le, copy(a), base_len, msg);
        }
        let end = match end {
            Some(b) => {
                let msg = AssertMessage::SliceEnd {
                    end: copy(b),
                    len: base_len,
                };
                let op = if inclusive { BinOp::Lt } else { BinOp::Le };
                test(self, op, copy(b), base_len, msg);
                match inclusive {
                    // Below the length, so `b + 1` exists.
                    true => self.assign_temp(
                        ScalarTy::Usize,
                        Rvalue::BinaryOp(BinOp::Add, copy(b), usize_const(1)),
                        span,
                    ),
                    false => copy(b),
                }
            }
            None => base_len,
        };
        if let Some(a) = start {
            let msg = AssertMessage::SliceOrder {
                start: copy(a),
                end,
            };
            test(self, BinOp::Le, copy(a), end, msg);
        }
        let start = start.map_or(usize_const(0), copy);
        let len = self.window_local(Rvalue::BinaryOp(BinOp::Sub, end, start), span);
        let start = match base_start {
            Some(s) => self.window_local(Rvalue::BinaryOp(BinOp::Add, copy(s), start), span),
            None => self.as_local(start, ScalarTy::Usize, span),
        };
        Ok(Binding::Window { base, start, len })
    }

    /// What `of` in `of[range]` names: a slice parameter or a window of one.
    fn sliced(&mut self, of: &syn::Expr) -> Option<Binding> {
        let syn::Expr::Path(p) = strip_parens(of) else {
            return None;
        };
        let slice = |b: &Self, l: Local| matches!(b.body.locals[l.index()].ty, Ty::Slice(_));
        match self.lookup(p.path.get_ident()?)? {
            found @ Binding::Local(l) if slice(self, l) => Some(found),
            found @ Binding::Window { base, .. } if slice(self, base) => Some(found),
            _ => None,
        }
    }

    /// A `usize` local holding `value`.
    fn window_local(&mut self, value: Rvalue, span: SynSpan) -> Local {
        let op = self.assign_temp(ScalarTy::Usize, value, span);
        self.as_local(op, ScalarTy::Usize, span)
    }

    /// `iteration` (what a `for` loop runs over) with each sub-slice in it made here, in
    /// order, and bound to a fresh name that takes its place: `x[a..b].iter().zip(&y[c..])`
    /// runs over `w1.iter().zip(w2)`. Closures are left alone: they run per element.
    pub(super) fn bind_sub_slices(&mut self, iteration: &syn::Expr) -> Result<syn::Expr> {
        struct Hoist<'t> {
            translator: &'t mut Translator,
            failed: Option<TranslateError>,
        }
        impl VisitMut for Hoist<'_> {
            fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
                if self.failed.is_some() || matches!(e, syn::Expr::Closure(_)) {
                    return;
                }
                if as_sub_slice(e).is_none() {
                    return syn::visit_mut::visit_expr_mut(self, e);
                }
                let t = &mut *self.translator;
                match t.sub_slice(e) {
                    Ok(window) => {
                        t.element_loops += 1;
                        let name = syn::Ident::new(
                            &format!("__offload_part_{}", t.element_loops),
                            e.span(),
                        );
                        t.bind(&name, window);
                        *e = syn::parse_quote_spanned!(e.span()=> #name);
                    }
                    Err(failed) => self.failed = Some(failed),
                }
            }
        }
        let mut rewritten = iteration.clone();
        let mut hoist = Hoist {
            translator: self,
            failed: None,
        };
        hoist.visit_expr_mut(&mut rewritten);
        match hoist.failed {
            Some(failed) => Err(failed),
            None => Ok(rewritten),
        }
    }
}
