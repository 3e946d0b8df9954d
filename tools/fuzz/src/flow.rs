//! Sequences of segments, and the control-flow segments: branches, multi-way switches,
//! bounded loops, dead code behind `switchInt(const false)`, asserts, barriers, subgroup
//! operations, and blocks nothing reaches.

use crate::builder::{copy, usize_const};
use crate::generator::{Gen, Value};
use offload_mir::interp::mask;
use offload_mir::*;

/// The deepest nesting of branches and loops.
const MAX_DEPTH: u32 = 3;

/// Messages of user asserts.
const MESSAGES: [&str; 4] = [
    "assertion failed: value != sentinel",
    "the input is out of range",
    "invariant violated",
    "unexpected value",
];

impl Gen<'_> {
    /// Segments until this sequence's share of the budget is spent.
    pub fn sequence(&mut self) {
        for _ in 0..self.rng.u32(1..=4) {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.segment();
        }
    }

    /// A nested sequence, one level deeper.
    pub(crate) fn nested(&mut self) {
        self.depth += 1;
        if self.rng.bool() {
            self.sequence();
        } else {
            self.scalars();
        }
        self.depth -= 1;
    }

    fn segment(&mut self) {
        let shallow = self.depth < MAX_DEPTH;
        loop {
            let done = match self.rng.u32(0..16) {
                0..=2 => {
                    self.scalars();
                    true
                }
                3..=4 => self.region_segment(),
                5 => self.slice_segment(),
                6 => self.atomic_segment(),
                7 => self.uniform && self.shared_segment(),
                8 => self.uniform && self.subgroup(),
                9 => self.uniform && self.barrier(),
                10 if shallow => self.branch(),
                11 if shallow => self.switch(),
                12 if shallow => self.bounded_loop(),
                13 if shallow => self.dead_code(),
                14 => self.assertion(),
                _ => self.stencil_segment(),
            };
            if done {
                return;
            }
        }
    }

    /// `if cond { .. } else { .. }` joining with a value from each side; in uniform
    /// context the `then` side sometimes returns early.
    fn branch(&mut self) -> bool {
        let (cond, varying) = self.condition();
        let ty = self.pick_type();
        let result = self.b.local(Ty::Scalar(ty));
        let (then_bb, else_bb, join) = (self.b.new_block(), self.b.new_block(), self.b.new_block());
        self.b.switch_bool(cond, then_bb, else_bb);
        let early_return = self.uniform && !varying && self.rng.u32(0..8) == 0;
        let mut result_varying = varying;
        for (bb, returns) in [(then_bb, early_return), (else_bb, false)] {
            self.b.current = bb;
            result_varying |= self.arm(varying, |g| {
                g.nested();
                if returns {
                    g.b.terminate(TerminatorKind::Return);
                    return false;
                }
                g.assign_result(result, ty, join)
            });
        }
        self.b.current = join;
        self.join_value(result, ty, result_varying);
        true
    }

    /// Runs `arm` as code that only some threads may run when `varying`, restoring the
    /// pool and the context after; returns what `arm` returns.
    pub(crate) fn arm(&mut self, varying: bool, arm: impl FnOnce(&mut Self) -> bool) -> bool {
        let (mark, outer) = (self.pool.len(), self.uniform);
        self.uniform = outer && !varying;
        let out = arm(self);
        self.pool.truncate(mark);
        self.uniform = outer;
        out
    }

    /// `result = operand; goto join`; whether the operand varies.
    fn assign_result(&mut self, result: Local, ty: ScalarTy, join: BasicBlock) -> bool {
        let (value, varying) = self.operand(ty);
        self.b.push(Place::local(result), Rvalue::Use(value));
        self.b.goto(join);
        varying || !self.uniform
    }

    /// Puts a local assigned on every path into the join into the pool.
    fn join_value(&mut self, local: Local, ty: ScalarTy, varying: bool) {
        self.pool.push(Value {
            local,
            ty,
            varying: varying || !self.uniform,
        });
    }

    /// `switchInt` on an integer with several distinct targets and `otherwise`.
    fn switch(&mut self) -> bool {
        let dty = if self.rng.u32(0..5) == 0 {
            ScalarTy::Bool
        } else {
            self.pick_int()
        };
        let (discr, varying) = self.operand(dty);
        let mut values: Vec<u128> = Vec::new();
        for _ in 0..self.rng.u32(1..=4) {
            let v = match self.rng.u32(0..3) {
                0 => self.rng.u64(0..4),
                1 => crate::values::random_bits(&mut self.rng, dty),
                _ => crate::values::extreme_bits(&mut self.rng, dty),
            } & mask(dty);
            if !values.contains(&(v as u128)) {
                values.push(v as u128);
            }
        }
        let ty = self.pick_type();
        let result = self.b.local(Ty::Scalar(ty));
        let join = self.b.new_block();
        let arms: Vec<BasicBlock> = (0..=values.len()).map(|_| self.b.new_block()).collect();
        self.b.terminate(TerminatorKind::SwitchInt {
            discr,
            targets: values.iter().copied().zip(arms.iter().copied()).collect(),
            otherwise: arms[values.len()],
        });
        let mut result_varying = varying;
        for bb in arms {
            self.b.current = bb;
            result_varying |= self.arm(varying, |g| {
                g.nested();
                g.assign_result(result, ty, join)
            });
        }
        self.b.current = join;
        self.join_value(result, ty, result_varying);
        true
    }

    /// A loop of at most four trips whose counter runs from a small constant to a
    /// constant or `min(value, constant)` bound, carrying an accumulator out.
    fn bounded_loop(&mut self) -> bool {
        let ty = [ScalarTy::Usize, ScalarTy::I32, ScalarTy::U8, ScalarTy::I64][self.rng.usize(..4)];
        let start = self.rng.i64(if ty.is_signed() { -2 } else { 0 }..=3) as i128;
        let end = Operand::Const(Const::Int(start + self.rng.i64(0..=4) as i128, ty));
        let (bound, bound_varying) = if self.rng.bool() {
            (end, false)
        } else {
            let (v, varying) = self.operand(ty);
            let bound = self.define(ty, Rvalue::Intrinsic(Intrinsic::Min, vec![v, end]), varying);
            (copy(bound.local), bound.varying)
        };
        // The counter changes in the loop: it is as varying as the loop's condition.
        let first = Rvalue::Use(Operand::Const(Const::Int(start, ty)));
        let counter = self.define(ty, first, bound_varying);
        let acc_ty = self.pick_type();
        let (init, init_varying) = self.operand(acc_ty);
        let acc = self.b.assign(acc_ty, Rvalue::Use(init));
        let (header, body, exit) = (self.b.new_block(), self.b.new_block(), self.b.new_block());
        self.b.goto(header);
        self.b.current = header;
        let c = self
            .b
            .binary(ScalarTy::Bool, BinOp::Lt, copy(counter.local), bound);
        self.b.switch_bool(copy(c), body, exit);
        self.b.current = body;
        let acc_varying = self.arm(bound_varying, |g| {
            g.nested();
            let varying = g.accumulate(acc, acc_ty);
            let one = Operand::Const(Const::Int(1, ty));
            let next = Rvalue::BinaryOp(BinOp::Add, copy(counter.local), one);
            g.b.push(Place::local(counter.local), next);
            g.b.goto(header);
            varying || !g.uniform
        });
        self.b.current = exit;
        self.join_value(acc, acc_ty, acc_varying || init_varying || bound_varying);
        true
    }

    /// `acc = op(acc, value)` with an operation that cannot trap; whether it varies.
    fn accumulate(&mut self, acc: Local, ty: ScalarTy) -> bool {
        let op = match (ty.is_float(), ty == ScalarTy::Bool, self.rng.u32(0..3)) {
            (_, true, _) => BinOp::BitXor,
            (true, _, 0) => BinOp::Mul,
            (true, ..) => BinOp::Add,
            (false, _, 0) => BinOp::Mul,
            (false, _, 1) => BinOp::BitXor,
            _ => BinOp::Add,
        };
        let (v, varying) = self.operand(ty);
        self.b
            .push(Place::local(acc), Rvalue::BinaryOp(op, copy(acc), v));
        varying
    }

    /// `switchInt(const false) -> [0: live, otherwise: dead]`: the dead side computes, may
    /// loop forever, and returns or goes back to the live side.
    fn dead_code(&mut self) -> bool {
        let (live, dead) = (self.b.new_block(), self.b.new_block());
        self.b
            .switch_bool(Operand::Const(Const::Bool(false)), dead, live);
        self.b.current = dead;
        let mark = self.pool.len();
        self.depth += 1;
        self.scalars();
        if self.rng.bool() {
            // A dead loop: endless, or left only for the live side.
            let spin = self.b.new_block();
            self.b.goto(spin);
            self.b.current = spin;
            self.scalars();
            // Endless only in uniform context, for the reason below.
            match self.uniform && self.rng.bool() {
                true => self.b.goto(spin),
                false => self.b.terminate(TerminatorKind::SwitchInt {
                    discr: Operand::Const(Const::Bool(true)),
                    targets: vec![(0, live)],
                    otherwise: spin,
                }),
            }
        } else {
            // Leaving the kernel from a branch only some threads take would make what
            // follows divergent, so outside uniform context the dead side rejoins.
            let exit = if self.uniform { self.rng.u32(0..3) } else { 0 };
            match exit {
                0 => self.b.goto(live),
                1 => self.b.terminate(TerminatorKind::Return),
                _ => self.b.terminate(TerminatorKind::Unreachable),
            }
        }
        self.depth -= 1;
        self.pool.truncate(mark);
        self.b.current = live;
        true
    }

    /// A user `assert` that almost always holds.
    fn assertion(&mut self) -> bool {
        let ty = self.pick_type();
        let (a, _) = self.operand(ty);
        let sentinel = Operand::Const(crate::values::random_const(&mut self.rng, ty));
        let c = self.b.binary(ScalarTy::Bool, BinOp::Ne, a, sentinel);
        let msg = MESSAGES[self.rng.usize(..MESSAGES.len())];
        self.b.assert(copy(c), AssertMessage::Panic(msg.into()));
        true
    }

    pub fn barrier(&mut self) -> bool {
        let next = self.b.new_block();
        self.b.terminate(TerminatorKind::Barrier { target: next });
        self.b.current = next;
        true
    }

    /// One subgroup operation on pooled or constant operands.
    pub fn subgroup(&mut self) -> bool {
        let op = SubgroupOp::ALL[self.rng.usize(..SubgroupOp::ALL.len())];
        let exchanged = [
            ScalarTy::I32,
            ScalarTy::U32,
            ScalarTy::I64,
            ScalarTy::U64,
            ScalarTy::F32,
            ScalarTy::F64,
        ];
        let ty = match op {
            SubgroupOp::Ballot | SubgroupOp::Any | SubgroupOp::All => ScalarTy::Bool,
            _ => exchanged[self.rng.usize(..exchanged.len())],
        };
        let mut args = Vec::new();
        if op.arity() > 0 {
            args.push(self.operand(ty).0);
        }
        if op.arity() > 1 {
            let lane = if self.rng.bool() {
                usize_const(self.rng.u64(0..40))
            } else {
                self.operand(ScalarTy::Usize).0
            };
            args.push(lane);
        }
        let result = op
            .result_type(Some(ty))
            .expect("operand types fit the operation");
        self.define(result, Rvalue::Subgroup(op, args), op != SubgroupOp::Size);
        true
    }

    /// Up to two blocks without predecessors: statements into fresh locals (so no analysis
    /// learns anything from them), then `unreachable` or a jump into live code.
    pub fn unreachable_blocks(&mut self) {
        let live = self.b.body.blocks.len() as u32;
        for _ in 0..self.rng.u32(0..=2) {
            let bb = self.b.new_block();
            self.b.current = bb;
            let (mark, outer) = (self.pool.len(), self.uniform);
            self.uniform = false;
            self.scalars();
            if let Some(s) = self.plan.slices.first().copied() {
                // An unchecked read: harmless where nothing runs.
                let i = self.b.assign(ScalarTy::Usize, Rvalue::Use(usize_const(7)));
                let at = Place::element(s.local, i);
                self.b.assign(s.elem, Rvalue::Use(Operand::Copy(at)));
            }
            self.pool.truncate(mark);
            self.uniform = outer;
            if self.rng.bool() {
                self.b.goto(BasicBlock(self.rng.u32(0..live)));
            }
        }
    }
}
