//! Translation of what threads of a workgroup share: `Shared`/`DynShared` arrays,
//! `sync_threads()` (in `Translator::call`) and the subgroup operations.
//!
//! Safe shared-memory writes go to the thread's own slots only: slot `k * T + rank` for
//! its `k`-th slot, where `T` is the number of threads per workgroup and `rank` the
//! thread's linear index in it. Reads may touch any slot. The race check in
//! [`offload_mir::convergence`] then proves a barrier separates writes from reads.

use super::builtins::Function;
use super::{Binding, Result, Translator, Value, error, span_of};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use syn::spanned::Spanned;

impl Translator {
    /// `let tile = Shared::<T, N>::new();` or `let cache = DynShared::<T>::new();`, with
    /// the generic arguments on the constructor or on a `let` annotation. Returns whether
    /// `local` was such a declaration.
    pub(super) fn shared_declaration(&mut self, local: &syn::Local) -> Result<bool> {
        let (pat, annotation) = match &local.pat {
            syn::Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            other => (other, None),
        };
        let Some(init) = &local.init else {
            return Ok(false);
        };
        let syn::Expr::Call(call) = &*init.expr else {
            return Ok(false);
        };
        let syn::Expr::Path(path) = &*call.func else {
            return Ok(false);
        };
        let segments: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
        let [.., ty_segment, new] = segments[..] else {
            return Ok(false);
        };
        let kind = ty_segment.ident.to_string();
        if !SHARED_KINDS.contains(&kind.as_str()) || new.ident != "new" {
            return Ok(false);
        }
        if self.body.kind == BodyKind::Device {
            return error(
                &init.expr,
                "shared memory belongs to a workgroup: declare it in the kernel, not in a device function",
            );
        }
        if !call.args.is_empty() {
            return error(&call.args, format!("`{kind}::new()` takes no arguments"));
        }
        let syn::Pat::Ident(id) = pat else {
            return error(pat, "name the shared array: `let tile = ...`");
        };
        // The generic arguments: from the annotation if there is one.
        let arguments = match annotation {
            Some(syn::Type::Path(t)) => t.path.segments.last().map(|s| &s.arguments),
            Some(other) => return error(other, format!("expected a `{kind}<..>` type")),
            None => Some(&ty_segment.arguments),
        };
        let Some(syn::PathArguments::AngleBracketed(args)) = arguments else {
            return error(
                ty_segment,
                format!(
                    "name the element type (and length): `{kind}::<f32{}>::new()`",
                    if kind == "Shared" { ", 256" } else { "" }
                ),
            );
        };
        let args: Vec<&syn::GenericArgument> = args.args.iter().collect();
        let (elem, len, tile) = self.shared_shape(&kind, &args, ty_segment)?;
        let elem = self.shared_element(elem, len, ty_segment)?;
        let l = self.declare(
            Ty::Shared(elem, len),
            id.mutability.is_some(),
            Some((&id.ident, id.ident.span())),
        );
        if let Some(tile) = tile {
            self.tiles.insert(l, tile);
        }
        self.bind(&id.ident, Binding::Local(l));
        Ok(true)
    }

    /// The element type of a shared array of `len` elements (`None`: dynamic), checked:
    /// a number, and a static array within the static shared-memory limit.
    fn shared_element(
        &self,
        elem: &syn::Type,
        len: Option<Param>,
        ty_segment: &syn::PathSegment,
    ) -> Result<ScalarTy> {
        let elem = super::scalar_type(elem, &self.subst)?;
        if elem == ScalarTy::Bool {
            return error(ty_segment, "shared memory holds numbers, not `bool`");
        }
        // A length from a `const` item is checked where the kernel is linked.
        let limit = offload_mir::safety::MAX_STATIC_SHARED_BYTES;
        if let Some(Param::Value(n)) = len
            && n as usize * elem.size_bytes() > limit
        {
            return error(
                ty_segment,
                format!(
                    "`Shared::<{elem}, {n}>` takes {} bytes; a workgroup may declare at most {limit} bytes of static shared memory (use `DynShared` with `dyn_cache` for more)",
                    n as u64 * elem.size_bytes() as u64
                ),
            );
        }
        Ok(elem)
    }

    /// The generic arguments `args` of a `kind` (`Shared`, `Shared2D` or `DynShared`)
    /// declaration, read: the element type, the length (`None` for `DynShared`), and the
    /// rows and columns of a `Shared2D` tile. A size is a positive integer literal (or
    /// literal arithmetic in braces) or a `const` item outside the kernel.
    fn shared_shape<'a>(
        &self,
        kind: &str,
        args: &[&'a syn::GenericArgument],
        ty_segment: &syn::PathSegment,
    ) -> Result<(&'a syn::Type, Option<Param>, Option<TileShape>)> {
        match (kind, args) {
            ("Shared2D", [syn::GenericArgument::Type(t), r, c, pad @ ..]) if pad.len() <= 1 => {
                let (Some(rows), Some(cols)) = (self.size(r), self.size(c)) else {
                    return error(
                        ty_segment,
                        "the rows and columns of a `Shared2D` tile must be positive integer literals or `const` items",
                    );
                };
                let pad = pad.first().copied();
                // Padding: a literal (0 for none) or a `const` item.
                let padding = match pad {
                    None => Some(Param::Value(0)),
                    Some(syn::GenericArgument::Const(e)) if const_usize(e).is_some() => {
                        const_usize(e)
                            .and_then(|n| u32::try_from(n).ok())
                            .map(Param::Value)
                    }
                    Some(p) => self.size(p),
                };
                let Some(padding) = padding else {
                    return error(
                        ty_segment,
                        "the padding of a `Shared2D` tile must be an integer literal or a `const` item",
                    );
                };
                let mixed = [Some(*r), Some(*c), pad]
                    .into_iter()
                    .flatten()
                    .any(|a| self.declared_here(a));
                let named = |this: &Self, text: String| match this.named_size(&text) {
                    Some(p) => Ok(p),
                    None => error(ty_segment, "this `Shared2D` tile is too large"),
                };
                let pitch = match (cols, padding, pad) {
                    (_, Param::Value(0), _) | (_, _, None) => cols,
                    (Param::Value(c), Param::Value(p), _) => match c.checked_add(p) {
                        Some(pitch) => Param::Value(pitch),
                        None => return error(ty_segment, "this `Shared2D` tile is too large"),
                    },
                    (_, _, Some(pad)) => named(self, super::consts::tile_pitch(c, pad))?,
                };
                let len = match (rows, pitch) {
                    (Param::Value(r), Param::Value(p)) => {
                        let Some(len) = (r as u64)
                            .checked_mul(p as u64)
                            .filter(|n| *n <= u32::MAX as u64)
                        else {
                            return error(ty_segment, "this `Shared2D` tile is too large");
                        };
                        Param::Value(len as u32)
                    }
                    // Named by the product of its rows and row pitch (`kernel_consts`),
                    // which rustc evaluates where the items are: all outside the kernel.
                    _ if mixed => {
                        return error(
                            ty_segment,
                            "the sizes of this `Shared2D` tile come from `const` items declared in the kernel and outside it; declare them in the same place",
                        );
                    }
                    _ => {
                        let pad = pad.filter(|_| pitch != cols);
                        named(self, super::consts::tile_len(r, c, pad))?
                    }
                };
                Ok((t, Some(len), Some((rows, cols, pitch))))
            }
            ("Shared", [syn::GenericArgument::Type(t), n]) => {
                let Some(len) = self.size(n) else {
                    return error(
                        n,
                        "the length of a `Shared` array must be a positive integer literal (or literal arithmetic in braces) or a `const` item",
                    );
                };
                Ok((t, Some(len), None))
            }
            ("DynShared", [syn::GenericArgument::Type(t)]) => Ok((t, None, None)),
            _ => error(
                ty_segment,
                format!(
                    "expected `{kind}::<T{}>`",
                    if kind == "Shared" { ", N" } else { "" }
                ),
            ),
        }
    }

    /// A shared array's size argument: a positive literal (or literal arithmetic), a
    /// `const` item declared in the kernel (which hides one of the module's name), or a
    /// `const` item outside the kernel.
    fn size(&self, arg: &syn::GenericArgument) -> Option<Param> {
        if let syn::GenericArgument::Const(e) = arg
            && let Some(n) = const_usize(e)
        {
            return u32::try_from(n).ok().filter(|n| *n > 0).map(Param::Value);
        }
        let name = super::consts::size_name(arg)?;
        let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
        match self.lookup(&ident) {
            Some(Binding::Local(l)) => match self.known_ranges.get(&l) {
                Some(&(lo, hi)) if lo == hi => u32::try_from(lo).ok().map(Param::Value),
                _ => None,
            },
            Some(_) => None,
            None => self.named_size(&name),
        }
    }

    /// Whether a size argument names a binding of the kernel (a `const` declared in it).
    fn declared_here(&self, arg: &syn::GenericArgument) -> bool {
        super::consts::size_name(arg).is_some_and(|name| {
            self.lookup(&syn::Ident::new(&name, proc_macro2::Span::call_site()))
                .is_some()
        })
    }

    /// The size a `const` item outside the kernel (or a tile's `ROWS * COLS`) gives: its
    /// value, if known and a `u32`, or the item itself, whose value the macro fills in
    /// (rustc then checks it fits). A 0 is refused where the kernel is linked, on either
    /// path, as the macro's cannot know it sooner.
    fn named_size(&self, name: &str) -> Option<Param> {
        super::consts::named_param(&self.consts, name)
    }

    pub(super) fn shared_receiver(&self, e: &syn::Expr) -> Option<Local> {
        let syn::Expr::Path(p) = e else { return None };
        match self.lookup(p.path.get_ident()?)? {
            Binding::Local(l) if matches!(self.body.locals[l.index()].ty, Ty::Shared(..)) => {
                Some(l)
            }
            _ => None,
        }
    }

    /// Methods of a shared array: `write(v)`, `write_nth(k, v)`, `len()`, and the raw
    /// `unsafe` `load(i)` and `store(i, v)`.
    pub(super) fn shared_call(&mut self, m: &syn::ExprMethodCall, shared: Local) -> Result<Value> {
        let span = m.span();
        let name = m.method.to_string();
        // A tile's `write_nth` is the array's: slots count row by row.
        if let Some(&tile) = self.tiles.get(&shared)
            && name != "write_nth"
        {
            let args: Vec<&syn::Expr> = m.args.iter().collect();
            return self.tile_call(m, shared, tile, &name, &args);
        }
        let elem = self.body.locals[shared.index()]
            .ty
            .element()
            .expect("shared arrays have elements");
        let arity = match name.as_str() {
            "len" => 0,
            "write" | "load" => 1,
            "write_nth" | "store" => 2,
            _ => {
                return error(
                    &m.method,
                    format!(
                        "`{name}` is not a shared-memory operation; supported: write write_nth len, and the unsafe load store"
                    ),
                );
            }
        };
        if m.args.len() != arity {
            return error(
                m,
                format!(
                    "`{name}` takes {arity} argument{}",
                    if arity == 1 { "" } else { "s" }
                ),
            );
        }
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match name.as_str() {
            "len" => Ok(Some((
                self.assign_temp(ScalarTy::Usize, Rvalue::Len(shared), span),
                ScalarTy::Usize,
            ))),
            "write" | "write_nth" => {
                let nth = if name == "write_nth" {
                    Some(self.scalar_expr(args[0], Some(ScalarTy::Usize))?.0)
                } else {
                    None
                };
                let (value, _) = self.scalar_expr(args[arity - 1], Some(elem))?;
                let index = self.own_slot(shared, nth, span);
                self.push(Place::element(shared, index), Rvalue::Use(value), span);
                Ok(None)
            }
            "load" => {
                let (index, _) = self.scalar_expr(args[0], Some(ScalarTy::Usize))?;
                let (place, ty) = self.shared_read(shared, index, span, true);
                Ok(Some((Operand::Copy(place), ty)))
            }
            _ => {
                let (index, _) = self.scalar_expr(args[0], Some(ScalarTy::Usize))?;
                let (value, _) = self.scalar_expr(args[1], Some(elem))?;
                let index = self.checked_index(shared, index, span);
                self.push(Place::element(shared, index), Rvalue::Use(value), span);
                self.mark_raw();
                Ok(None)
            }
        }
    }

    /// The methods of a `Shared2D` tile: `write(v)`, the thread's own slot `(y, x)` (the
    /// workgroup at most `COLS` threads wide and one plane deep, checked at the write, so
    /// that no other thread has this slot), `rows()`, `cols()`, `len()`.
    fn tile_call(
        &mut self,
        m: &syn::ExprMethodCall,
        tile: Local,
        (rows, cols, pitch): TileShape,
        name: &str,
        args: &[&syn::Expr],
    ) -> Result<Value> {
        let span = m.span();
        let usize_const = |v: u64| Operand::Const(Const::Int(v as i128, ScalarTy::Usize));
        let param = |p: Param| Operand::Const(super::places::param_const(p, ScalarTy::Usize));
        let len = match self.body.locals[tile.index()].ty {
            Ty::Shared(_, Some(n)) => n,
            _ => unreachable!("tiles have a static length"),
        };
        match (name, args) {
            ("write", [value]) => {
                let elem = self.body.locals[tile.index()]
                    .ty
                    .element()
                    .expect("shared arrays have elements");
                let (value, _) = self.scalar_expr(value, Some(elem))?;
                // The thread (y, x) writes slot (y, x), which is its own when the
                // workgroup is no wider than a row (narrower leaves padding columns, the
                // cure for bank conflicts) and one plane deep.
                let position = |b: &mut Self, p: Position, d: u8| {
                    b.assign_temp(ScalarTy::Usize, Rvalue::Position(p, d), span)
                };
                let width = position(self, Position::WorkgroupSize, 0);
                let fits = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::Le, width, param(cols)),
                    span,
                );
                self.assert(
                    fits,
                    "a `Shared2D` tile is written by workgroups at most as wide as its columns",
                    span,
                );
                if pitch != cols {
                    // Implied by the check above; the race check proves the rows apart
                    // from a bound on the width that is the row pitch itself.
                    let width = position(self, Position::WorkgroupSize, 0);
                    let within = self.assign_temp(
                        ScalarTy::Bool,
                        Rvalue::BinaryOp(BinOp::Le, width, param(pitch)),
                        span,
                    );
                    self.assert(within, "a padded `Shared2D` row holds its columns", span);
                }
                let depth = position(self, Position::WorkgroupSize, 2);
                let flat = self.assign_temp(
                    ScalarTy::Bool,
                    Rvalue::BinaryOp(BinOp::Eq, depth, usize_const(1)),
                    span,
                );
                self.assert(
                    flat,
                    "a `Shared2D` tile is written by workgroups of one plane (`workgroup_dim(2) == 1`)",
                    span,
                );
                let (x, y) = (
                    position(self, Position::Thread, 0),
                    position(self, Position::Thread, 1),
                );
                let row = self.assign_temp(
                    ScalarTy::Usize,
                    Rvalue::BinaryOp(BinOp::Mul, y, param(pitch)),
                    span,
                );
                let slot =
                    self.assign_temp(ScalarTy::Usize, Rvalue::BinaryOp(BinOp::Add, row, x), span);
                let index = self.checked_index(tile, slot, span);
                self.push(Place::element(tile, index), Rvalue::Use(value), span);
                Ok(None)
            }
            ("fill_from", [src, row_len, row, col]) => {
                self.fill_from(m, tile, (rows, cols, pitch), [src, row_len, row, col])
            }
            ("rows", []) => Ok(Some((param(rows), ScalarTy::Usize))),
            ("cols", []) => Ok(Some((param(cols), ScalarTy::Usize))),
            ("len", []) => Ok(Some((param(len), ScalarTy::Usize))),
            _ => error(
                &m.method,
                format!(
                    "`{name}` with {} argument(s) is not an operation of a `Shared2D` tile; supported: write(v), write_nth(k, v), fill_from(&x, row_len, row, col), rows(), cols(), len(), and reading `tile[(r, c)]`",
                    args.len()
                ),
            ),
        }
    }

    /// `tile[(r, c)]` of a `Shared2D` tile: `c` is checked below the columns, and the slot
    /// `r * cols + c` below the length.
    pub(super) fn tile_read(
        &mut self,
        tile: Local,
        index: &syn::Expr,
        span: SynSpan,
    ) -> Result<(Place, ScalarTy)> {
        let (_, cols, pitch) = self.tiles[&tile];
        let syn::Expr::Tuple(pair) = super::syntax::strip_parens(index) else {
            return error(index, "a `Shared2D` tile is indexed by `(row, column)`");
        };
        let [r, c] = &pair.elems.iter().collect::<Vec<_>>()[..] else {
            return error(index, "a `Shared2D` tile is indexed by `(row, column)`");
        };
        let (r, _) = self.scalar_expr(r, Some(ScalarTy::Usize))?;
        let (c, _) = self.scalar_expr(c, Some(ScalarTy::Usize))?;
        let cols_const = Operand::Const(super::places::param_const(cols, ScalarTy::Usize));
        let pitch_const = Operand::Const(super::places::param_const(pitch, ScalarTy::Usize));
        let c = self.as_local(c, ScalarTy::Usize, span);
        self.bounds_check(c, cols_const, span);
        let row_start = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(BinOp::Mul, r, pitch_const),
            span,
        );
        let at = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(BinOp::Add, row_start, Operand::Copy(Place::local(c))),
            span,
        );
        Ok(self.shared_read(tile, at, span, false))
    }

    /// Reads slot `index` of a shared array into a temporary, bounds-checked. The read is
    /// its own statement so the race check sees it wherever the value is used.
    pub(super) fn shared_read(
        &mut self,
        shared: Local,
        index: Operand,
        span: SynSpan,
        raw: bool,
    ) -> (Place, ScalarTy) {
        let elem = self.body.locals[shared.index()]
            .ty
            .element()
            .expect("shared arrays have elements");
        let index = self.checked_index(shared, index, span);
        let t = self.temp(elem);
        self.push(
            Place::local(t),
            Rvalue::Use(Operand::Copy(Place::element(shared, index))),
            span,
        );
        if raw {
            self.mark_raw();
        }
        (Place::local(t), elem)
    }

    /// Marks the statement just pushed as made by the raw API.
    pub(super) fn mark_raw(&mut self) {
        let bb = self.current.expect("a statement was just pushed");
        if let Some(s) = self.body.blocks[bb.index()].statements.last_mut() {
            s.raw = true;
        }
    }

    /// The thread's `nth` own slot of `shared` (`0` without `nth`), `nth * threads +
    /// rank`, checked: `rank < len`, or `nth < len / threads`, which keeps the product
    /// from wrapping onto another thread's slot.
    fn own_slot(&mut self, shared: Local, nth: Option<Operand>, span: SynSpan) -> Local {
        let usize_ = ScalarTy::Usize;
        let rank = self.rank(span);
        let Some(nth) = nth else {
            return self.checked_index(shared, rank, span);
        };
        let bin =
            |b: &mut Translator, op, x, y| b.assign_temp(usize_, Rvalue::BinaryOp(op, x, y), span);
        let threads = self.workgroup_threads(span);
        let len = self.assign_temp(usize_, Rvalue::Len(shared), span);
        // `k` runs up to the last round, which may cover part of the workgroup (a length
        // that is not a multiple of the thread count), and the slot is checked too: `k`
        // small keeps `k * threads + rank` from wrapping onto another thread's slot.
        let whole = bin(self, BinOp::Div, len, threads);
        let rounds = bin(
            self,
            BinOp::Add,
            whole,
            Operand::Const(Const::Int(1, usize_)),
        );
        let nth = self.as_local(nth, usize_, span);
        self.bounds_check(nth, rounds, span);
        let base = bin(self, BinOp::Mul, Operand::Copy(Place::local(nth)), threads);
        let slot = bin(self, BinOp::Add, base, rank);
        self.checked_index(shared, slot, span)
    }

    /// `workgroup_sum(v)`, `workgroup_min(v)`, `workgroup_max(v)`: `v` combined over the
    /// workgroup, in every thread. Made of what the verifier already checks: each
    /// subgroup's result goes to the thread's own slot of a hidden shared array; after a
    /// barrier, lane `l` combines the results of subgroups `l`, `l + width`, ... and the
    /// subgroup combines those; a second barrier lets the array be written again.
    pub(super) fn workgroup_reduce(
        &mut self,
        c: &syn::ExprCall,
        name: &'static str,
        op: SubgroupOp,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        if self.body.kind == BodyKind::Device {
            return error(
                c,
                format!("only kernels can call `{name}`, not device functions"),
            );
        }
        let [arg] = &c.args.iter().collect::<Vec<_>>()[..] else {
            return error(c, format!("`{name}` takes 1 argument"));
        };
        let want = self.infer(arg).or(expected);
        let (value, ty) = self.scalar_expr(arg, want)?;
        if ty == ScalarTy::Bool {
            return error(arg, format!("`{name}` combines numbers, not `bool`"));
        }
        let span = c.span();
        self.reduction_calls.push((span_of(span), name));
        let usize_ = ScalarTy::Usize;
        let scratch = self.reduction_scratch(ty);
        let part = self.assign_temp(ty, Rvalue::Subgroup(op, vec![value]), span);
        let slot = self.own_slot(scratch, None, span);
        self.push(Place::element(scratch, slot), Rvalue::Use(part), span);
        self.barrier(span);

        let bin =
            |b: &mut Translator, op, x, y| b.assign_temp(usize_, Rvalue::BinaryOp(op, x, y), span);
        let threads = self.workgroup_threads(span);
        let width = self.assign_temp(usize_, Rvalue::Subgroup(SubgroupOp::Size, vec![]), span);
        let lane = self.assign_temp(usize_, Rvalue::Subgroup(SubgroupOp::Lane, vec![]), span);
        let step = bin(self, BinOp::Mul, width, width);
        let first = bin(self, BinOp::Mul, lane, width);
        let k = self.as_local(first, usize_, span);
        let acc = self.temp(ty);
        let identity = match (op, ty.is_float()) {
            (SubgroupOp::Sum, true) => Const::Float(0.0, ty),
            (SubgroupOp::Sum, false) => Const::Int(0, ty),
            (SubgroupOp::Min, true) => Const::Float(f64::INFINITY, ty),
            (_, true) => Const::Float(f64::NEG_INFINITY, ty),
            (SubgroupOp::Min, false) => Const::Int(int_bound(ty, true), ty),
            (_, false) => Const::Int(int_bound(ty, false), ty),
        };
        self.push(
            Place::local(acc),
            Rvalue::Use(Operand::Const(identity)),
            span,
        );
        let (header, body, exit) = (self.new_block(), self.new_block(), self.new_block());
        self.goto(header, span);
        self.current = Some(header);
        let more = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Lt, Operand::Copy(Place::local(k)), threads),
            span,
        );
        self.switch_bool(more, body, exit, span);
        self.current = Some(body);
        let (read, _) = self.shared_read(scratch, Operand::Copy(Place::local(k)), span, false);
        let combined = match op {
            SubgroupOp::Sum => Rvalue::BinaryOp(
                BinOp::Add,
                Operand::Copy(Place::local(acc)),
                Operand::Copy(read),
            ),
            SubgroupOp::Min => Rvalue::Intrinsic(
                Intrinsic::Min,
                vec![Operand::Copy(Place::local(acc)), Operand::Copy(read)],
            ),
            _ => Rvalue::Intrinsic(
                Intrinsic::Max,
                vec![Operand::Copy(Place::local(acc)), Operand::Copy(read)],
            ),
        };
        self.push(Place::local(acc), combined, span);
        self.push(
            Place::local(k),
            Rvalue::BinaryOp(BinOp::Add, Operand::Copy(Place::local(k)), step),
            span,
        );
        self.goto(header, span);
        self.current = Some(exit);
        let total = self.assign_temp(
            ty,
            Rvalue::Subgroup(op, vec![Operand::Copy(Place::local(acc))]),
            span,
        );
        self.barrier(span);
        Ok(Some((total, ty)))
    }

    /// The hidden shared array `workgroup_sum` and friends use for `elem`: one slot per
    /// thread of the largest workgroup, declared once per kernel and element type.
    fn reduction_scratch(&mut self, elem: ScalarTy) -> Local {
        if let Some(&(_, l)) = self.reduction_scratch.iter().find(|(t, _)| *t == elem) {
            return l;
        }
        let slots = offload_mir::abi::MAX_WORKGROUP_THREADS;
        let l = self.declare(Ty::Shared(elem, Some(Param::Value(slots))), true, None);
        self.reduction_scratch.push((elem, l));
        l
    }

    /// A workgroup barrier here.
    fn barrier(&mut self, span: SynSpan) {
        let target = self.new_block();
        self.terminate(TerminatorKind::Barrier { target }, span);
        self.current = Some(target);
    }

    /// The thread's linear rank in its workgroup ([`RANK_START`], [`RANK_STEPS`]).
    pub(super) fn rank(&mut self, span: SynSpan) -> Operand {
        let usize_ = ScalarTy::Usize;
        let (p, d) = RANK_START;
        let start = self.assign_temp(usize_, Rvalue::Position(p, d), span);
        RANK_STEPS.into_iter().fold(start, |acc, (op, p, d)| {
            let position = self.assign_temp(usize_, Rvalue::Position(p, d), span);
            self.assign_temp(usize_, Rvalue::BinaryOp(op, acc, position), span)
        })
    }

    /// The threads of the workgroup ([`WORKGROUP_THREADS`]).
    fn workgroup_threads(&mut self, span: SynSpan) -> Operand {
        let usize_ = ScalarTy::Usize;
        let [(p, d), rest @ ..] = WORKGROUP_THREADS;
        let first = self.assign_temp(usize_, Rvalue::Position(p, d), span);
        rest.into_iter().fold(first, |acc, (p, d)| {
            let position = self.assign_temp(usize_, Rvalue::Position(p, d), span);
            self.assign_temp(usize_, Rvalue::BinaryOp(BinOp::Mul, acc, position), span)
        })
    }

    /// `subgroup_sum(v)` and the other subgroup functions.
    pub(super) fn subgroup_call(
        &mut self,
        c: &syn::ExprCall,
        op: SubgroupOp,
        expected: Option<ScalarTy>,
    ) -> Result<Value> {
        let func = match &*c.func {
            syn::Expr::Path(p) => p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default(),
            _ => op.name().to_string(),
        };
        if c.args.len() != op.arity() {
            return error(
                c,
                format!(
                    "`{func}` takes {} argument{}",
                    op.arity(),
                    if op.arity() == 1 { "" } else { "s" }
                ),
            );
        }
        let mut args = Vec::new();
        let mut first = None;
        for (i, arg) in c.args.iter().enumerate() {
            let want = Function::Subgroup(op)
                .argument(i)
                .or_else(|| self.infer(arg).or(expected));
            let (operand, ty) = self.scalar_expr(arg, want)?;
            first.get_or_insert(ty);
            args.push(operand);
        }
        let ty = match op.result_type(first) {
            Ok(t) => t,
            Err(message) => return error(c, message.replace(op.name(), &func)),
        };
        Ok(Some((
            self.assign_temp(ty, Rvalue::Subgroup(op, args), c.span()),
            ty,
        )))
    }
}

impl Translator {
    /// `tile.fill_from(&x, row_len, row, col)`: the whole workgroup fills the tile with
    /// the block of the slice parameter `x` (read as rows of `row_len` elements) whose
    /// top-left element is `(row, col)`, zeros past a row's end or the slice's.
    fn fill_from(
        &mut self,
        m: &syn::ExprMethodCall,
        tile: Local,
        (rows, cols, pitch): TileShape,
        [src, row_len, row, col]: [&syn::Expr; 4],
    ) -> Result<Value> {
        if self.body.kind == BodyKind::Device {
            return error(m, "only kernels can call `fill_from`, not device functions");
        }
        let slice = match super::syntax::strip_parens(src) {
            syn::Expr::Reference(r) if r.mutability.is_none() => self.slice_param(&r.expr),
            _ => None,
        };
        let Some(slice) = slice else {
            return error(
                src,
                "`fill_from` reads a slice parameter of the kernel, as `&x`",
            );
        };
        let elem = |l: Local| self.body.locals[l.index()].ty.element();
        if elem(slice) != elem(tile) {
            return error(
                src,
                "`fill_from` fills a tile from a slice of its element type",
            );
        }
        let mut origin = Vec::new();
        for e in [row_len, row, col] {
            origin.push(self.scalar_expr(e, Some(ScalarTy::Usize))?.0);
        }
        let target = self.new_block();
        let fill = TerminatorKind::TileFill {
            tile,
            src: slice,
            origin: [origin[0], origin[1], origin[2]],
            shape: [rows, cols, pitch],
            target,
        };
        self.terminate(fill, m.span());
        self.current = Some(target);
        Ok(None)
    }

    /// `tile_mma(&mut acc, &a, &b)`: `acc += a × b` by the whole workgroup, over three
    /// distinct `Shared2D` tiles whose extents are multiples of 16 (rustc checks that
    /// they agree, and the element types).
    pub(super) fn tile_mma(&mut self, c: &syn::ExprCall, in_device: bool) -> Result<Value> {
        if in_device {
            return error(c, "only kernels can call `tile_mma`, not device functions");
        }
        const FORM: &str = "`tile_mma` takes `&mut acc, &a, &b`: references to three `Shared2D` tiles of the kernel";
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let [acc, a, b] = args[..] else {
            return error(c, FORM);
        };
        let tile = |t: &Self, e: &syn::Expr, mutable: bool| -> Result<(Local, TileShape)> {
            let syn::Expr::Reference(r) = e else {
                return error(e, FORM);
            };
            if r.mutability.is_some() != mutable {
                return error(e, FORM);
            }
            match t.shared_receiver(&r.expr) {
                Some(l) if t.tiles.contains_key(&l) => Ok((l, t.tiles[&l])),
                _ => error(&r.expr, FORM),
            }
        };
        let (acc, (m, n, ldc)) = tile(self, acc, true)?;
        let (a, (a_rows, k, lda)) = tile(self, a, false)?;
        let (b, (b_rows, b_cols, ldb)) = tile(self, b, false)?;
        let elem = |l: Local| self.body.locals[l.index()].ty.element();
        let elems = [elem(acc), elem(a), elem(b)].map(|e| e.expect("tiles have elements"));
        use ScalarTy::*;
        if !matches!(
            elems,
            [F32, F16, F16] | [F32, Bf16, Bf16] | [F32, F32, F32] | [F64, F64, F64]
        ) {
            let [acc, a, b] = elems;
            return error(
                c,
                format!(
                    "`tile_mma` multiplies `f16` or `bf16` tiles into an `f32` accumulator, `f32` tiles into `f32` or `f64` into `f64`; found `{a}` × `{b}` into `{acc}`"
                ),
            );
        }
        let known = |p: Param| p.value();
        let agree = |x: Param, y: Param| x == y || known(x).is_none() || known(y).is_none();
        if !(agree(a_rows, m) && agree(b_rows, k) && agree(b_cols, n)) {
            return error(
                c,
                "`tile_mma(&mut acc, &a, &b)` takes an `M × N` accumulator, an `M × K` tile `a` and a `K × N` tile `b`",
            );
        }
        if acc == a || acc == b {
            return error(
                c,
                "`tile_mma` adds into its first tile, which must not also be multiplied",
            );
        }
        for extent in [m, n, k] {
            if let Some(v) = extent.value()
                && v % 16 != 0
            {
                return error(
                    c,
                    format!(
                        "`tile_mma` multiplies tiles whose rows and columns are multiples of 16 (the tensor cores' 16 × 16 × 16 step); this one has {v}"
                    ),
                );
            }
        }
        let half = matches!(elems[1], F16 | Bf16);
        if half
            && [lda, ldb]
                .iter()
                .any(|p| p.value().is_some_and(|v| v % 8 != 0))
        {
            return error(
                c,
                "`tile_mma` reads `f16`/`bf16` tiles a 16-byte row piece at a time: pad their rows by a multiple of 8 elements",
            );
        }
        let target = self.new_block();
        let mma = TerminatorKind::TileMma {
            acc,
            a,
            b,
            shape: [m, n, k],
            pitches: [ldc, lda, ldb],
            target,
        };
        self.terminate(mma, c.span());
        self.current = Some(target);
        Ok(None)
    }
}

/// The rows, columns and row pitch (columns and padding) of a `Shared2D` tile.
pub(super) type TileShape = (Param, Param, Param);

/// The shared-memory types a kernel declares with `::new()`.
pub(super) const SHARED_KINDS: [&str; 3] = ["Shared", "DynShared", "Shared2D"];

/// A `Shared` length: an integer literal, or `+`, `-`, `*` of them, in braces or not.
fn const_usize(e: &syn::Expr) -> Option<u64> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Paren(p) => const_usize(&p.expr),
        syn::Expr::Block(b) => match &b.block.stmts[..] {
            [syn::Stmt::Expr(e, None)] => const_usize(e),
            _ => None,
        },
        syn::Expr::Binary(b) => {
            let (x, y) = (const_usize(&b.left)?, const_usize(&b.right)?);
            match b.op {
                syn::BinOp::Add(_) => x.checked_add(y),
                syn::BinOp::Sub(_) => x.checked_sub(y),
                syn::BinOp::Mul(_) => x.checked_mul(y),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The least (`min`) or greatest value of integer type `ty`.
fn int_bound(ty: ScalarTy, max: bool) -> i128 {
    let bits = ty.bits();
    match (ty.is_signed(), max) {
        (true, true) => (1i128 << (bits - 1)) - 1,
        (true, false) => -(1i128 << (bits - 1)),
        (false, true) => (1i128 << bits) - 1,
        (false, false) => 0,
    }
}
