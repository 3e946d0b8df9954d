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

    fn rvalue(&mut self, rv: &Rvalue, span: Span) -> (String, ScalarTy) {
        match rv {
            Rvalue::Use(op) => self.operand(op, span),
            Rvalue::AtomicRmw(op, place, value) => {
                let (value, ty) = self.operand(value, span);
                use offload_dialect::AtomicKind;
                let kind = match (op, ty.is_float(), ty.is_signed()) {
                    (AtomicOp::Add, true, _) => AtomicKind::AddF,
                    (AtomicOp::Add, false, _) => AtomicKind::AddI,
                    (AtomicOp::And, ..) => AtomicKind::AndI,
                    (AtomicOp::Exchange, ..) => AtomicKind::Assign,
                    (AtomicOp::Max, _, true) => AtomicKind::MaxS,
                    (AtomicOp::Max, _, false) => AtomicKind::MaxU,
                    (AtomicOp::Min, _, true) => AtomicKind::MinS,
                    (AtomicOp::Min, _, false) => AtomicKind::MinU,
                    (AtomicOp::Or, ..) => AtomicKind::OrI,
                    (AtomicOp::Xor, ..) => AtomicKind::XorI,
                }
                .code();
                let index = self.index_value(
                    place.index.expect("validated: atomic places are indexed"),
                    span,
                );
                let atomic = mlir_type(self.body.locals[place.local.index()].ty);
                let t = mlir_scalar(ty);
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.atomic_rmw\"(%arg{}, {index}, {value}) {{kind = {kind} : i64}} : ({atomic}, index, {t}) -> {t}", place.local.0),
                    span,
                );
                (v, ty)
            }
            Rvalue::AtomicCas(place, current, new) => {
                let (current, ty) = self.operand(current, span);
                let (new, _) = self.operand(new, span);
                let index = self.index_value(
                    place.index.expect("validated: atomic places are indexed"),
                    span,
                );
                let atomic = mlir_type(self.body.locals[place.local.index()].ty);
                let t = mlir_scalar(ty);
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.atomic_cas\"(%arg{}, {index}, {current}, {new}) : ({atomic}, index, {t}, {t}) -> {t}", place.local.0),
                    span,
                );
                (v, ty)
            }
            Rvalue::Position(p, d) => {
                let op = match p {
                    Position::Thread => "offload.thread_id",
                    Position::Workgroup => "offload.workgroup_id",
                    Position::WorkgroupSize => "offload.workgroup_dim",
                    Position::WorkgroupCount => "offload.workgroup_count",
                };
                self.index_query(
                    &format!("\"{op}\"() {{dim = {d} : i64}} : () -> index"),
                    span,
                )
            }
            Rvalue::Intrinsic(i, args) => {
                let args: Vec<(String, ScalarTy)> =
                    args.iter().map(|a| self.operand(a, span)).collect();
                self.intrinsic(*i, &args, span)
            }
            Rvalue::Subgroup(op, args) => {
                let args: Vec<(String, ScalarTy)> =
                    args.iter().map(|a| self.operand(a, span)).collect();
                self.subgroup(*op, &args, span)
            }
            Rvalue::BinaryOp(op, a, b) => {
                let (a, ty) = self.operand(a, span);
                let (b, bty) = self.operand(b, span);
                self.binary(*op, a, b, ty, bty, span)
            }
            Rvalue::UnaryOp(op, a) => {
                let (a, ty) = self.operand(a, span);
                let t = mlir_scalar(ty);
                let v = self.fresh();
                match (op, ty.is_float()) {
                    (UnOp::Neg, true) => self.line(&format!("{v} = arith.negf {a} : {t}"), span),
                    (UnOp::Neg, false) => {
                        let zero = self.constant(Const::Int(0, ty), span);
                        self.line(&format!("{v} = arith.subi {zero}, {a} : {t}"), span);
                    }
                    (UnOp::Not, _) => {
                        let ones = if ty == ScalarTy::Bool {
                            Const::Bool(true)
                        } else {
                            Const::Int(-1, ty)
                        };
                        let ones = self.constant(ones, span);
                        self.line(&format!("{v} = arith.xori {a}, {ones} : {t}"), span);
                    }
                }
                (v, ty)
            }
            Rvalue::Cast(a, to) => {
                let (a, from) = self.operand(a, span);
                (self.cast(a, from, *to, span), *to)
            }
            Rvalue::Len(l) => {
                let container = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!("\"offload.len\"(%arg{}) : ({container}) -> index", l.0),
                    span,
                )
            }
            Rvalue::RegionCoord(l, d) | Rvalue::RegionExtent(l, d) => {
                let op = if matches!(rv, Rvalue::RegionCoord(..)) {
                    "offload.region_coord"
                } else {
                    "offload.extent"
                };
                let region = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!(
                        "\"{op}\"(%arg{}) {{dim = {d} : i64}} : ({region}) -> index",
                        l.0
                    ),
                    span,
                )
            }
            Rvalue::RegionIndex(l) => {
                let region = mlir_type(self.body.locals[l.index()].ty);
                self.index_query(
                    &format!(
                        "\"offload.region_index\"(%arg{}) : ({region}) -> index",
                        l.0
                    ),
                    span,
                )
            }
        }
    }

    fn subgroup(
        &mut self,
        op: SubgroupOp,
        args: &[(String, ScalarTy)],
        span: Span,
    ) -> (String, ScalarTy) {
        match op {
            SubgroupOp::Size => self.index_query("\"offload.subgroup_size\"() : () -> index", span),
            SubgroupOp::Lane => self.index_query("\"offload.subgroup_lane\"() : () -> index", span),
            SubgroupOp::Shuffle | SubgroupOp::ShuffleXor => {
                let (value, ty) = args[0].clone();
                let t = mlir_scalar(ty);
                // Lanes are `i32` on every target; a lane past `u32::MAX` saturates,
                // which is past the subgroup either way.
                let (lane, _) = args[1].clone();
                let max = self.constant(Const::Int(i32::MAX as i128, ScalarTy::I64), span);
                let clamped = self.fresh();
                self.line(
                    &format!("{clamped} = arith.minui {lane}, {max} : i64"),
                    span,
                );
                let lane32 = self.fresh();
                self.line(
                    &format!("{lane32} = arith.trunci {clamped} : i64 to i32"),
                    span,
                );
                let mode = (op == SubgroupOp::ShuffleXor) as i64;
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.shuffle\"({value}, {lane32}) {{mode = {mode} : i64}} : ({t}, i32) -> {t}"),
                    span,
                );
                (v, ty)
            }
            SubgroupOp::Sum | SubgroupOp::Min | SubgroupOp::Max => {
                let (value, ty) = args[0].clone();
                let t = mlir_scalar(ty);
                let combine = match (op, ty.is_float(), ty.is_signed()) {
                    (SubgroupOp::Sum, true, _) => "arith.addf",
                    (SubgroupOp::Sum, false, _) => "arith.addi",
                    (SubgroupOp::Min, true, _) => "arith.minnumf",
                    (SubgroupOp::Min, false, true) => "arith.minsi",
                    (SubgroupOp::Min, false, false) => "arith.minui",
                    (_, true, _) => "arith.maxnumf",
                    (_, false, true) => "arith.maxsi",
                    (_, false, false) => "arith.maxui",
                };
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.subgroup_reduce\"({value}) {{combine = \"{combine}\"}} : ({t}) -> {t}"),
                    span,
                );
                (v, ty)
            }
            SubgroupOp::Ballot => {
                let v = self.fresh();
                self.line(
                    &format!("{v} = \"offload.ballot\"({}) : (i1) -> i64", args[0].0),
                    span,
                );
                (v, ScalarTy::U64)
            }
            SubgroupOp::Any | SubgroupOp::All => {
                // any(b) = ballot(b) != 0; all(b) = ballot(!b) == 0.
                let all = op == SubgroupOp::All;
                let mut p = args[0].0.clone();
                if all {
                    let t = self.constant(Const::Bool(true), span);
                    let n = self.fresh();
                    self.line(&format!("{n} = arith.xori {p}, {t} : i1"), span);
                    p = n;
                }
                let mask = self.fresh();
                self.line(
                    &format!("{mask} = \"offload.ballot\"({p}) : (i1) -> i64"),
                    span,
                );
                let zero = self.constant(Const::Int(0, ScalarTy::U64), span);
                let v = self.fresh();
                let pred = if all { "eq" } else { "ne" };
                self.line(
                    &format!("{v} = arith.cmpi {pred}, {mask}, {zero} : i64"),
                    span,
                );
                (v, ScalarTy::Bool)
            }
        }
    }

    /// An op yielding an `index` (`op` is its text after `=`), as a `usize`.
    fn index_query(&mut self, op: &str, span: Span) -> (String, ScalarTy) {
        let i = self.fresh();
        self.line(&format!("{i} = {op}"), span);
        let v = self.fresh();
        self.line(&format!("{v} = arith.index_cast {i} : index to i64"), span);
        (v, ScalarTy::Usize)
    }

    fn intrinsic(
        &mut self,
        i: Intrinsic,
        args: &[(String, ScalarTy)],
        span: Span,
    ) -> (String, ScalarTy) {
        let (a, ty) = args[0].clone();
        let t = mlir_scalar(ty);
        let names: Vec<&str> = args.iter().map(|(v, _)| v.as_str()).collect();
        let list = names.join(", ");
        let v = self.fresh();
        let unary = match i {
            Intrinsic::Sqrt => Some("math.sqrt"),
            Intrinsic::Exp => Some("math.exp"),
            Intrinsic::Exp2 => Some("math.exp2"),
            Intrinsic::Ln => Some("math.log"),
            Intrinsic::Log2 => Some("math.log2"),
            Intrinsic::Log10 => Some("math.log10"),
            Intrinsic::Sin => Some("math.sin"),
            Intrinsic::Cos => Some("math.cos"),
            Intrinsic::Tan => Some("math.tan"),
            Intrinsic::Tanh => Some("math.tanh"),
            Intrinsic::Floor => Some("math.floor"),
            Intrinsic::Ceil => Some("math.ceil"),
            // Rust rounds half away from zero, as `math.round` does.
            Intrinsic::Round => Some("math.round"),
            Intrinsic::Trunc => Some("math.trunc"),
            Intrinsic::Abs if ty.is_float() => Some("math.absf"),
            Intrinsic::Abs => Some("math.absi"),
            _ => None,
        };
        if let Some(op) = unary {
            self.line(&format!("{v} = {op} {a} : {t}"), span);
            return (v, ty);
        }
        match i {
            Intrinsic::Min | Intrinsic::Max => {
                // Rust's float `min`/`max` return the non-NaN operand: `minnumf`/`maxnumf`.
                let op = match (i == Intrinsic::Min, ty.is_float(), ty.is_signed()) {
                    (true, true, _) => "minnumf",
                    (false, true, _) => "maxnumf",
                    (true, false, true) => "minsi",
                    (false, false, true) => "maxsi",
                    (true, false, false) => "minui",
                    (false, false, false) => "maxui",
                };
                self.line(&format!("{v} = arith.{op} {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::Powf => {
                self.line(&format!("{v} = math.powf {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::Powi => {
                self.line(&format!("{v} = math.fpowi {list} : {t}, i32"), span);
                (v, ty)
            }
            Intrinsic::MulAdd => {
                self.line(&format!("{v} = math.fma {list} : {t}"), span);
                (v, ty)
            }
            Intrinsic::LeadingZeros | Intrinsic::TrailingZeros | Intrinsic::CountOnes => {
                let op = match i {
                    Intrinsic::LeadingZeros => "math.ctlz",
                    Intrinsic::TrailingZeros => "math.cttz",
                    _ => "math.ctpop",
                };
                self.line(&format!("{v} = {op} {a} : {t}"), span);
                (self.cast(v, ty, ScalarTy::U32, span), ScalarTy::U32)
            }
            _ => unreachable!("unary intrinsics are handled above"),
        }
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: String,
        b: String,
        ty: ScalarTy,
        bty: ScalarTy,
        span: Span,
    ) -> (String, ScalarTy) {
        let t = mlir_scalar(ty);
        let float = ty.is_float();
        let signed = ty.is_signed();
        let v = self.fresh();
        if op.is_comparison() {
            let pred = match (op, float, signed) {
                (BinOp::Eq, true, _) => "oeq",
                // Rust's `!=` is true when either side is NaN.
                (BinOp::Ne, true, _) => "une",
                (BinOp::Lt, true, _) => "olt",
                (BinOp::Le, true, _) => "ole",
                (BinOp::Gt, true, _) => "ogt",
                (BinOp::Ge, true, _) => "oge",
                (BinOp::Eq, false, _) => "eq",
                (BinOp::Ne, false, _) => "ne",
                (BinOp::Lt, false, true) => "slt",
                (BinOp::Le, false, true) => "sle",
                (BinOp::Gt, false, true) => "sgt",
                (BinOp::Ge, false, true) => "sge",
                (BinOp::Lt, false, false) => "ult",
                (BinOp::Le, false, false) => "ule",
                (BinOp::Gt, false, false) => "ugt",
                (BinOp::Ge, false, false) => "uge",
                _ => unreachable!("comparison operators are listed above"),
            };
            let cmp = if float { "cmpf" } else { "cmpi" };
            self.line(&format!("{v} = arith.{cmp} {pred}, {a}, {b} : {t}"), span);
            return (v, ScalarTy::Bool);
        }
        if op.is_shift() {
            // Rust masks the shift amount to the bit width (release semantics), so the
            // shift is never out of range.
            let amount = self.cast(b, bty, ty_unsigned_of(ty), span);
            let mask = self.constant(Const::Int(ty.bits() as i128 - 1, ty_unsigned_of(ty)), span);
            let masked = self.fresh();
            self.line(
                &format!("{masked} = arith.andi {amount}, {mask} : {t}"),
                span,
            );
            let name = match (op, signed) {
                (BinOp::Shl, _) => "shli",
                (_, true) => "shrsi",
                (_, false) => "shrui",
            };
            self.line(&format!("{v} = arith.{name} {a}, {masked} : {t}"), span);
            return (v, ty);
        }
        let name = match (op, float, signed) {
            (BinOp::Add, true, _) => "addf",
            (BinOp::Sub, true, _) => "subf",
            (BinOp::Mul, true, _) => "mulf",
            (BinOp::Div, true, _) => "divf",
            (BinOp::Rem, true, _) => "remf",
            (BinOp::Add, false, _) => "addi",
            (BinOp::Sub, false, _) => "subi",
            (BinOp::Mul, false, _) => "muli",
            (BinOp::Div, false, true) => "divsi",
            (BinOp::Div, false, false) => "divui",
            (BinOp::Rem, false, true) => "remsi",
            (BinOp::Rem, false, false) => "remui",
            (BinOp::BitAnd, false, _) => "andi",
            (BinOp::BitOr, false, _) => "ori",
            (BinOp::BitXor, false, _) => "xori",
            _ => unreachable!("validated: bitwise operators are not applied to floats"),
        };
        self.line(&format!("{v} = arith.{name} {a}, {b} : {t}"), span);
        (v, ty)
    }

    /// Rust's `as`: integers truncate or extend by the source's signedness, floats to
    /// integers saturate (NaN becomes 0), integers to floats round to nearest.
    fn cast(&mut self, a: String, from: ScalarTy, to: ScalarTy, span: Span) -> String {
        let (ft, tt) = (mlir_scalar(from), mlir_scalar(to));
        if ft == tt && from.is_float() == to.is_float() {
            return a;
        }
        let v = self.fresh();
        match (from.is_float(), to.is_float()) {
            (false, false) => {
                let op = if from.bits() > to.bits() {
                    "trunci"
                } else if from.is_signed() {
                    "extsi"
                } else {
                    "extui"
                };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (false, true) => {
                let op = if from.is_signed() { "sitofp" } else { "uitofp" };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (true, true) => {
                let op = if from.bits() > to.bits() {
                    "truncf"
                } else {
                    "extf"
                };
                self.line(&format!("{v} = arith.{op} {a} : {ft} to {tt}"), span);
            }
            (true, false) => return self.saturating_float_to_int(a, from, to, span),
        }
        v
    }

    fn saturating_float_to_int(
        &mut self,
        a: String,
        from: ScalarTy,
        to: ScalarTy,
        span: Span,
    ) -> String {
        let (ft, tt) = (mlir_scalar(from), mlir_scalar(to));
        let (min, max): (i128, i128) = if to.is_signed() {
            (-(1i128 << (to.bits() - 1)), (1i128 << (to.bits() - 1)) - 1)
        } else {
            (0, (1i128 << to.bits()) - 1)
        };
        // Clamp in the float domain to the representable range, convert, then fix up the
        // ends exactly (the float bounds may round past them) and map NaN to zero.
        let lo = self.constant(Const::Float(min as f64, from), span);
        let hi = self.constant(Const::Float(max as f64, from), span);
        let clamped_lo = self.fresh();
        self.line(
            &format!("{clamped_lo} = arith.maxnumf {a}, {lo} : {ft}"),
            span,
        );
        let clamped = self.fresh();
        self.line(
            &format!("{clamped} = arith.minnumf {clamped_lo}, {hi} : {ft}"),
            span,
        );
        let conv = self.fresh();
        let op = if to.is_signed() { "fptosi" } else { "fptoui" };
        // `max` may not be representable: a value that rounds up to 2^bits converts out
        // of range, so treat anything at or above `hi` as `max` exactly.
        let below_hi = self.fresh();
        self.line(
            &format!("{below_hi} = arith.cmpf olt, {clamped}, {hi} : {ft}"),
            span,
        );
        let safe = self.fresh();
        let lo_again = lo.clone();
        self.line(
            &format!("{safe} = arith.select {below_hi}, {clamped}, {lo_again} : {ft}"),
            span,
        );
        self.line(&format!("{conv} = arith.{op} {safe} : {ft} to {tt}"), span);
        let max_c = self.constant(Const::Int(max, to), span);
        let sat = self.fresh();
        self.line(
            &format!("{sat} = arith.select {below_hi}, {conv}, {max_c} : {tt}"),
            span,
        );
        let is_nan = self.fresh();
        self.line(&format!("{is_nan} = arith.cmpf uno, {a}, {a} : {ft}"), span);
        let zero = self.constant(Const::Int(0, to), span);
        let v = self.fresh();
        self.line(
            &format!("{v} = arith.select {is_nan}, {zero}, {sat} : {tt}"),
            span,
        );
        v
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
