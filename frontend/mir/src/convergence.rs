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
//!
//! The same analysis tells the shared-memory race check (in [`crate::safety`]) which
//! values every thread of a workgroup agrees on ([`uniformity`]).

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
    let (varying, divergent) = divergent_blocks(body, &pdom);
    for block in &body.blocks {
        if let TerminatorKind::TileFill { origin, .. } = &block.terminator.kind
            && origin.iter().any(|op| operand_varies(body, op, &varying))
        {
            return Err(ConvergenceError {
                span: block.terminator.span,
                message: "`fill_from` copies one block for the whole workgroup, so its row length, row and column must be the same in every thread, but one of them depends on a value that differs between threads".into(),
            });
        }
    }
    for (i, block) in body.blocks.iter().enumerate() {
        let Some(branch) = divergent[i] else { continue };
        let because = format!(
            "it depends on a value that differs between threads (the branch at line {}, column {})",
            branch.line, branch.column
        );
        let waits = match block.terminator.kind {
            TerminatorKind::Barrier { .. } => Some("sync_threads()"),
            TerminatorKind::TileMma { .. } => Some("tile_mma"),
            TerminatorKind::TileFill { .. } => Some("fill_from"),
            _ => None,
        };
        if let Some(name) = waits {
            return Err(ConvergenceError {
                span: block.terminator.span,
                message: format!(
                    "`{name}` must be reached by every thread of the workgroup together, but {because}"
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

/// Which locals may differ between the threads of a workgroup (`varying`), and which
/// blocks run for some threads of a workgroup and not others (`divergent`).
pub struct Uniformity {
    pub varying: Vec<bool>,
    pub divergent: Vec<bool>,
}

/// The uniformity of `body`'s locals and blocks (see the module docs).
pub fn uniformity(body: &Body) -> Uniformity {
    let doomed = doomed(body);
    let quiet = quiet(body, &doomed);
    let pdom = post_dominators(body, &doomed, &quiet);
    let (varying, divergent) = divergent_blocks(body, &pdom);
    Uniformity {
        varying,
        divergent: divergent.iter().map(Option::is_some).collect(),
    }
}

/// For each block, the varying branch it is control-dependent on, if any (with the
/// varying locals): locals
/// assigned a varying value, or in a divergent block, are varying, and blocks depending
/// on a branch over a varying value are divergent, to a fixpoint.
fn divergent_blocks(body: &Body, pdom: &[FixedBitSet]) -> (Vec<bool>, Vec<Option<Span>>) {
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
    (varying, divergent)
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
            b.terminator.kind.waits()
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
