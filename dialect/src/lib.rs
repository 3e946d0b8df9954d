//! The `offload` MLIR dialect.
//!
//! The dialect is defined in IRDL (`offload.irdl.mlir` beside this file) and loaded at run
//! time into a melior [`Context`], so it needs no C++ and no TableGen. It has four types
//! and a handful of operations:
//!
//! | type | meaning |
//! |---|---|
//! | `!offload.region<T, "Strategy">` | a mutable region shared out among threads by a partitioning strategy |
//! | `!offload.slice<T>` | a read-only slice |
//! | `!offload.atomic<T>` | data every thread may update atomically |
//! | `!offload.shared<T>` | workgroup (shared) memory |
//!
//! | operation | meaning |
//! |---|---|
//! | `offload.region_index(region) -> index` | the (first) element index this thread owns |
//! | `offload.region_coord(region) {dim} -> index` | the thread's column (`dim` 0), row (1) or plane (2) in a region |
//! | `offload.extent(region) {dim} -> index` | a region's row length (`dim` 0), rows per plane (1) or planes (2) |
//! | `offload.margin(region) -> index` | how far an interior region's threads start from its edges |
//! | `offload.len(region or slice) -> index` | element count |
//! | `offload.load(container, index) -> T` | read one element (index already checked in MIR) |
//! | `offload.store(value, region, index)` | write one element |
//! | `offload.atomic_rmw(atomic, index, value) {kind}` | atomic read-modify-write; returns the previous value |
//! | `offload.atomic_cas(atomic, index, current, new)` | atomic compare-and-swap; returns the previous value |
//! | `offload.panic(values...) {site}` | stop this thread, reporting panic site `site` |
//! | `offload.thread_id`, `offload.workgroup_id`, `offload.workgroup_dim`, `offload.workgroup_count` `{dim}` | thread position |
//! | `offload.alloc_shared {len, offset}` | a kernel's shared array (`len` -1: dynamic shared memory) |
//! | `offload.barrier` | workgroup barrier |
//! | `offload.subgroup_size`, `offload.subgroup_lane` | subgroup width and this thread's lane |
//! | `offload.shuffle(value, lane) {mode}` | a value from another lane (`mode` 0: that lane, 1: own ^ lane) |
//! | `offload.subgroup_reduce(value) {combine}` | a value combined over the subgroup |
//! | `offload.ballot(i1) -> i64` | the lanes whose predicate is true |
//!
//! The ops print in MLIR's generic form (`"offload.len"(%0) : (...) -> index`), since
//! IRDL gives them no custom syntax.

use melior::{
    Context,
    ir::{Module, Type, operation::OperationLike},
    utility::load_irdl_dialects,
};
use offload_mir::Strategy;

pub mod build;

/// The dialect's IRDL definition.
pub const IRDL: &str = include_str!("offload.irdl.mlir");

/// Operation names, so passes match on constants rather than spelled-out strings.
pub mod ops {
    pub const REGION_INDEX: &str = "offload.region_index";
    pub const REGION_COORD: &str = "offload.region_coord";
    pub const EXTENT: &str = "offload.extent";
    pub const MARGIN: &str = "offload.margin";
    pub const LEN: &str = "offload.len";
    pub const LOAD: &str = "offload.load";
    pub const STORE: &str = "offload.store";
    pub const ATOMIC_RMW: &str = "offload.atomic_rmw";
    pub const ATOMIC_CAS: &str = "offload.atomic_cas";
    pub const PANIC: &str = "offload.panic";
    pub const THREAD_ID: &str = "offload.thread_id";
    pub const WORKGROUP_ID: &str = "offload.workgroup_id";
    pub const WORKGROUP_DIM: &str = "offload.workgroup_dim";
    pub const WORKGROUP_COUNT: &str = "offload.workgroup_count";
    pub const ALLOC_SHARED: &str = "offload.alloc_shared";
    pub const BARRIER: &str = "offload.barrier";
    pub const TILE_MMA: &str = "offload.tile_mma";
    pub const TILE_FILL: &str = "offload.tile_fill";
    pub const SUBGROUP_SIZE: &str = "offload.subgroup_size";
    pub const SUBGROUP_LANE: &str = "offload.subgroup_lane";
    pub const SHUFFLE: &str = "offload.shuffle";
    pub const SUBGROUP_REDUCE: &str = "offload.subgroup_reduce";
    pub const BALLOT: &str = "offload.ballot";
}

/// The attribute that marks a `func.func` as a kernel in the offload dialect stage.
pub const KERNEL_ATTR: &str = "offload.kernel";
/// The attribute that keeps a GPU lowering from fusing a kernel's float multiplies and
/// adds into fused multiply-adds (MIR's `fp_contract off`).
pub const NO_FP_CONTRACT_ATTR: &str = "offload.no_fp_contract";
/// The attribute on a kernel with shared memory whose threads, before its first barrier,
/// touch shared memory only at their own slots (`offload_mir::safety::Proven`): the zero
/// fill of its shared memory at the start then needs no barrier after it. Without it,
/// the fill ends with one.
pub const FIRST_PHASE_OWNS_SLOTS_ATTR: &str = "offload.first_phase_owns_slots";
/// The attribute on an `offload.alloc_shared` whose memory no read sees where no thread
/// wrote (`offload_mir::safety::Proven::written_before_read`): the lowering does not zero
/// it when a workgroup starts.
pub const WRITTEN_BEFORE_READ_ATTR: &str = "offload.written_before_read";
/// The `kind` of `offload.atomic_rmw`: MLIR's `arith::AtomicRMWKind`, whose integer codes
/// `memref.atomic_rmw` takes unchanged.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum AtomicKind {
    AddF = 0,
    AddI = 1,
    AndI = 2,
    Assign = 3,
    MaxNumF = 5,
    MaxS = 6,
    MaxU = 7,
    MinNumF = 9,
    MinS = 10,
    MinU = 11,
    OrI = 14,
    XorI = 15,
}

impl AtomicKind {
    /// Every kind, for reading a code back.
    pub const ALL: [AtomicKind; 12] = [
        AtomicKind::AddF,
        AtomicKind::AddI,
        AtomicKind::AndI,
        AtomicKind::Assign,
        AtomicKind::MaxNumF,
        AtomicKind::MaxS,
        AtomicKind::MaxU,
        AtomicKind::MinNumF,
        AtomicKind::MinS,
        AtomicKind::MinU,
        AtomicKind::OrI,
        AtomicKind::XorI,
    ];

    /// The code in the `kind` attribute.
    pub fn code(self) -> i64 {
        self as i64
    }

    /// The kind of a `kind` attribute's code.
    pub fn from_code(code: i64) -> Option<AtomicKind> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// Loads the dialect into `context`. Call once per context before parsing offload IR.
pub fn load(context: &Context) -> Result<(), DialectError> {
    let module = Module::parse(context, IRDL).ok_or(DialectError::DoesNotParse)?;
    if !module.as_operation().verify() {
        return Err(DialectError::DoesNotVerify);
    }
    if !load_irdl_dialects(&module) {
        return Err(DialectError::Refused);
    }
    Ok(())
}

/// Why the dialect could not be loaded: each is a build of MLIR this crate does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    #[error("the offload dialect's IRDL does not parse")]
    DoesNotParse,
    #[error("the offload dialect's IRDL does not verify")]
    DoesNotVerify,
    #[error("MLIR refused to load the offload dialect")]
    Refused,
}

/// One of the dialect's types, with its parameters typed: an element type and, for a
/// region, its partitioning strategy.
///
/// IRDL types have no C constructor and no C API for their parameters, but their printed
/// form is canonical: [`OffloadType::to_type`] and [`OffloadType::of`] are the one place
/// that text is written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadType<'c> {
    Region { elem: Type<'c>, strategy: Strategy },
    Slice { elem: Type<'c> },
    Atomic { elem: Type<'c> },
    Shared { elem: Type<'c> },
}

/// A region type whose strategy is none of [`Strategy`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown partitioning strategy `{0}`")]
pub struct UnknownStrategy(pub String);

impl<'c> OffloadType<'c> {
    /// The element type.
    pub fn elem(self) -> Type<'c> {
        match self {
            OffloadType::Region { elem, .. }
            | OffloadType::Slice { elem }
            | OffloadType::Atomic { elem }
            | OffloadType::Shared { elem } => elem,
        }
    }

    /// The type in `context`, which must have the dialect loaded.
    pub fn to_type(self, context: &'c Context) -> Type<'c> {
        let spelling = match self {
            OffloadType::Region { elem, strategy } => {
                format!("!offload.region<{elem}, \"{strategy}\">")
            }
            OffloadType::Slice { elem } => format!("!offload.slice<{elem}>"),
            OffloadType::Atomic { elem } => format!("!offload.atomic<{elem}>"),
            OffloadType::Shared { elem } => format!("!offload.shared<{elem}>"),
        };
        Type::parse(context, &spelling)
            .expect("the offload dialect is loaded and spells its own types")
    }

    /// `ty` as one of the dialect's types; `None` for any other type.
    pub fn of(
        context: &'c Context,
        ty: Type<'c>,
    ) -> Result<Option<OffloadType<'c>>, UnknownStrategy> {
        let text = ty.to_string();
        let Some((name, params)) = text
            .strip_prefix("!offload.")
            .and_then(|t| t.strip_suffix('>'))
            .and_then(|t| t.split_once('<'))
        else {
            return Ok(None);
        };
        let elem_of = |text: &str| Type::parse(context, text.trim());
        Ok(match name {
            "region" => {
                let Some((elem, strategy)) = params.rsplit_once(',') else {
                    return Ok(None);
                };
                let Some(strategy) = strategy
                    .trim()
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                else {
                    return Ok(None);
                };
                let strategy = Strategy::from_name(strategy)
                    .ok_or_else(|| UnknownStrategy(strategy.to_string()))?;
                elem_of(elem).map(|elem| OffloadType::Region { elem, strategy })
            }
            "slice" => elem_of(params).map(|elem| OffloadType::Slice { elem }),
            "atomic" => elem_of(params).map(|elem| OffloadType::Atomic { elem }),
            "shared" => elem_of(params).map(|elem| OffloadType::Shared { elem }),
            _ => None,
        })
    }
}
