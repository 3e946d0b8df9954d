//! The CPU backend: runs the kernel's lowered code (not its Rust body) on every core. The
//! launch's workgroups are split into one contiguous share per host thread; each share
//! runs its workgroups one after another, each with its own shared memory.
//!
//! The lowering runs a workgroup's threads one after another in one call; a kernel with
//! barriers runs them once per phase between barriers (see the lowering's
//! `workgroup_loops`), so no thread passes a barrier before every unfinished thread of
//! its workgroup has reached it, and threads that have returned do not count, as on a GPU.
//!
//! A failed launch leaves the caller's data untouched, as on a GPU. Host regions of the
//! one-dimensional strategies, whose threads each own a contiguous piece, are written
//! where they live: each share first copies the pieces it is about to run to a backup
//! (while they are in its cache for the kernel), and the backups go back if a thread
//! panicked; a kernel without a panic site needs none. Other written host data is copied
//! into a scratch buffer for the kernel and copied back only if no thread panicked.

use super::Backend;
use crate::panic::{PANIC_BUFFER_WORDS, PanicWords};
use crate::{Device, Error, memory::Memory, plan::LaunchPlan as Launch};
use offload_mir::abi::{CpuEntry, CpuLeading};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// The host's physical memory in bytes, where the platform says (Linux).
fn host_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The most dynamic shared memory a CPU workgroup may have: the largest NVIDIA GPUs'
/// (227 KiB), so a program that runs here fits there too.
const MAX_DYNAMIC_SHARED: u32 = 227 * 1024;

/// The CPU backend.
pub(crate) struct Cpu;

impl Backend for Cpu {
    fn launch(&'static self, plan: Launch<'_, '_>) -> Result<(), Error> {
        run(plan)
    }

    /// Launches on the CPU finish before they return.
    fn synchronize(&self) -> Result<(), Error> {
        Ok(())
    }

    fn allocate_zeroed(&'static self, bytes: u128) -> Result<Box<dyn Memory>, Error> {
        let out_of_memory = || Error::OutOfMemory {
            device: Device::Cpu.to_string(),
            bytes,
        };
        // The CPU backend's device memory is the host's: a buffer larger than it is
        // refused up front, since an overcommitting kernel would hand out the address
        // space and kill the process when it is touched.
        if host_memory_bytes().is_some_and(|total| bytes > total as u128) {
            return Err(out_of_memory());
        }
        let words = zeroed_words(bytes).ok_or_else(out_of_memory)?;
        Ok(Box::new(HostMemory::new(words)))
    }

    fn upload(&'static self, data: &[u8]) -> Result<Box<dyn Memory>, Error> {
        let mut words = vec![0u64; data.len().div_ceil(8)];
        // SAFETY: `words` has room for `data`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                data.len(),
            )
        };
        Ok(Box::new(HostMemory::new(words)))
    }

    unsafe fn copy(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error> {
        // SAFETY: the caller's contract: both are host memory of this backend's buffers.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
        Ok(())
    }

    fn queue(&'static self) -> Result<Arc<dyn crate::queue::Queue>, Error> {
        Ok(Arc::new(InOrder {
            id: crate::queue::next_queue_id(),
        }))
    }

    fn recorder(&'static self) -> Result<Arc<dyn crate::queue::Recording>, Error> {
        Ok(Arc::new(Recorder {
            id: crate::queue::next_queue_id(),
            ops: Mutex::new(Replay(Vec::new())),
        }))
    }

    fn pinned(&'static self, bytes: usize) -> Result<Box<dyn crate::queue::HostMemory>, Error> {
        let words = zeroed_words(bytes as u128).ok_or_else(|| Error::OutOfMemory {
            device: Device::Cpu.to_string(),
            bytes: bytes as u128,
        })?;
        Ok(Box::new(HostBytes { words, bytes }))
    }
}

/// A stream on the CPU: its work runs on the calling thread, at once, so it is finished
/// when enqueued and a panic is the launch's own error.
struct InOrder {
    id: u64,
}

impl crate::queue::Queue for InOrder {
    fn id(&self) -> u64 {
        self.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn launch(&self, plan: Launch<'_, '_>) -> Result<(), Error> {
        run(plan)
    }

    unsafe fn copy_in(&self, from: *const u8, to: u64, bytes: usize) -> Result<(), Error> {
        // SAFETY: the caller's contract: live host memory on both sides.
        unsafe { std::ptr::copy_nonoverlapping(from, to as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn copy_out(&self, from: u64, to: *mut u8, bytes: usize) -> Result<(), Error> {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to, bytes) };
        Ok(())
    }

    unsafe fn copy_device(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error> {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
        Ok(())
    }

    fn record(&self, _timing: bool) -> Result<Arc<dyn crate::mark::Mark>, Error> {
        Ok(Passed::now(self.id))
    }

    fn wait(&self, _: &dyn crate::mark::Mark) -> Result<(), Error> {
        Ok(())
    }

    fn synchronize(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// Records a CPU stream's work for a graph: each launch as its checked plan (over
/// device-resident data and scalars, which a stream's launches are limited to), each
/// copy as its addresses. A replay runs them in order on the calling thread.
struct Recorder {
    id: u64,
    ops: Mutex<Replay>,
}

enum Op {
    Launch {
        descriptor: &'static crate::KernelDescriptor,
        args: Vec<crate::args::ArgKind>,
        workgroups: [u32; 3],
        workgroup_size: [u32; 3],
        dyn_cache: u32,
    },
    Copy {
        from: u64,
        to: u64,
        bytes: usize,
    },
}

impl Recorder {
    fn push(&self, op: Op) -> Result<(), Error> {
        self.ops
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .push(op);
        Ok(())
    }
}

impl crate::queue::Queue for Recorder {
    fn id(&self) -> u64 {
        self.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn launch(&self, plan: Launch<'_, '_>) -> Result<(), Error> {
        self.push(Op::Launch {
            descriptor: plan.descriptor,
            args: plan.args.iter().map(|a| a.kind.clone()).collect(),
            workgroups: plan.workgroups,
            workgroup_size: plan.workgroup_size,
            dyn_cache: plan.dyn_cache,
        })
    }

    unsafe fn copy_in(&self, from: *const u8, to: u64, bytes: usize) -> Result<(), Error> {
        self.push(Op::Copy {
            from: from as u64,
            to,
            bytes,
        })
    }

    unsafe fn copy_out(&self, from: u64, to: *mut u8, bytes: usize) -> Result<(), Error> {
        self.push(Op::Copy {
            from,
            to: to as u64,
            bytes,
        })
    }

    unsafe fn copy_device(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error> {
        self.push(Op::Copy { from, to, bytes })
    }

    fn record(&self, _timing: bool) -> Result<Arc<dyn crate::mark::Mark>, Error> {
        Ok(Passed::now(self.id))
    }

    fn wait(&self, _: &dyn crate::mark::Mark) -> Result<(), Error> {
        Ok(())
    }

    fn synchronize(&self) -> Result<(), Error> {
        Ok(())
    }
}

impl crate::queue::Recording for Recorder {
    fn finish(&self) -> Result<Box<dyn crate::queue::Replay>, Error> {
        let ops = std::mem::take(&mut self.ops.lock().unwrap_or_else(|p| p.into_inner()).0);
        Ok(Box::new(Replay(ops)))
    }
}

/// A CPU graph: its recorded work.
struct Replay(Vec<Op>);

// SAFETY: the operations' addresses are of device buffers and page-locked vectors that
// the graph keeps alive (their hazards adopt their memory), which any thread may use.
unsafe impl Send for Replay {}
// SAFETY: as above; a replay only reads the list.
unsafe impl Sync for Replay {}

impl crate::queue::Replay for Replay {
    fn launch(&self, _on: &dyn crate::queue::Queue) -> Result<(), Error> {
        for op in &self.0 {
            match op {
                Op::Launch {
                    descriptor,
                    args,
                    workgroups,
                    workgroup_size,
                    dyn_cache,
                } => {
                    let body = descriptor.body()?;
                    let mut args: Vec<crate::args::KernelArg<'_>> = (args.iter())
                        .map(|kind| crate::args::KernelArg::with_kind(kind.clone()))
                        .collect();
                    run(Launch {
                        body,
                        descriptor,
                        args: &mut args,
                        workgroups: *workgroups,
                        workgroup_size: *workgroup_size,
                        dyn_cache: *dyn_cache,
                        resident_workgroups: None,
                        group_base: 0,
                        groups: *workgroups,
                    })?
                }
                // SAFETY: live memory the graph keeps (above), of these sizes.
                &Op::Copy { from, to, bytes } => unsafe {
                    std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes)
                },
            }
        }
        Ok(())
    }
}

/// A point in a CPU stream's work, passed when it was made.
struct Passed {
    queue: u64,
    at: std::time::Instant,
}

impl Passed {
    /// A mark of `queue`'s work so far, all of which has run.
    fn now(queue: u64) -> Arc<dyn crate::mark::Mark> {
        Arc::new(Passed {
            queue,
            at: std::time::Instant::now(),
        })
    }
}

impl crate::mark::Mark for Passed {
    fn queue(&self) -> u64 {
        self.queue
    }
    fn done(&self) -> Result<bool, Error> {
        Ok(true)
    }
    fn wait(&self) -> Result<(), Error> {
        Ok(())
    }
    fn settle(&self) -> Result<(), Error> {
        Ok(())
    }
    fn since(&self, earlier: &dyn crate::mark::Mark) -> Result<std::time::Duration, Error> {
        match earlier.as_any().downcast_ref::<Passed>() {
            Some(earlier) => Ok(self.at.saturating_duration_since(earlier.at)),
            None => Err(Error::InvalidLaunch(
                "events on different devices cannot be timed against each other".into(),
            )),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Host memory for a `PinnedVec` on the CPU backend: 8-byte aligned for any element.
struct HostBytes {
    words: Vec<u64>,
    bytes: usize,
}

impl std::ops::Deref for HostBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `words` holds at least `bytes` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast(), self.bytes) }
    }
}

impl std::ops::DerefMut for HostBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), self.bytes) }
    }
}

/// The CPU backend's device memory: host memory, 8-byte aligned for any element type,
/// that kernels run on in place. It is held by its raw address, not as a `Vec`, because
/// kernels and the disjoint writable views of one buffer write it through that address
/// while the buffer is only shared.
struct HostMemory {
    words: std::ptr::NonNull<u64>,
    len: usize,
    capacity: usize,
}

// SAFETY: the memory is a plain allocation owned by this value; who writes which bytes
// when is what launches and views order (as for device memory).
unsafe impl Send for HostMemory {}
// SAFETY: as above.
unsafe impl Sync for HostMemory {}

impl HostMemory {
    fn new(words: Vec<u64>) -> Self {
        let mut words = std::mem::ManuallyDrop::new(words);
        HostMemory {
            words: std::ptr::NonNull::new(words.as_mut_ptr()).expect("a vector's address"),
            len: words.len(),
            capacity: words.capacity(),
        }
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        // SAFETY: the parts of the vector `new` took apart, put back together once.
        drop(unsafe { Vec::from_raw_parts(self.words.as_ptr(), self.len, self.capacity) });
    }
}

impl Memory for HostMemory {
    fn address(&self) -> u64 {
        self.words.as_ptr() as u64
    }

    fn read(&self, offset: usize, into: &mut [u8]) -> Result<(), Error> {
        // SAFETY: the caller reads within the bytes it allocated.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.words.as_ptr().cast::<u8>().add(offset),
                into.as_mut_ptr(),
                into.len(),
            )
        };
        Ok(())
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        // SAFETY: the caller writes within the bytes it allocated, and no other view
        // writes or reads them meanwhile.
        unsafe {
            let at = self.words.as_ptr().cast::<u8>().add(offset);
            std::ptr::copy_nonoverlapping(data.as_ptr(), at, data.len())
        };
        Ok(())
    }
}

/// `bytes` of zeros as 8-byte words, or `None` if the allocator refuses. Zeroed pages
/// come from the allocator lazily, without touching them here.
fn zeroed_words(bytes: u128) -> Option<Vec<u64>> {
    let words = usize::try_from(bytes.div_ceil(8)).ok()?;
    if words == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(words).ok()?;
    // SAFETY: `layout` has a non-zero size; a non-null result is `words` zeroed, aligned
    // `u64`s owned by the returned vector, which frees them with the same layout.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<u64>();
        (!ptr.is_null()).then(|| Vec::from_raw_parts(ptr, words, words))
    }
}

/// Runs a launch to its end; under `OFFLOAD_TRACE=summary`, timed.
fn run(launch: Launch<'_, '_>) -> Result<(), Error> {
    if !crate::trace::enabled() {
        return execute(launch);
    }
    // Compiled (once, cached) before the clock starts: the trace counts running time.
    crate::compile::cpu(launch.descriptor, launch.workgroup_size)?;
    let (kernel, started) = (launch.descriptor.name, std::time::Instant::now());
    let result = execute(launch);
    crate::trace::launched(kernel, started.elapsed().as_secs_f64());
    result
}

fn execute(launch: Launch<'_, '_>) -> Result<(), Error> {
    let entry = crate::compile::cpu(launch.descriptor, launch.workgroup_size)?;

    let mut in_place = InPlace::of(&launch);
    // Scratch copies of writable regions, 8-byte aligned for any element type (or the
    // backups of regions written in place).
    let mut scratch = Scratch(Vec::new());
    let mut words = crate::plan::abi_words(launch.args, |kind, data, bytes| {
        if !kind.copied_back() {
            return Ok(data as u64);
        }
        if let Some(in_place) = &in_place {
            if in_place.backed_up {
                scratch.0.push(Scratch::take(bytes.div_ceil(8), 0, bytes));
            }
            return Ok(data as u64);
        }
        let (offset, full) = kind.placement().expect("arguments with data are placed");
        let mut copy = Scratch::take(full.div_ceil(8), offset, bytes);
        // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes, which fit in
        // the copy from `offset`.
        unsafe { parallel_copy(data, copy.as_mut_ptr().cast::<u8>().add(offset), bytes) };
        let address = copy.as_mut_ptr() as u64;
        scratch.0.push(copy);
        Ok(address)
    })?;
    if let Some(in_place) = &mut in_place {
        in_place.backups = scratch
            .0
            .iter_mut()
            .map(|b| b.as_mut_ptr() as usize)
            .collect();
    }
    let mut panic: PanicWords = [0; PANIC_BUFFER_WORDS];
    let p = panic.as_mut_ptr() as u64;
    words.extend(offload_mir::abi::memref_1d(p, PANIC_BUFFER_WORDS as u64));

    let groups: u64 = launch.workgroups.iter().map(|&g| g as u64).product();
    let host = crate::device::host_threads().min(groups as usize).max(1) as u64;
    let layout = launch.body.shared_layout();
    if launch.dyn_cache > MAX_DYNAMIC_SHARED {
        return Err(Error::InvalidLaunch(format!(
            "dyn_cache = {} bytes is more than the CPU backend's {MAX_DYNAMIC_SHARED} bytes of dynamic shared memory per workgroup",
            launch.dyn_cache
        )));
    }
    // Dynamic shared memory starts at `dynamic_offset` even when there is none, so its
    // length (the block's end minus that offset) is never negative.
    let shared_bytes = layout.dynamic_offset + launch.dyn_cache as usize;
    let workgroup = Workgroup {
        entry,
        // Workgroups are numbered x fastest, then y, then z, over the whole launch; a
        // split launch's share is the one-dimensional range from `group_base`.
        groups: launch.groups.map(u64::from),
        size: launch.workgroup_size.map(u64::from),
        kernel_words: &words,
    };
    let share = |t: u64| {
        let base = launch.group_base as u64;
        let (begin, end) = (base + groups * t / host, base + groups * (t + 1) / host);
        // 16-byte aligned, as the lowering lays shared arrays out (nothing is allocated
        // for none).
        let mut shared = vec![0u128; shared_bytes.div_ceil(16)];
        let shared = (shared.as_mut_ptr() as u64, shared_bytes as u64);
        let Some(in_place) = &in_place else {
            let mut words = workgroup.words([begin, end], shared);
            // SAFETY: see `Workgroup::call`.
            unsafe { workgroup.call(&mut words) };
            return;
        };
        // Pieces small enough to stay in this core's cache between their backup and the
        // kernel.
        let step = (PIECE_BYTES / in_place.workgroup_bytes.max(1)).max(1) as u64;
        let mut first = begin;
        while first < end {
            let last = (first + step).min(end);
            if in_place.backed_up {
                in_place.back_up([first, last]);
            }
            let mut words = workgroup.words([first, last], shared);
            // SAFETY: see `Workgroup::call`.
            unsafe { workgroup.call(&mut words) };
            first = last;
        }
    };
    if host == 1 {
        // One share runs on the calling thread: no hand-off to the pool.
        share(0);
    } else {
        // The shares run on rayon's pool, whose threads outlive the launch: spawning
        // threads per launch cost more than a small kernel's whole run.
        use rayon::prelude::*;
        (0..host as usize)
            .into_par_iter()
            .for_each(|t| share(t as u64));
    }

    if let Some(error) = crate::panic::decode(launch.descriptor.name, launch.body, &panic) {
        if let Some(in_place) = &in_place {
            in_place.restore();
        }
        return Err(error);
    }
    if in_place.is_some() {
        return Ok(());
    }
    // The scratch copies, in order, are those of the written arguments with host data
    // (device buffers are written in place).
    let written = (launch.args.iter()).filter(|a| a.kind.copied_back() && a.kind.bytes().is_some());
    for (arg, copy) in written.zip(&scratch.0) {
        let (data, bytes) = arg.kind.bytes().expect("written arguments have data");
        let (offset, _) = arg.kind.placement().expect("written arguments are placed");
        // SAFETY: `data` is the region's exclusively borrowed slice of `bytes` bytes, and
        // the copy holds them from `offset`.
        unsafe { parallel_copy(copy.as_ptr().cast::<u8>().add(offset), data, bytes) };
    }
    Ok(())
}

/// How many bytes of written regions a share backs up and runs at a time.
const PIECE_BYTES: usize = 64 << 10;

/// A launch whose written host data are all one-dimensional regions (`Linear1D`,
/// `Chunked<N>`, over the whole region) in a one-dimensional launch: thread `t` of
/// workgroup `g` owns the piece at `(g * size + t) * N` elements, so workgroups
/// `a..b` own one contiguous stretch of each, which the kernel may write where it lives.
struct InPlace {
    /// Each written region's host data, its bytes, and the bytes one workgroup owns.
    regions: smallvec::SmallVec<[(usize, usize, usize); 4]>,
    /// The most bytes one workgroup owns over all regions.
    workgroup_bytes: usize,
    /// Whether the kernel can panic, so that what it overwrites is backed up first (into
    /// the launch's scratch buffers, one per region, at the same offsets).
    backed_up: bool,
    /// Where each region's backup starts: the launch's scratch buffers, which outlive it.
    backups: smallvec::SmallVec<[usize; 4]>,
    /// The launch's workgroups: what they own is all that is backed up.
    groups: u64,
}

impl InPlace {
    fn of(launch: &Launch<'_, '_>) -> Option<InPlace> {
        if launch.group_base != 0
            || launch.workgroups[1..] != [1, 1]
            || launch.workgroup_size[1..] != [1, 1]
        {
            return None;
        }
        let threads = launch.workgroup_size[0] as usize;
        let mut regions: smallvec::SmallVec<[(usize, usize, usize); 4]> = smallvec::SmallVec::new();
        for arg in launch.args.iter() {
            let (data, bytes) = match arg.kind.bytes() {
                Some(host) if arg.kind.copied_back() => host,
                _ => continue,
            };
            let crate::args::ArgKind::Region {
                strategy,
                elem,
                window: None,
                ..
            } = arg.kind
            else {
                return None;
            };
            let per_thread = match strategy {
                offload_mir::Strategy::Linear1D => 1,
                offload_mir::Strategy::Chunked(n) => n.number() as usize,
                _ => return None,
            };
            let owned = threads
                .checked_mul(per_thread)?
                .checked_mul(elem.size_bytes())?;
            regions.push((data as usize, bytes, owned));
        }
        if regions.is_empty() {
            return None;
        }
        Some(InPlace {
            workgroup_bytes: regions.iter().map(|r| r.2).max().unwrap_or(0),
            regions,
            backed_up: launch.body.can_panic(),
            backups: smallvec::SmallVec::new(),
            groups: launch.workgroups[0] as u64,
        })
    }

    /// The bytes workgroups `groups` own of a region of `bytes` bytes, `owned` per
    /// workgroup.
    fn stretch(groups: [u64; 2], bytes: usize, owned: usize) -> std::ops::Range<usize> {
        let at = |g: u64| (g as u128 * owned as u128).min(bytes as u128) as usize;
        at(groups[0])..at(groups[1])
    }

    /// Copies what workgroups `groups` own of each region to its backup.
    fn back_up(&self, groups: [u64; 2]) {
        for (&(data, bytes, owned), &backup) in self.regions.iter().zip(&self.backups) {
            let r = Self::stretch(groups, bytes, owned);
            // SAFETY: `data` is the region's exclusively borrowed `bytes` bytes and the
            // backup has as many; shares back up disjoint stretches, before their own
            // threads (the stretches' only writers) run.
            unsafe {
                copy_streaming(
                    (data as *const u8).add(r.start),
                    (backup as *mut u8).add(r.start),
                    r.len(),
                )
            };
        }
    }

    /// Puts every region back as it was before the launch.
    /// Elements no workgroup owns were neither backed up nor written.
    fn restore(&self) {
        for (&(data, bytes, owned), &backup) in self.regions.iter().zip(&self.backups) {
            let r = Self::stretch([0, self.groups], bytes, owned);
            // SAFETY: every stretch the launch's workgroups own was backed up before any
            // thread wrote it, and the launch has ended.
            unsafe { parallel_copy(backup as *const u8, data as *mut u8, r.len()) };
        }
    }
}

/// Copies `bytes` bytes from `from` to `to` without bringing `to` into the cache: a
/// backup is read back only if a thread panics, so caching it would only evict the
/// kernel's data and cost a read of each line before it is written. Ends with a store
/// fence, so that the copy is visible to the threads that join this one.
///
/// # Safety
///
/// As `std::ptr::copy_nonoverlapping`.
unsafe fn copy_streaming(from: *const u8, to: *mut u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's; SSE2 is part of x86-64. The streaming stores write whole
    // 16-byte lines of `to` within `bytes`; the unaligned ends are copied plainly.
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let head = to.align_offset(16).min(bytes);
        std::ptr::copy_nonoverlapping(from, to, head);
        let lines = (bytes - head) / 16;
        for i in 0..lines {
            let at = head + i * 16;
            let v = _mm_loadu_si128(from.add(at).cast::<__m128i>());
            _mm_stream_si128(to.add(at).cast::<__m128i>(), v);
        }
        let done = head + lines * 16;
        std::ptr::copy_nonoverlapping(from.add(done), to.add(done), bytes - done);
        _mm_sfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(from, to, bytes)
    }
}

/// The scratch copies of one launch, handed back to [`SCRATCH_POOL`] when it ends.
struct Scratch(Vec<Vec<u64>>);

/// Scratch memory kept between launches: a new allocation as large as a region costs a
/// page fault per page on every launch, more than the copy itself.
static SCRATCH_POOL: std::sync::Mutex<Vec<Vec<u64>>> = std::sync::Mutex::new(Vec::new());

/// The most scratch memory kept for later launches, in bytes.
const SCRATCH_KEPT_BYTES: usize = 1 << 30;

/// Smaller copies are allocated afresh: for them the allocator is as fast as the pool.
const SCRATCH_POOLED_WORDS: usize = 1 << 16;

impl Scratch {
    /// `words` words whose bytes outside `offset..offset + bytes` are zero (the caller
    /// fills those): a kept buffer if one is large enough, else a new one.
    fn take(words: usize, offset: usize, bytes: usize) -> Vec<u64> {
        if words < SCRATCH_POOLED_WORDS {
            return vec![0; words];
        }
        let kept = {
            let mut pool = SCRATCH_POOL
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let fit = (pool.iter().enumerate())
                .filter(|(_, v)| v.capacity() >= words)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i);
            fit.map(|i| pool.swap_remove(i))
        };
        let Some(mut buffer) = kept else {
            return vec![0; words];
        };
        // A kept buffer holds earlier data: what the caller does not overwrite is zeroed,
        // as a new one would be.
        buffer.truncate(words);
        buffer.resize(words, 0);
        let first_word = offset / 8;
        let end_word = (offset + bytes).div_ceil(8).min(words);
        buffer[..first_word].fill(0);
        buffer[end_word..].fill(0);
        if end_word > first_word {
            buffer[first_word] = 0;
            buffer[end_word - 1] = 0;
        }
        buffer
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mut pool = SCRATCH_POOL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for buffer in self.0.drain(..) {
            if buffer.capacity() >= SCRATCH_POOLED_WORDS {
                pool.push(buffer);
            }
        }
        // Keep the largest buffers within the budget.
        pool.sort_by_key(|v| std::cmp::Reverse(v.capacity()));
        let mut kept = 0usize;
        pool.retain(|v| {
            kept += v.capacity() * 8;
            kept <= SCRATCH_KEPT_BYTES
        });
    }
}

/// Copies `bytes` bytes from `from` to `to`, on every host thread when they are many.
///
/// # Safety
///
/// As `std::ptr::copy_nonoverlapping`.
unsafe fn parallel_copy(from: *const u8, to: *mut u8, bytes: usize) {
    // One core copies a few GB/s; a share of 256 KiB takes tens of microseconds, far
    // more than handing it to a pool thread.
    const PER_THREAD: usize = 256 << 10;
    let threads = (bytes / PER_THREAD).clamp(1, crate::device::host_threads());
    if threads == 1 {
        // SAFETY: the caller's.
        return unsafe { std::ptr::copy_nonoverlapping(from, to, bytes) };
    }
    let (from, to) = (from as usize, to as usize);
    rayon::scope(|scope| {
        for t in 0..threads {
            let (start, end) = (bytes * t / threads, bytes * (t + 1) / threads);
            scope.spawn(move |_| {
                // SAFETY: the caller's; the threads copy disjoint parts.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (from + start) as *const u8,
                        (to + start) as *mut u8,
                        end - start,
                    )
                }
            });
        }
    });
}

/// What every call of one launch's entry point shares.
struct Workgroup<'a> {
    entry: CpuEntry,
    /// The whole launch's workgroups, and threads per workgroup, in x, y and z.
    groups: [u64; 3],
    size: [u64; 3],
    /// The kernel ABI's words: regions, slices, scalars, the panic buffer.
    kernel_words: &'a [u64],
}

impl Workgroup<'_> {
    /// The entry point's words: workgroups `groups`, the workgroup's shared memory
    /// `(address, bytes)`, the kernel's own.
    fn words(&self, groups: [u64; 2], shared: (u64, u64)) -> crate::plan::Words {
        let leading = CpuLeading {
            group_begin: groups[0],
            group_end: groups[1],
            groups_x: self.groups[0],
            groups_y: self.groups[1],
            groups_z: self.groups[2],
            size_x: self.size[0],
            size_y: self.size[1],
            size_z: self.size[2],
            shared_address: shared.0,
            shared_bytes: shared.1,
        };
        let mut words: crate::plan::Words = leading.words().into_iter().collect();
        words.extend_from_slice(self.kernel_words);
        words
    }

    /// Calls the entry point with `words`.
    ///
    /// # Safety
    ///
    /// `words` come from [`Self::words`]. The memrefs describe the scratch regions, the borrowed
    /// slices, the panic buffer and the shared block, all alive for the launch. Threads
    /// of different shares touch disjoint region elements (checked by the strategy's
    /// `check_launch`), and the panic buffer is claimed atomically.
    unsafe fn call(&self, words: &mut [u64]) {
        let mut pointers: smallvec::SmallVec<[*mut c_void; 96]> =
            words.iter_mut().map(|w| (w as *mut u64).cast()).collect();
        unsafe { (self.entry)(pointers.as_mut_ptr()) };
    }
}
