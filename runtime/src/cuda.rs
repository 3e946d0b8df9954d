//! The CUDA backend, through the driver API (`cudarc`, loaded at run time, so building
//! needs no CUDA). A launch copies regions and slices to the device, runs the kernel,
//! reads the panic buffer, and copies regions back only if no thread panicked.

use crate::{
    Device, Error, KernelDescriptor,
    launch::Launch,
    panic::{PANIC_BUFFER_WORDS, PanicWords},
};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
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

/// The stream launches and buffer copies on a device are ordered on.
pub(crate) fn stream(ordinal: usize) -> Result<Arc<cudarc::driver::CudaStream>, Error> {
    Ok(context(ordinal)?.default_stream())
}

fn context(ordinal: usize) -> Result<Arc<CudaContext>, Error> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<CudaContext>>>> = OnceLock::new();
    let mut map = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(ctx) = map.get(&ordinal) {
        return Ok(ctx.clone());
    }
    let ctx = CudaContext::new(ordinal).map_err(Error::cuda("creating a context"))?;
    map.insert(ordinal, ctx.clone());
    Ok(ctx)
}

/// The loaded kernel function for a descriptor on a device.
fn function(
    launch: &Launch<'_, '_>,
    ordinal: usize,
    ctx: &Arc<CudaContext>,
) -> Result<CudaFunction, Error> {
    static FUNCTIONS: OnceLock<Mutex<HashMap<(usize, usize), CudaFunction>>> = OnceLock::new();
    let key = (launch.descriptor as *const _ as usize, ordinal);
    let functions = FUNCTIONS.get_or_init(Default::default);
    if let Some(f) = functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return Ok(f.clone());
    }
    let (major, minor) = ctx
        .compute_capability()
        .map_err(Error::cuda("querying the compute capability"))?;
    let ptx = crate::compile::ptx(launch.descriptor, &format!("sm_{major}{minor}"))?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx.as_str()))
        .map_err(Error::cuda("loading the kernel's PTX"))?;
    let f = module
        .load_function(&launch.body.name)
        .map_err(Error::cuda("finding the kernel in its module"))?;
    functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, f.clone());
    Ok(f)
}

/// Threads per warp: the subgroup size the GPU lowering assumes.
const WARP: u32 = 32;

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

pub(crate) fn run(launch: Launch<'_, '_>, ordinal: usize) -> Result<(), Error> {
    let threads: u32 = launch.block.iter().product();
    if launch.body.uses_subgroups() && !threads.is_multiple_of(WARP) {
        return Err(Error::InvalidLaunch(format!(
            "kernel `{}` uses subgroup operations, which need whole warps: {threads} threads per workgroup is not a multiple of {WARP}",
            launch.body.name
        )));
    }
    let ctx = context(ordinal)?;
    let func = function(&launch, ordinal, &ctx)?;
    if launch.dyn_cache > DEFAULT_DYNAMIC_SHARED {
        // Beyond 48 KiB the kernel must opt in; the driver refuses what the device lacks.
        func.set_attribute(
            cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            launch.dyn_cache as i32,
        )
        .map_err(Error::cuda("allowing the requested dynamic shared memory (`dyn_cache`)"))?;
    }
    let stream = ctx.default_stream();

    let mut buffers: Vec<CudaSlice<u8>> = Vec::new();
    let mut words = crate::launch::abi_words(launch.args, |kind, data, bytes| {
        // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes.
        let host = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
        let (offset, full) = kind.placement().expect("arguments with data are placed");
        // A zero-length allocation is refused by the driver; one byte stands in.
        let buffer = if full == bytes && bytes > 0 {
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
        .map_err(Error::cuda("copying an argument to the device"))?;
        let address = device_address(&buffer, &stream);
        buffers.push(buffer);
        Ok(address)
    })?;
    let writes_host = launch
        .args
        .iter()
        .any(|a| a.kind.copied_back() && a.kind.bytes().is_some());
    // Asynchronous launches of one kernel share a panic buffer until the next
    // synchronisation: only the first panic is reported, and its site is the kernel's.
    // Held from choosing the shared buffer to recording the launch, so a concurrent
    // synchronisation cannot recycle the buffer in between.
    let mut pending_launches = (!writes_host).then(pending);
    let shared = pending_launches.as_ref().and_then(|all| {
        all.get(&ordinal)?
            .iter()
            .find(|p| std::ptr::eq(p.descriptor, launch.descriptor))
            .map(|p| p.panic_buffer.address)
    });
    let (p, own_buffer) = match shared {
        Some(address) => (address, None),
        None => {
            let buffer = panic_buffer(ordinal, &stream)?;
            (buffer.address, Some(buffer))
        }
    };
    words.extend([p, p, 0, PANIC_BUFFER_WORDS as u64, 1]);
    words.push(launch.group_base as u64);
    words.push(launch.dyn_cache as u64);
    words.push(launch.groups[0] as u64);

    let mut builder = stream.launch_builder(&func);
    // Every parameter travels as a pointer to a 64-bit slot; the driver reads as many bytes
    // as the parameter has, which on little-endian hosts are the value's own.
    for w in &words {
        builder.arg(w);
    }
    let config = LaunchConfig {
        grid_dim: (launch.grid[0], launch.grid[1], launch.grid[2]),
        block_dim: (launch.block[0], launch.block[1], launch.block[2]),
        shared_mem_bytes: launch.dyn_cache,
    };
    // SAFETY: the parameters match the kernel ABI the PTX was compiled with (checked
    // against the MIR signature), and every buffer they point to lives until the kernel
    // has finished: below, or in the pending record of an asynchronous launch.
    unsafe { builder.launch(config) }.map_err(Error::cuda("launching the kernel"))?;

    // With nothing to copy back to the host, the launch is asynchronous: the host goes on,
    // and a panic surfaces at the next synchronisation of this device (a buffer's
    // `to_vec`, `offload::synchronize`, or a synchronous launch).
    if let Some(all) = pending_launches.as_mut() {
        let list = all.entry(ordinal).or_default();
        match (
            list.iter_mut()
                .find(|p| std::ptr::eq(p.descriptor, launch.descriptor)),
            own_buffer,
        ) {
            (Some(p), _) => p.inputs.extend(buffers),
            (None, Some(panic_buffer)) => list.push(Pending {
                descriptor: launch.descriptor,
                panic_buffer,
                inputs: buffers,
            }),
            (None, None) => unreachable!("a shared panic buffer belongs to a pending launch"),
        }
        return Ok(());
    }
    synchronize(ordinal)?;
    check_panics(
        ordinal,
        &stream,
        launch.descriptor,
        own_buffer.expect("synchronous launches own their buffer"),
    )?;
    // `buffers` holds one buffer per argument with data, in order; copy back those the
    // kernel may have written.
    let with_data = launch.args.iter().filter(|a| a.kind.bytes().is_some());
    for (arg, buffer) in with_data
        .zip(&buffers)
        .filter(|(a, _)| a.kind.copied_back())
    {
        let (data, bytes) = arg.kind.bytes().expect("arguments with buffers have data");
        let (offset, _) = arg
            .kind
            .placement()
            .expect("arguments with data are placed");
        if bytes == 0 {
            continue;
        }
        // SAFETY: `data` is the region's exclusively borrowed slice of `bytes` bytes.
        let host = unsafe { std::slice::from_raw_parts_mut(data, bytes) };
        stream
            .memcpy_dtoh(&buffer.slice(offset..offset + bytes), host)
            .map_err(Error::cuda("copying a region back"))?;
    }
    stream
        .synchronize()
        .map_err(Error::cuda("copying results back"))?;
    Ok(())
}

/// A zeroed panic buffer on a device, and its address.
struct PanicBuffer {
    slice: CudaSlice<i64>,
    address: u64,
}

/// Panic buffers that were read back as zero, kept per device for reuse: a launch then
/// needs no allocation and no memset.
fn panic_buffer_pool() -> std::sync::MutexGuard<'static, HashMap<usize, Vec<PanicBuffer>>> {
    static POOL: OnceLock<Mutex<HashMap<usize, Vec<PanicBuffer>>>> = OnceLock::new();
    POOL.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn panic_buffer(
    ordinal: usize,
    stream: &Arc<cudarc::driver::CudaStream>,
) -> Result<PanicBuffer, Error> {
    if let Some(buffer) = panic_buffer_pool().get_mut(&ordinal).and_then(Vec::pop) {
        return Ok(buffer);
    }
    let slice = stream
        .alloc_zeros::<i64>(PANIC_BUFFER_WORDS)
        .map_err(Error::cuda("allocating the panic buffer"))?;
    let address = device_address(&slice, stream);
    Ok(PanicBuffer { slice, address })
}

/// Reads a finished launch's panic buffer: the panic it reports, or the buffer goes back
/// to the pool.
fn check_panics(
    ordinal: usize,
    stream: &Arc<cudarc::driver::CudaStream>,
    descriptor: &'static KernelDescriptor,
    buffer: PanicBuffer,
) -> Result<(), Error> {
    let mut panic: PanicWords = [0; PANIC_BUFFER_WORDS];
    stream
        .memcpy_dtoh(&buffer.slice, &mut panic[..])
        .map_err(Error::cuda("reading the panic buffer"))?;
    if let Some(error) = crate::panic::decode(descriptor.name, descriptor.body()?, &panic) {
        return Err(error);
    }
    panic_buffer_pool().entry(ordinal).or_default().push(buffer);
    Ok(())
}

/// The asynchronous launches of one kernel on a device since its last synchronisation:
/// their shared panic buffer, and the device copies of their host inputs, kept alive until
/// they have run.
struct Pending {
    descriptor: &'static KernelDescriptor,
    panic_buffer: PanicBuffer,
    inputs: Vec<CudaSlice<u8>>,
}

/// The pending asynchronous launches of each device.
fn pending() -> std::sync::MutexGuard<'static, HashMap<usize, Vec<Pending>>> {
    static PENDING: OnceLock<Mutex<HashMap<usize, Vec<Pending>>>> = OnceLock::new();
    PENDING
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Waits for everything launched on a device, then reports the first panic of its
/// asynchronous launches, if any.
pub(crate) fn synchronize(ordinal: usize) -> Result<(), Error> {
    let stream = stream(ordinal)?;
    stream
        .synchronize()
        .map_err(Error::cuda("running the kernel"))?;
    let finished: Vec<Pending> = pending().remove(&ordinal).unwrap_or_default();
    let mut first_error = None;
    for launch in finished {
        if let Err(e) = check_panics(ordinal, &stream, launch.descriptor, launch.panic_buffer) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// A buffer's device address. The stream is synchronised before any buffer is read or
/// freed, so the guard cudarc returns for ordering is not needed past this call.
fn device_address<T>(buffer: &CudaSlice<T>, stream: &cudarc::driver::CudaStream) -> u64 {
    let (ptr, _guard) = cudarc::driver::DevicePtr::device_ptr(buffer, stream);
    ptr
}
