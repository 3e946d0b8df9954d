//! Which shared memories a kernel never reads where no thread wrote: the ones the
//! lowering need not zero when a workgroup starts (a workgroup's shared memory reads as
//! zero where no thread wrote it, and zeroing a large array costs a short kernel up to a
//! tenth of its time; `tools/bench/RESULTS.md`, run 56).
//!
//! A memory qualifies when, with no raw (`unsafe`) statement in the kernel:
//!
//! - every path from the kernel's entry to a barrier, before any barrier, writes the
//!   thread's own slot `rank` of it (through the safe API), so that once the first
//!   barrier is passed, slot `r` holds what thread `r` wrote, for every thread `r` of the
//!   workgroup that did not panic (a panic fails the launch, and a thread that returns
//!   before the barrier either returns with every other, or the barrier is refused for
//!   divergence);
//! - every read of it comes after some barrier, at an index proven below the workgroup's
//!   thread count: the rank, a value below the thread count or below `workgroup_dim(0)`
//!   (at most the count), or `x - y` of such an `x` where `x >= y` is known;
//! - no workgroup matrix operation (`tile_mma`) reads it: that reads every slot.
//!
//! Every read then sees a slot its thread wrote; which value a zeroed slot would have
//! read is never asked.

use super::races::{SharedAccess, barrier_free_reach};
use super::values::Expr;
use super::{Access, Analysis, State, Sym};
use crate::ir::*;

impl Analysis<'_> {
    /// The locals of the shared memories (see [`super::races::memories`]) that every
    /// read of which sees a slot a thread wrote (see the module docs).
    pub(super) fn written_before_read(&mut self, accesses: &[SharedAccess]) -> Vec<Local> {
        let body = self.body;
        if (body.blocks.iter()).any(|b| b.statements.iter().any(|s| s.raw)) {
            return Vec::new();
        }
        let first_phase = barrier_free_reach(body, &[0]);
        // A workgroup matrix operation reads its tiles whole, written or not.
        let multiplied: Vec<Local> = (body.blocks.iter())
            .flat_map(|b| match b.terminator.kind {
                TerminatorKind::TileMma { acc, a, b, .. } => vec![acc, a, b],
                _ => Vec::new(),
            })
            .collect();
        let mut qualified = Vec::new();
        for memory in self.memories.clone() {
            if memory.iter().any(|l| multiplied.contains(l)) {
                continue;
            }
            let ours = |a: &&SharedAccess| memory.contains(&a.local);
            let reads: Vec<&SharedAccess> = (accesses.iter().filter(ours))
                .filter(|a| a.access == Access::Read)
                .collect();
            let reads_written = reads
                .iter()
                .all(|a| !first_phase[a.block.index()] && self.below_threads(&a.state, a.index));
            // A memory nobody reads needs nothing.
            if reads.is_empty()
                || (reads_written && self.first_phase_writes_rank(accesses, &memory, &first_phase))
            {
                qualified.extend(memory);
            }
        }
        qualified
    }

    /// Whether every barrier-free path from the entry to a barrier writes slot `rank` of
    /// `memory`: a must-analysis over the blocks of the first phase.
    fn first_phase_writes_rank(
        &mut self,
        accesses: &[SharedAccess],
        memory: &[Local],
        first_phase: &[bool],
    ) -> bool {
        let body = self.body;
        let n = body.blocks.len();
        let mut writes = vec![false; n];
        for a in accesses {
            if a.access == Access::Write
                && memory.contains(&a.local)
                && self.is_rank(&a.state, a.index)
            {
                writes[a.block.index()] = true;
            }
        }
        // Predecessors along barrier-free edges inside the first phase.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (b, block) in body.blocks.iter().enumerate() {
            if !first_phase[b] || block.terminator.kind.waits() {
                continue;
            }
            for s in block.terminator.kind.successors() {
                if first_phase[s.index()] {
                    preds[s.index()].push(b);
                }
            }
        }
        // `written[b]`: every path to the end of `b` has written; from "all" down.
        let mut written: Vec<bool> = (0..n).map(|b| first_phase[b]).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..n).filter(|&b| first_phase[b]) {
                let on_entry = b != 0 && preds[b].iter().all(|&p| written[p]);
                let here = writes[b] || on_entry;
                if here != written[b] {
                    written[b] = here;
                    changed = true;
                }
            }
        }
        (body.blocks.iter().enumerate())
            .all(|(b, block)| !first_phase[b] || !block.terminator.kind.waits() || written[b])
    }

    /// Whether `i` is proven below the workgroup's thread count at a point with `state`.
    fn below_threads(&mut self, state: &State, i: Sym) -> bool {
        if self.is_rank(state, i) {
            return true;
        }
        let threads = self.workgroup_threads();
        let dim_x = self
            .values
            .intern(Expr::Position(Position::WorkgroupSize, 0));
        if self.less(state, i, threads) || self.less(state, i, dim_x) {
            return true;
        }
        // `x - y` with `x >= y` known: at most `x`.
        let Expr::Binary(BinOp::Sub, x, y) = self.values.get(i).clone() else {
            return false;
        };
        let no_wrap = state.facts.iter().any(|&(f, holds)| {
            matches!(self.values.get(f),
                Expr::Binary(BinOp::Ge, a, b) if holds && (*a, *b) == (x, y))
                || matches!(self.values.get(f),
                Expr::Binary(BinOp::Lt, a, b) if !holds && (*a, *b) == (x, y))
                || matches!(self.values.get(f),
                Expr::Binary(BinOp::Le, a, b) if holds && (*a, *b) == (y, x))
        });
        no_wrap && self.below_threads(state, x)
    }
}
