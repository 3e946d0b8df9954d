//! What keeps streams from racing: every device buffer and page-locked host vector
//! remembers the stream work that still uses it, so that new work on another stream, or
//! the host, waits for exactly the work it conflicts with.
//!
//! Each use is a byte range of the memory, whether it writes, and a [`Mark`]: an event
//! recorded on its stream after it. Before a stream touches a range, it waits on the
//! device (never on the host) for the conflicting uses on other streams: a write waits
//! for every use of the bytes, a read for their writes. Uses on its own stream need no
//! wait: a stream runs in order. After, the new use is recorded, and the uses a write
//! covers are forgotten, since anything that waits for the write now waits for them too
//! (and so are the earlier reads of the same stream that a read covers).
//!
//! The device's one queue (launches and copies without a stream, reads back, frees) is
//! ordered against every stream by the driver itself ([`crate::backend`]'s `Queue`), so
//! only the host's direct accesses to page-locked memory, and reports of a stream's
//! panics, need the marks there.

use crate::Error;
use crate::mark::Mark;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// The stream work that still uses one piece of memory; shared by the memory's handle,
/// the launches' views of it and the graphs that use it. When the handle is dropped it
/// hands the memory over ([`Hazards::adopt`]), so that the memory lives as long as any
/// graph that may still use it.
#[derive(Clone, Default)]
pub(crate) struct Hazards(Arc<Inner>);

#[derive(Default)]
struct Inner {
    uses: Mutex<Vec<Use>>,
    /// The memory, once its handle is gone, and whether the host must wait for its uses
    /// before freeing it (host memory; device memory is freed in the device's order).
    adopted: Mutex<Option<(Box<dyn Send + Sync>, bool)>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let adopted = self
            .adopted
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((memory, wait)) = adopted {
            if wait {
                let uses = std::mem::take(self.uses.get_mut().unwrap_or_else(|p| p.into_inner()));
                for u in uses {
                    if let Err(e) = u.mark.wait() {
                        tracing::warn!("waiting for the stream work that used freed memory: {e}");
                    }
                }
            }
            drop(memory);
        }
    }
}

/// A use of the memory by a stream: bytes `range`, written or only read, before `mark`.
struct Use {
    range: Range<u64>,
    write: bool,
    mark: Arc<dyn Mark>,
}

/// Above this many recorded uses, the finished ones are dropped before another is added.
const PRUNE_ABOVE: usize = 16;

fn overlap(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

impl Hazards {
    /// Makes queue `queue` wait (`wait`, on the device) for the uses of `range` on other
    /// queues that a use (a write if `write`) conflicts with.
    pub(crate) fn order(
        &self,
        queue: u64,
        range: &Range<u64>,
        write: bool,
        mut wait: impl FnMut(&dyn Mark) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let uses = lock(&self.0.uses);
        // Uses are recorded in order, so the last conflicting one of a queue comes after
        // all of that queue's others: it is the only one to wait for.
        let mut waited: smallvec::SmallVec<[u64; 4]> = smallvec::SmallVec::new();
        // This queue's later uses: one that conflicted with an earlier use of another
        // queue and covers it has waited for it already.
        let mut own: smallvec::SmallVec<[&Use; 4]> = smallvec::SmallVec::new();
        for u in uses.iter().rev() {
            let other = u.mark.queue();
            if other == queue {
                own.push(u);
                continue;
            }
            let ordered = |v: &&Use| {
                (v.write || u.write) && v.range.start <= u.range.start && u.range.end <= v.range.end
            };
            if !waited.contains(&other)
                && (write || u.write)
                && overlap(&u.range, range)
                && !own.iter().any(ordered)
            {
                wait(&*u.mark)?;
                waited.push(other);
            }
        }
        Ok(())
    }

    /// Records a use of `range` that ends at `mark`.
    pub(crate) fn note(&self, range: Range<u64>, write: bool, mark: &Arc<dyn Mark>) {
        let mut uses = lock(&self.0.uses);
        let queue = mark.queue();
        let covered = |u: &Use| range.start <= u.range.start && u.range.end <= range.end;
        // Anything that waits for a write waits for the uses it covers; anything that
        // waits for a read (a writer) waits for the same stream's earlier reads it covers.
        // So a buffer read by launch after launch keeps one use, not one per launch.
        uses.retain(|u| !(covered(u) && (write || (!u.write && u.mark.queue() == queue))));
        if uses.len() > PRUNE_ABOVE {
            uses.retain(|u| !matches!(u.mark.done(), Ok(true)));
        }
        uses.push(Use {
            range,
            write,
            mark: mark.clone(),
        });
    }

    /// How many uses are recorded.
    #[cfg(test)]
    pub(crate) fn recorded(&self) -> usize {
        lock(&self.0.uses).len()
    }

    /// Waits on the host for the stream work that the host's use of `range` (a write if
    /// `write`) conflicts with, and reports the first panic of those streams' launches
    /// that no one has reported yet.
    pub(crate) fn settle(&self, range: &Range<u64>, write: bool) -> Result<(), Error> {
        // Copied out of the lock: settling a stream can take long.
        let conflicting: Vec<Arc<dyn Mark>> = lock(&self.0.uses)
            .iter()
            .filter(|u| (write || u.write) && overlap(&u.range, range))
            .map(|u| u.mark.clone())
            .collect();
        let mut first = Ok(());
        for mark in conflicting {
            first = first.and(mark.settle());
        }
        first
    }

    /// Takes over the memory of a handle being dropped: it is freed when the last user
    /// of these hazards (the handle, or a graph) is gone, after the host has waited for
    /// its uses if `wait`.
    pub(crate) fn adopt(&self, memory: Box<dyn Send + Sync>, wait: bool) {
        *lock(&self.0.adopted) = Some((memory, wait));
    }
}

impl PartialEq for Hazards {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Hazards {}

impl std::fmt::Debug for Hazards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hazards({} uses)", lock(&self.0.uses).len())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
