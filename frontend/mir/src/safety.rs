//! The memory-safety verifier: proves, on the body that is lowered, that no element
//! access can be out of bounds or race, and that no integer division can trap.
//!
//! The frontend emits checks in known shapes; this verifier does not trust the frontend
//! but re-proves every access from the checks that dominate it, so hand-written or
//! mutated MIR gets the same guarantee. What it cannot prove is an error.
//!
//! # The rules
//!
//! | access | proof required |
//! |---|---|
//! | `_s[_i]` read of a slice, a `Stencil2D` region or a shared array | `_i < Len(_s)` holds (a constant bound for static shared arrays) |
//! | `_r[_i]` of a `Linear1D` or `Indexed` region | `_i` is `RegionIndex(_r)` and `RegionIndex(_r) < Len(_r)` holds |
//! | `_r[_i]` of a `Linear2D` or `Linear3D` region | `_i` is `RegionIndex(_r)` and every coordinate is below its `RegionEnd` (or its extent) |
//! | `_r[_i]` of a `Chunked<N>` region | `_i` is `RegionIndex(_r)` or `RegionIndex(_r) + k` with `k < min(Len(_r) - RegionIndex(_r), N)`, and `RegionIndex(_r) < Len(_r)` |
//! | write `_s[_i]` of a shared array | `_i < Len(_s)`; and no race (below) |
//! | `AtomicRmw`/`AtomicCas` on `_a[_i]` | `_i < Len(_a)` |
//! | integer `Div`/`Rem` by `d` | `d != 0`, and for signed types not `MIN / -1` |
//!
//! Writes to slices and `Stencil2D` regions, and plain reads or writes of atomics, are
//! refused. Safe shared-memory accesses are recorded with the facts that hold at each,
//! and module `races` proves that no two threads touch one slot between the same two
//! barriers when either writes it. Statements made by the `unsafe` raw shared-memory API
//! need only the bounds proof. A region's elements are distinct per thread because the host's `check_launch`
//! refuses geometry that would give two threads one index, and an `Indexed` region's
//! indices that are out of bounds or repeated: element `t` of an `Indexed` region is the
//! data's `indices[t]`, so proving `t` owned and below `Len` (the index count) suffices.
//! An interior region's coordinates start at its margin and its `RegionEnd` is its
//! extent less the margin; the host refuses a margin that leaves no interior.
//!
//! # How facts are found
//!
//! A forward must-analysis over the control-flow graph names the value of every local
//! symbolically (module `values`) and collects the conditions known to hold: an `assert`'s
//! condition on its success edge, a `switchInt` on a `bool` on each edge. Conditions
//! split through `!`, `&` (when true) and `|` (when false). At a join a fact survives
//! only if every incoming path has it.
//!
//! `a < b` (unsigned, as every index and length is `usize`) is known from a fact saying
//! so, or `a < m` and `m <= b`, or, for `a = x + y`, from `y < m`, `m <= b` and
//! `x <= b - m` (exact, since `m <= b`; then `x + y < x + m <= b` and nothing wraps):
//! what the test before a versioned loop (`for k in 0..m`, reading `s[k + x]`) and the
//! loop's bound give. For a 2-D region `_g`, `r * w + c < Len(_g)` holds where `w` is its
//! row length, `r < h` (its rows) is known or `r` is a `min` with its last row and the
//! region is known non-empty, and `c < w` is known or `c` is a `min` with its last column
//! (a tested or clamped `Stencil2D` read; rank-2 regions are laid out in whole rows).

mod facts;
mod initialised;
mod races;
mod values;

use crate::ir::*;
use std::collections::{BTreeSet, HashMap};
use values::{Expr, Sym, Values, truncate};

/// The most static shared memory one workgroup may declare, in bytes (the limit of
/// NVIDIA GPUs without opting in; the CPU backend uses the same).
pub const MAX_STATIC_SHARED_BYTES: usize = 48 * 1024;

/// One violation, at a MIR location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetyError {
    pub block: BasicBlock,
    pub span: Span,
    pub message: String,
}

/// What the verifier proved of a kernel beyond its safety, which the lowering may use.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Proven {
    /// The `Shared` and `DynShared` locals whose memory no read sees where no thread
    /// wrote (module `initialised`): the lowering need not zero it when a workgroup
    /// starts.
    pub written_before_read: Vec<Local>,
    /// Before its first barrier, every thread touches shared memory only at its own
    /// slots (`k * threads + rank`, through the safe API): a thread that zeroes exactly
    /// those slots when the kernel starts needs no barrier before going on, since no
    /// other thread reaches them in that phase.
    pub first_phase_owns_its_slots: bool,
}

/// Checks every access and division of `body`, and that no two threads race on shared
/// memory; returns every violation found, or what was proven.
pub fn check_memory_safety(body: &Body) -> Result<Proven, Vec<SafetyError>> {
    let (mut errors, races, proven) = verify(body);
    errors.extend(races);
    errors.sort_by_key(|e| (e.block, e.span.line, e.span.column));
    errors.dedup();
    if errors.is_empty() {
        Ok(proven)
    } else {
        Err(errors)
    }
}

/// Only the shared-memory race check of [`check_memory_safety`], for the kernel
/// translator, which reports races at the source before the kernel is linked.
pub fn check_shared_races(body: &Body) -> Vec<SafetyError> {
    verify(body).1
}

/// The violations of `body`: those of single accesses and divisions, and races; and
/// what was proven.
fn verify(body: &Body) -> (Vec<SafetyError>, Vec<SafetyError>, Proven) {
    let mut errors = Vec::new();
    // Arrays sized by outside `const` items (the macro's translation) are measured where
    // the kernel is linked, with the values filled in.
    let sized = !(body.locals.iter()).any(|d| matches!(d.ty, Ty::Shared(_, Some(Param::Item(_)))));
    let layout = if sized {
        body.shared_layout()
    } else {
        Default::default()
    };
    // A length from a `const` item may be 0, which a literal may not.
    for decl in &body.locals {
        if let Ty::Shared(_, Some(Param::Value(0))) = decl.ty {
            errors.push(SafetyError {
                block: BasicBlock::ENTRY,
                span: decl.debug.as_ref().map(|d| d.1).unwrap_or_default(),
                message: "a `Shared` array holds at least one element; this one is declared with 0"
                    .into(),
            });
        }
    }
    if layout.static_bytes > MAX_STATIC_SHARED_BYTES {
        let at = layout
            .arrays
            .last()
            .map(|(l, _)| *l)
            .unwrap_or(Local::RETURN);
        errors.push(SafetyError {
            block: BasicBlock::ENTRY,
            span: body.locals[at.index()].debug.as_ref().map(|d| d.1).unwrap_or_default(),
            message: format!(
                "the kernel's `Shared` arrays take {} bytes of workgroup memory; at most {MAX_STATIC_SHARED_BYTES} can be declared statically (use `DynShared` and `dyn_cache` for more)",
                layout.static_bytes
            ),
        });
    }
    let memories = match races::memories(body) {
        Ok(m) => m,
        Err(e) => return (errors, vec![e], Proven::default()),
    };
    let mut analysis = Analysis {
        body,
        values: Values::default(),
        errors: Vec::new(),
        report: false,
        merges: HashMap::new(),
        memories,
        shared: Vec::new(),
        proven: Proven::default(),
    };
    let races = match analysis.solve() {
        Some(entries) => {
            analysis.report = true;
            for (b, entry) in entries.into_iter().enumerate() {
                if let Some(state) = entry {
                    analysis.block(BasicBlock(b as u32), state);
                }
            }
            analysis.races()
        }
        None => {
            let e = SafetyError {
                block: BasicBlock::ENTRY,
                span: Span::default(),
                message: "the safety verifier did not reach a fixed point on this kernel; simplify its control flow".into(),
            };
            analysis.errors.push(e.clone());
            vec![e]
        }
    };
    errors.extend(analysis.errors);
    (errors, races, analysis.proven)
}

/// What is known at a program point: the value of each assigned local, and conditions
/// that hold. The maps are persistent, so a state shares its structure with the states
/// made from it: cloning is free, a change copies one path, and states are compared
/// without visiting what they share. (Per-block copies of dense vectors made the
/// analysis quadratic in kernel size.)
#[derive(Clone, PartialEq, Eq, Debug, Default)]
struct State {
    vals: imbl::OrdMap<u32, Sym>,
    facts: imbl::OrdSet<(Sym, bool)>,
    /// A condition known false was assumed true: no thread gets here.
    infeasible: bool,
}

impl State {
    fn val(&self, l: Local) -> Option<Sym> {
        self.vals.get(&l.0).copied()
    }
}

/// An edge into a block: its source and edge number there, and the state along it
/// (`None` for an edge no thread can take).
type Incoming = ((usize, usize), Option<State>);

#[derive(Copy, Clone, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

struct Analysis<'a> {
    body: &'a Body,
    values: Values,
    errors: Vec<SafetyError>,
    /// Whether violations are recorded (only once the states are final).
    report: bool,
    /// What flows into each `Merge` name: the local's value along every edge into its
    /// block (`None` where some edge brings no value).
    merges: HashMap<Sym, Option<Vec<Sym>>>,
    /// The distinct shared memories, each as the locals that view it.
    memories: Vec<Vec<Local>>,
    /// The safe accesses to shared memory, recorded by the final pass for the race check.
    shared: Vec<races::SharedAccess>,
    /// What the race check proved beyond the absence of races.
    proven: Proven,
}

impl Analysis<'_> {
    /// The state at the entry of every reachable block, or `None` if the iteration did
    /// not settle.
    ///
    /// Blocks are visited in reverse postorder. At a loop header, the locals the loop
    /// assigns are named anew (`Merge`) and the others keep the value they enter with,
    /// so the names inside a loop do not depend on its back edges; the back edges only
    /// take facts away (see [`Self::join`]).
    fn solve(&mut self) -> Option<Vec<Option<State>>> {
        let n = self.body.blocks.len();
        let (rank, loop_assigned) = self.order();
        // The back edges into each block, as (predecessor, edge number).
        let mut back_edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        for (p, block) in self.body.blocks.iter().enumerate() {
            for (k, s) in block.terminator.kind.successors().iter().enumerate() {
                if rank[p] != usize::MAX && rank[p] >= rank[s.index()] {
                    back_edges[s.index()].push((p, k));
                }
            }
        }
        let mut entries: Vec<Option<State>> = vec![None; n];
        // Whether a block has been entered, so names made there may exist.
        let mut entered = vec![false; n];
        // Incoming edges per block, by (predecessor, edge number): the state along the
        // edge, or `None` for an edge no thread can take.
        let mut incoming: Vec<Vec<Incoming>> = vec![Vec::new(); n];
        let mut work: BTreeSet<(usize, usize)> = BTreeSet::from([(0, 0)]);
        let budget = 64 * (n + 1) * (n + 1).max(16);
        let mut steps = 0;
        while let Some((_, b)) = work.pop_first() {
            steps += 1;
            if steps > budget {
                return None;
            }
            // Each arrived state, and whether it came along a forward edge.
            let mut states: Vec<(State, bool)> = incoming[b]
                .iter()
                .filter_map(|((from, _), s)| Some((s.clone()?, rank[*from] < rank[b])))
                .collect();
            if b == 0 {
                states.push((self.entry_state(), true));
            }
            if !states.iter().any(|(_, forward)| *forward) {
                // No thread gets here any more (an edge in was found never taken): what
                // this block sent on came from names that may be stale now.
                if entries[b].take().is_some() {
                    let succs = self.body.blocks[b].terminator.kind.successors();
                    for (k, succ) in succs.iter().enumerate() {
                        let s = succ.index();
                        if let Some((_, out)) =
                            incoming[s].iter_mut().find(|(from, _)| *from == (b, k))
                            && out.take().is_some()
                        {
                            work.insert((rank[s], s));
                        }
                    }
                }
                continue;
            }
            let revisit = std::mem::replace(&mut entered[b], true);
            // Whether every back edge into `b` has said what it brings (a state, or that
            // no thread takes it): until then a loop's constants are not known to stay.
            let back_edges_known =
                (back_edges[b].iter()).all(|edge| incoming[b].iter().any(|(from, _)| from == edge));
            let state = self.join(
                BasicBlock(b as u32),
                states,
                &loop_assigned[b],
                revisit,
                back_edges_known,
            );
            if entries[b].as_ref() == Some(&state) {
                continue;
            }
            entries[b] = Some(state.clone());
            for (k, (succ, out)) in self
                .block(BasicBlock(b as u32), state)
                .into_iter()
                .enumerate()
            {
                let s = succ.index();
                let slot = incoming[s].iter_mut().find(|(from, _)| *from == (b, k));
                match slot {
                    Some((_, old)) if *old == out => continue,
                    Some((_, old)) => *old = out,
                    None => incoming[s].push(((b, k), out)),
                }
                if rank[b] < rank[s] {
                    // What enters a loop changed: the states its back edges brought were
                    // made from the old entry, under other names. Drop them, so the loop
                    // is entered afresh and they come back from the new one.
                    incoming[s].retain(|((from, _), _)| rank[*from] < rank[s]);
                }
                work.insert((rank[s], s));
            }
        }
        Some(entries)
    }

    /// Each block's position in reverse postorder, and for each block entered by a back
    /// edge (a loop header) the locals assigned in its loop: in the blocks that reach one
    /// of its back edges without passing it.
    fn order(&self) -> (Vec<usize>, Vec<Vec<bool>>) {
        let n = self.body.blocks.len();
        let succs = self.body.successor_indices();
        let rank = self.body.reverse_postorder_ranks();
        // Blocks the entry reaches.
        let seen: Vec<bool> = rank.iter().map(|r| *r != usize::MAX).collect();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for b in (0..n).filter(|b| seen[*b]) {
            for &s in &succs[b] {
                preds[s].push(b);
            }
        }
        let mut loop_assigned = vec![Vec::new(); n];
        for h in (0..n).filter(|h| seen[*h]) {
            let back: Vec<usize> = preds[h]
                .iter()
                .copied()
                .filter(|p| rank[*p] >= rank[h])
                .collect();
            if back.is_empty() {
                continue;
            }
            // The loop: `h` and the blocks that reach a back edge without passing `h`.
            let mut body = vec![false; n];
            body[h] = true;
            let mut stack = back;
            while let Some(b) = stack.pop() {
                if !std::mem::replace(&mut body[b], true) {
                    stack.extend(preds[b].iter().copied());
                }
            }
            let mut assigned = vec![false; self.body.locals.len()];
            for b in (0..n).filter(|b| body[*b]) {
                let block = &self.body.blocks[b];
                for st in block
                    .statements
                    .iter()
                    .filter(|st| st.place.index.is_none())
                {
                    assigned[st.place.local.index()] = true;
                }
                if let TerminatorKind::Call { dest, .. } = &block.terminator.kind {
                    assigned[dest.index()] = true;
                }
            }
            loop_assigned[h] = assigned;
        }
        (rank, loop_assigned)
    }

    fn entry_state(&mut self) -> State {
        let mut state = State::default();
        for (local, decl) in self.body.args() {
            if decl.ty.scalar().is_some() {
                state
                    .vals
                    .insert(local.0, self.values.intern(Expr::Arg(local)));
            }
        }
        state
    }

    /// Where paths meet at `b`: names made at `b` are forgotten (this entry makes new
    /// instances), and only facts every arrived path has survive. A local a loop headed
    /// by `b` assigns (`loop_assigned`) is `Merge(b, local)`, unless every back edge is
    /// known (`back_edges_known`: each brought a state, or is known untaken) and every
    /// arrived path brings the same constant; any other keeps the value every forward
    /// edge brings (a back edge brings the same), or is `Merge(b, local)` when they
    /// differ. (A back edge's state is dropped when what enters the loop changes; taking
    /// the entry's constant before it comes back made a loop's exit look untaken: fuzz
    /// seed 22566.)
    fn join(
        &mut self,
        b: BasicBlock,
        mut states: Vec<(State, bool)>,
        loop_assigned: &[bool],
        revisit: bool,
        back_edges_known: bool,
    ) -> State {
        // Names made at `b` exist only once `b` has been entered.
        if revisit {
            for (s, _) in &mut states {
                let stale: Vec<(Sym, bool)> = s
                    .facts
                    .iter()
                    .filter(|(f, _)| self.values.rooted_at(*f, b))
                    .copied()
                    .collect();
                for f in stale {
                    s.facts.remove(&f);
                }
            }
        }
        let forward: Vec<&State> = states.iter().filter(|(_, f)| *f).map(|(s, _)| s).collect();
        let Some(first) = forward.iter().min_by_key(|s| s.vals.len()) else {
            return State::default();
        };
        // The locals to look at: all of them where names may be stale or a loop assigns
        // them, else only those whose value differs between the forward paths.
        let candidates: Vec<u32> = if revisit || !loop_assigned.is_empty() {
            first.vals.keys().copied().collect()
        } else {
            let mut differ = BTreeSet::new();
            for s in &forward {
                differ.extend(crate::persistent::lost_keys(&first.vals, &s.vals));
            }
            differ.into_iter().collect()
        };
        let mut vals = first.vals.clone();
        for l in candidates {
            let local = Local(l);
            // Unassigned on some forward path: unknown (the validator forbids a use).
            let Some(value) = forward
                .iter()
                .map(|s| s.val(local))
                .collect::<Option<Vec<_>>>()
            else {
                vals.remove(&l);
                continue;
            };
            let first = value[0];
            let merged = if value.iter().any(|v| *v != first) {
                true
            } else {
                let assigned = loop_assigned.get(l as usize).copied().unwrap_or(false);
                // A constant names the same value on every visit: a loop that assigns
                // only that constant leaves it as it was.
                let constant = back_edges_known
                    && self.values.const_bits(first).is_some()
                    && states.iter().all(|(s, _)| s.val(local) == Some(first));
                (assigned && !constant) || self.values.rooted_at(first, b)
            };
            if merged {
                let name = self.values.intern(Expr::Merge(b, local));
                let inputs = states.iter().map(|(s, _)| s.val(local)).collect();
                self.merges.insert(name, inputs);
                vals.insert(l, name);
            }
        }
        // Only facts every arrived path has survive.
        let fewest = states
            .iter()
            .map(|(s, _)| &s.facts)
            .min_by_key(|f| f.len())
            .expect("a block with a state has an arrived path");
        let mut facts = fewest.clone();
        for (s, _) in &states {
            for f in crate::persistent::lost_members(fewest, &s.facts) {
                facts.remove(&f);
            }
        }
        State {
            vals,
            facts,
            infeasible: false,
        }
    }

    /// Runs block `b` from `state`, checking its accesses when reporting; returns the
    /// state on each outgoing edge.
    fn block(&mut self, b: BasicBlock, state: State) -> Vec<(BasicBlock, Option<State>)> {
        self.run_block(b, state)
            .into_iter()
            .map(|(t, s)| {
                // An edge guarded by a condition known false is never taken.
                let feasible = !s.infeasible;
                (t, feasible.then_some(s))
            })
            .collect()
    }

    fn run_block(&mut self, b: BasicBlock, mut state: State) -> Vec<(BasicBlock, State)> {
        let block = &self.body.blocks[b.index()];
        for (i, s) in block.statements.iter().enumerate() {
            self.statement(b, i, s, &mut state);
        }
        let span = block.terminator.span;
        match &block.terminator.kind {
            TerminatorKind::Goto(t) => vec![(*t, state)],
            TerminatorKind::Barrier { target }
            | TerminatorKind::TileMma { target, .. }
            | TerminatorKind::TileFill { target, .. } => {
                vec![(*target, state)]
            }
            TerminatorKind::Return | TerminatorKind::Unreachable => Vec::new(),
            TerminatorKind::Assert { cond, msg, target } => {
                let n = block.statements.len();
                let c = self.operand(b, n, 0, cond, span, &state);
                for (k, op) in (1u8..).zip(msg.operands()) {
                    self.operand(b, n, k, op, span, &state);
                }
                self.assume(&mut state, c, true);
                vec![(*target, state)]
            }
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                let n = block.statements.len();
                let d = self.operand(b, n, 0, discr, span, &state);
                let is_bool = self.operand_ty(discr) == Some(ScalarTy::Bool);
                let mut out = Vec::new();
                let ty = self.operand_ty(discr);
                for (v, t) in targets {
                    let mut s = state.clone();
                    match ty {
                        _ if is_bool => self.assume(&mut s, d, *v != 0),
                        // Along a case's edge the discriminant is the case's value.
                        Some(ty) => {
                            let c = self.values.intern(Expr::Const(truncate(*v, ty), ty));
                            let eq = self.values.intern(Expr::Binary(BinOp::Eq, d, c));
                            self.assume(&mut s, eq, true);
                        }
                        None => {}
                    }
                    out.push((*t, s));
                }
                let listed: BTreeSet<bool> = targets.iter().map(|(v, _)| *v != 0).collect();
                if is_bool && listed.len() == 1 {
                    let unlisted = !listed.contains(&true);
                    self.assume(&mut state, d, unlisted);
                }
                out.push((*otherwise, state));
                out
            }
            TerminatorKind::Call { dest, target, .. } => {
                self.error(b, span, "a call is left after linking; device functions must be inlined before lowering".into());
                let n = block.statements.len();
                state
                    .vals
                    .insert(dest.0, self.values.intern(Expr::Opaque(b, n, 0)));
                vec![(*target, state)]
            }
        }
    }

    fn statement(&mut self, b: BasicBlock, i: usize, s: &Statement, state: &mut State) {
        let span = s.span;
        let value = match &s.rvalue {
            Rvalue::Use(a) => self.operand(b, i, 0, a, span, state),
            Rvalue::BinaryOp(op, a, c) => {
                let (x, y) = (
                    self.operand(b, i, 0, a, span, state),
                    self.operand(b, i, 1, c, span, state),
                );
                if matches!(op, BinOp::Div | BinOp::Rem)
                    && let Some(t) = self.operand_ty(a).filter(|t| t.is_integer())
                {
                    self.check_division(b, span, x, y, t, state);
                }
                self.values.intern(Expr::Binary(*op, x, y))
            }
            Rvalue::UnaryOp(op, a) => {
                let x = self.operand(b, i, 0, a, span, state);
                self.values.intern(Expr::Unary(*op, x))
            }
            Rvalue::Cast(a, t) => {
                let x = self.operand(b, i, 0, a, span, state);
                if self.operand_ty(a) == Some(*t) {
                    x
                } else {
                    self.values.intern(Expr::Cast(x, *t))
                }
            }
            Rvalue::Intrinsic(f, args) => {
                let args = args
                    .iter()
                    .enumerate()
                    .map(|(k, a)| self.operand(b, i, k as u8, a, span, state))
                    .collect();
                self.values.intern(Expr::Intrinsic(*f, args))
            }
            Rvalue::Subgroup(_, args) => {
                for (k, a) in args.iter().enumerate() {
                    self.operand(b, i, k as u8, a, span, state);
                }
                self.values.intern(Expr::Opaque(b, i, 0))
            }
            Rvalue::AtomicRmw(_, place, v) => {
                self.operand(b, i, 1, v, span, state);
                self.atomic(b, span, *place, state);
                self.values.intern(Expr::Opaque(b, i, 0))
            }
            Rvalue::AtomicCas(place, c, n) => {
                self.operand(b, i, 1, c, span, state);
                self.operand(b, i, 2, n, span, state);
                self.atomic(b, span, *place, state);
                self.values.intern(Expr::Opaque(b, i, 0))
            }
            Rvalue::Len(l) => match self.body.locals[l.index()].ty {
                Ty::Shared(_, Some(n)) => self.shared_len(n),
                _ => self.values.intern(Expr::Len(*l)),
            },
            Rvalue::RegionIndex(l) => self.values.intern(Expr::RegionIndex(*l)),
            Rvalue::RegionCoord(l, d) => self.values.intern(Expr::RegionCoord(*l, *d)),
            Rvalue::RegionExtent(l, d) => self.values.intern(Expr::RegionExtent(*l, *d)),
            Rvalue::RegionEnd(l, d) => self.values.intern(Expr::RegionEnd(*l, *d)),
            Rvalue::Position(p, d) => self.values.intern(Expr::Position(*p, *d)),
        };
        match s.place.index {
            Some(index) => self.access(
                b,
                span,
                Place::element(s.place.local, index),
                Access::Write,
                s.raw,
                state,
            ),
            None => {
                state.vals.insert(s.place.local.0, value);
            }
        }
    }

    /// The value of an operand; an element read is checked and yields a fresh name.
    fn operand(
        &mut self,
        b: BasicBlock,
        i: usize,
        k: u8,
        op: &Operand,
        span: Span,
        state: &State,
    ) -> Sym {
        match op {
            Operand::Const(c) => self.values.constant(*c),
            Operand::Copy(p) | Operand::Move(p) => match p.index {
                Some(index) => {
                    let raw = self.body.blocks[b.index()]
                        .statements
                        .get(i)
                        .is_some_and(|s| s.raw);
                    self.access(b, span, *p, Access::Read, raw, state);
                    let read_only = match self.body.locals[p.local.index()].ty {
                        Ty::Slice(_) => true,
                        Ty::Region(_, s) => !s.is_writable(),
                        _ => false,
                    };
                    match state.val(index) {
                        Some(i) if read_only => self.values.intern(Expr::Element(p.local, i)),
                        _ => self.values.intern(Expr::Opaque(b, i, k)),
                    }
                }
                None => state
                    .val(p.local)
                    .unwrap_or_else(|| self.values.intern(Expr::Opaque(b, i, k))),
            },
        }
    }

    fn operand_ty(&self, op: &Operand) -> Option<ScalarTy> {
        match op {
            Operand::Const(c) => Some(c.ty()),
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.body.locals.get(p.local.index())?.ty;
                if p.index.is_some() {
                    ty.element()
                } else {
                    ty.scalar()
                }
            }
        }
    }

    /// A static shared array's length: its number, or the outside `const` item the
    /// macro's translation still names (one value in every thread).
    fn shared_len(&mut self, n: Param) -> Sym {
        match n {
            Param::Value(n) => self.values.usize(n as u128),
            Param::Item(k) => self.values.constant(Const::Item(k, ScalarTy::Usize)),
        }
    }

    fn in_bounds(&mut self, state: &State, container: Local, index: Sym) -> bool {
        let len = match self.body.locals[container.index()].ty {
            Ty::Shared(_, Some(n)) => self.shared_len(n),
            _ => self.values.intern(Expr::Len(container)),
        };
        self.less(state, index, len)
    }

    /// Checks a read or write of the element `place` (an index projection).
    fn access(
        &mut self,
        b: BasicBlock,
        span: Span,
        place: Place,
        access: Access,
        raw: bool,
        state: &State,
    ) {
        let container = place.local;
        let Some(index) = place.index else { return };
        let Some(i) = state.val(index) else {
            return self.error(
                b,
                span,
                format!("the index `{index}` is used before it is assigned"),
            );
        };
        let name = self.name(container);
        let shown = format!("`{name}[{index}]`");
        let ty = self.body.locals[container.index()].ty;
        let refused = match (ty, access) {
            (Ty::Slice(_), Access::Write) => Some(format!("{shown} writes a read-only slice")),
            (Ty::Region(_, Strategy::Stencil2D(_)), Access::Write) => {
                Some(format!("{shown} writes a read-only `Stencil2D` region"))
            }
            (Ty::Atomic(_), _) => Some(format!(
                "{shown} reaches an element of an `Atomic` without an atomic operation"
            )),
            (Ty::Region(_, s), _) if s.is_writable() => (!self.owned(state, container, s, i)).then(|| {
                let a = if s == Strategy::Indexed { "an" } else { "a" };
                format!(
                    "{shown} is not proven to be this thread's own element: {a} `{s}` region is reached only at its `RegionIndex`, inside the check that the thread's element exists"
                )
            }),
            // `get_unchecked`: the `unsafe` block the kernel was written with vouches.
            (Ty::Slice(_), Access::Read) if raw => None,
            // A thread's own shared slot is in bounds by how it is checked (`k < Len /
            // threads` for `k * threads + rank`).
            (Ty::Shared(..), _) if self.own_slot(state, container, i) => None,
            (Ty::Slice(_) | Ty::Region(..) | Ty::Shared(..), _) => (!self.in_bounds(state, container, i)).then(|| {
                format!("{shown} is not proven in bounds: no check that `{index} < Len({container})` precedes it on every path")
            }),
            _ => Some(format!("{shown} indexes a local of type `{ty}`")),
        };
        if let Some(message) = refused {
            self.error(b, span, message);
        }
        if self.report && !raw && matches!(ty, Ty::Shared(..)) {
            self.shared.push(races::SharedAccess {
                local: container,
                block: b,
                span,
                access,
                index: i,
                state: state.clone(),
            });
        }
    }

    fn atomic(&mut self, b: BasicBlock, span: Span, place: Place, state: &State) {
        let Some(index) = place.index else { return };
        let Some(i) = state.val(index) else {
            return self.error(
                b,
                span,
                format!("the index `{index}` is used before it is assigned"),
            );
        };
        if !matches!(self.body.locals[place.local.index()].ty, Ty::Atomic(_)) {
            return self.error(
                b,
                span,
                format!("`{}` is not an `Atomic`", self.name(place.local)),
            );
        }
        if !self.in_bounds(state, place.local, i) {
            let message = format!(
                "the atomic operation on `{}[{index}]` is not proven in bounds: no check that `{index} < Len({})` precedes it on every path",
                self.name(place.local),
                place.local
            );
            self.error(b, span, message);
        }
    }

    /// Whether index `i` of region `r` is the calling thread's own element.
    fn owned(&mut self, state: &State, r: Local, strategy: Strategy, i: Sym) -> bool {
        let own = self.values.intern(Expr::RegionIndex(r));
        let len = self.values.intern(Expr::Len(r));
        match strategy {
            Strategy::Linear1D | Strategy::Indexed => i == own && self.less(state, own, len),
            Strategy::Linear2D | Strategy::Linear3D => {
                // Below the end of the owned coordinates or the whole extent: either keeps
                // the element inside the region (an interior's end is below its extent).
                let inside = |a: &mut Self, d: u8| {
                    let c = a.values.intern(Expr::RegionCoord(r, d));
                    let ends = [Expr::RegionEnd(r, d), Expr::RegionExtent(r, d)];
                    ends.into_iter().any(|e| {
                        let e = a.values.intern(e);
                        a.less(state, c, e)
                    })
                };
                i == own && (0..strategy.rank()).all(|d| inside(self, d))
            }
            Strategy::Chunked(n) => {
                if !self.less(state, own, len) {
                    return false;
                }
                if i == own {
                    return true;
                }
                let Expr::Binary(BinOp::Add, base, k) = self.values.get(i).clone() else {
                    return false;
                };
                if base != own {
                    return false;
                }
                // `k < min(Len - RegionIndex, N)`: within the chunk and the region.
                let rest = self.values.intern(Expr::Binary(BinOp::Sub, len, own));
                let Some(n) = n.value() else {
                    return false;
                };
                let n = self.values.usize(n as u128);
                let bound = [
                    self.values
                        .intern(Expr::Intrinsic(Intrinsic::Min, vec![rest, n])),
                    self.values
                        .intern(Expr::Intrinsic(Intrinsic::Min, vec![n, rest])),
                ];
                bound.into_iter().any(|m| self.less(state, k, m))
            }
            Strategy::Stencil2D(_) => false,
        }
    }

    /// The thread's rank in its workgroup, as the translator computes it.
    fn rank(&mut self) -> Sym {
        let v = &mut self.values;
        let start = v.intern(Expr::Position(RANK_START.0, RANK_START.1));
        RANK_STEPS.into_iter().fold(start, |acc, (op, p, d)| {
            let position = v.intern(Expr::Position(p, d));
            v.intern(Expr::Binary(op, acc, position))
        })
    }

    /// The workgroup's thread count, as the translator computes it.
    fn workgroup_threads(&mut self) -> Sym {
        let v = &mut self.values;
        let pos = |v: &mut Values, (p, d): (Position, u8)| v.intern(Expr::Position(p, d));
        let [first, rest @ ..] = WORKGROUP_THREADS;
        let first = pos(v, first);
        rest.into_iter().fold(first, |acc, p| {
            let position = pos(v, p);
            v.intern(Expr::Binary(BinOp::Mul, acc, position))
        })
    }

    /// Whether index `i` of shared array `s` is one of the calling thread's own slots:
    /// `rank`, or `k * threads + rank` with `k < Len / threads`, or with
    /// `k < Len / threads + 1` and the slot itself checked below `Len` (the last,
    /// partial round of a length that is not a multiple of the thread count).
    fn own_slot(&mut self, state: &State, s: Local, i: Sym) -> bool {
        let rank = self.rank();
        let threads = self.workgroup_threads();
        let len = match self.body.locals[s.index()].ty {
            Ty::Shared(_, Some(n)) => self.shared_len(n),
            _ => self.values.intern(Expr::Len(s)),
        };
        let per_thread = self.values.intern(Expr::Binary(BinOp::Div, len, threads));
        if i == rank {
            // `rank < len`, or `0 < len / threads` (the check of `write_nth(0, ..)`).
            let zero = self.values.usize(0);
            return self.in_bounds(state, s, i) || self.less(state, zero, per_thread);
        }
        let v = &mut self.values;
        let Expr::Binary(BinOp::Add, base, r) = v.get(i).clone() else {
            return false;
        };
        // `base` is `k * threads`, or `threads` itself when `k` folded to 1.
        let (k, t) = match v.get(base).clone() {
            _ if base == threads => (v.usize(1), threads),
            Expr::Binary(BinOp::Mul, k, t) => (k, t),
            _ => return false,
        };
        if r != rank || t != threads {
            return false;
        }
        // `k < Len / threads` keeps `k * threads + rank` below `Len` without wrapping;
        // `k <= Len / threads` keeps it from wrapping, and the slot's own check below.
        if self.less(state, k, per_thread) {
            return true;
        }
        let one = self.values.usize(1);
        let rounds = self
            .values
            .intern(Expr::Binary(BinOp::Add, per_thread, one));
        self.less(state, k, rounds) && self.in_bounds(state, s, i)
    }

    fn check_division(
        &mut self,
        b: BasicBlock,
        span: Span,
        lhs: Sym,
        d: Sym,
        t: ScalarTy,
        state: &State,
    ) {
        let zero = self.values.intern(Expr::Const(0, t));
        let ne = self.values.intern(Expr::Binary(BinOp::Ne, d, zero));
        let eq = self.values.intern(Expr::Binary(BinOp::Eq, d, zero));
        let nonzero = match self.values.const_bits(d) {
            Some((v, _)) => v != 0,
            None => self.holds(state, ne, true) || self.holds(state, eq, false) || self.positive(d),
        };
        if !nonzero {
            self.error(b, span, "this division is not proven to have a nonzero divisor: no check that the divisor is not 0 precedes it".into());
        }
        if !t.is_signed() {
            return;
        }
        let minus_one = self.values.intern(Expr::Const(truncate(u128::MAX, t), t));
        let min = self.values.intern(Expr::Const(1u128 << (t.bits() - 1), t));
        if self
            .values
            .const_bits(d)
            .is_some_and(|(v, _)| v != truncate(u128::MAX, t))
            || self
                .values
                .const_bits(lhs)
                .is_some_and(|(v, _)| v != 1u128 << (t.bits() - 1))
        {
            return;
        }
        let is_minus_one = self.values.intern(Expr::Binary(BinOp::Eq, d, minus_one));
        let not_minus_one = self.values.intern(Expr::Binary(BinOp::Ne, d, minus_one));
        let is_min = self.values.intern(Expr::Binary(BinOp::Eq, lhs, min));
        let both = [
            self.values
                .intern(Expr::Binary(BinOp::BitAnd, is_minus_one, is_min)),
            self.values
                .intern(Expr::Binary(BinOp::BitAnd, is_min, is_minus_one)),
        ];
        let fine = self.holds(state, is_minus_one, false)
            || self.holds(state, not_minus_one, true)
            || self.holds(state, is_min, false)
            || both.iter().any(|x| self.holds(state, *x, false));
        if !fine {
            self.error(b, span, "this signed division is not proven free of overflow: no check that it is not `MIN / -1` precedes it".into());
        }
    }

    /// Values the launch guarantees are at least 1: workgroup sizes and their products
    /// (at most 1024 threads per workgroup, so the products cannot wrap).
    fn positive(&self, s: Sym) -> bool {
        match self.values.get(s) {
            Expr::Position(Position::WorkgroupSize | Position::WorkgroupCount, _) => true,
            Expr::Binary(BinOp::Mul, a, b) => self.workgroup_size(*a) && self.workgroup_size(*b),
            _ => false,
        }
    }

    fn workgroup_size(&self, s: Sym) -> bool {
        match self.values.get(s) {
            Expr::Position(Position::WorkgroupSize, _) => true,
            Expr::Binary(BinOp::Mul, a, b) => self.workgroup_size(*a) && self.workgroup_size(*b),
            _ => false,
        }
    }

    fn name(&self, l: Local) -> String {
        self.body.locals[l.index()]
            .debug
            .as_ref()
            .map_or(l.to_string(), |d| d.0.clone())
    }

    fn error(&mut self, block: BasicBlock, span: Span, message: String) {
        if self.report {
            self.errors.push(SafetyError {
                block,
                span,
                message,
            });
        }
    }
}
