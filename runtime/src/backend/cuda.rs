//! The CUDA backend, through the driver API (`cudarc`, loaded at run time, so building
//! needs no CUDA). A launch copies regions and slices to the device, runs the kernel,
//! reads the panic buffer, and copies regions back only if no thread panicked.
//!
//! A launch that writes device buffers and no host data does not wait: its panic buffer
//! belongs to the thread that issued it, and only that thread's next synchronisation of
//! the device (`DeviceBuffer::to_vec`, `offload::synchronize`) reads it, once. Every
//! launch and copy of a device goes to its context's one stream, so any synchronisation
//! waits for every thread's work; only the reporting is per thread.

use super::Backend;
use crate::compile::LaunchShape;
use crate::plan::{Words, dispatch_grids};
use crate::recent::Recent;
use crate::{
    Device, Error, KernelDescriptor,
    memory::Memory,
    panic::{Issuer, PANIC_BUFFER_WORDS, PanicWords, issuer, on_issuer_exit},
    plan::LaunchPlan as Launch,
};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice};
use offload_mir::abi;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

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

/// The CUDA backend of one device.
pub(crate) struct Cuda {
    pub ordinal: usize,
    /// The device, as errors name it.
    pub device: Device,
}

impl Backend for Cuda {
    fn launch(&self, plan: Launch<'_, '_>) -> Result<(), Error> {
        run(plan, self.ordinal)
    }

    fn synchronize(&self) -> Result<(), Error> {
        synchronize(self.ordinal)
    }

    fn allocate_zeroed(&self, bytes: u128) -> Result<Box<dyn Memory>, Error> {
        let out_of_memory = || Error::OutOfMemory {
            device: self.device.to_string(),
            bytes,
        };
        let stream = stream(self.ordinal)?;
        let size = usize::try_from(bytes).map_err(|_| out_of_memory())?;
        // A zero-length allocation is refused by the driver; one byte stands in.
        match trimmed_on_oom(self.ordinal, || stream.alloc_zeros::<u8>(size.max(1))) {
            Ok(slice) => Ok(Box::new(DeviceMemory {
                slice,
                ordinal: self.ordinal,
            })),
            Err(e) if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(out_of_memory())
            }
            Err(e) => Err(driver_error("allocating a buffer")(e)),
        }
    }

    fn upload(&self, data: &[u8]) -> Result<Box<dyn Memory>, Error> {
        let stream = stream(self.ordinal)?;
        let slice = trimmed_on_oom(self.ordinal, || {
            if data.is_empty() {
                stream.alloc_zeros::<u8>(1)
            } else {
                stream.clone_htod(data)
            }
        })
        .map_err(driver_error("copying a buffer to the device"))?;
        Ok(Box::new(DeviceMemory {
            slice,
            ordinal: self.ordinal,
        }))
    }
}

/// Memory on a CUDA device.
struct DeviceMemory {
    slice: CudaSlice<u8>,
    ordinal: usize,
}

impl Memory for DeviceMemory {
    fn address(&self) -> u64 {
        let stream = stream(self.ordinal).expect("the memory's context exists");
        device_address(&self.slice, &stream)
    }

    fn read(&self, into: &mut [u8]) -> Result<(), Error> {
        // Waits for the launches that may write the memory, and reports this thread's
        // unreported panics on the device; the copy is enqueued behind the panic
        // buffers' own, so that one wait covers both.
        if into.is_empty() {
            return synchronize(self.ordinal);
        }
        settle(self.ordinal, Some((&self.slice, into)))
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Error> {
        if data.is_empty() {
            return Ok(());
        }
        let stream = stream(self.ordinal)?;
        let mut window = self.slice.slice_mut(offset..offset + data.len());
        stream
            .memcpy_htod(data, &mut window)
            .map_err(driver_error("copying a buffer part to the device"))
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

/// The loaded kernel function for a descriptor on a device.
fn function(
    launch: &Launch<'_, '_>,
    ordinal: usize,
    ctx: &Arc<CudaContext>,
) -> Result<CudaFunction, Error> {
    type Key = (usize, usize, LaunchShape);
    static FUNCTIONS: OnceLock<Mutex<HashMap<Key, CudaFunction>>> = OnceLock::new();
    // Compiled per launch shape: the PTX declares it (`compile::ptx`).
    let shape = LaunchShape {
        block_size: launch.workgroup_size,
        resident_workgroups: launch.resident_workgroups,
        // Not under a register budget: there the tile loop of the matrix product spilled
        // 4 bytes with it and ran 19% slower (`ptxas -v`, RESULTS.md run 43).
        whole_grid: launch.group_base == 0
            && !crate::plan::folds(launch.workgroups)
            && launch.resident_workgroups.is_none(),
    };
    let key = (launch.descriptor as *const _ as usize, ordinal, shape);
    // A thread launching the same few kernels again and again finds them without the
    // shared lock.
    thread_local! {
        static RECENT: std::cell::RefCell<Recent<Key, CudaFunction>> =
            const { std::cell::RefCell::new(Recent::new()) };
    }
    if let Ok(Some(f)) = RECENT.try_with(|recent| recent.borrow().get(&key)) {
        return Ok(f);
    }
    let functions = FUNCTIONS.get_or_init(Default::default);
    let found = functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned();
    if let Some(f) = found {
        let _ = RECENT.try_with(|recent| recent.borrow_mut().put(key, f.clone()));
        return Ok(f);
    }
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_error("querying the compute capability"))?;
    let chip = format!("sm_{major}{minor}");
    let ptx = crate::compile::ptx(launch.descriptor, &chip, shape)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx.as_str()))
        .map_err(driver_error("loading the kernel's PTX"))?;
    let f = module
        .load_function(&launch.body.name)
        .map_err(driver_error("finding the kernel in its module"))?;
    // Threads that missed the cache at once each loaded a module; the first one stored is
    // everyone's. The others are unloaded here, before anything ran from them: replacing a
    // stored function could unload its module while a launch from it is still running.
    Ok(functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key)
        .or_insert(f)
        .clone())
}

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

fn run(launch: Launch<'_, '_>, ordinal: usize) -> Result<(), Error> {
    let threads: u32 = launch.workgroup_size.iter().product();
    // The body is scanned only for launches of partial warps.
    if !threads.is_multiple_of(abi::NVIDIA_WARP) && launch.body.uses_subgroups() {
        return Err(Error::InvalidLaunch(format!(
            "kernel `{}` uses subgroup operations, which need whole warps: {threads} threads per workgroup is not a multiple of {}",
            launch.body.name,
            abi::NVIDIA_WARP
        )));
    }
    let DeviceContext {
        context: ctx,
        stream,
    } = device_context(ordinal)?;
    let func = function(&launch, ordinal, &ctx)?;
    if launch.dyn_cache > DEFAULT_DYNAMIC_SHARED {
        // Beyond 48 KiB the kernel must opt in; the driver refuses what the device lacks.
        func.set_attribute(
            cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            launch.dyn_cache as i32,
        )
        .map_err(driver_error("allowing the requested dynamic shared memory (`dyn_cache`)"))?;
    }
    let uploaded = upload(&launch, ordinal, &stream)?;
    let writes_host = launch
        .args
        .iter()
        .any(|a| a.kind.copied_back() && a.kind.bytes().is_some());
    let writes_device = launch
        .args
        .iter()
        .any(|a| a.kind.copied_back() && a.kind.resident().is_some());

    // The thread that made the arguments: the caller of `offload!`, also when this is one
    // share of a `device = all` launch, run on a helper thread.
    let issuer = launch
        .args
        .iter()
        .find_map(|a| a.kind.resident())
        .map_or_else(issuer, |r| r.issuer);

    // A launch that writes device buffers and no host data is asynchronous: the host goes
    // on, and a panic surfaces at its issuer's next `to_vec` or `offload::synchronize` on
    // this device (see `Pending`).
    if writes_device && !writes_host {
        return launch_async(&func, &launch, uploaded, issuer, ordinal, &stream);
    }
    launch_sync(&func, &launch, uploaded, issuer, ordinal, &stream)
}

/// A launch's arguments on the device: the kernel ABI's words, the device copies of host
/// data (kept alive until the kernel has run), and which of them go back to the host.
struct Uploaded {
    words: Words,
    buffers: Vec<CudaSlice<u8>>,
    /// Host data the kernel may write: the buffer's position in `buffers`, then the
    /// host slice (pointer, bytes) and where it sits in the buffer.
    written: Vec<(usize, *mut u8, usize, usize)>,
}

/// Copies each argument with host data (and an `Indexed` region's indices) to the device.
fn upload(
    launch: &Launch<'_, '_>,
    ordinal: usize,
    stream: &Arc<cudarc::driver::CudaStream>,
) -> Result<Uploaded, Error> {
    let mut buffers: Vec<CudaSlice<u8>> = Vec::new();
    let mut written = Vec::new();
    let words = crate::plan::abi_words(launch.args, |kind, data, bytes| {
        // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes.
        let host = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
        let (offset, full) = kind.placement().expect("arguments with data are placed");
        // A zero-length allocation is refused by the driver; one byte stands in.
        let buffer = trimmed_on_oom(ordinal, || {
            if full == bytes && bytes > 0 {
                stream.clone_htod(host)
            } else {
                stream
                    .alloc_zeros::<u8>(full.max(1))
                    .and_then(|mut buffer| {
                        if bytes > 0 {
                            let mut window = buffer.slice_mut(offset..offset + bytes);
                            stream.memcpy_htod(host, &mut window)?;
                        }
                        Ok(buffer)
                    })
            }
        })
        .map_err(driver_error("copying an argument to the device"))?;
        let address = device_address(&buffer, stream);
        if kind.copied_back() && bytes > 0 {
            written.push((buffers.len(), data, bytes, offset));
        }
        buffers.push(buffer);
        Ok(address)
    })?;
    Ok(Uploaded {
        words,
        buffers,
        written,
    })
}

/// A launch that writes device buffers and no host data: enqueued, not waited for.
fn launch_async(
    func: &CudaFunction,
    launch: &Launch<'_, '_>,
    uploaded: Uploaded,
    issuer: Issuer,
    ordinal: usize,
    stream: &Arc<cudarc::driver::CudaStream>,
) -> Result<(), Error> {
    let entry = pending_entry(issuer, ordinal);
    // Held until the launch is enqueued, so that a synchronisation that takes these
    // launches finds every one of them enqueued, and waits for it.
    let mut pending = lock(&entry);
    let slot = pending.kernels.len() % SLOTS;
    if slot == 0 {
        let slab = slab(ordinal, stream)?;
        pending.slabs.push(slab);
    }
    let slab = pending
        .slabs
        .last()
        .expect("the launch's slab was just ensured");
    let report = slab.address + (slot * PANIC_BUFFER_WORDS * std::mem::size_of::<i64>()) as u64;
    // Recorded before the launch: if it fails, its slot just stays zero.
    pending.kernels.push(launch.descriptor);
    pending.inputs.extend(uploaded.buffers);
    // SAFETY: the slot and the copies of host inputs live in `pending` until a
    // synchronisation after the kernel has finished.
    unsafe { enqueue(func, launch, uploaded.words, report, stream) }
}

/// A launch that writes host data (or nothing): run to its end, its panic read, the
/// regions it wrote copied back.
fn launch_sync(
    func: &CudaFunction,
    launch: &Launch<'_, '_>,
    uploaded: Uploaded,
    issuer: Issuer,
    ordinal: usize,
    stream: &Arc<cudarc::driver::CudaStream>,
) -> Result<(), Error> {
    // A synchronous launch: its own panic buffer (slot 0 of a slab), read right away. It
    // reports only its own panic; the issuer's earlier asynchronous launches stay pending
    // for its next `to_vec` or `offload::synchronize`, but the copies of their host inputs
    // are freed once the wait below has covered them.
    let mut slab = slab(ordinal, stream)?;
    let Uploaded {
        words,
        buffers,
        written,
    } = uploaded;
    // SAFETY: `slab` and `buffers` live until the stream is synchronised below.
    unsafe { enqueue(func, launch, words, slab.address, stream) }?;
    // The panic buffer's copy to the host is enqueued behind the kernel: the wait below
    // covers both.
    stream
        .memcpy_dtoh(&slab.slice.slice(0..PANIC_BUFFER_WORDS), &mut slab.host)
        .map_err(driver_error("reading the panic buffer"))?;
    let entry = registry().get(&(issuer, ordinal)).cloned();
    let finished_inputs = entry.map(|entry| std::mem::take(&mut lock(&entry).inputs));
    stream
        .synchronize()
        .map_err(driver_error("running the kernel"))?;
    drop(finished_inputs);
    let panic: PanicWords = slab.read(1)?.try_into().expect("one panic buffer");
    if let Some(error) = decode(launch.descriptor, &panic) {
        // The slab is freed rather than zeroed for reuse: panics are rare.
        return Err(error);
    }
    release(ordinal, [slab]);
    for (buffer, data, bytes, offset) in written {
        // SAFETY: `data` is the region's exclusively borrowed slice of `bytes` bytes.
        let host = unsafe { std::slice::from_raw_parts_mut(data, bytes) };
        stream
            .memcpy_dtoh(&buffers[buffer].slice(offset..offset + bytes), host)
            .map_err(driver_error("copying a region back"))?;
    }
    stream
        .synchronize()
        .map_err(driver_error("copying results back"))?;
    Ok(())
}

/// Enqueues the kernel with argument words `words`, then the panic buffer at `report` and
/// the hidden GPU words.
///
/// # Safety
///
/// Every buffer `words` and `report` point to must live until the kernel has finished.
unsafe fn enqueue(
    func: &CudaFunction,
    launch: &Launch<'_, '_>,
    words: Words,
    report: u64,
    stream: &Arc<cudarc::driver::CudaStream>,
) -> Result<(), Error> {
    // `cuLaunchKernel` itself, with the parameters on the stack: cudarc's launch builder
    // collects them into vectors of its own.
    stream
        .context()
        .bind_to_thread()
        .map_err(driver_error("launching the kernel"))?;
    dispatch_grids(launch, words, report, |grid| {
        let mut params = grid.params();
        let ([gx, gy, gz], [bx, by, bz]) = (grid.grid, grid.block);
        // SAFETY: the parameters match the kernel ABI the PTX was compiled with (checked
        // against the MIR signature), and the caller keeps what they point to alive.
        unsafe {
            cudarc::driver::result::launch_kernel(
                func.cu_function(),
                (gx, gy, gz),
                (bx, by, bz),
                grid.shared_bytes,
                stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(driver_error("launching the kernel"))
    })
}

// Panics of asynchronous launches.
//
// Each launch has a panic buffer of its own: one slot of a slab of `SLOTS` buffers, taken
// in launch order. A slab belongs to one issuer (a host thread) on one device until that
// issuer's next synchronisation of the device, which waits for the stream, reads the
// slab's used slots in one copy and reports the first of them, in launch order, that
// records a panic. Slabs read back as all zeros go back to a pool for any issuer; a slab
// with a panic is freed. So a launch needs no allocation, memset or synchronisation of its
// own (a new slab every `SLOTS` launches, while the pool is empty), and a slab is reused
// only after every launch that may write it has finished and was checked.

/// Panic buffers per slab: 14 KiB. A synchronisation reads only the slots its launches
/// used, one copy per slab.
const SLOTS: usize = 256;

/// `SLOTS` panic buffers on a device, zeroed while in the pool, and the page-locked host
/// memory their used slots are copied into: a copy the host need not wait for.
struct Slab {
    slice: CudaSlice<i64>,
    address: u64,
    host: cudarc::driver::PinnedHostSlice<i64>,
}

impl Slab {
    /// The first `slots` panic buffers as last copied to the host. Without event
    /// tracking cudarc records nothing to wait for here: the caller's synchronisation of
    /// the stream is what orders the copy before this read.
    fn read(&self, slots: usize) -> Result<&[i64], Error> {
        let all = (self.host.as_slice()).map_err(driver_error("reading the panic buffer"))?;
        Ok(&all[..slots * PANIC_BUFFER_WORDS])
    }
}

/// Slabs that were read back as all zeros, per device, for reuse by any issuer.
fn slab_pool() -> std::sync::MutexGuard<'static, HashMap<usize, Vec<Slab>>> {
    static POOL: OnceLock<Mutex<HashMap<usize, Vec<Slab>>>> = OnceLock::new();
    lock(POOL.get_or_init(Default::default))
}

/// A zeroed slab on a device: from the pool, or newly allocated.
fn slab(ordinal: usize, stream: &Arc<cudarc::driver::CudaStream>) -> Result<Slab, Error> {
    if let Some(slab) = slab_pool().get_mut(&ordinal).and_then(Vec::pop) {
        return Ok(slab);
    }
    let slice = stream
        .alloc_zeros::<i64>(SLOTS * PANIC_BUFFER_WORDS)
        .map_err(driver_error("allocating panic buffers"))?;
    let address = device_address(&slice, stream);
    // SAFETY: plain page-locked memory (not write-combined: the host reads it), zeroed
    // before anything reads it.
    let mut host = unsafe {
        stream
            .context()
            .alloc_pinned_with_flags::<i64>(SLOTS * PANIC_BUFFER_WORDS, 0)
    }
    .map_err(driver_error("allocating panic buffers"))?;
    host.as_mut_slice()
        .map_err(driver_error("allocating panic buffers"))?
        .fill(0);
    Ok(Slab {
        slice,
        address,
        host,
    })
}

/// Returns slabs read back as all zeros to the pool.
fn release(ordinal: usize, slabs: impl IntoIterator<Item = Slab>) {
    slab_pool().entry(ordinal).or_default().extend(slabs);
}

/// One issuer's asynchronous launches on one device since its last synchronisation there.
#[derive(Default)]
struct Pending {
    /// Launch `i` reports into slot `i % SLOTS` of slab `i / SLOTS`.
    slabs: Vec<Slab>,
    /// Each launch's kernel, in launch order.
    kernels: Vec<&'static KernelDescriptor>,
    /// Device copies of the launches' host inputs, kept alive until they have run.
    inputs: Vec<CudaSlice<u8>>,
}

type Entry = Arc<Mutex<Pending>>;

/// Every issuer's pending launches, per device.
fn registry() -> std::sync::MutexGuard<'static, HashMap<(Issuer, usize), Entry>> {
    static REGISTRY: OnceLock<Mutex<HashMap<(Issuer, usize), Entry>>> = OnceLock::new();
    lock(REGISTRY.get_or_init(Default::default))
}

fn pending_entry(issuer: Issuer, ordinal: usize) -> Entry {
    // An issuer that ends with launches pending hands them over (see [`retire`]).
    static HOOKED: std::sync::Once = std::sync::Once::new();
    HOOKED.call_once(|| on_issuer_exit(retire));
    // The calling thread's own entries, kept without the registry's lock: they leave the
    // registry only when this thread ends (`retire`), and this cache ends with it.
    thread_local! {
        static MINE: std::cell::RefCell<Vec<(usize, Entry)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // (A launch made while the thread ends, `Issuer::LATE`, is not cached.)
    let own = issuer != Issuer::LATE && issuer == crate::panic::issuer();
    let cached = |mine: &std::cell::RefCell<Vec<(usize, Entry)>>| {
        let mine = mine.borrow();
        mine.iter()
            .find(|(o, _)| *o == ordinal)
            .map(|(_, e)| e.clone())
    };
    if own && let Ok(Some(entry)) = MINE.try_with(cached) {
        return entry;
    }
    let entry = registry().entry((issuer, ordinal)).or_default().clone();
    if own {
        let _ = MINE.try_with(|mine| mine.borrow_mut().push((ordinal, entry.clone())));
    }
    entry
}

/// Launches whose issuer ended before synchronising, per device: nobody is left to report
/// their panics to, but their slabs and inputs are released by the next synchronisation
/// of the device.
fn retired() -> std::sync::MutexGuard<'static, HashMap<usize, Vec<Pending>>> {
    static RETIRED: OnceLock<Mutex<HashMap<usize, Vec<Pending>>>> = OnceLock::new();
    lock(RETIRED.get_or_init(Default::default))
}

/// Moves an ending thread's pending launches to [`retired`]. Makes no driver call: this
/// runs while the thread's locals are destroyed.
fn retire(issuer: Issuer) {
    let entries: Vec<(usize, Entry)> = {
        let mut registry = registry();
        let keys: Vec<(Issuer, usize)> = registry
            .keys()
            .filter(|(i, _)| *i == issuer)
            .copied()
            .collect();
        keys.into_iter()
            .filter_map(|key| registry.remove(&key).map(|entry| (key.1, entry)))
            .collect()
    };
    for (ordinal, entry) in entries {
        let pending = std::mem::take(&mut *lock(&entry));
        if !pending.kernels.is_empty() {
            retired().entry(ordinal).or_default().push(pending);
        }
    }
}

/// Waits for everything launched on a device, then reports the first panic, in launch
/// order, of the calling thread's asynchronous launches there that no earlier
/// synchronisation reported. Other threads' launches are never reported here.
fn synchronize(ordinal: usize) -> Result<(), Error> {
    settle(ordinal, None)
}

/// [`synchronize`], with `read` (device memory and where on the host its first bytes go)
/// copied too, behind the panic buffers' copies, so that one wait covers everything. A
/// panic is reported even though the bytes were copied.
fn settle(ordinal: usize, read: Option<(&CudaSlice<u8>, &mut [u8])>) -> Result<(), Error> {
    let stream = stream(ordinal)?;
    // Taken before waiting: every launch in them was enqueued before it was recorded
    // (under the entry's lock), so the wait below covers it.
    let entry = registry().get(&(issuer(), ordinal)).cloned();
    let mut mine = entry
        .as_ref()
        .map(|entry| std::mem::take(&mut *lock(entry)));
    let mut orphans = retired().remove(&ordinal).unwrap_or_default();
    let mut copied = Ok(());
    for pending in orphans.iter_mut().chain(mine.iter_mut()) {
        copied = copied.and(enqueue_panic_reads(&stream, pending));
    }
    if let Some((memory, into)) = read {
        copied = copied.and(
            stream
                .memcpy_dtoh(&memory.slice(0..into.len()), into)
                .map_err(driver_error("copying a buffer from the device")),
        );
    }
    stream
        .synchronize()
        .map_err(driver_error("running the kernel"))?;
    copied?;
    for mut pending in orphans {
        if let Err(e) = check(ordinal, &mut pending) {
            tracing::warn!(
                "not reported, since the thread that launched it ended without synchronising: {e}"
            );
        }
    }
    let Some(mut pending) = mine else {
        return Ok(());
    };
    let result = check(ordinal, &mut pending);
    // The emptied lists go back to the entry, so that the next launches do not grow
    // new ones.
    if let Some(entry) = entry {
        let mut now = lock(&entry);
        if now.kernels.is_empty() && now.slabs.is_empty() && now.inputs.is_empty() {
            *now = pending;
        }
    }
    result
}

/// Enqueues the copies of `pending`'s used panic buffers to their slabs' host memory.
fn enqueue_panic_reads(
    stream: &Arc<cudarc::driver::CudaStream>,
    pending: &mut Pending,
) -> Result<(), Error> {
    for (slab, kernels) in pending.slabs.iter_mut().zip(pending.kernels.chunks(SLOTS)) {
        // Only the used slots: nothing writes the others, which stay zero.
        let used = slab.slice.slice(0..kernels.len() * PANIC_BUFFER_WORDS);
        stream
            .memcpy_dtoh(&used, &mut slab.host)
            .map_err(driver_error("reading the panic buffer"))?;
    }
    Ok(())
}

/// Reads finished launches' panic buffers, copied to the host by
/// [`enqueue_panic_reads`] before a synchronisation: the first panic they record, in
/// launch order. Slabs without one go back to the pool. Leaves `pending`'s lists empty.
fn check(ordinal: usize, pending: &mut Pending) -> Result<(), Error> {
    // The launches have finished with them.
    pending.inputs.clear();
    let kernels = std::mem::take(&mut pending.kernels);
    let mut first = None;
    let mut clean = Vec::new();
    for (slab, kernels) in pending.slabs.drain(..).zip(kernels.chunks(SLOTS)) {
        let words = match slab.read(kernels.len()) {
            Ok(words) => words,
            Err(e) => {
                first.get_or_insert(e);
                continue;
            }
        };
        if first.is_none() {
            first = kernels
                .iter()
                .zip(words.chunks_exact(PANIC_BUFFER_WORDS))
                .find_map(|(kernel, report)| {
                    decode(kernel, report.try_into().expect("one panic buffer"))
                });
        }
        if words.iter().all(|&w| w == 0) {
            clean.push(slab);
        }
    }
    release(ordinal, clean);
    pending.kernels = kernels;
    pending.kernels.clear();
    first.map_or(Ok(()), Err)
}

/// The panic one launch's panic buffer records, if any.
fn decode(kernel: &'static KernelDescriptor, report: &PanicWords) -> Option<Error> {
    if report[0] == 0 {
        return None;
    }
    match kernel.body() {
        Ok(body) => crate::panic::decode(kernel.name, body, report),
        Err(e) => Some(e),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A buffer's device address. The stream is synchronised before any buffer is read or
/// freed, so the guard cudarc returns for ordering is not needed past this call.
fn device_address<T>(buffer: &CudaSlice<T>, stream: &cudarc::driver::CudaStream) -> u64 {
    let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(buffer, stream);
    ptr
}

/// The error for a failed driver call made while doing `during`.
fn driver_error(during: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    move |e| Error::Cuda {
        during,
        message: e.to_string(),
    }
}
