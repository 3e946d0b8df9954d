//! The text form: `Display` for bodies and everything in them.

use crate::ir::*;
use std::fmt::{self, Write};

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{}]", self.local, i),
            None => write!(f, "{}", self.local),
        }
    }
}

impl fmt::Display for Const {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Const::Bool(b) => write!(f, "const {b}"),
            Const::Int(v, t) => write!(f, "const {v}{t}"),
            // `{:?}` prints the shortest text that reads back to the same value.
            Const::Float(v, ScalarTy::F32) => write!(f, "const {:?}f32", v as f32),
            Const::Float(v, t) => write!(f, "const {v:?}{t}"),
            Const::Item(k, t) => {
                f.write_str("const ")?;
                item(f, k, Some(t))
            }
        }
    }
}

/// Where an outside `const` item's value goes ([`Const::Item`], [`Param::Item`]): a mark
/// that [`pieces`] finds. It opens and closes with U+0001, which no other MIR text holds
/// (strings, file names among them, are printed escaped), so no text can forge one.
pub(crate) fn item(f: &mut impl Write, k: u32, ty: Option<ScalarTy>) -> fmt::Result {
    match ty {
        Some(t) => write!(f, "{ITEM_MARK}item {k} {t}{ITEM_MARK}"),
        None => write!(f, "{ITEM_MARK}item {k}{ITEM_MARK}"),
    }
}

/// Opens and closes an item's mark.
const ITEM_MARK: char = '\u{1}';

/// A body's text ([`Body`]'s `Display`) cut where the values of outside `const` items go.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Text(String),
    /// The value of the `k`-th item: printed as a constant of `ty` (a [`Const::Item`]:
    /// `64usize`, a float by its bits), or as a bare number (a [`Param::Item`]).
    Item {
        k: u32,
        ty: Option<ScalarTy>,
    },
}

/// The text of `body` as [`Piece`]s: the macro joins them with rustc's values of the items
/// into the MIR text of the kernel's descriptor.
pub fn pieces(body: &Body) -> Vec<Piece> {
    let text = body.to_string();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    let open = format!("{ITEM_MARK}item ");
    while let Some(at) = rest.find(&open) {
        let body = at + open.len();
        let end = body
            + rest[body..]
                .find(ITEM_MARK)
                .expect("an item mark is closed");
        let mut words = rest[body..end].split(' ');
        let k = words.next().and_then(|w| w.parse().ok());
        let ty = words.next().map(ScalarTy::from_name);
        let k = k.expect("an item mark holds its number");
        let ty = ty.map(|t| t.expect("an item mark holds a scalar type"));
        out.push(Piece::Text(rest[..at].to_string()));
        out.push(Piece::Item { k, ty });
        rest = &rest[end + 1..];
    }
    out.push(Piece::Text(rest.to_string()));
    out
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Copy(p) => write!(f, "copy {p}"),
            Operand::Move(p) => write!(f, "move {p}"),
            Operand::Const(c) => write!(f, "{c}"),
        }
    }
}

impl fmt::Display for Rvalue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rvalue::Use(op) => write!(f, "{op}"),
            Rvalue::AtomicRmw(op, p, v) => write!(f, "AtomicRmw({}, {p}, {v})", op.name()),
            Rvalue::AtomicCas(p, current, new) => write!(f, "AtomicCas({p}, {current}, {new})"),
            Rvalue::Position(p, d) => write!(f, "{}({d})", p.name()),
            Rvalue::Intrinsic(i, args) => write_call(f, i.name(), args),
            Rvalue::Subgroup(op, args) => write_call(f, op.name(), args),
            Rvalue::BinaryOp(op, a, b) => write!(f, "{}({a}, {b})", op.name()),
            Rvalue::UnaryOp(op, a) => write!(f, "{}({a})", op.name()),
            Rvalue::Cast(a, t) => write!(f, "{a} as {t}"),
            Rvalue::Len(l) => write!(f, "Len({l})"),
            Rvalue::RegionIndex(l) => write!(f, "RegionIndex({l})"),
            Rvalue::RegionCoord(l, d) => write!(f, "RegionCoord({l}, {d})"),
            Rvalue::RegionExtent(l, d) => write!(f, "RegionExtent({l}, {d})"),
            Rvalue::RegionEnd(l, d) => write!(f, "RegionEnd({l}, {d})"),
        }
    }
}

/// `name(a, b, ...)`.
fn write_call(f: &mut fmt::Formatter<'_>, name: &str, args: &[Operand]) -> fmt::Result {
    write!(f, "{name}(")?;
    for (n, a) in args.iter().enumerate() {
        if n > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    f.write_str(")")
}

impl fmt::Display for AssertMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.form(), self.operands().as_slice()) {
            (Some((name, [x, y])), [a, b]) => write!(f, "{name} {{ {x}: {a}, {y}: {b} }}"),
            _ => match self {
                AssertMessage::Panic(msg) => write!(f, "{msg:?}"),
                _ => unreachable!("a message with a form has two values"),
            },
        }
    }
}

impl fmt::Display for TerminatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TerminatorKind::Goto(b) => write!(f, "goto -> {b}"),
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                write!(f, "switchInt({discr}) -> [")?;
                for (value, target) in targets {
                    write!(f, "{value}: {target}, ")?;
                }
                write!(f, "otherwise: {otherwise}]")
            }
            TerminatorKind::Assert { cond, msg, target } => {
                write!(f, "assert({cond}, {msg}) -> {target}")
            }
            TerminatorKind::Call {
                func,
                args,
                dest,
                target,
            } => {
                write!(f, "{dest} = call {func}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ") -> {target}")
            }
            TerminatorKind::Return => f.write_str("return"),
            TerminatorKind::Unreachable => f.write_str("unreachable"),
            TerminatorKind::Barrier { target } => write!(f, "barrier -> {target}"),
            TerminatorKind::TileMma {
                acc,
                a,
                b,
                shape: [m, n, k],
                pitches: [ldc, lda, ldb],
                target,
            } => write!(
                f,
                "tile_mma({acc}, {a}, {b}, {m}, {n}, {k}, {ldc}, {lda}, {ldb}) -> {target}"
            ),
            TerminatorKind::TileFill {
                tile,
                src,
                origin: [row_len, row, col],
                shape: [rows, cols, pitch],
                target,
            } => write!(
                f,
                "tile_fill({tile}, {src}, {row_len}, {row}, {col}, {rows}, {cols}, {pitch}) -> {target}"
            ),
        }
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "// offload-mir v{}", crate::FORMAT_VERSION)?;
        write_kernel(f, self)
    }
}

/// Prints several kernels as one file under a single version header.
pub fn print_module(bodies: &[Body]) -> String {
    let mut out = format!("// offload-mir v{}\n", crate::FORMAT_VERSION);
    for (i, body) in bodies.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_kernel(&mut out, body).expect("writing to a String cannot fail");
    }
    out
}

fn write_kernel(f: &mut impl Write, body: &Body) -> fmt::Result {
    let keyword = match body.kind {
        BodyKind::Kernel => "kernel",
        BodyKind::Device => "fn",
    };
    write!(f, "{keyword} {}(", body.name)?;
    for (i, (local, decl)) in body.args().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        let mutability = if decl.mutable { "mut " } else { "" };
        write!(f, "{mutability}{local}: {}", decl.ty)?;
    }
    match body.kind {
        BodyKind::Kernel => writeln!(f, ") {{")?,
        BodyKind::Device => writeln!(f, ") -> {} {{", body.locals[0].ty)?,
    }
    writeln!(f, "    file {:?};", body.file)?;
    if !body.fp_contract {
        writeln!(f, "    fp_contract off;")?;
    }
    for (i, decl) in body.locals.iter().enumerate() {
        if (1..=body.arg_count).contains(&i) {
            continue;
        }
        let mutability = if decl.mutable { "mut " } else { "" };
        writeln!(f, "    let {mutability}{}: {};", Local(i as u32), decl.ty)?;
    }
    for (i, decl) in body.locals.iter().enumerate() {
        if let Some((name, span)) = &decl.debug {
            writeln!(f, "    debug {name} => {}; // {span}", Local(i as u32))?;
        }
    }
    for (i, block) in body.blocks.iter().enumerate() {
        writeln!(f)?;
        writeln!(f, "    {}: {{", BasicBlock(i as u32))?;
        for s in &block.statements {
            let raw = if s.raw { "unsafe " } else { "" };
            writeln!(f, "        {raw}{} = {}; // {}", s.place, s.rvalue, s.span)?;
        }
        let t = &block.terminator;
        writeln!(f, "        {}; // {}", t.kind, t.span)?;
        writeln!(f, "    }}")?;
    }
    writeln!(f, "}}")
}
