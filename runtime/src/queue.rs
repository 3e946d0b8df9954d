//! Queues of a device's work that the program orders itself, as the backends provide
//! them: what a [`crate::Stream`] runs on ([`Queue`]), the points in them that other
//! queues and the host wait for (`crate::mark`), and recorded work replayed as a whole
//! ([`Recording`], [`Replay`]). Below the backends, beside the launch plans they run.

use crate::mark::Mark;
use crate::{Error, plan::LaunchPlan};
use std::sync::Arc;

/// A queue that records its work (`Backend::recorder`).
pub(crate) trait Recording: Queue {
    /// Ends the recording: what replays the work.
    fn finish(&self) -> Result<Box<dyn Replay>, Error>;
}

/// Recorded work, replayed on a queue of the device it was recorded for.
pub(crate) trait Replay: Send + Sync {
    /// Enqueues the work on `on` (a queue of this backend's device); its panics are
    /// reported as `on`'s own launches' are.
    fn launch(&self, on: &dyn Queue) -> Result<(), Error>;
}

/// A queue of work on one device, run in order: what a [`crate::Stream`] is. The
/// device's one queue (the backend's own launches, copies, reads and frees) runs
/// each of its operations after the work every queue held when it was enqueued, and
/// each queue's work after the one queue's earlier work; between queues, only
/// [`Queue::wait`] orders.
pub(crate) trait Queue: Send + Sync + std::any::Any {
    /// The queue's number, unique in the process.
    fn id(&self) -> u64;
    fn as_any(&self) -> &dyn std::any::Any;
    /// Enqueues a checked launch over device-resident data only; its panic is reported by
    /// the queue's next [`Queue::synchronize`].
    fn launch(&self, plan: LaunchPlan<'_, '_>) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` from host address `from` to device address `to`.
    ///
    /// # Safety
    ///
    /// `from` must be memory of `Backend::pinned`, and both ranges live and the host
    /// one unwritten until the copy has run.
    unsafe fn copy_in(&self, from: *const u8, to: u64, bytes: usize) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` from device address `from` to host address `to`.
    ///
    /// # Safety
    ///
    /// `to` must be memory of `Backend::pinned`, and both ranges live and the host one
    /// untouched until the copy has run.
    unsafe fn copy_out(&self, from: u64, to: *mut u8, bytes: usize) -> Result<(), Error>;
    /// Enqueues a copy of `bytes` between device addresses.
    ///
    /// # Safety
    ///
    /// Both ranges must be live until the copy has run, and must not overlap.
    unsafe fn copy_device(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error>;
    /// A mark after the work enqueued so far; `timing` if it is to be timed.
    fn record(&self, timing: bool) -> Result<Arc<dyn Mark>, Error>;
    /// Makes the queue's later work wait for `mark`, on the device.
    fn wait(&self, mark: &dyn Mark) -> Result<(), Error>;
    /// Waits for the queue's work, and reports the first panic (in launch order) of its
    /// launches that no earlier synchronisation reported.
    fn synchronize(&self) -> Result<(), Error>;
}

/// Host memory for copies on a queue.
pub(crate) trait HostMemory: std::ops::DerefMut<Target = [u8]> + Send + Sync {}

impl<T: std::ops::DerefMut<Target = [u8]> + Send + Sync> HostMemory for T {}

/// A process-wide number for a new queue.
pub(crate) fn next_queue_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
