//! The checks that make workgroup barriers, subgroup operations and shared memory safe:
//!
//! - **Convergence** ([`check_convergence`]): a barrier or a subgroup operation must be
//!   reached by all threads of a workgroup together, so it may not depend on a value that
//!   differs between threads (a thread index, a region element, a loaded value, an
//!   atomic's result...). A forward analysis marks such *varying* locals; a block is
//!   *divergent* if it is control-dependent on a branch over a varying value (computed
//!   with post-dominators), and locals assigned in divergent blocks are varying too, to a
//!   fixpoint. A barrier or subgroup operation in a divergent block is an error. Panics
//!   are not branches here: a panicking thread ends the launch with an error, and on both
//!   targets a barrier waits only for threads that have not finished.
//! - **Shared-memory races** ([`check_shared_races`]): safe code writes only its own
//!   slots of a `Shared` array and reads any slot. A may-analysis over the CFG tracks,
//!   per array, whether writes or reads happened since the last barrier on some path: a
//!   read after a write, or a write after a read, with no barrier between is an error.
//!   Accesses made through the `unsafe` raw API are exempt.

use crate::ir::*;
use fixedbitset::FixedBitSet;

/// Why a kernel was refused, at a MIR span.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvergenceError {
    pub span: Span,
    pub message: String,
}

/// Checks that barriers and subgroup operations sit in workgroup-uniform control flow.
pub fn check_convergence(body: &Body) -> Result<(), ConvergenceError> {
    if !body.synchronizes() && !body.uses_subgroups() {
        // Nothing needs uniform control flow.
        return Ok(());
    }
    let doomed = doomed(body);
    let quiet = quiet(body, &doomed);
    let pdom = post_dominators(body, &doomed, &quiet);
    let divergent = divergent_blocks(body, &pdom);
    for (i, block) in body.blocks.iter().enumerate() {
        let Some(branch) = divergent[i] else { continue };
        let because = format!(
            "it depends on a value that differs between threads (the branch at line {}, column {})",
            branch.line, branch.column
        );
        if let TerminatorKind::Barrier { .. } = block.terminator.kind {
            return Err(ConvergenceError {
                span: block.terminator.span,
                message: format!(
                    "`sync_threads()` must be reached by every thread of the workgroup together, but {because}"
                ),
            });
        }
        for s in &block.statements {
            if let Rvalue::Subgroup(op, _) = &s.rvalue
                && op.arity() > 0
            {
                return Err(ConvergenceError {
                    span: s.span,
                    message: format!(
                        "`{}` must be reached by every thread of the workgroup together, but {because}",
                        op.name()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// For each block, the varying branch it is control-dependent on, if any: locals
/// assigned a varying value, or in a divergent block, are varying, and blocks depending
/// on a branch over a varying value are divergent, to a fixpoint.
fn divergent_blocks(body: &Body, pdom: &[FixedBitSet]) -> Vec<Option<Span>> {
    let mut varying = vec![false; body.locals.len()];
    // The branch each divergent block depends on, for the message.
    let mut divergent: Vec<Option<Span>> = vec![None; body.blocks.len()];
    loop {
        let mut changed = mark_varying(body, &divergent, &mut varying);
        changed |= mark_divergent(body, pdom, &varying, &mut divergent);
        if !changed {
            break;
        }
    }
    divergent
}

/// Marks the locals assigned a varying value, or assigned in a divergent block, as
/// varying. Returns whether any was not already.
fn mark_varying(body: &Body, divergent: &[Option<Span>], varying: &mut [bool]) -> bool {
    let mut changed = false;
    for (i, block) in body.blocks.iter().enumerate() {
        for s in &block.statements {
            let v = divergent[i].is_some() || rvalue_varies(body, &s.rvalue, varying);
            if v && s.place.index.is_none() && !varying[s.place.local.index()] {
                varying[s.place.local.index()] = true;
                changed = true;
            }
        }
        if let TerminatorKind::Call { args, dest, .. } = &block.terminator.kind {
            let v = divergent[i].is_some() || args.iter().any(|a| operand_varies(body, a, varying));
            if v && !varying[dest.index()] {
                varying[dest.index()] = true;
                changed = true;
            }
        }
    }
    changed
}

/// Marks the blocks that depend on a branch over a varying value as divergent, with
/// that branch. Returns whether any was not already.
fn mark_divergent(
    body: &Body,
    pdom: &[FixedBitSet],
    varying: &[bool],
    divergent: &mut [Option<Span>],
) -> bool {
    let mut changed = false;
    for (a, block) in body.blocks.iter().enumerate() {
        let TerminatorKind::SwitchInt { discr, .. } = &block.terminator.kind else {
            continue;
        };
        if !operand_varies(body, discr, varying) {
            continue;
        }
        // Between a varying branch and the block where its paths join again (its
        // nearest post-dominator), every block runs for some threads and not others,
        // `a` itself too when a path leads back to it (a loop whose trip count varies).
        // A path that ends in a panic for sure is no path for the threads that go on
        // (a barrier waits only for threads that have not stopped), so the join is
        // found without it, but the blocks on it run for some threads only.
        let mut seen = vec![false; body.blocks.len()];
        let mut stack: Vec<usize> = block
            .terminator
            .kind
            .successors()
            .iter()
            .map(|s| s.index())
            .collect();
        while let Some(b) = stack.pop() {
            if seen[b] || (b != a && pdom[a].contains(b)) {
                continue;
            }
            seen[b] = true;
            if divergent[b].is_none() {
                divergent[b] = Some(block.terminator.span);
                changed = true;
            }
            if b != a {
                stack.extend(
                    body.blocks[b]
                        .terminator
                        .kind
                        .successors()
                        .iter()
                        .map(|x| x.index()),
                );
            }
        }
    }
    changed
}

/// Whether a value computed by `rv` may differ between the threads of a workgroup.
fn rvalue_varies(body: &Body, rv: &Rvalue, varying: &[bool]) -> bool {
    let any = |ops: &[&Operand]| ops.iter().any(|o| operand_varies(body, o, varying));
    match rv {
        Rvalue::Position(p, _) => *p == Position::Thread,
        Rvalue::RegionIndex(_) | Rvalue::RegionCoord(..) => true,
        Rvalue::AtomicRmw(..) | Rvalue::AtomicCas(..) => true,
        Rvalue::Subgroup(op, _) => *op != SubgroupOp::Size,
        Rvalue::Len(_) | Rvalue::RegionExtent(..) | Rvalue::RegionEnd(..) => false,
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => any(&[a]),
        Rvalue::BinaryOp(_, a, b) => any(&[a, b]),
        Rvalue::Intrinsic(_, args) => args.iter().any(|a| operand_varies(body, a, varying)),
    }
}

fn operand_varies(body: &Body, op: &Operand, varying: &[bool]) -> bool {
    let (Operand::Copy(p) | Operand::Move(p)) = op else {
        return false;
    };
    match p.index {
        None => varying[p.local.index()],
        // A read-only slice holds the same value for every thread at the same index;
        // regions and shared memory are written by threads.
        Some(index) => {
            !matches!(body.locals[p.local.index()].ty, Ty::Slice(_)) || varying[index.index()]
        }
    }
}

/// The nodes from which some path along `succs` reaches a node marked in `targets`
/// (those included).
fn can_reach(succs: &[Vec<usize>], mut targets: Vec<bool>) -> Vec<bool> {
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..succs.len()).rev() {
            if !targets[b] && succs[b].iter().any(|s| targets[*s]) {
                targets[b] = true;
                changed = true;
            }
        }
    }
    targets
}

/// The blocks from which no path reaches a `return`: a thread there panics (every such
/// path ends at the `unreachable` after an assert that always fails) or loops forever,
/// and in neither case arrives at a barrier after them.
fn doomed(body: &Body) -> Vec<bool> {
    let returns = body
        .blocks
        .iter()
        .map(|b| matches!(b.terminator.kind, TerminatorKind::Return))
        .collect();
    can_reach(&body.successor_indices(), returns)
        .iter()
        .map(|r| !r)
        .collect()
}

/// The doomed blocks from which no path reaches a barrier or a subgroup operation: a
/// thread there stops without waiting for, or exchanging with, any other again.
fn quiet(body: &Body, doomed: &[bool]) -> Vec<bool> {
    let syncs = body
        .blocks
        .iter()
        .map(|b| {
            matches!(b.terminator.kind, TerminatorKind::Barrier { .. })
                || b.statements
                    .iter()
                    .any(|s| matches!(&s.rvalue, Rvalue::Subgroup(op, _) if op.arity() > 0))
        })
        .collect();
    let syncs = can_reach(&body.successor_indices(), syncs);
    doomed.iter().zip(syncs).map(|(d, s)| *d && !s).collect()
}

/// `pdom[b]` holds `c` when block `c` post-dominates block `b` (every path from `b` to the
/// end of the kernel passes `c`). The way from a block that goes on into a doomed one is
/// no path (threads there stop); among doomed blocks, only the way into a quiet one is
/// none (the threads there stop without waiting for anyone again), and the rest end at
/// the exit. Bit sets: this is quadratic in blocks.
fn post_dominators(body: &Body, doomed: &[bool], quiet: &[bool]) -> Vec<FixedBitSet> {
    let n = body.blocks.len();
    let exit = n;
    let mut succs: Vec<Vec<usize>> = body
        .successor_indices()
        .into_iter()
        .enumerate()
        .map(|(b, s)| {
            let s: Vec<usize> = s
                .into_iter()
                .filter(|s| if doomed[b] { !quiet[*s] } else { !doomed[*s] })
                .collect();
            if s.is_empty() { vec![exit] } else { s }
        })
        .collect();
    succs.push(Vec::new());
    // A loop with no way out here (it loops forever, or its only ways out are quiet
    // panics) gets an edge to the exit from its last block in reverse postorder, one of
    // its latches, as if leaving it ended the kernel: so every block has post-dominators,
    // and inside the loop they are those of its iterations.
    let rank = body.reverse_postorder_ranks();
    let mut at_exit = vec![false; n + 1];
    at_exit[exit] = true;
    loop {
        let reaches = can_reach(&succs, at_exit.clone());
        let Some(latch) = (0..n).filter(|b| !reaches[*b]).max_by_key(|b| rank[*b]) else {
            break;
        };
        succs[latch].push(exit);
    }
    let mut all = FixedBitSet::with_capacity(n + 1);
    all.insert_range(..);
    let mut pdom = vec![all.clone(); n + 1];
    pdom[exit].clear();
    pdom[exit].insert(exit);
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..n).rev() {
            let mut set = all.clone();
            for s in &succs[b] {
                set.intersect_with(&pdom[*s]);
            }
            set.insert(b);
            if set != pdom[b] {
                pdom[b] = set;
                changed = true;
            }
        }
    }
    pdom
}

/// How safe kernel code touched a shared array at one statement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Access {
    /// The thread's own slot.
    Write,
    /// Any slot.
    Read,
}

/// Checks that no safe access to a `Shared` array can race with another thread's.
/// Statements made by the `unsafe` raw API ([`Statement::raw`]) are exempt: the user
/// vouches for them. Every `DynShared` view of a kernel is the same memory, so they are
/// checked as one array, and views of different element sizes are refused: a thread's own
/// slot in one would overlap other threads' slots in the other.
pub fn check_shared_races(body: &Body) -> Result<(), ConvergenceError> {
    let memories = shared_memories(body)?;
    if memories.is_empty() {
        return Ok(());
    }
    let n = body.blocks.len();
    let mut ins: Vec<RaceState> = vec![vec![(false, false); memories.len()]; n];
    let mut changed = true;
    while changed {
        changed = false;
        for bb in 0..n {
            let out = race_transfer(body, &memories, bb, ins[bb].clone(), false)?;
            for succ in body.blocks[bb].terminator.kind.successors() {
                for (t, o) in ins[succ.index()].iter_mut().zip(&out) {
                    let joined = (t.0 || o.0, t.1 || o.1);
                    if joined != *t {
                        *t = joined;
                        changed = true;
                    }
                }
            }
        }
    }
    for (bb, state) in ins.into_iter().enumerate() {
        race_transfer(body, &memories, bb, state, true)?;
    }
    Ok(())
}

/// The distinct shared memories of a kernel, each as the locals that view it; views of
/// the dynamic memory must have elements of one size.
fn shared_memories(body: &Body) -> Result<Vec<Vec<Local>>, ConvergenceError> {
    // One entry per distinct memory: each static array, and all dynamic views together.
    let mut memories: Vec<Vec<Local>> = Vec::new();
    let mut dynamic: Option<(usize, ScalarTy)> = None;
    for (i, decl) in body.locals.iter().enumerate() {
        let local = Local(i as u32);
        match decl.ty {
            Ty::Shared(_, Some(_)) => memories.push(vec![local]),
            Ty::Shared(elem, None) => match dynamic {
                Some((_, first)) if first.size_bytes() != elem.size_bytes() => {
                    let span = decl.debug.as_ref().map(|d| d.1).unwrap_or_default();
                    return Err(ConvergenceError {
                        span,
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

/// State per array: (written, read) since the last barrier on some path.
type RaceState = Vec<(bool, bool)>;

/// The accesses statement `s` makes to the shared `memories`, each with the memory's
/// position, how it touched it and through which local; none for a raw statement.
fn shared_accesses(memories: &[Vec<Local>], s: &Statement) -> Vec<(usize, Access, Local)> {
    if s.raw {
        return Vec::new();
    }
    let slot = |l: Local| memories.iter().position(|m| m.contains(&l));
    let mut out = Vec::new();
    if s.place.index.is_some()
        && let Some(k) = slot(s.place.local)
    {
        out.push((k, Access::Write, s.place.local));
    }
    for op in rvalue_operands(&s.rvalue) {
        if let Operand::Copy(p) | Operand::Move(p) = op
            && p.index.is_some()
            && let Some(k) = slot(p.local)
        {
            out.push((k, Access::Read, p.local));
        }
    }
    out
}

/// The race state after block `bb`, from `state` before it; with `report`, an access
/// that races with another thread's is an error.
fn race_transfer(
    body: &Body,
    memories: &[Vec<Local>],
    bb: usize,
    mut state: RaceState,
    report: bool,
) -> Result<RaceState, ConvergenceError> {
    let block = &body.blocks[bb];
    for s in &block.statements {
        for (k, access, local) in shared_accesses(memories, s) {
            let name = body.locals[local.index()]
                .debug
                .as_ref()
                .map_or(local.to_string(), |d| d.0.clone());
            let (written, read) = &mut state[k];
            match access {
                Access::Read if *written && report => {
                    return Err(ConvergenceError {
                        span: s.span,
                        message: format!(
                            "`{name}` is read here after threads wrote it, with no `sync_threads()` between: another thread's write may not have happened yet"
                        ),
                    });
                }
                Access::Write if *read && report => {
                    return Err(ConvergenceError {
                        span: s.span,
                        message: format!(
                            "`{name}` is written here after threads read it, with no `sync_threads()` between: another thread may still be reading this slot"
                        ),
                    });
                }
                Access::Read => *read = true,
                Access::Write => *written = true,
            }
        }
    }
    if let TerminatorKind::Barrier { .. } = block.terminator.kind {
        state.iter_mut().for_each(|s| *s = (false, false));
    }
    Ok(state)
}

fn rvalue_operands(rv: &Rvalue) -> Vec<&Operand> {
    match rv {
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => vec![a],
        Rvalue::BinaryOp(_, a, b) => vec![a, b],
        Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => args.iter().collect(),
        Rvalue::AtomicRmw(_, _, v) => vec![v],
        Rvalue::AtomicCas(_, a, b) => vec![a, b],
        Rvalue::Position(..)
        | Rvalue::Len(_)
        | Rvalue::RegionIndex(_)
        | Rvalue::RegionCoord(..)
        | Rvalue::RegionExtent(..)
        | Rvalue::RegionEnd(..) => Vec::new(),
    }
}
