//! Launches split across devices (`device = all`): the workgroups are cut into one
//! contiguous share per GPU (two shares run one after the other on the CPU when there is
//! no GPU, which is how CI exercises this path), every share runs on its own device at
//! once, and each writes back only the elements its threads own.
//!
//! A share's threads touch only their own region elements, so each share gets a copy of
//! just that window of every writable region over host data (slices, which any thread
//! may read, go to every device whole). Nothing is written back until every share has
//! finished without a panic, so a failed split launch leaves the caller's data as it was,
//! like any launch.
//!
//! Device-resident data takes part through [`SplitBuffer`](crate::SplitBuffer)s: a
//! scattered one as a region, whose windows then decide where the shares start, and a
//! replicated one as a slice; each share uses its device's part in place. Only
//! one-dimensional launches (`Linear1D` and `Chunked<N>` regions, slices, scalars) can be
//! split: atomics and single-device buffers would need merging across devices.

use crate::{
    Device, Error,
    args::{ArgKind, KernelArg},
    kernel::KernelDescriptor,
    memory::BufferLocation,
    plan::LaunchPlan as Launch,
};
use offload_mir::{Body, Strategy};

pub(crate) fn run(launch: ShareLaunch<'_>, args: &mut [KernelArg<'_>]) -> Result<(), Error> {
    let (workgroups, workgroup_size) = (launch.workgroups, launch.workgroup_size);
    if workgroups[1..] != [1, 1] || workgroup_size[1..] != [1, 1] {
        return Err(Error::InvalidLaunch(
            "`device = all` splits one-dimensional launches only".into(),
        ));
    }
    let devices = share_devices()?;
    for arg in args.iter() {
        let split = |r: &Option<BufferLocation>| r.as_ref().and_then(|r| r.split.clone());
        let splittable = match &arg.kind {
            ArgKind::Region {
                strategy, resident, ..
            } => {
                matches!(strategy, Strategy::Linear1D | Strategy::Chunked(_))
                    && (resident.is_none() || split(resident).is_some_and(|s| !s.replicated))
            }
            ArgKind::Slice { resident, .. } => {
                resident.is_none() || split(resident).is_some_and(|s| s.replicated)
            }
            ArgKind::Atomic { .. } => false,
            ArgKind::Scalar { .. } => true,
        };
        if !splittable {
            return Err(Error::InvalidLaunch(
                "`device = all` splits launches whose regions are `Linear1D` or `Chunked<N>` over host data or a scattered `SplitBuffer`, and whose slices are host data or a replicated `SplitBuffer`: no atomics or single-device buffers".into(),
            ));
        }
        if let Some(parts) = arg.kind.resident().and_then(|r| r.split.as_ref())
            && parts.parts.len() != devices.len()
        {
            return Err(Error::InvalidLaunch(format!(
                "a `SplitBuffer` of {} parts cannot take part in a launch over {} devices",
                parts.parts.len(),
                devices.len()
            )));
        }
    }
    if devices.len() == 1 {
        // One device takes the whole launch: no shares to copy and merge.
        return launch.on(&devices[0], args, (0, workgroups[0]));
    }
    let groups = workgroups[0];
    let windows = Windows {
        threads_per_group: workgroup_size[0] as usize,
    };
    let ranges = share_ranges(args, groups, devices.len() as u32, &|s| {
        windows.elements_per_group(s)
    })?;
    let (mut shares, scratch) = share_arguments(args, &ranges, &windows);
    let results = launch.run_shares(&mut shares, &devices, &ranges);
    // The first share's failure is the launch's.
    for result in results {
        result?;
    }
    copy_back(args, &scratch, &ranges, &windows);
    Ok(())
}

/// What every share of a split launch runs: the kernel and the whole launch's geometry.
pub(crate) struct ShareLaunch<'b> {
    pub body: &'b Body,
    pub descriptor: &'static KernelDescriptor,
    pub workgroups: [u32; 3],
    pub workgroup_size: [u32; 3],
    pub dyn_cache: u32,
    pub resident_workgroups: Option<u32>,
}

impl ShareLaunch<'_> {
    /// Runs workgroups `start..end` (along x) of the launch on `device` with `args`.
    fn on(
        &self,
        device: &Device,
        args: &mut [KernelArg<'_>],
        (start, end): (u32, u32),
    ) -> Result<(), Error> {
        let plan = Launch {
            body: self.body,
            descriptor: self.descriptor,
            args,
            workgroups: [end - start, self.workgroups[1], self.workgroups[2]],
            workgroup_size: self.workgroup_size,
            dyn_cache: self.dyn_cache,
            resident_workgroups: self.resident_workgroups,
            group_base: start,
            groups: self.workgroups,
        };
        crate::backend::of(device)?.launch(plan)
    }

    /// Runs every share on its device at once, each on its own thread; each share's
    /// result, in order.
    fn run_shares(
        &self,
        shares: &mut [Vec<KernelArg<'_>>],
        devices: &[Device],
        ranges: &[(u32, u32)],
    ) -> Vec<Result<(), Error>> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = shares
                .iter_mut()
                .zip(devices)
                .zip(ranges)
                .map(|((share, device), &(start, end))| {
                    let share = SendArgs(share);
                    scope.spawn(move || {
                        let share = share;
                        if start == end {
                            return Ok(());
                        }
                        self.on(device, share.0, (start, end))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidLaunch("a share's thread panicked".into()))
                    })
                })
                .collect()
        })
    }
}

/// Which elements of a region the threads of a share's workgroups own.
struct Windows {
    threads_per_group: usize,
}

impl Windows {
    /// Elements of a region one workgroup's threads own. `check_launch` has bounded every
    /// region's elements by the address space; the arithmetic saturates all the same, so
    /// a window can never wrap.
    fn elements_per_group(&self, strategy: &Strategy) -> usize {
        self.threads_per_group.saturating_mul(match strategy {
            Strategy::Chunked(n) => n.number() as usize,
            _ => 1,
        })
    }

    /// The elements `first..last` of a region of `len` the threads of workgroups
    /// `start..end` own.
    fn window(&self, strategy: &Strategy, len: usize, (start, end): (u32, u32)) -> (usize, usize) {
        let at = |group: u32| {
            (group as usize)
                .saturating_mul(self.elements_per_group(strategy))
                .min(len)
        };
        let first = at(start);
        (first, at(end).max(first))
    }
}

/// Per share: its arguments, each writable region over host data pointing at a copy of
/// the share's window of it (returned alongside, in argument order), each split buffer
/// at the share's part.
fn share_arguments<'a>(
    args: &[KernelArg<'a>],
    ranges: &[(u32, u32)],
    windows: &Windows,
) -> (Vec<Vec<KernelArg<'a>>>, Vec<Vec<Vec<u8>>>) {
    let mut shares: Vec<Vec<KernelArg<'_>>> = Vec::new();
    let mut scratch: Vec<Vec<Vec<u8>>> = Vec::new();
    for &range in ranges {
        let mut copies = Vec::new();
        let mut share_args = Vec::new();
        let share = shares.len();
        for arg in args.iter() {
            let mut kind = arg.kind.clone();
            // A split buffer takes part with this share's part, in place.
            if let ArgKind::Region { resident, .. } | ArgKind::Slice { resident, .. } = &mut kind
                && let Some(r) = resident
                && let Some(split) = r.split.take()
            {
                (r.device, r.address) = split.parts[share];
            }
            if let ArgKind::Region {
                data,
                shape,
                elem,
                strategy,
                window: own,
                resident: None,
                ..
            } = &mut kind
                && strategy.is_writable()
            {
                let (first, last) = windows.window(strategy, shape.len, range);
                let size = elem.size_bytes();
                // SAFETY: `data` is the region's borrowed slice of `shape.len` elements,
                // and `first..last` lies in it.
                let mut copy = unsafe {
                    std::slice::from_raw_parts(data.add(first * size), (last - first) * size)
                }
                .to_vec();
                *data = copy.as_mut_ptr();
                *own = Some((first, last));
                copies.push(copy);
            }
            share_args.push(KernelArg::with_kind(kind));
        }
        scratch.push(copies);
        shares.push(share_args);
    }
    (shares, scratch)
}

/// Every share succeeded: copies each share's window of host data back where it came
/// from.
fn copy_back(
    args: &[KernelArg<'_>],
    scratch: &[Vec<Vec<u8>>],
    ranges: &[(u32, u32)],
    windows: &Windows,
) {
    let host_regions = args.iter().filter_map(|a| match &a.kind {
        ArgKind::Region {
            data,
            shape,
            elem,
            strategy,
            resident: None,
            ..
        } if strategy.is_writable() => Some((data, shape, elem, strategy)),
        _ => None,
    });
    for (w, (data, shape, elem, strategy)) in host_regions.enumerate() {
        let size = elem.size_bytes();
        for (copies, &range) in scratch.iter().zip(ranges) {
            let (first, _) = windows.window(strategy, shape.len, range);
            let part = &copies[w];
            // SAFETY: `data` is the region's exclusively borrowed slice; the window is in
            // it.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), data.add(first * size), part.len())
            };
        }
    }
}

/// The devices a `device = all` launch (or a `SplitBuffer`) splits over: every GPU of
/// the machine, or two CPU shares when there is none.
pub(crate) fn share_devices() -> Result<Vec<Device>, Error> {
    gpus_to_share(crate::devices())
}

/// The GPUs among `devices`, all of one kind: a machine with both CUDA and HIP GPUs is
/// refused, since one launch is compiled for one kind and its shares would run different
/// code under different subgroup widths. Two CPU shares when there is no GPU.
fn gpus_to_share(devices: Vec<Device>) -> Result<Vec<Device>, Error> {
    let gpus: Vec<Device> = devices.into_iter().filter(|d| *d != Device::Cpu).collect();
    let cuda = gpus
        .iter()
        .filter(|d| matches!(d, Device::Cuda { .. }))
        .count();
    let hip = gpus.len() - cuda;
    if cuda > 0 && hip > 0 {
        return Err(Error::InvalidLaunch(format!(
            "`device = all` splits over GPUs of one kind, and this machine has {cuda} CUDA and {hip} HIP GPUs: pick one with `device = N` (or `OFFLOAD_DEVICE`)"
        )));
    }
    if gpus.is_empty() {
        return Ok(vec![Device::Cpu, Device::Cpu]);
    }
    Ok(gpus)
}

/// Each share's workgroups: where a scattered `SplitBuffer`'s windows start when a region
/// is one (every such region must agree), else an even split.
fn share_ranges(
    args: &[KernelArg<'_>],
    groups: u32,
    parts: u32,
    elements_per_group: &dyn Fn(&Strategy) -> usize,
) -> Result<Vec<(u32, u32)>, Error> {
    let mut starts: Option<Vec<u32>> = None;
    for arg in args {
        let ArgKind::Region {
            strategy,
            resident: Some(BufferLocation {
                split: Some(split), ..
            }),
            ..
        } = &arg.kind
        else {
            continue;
        };
        let per_group = elements_per_group(strategy);
        let mut these = Vec::new();
        for &(first, _) in &split.windows {
            if first % per_group != 0 {
                return Err(Error::InvalidLaunch(format!(
                    "a `SplitBuffer` part starts at element {first}, which is not where a workgroup of this launch starts (every {per_group} elements)"
                )));
            }
            these.push((first / per_group).min(groups as usize) as u32);
        }
        match &starts {
            Some(s) if *s != these => {
                return Err(Error::InvalidLaunch(
                    "the `SplitBuffer` regions of this launch are cut at different elements".into(),
                ));
            }
            _ => starts = Some(these),
        }
    }
    let starts = starts.unwrap_or_else(|| {
        (0..parts)
            .map(|p| (groups as u64 * p as u64 / parts as u64) as u32)
            .collect()
    });
    if starts.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::InvalidLaunch(
            "the parts of a `SplitBuffer` must be in increasing order".into(),
        ));
    }
    Ok((0..parts as usize)
        .map(|p| (starts[p], starts.get(p + 1).copied().unwrap_or(groups)))
        .collect())
}

/// One share's arguments, moved to the thread that runs the share.
struct SendArgs<'s, 'a>(&'s mut [KernelArg<'a>]);

// SAFETY: a share's arguments point at its own copies of the writable data and at the
// caller's read-only data, which every share only reads; the caller's borrows outlive the
// scope the shares run in.
unsafe impl Send for SendArgs<'_, '_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda(ordinal: usize) -> Device {
        Device::Cuda {
            ordinal,
            name: "H200".into(),
            compute_capability: (9, 0),
        }
    }

    fn hip(ordinal: usize) -> Device {
        Device::Hip {
            ordinal,
            name: "MI300X".into(),
            arch: "gfx942".into(),
        }
    }

    #[test]
    fn all_splits_over_the_gpus_of_one_kind() {
        let two_cuda = gpus_to_share(vec![cuda(0), cuda(1), Device::Cpu]).unwrap();
        assert_eq!(two_cuda, [cuda(0), cuda(1)]);
        let two_hip = gpus_to_share(vec![hip(0), hip(1), Device::Cpu]).unwrap();
        assert_eq!(two_hip, [hip(0), hip(1)]);
        let none = gpus_to_share(vec![Device::Cpu]).unwrap();
        assert_eq!(none, [Device::Cpu, Device::Cpu]);
    }

    #[test]
    fn all_refuses_a_mix_of_gpu_kinds() {
        let mixed = gpus_to_share(vec![cuda(0), hip(0), hip(1), Device::Cpu]);
        assert_eq!(
            mixed.unwrap_err().to_string(),
            "invalid launch: `device = all` splits over GPUs of one kind, and this machine has 1 CUDA and 2 HIP GPUs: pick one with `device = N` (or `OFFLOAD_DEVICE`)"
        );
    }
}
