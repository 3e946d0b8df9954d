//! Iterator reductions over a slice, sub-slice, array or chunk, or a range:
//! `x.iter().sum()`, `.product()` and `.fold(init, |acc, v| ...)` (or `.fold(init,
//! f32::max)`), also after `.map(|v| ...)` (and after `copied`, `enumerate`, `rev` and
//! `zip`, as `for` loops take them). Each becomes the loop Rust runs:
//!
//! ```text
//! { let mut acc = init; for v in x.iter() { acc = f(acc, v); } acc }
//! ```
//!
//! translated as any `for` loop over elements is (each element read bounds-checked by the
//! loop's own bound). The closures given here have their parameters bound in the loop and
//! their bodies inlined. Also here: `x.get(i).copied().unwrap_or(d)`, with `first()` and
//! `last()` as forms of `get`.

use super::{Binding, Result, Translator, Value, error};
use offload_mir::*;

impl Translator {
    /// `ITER.sum()`, `ITER.product()`, `ITER.fold(init, |a, v| body)`; `None` when `m` is
    /// not one of them over an iteration a `for` loop takes.
    pub(super) fn reduction(
        &mut self,
        m: &syn::ExprMethodCall,
        expected: Option<ScalarTy>,
    ) -> Result<Option<Value>> {
        let name = m.method.to_string();
        if !matches!(name.as_str(), "sum" | "product" | "fold") {
            return Ok(None);
        }
        // `ITER.map(|p| e)`: the elements are `e` of each `p`.
        let (iter, map) = match super::syntax::strip_parens(&m.receiver) {
            syn::Expr::MethodCall(inner) if inner.method == "map" && inner.args.len() == 1 => {
                let syn::Expr::Closure(c) = &inner.args[0] else {
                    return Ok(None);
                };
                (&*inner.receiver, Some(closure(c, 1)?))
            }
            other => (other, None),
        };
        // Or over a range with both ends, perhaps reversed or stepped
        // (`(a..b).map(|k| x[k]).sum::<f32>()`): the desugared loop is a counted one.
        let range = counted(iter).then_some(iter);
        let Some(of) = super::syntax::iterated(iter).or(range) else {
            // `sum`, `product` and `fold` run over the elements of a slice, sub-slice,
            // array or chunk, or a range; anything else (an iterator adaptor kernels
            // lack) is refused here by what it is, not as a method of its own.
            return error(
                &m.method,
                format!(
                    "`{name}` runs over the elements of a slice, sub-slice, array or chunk (`x.iter()`, `x[a..b].iter()`, with `copied`, `enumerate`, `rev`, `zip` and one `map`) or over a range (`(a..b)`, `.rev()`, `.step_by(s)`); for anything else, loop and accumulate: `let mut acc = 0.0; for i in a..b {{ acc += f(i); }}`"
                ),
            );
        };
        let span = m.method.span();
        self.element_loops += 1;
        let n = self.element_loops;
        let acc = syn::Ident::new(&format!("__offload_acc_{n}"), span);
        let item = syn::Ident::new(&format!("__offload_item_{n}"), span);
        // The loop's pattern, and the element's value in the body.
        let (pattern, value): (syn::Pat, syn::Expr) = match &map {
            Some(f) => (untyped(&f.params[0]).clone(), (*f.body).clone()),
            None => (
                syn::parse_quote_spanned!(span=> #item),
                syn::parse_quote_spanned!(span=> #item),
            ),
        };
        let desugared: syn::Expr = match name.as_str() {
            "fold" => {
                let [init, f] = &m.args.iter().collect::<Vec<_>>()[..] else {
                    return error(m, "`fold` takes an initial value and a closure");
                };
                let c = fold_closure(f, n, span)?;
                let f = closure(&c, 2)?;
                let (a, v, body) = (&f.params[0], untyped(&f.params[1]), &f.body);
                // Positioned at the initial value: an untyped one (`0.0`) is typed by its
                // uses, keyed by where its `let` is, which must not be the loop's place.
                let acc = syn::Ident::new(&acc.to_string(), syn::spanned::Spanned::span(init));
                // Without `map`, the closure's element parameter is the loop's pattern
                // (`v` or `&v`, as a `for` loop takes it); after `map`, it binds the value.
                let (pattern, bind_value): (syn::Pat, Option<syn::Stmt>) = match &map {
                    None => (v.clone(), None),
                    Some(_) => (
                        pattern,
                        Some(syn::parse_quote_spanned!(span=> let #v = #value;)),
                    ),
                };
                syn::parse_quote_spanned!(span=> {
                    let mut #acc = #init;
                    for #pattern in #iter {
                        #bind_value
                        let #a = #acc;
                        #acc = #body;
                    }
                    #acc
                })
            }
            _ => {
                let ty = self.reduced_type(m, &name, of, expected)?;
                let (start, op) = if name == "sum" {
                    (0, quote::quote!(+=))
                } else {
                    (1, quote::quote!(*=))
                };
                let start: syn::Expr = syn::parse_str(&format!("{start}{ty}"))
                    .expect("a suffixed integer literal parses");
                syn::parse_quote_spanned!(span=> {
                    let mut #acc = #start;
                    for #pattern in #iter {
                        #acc #op #value;
                    }
                    #acc
                })
            }
        };
        self.expr(&desugared, expected).map(Some)
    }

    /// The type `sum` or `product` (`name`) makes over the elements of `of`: the
    /// turbofish's, else the one expected, else the elements'.
    fn reduced_type(
        &self,
        m: &syn::ExprMethodCall,
        name: &str,
        of: &syn::Expr,
        expected: Option<ScalarTy>,
    ) -> Result<ScalarTy> {
        if !m.args.is_empty() {
            return error(m, format!("`{name}` takes no arguments"));
        }
        let ty = match &m.turbofish {
            Some(t) => super::syntax::turbofish_type(t)?,
            None => match expected.or_else(|| self.element_type(of)) {
                Some(t) => t,
                None => {
                    return error(
                        m,
                        format!("say which type `{name}` makes: `{name}::<f32>()`"),
                    );
                }
            },
        };
        if !(ty.is_integer() || ty.is_float()) {
            return error(m, format!("`{name}` adds up numbers, not `{ty}`"));
        }
        Ok(ty)
    }

    /// `x.get(i).copied().unwrap_or(d)` (or `.cloned()`): `x[i]` when `i` is in bounds,
    /// else `d`, as `if let Some(&v) = x.get(i) { v } else { d }`; `None` for another
    /// call.
    pub(super) fn get_or(
        &mut self,
        m: &syn::ExprMethodCall,
        expected: Option<ScalarTy>,
    ) -> Result<Option<Value>> {
        if m.method != "unwrap_or" || m.args.len() != 1 {
            return Ok(None);
        }
        let syn::Expr::MethodCall(copied) = super::syntax::strip_parens(&m.receiver) else {
            return Ok(None);
        };
        if !(copied.method == "copied" || copied.method == "cloned") || !copied.args.is_empty() {
            return Ok(None);
        }
        let syn::Expr::MethodCall(get) = super::syntax::strip_parens(&copied.receiver) else {
            return Ok(None);
        };
        let Some(get) = as_get(get) else {
            return Ok(None);
        };
        let span = m.method.span();
        self.element_loops += 1;
        let got = syn::Ident::new(&format!("__offload_got_{}", self.element_loops), span);
        let default = &m.args[0];
        let desugared: syn::Expr = syn::parse_quote_spanned!(span=>
            if let Some(&#got) = #get { #got } else { #default }
        );
        self.expr(&desugared, expected).map(Some)
    }

    /// The element type of the slice, array or chunk `of` names.
    pub(super) fn element_type(&self, of: &syn::Expr) -> Option<ScalarTy> {
        if let Some((sliced, _)) = super::syntax::as_sub_slice(of) {
            return self.element_type(sliced);
        }
        let syn::Expr::Path(p) = super::syntax::strip_parens(of) else {
            return None;
        };
        match self.lookup(p.path.get_ident()?)? {
            Binding::Local(l) => self.body.locals[l.index()].ty.element(),
            Binding::Array(a) => Some(self.arrays[a].elem),
            Binding::Window { base, .. } => self.body.locals[base.index()].ty.element(),
            _ => None,
        }
    }
}

/// `x.get(i)` for `x.get(i)`, `x.first()` (`x.get(0)`) and `x.last()` (the element at
/// `len - 1`, wrapping to an index past the end of an empty slice); `None` for another
/// call.
pub(super) fn as_get(m: &syn::ExprMethodCall) -> Option<syn::ExprMethodCall> {
    let x = &m.receiver;
    let span = m.method.span();
    let get: syn::Expr = match m.method.to_string().as_str() {
        "get" if m.args.len() == 1 => return Some(m.clone()),
        "first" if m.args.is_empty() => syn::parse_quote_spanned!(span=> #x.get(0usize)),
        "last" if m.args.is_empty() => {
            syn::parse_quote_spanned!(span=> #x.get(#x.len().wrapping_sub(1)))
        }
        _ => return None,
    };
    match get {
        syn::Expr::MethodCall(get) => Some(get),
        _ => unreachable!("a method call parses as one"),
    }
}

/// Whether `e` is a range a `for` loop counts over: `a..b` or `a..=b`, or one of them
/// with `.rev()` or `.step_by(s)`.
fn counted(e: &syn::Expr) -> bool {
    let range = |e: &syn::Expr| matches!(super::syntax::strip_parens(e), syn::Expr::Range(r) if r.start.is_some() && r.end.is_some());
    match super::syntax::strip_parens(e) {
        syn::Expr::MethodCall(m) => {
            matches!(
                (m.method.to_string().as_str(), m.args.len()),
                ("rev", 0) | ("step_by", 1)
            ) && range(&m.receiver)
        }
        other => range(other),
    }
}

/// A closure argument of a reduction, with `params` parameters.
fn closure(c: &syn::ExprClosure, params: usize) -> Result<Closure> {
    if c.inputs.len() != params {
        return error(c, format!("this closure takes {params} parameter(s) here"));
    }
    if c.asyncness.is_some() || c.capture.is_some() || c.constness.is_some() {
        return error(c, "a plain closure `|..| expr` is expected here");
    }
    if returns(&c.body) {
        return error(
            c,
            "`return` in a closure is not supported in kernels (the closure is inlined)",
        );
    }
    Ok(Closure {
        params: c.inputs.iter().cloned().collect(),
        body: c.body.clone(),
    })
}

/// A closure parameter's pattern without its type (`v: &f32` is `v`).
fn untyped(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Type(t) => &t.pat,
        other => other,
    }
}

struct Closure {
    params: Vec<syn::Pat>,
    body: Box<syn::Expr>,
}

/// Whether an expression holds a `return`.
pub(super) fn returns(e: &syn::Expr) -> bool {
    let mut returns = Returns(false);
    syn::visit::Visit::visit_expr(&mut returns, e);
    returns.0
}

/// Whether an expression holds a `return` (outside nested closures, which it refuses
/// elsewhere anyway).
struct Returns(bool);

impl<'a> syn::visit::Visit<'a> for Returns {
    fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
        self.0 = true;
    }
}

/// `fold`'s closure: the closure itself, or the one a function of two arguments
/// (`f32::max`) stands for, which calls it.
fn fold_closure(f: &syn::Expr, n: usize, span: proc_macro2::Span) -> Result<syn::ExprClosure> {
    match f {
        syn::Expr::Closure(c) => Ok(c.clone()),
        syn::Expr::Path(path) => {
            let (a, v) = (
                syn::Ident::new(&format!("__offload_a_{n}"), span),
                syn::Ident::new(&format!("__offload_v_{n}"), span),
            );
            Ok(syn::parse_quote_spanned!(span=> |#a, #v| #path(#a, #v)))
        }
        _ => error(
            f,
            "`fold` takes a closure `|acc, v| ...` or a function (`f32::max`) here",
        ),
    }
}
