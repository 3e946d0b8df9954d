//! The MIR-like kernel IR of `offload`.
//!
//! A kernel is one [`Body`]: typed locals, basic blocks of statements, and one terminator
//! per block. The model follows rustc's MIR so that anyone who has read `-Zdump-mir` output
//! can read ours.
//!
//! # Locals
//!
//! `_0` is the return place (always `()` for kernels), `_1.._n` are the kernel's
//! arguments in order, and every later local is a user variable or a temporary. A local
//! has one type for its whole life. Arguments of type `Region<T, S>` and `&[T]` are never
//! assigned as a whole; their elements are reached through an index projection.
//!
//! # Types
//!
//! | text | meaning |
//! |---|---|
//! | `bool`, `i8`..`i64`, `isize`, `u8`..`u64`, `usize`, `f32`, `f64` | scalars, as in Rust (`usize`/`isize` are 64-bit) |
//! | `f16`, `bf16` | the `half` crate's 16-bit floats: each operation's result rounded to the type; casts only to and from `f32` and `f64` (from `f64`, rounded once) |
//! | `()` | the unit type of the return place |
//! | `Region<T, Linear1D>` | a mutable region partitioned over threads by a strategy |
//! | `&[T]` | a read-only slice |
//!
//! # Places and operands
//!
//! A place is a local (`_3`) or an element of a region or slice local (`_2[_4]`, the index
//! being a `usize` local). An index projection is *unchecked*: the frontend emits an
//! `assert` terminator with a bounds-check message before every slice access, exactly as
//! rustc does, and a region element is reached only inside the branch where
//! `Region::get_mut` returned `Some`. An operand is `copy PLACE`, `move PLACE` or a typed
//! constant (`const 3usize`, `const 2.5f32`, `const true`).
//!
//! # Statements
//!
//! The only statement is `PLACE = RVALUE;`. Rvalues:
//!
//! | rvalue | meaning |
//! |---|---|
//! | `OPERAND` | a use |
//! | `Add(a, b)` (and `Sub`, `Mul`, `Div`, `Rem`, `BitAnd`, `BitOr`, `BitXor`, `Shl`, `Shr`) | arithmetic on equal types, wrapping on integers as rustc does in release builds; `Shl`/`Shr` take any integer amount, masked to the bit width |
//! | `Eq(a, b)` (and `Ne`, `Lt`, `Le`, `Gt`, `Ge`) | comparison, result `bool` |
//! | `Neg(a)`, `Not(a)` | negation; logical or bitwise not |
//! | `a as T` | numeric cast with Rust's `as` semantics |
//! | `sqrt(a)`, `powi(a, n)`, `min(a, b)`, `mul_add(a, b, c)`, ... | a built-in scalar function ([`Intrinsic`]), named as the Rust method |
//! | `Len(_n)` | the element count of a region or slice, a `usize` |
//! | `RegionIndex(_n)` | the element index this thread owns in region `_n` under its strategy |
//!
//! Operands are evaluated left to right; statements run in order.
//!
//! # Terminators
//!
//! | terminator | meaning |
//! |---|---|
//! | `goto -> bbN` | jump |
//! | `switchInt(OP) -> [V: bbA, ..., otherwise: bbB]` | multi-way branch on an integer or `bool` (`false` is 0) |
//! | `assert(OP, MESSAGE) -> bbN` | continue to `bbN` if `OP` is true, else the thread panics with `MESSAGE` |
//! | `return` | the thread is done |
//! | `unreachable` | cannot be reached |
//!
//! A panic stops the panicking thread only; the first panic of a launch is reported to the
//! host. Messages are `BoundsCheck { len: OP, index: OP }` or a plain string.
//!
//! # Spans
//!
//! Statements, terminators and named locals carry the line and column of the Rust source
//! they came from, printed as a trailing `// L:C` comment. The file is given once per
//! body in its header.
//!
//! # Text form
//!
//! [`Body`]'s `Display` prints the text form and [`parse`] reads it back; the two are
//! lossless inverses (see the round-trip tests). The first line names the format version,
//! [`FORMAT_VERSION`].

pub mod abi;
mod code_key;
pub mod convergence;
pub mod inline;
pub mod interp;
mod intrinsic;
mod ir;
mod link;
mod parse;
mod persistent;
mod print;
pub mod safety;
mod simplify;
mod strategy;
mod validate;

pub use code_key::code_key;
pub use inline::InlineError;
pub use intrinsic::{Def as IntrinsicDef, TABLE as INTRINSICS};
pub use ir::*;
pub use link::{LinkError, Linked, TargetFacts, Violation, link};
pub use parse::{ParseError, parse, parse_module};
pub use print::{Piece, pieces, print_module};
pub use validate::{Validated, ValidationError, validate, validate_translated};

/// The version of the MIR text format, printed in every file header.
pub const FORMAT_VERSION: u32 = 1;
