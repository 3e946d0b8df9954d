//! Helpers that read Rust syntax without translating it: parentheses seen through (in
//! expressions and types), what a `for` loop over elements iterates, a turbofish's
//! scalar type, and an expression's text as `stringify!` prints it.

use super::{Result, error};
use offload_mir::ScalarTy;

/// `e` without the parentheses (and invisible groups) around it.
pub(super) fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

/// `ty` without parentheses around it.
pub(super) fn strip_type(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Paren(p) => strip_type(&p.elem),
        syn::Type::Group(g) => strip_type(&g.elem),
        other => other,
    }
}

/// The slice, array or chunk an iteration a `for` loop takes (`x.iter()`,
/// `x.iter().enumerate()`, ...) runs over.
pub(super) fn iterated(e: &syn::Expr) -> Option<&syn::Expr> {
    element_iteration(e).map(|x| x.of)
}

/// What a `for` loop over elements iterates (`x`, `x.iter()`, with `copied`, `cloned`,
/// `enumerate`, `rev` and `zip`); `None` for other loops (ranges).
pub(super) fn element_iteration(e: &syn::Expr) -> Option<Elements<'_>> {
    let e = strip_parens(e);
    let plain = |x| Elements {
        of: x,
        zipped: None,
        enumerate: false,
        reversed: false,
    };
    let simple = |x: Elements<'_>| !x.enumerate && !x.reversed && x.zipped.is_none();
    if as_sub_slice(e).is_some() {
        // `&x[a..b]`, or `x[a..b]` before `.iter()`.
        return Some(plain(e));
    }
    match e {
        syn::Expr::Path(_) => Some(plain(e)),
        // `&x` as `zip`'s argument.
        syn::Expr::Reference(r) if r.mutability.is_none() => {
            element_iteration(&r.expr).filter(|x| simple(*x))
        }
        // `a.iter().zip(b.iter())`: the pairs `(a[k], b[k])` up to the shorter length.
        syn::Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => {
            let left = element_iteration(&m.receiver).filter(|x| simple(*x))?;
            let right = element_iteration(&m.args[0]).filter(|x| simple(*x))?;
            Some(Elements {
                zipped: Some(right.of),
                ..left
            })
        }
        syn::Expr::MethodCall(m) if m.args.is_empty() => match m.method.to_string().as_str() {
            "iter" => match strip_parens(&m.receiver) {
                r @ syn::Expr::Path(_) => Some(plain(r)),
                r if as_sub_slice(r).is_some() => Some(plain(r)),
                _ => None,
            },
            "copied" | "cloned" => element_iteration(&m.receiver),
            "enumerate" => element_iteration(&m.receiver)
                .filter(|x| !x.enumerate && !x.reversed)
                .map(|x| Elements {
                    enumerate: true,
                    ..x
                }),
            "rev" => element_iteration(&m.receiver)
                .filter(|x| simple(*x))
                .map(|x| Elements {
                    reversed: true,
                    ..x
                }),
            _ => None,
        },
        _ => None,
    }
}

/// What a `for` loop over elements runs over: the slice, array or chunk, the one zipped
/// with it, whether it is enumerated, and whether it runs from the last element back.
#[derive(Copy, Clone)]
pub(super) struct Elements<'e> {
    pub of: &'e syn::Expr,
    pub zipped: Option<&'e syn::Expr>,
    pub enumerate: bool,
    pub reversed: bool,
}

/// The scalar type a turbofish names (`sum::<f32>()`).
pub(super) fn turbofish_type(t: &syn::AngleBracketedGenericArguments) -> Result<ScalarTy> {
    match t.args.first() {
        Some(syn::GenericArgument::Type(syn::Type::Path(p))) if t.args.len() == 1 => p
            .path
            .get_ident()
            .and_then(|i| ScalarTy::from_name(&i.to_string()))
            .map_or_else(|| error(t, "a scalar type is expected here"), Ok),
        _ => error(t, "a scalar type is expected here"),
    }
}

/// Source text for an expression as `stringify!` would print it, for assertion messages:
/// tokens joined by spaces, minus the spaces rustc leaves out around brackets, dots,
/// paths and commas.
pub(super) fn expression_text(e: &syn::Expr) -> String {
    let raw = quote::ToTokens::to_token_stream(e).to_string();
    let mut out = raw;
    for (from, to) in [
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" .", "."),
        (". ", "."),
        (" ::", "::"),
        (":: ", "::"),
        (" ,", ","),
    ] {
        out = out.replace(from, to);
    }
    // Keep a space before `(` after an operator or keyword, e.g. `a * (b + c)`.
    for op in [
        "+", "-", "*", "/", "%", "<", ">", "=", "&", "|", "^", "!", "if", "as",
    ] {
        out = out.replace(&format!("{op}("), &format!("{op} ("));
    }
    out.replace("! (", "!(")
}

/// `x[range]` or `&x[range]`: what is sliced, and the range.
pub(super) fn as_sub_slice(e: &syn::Expr) -> Option<(&syn::Expr, &syn::ExprRange)> {
    let e = match strip_parens(e) {
        syn::Expr::Reference(r) if r.mutability.is_none() => strip_parens(&r.expr),
        other => other,
    };
    match e {
        syn::Expr::Index(i) => match strip_parens(&i.index) {
            syn::Expr::Range(r) => Some((&i.expr, r)),
            _ => None,
        },
        _ => None,
    }
}
