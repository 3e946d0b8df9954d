//! Barriers on the CPU without a stack per thread: a kernel with barriers becomes a
//! function that runs one thread from the start or from just after one barrier up to its
//! next barrier (or its end), and `convert-offload-to-cpu` calls it for every thread of
//! the workgroup in turn, once per phase, until no thread stops at a barrier. This is
//! the loop fission at barriers that POCL performs, written over the kernel's control
//! flow graph:
//!
//! - each barrier ends its block: it records its number in the thread's `stopped` slot
//!   (which the thread cleared when it started to run) and returns, and the code after
//!   it becomes a block of its own;
//! - a new entry block branches on the workgroup's current phase: phase 0 runs the
//!   kernel's old entry, phase `k` the code after barrier `k`. A thread that has returned
//!   (`stopped` 0) is skipped, as a finished thread does not count at a GPU's barrier;
//! - [`unswitch`] copies the host's thread loops once per phase, the phase a constant in
//!   each copy, so that no thread branches on it and each phase's loop is one LLVM can
//!   vectorise (the host finds the next phase from `stopped` after the loop, not through
//!   a value every thread writes);
//! - a value defined before a barrier and used after it no longer dominates its use. If
//!   it is made by pure arithmetic or memref views of values every phase has, it is
//!   computed in the new entry instead; other scalars are kept per thread in memory
//!   (`spill[thread]`), stored where they are defined and loaded where they are used.
//!
//! The convergence check (`offload_mir::convergence`) guarantees that every unfinished
//! thread of a workgroup reaches the same barrier, so one phase number per workgroup is
//! enough.

use crate::rewrite::{self, Inserter, PassError, refuse};
use melior::dialect::arith;
use melior::{
    Context,
    ir::{BlockLike, BlockRef, Location, RegionLike, Value, r#type::TypeLike},
};
use mlir_sys::*;
use offload_dialect::ops;
use std::collections::HashMap;

/// Where the host function keeps a phased kernel's state, and the thread being run.
pub struct Phases {
    /// `memref<i32>`: the phase the workgroup runs now (0 at its start).
    pub phase: MlirValue,
    /// `memref<?xi32>`: per thread, the barrier it stopped at in its last phase, or 0
    /// once it has returned. The host takes the workgroup's next phase from these after
    /// each phase (every thread that stopped, stopped at the same barrier).
    pub stopped: MlirValue,
    /// The thread's linear index in the workgroup: its slot in `stopped` and every spill.
    pub thread: MlirValue,
    /// The number of slots each per-thread memref needs.
    pub threads: MlirValue,
    /// The host operation before which spills are allocated (outside every loop).
    pub allocate_before: MlirOperation,
    /// The host operation before which spills are freed.
    pub free_before: MlirOperation,
}

/// Ops that compute the same value wherever they run and cannot fault: safe to compute
/// again in the entry of every phase.
const PURE: &[&str] = &[
    "arith.constant",
    "arith.addi",
    "arith.subi",
    "arith.muli",
    "arith.andi",
    "arith.ori",
    "arith.xori",
    "arith.maxui",
    "arith.minui",
    "arith.maxsi",
    "arith.minsi",
    "arith.index_cast",
    "arith.index_castui",
    "arith.extui",
    "arith.extsi",
    "arith.trunci",
    "arith.cmpi",
    "arith.select",
    "memref.view",
    "memref.dim",
    "memref.cast",
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.extract_strided_metadata",
    "memref.collapse_shape",
    "memref.expand_shape",
];

/// Divisions, pure where the divisor is a positive constant.
const DIVISIONS: &[&str] = &["arith.divui", "arith.remui", "arith.divsi", "arith.remsi"];

/// Rewrites the kernel `func` into phases as the module docs say; returns whether it has
/// barriers (a kernel without keeps running each thread straight through).
///
/// # Safety
///
/// `func` is a live kernel whose thread and workgroup queries were replaced by the host
/// function's values; `phases` holds live values of that host function.
pub unsafe fn split(
    context: &Context,
    func: MlirOperation,
    phases: &Phases,
) -> Result<bool, PassError> {
    // SAFETY (whole function): every handle comes from the live kernel or the host
    // function, and each is used before what it names is erased.
    unsafe {
        let func_ref = melior::ir::OperationRef::from_raw(func);
        let barriers = rewrite::collect(func_ref, ops::BARRIER);
        if barriers.is_empty() {
            return Ok(false);
        }
        for &barrier in &barriers {
            if !rewrite::same_operation(rewrite::parent_operation(barrier), func) {
                return Err(refuse(
                    barrier,
                    "the CPU backend needs barriers outside nested regions",
                ));
            }
        }
        let i32_type = melior::ir::r#type::IntegerType::new(context, 32);
        // Taken before the barriers are erased.
        let location = rewrite::location(barriers[0]);
        // Each barrier records its number and ends the phase; what follows it starts a
        // block that the entry can branch to.
        let mut resumes = Vec::new();
        for (k, &barrier) in barriers.iter().enumerate() {
            let block = rewrite::block_of(barrier);
            let after = rewrite::block_after(block);
            let mut op = rewrite::next_operation(barrier);
            while !op.ptr.is_null() {
                let next = rewrite::next_operation(op);
                rewrite::move_to_end(op, after);
                op = next;
            }
            let b = Inserter::before(context, barrier);
            let number = b.constant(i32_type.into(), k as i64 + 1);
            b.store(number, phases.stopped, &[phases.thread]);
            b.return_nothing();
            rewrite::erase(barrier);
            resumes.push(after);
        }
        let entry = rewrite::entry_block(func);
        let start = rewrite::block_after(entry);
        for op in rewrite::operations(entry) {
            rewrite::move_to_end(op, start);
        }
        let finished = rewrite::block_after(start);
        Inserter::at_end(context, finished, location).return_nothing();
        dispatch(context, entry, start, &resumes, finished, phases, location);
        keep_values_across_phases(context, func, entry, phases)?;
        Ok(true)
    }
}

/// Gives each phase a thread loop of its own: `nest`, the host's loops over a
/// workgroup's threads (whose body dispatches by `phase`, see [`dispatch`]), becomes an
/// `scf.index_switch` on the workgroup's phase with one copy of the loops per phase, in
/// which the dispatch goes straight to that phase's code, so no thread of a phase
/// branches on it: LLVM's own unswitching gave phase 0 a loop of its own but kept the
/// other phases in one loop that compared the phase for every thread.
///
/// # Safety
///
/// `nest` is the live thread-loop nest of a host function whose kernel was [`split`]
/// at `barriers` barriers; `phase` is its `memref<i32>` phase.
pub unsafe fn unswitch(context: &Context, nest: MlirOperation, phase: MlirValue, barriers: usize) {
    // SAFETY (whole function): per the contract; the copies are owned by the regions
    // the switch takes.
    unsafe {
        let location = rewrite::location(nest);
        let b = Inserter::before(context, nest);
        let current = b.load(phase, &[], b.int(32));
        let index = b.convert(arith::index_castui, current, b.index());
        // In the copy of the loops for phase `k`, the dispatch goes straight to that
        // phase's code, and the code no path reaches then is erased (not left to the
        // canonicalizer: see `rewrite::erase_unreachable_blocks`).
        let settle_phase = |loops: MlirOperation, k: usize| {
            let loops = melior::ir::OperationRef::from_raw(loops);
            let body = rewrite::collect(loops, "scf.execute_region")[0];
            let entry = rewrite::entry_block(body);
            // The entry branches on whether the phase is past 0: to `resumed`, else
            // to the kernel's start.
            let [resumed, start] = rewrite::successors(entry)[..] else {
                unreachable!("the dispatch's entry has two successors");
            };
            let jump = |from: MlirBlock, to: MlirBlock| {
                let terminator = rewrite::terminator(from);
                Inserter::before(context, terminator).place(melior::dialect::cf::br(
                    &BlockRef::from_raw(to),
                    &[],
                    location,
                ));
                rewrite::erase(terminator);
            };
            if k == 0 {
                jump(entry, start);
            } else {
                jump(entry, resumed);
                // `resumed` skips a returned thread, else goes on to the switch on the
                // phase, whose successor `k` is phase `k`'s code.
                let by_phase = rewrite::successors(resumed)[1];
                jump(by_phase, rewrite::successors(by_phase)[k]);
            }
            rewrite::erase_unreachable_blocks(body);
        };
        let case = |loops: Option<MlirOperation>| {
            let block = melior::ir::Block::new(&[]);
            if let Some(loops) = loops {
                rewrite::append_owned(block.to_raw(), loops);
            }
            block.append_operation(melior::dialect::scf::r#yield(&[], location));
            let region = melior::ir::Region::new();
            region.append_block(block);
            region
        };
        // Phase 0 runs in the default region, so it keeps the original loops.
        let mut regions = vec![case(None)];
        for k in 1..=barriers as i64 {
            let copy = rewrite::clone(nest);
            settle_phase(copy, k as usize);
            regions.push(case(Some(copy)));
        }
        let cases: Vec<i64> = (1..=barriers as i64).collect();
        let switch = melior::dialect::scf::index_switch(
            context,
            Value::from_raw(index),
            &[],
            melior::ir::attribute::DenseI64ArrayAttribute::new(context, &cases),
            regions,
            location,
        );
        let switch = switch.into_raw();
        rewrite::insert_before(nest, switch);
        let default = rewrite::entry_block(switch);
        rewrite::move_before(nest, rewrite::terminator(default));
        settle_phase(nest, 0);
    }
}

/// Fills the new entry block: phase 0 starts every thread; a later phase skips a thread
/// that has returned (its `stopped` slot is 0), else branches by the phase. Either way a
/// thread that runs clears its slot first. The phase is
/// the workgroup's, the same for every thread of the loop that calls this, and
/// [`unswitch`] gives each phase a copy of the loop in which it is a constant.
///
/// # Safety
///
/// Every block and value is live; `entry` is empty.
unsafe fn dispatch(
    context: &Context,
    entry: MlirBlock,
    start: MlirBlock,
    resumes: &[MlirBlock],
    finished: MlirBlock,
    phases: &Phases,
    location: Location<'_>,
) {
    // SAFETY: per the contract.
    unsafe {
        let resumed = rewrite::block_after(entry);
        let by_phase = rewrite::block_after(resumed);
        let block = |raw: MlirBlock| BlockRef::from_raw(raw);
        let b = Inserter::at_end(context, entry, location);
        let i32_type = b.int(32);
        let zero = b.constant(i32_type, 0);
        let phase = b.load(phases.phase, &[], i32_type);
        let resuming = b.cmpi(arith::CmpiPredicate::Ne, phase, zero);
        b.place(melior::dialect::cf::cond_br(
            context,
            Value::from_raw(resuming),
            &block(resumed),
            &block(start),
            &[],
            &[],
            location,
        ));

        let b = Inserter::at_end(context, resumed, location);
        let stopped = b.load(phases.stopped, &[phases.thread], i32_type);
        let returned = b.cmpi(arith::CmpiPredicate::Eq, stopped, zero);
        b.place(melior::dialect::cf::cond_br(
            context,
            Value::from_raw(returned),
            &block(finished),
            &block(by_phase),
            &[],
            &[],
            location,
        ));

        // Phase `k` resumes after barrier `k`; no other phase reaches here.
        let resumes: Vec<BlockRef> = resumes.iter().map(|&r| block(r)).collect();
        let cases: Vec<(&melior::ir::Block, &[Value])> =
            resumes.iter().map(|r| (&**r, &[] as &[Value])).collect();
        let values: Vec<i64> = (1..=cases.len() as i64).collect();
        let finished = block(finished);
        let switch = melior::dialect::cf::switch(
            context,
            &values,
            Value::from_raw(phase),
            i32_type,
            (&*finished, &[]),
            &cases,
            location,
        )
        .expect("the phase switch is well formed");
        // A thread's slot is cleared when it runs and set by the barrier it stops at, so
        // one that returns leaves 0 with no store on its way out. (A store of 0 at each
        // return would end that path as a barrier's path ends, and LLVM would merge the
        // two paths' last stores into one through a choice of addresses, which its
        // vectoriser cannot follow.)
        let clear = |b: Inserter<'_>| {
            b.store(zero, phases.stopped, &[phases.thread]);
        };
        clear(Inserter::before(context, rewrite::first_operation(start)));
        clear(Inserter::at_end(context, by_phase, location));
        Inserter::at_end(context, by_phase, location).place(switch);
    }
}

/// Makes every value used where its definition no longer dominates available there:
/// computed again in `entry` if pure, else kept per thread in memory.
///
/// # Safety
///
/// `func` is the live kernel, split into phases, with `entry` its dispatching entry.
unsafe fn keep_values_across_phases(
    context: &Context,
    func: MlirOperation,
    entry: MlirBlock,
    phases: &Phases,
) -> Result<(), PassError> {
    // SAFETY (whole function): per the contract; handles are collected from `func`.
    unsafe {
        let blocks = rewrite::blocks(func);
        let dominators = Dominators::of(&blocks);
        let mut values = Vec::new();
        for &block in &blocks {
            values.extend(rewrite::arguments(block));
            for op in rewrite::operations(block) {
                values.extend((0..rewrite::result_count(op)).map(|i| rewrite::result(op, i)));
            }
        }
        let entry_end = rewrite::terminator(entry);
        for value in values {
            let defined = rewrite::defining_block(value);
            let stranded: Vec<(MlirOperation, u32, MlirOperation)> = rewrite::uses(value)
                .into_iter()
                .filter_map(|(user, i)| {
                    let top = rewrite::ancestor_in(user, func)?;
                    let at = rewrite::block_of(top);
                    (!dominators.dominates(defined, at)).then_some((user, i, top))
                })
                .collect();
            if stranded.is_empty() {
                continue;
            }
            match rewrite::defining_op(value) {
                Some(op) if recomputable(op, func, entry) => hoist(op, func, entry, entry_end),
                _ => spill(context, value, &stranded, phases)?,
            }
        }
        Ok(())
    }
}

/// Whether `op` and, recursively, the ops defining its operands are [`PURE`] or defined
/// outside the kernel or in `entry`.
///
/// # Safety
///
/// All live.
unsafe fn recomputable(op: MlirOperation, func: MlirOperation, entry: MlirBlock) -> bool {
    // SAFETY: per the contract.
    unsafe {
        let name = rewrite::name(op);
        let by_positive_constant = || {
            rewrite::defining_op(rewrite::operand(op, 1))
                .filter(|d| rewrite::name(*d) == "arith.constant")
                .and_then(|d| rewrite::int_attribute(d, "value"))
                .is_some_and(|v| v > 0)
        };
        let pure = PURE.contains(&name.as_str())
            || (DIVISIONS.contains(&name.as_str()) && by_positive_constant());
        if rewrite::has_regions(op) || !pure {
            return false;
        }
        rewrite::operands(op).into_iter().all(|v| {
            let block = rewrite::defining_block(v);
            if rewrite::same_block(block, entry) {
                return true;
            }
            match rewrite::defining_op(v) {
                Some(def) => match rewrite::ancestor_in(def, func) {
                    Some(_) => recomputable(def, func, entry),
                    None => true,
                },
                // Arguments of the kernel's other blocks change from path to path.
                None => {
                    rewrite::ancestor_in(rewrite::block_owner(block), func).is_none()
                        && !rewrite::same_operation(rewrite::block_owner(block), func)
                }
            }
        })
    }
}

/// Moves a [`recomputable`] op, after the ops it needs, to the end of `entry` (before
/// `end`, its terminator).
///
/// # Safety
///
/// All live; `op` is recomputable.
unsafe fn hoist(op: MlirOperation, func: MlirOperation, entry: MlirBlock, end: MlirOperation) {
    // SAFETY: per the contract.
    unsafe {
        if rewrite::same_block(rewrite::block_of(op), entry) {
            return;
        }
        for v in rewrite::operands(op) {
            if let Some(def) = rewrite::defining_op(v)
                && rewrite::ancestor_in(def, func).is_some()
            {
                hoist(def, func, entry, end);
            }
        }
        rewrite::move_before(op, end);
    }
}

/// Keeps a scalar per thread in memory: stored where it is defined, loaded before each
/// use in `stranded` (user, operand, the user's op in the kernel's region).
///
/// # Safety
///
/// All live.
unsafe fn spill(
    context: &Context,
    value: MlirValue,
    stranded: &[(MlirOperation, u32, MlirOperation)],
    phases: &Phases,
) -> Result<(), PassError> {
    // SAFETY: per the contract.
    unsafe {
        let ty = rewrite::value_type(value);
        let at = stranded[0].2;
        if !(ty.is_integer() || ty.is_index() || ty.is_float()) {
            return Err(refuse(
                at,
                format!("the CPU backend cannot keep a `{ty}` across a barrier"),
            ));
        }
        let b = Inserter::before(context, phases.allocate_before);
        let memory = rewrite::dynamic_memref(ty, 1, None);
        let threads = [Value::from_raw(phases.threads)];
        let slots = b.place(melior::dialect::memref::alloc(
            context,
            memory,
            &threads,
            &[],
            None,
            b.location,
        ))[0];
        Inserter::before(context, phases.free_before).dealloc(slots);
        let store_at = match rewrite::defining_op(value) {
            Some(op) => rewrite::next_operation(op),
            None => rewrite::first_operation(rewrite::defining_block(value)),
        };
        Inserter::before(context, store_at).store(value, slots, &[phases.thread]);
        for &(user, i, top) in stranded {
            let load = Inserter::before(context, top).load(slots, &[phases.thread], ty);
            rewrite::set_operand(user, i, load);
        }
        Ok(())
    }
}

/// The dominator tree of a region's blocks (the first is the entry), by the iterative
/// algorithm of Cooper, Harvey and Kennedy.
struct Dominators {
    /// Each block's position in reverse post-order; unreachable blocks are absent.
    order: HashMap<usize, usize>,
    /// The immediate dominator of each block, by position in reverse post-order.
    idom: Vec<usize>,
}

impl Dominators {
    /// # Safety
    ///
    /// The blocks are live and form one region.
    unsafe fn of(blocks: &[MlirBlock]) -> Self {
        let key = |b: MlirBlock| b.ptr as usize;
        // Reverse post-order by an explicit depth-first walk.
        let mut post = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![(blocks[0], 0usize)];
        seen.insert(key(blocks[0]));
        while let Some((block, next)) = stack.pop() {
            // SAFETY: per the contract.
            let succ = unsafe { rewrite::successors(block) };
            if next < succ.len() {
                stack.push((block, next + 1));
                if seen.insert(key(succ[next])) {
                    stack.push((succ[next], 0));
                }
            } else {
                post.push(block);
            }
        }
        post.reverse();
        let order: HashMap<usize, usize> =
            post.iter().enumerate().map(|(i, &b)| (key(b), i)).collect();
        let mut preds = vec![Vec::new(); post.len()];
        for (i, &b) in post.iter().enumerate() {
            // SAFETY: per the contract.
            for s in unsafe { rewrite::successors(b) } {
                preds[order[&key(s)]].push(i);
            }
        }
        let mut idom = vec![usize::MAX; post.len()];
        idom[0] = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for b in 1..post.len() {
                let mut new = usize::MAX;
                for &p in &preds[b] {
                    if idom[p] == usize::MAX {
                        continue;
                    }
                    new = if new == usize::MAX {
                        p
                    } else {
                        intersect(&idom, p, new)
                    };
                }
                if new != idom[b] {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        Dominators { order, idom }
    }

    /// Whether block `a` dominates block `b` (an unreachable `b` counts as dominated).
    fn dominates(&self, a: MlirBlock, b: MlirBlock) -> bool {
        let (Some(&a), Some(&b)) = (
            self.order.get(&(a.ptr as usize)),
            self.order.get(&(b.ptr as usize)),
        ) else {
            return true;
        };
        let mut b = b;
        loop {
            if a == b {
                return true;
            }
            if b == 0 {
                return false;
            }
            b = self.idom[b];
        }
    }
}

/// The nearest common dominator of two blocks, by reverse post-order position.
fn intersect(idom: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while a > b {
            a = idom[a];
        }
        while b > a {
            b = idom[b];
        }
    }
    a
}
