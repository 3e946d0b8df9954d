//! The MIR validator. Lowering accepts only a [`Validated`] receipt, so it may assume
//! that types agree, every branch target exists and every local is assigned before use.

use crate::ir::*;
use fixedbitset::FixedBitSet;

/// A body that passed [`validate`].
#[derive(Copy, Clone, Debug)]
pub struct Validated<'a>(&'a Body);

impl<'a> Validated<'a> {
    pub fn body(self) -> &'a Body {
        self.0
    }
}

impl std::ops::Deref for Validated<'_> {
    type Target = Body;
    fn deref(&self) -> &Body {
        self.0
    }
}

/// Why a body is not valid MIR, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{span}: in kernel `{kernel}`{}: {message}", .block.map(|b| format!(", {b}")).unwrap_or_default())]
pub struct ValidationError {
    pub kernel: String,
    pub file: String,
    pub block: Option<BasicBlock>,
    pub span: Span,
    pub message: String,
}

pub fn validate(body: &Body) -> Result<Validated<'_>, ValidationError> {
    check(body, false)
}

/// [`validate`] for a body the macro has just translated, whose outside `const` items
/// ([`Const::Item`], [`Param::Item`]) it has yet to fill in. Every other stage takes bodies
/// parsed from text, which hold none: [`validate`] refuses them.
pub fn validate_translated(body: &Body) -> Result<(), ValidationError> {
    check(body, true).map(|_| ())
}

fn check(body: &Body, items: bool) -> Result<Validated<'_>, ValidationError> {
    let v = Validator { body, items };
    v.signature()?;
    for (i, block) in body.blocks.iter().enumerate() {
        let bb = BasicBlock(i as u32);
        for s in &block.statements {
            v.statement(bb, s)?;
        }
        v.terminator(bb, &block.terminator)?;
    }
    v.definite_init()?;
    Ok(Validated(body))
}

struct Validator<'a> {
    body: &'a Body,
    /// Whether outside `const` items may still stand for their values.
    items: bool,
}

const UNFILLED: &str = "the value of a `const` item outside the kernel was not filled in";

impl Validator<'_> {
    fn err<T>(
        &self,
        block: Option<BasicBlock>,
        span: Span,
        message: String,
    ) -> Result<T, ValidationError> {
        Err(ValidationError {
            kernel: self.body.name.clone(),
            file: self.body.file.clone(),
            block,
            span,
            message,
        })
    }

    fn signature(&self) -> Result<(), ValidationError> {
        let b = self.body;
        let ret = b.locals.first().map(|l| l.ty);
        match b.kind {
            BodyKind::Kernel if ret != Some(Ty::Unit) => {
                return self.err(
                    None,
                    Span::default(),
                    "a kernel's return place `_0` must have type `()`".into(),
                );
            }
            BodyKind::Device if !matches!(ret, Some(Ty::Scalar(_))) => {
                return self.err(
                    None,
                    Span::default(),
                    "a device function returns a scalar in `_0`".into(),
                );
            }
            _ => {}
        }
        if b.arg_count >= b.locals.len() {
            return self.err(None, Span::default(), "more arguments than locals".into());
        }
        for (i, decl) in b.locals.iter().enumerate() {
            let is_arg = (1..=b.arg_count).contains(&i);
            let span = decl.debug.as_ref().map(|d| d.1).unwrap_or_default();
            let item = matches!(
                decl.ty,
                Ty::Region(
                    _,
                    Strategy::Chunked(Param::Item(_)) | Strategy::Stencil2D(Param::Item(_))
                ) | Ty::Shared(_, Some(Param::Item(_)))
            );
            if item && !self.items {
                return self.err(None, span, UNFILLED.into());
            }
            match decl.ty {
                Ty::Region(..) | Ty::Slice(_) | Ty::Atomic(_) | Ty::Shared(..)
                    if b.kind == BodyKind::Device =>
                {
                    return self.err(
                        None,
                        span,
                        format!(
                            "`_{i}` has type `{}`; device functions take and use scalars only",
                            decl.ty
                        ),
                    );
                }
                Ty::Region(..) | Ty::Slice(_) | Ty::Atomic(_) if !is_arg => {
                    return self.err(
                        None,
                        span,
                        format!(
                            "`_{i}` has type `{}`, which only kernel arguments may have",
                            decl.ty
                        ),
                    );
                }
                Ty::Shared(..) if is_arg => {
                    return self.err(
                        None,
                        span,
                        format!(
                            "`_{i}` has type `{}`; shared memory cannot be an argument",
                            decl.ty
                        ),
                    );
                }
                Ty::Shared(ScalarTy::Bool, _) => {
                    return self.err(
                        None,
                        span,
                        format!(
                            "`_{i}` has type `{}`; shared memory holds numbers, not `bool`",
                            decl.ty
                        ),
                    );
                }
                Ty::Unit if i != 0 => {
                    return self.err(
                        None,
                        span,
                        format!("`_{i}` has type `()`, which only the return place may have"),
                    );
                }
                _ => {}
            }
        }
        if b.blocks.is_empty() {
            return self.err(
                None,
                Span::default(),
                "a kernel needs at least one block".into(),
            );
        }
        Ok(())
    }

    fn local_ty(&self, bb: BasicBlock, span: Span, l: Local) -> Result<Ty, ValidationError> {
        match self.body.local(l) {
            Some(d) => Ok(d.ty),
            None => self.err(Some(bb), span, format!("`{l}` is not declared")),
        }
    }

    /// The type of the value stored at `place`.
    fn place_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        place: Place,
    ) -> Result<ScalarTy, ValidationError> {
        let ty = self.local_ty(bb, span, place.local)?;
        match place.index {
            None => match ty {
                Ty::Scalar(s) => Ok(s),
                _ => self.err(
                    Some(bb),
                    span,
                    format!("`{}` of type `{ty}` cannot be used as a value", place.local),
                ),
            },
            Some(index) => {
                if let Ty::Atomic(_) = ty {
                    return self.err(
                        Some(bb),
                        span,
                        format!(
                            "`{}` is atomic: read and write it with atomic operations only",
                            place.local
                        ),
                    );
                }
                let Some(elem) = ty.element() else {
                    return self.err(
                        Some(bb),
                        span,
                        format!("`{}` of type `{ty}` cannot be indexed", place.local),
                    );
                };
                let index_ty = self.local_ty(bb, span, index)?;
                if index_ty != Ty::Scalar(ScalarTy::Usize) {
                    return self.err(
                        Some(bb),
                        span,
                        format!("index `{index}` has type `{index_ty}`, expected `usize`"),
                    );
                }
                Ok(elem)
            }
        }
    }

    /// The element type of an atomic place `_a[_i]`.
    fn atomic_element(
        &self,
        bb: BasicBlock,
        span: Span,
        place: Place,
    ) -> Result<ScalarTy, ValidationError> {
        match (self.local_ty(bb, span, place.local)?, place.index) {
            (Ty::Atomic(e), Some(i))
                if self.local_ty(bb, span, i)? == Ty::Scalar(ScalarTy::Usize) =>
            {
                Ok(e)
            }
            (ty, _) => self.err(
                Some(bb),
                span,
                format!(
                    "atomic operations need an element of an `Atomic`, found `{place}` of `{ty}`"
                ),
            ),
        }
    }

    fn operand_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        op: &Operand,
    ) -> Result<ScalarTy, ValidationError> {
        match op {
            Operand::Copy(p) | Operand::Move(p) => self.place_ty(bb, span, *p),
            Operand::Const(Const::Item(..)) if !self.items => {
                self.err(Some(bb), span, UNFILLED.into())
            }
            Operand::Const(c) => Ok(c.ty()),
        }
    }

    fn rvalue_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        rv: &Rvalue,
    ) -> Result<ScalarTy, ValidationError> {
        match rv {
            Rvalue::Use(op) => self.operand_ty(bb, span, op),
            Rvalue::AtomicRmw(op, place, value) => self.atomic_rmw_ty(bb, span, *op, *place, value),
            Rvalue::AtomicCas(place, current, new) => {
                self.atomic_cas_ty(bb, span, *place, current, new)
            }
            Rvalue::Subgroup(op, args) => self.subgroup_ty(bb, span, *op, args),
            Rvalue::Position(_, d) if *d <= 2 => Ok(ScalarTy::Usize),
            Rvalue::Position(p, d) => self.err(
                Some(bb),
                span,
                format!("`{}({d})`: dimensions are 0, 1 and 2", p.name()),
            ),
            Rvalue::Intrinsic(i, args) => {
                let types = args
                    .iter()
                    .map(|a| self.operand_ty(bb, span, a))
                    .collect::<Result<Vec<_>, _>>()?;
                match i.result_type(&types) {
                    Ok(t) => Ok(t),
                    Err(message) => self.err(Some(bb), span, message),
                }
            }
            Rvalue::BinaryOp(op, a, b) => self.binary_op_ty(bb, span, *op, a, b),
            Rvalue::UnaryOp(op, a) => self.unary_op_ty(bb, span, *op, a),
            Rvalue::Cast(a, to) => {
                let from = self.operand_ty(bb, span, a)?;
                if *to == ScalarTy::Bool && from != ScalarTy::Bool {
                    return self.err(Some(bb), span, format!("cannot cast `{from}` to `bool`"));
                }
                // `f16` and `bf16` convert to and from `f32` and `f64` only, as the
                // `half` crate's `from_f32`/`to_f32` do.
                let wide_float = |t: ScalarTy| matches!(t, ScalarTy::F32 | ScalarTy::F64);
                if (from.is_half() || to.is_half())
                    && from != *to
                    && !(wide_float(from) || wide_float(*to))
                {
                    return self.err(
                        Some(bb),
                        span,
                        format!("cannot cast `{from}` to `{to}`: `f16` and `bf16` convert through `f32` or `f64`"),
                    );
                }
                Ok(*to)
            }
            Rvalue::Len(l) => match self.local_ty(bb, span, *l)? {
                Ty::Region(..) | Ty::Slice(_) | Ty::Atomic(_) | Ty::Shared(..) => {
                    Ok(ScalarTy::Usize)
                }
                t => self.err(
                    Some(bb),
                    span,
                    format!("`Len` needs a region or slice, `{l}` has type `{t}`"),
                ),
            },
            Rvalue::RegionCoord(l, d) | Rvalue::RegionExtent(l, d) | Rvalue::RegionEnd(l, d) => {
                match self.local_ty(bb, span, *l)? {
                    Ty::Region(..) if *d <= 2 => Ok(ScalarTy::Usize),
                    Ty::Region(..) => self.err(
                        Some(bb),
                        span,
                        format!(
                            "dimension {d} is out of range; regions have dimensions 0, 1 and 2"
                        ),
                    ),
                    t => self.err(
                        Some(bb),
                        span,
                        format!("`{l}` has type `{t}`, not a region"),
                    ),
                }
            }
            Rvalue::RegionIndex(l) => match self.local_ty(bb, span, *l)? {
                Ty::Region(..) => Ok(ScalarTy::Usize),
                t => self.err(
                    Some(bb),
                    span,
                    format!("`RegionIndex` needs a region, `{l}` has type `{t}`"),
                ),
            },
        }
    }

    /// The type of `AtomicRmw(op, place, value)`: the atomic's element, which `op` must
    /// be defined on and `value` must have.
    fn atomic_rmw_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        op: AtomicOp,
        place: Place,
        value: &Operand,
    ) -> Result<ScalarTy, ValidationError> {
        let elem = self.atomic_element(bb, span, place)?;
        if !op.supports(elem) {
            return self.err(
                Some(bb),
                span,
                format!("atomic `{}` is not defined on `{elem}`", op.name()),
            );
        }
        let vt = self.operand_ty(bb, span, value)?;
        if vt != elem {
            return self.err(
                Some(bb),
                span,
                format!("atomic operand has type `{vt}`, the element `{elem}`"),
            );
        }
        Ok(elem)
    }

    /// The type of `AtomicCas(place, current, new)`: the atomic's element, which both
    /// operands must have.
    fn atomic_cas_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        place: Place,
        current: &Operand,
        new: &Operand,
    ) -> Result<ScalarTy, ValidationError> {
        let elem = self.atomic_element(bb, span, place)?;
        if !AtomicOp::Exchange.supports(elem) {
            return self.err(
                Some(bb),
                span,
                format!("atomic compare-and-swap is not defined on `{elem}`"),
            );
        }
        for op in [current, new] {
            let t = self.operand_ty(bb, span, op)?;
            if t != elem {
                return self.err(
                    Some(bb),
                    span,
                    format!("atomic operand has type `{t}`, the element `{elem}`"),
                );
            }
        }
        Ok(elem)
    }

    /// The type of a subgroup operation on `args`, checking their number and the lane
    /// of a shuffle.
    fn subgroup_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        op: SubgroupOp,
        args: &[Operand],
    ) -> Result<ScalarTy, ValidationError> {
        if args.len() != op.arity() {
            return self.err(
                Some(bb),
                span,
                format!("`{}` takes {} operands", op.name(), op.arity()),
            );
        }
        let types = args
            .iter()
            .map(|a| self.operand_ty(bb, span, a))
            .collect::<Result<Vec<_>, _>>()?;
        if matches!(op, SubgroupOp::Shuffle | SubgroupOp::ShuffleXor) && types[1] != ScalarTy::Usize
        {
            return self.err(
                Some(bb),
                span,
                format!("`{}` takes a `usize` lane, found `{}`", op.name(), types[1]),
            );
        }
        op.result_type(types.first().copied())
            .or_else(|e| self.err(Some(bb), span, e))
    }

    /// The type of a binary operation: shifts take any integers, the others operands of
    /// one type that the operator is defined on; comparisons give a `bool`.
    fn binary_op_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        op: BinOp,
        a: &Operand,
        b: &Operand,
    ) -> Result<ScalarTy, ValidationError> {
        let (ta, tb) = (self.operand_ty(bb, span, a)?, self.operand_ty(bb, span, b)?);
        let name = op.name();
        if op.is_shift() {
            if !ta.is_integer() || !tb.is_integer() {
                return self.err(
                    Some(bb),
                    span,
                    format!("`{name}` needs integer operands, found `{ta}` and `{tb}`"),
                );
            }
            return Ok(ta);
        }
        if ta != tb {
            return self.err(
                Some(bb),
                span,
                format!("`{name}` operands differ in type: `{ta}` and `{tb}`"),
            );
        }
        if op.is_comparison() {
            return Ok(ScalarTy::Bool);
        }
        let ok = if op.is_bitwise() {
            !ta.is_float()
        } else {
            ta != ScalarTy::Bool
        };
        if !ok {
            return self.err(Some(bb), span, format!("`{name}` is not defined on `{ta}`"));
        }
        Ok(ta)
    }

    /// The type of a unary operation: its operand's, which the operator must be
    /// defined on.
    fn unary_op_ty(
        &self,
        bb: BasicBlock,
        span: Span,
        op: UnOp,
        a: &Operand,
    ) -> Result<ScalarTy, ValidationError> {
        let t = self.operand_ty(bb, span, a)?;
        let ok = match op {
            UnOp::Neg => t.is_float() || t.is_signed(),
            UnOp::Not => !t.is_float(),
        };
        if !ok {
            return self.err(
                Some(bb),
                span,
                format!("`{}` is not defined on `{t}`", op.name()),
            );
        }
        Ok(t)
    }

    fn statement(&self, bb: BasicBlock, s: &Statement) -> Result<(), ValidationError> {
        let target = self.local_ty(bb, s.span, s.place.local)?;
        if s.place.index.is_some()
            && matches!(target, Ty::Region(_, strategy) if !strategy.is_writable())
        {
            return self.err(
                Some(bb),
                s.span,
                format!(
                    "`{}` is a read-only `{target}` and cannot be assigned to",
                    s.place.local
                ),
            );
        }
        if s.place.index.is_some() && matches!(target, Ty::Slice(_)) {
            return self.err(
                Some(bb),
                s.span,
                format!(
                    "`{}` is a read-only slice and cannot be assigned to",
                    s.place.local
                ),
            );
        }
        if s.place.local == Local::RETURN && self.body.kind == BodyKind::Kernel {
            return self.err(
                Some(bb),
                s.span,
                "the return place `_0` cannot be assigned".into(),
            );
        }
        let place_ty = self.place_ty(bb, s.span, s.place)?;
        let value_ty = self.rvalue_ty(bb, s.span, &s.rvalue)?;
        if place_ty != value_ty {
            return self.err(
                Some(bb),
                s.span,
                format!(
                    "cannot assign a `{value_ty}` to `{}` of type `{place_ty}`",
                    s.place
                ),
            );
        }
        Ok(())
    }

    fn terminator(&self, bb: BasicBlock, t: &Terminator) -> Result<(), ValidationError> {
        for target in t.kind.successors() {
            if target.index() >= self.body.blocks.len() {
                return self.err(
                    Some(bb),
                    t.span,
                    format!("branch to `{target}`, which does not exist"),
                );
            }
        }
        match &t.kind {
            TerminatorKind::SwitchInt { discr, targets, .. } => {
                let ty = self.operand_ty(bb, t.span, discr)?;
                if ty.is_float() {
                    return self.err(
                        Some(bb),
                        t.span,
                        format!("`switchInt` needs an integer or `bool`, found `{ty}`"),
                    );
                }
                // Case values are the discriminant's bits: each must fit its width, and
                // no two may be equal.
                let max = if ty.bits() >= 128 {
                    u128::MAX
                } else {
                    (1u128 << ty.bits()) - 1
                };
                let mut seen = std::collections::HashSet::new();
                for (value, _) in targets {
                    if *value > max {
                        return self.err(
                            Some(bb),
                            t.span,
                            format!("`switchInt` case {value} does not fit a `{ty}`"),
                        );
                    }
                    if !seen.insert(*value) {
                        return self.err(
                            Some(bb),
                            t.span,
                            format!("`switchInt` has case {value} twice"),
                        );
                    }
                }
            }
            TerminatorKind::Assert { cond, msg, .. } => {
                let ty = self.operand_ty(bb, t.span, cond)?;
                if ty != ScalarTy::Bool {
                    return self.err(
                        Some(bb),
                        t.span,
                        format!("`assert` needs a `bool` condition, found `{ty}`"),
                    );
                }
                for op in msg.operands() {
                    let ty = self.operand_ty(bb, t.span, op)?;
                    if ty != ScalarTy::Usize {
                        return self.err(
                            Some(bb),
                            t.span,
                            format!("bounds-check operands must be `usize`, found `{ty}`"),
                        );
                    }
                }
            }
            TerminatorKind::Call { args, dest, .. } => {
                for a in args {
                    self.operand_ty(bb, t.span, a)?;
                }
                if !matches!(self.local_ty(bb, t.span, *dest)?, Ty::Scalar(_))
                    || *dest == Local::RETURN && self.body.kind == BodyKind::Kernel
                {
                    return self.err(
                        Some(bb),
                        t.span,
                        format!("call destination `{dest}` must be a scalar local"),
                    );
                }
            }
            TerminatorKind::Barrier { .. }
            | TerminatorKind::TileMma { .. }
            | TerminatorKind::TileFill { .. }
                if self.body.kind == BodyKind::Device =>
            {
                return self.err(
                    Some(bb),
                    t.span,
                    "only kernels wait at barriers, not device functions".into(),
                );
            }
            TerminatorKind::TileMma {
                acc,
                a,
                b,
                shape,
                pitches,
                ..
            } => {
                if let Err(message) = self.tile_mma([*acc, *a, *b], *shape, *pitches) {
                    return self.err(Some(bb), t.span, format!("`tile_mma`: {message}"));
                }
            }
            TerminatorKind::TileFill {
                tile,
                src,
                origin,
                shape,
                ..
            } => {
                for op in origin {
                    let ty = self.operand_ty(bb, t.span, op)?;
                    if ty != ScalarTy::Usize {
                        return self.err(
                            Some(bb),
                            t.span,
                            format!("`tile_fill`: a tile's origin and row length are `usize`, found `{ty}`"),
                        );
                    }
                }
                if let Err(message) = self.tile_fill(*tile, *src, *shape) {
                    return self.err(Some(bb), t.span, format!("`tile_fill`: {message}"));
                }
            }
            TerminatorKind::Goto(_)
            | TerminatorKind::Return
            | TerminatorKind::Unreachable
            | TerminatorKind::Barrier { .. } => {}
        }
        Ok(())
    }

    /// The tile, source and shape (`[rows, cols, pitch]`) of a workgroup tile fill.
    fn tile_fill(&self, tile: Local, src: Local, shape: [Param; 3]) -> Result<(), String> {
        let ty = |l: Local| self.body.locals.get(l.index()).map(|d| d.ty);
        let (Some(Ty::Shared(elem, Some(len))), Some(Ty::Slice(from))) = (ty(tile), ty(src)) else {
            return Err(format!(
                "fills a `Shared` tile of static length (`{tile}`) from a slice (`{src}`)"
            ));
        };
        if elem != from {
            return Err(format!(
                "a tile of `{elem}` is filled from a slice of `{from}`"
            ));
        }
        let [rows, cols, pitch] = shape.map(Param::value);
        match (rows, cols, pitch, len.value()) {
            (Some(0), ..) | (_, Some(0), ..) => Err("a tile has rows and columns".into()),
            (_, Some(cols), Some(pitch), _) if pitch < cols => Err(format!(
                "the rows of `{tile}` are {pitch} elements apart, less than their {cols}"
            )),
            (Some(rows), _, Some(pitch), Some(len)) if rows as u64 * pitch as u64 != len as u64 => {
                Err(format!(
                    "`{tile}` holds {len} elements, not {rows} rows of {pitch}"
                ))
            }
            (Some(_), Some(_), Some(_), Some(_)) => Ok(()),
            _ if self.items => Ok(()),
            _ => Err(UNFILLED.into()),
        }
    }

    /// The tiles (`[acc, a, b]`), shape (`[m, n, k]`) and the tiles' row pitches of a
    /// workgroup matrix operation.
    fn tile_mma(
        &self,
        tiles: [Local; 3],
        shape: [Param; 3],
        pitches: [Param; 3],
    ) -> Result<(), String> {
        let [acc, a, b] = tiles;
        if acc == a || acc == b {
            return Err(format!(
                "the accumulator `{acc}` must be a tile of its own, not also an operand"
            ));
        }
        let tile = |l: Local| match self.body.locals.get(l.index()).map(|d| d.ty) {
            Some(Ty::Shared(e, Some(len))) => Ok((e, len)),
            _ => Err(format!("`{l}` must be a `Shared` tile of static length")),
        };
        let (acc_ty, acc_len) = tile(acc)?;
        let (a_ty, a_len) = tile(a)?;
        let (b_ty, b_len) = tile(b)?;
        use ScalarTy::*;
        let wanted = match a_ty {
            F16 | Bf16 => F32,
            F32 | F64 => a_ty,
            _ => {
                return Err(format!(
                    "tiles of `f16`, `bf16`, `f32` or `f64` multiply, found `{a_ty}`"
                ));
            }
        };
        if b_ty != a_ty || acc_ty != wanted {
            return Err(format!(
                "`{a_ty}` tiles multiply into a `{wanted}` accumulator: found `{a_ty}`, `{b_ty}` into `{acc_ty}`"
            ));
        }
        let values = shape.map(Param::value);
        let [Some(m), Some(n), Some(k)] = values else {
            return if self.items {
                Ok(())
            } else {
                Err(UNFILLED.into())
            };
        };
        let [Some(ldc), Some(lda), Some(ldb)] = pitches.map(Param::value) else {
            return if self.items {
                Ok(())
            } else {
                Err(UNFILLED.into())
            };
        };
        if let Some(bad) = [m, n, k].into_iter().find(|e| *e == 0 || e % 16 != 0) {
            return Err(format!(
                "tile extents are multiples of 16 (the tensor cores' 16 × 16 × 16 step), found {bad}"
            ));
        }
        // Each 16-bit tile's rows start at 16-byte boundaries, as `ldmatrix` reads them.
        let align = if a_ty.size_bytes() == 2 { 8 } else { 1 };
        let (m, n, k) = (m as u64, n as u64, k as u64);
        for (l, len, rows, width, pitch, align) in [
            (acc, acc_len, m, n, ldc, 1),
            (a, a_len, m, k, lda, align),
            (b, b_len, k, n, ldb, align),
        ] {
            let pitch = pitch as u64;
            if pitch < width || !pitch.is_multiple_of(align) {
                return Err(format!(
                    "the rows of `{l}` are {pitch} elements apart: at least their {width}, and a multiple of {align}"
                ));
            }
            match len.value() {
                Some(len) if len as u64 != rows * pitch => {
                    return Err(format!(
                        "`{l}` holds {len} elements, but the shape {m} × {n} × {k} needs {rows} rows of {pitch}"
                    ));
                }
                None if !self.items => return Err(UNFILLED.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Checks that every scalar local is assigned on every path before it is read, with a
    /// forward must-be-initialised dataflow over the blocks.
    fn definite_init(&self) -> Result<(), ValidationError> {
        let ins = self.initialised_on_entry();
        for (i, block) in self.body.blocks.iter().enumerate() {
            self.check_block_reads(BasicBlock(i as u32), block, ins[i].clone())?;
        }
        Ok(())
    }

    /// The dataflow of [`Validator::definite_init`]: for each block, the locals assigned
    /// on every path into it.
    fn initialised_on_entry(&self) -> Vec<FixedBitSet> {
        let b = self.body;
        let n = b.locals.len();
        let mut all = FixedBitSet::with_capacity(n);
        all.insert_range(..);
        let mut entry_state = FixedBitSet::with_capacity(n);
        entry_state.insert_range(1..b.arg_count + 1);
        // `ins[bb]` is the meet (intersection) over predecessors; start from "everything
        // initialised" so the fixpoint shrinks to the right answer. Bit sets, visited in
        // reverse postorder: this runs on every kernel at every link.
        let mut ins: Vec<FixedBitSet> = vec![all; b.blocks.len()];
        ins[0] = entry_state;
        let rank = b.reverse_postorder_ranks();
        let mut order: Vec<usize> = (0..b.blocks.len()).collect();
        order.sort_by_key(|i| rank[*i]);
        let mut changed = true;
        while changed {
            changed = false;
            for &i in &order {
                let block = &b.blocks[i];
                let mut state = ins[i].clone();
                for s in &block.statements {
                    if s.place.index.is_none() {
                        state.insert(s.place.local.index());
                    }
                }
                if let TerminatorKind::Call { dest, .. } = &block.terminator.kind {
                    state.insert(dest.index());
                }
                for succ in block.terminator.kind.successors() {
                    let into = &mut ins[succ.index()];
                    if !into.is_subset(&state) {
                        into.intersect_with(&state);
                        changed = true;
                    }
                }
            }
        }
        ins
    }

    /// Checks that `block` reads only scalar locals assigned before, `state` being those
    /// assigned on every path into it.
    fn check_block_reads(
        &self,
        bb: BasicBlock,
        block: &BlockData,
        mut state: FixedBitSet,
    ) -> Result<(), ValidationError> {
        for s in &block.statements {
            if let Some(index) = s.place.index {
                self.check_assigned(bb, &state, &Operand::Copy(Place::local(index)), s.span)?;
            }
            self.check_rvalue_reads(bb, &state, &s.rvalue, s.span)?;
            if s.place.index.is_none() {
                state.insert(s.place.local.index());
            }
        }
        let t = &block.terminator;
        match &t.kind {
            TerminatorKind::SwitchInt { discr, .. } => {
                self.check_assigned(bb, &state, discr, t.span)?
            }
            TerminatorKind::Call { args, .. } => {
                for a in args {
                    self.check_assigned(bb, &state, a, t.span)?;
                }
            }
            TerminatorKind::TileFill { origin, .. } => {
                for op in origin {
                    self.check_assigned(bb, &state, op, t.span)?;
                }
            }
            TerminatorKind::Return if self.body.kind == BodyKind::Device => {
                let ret = Operand::Copy(Place::local(Local::RETURN));
                self.check_assigned(bb, &state, &ret, t.span)?;
            }
            TerminatorKind::Assert { cond, msg, .. } => {
                self.check_assigned(bb, &state, cond, t.span)?;
                for op in msg.operands() {
                    self.check_assigned(bb, &state, op, t.span)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks that the operands `rv` reads are assigned in `state`.
    fn check_rvalue_reads(
        &self,
        bb: BasicBlock,
        state: &FixedBitSet,
        rv: &Rvalue,
        span: Span,
    ) -> Result<(), ValidationError> {
        let check = |op: &Operand| self.check_assigned(bb, state, op, span);
        match rv {
            Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => check(a)?,
            Rvalue::BinaryOp(_, a, c) => {
                check(a)?;
                check(c)?;
            }
            Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => {
                for a in args {
                    check(a)?;
                }
            }
            Rvalue::AtomicRmw(_, place, value) => {
                check(&Operand::Copy(Place::local(
                    place.index.expect("validated"),
                )))?;
                check(value)?;
            }
            Rvalue::AtomicCas(place, current, new) => {
                check(&Operand::Copy(Place::local(
                    place.index.expect("validated"),
                )))?;
                check(current)?;
                check(new)?;
            }
            Rvalue::Len(_)
            | Rvalue::RegionIndex(_)
            | Rvalue::RegionCoord(..)
            | Rvalue::RegionExtent(..)
            | Rvalue::RegionEnd(..)
            | Rvalue::Position(..) => {}
        }
        Ok(())
    }

    /// Checks that the locals `op` reads, its place's and its index's, are assigned in
    /// `state` where they are scalars.
    fn check_assigned(
        &self,
        bb: BasicBlock,
        state: &FixedBitSet,
        op: &Operand,
        span: Span,
    ) -> Result<(), ValidationError> {
        let read = |l: Local| -> Result<(), ValidationError> {
            let is_scalar = matches!(self.body.locals[l.index()].ty, Ty::Scalar(_));
            if is_scalar && !state.contains(l.index()) {
                return self.err(
                    Some(bb),
                    span,
                    format!("`{l}` is read before it is assigned on every path"),
                );
            }
            Ok(())
        };
        if let Operand::Copy(p) | Operand::Move(p) = op {
            read(p.local)?;
            if let Some(index) = p.index {
                read(index)?;
            }
        }
        Ok(())
    }
}
