//! Closures bound to names in a kernel: `let sq = |v: f32| v * v;` then `sq(x[i])`.
//! Each call is the closure's body inlined: its arguments evaluated where it is called,
//! its parameters bound to copies of them, and every other name in the body resolved as
//! it was where the closure was written (a captured `let mut` local is the same local,
//! as Rust's capture by reference makes it). `move` closures are refused: they capture
//! copies, which inlining would not make.

use super::types::scalar_type;
use super::{Binding, Result, Translator, Value, error};
use offload_mir::*;
use std::collections::HashMap;

/// A closure bound to a name, and the names in scope where it was written.
#[derive(Clone)]
pub(super) struct LocalClosure {
    closure: syn::ExprClosure,
    scopes: Vec<HashMap<String, Binding>>,
}

impl Translator {
    /// `let name = |..| ..;`: binds `name` to the closure.
    pub(super) fn closure_binding(
        &mut self,
        name: &syn::PatIdent,
        closure: &syn::ExprClosure,
    ) -> Result<()> {
        if closure.capture.is_some() {
            return error(
                closure,
                "`move` closures are not supported in kernels; drop `move` (closures are inlined where they are called)",
            );
        }
        if closure.asyncness.is_some() || closure.constness.is_some() {
            return error(closure, "a plain closure `|..| expr` is expected here");
        }
        if super::reductions::returns(&closure.body) {
            return error(
                closure,
                "`return` in a closure is not supported in kernels (the closure is inlined)",
            );
        }
        self.closures.push(LocalClosure {
            closure: closure.clone(),
            scopes: self.scopes.clone(),
        });
        self.bind(&name.ident, Binding::Closure(self.closures.len() - 1));
        Ok(())
    }

    /// `f(args)` of a closure bound to `f`: its body inlined, as the module docs say.
    pub(super) fn closure_call(
        &mut self,
        which: usize,
        c: &syn::ExprCall,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        let LocalClosure { closure, scopes } = self.closures[which].clone();
        if c.args.len() != closure.inputs.len() {
            return error(
                c,
                format!(
                    "this closure takes {} argument(s), not {}",
                    closure.inputs.len(),
                    c.args.len()
                ),
            );
        }
        let span = syn::spanned::Spanned::span(c);
        let mut params = Vec::new();
        for (arg, param) in c.args.iter().zip(&closure.inputs) {
            let (pattern, annotated) = match param {
                syn::Pat::Type(t) => (&*t.pat, Some(scalar_type(&t.ty, &self.subst)?)),
                other => (other, None),
            };
            let syn::Pat::Ident(name) = pattern else {
                return error(pattern, "closure parameters in kernels are names: `|v| ..`");
            };
            let want = annotated.or_else(|| self.infer(arg));
            let (value, ty) = self.scalar_expr(arg, want)?;
            params.push((name.clone(), value, ty));
        }
        let returns = match &closure.output {
            syn::ReturnType::Type(_, ty) => Some(scalar_type(ty, &self.subst)?),
            syn::ReturnType::Default => None,
        };
        // The body sees the names of the closure's own place, and its parameters.
        let caller = std::mem::replace(&mut self.scopes, scopes);
        self.scopes.push(HashMap::new());
        for (name, value, ty) in params {
            let copy = self.declare(
                Ty::Scalar(ty),
                name.mutability.is_some(),
                Some((&name.ident, name.ident.span())),
            );
            self.push(Place::local(copy), Rvalue::Use(value), span);
            self.bind(&name.ident, Binding::Local(copy));
        }
        let result = self.expr(&closure.body, returns.or(expected));
        self.scopes = caller;
        result
    }
}
