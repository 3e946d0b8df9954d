//! MIR → `offload` dialect.
//!
//! Emits MLIR text for one validated kernel and leaves parsing and verification to the
//! caller. Each MIR scalar local becomes SSA values directly: [`crate::ssa`] places a
//! block argument (φ) for a local at each join in the iterated dominance frontier of its
//! assignments where it is live, and a walk of the dominator tree names the value each
//! read sees, the way Cytron et al. rename. Region and slice arguments stay values of
//! `!offload.region` and `!offload.slice` type and are reached only through `offload`
//! ops. Every MIR block becomes one MLIR block; an extra entry block defines the
//! arguments and shared arrays, since MLIR's entry block cannot be a branch target while
//! MIR's `bb0` can.
//!
//! (Locals used to be rank-0 `memref.alloca`s promoted by upstream `mem2reg`, which walks
//! the whole function once per slot: quadratic in kernel size, minutes for a `match` of
//! 8000 arms.)

use offload_mir::*;
use std::fmt::Write;

/// The MLIR spelling of a scalar type. Rust's integers are signless in MLIR; signedness
/// picks the operation (`divsi` or `divui`, `slt` or `ult`).
mod rvalue;

pub fn mlir_scalar(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool => "i1",
        ScalarTy::I8 | ScalarTy::U8 => "i8",
        ScalarTy::I16 | ScalarTy::U16 => "i16",
        ScalarTy::I32 | ScalarTy::U32 => "i32",
        ScalarTy::I64 | ScalarTy::U64 | ScalarTy::Isize | ScalarTy::Usize => "i64",
        ScalarTy::F32 => "f32",
        ScalarTy::F64 => "f64",
    }
}

pub fn mlir_type(t: Ty) -> String {
    match t {
        Ty::Unit => "()".into(),
        Ty::Scalar(s) => mlir_scalar(s).into(),
        Ty::Region(e, s) => format!("!offload.region<{}, \"{s}\">", mlir_scalar(e)),
        Ty::Slice(e) => format!("!offload.slice<{}>", mlir_scalar(e)),
        Ty::Atomic(e) => format!("!offload.atomic<{}>", mlir_scalar(e)),
        Ty::Shared(e, _) => format!("!offload.shared<{}>", mlir_scalar(e)),
    }
}

/// Prints the kernel as a module in the `offload` dialect.
pub fn emit(body: &Linked) -> String {
    let body = body.body();
    let mut e = Emitter {
        body,
        out: String::new(),
        next_value: 0,
        current: vec![None; body.locals.len()],
        undo: Vec::new(),
        undefined: vec![None; body.locals.len()],
        undefined_text: String::new(),
        phis: Vec::new(),
        panic_site: 0,
        panic_block: String::new(),
    };
    e.kernel();
    e.out
}

struct Emitter<'a> {
    body: &'a Body,
    out: String,
    next_value: usize,
    /// The SSA value each scalar local holds at the point being emitted.
    current: Vec<Option<String>>,
    /// `(local, previous value)` for each assignment in the blocks on the dominator-tree
    /// path being emitted, undone when the walk leaves a block.
    undo: Vec<(usize, Option<String>)>,
    /// A zero constant standing for a local read where no assignment reaches: only on
    /// paths the validator's assigned-before-use rule shows are never taken.
    undefined: Vec<Option<String>>,
    undefined_text: String,
    /// The locals that are block arguments of each node (0: the entry, `b + 1`: `bb{b}`).
    phis: Vec<Vec<u32>>,
    /// The site number of the current block's `assert`, and the block reporting it.
    panic_site: usize,
    panic_block: String,
}

/// The CFG node of MIR block `b`; node 0 is the extra entry block.
fn node(b: BasicBlock) -> u32 {
    b.0 + 1
}

/// The scalar locals a statement reads, then the one it assigns.
fn statement_reads(s: &Statement, read: &mut impl FnMut(Local)) -> Option<Local> {
    let operand = |op: &Operand, read: &mut dyn FnMut(Local)| {
        if let Operand::Copy(p) | Operand::Move(p) = op {
            read(p.index.unwrap_or(p.local));
        }
    };
    match &s.rvalue {
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => operand(a, read),
        Rvalue::BinaryOp(_, a, b) => {
            operand(a, read);
            operand(b, read);
        }
        Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => {
            for a in args {
                operand(a, read);
            }
        }
        Rvalue::AtomicRmw(_, place, a) => {
            operand(a, read);
            read(place.index.expect("validated: atomic places are indexed"));
        }
        Rvalue::AtomicCas(place, a, b) => {
            operand(a, read);
            operand(b, read);
            read(place.index.expect("validated: atomic places are indexed"));
        }
        Rvalue::Position(..)
        | Rvalue::Len(_)
        | Rvalue::RegionIndex(_)
        | Rvalue::RegionCoord(..)
        | Rvalue::RegionExtent(..) => {}
    }
    match s.place.index {
        Some(index) => {
            read(index);
            None
        }
        None => Some(s.place.local),
    }
}

/// The scalar locals a terminator reads.
fn terminator_reads(t: &Terminator, read: &mut impl FnMut(Local)) {
    let mut operand = |op: &Operand| {
        if let Operand::Copy(p) | Operand::Move(p) = op {
            read(p.index.unwrap_or(p.local));
        }
    };
    match &t.kind {
        TerminatorKind::SwitchInt { discr, .. } => operand(discr),
        TerminatorKind::Assert { cond, msg, .. } => {
            operand(cond);
            if let AssertMessage::BoundsCheck { len, index } = msg {
                operand(len);
                operand(index);
            }
        }
        TerminatorKind::Call { args, .. } => args.iter().for_each(operand),
        TerminatorKind::Goto(_)
        | TerminatorKind::Barrier { .. }
        | TerminatorKind::Return
        | TerminatorKind::Unreachable => {}
    }
}

impl Emitter<'_> {
    fn fresh(&mut self) -> String {
        self.next_value += 1;
        format!("%v{}", self.next_value)
    }

    fn loc(&self, span: Span) -> String {
        format!("loc({:?}:{}:{})", self.body.file, span.line, span.column)
    }

    fn line(&mut self, text: &str, span: Span) {
        let loc = self.loc(span);
        writeln!(self.out, "    {text} {loc}").unwrap();
    }

    /// The value scalar local `l` holds here.
    fn read(&mut self, l: Local) -> String {
        if let Some(v) = &self.current[l.index()] {
            return v.clone();
        }
        if let Some(v) = &self.undefined[l.index()] {
            return v.clone();
        }
        let ty = self.body.locals[l.index()]
            .ty
            .scalar()
            .expect("validated: plain places are scalars");
        let zero = match ty {
            ScalarTy::Bool => Const::Bool(false),
            t if t.is_float() => Const::Float(0.0, t),
            t => Const::Int(0, t),
        };
        let v = format!("%undef{}", l.0);
        let loc = self.loc(Span::default());
        writeln!(
            self.undefined_text,
            "    {v} = arith.constant {} {loc}",
            const_attr(zero)
        )
        .unwrap();
        self.undefined[l.index()] = Some(v.clone());
        v
    }

    /// Scalar local `l` holds `value` from here on (in the blocks this one dominates).
    fn assign(&mut self, l: Local, value: String) {
        let old = self.current[l.index()].replace(value);
        self.undo.push((l.index(), old));
    }

    /// `^bbN` with the values of the locals that are its block arguments.
    fn successor(&mut self, b: BasicBlock) -> String {
        let phis = std::mem::take(&mut self.phis[node(b) as usize]);
        let out = if phis.is_empty() {
            format!("^bb{}", b.0)
        } else {
            let values: Vec<String> = phis.iter().map(|&l| self.read(Local(l))).collect();
            let types: Vec<&str> = phis.iter().map(|&l| self.local_type(l)).collect();
            format!("^bb{}({} : {})", b.0, values.join(", "), types.join(", "))
        };
        self.phis[node(b) as usize] = phis;
        out
    }

    fn local_type(&self, l: u32) -> &'static str {
        mlir_scalar(
            self.body.locals[l as usize]
                .ty
                .scalar()
                .expect("only scalar locals get block arguments"),
        )
    }

    /// Where each scalar local needs a block argument: the CFG, its dominators and
    /// frontiers, and each local's assignments and upward-exposed reads.
    fn place_phis(&self) -> (Vec<Vec<u32>>, Vec<u32>) {
        let b = self.body;
        let n = b.blocks.len() + 1;
        let mut succs: Vec<Vec<u32>> = vec![vec![node(BasicBlock(0))]];
        succs.extend(b.blocks.iter().map(|block| {
            block
                .terminator
                .kind
                .successors()
                .into_iter()
                .map(node)
                .collect()
        }));
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (v, ss) in succs.iter().enumerate() {
            for &w in ss {
                preds[w as usize].push(v as u32);
            }
        }
        let scalar = |l: Local| matches!(b.locals[l.index()].ty, Ty::Scalar(_));
        let mut defs: Vec<Vec<u32>> = vec![Vec::new(); b.locals.len()];
        let mut uses: Vec<Vec<u32>> = vec![Vec::new(); b.locals.len()];
        // The last node that assigned or read each local, so each is listed once per node.
        let mut assigned_in = vec![u32::MAX; b.locals.len()];
        let mut read_in = vec![u32::MAX; b.locals.len()];
        for l in 1..=b.arg_count {
            if scalar(Local(l as u32)) {
                defs[l].push(0);
                assigned_in[l] = 0;
            }
        }
        let mut reads: Vec<Local> = Vec::new();
        for (i, block) in b.blocks.iter().enumerate() {
            let v = node(BasicBlock(i as u32));
            let mut note_reads = |reads: &mut Vec<Local>, assigned_in: &[u32]| {
                for l in reads.drain(..) {
                    let l = l.index();
                    if assigned_in[l] != v && read_in[l] != v {
                        read_in[l] = v;
                        uses[l].push(v);
                    }
                }
            };
            for s in &block.statements {
                let assigned = statement_reads(s, &mut |l| reads.push(l));
                note_reads(&mut reads, &assigned_in);
                if let Some(l) = assigned.filter(|&l| scalar(l) && assigned_in[l.index()] != v) {
                    assigned_in[l.index()] = v;
                    defs[l.index()].push(v);
                }
            }
            terminator_reads(&block.terminator, &mut |l| reads.push(l));
            note_reads(&mut reads, &assigned_in);
        }
        let idom = crate::ssa::dominators(&succs, &preds);
        let df = crate::ssa::frontiers(&preds, &idom);
        (crate::ssa::place_phis(&preds, &df, &defs, &uses), idom)
    }

    fn kernel(&mut self) {
        let b = self.body;
        let args: Vec<String> = b
            .args()
            .map(|(l, d)| format!("%arg{}: {}", l.0, mlir_type(d.ty)))
            .collect();
        let entry_span = b.blocks[0]
            .statements
            .first()
            .map(|s| s.span)
            .unwrap_or(b.blocks[0].terminator.span);
        let (phis, idom) = self.place_phis();
        self.phis = phis;
        let n = b.blocks.len() + 1;
        // The dominator tree's children of each node, and the `assert` site of each block
        // (`Body::panic_site_numbers`, which the runtime reads reports by).
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for v in (1..n).rev() {
            if idom[v] != crate::ssa::NONE {
                children[idom[v] as usize].push(v as u32);
            }
        }
        let mut sites = vec![0; n];
        for (i, site) in b.panic_site_numbers().into_iter().enumerate() {
            sites[i + 1] = site.unwrap_or(0);
        }
        // Each node's text, then its panic block's.
        let mut text: Vec<(String, String)> = vec![Default::default(); n];
        // Preorder over the dominator tree, then the nodes it does not reach (none, for
        // linked bodies), each with nothing assigned on entry.
        let mut stack: Vec<(u32, bool)> = vec![(0, false)];
        let mut marks: Vec<usize> = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        let unreachable = (1..n as u32).filter(|&v| idom[v as usize] == crate::ssa::NONE);
        let mut pending: Vec<u32> = unreachable.collect();
        pending.reverse();
        loop {
            let Some((v, leaving)) = stack.pop() else {
                let Some(v) = pending.pop() else { break };
                stack.push((v, false));
                continue;
            };
            if leaving {
                let mark = marks.pop().expect("one mark per node entered");
                while self.undo.len() > mark {
                    let (l, old) = self.undo.pop().expect("above the mark");
                    self.current[l] = old;
                }
                continue;
            }
            visited[v as usize] = true;
            marks.push(self.undo.len());
            stack.push((v, true));
            self.out.clear();
            self.panic_block.clear();
            if v == 0 {
                self.entry(entry_span);
            } else {
                self.panic_site = sites[v as usize];
                self.block(BasicBlock(v - 1));
            }
            text[v as usize] = (
                std::mem::take(&mut self.out),
                std::mem::take(&mut self.panic_block),
            );
            for &c in children[v as usize].iter() {
                stack.push((c, false));
            }
        }
        debug_assert!(visited.iter().all(|&v| v));
        let mut out = String::new();
        writeln!(out, "module {{").unwrap();
        writeln!(
            out,
            "  func.func @{}({}) attributes {{offload.kernel}} {{",
            b.name,
            args.join(", ")
        )
        .unwrap();
        out.push_str(&self.undefined_text);
        for (body, _) in &text {
            out.push_str(body);
        }
        for (_, panic) in &text {
            out.push_str(panic);
        }
        writeln!(out, "  }}").unwrap();
        writeln!(out, "}}").unwrap();
        self.out = out;
    }

    /// The extra entry block: arguments are the locals' first values, shared arrays are
    /// created, then `bb0`.
    fn entry(&mut self, entry_span: Span) {
        let b = self.body;
        for (i, decl) in b.locals.iter().enumerate().take(b.arg_count + 1).skip(1) {
            if let Ty::Scalar(_) = decl.ty {
                self.assign(Local(i as u32), format!("%arg{i}"));
            }
        }
        // Shared arrays are values like the container arguments, named alike.
        let layout = b.shared_layout();
        for (i, decl) in b.locals.iter().enumerate() {
            let Ty::Shared(_, len) = decl.ty else {
                continue;
            };
            let span = decl.debug.as_ref().map(|d| d.1).unwrap_or(entry_span);
            let offset = layout
                .arrays
                .iter()
                .find(|(l, _)| l.index() == i)
                .map_or(layout.dynamic_offset, |(_, o)| *o);
            let len = len.map_or(-1, i64::from);
            self.line(
                &format!(
                    "%arg{i} = \"offload.alloc_shared\"() {{len = {len} : i64, offset = {offset} : i64}} : () -> {}",
                    mlir_type(decl.ty)
                ),
                span,
            );
        }
        let to = self.successor(BasicBlock(0));
        self.line(&format!("cf.br {to}"), entry_span);
    }

    /// One MIR block, its block arguments first.
    fn block(&mut self, id: BasicBlock) {
        let phis = std::mem::take(&mut self.phis[node(id) as usize]);
        let params: Vec<String> = phis
            .iter()
            .map(|&l| format!("%b{}_{l}: {}", id.0, self.local_type(l)))
            .collect();
        if params.is_empty() {
            writeln!(self.out, "  ^bb{}:", id.0).unwrap();
        } else {
            writeln!(self.out, "  ^bb{}({}):", id.0, params.join(", ")).unwrap();
        }
        for &l in &phis {
            self.assign(Local(l), format!("%b{}_{l}", id.0));
        }
        self.phis[node(id) as usize] = phis;
        let block = &self.body.blocks[id.index()];
        for s in &block.statements {
            self.statement(s);
        }
        self.terminator(&block.terminator);
    }

    fn scalar_of(&self, p: Place) -> ScalarTy {
        let ty = self.body.locals[p.local.index()].ty;
        match p.index {
            Some(_) => ty
                .element()
                .expect("validated: indexed locals are regions or slices"),
            None => ty.scalar().expect("validated: plain places are scalars"),
        }
    }

    /// Loads an index local and converts it to MLIR's `index` type.
    fn index_value(&mut self, index: Local, span: Span) -> String {
        let raw = self.read(index);
        let v = self.fresh();
        self.line(
            &format!("{v} = arith.index_cast {raw} : i64 to index"),
            span,
        );
        v
    }

    fn operand(&mut self, op: &Operand, span: Span) -> (String, ScalarTy) {
        match op {
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.scalar_of(*p);
                let t = mlir_scalar(ty);
                let v = match p.index {
                    None => self.read(p.local),
                    Some(index) => {
                        let i = self.index_value(index, span);
                        let v = self.fresh();
                        let container = mlir_type(self.body.locals[p.local.index()].ty);
                        self.line(
                            &format!(
                                "{v} = \"offload.load\"(%arg{}, {i}) : ({container}, index) -> {t}",
                                p.local.0
                            ),
                            span,
                        );
                        v
                    }
                };
                (v, ty)
            }
            Operand::Const(c) => {
                let ty = c.ty();
                let v = self.fresh();
                self.line(&format!("{v} = arith.constant {}", const_attr(*c)), span);
                (v, ty)
            }
        }
    }

    fn constant(&mut self, c: Const, span: Span) -> String {
        self.operand(&Operand::Const(c), span).0
    }

    fn statement(&mut self, s: &Statement) {
        let span = s.span;
        let (value, ty) = self.rvalue(&s.rvalue, span);
        let t = mlir_scalar(ty);
        match s.place.index {
            None => self.assign(s.place.local, value),
            Some(index) => {
                let i = self.index_value(index, span);
                let region = mlir_type(self.body.locals[s.place.local.index()].ty);
                self.line(
                    &format!(
                        "\"offload.store\"({value}, %arg{}, {i}) : ({t}, {region}, index) -> ()",
                        s.place.local.0
                    ),
                    span,
                );
            }
        }
    }

    fn terminator(&mut self, t: &Terminator) {
        let span = t.span;
        match &t.kind {
            TerminatorKind::Goto(b) => {
                let to = self.successor(*b);
                self.line(&format!("cf.br {to}"), span)
            }
            TerminatorKind::Barrier { target } => {
                self.line("\"offload.barrier\"() : () -> ()", span);
                let to = self.successor(*target);
                self.line(&format!("cf.br {to}"), span);
            }
            TerminatorKind::Call { .. } => unreachable!("`emit` refuses bodies with calls"),
            TerminatorKind::Return | TerminatorKind::Unreachable => {
                // MIR `unreachable` marks code no path reaches; returning there is sound.
                self.line("func.return", span)
            }
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                let (d, ty) = self.operand(discr, span);
                let default = self.successor(*otherwise);
                if ty == ScalarTy::Bool && targets.len() == 1 && targets[0].0 == 0 {
                    let to = self.successor(targets[0].1);
                    self.line(&format!("cf.cond_br {d}, {default}, {to}"), span);
                } else {
                    let t = mlir_scalar(ty);
                    let cases: Vec<String> = targets
                        .iter()
                        .map(|(v, b)| format!("{}: {}", signed_bits(*v, ty), self.successor(*b)))
                        .collect();
                    self.line(
                        &format!(
                            "cf.switch {d} : {t}, [default: {default}, {}]",
                            cases.join(", ")
                        ),
                        span,
                    );
                }
            }
            TerminatorKind::Assert { cond, msg, target } => {
                let (c, _) = self.operand(cond, span);
                let values = match msg {
                    AssertMessage::BoundsCheck { len, index } => {
                        vec![self.operand(len, span).0, self.operand(index, span).0]
                    }
                    AssertMessage::Panic(_) => vec![],
                };
                let site = self.panic_site;
                let to = self.successor(*target);
                self.line(&format!("cf.cond_br {c}, {to}, ^panic{site}"), span);
                let loc = self.loc(span);
                let types = vec!["i64"; values.len()].join(", ");
                writeln!(self.panic_block, "  ^panic{site}:").unwrap();
                writeln!(
                    self.panic_block,
                    "    \"offload.panic\"({}) {{site = {site} : i64}} : ({types}) -> () {loc}",
                    values.join(", ")
                )
                .unwrap();
                writeln!(self.panic_block, "    func.return {loc}").unwrap();
            }
        }
    }
}

fn ty_unsigned_of(t: ScalarTy) -> ScalarTy {
    match t.bits() {
        8 => ScalarTy::U8,
        16 => ScalarTy::U16,
        32 => ScalarTy::U32,
        _ => ScalarTy::U64,
    }
}

/// A switch value as MLIR prints an integer of the discriminant's width: two's
/// complement, signed.
fn signed_bits(v: u128, ty: ScalarTy) -> i128 {
    let bits = ty.bits();
    let v = v & ((1u128 << bits) - 1);
    if bits > 1 && v >> (bits - 1) == 1 {
        v as i128 - (1i128 << bits)
    } else {
        v as i128
    }
}

/// A constant as an `arith.constant` attribute. Floats are written as their bit pattern
/// so the value is exact.
fn const_attr(c: Const) -> String {
    match c {
        Const::Bool(b) => format!("{b}"),
        Const::Int(v, t) => format!("{} : {}", signed_bits(v as u128, t), mlir_scalar(t)),
        Const::Float(v, ScalarTy::F32) => format!("0x{:08X} : f32", (v as f32).to_bits()),
        Const::Float(v, _) => format!("0x{:016X} : f64", v.to_bits()),
    }
}
