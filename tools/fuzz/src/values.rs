//! Random scalar values: mostly small or extreme ones, which is where wrapping, saturation,
//! shift masking, NaN rules and signedness show.

use fastrand::Rng;
use offload_mir::ScalarTy;
use offload_mir::interp::{bits_const, mask};

/// Raw bits of a random value of type `ty` (see [`offload_mir::interp::ArgValue`]).
pub fn random_bits(rng: &mut Rng, ty: ScalarTy) -> u64 {
    match ty {
        ScalarTy::Bool => rng.bool() as u64,
        ScalarTy::F32 => random_f32(rng).to_bits() as u64,
        ScalarTy::F64 => random_f64(rng).to_bits(),
        ScalarTy::F16 | ScalarTy::Bf16 => random_half(rng, ty),
        _ => random_int(rng, ty),
    }
}

/// A random constant of type `ty`.
pub fn random_const(rng: &mut Rng, ty: ScalarTy) -> offload_mir::Const {
    bits_const(ty, random_bits(rng, ty))
}

/// One of the values at the edges of `ty`: `MIN`, `MAX`, 0, ±1, and for floats NaN, the
/// infinities, `-0.0` and the smallest subnormal.
pub fn extreme_bits(rng: &mut Rng, ty: ScalarTy) -> u64 {
    match ty {
        ScalarTy::Bool => rng.bool() as u64,
        ScalarTy::F32 => {
            let v = [
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                0.0,
                f32::MAX,
                f32::MIN,
                f32::MIN_POSITIVE,
                f32::from_bits(1),
                1.0,
                -1.0,
            ];
            v[rng.usize(..v.len())].to_bits() as u64
        }
        ScalarTy::F64 => {
            let v = [
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                0.0,
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                f64::from_bits(1),
                1.0,
                -1.0,
                // 2^63 and 2^64: just past what an i64 or a u64 holds.
                9.223_372_036_854_776e18,
                1.844_674_407_370_955_2e19,
            ];
            v[rng.usize(..v.len())].to_bits()
        }
        // NaN, the infinities, -0.0, 0.0, MAX, MIN, MIN_POSITIVE, the smallest
        // subnormal, 1 and -1, by their bits.
        ScalarTy::F16 => {
            let v: [u16; 10] = [
                0x7e00, 0x7c00, 0xfc00, 0x8000, 0, 0x7bff, 0xfbff, 0x0400, 1, 0x3c00,
            ];
            v[rng.usize(..v.len())] as u64
        }
        ScalarTy::Bf16 => {
            let v: [u16; 10] = [
                0x7fc0, 0x7f80, 0xff80, 0x8000, 0, 0x7f7f, 0xff7f, 0x0080, 1, 0x3f80,
            ];
            v[rng.usize(..v.len())] as u64
        }
        _ => {
            let (min, max) = int_range(ty);
            let v = [min, max, 0, 1, -1, min + 1, max - 1];
            (v[rng.usize(..v.len())] as u64) & mask(ty)
        }
    }
}

/// The smallest and largest value of an integer type.
pub fn int_range(ty: ScalarTy) -> (i128, i128) {
    let bits = ty.bits();
    if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

fn random_int(rng: &mut Rng, ty: ScalarTy) -> u64 {
    match rng.u32(0..10) {
        0..=3 => (rng.i64(-4..=16) as u64) & mask(ty),
        4..=5 => extreme_bits(rng, ty),
        _ => rng.u64(..) & mask(ty),
    }
}

fn random_f32(rng: &mut Rng) -> f32 {
    match rng.u32(0..10) {
        0..=3 => rng.i32(-16..=16) as f32 / 4.0,
        4 => f32::from_bits(extreme_bits(rng, ScalarTy::F32) as u32),
        // Any finite value of modest magnitude, all mantissa bits random.
        _ => {
            let exponent = rng.u32(100..=160);
            f32::from_bits((rng.u32(..) & 0x807F_FFFF) | (exponent << 23))
        }
    }
}

fn random_f64(rng: &mut Rng) -> f64 {
    match rng.u32(0..10) {
        0..=3 => rng.i32(-16..=16) as f64 / 4.0,
        4 => f64::from_bits(extreme_bits(rng, ScalarTy::F64)),
        _ => {
            let exponent = rng.u64(980..=1080);
            f64::from_bits((rng.u64(..) & 0x800F_FFFF_FFFF_FFFF) | (exponent << 52))
        }
    }
}

/// The bits of a random `f16` or `bf16`: a small quarter, an extreme value, or any bits
/// of modest magnitude.
fn random_half(rng: &mut Rng, ty: ScalarTy) -> u64 {
    let of_f32 = |v: f32| match ty {
        ScalarTy::F16 => half::f16::from_f32(v).to_bits() as u64,
        _ => half::bf16::from_f32(v).to_bits() as u64,
    };
    match rng.u32(0..10) {
        0..=3 => of_f32(rng.i32(-16..=16) as f32 / 4.0),
        4 => extreme_bits(rng, ty),
        _ => of_f32(random_f32(rng) / 1e3),
    }
}
