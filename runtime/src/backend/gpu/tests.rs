//! The GPU launch protocol over a driver that runs "kernels" on the host at once, in
//! the order it was called: what it is asked to do, and in which order, is the protocol.

use super::*;
use crate::args::{ArgKind, DynamicArg, KernelArg};
use crate::memory::BufferLocation;
use offload_mir::interp::Layout;
use offload_mir::{ScalarTy, Strategy};
use std::sync::atomic::Ordering::Relaxed;

/// Doubles every element of its region and, with a scalar of 10 or more, panics at
/// its `assert` (site 0) after writing; its subgroup shuffle needs whole warps.
static TWICE: KernelDescriptor = KernelDescriptor::new(
    "twice",
    "// offload-mir v1
kernel twice(mut _1: Region<u32, Linear1D>, _2: u32) {
file \"twice.rs\";
let mut _0: ();
let mut _3: bool;
let mut _4: u32;

bb0: {
    _4 = subgroup_shuffle(copy _2, const 0usize); // 1:1
    _3 = Lt(copy _2, const 10u32); // 2:1
    assert(copy _3, \"too big\") -> bb1; // 2:5
}

bb1: {
    return; // 3:1
}
}
",
    &[],
);

/// The host memory a fake buffer is; its address is what kernels write through.
struct Bytes(Box<[std::sync::atomic::AtomicU8]>);

struct Fake {
    device: Device,
    /// Whether panic slabs are host memory the kernels write (as CUDA's mapped memory).
    maps_host_memory: bool,
    /// Every operation, in order.
    log: Mutex<Vec<&'static str>>,
}

impl Fake {
    fn note(&self, op: &'static str) {
        lock(&self.log).push(op);
    }
}

impl Driver for Fake {
    type Buffer = Bytes;
    type Host = Vec<u8>;
    type Function = &'static str;
    // Everything runs at once, in call order: streams and events order nothing more.
    type Stream = ();
    type Event = ();
    type Graph = ();

    fn device(&self) -> &Device {
        &self.device
    }
    fn subgroup(&self) -> (u32, &'static str) {
        (32, "warps")
    }
    fn load(&self, d: &'static KernelDescriptor, _: LaunchShape) -> Result<&'static str, Error> {
        self.note("load");
        Ok(d.name)
    }
    fn allocate(&self, bytes: usize) -> Result<Bytes, Error> {
        self.note("allocate");
        // Not zeroed: what the protocol reads unwritten shows.
        Ok(Bytes((0..bytes.max(1)).map(|_| 0xa5.into()).collect()))
    }
    fn zero(&self, buffer: &mut Bytes, bytes: usize) -> Result<(), Error> {
        self.note("zero");
        buffer.0[..bytes].iter().for_each(|b| b.store(0, Relaxed));
        Ok(())
    }
    fn address(&self, buffer: &Bytes) -> u64 {
        buffer.0.as_ptr() as u64
    }
    fn copy_in(&self, data: &[u8], buffer: &Bytes, offset: usize) -> Result<(), Error> {
        self.note("copy in");
        for (b, &d) in buffer.0[offset..].iter().zip(data) {
            b.store(d, Relaxed);
        }
        Ok(())
    }
    unsafe fn copy_out(&self, buffer: &Bytes, offset: usize, into: &mut [u8]) -> Result<(), Error> {
        self.note("copy out");
        for (i, b) in into.iter_mut().zip(&buffer.0[offset..]) {
            *i = b.load(Relaxed);
        }
        Ok(())
    }
    fn host(&self, bytes: usize) -> Result<Vec<u8>, Error> {
        Ok(vec![0; bytes])
    }
    fn mapped(&self, bytes: usize) -> Result<Option<(Vec<u8>, u64)>, Error> {
        if !self.maps_host_memory {
            return Ok(None);
        }
        self.note("map host memory");
        let host = vec![0; bytes];
        // The fake device writes host memory at its host address.
        let address = host.as_ptr() as u64;
        Ok(Some((host, address)))
    }
    unsafe fn launch_grid(
        &self,
        _: &&'static str,
        grid: GpuDispatch<'_>,
        on: Option<&()>,
    ) -> Result<(), Error> {
        self.note(if on.is_some() {
            "launch on a stream"
        } else {
            "launch"
        });
        // Words: the region's memref (allocated, aligned, offset, len, stride), the
        // scalar, then the panic buffer's memref.
        let w = grid.words;
        let (data, len, scalar, report) = (w[1] as *mut u32, w[3] as usize, w[5], w[7] as *mut i64);
        // SAFETY: the addresses are of live fake buffers of these sizes.
        unsafe {
            for i in 0..len {
                *data.add(i) *= 2;
            }
            if scalar >= 10 {
                *report = 1;
                *report.add(1) = 0;
            }
        }
        Ok(())
    }
    unsafe fn copy_device(
        &self,
        from: u64,
        to: u64,
        bytes: usize,
        _: Option<&()>,
    ) -> Result<(), Error> {
        self.note("copy on device");
        // SAFETY: the addresses are of live fake buffers with these bytes.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
        Ok(())
    }
    fn synchronize(&self) -> Result<(), Error> {
        self.note("synchronize");
        Ok(())
    }
    fn new_stream(&self) -> Result<(), Error> {
        self.note("new stream");
        Ok(())
    }
    fn record(&self, _: Option<&()>, _: bool) -> Result<(), Error> {
        Ok(())
    }
    fn capture_stream(&self) -> Result<(), Error> {
        self.note("capture");
        Ok(())
    }
    fn end_capture(&self, _: &()) -> Result<(), Error> {
        self.note("end capture");
        Ok(())
    }
    fn launch_graph(&self, _: &(), _: &()) -> Result<(), Error> {
        self.note("launch a graph");
        Ok(())
    }
    fn wait_event(&self, _: &(), _: &()) -> Result<(), Error> {
        self.note("wait for an event");
        Ok(())
    }
    fn event_done(&self, _: &()) -> Result<bool, Error> {
        Ok(true)
    }
    fn event_synchronize(&self, _: &()) -> Result<(), Error> {
        Ok(())
    }
    fn elapsed_ms(&self, _: &(), _: &()) -> Result<f32, Error> {
        Ok(0.0)
    }
    fn stream_synchronize(&self, _: &()) -> Result<(), Error> {
        self.note("synchronize a stream");
        Ok(())
    }
    unsafe fn copy_in_async(
        &self,
        _: &(),
        from: *const u8,
        to: u64,
        bytes: usize,
    ) -> Result<(), Error> {
        self.note("copy in on a stream");
        // SAFETY: the addresses are of live host memory and a live fake buffer.
        unsafe { std::ptr::copy_nonoverlapping(from, to as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_out_async(
        &self,
        _: &(),
        from: u64,
        to: *mut u8,
        bytes: usize,
    ) -> Result<(), Error> {
        self.note("copy out on a stream");
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to, bytes) };
        Ok(())
    }
}

/// A fake GPU whose panic slabs are device memory, copied back.
fn fake() -> &'static Gpu<Fake> {
    fake_with(false)
}

/// A fake GPU whose panic slabs are host memory the kernels write.
fn fake_mapping() -> &'static Gpu<Fake> {
    fake_with(true)
}

fn fake_with(maps_host_memory: bool) -> &'static Gpu<Fake> {
    Box::leak(Box::new(Gpu::new(Fake {
        device: Device::Cuda {
            ordinal: 0,
            name: "fake".into(),
            compute_capability: (9, 0),
        },
        maps_host_memory,
        log: Mutex::default(),
    })))
}

/// Launches `twice` over `args` with `threads` threads per workgroup.
fn launch(gpu: &'static Gpu<Fake>, args: &mut [KernelArg<'_>], threads: u32) -> Result<(), Error> {
    gpu.launch(LaunchPlan {
        body: TWICE.body().unwrap().body(),
        descriptor: &TWICE,
        args,
        workgroups: [1, 1, 1],
        workgroup_size: [threads, 1, 1],
        dyn_cache: 0,
        resident_workgroups: None,
        group_base: 0,
        groups: [1, 1, 1],
    })
}

fn host_args<'a>(data: &'a mut [u8], scalar: u32) -> Vec<KernelArg<'a>> {
    let plain: &'static Layout = Box::leak(Box::default());
    [
        DynamicArg::Region {
            elem: ScalarTy::U32,
            strategy: Strategy::Linear1D,
            data,
            layout: plain,
        },
        DynamicArg::Scalar {
            ty: ScalarTy::U32,
            bits: scalar as u64,
        },
    ]
    .into_iter()
    .map(|a| KernelArg::dynamic(a).unwrap())
    .collect()
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn log(gpu: &Gpu<Fake>) -> Vec<&'static str> {
    std::mem::take(&mut *lock(&gpu.driver.log))
}

#[test]
fn a_launch_over_host_data_copies_in_runs_reads_its_panic_buffer_and_copies_back() {
    let gpu = fake();
    let mut data = words(&[1, 2, 3, 4]);
    launch(gpu, &mut host_args(&mut data, 3), 32).unwrap();
    assert_eq!(data, words(&[2, 4, 6, 8]));
    assert_eq!(
        log(gpu),
        [
            "load",
            "allocate",
            "copy in",
            // The panic slab: allocated and zeroed once.
            "allocate",
            "zero",
            "launch",
            "copy out",
            "synchronize",
            "copy out",
            "synchronize"
        ]
    );
    // The kernel is loaded once and the slab is reused.
    launch(gpu, &mut host_args(&mut data, 3), 32).unwrap();
    assert_eq!(data, words(&[4, 8, 12, 16]));
    assert_eq!(
        log(gpu),
        [
            "allocate",
            "copy in",
            "launch",
            "copy out",
            "synchronize",
            "copy out",
            "synchronize"
        ]
    );
}

#[test]
fn a_panic_is_the_launch_error_and_the_host_data_is_not_copied_back() {
    let gpu = fake();
    let mut data = words(&[1, 2, 3, 4]);
    let e = launch(gpu, &mut host_args(&mut data, 10), 32).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    assert_eq!(data, words(&[1, 2, 3, 4]));
    // The panic buffer is read; the region is not.
    assert_eq!(
        log(gpu),
        [
            "load",
            "allocate",
            "copy in",
            "allocate",
            "zero",
            "launch",
            "copy out",
            "synchronize"
        ]
    );
}

#[test]
fn partial_warps_are_refused_for_kernels_with_subgroup_operations() {
    let gpu = fake();
    let mut data = words(&[1]);
    let e = launch(gpu, &mut host_args(&mut data, 3), 48).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid launch: kernel `twice` uses subgroup operations, which need whole warps: 48 threads per workgroup is not a multiple of 32"
    );
    assert!(log(gpu).is_empty());
}

/// `twice` over device memory of `gpu` holding `values`, as a launch argument.
fn device_args(
    gpu: &'static Gpu<Fake>,
    memory: &dyn Memory,
    len: usize,
    scalar: u32,
) -> Vec<KernelArg<'static>> {
    let location = BufferLocation {
        device: Box::leak(Box::new(gpu.driver.device.clone())),
        len,
        address: memory.address(),
        split: None,
        issuer: issuer(),
        hazards: None,
    };
    let region = ArgKind::Region {
        data: std::ptr::null_mut(),
        shape: crate::region::Shape::flat(len),
        elem: ScalarTy::U32,
        strategy: Strategy::Linear1D,
        resident: Some(location),
        window: None,
        indices: None,
    };
    let scalar = ArgKind::Scalar {
        bits: scalar as u64,
        ty: ScalarTy::U32,
    };
    vec![KernelArg::with_kind(region), KernelArg::with_kind(scalar)]
}

#[test]
fn launches_on_device_data_do_not_wait_and_their_panics_reach_only_their_issuer_once() {
    let gpu = fake();
    let memory = gpu.upload(&words(&[1, 2])).unwrap();
    log(gpu);
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    launch(gpu, &mut device_args(gpu, &*memory, 2, 10), 32).unwrap();
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    // Nothing waited; one slab for all three.
    assert_eq!(
        log(gpu),
        ["load", "allocate", "zero", "launch", "launch", "launch"]
    );
    // Another thread's synchronisation waits, but reports nothing of this thread's.
    std::thread::scope(|s| s.spawn(|| gpu.synchronize().unwrap()).join().unwrap());
    let mut out = [0u8; 8];
    let e = memory.read(0, &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    assert_eq!(out, words(&[8, 16])[..]);
    // Reported once; the slab, which holds a panic, is not reused.
    gpu.synchronize().unwrap();
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    assert!(log(gpu).ends_with(&["allocate", "zero", "launch"]));
}

#[test]
fn clean_slabs_go_back_to_the_pool() {
    let gpu = fake();
    let memory = gpu.allocate_zeroed(8).unwrap();
    for _ in 0..SLOTS + 1 {
        launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    }
    let allocations = |log: &[&str]| log.iter().filter(|&&op| op == "allocate").count();
    // The buffer, then two slabs.
    assert_eq!(allocations(&log(gpu)), 3);
    gpu.synchronize().unwrap();
    for _ in 0..SLOTS + 1 {
        launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    }
    gpu.synchronize().unwrap();
    assert_eq!(allocations(&log(gpu)), 0);
}

#[test]
fn copies_on_the_device_are_enqueued_and_read_back_after_a_wait() {
    let gpu = fake();
    let from = gpu.upload(&words(&[1, 2, 3, 4])).unwrap();
    let to = gpu.allocate_zeroed(16).unwrap();
    to.write(0, &words(&[9])).unwrap();
    log(gpu);
    // SAFETY: both are live buffers of the fake GPU with these bytes.
    unsafe { gpu.copy(from.address() + 4, to.address() + 4, 8) }.unwrap();
    let mut out = [0u8; 12];
    to.read(4, &mut out).unwrap();
    assert_eq!(out, words(&[2, 3, 0])[..]);
    assert_eq!(log(gpu), ["copy on device", "copy out", "synchronize"]);
}

#[test]
fn with_mapped_panic_slabs_no_copy_reads_a_panic() {
    let gpu = fake_mapping();
    let mut data = words(&[1, 2, 3, 4]);
    launch(gpu, &mut host_args(&mut data, 3), 32).unwrap();
    assert_eq!(data, words(&[2, 4, 6, 8]));
    // One copy in, one copy back: the panic buffer is read where the kernel wrote it.
    assert_eq!(
        log(gpu),
        [
            "load",
            "allocate",
            "copy in",
            "map host memory",
            "launch",
            "synchronize",
            "copy out",
            "synchronize"
        ]
    );
    let e = launch(gpu, &mut host_args(&mut data, 10), 32).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    assert_eq!(data, words(&[2, 4, 6, 8]));
    assert_eq!(log(gpu), ["allocate", "copy in", "launch", "synchronize"]);
}

#[test]
fn with_mapped_panic_slabs_a_device_read_is_one_copy_and_reports_the_issuers_panic() {
    let gpu = fake_mapping();
    let memory = gpu.upload(&words(&[1, 2])).unwrap();
    log(gpu);
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    launch(gpu, &mut device_args(gpu, &*memory, 2, 10), 32).unwrap();
    std::thread::scope(|s| s.spawn(|| gpu.synchronize().unwrap()).join().unwrap());
    let mut out = [0u8; 8];
    let e = memory.read(0, &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    assert_eq!(out, words(&[4, 8])[..]);
    assert_eq!(
        log(gpu),
        [
            "load",
            "map host memory",
            "launch",
            "launch",
            "synchronize",
            "copy out",
            "synchronize"
        ]
    );
    // A clean slab goes back to the pool; the one with a panic does not.
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    gpu.synchronize().unwrap();
    launch(gpu, &mut device_args(gpu, &*memory, 2, 3), 32).unwrap();
    memory.read(0, &mut out).unwrap();
    assert_eq!(
        log(gpu),
        [
            "map host memory",
            "launch",
            "synchronize",
            "launch",
            "copy out",
            "synchronize"
        ]
    );
}

fn plan<'b, 'a>(args: &'b mut [KernelArg<'a>]) -> LaunchPlan<'b, 'a> {
    LaunchPlan {
        body: TWICE.body().unwrap().body(),
        descriptor: &TWICE,
        args,
        workgroups: [1, 1, 1],
        workgroup_size: [32, 1, 1],
        dyn_cache: 0,
        resident_workgroups: None,
        group_base: 0,
        groups: [1, 1, 1],
    }
}

#[test]
fn a_streams_panic_is_reported_by_its_synchronisation_once() {
    let gpu = fake_mapping();
    let memory = gpu.upload(&words(&[1, 2])).unwrap();
    let (a, b) = (gpu.queue().unwrap(), gpu.queue().unwrap());
    log(gpu);
    a.launch(plan(&mut device_args(gpu, &*memory, 2, 10)))
        .unwrap();
    a.launch(plan(&mut device_args(gpu, &*memory, 2, 3)))
        .unwrap();
    // The device's one queue and the other stream do not report it.
    gpu.synchronize().unwrap();
    b.synchronize().unwrap();
    assert_eq!(
        a.synchronize().unwrap_err().to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    a.synchronize().unwrap();
    assert_eq!(
        log(gpu),
        [
            "load",
            "map host memory",
            "launch on a stream",
            "launch on a stream",
            "synchronize",
            "synchronize a stream",
            "synchronize a stream",
            "synchronize a stream",
        ]
    );
}

#[test]
fn a_dropped_streams_panic_is_reported_by_the_dropping_threads_next_synchronisation() {
    let gpu = fake_mapping();
    let memory = gpu.upload(&words(&[1, 2])).unwrap();
    // One launch of the thread's own first, so that the stream's reports follow a
    // partly used slab.
    gpu.launch(plan(&mut device_args(gpu, &*memory, 2, 3)))
        .unwrap();
    let a = gpu.queue().unwrap();
    a.launch(plan(&mut device_args(gpu, &*memory, 2, 10)))
        .unwrap();
    log(gpu);
    drop(a);
    assert_eq!(log(gpu), ["synchronize a stream"]);
    assert_eq!(
        gpu.synchronize().unwrap_err().to_string(),
        "kernel `twice` panicked at twice.rs:2:5: too big"
    );
    gpu.synchronize().unwrap();
}

#[test]
fn work_on_another_stream_waits_for_exactly_the_uses_it_conflicts_with() {
    use crate::hazards::Hazards;
    let gpu = fake();
    let (a, b) = (gpu.queue().unwrap(), gpu.queue().unwrap());
    let memory = Hazards::default();
    let waits = |queue: &dyn crate::queue::Queue, range: std::ops::Range<u64>, write| {
        log(gpu);
        memory
            .order(queue.id(), &range, write, |m| queue.wait(m))
            .unwrap();
        let mark = queue.record(false).unwrap();
        memory.note(range, write, &mark);
        log(gpu)
            .iter()
            .filter(|&&op| op == "wait for an event")
            .count()
    };
    // A write on `a`; a read of it on `b` waits, a second read on `b` of other bytes
    // does not, nor a write on `a` itself.
    assert_eq!(waits(&*a, 0..100, true), 0);
    assert_eq!(waits(&*b, 50..60, false), 1);
    assert_eq!(waits(&*b, 100..200, false), 0);
    assert_eq!(waits(&*a, 0..10, true), 0);
    // A write on `a` over what `b` read waits for the read.
    assert_eq!(waits(&*a, 55..58, true), 1);
    // A write on `b` over everything waits for `a`'s last use only (its uses run in
    // order), and for none of its own.
    assert_eq!(waits(&*b, 0..200, true), 1);
    // That write covered every earlier use: a read on `a` now waits for it alone.
    assert_eq!(waits(&*a, 0..200, false), 1);
    // Reads on `a` again and again (launches reading one input) keep one use, which a
    // write on `b` waits for.
    for _ in 0..100 {
        assert_eq!(waits(&*a, 0..200, false), 0);
    }
    assert_eq!(memory.recorded(), 2);
    assert_eq!(waits(&*b, 10..20, true), 1);
}
