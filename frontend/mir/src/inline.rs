//! Linking `#[offload_device]` functions into a kernel by inlining every call.
//!
//! Device functions take and return scalars, so inlining is plain splicing: the callee's
//! locals and blocks are appended to the caller's, its arguments are assigned at the call,
//! and each of its `return`s assigns the call's destination and jumps to the call's
//! target. A generic device function has one body per instance; the call's argument types
//! pick the instance. Recursion (direct or through other functions) cannot be inlined and
//! is an error naming the cycle.

use crate::ir::*;
use std::collections::HashMap;

/// Why a call could not be inlined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InlineError {
    /// Device functions that call each other in a cycle, named in call order.
    #[error("device functions cannot recurse: {}", .0.join(" → "))]
    Recursion(Vec<String>),
    /// A call of a function that is not among the kernel's device functions.
    #[error("`{0}` is not an `#[offload_device]` function this kernel can see")]
    UnknownFunction(String),
    /// No instance of the function takes the call's argument types (`?`: unknown).
    #[error("no instance of `{func}` takes ({})", .args.join(", "))]
    NoInstance { func: String, args: Vec<String> },
    /// The function returns one type and the call's destination is another.
    #[error("`{func}` returns `{returns}`, but its result is used as `{used_as}`")]
    ReturnType {
        func: String,
        returns: Ty,
        used_as: Ty,
    },
}

/// The device functions a kernel may call, by their Rust name, each with the bodies of
/// its instances.
pub type DeviceFunctions<'a> = HashMap<&'a str, Vec<&'a Body>>;

/// Returns `kernel` with every call inlined.
pub fn inline_calls(kernel: &Body, device: &DeviceFunctions<'_>) -> Result<Body, InlineError> {
    check_recursion(kernel, device)?;
    let mut body = kernel.clone();
    while let Some(block) = body
        .blocks
        .iter()
        .position(|b| matches!(b.terminator.kind, TerminatorKind::Call { .. }))
    {
        splice(&mut body, block, device)?;
    }
    Ok(body)
}

fn callees(body: &Body) -> impl Iterator<Item = &str> {
    body.blocks.iter().filter_map(|b| match &b.terminator.kind {
        TerminatorKind::Call { func, .. } => Some(func.as_str()),
        _ => None,
    })
}

/// Walks the call graph from the kernel; a function met again on the current path is a
/// cycle.
fn check_recursion(kernel: &Body, device: &DeviceFunctions<'_>) -> Result<(), InlineError> {
    fn visit<'a>(
        name: &'a str,
        device: &DeviceFunctions<'a>,
        path: &mut Vec<&'a str>,
    ) -> Result<(), InlineError> {
        if let Some(at) = path.iter().position(|p| *p == name) {
            let mut cycle: Vec<String> = path[at..].iter().map(|p| p.to_string()).collect();
            cycle.push(name.to_string());
            return Err(InlineError::Recursion(cycle));
        }
        let Some(bodies) = device.get(name) else {
            return Ok(());
        };
        path.push(name);
        for body in bodies {
            for callee in callees(body) {
                visit(callee, device, path)?;
            }
        }
        path.pop();
        Ok(())
    }
    for callee in callees(kernel) {
        visit(callee, device, &mut Vec::new())?;
    }
    Ok(())
}

fn operand_ty(body: &Body, op: &Operand) -> Option<ScalarTy> {
    match op {
        Operand::Const(c) => Some(c.ty()),
        Operand::Copy(p) | Operand::Move(p) => {
            let ty = body.locals.get(p.local.index())?.ty;
            if p.index.is_some() {
                ty.element()
            } else {
                ty.scalar()
            }
        }
    }
}

/// Inlines the call that ends `block`: the callee's instance for the call's argument
/// types is appended to `body`, renumbered, and the call becomes a jump into it.
fn splice(body: &mut Body, block: usize, device: &DeviceFunctions<'_>) -> Result<(), InlineError> {
    let call = body.blocks[block].terminator.clone();
    let TerminatorKind::Call {
        func,
        args,
        dest,
        target,
    } = call.kind
    else {
        unreachable!("the caller found a call here")
    };
    let callee = instance(body, &func, &args, dest, device)?;

    let local_base = body.locals.len() as u32;
    let block_base = body.blocks.len() as u32;
    let local = |l: Local| Local(l.0 + local_base);
    let bb = |b: BasicBlock| BasicBlock(b.0 + block_base);
    body.locals.extend(callee.locals.iter().map(|d| LocalDecl {
        mutable: true,
        ..d.clone()
    }));

    // Panics inside the callee are reported at the call, naming where in the callee.
    let here = call.span;
    let located = |msg: &AssertMessage, at: Span| match msg {
        AssertMessage::Panic(text) => {
            AssertMessage::Panic(format!("{text} (in `{func}` at {}:{at})", callee.file))
        }
        other => other.clone(),
    };
    for data in &callee.blocks {
        let mut statements: Vec<Statement> = data
            .statements
            .iter()
            .map(|s| Statement {
                place: remap_place(s.place, &local),
                rvalue: remap_rvalue(&s.rvalue, &local),
                span: here,
                raw: s.raw,
            })
            .collect();
        // A `return` assigns the call's destination, then goes on after the call.
        if let TerminatorKind::Return = data.terminator.kind {
            statements.push(Statement {
                place: Place::local(dest),
                rvalue: Rvalue::Use(Operand::Copy(Place::local(local(Local::RETURN)))),
                span: here,
                raw: false,
            });
        }
        let kind = match remap_terminator(&data.terminator.kind, &local, &bb, target) {
            TerminatorKind::Assert { cond, msg, target } => TerminatorKind::Assert {
                cond,
                msg: located(&msg, data.terminator.span),
                target,
            },
            other => other,
        };
        body.blocks.push(BlockData {
            statements,
            terminator: Terminator { kind, span: here },
        });
    }
    // At the call: pass the arguments, then enter the callee.
    let caller = &mut body.blocks[block];
    for (i, arg) in args.into_iter().enumerate() {
        caller.statements.push(Statement {
            place: Place::local(local(Local(i as u32 + 1))),
            rvalue: Rvalue::Use(arg),
            span: here,
            raw: false,
        });
    }
    caller.terminator = Terminator {
        kind: TerminatorKind::Goto(bb(BasicBlock::ENTRY)),
        span: here,
    };
    Ok(())
}

/// The instance of device function `func` that a call with `args` into `dest` in `body`
/// picks: the one whose parameters have the arguments' types and whose return type is
/// the destination's.
fn instance<'a>(
    body: &Body,
    func: &str,
    args: &[Operand],
    dest: Local,
    device: &DeviceFunctions<'a>,
) -> Result<&'a Body, InlineError> {
    let arg_types: Vec<Option<ScalarTy>> = args.iter().map(|a| operand_ty(body, a)).collect();
    let shown: Vec<String> = arg_types
        .iter()
        .map(|t| t.map_or("?".to_string(), |t| t.to_string()))
        .collect();
    let Some(instances) = device.get(func) else {
        return Err(InlineError::UnknownFunction(func.to_string()));
    };
    let callee = instances
        .iter()
        .find(|c| {
            c.arg_count == args.len()
                && c.args()
                    .zip(&arg_types)
                    .all(|((_, d), t)| d.ty.scalar() == *t)
        })
        .ok_or_else(|| InlineError::NoInstance {
            func: func.to_string(),
            args: shown,
        })?;
    let dest_ty = body.locals[dest.index()].ty;
    if callee.locals[0].ty != dest_ty {
        return Err(InlineError::ReturnType {
            func: func.to_string(),
            returns: callee.locals[0].ty,
            used_as: dest_ty,
        });
    }
    Ok(callee)
}

/// A callee's terminator with its locals and blocks renumbered, a `return` becoming a
/// jump to `returns_to`.
fn remap_terminator(
    kind: &TerminatorKind,
    local: &impl Fn(Local) -> Local,
    bb: &impl Fn(BasicBlock) -> BasicBlock,
    returns_to: BasicBlock,
) -> TerminatorKind {
    match kind {
        TerminatorKind::Return => TerminatorKind::Goto(returns_to),
        TerminatorKind::Goto(b) => TerminatorKind::Goto(bb(*b)),
        TerminatorKind::Unreachable => TerminatorKind::Unreachable,
        TerminatorKind::Barrier { target } => TerminatorKind::Barrier {
            target: bb(*target),
        },
        TerminatorKind::TileFill {
            tile,
            src,
            origin,
            shape,
            target,
        } => TerminatorKind::TileFill {
            tile: local(*tile),
            src: local(*src),
            origin: origin.map(|op| remap_operand(&op, local)),
            shape: *shape,
            target: bb(*target),
        },
        TerminatorKind::TileMma {
            acc,
            a,
            b,
            shape,
            pitches,
            target,
        } => TerminatorKind::TileMma {
            acc: local(*acc),
            a: local(*a),
            b: local(*b),
            shape: *shape,
            pitches: *pitches,
            target: bb(*target),
        },
        TerminatorKind::SwitchInt {
            discr,
            targets,
            otherwise,
        } => TerminatorKind::SwitchInt {
            discr: remap_operand(discr, local),
            targets: targets.iter().map(|(v, b)| (*v, bb(*b))).collect(),
            otherwise: bb(*otherwise),
        },
        TerminatorKind::Assert { cond, msg, target } => TerminatorKind::Assert {
            cond: remap_operand(cond, local),
            msg: remap_message(msg, local),
            target: bb(*target),
        },
        TerminatorKind::Call {
            func,
            args,
            dest,
            target,
        } => TerminatorKind::Call {
            func: func.clone(),
            args: args.iter().map(|a| remap_operand(a, local)).collect(),
            dest: local(*dest),
            target: bb(*target),
        },
    }
}

fn remap_place(p: Place, local: &impl Fn(Local) -> Local) -> Place {
    Place {
        local: local(p.local),
        index: p.index.map(local),
    }
}

fn remap_operand(op: &Operand, local: &impl Fn(Local) -> Local) -> Operand {
    match op {
        Operand::Copy(p) => Operand::Copy(remap_place(*p, local)),
        Operand::Move(p) => Operand::Move(remap_place(*p, local)),
        Operand::Const(c) => Operand::Const(*c),
    }
}

fn remap_message(msg: &AssertMessage, local: &impl Fn(Local) -> Local) -> AssertMessage {
    let mut msg = msg.clone();
    for op in msg.operands_mut() {
        *op = remap_operand(op, local);
    }
    msg
}

fn remap_rvalue(rv: &Rvalue, local: &impl Fn(Local) -> Local) -> Rvalue {
    let op = |o: &Operand| remap_operand(o, local);
    match rv {
        Rvalue::Use(a) => Rvalue::Use(op(a)),
        Rvalue::AtomicRmw(o, p, v) => Rvalue::AtomicRmw(*o, remap_place(*p, local), op(v)),
        Rvalue::AtomicCas(p, c, n) => Rvalue::AtomicCas(remap_place(*p, local), op(c), op(n)),
        Rvalue::Position(p, d) => Rvalue::Position(*p, *d),
        Rvalue::Intrinsic(i, args) => Rvalue::Intrinsic(*i, args.iter().map(op).collect()),
        Rvalue::Subgroup(s, args) => Rvalue::Subgroup(*s, args.iter().map(op).collect()),
        Rvalue::BinaryOp(o, a, b) => Rvalue::BinaryOp(*o, op(a), op(b)),
        Rvalue::UnaryOp(o, a) => Rvalue::UnaryOp(*o, op(a)),
        Rvalue::Cast(a, t) => Rvalue::Cast(op(a), *t),
        Rvalue::Len(l) => Rvalue::Len(local(*l)),
        Rvalue::RegionIndex(l) => Rvalue::RegionIndex(local(*l)),
        Rvalue::RegionCoord(l, d) => Rvalue::RegionCoord(local(*l), *d),
        Rvalue::RegionExtent(l, d) => Rvalue::RegionExtent(local(*l), *d),
        Rvalue::RegionEnd(l, d) => Rvalue::RegionEnd(local(*l), *d),
    }
}
