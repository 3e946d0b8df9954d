//! The built-in methods of kernel scalars and the built-in kernel functions, one entry
//! each: its name, what it is defined on, its type rule and how it is translated.
//!
//! Both type passes (the unification of `inference.rs` and the translator's local
//! `infer`) read the type rules here, and the translator dispatches through the same
//! entries, so a builtin's type cannot differ between them. A method that is one MIR
//! [`Intrinsic`] needs no entry of its own: [`method`] derives it from the intrinsic
//! table of `offload-mir`, which also gives the interpreter's meaning and the `math` op
//! every lowering emits.

use super::{Result, Translator, Value};
use offload_mir::{Intrinsic, Position, ScalarTy, Signature, SubgroupOp};
use proc_macro2::Span as SynSpan;

/// How a method's argument and result types follow from its receiver's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Arguments of the receiver's type; the result too (`min`, `wrapping_add`, `sqrt`).
    Receiver,
    /// Arguments of this type; the result of the receiver's (`powi`: `i32`, `pow`: `u32`).
    ArgumentsOf(ScalarTy),
    /// Arguments of the receiver's type; a result of this type (`is_nan`, `count_ones`).
    Yields(ScalarTy),
    /// The unsigned integer of the receiver's width (`abs_diff`).
    Unsigned,
    /// The intrinsic's own rule (`to_bits`: the unsigned integer of the float's width).
    Of(Intrinsic),
}

impl Rule {
    /// The type each argument must have, if it is not the receiver's.
    pub(crate) fn argument(self) -> Option<ScalarTy> {
        match self {
            Rule::ArgumentsOf(t) => Some(t),
            _ => None,
        }
    }

    /// The result's type for a receiver of type `receiver` (unknown: `None`).
    pub(crate) fn result(self, receiver: Option<ScalarTy>) -> Option<ScalarTy> {
        match self {
            Rule::Receiver | Rule::ArgumentsOf(_) => receiver,
            Rule::Yields(t) => Some(t),
            Rule::Unsigned => receiver.map(ScalarTy::unsigned),
            Rule::Of(i) => i.result_type(&[receiver?]).ok(),
        }
    }
}

/// Translates a method made of other MIR operations; `name` is the method's.
type Expand = fn(&mut Translator, &syn::ExprMethodCall, &str, SynSpan) -> Result<Value>;

/// How a method becomes MIR.
#[derive(Copy, Clone)]
pub(crate) enum Form {
    Intrinsic(Intrinsic),
    Expanded(Expand),
}

/// Which scalars a method is defined on, for the list of methods a refusal names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum On {
    Floats,
    Integers,
    Both,
    /// `f16` and `bf16` (`to_f32`, `to_f64`).
    Halves,
    /// Called through a type's path only: `f32::from_bits(b)` is `b.from_bits()` here.
    Path,
}

/// A method of kernel scalars.
#[derive(Copy, Clone)]
pub(crate) struct Method {
    pub name: &'static str,
    /// Its arguments, the receiver not counted.
    pub arguments: usize,
    pub on: On,
    pub rule: Rule,
    pub form: Form,
}

const fn expanded(name: &'static str, arguments: usize, on: On, rule: Rule, f: Expand) -> Method {
    Method {
        name,
        arguments,
        on,
        rule,
        form: Form::Expanded(f),
    }
}

/// The methods made of other MIR operations (those that are one intrinsic come from its
/// table).
#[rustfmt::skip]
const EXPANDED: &[Method] = &[
    expanded("wrapping_add", 1, On::Integers, Rule::Receiver, Translator::wrapping_call),
    expanded("wrapping_sub", 1, On::Integers, Rule::Receiver, Translator::wrapping_call),
    expanded("wrapping_mul", 1, On::Integers, Rule::Receiver, Translator::wrapping_call),
    expanded("saturating_add", 1, On::Integers, Rule::Receiver, Translator::bits_call),
    expanded("saturating_sub", 1, On::Integers, Rule::Receiver, Translator::bits_call),
    expanded("saturating_mul", 1, On::Integers, Rule::Receiver, Translator::bits_call),
    expanded("rotate_left", 1, On::Integers, Rule::ArgumentsOf(ScalarTy::U32), Translator::bits_call),
    expanded("rotate_right", 1, On::Integers, Rule::ArgumentsOf(ScalarTy::U32), Translator::bits_call),
    expanded("pow", 1, On::Integers, Rule::ArgumentsOf(ScalarTy::U32), |t, m, _, s| t.pow_call(m, s)),
    expanded("abs_diff", 1, On::Integers, Rule::Unsigned, Translator::euclid_call),
    expanded("rem_euclid", 1, On::Integers, Rule::Receiver, Translator::euclid_call),
    expanded("div_euclid", 1, On::Integers, Rule::Receiver, Translator::euclid_call),
    expanded("div_ceil", 1, On::Integers, Rule::Receiver, Translator::euclid_call),
    expanded("clamp", 2, On::Both, Rule::Receiver, |t, m, _, s| t.clamp_call(m, s)),
    expanded("signum", 0, On::Both, Rule::Receiver, Translator::class_call),
    expanded("is_nan", 0, On::Floats, Rule::Yields(ScalarTy::Bool), Translator::class_call),
    expanded("is_infinite", 0, On::Floats, Rule::Yields(ScalarTy::Bool), Translator::class_call),
    expanded("is_finite", 0, On::Floats, Rule::Yields(ScalarTy::Bool), Translator::class_call),
    expanded("recip", 0, On::Floats, Rule::Receiver, Translator::derived_call),
    expanded("fract", 0, On::Floats, Rule::Receiver, Translator::derived_call),
    expanded("to_radians", 0, On::Floats, Rule::Receiver, Translator::derived_call),
    expanded("to_degrees", 0, On::Floats, Rule::Receiver, Translator::derived_call),
    expanded("is_sign_positive", 0, On::Floats, Rule::Yields(ScalarTy::Bool), Translator::derived_call),
    expanded("is_sign_negative", 0, On::Floats, Rule::Yields(ScalarTy::Bool), Translator::derived_call),
    expanded("is_positive", 0, On::Integers, Rule::Yields(ScalarTy::Bool), Translator::derived_call),
    expanded("is_negative", 0, On::Integers, Rule::Yields(ScalarTy::Bool), Translator::derived_call),
    expanded("to_f32", 0, On::Halves, Rule::Yields(ScalarTy::F32), Translator::widening_call),
    expanded("to_f64", 0, On::Halves, Rule::Yields(ScalarTy::F64), Translator::widening_call),
];

/// The method of an intrinsic.
fn intrinsic_method(i: Intrinsic) -> Method {
    let (on, rule) = match i.def().signature {
        Signature::Float => (On::Floats, Rule::Receiver),
        Signature::Signed | Signature::Ordered => (On::Both, Rule::Receiver),
        Signature::FloatI32 => (On::Floats, Rule::ArgumentsOf(ScalarTy::I32)),
        Signature::Count => (On::Integers, Rule::Yields(ScalarTy::U32)),
        Signature::ToBits => (On::Floats, Rule::Of(i)),
        Signature::FromBits => (On::Path, Rule::Of(i)),
    };
    Method {
        name: i.name(),
        arguments: i.arity() - 1,
        on,
        rule,
        form: Form::Intrinsic(i),
    }
}

/// The scalar method called `name`.
pub(crate) fn method(name: &str) -> Option<Method> {
    EXPANDED
        .iter()
        .copied()
        .find(|m| m.name == name)
        .or_else(|| Intrinsic::from_name(name).map(intrinsic_method))
}

/// Every scalar method: the intrinsics' in their table's order, then the expanded ones.
pub(crate) fn methods() -> impl Iterator<Item = Method> {
    Intrinsic::all()
        .map(intrinsic_method)
        .chain(EXPANDED.iter().copied())
}

/// The names of the methods defined on `on`'s scalars (for floats and integers, with
/// those on both), space-separated; `f16` and `bf16` also have `min`, `max` and `clamp`.
pub(crate) fn method_names(on: On) -> String {
    let names: Vec<&str> = methods()
        .filter(|m| match on {
            On::Halves => m.on == on || matches!(m.name, "min" | "max" | "clamp"),
            _ => m.on == on || m.on == On::Both,
        })
        .map(|m| m.name)
        .collect();
    names.join(" ")
}

/// A built-in kernel function.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Function {
    /// `thread_idx(d)` and the other position queries: a `usize`.
    Position(Position),
    /// `thread_rank()`: the thread's linear rank in its workgroup, a `usize`.
    ThreadRank,
    /// `subgroup_sum(v)` and the other subgroup operations (`subgroup_broadcast` is
    /// `subgroup_shuffle`).
    Subgroup(SubgroupOp),
    /// `workgroup_sum(v)`, `workgroup_min`, `workgroup_max` (the name): made of the
    /// subgroup operation and shared memory.
    WorkgroupReduce(&'static str, SubgroupOp),
    /// `sync_threads()`: a workgroup barrier.
    SyncThreads,
    /// `tile_mma(&mut acc, &a, &b)`: a workgroup matrix multiply-accumulate.
    TileMma,
}

/// The workgroup reductions, by name, and the subgroup operation each is made of.
const WORKGROUP_REDUCTIONS: [(&str, SubgroupOp); 3] = [
    ("workgroup_sum", SubgroupOp::Sum),
    ("workgroup_min", SubgroupOp::Min),
    ("workgroup_max", SubgroupOp::Max),
];

/// The built-in function called `name`.
pub(crate) fn function(name: &str) -> Option<Function> {
    if let Some(p) = Position::ALL.into_iter().find(|p| p.name() == name) {
        return Some(Function::Position(p));
    }
    if let Some(op) = SubgroupOp::ALL.into_iter().find(|o| o.name() == name) {
        return Some(Function::Subgroup(op));
    }
    if let Some(&(name, op)) = WORKGROUP_REDUCTIONS.iter().find(|(n, _)| *n == name) {
        return Some(Function::WorkgroupReduce(name, op));
    }
    match name {
        "subgroup_broadcast" => Some(Function::Subgroup(SubgroupOp::Shuffle)),
        "thread_rank" => Some(Function::ThreadRank),
        "sync_threads" => Some(Function::SyncThreads),
        "tile_mma" => Some(Function::TileMma),
        _ => None,
    }
}

impl Function {
    /// The type argument `k` must have, where the function fixes it.
    pub(crate) fn argument(self, k: usize) -> Option<ScalarTy> {
        match (self, k) {
            (Function::Subgroup(SubgroupOp::Ballot | SubgroupOp::Any | SubgroupOp::All), _) => {
                Some(ScalarTy::Bool)
            }
            // The lane of `subgroup_shuffle` and the mask of `subgroup_shuffle_xor`.
            (Function::Subgroup(_), 1) => Some(ScalarTy::Usize),
            _ => None,
        }
    }

    /// The result's type for a first argument of type `first` (unknown: `None`); `None`
    /// also for `sync_threads`, which has no value.
    pub(crate) fn result(self, first: Option<ScalarTy>) -> Option<ScalarTy> {
        match self {
            Function::Position(_) | Function::ThreadRank => Some(ScalarTy::Usize),
            // `subgroup_ballot` and its kin take a `bool` whatever was passed.
            Function::Subgroup(op) => op.result_type(self.argument(0).or(first)).ok(),
            Function::WorkgroupReduce(..) => first,
            Function::SyncThreads | Function::TileMma => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_name_is_one_entry() {
        let mut names: Vec<&str> = methods().map(|m| m.name).collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "a method name has two entries");
        for name in names {
            assert_eq!(method(name).map(|m| m.name), Some(name));
        }
    }

    #[test]
    fn rules_type_results_from_receivers() {
        use ScalarTy::*;
        let result = |name: &str, r| method(name).unwrap().rule.result(r);
        assert_eq!(result("sqrt", Some(F32)), Some(F32));
        assert_eq!(result("powi", Some(F64)), Some(F64));
        assert_eq!(method("powi").unwrap().rule.argument(), Some(I32));
        assert_eq!(method("rotate_left").unwrap().rule.argument(), Some(U32));
        assert_eq!(result("count_ones", None), Some(U32));
        assert_eq!(result("is_nan", None), Some(Bool));
        assert_eq!(result("abs_diff", Some(I16)), Some(U16));
        assert_eq!(result("to_bits", Some(F64)), Some(U64));
        assert_eq!(result("to_bits", None), None);
        assert_eq!(result("from_bits", Some(U32)), Some(F32));
        assert_eq!(method("from_bits").unwrap().on, On::Path);
        assert!(!method_names(On::Integers).contains("from_bits"));
        assert_eq!(method("mul_add").unwrap().arguments, 2);
    }

    #[test]
    fn functions_type_their_results() {
        use ScalarTy::*;
        let f = |name| function(name).unwrap();
        assert_eq!(f("thread_idx").result(None), Some(Usize));
        assert_eq!(f("subgroup_lane").result(None), Some(Usize));
        assert_eq!(f("subgroup_ballot").result(None), Some(U64));
        assert_eq!(f("subgroup_any").result(Some(Bool)), Some(Bool));
        assert_eq!(f("subgroup_sum").result(Some(F32)), Some(F32));
        assert_eq!(f("subgroup_sum").result(None), None);
        assert_eq!(
            f("subgroup_broadcast"),
            Function::Subgroup(SubgroupOp::Shuffle)
        );
        assert_eq!(f("subgroup_shuffle").argument(1), Some(Usize));
        assert_eq!(f("workgroup_max").result(Some(I64)), Some(I64));
        assert_eq!(f("sync_threads").result(None), None);
        assert!(function("helper").is_none());
    }
}
