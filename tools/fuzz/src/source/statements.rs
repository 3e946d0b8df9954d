//! The statements of a source kernel: bindings, assignments, control flow, closures,
//! the thread's arrays, shared-memory rounds, reductions, atomics, asserts, device calls
//! and the region's write.

use super::{MAX_SHARED, Shape, Src, T, Var};
use crate::Construct;

impl Src<'_> {
    /// Statements until the budget is spent.
    pub(super) fn block(&mut self) {
        for _ in 0..self.rng.u32(1..=4) {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.statement();
        }
    }

    pub(super) fn statement(&mut self) {
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

    pub(super) fn assign(&mut self) {
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

    pub(super) fn swap(&mut self) {
        let pair = |vars: &[Var]| {
            vars.iter().filter(|v| v.mutable).any(|a| {
                vars.iter()
                    .any(|b| b.mutable && b.ty == a.ty && b.name != a.name)
            })
        };
        // Two mutable locals of one type to swap, made if there are none.
        if !pair(&self.vars) {
            for _ in 0..2 {
                let name = self.fresh("s");
                let value = self.literal(T::I32);
                self.line(&format!("let mut {name}: i32 = {value};"));
                self.vars.push(Var {
                    name,
                    ty: T::I32,
                    varying: false,
                    mutable: true,
                });
            }
        }
        let targets: Vec<Var> = self.vars.iter().filter(|v| v.mutable).cloned().collect();
        for a in &targets {
            let other = targets.iter().find(|b| b.ty == a.ty && b.name != a.name);
            if let Some(b) = other {
                let (a, b) = (a.clone(), b.clone());
                let how = self.rng.u32(0..3);
                if how == 0 {
                    self.note(Construct::TupleAssignment);
                    self.line(&format!("({0}, {1}) = ({1}, {0});", a.name, b.name));
                } else if how == 1 {
                    // Through a tuple local: assigned whole, read by field.
                    self.note(Construct::TupleLocals);
                    let pair = self.fresh("pair");
                    self.line(&format!("let mut {pair} = ({}, {});", a.name, b.name));
                    self.line(&format!("{pair} = ({pair}.1, {pair}.0);"));
                    self.line(&format!("{} = {pair}.0;", a.name));
                    self.line(&format!("{} = {pair}.1;", b.name));
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

    pub(super) fn if_statement(&mut self) {
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

    pub(super) fn for_loop(&mut self) {
        self.note(Construct::ForLoops);
        let k = self.fresh("k");
        let (head, ty) = match self.rng.u32(0..6) {
            0 => (format!("for {k} in 0..3usize"), T::Usize),
            1 => (format!("for {k} in (0..9u32).step_by(4)"), T::U32),
            2 => (format!("for {k} in (1..=3i32).rev()"), T::I32),
            5 if self.rng.bool() => {
                self.note(Construct::RangeLocals);
                let r = self.fresh("r");
                self.line(&format!("let {r} = 1..(n as usize % 5);"));
                (format!("for {k} in {r}.clone().rev()"), T::Usize)
            }
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

    pub(super) fn while_loop(&mut self) {
        if self.rng.u32(0..3) == 0 {
            return self.while_let();
        }
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

    /// A walk over `x` from an index, five elements a step, as `while let` or as a `loop`
    /// that starts with `let ... else { break; }`: the step comes first, so a `continue`
    /// in the body cannot stop it.
    fn while_let(&mut self) {
        self.note(Construct::LetElse);
        let (k, w) = (self.fresh("k"), self.fresh("w"));
        let (start, _) = self.index_expr();
        self.line(&format!("let mut {k} = {start};"));
        if self.rng.bool() {
            self.line(&format!("while let Some(&{w}) = x.get({k}) {{"));
        } else {
            self.line("loop {");
            self.line(&format!("let Some(&{w}) = x.get({k}) else {{ break; }};"));
        }
        self.scoped(true, |s| {
            s.line(&format!("{k} += 5;"));
            s.vars.push(Var {
                name: w.clone(),
                ty: T::F32,
                varying: true,
                mutable: false,
            });
            s.block();
        });
        self.line("}");
    }

    pub(super) fn labelled_loops(&mut self) {
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

    pub(super) fn closure(&mut self) {
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

    pub(super) fn thread_array(&mut self) {
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
    pub(super) fn shared_round(&mut self) {
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

    pub(super) fn tree_reduction(&mut self) {
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

    pub(super) fn workgroup_reduction(&mut self) {
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

    /// An update of the `hist` atomic that commutes with every other thread's.
    pub(super) fn atomic(&mut self) {
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

    pub(super) fn assertion(&mut self) {
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

    pub(super) fn device_call(&mut self) {
        let (a, va) = self.expr(T::I32, 2);
        let (b, vb) = self.expr(T::F32, 2);
        self.note(Construct::DeviceFunctions);
        let varying = va || vb || !self.uniform;
        if self.rng.u32(0..3) == 0 {
            self.note(Construct::TupleResults);
            let (f, i) = (self.fresh("v"), self.fresh("w"));
            self.line(&format!(
                "let ({f}, {i}): (f32, i32) = pair_helper({a}, {b});"
            ));
            for (name, ty) in [(f, T::F32), (i, T::I32)] {
                self.vars.push(Var {
                    name,
                    ty,
                    varying,
                    mutable: false,
                });
            }
            return;
        }
        let name = self.fresh("v");
        self.line(&format!("let {name}: f32 = helper({a}, {b});"));
        self.vars.push(Var {
            name,
            ty: T::F32,
            varying,
            mutable: false,
        });
    }

    /// The write of the region's own element(s), last.
    pub(super) fn write_region(&mut self) {
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
