//! Type resolution and inference: scalar types from syntax (with a generic instance's
//! substitution), the syntactic type guess that types literals, and what a pass learns
//! for the next one about locals typed only by a literal's default.

use super::{Binding, Result, Substitution, TokenString, Translator, error};
use offload_mir::*;

impl Translator {
    /// A syntactic type guess used to type literals: the type an expression has if it can
    /// be told without translating it.
    pub(super) fn infer(&self, e: &syn::Expr) -> Option<ScalarTy> {
        match e {
            syn::Expr::Lit(l) => literal_suffix_type(&l.lit),
            syn::Expr::Paren(p) => self.infer(&p.expr),
            syn::Expr::Group(g) => self.infer(&g.expr),
            syn::Expr::Cast(c) => scalar_type(&c.ty, &self.subst).ok(),
            syn::Expr::Call(c) => self.infer_call(c),
            syn::Expr::Path(p) if self.path_constant(&p.path).is_some() => {
                self.path_constant(&p.path).map(|c| c.ty())
            }
            syn::Expr::Path(p) => match self.lookup(p.path.get_ident()?)? {
                Binding::Local(l) if self.flexible.contains_key(&l) => None,
                Binding::Local(l) => self.body.locals[l.index()].ty.scalar(),
                Binding::RegionElement { .. }
                | Binding::Window { .. }
                | Binding::Array(_)
                | Binding::Closure(_) => None,
            },
            syn::Expr::Unary(u) => match u.op {
                syn::UnOp::Deref(_) => {
                    let syn::Expr::Path(p) = &*u.expr else {
                        return None;
                    };
                    match self.lookup(p.path.get_ident()?)? {
                        Binding::RegionElement { region, .. } => {
                            self.body.locals[region.index()].ty.element()
                        }
                        Binding::Local(l) if self.element_refs.contains(&l) => {
                            self.body.locals[l.index()].ty.scalar()
                        }
                        Binding::Local(_)
                        | Binding::Window { .. }
                        | Binding::Array(_)
                        | Binding::Closure(_) => None,
                    }
                }
                _ => self.infer(&u.expr),
            },
            syn::Expr::Binary(b) => {
                if binop(&b.op).is_some_and(|(op, _)| op.is_comparison())
                    || matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_))
                {
                    return Some(ScalarTy::Bool);
                }
                if matches!(b.op, syn::BinOp::Shl(_) | syn::BinOp::Shr(_)) {
                    return self.infer(&b.left);
                }
                self.infer(&b.left).or_else(|| self.infer(&b.right))
            }
            syn::Expr::Index(i) => {
                let syn::Expr::Path(p) = &*i.expr else {
                    return None;
                };
                match self.lookup(p.path.get_ident()?)? {
                    Binding::Local(l) => self.body.locals[l.index()].ty.element(),
                    Binding::Window { base, .. } => self.body.locals[base.index()].ty.element(),
                    Binding::Array(a) => Some(self.arrays[a].elem),
                    Binding::RegionElement { .. } | Binding::Closure(_) => None,
                }
            }
            syn::Expr::MethodCall(m) => self.infer_method_call(m),
            syn::Expr::Match(m) => m.arms.iter().find_map(|arm| self.infer(&arm.body)),
            syn::Expr::If(i) => match i.then_branch.stmts.last()? {
                syn::Stmt::Expr(e, None) => self.infer(e),
                _ => None,
            },
            syn::Expr::Block(b) => match b.block.stmts.last()? {
                syn::Stmt::Expr(e, None) => self.infer(e),
                _ => None,
            },
            _ => None,
        }
    }

    /// [`Translator::infer`] for a call: of `T::from_f64`, `T::from_i64` and
    /// `f16::from_f32`, a `T`; of a
    /// thread-position query, a `usize`; of a subgroup or workgroup operation, its result's;
    /// of anything else, unknown.
    fn infer_call(&self, c: &syn::ExprCall) -> Option<ScalarTy> {
        let syn::Expr::Path(p) = &*c.func else {
            return None;
        };
        let last = p.path.segments.last()?;
        // `T::from_f64(x)`, `T::from_i64(x)`, `f16::from_f32(x)`: a `T`.
        if p.path.segments.len() == 2
            && (last.ident == "from_f64" || last.ident == "from_f32" || last.ident == "from_i64")
        {
            let name = p.path.segments[0].ident.to_string();
            return self
                .subst
                .iter()
                .find(|(q, _)| *q == name)
                .map(|(_, t)| *t)
                .or_else(|| ScalarTy::from_name(&name));
        }
        let function = super::builtins::function(&last.ident.to_string())?;
        let first = c.args.first().and_then(|a| self.infer(a));
        function.result(first)
    }

    /// [`Translator::infer`] for a method call: the receiver's type, except for the
    /// methods of regions and atomics and those whose result is a `usize` or `u32`.
    fn infer_method_call(&self, m: &syn::ExprMethodCall) -> Option<ScalarTy> {
        match m.method.to_string().as_str() {
            "get_clamped" => {
                let syn::Expr::Path(p) = &*m.receiver else {
                    return None;
                };
                match self.lookup(p.path.get_ident()?)? {
                    Binding::Local(l) => self.body.locals[l.index()].ty.element(),
                    _ => None,
                }
            }
            "row" | "col" | "x" | "y" | "z" | "width" | "height" | "depth" => Some(ScalarTy::Usize),
            // Iterator reductions: `fold` has its initial value's type; `sum` and
            // `product` the turbofish's, else the elements'.
            "fold" if m.args.len() == 2 => self.infer(&m.args[0]),
            // `x.get(i).copied().unwrap_or(d)` has the slice's element type.
            "unwrap_or" if m.args.len() == 1 => {
                let of_slice = match &*m.receiver {
                    syn::Expr::MethodCall(c) if c.method == "copied" || c.method == "cloned" => {
                        match &*c.receiver {
                            syn::Expr::MethodCall(g) if g.method == "get" && g.args.len() == 1 => {
                                self.element_type(&g.receiver)
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                of_slice.or_else(|| self.infer(&m.args[0]))
            }
            "sum" | "product" if m.args.is_empty() => match &m.turbofish {
                Some(t) => super::syntax::turbofish_type(t).ok(),
                None => super::syntax::iterated(&m.receiver).and_then(|of| self.element_type(of)),
            },
            method => match self.atomic_receiver(&m.receiver) {
                Some(_) if method == "len" => Some(ScalarTy::Usize),
                Some(atomic) => self.body.locals[atomic.index()].ty.element(),
                None if method == "index" || method == "len" => Some(ScalarTy::Usize),
                None => {
                    let receiver = self.infer(&m.receiver);
                    match super::builtins::method(method) {
                        Some(builtin) => builtin.rule.result(receiver),
                        None => receiver,
                    }
                }
            },
        }
    }

    /// Records that `op`, of type `have`, met a value of type `want`: if `op` is a local
    /// typed only by a literal's default, the next pass gives it `want`.
    pub(super) fn learn(&mut self, op: &Operand, have: ScalarTy, want: ScalarTy) {
        if have == want || have.is_float() != want.is_float() || want == ScalarTy::Bool {
            return;
        }
        if let Operand::Copy(p) | Operand::Move(p) = op
            && p.index.is_none()
            && let Some(key) = self.flexible.get(&p.local)
        {
            self.learned.insert(*key, want);
        }
    }

    pub(super) fn operand_type(&self, op: &Operand) -> ScalarTy {
        match op {
            Operand::Const(c) => c.ty(),
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.body.locals[p.local.index()].ty;
                match p.index {
                    Some(_) => ty.element().expect("indexed places are regions or slices"),
                    None => ty.scalar().expect("plain places are scalars"),
                }
            }
        }
    }
}

pub(super) fn scalar_type(ty: &syn::Type, subst: &Substitution) -> Result<ScalarTy> {
    // A type a `macro_rules!` substituted (`$t:ty`) comes in an invisible group.
    let ty = super::syntax::strip_type(ty);
    if let syn::Type::Path(p) = ty
        && let Some(id) = p.path.get_ident()
    {
        let name = id.to_string();
        if let Some((_, t)) = subst.iter().find(|(param, _)| *param == name) {
            return Ok(*t);
        }
        if let Some(s) = ScalarTy::from_name(&name) {
            return Ok(s);
        }
    }
    let hint = match ty {
        // `[(f32, f32); 2]`, `let p: (f32, f32)`: tuples are not a type kernels name.
        syn::Type::Tuple(_) => {
            "; a tuple is not a type kernels name: bind one without a type (`let p = (a, b);`), and keep an array of pairs as one array per field (`const XS: [f32; 2]`, `const YS: [f32; 2]`)"
        }
        syn::Type::Reference(_) | syn::Type::Slice(_) => {
            "; slices are kernel parameters (`x: &[f32]`), and a part of one is bound without a type (`let part = &x[a..b];`)"
        }
        _ => "",
    };
    error(
        ty,
        format!(
            "unsupported type `{}` in a kernel; supported: bool, i8..i64, isize, u8..u64, usize, f16, bf16, f32, f64{hint}",
            ty.to_token_stream_string()
        ),
    )
}

pub(super) fn literal_suffix_type(lit: &syn::Lit) -> Option<ScalarTy> {
    let suffix = match lit {
        syn::Lit::Int(i) => i.suffix(),
        syn::Lit::Float(f) => f.suffix(),
        syn::Lit::Bool(_) => return Some(ScalarTy::Bool),
        _ => return None,
    };
    ScalarTy::from_name(suffix)
}

/// The MIR operator for a Rust binary operator, and whether it is a compound assignment.
pub(super) fn binop(op: &syn::BinOp) -> Option<(BinOp, bool)> {
    use syn::BinOp as S;
    Some(match op {
        S::Add(_) => (BinOp::Add, false),
        S::Sub(_) => (BinOp::Sub, false),
        S::Mul(_) => (BinOp::Mul, false),
        S::Div(_) => (BinOp::Div, false),
        S::Rem(_) => (BinOp::Rem, false),
        S::BitAnd(_) => (BinOp::BitAnd, false),
        S::BitOr(_) => (BinOp::BitOr, false),
        S::BitXor(_) => (BinOp::BitXor, false),
        S::Shl(_) => (BinOp::Shl, false),
        S::Shr(_) => (BinOp::Shr, false),
        S::Eq(_) => (BinOp::Eq, false),
        S::Ne(_) => (BinOp::Ne, false),
        S::Lt(_) => (BinOp::Lt, false),
        S::Le(_) => (BinOp::Le, false),
        S::Gt(_) => (BinOp::Gt, false),
        S::Ge(_) => (BinOp::Ge, false),
        S::AddAssign(_) => (BinOp::Add, true),
        S::SubAssign(_) => (BinOp::Sub, true),
        S::MulAssign(_) => (BinOp::Mul, true),
        S::DivAssign(_) => (BinOp::Div, true),
        S::RemAssign(_) => (BinOp::Rem, true),
        S::BitAndAssign(_) => (BinOp::BitAnd, true),
        S::BitOrAssign(_) => (BinOp::BitOr, true),
        S::BitXorAssign(_) => (BinOp::BitXor, true),
        S::ShlAssign(_) => (BinOp::Shl, true),
        S::ShrAssign(_) => (BinOp::Shr, true),
        _ => return None,
    })
}
