//! Translates the body of an `#[offload_kernel]` Rust function, as parsed by `syn`, into
//! MIR. Anything outside the supported subset is a [`TranslateError`] carrying the span of
//! the offending syntax, which the proc macro turns into a compile error there.
//!
//! The kernel body is also compiled by rustc (in a never-called function the macro emits),
//! so type errors in it are rustc's. This translator therefore infers types only as far
//! as MIR needs them, trusting that rustc accepted the same code.

use crate::ir::*;
use proc_macro2::Span as SynSpan;
use std::collections::HashMap;
use syn::spanned::Spanned;

/// Unsupported or malformed kernel code, at a span of the user's source.
#[derive(Debug, Clone)]
pub struct TranslateError {
    pub span: SynSpan,
    pub message: String,
}

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.span.start();
        write!(f, "{}:{}: {}", at.line, at.column + 1, self.message)
    }
}

impl std::error::Error for TranslateError {}

type Result<T> = std::result::Result<T, TranslateError>;

fn error<T>(spanned: impl Spanned, message: impl Into<String>) -> Result<T> {
    Err(TranslateError {
        span: spanned.span(),
        message: message.into(),
    })
}

fn span_of(s: SynSpan) -> Span {
    let at = s.start();
    Span {
        line: at.line as u32,
        column: at.column as u32 + 1,
    }
}

/// The kind of a kernel parameter, as the host-side launch code needs it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    Region(ScalarTy, Strategy),
    Slice(ScalarTy),
    Scalar(ScalarTy),
}

/// Reads a kernel parameter type: `Region<T, S>`, `&[T]` or a scalar.
pub fn param_kind(ty: &syn::Type) -> Result<ParamKind> {
    const HELP: &str = "kernel parameters must be `Region<T, Strategy>`, `&[T]` or a scalar (`bool`, integers, `f32`, `f64`)";
    match ty {
        syn::Type::Reference(r) => {
            if r.mutability.is_some() {
                return error(
                    ty,
                    "`&mut` parameters are not supported; use `Region<T, Linear1D>` for data the kernel writes",
                );
            }
            let syn::Type::Slice(s) = &*r.elem else {
                return error(ty, HELP);
            };
            Ok(ParamKind::Slice(scalar_type(&s.elem)?))
        }
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            if last.ident == "Region" {
                let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                    return error(
                        ty,
                        "`Region` needs an element type and a strategy: `Region<f32, Linear1D>`",
                    );
                };
                let types: Vec<&syn::Type> = args
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                let [elem, strategy] = types[..] else {
                    return error(
                        ty,
                        "`Region` needs an element type and a strategy: `Region<f32, Linear1D>`",
                    );
                };
                let elem = scalar_type(elem)?;
                let name = strategy.to_token_stream_string();
                let Some(strategy) =
                    Strategy::from_name(name.rsplit("::").next().unwrap_or("").trim())
                else {
                    return error(
                        strategy,
                        format!(
                            "unsupported partitioning strategy `{name}`; supported: `Linear1D`"
                        ),
                    );
                };
                return Ok(ParamKind::Region(elem, strategy));
            }
            Ok(ParamKind::Scalar(scalar_type(ty)?))
        }
        _ => error(ty, HELP),
    }
}

trait TokenString {
    fn to_token_stream_string(&self) -> String;
}

impl<T: quote::ToTokens> TokenString for T {
    fn to_token_stream_string(&self) -> String {
        self.to_token_stream().to_string().replace(' ', "")
    }
}

fn scalar_type(ty: &syn::Type) -> Result<ScalarTy> {
    if let syn::Type::Path(p) = ty
        && let Some(id) = p.path.get_ident()
        && let Some(s) = ScalarTy::from_name(&id.to_string())
    {
        return Ok(s);
    }
    error(
        ty,
        format!(
            "unsupported type `{}` in a kernel; supported: bool, i8..i64, isize, u8..u64, usize, f32, f64",
            ty.to_token_stream_string()
        ),
    )
}

/// Translates one kernel function into MIR. `file` is recorded in the body for panic
/// reports.
pub fn translate_kernel(item: &syn::ItemFn, file: &str) -> Result<Body> {
    let sig = &item.sig;
    if let Some(c) = &sig.constness {
        return error(c, "kernels cannot be `const fn`");
    }
    if let Some(a) = &sig.asyncness {
        return error(a, "kernels cannot be `async`");
    }
    if let Some(u) = &sig.unsafety {
        return error(
            u,
            "kernels cannot be `unsafe fn`; safe kernels are the point",
        );
    }
    if let Some(v) = &sig.variadic {
        return error(v, "kernels cannot be variadic");
    }
    if !sig.generics.params.is_empty() {
        return error(&sig.generics, "generic kernels are not supported yet");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        return error(ty, "kernels return nothing; write results into a `Region`");
    }
    let mut b = Builder::new(sig.ident.to_string(), file.to_string());
    for input in &sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            return error(input, "kernels cannot take `self`");
        };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            return error(&arg.pat, "kernel parameters must be plain names");
        };
        if pat.by_ref.is_some() || pat.subpat.is_some() {
            return error(&arg.pat, "kernel parameters must be plain names");
        }
        let ty = match param_kind(&arg.ty)? {
            ParamKind::Region(e, s) => Ty::Region(e, s),
            ParamKind::Slice(e) => Ty::Slice(e),
            ParamKind::Scalar(s) => Ty::Scalar(s),
        };
        let local = b.declare(
            ty,
            pat.mutability.is_some(),
            Some((&pat.ident, pat.ident.span())),
        );
        b.body.arg_count += 1;
        b.bind(&pat.ident, Binding::Local(local));
    }
    b.block(&item.block)?;
    let end = item.block.brace_token.span.close();
    b.terminate(TerminatorKind::Return, end);
    b.finish()
}

#[derive(Copy, Clone)]
enum Binding {
    Local(Local),
    /// `v` in `if let Some(v) = region.get_mut()`: the thread's element of `region`.
    RegionElement {
        region: Local,
        index: Local,
    },
}

struct LoopTarget {
    label: Option<String>,
    break_to: BasicBlock,
    continue_to: BasicBlock,
}

struct Builder {
    body: Body,
    /// Terminators of the blocks under construction; `None` while a block is open.
    terminators: Vec<Option<Terminator>>,
    /// The block receiving statements; `None` after a diverging terminator.
    current: Option<BasicBlock>,
    scopes: Vec<HashMap<String, Binding>>,
    loops: Vec<LoopTarget>,
}

/// A translated expression: its operand and scalar type, or nothing for `()`.
type Value = Option<(Operand, ScalarTy)>;

impl Builder {
    fn new(name: String, file: String) -> Builder {
        let mut b = Builder {
            body: Body {
                name,
                file,
                locals: vec![LocalDecl {
                    ty: Ty::Unit,
                    mutable: true,
                    debug: None,
                }],
                arg_count: 0,
                blocks: Vec::new(),
            },
            terminators: Vec::new(),
            current: None,
            scopes: vec![HashMap::new()],
            loops: Vec::new(),
        };
        b.current = Some(b.new_block());
        b
    }

    fn finish(mut self) -> Result<Body> {
        for (block, t) in self.body.blocks.iter_mut().zip(self.terminators) {
            // A block nothing branches to and nothing terminated (after a `return`, say)
            // is unreachable.
            block.terminator = t.unwrap_or(Terminator {
                kind: TerminatorKind::Unreachable,
                span: Span::default(),
            });
        }
        Ok(self.body)
    }

    fn new_block(&mut self) -> BasicBlock {
        self.body.blocks.push(BlockData {
            statements: Vec::new(),
            terminator: Terminator {
                kind: TerminatorKind::Unreachable,
                span: Span::default(),
            },
        });
        self.terminators.push(None);
        BasicBlock(self.body.blocks.len() as u32 - 1)
    }

    fn declare(&mut self, ty: Ty, mutable: bool, name: Option<(&syn::Ident, SynSpan)>) -> Local {
        self.body.locals.push(LocalDecl {
            ty,
            mutable,
            debug: name.map(|(n, s)| (n.to_string(), span_of(s))),
        });
        Local(self.body.locals.len() as u32 - 1)
    }

    fn temp(&mut self, ty: ScalarTy) -> Local {
        self.declare(Ty::Scalar(ty), true, None)
    }

    fn bind(&mut self, name: &syn::Ident, binding: Binding) {
        self.scopes
            .last_mut()
            .expect("a scope is always open")
            .insert(name.to_string(), binding);
    }

    fn lookup(&self, name: &syn::Ident) -> Option<Binding> {
        let key = name.to_string();
        self.scopes.iter().rev().find_map(|s| s.get(&key).copied())
    }

    /// Appends a statement to the current block. Code after a diverging terminator goes
    /// into a fresh unreachable block, as rustc does.
    fn push(&mut self, place: Place, rvalue: Rvalue, span: SynSpan) {
        let bb = match self.current {
            Some(bb) => bb,
            None => {
                let bb = self.new_block();
                self.current = Some(bb);
                bb
            }
        };
        self.body.blocks[bb.index()].statements.push(Statement {
            place,
            rvalue,
            span: span_of(span),
        });
    }

    fn terminate(&mut self, kind: TerminatorKind, span: SynSpan) {
        if let Some(bb) = self.current.take() {
            self.terminators[bb.index()] = Some(Terminator {
                kind,
                span: span_of(span),
            });
        }
    }

    fn goto(&mut self, target: BasicBlock, span: SynSpan) {
        self.terminate(TerminatorKind::Goto(target), span);
    }

    /// Evaluates `rvalue` into a new temporary and returns it as an operand.
    fn assign_temp(&mut self, ty: ScalarTy, rvalue: Rvalue, span: SynSpan) -> Operand {
        let t = self.temp(ty);
        self.push(Place::local(t), rvalue, span);
        Operand::Copy(Place::local(t))
    }

    /// Makes `op` available as a local (index projections need one).
    fn as_local(&mut self, op: Operand, ty: ScalarTy, span: SynSpan) -> Local {
        match op {
            Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => p.local,
            other => {
                let t = self.temp(ty);
                self.push(Place::local(t), Rvalue::Use(other), span);
                t
            }
        }
    }

    fn block(&mut self, block: &syn::Block) -> Result<Value> {
        self.scopes.push(HashMap::new());
        let mut result = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            result = None;
            match stmt {
                syn::Stmt::Local(local) => self.let_statement(local)?,
                syn::Stmt::Expr(e, semi) => {
                    let v = self.expr(e, None)?;
                    if last && semi.is_none() {
                        result = v;
                    }
                }
                syn::Stmt::Item(item) => {
                    return error(
                        item,
                        "items (functions, structs, `use`, ...) cannot be declared inside a kernel; declare them outside",
                    );
                }
                syn::Stmt::Macro(m) => return self.unsupported_macro(&m.mac),
            }
        }
        self.scopes.pop();
        Ok(result)
    }

    fn unsupported_macro<T>(&self, mac: &syn::Macro) -> Result<T> {
        let name = mac.path.to_token_stream_string();
        error(
            mac,
            format!("the macro `{name}!` is not supported in kernels yet"),
        )
    }

    fn let_statement(&mut self, local: &syn::Local) -> Result<()> {
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(scalar_type(&t.ty)?)),
            other => (other, None),
        };
        if let Some(init) = &local.init
            && let Some((_, diverge)) = &init.diverge
        {
            return error(diverge, "`let ... else` is not supported in kernels");
        }
        match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                // The value's own type decides when there is no annotation; an unsuffixed
                // literal then takes rustc's default (`i32`, `f64`).
                let (value, ty) = match (&local.init, annotated) {
                    (Some(init), expected) => {
                        let expected = expected.or_else(|| self.infer(&init.expr));
                        let (op, ty) = self.scalar_expr(&init.expr, expected)?;
                        (Some(op), annotated.unwrap_or(ty))
                    }
                    (None, Some(ty)) => (None, ty),
                    (None, None) => {
                        return error(local, "a `let` without a value needs a type annotation");
                    }
                };
                let l = self.declare(
                    Ty::Scalar(ty),
                    id.mutability.is_some(),
                    Some((&id.ident, id.ident.span())),
                );
                if let Some(op) = value {
                    self.push(Place::local(l), Rvalue::Use(op), local.span());
                }
                self.bind(&id.ident, Binding::Local(l));
                Ok(())
            }
            syn::Pat::Wild(_) => {
                if let Some(init) = &local.init {
                    self.expr(&init.expr, annotated)?;
                }
                Ok(())
            }
            other => error(
                other,
                "only `let name = ...` and `let mut name = ...` are supported in kernels",
            ),
        }
    }

    /// A syntactic type guess used to type literals: the type an expression has if it can
    /// be told without translating it.
    fn infer(&self, e: &syn::Expr) -> Option<ScalarTy> {
        match e {
            syn::Expr::Lit(l) => literal_suffix_type(&l.lit),
            syn::Expr::Paren(p) => self.infer(&p.expr),
            syn::Expr::Group(g) => self.infer(&g.expr),
            syn::Expr::Cast(c) => scalar_type(&c.ty).ok(),
            syn::Expr::Path(p) => match self.lookup(p.path.get_ident()?)? {
                Binding::Local(l) => self.body.locals[l.index()].ty.scalar(),
                Binding::RegionElement { .. } => None,
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
                        Binding::Local(_) => None,
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
                    Binding::RegionElement { .. } => None,
                }
            }
            syn::Expr::MethodCall(m) if m.method == "index" || m.method == "len" => {
                Some(ScalarTy::Usize)
            }
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

    /// Translates an expression that must produce a scalar value.
    fn scalar_expr(
        &mut self,
        e: &syn::Expr,
        expected: Option<ScalarTy>,
    ) -> Result<(Operand, ScalarTy)> {
        match self.expr(e, expected)? {
            Some(v) => Ok(v),
            None => error(
                e,
                "this expression has type `()`, but a value is needed here",
            ),
        }
    }

    fn expr(&mut self, e: &syn::Expr, expected: Option<ScalarTy>) -> Result<Value> {
        let span = e.span();
        match e {
            syn::Expr::Lit(l) => Ok(Some(self.literal(&l.lit, expected)?)),
            syn::Expr::Paren(p) => self.expr(&p.expr, expected),
            syn::Expr::Group(g) => self.expr(&g.expr, expected),
            syn::Expr::Path(_) | syn::Expr::Index(_) => {
                let (place, ty) = self.place(e)?;
                Ok(Some((Operand::Copy(place), ty)))
            }
            syn::Expr::Unary(u) => match u.op {
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
                _ => error(e, "this unary operator is not supported in kernels"),
            },
            syn::Expr::Binary(b) => self.binary(b, expected),
            syn::Expr::Cast(c) => {
                let to = scalar_type(&c.ty)?;
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
                Ok(Some((self.assign_temp(to, Rvalue::Cast(op, to), span), to)))
            }
            syn::Expr::Assign(a) => {
                let (place, ty) = self.assignable_place(&a.left)?;
                let (op, _) = self.scalar_expr(&a.right, Some(ty))?;
                self.push(place, Rvalue::Use(op), span);
                Ok(None)
            }
            syn::Expr::Block(b) => {
                if let Some(label) = &b.label {
                    return error(label, "labelled blocks are not supported in kernels yet");
                }
                if b.block.stmts.is_empty() {
                    return Ok(None);
                }
                self.block(&b.block)
            }
            syn::Expr::If(i) => self.if_expr(i, expected),
            syn::Expr::While(w) => self.while_loop(w),
            syn::Expr::Loop(l) => self.loop_expr(l),
            syn::Expr::Break(b) => {
                if let Some(v) = &b.expr {
                    return error(v, "`break` with a value is not supported in kernels");
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
            syn::Expr::Return(r) => {
                if let Some(v) = &r.expr {
                    return error(v, "kernels return nothing; write results into a `Region`");
                }
                self.terminate(TerminatorKind::Return, span);
                Ok(None)
            }
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Macro(m) => self.unsupported_macro(&m.mac),
            syn::Expr::Closure(_) => error(
                e,
                "closures are not supported in kernels; use a plain loop or an `#[offload_device]` helper",
            ),
            syn::Expr::Call(_) => error(e, "function calls are not supported in kernels yet"),
            syn::Expr::Reference(_) => error(e, "taking references is not supported in kernels"),
            syn::Expr::ForLoop(_) => error(
                e,
                "`for` loops are not supported in kernels yet; use `while`",
            ),
            syn::Expr::Match(_) => error(
                e,
                "`match` is not supported in kernels yet; use `if`/`else`",
            ),
            syn::Expr::Tuple(t) if t.elems.is_empty() => Ok(None),
            syn::Expr::Let(_) => error(
                e,
                "`let` in this position is not supported; only `if let Some(v) = region.get_mut()`",
            ),
            _ => error(e, "this expression is not supported in kernels"),
        }
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
            return error(&b.op, "this operator is not supported in kernels");
        };
        if compound {
            let (place, ty) = self.assignable_place(&b.left)?;
            let rhs_ty = if op.is_shift() {
                self.infer(&b.right)
            } else {
                Some(ty)
            };
            let (rhs, _) = self.scalar_expr(&b.right, rhs_ty)?;
            let rhs = self.checked_divisor(op, rhs, ty, b.right.span())?;
            self.push(place, Rvalue::BinaryOp(op, Operand::Copy(place), rhs), span);
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
        let (rhs, _) = self.scalar_expr(&b.right, rhs_expected)?;
        let rhs = self.checked_divisor(op, rhs, lty, b.right.span())?;
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

    /// Integer division and remainder by zero panic in Rust; emit the check.
    fn checked_divisor(
        &mut self,
        op: BinOp,
        rhs: Operand,
        ty: ScalarTy,
        span: SynSpan,
    ) -> Result<Operand> {
        if !matches!(op, BinOp::Div | BinOp::Rem) || !ty.is_integer() {
            return Ok(rhs);
        }
        if let Operand::Const(Const::Int(v, _)) = rhs
            && v != 0
        {
            return Ok(rhs);
        }
        let nonzero = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Ne, rhs, Operand::Const(Const::Int(0, ty))),
            span,
        );
        let next = self.new_block();
        let msg = if op == BinOp::Div {
            "attempt to divide by zero"
        } else {
            "attempt to calculate the remainder with a divisor of zero"
        };
        self.terminate(
            TerminatorKind::Assert {
                cond: nonzero,
                msg: AssertMessage::Panic(msg.into()),
                target: next,
            },
            span,
        );
        self.current = Some(next);
        Ok(rhs)
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

    fn switch_bool(
        &mut self,
        cond: Operand,
        on_true: BasicBlock,
        on_false: BasicBlock,
        span: SynSpan,
    ) {
        self.terminate(
            TerminatorKind::SwitchInt {
                discr: cond,
                targets: vec![(0, on_false)],
                otherwise: on_true,
            },
            span,
        );
    }

    fn loop_target(
        &self,
        label: Option<&syn::Lifetime>,
        e: &syn::Expr,
    ) -> Result<(BasicBlock, BasicBlock)> {
        let found = match label {
            None => self.loops.last(),
            Some(l) => self
                .loops
                .iter()
                .rev()
                .find(|t| t.label.as_deref() == Some(&l.ident.to_string())),
        };
        match found {
            Some(t) => Ok((t.break_to, t.continue_to)),
            None => error(e, "`break`/`continue` outside of a loop"),
        }
    }

    fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<Value> {
        let span = w.while_token.span;
        if let syn::Expr::Let(l) = &*w.cond {
            return error(l, "`while let` is not supported in kernels");
        }
        let (head, body, exit) = (self.new_block(), self.new_block(), self.new_block());
        self.goto(head, span);
        self.current = Some(head);
        let (cond, _) = self.scalar_expr(&w.cond, Some(ScalarTy::Bool))?;
        self.switch_bool(cond, body, exit, span);
        self.current = Some(body);
        self.loops.push(LoopTarget {
            label: w.label.as_ref().map(|l| l.name.ident.to_string()),
            break_to: exit,
            continue_to: head,
        });
        self.block(&w.body)?;
        self.loops.pop();
        self.goto(head, span);
        self.current = Some(exit);
        Ok(None)
    }

    fn loop_expr(&mut self, l: &syn::ExprLoop) -> Result<Value> {
        let span = l.loop_token.span;
        let (body, exit) = (self.new_block(), self.new_block());
        self.goto(body, span);
        self.current = Some(body);
        self.loops.push(LoopTarget {
            label: l.label.as_ref().map(|l| l.name.ident.to_string()),
            break_to: exit,
            continue_to: body,
        });
        self.block(&l.body)?;
        self.loops.pop();
        self.goto(body, span);
        self.current = Some(exit);
        Ok(None)
    }

    fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<ScalarTy>) -> Result<Value> {
        let span = i.if_token.span;
        let (then_bb, else_bb, join) = (self.new_block(), self.new_block(), self.new_block());
        self.scopes.push(HashMap::new());
        if let syn::Expr::Let(l) = &*i.cond {
            self.region_get_mut(l, then_bb, else_bb)?;
        } else {
            let (cond, _) = self.scalar_expr(&i.cond, Some(ScalarTy::Bool))?;
            self.switch_bool(cond, then_bb, else_bb, span);
        }
        let result_ty = i.else_branch.as_ref().and_then(|_| {
            match i.then_branch.stmts.last()? {
                syn::Stmt::Expr(e, None) => self.infer(e),
                _ => None,
            }
            .or(expected)
        });
        let result = result_ty.map(|t| self.temp(t));
        self.current = Some(then_bb);
        let v = self.block(&i.then_branch)?;
        self.scopes.pop();
        if let (Some(r), Some((op, _))) = (result, v) {
            self.push(Place::local(r), Rvalue::Use(op), span);
        }
        self.goto(join, span);
        self.current = Some(else_bb);
        if let Some((_, else_expr)) = &i.else_branch {
            let v = self.expr(else_expr, result_ty)?;
            if let (Some(r), Some((op, _))) = (result, v) {
                self.push(Place::local(r), Rvalue::Use(op), span);
            }
        }
        self.goto(join, span);
        self.current = Some(join);
        Ok(result
            .zip(result_ty)
            .map(|(r, t)| (Operand::Copy(Place::local(r)), t)))
    }

    /// `if let Some(v) = region.get_mut()`: the thread owns an element iff its index is
    /// below the region's length.
    fn region_get_mut(
        &mut self,
        l: &syn::ExprLet,
        then_bb: BasicBlock,
        else_bb: BasicBlock,
    ) -> Result<()> {
        const FORM: &str = "the only supported `if let` is `if let Some(v) = region.get_mut()`";
        let syn::Pat::TupleStruct(ts) = &*l.pat else {
            return error(&l.pat, FORM);
        };
        let binding = match (ts.path.get_ident(), ts.elems.len(), ts.elems.first()) {
            (Some(some), 1, Some(syn::Pat::Ident(id)))
                if some == "Some" && id.by_ref.is_none() && id.subpat.is_none() =>
            {
                &id.ident
            }
            _ => return error(&l.pat, FORM),
        };
        let syn::Expr::MethodCall(m) = &*l.expr else {
            return error(&l.expr, FORM);
        };
        if m.method != "get_mut" || !m.args.is_empty() {
            return error(&l.expr, FORM);
        }
        let region = self.region_receiver(&m.receiver)?;
        let span = m.method.span();
        let index = self.temp(ScalarTy::Usize);
        self.push(Place::local(index), Rvalue::RegionIndex(region), span);
        let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(region), span);
        let owned = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Lt, Operand::Copy(Place::local(index)), len),
            span,
        );
        self.switch_bool(owned, then_bb, else_bb, span);
        self.bind(binding, Binding::RegionElement { region, index });
        Ok(())
    }

    fn region_receiver(&self, e: &syn::Expr) -> Result<Local> {
        if let syn::Expr::Path(p) = e
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Local(l)) = self.lookup(id)
            && matches!(self.body.locals[l.index()].ty, Ty::Region(..))
        {
            return Ok(l);
        }
        error(e, "expected a `Region` parameter")
    }

    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Result<Value> {
        let span = m.method.span();
        let name = m.method.to_string();
        if let Some(t) = &m.turbofish {
            return error(t, "turbofish is not supported on kernel methods");
        }
        match name.as_str() {
            "index" if m.args.is_empty() => {
                let region = self.region_receiver(&m.receiver)?;
                Ok(Some((
                    self.assign_temp(ScalarTy::Usize, Rvalue::RegionIndex(region), span),
                    ScalarTy::Usize,
                )))
            }
            "len" if m.args.is_empty() => {
                let local = match &*m.receiver {
                    syn::Expr::Path(p) => p.path.get_ident().and_then(|id| self.lookup(id)),
                    _ => None,
                };
                match local {
                    Some(Binding::Local(l))
                        if self.body.locals[l.index()].ty.element().is_some() =>
                    {
                        Ok(Some((
                            self.assign_temp(ScalarTy::Usize, Rvalue::Len(l), span),
                            ScalarTy::Usize,
                        )))
                    }
                    _ => error(
                        &m.receiver,
                        "`len()` is supported on `Region` and slice parameters",
                    ),
                }
            }
            "get_mut" => error(
                m,
                "use `get_mut()` as `if let Some(v) = region.get_mut() { ... }`",
            ),
            _ => error(
                &m.method,
                format!(
                    "the method `{name}` is not supported in kernels; supported: `Region::index`, `Region::get_mut`, `len`"
                ),
            ),
        }
    }

    /// A place that may be assigned: a `let mut` local or `*v` of a region element.
    fn assignable_place(&mut self, e: &syn::Expr) -> Result<(Place, ScalarTy)> {
        if let syn::Expr::Path(p) = e
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Local(l)) = self.lookup(id)
            && !self.body.locals[l.index()].mutable
        {
            return error(
                e,
                format!("cannot assign twice to immutable variable `{id}`"),
            );
        }
        if let syn::Expr::Index(i) = e
            && let syn::Expr::Path(p) = &*i.expr
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Local(l)) = self.lookup(id)
            && matches!(self.body.locals[l.index()].ty, Ty::Slice(_))
        {
            return error(
                e,
                format!("`{id}` is a read-only slice; write through a `Region` instead"),
            );
        }
        self.place(e)
    }

    fn place(&mut self, e: &syn::Expr) -> Result<(Place, ScalarTy)> {
        match e {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return error(
                        e,
                        "paths are not supported in kernels; only local variables and parameters",
                    );
                };
                match self.lookup(id) {
                    Some(Binding::Local(l)) => match self.body.locals[l.index()].ty {
                        Ty::Scalar(s) => Ok((Place::local(l), s)),
                        ty => error(
                            e,
                            format!(
                                "`{id}` of type `{ty}` cannot be used as a value; index it or call `len()`"
                            ),
                        ),
                    },
                    Some(Binding::RegionElement { .. }) => {
                        error(e, format!("`{id}` is a reference; write `*{id}`"))
                    }
                    None => error(e, format!("cannot find `{id}` in this kernel")),
                }
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                if let syn::Expr::Path(p) = &*u.expr
                    && let Some(id) = p.path.get_ident()
                    && let Some(Binding::RegionElement { region, index }) = self.lookup(id)
                {
                    let elem = self.body.locals[region.index()]
                        .ty
                        .element()
                        .expect("a region has elements");
                    return Ok((Place::element(region, index), elem));
                }
                error(
                    e,
                    "only references from `Region::get_mut` can be dereferenced in kernels",
                )
            }
            syn::Expr::Index(i) => {
                let syn::Expr::Path(p) = &*i.expr else {
                    return error(&i.expr, "only slice parameters can be indexed");
                };
                let target = p.path.get_ident().and_then(|id| self.lookup(id));
                let Some(Binding::Local(base)) = target else {
                    return error(&i.expr, "only slice parameters can be indexed");
                };
                let elem = match self.body.locals[base.index()].ty {
                    Ty::Slice(e) => e,
                    Ty::Region(..) => {
                        return error(
                            e,
                            "a `Region` is reached only through `get_mut()`, which gives this thread its own element",
                        );
                    }
                    ty => return error(&i.expr, format!("cannot index a value of type `{ty}`")),
                };
                if let syn::Expr::Range(r) = &*i.index {
                    return error(
                        r,
                        "range indexing (sub-slices) is not supported in kernels yet",
                    );
                }
                let (index_op, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
                let span = e.span();
                let index = self.as_local(index_op, ScalarTy::Usize, span);
                let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(base), span);
                let in_bounds = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::Lt, Operand::Copy(Place::local(index)), len),
                    span,
                );
                let next = self.new_block();
                self.terminate(
                    TerminatorKind::Assert {
                        cond: in_bounds,
                        msg: AssertMessage::BoundsCheck {
                            len,
                            index: Operand::Copy(Place::local(index)),
                        },
                        target: next,
                    },
                    span,
                );
                self.current = Some(next);
                Ok((Place::element(base, index), elem))
            }
            _ => error(
                e,
                "this expression is not a place that kernels can read or write",
            ),
        }
    }
}

fn literal_suffix_type(lit: &syn::Lit) -> Option<ScalarTy> {
    let suffix = match lit {
        syn::Lit::Int(i) => i.suffix(),
        syn::Lit::Float(f) => f.suffix(),
        syn::Lit::Bool(_) => return Some(ScalarTy::Bool),
        _ => return None,
    };
    ScalarTy::from_name(suffix)
}

/// The MIR operator for a Rust binary operator, and whether it is a compound assignment.
fn binop(op: &syn::BinOp) -> Option<(BinOp, bool)> {
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
