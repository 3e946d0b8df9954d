//! What the `offload!` macro calls: kernel descriptors, launch arguments and options, and
//! [`launch`], which checks a launch and hands it to a backend.

use crate::{
    Device, Error,
    buffer::Resident,
    region::{IntoAtomic, IntoRegion, IntoSlice, PartitioningStrategy, Shape, SliceData},
    scalar::Scalar,
};
use offload_mir::{Body, Linked, ScalarTy, Strategy, Ty};
use std::{marker::PhantomData, sync::OnceLock};

/// What `#[offload_kernel]` emits for each kernel (each instance of a generic one): its
/// name, its MIR, and the device functions it calls. The MIR text is the API boundary
/// between the macro and the runtime.
pub struct KernelDescriptor {
    pub name: &'static str,
    pub mir: &'static str,
    pub device_functions: &'static [&'static DeviceFn],
    body: OnceLock<Result<Linked, String>>,
}

/// What `#[offload_device]` emits for a function kernels may call: its name, the MIR of
/// each of its instances, and the device functions it calls in turn.
pub struct DeviceFn {
    pub name: &'static str,
    pub instances: &'static [&'static str],
    pub calls: &'static [&'static DeviceFn],
}

impl DeviceFn {
    pub const fn new(
        name: &'static str,
        instances: &'static [&'static str],
        calls: &'static [&'static DeviceFn],
    ) -> Self {
        DeviceFn {
            name,
            instances,
            calls,
        }
    }
}

impl KernelDescriptor {
    /// A kernel named `name` with MIR `mir`, calling `device_functions`.
    pub const fn new(
        name: &'static str,
        mir: &'static str,
        device_functions: &'static [&'static DeviceFn],
    ) -> Self {
        KernelDescriptor {
            name,
            mir,
            device_functions,
            body: OnceLock::new(),
        }
    }

    /// The kernel's MIR linked with its device functions and verified safe
    /// ([`offload_mir::link`]), once.
    pub fn body(&self) -> Result<&Linked, Error> {
        let linked = self.body.get_or_init(|| self.link());
        linked.as_ref().map_err(|message| Error::Compile {
            kernel: self.name.to_string(),
            message: message.clone(),
        })
    }

    fn link(&self) -> Result<Linked, String> {
        let kernel = offload_mir::parse(self.mir)
            .map_err(|e| format!("embedded MIR does not parse: {e}"))?;
        // Every device function reachable from the kernel, each once.
        let mut reachable: Vec<&'static DeviceFn> = Vec::new();
        let mut stack: Vec<&'static DeviceFn> = self.device_functions.to_vec();
        while let Some(f) = stack.pop() {
            if !reachable.iter().any(|r| std::ptr::eq(*r, f)) {
                reachable.push(f);
                stack.extend(f.calls);
            }
        }
        let mut bodies: Vec<Body> = Vec::new();
        for f in &reachable {
            for mir in f.instances {
                bodies.push(
                    offload_mir::parse(mir)
                        .map_err(|e| format!("MIR of `{}` does not parse: {e}", f.name))?,
                );
            }
        }
        let device: Vec<&Body> = bodies.iter().collect();
        offload_mir::link(&kernel, &device).map_err(|e| e.to_string())
    }
}

/// A launch argument described at run time; see [`KernelArg::dynamic`].
#[doc(hidden)]
pub enum DynamicArg<'a> {
    Region {
        elem: ScalarTy,
        strategy: Strategy,
        data: &'a mut [u8],
        row_len: Option<usize>,
    },
    Slice {
        elem: ScalarTy,
        data: &'a [u8],
    },
    Atomic {
        elem: ScalarTy,
        data: &'a mut [u8],
    },
    Scalar {
        ty: ScalarTy,
        bits: u64,
    },
}

/// Launch geometry and placement; every field may be left to its default.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Workgroups in the launch (CUDA's grid). Derived from the first region if omitted.
    pub workgroup_dim: Option<[u32; 3]>,
    /// Threads per workgroup (CUDA's block). Defaults to 256 in x.
    pub thread_dim: Option<[u32; 3]>,
    /// Bytes of dynamic workgroup-shared memory.
    pub dyn_cache: u32,
    /// Index into [`devices()`](crate::devices); `None` selects as `OFFLOAD_DEVICE` says.
    pub device: Option<usize>,
    /// `device = all`: split the launch's workgroups into one contiguous share per GPU
    /// (two shares on the CPU when there is no GPU). See [`crate::split`].
    pub all_devices: bool,
}

impl LaunchOptions {
    pub const DEFAULT: LaunchOptions = LaunchOptions {
        workgroup_dim: None,
        thread_dim: None,
        dyn_cache: 0,
        device: None,
        all_devices: false,
    };
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions::DEFAULT
    }
}

/// Threads per workgroup when a launch does not say.
pub const DEFAULT_WORKGROUP_SIZE: u32 = 256;

/// One argument of a launch, borrowed for the launch's duration.
pub struct KernelArg<'a> {
    pub(crate) kind: ArgKind,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl KernelArg<'_> {
    /// An argument with the same meaning over other data (a split launch's scratch).
    pub(crate) fn with_kind<'b>(kind: ArgKind) -> KernelArg<'b> {
        KernelArg {
            kind,
            _borrow: PhantomData,
        }
    }
}

#[derive(Clone)]
pub(crate) enum ArgKind {
    Region {
        data: *mut u8,
        shape: Shape,
        elem: ScalarTy,
        strategy: Strategy,
        resident: Option<Resident>,
        /// Elements `first..last` of the region, when `data` holds only those (a share of
        /// a split launch, whose threads touch no others); `None`: `data` holds them all.
        window: Option<(usize, usize)>,
    },
    Slice {
        data: *const u8,
        len: usize,
        elem: ScalarTy,
        resident: Option<Resident>,
    },
    Atomic {
        data: *mut u8,
        len: usize,
        elem: ScalarTy,
    },
    Scalar {
        bits: u64,
        ty: ScalarTy,
    },
}

impl<'a> KernelArg<'a> {
    pub fn region<T: Scalar, S: PartitioningStrategy>(region: impl IntoRegion<'a, T, S>) -> Self {
        let region = region.into_region();
        KernelArg {
            kind: ArgKind::Region {
                data: region.data.as_ptr().cast(),
                shape: region.shape,
                elem: T::TY,
                strategy: S::KIND,
                resident: region.resident,
                window: None,
            },
            _borrow: PhantomData,
        }
    }

    pub fn slice<T: Scalar>(slice: impl IntoSlice<'a, T>) -> Self {
        let SliceData { host, resident } = slice.into_slice();
        KernelArg {
            kind: ArgKind::Slice {
                data: host.as_ptr().cast(),
                len: resident.as_ref().map_or(host.len(), |r| r.len),
                elem: T::TY,
                resident,
            },
            _borrow: PhantomData,
        }
    }

    pub fn atomic<T: Scalar>(data: impl IntoAtomic<'a, T>) -> Self {
        let data = data.into_atomic();
        KernelArg {
            kind: ArgKind::Atomic {
                data: data.as_mut_ptr().cast(),
                len: data.len(),
                elem: T::TY,
            },
            _borrow: PhantomData,
        }
    }

    /// An argument whose types are known only at run time (tools that launch MIR they
    /// made, such as the differential fuzzer). `data` holds the elements' bytes in the
    /// host's order; its length must be a whole number of elements.
    #[doc(hidden)]
    pub fn dynamic(arg: DynamicArg<'a>) -> Result<Self, Error> {
        let elements = |data: &[u8], elem: ScalarTy| {
            let size = elem.size_bytes();
            if !data.len().is_multiple_of(size) {
                return Err(Error::InvalidLaunch(format!(
                    "{} bytes are not a whole number of `{elem}` elements",
                    data.len()
                )));
            }
            Ok(data.len() / size)
        };
        let kind = match arg {
            DynamicArg::Region {
                elem,
                strategy,
                data,
                row_len,
            } => ArgKind::Region {
                shape: Shape {
                    len: elements(data, elem)?,
                    row_len,
                },
                data: data.as_mut_ptr(),
                elem,
                strategy,
                resident: None,
                window: None,
            },
            DynamicArg::Slice { elem, data } => ArgKind::Slice {
                len: elements(data, elem)?,
                data: data.as_ptr(),
                elem,
                resident: None,
            },
            DynamicArg::Atomic { elem, data } => ArgKind::Atomic {
                len: elements(data, elem)?,
                data: data.as_mut_ptr(),
                elem,
            },
            DynamicArg::Scalar { ty, bits } => ArgKind::Scalar { bits, ty },
        };
        Ok(KernelArg {
            kind,
            _borrow: PhantomData,
        })
    }

    pub fn scalar<T: Scalar>(value: T) -> Self {
        KernelArg {
            kind: ArgKind::Scalar {
                bits: value.to_bits(),
                ty: T::TY,
            },
            _borrow: PhantomData,
        }
    }
}

impl ArgKind {
    /// Where a device-resident argument lives.
    pub(crate) fn resident(&self) -> Option<&Resident> {
        match self {
            ArgKind::Region { resident, .. } | ArgKind::Slice { resident, .. } => resident.as_ref(),
            ArgKind::Atomic { .. } | ArgKind::Scalar { .. } => None,
        }
    }

    /// The bytes of a host region's, slice's or atomic's data; `None` for scalars and
    /// device-resident data.
    pub(crate) fn bytes(&self) -> Option<(*mut u8, usize)> {
        if self.resident().is_some() {
            return None;
        }
        match *self {
            ArgKind::Region {
                data,
                shape,
                elem,
                window,
                ..
            } => {
                let (first, last) = window.unwrap_or((0, shape.len));
                Some((data, (last - first) * elem.size_bytes()))
            }
            ArgKind::Slice {
                data, len, elem, ..
            } => Some((data as *mut u8, len * elem.size_bytes())),
            ArgKind::Atomic { data, len, elem } => Some((data, len * elem.size_bytes())),
            ArgKind::Scalar { .. } => None,
        }
    }

    /// Whether the kernel may write this argument, so that it is copied back.
    /// Where the host data of [`bytes`](Self::bytes) goes in the argument's memory on
    /// the device: its byte offset there and the memory's full size. A window of a region
    /// sits at its first element's place in memory the size of the whole region.
    pub(crate) fn placement(&self) -> Option<(usize, usize)> {
        match *self {
            ArgKind::Region {
                shape,
                elem,
                window: Some((first, _)),
                ..
            } => Some((first * elem.size_bytes(), shape.len * elem.size_bytes())),
            _ => self.bytes().map(|(_, bytes)| (0, bytes)),
        }
    }

    pub(crate) fn copied_back(&self) -> bool {
        match self {
            ArgKind::Region { strategy, .. } => strategy.is_writable(),
            ArgKind::Atomic { .. } => true,
            ArgKind::Slice { .. } | ArgKind::Scalar { .. } => false,
        }
    }

    /// The argument's memref descriptor words in the kernel ABI (allocated pointer,
    /// aligned pointer, offset, sizes, strides), given where its data lives; `None` for
    /// scalars.
    pub(crate) fn memref_words(&self, ptr: u64) -> Option<Vec<u64>> {
        match *self {
            ArgKind::Region {
                shape, strategy, ..
            } if strategy.is_2d() => {
                let (width, height) = shape.extents();
                Some(vec![
                    ptr,
                    ptr,
                    0,
                    height as u64,
                    width as u64,
                    width as u64,
                    1,
                ])
            }
            ArgKind::Region { shape, .. } => Some(vec![ptr, ptr, 0, shape.len as u64, 1]),
            ArgKind::Slice { len, .. } | ArgKind::Atomic { len, .. } => {
                Some(vec![ptr, ptr, 0, len as u64, 1])
            }
            ArgKind::Scalar { .. } => None,
        }
    }
}

/// The kernel ABI's argument words for `args`, memrefs expanded into their descriptors.
/// `place` puts each argument with host data (its pointer and byte count) where the kernel
/// will read it and returns that address; device-resident data is used where it lives
/// (`launch` has checked its device) and scalars are passed by value.
pub(crate) fn abi_words(
    args: &[KernelArg<'_>],
    mut place: impl FnMut(&ArgKind, *mut u8, usize) -> Result<u64, Error>,
) -> Result<Vec<u64>, Error> {
    let mut words = Vec::new();
    for arg in args {
        let address = match (arg.kind.resident(), arg.kind.bytes(), &arg.kind) {
            (Some(resident), _, _) => resident.address,
            (None, Some((data, bytes)), kind) => place(kind, data, bytes)?,
            (None, None, ArgKind::Scalar { bits, .. }) => {
                words.push(*bits);
                continue;
            }
            (None, None, _) => unreachable!("only scalars have neither host nor device data"),
        };
        words.extend(
            arg.kind
                .memref_words(address)
                .expect("arguments with data are memrefs"),
        );
    }
    Ok(words)
}

/// A checked launch, ready for a backend.
pub(crate) struct Launch<'b, 'a> {
    pub body: &'b Body,
    pub descriptor: &'static KernelDescriptor,
    pub args: &'b mut [KernelArg<'a>],
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dyn_cache: u32,
    /// The first workgroup's x index: 0, or a share's start in a split launch.
    pub group_base: u32,
    /// The whole launch's workgroups: `grid`, or all shares' in a split launch.
    pub groups: [u32; 3],
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
    let (grid, block) = geometry(body, &options, args)?;
    for arg in args.iter() {
        if let ArgKind::Region {
            shape, strategy, ..
        } = arg.kind
        {
            crate::region::check_launch(strategy, shape, grid, block)?;
        }
    }
    check_region_shapes(args)?;
    if options.all_devices {
        return crate::split::run(body, descriptor, args, grid, block, options.dyn_cache);
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
        .map(|r| r.device.clone());
    let device = crate::device::select(options.device, resident)?;
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
    tracing::debug!(kernel = body.name, %device, ?grid, ?block, "launch");
    let launch = Launch {
        body,
        descriptor,
        args,
        grid,
        block,
        dyn_cache: options.dyn_cache,
        group_base: 0,
        groups: grid,
    };
    launch.run_on(&device)
}

impl Launch<'_, '_> {
    /// Runs the launch on `device`'s backend.
    pub(crate) fn run_on(self, device: &Device) -> Result<(), Error> {
        match device {
            Device::Cuda { ordinal, .. } => crate::cuda::run(self, *ordinal),
            Device::Cpu => crate::cpu::run(self),
        }
    }
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
    if let Some(block) = options.thread_dim {
        check_workgroup_size(block)?;
    }
    let (grid, block) = match options.workgroup_dim {
        Some(grid) => (
            grid,
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
    if grid.contains(&0) {
        return Err(Error::InvalidLaunch(format!(
            "workgroup_dim {grid:?} must not contain zero"
        )));
    }
    check_workgroup_size(block)?;
    Ok((grid, block))
}

/// Threads per workgroup: at least one along each axis and at most 1024 in all (the
/// limit of current GPUs, kept on the CPU backend so programs move between them). The
/// safety verifier relies on this: products of workgroup sizes cannot wrap.
fn check_workgroup_size(block: [u32; 3]) -> Result<(), Error> {
    if block.contains(&0) {
        return Err(Error::InvalidLaunch(format!(
            "thread_dim {block:?} must not contain zero"
        )));
    }
    let threads: u64 = block.iter().map(|&d| d as u64).product();
    if threads > MAX_WORKGROUP_SIZE {
        return Err(Error::InvalidLaunch(format!(
            "thread_dim {block:?} has {threads} threads per workgroup; the limit is {MAX_WORKGROUP_SIZE}"
        )));
    }
    Ok(())
}

/// The most threads one workgroup may have.
pub const MAX_WORKGROUP_SIZE: u64 = 1024;

/// Every 2-D region of a launch must have one shape: threads are laid over the first
/// one's rows and columns, and a stencil read of another shape would be clamped to the
/// wrong edges.
fn check_region_shapes(args: &[KernelArg<'_>]) -> Result<(), Error> {
    let mut first: Option<(usize, (usize, usize))> = None;
    for (i, arg) in args.iter().enumerate() {
        let ArgKind::Region {
            shape, strategy, ..
        } = &arg.kind
        else {
            continue;
        };
        if !strategy.is_2d() {
            continue;
        }
        let extents = shape.extents();
        match first {
            None => first = Some((i, extents)),
            Some((j, other)) if other != extents => {
                return Err(Error::InvalidLaunch(format!(
                    "the 2-D regions of one launch must have one shape: argument {} is {} rows of {}, argument {} is {} rows of {}",
                    j + 1,
                    other.1,
                    other.0,
                    i + 1,
                    extents.1,
                    extents.0
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}
