//! Graphs: a sequence of launches and copies recorded once and replayed as a whole.
//!
//! `Graph::record(&s, |s| { .. })` runs the closure with a stream that records what is
//! enqueued on it rather than run it: on NVIDIA GPUs a CUDA stream capture, replayed as
//! one CUDA graph launch; on the CPU the list of launches and copies, replayed in order.
//! A replay (`g.launch(&s)`) follows the rules every stream's work follows: it waits for
//! the work on other streams that uses the same memory, and later work waits for it. The
//! graph keeps the memory it uses alive: a `DeviceBuffer` or `PinnedVec` dropped while a
//! graph holds it is freed when the graph is.

use crate::mark::Mark;
use crate::queue::Replay;
use crate::stream::{Recorded, Stream};
use crate::{Device, Error};
use std::sync::{Arc, Mutex};

/// Recorded work, replayed by [`Graph::launch`].
pub struct Graph {
    replay: Box<dyn Replay>,
    device: &'static Device,
    /// The memory the work uses, and how.
    uses: Vec<Recorded>,
    /// The end of the last replay: freeing host memory waits for it.
    last: Mutex<Option<Arc<dyn Mark>>>,
}

impl Graph {
    /// Records what `record` enqueues on the stream it is given (launches with `stream =
    /// s`, asynchronous copies) for `stream`'s device; nothing runs until
    /// [`launch`](Self::launch). An error from `record` is returned, and nothing is
    /// kept.
    pub fn record(
        stream: &Stream,
        record: impl FnOnce(&Stream) -> Result<(), Error>,
    ) -> Result<Graph, Error> {
        let device = crate::machine::registered(stream.device())?;
        let recorder = crate::backend::of(device)?.recorder()?;
        let recording = Stream::recording(device, recorder.clone());
        let recorded = record(&recording);
        // Ended whatever `record` did: a capture left open would break the stream.
        let replay = recorder.finish();
        recorded?;
        Ok(Graph {
            replay: replay?,
            device,
            uses: recording.into_recorded(),
            last: Mutex::new(None),
        })
    }

    /// Enqueues a replay of the recorded work on `stream` (of the device it was recorded
    /// for), after the work on other streams that uses the same memory, and returns. Its
    /// panics are the stream's: reported by `stream.synchronize()` (at once on the CPU).
    pub fn launch(&self, stream: &Stream) -> Result<(), Error> {
        stream.check_device(self.device, "the graph")?;
        let queue = stream.queue();
        let _order = stream.enqueuing();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        // Replays share the graph's panic reports: one on another stream starts after
        // the last has handed its reports over.
        if let Some(previous) = last.as_ref().filter(|m| m.queue() != queue.id()) {
            queue.wait(previous.as_ref())?;
        }
        for (hazards, range, write) in &self.uses {
            hazards.order(queue.id(), range, *write, |m| queue.wait(m))?;
        }
        self.replay.launch(queue)?;
        let mark = queue.record(false)?;
        for (hazards, range, write) in &self.uses {
            hazards.note(range.clone(), *write, &mark);
        }
        *last = Some(mark);
        Ok(())
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // The replay's panic slabs and the memory it may hold last are freed after it.
        let last = self
            .last
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(Err(e)) = last.map(|m| m.wait()) {
            tracing::warn!("waiting for a graph's last replay: {e}");
        }
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Graph(on {}, {} uses of memory)",
            self.device,
            self.uses.len()
        )
    }
}
