//! The host function `convert-offload-to-cpu` puts around a kernel: its leading
//! arguments, the loop over a share of the launch's workgroups, the loops over a
//! workgroup's threads and, for a kernel with barriers, the loop over its phases; built
//! with melior's builders around an empty `scf.execute_region` that the kernel's body
//! moves into. [`Host`] hands back every value and operation the conversion connects
//! the kernel to, so nothing is found again by searching the function.

use crate::rewrite::{self, Inserter};
use crate::workgroup_loops::Phases;
use melior::Context;
use melior::dialect::arith::{self, CmpiPredicate};
use melior::dialect::{func, memref, scf};
use melior::ir::attribute::{
    ArrayAttribute, DenseI64ArrayAttribute, DictionaryAttribute, IntegerAttribute, StringAttribute,
    TypeAttribute,
};
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{FunctionType, IntegerType, MemRefType};
use melior::ir::{
    Attribute, Block, Identifier, Location, Operation, Region, RegionLike, Type, Value, ValueLike,
    r#type::ShapedTypeLike,
};
use mlir_sys::{MlirOperation, MlirValue};

/// The host function of one kernel, and what [`crate::offload_to_cpu`] connects the
/// kernel to.
pub struct Host {
    /// The `func.func`, in no block yet.
    pub func: MlirOperation,
    /// Its arguments: the leading ones ([`offload_mir::abi::CpuLeading`]), then the
    /// kernel's.
    pub args: Vec<MlirValue>,
    /// Threads per workgroup in x, y and z: constants where the code is compiled for one
    /// workgroup size, so that the thread loops count to a constant.
    pub size: [MlirValue; 3],
    /// The workgroup's x, y and z, carried by the group loop.
    pub group: [MlirValue; 3],
    /// The thread's x, y and z: the thread loops' counters.
    pub thread: [MlirValue; 3],
    /// The outermost thread loop (over z).
    pub thread_nest: MlirOperation,
    /// The empty `scf.execute_region` the kernel's body moves into.
    pub body: MlirOperation,
    /// Where a kernel with barriers keeps its phase and each thread's stopped barrier.
    pub phases: Option<Phases>,
}

/// The thread loops of one workgroup, built apart from where they go.
struct ThreadLoops<'c> {
    /// The loop over z, holding y's, holding x's.
    nest: Operation<'c>,
    thread: [MlirValue; 3],
    /// `(z * size_y + y) * size_x + x`.
    linear: MlirValue,
    body: MlirOperation,
}

/// Where a kernel with barriers keeps its state: the constant phase 0, the workgroup's
/// phase (`memref<i32>`) and each thread's stopped barrier (`memref<?xi32>`).
#[derive(Clone, Copy)]
struct PhaseState {
    zero: MlirValue,
    phase: MlirValue,
    stopped: MlirValue,
}

/// Builds operations at one location, over raw values.
#[derive(Clone, Copy)]
struct Build<'c> {
    context: &'c Context,
    location: Location<'c>,
}

impl Host {
    /// Builds the host function `name` for a kernel taking `kernel_args`, each with
    /// whether its memory is reached through no other argument (`llvm.noalias`; see the
    /// docs of [`crate::offload_to_cpu`]). A `phased` kernel (one with barriers, see
    /// [`crate::workgroup_loops`]) runs its threads once per phase. A kernel that
    /// `zeroes_shared` memory gets its workgroup's shared block zeroed before each
    /// workgroup runs: a slot no thread of the workgroup wrote reads as zero (not as what
    /// the host thread's previous workgroup left), as on a GPU and in the interpreter.
    pub fn build<'c>(
        context: &'c Context,
        location: Location<'c>,
        name: &str,
        kernel_args: &[(Type<'c>, bool)],
        phased: bool,
        fixed_size: Option<[i64; 3]>,
        zeroes_shared: bool,
    ) -> Host {
        let m = Build { context, location };
        let index = Type::index(context);
        let i32_type: Type = IntegerType::new(context, 32).into();
        let bytes = rewrite::dynamic_memref(IntegerType::new(context, 8).into(), 1, None);
        let mut inputs = vec![index; offload_mir::abi::CPU_LEADING_ARGS - 1];
        inputs.push(bytes.into());
        inputs.extend(kernel_args.iter().map(|&(t, _)| t));
        // The workgroup's shared memory is its own too.
        let mut noalias = vec![false; offload_mir::abi::CPU_LEADING_ARGS - 1];
        noalias.push(true);
        noalias.extend(kernel_args.iter().map(|&(_, n)| n));
        let (entry, b) = m.block(&inputs);
        let args = arguments(&entry);
        let arg = |i: usize| args[i];
        let size = match fixed_size {
            Some(fixed) => fixed.map(|s| b.index_constant(s)),
            None => [arg(5), arg(6), arg(7)],
        };
        let c0 = b.index_constant(0);
        let c1 = b.index_constant(1);
        let groups = [arg(2), arg(3)];
        let groups_xy = m.binary(&b, arith::muli, groups[0], groups[1]);
        let size_xy = m.binary(&b, arith::muli, size[0], size[1]);
        let threads = m.binary(&b, arith::muli, size_xy, size[2]);
        let state = phased.then(|| {
            let zero = IntegerAttribute::new(i32_type, 0).into();
            let zero = b.place(arith::constant(context, zero, location))[0];
            let scalar = MemRefType::new(i32_type, &[], None, None);
            let phase = b.place(memref::alloca(context, scalar, &[], &[], None, location))[0];
            let slots = rewrite::dynamic_memref(i32_type, 1, None);
            let count = [m.value(threads)];
            let stopped = b.place(memref::alloc(context, slots, &count, &[], None, location));
            PhaseState {
                zero,
                phase,
                stopped: stopped[0],
            }
        });
        // The first workgroup's position; each later one's is carried.
        let first_x = m.binary(&b, arith::remui, arg(0), groups[0]);
        let first_yz = m.binary(&b, arith::divui, arg(0), groups[0]);
        let first_y = m.binary(&b, arith::remui, first_yz, groups[1]);
        let first_z = m.binary(&b, arith::divui, arg(0), groups_xy);

        let (group_block, g) = m.block(&[index; 4]);
        let carried = arguments(&group_block);
        let group = [carried[1], carried[2], carried[3]];
        if zeroes_shared {
            let shared = arg(offload_mir::abi::CPU_LEADING_ARGS - 1);
            let bytes = g.dim(shared, c0);
            g.zero_fill(shared, IntegerType::new(context, 8).into(), [c0, bytes, c1]);
        }
        let loops = m.thread_loops(size, [c0, c1]);
        let thread_nest = match state {
            Some(state) => m.phase_loop(&g, loops.nest, state, threads, [c0, c1]),
            None => g.place_op(loops.nest),
        };
        m.next_workgroup(&g, group, groups, [c0, c1]);
        let first = [first_x, first_y, first_z];
        let bounds = [arg(0), arg(1), c1];
        let group_loop = b.place_op(m.for_loop(bounds, &first, group_block));
        if let Some(state) = state {
            b.place(memref::dealloc(m.value(state.stopped), location));
        }
        let ret = b.place_op(func::r#return(&[], location));
        let function_type = FunctionType::new(context, &inputs, &[]);
        let func = func::func(
            context,
            StringAttribute::new(context, name),
            TypeAttribute::new(function_type.into()),
            region(entry),
            &[(
                Identifier::new(context, NOALIAS_ATTR),
                noalias_parameters(context, &inputs, &noalias),
            )],
            location,
        );
        Host {
            func: func.into_raw(),
            args,
            size,
            group,
            thread: loops.thread,
            thread_nest,
            body: loops.body,
            phases: state.map(|state| Phases {
                phase: state.phase,
                stopped: state.stopped,
                thread: loops.linear,
                threads,
                allocate_before: group_loop,
                free_before: ret,
            }),
        }
    }
}

impl<'c> Build<'c> {
    /// The loops over z, y and x up to `size`, the innermost holding an empty
    /// `scf.execute_region`.
    fn thread_loops(self, size: [MlirValue; 3], [c0, c1]: [MlirValue; 2]) -> ThreadLoops<'c> {
        let index = Type::index(self.context);
        let (z_block, zb) = self.block(&[index]);
        let z = arguments(&z_block)[0];
        let plane = self.binary(&zb, arith::muli, z, size[1]);
        let (y_block, yb) = self.block(&[index]);
        let y = arguments(&y_block)[0];
        let plane_row = self.binary(&yb, arith::addi, plane, y);
        let row = self.binary(&yb, arith::muli, plane_row, size[0]);
        let (x_block, xb) = self.block(&[index]);
        let x = arguments(&x_block)[0];
        let linear = self.binary(&xb, arith::addi, row, x);
        let (body_block, bb) = self.block(&[]);
        bb.place(scf::r#yield(&[], self.location));
        let body = scf::execute_region(&[], region(body_block), self.location);
        let body = xb.place_op(body);
        xb.place(scf::r#yield(&[], self.location));
        yb.place_op(self.for_loop([c0, size[0], c1], &[], x_block));
        yb.place(scf::r#yield(&[], self.location));
        zb.place_op(self.for_loop([c0, size[1], c1], &[], y_block));
        zb.place(scf::r#yield(&[], self.location));
        ThreadLoops {
            nest: self.for_loop([c0, size[2], c1], &[], z_block),
            thread: [x, y, z],
            linear,
            body,
        }
    }

    /// Puts `nest` at `at` in a loop over the workgroup's phases: from phase 0, each
    /// phase runs the threads, then the workgroup goes on to the barrier they stopped at
    /// (the largest, as every thread that stops stops at the same one), or ends if none
    /// did. Returns the nest.
    fn phase_loop(
        self,
        at: &Inserter<'c>,
        nest: Operation<'c>,
        state: PhaseState,
        threads: MlirValue,
        [c0, c1]: [MlirValue; 2],
    ) -> MlirOperation {
        let (index, location) = (Type::index(self.context), self.location);
        let i32_type = IntegerType::new(self.context, 32).into();
        let (phase_block, p) = self.block(&[]);
        let nest = p.place_op(nest);
        let (max_block, mb) = self.block(&[index, i32_type]);
        let [t, so_far] = arguments(&max_block)[..] else {
            unreachable!("the block was built with two arguments")
        };
        let stopped = self.value(state.stopped);
        let here = mb.place(memref::load(stopped, &[self.value(t)], location))[0];
        let later = self.binary(&mb, arith::maxui, so_far, here);
        mb.place(scf::r#yield(&[self.value(later)], location));
        let next = p.place(self.for_loop([c0, threads, c1], &[state.zero], max_block))[0];
        let (next_value, phase) = (self.value(next), self.value(state.phase));
        p.place(memref::store(next_value, phase, &[], location));
        let more = self.compare(&p, CmpiPredicate::Ne, next, state.zero);
        p.place(scf::condition(self.value(more), &[], location));
        at.place(memref::store(self.value(state.zero), phase, &[], location));
        let (after, a) = self.block(&[]);
        a.place(scf::r#yield(&[], location));
        let phases = scf::r#while(&[], &[], region(phase_block), region(after), location);
        at.place(phases);
        nest
    }

    /// Ends the group loop's body at `at` with the next workgroup's position: x + 1,
    /// wrapping to 0 into y + 1, wrapping into z + 1.
    fn next_workgroup(
        self,
        at: &Inserter<'c>,
        [x, y, z]: [MlirValue; 3],
        [groups_x, groups_y]: [MlirValue; 2],
        [c0, c1]: [MlirValue; 2],
    ) {
        let select = |c, t, f| {
            let op = arith::select(self.value(c), self.value(t), self.value(f), self.location);
            at.place(op)[0]
        };
        let x1 = self.binary(at, arith::addi, x, c1);
        let wrap_x = self.compare(at, CmpiPredicate::Eq, x1, groups_x);
        let y1 = self.binary(at, arith::addi, y, c1);
        let wrap_y = self.compare(at, CmpiPredicate::Eq, y1, groups_y);
        let z1 = self.binary(at, arith::addi, z, c1);
        let next_x = select(wrap_x, c0, x1);
        let carry_y = select(wrap_y, c0, y1);
        let next_y = select(wrap_x, carry_y, y);
        let carry_z = select(wrap_y, z1, z);
        let next_z = select(wrap_x, carry_z, z);
        let next = [next_x, next_y, next_z].map(|v| self.value(v));
        at.place(scf::r#yield(&next, self.location));
    }

    /// A new block taking `types`, and a rewriter at its end.
    fn block(self, types: &[Type<'c>]) -> (Block<'c>, Inserter<'c>) {
        let arguments: Vec<_> = types.iter().map(|&t| (t, self.location)).collect();
        let block = Block::new(&arguments);
        // SAFETY: the block is live; the rewriter appends to it while it is built.
        let at = unsafe { Inserter::at_end(self.context, block.to_raw(), self.location) };
        (block, at)
    }

    /// `scf.for` from `bounds[0]` to `bounds[1]` by `bounds[2]`, carrying values from
    /// `inits`; `body` takes the counter and the carried values, and ends in its yield.
    fn for_loop(
        self,
        bounds: [MlirValue; 3],
        inits: &[MlirValue],
        body: Block<'c>,
    ) -> Operation<'c> {
        let operands: Vec<Value> = bounds.iter().chain(inits).map(|&v| self.value(v)).collect();
        let results: Vec<Type> = inits.iter().map(|&v| self.value(v).r#type()).collect();
        OperationBuilder::new("scf.for", self.location)
            .add_operands(&operands)
            .add_results(&results)
            .add_regions([region(body)])
            .build()
            .expect("a loop of index bounds and matching carried values is valid")
    }

    /// A binary arithmetic op at `at`, its one result.
    fn binary(
        self,
        at: &Inserter<'c>,
        op: fn(Value<'c, '_>, Value<'c, '_>, Location<'c>) -> Operation<'c>,
        x: MlirValue,
        y: MlirValue,
    ) -> MlirValue {
        at.place(op(self.value(x), self.value(y), self.location))[0]
    }

    /// `arith.cmpi` at `at`, its result.
    fn compare(
        self,
        at: &Inserter<'c>,
        predicate: CmpiPredicate,
        x: MlirValue,
        y: MlirValue,
    ) -> MlirValue {
        let op = arith::cmpi(
            self.context,
            predicate,
            self.value(x),
            self.value(y),
            self.location,
        );
        at.place(op)[0]
    }

    /// A value of the function under construction.
    fn value(self, raw: MlirValue) -> Value<'c, 'static> {
        // SAFETY: every value handled here belongs to an operation or block built for
        // the host function, alive as long as it is.
        unsafe { Value::from_raw(raw) }
    }
}

/// The host function's attribute listing the LLVM parameters (after each memref is
/// expanded into its descriptor's fields) that are `noalias`: MLIR's conversion to the
/// LLVM dialect drops `llvm.noalias` from a memref argument, which becomes several
/// parameters, so the host function carries the list through it and [`mark_noalias`]
/// applies it after.
pub const NOALIAS_ATTR: &str = "offload.noalias_parameters";

/// The LLVM parameters of the `noalias` arguments among `inputs`: each memref's aligned
/// pointer (through which its elements are read and written), the second of its
/// descriptor's `3 + 2 * rank` fields (two pointers, offset, sizes, strides); other
/// types are one parameter.
fn noalias_parameters<'c>(
    context: &'c Context,
    inputs: &[Type<'c>],
    noalias: &[bool],
) -> Attribute<'c> {
    let mut parameters = Vec::new();
    let mut at = 0;
    for (&ty, &unshared) in inputs.iter().zip(noalias) {
        let width = match MemRefType::try_from(ty) {
            Ok(memref) => {
                if unshared {
                    parameters.push(at + 1);
                }
                3 + 2 * memref.rank() as i64
            }
            Err(_) => 1,
        };
        at += width;
    }
    DenseI64ArrayAttribute::new(context, &parameters).into()
}

/// Gives the parameters each LLVM function lists in [`NOALIAS_ATTR`] the `llvm.noalias`
/// attribute, and drops the list.
///
/// # Safety
///
/// `root` is a live module in the LLVM dialect.
pub unsafe fn mark_noalias(context: &Context, root: melior::ir::OperationRef<'_, '_>) {
    let mark = [(
        Identifier::new(context, "llvm.noalias"),
        Attribute::unit(context),
    )];
    for func in rewrite::collect(root, "llvm.func") {
        // SAFETY: the functions were just collected from the live module.
        unsafe {
            let Some(parameters) = rewrite::i64_array_attribute(func, NOALIAS_ATTR) else {
                continue;
            };
            let count = rewrite::arguments(rewrite::entry_block(func)).len() as i64;
            let each: Vec<Attribute> = (0..count)
                .map(|p| {
                    let marked: &[_] = if parameters.contains(&p) { &mark } else { &[] };
                    DictionaryAttribute::new(context, marked).into()
                })
                .collect();
            rewrite::set_attribute(
                func,
                "arg_attrs",
                ArrayAttribute::new(context, &each).into(),
            );
            rewrite::remove_attribute(func, NOALIAS_ATTR);
        }
    }
}

/// A block's arguments.
fn arguments(block: &Block<'_>) -> Vec<MlirValue> {
    // SAFETY: the block is live.
    unsafe { rewrite::arguments(block.to_raw()) }
}

/// A region of one block.
fn region(block: Block<'_>) -> Region<'_> {
    let region = Region::new();
    region.append_block(block);
    region
}
