//! Building operations at a point in the IR: [`Inserter`] places melior's typed builders'
//! operations before an anchor or at a block's end, and hands back raw values for the
//! passes' handle-level edits.

use super::PassError;
use melior::dialect::{arith, func, memref, scf};
use melior::{
    Context,
    ir::{
        Attribute, Identifier, Location, Operation, Type, Value, operation::OperationBuilder,
        r#type::MemRefType, r#type::TypeLike,
    },
};
use mlir_sys::*;
use offload_dialect::AtomicKind;

/// melior's builder of a binary `arith` operation (`arith::addi`, ...).
pub type Binary<'c> = for<'x, 'y> fn(Value<'c, 'x>, Value<'c, 'y>, Location<'c>) -> Operation<'c>;

/// melior's builder of an `arith` conversion to a given type (`arith::extsi`, ...).
pub type Conversion<'c> = for<'x> fn(Value<'c, 'x>, Type<'c>, Location<'c>) -> Operation<'c>;

/// `memref<?x…xelem>` of `rank` dynamic dimensions, in memory space `space` if given.
pub fn dynamic_memref<'c>(
    elem: Type<'c>,
    rank: usize,
    space: Option<Attribute<'c>>,
) -> melior::ir::r#type::MemRefType<'c> {
    // SAFETY: a constant of the C API.
    let dynamic = unsafe { mlirShapedTypeGetDynamicSize() };
    melior::ir::r#type::MemRefType::new(elem, &vec![dynamic; rank], None, space)
}

/// A rewriter positioned before one anchor operation, or at the end of a block.
pub struct Inserter<'c> {
    pub context: &'c Context,
    /// The operation new ones go before; null to append to `block`.
    anchor: MlirOperation,
    block: MlirBlock,
    pub location: Location<'c>,
}

impl<'c> Inserter<'c> {
    /// # Safety
    ///
    /// `anchor` must be a live operation inside a block.
    pub unsafe fn before(context: &'c Context, anchor: MlirOperation) -> Self {
        let location = unsafe { Location::from_raw(mlirOperationGetLocation(anchor)) };
        Inserter {
            context,
            anchor,
            block: unsafe { mlirOperationGetBlock(anchor) },
            location,
        }
    }

    /// # Safety
    ///
    /// `block` must be a live block.
    pub unsafe fn at_end(context: &'c Context, block: MlirBlock, location: Location<'c>) -> Self {
        Inserter {
            context,
            anchor: MlirOperation {
                ptr: std::ptr::null_mut(),
            },
            block,
            location,
        }
    }

    /// Puts a built operation (owned by no block) at the rewriter's position.
    fn insert(&self, raw: MlirOperation) {
        // SAFETY: the anchor (or block) is live, per the constructors' contracts.
        unsafe {
            if self.anchor.ptr.is_null() {
                mlirBlockAppendOwnedOperation(self.block, raw);
            } else {
                mlirBlockInsertOwnedOperationBefore(self.block, self.anchor, raw);
            }
        }
    }

    /// Inserts `op` at the rewriter's position and returns it.
    pub fn place_op(&self, op: Operation<'c>) -> MlirOperation {
        let raw = op.into_raw();
        self.insert(raw);
        raw
    }

    /// Inserts `op` at the rewriter's position and returns its results.
    pub fn place(&self, op: Operation<'c>) -> Vec<MlirValue> {
        let raw = op.into_raw();
        self.insert(raw);
        // SAFETY: `raw` was just inserted and is live.
        unsafe {
            (0..mlirOperationGetNumResults(raw))
                .map(|i| mlirOperationGetResult(raw, i))
                .collect()
        }
    }

    /// MLIR's `index` type.
    pub fn index(&self) -> Type<'c> {
        Type::index(self.context)
    }

    /// The signless integer type of `bits` bits.
    pub fn int(&self, bits: u32) -> Type<'c> {
        melior::ir::r#type::IntegerType::new(self.context, bits).into()
    }

    /// An `i64` integer attribute.
    pub fn i64_attr(&self, value: i64) -> Attribute<'c> {
        melior::ir::attribute::IntegerAttribute::new(self.int(64), value).into()
    }

    /// A boolean attribute.
    pub fn bool_attr(&self, value: bool) -> Attribute<'c> {
        melior::ir::attribute::BoolAttribute::new(self.context, value).into()
    }

    /// `memref<?x…xelem>` of `rank` dynamic dimensions, in memory space `space` if given.
    pub fn memref(&self, elem: Type<'c>, rank: usize, space: Option<Attribute<'c>>) -> Type<'c> {
        dynamic_memref(elem, rank, space).into()
    }

    /// An attribute given by its text: the dialects' enum attributes (`#gpu<dim x>`),
    /// which have no C constructor. Builtin types and attributes are built, not parsed.
    pub fn attr(&self, text: &str) -> Attribute<'c> {
        Attribute::parse(self.context, text)
            .unwrap_or_else(|| panic!("internal attribute `{text}` does not parse"))
    }

    /// The value a raw handle names, for melior's builders.
    pub fn value(&self, raw: MlirValue) -> Value<'c, '_> {
        // SAFETY: values handed to a rewriter are live (this module's contract).
        unsafe { Value::from_raw(raw) }
    }

    fn values(&self, raw: &[MlirValue]) -> Vec<Value<'c, '_>> {
        raw.iter().map(|&v| self.value(v)).collect()
    }

    /// An `arith.constant` integer (or `index`) of type `ty`.
    pub fn constant(&self, ty: Type<'c>, value: i64) -> MlirValue {
        let value = melior::ir::attribute::IntegerAttribute::new(ty, value).into();
        self.place(arith::constant(self.context, value, self.location))[0]
    }

    /// A binary `arith` operation by melior's builder (`arith::addi`, ...).
    pub fn arith(&self, build: Binary<'c>, a: MlirValue, b: MlirValue) -> MlirValue {
        self.place(build(self.value(a), self.value(b), self.location))[0]
    }

    /// `a` converted to `to` by melior's `arith` conversion `build` (`arith::extui`, ...).
    pub fn convert(&self, build: Conversion<'c>, a: MlirValue, to: Type<'c>) -> MlirValue {
        self.place(build(self.value(a), to, self.location))[0]
    }

    /// `arith.cmpi`.
    pub fn cmpi(&self, predicate: arith::CmpiPredicate, a: MlirValue, b: MlirValue) -> MlirValue {
        let (a, b) = (self.value(a), self.value(b));
        self.place(arith::cmpi(self.context, predicate, a, b, self.location))[0]
    }

    /// `arith.select`: `if_true` where `condition` holds, else `if_false`.
    pub fn select(
        &self,
        condition: MlirValue,
        if_true: MlirValue,
        if_false: MlirValue,
    ) -> MlirValue {
        let (c, t, f) = (
            self.value(condition),
            self.value(if_true),
            self.value(if_false),
        );
        self.place(arith::select(c, t, f, self.location))[0]
    }

    /// `memref.load` of an `elem` from `memref` at `indices`. The element type is given,
    /// not inferred as melior's `memref::load` does: a conversion may load from a value
    /// whose type it retypes to a memref only later.
    pub fn load(&self, memref: MlirValue, indices: &[MlirValue], elem: Type<'c>) -> MlirValue {
        let op = OperationBuilder::new("memref.load", self.location)
            .add_operands(&[self.value(memref)])
            .add_operands(&self.values(indices))
            .add_results(&[elem])
            .build()
            .expect("a load of a memref at its rank's indices is well formed");
        self.place(op)[0]
    }

    /// `memref.store` of `value` into `memref` at `indices`.
    pub fn store(&self, value: MlirValue, memref: MlirValue, indices: &[MlirValue]) {
        let indices = self.values(indices);
        let (value, memref) = (self.value(value), self.value(memref));
        self.place(memref::store(value, memref, &indices, self.location));
    }

    /// `memref.dim`: the size of `memref`'s dimension `dim` (an `index`).
    pub fn dim(&self, memref: MlirValue, dim: MlirValue) -> MlirValue {
        self.place(memref::dim(
            self.value(memref),
            self.value(dim),
            self.location,
        ))[0]
    }

    /// `memref.dealloc`.
    pub fn dealloc(&self, memref: MlirValue) {
        self.place(memref::dealloc(self.value(memref), self.location));
    }

    /// `func.return` of nothing.
    pub fn return_nothing(&self) {
        self.place(func::r#return(&[], self.location));
    }

    /// `scf.yield` of nothing.
    pub fn yield_nothing(&self) {
        self.place(scf::r#yield(&[], self.location));
    }

    /// `memref.cast` of `value` to the memref type `to`.
    pub fn cast(&self, value: MlirValue, to: Type<'c>) -> MlirValue {
        self.place(memref::cast(
            self.value(value),
            memref_type(to),
            self.location,
        ))[0]
    }

    /// `memref.view`: `sizes` elements of `ty` at `byte_shift` bytes into the byte
    /// buffer `source`. Not melior's `memref::view`, which also attaches an
    /// `operand_segment_sizes` attribute the operation does not have.
    pub fn view(
        &self,
        source: MlirValue,
        byte_shift: MlirValue,
        sizes: &[MlirValue],
        ty: Type<'c>,
    ) -> MlirValue {
        let op = OperationBuilder::new("memref.view", self.location)
            .add_operands(&[self.value(source), self.value(byte_shift)])
            .add_operands(&self.values(sizes))
            .add_results(&[ty])
            .build()
            .expect("a view of a byte buffer is well formed");
        self.place(op)[0]
    }

    /// `memref.get_global` of the global `name`, of type `ty`.
    pub fn get_global(&self, name: &str, ty: Type<'c>) -> MlirValue {
        let op = memref::get_global(self.context, name, memref_type(ty), self.location);
        self.place(op)[0]
    }

    /// `memref.atomic_rmw` of `kind` with `value` on `memref` at `index`; returns the
    /// element as it was before, of type `ty`. (melior has no builder for it.)
    pub fn atomic_rmw(
        &self,
        kind: AtomicKind,
        value: MlirValue,
        memref: MlirValue,
        index: MlirValue,
        ty: Type<'c>,
    ) -> MlirValue {
        let kind = ("kind", self.i64_attr(kind.code()));
        let op = OperationBuilder::new("memref.atomic_rmw", self.location)
            .add_operands(&self.values(&[value, memref, index]))
            .add_results(&[ty])
            .add_attributes(&[(Identifier::new(self.context, kind.0), kind.1)])
            .build()
            .expect("an atomic update of an element is well formed");
        self.place(op)[0]
    }

    /// Builds an operation, inserts it before the anchor and returns its results; an
    /// operation MLIR cannot create is refused at the anchor.
    pub fn op(
        &self,
        name: &str,
        operands: &[MlirValue],
        results: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Result<Vec<MlirValue>, PassError> {
        let operands: Vec<Value> = operands
            .iter()
            .map(|v| unsafe { Value::from_raw(*v) })
            .collect();
        let attributes: Vec<(Identifier, Attribute)> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let op: Operation = OperationBuilder::new(name, self.location)
            .add_operands(&operands)
            .add_results(results)
            .add_attributes(&attributes)
            .build()
            .map_err(|e| PassError {
                at: Some(self.location.to_raw()),
                message: format!("`{name}` could not be built: {e}"),
            })?;
        Ok(self.place(op))
    }

    /// `llvm.call_intrinsic` of the LLVM intrinsic `name` (whose properties, such as
    /// being convergent, LLVM knows) on `operands`, giving `results`.
    pub fn call_intrinsic(
        &self,
        name: &str,
        operands: &[MlirValue],
        results: &[Type<'c>],
    ) -> Result<Vec<MlirValue>, PassError> {
        use melior::ir::attribute::{DenseI32ArrayAttribute, StringAttribute};
        let count = i32::try_from(operands.len()).expect("few operands");
        self.op(
            "llvm.call_intrinsic",
            operands,
            results,
            &[
                ("intrin", StringAttribute::new(self.context, name).into()),
                ("fastmathFlags", self.attr("#llvm.fastmath<none>")),
                (
                    "op_bundle_sizes",
                    DenseI32ArrayAttribute::new(self.context, &[]).into(),
                ),
                (
                    "operandSegmentSizes",
                    DenseI32ArrayAttribute::new(self.context, &[count, 0]).into(),
                ),
            ],
        )
    }

    /// `memref.generic_atomic_rmw` that stores `new` where the element equals `current`;
    /// returns the previous element.
    pub fn compare_and_swap(
        &self,
        memref: MlirValue,
        index: MlirValue,
        current: MlirValue,
        new: MlirValue,
        ty: Type<'c>,
    ) -> MlirValue {
        use melior::ir::{Block, BlockLike, Region, RegionLike};
        let block = Block::new(&[(ty, self.location)]);
        let previous = block.argument(0).expect("the block has one argument");
        let current = self.value(current);
        let same = block.append_operation(if ty.is_float() {
            arith::cmpf(
                self.context,
                arith::CmpfPredicate::Oeq,
                previous.into(),
                current,
                self.location,
            )
        } else {
            arith::cmpi(
                self.context,
                arith::CmpiPredicate::Eq,
                previous.into(),
                current,
                self.location,
            )
        });
        let chosen = block.append_operation(arith::select(
            same.result(0).expect("one result").into(),
            self.value(new),
            previous.into(),
            self.location,
        ));
        block.append_operation(
            OperationBuilder::new("memref.atomic_yield", self.location)
                .add_operands(&[chosen.result(0).expect("one result").into()])
                .build()
                .expect("a yield is well formed"),
        );
        let region = Region::new();
        region.append_block(block);
        let op: Operation = OperationBuilder::new("memref.generic_atomic_rmw", self.location)
            .add_operands(&[unsafe { Value::from_raw(memref) }, unsafe {
                Value::from_raw(index)
            }])
            .add_results(&[ty])
            .add_regions([region])
            .build()
            .expect("an atomic update is well formed");
        self.place(op)[0]
    }

    /// `arith.constant` zero of the integer or float type `ty`.
    pub fn zero(&self, ty: Type<'c>) -> MlirValue {
        if ty.is_float() {
            let zero = melior::ir::attribute::FloatAttribute::new(self.context, ty, 0.0).into();
            self.place(arith::constant(self.context, zero, self.location))[0]
        } else {
            self.constant(ty, 0)
        }
    }

    /// `scf.for %k = begin to end step step { memref.store 0, memref[%k] }`: zeroes the
    /// elements `begin`, `begin + step`, ... below `end` of the 1-D `memref` of `elem`s.
    pub fn zero_fill(&self, memref: MlirValue, elem: Type<'c>, [begin, end, step]: [MlirValue; 3]) {
        use melior::ir::{Block, BlockLike, Region, RegionLike};
        let zero = self.zero(elem);
        let body = Block::new(&[(self.index(), self.location)]);
        let k = body.argument(0).expect("the loop body takes its counter");
        body.append_operation(memref::store(
            self.value(zero),
            self.value(memref),
            &[k.into()],
            self.location,
        ));
        body.append_operation(scf::r#yield(&[], self.location));
        let region = Region::new();
        region.append_block(body);
        let op = OperationBuilder::new("scf.for", self.location)
            .add_operands(&self.values(&[begin, end, step]))
            .add_regions([region])
            .build()
            .expect("a loop of index bounds carrying nothing is valid");
        self.place(op);
    }

    /// `scf.for %k = begin to end step step iter_args(inits)`, whose body `body` builds
    /// from the counter and the carried values, returning the values to carry on; gives
    /// the loop's results (the last values carried).
    pub fn for_loop(
        &self,
        [begin, end, step]: [MlirValue; 3],
        inits: &[MlirValue],
        body: impl FnOnce(&Inserter<'c>, MlirValue, &[MlirValue]) -> Vec<MlirValue>,
    ) -> Vec<MlirValue> {
        use melior::ir::{Block, Region, RegionLike};
        // SAFETY: the values are live, as the caller's operands are.
        let types: Vec<Type<'c>> = (inits.iter())
            .map(|v| unsafe { Type::from_raw(mlirValueGetType(*v)) })
            .collect();
        let mut arguments = vec![(self.index(), self.location)];
        arguments.extend(types.iter().map(|t| (*t, self.location)));
        let block = Block::new(&arguments);
        let raw = block.to_raw();
        // SAFETY: `raw` is the live block just made; it is moved into the region below,
        // which keeps it alive.
        let inner = unsafe { Inserter::at_end(self.context, raw, self.location) };
        let argument = |i: usize| unsafe { mlirBlockGetArgument(raw, i as isize) };
        let carried: Vec<MlirValue> = (1..=inits.len()).map(argument).collect();
        let next = body(&inner, argument(0), &carried);
        inner.place(scf::r#yield(&inner.values(&next), self.location));
        let region = Region::new();
        region.append_block(block);
        let mut operands = vec![begin, end, step];
        operands.extend_from_slice(inits);
        let op = OperationBuilder::new("scf.for", self.location)
            .add_operands(&self.values(&operands))
            .add_results(&types)
            .add_regions([region])
            .build()
            .expect("a loop of index bounds is valid");
        self.place(op)
    }

    /// `scf.if cond` whose branches `then` and `otherwise` build, each returning the
    /// values it yields (of `types`); gives the values yielded.
    pub fn if_else(
        &self,
        cond: MlirValue,
        types: &[Type<'c>],
        then: impl FnOnce(&Inserter<'c>) -> Vec<MlirValue>,
        otherwise: impl FnOnce(&Inserter<'c>) -> Vec<MlirValue>,
    ) -> Vec<MlirValue> {
        use melior::ir::{Block, Region, RegionLike};
        let branch = |build: &dyn Fn(&Inserter<'c>) -> Vec<MlirValue>| {
            let block = Block::new(&[]);
            // SAFETY: the block is live; it moves into the region, which keeps it.
            let inner = unsafe { Inserter::at_end(self.context, block.to_raw(), self.location) };
            let values = build(&inner);
            inner.place(scf::r#yield(&inner.values(&values), self.location));
            let region = Region::new();
            region.append_block(block);
            region
        };
        let (then, otherwise) = (
            std::cell::Cell::new(Some(then)),
            std::cell::Cell::new(Some(otherwise)),
        );
        let then = branch(&|b| then.take().expect("built once")(b));
        let otherwise = branch(&|b| otherwise.take().expect("built once")(b));
        let op = OperationBuilder::new("scf.if", self.location)
            .add_operands(&self.values(&[cond]))
            .add_results(types)
            .add_regions([then, otherwise])
            .build()
            .expect("a branch on an `i1` is valid");
        self.place(op)
    }

    /// `arith.constant` of an `index`.
    pub fn index_constant(&self, v: i64) -> MlirValue {
        self.constant(self.index(), v)
    }

    /// `arith.constant` of an `i64`.
    pub fn i64_constant(&self, v: i64) -> MlirValue {
        self.constant(self.int(64), v)
    }
}

/// `ty` as melior's memref type, for its builders; the passes give only memref types.
fn memref_type(ty: Type<'_>) -> MemRefType<'_> {
    MemRefType::try_from(ty).expect("a memref type")
}
