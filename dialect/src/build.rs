//! Builders for the dialect's operations, one function per op, as melior's dialect
//! modules have for upstream dialects: each takes typed operands and attribute values
//! and returns the operation, ready to append to a block.

use crate::{AtomicKind, ops};
use melior::{
    Context,
    ir::{
        Attribute, Identifier, Location, Operation, Type, Value,
        attribute::{IntegerAttribute, StringAttribute},
        operation::OperationBuilder,
        r#type::IntegerType,
    },
};
use offload_mir::Position;

/// How `offload.shuffle` picks the lane a value comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShuffleMode {
    /// From the lane given.
    Lane = 0,
    /// From this lane's index xor the value given.
    Xor = 1,
}

impl ShuffleMode {
    /// The mode of a `mode` attribute's code.
    pub fn from_code(code: i64) -> Option<ShuffleMode> {
        [ShuffleMode::Lane, ShuffleMode::Xor]
            .into_iter()
            .find(|m| *m as i64 == code)
    }
}

/// How `offload.subgroup_reduce` combines two values: the `arith` operation it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Combine {
    AddF,
    AddI,
    MinNumF,
    MinSI,
    MinUI,
    MaxNumF,
    MaxSI,
    MaxUI,
}

impl Combine {
    /// The `arith` operation's name, which the `combine` attribute holds.
    pub fn name(self) -> &'static str {
        match self {
            Combine::AddF => "arith.addf",
            Combine::AddI => "arith.addi",
            Combine::MinNumF => "arith.minnumf",
            Combine::MinSI => "arith.minsi",
            Combine::MinUI => "arith.minui",
            Combine::MaxNumF => "arith.maxnumf",
            Combine::MaxSI => "arith.maxsi",
            Combine::MaxUI => "arith.maxui",
        }
    }

    /// The combination whose `arith` operation is `name`, if any.
    pub fn from_name(name: &str) -> Option<Combine> {
        use Combine::*;
        [AddF, AddI, MinNumF, MinSI, MinUI, MaxNumF, MaxSI, MaxUI]
            .into_iter()
            .find(|c| c.name() == name)
    }
}

fn int<'c>(context: &'c Context, value: i64) -> Attribute<'c> {
    IntegerAttribute::new(IntegerType::new(context, 64).into(), value).into()
}

fn operation<'c>(
    context: &'c Context,
    name: &str,
    location: Location<'c>,
    operands: &[Value<'c, '_>],
    results: &[Type<'c>],
    attributes: &[(&str, Attribute<'c>)],
) -> Operation<'c> {
    let attributes: Vec<(Identifier<'c>, Attribute<'c>)> = attributes
        .iter()
        .map(|(n, a)| (Identifier::new(context, n), *a))
        .collect();
    OperationBuilder::new(name, location)
        .add_operands(operands)
        .add_results(results)
        .add_attributes(&attributes)
        .build()
        .expect("the dialect's operations are built with the operands and results it declares")
}

/// `offload.region_index(region) -> index`.
pub fn region_index<'c>(
    context: &'c Context,
    region: Value<'c, '_>,
    location: Location<'c>,
) -> Operation<'c> {
    let index = Type::index(context);
    operation(
        context,
        ops::REGION_INDEX,
        location,
        &[region],
        &[index],
        &[],
    )
}

/// `offload.region_coord(region) {dim} -> index`.
pub fn region_coord<'c>(
    context: &'c Context,
    region: Value<'c, '_>,
    dim: u8,
    location: Location<'c>,
) -> Operation<'c> {
    let index = Type::index(context);
    let dim = [("dim", int(context, dim.into()))];
    operation(
        context,
        ops::REGION_COORD,
        location,
        &[region],
        &[index],
        &dim,
    )
}

/// `offload.extent(region) {dim} -> index`.
pub fn extent<'c>(
    context: &'c Context,
    region: Value<'c, '_>,
    dim: u8,
    location: Location<'c>,
) -> Operation<'c> {
    let index = Type::index(context);
    let dim = [("dim", int(context, dim.into()))];
    operation(context, ops::EXTENT, location, &[region], &[index], &dim)
}

/// `offload.margin(region) -> index`.
pub fn margin<'c>(
    context: &'c Context,
    region: Value<'c, '_>,
    location: Location<'c>,
) -> Operation<'c> {
    let index = Type::index(context);
    operation(context, ops::MARGIN, location, &[region], &[index], &[])
}

/// `offload.len(container) -> index`.
pub fn len<'c>(
    context: &'c Context,
    container: Value<'c, '_>,
    location: Location<'c>,
) -> Operation<'c> {
    let index = Type::index(context);
    operation(context, ops::LEN, location, &[container], &[index], &[])
}

/// `offload.load(container, index) -> elem`.
pub fn load<'c>(
    context: &'c Context,
    container: Value<'c, '_>,
    index: Value<'c, '_>,
    elem: Type<'c>,
    location: Location<'c>,
) -> Operation<'c> {
    operation(
        context,
        ops::LOAD,
        location,
        &[container, index],
        &[elem],
        &[],
    )
}

/// `offload.store(value, region, index)`.
pub fn store<'c>(
    context: &'c Context,
    value: Value<'c, '_>,
    region: Value<'c, '_>,
    index: Value<'c, '_>,
    location: Location<'c>,
) -> Operation<'c> {
    operation(
        context,
        ops::STORE,
        location,
        &[value, region, index],
        &[],
        &[],
    )
}

/// `offload.atomic_rmw(atomic, index, value) {kind} -> elem`: the previous value.
pub fn atomic_rmw<'c>(
    context: &'c Context,
    atomic: Value<'c, '_>,
    index: Value<'c, '_>,
    value: Value<'c, '_>,
    kind: AtomicKind,
    elem: Type<'c>,
    location: Location<'c>,
) -> Operation<'c> {
    let kind = [("kind", int(context, kind.code()))];
    operation(
        context,
        ops::ATOMIC_RMW,
        location,
        &[atomic, index, value],
        &[elem],
        &kind,
    )
}

/// `offload.atomic_cas(atomic, index, current, new) -> elem`: the previous value.
pub fn atomic_cas<'c>(
    context: &'c Context,
    operands: [Value<'c, '_>; 4],
    elem: Type<'c>,
    location: Location<'c>,
) -> Operation<'c> {
    operation(context, ops::ATOMIC_CAS, location, &operands, &[elem], &[])
}

/// `offload.panic(values...) {site}`.
pub fn panic<'c>(
    context: &'c Context,
    values: &[Value<'c, '_>],
    site: usize,
    location: Location<'c>,
) -> Operation<'c> {
    let site = i64::try_from(site).expect("panic sites number fewer than 2^63");
    let site = [("site", int(context, site))];
    operation(context, ops::PANIC, location, values, &[], &site)
}

/// `offload.thread_id`, `workgroup_id`, `workgroup_dim` or `workgroup_count` `{dim}`.
pub fn position<'c>(
    context: &'c Context,
    position: Position,
    dim: u8,
    location: Location<'c>,
) -> Operation<'c> {
    let name = match position {
        Position::Thread => ops::THREAD_ID,
        Position::Workgroup => ops::WORKGROUP_ID,
        Position::WorkgroupSize => ops::WORKGROUP_DIM,
        Position::WorkgroupCount => ops::WORKGROUP_COUNT,
    };
    let index = Type::index(context);
    let dim = [("dim", int(context, dim.into()))];
    operation(context, name, location, &[], &[index], &dim)
}

/// `offload.alloc_shared {len, offset} -> !offload.shared<T>`; `len` `None` for
/// dynamic shared memory.
pub fn alloc_shared<'c>(
    context: &'c Context,
    shared: Type<'c>,
    len: Option<u32>,
    offset: usize,
    written_before_read: bool,
    location: Location<'c>,
) -> Operation<'c> {
    let offset = i64::try_from(offset).expect("shared memory offsets fit in an i64");
    let mut attributes = vec![
        ("len", int(context, len.map_or(-1, i64::from))),
        ("offset", int(context, offset)),
    ];
    if written_before_read {
        attributes.push((crate::WRITTEN_BEFORE_READ_ATTR, Attribute::unit(context)));
    }
    operation(
        context,
        ops::ALLOC_SHARED,
        location,
        &[],
        &[shared],
        &attributes,
    )
}

/// `offload.barrier`.
pub fn barrier<'c>(context: &'c Context, location: Location<'c>) -> Operation<'c> {
    operation(context, ops::BARRIER, location, &[], &[], &[])
}

/// `offload.tile_fill(tile, src, row_len, row, col) {rows, cols}`: a block of a slice
/// into a shared tile.
pub fn tile_fill<'c>(
    context: &'c Context,
    operands: [Value<'c, '_>; 5],
    [rows, cols, pitch]: [u32; 3],
    location: Location<'c>,
) -> Operation<'c> {
    let extent = |v: u32| IntegerAttribute::new(IntegerType::new(context, 64).into(), v as i64);
    operation(
        context,
        ops::TILE_FILL,
        location,
        &operands,
        &[],
        &[
            ("rows", extent(rows).into()),
            ("cols", extent(cols).into()),
            ("pitch", extent(pitch).into()),
        ],
    )
}

/// `offload.tile_mma(acc, a, b) {m, n, k, ldc, lda, ldb}`: `acc += a × b` over shared
/// tiles whose rows are `ldc`, `lda` and `ldb` elements apart.
pub fn tile_mma<'c>(
    context: &'c Context,
    [acc, a, b]: [Value<'c, '_>; 3],
    [m, n, k]: [u32; 3],
    [ldc, lda, ldb]: [u32; 3],
    location: Location<'c>,
) -> Operation<'c> {
    let extent = |v: u32| IntegerAttribute::new(IntegerType::new(context, 64).into(), v as i64);
    operation(
        context,
        ops::TILE_MMA,
        location,
        &[acc, a, b],
        &[],
        &[
            ("m", extent(m).into()),
            ("n", extent(n).into()),
            ("k", extent(k).into()),
            ("ldc", extent(ldc).into()),
            ("lda", extent(lda).into()),
            ("ldb", extent(ldb).into()),
        ],
    )
}

/// `offload.subgroup_size -> index`.
pub fn subgroup_size<'c>(context: &'c Context, location: Location<'c>) -> Operation<'c> {
    let index = Type::index(context);
    operation(context, ops::SUBGROUP_SIZE, location, &[], &[index], &[])
}

/// `offload.subgroup_lane -> index`.
pub fn subgroup_lane<'c>(context: &'c Context, location: Location<'c>) -> Operation<'c> {
    let index = Type::index(context);
    operation(context, ops::SUBGROUP_LANE, location, &[], &[index], &[])
}

/// `offload.shuffle(value, lane) {mode} -> T`, `lane` an `i32`.
pub fn shuffle<'c>(
    context: &'c Context,
    value: Value<'c, '_>,
    lane: Value<'c, '_>,
    mode: ShuffleMode,
    elem: Type<'c>,
    location: Location<'c>,
) -> Operation<'c> {
    let mode = [("mode", int(context, mode as i64))];
    operation(
        context,
        ops::SHUFFLE,
        location,
        &[value, lane],
        &[elem],
        &mode,
    )
}

/// `offload.subgroup_reduce(value) {combine} -> T`.
pub fn subgroup_reduce<'c>(
    context: &'c Context,
    value: Value<'c, '_>,
    combine: Combine,
    elem: Type<'c>,
    location: Location<'c>,
) -> Operation<'c> {
    let combine = [(
        "combine",
        StringAttribute::new(context, combine.name()).into(),
    )];
    operation(
        context,
        ops::SUBGROUP_REDUCE,
        location,
        &[value],
        &[elem],
        &combine,
    )
}

/// `offload.ballot(predicate) -> i64`: the lanes whose predicate is true.
pub fn ballot<'c>(
    context: &'c Context,
    predicate: Value<'c, '_>,
    location: Location<'c>,
) -> Operation<'c> {
    let mask = IntegerType::new(context, 64).into();
    operation(context, ops::BALLOT, location, &[predicate], &[mask], &[])
}
