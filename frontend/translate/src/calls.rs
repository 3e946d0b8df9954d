//! Calls: `#[offload_device]` functions and the built-in ones, method calls (resolved by
//! name to region methods, the numeric methods of `methods.rs` and intrinsics), atomics,
//! and the panic and assertion macros.

use super::builtins::{self, Form, Function};
use super::{Binding, Result, TranslateError, Translator, Value, error, starts_type_path};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use syn::spanned::Spanned;

impl Translator {
    /// `f(args)` of an `#[offload_device]` function. The callee's signature is not known
    /// here, so the result takes the type the context expects; linking checks it against
    /// the callee's (and rustc has checked the same call in the kernel's Rust body).
    pub(super) fn call(&mut self, c: &syn::ExprCall, expected: Option<ScalarTy>) -> Result<Value> {
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
        let segments: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if let [.., module, swap] = &segments[..]
            && module == "mem"
            && swap == "swap"
        {
            return self.swap_call(c);
        }
        if let Some(id) = p.path.get_ident()
            && let Some(Binding::Closure(which)) = self.lookup(id)
        {
            return self.closure_call(which, c, expected);
        }
        if let Some(converted) = self.conversion(p, c)? {
            return Ok(Some(converted));
        }
        if let Some(value) = self.path_method(p, c)? {
            return Ok(value);
        }
        let in_device = self.body.kind == BodyKind::Device;
        match builtins::function(&func) {
            Some(Function::SyncThreads) => self.sync_threads(c, in_device),
            Some(Function::TileMma) => self.tile_mma(c, in_device),
            Some(Function::WorkgroupReduce(name, op)) => {
                self.workgroup_reduce(c, name, op, expected)
            }
            Some(Function::Subgroup(_)) if in_device => error(
                c,
                format!("only kernels can call `{func}`, not device functions"),
            ),
            Some(Function::Subgroup(op)) => self.subgroup_call(c, op, expected),
            Some(Function::ThreadRank) if !c.args.is_empty() => {
                error(c, "`thread_rank()` takes no arguments")
            }
            Some(Function::ThreadRank) => Ok(Some((self.rank(c.span()), ScalarTy::Usize))),
            Some(Function::Position(position)) => self.position_call(c, position, &func),
            None => self.device_function_call(c, p, func, expected),
        }
    }

    /// `sync_threads()`: a workgroup barrier, which only kernels may wait at.
    fn sync_threads(&mut self, c: &syn::ExprCall, in_device: bool) -> Result<Value> {
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
        Ok(None)
    }

    /// `thread_idx(d)` and the other thread-position queries, along a constant dimension
    /// `d` (0, 1 or 2).
    fn position_call(
        &mut self,
        c: &syn::ExprCall,
        position: Position,
        func: &str,
    ) -> Result<Value> {
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
        Ok(Some((
            self.assign_temp(ScalarTy::Usize, Rvalue::Position(position, dim), c.span()),
            ScalarTy::Usize,
        )))
    }

    /// `f(args)` of an `#[offload_device]` function `func`: a `call` terminator into a
    /// temporary of the type the context expects. Anything of a type (`Vec::new()`,
    /// `Some(x)`) and direct recursion are refused.
    fn device_function_call(
        &mut self,
        c: &syn::ExprCall,
        p: &syn::ExprPath,
        func: String,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
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
            // An element of a tuple-returning function (`split_locals`): name the tuple.
            let element = func
                .rsplit_once("__")
                .filter(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
            let message = match element {
                Some((tuple_fn, _)) => format!(
                    "annotate the types of `{tuple_fn}(..)`'s results, e.g. `let (a, b): (f32, f32) = {tuple_fn}(..);`"
                ),
                None => format!(
                    "annotate the type of `{func}(..)`'s result, e.g. `let x: f32 = {func}(..);`"
                ),
            };
            return error(c, message);
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

    /// `receiver.method(args)`: the methods of atomics, shared arrays, regions and slices,
    /// and those of integers and floats (most of them [`Intrinsic`]s), resolved by name.
    pub(super) fn method_call(&mut self, m: &syn::ExprMethodCall) -> Result<Value> {
        let span = m.method.span();
        let name = m.method.to_string();
        if let Some(t) = &m.turbofish {
            return error(
                t,
                format!(
                    "`{name}::<..>`: kernel methods take no type arguments (only the reductions `sum::<T>()` and `product::<T>()` do); give the type where the value is bound: `let v: f32 = ..;`"
                ),
            );
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
            "len" if m.args.is_empty() => self.len_call(m, span),
            "is_empty" if m.args.is_empty() => {
                let (len, _) = self.len_call(m, span)?.expect("a length is a value");
                let zero = Operand::Const(Const::Int(0, ScalarTy::Usize));
                let empty = Rvalue::BinaryOp(BinOp::Eq, len, zero);
                Ok(Some((
                    self.assign_temp(ScalarTy::Bool, empty, span),
                    ScalarTy::Bool,
                )))
            }
            "get_unchecked" if m.args.len() == 1 => self.get_unchecked_call(m, span),
            "get_mut" => error(
                m,
                "use `get_mut()` as `if let Some(v) = region.get_mut() { ... }`",
            ),
            "row" | "col" | "x" | "y" | "z" | "width" | "height" | "depth" if m.args.is_empty() => {
                self.region_geometry_call(m, &name, span)
            }
            "get_clamped" if m.args.len() == 2 => self.get_clamped_call(m, span),
            "swap" if m.args.len() == 2 => self.swap_method(m),
            "iter" | "enumerate" | "copied" | "cloned" => error(
                m,
                "iterators are supported only as what a `for` loop runs over: `for v in x.iter()`, `for (k, v) in x.iter().enumerate()`",
            ),
            _ => match builtins::method(&name) {
                Some(method) if method.arguments == m.args.len() => match method.form {
                    Form::Intrinsic(i) => self.intrinsic_method(m, i, method.rule, span),
                    Form::Expanded(expand) => expand(self, m, &name, span),
                },
                Some(method) => error(
                    m,
                    format!(
                        "`{name}` takes {} argument{}",
                        method.arguments,
                        if method.arguments == 1 { "" } else { "s" }
                    ),
                ),
                None => self.unknown_method(m, &name),
            },
        }
    }

    /// `stencil.get_clamped(dr, dc)`: the neighbour at the offsets, its coordinates
    /// clamped into the region.
    fn get_clamped_call(&mut self, m: &syn::ExprMethodCall, span: SynSpan) -> Result<Value> {
        let super::places::Neighbour {
            region,
            index,
            provable: clamped_by_min,
            ..
        } = self.stencil_neighbour(m, true)?;
        let elem = self.body.locals[region.index()]
            .ty
            .element()
            .expect("a region has elements");
        if !clamped_by_min {
            let index = self.checked_index(region, Operand::Copy(Place::local(index)), span);
            return Ok(Some((Operand::Copy(Place::element(region, index)), elem)));
        }
        // Clamped coordinates are in bounds unless the region is empty: checking
        // that it is not says so to the verifier, panics with the message an
        // out-of-bounds index would, and is one test for all of a kernel's reads.
        let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(region), span);
        let zero = Operand::Const(Const::Int(0, ScalarTy::Usize));
        let filled = self.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Lt, zero, len), span);
        let next = self.new_block();
        self.terminate(
            TerminatorKind::Assert {
                cond: filled,
                msg: AssertMessage::BoundsCheck {
                    len,
                    index: Operand::Copy(Place::local(index)),
                },
                target: next,
            },
            span,
        );
        self.current = Some(next);
        Ok(Some((Operand::Copy(Place::element(region, index)), elem)))
    }

    /// `x.len()` of a `Chunked<N>` chunk, a read-only array or a slice parameter.
    fn len_call(&mut self, m: &syn::ExprMethodCall, span: SynSpan) -> Result<Value> {
        if super::syntax::as_sub_slice(&m.receiver).is_some()
            && let Binding::Window { len, .. } = self.sub_slice(&m.receiver)?
        {
            return Ok(Some((Operand::Copy(Place::local(len)), ScalarTy::Usize)));
        }
        let local = match &*m.receiver {
            syn::Expr::Path(p) => p.path.get_ident().and_then(|id| self.lookup(id)),
            _ => None,
        };
        match local {
            Some(Binding::Window { len, .. }) => {
                Ok(Some((Operand::Copy(Place::local(len)), ScalarTy::Usize)))
            }
            Some(Binding::Array(a)) => {
                let len = self.arrays[a].elems.len() as i128;
                Ok(Some((
                    Operand::Const(Const::Int(len, ScalarTy::Usize)),
                    ScalarTy::Usize,
                )))
            }
            Some(Binding::Local(l)) if self.body.locals[l.index()].ty.element().is_some() => {
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

    /// The slice parameter `e` names, if it is a name of one.
    pub(super) fn slice_param(&self, e: &syn::Expr) -> Option<Local> {
        let syn::Expr::Path(p) = e else { return None };
        match self.lookup(p.path.get_ident()?)? {
            Binding::Local(l) if matches!(self.body.locals[l.index()].ty, Ty::Slice(_)) => Some(l),
            _ => None,
        }
    }

    /// `s.get_unchecked(i)` of a slice parameter, inside an `unsafe` block.
    fn get_unchecked_call(&mut self, m: &syn::ExprMethodCall, span: SynSpan) -> Result<Value> {
        // The caller's `unsafe` block vouches for the index: no bounds check. The
        // read is marked raw, which the safety verifier exempts, and a kernel
        // with raw operations is linked only from the descriptor the macro makes
        // for code with `unsafe` blocks.
        let Some(slice) = self.slice_param(&m.receiver) else {
            return error(&m.receiver, "`get_unchecked` reads slice parameters");
        };
        let elem = self.body.locals[slice.index()]
            .ty
            .element()
            .expect("slices have elements");
        let (index, _) = self.scalar_expr(&m.args[0], Some(ScalarTy::Usize))?;
        let index = self.as_local(index, ScalarTy::Usize, span);
        let t = self.temp(elem);
        self.push(
            Place::local(t),
            Rvalue::Use(Operand::Copy(Place::element(slice, index))),
            span,
        );
        self.mark_raw();
        Ok(Some((Operand::Copy(Place::local(t)), elem)))
    }

    /// A multi-dimensional region's coordinates and extents: `row()`, `col()`, `width()`
    /// and `height()` of a 2-D region; `x()`, `y()`, `z()`, `width()`, `height()` and
    /// `depth()` of a `Linear3D` one.
    fn region_geometry_call(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        span: SynSpan,
    ) -> Result<Value> {
        let region = self.region_receiver(&m.receiver)?;
        let rank = self.strategy_of(region).rank();
        let dim = match (rank, name) {
            (2, "col") | (3, "x") | (2 | 3, "width") => Some(0),
            (2, "row") | (3, "y") | (2 | 3, "height") => Some(1),
            (3, "z" | "depth") => Some(2),
            _ => None,
        };
        let Some(dim) = dim else {
            return error(
                &m.method,
                format!(
                    "`{name}()` is not defined on a `{}` region: 2-D regions have `row()`, `col()`, `width()` and `height()`; `Linear3D` regions `x()`, `y()`, `z()`, `width()`, `height()` and `depth()`",
                    self.strategy_of(region)
                ),
            );
        };
        let v = match name {
            "width" | "height" | "depth" => self.extent(region, dim, span),
            _ => self.coord(region, dim, span),
        };
        Ok(Some((v, ScalarTy::Usize)))
    }

    pub(super) fn atomic_receiver(&self, e: &syn::Expr) -> Option<Local> {
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
    pub(super) fn intrinsic(
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

    /// `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!` and their
    /// `debug_` forms (checked in kernels always). Messages must be string literals
    /// without format arguments.
    pub(super) fn macro_call(&mut self, mac: &syn::Macro) -> Result<Value> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let span = mac.span();
        if name == "matches" {
            return self.matches_macro(mac, span);
        }
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
                let cond_text = super::syntax::expression_text(&args[0]);
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
                    "the macro `{name}!` is not supported in kernels; supported: `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!`, `matches!`"
                ),
            ),
        }
    }
}

impl Translator {
    /// `f32::max(a, b)`, `T::sqrt(x)`: a method of a scalar type called by its path, as
    /// the method call `(a as f32).max(b)` (the type written names the receiver's type,
    /// so a literal receiver takes it). `None` for a call of anything but a type's
    /// function; an error for a type that is not a scalar type.
    fn path_method(&mut self, p: &syn::ExprPath, c: &syn::ExprCall) -> Result<Option<Value>> {
        let [ty, method] = &p.path.segments.iter().collect::<Vec<_>>()[..] else {
            return Ok(None);
        };
        let name = ty.ident.to_string();
        // `Shared::<T, N>::new()` is a declaration, read where it is bound.
        if !starts_type_path(&name) || super::workgroup::SHARED_KINDS.contains(&name.as_str()) {
            return Ok(None);
        }
        let Some(scalar) = self.named_scalar(&name) else {
            return error(
                p,
                format!(
                    "`{name}::{}` cannot be called in kernels: only `#[offload_device]` functions and the methods of scalar types (`f32::max(a, b)`)",
                    method.ident
                ),
            );
        };
        if method.ident == "from" && c.args.len() == 1 {
            return self.lossless_from(&c.args[0], scalar, p).map(Some);
        }
        let mut args = c.args.iter().cloned();
        let Some(receiver) = args.next() else {
            return error(
                c,
                format!(
                    "`{name}::{}` takes the value it applies to as its first argument",
                    method.ident
                ),
            );
        };
        // `f32::from_bits(b)` reads a `u32` (`f64::from_bits`, a `u64`) as the float.
        let receiver_scalar = match (method.ident.to_string().as_str(), scalar) {
            ("from_bits", ScalarTy::F32) => ScalarTy::U32,
            ("from_bits", ScalarTy::F64) => ScalarTy::U64,
            ("from_bits", other) => {
                return error(
                    p,
                    format!(
                        "`{other}::from_bits` does not exist; `f32::from_bits` and `f64::from_bits` do"
                    ),
                );
            }
            _ => scalar,
        };
        let receiver_type: syn::Type =
            syn::parse_str(&receiver_scalar.to_string()).expect("scalar type names parse as types");
        let cast = syn::Expr::Cast(syn::ExprCast {
            attrs: Vec::new(),
            expr: Box::new(syn::Expr::Paren(syn::ExprParen {
                attrs: Vec::new(),
                paren_token: Default::default(),
                expr: Box::new(receiver),
            })),
            as_token: Default::default(),
            ty: Box::new(receiver_type),
        });
        let call = syn::ExprMethodCall {
            attrs: Vec::new(),
            receiver: Box::new(syn::Expr::Paren(syn::ExprParen {
                attrs: Vec::new(),
                paren_token: Default::default(),
                expr: Box::new(cast),
            })),
            dot_token: Default::default(),
            method: method.ident.clone(),
            turbofish: None,
            paren_token: Default::default(),
            args: args.collect(),
        };
        self.method_call(&call).map(Some)
    }

    /// `T::from(x)`: `x as T`, where Rust converts the value without loss (`u8` to `u32`,
    /// `f32` to `f64`, `bool` to a number, ...).
    fn lossless_from(&mut self, x: &syn::Expr, to: ScalarTy, p: &syn::ExprPath) -> Result<Value> {
        let (value, from) = self.scalar_expr(x, self.infer(x))?;
        if !converts_without_loss(from, to) {
            return error(
                p,
                format!(
                    "`{to}::from` does not take a `{from}`, which it cannot hold without loss; `as` converts"
                ),
            );
        }
        let span = syn::spanned::Spanned::span(p);
        Ok(Some((
            self.assign_temp(to, Rvalue::Cast(value, to), span),
            to,
        )))
    }

    /// `std::mem::swap(&mut a, &mut b)` of two places: `(a, b) = (b, a)`.
    fn swap_call(&mut self, c: &syn::ExprCall) -> Result<Value> {
        let place = |e: &syn::Expr| match super::syntax::strip_parens(e) {
            syn::Expr::Reference(r) if r.mutability.is_some() => Ok((*r.expr).clone()),
            other => error(other, "`mem::swap` takes two places as `&mut a`, `&mut b`"),
        };
        let [a, b] = &c.args.iter().collect::<Vec<_>>()[..] else {
            return error(c, "`mem::swap` takes two places as `&mut a`, `&mut b`");
        };
        let (a, b) = (place(a)?, place(b)?);
        let span = syn::spanned::Spanned::span(c);
        let swapped: syn::Expr = syn::parse_quote_spanned!(span=> (#a, #b) = (#b, #a));
        self.expr(&swapped, None)
    }

    /// `c.swap(i, j)` of a chunk, array or shared array: each index evaluated once, then
    /// `(c[i], c[j]) = (c[j], c[i])`. (An atomic's `swap` is its exchange, taken before.)
    fn swap_method(&mut self, m: &syn::ExprMethodCall) -> Result<Value> {
        let span = m.span();
        let (recv, i, j) = (&m.receiver, &m.args[0], &m.args[1]);
        self.element_loops += 1;
        let n = self.element_loops;
        let (a, b) = (
            syn::Ident::new(&format!("__offload_swap_{n}_a"), span),
            syn::Ident::new(&format!("__offload_swap_{n}_b"), span),
        );
        let swapped: syn::Expr = syn::parse_quote_spanned!(span=> {
            let #a: usize = #i;
            let #b: usize = #j;
            (#recv[#a], #recv[#b]) = (#recv[#b], #recv[#a]);
        });
        self.expr(&swapped, None)
    }

    /// `matches!(e, pattern)` (with `if guard`): `match e { pattern if guard => true, _ =>
    /// false }`.
    fn matches_macro(&mut self, mac: &syn::Macro, span: SynSpan) -> Result<Value> {
        let parse = |input: syn::parse::ParseStream| -> syn::Result<syn::ExprMatch> {
            let scrutinee: syn::Expr = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let pattern = syn::Pat::parse_multi_with_leading_vert(input)?;
            let guard = if input.peek(syn::Token![if]) {
                input.parse::<syn::Token![if]>()?;
                let guard: syn::Expr = input.parse()?;
                Some(quote::quote!(if #guard))
            } else {
                None
            };
            let _ = input.parse::<Option<syn::Token![,]>>()?;
            Ok(syn::parse_quote_spanned!(span=> match #scrutinee {
                #pattern #guard => true,
                _ => false,
            }))
        };
        let desugared = mac.parse_body_with(parse).map_err(|e| TranslateError {
            span: e.span(),
            message: e.to_string(),
        })?;
        self.match_expr(&desugared, Some(ScalarTy::Bool))
    }

    /// The scalar type `name` stands for: a type parameter of this instance, or a
    /// primitive.
    fn named_scalar(&self, name: &str) -> Option<ScalarTy> {
        self.subst
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, t)| *t)
            .or_else(|| ScalarTy::from_name(name))
    }

    /// `T::from_f64(x)` and `T::from_i64(x)` for a type `T` (a generic parameter or a
    /// primitive), and `f16::from_f32(x)`/`bf16::from_f32(x)`: `x` converted as `x as T`
    /// converts (to a half type, rounded to nearest, ties to even, as the `half` crate
    /// does), so a literal argument is a constant of `T`. `None` for any other call.
    fn conversion(
        &mut self,
        p: &syn::ExprPath,
        c: &syn::ExprCall,
    ) -> Result<Option<(Operand, ScalarTy)>> {
        let [ty, func] = &p.path.segments.iter().collect::<Vec<_>>()[..] else {
            return Ok(None);
        };
        let from = match func.ident.to_string().as_str() {
            "from_f64" => ScalarTy::F64,
            "from_f32" => ScalarTy::F32,
            "from_i64" => ScalarTy::I64,
            _ => return Ok(None),
        };
        let name = ty.ident.to_string();
        let Some(to) = self.named_scalar(&name) else {
            return Ok(None);
        };
        // `f16::from_f32(x)`, `bf16::from_f64(x)`: rounded to the half type.
        if from == ScalarTy::F32 && !to.is_half() {
            return error(
                c,
                format!("`from_f32` converts to `f16` or `bf16`, not `{to}`; `as` converts"),
            );
        }
        let [arg] = &c.args.iter().collect::<Vec<_>>()[..] else {
            return error(c, format!("`{name}::{}` takes one argument", func.ident));
        };
        if from == ScalarTy::F64 && !to.is_float() {
            return error(
                c,
                format!("`from_f64` converts to a float type (`T: Float`), not `{to}`"),
            );
        }
        let (op, ty) = self.scalar_expr(arg, Some(from))?;
        if ty != from {
            return error(
                arg,
                format!("`{}` takes a `{from}`, not a `{ty}`", func.ident),
            );
        }
        // An integer reaches a 16-bit float through `f64`, as `Num::from_i64` defines it.
        let (op, from) = if to.is_half() && !from.is_float() {
            let wide = self.cast_operand(op, from, ScalarTy::F64, c.span());
            (wide, ScalarTy::F64)
        } else {
            (op, from)
        };
        Ok(Some((self.cast_operand(op, from, to, c.span()), to)))
    }
}

/// Whether Rust's standard library has `From<from> for to`: a conversion that keeps every
/// value.
fn converts_without_loss(from: ScalarTy, to: ScalarTy) -> bool {
    use ScalarTy::*;
    if from == to || from == Bool {
        return to != Bool;
    }
    match (from, to) {
        (F32 | F16 | Bf16, F64) => true,
        (F16 | Bf16, F32) => true,
        (_, F32) => matches!(from, I8 | I16 | U8 | U16),
        (_, F64) => matches!(from, I8 | I16 | I32 | U8 | U16 | U32),
        // The pointer-sized ones take only what fits in 16 bits.
        (_, Usize) => matches!(from, U8 | U16),
        (_, Isize) => matches!(from, U8 | I8 | I16),
        (Usize | Isize, _) => false,
        _ if from.is_integer() && to.is_integer() => {
            to.bits() > from.bits() && (to.is_signed() || !from.is_signed())
        }
        _ => false,
    }
}
