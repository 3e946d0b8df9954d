//! Small random edits of a valid body that keep it valid: swapped operands, changed
//! constants (extremes included), other operators and cast types, retargeted branches,
//! inserted dead loops, deleted statements. An edit that breaks validity is retried with
//! another; the result may well be unsafe or undefined, which is the point.

use crate::values::{extreme_bits, random_bits};
use fastrand::Rng;
use offload_mir::interp::bits_const;
use offload_mir::*;

/// How many edit sets are tried before giving up and returning the body unchanged.
const ATTEMPTS: u32 = 64;

/// A valid body one to three edits away from `body` (which must be valid); `body` itself
/// if no valid edit was found.
pub fn mutate(body: &Body, seed: u64) -> Body {
    let mut rng = Rng::with_seed(seed);
    for _ in 0..ATTEMPTS {
        let mut b = body.clone();
        let mut changed = false;
        for _ in 0..rng.u32(1..=3) {
            changed |= edit(&mut rng, &mut b);
        }
        if changed && validate(&b).is_ok() {
            return b;
        }
    }
    body.clone()
}

/// One random edit; whether it changed anything.
fn edit(rng: &mut Rng, b: &mut Body) -> bool {
    match rng.u32(0..8) {
        0 => swap_operands(rng, b),
        1 | 2 => change_constant(rng, b),
        3 => retarget(rng, b),
        4 => insert_dead_loop(rng, b),
        5 => delete_statement(rng, b),
        6 => change_operator(rng, b),
        _ => change_cast(rng, b),
    }
}

/// A random statement satisfying `pred`.
fn pick_statement<'b>(
    rng: &mut Rng,
    b: &'b mut Body,
    pred: impl Fn(&Rvalue) -> bool,
) -> Option<&'b mut Rvalue> {
    let mut all: Vec<&mut Rvalue> = (b.blocks.iter_mut())
        .flat_map(|block| block.statements.iter_mut())
        .map(|s| &mut s.rvalue)
        .filter(|rv| pred(rv))
        .collect();
    if all.is_empty() {
        return None;
    }
    let k = rng.usize(..all.len());
    Some(all.swap_remove(k))
}

fn swap_operands(rng: &mut Rng, b: &mut Body) -> bool {
    match pick_statement(rng, b, |rv| matches!(rv, Rvalue::BinaryOp(..))) {
        Some(Rvalue::BinaryOp(_, x, y)) => {
            std::mem::swap(x, y);
            true
        }
        _ => false,
    }
}

/// Every operand of an rvalue, mutably.
fn operands_mut(rv: &mut Rvalue) -> Vec<&mut Operand> {
    match rv {
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => vec![a],
        Rvalue::BinaryOp(_, a, c) => vec![a, c],
        Rvalue::AtomicRmw(_, _, a) => vec![a],
        Rvalue::AtomicCas(_, a, c) => vec![a, c],
        Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => args.iter_mut().collect(),
        Rvalue::Position(..)
        | Rvalue::Len(_)
        | Rvalue::RegionIndex(_)
        | Rvalue::RegionCoord(..)
        | Rvalue::RegionExtent(..)
        | Rvalue::RegionEnd(..) => Vec::new(),
    }
}

/// Replaces a constant operand (of a statement or a terminator) with another of its
/// type, often an extreme one, or a switch's case value.
fn change_constant(rng: &mut Rng, b: &mut Body) -> bool {
    let mut constants: Vec<&mut Operand> = Vec::new();
    let mut cases: Vec<&mut u128> = Vec::new();
    for block in &mut b.blocks {
        for s in &mut block.statements {
            constants.extend(operands_mut(&mut s.rvalue));
        }
        match &mut block.terminator.kind {
            TerminatorKind::SwitchInt { discr, targets, .. } => {
                constants.push(discr);
                cases.extend(targets.iter_mut().map(|(v, _)| v));
            }
            TerminatorKind::Assert { cond, .. } => constants.push(cond),
            _ => {}
        }
    }
    constants.retain(|op| matches!(op, Operand::Const(_)));
    if !cases.is_empty() && (constants.is_empty() || rng.u32(0..4) == 0) {
        let case = cases.swap_remove(rng.usize(..cases.len()));
        *case = rng.u128(..4) ^ (*case & !3);
        return true;
    }
    if constants.is_empty() {
        return false;
    }
    let k = rng.usize(..constants.len());
    let Operand::Const(c) = constants.swap_remove(k) else {
        unreachable!("only constants are kept")
    };
    let ty = c.ty();
    let bits = match rng.bool() {
        true => extreme_bits(rng, ty),
        false => random_bits(rng, ty),
    };
    *c = bits_const(ty, bits);
    true
}

/// Points one successor of a block somewhere else.
fn retarget(rng: &mut Rng, b: &mut Body) -> bool {
    let n = b.blocks.len() as u32;
    let block = rng.usize(..b.blocks.len());
    let to = BasicBlock(rng.u32(0..n));
    match &mut b.blocks[block].terminator.kind {
        TerminatorKind::Goto(t)
        | TerminatorKind::Assert { target: t, .. }
        | TerminatorKind::Barrier { target: t }
        | TerminatorKind::TileMma { target: t, .. }
        | TerminatorKind::TileFill { target: t, .. }
        | TerminatorKind::Call { target: t, .. } => *t = to,
        TerminatorKind::SwitchInt {
            targets, otherwise, ..
        } => match rng.usize(..=targets.len()) {
            i if i == targets.len() => *otherwise = to,
            i => targets[i].1 = to,
        },
        TerminatorKind::Return | TerminatorKind::Unreachable => return false,
    }
    true
}

/// Splits a block's terminator off behind `switchInt(const false)` whose other side is
/// an endless loop.
fn insert_dead_loop(rng: &mut Rng, b: &mut Body) -> bool {
    let block = rng.usize(..b.blocks.len());
    let live = BasicBlock(b.blocks.len() as u32);
    let dead = BasicBlock(live.0 + 1);
    let span = b.blocks[block].terminator.span;
    let kind = TerminatorKind::SwitchInt {
        discr: Operand::Const(Const::Bool(false)),
        targets: vec![(0, live)],
        otherwise: dead,
    };
    let old = std::mem::replace(&mut b.blocks[block].terminator, Terminator { kind, span });
    b.blocks.push(BlockData {
        statements: Vec::new(),
        terminator: old,
    });
    b.blocks.push(BlockData {
        statements: Vec::new(),
        terminator: Terminator {
            kind: TerminatorKind::Goto(dead),
            span,
        },
    });
    true
}

fn delete_statement(rng: &mut Rng, b: &mut Body) -> bool {
    let full: Vec<usize> = (0..b.blocks.len())
        .filter(|&i| !b.blocks[i].statements.is_empty())
        .collect();
    if full.is_empty() {
        return false;
    }
    let statements = &mut b.blocks[full[rng.usize(..full.len())]].statements;
    statements.remove(rng.usize(..statements.len()));
    true
}

/// Another binary operator of the same kind (arithmetic, comparison); validation
/// refuses the ones that do not fit the operand types.
fn change_operator(rng: &mut Rng, b: &mut Body) -> bool {
    match pick_statement(rng, b, |rv| matches!(rv, Rvalue::BinaryOp(..))) {
        Some(Rvalue::BinaryOp(op, ..)) => {
            let same_kind: Vec<BinOp> = (BinOp::ALL.into_iter())
                .filter(|o| o.is_comparison() == op.is_comparison())
                .collect();
            *op = same_kind[rng.usize(..same_kind.len())];
            true
        }
        _ => false,
    }
}

/// Casts a constant of another type instead, often an extreme one (validation refuses
/// a non-`bool` cast to `bool`).
fn change_cast(rng: &mut Rng, b: &mut Body) -> bool {
    match pick_statement(rng, b, |rv| matches!(rv, Rvalue::Cast(..))) {
        Some(Rvalue::Cast(from, to)) => {
            let ty = ScalarTy::ALL[rng.usize(..ScalarTy::ALL.len())];
            // A 16-bit float converts to and from `f32` and `f64` only.
            let ty = if (ty.is_half() || to.is_half()) && !crate::generator::casts(ty, *to) {
                ScalarTy::F32
            } else {
                ty
            };
            *from = Operand::Const(bits_const(ty, extreme_bits(rng, ty)));
            true
        }
        _ => false,
    }
}
