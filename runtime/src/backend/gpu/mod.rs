//! The GPU launch protocol, once for every GPU backend, over the few operations a GPU
//! driver offers ([`Driver`]: allocate, zero, copy in and out, load a kernel, launch one
//! grid, synchronise). CUDA and HIP implement only those.
//!
//! A launch checks its workgroup against the subgroup width, finds the kernel's loaded
//! code, copies host data to the device, and runs its grids with a panic buffer of its
//! own. A launch that writes host data (or nothing) waits: the panic buffer is read, and
//! the regions it wrote are copied back only if no thread panicked. A launch that writes
//! device buffers and no host data does not wait: its panic buffer belongs to the thread
//! that issued it, and only that thread's next synchronisation of the device
//! (`DeviceBuffer::to_vec`, `offload::synchronize`) reads it, once. Every copy and launch
//! on a device goes to the driver's one queue, so any synchronisation waits for every
//! thread's work; only the reporting is per thread.
//!
//! Panic buffers of asynchronous launches: each launch has one slot of a slab of
//! [`SLOTS`] buffers, taken in launch order. A slab belongs to one issuer on one device
//! until that issuer's next synchronisation there, which waits for the device, reads the
//! slab's used slots and reports the first of them, in launch order, that records a
//! panic. Where the driver maps page-locked host memory into the device (CUDA), slabs
//! are that memory: kernels write their reports to the host, and reading them costs no
//! copy, only the wait. Elsewhere (HIP) they are device memory, and the used slots come
//! back in one copy per slab, enqueued ahead of the wait. Slabs read back as all zeros go back to a pool for any issuer; a slab
//! with a panic is freed. So a launch needs no allocation, zeroing or synchronisation of
//! its own (a new slab every [`SLOTS`] launches, while the pool is empty), and a slab is
//! reused only after every launch that may write it has finished and was checked.

use super::Backend;
use crate::compile::LaunchShape;
use crate::memory::Memory;
use crate::panic::{Issuer, PANIC_BUFFER_WORDS, PanicWords, issuer};
use crate::plan::{GpuDispatch, LaunchPlan, Words, dispatch_grids};
use crate::recent::Recent;
use crate::{Device, Error, KernelDescriptor};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the protocol asks of a GPU driver. Copies and launches go to one queue per
/// device, in order: each runs after everything enqueued before it, and
/// [`Driver::synchronize`] waits for all of them.
pub(crate) trait Driver: Send + Sync + 'static {
    /// Device memory, freed when dropped, after the work enqueued before.
    type Buffer: Send + Sync + 'static;
    /// Host memory panic words are in: copied into (page-locked where the driver has
    /// it, so that the copy need not hold up the host), or written by the kernels
    /// themselves ([`Driver::mapped`]).
    type Host: std::ops::DerefMut<Target = [u8]> + Send + Sync + 'static;
    /// A kernel loaded on the device.
    type Function: Send + Sync + 'static;
    /// A queue of the user's ([`crate::Stream`]): its work runs in order, after what the
    /// device's one queue holds when it is enqueued, and that queue's later work runs
    /// after it (CUDA's blocking streams next to the legacy default stream), so that the
    /// one queue's copies, reads and frees never overtake a stream's work.
    type Stream: Send + Sync + 'static;
    /// A point in a stream's work, to wait for or time.
    type Event: Send + Sync + 'static;
    /// Recorded work, ready to replay (CUDA's executable graph).
    type Graph: Send + Sync + 'static;

    /// The device, as errors name it.
    fn device(&self) -> &Device;
    /// The lanes of a subgroup, and what the vendor calls subgroups ("warps").
    fn subgroup(&self) -> (u32, &'static str);
    /// The kernel's code for this device and launch shape, compiled or built ahead of
    /// time ([`crate::compile`]), loaded.
    fn load(
        &self,
        descriptor: &'static KernelDescriptor,
        shape: LaunchShape,
    ) -> Result<Self::Function, Error>;
    /// `bytes` of device memory (one byte for none), not zeroed; more than the device
    /// can hold is [`Error::OutOfMemory`].
    fn allocate(&self, bytes: usize) -> Result<Self::Buffer, Error>;
    /// Zeroes the buffer's first `bytes`.
    fn zero(&self, buffer: &mut Self::Buffer, bytes: usize) -> Result<(), Error>;
    /// The device address of the buffer's first byte.
    fn address(&self, buffer: &Self::Buffer) -> u64;
    /// Copies `data` into the buffer from byte `offset` on; `data` may be reused as soon
    /// as this returns.
    fn copy_in(&self, data: &[u8], buffer: &Self::Buffer, offset: usize) -> Result<(), Error>;
    /// Enqueues a copy of the buffer's bytes from `offset` on into `into`.
    ///
    /// # Safety
    ///
    /// `into` must stay alive and unread until the next [`Driver::synchronize`] returns.
    unsafe fn copy_out(
        &self,
        buffer: &Self::Buffer,
        offset: usize,
        into: &mut [u8],
    ) -> Result<(), Error>;
    /// `bytes` of zeroed host memory for [`Driver::copy_out`].
    fn host(&self, bytes: usize) -> Result<Self::Host, Error>;
    /// `bytes` of zeroed page-locked host memory that kernels write directly, and its
    /// address on the device; what the device wrote is on the host once
    /// [`Driver::synchronize`] has returned. `None` where the driver does not map host
    /// memory for this (then panic buffers live on the device and are copied back).
    fn mapped(&self, bytes: usize) -> Result<Option<(Self::Host, u64)>, Error>;
    /// Enqueues one grid of `function`.
    ///
    /// # Safety
    ///
    /// The words must match the kernel's ABI, and every buffer they point to must live
    /// until the grid has run.
    unsafe fn launch_grid(
        &self,
        function: &Self::Function,
        grid: GpuDispatch<'_>,
        on: Option<&Self::Stream>,
    ) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` from device address `from` to device address `to`, on
    /// stream `on` or the device's one queue.
    ///
    /// # Safety
    ///
    /// Both ranges must lie in live memory of this device, and must not overlap.
    unsafe fn copy_device(
        &self,
        from: u64,
        to: u64,
        bytes: usize,
        on: Option<&Self::Stream>,
    ) -> Result<(), Error>;
    /// Waits for everything enqueued on the device's one queue (and so for every stream's
    /// work enqueued before).
    fn synchronize(&self) -> Result<(), Error>;

    /// A new stream.
    fn new_stream(&self) -> Result<Self::Stream, Error>;
    /// A new stream that records the work enqueued on it instead of running it, until
    /// [`Driver::end_capture`]. It is not ordered against the device's one queue, which
    /// other threads go on using meanwhile.
    fn capture_stream(&self) -> Result<Self::Stream, Error>;
    /// Ends a [`Driver::capture_stream`]'s recording: what replays it.
    fn end_capture(&self, on: &Self::Stream) -> Result<Self::Graph, Error>;
    /// Enqueues a replay of `graph` on `on`.
    fn launch_graph(&self, graph: &Self::Graph, on: &Self::Stream) -> Result<(), Error>;
    /// An event at the end of the work enqueued on `on` (or the device's one queue) so
    /// far; `timing` if it is to be timed.
    fn record(&self, on: Option<&Self::Stream>, timing: bool) -> Result<Self::Event, Error>;
    /// Makes `on`'s later work wait for `event` on the device; the host goes on.
    fn wait_event(&self, on: &Self::Stream, event: &Self::Event) -> Result<(), Error>;
    /// Whether the work before `event` has finished, without waiting.
    fn event_done(&self, event: &Self::Event) -> Result<bool, Error>;
    /// Waits on the host for the work before `event`.
    fn event_synchronize(&self, event: &Self::Event) -> Result<(), Error>;
    /// Milliseconds from `start` to `end`, both timed events that have passed.
    fn elapsed_ms(&self, start: &Self::Event, end: &Self::Event) -> Result<f32, Error>;
    /// Waits on the host for everything enqueued on `on`.
    fn stream_synchronize(&self, on: &Self::Stream) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` from host address `from` to device address `to` on `on`.
    ///
    /// # Safety
    ///
    /// Both ranges must be live, the host one page-locked ([`Driver::host`]) and not
    /// written, until the copy has run.
    unsafe fn copy_in_async(
        &self,
        on: &Self::Stream,
        from: *const u8,
        to: u64,
        bytes: usize,
    ) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` from device address `from` to host address `to` on `on`.
    ///
    /// # Safety
    ///
    /// Both ranges must be live, the host one page-locked and neither read nor written,
    /// until the copy has run.
    unsafe fn copy_out_async(
        &self,
        on: &Self::Stream,
        from: u64,
        to: *mut u8,
        bytes: usize,
    ) -> Result<(), Error>;
}

/// Panic buffers per slab: 14 KiB. A synchronisation reads only the slots its launches
/// used, one copy per slab.
pub(crate) const SLOTS: usize = 256;

/// The bytes of one panic buffer.
const PANIC_BYTES: usize = PANIC_BUFFER_WORDS * std::mem::size_of::<i64>();

/// One GPU, driven by `D`, with the protocol's state: its loaded kernels, the pool of
/// zeroed panic-buffer slabs, and every issuer's launches not yet synchronised.
pub(crate) struct Gpu<D: Driver> {
    driver: D,
    /// Loaded kernels by descriptor address and launch shape.
    functions: Mutex<HashMap<(usize, LaunchShape), Loaded<D>>>,
    slabs: Mutex<Vec<Slab<D>>>,
    pending: Mutex<HashMap<Issuer, Entry<D>>>,
    /// Launches whose issuer ended before synchronising: nobody is left to report their
    /// panics to, but their slabs and inputs are released by the next synchronisation.
    retired: Mutex<Vec<Pending<D>>>,
}

/// `SLOTS` panic buffers, zeroed while in the pool: host memory the kernels write
/// through `address` where the driver maps it, else device memory whose used slots are
/// copied into `host` before a synchronisation.
struct Slab<D: Driver> {
    /// The device memory the kernels write, when `host` is not mapped.
    device: Option<D::Buffer>,
    address: u64,
    host: D::Host,
}

impl<D: Driver> Slab<D> {
    /// Panic buffer `slot` as last copied to the host (after a synchronisation).
    fn words(&self, slot: usize) -> PanicWords {
        let bytes = &self.host[slot * PANIC_BYTES..(slot + 1) * PANIC_BYTES];
        std::array::from_fn(|i| {
            i64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("eight bytes"))
        })
    }
}

/// One issuer's asynchronous launches on one device since its last synchronisation there.
struct Pending<D: Driver> {
    /// Launch `i` reports into slot `i % SLOTS` of slab `i / SLOTS`.
    slabs: Vec<Slab<D>>,
    /// Each launch's kernel, in launch order.
    kernels: Vec<&'static KernelDescriptor>,
    /// Device copies of the launches' host inputs, kept alive until they have run.
    inputs: Vec<D::Buffer>,
}

impl<D: Driver> Default for Pending<D> {
    fn default() -> Self {
        Pending {
            slabs: Vec::new(),
            kernels: Vec::new(),
            inputs: Vec::new(),
        }
    }
}

type Entry<D> = Arc<Mutex<Pending<D>>>;

type Loaded<D> = Arc<<D as Driver>::Function>;

/// A value of some GPU's protocol, in a cache shared by every driver type.
type Shared = Arc<dyn Any + Send + Sync>;

/// A launch's arguments on the device: the kernel ABI's words, the device copies of host
/// data (kept alive until the kernel has run), and which of them go back to the host.
struct Staged<D: Driver> {
    words: Words,
    buffers: Vec<D::Buffer>,
    /// Host data the kernel may write: the buffer's position in `buffers`, then the
    /// host slice (pointer, bytes) and where it sits in the buffer.
    written: Vec<(usize, *mut u8, usize, usize)>,
}

// A thread's recent loaded kernels and its own pending entries, found without the shared
// locks: keyed by the GPU's address, since a `thread_local!` cannot be generic.
thread_local! {
    static FUNCTIONS: std::cell::RefCell<Recent<(usize, usize, LaunchShape), Shared>> =
        const { std::cell::RefCell::new(Recent::new()) };
    static MINE: std::cell::RefCell<Vec<(usize, Shared)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl<D: Driver> Gpu<D> {
    pub(crate) fn new(driver: D) -> Self {
        Gpu {
            driver,
            functions: Mutex::default(),
            slabs: Mutex::default(),
            pending: Mutex::default(),
            retired: Mutex::default(),
        }
    }

    fn id(&self) -> usize {
        self as *const Self as usize
    }

    /// The loaded kernel for a launch: compiled per launch shape, which the code declares.
    fn function(&self, launch: &LaunchPlan<'_, '_>) -> Result<Loaded<D>, Error> {
        let shape = LaunchShape {
            block_size: launch.workgroup_size,
            resident_workgroups: launch.resident_workgroups,
            // Not under a register budget: there the tile loop of the matrix product spilled
            // 4 bytes with it and ran 19% slower (`ptxas -v`, RESULTS.md run 43).
            whole_grid: launch.group_base == 0
                && !crate::plan::folds(launch.workgroups)
                && launch.resident_workgroups.is_none(),
        };
        let key = (launch.descriptor as *const KernelDescriptor as usize, shape);
        let recent_key = (self.id(), key.0, shape);
        let recent = FUNCTIONS.try_with(|r| r.borrow().get(&recent_key));
        if let Ok(Some(f)) = recent
            && let Ok(f) = f.downcast::<D::Function>()
        {
            return Ok(f);
        }
        let found = lock(&self.functions).get(&key).cloned();
        let f = match found {
            Some(f) => f,
            None => {
                let loaded = Arc::new(self.driver.load(launch.descriptor, shape)?);
                // Threads that missed at once each loaded the kernel; the first one stored
                // is everyone's, and the others' are dropped before anything ran from them.
                lock(&self.functions).entry(key).or_insert(loaded).clone()
            }
        };
        let any: Shared = f.clone();
        let _ = FUNCTIONS.try_with(|r| r.borrow_mut().put(recent_key, any));
        Ok(f)
    }

    /// Copies each argument with host data (and an `Indexed` region's indices) to the
    /// device.
    fn stage(&self, launch: &LaunchPlan<'_, '_>) -> Result<Staged<D>, Error> {
        let mut buffers = Vec::new();
        let mut written = Vec::new();
        let words = crate::plan::abi_words(launch.args, |kind, data, bytes| {
            // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes.
            let host = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
            let (offset, full) = kind.placement().expect("arguments with data are placed");
            let mut buffer = self.driver.allocate(full)?;
            if bytes < full {
                self.driver.zero(&mut buffer, full)?;
            }
            if bytes > 0 {
                self.driver.copy_in(host, &buffer, offset)?;
            }
            if kind.copied_back() && bytes > 0 {
                written.push((buffers.len(), data, bytes, offset));
            }
            let address = self.driver.address(&buffer);
            buffers.push(buffer);
            Ok(address)
        })?;
        Ok(Staged {
            words,
            buffers,
            written,
        })
    }

    /// A launch that writes device buffers and no host data: enqueued (on stream `on`, or
    /// the device's one queue), not waited for; its panic is recorded in `pending`.
    fn launch_async(
        &'static self,
        function: &D::Function,
        launch: &LaunchPlan<'_, '_>,
        staged: Staged<D>,
        pending: &Mutex<Pending<D>>,
        on: Option<&D::Stream>,
    ) -> Result<(), Error> {
        // Held until the launch is enqueued, so that a synchronisation that takes these
        // launches finds every one of them enqueued, and waits for it.
        let mut pending = lock(pending);
        let slot = pending.kernels.len() % SLOTS;
        if slot == 0 {
            let slab = self.slab()?;
            pending.slabs.push(slab);
        }
        let slab = pending
            .slabs
            .last()
            .expect("the launch's slab was just ensured");
        let report = slab.address + (slot * PANIC_BYTES) as u64;
        // Recorded before the launch: if it fails, its slot just stays zero.
        pending.kernels.push(launch.descriptor);
        pending.inputs.extend(staged.buffers);
        // SAFETY: the slot and the copies of host inputs live in `pending` until a
        // synchronisation after the kernel has finished.
        unsafe { self.enqueue(function, launch, staged.words, report, on) }
    }

    /// A launch that writes host data (or nothing): run to its end, its panic read, the
    /// regions it wrote copied back.
    fn launch_sync(
        &'static self,
        function: &D::Function,
        launch: &LaunchPlan<'_, '_>,
        staged: Staged<D>,
        issuer: Issuer,
    ) -> Result<(), Error> {
        // Its own panic buffer (slot 0 of a slab), read right away. It reports only its
        // own panic; the issuer's earlier asynchronous launches stay pending for its next
        // synchronisation, but the copies of their host inputs are freed once the wait
        // below has covered them.
        let mut slab = self.slab()?;
        let Staged {
            words,
            buffers,
            written,
        } = staged;
        // SAFETY: `slab` and `buffers` live until the device is synchronised below.
        unsafe { self.enqueue(function, launch, words, slab.address, None) }?;
        if let Some(device) = &slab.device {
            // Enqueued behind the kernel: the wait below covers both.
            // SAFETY: the slab's host memory is read only after that wait.
            unsafe {
                self.driver
                    .copy_out(device, 0, &mut slab.host[..PANIC_BYTES])
            }?;
        }
        let entry = lock(&self.pending).get(&issuer).cloned();
        let finished_inputs = entry.map(|entry| std::mem::take(&mut lock(&entry).inputs));
        self.driver.synchronize()?;
        drop(finished_inputs);
        if let Some(error) = decode(launch.descriptor, &slab.words(0)) {
            // The slab is freed rather than zeroed for reuse: panics are rare.
            return Err(error);
        }
        lock(&self.slabs).push(slab);
        for (buffer, data, bytes, offset) in written {
            // SAFETY: `data` is the region's exclusively borrowed slice of `bytes` bytes,
            // read by the caller only after the wait below.
            unsafe {
                let host = std::slice::from_raw_parts_mut(data, bytes);
                self.driver.copy_out(&buffers[buffer], offset, host)?;
            }
        }
        self.driver.synchronize()
    }

    /// Enqueues the kernel's grids with argument words `words`, then the panic buffer at
    /// `report` and the hidden GPU words, on stream `on` or the device's one queue.
    ///
    /// # Safety
    ///
    /// Every buffer `words` and `report` point to must live until the kernel has finished.
    unsafe fn enqueue(
        &'static self,
        function: &D::Function,
        launch: &LaunchPlan<'_, '_>,
        words: Words,
        report: u64,
        on: Option<&D::Stream>,
    ) -> Result<(), Error> {
        // A driver without events on the one queue (HIP) goes untimed.
        let traced = crate::trace::enabled();
        let start = traced.then(|| self.driver.record(on, true).ok()).flatten();
        dispatch_grids(launch, words, report, |grid| {
            // SAFETY: the words follow the kernel ABI the code was compiled with (checked
            // against the MIR signature); the caller keeps what they point to alive.
            unsafe { self.driver.launch_grid(function, grid, on) }
        })?;
        if let Some(start) = start {
            self.trace(launch.descriptor.name, start, on);
        }
        Ok(())
    }

    /// Hands `OFFLOAD_TRACE` the work enqueued on `on` since `start`.
    fn trace(&'static self, what: &'static str, start: D::Event, on: Option<&D::Stream>) {
        if let Ok(end) = self.driver.record(on, true) {
            let timed = Timed {
                gpu: self,
                start,
                end,
            };
            crate::trace::pending(what, Box::new(timed));
        }
    }

    /// A zeroed slab: from the pool, or newly allocated.
    fn slab(&self) -> Result<Slab<D>, Error> {
        if let Some(slab) = lock(&self.slabs).pop() {
            return Ok(slab);
        }
        let bytes = SLOTS * PANIC_BYTES;
        if let Some((host, address)) = self.driver.mapped(bytes)? {
            return Ok(Slab {
                device: None,
                address,
                host,
            });
        }
        let mut buffer = self.driver.allocate(bytes)?;
        self.driver.zero(&mut buffer, bytes)?;
        Ok(Slab {
            address: self.driver.address(&buffer),
            device: Some(buffer),
            host: self.driver.host(bytes)?,
        })
    }

    /// The calling issuer's pending launches on this GPU.
    fn entry(&self, issuer: Issuer) -> Entry<D> {
        // An issuer that ends with launches pending hands them over (see `retire`).
        static HOOKED: std::sync::Once = std::sync::Once::new();
        HOOKED.call_once(|| crate::panic::on_issuer_exit(super::retire));
        // The calling thread's own entries, kept without the lock: they leave `pending`
        // only when this thread ends (`retire`), and this cache ends with it. (A launch
        // made while the thread ends, `Issuer::LATE`, is not cached.)
        let own = issuer != Issuer::LATE && issuer == crate::panic::issuer();
        let id = self.id();
        let cached = |mine: &std::cell::RefCell<Vec<(usize, Shared)>>| {
            let mine = mine.borrow();
            let found = mine.iter().find(|(g, _)| *g == id);
            found.and_then(|(_, e)| e.clone().downcast::<Mutex<Pending<D>>>().ok())
        };
        if own && let Ok(Some(entry)) = MINE.try_with(cached) {
            return entry;
        }
        let entry = lock(&self.pending).entry(issuer).or_default().clone();
        if own {
            let any: Shared = entry.clone();
            let _ = MINE.try_with(|mine| mine.borrow_mut().push((id, any)));
        }
        entry
    }

    /// Waits for everything launched on the device, with `read` (a buffer, the byte to
    /// start at, and where on the host the bytes go) copied too, behind the panic buffers' copies, so that
    /// one wait covers everything; then reports the first panic, in launch order, of the
    /// calling thread's asynchronous launches that no earlier synchronisation reported.
    /// Other threads' launches are never reported here. A panic is reported even though
    /// the bytes were copied.
    fn settle(&self, read: Option<(&D::Buffer, usize, &mut [u8])>) -> Result<(), Error> {
        // Taken before waiting: every launch in them was enqueued before it was recorded
        // (under the entry's lock), so the wait below covers it.
        let entry = lock(&self.pending).get(&issuer()).cloned();
        let mut mine = entry
            .as_ref()
            .map(|entry| std::mem::take(&mut *lock(entry)));
        let mut orphans = std::mem::take(&mut *lock(&self.retired));
        let mut copied = Ok(());
        for pending in orphans.iter_mut().chain(mine.iter_mut()) {
            copied = copied.and(self.enqueue_panic_reads(pending));
        }
        if let Some((buffer, offset, into)) = read {
            // SAFETY: `into` is read by the caller only after the wait below.
            copied = copied.and(unsafe { self.driver.copy_out(buffer, offset, into) });
        }
        self.driver.synchronize()?;
        copied?;
        crate::trace::resolve(false);
        for mut pending in orphans {
            if let Err(e) = self.check(&mut pending) {
                tracing::warn!(
                    "not reported, since the thread that launched it ended without synchronising: {e}"
                );
            }
        }
        let Some(mut pending) = mine else {
            return Ok(());
        };
        let result = self.check(&mut pending);
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

    /// Enqueues the copies of `pending`'s used panic buffers to their slabs' host memory
    /// (none for slabs the kernels write on the host).
    fn enqueue_panic_reads(&self, pending: &mut Pending<D>) -> Result<(), Error> {
        for (slab, kernels) in pending.slabs.iter_mut().zip(pending.kernels.chunks(SLOTS)) {
            let Some(device) = &slab.device else {
                continue;
            };
            // Only the used slots: nothing writes the others, which stay zero.
            let used = &mut slab.host[..kernels.len() * PANIC_BYTES];
            // SAFETY: the host memory is read only after the caller's synchronisation.
            unsafe { self.driver.copy_out(device, 0, used) }?;
        }
        Ok(())
    }

    /// Reads finished launches' panic buffers, copied to the host by
    /// [`Gpu::enqueue_panic_reads`] before a synchronisation: the first panic they
    /// record, in launch order. Slabs without one go back to the pool. Leaves
    /// `pending`'s lists empty.
    fn check(&self, pending: &mut Pending<D>) -> Result<(), Error> {
        // The launches have finished with them.
        pending.inputs.clear();
        let mut kernels = std::mem::take(&mut pending.kernels);
        let mut first = None;
        let mut clean = Vec::new();
        for (slab, kernels) in pending.slabs.drain(..).zip(kernels.chunks(SLOTS)) {
            if first.is_none() {
                first = (kernels.iter().enumerate())
                    .find_map(|(slot, kernel)| decode(kernel, &slab.words(slot)));
            }
            if slab.host[..kernels.len() * PANIC_BYTES]
                .iter()
                .all(|&b| b == 0)
            {
                clean.push(slab);
            }
        }
        lock(&self.slabs).extend(clean);
        kernels.clear();
        pending.kernels = kernels;
        first.map_or(Ok(()), Err)
    }
}

impl<D: Driver> Gpu<D> {
    /// Refuses a workgroup of partial subgroups for a kernel that uses subgroup
    /// operations, then finds the kernel's loaded code.
    fn checked_function(&self, launch: &LaunchPlan<'_, '_>) -> Result<Loaded<D>, Error> {
        let threads: u32 = launch.workgroup_size.iter().product();
        let (width, subgroups) = self.driver.subgroup();
        // The body is scanned only for launches of partial subgroups.
        if !threads.is_multiple_of(width) && launch.body.uses_subgroups() {
            return Err(Error::InvalidLaunch(format!(
                "kernel `{}` uses subgroup operations, which need whole {subgroups}: {threads} threads per workgroup is not a multiple of {width}",
                launch.body.name
            )));
        }
        self.function(launch)
    }
}

/// A launch timed for `OFFLOAD_TRACE=summary`: events before and after it.
struct Timed<D: Driver> {
    gpu: &'static Gpu<D>,
    start: D::Event,
    end: D::Event,
}

impl<D: Driver> crate::trace::Timing for Timed<D> {
    fn seconds(&self, wait: bool) -> Result<Option<f64>, Error> {
        let driver = &self.gpu.driver;
        if wait {
            driver.event_synchronize(&self.end)?;
        } else if !driver.event_done(&self.end)? {
            return Ok(None);
        }
        Ok(Some(
            f64::from(driver.elapsed_ms(&self.start, &self.end)?) / 1e3,
        ))
    }
}

impl<D: Driver> Backend for Gpu<D> {
    fn launch(&'static self, launch: LaunchPlan<'_, '_>) -> Result<(), Error> {
        let function = self.checked_function(&launch)?;
        let staged = self.stage(&launch)?;
        let copied_back = |host: bool| {
            (launch.args.iter()).any(|a| {
                a.kind.copied_back()
                    && if host {
                        a.kind.bytes().is_some()
                    } else {
                        a.kind.resident().is_some()
                    }
            })
        };
        // The thread that made the arguments: the caller of `offload!`, also when this is
        // one share of a `device = all` launch, run on a helper thread.
        let issuer = (launch.args.iter())
            .find_map(|a| a.kind.resident())
            .map_or_else(issuer, |r| r.issuer);
        // A launch that writes device buffers and no host data is asynchronous: the host
        // goes on, and a panic surfaces at its issuer's next synchronisation.
        if copied_back(false) && !copied_back(true) {
            let entry = self.entry(issuer);
            return self.launch_async(&function, &launch, staged, &entry, None);
        }
        self.launch_sync(&function, &launch, staged, issuer)
    }

    fn queue(&'static self) -> Result<std::sync::Arc<dyn crate::queue::Queue>, Error> {
        queue::GpuQueue::open(self)
    }

    fn pinned(&'static self, bytes: usize) -> Result<Box<dyn crate::queue::HostMemory>, Error> {
        Ok(Box::new(self.driver.host(bytes)?))
    }

    fn recorder(&'static self) -> Result<std::sync::Arc<dyn crate::queue::Recording>, Error> {
        queue::GpuQueue::recording(self)
    }

    fn synchronize(&self) -> Result<(), Error> {
        self.settle(None)
    }

    fn allocate_zeroed(&'static self, bytes: u128) -> Result<Box<dyn Memory>, Error> {
        let size = usize::try_from(bytes).map_err(|_| Error::OutOfMemory {
            device: self.driver.device().to_string(),
            bytes,
        })?;
        let mut buffer = self.driver.allocate(size)?;
        self.driver.zero(&mut buffer, size.max(1))?;
        Ok(Box::new(DeviceMemory { buffer, gpu: self }))
    }

    fn upload(&'static self, data: &[u8]) -> Result<Box<dyn Memory>, Error> {
        let mut buffer = self.driver.allocate(data.len())?;
        if data.is_empty() {
            self.driver.zero(&mut buffer, 1)?;
        } else {
            self.driver.copy_in(data, &buffer, 0)?;
        }
        Ok(Box::new(DeviceMemory { buffer, gpu: self }))
    }

    unsafe fn copy(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe { self.driver.copy_device(from, to, bytes, None) }
    }

    fn retire(&self, issuer: Issuer) {
        // Makes no driver call: this runs while the thread's locals are destroyed.
        let Some(entry) = lock(&self.pending).remove(&issuer) else {
            return;
        };
        let pending = std::mem::take(&mut *lock(&entry));
        if !pending.kernels.is_empty() {
            lock(&self.retired).push(pending);
        }
    }
}

/// Memory on a GPU.
struct DeviceMemory<D: Driver> {
    buffer: D::Buffer,
    gpu: &'static Gpu<D>,
}

impl<D: Driver> Memory for DeviceMemory<D> {
    fn address(&self) -> u64 {
        self.gpu.driver.address(&self.buffer)
    }

    fn read(&self, offset: usize, into: &mut [u8]) -> Result<(), Error> {
        // Waits for the launches that may write the memory, and reports this thread's
        // unreported panics on the device; the copy is enqueued behind the panic
        // buffers' own, so that one wait covers both.
        if into.is_empty() {
            return self.gpu.settle(None);
        }
        self.gpu.settle(Some((&self.buffer, offset, into)))
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        if data.is_empty() {
            return Ok(());
        }
        self.gpu.driver.copy_in(data, &self.buffer, offset)
    }
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

mod queue;
#[cfg(test)]
mod tests;
