//! Memory handles: where device-resident data lives, as launches and backends see it,
//! and the device memory a backend hands out.

use crate::{Device, Error};

/// Where a buffer's data lives, as a launch needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BufferLocation {
    pub device: &'static Device,
    /// Elements in the buffer.
    pub len: usize,
    /// The device address (CUDA) or host address (CPU) of the first element.
    pub address: u64,
    /// For a [`SplitBuffer`]: every part, one per share of a `device = all` launch (the
    /// fields above describe the first).
    pub split: Option<std::sync::Arc<SplitParts>>,
    /// The thread that made the launch argument: the launch's issuer, to whom an
    /// asynchronous launch's panic is reported (also when a `device = all` launch runs its
    /// shares on helper threads).
    pub issuer: crate::panic::Issuer,
    /// The stream work that uses the buffer (`None` for a split buffer's whole).
    pub hazards: Option<crate::hazards::Hazards>,
}

/// Where a [`SplitBuffer`]'s parts live.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SplitParts {
    /// Each part's device and the address of its element 0.
    pub parts: Vec<(&'static Device, u64)>,
    /// The elements each part holds: its window of a scattered buffer, all of them in a
    /// replicated one.
    pub windows: Vec<(usize, usize)>,
    pub replicated: bool,
}

/// Memory a backend allocated on its device, freed when dropped.
pub(crate) trait Memory: Send + Sync {
    /// The address kernels reach element 0 at: a device address, or a host one for the
    /// CPU backend.
    fn address(&self) -> u64;
    /// Copies `into.len()` bytes from byte `offset` on to the host, once every launch
    /// that may write them has finished; reports the calling thread's unreported panics
    /// on the device as a synchronisation does.
    fn read(&self, offset: usize, into: &mut [u8]) -> Result<(), Error>;
    /// Copies `data` in from byte `offset` on. Shared, because the disjoint writable views
    /// of one buffer (`DeviceSliceMut::split_at_mut`) each write their own bytes.
    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Error>;
}

/// `(start, len)` of `range` within `len` elements.
pub(crate) fn window(
    len: usize,
    range: impl std::ops::RangeBounds<usize>,
) -> Result<(usize, usize), Error> {
    use std::ops::Bound;
    // In `u128`, so that `..=usize::MAX` is a range like any other.
    let start = match range.start_bound() {
        Bound::Included(&s) => s as u128,
        Bound::Excluded(&s) => s as u128 + 1,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e as u128 + 1,
        Bound::Excluded(&e) => e as u128,
        Bound::Unbounded => len as u128,
    };
    if start > end || end > len as u128 {
        return Err(Error::InvalidBuffer(format!(
            "elements {start}..{end} are not a range within a buffer of {len}"
        )));
    }
    Ok((start as usize, (end - start) as usize))
}
