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
