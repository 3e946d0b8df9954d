//! MIR → `offload` dialect.
//!
//! Builds the module for one linked kernel with melior's operation builders and leaves
//! verification to the caller. Each MIR scalar local becomes SSA values directly: [`crate::ssa`] places a
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

use melior::{
    Context,
    dialect::{arith::CmpiPredicate, cf, func},
    ir::{
        Attribute, Block, BlockLike, Identifier, Location, Module, Operation, Region, RegionLike,
        Type, Value,
        attribute::{FloatAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
        operation::OperationBuilder,
        r#type::{FunctionType, IntegerType},
    },
};
use offload_dialect::{OffloadType, build};
use offload_mir::*;

mod rvalue;

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
        ScalarTy::F16 => "f16",
        ScalarTy::Bf16 => "bf16",
    }
}

/// A scalar type in `context`.
fn scalar_type(context: &Context, t: ScalarTy) -> Type<'_> {
    match t {
        ScalarTy::F32 => Type::float32(context),
        ScalarTy::F64 => Type::float64(context),
        ScalarTy::F16 => Type::float16(context),
        ScalarTy::Bf16 => Type::bfloat16(context),
        t => IntegerType::new(context, t.bits()).into(),
    }
}

/// The offload type of a region, slice, atomic or shared local, or a scalar's type.
fn local_type(context: &Context, t: Ty) -> Type<'_> {
    let elem = |e: ScalarTy| scalar_type(context, e);
    let container = match t {
        Ty::Unit => return Type::none(context),
        Ty::Scalar(s) => return scalar_type(context, s),
        Ty::Region(e, strategy) => OffloadType::Region {
            elem: elem(e),
            strategy,
        },
        Ty::Slice(e) => OffloadType::Slice { elem: elem(e) },
        Ty::Atomic(e) => OffloadType::Atomic { elem: elem(e) },
        Ty::Shared(e, _) => OffloadType::Shared { elem: elem(e) },
    };
    container.to_type(context)
}

/// Builds the kernel as a module in the `offload` dialect, in `context` (which has the
/// dialect loaded).
pub fn build<'c>(context: &'c Context, linked: &Linked) -> Module<'c> {
    let body = linked.body();
    let location = Location::new(context, &body.file, 0, 0);
    let (phis, idom) = place_phis(body);
    let n = body.blocks.len() + 1;
    let unknown = Location::unknown(context);

    // Every block, in the order MLIR prints them: the extra entry block, one per MIR
    // block, then one panic block per `assert`, in block order.
    let arg_types: Vec<Type<'_>> = body
        .args()
        .map(|(_, d)| local_type(context, d.ty))
        .collect();
    let entry_args: Vec<(Type<'_>, Location<'_>)> =
        arg_types.iter().map(|&t| (t, unknown)).collect();
    let mut blocks = vec![Block::new(&entry_args)];
    for b in 0..body.blocks.len() {
        let args: Vec<(Type<'_>, Location<'_>)> = phis[node(BasicBlock(b as u32)) as usize]
            .iter()
            .map(|&l| (phi_type(context, body, l), unknown))
            .collect();
        blocks.push(Block::new(&args));
    }
    let mut panic_blocks = vec![None; n];
    let mut switch_blocks = vec![0; n];
    for (i, block) in body.blocks.iter().enumerate() {
        match &block.terminator.kind {
            TerminatorKind::Assert { .. } => {
                panic_blocks[i + 1] = Some(blocks.len());
                blocks.push(Block::new(&[]));
            }
            TerminatorKind::SwitchInt { targets, .. } if targets.len() > 1 => {
                switch_blocks[i + 1] = blocks.len();
                for _ in 1..targets.len() {
                    blocks.push(Block::new(&[]));
                }
            }
            _ => {}
        }
    }

    let mut e = Emitter {
        context,
        body,
        blocks: &blocks,
        block: 0,
        current: vec![None; body.locals.len()],
        undo: Vec::new(),
        undefined: vec![None; body.locals.len()],
        undefined_count: 0,
        containers: vec![None; body.locals.len()],
        phis,
        panic_blocks,
        switch_blocks,
        panic_site: 0,
        written_before_read: &linked.proven().written_before_read,
    };
    e.kernel(&idom);
    drop(e);

    let region = Region::new();
    for block in blocks {
        region.append_block(block);
    }
    let mut attributes = vec![(
        Identifier::new(context, offload_dialect::KERNEL_ATTR),
        Attribute::unit(context),
    )];
    if !body.fp_contract {
        attributes.push((
            Identifier::new(context, offload_dialect::NO_FP_CONTRACT_ATTR),
            Attribute::unit(context),
        ));
    }
    let has_shared = body.locals.iter().any(|l| matches!(l.ty, Ty::Shared(..)));
    if has_shared && linked.proven().first_phase_owns_its_slots {
        attributes.push((
            Identifier::new(context, offload_dialect::FIRST_PHASE_OWNS_SLOTS_ATTR),
            Attribute::unit(context),
        ));
    }
    let kernel = func::func(
        context,
        StringAttribute::new(context, &body.name),
        TypeAttribute::new(FunctionType::new(context, &arg_types, &[]).into()),
        region,
        &attributes,
        location,
    );
    let module = Module::new(location);
    module.body().append_operation(kernel);
    module
}

/// The type of the block argument carrying scalar local `l`.
fn phi_type<'c>(context: &'c Context, body: &Body, l: u32) -> Type<'c> {
    let ty = body.locals[l as usize]
        .ty
        .scalar()
        .expect("only scalar locals get block arguments");
    scalar_type(context, ty)
}

struct Emitter<'c, 'a> {
    context: &'c Context,
    body: &'a Body,
    /// Every block ([`build`] lists them); `block` is the one being filled.
    blocks: &'a [Block<'c>],
    block: usize,
    /// The SSA value each scalar local holds at the point being emitted.
    current: Vec<Option<Value<'c, 'a>>>,
    /// `(local, previous value)` for each assignment in the blocks on the dominator-tree
    /// path being emitted, undone when the walk leaves a block.
    undo: Vec<(usize, Option<Value<'c, 'a>>)>,
    /// A zero constant standing for a local read where no assignment reaches: only on
    /// paths the validator's assigned-before-use rule shows are never taken. They open
    /// the entry block; `undefined_count` of them so far.
    undefined: Vec<Option<Value<'c, 'a>>>,
    undefined_count: usize,
    /// The value of each region, slice, atomic and shared local.
    containers: Vec<Option<Value<'c, 'a>>>,
    /// The locals that are block arguments of each node (0: the entry, `b + 1`: `bb{b}`).
    phis: Vec<Vec<u32>>,
    /// The panic block of each node that ends in an `assert`, and the current block's
    /// panic site number.
    panic_blocks: Vec<Option<usize>>,
    panic_site: usize,
    /// The first of the blocks that test the second and later values of the switch
    /// ending each node (`targets - 1` of them; 0 where there are none).
    switch_blocks: Vec<usize>,
    /// The shared locals no read of which sees a slot no thread wrote.
    written_before_read: &'a [Local],
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
        | Rvalue::RegionExtent(..)
        | Rvalue::RegionEnd(..) => {}
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
            msg.operands().into_iter().for_each(operand);
        }
        TerminatorKind::Call { args, .. } => args.iter().for_each(operand),
        TerminatorKind::TileFill { origin, .. } => origin.iter().for_each(operand),
        TerminatorKind::Goto(_)
        | TerminatorKind::Barrier { .. }
        | TerminatorKind::TileMma { .. }
        | TerminatorKind::Return
        | TerminatorKind::Unreachable => {}
    }
}

/// Where each scalar local needs a block argument: the CFG, its dominators and
/// frontiers, and each local's assignments and upward-exposed reads.
fn place_phis(b: &Body) -> (Vec<Vec<u32>>, Vec<u32>) {
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

impl<'c, 'a> Emitter<'c, 'a> {
    fn location(&self, span: Span) -> Location<'c> {
        Location::new(
            self.context,
            &self.body.file,
            span.line as usize,
            span.column as usize,
        )
    }

    fn append(&self, operation: Operation<'c>) -> melior::ir::OperationRef<'c, 'a> {
        let block: &'a Block<'c> = &self.blocks[self.block];
        block.append_operation(operation)
    }

    /// Appends operation `name` with `operands`, one result of type `result` (none for
    /// `None`) and `attributes`; its result.
    fn op(
        &self,
        name: &str,
        operands: &[Value<'c, 'a>],
        result: Option<Type<'c>>,
        attributes: &[(&str, Attribute<'c>)],
        span: Span,
    ) -> Option<Value<'c, 'a>> {
        let attributes: Vec<(Identifier<'c>, Attribute<'c>)> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let mut builder = OperationBuilder::new(name, self.location(span))
            .add_operands(operands)
            .add_attributes(&attributes);
        if let Some(t) = result {
            builder = builder.add_results(&[t]);
        }
        let operation = builder
            .build()
            .expect("operations are built with their operands and results");
        let appended = self.append(operation);
        result.map(|_| {
            appended
                .result(0)
                .expect("the operation has one result")
                .into()
        })
    }

    /// Appends `name` with `operands` and one result of type `result`.
    fn value(
        &self,
        name: &str,
        operands: &[Value<'c, 'a>],
        result: Type<'c>,
        span: Span,
    ) -> Value<'c, 'a> {
        self.op(name, operands, Some(result), &[], span)
            .expect("a result was asked for")
    }

    fn scalar(&self, t: ScalarTy) -> Type<'c> {
        scalar_type(self.context, t)
    }

    fn index(&self) -> Type<'c> {
        Type::index(self.context)
    }

    /// The `arith.constant` of `c`.
    fn const_op(&self, c: Const, span: Span) -> Operation<'c> {
        let ty = self.scalar(c.ty());
        let value: Attribute<'c> = match c {
            Const::Bool(b) => IntegerAttribute::new(ty, b as i64).into(),
            Const::Int(v, t) => IntegerAttribute::new(ty, signed_bits(v as u128, t) as i64).into(),
            Const::Float(v, ScalarTy::F32) => {
                FloatAttribute::new(self.context, ty, (v as f32) as f64).into()
            }
            Const::Float(v, _) => FloatAttribute::new(self.context, ty, v).into(),
            Const::Item(..) => unreachable!("{}", offload_mir::LINKED_HOLD_NO_ITEMS),
        };
        OperationBuilder::new("arith.constant", self.location(span))
            .add_attributes(&[(Identifier::new(self.context, "value"), value)])
            .add_results(&[ty])
            .build()
            .expect("constants are built with their value and type")
    }

    /// The value scalar local `l` holds here.
    fn read(&mut self, l: Local) -> Value<'c, 'a> {
        if let Some(v) = self.current[l.index()] {
            return v;
        }
        if let Some(v) = self.undefined[l.index()] {
            return v;
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
        let entry: &'a Block<'c> = &self.blocks[0];
        let operation =
            entry.insert_operation(self.undefined_count, self.const_op(zero, Span::default()));
        self.undefined_count += 1;
        let v: Value<'c, 'a> = operation
            .result(0)
            .expect("a constant has one result")
            .into();
        self.undefined[l.index()] = Some(v);
        v
    }

    /// Scalar local `l` holds `value` from here on (in the blocks this one dominates).
    fn assign(&mut self, l: Local, value: Value<'c, 'a>) {
        let old = self.current[l.index()].replace(value);
        self.undo.push((l.index(), old));
    }

    /// The value of region, slice, atomic or shared local `l`.
    fn container(&self, l: Local) -> Value<'c, 'a> {
        self.containers[l.index()].expect("containers are arguments or shared arrays")
    }

    /// MIR block `b` and the values of the locals that are its block arguments.
    fn successor(&mut self, b: BasicBlock) -> (&'a Block<'c>, Vec<Value<'c, 'a>>) {
        let phis = std::mem::take(&mut self.phis[node(b) as usize]);
        let values: Vec<Value<'c, 'a>> = phis.iter().map(|&l| self.read(Local(l))).collect();
        self.phis[node(b) as usize] = phis;
        (&self.blocks[node(b) as usize], values)
    }

    /// Fills every block: a preorder walk of the dominator tree `idom`, so each read sees
    /// the value of the assignment that dominates it.
    fn kernel(&mut self, idom: &[u32]) {
        let b = self.body;
        let entry_span = b.blocks[0]
            .statements
            .first()
            .map(|s| s.span)
            .unwrap_or(b.blocks[0].terminator.span);
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
            self.block = v as usize;
            if v == 0 {
                self.entry(entry_span);
            } else {
                self.panic_site = sites[v as usize];
                self.mir_block(BasicBlock(v - 1));
            }
            for &c in children[v as usize].iter() {
                stack.push((c, false));
            }
        }
        debug_assert!(visited.iter().all(|&v| v));
    }

    /// The extra entry block: arguments are the locals' first values, shared arrays are
    /// created, then `bb0`.
    fn entry(&mut self, entry_span: Span) {
        let b = self.body;
        let entry: &'a Block<'c> = &self.blocks[0];
        for (i, decl) in b.locals.iter().enumerate().take(b.arg_count + 1).skip(1) {
            let argument: Value<'c, 'a> = entry
                .argument(i - 1)
                .expect("the entry block takes the kernel's arguments")
                .into();
            match decl.ty {
                Ty::Scalar(_) => self.assign(Local(i as u32), argument),
                _ => self.containers[i] = Some(argument),
            }
        }
        // Shared arrays are values like the container arguments.
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
            let shared = local_type(self.context, decl.ty);
            let written = self.written_before_read.contains(&Local(i as u32));
            let location = self.location(span);
            let array = build::alloc_shared(
                self.context,
                shared,
                len.map(Param::number),
                offset,
                written,
                location,
            );
            self.containers[i] = Some(self.result(array));
        }
        let (to, values) = self.successor(BasicBlock(0));
        self.append(cf::br(to, &values, self.location(entry_span)));
    }

    /// One MIR block, its block arguments first.
    fn mir_block(&mut self, id: BasicBlock) {
        let phis = std::mem::take(&mut self.phis[node(id) as usize]);
        let block: &'a Block<'c> = &self.blocks[self.block];
        for (i, &l) in phis.iter().enumerate() {
            let argument = block.argument(i).expect("one argument per φ").into();
            self.assign(Local(l), argument);
        }
        self.phis[node(id) as usize] = phis;
        let mir = &self.body.blocks[id.index()];
        for s in &mir.statements {
            self.statement(s);
        }
        self.terminator(&mir.terminator);
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
    fn index_value(&mut self, index: Local, span: Span) -> Value<'c, 'a> {
        let raw = self.read(index);
        self.convert(melior::dialect::arith::index_cast, raw, self.index(), span)
    }

    fn operand(&mut self, op: &Operand, span: Span) -> (Value<'c, 'a>, ScalarTy) {
        match op {
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.scalar_of(*p);
                let v = match p.index {
                    None => self.read(p.local),
                    Some(index) => {
                        let i = self.index_value(index, span);
                        let container = self.container(p.local);
                        self.result(build::load(
                            self.context,
                            container,
                            i,
                            self.scalar(ty),
                            self.location(span),
                        ))
                    }
                };
                (v, ty)
            }
            Operand::Const(c) => (self.constant(*c, span), c.ty()),
        }
    }

    fn constant(&mut self, c: Const, span: Span) -> Value<'c, 'a> {
        let operation = self.append(self.const_op(c, span));
        operation
            .result(0)
            .expect("a constant has one result")
            .into()
    }

    fn statement(&mut self, s: &Statement) {
        let span = s.span;
        let (value, _) = self.rvalue(&s.rvalue, span);
        match s.place.index {
            None => self.assign(s.place.local, value),
            Some(index) => {
                let i = self.index_value(index, span);
                let container = self.container(s.place.local);
                let location = self.location(span);
                self.append(build::store(self.context, value, container, i, location));
            }
        }
    }

    fn terminator(&mut self, t: &Terminator) {
        let span = t.span;
        let location = self.location(span);
        match &t.kind {
            TerminatorKind::Goto(b) => {
                let (to, values) = self.successor(*b);
                self.append(cf::br(to, &values, location));
            }
            TerminatorKind::Barrier { target } => {
                self.append(build::barrier(self.context, self.location(span)));
                let (to, values) = self.successor(*target);
                self.append(cf::br(to, &values, location));
            }
            TerminatorKind::TileFill {
                tile,
                src,
                origin,
                shape,
                target,
            } => {
                let origin = origin.map(|op| {
                    let (v, _) = self.operand(&op, span);
                    self.convert(melior::dialect::arith::index_cast, v, self.index(), span)
                });
                let [tile, src] = [*tile, *src].map(|l| self.container(l));
                let operands = [tile, src, origin[0], origin[1], origin[2]];
                self.append(build::barrier(self.context, location));
                let shape = shape.map(Param::number);
                self.append(build::tile_fill(self.context, operands, shape, location));
                self.append(build::barrier(self.context, location));
                let (to, values) = self.successor(*target);
                self.append(cf::br(to, &values, location));
            }
            TerminatorKind::TileMma {
                acc,
                a,
                b,
                shape,
                pitches,
                target,
            } => {
                let tiles = [*acc, *a, *b].map(|l| self.container(l));
                self.append(build::barrier(self.context, location));
                let (shape, pitches) = (shape.map(Param::number), pitches.map(Param::number));
                let mma = build::tile_mma(self.context, tiles, shape, pitches, location);
                self.append(mma);
                self.append(build::barrier(self.context, location));
                let (to, values) = self.successor(*target);
                self.append(cf::br(to, &values, location));
            }
            TerminatorKind::Call { .. } => unreachable!("linked bodies have no calls"),
            TerminatorKind::Return | TerminatorKind::Unreachable => {
                // MIR `unreachable` marks code no path reaches; returning there is sound.
                self.append(func::r#return(&[], location));
            }
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                // A chain of two-way branches, not a `cf.switch`: `canonicalize` folds
                // a branch on a constant before it merges blocks (see
                // `pipeline::CANONICALIZE`), which it cannot be told to do for a switch.
                // LLVM makes a switch of the chain again.
                let (d, ty) = self.operand(discr, span);
                let here = self.block;
                for (k, (v, b)) in targets.iter().enumerate() {
                    let (to, values) = self.successor(*b);
                    let (next, next_values) = if k + 1 == targets.len() {
                        self.successor(*otherwise)
                    } else {
                        (&self.blocks[self.switch_blocks[here] + k], Vec::new())
                    };
                    // A `bool` is its own test: its `false` arm is the branch's second.
                    let (test, (yes, yes_values), (no, no_values)) = match (ty, *v) {
                        (ScalarTy::Bool, 0) => (d, (next, next_values), (to, values)),
                        (ScalarTy::Bool, _) => (d, (to, values), (next, next_values)),
                        _ => {
                            let value = self.constant(Const::Int(signed_bits(*v, ty), ty), span);
                            let test = self.compare_ints(CmpiPredicate::Eq, d, value, span);
                            (test, (to, values), (next, next_values))
                        }
                    };
                    self.append(cf::cond_br(
                        self.context,
                        test,
                        yes,
                        no,
                        &yes_values,
                        &no_values,
                        location,
                    ));
                    if k + 1 < targets.len() {
                        self.block = self.switch_blocks[here] + k;
                    }
                }
                if targets.is_empty() {
                    let (to, values) = self.successor(*otherwise);
                    self.append(cf::br(to, &values, location));
                }
                self.block = here;
            }
            TerminatorKind::Assert { cond, msg, target } => {
                let (c, _) = self.operand(cond, span);
                let values: Vec<_> = (msg.operands().into_iter())
                    .map(|op| self.operand(op, span).0)
                    .collect();
                let site = self.panic_site;
                let (to, to_values) = self.successor(*target);
                let panic = self.panic_blocks[self.block].expect("asserts have a panic block");
                let panic_block: &'a Block<'c> = &self.blocks[panic];
                self.append(cf::cond_br(
                    self.context,
                    c,
                    to,
                    panic_block,
                    &to_values,
                    &[],
                    location,
                ));
                let here = self.block;
                self.block = panic;
                self.append(build::panic(self.context, &values, site, location));
                self.append(func::r#return(&[], location));
                self.block = here;
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
