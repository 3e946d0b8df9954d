//! Expressions: the dispatch over `syn::Expr`, literals, constants of the primitive types
//! by path, unary and binary operators (with Rust's division checks), short-circuit
//! `&&`/`||`, and casts.

use super::syntax::strip_parens;
use super::types::{binop, literal_suffix_type, scalar_type};
use super::{Result, TranslateError, Translator, Value, error};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use syn::spanned::Spanned;

/// Where a sub-slice may be written, for the refusal of any other place.
pub(super) const SUB_SLICE_USES: &str = "in kernels a sub-slice is bound to a name (`let part = &x[a..b];`), iterated (`x[a..b].iter()`, `for v in &x[a..b]`) or measured (`x[a..b].len()`); device functions take scalars, so pass the elements";

impl Translator {
    /// The `const` item outside the kernel that `path` names: its place among the
    /// kernel's outside items and its value.
    pub(super) fn outer_const(&self, path: &syn::Path) -> Option<(u32, super::ConstValue)> {
        let id = path.get_ident()?;
        if self.lookup(id).is_some() {
            return None;
        }
        let name = id.to_string();
        let k = self.consts.iter().position(|(c, _)| *c == name)?;
        Some((k as u32, self.consts[k].1))
    }

    /// Constants of the primitive types by path: `f32::consts::PI`, `f64::EPSILON`,
    /// `i32::MAX`, `u32::BITS`, with or without a `std::`/`core::` prefix. A single name
    /// that is a local is not a constant.
    pub(super) fn path_constant(&self, path: &syn::Path) -> Option<Const> {
        if let Some(id) = path.get_ident()
            && self.lookup(id).is_some()
        {
            return None;
        }
        let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let names: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .skip_while(|n| *n == "std" || *n == "core")
            .collect();
        let resolve = |ty: &str| {
            self.subst
                .iter()
                .find(|(p, _)| p == ty)
                .map(|(_, t)| *t)
                .or_else(|| ScalarTy::from_name(ty))
        };
        let (ty, name) = match names[..] {
            [ty, "consts", name] | [ty, name] => (resolve(ty)?, name),
            _ => return None,
        };
        match name {
            "ZERO" => {
                return Some(if ty.is_float() {
                    Const::Float(0.0, ty)
                } else {
                    Const::Int(0, ty)
                });
            }
            "ONE" => {
                return Some(if ty.is_float() {
                    Const::Float(1.0, ty)
                } else {
                    Const::Int(1, ty)
                });
            }
            _ => {}
        }
        if ty.is_half() {
            return half_constant(ty, name);
        }
        let float = |v32: f32, v64: f64| {
            Some(Const::Float(
                if ty == ScalarTy::F32 { v32 as f64 } else { v64 },
                ty,
            ))
        };
        if ty.is_float() {
            use std::{f32::consts as c32, f64::consts as c64};
            return match name {
                "PI" => float(c32::PI, c64::PI),
                "TAU" => float(c32::TAU, c64::TAU),
                "E" => float(c32::E, c64::E),
                "SQRT_2" => float(c32::SQRT_2, c64::SQRT_2),
                "LN_2" => float(c32::LN_2, c64::LN_2),
                "LN_10" => float(c32::LN_10, c64::LN_10),
                "LOG2_E" => float(c32::LOG2_E, c64::LOG2_E),
                "LOG10_E" => float(c32::LOG10_E, c64::LOG10_E),
                "FRAC_PI_2" => float(c32::FRAC_PI_2, c64::FRAC_PI_2),
                "FRAC_PI_4" => float(c32::FRAC_PI_4, c64::FRAC_PI_4),
                "FRAC_1_PI" => float(c32::FRAC_1_PI, c64::FRAC_1_PI),
                "FRAC_2_PI" => float(c32::FRAC_2_PI, c64::FRAC_2_PI),
                "FRAC_1_SQRT_2" => float(c32::FRAC_1_SQRT_2, c64::FRAC_1_SQRT_2),
                "MAX" => float(f32::MAX, f64::MAX),
                "MIN" => float(f32::MIN, f64::MIN),
                "MIN_POSITIVE" => float(f32::MIN_POSITIVE, f64::MIN_POSITIVE),
                "EPSILON" => float(f32::EPSILON, f64::EPSILON),
                "INFINITY" => float(f32::INFINITY, f64::INFINITY),
                "NEG_INFINITY" => float(f32::NEG_INFINITY, f64::NEG_INFINITY),
                "NAN" => float(f32::NAN, f64::NAN),
                _ => None,
            };
        }
        if !ty.is_integer() {
            return None;
        }
        let bits = ty.bits();
        match name {
            "MAX" if ty.is_signed() => Some(Const::Int((1i128 << (bits - 1)) - 1, ty)),
            "MIN" if ty.is_signed() => Some(Const::Int(-(1i128 << (bits - 1)), ty)),
            "MAX" => Some(Const::Int((1i128 << bits) - 1, ty)),
            "MIN" => Some(Const::Int(0, ty)),
            "BITS" => Some(Const::Int(bits as i128, ScalarTy::U32)),
            _ => None,
        }
    }

    /// Translates an expression that must produce a scalar value.
    pub(super) fn scalar_expr(
        &mut self,
        e: &syn::Expr,
        expected: Option<ScalarTy>,
    ) -> Result<(Operand, ScalarTy)> {
        match self.expr(e, expected)? {
            Some((op, ty)) => {
                if let Some(want) = expected {
                    self.learn(&op, ty, want);
                }
                Ok((op, ty))
            }
            None => error(
                e,
                "this expression has type `()`, but a value is needed here",
            ),
        }
    }

    pub(super) fn expr(&mut self, e: &syn::Expr, expected: Option<ScalarTy>) -> Result<Value> {
        let span = e.span();
        match e {
            syn::Expr::Lit(l) => Ok(Some(self.literal(&l.lit, expected)?)),
            syn::Expr::Paren(p) => self.expr(&p.expr, expected),
            syn::Expr::Group(g) => self.expr(&g.expr, expected),
            syn::Expr::Path(p) if self.path_constant(&p.path).is_some() => {
                let c = self.path_constant(&p.path).expect("checked by the guard");
                Ok(Some((Operand::Const(c), c.ty())))
            }
            syn::Expr::Path(p) if self.outer_const(&p.path).is_some() => {
                self.outer_const_value(e, &p.path, expected)
            }
            syn::Expr::Path(_) | syn::Expr::Index(_) => {
                let (place, ty) = self.place(e)?;
                Ok(Some((Operand::Copy(place), ty)))
            }
            syn::Expr::Unary(u) => self.unary(e, u, expected),
            syn::Expr::Binary(b) => self.binary(b, expected),
            syn::Expr::Cast(c) => self.cast(e, c),
            syn::Expr::Assign(a) if matches!(strip_parens(&a.left), syn::Expr::Tuple(_)) => {
                self.tuple_assign(a)
            }
            syn::Expr::Assign(a) => {
                let (place, ty) = self.assignable_place(&a.left)?;
                if let Some(rty) = self.infer(&a.right) {
                    self.learn(&Operand::Copy(place), ty, rty);
                }
                let (op, _) = self.scalar_expr(&a.right, Some(ty))?;
                self.push(place, Rvalue::Use(op), span);
                self.write_back_arrays(span);
                Ok(None)
            }
            syn::Expr::Block(b) => {
                if let Some(label) = &b.label {
                    return error(
                        label,
                        "labelled blocks are not supported in kernels; a labelled `loop` that ends in `break` does the same: `'done: loop { ..; break 'done; }`",
                    );
                }
                if b.block.stmts.is_empty() {
                    return Ok(None);
                }
                self.block(&b.block, expected)
            }
            // The raw shared-memory API is `unsafe`; rustc checks the block, and the
            // race check skips what the raw calls do.
            syn::Expr::Unsafe(u) => self.block(&u.block, expected),
            syn::Expr::If(i) => self.if_expr(i, expected),
            syn::Expr::While(w) => self.while_loop(w),
            syn::Expr::Loop(l) => self.loop_expr(l, expected),
            syn::Expr::Break(b) => {
                if let Some(v) = &b.expr {
                    return self.break_with(b, v, e);
                }
                let target = self.loop_target(b.label.as_ref(), e)?;
                self.goto(target.0, span);
                Ok(None)
            }
            syn::Expr::Continue(c) => {
                let target = self.loop_target(c.label.as_ref(), e)?;
                self.goto(target.1, span);
                Ok(None)
            }
            syn::Expr::Return(r) => self.return_expr(e, r),
            syn::Expr::MethodCall(m) => match self.reduction(m, expected)? {
                Some(value) => Ok(value),
                None => match self.get_or(m, expected)? {
                    Some(value) => Ok(value),
                    None => self.method_call(m),
                },
            },
            syn::Expr::Macro(m) => self.macro_call(&m.mac),
            syn::Expr::Closure(_) => error(
                e,
                "closures in kernels are bound to a name and called (`let f = |v| ..; f(x)`), or passed to `map` and `fold`",
            ),
            syn::Expr::Call(c) => self.call(c, expected),
            syn::Expr::Reference(r) => match strip_parens(&r.expr) {
                syn::Expr::Index(i) if matches!(strip_parens(&i.index), syn::Expr::Range(_)) => {
                    error(e, SUB_SLICE_USES)
                }
                _ => error(
                    e,
                    "taking a reference (`&x`) is not supported in kernels: use the value, or the element by index",
                ),
            },
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::Match(m) => self.match_expr(m, expected),
            syn::Expr::Tuple(t) if t.elems.is_empty() => Ok(None),
            syn::Expr::Let(_) => error(
                e,
                "`let` in this position is not supported; only `if let Some(v) = region.get_mut()`",
            ),
            other => error(e, unsupported(other)),
        }
    }

    /// A `const` item outside the kernel (`kernel_consts`), typed by its use, as a literal
    /// is: the value a tool reading sources found, or a reference to the item whose value
    /// the macro fills in from rustc's.
    fn outer_const_value(
        &mut self,
        e: &syn::Expr,
        path: &syn::Path,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        use super::ConstValue;
        let span = e.span();
        let (k, value) = self.outer_const(path).expect("the caller checked");
        let float = expected.filter(|t| t.is_float());
        if expected == Some(ScalarTy::Bool) {
            return error(
                e,
                "a `bool` `const` item outside the kernel cannot be used in it; declare this constant inside the kernel",
            );
        }
        let value = match (value, float) {
            // rustc's value, filled in by the macro; it checks that the item has the
            // type of this use (a float) or fits it (an integer).
            (ConstValue::Rustc, _) => {
                let t = expected.unwrap_or(ScalarTy::I32);
                return Ok(Some((Operand::Const(Const::Item(k, t)), t)));
            }
            (ConstValue::Int(v), Some(t)) => {
                return Ok(Some((Operand::Const(Const::Float(v as f64, t)), t)));
            }
            (ConstValue::Float(v), t) => {
                let t = t.unwrap_or(ScalarTy::F64);
                return Ok(Some((Operand::Const(Const::Float(v, t)), t)));
            }
            (ConstValue::Int(v), None) => v,
        };
        let lit = syn::LitInt::new(&value.unsigned_abs().to_string(), span);
        if value < 0 {
            // `-(magnitude)`, typed as the negation of a literal is.
            let negated: syn::Expr = syn::parse_quote_spanned!(span=> -#lit);
            return self.expr(&negated, expected);
        }
        Ok(Some(self.literal(&syn::Lit::Int(lit), expected)?))
    }

    /// `(a, b) = (x, y)`: both values first, then each place.
    fn tuple_assign(&mut self, a: &syn::ExprAssign) -> Result<Value> {
        let span = a.span();
        let (syn::Expr::Tuple(places), syn::Expr::Tuple(values)) =
            (strip_parens(&a.left), strip_parens(&a.right))
        else {
            return error(
                &a.right,
                "a tuple of places takes a tuple of values: `(a, b) = (b, a)`",
            );
        };
        if places.elems.len() != values.elems.len() {
            return error(
                &a.right,
                "the tuples on either side of `=` differ in length",
            );
        }
        self.element_loops += 1;
        let n = self.element_loops;
        let temps: Vec<syn::Ident> = (0..places.elems.len())
            .map(|k| syn::Ident::new(&format!("__offload_value_{n}_{k}"), span))
            .collect();
        let values = values.elems.iter();
        let places = places.elems.iter();
        let desugared: syn::Expr = syn::parse_quote_spanned!(span=> {
            #(let #temps = #values;)*
            #(#places = #temps;)*
        });
        self.expr(&desugared, None)
    }

    /// `*v`, `-x` and `!x`; a negated literal is a constant.
    fn unary(
        &mut self,
        e: &syn::Expr,
        u: &syn::ExprUnary,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        let span = e.span();
        match u.op {
            // `*x.get_unchecked(i)`: the element itself.
            syn::UnOp::Deref(_) if matches!(&*u.expr, syn::Expr::MethodCall(m) if m.method == "get_unchecked") => {
                self.expr(&u.expr, expected)
            }
            syn::UnOp::Deref(_) => {
                let (place, ty) = self.place(e)?;
                Ok(Some((Operand::Copy(place), ty)))
            }
            syn::UnOp::Neg(_) => {
                if let syn::Expr::Lit(l) = &*u.expr {
                    let (op, ty) = self.literal(&l.lit, expected)?;
                    if let Operand::Const(c) = op {
                        let negated = match c {
                            Const::Int(v, t) if t.is_signed() => Const::Int(-v, t),
                            Const::Float(v, t) => Const::Float(-v, t),
                            _ => return error(e, format!("cannot negate a `{ty}`")),
                        };
                        return Ok(Some((Operand::Const(negated), ty)));
                    }
                }
                let (op, ty) = self.scalar_expr(&u.expr, expected)?;
                if !(ty.is_float() || ty.is_signed()) {
                    return error(e, format!("cannot negate a `{ty}`"));
                }
                Ok(Some((
                    self.assign_temp(ty, Rvalue::UnaryOp(UnOp::Neg, op), span),
                    ty,
                )))
            }
            syn::UnOp::Not(_) => {
                let (op, ty) = self.scalar_expr(&u.expr, expected)?;
                if ty.is_float() {
                    return error(e, format!("cannot apply `!` to a `{ty}`"));
                }
                Ok(Some((
                    self.assign_temp(ty, Rvalue::UnaryOp(UnOp::Not, op), span),
                    ty,
                )))
            }
            op => error(
                e,
                format!(
                    "the unary operator `{}` is not supported here; kernels take `-x`, `!x`, and `*v` of a region's element (`get_mut()`) or a binding to one",
                    quote::ToTokens::to_token_stream(&op)
                ),
            ),
        }
    }

    /// `x as T` between scalar types, except to `bool`.
    fn cast(&mut self, e: &syn::Expr, c: &syn::ExprCast) -> Result<Value> {
        let to = scalar_type(&c.ty, &self.subst)?;
        let (op, from) = self.scalar_expr(&c.expr, None)?;
        if from == to {
            return Ok(Some((op, to)));
        }
        if to == ScalarTy::Bool {
            return error(
                e,
                format!("cannot cast `{from}` as `bool`; compare with zero instead"),
            );
        }
        Ok(Some((
            self.assign_temp(to, Rvalue::Cast(op, to), e.span()),
            to,
        )))
    }

    /// `return`, with a value in device functions (assigned to the return place) and
    /// without one in kernels.
    fn return_expr(&mut self, e: &syn::Expr, r: &syn::ExprReturn) -> Result<Value> {
        let span = e.span();
        match (&r.expr, self.body.kind) {
            (Some(v), BodyKind::Kernel) => {
                return error(v, "kernels return nothing; write results into a `Region`");
            }
            (Some(v), BodyKind::Device) => {
                let ret = self.body.locals[0]
                    .ty
                    .scalar()
                    .expect("device functions return scalars");
                let (op, _) = self.scalar_expr(v, Some(ret))?;
                self.push(Place::local(Local::RETURN), Rvalue::Use(op), span);
            }
            (None, BodyKind::Device) => {
                return error(e, "a device function must return a value");
            }
            (None, BodyKind::Kernel) => {}
        }
        self.terminate(TerminatorKind::Return, span);
        Ok(None)
    }

    fn literal(
        &mut self,
        lit: &syn::Lit,
        expected: Option<ScalarTy>,
    ) -> Result<(Operand, ScalarTy)> {
        let c = match lit {
            syn::Lit::Bool(b) => Const::Bool(b.value),
            syn::Lit::Int(i) => {
                let ty = match literal_suffix_type(lit) {
                    Some(t) => t,
                    None => match expected {
                        Some(t) if t.is_float() => {
                            return error(
                                lit,
                                format!(
                                    "expected `{t}`, found an integer literal; write `{}.0`",
                                    i.base10_digits()
                                ),
                            );
                        }
                        Some(t) if t.is_integer() => t,
                        _ => ScalarTy::I32,
                    },
                };
                if ty.is_float() {
                    Const::Float(
                        i.base10_parse::<f64>().map_err(|err| TranslateError {
                            span: lit.span(),
                            message: err.to_string(),
                        })?,
                        ty,
                    )
                } else {
                    let v: i128 = i.base10_parse().map_err(|err| TranslateError {
                        span: lit.span(),
                        message: err.to_string(),
                    })?;
                    Const::Int(v, ty)
                }
            }
            syn::Lit::Float(f) => {
                let ty = match literal_suffix_type(lit) {
                    Some(t) => t,
                    None => match expected {
                        Some(t) if t.is_float() => t,
                        _ => ScalarTy::F64,
                    },
                };
                let v: f64 = f.base10_parse().map_err(|err| TranslateError {
                    span: lit.span(),
                    message: err.to_string(),
                })?;
                Const::Float(
                    if ty == ScalarTy::F32 {
                        v as f32 as f64
                    } else {
                        v
                    },
                    ty,
                )
            }
            _ => {
                return error(
                    lit,
                    "only numeric and `bool` literals are supported in kernels",
                );
            }
        };
        Ok((Operand::Const(c), c.ty()))
    }

    fn binary(&mut self, b: &syn::ExprBinary, expected: Option<ScalarTy>) -> Result<Value> {
        let span = b.op.span();
        if let syn::BinOp::And(_) | syn::BinOp::Or(_) = b.op {
            return self.short_circuit(b).map(Some);
        }
        let Some((op, compound)) = binop(&b.op) else {
            return error(
                b.op,
                format!(
                    "the operator `{}` is not supported in kernels",
                    quote::ToTokens::to_token_stream(&b.op)
                ),
            );
        };
        if compound {
            let (place, ty) = self.assignable_place(&b.left)?;
            if !op.is_shift()
                && let Some(rty) = self.infer(&b.right)
            {
                self.learn(&Operand::Copy(place), ty, rty);
            }
            let rhs_ty = if op.is_shift() {
                self.infer(&b.right)
            } else {
                Some(ty)
            };
            let (rhs, _) = self.scalar_expr(&b.right, rhs_ty)?;
            let (lhs, rhs) =
                self.checked_division(op, Operand::Copy(place), rhs, ty, b.right.span())?;
            self.push(place, Rvalue::BinaryOp(op, lhs, rhs), span);
            self.write_back_arrays(span);
            return Ok(None);
        }
        let operand_ty = if op.is_shift() {
            self.infer(&b.left).or(expected)
        } else if op.is_comparison() {
            self.infer(&b.left).or_else(|| self.infer(&b.right))
        } else {
            self.infer(&b.left)
                .or_else(|| self.infer(&b.right))
                .or(expected)
        };
        let (lhs, lty) = self.scalar_expr(&b.left, operand_ty)?;
        let rhs_expected = if op.is_shift() {
            self.infer(&b.right)
        } else {
            Some(lty)
        };
        let (rhs, rty) = self.scalar_expr(&b.right, rhs_expected)?;
        if !op.is_shift() && rty != lty {
            self.learn(&lhs, lty, rty);
            self.learn(&rhs, rty, lty);
        }
        let (lhs, rhs) = self.checked_division(op, lhs, rhs, lty, b.right.span())?;
        let result_ty = if op.is_comparison() {
            ScalarTy::Bool
        } else {
            lty
        };
        Ok(Some((
            self.assign_temp(result_ty, Rvalue::BinaryOp(op, lhs, rhs), span),
            result_ty,
        )))
    }

    /// Integer division and remainder by zero panic in Rust, and so does signed `MIN / -1`
    /// (which overflows); emit both checks, skipping those a constant divisor settles.
    /// Returns the operands to divide: an element read is read once, into a temporary,
    /// so that the checks and the division see one value (as rustc evaluates operands
    /// before its checks), which the verifier can then prove the division by.
    pub(super) fn checked_division(
        &mut self,
        op: BinOp,
        lhs: Operand,
        rhs: Operand,
        ty: ScalarTy,
        span: SynSpan,
    ) -> Result<(Operand, Operand)> {
        if !matches!(op, BinOp::Div | BinOp::Rem) || !ty.is_integer() {
            return Ok((lhs, rhs));
        }
        let divisor = match rhs {
            Operand::Const(Const::Int(v, _)) => Some(v),
            _ => None,
        };
        let once = |s: &mut Self, o: Operand| match o {
            Operand::Copy(p) | Operand::Move(p) if p.index.is_some() => {
                s.assign_temp(ty, Rvalue::Use(o), span)
            }
            o => o,
        };
        let checks_zero = divisor.is_none_or(|v| v == 0);
        let checks_overflow = ty.is_signed() && divisor.is_none_or(|v| v == -1);
        let (lhs, rhs) = if checks_zero || checks_overflow {
            (once(self, lhs), once(self, rhs))
        } else {
            (lhs, rhs)
        };
        let is_div = op == BinOp::Div;
        if checks_zero {
            let nonzero = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Ne, rhs, Operand::Const(Const::Int(0, ty))),
                span,
            );
            let message = if is_div {
                "attempt to divide by zero"
            } else {
                "attempt to calculate the remainder with a divisor of zero"
            };
            self.assert(nonzero, message, span);
        }
        if checks_overflow {
            let min = -(1i128 << (ty.bits() - 1));
            let minus_one = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Eq, rhs, Operand::Const(Const::Int(-1, ty))),
                span,
            );
            let is_min = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Eq, lhs, Operand::Const(Const::Int(min, ty))),
                span,
            );
            let both = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::BitAnd, minus_one, is_min),
                span,
            );
            let fine = self.assign_temp(ScalarTy::Bool, Rvalue::UnaryOp(UnOp::Not, both), span);
            let message = if is_div {
                "attempt to divide with overflow"
            } else {
                "attempt to calculate the remainder with overflow"
            };
            self.assert(fine, message, span);
        }
        Ok((lhs, rhs))
    }

    fn short_circuit(&mut self, b: &syn::ExprBinary) -> Result<(Operand, ScalarTy)> {
        let span = b.op.span();
        let is_and = matches!(b.op, syn::BinOp::And(_));
        let result = self.temp(ScalarTy::Bool);
        let (lhs, _) = self.scalar_expr(&b.left, Some(ScalarTy::Bool))?;
        let (eval_rhs, short, join) = (self.new_block(), self.new_block(), self.new_block());
        let (on_true, on_false) = if is_and {
            (eval_rhs, short)
        } else {
            (short, eval_rhs)
        };
        self.switch_bool(lhs, on_true, on_false, span);
        self.current = Some(short);
        self.push(
            Place::local(result),
            Rvalue::Use(Operand::Const(Const::Bool(!is_and))),
            span,
        );
        self.goto(join, span);
        self.current = Some(eval_rhs);
        let (rhs, _) = self.scalar_expr(&b.right, Some(ScalarTy::Bool))?;
        self.push(Place::local(result), Rvalue::Use(rhs), span);
        self.goto(join, span);
        self.current = Some(join);
        Ok((Operand::Copy(Place::local(result)), ScalarTy::Bool))
    }

    pub(super) fn cast_operand(
        &mut self,
        op: Operand,
        from: ScalarTy,
        to: ScalarTy,
        span: SynSpan,
    ) -> Operand {
        if from == to {
            return op;
        }
        if let Operand::Const(Const::Int(v, _)) = op
            && to.is_integer()
        {
            return Operand::Const(Const::Int(wrap_to(v, to), to));
        }
        self.assign_temp(to, Rvalue::Cast(op, to), span)
    }
}

/// `v` as an integer of type `to`, wrapped to its width and sign-extended if signed.
fn wrap_to(v: i128, to: ScalarTy) -> i128 {
    let bits = to.bits();
    let masked = v & ((1i128 << bits) - 1);
    if to.is_signed() && masked >> (bits - 1) == 1 {
        masked - (1i128 << bits)
    } else {
        masked
    }
}

/// Why an expression of a kind kernels do not take is refused, and what to write
/// instead where there is something.
fn unsupported(e: &syn::Expr) -> String {
    match e {
        syn::Expr::Array(_) | syn::Expr::Repeat(_) => {
            "an array is a value only as a local's initialiser: `let mut acc = [0.0f32; 4];` or `let taps = [1.0, 2.0, 1.0];`".into()
        }
        syn::Expr::Tuple(_) => {
            "a tuple is a value only when bound by `let` (`let mut best = (0, 1.0);`, then `best.0`), assigned (`best = (k, v)`, `(a, b) = (b, a)`) or taken apart (`let (a, b) = best;`); it is not passed to a function, nested in another tuple or returned".into()
        }
        syn::Expr::Field(_) => {
            "field access is supported on tuple locals (`best.0`) and range locals (`r.start`, `r.end`) only; kernels have no structs".into()
        }
        syn::Expr::Range(_) => {
            "a range is a value only as what a `for` loop runs over (`for i in a..b`), what `map` is called on, or a local (`let r = a..b;`, then `for i in r`, `r.start`, `r.len()`); it is not passed to a function".into()
        }
        syn::Expr::Struct(_) => {
            "struct literals are not supported in kernels: hold the fields in variables".into()
        }
        syn::Expr::Try(_) => {
            "`?` is not supported in kernels (a kernel returns nothing): use `if let` or `match`".into()
        }
        syn::Expr::Async(_) | syn::Expr::Await(_) => "async code is not supported in kernels".into(),
        syn::Expr::Const(_) => {
            "`const` blocks are not supported in kernels: declare a `const` item (`const N: usize = 4;`)".into()
        }
        syn::Expr::Let(_) => {
            "`let` is an expression only in `if let` and `while let` conditions".into()
        }
        syn::Expr::TryBlock(_) => "`try` blocks are not supported in kernels".into(),
        syn::Expr::Yield(_) => "`yield` is not supported in kernels".into(),
        syn::Expr::Infer(_) => "`_` is not a value in kernels".into(),
        _ => "this kind of expression is not supported in kernels; see the README's table of what kernels take".into(),
    }
}

/// The `half` crate's associated constants of `f16` and `bf16` (`f16::MAX`, `bf16::PI`),
/// as the `f64` that holds each exactly.
fn half_constant(ty: ScalarTy, name: &str) -> Option<Const> {
    use half::{bf16, f16};
    macro_rules! pick {
        ($($name:ident)*) => {
            match (name, ty) {
                $(
                    (stringify!($name), ScalarTy::F16) => f16::$name.to_f64(),
                    (stringify!($name), _) => bf16::$name.to_f64(),
                )*
                _ => return None,
            }
        };
    }
    let v = pick!(
        ZERO ONE NEG_ONE NEG_ZERO MAX MIN MIN_POSITIVE MIN_POSITIVE_SUBNORMAL MAX_SUBNORMAL
        EPSILON INFINITY NEG_INFINITY NAN E PI FRAC_1_PI FRAC_1_SQRT_2 FRAC_2_PI
        FRAC_2_SQRT_PI FRAC_PI_2 FRAC_PI_3 FRAC_PI_4 FRAC_PI_6 FRAC_PI_8 LN_10 LN_2
        LOG10_E LOG10_2 LOG2_E LOG2_10 SQRT_2
    );
    Some(Const::Float(v, ty))
}
