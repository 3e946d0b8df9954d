//! Random kernels written as Rust source, in the kernel language the README documents:
//! what the MIR generator cannot say, since the translator turns it into plain MIR
//! (closures, iterator chains, tuple assignment and `swap`, `match` with ranges and
//! guards, labelled loops, loop values, the thread's own arrays, `const` arrays, methods
//! by path, device functions, generic kernels, `Shared2D`, tree reductions, workgroup
//! reductions, every strategy and interiors). [`generate_source`] writes one, translates
//! it with `offload-translate` as the macro would, inlines its device function, and gives
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

mod expressions;
mod statements;

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
    pub(super) fn literal(self, rng: &mut Rng) -> String {
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
    pub(super) fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub(super) fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    pub(super) fn note(&mut self, c: Construct) {
        self.constructs.insert(c);
    }

    /// The name a type is written with: the generic parameter for the element type of a
    /// generic kernel.
    pub(super) fn ty_name(&self, ty: T) -> &'static str {
        if self.generic && ty == self.elem {
            "E"
        } else {
            ty.name()
        }
    }

    pub(super) fn pick_numeric(&mut self) -> T {
        T::NUMERIC[self.rng.usize(..T::NUMERIC.len())]
    }

    /// A variable of type `ty`, if one is in scope.
    pub(super) fn var_of(&mut self, ty: T) -> Option<Var> {
        let found: Vec<Var> = self.vars.iter().filter(|v| v.ty == ty).cloned().collect();
        (!found.is_empty()).then(|| found[self.rng.usize(..found.len())].clone())
    }

    /// A literal of type `ty`, written as a generic kernel must for its element type.
    pub(super) fn literal(&mut self, ty: T) -> String {
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

    pub(super) fn bind(&mut self, ty: T, value: String, varying: bool) -> String {
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

    /// `f`'s expression, generated as one only some threads may evaluate.
    pub(super) fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.guarded += 1;
        let r = f(self);
        self.guarded -= 1;
        r
    }

    /// A nested block in its own scope, one level deeper.
    pub(super) fn scoped(&mut self, varying: bool, body: impl FnOnce(&mut Self)) {
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

    pub(super) fn mark_varying(&mut self, name: &str, varying: bool) {
        let uniform = self.uniform;
        // A variable written in varying control flow, or with a varying value, varies
        // from then on, also outside the branch.
        if let Some(v) = self.vars.iter_mut().find(|v| v.name == name) {
            v.varying |= varying || !uniform;
        }
    }

    pub(super) fn push_varying(&mut self, name: String, ty: T) {
        self.vars.push(Var {
            name,
            ty,
            varying: true,
            mutable: false,
        });
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

/// The device functions every source kernel may call: one returns a scalar, one a pair.
const HELPER: &str = "#[offload_device]
fn helper(a: i32, b: f32) -> f32 {
    let m = if a > 3 { a % 5 } else { a.wrapping_mul(3) };
    b * 0.5 + m as f32
}

#[offload_device]
fn pair_helper(a: i32, b: f32) -> (f32, i32) {
    if a > 3 {
        return (b - 1.0, a % 5);
    }
    (b * 0.5, a.wrapping_mul(3))
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
/// with the device functions `helper` and `pair_helper` inlined.
fn translate(source: &str, generic: Option<ScalarTy>) -> Result<Body, String> {
    let file: syn::File = syn::parse_str(source).map_err(|e| format!("does not parse: {e}"))?;
    let mut kernel = None;
    let mut devices = Vec::new();
    for item in &file.items {
        if let syn::Item::Fn(f) = item {
            if f.sig.ident == "helper" || f.sig.ident == "pair_helper" {
                devices.push(f);
            } else {
                kernel = Some(f);
            }
        }
    }
    let kernel = kernel.ok_or("no kernel")?;
    if devices.len() != 2 {
        return Err("no helpers".into());
    }
    let at = |e: offload_translate::TranslateError| {
        let start = e.span.start();
        format!("{}:{}: {}", start.line, start.column, e.message)
    };
    let subst: Vec<(String, ScalarTy)> = generic
        .map(|ty| ("E".to_string(), ty))
        .into_iter()
        .collect();
    let body = offload_translate::translate_instance(kernel, "fuzz.rs", &subst).map_err(at)?;
    let mut helpers = Vec::new();
    for device in devices {
        helpers.extend(offload_translate::translate_device(device, "fuzz.rs", &[]).map_err(at)?);
    }
    let mut by_name: offload_mir::inline::DeviceFunctions = Default::default();
    for helper in &helpers {
        by_name
            .entry(helper.name.as_str())
            .or_default()
            .push(helper);
    }
    offload_mir::inline::inline_calls(&body, &by_name).map_err(|e| format!("inline: {e}"))
}
