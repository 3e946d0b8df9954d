//! The macros of `offload`: `#[offload_kernel]`, `offload!` and `try_offload!`.
//!
//! `#[offload_kernel] fn k(..) { body }` expands to three items:
//!
//! - a never-called function holding `body` with the kernel's parameter types (regions as
//!   `offload::kernel_view::Region`), so rustc type-checks the kernel;
//! - a static `KernelDescriptor` holding the kernel's MIR text;
//! - a function `k(options, args..)` that type-checks a launch's arguments and calls
//!   `offload::launch`. `offload!` expands to a call of it, so rustc points type errors
//!   at the offending argument.
//!
//! Unsupported Rust in a kernel is a compile error at its span, produced by the MIR
//! translator in `offload-translate`. These macros never panic on user input.

use offload_translate::{
    ConstValue, ParamKind, instance_name, instances, kernel_consts, param_kind, translate_device,
    translate_instance_with,
};
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{
    Expr, Ident, ItemFn, Token, parse::Parse, parse::ParseStream, parse_macro_input,
    punctuated::Punctuated, spanned::Spanned,
};

/// Marks a function as a kernel. See the `offload` crate for the supported subset of Rust.
/// `#[offload_kernel(fma = false)]` keeps a GPU from fusing the kernel's float multiplies
/// and adds into fused multiply-adds (which it does by default, as nvcc does).
#[proc_macro_attribute]
pub fn offload_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemFn);
    // The translator reads the options from the attribute: put it back on a copy.
    let mut marked = item.clone();
    let attr = TokenStream2::from(attr);
    marked
        .attrs
        .push(syn::parse_quote!(#[offload_kernel(#attr)]));
    match kernel(&marked) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn kernel(item: &ItemFn) -> syn::Result<TokenStream2> {
    let to_syn = |e: offload_translate::TranslateError| syn::Error::new(e.span, e.message);
    let file = item.sig.ident.span().file();
    let name = &item.sig.ident;
    let name_str = name.to_string();

    // One descriptor per instance: a plain kernel has one, a generic kernel one for each
    // combination of the types its bounds admit.
    let instances = instances(&item.sig).map_err(to_syn)?;
    // The values of the `const` items the kernel names outside itself are rustc's: the
    // translation refers to them, and the descriptor's MIR text is built with them.
    let names = kernel_consts(item);
    let consts: Vec<(String, ConstValue)> = names
        .iter()
        .map(|name| (name.clone(), ConstValue::Rustc))
        .collect();
    let mut descriptors = Vec::new();
    let mut arms = Vec::new();
    for subst in &instances {
        match instance_descriptor(item, &file, subst, &names, &consts) {
            Ok((descriptor, arm)) => {
                descriptors.push(descriptor);
                arms.push(arm);
            }
            // An `f16`/`bf16` instance the body does not support: its launch says why.
            Err(e) if offload_translate::optional_instance(subst) => {
                let display = instance_display(&name_str, subst);
                let why = e.to_string();
                let variants = subst
                    .iter()
                    .map(|(_, t)| format_ident!("{}", format!("{t:?}")));
                arms.push(quote! {
                    [#(::offload::ScalarTy::#variants),*] => {
                        return ::core::result::Result::Err(
                            ::offload::__private::not_for_types(#display, #why),
                        )
                    }
                });
            }
            Err(e) => return Err(e),
        }
    }
    let params: Vec<&syn::Ident> = item.sig.generics.type_params().map(|p| &p.ident).collect();
    let select = if params.is_empty() {
        let ident = format_ident!("__OFFLOAD_KERNEL_{}", name_str);
        quote! { &#ident }
    } else {
        quote! {
            match [#(<#params as ::offload::Scalar>::TY),*] {
                #(#arms)*
                _ => ::core::unreachable!("the kernel's bounds admit no other types"),
            }
        }
    };

    let vis = &item.vis;
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let check = format_ident!("__offload_check_{}", name);
    let generic_params = &item.sig.generics.params;
    let where_clause = &item.sig.generics.where_clause;

    // Parameter kinds do not depend on the instance; read them with the first one.
    let params = parameters(item, &instances[0], &consts)?;
    let (check_params, host_params, args) = (&params.check, &params.host, &params.args);
    let block = &item.block;
    Ok(quote! {
        #[allow(dead_code, unused_mut, unused_variables, unused_assignments, non_snake_case, clippy::all)]
        fn #check<#generic_params>(#(#check_params),*) #where_clause #block

        #(#descriptors)*

        #(#docs)*
        /// Launches this kernel; prefer `offload!`/`try_offload!`.
        #[allow(clippy::too_many_arguments)]
        #vis fn #name<'__offload, #generic_params>(
            __offload_options: ::offload::LaunchOptions,
            #(#host_params),*
        ) -> ::core::result::Result<(), ::offload::Error> #where_clause {
            let __offload_descriptor: &'static ::offload::KernelDescriptor = #select;
            ::offload::launch(__offload_descriptor, __offload_options, &mut [#(#args),*])
        }
    })
}

/// A kernel's parameters three ways: in the type-checked copy of its body (regions as
/// `kernel_view` types), in the launch function (what a launch may pass), and as the
/// launch's `KernelArg`s.
struct Parameters {
    check: Vec<TokenStream2>,
    host: Vec<TokenStream2>,
    args: Vec<TokenStream2>,
}

/// The [`Parameters`] of `item`, their kinds read with the instance `first` and the
/// strategy `const` values `consts`.
fn parameters(
    item: &ItemFn,
    first: &[(String, offload_mir::ScalarTy)],
    consts: &[(String, ConstValue)],
) -> syn::Result<Parameters> {
    let to_syn = |e: offload_translate::TranslateError| syn::Error::new(e.span, e.message);
    let mut check_params = Vec::new();
    let mut host_params = Vec::new();
    let mut args = Vec::new();
    for input in &item.sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            unreachable!("the translator rejects `self` parameters");
        };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            unreachable!("the translator rejects non-identifier parameters");
        };
        let ident = &pat.ident;
        let mutability = &pat.mutability;
        let ty = &arg.ty;
        match param_kind(ty, first, consts).map_err(to_syn)? {
            ParamKind::Region(..) => {
                let (elem, strategy) = region_args(ty);
                check_params.push(quote_spanned! {ty.span()=> #mutability #ident: ::offload::kernel_view::Region<#elem, #strategy> });
                host_params.push(quote_spanned! {ty.span()=> #ident: impl ::offload::IntoRegion<'__offload, #elem, #strategy> });
                args.push(quote! { ::offload::KernelArg::region(#ident) });
            }
            ParamKind::Atomic(_) => {
                let elem = atomic_element(ty);
                check_params.push(quote_spanned! {ty.span()=> #mutability #ident: ::offload::kernel_view::Atomic<#elem> });
                host_params.push(quote_spanned! {ty.span()=> #ident: impl ::offload::IntoAtomic<'__offload, #elem> });
                args.push(quote! { ::offload::KernelArg::atomic(#ident) });
            }
            ParamKind::Slice(_) => {
                let syn::Type::Reference(r) = &**ty else {
                    unreachable!("slices are references")
                };
                let elem = &r.elem;
                check_params.push(quote! { #mutability #ident: #ty });
                let syn::Type::Slice(element) = &**elem else {
                    unreachable!("slice parameters are `&[T]`")
                };
                let element = &element.elem;
                host_params.push(quote_spanned! {ty.span()=> #ident: impl ::offload::IntoSlice<'__offload, #element> });
                args.push(quote! { ::offload::KernelArg::slice(#ident) });
            }
            ParamKind::Scalar(_) => {
                check_params.push(quote! { #mutability #ident: #ty });
                host_params.push(quote! { #ident: #ty });
                args.push(quote! { ::offload::KernelArg::scalar(#ident) });
            }
        }
    }
    Ok(Parameters {
        check: check_params,
        host: host_params,
        args,
    })
}

/// The `KernelDescriptor` static of one instance of a kernel (`subst` giving its type
/// arguments), and its arm in the launch function's choice of instance.
fn instance_descriptor(
    item: &ItemFn,
    file: &str,
    subst: &[(String, offload_mir::ScalarTy)],
    names: &[String],
    consts: &[(String, ConstValue)],
) -> syn::Result<(TokenStream2, TokenStream2)> {
    let to_syn = |e: offload_translate::TranslateError| syn::Error::new(e.span, e.message);
    let name = &item.sig.ident;
    let name_str = name.to_string();
    let body = translate_instance_with(item, file, subst, consts).map_err(to_syn)?;
    offload_mir::validate_translated(&body).map_err(|e| not_fitting(item, &e))?;
    let mir = mir_text(&body, names);
    let ident = format_ident!("__OFFLOAD_KERNEL_{}", instance_name(&name_str, subst));
    let display = instance_display(&name_str, subst);
    let calls = device_calls(&item.block);
    let signatures = signature_checks(&item.block, &body);
    // A kernel with raw operations came from `unsafe` blocks in its body, so its
    // crate already admits `unsafe` code.
    let raw = body
        .blocks
        .iter()
        .any(|b| b.statements.iter().any(|s| s.raw));
    let descriptor = if raw {
        quote! {
            // SAFETY: the raw operations are the kernel's own `unsafe` blocks.
            unsafe { ::offload::KernelDescriptor::new_unsafe(#display, #mir, &[#(#calls),*]) }
                .at(::core::module_path!())
        }
    } else {
        quote! {
            ::offload::KernelDescriptor::new(#display, #mir, &[#(#calls),*])
                .at(::core::module_path!())
        }
    };
    let descriptor = quote! {
        #[allow(non_upper_case_globals)]
        static #ident: ::offload::KernelDescriptor = #descriptor;
        #(#signatures)*
    };
    let variants = subst
        .iter()
        .map(|(_, t)| format_ident!("{}", format!("{t:?}")));
    let arm = quote! { [#(::offload::ScalarTy::#variants),*] => &#ident, };
    Ok((descriptor, arm))
}

/// How launches and errors name an instance: `scale`, or `scale::<f16>`.
fn instance_display(name: &str, subst: &[(String, offload_mir::ScalarTy)]) -> String {
    if subst.is_empty() {
        return name.to_string();
    }
    let types: Vec<&str> = subst.iter().map(|(_, t)| t.name()).collect();
    format!("{name}::<{}>", types.join(", "))
}

/// The MIR text of a kernel's descriptor: `body`'s text, with rustc's value of each outside
/// `const` item (`names`) where the translation refers to it. A plain string when there
/// is none; else a `formatcp!` (a `&'static str` built at compile time), beside checks
/// that each item has the type its use gives it: an integer is checked to fit, as a
/// literal's type would be, so the kernel never sees a wrapped value; a float must have
/// that float type, and is written by its bits.
fn mir_text(body: &offload_mir::Body, names: &[String]) -> TokenStream2 {
    use offload_mir::{Piece, ScalarTy};
    let pieces = offload_mir::pieces(body);
    if let [Piece::Text(text)] = pieces.as_slice() {
        return quote! { #text };
    }
    let mut format = String::new();
    let mut args = Vec::new();
    let mut checks = Vec::new();
    for piece in pieces {
        let (k, ty) = match piece {
            Piece::Text(text) => {
                format.push_str(&text.replace('{', "{{").replace('}', "}}"));
                continue;
            }
            Piece::Item { k, ty } => (k, ty),
        };
        // An item's name, or a tile's `ROWS * COLS` (`kernel_consts`).
        let name = match syn::parse_str::<syn::Expr>(&names[k as usize]) {
            Ok(syn::Expr::Path(p)) => p.into_token_stream(),
            Ok(product) => quote! { (#product) },
            Err(_) => {
                let message = format!(
                    "the size `{}` of a shared array could not be carried into the kernel; name it with a `const` item",
                    names[k as usize]
                );
                return quote! { ::core::compile_error!(#message) };
            }
        };
        match ty {
            Some(t) if t.is_float() => {
                format.push_str(&format!("{{:#x}}_{t}"));
                args.push(quote! { #name.to_bits() });
                let ty = match t {
                    ScalarTy::F16 => quote! { ::offload::f16 },
                    ScalarTy::Bf16 => quote! { ::offload::bf16 },
                    _ => format_ident!("{}", t.name()).into_token_stream(),
                };
                checks.push(quote! { const _: #ty = #name; });
            }
            // A strategy's number (`Chunked<COLS>`), or an integer constant.
            _ => {
                let (t, suffix) = match ty {
                    Some(t) => (t, t.name()),
                    None => (ScalarTy::U32, ""),
                };
                format.push_str("{}");
                format.push_str(suffix);
                args.push(quote! { #name });
                let bits = t.bits();
                let (min, max) = if t.is_signed() {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                let message = format!(
                    "`{name}` does not fit the `{t}` it is used as in the kernel (outside `const` items are typed by their use, as literals are: give the use the item's type, as in `let n: i64 = {name};`)"
                );
                checks.push(quote! {
                    const _: () = assert!((#name as i128) >= #min && (#name as i128) <= #max, "{}", #message);
                });
            }
        }
    }
    quote! {
        {
            #(#checks)*
            ::offload::__private::formatcp!(#format, #(#args),*)
        }
    }
}

/// Marks a function callable from kernels. It stays an ordinary Rust function too; a
/// hidden module of the same name carries its MIR (one body per instance for generic
/// functions) for the kernels that call it, which inline it when they are compiled.
#[proc_macro_attribute]
pub fn offload_device(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = TokenStream2::from(attr);
        return syn::Error::new(attr.span(), "`#[offload_device]` takes no arguments")
            .to_compile_error()
            .into();
    }
    let item = parse_macro_input!(item as ItemFn);
    match device_function(&item) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The error for a translated body the MIR validator refuses. The translator follows the
/// types the source gives, so a refusal comes from a body whose types do not fit (an
/// `i32` offset where `isize` is taken, a `u32` index), which rustc would refuse too: the
/// error stands at the expression the validator names and says what does not fit and how
/// to convert, without the MIR's own names for values.
fn not_fitting(item: &ItemFn, e: &offload_mir::ValidationError) -> syn::Error {
    let span = token_at(item.block.to_token_stream(), e.span).unwrap_or(item.sig.ident.span());
    let what = in_rust_words(&without_locals(&e.message));
    // The conversion to suggest, from the types the message names.
    let hint = if what.contains("f16`") || what.contains("bf16`") {
        "`f16` and `bf16` convert with `f16::from_f32(x)`, `h.to_f32()` and their `f64` kin"
    } else if what.contains("size`") {
        "kernels index with `usize` and take `isize` offsets (convert with `as`, or give the literal or range that type)"
    } else {
        "convert one side with `as` (or `T::from` where no value is lost), or give the literal that type"
    };
    syn::Error::new(span, format!("the types here do not fit: {what}; {hint}"))
}

/// `message` with each MIR operation (`` `Le` operands ``) named by its Rust operator
/// (`` `<=` operands ``).
fn in_rust_words(message: &str) -> String {
    offload_mir::BinOp::ALL
        .iter()
        .fold(message.to_string(), |m, op| {
            m.replace(
                &format!("`{}` operands", op.name()),
                &format!("`{}` operands", op.operator()),
            )
        })
}

/// `message` with each MIR local (`` `_12` ``) called "a value".
fn without_locals(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("`_") {
        let digits = rest[at + 2..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 2);
        let closes = rest[at + 2 + digits..].starts_with('`');
        if digits > 0 && closes {
            out.push_str(&rest[..at]);
            out.push_str("a value");
            rest = &rest[at + 3 + digits..];
        } else {
            out.push_str(&rest[..at + 2]);
            rest = &rest[at + 2..];
        }
    }
    out.push_str(rest);
    out
}

/// The span of the token that starts at `at` (1-based line and column, as the
/// translator records them), searched through groups.
fn token_at(tokens: TokenStream2, at: offload_mir::Span) -> Option<Span> {
    for tree in tokens {
        let start = tree.span().start();
        if start.line as u32 == at.line && start.column as u32 + 1 == at.column {
            return Some(tree.span());
        }
        if let proc_macro2::TokenTree::Group(g) = tree
            && let Some(found) = token_at(g.stream(), at)
        {
            return Some(found);
        }
    }
    None
}

fn device_function(item: &ItemFn) -> syn::Result<TokenStream2> {
    let to_syn = |e: offload_translate::TranslateError| syn::Error::new(e.span, e.message);
    let file = item.sig.ident.span().file();
    let name = &item.sig.ident;
    let mut bodies = Vec::new();
    let mut checks = Vec::new();
    for subst in instances(&item.sig).map_err(to_syn)? {
        let parts = translate_device(item, &file, &subst)
            .map_err(to_syn)
            .and_then(|parts| {
                for body in &parts {
                    offload_mir::validate(body).map_err(|e| not_fitting(item, &e))?;
                }
                Ok(parts)
            });
        let parts = match parts {
            Ok(parts) => parts,
            // An `f16`/`bf16` instance the body does not support is left out: a kernel
            // instance that calls it does not link, and its launch says so.
            Err(_) if offload_translate::optional_instance(&subst) => continue,
            Err(e) => return Err(e),
        };
        for body in parts {
            checks.extend(signature_checks(&item.block, &body));
            bodies.push(body.to_string());
        }
    }
    let calls = device_calls(&item.block);
    let vis = &item.vis;
    let name_str = name.to_string();
    Ok(quote! {
        #item

        #(#checks)*

        #[doc(hidden)]
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;
            pub static DEVICE: ::offload::DeviceFn = ::offload::DeviceFn::new(#name_str, &[#(#bodies),*], &[#(#calls),*]);
        }
    })
}

/// For each device function `body` calls, a `fn` pointer of the argument and result types
/// the MIR gives the call, bound to the function: rustc then checks them against the
/// function's own signature (inferring a generic one's type arguments), so a call the
/// translator typed otherwise (`my_tid(0)` as a `usize` where `my_tid` takes a `u32`) is
/// a compile error at the call, not a failure to link at launch.
fn signature_checks(block: &syn::Block, body: &offload_mir::Body) -> Vec<TokenStream2> {
    use offload_mir::{Operand, TerminatorKind};
    let paths = offload_translate::device_call_paths(block);
    let mut seen = std::collections::HashSet::new();
    let mut checks = Vec::new();
    for bb in &body.blocks {
        let TerminatorKind::Call {
            func, args, dest, ..
        } = &bb.terminator.kind
        else {
            continue;
        };
        let Some(path) = paths
            .iter()
            .find(|p| p.segments.last().is_some_and(|s| s.ident == func))
        else {
            continue;
        };
        let scalar = |ty: Option<offload_mir::ScalarTy>| ty.map(|t| format_ident!("{}", t.name()));
        let types: Option<Vec<syn::Ident>> = args
            .iter()
            .map(|a| match a {
                Operand::Const(c) => scalar(Some(c.ty())),
                Operand::Copy(p) | Operand::Move(p) => {
                    scalar(body.locals[p.local.index()].ty.scalar())
                }
            })
            .collect();
        let (Some(types), Some(ret)) = (types, scalar(body.locals[dest.index()].ty.scalar()))
        else {
            continue;
        };
        if seen.insert((func.clone(), types.clone(), ret.clone())) {
            checks.push(quote_spanned! {path.span()=>
                const _: () = {
                    let _: fn(#(#types),*) -> #ret = #path;
                };
            });
        }
    }
    checks
}

/// References to the `DeviceFn` of every function a body calls, resolved where the call
/// is written (`f(..)` → `&f::DEVICE`, `m::f(..)` → `&m::f::DEVICE`).
fn device_calls(block: &syn::Block) -> Vec<TokenStream2> {
    offload_translate::device_call_paths(block)
        .into_iter()
        .map(|path| quote_spanned! {path.span()=> &#path::DEVICE })
        .collect()
}

/// The element type of `Atomic<T>` (checked by `param_kind` already).
fn atomic_element(ty: &syn::Type) -> syn::Type {
    let syn::Type::Path(p) = ty else {
        unreachable!("atomics are paths")
    };
    let last = p.path.segments.last().expect("a path has a segment");
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        unreachable!("atomics have an argument")
    };
    match a.args.first() {
        Some(syn::GenericArgument::Type(t)) => t.clone(),
        _ => unreachable!("atomics have a type argument"),
    }
}

/// The element type and strategy of `Region<T, S>` (checked by `param_kind` already).
fn region_args(ty: &syn::Type) -> (syn::Type, syn::Type) {
    let syn::Type::Path(p) = ty else {
        unreachable!("regions are paths")
    };
    let last = p.path.segments.last().expect("a path has a segment");
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        unreachable!("regions have arguments")
    };
    let mut types = a.args.iter().filter_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    });
    (
        types.next().expect("element type"),
        types.next().expect("strategy"),
    )
}

/// Launches a kernel and panics with the error's text if the launch fails.
///
/// `offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }`, with optional
/// `workgroup_dim = [u32; 3]`, `thread_dim = [u32; 3]`, `dyn_cache = u32`,
/// `resident_workgroups = u32`, `device = usize` (or `device = all`) and `stream = &Stream`
/// (enqueues the launch on the stream and returns at once; its arguments must be device
/// buffers, views of them and scalars).
#[proc_macro]
pub fn offload(input: TokenStream) -> TokenStream {
    let launch = parse_macro_input!(input as LaunchInput);
    let call = launch.call();
    quote! {
        match #call {
            ::core::result::Result::Ok(()) => {}
            ::core::result::Result::Err(error) => ::core::panic!("{}", error),
        }
    }
    .into()
}

/// Like `offload!`, but evaluates to `Result<(), offload::Error>`.
#[proc_macro]
pub fn try_offload(input: TokenStream) -> TokenStream {
    let launch = parse_macro_input!(input as LaunchInput);
    launch.call().into()
}

const FIELDS: [&str; 8] = [
    "kernel",
    "args",
    "workgroup_dim",
    "thread_dim",
    "dyn_cache",
    "resident_workgroups",
    "device",
    "stream",
];

struct LaunchInput {
    kernel: Expr,
    args: Vec<Expr>,
    options: Vec<(Ident, Expr)>,
    /// `stream = &s`: the launch is enqueued on that stream.
    stream: Option<Expr>,
}

struct Field {
    name: Ident,
    value: Expr,
}

impl Parse for Field {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        Ok(Field {
            name,
            value: input.parse()?,
        })
    }
}

impl Parse for LaunchInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let fields = Punctuated::<Field, Token![,]>::parse_terminated(input)?;
        let mut seen: Vec<String> = Vec::new();
        let (mut kernel, mut args, mut options, mut stream) = (None, None, Vec::new(), None);
        for field in fields {
            let name = field.name.to_string();
            if !FIELDS.contains(&name.as_str()) {
                return Err(syn::Error::new(
                    field.name.span(),
                    format!(
                        "unknown field `{name}`; expected one of `kernel`, `args`, `workgroup_dim`, `thread_dim`, `dyn_cache`, `resident_workgroups`, `device`, `stream`"
                    ),
                ));
            }
            if seen.contains(&name) {
                return Err(syn::Error::new(
                    field.name.span(),
                    format!("duplicate field `{name}`"),
                ));
            }
            seen.push(name.clone());
            match name.as_str() {
                "kernel" => kernel = Some(field.value),
                "stream" => stream = Some(field.value),
                "args" => {
                    args = Some(match field.value {
                        Expr::Tuple(t) => t.elems.into_iter().collect(),
                        Expr::Paren(p) => vec![*p.expr],
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "`args` takes a parenthesised list: `args = (a, b, c)`",
                            ));
                        }
                    })
                }
                _ => options.push((field.name, field.value)),
            }
        }
        let missing = |f: &str| syn::Error::new(Span::call_site(), format!("missing field `{f}`"));
        Ok(LaunchInput {
            kernel: kernel.ok_or_else(|| missing("kernel"))?,
            args: args.ok_or_else(|| missing("args"))?,
            options,
            stream,
        })
    }
}

impl LaunchInput {
    fn call(&self) -> TokenStream2 {
        let kernel = &self.kernel;
        let args = &self.args;
        let options = self
            .options
            .iter()
            .map(|(name, value)| match name.to_string().as_str() {
                // `device = all` splits the launch across every GPU.
                "device" if matches!(value, Expr::Path(p) if p.path.is_ident("all")) => {
                    quote_spanned! {value.span()=> all_devices: true }
                }
                "workgroup_dim" | "thread_dim" | "resident_workgroups" | "device" => {
                    quote_spanned! {value.span()=> #name: ::core::option::Option::Some(#value) }
                }
                _ => quote_spanned! {value.span()=> #name: #value },
            });
        let options = quote! { ::offload::LaunchOptions { #(#options,)* ..::offload::LaunchOptions::DEFAULT } };
        let Some(stream) = &self.stream else {
            return quote! { #kernel(#options, #(#args),*) };
        };
        // The arguments and options are evaluated first, so that a launch among them
        // does not go to the stream; then the launch runs with the stream set.
        let names: Vec<Ident> = (0..args.len())
            .map(|i| quote::format_ident!("__offload_arg{i}"))
            .collect();
        quote! {
            match (#options, #(#args,)*) {
                (__offload_options, #(#names,)*) => ::offload::__private::on_stream(
                    #stream,
                    move || #kernel(__offload_options, #(#names),*),
                ),
            }
        }
    }
}
