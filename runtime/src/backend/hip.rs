//! The AMD backend: the HIP runtime (`libamdhip64.so`), loaded when devices are first
//! listed, as the CUDA backend loads the CUDA driver. Kernels run as code objects
//! (HSACO) for the GPU's chip: built ahead of time, else compiled by the JIT
//! ([`crate::compile::code_object`]).
//!
//! The launch protocol is the one of every GPU ([`super::gpu`]); this module is the
//! operations it runs on. They use the null stream, whose copies from pageable memory
//! wait for the launches before them.
//!
//! A GPU's chip is read from the kernel driver's topology
//! (`/sys/class/kfd/kfd/topology/nodes/*/properties`, `gfx_target_version`), in node
//! order, which is the order HIP lists GPUs in when `HIP_VISIBLE_DEVICES` is not set.
//!
//! No AMD GPU has been reachable from the machines this was written on: the code here is
//! compiled and its argument packing tested, but it has never run a kernel.

use super::gpu::{Driver, Gpu};
use crate::compile::LaunchShape;
use crate::plan::GpuDispatch;
use crate::{Device, Error, KernelDescriptor};
use std::{
    ffi::{CStr, CString, c_char, c_int, c_uint, c_void},
    sync::OnceLock,
};

/// Where the HIP runtime is looked for, in order.
fn library_candidates() -> Vec<String> {
    let mut out = Vec::new();
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Ok(dir) = std::env::var(var) {
            out.push(format!("{dir}/lib/libamdhip64.so"));
        }
    }
    out.extend(
        ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"]
            .map(String::from)
            .into_iter()
            .chain(["/opt/rocm/lib/libamdhip64.so".to_string()]),
    );
    out
}

type HipResult = c_int;
const HIP_SUCCESS: HipResult = 0;
const HIP_ERROR_OUT_OF_MEMORY: HipResult = 2;

/// The HIP runtime functions the backend calls, resolved from the loaded library.
struct Hip {
    get_device_count: unsafe extern "C" fn(*mut c_int) -> HipResult,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipResult,
    set_device: unsafe extern "C" fn(c_int) -> HipResult,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipResult,
    free: unsafe extern "C" fn(*mut c_void) -> HipResult,
    memset: unsafe extern "C" fn(*mut c_void, c_int, usize) -> HipResult,
    memcpy_htod: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> HipResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> HipResult,
    memcpy_dtod: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> HipResult,
    device_synchronize: unsafe extern "C" fn() -> HipResult,
    module_load_data: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> HipResult,
    module_get_function:
        unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> HipResult,
    #[allow(clippy::type_complexity)]
    module_launch_kernel: unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> HipResult,
    get_error_string: unsafe extern "C" fn(HipResult) -> *const c_char,
    /// Keeps the functions above loaded.
    _library: libloading::Library,
}

/// The HIP runtime, loaded and initialised once; or why it is not there.
fn hip() -> Result<&'static Hip, HipUnavailable> {
    static HIP: OnceLock<Result<Hip, HipUnavailable>> = OnceLock::new();
    HIP.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Why the HIP runtime cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum HipUnavailable {
    /// No library at any of the paths tried.
    #[error(
        "the HIP runtime was not found (tried {}); install ROCm or set ROCM_PATH",
        tried.join(", ")
    )]
    NotFound { tried: Vec<String> },
    /// A library was found but lacks a function this backend calls.
    #[error("the HIP runtime lacks `{function}`: {message}")]
    MissingFunction {
        function: &'static str,
        message: String,
    },
    /// `hipInit` failed.
    #[error("the HIP runtime did not start: {0}")]
    DidNotStart(String),
}

fn load() -> Result<Hip, HipUnavailable> {
    let tried = library_candidates();
    // SAFETY: loading the HIP runtime runs its initialisers, which are sound to run in
    // any process.
    let library = tried
        .iter()
        .find_map(|path| unsafe { libloading::Library::new(path) }.ok())
        .ok_or(HipUnavailable::NotFound { tried })?;
    // SAFETY: each symbol is looked up by its HIP name and given HIP's C signature.
    unsafe {
        macro_rules! function {
            ($name:literal) => {
                *library.get(concat!($name, "\0").as_bytes()).map_err(|e| {
                    HipUnavailable::MissingFunction {
                        function: $name,
                        message: e.to_string(),
                    }
                })?
            };
        }
        let init: unsafe extern "C" fn(c_uint) -> HipResult = function!("hipInit");
        let hip = Hip {
            get_device_count: function!("hipGetDeviceCount"),
            device_get_name: function!("hipDeviceGetName"),
            set_device: function!("hipSetDevice"),
            malloc: function!("hipMalloc"),
            free: function!("hipFree"),
            memset: function!("hipMemset"),
            memcpy_htod: function!("hipMemcpyHtoD"),
            memcpy_dtoh: function!("hipMemcpyDtoH"),
            memcpy_dtod: function!("hipMemcpyDtoD"),
            device_synchronize: function!("hipDeviceSynchronize"),
            module_load_data: function!("hipModuleLoadData"),
            module_get_function: function!("hipModuleGetFunction"),
            module_launch_kernel: function!("hipModuleLaunchKernel"),
            get_error_string: function!("hipGetErrorString"),
            _library: library,
        };
        match init(0) {
            HIP_SUCCESS => Ok(hip),
            e => Err(HipUnavailable::DidNotStart(hip.message(e))),
        }
    }
}

impl Hip {
    fn message(&self, e: HipResult) -> String {
        // SAFETY: HIP returns a static string for every error code.
        let text = unsafe { (self.get_error_string)(e) };
        if text.is_null() {
            return format!("HIP error {e}");
        }
        // SAFETY: non-null, it is a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// `Ok` for success, else the error of a call made `during` something.
    fn check(&self, e: HipResult, during: &'static str) -> Result<(), Error> {
        match e {
            HIP_SUCCESS => Ok(()),
            e => Err(Error::Hip {
                during,
                message: self.message(e),
            }),
        }
    }

    fn select(&self, ordinal: usize) -> Result<(), Error> {
        // SAFETY: a plain call; an ordinal past the device count is an error code.
        self.check(
            unsafe { (self.set_device)(ordinal as c_int) },
            "selecting the GPU",
        )
    }
}

/// Why there is no HIP device, when the runtime is not there.
pub(crate) fn why_absent() -> Option<String> {
    hip().err().map(|e| e.to_string())
}

pub(crate) fn devices() -> Vec<Device> {
    static DEVICES: OnceLock<Vec<Device>> = OnceLock::new();
    DEVICES
        .get_or_init(|| {
            let hip = match hip() {
                Ok(hip) => hip,
                Err(why) => {
                    tracing::debug!("no AMD GPUs: {why}");
                    return Vec::new();
                }
            };
            let mut count = 0;
            // SAFETY: `count` is a live out-parameter.
            if unsafe { (hip.get_device_count)(&mut count) } != HIP_SUCCESS {
                return Vec::new();
            }
            let arches = kfd_arches();
            (0..count.max(0) as usize)
                .filter_map(|ordinal| {
                    let mut name = [0 as c_char; 256];
                    // SAFETY: `name` holds 256 bytes, as the call is told.
                    let named = unsafe {
                        (hip.device_get_name)(
                            name.as_mut_ptr(),
                            name.len() as c_int,
                            ordinal as c_int,
                        )
                    };
                    let name = if named == HIP_SUCCESS {
                        // SAFETY: HIP wrote a NUL-terminated name into the buffer.
                        unsafe { CStr::from_ptr(name.as_ptr()) }
                            .to_string_lossy()
                            .into_owned()
                    } else {
                        "unknown".into()
                    };
                    let arch = arches.get(ordinal)?.clone();
                    Some(Device::Hip {
                        ordinal,
                        name,
                        arch,
                    })
                })
                .collect()
        })
        .clone()
}

/// The GPUs' chips in the kernel driver's node order (CPU nodes have none).
fn kfd_arches() -> Vec<String> {
    let Ok(nodes) = std::fs::read_dir("/sys/class/kfd/kfd/topology/nodes") else {
        return Vec::new();
    };
    let mut found: Vec<(u32, String)> = nodes
        .filter_map(|node| {
            let node = node.ok()?;
            let index: u32 = node.file_name().to_str()?.parse().ok()?;
            let properties = std::fs::read_to_string(node.path().join("properties")).ok()?;
            let version = properties.lines().find_map(|l| {
                l.strip_prefix("gfx_target_version ")?
                    .trim()
                    .parse::<u32>()
                    .ok()
            })?;
            Some((index, arch_name(version)?))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, arch)| arch).collect()
}

/// The chip a `gfx_target_version` names: major, minor and stepping as two decimal
/// digits each, written `gfx` + major + minor and stepping in hexadecimal (90010 is
/// `gfx90a`, 90402 `gfx942`, 110000 `gfx1100`); `None` for 0 (a CPU node).
fn arch_name(version: u32) -> Option<String> {
    if version == 0 {
        return None;
    }
    let (major, minor, stepping) = (version / 10000, version / 100 % 100, version % 100);
    Some(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// The HIP driver of one device. Its copies are synchronous on the null stream, so
/// they are in order with its launches.
pub(crate) struct HipDevice {
    pub ordinal: usize,
    pub device: Device,
}

/// The GPU of `device` (an AMD one), driven by HIP.
pub(crate) fn gpu(ordinal: usize, device: &Device) -> Gpu<HipDevice> {
    Gpu::new(HipDevice {
        ordinal,
        device: device.clone(),
    })
}

/// Device memory from `hipMalloc`, freed when dropped.
pub(crate) struct DeviceMemory {
    ptr: *mut c_void,
    ordinal: usize,
}

// SAFETY: a device address, used only through HIP calls, which are thread-safe.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above.
unsafe impl Sync for DeviceMemory {}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if let Ok(hip) = hip()
            && hip.select(self.ordinal).is_ok()
        {
            // SAFETY: `ptr` came from `hipMalloc` on this device and is freed once.
            unsafe { (hip.free)(self.ptr) };
        }
    }
}

fn unavailable(why: HipUnavailable) -> Error {
    Error::Hip {
        during: "loading the HIP runtime",
        message: why.to_string(),
    }
}

impl HipDevice {
    /// The runtime, with this device selected for the calling thread.
    fn selected(&self) -> Result<&'static Hip, Error> {
        let hip = hip().map_err(unavailable)?;
        hip.select(self.ordinal)?;
        Ok(hip)
    }
}

/// A loaded kernel (a `hipFunction_t`), kept for the process.
pub(crate) struct Function(*mut c_void);

// SAFETY: a handle HIP lets any thread launch.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Driver for HipDevice {
    type Buffer = DeviceMemory;
    type Host = Vec<u8>;
    type Function = Function;
    type Stream = NoStreams;
    type Event = NoStreams;
    type Graph = NoStreams;

    fn device(&self) -> &Device {
        &self.device
    }

    fn subgroup(&self) -> (u32, &'static str) {
        let Device::Hip { arch, .. } = &self.device else {
            unreachable!("a HIP driver is made for HIP devices");
        };
        (wavefront(arch), "wavefronts")
    }

    /// The kernel's code object for the GPU's chip, loaded; the same for every launch
    /// shape.
    fn load(
        &self,
        descriptor: &'static KernelDescriptor,
        _shape: LaunchShape,
    ) -> Result<Function, Error> {
        let Device::Hip { arch, .. } = &self.device else {
            unreachable!("a HIP driver is made for HIP devices");
        };
        let code = crate::compile::code_object(descriptor, arch)?;
        let hip = self.selected()?;
        let mut module = std::ptr::null_mut();
        // SAFETY: `code` is a whole code object; HIP copies what it keeps.
        let e = unsafe { (hip.module_load_data)(&mut module, code.as_ptr().cast()) };
        hip.check(e, "loading the kernel's code object")?;
        let name =
            CString::new(descriptor.body()?.name.as_str()).expect("kernel names have no NUL");
        let mut function = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; `name` is NUL-terminated.
        let e = unsafe { (hip.module_get_function)(&mut function, module, name.as_ptr()) };
        hip.check(e, "finding the kernel in its code object")?;
        Ok(Function(function))
    }

    fn allocate(&self, bytes: usize) -> Result<DeviceMemory, Error> {
        let hip = self.selected()?;
        let mut ptr = std::ptr::null_mut();
        // A zero-length allocation stands in as one byte, as on CUDA.
        // SAFETY: `ptr` is a live out-parameter.
        match unsafe { (hip.malloc)(&mut ptr, bytes.max(1)) } {
            HIP_SUCCESS => Ok(DeviceMemory {
                ptr,
                ordinal: self.ordinal,
            }),
            HIP_ERROR_OUT_OF_MEMORY => Err(Error::OutOfMemory {
                device: self.device.to_string(),
                bytes: bytes as u128,
            }),
            e => Err(Error::Hip {
                during: "allocating device memory",
                message: hip.message(e),
            }),
        }
    }

    fn zero(&self, buffer: &mut DeviceMemory, bytes: usize) -> Result<(), Error> {
        let hip = self.selected()?;
        // SAFETY: the buffer holds at least `bytes` bytes (the protocol's contract).
        hip.check(
            unsafe { (hip.memset)(buffer.ptr, 0, bytes) },
            "zeroing device memory",
        )
    }

    fn address(&self, buffer: &DeviceMemory) -> u64 {
        buffer.ptr as u64
    }

    fn copy_in(&self, data: &[u8], buffer: &DeviceMemory, offset: usize) -> Result<(), Error> {
        let hip = self.selected()?;
        // SAFETY: the buffer holds `offset + data.len()` bytes (the protocol's contract).
        let e = unsafe {
            (hip.memcpy_htod)(
                buffer.ptr.cast::<u8>().add(offset).cast(),
                data.as_ptr().cast(),
                data.len(),
            )
        };
        hip.check(e, "copying to the device")
    }

    unsafe fn copy_out(
        &self,
        buffer: &DeviceMemory,
        offset: usize,
        into: &mut [u8],
    ) -> Result<(), Error> {
        let hip = self.selected()?;
        // SAFETY: `into` is writable for its length, which the buffer holds from
        // `offset`; the copy waits for the launches before it.
        let e = unsafe {
            (hip.memcpy_dtoh)(
                into.as_mut_ptr().cast(),
                buffer.ptr.cast::<u8>().add(offset).cast(),
                into.len(),
            )
        };
        hip.check(e, "copying from the device")
    }

    fn host(&self, bytes: usize) -> Result<Vec<u8>, Error> {
        Ok(vec![0; bytes])
    }

    /// None: a GPU's atomic on host memory needs PCIe atomics the platform may lack, and
    /// a panic report's count is one.
    fn mapped(&self, _bytes: usize) -> Result<Option<(Vec<u8>, u64)>, Error> {
        Ok(None)
    }

    unsafe fn launch_grid(
        &self,
        function: &Function,
        grid: GpuDispatch<'_>,
        _on: Option<&NoStreams>,
    ) -> Result<(), Error> {
        let hip = self.selected()?;
        let mut params = grid.params();
        let ([gx, gy, gz], [bx, by, bz]) = (grid.grid, grid.block);
        // SAFETY: the caller's contract.
        let e = unsafe {
            (hip.module_launch_kernel)(
                function.0,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                grid.shared_bytes,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        hip.check(e, "launching the kernel")
    }

    unsafe fn copy_device(
        &self,
        from: u64,
        to: u64,
        bytes: usize,
        _on: Option<&NoStreams>,
    ) -> Result<(), Error> {
        let hip = self.selected()?;
        // SAFETY: the caller's contract.
        let e = unsafe { (hip.memcpy_dtod)(to as *mut c_void, from as *mut c_void, bytes) };
        hip.check(e, "copying on the device")
    }

    fn synchronize(&self) -> Result<(), Error> {
        let hip = self.selected()?;
        // SAFETY: a plain call.
        hip.check(unsafe { (hip.device_synchronize)() }, "running the kernel")
    }

    fn new_stream(&self) -> Result<NoStreams, Error> {
        Err(Error::Hip {
            during: "creating a stream",
            message: "streams are not supported on AMD GPUs yet; launches without `stream` run in order on the device".into(),
        })
    }

    fn capture_stream(&self) -> Result<NoStreams, Error> {
        self.new_stream()
    }

    fn end_capture(&self, on: &NoStreams) -> Result<NoStreams, Error> {
        match *on {}
    }

    fn launch_graph(&self, graph: &NoStreams, _: &NoStreams) -> Result<(), Error> {
        match *graph {}
    }

    fn record(&self, on: Option<&NoStreams>, _: bool) -> Result<NoStreams, Error> {
        match on {
            Some(on) => match *on {},
            // Only `OFFLOAD_TRACE` asks for events on the one queue.
            None => Err(Error::Hip {
                during: "recording an event",
                message: "events are not supported on AMD GPUs yet".into(),
            }),
        }
    }

    fn wait_event(&self, on: &NoStreams, _: &NoStreams) -> Result<(), Error> {
        match *on {}
    }

    fn event_done(&self, event: &NoStreams) -> Result<bool, Error> {
        match *event {}
    }

    fn event_synchronize(&self, event: &NoStreams) -> Result<(), Error> {
        match *event {}
    }

    fn elapsed_ms(&self, start: &NoStreams, _: &NoStreams) -> Result<f32, Error> {
        match *start {}
    }

    fn stream_synchronize(&self, on: &NoStreams) -> Result<(), Error> {
        match *on {}
    }

    unsafe fn copy_in_async(
        &self,
        on: &NoStreams,
        _: *const u8,
        _: u64,
        _: usize,
    ) -> Result<(), Error> {
        match *on {}
    }

    unsafe fn copy_out_async(
        &self,
        on: &NoStreams,
        _: u64,
        _: *mut u8,
        _: usize,
    ) -> Result<(), Error> {
        match *on {}
    }
}

/// HIP streams are not driven yet: no value of this type exists.
pub(crate) enum NoStreams {}

/// The lanes of a wavefront on `arch`: 64 on GCN and CDNA (`gfx9..` and before), 32 on
/// RDNA (`gfx10..` on), as the lowering compiles for (`AmdTarget::wavefront`).
fn wavefront(arch: &str) -> u32 {
    if arch.len() >= "gfx".len() + 4 {
        32
    } else {
        64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_are_named_from_the_driver_topology() {
        assert_eq!(arch_name(90010).as_deref(), Some("gfx90a"));
        assert_eq!(arch_name(90402).as_deref(), Some("gfx942"));
        assert_eq!(arch_name(110000).as_deref(), Some("gfx1100"));
        assert_eq!(arch_name(0), None);
        assert_eq!(wavefront("gfx942"), 64);
        assert_eq!(wavefront("gfx1100"), 32);
    }

    #[test]
    fn without_the_runtime_the_error_names_the_paths_tried() {
        let tried = vec![
            "libamdhip64.so".to_string(),
            "/opt/rocm/lib/libamdhip64.so".to_string(),
        ];
        assert_eq!(
            HipUnavailable::NotFound { tried }.to_string(),
            "the HIP runtime was not found (tried libamdhip64.so, /opt/rocm/lib/libamdhip64.so); install ROCm or set ROCM_PATH"
        );
        assert!(library_candidates().contains(&"/opt/rocm/lib/libamdhip64.so".to_string()));
    }
}
