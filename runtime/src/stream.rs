//! Streams and events: queues of work on one device that the program orders itself.
//!
//! `let s = device.stream()?;` makes a queue; `offload! { kernel = k, args = (..), stream
//! = &s }` and the asynchronous copies (`DeviceBuffer::copy_from_slice_async`,
//! `DeviceBuffer::copy_to_async`) enqueue on it and return at once; `s.synchronize()`
//! waits for it and reports the first panic of its launches. Work on two streams may run
//! at the same time, except where it touches the same memory: every `DeviceBuffer` and
//! [`PinnedVec`](crate::PinnedVec) remembers the stream work that uses it
//! (`crate::hazards`), and new work on another stream waits, on the device, for exactly
//! the work it conflicts with. Launches and copies without a stream, reads back
//! (`to_vec`) and frees are ordered after every stream's earlier work, so no safe program
//! sees a race between streams or a use after free.
//!
//! On the CPU backend a stream runs its work on the calling thread, in order, as it is
//! enqueued.

use crate::hazards::Hazards;
use crate::mark::Mark;
use crate::queue::Queue;
use crate::{Device, Error};
use std::cell::Cell;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// A queue of work on one device (CUDA's stream). Work on it runs in order; work on
/// different streams may overlap wherever it touches different memory. Dropping it waits
/// for its work; a panic of its launches that no synchronisation reported goes to the
/// dropping thread's next one ([`crate::synchronize`]).
pub struct Stream {
    queue: Arc<dyn Queue>,
    device: &'static Device,
    /// Held from a piece of work's waits to the record of its uses, so that threads
    /// sharing the stream record uses in the order the stream runs them. On a stream
    /// that records a graph ([`crate::Graph::record`]), the uses of the work recorded so
    /// far, which each replay orders and records instead.
    enqueuing: std::sync::Mutex<Vec<Recorded>>,
    recording: bool,
}

/// A use of memory by recorded work: the memory's hazards (which keep it alive), the
/// bytes, and whether they are written.
pub(crate) type Recorded = (Hazards, Range<u64>, bool);

/// A point in a stream's work ([`Stream::record`]): to wait for, from the host or from
/// another stream, or to time work between two of them.
#[derive(Clone)]
pub struct Event {
    mark: Arc<dyn Mark>,
}

impl Device {
    /// A new stream on this device. AMD GPUs have none yet ([`Error::Hip`]).
    pub fn stream(&self) -> Result<Stream, Error> {
        let device = crate::machine::registered(self)?;
        Ok(Stream {
            queue: crate::backend::of(device)?.queue()?,
            device,
            enqueuing: std::sync::Mutex::default(),
            recording: false,
        })
    }
}

impl Stream {
    /// The device the stream's work runs on.
    pub fn device(&self) -> &Device {
        self.device
    }

    /// Waits for all the work enqueued on the stream, and returns [`Error::KernelPanic`] for
    /// the first panic (in launch order) of its launches since its last synchronisation.
    /// Each panic is reported once.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.not_recording("synchronize")?;
        self.queue.synchronize()
    }

    /// An event after the work enqueued on the stream so far.
    pub fn record(&self) -> Result<Event, Error> {
        self.not_recording("record an event")?;
        Ok(Event {
            mark: self.queue.record(true)?,
        })
    }

    /// Makes the stream's later work wait for `event`, on the device: the host goes on.
    pub fn wait(&self, event: &Event) -> Result<(), Error> {
        self.not_recording("wait for an event")?;
        self.queue.wait(&*event.mark)
    }

    /// Refuses `what` on a stream that records a graph: a replay runs at other times, so
    /// an event inside it would mark nothing the program could wait for or time.
    fn not_recording(&self, what: &str) -> Result<(), Error> {
        match self.recording {
            true => Err(Error::InvalidLaunch(format!(
                "a stream that records a graph cannot {what}; do it on the stream a replay runs on"
            ))),
            false => Ok(()),
        }
    }

    /// Enqueues `enqueue` (which must use only memory listed in `uses`) after the work on
    /// other streams that those uses conflict with, and records the uses.
    pub(crate) fn run(
        &self,
        uses: &[Access<'_>],
        enqueue: impl FnOnce(&dyn Queue) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut recorded = self.enqueuing.lock().unwrap_or_else(|p| p.into_inner());
        if self.recording {
            enqueue(&*self.queue)?;
            let uses = uses
                .iter()
                .map(|a| (a.hazards.clone(), a.range.clone(), a.write));
            recorded.extend(uses);
            return Ok(());
        }
        for access in uses {
            access
                .hazards
                .order(self.queue.id(), &access.range, access.write, |m| {
                    self.queue.wait(m)
                })?;
        }
        enqueue(&*self.queue)?;
        if !uses.is_empty() {
            let mark = self.queue.record(false)?;
            for access in uses {
                access
                    .hazards
                    .note(access.range.clone(), access.write, &mark);
            }
        }
        Ok(())
    }

    /// A stream that records the work given to it into `recording`, for
    /// [`crate::Graph::record`].
    pub(crate) fn recording(device: &'static Device, recording: Arc<dyn Queue>) -> Stream {
        Stream {
            queue: recording,
            device,
            enqueuing: std::sync::Mutex::default(),
            recording: true,
        }
    }

    /// The uses of the work a recording stream recorded.
    pub(crate) fn into_recorded(self) -> Vec<Recorded> {
        std::mem::take(&mut *self.enqueuing.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub(crate) fn queue(&self) -> &dyn Queue {
        &*self.queue
    }

    /// The lock that orders this stream's enqueuing (see `enqueuing`).
    pub(crate) fn enqueuing(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.enqueuing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `device` if it is the stream's, else the error for work on `what` there.
    pub(crate) fn check_device(
        &self,
        device: &Device,
        what: impl std::fmt::Display,
    ) -> Result<(), Error> {
        // Registered devices are one each: the comparison of names is for the rest.
        if !std::ptr::eq(device, self.device) && device != self.device {
            return Err(Error::InvalidLaunch(format!(
                "{what} is on {device}, but the stream is on {}",
                self.device
            )));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({} on {})", self.queue.id(), self.device)
    }
}

impl Event {
    /// Waits on the host for the work before the event.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.mark.wait()
    }

    /// Whether the work before the event has finished, without waiting.
    pub fn is_complete(&self) -> Result<bool, Error> {
        self.mark.done()
    }

    /// The device time from `earlier` to this event (both recorded on one device, and
    /// both passed: this waits for them).
    pub fn duration_since(&self, earlier: &Event) -> Result<Duration, Error> {
        self.mark.wait()?;
        earlier.mark.wait()?;
        self.mark.since(&*earlier.mark)
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event(on stream {})", self.mark.queue())
    }
}

/// One piece of memory that work on a stream uses: bytes `range` of the memory whose uses
/// `hazards` records, written if `write`.
pub(crate) struct Access<'h> {
    pub hazards: &'h Hazards,
    pub range: Range<u64>,
    pub write: bool,
}

thread_local! {
    /// The stream `offload! { .., stream = &s }` launches on, while its launch runs.
    static CURRENT: Cell<*const Stream> = const { Cell::new(std::ptr::null()) };
}

/// Runs `launch` with `stream` as the stream its launch goes to: what `offload!`'s
/// `stream` field expands to.
#[doc(hidden)]
pub fn on_stream<R>(stream: &Stream, launch: impl FnOnce() -> R) -> R {
    /// Puts the earlier value back, also if `launch` unwinds.
    struct Restore(*const Stream);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(stream)));
    launch()
}

/// The stream of the `offload!` being launched on this thread, if it named one.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Stream>) -> R) -> R {
    let current = CURRENT.with(Cell::get);
    // SAFETY: `CURRENT` is set only by `on_stream`, from a reference that outlives the
    // closure it runs, and is reset when that closure returns or unwinds; `launch` runs
    // inside that closure on this thread.
    f(unsafe { current.as_ref() })
}
