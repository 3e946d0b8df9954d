//! Segments that break one safety rule on purpose, so that the verifier's refusals get
//! exercised. Each is emitted once, at the end of the kernel, in uniform context.

use crate::Broken;
use crate::builder::{copy, usize_const};
use crate::generator::{Gen, copied};
use offload_mir::*;

impl Gen<'_> {
    pub fn break_rule(&mut self, rule: Broken) {
        match rule {
            Broken::UncheckedIndex => {
                let s = self.plan.slices[0];
                let index = self.unproven_index(s.len);
                let at = Operand::Copy(Place::element(s.local, index));
                self.define(s.elem, Rvalue::Use(at), true);
            }
            Broken::UncheckedAtomic => {
                let a = self.plan.atomics[0];
                let index = self.unproven_index(a.len);
                self.atomic_update(a, index);
            }
            Broken::UncheckedDivision => {
                // By the thread's index, which is 0 for the first thread.
                let ty = self.pick_int();
                let t = self
                    .b
                    .assign(ScalarTy::Usize, Rvalue::Position(Position::Thread, 0));
                let divisor = self.b.assign(ty, Rvalue::Cast(copy(t), ty));
                let (a, _) = self.operand(ty);
                let op = if self.rng.bool() {
                    BinOp::Div
                } else {
                    BinOp::Rem
                };
                self.define(ty, Rvalue::BinaryOp(op, a, copy(divisor)), true);
            }
            Broken::RegionNotOwn => self.write_any_element(),
            Broken::SharedRace => {
                let s = self.plan.shared[0];
                let (value, _) = self.operand(s.elem);
                let slot = self.own_slot(None);
                self.b.checked_index(s.local, slot);
                self.b
                    .push(Place::element(s.local, slot), Rvalue::Use(value));
                // No barrier between the write and the read.
                self.read_round_slot(s, None);
                self.barrier();
            }
            Broken::SharedNotOwnSlot => {
                let s = self.plan.shared[0];
                let (value, _) = self.operand(s.elem);
                let slot = self.neighbour_slot();
                self.b.checked_index(s.local, slot);
                self.b
                    .push(Place::element(s.local, slot), Rvalue::Use(value));
                self.barrier();
                self.read_round_slot(s, None);
                self.barrier();
            }
            Broken::DivergentBarrier => self.under_thread_branch(|g| {
                g.barrier();
            }),
            Broken::DivergentSubgroup => self.under_thread_branch(|g| {
                let (v, _) = g.operand(ScalarTy::U32);
                g.define(
                    ScalarTy::U32,
                    Rvalue::Subgroup(SubgroupOp::Sum, vec![v]),
                    true,
                );
            }),
        }
    }

    /// An index below `len` (when it is not 0) that no check proves below anything:
    /// `(global id ^ K) % len` for a random `K`.
    fn unproven_index(&mut self, len: usize) -> Local {
        let id = self.global_id();
        let k = usize_const(self.rng.u64(1..1 << 20));
        let mixed = self.b.binary(ScalarTy::Usize, BinOp::BitXor, copy(id), k);
        let n = usize_const(len.max(1) as u64);
        self.b.binary(ScalarTy::Usize, BinOp::Rem, copy(mixed), n)
    }

    /// The next thread's rank, `(rank + 1) % threads`: not this thread's.
    fn neighbour_slot(&mut self) -> Local {
        let rank = self.own_slot(None);
        let shifted = self
            .b
            .binary(ScalarTy::Usize, BinOp::Add, copy(rank), usize_const(1));
        let threads = usize_const(self.plan.threads());
        self.b
            .binary(ScalarTy::Usize, BinOp::Rem, copy(shifted), threads)
    }

    /// Writes a bounds-checked element of the first region that is not the thread's own.
    fn write_any_element(&mut self) {
        let r = self.plan.regions[0];
        let (v, _) = self.operand(ScalarTy::Usize);
        let v = copied(v);
        let n = usize_const(r.len as u64);
        self.checked_division(BinOp::Rem, ScalarTy::Usize, v, n);
        let index = self.b.binary(ScalarTy::Usize, BinOp::Rem, v, n);
        self.b.checked_index(r.local, index);
        let (value, _) = self.operand(r.elem);
        self.b
            .push(Place::element(r.local, index), Rvalue::Use(value));
    }

    /// `if thread_idx(0) < 1 { body }`.
    fn under_thread_branch(&mut self, body: impl FnOnce(&mut Self)) {
        let t = self
            .b
            .assign(ScalarTy::Usize, Rvalue::Position(Position::Thread, 0));
        let first = self
            .b
            .binary(ScalarTy::Bool, BinOp::Lt, copy(t), usize_const(1));
        let (then_bb, join) = (self.b.new_block(), self.b.new_block());
        self.b.switch_bool(copy(first), then_bb, join);
        self.b.current = then_bb;
        // Generated as if uniform: that is the rule broken.
        let mark = self.pool.len();
        body(self);
        self.pool.truncate(mark);
        self.b.goto(join);
        self.b.current = join;
    }
}
