//! Places that kernels read and write: locals, slice and chunk indexing, `*v` of a
//! region element, and `Region` access (`get_mut`, the coordinates, `Stencil2D` neighbours).

use super::syntax::expression_text;
use super::syntax::strip_parens;
use super::{Binding, Result, Translator, error};
use offload_mir::*;
use proc_macro2::Span as SynSpan;
use syn::spanned::Spanned;

impl Translator {
    /// `if let Some(v) = region.get_mut()`: the thread owns an element iff its index is
    /// below the region's length. Returns the block where the `then` branch goes on.
    pub(super) fn region_get_mut(
        &mut self,
        l: &syn::ExprLet,
        then_bb: BasicBlock,
        else_bb: BasicBlock,
    ) -> Result<BasicBlock> {
        const FORM: &str = "the supported `if let`s (and `let ... else`s and `while let`s, which take the same patterns) are `if let Some(v) = region.get_mut()`, `if let Some(v) = stencil.get(dr, dc)` and `if let Some(&v) = slice.get(i)` (or `slice.first()`, `slice.last()`)";
        let syn::Pat::TupleStruct(ts) = &*l.pat else {
            return error(&l.pat, FORM);
        };
        // `Some(v)`, or `Some(&v)` (a slice's element by value).
        let (binding, by_value) = match (ts.path.get_ident(), ts.elems.len(), ts.elems.first()) {
            (Some(some), 1, Some(pat)) if some == "Some" => match pat {
                syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                    (&id.ident, false)
                }
                syn::Pat::Reference(r) if r.mutability.is_none() => match &*r.pat {
                    syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                        (&id.ident, true)
                    }
                    _ => return error(&l.pat, FORM),
                },
                _ => return error(&l.pat, FORM),
            },
            _ => return error(&l.pat, FORM),
        };
        let syn::Expr::MethodCall(m) = &*l.expr else {
            return error(&l.expr, FORM);
        };
        if let Some(get) = super::reductions::as_get(m) {
            return self.slice_get(&get, binding, by_value, then_bb, else_bb);
        }
        if by_value {
            return error(&l.pat, FORM);
        }
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
        let owned = self.owns_element(m, region, strategy, index, span)?;
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
                vec![left, Operand::Const(param_const(n, ScalarTy::Usize))],
                span,
            )?;
            let chunk_len = self.as_local(chunk, ScalarTy::Usize, span);
            self.bind(
                binding,
                Binding::Window {
                    base: region,
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

    /// Whether this thread owns an element of `region` (its element index `index`):
    /// the index below the length, or every coordinate below its end.
    fn owns_element(
        &mut self,
        m: &syn::ExprMethodCall,
        region: Local,
        strategy: Strategy,
        index: Local,
        span: proc_macro2::Span,
    ) -> Result<Operand> {
        let lt = |b: &mut Self, a: Operand, c: Operand| {
            b.assign_temp(ScalarTy::Bool, Rvalue::BinaryOp(BinOp::Lt, a, c), span)
        };
        Ok(match strategy {
            Strategy::Linear1D | Strategy::Chunked(_) | Strategy::Indexed => {
                let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(region), span);
                lt(self, Operand::Copy(Place::local(index)), len)
            }
            Strategy::Linear2D | Strategy::Linear3D => {
                // Every coordinate below the end of those the region's threads own.
                let mut owned = None;
                for d in 0..strategy.rank() {
                    let coord = self.coord(region, d, span);
                    let end = self.assign_temp(ScalarTy::Usize, Rvalue::RegionEnd(region, d), span);
                    let inside = lt(self, coord, end);
                    owned = Some(match owned {
                        None => inside,
                        Some(so_far) => self.assign_temp(
                            ScalarTy::Bool,
                            Rvalue::BinaryOp(BinOp::BitAnd, so_far, inside),
                            span,
                        ),
                    });
                }
                owned.expect("a multi-dimensional region has coordinates")
            }
            Strategy::Stencil2D(_) => {
                return error(
                    &m.method,
                    "a `Stencil2D` region is read-only: read it with `get(dr, dc)` or `get_clamped(dr, dc)`",
                );
            }
        })
    }

    pub(super) fn strategy_of(&self, region: Local) -> Strategy {
        match self.body.locals[region.index()].ty {
            Ty::Region(_, s) => s,
            _ => unreachable!("region_receiver only returns regions"),
        }
    }

    pub(super) fn coord(&mut self, region: Local, dim: u8, span: SynSpan) -> Operand {
        self.assign_temp(ScalarTy::Usize, Rvalue::RegionCoord(region, dim), span)
    }

    pub(super) fn extent(&mut self, region: Local, dim: u8, span: SynSpan) -> Operand {
        self.assign_temp(ScalarTy::Usize, Rvalue::RegionExtent(region, dim), span)
    }

    /// The linear index of the neighbour (`dr` rows, `dc` columns away) of this thread's
    /// element in a `Stencil2D<R>` region, and whether it is inside the region. Offsets
    /// beyond the radius are a compile error when constant and a device panic otherwise.
    /// With `clamp`, out-of-range coordinates are clamped to the edge instead.
    pub(super) fn stencil_neighbour(
        &mut self,
        m: &syn::ExprMethodCall,
        clamp: bool,
    ) -> Result<Neighbour> {
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
            offsets.push(self.stencil_offset(arg, radius, span)?);
        }
        let mut coords = Vec::new();
        let mut inside: Option<Operand> = None;
        let mut both_constant = true;
        // Row first (dimension 1, offset `dr`), then column (dimension 0, offset `dc`).
        for (dim, off) in [(1u8, offsets[0]), (0u8, offsets[1])] {
            if let Operand::Const(Const::Int(d, _)) = off {
                coords.push(match clamp {
                    true => self.clamped_coordinate(region, dim, d, span)?,
                    false => self.tested_coordinate(region, dim, d, &mut inside, span),
                });
                continue;
            }
            both_constant = false;
            let at = self.stencil_coordinate(region, dim, off, clamp, &mut inside, span)?;
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
        Ok(Neighbour {
            region,
            index,
            inside,
            provable: both_constant,
        })
    }

    /// One offset of a `Stencil2D<radius>` neighbour, as an `isize`: checked against the
    /// radius at compile time where its values are known, else by a device assertion.
    fn stencil_offset(&mut self, arg: &syn::Expr, radius: Param, span: SynSpan) -> Result<Operand> {
        // A constant offset, or a name whose values are known (a `const`, a `for`
        // counter over constant bounds): checked here, at the source.
        let known = match strip_parens(arg) {
            syn::Expr::Path(p) => match p.path.get_ident().and_then(|id| self.lookup(id)) {
                Some(Binding::Local(l)) => self.known_ranges.get(&l).copied(),
                _ => None,
            },
            _ => None,
        };
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
        // A radius from a `const` item is known only to rustc: the check is then made at
        // run time, where simplification folds it for constant offsets. Tools that read
        // the item's value from the source (`gather`) check as the macro does: a radius
        // equal to an item's value may be that item.
        let radius_known = radius.value().filter(|r| {
            !(self.consts.iter()).any(|(_, v)| *v == super::ConstValue::Int(*r as i128))
        });
        if let Some(c) = constant
            && let Some(radius) = radius_known
            && c.unsigned_abs() > radius as u64
        {
            return error(
                arg,
                format!("offset {c} is outside the stencil's radius {radius}"),
            );
        }
        if let Some((lo, hi)) = known
            && let Some(radius) = radius_known
            && let Some(far) = [lo, hi]
                .into_iter()
                .find(|v| v.unsigned_abs() > radius as u128)
        {
            return error(
                arg,
                format!(
                    "offset `{}` can be {far}, outside the stencil's radius {radius}",
                    expression_text(arg)
                ),
            );
        }
        let (off, _) = self.scalar_expr(arg, Some(ScalarTy::Isize))?;
        if constant.is_none() || radius_known.is_none() {
            let abs = self.intrinsic(Intrinsic::Abs, vec![off], span)?;
            let within = self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(
                    BinOp::Le,
                    abs,
                    Operand::Const(param_const(radius, ScalarTy::Isize)),
                ),
                span,
            );
            self.assert(within, "stencil offset outside the region's radius", span);
        }
        Ok(off)
    }

    /// The neighbour's coordinate along `dim`, as an `isize`: this thread's plus `off`,
    /// clamped to the region with `clamp`, else with whether it is inside the region
    /// and-ed into `inside`.
    fn stencil_coordinate(
        &mut self,
        region: Local,
        dim: u8,
        off: Operand,
        clamp: bool,
        inside: &mut Option<Operand>,
        span: SynSpan,
    ) -> Result<Operand> {
        let here = self.coord(region, dim, span);
        let here = self.cast_operand(here, ScalarTy::Usize, ScalarTy::Isize, span);
        let extent = self.extent(region, dim, span);
        let extent = self.cast_operand(extent, ScalarTy::Usize, ScalarTy::Isize, span);
        let at = self.assign_temp(
            ScalarTy::Isize,
            Rvalue::BinaryOp(BinOp::Add, here, off),
            span,
        );
        if clamp {
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
            return self.intrinsic(Intrinsic::Min, vec![low, last], span);
        }
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
        self.and_into(inside, ok, span);
        Ok(at)
    }

    /// A coordinate `d` (a constant) from the thread's along `dim`, clamped to the region
    /// in unsigned arithmetic: `min(here + d, extent - 1)`, or for a negative `d`
    /// `min(max(here, -d) + d, extent - 1)`. The `min` with the last row or column is what
    /// lets the verifier prove a clamped read in bounds of a non-empty region.
    fn clamped_coordinate(
        &mut self,
        region: Local,
        dim: u8,
        d: i128,
        span: SynSpan,
    ) -> Result<Operand> {
        let usize_const = |v: i128| Operand::Const(Const::Int(v, ScalarTy::Usize));
        let here = self.coord(region, dim, span);
        let extent = self.extent(region, dim, span);
        let last = self.assign_temp(
            ScalarTy::Usize,
            Rvalue::BinaryOp(BinOp::Sub, extent, usize_const(1)),
            span,
        );
        let moved = match d {
            0 => here,
            d if d > 0 => self.assign_temp(
                ScalarTy::Usize,
                Rvalue::BinaryOp(BinOp::Add, here, usize_const(d)),
                span,
            ),
            d => {
                let floor = self.intrinsic(Intrinsic::Max, vec![here, usize_const(-d)], span)?;
                self.assign_temp(
                    ScalarTy::Usize,
                    Rvalue::BinaryOp(BinOp::Sub, floor, usize_const(-d)),
                    span,
                )
            }
        };
        self.intrinsic(Intrinsic::Min, vec![moved, last], span)
    }

    /// A coordinate `d` (a constant) from the thread's along `dim`, unclamped, in unsigned
    /// arithmetic: `here + d`, wrapping for a negative `d` past the edge to a value no
    /// region reaches; `at < extent` joins `inside`. That test is what lets the verifier
    /// prove the read in bounds.
    fn tested_coordinate(
        &mut self,
        region: Local,
        dim: u8,
        d: i128,
        inside: &mut Option<Operand>,
        span: SynSpan,
    ) -> Operand {
        let here = self.coord(region, dim, span);
        let extent = self.extent(region, dim, span);
        let (op, by) = if d < 0 {
            (BinOp::Sub, -d)
        } else {
            (BinOp::Add, d)
        };
        let by = Operand::Const(Const::Int(by, ScalarTy::Usize));
        let at = self.assign_temp(ScalarTy::Usize, Rvalue::BinaryOp(op, here, by), span);
        let ok = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Lt, at, extent),
            span,
        );
        self.and_into(inside, ok, span);
        at
    }

    /// `inside &= ok`, where `inside` starts out as no condition at all.
    fn and_into(&mut self, inside: &mut Option<Operand>, ok: Operand, span: SynSpan) {
        *inside = Some(match *inside {
            Some(prev) => self.assign_temp(
                ScalarTy::Bool,
                Rvalue::BinaryOp(BinOp::BitAnd, prev, ok),
                span,
            ),
            None => ok,
        });
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
        let Neighbour {
            region,
            index,
            inside,
            provable,
        } = self.stencil_neighbour(m, false)?;
        let inside = inside.expect("unclamped reads test the edges");
        self.switch_bool(inside, then_bb, else_bb, span);
        self.current = Some(then_bb);
        let elem = self.body.locals[region.index()]
            .ty
            .element()
            .expect("a region has elements");
        let value = self.declare(Ty::Scalar(elem), false, Some((binding, binding.span())));
        // Inside the region the index is in bounds. With constant offsets the test itself
        // (`row < rows`, `col < cols`) proves it to the verifier; otherwise a check
        // states it.
        let index = match provable {
            true => index,
            false => self.checked_index(region, Operand::Copy(Place::local(index)), span),
        };
        self.push(
            Place::local(value),
            Rvalue::Use(Operand::Copy(Place::element(region, index))),
            span,
        );
        self.bind(binding, Binding::Local(value));
        Ok(self.current.expect("the read was just pushed"))
    }

    /// `if let Some(v) = x.get(i)` (or `Some(&v)`) of a slice parameter: `i < x.len()`
    /// chooses the branch, and `v` is `x[i]` in the `then` one (`*v` reads it as Rust's
    /// `&T` would).
    fn slice_get(
        &mut self,
        m: &syn::ExprMethodCall,
        binding: &syn::Ident,
        by_value: bool,
        then_bb: BasicBlock,
        else_bb: BasicBlock,
    ) -> Result<BasicBlock> {
        let span = m.method.span();
        let slice = match &*m.receiver {
            syn::Expr::Path(p) => match p.path.get_ident().and_then(|id| self.lookup(id)) {
                Some(Binding::Local(l))
                    if matches!(self.body.locals[l.index()].ty, Ty::Slice(_)) =>
                {
                    l
                }
                _ => return error(&m.receiver, "`get(i)` is supported on slice parameters"),
            },
            _ => return error(&m.receiver, "`get(i)` is supported on slice parameters"),
        };
        let (index, _) = self.scalar_expr(&m.args[0], Some(ScalarTy::Usize))?;
        let index = self.as_local(index, ScalarTy::Usize, span);
        let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(slice), span);
        let inside = self.assign_temp(
            ScalarTy::Bool,
            Rvalue::BinaryOp(BinOp::Lt, Operand::Copy(Place::local(index)), len),
            span,
        );
        self.switch_bool(inside, then_bb, else_bb, span);
        self.current = Some(then_bb);
        // The read states its check for the verifier, which the branch has just made.
        let index = self.checked_index(slice, Operand::Copy(Place::local(index)), span);
        let elem = self.body.locals[slice.index()]
            .ty
            .element()
            .expect("a slice has elements");
        let value = self.declare(Ty::Scalar(elem), false, Some((binding, binding.span())));
        self.push(
            Place::local(value),
            Rvalue::Use(Operand::Copy(Place::element(slice, index))),
            span,
        );
        self.bind(binding, Binding::Local(value));
        if !by_value {
            self.element_refs.insert(value);
        }
        Ok(self.current.expect("the read was just pushed"))
    }

    pub(super) fn region_receiver(&self, e: &syn::Expr) -> Result<Local> {
        if let syn::Expr::Path(p) = e
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Local(l)) = self.lookup(id)
            && matches!(self.body.locals[l.index()].ty, Ty::Region(..))
        {
            return Ok(l);
        }
        error(e, "expected a `Region` parameter")
    }

    /// A place that may be assigned: a `let mut` local, `*v` of a region element, or a
    /// slot of a shared array (which slots a thread may write, the race check decides).
    pub(super) fn assignable_place(&mut self, e: &syn::Expr) -> Result<(Place, ScalarTy)> {
        if let syn::Expr::Unary(u) = e
            && matches!(u.op, syn::UnOp::Deref(_))
            && let syn::Expr::Path(p) = &*u.expr
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Local(l)) = self.lookup(id)
            && self.element_refs.contains(&l)
        {
            return error(
                e,
                format!(
                    "`{id}` is a shared reference to an element the loop reads; write through a `Region` instead"
                ),
            );
        }
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
            && let Some(Binding::Local(l) | Binding::Window { base: l, .. }) = self.lookup(id)
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
            return self.shared_slot(e, i, shared);
        }
        if let syn::Expr::Index(i) = e
            && let syn::Expr::Path(p) = &*i.expr
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Array(array)) = self.lookup(id)
        {
            return self.array_slot(i, array);
        }
        self.place(e)
    }

    /// `tile[i]` written: slot `i` of a shared array, bounds-checked. Which slots a
    /// thread may write without racing, the race check decides.
    fn shared_slot(
        &mut self,
        e: &syn::Expr,
        i: &syn::ExprIndex,
        shared: Local,
    ) -> Result<(Place, ScalarTy)> {
        if self.tiles.contains_key(&shared) {
            return error(
                e,
                "a `Shared2D` tile is written with `tile.write(value)`, which fills the thread's own slot",
            );
        }
        let elem = self.body.locals[shared.index()]
            .ty
            .element()
            .expect("shared arrays have elements");
        let (index, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
        let index = self.checked_index(shared, index, e.span());
        Ok((Place::element(shared, index), elem))
    }

    /// `c[k]` of a window (a `Chunked<N>` chunk or a sub-slice): bounds-checked against
    /// the window's length, then element `start + k` of its base.
    fn window_element(
        &mut self,
        i: &syn::ExprIndex,
        base: Local,
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
        if let Ty::Slice(_) = self.body.locals[base.index()].ty {
            // Implied by the window's own checks (`start + len <= x.len()` when it was
            // made), which the verifier does not combine: stated again for it.
            let len = self.assign_temp(ScalarTy::Usize, Rvalue::Len(base), span);
            self.bounds_check(at, len, span);
        }
        let elem = self.body.locals[base.index()]
            .ty
            .element()
            .expect("a window's base has elements");
        Ok((Place::element(base, at), elem))
    }

    /// The place an expression names, and the type of the value there: a scalar local,
    /// `*v` of a region element, or an element of a slice, chunk, array or shared array.
    pub(super) fn place(&mut self, e: &syn::Expr) -> Result<(Place, ScalarTy)> {
        match e {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) => self.path_place(e, p),
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
                // `*v` of an element a `for` loop iterates over: its copy.
                if let syn::Expr::Path(p) = &*u.expr
                    && let Some(id) = p.path.get_ident()
                    && let Some(Binding::Local(l)) = self.lookup(id)
                    && self.element_refs.contains(&l)
                    && let Ty::Scalar(t) = self.body.locals[l.index()].ty
                {
                    return Ok((Place::local(l), t));
                }
                error(
                    e,
                    "only references from `Region::get_mut` and the elements a `for` loop iterates over can be dereferenced in kernels",
                )
            }
            syn::Expr::Index(i) => self.index_place(e, i),
            _ => error(
                e,
                "this expression is not a place that kernels can read or write",
            ),
        }
    }

    /// A scalar local by name; anything else a name may be bound to is not a value.
    fn path_place(&mut self, e: &syn::Expr, p: &syn::ExprPath) -> Result<(Place, ScalarTy)> {
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
            Some(Binding::Window { .. }) => error(
                e,
                format!(
                    "`{id}` is a chunk or sub-slice; index it (`{id}[k]`) or call `{id}.len()`"
                ),
            ),
            Some(Binding::Array(_)) => error(
                e,
                format!("`{id}` is an array; index it (`{id}[k]`) or call `{id}.len()`"),
            ),
            Some(Binding::Closure(_)) => {
                error(e, format!("`{id}` is a closure; call it (`{id}(..)`)"))
            }
            None => error(
                e,
                format!(
                    "cannot find `{id}` in this kernel: a kernel sees its parameters, what it declares, the module's integer and float `const` items and `#[offload_device]` functions; pass other values as parameters"
                ),
            ),
        }
    }

    /// `x[i]` of a chunk, an array, a shared array or tile, or a slice (bounds-checked).
    fn index_place(&mut self, e: &syn::Expr, i: &syn::ExprIndex) -> Result<(Place, ScalarTy)> {
        let syn::Expr::Path(p) = &*i.expr else {
            return error(
                &i.expr,
                "only a name is indexed in kernels (a slice parameter, a chunk, an array, a shared array: `x[i]`); bind this value to a name first",
            );
        };
        let target = p.path.get_ident().and_then(|id| self.lookup(id));
        if let Some(Binding::Window { base, start, len }) = target {
            return self.window_element(i, base, start, len);
        }
        if let Some(Binding::Array(array)) = target {
            return self.array_element(i, array);
        }
        if target.is_none() {
            return error(
                &i.expr,
                format!(
                    "cannot find `{}` in this kernel: a kernel sees its parameters and what it declares; declare a constant array inside it (`const TAPS: [f32; 4] = [..];` or `let taps = [..];`)",
                    p.path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default()
                ),
            );
        }
        let Some(Binding::Local(base)) = target else {
            return error(
                &i.expr,
                "this cannot be indexed: indexing takes slice parameters, chunks, arrays and shared arrays",
            );
        };
        let elem = match self.body.locals[base.index()].ty {
            Ty::Slice(e) => e,
            Ty::Shared(..) if self.tiles.contains_key(&base) => {
                return self.tile_read(base, &i.index, e.span());
            }
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
            return error(r, super::expr::SUB_SLICE_USES);
        }
        let (index, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
        let index = if self.unchecked.contains(&super::versioning::read_id(i)) {
            // A versioned loop's test covers it; the verifier proves it from that test.
            self.as_local(index, ScalarTy::Usize, e.span())
        } else {
            self.checked_index(base, index, e.span())
        };
        Ok((Place::element(base, index), elem))
    }
}

impl Translator {
    /// `let taps = [a, b, c];` or `const TAPS: [f32; 3] = [..];` in a kernel (a read-only
    /// array), or `let mut acc = [0.0; 4];` (the thread's own): each element evaluated
    /// once, in order, into its own local.
    pub(super) fn array_binding(
        &mut self,
        name: &syn::Ident,
        ty: Option<&syn::Type>,
        array: &syn::ExprArray,
        mutable: bool,
    ) -> Result<()> {
        // A run-time index picks an element with a switch of one arm per element.
        const MOST_MUTABLE: usize = 64;
        if mutable && array.elems.len() > MOST_MUTABLE {
            return error(
                array,
                format!(
                    "a `let mut` array in a kernel has at most {MOST_MUTABLE} elements (each is a variable of the thread's)"
                ),
            );
        }
        let declared = match ty {
            Some(syn::Type::Array(a)) => Some(super::types::scalar_type(&a.elem, &self.subst)?),
            Some(other) => return error(other, "an array's type is written `[T; N]`"),
            None => None,
        };
        if array.elems.is_empty() {
            return error(array, "an empty array has nothing to read");
        }
        // The element type: declared, else the first element whose type is evident (a
        // suffixed literal, a typed local), else the first element's own.
        let mut elem = declared.or_else(|| array.elems.iter().find_map(|e| self.infer(e)));
        let mut elems = Vec::with_capacity(array.elems.len());
        for e in &array.elems {
            let (value, ty) = self.scalar_expr(e, elem)?;
            let ty = *elem.get_or_insert(ty);
            let l = self.temp(ty);
            self.push(Place::local(l), Rvalue::Use(value), e.span());
            elems.push(l);
        }
        let elem = elem.expect("an array with elements has an element type");
        self.arrays.push(super::ArrayValues {
            elems,
            elem,
            mutable,
        });
        self.bind(name, Binding::Array(self.arrays.len() - 1));
        Ok(())
    }

    /// `taps[k]`: a constant index reads the element directly (past the end is a compile
    /// error); any other is bounds-checked and picks the element with a `switchInt`.
    fn array_element(&mut self, i: &syn::ExprIndex, array: usize) -> Result<(Place, ScalarTy)> {
        match self.array_index(i, array)? {
            Ok(element) => Ok((Place::local(element), self.arrays[array].elem)),
            Err(index) => {
                let element = self.array_read(array, index, i.span());
                Ok((Place::local(element), self.arrays[array].elem))
            }
        }
    }

    /// `acc[k]` written, of a `let mut` array: a constant index is the element itself;
    /// any other, bounds-checked, is a scratch local holding the element, copied back
    /// into it after the statement ([`Self::write_back_arrays`]).
    fn array_slot(&mut self, i: &syn::ExprIndex, array: usize) -> Result<(Place, ScalarTy)> {
        if !self.arrays[array].mutable {
            return error(
                &i.expr,
                "this array is read-only; declare it `let mut` to assign its elements",
            );
        }
        let element = match self.array_index(i, array)? {
            Ok(element) => element,
            Err(index) => {
                let scratch = self.array_read(array, index, i.span());
                self.array_writes.push((scratch, index, array));
                scratch
            }
        };
        Ok((Place::local(element), self.arrays[array].elem))
    }

    /// The element a constant index names (past the end is a compile error), or the
    /// bounds-checked local of a run-time index.
    fn array_index(
        &mut self,
        i: &syn::ExprIndex,
        array: usize,
    ) -> Result<std::result::Result<Local, Local>> {
        let span = i.span();
        let elems = &self.arrays[array].elems;
        let count = elems.len();
        let (index, _) = self.scalar_expr(&i.index, Some(ScalarTy::Usize))?;
        if let Operand::Const(Const::Int(k, _)) = index {
            return match usize::try_from(k)
                .ok()
                .and_then(|k| self.arrays[array].elems.get(k))
            {
                Some(&l) => Ok(Ok(l)),
                None => error(
                    &i.index,
                    format!("index {k} is out of bounds: the array has {count} elements"),
                ),
            };
        }
        let index = self.as_local(index, ScalarTy::Usize, span);
        let len = Operand::Const(Const::Int(count as i128, ScalarTy::Usize));
        self.bounds_check(index, len, span);
        Ok(Err(index))
    }

    /// A switch on `index` (checked in bounds) with one arm per element of `array`, each
    /// running `arm(element)`.
    fn switch_on_element(
        &mut self,
        array: usize,
        index: Local,
        span: SynSpan,
        mut arm: impl FnMut(&mut Self, Local),
    ) {
        let elems = self.arrays[array].elems.clone();
        let join = self.new_block();
        let arms: Vec<BasicBlock> = elems.iter().map(|_| self.new_block()).collect();
        let (last, cases) = arms.split_last().expect("arrays have elements");
        self.terminate(
            TerminatorKind::SwitchInt {
                discr: Operand::Copy(Place::local(index)),
                targets: cases
                    .iter()
                    .enumerate()
                    .map(|(k, &b)| (k as u128, b))
                    .collect(),
                otherwise: *last,
            },
            span,
        );
        for (&block, &element) in arms.iter().zip(&elems) {
            self.current = Some(block);
            arm(self, element);
            self.goto(join, span);
        }
        self.current = Some(join);
    }

    /// The element `index` picks, copied into a new local.
    fn array_read(&mut self, array: usize, index: Local, span: SynSpan) -> Local {
        let result = self.temp(self.arrays[array].elem);
        self.switch_on_element(array, index, span, |b, element| {
            let value = Rvalue::Use(Operand::Copy(Place::local(element)));
            b.push(Place::local(result), value, span);
        });
        result
    }

    /// Copies each scratch local of a write at a run-time index into its element.
    pub(super) fn write_back_arrays(&mut self, span: SynSpan) {
        for (scratch, index, array) in std::mem::take(&mut self.array_writes) {
            self.switch_on_element(array, index, span, |b, element| {
                let value = Rvalue::Use(Operand::Copy(Place::local(scratch)));
                b.push(Place::local(element), value, span);
            });
        }
    }
}

/// A `Stencil2D` neighbour's element: the region, the index, for an unclamped read
/// whether it is inside, and whether both offsets were constants: then a clamped read's
/// coordinates are `min`s with the last row and column, and an unclamped read's are tested
/// below the extents, either of which the verifier proves in bounds.
pub(super) struct Neighbour {
    pub region: Local,
    pub index: Local,
    pub inside: Option<Operand>,
    pub provable: bool,
}

/// A strategy's number as a constant of type `ty`: its value, or the `const` item it names.
pub(super) fn param_const(p: Param, ty: ScalarTy) -> Const {
    match p {
        Param::Value(n) => Const::Int(n as i128, ty),
        Param::Item(k) => Const::Item(k, ty),
    }
}
