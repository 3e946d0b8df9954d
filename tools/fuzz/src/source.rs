//! Random kernels written as Rust source, in the kernel language the README documents:
//! what the MIR generator cannot say, since the translator turns it into plain MIR
//! (closures, iterator chains, tuple assignment and `swap`, `match` with ranges and
//! guards, labelled loops, loop values, the thread's own arrays, `const` arrays, methods
//! by path, device functions, generic kernels, `Shared2D`, tree reductions, workgroup
//! reductions, every strategy and interiors). [`generate_source`] writes one, translates
//! it with `offload-frontend` as the macro would, inlines its device function, and gives
//! its inputs and launch, so the differential check runs it like any generated program.
//!
//! Every kernel is well typed and follows the safety rules the README states (barriers
//! and subgroup operations in uniform control flow, shared rounds separated by barriers,
//! atomics updated commutatively), so `link` must accept it: a refusal, or a translation
//! error, is a failure.

use crate::{Construct, Program};
use fastrand::Rng;
use offload_mir::interp::{ArgValue, Launch, Layout, bits_const};
use offload_mir::{Body, Const, ScalarTy};
use std::collections::BTreeSet;

/// The scalar types a source kernel computes with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum T {
    I32,
    U32,
    I64,
    U64,
    Usize,
    F32,
    F64,
    Bool,
}

impl T {
    const NUMERIC: [T; 7] = [T::I32, T::U32, T::I64, T::U64, T::Usize, T::F32, T::F64];

    fn name(self) -> &'static str {
        match self {
            T::I32 => "i32",
            T::U32 => "u32",
            T::I64 => "i64",
            T::U64 => "u64",
            T::Usize => "usize",
            T::F32 => "f32",
            T::F64 => "f64",
            T::Bool => "bool",
        }
    }

    fn is_float(self) -> bool {
        matches!(self, T::F32 | T::F64)
    }

    fn is_signed(self) -> bool {
        matches!(self, T::I32 | T::I64)
    }

    fn scalar(self) -> ScalarTy {
        match self {
            T::I32 => ScalarTy::I32,
            T::U32 => ScalarTy::U32,
            T::I64 => ScalarTy::I64,
            T::U64 => ScalarTy::U64,
            T::Usize => ScalarTy::Usize,
            T::F32 => ScalarTy::F32,
            T::F64 => ScalarTy::F64,
            T::Bool => ScalarTy::Bool,
        }
    }

    /// A literal of this type, suffixed.
    fn literal(self, rng: &mut Rng) -> String {
        match self {
            T::Bool => ["true", "false"][rng.usize(..2)].into(),
            // Negative literals in parentheses: `-2.5f32.abs()` negates the call.
            T::F32 | T::F64 => {
                let v: f64 = [0.0, 0.5, 1.0, -2.25, 3.0, 1e3, -0.125, 7.5][rng.usize(..8)];
                match v < 0.0 {
                    true => format!("({v:?}{})", self.name()),
                    false => format!("{v:?}{}", self.name()),
                }
            }
            T::I32 | T::I64 => match rng.i32(-20..=40) {
                v if v < 0 => format!("({v}{})", self.name()),
                v => format!("{v}{}", self.name()),
            },
            _ => format!("{}{}", rng.u32(0..=40), self.name()),
        }
    }
}

/// The strategy of the kernel's written region.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Shape {
    Linear1D,
    Chunked(usize),
    Indexed,
    Linear2D { interior: bool },
    Linear3D { interior: bool },
}

/// A named local of the kernel, and whether it may differ between a workgroup's threads.
#[derive(Clone, Debug)]
struct Var {
    name: String,
    ty: T,
    varying: bool,
    mutable: bool,
}

struct Src<'r> {
    rng: &'r mut Rng,
    out: String,
    indent: usize,
    vars: Vec<Var>,
    next: u32,
    /// Whether the code being written runs for all threads of a workgroup or none.
    uniform: bool,
    depth: u32,
    /// Inside an expression that only some threads may evaluate (an arm of an `if` or
    /// `match` value, the right of `&&`, a closure's body): no subgroup operation.
    guarded: u32,
    budget: u32,
    constructs: BTreeSet<Construct>,
    /// The element type of the written region (`T` in a generic kernel).
    elem: T,
    generic: bool,
    shape: Shape,
    threads: [u32; 3],
    /// Closures bound so far: name, parameter type, result type.
    closures: Vec<(String, T, T)>,
    has_hist: bool,
    /// The one update every thread makes to `hist`: any one commutes with itself, so
    /// the result does not depend on the order threads run in (two kinds would).
    hist_op: &'static str,
    /// Shared arrays declared so far, with their element types and lengths.
    shared: Vec<(String, T, usize)>,
    transcendentals: bool,
}

/// How many shared and tree rounds a kernel may have: each declares an array.
const MAX_SHARED: usize = 3;

impl Src<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn note(&mut self, c: Construct) {
        self.constructs.insert(c);
    }

    /// The name a type is written with: the generic parameter for the element type of a
    /// generic kernel.
    fn ty_name(&self, ty: T) -> &'static str {
        if self.generic && ty == self.elem {
            "E"
        } else {
            ty.name()
        }
    }

    fn pick_numeric(&mut self) -> T {
        T::NUMERIC[self.rng.usize(..T::NUMERIC.len())]
    }

    /// A variable of type `ty`, if one is in scope.
    fn var_of(&mut self, ty: T) -> Option<Var> {
        let found: Vec<Var> = self.vars.iter().filter(|v| v.ty == ty).cloned().collect();
        (!found.is_empty()).then(|| found[self.rng.usize(..found.len())].clone())
    }

    /// A literal of type `ty`, written as a generic kernel must for its element type.
    fn literal(&mut self, ty: T) -> String {
        let lit = ty.literal(self.rng);
        if self.generic && ty == self.elem {
            self.note(Construct::GenericLiterals);
            let value = lit
                .trim_matches('(')
                .trim_end_matches(')')
                .trim_end_matches(ty.name());
            return match self.rng.u32(0..3) {
                0 => "E::ZERO".into(),
                1 => "E::ONE".into(),
                _ => format!("E::from_f64({value})"),
            };
        }
        lit
    }

    /// An expression of type `ty`, and whether its value may vary between threads.
    fn expr(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    fn leaf(&mut self, ty: T) -> (String, bool) {
        if self.rng.u32(0..3) != 0
            && let Some(v) = self.var_of(ty)
        {
            return (v.name, v.varying);
        }
        (self.literal(ty), false)
    }

    fn condition(&mut self, depth: u32) -> (String, bool) {
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

    fn arithmetic(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    fn cast_to(&mut self, ty: T, depth: u32) -> (String, bool) {
        let from = self.pick_numeric();
        let (a, va) = self.expr(from, depth - 1);
        self.note(Construct::Casts);
        if self.rng.u32(0..4) == 0 && from == T::U32 && matches!(ty, T::U64 | T::I64 | T::F64) {
            self.note(Construct::FromConversions);
            return (format!("{}::from({a})", ty.name()), va);
        }
        (format!("({a} as {})", self.ty_name(ty)), va)
    }

    fn method(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    /// `f`'s expression, generated as one only some threads may evaluate.
    fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.guarded += 1;
        let r = f(self);
        self.guarded -= 1;
        r
    }

    fn if_value(&mut self, ty: T, depth: u32) -> (String, bool) {
        let (c, vc) = self.expr(T::Bool, depth - 1);
        let (a, va) = self.guarded(|s| s.expr(ty, depth - 1));
        let (b, vb) = self.guarded(|s| s.expr(ty, depth - 1));
        self.note(Construct::IfElse);
        (format!("(if {c} {{ {a} }} else {{ {b} }})"), vc || va || vb)
    }

    fn match_value(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    fn closure_call(&mut self, ty: T, depth: u32) -> (String, bool) {
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
    fn reduction(&mut self, ty: T) -> (String, bool) {
        self.note(Construct::IteratorReductions);
        let r = match self.rng.u32(0..5) {
            0 => "x.iter().map(|v| v * 0.5).sum::<f32>()".to_string(),
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

    fn slice_get(&mut self, ty: T) -> (String, bool) {
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
    fn index_expr(&mut self) -> (String, bool) {
        match self.var_of(T::Usize) {
            Some(v) if self.rng.bool() => (format!("({} % 64)", v.name), v.varying),
            _ => ("gid".into(), true),
        }
    }

    fn array_read(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    fn loop_value(&mut self, ty: T) -> (String, bool) {
        self.note(Construct::LoopValue);
        let (limit, v) = self.leaf(ty);
        let step = self.literal(ty);
        let s = format!(
            "{{ let mut k = 0u32; let mut acc = {limit}; loop {{ if k >= 3 {{ break acc; }} acc = acc + {step}; k += 1; }} }}"
        );
        (s, v)
    }

    fn subgroup(&mut self, ty: T, depth: u32) -> (String, bool) {
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

    fn position(&mut self, ty: T) -> (String, bool) {
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

    fn bind(&mut self, ty: T, value: String, varying: bool) -> String {
        let name = self.fresh("v");
        let mutable = self.rng.bool();
        let m = if mutable { "mut " } else { "" };
        if self.rng.u32(0..3) == 0 {
            self.line(&format!("let {m}{name} = {value};"));
        } else {
            let t = self.ty_name(ty);
            self.line(&format!("let {m}{name}: {t} = {value};"));
        }
        self.note(Construct::Let);
        self.vars.push(Var {
            name: name.clone(),
            ty,
            varying: varying || !self.uniform,
            mutable,
        });
        name
    }

    /// Statements until the budget is spent.
    fn block(&mut self) {
        for _ in 0..self.rng.u32(1..=4) {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.statement();
        }
    }

    /// A nested block in its own scope, one level deeper.
    fn scoped(&mut self, varying: bool, body: impl FnOnce(&mut Self)) {
        let (mark, closures, outer) = (self.vars.len(), self.closures.len(), self.uniform);
        self.uniform = outer && !varying;
        self.depth += 1;
        self.indent += 1;
        body(self);
        self.indent -= 1;
        self.depth -= 1;
        self.vars.truncate(mark);
        self.closures.truncate(closures);
        self.uniform = outer;
    }

    fn statement(&mut self) {
        let shallow = self.depth < 3;
        match self.rng.u32(0..18) {
            0..=3 => {
                let ty = if self.rng.u32(0..3) == 0 {
                    self.elem
                } else {
                    self.pick_numeric()
                };
                let (e, v) = self.expr(ty, 3);
                self.bind(ty, e, v);
            }
            4 => self.assign(),
            5 => self.swap(),
            6 if shallow => self.if_statement(),
            7 if shallow => self.for_loop(),
            8 if shallow => self.while_loop(),
            9 if shallow => self.labelled_loops(),
            10 => self.closure(),
            11 => self.thread_array(),
            12 if self.uniform && self.depth == 0 => self.shared_round(),
            13 if self.uniform && self.depth == 0 => self.tree_reduction(),
            14 if self.uniform && self.depth == 0 => self.workgroup_reduction(),
            15 => self.atomic(),
            16 => self.assertion(),
            _ => self.device_call(),
        }
    }

    fn assign(&mut self) {
        let targets: Vec<Var> = self.vars.iter().filter(|v| v.mutable).cloned().collect();
        if targets.is_empty() {
            return;
        }
        let t = targets[self.rng.usize(..targets.len())].clone();
        if t.ty == T::Bool {
            let (e, v) = self.expr(T::Bool, 2);
            self.line(&format!("{} = {e};", t.name));
            self.mark_varying(&t.name, v);
            return;
        }
        let (e, v) = self.expr(t.ty, 2);
        self.note(Construct::Assignment);
        let ops: &[&str] = if t.ty.is_float() || self.generic && t.ty == self.elem {
            &["=", "+=", "*="]
        } else {
            &["=", "+=", "^=", "|="]
        };
        let op = ops[self.rng.usize(..ops.len())];
        self.line(&format!("{} {op} {e};", t.name));
        self.mark_varying(&t.name, v);
    }

    fn mark_varying(&mut self, name: &str, varying: bool) {
        let uniform = self.uniform;
        // A variable written in varying control flow, or with a varying value, varies
        // from then on, also outside the branch.
        if let Some(v) = self.vars.iter_mut().find(|v| v.name == name) {
            v.varying |= varying || !uniform;
        }
    }

    fn swap(&mut self) {
        let targets: Vec<Var> = self.vars.iter().filter(|v| v.mutable).cloned().collect();
        for a in &targets {
            let other = targets.iter().find(|b| b.ty == a.ty && b.name != a.name);
            if let Some(b) = other {
                let (a, b) = (a.clone(), b.clone());
                if self.rng.bool() {
                    self.note(Construct::TupleAssignment);
                    self.line(&format!("({0}, {1}) = ({1}, {0});", a.name, b.name));
                } else {
                    self.note(Construct::Swap);
                    self.line(&format!(
                        "std::mem::swap(&mut {}, &mut {});",
                        a.name, b.name
                    ));
                }
                let either = a.varying || b.varying;
                self.mark_varying(&a.name, either);
                self.mark_varying(&b.name, either);
                return;
            }
        }
    }

    fn if_statement(&mut self) {
        let (c, varying) = self.expr(T::Bool, 2);
        self.note(Construct::IfElse);
        self.line(&format!("if {c} {{"));
        let early = !varying && self.uniform && self.rng.u32(0..10) == 0;
        self.scoped(varying, |s| {
            s.block();
            if early {
                s.note(Construct::EarlyReturn);
                s.line("return;");
            }
        });
        self.line("} else {");
        self.scoped(varying, |s| s.block());
        self.line("}");
    }

    fn for_loop(&mut self) {
        self.note(Construct::ForLoops);
        let k = self.fresh("k");
        let (head, ty) = match self.rng.u32(0..6) {
            0 => (format!("for {k} in 0..3usize"), T::Usize),
            1 => (format!("for {k} in (0..9u32).step_by(4)"), T::U32),
            2 => (format!("for {k} in (1..=3i32).rev()"), T::I32),
            3 => {
                self.note(Construct::LoopsOverElements);
                (format!("for (_, &{k}) in x.iter().enumerate()"), T::F32)
            }
            4 => {
                self.note(Construct::LoopsOverElements);
                (format!("for &{k} in w.iter().rev()"), T::I32)
            }
            _ => (format!("for {k} in 0..(n as usize % 4)"), T::Usize),
        };
        // The element loops run for every thread alike; `n` is a scalar argument.
        self.line(&format!("{head} {{"));
        self.scoped(false, |s| {
            s.vars.push(Var {
                name: k.clone(),
                ty,
                varying: false,
                mutable: false,
            });
            s.block();
        });
        self.line("}");
    }

    fn while_loop(&mut self) {
        self.note(Construct::WhileLoops);
        let k = self.fresh("c");
        self.line(&format!("let mut {k} = 0u32;"));
        let (bound, varying) = self.leaf(T::U32);
        self.line(&format!("while {k} < ({bound} % 4) {{"));
        self.scoped(varying, |s| {
            s.line(&format!("{k} += 1;"));
            if s.rng.u32(0..3) == 0 {
                s.line(&format!("if {k} == 2 {{ continue; }}"));
            }
            s.block();
        });
        self.line("}");
    }

    fn labelled_loops(&mut self) {
        self.note(Construct::Labels);
        let (i, j) = (self.fresh("i"), self.fresh("j"));
        let (c, varying) = self.expr(T::Bool, 1);
        self.line(&format!("'outer: for {i} in 0..3u32 {{"));
        self.scoped(varying, |s| {
            s.line(&format!("for {j} in 0..3u32 {{"));
            s.indent += 1;
            s.line(&format!("if {j} > {i} {{ continue 'outer; }}"));
            s.line(&format!("if {c} && {j} == 1 {{ break 'outer; }}"));
            s.indent -= 1;
            s.line("}");
        });
        self.line("}");
    }

    fn closure(&mut self) {
        let (param, result) = (self.pick_numeric(), self.pick_numeric());
        if self.generic && (param == self.elem || result == self.elem) {
            return;
        }
        let name = self.fresh("f");
        let p = self.fresh("p");
        self.vars.push(Var {
            name: p.clone(),
            ty: param,
            varying: true,
            mutable: false,
        });
        let (body, _) = self.guarded(|s| s.expr(result, 2));
        self.vars.pop();
        self.note(Construct::Closures);
        self.line(&format!(
            "let {name} = |{p}: {}| -> {} {{ {body} }};",
            param.name(),
            result.name()
        ));
        self.closures.push((name, param, result));
    }

    fn thread_array(&mut self) {
        let ty = [T::I32, T::F32, T::U64][self.rng.usize(..3)];
        let a = self.fresh("arr");
        self.note(Construct::ThreadArrays);
        let zero = ty.literal(self.rng);
        self.line(&format!("let mut {a} = [{zero}; 4];"));
        let (k, _) = self.index_expr();
        let (v, varying) = self.expr(ty, 2);
        self.line(&format!("{a}[{k} % 4] = {v};"));
        let sum = self.fresh("v");
        self.line(&format!(
            "let {sum}: {} = {a}.iter().fold({zero}, |acc, e| acc + *e);",
            ty.name()
        ));
        // The fold reads every element, some written at a varying index.
        let _ = varying;
        self.push_varying(sum, ty);
    }

    /// Own slot, barrier, other slots (some nobody wrote), barrier.
    fn shared_round(&mut self) {
        if self.shared.len() >= MAX_SHARED {
            return;
        }
        let threads = (self.threads.iter().product::<u32>()) as usize;
        let ty = [T::I32, T::F32, T::U64][self.rng.usize(..3)];
        let (v, _) = self.expr(ty, 2);
        let name = self.fresh("tile");
        let t = ty.name();
        if self.rng.u32(0..3) == 0 && self.threads[2] == 1 {
            // A 2-D tile, `COLS` wide as the workgroup is.
            let (cols, rows) = (self.threads[0], self.threads[1] + 1);
            self.note(Construct::Shared2D);
            self.line(&format!(
                "let mut {name} = Shared2D::<{t}, {rows}, {cols}>::new();"
            ));
            self.line(&format!("{name}.write({v});"));
            self.line("sync_threads();");
            let read = self.fresh("v");
            self.line(&format!(
                "let {read}: {t} = {name}[((thread_idx(1) + 1) % {rows}, (thread_idx(0) + 1) % {cols})];"
            ));
            self.line("sync_threads();");
            self.push_varying(read, ty);
            self.shared.push((name, ty, (rows * cols) as usize));
            return;
        }
        let len = threads + self.rng.usize(0..=3);
        self.note(Construct::SharedMemory);
        // Every `DynShared` view is one memory, so all of a kernel's have one type.
        let dyn_ty = self
            .shared
            .iter()
            .find(|s| s.0.starts_with("dyn"))
            .map(|s| s.1);
        let name = if dyn_ty.is_none_or(|t| t == ty) && self.rng.u32(0..4) == 0 {
            format!("dyn_{name}")
        } else {
            name
        };
        if name.starts_with("dyn") {
            self.note(Construct::DynShared);
            self.line(&format!("let mut {name} = DynShared::<{t}>::new();"));
        } else {
            self.line(&format!("let mut {name} = Shared::<{t}, {len}>::new();"));
        }
        self.line(&format!("{name}.write({v});"));
        self.note(Construct::Barrier);
        self.line("sync_threads();");
        let read = self.fresh("v");
        // `len` slots past the workgroup's threads hold zero: no thread wrote them.
        let k = self.rng.usize(0..len + 1);
        let otherwise = ty.literal(self.rng);
        self.line(&format!(
            "let {read}: {t} = if {name}.len() > 0 {{ {name}[(thread_rank() + {k}) % {name}.len()] }} else {{ {otherwise} }};"
        ));
        self.line("sync_threads();");
        self.push_varying(read, ty);
        self.shared.push((name, ty, len));
    }

    fn tree_reduction(&mut self) {
        if self.shared.len() >= MAX_SHARED {
            return;
        }
        let threads = (self.threads.iter().product::<u32>()) as usize;
        let len = threads.next_power_of_two();
        let ty = [T::I32, T::F32][self.rng.usize(..2)];
        let (v, _) = self.expr(ty, 2);
        let name = self.fresh("tree");
        let t = ty.name();
        self.note(Construct::TreeReductions);
        self.line(&format!("let mut {name} = Shared::<{t}, {len}>::new();"));
        self.line(&format!("{name}.write({v});"));
        self.line("sync_threads();");
        let s = self.fresh("s");
        self.line(&format!("let mut {s} = {};", len / 2));
        self.line(&format!("while {s} > 0 {{"));
        self.indent += 1;
        self.line(&format!(
            "if thread_rank() < {s} {{ {name}[thread_rank()] += {name}[thread_rank() + {s}]; }}"
        ));
        self.line("sync_threads();");
        self.line(&format!("{s} /= 2;"));
        self.indent -= 1;
        self.line("}");
        let read = self.fresh("v");
        self.line(&format!("let {read}: {t} = {name}[0];"));
        self.line("sync_threads();");
        // Every thread reads slot 0, but through memory, which the convergence check
        // does not follow.
        self.push_varying(read, ty);
        self.shared.push((name, ty, len));
    }

    fn workgroup_reduction(&mut self) {
        let ty = [T::I32, T::U32, T::F32, T::F64][self.rng.usize(..4)];
        let (v, _) = self.expr(ty, 2);
        let f = ["workgroup_sum", "workgroup_min", "workgroup_max"][self.rng.usize(..3)];
        self.note(Construct::WorkgroupReductions);
        let name = self.fresh("v");
        self.line(&format!("let {name}: {} = {f}({v});", ty.name()));
        // The same in every thread, but read from shared memory, which the convergence
        // check does not follow: a branch on it counts as one that may diverge.
        self.push_varying(name, ty);
    }

    fn push_varying(&mut self, name: String, ty: T) {
        self.vars.push(Var {
            name,
            ty,
            varying: true,
            mutable: false,
        });
    }

    /// An update of the `hist` atomic that commutes with every other thread's.
    fn atomic(&mut self) {
        if !self.has_hist {
            return;
        }
        self.note(Construct::Atomics);
        let (v, _) = self.expr(T::U32, 1);
        let op = self.hist_op;
        self.line(&format!(
            "if hist.len() > 0 {{ hist.{op}(gid % hist.len(), {v}); }}"
        ));
    }

    fn assertion(&mut self) {
        let (a, _) = self.expr(T::I32, 1);
        self.note(Construct::Panics);
        match self.rng.u32(0..3) {
            0 => self.line(&format!(
                "assert!({a} != 123456, \"the sentinel came up\");"
            )),
            1 => self.line(&format!("assert_ne!({a}, 654321, \"never this value\");")),
            _ => self.line(&format!(
                "if {a} == 987654 {{ panic!(\"unexpected value\"); }}"
            )),
        }
    }

    fn device_call(&mut self) {
        let (a, va) = self.expr(T::I32, 2);
        let (b, vb) = self.expr(T::F32, 2);
        self.note(Construct::DeviceFunctions);
        let name = self.fresh("v");
        self.line(&format!("let {name}: f32 = helper({a}, {b});"));
        self.vars.push(Var {
            name,
            ty: T::F32,
            varying: va || vb || !self.uniform,
            mutable: false,
        });
    }

    /// The write of the region's own element(s), last.
    fn write_region(&mut self) {
        // Only the threads with an element write it.
        self.uniform = false;
        let (value, _) = self.expr(self.elem, 3);
        match self.shape {
            Shape::Chunked(_) => {
                self.note(Construct::Chunked);
                self.line("if let Some(c) = y.get_mut() {");
                self.line(&format!("    for k in 0..c.len() {{ c[k] = {value}; }}"));
                self.line("}");
            }
            _ => {
                self.line("if let Some(v) = y.get_mut() {");
                let op = if self.rng.bool() { "=" } else { "+=" };
                self.line(&format!("    *v {op} {value};"));
                self.line("}");
            }
        }
    }
}

/// The kernel's signature line and the lines that name its positions, per strategy.
fn prologue(shape: Shape, elem: &str) -> (String, Vec<String>) {
    let strategy = match shape {
        Shape::Linear1D => "Linear1D".to_string(),
        Shape::Chunked(n) => format!("Chunked<{n}>"),
        Shape::Indexed => "Indexed".into(),
        Shape::Linear2D { .. } => "Linear2D".into(),
        Shape::Linear3D { .. } => "Linear3D".into(),
    };
    let gid = match shape {
        Shape::Linear2D { .. } => "y.row() * y.width() + y.col()",
        Shape::Linear3D { .. } => "(y.z() * y.height() + y.y()) * y.width() + y.x()",
        _ => "y.index()",
    };
    (
        format!("mut y: Region<{elem}, {strategy}>"),
        vec![format!("let gid: usize = {gid};")],
    )
}

/// The device function every source kernel may call.
const HELPER: &str = "#[offload_device]
fn helper(a: i32, b: f32) -> f32 {
    let m = if a > 3 { a % 5 } else { a.wrapping_mul(3) };
    b * 0.5 + m as f32
}
";

/// A random source kernel, translated and inlined, with inputs and a launch.
pub fn generate_source(seed: u64, transcendentals: bool) -> Result<(Program, String), String> {
    let mut rng = Rng::with_seed(seed ^ 0x5ec7_0a11);
    let shape = match rng.u32(0..7) {
        0 | 1 => Shape::Linear1D,
        2 => Shape::Chunked([2, 3][rng.usize(..2)]),
        3 => Shape::Indexed,
        4 | 5 => Shape::Linear2D {
            interior: rng.u32(0..3) == 0,
        },
        _ => Shape::Linear3D {
            interior: rng.u32(0..4) == 0,
        },
    };
    let elem = [T::F32, T::I32, T::U32, T::F64, T::I64][rng.usize(..5)];
    let generic = elem.is_float() && rng.u32(0..4) == 0;
    let threads = match shape {
        Shape::Linear2D { .. } => [rng.u32(1..=4), rng.u32(1..=3), 1],
        Shape::Linear3D { .. } => [rng.u32(1..=3), rng.u32(1..=2), rng.u32(1..=2)],
        _ => [[1, 2, 3, 4, 5, 8][rng.usize(..6)], 1, 1],
    };
    let has_stencil = matches!(shape, Shape::Linear2D { .. }) && rng.bool();
    let has_hist = rng.bool();
    let hist_op = ["fetch_add", "fetch_max", "fetch_or", "fetch_min"][rng.usize(..4)];
    let mut s = Src {
        rng: &mut rng,
        out: String::new(),
        indent: 1,
        vars: Vec::new(),
        next: 0,
        uniform: true,
        depth: 0,
        guarded: 0,
        budget: 0,
        constructs: BTreeSet::new(),
        elem,
        generic,
        shape,
        threads,
        closures: Vec::new(),
        has_hist,
        hist_op,
        shared: Vec::new(),
        transcendentals,
    };
    s.budget = s.rng.u32(3..=14);
    s.note(Construct::ScalarTypes);
    s.note(Construct::Parameters);
    match shape {
        Shape::Linear1D => s.note(Construct::Linear1D),
        Shape::Chunked(_) => s.note(Construct::Chunked),
        Shape::Indexed => s.note(Construct::Indexed),
        Shape::Linear2D { interior } => {
            s.note(Construct::Linear2D);
            if interior {
                s.note(Construct::Interior);
            }
        }
        Shape::Linear3D { interior } => {
            s.note(Construct::Linear3D);
            if interior {
                s.note(Construct::Interior);
            }
        }
    }
    let elem_name = s.ty_name(elem);
    let (region, lines) = prologue(shape, elem_name);
    for l in lines {
        s.line(&l);
    }
    s.vars.push(Var {
        name: "gid".into(),
        ty: T::Usize,
        varying: true,
        mutable: false,
    });
    for (name, ty) in [("a", T::F32), ("n", T::I32), ("m", T::U32)] {
        s.vars.push(Var {
            name: name.into(),
            ty,
            varying: false,
            mutable: false,
        });
    }
    // Read-only arrays, as `const` items and `let`s, for `array_read`.
    s.line("const TI: [i32; 4] = [3, -7, 11, 0];");
    s.line("const TF: [f32; 3] = [0.25, -1.5, 8.0];");
    s.line("let lu = [5u64; 4];");
    if s.rng.u32(0..3) == 0 {
        s.note(Construct::Consts);
        s.line("const K: i32 = 7;");
        s.vars.push(Var {
            name: "K".into(),
            ty: T::I32,
            varying: false,
            mutable: false,
        });
    }
    if has_stencil {
        s.note(Construct::Stencil2D);
        let read = s.fresh("v");
        let (dr, dc) = (s.rng.i32(-1..=1), s.rng.i32(-1..=1));
        let text = if s.rng.bool() {
            format!(
                "let {read}: f32 = if let Some(p) = img.get({dr}, {dc}) {{ p }} else {{ 0.25 }};"
            )
        } else {
            format!("let {read}: f32 = img.get_clamped({dr}, {dc});")
        };
        s.line(&text);
        s.push_varying(read, T::F32);
    }
    while s.budget > 0 {
        s.budget -= 1;
        s.statement();
    }
    s.write_region();
    let body_text = std::mem::take(&mut s.out);
    let constructs = std::mem::take(&mut s.constructs);
    let shared_dyn = body_text.contains("DynShared");
    let stencil_param = if has_stencil {
        ", img: Region<f32, Stencil2D<1>>"
    } else {
        ""
    };
    let hist_param = if has_hist { ", hist: Atomic<u32>" } else { "" };
    let generics = if generic { "<E: Float>" } else { "" };
    // Without fused multiply-adds, a GPU rounds every operation as the interpreter does.
    let kernel = format!(
        "#[offload_kernel(fma = false)]\nfn fuzz_src_{seed}{generics}({region}, x: &[f32], w: &[i32], a: f32, n: i32, m: u32{stencil_param}{hist_param}) {{\n{body_text}}}\n"
    );
    let source = format!("{HELPER}\n{kernel}");
    let body = translate(&source, generic.then_some(elem.scalar()))
        .map_err(|e| format!("{e}\n{source}"))?;

    // Inputs and launch.
    let (groups, geometry) = geometry(&mut rng, shape, threads);
    let mut args = Vec::new();
    let elem_s = elem.scalar();
    let random = |rng: &mut Rng, ty: ScalarTy, n: usize| -> Vec<u64> {
        (0..n)
            .map(|_| crate::values::random_bits(rng, ty))
            .collect()
    };
    args.push(ArgValue::Buffer {
        elem: elem_s,
        data: random(&mut rng, elem_s, geometry.len),
        layout: geometry.layout.clone(),
    });
    let xs = rng.usize(0..12);
    args.push(ArgValue::buffer(
        ScalarTy::F32,
        random(&mut rng, ScalarTy::F32, xs),
    ));
    let ws = rng.usize(0..12);
    args.push(ArgValue::buffer(
        ScalarTy::I32,
        random(&mut rng, ScalarTy::I32, ws),
    ));
    args.push(ArgValue::Scalar(bits_const(
        ScalarTy::F32,
        (rng.f32() * 8.0 - 4.0).to_bits() as u64,
    )));
    args.push(ArgValue::Scalar(Const::Int(
        rng.i32(-5..50) as i128,
        ScalarTy::I32,
    )));
    args.push(ArgValue::Scalar(Const::Int(
        rng.u32(0..50) as i128,
        ScalarTy::U32,
    )));
    if has_stencil {
        // The written region's shape and interior: a launch's 2-D regions share one.
        let (w, h) = geometry.stencil;
        args.push(ArgValue::Buffer {
            elem: ScalarTy::F32,
            data: random(&mut rng, ScalarTy::F32, w * h),
            layout: Layout {
                row_len: Some(w),
                margin: geometry.layout.margin,
                ..Layout::default()
            },
        });
    }
    if has_hist {
        let n = rng.usize(0..6);
        args.push(ArgValue::buffer(ScalarTy::U32, vec![0; n]));
    }
    let threads_total: usize = threads.iter().product::<u32>() as usize;
    let dyn_shared_bytes = if shared_dyn {
        ((threads_total + rng.usize(0..3)) * 8) as u32
    } else {
        0
    };
    let program = Program {
        seed,
        body,
        args,
        launch: Launch {
            workgroups: groups,
            threads,
            dyn_shared_bytes,
        },
        broken: None,
        constructs,
        atomics_on_device: false,
    };
    Ok((program, source))
}

/// A region's length and layout, and a stencil's shape, for a launch.
struct Geometry {
    len: usize,
    layout: Layout,
    stencil: (usize, usize),
}

fn geometry(rng: &mut Rng, shape: Shape, threads: [u32; 3]) -> ([u32; 3], Geometry) {
    let near = |rng: &mut Rng, n: usize| (n + rng.usize(0..3)).saturating_sub(1).max(1);
    match shape {
        Shape::Linear1D | Shape::Chunked(_) | Shape::Indexed => {
            let groups = [rng.u32(1..=3), 1, 1];
            let global = (groups[0] * threads[0]) as usize;
            let per = match shape {
                Shape::Chunked(n) => n,
                _ => 1,
            };
            let len = near(rng, global) * per;
            let layout = if shape == Shape::Indexed {
                // A permutation of some of the data's elements, one per thread.
                let data = len + 2;
                let mut order: Vec<usize> = (0..data).collect();
                rng.shuffle(&mut order);
                order.truncate(len);
                let g = Geometry {
                    len: data,
                    layout: Layout {
                        indices: Some(order),
                        ..Layout::default()
                    },
                    stencil: (1, 1),
                };
                return (groups, g);
            } else {
                Layout::default()
            };
            (
                groups,
                Geometry {
                    len,
                    layout,
                    stencil: (1, 1),
                },
            )
        }
        Shape::Linear2D { interior } => {
            let groups = [rng.u32(1..=3), rng.u32(1..=2), 1];
            let margin = interior as usize;
            let w = near(rng, (groups[0] * threads[0]) as usize) + 2 * margin;
            let h = near(rng, (groups[1] * threads[1]) as usize) + 2 * margin;
            let g = Geometry {
                len: w * h,
                layout: Layout {
                    row_len: Some(w),
                    margin,
                    ..Layout::default()
                },
                stencil: (w, h),
            };
            (groups, g)
        }
        Shape::Linear3D { interior } => {
            let groups = [rng.u32(1..=2), rng.u32(1..=2), rng.u32(1..=2)];
            let margin = interior as usize;
            let dims: Vec<usize> = (0..3)
                .map(|d| near(rng, (groups[d] * threads[d]) as usize) + 2 * margin)
                .collect();
            let g = Geometry {
                len: dims[0] * dims[1] * dims[2],
                layout: Layout {
                    row_len: Some(dims[0]),
                    plane_rows: Some(dims[1]),
                    margin,
                    ..Layout::default()
                },
                stencil: (1, 1),
            };
            (groups, g)
        }
    }
}

/// The kernel of `source` translated (for `E` = `generic`'s type in a generic kernel),
/// with the device function `helper` inlined.
fn translate(source: &str, generic: Option<ScalarTy>) -> Result<Body, String> {
    let file: syn::File = syn::parse_str(source).map_err(|e| format!("does not parse: {e}"))?;
    let mut kernel = None;
    let mut device = None;
    for item in &file.items {
        if let syn::Item::Fn(f) = item {
            if f.sig.ident == "helper" {
                device = Some(f);
            } else {
                kernel = Some(f);
            }
        }
    }
    let (kernel, device) = (kernel.ok_or("no kernel")?, device.ok_or("no helper")?);
    let at = |e: offload_frontend::TranslateError| {
        let start = e.span.start();
        format!("{}:{}: {}", start.line, start.column, e.message)
    };
    let subst: Vec<(String, ScalarTy)> = generic
        .map(|ty| ("E".to_string(), ty))
        .into_iter()
        .collect();
    let body = offload_frontend::translate_instance(kernel, "fuzz.rs", &subst).map_err(at)?;
    let helper = offload_frontend::translate_device(device, "fuzz.rs", &[]).map_err(at)?;
    let mut by_name: offload_mir::inline::DeviceFunctions = Default::default();
    by_name
        .entry(helper.name.as_str())
        .or_default()
        .push(&helper);
    offload_mir::inline::inline_calls(&body, &by_name).map_err(|e| format!("inline: {e}"))
}
