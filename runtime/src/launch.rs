//! What the `offload!` macro calls: [`launch`], which checks a launch's arguments and
//! geometry against the kernel and hands the plan to a backend, and its options.

use crate::{
    Error,
    args::{ArgKind, KernelArg},
    kernel::KernelDescriptor,
    plan::LaunchPlan,
    region::{DEFAULT_WORKGROUP_SIZE, MAX_WORKGROUP_SIZE, Shape},
};
use offload_mir::{Body, Strategy, Ty};
use std::sync::atomic::{AtomicU64, Ordering};

/// Launch geometry and placement; every field may be left to its default.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Workgroups in the launch (CUDA's grid). Derived from the first region if omitted.
    pub workgroup_dim: Option<[u32; 3]>,
    /// Threads per workgroup (CUDA's block). Defaults to the first region's strategy's
    /// size: 256 in x for `Linear1D` and `Chunked<N>`, 16×16 for the 2-D strategies (256
    /// in x without a region).
    pub thread_dim: Option<[u32; 3]>,
    /// Bytes of dynamic workgroup-shared memory.
    pub dyn_cache: u32,
    /// Workgroups each compute unit of a GPU should hold at once, as the minimum blocks
    /// per multiprocessor of CUDA's `__launch_bounds__`: the kernel is compiled to use
    /// few enough registers for that many of its workgroups to be resident. More
    /// resident workgroups hide memory latency better; too many make the compiler spill
    /// registers to memory. `None`: the compiler's choice. NVIDIA GPUs only (code built
    /// ahead of time, and the other backends, do without it).
    pub resident_workgroups: Option<u32>,
    /// Index into [`devices()`](crate::devices); `None` selects `OFFLOAD_DEVICE` if set,
    /// else the device of the launch's device buffers, else the first GPU, else the CPU.
    pub device: Option<usize>,
    /// `device = all`: split the launch's workgroups into one contiguous share per GPU
    /// (two shares on the CPU when there is no GPU). Only one-dimensional launches split:
    /// `Linear1D` and `Chunked<N>` regions, slices and scalars, with device-resident data
    /// as [`SplitBuffer`](crate::SplitBuffer)s; anything else is [`Error::InvalidLaunch`].
    pub all_devices: bool,
}

impl LaunchOptions {
    /// Every field at its default: geometry from the first region, no dynamic shared
    /// memory, one device (`OFFLOAD_DEVICE`, else the device of the launch's buffers, else
    /// the first GPU, else the CPU). [`Default::default`] as a constant, for
    /// `LaunchOptions { thread_dim: Some([128, 1, 1]), ..LaunchOptions::DEFAULT }`.
    pub const DEFAULT: LaunchOptions = LaunchOptions {
        workgroup_dim: None,
        thread_dim: None,
        dyn_cache: 0,
        resident_workgroups: None,
        device: None,
        all_devices: false,
    };
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions::DEFAULT
    }
}

/// Launches that passed their checks since the process started: what tools report as
/// the kernels they ran (`offload-bench`, `tools/bench/sanitize.sh`).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// How many launches passed their checks and went to a backend so far in this process.
#[doc(hidden)]
pub fn launches() -> u64 {
    LAUNCHES.load(Ordering::Relaxed)
}

/// Runs a kernel. What the `offload!` and `try_offload!` macros expand to; call it
/// directly only through the function `#[offload_kernel]` generates.
pub fn launch(
    descriptor: &'static KernelDescriptor,
    options: LaunchOptions,
    args: &mut [KernelArg<'_>],
) -> Result<(), Error> {
    let body = descriptor.body()?;
    check_signature(body, args)?;
    for arg in args.iter() {
        if let ArgKind::Region {
            shape, strategy, ..
        } = arg.kind
        {
            crate::region::check_layout(strategy, shape)?;
        }
    }
    let (workgroups, workgroup_size) = geometry(body, &options, args)?;
    for arg in args.iter() {
        if let ArgKind::Region {
            shape, strategy, ..
        } = arg.kind
        {
            crate::region::check_launch(strategy, shape, workgroups, workgroup_size)?;
        }
    }
    check_region_shapes(args)?;
    check_indexed_regions(args)?;
    let geometry = (workgroups, workgroup_size);
    let on_stream = crate::stream::with_current(|stream| {
        stream.map(|s| launch_on(s, body, descriptor, &options, args, geometry))
    });
    if let Some(result) = on_stream {
        return result;
    }
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    if options.all_devices {
        let launch = crate::split::ShareLaunch {
            body,
            descriptor,
            workgroups,
            workgroup_size,
            dyn_cache: options.dyn_cache,
            resident_workgroups: options.resident_workgroups,
        };
        return crate::split::run(launch, args);
    }
    if args
        .iter()
        .any(|a| a.kind.resident().is_some_and(|r| r.split.is_some()))
    {
        return Err(Error::InvalidLaunch(
            "a `SplitBuffer` is spread over several devices: launch with `device = all`".into(),
        ));
    }
    let resident = args
        .iter()
        .find_map(|a| a.kind.resident())
        .map(|r| r.device);
    let device = crate::machine::select(options.device, resident)?;
    for (i, arg) in args.iter().enumerate() {
        if let Some(r) = arg.kind.resident()
            && r.device != device
        {
            return Err(Error::InvalidLaunch(format!(
                "argument {} is a buffer on {}, but the launch runs on {device}",
                i + 1,
                r.device
            )));
        }
    }
    tracing::debug!(kernel = body.name, %device, ?workgroups, ?workgroup_size, "launch");
    let launch = LaunchPlan {
        body,
        descriptor,
        args,
        workgroups,
        workgroup_size,
        dyn_cache: options.dyn_cache,
        resident_workgroups: options.resident_workgroups,
        group_base: 0,
        groups: workgroups,
    };
    crate::backend::of(device)?.launch(launch)
}

/// A checked launch with `stream = &s`: on the stream's device, over device buffers and
/// scalars only (host data would make it wait), after the work on other streams that
/// uses the same buffers.
fn launch_on(
    stream: &crate::Stream,
    body: &Body,
    descriptor: &'static KernelDescriptor,
    options: &LaunchOptions,
    args: &mut [KernelArg<'_>],
    (workgroups, workgroup_size): ([u32; 3], [u32; 3]),
) -> Result<(), Error> {
    if options.all_devices || options.device.is_some() {
        return Err(Error::InvalidLaunch(
            "a launch on a stream runs on the stream's device: give `stream` or `device`, not both"
                .into(),
        ));
    }
    // Owned (the hazards are shared handles), so that the plan can borrow `args`.
    let mut owned: smallvec::SmallVec<[(crate::hazards::Hazards, std::ops::Range<u64>, bool); 8]> =
        smallvec::SmallVec::new();
    for (i, arg) in args.iter().enumerate() {
        if arg.kind.bytes().is_some() || arg.kind.indices().is_some() {
            return Err(Error::InvalidLaunch(format!(
                "argument {} of kernel `{}` is host data: a launch on a stream takes device buffers and scalars (copy host data in with `copy_from_slice_async`)",
                i + 1,
                body.name
            )));
        }
        let Some(resident) = arg.kind.resident() else {
            continue;
        };
        let Some(hazards) = resident
            .hazards
            .as_ref()
            .filter(|_| resident.split.is_none())
        else {
            return Err(Error::InvalidLaunch(
                "a `SplitBuffer` is spread over several devices: launch with `device = all`, without a stream".into(),
            ));
        };
        stream.check_device(resident.device, format_args!("argument {}", i + 1))?;
        let bytes = (resident.len * arg.kind.elem_size()) as u64;
        owned.push((
            hazards.clone(),
            resident.address..resident.address + bytes,
            arg.kind.copied_back(),
        ));
    }
    let uses: smallvec::SmallVec<[crate::stream::Access<'_>; 8]> = (owned.iter())
        .map(|(hazards, range, write)| crate::stream::Access {
            hazards,
            range: range.clone(),
            write: *write,
        })
        .collect();
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        kernel = body.name,
        ?stream,
        ?workgroups,
        ?workgroup_size,
        "launch on a stream"
    );
    let plan = LaunchPlan {
        body,
        descriptor,
        args,
        workgroups,
        workgroup_size,
        dyn_cache: options.dyn_cache,
        resident_workgroups: options.resident_workgroups,
        group_base: 0,
        groups: workgroups,
    };
    stream.run(&uses, |queue| queue.launch(plan))
}

/// The generated launch function makes rustc check argument types; this re-checks them
/// against the MIR, which guards against a descriptor and a stub that disagree.
fn check_signature(body: &Body, args: &[KernelArg<'_>]) -> Result<(), Error> {
    if args.len() != body.arg_count {
        return Err(Error::InvalidLaunch(format!(
            "kernel `{}` takes {} arguments, the launch passed {}",
            body.name,
            body.arg_count,
            args.len()
        )));
    }
    for (i, ((_, decl), arg)) in body.args().zip(args).enumerate() {
        let matches = match (decl.ty, &arg.kind) {
            (Ty::Region(e, s), ArgKind::Region { elem, strategy, .. }) => {
                e == *elem && s == *strategy
            }
            (Ty::Slice(e), ArgKind::Slice { elem, .. }) => e == *elem,
            (Ty::Atomic(e), ArgKind::Atomic { elem, .. }) => e == *elem,
            (Ty::Scalar(t), ArgKind::Scalar { ty, .. }) => t == *ty,
            _ => false,
        };
        if !matches {
            return Err(Error::InvalidLaunch(format!(
                "argument {} of kernel `{}` must be `{}`",
                i + 1,
                body.name,
                decl.ty
            )));
        }
    }
    Ok(())
}

/// The geometry rule: with `workgroup_dim` given, `thread_dim` defaults to
/// [`DEFAULT_WORKGROUP_SIZE`] threads in x; without it, the first region's strategy
/// sizes the launch to cover the region (one thread per element for `Linear1D` in
/// workgroups of 256, one per chunk for `Chunked<N>`, one per element in 16×16 workgroups
/// for the 2-D strategies), using `thread_dim` if given.
fn geometry(
    body: &Body,
    options: &LaunchOptions,
    args: &[KernelArg<'_>],
) -> Result<([u32; 3], [u32; 3]), Error> {
    // Checked before a strategy divides by the workgroup size.
    if let Some(workgroup_size) = options.thread_dim {
        check_workgroup_size(workgroup_size)?;
    }
    let (workgroups, workgroup_size) = match options.workgroup_dim {
        Some(workgroups) => (
            workgroups,
            options.thread_dim.unwrap_or([DEFAULT_WORKGROUP_SIZE, 1, 1]),
        ),
        None => {
            let first = args.iter().find_map(|a| match a.kind {
                ArgKind::Region {
                    shape, strategy, ..
                } => Some((shape, strategy)),
                _ => None,
            });
            let Some((shape, strategy)) = first else {
                return Err(Error::InvalidLaunch(format!(
                    "kernel `{}` has no `Region` argument to size the launch from; give `workgroup_dim`",
                    body.name
                )));
            };
            crate::region::default_geometry(strategy, shape, options.thread_dim)?
        }
    };
    if options.resident_workgroups == Some(0) {
        return Err(Error::InvalidLaunch(
            "resident_workgroups = 0: a multiprocessor holds at least one workgroup".into(),
        ));
    }
    if let Some(n) = options.resident_workgroups {
        // The most any NVIDIA GPU holds at once: 32 workgroups, 2048 threads.
        let threads = n as u64 * workgroup_size.iter().map(|&t| t as u64).product::<u64>();
        if n > 32 || threads > 2048 {
            return Err(Error::InvalidLaunch(format!(
                "resident_workgroups = {n} of {workgroup_size:?} threads is more than a multiprocessor holds (32 workgroups, 2048 threads)"
            )));
        }
    }
    if workgroups.contains(&0) {
        return Err(Error::InvalidLaunch(format!(
            "workgroup_dim {workgroups:?} must not contain zero"
        )));
    }
    // Workgroups are numbered in 64 bits on the CPU backend, and a GPU launch past the
    // grid limits runs as one grid per 65,535 workgroups along y and z: bounding the
    // whole launch keeps both finite.
    let total: u128 = workgroups.iter().map(|&g| g as u128).product();
    if total > MAX_WORKGROUPS {
        return Err(Error::InvalidLaunch(format!(
            "workgroup_dim {workgroups:?} is {total} workgroups; a launch has at most 2^48"
        )));
    }
    check_workgroup_size(workgroup_size)?;
    Ok((workgroups, workgroup_size))
}

/// The most workgroups one launch may have.
const MAX_WORKGROUPS: u128 = 1 << 48;

/// Threads per workgroup: at least one along each axis and at most 1024 in all (the
/// limit of current GPUs, kept on the CPU backend so programs move between them). The
/// safety verifier relies on this: products of workgroup sizes cannot wrap.
fn check_workgroup_size(workgroup_size: [u32; 3]) -> Result<(), Error> {
    if workgroup_size.contains(&0) {
        return Err(Error::InvalidLaunch(format!(
            "thread_dim {workgroup_size:?} must not contain zero"
        )));
    }
    let threads: u64 = workgroup_size.iter().map(|&d| d as u64).product();
    if threads > MAX_WORKGROUP_SIZE {
        return Err(Error::InvalidLaunch(format!(
            "thread_dim {workgroup_size:?} has {threads} threads per workgroup; the limit is {MAX_WORKGROUP_SIZE}"
        )));
    }
    Ok(())
}

/// Every 2-D and 3-D region of a launch must have one shape and margin: threads are
/// laid over the first one's elements, and a stencil read of another shape would be
/// clamped to the wrong edges.
fn check_region_shapes(args: &[KernelArg<'_>]) -> Result<(), Error> {
    let mut first: Option<(usize, Strategy, Shape)> = None;
    for (i, arg) in args.iter().enumerate() {
        let ArgKind::Region {
            shape, strategy, ..
        } = &arg.kind
        else {
            continue;
        };
        if strategy.rank() < 2 {
            continue;
        }
        let layout = |s: Strategy, shape: &Shape| {
            let [w, h, d] = shape.extents();
            let mut text = match s.rank() {
                2 => format!("{h} rows of {w}"),
                _ => format!("{d} planes of {h} rows of {w}"),
            };
            if shape.margin > 0 {
                text += &format!(" with interior({})", shape.margin);
            }
            text
        };
        match &first {
            None => first = Some((i, *strategy, *shape)),
            Some((j, s, other))
                if (s.rank(), other.extents(), other.margin)
                    != (strategy.rank(), shape.extents(), shape.margin) =>
            {
                return Err(Error::InvalidLaunch(format!(
                    "the 2-D and 3-D regions of one launch must have one shape: argument {} is {}, argument {} is {}",
                    j + 1,
                    layout(*s, other),
                    i + 1,
                    layout(*strategy, shape)
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// An `Indexed` region's indices must be in bounds and distinct, so that every thread
/// owns its own element.
fn check_indexed_regions(args: &[KernelArg<'_>]) -> Result<(), Error> {
    for arg in args {
        match arg.kind {
            ArgKind::Region {
                strategy: Strategy::Indexed,
                indices: Some((data, len)),
                shape,
                ..
            } => {
                // SAFETY: the region borrows its indices for the launch (`Region::indexed`).
                let indices = unsafe { std::slice::from_raw_parts(data, len) };
                crate::region::check_indices(indices, shape.len)?;
            }
            ArgKind::Region {
                strategy: Strategy::Indexed,
                ..
            } => {
                return Err(Error::InvalidLaunch(
                    "an `Indexed` region needs its indices: build it with `Region::indexed(&mut data, &indices)`".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
