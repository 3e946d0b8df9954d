//! The element and scalar types kernels accept, and their MIR names.

use offload_mir::ScalarTy;

mod sealed {
    pub trait Sealed {}
}

/// A type a kernel can take by value or as region/slice elements: `bool`, the integers,
/// `f32`, `f64`, and the `half` crate's `f16` and `bf16`. Sealed: the lowering knows
/// exactly these.
pub trait Scalar: Copy + Send + Sync + sealed::Sealed + 'static {
    /// The type as kernel MIR names it, against which a launch checks the argument.
    const TY: ScalarTy;
    /// The value's bytes, little end first, as the kernel ABI passes it.
    fn to_bits(self) -> u64;
}

macro_rules! scalars {
    ($($t:ty => $ty:ident, |$v:ident| $bits:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const TY: ScalarTy = ScalarTy::$ty;
            fn to_bits(self) -> u64 {
                let $v = self;
                $bits
            }
        }
    )*};
}

scalars! {
    bool => Bool, |v| v as u64;
    i8 => I8, |v| v as u8 as u64;
    i16 => I16, |v| v as u16 as u64;
    i32 => I32, |v| v as u32 as u64;
    i64 => I64, |v| v as u64;
    isize => Isize, |v| v as u64;
    u8 => U8, |v| v as u64;
    u16 => U16, |v| v as u64;
    u32 => U32, |v| v as u64;
    u64 => U64, |v| v;
    usize => Usize, |v| v as u64;
    f32 => F32, |v| v.to_bits() as u64;
    f64 => F64, |v| v.to_bits();
    half::f16 => F16, |v| v.to_bits() as u64;
    half::bf16 => Bf16, |v| v.to_bits() as u64;
}

use std::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

/// The numeric types (integers and floats) a generic kernel's `T: Num` may be. Kernels
/// are compiled for each.
pub trait Num:
    Scalar
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + RemAssign
{
    /// Zero: `0` or `0.0`.
    const ZERO: Self;
    /// One: `1` or `1.0`.
    const ONE: Self;
    /// `v` converted as `v as Self` converts (saturating into a narrower integer is not
    /// done: it wraps, as `as` does between integers). In a kernel a literal argument,
    /// `T::from_i64(3)`, is a constant of the instance's type.
    fn from_i64(v: i64) -> Self;
}

/// `f32`, `f64`, `f16` and `bf16`, for generic kernels (`T: Float`). (`min`/`max` of integers come from
/// `Ord`, which `Int` requires; putting them on `Num` would make `x.min(y)` ambiguous for
/// every integer once the prelude is imported.)
///
/// Each method is the inherent `f32`/`f64` method of the same name; for `f16` and `bf16`,
/// that `f32` method's result rounded to the type (`min`, `max` and `clamp` are the
/// `half` crate's). In a kernel it runs the device's math library, whose `sqrt` to
/// `tanh`, `powf` and `powi` may differ from the host's in the last bits.
pub trait Float: Num + Neg<Output = Self> {
    /// The smaller of `self` and `other`; if one is NaN, the other.
    fn min(self, other: Self) -> Self;
    /// The larger of `self` and `other`; if one is NaN, the other.
    fn max(self, other: Self) -> Self;
    /// The square root; NaN below zero.
    fn sqrt(self) -> Self;
    /// `e` to the power `self`.
    fn exp(self) -> Self;
    /// 2 to the power `self`.
    fn exp2(self) -> Self;
    /// The natural logarithm; NaN below zero.
    fn ln(self) -> Self;
    /// The base-2 logarithm; NaN below zero.
    fn log2(self) -> Self;
    /// The base-10 logarithm; NaN below zero.
    fn log10(self) -> Self;
    /// The sine of `self` radians.
    fn sin(self) -> Self;
    /// The cosine of `self` radians.
    fn cos(self) -> Self;
    /// The tangent of `self` radians.
    fn tan(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The largest integer not above `self`.
    fn floor(self) -> Self;
    /// The smallest integer not below `self`.
    fn ceil(self) -> Self;
    /// The nearest integer, halfway cases away from zero.
    fn round(self) -> Self;
    /// The integer part, rounding toward zero.
    fn trunc(self) -> Self;
    /// The absolute value.
    fn abs(self) -> Self;
    /// `self` to the power `n`.
    fn powf(self, n: Self) -> Self;
    /// `self` to the integer power `n`.
    fn powi(self, n: i32) -> Self;
    /// `self * a + b` with one rounding (a fused multiply-add).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `self` limited to `min..=max`; NaN stays NaN.
    fn clamp(self, min: Self, max: Self) -> Self;
    /// `v` rounded to this type, as `v as Self` does. In a kernel a literal argument,
    /// `T::from_f64(0.5)`, is a constant of the instance's type.
    fn from_f64(v: f64) -> Self;
}

/// The integer types, for generic kernels (`T: Int`).
///
/// Each method is the inherent integer method of the same name.
pub trait Int: Num + Ord {
    /// `self` to the power `exp`. On overflow it wraps in a kernel (kernel integer
    /// arithmetic wraps, as in a release build) and panics on the host when overflow
    /// checks are on.
    fn pow(self, exp: u32) -> Self;
    /// The number of leading zero bits; the type's width for zero.
    fn leading_zeros(self) -> u32;
    /// The number of trailing zero bits; the type's width for zero.
    fn trailing_zeros(self) -> u32;
    /// The number of one bits.
    fn count_ones(self) -> u32;
    /// `self + other`, wrapping around at the type's bounds.
    fn wrapping_add(self, other: Self) -> Self;
    /// `self - other`, wrapping around at the type's bounds.
    fn wrapping_sub(self, other: Self) -> Self;
    /// `self * other`, wrapping around at the type's bounds.
    fn wrapping_mul(self, other: Self) -> Self;
}

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn from_i64(v: i64) -> Self { v as $t }
        }
        impl Float for $t {
            fn min(self, other: Self) -> Self { <$t>::min(self, other) }
            fn max(self, other: Self) -> Self { <$t>::max(self, other) }
            fn sqrt(self) -> Self { <$t>::sqrt(self) }
            fn exp(self) -> Self { <$t>::exp(self) }
            fn exp2(self) -> Self { <$t>::exp2(self) }
            fn ln(self) -> Self { <$t>::ln(self) }
            fn log2(self) -> Self { <$t>::log2(self) }
            fn log10(self) -> Self { <$t>::log10(self) }
            fn sin(self) -> Self { <$t>::sin(self) }
            fn cos(self) -> Self { <$t>::cos(self) }
            fn tan(self) -> Self { <$t>::tan(self) }
            fn tanh(self) -> Self { <$t>::tanh(self) }
            fn floor(self) -> Self { <$t>::floor(self) }
            fn ceil(self) -> Self { <$t>::ceil(self) }
            fn round(self) -> Self { <$t>::round(self) }
            fn trunc(self) -> Self { <$t>::trunc(self) }
            fn abs(self) -> Self { <$t>::abs(self) }
            fn powf(self, n: Self) -> Self { <$t>::powf(self, n) }
            fn powi(self, n: i32) -> Self { <$t>::powi(self, n) }
            fn mul_add(self, a: Self, b: Self) -> Self { <$t>::mul_add(self, a, b) }
            fn clamp(self, min: Self, max: Self) -> Self { <$t>::clamp(self, min, max) }
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn from_i64(v: i64) -> Self { v as $t }
        }
        impl Int for $t {
            fn pow(self, exp: u32) -> Self { <$t>::pow(self, exp) }
            fn leading_zeros(self) -> u32 { <$t>::leading_zeros(self) }
            fn trailing_zeros(self) -> u32 { <$t>::trailing_zeros(self) }
            fn count_ones(self) -> u32 { <$t>::count_ones(self) }
            fn wrapping_add(self, other: Self) -> Self { <$t>::wrapping_add(self, other) }
            fn wrapping_sub(self, other: Self) -> Self { <$t>::wrapping_sub(self, other) }
            fn wrapping_mul(self, other: Self) -> Self { <$t>::wrapping_mul(self, other) }
        }
    )*};
}

floats!(f32, f64);

/// `v` rounded once to the nearest `f16` or `bf16` (ties to even), as kernels convert:
/// rounded to odd in `f32` first (truncated toward zero, lowest bit set when inexact),
/// which keeps enough bits that rounding that to the half type is the single rounding.
/// (The `half` crate's own `from_f64` rounds through `f32` on x86, which can differ next
/// to a tie.)
fn rounded_once<H>(v: f64, from_f32: fn(f32) -> H) -> H {
    let nearest = v as f32;
    if nearest as f64 == v || v.is_nan() {
        return from_f32(nearest);
    }
    let bits = nearest.to_bits();
    let away = (nearest as f64).abs() > v.abs();
    from_f32(f32::from_bits(if away { bits - 1 } else { bits } | 1))
}

/// `f16` and `bf16` for generic kernels: each function computed in `f32` and rounded to
/// the type, as a kernel computes it.
macro_rules! half_floats {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            fn from_i64(v: i64) -> Self { Self::from_f64(v as f64) }
        }
        impl Float for $t {
            fn min(self, other: Self) -> Self { <$t>::min(self, other) }
            fn max(self, other: Self) -> Self { <$t>::max(self, other) }
            fn sqrt(self) -> Self { Self::from_f32(self.to_f32().sqrt()) }
            fn exp(self) -> Self { Self::from_f32(self.to_f32().exp()) }
            fn exp2(self) -> Self { Self::from_f32(self.to_f32().exp2()) }
            fn ln(self) -> Self { Self::from_f32(self.to_f32().ln()) }
            fn log2(self) -> Self { Self::from_f32(self.to_f32().log2()) }
            fn log10(self) -> Self { Self::from_f32(self.to_f32().log10()) }
            fn sin(self) -> Self { Self::from_f32(self.to_f32().sin()) }
            fn cos(self) -> Self { Self::from_f32(self.to_f32().cos()) }
            fn tan(self) -> Self { Self::from_f32(self.to_f32().tan()) }
            fn tanh(self) -> Self { Self::from_f32(self.to_f32().tanh()) }
            fn floor(self) -> Self { Self::from_f32(self.to_f32().floor()) }
            fn ceil(self) -> Self { Self::from_f32(self.to_f32().ceil()) }
            fn round(self) -> Self { Self::from_f32(self.to_f32().round()) }
            fn trunc(self) -> Self { Self::from_f32(self.to_f32().trunc()) }
            fn abs(self) -> Self { Self::from_f32(self.to_f32().abs()) }
            fn powf(self, n: Self) -> Self { Self::from_f32(self.to_f32().powf(n.to_f32())) }
            fn powi(self, n: i32) -> Self { Self::from_f32(self.to_f32().powi(n)) }
            fn mul_add(self, a: Self, b: Self) -> Self {
                Self::from_f32(self.to_f32().mul_add(a.to_f32(), b.to_f32()))
            }
            fn clamp(self, min: Self, max: Self) -> Self { <$t>::clamp(self, min, max) }
            fn from_f64(v: f64) -> Self { rounded_once(v, <$t>::from_f32) }
        }
    )*};
}

half_floats!(half::f16, half::bf16);
ints!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
