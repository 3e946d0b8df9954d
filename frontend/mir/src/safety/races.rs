//! The shared-memory race check: no two threads of a workgroup may touch one slot of a
//! shared array between the same two barriers when either touch is a write.
//!
//! Threads leave a barrier together (the convergence check makes every barrier
//! workgroup-uniform), so two accesses can run at once exactly when a path from one
//! *phase start* (the kernel's entry or the block after a barrier) reaches both without
//! passing a barrier. Every such pair where one side writes must be proven to touch
//! different slots whenever different threads make them, by one of:
//!
//! - **own slots**: both indices are `k * threads + rank` (`write`, `write_nth`,
//!   `thread_rank()`), or both are `rank + c` for one `c` every thread shares, or both
//!   are `thread_idx(1) * c + thread_idx(0)` for one constant `c` where facts make the
//!   workgroup at most `c` wide and one plane deep (a `Shared2D` tile's `write`);
//! - **apart by a bound**: one index is below some `x` and the other at least `x`, for an
//!   `x` every thread of the workgroup shares in that phase (as the tree reduction's
//!   `tile[t]` under `t < s` and `tile[t + s]`).
//!
//! `rank` is the thread's linear index ([`RANK_START`], [`RANK_STEPS`]), or
//! `thread_idx(0)` where the facts say the workgroup is one-dimensional
//! (`dim_y * dim_z == 1`, or each is 1), or a value a fact says equals one of those
//! (`if t == 0 { tile[0] ... }`).
//!
//! A bound every thread shares is built from constants, scalar arguments, lengths and
//! extents, workgroup positions and sizes, and `Merge` names of locals the convergence
//! analysis finds uniform, at a block that runs for every thread, that no path from the
//! access reaches without a barrier: so every thread's access in one phase sees the
//! same instance. `rank + x >= x` needs both below 2^63 (no wrap), which follows from
//! widths: 11 bits for thread positions and workgroup sizes, 48 for workgroup positions
//! and counts, 63 for lengths and coordinates, a constant's own, one more for a sum, the
//! total for a product, no more for a quotient, shift or mask; a loop-carried value fits
//! in 63 bits when everything flowing into it does.
//!
//! Accesses made through the `unsafe` raw API are exempt.

use super::values::{Expr, Sym};
use super::{Access, Analysis, SafetyError, State};
use crate::convergence::{Uniformity, uniformity};
use crate::ir::*;
use std::collections::BTreeSet;

/// A safe access to a shared array, recorded by the final pass of the analysis.
pub(super) struct SharedAccess {
    pub local: Local,
    pub block: BasicBlock,
    pub span: Span,
    pub access: Access,
    pub index: Sym,
    pub state: State,
}

/// What is proven about the slots one access touches, over every thread making it.
#[derive(Default)]
struct Slots {
    own: Vec<Own>,
    /// Values the slot is at least.
    lo: Vec<Sym>,
    /// Values the slot is below.
    hi: Vec<Sym>,
}

/// A slot that is a one-to-one function of the thread's rank.
#[derive(Clone, Copy, PartialEq)]
enum Own {
    /// `k * threads + rank`, for any `k < Len / threads`.
    Strided,
    /// `rank + c`, for a `c` every thread shares.
    Shifted(Sym),
    /// `thread_idx(1) * c + thread_idx(0)` for a constant `c` in a workgroup at most `c`
    /// wide and one plane deep: a `Shared2D` tile's own slot, its rows padded or not.
    Rows(Sym),
}

/// The distinct shared memories of a kernel, each as the locals that view it: each
/// static array alone, and every `DynShared` view together (they are one memory), which
/// must then have elements of one size, or a thread's own slot in one view would
/// overlap other threads' slots in another.
pub(super) fn memories(body: &Body) -> Result<Vec<Vec<Local>>, SafetyError> {
    let mut memories: Vec<Vec<Local>> = Vec::new();
    let mut dynamic: Option<(usize, ScalarTy)> = None;
    for (i, decl) in body.locals.iter().enumerate() {
        let local = Local(i as u32);
        match decl.ty {
            Ty::Shared(_, Some(_)) => memories.push(vec![local]),
            Ty::Shared(elem, None) => match dynamic {
                Some((_, first)) if first.size_bytes() != elem.size_bytes() => {
                    return Err(SafetyError {
                        block: BasicBlock::ENTRY,
                        span: decl.debug.as_ref().map(|d| d.1).unwrap_or_default(),
                        message: format!(
                            "every `DynShared` view of a kernel is the same memory, so they must have elements of one size; found `{first}` and `{elem}`"
                        ),
                    });
                }
                Some((k, _)) => memories[k].push(local),
                None => {
                    dynamic = Some((memories.len(), elem));
                    memories.push(vec![local]);
                }
            },
            _ => {}
        }
    }
    Ok(memories)
}

/// The blocks a thread can run from the start of each of `from`, before it next waits at
/// a barrier (a block ending in a barrier is run, not left).
pub(super) fn barrier_free_reach(body: &Body, from: &[usize]) -> Vec<bool> {
    let mut seen = vec![false; body.blocks.len()];
    let mut stack = from.to_vec();
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b], true) {
            continue;
        }
        if !body.blocks[b].terminator.kind.waits() {
            stack.extend(
                body.blocks[b]
                    .terminator
                    .kind
                    .successors()
                    .iter()
                    .map(|s| s.index()),
            );
        }
    }
    seen
}

/// The blocks a thread can enter after leaving `b`, before it next waits at a barrier.
fn after(body: &Body, b: BasicBlock) -> Vec<bool> {
    let block = &body.blocks[b.index()];
    if block.terminator.kind.waits() {
        return vec![false; body.blocks.len()];
    }
    let succs: Vec<usize> = block
        .terminator
        .kind
        .successors()
        .iter()
        .map(|s| s.index())
        .collect();
    barrier_free_reach(body, &succs)
}

impl Analysis<'_> {
    /// Checks the recorded shared accesses pairwise (see the module docs).
    pub(super) fn races(&mut self) -> Vec<SafetyError> {
        let body = self.body;
        let first_phase = barrier_free_reach(body, &[0]);
        let raw_in_first_phase = (body.blocks.iter().enumerate())
            .any(|(b, block)| first_phase[b] && block.statements.iter().any(|s| s.raw));
        let accesses = std::mem::take(&mut self.shared);
        self.proven.written_before_read = self.written_before_read(&accesses);
        if accesses.is_empty() {
            self.proven.first_phase_owns_its_slots = !raw_in_first_phase;
            return Vec::new();
        }
        let uniform = uniformity(body);
        let slots: Vec<Slots> = accesses.iter().map(|a| self.slots(a, &uniform)).collect();
        self.proven.first_phase_owns_its_slots = !raw_in_first_phase
            && (accesses.iter().zip(&slots))
                .all(|(a, s)| !first_phase[a.block.index()] || s.own.contains(&Own::Strided));
        let memory = |a: &SharedAccess| self.memories.iter().position(|m| m.contains(&a.local));
        // Phase starts: the entry and every block a barrier leads to.
        let mut starts = vec![0];
        for block in &body.blocks {
            if block.terminator.kind.waits() {
                starts.extend(block.terminator.kind.successors().iter().map(|t| t.index()));
            }
        }
        starts.sort();
        starts.dedup();
        let mut pairs = BTreeSet::new();
        for s in starts {
            let phase = barrier_free_reach(body, &[s]);
            let here: Vec<usize> = (0..accesses.len())
                .filter(|k| phase[accesses[*k].block.index()])
                .collect();
            for (x, &i) in here.iter().enumerate() {
                for &j in &here[x..] {
                    let (a, b) = (&accesses[i], &accesses[j]);
                    let writes = a.access == Access::Write || b.access == Access::Write;
                    if writes && memory(a) == memory(b) {
                        pairs.insert((i, j));
                    }
                }
            }
        }
        let mut errors = Vec::new();
        for (i, j) in pairs {
            if !apart(&self.values, &slots[i], &slots[j]) {
                errors.push(self.race_error(&accesses[i], &accesses[j]));
            }
        }
        self.shared = accesses;
        errors
    }

    /// The error for accesses `a` and `b` that may touch one slot from two threads,
    /// reported at the read if one reads, else at the later write.
    fn race_error(&self, a: &SharedAccess, b: &SharedAccess) -> SafetyError {
        let (here, there) = match (a.access, b.access) {
            (Access::Read, _) => (a, b),
            (_, Access::Read) => (b, a),
            _ if (a.block, a.span.line, a.span.column) < (b.block, b.span.line, b.span.column) => {
                (b, a)
            }
            _ => (a, b),
        };
        let name = self.name(here.local);
        let what = match here.access {
            Access::Read => "read",
            Access::Write => "written",
        };
        let with = if std::ptr::eq(here, there) {
            "by two threads at once, with no proof that their slots differ".to_string()
        } else {
            // Reported at a write only when both write.
            let other = match here.access {
                Access::Read => " written",
                Access::Write => "",
            };
            format!(
                "and{other} at line {}, column {} with no `sync_threads()` between, and the slots are not proven different for different threads",
                there.span.line, there.span.column
            )
        };
        let tx = Expr::Position(Position::Thread, 0);
        let by_column = [here, there]
            .iter()
            .any(|a| self.values.get(a.index) == &tx);
        let hint = if by_column {
            "; `thread_idx(0)` is the same for the threads of one column of a 2-D or 3-D workgroup: index by `thread_rank()`, or check first that the workgroup is one-dimensional: `assert!(workgroup_dim(1) * workgroup_dim(2) == 1)`"
        } else {
            ""
        };
        SafetyError {
            block: here.block,
            span: here.span,
            message: format!(
                "`{name}` is {what} here {with} (slots are proven apart when both are a thread's own, as with `write`, `write_nth` or `thread_rank()`, or when a bound every thread shares separates them, as `t < s` does `tile[t]` from `tile[t + s]`){hint}"
            ),
        }
    }

    /// What is proven about the slots access `a` touches.
    fn slots(&mut self, a: &SharedAccess, uniform: &Uniformity) -> Slots {
        let after = after(self.body, a.block);
        let shares = |this: &Self, x: Sym| this.shared_by_all(x, uniform, &after);
        let state = &a.state;
        let i = a.index;
        let mut slots = Slots::default();
        if self.is_rank(state, i) {
            slots.own.push(Own::Strided);
            let zero = self.values.usize(0);
            slots.own.push(Own::Shifted(zero));
        } else if self.own_slot(state, a.local, i) {
            slots.own.push(Own::Strided);
        }
        if let Some(c) = self.row_slot(state, i) {
            slots.own.push(Own::Rows(c));
        }
        if let Some((c, _)) = self.values.const_bits(i) {
            slots.lo.push(i);
            let next = self.values.usize(c + 1);
            slots.hi.push(next);
        }
        if let Expr::Binary(BinOp::Add, x, y) = self.values.get(i).clone() {
            for (r, c) in [(x, y), (y, x)] {
                if !shares(self, c) {
                    continue;
                }
                let rank = self.is_rank(state, r);
                if rank {
                    slots.own.push(Own::Shifted(c));
                }
                let mut seen = Vec::new();
                if (rank || self.small(r, Some(state), &mut seen)) && self.small(c, None, &mut seen)
                {
                    slots.lo.push(c);
                }
            }
        }
        for &(f, holds) in &state.facts {
            let Expr::Binary(op, x, y) = self.values.get(f).clone() else {
                continue;
            };
            // `i < b` gives a bound above, `i >= b` one below, in any spelling.
            let (above, bound) = match (op, holds) {
                (BinOp::Lt, true) | (BinOp::Ge, false) if x == i => (true, y),
                (BinOp::Gt, true) | (BinOp::Le, false) if y == i => (true, x),
                (BinOp::Ge, true) | (BinOp::Lt, false) if x == i => (false, y),
                (BinOp::Le, true) | (BinOp::Gt, false) if y == i => (false, x),
                _ => continue,
            };
            if shares(self, bound) {
                if above { &mut slots.hi } else { &mut slots.lo }.push(bound);
            }
        }
        slots
    }

    /// The columns `c` if `i` is `thread_idx(1) * c + thread_idx(0)` for a constant `c`,
    /// where the facts make the workgroup at most `c` wide and one plane deep: no two
    /// threads have that slot (`thread_idx(0) < c`).
    fn row_slot(&mut self, state: &State, i: Sym) -> Option<Sym> {
        let [tx, ty] = [0, 1].map(|d| self.values.intern(Expr::Position(Position::Thread, d)));
        let [width, depth] =
            [0, 2].map(|d| (self.values).intern(Expr::Position(Position::WorkgroupSize, d)));
        let Expr::Binary(BinOp::Add, a, b) = self.values.get(i).clone() else {
            return None;
        };
        let row = [(a, b), (b, a)].into_iter().find(|(_, x)| *x == tx)?.0;
        // `thread_idx(1) * 1` is folded to `thread_idx(1)`.
        let c = match self.values.get(row).clone() {
            _ if row == ty => self.values.usize(1),
            Expr::Binary(BinOp::Mul, p, q) => {
                [(p, q), (q, p)].into_iter().find(|(y, _)| *y == ty)?.1
            }
            _ => return None,
        };
        // A constant, or an outside `const` item the macro's translation still names (a
        // constant whose value rustc gives; the check runs again once it is filled in).
        if self.values.const_bits(c).is_none() && !matches!(self.values.get(c), Expr::Item(..)) {
            return None;
        }
        let one = |v: &super::Values, s: Sym| v.const_bits(s) == Some((1, ScalarTy::Usize));
        let flat = self.equal_by_fact(state, depth, one);
        let narrow = state.facts.iter().any(|&(f, holds)| {
            matches!(self.values.get(f), Expr::Binary(op, w, k)
                if *w == width && *k == c
                    && matches!((op, holds), (BinOp::Le, true) | (BinOp::Gt, false)))
        });
        (flat && narrow).then_some(c)
    }

    /// Whether `i` is the thread's rank here: the rank itself, `thread_idx(0)` in a
    /// workgroup the facts make one-dimensional, or a value a fact equates with either.
    pub(super) fn is_rank(&mut self, state: &State, i: Sym) -> bool {
        let rank = self.rank();
        let tx = self.values.intern(Expr::Position(Position::Thread, 0));
        // One-dimensional: `dim_y == 1` and `dim_z == 1`, or `dim_y * dim_z == 1` (each
        // is at least 1 and at most 1024, so the product cannot wrap to 1).
        let one = |v: &super::Values, s: Sym| v.const_bits(s) == Some((1, ScalarTy::Usize));
        let [y, z] = [1, 2].map(|d| {
            self.values
                .intern(Expr::Position(Position::WorkgroupSize, d))
        });
        let products = [
            self.values.intern(Expr::Binary(BinOp::Mul, y, z)),
            self.values.intern(Expr::Binary(BinOp::Mul, z, y)),
        ];
        let flat = (self.equal_by_fact(state, y, one) && self.equal_by_fact(state, z, one))
            || products
                .into_iter()
                .any(|p| self.equal_by_fact(state, p, one));
        let ranks = |_: &super::Values, s: Sym| s == rank || (flat && s == tx);
        ranks(&self.values, i) || self.equal_by_fact(state, i, ranks)
    }

    /// Whether a fact says `x` equals a value `which` picks.
    fn equal_by_fact(
        &self,
        state: &State,
        x: Sym,
        which: impl Fn(&super::Values, Sym) -> bool,
    ) -> bool {
        state.facts.iter().any(|&(f, holds)| {
            let eq = match self.values.get(f) {
                Expr::Binary(BinOp::Eq, a, b) if holds => Some((*a, *b)),
                Expr::Binary(BinOp::Ne, a, b) if !holds => Some((*a, *b)),
                _ => None,
            };
            eq.is_some_and(|(a, b)| {
                (a == x && which(&self.values, b)) || (b == x && which(&self.values, a))
            })
        })
    }

    /// Whether every thread of the workgroup that makes the access sees the same value
    /// `x` in one phase (see the module docs); `after` holds the blocks reachable from
    /// the access without a barrier.
    fn shared_by_all(&self, x: Sym, uniform: &Uniformity, after: &[bool]) -> bool {
        match self.values.get(x) {
            Expr::Const(..)
            | Expr::Arg(_)
            | Expr::Item(..)
            | Expr::Len(_)
            | Expr::RegionExtent(..)
            | Expr::RegionEnd(..) => true,
            Expr::Position(p, _) => *p != Position::Thread,
            Expr::Binary(_, a, b) => {
                self.shared_by_all(*a, uniform, after) && self.shared_by_all(*b, uniform, after)
            }
            Expr::Unary(_, a) | Expr::Cast(a, _) | Expr::Element(_, a) => {
                self.shared_by_all(*a, uniform, after)
            }
            Expr::Intrinsic(_, args) => args.iter().all(|a| self.shared_by_all(*a, uniform, after)),
            Expr::Merge(h, l) => {
                !uniform.varying[l.index()] && !uniform.divergent[h.index()] && !after[h.index()]
            }
            Expr::RegionIndex(_) | Expr::RegionCoord(..) | Expr::Opaque(..) => false,
        }
    }

    /// Whether `x` is below 2^63, so adding two such values cannot wrap.
    fn small(&mut self, x: Sym, state: Option<&State>, seen: &mut Vec<Sym>) -> bool {
        self.bits(x, state, seen).is_some_and(|b| b <= 63)
    }

    /// A width `x` is known to fit in (`x < 2^bits`), if one is. `seen` holds the
    /// loop-carried values assumed to fit in 63 bits while their inputs are checked.
    fn bits(&mut self, x: Sym, state: Option<&State>, seen: &mut Vec<Sym>) -> Option<u32> {
        let known = match self.values.get(x).clone() {
            Expr::Const(v, _) => Some(128 - v.leading_zeros()),
            // At most 1024 threads per workgroup and 2^48 workgroups; lengths, extents and
            // coordinates are below `isize::MAX`.
            Expr::Position(Position::Thread | Position::WorkgroupSize, _) => Some(11),
            Expr::Position(..) => Some(48),
            Expr::Len(_)
            | Expr::RegionIndex(_)
            | Expr::RegionCoord(..)
            | Expr::RegionExtent(..)
            | Expr::RegionEnd(..) => Some(63),
            Expr::Binary(BinOp::Div | BinOp::Shr, a, _) => self.bits(a, state, seen),
            Expr::Binary(BinOp::Rem, _, b) => self.bits(b, state, seen),
            Expr::Binary(op @ (BinOp::BitAnd | BinOp::Add | BinOp::Mul), a, b) => {
                let (a, b) = (self.bits(a, state, seen), self.bits(b, state, seen));
                match op {
                    BinOp::BitAnd => a.into_iter().chain(b).min(),
                    BinOp::Add => Some(a?.max(b?) + 1),
                    _ => Some(a? + b?),
                }
            }
            Expr::Intrinsic(Intrinsic::Min, args) => {
                args.iter().filter_map(|a| self.bits(*a, state, seen)).min()
            }
            Expr::Cast(_, t) if !t.is_signed() && t.bits() <= 32 => Some(t.bits()),
            Expr::Merge(..) if seen.contains(&x) => Some(63),
            Expr::Merge(..) => {
                seen.push(x);
                let inputs = self.merges.get(&x).cloned().flatten();
                inputs
                    .filter(|inputs| {
                        inputs
                            .iter()
                            .all(|v| self.bits(*v, None, seen).is_some_and(|b| b <= 63))
                    })
                    .map(|_| 63)
            }
            _ => None,
        };
        if known.is_some() {
            return known;
        }
        // Below a value of known width, by a fact.
        let state = state?;
        let bounds: Vec<Sym> = state
            .facts
            .iter()
            .filter_map(|&(f, holds)| match self.values.get(f) {
                Expr::Binary(BinOp::Lt | BinOp::Le, a, b) if holds && *a == x => Some(*b),
                Expr::Binary(BinOp::Gt | BinOp::Ge, a, b) if holds && *b == x => Some(*a),
                _ => None,
            })
            .collect();
        bounds
            .into_iter()
            .filter(|b| *b != x)
            .filter_map(|b| self.bits(b, None, seen))
            .min()
    }
}

/// Whether two accesses with these slots, made by different threads, touch different
/// slots.
fn apart(values: &super::Values, a: &Slots, b: &Slots) -> bool {
    let own = a.own.iter().any(|x| b.own.contains(x));
    let at_most = |x: Sym, y: Sym| {
        x == y
            || matches!((values.const_bits(x), values.const_bits(y)), (Some((x, _)), Some((y, _))) if x <= y)
    };
    let below = |p: &Slots, q: &Slots| p.hi.iter().any(|h| q.lo.iter().any(|l| at_most(*h, *l)));
    own || below(a, b) || below(b, a)
}
