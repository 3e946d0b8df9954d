//! Control flow and statements: blocks, `let` and `const`, `if`, `match` with its
//! patterns, `while`/`loop` and `break`/`continue` (`for` is in `for_loops`).

use super::syntax::{expression_text, strip_parens};
use super::types::scalar_type;
use super::{Binding, LoopTarget, LoopValue, Result, Translator, Value, error, position};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use std::collections::HashMap;
use syn::spanned::Spanned;

impl Translator {
    /// Translates a block; `expected` types its tail expression, if it has one.
    pub(super) fn block(
        &mut self,
        block: &syn::Block,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        self.scopes.push(HashMap::new());
        let mut result = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            result = None;
            match stmt {
                syn::Stmt::Local(local) => self.let_statement(local)?,
                syn::Stmt::Expr(e, semi) => {
                    let tail = last && semi.is_none();
                    let v = self.expr(e, if tail { expected } else { None })?;
                    if tail {
                        result = v;
                    }
                }
                syn::Stmt::Item(syn::Item::Const(c)) => self.const_item(c)?,
                syn::Stmt::Item(item) => {
                    return error(
                        item,
                        "items (functions, structs, `use`, ...) cannot be declared inside a kernel; declare them outside",
                    );
                }
                syn::Stmt::Macro(m) => {
                    self.macro_call(&m.mac)?;
                }
            }
        }
        self.scopes.pop();
        Ok(result)
    }

    pub(super) fn let_statement(&mut self, local: &syn::Local) -> Result<()> {
        if self.shared_declaration(local)? {
            return Ok(());
        }
        // `[v; N]` is the array of `N` copies of `v`.
        let repeated = match local.init.as_ref().map(|i| &*i.expr) {
            Some(syn::Expr::Repeat(r)) => Some(self.repeated_array(r)?),
            _ => None,
        };
        let array = match local.init.as_ref().map(|i| &*i.expr) {
            Some(syn::Expr::Array(array)) => Some(array),
            _ => repeated.as_ref(),
        };
        if let Some(array) = array {
            let (pat, ty) = match &local.pat {
                syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
                other => (other, None),
            };
            let syn::Pat::Ident(id) = pat else {
                return error(pat, "an array is bound to a name: `let taps = [..];`");
            };
            return self.array_binding(&id.ident, ty, array, id.mutability.is_some());
        }
        if let Some(init) = &local.init
            && let syn::Expr::Closure(closure) = &*init.expr
            && let syn::Pat::Ident(name) = &local.pat
        {
            return self.closure_binding(name, closure);
        }
        // `let part = &x[a..b];` (or `let part: &[f32] = ..`): a window of the slice.
        let named = match &local.pat {
            syn::Pat::Type(t) => &*t.pat,
            other => other,
        };
        if let Some(init) = &local.init
            && init.diverge.is_none()
            && super::syntax::as_sub_slice(&init.expr).is_some()
            && let syn::Pat::Ident(name) = named
        {
            let window = self.sub_slice(&init.expr)?;
            self.bind(&name.ident, window);
            return Ok(());
        }
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(scalar_type(&t.ty, &self.subst)?)),
            other => (other, None),
        };
        match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                let init = local.init.as_ref().map(|i| &*i.expr);
                let l = self.scalar_let(id, init, annotated, local.span(), local.span())?;
                self.bind(&id.ident, Binding::Local(l));
                Ok(())
            }
            syn::Pat::Tuple(names) if annotated.is_none() => {
                self.tuple_let(names, local.init.as_ref().map(|i| &*i.expr), local)
            }
            syn::Pat::Wild(_) => {
                if let Some(init) = &local.init {
                    self.expr(&init.expr, annotated)?;
                }
                Ok(())
            }
            other => error(
                other,
                "only `let name = ...`, `let mut name = ...` and `let (a, b) = (x, y);` are supported in kernels",
            ),
        }
    }

    /// `[v; N]` as the array of `N` copies of `v`, for a length that is a literal or a
    /// `const` item.
    fn repeated_array(&self, r: &syn::ExprRepeat) -> Result<syn::ExprArray> {
        let len = match strip_parens(&r.len) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) => n.base10_parse::<usize>().ok(),
            syn::Expr::Path(p) => match self.path_constant(&p.path) {
                Some(Const::Int(n, _)) => usize::try_from(n).ok(),
                _ => None,
            },
            _ => None,
        };
        // Arrays are kept one local per element: a bound keeps that reasonable.
        const MOST: usize = 4096;
        match len {
            Some(n) if n <= MOST => Ok(syn::ExprArray {
                attrs: Vec::new(),
                bracket_token: r.bracket_token,
                elems: std::iter::repeat_n((*r.expr).clone(), n).collect(),
            }),
            Some(_) => error(
                &r.len,
                format!("arrays in kernels have at most {MOST} elements"),
            ),
            // An outside item's value reaches the kernel only where the macro builds its
            // descriptor, after translation; the thread's arrays need it before.
            None if self
                .outer_const(match &*r.len {
                    syn::Expr::Path(p) => &p.path,
                    _ => return error(&r.len, ARRAY_LENGTH),
                })
                .is_some() =>
            {
                error(
                    &r.len,
                    format!(
                        "{ARRAY_LENGTH}; a `const` item outside the kernel sizes `Shared` arrays and strategies, but not the thread's own arrays, which are held element by element: declare it in the kernel (`const {0}: usize = ..;`) or write the number",
                        expression_text(&r.len)
                    ),
                )
            }
            None => error(&r.len, ARRAY_LENGTH),
        }
    }

    /// A scalar local for `let id = init;` (or `let id: T;`), assigned but not yet bound
    /// to its name.
    fn scalar_let(
        &mut self,
        id: &syn::PatIdent,
        init: Option<&syn::Expr>,
        annotated: Option<ScalarTy>,
        span: SynSpan,
        whole: SynSpan,
    ) -> Result<Local> {
        // The value's own type decides when there is no annotation; an unsuffixed
        // literal then takes rustc's default (`i32`, `f64`).
        let key = position(id.ident.span());
        let hinted = annotated.or_else(|| self.hints.get(&key).copied());
        let mut flexible = false;
        let (value, ty) = match (init, hinted) {
            (Some(init), expected) => {
                let inferred = self.infer(init);
                flexible = expected.is_none() && inferred.is_none();
                let (op, ty) = self.scalar_expr(init, expected.or(inferred))?;
                (Some(op), hinted.unwrap_or(ty))
            }
            (None, Some(ty)) => (None, ty),
            (None, None) => {
                return Err(super::TranslateError {
                    span: whole,
                    message: "a `let` without a value needs a type annotation".into(),
                });
            }
        };
        let l = self.declare(
            Ty::Scalar(ty),
            id.mutability.is_some(),
            Some((&id.ident, id.ident.span())),
        );
        if flexible {
            self.flexible.insert(l, key);
        }
        if let Some(op) = value {
            self.push(Place::local(l), Rvalue::Use(op), span);
        }
        Ok(l)
    }

    /// `let (a, mut b, _) = (x, y, z);`: every value is computed, left to right, before
    /// any name is bound, as in Rust (so `let (a, b) = (b, a);` swaps).
    fn tuple_let(
        &mut self,
        names: &syn::PatTuple,
        init: Option<&syn::Expr>,
        local: &syn::Local,
    ) -> Result<()> {
        const FORM: &str =
            "a tuple pattern binds a tuple of as many values: `let (a, b) = (x, y);`";
        let Some(syn::Expr::Tuple(values)) = init.map(strip_parens) else {
            return error(local, FORM);
        };
        if names.elems.len() != values.elems.len() {
            return error(local, FORM);
        }
        let mut bound = Vec::new();
        for (pat, value) in names.elems.iter().zip(&values.elems) {
            match pat {
                syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                    let l = self.scalar_let(id, Some(value), None, value.span(), local.span())?;
                    bound.push((&id.ident, l));
                }
                syn::Pat::Wild(_) => {
                    self.expr(value, None)?;
                }
                other => return error(other, FORM),
            }
        }
        for (name, l) in bound {
            self.bind(name, Binding::Local(l));
        }
        Ok(())
    }

    /// `const N: T = value;` inside a kernel: an immutable local (rustc has checked that
    /// the value is constant).
    fn const_item(&mut self, c: &syn::ItemConst) -> Result<()> {
        if let syn::Expr::Array(array) = &*c.expr {
            return self.array_binding(&c.ident, Some(&c.ty), array, false);
        }
        let ty = scalar_type(&c.ty, &self.subst)?;
        let (value, _) = self.scalar_expr(&c.expr, Some(ty))?;
        let l = self.declare(Ty::Scalar(ty), false, Some((&c.ident, c.ident.span())));
        if let Operand::Const(Const::Int(v, _)) = value {
            self.known_ranges.insert(l, (v, v));
        }
        self.push(Place::local(l), Rvalue::Use(value), c.span());
        self.bind(&c.ident, Binding::Local(l));
        Ok(())
    }

    pub(super) fn loop_target(
        &self,
        label: Option<&syn::Lifetime>,
        e: &syn::Expr,
    ) -> Result<(BasicBlock, BasicBlock)> {
        let t = &self.loops[self.loop_index(label, e)?];
        Ok((t.break_to, t.continue_to))
    }

    /// The position in `self.loops` of the loop `label` names, else the innermost.
    fn loop_index(&self, label: Option<&syn::Lifetime>, e: &syn::Expr) -> Result<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => self
                .loops
                .iter()
                .rposition(|t| t.label.as_deref() == Some(&l.ident.to_string())),
        };
        match found {
            Some(i) => Ok(i),
            None => error(e, "`break`/`continue` outside of a loop"),
        }
    }

    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<Value> {
        let span = w.while_token.span;
        let (head, body, exit) = (self.new_block(), self.new_block(), self.new_block());
        self.goto(head, span);
        self.current = Some(head);
        let (cond, _) = self.scalar_expr(&w.cond, Some(ScalarTy::Bool))?;
        self.switch_bool(cond, body, exit, span);
        self.current = Some(body);
        self.loop_body(w.label.as_ref(), &w.body, exit, head, span, None)?;
        self.current = Some(exit);
        Ok(None)
    }

    /// Translates a loop's body, with `break` going to `break_to` and `continue` (and the
    /// end of the body) to `continue_to`; with `value`, the value its breaks give, for
    /// `loop` expressions.
    pub(super) fn loop_body(
        &mut self,
        label: Option<&syn::Label>,
        body: &syn::Block,
        break_to: BasicBlock,
        continue_to: BasicBlock,
        span: SynSpan,
        value: Option<LoopValue>,
    ) -> Result<Option<LoopValue>> {
        self.loops.push(LoopTarget {
            label: label.map(|l| l.name.ident.to_string()),
            break_to,
            continue_to,
            value,
        });
        let translated = self.block(body, None);
        let target = self.loops.pop().expect("the loop just pushed");
        translated?;
        self.goto(continue_to, span);
        Ok(target.value)
    }

    /// `loop { .. }`, also as a value (`let i = loop { .. break k; };`).
    pub(super) fn loop_expr(
        &mut self,
        l: &syn::ExprLoop,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        let span = l.loop_token.span;
        let (body, exit) = (self.new_block(), self.new_block());
        self.goto(body, span);
        self.current = Some(body);
        // A `break 0.0` first and a `break x[k]` later: the loop's type is the first one
        // known, as Rust infers it from all of them.
        let expected = expected.or_else(|| {
            let label = l.label.as_ref().map(|l| l.name.ident.to_string());
            break_values(&l.body, label.as_deref())
                .into_iter()
                .find_map(|v| self.infer(v))
        });
        let value = LoopValue {
            expected,
            result: None,
        };
        let value = self.loop_body(l.label.as_ref(), &l.body, exit, body, span, Some(value))?;
        self.current = Some(exit);
        Ok(value
            .and_then(|v| v.result)
            .map(|(l, t)| (Operand::Copy(Place::local(l)), t)))
    }

    /// `break value`: the value goes to the loop's result, then the loop is left.
    pub(super) fn break_with(
        &mut self,
        b: &syn::ExprBreak,
        value: &syn::Expr,
        e: &syn::Expr,
    ) -> Result<Value> {
        let span = b.break_token.span;
        let index = self.loop_index(b.label.as_ref(), e)?;
        let Some(slot) = &self.loops[index].value else {
            return error(
                e,
                "only `loop` can `break` with a value, not `while` or `for`",
            );
        };
        let want = slot.result.map(|(_, t)| t).or(slot.expected);
        let want = want.or_else(|| self.infer(value));
        let (v, t) = self.scalar_expr(value, want)?;
        let slot = self.loops[index].value.as_mut().expect("checked above");
        let result = match slot.result {
            Some((l, t0)) if t0 == t => l,
            Some((_, t0)) => {
                return error(
                    value,
                    format!(
                        "this `break` gives a `{t}`, but the loop's earlier `break` gave a `{t0}`"
                    ),
                );
            }
            None => {
                let l = self.temp(t);
                self.loops[index]
                    .value
                    .as_mut()
                    .expect("checked above")
                    .result = Some((l, t));
                l
            }
        };
        self.push(Place::local(result), Rvalue::Use(v), span);
        let target = self.loops[index].break_to;
        self.goto(target, span);
        Ok(None)
    }

    pub(super) fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<ScalarTy>) -> Result<Value> {
        let span = i.if_token.span;
        let (then_bb, else_bb, join) = (self.new_block(), self.new_block(), self.new_block());
        self.scopes.push(HashMap::new());
        let then_start = if let syn::Expr::Let(l) = &*i.cond {
            self.region_get_mut(l, then_bb, else_bb)?
        } else {
            let (cond, _) = self.scalar_expr(&i.cond, Some(ScalarTy::Bool))?;
            self.switch_bool(cond, then_bb, else_bb, span);
            then_bb
        };
        // The result temporary is made when the first branch yields a value, so its type
        // is that value's (literals included) unless the context expects one.
        let mut result: Option<(Local, ScalarTy)> = None;
        self.current = Some(then_start);
        let then_expected = if i.else_branch.is_some() {
            expected
        } else {
            None
        };
        let v = self.block(&i.then_branch, then_expected)?;
        self.scopes.pop();
        if i.else_branch.is_some() {
            self.store_result(&mut result, v, span);
        }
        self.goto(join, span);
        self.current = Some(else_bb);
        if let Some((_, else_expr)) = &i.else_branch {
            let v = self.expr(else_expr, result.map(|r| r.1).or(expected))?;
            self.store_result(&mut result, v, span);
        }
        self.goto(join, span);
        self.current = Some(join);
        Ok(result.map(|(r, t)| (Operand::Copy(Place::local(r)), t)))
    }

    /// Assigns a branch's value to the shared result temporary, making it on first use.
    fn store_result(
        &mut self,
        result: &mut Option<(Local, ScalarTy)>,
        value: Value,
        span: SynSpan,
    ) {
        if let Some((op, ty)) = value {
            let (r, _) = *result.get_or_insert_with(|| (self.temp(ty), ty));
            self.push(Place::local(r), Rvalue::Use(op), span);
        }
    }

    /// `match` on an integer (or `bool`) with literal, range, `|` and `_` patterns, and
    /// `if` guards. Arms are tested in order, as Rust does.
    pub(super) fn match_expr(
        &mut self,
        m: &syn::ExprMatch,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        let span = m.match_token.span;
        let ty = self.infer(&m.expr);
        let (scrutinee, ty) = self.scalar_expr(&m.expr, ty)?;
        if ty.is_float() {
            return error(
                &m.expr,
                "`match` on floats is not supported; use `if`/`else`",
            );
        }
        let scrutinee = self.as_local(scrutinee, ty, span);
        let mut result: Option<(Local, ScalarTy)> = None;
        let join = self.new_block();
        for arm in &m.arms {
            let arm_block = self.new_block();
            let next = self.new_block();
            self.scopes.push(HashMap::new());
            self.pattern_test(&arm.pat, scrutinee, ty, arm_block, next)?;
            self.current = Some(arm_block);
            if let Some((_, guard)) = &arm.guard {
                let (g, _) = self.scalar_expr(guard, Some(ScalarTy::Bool))?;
                let guarded = self.new_block();
                self.switch_bool(g, guarded, next, guard.span());
                self.current = Some(guarded);
            }
            let v = self.expr(&arm.body, result.map(|r| r.1).or(expected))?;
            self.store_result(&mut result, v, arm.body.span());
            self.scopes.pop();
            self.goto(join, span);
            self.current = Some(next);
        }
        // rustc accepted the match, so it is exhaustive: falling through is impossible.
        self.terminate(TerminatorKind::Unreachable, span);
        self.current = Some(join);
        Ok(result.map(|(r, t)| (Operand::Copy(Place::local(r)), t)))
    }

    /// Branches to `matched` if `scrutinee` matches `pat`, else to `unmatched`.
    fn pattern_test(
        &mut self,
        pat: &syn::Pat,
        scrutinee: Local,
        ty: ScalarTy,
        matched: BasicBlock,
        unmatched: BasicBlock,
    ) -> Result<()> {
        let span = pat.span();
        let value = Operand::Copy(Place::local(scrutinee));
        match pat {
            syn::Pat::Wild(_) => self.goto(matched, span),
            syn::Pat::Ident(id) if id.subpat.is_none() && id.by_ref.is_none() => {
                let l = self.declare(
                    Ty::Scalar(ty),
                    id.mutability.is_some(),
                    Some((&id.ident, id.ident.span())),
                );
                self.push(Place::local(l), Rvalue::Use(value), span);
                self.bind(&id.ident, Binding::Local(l));
                self.goto(matched, span);
            }
            syn::Pat::Lit(_) | syn::Pat::Range(_) | syn::Pat::Paren(_) => {
                let cond = self.pattern_condition(pat, value, ty)?;
                self.switch_bool(cond, matched, unmatched, span);
            }
            syn::Pat::Or(or) => {
                for case in &or.cases {
                    let next = self.new_block();
                    let cond = self.pattern_condition(case, value, ty)?;
                    self.switch_bool(cond, matched, next, span);
                    self.current = Some(next);
                }
                self.goto(unmatched, span);
            }
            other => {
                return error(
                    other,
                    "`match` patterns in kernels are integer literals, ranges (`a..=b`), `|`, `_` or a name",
                );
            }
        }
        Ok(())
    }

    fn pattern_condition(
        &mut self,
        pat: &syn::Pat,
        value: Operand,
        ty: ScalarTy,
    ) -> Result<Operand> {
        let span = pat.span();
        match pat {
            syn::Pat::Paren(p) => self.pattern_condition(&p.pat, value, ty),
            syn::Pat::Lit(l) => {
                let (c, _) = self.scalar_expr(&syn::Expr::Lit(l.clone()), Some(ty))?;
                Ok(self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Eq, value, c), span))
            }
            syn::Pat::Range(r) => {
                let mut cond: Option<Operand> = None;
                if let Some(start) = &r.start {
                    let (lo, _) = self.scalar_expr(start, Some(ty))?;
                    cond = Some(self.assign_temp(
                        ScalarTy::Bool,
                        Rvalue::BinaryOp(BinOp::Ge, value, lo),
                        span,
                    ));
                }
                if let Some(end) = &r.end {
                    let (hi, _) = self.scalar_expr(end, Some(ty))?;
                    let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                        BinOp::Le
                    } else {
                        BinOp::Lt
                    };
                    let below =
                        self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, value, hi), span);
                    cond = Some(match cond {
                        Some(c) => self.assign_temp(
                            ScalarTy::Bool,
                            Rvalue::BinaryOp(BinOp::BitAnd, c, below),
                            span,
                        ),
                        None => below,
                    });
                }
                Ok(cond.unwrap_or(Operand::Const(Const::Bool(true))))
            }
            other => error(
                other,
                "nested patterns other than literals and ranges are not supported in kernels",
            ),
        }
    }
}

/// The values of the `break`s in `body` that leave the loop it is the body of: those not
/// inside a nested loop, and those naming the loop's `label`.
fn break_values<'b>(body: &'b syn::Block, label: Option<&str>) -> Vec<&'b syn::Expr> {
    use syn::visit::Visit;
    struct Breaks<'b, 'l> {
        label: Option<&'l str>,
        depth: usize,
        found: Vec<&'b syn::Expr>,
    }
    impl<'b> Visit<'b> for Breaks<'b, '_> {
        fn visit_expr_break(&mut self, b: &'b syn::ExprBreak) {
            let named = b.label.as_ref().map(|l| l.ident.to_string());
            let ours = match named {
                Some(n) => self.label == Some(n.as_str()),
                None => self.depth == 0,
            };
            if ours && let Some(v) = &b.expr {
                self.found.push(v);
            }
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_loop(&mut self, l: &'b syn::ExprLoop) {
            self.depth += 1;
            syn::visit::visit_expr_loop(self, l);
            self.depth -= 1;
        }
        fn visit_expr_while(&mut self, w: &'b syn::ExprWhile) {
            self.depth += 1;
            syn::visit::visit_expr_while(self, w);
            self.depth -= 1;
        }
        fn visit_expr_for_loop(&mut self, f: &'b syn::ExprForLoop) {
            self.depth += 1;
            syn::visit::visit_expr_for_loop(self, f);
            self.depth -= 1;
        }
        fn visit_expr_closure(&mut self, _: &'b syn::ExprClosure) {}
    }
    let mut breaks = Breaks {
        label,
        depth: 0,
        found: Vec::new(),
    };
    breaks.visit_block(body);
    breaks.found
}

/// What the length of an array the thread holds may be.
const ARRAY_LENGTH: &str =
    "an array's length is an integer literal or a `const` item declared in the kernel";
