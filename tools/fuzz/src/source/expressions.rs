//! The expressions of a source kernel: each of a type, with whether it may differ
//! between a workgroup's threads.

use super::{Src, T};
use crate::Construct;

impl Src<'_> {
    /// An expression of type `ty`, and whether its value may vary between threads.
    pub(super) fn expr(&mut self, ty: T, depth: u32) -> (String, bool) {
        if depth == 0 || self.rng.u32(0..3) == 0 {
            return self.leaf(ty);
        }
        if ty == T::Bool {
            return self.condition(depth);
        }
        if self.generic && ty == self.elem {
            // Generic code: arithmetic and `Float` methods only.
            let (a, va) = self.expr(ty, depth - 1);
            let (b, vb) = self.expr(ty, depth - 1);
            self.note(Construct::GenericKernel);
            return match self.rng.u32(0..4) {
                0 => (format!("({a} + {b})"), va || vb),
                1 => (format!("({a} * {b})"), va || vb),
                2 => (format!("E::max({a}, {b})"), va || vb),
                _ => (format!("({a} - {b}).abs()"), va || vb),
            };
        }
        match self.rng.u32(0..16) {
            0..=3 => self.arithmetic(ty, depth),
            4 => self.cast_to(ty, depth),
            5 | 6 => self.method(ty, depth),
            7 => self.if_value(ty, depth),
            8 => self.match_value(ty, depth),
            9 => self.closure_call(ty, depth),
            10 => self.reduction(ty),
            11 => self.slice_get(ty),
            12 => self.array_read(ty, depth),
            13 => self.loop_value(ty),
            14 if self.uniform && self.depth == 0 && self.guarded == 0 => self.subgroup(ty, depth),
            _ => self.position(ty),
        }
    }

    pub(super) fn leaf(&mut self, ty: T) -> (String, bool) {
        if self.rng.u32(0..3) != 0
            && let Some(v) = self.var_of(ty)
        {
            return (v.name, v.varying);
        }
        (self.literal(ty), false)
    }

    pub(super) fn condition(&mut self, depth: u32) -> (String, bool) {
        let ty = self.pick_numeric();
        let (a, va) = self.expr(ty, depth - 1);
        let (b, vb) = self.expr(ty, depth - 1);
        let cmp = ["<", "<=", ">", ">=", "==", "!="][self.rng.usize(..6)];
        self.note(Construct::Comparisons);
        match self.rng.u32(0..6) {
            0 => {
                self.note(Construct::ShortCircuit);
                let (c, vc) = self.guarded(|s| s.expr(T::Bool, depth - 1));
                let op = ["&&", "||"][self.rng.usize(..2)];
                (format!("({a} {cmp} {b} {op} {c})"), va || vb || vc)
            }
            1 => {
                self.note(Construct::Unary);
                (format!("!({a} {cmp} {b})"), va || vb)
            }
            2 if !ty.is_float() => {
                self.note(Construct::Matches);
                (format!("matches!({a}, 1 | 3..=7)"), va)
            }
            3 if ty.is_float() => {
                self.note(Construct::FloatMethods);
                let m = ["is_nan", "is_finite", "is_sign_negative"][self.rng.usize(..3)];
                (format!("{a}.{m}()"), va)
            }
            _ => (format!("({a} {cmp} {b})"), va || vb),
        }
    }

    pub(super) fn arithmetic(&mut self, ty: T, depth: u32) -> (String, bool) {
        let (a, va) = self.expr(ty, depth - 1);
        let (b, vb) = self.expr(ty, depth - 1);
        self.note(Construct::Arithmetic);
        let ops: &[&str] = if ty.is_float() {
            &["+", "-", "*", "/"]
        } else {
            &["+", "-", "*", "&", "|", "^", "<<", ">>", "/", "%"]
        };
        let op = ops[self.rng.usize(..ops.len())];
        match op {
            // A divisor that is never zero, and for signed types never -1.
            "/" | "%" if !ty.is_float() => {
                self.note(Construct::Panics);
                let d = self.rng.u32(2..9);
                (
                    format!("({a} {op} (({b}) & 7{tn} | {d}{tn}))", tn = ty.name()),
                    va || vb,
                )
            }
            "<<" | ">>" => (format!("({a} {op} ({b} & 31{}))", ty.name()), va || vb),
            _ => (format!("({a} {op} {b})"), va || vb),
        }
    }

    pub(super) fn cast_to(&mut self, ty: T, depth: u32) -> (String, bool) {
        let from = self.pick_numeric();
        let (a, va) = self.expr(from, depth - 1);
        self.note(Construct::Casts);
        if self.rng.u32(0..4) == 0 && from == T::U32 && matches!(ty, T::U64 | T::I64 | T::F64) {
            self.note(Construct::FromConversions);
            return (format!("{}::from({a})", ty.name()), va);
        }
        (format!("({a} as {})", self.ty_name(ty)), va)
    }

    pub(super) fn method(&mut self, ty: T, depth: u32) -> (String, bool) {
        let (a, va) = self.expr(ty, depth - 1);
        let (b, vb) = self.expr(ty, depth - 1);
        let v = va || vb;
        if ty.is_float() {
            self.note(Construct::FloatMethods);
            let t = self.ty_name(ty);
            return match self.rng.u32(0..9) {
                0 => (format!("{a}.abs().sqrt()"), va),
                1 => (format!("{a}.floor()"), va),
                2 => (format!("{a}.mul_add({b}, 1.5{t})"), v),
                3 => {
                    self.note(Construct::MethodsByPath);
                    (format!("{t}::min({a}, {b})"), v)
                }
                4 => (format!("{a}.clamp(-4.0{t}, 4.0{t})"), va),
                5 => (format!("{a}.powi(3)"), va),
                6 => (format!("{t}::from_bits({a}.to_bits() ^ 1)"), va),
                7 if self.transcendentals => (format!("{a}.sin() + {b}.exp2()"), v),
                _ => (format!("{a}.max({b}).round()"), v),
            };
        }
        self.note(Construct::IntegerMethods);
        let t = ty.name();
        match self.rng.u32(0..9) {
            0 => (format!("{a}.min({b})"), v),
            1 => (format!("{a}.wrapping_mul({b})"), v),
            2 => (format!("{a}.saturating_sub({b})"), v),
            3 => (format!("{a}.rotate_left(5)"), va),
            4 => (format!("({a}.count_ones() as {t})"), va),
            5 => (format!("{a}.clamp(2{t}, 30{t})"), va),
            6 => {
                self.note(Construct::MethodsByPath);
                (format!("{t}::max({a}, {b})"), v)
            }
            7 if ty.is_signed() => (format!("{a}.rem_euclid(7{t})"), va),
            _ => (format!("({a}.abs_diff({b}) as {t})"), v),
        }
    }

    pub(super) fn if_value(&mut self, ty: T, depth: u32) -> (String, bool) {
        let (c, vc) = self.expr(T::Bool, depth - 1);
        let (a, va) = self.guarded(|s| s.expr(ty, depth - 1));
        let (b, vb) = self.guarded(|s| s.expr(ty, depth - 1));
        self.note(Construct::IfElse);
        (format!("(if {c} {{ {a} }} else {{ {b} }})"), vc || va || vb)
    }

    pub(super) fn match_value(&mut self, ty: T, depth: u32) -> (String, bool) {
        let on = [T::I32, T::U32, T::Usize, T::I64][self.rng.usize(..4)];
        let (d, vd) = self.expr(on, depth - 1);
        let arms: Vec<(String, bool)> = (0..4)
            .map(|_| self.guarded(|s| s.expr(ty, depth - 1)))
            .collect();
        self.note(Construct::Match);
        let guard = if on.is_signed() {
            "g if g < 0"
        } else {
            "g if g > 30"
        };
        let v = vd || arms.iter().any(|a| a.1);
        (
            format!(
                "(match {d} {{ 0 => {}, 1..=4 | 9 => {}, {guard} => {}, _ => {} }})",
                arms[0].0, arms[1].0, arms[2].0, arms[3].0
            ),
            v,
        )
    }

    pub(super) fn closure_call(&mut self, ty: T, depth: u32) -> (String, bool) {
        let found: Vec<(String, T)> = (self.closures.iter())
            .filter(|c| c.2 == ty)
            .map(|c| (c.0.clone(), c.1))
            .collect();
        if found.is_empty() {
            return self.arithmetic(ty, depth);
        }
        let (name, param) = found[self.rng.usize(..found.len())].clone();
        let (a, va) = self.expr(param, depth - 1);
        self.note(Construct::Closures);
        // A closure may capture varying values.
        let _ = va;
        (format!("{name}({a})"), true)
    }

    /// An iterator reduction over the slice `x: &[f32]` (or `w: &[i32]`).
    pub(super) fn reduction(&mut self, ty: T) -> (String, bool) {
        self.note(Construct::IteratorReductions);
        let r = match self.rng.u32(0..8) {
            0 => "x.iter().map(|v| v * 0.5).sum::<f32>()".to_string(),
            5 => {
                self.note(Construct::SubSlices);
                "x[(n as usize % 3).min(x.len())..].iter().map(|v| v * 0.25).sum::<f32>()".into()
            }
            6 => {
                self.note(Construct::SubSlices);
                // Past the end for short slices: Rust's panic, from the interpreter too.
                "w[1..=(n as usize % 6)].iter().rev().fold(0i32, |a, v| a.wrapping_mul(3).wrapping_add(*v))"
                    .into()
            }
            7 => "(0..(n as usize % 5)).map(|k| k as f32 * 0.5).sum::<f32>()".into(),
            1 => {
                self.note(Construct::Zip);
                "x.iter().zip(w.iter()).map(|(p, q)| p * (*q as f32)).sum::<f32>()".into()
            }
            2 => "x.iter().copied().fold(0.0f32, f32::max)".into(),
            3 => "w.iter().fold(0i32, |acc, v| acc.wrapping_add(*v))".into(),
            _ => "x.iter().rev().fold(1.0f32, |acc, &v| acc * 0.5 + v)".into(),
        };
        (format!("({r} as {})", self.ty_name(ty)), false)
    }

    pub(super) fn slice_get(&mut self, ty: T) -> (String, bool) {
        let (i, _) = self.index_expr();
        self.note(Construct::SliceGet);
        let read = match self.rng.u32(0..4) {
            0 => format!("x.get({i}).copied().unwrap_or(-1.0)"),
            1 => "x.first().copied().unwrap_or(2.0)".into(),
            2 => {
                self.note(Construct::SliceIndexing);
                format!("(if {i} < x.len() {{ x[{i}] }} else {{ 0.5 }})")
            }
            _ => {
                self.note(Construct::Unsafe);
                "(if !x.is_empty() { unsafe { *x.get_unchecked(x.len() - 1) } } else { 0.0 })"
                    .into()
            }
        };
        (format!("({read} as {})", self.ty_name(ty)), true)
    }

    /// A `usize` index: the thread's global index or a variable, not past a few hundred.
    pub(super) fn index_expr(&mut self) -> (String, bool) {
        match self.var_of(T::Usize) {
            Some(v) if self.rng.bool() => (format!("({} % 64)", v.name), v.varying),
            _ => ("gid".into(), true),
        }
    }

    pub(super) fn array_read(&mut self, ty: T, depth: u32) -> (String, bool) {
        if ty == T::Bool || self.generic && ty == self.elem {
            return self.leaf(ty);
        }
        let (k, vk) = self.expr(T::Usize, depth - 1);
        self.note(Construct::ConstArrays);
        let table = ["TI", "TF", "lu"][self.rng.usize(..3)];
        (
            format!("({table}[{k} % {table}.len()] as {})", ty.name()),
            vk,
        )
    }

    pub(super) fn loop_value(&mut self, ty: T) -> (String, bool) {
        self.note(Construct::LoopValue);
        let (limit, v) = self.leaf(ty);
        let step = self.literal(ty);
        let s = format!(
            "{{ let mut k = 0u32; let mut acc = {limit}; loop {{ if k >= 3 {{ break acc; }} acc = acc + {step}; k += 1; }} }}"
        );
        (s, v)
    }

    pub(super) fn subgroup(&mut self, ty: T, depth: u32) -> (String, bool) {
        if !matches!(ty, T::I32 | T::U32 | T::I64 | T::U64 | T::F32 | T::F64) {
            return self.position(ty);
        }
        let (a, _) = self.expr(ty, depth - 1);
        self.note(Construct::SubgroupOps);
        let op = match self.rng.u32(0..5) {
            0 => format!("subgroup_sum({a})"),
            1 => format!("subgroup_max({a})"),
            2 => format!("subgroup_shuffle_xor({a}, 1)"),
            3 => format!("subgroup_broadcast({a}, 0)"),
            _ => format!("subgroup_shuffle({a}, subgroup_lane() + 1)"),
        };
        (op, true)
    }

    pub(super) fn position(&mut self, ty: T) -> (String, bool) {
        self.note(Construct::ThreadPosition);
        let (p, varying) = match self.rng.u32(0..6) {
            0 => ("thread_idx(0)", true),
            1 => ("workgroup_idx(0)", true),
            2 => ("workgroup_dim(0)", false),
            3 => ("workgroup_count(0)", false),
            4 => ("thread_rank()", true),
            _ => ("gid", true),
        };
        if ty == T::Bool {
            return (format!("({p} % 2 == 0)"), varying);
        }
        (format!("({p} as {})", self.ty_name(ty)), varying)
    }
}
