//! Type inference: the pass that runs over a function's syntax before translation.
//!
//! Rust types an unannotated `let x = 0;` (and a `for` counter over literal bounds) from
//! how the name is used later: `x` is a `u64` if it is ever added to one. Translation
//! reads the body once, front to back, so it needs those types before it starts. This
//! pass gives every binding typed only by unsuffixed literals an integer or float type
//! variable, walks the body once unifying variables with the types their uses ask for
//! (operands of one operator, an index, an argument, an annotated `let`), and hands the
//! translator the types the variables resolved to, keyed by the binding's position.
//! A variable nothing constrains keeps rustc's default (`i32`, `f64`), which the
//! translator applies.
//!
//! The rules are a subset of the translator's: where this pass knows nothing (an unknown
//! method, a closure's parameters) it adds no constraint, and the translator reports
//! what it meets there (see `translate_body`).

use super::builtins::{self, Function, Rule};
use super::syntax::as_sub_slice;
use super::syntax::{Elements, element_iteration, strip_parens, turbofish_type};
use super::types::{binop, literal_suffix_type, scalar_type};
use super::{ConstValues, ParamKind, Substitution, param_kind, position};
use offload_mir::ScalarTy;
use std::collections::HashMap;
use syn::spanned::Spanned;

/// Types for bindings typed only by literals, by the position of the bound name.
pub(super) type Hints = HashMap<(usize, usize), ScalarTy>;

/// What an expression's type is known to be.
#[derive(Copy, Clone, Debug)]
enum Term {
    Known(ScalarTy),
    /// A type variable: an unsuffixed literal's type, or one unified with it.
    Var(usize),
    /// Not a scalar, or not something this pass models.
    Unknown,
}

/// What a name is bound to.
#[derive(Copy, Clone, Debug)]
enum Entry {
    Scalar(Term),
    /// A region, slice, atomic, shared or read-only array: indexing yields an element.
    Elements(Term),
    /// A reference to one element (`v` in `for v in x.iter()` or
    /// `if let Some(v) = region.get_mut()`), read through `*v` or directly.
    ElementRef(Term),
    /// A closure bound to a name, by its index in `Inference::closures`.
    Closure(usize),
}

struct Variable {
    parent: usize,
    float: bool,
    ty: Option<ScalarTy>,
}

struct Inference<'a> {
    subst: &'a Substitution,
    consts: &'a ConstValues,
    vars: Vec<Variable>,
    scopes: Vec<HashMap<String, Entry>>,
    /// Bindings typed only by literals, with their variables.
    bindings: Vec<((usize, usize), usize)>,
    /// The values `break` gives each enclosing `loop`, innermost last.
    loops: Vec<Term>,
    /// A device function's result type.
    ret: Option<ScalarTy>,
    /// Closures bound to names, with the names in scope where each was written: each
    /// call is inferred as the translator inlines it, with the call's arguments.
    closures: Vec<(syn::ExprClosure, Vec<HashMap<String, Entry>>)>,
}

/// Infers the types of `item`'s literal-typed bindings. Parameters whose types do not
/// resolve are skipped: translation reports them.
pub(super) fn infer(
    item: &syn::ItemFn,
    subst: &Substitution,
    consts: &ConstValues,
    ret: Option<ScalarTy>,
) -> Hints {
    let mut pass = Inference {
        subst,
        consts,
        vars: Vec::new(),
        scopes: vec![HashMap::new()],
        bindings: Vec::new(),
        loops: Vec::new(),
        ret,
        closures: Vec::new(),
    };
    for input in &item.sig.inputs {
        if let syn::FnArg::Typed(arg) = input
            && let syn::Pat::Ident(pat) = &*arg.pat
            && let Ok(kind) = param_kind(&arg.ty, subst, consts)
        {
            let entry = match kind {
                ParamKind::Scalar(s) => Entry::Scalar(Term::Known(s)),
                ParamKind::Region(e, _) | ParamKind::Slice(e) | ParamKind::Atomic(e) => {
                    Entry::Elements(Term::Known(e))
                }
            };
            pass.bind(&pat.ident, entry);
        }
    }
    let tail = pass.block(&item.block);
    if let Some(ret) = ret {
        pass.unify(tail, Term::Known(ret));
    }
    let mut hints = Hints::new();
    for (key, var) in std::mem::take(&mut pass.bindings) {
        let root = pass.root(var);
        if let Some(ty) = pass.vars[root].ty {
            hints.insert(key, ty);
        }
    }
    hints
}

impl Inference<'_> {
    fn fresh(&mut self, float: bool) -> Term {
        let id = self.vars.len();
        self.vars.push(Variable {
            parent: id,
            float,
            ty: None,
        });
        Term::Var(id)
    }

    fn root(&mut self, mut v: usize) -> usize {
        while self.vars[v].parent != v {
            let grand = self.vars[self.vars[v].parent].parent;
            self.vars[v].parent = grand;
            v = grand;
        }
        v
    }

    /// The term with its variable's type, if that is known.
    fn resolve(&mut self, t: Term) -> Term {
        match t {
            Term::Var(v) => {
                let r = self.root(v);
                self.vars[r].ty.map_or(Term::Var(r), Term::Known)
            }
            other => other,
        }
    }

    /// Records that `a` and `b` are one type. An integer variable never becomes a float
    /// type or `bool`, nor a float variable an integer: those are type errors, which the
    /// translator reports where it meets them.
    fn unify(&mut self, a: Term, b: Term) {
        match (a, b) {
            (Term::Var(v), Term::Known(t)) | (Term::Known(t), Term::Var(v)) => {
                let r = self.root(v);
                let var = &mut self.vars[r];
                if var.ty.is_none() && var.float == t.is_float() && t != ScalarTy::Bool {
                    var.ty = Some(t);
                }
            }
            (Term::Var(a), Term::Var(b)) => {
                let (a, b) = (self.root(a), self.root(b));
                if a != b && self.vars[a].float == self.vars[b].float {
                    self.vars[b].parent = a;
                    self.vars[a].ty = self.vars[a].ty.or(self.vars[b].ty);
                }
            }
            _ => {}
        }
    }

    /// The first of `terms` that says something, resolved.
    fn either(&mut self, a: Term, b: Term) -> Term {
        match (self.resolve(a), self.resolve(b)) {
            (k @ Term::Known(_), _) | (_, k @ Term::Known(_)) => k,
            (Term::Unknown, other) | (other, _) => other,
        }
    }

    fn bind(&mut self, name: &syn::Ident, entry: Entry) {
        let scope = self.scopes.last_mut().expect("there is always a scope");
        scope.insert(name.to_string(), entry);
    }

    fn lookup(&self, name: &syn::Ident) -> Option<Entry> {
        let name = name.to_string();
        self.scopes.iter().rev().find_map(|s| s.get(&name).copied())
    }

    fn entry_of(&self, e: &syn::Expr) -> Option<Entry> {
        if let Some((sliced, _)) = as_sub_slice(e) {
            return self.entry_of(sliced);
        }
        match strip_parens(e) {
            syn::Expr::Path(p) => self.lookup(p.path.get_ident()?),
            _ => None,
        }
    }

    /// Binds a name that a `let` or a `for` gives `term`; a variable is recorded for the
    /// translator under the name's position.
    fn bind_scalar(&mut self, id: &syn::Ident, term: Term) {
        if let Term::Var(v) = term {
            self.bindings.push((position(id.span()), v));
        }
        self.bind(id, Entry::Scalar(term));
    }

    fn block(&mut self, block: &syn::Block) -> Term {
        self.scopes.push(HashMap::new());
        let mut result = Term::Unknown;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            result = Term::Unknown;
            match stmt {
                syn::Stmt::Local(local) => self.let_statement(local),
                syn::Stmt::Expr(e, semi) => {
                    let t = self.expr(e);
                    if last && semi.is_none() {
                        result = t;
                    }
                }
                syn::Stmt::Item(syn::Item::Const(c)) => {
                    let t = scalar_type(&c.ty, self.subst).map_or(Term::Unknown, Term::Known);
                    let value = self.expr(&c.expr);
                    self.unify(value, t);
                    self.bind(&c.ident, Entry::Scalar(t));
                }
                syn::Stmt::Item(_) => {}
                syn::Stmt::Macro(m) => {
                    self.macro_call(&m.mac);
                }
            }
        }
        self.scopes.pop();
        result
    }

    fn let_statement(&mut self, local: &syn::Local) {
        let (pat, annotation) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            other => (other, None),
        };
        let init = local.init.as_ref().map(|i| &*i.expr);
        match (pat, init.map(strip_parens)) {
            (syn::Pat::Ident(id), Some(syn::Expr::Array(a))) => {
                let elem = self.elements(a.elems.iter(), annotation);
                self.bind(&id.ident, Entry::Elements(elem));
            }
            (syn::Pat::Ident(id), Some(syn::Expr::Repeat(r))) => {
                let elem = self.elements(std::iter::once(&*r.expr), annotation);
                self.bind(&id.ident, Entry::Elements(elem));
            }
            (syn::Pat::Ident(id), Some(e)) if as_sub_slice(e).is_some() => {
                self.sub_slice_bounds(e);
                let elements = self.entry_of(e).unwrap_or(Entry::Elements(Term::Unknown));
                self.bind(&id.ident, elements);
            }
            (syn::Pat::Ident(id), Some(syn::Expr::Closure(c))) => {
                self.closures.push((c.clone(), self.scopes.clone()));
                self.bind(&id.ident, Entry::Closure(self.closures.len() - 1));
            }
            (syn::Pat::Ident(id), Some(syn::Expr::Call(c))) if shared_new(c).is_some() => {
                let elem = shared_elem(c, annotation, self.subst);
                self.bind(&id.ident, Entry::Elements(elem));
            }
            (syn::Pat::Ident(id), init) => {
                let annotated = annotation.and_then(|t| scalar_type(t, self.subst).ok());
                let value = init.map_or(Term::Unknown, |e| self.expr(e));
                match annotated {
                    Some(t) => {
                        self.unify(value, Term::Known(t));
                        self.bind(&id.ident, Entry::Scalar(Term::Known(t)));
                    }
                    None => {
                        let value = self.resolve(value);
                        self.bind_scalar(&id.ident, value);
                    }
                }
            }
            (syn::Pat::Tuple(names), Some(syn::Expr::Tuple(values))) => {
                let terms: Vec<Term> = values.elems.iter().map(|v| self.expr(v)).collect();
                for (name, term) in names.elems.iter().zip(terms) {
                    if let syn::Pat::Ident(id) = name {
                        let term = self.resolve(term);
                        self.bind_scalar(&id.ident, term);
                    }
                }
            }
            (_, init) => {
                if let Some(e) = init {
                    self.expr(e);
                }
            }
        }
    }

    /// The element type of an array literal: the annotation's, else its elements' as one.
    fn elements<'e>(
        &mut self,
        elems: impl Iterator<Item = &'e syn::Expr>,
        annotation: Option<&syn::Type>,
    ) -> Term {
        let mut elem = match annotation {
            Some(syn::Type::Array(a)) => {
                scalar_type(&a.elem, self.subst).map_or(Term::Unknown, Term::Known)
            }
            _ => Term::Unknown,
        };
        for e in elems {
            let t = self.expr(e);
            self.unify(elem, t);
            elem = self.either(elem, t);
        }
        elem
    }

    /// A closure's body with its parameters bound to `args` (a parameter's annotation
    /// wins); the body's term. Parameters are bound as `let`s are, so a literal argument
    /// types the parameter's key, as the translator's inlining makes it.
    fn closure_body(&mut self, c: &syn::ExprClosure, args: &[Entry]) -> Term {
        self.scopes.push(HashMap::new());
        for (k, input) in c.inputs.iter().enumerate() {
            let arg = args.get(k).copied().unwrap_or(Entry::Scalar(Term::Unknown));
            self.bind_param(input, arg);
        }
        let t = self.expr(&c.body);
        self.scopes.pop();
        t
    }

    /// Binds a closure parameter or a loop pattern (`v`, `&v`, `v: f32`, `(k, v)`) to
    /// what it receives.
    fn bind_param(&mut self, pat: &syn::Pat, arg: Entry) {
        match (pat, arg) {
            (syn::Pat::Type(t), arg) => {
                let ty = scalar_type(&t.ty, self.subst).map_or(Term::Unknown, Term::Known);
                if let Entry::Scalar(a) | Entry::ElementRef(a) = arg {
                    self.unify(a, ty);
                }
                self.bind_param(&t.pat, Entry::Scalar(ty));
            }
            (syn::Pat::Reference(r), Entry::ElementRef(t)) => {
                self.bind_param(&r.pat, Entry::Scalar(t));
            }
            (syn::Pat::Ident(id), Entry::Scalar(t)) => {
                let t = self.resolve(t);
                self.bind_scalar(&id.ident, t);
            }
            (syn::Pat::Ident(id), arg) => self.bind(&id.ident, arg),
            _ => {}
        }
    }

    /// `f(args)` of a closure bound to `f`: its body with the arguments, in the scopes
    /// where it was written.
    fn closure_call(&mut self, which: usize, args: &[Term]) -> Term {
        let (closure, scopes) = self.closures[which].clone();
        let args: Vec<Entry> = args.iter().map(|a| Entry::Scalar(*a)).collect();
        let here = std::mem::replace(&mut self.scopes, scopes);
        let t = self.closure_body(&closure, &args);
        self.scopes = here;
        t
    }

    fn expr(&mut self, e: &syn::Expr) -> Term {
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Reference(r) => self.expr(&r.expr),
            syn::Expr::Path(p) => self.path(&p.path),
            syn::Expr::Unary(u) => match (u.op, self.entry_of(&u.expr)) {
                (syn::UnOp::Deref(_), Some(Entry::ElementRef(t) | Entry::Elements(t))) => t,
                _ => self.expr(&u.expr),
            },
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Assign(a) => {
                let place = self.expr(&a.left);
                let value = self.expr(&a.right);
                self.unify(place, value);
                Term::Unknown
            }
            syn::Expr::Cast(c) => {
                self.expr(&c.expr);
                scalar_type(&c.ty, self.subst).map_or(Term::Unknown, Term::Known)
            }
            syn::Expr::Index(i) => self.index(i),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Block(b) => self.block(&b.block),
            syn::Expr::Unsafe(u) => self.block(&u.block),
            syn::Expr::If(i) => self.if_expr(i),
            syn::Expr::Match(m) => self.match_expr(m),
            syn::Expr::While(w) => {
                self.scopes.push(HashMap::new());
                self.condition(&w.cond);
                self.loop_body(&w.body);
                self.scopes.pop();
                Term::Unknown
            }
            syn::Expr::Loop(l) => self.loop_body(&l.body),
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::Break(b) => {
                if let Some(v) = &b.expr {
                    let t = self.expr(v);
                    if let Some(value) = self.loops.last().copied() {
                        self.unify(value, t);
                        let joined = self.either(value, t);
                        *self.loops.last_mut().expect("checked") = joined;
                    }
                }
                Term::Unknown
            }
            syn::Expr::Return(r) => {
                if let Some(v) = &r.expr {
                    let t = self.expr(v);
                    if let Some(ret) = self.ret {
                        self.unify(t, Term::Known(ret));
                    }
                }
                Term::Unknown
            }
            syn::Expr::Tuple(t) => {
                for v in &t.elems {
                    self.expr(v);
                }
                Term::Unknown
            }
            syn::Expr::Range(r) => {
                let start = r.start.as_ref().map_or(Term::Unknown, |s| self.expr(s));
                let end = r.end.as_ref().map_or(Term::Unknown, |s| self.expr(s));
                self.unify(start, end);
                Term::Unknown
            }
            syn::Expr::Macro(m) => self.macro_call(&m.mac),
            syn::Expr::Closure(c) => {
                self.closure_body(c, &[]);
                Term::Unknown
            }
            _ => Term::Unknown,
        }
    }

    fn literal(&mut self, lit: &syn::Lit) -> Term {
        match (literal_suffix_type(lit), lit) {
            (Some(t), _) => Term::Known(t),
            (None, syn::Lit::Int(_)) => self.fresh(false),
            (None, syn::Lit::Float(_)) => self.fresh(true),
            (None, _) => Term::Unknown,
        }
    }

    /// A name: a binding, a `const` item outside the kernel (typed by its use, as a
    /// literal is), or an associated constant such as `u32::MAX` or `T::ZERO`.
    fn path(&mut self, path: &syn::Path) -> Term {
        if let Some(id) = path.get_ident() {
            return match self.lookup(id) {
                Some(Entry::Scalar(t) | Entry::ElementRef(t)) => t,
                Some(Entry::Elements(_) | Entry::Closure(_)) => Term::Unknown,
                None => match self.consts.iter().find(|(c, _)| id == c) {
                    Some((_, super::ConstValue::Int(_) | super::ConstValue::Rustc)) => {
                        self.fresh(false)
                    }
                    Some((_, super::ConstValue::Float(_))) => self.fresh(true),
                    None => Term::Unknown,
                },
            };
        }
        let first = path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .find(|s| s != "std" && s != "core");
        first
            .and_then(|ty| self.named_scalar(&ty))
            .map_or(Term::Unknown, Term::Known)
    }

    /// A scalar type named by `name`: a type parameter of the instance or a primitive.
    fn named_scalar(&self, name: &str) -> Option<ScalarTy> {
        self.subst
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, t)| *t)
            .or_else(|| ScalarTy::from_name(name))
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Term {
        let left = self.expr(&b.left);
        let right = self.expr(&b.right);
        if let syn::BinOp::And(_) | syn::BinOp::Or(_) = b.op {
            return Term::Known(ScalarTy::Bool);
        }
        let Some((op, compound)) = binop(&b.op) else {
            return Term::Unknown;
        };
        if op.is_shift() {
            return if compound { Term::Unknown } else { left };
        }
        self.unify(left, right);
        if compound {
            Term::Unknown
        } else if op.is_comparison() {
            Term::Known(ScalarTy::Bool)
        } else {
            self.either(left, right)
        }
    }

    fn index(&mut self, i: &syn::ExprIndex) -> Term {
        let usize_ = Term::Known(ScalarTy::Usize);
        match strip_parens(&i.index) {
            // `x[a..b]`, a sub-slice, not an element.
            syn::Expr::Range(_) => {
                self.sub_slice_bounds(&syn::Expr::Index(i.clone()));
                return Term::Unknown;
            }
            // `tile[(row, col)]`.
            syn::Expr::Tuple(t) => {
                for e in &t.elems {
                    let k = self.expr(e);
                    self.unify(k, usize_);
                }
            }
            e => {
                let k = self.expr(e);
                self.unify(k, usize_);
            }
        }
        match self.entry_of(&i.expr) {
            Some(Entry::Elements(t) | Entry::ElementRef(t)) => t,
            _ => {
                self.expr(&i.expr);
                Term::Unknown
            }
        }
    }

    fn condition(&mut self, cond: &syn::Expr) {
        match strip_parens(cond) {
            // `if let Some(v) = region.get_mut()` (or `img.get(dr, dc)`, `x.get(i)`): `v`
            // is the element the option holds.
            syn::Expr::Let(l) => {
                let value = self.expr(&l.expr);
                if let syn::Pat::TupleStruct(s) = &*l.pat
                    && s.elems.len() == 1
                {
                    self.bind_param(&s.elems[0], Entry::ElementRef(value));
                }
            }
            other => {
                let t = self.expr(other);
                self.unify(t, Term::Known(ScalarTy::Bool));
            }
        }
    }

    fn if_expr(&mut self, i: &syn::ExprIf) -> Term {
        self.scopes.push(HashMap::new());
        self.condition(&i.cond);
        let then = self.block(&i.then_branch);
        self.scopes.pop();
        match &i.else_branch {
            Some((_, e)) => {
                let other = self.expr(e);
                self.unify(then, other);
                self.either(then, other)
            }
            None => Term::Unknown,
        }
    }

    fn match_expr(&mut self, m: &syn::ExprMatch) -> Term {
        let scrutinee = self.expr(&m.expr);
        let mut result = Term::Unknown;
        for arm in &m.arms {
            self.scopes.push(HashMap::new());
            self.pattern(&arm.pat, scrutinee);
            if let Some((_, guard)) = &arm.guard {
                self.expr(guard);
            }
            let t = self.expr(&arm.body);
            self.unify(result, t);
            result = self.either(result, t);
            self.scopes.pop();
        }
        result
    }

    /// A `match` arm's pattern against a scrutinee of type `of`: its literals and ranges
    /// are of that type; a name binds the value.
    fn pattern(&mut self, pat: &syn::Pat, of: Term) {
        match pat {
            syn::Pat::Lit(l) => {
                let t = self.literal(&l.lit);
                self.unify(t, of);
            }
            syn::Pat::Range(r) => {
                for end in [&r.start, &r.end].into_iter().flatten() {
                    let t = self.expr(end);
                    self.unify(t, of);
                }
            }
            syn::Pat::Or(o) => {
                for case in &o.cases {
                    self.pattern(case, of);
                }
            }
            syn::Pat::Ident(id) => {
                if let Some((_, sub)) = &id.subpat {
                    self.pattern(sub, of);
                }
                self.bind(&id.ident, Entry::Scalar(of));
            }
            _ => {}
        }
    }

    fn loop_body(&mut self, body: &syn::Block) -> Term {
        self.loops.push(Term::Unknown);
        self.block(body);
        self.loops.pop().expect("pushed above")
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Term {
        self.scopes.push(HashMap::new());
        if let Some(elements) = element_iteration(&f.expr) {
            self.bind_item(&f.pat, elements);
        } else {
            // `for i in a..b`, perhaps `(a..b).rev()` or `.step_by(s)`.
            let mut range = strip_parens(&f.expr);
            let reversed = matches!(range, syn::Expr::MethodCall(m) if m.method == "rev");
            while let syn::Expr::MethodCall(m) = range {
                for a in &m.args {
                    self.expr(a);
                }
                range = strip_parens(&m.receiver);
            }
            let (start, end) = match range {
                syn::Expr::Range(r) => {
                    let start = r.start.as_ref().map_or(Term::Unknown, |s| self.expr(s));
                    let end = r.end.as_ref().map_or(Term::Unknown, |s| self.expr(s));
                    self.unify(start, end);
                    (start, end)
                }
                other => {
                    self.expr(other);
                    (Term::Unknown, Term::Unknown)
                }
            };
            let counter = self.either(start, end);
            if let syn::Pat::Ident(id) = &*f.pat {
                self.bind_scalar(&id.ident, counter);
            }
            // The translator runs `(a..b).rev()` as a loop whose hidden bounds and
            // counter are named at the `for`: they have the range's type.
            for bound in [start, end].into_iter().filter(|_| reversed) {
                if let Term::Var(v) = bound {
                    self.bindings.push((position(f.for_token.span), v));
                }
            }
        }
        self.loop_body(&f.body);
        self.scopes.pop();
        Term::Unknown
    }

    /// Binds what a `for` loop (or a reduction's closure) over elements receives each
    /// step: `v` or `&v`, `(k, v)` when enumerated, `(a, b)` when zipped.
    /// A sub-slice's bounds are `usize`s.
    fn sub_slice_bounds(&mut self, e: &syn::Expr) {
        if let Some((_, range)) = as_sub_slice(e) {
            for bound in range.start.iter().chain(&range.end) {
                let t = self.expr(bound);
                self.unify(t, Term::Known(ScalarTy::Usize));
            }
        }
    }

    fn bind_item(&mut self, pat: &syn::Pat, it: Elements<'_>) {
        self.sub_slice_bounds(it.of);
        if let Some(z) = it.zipped {
            self.sub_slice_bounds(z);
        }
        let elements = |s: &Self, e: &syn::Expr| match s.entry_of(e) {
            Some(Entry::Elements(t)) => t,
            _ => Term::Unknown,
        };
        let first = elements(self, it.of);
        let second = it.zipped.map(|z| elements(self, z));
        let mut pat = pat;
        if it.enumerate
            && let syn::Pat::Tuple(t) = pat
            && t.elems.len() == 2
        {
            self.bind_param(&t.elems[0], Entry::Scalar(Term::Known(ScalarTy::Usize)));
            pat = &t.elems[1];
        }
        match (pat, second) {
            (syn::Pat::Tuple(t), Some(second)) if t.elems.len() == 2 => {
                self.bind_param(&t.elems[0], Entry::ElementRef(first));
                self.bind_param(&t.elems[1], Entry::ElementRef(second));
            }
            (p, _) => self.bind_param(p, Entry::ElementRef(first)),
        }
    }

    /// `ITER.fold(init, |a, v| body)`, `ITER.sum()` and `ITER.product()`, perhaps after
    /// `.map(|p| e)`, as the translator runs them: a loop whose accumulator is a `let`
    /// at `init` (typed by the closure's result), whose element parameter is bound to
    /// the element or to `e`. `None` for anything else.
    fn reduction(&mut self, m: &syn::ExprMethodCall, name: &str) -> Option<Term> {
        if !matches!(name, "fold" | "sum" | "product") {
            return None;
        }
        let (iter, map) = match strip_parens(&m.receiver) {
            syn::Expr::MethodCall(inner) if inner.method == "map" && inner.args.len() == 1 => {
                match &inner.args[0] {
                    syn::Expr::Closure(c) => (&*inner.receiver, Some(c)),
                    _ => return None,
                }
            }
            other => (other, None),
        };
        let it = element_iteration(iter)?;
        self.scopes.push(HashMap::new());
        // The value each step contributes: the element, or the map's body.
        let mapped = map.map(|c| {
            self.scopes.push(HashMap::new());
            if let Some(p) = c.inputs.first() {
                self.bind_item(p, it);
            }
            let t = self.expr(&c.body);
            self.scopes.pop();
            t
        });
        let result = match (name, m.args.first(), m.args.get(1)) {
            ("fold", Some(init), Some(f)) => {
                let acc = self.expr(init);
                let acc = self.resolve(acc);
                if let Term::Var(v) = acc {
                    self.bindings.push((position(init.span()), v));
                }
                match strip_parens(f) {
                    syn::Expr::Closure(c) if c.inputs.len() == 2 => {
                        self.bind_param(&c.inputs[0], Entry::Scalar(acc));
                        match mapped {
                            Some(value) => self.bind_param(&c.inputs[1], Entry::Scalar(value)),
                            None => self.bind_item(&c.inputs[1], it),
                        }
                        let body = self.expr(&c.body);
                        self.unify(acc, body);
                    }
                    // `fold(init, f32::max)`: the elements are of the accumulator's type.
                    _ => {
                        let elem = match self.entry_of(it.of) {
                            Some(Entry::Elements(t)) => t,
                            _ => Term::Unknown,
                        };
                        self.unify(acc, mapped.unwrap_or(elem));
                    }
                }
                self.resolve(acc)
            }
            _ => match &m.turbofish {
                Some(t) => turbofish_type(t).map_or(Term::Unknown, Term::Known),
                None => mapped.unwrap_or_else(|| match self.entry_of(it.of) {
                    Some(Entry::Elements(t)) => t,
                    _ => Term::Unknown,
                }),
            },
        };
        self.scopes.pop();
        Some(result)
    }

    fn call(&mut self, c: &syn::ExprCall) -> Term {
        let args: Vec<Term> = c.args.iter().map(|a| self.expr(a)).collect();
        let syn::Expr::Path(p) = strip_parens(&c.func) else {
            return Term::Unknown;
        };
        if let Some(id) = p.path.get_ident()
            && let Some(Entry::Closure(which)) = self.lookup(id)
        {
            return self.closure_call(which, &args);
        }
        let Some(last) = p.path.segments.last() else {
            return Term::Unknown;
        };
        let name = last.ident.to_string();
        // `T::from_f64(x)`, `f32::max(a, b)`, `u64::from(x)`: of the named type.
        if p.path.segments.len() >= 2 {
            let ty = &p.path.segments[p.path.segments.len() - 2].ident;
            if let Some(t) = self.named_scalar(&ty.to_string()) {
                let args_ty = match name.as_str() {
                    "from_f64" => Some(ScalarTy::F64),
                    "from_f32" => Some(ScalarTy::F32),
                    "from_i64" => Some(ScalarTy::I64),
                    "from" | "try_from" | "from_bits" => None,
                    _ => Some(t),
                };
                for a in args.iter().filter(|_| args_ty.is_some()) {
                    self.unify(*a, Term::Known(args_ty.expect("filtered")));
                }
                return Term::Known(t);
            }
            return Term::Unknown;
        }
        if let Some(function) = builtins::function(&name) {
            for (k, a) in args.iter().enumerate() {
                if let Some(t) = function.argument(k) {
                    self.unify(*a, Term::Known(t));
                }
            }
            let first = args.first().map(|a| self.resolve(*a));
            let first = match first {
                Some(Term::Known(t)) => Some(t),
                _ => None,
            };
            return match (function.result(first), function) {
                (Some(t), _) => Term::Known(t),
                // A workgroup reduction or subgroup exchange of a value not yet typed
                // has that value's type.
                (None, Function::WorkgroupReduce(..) | Function::Subgroup(_)) => {
                    args.first().copied().unwrap_or(Term::Unknown)
                }
                (None, _) => Term::Unknown,
            };
        }
        match name.as_str() {
            "swap" => Term::Unknown,
            // A device function: its literal arguments share the typed ones' type.
            _ => {
                let mut joined = Term::Unknown;
                for a in args {
                    self.unify(joined, a);
                    joined = self.either(joined, a);
                }
                joined
            }
        }
    }

    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Term {
        let name = m.method.to_string();
        if let Some(Entry::Elements(elem)) = self.entry_of(&m.receiver) {
            return self.container_method(m, &name, elem);
        }
        if let Some(t) = self.reduction(m, &name) {
            return t;
        }
        let receiver = self.expr(&m.receiver);
        let args: Vec<Term> = m.args.iter().map(|a| self.expr(a)).collect();
        let known = |t| Term::Known(t);
        if let Some(method) = builtins::method(&name) {
            for a in args {
                match method.rule.argument() {
                    Some(t) => self.unify(a, known(t)),
                    None => self.unify(receiver, a),
                }
            }
            let of = match self.resolve(receiver) {
                Term::Known(t) => Some(t),
                _ => None,
            };
            return match (method.rule.result(of), method.rule) {
                (Some(t), _) => known(t),
                (None, Rule::Receiver | Rule::ArgumentsOf(_)) => self.resolve(receiver),
                (None, _) => Term::Unknown,
            };
        }
        match name.as_str() {
            // `x.get(i).copied().unwrap_or(d)`: an option is typed by its value, so `d`
            // is of the slice's elements.
            "unwrap_or" if args.len() == 1 => {
                self.unify(receiver, args[0]);
                self.either(receiver, args[0])
            }
            "copied" | "cloned" => receiver,
            "iter" | "enumerate" | "rev" | "zip" | "map" => Term::Unknown,
            // `min`, `max`, `clamp`, `wrapping_add`, `mul_add`, `atan2`, `rem_euclid`, ...:
            // arguments of the receiver's type.
            _ => {
                for a in args {
                    self.unify(receiver, a);
                }
                self.resolve(receiver)
            }
        }
    }

    /// A method of a region, slice, atomic, shared or read-only array.
    fn container_method(&mut self, m: &syn::ExprMethodCall, name: &str, elem: Term) -> Term {
        let args: Vec<Term> = m.args.iter().map(|a| self.expr(a)).collect();
        let usize_ = Term::Known(ScalarTy::Usize);
        // Which arguments are element indices; the others are elements.
        let indices = match name {
            "len" | "is_empty" | "index" | "row" | "col" | "x" | "y" | "z" | "width" | "height"
            | "depth" => return usize_,
            "iter" => return Term::Unknown,
            // A stencil's neighbour at offsets; an option of it, typed by the element.
            "get" | "get_clamped" if args.len() == 2 => {
                for a in args {
                    self.unify(a, Term::Known(ScalarTy::Isize));
                }
                return elem;
            }
            "write" | "get_mut" => 0,
            _ => 1,
        };
        for (k, a) in args.into_iter().enumerate() {
            self.unify(a, if k < indices { usize_ } else { elem });
        }
        elem
    }

    /// `assert!(c)`, `assert_eq!(a, b)`, `matches!(x, ..)` and their kin: the conditions
    /// and compared values; other macros are not looked into.
    fn macro_call(&mut self, mac: &syn::Macro) -> Term {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        let parse = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        let Some(name) = name else {
            return Term::Unknown;
        };
        match name.as_str() {
            "assert" | "debug_assert" => {
                if let Ok(args) = mac.parse_body_with(parse)
                    && let Some(c) = args.first()
                {
                    let t = self.expr(c);
                    self.unify(t, Term::Known(ScalarTy::Bool));
                }
                Term::Unknown
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                if let Ok(args) = mac.parse_body_with(parse)
                    && args.len() >= 2
                {
                    let a = self.expr(&args[0]);
                    let b = self.expr(&args[1]);
                    self.unify(a, b);
                }
                Term::Unknown
            }
            "matches" => Term::Known(ScalarTy::Bool),
            _ => Term::Unknown,
        }
    }
}

/// `Shared::<T, N>::new()` and the other shared-memory constructors.
fn shared_new(c: &syn::ExprCall) -> Option<&syn::PathSegment> {
    let syn::Expr::Path(p) = &*c.func else {
        return None;
    };
    let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    let [.., ty, new] = segments[..] else {
        return None;
    };
    (new.ident == "new" && super::workgroup::SHARED_KINDS.contains(&ty.ident.to_string().as_str()))
        .then_some(ty)
}

/// A shared array's element type, from its annotation or its constructor's turbofish.
fn shared_elem(c: &syn::ExprCall, annotation: Option<&syn::Type>, subst: &Substitution) -> Term {
    let arguments = match annotation {
        Some(syn::Type::Path(t)) => t.path.segments.last().map(|s| &s.arguments),
        _ => shared_new(c).map(|s| &s.arguments),
    };
    match arguments {
        Some(syn::PathArguments::AngleBracketed(a)) => match a.args.first() {
            Some(syn::GenericArgument::Type(t)) => {
                scalar_type(t, subst).map_or(Term::Unknown, Term::Known)
            }
            _ => Term::Unknown,
        },
        _ => Term::Unknown,
    }
}

#[cfg(test)]
mod tests;
