//! Control-flow clean-up before lowering: locals whose value is a known constant are
//! assigned that constant, branches whose condition is known become jumps, and blocks no
//! thread can reach are dropped.
//!
//! Why here and not in MLIR: upstream canonicalization folds constant branches itself,
//! and then rewrites the blocks it cut off before erasing them. Blocks that only reach
//! each other hold values that refer to themselves, which its patterns do not expect
//! (seen as heap corruption or folding forever). So MLIR must never be able to cut a
//! block off: every branch it could fold is folded here first, by a conditional
//! constant propagation at least as strong as its folders on branch conditions.

use crate::ir::*;

/// Folds constant branches and removes unreachable blocks, renumbering the rest in
/// their original order.
pub fn simplify(body: &mut Body) {
    let constants = propagate(body);
    for (b, state) in constants.iter().enumerate() {
        let Some(state) = state else { continue };
        let state = fold_statements(body, b, state.clone());
        let kind = &mut body.blocks[b].terminator.kind;
        if let Some(target) = taken(kind, &state) {
            *kind = TerminatorKind::Goto(target);
        } else if let TerminatorKind::Assert { cond, .. } = kind
            && let Some(c) = value(cond, &state)
        {
            // An assert that always fails: its target is never reached.
            *cond = Operand::Const(c);
        }
    }
    remove_unreachable(body);
}

/// What is known of each local: `Some(c)` when it holds `c` on every path.
type State = Vec<Option<Const>>;

/// The known constants at the entry of each block reachable under constant branches
/// (`None`: not reachable).
fn propagate(body: &Body) -> Vec<Option<State>> {
    let n = body.blocks.len();
    let mut entry: Vec<Option<State>> = vec![None; n];
    if n == 0 {
        return entry;
    }
    // Arguments and uninitialised locals are unknown.
    entry[0] = Some(vec![None; body.locals.len()]);
    let mut work = vec![0usize];
    while let Some(b) = work.pop() {
        let Some(state) = entry[b].clone() else {
            continue;
        };
        let block = &body.blocks[b];
        let out = after_statements(body, block, state);
        let successors = match taken(&block.terminator.kind, &out) {
            Some(t) => vec![t],
            None => block.terminator.kind.successors(),
        };
        for s in successors {
            let s = s.index();
            let joined = match &entry[s] {
                None => out.clone(),
                Some(old) => old
                    .iter()
                    .zip(&out)
                    .map(|(a, b)| if a == b { *a } else { None })
                    .collect(),
            };
            if entry[s].as_ref() != Some(&joined) {
                entry[s] = Some(joined);
                work.push(s);
            }
        }
    }
    entry
}

/// Runs block `b`'s statements from `state`, replacing each computation whose result is
/// known with that constant; returns the state after them.
fn fold_statements(body: &mut Body, b: usize, mut state: State) -> State {
    for i in 0..body.blocks[b].statements.len() {
        let s = &body.blocks[b].statements[i];
        if s.place.index.is_some() {
            continue;
        }
        let folded = fold(body, &s.rvalue, &state);
        let local = s.place.local.index();
        let pure = matches!(
            s.rvalue,
            Rvalue::Use(_) | Rvalue::BinaryOp(..) | Rvalue::UnaryOp(..) | Rvalue::Cast(..)
        );
        if let Some(c) = folded
            && pure
        {
            body.blocks[b].statements[i].rvalue = Rvalue::Use(Operand::Const(c));
        }
        state[local] = folded;
    }
    if let TerminatorKind::Call { dest, .. } = &body.blocks[b].terminator.kind {
        state[dest.index()] = None;
    }
    state
}

fn after_statements(body: &Body, block: &BlockData, mut state: State) -> State {
    for s in &block.statements {
        if s.place.index.is_some() {
            continue;
        }
        state[s.place.local.index()] = fold(body, &s.rvalue, &state);
    }
    // A call's destination is unknown afterwards.
    if let TerminatorKind::Call { dest, .. } = &block.terminator.kind {
        state[dest.index()] = None;
    }
    state
}

/// The only successor a terminator can take when its condition is known.
fn taken(kind: &TerminatorKind, state: &State) -> Option<BasicBlock> {
    match kind {
        TerminatorKind::SwitchInt {
            discr,
            targets,
            otherwise,
        } => {
            let value = bits(value(discr, state)?)?;
            Some(
                targets
                    .iter()
                    .find(|(v, _)| *v == value)
                    .map_or(*otherwise, |(_, b)| *b),
            )
        }
        TerminatorKind::Assert { cond, target, .. } => {
            (value(cond, state)? == Const::Bool(true)).then_some(*target)
        }
        _ => None,
    }
}

/// A switch value's bits, as `switchInt` compares them: the integer's two's complement
/// in its width.
fn bits(c: Const) -> Option<u128> {
    match c {
        Const::Bool(b) => Some(b as u128),
        Const::Int(v, t) => Some((v as u128) & mask(t)),
        Const::Float(..) => None,
    }
}

fn mask(t: ScalarTy) -> u128 {
    if t.bits() >= 128 {
        u128::MAX
    } else {
        (1u128 << t.bits()) - 1
    }
}

fn value(op: &Operand, state: &State) -> Option<Const> {
    match op {
        Operand::Const(c) => Some(*c),
        Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => state[p.local.index()],
        _ => None,
    }
}

/// Sign- or zero-extends `v` from the width of `t`, as MIR integer constants are stored.
fn normalize(v: i128, t: ScalarTy) -> i128 {
    let bits = t.bits();
    let m = (v as u128) & mask(t);
    if t.is_signed() && bits < 128 && m >> (bits - 1) & 1 == 1 {
        (m | !mask(t)) as i128
    } else {
        m as i128
    }
}

/// The value of `rv` when it is a constant: integer and `bool` arithmetic, comparisons
/// and casts between them, and the identities MLIR folds with an unknown operand
/// (`x == x`, `x - x`, `x & 0`, `x < 0` unsigned, ...). Floats and memory are unknown.
fn fold(body: &Body, rv: &Rvalue, state: &State) -> Option<Const> {
    match rv {
        Rvalue::Use(a) => value(a, state),
        Rvalue::UnaryOp(op, a) => match (op, value(a, state)?) {
            (UnOp::Not, Const::Bool(b)) => Some(Const::Bool(!b)),
            (UnOp::Not, Const::Int(v, t)) => Some(Const::Int(normalize(!v, t), t)),
            (UnOp::Neg, Const::Int(v, t)) => Some(Const::Int(normalize(v.wrapping_neg(), t), t)),
            _ => None,
        },
        Rvalue::Cast(a, to) => match (value(a, state)?, *to) {
            (Const::Bool(b), t) if t.is_integer() => Some(Const::Int(b as i128, t)),
            (Const::Int(v, _), t) if t.is_integer() => Some(Const::Int(normalize(v, t), t)),
            (c @ Const::Bool(_), ScalarTy::Bool) => Some(c),
            _ => None,
        },
        Rvalue::BinaryOp(op, a, b) => match (value(a, state), value(b, state)) {
            (Some(x), Some(y)) => binary(*op, x, y),
            (x, y) => identity(*op, operand_ty(body, a)?, a, b, x, y),
        },
        _ => None,
    }
}

fn operand_ty(body: &Body, op: &Operand) -> Option<ScalarTy> {
    match op {
        Operand::Const(c) => Some(c.ty()),
        Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => {
            body.locals.get(p.local.index())?.ty.scalar()
        }
        _ => None,
    }
}

/// `a OP b` of type `t` when at most one side is known.
fn identity(
    op: BinOp,
    t: ScalarTy,
    a: &Operand,
    b: &Operand,
    x: Option<Const>,
    y: Option<Const>,
) -> Option<Const> {
    use BinOp::*;
    if t.is_float() {
        return None;
    }
    let zero = |c: Option<Const>| matches!(c, Some(Const::Int(0, _)) | Some(Const::Bool(false)));
    let ones = |c: Option<Const>| match c {
        Some(Const::Int(v, t)) => (v as u128) & mask(t) == mask(t),
        Some(Const::Bool(b)) => b,
        _ => false,
    };
    let int = |v: i128| {
        Some(if t == ScalarTy::Bool {
            Const::Bool(v != 0)
        } else {
            Const::Int(v, t)
        })
    };
    let unsigned = !t.is_signed();
    if same_local(a, b) {
        return match op {
            Eq | Le | Ge => Some(Const::Bool(true)),
            Ne | Lt | Gt => Some(Const::Bool(false)),
            Sub | BitXor => int(0),
            _ => None,
        };
    }
    match op {
        BitAnd | Mul if zero(x) || zero(y) => int(0),
        BitOr if ones(x) || ones(y) => int(-1).map(|c| match c {
            Const::Int(_, t) => Const::Int(normalize(-1, t), t),
            other => other,
        }),
        // Unsigned comparisons against zero, the smallest value.
        Lt if unsigned && zero(y) => Some(Const::Bool(false)),
        Ge if unsigned && zero(y) => Some(Const::Bool(true)),
        Gt if unsigned && zero(x) => Some(Const::Bool(false)),
        Le if unsigned && zero(x) => Some(Const::Bool(true)),
        _ => None,
    }
}

fn same_local(a: &Operand, b: &Operand) -> bool {
    match (a, b) {
        (Operand::Copy(p) | Operand::Move(p), Operand::Copy(q) | Operand::Move(q)) => {
            p.index.is_none() && q.index.is_none() && p.local == q.local
        }
        _ => false,
    }
}

fn binary(op: BinOp, x: Const, y: Const) -> Option<Const> {
    use BinOp::*;
    match (x, y) {
        (Const::Bool(a), Const::Bool(b)) => Some(Const::Bool(match op {
            BitAnd => a & b,
            BitOr => a | b,
            BitXor => a ^ b,
            Eq => a == b,
            Ne => a != b,
            Lt => !a & b,
            Le => a <= b,
            Gt => a & !b,
            Ge => a >= b,
            _ => return None,
        })),
        (Const::Int(a, t), Const::Int(b, u)) if t == u => {
            let (ua, ub) = ((a as u128) & mask(t), (b as u128) & mask(t));
            let cmp = |signed: std::cmp::Ordering, unsigned: std::cmp::Ordering| {
                if t.is_signed() { signed } else { unsigned }
            };
            let order = cmp(a.cmp(&b), ua.cmp(&ub));
            let int = |v: i128| Some(Const::Int(normalize(v, t), t));
            match op {
                Add => int(a.wrapping_add(b)),
                Sub => int(a.wrapping_sub(b)),
                Mul => int(a.wrapping_mul(b)),
                BitAnd => int(a & b),
                BitOr => int(a | b),
                BitXor => int(a ^ b),
                Eq => Some(Const::Bool(order.is_eq())),
                Ne => Some(Const::Bool(!order.is_eq())),
                Lt => Some(Const::Bool(order.is_lt())),
                Le => Some(Const::Bool(order.is_le())),
                Gt => Some(Const::Bool(order.is_gt())),
                Ge => Some(Const::Bool(order.is_ge())),
                // Division, remainder and shifts are left to run time.
                _ => None,
            }
        }
        _ => None,
    }
}

/// Drops the blocks no path from the entry reaches and renumbers the others.
fn remove_unreachable(body: &mut Body) {
    let n = body.blocks.len();
    let mut reached = vec![false; n];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if b >= n || reached[b] {
            continue;
        }
        reached[b] = true;
        stack.extend(
            body.blocks[b]
                .terminator
                .kind
                .successors()
                .iter()
                .map(|s| s.index()),
        );
    }
    if reached.iter().all(|r| *r) {
        return;
    }
    let mut renumber = vec![None; n];
    let mut next = 0u32;
    for (b, r) in reached.iter().enumerate() {
        if *r {
            renumber[b] = Some(BasicBlock(next));
            next += 1;
        }
    }
    let map =
        |b: BasicBlock| renumber[b.index()].expect("successors of reached blocks are reached");
    let blocks = std::mem::take(&mut body.blocks);
    for (b, mut block) in blocks.into_iter().enumerate() {
        if !reached[b] {
            continue;
        }
        retarget(&mut block.terminator.kind, &map);
        body.blocks.push(block);
    }
}

fn retarget(kind: &mut TerminatorKind, map: &impl Fn(BasicBlock) -> BasicBlock) {
    match kind {
        TerminatorKind::Goto(b) => *b = map(*b),
        TerminatorKind::SwitchInt {
            targets, otherwise, ..
        } => {
            for (_, b) in targets.iter_mut() {
                *b = map(*b);
            }
            *otherwise = map(*otherwise);
        }
        TerminatorKind::Assert { target, .. }
        | TerminatorKind::Call { target, .. }
        | TerminatorKind::Barrier { target } => *target = map(*target),
        TerminatorKind::Return | TerminatorKind::Unreachable => {}
    }
}
