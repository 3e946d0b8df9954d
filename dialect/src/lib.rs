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

/// The codes of the `arith.cmpi` and `arith.cmpf` predicates the conversions build.
pub mod predicate {
    /// `arith.cmpi eq`.
    pub const CMPI_EQ: i64 = 0;
    /// `arith.cmpi ne`.
    pub const CMPI_NE: i64 = 1;
    /// `arith.cmpf oeq` (ordered and equal).
    pub const CMPF_OEQ: i64 = 1;
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

/// A region or slice type, read back from its printed form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerType {
    Region { elem: String, strategy: String },
    Slice { elem: String },
    Atomic { elem: String },
    Shared { elem: String },
}

impl ContainerType {
    /// The type's spelling, which [`parse_container_type`] reads back.
    pub fn spelling(&self) -> String {
        match self {
            ContainerType::Region { elem, strategy } => {
                format!("!offload.region<{elem}, \"{strategy}\">")
            }
            ContainerType::Slice { elem } => format!("!offload.slice<{elem}>"),
            ContainerType::Atomic { elem } => format!("!offload.atomic<{elem}>"),
            ContainerType::Shared { elem } => format!("!offload.shared<{elem}>"),
        }
    }

    /// The type in `context`, which must have the dialect loaded. IRDL types have no C
    /// constructor, so this is the one place that makes them, from their spelling.
    pub fn to_type<'c>(&self, context: &'c Context) -> Type<'c> {
        Type::parse(context, &self.spelling())
            .expect("the offload dialect is loaded and spells its own types")
    }
}

/// Reads `!offload.region<T, "S">` or `!offload.slice<T>` from a type's text. IRDL types
/// have no C API for their parameters, and their printed form is canonical, so the text
/// is the reliable way in.
pub fn parse_container_type(text: &str) -> Option<ContainerType> {
    if let Some(inner) = text
        .strip_prefix("!offload.region<")
        .and_then(|t| t.strip_suffix('>'))
    {
        let (elem, strategy) = inner.split_once(',')?;
        let strategy = strategy.trim().strip_prefix('"')?.strip_suffix('"')?;
        return Some(ContainerType::Region {
            elem: elem.trim().to_string(),
            strategy: strategy.to_string(),
        });
    }
    if let Some(elem) = text
        .strip_prefix("!offload.atomic<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return Some(ContainerType::Atomic {
            elem: elem.trim().to_string(),
        });
    }
    if let Some(elem) = text
        .strip_prefix("!offload.shared<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return Some(ContainerType::Shared {
            elem: elem.trim().to_string(),
        });
    }
    let elem = text.strip_prefix("!offload.slice<")?.strip_suffix('>')?;
    Some(ContainerType::Slice {
        elem: elem.trim().to_string(),
    })
}
