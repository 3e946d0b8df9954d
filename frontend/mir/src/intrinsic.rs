//! The built-in scalar functions kernels may call ([`Intrinsic`]), one table row each.
//!
//! A row says everything the pipeline needs to know about a function that is not
//! particular to one lowering: its Rust method name (also its MIR text name), how many
//! operands it takes and of which types ([`Signature`], read by the validator and by
//! the frontend's type inference), whether every target computes the same bits
//! (`exact`: constant folding and the differential fuzzer trust only those), the `math`
//! dialect op that is the whole of its lowering where there is one, and its meaning in
//! the interpreter ([`Meaning`]). A new float function is one row here; the lowering
//! then emits its `math` op on every backend.

use crate::ScalarTy;

/// Which operands a built-in function takes and what it yields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Signature {
    /// Floats of one type; the result has that type.
    Float,
    /// Floats or signed integers of one type (`abs`); likewise.
    Signed,
    /// Integers or floats of one type (`min`, `max`); likewise.
    Ordered,
    /// A float and an `i32` (`powi`); the float's type.
    FloatI32,
    /// An integer; a `u32` count of its bits.
    Count,
    /// A float; its bits as the unsigned integer of its width.
    ToBits,
    /// A `u32` or `u64`; the float of that width with those bits.
    FromBits,
}

/// What a built-in function computes, as the interpreter evaluates it on floats: Rust's
/// own `f32`/`f64` method, or a rule of the interpreter's (integers, NaN operands of
/// `min`/`max`, `powi`'s loop, reinterpreted bits).
#[derive(Copy, Clone, Debug)]
pub enum Meaning {
    Unary(fn(f32) -> f32, fn(f64) -> f64),
    Binary(fn(f32, f32) -> f32, fn(f64, f64) -> f64),
    Ternary(fn(f32, f32, f32) -> f32, fn(f64, f64, f64) -> f64),
    Rule,
}

/// One built-in function: see the module documentation.
#[derive(Copy, Clone, Debug)]
pub struct Def {
    pub intrinsic: Intrinsic,
    /// The Rust method name, which is also the MIR text name.
    pub name: &'static str,
    /// The number of operands, the receiver included.
    pub arity: usize,
    pub signature: Signature,
    /// Whether every target computes the same bits. Transcendental functions' last bits
    /// vary between targets' math libraries (libdevice, ROCm's, the host's libm), so
    /// constants are not folded through them and the fuzzer compares them with a
    /// tolerance.
    pub exact: bool,
    /// The `math` dialect op that is the function's whole lowering on floats, if one is.
    pub math: Option<&'static str>,
    pub meaning: Meaning,
}

/// Declares [`Intrinsic`] and its table together, so that a variant cannot lack a row.
macro_rules! intrinsics {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, $arity:literal, $signature:ident, $exact:ident,
            $math:expr, $meaning:expr;
    )*) => {
        /// A built-in function on scalars: the `f32`/`f64` and integer methods kernels
        /// may call. Written in text as its Rust method name, e.g. `sqrt(copy _3)`.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Intrinsic {
            $($(#[$doc])* $variant,)*
        }

        /// Every built-in function's row, in [`Intrinsic`]'s order.
        pub const TABLE: &[Def] = &[$(Def {
            intrinsic: Intrinsic::$variant,
            name: $name,
            arity: $arity,
            signature: Signature::$signature,
            exact: intrinsics!(@exact $exact),
            math: $math,
            meaning: $meaning,
        },)*];
    };
    (@exact exact) => { true };
    (@exact varies) => { false };
}

use Meaning::{Binary, Rule, Ternary, Unary};

intrinsics! {
    Sqrt = "sqrt", 1, Float, exact, Some("math.sqrt"), Unary(f32::sqrt, f64::sqrt);
    Exp = "exp", 1, Float, varies, Some("math.exp"), Unary(f32::exp, f64::exp);
    Exp2 = "exp2", 1, Float, varies, Some("math.exp2"), Unary(f32::exp2, f64::exp2);
    Ln = "ln", 1, Float, varies, Some("math.log"), Unary(f32::ln, f64::ln);
    Log2 = "log2", 1, Float, varies, Some("math.log2"), Unary(f32::log2, f64::log2);
    Log10 = "log10", 1, Float, varies, Some("math.log10"), Unary(f32::log10, f64::log10);
    Sin = "sin", 1, Float, varies, Some("math.sin"), Unary(f32::sin, f64::sin);
    Cos = "cos", 1, Float, varies, Some("math.cos"), Unary(f32::cos, f64::cos);
    Tan = "tan", 1, Float, varies, Some("math.tan"), Unary(f32::tan, f64::tan);
    Tanh = "tanh", 1, Float, varies, Some("math.tanh"), Unary(f32::tanh, f64::tanh);
    Asin = "asin", 1, Float, varies, Some("math.asin"), Unary(f32::asin, f64::asin);
    Acos = "acos", 1, Float, varies, Some("math.acos"), Unary(f32::acos, f64::acos);
    Atan = "atan", 1, Float, varies, Some("math.atan"), Unary(f32::atan, f64::atan);
    /// `y.atan2(x)`: the angle of the point (x, y).
    Atan2 = "atan2", 2, Float, varies, Some("math.atan2"), Binary(f32::atan2, f64::atan2);
    Sinh = "sinh", 1, Float, varies, Some("math.sinh"), Unary(f32::sinh, f64::sinh);
    Cosh = "cosh", 1, Float, varies, Some("math.cosh"), Unary(f32::cosh, f64::cosh);
    Asinh = "asinh", 1, Float, varies, Some("math.asinh"), Unary(f32::asinh, f64::asinh);
    Acosh = "acosh", 1, Float, varies, Some("math.acosh"), Unary(f32::acosh, f64::acosh);
    Atanh = "atanh", 1, Float, varies, Some("math.atanh"), Unary(f32::atanh, f64::atanh);
    Cbrt = "cbrt", 1, Float, varies, Some("math.cbrt"), Unary(f32::cbrt, f64::cbrt);
    /// `exp_m1` (`e^x - 1`) and `ln_1p` (`ln(1 + x)`), exact near zero.
    ExpM1 = "exp_m1", 1, Float, varies, Some("math.expm1"), Unary(f32::exp_m1, f64::exp_m1);
    Ln1p = "ln_1p", 1, Float, varies, Some("math.log1p"), Unary(f32::ln_1p, f64::ln_1p);
    Floor = "floor", 1, Float, exact, Some("math.floor"), Unary(f32::floor, f64::floor);
    Ceil = "ceil", 1, Float, exact, Some("math.ceil"), Unary(f32::ceil, f64::ceil);
    /// Half away from zero, in Rust and in `math.round` alike.
    Round = "round", 1, Float, exact, Some("math.round"), Unary(f32::round, f64::round);
    Trunc = "trunc", 1, Float, exact, Some("math.trunc"), Unary(f32::trunc, f64::trunc);
    /// `abs` on floats and signed integers (wrapping for `MIN`, as rustc in release).
    Abs = "abs", 1, Signed, exact, Some("math.absf"), Unary(f32::abs, f64::abs);
    /// `min`/`max`: on floats, a NaN operand yields the other one, as in Rust.
    Min = "min", 2, Ordered, exact, None, Rule;
    Max = "max", 2, Ordered, exact, None, Rule;
    Powf = "powf", 2, Float, varies, Some("math.powf"), Binary(f32::powf, f64::powf);
    /// `mul_add(a, b, c)`: `a * b + c` with one rounding.
    MulAdd = "mul_add", 3, Float, exact, Some("math.fma"), Ternary(f32::mul_add, f64::mul_add);
    /// `powi(f, i32)`, by repeated multiplication as LLVM's `powi` does.
    Powi = "powi", 2, FloatI32, exact, Some("math.fpowi"), Rule;
    /// Bit counts of integers; the result is `u32`.
    LeadingZeros = "leading_zeros", 1, Count, exact, None, Rule;
    TrailingZeros = "trailing_zeros", 1, Count, exact, None, Rule;
    CountOnes = "count_ones", 1, Count, exact, None, Rule;
    /// `f32::to_bits` / `f64::to_bits`: the float's bits as `u32` / `u64`.
    ToBits = "to_bits", 1, ToBits, exact, None, Rule;
    /// `f32::from_bits` / `f64::from_bits`: a `u32` / `u64` read as a float.
    FromBits = "from_bits", 1, FromBits, exact, None, Rule;
}

impl Intrinsic {
    /// Every built-in function, in declaration order.
    pub fn all() -> impl Iterator<Item = Intrinsic> {
        TABLE.iter().map(|d| d.intrinsic)
    }

    /// This function's row of [`TABLE`].
    pub fn def(self) -> &'static Def {
        &TABLE[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn from_name(name: &str) -> Option<Intrinsic> {
        TABLE.iter().find(|d| d.name == name).map(|d| d.intrinsic)
    }

    /// The number of operands, the receiver included.
    pub fn arity(self) -> usize {
        self.def().arity
    }

    /// Whether every target computes the same bits; see [`Def::exact`].
    pub fn is_exact(self) -> bool {
        self.def().exact
    }

    /// The result type for operands of these types, or why they do not fit.
    pub fn result_type(self, args: &[ScalarTy]) -> Result<ScalarTy, String> {
        let name = self.name();
        if args.len() != self.arity() {
            return Err(format!(
                "`{name}` takes {} operands, found {}",
                self.arity(),
                args.len()
            ));
        }
        let t = args[0];
        let all_same = args.iter().all(|a| *a == t);
        // The math functions are those of `f32` and `f64`; the `half` crate's types
        // have none of them (its users convert to `f32`), only `min` and `max`.
        let wide_float = matches!(t, ScalarTy::F32 | ScalarTy::F64);
        let result = match self.def().signature {
            Signature::Float if wide_float && all_same => Some(t),
            Signature::Signed if (wide_float || t.is_signed()) && all_same => Some(t),
            Signature::Ordered if t != ScalarTy::Bool && all_same => Some(t),
            Signature::FloatI32 if wide_float && args[1] == ScalarTy::I32 => Some(t),
            Signature::Count if t.is_integer() => Some(ScalarTy::U32),
            Signature::ToBits => match t {
                ScalarTy::F32 => Some(ScalarTy::U32),
                ScalarTy::F64 => Some(ScalarTy::U64),
                _ => None,
            },
            Signature::FromBits => match t {
                ScalarTy::U32 => Some(ScalarTy::F32),
                ScalarTy::U64 => Some(ScalarTy::F64),
                _ => None,
            },
            _ => None,
        };
        result.ok_or_else(|| {
            let found: Vec<&str> = args.iter().map(|a| a.name()).collect();
            format!("`{name}` is not defined on ({})", found.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_its_variants_and_names_are_unique() {
        for (k, def) in TABLE.iter().enumerate() {
            assert_eq!(def.intrinsic as usize, k, "`{}` is out of order", def.name);
            assert_eq!(Intrinsic::from_name(def.name), Some(def.intrinsic));
        }
    }

    #[test]
    fn a_rows_meaning_takes_its_arity() {
        for def in TABLE {
            let takes = match def.meaning {
                Meaning::Unary(..) => 1,
                Meaning::Binary(..) => 2,
                Meaning::Ternary(..) => 3,
                Meaning::Rule => continue,
            };
            assert_eq!(takes, def.arity, "`{}`", def.name);
            // A row with Rust's float method as its meaning is defined on floats.
            assert_eq!(
                Intrinsic::result_type(def.intrinsic, &vec![ScalarTy::F64; def.arity]),
                Ok(ScalarTy::F64),
                "`{}`",
                def.name
            );
        }
    }

    #[test]
    fn signatures_type_their_operands() {
        use ScalarTy::*;
        assert_eq!(Intrinsic::Powi.result_type(&[F32, I32]), Ok(F32));
        assert_eq!(Intrinsic::Abs.result_type(&[I8]), Ok(I8));
        assert_eq!(
            Intrinsic::Abs.result_type(&[U8]),
            Err("`abs` is not defined on (u8)".into())
        );
        assert_eq!(Intrinsic::Min.result_type(&[U16, U16]), Ok(U16));
        assert_eq!(Intrinsic::CountOnes.result_type(&[I64]), Ok(U32));
        assert_eq!(Intrinsic::ToBits.result_type(&[F64]), Ok(U64));
        assert_eq!(Intrinsic::FromBits.result_type(&[U32]), Ok(F32));
        assert_eq!(
            Intrinsic::Sqrt.result_type(&[F32, F32]),
            Err("`sqrt` takes 1 operands, found 2".into())
        );
    }
}
