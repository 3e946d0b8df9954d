//! `offload-frontend`: translates the body of an `#[offload_kernel]` Rust function, as
//! parsed by `syn`, into MIR. The macros, `offload-opt` and build scripts share it; the
//! IR crate and the runtime do not depend on `syn`. Anything outside the supported subset is a [`TranslateError`] carrying the span of
//! the offending syntax, which the proc macro turns into a compile error there.
//!
//! The kernel body is also compiled by rustc (in a never-called function the macro emits),
//! so type errors in it are rustc's. This translator therefore infers types only as far
//! as MIR needs them, trusting that rustc accepted the same code.

use offload_mir::*;
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

mod workgroup;

type Result<T> = std::result::Result<T, TranslateError>;

fn error<T>(spanned: impl Spanned, message: impl Into<String>) -> Result<T> {
    Err(TranslateError {
        span: spanned.span(),
        message: message.into(),
    })
}

/// Whether a call of the path `segments` is built into the kernel language rather than a
/// device function: thread positions, `sync_threads`, the subgroup operations, and the
/// `Shared`/`DynShared` constructors.
pub fn is_builtin(segments: &[String]) -> bool {
    let [.., last] = segments else { return false };
    if let [.., ty, _] = segments
        && (ty == "Shared" || ty == "DynShared")
    {
        return true;
    }
    Position::ALL.iter().any(|p| p.name() == last)
        || SubgroupOp::ALL.iter().any(|o| o.name() == last)
        || last == "subgroup_broadcast"
        || last == "sync_threads"
}

/// A source position as a map key.
fn position(s: SynSpan) -> (usize, usize) {
    let at = s.start();
    (at.line, at.column)
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
    Atomic(ScalarTy),
    Slice(ScalarTy),
    Scalar(ScalarTy),
}

/// Reads a kernel parameter type: `Region<T, S>`, `&[T]` or a scalar.
pub fn param_kind(ty: &syn::Type, subst: &Substitution) -> Result<ParamKind> {
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
            Ok(ParamKind::Slice(scalar_type(&s.elem, subst)?))
        }
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            if last.ident == "Atomic" {
                let elem = match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(syn::GenericArgument::Type(t)) if a.args.len() == 1 => {
                            scalar_type(t, subst)?
                        }
                        _ => return error(ty, "`Atomic` needs an element type: `Atomic<u32>`"),
                    },
                    _ => return error(ty, "`Atomic` needs an element type: `Atomic<u32>`"),
                };
                if !AtomicOp::Exchange.supports(elem) && !AtomicOp::Add.supports(elem) {
                    return error(
                        ty,
                        format!(
                            "`Atomic<{elem}>` is not supported; atomics are `i32`, `u32`, `i64`, `u64`, `f32`, `f64`"
                        ),
                    );
                }
                return Ok(ParamKind::Atomic(elem));
            }
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
                let elem = scalar_type(elem, subst)?;
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
            Ok(ParamKind::Scalar(scalar_type(ty, subst)?))
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

/// A generic kernel's type parameters and the scalar types one instance gives them.
pub type Substitution = [(String, ScalarTy)];

fn scalar_type(ty: &syn::Type, subst: &Substitution) -> Result<ScalarTy> {
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
    error(
        ty,
        format!(
            "unsupported type `{}` in a kernel; supported: bool, i8..i64, isize, u8..u64, usize, f32, f64",
            ty.to_token_stream_string()
        ),
    )
}

/// The numeric traits a generic kernel's type parameters may be bounded by, and the
/// scalar types each admits.
pub fn bound_types(bound: &str) -> Option<&'static [ScalarTy]> {
    use ScalarTy::*;
    match bound {
        "Float" => Some(&[F32, F64]),
        "Int" => Some(&[I8, I16, I32, I64, Isize, U8, U16, U32, U64, Usize]),
        "Num" => Some(&[I8, I16, I32, I64, Isize, U8, U16, U32, U64, Usize, F32, F64]),
        _ => None,
    }
}

/// Every instance a kernel is compiled for: one empty substitution for a plain kernel,
/// and for a generic one every combination of the scalar types its parameters' bounds
/// (`Float`, `Int`, `Num`) admit.
pub fn instances(sig: &syn::Signature) -> Result<Vec<Vec<(String, ScalarTy)>>> {
    let mut out: Vec<Vec<(String, ScalarTy)>> = vec![Vec::new()];
    for param in &sig.generics.params {
        let syn::GenericParam::Type(tp) = param else {
            return error(
                param,
                "kernels take only type parameters, bounded by `Float`, `Int` or `Num`",
            );
        };
        let name = tp.ident.to_string();
        let mut bounds: Vec<&syn::TypeParamBound> = tp.bounds.iter().collect();
        if let Some(clause) = &sig.generics.where_clause {
            for predicate in &clause.predicates {
                if let syn::WherePredicate::Type(pt) = predicate
                    && let syn::Type::Path(p) = &pt.bounded_ty
                    && p.path.is_ident(&tp.ident)
                {
                    bounds.extend(pt.bounds.iter());
                }
            }
        }
        // The admitted types are those every numeric bound admits.
        let mut admitted: Option<Vec<ScalarTy>> = None;
        for bound in bounds {
            let syn::TypeParamBound::Trait(t) = bound else {
                continue;
            };
            let Some(last) = t.path.segments.last() else {
                continue;
            };
            if let Some(types) = bound_types(&last.ident.to_string()) {
                admitted = Some(match admitted {
                    Some(prev) => prev.into_iter().filter(|t| types.contains(t)).collect(),
                    None => types.to_vec(),
                });
            }
        }
        let Some(admitted) = admitted else {
            return error(
                &tp.ident,
                format!(
                    "bound `{name}` by `Float`, `Int` or `Num` so the kernel can be compiled for each type it admits"
                ),
            );
        };
        let mut next = Vec::new();
        for prefix in out {
            for t in &admitted {
                let mut instance = prefix.clone();
                instance.push((name.clone(), *t));
                next.push(instance);
            }
        }
        out = next;
    }
    Ok(out)
}

/// The MIR name of an instance: the kernel's name, then each type argument
/// (`scale_f64`), so every instance is a distinct device symbol.
pub fn instance_name(kernel: &str, subst: &Substitution) -> String {
    subst
        .iter()
        .fold(kernel.to_string(), |name, (_, t)| format!("{name}_{t}"))
}

/// Translates one instance of a kernel (of a plain kernel, the only one, with an empty
/// `subst`): its type parameters replaced as `subst` says. `file` is recorded in the body
/// for panic reports.
pub fn translate_instance(item: &syn::ItemFn, file: &str, subst: &Substitution) -> Result<Body> {
    translate_body(item, file, subst, BodyKind::Kernel)
}

/// Translates one instance of an `#[offload_device]` function.
pub fn translate_device(item: &syn::ItemFn, file: &str, subst: &Substitution) -> Result<Body> {
    translate_body(item, file, subst, BodyKind::Device)
}

fn translate_body(
    item: &syn::ItemFn,
    file: &str,
    subst: &Substitution,
    kind: BodyKind,
) -> Result<Body> {
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
    if sig.generics.params.len() != subst.len() {
        return error(
            &sig.generics,
            "internal error: a generic kernel needs a type for each parameter",
        );
    }
    let ret = match (&sig.output, kind) {
        (syn::ReturnType::Type(_, ty), BodyKind::Kernel) => {
            return error(ty, "kernels return nothing; write results into a `Region`");
        }
        (syn::ReturnType::Default, BodyKind::Device) => {
            return error(
                &sig.ident,
                "device functions return a scalar; kernels are the functions that return nothing",
            );
        }
        (syn::ReturnType::Type(_, ty), BodyKind::Device) => Ty::Scalar(scalar_type(ty, subst)?),
        (syn::ReturnType::Default, BodyKind::Kernel) => Ty::Unit,
    };
    // Device functions keep their Rust name: the linker picks an instance by argument
    // types, and inlining leaves no symbol behind.
    let name = match kind {
        BodyKind::Kernel => instance_name(&sig.ident.to_string(), subst),
        BodyKind::Device => sig.ident.to_string(),
    };
    // Rust infers an unannotated `let x = 0;` from later uses; a single forward pass
    // cannot. So translate, learn which such locals met another integer or float type,
    // and translate again with those types, until nothing new is learned.
    let mut hints = HashMap::new();
    for _ in 0..4 {
        let mut b = Builder::new(name.clone(), file.to_string());
        b.body.kind = kind;
        b.body.locals[0].ty = ret;
        b.function = sig.ident.to_string();
        b.subst = subst.to_vec();
        b.hints = hints.clone();
        let result = b.kernel(item);
        let learned: HashMap<_, _> = b
            .learned
            .into_iter()
            .filter(|(k, t)| hints.get(k) != Some(t))
            .collect();
        if learned.is_empty() {
            return result;
        }
        hints.extend(learned);
    }
    error(
        &sig.ident,
        "internal error: the types of this kernel's variables did not settle; annotate its `let`s",
    )
}

impl Builder {
    fn kernel(&mut self, item: &syn::ItemFn) -> Result<Body> {
        let b = self;
        for input in &item.sig.inputs {
            let syn::FnArg::Typed(arg) = input else {
                return error(input, "kernels cannot take `self`");
            };
            let syn::Pat::Ident(pat) = &*arg.pat else {
                return error(&arg.pat, "kernel parameters must be plain names");
            };
            if pat.by_ref.is_some() || pat.subpat.is_some() {
                return error(&arg.pat, "kernel parameters must be plain names");
            }
            let kind = param_kind(&arg.ty, &b.subst)?;
            if b.body.kind == BodyKind::Device && !matches!(kind, ParamKind::Scalar(_)) {
                return error(
                    &arg.ty,
                    "device functions take scalars only; pass elements, not regions or slices",
                );
            }
            let ty = match kind {
                ParamKind::Region(e, s) => Ty::Region(e, s),
                ParamKind::Atomic(e) => Ty::Atomic(e),
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
        let ret = b.body.locals[0].ty.scalar();
        let value = b.block(&item.block, ret)?;
        let end = item.block.brace_token.span.close();
        if b.body.kind == BodyKind::Device
            && let Some((op, _)) = value
        {
            b.push(Place::local(Local::RETURN), Rvalue::Use(op), end);
        }
        b.terminate(TerminatorKind::Return, end);
        let body = b.finish();
        if body.kind == BodyKind::Kernel {
            let at_source = |e: offload_mir::convergence::ConvergenceError| TranslateError {
                span: b
                    .syn_spans
                    .get(&e.span)
                    .copied()
                    .unwrap_or(item.sig.ident.span()),
                message: e.message,
            };
            offload_mir::convergence::check_convergence(&body).map_err(at_source)?;
            offload_mir::convergence::check_shared_races(&body).map_err(at_source)?;
        }
        Ok(body)
    }

    /// `f(args)` of an `#[offload_device]` function. The callee's signature is not known
    /// here, so the result takes the type the context expects; linking checks it against
    /// the callee's (and rustc has checked the same call in the kernel's Rust body).
    fn call(&mut self, c: &syn::ExprCall, expected: Option<ScalarTy>) -> Result<Value> {
        let syn::Expr::Path(p) = &*c.func else {
            return error(
                &c.func,
                "only `#[offload_device]` functions can be called in kernels, by name",
            );
        };
        let Some(last) = p.path.segments.last() else {
            return error(&c.func, "a call needs a function name");
        };
        let func = last.ident.to_string();
        let in_device = self.body.kind == BodyKind::Device;
        if func == "sync_threads" {
            if in_device {
                return error(
                    c,
                    "only kernels can call `sync_threads()`, not device functions",
                );
            }
            if !c.args.is_empty() {
                return error(c, "`sync_threads()` takes no arguments");
            }
            let target = self.new_block();
            self.terminate(TerminatorKind::Barrier { target }, c.span());
            self.current = Some(target);
            return Ok(None);
        }
        let subgroup = match func.as_str() {
            "subgroup_broadcast" => Some(SubgroupOp::Shuffle),
            _ => SubgroupOp::ALL.into_iter().find(|o| o.name() == func),
        };
        if let Some(op) = subgroup {
            if in_device {
                return error(
                    c,
                    format!("only kernels can call `{func}`, not device functions"),
                );
            }
            return self.subgroup_call(c, op, expected);
        }
        if let Some(position) = Position::ALL.into_iter().find(|p| p.name() == func) {
            let dim = match c.args.first() {
                Some(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                })) if c.args.len() == 1 => i.base10_parse::<u8>().ok().filter(|d| *d <= 2),
                _ => None,
            };
            let Some(dim) = dim else {
                return error(c, format!("`{func}` takes a constant dimension: 0, 1 or 2"));
            };
            return Ok(Some((
                self.assign_temp(ScalarTy::Usize, Rvalue::Position(position, dim), c.span()),
                ScalarTy::Usize,
            )));
        }
        let segments = p.path.segments.len();
        let of_a_type = p
            .path
            .segments
            .iter()
            .take(segments - 1)
            .any(|seg| seg.ident.to_string().starts_with(char::is_uppercase));
        if of_a_type || func.starts_with(char::is_uppercase) {
            let shown = p
                .path
                .segments
                .iter()
                .map(|seg| seg.ident.to_string())
                .collect::<Vec<_>>()
                .join("::");
            return error(
                &c.func,
                format!(
                    "`{shown}` is not supported in kernels: only `#[offload_device]` functions can be called"
                ),
            );
        }
        if func == self.function {
            return error(
                &c.func,
                format!("`{func}` calls itself; recursion is not supported on devices"),
            );
        }
        // Literal arguments take the type of the typed ones, or of the result: generic
        // device functions usually share one type parameter among them.
        let known = c.args.iter().find_map(|a| self.infer(a)).or(expected);
        let mut args = Vec::new();
        for arg in &c.args {
            let ty = self.infer(arg).or(known);
            args.push(self.scalar_expr(arg, ty)?.0);
        }
        let Some(ty) = expected else {
            return error(
                c,
                format!(
                    "annotate the type of `{func}(..)`'s result, e.g. `let x: f32 = {func}(..);`"
                ),
            );
        };
        let dest = self.temp(ty);
        let target = self.new_block();
        self.terminate(
            TerminatorKind::Call {
                func,
                args,
                dest,
                target,
            },
            c.span(),
        );
        self.current = Some(target);
        Ok(Some((Operand::Copy(Place::local(dest)), ty)))
    }
}

#[derive(Copy, Clone)]
enum Binding {
    Local(Local),
    /// `v` in `if let Some(v) = region.get_mut()`: the thread's element of `region`.
    /// `c` in `if let Some(c) = region.get_mut()` for a `Chunked<N>` region: `len`
    /// elements from `start`.
    RegionChunk {
        region: Local,
        start: Local,
        len: Local,
    },
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
    /// Types for unannotated `let`s learned by an earlier pass, keyed by the name's
    /// position (see `translate_body`).
    hints: HashMap<(usize, usize), ScalarTy>,
    /// The Rust name of the function being translated, to refuse direct recursion.
    function: String,
    /// The type arguments of the instance being translated.
    subst: Vec<(String, ScalarTy)>,
    /// `let`s whose type came only from a literal's default, by local.
    flexible: HashMap<Local, (usize, usize)>,
    /// Types this pass saw flexible locals meet.
    learned: HashMap<(usize, usize), ScalarTy>,
    /// The syntax span behind each MIR span, to report MIR-level checks at the source.
    syn_spans: HashMap<Span, SynSpan>,
}

/// A translated expression: its operand and scalar type, or nothing for `()`.
type Value = Option<(Operand, ScalarTy)>;

impl Builder {
    fn new(name: String, file: String) -> Builder {
        let mut b = Builder {
            body: Body {
                kind: BodyKind::Kernel,
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
            hints: HashMap::new(),
            function: String::new(),
            subst: Vec::new(),
            flexible: HashMap::new(),
            learned: HashMap::new(),
            syn_spans: HashMap::new(),
        };
        b.current = Some(b.new_block());
        b
    }

    fn finish(&mut self) -> Body {
        for (block, t) in self
            .body
            .blocks
            .iter_mut()
            .zip(std::mem::take(&mut self.terminators))
        {
            // A block nothing branches to and nothing terminated (after a `return`, say)
            // is unreachable.
            block.terminator = t.unwrap_or(Terminator {
                kind: TerminatorKind::Unreachable,
                span: Span::default(),
            });
        }
        std::mem::replace(
            &mut self.body,
            Body {
                kind: BodyKind::Kernel,
                name: String::new(),
                file: String::new(),
                locals: Vec::new(),
                arg_count: 0,
                blocks: Vec::new(),
            },
        )
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
        if let Some((_, s)) = name {
            self.syn_spans.entry(span_of(s)).or_insert(s);
        }
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
        self.syn_spans.entry(span_of(span)).or_insert(span);
        self.body.blocks[bb.index()].statements.push(Statement {
            place,
            rvalue,
            span: span_of(span),
            raw: false,
        });
    }

    fn terminate(&mut self, kind: TerminatorKind, span: SynSpan) {
        self.syn_spans.entry(span_of(span)).or_insert(span);
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

    /// `index` as a local, after a bounds check against the length of `container` (a
    /// slice, atomic or shared array): a device panic if it is not below.
    fn checked_index(&mut self, container: Local, index: Operand, span: SynSpan) -> Local {
        let index = self.as_local(index, ScalarTy::Usize, span);
        let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(container), span);
        self.bounds_check(index, len, span);
        index
    }

    /// Continues in a new block if `index < len`, else panics with the bounds-check message.
    fn bounds_check(&mut self, index: Local, len: Operand, span: SynSpan) {
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

    /// Translates a block; `expected` types its tail expression, if it has one.
    fn block(&mut self, block: &syn::Block, expected: Option<ScalarTy>) -> Result<Value> {
        self.scopes.push(HashMap::new());
        let mut result = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            result = None;
            match stmt {
                syn::Stmt::Local(local) => self.let_statement(local)?,
                syn::Stmt::Expr(e, semi) => {
                    let tail = last && semi.is_none();
                    let v = self.expr(e, if tail { expected } else { None })?;
                    if tail {
                        result = v;
                    }
                }
                syn::Stmt::Item(syn::Item::Const(c)) => self.const_item(c)?,
                syn::Stmt::Item(item) => {
                    return error(
                        item,
                        "items (functions, structs, `use`, ...) cannot be declared inside a kernel; declare them outside",
                    );
                }
                syn::Stmt::Macro(m) => {
                    self.macro_call(&m.mac)?;
                }
            }
        }
        self.scopes.pop();
        Ok(result)
    }

    fn let_statement(&mut self, local: &syn::Local) -> Result<()> {
        if self.shared_declaration(local)? {
            return Ok(());
        }
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(scalar_type(&t.ty, &self.subst)?)),
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
                let key = position(id.ident.span());
                let hinted = annotated.or_else(|| self.hints.get(&key).copied());
                let mut flexible = false;
                let (value, ty) = match (&local.init, hinted) {
                    (Some(init), expected) => {
                        let inferred = self.infer(&init.expr);
                        flexible = expected.is_none() && inferred.is_none();
                        let (op, ty) = self.scalar_expr(&init.expr, expected.or(inferred))?;
                        (Some(op), hinted.unwrap_or(ty))
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
                if flexible {
                    self.flexible.insert(l, key);
                }
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

    /// `const N: T = value;` inside a kernel: an immutable local (rustc has checked that
    /// the value is constant).
    fn const_item(&mut self, c: &syn::ItemConst) -> Result<()> {
        let ty = scalar_type(&c.ty, &self.subst)?;
        let (value, _) = self.scalar_expr(&c.expr, Some(ty))?;
        let l = self.declare(Ty::Scalar(ty), false, Some((&c.ident, c.ident.span())));
        self.push(Place::local(l), Rvalue::Use(value), c.span());
        self.bind(&c.ident, Binding::Local(l));
        Ok(())
    }

    /// Constants of the primitive types by path: `f32::consts::PI`, `f64::EPSILON`,
    /// `i32::MAX`, `u32::BITS`, with or without a `std::`/`core::` prefix. A single name
    /// that is a local is not a constant.
    fn path_constant(&self, path: &syn::Path) -> Option<Const> {
        if let Some(id) = path.get_ident()
            && self.lookup(id).is_some()
        {
            return None;
        }
        let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let names: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .skip_while(|n| *n == "std" || *n == "core")
            .collect();
        let resolve = |ty: &str| {
            self.subst
                .iter()
                .find(|(p, _)| p == ty)
                .map(|(_, t)| *t)
                .or_else(|| ScalarTy::from_name(ty))
        };
        let (ty, name) = match names[..] {
            [ty, "consts", name] | [ty, name] => (resolve(ty)?, name),
            _ => return None,
        };
        match name {
            "ZERO" => {
                return Some(if ty.is_float() {
                    Const::Float(0.0, ty)
                } else {
                    Const::Int(0, ty)
                });
            }
            "ONE" => {
                return Some(if ty.is_float() {
                    Const::Float(1.0, ty)
                } else {
                    Const::Int(1, ty)
                });
            }
            _ => {}
        }
        let float = |v32: f32, v64: f64| {
            Some(Const::Float(
                if ty == ScalarTy::F32 { v32 as f64 } else { v64 },
                ty,
            ))
        };
        if ty.is_float() {
            use std::{f32::consts as c32, f64::consts as c64};
            return match name {
                "PI" => float(c32::PI, c64::PI),
                "TAU" => float(c32::TAU, c64::TAU),
                "E" => float(c32::E, c64::E),
                "SQRT_2" => float(c32::SQRT_2, c64::SQRT_2),
                "LN_2" => float(c32::LN_2, c64::LN_2),
                "LN_10" => float(c32::LN_10, c64::LN_10),
                "LOG2_E" => float(c32::LOG2_E, c64::LOG2_E),
                "LOG10_E" => float(c32::LOG10_E, c64::LOG10_E),
                "FRAC_PI_2" => float(c32::FRAC_PI_2, c64::FRAC_PI_2),
                "FRAC_PI_4" => float(c32::FRAC_PI_4, c64::FRAC_PI_4),
                "FRAC_1_PI" => float(c32::FRAC_1_PI, c64::FRAC_1_PI),
                "FRAC_2_PI" => float(c32::FRAC_2_PI, c64::FRAC_2_PI),
                "FRAC_1_SQRT_2" => float(c32::FRAC_1_SQRT_2, c64::FRAC_1_SQRT_2),
                "MAX" => float(f32::MAX, f64::MAX),
                "MIN" => float(f32::MIN, f64::MIN),
                "MIN_POSITIVE" => float(f32::MIN_POSITIVE, f64::MIN_POSITIVE),
                "EPSILON" => float(f32::EPSILON, f64::EPSILON),
                "INFINITY" => float(f32::INFINITY, f64::INFINITY),
                "NEG_INFINITY" => float(f32::NEG_INFINITY, f64::NEG_INFINITY),
                "NAN" => float(f32::NAN, f64::NAN),
                _ => None,
            };
        }
        if !ty.is_integer() {
            return None;
        }
        let bits = ty.bits();
        match name {
            "MAX" if ty.is_signed() => Some(Const::Int((1i128 << (bits - 1)) - 1, ty)),
            "MIN" if ty.is_signed() => Some(Const::Int(-(1i128 << (bits - 1)), ty)),
            "MAX" => Some(Const::Int((1i128 << bits) - 1, ty)),
            "MIN" => Some(Const::Int(0, ty)),
            "BITS" => Some(Const::Int(bits as i128, ScalarTy::U32)),
            _ => None,
        }
    }

    /// A syntactic type guess used to type literals: the type an expression has if it can
    /// be told without translating it.
    fn infer(&self, e: &syn::Expr) -> Option<ScalarTy> {
        match e {
            syn::Expr::Lit(l) => literal_suffix_type(&l.lit),
            syn::Expr::Paren(p) => self.infer(&p.expr),
            syn::Expr::Group(g) => self.infer(&g.expr),
            syn::Expr::Cast(c) => scalar_type(&c.ty, &self.subst).ok(),
            syn::Expr::Path(p) if self.path_constant(&p.path).is_some() => {
                self.path_constant(&p.path).map(|c| c.ty())
            }
            syn::Expr::Path(p) => match self.lookup(p.path.get_ident()?)? {
                Binding::Local(l) if self.flexible.contains_key(&l) => None,
                Binding::Local(l) => self.body.locals[l.index()].ty.scalar(),
                Binding::RegionElement { .. } | Binding::RegionChunk { .. } => None,
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
                        Binding::Local(_) | Binding::RegionChunk { .. } => None,
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
                    Binding::RegionChunk { region, .. } => {
                        self.body.locals[region.index()].ty.element()
                    }
                    Binding::RegionElement { .. } => None,
                }
            }
            syn::Expr::MethodCall(m) if m.method == "get_clamped" => {
                let syn::Expr::Path(p) = &*m.receiver else {
                    return None;
                };
                match self.lookup(p.path.get_ident()?)? {
                    Binding::Local(l) => self.body.locals[l.index()].ty.element(),
                    _ => None,
                }
            }
            syn::Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "row" | "col" | "width" | "height"
                ) =>
            {
                Some(ScalarTy::Usize)
            }
            syn::Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "leading_zeros" | "trailing_zeros" | "count_ones"
                ) =>
            {
                Some(ScalarTy::U32)
            }
            syn::Expr::MethodCall(m) if self.atomic_receiver(&m.receiver).is_some() => {
                let atomic = self
                    .atomic_receiver(&m.receiver)
                    .expect("checked by the guard");
                if m.method == "len" {
                    Some(ScalarTy::Usize)
                } else {
                    self.body.locals[atomic.index()].ty.element()
                }
            }
            syn::Expr::MethodCall(m) if m.method != "index" && m.method != "len" => {
                self.infer(&m.receiver)
            }
            syn::Expr::Match(m) => m.arms.iter().find_map(|arm| self.infer(&arm.body)),
            syn::Expr::Call(c) if matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| Position::ALL.iter().any(|q| s.ident == q.name()))) => {
                Some(ScalarTy::Usize)
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
            Some((op, ty)) => {
                if let Some(want) = expected {
                    self.learn(&op, ty, want);
                }
                Ok((op, ty))
            }
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
            syn::Expr::Path(p) if self.path_constant(&p.path).is_some() => {
                let c = self.path_constant(&p.path).expect("checked by the guard");
                Ok(Some((Operand::Const(c), c.ty())))
            }
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
                let to = scalar_type(&c.ty, &self.subst)?;
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
                if let Some(rty) = self.infer(&a.right) {
                    self.learn(&Operand::Copy(place), ty, rty);
                }
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
                self.block(&b.block, expected)
            }
            // The raw shared-memory API is `unsafe`; rustc checks the block, and the
            // race check skips what the raw calls do.
            syn::Expr::Unsafe(u) => self.block(&u.block, expected),
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
                match (&r.expr, self.body.kind) {
                    (Some(v), BodyKind::Kernel) => {
                        return error(v, "kernels return nothing; write results into a `Region`");
                    }
                    (Some(v), BodyKind::Device) => {
                        let ret = self.body.locals[0]
                            .ty
                            .scalar()
                            .expect("device functions return scalars");
                        let (op, _) = self.scalar_expr(v, Some(ret))?;
                        self.push(Place::local(Local::RETURN), Rvalue::Use(op), span);
                    }
                    (None, BodyKind::Device) => {
                        return error(e, "a device function must return a value");
                    }
                    (None, BodyKind::Kernel) => {}
                }
                self.terminate(TerminatorKind::Return, span);
                Ok(None)
            }
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Macro(m) => self.macro_call(&m.mac),
            syn::Expr::Closure(_) => error(
                e,
                "closures are not supported in kernels; use a plain loop or an `#[offload_device]` helper",
            ),
            syn::Expr::Call(c) => self.call(c, expected),
            syn::Expr::Reference(_) => error(e, "taking references is not supported in kernels"),
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::Match(m) => self.match_expr(m, expected),
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
            return error(b.op, "this operator is not supported in kernels");
        };
        if compound {
            let (place, ty) = self.assignable_place(&b.left)?;
            if !op.is_shift()
                && let Some(rty) = self.infer(&b.right)
            {
                self.learn(&Operand::Copy(place), ty, rty);
            }
            let rhs_ty = if op.is_shift() {
                self.infer(&b.right)
            } else {
                Some(ty)
            };
            let (rhs, _) = self.scalar_expr(&b.right, rhs_ty)?;
            self.checked_division(op, Operand::Copy(place), rhs, ty, b.right.span())?;
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
        let (rhs, rty) = self.scalar_expr(&b.right, rhs_expected)?;
        if !op.is_shift() && rty != lty {
            self.learn(&lhs, lty, rty);
            self.learn(&rhs, rty, lty);
        }
        self.checked_division(op, lhs, rhs, lty, b.right.span())?;
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

    /// Integer division and remainder by zero panic in Rust, and so does signed `MIN / -1`
    /// (which overflows); emit both checks, skipping those a constant divisor settles.
    fn checked_division(
        &mut self,
        op: BinOp,
        lhs: Operand,
        rhs: Operand,
        ty: ScalarTy,
        span: SynSpan,
    ) -> Result<()> {
        if !matches!(op, BinOp::Div | BinOp::Rem) || !ty.is_integer() {
            return Ok(());
        }
        let divisor = match rhs {
            Operand::Const(Const::Int(v, _)) => Some(v),
            _ => None,
        };
        let is_div = op == BinOp::Div;
        if divisor.is_none_or(|v| v == 0) {
            let nonzero = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Ne, rhs, Operand::Const(Const::Int(0, ty))),
                span,
            );
            let message = if is_div {
                "attempt to divide by zero"
            } else {
                "attempt to calculate the remainder with a divisor of zero"
            };
            self.assert(nonzero, message, span);
        }
        if ty.is_signed() && divisor.is_none_or(|v| v == -1) {
            let min = -(1i128 << (ty.bits() - 1));
            let minus_one = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Eq, rhs, Operand::Const(Const::Int(-1, ty))),
                span,
            );
            let is_min = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::Eq, lhs, Operand::Const(Const::Int(min, ty))),
                span,
            );
            let both = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::BitAnd, minus_one, is_min),
                span,
            );
            let fine = self.assign_temp(ScalarTy::Bool, Rvalue::UnaryOp(UnOp::Not, both), span);
            let message = if is_div {
                "attempt to divide with overflow"
            } else {
                "attempt to calculate the remainder with overflow"
            };
            self.assert(fine, message, span);
        }
        Ok(())
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
        self.loop_body(w.label.as_ref(), &w.body, exit, head, span)?;
        self.current = Some(exit);
        Ok(None)
    }

    /// Translates a loop's body, with `break` going to `break_to` and `continue` (and the
    /// end of the body) to `continue_to`.
    fn loop_body(
        &mut self,
        label: Option<&syn::Label>,
        body: &syn::Block,
        break_to: BasicBlock,
        continue_to: BasicBlock,
        span: SynSpan,
    ) -> Result<()> {
        self.loops.push(LoopTarget {
            label: label.map(|l| l.name.ident.to_string()),
            break_to,
            continue_to,
        });
        let translated = self.block(body, None);
        self.loops.pop();
        translated?;
        self.goto(continue_to, span);
        Ok(())
    }

    fn loop_expr(&mut self, l: &syn::ExprLoop) -> Result<Value> {
        let span = l.loop_token.span;
        let (body, exit) = (self.new_block(), self.new_block());
        self.goto(body, span);
        self.current = Some(body);
        self.loop_body(l.label.as_ref(), &l.body, exit, body, span)?;
        self.current = Some(exit);
        Ok(None)
    }

    fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<ScalarTy>) -> Result<Value> {
        let span = i.if_token.span;
        let (then_bb, else_bb, join) = (self.new_block(), self.new_block(), self.new_block());
        self.scopes.push(HashMap::new());
        let then_start = if let syn::Expr::Let(l) = &*i.cond {
            self.region_get_mut(l, then_bb, else_bb)?
        } else {
            let (cond, _) = self.scalar_expr(&i.cond, Some(ScalarTy::Bool))?;
            self.switch_bool(cond, then_bb, else_bb, span);
            then_bb
        };
        // The result temporary is made when the first branch yields a value, so its type
        // is that value's (literals included) unless the context expects one.
        let mut result: Option<(Local, ScalarTy)> = None;
        self.current = Some(then_start);
        let then_expected = if i.else_branch.is_some() {
            expected
        } else {
            None
        };
        let v = self.block(&i.then_branch, then_expected)?;
        self.scopes.pop();
        if i.else_branch.is_some() {
            self.store_result(&mut result, v, span);
        }
        self.goto(join, span);
        self.current = Some(else_bb);
        if let Some((_, else_expr)) = &i.else_branch {
            let v = self.expr(else_expr, result.map(|r| r.1).or(expected))?;
            self.store_result(&mut result, v, span);
        }
        self.goto(join, span);
        self.current = Some(join);
        Ok(result.map(|(r, t)| (Operand::Copy(Place::local(r)), t)))
    }

    /// Assigns a branch's value to the shared result temporary, making it on first use.
    fn store_result(
        &mut self,
        result: &mut Option<(Local, ScalarTy)>,
        value: Value,
        span: SynSpan,
    ) {
        if let Some((op, ty)) = value {
            let (r, _) = *result.get_or_insert_with(|| (self.temp(ty), ty));
            self.push(Place::local(r), Rvalue::Use(op), span);
        }
    }

    /// `if let Some(v) = region.get_mut()`: the thread owns an element iff its index is
    /// below the region's length. Returns the block where the `then` branch goes on.
    fn region_get_mut(
        &mut self,
        l: &syn::ExprLet,
        then_bb: BasicBlock,
        else_bb: BasicBlock,
    ) -> Result<BasicBlock> {
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
        if m.method == "get" && m.args.len() == 2 {
            return self.stencil_get(m, binding, then_bb, else_bb);
        }
        if m.method != "get_mut" || !m.args.is_empty() {
            return error(&l.expr, FORM);
        }
        let region = self.region_receiver(&m.receiver)?;
        let span = m.method.span();
        let strategy = self.strategy_of(region);
        let index = self.temp(ScalarTy::Usize);
        self.push(Place::local(index), Rvalue::RegionIndex(region), span);
        let lt = |b: &mut Self, a: Operand, c: Operand| {
            b.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Lt, a, c), span)
        };
        let owned = match strategy {
            Strategy::Linear1D | Strategy::Chunked(_) => {
                let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(region), span);
                lt(self, Operand::Copy(Place::local(index)), len)
            }
            Strategy::Linear2D => {
                let (col, row) = (self.coord(region, 0, span), self.coord(region, 1, span));
                let (width, height) = (self.extent(region, 0, span), self.extent(region, 1, span));
                let in_row = lt(self, col, width);
                let in_col = lt(self, row, height);
                self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::BitAnd, in_row, in_col),
                    span,
                )
            }
            Strategy::Stencil2D(_) => {
                return error(
                    &m.method,
                    "a `Stencil2D` region is read-only: read it with `get(dr, dc)` or `get_clamped(dr, dc)`",
                );
            }
        };
        self.switch_bool(owned, then_bb, else_bb, span);
        if let Strategy::Chunked(n) = strategy {
            // The chunk is `min(N, len - start)` long; this branch has `start < len`.
            self.current = Some(then_bb);
            let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(region), span);
            let left = self.assign_temp(
                ScalarTy::Usize,
                Rvalue::BinaryOp(BinOp::Sub, len, Operand::Copy(Place::local(index))),
                span,
            );
            let chunk = self.intrinsic(
                Intrinsic::Min,
                vec![left, Operand::Const(Const::Int(n as i128, ScalarTy::Usize))],
                span,
            )?;
            let chunk_len = self.as_local(chunk, ScalarTy::Usize, span);
            self.bind(
                binding,
                Binding::RegionChunk {
                    region,
                    start: index,
                    len: chunk_len,
                },
            );
            // The caller continues translating `then_bb`, now past these statements.
            return Ok(then_bb);
        }
        self.bind(binding, Binding::RegionElement { region, index });
        Ok(then_bb)
    }

    fn strategy_of(&self, region: Local) -> Strategy {
        match self.body.locals[region.index()].ty {
            Ty::Region(_, s) => s,
            _ => unreachable!("region_receiver only returns regions"),
        }
    }

    fn coord(&mut self, region: Local, dim: u8, span: SynSpan) -> Operand {
        self.assign_temp(ScalarTy::Usize, Rvalue::RegionCoord(region, dim), span)
    }

    fn extent(&mut self, region: Local, dim: u8, span: SynSpan) -> Operand {
        self.assign_temp(ScalarTy::Usize, Rvalue::RegionExtent(region, dim), span)
    }

    /// The linear index of the neighbour (`dr` rows, `dc` columns away) of this thread's
    /// element in a `Stencil2D<R>` region, and whether it is inside the region. Offsets
    /// beyond the radius are a compile error when constant and a device panic otherwise.
    /// With `clamp`, out-of-range coordinates are clamped to the edge instead.
    fn stencil_neighbour(
        &mut self,
        m: &syn::ExprMethodCall,
        clamp: bool,
    ) -> Result<(Local, Local, Option<Operand>)> {
        let region = self.region_receiver(&m.receiver)?;
        let span = m.method.span();
        let Strategy::Stencil2D(radius) = self.strategy_of(region) else {
            return error(
                &m.method,
                format!("`{}` reads a `Stencil2D` region", m.method),
            );
        };
        let mut offsets = Vec::new();
        for arg in &m.args {
            let constant = match strip_parens(arg) {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse::<i64>().ok(),
                syn::Expr::Unary(syn::ExprUnary {
                    op: syn::UnOp::Neg(_),
                    expr,
                    ..
                }) => match &**expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<i64>().ok().map(|v| -v),
                    _ => None,
                },
                _ => None,
            };
            if let Some(c) = constant
                && c.unsigned_abs() > radius as u64
            {
                return error(
                    arg,
                    format!("offset {c} is outside the stencil's radius {radius}"),
                );
            }
            let (off, _) = self.scalar_expr(arg, Some(ScalarTy::Isize))?;
            if constant.is_none() {
                let abs = self.intrinsic(Intrinsic::Abs, vec![off], span)?;
                let within = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(
                        BinOp::Le,
                        abs,
                        Operand::Const(Const::Int(radius as i128, ScalarTy::Isize)),
                    ),
                    span,
                );
                self.assert(within, "stencil offset outside the region's radius", span);
            }
            offsets.push(off);
        }
        let mut coords = Vec::new();
        let mut inside: Option<Operand> = None;
        // Row first (dimension 1, offset `dr`), then column (dimension 0, offset `dc`).
        for (dim, off) in [(1u8, offsets[0]), (0u8, offsets[1])] {
            let here = self.coord(region, dim, span);
            let here = self.cast_operand(here, ScalarTy::Usize, ScalarTy::Isize, span);
            let extent = self.extent(region, dim, span);
            let extent = self.cast_operand(extent, ScalarTy::Usize, ScalarTy::Isize, span);
            let at = self.assign_temp(
                ScalarTy::Isize,
                Rvalue::BinaryOp(BinOp::Add, here, off),
                span,
            );
            let at = if clamp {
                let last = self.assign_temp(
                    ScalarTy::Isize,
                    Rvalue::BinaryOp(
                        BinOp::Sub,
                        extent,
                        Operand::Const(Const::Int(1, ScalarTy::Isize)),
                    ),
                    span,
                );
                let low = self.intrinsic(
                    Intrinsic::Max,
                    vec![at, Operand::Const(Const::Int(0, ScalarTy::Isize))],
                    span,
                )?;
                self.intrinsic(Intrinsic::Min, vec![low, last], span)?
            } else {
                let nonneg = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(
                        BinOp::Ge,
                        at,
                        Operand::Const(Const::Int(0, ScalarTy::Isize)),
                    ),
                    span,
                );
                let below = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::Lt, at, extent),
                    span,
                );
                let ok = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::BitAnd, nonneg, below),
                    span,
                );
                inside = Some(match inside {
                    Some(prev) => self.assign_temp(
                        ScalarTy::Bool,
                        Rvalue::BinaryOp(BinOp::BitAnd, prev, ok),
                        span,
                    ),
                    None => ok,
                });
                at
            };
            coords.push(self.cast_operand(at, ScalarTy::Isize, ScalarTy::Usize, span));
        }
        let width = self.extent(region, 0, span);
        let row_start = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(BinOp::Mul, coords[0], width),
            span,
        );
        let index = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(BinOp::Add, row_start, coords[1]),
            span,
        );
        let index = self.as_local(index, ScalarTy::Usize, span);
        Ok((region, index, inside))
    }

    /// `if let Some(v) = stencil.get(dr, dc)`: `v` is the neighbour's value when it is
    /// inside the region.
    fn stencil_get(
        &mut self,
        m: &syn::ExprMethodCall,
        binding: &syn::Ident,
        then_bb: BasicBlock,
        else_bb: BasicBlock,
    ) -> Result<BasicBlock> {
        let span = m.method.span();
        let (region, index, inside) = self.stencil_neighbour(m, false)?;
        let inside = inside.expect("unclamped reads test the edges");
        self.switch_bool(inside, then_bb, else_bb, span);
        self.current = Some(then_bb);
        let elem = self.body.locals[region.index()]
            .ty
            .element()
            .expect("a region has elements");
        let value = self.declare(Ty::Scalar(elem), false, Some((binding, binding.span())));
        // Inside the region the index is in bounds; the check states it for the safety
        // verifier (and catches a region with no rows).
        let index = self.checked_index(region, Operand::Copy(Place::local(index)), span);
        self.push(
            Place::local(value),
            Rvalue::Use(Operand::Copy(Place::element(region, index))),
            span,
        );
        self.bind(binding, Binding::Local(value));
        Ok(self.current.expect("the read was just pushed"))
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
        if let Some(atomic) = self.atomic_receiver(&m.receiver) {
            return self.atomic_call(m, atomic);
        }
        if let Some(shared) = self.shared_receiver(&m.receiver) {
            return self.shared_call(m, shared);
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
                    Some(Binding::RegionChunk { len, .. }) => {
                        Ok(Some((Operand::Copy(Place::local(len)), ScalarTy::Usize)))
                    }
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
            "row" | "col" | "width" | "height" if m.args.is_empty() => {
                let region = self.region_receiver(&m.receiver)?;
                if !self.strategy_of(region).is_2d() {
                    return error(
                        &m.method,
                        format!("`{name}()` is defined on `Linear2D` and `Stencil2D` regions"),
                    );
                }
                let v = match name.as_str() {
                    "col" => self.coord(region, 0, span),
                    "row" => self.coord(region, 1, span),
                    "width" => self.extent(region, 0, span),
                    _ => self.extent(region, 1, span),
                };
                Ok(Some((v, ScalarTy::Usize)))
            }
            "get_clamped" if m.args.len() == 2 => {
                let (region, index, _) = self.stencil_neighbour(m, true)?;
                let elem = self.body.locals[region.index()]
                    .ty
                    .element()
                    .expect("a region has elements");
                // Clamped coordinates are in bounds unless the region is empty.
                let index = self.checked_index(region, Operand::Copy(Place::local(index)), span);
                Ok(Some((Operand::Copy(Place::element(region, index)), elem)))
            }
            "wrapping_add" | "wrapping_sub" | "wrapping_mul" if m.args.len() == 1 => {
                // Kernel integer arithmetic already wraps.
                let op = match name.as_str() {
                    "wrapping_add" => BinOp::Add,
                    "wrapping_sub" => BinOp::Sub,
                    _ => BinOp::Mul,
                };
                let ty = self.infer(&m.receiver).or_else(|| self.infer(&m.args[0]));
                let (a, t) = self.scalar_expr(&m.receiver, ty)?;
                let (b, _) = self.scalar_expr(&m.args[0], Some(t))?;
                if !t.is_integer() {
                    return error(
                        &m.method,
                        format!("`{name}` is defined on integers, not `{t}`"),
                    );
                }
                Ok(Some((
                    self.assign_temp(t, Rvalue::BinaryOp(op, a, b), span),
                    t,
                )))
            }
            "clamp" if m.args.len() == 2 => {
                // `x.clamp(lo, hi)` is `max(lo)` then `min(hi)`; Rust panics when
                // `lo > hi` (or either is NaN), and so do kernels.
                let ty = self.infer(&m.receiver).or_else(|| self.infer(&m.args[0]));
                let (x, t) = self.scalar_expr(&m.receiver, ty)?;
                let (lo, _) = self.scalar_expr(&m.args[0], Some(t))?;
                let (hi, _) = self.scalar_expr(&m.args[1], Some(t))?;
                let ordered =
                    self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Le, lo, hi), span);
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
            "pow" if m.args.len() == 1 => {
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
            _ => match Intrinsic::from_name(&name) {
                Some(intrinsic) if m.args.len() + 1 == intrinsic.arity() => {
                    let ty = self.infer(&m.receiver);
                    let (receiver, t) = self.scalar_expr(&m.receiver, ty)?;
                    let mut args = vec![receiver];
                    for (i, arg) in m.args.iter().enumerate() {
                        let _ = i;
                        let expected = if intrinsic == Intrinsic::Powi {
                            ScalarTy::I32
                        } else {
                            t
                        };
                        args.push(self.scalar_expr(arg, Some(expected))?.0);
                    }
                    let result = self.intrinsic(intrinsic, args, span)?;
                    let result_ty = self.operand_type(&result);
                    Ok(Some((result, result_ty)))
                }
                _ => error(
                    &m.method,
                    format!(
                        "the method `{name}` is not supported in kernels; supported: `Region::index`, `Region::get_mut`, \
                         `len`, the float methods `sqrt exp exp2 ln log2 log10 sin cos tan tanh floor ceil round trunc abs \
                         min max powf powi mul_add clamp`, and the integer methods `min max abs pow clamp wrapping_add \
                         wrapping_sub wrapping_mul leading_zeros trailing_zeros count_ones`"
                    ),
                ),
            },
        }
    }

    /// Records that `op`, of type `have`, met a value of type `want`: if `op` is a local
    /// typed only by a literal's default, the next pass gives it `want`.
    fn learn(&mut self, op: &Operand, have: ScalarTy, want: ScalarTy) {
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

    /// Integer `base.pow(exp)` by square-and-multiply, wrapping like rustc in release.
    fn int_pow(&mut self, base: Operand, exp: Operand, ty: ScalarTy, span: SynSpan) -> Operand {
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

    fn atomic_receiver(&self, e: &syn::Expr) -> Option<Local> {
        let syn::Expr::Path(p) = e else { return None };
        match self.lookup(p.path.get_ident()?)? {
            Binding::Local(l) if matches!(self.body.locals[l.index()].ty, Ty::Atomic(_)) => Some(l),
            _ => None,
        }
    }

    /// `a.fetch_add(i, v)` and the other atomic operations on an `Atomic<T>` parameter:
    /// the index is bounds-checked, the result is the element's previous value.
    fn atomic_call(&mut self, m: &syn::ExprMethodCall, atomic: Local) -> Result<Value> {
        let span = m.method.span();
        let name = m.method.to_string();
        let elem = self.body.locals[atomic.index()]
            .ty
            .element()
            .expect("atomics have elements");
        if name == "len" && m.args.is_empty() {
            return Ok(Some((
                self.assign_temp(ScalarTy::Usize, Rvalue::Len(atomic), span),
                ScalarTy::Usize,
            )));
        }
        let op = match name.as_str() {
            "fetch_add" | "fetch_sub" => Some(AtomicOp::Add),
            "fetch_min" => Some(AtomicOp::Min),
            "fetch_max" => Some(AtomicOp::Max),
            "fetch_and" => Some(AtomicOp::And),
            "fetch_or" => Some(AtomicOp::Or),
            "fetch_xor" => Some(AtomicOp::Xor),
            "swap" => Some(AtomicOp::Exchange),
            "compare_and_swap" => None,
            _ => {
                return error(
                    &m.method,
                    format!(
                        "`{name}` is not an atomic operation; supported: fetch_add fetch_sub fetch_min fetch_max fetch_and fetch_or fetch_xor swap compare_and_swap len"
                    ),
                );
            }
        };
        let arity = if op.is_some() { 2 } else { 3 };
        if m.args.len() != arity {
            return error(
                m,
                format!(
                    "`{name}` takes {arity} arguments: the index, then the value{}",
                    if arity == 3 { "s" } else { "" }
                ),
            );
        }
        if let Some(op) = op
            && !op.supports(elem)
        {
            return error(
                &m.method,
                format!(
                    "`{name}` is not defined on `Atomic<{elem}>`; floats support `fetch_add` and `fetch_sub`"
                ),
            );
        }
        let (index, _) = self.scalar_expr(&m.args[0], Some(ScalarTy::Usize))?;
        let index = self.checked_index(atomic, index, m.span());
        let place = Place::element(atomic, index);
        let (value, _) = self.scalar_expr(&m.args[1], Some(elem))?;
        let rvalue = match op {
            Some(op) => {
                // `fetch_sub(v)` is `fetch_add(-v)`: wrapping for integers, exact for floats.
                let value = if name == "fetch_sub" {
                    let negated = if elem.is_float() {
                        Rvalue::UnaryOp(UnOp::Neg, value)
                    } else {
                        Rvalue::BinaryOp(BinOp::Sub, Operand::Const(Const::Int(0, elem)), value)
                    };
                    self.assign_temp(elem, negated, span)
                } else {
                    value
                };
                Rvalue::AtomicRmw(op, place, value)
            }
            None => {
                let (new, _) = self.scalar_expr(&m.args[2], Some(elem))?;
                Rvalue::AtomicCas(place, value, new)
            }
        };
        Ok(Some((self.assign_temp(elem, rvalue, span), elem)))
    }

    /// Evaluates an intrinsic into a temporary, checking its operand types.
    fn intrinsic(
        &mut self,
        intrinsic: Intrinsic,
        args: Vec<Operand>,
        span: SynSpan,
    ) -> Result<Operand> {
        let types: Vec<ScalarTy> = args.iter().map(|a| self.operand_type(a)).collect();
        let ty = intrinsic
            .result_type(&types)
            .map_err(|message| TranslateError { span, message })?;
        Ok(self.assign_temp(ty, Rvalue::Intrinsic(intrinsic, args), span))
    }

    fn operand_type(&self, op: &Operand) -> ScalarTy {
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

    /// Ends the current block with a check of `cond` that panics with `message`.
    fn assert(&mut self, cond: Operand, message: &str, span: SynSpan) {
        let next = self.new_block();
        self.terminate(
            TerminatorKind::Assert {
                cond,
                msg: AssertMessage::Panic(message.into()),
                target: next,
            },
            span,
        );
        self.current = Some(next);
    }

    /// `for PAT in a..b`, `a..=b`, or either `.step_by(s)`. The latch compares the
    /// distance left with the step before adding it, so the counter never overflows, even
    /// for `a..=T::MAX`.
    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Value> {
        const FORM: &str =
            "`for` loops must iterate over a range: `a..b`, `a..=b`, or `(a..b).step_by(s)`";
        let span = f.for_token.span;
        let (range, step) = match &*f.expr {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (strip_parens(&m.receiver), Some(&m.args[0]))
            }
            other => (strip_parens(other), None),
        };
        let syn::Expr::Range(range) = range else {
            return error(&f.expr, FORM);
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return error(range, "`for` loops need a range with both ends");
        };
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        // A counter typed only by literal bounds (`for d in -1..=1`) takes the type its
        // uses ask for in the next pass, as an unannotated `let` does.
        let key = match &*f.pat {
            syn::Pat::Ident(id) => Some(position(id.ident.span())),
            _ => None,
        };
        let hinted = key.and_then(|k| self.hints.get(&k).copied());
        let inferred = self.infer(start).or_else(|| self.infer(end));
        let flexible = hinted.is_none() && inferred.is_none();
        let ty = hinted.or(inferred);
        let (start, ty) = self.scalar_expr(start, ty)?;
        let (end, _) = self.scalar_expr(end, Some(ty))?;
        if !ty.is_integer() {
            return error(
                range,
                format!("`for` ranges must be of integers, found `{ty}`"),
            );
        }
        let unsigned = unsigned_of(ty);
        let step = match step {
            Some(s) => {
                let (s, sty) = self.scalar_expr(s, Some(ScalarTy::Usize))?;
                let nonzero = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::Ne, s, Operand::Const(Const::Int(0, sty))),
                    span,
                );
                self.assert(nonzero, "assertion failed: step != 0", span);
                let step = self.cast_operand(s, sty, unsigned, span);
                // A step wider than the counter's range ends the loop after one pass.
                Some(step)
            }
            None => None,
        };
        let counter = self.temp(ty);
        self.push(Place::local(counter), Rvalue::Use(start), span);
        let end_local = self.as_local(end, ty, span);
        let (head, body, latch, exit) = (
            self.new_block(),
            self.new_block(),
            self.new_block(),
            self.new_block(),
        );
        self.goto(head, span);
        self.current = Some(head);
        let cmp = if inclusive { BinOp::Le } else { BinOp::Lt };
        let go = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(
                cmp,
                Operand::Copy(Place::local(counter)),
                Operand::Copy(Place::local(end_local)),
            ),
            span,
        );
        self.switch_bool(go, body, exit, span);

        self.current = Some(body);
        self.scopes.push(HashMap::new());
        match &*f.pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                let l = self.declare(
                    Ty::Scalar(ty),
                    id.mutability.is_some(),
                    Some((&id.ident, id.ident.span())),
                );
                self.push(
                    Place::local(l),
                    Rvalue::Use(Operand::Copy(Place::local(counter))),
                    id.ident.span(),
                );
                self.bind(&id.ident, Binding::Local(l));
                if flexible && let Some(key) = key {
                    self.flexible.insert(l, key);
                }
            }
            syn::Pat::Wild(_) => {}
            other => return error(other, "`for` loops bind a plain name or `_`"),
        }
        self.loop_body(f.label.as_ref(), &f.body, exit, latch, span)?;
        self.scopes.pop();

        // latch: left = end - counter (as unsigned); stop if the step would reach or pass
        // the end, else advance.
        self.current = Some(latch);
        let diff = self.assign_temp(
            ty,
            Rvalue::BinaryOp(
                BinOp::Sub,
                Operand::Copy(Place::local(end_local)),
                Operand::Copy(Place::local(counter)),
            ),
            span,
        );
        let left = self.cast_operand(diff, ty, unsigned, span);
        let step_op = step.unwrap_or(Operand::Const(Const::Int(1, unsigned)));
        let stop_cmp = if inclusive { BinOp::Lt } else { BinOp::Le };
        let stop = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(stop_cmp, left, step_op),
            span,
        );
        let advance = self.new_block();
        self.switch_bool(stop, exit, advance, span);
        self.current = Some(advance);
        let step_in_ty = self.cast_operand(step_op, unsigned, ty, span);
        self.push(
            Place::local(counter),
            Rvalue::BinaryOp(BinOp::Add, Operand::Copy(Place::local(counter)), step_in_ty),
            span,
        );
        self.goto(head, span);
        self.current = Some(exit);
        Ok(None)
    }

    fn cast_operand(
        &mut self,
        op: Operand,
        from: ScalarTy,
        to: ScalarTy,
        span: SynSpan,
    ) -> Operand {
        if from == to {
            return op;
        }
        if let Operand::Const(Const::Int(v, _)) = op
            && to.is_integer()
        {
            return Operand::Const(Const::Int(wrap_to(v, to), to));
        }
        self.assign_temp(to, Rvalue::Cast(op, to), span)
    }

    /// `match` on an integer (or `bool`) with literal, range, `|` and `_` patterns, and
    /// `if` guards. Arms are tested in order, as Rust does.
    fn match_expr(&mut self, m: &syn::ExprMatch, expected: Option<ScalarTy>) -> Result<Value> {
        let span = m.match_token.span;
        let ty = self.infer(&m.expr);
        let (scrutinee, ty) = self.scalar_expr(&m.expr, ty)?;
        if ty.is_float() {
            return error(
                &m.expr,
                "`match` on floats is not supported; use `if`/`else`",
            );
        }
        let scrutinee = self.as_local(scrutinee, ty, span);
        let mut result: Option<(Local, ScalarTy)> = None;
        let join = self.new_block();
        for arm in &m.arms {
            let arm_block = self.new_block();
            let next = self.new_block();
            self.scopes.push(HashMap::new());
            self.pattern_test(&arm.pat, scrutinee, ty, arm_block, next)?;
            self.current = Some(arm_block);
            if let Some((_, guard)) = &arm.guard {
                let (g, _) = self.scalar_expr(guard, Some(ScalarTy::Bool))?;
                let guarded = self.new_block();
                self.switch_bool(g, guarded, next, guard.span());
                self.current = Some(guarded);
            }
            let v = self.expr(&arm.body, result.map(|r| r.1).or(expected))?;
            self.store_result(&mut result, v, arm.body.span());
            self.scopes.pop();
            self.goto(join, span);
            self.current = Some(next);
        }
        // rustc accepted the match, so it is exhaustive: falling through is impossible.
        self.terminate(TerminatorKind::Unreachable, span);
        self.current = Some(join);
        Ok(result.map(|(r, t)| (Operand::Copy(Place::local(r)), t)))
    }

    /// Branches to `matched` if `scrutinee` matches `pat`, else to `unmatched`.
    fn pattern_test(
        &mut self,
        pat: &syn::Pat,
        scrutinee: Local,
        ty: ScalarTy,
        matched: BasicBlock,
        unmatched: BasicBlock,
    ) -> Result<()> {
        let span = pat.span();
        let value = Operand::Copy(Place::local(scrutinee));
        match pat {
            syn::Pat::Wild(_) => self.goto(matched, span),
            syn::Pat::Ident(id) if id.subpat.is_none() && id.by_ref.is_none() => {
                let l = self.declare(
                    Ty::Scalar(ty),
                    id.mutability.is_some(),
                    Some((&id.ident, id.ident.span())),
                );
                self.push(Place::local(l), Rvalue::Use(value), span);
                self.bind(&id.ident, Binding::Local(l));
                self.goto(matched, span);
            }
            syn::Pat::Lit(_) | syn::Pat::Range(_) | syn::Pat::Paren(_) => {
                let cond = self.pattern_condition(pat, value, ty)?;
                self.switch_bool(cond, matched, unmatched, span);
            }
            syn::Pat::Or(or) => {
                for case in &or.cases {
                    let next = self.new_block();
                    let cond = self.pattern_condition(case, value, ty)?;
                    self.switch_bool(cond, matched, next, span);
                    self.current = Some(next);
                }
                self.goto(unmatched, span);
            }
            other => {
                return error(
                    other,
                    "`match` patterns in kernels are integer literals, ranges (`a..=b`), `|`, `_` or a name",
                );
            }
        }
        Ok(())
    }

    fn pattern_condition(
        &mut self,
        pat: &syn::Pat,
        value: Operand,
        ty: ScalarTy,
    ) -> Result<Operand> {
        let span = pat.span();
        match pat {
            syn::Pat::Paren(p) => self.pattern_condition(&p.pat, value, ty),
            syn::Pat::Lit(l) => {
                let (c, _) = self.scalar_expr(&syn::Expr::Lit(l.clone()), Some(ty))?;
                Ok(self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Eq, value, c), span))
            }
            syn::Pat::Range(r) => {
                let mut cond: Option<Operand> = None;
                if let Some(start) = &r.start {
                    let (lo, _) = self.scalar_expr(start, Some(ty))?;
                    cond = Some(self.assign_temp(
                        ScalarTy::Bool,
                        Rvalue::BinaryOp(BinOp::Ge, value, lo),
                        span,
                    ));
                }
                if let Some(end) = &r.end {
                    let (hi, _) = self.scalar_expr(end, Some(ty))?;
                    let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                        BinOp::Le
                    } else {
                        BinOp::Lt
                    };
                    let below =
                        self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, value, hi), span);
                    cond = Some(match cond {
                        Some(c) => self.assign_temp(
                            ScalarTy::Bool,
                            Rvalue::BinaryOp(BinOp::BitAnd, c, below),
                            span,
                        ),
                        None => below,
                    });
                }
                Ok(cond.unwrap_or(Operand::Const(Const::Bool(true))))
            }
            other => error(
                other,
                "nested patterns other than literals and ranges are not supported in kernels",
            ),
        }
    }

    /// `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!` and their
    /// `debug_` forms (checked in kernels always). Messages must be string literals
    /// without format arguments.
    fn macro_call(&mut self, mac: &syn::Macro) -> Result<Value> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let span = mac.span();
        let args: Vec<syn::Expr> = if mac.tokens.is_empty() {
            Vec::new()
        } else {
            mac.parse_body_with(
                syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
            )
            .map_err(|e| TranslateError {
                span: e.span(),
                message: e.to_string(),
            })?
            .into_iter()
            .collect()
        };
        let message = |args: &[syn::Expr], default: String| -> Result<String> {
            match args {
                [] => Ok(default),
                [
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }),
                ] if !s.value().contains('{') => Ok(s.value()),
                [first, ..] => error(
                    first,
                    "panic messages in kernels must be a string literal without format arguments",
                ),
            }
        };
        match name.trim_start_matches("debug_") {
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                let default = match name.as_str() {
                    "panic" => "explicit panic",
                    "unreachable" => "internal error: entered unreachable code",
                    "todo" => "not yet implemented",
                    _ => "not implemented",
                };
                let text = message(&args, default.to_string())?;
                let text = match (name.as_str(), args.is_empty()) {
                    ("unreachable", false) => {
                        format!("internal error: entered unreachable code: {text}")
                    }
                    _ => text,
                };
                self.assert(Operand::Const(Const::Bool(false)), &text, span);
                // Nothing after a panic runs.
                self.terminate(TerminatorKind::Unreachable, span);
                Ok(None)
            }
            "assert" if !args.is_empty() => {
                let cond_text = expression_text(&args[0]);
                let (cond, _) = self.scalar_expr(&args[0], Some(ScalarTy::Bool))?;
                let text = message(&args[1..], format!("assertion failed: {cond_text}"))?;
                self.assert(cond, &text, span);
                Ok(None)
            }
            "assert_eq" | "assert_ne" if args.len() >= 2 => {
                let eq = name.ends_with("assert_eq");
                let ty = self.infer(&args[0]).or_else(|| self.infer(&args[1]));
                let (a, t) = self.scalar_expr(&args[0], ty)?;
                let (b, _) = self.scalar_expr(&args[1], Some(t))?;
                let op = if eq { BinOp::Eq } else { BinOp::Ne };
                let cond = self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(op, a, b), span);
                let kind = if eq { "==" } else { "!=" };
                let text = message(&args[2..], format!("assertion `left {kind} right` failed"))?;
                self.assert(cond, &text, span);
                Ok(None)
            }
            _ => error(
                mac,
                format!(
                    "the macro `{name}!` is not supported in kernels; supported: `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!`"
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
        if let syn::Expr::Index(i) = e
            && let Some(shared) = self.shared_receiver(&i.expr)
        {
            let name = self.body.locals[shared.index()]
                .debug
                .as_ref()
                .map_or(String::new(), |d| d.0.clone());
            return error(
                e,
                format!(
                    "threads write only their own slots of shared memory: use `{name}.write(value)` or `{name}.write_nth(k, value)`"
                ),
            );
        }
        self.place(e)
    }

    /// `chunk[k]` of a `Chunked<N>` chunk: bounds-checked against the chunk's length,
    /// then element `start + k` of the region.
    fn chunk_element(
        &mut self,
        i: &syn::ExprIndex,
        region: Local,
        start: Local,
        len: Local,
    ) -> Result<(Place, ScalarTy)> {
        let span = i.span();
        let (k, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
        let k = self.as_local(k, ScalarTy::Usize, span);
        self.bounds_check(k, Operand::Copy(Place::local(len)), span);
        let at = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(
                BinOp::Add,
                Operand::Copy(Place::local(start)),
                Operand::Copy(Place::local(k)),
            ),
            span,
        );
        let at = self.as_local(at, ScalarTy::Usize, span);
        let elem = self.body.locals[region.index()]
            .ty
            .element()
            .expect("a region has elements");
        Ok((Place::element(region, at), elem))
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
                    Some(Binding::RegionChunk { .. }) => error(
                        e,
                        format!("`{id}` is a chunk; index it (`{id}[k]`) or call `{id}.len()`"),
                    ),
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
                if let Some(Binding::RegionChunk { region, start, len }) = target {
                    return self.chunk_element(i, region, start, len);
                }
                let Some(Binding::Local(base)) = target else {
                    return error(&i.expr, "only slice parameters can be indexed");
                };
                let elem = match self.body.locals[base.index()].ty {
                    Ty::Slice(e) => e,
                    Ty::Shared(..) => {
                        let (index, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
                        return Ok(self.shared_read(base, index, e.span(), false));
                    }
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
                let (index, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
                let index = self.checked_index(base, index, e.span());
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

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

/// Source text for an expression as `stringify!` would print it, for assertion messages:
/// tokens joined by spaces, minus the spaces rustc leaves out around brackets, dots,
/// paths and commas.
fn expression_text(e: &syn::Expr) -> String {
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

/// The unsigned integer type of the same width.
fn unsigned_of(t: ScalarTy) -> ScalarTy {
    match t.bits() {
        8 => ScalarTy::U8,
        16 => ScalarTy::U16,
        32 => ScalarTy::U32,
        _ if t == ScalarTy::Isize || t == ScalarTy::Usize => ScalarTy::Usize,
        _ => ScalarTy::U64,
    }
}

/// `v` as an integer of type `to`, wrapped to its width and sign-extended if signed.
fn wrap_to(v: i128, to: ScalarTy) -> i128 {
    let bits = to.bits();
    let masked = v & ((1i128 << bits) - 1);
    if to.is_signed() && masked >> (bits - 1) == 1 {
        masked - (1i128 << bits)
    } else {
        masked
    }
}
