//! The kernel's signature, shared arrays, launch and inputs, chosen before its body so
//! the body can rely on them (a slice's length, the threads per workgroup).
//!
//! Every launch passes the runtime's launch checks: one-dimensional when a `Linear1D` or
//! `Chunked` region is present, never along z (the CPU backend runs 1-D and 2-D launches
//! only), and one shape for all 2-D regions.

use crate::Broken;
use crate::builder::Builder;
use crate::values::random_bits;
use fastrand::Rng;
use offload_mir::interp::{ArgValue, Launch, Layout, bits_const};
use offload_mir::{AtomicOp, Local, Param, ScalarTy, Strategy, Ty};

#[derive(Clone, Copy, Debug)]
pub(crate) struct RegionArg {
    pub local: Local,
    pub elem: ScalarTy,
    pub strategy: Strategy,
    pub len: usize,
}

/// A slice or atomic argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufArg {
    pub local: Local,
    pub elem: ScalarTy,
    pub len: usize,
    /// For atomics: every thread updates only the element at its own global index, so any
    /// operation gives the same result in any order (else only the integer operations
    /// that commute are used, and their results are not used).
    pub unique: bool,
}

/// A `Shared` array (static or dynamic) with room for `slots` elements per thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SharedArr {
    pub local: Local,
    pub elem: ScalarTy,
    pub slots: u64,
}

pub(crate) struct Plan {
    pub launch: Launch,
    /// (row length, rows) of every 2-D region.
    pub shape_2d: (usize, usize),
    /// The margin of every 2-D region: 0, or that of an interior.
    pub margin: usize,
    pub regions: Vec<RegionArg>,
    pub slices: Vec<BufArg>,
    pub atomics: Vec<BufArg>,
    pub scalars: Vec<(Local, ScalarTy)>,
    pub shared: Vec<SharedArr>,
    pub args: Vec<ArgValue>,
}

impl Plan {
    /// Threads per workgroup.
    pub fn threads(&self) -> u64 {
        self.launch.threads.iter().map(|&n| n as u64).product()
    }

    /// Threads in the whole launch along x and y.
    pub fn global(&self) -> (usize, usize) {
        let l = &self.launch;
        (
            (l.workgroups[0] * l.threads[0]) as usize,
            (l.workgroups[1] * l.threads[1]) as usize,
        )
    }
}

/// What the arguments will be, before they are declared.
enum ArgKind {
    Region(ScalarTy, Strategy),
    Slice(ScalarTy),
    Atomic(ScalarTy),
    Scalar(ScalarTy),
}

/// Chooses the launch, declares the arguments and shared arrays in `b`, and makes inputs.
pub(crate) fn plan(rng: &mut Rng, b: &mut Builder, broken: Option<Broken>) -> Plan {
    let two_d = rng.u32(0..3) == 0;
    let launch = Launch {
        workgroups: [rng.u32(1..=3), if two_d { rng.u32(1..=2) } else { 1 }, 1],
        threads: [
            [1, 2, 3, 4, 4, 5, 8][rng.usize(..7)],
            if two_d { rng.u32(1..=3) } else { 1 },
            1,
        ],
        dyn_shared_bytes: 0,
    };
    let (gx, gy) = (
        (launch.workgroups[0] * launch.threads[0]) as usize,
        (launch.workgroups[1] * launch.threads[1]) as usize,
    );
    let shape_2d = (near(rng, gx, 1, 2).max(1), near(rng, gy, 1, 1).max(1));
    // An interior now and then, when the shape has one.
    let margin = (rng.u32(0..4) == 0 && shape_2d.0.min(shape_2d.1) >= 2) as usize;
    let mut plan = Plan {
        launch,
        shape_2d,
        margin,
        regions: Vec::new(),
        slices: Vec::new(),
        atomics: Vec::new(),
        scalars: Vec::new(),
        shared: Vec::new(),
        args: Vec::new(),
    };
    for kind in arg_kinds(rng, two_d, broken) {
        declare(rng, b, &mut plan, kind, broken.is_some());
    }
    declare_shared(rng, b, &mut plan, broken);
    plan
}

/// The arguments: a writable region first (so results show), then a shuffled mix.
fn arg_kinds(rng: &mut Rng, two_d: bool, broken: Option<Broken>) -> Vec<ArgKind> {
    let writable = |rng: &mut Rng| match (two_d, rng.u32(0..5)) {
        (true, _) | (false, 0) => Strategy::Linear2D,
        (false, 1) => Strategy::Chunked(Param::Value(rng.u32(1..=4))),
        (false, 2) => Strategy::Indexed,
        _ => Strategy::Linear1D,
    };
    let first = ArgKind::Region(element(rng), writable(rng));
    let mut rest = Vec::new();
    for _ in 0..rng.u32(0..=4) {
        rest.push(match rng.u32(0..10) {
            0..=1 => ArgKind::Region(element(rng), writable(rng)),
            2 => ArgKind::Region(
                element(rng),
                Strategy::Stencil2D(Param::Value(rng.u32(0..=2))),
            ),
            3..=4 => ArgKind::Slice(element(rng)),
            5 => ArgKind::Atomic(atomic_element(rng)),
            _ => ArgKind::Scalar(element(rng)),
        });
    }
    match broken {
        Some(Broken::UncheckedIndex) => rest.push(ArgKind::Slice(element(rng))),
        Some(Broken::UncheckedAtomic) => rest.push(ArgKind::Atomic(atomic_element(rng))),
        _ => {}
    }
    rng.shuffle(&mut rest);
    std::iter::once(first).chain(rest).collect()
}

fn element(rng: &mut Rng) -> ScalarTy {
    ScalarTy::ALL[rng.usize(..ScalarTy::ALL.len())]
}

fn atomic_element(rng: &mut Rng) -> ScalarTy {
    let types = ScalarTy::ALL.into_iter();
    let atomic: Vec<ScalarTy> = types.filter(|t| AtomicOp::Add.supports(*t)).collect();
    atomic[rng.usize(..atomic.len())]
}

/// A length near `n`, by up to `below` less and `above` more.
fn near(rng: &mut Rng, n: usize, below: usize, above: usize) -> usize {
    rng.usize(n.saturating_sub(below)..=n + above)
}

fn declare(rng: &mut Rng, b: &mut Builder, plan: &mut Plan, kind: ArgKind, non_empty: bool) {
    let (gx, gy) = plan.global();
    let data = |rng: &mut Rng, elem, len| (0..len).map(|_| random_bits(rng, elem)).collect();
    match kind {
        ArgKind::Region(elem, strategy) => {
            let local = b.arg(Ty::Region(elem, strategy));
            let (len, layout) = match strategy {
                Strategy::Linear1D => (
                    near(rng, gx, 3, 3).max(non_empty as usize),
                    Layout::default(),
                ),
                Strategy::Chunked(n) => {
                    let n = n.number() as usize;
                    let len = near(rng, gx * n, n + 2, 2).max(non_empty as usize);
                    (len, Layout::default())
                }
                Strategy::Indexed => {
                    // Distinct positions of the data, about one per thread, scrambled.
                    let data_len = near(rng, gx * 2, 2, 3).max(non_empty as usize);
                    let mut positions: Vec<usize> = (0..data_len).collect();
                    rng.shuffle(&mut positions);
                    positions.truncate(near(rng, gx, 2, 2).min(data_len));
                    let layout = Layout {
                        indices: Some(positions),
                        ..Layout::default()
                    };
                    (data_len, layout)
                }
                _ => {
                    let (width, rows) = plan.shape_2d;
                    let layout = Layout {
                        row_len: Some(width),
                        margin: plan.margin,
                        ..Layout::default()
                    };
                    (width * rows, layout)
                }
            };
            // What `Len` reports: an `Indexed` region's index count.
            let reported = layout.indices.as_ref().map_or(len, Vec::len);
            plan.regions.push(RegionArg {
                local,
                elem,
                strategy,
                len: reported,
            });
            plan.args.push(ArgValue::Buffer {
                elem,
                data: data(rng, elem, len),
                layout,
            });
        }
        ArgKind::Slice(elem) => {
            let local = b.arg(Ty::Slice(elem));
            let len = rng.usize(non_empty as usize..=gx * gy + 4);
            plan.slices.push(BufArg {
                local,
                elem,
                len,
                unique: false,
            });
            plan.args.push(ArgValue::buffer(elem, data(rng, elem, len)));
        }
        ArgKind::Atomic(elem) => {
            let local = b.arg(Ty::Atomic(elem));
            // Float additions do not commute in rounding: those atomics are per thread.
            let unique = elem.is_float() || rng.bool();
            let len = if unique {
                gx * gy + rng.usize(0..=2)
            } else {
                rng.usize(1..=4)
            };
            plan.atomics.push(BufArg {
                local,
                elem,
                len,
                unique,
            });
            plan.args.push(ArgValue::buffer(elem, data(rng, elem, len)));
        }
        ArgKind::Scalar(ty) => {
            let local = b.arg(Ty::Scalar(ty));
            plan.scalars.push((local, ty));
            plan.args
                .push(ArgValue::Scalar(bits_const(ty, random_bits(rng, ty))));
        }
    }
}

/// Up to two static arrays and one dynamic one, each with one or two slots per thread.
fn declare_shared(rng: &mut Rng, b: &mut Builder, plan: &mut Plan, broken: Option<Broken>) {
    let threads = plan.threads();
    let numeric = |rng: &mut Rng| loop {
        let t = element(rng);
        if t != ScalarTy::Bool {
            break t;
        }
    };
    let needs_one = matches!(broken, Some(Broken::SharedRace | Broken::SharedNotOwnSlot));
    let statics = rng.u32(0..=2).max(needs_one as u32);
    for _ in 0..statics {
        let (elem, slots) = (numeric(rng), rng.u64(1..=2));
        let len = (slots * threads + rng.u64(0..=3)) as u32;
        let local = b.local(Ty::Shared(elem, Some(offload_mir::Param::Value(len))));
        plan.shared.push(SharedArr { local, elem, slots });
    }
    if rng.u32(0..3) == 0 {
        let (elem, slots) = (numeric(rng), rng.u64(1..=2));
        let local = b.local(Ty::Shared(elem, None));
        // Sometimes a few bytes that make no whole element.
        let bytes = (slots * threads + rng.u64(0..=2)) * elem.size_bytes() as u64;
        plan.launch.dyn_shared_bytes = (bytes + rng.u64(0..=1)) as u32;
        plan.shared.push(SharedArr { local, elem, slots });
    }
}
