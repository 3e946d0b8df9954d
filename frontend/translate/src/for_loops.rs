//! `for` loops: over a range (stepped, reversed, or with bounds-checked reads versioned
//! out of the body) and over a region's or slice's elements.

use super::syntax::as_sub_slice;
use super::syntax::{Elements, element_iteration, strip_parens};
use super::{Binding, Result, Translator, Value, error, position, versioning};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use std::collections::HashMap;

impl Translator {
    /// `for PAT in a..b`, `a..=b`, or either `.step_by(s)`. The latch compares the
    /// distance left with the step before adding it, so the counter never overflows, even
    /// for `a..=T::MAX`.
    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Value> {
        if let Some(elements) = element_iteration(&f.expr) {
            let parts = |e: Option<&syn::Expr>| e.is_some_and(|e| as_sub_slice(e).is_some());
            if parts(Some(elements.of)) || parts(elements.zipped) {
                let f = syn::ExprForLoop {
                    expr: Box::new(self.bind_sub_slices(&f.expr)?),
                    ..f.clone()
                };
                let elements = element_iteration(&f.expr).expect("still an iteration");
                return self.element_loop(&f, elements);
            }
            return self.element_loop(f, elements);
        }
        if let syn::Expr::MethodCall(m) = strip_parens(&f.expr)
            && m.method == "rev"
            && m.args.is_empty()
            && let syn::Expr::Range(range) = strip_parens(&m.receiver)
            && let (Some(start), Some(end)) = (&range.start, &range.end)
        {
            let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
            return self.reverse_loop(f, start, end, inclusive);
        }
        self.range_loop(f, None)
    }

    /// `for k in (a..b).rev()` (or `a..=b`): the bounds evaluated once, then a counter
    /// `j` up from 0 with `k = b - 1 - j` (`b - j`), over no values when the range is
    /// empty, so no subtraction can wrap.
    fn reverse_loop(
        &mut self,
        f: &syn::ExprForLoop,
        start: &syn::Expr,
        end: &syn::Expr,
        inclusive: bool,
    ) -> Result<Value> {
        let span = f.for_token.span;
        self.element_loops += 1;
        let n = self.element_loops;
        let name = |what: &str| syn::Ident::new(&format!("__offload_{what}_{n}"), span);
        let (lo, hi, j) = (name("lo"), name("hi"), name("j"));
        let (pat, body, label) = (&f.pat, &f.body, &f.label);
        let desugared: syn::Expr = if inclusive {
            syn::parse_quote_spanned!(span=> {
                let #lo = #start;
                let #hi = #end;
                if #hi >= #lo {
                    #label for #j in 0..=(#hi - #lo) {
                        let #pat = #hi - #j;
                        #body
                    }
                }
            })
        } else {
            syn::parse_quote_spanned!(span=> {
                let #lo = #start;
                let #hi = #end;
                if #hi > #lo {
                    #label for #j in 0..(#hi - #lo) {
                        let #pat = #hi - 1 - #j;
                        #body
                    }
                }
            })
        };
        self.expr(&desugared, None)?;
        Ok(None)
    }

    /// `for v in x.iter()`, `for v in x`, `for (k, v) in x.iter().enumerate()`, `for v in
    /// x.iter().rev()` (also with `&v`, and `.copied()`/`.cloned()`) over a slice, array
    /// or chunk: a loop over
    /// `0..x.len()` whose body starts with `let k = counter; let v = x[counter];`. The
    /// element is read as `x[counter]` is anywhere (bounds-checked; the loop's own bound
    /// proves the check).
    fn element_loop(&mut self, f: &syn::ExprForLoop, it: Elements<'_>) -> Result<Value> {
        let (elements, enumerate) = (it.of, it.enumerate);
        const FORM: &str = "`for (k, v) in x.iter().enumerate()` binds an index and an element";
        const ZIP_FORM: &str = "`for (a, b) in x.iter().zip(y.iter())` binds an element of each";
        let span = f.for_token.span;
        self.element_loops += 1;
        let counter = syn::Ident::new(&format!("__offload_element_{}", self.element_loops), span);
        let (index, element) = match (&*f.pat, enumerate) {
            (syn::Pat::Tuple(t), true) if t.elems.len() == 2 => (Some(&t.elems[0]), &t.elems[1]),
            (other, true) => return error(other, FORM),
            (pat, false) => (None, pat),
        };
        // Zipped, the element is a pair: one pattern per slice.
        let (element, partner) = match (element, it.zipped) {
            (syn::Pat::Tuple(t), Some(other)) if t.elems.len() == 2 => {
                (&t.elems[0], Some((&t.elems[1], other)))
            }
            (other, Some(_)) => return error(other, ZIP_FORM),
            (pat, None) => (pat, None),
        };
        let by_value = |p: &syn::Pat| match p {
            syn::Pat::Reference(r) => ((*r.pat).clone(), true),
            other => (other.clone(), false),
        };
        let range: syn::Expr = match partner {
            Some((_, other)) => {
                syn::parse_quote_spanned!(span=> 0..#elements.len().min(#other.len()))
            }
            None => syn::parse_quote_spanned!(span=> 0..#elements.len()),
        };
        // From the last element back: `x[len - 1 - counter]`, which no empty loop reaches.
        let read: syn::Expr = if it.reversed {
            syn::parse_quote_spanned!(span=> #elements[#elements.len() - 1 - #counter])
        } else {
            syn::parse_quote_spanned!(span=> #elements[#counter])
        };
        let looped = syn::ExprForLoop {
            attrs: Vec::new(),
            label: f.label.clone(),
            for_token: f.for_token,
            pat: Box::new(syn::parse_quote_spanned!(span=> #counter)),
            in_token: f.in_token,
            expr: Box::new(range),
            body: f.body.clone(),
        };
        let let_statement = |b: &mut Self, stmt: syn::Stmt| match stmt {
            syn::Stmt::Local(local) => b.let_statement(&local),
            _ => unreachable!("a `let` statement parses as one"),
        };
        let mut reads = vec![(by_value(element), read)];
        if let Some((pattern, other)) = partner {
            reads.push((
                by_value(pattern),
                syn::parse_quote_spanned!(span=> #other[#counter]),
            ));
        }
        let prologue = |b: &mut Self| -> Result<()> {
            if let Some(index) = index {
                let_statement(b, syn::parse_quote_spanned!(span=> let #index = #counter;))?;
            }
            for ((element, by_value), read) in &reads {
                let_statement(b, syn::parse_quote_spanned!(span=> let #element = #read;))?;
                // A reference to the element (`v`, not `&v`) is read through `*v`.
                if !by_value
                    && let syn::Pat::Ident(id) = element
                    && let Some(super::Binding::Local(l)) = b.lookup(&id.ident)
                {
                    b.element_refs.insert(l);
                }
            }
            Ok(())
        };
        self.range_loop(&looped, Some(&prologue))
    }

    fn range_loop(
        &mut self,
        f: &syn::ExprForLoop,
        prologue: Option<&Prologue<'_>>,
    ) -> Result<Value> {
        const FORM: &str = "`for` loops must iterate over a range (`a..b`, `a..=b`, `(a..b).step_by(s)`, `(a..b).rev()`) or over the elements of a slice or array (`x.iter()`, `x.iter().enumerate()`, `x.iter().rev()`)";
        let span = f.for_token.span;
        let (range, step) = match &*f.expr {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (strip_parens(&m.receiver), Some(&m.args[0]))
            }
            other => (strip_parens(other), None),
        };
        let syn::Expr::Range(range) = range else {
            return error(&f.expr, FORM);
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return error(range, "`for` loops need a range with both ends");
        };
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        // A counter typed only by literal bounds (`for d in -1..=1`) takes the type its
        // uses ask for in the next pass, as an unannotated `let` does.
        let key = match &*f.pat {
            syn::Pat::Ident(id) => Some(position(id.ident.span())),
            _ => None,
        };
        let hinted = key.and_then(|k| self.hints.get(&k).copied());
        let inferred = self.infer(start).or_else(|| self.infer(end));
        let flexible = hinted.is_none() && inferred.is_none();
        let ty = hinted.or(inferred);
        let (start, ty) = self.scalar_expr(start, ty)?;
        let (end, _) = self.scalar_expr(end, Some(ty))?;
        if !ty.is_integer() {
            return error(
                range,
                format!("`for` ranges must be of integers, found `{ty}`"),
            );
        }
        let unsigned = ty.unsigned();
        let step = match step {
            Some(s) => Some(self.for_step(s, unsigned, span)?),
            None => None,
        };
        let values = constant_range(start, end, inclusive);
        let end = self.as_local(end, ty, span);
        let flexible = key.filter(|_| flexible);
        let shape = LoopShape {
            start,
            end,
            ty,
            inclusive,
            step,
            flexible,
            values,
        };
        let reads = match (ty, inclusive, step, prologue) {
            (ScalarTy::Usize, false, None, None) => self.guarded_reads(f),
            _ => Vec::new(),
        };
        if reads.is_empty() {
            return self.counted_loop(f, &shape, prologue);
        }
        // Versioned (see `versioning.rs`): one test, then the loop without the checks it
        // covers, or the loop as written.
        let test = self.reads_in_bounds(&reads, end, span)?;
        let (fast, slow, join) = (self.new_block(), self.new_block(), self.new_block());
        self.switch_bool(Operand::Copy(Place::local(test)), fast, slow, span);
        self.current = Some(fast);
        self.unchecked = reads.iter().map(|r| versioning::read_id(r.read)).collect();
        let result = self.counted_loop(f, &shape, None);
        self.unchecked.clear();
        result?;
        self.goto(join, span);
        self.current = Some(slow);
        self.counted_loop(f, &shape, None)?;
        self.goto(join, span);
        self.current = Some(join);
        Ok(None)
    }

    /// The test before a versioned loop: every read of `reads` is in bounds for counters
    /// below `end` (`end <= x.len()`, and `e <= x.len() - end` for `x[k + e]`).
    fn reads_in_bounds(
        &mut self,
        reads: &[versioning::GuardedRead<'_>],
        end: Local,
        span: SynSpan,
    ) -> Result<Local> {
        let usize_ = ScalarTy::Usize;
        let bool_ = ScalarTy::Bool;
        let end = Operand::Copy(Place::local(end));
        let mut test = Operand::Const(Const::Bool(true));
        let mut seen = std::collections::HashSet::new();
        for read in reads {
            if !seen.insert(read.key()) {
                continue;
            }
            let len = self.assign_temp(usize_, Rvalue::Len(read.slice), span);
            let mut covered = self.assign_temp(bool_, Rvalue::BinaryOp(BinOp::Le, end, len), span);
            if let Some(e) = read.offset {
                let (e, _) = self.scalar_expr(e, Some(usize_))?;
                let room = self.assign_temp(usize_, Rvalue::BinaryOp(BinOp::Sub, len, end), span);
                let fits = self.assign_temp(bool_, Rvalue::BinaryOp(BinOp::Le, e, room), span);
                covered =
                    self.assign_temp(bool_, Rvalue::BinaryOp(BinOp::BitAnd, covered, fits), span);
            }
            test = self.assign_temp(bool_, Rvalue::BinaryOp(BinOp::BitAnd, test, covered), span);
        }
        Ok(self.as_local(test, bool_, span))
    }

    /// The loop of `for PAT in start..end` (see [`Self::range_loop`]); leaves the
    /// translation at its exit.
    fn counted_loop(
        &mut self,
        f: &syn::ExprForLoop,
        shape: &LoopShape,
        prologue: Option<&Prologue<'_>>,
    ) -> Result<Value> {
        let span = f.for_token.span;
        let LoopShape {
            ref start,
            end,
            ty,
            inclusive,
            ref step,
            flexible,
            values,
        } = *shape;
        let local = self.temp(ty);
        self.push(Place::local(local), Rvalue::Use(*start), span);
        let counter = RangeCounter {
            local,
            ty,
            end,
            inclusive,
        };
        let (head, body, latch, exit) = (
            self.new_block(),
            self.new_block(),
            self.new_block(),
            self.new_block(),
        );
        self.goto(head, span);
        self.current = Some(head);
        let cmp = if inclusive { BinOp::Le } else { BinOp::Lt };
        let go = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(
                cmp,
                Operand::Copy(Place::local(counter.local)),
                Operand::Copy(Place::local(counter.end)),
            ),
            span,
        );
        self.switch_bool(go, body, exit, span);

        self.current = Some(body);
        self.scopes.push(HashMap::new());
        self.bind_for_pattern(&f.pat, counter, flexible, values)?;
        if let Some(prologue) = prologue {
            prologue(self)?;
        }
        self.loop_body(f.label.as_ref(), &f.body, exit, latch, span, None)?;
        self.scopes.pop();

        self.current = Some(latch);
        self.for_latch(counter, *step, head, exit, span);
        self.current = Some(exit);
        Ok(None)
    }

    /// The step `s` of a `for` loop's `.step_by(s)`, asserted nonzero, as the counter's
    /// unsigned type.
    fn for_step(&mut self, s: &syn::Expr, unsigned: ScalarTy, span: SynSpan) -> Result<Operand> {
        let (s, sty) = self.scalar_expr(s, Some(ScalarTy::Usize))?;
        let nonzero = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Ne, s, Operand::Const(Const::Int(0, sty))),
            span,
        );
        self.assert(nonzero, "assertion failed: step != 0", span);
        let step = self.cast_operand(s, sty, unsigned, span);
        // A step wider than the counter's range ends the loop after one pass.
        Ok(step)
    }

    /// Binds a `for` loop's pattern at the start of its body: a name gets its own local,
    /// a copy of the counter (`flexible` keys it when literals alone typed it, `values`
    /// are the counter's values when both bounds are constant); `_` binds nothing.
    fn bind_for_pattern(
        &mut self,
        pat: &syn::Pat,
        counter: RangeCounter,
        flexible: Option<(usize, usize)>,
        values: Option<(i128, i128)>,
    ) -> Result<()> {
        match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                let l = self.declare(
                    Ty::Scalar(counter.ty),
                    id.mutability.is_some(),
                    Some((&id.ident, id.ident.span())),
                );
                self.push(
                    Place::local(l),
                    Rvalue::Use(Operand::Copy(Place::local(counter.local))),
                    id.ident.span(),
                );
                self.bind(&id.ident, Binding::Local(l));
                if let Some(key) = flexible {
                    self.flexible.insert(l, key);
                }
                // An immutable counter over constant bounds takes only values between
                // them: what a stencil offset check can see at compile time.
                if id.mutability.is_none()
                    && let Some(values) = values
                {
                    self.known_ranges.insert(l, values);
                }
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            other => error(other, "`for` loops bind a plain name or `_`"),
        }
    }

    /// The latch of a `for` loop, which leaves for `exit` or advances the counter by the
    /// step (1 without one) and goes back to `head`.
    fn for_latch(
        &mut self,
        counter: RangeCounter,
        step: Option<Operand>,
        head: BasicBlock,
        exit: BasicBlock,
        span: SynSpan,
    ) {
        let RangeCounter {
            local,
            ty,
            end,
            inclusive,
        } = counter;
        let unsigned = ty.unsigned();
        // latch: left = end - counter (as unsigned); stop if the step would reach or pass
        // the end, else advance.
        let diff = self.assign_temp(
            ty,
            Rvalue::BinaryOp(
                BinOp::Sub,
                Operand::Copy(Place::local(end)),
                Operand::Copy(Place::local(local)),
            ),
            span,
        );
        let left = self.cast_operand(diff, ty, unsigned, span);
        let step_op = step.unwrap_or(Operand::Const(Const::Int(1, unsigned)));
        let stop_cmp = if inclusive { BinOp::Lt } else { BinOp::Le };
        let stop = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(stop_cmp, left, step_op),
            span,
        );
        let advance = self.new_block();
        self.switch_bool(stop, exit, advance, span);
        self.current = Some(advance);
        let step_in_ty = self.cast_operand(step_op, unsigned, ty, span);
        self.push(
            Place::local(local),
            Rvalue::BinaryOp(BinOp::Add, Operand::Copy(Place::local(local)), step_in_ty),
            span,
        );
        self.goto(head, span);
    }
}

/// What an element loop does at the top of each iteration, after its counter is bound:
/// bind the user's index and element.
type Prologue<'a> = dyn Fn(&mut Translator) -> Result<()> + 'a;

/// A `for` loop over a range, its bounds evaluated: what each copy of a versioned loop
/// is made from.
struct LoopShape {
    start: Operand,
    /// The range's end, evaluated once before the loop.
    end: Local,
    ty: ScalarTy,
    inclusive: bool,
    step: Option<Operand>,
    /// The key of a counter typed only by literal bounds (see `bind_for_pattern`).
    flexible: Option<(usize, usize)>,
    /// The counter's values when both bounds are constants.
    values: Option<(i128, i128)>,
}

#[derive(Copy, Clone)]
struct RangeCounter {
    /// The local that counts, of the range's type `ty`.
    local: Local,
    ty: ScalarTy,
    /// The range's end, evaluated once before the loop.
    end: Local,
    /// Whether the range includes its end (`a..=b`).
    inclusive: bool,
}

/// The values a counter over `start..end` (or `start..=end`) takes when both bounds are
/// constants and the range is not empty.
fn constant_range(start: Operand, end: Operand, inclusive: bool) -> Option<(i128, i128)> {
    let (Operand::Const(Const::Int(lo, _)), Operand::Const(Const::Int(hi, _))) = (start, end)
    else {
        return None;
    };
    let hi = if inclusive { hi } else { hi - 1 };
    (lo <= hi).then_some((lo, hi))
}
