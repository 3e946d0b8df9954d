//! The CUDA driver, through the driver API (`cudarc`, loaded at run time, so building
//! needs no CUDA): the operations the GPU launch protocol ([`super::gpu`]) runs on. Every
//! copy and launch of a device goes to its context's one stream.

use super::gpu::{Driver, Gpu};
use crate::compile::LaunchShape;
use crate::plan::GpuDispatch;
use crate::{Device, Error, KernelDescriptor};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice};
use offload_mir::abi;
use std::sync::{Arc, Mutex, OnceLock};

/// The CUDA devices of this machine; empty when there is no driver or no GPU.
pub(crate) fn devices() -> Vec<Device> {
    static DEVICES: OnceLock<Vec<Device>> = OnceLock::new();
    DEVICES
        .get_or_init(|| {
            // SAFETY: only probes whether the driver library can be opened.
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                return Vec::new();
            }
            let count = match CudaContext::device_count() {
                Ok(n) => n.max(0) as usize,
                Err(e) => {
                    tracing::info!("CUDA driver present but unusable: {e}");
                    return Vec::new();
                }
            };
            (0..count)
                .filter_map(|ordinal| {
                    let ctx = context(ordinal).ok()?;
                    let (major, minor) = ctx.compute_capability().ok()?;
                    Some(Device::Cuda {
                        ordinal,
                        name: ctx.name().unwrap_or_else(|_| "unknown".into()),
                        compute_capability: (major as u32, minor as u32),
                    })
                })
                .collect()
        })
        .clone()
}

/// The CUDA driver of one device.
pub(crate) struct Cuda {
    pub ordinal: usize,
    /// The device, as errors name it.
    pub device: Device,
    /// Untimed events no mark holds any more, recorded again rather than made anew: a
    /// stream's every launch records one, and making and destroying an event costs more
    /// than recording it.
    idle: Arc<Mutex<Vec<cudarc::driver::CudaEvent>>>,
}

/// The GPU of `device` (a CUDA one), driven by CUDA.
pub(crate) fn gpu(ordinal: usize, device: &Device) -> Gpu<Cuda> {
    Gpu::new(Cuda {
        ordinal,
        device: device.clone(),
        idle: Arc::default(),
    })
}

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

impl Driver for Cuda {
    type Buffer = CudaSlice<u8>;
    type Host = Pinned;
    type Function = CudaFunction;
    type Stream = Stream;
    type Event = Event;
    type Graph = Graph;

    fn device(&self) -> &Device {
        &self.device
    }

    fn subgroup(&self) -> (u32, &'static str) {
        (abi::NVIDIA_WARP, "warps")
    }

    fn load(
        &self,
        descriptor: &'static KernelDescriptor,
        shape: LaunchShape,
    ) -> Result<CudaFunction, Error> {
        let ctx = context(self.ordinal)?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_error("querying the compute capability"))?;
        let ptx = crate::compile::ptx(descriptor, &format!("sm_{major}{minor}"), shape)?;
        let symbol = descriptor.symbol()?;
        let ptx = crate::symbol::rename_entry(&ptx, &descriptor.body()?.name, &symbol);
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(driver_error("loading the kernel's PTX"))?;
        module
            .load_function(&symbol)
            .map_err(driver_error("finding the kernel in its module"))
    }

    fn allocate(&self, bytes: usize) -> Result<CudaSlice<u8>, Error> {
        let stream = stream(self.ordinal)?;
        // A zero-length allocation is refused by the driver; one byte stands in.
        // SAFETY: the protocol zeroes or fills what it reads.
        match trimmed_on_oom(self.ordinal, || unsafe { stream.alloc::<u8>(bytes.max(1)) }) {
            Ok(slice) => Ok(slice),
            Err(e) if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(Error::OutOfMemory {
                    device: self.device.to_string(),
                    bytes: bytes as u128,
                })
            }
            Err(e) => Err(driver_error("allocating device memory")(e)),
        }
    }

    fn zero(&self, buffer: &mut CudaSlice<u8>, bytes: usize) -> Result<(), Error> {
        stream(self.ordinal)?
            .memset_zeros(&mut buffer.slice_mut(..bytes))
            .map_err(driver_error("zeroing device memory"))
    }

    fn address(&self, buffer: &CudaSlice<u8>) -> u64 {
        let stream = stream(self.ordinal).expect("the buffer's context exists");
        // The stream is synchronised before any buffer is read or freed, so the guard
        // cudarc returns for ordering is not needed past this call.
        let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(buffer, &stream);
        ptr
    }

    fn copy_in(&self, data: &[u8], buffer: &CudaSlice<u8>, offset: usize) -> Result<(), Error> {
        use cudarc::driver::sys;
        assert!(
            offset + data.len() <= buffer.len(),
            "a copy within the buffer"
        );
        let stream = stream(self.ordinal)?;
        let to = self.address(buffer) + offset as u64;
        stream
            .context()
            .bind_to_thread()
            .map_err(driver_error("copying to the device"))?;
        // SAFETY: the destination holds `data.len()` bytes from `to` (asserted above),
        // and the copy runs in the device's stream order. From pageable memory it returns
        // once the driver has taken `data`; from page-locked memory it does not, so then
        // the stream is waited for before `data` may change.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(to, data.as_ptr().cast(), data.len(), stream.cu_stream())
        }
        .result()
        .map_err(driver_error("copying to the device"))?;
        if page_locked(data.as_ptr()) {
            stream
                .synchronize()
                .map_err(driver_error("copying to the device"))?;
        }
        Ok(())
    }

    unsafe fn copy_out(
        &self,
        buffer: &CudaSlice<u8>,
        offset: usize,
        into: &mut [u8],
    ) -> Result<(), Error> {
        let window = buffer.slice(offset..offset + into.len());
        stream(self.ordinal)?
            .memcpy_dtoh(&window, into)
            .map_err(driver_error("copying from the device"))
    }

    fn host(&self, bytes: usize) -> Result<Pinned, Error> {
        // Not write-combined: the host reads it. Portable: a `PinnedVec` made for one
        // device may be copied to another.
        pinned(
            self.ordinal,
            bytes,
            cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE,
        )
    }

    fn mapped(&self, bytes: usize) -> Result<Option<(Pinned, u64)>, Error> {
        use cudarc::driver::sys;
        let ctx = context(self.ordinal)?;
        let attribute = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
        if ctx
            .attribute(attribute)
            .map_err(driver_error("querying the device"))?
            == 0
        {
            return Ok(None);
        }
        let memory = pinned(self.ordinal, bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP)?;
        let mut address = 0;
        // SAFETY: `memory` was allocated with `CU_MEMHOSTALLOC_DEVICEMAP` in this
        // device's context (bound to the thread by the allocation); flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut address, memory.ptr.cast(), 0) }
            .result()
            .map_err(driver_error("mapping page-locked host memory"))?;
        Ok(Some((memory, address)))
    }

    unsafe fn launch_grid(
        &self,
        function: &CudaFunction,
        grid: GpuDispatch<'_>,
        on: Option<&Stream>,
    ) -> Result<(), Error> {
        let stream = on.map_or_else(|| stream(self.ordinal), |s| Ok(s.0.clone()))?;
        stream
            .context()
            .bind_to_thread()
            .map_err(driver_error("launching the kernel"))?;
        if grid.shared_bytes > DEFAULT_DYNAMIC_SHARED {
            // Beyond 48 KiB the kernel must opt in; the driver refuses what the device
            // lacks.
            function
                .set_attribute(
                    cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    grid.shared_bytes as i32,
                )
                .map_err(driver_error(
                    "allowing the requested dynamic shared memory (`dyn_cache`)",
                ))?;
        }
        // `cuLaunchKernel` itself, with the parameters on the stack: cudarc's launch
        // builder collects them into vectors of its own.
        let mut params = grid.params();
        let ([gx, gy, gz], [bx, by, bz]) = (grid.grid, grid.block);
        // SAFETY: the caller's contract.
        unsafe {
            cudarc::driver::result::launch_kernel(
                function.cu_function(),
                (gx, gy, gz),
                (bx, by, bz),
                grid.shared_bytes,
                stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(driver_error("launching the kernel"))
    }

    unsafe fn copy_device(
        &self,
        from: u64,
        to: u64,
        bytes: usize,
        on: Option<&Stream>,
    ) -> Result<(), Error> {
        let stream = on.map_or_else(|| stream(self.ordinal), |s| Ok(s.0.clone()))?;
        stream
            .context()
            .bind_to_thread()
            .map_err(driver_error("copying on the device"))?;
        // SAFETY: the caller's contract.
        unsafe { cudarc::driver::result::memcpy_dtod_async(to, from, bytes, stream.cu_stream()) }
            .map_err(driver_error("copying on the device"))
    }

    fn synchronize(&self) -> Result<(), Error> {
        stream(self.ordinal)?
            .synchronize()
            .map_err(driver_error("running the kernel"))
    }

    fn new_stream(&self) -> Result<Stream, Error> {
        use cudarc::driver::result::stream::{StreamKind, create};
        let ctx = context(self.ordinal)?;
        ctx.bind_to_thread()
            .map_err(driver_error("creating a stream"))?;
        // A blocking stream: ordered against the legacy default stream that the device's
        // one queue is, as the protocol needs.
        let raw = create(StreamKind::Default).map_err(driver_error("creating a stream"))?;
        // SAFETY: `raw` was just made in this context; `Stream` destroys it when dropped,
        // after the wrapper's last use.
        Ok(Stream(unsafe { ctx.wrap_borrowed_stream(raw) }, false))
    }

    fn capture_stream(&self) -> Result<Stream, Error> {
        use cudarc::driver::result::stream::{StreamKind, begin_capture, create};
        use cudarc::driver::sys::CUstreamCaptureMode;
        let ctx = context(self.ordinal)?;
        ctx.bind_to_thread()
            .map_err(driver_error("creating a stream"))?;
        // Not blocking: the legacy default stream, which other threads go on using, would
        // otherwise join the capture and break it.
        let raw = create(StreamKind::NonBlocking).map_err(driver_error("creating a stream"))?;
        // SAFETY: as in `new_stream`.
        let stream = Stream(unsafe { ctx.wrap_borrowed_stream(raw) }, true);
        // Relaxed: a launch may load its kernel or allocate a panic slab meanwhile.
        // SAFETY: `raw` is a live stream of this context.
        unsafe { begin_capture(raw, CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED) }
            .map_err(driver_error("starting to record a graph"))?;
        Ok(stream)
    }

    fn end_capture(&self, on: &Stream) -> Result<Graph, Error> {
        use cudarc::driver::result::{graph, stream::end_capture};
        on.0.context()
            .bind_to_thread()
            .map_err(driver_error("recording a graph"))?;
        // SAFETY: a stream of this context, capturing since `capture_stream`.
        let raw =
            unsafe { end_capture(on.0.cu_stream()) }.map_err(driver_error("recording a graph"))?;
        let mut made = Graph {
            graph: raw,
            exec: std::ptr::null_mut(),
        };
        // SAFETY: `raw` is the graph just captured; `made` destroys it if this fails.
        made.exec =
            unsafe { graph::instantiate(raw, cudarc::driver::sys::CUgraphInstantiate_flags(0)) }
                .map_err(driver_error("instantiating a graph"))?;
        Ok(made)
    }

    fn launch_graph(&self, graph: &Graph, on: &Stream) -> Result<(), Error> {
        on.0.context()
            .bind_to_thread()
            .map_err(driver_error("launching a graph"))?;
        // SAFETY: an instantiated graph of this context, on one of its streams.
        unsafe { cudarc::driver::result::graph::launch(graph.exec, on.0.cu_stream()) }
            .map_err(driver_error("launching a graph"))
    }

    fn record(&self, on: Option<&Stream>, timing: bool) -> Result<Event, Error> {
        use cudarc::driver::sys::CUevent_flags;
        if timing && on.is_some_and(|s| s.1) {
            return Err(Error::InvalidLaunch(
                "a stream that records a graph has no timed events".into(),
            ));
        }
        let stream = on.map_or_else(|| stream(self.ordinal), |s| Ok(s.0.clone()))?;
        let idle = (!timing).then(|| lock(&self.idle).pop()).flatten();
        let event = match idle {
            Some(event) => event,
            None => {
                let flags = match timing {
                    true => CUevent_flags::CU_EVENT_DEFAULT,
                    false => CUevent_flags::CU_EVENT_DISABLE_TIMING,
                };
                stream
                    .context()
                    .new_event(Some(flags))
                    .map_err(driver_error("recording an event"))?
            }
        };
        event
            .record(&stream)
            .map_err(driver_error("recording an event"))?;
        Ok(Event {
            event: Some(event),
            idle: (!timing).then(|| self.idle.clone()),
        })
    }

    fn wait_event(&self, on: &Stream, event: &Event) -> Result<(), Error> {
        on.0.wait(event.cuda())
            .map_err(driver_error("making a stream wait for an event"))
    }

    fn event_done(&self, event: &Event) -> Result<bool, Error> {
        event
            .cuda()
            .try_is_complete()
            .map_err(driver_error("running the work before an event"))
    }

    fn event_synchronize(&self, event: &Event) -> Result<(), Error> {
        event
            .cuda()
            .synchronize()
            .map_err(driver_error("running the work before an event"))
    }

    fn elapsed_ms(&self, start: &Event, end: &Event) -> Result<f32, Error> {
        start
            .cuda()
            .elapsed_ms(end.cuda())
            .map_err(driver_error("timing events"))
    }

    fn stream_synchronize(&self, on: &Stream) -> Result<(), Error> {
        on.0.synchronize()
            .map_err(driver_error("running a stream's work"))
    }

    unsafe fn copy_in_async(
        &self,
        on: &Stream,
        from: *const u8,
        to: u64,
        bytes: usize,
    ) -> Result<(), Error> {
        use cudarc::driver::sys;
        on.0.context()
            .bind_to_thread()
            .map_err(driver_error("copying to the device"))?;
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyHtoDAsync_v2(to, from.cast(), bytes, on.0.cu_stream()) }
            .result()
            .map_err(driver_error("copying to the device"))
    }

    unsafe fn copy_out_async(
        &self,
        on: &Stream,
        from: u64,
        to: *mut u8,
        bytes: usize,
    ) -> Result<(), Error> {
        use cudarc::driver::sys;
        on.0.context()
            .bind_to_thread()
            .map_err(driver_error("copying from the device"))?;
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyDtoHAsync_v2(to.cast(), from, bytes, on.0.cu_stream()) }
            .result()
            .map_err(driver_error("copying from the device"))
    }
}

/// A captured graph and its executable form, destroyed when dropped (the driver lets
/// replays already enqueued finish).
pub(crate) struct Graph {
    graph: cudarc::driver::sys::CUgraph,
    exec: cudarc::driver::sys::CUgraphExec,
}

// SAFETY: the handles are used only under the protocol's locks or by one caller at a
// time (a replay is one `cuGraphLaunch`, which the driver allows from any thread).
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        use cudarc::driver::result::graph;
        // SAFETY: made by `end_capture`, destroyed once.
        unsafe {
            if !self.exec.is_null() {
                let _ = graph::exec_destroy(self.exec);
            }
            let _ = graph::destroy(self.graph);
        }
    }
}

/// A stream of a device's context, destroyed when dropped (the driver lets its
/// enqueued work finish first).
/// A recorded event; an untimed one goes back to its driver's idle events when dropped.
pub(crate) struct Event {
    /// Always `Some` until dropped.
    event: Option<cudarc::driver::CudaEvent>,
    idle: Option<Arc<Mutex<Vec<cudarc::driver::CudaEvent>>>>,
}

impl Event {
    fn cuda(&self) -> &cudarc::driver::CudaEvent {
        self.event
            .as_ref()
            .expect("an event is taken only when dropped")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // Recording it again later moves its point; whoever waited on this one has
        // waited already, since nothing holds it now.
        if let (Some(event), Some(idle)) = (self.event.take(), &self.idle) {
            lock(idle).push(event);
        }
    }
}

/// A stream of ours, and whether it captures a graph (where an event records nothing
/// that could be timed).
pub(crate) struct Stream(Arc<cudarc::driver::CudaStream>, bool);

impl Drop for Stream {
    fn drop(&mut self) {
        let ctx = self.0.context();
        let _ = ctx.bind_to_thread();
        // SAFETY: the stream was made by `new_stream` and is used by nothing after this.
        if let Err(e) = unsafe { cudarc::driver::result::stream::destroy(self.0.cu_stream()) } {
            tracing::warn!("destroying a stream: {e}");
        }
    }
}

/// `bytes` of zeroed page-locked host memory in the device's context, allocated with
/// `flags` (`CU_MEMHOSTALLOC_*`).
fn pinned(ordinal: usize, bytes: usize, flags: u32) -> Result<Pinned, Error> {
    let ctx = context(ordinal)?;
    // SAFETY: zeroed below, before anything reads it.
    let mut memory = unsafe { ctx.alloc_pinned_with_flags::<u8>(bytes, flags) }
        .map_err(driver_error("allocating page-locked host memory"))?;
    let bytes = memory
        .as_mut_slice()
        .map_err(driver_error("allocating page-locked host memory"))?;
    bytes.fill(0);
    let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
    Ok(Pinned {
        _memory: memory,
        ptr,
        len,
    })
}

/// Page-locked host memory, read and written through the pointer taken when it was
/// made: without event tracking cudarc records nothing to wait for on it, and the
/// protocol reads it only after synchronising the stream.
pub(crate) struct Pinned {
    /// Owns the memory: freed when dropped.
    _memory: cudarc::driver::PinnedHostSlice<u8>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the pointer is into `_memory`, which is `Send` and `Sync`; access goes through
// `&self` / `&mut self`.
unsafe impl Send for Pinned {}
// SAFETY: as above.
unsafe impl Sync for Pinned {}

impl std::ops::Deref for Pinned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes at `ptr` live as long as `_memory`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for Pinned {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The stream launches and buffer copies on a device are ordered on.
/// A device's context and its one stream, made on first use and kept.
#[derive(Clone)]
struct DeviceContext {
    context: Arc<CudaContext>,
    stream: Arc<cudarc::driver::CudaStream>,
}

/// The context of each device ordinal: looked up on every launch and every buffer
/// address, so a made one is read without a lock.
fn device_context(ordinal: usize) -> Result<DeviceContext, Error> {
    const ORDINALS: usize = 64;
    static MADE: [OnceLock<DeviceContext>; ORDINALS] = [const { OnceLock::new() }; ORDINALS];
    static MAKING: Mutex<()> = Mutex::new(());
    let Some(slot) = MADE.get(ordinal) else {
        return Err(Error::InvalidLaunch(format!(
            "CUDA device {ordinal}: offload supports ordinals below {ORDINALS}"
        )));
    };
    if let Some(made) = slot.get() {
        return Ok(made.clone());
    }
    // One thread makes the context; the others wait for it rather than make their own.
    let _making = lock(&MAKING);
    if let Some(made) = slot.get() {
        return Ok(made.clone());
    }
    let context = CudaContext::new(ordinal).map_err(driver_error("creating a context"))?;
    // Every launch and copy goes to the one stream, in order: cudarc's events that
    // order a buffer's uses across streams would cost two events per allocation and
    // one record per use, for nothing.
    // SAFETY: called before any buffer of the context exists.
    unsafe { context.disable_event_tracking() };
    keep_freed_memory(&context);
    let stream = context.default_stream();
    Ok(slot
        .get_or_init(|| DeviceContext { context, stream })
        .clone())
}

/// Device memory is allocated from the device's stream-ordered pool (cudarc uses
/// `cuMemAllocAsync` where the device has one); by default the pool gives freed memory
/// back to the driver at every synchronisation, so a launch over host data would map
/// its buffers afresh each time. Kept instead, the pool is a cache: a launch's buffers
/// reuse the last launch's. [`trimmed_on_oom`] gives the memory back when an allocation
/// would fail for want of it.
fn keep_freed_memory(context: &CudaContext) {
    use cudarc::driver::sys;
    let mut pool = std::ptr::null_mut();
    let mut keep = u64::MAX;
    // SAFETY: the device handle is the context's; the attribute takes a `u64`.
    let result = unsafe {
        match sys::cuDeviceGetDefaultMemPool(&mut pool, context.cu_device()) {
            sys::CUresult::CUDA_SUCCESS => sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast(),
            ),
            failed => failed,
        }
    };
    if result != sys::CUresult::CUDA_SUCCESS {
        tracing::debug!("device memory pool not kept: {result:?}");
    }
}

/// Runs an allocation; if the device is out of memory, gives the pool's kept memory back
/// to the driver and runs it once more.
fn trimmed_on_oom<T>(
    ordinal: usize,
    allocate: impl Fn() -> Result<T, cudarc::driver::DriverError>,
) -> Result<T, cudarc::driver::DriverError> {
    use cudarc::driver::sys;
    match allocate() {
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
            let Ok(ctx) = context(ordinal) else {
                return Err(e);
            };
            let mut pool = std::ptr::null_mut();
            // SAFETY: the device handle is the context's; trimming frees only memory
            // no allocation holds.
            unsafe {
                if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                    == sys::CUresult::CUDA_SUCCESS
                {
                    let _ = ctx.synchronize();
                    sys::cuMemPoolTrimTo(pool, 0);
                }
            }
            allocate()
        }
        other => other,
    }
}

fn stream(ordinal: usize) -> Result<Arc<cudarc::driver::CudaStream>, Error> {
    Ok(device_context(ordinal)?.stream)
}

fn context(ordinal: usize) -> Result<Arc<CudaContext>, Error> {
    Ok(device_context(ordinal)?.context)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The error for a failed driver call made while doing `during`.
fn driver_error(during: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    move |e| Error::Cuda {
        during,
        message: e.to_string(),
    }
}

/// Makes device `ordinal`'s context the calling thread's current one, for a library that
/// works on the CUDA runtime's current device (NCCL), and returns the stream its work
/// goes to: the device's one stream, so that it is ordered with launches and copies.
pub(crate) fn current(ordinal: usize) -> Result<cudarc::driver::sys::CUstream, Error> {
    let made = device_context(ordinal)?;
    made.context
        .bind_to_thread()
        .map_err(driver_error("making a context current"))?;
    Ok(made.stream.cu_stream())
}

/// Whether `host` is in page-locked memory (a `PinnedVec`'s, or another library's),
/// which the driver copies from after an asynchronous copy has returned.
fn page_locked(host: *const u8) -> bool {
    use cudarc::driver::sys;
    let mut kind = 0u32;
    // SAFETY: `kind` has room for the attribute; for pageable memory the driver answers
    // with an error, which means "not page-locked".
    let answer = unsafe {
        sys::cuPointerGetAttribute(
            (&mut kind as *mut u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            host as sys::CUdeviceptr,
        )
    };
    answer == sys::cudaError_enum::CUDA_SUCCESS
        && kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
}
