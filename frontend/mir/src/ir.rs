//! The data model: locals and blocks in arenas, addressed by typed indices.

pub use crate::intrinsic::{Intrinsic, Meaning, Signature};
pub use crate::strategy::{Param, Strategy};
use std::fmt;

/// A local variable: `_0` is the return place, then the arguments, then the rest.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Local(pub u32);

/// A basic block, `bb0` being the entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BasicBlock(pub u32);

impl Local {
    pub const RETURN: Local = Local(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl BasicBlock {
    pub const ENTRY: BasicBlock = BasicBlock(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "_{}", self.0)
    }
}

impl fmt::Display for BasicBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bb{}", self.0)
    }
}

/// A position in the kernel's Rust source (1-based line and column).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A scalar type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScalarTy {
    Bool,
    I8,
    I16,
    I32,
    I64,
    Isize,
    U8,
    U16,
    U32,
    U64,
    Usize,
    F32,
    F64,
    /// IEEE binary16 and bfloat16, as the `half` crate's `f16` and `bf16`: each
    /// operation's result is rounded to the type.
    F16,
    Bf16,
}

impl ScalarTy {
    pub const ALL: [ScalarTy; 15] = [
        ScalarTy::Bool,
        ScalarTy::I8,
        ScalarTy::I16,
        ScalarTy::I32,
        ScalarTy::I64,
        ScalarTy::Isize,
        ScalarTy::U8,
        ScalarTy::U16,
        ScalarTy::U32,
        ScalarTy::U64,
        ScalarTy::Usize,
        ScalarTy::F32,
        ScalarTy::F64,
        ScalarTy::F16,
        ScalarTy::Bf16,
    ];

    /// The Rust spelling, which is also the MIR text spelling.
    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::Bool => "bool",
            ScalarTy::I8 => "i8",
            ScalarTy::I16 => "i16",
            ScalarTy::I32 => "i32",
            ScalarTy::I64 => "i64",
            ScalarTy::Isize => "isize",
            ScalarTy::U8 => "u8",
            ScalarTy::U16 => "u16",
            ScalarTy::U32 => "u32",
            ScalarTy::U64 => "u64",
            ScalarTy::Usize => "usize",
            ScalarTy::F32 => "f32",
            ScalarTy::F64 => "f64",
            ScalarTy::F16 => "f16",
            ScalarTy::Bf16 => "bf16",
        }
    }

    pub fn from_name(name: &str) -> Option<ScalarTy> {
        ScalarTy::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarTy::F32 | ScalarTy::F64 | ScalarTy::F16 | ScalarTy::Bf16
        )
    }

    /// `f16` or `bf16`: floats of 16 bits, which have arithmetic, comparisons and
    /// conversions but not the math functions of `f32` and `f64`.
    pub const fn is_half(self) -> bool {
        matches!(self, ScalarTy::F16 | ScalarTy::Bf16)
    }

    pub fn is_integer(self) -> bool {
        !self.is_float() && self != ScalarTy::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 | ScalarTy::I64 | ScalarTy::Isize
        )
    }

    /// The unsigned integer type of an integer's width (`abs_diff`'s result, the
    /// arithmetic of a loop's trip count): `u8` for `i8`, `usize` for `isize`.
    pub fn unsigned(self) -> ScalarTy {
        match self.bits() {
            8 => ScalarTy::U8,
            16 => ScalarTy::U16,
            32 => ScalarTy::U32,
            _ if self == ScalarTy::Isize || self == ScalarTy::Usize => ScalarTy::Usize,
            _ => ScalarTy::U64,
        }
    }

    /// Width in bits; `bool` is 1, pointer-sized integers are 64.
    pub fn bits(self) -> u32 {
        match self {
            ScalarTy::Bool => 1,
            ScalarTy::I8 | ScalarTy::U8 => 8,
            ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::Bf16 => 16,
            ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 32,
            _ => 64,
        }
    }

    /// Size in bytes of one element in memory.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarTy::Bool => 1,
            other => other.bits() as usize / 8,
        }
    }
}

impl fmt::Display for ScalarTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The type of a local.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Unit,
    Scalar(ScalarTy),
    Region(ScalarTy, Strategy),
    Slice(ScalarTy),
    /// Host data every thread may update with atomic operations.
    Atomic(ScalarTy),
    /// Workgroup (shared) memory local to a kernel: a `Shared<T, N>` array of `N`
    /// elements, or with `None` the launch's dynamic shared memory (`dyn_cache` bytes)
    /// viewed as elements. Every thread of a workgroup sees the same memory. The length
    /// may be an outside `const` item's ([`Param::Item`]) until the macro fills it in.
    Shared(ScalarTy, Option<Param>),
}

impl Ty {
    pub fn scalar(self) -> Option<ScalarTy> {
        match self {
            Ty::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The element type of a region or slice.
    pub fn element(self) -> Option<ScalarTy> {
        match self {
            Ty::Region(e, _) | Ty::Slice(e) | Ty::Atomic(e) | Ty::Shared(e, _) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unit => f.write_str("()"),
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::Region(e, s) => write!(f, "Region<{e}, {s}>"),
            Ty::Slice(e) => write!(f, "&[{e}]"),
            Ty::Atomic(e) => write!(f, "Atomic<{e}>"),
            Ty::Shared(e, Some(n)) => write!(f, "Shared<{e}, {n}>"),
            Ty::Shared(e, None) => write!(f, "Shared<{e}, dyn>"),
        }
    }
}

/// The declaration of one local.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalDecl {
    pub ty: Ty,
    pub mutable: bool,
    /// The user's name for it and where it was declared; `None` for temporaries.
    pub debug: Option<(String, Span)>,
}

/// A place in memory: a local, or one element of a region or slice local.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub local: Local,
    /// An unchecked index projection `local[index]`.
    pub index: Option<Local>,
}

impl Place {
    pub fn local(local: Local) -> Place {
        Place { local, index: None }
    }

    pub fn element(local: Local, index: Local) -> Place {
        Place {
            local,
            index: Some(index),
        }
    }
}

/// A typed constant.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    /// An integer of the given type; the bits are the value, sign-extended from its width.
    Int(i128, ScalarTy),
    Float(f64, ScalarTy),
    /// The value of a `const` item outside the kernel, which only rustc knows: the
    /// `k`-th of the names the macro gives the translator (`offload_translate::kernel_consts`),
    /// typed by its use. The macro fills the value in where it builds the kernel's
    /// descriptor ([`crate::print::pieces`]), so MIR text never holds one and no later stage
    /// meets one.
    Item(u32, ScalarTy),
}

/// Why no stage after the macro meets an outside `const` item not filled in: they take
/// bodies parsed from text, which holds values, and [`crate::validate`] refuses items.
pub const LINKED_HOLD_NO_ITEMS: &str =
    "bodies parsed from text hold no outside `const` items (validate refuses them)";

impl Const {
    pub fn ty(self) -> ScalarTy {
        match self {
            Const::Bool(_) => ScalarTy::Bool,
            Const::Int(_, t) | Const::Float(_, t) | Const::Item(_, t) => t,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Operand {
    Copy(Place),
    Move(Place),
    Const(Const),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub const ALL: [BinOp; 16] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::BitAnd,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
    ];

    /// The Rust operator, for messages about the source: `+`, `<=`, `>>`.
    pub fn operator(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "Add",
            BinOp::Sub => "Sub",
            BinOp::Mul => "Mul",
            BinOp::Div => "Div",
            BinOp::Rem => "Rem",
            BinOp::BitAnd => "BitAnd",
            BinOp::BitOr => "BitOr",
            BinOp::BitXor => "BitXor",
            BinOp::Shl => "Shl",
            BinOp::Shr => "Shr",
            BinOp::Eq => "Eq",
            BinOp::Ne => "Ne",
            BinOp::Lt => "Lt",
            BinOp::Le => "Le",
            BinOp::Gt => "Gt",
            BinOp::Ge => "Ge",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }

    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

impl UnOp {
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "Neg",
            UnOp::Not => "Not",
        }
    }
}

/// A thread's linear rank in its workgroup, `(tz * dy + ty) * dx + tx`, as the steps that
/// compute it: start from [`RANK_START`], then combine the running value with each
/// position of [`RANK_STEPS`] in turn. The translator, the safety verifier and the fuzzer
/// all build it from these, so the slot one writes is the slot another proves.
pub const RANK_START: (Position, u8) = (Position::Thread, 2);

/// See [`RANK_START`].
pub const RANK_STEPS: [(BinOp, Position, u8); 4] = [
    (BinOp::Mul, Position::WorkgroupSize, 1),
    (BinOp::Add, Position::Thread, 1),
    (BinOp::Mul, Position::WorkgroupSize, 0),
    (BinOp::Add, Position::Thread, 0),
];

/// The threads of a workgroup, `(dx * dy) * dz`: the product of these positions, in order.
pub const WORKGROUP_THREADS: [(Position, u8); 3] = [
    (Position::WorkgroupSize, 0),
    (Position::WorkgroupSize, 1),
    (Position::WorkgroupSize, 2),
];

/// A thread-position query.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// The thread's index in its workgroup (CUDA's `threadIdx`).
    Thread,
    /// The workgroup's index in the launch (`blockIdx`).
    Workgroup,
    /// Threads per workgroup (`blockDim`).
    WorkgroupSize,
    /// Workgroups in the launch (`gridDim`); the whole launch's, also in a split one.
    WorkgroupCount,
}

impl Position {
    pub const ALL: [Position; 4] = [
        Position::Thread,
        Position::Workgroup,
        Position::WorkgroupSize,
        Position::WorkgroupCount,
    ];

    /// The text name, which is also the kernel-side function's name.
    pub fn name(self) -> &'static str {
        match self {
            Position::Thread => "thread_idx",
            Position::Workgroup => "workgroup_idx",
            Position::WorkgroupSize => "workgroup_dim",
            Position::WorkgroupCount => "workgroup_count",
        }
    }
}

/// An atomic read-modify-write operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exchange,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 7] = [
        AtomicOp::Add,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Exchange,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "Add",
            AtomicOp::Min => "Min",
            AtomicOp::Max => "Max",
            AtomicOp::And => "And",
            AtomicOp::Or => "Or",
            AtomicOp::Xor => "Xor",
            AtomicOp::Exchange => "Exchange",
        }
    }

    /// Whether the operation is defined on elements of type `t`: every operation on
    /// `i32`, `u32`, `i64`, `u64`; `Add` also on the floats (`f32`, `f64`, `f16`, `bf16`).
    pub fn supports(self, t: ScalarTy) -> bool {
        use ScalarTy::*;
        matches!(t, I32 | U32 | I64 | U64) || (self == AtomicOp::Add && t.is_float())
    }
}

/// An operation among the threads of a subgroup (a warp on NVIDIA GPUs): the threads
/// whose linear index in the workgroup divided by the subgroup size is the same.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SubgroupOp {
    /// Threads per subgroup (`usize`; no operands).
    Size,
    /// The thread's index in its subgroup (`usize`; no operands).
    Lane,
    /// `(value, lane)`: `value` as the thread `lane` holds it; a lane outside the
    /// subgroup yields the caller's own value.
    Shuffle,
    /// `(value, mask)`: `value` from lane `own lane ^ mask`, likewise.
    ShuffleXor,
    /// `(value)`: the sum, minimum or maximum over the subgroup, in every lane.
    Sum,
    Min,
    Max,
    /// `(bool)`: a `u64` whose bit `l` is lane `l`'s value.
    Ballot,
    /// `(bool)`: whether the value is true in any or in every lane.
    Any,
    All,
}

impl SubgroupOp {
    pub const ALL: [SubgroupOp; 10] = [
        SubgroupOp::Size,
        SubgroupOp::Lane,
        SubgroupOp::Shuffle,
        SubgroupOp::ShuffleXor,
        SubgroupOp::Sum,
        SubgroupOp::Min,
        SubgroupOp::Max,
        SubgroupOp::Ballot,
        SubgroupOp::Any,
        SubgroupOp::All,
    ];

    /// The text name, which is also the kernel-side function's name.
    pub fn name(self) -> &'static str {
        match self {
            SubgroupOp::Size => "subgroup_size",
            SubgroupOp::Lane => "subgroup_lane",
            SubgroupOp::Shuffle => "subgroup_shuffle",
            SubgroupOp::ShuffleXor => "subgroup_shuffle_xor",
            SubgroupOp::Sum => "subgroup_sum",
            SubgroupOp::Min => "subgroup_min",
            SubgroupOp::Max => "subgroup_max",
            SubgroupOp::Ballot => "subgroup_ballot",
            SubgroupOp::Any => "subgroup_any",
            SubgroupOp::All => "subgroup_all",
        }
    }

    /// How many operands the operation takes.
    pub fn arity(self) -> usize {
        match self {
            SubgroupOp::Size | SubgroupOp::Lane => 0,
            SubgroupOp::Shuffle | SubgroupOp::ShuffleXor => 2,
            _ => 1,
        }
    }

    /// The result type for a first operand of type `t` (ignored without operands), or why
    /// the operation is not defined on it. Values exchanged between lanes are 32- or
    /// 64-bit integers or floats.
    pub fn result_type(self, t: Option<ScalarTy>) -> Result<ScalarTy, String> {
        use ScalarTy::*;
        match (self, t) {
            (SubgroupOp::Size | SubgroupOp::Lane, _) => Ok(Usize),
            (SubgroupOp::Ballot, Some(Bool)) => Ok(U64),
            (SubgroupOp::Any | SubgroupOp::All, Some(Bool)) => Ok(Bool),
            (SubgroupOp::Ballot | SubgroupOp::Any | SubgroupOp::All, t) => Err(format!(
                "`{}` takes a `bool`, found `{}`",
                self.name(),
                t.map_or("nothing".into(), |t| t.to_string())
            )),
            (_, Some(t @ (I32 | U32 | I64 | U64 | F32 | F64))) => Ok(t),
            (_, t) => Err(format!(
                "`{}` exchanges `i32`, `u32`, `i64`, `u64`, `f32` or `f64` values, found `{}`",
                self.name(),
                t.map_or("nothing".into(), |t| t.to_string())
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rvalue {
    /// `AtomicRmw(Op, _a[_i], value)`: atomically combine element `_i` of atomic `_a`
    /// with `value`; the result is the element's previous value. The index is unchecked.
    AtomicRmw(AtomicOp, Place, Operand),
    /// `AtomicCas(_a[_i], current, new)`: atomically replace the element with `new` if it
    /// equals `current`; the result is the previous value either way.
    AtomicCas(Place, Operand, Operand),
    /// The thread's position along a dimension (0: x, 1: y, 2: z), a `usize`.
    Position(Position, u8),
    /// A subgroup operation; see [`SubgroupOp`] for the operands. Only in workgroup-uniform
    /// control flow (checked by [`crate::convergence`]).
    Subgroup(SubgroupOp, Vec<Operand>),
    Use(Operand),
    /// A built-in function of scalars.
    Intrinsic(Intrinsic, Vec<Operand>),
    BinaryOp(BinOp, Operand, Operand),
    UnaryOp(UnOp, Operand),
    Cast(Operand, ScalarTy),
    Len(Local),
    RegionIndex(Local),
    /// The thread's coordinate in a region along a dimension (0: column/x, 1: row/y,
    /// 2: plane/z), in the whole region: an interior region's threads start at its margin.
    RegionCoord(Local, u8),
    /// A region's extent along a dimension (0: row length, 1: rows per plane, 2: planes).
    RegionExtent(Local, u8),
    /// The end of the coordinates a region's threads own along a dimension: its extent,
    /// less the margin of an interior region (`Region::interior`).
    RegionEnd(Local, u8),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub place: Place,
    pub rvalue: Rvalue,
    pub span: Span,
    /// Made by the `unsafe` raw shared-memory API (`load`, `store`), printed with an
    /// `unsafe` prefix. The safety verifier still proves its index in bounds, but exempts
    /// it from the own-slot and race rules: the user vouches for those.
    pub raw: bool,
}

/// Why an `assert` terminator panics: Rust's message for an index or a slice range out
/// of bounds, with its two `usize` values, or a fixed text.
#[derive(Clone, Debug, PartialEq)]
pub enum AssertMessage {
    /// "index out of bounds: the len is {len} but the index is {index}".
    BoundsCheck {
        len: Operand,
        index: Operand,
    },
    /// `&x[a..b]` with `a > b`: "slice index starts at {start} but ends at {end}".
    SliceOrder {
        start: Operand,
        end: Operand,
    },
    /// `&x[a..]` past the end: "range start index {start} out of range for slice of
    /// length {len}".
    SliceStart {
        start: Operand,
        len: Operand,
    },
    /// `&x[..b]` past the end: "range end index {end} out of range for slice of length
    /// {len}".
    SliceEnd {
        end: Operand,
        len: Operand,
    },
    Panic(String),
}

impl AssertMessage {
    /// The message's values, in the order they are reported (none for a fixed text).
    pub fn operands(&self) -> Vec<&Operand> {
        match self {
            AssertMessage::BoundsCheck { len: a, index: b }
            | AssertMessage::SliceOrder { start: a, end: b }
            | AssertMessage::SliceStart { start: a, len: b }
            | AssertMessage::SliceEnd { end: a, len: b } => vec![a, b],
            AssertMessage::Panic(_) => Vec::new(),
        }
    }

    /// The message's values, to rewrite in place.
    pub fn operands_mut(&mut self) -> Vec<&mut Operand> {
        match self {
            AssertMessage::BoundsCheck { len: a, index: b }
            | AssertMessage::SliceOrder { start: a, end: b }
            | AssertMessage::SliceStart { start: a, len: b }
            | AssertMessage::SliceEnd { end: a, len: b } => vec![a, b],
            AssertMessage::Panic(_) => Vec::new(),
        }
    }

    /// The panic's text, with the values as reported (missing ones read as 0).
    pub fn text(&self, values: &[i64]) -> String {
        let v = |i: usize| values.get(i).copied().unwrap_or(0);
        match self {
            AssertMessage::BoundsCheck { .. } => format!(
                "index out of bounds: the len is {} but the index is {}",
                v(0),
                v(1)
            ),
            AssertMessage::SliceOrder { .. } => {
                format!("slice index starts at {} but ends at {}", v(0), v(1))
            }
            AssertMessage::SliceStart { .. } => format!(
                "range start index {} out of range for slice of length {}",
                v(0),
                v(1)
            ),
            AssertMessage::SliceEnd { .. } => format!(
                "range end index {} out of range for slice of length {}",
                v(0),
                v(1)
            ),
            AssertMessage::Panic(text) => text.clone(),
        }
    }

    /// The variant's name and its fields' names, as the text form writes them; `None`
    /// for a fixed text.
    pub fn form(&self) -> Option<(&'static str, [&'static str; 2])> {
        match self {
            AssertMessage::BoundsCheck { .. } => Some(("BoundsCheck", ["len", "index"])),
            AssertMessage::SliceOrder { .. } => Some(("SliceOrder", ["start", "end"])),
            AssertMessage::SliceStart { .. } => Some(("SliceStart", ["start", "len"])),
            AssertMessage::SliceEnd { .. } => Some(("SliceEnd", ["end", "len"])),
            AssertMessage::Panic(_) => None,
        }
    }

    /// The message of the variant the text form names, with its two values.
    pub fn from_form(name: &str, a: Operand, b: Operand) -> Option<AssertMessage> {
        Some(match name {
            "BoundsCheck" => AssertMessage::BoundsCheck { len: a, index: b },
            "SliceOrder" => AssertMessage::SliceOrder { start: a, end: b },
            "SliceStart" => AssertMessage::SliceStart { start: a, len: b },
            "SliceEnd" => AssertMessage::SliceEnd { end: a, len: b },
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TerminatorKind {
    Goto(BasicBlock),
    SwitchInt {
        discr: Operand,
        targets: Vec<(u128, BasicBlock)>,
        otherwise: BasicBlock,
    },
    Assert {
        cond: Operand,
        msg: AssertMessage,
        target: BasicBlock,
    },
    Return,
    Unreachable,
    /// A workgroup barrier: waits until every thread of the workgroup that has not
    /// returned arrives, with workgroup memory written before it visible after it; then
    /// `target`. Only in workgroup-uniform control flow (checked by
    /// [`crate::convergence`]).
    Barrier {
        target: BasicBlock,
    },
    /// `acc += a × b` by the whole workgroup, on tensor cores where the target has them:
    /// shared tiles, row-major, `a` of `m × k` elements, `b` of `k × n` and `acc` of
    /// `m × n` (`shape` is `[m, n, k]`, each a multiple of 16), each tile's rows
    /// `pitches` elements apart (`[acc, a, b]`'s; more than the row's width for a padded
    /// tile). A barrier before and one
    /// after enclose it, so it waits where [`TerminatorKind::Barrier`] does and no thread
    /// touches the tiles while it runs; then `target`. `acc` holds `f32` for `f16`/`bf16`
    /// tiles, else the tiles' type. Each sum of products is accumulated in the
    /// accumulator's type in an order the target picks.
    TileMma {
        acc: Local,
        a: Local,
        b: Local,
        shape: [Param; 3],
        pitches: [Param; 3],
        target: BasicBlock,
    },
    /// Fills the shared tile `tile` (`shape` is `[rows, cols, pitch]`, row-major, rows
    /// `pitch` elements apart) by the whole
    /// workgroup from the slice `src`, read as a row-major matrix with rows of
    /// `origin[0]` elements: slot `(r, c)` gets element `(origin[1] + r, origin[2] + c)`,
    /// or zero where that is past a row's end or the slice's. The origin is the same
    /// in every thread (checked by [`crate::convergence`]). Enclosed by two barriers, as
    /// [`TerminatorKind::TileMma`] is; then `target`.
    TileFill {
        tile: Local,
        src: Local,
        origin: [Operand; 3],
        shape: [Param; 3],
        target: BasicBlock,
    },
    /// A call of a device function: `dest = func(args)`, then `target`. Calls are
    /// inlined (see [`crate::inline`]) before lowering.
    Call {
        func: String,
        args: Vec<Operand>,
        dest: Local,
        target: BasicBlock,
    },
}

impl TerminatorKind {
    pub fn successors(&self) -> Vec<BasicBlock> {
        match self {
            TerminatorKind::Goto(b) => vec![*b],
            TerminatorKind::SwitchInt {
                targets, otherwise, ..
            } => targets
                .iter()
                .map(|(_, b)| *b)
                .chain(std::iter::once(*otherwise))
                .collect(),
            TerminatorKind::Assert { target, .. }
            | TerminatorKind::Call { target, .. }
            | TerminatorKind::Barrier { target }
            | TerminatorKind::TileMma { target, .. }
            | TerminatorKind::TileFill { target, .. } => vec![*target],
            TerminatorKind::Return | TerminatorKind::Unreachable => vec![],
        }
    }

    /// Whether the workgroup waits here: a barrier, or a workgroup tile operation
    /// (which is enclosed by two).
    pub fn waits(&self) -> bool {
        matches!(
            self,
            TerminatorKind::Barrier { .. }
                | TerminatorKind::TileMma { .. }
                | TerminatorKind::TileFill { .. }
        )
    }

    /// The scalar operands the terminator reads.
    pub fn operands(&self) -> Vec<&Operand> {
        match self {
            TerminatorKind::SwitchInt { discr, .. } => vec![discr],
            TerminatorKind::Assert { cond, msg, .. } => {
                let mut all = vec![cond];
                all.extend(msg.operands());
                all
            }
            TerminatorKind::Call { args, .. } => args.iter().collect(),
            TerminatorKind::TileFill { origin, .. } => origin.iter().collect(),
            TerminatorKind::Goto(_)
            | TerminatorKind::Return
            | TerminatorKind::Unreachable
            | TerminatorKind::Barrier { .. }
            | TerminatorKind::TileMma { .. } => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Terminator {
    pub kind: TerminatorKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlockData {
    pub statements: Vec<Statement>,
    pub terminator: Terminator,
}

/// Whether a body is a kernel (launched over threads, returns `()`) or a device function
/// (`#[offload_device]`, called from kernels, returns a scalar in `_0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Kernel,
    Device,
}

/// One kernel or device function.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub kind: BodyKind,
    pub name: String,
    /// The Rust source file the kernel came from, as the user's crate names it.
    pub file: String,
    /// Whether a GPU lowering may fuse a float multiply and a following add or subtract
    /// into one fused multiply-add (rounded once), as nvcc does by default. The CPU
    /// backend never does, as Rust does not. Printed as `fp_contract off;` when `false`.
    pub fp_contract: bool,
    /// Locals indexed by [`Local`]; `locals[0]` is the return place.
    pub locals: Vec<LocalDecl>,
    pub arg_count: usize,
    /// Blocks indexed by [`BasicBlock`]; `blocks[0]` is the entry.
    pub blocks: Vec<BlockData>,
}

impl Body {
    /// A kernel with no arguments and no blocks yet: only its `()` return place, `_0`.
    pub fn new_kernel(name: String, file: String) -> Body {
        Body {
            kind: BodyKind::Kernel,
            name,
            file,
            fp_contract: true,
            locals: vec![LocalDecl {
                ty: Ty::Unit,
                mutable: true,
                debug: None,
            }],
            arg_count: 0,
            blocks: Vec::new(),
        }
    }

    pub fn args(&self) -> impl Iterator<Item = (Local, &LocalDecl)> {
        (1..=self.arg_count).map(|i| (Local(i as u32), &self.locals[i]))
    }

    pub fn local(&self, local: Local) -> Option<&LocalDecl> {
        self.locals.get(local.index())
    }

    /// Each block's successors, as block indices: the graph the analyses walk.
    pub fn successor_indices(&self) -> Vec<Vec<usize>> {
        self.blocks
            .iter()
            .map(|b| {
                b.terminator
                    .kind
                    .successors()
                    .iter()
                    .map(|s| s.index())
                    .collect()
            })
            .collect()
    }

    /// Each block's position in a reverse postorder from the entry (`usize::MAX` for a
    /// block the entry does not reach): a forward analysis that visits blocks in this
    /// order sees a block's predecessors first, except along back edges.
    pub fn reverse_postorder_ranks(&self) -> Vec<usize> {
        let n = self.blocks.len();
        let succs = self.successor_indices();
        let mut post = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        // Iterative depth-first search: (block, next successor to visit).
        let mut stack = vec![(0usize, 0usize)];
        if n > 0 {
            seen[0] = true;
        } else {
            stack.clear();
        }
        while let Some((b, i)) = stack.pop() {
            match succs[b].get(i) {
                Some(&s) => {
                    stack.push((b, i + 1));
                    if !seen[s] {
                        seen[s] = true;
                        stack.push((s, 0));
                    }
                }
                None => post.push(b),
            }
        }
        let mut rank = vec![usize::MAX; n];
        for (i, b) in post.iter().rev().enumerate() {
            rank[*b] = i;
        }
        rank
    }

    /// Whether the body waits at a workgroup barrier anywhere.
    pub fn synchronizes(&self) -> bool {
        self.blocks.iter().any(|b| b.terminator.kind.waits())
    }

    /// Whether the body uses subgroup operations that exchange values between lanes, or
    /// workgroup matrix operations, which a GPU runs on whole subgroups.
    pub fn uses_subgroups(&self) -> bool {
        self.blocks.iter().any(|b| {
            matches!(b.terminator.kind, TerminatorKind::TileMma { .. })
                || (b.statements.iter())
                    .any(|s| matches!(&s.rvalue, Rvalue::Subgroup(op, _) if op.arity() > 0))
        })
    }

    /// Where each `Shared<T, N>` local lives in the workgroup's static shared memory, and
    /// how many bytes that memory takes. Arrays start at 16-byte boundaries in local
    /// order; a target that places them itself (a GPU) needs only the total.
    pub fn shared_layout(&self) -> SharedLayout {
        let mut layout = SharedLayout::default();
        for (i, decl) in self.locals.iter().enumerate() {
            if let Ty::Shared(e, Some(n)) = decl.ty {
                let offset = layout.static_bytes.next_multiple_of(SHARED_ALIGN);
                layout.arrays.push((Local(i as u32), offset));
                layout.static_bytes = offset + n.number() as usize * e.size_bytes();
            }
        }
        layout.dynamic_offset = layout.static_bytes.next_multiple_of(SHARED_ALIGN);
        layout
    }

    /// Each block's panic-site number: that of its `assert`, for a block ending in one.
    /// Sites are numbered in block order; [`Self::panic_sites`] lists them in that order,
    /// so a device report's number is an index into it. The lowering numbers the sites
    /// it emits with this, the runtime reads reports with that.
    pub fn panic_site_numbers(&self) -> Vec<Option<usize>> {
        let mut next = 0;
        self.blocks
            .iter()
            .map(|b| match b.terminator.kind {
                TerminatorKind::Assert { .. } => {
                    next += 1;
                    Some(next - 1)
                }
                _ => None,
            })
            .collect()
    }

    /// Whether the kernel has a panic site (an `assert` terminator), without listing them.
    pub fn can_panic(&self) -> bool {
        (self.blocks.iter()).any(|b| matches!(b.terminator.kind, TerminatorKind::Assert { .. }))
    }

    /// Every `assert` terminator in block order: the kernel's panic sites. The position of
    /// a site in this list is its number in device panic reports
    /// ([`Self::panic_site_numbers`]).
    pub fn panic_sites(&self) -> Vec<(&AssertMessage, Span)> {
        self.blocks
            .iter()
            .filter_map(|b| match &b.terminator.kind {
                TerminatorKind::Assert { msg, .. } => Some((msg, b.terminator.span)),
                _ => None,
            })
            .collect()
    }
}

/// The alignment of each array in workgroup memory, in bytes.
pub const SHARED_ALIGN: usize = 16;

/// The static workgroup memory of one kernel; see [`Body::shared_layout`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedLayout {
    /// Each `Shared<T, N>` local and its byte offset.
    pub arrays: Vec<(Local, usize)>,
    /// Bytes the static arrays take.
    pub static_bytes: usize,
    /// Where dynamic shared memory starts when a backend lays both out in one block.
    pub dynamic_offset: usize,
}
