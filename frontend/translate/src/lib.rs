//! `offload-translate`: translates the body of an `#[offload_kernel]` Rust function, as
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

// The translator is one `Translator`, defined here with its block-building helpers; each
// child module adds the methods for one kind of syntax.
mod builtins;
mod calls;
mod closures;
mod consts;
mod control;
mod expr;
mod for_loops;
pub mod gather;
mod inference;
mod let_else;
mod methods;
mod places;
mod reductions;
mod split_locals;
mod sub_slices;
mod syntax;
mod tuple_results;
mod types;
mod versioning;
mod workgroup;

pub use consts::{ConstValue, ConstValues, const_value, kernel_consts, strategy_consts};

use types::scalar_type;

type Result<T> = std::result::Result<T, TranslateError>;

fn error<T>(spanned: impl Spanned, message: impl Into<String>) -> Result<T> {
    Err(TranslateError {
        span: spanned.span(),
        message: message.into(),
    })
}

/// The device functions a body calls, as written (`f`, `m::f`), without generic
/// arguments, each once, in order of first call: every called path that is not
/// [built in](is_builtin) and not the name of a closure the body binds (`let f = |v| ..`).
pub fn device_call_paths(block: &syn::Block) -> Vec<syn::Path> {
    use syn::visit::Visit;
    struct Closures(Vec<syn::Ident>);
    impl<'ast> Visit<'ast> for Closures {
        fn visit_local(&mut self, local: &'ast syn::Local) {
            if let syn::Pat::Ident(name) = &local.pat
                && let Some(init) = &local.init
                && let syn::Expr::Closure(_) = &*init.expr
            {
                self.0.push(name.ident.clone());
            }
            syn::visit::visit_local(self, local);
        }
    }
    struct Calls(Vec<syn::Path>, Vec<syn::Ident>);
    impl<'ast> Visit<'ast> for Calls {
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*call.func {
                let mut path = p.path.clone();
                if let Some(last) = path.segments.last_mut() {
                    last.arguments = syn::PathArguments::None;
                }
                let names: Vec<String> =
                    path.segments.iter().map(|s| s.ident.to_string()).collect();
                let closure = path.get_ident().is_some_and(|id| self.1.contains(id));
                if !is_builtin(&names) && !closure && !self.0.contains(&path) {
                    self.0.push(path);
                }
            }
            syn::visit::visit_expr_call(self, call);
        }
    }
    let mut closures = Closures(Vec::new());
    closures.visit_block(block);
    let mut calls = Calls(Vec::new(), closures.0);
    calls.visit_block(block);
    calls.0
}

/// Whether a call of the path `segments` is built into the kernel language rather than a
/// device function: thread positions and `thread_rank`, `sync_threads`, the subgroup operations, the
/// `Shared`/`DynShared` constructors, and `mem::swap`.
pub fn is_builtin(segments: &[String]) -> bool {
    let [.., last] = segments else { return false };
    if let [.., ty, _] = segments
        && workgroup::SHARED_KINDS.contains(&ty.as_str())
    {
        return true;
    }
    // `T::from_f64(x)`, `f32::max(a, b)`: functions of a type, never device functions
    // (those are free functions); the translator says which it supports.
    if let [ty, _] = segments
        && starts_type_path(ty)
    {
        return true;
    }
    // `std::mem::swap(&mut a, &mut b)`.
    if let [.., module, _] = segments
        && module == "mem"
        && last == "swap"
    {
        return true;
    }
    builtins::function(last).is_some()
}

/// Whether a path starting with `segment` names a type's function: a scalar type, or a
/// capitalised name (a type or generic parameter, as Rust names them).
fn starts_type_path(segment: &str) -> bool {
    ScalarTy::from_name(segment).is_some() || segment.starts_with(|c: char| c.is_ascii_uppercase())
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

/// Reads a strategy (`Linear1D`, `Chunked<4>`, `Chunked<COLS>` with `COLS` in `consts`).
fn strategy(name: &str, consts: &ConstValues) -> Option<Strategy> {
    let name = name.rsplit("::").next().unwrap_or("").trim();
    if let Some(strategy) = Strategy::from_name(name) {
        return Some(strategy);
    }
    let (kind, param) = name.strip_suffix('>')?.split_once('<')?;
    let param = consts::named_param(consts, param.trim())?;
    match kind.trim() {
        "Chunked" => Some(Strategy::Chunked(param)),
        "Stencil2D" => Some(Strategy::Stencil2D(param)),
        _ => None,
    }
}

/// Reads a kernel parameter type: `Region<T, S>`, `&[T]` or a scalar.
pub fn param_kind(ty: &syn::Type, subst: &Substitution, consts: &ConstValues) -> Result<ParamKind> {
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
                            "`Atomic<{elem}>` is not supported; atomics are `i32`, `u32`, `i64`, `u64`, `f32`, `f64`, `f16`, `bf16`"
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
                let Some(strategy) = self::strategy(&name, consts) else {
                    return error(
                        strategy,
                        format!(
                            "unsupported partitioning strategy `{name}`; supported: `Linear1D`, `Linear2D`, `Linear3D`, `Indexed`, `Chunked<N>` and `Stencil2D<R>` with N and R integer literals or `const` items"
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

/// The numeric traits a generic kernel's type parameters may be bounded by, and the
/// scalar types each admits.
pub fn bound_types(bound: &str) -> Option<&'static [ScalarTy]> {
    use ScalarTy::*;
    match bound {
        "Float" => Some(&[F32, F64, F16, Bf16]),
        "Int" => Some(&[I8, I16, I32, I64, Isize, U8, U16, U32, U64, Usize]),
        "Num" => Some(&[
            I8, I16, I32, I64, Isize, U8, U16, U32, U64, Usize, F32, F64, F16, Bf16,
        ]),
        _ => None,
    }
}

/// Whether an instance may fail to translate without failing the kernel: one with `f16`
/// or `bf16` for a type parameter. A generic kernel written for `f32` and `f64` may use
/// what 16-bit floats lack (subgroup operations, `to_bits`); such an instance is left
/// out, and a launch of it is an error that says why, not the kernel's compile error.
pub fn optional_instance(subst: &Substitution) -> bool {
    subst.iter().any(|(_, t)| t.is_half())
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
    translate_instance_with(item, file, subst, &[])
}

/// [`translate_instance`] for a kernel whose strategies name `const` items
/// ([`strategy_consts`]), with the values `consts` gives them.
pub fn translate_instance_with(
    item: &syn::ItemFn,
    file: &str,
    subst: &Substitution,
    consts: &ConstValues,
) -> Result<Body> {
    let options = kernel_options(item)?;
    let mut body = translate_body(item, file, subst, consts, BodyKind::Kernel)?;
    body.fp_contract = options.fma;
    Ok(body)
}

/// What `#[offload_kernel(...)]` says of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelOptions {
    /// `fma = false` keeps a GPU from fusing float multiplies and adds into fused
    /// multiply-adds (on by default, as with nvcc); see `Body::fp_contract`.
    pub fma: bool,
}

/// The options of `item`'s `#[offload_kernel(...)]` attribute (the defaults without
/// one, or without arguments). The macro, which is handed its arguments apart from the
/// item, puts the attribute back on a copy first.
pub fn kernel_options(item: &syn::ItemFn) -> Result<KernelOptions> {
    let mut options = KernelOptions { fma: true };
    let marker = item.attrs.iter().find(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "offload_kernel")
    });
    let Some(syn::Meta::List(list)) = marker.map(|a| &a.meta) else {
        return Ok(options);
    };
    const TAKES: &str = "`#[offload_kernel]` takes `fma = false` (or `true`): whether a GPU may fuse a float multiply and add into one fused multiply-add";
    let parser = syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated;
    let args = list.parse_args_with(parser).map_err(|e| TranslateError {
        span: e.span(),
        message: format!("{TAKES}: {e}"),
    })?;
    for arg in args {
        let fma = match &arg {
            syn::Meta::NameValue(nv) if nv.path.is_ident("fma") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Bool(b),
                    ..
                }) => Some(b.value),
                _ => None,
            },
            _ => None,
        };
        match fma {
            Some(fma) => options.fma = fma,
            None => return error(&arg, TAKES),
        }
    }
    Ok(options)
}

/// Translates one instance of an `#[offload_device]` function: one body, or for a
/// function that returns a tuple, one body per element, `name__0`, `name__1`, ..., each
/// returning its element ([`tuple_results::tuple_result_parts`]), which calls that take the
/// tuple apart call.
pub fn translate_device(item: &syn::ItemFn, file: &str, subst: &Substitution) -> Result<Vec<Body>> {
    match tuple_results::tuple_result_parts(item) {
        Some(parts) => parts
            .iter()
            .map(|part| translate_body(part, file, subst, &[], BodyKind::Device))
            .collect(),
        None => Ok(vec![translate_body(
            item,
            file,
            subst,
            &[],
            BodyKind::Device,
        )?]),
    }
}

/// The syntax rewrites a body gets before it is translated: `while let` and `let ... else`
/// become `loop` and `if let` (see `let_else`), and tuple and range locals one local per
/// part (see `split_locals`).
fn rewrite_syntax(item: &syn::ItemFn) -> Result<syn::ItemFn> {
    split_locals::split(&let_else::rewrite(item))
}

fn translate_body(
    item: &syn::ItemFn,
    file: &str,
    subst: &Substitution,
    consts: &ConstValues,
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
    let split = rewrite_syntax(item)?;
    let item = &split;
    // Inference runs first, over the syntax, so translation reads the body once. Where
    // a binding meets a use the inference pass does not model (it models what the
    // conformance kernels use; see its tests), the translator records the type the use
    // asked for and the body is translated again with it.
    let instance = Instance {
        name,
        file,
        kind,
        ret,
        subst,
        consts,
    };
    let mut hints = inference::infer(item, subst, consts, ret.scalar());
    for _ in 0..MOST_TRANSLATIONS {
        let (result, missed) = instance.translate(item, &hints);
        if missed.is_empty() {
            return result;
        }
        hints.extend(missed);
    }
    error(
        &sig.ident,
        "the types of this kernel's variables could not be inferred; annotate its `let`s",
    )
}

/// How many times a body is translated at most: once with the inferred types, and again
/// for each round of types its uses taught.
const MOST_TRANSLATIONS: usize = 4;

/// What a body is translated as: its instance name, file, kind, result type, type
/// arguments and the values of the `const` items it names.
struct Instance<'a> {
    name: String,
    file: &'a str,
    kind: BodyKind,
    ret: Ty,
    subst: &'a Substitution,
    consts: &'a ConstValues,
}

impl Instance<'_> {
    /// Translates `item` with `hints` for its literal-typed bindings: the body, and the
    /// bindings whose uses asked for another type than the hint's.
    fn translate(
        &self,
        item: &syn::ItemFn,
        hints: &inference::Hints,
    ) -> (Result<Body>, inference::Hints) {
        let mut b = Translator::new(self.name.clone(), self.file.to_string());
        b.body.kind = self.kind;
        b.body.locals[0].ty = self.ret;
        b.function = item.sig.ident.to_string();
        b.subst = self.subst.to_vec();
        b.consts = self.consts.to_vec();
        b.hints = hints.clone();
        let result = b.kernel(item);
        let missed = b
            .learned
            .into_iter()
            .filter(|(k, t)| hints.get(k) != Some(t))
            .collect();
        (result, missed)
    }
}

impl Translator {
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
            let kind = param_kind(&arg.ty, &b.subst, &b.consts)?;
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
            let at_source = |e: offload_mir::convergence::ConvergenceError| {
                // A workgroup reduction is made of subgroup operations and barriers; an
                // error in one names the call the user wrote.
                let message = match b.reduction_calls.iter().find(|(s, _)| *s == e.span) {
                    Some((_, name)) => match e.message.split_once("` must") {
                        Some((_, rest)) => format!("`{name}` must{rest}"),
                        None => e.message,
                    },
                    None => e.message,
                };
                TranslateError {
                    span: b
                        .syn_spans
                        .get(&e.span)
                        .copied()
                        .unwrap_or(item.sig.ident.span()),
                    message,
                }
            };
            offload_mir::convergence::check_convergence(&body).map_err(at_source)?;
            if let Some(race) = offload_mir::safety::check_shared_races(&body)
                .into_iter()
                .next()
            {
                return Err(at_source(offload_mir::convergence::ConvergenceError {
                    span: race.span,
                    message: race.message,
                }));
            }
        }
        Ok(body)
    }
}

#[derive(Copy, Clone)]
enum Binding {
    Local(Local),
    /// `v` in `if let Some(v) = region.get_mut()`: the thread's element of `region`.
    /// `len` elements of `base` from `start`: `c` in `if let Some(c) = region.get_mut()`
    /// for a `Chunked<N>` region (the thread's own, writable), or `s` in `let s =
    /// &x[a..b]` for a slice `x` (a sub-slice, read-only; see `sub_slices.rs`).
    Window {
        base: Local,
        start: Local,
        len: Local,
    },
    RegionElement {
        region: Local,
        index: Local,
    },
    /// A read-only array (`let c = [0.25f32, 0.5];`, `const C: [f32; 2] = ...;`): the
    /// index of its elements in `Translator::arrays`.
    Array(usize),
    /// A closure (`let f = |v| ..;`): its index in `Translator::closures`.
    Closure(usize),
}

/// The elements of a read-only array, each in its own local, and their type.
struct ArrayValues {
    elems: Vec<Local>,
    elem: ScalarTy,
    /// Declared `let mut`: its elements may be assigned.
    mutable: bool,
}

struct LoopTarget {
    label: Option<String>,
    break_to: BasicBlock,
    continue_to: BasicBlock,
    /// For a `loop` expression, which may `break` with a value: the type it is expected
    /// to have, and the local its breaks store the value in, made at the first.
    value: Option<LoopValue>,
}

struct LoopValue {
    expected: Option<ScalarTy>,
    result: Option<(Local, ScalarTy)>,
}

struct Translator {
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
    /// The values of the `const` items its strategies name.
    consts: Vec<(String, ConstValue)>,
    /// The rows and columns of each `Shared2D` tile.
    tiles: HashMap<Local, workgroup::TileShape>,
    /// Read-only arrays, which `Binding::Array` refers to.
    arrays: Vec<ArrayValues>,
    /// Closures bound to names, which `Binding::Closure` refers to.
    closures: Vec<closures::LocalClosure>,
    /// Writes to array elements at indices known only at run time, made to a scratch
    /// local first: after the statement, `(scratch, index, array)` is copied into the
    /// element the index picks.
    array_writes: Vec<(Local, Local, usize)>,
    /// The values immutable integer locals can hold, where known at compile time (`const`
    /// items, counters of `for` loops over constant bounds): for checks at the source.
    known_ranges: HashMap<Local, (i128, i128)>,
    /// The hidden shared array of `workgroup_sum` and friends, per element type, and
    /// where each such call is, by name (a convergence error there names the call).
    reduction_scratch: Vec<(ScalarTy, Local)>,
    reduction_calls: Vec<(Span, &'static str)>,
    /// `let`s whose type came only from a literal's default, by local.
    flexible: HashMap<Local, (usize, usize)>,
    /// Types this pass saw flexible locals meet.
    learned: HashMap<(usize, usize), ScalarTy>,
    /// The syntax span behind each MIR span, to report MIR-level checks at the source.
    syn_spans: HashMap<Span, SynSpan>,
    /// Locals bound to the elements a `for` loop iterates over (`for v in x.iter()`): a
    /// copy of the element, which `*v` reads as Rust's `&T` would.
    element_refs: std::collections::HashSet<Local>,
    /// `for` loops over elements so far: names their hidden counters apart.
    element_loops: usize,
    /// Slice reads translated without a bounds check: those of a versioned loop's copy
    /// after the test that covers them (`versioning.rs`), by [`versioning::read_id`].
    unchecked: std::collections::HashSet<usize>,
}

/// A translated expression: its operand and scalar type, or nothing for `()`.
type Value = Option<(Operand, ScalarTy)>;

impl Translator {
    fn new(name: String, file: String) -> Translator {
        let mut b = Translator {
            body: Body::new_kernel(name, file),
            terminators: Vec::new(),
            current: None,
            scopes: vec![HashMap::new()],
            loops: Vec::new(),
            hints: HashMap::new(),
            function: String::new(),
            subst: Vec::new(),
            consts: Vec::new(),
            reduction_scratch: Vec::new(),
            reduction_calls: Vec::new(),
            arrays: Vec::new(),
            closures: Vec::new(),
            array_writes: Vec::new(),
            known_ranges: HashMap::new(),
            tiles: HashMap::new(),
            flexible: HashMap::new(),
            learned: HashMap::new(),
            syn_spans: HashMap::new(),
            element_refs: Default::default(),
            element_loops: 0,
            unchecked: Default::default(),
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
            Body::new_kernel(String::new(), String::new()),
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
        let msg = AssertMessage::BoundsCheck {
            len,
            index: Operand::Copy(Place::local(index)),
        };
        self.assert_that(in_bounds, msg, span);
    }

    /// Panics with `msg` unless `cond` holds; translation goes on where it does.
    fn assert_that(&mut self, cond: Operand, msg: AssertMessage, span: SynSpan) {
        let next = self.new_block();
        let target = next;
        self.terminate(TerminatorKind::Assert { cond, msg, target }, span);
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

    /// Ends the current block with a check of `cond` that panics with `message`.
    fn assert(&mut self, cond: Operand, message: &str, span: SynSpan) {
        self.assert_that(cond, AssertMessage::Panic(message.into()), span);
    }
}

#[cfg(test)]
mod tests;
