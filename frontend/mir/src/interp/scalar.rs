//! The scalar operations of MIR on raw bits, as the lowering computes them: wrapping
//! integers, masked shift amounts, saturating float-to-int casts, `minnum`/`maxnum`, the
//! outlined `powi`, one-lane subgroups and the atomic read-modify-write kinds.

use crate::ir::*;

/// The bits of a value of type `t`: all others are zero.
pub fn mask(t: ScalarTy) -> u64 {
    match t.bits() {
        64 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

/// The value of `bits` of type `t`, sign-extended if `t` is signed.
pub(super) fn signed(t: ScalarTy, bits: u64) -> i64 {
    let shift = 64 - t.bits();
    ((bits << shift) as i64) >> shift
}

/// A constant's bits, as the lowering materialises it.
pub fn const_bits(c: Const) -> u64 {
    match c {
        Const::Bool(b) => b as u64,
        Const::Int(v, t) => (v as u64) & mask(t),
        Const::Float(v, ScalarTy::F32) => (v as f32).to_bits() as u64,
        Const::Float(v, ScalarTy::F16) => half::f16::from_f64(v).to_bits() as u64,
        Const::Float(v, ScalarTy::Bf16) => half::bf16::from_f64(v).to_bits() as u64,
        Const::Float(v, _) => v.to_bits(),
        Const::Item(..) => unreachable!("{}", crate::ir::LINKED_HOLD_NO_ITEMS),
    }
}

/// The bits of `value` as a constant of type `t`.
pub fn bits_const(t: ScalarTy, value: u64) -> Const {
    match t {
        ScalarTy::Bool => Const::Bool(value & 1 != 0),
        ScalarTy::F32 => Const::Float(f32::from_bits(value as u32) as f64, t),
        ScalarTy::F64 => Const::Float(f64::from_bits(value), t),
        ScalarTy::F16 | ScalarTy::Bf16 => Const::Float(half_value(t, value) as f64, t),
        _ if t.is_signed() => Const::Int(signed(t, value) as i128, t),
        _ => Const::Int((value & mask(t)) as i128, t),
    }
}

/// The value of the `f16` or `bf16` bits `bits`, exactly, as an `f32`.
pub(super) fn half_value(t: ScalarTy, bits: u64) -> f32 {
    match t {
        ScalarTy::F16 => half::f16::from_bits(bits as u16).to_f32(),
        _ => half::bf16::from_bits(bits as u16).to_f32(),
    }
}

/// `x` rounded to the nearest `f16` or `bf16` (ties to even), once, as its bits. (The
/// `half` crate's own `from_f64` rounds through `f32` on x86 and truncates low bits
/// first in its portable code, which differ from this next to a tie.) Rounding `x` to
/// odd in `f32` first keeps enough bits that rounding that to the half type is the
/// single rounding, as the lowering computes it.
pub(super) fn half_bits(t: ScalarTy, x: f64) -> u64 {
    let x = to_f32_rounding_to_odd(x);
    match t {
        ScalarTy::F16 => half::f16::from_f32(x).to_bits() as u64,
        _ => half::bf16::from_f32(x).to_bits() as u64,
    }
}

/// `x` as an `f32`: itself when exact (or NaN), else truncated toward zero with its
/// lowest bit set.
fn to_f32_rounding_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    if nearest as f64 == x || x.is_nan() {
        return nearest;
    }
    let bits = nearest.to_bits();
    let away = (nearest as f64).abs() > x.abs();
    f32::from_bits(if away { bits - 1 } else { bits } | 1)
}

/// Why integer arithmetic has no defined result.
pub(super) enum ArithError {
    DivisionByZero,
    Overflow,
}

/// `op` on operands of type `ty` (a shift amount may have another integer type: only its
/// low bits count, and every cast the lowering makes of it keeps those).
pub(super) fn binary(op: BinOp, ty: ScalarTy, a: u64, b: u64) -> Result<u64, ArithError> {
    if ty.is_float() {
        return Ok(match ty {
            ScalarTy::F32 => float_binary(op, f32::of(a), f32::of(b)),
            // As the `half` crate computes: in `f32`, the result rounded to the type.
            // (For `+ - * /`, `f32` holds the exact result closely enough that rounding
            // twice gives the correctly rounded one, which the hardware computes.)
            ScalarTy::F16 | ScalarTy::Bf16 => {
                let v = float_binary(op, half_value(ty, a), half_value(ty, b));
                if op.is_comparison() {
                    v
                } else {
                    half_bits(ty, f32::of(v) as f64)
                }
            }
            _ => float_binary(op, f64::of(a), f64::of(b)),
        });
    }
    if op.is_comparison() {
        return Ok(int_compare(op, ty, a, b) as u64);
    }
    let m = mask(ty);
    Ok(match op {
        BinOp::Add => a.wrapping_add(b) & m,
        BinOp::Sub => a.wrapping_sub(b) & m,
        BinOp::Mul => a.wrapping_mul(b) & m,
        BinOp::Div | BinOp::Rem => int_division(op, ty, a, b)?,
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        // The amount is masked to the bit width (`andi` with `bits - 1`).
        BinOp::Shl => (a << (b & (ty.bits() as u64 - 1))) & m,
        BinOp::Shr if ty.is_signed() => {
            ((signed(ty, a) >> (b & (ty.bits() as u64 - 1))) as u64) & m
        }
        BinOp::Shr => a >> (b & (ty.bits() as u64 - 1)),
        _ => unreachable!("comparisons are handled above"),
    })
}

pub(super) fn int_compare(op: BinOp, ty: ScalarTy, a: u64, b: u64) -> bool {
    let ord = if ty.is_signed() {
        signed(ty, a).cmp(&signed(ty, b))
    } else {
        a.cmp(&b)
    };
    match op {
        BinOp::Eq => ord.is_eq(),
        BinOp::Ne => ord.is_ne(),
        BinOp::Lt => ord.is_lt(),
        BinOp::Le => ord.is_le(),
        BinOp::Gt => ord.is_gt(),
        _ => ord.is_ge(),
    }
}

/// `divsi`/`divui`/`remsi`/`remui`: undefined for a zero divisor and for `MIN / -1`.
pub(super) fn int_division(op: BinOp, ty: ScalarTy, a: u64, b: u64) -> Result<u64, ArithError> {
    if b == 0 {
        return Err(ArithError::DivisionByZero);
    }
    let div = op == BinOp::Div;
    if !ty.is_signed() {
        return Ok(if div { a / b } else { a % b });
    }
    let (x, y) = (signed(ty, a), signed(ty, b));
    let min = -(1i128 << (ty.bits() - 1));
    if x as i128 == min && y == -1 {
        return Err(ArithError::Overflow);
    }
    let r = if div { x / y } else { x % y };
    Ok(r as u64 & mask(ty))
}

pub(super) fn unary(op: UnOp, ty: ScalarTy, a: u64) -> u64 {
    match (op, ty) {
        // `negf` flips the sign bit, of NaN too.
        (UnOp::Neg, ScalarTy::F32) => a ^ (1 << 31),
        (UnOp::Neg, ScalarTy::F64) => a ^ (1 << 63),
        (UnOp::Neg, ScalarTy::F16 | ScalarTy::Bf16) => a ^ (1 << 15),
        (UnOp::Neg, _) => 0u64.wrapping_sub(a) & mask(ty),
        (UnOp::Not, _) => !a & mask(ty),
    }
}

/// Rust's `as`, as the lowering emits it.
pub(super) fn cast(from: ScalarTy, to: ScalarTy, a: u64) -> u64 {
    match (from.is_float(), to.is_float()) {
        (false, false) if from.bits() > to.bits() || !from.is_signed() => a & mask(to),
        (false, false) => signed(from, a) as u64 & mask(to),
        (false, true) => {
            let x = if from.is_signed() {
                Int::Signed(signed(from, a))
            } else {
                Int::Unsigned(a)
            };
            match (to, x) {
                (ScalarTy::F32, Int::Signed(v)) => (v as f32).bits(),
                (ScalarTy::F32, Int::Unsigned(v)) => (v as f32).bits(),
                // The validator refuses integer casts to half types; rounded once.
                (ScalarTy::F16 | ScalarTy::Bf16, Int::Signed(v)) => half_bits(to, v as f64),
                (ScalarTy::F16 | ScalarTy::Bf16, Int::Unsigned(v)) => half_bits(to, v as f64),
                (_, Int::Signed(v)) => (v as f64).bits(),
                (_, Int::Unsigned(v)) => (v as f64).bits(),
            }
        }
        (true, true) => match (from, to) {
            _ if from == to => a,
            (ScalarTy::F32, ScalarTy::F64) => (f32::of(a) as f64).bits(),
            (ScalarTy::F64, ScalarTy::F32) => (f64::of(a) as f32).bits(),
            // To a half type: rounded once, from the exact value (`f16::from_f64`).
            (_, ScalarTy::F16 | ScalarTy::Bf16) => half_bits(to, float_value(from, a)),
            // From a half type: exact.
            (_, ScalarTy::F32) => half_value(from, a).bits(),
            _ => (half_value(from, a) as f64).bits(),
        },
        (true, false) => {
            // f32 → f64 is exact, and Rust's float-to-int `as` saturates with NaN as 0,
            // as the lowering's clamp-convert-select sequence does.
            saturating_float_to_int(float_value(from, a), to)
        }
    }
}

/// The value of float bits of type `t`, exactly, as an `f64`.
fn float_value(t: ScalarTy, bits: u64) -> f64 {
    match t {
        ScalarTy::F32 => f32::of(bits) as f64,
        ScalarTy::F16 | ScalarTy::Bf16 => half_value(t, bits) as f64,
        _ => f64::of(bits),
    }
}

enum Int {
    Signed(i64),
    Unsigned(u64),
}

pub(super) fn saturating_float_to_int(x: f64, to: ScalarTy) -> u64 {
    let m = mask(to);
    match to {
        ScalarTy::I8 => x as i8 as u64 & m,
        ScalarTy::I16 => x as i16 as u64 & m,
        ScalarTy::I32 => x as i32 as u64 & m,
        ScalarTy::I64 | ScalarTy::Isize => x as i64 as u64,
        ScalarTy::U8 => x as u8 as u64,
        ScalarTy::U16 => x as u16 as u64,
        ScalarTy::U32 => x as u32 as u64,
        ScalarTy::U64 | ScalarTy::Usize => x as u64,
        // The validator refuses casts to `bool` from anything else.
        ScalarTy::Bool | ScalarTy::F32 | ScalarTy::F64 | ScalarTy::F16 | ScalarTy::Bf16 => {
            unreachable!("not an integer")
        }
    }
}

pub(super) fn intrinsic(i: Intrinsic, ty: ScalarTy, args: &[u64]) -> u64 {
    // Values are kept as their bits: reading them as another type of the same width
    // changes nothing.
    if matches!(i, Intrinsic::ToBits | Intrinsic::FromBits) {
        return args[0] & mask(ty);
    }
    match ty {
        ScalarTy::F32 => float_intrinsic::<f32>(i, args),
        ScalarTy::F64 => float_intrinsic::<f64>(i, args),
        // `min` and `max`, the only functions of `f16` and `bf16`, pick an operand:
        // computed in `f32`, which holds both exactly.
        ScalarTy::F16 | ScalarTy::Bf16 => {
            let wide: Vec<u64> = args.iter().map(|a| half_value(ty, *a).bits()).collect();
            half_bits(ty, f32::of(float_intrinsic::<f32>(i, &wide)) as f64)
        }
        _ => int_intrinsic(i, ty, args),
    }
}

pub(super) fn int_intrinsic(i: Intrinsic, ty: ScalarTy, args: &[u64]) -> u64 {
    let (a, m) = (args[0], mask(ty));
    let unused = 64 - ty.bits();
    match i {
        // `absi` without the poison flag: `abs(MIN)` is `MIN`.
        Intrinsic::Abs => signed(ty, a).wrapping_abs() as u64 & m,
        Intrinsic::Min | Intrinsic::Max => {
            let b = args[1];
            let a_less = int_compare(BinOp::Lt, ty, a, b);
            if a_less == (i == Intrinsic::Min) {
                a
            } else {
                b
            }
        }
        Intrinsic::LeadingZeros => (a.leading_zeros() - unused) as u64,
        Intrinsic::TrailingZeros => (a.trailing_zeros().min(ty.bits())) as u64,
        Intrinsic::CountOnes => a.count_ones() as u64,
        _ => unreachable!("validated: `{}` is defined on floats only", i.name()),
    }
}

/// The float operations of `f32` and `f64`, on raw bits.
pub(super) trait Float:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
{
    const ONE: Self;
    fn of(bits: u64) -> Self;
    fn bits(self) -> u64;
    fn is_nan(self) -> bool;
    /// The function of `meaning` for this type, on `args`' bits; `None` for a rule of
    /// the interpreter's own.
    fn apply(meaning: Meaning, args: &[u64]) -> Option<Self>;
}

macro_rules! impl_float {
    ($t:ty, $u:ty, $pick:tt => $f:ident) => {
        impl Float for $t {
            const ONE: Self = 1.0;
            fn of(bits: u64) -> Self {
                <$t>::from_bits(bits as $u)
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn apply(meaning: Meaning, args: &[u64]) -> Option<Self> {
                let a = |k: usize| Self::of(args[k]);
                Some(match meaning {
                    Meaning::Unary $pick => $f(a(0)),
                    Meaning::Binary $pick => $f(a(0), a(1)),
                    Meaning::Ternary $pick => $f(a(0), a(1), a(2)),
                    Meaning::Rule => return None,
                })
            }
        }
    };
}

// Each row holds Rust's function for `f32` first and for `f64` second.
impl_float!(f32, u32, (f, _) => f);
impl_float!(f64, u64, (_, f) => f);

pub(super) fn float_binary<T: Float>(op: BinOp, a: T, b: T) -> u64 {
    let bool_bits = |b: bool| b as u64;
    match op {
        BinOp::Add => (a + b).bits(),
        BinOp::Sub => (a - b).bits(),
        BinOp::Mul => (a * b).bits(),
        BinOp::Div => (a / b).bits(),
        // `remf` is C's `fmod`, as Rust's `%`.
        BinOp::Rem => (a % b).bits(),
        BinOp::Eq => bool_bits(a == b),
        // `une`: true when either side is NaN.
        BinOp::Ne => bool_bits(a != b),
        BinOp::Lt => bool_bits(a < b),
        BinOp::Le => bool_bits(a <= b),
        BinOp::Gt => bool_bits(a > b),
        BinOp::Ge => bool_bits(a >= b),
        _ => unreachable!("validated: `{}` is not defined on floats", op.name()),
    }
}

pub(super) fn float_intrinsic<T: Float>(i: Intrinsic, args: &[u64]) -> u64 {
    if let Some(v) = T::apply(i.def().meaning, args) {
        return v.bits();
    }
    let a = T::of(args[0]);
    match i {
        Intrinsic::Min | Intrinsic::Max => min_max_num(i == Intrinsic::Min, a, T::of(args[1])),
        Intrinsic::Powi => powi(a, args[1] as u32 as i32).bits(),
        _ => unreachable!("validated: `{}` has a meaning on floats", i.name()),
    }
}

/// `minnumf`/`maxnumf`: a NaN operand yields the other one. Equal operands (`+0.0` and
/// `-0.0`) yield the first, as x86's `minss`/`maxss` sequence for `llvm.minnum` does;
/// LLVM's constant folder instead orders `-0.0` below `+0.0`.
pub(super) fn min_max_num<T: Float>(min: bool, a: T, b: T) -> u64 {
    let pick_b = if a.is_nan() {
        true
    } else if b.is_nan() {
        false
    } else if min {
        b < a
    } else {
        b > a
    };
    if pick_b { b.bits() } else { a.bits() }
}

/// `math.fpowi` as `convert-math-to-funcs` outlines it for the CPU: square and multiply
/// over `|p|`, then the reciprocal for a negative power. (A `powi` whose operands are
/// both constants is folded with libm's `pow` instead, which can differ in the last bit.)
pub(super) fn powi<T: Float>(b: T, p: i32) -> T {
    if p == 0 {
        return T::ONE;
    }
    let (negative, is_min) = (p < 0, p == i32::MIN);
    let mut p = if is_min { i32::MAX } else { p.wrapping_abs() } as u32;
    let (mut result, mut base) = (T::ONE, b);
    loop {
        if p & 1 != 0 {
            result = result * base;
        }
        p >>= 1;
        if p == 0 {
            break;
        }
        base = base * base;
    }
    if is_min {
        result = result * b;
    }
    if negative { T::ONE / result } else { result }
}

/// A subgroup operation with one lane per subgroup, as on the CPU backend.
pub(super) fn one_lane_subgroup(op: SubgroupOp, args: &[u64]) -> u64 {
    match op {
        SubgroupOp::Size => 1,
        SubgroupOp::Lane => 0,
        // Every other lane is outside the subgroup: the thread's own value.
        SubgroupOp::Shuffle
        | SubgroupOp::ShuffleXor
        | SubgroupOp::Sum
        | SubgroupOp::Min
        | SubgroupOp::Max => args[0],
        // The thread's own bit; `any` and `all` of one lane are the value.
        SubgroupOp::Ballot | SubgroupOp::Any | SubgroupOp::All => args[0] & 1,
    }
}

/// `memref.atomic_rmw` of the kind the lowering picks for `op` on `elem`.
/// With `ftz`, an `f32` add flushes subnormal operands and result to zero (see
/// [`Options`](super::Options)).
pub(super) fn atomic_rmw(op: AtomicOp, elem: ScalarTy, old: u64, v: u64, ftz: bool) -> u64 {
    let flush = |x: f32| {
        if ftz && x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    match op {
        AtomicOp::Add if elem == ScalarTy::F32 => {
            flush(flush(f32::of(old)) + flush(f32::of(v))).bits()
        }
        AtomicOp::Add if elem == ScalarTy::F64 => (f64::of(old) + f64::of(v)).bits(),
        // Rounded to the type, as the `half` crate adds (and `atom.add.noftz.f16`).
        AtomicOp::Add if elem.is_half() => {
            half_bits(elem, (half_value(elem, old) + half_value(elem, v)) as f64)
        }
        AtomicOp::Add => old.wrapping_add(v),
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
        AtomicOp::Exchange => v,
        AtomicOp::Min | AtomicOp::Max => {
            let v_less = int_compare(BinOp::Lt, elem, v, old);
            if v_less == (op == AtomicOp::Min) {
                v
            } else {
                old
            }
        }
    }
}
