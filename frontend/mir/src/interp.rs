//! A reference interpreter of MIR: runs a kernel over a launch on the host, with the
//! semantics of the CPU backend's lowering, so that a kernel compiled by `offload-lowering`
//! and run on the CPU can be checked against it (differential fuzzing).
//!
//! # What it models
//!
//! - **Scheduling** as the CPU backend's phases do it: workgroups in launch order (x
//!   fastest); in a workgroup, each unfinished thread in turn runs until it reaches a
//!   barrier or ends, and such passes repeat until every thread has ended. A thread that
//!   returned or panicked no longer takes part in barriers.
//! - **Values** as the lowering computes them: integers wrap, shift amounts are masked to
//!   the bit width, float-to-int casts saturate with NaN as 0, float `min`/`max` return the
//!   non-NaN operand, `powi` is the square-and-multiply loop `convert-math-to-funcs`
//!   outlines, transcendentals are the host's libm (as the CPU backend's calls are).
//! - **Subgroups** one lane wide, as on the CPU: shuffles and reductions return the
//!   thread's own value, a ballot is the thread's own bit, the size is 1 and the lane 0.
//! - **Memory**: regions, slices and atomics are the arguments' data; each workgroup has
//!   zeroed shared memory laid out as [`Body::shared_layout`] says, dynamic shared memory
//!   (`dyn_shared_bytes` bytes) after the static arrays, every `Shared<T, dyn>` viewing it.
//!   A slot no thread of the workgroup wrote reads as zero, as the lowering zeroes
//!   shared memory when a workgroup starts, on every target.
//! - **Panics**: the first panic of the launch is the report; the data the kernel may
//!   write (regions, atomics) is written back into the arguments only if no thread
//!   panicked, as the runtime copies back.
//!
//! What the lowering leaves undefined is an [`InterpError`], not a result: an index out of
//! bounds, an integer division by zero or `MIN / -1`, reaching `unreachable`. So is running
//! past the step budget of [`Options`]. The interpreter never panics on a body that passes
//! [`crate::validate`]; it validates the body itself first.

mod scalar;

use crate::ir::*;
use crate::validate::{ValidationError, validate};
use scalar::*;
pub use scalar::{bits_const, const_bits, mask};
use std::collections::HashMap;

/// The geometry of a launch: workgroups in the grid, threads per workgroup (x, y, z),
/// and the bytes of dynamic shared memory each workgroup gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub workgroups: [u32; 3],
    pub threads: [u32; 3],
    pub dyn_shared_bytes: u32,
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// The data of a region, slice or atomic argument: the raw bits of each element (a
    /// `bool` is 0 or 1, an `f32` its bits in the low half, a signed integer its two's
    /// complement in the low bits), and how a region lays them out.
    Buffer {
        elem: ScalarTy,
        data: Vec<u64>,
        layout: Layout,
    },
    Scalar(Const),
}

/// How a region argument's elements are laid out and handed to threads, beyond what its
/// strategy says; the default is a plain 1-D region.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// Elements per row of a 2-D or 3-D region.
    pub row_len: Option<usize>,
    /// Rows per plane of a 3-D region.
    pub plane_rows: Option<usize>,
    /// An interior region's margin: its threads start this far from each edge.
    pub margin: usize,
    /// The indices of an `Indexed` region: thread `t` owns element `indices[t]`.
    pub indices: Option<Vec<usize>>,
}

impl ArgValue {
    /// A buffer of `data` (raw bits per element) laid out as a plain 1-D region.
    pub fn buffer(elem: ScalarTy, data: Vec<u64>) -> ArgValue {
        ArgValue::Buffer {
            elem,
            data,
            layout: Layout::default(),
        }
    }
}

/// How much work a run may do before it is cut off, and which device's arithmetic it
/// models where devices differ from Rust's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Statements and terminators executed, over all threads together.
    pub max_steps: u64,
    /// An `f32` atomic add flushes subnormal operands and results to zero of the same
    /// sign, as NVIDIA's `atom.add.f32` does (PTX ISA). Off: Rust's IEEE addition, as on
    /// the CPU backend.
    pub f32_atomic_add_flushes_subnormals: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_steps: 10_000_000,
            f32_atomic_add_flushes_subnormals: false,
        }
    }
}

/// A thread's panic: which `assert` failed and the values its message reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PanicReport {
    /// The panic site: the position of the `assert` in [`Body::panic_sites`].
    pub site: usize,
    /// `[len, index]` for a bounds check; empty for a plain message.
    pub values: Vec<u64>,
    pub workgroup: [u32; 3],
    pub thread: [u32; 3],
}

impl PanicReport {
    /// The message as the runtime prints it (the values read back as `i64` words).
    pub fn message(&self, body: &Body) -> String {
        let value = |i: usize| self.values.get(i).map_or(0, |&v| v as i64);
        match body.panic_sites().get(self.site) {
            Some((msg, _)) => msg.text(&[value(0), value(1)]),
            None => format!("a thread panicked at an unknown site ({})", self.site),
        }
    }
}

/// What a launch did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The first panic in launch order: what a run with one host thread reports.
    pub panic: Option<PanicReport>,
    /// Every panic, in the order the threads panicked. Workgroups run in parallel on a
    /// multi-core CPU, so the reported panic may be the first of any workgroup's.
    pub panics: Vec<PanicReport>,
    /// Statements and terminators executed.
    pub steps: u64,
    /// Whether the results depend on the order threads run in, which no backend fixes:
    /// two threads updated one atomic element, and the kernel uses an atomic operation's
    /// result (the previous value). Only this run's order is then the interpreter's.
    pub order_dependent: bool,
}

/// Where in the launch something happened.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct At {
    pub block: BasicBlock,
    pub workgroup: [u32; 3],
    pub thread: [u32; 3],
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (workgroup {:?}, thread {:?})",
            self.block, self.workgroup, self.thread
        )
    }
}

/// Why a launch has no defined outcome.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    #[error("the body is not valid MIR: {0}")]
    Invalid(ValidationError),
    #[error("cannot interpret: {0}")]
    Unsupported(String),
    #[error("bad arguments: {0}")]
    BadArguments(String),
    #[error("bad launch: {0}")]
    BadLaunch(String),
    #[error("at {at}: index {index} is out of bounds of `{container}` (length {len})")]
    IndexOutOfBounds {
        at: At,
        container: Local,
        index: u64,
        len: u64,
    },
    #[error("at {at}: integer division by zero")]
    DivisionByZero { at: At },
    #[error("at {at}: integer division overflows (`MIN / -1`)")]
    DivisionOverflow { at: At },
    #[error("at {at}: reached `unreachable`")]
    ReachedUnreachable { at: At },
    #[error("ran past the budget of {max_steps} steps")]
    StepLimit { max_steps: u64 },
}

/// The value of a computation from constants, with the interpreter's semantics: `rv` is
/// a use, a unary or binary operation, a cast or a built-in function, and `operand`
/// gives the constant each operand holds. `None` when an operand is not known, the
/// operation has no defined value (an integer division by zero or overflow), or its
/// result is a transcendental function's, whose last bits vary between targets' libraries.
/// Constant folding before lowering uses this, so that it computes what the kernel would.
pub fn evaluate(rv: &Rvalue, operand: &dyn Fn(&Operand) -> Option<Const>) -> Option<Const> {
    let known = |op: &Operand| operand(op).map(|c| (const_bits(c), c.ty()));
    let (bits, ty) = match rv {
        Rvalue::Use(a) => return operand(a),
        Rvalue::UnaryOp(op, a) => {
            let (v, t) = known(a)?;
            (unary(*op, t, v), t)
        }
        Rvalue::BinaryOp(op, a, b) => {
            let ((x, t), (y, _)) = (known(a)?, known(b)?);
            let result = if op.is_comparison() {
                ScalarTy::Bool
            } else {
                t
            };
            (binary(*op, t, x, y).ok()?, result)
        }
        Rvalue::Cast(a, to) => {
            let (v, t) = known(a)?;
            (cast(t, *to, v), *to)
        }
        Rvalue::Intrinsic(i, args) => {
            if !i.is_exact() {
                return None;
            }
            let values: Vec<(u64, ScalarTy)> = args.iter().map(known).collect::<Option<_>>()?;
            let t = values.first()?.1;
            let types: Vec<ScalarTy> = values.iter().map(|v| v.1).collect();
            let result = i.result_type(&types).ok()?;
            let bits: Vec<u64> = values.iter().map(|v| v.0).collect();
            (intrinsic(*i, t, &bits), result)
        }
        _ => return None,
    };
    Some(bits_const(ty, bits))
}

/// The most threads one workgroup may have; more is refused rather than allocated.
const MAX_WORKGROUP_THREADS: u64 = 1 << 16;

/// The most locals of all threads of a workgroup together, likewise.
const MAX_THREAD_WORDS: u64 = 1 << 26;

/// The most shared memory (static and dynamic) one workgroup may have, likewise.
const MAX_SHARED_BYTES: usize = 1 << 24;

/// Runs `body` over `launch` with `args`. On success the regions and atomics in `args`
/// hold what the kernel wrote, unless a thread panicked (see [`Outcome::panic`]), in
/// which case `args` are as they were.
pub fn run(
    body: &Body,
    launch: &Launch,
    args: &mut [ArgValue],
    options: &Options,
) -> Result<Outcome, InterpError> {
    validate(body).map_err(InterpError::Invalid)?;
    check_supported(body)?;
    check_launch(body, launch)?;
    let buffers = bind_buffers(body, args)?;
    let scalars = bind_scalars(body, args)?;
    let mut machine = Machine {
        body,
        launch: *launch,
        options: *options,
        buffers,
        shared: SharedMemory::new(body, launch.dyn_shared_bytes),
        sites: body.panic_site_numbers(),
        steps: 0,
        panics: Vec::new(),
        atomic_users: HashMap::new(),
        collective: None,
    };
    // Saturating: a launch that large runs out of steps long before.
    let groups = (launch.workgroups.iter()).fold(1u64, |n, &d| n.saturating_mul(d as u64));
    for g in 0..groups {
        machine.run_workgroup(g, &scalars)?;
    }
    let contended = machine.atomic_users.values().any(|(_, shared)| *shared);
    let Machine {
        buffers,
        panics,
        steps,
        ..
    } = machine;
    if panics.is_empty() {
        write_back(body, args, buffers);
    }
    Ok(Outcome {
        panic: panics.first().cloned(),
        panics,
        steps,
        order_dependent: contended && uses_atomic_results(body),
    })
}

fn check_supported(body: &Body) -> Result<(), InterpError> {
    if body.kind != BodyKind::Kernel {
        return Err(InterpError::Unsupported(
            "only kernels are launched; device functions are inlined into them".into(),
        ));
    }
    let calls = body
        .blocks
        .iter()
        .any(|b| matches!(b.terminator.kind, TerminatorKind::Call { .. }));
    if calls {
        return Err(InterpError::Unsupported(
            "the kernel calls device functions: inline them first (`offload_mir::inline`)".into(),
        ));
    }
    Ok(())
}

fn check_launch(body: &Body, launch: &Launch) -> Result<(), InterpError> {
    if launch.workgroups.contains(&0) || launch.threads.contains(&0) {
        return Err(InterpError::BadLaunch(format!(
            "every dimension needs at least one workgroup and thread: {:?} x {:?}",
            launch.workgroups, launch.threads
        )));
    }
    let per_group = launch.threads.iter().map(|&n| n as u64).product::<u64>();
    if per_group > MAX_WORKGROUP_THREADS {
        return Err(InterpError::BadLaunch(format!(
            "{per_group} threads per workgroup; the interpreter runs at most {MAX_WORKGROUP_THREADS}"
        )));
    }
    if per_group.saturating_mul(body.locals.len() as u64) > MAX_THREAD_WORDS {
        return Err(InterpError::BadLaunch(format!(
            "{per_group} threads of {} locals each are more than the interpreter holds",
            body.locals.len()
        )));
    }
    let shared = body.shared_layout().dynamic_offset + launch.dyn_shared_bytes as usize;
    if shared > MAX_SHARED_BYTES {
        return Err(InterpError::BadLaunch(format!(
            "{shared} bytes of shared memory per workgroup; the interpreter allocates at most {MAX_SHARED_BYTES}"
        )));
    }
    Ok(())
}

/// The data of one region, slice or atomic argument while the kernel runs.
struct Buffer {
    elem: ScalarTy,
    data: Vec<u64>,
    /// Row length, rows per plane, planes, as `RegionExtent` reports them: a 1-D region
    /// is one row, a 2-D region one plane.
    extents: [u64; 3],
    margin: u64,
    /// An `Indexed` region's indices: its element `t` is the data's `indices[t]`.
    indices: Option<Vec<u64>>,
    strategy: Option<Strategy>,
}

impl Buffer {
    /// Where element `index` of the container is in its data.
    fn slot(&self, index: u64) -> Option<usize> {
        let index = match &self.indices {
            Some(indices) => *indices.get(usize::try_from(index).ok()?)?,
            None => index,
        };
        usize::try_from(index).ok().filter(|&i| i < self.data.len())
    }

    /// The container's length: its elements, or an `Indexed` region's indices.
    fn len(&self) -> u64 {
        self.indices.as_ref().map_or(self.data.len(), Vec::len) as u64
    }
}

/// Copies the container arguments, indexed by local.
fn bind_buffers(body: &Body, args: &[ArgValue]) -> Result<Vec<Option<Buffer>>, InterpError> {
    if args.len() != body.arg_count {
        return Err(InterpError::BadArguments(format!(
            "the kernel takes {} arguments, {} given",
            body.arg_count,
            args.len()
        )));
    }
    let mut buffers: Vec<Option<Buffer>> = (0..body.locals.len()).map(|_| None).collect();
    for ((local, decl), arg) in body.args().zip(args) {
        let (want, strategy) = match decl.ty {
            Ty::Region(e, s) => (e, Some(s)),
            Ty::Slice(e) | Ty::Atomic(e) => (e, None),
            _ => continue,
        };
        let ArgValue::Buffer { elem, data, layout } = arg else {
            return Err(InterpError::BadArguments(format!(
                "`{local}` has type `{}` but is given a scalar",
                decl.ty
            )));
        };
        if *elem != want {
            return Err(InterpError::BadArguments(format!(
                "`{local}` has type `{}` but is given `{elem}` elements",
                decl.ty
            )));
        }
        let extents = region_extents(local, &decl.ty, data.len(), layout)?;
        let indices = match strategy {
            Some(Strategy::Indexed) => {
                let indices = layout.indices.as_ref().ok_or_else(|| {
                    InterpError::BadArguments(format!(
                        "`{local}` is an `Indexed` region without indices"
                    ))
                })?;
                Some(indices.iter().map(|&i| i as u64).collect())
            }
            _ => None,
        };
        buffers[local.index()] = Some(Buffer {
            elem: want,
            data: data.iter().map(|&v| v & mask(want)).collect(),
            extents,
            margin: layout.margin as u64,
            indices,
            strategy,
        });
    }
    Ok(buffers)
}

/// The initial value of every local: the scalar arguments' bits, zero elsewhere.
fn bind_scalars(body: &Body, args: &[ArgValue]) -> Result<Vec<u64>, InterpError> {
    let mut locals = vec![0u64; body.locals.len()];
    for ((local, decl), arg) in body.args().zip(args) {
        let Ty::Scalar(want) = decl.ty else { continue };
        match arg {
            ArgValue::Scalar(c) if c.ty() == want => locals[local.index()] = const_bits(*c),
            other => {
                return Err(InterpError::BadArguments(format!(
                    "`{local}` has type `{want}` but is given {other:?}"
                )));
            }
        }
    }
    Ok(locals)
}

/// A region's extents (row length, rows per plane, planes) from its layout, checked as a
/// launch checks them.
fn region_extents(
    local: Local,
    ty: &Ty,
    len: usize,
    layout: &Layout,
) -> Result<[u64; 3], InterpError> {
    let rank = match ty {
        Ty::Region(_, s) => s.rank(),
        _ => 1,
    };
    let bad = |what: &str| {
        Err(InterpError::BadArguments(format!(
            "`{local}` is a {rank}-D region of {len} elements: {what}, got {layout:?}"
        )))
    };
    let (row_len, plane_rows) = match rank {
        1 => return Ok([len as u64, 1, 1]),
        2 => (
            layout.row_len,
            Some(layout.row_len.map_or(0, |w| len / w.max(1))),
        ),
        _ => (layout.row_len, layout.plane_rows),
    };
    let (Some(w), Some(h)) = (row_len, plane_rows) else {
        return bad("it needs a row length (and for 3-D, rows per plane)");
    };
    let plane = w.checked_mul(h).unwrap_or(0);
    if plane == 0 || !len.is_multiple_of(plane) {
        return bad("its extents must be positive and divide its length");
    }
    let extents = [w, h, len / plane].map(|e| e as u64);
    if extents[..rank as usize]
        .iter()
        .any(|&e| layout.margin as u64 > e / 2)
    {
        return bad("its margin must leave an interior");
    }
    Ok(extents)
}

/// Writes what the kernel may have changed back into the arguments.
fn write_back(body: &Body, args: &mut [ArgValue], mut buffers: Vec<Option<Buffer>>) {
    for ((local, decl), arg) in body.args().zip(args.iter_mut()) {
        let writable = match decl.ty {
            Ty::Region(_, s) => s.is_writable(),
            Ty::Atomic(_) => true,
            _ => false,
        };
        if let (true, ArgValue::Buffer { data, .. }) = (writable, arg)
            && let Some(buffer) = buffers[local.index()].take()
        {
            *data = buffer.data;
        }
    }
}

/// One workgroup's shared memory: the static arrays at their offsets, then the dynamic
/// shared memory, little-endian as on the host.
/// Every workgroup's starts zeroed, as the lowering zeroes it on every target: a slot no
/// thread of the workgroup wrote reads as zero.
struct SharedMemory {
    bytes: Vec<u8>,
    /// Per local: (byte offset, elements) of a `Shared` array's view.
    views: Vec<Option<(usize, u64)>>,
}

impl SharedMemory {
    fn new(body: &Body, dyn_bytes: u32) -> SharedMemory {
        let layout = body.shared_layout();
        let mut views = vec![None; body.locals.len()];
        for (local, offset) in &layout.arrays {
            if let Ty::Shared(_, Some(n)) = body.locals[local.index()].ty {
                views[local.index()] = Some((*offset, n.number() as u64));
            }
        }
        for (i, decl) in body.locals.iter().enumerate() {
            if let Ty::Shared(e, None) = decl.ty {
                let len = dyn_bytes as u64 / e.size_bytes() as u64;
                views[i] = Some((layout.dynamic_offset, len));
            }
        }
        let size = layout.dynamic_offset + dyn_bytes as usize;
        SharedMemory {
            bytes: vec![0; size],
            views,
        }
    }

    /// The element at byte `at`.
    fn load(&self, elem: ScalarTy, at: usize) -> u64 {
        let size = elem.size_bytes();
        let mut word = [0u8; 8];
        word[..size].copy_from_slice(&self.bytes[at..at + size]);
        u64::from_le_bytes(word)
    }

    fn store(&mut self, elem: ScalarTy, at: usize, value: u64) {
        let size = elem.size_bytes();
        self.bytes[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }
}

/// Where a thread is and what it holds.
struct Thread {
    locals: Vec<u64>,
    block: usize,
    statement: usize,
    /// Position in the workgroup, and the workgroup's in the grid.
    pos: [u32; 3],
    group: [u32; 3],
    done: bool,
}

/// Why a thread stopped running.
enum Pause {
    Barrier,
    Done,
    Panicked(PanicReport),
}

/// Where control goes after a terminator.
enum Flow {
    Jump(usize),
    Barrier(usize),
    Return,
    Panic(PanicReport),
}

struct Machine<'a> {
    body: &'a Body,
    launch: Launch,
    options: Options,
    buffers: Vec<Option<Buffer>>,
    shared: SharedMemory,
    sites: Vec<Option<usize>>,
    steps: u64,
    panics: Vec<PanicReport>,
    /// Per atomic element (local, index): the first thread to update it, as (workgroup,
    /// position), and whether another has since.
    atomic_users: HashMap<(u32, u64), (ThreadId, bool)>,
    /// The workgroup tile operation the waiting threads have reached: its block, and the
    /// scalar operands the first thread there gave (every thread gives the same), run
    /// once when every thread has arrived.
    collective: Option<(usize, Vec<u64>)>,
}

/// A thread of the launch: its workgroup and its position in it.
type ThreadId = ([u32; 3], [u32; 3]);

/// Whether some atomic operation's result, the element's previous value, is read.
fn uses_atomic_results(body: &Body) -> bool {
    let results: Vec<Local> = body
        .blocks
        .iter()
        .flat_map(|b| &b.statements)
        .filter(|s| matches!(s.rvalue, Rvalue::AtomicRmw(..) | Rvalue::AtomicCas(..)))
        .map(|s| s.place.local)
        .collect();
    let read = |op: &Operand| match op {
        Operand::Copy(p) | Operand::Move(p) => {
            results.contains(&p.local) || p.index.is_some_and(|i| results.contains(&i))
        }
        Operand::Const(_) => false,
    };
    let local = |l: &Local| results.contains(l);
    let rvalue_reads = |rv: &Rvalue| match rv {
        Rvalue::Use(a) | Rvalue::UnaryOp(_, a) | Rvalue::Cast(a, _) => read(a),
        Rvalue::BinaryOp(_, a, b) => read(a) || read(b),
        Rvalue::Intrinsic(_, args) | Rvalue::Subgroup(_, args) => args.iter().any(read),
        Rvalue::AtomicRmw(_, place, a) => read(a) || place.index.as_ref().is_some_and(local),
        Rvalue::AtomicCas(place, a, b) => {
            read(a) || read(b) || place.index.as_ref().is_some_and(local)
        }
        Rvalue::Position(..)
        | Rvalue::Len(_)
        | Rvalue::RegionIndex(_)
        | Rvalue::RegionCoord(..)
        | Rvalue::RegionExtent(..)
        | Rvalue::RegionEnd(..) => false,
    };
    let terminator_reads = |t: &TerminatorKind| match t {
        TerminatorKind::SwitchInt { discr, .. } => read(discr),
        TerminatorKind::Assert { cond, msg, .. } => {
            read(cond) || msg.operands().into_iter().any(read)
        }
        TerminatorKind::Call { args, .. } => args.iter().any(read),
        TerminatorKind::TileFill { origin, .. } => origin.iter().any(read),
        TerminatorKind::Goto(_)
        | TerminatorKind::Barrier { .. }
        | TerminatorKind::TileMma { .. }
        | TerminatorKind::Return
        | TerminatorKind::Unreachable => false,
    };
    body.blocks.iter().any(|b| {
        b.statements
            .iter()
            .any(|s| rvalue_reads(&s.rvalue) || s.place.index.as_ref().is_some_and(local))
            || terminator_reads(&b.terminator.kind)
    })
}

/// `linear` as (x, y, z) coordinates in a grid of `dims`, x fastest.
fn coords(linear: u64, dims: [u32; 3]) -> [u32; 3] {
    let (x, y) = (dims[0] as u64, dims[1] as u64);
    [
        (linear % x) as u32,
        (linear / x % y) as u32,
        (linear / (x * y)) as u32,
    ]
}

impl Machine<'_> {
    /// Runs every thread of workgroup `g` to its end, pass after pass.
    fn run_workgroup(&mut self, g: u64, scalars: &[u64]) -> Result<(), InterpError> {
        self.shared.bytes.fill(0);
        let group = coords(g, self.launch.workgroups);
        let count = self
            .launch
            .threads
            .iter()
            .map(|&n| n as u64)
            .product::<u64>();
        let mut threads: Vec<Thread> = (0..count)
            .map(|t| Thread {
                locals: scalars.to_vec(),
                block: 0,
                statement: 0,
                pos: coords(t, self.launch.threads),
                group,
                done: false,
            })
            .collect();
        let mut waiting = true;
        while waiting {
            waiting = false;
            for t in threads.iter_mut().filter(|t| !t.done) {
                match self.run_thread(t)? {
                    Pause::Barrier => waiting = true,
                    Pause::Done => t.done = true,
                    Pause::Panicked(report) => {
                        t.done = true;
                        self.panics.push(report);
                    }
                }
            }
            if let Some((block, values)) = self.collective.take() {
                let body = self.body;
                match &body.blocks[block].terminator.kind {
                    TerminatorKind::TileFill {
                        tile, src, shape, ..
                    } => self.fill_tile(*tile, *src, *shape, &values),
                    kind => self.multiply_tiles(kind),
                }
            }
        }
        Ok(())
    }

    /// A [`TerminatorKind::TileFill`] of `tile` from `src` at `[row_len, row, col]`.
    fn fill_tile(&mut self, tile: Local, src: Local, shape: [Param; 3], origin: &[u64]) {
        let [rows, cols, pitch] = shape.map(|e| e.number() as u64);
        let (row_len, row, col) = (origin[0], origin[1], origin[2]);
        let elem = (self.body.locals[tile.index()].ty.element()).expect("a tile");
        let (offset, _) = self.shared.views[tile.index()].expect("validated tiles are shared");
        for r in 0..rows {
            for c in 0..cols {
                let column = col.wrapping_add(c);
                let at = row
                    .wrapping_add(r)
                    .wrapping_mul(row_len)
                    .wrapping_add(column);
                let buffer = self.buffer(src);
                let value = match buffer.slot(at) {
                    Some(i) if column < row_len => buffer.data[i],
                    _ => 0,
                };
                let slot = offset + (r * pitch + c) as usize * elem.size_bytes();
                self.shared.store(elem, slot, value);
            }
        }
    }

    /// `acc += a × b` of a [`TerminatorKind::TileMma`], each sum of products accumulated in
    /// order of `k` in the accumulator's type from the products, which are exact in it.
    fn multiply_tiles(&mut self, kind: &TerminatorKind) {
        let TerminatorKind::TileMma {
            acc,
            a,
            b,
            shape,
            pitches,
            ..
        } = *kind
        else {
            unreachable!("a tile_mma's block ends in one");
        };
        let [m, n, k] = shape.map(|e| e.number() as usize);
        let [ldc, lda, ldb] = pitches.map(|e| e.number() as usize);
        let ty = |l: Local| self.body.locals[l.index()].ty.element();
        let (in_ty, acc_ty) = (ty(a).expect("a tile"), ty(acc).expect("a tile"));
        let views = self.shared.views.clone();
        let at = |l: Local, i: usize| {
            let (offset, _) = views[l.index()].expect("validated tiles are shared");
            offset + i * ty(l).expect("a tile").size_bytes()
        };
        let value = |bits: u64| -> f64 {
            match in_ty {
                ScalarTy::F16 | ScalarTy::Bf16 => scalar::half_value(in_ty, bits) as f64,
                ScalarTy::F32 => f32::from_bits(bits as u32) as f64,
                _ => f64::from_bits(bits),
            }
        };
        for i in 0..m {
            for j in 0..n {
                let c = self.shared.load(acc_ty, at(acc, i * ldc + j));
                let c = if acc_ty == ScalarTy::F64 {
                    (0..k)
                        .fold(f64::from_bits(c), |s, kk| {
                            let x = value(self.shared.load(in_ty, at(a, i * lda + kk)));
                            let y = value(self.shared.load(in_ty, at(b, kk * ldb + j)));
                            x.mul_add(y, s)
                        })
                        .to_bits()
                } else {
                    // `f32` products of `f16`, `bf16` or `f32` values: exact in `f64`,
                    // rounded to `f32` as one would be by a fused multiply-add.
                    let sum = (0..k).fold(f32::from_bits(c as u32), |s, kk| {
                        let x = value(self.shared.load(in_ty, at(a, i * lda + kk)));
                        let y = value(self.shared.load(in_ty, at(b, kk * ldb + j)));
                        (s as f64 + x * y) as f32
                    });
                    sum.to_bits() as u64
                };
                self.shared.store(acc_ty, at(acc, i * ldc + j), c);
            }
        }
    }

    /// Runs `t` until it reaches a barrier or ends.
    fn run_thread(&mut self, t: &mut Thread) -> Result<Pause, InterpError> {
        let body = self.body;
        loop {
            self.steps += 1;
            if self.steps > self.options.max_steps {
                return Err(InterpError::StepLimit {
                    max_steps: self.options.max_steps,
                });
            }
            let block = &body.blocks[t.block];
            if let Some(s) = block.statements.get(t.statement) {
                self.statement(t, s)?;
                t.statement += 1;
                continue;
            }
            t.statement = 0;
            match self.terminator(t, &block.terminator.kind)? {
                Flow::Jump(b) => t.block = b,
                Flow::Barrier(b) => {
                    t.block = b;
                    return Ok(Pause::Barrier);
                }
                Flow::Return => return Ok(Pause::Done),
                Flow::Panic(report) => return Ok(Pause::Panicked(report)),
            }
        }
    }

    fn at(&self, t: &Thread) -> At {
        At {
            block: BasicBlock(t.block as u32),
            workgroup: t.group,
            thread: t.pos,
        }
    }

    fn terminator(&mut self, t: &Thread, kind: &TerminatorKind) -> Result<Flow, InterpError> {
        Ok(match kind {
            TerminatorKind::Goto(b) => Flow::Jump(b.index()),
            TerminatorKind::Barrier { target } => Flow::Barrier(target.index()),
            TerminatorKind::TileMma { target, .. } => {
                self.collective.get_or_insert((t.block, Vec::new()));
                Flow::Barrier(target.index())
            }
            TerminatorKind::TileFill { origin, target, .. } => {
                let values = self.operands(t, origin)?;
                self.collective.get_or_insert((t.block, values));
                Flow::Barrier(target.index())
            }
            TerminatorKind::Return => Flow::Return,
            TerminatorKind::Unreachable => {
                return Err(InterpError::ReachedUnreachable { at: self.at(t) });
            }
            TerminatorKind::SwitchInt {
                discr,
                targets,
                otherwise,
            } => {
                let ty = self.operand_ty(discr);
                let v = self.operand(t, discr)?;
                let hit = targets.iter().find(|(k, _)| (*k as u64) & mask(ty) == v);
                Flow::Jump(hit.map_or(otherwise.index(), |(_, b)| b.index()))
            }
            TerminatorKind::Assert { cond, msg, target } => {
                // The lowering evaluates the message's operands whether or not it panics.
                let ok = self.operand(t, cond)? != 0;
                let values = (msg.operands().into_iter())
                    .map(|op| self.operand(t, op))
                    .collect::<Result<Vec<_>, _>>()?;
                if ok {
                    Flow::Jump(target.index())
                } else {
                    Flow::Panic(PanicReport {
                        site: self.sites[t.block].expect("an assert block has a site"),
                        values,
                        workgroup: t.group,
                        thread: t.pos,
                    })
                }
            }
            TerminatorKind::Call { .. } => unreachable!("calls are refused before the run"),
        })
    }

    fn statement(&mut self, t: &mut Thread, s: &Statement) -> Result<(), InterpError> {
        let value = self.rvalue(t, &s.rvalue)?;
        match s.place.index {
            None => t.locals[s.place.local.index()] = value,
            Some(i) => {
                let index = t.locals[i.index()];
                self.store(t, s.place.local, index, value)?;
            }
        }
        Ok(())
    }

    /// The scalar type an operand holds.
    fn operand_ty(&self, op: &Operand) -> ScalarTy {
        match op {
            Operand::Const(c) => c.ty(),
            Operand::Copy(p) | Operand::Move(p) => {
                let ty = self.body.locals[p.local.index()].ty;
                match p.index {
                    Some(_) => ty.element(),
                    None => ty.scalar(),
                }
                .expect("validated: operands are scalars or elements")
            }
        }
    }

    fn operand(&self, t: &Thread, op: &Operand) -> Result<u64, InterpError> {
        match op {
            Operand::Const(c) => Ok(const_bits(*c)),
            Operand::Copy(p) | Operand::Move(p) => match p.index {
                None => Ok(t.locals[p.local.index()]),
                Some(i) => self.load(t, p.local, t.locals[i.index()]),
            },
        }
    }

    fn out_of_bounds(&self, t: &Thread, container: Local, index: u64, len: u64) -> InterpError {
        InterpError::IndexOutOfBounds {
            at: self.at(t),
            container,
            index,
            len,
        }
    }

    /// Element `index` of a container local.
    fn load(&self, t: &Thread, container: Local, index: u64) -> Result<u64, InterpError> {
        if let Some((offset, len)) = self.shared.views[container.index()] {
            let elem = self.body.locals[container.index()].ty.element();
            let elem = elem.expect("shared arrays have elements");
            if index >= len {
                return Err(self.out_of_bounds(t, container, index, len));
            }
            let at = offset + index as usize * elem.size_bytes();
            return Ok(self.shared.load(elem, at));
        }
        let buffer = self.buffer(container);
        match buffer.slot(index) {
            Some(i) => Ok(buffer.data[i]),
            None => Err(self.out_of_bounds(t, container, index, buffer.len())),
        }
    }

    fn store(
        &mut self,
        t: &Thread,
        container: Local,
        index: u64,
        value: u64,
    ) -> Result<(), InterpError> {
        if let Some((offset, len)) = self.shared.views[container.index()] {
            let elem = self.body.locals[container.index()].ty.element();
            let elem = elem.expect("shared arrays have elements");
            if index >= len {
                return Err(self.out_of_bounds(t, container, index, len));
            }
            self.shared
                .store(elem, offset + index as usize * elem.size_bytes(), value);
            return Ok(());
        }
        let buffer = self.buffer(container);
        let Some(i) = buffer.slot(index) else {
            return Err(self.out_of_bounds(t, container, index, buffer.len()));
        };
        self.buffer_mut(container).data[i] = value;
        Ok(())
    }

    fn buffer(&self, l: Local) -> &Buffer {
        self.buffers[l.index()]
            .as_ref()
            .expect("validated: indexed locals are containers")
    }

    fn buffer_mut(&mut self, l: Local) -> &mut Buffer {
        self.buffers[l.index()]
            .as_mut()
            .expect("validated: indexed locals are containers")
    }

    fn rvalue(&mut self, t: &Thread, rv: &Rvalue) -> Result<u64, InterpError> {
        Ok(match rv {
            Rvalue::Use(a) => self.operand(t, a)?,
            Rvalue::BinaryOp(op, a, b) => {
                let (va, vb) = (self.operand(t, a)?, self.operand(t, b)?);
                binary(*op, self.operand_ty(a), va, vb).map_err(|e| match e {
                    ArithError::DivisionByZero => InterpError::DivisionByZero { at: self.at(t) },
                    ArithError::Overflow => InterpError::DivisionOverflow { at: self.at(t) },
                })?
            }
            Rvalue::UnaryOp(op, a) => unary(*op, self.operand_ty(a), self.operand(t, a)?),
            Rvalue::Cast(a, to) => cast(self.operand_ty(a), *to, self.operand(t, a)?),
            Rvalue::Intrinsic(i, args) => {
                let values = self.operands(t, args)?;
                intrinsic(*i, self.operand_ty(&args[0]), &values)
            }
            Rvalue::Subgroup(op, args) => {
                let values = self.operands(t, args)?;
                one_lane_subgroup(*op, &values)
            }
            Rvalue::AtomicRmw(op, place, value) => {
                let v = self.operand(t, value)?;
                let ftz = self.options.f32_atomic_add_flushes_subnormals;
                self.atomic(t, *place, |elem, old| atomic_rmw(*op, elem, old, v, ftz))?
            }
            Rvalue::AtomicCas(place, current, new) => {
                let (c, n) = (self.operand(t, current)?, self.operand(t, new)?);
                self.atomic(t, *place, |_, old| if old == c { n } else { old })?
            }
            Rvalue::Position(p, d) => self.position(t, *p, *d as usize),
            Rvalue::Len(l) => self.len(*l),
            Rvalue::RegionIndex(l) => self.region_index(t, *l),
            Rvalue::RegionCoord(l, d) => self.region_coord(t, *l, *d),
            Rvalue::RegionExtent(l, d) => self.buffer(*l).extents[*d as usize % 3],
            Rvalue::RegionEnd(l, d) => {
                let buffer = self.buffer(*l);
                let margin = if buffer.strategy.is_some_and(|s| s.rank() > 1) {
                    buffer.margin
                } else {
                    0
                };
                buffer.extents[*d as usize % 3] - margin
            }
        })
    }

    fn operands(&self, t: &Thread, ops: &[Operand]) -> Result<Vec<u64>, InterpError> {
        ops.iter().map(|o| self.operand(t, o)).collect()
    }

    /// Replaces element `place` of an atomic with `update(elem, old)`; yields `old`.
    fn atomic(
        &mut self,
        t: &Thread,
        place: Place,
        update: impl FnOnce(ScalarTy, u64) -> u64,
    ) -> Result<u64, InterpError> {
        let index = t.locals[place.index.expect("validated: atomics are indexed").index()];
        let me = (t.group, t.pos);
        self.atomic_users
            .entry((place.local.0, index))
            .and_modify(|(first, shared)| *shared |= *first != me)
            .or_insert((me, false));
        let old = self.load(t, place.local, index)?;
        let elem = self.buffer(place.local).elem;
        self.store(t, place.local, index, update(elem, old) & mask(elem))?;
        Ok(old)
    }

    fn position(&self, t: &Thread, p: Position, d: usize) -> u64 {
        (match p {
            Position::Thread => t.pos[d],
            Position::Workgroup => t.group[d],
            Position::WorkgroupSize => self.launch.threads[d],
            Position::WorkgroupCount => self.launch.workgroups[d],
        }) as u64
    }

    /// The thread's position in the whole launch along `d`.
    fn global_id(&self, t: &Thread, d: usize) -> u64 {
        t.group[d] as u64 * self.launch.threads[d] as u64 + t.pos[d] as u64
    }

    fn len(&self, l: Local) -> u64 {
        match self.shared.views[l.index()] {
            Some((_, len)) => len,
            // The element count, also of a 2-D region (its flat view's length), or an
            // `Indexed` region's index count.
            None => self.buffer(l).len(),
        }
    }

    /// The element a thread owns, by the region's strategy (`offload-partition`).
    fn region_index(&self, t: &Thread, l: Local) -> u64 {
        let buffer = self.buffer(l);
        match buffer.strategy.expect("validated: a region") {
            Strategy::Linear1D | Strategy::Indexed => self.global_id(t, 0),
            Strategy::Chunked(n) => {
                let n = n.number();
                self.global_id(t, 0).wrapping_mul(n as u64)
            }
            Strategy::Linear2D | Strategy::Stencil2D(_) | Strategy::Linear3D => {
                let [w, h, _] = buffer.extents;
                let coord = |d| self.region_coord(t, l, d);
                (coord(2).wrapping_mul(h).wrapping_add(coord(1)))
                    .wrapping_mul(w)
                    .wrapping_add(coord(0))
            }
        }
    }

    fn region_coord(&self, t: &Thread, l: Local, d: u8) -> u64 {
        let buffer = self.buffer(l);
        let rank = buffer.strategy.map_or(1, Strategy::rank);
        match (rank, d) {
            (1, 0) => self.global_id(t, 0),
            (r, d) if d >= r => 0,
            _ => self.global_id(t, d as usize) + buffer.margin,
        }
    }
}

#[cfg(test)]
mod tests;
