//! Locals that hold a tuple or a range, split into one local per part before a body is
//! translated: `let mut best = (0usize, f32::INFINITY);` becomes `best__0` and `best__1`,
//! `best.1` reads `best__1`, `best = (k, v)` assigns both, and `let (i, v) = best;` takes
//! both apart; `let r = a..b;` becomes `r__start` and `r__end`, and `for k in r` runs over
//! `r__start..r__end`. The translator then sees only scalars, tuple assignments and range
//! expressions, which it takes already.
//!
//! A call of a device function that returns a tuple, taken apart at once (`let (a, b) =
//! step(..)`, `(a, b) = step(..)`), calls the function's part for each element
//! ([`super::tuple_results`]).
//!
//! Names follow Rust's scopes: a later `let`, a loop variable, a closure parameter or a
//! pattern that binds the same name hides the split local. A use the rewrite leaves as it
//! was (a tuple passed whole, a nested tuple) is refused by the translator, as before.

use super::syntax::{strip_parens, strip_type};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// `item` with its tuple and range locals split; a field a tuple local lacks is an error.
pub(super) fn split(item: &syn::ItemFn) -> super::Result<syn::ItemFn> {
    let mut item = item.clone();
    let mut splitter = Splitter {
        scopes: vec![HashMap::new()],
        error: None,
    };
    splitter.visit_block_mut(&mut item.block);
    match splitter.error {
        Some(e) => Err(e),
        None => Ok(item),
    }
}

/// What a name in scope stands for.
#[derive(Clone)]
enum Split {
    /// A tuple local: one local per element.
    Tuple(Vec<syn::Ident>),
    /// A range local: its start and end, and whether the end is included.
    Range(syn::Ident, syn::Ident, bool),
    /// Anything else: a binding that hides an outer split local of its name.
    Plain,
}

struct Splitter {
    scopes: Vec<HashMap<String, Split>>,
    /// The first use refused.
    error: Option<super::TranslateError>,
}

impl Splitter {
    fn lookup(&self, name: &syn::Ident) -> Option<&Split> {
        let name = name.to_string();
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(&name))
            .filter(|s| !matches!(s, Split::Plain))
    }

    /// The split local a path expression names, if any.
    fn split_of(&self, e: &syn::Expr) -> Option<Split> {
        match strip_parens(e) {
            syn::Expr::Path(p) if p.qself.is_none() => {
                p.path.get_ident().and_then(|id| self.lookup(id)).cloned()
            }
            _ => None,
        }
    }

    fn declare(&mut self, name: &syn::Ident, split: Split) {
        let scope = self.scopes.last_mut().expect("a scope is open");
        scope.insert(name.to_string(), split);
    }

    /// Every name `pat` binds, as hiding outer split locals.
    fn hide(&mut self, pat: &syn::Pat) {
        struct Names<'a>(&'a mut Vec<syn::Ident>);
        impl<'ast> syn::visit::Visit<'ast> for Names<'_> {
            fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                self.0.push(p.ident.clone());
                syn::visit::visit_pat_ident(self, p);
            }
        }
        let mut names = Vec::new();
        syn::visit::Visit::visit_pat(&mut Names(&mut names), pat);
        for name in names {
            self.declare(&name, Split::Plain);
        }
    }

    /// Runs `f` in a new scope.
    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::new());
        f(self);
        self.scopes.pop();
    }

    /// The statements `local` becomes: itself, or one `let` per part of a tuple or range
    /// bound to a plain name.
    fn let_statement(&mut self, mut local: syn::Local) -> Vec<syn::Stmt> {
        if let Some(init) = &mut local.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
            // `let (a, b) = step(..)`: each element from its own function.
            let pattern = match &local.pat {
                syn::Pat::Type(t) => &*t.pat,
                other => other,
            };
            if let syn::Pat::Tuple(t) = pattern
                && let Some(parts) = super::tuple_results::spread_call(&init.expr, t.elems.len())
            {
                *init.expr = parts;
            }
        }
        // `let (a, b): (T, U) = (x, y);`: each value into a local of its type, then
        // each name (values first, as Rust binds).
        if let syn::Pat::Type(typed) = &local.pat
            && let syn::Pat::Tuple(names) = &*typed.pat
            && let syn::Type::Tuple(types) = strip_type(&typed.ty)
            && let Some(init) = local.init.as_ref().filter(|i| i.diverge.is_none())
            && let syn::Expr::Tuple(values) = strip_parens(&init.expr)
            && names.elems.len() == types.elems.len()
            && names.elems.len() == values.elems.len()
        {
            let span = local.span();
            let temps: Vec<syn::Ident> = (names.elems.iter().enumerate())
                .map(|(k, name)| syn::Ident::new(&format!("__offload_typed_{k}"), name.span()))
                .collect();
            let mut statements: Vec<syn::Stmt> = (temps.iter())
                .zip(&types.elems)
                .zip(&values.elems)
                .map(|((t, ty), v)| syn::parse_quote_spanned!(span=> let #t: #ty = #v;))
                .collect();
            for (name, t) in names.elems.iter().zip(&temps) {
                let bound: syn::Stmt = syn::parse_quote_spanned!(span=> let #name = #t;);
                let syn::Stmt::Local(bound) = bound else {
                    unreachable!("a `let` parses as one")
                };
                statements.extend(self.let_statement(bound));
            }
            return statements;
        }
        let (pat, annotation) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            other => (other, None),
        };
        let plain = match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => Some(id),
            _ => None,
        };
        let init = local
            .init
            .as_ref()
            .filter(|i| i.diverge.is_none())
            .map(|i| strip_parens(&i.expr));
        let (Some(id), Some(init)) = (plain, init) else {
            self.hide(&local.pat);
            return vec![syn::Stmt::Local(local)];
        };
        let (name, mutability) = (&id.ident, id.mutability);
        let part = |suffix: &str| syn::Ident::new(&format!("{name}__{suffix}"), name.span());
        match init {
            syn::Expr::Tuple(t) if t.elems.len() >= 2 => {
                let types: Option<Vec<&syn::Type>> = match annotation.map(strip_type) {
                    Some(syn::Type::Tuple(tt)) if tt.elems.len() == t.elems.len() => {
                        Some(tt.elems.iter().collect())
                    }
                    Some(_) => {
                        self.hide(&local.pat);
                        return vec![syn::Stmt::Local(local)];
                    }
                    None => None,
                };
                let names: Vec<syn::Ident> =
                    (0..t.elems.len()).map(|k| part(&k.to_string())).collect();
                let values: Vec<&syn::Expr> = t.elems.iter().collect();
                let statements = match types {
                    // Rust evaluates every element before binding: as `let (a, b) = ..`.
                    None => vec![syn::parse_quote_spanned!(name.span()=>
                        let (#(#mutability #names),*) = (#(#values),*);
                    )],
                    // Each part with its type; the new names hide nothing the values read.
                    Some(types) => names
                        .iter()
                        .zip(types)
                        .zip(values)
                        .map(|((n, ty), v)| {
                            syn::parse_quote_spanned!(name.span()=> let #mutability #n: #ty = #v;)
                        })
                        .collect(),
                };
                self.declare(name, Split::Tuple(names));
                statements
            }
            syn::Expr::Range(r) if annotation.is_none() => {
                let (Some(start), Some(end)) = (&r.start, &r.end) else {
                    self.hide(&local.pat);
                    return vec![syn::Stmt::Local(local)];
                };
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let (s, e) = (part("start"), part("end"));
                let statements = vec![syn::parse_quote_spanned!(name.span()=>
                    let (#mutability #s, #mutability #e) = (#start, #end);
                )];
                self.declare(name, Split::Range(s, e, inclusive));
                statements
            }
            _ => {
                self.hide(&local.pat);
                vec![syn::Stmt::Local(local)]
            }
        }
    }
}

/// `r.len()`, `r.is_empty()` and `r.contains(&v)` of a range local, from its ends (as
/// `Range` and `RangeInclusive` answer them: an end below the start is empty).
fn range_method(
    m: &syn::ExprMethodCall,
    start: &syn::Ident,
    end: &syn::Ident,
    inclusive: bool,
) -> Option<syn::Expr> {
    let span = m.span();
    let args: Vec<&syn::Expr> = m.args.iter().collect();
    let method = m.method.to_string();
    Some(match (method.as_str(), &args[..], inclusive) {
        ("len", [], false) => syn::parse_quote_spanned!(span=> #end.saturating_sub(#start)),
        ("len", [], true) => {
            syn::parse_quote_spanned!(span=> (#end + 1).saturating_sub(#start))
        }
        ("is_empty", [], false) => syn::parse_quote_spanned!(span=> (#start >= #end)),
        ("is_empty", [], true) => syn::parse_quote_spanned!(span=> (#start > #end)),
        ("contains", [v], false) => {
            let v = strip_reference(v);
            syn::parse_quote_spanned!(span=> (#start <= #v && #v < #end))
        }
        ("contains", [v], true) => {
            let v = strip_reference(v);
            syn::parse_quote_spanned!(span=> (#start <= #v && #v <= #end))
        }
        _ => return None,
    })
}

/// `&v` as `v` (what `contains` takes).
fn strip_reference(e: &syn::Expr) -> &syn::Expr {
    match strip_parens(e) {
        syn::Expr::Reference(r) => &r.expr,
        other => other,
    }
}

/// The expression a split local stands for where it is used whole: the tuple of its
/// parts, or the range between them.
fn whole(split: &Split, span: proc_macro2::Span) -> Option<syn::Expr> {
    // The parts named at the use, so that an error about the whole points there.
    let at = |name: &syn::Ident| syn::Ident::new(&name.to_string(), span);
    match split {
        Split::Tuple(names) => {
            let names = names.iter().map(at);
            Some(syn::parse_quote_spanned!(span=> (#(#names),*)))
        }
        Split::Range(s, e, false) => {
            let (s, e) = (at(s), at(e));
            Some(syn::parse_quote_spanned!(span=> (#s..#e)))
        }
        Split::Range(s, e, true) => {
            let (s, e) = (at(s), at(e));
            Some(syn::parse_quote_spanned!(span=> (#s..=#e)))
        }
        Split::Plain => None,
    }
}

impl VisitMut for Splitter {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        self.scoped(|s| {
            let statements = std::mem::take(&mut block.stmts);
            for statement in statements {
                match statement {
                    syn::Stmt::Local(local) => block.stmts.extend(s.let_statement(local)),
                    mut other => {
                        s.visit_stmt_mut(&mut other);
                        block.stmts.push(other);
                    }
                }
            }
        });
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Field(f) => {
                let part = match (self.split_of(&f.base), &f.member) {
                    (Some(Split::Tuple(names)), syn::Member::Unnamed(i)) => {
                        if names.len() <= i.index as usize && self.error.is_none() {
                            let base = &f.base;
                            self.error = Some(super::TranslateError {
                                span: f.member.span(),
                                message: format!(
                                    "`{}` has {} fields, `.0` to `.{}`",
                                    quote::quote!(#base),
                                    names.len(),
                                    names.len() - 1
                                ),
                            });
                        }
                        names.get(i.index as usize).cloned()
                    }
                    (Some(Split::Range(s, _, _)), syn::Member::Named(m)) if m == "start" => Some(s),
                    (Some(Split::Range(_, end, _)), syn::Member::Named(m)) if m == "end" => {
                        Some(end)
                    }
                    _ => None,
                };
                match part {
                    Some(part) => *e = syn::parse_quote_spanned!(f.span()=> #part),
                    None => syn::visit_mut::visit_expr_field_mut(self, f),
                }
            }
            syn::Expr::Assign(a) => {
                self.visit_expr_mut(&mut a.right);
                // `(a, b) = step(..)`: each element from its own function, into a local
                // named at its place (so that type inference ties the two), then each
                // place.
                if let syn::Expr::Tuple(places) = strip_parens(&a.left)
                    && let Some(syn::Expr::Tuple(parts)) =
                        super::tuple_results::spread_call(&a.right, places.elems.len())
                {
                    let places: Vec<syn::Expr> = places.elems.iter().cloned().collect();
                    let temps: Vec<syn::Ident> = (places.iter().enumerate())
                        .map(|(k, place)| {
                            syn::Ident::new(&format!("__offload_part_{k}"), place.span())
                        })
                        .collect();
                    // A local place gives its part's value its type: the temporary starts
                    // as a copy of it (the translator needs a call's result type).
                    let values = (temps.iter().zip(&places).zip(&parts.elems)).map(
                        |((t, place), value)| -> Vec<syn::Stmt> {
                            if matches!(strip_parens(place), syn::Expr::Path(_)) {
                                syn::parse_quote_spanned!(a.span()=>
                                    let mut #t = #place;
                                    #t = #value;
                                )
                            } else {
                                syn::parse_quote_spanned!(a.span()=> let #t = #value;)
                            }
                        },
                    );
                    let values: Vec<syn::Stmt> = values.flatten().collect();
                    *e = syn::parse_quote_spanned!(a.span()=> {
                        #(#values)*
                        #(#places = #temps;)*
                    });
                    self.visit_expr_mut(e);
                    return;
                }
                let Some(split) = self.split_of(&a.left) else {
                    self.visit_expr_mut(&mut a.left);
                    return;
                };
                // The parts and the values for them, when the right side has as many.
                let pairs: Option<(Vec<syn::Ident>, Vec<syn::Expr>)> =
                    match (&split, strip_parens(&a.right)) {
                        (Split::Tuple(names), syn::Expr::Tuple(t))
                            if t.elems.len() == names.len() =>
                        {
                            Some((names.clone(), t.elems.iter().cloned().collect()))
                        }
                        (Split::Range(s, end, _), syn::Expr::Range(r)) => {
                            match (&r.start, &r.end) {
                                (Some(from), Some(to)) => Some((
                                    vec![s.clone(), end.clone()],
                                    vec![(**from).clone(), (**to).clone()],
                                )),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                match pairs {
                    // Every value first, each into a local spanned at its value (so
                    // that type inference sees each), then every part.
                    Some((names, values)) => {
                        let span = a.span();
                        let temps: Vec<syn::Ident> = names
                            .iter()
                            .zip(&values)
                            .map(|(n, v)| syn::Ident::new(&format!("{n}__new"), v.span()))
                            .collect();
                        *e = syn::parse_quote_spanned!(span=> {
                            #(let #temps = #values;)*
                            #(#names = #temps;)*
                        });
                    }
                    None => {
                        if let Some(parts) = whole(&split, a.left.span()) {
                            *a.left = parts;
                        }
                    }
                }
            }
            // A range is not `Copy`: Rust code reuses one with `r.clone()`.
            syn::Expr::MethodCall(m)
                if m.method == "clone"
                    && m.args.is_empty()
                    && let Some(split) = self.split_of(&m.receiver)
                    && let Some(parts) = whole(&split, m.span()) =>
            {
                *e = parts;
            }
            // What a range local answers of itself, from its ends.
            syn::Expr::MethodCall(m)
                if let Some(Split::Range(start, end, inclusive)) = self.split_of(&m.receiver)
                    && let Some(answer) = range_method(m, &start, &end, inclusive) =>
            {
                *e = answer;
                self.visit_expr_mut(e);
            }
            syn::Expr::Path(_) => {
                if let Some(split) = self.split_of(e)
                    && let Some(parts) = whole(&split, e.span())
                {
                    *e = parts;
                }
            }
            syn::Expr::ForLoop(f) => {
                self.visit_expr_mut(&mut f.expr);
                let (pat, body) = (&f.pat, &mut f.body);
                self.scoped(|s| {
                    s.hide(pat);
                    s.visit_block_mut(body);
                });
            }
            syn::Expr::Closure(c) => {
                let (inputs, body) = (&c.inputs, &mut c.body);
                self.scoped(|s| {
                    for input in inputs {
                        s.hide(input);
                    }
                    s.visit_expr_mut(body);
                });
            }
            syn::Expr::If(i) => {
                match &mut *i.cond {
                    syn::Expr::Let(l) => {
                        self.visit_expr_mut(&mut l.expr);
                        let (pat, then) = (&l.pat, &mut i.then_branch);
                        self.scoped(|s| {
                            s.hide(pat);
                            s.visit_block_mut(then);
                        });
                    }
                    cond => {
                        self.visit_expr_mut(cond);
                        self.visit_block_mut(&mut i.then_branch);
                    }
                }
                if let Some((_, otherwise)) = &mut i.else_branch {
                    self.visit_expr_mut(otherwise);
                }
            }
            syn::Expr::While(w) => match &mut *w.cond {
                syn::Expr::Let(l) => {
                    self.visit_expr_mut(&mut l.expr);
                    let (pat, body) = (&l.pat, &mut w.body);
                    self.scoped(|s| {
                        s.hide(pat);
                        s.visit_block_mut(body);
                    });
                }
                cond => {
                    self.visit_expr_mut(cond);
                    self.visit_block_mut(&mut w.body);
                }
            },
            syn::Expr::Match(m) => {
                self.visit_expr_mut(&mut m.expr);
                for arm in &mut m.arms {
                    let (pat, guard, body) = (&arm.pat, &mut arm.guard, &mut arm.body);
                    self.scoped(|s| {
                        s.hide(pat);
                        if let Some((_, g)) = guard {
                            s.visit_expr_mut(g);
                        }
                        s.visit_expr_mut(body);
                    });
                }
            }
            // Macros (`matches!`, `assert!`) are parsed by the translator; their tokens
            // are left as they are.
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}
