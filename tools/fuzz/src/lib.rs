//! Random kernels for differential fuzzing: [`generate`] makes a valid MIR kernel with
//! inputs and a launch, [`mutate`] edits a kernel while keeping it valid, and
//! [`compare`] checks a backend's results against [`offload_mir::interp`]'s.
//!
//! A fuzzing loop: `let p = generate(seed)`; run `p.body` with `p.args` over `p.launch`
//! in the interpreter and on the CPU backend (which runs the body `offload_mir::link`
//! makes of it); unless the interpreter says the run is undefined
//! ([`offload_mir::interp::InterpError`]), the outcomes must agree: the same panic
//! message (any of [`offload_mir::interp::Outcome::panics`] that is the first of its
//! workgroup, since workgroups run in parallel; compare messages, not site numbers,
//! which linking changes when it drops blocks), or no panic and the same data. A failing
//! case is `p.body.to_string()` (a `.mir` file) and its seed: generation is
//! deterministic, so the seed gives back the inputs and launch.
//!
//! # What a kernel contains
//!
//! Arguments: a writable region first (`Linear1D`, `Chunked<N>` or `Linear2D`), then a
//! mix of regions (also `Stencil2D<R>`), slices, atomics and scalars of every scalar
//! type; static and dynamic shared arrays. The body is a sequence of segments, nested up
//! to three deep: scalar statements (every binary and unary operator, casts between all
//! types, the exact intrinsics, positions, lengths, extents, region indices and
//! coordinates, subgroup size and lane), integer division behind the frontend's checks,
//! the region's own element (per strategy), stencil neighbours (clamped and checked),
//! slice reads (checked, or under `if i < len`), atomic updates, shared-memory rounds
//! (own slot, barrier, other slots, barrier), barriers, subgroup operations, branches
//! (some returning early), multi-way `switchInt`s, loops of at most four trips, user
//! asserts, dead code behind `switchInt(const false)` (with dead loops), and blocks that
//! nothing reaches.
//!
//! Every access and division is in the canonical shape the frontend emits (see
//! `memory.rs`), barriers and subgroup operations are in uniform control flow, and a
//! program's result does not depend on the order of threads: atomics are updated per
//! thread or with operations that commute, and shared slots are read only after the
//! round that wrote them. [`Config::broken_percent`] of programs instead break one rule
//! ([`Broken`]) at their end (which constant folding may leave dead, so that `link`
//! accepts the program after all).
//!
//! # What it leaves out, and why
//!
//! - Transcendental functions and large `powi` powers, unless [`Config::transcendentals`]:
//!   libm results need not match bit for bit between the interpreter's host and a target.
//! - Calls (kernels are inlined first), three-dimensional launches (the CPU backend
//!   runs none).

mod broken;
mod builder;
mod flow;
mod generator;
mod memory;
mod mutate;
mod plan;
mod source;
pub mod values;

pub use mutate::mutate;

pub use source::generate_source;

use offload_mir::interp::{ArgValue, Launch};
use offload_mir::{Body, ScalarTy};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Config {
    /// Also use `exp`, `sin`, `powf`... and any `powi` power, whose results are libm's.
    pub transcendentals: bool,
    /// How many programs in a hundred break a safety rule on purpose.
    pub broken_percent: u32,
    /// The most segments (statements, accesses, branches, loops...) in one body.
    pub max_segments: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            transcendentals: false,
            broken_percent: 10,
            max_segments: 14,
        }
    }
}

/// The safety rule a program breaks on purpose.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Broken {
    /// A slice read without its bounds check.
    UncheckedIndex,
    /// An atomic update without its bounds check.
    UncheckedAtomic,
    /// An integer division without the zero and overflow checks.
    UncheckedDivision,
    /// A write to a region element that is not the thread's own.
    RegionNotOwn,
    /// A shared slot read after a write with no barrier between.
    SharedRace,
    /// A shared-memory write to another thread's slot.
    SharedNotOwnSlot,
    /// A barrier under a branch on the thread's index.
    DivergentBarrier,
    /// A subgroup reduction under a branch on the thread's index.
    DivergentSubgroup,
}

impl Broken {
    pub const ALL: [Broken; 8] = [
        Broken::UncheckedIndex,
        Broken::UncheckedAtomic,
        Broken::UncheckedDivision,
        Broken::RegionNotOwn,
        Broken::SharedRace,
        Broken::SharedNotOwnSlot,
        Broken::DivergentBarrier,
        Broken::DivergentSubgroup,
    ];
}

/// Declares [`Construct`] and its list of every variant, from one list of names.
macro_rules! constructs {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// A construct of the kernel language, as the README's kernel-language and
        /// strategy tables list them: what a generated program was made of.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Construct {
            $($(#[$doc])* $name,)*
        }

        impl Construct {
            /// Every construct, in the README's order.
            pub const ALL: &[Construct] = &[$(Construct::$name,)*];
        }
    };
}

constructs! {
    ScalarTypes,
    Parameters,
    Let,
    Assignment,
    TupleAssignment,
    /// A local holding a tuple: read by field, assigned whole.
    TupleLocals,
    /// A local holding a range: iterated by `clone`.
    RangeLocals,
    Swap,
    Arithmetic,
    Comparisons,
    ShortCircuit,
    Unary,
    Casts,
    FromConversions,
    IfElse,
    WhileLoops,
    Labels,
    ForLoops,
    LoopsOverElements,
    Match,
    Matches,
    EarlyReturn,
    /// `while let Some(&w) = x.get(k)`, or a `loop` that starts with `let ... else`.
    LetElse,
    LoopValue,
    Consts,
    SliceIndexing,
    ConstArrays,
    ThreadArrays,
    FloatMethods,
    IntegerMethods,
    MethodsByPath,
    Panics,
    DeviceFunctions,
    /// A device function that returns a pair, taken apart by a typed `let`.
    TupleResults,
    GenericKernel,
    GenericLiterals,
    ThreadPosition,
    Atomics,
    SharedMemory,
    DynShared,
    TreeReductions,
    SliceGet,
    IteratorReductions,
    Zip,
    /// A sub-slice (`&x[a..]`, `w[1..=b]`) iterated and reduced.
    SubSlices,
    Closures,
    Shared2D,
    Barrier,
    WorkgroupReductions,
    SubgroupOps,
    Unsafe,
    /// `Atomic` arguments given as `&mut DeviceBuffer`s, updated where they live.
    AtomicsOnDeviceBuffers,
    Linear1D,
    Linear2D,
    Linear3D,
    Chunked,
    Stencil2D,
    Indexed,
    Interior,
}

/// A generated kernel with everything needed to run it.
#[derive(Clone, Debug)]
pub struct Program {
    pub seed: u64,
    pub body: Body,
    pub args: Vec<ArgValue>,
    pub launch: Launch,
    /// `None` for a safe program; else the rule it breaks.
    pub broken: Option<Broken>,
    /// What the program is made of (recorded by the source generator, whose constructs
    /// the translator turns into plain MIR).
    pub constructs: std::collections::BTreeSet<Construct>,
    /// Whether the launch passes the atomic arguments as device buffers, which the
    /// kernel updates where they live (also when a thread panics), rather than as host
    /// data copied in and, without a panic, out.
    pub atomics_on_device: bool,
}

/// The program of a fuzzing campaign for `seed`, and whether it was mutated: for one
/// seed in four a kernel written as Rust source ([`generate_source`], translated as the
/// macro would), else generated as MIR; mutated for odd seeds, and for half the source
/// kernels without `unsafe` reads (the mutator then edits the MIR the translator made).
/// A source kernel the
/// translator refuses is an `Err`, a failure of the translator.
pub fn program(seed: u64) -> Result<(Program, bool), String> {
    let mut p = if seed % 4 == 2 {
        generate_source(seed, false)
            .map_err(|e| format!("the translator refused a generated source kernel: {e}"))?
            .0
    } else {
        generate(seed)
    };
    // A raw (`unsafe`) read is the author's to keep in bounds: a mutant of one need not.
    let raw = (p.body.blocks.iter()).any(|b| b.statements.iter().any(|s| s.raw));
    let mutated = seed % 2 == 1 || (seed % 8 == 6 && !raw);
    if mutated {
        p.body = mutate(&p.body, seed);
    }
    let atomics = p
        .body
        .args()
        .any(|(_, d)| matches!(d.ty, offload_mir::Ty::Atomic(_)));
    if atomics && seed % 3 == 1 {
        p.atomics_on_device = true;
        p.constructs.insert(Construct::AtomicsOnDeviceBuffers);
    }
    Ok((p, mutated))
}

/// [`generate_with`] the default [`Config`].
pub fn generate(seed: u64) -> Program {
    generate_with(seed, &Config::default())
}

/// A random valid kernel, its arguments and its launch; the same for the same seed.
pub fn generate_with(seed: u64, cfg: &Config) -> Program {
    let mut rng = fastrand::Rng::with_seed(seed);
    let broken =
        (rng.u32(0..100) < cfg.broken_percent).then(|| Broken::ALL[rng.usize(..Broken::ALL.len())]);
    let mut b = builder::Builder::new(format!("fuzz_{seed}"));
    let plan = plan::plan(&mut rng, &mut b, broken);
    let pool = plan
        .scalars
        .iter()
        .map(|&(local, ty)| generator::Value {
            local,
            ty,
            varying: false,
        })
        .collect();
    let budget = rng.u32(2..=cfg.max_segments.max(2));
    let mut g = generator::Gen {
        rng,
        b,
        cfg,
        plan,
        pool,
        uniform: true,
        depth: 0,
        budget,
        open_regions: Vec::new(),
    };
    while g.budget > 0 {
        g.sequence();
    }
    if let Some(rule) = broken {
        g.break_rule(rule);
    }
    g.b.terminate(offload_mir::TerminatorKind::Return);
    g.unreachable_blocks();
    let program = Program {
        seed,
        body: g.b.body,
        args: g.plan.args,
        launch: g.plan.launch,
        broken,
        constructs: Default::default(),
        atomics_on_device: false,
    };
    debug_assert!(
        offload_mir::validate(&program.body).is_ok(),
        "seed {seed} generated invalid MIR:\n{}",
        program.body
    );
    program
}

/// Whether two values of type `ty` (raw bits) are the same result: equal bits, or for
/// floats equal values (`-0.0 == 0.0`) or both NaN. NaN payloads and signs differ between
/// constant folding and hardware, and `min`/`max` may return either zero when the two
/// compare equal.
pub fn same_value(ty: ScalarTy, a: u64, b: u64) -> bool {
    match ty {
        ScalarTy::F32 => {
            let (a, b) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            a == b || (a.is_nan() && b.is_nan())
        }
        ScalarTy::F64 => {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            a == b || (a.is_nan() && b.is_nan())
        }
        ScalarTy::F16 => {
            let (a, b) = (
                half::f16::from_bits(a as u16),
                half::f16::from_bits(b as u16),
            );
            a == b || (a.is_nan() && b.is_nan())
        }
        ScalarTy::Bf16 => {
            let (a, b) = (
                half::bf16::from_bits(a as u16),
                half::bf16::from_bits(b as u16),
            );
            a == b || (a.is_nan() && b.is_nan())
        }
        _ => a == b,
    }
}

/// Where two runs' arguments differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The argument's position (0 is the kernel's `_1`).
    pub arg: usize,
    /// The first element that differs, or `None` for a difference in shape.
    pub element: Option<usize>,
    pub expected: u64,
    pub actual: u64,
}

/// Checks `actual` against `expected` element by element with [`same_value`].
pub fn compare(expected: &[ArgValue], actual: &[ArgValue]) -> Result<(), Mismatch> {
    let shape = |arg| Mismatch {
        arg,
        element: None,
        expected: 0,
        actual: 0,
    };
    if expected.len() != actual.len() {
        return Err(shape(expected.len().min(actual.len())));
    }
    for (arg, (e, a)) in expected.iter().zip(actual).enumerate() {
        match (e, a) {
            (
                ArgValue::Buffer { elem, data, .. },
                ArgValue::Buffer {
                    elem: elem_a,
                    data: data_a,
                    ..
                },
            ) if elem == elem_a && data.len() == data_a.len() => {
                let differs = data
                    .iter()
                    .zip(data_a)
                    .position(|(x, y)| !same_value(*elem, *x, *y));
                if let Some(i) = differs {
                    return Err(Mismatch {
                        arg,
                        element: Some(i),
                        expected: data[i],
                        actual: data_a[i],
                    });
                }
            }
            (ArgValue::Scalar(x), ArgValue::Scalar(y)) if x == y || x.ty() == y.ty() => {}
            _ => return Err(shape(arg)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
