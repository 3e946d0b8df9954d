//! A point in a queue's work ([`Mark`]): what another queue or the host waits for, and
//! what the memory handles' bookkeeping (`crate::hazards`) keeps per use. Its own module,
//! at the bottom, so that the bookkeeping needs nothing of queues or backends.

use crate::Error;

/// A point in a queue's work.
pub(crate) trait Mark: Send + Sync + std::any::Any {
    /// The id of its queue (`Queue::id`).
    fn queue(&self) -> u64;
    /// Whether the work before it has finished.
    fn done(&self) -> Result<bool, Error>;
    /// Waits on the host for the work before it.
    fn wait(&self) -> Result<(), Error>;
    /// Waits on the host for the work before it and, while its queue lives, reports that
    /// queue's unreported panics (a synchronisation of the queue).
    fn settle(&self) -> Result<(), Error>;
    /// The time from `earlier` to this mark, both timed marks of one device.
    fn since(&self, earlier: &dyn Mark) -> Result<std::time::Duration, Error>;
    fn as_any(&self) -> &dyn std::any::Any;
}
