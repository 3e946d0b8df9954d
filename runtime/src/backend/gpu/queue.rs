//! A user's stream on a GPU: the protocol's asynchronous launches on a driver stream of
//! their own, with the stream's panics kept with it and reported by its
//! synchronisation, and marks that are driver events. A recording stream is the same over
//! a driver stream that captures its work into a graph (`GpuReplay`), whose kernels report
//! into panic slabs of the graph's own; each replay copies them into slabs of the stream
//! it runs on, in that stream's order, and zeroes them for the next.

use super::{Driver, Gpu, PANIC_BYTES, Pending, SLOTS, Slab, Staged, lock};
use crate::Error;
use crate::mark::Mark;
use crate::plan::LaunchPlan;
use crate::queue::{Queue, Recording, Replay, next_queue_id};
use std::sync::{Arc, Mutex, Weak};

pub(crate) struct GpuQueue<D: Driver> {
    gpu: &'static Gpu<D>,
    stream: D::Stream,
    id: u64,
    /// Itself, for the marks it hands out, which report its panics while it lives.
    me: Weak<GpuQueue<D>>,
    /// Its launches since its last synchronisation.
    pending: Mutex<Pending<D>>,
}

impl<D: Driver> GpuQueue<D> {
    pub(crate) fn open(gpu: &'static Gpu<D>) -> Result<Arc<dyn Queue>, Error> {
        Ok(Self::over(gpu, gpu.driver.new_stream()?))
    }

    pub(crate) fn recording(gpu: &'static Gpu<D>) -> Result<Arc<dyn Recording>, Error> {
        Ok(Self::over(gpu, gpu.driver.capture_stream()?))
    }

    fn over(gpu: &'static Gpu<D>, stream: D::Stream) -> Arc<GpuQueue<D>> {
        Arc::new_cyclic(|me| GpuQueue {
            gpu,
            stream,
            id: next_queue_id(),
            me: me.clone(),
            pending: Mutex::default(),
        })
    }
}

impl<D: Driver> Queue for GpuQueue<D> {
    fn id(&self) -> u64 {
        self.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn launch(&self, plan: LaunchPlan<'_, '_>) -> Result<(), Error> {
        let function = self.gpu.checked_function(&plan)?;
        let words = crate::plan::abi_words(plan.args, |_, _, _| {
            unreachable!("launches on a stream take device-resident data only")
        })?;
        let staged = Staged {
            words,
            buffers: Vec::new(),
            written: Vec::new(),
        };
        self.gpu
            .launch_async(&function, &plan, staged, &self.pending, Some(&self.stream))
    }

    unsafe fn copy_in(&self, from: *const u8, to: u64, bytes: usize) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe { self.gpu.driver.copy_in_async(&self.stream, from, to, bytes) }
    }

    unsafe fn copy_out(&self, from: u64, to: *mut u8, bytes: usize) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe {
            self.gpu
                .driver
                .copy_out_async(&self.stream, from, to, bytes)
        }
    }

    unsafe fn copy_device(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe {
            self.gpu
                .driver
                .copy_device(from, to, bytes, Some(&self.stream))
        }
    }

    fn record(&self, timing: bool) -> Result<Arc<dyn Mark>, Error> {
        let event = self.gpu.driver.record(Some(&self.stream), timing)?;
        Ok(Arc::new(GpuMark {
            gpu: self.gpu,
            queue: self.me.clone(),
            queue_id: self.id,
            event,
            timing,
        }))
    }

    fn wait(&self, mark: &dyn Mark) -> Result<(), Error> {
        match mark.as_any().downcast_ref::<GpuMark<D>>() {
            Some(mark) if std::ptr::eq(mark.gpu, self.gpu) => {
                self.gpu.driver.wait_event(&self.stream, &mark.event)
            }
            // Another device's work: waited for on the host.
            _ => mark.wait(),
        }
    }

    fn synchronize(&self) -> Result<(), Error> {
        // Taken before waiting: every launch in it was enqueued before it was recorded
        // (under the lock), so the wait below covers it.
        let mut mine = std::mem::take(&mut *lock(&self.pending));
        self.gpu.driver.stream_synchronize(&self.stream)?;
        if mine.slabs.iter().any(|s| s.device.is_some()) {
            // Slabs on the device come back through the device's one queue, which runs
            // after the stream's work.
            self.gpu.enqueue_panic_reads(&mut mine)?;
            self.gpu.driver.synchronize()?;
        }
        let result = self.gpu.check(&mut mine);
        crate::trace::resolve(false);
        let mut now = lock(&self.pending);
        if now.kernels.is_empty() && now.slabs.is_empty() && now.inputs.is_empty() {
            *now = mine;
        }
        result
    }
}

impl<D: Driver> Drop for GpuQueue<D> {
    fn drop(&mut self) {
        // The stream's kernels write their panic reports until they finish: waited for,
        // then handed to the dropping thread's launches on the device, whose next
        // synchronisation reports them (a dropped stream's panic is not lost).
        let mine = std::mem::take(&mut *lock(&self.pending));
        if mine.kernels.is_empty() {
            return;
        }
        if let Err(e) = self.gpu.driver.stream_synchronize(&self.stream) {
            tracing::warn!("waiting for a dropped stream's work: {e}");
        }
        let entry = self.gpu.entry(crate::panic::issuer());
        let mut theirs = lock(&entry);
        // The handed-over reports start a slab of their own, as a replay's do.
        while !theirs.kernels.len().is_multiple_of(SLOTS) {
            theirs.kernels.push(mine.kernels[0]);
        }
        theirs.slabs.extend(mine.slabs);
        theirs.kernels.extend(mine.kernels);
        theirs.inputs.extend(mine.inputs);
    }
}

impl<D: Driver> Recording for GpuQueue<D> {
    fn finish(&self) -> Result<Box<dyn Replay>, Error> {
        let graph = self.gpu.driver.end_capture(&self.stream)?;
        let recorded = std::mem::take(&mut *lock(&self.pending));
        // What a replay copies over the graph's slabs once it has read them.
        let zeros = match recorded.slabs.is_empty() {
            true => None,
            false => Some(self.gpu.slab()?),
        };
        Ok(Box::new(GpuReplay {
            gpu: self.gpu,
            graph,
            recorded,
            zeros,
        }))
    }
}

/// A recorded graph on a GPU, with the panic slabs its kernels write.
struct GpuReplay<D: Driver> {
    gpu: &'static Gpu<D>,
    graph: D::Graph,
    /// The graph's kernels in launch order, and the slabs they report into.
    recorded: Pending<D>,
    /// A zeroed slab, copied over the graph's slabs after each replay.
    zeros: Option<Slab<D>>,
}

impl<D: Driver> Replay for GpuReplay<D> {
    fn launch(&self, on: &dyn Queue) -> Result<(), Error> {
        let queue = on.as_any().downcast_ref::<GpuQueue<D>>();
        let Some(queue) = queue.filter(|q| std::ptr::eq(q.gpu, self.gpu)) else {
            return Err(Error::InvalidLaunch(
                "a graph replays on a stream of the device it was recorded for".into(),
            ));
        };
        // Held until the replay's reports are in place, as for a launch.
        let mut pending = lock(&queue.pending);
        let on = Some(&queue.stream);
        let traced = crate::trace::enabled();
        let start = traced
            .then(|| self.gpu.driver.record(on, true).ok())
            .flatten();
        self.gpu.driver.launch_graph(&self.graph, &queue.stream)?;
        if let Some(start) = start {
            self.gpu.trace("(graph replay)", start, on);
        }
        let Some(zeros) = &self.zeros else {
            return Ok(());
        };
        // The replay's reports start a slab of their own: the slots left in the
        // stream's last slab stay zero, standing for the graph's first kernel.
        let kernels = &self.recorded.kernels;
        while !pending.kernels.len().is_multiple_of(SLOTS) {
            pending.kernels.push(kernels[0]);
        }
        for (slab, kernels) in self.recorded.slabs.iter().zip(kernels.chunks(SLOTS)) {
            let fresh = self.gpu.slab()?;
            let bytes = kernels.len() * PANIC_BYTES;
            // SAFETY: all three slabs live until this stream has run these copies (the
            // stream's own in its pending list until its synchronisation, the graph's
            // until its last replay has finished) and do not overlap.
            unsafe {
                let copy = |from: u64, to: u64| {
                    self.gpu
                        .driver
                        .copy_device(from, to, bytes, Some(&queue.stream))
                };
                copy(slab.address, fresh.address)?;
                copy(zeros.address, slab.address)?;
            }
            pending.slabs.push(fresh);
            pending.kernels.extend_from_slice(kernels);
        }
        Ok(())
    }
}

/// An event on a GPU stream.
struct GpuMark<D: Driver> {
    gpu: &'static Gpu<D>,
    queue: Weak<GpuQueue<D>>,
    queue_id: u64,
    event: D::Event,
    timing: bool,
}

impl<D: Driver> Mark for GpuMark<D> {
    fn queue(&self) -> u64 {
        self.queue_id
    }

    fn done(&self) -> Result<bool, Error> {
        self.gpu.driver.event_done(&self.event)
    }

    fn wait(&self) -> Result<(), Error> {
        self.gpu.driver.event_synchronize(&self.event)
    }

    fn settle(&self) -> Result<(), Error> {
        match self.queue.upgrade() {
            Some(queue) if !lock(&queue.pending).kernels.is_empty() => queue.synchronize(),
            _ => self.wait(),
        }
    }

    fn since(&self, earlier: &dyn Mark) -> Result<std::time::Duration, Error> {
        let earlier = earlier.as_any().downcast_ref::<GpuMark<D>>();
        let Some(earlier) = earlier.filter(|e| std::ptr::eq(e.gpu, self.gpu)) else {
            return Err(Error::InvalidLaunch(
                "events on different devices cannot be timed against each other".into(),
            ));
        };
        if !(self.timing && earlier.timing) {
            return Err(Error::InvalidLaunch(
                "only events made by `Stream::record` can be timed".into(),
            ));
        }
        let ms = self.gpu.driver.elapsed_ms(&earlier.event, &self.event)?;
        Ok(std::time::Duration::from_secs_f64(
            f64::from(ms.max(0.0)) / 1e3,
        ))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
