//! Launches split across devices (`device = all`): the workgroups are cut into one
//! contiguous share per GPU (two shares run one after the other on the CPU when there is
//! no GPU, which is how CI exercises this path), every share runs on its own device at
//! once, and each writes back only the elements its threads own.
//!
//! A share's threads touch only their own region elements, so each share gets a copy of
//! just that window of every writable region (slices, which any thread may read, go to
//! every device whole). Nothing is written back until every share has finished without a
//! panic, so a failed split launch leaves the caller's data as it was, like any launch. Only one-dimensional launches over host data
//! (`Linear1D` and `Chunked<N>` regions, slices, scalars) can be split: atomics and device
//! buffers would need merging across devices.

use crate::{
    Device, Error,
    launch::{ArgKind, KernelArg, KernelDescriptor, Launch},
};
use offload_mir::{Body, Strategy};

pub(crate) fn run(
    body: &Body,
    descriptor: &'static KernelDescriptor,
    args: &mut [KernelArg<'_>],
    grid: [u32; 3],
    block: [u32; 3],
    dyn_cache: u32,
) -> Result<(), Error> {
    if grid[1..] != [1, 1] || block[1..] != [1, 1] {
        return Err(Error::InvalidLaunch(
            "`device = all` splits one-dimensional launches only".into(),
        ));
    }
    for arg in args.iter() {
        let splittable = match &arg.kind {
            ArgKind::Region {
                strategy, resident, ..
            } => {
                resident.is_none() && matches!(strategy, Strategy::Linear1D | Strategy::Chunked(_))
            }
            ArgKind::Slice { resident, .. } => resident.is_none(),
            ArgKind::Atomic { .. } => false,
            ArgKind::Scalar { .. } => true,
        };
        if !splittable {
            return Err(Error::InvalidLaunch(
                "`device = all` splits launches over host data with `Linear1D` or `Chunked<N>` regions only".into(),
            ));
        }
    }
    let gpus: Vec<Device> = crate::devices()
        .into_iter()
        .filter(|d| matches!(d, Device::Cuda { .. }))
        .collect();
    let devices = match gpus.len() {
        0 => vec![Device::Cpu, Device::Cpu],
        // One device takes the whole launch: no shares to copy and merge.
        1 => return launch_on(&gpus[0], body, descriptor, args, grid, block, dyn_cache, 0),
        _ => gpus,
    };
    let parts = devices.len() as u32;
    let groups = grid[0];
    let ranges: Vec<(u32, u32)> = (0..parts)
        .map(|p| (groups * p / parts, groups * (p + 1) / parts))
        .collect();
    let threads_per_group = block[0] as usize;
    // The elements of a region the threads of workgroups `start..end` own.
    let window = |strategy: &Strategy, len: usize, (start, end): (u32, u32)| {
        let per_thread = match strategy {
            Strategy::Chunked(n) => *n as usize,
            _ => 1,
        };
        let at = |group: u32| (group as usize * threads_per_group * per_thread).min(len);
        (at(start), at(end))
    };

    // Per share: copies of its window of each writable region, and arguments pointing
    // at them.
    let mut shares: Vec<Vec<KernelArg<'_>>> = Vec::new();
    let mut scratch: Vec<Vec<Vec<u8>>> = Vec::new();
    for &range in &ranges {
        let mut copies = Vec::new();
        let mut share_args = Vec::new();
        for arg in args.iter() {
            let mut kind = arg.kind.clone();
            if let ArgKind::Region {
                data,
                shape,
                elem,
                strategy,
                window: own,
                ..
            } = &mut kind
                && strategy.is_writable()
            {
                let (first, last) = window(strategy, shape.len, range);
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

    let results: Vec<Result<(), Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter_mut()
            .zip(&devices)
            .zip(&ranges)
            .map(|((share, device), &(start, end))| {
                let share = SendArgs(share);
                scope.spawn(move || {
                    let share = share;
                    if start == end {
                        return Ok(());
                    }
                    let grid = [end - start, 1, 1];
                    launch_on(
                        device, body, descriptor, share.0, grid, block, dyn_cache, start,
                    )
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
    });
    // The first share's failure is the launch's.
    for result in results {
        result?;
    }

    // Every share succeeded: copy each share's window back where it came from.
    let writable = args.iter().filter(|a| a.kind.copied_back());
    for (w, arg) in writable.enumerate() {
        let ArgKind::Region {
            data,
            shape,
            elem,
            strategy,
            ..
        } = &arg.kind
        else {
            continue;
        };
        let size = elem.size_bytes();
        for (copies, &range) in scratch.iter().zip(&ranges) {
            let (first, _) = window(strategy, shape.len, range);
            let part = &copies[w];
            // SAFETY: `data` is the region's exclusively borrowed slice; the window is in
            // it.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), data.add(first * size), part.len())
            };
        }
    }
    Ok(())
}

/// Runs workgroups `group_base..group_base + grid[0]` of the launch on `device`.
#[allow(clippy::too_many_arguments)]
fn launch_on(
    device: &Device,
    body: &Body,
    descriptor: &'static KernelDescriptor,
    args: &mut [KernelArg<'_>],
    grid: [u32; 3],
    block: [u32; 3],
    dyn_cache: u32,
    group_base: u32,
) -> Result<(), Error> {
    let launch = Launch {
        body,
        descriptor,
        args,
        grid,
        block,
        dyn_cache,
        group_base,
    };
    match device {
        Device::Cuda { ordinal, .. } => crate::cuda::run(launch, *ordinal),
        Device::Cpu => crate::cpu::run(launch),
    }
}

/// One share's arguments, moved to the thread that runs the share.
struct SendArgs<'s, 'a>(&'s mut [KernelArg<'a>]);

// SAFETY: a share's arguments point at its own copies of the writable data and at the
// caller's read-only data, which every share only reads; the caller's borrows outlive the
// scope the shares run in.
unsafe impl Send for SendArgs<'_, '_> {}
