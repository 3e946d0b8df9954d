//! Segments that touch memory, each in the exact shape the frontend emits, so the safety
//! verifier can prove them: a region's own element, a stencil's neighbour, a slice
//! element, an atomic update, and a shared-memory round (own slot, barrier, any slot,
//! barrier).

use crate::builder::{copy, usize_const};
use crate::generator::{Gen, Value, copied};
use crate::plan::{BufArg, RegionArg, SharedArr};
use offload_mir::*;

impl Gen<'_> {
    /// Writes (and maybe first reads) this thread's element of a writable region.
    pub fn region_segment(&mut self) -> bool {
        // Not inside this thread's access to the same region: Rust's borrows forbid it, so
        // the verifier need not prove it.
        let writable: Vec<RegionArg> = (self.plan.regions.iter())
            .filter(|r| r.strategy.is_writable() && !self.open_regions.contains(&r.local))
            .copied()
            .collect();
        if writable.is_empty() {
            return false;
        }
        let r = writable[self.rng.usize(..writable.len())];
        self.open_regions.push(r.local);
        match r.strategy {
            Strategy::Chunked(n) => self.own_chunk(r, n.number()),
            Strategy::Linear2D => {
                let index = self.b.assign(ScalarTy::Usize, Rvalue::RegionIndex(r.local));
                let coord = |g: &mut Self, rv| g.b.assign(ScalarTy::Usize, rv);
                let (col, row) = (
                    coord(self, Rvalue::RegionCoord(r.local, 0)),
                    coord(self, Rvalue::RegionCoord(r.local, 1)),
                );
                // The end of the owned coordinates, as the translator checks, or the
                // whole extent, which the verifier accepts too (an interior's threads
                // past its end then own border elements).
                let end = |g: &mut Self, d| {
                    let rv = if g.rng.bool() {
                        Rvalue::RegionEnd(r.local, d)
                    } else {
                        Rvalue::RegionExtent(r.local, d)
                    };
                    coord(g, rv)
                };
                let (width, height) = (end(self, 0), end(self, 1));
                let in_row = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::Lt, copy(col), copy(width));
                let in_col = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::Lt, copy(row), copy(height));
                let owned =
                    self.b
                        .binary(ScalarTy::Bool, BinOp::BitAnd, copy(in_row), copy(in_col));
                self.own_branch(owned, |g| g.write_element(r, index));
            }
            _ => {
                let index = self.b.assign(ScalarTy::Usize, Rvalue::RegionIndex(r.local));
                let len = self.b.assign(ScalarTy::Usize, Rvalue::Len(r.local));
                let owned = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::Lt, copy(index), copy(len));
                self.own_branch(owned, |g| g.write_element(r, index));
            }
        }
        self.open_regions.pop();
        true
    }

    /// `switchInt(owned) -> [0: skip, otherwise: own]`, both joining after.
    fn own_branch(&mut self, owned: Local, own: impl FnOnce(&mut Self)) {
        let (own_bb, skip, join) = (self.b.new_block(), self.b.new_block(), self.b.new_block());
        self.b.switch_bool(copy(owned), own_bb, skip);
        self.b.current = own_bb;
        self.arm(true, |g| {
            own(g);
            g.b.goto(join);
            false
        });
        self.b.current = skip;
        self.b.goto(join);
        self.b.current = join;
    }

    /// Maybe reads element `index`, computes, and writes it.
    fn write_element(&mut self, r: RegionArg, index: Local) {
        if self.rng.bool() {
            let own = Operand::Copy(Place::element(r.local, index));
            self.define(r.elem, Rvalue::Use(own), true);
        }
        self.nested();
        let (value, _) = self.operand(r.elem);
        self.b
            .push(Place::element(r.local, index), Rvalue::Use(value));
    }

    /// The frontend's `if let Some(chunk) = y.get_mut() { for k in 0..chunk.len() { .. } }`
    /// for a `Chunked<N>` region, block for block.
    fn own_chunk(&mut self, r: RegionArg, n: u32) {
        let start = self.b.assign(ScalarTy::Usize, Rvalue::RegionIndex(r.local));
        let len = self.b.assign(ScalarTy::Usize, Rvalue::Len(r.local));
        let owned = self
            .b
            .binary(ScalarTy::Bool, BinOp::Lt, copy(start), copy(len));
        self.own_branch(owned, |g| {
            let len = g.b.assign(ScalarTy::Usize, Rvalue::Len(r.local));
            let left =
                g.b.binary(ScalarTy::Usize, BinOp::Sub, copy(len), copy(start));
            let min = Rvalue::Intrinsic(Intrinsic::Min, vec![copy(left), usize_const(n as u64)]);
            let chunk = g.b.assign(ScalarTy::Usize, min);
            let k = g.b.assign(ScalarTy::Usize, Rvalue::Use(usize_const(0)));
            let (header, body, latch) = (g.b.new_block(), g.b.new_block(), g.b.new_block());
            let (exit, step) = (g.b.new_block(), g.b.new_block());
            g.b.goto(header);
            g.b.current = header;
            let more = g.b.binary(ScalarTy::Bool, BinOp::Lt, copy(k), copy(chunk));
            g.b.switch_bool(copy(more), body, exit);
            g.b.current = body;
            let kk = g.b.assign(ScalarTy::Usize, Rvalue::Use(copy(k)));
            g.b.bounds_check(kk, chunk);
            let at =
                g.b.binary(ScalarTy::Usize, BinOp::Add, copy(start), copy(kk));
            g.write_element(r, at);
            g.b.goto(latch);
            g.b.current = latch;
            let rest =
                g.b.binary(ScalarTy::Usize, BinOp::Sub, copy(chunk), copy(k));
            let last =
                g.b.binary(ScalarTy::Bool, BinOp::Le, copy(rest), usize_const(1));
            g.b.switch_bool(copy(last), exit, step);
            g.b.current = step;
            let next = Rvalue::BinaryOp(BinOp::Add, copy(k), usize_const(1));
            g.b.push(Place::local(k), next);
            g.b.goto(header);
            g.b.current = exit;
        });
    }

    /// Reads a neighbour in a `Stencil2D` region, with `get_clamped(dr, dc)` or in
    /// `if let Some(v) = get(dr, dc)`, as the frontend translates them.
    pub fn stencil_segment(&mut self) -> bool {
        let stencils: Vec<RegionArg> = (self.plan.regions.iter())
            .filter(|r| !r.strategy.is_writable())
            .copied()
            .collect();
        if stencils.is_empty() {
            return false;
        }
        let r = stencils[self.rng.usize(..stencils.len())];
        let Strategy::Stencil2D(radius) = r.strategy else {
            unreachable!("the only read-only strategy")
        };
        let radius = radius.number() as i64;
        let offsets = [
            self.rng.i64(-radius..=radius),
            self.rng.i64(-radius..=radius),
        ];
        let clamp = self.rng.bool();
        let (index, inside) = self.stencil_neighbour(r.local, offsets, clamp);
        let Some(inside) = inside else {
            self.read_element(r.local, r.elem, index, true);
            return true;
        };
        let result = self.b.local(Ty::Scalar(r.elem));
        let (then_bb, else_bb, join) = (self.b.new_block(), self.b.new_block(), self.b.new_block());
        self.b.switch_bool(copy(inside), then_bb, else_bb);
        for (bb, read) in [(then_bb, true), (else_bb, false)] {
            self.b.current = bb;
            self.arm(true, |g| {
                let value = match read {
                    true => copy(g.read_element(r.local, r.elem, index, true).local),
                    false => g.operand(r.elem).0,
                };
                g.b.push(Place::local(result), Rvalue::Use(value));
                g.b.goto(join);
                false
            });
        }
        self.b.current = join;
        self.pool.push(Value {
            local: result,
            ty: r.elem,
            varying: true,
        });
        true
    }

    /// `stencil_neighbour` of `translate.rs`: the neighbour's index, and without `clamp`
    /// whether it is inside the region.
    fn stencil_neighbour(
        &mut self,
        region: Local,
        offsets: [i64; 2],
        clamp: bool,
    ) -> (Local, Option<Local>) {
        let isize_const = |v: i64| Operand::Const(Const::Int(v as i128, ScalarTy::Isize));
        let (mut coords, mut inside) = (Vec::new(), None);
        for (dim, off) in [(1u8, offsets[0]), (0u8, offsets[1])] {
            let here = self
                .b
                .assign(ScalarTy::Usize, Rvalue::RegionCoord(region, dim));
            let here = self
                .b
                .assign(ScalarTy::Isize, Rvalue::Cast(copy(here), ScalarTy::Isize));
            let extent = self
                .b
                .assign(ScalarTy::Usize, Rvalue::RegionExtent(region, dim));
            let extent = self
                .b
                .assign(ScalarTy::Isize, Rvalue::Cast(copy(extent), ScalarTy::Isize));
            let mut at = self
                .b
                .binary(ScalarTy::Isize, BinOp::Add, copy(here), isize_const(off));
            if clamp {
                let last = self
                    .b
                    .binary(ScalarTy::Isize, BinOp::Sub, copy(extent), isize_const(1));
                let max = Rvalue::Intrinsic(Intrinsic::Max, vec![copy(at), isize_const(0)]);
                let low = self.b.assign(ScalarTy::Isize, max);
                let min = Rvalue::Intrinsic(Intrinsic::Min, vec![copy(low), copy(last)]);
                at = self.b.assign(ScalarTy::Isize, min);
            } else {
                let nonneg = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::Ge, copy(at), isize_const(0));
                let below = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::Lt, copy(at), copy(extent));
                let ok = self
                    .b
                    .binary(ScalarTy::Bool, BinOp::BitAnd, copy(nonneg), copy(below));
                inside = Some(match inside {
                    Some(prev) => {
                        self.b
                            .binary(ScalarTy::Bool, BinOp::BitAnd, copy(prev), copy(ok))
                    }
                    None => ok,
                });
            }
            coords.push(
                self.b
                    .assign(ScalarTy::Usize, Rvalue::Cast(copy(at), ScalarTy::Usize)),
            );
        }
        let width = self
            .b
            .assign(ScalarTy::Usize, Rvalue::RegionExtent(region, 0));
        let row_start = self
            .b
            .binary(ScalarTy::Usize, BinOp::Mul, copy(coords[0]), copy(width));
        let index = self.b.binary(
            ScalarTy::Usize,
            BinOp::Add,
            copy(row_start),
            copy(coords[1]),
        );
        (index, inside)
    }

    /// Bounds-checks `index` and reads the element, alone or as the first operand of an
    /// operation that cannot trap.
    fn read_element(
        &mut self,
        container: Local,
        elem: ScalarTy,
        index: Local,
        varying: bool,
    ) -> Value {
        self.b.checked_index(container, index);
        let at = Operand::Copy(Place::element(container, index));
        let op = match (elem, self.rng.u32(0..4)) {
            (_, 0 | 1) => None,
            (ScalarTy::Bool, _) => Some(BinOp::BitXor),
            (t, 2) if t.is_float() => Some(BinOp::Div),
            (t, _) if t.is_float() => Some(BinOp::Mul),
            (_, 2) => Some(BinOp::BitOr),
            _ => Some(BinOp::Add),
        };
        match op {
            None => self.define(elem, Rvalue::Use(at), varying),
            Some(op) => {
                let (b, v) = self.operand(elem);
                self.define(elem, Rvalue::BinaryOp(op, at, b), varying || v)
            }
        }
    }

    /// An index for a container of `len` elements: mostly in bounds (a value modulo the
    /// length, a constant), sometimes a thread's global index or any value, which may not
    /// be, so that some launches panic.
    pub fn index_for(&mut self, len: usize) -> (Local, bool) {
        match self.rng.u32(0..12) {
            0..=5 if len > 0 => {
                let (v, varying) = self.operand(ScalarTy::Usize);
                let v = copied(v);
                let n = usize_const(len as u64);
                self.checked_division(BinOp::Rem, ScalarTy::Usize, v, n);
                let rem = Rvalue::BinaryOp(BinOp::Rem, v, n);
                let i = self.define(ScalarTy::Usize, rem, varying);
                (i.local, i.varying)
            }
            0..=8 => {
                let k = self.rng.u64(0..=len.max(1) as u64 - 1);
                let i = self.define(ScalarTy::Usize, Rvalue::Use(usize_const(k)), false);
                (i.local, i.varying)
            }
            9..=10 => (self.global_id(), true),
            _ => {
                let (v, varying) = self.operand(ScalarTy::Usize);
                let local = self.b.as_local(v, ScalarTy::Usize);
                (local, varying || !self.uniform)
            }
        }
    }

    /// The thread's linear index in the launch, row by row: distinct for every thread.
    pub fn global_id(&mut self) -> Local {
        let pos = |g: &mut Self, p, d| g.b.assign(ScalarTy::Usize, Rvalue::Position(p, d));
        let mut gid = [Local(0); 2];
        for d in 0..2 {
            let (t, w, n) = (
                pos(self, Position::Thread, d),
                pos(self, Position::Workgroup, d),
                pos(self, Position::WorkgroupSize, d),
            );
            let base = self.b.binary(ScalarTy::Usize, BinOp::Mul, copy(w), copy(n));
            gid[d as usize] = self
                .b
                .binary(ScalarTy::Usize, BinOp::Add, copy(base), copy(t));
        }
        let count = pos(self, Position::WorkgroupCount, 0);
        let size = pos(self, Position::WorkgroupSize, 0);
        let width = self
            .b
            .binary(ScalarTy::Usize, BinOp::Mul, copy(count), copy(size));
        let row = self
            .b
            .binary(ScalarTy::Usize, BinOp::Mul, copy(gid[1]), copy(width));
        let id = self
            .b
            .binary(ScalarTy::Usize, BinOp::Add, copy(row), copy(gid[0]));
        self.pool.push(Value {
            local: id,
            ty: ScalarTy::Usize,
            varying: true,
        });
        id
    }

    /// Reads a slice element, bounds-checked, or under `if i < x.len()` as well.
    pub fn slice_segment(&mut self) -> bool {
        let Some(s) = self.pick(|p| &p.slices) else {
            return false;
        };
        let (index, varying) = self.index_for(s.len);
        if self.rng.u32(0..3) != 0 {
            self.read_element(s.local, s.elem, index, varying);
            return true;
        }
        let len = self.b.assign(ScalarTy::Usize, Rvalue::Len(s.local));
        let inside = self
            .b
            .binary(ScalarTy::Bool, BinOp::Lt, copy(index), copy(len));
        let result = self.b.local(Ty::Scalar(s.elem));
        let (then_bb, else_bb, join) = (self.b.new_block(), self.b.new_block(), self.b.new_block());
        self.b.switch_bool(copy(inside), then_bb, else_bb);
        let mut result_varying = varying;
        for (bb, read) in [(then_bb, true), (else_bb, false)] {
            self.b.current = bb;
            result_varying |= self.arm(varying, |g| {
                let (value, v) = match read {
                    true => {
                        let e = g.read_element(s.local, s.elem, index, varying);
                        (copy(e.local), e.varying)
                    }
                    false => g.operand(s.elem),
                };
                g.b.push(Place::local(result), Rvalue::Use(value));
                g.b.goto(join);
                v || !g.uniform
            });
        }
        self.b.current = join;
        self.pool.push(Value {
            local: result,
            ty: s.elem,
            varying: result_varying || !self.uniform,
        });
        true
    }

    fn pick<T: Copy>(&mut self, list: impl Fn(&crate::plan::Plan) -> &Vec<T>) -> Option<T> {
        let n = list(&self.plan).len();
        (n > 0).then(|| list(&self.plan)[self.rng.usize(..n)])
    }

    /// An atomic update, bounds-checked. Per-thread atomics take any operation at the
    /// thread's own index; shared ones one commuting operation per argument, whose result
    /// is left unused (it depends on the order of threads).
    pub fn atomic_segment(&mut self) -> bool {
        let Some(a) = self.pick(|p| &p.atomics) else {
            return false;
        };
        let index = match a.unique {
            true => self.global_id(),
            false => self.index_for(a.len).0,
        };
        self.b.checked_index(a.local, index);
        self.atomic_update(a, index);
        true
    }

    pub fn atomic_update(&mut self, a: BufArg, index: Local) {
        let place = Place::element(a.local, index);
        let ops: Vec<AtomicOp> = (AtomicOp::ALL.into_iter())
            .filter(|op| op.supports(a.elem) && (a.unique || *op != AtomicOp::Exchange))
            .collect();
        let rvalue = if a.unique && a.elem.is_integer() && self.rng.u32(0..4) == 0 {
            let (current, new) = (self.operand(a.elem).0, self.operand(a.elem).0);
            Rvalue::AtomicCas(place, current, new)
        } else {
            // Threads update a shared atomic in any order: only one operation per atomic
            // argument commutes with itself (`or` then `add` would not).
            let op = match a.unique {
                true => ops[self.rng.usize(..ops.len())],
                false => ops[a.local.index() % ops.len()],
            };
            Rvalue::AtomicRmw(op, place, self.operand(a.elem).0)
        };
        match a.unique {
            true => {
                self.define(a.elem, rvalue, true);
            }
            false => {
                self.b.assign(a.elem, rvalue);
            }
        }
    }

    /// Writes this thread's slot of a shared array, waits, reads slots other threads
    /// wrote in this round, and waits again so the next round's writes race with nothing.
    pub fn shared_segment(&mut self) -> bool {
        let Some(s) = self.pick(|p| &p.shared) else {
            return false;
        };
        if self.rng.u32(0..4) == 0 {
            self.any_slot_round(s);
            return true;
        }
        let nth = (s.slots > 1 && self.rng.bool()).then(|| self.rng.u64(0..s.slots));
        let (value, _) = self.operand(s.elem);
        let slot = self.checked_own_slot(s.local, nth);
        self.b
            .push(Place::element(s.local, slot), Rvalue::Use(value));
        self.barrier();
        for _ in 0..self.rng.u32(1..=2) {
            self.read_round_slot(s, nth);
        }
        self.barrier();
        true
    }

    /// Waits, reads any slot of a shared array (one no thread may have written, which
    /// reads as zero, or one an earlier round wrote), bounds-checked, and waits again:
    /// the value joins the pool, so branches and indices may depend on it.
    fn any_slot_round(&mut self, s: SharedArr) {
        self.barrier();
        let threads = self.plan.threads();
        let k = self.rng.u64(0..s.slots * threads + 4);
        let j = self.b.assign(ScalarTy::Usize, Rvalue::Use(usize_const(k)));
        self.b.checked_index(s.local, j);
        let at = Operand::Copy(Place::element(s.local, j));
        // Varying for the verifier, which does not follow values through memory.
        self.define(s.elem, Rvalue::Use(at), true);
        self.barrier();
    }

    /// The slot `write(v)` or `write_nth(nth, v)` writes, with the checks the frontend's
    /// `own_slot` makes: `rank < Len`, or `nth < Len / threads`.
    pub fn checked_own_slot(&mut self, shared: Local, nth: Option<u64>) -> Local {
        let rank = self.rank();
        let Some(nth) = nth else {
            self.b.checked_index(shared, rank);
            return rank;
        };
        let threads = self.workgroup_threads();
        let len = self.b.assign(ScalarTy::Usize, Rvalue::Len(shared));
        // Safe without a check: a workgroup has at least one thread.
        let per_thread = self
            .b
            .binary(ScalarTy::Usize, BinOp::Div, copy(len), copy(threads));
        let nth = self
            .b
            .assign(ScalarTy::Usize, Rvalue::Use(usize_const(nth)));
        self.b.bounds_check(nth, per_thread);
        let base = self
            .b
            .binary(ScalarTy::Usize, BinOp::Mul, copy(nth), copy(threads));
        self.b
            .binary(ScalarTy::Usize, BinOp::Add, copy(base), copy(rank))
    }

    /// Reads a slot written in this round (slot `nth` of some thread), bounds-checked.
    pub fn read_round_slot(&mut self, s: SharedArr, nth: Option<u64>) -> Value {
        let j = self.round_slot(nth);
        self.b.checked_index(s.local, j);
        let at = Operand::Copy(Place::element(s.local, j));
        self.define(s.elem, Rvalue::Use(at), true)
    }

    /// Slot `nth` of some thread of the workgroup: the next one's (rank + k modulo the
    /// workgroup's threads), a fixed one's, or this thread's own.
    pub fn round_slot(&mut self, nth: Option<u64>) -> Local {
        let threads = self.plan.threads();
        let base = nth.unwrap_or(0) * threads;
        match self.rng.u32(0..3) {
            0 => {
                let k = self.rng.u64(0..=threads);
                let rank = self.own_slot(None);
                let shifted =
                    self.b
                        .binary(ScalarTy::Usize, BinOp::Add, copy(rank), usize_const(k));
                let total = self.workgroup_threads();
                self.checked_division(BinOp::Rem, ScalarTy::Usize, copy(shifted), copy(total));
                let r = self
                    .b
                    .binary(ScalarTy::Usize, BinOp::Rem, copy(shifted), copy(total));
                match nth {
                    Some(n) if n > 0 => {
                        let first =
                            self.b
                                .binary(ScalarTy::Usize, BinOp::Mul, usize_const(n), copy(total));
                        self.b
                            .binary(ScalarTy::Usize, BinOp::Add, copy(first), copy(r))
                    }
                    _ => r,
                }
            }
            1 => {
                let k = base + self.rng.u64(0..threads);
                self.b.assign(ScalarTy::Usize, Rvalue::Use(usize_const(k)))
            }
            _ => self.own_slot(nth),
        }
    }

    /// The thread's rank in its workgroup ([`RANK_START`], [`RANK_STEPS`]), as the
    /// translator and the verifier compute it.
    fn rank(&mut self) -> Local {
        let pos = |g: &mut Self, (p, d)| g.b.assign(ScalarTy::Usize, Rvalue::Position(p, d));
        let start = pos(self, RANK_START);
        RANK_STEPS.into_iter().fold(start, |acc, (op, p, d)| {
            let position = pos(self, (p, d));
            self.b
                .binary(ScalarTy::Usize, op, copy(acc), copy(position))
        })
    }

    /// The threads of the workgroup ([`WORKGROUP_THREADS`]).
    fn workgroup_threads(&mut self) -> Local {
        let pos = |g: &mut Self, (p, d)| g.b.assign(ScalarTy::Usize, Rvalue::Position(p, d));
        let [first, rest @ ..] = WORKGROUP_THREADS;
        let first = pos(self, first);
        rest.into_iter().fold(first, |acc, p| {
            let position = pos(self, p);
            self.b
                .binary(ScalarTy::Usize, BinOp::Mul, copy(acc), copy(position))
        })
    }

    /// Slot `nth` (0 without) of this thread: `nth * threads + rank`, unchecked.
    pub fn own_slot(&mut self, nth: Option<u64>) -> Local {
        let rank = self.rank();
        let Some(nth) = nth else { return rank };
        let threads = self.workgroup_threads();
        let bin = |g: &mut Self, op, a, b| g.b.binary(ScalarTy::Usize, op, copy(a), copy(b));
        let base = self
            .b
            .binary(ScalarTy::Usize, BinOp::Mul, usize_const(nth), copy(threads));
        bin(self, BinOp::Add, base, rank)
    }
}
