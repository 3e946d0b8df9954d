//! Loop versioning for bounds checks. A `for k in a..b` loop whose body reads slices at
//! `x[k]`, `x[k + e]` or `x[e + k]` (`e` the same in every iteration: literals and names
//! the body does not change, with `+ - * & | ^` and casts)
//! runs a copy of itself without those checks when one test before the loop shows every
//! such read in bounds, and the loop as written otherwise:
//!
//! ```text
//! if b <= x.len() && e <= x.len() - b { loop, reads unchecked } else { loop as written }
//! ```
//!
//! Each check of the loop as written costs a compare and a branch per iteration (and
//! keeps an unrolled loop's loads from being gathered), where the test costs one. The
//! copy is not trusted: the safety verifier proves each of its reads in bounds from the
//! test's facts and the loop's bound (`k < b`), as it proves any other access.
//!
//! Only innermost loops over `usize` ranges with no barriers, subgroup operations or
//! workgroup reductions are versioned: the test may differ between threads, and the two
//! copies must not hold operations every thread has to reach together.

use super::{Binding, Translator};
use offload_mir::*;
use std::collections::HashSet;
use syn::visit::Visit;

/// A slice read of a loop's body that the test before the loop can prove in bounds.
pub(super) struct GuardedRead<'a> {
    pub read: &'a syn::ExprIndex,
    pub slice: Local,
    /// The `e` of `x[k + e]`; `None` for `x[k]`.
    pub offset: Option<&'a syn::Expr>,
}

impl GuardedRead<'_> {
    /// What a test covers: reads of one slice at one offset (by its source text) need one.
    pub fn key(&self) -> (Local, String) {
        let offset = self.offset.map(|e| quote::quote!(#e).to_string());
        (self.slice, offset.unwrap_or_default())
    }
}

/// The identity of a read in the syntax tree, for [`Translator::unchecked`].
pub(super) fn read_id(read: &syn::ExprIndex) -> usize {
    read as *const syn::ExprIndex as usize
}

impl Translator {
    /// The reads of `f`'s body that a test before the loop can put in bounds; empty when
    /// the loop is not one to version (see the module docs).
    pub(super) fn guarded_reads<'a>(&self, f: &'a syn::ExprForLoop) -> Vec<GuardedRead<'a>> {
        let syn::Pat::Ident(counter) = &*f.pat else {
            return Vec::new();
        };
        if counter.mutability.is_some() || counter.by_ref.is_some() {
            return Vec::new();
        }
        let mut body = BodyScan::default();
        body.visit_block(&f.body);
        let k = &counter.ident;
        // A body that binds the counter's name again reads another `k` after that.
        if body.refused || body.rebound.contains(&k.to_string()) {
            return Vec::new();
        }
        let invariant = |e: &syn::Expr| self.invariant(e, k, &body.rebound);
        let is_counter =
            |e: &syn::Expr| matches!(strip(e), syn::Expr::Path(p) if p.path.is_ident(k));
        let mut reads = Vec::new();
        for read in body.reads {
            let syn::Expr::Path(base) = strip(&read.expr) else {
                continue;
            };
            let Some(id) = base.path.get_ident() else {
                continue;
            };
            let Some(Binding::Local(slice)) = self.lookup(id) else {
                continue;
            };
            if !matches!(self.body.locals[slice.index()].ty, Ty::Slice(_))
                || body.rebound.contains(&id.to_string())
            {
                continue;
            }
            let offset = match strip(&read.index) {
                e if is_counter(e) => None,
                syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_)) => {
                    match (is_counter(&b.left), is_counter(&b.right)) {
                        (true, false) if invariant(&b.right) => Some(&*b.right),
                        (false, true) if invariant(&b.left) => Some(&*b.left),
                        _ => continue,
                    }
                }
                _ => continue,
            };
            reads.push(GuardedRead {
                read,
                slice,
                offset,
            });
        }
        reads
    }
}

impl Translator {
    /// Whether `e` has one value in every iteration of the loop over `k` whose body binds
    /// or assigns `rebound`, and can be evaluated before it without a panic the loop
    /// might not have made: integer literals, names of scalar locals bound outside it,
    /// and `+ - * & | ^` and `as` casts of those (wrapping; no division or shift, which
    /// can panic).
    fn invariant(&self, e: &syn::Expr, k: &syn::Ident, rebound: &HashSet<String>) -> bool {
        match strip(e) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(_),
                ..
            }) => true,
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                id != k
                    && !rebound.contains(&id.to_string())
                    && matches!(self.lookup(id), Some(Binding::Local(l))
                        if matches!(self.body.locals[l.index()].ty, Ty::Scalar(t) if t.is_integer()))
            }),
            syn::Expr::Binary(b) => {
                use syn::BinOp::*;
                matches!(
                    b.op,
                    Add(_) | Sub(_) | Mul(_) | BitAnd(_) | BitOr(_) | BitXor(_)
                ) && self.invariant(&b.left, k, rebound)
                    && self.invariant(&b.right, k, rebound)
            }
            syn::Expr::Cast(c) => self.invariant(&c.expr, k, rebound),
            _ => false,
        }
    }
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        other => other,
    }
}

/// What a loop body holds, for [`Translator::guarded_reads`].
#[derive(Default)]
struct BodyScan<'a> {
    /// Every `x[i]` of the body.
    reads: Vec<&'a syn::ExprIndex>,
    /// Names the body binds or assigns.
    rebound: HashSet<String>,
    /// A loop, closure, barrier, subgroup operation or workgroup reduction: not versioned.
    refused: bool,
}

impl<'a> Visit<'a> for BodyScan<'a> {
    fn visit_expr_index(&mut self, i: &'a syn::ExprIndex) {
        self.reads.push(i);
        syn::visit::visit_expr_index(self, i);
    }

    fn visit_expr(&mut self, e: &'a syn::Expr) {
        match e {
            syn::Expr::ForLoop(_)
            | syn::Expr::While(_)
            | syn::Expr::Loop(_)
            | syn::Expr::Closure(_)
            | syn::Expr::Async(_) => self.refused = true,
            syn::Expr::Call(c) => {
                if let syn::Expr::Path(p) = &*c.func
                    && let Some(last) = p.path.segments.last()
                {
                    let name = last.ident.to_string();
                    if name == "sync_threads"
                        || name.starts_with("subgroup_")
                        || name.starts_with("workgroup_")
                    {
                        self.refused = true;
                    }
                }
            }
            syn::Expr::Assign(a) => self.assigned(&a.left),
            syn::Expr::Binary(b) if is_compound_assignment(&b.op) => self.assigned(&b.left),
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.rebound.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        // A macro's tokens are not parsed here: names it might bind or assign are unknown.
        // Only the panic and assertion macros, which bind nothing, are looked through.
        let name = m.path.segments.last().map(|s| s.ident.to_string());
        let known = ["panic", "assert", "assert_eq", "assert_ne", "debug_assert"];
        if !name.is_some_and(|n| known.contains(&n.as_str())) {
            self.refused = true;
        }
    }
}

impl BodyScan<'_> {
    fn assigned(&mut self, place: &syn::Expr) {
        if let syn::Expr::Path(p) = strip(place)
            && let Some(id) = p.path.get_ident()
        {
            self.rebound.insert(id.to_string());
        }
    }
}

fn is_compound_assignment(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}
