//! The numeric methods of a kernel's scalars, each made of MIR arithmetic and intrinsics:
//! integer methods of two operands (`wrapping_*`, `saturating_*`, `abs_diff`,
//! `rem_euclid`, `rotate_*`...), float classes and signs, bit conversions, `clamp`,
//! powers, and the calls that map to one intrinsic. `calls.rs` dispatches to them by name.

use super::builtins::{self, On, Rule};
use super::{Binding, Result, Translator, Value, error};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use std::collections::HashMap;
use syn::spanned::Spanned;

impl Translator {
    /// A method call's receiver, evaluated once into a local that the method's formula
    /// may read as often as it needs, and its type.
    fn receiver_once(
        &mut self,
        m: &syn::ExprMethodCall,
        span: SynSpan,
    ) -> Result<(Local, ScalarTy)> {
        let ty = self.infer(&m.receiver);
        let (x, t) = self.scalar_expr(&m.receiver, ty)?;
        Ok((self.as_local(x, t, span), t))
    }

    /// `f(x, t)`, or for an `f16` or `bf16` `x`, `f` of `x` in `f32` (where it is exact)
    /// with a float result rounded back: the `half` crate's classes and signs are those
    /// of the value.
    fn through_f32(
        &mut self,
        x: Local,
        t: ScalarTy,
        span: SynSpan,
        f: impl FnOnce(&mut Self, Local, ScalarTy) -> Result<Value>,
    ) -> Result<Value> {
        if !t.is_half() {
            return f(self, x, t);
        }
        let wide = Rvalue::Cast(Operand::Copy(Place::local(x)), ScalarTy::F32);
        let wide = self.assign_temp(ScalarTy::F32, wide, span);
        let wide = self.as_local(wide, ScalarTy::F32, span);
        match f(self, wide, ScalarTy::F32)? {
            Some((v, ScalarTy::F32)) => {
                Ok(Some((self.assign_temp(t, Rvalue::Cast(v, t), span), t)))
            }
            other => Ok(other),
        }
    }

    /// The receiver and the argument of an integer method of two operands (`a.m(b)`),
    /// both of the receiver's type.
    pub(super) fn integer_operands(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
    ) -> Result<(Operand, Operand, ScalarTy)> {
        let ty = self.infer(&m.receiver).or_else(|| self.infer(&m.args[0]));
        let (a, t) = self.scalar_expr(&m.receiver, ty)?;
        let (b, _) = self.scalar_expr(&m.args[0], Some(t))?;
        if !t.is_integer() {
            return error(
                &m.method,
                format!("`{name}` is defined on integers, not `{t}`"),
            );
        }
        Ok((a, b, t))
    }

    /// `x.wrapping_add(y)`, `wrapping_sub` and `wrapping_mul` of integers.
    pub(super) fn wrapping_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        // Kernel integer arithmetic already wraps.
        let op = match name {
            "wrapping_add" => BinOp::Add,
            "wrapping_sub" => BinOp::Sub,
            _ => BinOp::Mul,
        };
        let (a, b, t) = self.integer_operands(m, name)?;
        Ok(Some((
            self.assign_temp(t, Rvalue::BinaryOp(op, a, b), span),
            t,
        )))
    }

    /// `x.is_nan()`, `is_infinite()`, `is_finite()` of floats and `x.signum()` of floats
    /// and signed integers, as Rust defines them (a float's `signum` is NaN for NaN and
    /// keeps the sign of zero), from comparisons; `x` is evaluated once.
    pub(super) fn class_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let (x, t) = self.receiver_once(m, span)?;
        self.through_f32(x, t, span, |s, x, t| s.class_of(x, t, m, name, span))
    }

    fn class_of(
        &mut self,
        x: Local,
        t: ScalarTy,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let x = Operand::Copy(Place::local(x));
        let bool_of = |b: &mut Self, op, a, c| {
            b.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, a, c), span)
        };
        let float = |v: f64| Operand::Const(Const::Float(v, t));
        match (name, t.is_float()) {
            ("is_nan", true) => Ok(Some((bool_of(self, BinOp::Ne, x, x), ScalarTy::Bool))),
            ("is_infinite" | "is_finite", true) => {
                let abs = self.intrinsic(Intrinsic::Abs, vec![x], span)?;
                let op = if name == "is_finite" {
                    BinOp::Lt
                } else {
                    BinOp::Eq
                };
                Ok(Some((
                    bool_of(self, op, abs, float(f64::INFINITY)),
                    ScalarTy::Bool,
                )))
            }
            ("signum", true) => {
                // NaN for NaN; else -1 for anything below zero and for -0.0 (whose
                // reciprocal is -inf), 1 for the rest.
                let result = self.temp(t);
                let (nan_bb, number_bb, join) =
                    (self.new_block(), self.new_block(), self.new_block());
                let nan = bool_of(self, BinOp::Ne, x, x);
                self.switch_bool(nan, nan_bb, number_bb, span);
                self.current = Some(nan_bb);
                self.push(Place::local(result), Rvalue::Use(x), span);
                self.goto(join, span);
                self.current = Some(number_bb);
                let below = bool_of(self, BinOp::Lt, x, float(0.0));
                let inverse =
                    self.assign_temp(t, Rvalue::BinaryOp(BinOp::Div, float(1.0), x), span);
                let negative_zero = bool_of(self, BinOp::Lt, inverse, float(0.0));
                let negative = bool_of(self, BinOp::BitOr, below, negative_zero);
                let n = self.assign_temp(t, Rvalue::Cast(negative, t), span);
                let twice = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Mul, n, float(2.0)), span);
                self.push(
                    Place::local(result),
                    Rvalue::BinaryOp(BinOp::Sub, float(1.0), twice),
                    span,
                );
                self.goto(join, span);
                self.current = Some(join);
                Ok(Some((Operand::Copy(Place::local(result)), t)))
            }
            ("signum", false) if t.is_signed() => {
                let zero = Operand::Const(Const::Int(0, t));
                let above = bool_of(self, BinOp::Gt, x, zero);
                let below = bool_of(self, BinOp::Lt, x, zero);
                let (a, b) = (
                    self.assign_temp(t, Rvalue::Cast(above, t), span),
                    self.assign_temp(t, Rvalue::Cast(below, t), span),
                );
                Ok(Some((
                    self.assign_temp(t, Rvalue::BinaryOp(BinOp::Sub, a, b), span),
                    t,
                )))
            }
            _ => error(
                &m.method,
                format!(
                    "`{name}` is defined on {}, not `{t}`",
                    if name == "signum" {
                        "floats and signed integers"
                    } else {
                        "floats"
                    }
                ),
            ),
        }
    }

    /// `a.abs_diff(b)` (unsigned for signed `a`, as in Rust) and `a.rem_euclid(b)` (never
    /// negative; panics as `%` does) of integers.
    pub(super) fn euclid_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let (a, b, t) = self.integer_operands(m, name)?;
        if name == "abs_diff" {
            let high = self.intrinsic(Intrinsic::Max, vec![a, b], span)?;
            let low = self.intrinsic(Intrinsic::Min, vec![a, b], span)?;
            let d = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Sub, high, low), span);
            let unsigned = t.unsigned();
            return Ok(Some((
                self.assign_temp(unsigned, Rvalue::Cast(d, unsigned), span),
                unsigned,
            )));
        }
        if name == "div_euclid" {
            return self.div_euclid(a, b, t, m, span);
        }
        if name == "div_ceil" {
            return self.div_ceil(a, b, t, m, span);
        }
        let (a, b) = self.checked_division(BinOp::Rem, a, b, t, m.args[0].span())?;
        let r = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Rem, a, b), span);
        if !t.is_signed() {
            return Ok(Some((r, t)));
        }
        // A negative remainder moves up by `|b|` (wrapping, as Rust's `rem_euclid`).
        let negative = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Lt, r, Operand::Const(Const::Int(0, t))),
            span,
        );
        let n = self.assign_temp(t, Rvalue::Cast(negative, t), span);
        let magnitude = self.intrinsic(Intrinsic::Abs, vec![b], span)?;
        let lift = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Mul, n, magnitude), span);
        Ok(Some((
            self.assign_temp(t, Rvalue::BinaryOp(BinOp::Add, r, lift), span),
            t,
        )))
    }

    /// `a.div_ceil(b)`: the quotient rounded up (panicking as `/` does): one more than `/`
    /// when the remainder is not zero and has `b`'s sign.
    pub(super) fn div_ceil(
        &mut self,
        a: Operand,
        b: Operand,
        t: ScalarTy,
        m: &syn::ExprMethodCall,
        span: SynSpan,
    ) -> Result<Value> {
        let (q, r, b) = self.quotient(a, b, t, m, span)?;
        let zero = Operand::Const(Const::Int(0, t));
        let bool_of = |s: &mut Self, op, x, y| {
            s.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, x, y), span)
        };
        let inexact = bool_of(self, BinOp::Ne, r, zero);
        let up = if t.is_signed() {
            let r_negative = bool_of(self, BinOp::Lt, r, zero);
            let b_negative = bool_of(self, BinOp::Lt, b, zero);
            let same_sign = bool_of(self, BinOp::Eq, r_negative, b_negative);
            bool_of(self, BinOp::BitAnd, inexact, same_sign)
        } else {
            inexact
        };
        let up = self.assign_temp(t, Rvalue::Cast(up, t), span);
        Ok(Some((
            self.assign_temp(t, Rvalue::BinaryOp(BinOp::Add, q, up), span),
            t,
        )))
    }

    /// `a / b` and `a % b` (checked as `/` is), and `b` as read.
    fn quotient(
        &mut self,
        a: Operand,
        b: Operand,
        t: ScalarTy,
        m: &syn::ExprMethodCall,
        span: SynSpan,
    ) -> Result<(Operand, Operand, Operand)> {
        let (a, b) = self.checked_division(BinOp::Div, a, b, t, m.args[0].span())?;
        let q = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Div, a, b), span);
        let r = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Rem, a, b), span);
        Ok((q, r, b))
    }

    /// `a.div_euclid(b)`: the quotient rounded so that the remainder is never negative
    /// (panicking as `/` does): one less than `/` for a negative remainder and positive
    /// `b`, one more for negative `b`.
    pub(super) fn div_euclid(
        &mut self,
        a: Operand,
        b: Operand,
        t: ScalarTy,
        m: &syn::ExprMethodCall,
        span: SynSpan,
    ) -> Result<Value> {
        let (q, r, b) = self.quotient(a, b, t, m, span)?;
        if !t.is_signed() {
            return Ok(Some((q, t)));
        }
        let zero = Operand::Const(Const::Int(0, t));
        let bool_of = |s: &mut Self, op, x, y| {
            s.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, x, y), span)
        };
        let negative = bool_of(self, BinOp::Lt, r, zero);
        let b_positive = bool_of(self, BinOp::Gt, b, zero);
        let b_negative = bool_of(self, BinOp::Lt, b, zero);
        let down = bool_of(self, BinOp::BitAnd, negative, b_positive);
        let up = bool_of(self, BinOp::BitAnd, negative, b_negative);
        let (down, up) = (
            self.assign_temp(t, Rvalue::Cast(down, t), span),
            self.assign_temp(t, Rvalue::Cast(up, t), span),
        );
        let q = self.assign_temp(t, Rvalue::BinaryOp(BinOp::Sub, q, down), span);
        Ok(Some((
            self.assign_temp(t, Rvalue::BinaryOp(BinOp::Add, q, up), span),
            t,
        )))
    }

    /// Methods made of arithmetic: `recip`, `fract`, `to_radians`, `to_degrees`,
    /// `is_sign_positive`/`is_sign_negative` (of floats; `-0.0` and negative NaNs are
    /// negative, told by the reciprocal's sign for zeros) and `is_positive`/`is_negative`
    /// (of signed integers).
    pub(super) fn derived_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let (x, t) = self.receiver_once(m, span)?;
        self.through_f32(x, t, span, |s, x, t| s.derived_of(x, t, m, name, span))
    }

    fn derived_of(
        &mut self,
        x: Local,
        t: ScalarTy,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let x = Operand::Copy(Place::local(x));
        let float = |v: f64| Operand::Const(Const::Float(v, t));
        let value = |s: &mut Self, rv| s.assign_temp(t, rv, span);
        let bool_of = |s: &mut Self, op, a, c| {
            s.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, a, c), span)
        };
        let v = match (name, t.is_float(), t.is_signed()) {
            ("recip", true, _) => value(self, Rvalue::BinaryOp(BinOp::Div, float(1.0), x)),
            ("fract", true, _) => {
                let whole = self.intrinsic(Intrinsic::Trunc, vec![x], span)?;
                value(self, Rvalue::BinaryOp(BinOp::Sub, x, whole))
            }
            ("to_radians", true, _) => {
                // The constants Rust's `to_radians` and `to_degrees` multiply by, each in
                // the float's own type.
                let k = if t == ScalarTy::F32 {
                    (std::f32::consts::PI / 180.0f32) as f64
                } else {
                    std::f64::consts::PI / 180.0
                };
                value(self, Rvalue::BinaryOp(BinOp::Mul, x, float(k)))
            }
            ("to_degrees", true, _) => {
                let k = if t == ScalarTy::F32 {
                    57.295_78_f32 as f64
                } else {
                    180.0f64 / std::f64::consts::PI
                };
                value(self, Rvalue::BinaryOp(BinOp::Mul, x, float(k)))
            }
            ("is_sign_positive" | "is_sign_negative", true, _) => {
                let bits = self.intrinsic(Intrinsic::ToBits, vec![x], span)?;
                let bits_ty = self.operand_type(&bits);
                let sign = Operand::Const(Const::Int(1 << (bits_ty.bits() - 1), bits_ty));
                let masked =
                    self.assign_temp(bits_ty, Rvalue::BinaryOp(BinOp::BitAnd, bits, sign), span);
                let op = if name == "is_sign_negative" {
                    BinOp::Ne
                } else {
                    BinOp::Eq
                };
                let zero = Operand::Const(Const::Int(0, bits_ty));
                return Ok(Some((bool_of(self, op, masked, zero), ScalarTy::Bool)));
            }
            ("is_positive" | "is_negative", false, true) => {
                let op = if name == "is_positive" {
                    BinOp::Gt
                } else {
                    BinOp::Lt
                };
                let zero = Operand::Const(Const::Int(0, t));
                return Ok(Some((bool_of(self, op, x, zero), ScalarTy::Bool)));
            }
            _ => {
                let on = if name.starts_with("is_p") || name.starts_with("is_n") {
                    "signed integers"
                } else {
                    "floats"
                };
                return error(&m.method, format!("`{name}` is defined on {on}, not `{t}`"));
            }
        };
        Ok(Some((v, t)))
    }

    /// `x.rotate_left(n)`, `rotate_right(n)` (by `n % bits`), and `saturating_add`,
    /// `saturating_sub` of unsigned integers (signed ones, and `saturating_mul`, are
    /// [`Self::saturating_call`]); each of integers only.
    pub(super) fn bits_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let (x, t) = self.receiver_once(m, span)?;
        if t.is_integer()
            && (name == "saturating_mul" || (name.starts_with("saturating") && t.is_signed()))
        {
            return self.saturating_call(m, name, x, t, span);
        }
        let x = Operand::Copy(Place::local(x));
        let value = |s: &mut Self, rv| s.assign_temp(t, rv, span);
        match name {
            "rotate_left" | "rotate_right" if t.is_integer() => {
                let (n, _) = self.scalar_expr(&m.args[0], Some(ScalarTy::U32))?;
                let n = self.assign_temp(t, Rvalue::Cast(n, t), span);
                let bits = Operand::Const(Const::Int(t.bits() as i128, t));
                let mask = Operand::Const(Const::Int(t.bits() as i128 - 1, t));
                let n = value(self, Rvalue::BinaryOp(BinOp::BitAnd, n, mask));
                // Shift amounts wrap at the width, so `x >> bits` of `n == 0` is `x`,
                // and `x | x` is `x`.
                let back = value(self, Rvalue::BinaryOp(BinOp::Sub, bits, n));
                let back = value(self, Rvalue::BinaryOp(BinOp::BitAnd, back, mask));
                let (first, second) = if name == "rotate_left" {
                    (BinOp::Shl, BinOp::Shr)
                } else {
                    (BinOp::Shr, BinOp::Shl)
                };
                // Rotation works on the bits: unsigned shifts, whatever the type.
                let u = t.unsigned();
                let xu = self.assign_temp(u, Rvalue::Cast(x, u), span);
                let a = self.assign_temp(u, Rvalue::BinaryOp(first, xu, n), span);
                let b = self.assign_temp(u, Rvalue::BinaryOp(second, xu, back), span);
                let r = self.assign_temp(u, Rvalue::BinaryOp(BinOp::BitOr, a, b), span);
                Ok(Some((value(self, Rvalue::Cast(r, t)), t)))
            }
            "saturating_add" | "saturating_sub" if t.is_integer() && !t.is_signed() => {
                let (b, _) = self.scalar_expr(&m.args[0], Some(t))?;
                if name == "saturating_add" {
                    // `a + min(b, MAX - a)`.
                    let max = Operand::Const(Const::Int((1i128 << t.bits()) - 1, t));
                    let room = value(self, Rvalue::BinaryOp(BinOp::Sub, max, x));
                    let b = self.intrinsic(Intrinsic::Min, vec![b, room], span)?;
                    Ok(Some((value(self, Rvalue::BinaryOp(BinOp::Add, x, b)), t)))
                } else {
                    // `a - min(a, b)`.
                    let b = self.intrinsic(Intrinsic::Min, vec![x, b], span)?;
                    Ok(Some((value(self, Rvalue::BinaryOp(BinOp::Sub, x, b)), t)))
                }
            }
            _ => error(
                &m.method,
                format!("`{name}` is defined on integers, not `{t}`"),
            ),
        }
    }

    /// `a.saturating_add(b)` and `saturating_sub` of signed integers, and
    /// `saturating_mul` of any, written as Rust computes them: the wrapping result where
    /// it did not overflow, else the bound the true result passed.
    fn saturating_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        a: Local,
        t: ScalarTy,
        span: SynSpan,
    ) -> Result<Value> {
        let ty = syn::Ident::new(&t.to_string(), span);
        let b = &m.args[0];
        let n = {
            self.element_loops += 1;
            self.element_loops
        };
        let name_of = |what: &str| syn::Ident::new(&format!("__offload_{what}_{n}"), span);
        let (x, y, r) = (name_of("a"), name_of("b"), name_of("r"));
        let body: syn::Expr = match name {
            // Overflow when both operands have the sign the result lacks.
            "saturating_add" => syn::parse_quote_spanned!(span=> {
                let #r = #x.wrapping_add(#y);
                if ((#x ^ #r) & (#y ^ #r)) < 0 {
                    if #x < 0 { #ty::MIN } else { #ty::MAX }
                } else {
                    #r
                }
            }),
            // Overflow when the operands' signs differ and the result's is not `a`'s.
            "saturating_sub" => syn::parse_quote_spanned!(span=> {
                let #r = #x.wrapping_sub(#y);
                if ((#x ^ #y) & (#x ^ #r)) < 0 {
                    if #x < 0 { #ty::MIN } else { #ty::MAX }
                } else {
                    #r
                }
            }),
            // Up to 32 bits, the product of the widened operands, clamped; 64-bit ones
            // overflowed unless dividing the wrapped product by `a` gives `b` back (with
            // `a == -1` apart, since `MIN / -1` overflows itself).
            _ if t.bits() <= 32 => {
                let wide = syn::Ident::new(if t.is_signed() { "i64" } else { "u64" }, span);
                syn::parse_quote_spanned!(span=> {
                    let #r = (#x as #wide) * (#y as #wide);
                    #r.clamp(#ty::MIN as #wide, #ty::MAX as #wide) as #ty
                })
            }
            _ if t.is_signed() => syn::parse_quote_spanned!(span=> {
                let #r = #x.wrapping_mul(#y);
                let overflowed = if #x == -1 {
                    #y == #ty::MIN
                } else {
                    #x != 0 && #r / #x != #y
                };
                if overflowed {
                    if (#x < 0) != (#y < 0) { #ty::MIN } else { #ty::MAX }
                } else {
                    #r
                }
            }),
            _ => syn::parse_quote_spanned!(span=> {
                let #r = #x.wrapping_mul(#y);
                if #x != 0 && #r / #x != #y { #ty::MAX } else { #r }
            }),
        };
        // The receiver is already evaluated; the desugaring reads it by name.
        let desugared: syn::Expr = syn::parse_quote_spanned!(span=> {
            let #y: #ty = #b;
            #body
        });
        self.scopes.push(HashMap::new());
        self.bind(&x, Binding::Local(a));
        let result = self.expr(&desugared, Some(t));
        self.scopes.pop();
        result
    }

    /// `x.clamp(lo, hi)` of integers and floats, checking `lo <= hi`.
    pub(super) fn clamp_call(&mut self, m: &syn::ExprMethodCall, span: SynSpan) -> Result<Value> {
        // `x.clamp(lo, hi)` is `max(lo)` then `min(hi)`; Rust panics when
        // `lo > hi` (or either is NaN), and so do kernels.
        let ty = self.infer(&m.receiver).or_else(|| self.infer(&m.args[0]));
        let (x, t) = self.scalar_expr(&m.receiver, ty)?;
        let (lo, _) = self.scalar_expr(&m.args[0], Some(t))?;
        let (hi, _) = self.scalar_expr(&m.args[1], Some(t))?;
        let ordered = self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Le, lo, hi), span);
        let message = if t.is_float() {
            "min > max, or either was NaN"
        } else {
            "assertion failed: min <= max"
        };
        self.assert(ordered, message, span);
        let raised = self.intrinsic(Intrinsic::Max, vec![x, lo], span)?;
        let v = self.intrinsic(Intrinsic::Min, vec![raised, hi], span)?;
        Ok(Some((v, t)))
    }

    /// `base.pow(exp)` of an integer, with a `u32` exponent.
    pub(super) fn pow_call(&mut self, m: &syn::ExprMethodCall, span: SynSpan) -> Result<Value> {
        let ty = self.infer(&m.receiver);
        let (base, t) = self.scalar_expr(&m.receiver, ty)?;
        if !t.is_integer() {
            return error(
                &m.method,
                format!("`pow` is defined on integers, not `{t}`; use `powi` or `powf`"),
            );
        }
        let (exp, _) = self.scalar_expr(&m.args[0], Some(ScalarTy::U32))?;
        Ok(Some((self.int_pow(base, exp, t, span), t)))
    }

    /// `h.to_f32()` and `h.to_f64()` of an `f16` or `bf16`: exact.
    pub(super) fn widening_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let ty = self.infer(&m.receiver);
        let (x, t) = self.scalar_expr(&m.receiver, ty)?;
        if !t.is_half() {
            return error(
                &m.method,
                format!("`{name}` is a method of `f16` and `bf16`, not of `{t}`; `as` converts"),
            );
        }
        let to = if name == "to_f32" {
            ScalarTy::F32
        } else {
            ScalarTy::F64
        };
        Ok(Some((self.assign_temp(to, Rvalue::Cast(x, to), span), to)))
    }

    /// `x.sqrt()`, `x.min(y)` and the other methods that are one [`Intrinsic`], their
    /// arguments typed by the method's rule.
    pub(super) fn intrinsic_method(
        &mut self,
        m: &syn::ExprMethodCall,
        intrinsic: Intrinsic,
        rule: Rule,
        span: SynSpan,
    ) -> Result<Value> {
        let ty = self.infer(&m.receiver);
        let (receiver, t) = self.scalar_expr(&m.receiver, ty)?;
        let mut args = vec![receiver];
        for arg in &m.args {
            args.push(self.scalar_expr(arg, Some(rule.argument().unwrap_or(t)))?.0);
        }
        // On `f16` and `bf16` (a generic `Float` kernel's instance), the `f32` function
        // rounded to the type, as `Float` defines it for them; `min` and `max` are theirs.
        let math = matches!(
            intrinsic.def().signature,
            Signature::Float | Signature::Signed | Signature::FloatI32
        );
        if t.is_half() && math {
            let wide: Vec<Operand> = args
                .into_iter()
                .map(|a| match self.operand_type(&a) {
                    at if at == t => {
                        self.assign_temp(ScalarTy::F32, Rvalue::Cast(a, ScalarTy::F32), span)
                    }
                    _ => a,
                })
                .collect();
            let result = self.intrinsic(intrinsic, wide, span)?;
            return Ok(Some((
                self.assign_temp(t, Rvalue::Cast(result, t), span),
                t,
            )));
        }
        let result = self.intrinsic(intrinsic, args, span)?;
        let result_ty = self.operand_type(&result);
        Ok(Some((result, result_ty)))
    }

    /// A method that is not a kernel's: named, with the ones that are.
    pub(super) fn unknown_method(&mut self, m: &syn::ExprMethodCall, name: &str) -> Result<Value> {
        error(
            &m.method,
            format!(
                "the method `{name}` is not supported in kernels; supported: `Region::index`, `Region::get_mut`, \
                 `len`, the float methods `{}`, `f32::from_bits` and `f64::from_bits`, the integer methods `{}`, \
                 and of `f16` and `bf16` `{}`",
                builtins::method_names(On::Floats),
                builtins::method_names(On::Integers),
                builtins::method_names(On::Halves),
            ),
        )
    }

    /// Integer `base.pow(exp)` by square-and-multiply, wrapping like rustc in release.
    pub(super) fn int_pow(
        &mut self,
        base: Operand,
        exp: Operand,
        ty: ScalarTy,
        span: SynSpan,
    ) -> Operand {
        let (acc, b, e) = (self.temp(ty), self.temp(ty), self.temp(ScalarTy::U32));
        self.push(
            Place::local(acc),
            Rvalue::Use(Operand::Const(Const::Int(1, ty))),
            span,
        );
        self.push(Place::local(b), Rvalue::Use(base), span);
        self.push(Place::local(e), Rvalue::Use(exp), span);
        let (head, body, multiply, square, exit) = (
            self.new_block(),
            self.new_block(),
            self.new_block(),
            self.new_block(),
            self.new_block(),
        );
        let copy = |l: Local| Operand::Copy(Place::local(l));
        self.goto(head, span);
        self.current = Some(head);
        let more = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(
                BinOp::Ne,
                copy(e),
                Operand::Const(Const::Int(0, ScalarTy::U32)),
            ),
            span,
        );
        self.switch_bool(more, body, exit, span);
        self.current = Some(body);
        let low = self.assign_temp(
            ScalarTy::U32,
            Rvalue::BinaryOp(
                BinOp::BitAnd,
                copy(e),
                Operand::Const(Const::Int(1, ScalarTy::U32)),
            ),
            span,
        );
        let odd = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Ne, low, Operand::Const(Const::Int(0, ScalarTy::U32))),
            span,
        );
        self.switch_bool(odd, multiply, square, span);
        self.current = Some(multiply);
        self.push(
            Place::local(acc),
            Rvalue::BinaryOp(BinOp::Mul, copy(acc), copy(b)),
            span,
        );
        self.goto(square, span);
        self.current = Some(square);
        self.push(
            Place::local(b),
            Rvalue::BinaryOp(BinOp::Mul, copy(b), copy(b)),
            span,
        );
        self.push(
            Place::local(e),
            Rvalue::BinaryOp(
                BinOp::Shr,
                copy(e),
                Operand::Const(Const::Int(1, ScalarTy::U32)),
            ),
            span,
        );
        self.goto(head, span);
        self.current = Some(exit);
        copy(acc)
    }
}
