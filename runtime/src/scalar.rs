//! The element and scalar types kernels accept, and their MIR names.

use offload_mir::ScalarTy;

mod sealed {
    pub trait Sealed {}
}

/// A type a kernel can take by value or as region/slice elements: `bool`, the integers,
/// `f32` and `f64`. Sealed: the lowering knows exactly these.
pub trait Scalar: Copy + Send + Sync + sealed::Sealed + 'static {
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
    const ZERO: Self;
    const ONE: Self;
}

/// `f32` and `f64`, for generic kernels (`T: Float`). (`min`/`max` of integers come from
/// `Ord`, which `Int` requires; putting them on `Num` would make `x.min(y)` ambiguous for
/// every integer once the prelude is imported.)
pub trait Float: Num + Neg<Output = Self> {
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn exp2(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn trunc(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, n: Self) -> Self;
    fn powi(self, n: i32) -> Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}

/// The integer types, for generic kernels (`T: Int`).
pub trait Int: Num + Ord {
    fn pow(self, exp: u32) -> Self;
    fn leading_zeros(self) -> u32;
    fn trailing_zeros(self) -> u32;
    fn count_ones(self) -> u32;
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
}

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
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
        }
    )*};
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
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
ints!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
