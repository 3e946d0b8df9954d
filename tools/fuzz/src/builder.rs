//! Building a [`Body`] block by block, the way the frontend's translator does: statements
//! go to the current block, and a terminator ends it.

use offload_mir::*;

/// A statement. Every statement of this crate is made here, so a field added to
/// [`Statement`] changes one line.
pub(crate) fn statement(place: Place, rvalue: Rvalue, span: Span) -> Statement {
    Statement {
        place,
        rvalue,
        span,
        raw: false,
    }
}

pub(crate) fn copy(l: Local) -> Operand {
    Operand::Copy(Place::local(l))
}

pub(crate) fn usize_const(v: u64) -> Operand {
    Operand::Const(Const::Int(v as i128, ScalarTy::Usize))
}

pub(crate) struct Builder {
    pub body: Body,
    pub current: BasicBlock,
    /// The line of the next span: every statement and terminator gets its own, so a
    /// failure names one.
    line: u32,
}

impl Builder {
    pub fn new(name: String) -> Builder {
        let mut body = Body::new_kernel(name, "fuzz.rs".into());
        // The oracle (the interpreter) rounds every float operation: so must the GPU.
        body.fp_contract = false;
        let mut b = Builder {
            body,
            current: BasicBlock::ENTRY,
            line: 0,
        };
        b.current = b.new_block();
        b
    }

    /// Declares the next argument; all arguments come before other locals.
    pub fn arg(&mut self, ty: Ty) -> Local {
        assert_eq!(self.body.locals.len(), self.body.arg_count + 1);
        self.body.arg_count += 1;
        self.local(ty)
    }

    pub fn local(&mut self, ty: Ty) -> Local {
        self.body.locals.push(LocalDecl {
            ty,
            mutable: true,
            debug: None,
        });
        Local(self.body.locals.len() as u32 - 1)
    }

    pub fn span(&mut self) -> Span {
        self.line += 1;
        Span {
            line: self.line,
            column: 1,
        }
    }

    /// A new block, `unreachable` until it is terminated.
    pub fn new_block(&mut self) -> BasicBlock {
        self.body.blocks.push(BlockData {
            statements: Vec::new(),
            terminator: Terminator {
                kind: TerminatorKind::Unreachable,
                span: Span::default(),
            },
        });
        BasicBlock(self.body.blocks.len() as u32 - 1)
    }

    pub fn push(&mut self, place: Place, rvalue: Rvalue) {
        let span = self.span();
        let s = statement(place, rvalue, span);
        self.body.blocks[self.current.index()].statements.push(s);
    }

    /// A new local of type `ty` assigned `rvalue`.
    pub fn assign(&mut self, ty: ScalarTy, rvalue: Rvalue) -> Local {
        let l = self.local(Ty::Scalar(ty));
        self.push(Place::local(l), rvalue);
        l
    }

    pub fn binary(&mut self, ty: ScalarTy, op: BinOp, a: Operand, b: Operand) -> Local {
        self.assign(ty, Rvalue::BinaryOp(op, a, b))
    }

    /// Ends the current block with `kind`.
    pub fn terminate(&mut self, kind: TerminatorKind) {
        let span = self.span();
        self.body.blocks[self.current.index()].terminator = Terminator { kind, span };
    }

    pub fn goto(&mut self, target: BasicBlock) {
        self.terminate(TerminatorKind::Goto(target));
    }

    /// `switchInt(cond) -> [0: on_false, otherwise: on_true]`, as the frontend branches.
    pub fn switch_bool(&mut self, cond: Operand, on_true: BasicBlock, on_false: BasicBlock) {
        self.terminate(TerminatorKind::SwitchInt {
            discr: cond,
            targets: vec![(0, on_false)],
            otherwise: on_true,
        });
    }

    /// `assert(cond, msg)`, continuing in a new block.
    pub fn assert(&mut self, cond: Operand, msg: AssertMessage) {
        let next = self.new_block();
        self.terminate(TerminatorKind::Assert {
            cond,
            msg,
            target: next,
        });
        self.current = next;
    }

    /// `_c = Lt(copy index, copy len); assert(copy _c, BoundsCheck { .. })`.
    pub fn bounds_check(&mut self, index: Local, len: Local) {
        let c = self.binary(ScalarTy::Bool, BinOp::Lt, copy(index), copy(len));
        self.assert(
            copy(c),
            AssertMessage::BoundsCheck {
                len: copy(len),
                index: copy(index),
            },
        );
    }

    /// `_n = Len(container)` and the bounds check of `index` against it: the frontend's
    /// `checked_index`.
    pub fn checked_index(&mut self, container: Local, index: Local) {
        let len = self.assign(ScalarTy::Usize, Rvalue::Len(container));
        self.bounds_check(index, len);
    }

    /// `_v = copy local`, so that an operand can index.
    pub fn as_local(&mut self, op: Operand, ty: ScalarTy) -> Local {
        match op {
            Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => p.local,
            other => self.assign(ty, Rvalue::Use(other)),
        }
    }
}
