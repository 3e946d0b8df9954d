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
    fold(body, false);
    remove_unreachable(body);
}

/// Like [`simplify`], but every `assert` stays where it is, so that the body's panic
/// sites (numbered in block order) keep their numbers: an assert known to hold keeps its
/// block with a true condition, and an unreachable block is emptied rather than dropped
/// (an assert in it stays, with constant operands, jumping to its own block). Empty
/// blocks hold no values, so MLIR can cut them off safely.
pub fn simplify_keeping_sites(body: &mut Body) {
    let reached = fold(body, true);
    for (b, block) in body.blocks.iter_mut().enumerate() {
        if reached[b] {
            continue;
        }
        block.statements.clear();
        let zero = Operand::Const(Const::Int(0, ScalarTy::Usize));
        block.terminator.kind = match &block.terminator.kind {
            TerminatorKind::Assert { msg, .. } => TerminatorKind::Assert {
                cond: Operand::Const(Const::Bool(true)),
                msg: {
                    let mut msg = msg.clone();
                    msg.operands_mut().into_iter().for_each(|op| *op = zero);
                    msg
                },
                target: BasicBlock(b as u32),
            },
            _ => TerminatorKind::Unreachable,
        };
    }
}

/// Folds known constants into statements and terminators; returns which blocks are
/// reachable under constant branches. With `keep_asserts`, an assert known to hold gets a
/// constant condition instead of becoming a jump.
fn fold(body: &mut Body, keep_asserts: bool) -> Vec<bool> {
    let constants = propagate(body);
    let mut failing = Vec::new();
    for (b, state) in constants.iter().enumerate() {
        let Some(state) = state else { continue };
        let state = fold_statements(body, b, state.clone());
        let kind = &mut body.blocks[b].terminator.kind;
        match (taken(kind, &state), kind) {
            (Some(_), TerminatorKind::Assert { cond, .. }) if keep_asserts => {
                *cond = Operand::Const(Const::Bool(true));
            }
            (Some(target), kind) => *kind = TerminatorKind::Goto(target),
            (None, TerminatorKind::Assert { cond, .. }) => {
                if let Some(c) = value(cond, &state) {
                    *cond = Operand::Const(c);
                    failing.push(b);
                }
            }
            (None, _) => {}
        }
    }
    let mut reached: Vec<bool> = constants.iter().map(Option::is_some).collect();
    // An assert that always fails never reaches its target: it goes to a block of its
    // own that says so, so that MLIR finds no edge to cut off there either.
    if let Some(&first) = failing.first() {
        let span = body.blocks[first].terminator.span;
        let end = BasicBlock(body.blocks.len() as u32);
        body.blocks.push(BlockData {
            statements: Vec::new(),
            terminator: Terminator {
                kind: TerminatorKind::Unreachable,
                span,
            },
        });
        reached.push(true);
        for b in failing {
            if let TerminatorKind::Assert { target, .. } = &mut body.blocks[b].terminator.kind {
                *target = end;
            }
        }
    }
    reached
}

/// Replaces what `target` fixes: `subgroup_size()`; with one lane, the lane (0) and
/// every exchange (a lane's own value: shuffles and reductions return their operand, a
/// ballot its bit, `any`/`all` their operand).
pub fn specialize(body: &mut Body, target: crate::TargetFacts) {
    let width = target.subgroup_size;
    for s in body.blocks.iter_mut().flat_map(|b| b.statements.iter_mut()) {
        let Rvalue::Subgroup(op, args) = &s.rvalue else {
            continue;
        };
        let first = args.first().copied();
        s.rvalue = match (op, first) {
            (SubgroupOp::Size, _) => {
                Rvalue::Use(Operand::Const(Const::Int(width as i128, ScalarTy::Usize)))
            }
            _ if width != 1 => continue,
            (SubgroupOp::Lane, _) => Rvalue::Use(Operand::Const(Const::Int(0, ScalarTy::Usize))),
            (SubgroupOp::Ballot, Some(v)) => Rvalue::Cast(v, ScalarTy::U64),
            (_, Some(v)) => Rvalue::Use(v),
            (_, None) => continue,
        };
    }
}

/// What is known of the locals: the constant each holds on every path, for those whose
/// value is known. Persistent, so a block's state shares its structure with the states
/// made from it: cloning is free, a change copies one path, and two states are compared
/// without visiting what they share. (Dense per-block vectors made linking quadratic
/// in kernel size.)
#[derive(Clone, Default, PartialEq)]
struct State(imbl::OrdMap<u32, Const>);

impl State {
    fn get(&self, l: Local) -> Option<Const> {
        self.0.get(&l.0).copied()
    }

    fn set(&mut self, l: Local, c: Option<Const>) {
        match c {
            Some(c) => self.0.insert(l.0, c),
            None => self.0.remove(&l.0),
        };
    }

    /// What both states know alike: the constants they agree on.
    fn meet(&self, other: &State) -> State {
        let mut out = self.clone();
        for l in crate::persistent::lost_keys(&self.0, &other.0) {
            out.0.remove(&l);
        }
        out
    }
}

/// The known constants at the entry of each block reachable under constant branches
/// (`None`: not reachable).
fn propagate(body: &Body) -> Vec<Option<State>> {
    let n = body.blocks.len();
    let mut entry: Vec<Option<State>> = vec![None; n];
    if n == 0 {
        return entry;
    }
    // Arguments and uninitialised locals are unknown. Blocks are visited in reverse
    // postorder, so a join sees all its forward predecessors before it goes on.
    let rank = body.reverse_postorder_ranks();
    entry[0] = Some(State::default());
    let mut work = std::collections::BTreeSet::from([(0usize, 0usize)]);
    while let Some((_, b)) = work.pop_first() {
        let Some(state) = entry[b].clone() else {
            continue;
        };
        let block = &body.blocks[b];
        let out = after_statements(body, block, state);
        let successors: Vec<(BasicBlock, State)> = match taken(&block.terminator.kind, &out) {
            Some(t) => vec![(t, out)],
            // An assert that always fails has no way on.
            None if fails(&block.terminator.kind, &out) => Vec::new(),
            None => edges(body, &block.terminator.kind, out),
        };
        for (s, out) in successors {
            let s = s.index();
            let joined = match &entry[s] {
                None => out,
                Some(old) => old.meet(&out),
            };
            if entry[s].as_ref() != Some(&joined) {
                entry[s] = Some(joined);
                work.insert((rank[s], s));
            }
        }
    }
    entry
}

/// Whether `kind` is an assert whose condition is known to be false.
fn fails(kind: &TerminatorKind, state: &State) -> bool {
    matches!(kind, TerminatorKind::Assert { cond, .. } if value(cond, state) == Some(Const::Bool(false)))
}

/// The state along each edge of a terminator whose way is not known: a branch on a local
/// tells its value along the edge it takes (the case's value; for a `bool`, also the
/// other one), and an `assert` that its condition held. MLIR propagates these facts into
/// the blocks a branch leads to, so they must be folded here too.
fn edges(body: &Body, kind: &TerminatorKind, out: State) -> Vec<(BasicBlock, State)> {
    let local = |op: &Operand| match op {
        Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => Some(p.local),
        _ => None,
    };
    let with = |l: Option<Local>, c: Option<Const>| {
        let mut state = out.clone();
        if let (Some(l), Some(c)) = (l, c) {
            state.set(l, Some(c));
        }
        state
    };
    match kind {
        TerminatorKind::SwitchInt {
            discr,
            targets,
            otherwise,
        } => {
            let l = local(discr);
            let ty = l.and_then(|l| body.locals.get(l.index())?.ty.scalar());
            let case = |v: u128| ty.map(|t| crate::interp::bits_const(t, v as u64));
            let mut result: Vec<(BasicBlock, State)> = targets
                .iter()
                .map(|(v, t)| (*t, with(l, case(*v))))
                .collect();
            // A `bool` switch with one case: the other edge has the other value.
            let rest = match (ty, &targets[..]) {
                (Some(ScalarTy::Bool), [(v, _)]) => Some(Const::Bool(*v == 0)),
                _ => None,
            };
            result.push((*otherwise, with(l, rest)));
            result
        }
        TerminatorKind::Assert { cond, target, .. } => {
            vec![(*target, with(local(cond), Some(Const::Bool(true))))]
        }
        other => other
            .successors()
            .into_iter()
            .map(|t| (t, out.clone()))
            .collect(),
    }
}

/// Runs block `b`'s statements from `state`, replacing each computation whose result is
/// known with that constant; returns the state after them.
fn fold_statements(body: &mut Body, b: usize, mut state: State) -> State {
    for i in 0..body.blocks[b].statements.len() {
        substitute(&mut body.blocks[b].statements[i].rvalue, &state);
        let s = &body.blocks[b].statements[i];
        if s.place.index.is_some() {
            continue;
        }
        let folded = fold_rvalue(body, &s.rvalue, &state);
        let local = s.place.local;
        let pure = matches!(
            s.rvalue,
            Rvalue::Use(_)
                | Rvalue::BinaryOp(..)
                | Rvalue::UnaryOp(..)
                | Rvalue::Cast(..)
                | Rvalue::Intrinsic(..)
                | Rvalue::RegionCoord(..)
                | Rvalue::RegionExtent(..)
                | Rvalue::RegionEnd(..)
                | Rvalue::Len(_)
        );
        if let Some(c) = folded
            && pure
        {
            body.blocks[b].statements[i].rvalue = Rvalue::Use(Operand::Const(c));
        }
        state.set(local, folded);
    }
    match &mut body.blocks[b].terminator.kind {
        TerminatorKind::Call { dest, args, .. } => {
            args.iter_mut().for_each(|a| constant(a, &state));
            state.set(*dest, None);
        }
        TerminatorKind::Assert { msg, .. } => {
            msg.operands_mut()
                .into_iter()
                .for_each(|op| constant(op, &state));
        }
        TerminatorKind::TileFill { origin, .. } => {
            origin.iter_mut().for_each(|op| constant(op, &state));
        }
        _ => {}
    }
    state
}

/// Replaces each operand of `rv` that reads a local of known value with that value, so
/// that what the folding knows is in the body for the verifier and MLIR to see (a
/// divisor known from a branch on it, say). Element indices stay locals.
fn substitute(rv: &mut Rvalue, state: &State) {
    match rv {
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => constant(a, state),
        Rvalue::BinaryOp(_, a, b) => {
            constant(a, state);
            constant(b, state);
        }
        Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => {
            args.iter_mut().for_each(|a| constant(a, state));
        }
        Rvalue::AtomicRmw(_, _, v) => constant(v, state),
        Rvalue::AtomicCas(_, a, b) => {
            constant(a, state);
            constant(b, state);
        }
        Rvalue::Position(..)
        | Rvalue::Len(_)
        | Rvalue::RegionIndex(_)
        | Rvalue::RegionCoord(..)
        | Rvalue::RegionExtent(..)
        | Rvalue::RegionEnd(..) => {}
    }
}

fn constant(op: &mut Operand, state: &State) {
    if let Some(c) = value(op, state) {
        *op = Operand::Const(c);
    }
}

fn after_statements(body: &Body, block: &BlockData, mut state: State) -> State {
    for s in &block.statements {
        if s.place.index.is_some() {
            continue;
        }
        let folded = fold_rvalue(body, &s.rvalue, &state);
        state.set(s.place.local, folded);
    }
    // A call's destination is unknown afterwards.
    if let TerminatorKind::Call { dest, .. } = &block.terminator.kind {
        state.set(*dest, None);
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
        Const::Float(..) | Const::Item(..) => None,
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
        Operand::Copy(p) | Operand::Move(p) if p.index.is_none() => state.get(p.local),
        _ => None,
    }
}

/// The value of `rv` when it is known: a computation from constants (evaluated with the
/// interpreter's semantics, [`crate::interp::evaluate`]), an identity MLIR folds with an
/// unknown operand (`x == x`, `x - x`, `x & 0`, `x < 0` unsigned, ...), a coordinate or
/// extent a one-dimensional region fixes (row 0 of 1), or a static shared array's length.
fn fold_rvalue(body: &Body, rv: &Rvalue, state: &State) -> Option<Const> {
    if let Some(c) = crate::interp::evaluate(rv, &|op| value(op, state)) {
        return Some(c);
    }
    // Past a region's rank, every thread is at coordinate 0 of an extent of 1.
    let beyond_rank = |l: &Local, d: &u8| matches!(body.locals.get(l.index()).map(|d| d.ty), Some(Ty::Region(_, s)) if *d >= s.rank());
    match rv {
        Rvalue::BinaryOp(op, a, b) => identity(
            *op,
            operand_ty(body, a)?,
            a,
            b,
            value(a, state),
            value(b, state),
        ),
        Rvalue::RegionCoord(l, d) if beyond_rank(l, d) => Some(Const::Int(0, ScalarTy::Usize)),
        // A static shared array's length is its declared one.
        Rvalue::Len(l) => match body.locals.get(l.index()).map(|d| d.ty) {
            Some(Ty::Shared(_, Some(Param::Value(n)))) => {
                Some(Const::Int(n as i128, ScalarTy::Usize))
            }
            _ => None,
        },
        Rvalue::RegionExtent(l, d) | Rvalue::RegionEnd(l, d) if beyond_rank(l, d) => {
            Some(Const::Int(1, ScalarTy::Usize))
        }
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
        // All ones: -1 for signed types, the largest value for unsigned ones.
        BitOr if ones(x) || ones(y) => int(if t.is_signed() { -1 } else { mask(t) as i128 }),
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

/// Drops the blocks no path from the entry reaches and renumbers the others.
fn remove_unreachable(body: &mut Body) {
    let n = body.blocks.len();
    let reached: Vec<bool> = body
        .reverse_postorder_ranks()
        .iter()
        .map(|r| *r != usize::MAX)
        .collect();
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
        | TerminatorKind::Barrier { target }
        | TerminatorKind::TileMma { target, .. }
        | TerminatorKind::TileFill { target, .. } => *target = map(*target),
        TerminatorKind::Return | TerminatorKind::Unreachable => {}
    }
}
