//! Device functions that return a tuple of scalars: each compiles as one function per
//! element (`step__0`, `step__1`, ...), the tuples it returns (by `return` or as its
//! value) replaced by that element; a call taken apart at once calls every part
//! ([`spread_call`], used by `split_locals`). Device functions are pure (scalars in, a
//! scalar out), so computing each element by its own call changes no result.

use super::syntax::{strip_parens, strip_type};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// `f(args)`, a call of a function that returns a tuple of `n` elements, as the tuple of
/// `f__0(args)` to `f__{n-1}(args)` ([`tuple_result_parts`]); `None` for anything else.
pub(super) fn spread_call(e: &syn::Expr, n: usize) -> Option<syn::Expr> {
    let syn::Expr::Call(call) = strip_parens(e) else {
        return None;
    };
    let syn::Expr::Path(p) = &*call.func else {
        return None;
    };
    let name = p.path.get_ident().filter(|_| p.qself.is_none() && n >= 2)?;
    let args = &call.args;
    let parts = (0..n).map(|k| {
        let part = syn::Ident::new(&format!("{name}__{k}"), name.span());
        quote::quote_spanned!(call.span()=> #part(#args))
    });
    Some(syn::parse_quote_spanned!(call.span()=> (#(#parts),*)))
}

/// For a function that returns a tuple of two or more elements, one copy per element:
/// named `name__k`, returning element `k`, each tuple it returns (by `return` or as its
/// value) replaced by that element.
pub(crate) fn tuple_result_parts(item: &syn::ItemFn) -> Option<Vec<syn::ItemFn>> {
    let syn::ReturnType::Type(_, ty) = &item.sig.output else {
        return None;
    };
    let syn::Type::Tuple(elements) = strip_type(ty) else {
        return None;
    };
    if elements.elems.len() < 2 {
        return None;
    }
    let parts = elements.elems.iter().enumerate().map(|(k, element)| {
        let mut part = item.clone();
        let name = &item.sig.ident;
        part.sig.ident = syn::Ident::new(&format!("{name}__{k}"), name.span());
        part.sig.output = syn::ReturnType::Type(Default::default(), Box::new(element.clone()));
        Projector { k }.visit_block_mut(&mut part.block);
        project_tail(&mut part.block, k);
        part
    });
    Some(parts.collect())
}

/// Replaces what each `return` returns by its element `k`.
struct Projector {
    k: usize,
}

impl VisitMut for Projector {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            // A closure's `return`s are its own.
            syn::Expr::Closure(_) => {}
            syn::Expr::Return(r) => {
                if let Some(value) = &mut r.expr {
                    self.visit_expr_mut(value);
                    project(value, self.k);
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

/// The block's value replaced by its element `k`.
fn project_tail(block: &mut syn::Block, k: usize) {
    if let Some(syn::Stmt::Expr(e, None)) = block.stmts.last_mut() {
        project(e, k);
    }
}

/// `e`, a tuple-valued expression, replaced by its element `k`: through blocks, `if`s
/// and `match`es to the tuples they yield; a call of another tuple function as a call of
/// its part `k`; anything else bound to a local first.
fn project(e: &mut syn::Expr, k: usize) {
    match e {
        syn::Expr::Paren(p) => project(&mut p.expr, k),
        syn::Expr::Tuple(t) if k < t.elems.len() => *e = t.elems[k].clone(),
        syn::Expr::Block(b) => project_tail(&mut b.block, k),
        syn::Expr::If(i) => {
            project_tail(&mut i.then_branch, k);
            if let Some((_, otherwise)) = &mut i.else_branch {
                project(otherwise, k);
            }
        }
        syn::Expr::Match(m) => {
            for arm in &mut m.arms {
                project(&mut arm.body, k);
            }
        }
        // Projected where the `return` is.
        syn::Expr::Return(_) => {}
        syn::Expr::Call(c)
            if let syn::Expr::Path(p) = &*c.func
                && p.qself.is_none()
                && p.path.get_ident().is_some() =>
        {
            if let syn::Expr::Path(p) = &mut *c.func
                && let Some(name) = p.path.get_ident().cloned()
            {
                p.path = syn::Ident::new(&format!("{name}__{k}"), name.span()).into();
            }
        }
        other => {
            let span = other.span();
            let index = syn::Index {
                index: k as u32,
                span,
            };
            let value = other.clone();
            *other = syn::parse_quote_spanned!(span=> {
                let __offload_result = #value;
                __offload_result.#index
            });
        }
    }
}
